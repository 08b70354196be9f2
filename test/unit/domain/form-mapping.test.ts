// The mapping file and `mapForm`: a form built from a valid order maps back to the same canonical
// order, one broken value anywhere is refused with a reason naming that field, and nothing a form
// holds makes the mapping throw. Also the example file, and how a bad mapping file is reported.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { canonicalOrder } from '../../../domain/canonical-order.js';
import {
  type FormMapping,
  formMappingFileSchema,
  type FormValues,
  isOrderDefinition,
  mapForm,
  mappingFor,
} from '../../../domain/form-mapping.js';
import type { OaVendor } from '../../../domain/oa-approval.js';
import type { Approval } from '../../../domain/order-input.js';
import { loadConfig } from '../../../app/env.js';
import { ConfigError } from '../../../services/config/environment.js';
import { dingtalk as dingtalkModule } from '../../../vendors/dingtalk/index.js';
import { feishu as feishuModule } from '../../../vendors/feishu/index.js';
import { connectorStates, vendorConfig } from '../../../vendors/settings.js';
import { wecom as wecomModule } from '../../../vendors/wecom/index.js';
import { readFormMappingFile } from '../../../services/config/form-mapping-file.js';
import { oaVendorIds } from '../../../vendors/registry.js';

/** The vendors of the registry: the mapping file has a section for each. */
const OA_VENDORS = oaVendorIds();
const EXAMPLE = new URL('../../../examples/oa-form-mapping.json', import.meta.url).pathname;
const example = readFormMappingFile(EXAMPLE, OA_VENDORS);
if (!example.ok) throw new Error(`the example mapping is invalid: ${example.problems.join('; ')}`);
const exampleFile = example.mapping;

type Order = Approval['order'];

/** The form an OA would show for `order`, laid out as `mapping` reads it. */
function formFrom(order: Order, mapping: FormMapping): FormValues {
  const fields: Record<string, string> = { [mapping.customer.field]: order.customerId, Remarks: 'urgent' };
  if ('field' in mapping.currency) fields[mapping.currency.field] = order.currency;
  const rows = order.lines.map((line) => ({
    [mapping.lines.sku]: line.sku,
    [mapping.lines.quantity]: String(line.quantity),
    [mapping.lines.unitPrice]: line.unitPrice,
    Note: 'n/a',
  }));
  return { fields, tables: { [mapping.lines.table]: rows, Attachments: [] } };
}

const validOrder = (currency: fc.Arbitrary<string>): fc.Arbitrary<Order> =>
  fc.record({
    customerId: fc.stringMatching(/^[\x20-\x7e]{1,64}$/),
    currency,
    lines: fc.array(
      fc.record({
        sku: fc.stringMatching(/^[A-Za-z0-9._-]{1,64}$/),
        quantity: fc.integer({ min: 1, max: 1_000_000 }),
        unitPrice: fc.stringMatching(/^\d{1,6}(\.\d{1,4})?$/),
      }),
      { minLength: 1, maxLength: 6 },
    ),
  });

/** An order and a vendor whose mapping can carry it (DingTalk's and WeCom's currency is fixed to CNY). */
const orderForVendor = fc.constantFrom<OaVendor>(...OA_VENDORS).chain((vendor) =>
  validOrder(vendor === 'feishu' ? fc.stringMatching(/^[A-Z]{3}$/) : fc.constant('CNY')).map((order) => ({
    vendor,
    order,
  })),
);

