// The one place that decides whether a failure is retried (docs/architecture.md, decision 5), the
// recognisers behind what a failure means to a caller (submission/failure-outcome.ts,
// docs/architecture.md, decision 15), and what an outsider is told of a recorded failure: each
// row's code and sentence (docs/architecture.md, decision 40). Every other module asks
// `classifyError` or `publicErrorOf`; tests walk TABLE row by row.
//
// The rule from the seed: retry only what is safe to retry. The write is idempotent (unique key),
// so a lost connection is safe to retry even when it hit the COMMIT and the outcome is unknown —
// the retry finds the committed order. Business failures, bad input, auth failures and key
// conflicts will fail the same way every time: retrying them only delays compensation. Anything
// we cannot name fails fast: "better missing than doubled".
import {
  BrokerConfirmTimeoutError,
  BrokerNackedError,
  BrokerUnavailableError,
  BrokerUnroutableError,
  DeliveryTargetMissingError,
  DownstreamHttpError,
  DownstreamTimeoutError,
  IdempotencyConflictError,
  InsufficientStockError,
  OaApiError,
  UnknownSkuError,
  UnmappableFormError,
} from './errors.js';

export type ErrorClass =
  | 'ConnectionLost'
  | 'StatementTimeout'
  | 'LockTimeout'
  | 'SerializationFailure'
  | 'Deadlock'
  | 'DatabaseBusy'
  | 'InsufficientStock'
  | 'UnknownSku'
  | 'IdempotencyKeyConflict'
  | 'ConstraintViolation'
  | 'InvalidData'
  | 'AuthFailed'
  | 'DownstreamTimeout'
  | 'DownstreamRateLimited'
  | 'DownstreamUnavailable'
  | 'DownstreamRejected'
  | 'DownstreamAuthFailed'
  | 'BrokerUnroutable'
  | 'BrokerNacked'
  | 'BrokerConfirmTimeout'
  | 'BrokerUnavailable'
  | 'DeliveryTargetMissing'
  | 'OaApiUnavailable'
  | 'OaApiRateLimited'
  | 'OaApiRefused'
  | 'UnmappableForm'
  | 'TemporalUnavailable'
  | 'Unclassified';

export interface Classification {
  errorClass: ErrorClass;
  retryable: boolean;
  why: string;
}

/** What the classifier can see of an error: codes and kinds from the whole cause chain. */
export interface ErrorSignals {
  /** SQLSTATE codes (`40001`), socket codes (`ECONNRESET`) and Prisma codes (`P2034`). */
  codes: Set<string>;
  /** Driver-adapter kinds (`ConnectionClosed`, `TransactionWriteConflict`, ...). */
  kinds: Set<string>;
  /** Numeric codes: gRPC statuses of Temporal calls (`14` UNAVAILABLE, `4` DEADLINE_EXCEEDED). */
  statuses: Set<number>;
  messages: string[];
  errors: unknown[];
}

/**
 * What a caller outside is told of a failure (`GET /orders/<key>`, `get_order_status`): a stable
 * code and one sentence. Never the failure's own text, which may carry database hosts and
 * addresses, a vendor's or a downstream's words, form values or an operator's name; that text
 * stays in the log and with the operator (`orders-cli status`, `awaiting`).
 */
export interface PublicError {
  code: string;
  message: string;
}

interface Row extends Classification {
  told: PublicError;
  matches: (signals: ErrorSignals) => boolean;
}

const has = (signals: ErrorSignals, ...codes: string[]) => codes.some((code) => signals.codes.has(code));
const hasKind = (signals: ErrorSignals, ...kinds: string[]) => kinds.some((kind) => signals.kinds.has(kind));
const hasStatus = (signals: ErrorSignals, ...statuses: number[]) =>
  statuses.some((status) => signals.statuses.has(status));
const hasSqlStateClass = (signals: ErrorSignals, prefix: string) =>
  [...signals.codes].some((code) => /^[0-9A-Z]{5}$/.test(code) && code.startsWith(prefix));
const isA = (signals: ErrorSignals, type: abstract new (...args: never[]) => Error) =>
  signals.errors.some((error) => error instanceof type);
const httpStatus = (signals: ErrorSignals): number | undefined =>
  signals.errors.find((error): error is DownstreamHttpError => error instanceof DownstreamHttpError)?.status;
