// Feishu's long connection as the API holds it (FEISHU_EVENT_MODE=long-connection): the SDK's
// connection (vendors/feishu/long-connection.ts) behind the one contract of a held connection
// (vendors/oa-vendor.ts). Feishu waits 3 s for an event's acknowledgement, so an event is taken
// within the reply budget of a callback's, 2 s, counted from its arrival (docs/connectors.md).
// The connection's code, the SDK's WebSocket client among it, is loaded when the connection starts:
// a process that holds none (the worker, an API on callbacks) never loads it.
import type { ConnectionState } from '../../services/health/event-connections.js';
import type { HeldConnection } from '../oa-vendor.js';
import type { FeishuLongConnection } from './long-connection.js';
import type { FeishuConfig } from './settings.js';

/**
 * How long Feishu waits for an event's ack over the long connection before it pushes the event
 * again: 3 s, as for a callback ("使用长连接接收事件", the long-connection guide of the Feishu open
 * platform: an event must be handled within 3 s and without an exception, or it is resent).
 */
export const FEISHU_LONG_CONNECTION_ACK_MS = 3_000;

/** The long connection when FEISHU_EVENT_MODE=long-connection, else none. */
export function feishuConnection(feishu: FeishuConfig): HeldConnection | undefined {
  if (feishu.eventMode !== 'long-connection') return undefined;
  let opening: Promise<FeishuLongConnection> | undefined;
  let state: ConnectionState | undefined;
  // Decision cards on: their clicks arrive here too, and are taken for these people.
  const operators = feishu.decisions ? new Set(feishu.decisions.operators) : undefined;
  return {
    ackDeadlineMs: FEISHU_LONG_CONNECTION_ACK_MS,
    start(sink) {
      opening = import('./long-connection.js').then(({ openFeishuLongConnection }) =>
        openFeishuLongConnection({
          appId: feishu.appId,
          appSecret: feishu.appSecret,
          domain: feishu.apiBaseUrl,
          encryptKey: feishu.callback?.encryptKey,
          verificationToken: feishu.callback?.verificationToken,
          log: sink.log,
          connections: {
            report: (_vendor, next) => {
              state = next;
              sink.report(next);
            },
          },
          take: (event, arrivedAt) => sink.take(event, arrivedAt),
          ...(operators ? { click: (click, arrivedAt) => sink.click(click, operators, arrivedAt) } : {}),
        }),
      );
      // A module that fails to load is a broken install: said at once, not at the first event.
      opening.catch((error: unknown) => sink.log.error({ err: error }, 'Feishu long connection not opened'));
    },
    stop: async (withinMs) => {
      const open = await opening?.catch(() => undefined);
      await open?.close(withinMs);
    },
    state: () => state,
  };
}
