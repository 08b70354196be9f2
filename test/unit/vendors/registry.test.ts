// The vendor registry: every vendor the domain knows has one module, its settings are the ones the
// configuration reads, docs/connectors.md lists every file a vendor owns, and a vendor gives the
// processes exactly what its settings turn on.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { isDoorName, ORDER_NAMING_DOORS } from '../../../domain/door.js';
import {
  anyOaVendorOn,
  connectorsFromConfig,
  OA_VENDOR_MODULES,
  oaVendorIds,
  oaVendorModule,
  readersFromConfig,
} from '../../../vendors/registry.js';
import {
  type ConnectorsConfig,
  oaVendorApiSettings,
  oaVendorSecretSettings,
  oaVendorSettings,
} from '../../../vendors/settings.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const AES_KEY = 'a'.repeat(43);

function filesUnder(dir: string): string[] {
  return readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? filesUnder(`${dir}/${entry.name}`) : [`${dir}/${entry.name}`],
  );
}

/** The files the table of "A vendor's folder" names. */
function filesInTheDocs(): string[] {
  const doc = readFileSync(path.join(ROOT, 'docs/connectors.md'), 'utf8');
  const start = doc.indexOf("\n## A vendor's folder\n");
  assert.ok(start >= 0, 'docs/connectors.md has the section "A vendor\'s folder"');
  const section = doc.slice(start, doc.indexOf('\n### ', start));
  return [...section.matchAll(/^\| `(vendors\/[\w./-]+\.ts)`/gm)].map(([, file]) => file!);
}

const none: ConnectorsConfig = {
  vendors: new Map(),
  formMapping: undefined,
  unstartedClaimAfterMs: 120_000,
};
const webhook = { toleranceSeconds: 300 } as const;
const policy = { startToCloseMs: 8_000 };

describe('the OA vendor registry', () => {
  it('is the one list of the vendors: each id a door, none the webhook or MCP, none twice', () => {
    const ids = oaVendorIds();
    assert.deepEqual(
      ids,
      OA_VENDOR_MODULES.map((module) => module.vendor),
    );
    assert.equal(new Set(ids).size, ids.length);
    for (const vendor of ids) {
      assert.ok(isDoorName(vendor) && !ORDER_NAMING_DOORS.includes(vendor), vendor);
      assert.equal(oaVendorModule(vendor).vendor, vendor);
    }
  });

  it("declares each vendor's settings, its secrets and its API's address among them, and the configuration reads exactly those", () => {
    const declared = OA_VENDOR_MODULES.flatMap((module) => Object.keys(module.settings.env));
    for (const vendor of oaVendorIds()) {
      const prefix = `${vendor.toUpperCase()}_`;
      const { env, secrets, apiUrls } = oaVendorModule(vendor).settings;
      assert.ok(
        Object.keys(env).every((name) => name.startsWith(prefix)),
        `${vendor}'s settings are named ${prefix}*`,
      );
      assert.ok(secrets.length > 0 && apiUrls.length > 0, `${vendor} names its secrets and its API's address`);
      for (const name of [...secrets, ...apiUrls]) assert.ok(name in env, `${name} is one of ${vendor}'s settings`);
    }
    assert.deepEqual(Object.keys(oaVendorSettings()).sort(), [...declared].sort());
    assert.deepEqual(
      oaVendorSecretSettings(),
      OA_VENDOR_MODULES.flatMap((module) => module.settings.secrets),
    );
    assert.deepEqual(
      oaVendorApiSettings(),
      OA_VENDOR_MODULES.flatMap((module) => module.settings.apiUrls),
    );
  });

  it('lists in docs/connectors.md every file of vendors/, and no other', () => {
    assert.deepEqual(filesInTheDocs().sort(), filesUnder('vendors').sort());
  });

  it('turns on nothing without settings', () => {
    assert.equal(anyOaVendorOn(none), false);
    assert.deepEqual(connectorsFromConfig({ connectors: none, webhook }), {});
    assert.deepEqual(readersFromConfig(none, policy), {});
  });

  it('gives a configured vendor its connector and reader, and the others nothing', () => {
    const connectors: ConnectorsConfig = {
      ...none,
      vendors: new Map([
        [
          'wecom',
          { corpId: 'ww1', agentSecret: 's', token: 't', encodingAesKey: AES_KEY, apiBaseUrl: 'http://127.0.0.1:1' },
        ],
      ]),
    };
    assert.equal(anyOaVendorOn(connectors), true);
    assert.deepEqual(Object.keys(connectorsFromConfig({ connectors, webhook })), ['wecom']);
    assert.deepEqual(Object.keys(readersFromConfig(connectors, policy)), ['wecom']);
  });

  it('gives Feishu on its long connection alone a reader and a connection, and no callback', () => {
    const feishu = {
      appId: 'cli_0123456789abcdef',
      appSecret: 's',
      apiBaseUrl: 'http://127.0.0.1:1',
      eventMode: 'long-connection',
      callback: undefined,
    };
    const connectors: ConnectorsConfig = { ...none, vendors: new Map([['feishu', feishu]]) };
    assert.deepEqual(connectorsFromConfig({ connectors, webhook }), {});
    assert.deepEqual(Object.keys(readersFromConfig(connectors, policy)), ['feishu']);
    const connection = oaVendorModule('feishu').connection?.(feishu);
    assert.ok(connection, 'the long connection');
    assert.equal(connection.state(), undefined, 'not started');
    assert.equal(oaVendorModule('feishu').connection?.({ ...feishu, eventMode: 'callback' }), undefined);
  });

  it('gives DingTalk a Stream connection only in Stream mode, and its callback only with its keys', () => {
    const dingtalk = {
      appKey: 'k',
      appSecret: 's',
      apiBaseUrl: 'http://127.0.0.1:1',
      stream: true,
      callback: undefined,
    };
    const module = oaVendorModule('dingtalk');
    assert.ok(module.connection?.(dingtalk));
    assert.equal(module.connection?.({ ...dingtalk, stream: false }), undefined);
    assert.deepEqual(
      connectorsFromConfig({ connectors: { ...none, vendors: new Map([['dingtalk', dingtalk]]) }, webhook }),
      {},
    );
    const withCallback = { ...dingtalk, callback: { aesKey: AES_KEY, token: 't' } };
    const vendors = new Map([['dingtalk', withCallback]]);
    assert.deepEqual(Object.keys(connectorsFromConfig({ connectors: { ...none, vendors }, webhook })), ['dingtalk']);
  });

  it('says how each callback arrives: WeCom checks its URL with a GET and posts XML', () => {
    assert.deepEqual(Object.fromEntries(OA_VENDOR_MODULES.map((module) => [module.vendor, module.callback])), {
      feishu: { methods: ['POST'], body: 'json' },
      dingtalk: { methods: ['POST'], body: 'json' },
      wecom: { methods: ['GET', 'POST'], body: 'xml' },
    });
  });
});
