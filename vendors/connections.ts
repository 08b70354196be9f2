// The held connections of the configured OA vendors (vendors/registry.ts), opened by the API
// process beside its callbacks (docs/architecture.md, decision 35), each event they bring handed to
// the one start path as a callback's is, and each decision card click to the one decision path.
import type { Client } from '@temporalio/client';
import type { Logger } from 'pino';
import type { PrismaClient } from '../services/db/prisma-client.js';
import type { EventConnections } from '../services/health/event-connections.js';
import type { ProductMetrics } from '../services/metrics/product-metrics.js';
import {
  acceptApprovalEvent,
  type ApprovalEventConfig,
  approvalEventDepsFrom,
  type ApprovalEventsInFlight,
  replyBudgetMs,
} from '../submission/accept-oa-event.js';
import type { IntakeLoad } from '../submission/intake-load.js';
import { takeCardClick } from '../submission/operator-decisions/cards.js';
import type { HeldConnection } from './oa-vendor.js';
import { configured } from './registry.js';
import type { ConnectorsConfig } from './settings.js';

export interface OaConnectionDeps {
  /** The connectors' settings, and what their events need on the start path. */
  config: ApprovalEventConfig & { connectors: ConnectorsConfig };
  prisma: PrismaClient;
  temporal: Client;
  metrics: ProductMetrics;
  /** The process's intake, shared with the HTTP doors. */
  intake: IntakeLoad;
  /** The process's approval events whose work goes on after their reply, shared with the HTTP doors. */
  approvalsInFlight: ApprovalEventsInFlight;
  log: Logger;
  /** Where each connection's state is reported (/healthz, `orders_oa_connection_up`). */
  connections: EventConnections;
}

export interface OaConnections {
  /** Closes every connection, each letting the events it is taking finish for at most `withinMs`. */
  close(withinMs: number): Promise<void>;
}

/**
 * Opens the held connections of the configured vendors. Each
 * event a connection delivers goes where a callback's goes — `acceptApprovalEvent`, through the one
 * start path, with the process's intake — due within the reply budget of the vendor's
 * acknowledgement deadline, or within WEBHOOK_START_TIMEOUT_MS where the vendor names none, counted
 * from its arrival; the connection acknowledges it only once that resolves.
 */
export function openOaConnections(deps: OaConnectionDeps): OaConnections {
  const approvalDeps = approvalEventDepsFrom(deps);
  const held: HeldConnection[] = [];
  for (const { module, settings } of configured(deps.config.connectors)) {
    const connection = module.connection?.(settings);
    if (!connection) continue;
    const budgetMs =
      connection.ackDeadlineMs === undefined
        ? deps.config.http.startTimeoutMs
        : replyBudgetMs(connection.ackDeadlineMs);
    connection.start({
      take: (event, arrivedAt) =>
        acceptApprovalEvent(approvalDeps, event, { arrivedAt, replyBy: arrivedAt + budgetMs }),
      // A click decides as one through the callback does, answered inside the vendor's deadline for it.
      click: (click, operators, arrivedAt) =>
        takeCardClick(
          deps,
          click,
          operators,
          arrivedAt + (connection.clickDeadlineMs === undefined ? budgetMs : replyBudgetMs(connection.clickDeadlineMs)),
        ),
      report: (state) => deps.connections.report(module.vendor, state),
      log: deps.log,
    });
    held.push(connection);
  }
  return {
    close: async (withinMs) => {
      await Promise.all(held.map((connection) => connection.stop(withinMs)));
    },
  };
}
