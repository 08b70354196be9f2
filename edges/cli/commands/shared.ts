// The operator commands: each parses its own options, calls the same modules the service uses
// (status, the operator decisions, the duplicate scan, the retention purge, replay), and returns
// data (for --json) and a human rendering. `ok: false` is a finding or a refusal: exit code 1.
import { userInfo } from 'node:os';
import type { ParseArgsConfig } from 'node:util';
import { listRecentRecords } from '../../../services/db/idempotency-records.js';
import { listDuplicateAlerts, scanForDuplicates } from '../../../services/db/duplicate-scan.js';
import { purgeExpiredRecords } from '../../../services/db/retention.js';
import { DECIDED_BY_MAX_LENGTH, decidedByProblem } from '../../../domain/decided-by.js';
import { idempotencyKeyFor, KEY_SOURCES, type KeySource, parseIdempotencyKey } from '../../../domain/idempotency-key.js';
import { clearKeySourceConflicts } from '../../../services/db/key-source-conflicts.js';
import { ORDER_STATUSES, type OrderStatus } from '../../../domain/order-status.js';
import {
  type AwaitingDecision,
  decideCompensation,
  decideDelivery,
  listOrdersAwaitingDecision,
  type OperatorDeps,
  recompensate,
  resubmit,
  UNCONFIRMED_AFTER_MS,
} from '../../../submission/operator-decisions.js';
import { orderNotFound } from '../../../submission/failure-outcome.js';
import { readOrderStatus } from '../../../submission/order-status-view.js';
import { runsByBuild } from '../../../services/temporal/worker-deployment.js';
import { historyFromFile, historyFromServer, replayHistories } from '../../../worker/replay.js';
import type { CommandContext } from '../context.js';
import { fields, table } from '../table.js';

export interface CommandResult {
  ok: boolean;
  data: unknown;
  human: string;
}

type Values = Record<string, string | boolean | undefined>;

export interface Command {
  name: string;
  summary: string;
  /** Arguments and options, after `orders-cli <name>`. */
  usage: string;
  options: NonNullable<ParseArgsConfig['options']>;
  run: (context: CommandContext, values: Values, positionals: string[]) => Promise<CommandResult>;
}

/** Bad arguments: the command prints its usage and exits 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}

const by = { by: { type: 'string' as const } };
/** Who decided: --by, checked here against what the decision record can store, or the OS user. */
function decidedBy(values: Values): string {
  if (typeof values.by !== 'string') return `cli:${userInfo().username}`;
  const problem = decidedByProblem(values.by);
  if (problem) throw new UsageError(`--by ${problem}`);
  return values.by;
}

function keyArgument(positionals: string[], values: Values): string {
  if (typeof values['approval-no'] === 'string') {
    const operation = typeof values.operation === 'string' ? values.operation : 'MAIN';
    if (operation !== 'MAIN' && operation !== 'SUPPLEMENT')
      throw new UsageError('--operation must be MAIN or SUPPLEMENT');
    try {
      return idempotencyKeyFor(values['approval-no'], operation);
    } catch (error) {
      throw new UsageError(`--approval-no: ${(error as Error).message}`);
    }
  }
  const [key, ...rest] = positionals;
  if (!key || rest.length > 0) throw new UsageError('give exactly one idempotency key');
  if (!parseIdempotencyKey(key))
    throw new UsageError(`${key} is not an idempotency key (APPROVAL:<approvalNo>:MAIN|SUPPLEMENT)`);
  return key;
}

function nonNegativeInteger(values: Values, name: string, fallback: number): number {
  const raw = values[name];
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (raw === '' || !Number.isInteger(value) || value < 0) throw new UsageError(`--${name} must be a whole number ≥ 0`);
  return value;
}

function positiveInteger(values: Values, name: string, fallback: number): number {
  const raw = values[name];
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1) throw new UsageError(`--${name} must be a positive integer`);
  return value;
}

/** The alert listings stay bounded: a cluster may hold thousands of orders. */
const MAX_ALERT_LIMIT = 1_000;

function alertLimit(values: Values): number {
  const limit = positiveInteger(values, 'limit', 20);
  if (limit > MAX_ALERT_LIMIT) throw new UsageError(`--limit must be at most ${MAX_ALERT_LIMIT}`);
  return limit;
}

type StoredAlert = Awaited<ReturnType<typeof listDuplicateAlerts>>['alerts'][number];

