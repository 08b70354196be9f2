// Connecting to a Temporal cluster that requires mTLS: a TLS-terminating proxy with a throwaway CA
// stands in front of the dev server. The real API and worker processes connect through it and
// submit an order — configured by a profile of a TOML file as the temporal CLI is, by inline PEM,
// and by the variables this service read before; a wrong CA, a missing client certificate or a bad
// profile stops them at start with the setting to fix, and a failed start leaves nothing behind.
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { idempotencyKeyFor, orderWorkflowIdFor } from '../../domain/idempotency-key.js';
import { buildApp } from '../../edges/http/app.js';
import { checkTlsHandshake, createLazyClient, temporalTargetFrom } from '../../services/temporal/connection.js';
import { findRecord } from '../../services/db/idempotency-records.js';
import { apiProcess, processEnv, sendApproval, workerProcess } from '../../tools/harness/processes.js';
import {
  approval,
  createSku,
  orderCount,
  postApproval,
  startTestService,
  statusReaches,
  testConfig,
  type TestService,
  uniqueApprovalNo,
  workflowExists,
} from '../../tools/harness/service.js';
import {
  makeThrowawayPki,
  mtlsProfile,
  startTlsProxy,
  type ThrowawayPki,
  type TlsProxy,
} from '../../tools/harness/tls-proxy.js';

