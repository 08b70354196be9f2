// What a caller sees when something fails, at every edge: one outcome per failure, rendered as an
// HTTP problem, an MCP tool result and a CLI message with its exit code. The table pins what each
// representative failure looks like; the properties check, over failures nobody wrote by hand,
// that HTTP and MCP always tell a caller the same kind — and a broken renderer shows they can fail.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import type { CallToolResult } from '@modelcontextprotocol/server';
import fc from 'fast-check';
import { IdempotencyConflictError, KeySourceConflictError } from '../../../domain/errors.js';
import { failureOutput } from '../../../edges/cli/failure-output.js';
import { problemFor } from '../../../edges/http/problem.js';
import { errorResult, failureResult } from '../../../edges/mcp/tool-results.js';
import {
  FAILURE_KINDS,
  type FailureKind,
  type FailureOutcome,
  failureOutcome,
  invalidInput,
  invalidKey,
  KnownFailure,
  orderNotFound,
} from '../../../submission/failure-outcome.js';
import { NothingToCompensateError } from '../../../submission/operator-decisions/compensation.js';
import { NoPendingDecisionError } from '../../../submission/operator-decisions/shared.js';
import { IntakeOverloadedError } from '../../../submission/load-shedding.js';
import { TemporalUnavailableError } from '../../../submission/take-delivery.js';

const KEY = 'APPROVAL:AP-1:MAIN';
const TOOL = 'submit_approved_order';

/** How the Temporal client reports a failed call: the gRPC status as a number on the cause. */
const grpc = (status: number, detail: string) =>
  new Error('Failed to start Workflow', { cause: Object.assign(new Error(`${status} ${detail}`), { code: status }) });
const socketError = (code: string) => Object.assign(new Error(`connect ${code} 127.0.0.1:5432`), { code });
/** How Prisma's pg adapter reports a failure: a P-code, and the driver's kind in meta. */
const prismaError = (
  code: string,
  cause: Record<string, unknown>,
  message = 'Invalid `prisma.$queryRaw()` invocation',
) =>
  Object.assign(new Error(message), {
    name: 'PrismaClientKnownRequestError',
    code,
    meta: { driverAdapterError: Object.assign(new Error('adapter error'), { name: 'DriverAdapterError', cause }) },
  });

function textOf(result: CallToolResult): string {
  return result.content.map((part) => (part as { text: string }).text).join('\n');
}

/** The HTTP statuses a caller may see for each kind. */
const HTTP_STATUSES: Record<FailureKind, readonly number[]> = {
  conflict: [409, 422],
  'retry-later': [503],
  'not-found': [404],
  refused: [400, 403],
  unexpected: [500],
};

/** The kind an HTTP client reads from the status alone. */
function kindFromStatus(status: number): FailureKind | undefined {
  return FAILURE_KINDS.find((kind) => HTTP_STATUSES[kind].includes(status));
}

/** The kind a model reads from a tool result's sentence alone. */
function kindFromSentence(text: string): FailureKind | undefined {
  if (text.startsWith('Conflict: ')) return 'conflict';
  if (text.startsWith('No order is known for ')) return 'not-found';
  if (text.startsWith('The arguments were refused') || text.startsWith('Nothing was decided: ')) return 'refused';
  if (text.startsWith('An unexpected error occurred')) return 'unexpected';
  if (
    /^The [a-z ]+ (cannot be reached|is too busy to take this call) right now\b.* It is safe to call \S+ again/.test(
      text,
    )
  )
    return 'retry-later';
  return undefined;
}

interface Seen {
  kind: FailureKind;
  slug: FailureOutcome['slug'];
  status: number;
  /** The model's sentence. */
  sentence: RegExp;
  /** The CLI's exit code. */
  exit: 1 | 2;
}

