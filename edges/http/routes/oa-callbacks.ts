// The OA connectors' callback routes: `/webhooks/<vendor>` for each vendor of vendors/registry.ts,
// called with the methods its module names (a POST; a GET too for a vendor that checks its URL). The vendor's connector reads the
// callback (vendors/<vendor>/connector.ts); this route answers what it says, and
// hands an approval event to submission/accept-oa-event.ts within the vendor's deadline.
// A connector that is off (its settings absent) has no route: 404 problem+json. A callback the
// connector refuses gets the door's one answer, whatever the reason, which only the log hears
// (docs/architecture.md, decision 26); an authentic callback is always acknowledged.
import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify';
import type { Client } from '@temporalio/client';
import type { OaVendor } from '../../../domain/oa-approval.js';
import type { PrismaClient } from '../../../services/db/prisma-client.js';
import type { ProductMetrics } from '../../../services/metrics/product-metrics.js';
import {
  acceptApprovalEvent,
  type ApprovalEventConfig,
  approvalEventDepsFrom,
  type ApprovalEventsInFlight,
  replyBudgetMs,
  type ReplyDeadline,
} from '../../../submission/accept-oa-event.js';
import type { IntakeLoad } from '../../../submission/intake-load.js';
import { takeCardClick } from '../../../submission/operator-decisions/cards.js';
import { arrivalOf } from '../arrival.js';
import type { Connector, ConnectorReply } from '../../../vendors/connector.js';
import { oaVendorIds, oaVendorModule } from '../../../vendors/registry.js';
import { HttpProblem, problem, refusedAtTheDoor } from '../problem.js';
import { inRequestSpan } from '../request-spans.js';

export interface OaRouteDeps {
  config: ApprovalEventConfig;
  prisma: PrismaClient;
  temporal: Client;
  metrics: ProductMetrics;
  /** The process's intake, shared with the other doors. */
  intake: IntakeLoad;
  /** The process's approval events whose work goes on after their reply, shared with its held connections. */
  approvalsInFlight: ApprovalEventsInFlight;
  /** The connectors that are on; a vendor without one answers 404. */
  connectors: Partial<Record<OaVendor, Connector>>;
  /** Keeps the Content-Type away from fastify, so every body is read as raw bytes. */
  onRequest: onRequestHookHandler;
}

export function oaCallbackPath(vendor: OaVendor): string {
  return `/webhooks/${vendor}`;
}

/** The methods a vendor calls its callback with (vendors/<vendor>/index.ts): events are POSTs, a URL check may be a GET. */
export function oaCallbackMethods(vendor: OaVendor): readonly ('GET' | 'POST')[] {
  return oaVendorModule(vendor).callback.methods;
}

/** When the vendor's reply is due: its budget counted from the callback's arrival. */
function replyDeadline(request: FastifyRequest, vendorDeadlineMs: number): ReplyDeadline {
  const arrivedAt = arrivalOf(request);
  return { arrivedAt, replyBy: arrivedAt + replyBudgetMs(vendorDeadlineMs) };
}

export function registerOaRoutes(app: FastifyInstance, deps: OaRouteDeps): void {
  for (const vendor of oaVendorIds()) {
    app.route({
      method: [...oaCallbackMethods(vendor)],
      url: oaCallbackPath(vendor),
      onRequest: deps.onRequest,
      handler: async (request, reply) => {
        const connector = deps.connectors[vendor];
        if (!connector) {
          throw new HttpProblem(
            problem('not-found', 404, 'Not found', `the ${vendor} connector is off: its settings are not configured`),
          );
        }
        const callback = connector.read({
          method: request.method === 'GET' ? 'GET' : 'POST',
          headers: request.headers,
          query: request.query as Record<string, string | undefined>,
          rawBody: Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0),
        });
        switch (callback.kind) {
          case 'refused':
            // Not proven authentic: nothing is recorded, and the answer names no reason.
            request.log.warn({ vendor, reason: callback.reason }, 'OA callback refused');
            throw refusedAtTheDoor('invalid-callback');
          case 'challenge':
            request.log.info({ vendor }, 'OA callback URL check answered');
            return send(reply, callback.reply);
          case 'other':
            request.log.info(
              { vendor, eventType: callback.eventType },
              'OA callback acknowledged: not an approval event',
            );
            return send(reply, callback.ack);
          case 'unusable':
            // Authentic but unusable: a refusal would only bring the same bytes back, for ever.
            request.log.warn(
              { vendor, reason: callback.reason },
              'OA callback acknowledged: unusable, nothing recorded',
            );
            return send(reply, callback.ack);
          case 'card-click': {
            const { click } = callback;
            if (!connector.decisionOperators) {
              request.log.warn(
                { vendor, eventId: click.eventId },
                'OA card click acknowledged: no decision cards here',
              );
              return send(reply, callback.reply({ tone: 'error', text: 'Decision cards are off for this app' }));
            }
            const answer = await inRequestSpan(request, () =>
              takeCardClick(
                { ...deps, log: request.log },
                click,
                connector.decisionOperators ?? new Set(),
                replyDeadline(request, connector.vendorDeadlineMs).replyBy,
              ),
            );
            return send(reply, callback.reply(answer));
          }
          case 'event': {
            const outcome = await inRequestSpan(request, () =>
              acceptApprovalEvent(
                approvalEventDepsFrom({ ...deps, log: request.log }),
                callback.event,
                replyDeadline(request, connector.vendorDeadlineMs),
              ),
            );
            request.log.info(
              {
                vendor,
                eventId: callback.event.eventId,
                idempotencyKey: outcome.idempotencyKey,
                outcome: outcome.kind,
              },
              'OA approval event acknowledged',
            );
            return send(reply, callback.ack);
          }
        }
      },
    });
  }
}

function send(reply: FastifyReply, answer: ConnectorReply) {
  return reply
    .code(answer.status)
    .headers(answer.headers ?? {})
    .send(answer.body);
}