describe('the form mapping', () => {
  it('the example file is a valid mapping, with its own sections for DingTalk and WeCom', () => {
    assert.deepEqual(mappingFor(exampleFile, 'feishu').currency, { field: 'Currency' });
    for (const vendor of ['dingtalk', 'wecom'] as const) {
      assert.deepEqual(mappingFor(exampleFile, vendor).currency, { value: 'CNY' });
      assert.equal(mappingFor(exampleFile, vendor).customer.field, 'Customer ID', 'the default fills the rest');
      assert.equal(mappingFor(exampleFile, vendor).lines.table, '明细');
    }
  });

  it('property: a form built from a valid order maps back to the same canonical order', () => {
    fc.assert(
      fc.property(orderForVendor, ({ vendor, order }) => {
        const mapping = mappingFor(exampleFile, vendor);
        const mapped = mapForm(formFrom(order, mapping), mapping);
        assert.ok(mapped.ok, `refused: ${mapped.ok ? '' : mapped.reasons.join('; ')}`);
        assert.deepEqual(canonicalOrder(mapped.order), canonicalOrder(order));
      }),
      { numRuns: 300 },
    );
  });

  // Each way to break one mapped value: where it is, a bad value (undefined: the value is missing).
  type Break = { place: 'customer' | 'currency' | 'sku' | 'quantity' | 'unitPrice'; value: string | undefined };
  const breaks: fc.Arbitrary<Break> = fc.oneof(
    fc.record({
      place: fc.constant('customer' as const),
      value: fc.constantFrom('', 'Zoë', 'x'.repeat(65), undefined),
    }),
    fc.record({ place: fc.constant('currency' as const), value: fc.constantFrom('cny', 'EURO', '', undefined) }),
    fc.record({ place: fc.constant('sku' as const), value: fc.constantFrom('bad sku', '', 'é', undefined) }),
    fc.record({
      place: fc.constant('quantity' as const),
      value: fc.constantFrom('0', '1.5', '-1', 'two', '', ' 3', '1000001', undefined),
    }),
    fc.record({
      place: fc.constantFrom('unitPrice' as const),
      value: fc.constantFrom('1.2.3', '-1', '1,50', '', '1.23456', 'free', undefined),
    }),
  );

  it('property: one broken mapped value gives ok:false with a reason naming that field, never a throw', () => {
    fc.assert(
      fc.property(validOrder(fc.constant('USD')), breaks, fc.nat(), (order, broken, rowSeed) => {
        const mapping = mappingFor(exampleFile, 'feishu');
        const form = formFrom(order, mapping);
        const row = rowSeed % order.lines.length;
        const set = (values: Record<string, string>, name: string) => {
          if (broken.value === undefined) delete values[name];
          else values[name] = broken.value;
        };
        let named: string;
        const rowName = (column: string) => `table "Items" row ${row + 1} column "${column}"`;
        const cells = form.tables.Items?.[row] as Record<string, string>;
        switch (broken.place) {
          case 'customer':
            set(form.fields, 'Customer ID');
            named = 'field "Customer ID"';
            break;
          case 'currency':
            set(form.fields, 'Currency');
            named = 'field "Currency"';
            break;
          case 'sku':
            set(cells, 'SKU');
            named = rowName('SKU');
            break;
          case 'quantity':
            set(cells, 'Quantity');
            named = rowName('Quantity');
            break;
          case 'unitPrice':
            set(cells, 'Unit price');
            named = rowName('Unit price');
            break;
        }
        const mapped = mapForm(form, mapping);
        assert.equal(mapped.ok, false, `${broken.place}=${JSON.stringify(broken.value)} was accepted`);
        if (mapped.ok) return;
        assert.ok(
          mapped.reasons.some((reason) => reason.startsWith(`${named}:`)),
          `no reason names ${named}: ${mapped.reasons.join('; ')}`,
        );
      }),
      { numRuns: 400 },
    );
  });

  it('property: any form at all is answered without throwing, with reasons when it is refused', () => {
    const text = fc.oneof(fc.string(), fc.constantFrom('__proto__', 'constructor', 'Items', 'SKU', 'Quantity'));
    const form = fc.record({
      fields: fc.dictionary(text, fc.string()),
      tables: fc.dictionary(text, fc.array(fc.dictionary(text, fc.string()), { maxLength: 4 })),
    });
    fc.assert(
      fc.property(form, fc.constantFrom<OaVendor>(...OA_VENDORS), (values, vendor) => {
        const mapped = mapForm(values, mappingFor(exampleFile, vendor));
        if (!mapped.ok) assert.ok(mapped.reasons.length > 0);
      }),
      { numRuns: 300 },
    );
  });

  it('a missing table or column is named as the form names it', () => {
    const mapping = mappingFor(exampleFile, 'dingtalk');
    const missingTable = mapForm({ fields: { 'Customer ID': 'C-1' }, tables: {} }, mapping);
    assert.deepEqual(missingTable, { ok: false, reasons: ['table "明细": missing from the form'] });
    const emptyTable = mapForm({ fields: { 'Customer ID': 'C-1' }, tables: { 明细: [] } }, mapping);
    assert.equal(emptyTable.ok, false);
    assert.match(emptyTable.ok ? '' : (emptyTable.reasons[0] ?? ''), /^table "明细": /);
  });
});