const conflict422 = { kind: 'conflict', slug: 'idempotency-key-conflict', status: 422, exit: 1 } as const;
const temporal503 = {
  kind: 'retry-later',
  slug: 'temporal-unavailable',
  status: 503,
  sentence: /^The workflow service cannot be reached right now\. It is safe to call submit_approved_order again/,
  exit: 1,
} as const;
const database503 = {
  kind: 'retry-later',
  slug: 'database-unavailable',
  status: 503,
  sentence: /^The database cannot be reached right now\. It is safe to call submit_approved_order again/,
  exit: 1,
} as const;
const overloaded503 = {
  kind: 'retry-later',
  slug: 'overloaded',
  status: 503,
  sentence:
    /^The service is too busy to take this call right now; nothing was started\. It is safe to call submit_approved_order again with the same arguments after 7 seconds\./,
  exit: 1,
} as const;
const decisionRefused = { kind: 'refused', slug: 'decision-refused', status: 403, exit: 1 } as const;
const unexpected500 = {
  kind: 'unexpected',
  slug: 'internal-error',
  status: 500,
  sentence: /^An unexpected error occurred; its details are in the server log\./,
  exit: 1,
} as const;

// Each row: a failure as it reaches an edge, and what a caller sees of it.
const EXAMPLES: [string, unknown, Seen][] = [
  [
    'a key reused for a different order',
    new IdempotencyConflictError(KEY, 'a', 'b', ['order.customerId']),
    { ...conflict422, sentence: /^Conflict: APPROVAL:AP-1:MAIN was already used .*: order\.customerId differ\./ },
  ],
  [
    'a key conflict rethrown with a cause',
    new Error('submission failed', { cause: new IdempotencyConflictError(KEY, 'a', 'b') }),
    { ...conflict422, sentence: /^Conflict: APPROVAL:AP-1:MAIN was already used for a different order\./ },
  ],
  [
    'a key held through another door',
    new KeySourceConflictError(KEY, 'wecom', 'mcp', 'a', 'b'),
    {
      ...conflict422,
      sentence: /^Conflict: APPROVAL:AP-1:MAIN is already taken by an earlier delivery\. Nothing was written/,
    },
  ],
  [
    'a workflow id already started',
    new WorkflowExecutionAlreadyStartedError('Workflow execution already started', `order-${KEY}`, 'orderWorkflow'),
    {
      kind: 'conflict',
      slug: 'workflow-already-started',
      status: 409,
      sentence: /^Conflict: order-APPROVAL:AP-1:MAIN has already run/,
      exit: 1,
    },
  ],
  [
    'a delivery a busy instance shed, with the wait its drain rate gives',
    new IntakeOverloadedError(7, 'busy'),
    overloaded503,
  ],
  [
    'a start Temporal did not confirm',
    new TemporalUnavailableError(grpc(4, 'DEADLINE_EXCEEDED: Deadline exceeded after 5.001s')),
    temporal503,
  ],
  ['Temporal unreachable (gRPC UNAVAILABLE)', grpc(14, 'UNAVAILABLE: No connection established'), temporal503],
  [
    'a decision not confirmed in time',
    new Error(`the decision for ${KEY} was not confirmed within 60 s`, { cause: grpc(4, 'DEADLINE_EXCEEDED') }),
    temporal503,
  ],
  [
    'Temporal unreachable, with the socket code underneath',
    Object.assign(new Error('14 UNAVAILABLE: connect ECONNREFUSED 127.0.0.1:7233'), {
      code: 14,
      cause: socketError('ECONNREFUSED'),
    }),
    temporal503,
  ],
  [
    'PostgreSQL unreachable (Prisma P1001)',
    prismaError('P1001', { kind: 'DatabaseNotReachable' }, "Can't reach database server"),
    database503,
  ],
  ['no pooled connection in time (P2024)', prismaError('P2024', { kind: 'postgres' }), database503],
  ['a connection reset mid-statement', socketError('ECONNRESET'), database503],
  // Rolled back by PostgreSQL: nothing of the request is left, so it is safe to send again.
  ['a statement timeout (57014)', Object.assign(new Error('canceling statement'), { code: '57014' }), database503],
  ['a deadlock (40P01)', Object.assign(new Error('deadlock detected'), { code: '40P01' }), database503],
  [
    'no order under the key',
    new KnownFailure(orderNotFound(KEY)),
    {
      kind: 'not-found',
      slug: 'order-not-found',
      status: 404,
      sentence: /^No order is known for APPROVAL:AP-1:MAIN: nothing was submitted under it\.$/,
      exit: 1,
    },
  ],
  [
    'fields refused by the schema',
    new KnownFailure(invalidInput([{ pointer: '/order/lines/0/quantity', message: 'Too small' }])),
    {
      kind: 'refused',
      slug: 'validation-failed',
      status: 400,
      sentence: /^The arguments were refused and nothing was started\..*\n- \/order\/lines\/0\/quantity: Too small$/,
      exit: 2,
    },
  ],
  [
    'something that is not a key',
    new KnownFailure(invalidKey('/key')),
    {
      kind: 'refused',
      slug: 'invalid-key',
      status: 400,
      sentence: /\n- \/key: not an idempotency key$/,
      exit: 2,
    },
  ],
  [
    'a decision when none is pending',
    new NoPendingDecisionError(KEY, 'its compensation has ended (completed)'),
    { ...decisionRefused, sentence: /^Nothing was decided: its compensation has ended \(completed\)\. list_orders/ },
  ],
  [
    'a compensation for a written order',
    new NothingToCompensateError(KEY, 'its status is SUBMITTED'),
    { ...decisionRefused, sentence: /^Nothing was decided: its status is SUBMITTED\./ },
  ],
  ['Temporal refusing the request (gRPC INVALID_ARGUMENT)', grpc(3, 'search attribute not registered'), unexpected500],
  ['a statement that failed for an unknown reason', new Error('secret internals'), unexpected500],
  ['a thrown string', 'boom', unexpected500],
];