describe('Temporal over mTLS (TLS-terminating proxy, throwaway CA)', () => {
  let service: TestService;
  let pki: ThrowawayPki;
  let proxy: TlsProxy;
  /** The profiles, as a platform team would hand them out for the temporal CLI. */
  let profiles: string;
  const stops: (() => Promise<void>)[] = [];

  before(async () => {
    service = await startTestService({ inProcessWorker: false });
    pki = makeThrowawayPki();
    proxy = await startTlsProxy(pki, service.config.temporal.address as string);
    profiles = join(pki.dir, 'temporal.toml');
    writeFileSync(
      profiles,
      [
        mtlsProfile('mtls', pki, proxy.address),
        mtlsProfile('inline', pki, proxy.address, { inline: true }),
        mtlsProfile('other-ca', pki, proxy.address, { caFile: pki.otherCaFile }),
        `[profile.missing-cert]
address = "${proxy.address}"
[profile.missing-cert.tls]
client_cert_path = "${join(pki.dir, 'no-such-client.pem')}"
client_key_path = "${pki.clientKeyFile}"

[profile.mistyped]
address = "${proxy.address}"
[profile.mistyped.tls]
server_name = 443
`,
      ].join('\n'),
    );
  });
  after(async () => {
    for (const stop of stops) await stop();
    await proxy.close();
    await service.stop();
    rmSync(pki.dir, { recursive: true, force: true });
  });

  /** A profile of the file; the address is the profile's (the stack's own is unset). */
  const profile = (name: string) => ({ TEMPORAL_ADDRESS: '', TEMPORAL_CONFIG_FILE: profiles, TEMPORAL_PROFILE: name });

  const mtls = () => ({
    TEMPORAL_ADDRESS: proxy.address,
    TEMPORAL_TLS_SERVER_CA_CERT_PATH: pki.caFile,
    TEMPORAL_TLS_CLIENT_CERT_PATH: pki.clientCertFile,
    TEMPORAL_TLS_CLIENT_KEY_PATH: pki.clientKeyFile,
    TEMPORAL_TLS_SERVER_NAME: 'localhost',
  });

  /** Starts an API and a worker with `settings`, on a task queue of their own, and submits one order through them. */
  async function submitThrough(name: string, settings: Record<string, string>) {
    const env = processEnv(service.config, {
      ...settings,
      TEMPORAL_TASK_QUEUE: `${service.config.temporal.taskQueue}-${name}`,
    });
    const worker = workerProcess(`worker-${name}`, env);
    const api = await apiProcess(`api-${name}`, env);
    stops.push(
      () => worker.kill('SIGTERM'),
      () => api.kill('SIGTERM'),
    );
    await Promise.all([worker.start(), api.start()]);

    const approvalNo = uniqueApprovalNo('TLS');
    const key = idempotencyKeyFor(approvalNo, 'MAIN');
    const answer = await sendApproval(api.url, approval(approvalNo, await createSku(service.prisma, 10)));
    assert.equal(answer.status, 202, JSON.stringify(answer.body));
    await statusReaches(service, key, 'SUBMITTED');
    assert.equal(await orderCount(service.prisma, key), 1);
    return { api, worker };
  }

  it('the API and a worker connect with the client certificate files of a profile (as the temporal CLI does) and submit an order', async () => {
    await submitThrough('profile', profile('mtls'));
  });

  it('the variables this service read before still connect, and each process says once what to rename', async () => {
    const { api, worker } = await submitThrough('old-names', {
      TEMPORAL_ADDRESS: proxy.address,
      TEMPORAL_TLS_CA: pki.caFile,
      TEMPORAL_TLS_CERT: pki.clientCertFile,
      TEMPORAL_TLS_KEY: pki.clientKeyFile,
      TEMPORAL_TLS_SERVER_NAME: 'localhost',
    });
    for (const child of [api, worker]) {
      const lines = child
        .output()
        .split('\n')
        .filter((line) => line.includes('deprecated Temporal settings'));
      assert.equal(lines.length, 1, child.output());
      assert.match(lines[0] ?? '', /TEMPORAL_TLS_CA → TEMPORAL_TLS_SERVER_CA_CERT_PATH/);
      assert.match(lines[0] ?? '', /TEMPORAL_TLS_KEY → TEMPORAL_TLS_CLIENT_KEY_PATH/);
    }
  });

  it('a profile with inline PEM (`*_DATA`) connects the client and the worker, which write an order', async () => {
    const inlineService = await startTestService({
      config: testConfig({ ...profile('inline'), TEMPORAL_TASK_QUEUE: `${service.config.temporal.taskQueue}-inline` }),
    });
    try {
      assert.ok(
        inlineService.config.temporal.tls?.clientKey && 'inline' in inlineService.config.temporal.tls.clientKey,
      );
      const approvalNo = uniqueApprovalNo('TLSDATA');
      const key = idempotencyKeyFor(approvalNo, 'MAIN');
      const response = await postApproval(inlineService, approval(approvalNo, await createSku(service.prisma, 10)));
      assert.equal(response.statusCode, 202, response.body);
      await statusReaches(inlineService, key, 'SUBMITTED');
    } finally {
      await inlineService.stop();
    }
  });

  const badProfiles = [
    {
      name: 'a profile the file does not have',
      env: () => profile('staging'),
      names: () => new RegExp(`TEMPORAL_PROFILE: no profile "staging" in ${escaped(profiles)} \\(it has "mtls", `),
    },
    {
      name: 'a profile whose certificate file does not exist',
      env: () => profile('missing-cert'),
      names: () =>
        new RegExp(
          `TEMPORAL_CONFIG_FILE: ${escaped(profiles)}, profile "missing-cert", tls.client_cert_path: cannot read `,
        ),
    },
    {
      name: 'a profile with a key of the wrong type',
      env: () => profile('mistyped'),
      names: () =>
        new RegExp(`TEMPORAL_CONFIG_FILE: ${escaped(profiles)}, profile "mistyped", tls.server_name: must be a string`),
    },
  ];

  // One process proves the API reads its settings at start; the other profiles are refused by the
  // same reading, in this process.
  it(`${badProfiles[0]!.name}: the API stops at start naming the file, the profile and the key`, async () => {
    const env = processEnv(service.config, badProfiles[0]!.env());
    await assert.rejects((await apiProcess('api-bad-profile', env)).start(), badProfiles[0]!.names());
  });

  for (const bad of badProfiles) {
    it(`${bad.name}: the settings are refused naming the file, the profile and the key`, () => {
      // As the processes do at start: the settings read, then the files they name.
      assert.throws(() => temporalTargetFrom(testConfig(bad.env()).temporal), bad.names());
    });
  }

  it('a profile the file does not have: the worker stops at start as the API does', async () => {
    const env = processEnv(service.config, profile('staging'));
    await assert.rejects(
      workerProcess('worker-bad-profile', env).start(),
      new RegExp(`TEMPORAL_PROFILE: no profile "staging" in ${escaped(profiles)}`),
    );
  });

  const refusals = [
    {
      name: 'a CA that did not sign the server certificate',
      env: () => ({ ...mtls(), TEMPORAL_TLS_SERVER_CA_CERT_PATH: pki.otherCaFile }),
      names: () => /TEMPORAL_TLS_SERVER_CA_CERT_PATH: the certificate of .* is not trusted/,
    },
    {
      name: 'a profile’s CA that did not sign the server certificate',
      env: () => profile('other-ca'),
      names: () =>
        new RegExp(
          `TEMPORAL_CONFIG_FILE: ${escaped(profiles)}, profile "other-ca", tls.server_ca_cert_path: the certificate of .* is not trusted`,
        ),
    },
    {
      name: 'no client certificate',
      env: () => ({
        TEMPORAL_ADDRESS: proxy.address,
        TEMPORAL_TLS_SERVER_CA_CERT_PATH: pki.caFile,
        TEMPORAL_TLS_SERVER_NAME: 'localhost',
      }),
      names: () => /TEMPORAL_TLS_CLIENT_CERT_PATH: .* refused the client certificate/,
    },
  ];

  // One pair of processes proves the API and the worker check the handshake at start; every
  // refusal is then named by that same check, in this process.
  it(`${refusals[0]!.name}: the API and the worker stop at start with the setting to fix`, async () => {
    const env = processEnv(service.config, refusals[0]!.env());
    const api = await apiProcess('api-refused', env);
    const worker = workerProcess('worker-refused', env);
    const started = Date.now();
    // Side by side: neither start depends on the other.
    await Promise.all([
      assert.rejects(api.start(), refusals[0]!.names()),
      assert.rejects(worker.start(), refusals[0]!.names()),
    ]);
    // Fast: the handshake is checked at start, not found by a request timing out later.
    assert.ok(Date.now() - started < 60_000);
  });

  for (const refusal of refusals) {
    it(`${refusal.name}: the start's handshake check names the setting to fix`, async () => {
      await assert.rejects(checkTlsHandshake(temporalTargetFrom(testConfig(refusal.env()).temporal)), refusal.names());
    });

    it(`${refusal.name}: a webhook answers 503, starts no workflow, writes no order, and keeps its claim unstarted`, async () => {
      const config = testConfig({ ...refusal.env(), TEMPORAL_TASK_QUEUE: service.config.temporal.taskQueue });
      const temporal = createLazyClient(temporalTargetFrom(config.temporal));
      const app = buildApp({ config, prisma: service.prisma, temporal });
      try {
        const approvalNo = uniqueApprovalNo('TLSNO');
        const key = idempotencyKeyFor(approvalNo, 'MAIN');
        const response = await postApproval({ app }, approval(approvalNo, await createSku(service.prisma, 10)));
        assert.equal(response.statusCode, 503, response.body);
        assert.ok(response.headers['retry-after']);
        // The claim stays, unstarted: the sender's redelivery starts it once the TLS setting is fixed,
        // and `orders-cli awaiting` lists it if none comes.
        const claim = await findRecord(service.prisma, key);
        assert.deepEqual([claim?.status, claim?.workflowStartedAt], ['RECEIVED', null]);
        assert.equal(await orderCount(service.prisma, key), 0);
        assert.equal(await workflowExists(service.temporal, orderWorkflowIdFor(key)), false);
      } finally {
        await app.close();
        await temporal.connection.close();
      }
    });
  }
});

function escaped(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