describe('which approval definitions are orders', () => {
  const base = {
    default: {
      customer: { field: 'C' },
      currency: { value: 'CNY' },
      lines: { table: 'T', sku: 's', quantity: 'q', unitPrice: 'p' },
    },
  };
  it('without a list, every definition is an order', () => {
    const file = formMappingFileSchema(OA_VENDORS).parse(base);
    assert.equal(isOrderDefinition(file, 'feishu', 'ANYTHING'), true);
    assert.equal(isOrderDefinition(file, 'dingtalk', undefined), true);
  });
  it("a vendor's list wins over the shared one; an unlisted or unnamed definition is not an order", () => {
    const file = formMappingFileSchema(OA_VENDORS).parse({
      ...base,
      default: { ...base.default, definitions: ['PO'] },
      vendors: { dingtalk: { definitions: ['PROC-PO'] } },
    });
    assert.deepEqual(
      [
        isOrderDefinition(file, 'feishu', 'PO'),
        isOrderDefinition(file, 'feishu', 'LEAVE'),
        isOrderDefinition(file, 'feishu', undefined),
      ],
      [true, false, false],
    );
    assert.deepEqual(
      [isOrderDefinition(file, 'dingtalk', 'PROC-PO'), isOrderDefinition(file, 'dingtalk', 'PO')],
      [true, false],
    );
  });
  it('a section is named by a vendor the caller names: another name is refused, a fourth vendor is one more name', () => {
    const misspelt = formMappingFileSchema(OA_VENDORS).safeParse({ ...base, vendors: { feishuu: {} } });
    assert.equal(misspelt.success, false);
    assert.match(misspelt.error?.issues[0]?.message ?? '', /no OA vendor is called "feishuu"/);
    assert.deepEqual(misspelt.error?.issues[0]?.path, ['vendors', 'feishuu']);
    const file = formMappingFileSchema([...OA_VENDORS, 'acme']).parse({
      ...base,
      vendors: { acme: { customer: { field: 'Client' } } },
    });
    assert.deepEqual(mappingFor(file, 'acme').customer, { field: 'Client' });
    assert.deepEqual(mappingFor(file, 'feishu').customer, { field: 'C' });
    assert.equal(isOrderDefinition(file, 'constructor', 'X'), true, "a prototype's property is no section");
  });
  it('an empty list is refused: it would make no approval an order', () => {
    assert.equal(
      formMappingFileSchema(OA_VENDORS).safeParse({ ...base, vendors: { feishu: { definitions: [] } } }).success,
      false,
    );
  });
});

