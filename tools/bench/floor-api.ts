// The engine floor's HTTP edge: the webhook's own steps — raw body, media type, signature, schema,
// the key — then a start of a floor workflow under the key's id. No database: what is left is the
// engine and the HTTP edge, the floor the order path is compared with. `?visible=1` starts it with
// an order's search attributes, summary and details, to measure what operators' view costs.
// `?workflow=local-activity` starts the floor whose no-op is a local activity instead;
// `?workflow=empty` starts an empty workflow eagerly on the worker this edge hosts on its own
// connection (the engine's ceiling: what an order could cost at best through the same edge).
import Fastify from 'fastify';
import { Client } from '@temporalio/client';
import { loadConfig } from '../../app/env.js';
import { requireSetting, runMain } from '../../services/config/process.js';
import { idempotencyKeyFor } from '../../domain/idempotency-key.js';
import { parseApproval } from '../../domain/order-input.js';
import { verifySignature } from '../../domain-node/signature.js';
import { workflowInputFor } from '../../submission/submit-approval.js';
import { connectClient, temporalTargetFrom } from '../../services/temporal/connection.js';
import { installTemporalRuntime } from '../../services/temporal/runtime.js';
import { connectWorker } from '../../worker/create-worker.js';
import { orderVisibilityFor } from '../../services/temporal/order-workflows.js';
import { createFloorWorker, EAGER_FLOOR_TASK_QUEUE, FLOOR_TASK_QUEUE } from './floor.js';

const WORKFLOWS = {
  floor: { type: 'floorWorkflow', taskQueue: FLOOR_TASK_QUEUE, eager: false },
  'local-activity': { type: 'floorLocalActivityWorkflow', taskQueue: FLOOR_TASK_QUEUE, eager: false },
  empty: { type: 'emptyWorkflow', taskQueue: EAGER_FLOOR_TASK_QUEUE, eager: true },
} as const;
type FloorWorkflow = keyof typeof WORKFLOWS;

await runMain('floor-api', async (log) => {
  const config = loadConfig();
  const secret = requireSetting('WEBHOOK_SECRET', config.webhook.secret);
  installTemporalRuntime(config, log, { handleSignals: false });
  const target = temporalTargetFrom(config.temporal);
  // The floors start through the client the API uses without a hosted worker; the ceiling through
  // one on the native connection of the worker hosted here: eager start needs both on it.
  const lazy = await connectClient(target);
  const connection = await connectWorker(target);
  const eager = new Client({ connection, namespace: config.temporal.namespace });
  const hosted = await createFloorWorker(connection, config, EAGER_FLOOR_TASK_QUEUE);
  void hosted.run();
  const app = Fastify({ logger: false });
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));
  app.post('/webhooks/oa/approvals', async (request, reply) => {
    const rawBody = request.body as Buffer;
    if (request.headers['content-type'] !== 'application/json') return reply.code(415).send();
    const signature = verifySignature({
      secret,
      timestampHeader: request.headers['x-oa-timestamp'] as string | undefined,
      signatureHeader: request.headers['x-oa-signature'] as string | undefined,
      rawBody,
      toleranceSeconds: config.webhook.toleranceSeconds,
    });
    if (!signature.ok) return reply.code(401).send();
    const parsed = parseApproval(JSON.parse(rawBody.toString('utf8')));
    if (!parsed.ok) return reply.code(400).send(parsed.errors);
    const workflowId = `floor-${idempotencyKeyFor(parsed.value.approvalNo, parsed.value.operation)}`;
    const query = request.query as { visible?: string; workflow?: string };
    const workflow = WORKFLOWS[(query.workflow ?? 'floor') as FloorWorkflow] as
      | (typeof WORKFLOWS)[FloorWorkflow]
      | undefined;
    if (!workflow) return reply.code(404).send();
    const visible = query.visible === '1';
    await (workflow.eager ? eager : lazy).workflow.start(workflow.type, {
      taskQueue: workflow.taskQueue,
      workflowId,
      workflowIdConflictPolicy: 'USE_EXISTING',
      ...(workflow.eager ? { requestEagerStart: true } : {}),
      args: workflow.type === 'floorWorkflow' ? [{ visible }] : [],
      ...(visible ? orderVisibilityFor(workflowInputFor(parsed.value, config.writePolicy)) : {}),
    });
    return reply.code(202).send({ workflowId });
  });
  await app.listen({ port: config.http.port, host: config.http.host });
  log.info(`Server listening at http://${config.http.host}:${config.http.port}`);
});
