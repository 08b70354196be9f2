// The OA webhook, `POST /webhooks/oa/approvals` (WEBHOOK_PATH): a signed approval, checked in the
// order the API promises (413 → 415 → 401 → 400), then handed to submission/submit-approval.ts,
// the path to the workflow every entry point shares.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Client } from '@temporalio/client';
import type { SubmissionConfig } from '../../../submission/settings.js';
import type { HttpConfig, WebhookConfig } from '../settings.js';
import { parseApproval } from '../../../domain/order-input.js';
import type { PrismaClient } from '../../../services/db/prisma-client.js';
import { invalidInput, KnownFailure } from '../../../submission/failure-outcome.js';
import type { StartGuard } from '../../../submission/start-path-types.js';
import { submissionDepsFrom, submitApproval } from '../../../submission/submit-approval.js';
import type { ProductMetrics } from '../../../services/metrics/product-metrics.js';
import type { IntakeLoad } from '../../../submission/intake-load.js';
import { verifyWebhookSignature } from '../../../domain-node/signature.js';
import { HttpProblem, problem, refusedAtTheDoor } from '../problem.js';
import { requestedWaitSeconds } from '../prefer.js';
import { WEBHOOK_PATH } from '../openapi.js';
import { inRequestSpan } from '../request-spans.js';
import { webhookDeadline } from '../arrival.js';

export interface WebhookRouteDeps {
  config: SubmissionConfig & { http: HttpConfig; webhook: WebhookConfig };
  prisma: PrismaClient;
  temporal: Client;
  /** Which deliveries may start their key's workflow; the product's own guard unless given. */
  startGuard?: StartGuard;
  /** The process's intake, shared with the other doors. */
  intake: IntakeLoad;
  metrics: ProductMetrics;
}

export function registerWebhookRoute(app: FastifyInstance, deps: WebhookRouteDeps): void {
  const { config, intake, metrics } = deps;
  app.post(WEBHOOK_PATH, { onRequest: setContentTypeAside }, async (request, reply) => {
    const deadline = webhookDeadline(request, config.http.startTimeoutMs);
    const rawBody = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
    const mediaType = (declaredContentTypes.get(request) ?? '').split(';')[0]?.trim().toLowerCase();
    if (mediaType !== 'application/json') {
      throw new HttpProblem(
        problem('unsupported-media-type', 415, 'Unsupported media type', 'the body must be application/json'),
      );
    }
    const secret = config.webhook.secret;
    if (!secret) throw new Error('WEBHOOK_SECRET is not configured');
    const signature = verifyWebhookSignature({
      scheme: config.webhook.signatureScheme,
      secret,
      previousSecret: config.webhook.previousSecret,
      header: (name) => header(request, name.toLowerCase()),
      rawBody,
      toleranceSeconds: config.webhook.toleranceSeconds,
    });
    if (!signature.ok) {
      // One answer for every signature or timestamp failure: which check failed is for the log.
      request.log.warn({ reason: signature.reason }, 'webhook refused: not authenticated');
      throw refusedAtTheDoor('invalid-signature');
    }
    let body: unknown;
    try {
      body = JSON.parse(rawBody.toString('utf8'));
    } catch (error) {
      throw new HttpProblem(
        problem('malformed-json', 400, 'Malformed JSON', `the body is not valid JSON: ${(error as Error).message}`, {
          errors: [{ pointer: '', message: 'not valid JSON' }],
        }),
      );
    }
    const parsed = parseApproval(body);
    if (!parsed.ok) throw new KnownFailure(invalidInput(parsed.errors));
    // `Prefer: wait=<seconds>`: answer with the order number if it is written by then, capped so
    // that the answer stays inside WEBHOOK_MAX_WAIT_MS (docs/architecture.md, decision 19).
    const requested = requestedWaitSeconds(request.headers.prefer);
    const wait = requested === undefined ? undefined : Math.min(requested, config.http.maxWaitSeconds);
    const submission = await inRequestSpan(request, () =>
      submitApproval({
        deps: { ...submissionDepsFrom(config, deps.prisma, deps.temporal), metrics },
        approval: parsed.value,
        door: 'webhook',
        options: {
          workerInProcess: config.http.hostsWorker,
          startGuard: deps.startGuard,
          intake,
          deadline,
          ...(wait === undefined ? {} : { waitUntil: deadline.arrivedAt + wait * 1000 }),
        },
      }),
    );
    request.log.info(
      { idempotencyKey: submission.idempotencyKey, workflowId: submission.workflowId, duplicate: submission.duplicate },
      submission.duplicate ? 'redelivery answered from the existing workflow' : 'order workflow started',
    );
    if (wait !== undefined) reply.header('preference-applied', `wait=${wait}`);
    // 201 says the order exists: the first delivery, answered once its order was written.
    const code = submission.duplicate ? 200 : submission.orderNo ? 201 : 202;
    return reply.code(code).send(submission);
  });
}

function header(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** The webhook's Content-Type as sent, set aside before fastify looks at it. */
const declaredContentTypes = new WeakMap<FastifyRequest, string | undefined>();

/**
 * Without a Content-Type fastify reads the body with the catch-all parser, under the size limit;
 * the route then refuses the media type itself, so a body too large is a 413 whatever its header.
 */
export function setContentTypeAside(request: FastifyRequest, _reply: FastifyReply, done: () => void) {
  declaredContentTypes.set(request, header(request, 'content-type'));
  delete request.headers['content-type'];
  done();
}
