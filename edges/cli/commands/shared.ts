// What several operator commands share: a command's shape and result, the usage error, the
// parsing of the options they have in common (the key, --by, whole numbers), the operator
// decisions' dependencies and the duplicate alerts' view. Each command parses its own options,
// calls the same modules the service uses, and returns data (for --json) and a human rendering.
// `ok: false` is a finding or a refusal: exit code 1.
import { userInfo } from 'node:os';
import type { ParseArgsConfig } from 'node:util';
import type { listDuplicateAlerts } from '../../../services/db/duplicate-scan.js';
import { decidedByProblem, decidedThrough } from '../../../domain/decided-by.js';
import { idempotencyKeyFor, parseIdempotencyKey } from '../../../domain/idempotency-key.js';
import type { OperatorDeps } from '../../../submission/operator-decisions/shared.js';
import type { CommandContext } from '../context.js';

export interface CommandResult {
  ok: boolean;
  data: unknown;
  human: string;
}

export type Values = Record<string, string | boolean | undefined>;

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

export const by = { by: { type: 'string' as const } };
/**
 * Who decided: --by, checked here against what the decision record can store and the doors' marks
 * (domain/decided-by.ts), or the OS user under the CLI's own mark.
 */
export function decidedBy(values: Values): string {
  if (typeof values.by !== 'string') return decidedThrough('cli', userInfo().username);
  const problem = decidedByProblem(values.by);
  if (problem) throw new UsageError(`--by ${problem}`);
  return values.by;
}

export function keyArgument(positionals: string[], values: Values): string {
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

export function nonNegativeInteger(values: Values, name: string, fallback: number): number {
  const raw = values[name];
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (raw === '' || !Number.isInteger(value) || value < 0) throw new UsageError(`--${name} must be a whole number ≥ 0`);
  return value;
}

export function positiveInteger(values: Values, name: string, fallback: number): number {
  const raw = values[name];
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1) throw new UsageError(`--${name} must be a positive integer`);
  return value;
}

/** The alert listings stay bounded: a cluster may hold thousands of orders. */
export const MAX_ALERT_LIMIT = 1_000;

export function alertLimit(values: Values): number {
  const limit = positiveInteger(values, 'limit', 20);
  if (limit > MAX_ALERT_LIMIT) throw new UsageError(`--limit must be at most ${MAX_ALERT_LIMIT}`);
  return limit;
}

type StoredAlert = Awaited<ReturnType<typeof listDuplicateAlerts>>['alerts'][number];

export function alertView(alert: StoredAlert) {
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

export function shown(count: number, total: number): string {
  return count < total ? `showing ${count} of ${total} alerts (--limit to see more)` : `${total} alert(s)`;
}

export const keyOptions = { 'approval-no': { type: 'string' as const }, operation: { type: 'string' as const } };
export const KEY_USAGE = '<key> | --approval-no NO [--operation MAIN|SUPPLEMENT]';

export async function operatorDeps(context: CommandContext): Promise<OperatorDeps> {
  return {
    prisma: await context.prisma(),
    temporal: await context.temporal(),
    taskQueue: context.config.temporal.taskQueue,
    writePolicy: context.config.writePolicy,
  };
}