function alertView(alert: StoredAlert) {
  return {
    id: alert.id.toString(),
    kind: alert.kind,
    approvalNo: alert.approvalNo,
    operation: alert.operation,
    customerId: alert.customerId,
    orderCount: alert.orderCount,
    orderNos: alert.orderNos,
    idempotentKeys: alert.idempotentKeys,
    detail: alert.detail,
    lastOrderAt: alert.lastOrderAt.toISOString(),
    detectedAt: alert.detectedAt.toISOString(),
    updatedAt: alert.updatedAt.toISOString(),
  };
}

function shown(count: number, total: number): string {
  return count < total ? `showing ${count} of ${total} alerts (--limit to see more)` : `${total} alert(s)`;
}

function statusOption(values: Values): OrderStatus | undefined {
  const raw = values.status;
  if (raw === undefined) return undefined;
  if (!(ORDER_STATUSES as readonly unknown[]).includes(raw)) {
    throw new UsageError(`--status must be one of ${ORDER_STATUSES.join(', ')}`);
  }
  return raw as OrderStatus;
}

const keyOptions = { 'approval-no': { type: 'string' as const }, operation: { type: 'string' as const } };
const KEY_USAGE = '<key> | --approval-no NO [--operation MAIN|SUPPLEMENT]';

async function operatorDeps(context: CommandContext): Promise<OperatorDeps> {
  return {
    prisma: context.prisma(),
    temporal: await context.temporal(),
    taskQueue: context.config.temporal.taskQueue,
    writePolicy: context.config.writePolicy,
  };
}

function decision(name: 'resubmit' | 'abandon', summary: string, more: string): Command {
  return {
    name,
    summary,
    usage: `${KEY_USAGE} [--by NAME]\n\nDelivered to compensation-<key> as the \`decide\` update; answers once it was carried out.${more}\nNAME (at most ${DECIDED_BY_MAX_LENGTH} characters) is recorded with the decision (default: cli:<user>).`,
    options: { ...by, ...keyOptions },
    run: async (context, values, positionals) => {
      const key = keyArgument(positionals, values);
      const request = { idempotencyKey: key, decidedBy: decidedBy(values) };
      const result =
        name === 'resubmit'
          ? await resubmit(await operatorDeps(context), request)
          : await decideCompensation(await context.temporal(), { ...request, decision: name });
      return {
        ok: true,
        data: result,
        human: `${name}: ${key} is now ${result.status}${result.outcome ? ` (${result.outcome})` : ''}`,
      };
    },
  };
}

function deliveryDecision(name: 'redeliver' | 'mark-handled', summary: string, more: string): Command {
  return {
    name,
    summary,
    usage: `${KEY_USAGE} [--by NAME]\n\nOnly for a DELIVERY_FAILED key. While order-<key> waits for a decision, delivered to it as the\n\`decide\` update; after its window closed, carried out by delivery-<key>. Answers once done.${more}\nNAME (at most ${DECIDED_BY_MAX_LENGTH} characters) is recorded with the decision (default: cli:<user>).`,
    options: { ...by, ...keyOptions },
    run: async (context, values, positionals) => {
      const key = keyArgument(positionals, values);
      const decider = decidedBy(values);
      const result = await decideDelivery(await operatorDeps(context), {
        idempotencyKey: key,
        decision: name,
        decidedBy: decider,
      });
      return {
        // A redelivery the downstream or the broker refused again is a failure: the key still waits.
        ok: result.status === 'DELIVERED',
        data: result,
        human: `${name}: ${key} is now ${result.status}${result.outcome ? ` (${result.outcome})` : ''}`,
      };
    },
  };
}

/** What `awaiting` answers: the keys as data, and a table for a person. */
export function awaitingResult(waiting: AwaitingDecision[]): CommandResult {
  return {
    ok: true,
    data: waiting,
    human:
      waiting.length === 0
        ? 'no key is waiting for a person'
        : table(
            ['KEY', 'STATUS', 'NEXT', 'CUSTOMER', 'AMOUNT', 'WAITING SINCE', 'WHY'],
            waiting.map((order) => [
              order.idempotencyKey,
              order.status,
              order.nextActions.join(' | '),
              order.customerId,
              `${order.totalAmount} ${order.currency}`,
              order.waitingSince,
              order.reason.slice(0, 60),
            ]),
          ),
  };
}

