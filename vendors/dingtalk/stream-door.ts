// The DingTalk Stream door of the API process (DINGTALK_EVENT_MODE=stream): events come over the
// connection the process opens (vendors/dingtalk/stream.ts) instead of to a public URL.
// Each approval event is read as the HTTP callback's is (vendors/dingtalk/approval-event.ts)
// and goes through the same acceptance (submission/accept-oa-event.ts) and start path.
// The acknowledgement is the reply: SUCCESS only once the key is claimed, or the event is known to
// need nothing (not an order, not an approval event, unusable), so an event lost to a crash, a lost
// connection or a failed claim comes again; LATER when the claim failed or ran out of time.
import type { Client } from '@temporalio/client';
import type { Logger } from 'pino';
import type { Config } from '../../services/config/env.js';
import type { DingTalkConfig } from './settings.js';
import type { PrismaClient } from '../../services/db/prisma-client.js';
import type { EventConnections } from '../../services/health/event-connections.js';
import type { ProductMetrics } from '../../services/metrics/product-metrics.js';
import {
  type ApprovalEventDeps,
  acceptApprovalEvent,
  approvalEventDepsFrom,
} from '../../submission/accept-oa-event.js';
import type { IntakeLoad } from '../../submission/intake-load.js';
import { readDingTalkEvent } from './approval-event.js';
import { type DingTalkStream, openDingTalkStream, type StreamEvent, type StreamTimings } from './stream.js';
import type { StreamAckStatus } from './stream-frames.js';
import { digestOf, jsonObjectOf } from '../inbound.js';

export interface StreamDoorDeps {
  config: Config;
  prisma: PrismaClient;
  temporal: Client;
  metrics: ProductMetrics;
  /** The process's intake, shared with the HTTP doors. */
  intake: IntakeLoad;
  /** Where the connection's state is reported (/healthz, `orders_oa_connection_up`). */
  connections: EventConnections;
  log: Logger;
  /** The connection's pauses and heartbeat; the product's own unless a test passes shorter ones. */
  timings?: Partial<StreamTimings>;
}

/** Opens the Stream connection when DINGTALK_EVENT_MODE=stream, else nothing. */
export function openDingTalkStreamDoor(deps: StreamDoorDeps): DingTalkStream | undefined {
  const dingtalk = deps.config.connectors.dingtalk;
  if (!dingtalk?.stream) return undefined;
  const log = deps.log.child({ door: 'dingtalk-stream' });
  log.info(
    {
      callback: dingtalk.callback
        ? 'on: POST /webhooks/dingtalk takes events too'
        : 'off (no DINGTALK_AES_KEY and DINGTALK_TOKEN): POST /webhooks/dingtalk answers 404',
    },
    'DingTalk events over the Stream connection',
  );
  const acceptance: ApprovalEventDeps = approvalEventDepsFrom({ ...deps, log });
  return openDingTalkStream({
    ...streamCredentials(dingtalk),
    onEvent: (event) => takeStreamEvent(acceptance, event, deps.config.http.startTimeoutMs),
    onState: (state) => deps.connections.report('dingtalk', state),
    log,
    ...(deps.timings ? { timings: deps.timings } : {}),
  });
}

const streamCredentials = (dingtalk: DingTalkConfig) => ({
  appKey: dingtalk.appKey,
  appSecret: dingtalk.appSecret,
  apiBaseUrl: dingtalk.apiBaseUrl,
});

/**
 * One EVENT frame → its acknowledgement. The claim has WEBHOOK_START_TIMEOUT_MS from the frame's
 * arrival, the deadline every start of the process keeps; a start still running then goes on after
 * the acknowledgement, as after a callback's reply (docs/architecture.md, decision 17).
 */
export async function takeStreamEvent(
  deps: ApprovalEventDeps,
  event: StreamEvent,
  budgetMs: number,
): Promise<StreamAckStatus> {
  const { log } = deps;
  const payload = jsonObjectOf(event.data);
  // The connection is DingTalk's own (opened with the app secret): a frame that cannot be used
  // would only come again on every redelivery, so it is acknowledged and logged, like a callback.
  if (!payload) {
    log.warn({ eventId: event.eventId }, 'DingTalk Stream event unusable: its data is not a JSON object');
    return 'SUCCESS';
  }
  // The frame names the event's id: the delivery id a callback can only take a digest for.
  const eventId = event.eventId ?? digestOf(event.data);
  const reading = readDingTalkEvent(event.eventType ?? 'unknown', payload, eventId);
  if (reading.kind === 'other') {
    log.info(
      { eventType: reading.eventType.slice(0, 64) },
      'DingTalk Stream event acknowledged: not an approval event',
    );
    return 'SUCCESS';
  }
  if (reading.kind === 'unusable') {
    log.warn({ eventId, reason: reading.reason }, 'DingTalk Stream event acknowledged: unusable, nothing recorded');
    return 'SUCCESS';
  }
  try {
    const outcome = await acceptApprovalEvent(deps, reading.event, {
      arrivedAt: event.receivedAt,
      replyBy: event.receivedAt + budgetMs,
    });
    log.info(
      { vendor: 'dingtalk', eventId, idempotencyKey: outcome.idempotencyKey, outcome: outcome.kind },
      'OA approval event acknowledged',
    );
    return 'SUCCESS';
  } catch (error) {
    // Not claimed: nothing was promised, and DingTalk sends the event again.
    log.warn(
      { err: error, vendor: 'dingtalk', eventId },
      'OA approval event not taken; DingTalk is asked to send it again',
    );
    return 'LATER';
  }
}