describe('failure outcome: what a caller sees', () => {
  for (const [situation, error, seen] of EXAMPLES) {
    it(`${situation} → ${seen.kind}: HTTP ${seen.status}, CLI exit ${seen.exit}`, () => {
      const outcome = failureOutcome(error);
      assert.equal(outcome.kind, seen.kind);
      assert.equal(outcome.slug, seen.slug);

      const http = problemFor(outcome);
      assert.equal(http.problem.status, seen.status);
      assert.equal(http.problem.type, `/problems/${seen.slug}`);
      assert.ok(http.problem.title && http.problem.detail, 'a title and a detail');
      assert.equal(
        http.headers['retry-after'],
        seen.slug === 'overloaded' ? '7' : seen.kind === 'retry-later' ? '5' : undefined,
      );

      const mcp = errorResult(TOOL, error);
      assert.equal(mcp.result.isError, true);
      assert.equal(mcp.expected, seen.kind !== 'unexpected');
      assert.match(textOf(mcp.result), seen.sentence);

      const own = error instanceof Error ? error.message : String(error);
      assert.deepEqual(failureOutput('resubmit', outcome, false), {
        exitCode: seen.exit,
        text: `resubmit failed: ${own}`,
      });
      assert.deepEqual(failureOutput('resubmit', outcome, true), {
        exitCode: seen.exit,
        text: JSON.stringify({ error: own }),
      });
    });
  }

  it('names what differs in a key conflict, in the detail and as data', () => {
    const http = problemFor(failureOutcome(new IdempotencyConflictError(KEY, 'a', 'b', ['order.currency'])));
    assert.equal(http.problem.detail, `${KEY} was already used for a different order: order.currency differ`);
    assert.equal(http.problem.idempotencyKey, KEY);
    assert.deepEqual(http.problem.differences, ['order.currency']);
  });

  it('says a key held through another door alike at every door, whoever holds it and whatever either order is', () => {
    // The doors there are, and doors a vendor could add (named so that no word of an answer contains one).
    const door = fc.oneof(
      fc.constantFrom('webhook', 'mcp', 'feishu', 'dingtalk', 'wecom'),
      fc.stringMatching(/^door-[a-z0-9]{4,26}$/),
    );
    const fingerprint = fc.stringMatching(/^[0-9a-f]{64}$/);
    const seen = new Set<string>();
    fc.assert(
      fc.property(door, door, fingerprint, fingerprint, (claimedBy, refused, held, sent) => {
        const outcome = failureOutcome(new KeySourceConflictError(KEY, claimedBy, refused, held, sent));
        const http = problemFor(outcome).problem;
        const mcp = textOf(failureResult('submit_approved_order', outcome));
        assert.equal(http.status, 422);
        assert.deepEqual(http.differences, []);
        for (const said of [http.detail, mcp]) {
          for (const secret of [claimedBy, refused, held, sent]) {
            assert.ok(!said.includes(secret), `${JSON.stringify(said)} names ${secret}`);
          }
        }
        seen.add(JSON.stringify([http.detail, mcp]));
      }),
    );
    // One answer for every holder, door and order: nothing in it to aim the next guess with.
    assert.deepEqual(
      [...seen].map((answer) => JSON.parse(answer) as string[]),
      [
        [
          `${KEY} is already taken by an earlier delivery`,
          `Conflict: ${KEY} is already taken by an earlier delivery. Nothing was written and what holds the key is ` +
            'unchanged. Calling again with these arguments will be refused again; an approval whose order really ' +
            'changed needs a person to decide.',
        ],
      ],
    );
  });

  it('points at each refused field in the HTTP answer', () => {
    const errors = [{ pointer: '/approvalNo', message: 'Required' }];
    assert.deepEqual(problemFor(invalidInput(errors)).problem.errors, errors);
    assert.deepEqual(problemFor(invalidKey('/key')).problem.errors, [
      { pointer: '/key', message: 'not an idempotency key' },
    ]);
  });

  it('keeps the words of an unexpected failure out of both answers, and in the CLI for the operator', () => {
    const outcome = failureOutcome(new Error('password=hunter2 at 10.0.0.7'));
    assert.doesNotMatch(JSON.stringify(problemFor(outcome).problem), /hunter2/);
    assert.doesNotMatch(textOf(failureResult(TOOL, outcome)), /hunter2/);
    assert.match(failureOutput('status', outcome, false).text, /hunter2/);
  });
});