describe('the mapping file at start (OA_FORM_MAPPING)', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'form-mapping-'));
  const file = (name: string, text: string) => {
    const at = path.join(dir, name);
    writeFileSync(at, text);
    return at;
  };
  const feishu = {
    FEISHU_APP_ID: 'cli_a1b2c3',
    FEISHU_APP_SECRET: 'secret-0123456789',
    FEISHU_ENCRYPT_KEY: 'encrypt-key-0123456789',
    FEISHU_VERIFICATION_TOKEN: 'token-0123456789',
  };

  it('a connector whose settings are all present is on, and the mapping file is read', () => {
    const config = loadConfig({ ...feishu, OA_FORM_MAPPING: EXAMPLE });
    assert.equal(vendorConfig(feishuModule, config.connectors)?.appId, 'cli_a1b2c3');
    assert.equal(vendorConfig(feishuModule, config.connectors)?.apiBaseUrl, 'https://open.feishu.cn');
    assert.equal(vendorConfig(dingtalkModule, config.connectors), undefined, 'absent settings: off');
    assert.equal(config.connectors.formMapping?.path, EXAMPLE);
  });

  it('a connector partly configured is refused, naming what is missing', () => {
    assert.throws(
      () => loadConfig({ DINGTALK_APP_KEY: 'ding-key', OA_FORM_MAPPING: EXAMPLE }),
      (error: unknown) =>
        error instanceof ConfigError &&
        error.problems.some((problem) =>
          problem.startsWith('DINGTALK_APP_SECRET, DINGTALK_AES_KEY, DINGTALK_TOKEN: required with DINGTALK_APP_KEY'),
        ),
    );
  });

  it('the WeCom connector is on with its four settings, and refused with a part of them or a malformed key', () => {
    const wecom = {
      WECOM_CORP_ID: 'ww0123456789abcdef',
      WECOM_AGENT_SECRET: 'agent-secret-0123456789',
      WECOM_TOKEN: 'wecom-token',
      WECOM_ENCODING_AES_KEY: 'jWmYm7qr5nMoAUwZRjGtBxmz3KA1tkAj3ykkR6q2B2C',
    };
    const config = loadConfig({ ...wecom, OA_FORM_MAPPING: EXAMPLE });
    assert.equal(vendorConfig(wecomModule, config.connectors)?.corpId, 'ww0123456789abcdef');
    assert.equal(vendorConfig(wecomModule, config.connectors)?.apiBaseUrl, 'https://qyapi.weixin.qq.com');
    assert.deepEqual(connectorStates(config), {
      vendors: { feishu: 'off', dingtalk: 'off', wecom: ['callback'] },
      formMapping: EXAMPLE,
    });
    const refusedWith = (env: Record<string, string>, start: string) =>
      assert.throws(
        () => loadConfig({ ...env, OA_FORM_MAPPING: EXAMPLE }),
        (error: unknown) => error instanceof ConfigError && error.problems.some((problem) => problem.startsWith(start)),
      );
    refusedWith(
      { WECOM_CORP_ID: wecom.WECOM_CORP_ID },
      'WECOM_AGENT_SECRET, WECOM_TOKEN, WECOM_ENCODING_AES_KEY: required with WECOM_CORP_ID',
    );
    refusedWith({ ...wecom, WECOM_ENCODING_AES_KEY: 'too-short' }, 'WECOM_ENCODING_AES_KEY: must be the 43 characters');
  });

  it('a Feishu connector without FEISHU_ENCRYPT_KEY is refused: Feishu signs nothing without one', () => {
    const { FEISHU_ENCRYPT_KEY: _key, ...withoutKey } = feishu;
    assert.throws(
      () => loadConfig({ ...withoutKey, OA_FORM_MAPPING: EXAMPLE }),
      (error: unknown) =>
        error instanceof ConfigError &&
        error.problems.some((problem) => problem.startsWith('FEISHU_ENCRYPT_KEY: required with FEISHU_APP_ID')),
    );
  });

  it('FEISHU_EVENT_MODE=long-connection needs the app id and secret only; both callback keys keep the callback on beside it', () => {
    const appId = 'cli_a1b2c3d4e5f60718';
    const { FEISHU_APP_SECRET } = feishu;
    const alone = loadConfig({
      FEISHU_EVENT_MODE: 'long-connection',
      FEISHU_APP_ID: appId,
      FEISHU_APP_SECRET,
      OA_FORM_MAPPING: EXAMPLE,
    });
    assert.deepEqual(
      [
        vendorConfig(feishuModule, alone.connectors)?.eventMode,
        vendorConfig(feishuModule, alone.connectors)?.callback,
        connectorStates(alone).vendors.feishu,
      ],
      ['long-connection', undefined, ['long-connection']],
    );
    const both = loadConfig({
      ...feishu,
      FEISHU_APP_ID: appId,
      FEISHU_EVENT_MODE: 'long-connection',
      OA_FORM_MAPPING: EXAMPLE,
    });
    assert.deepEqual(vendorConfig(feishuModule, both.connectors)?.callback, {
      encryptKey: feishu.FEISHU_ENCRYPT_KEY,
      verificationToken: feishu.FEISHU_VERIFICATION_TOKEN,
    });
    assert.deepEqual(connectorStates(both).vendors.feishu, ['callback', 'long-connection']);
    const callbackOnly = loadConfig({ ...feishu, OA_FORM_MAPPING: EXAMPLE });
    assert.deepEqual(
      [vendorConfig(feishuModule, callbackOnly.connectors)?.eventMode, connectorStates(callbackOnly).vendors.feishu],
      ['callback', ['callback']],
      'callback by default',
    );
  });

  it('FEISHU_EVENT_MODE=long-connection without what the connection needs is refused, naming the settings', () => {
    const refusedWith = (env: Record<string, string>, start: string) =>
      assert.throws(
        () => loadConfig({ FEISHU_EVENT_MODE: 'long-connection', OA_FORM_MAPPING: EXAMPLE, ...env }),
        (error: unknown) => error instanceof ConfigError && error.problems.some((problem) => problem.startsWith(start)),
      );
    refusedWith({}, 'FEISHU_APP_ID, FEISHU_APP_SECRET: required with FEISHU_EVENT_MODE=long-connection');
    refusedWith(
      { FEISHU_APP_ID: 'cli_a1b2c3d4e5f60718' },
      'FEISHU_APP_SECRET: required with FEISHU_EVENT_MODE=long-connection',
    );
    // WSClient opens no connection for another form of app id, and says so in a log line only.
    refusedWith(
      { FEISHU_APP_ID: 'cli_a1b2c3', FEISHU_APP_SECRET: 's' },
      'FEISHU_APP_ID: must be "cli_" and 16 hexadecimal',
    );
    refusedWith(
      { FEISHU_APP_ID: 'cli_a1b2c3d4e5f60718', FEISHU_APP_SECRET: 's', FEISHU_ENCRYPT_KEY: 'k' },
      'FEISHU_VERIFICATION_TOKEN: required with FEISHU_ENCRYPT_KEY',
    );
    refusedWith({ FEISHU_EVENT_MODE: 'websocket' }, 'FEISHU_EVENT_MODE: ');
  });

  it('a connector that is on needs OA_FORM_MAPPING', () => {
    assert.throws(
      () => loadConfig(feishu),
      (error: unknown) =>
        error instanceof ConfigError &&
        error.problems.some((problem) => problem.startsWith('OA_FORM_MAPPING: required')),
    );
  });

  it('a bad mapping file is reported with its path, the JSON pointer and what is wrong', () => {
    const notJson = file('broken.json', '{ "default": ');
    const read = readFormMappingFile(notJson, OA_VENDORS);
    assert.ok(!read.ok && read.problems[0]?.startsWith(`OA_FORM_MAPPING: ${notJson}: not valid JSON`));

    const badCurrency = file(
      'currency.json',
      JSON.stringify({
        default: {
          customer: { field: 'Customer' },
          currency: { value: 'euro' },
          lines: { table: 'Items', sku: 'SKU', quantity: 'Qty', unitPrice: 'Price' },
        },
      }),
    );
    assert.throws(
      () => loadConfig({ ...feishu, OA_FORM_MAPPING: badCurrency }),
      (error: unknown) =>
        error instanceof ConfigError &&
        error.problems.some((problem) => problem.startsWith(`OA_FORM_MAPPING: ${badCurrency} at /default/currency`)),
    );

    const incomplete = file(
      'incomplete.json',
      JSON.stringify({ vendors: { feishu: { customer: { field: 'Customer' } } } }),
    );
    const problems = readFormMappingFile(incomplete, OA_VENDORS);
    assert.ok(!problems.ok);
    assert.ok(
      problems.problems.includes(
        `OA_FORM_MAPPING: ${incomplete} at /default/lines: required: no mapping for "lines" here nor in vendors.feishu`,
      ),
      problems.problems.join('\n'),
    );
    assert.ok(formMappingFileSchema(OA_VENDORS).safeParse(JSON.parse('{"default":{},"extra":1}')).success === false);
  });
});