export const COMMANDS: Command[] = [
  {
    name: 'status',
    summary: 'where one key stands: status, order number, attempts, last error',
    usage: '<key> | --approval-no NO [--operation MAIN|SUPPLEMENT]',
    options: { 'approval-no': { type: 'string' }, operation: { type: 'string' } },
    run: async (context, values, positionals) => {
      const key = keyArgument(positionals, values);
      // The database answers; Temporal only adds a live attempt count, and may be down.
      const view = await readOrderStatus({ prisma: context.prisma(), temporal: context.lazyTemporal() }, key);
      if (!view) return { ok: false, data: { idempotencyKey: key, found: false }, human: orderNotFound(key).message };
      return {
        ok: true,
        data: view,
        human: fields([
          ['key', view.idempotencyKey],
          ['status', view.status],
          ['order', view.orderNo],
          ['attempts', view.attempts],
          ['last error', view.lastError],
          ['workflow', view.workflowId],
        ]),
      };
    },
  },
  {
    name: 'list',
    summary: 'keys by status, most recently changed first',
    usage: `[--status STATUS] [--limit N]\n\nSTATUS: ${ORDER_STATUSES.join(', ')}`,
    options: { status: { type: 'string' }, limit: { type: 'string' } },
    run: async (context, values) => {
      const records = await listRecentRecords(context.prisma(), {
        status: statusOption(values),
        limit: positiveInteger(values, 'limit', 50),
      });
      const rows = records.map((record) => ({
        idempotencyKey: record.idempotencyKey,
        status: record.status,
        attempts: record.attempts,
        updatedAt: record.updatedAt.toISOString(),
        lastError: record.lastError,
      }));
      return {
        ok: true,
        data: rows,
        human:
          rows.length === 0
            ? 'no keys'
            : table(
                ['KEY', 'STATUS', 'ATTEMPTS', 'UPDATED', 'LAST ERROR'],
                rows.map((row) => [
                  row.idempotencyKey,
                  row.status,
                  row.attempts,
                  row.updatedAt,
                  row.lastError?.slice(0, 60),
                ]),
              ),
      };
    },
  },
  {
    name: 'awaiting',
    summary:
      'every key waiting for a person (COMPENSATING, DELIVERY_FAILED, FAILED, unconfirmed starts, key source conflicts) and what to do next',
    usage:
      '[--limit N] [--unconfirmed-after SECONDS]\n\nThe longest waiting first. NEXT lists the commands that move a key on, the usual first;\nsender-redelivery: the sender was answered 503 and should send again, else `resubmit`.\nKEY_SOURCE_CONFLICT: a delivery through another door than the one holding the key was refused; check, then `clear-conflict`.\nA claim whose start was not confirmed is listed once it is SECONDS old (default 60; 0: at once).',
    options: { limit: { type: 'string' }, 'unconfirmed-after': { type: 'string' } },
    run: async (context, values) => {
      const listed = await listOrdersAwaitingDecision(context.prisma(), positiveInteger(values, 'limit', 50), {
        unconfirmedAfterMs: nonNegativeInteger(values, 'unconfirmed-after', UNCONFIRMED_AFTER_MS / 1000) * 1000,
      });
      return awaitingResult(listed);
    },
  },
  {
    name: 'clear-conflict',
    summary: 'clear a key source conflict listed by `awaiting`, once its claim was checked',
    usage:
      `${KEY_USAGE} [--door SOURCE] [--by NAME]\n\nA delivery through another door than the one that claimed the key was refused and is\n` +
      `listed by \`awaiting\` as KEY_SOURCE_CONFLICT (docs/operations.md). Clears the key's open\nconflicts, or only those of --door (${KEY_SOURCES.join(', ')}); a later refusal lists it again.\nExit code 1 when none was open. NAME is recorded (default: cli:<user>).`,
    options: { ...by, ...keyOptions, door: { type: 'string' } },
    run: async (context, values, positionals) => {
      const key = keyArgument(positionals, values);
      const door = values.door;
      if (door !== undefined && !(KEY_SOURCES as readonly unknown[]).includes(door)) {
        throw new UsageError(`--door must be one of ${KEY_SOURCES.join(', ')}`);
      }
      const cleared = await clearKeySourceConflicts(context.prisma(), {
        idempotencyKey: key,
        door: door as KeySource | undefined,
        clearedBy: decidedBy(values),
      });
      return {
        ok: cleared > 0,
        data: { idempotencyKey: key, cleared },
        human:
          cleared > 0
            ? `cleared ${cleared} key source conflict(s) of ${key}`
            : `no open key source conflict of ${key}${typeof door === 'string' ? ` through ${door}` : ''}`,
      };
    },
  },
  decision(
    'resubmit',
    'write the order again with the same key (it can never double)',
    '\nA claim whose start was never confirmed (listed by `awaiting` as RECEIVED) is started instead.',
  ),
  decision('abandon', 'give the order up: status COMPENSATED', ''),
  deliveryDecision(
    'redeliver',
    'send a failed delivery again — POST it and/or publish it to the broker: the same event, same key and event id (message id), under the same retry policy',
    '\nExit code 1 when the downstream or the broker refused it again (the key stays DELIVERY_FAILED).',
  ),
  deliveryDecision(
    'mark-handled',
    'close a failed delivery without sending: status DELIVERED, recorded with who decided',
    '',
  ),
  {
    name: 'recompensate',
    summary: 're-run compensation for a key whose compensation ended (FAILED, COMPENSATED); idempotent',
    usage:
      `${KEY_USAGE} [--by NAME]` +
      '\n\nA key already waiting is left alone; an abandoned key stays abandoned; a key whose order\nlanded is continued. Then decide with `resubmit` or `abandon`.',
    options: { ...by, ...keyOptions },
    run: async (context, values, positionals) => {
      const key = keyArgument(positionals, values);
      const decider = decidedBy(values);
      const result = await recompensate(await operatorDeps(context), { idempotencyKey: key, decidedBy: decider });
      return {
        ok: true,
        data: result,
        human: result.started
          ? `compensation started again for ${key} (was ${result.previousStatus}): ${result.workflowId}`
          : `${key} is already in compensation (${result.workflowId}); nothing started`,
      };
    },
  },
  {
    name: 'scan-duplicates',
    summary: 'find orders of one approval+operation under different keys, and runs of near-identical orders',
    usage:
      '[--since-hours N] [--window-minutes M] [--limit N]\n\nRecords one alert per cluster (a cluster that grows grows its alert) and lists the\nclusters with an order in the lookback, at most --limit (default 20). Exit code 1 when\nanything is found.',
    options: {
      'since-hours': { type: 'string' },
      'window-minutes': { type: 'string' },
      limit: { type: 'string' },
    },
    run: async (context, values) => {
      const limit = alertLimit(values);
      const options = {
        lookbackMinutes: positiveInteger(values, 'since-hours', 24) * 60,
        nearWindowMinutes: positiveInteger(
          values,
          'window-minutes',
          context.config.safetyNets.nearDuplicateWindowMinutes,
        ),
      };
      context.progress('scanning order_main …');
      const result = await scanForDuplicates(context.prisma(), options);
      const listing = await listDuplicateAlerts(context.prisma(), { limit, since: new Date(result.scannedSince) });
      const alerts = listing.alerts.map(alertView);
      const newIds = new Set(result.newAlertIds);
      const found = result.sameDocumentClusters + result.nearIdenticalClusters;
      const summary =
        `${result.sameDocumentClusters} document(s) under more than one key, ` +
        `${result.nearIdenticalClusters} run(s) of near-identical orders since ${result.scannedSince}; ` +
        `${result.newAlerts} new alert(s), ${result.grownAlerts} grown`;
      const human =
        found === 0
          ? `no duplicates among orders since ${result.scannedSince}`
          : [
              summary,
              table(
                ['ALERT', 'KIND', 'ORDERS', 'NEW', 'DETAIL'],
                alerts.map((alert) => [
                  alert.id,
                  alert.kind,
                  alert.orderCount,
                  newIds.has(alert.id) ? 'new' : 'known',
                  alert.detail,
                ]),
              ),
              shown(alerts.length, listing.total),
            ].join('\n');
      return { ok: found === 0, data: { ...result, alerts, alertsTotal: listing.total }, human };
    },
  },
  {
    name: 'alerts',
    summary: 'duplicate alerts recorded by the scans, one per cluster, most recently recorded or grown first',
    usage: `[--limit N]\n\nAt most N alerts (default 20, at most ${MAX_ALERT_LIMIT}); --json carries every order of each.`,
    options: { limit: { type: 'string' } },
    run: async (context, values) => {
      const listing = await listDuplicateAlerts(context.prisma(), { limit: alertLimit(values) });
      const alerts = listing.alerts.map(alertView);
      return {
        ok: true,
        data: { alerts, total: listing.total },
        human:
          alerts.length === 0
            ? 'no duplicate alerts'
            : [
                table(
                  ['ALERT', 'UPDATED', 'KIND', 'ORDERS', 'DETAIL'],
                  alerts.map((alert) => [alert.id, alert.updatedAt, alert.kind, alert.orderCount, alert.detail]),
                ),
                shown(alerts.length, listing.total),
              ].join('\n'),
      };
    },
  },
  {
    name: 'purge-expired',
    summary: 'purge idempotency records past the retention window that an order row answers for',
    usage:
      '[--dry-run] [--retention-days N] [--release-unanswered]\n\nDefault N: IDEMPOTENCY_RETENTION_DAYS. Records of keys without an order (abandoned,\nfailed) are kept and counted, and so are unanswered ones: written orders whose sender\nwas never answered with success (every delivery heard 503), kept until it sends again\nand hears its 202. --release-unanswered purges those too, once the sender knows.',
    options: {
      'dry-run': { type: 'boolean' },
      'retention-days': { type: 'string' },
      'release-unanswered': { type: 'boolean' },
    },
    run: async (context, values) => {
      const result = await purgeExpiredRecords(context.prisma(), {
        retentionDays: positiveInteger(values, 'retention-days', context.config.retentionDays),
        dryRun: values['dry-run'] === true,
        releaseUnanswered: values['release-unanswered'] === true,
        onProgress: (purged) => context.progress(`purged ${purged} …`),
      });
      const kept = Object.entries(result.kept)
        .map(([status, count]) => `${count} ${status}`)
        .join(', ');
      const unanswered = result.unanswered > 0 ? ` (${result.unanswered} of them unanswered)` : '';
      return {
        ok: true,
        data: result,
        human: `${result.dryRun ? 'would purge' : 'purged'} ${result.purged} record(s) created before ${result.cutoff}; kept ${kept || 'none'}${unanswered}`,
      };
    },
  },
  {
    name: 'builds',
    summary: 'each build of the Worker Deployment: where new runs go, its open runs, how many are pinned to it',
    usage:
      '[--deployment-name NAME]\n\nThe deployment is TEMPORAL_DEPLOYMENT_NAME unless named. A build that is not current and has\nno pinned runs left can have its workers stopped. Exit code 1 when the deployment is unknown.',
    options: { 'deployment-name': { type: 'string' } },
    run: async (context, values) => {
      const name = values['deployment-name'] ?? context.config.worker.deployment?.deploymentName;
      if (typeof name !== 'string') throw new UsageError('give --deployment-name or set TEMPORAL_DEPLOYMENT_NAME');
      const runs = await runsByBuild(await context.temporal(), context.config.temporal.namespace, name);
      return {
        ok: runs.builds.length > 0,
        data: runs,
        human:
          runs.builds.length === 0
            ? `no build of ${name} has polled yet`
            : table(
                ['BUILD', 'ROUTING', 'OPEN RUNS', 'PINNED', 'STOPPABLE'],
                runs.builds.map((build) => [
                  build.buildId,
                  build.routing === 'ramping' ? `ramping ${runs.rampingPercentage}%` : build.routing,
                  build.openRuns,
                  build.pinnedRuns,
                  build.routing === 'none' && build.pinnedRuns === 0 ? 'yes' : 'no',
                ]),
              ),
      };
    },
  },
  {
    name: 'replay',
    summary: 'replay workflow histories (files, or a workflow id) against the current workflow code',
    usage:
      '<history.json>... | --workflow-id ID [--run-id RUN]\n\nFiles as exported by `temporal workflow show --output json` or the Web UI. Exit code 1\nwhen any history does not replay (a change that needs patched()).',
    options: { 'workflow-id': { type: 'string' }, 'run-id': { type: 'string' } },
    run: async (context, values, positionals) => {
      const workflowId = values['workflow-id'];
      if ((typeof workflowId === 'string') === positionals.length > 0) {
        throw new UsageError('give history files or --workflow-id, not both');
      }
      const histories =
        typeof workflowId === 'string'
          ? [
              await historyFromServer(
                await context.temporal(),
                workflowId,
                typeof values['run-id'] === 'string' ? values['run-id'] : undefined,
              ),
            ]
          : await Promise.all(positionals.map((file) => historyFromFile(file)));
      let done = 0;
      const outcomes = await replayHistories(histories, {
        bundleDir: context.config.worker.bundleDir,
        onResult: (outcome) =>
          context.progress(`[${++done}/${histories.length}] ${outcome.ok ? 'ok  ' : 'FAIL'} ${outcome.name}`),
      });
      const failed = outcomes.filter((outcome) => !outcome.ok);
      return {
        ok: failed.length === 0,
        data: outcomes,
        human:
          failed.length === 0
            ? `${outcomes.length} history(ies) replay against the current code`
            : failed.map((outcome) => `${outcome.name}: ${outcome.error}`).join('\n'),
      };
    },
  },
];
