// DingTalk's Stream connection as the API holds it (DINGTALK_EVENT_MODE=stream): events come over
// the connection the process opens (vendors/dingtalk/stream.ts) instead of to a public URL.
// Each approval event is read as the HTTP callback's is (vendors/dingtalk/approval-event.ts)
// and goes through the same acceptance (submission/accept-oa-event.ts) and start path.
// The acknowledgement is the reply: SUCCESS only once the key is claimed, or the event is known to
// need nothing (not an order, not an approval event, unusable), so an event lost to a crash, a lost
// connection or a failed claim comes again; LATER when the claim failed or ran out of time. With
// decision cards, a card's click comes over the same connection and is decided through the one
// decision path, answered with the card's update.
import type { Logger } from 'pino';
import type { ConnectionState } from '../../services/health/event-connections.js';
import { digestOf, jsonObjectOf } from '../inbound.js';
import type { ConnectionSink, HeldConnection } from '../oa-vendor.js';
import { readDingTalkEvent } from './approval-event.js';
import type { DingTalkConfig } from './settings.js';
import {
  DINGTALK_CARD_CALLBACK_DEADLINE_MS,
  DINGTALK_CARD_CALLBACK_TOPIC,
  dingtalkCardClickOf,
  dingtalkClickAnswer,
} from './decision-cards.js';
import { type DingTalkStream, openDingTalkStream, type StreamCallback, type StreamEvent } from './stream.js';
import type { StreamAckStatus } from './stream-frames.js';

/**
 * The Stream connection when DINGTALK_EVENT_MODE=stream, else none. DingTalk does not say how long
 * it waits for an acknowledgement: an event's claim has WEBHOOK_START_TIMEOUT_MS from its arrival.
 */
export function dingtalkConnection(dingtalk: DingTalkConfig): HeldConnection | undefined {
  if (!dingtalk.stream) return undefined;
  let open: DingTalkStream | undefined;
  let state: ConnectionState | undefined;
  const operators = dingtalk.decisions ? new Set(dingtalk.decisions.operators) : undefined;
  return {
    ackDeadlineMs: undefined,
    clickDeadlineMs: DINGTALK_CARD_CALLBACK_DEADLINE_MS,
    start(sink) {
      const log = sink.log.child({ door: 'dingtalk-stream' });
      log.info(
        {
          callback: dingtalk.callback
            ? 'on: POST /webhooks/dingtalk takes events too'
            : 'off (no DINGTALK_AES_KEY and DINGTALK_TOKEN): POST /webhooks/dingtalk answers 404',
        },
        'DingTalk events over the Stream connection',
      );
      open = openDingTalkStream({
        appKey: dingtalk.appKey,
        appSecret: dingtalk.appSecret,
        apiBaseUrl: dingtalk.apiBaseUrl,
        onEvent: (event) => takeStreamEvent({ ...sink, log }, event),
        // With decision cards, their clicks come over the Stream too (callbackType STREAM).
        callbacks: operators && {
          topics: [DINGTALK_CARD_CALLBACK_TOPIC],
          onCallback: (callback) => takeCardCallback({ ...sink, log }, callback, operators),
          whileClosing: dingtalkClickAnswer({
            tone: 'error',
            text: 'The service is restarting: click again in a moment',
          }),
          onFailure: dingtalkClickAnswer({ tone: 'error', text: 'Not taken: click again in a moment' }),
        },
        onState: (next) => {
          state = next;
          sink.report(next);
        },
        log,
      });
    },
    stop: async (withinMs) => {
      await open?.stop(withinMs);
    },
    state: () => state,
  };
}

/**
 * One EVENT frame → its acknowledgement. A start still running when the claim is answered goes on
 * after the acknowledgement, as after a callback's reply (docs/architecture.md, decision 17).
 */
async function takeStreamEvent(
  sink: Pick<ConnectionSink, 'take'> & { log: Pick<Logger, 'info' | 'warn'> },
  event: StreamEvent,
): Promise<StreamAckStatus> {
  const { log } = sink;
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
    const outcome = await sink.take(reading.event, event.receivedAt);
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

/**
 * One click on a decision card (a CALLBACK frame of the card topic) → the response that updates the
 * card, inside DingTalk's 2 s. The frame's messageId names the delivery. A click that is no button
 * of these cards is answered with no update, and logged.
 */
async function takeCardCallback(
  sink: Pick<ConnectionSink, 'click'> & { log: Pick<Logger, 'info' | 'warn'> },
  callback: StreamCallback,
  operators: ReadonlySet<string>,
): Promise<unknown> {
  const read = dingtalkCardClickOf(callback.data, callback.messageId);
  if (read.kind === 'unusable') {
    sink.log.warn({ reason: read.reason }, 'DingTalk card callback answered: not a click of a decision card');
    return {};
  }
  const { click } = read;
  const answer = await sink.click(click, operators, callback.receivedAt);
  return dingtalkClickAnswer(answer);
}
