import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { toActivityFailure } from '../../../activities/activity-failure.js';
import { deliveryTargetsOf, missingTargets } from '../../../activities/delivery.js';
import fc from 'fast-check';
import {
  classifyError,
  type ErrorClass,
  publicErrorOf,
  TABLE,
  UNCLASSIFIED_TOLD,
} from '../../../domain/error-classification.js';
import {
  BrokerConfirmTimeoutError,
  BrokerNackedError,
  BrokerUnavailableError,
  DeliveryTargetMissingError,
  BrokerUnroutableError,
  DownstreamHttpError,
  DownstreamTimeoutError,
  IdempotencyConflictError,
  InsufficientStockError,
  OaApiError,
  UnknownSkuError,
  UnmappableFormError,
} from '../../../domain/errors.js';
import { rawErrorText, TOLD_TYPES } from '../../../tools/harness/raw-errors.js';

const socketError = (code: string) =>
  Object.assign(new Error(`connect ${code} 127.0.0.1:5432`), { code, errno: -1, syscall: 'connect' });
const postgresError = (code: string, message = `postgres error ${code}`) =>
  Object.assign(new Error(message), { code, severity: 'ERROR' });
/** How Prisma's pg adapter wraps a driver error: the SQLSTATE sits in meta.driverAdapterError.cause. */
const prismaWrapped = (cause: Record<string, unknown>, code = 'P2010') =>
  Object.assign(new Error('Invalid `prisma.$executeRaw()` invocation'), {
    name: 'PrismaClientKnownRequestError',
    code,
    meta: { driverAdapterError: Object.assign(new Error('adapter error'), { name: 'DriverAdapterError', cause }) },
  });

/** How Prisma's mariadb adapter wraps a MySQL error: the error number as text, in originalCode. */
const mysqlWrapped = (errno: number, kind = 'mysql') =>
  prismaWrapped({ kind, code: errno, originalCode: String(errno), originalMessage: `mysql error ${errno}` });
/** The mariadb driver's own error, as the migration runner or a pool sees it. */
const mariadbDriverError = (errno: number, sqlState: string) =>
  Object.assign(new Error(`(conn:1, no: ${errno}, SQLState: ${sqlState}) mariadb error`), {
    errno,
    sqlState,
    code: 'ER_MARIADB',
    fatal: true,
  });

/** How the Temporal client reports a failed call: the gRPC status as a number on the cause. */
const grpcError = (status: number, detail: string) =>
  new Error('Failed to start Workflow', { cause: Object.assign(new Error(`${status} ${detail}`), { code: status }) });

