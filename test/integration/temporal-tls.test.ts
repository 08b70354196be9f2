// Connecting to a Temporal cluster that requires mTLS: a TLS-terminating proxy with a throwaway CA
// stands in front of the dev server. The real API and worker processes connect through it and
// submit an order; a wrong CA or a missing client certificate stops them at start with the
// variable to fix, and a failed start leaves nothing behind.
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { idempotencyKeyFor, orderWorkflowIdFor } from '../../domain/idempotency-key.js';
import { buildApp } from '../../edges/http/app.js';
import { createLazyClient, temporalTargetFrom } from '../../services/temporal/connection.js';
import { findRecord } from '../../services/db/idempotency-records.js';
import { apiProcess, processEnv, sendApproval, workerProcess } from '../support/processes.js';
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
} from '../support/service.js';
import { makeThrowawayPki, startTlsProxy, type ThrowawayPki, type TlsProxy } from '../support/tls-proxy.js';

describe('Temporal over mTLS (TLS-terminating proxy, throwaway CA)', () => {
  let service: TestService;
  let pki: ThrowawayPki;
  let proxy: TlsProxy;
  const stops: (() => Promise<void>)[] = [];

  before(async () => {
    service = await startTestService({ inProcessWorker: false });
    pki = makeThrowawayPki();
    proxy = await startTlsProxy(pki, service.config.temporal.address as string);
  });
  after(async () => {
    for (const stop of stops) await stop();
    await proxy.close();
    await service.stop();
    rmSync(pki.dir, { recursive: true, force: true });
  });

  const mtls = () => ({
    TEMPORAL_ADDRESS: proxy.address,
    TEMPORAL_TLS_CA: pki.caFile,
    TEMPORAL_TLS_CERT: pki.clientCertFile,
    TEMPORAL_TLS_KEY: pki.clientKeyFile,
    TEMPORAL_TLS_SERVER_NAME: 'localhost',
  });

  it('the API and a worker connect with client certificates and submit an order', async () => {
    const env = processEnv(service.config, mtls());
    const worker = workerProcess('worker-mtls', env);
    const api = await apiProcess('api-mtls', env);
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
  });

  const refusals = [
    {
      name: 'a CA that did not sign the server certificate',
      env: () => ({ ...mtls(), TEMPORAL_TLS_CA: pki.otherCaFile }),
      names: /TEMPORAL_TLS_CA: the certificate of .* is not trusted/,
    },
    {
      name: 'no client certificate',
      env: () => ({
        TEMPORAL_ADDRESS: proxy.address,
        TEMPORAL_TLS_CA: pki.caFile,
        TEMPORAL_TLS_SERVER_NAME: 'localhost',
      }),
      names: /TEMPORAL_TLS_CERT: .* refused the client certificate/,
    },
  ];

  for (const refusal of refusals) {
    it(`${refusal.name}: the API and the worker stop at start with the variable to fix`, async () => {
      const env = processEnv(service.config, refusal.env());
      const api = await apiProcess('api-refused', env);
      const worker = workerProcess('worker-refused', env);
      const started = Date.now();
      await assert.rejects(api.start(), refusal.names);
      await assert.rejects(worker.start(), refusal.names);
      // Fast: the handshake is checked at start, not found by a request timing out later.
      assert.ok(Date.now() - started < 60_000);
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