// Failures nobody wrote by hand: the typed ones of the shared paths, what drivers and clients
// throw (gRPC statuses, SQLSTATEs, Prisma codes, socket codes, adapter kinds), anything else, and
// any of them rethrown with a cause. Free text carries `§`, which no rendering of ours contains.
const key = fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9._-]{0,10}$/).map((no) => `APPROVAL:${no}:MAIN`);
const words = fc.string({ maxLength: 20 }).map((text) => `§${text}§`);
const fieldErrors = fc.array(
  fc.record({
    pointer: fc
      .array(fc.constantFrom('order', 'lines', '0', 'quantity', 'approvalNo'), { maxLength: 4 })
      .map((path) => (path.length > 0 ? `/${path.join('/')}` : '')),
    message: words,
  }),
  { minLength: 1, maxLength: 3 },
);
const SQLSTATES = ['08006', '08001', '57P01', '57014', '55P03', '40P01', '40001', '53300', '23505', '22001', '28P01'];
const PRISMA_CODES = ['P1001', 'P1002', 'P1017', 'P2002', 'P2010', 'P2024', 'P2028', 'P2034'];
const SOCKET_CODES = ['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'ENOTFOUND', 'UND_ERR_SOCKET'];
const ADAPTER_KINDS = ['DatabaseNotReachable', 'ConnectionClosed', 'TooManyConnections', 'UniqueConstraintViolation'];

const oneFailure: fc.Arbitrary<unknown> = fc.oneof(
  fc
    .tuple(key, fc.array(words, { maxLength: 3 }))
    .map(([k, differences]) => new IdempotencyConflictError(k, 'a', 'b', differences)),
  key.map((k) => new WorkflowExecutionAlreadyStartedError('Workflow execution already started', `order-${k}`, 'w')),
  fc.tuple(key, words).map(([k, reason]) => new NoPendingDecisionError(k, reason)),
  fc.tuple(key, words).map(([k, reason]) => new NothingToCompensateError(k, reason)),
  key.map((k) => new KnownFailure(orderNotFound(k))),
  fieldErrors.map((errors) => new KnownFailure(invalidInput(errors))),
  fc.constant(new KnownFailure(invalidKey('/key'))),
  fc.tuple(fc.integer({ min: 0, max: 16 }), words).map(([status, detail]) => grpc(status, detail)),
  fc.integer({ min: 0, max: 16 }).map((status) => new TemporalUnavailableError(grpc(status, 'start failed'))),
  fc
    .tuple(fc.integer({ min: 1, max: 30 }), words)
    .map(([seconds, reason]) => new IntakeOverloadedError(seconds, reason)),
  fc.tuple(fc.constantFrom(...SQLSTATES), words).map(([code, message]) => Object.assign(new Error(message), { code })),
  fc
    .tuple(fc.constantFrom(...PRISMA_CODES), fc.constantFrom(...ADAPTER_KINDS))
    .map(([code, kind]) => prismaError(code, { kind })),
  fc.constantFrom(...SOCKET_CODES).map(socketError),
  words.map((message) => new Error(message)),
  fc.constantFrom('deadline §', 'Failed to connect §', 'Connection terminated unexpectedly §').map((m) => new Error(m)),
  fc.oneof(words, fc.integer(), fc.constant(null), fc.constant(undefined), fc.object()),
);
const anyFailure = fc
  .tuple(oneFailure, fc.nat({ max: 2 }))
  .map(([error, depth]) =>
    Array.from({ length: depth }).reduce<unknown>((cause) => new Error('§rethrown§', { cause }), error),
  );

type RenderForModel = (toolName: string, outcome: FailureOutcome) => CallToolResult;

/** HTTP and MCP tell a caller the same kind, each within what its own contract allows. */
function rendersConsistently(renderForModel: RenderForModel, error: unknown): FailureKind {
  const outcome = failureOutcome(error);
  const http = problemFor(outcome);
  const sentence = textOf(renderForModel(TOOL, outcome));
  assert.ok(HTTP_STATUSES[outcome.kind].includes(http.problem.status), `${http.problem.status} for ${outcome.kind}`);
  assert.equal(kindFromStatus(http.problem.status), kindFromSentence(sentence), `HTTP and MCP disagree: ${sentence}`);
  assert.equal(http.problem.type, `/problems/${outcome.slug}`);
  const retryAfter = http.headers['retry-after'];
  assert.equal(retryAfter !== undefined, outcome.kind === 'retry-later', 'Retry-After only when retrying helps');
  if (retryAfter !== undefined) assert.ok(Number(retryAfter) > 0);
  if (outcome.kind === 'unexpected') {
    assert.ok(!JSON.stringify(http.problem).includes('§'), 'the HTTP answer echoes an unexpected failure');
    assert.ok(!sentence.includes('§'), 'the tool result echoes an unexpected failure');
  }
  const cli = failureOutput('status', outcome, false);
  assert.equal(cli.exitCode, 'errors' in outcome ? 2 : 1);
  assert.ok(cli.text.endsWith(outcome.message));
  return outcome.kind;
}

describe('failure outcome: properties', () => {
  it('every failure renders to an HTTP status of its kind, and MCP tells the same kind', () => {
    const kindsSeen = new Set<FailureKind>();
    fc.assert(
      fc.property(anyFailure, (error) => {
        kindsSeen.add(rendersConsistently(failureResult, error));
      }),
      { numRuns: 500 },
    );
    assert.deepEqual([...kindsSeen].sort(), [...FAILURE_KINDS].sort(), 'the failures reach every kind');
  });

  it('a thrown value that cannot be turned into text is an unexpected failure, not a second error', () => {
    // Found by the property above: fast-check's objects include { toString: {} }, which String() refuses.
    for (const thrown of [{ toString: {} }, Object.create(null) as unknown]) {
      assert.equal(failureOutcome(thrown).kind, 'unexpected');
      assert.equal(failureOutcome(new Error('§rethrown§', { cause: thrown })).kind, 'unexpected');
    }
  });

  it('the same failure gets the same outcome every time', () => {
    fc.assert(
      fc.property(anyFailure, (error) => {
        assert.deepEqual(failureOutcome(error), failureOutcome(error));
      }),
    );
  });

  it('catches a renderer that tells a model something else than HTTP says', () => {
    const broken: RenderForModel = (toolName, outcome) =>
      failureResult(
        toolName,
        outcome.slug === 'database-unavailable' ? { ...outcome, kind: 'unexpected', slug: 'internal-error' } : outcome,
      );
    const details = fc.check(
      fc.property(anyFailure, (error) => {
        rendersConsistently(broken, error);
      }),
      { numRuns: 500 },
    );
    assert.equal(details.failed, true, 'the property noticed the broken renderer');
    assert.equal(failureOutcome(details.counterexample?.[0]).slug, 'database-unavailable');
  });
});