const oaApiError = (signals: ErrorSignals): OaApiError | undefined =>
  signals.errors.find((error): error is OaApiError => error instanceof OaApiError);

/**
 * MySQL and the mariadb driver on a connection that went away: the server's lost connection (2013)
 * and gone away (2006), can't connect (2002, 2003), shutdown (1053), a killed connection (1927),
 * and the driver's closed or timed-out sockets (45001–45042). A lost COMMIT answer is one of them.
 */
const MYSQL_CONNECTION_LOST: readonly string[] = [
  '2002',
  '2003',
  '2006',
  '2013',
  '1053',
  '1927',
  '45001',
  '45009',
  '45012',
  '45013',
  '45019',
  '45026',
  '45039',
  '45042',
];

// Messages node-postgres uses when the socket dies without an error code.
const CONNECTION_LOST_MESSAGES: readonly string[] = [
  'Connection terminated unexpectedly',
  'Connection terminated',
  'Client has encountered a connection error and is not queryable',
  'connection timeout expired',
  'timeout exceeded when trying to connect',
];

// What the Temporal client says when it reached no server, or no answer came before the deadline.
const TEMPORAL_UNREACHABLE_MESSAGE = /Failed to connect|ECONNREFUSED|No connection established|deadline/i;

/** First matching row wins. Order matters: specific business errors before generic codes. */
export const TABLE: readonly Row[] = [
  {
    errorClass: 'IdempotencyKeyConflict',
    retryable: false,
    told: { code: 'idempotency-key-conflict', message: 'The key already belongs to a different order.' },
    why: 'the key already belongs to a different order; a retry would conflict again',
    matches: (s) => isA(s, IdempotencyConflictError),
  },
  {
    errorClass: 'InsufficientStock',
    retryable: false,
    told: { code: 'insufficient-stock', message: 'A line of the order asks for more stock than is available.' },
    why: 'a business rule: retrying cannot create stock',
    matches: (s) => isA(s, InsufficientStockError),
  },
  {
    errorClass: 'UnknownSku',
    retryable: false,
    told: { code: 'unknown-sku', message: 'A line of the order names a SKU the inventory does not know.' },
    why: 'a business rule: the SKU does not exist',
    matches: (s) => isA(s, UnknownSkuError),
  },
  {
    errorClass: 'UnmappableForm',
    retryable: false,
    told: { code: 'unmappable-form', message: 'The approval form does not map to an order.' },
    why: 'a business failure: the approval form does not map to an order, and reading it again gives the same form',
    matches: (s) => isA(s, UnmappableFormError),
  },
  // HTTP calls to the downstream (the seed's table). Every call carries the order's key in
  // Idempotency-Key, which is what makes retrying an unanswered call safe.
  {
    errorClass: 'DownstreamTimeout',
    retryable: true,
    told: { code: 'downstream-timeout', message: 'The downstream system did not answer in time.' },
    why: 'no answer within the per-attempt timeout: it may have been applied; the retry carries the same key',
    matches: (s) => isA(s, DownstreamTimeoutError) || has(s, 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT'),
  },
  {
    errorClass: 'DownstreamRateLimited',
    retryable: true,
    told: { code: 'downstream-rate-limited', message: 'The downstream system asked to be called again later.' },
    why: '429 (or 408): the downstream asks us to come back later (Retry-After honoured, capped)',
    matches: (s) => httpStatus(s) === 429 || httpStatus(s) === 408,
  },
  {
    errorClass: 'DownstreamUnavailable',
    retryable: true,
    told: { code: 'downstream-unavailable', message: 'The downstream system failed to take the event.' },
    why: '5xx: the downstream failed; safe to retry only because the call is idempotent by key',
    matches: (s) => (httpStatus(s) ?? 0) >= 500,
  },
  {
    errorClass: 'DownstreamAuthFailed',
    retryable: false,
    told: { code: 'downstream-auth-failed', message: "The downstream system refused the service's credentials." },
    why: '401/403: our credentials or signature are refused; retrying sends the same ones',
    matches: (s) => httpStatus(s) === 401 || httpStatus(s) === 403,
  },
  {
    errorClass: 'DownstreamRejected',
    retryable: false,
    told: { code: 'downstream-rejected', message: 'The downstream system refused the event.' },
    why: '4xx: the downstream refuses this event; it will refuse it again',
    matches: (s) => (httpStatus(s) ?? 0) >= 400 && (httpStatus(s) ?? 0) < 500,
  },
  // Publishes to the broker (AMQP_URL). Every message carries the event id as its message id and
  // the key in a header, which is what makes publishing it again safe: the consumer deduplicates.
  {
    errorClass: 'BrokerUnroutable',
    retryable: false,
    told: { code: 'broker-unroutable', message: 'The message broker has no queue for the event.' },
    why: 'the broker returned the message: no queue is bound for its routing key, and publishing again is returned again until one is',
    matches: (s) => isA(s, BrokerUnroutableError),
  },
  {
    errorClass: 'BrokerNacked',
    retryable: true,
    told: { code: 'broker-refused', message: 'The message broker did not take the event.' },
    why: 'the broker refused responsibility for the message (its own failure); the retry publishes the same message id',
    matches: (s) => isA(s, BrokerNackedError),
  },
  {
    errorClass: 'BrokerConfirmTimeout',
    retryable: true,
    told: { code: 'broker-timeout', message: 'The message broker did not confirm the event in time.' },
    why: 'no confirm within the per-attempt timeout: the message may be queued; the retry publishes the same message id',
    matches: (s) => isA(s, BrokerConfirmTimeoutError),
  },
  {
    errorClass: 'BrokerUnavailable',
    retryable: true,
    told: { code: 'broker-unavailable', message: 'The message broker could not be reached.' },
    why: 'the broker connection was refused or closed, or a channel failed; if it closed after the publish the message may be queued, and the retry publishes the same message id',
    matches: (s) => isA(s, BrokerUnavailableError),
  },
  {
    errorClass: 'DeliveryTargetMissing',
    retryable: true,
    told: { code: 'delivery-target-missing', message: 'The worker that ran the delivery lacks one of its targets.' },
    why: 'this worker lacks a delivery target the order was written for (a deploy under way); the retry may run on a worker that has it, and nothing was sent to only some targets',
    matches: (s) => isA(s, DeliveryTargetMissingError),
  },
  // Reads of an approval instance from an OA system's open API (vendors/<vendor>/reader.ts). A read changes
  // nothing, so anything that may pass on its own is safe to retry; the reader has already
  // refreshed its token once before it reports 401/403.
  // A receipt's post (vendors/approval-receipts.ts) is as safe to repeat: it looks on the approval
  // for the receipt first, so a post that landed unanswered is found, not posted again.
  {
    errorClass: 'OaApiUnavailable',
    retryable: true,
    told: { code: 'oa-unavailable', message: 'The OA system could not be reached.' },
    why: 'the OA API failed (5xx) or gave no answer (timeout, connection refused); a read is safe to repeat',
    matches: (s) => {
      const error = oaApiError(s);
      return error !== undefined && (error.status === undefined || error.status >= 500);
    },
  },
  {
    errorClass: 'OaApiRateLimited',
    retryable: true,
    told: { code: 'oa-rate-limited', message: 'The OA system asked to be called again later.' },
    why: '429: the OA API asks us to come back later (Retry-After honoured, capped)',
    matches: (s) => oaApiError(s)?.status === 429,
  },
  {
    errorClass: 'OaApiRefused',
    retryable: false,
    told: { code: 'oa-refused', message: 'The OA system refused to give the approval.' },
    why: 'the OA API refused the read (credentials after one token refresh, unknown instance, malformed answer); it will refuse it again',
    matches: (s) => isA(s, OaApiError),
  },
  {
    errorClass: 'ConnectionLost',
    retryable: true,
    told: { code: 'connection-lost', message: 'A connection the step needs was lost or refused.' },
    why:
      'the connection failed before or during the write; if it was the COMMIT the outcome is ' +
      'unknown, and the retry is safe because the unique key finds the committed order',
    matches: (s) =>
      has(s, 'ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH') ||
      has(s, 'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_SOCKET', 'UND_ERR_CLOSED') ||
      has(s, 'P1001', 'P1002', 'P1017', '57P01', '57P02', '57P03') ||
      has(s, ...MYSQL_CONNECTION_LOST) ||
      hasSqlStateClass(s, '08') ||
      hasKind(s, 'DatabaseNotReachable', 'ConnectionClosed', 'SocketTimeout') ||
      s.messages.some((message) => CONNECTION_LOST_MESSAGES.some((known) => message.includes(known))),
  },
  {
    errorClass: 'StatementTimeout',
    retryable: true,
    told: { code: 'database-timeout', message: 'The database did not finish the write in time; nothing was kept.' },
    why: 'the statement timeout cancelled the write and rolled it back; nothing was committed',
    // MariaDB's max_statement_time (1969), MySQL's max_execution_time (3024).
    matches: (s) => has(s, '57014', '1969', '3024'),
  },
  {
    errorClass: 'LockTimeout',
    retryable: true,
    told: {
      code: 'database-lock-timeout',
      message: 'The database could not lock what the write needs in time; nothing was kept.',
    },
    why: 'a lock was not granted in time; the transaction rolled back',
    // InnoDB's lock wait timeout (1205) undoes the statement; the write's transaction then ends
    // with it, since the error leaves the transaction callback.
    matches: (s) => has(s, '55P03', '1205'),
  },
  {
    errorClass: 'Deadlock',
    retryable: true,
    told: {
      code: 'database-deadlock',
      message: 'The database broke a deadlock by undoing the write; nothing was kept.',
    },
    why: 'the database broke a deadlock by rolling this transaction back',
    // InnoDB reports one as 1213 (SQLSTATE 40001): this row, before the write-conflict one.
    matches: (s) => has(s, '40P01', '1213'),
  },
  {
    errorClass: 'SerializationFailure',
    retryable: true,
    told: { code: 'database-write-conflict', message: 'A concurrent write won; nothing of this one was kept.' },
    why: 'a concurrent transaction won; the database rolled this one back and asks for a retry',
    matches: (s) => has(s, '40001', 'P2034') || hasKind(s, 'TransactionWriteConflict'),
  },
  {
    errorClass: 'DatabaseBusy',
    retryable: true,
    told: { code: 'database-busy', message: 'The database had no connection free in time.' },
    why: 'no connection or transaction slot was free in time; nothing was written',
    matches: (s) =>
      has(s, '53300', '53400', 'P2024', 'P2028') ||
      // MySQL's too many connections (1040, 1203); the mariadb pool's wait for a connection (45028).
      has(s, '1040', '1203', '45028') ||
      hasKind(s, 'TooManyConnections') ||
      s.messages.some((message) => message.includes('Unable to start a transaction in the given time')),
  },
  {
    errorClass: 'AuthFailed',
    retryable: false,
    told: { code: 'auth-failed', message: "A service refused the service's own credentials." },
    why: 'authentication or authorisation failed; retrying with the same credentials fails again',
    matches: (s) =>
      has(s, '28000', '28P01', '42501', 'P1000') ||
      has(s, '1044', '1045', '1142', '1227') ||
      hasKind(s, 'AuthenticationFailed', 'DatabaseAccessDenied'),
  },
  {
    errorClass: 'ConstraintViolation',
    retryable: false,
    told: { code: 'constraint-violation', message: "The database refused the order's data." },
    why: 'a constraint other than the idempotency key refused the data; it will refuse it again',
    matches: (s) =>
      hasSqlStateClass(s, '23') ||
      has(s, 'P2002', 'P2003', 'P2011') ||
      // MySQL: duplicate key, foreign keys, NOT NULL, CHECK (MySQL 3819, MariaDB 4025).
      has(s, '1062', '1451', '1452', '1048', '3819', '4025') ||
      hasKind(s, 'UniqueConstraintViolation', 'ForeignKeyConstraintViolation', 'NullConstraintViolation'),
  },
  {
    errorClass: 'InvalidData',
    retryable: false,
    told: { code: 'invalid-data', message: 'The database refused a value of the order as invalid.' },
    why: 'the database rejected a value as invalid; retrying sends the same value',
    matches: (s) =>
      hasSqlStateClass(s, '22') ||
      // MySQL: a string the column's charset cannot hold, too long, out of range, a bad date, bad JSON.
      has(s, '1366', '1406', '1264', '1292', '1265', '3140') ||
      hasKind(s, 'LengthMismatch', 'ValueOutOfRange', 'InvalidInputValue'),
  },
  // Calls to the Temporal service: starts, describes, updates. Last, so it never takes an error
  // another row names; `isTemporalUnreachable` asks this row alone.
  {
    errorClass: 'TemporalUnavailable',
    retryable: true,
    told: { code: 'temporal-unavailable', message: 'The workflow service could not be reached.' },
    why:
      'the Temporal service was not reached or did not answer before the deadline (gRPC UNAVAILABLE, ' +
      'DEADLINE_EXCEEDED, or CANCELLED by our own deadline); workflow ids derive from the key, so calling ' +
      'again finds what got through',
    // A downstream's answer or a broker's failure is never Temporal's, whatever words it carries.
    matches: (s) =>
      !isA(s, DownstreamHttpError) &&
      !isA(s, BrokerUnavailableError) &&
      (hasStatus(s, 14, 4, 1) || s.messages.some((message) => TEMPORAL_UNREACHABLE_MESSAGE.test(message))),
  },
];

const UNCLASSIFIED: Readonly<Classification & { told: PublicError }> = {
  errorClass: 'Unclassified',
  retryable: false,
  why: 'not a failure we know to be safe to retry: fail fast into compensation',
  told: { code: 'unclassified-error', message: 'The step failed for a reason the service does not classify.' },
};

/** The type the workflow records for an attempt that ran out of time (no activity throws it). */
export const ACTIVITY_TIMEOUT = 'ActivityTimeout';
/** The type recorded when an operator runs compensation again (`orders-cli recompensate`). */
export const OPERATOR_RECOMPENSATION = 'OperatorRecompensation';
/** The type recorded when compensation ends without a decision (FAILED). */
export const COMPENSATION_ENDED = 'CompensationEnded';
/** The type recorded when an operator marks a failed delivery handled. */
export const MARKED_HANDLED = 'MarkedHandled';

/**
 * The rest of what a key's record may say (`<type>: <message>`) beside the table's classes: steps
 * of the workflows and the operator, which no activity throws, told like the rows above.
 */
export const RECORDED_OUTCOMES: Readonly<Record<string, PublicError>> = {
  [ACTIVITY_TIMEOUT]: { code: 'attempt-timed-out', message: 'An attempt did not finish within its time limit.' },
  [OPERATOR_RECOMPENSATION]: {
    code: 'compensation-rerun',
    message: 'An operator ran compensation again; the order waits for a decision.',
  },
  [COMPENSATION_ENDED]: {
    code: 'compensation-ended',
    message: 'Compensation ended without a decision; an operator has to act.',
  },
  [MARKED_HANDLED]: {
    code: 'marked-handled',
    message: 'An operator marked the delivery handled; the service did not tell the downstream system.',
  },
};

/**
 * The waiting states whose cause is no recorded failure, told like the rows above: a claim another
 * door's delivery was refused on, and a claim whose workflow start was never confirmed.
 */
export const WAITING_WITHOUT_FAILURE: Readonly<Record<'KEY_SOURCE_CONFLICT' | 'RECEIVED', PublicError>> = {
  KEY_SOURCE_CONFLICT: {
    code: 'key-source-conflict',
    message: 'A delivery through another door was refused: the key belongs to the door that claimed it first.',
  },
  RECEIVED: {
    code: 'start-unconfirmed',
    message: 'The start of the order workflow was never confirmed; an operator starts it or abandons the key.',
  },
};

/** Every type a record may name, with what is told of it; any other type is told as unclassified. */
const TOLD_BY_TYPE: ReadonlyMap<string, PublicError> = new Map([
  ...TABLE.map((row) => [row.errorClass, row.told] as const),
  ...Object.entries(RECORDED_OUTCOMES),
  [UNCLASSIFIED.errorClass, UNCLASSIFIED.told],
]);

/** What the table tells an outsider of a failure it did not classify. */
export const UNCLASSIFIED_TOLD: PublicError = UNCLASSIFIED.told;

/**
 * What an outsider is told of a recorded failure, `<type>: <message>` as the workflows and
 * activities record it: the type's code and sentence, never a word of the message. A text with no
 * known type is told as unclassified.
 */
export function publicErrorOf(recorded: string): PublicError {
  const type = /^([A-Za-z][A-Za-z0-9]*): /.exec(recorded)?.[1];
  return (type === undefined ? undefined : TOLD_BY_TYPE.get(type)) ?? UNCLASSIFIED.told;
}

/** What an outsider is told of why a key waits in `status`: its state's cause, or its recorded failure's. */
export function publicCauseOfWaiting(status: string, recorded: string): PublicError {
  return Object.hasOwn(WAITING_WITHOUT_FAILURE, status)
    ? WAITING_WITHOUT_FAILURE[status as keyof typeof WAITING_WITHOUT_FAILURE]
    : publicErrorOf(recorded);
}

/** The delay a failure asked for itself (HTTP Retry-After), if any. */
export function requestedRetryDelayMs(error: unknown): number | undefined {
  return errorInChain(error, DownstreamHttpError)?.retryAfterMs ?? errorInChain(error, OaApiError)?.retryAfterMs;
}

/** The first error of the given type in the error's cause chain, itself included. */
export function errorInChain<T extends Error>(
  error: unknown,
  type: abstract new (...args: never[]) => T,
): T | undefined {
  return collectSignals(error).errors.find((value): value is T => value instanceof type);
}

export function classifyError(error: unknown): Classification {
  const signals = collectSignals(error);
  const row = TABLE.find((candidate) => candidate.matches(signals)) ?? UNCLASSIFIED;
  const { errorClass, retryable, why } = row;
  return { errorClass, retryable, why };
}

/** A lost or busy database at an entry point: nothing was started, and calling again is safe. */
/**
 * PostgreSQL could not do it just now, and nothing was left behind: unreachable, out of
 * connections, or a statement rolled back by a timeout, a deadlock or a serialization failure.
 * The same request is safe to send again.
 */
export function isDatabaseTransient(error: unknown): boolean {
  return DATABASE_TRANSIENT.has(classifyError(error).errorClass);
}

const DATABASE_TRANSIENT: ReadonlySet<string> = new Set([
  'ConnectionLost',
  'DatabaseBusy',
  'StatementTimeout',
  'LockTimeout',
  'Deadlock',
  'SerializationFailure',
]);

/**
 * A Temporal call that reached no server or got no answer in time: the start (or decision) may
 * have gone through all the same, and calling again is safe. Asked of its row alone, whatever an
 * earlier row says: a refused connection to Temporal also carries a socket's code.
 */
export function isTemporalUnreachable(error: unknown): boolean {
  const signals = collectSignals(error);
  return TABLE.some((row) => row.errorClass === 'TemporalUnavailable' && row.matches(signals));
}

/** Walks `cause`, aggregated errors and Prisma's driver-adapter metadata, collecting codes. */
export function collectSignals(error: unknown): ErrorSignals {
  const signals: ErrorSignals = { codes: new Set(), kinds: new Set(), statuses: new Set(), messages: [], errors: [] };
  const seen = new Set<unknown>();
  const visit = (value: unknown, depth: number): void => {
    if (value === null || typeof value !== 'object' || seen.has(value) || depth > 8) return;
    seen.add(value);
    signals.errors.push(value);
    const record = value as Record<string, unknown>;
    if (typeof record.code === 'string') signals.codes.add(record.code);
    if (typeof record.code === 'number') signals.statuses.add(record.code);
    if (typeof record.originalCode === 'string') signals.codes.add(record.originalCode);
    // The mariadb driver's own errors: the server's or its own error number, and the SQLSTATE.
    if (typeof record.errno === 'number' && record.errno > 0) signals.codes.add(String(record.errno));
    if (typeof record.sqlState === 'string') signals.codes.add(record.sqlState);
    if (typeof record.kind === 'string') signals.kinds.add(record.kind);
    if (typeof record.message === 'string') signals.messages.push(record.message);
    visit(record.cause, depth + 1);
    const meta = record.meta as Record<string, unknown> | undefined;
    if (meta && typeof meta === 'object') visit(meta.driverAdapterError, depth + 1);
    if (Array.isArray(record.errors)) record.errors.forEach((inner) => visit(inner, depth + 1));
  };
  visit(error, 0);
  return signals;
}
