// The operator commands: each parses its own options, calls the same modules the service uses
// (status, the operator decisions, the duplicate scan, the retention purge, replay), and returns
// data (for --json) and a human rendering. `ok: false` is a finding or a refusal: exit code 1.
import { userInfo } from 'node:os';
import type { ParseArgsConfig } from 'node:util';
import { listRecentRecords } from '../db/idempotency-records.js';
import { listDuplicateAlerts, scanForDuplicates } from '../db/duplicate-scan.js';
import { purgeExpiredRecords } from '../db/retention.js';
import { idempotencyKeyFor, parseIdempotencyKey } from '../domain/idempotency-key.js';
import { ORDER_STATUSES, type OrderStatus } from '../domain/order-status.js';
import {
  decideCompensation,
  decideDelivery,
  listOrdersAwaitingDecision,
  type OperatorDeps,
  recompensate,
  resubmit,
} from '../submission/operator-decisions.js';
import { readOrderStatus } from '../submission/order-status.js';
import { historyFromFile, historyFromServer, replayHistories } from '../worker/replay.js';
import type { CommandContext } from './context.js';
import { fields, table } from './table.js';

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
const decidedBy = (values: Values) => (typeof values.by === 'string' ? values.by : `cli:${userInfo().username}`);

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

function positiveInteger(values: Values, name: string, fallback: number): number {
  const raw = values[name];
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1) throw new UsageError(`--${name} must be a positive integer`);
  return value;
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
    usage: `${KEY_USAGE} [--by NAME]\n\nDelivered to compensation-<key> as the \`decide\` update; answers once it was carried out.${more}\nNAME is recorded with the decision (default: cli:<user>).`,
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
    usage: `${KEY_USAGE} [--by NAME]\n\nOnly for a DELIVERY_FAILED key. While order-<key> waits for a decision, delivered to it as the\n\`decide\` update; after its window closed, carried out by delivery-<key>. Answers once done.${more}\nNAME is recorded with the decision (default: cli:<user>).`,
    options: { ...by, ...keyOptions },
    run: async (context, values, positionals) => {
      const key = keyArgument(positionals, values);
      const result = await decideDelivery(await operatorDeps(context), {
        idempotencyKey: key,
        decision: name,
        decidedBy: decidedBy(values),
      });
      return {
        // A redelivery the downstream refused again is a failure: the key still waits.
        ok: result.status === 'DELIVERED',
        data: result,
        human: `${name}: ${key} is now ${result.status}${result.outcome ? ` (${result.outcome})` : ''}`,
      };
    },
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
      if (!view)
        return { ok: false, data: { idempotencyKey: key, found: false }, human: `no order is known for ${key}` };
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
      'every key waiting for a person (COMPENSATING, DELIVERY_FAILED, FAILED, unconfirmed starts) and what to do next',
    usage:
      '[--limit N]\n\nThe longest waiting first. NEXT lists the commands that move a key on, the usual first;\nsender-redelivery: the sender was answered 503 and should send again, else `resubmit`.',
    options: { limit: { type: 'string' } },
    run: async (context, values) => {
      const waiting = await listOrdersAwaitingDecision(context.prisma(), positiveInteger(values, 'limit', 50));
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
    'send a failed delivery again: the same event, same key and event id, under the same retry policy',
    '\nExit code 1 when the downstream refused it again (the key stays DELIVERY_FAILED).',
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
      '<key> [--by NAME]\n\nA key already waiting is left alone; an abandoned key stays abandoned; a key whose order\nlanded is continued. Then decide with `resubmit` or `abandon`.',
    options: by,
    run: async (context, values, positionals) => {
      const key = keyArgument(positionals, values);
      const result = await recompensate(await operatorDeps(context), {
        idempotencyKey: key,
        decidedBy: decidedBy(values),
      });
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
    summary: 'find orders of one approval+operation under different keys, and near-identical orders',
    usage:
      '[--since-hours N] [--window-minutes M]\n\nRecords each finding once as an alert. Exit code 1 when anything is found.',
    options: { 'since-hours': { type: 'string' }, 'window-minutes': { type: 'string' } },
    run: async (context, values) => {
      context.progress('scanning order_main …');
      const result = await scanForDuplicates(context.prisma(), {
        lookbackMinutes: positiveInteger(values, 'since-hours', 24) * 60,
        nearWindowMinutes: positiveInteger(
          values,
          'window-minutes',
          context.config.safetyNets.nearDuplicateWindowMinutes,
        ),
      });
      const human =
        result.findings.length === 0
          ? `no duplicates among orders since ${result.scannedSince}`
          : table(
              ['KIND', 'ORDERS', 'NEW', 'DETAIL'],
              result.findings.map((finding) => [
                finding.kind,
                finding.orderNos.join(' '),
                finding.newAlert ? 'new' : 'known',
                finding.detail,
              ]),
            );
      return { ok: result.findings.length === 0, data: result, human };
    },
  },
  {
    name: 'alerts',
    summary: 'duplicate alerts recorded by the scans, newest first',
    usage: '[--limit N]',
    options: { limit: { type: 'string' } },
    run: async (context, values) => {
      const alerts = (await listDuplicateAlerts(context.prisma(), positiveInteger(values, 'limit', 20))).map(
        (alert) => ({
          ...alert,
          id: alert.id.toString(),
          detectedAt: alert.detectedAt.toISOString(),
        }),
      );
      return {
        ok: true,
        data: alerts,
        human:
          alerts.length === 0
            ? 'no duplicate alerts'
            : table(
                ['DETECTED', 'KIND', 'ORDERS', 'DETAIL'],
                alerts.map((alert) => [alert.detectedAt, alert.kind, alert.orderNos.join(' '), alert.detail]),
              ),
      };
    },
  },
  {
    name: 'purge-expired',
    summary: 'purge idempotency records past the retention window that an order row answers for',
    usage:
      '[--dry-run] [--retention-days N]\n\nDefault N: IDEMPOTENCY_RETENTION_DAYS. Records of keys without an order (abandoned,\nfailed) are kept and counted.',
    options: { 'dry-run': { type: 'boolean' }, 'retention-days': { type: 'string' } },
    run: async (context, values) => {
      const result = await purgeExpiredRecords(context.prisma(), {
        retentionDays: positiveInteger(values, 'retention-days', context.config.retentionDays),
        dryRun: values['dry-run'] === true,
        onProgress: (purged) => context.progress(`purged ${purged} …`),
      });
      const kept = Object.entries(result.kept)
        .map(([status, count]) => `${count} ${status}`)
        .join(', ');
      return {
        ok: true,
        data: result,
        human: `${result.dryRun ? 'would purge' : 'purged'} ${result.purged} record(s) created before ${result.cutoff}; kept ${kept || 'none'}`,
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
      const outcomes = await replayHistories(histories, (outcome) =>
        context.progress(`[${++done}/${histories.length}] ${outcome.ok ? 'ok  ' : 'FAIL'} ${outcome.name}`),
      );
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
