// The OA event connections the API process opens itself (docs/architecture.md, decision 35):
// Feishu's long connection when FEISHU_EVENT_MODE=long-connection, DingTalk's Stream
// (vendors/dingtalk/stream-door.ts) when DINGTALK_EVENT_MODE=stream. Each event a connection
// delivers goes where a callback's goes — `acceptApprovalEvent`, through the one start path, with
// the process's intake — under the connection's ack budget (Feishu: 2 s of its 3 s; DingTalk's
// Stream: WEBHOOK_START_TIMEOUT_MS, no shorter deadline being known), counted from the arrival;
// the connection acknowledges it only once that resolves. Where each connection stands is reported
// to `connections`, which /healthz and the `orders_oa_connection_up` gauge read.
import type { Client } from '@temporalio/client';
import type { Logger } from 'pino';
import type { Config } from '../../services/config/env.js';
import type { PrismaClient } from '../../services/db/prisma-client.js';
import type { EventConnections } from '../../services/health/event-connections.js';
import type { ProductMetrics } from '../../services/metrics/product-metrics.js';
import {
  acceptApprovalEvent,
  approvalEventDepsFrom,
  type ApprovalEventOutcome,
} from '../../submission/accept-oa-event.js';
import type { IntakeLoad } from '../../submission/intake-load.js';
import type { OaEvent } from '../../vendors/connector.js';
import { FEISHU_LONG_CONNECTION_ACK_MS, openFeishuLongConnection } from '../../vendors/feishu/long-connection.js';
import { openDingTalkStreamDoor } from '../../vendors/dingtalk/stream-door.js';
import { replyBudgetMs } from './routes/oa-callbacks.js';

export interface OaConnectionDeps {
  config: Config;
  prisma: PrismaClient;
  temporal: Client;
  metrics: ProductMetrics;
  intake: IntakeLoad;
  log: Logger;
  connections: EventConnections;
}

export interface OaConnections {
  /** Closes every connection, each letting the events it is taking finish for at most `withinMs`. */
  close(withinMs: number): Promise<void>;
}

export function openOaConnections(deps: OaConnectionDeps): OaConnections {
  const { config } = deps;
  const feishu = config.connectors.feishu;
  const open =
    feishu?.eventMode === 'long-connection'
      ? [
          openFeishuLongConnection({
            appId: feishu.appId,
            appSecret: feishu.appSecret,
            domain: feishu.apiBaseUrl,
            encryptKey: feishu.callback?.encryptKey,
            verificationToken: feishu.callback?.verificationToken,
            log: deps.log,
            connections: deps.connections,
            take: taker(deps, FEISHU_LONG_CONNECTION_ACK_MS),
          }),
        ]
      : [];
  const dingtalkStream = openDingTalkStreamDoor(deps);
  return {
    close: async (withinMs) => {
      await Promise.all([...open.map((connection) => connection.close(withinMs)), dingtalkStream?.stop(withinMs)]);
    },
  };
}

/** What a connection does with one approval event: the callbacks' path, its reply due within the vendor's ack budget. */
function taker(
  deps: OaConnectionDeps,
  vendorDeadlineMs: number,
): (event: OaEvent, arrivedAt: number) => Promise<ApprovalEventOutcome> {
  const approvalDeps = approvalEventDepsFrom(deps);
  return (event, arrivedAt) =>
    acceptApprovalEvent(approvalDeps, event, { arrivedAt, replyBy: arrivedAt + replyBudgetMs(vendorDeadlineMs) });
}
