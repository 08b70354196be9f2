// The engine floor's HTTP edge: the webhook's own steps — raw body, media type, signature, schema,
// the key — then a start of the floor workflow under the key's id. No database: what is left is
// the engine and the HTTP edge, the floor the order path is compared with. `?visible=1` starts it
// with an order's search attributes, summary and details, to measure what operators' view costs.
import Fastify from 'fastify';
import { loadConfig } from '../../services/config/env.js';
import { requireSetting, runMain } from '../../services/config/process.js';
import { idempotencyKeyFor } from '../../domain/idempotency-key.js';
import { parseApproval } from '../../domain/order-input.js';
import { verifySignature } from '../../domain-node/signature.js';
import { workflowInputFor } from '../../services/submission/submit-approval.js';
import { connectClient, temporalTargetFrom } from '../../services/temporal/connection.js';
import { orderVisibilityFor } from '../../services/temporal/order-workflows.js';
import { FLOOR_TASK_QUEUE } from './floor.js';

await runMain('floor-api', async (log) => {
  const config = loadConfig();
  const secret = requireSetting('WEBHOOK_SECRET', config.webhook.secret);
  const temporal = await connectClient(temporalTargetFrom(config.temporal));
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
    const visible = (request.query as { visible?: string }).visible === '1';
    await temporal.workflow.start('floorWorkflow', {
      taskQueue: FLOOR_TASK_QUEUE,
      workflowId,
      workflowIdConflictPolicy: 'USE_EXISTING',
      args: [{ visible }],
      ...(visible ? orderVisibilityFor(workflowInputFor(parsed.value, config.writePolicy)) : {}),
    });
    return reply.code(202).send({ workflowId });
  });
  await app.listen({ port: config.http.port, host: config.http.host });
  log.info(`Server listening at http://${config.http.host}:${config.http.port}`);
});