// Each row: an error as it reaches the activity, and the class the table must give it.
const EXAMPLES: [string, unknown, ErrorClass, boolean][] = [
  ['connection refused before the write', socketError('ECONNREFUSED'), 'ConnectionLost', true],
  ['connection reset mid-transaction', socketError('ECONNRESET'), 'ConnectionLost', true],
  [
    'socket closed during COMMIT (outcome unknown)',
    new Error('Connection terminated unexpectedly'),
    'ConnectionLost',
    true,
  ],
  ['adapter: database not reachable', prismaWrapped({ kind: 'DatabaseNotReachable' }), 'ConnectionLost', true],
  ['adapter: connection closed', prismaWrapped({ kind: 'ConnectionClosed' }), 'ConnectionLost', true],
  ['server shutting down (57P01)', postgresError('57P01'), 'ConnectionLost', true],
  ['statement timeout (57014)', prismaWrapped({ kind: 'postgres', code: '57014' }), 'StatementTimeout', true],
  ['lock timeout (55P03)', postgresError('55P03'), 'LockTimeout', true],
  ['deadlock (40P01)', postgresError('40P01'), 'Deadlock', true],
  // MySQL/MariaDB through Prisma's mariadb adapter (the error number as originalCode), and the
  // mariadb driver's own errors (errno, sqlState).
  ['MySQL: lost connection (2013)', mysqlWrapped(2013), 'ConnectionLost', true],
  ['MySQL: server gone away (2006)', mysqlWrapped(2006), 'ConnectionLost', true],
  ['mariadb driver: socket closed mid-COMMIT (45009)', mariadbDriverError(45009, '08S01'), 'ConnectionLost', true],
  ['InnoDB deadlock (1213)', mysqlWrapped(1213, 'TransactionWriteConflict'), 'Deadlock', true],
  ['InnoDB lock wait timeout (1205)', mysqlWrapped(1205), 'LockTimeout', true],
  ['MariaDB max_statement_time (1969)', mysqlWrapped(1969), 'StatementTimeout', true],
  ['MySQL max_execution_time (3024)', mysqlWrapped(3024), 'StatementTimeout', true],
  ['MySQL too many connections (1040)', mysqlWrapped(1040, 'TooManyConnections'), 'DatabaseBusy', true],
  ['mariadb pool: no connection in time (45028)', mariadbDriverError(45028, 'HY000'), 'DatabaseBusy', true],
  ['MySQL access denied (1045)', mysqlWrapped(1045, 'AuthenticationFailed'), 'AuthFailed', false],
  [
    'MySQL duplicate on another index (1062)',
    mysqlWrapped(1062, 'UniqueConstraintViolation'),
    'ConstraintViolation',
    false,
  ],
  ['MariaDB CHECK constraint failed (4025)', mysqlWrapped(4025), 'ConstraintViolation', false],
  ['MySQL incorrect string value (1366)', mysqlWrapped(1366), 'InvalidData', false],
  ['serialization failure (40001)', postgresError('40001'), 'SerializationFailure', true],
  [
    'Prisma write conflict (P2034)',
    prismaWrapped({ kind: 'TransactionWriteConflict' }, 'P2034'),
    'SerializationFailure',
    true,
  ],
  ['too many connections (53300)', prismaWrapped({ kind: 'TooManyConnections' }), 'DatabaseBusy', true],
  ['no pooled connection in time', new Error('Unable to start a transaction in the given time.'), 'DatabaseBusy', true],
  ['insufficient stock', new InsufficientStockError('SKU-1', 5, 2), 'InsufficientStock', false],
  ['unknown SKU', new UnknownSkuError('SKU-X'), 'UnknownSku', false],
  [
    'key reused for another order',
    new IdempotencyConflictError('APPROVAL:A:MAIN', 'a', 'b'),
    'IdempotencyKeyConflict',
    false,
  ],
  [
    'a unique constraint other than the key',
    prismaWrapped({ kind: 'UniqueConstraintViolation' }, 'P2002'),
    'ConstraintViolation',
    false,
  ],
  ['check constraint (23514)', postgresError('23514'), 'ConstraintViolation', false],
  ['value too long (22001)', postgresError('22001'), 'InvalidData', false],
  ['password authentication failed (28P01)', postgresError('28P01'), 'AuthFailed', false],
  ['permission denied (42501)', postgresError('42501'), 'AuthFailed', false],
  [
    'downstream: connection refused (fetch)',
    new TypeError('fetch failed', { cause: socketError('ECONNREFUSED') }),
    'ConnectionLost',
    true,
  ],
  [
    'downstream: socket closed before the answer',
    new TypeError('fetch failed', { cause: Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' }) }),
    'ConnectionLost',
    true,
  ],
  ['downstream: no answer within the per-attempt timeout', new DownstreamTimeoutError(3000), 'DownstreamTimeout', true],
  ['downstream: 429', new DownstreamHttpError(429, 2000, ''), 'DownstreamRateLimited', true],
  ['downstream: 500', new DownstreamHttpError(500, undefined, ''), 'DownstreamUnavailable', true],
  ['downstream: 503', new DownstreamHttpError(503, undefined, ''), 'DownstreamUnavailable', true],
  ['downstream: 400', new DownstreamHttpError(400, undefined, ''), 'DownstreamRejected', false],
  ['downstream: 404', new DownstreamHttpError(404, undefined, ''), 'DownstreamRejected', false],
  ['downstream: 409', new DownstreamHttpError(409, undefined, ''), 'DownstreamRejected', false],
  ['downstream: 422', new DownstreamHttpError(422, undefined, ''), 'DownstreamRejected', false],
  ['downstream: 401', new DownstreamHttpError(401, undefined, ''), 'DownstreamAuthFailed', false],
  ['downstream: 403', new DownstreamHttpError(403, undefined, ''), 'DownstreamAuthFailed', false],
  ['downstream: a redirect we do not follow', new DownstreamHttpError(302, undefined, ''), 'Unclassified', false],
  [
    'downstream: a redirect whose body speaks of a deadline is still not Temporal',
    new DownstreamHttpError(302, undefined, 'the deadline moved'),
    'Unclassified',
    false,
  ],
  [
    'broker: no queue bound for the routing key (message returned)',
    new BrokerUnroutableError('orders', 'order.created', 312, 'NO_ROUTE'),
    'BrokerUnroutable',
    false,
  ],
  ['broker: the message nacked', new BrokerNackedError('orders'), 'BrokerNacked', true],
  ['broker: no confirm in time', new BrokerConfirmTimeoutError(3000), 'BrokerConfirmTimeout', true],
  [
    'broker: connection refused is the broker, not Temporal',
    new BrokerUnavailableError('amqp://127.0.0.1:5672', 'connect ECONNREFUSED 127.0.0.1:5672'),
    'BrokerUnavailable',
    true,
  ],
  [
    'broker: the channel closed before the confirm',
    new BrokerUnavailableError('amqp://127.0.0.1:5672', 'channel closed'),
    'BrokerUnavailable',
    true,
  ],
  [
    'delivery: the order is delivered to the broker and this worker has no AMQP_URL (a deploy under way)',
    new DeliveryTargetMissingError(['broker']),
    'DeliveryTargetMissing',
    true,
  ],
  [
    'Temporal: no connection (gRPC UNAVAILABLE)',
    grpcError(14, 'No connection established'),
    'TemporalUnavailable',
    true,
  ],
  [
    'Temporal: no answer before the deadline',
    grpcError(4, 'Deadline exceeded after 5.001s'),
    'TemporalUnavailable',
    true,
  ],
  [
    'Temporal: refused by the server (INVALID_ARGUMENT)',
    grpcError(3, 'search attribute not registered'),
    'Unclassified',
    false,
  ],
  ['OA API: no answer in time', new OaApiError('feishu', undefined, undefined, 'timed out'), 'OaApiUnavailable', true],
  ['OA API: 500', new OaApiError('dingtalk', 500, undefined, 'internal error'), 'OaApiUnavailable', true],
  ['OA API: 503', new OaApiError('feishu', 503, undefined, 'unavailable'), 'OaApiUnavailable', true],
  ['OA API: 429', new OaApiError('feishu', 429, 3_000, 'rate limited'), 'OaApiRateLimited', true],
  ['OA API: 403 after one token refresh', new OaApiError('feishu', 403, undefined, 'forbidden'), 'OaApiRefused', false],
  ['OA API: 401', new OaApiError('dingtalk', 401, undefined, 'invalid token'), 'OaApiRefused', false],
  ['OA API: unknown instance (404)', new OaApiError('dingtalk', 404, undefined, 'not found'), 'OaApiRefused', false],
  ['OA API: malformed answer', new OaApiError('feishu', 200, undefined, 'form is not JSON'), 'OaApiRefused', false],
  [
    'OA API: a read wrapped by its caller',
    new Error('reading the approval failed', { cause: new OaApiError('feishu', 502, undefined, 'bad gateway') }),
    'OaApiUnavailable',
    true,
  ],
  ['the approval form does not map to an order', new UnmappableFormError('A-1', ['no SKU']), 'UnmappableForm', false],
  ['an error nobody classified', new Error('something odd'), 'Unclassified', false],
  ['a thrown string', 'boom', 'Unclassified', false],
];

describe('error classification', () => {
  for (const [situation, error, errorClass, retryable] of EXAMPLES) {
    it(`${situation} → ${errorClass}, ${retryable ? 'retried' : 'not retried'}`, () => {
      const classification = classifyError(error);
      assert.equal(classification.errorClass, errorClass);
      assert.equal(classification.retryable, retryable);
      assert.ok(classification.why.length > 10, 'every row says why');
    });
  }

  it('has an example for every row of the table', () => {
    const covered = new Set(EXAMPLES.map(([, , errorClass]) => errorClass));
    for (const row of TABLE) assert.ok(covered.has(row.errorClass), `no example for ${row.errorClass}`);
  });

  it('finds the code in a cause chain', () => {
    const wrapped = new Error('write failed', { cause: new Error('driver', { cause: postgresError('40P01') }) });
    assert.equal(classifyError(wrapped).errorClass, 'Deadlock');
  });
});

describe('delivery targets', () => {
  it('a worker delivers to what it has, and lacks what the writing worker had and it has not', () => {
    const downstream = { url: 'http://erp', secret: 'x'.repeat(16), previousSecret: undefined, timeoutMs: 1 };
    const publisher = { exchange: 'orders', publish: () => Promise.resolve(), close: () => Promise.resolve() };
    assert.deepEqual(deliveryTargetsOf({ downstream, publisher }), ['http', 'broker']);
    assert.deepEqual(deliveryTargetsOf({ downstream }), ['http']);
    assert.deepEqual(missingTargets(['http', 'broker'], ['http']), ['broker']);
    assert.deepEqual(missingTargets(['http'], ['http', 'broker']), []);
    // A result recorded before targets were: the worker delivers to whatever it has.
    assert.deepEqual(missingTargets(undefined, ['http']), []);
  });
});

describe('activity failure', () => {
  const timing = { initialIntervalMs: 500, maxIntervalMs: 2_000, backoffCoefficient: 2 };

  it('marks a retryable failure with a jittered delay capped at the maximum interval', () => {
    for (let attempt = 1; attempt <= 6; attempt += 1) {
      const failure = toActivityFailure(socketError('ECONNRESET'), attempt, timing);
      assert.equal(failure.nonRetryable, false);
      assert.equal(failure.type, 'ConnectionLost');
      const delay = Number(failure.nextRetryDelay);
      assert.ok(delay > 0 && delay <= timing.maxIntervalMs, `delay ${delay} for attempt ${attempt}`);
    }
  });

  it('honours Retry-After over its own backoff, capped at the maximum interval', () => {
    assert.equal(Number(toActivityFailure(new DownstreamHttpError(429, 1_500, ''), 1, timing).nextRetryDelay), 1_500);
    assert.equal(Number(toActivityFailure(new DownstreamHttpError(429, 60_000, ''), 1, timing).nextRetryDelay), 2_000);
  });

  it("honours an OA API's Retry-After the same way", () => {
    const rateLimited = (ms: number) => new OaApiError('feishu', 429, ms, 'rate limited');
    assert.equal(Number(toActivityFailure(rateLimited(1_200), 1, timing).nextRetryDelay), 1_200);
    assert.equal(Number(toActivityFailure(rateLimited(60_000), 1, timing).nextRetryDelay), 2_000);
  });

  it('never retries an OA read the API refused, nor an unmappable form', () => {
    for (const error of [
      new OaApiError('dingtalk', 403, undefined, 'forbidden'),
      new UnmappableFormError('A', ['x']),
    ]) {
      const failure = toActivityFailure(error, 1, timing);
      assert.equal(failure.nonRetryable, true);
      assert.equal(failure.nextRetryDelay, undefined);
    }
  });

  it('marks business failures and unclassified errors non-retryable, carrying the attempt', () => {
    for (const error of [new InsufficientStockError('S', 1, 0), new Error('odd')]) {
      const failure = toActivityFailure(error, 2, timing);
      assert.equal(failure.nonRetryable, true);
      assert.equal(failure.nextRetryDelay, undefined);
      assert.deepEqual((failure.details?.[0] as { attempt: number }).attempt, 2);
    }
  });
});

describe('what an outsider is told of a recorded failure', () => {
  it('tells every type the table and the recorded outcomes name by its own code and sentence, never a word of the message', () => {
    fc.assert(
      fc.property(fc.constantFrom(...TOLD_TYPES), fc.string({ minLength: 1, maxLength: 80 }), ([type, told], raw) => {
        assert.deepEqual(publicErrorOf(`${type}: ${raw}`), told);
      }),
      { numRuns: 500 },
    );
    fc.assert(
      fc.property(fc.constantFrom(...TOLD_TYPES), rawErrorText, ([type], raw) => {
        const answer = JSON.stringify(publicErrorOf(`${type}: ${raw.text}`));
        for (const part of raw.parts) assert.ok(!answer.includes(part), `${answer} repeats ${part}`);
      }),
    );
  });

  it('tells a text of no known type as unclassified', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string({ maxLength: 80 }),
          rawErrorText.map((raw) => raw.text),
        ),
        (raw) => {
          fc.pre(!TOLD_TYPES.some(([type]) => raw.startsWith(`${type}: `)));
          assert.deepEqual(publicErrorOf(raw), UNCLASSIFIED_TOLD);
        },
      ),
    );
    assert.deepEqual(publicErrorOf('TypeError: fetch failed'), UNCLASSIFIED_TOLD);
    assert.deepEqual(publicErrorOf('decision window ran out'), UNCLASSIFIED_TOLD);
  });

  it('gives every type a code of its own, in kebab case, and a sentence', () => {
    const codes = TOLD_TYPES.map(([, told]) => told.code);
    assert.equal(new Set(codes).size, codes.length, codes.join());
    for (const [type, told] of TOLD_TYPES) {
      assert.match(told.code, /^[a-z]+(-[a-z]+)*$/, type);
      assert.match(told.message, /^[A-Z].*\.$/, type);
    }
  });
});
