// The MCP tool layer's own logic, without a stack: what a model is told for each failure, which
// tools are offered, and that refused arguments never reach the submission path.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Client } from '@temporalio/client';
import fc from 'fast-check';
import { loadConfig } from '../../../../app/env.js';
import type { PrismaClient } from '../../../../services/db/prisma-client.js';
import {
  DECIDED_BY_MAX_LENGTH,
  DECISION_DOORS,
  decidedThrough,
  DOOR_PREFIXES,
  MARKED_DECIDED_BY_MAX_LENGTH,
} from '../../../../domain/decided-by.js';
import { publicErrorOf } from '../../../../domain/error-classification.js';
import { IdempotencyConflictError } from '../../../../domain/errors.js';
import { InMemoryTransport, type JSONRPCMessage } from '@modelcontextprotocol/server';
import { schemaDialectFor } from '../../../../edges/mcp/revisions.js';
import { createMcpServer, type McpServerOptions, toolsFor } from '../../../../edges/mcp/server.js';
import { statusSentence } from '../../../../edges/mcp/status-sentences.js';
import type { McpDeps } from '../../../../edges/mcp/tool.js';
import { errorResult, invalidArgumentsResult } from '../../../../edges/mcp/tool-results.js';
import { NoPendingDecisionError } from '../../../../submission/operator-decisions/shared.js';
import { TemporalUnavailableError } from '../../../../submission/take-delivery.js';

const silent = { info: () => {}, warn: () => {}, error: () => {} };

/** Dependencies that fail the test if anything touches them. */
function untouchableDeps(): McpDeps {
  const untouchable = new Proxy(
    {},
    {
      get: (_target, property) => {
        throw new Error(`the tool reached ${String(property)} although the arguments were refused`);
      },
    },
  );
  return {
    config: loadConfig({}),
    prisma: untouchable as PrismaClient,
    temporal: untouchable as Client,
    log: silent,
  };
}

interface ListedSchemas {
  name: string;
  inputSchema: Record<string, unknown>;
  outputSchema: Record<string, unknown>;
}

/** A session over stdio's path (the revision settled at initialize) that asks for tools/list. */
async function toolsListedTo(revision: string): Promise<ListedSchemas[]> {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const server = createMcpServer(toolsFor(untouchableDeps(), { operatorTools: 'mcp-operator' }));
  const answers = new Map<unknown, (result: unknown) => void>();
  clientSide.onmessage = (message: JSONRPCMessage) => {
    if ('id' in message && 'result' in message) answers.get(message.id)?.(message.result);
  };
  const request = (id: number, method: string, params: Record<string, unknown>) =>
    new Promise<unknown>((resolve) => {
      answers.set(id, resolve);
      void clientSide.send({ jsonrpc: '2.0', id, method, params });
    });
  await server.connect(serverSide);
  await clientSide.start();
  const initialized = (await request(1, 'initialize', {
    protocolVersion: revision,
    capabilities: {},
    clientInfo: { name: 'unit', version: '1' },
  })) as { protocolVersion: string };
  await clientSide.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  const { tools } = (await request(2, 'tools/list', {})) as { tools: ListedSchemas[] };
  await server.close();
  assert.ok(initialized.protocolVersion);
  return tools;
}

function textOf(result: { content: unknown[] }): string {
  return result.content.map((part) => (part as { text: string }).text).join('\n');
}

const body = {
  approvalNo: 'AP-1',
  operation: 'MAIN',
  approvedAt: '2026-11-29T10:00:00+08:00',
  order: { customerId: 'CUST-1', currency: 'CNY', lines: [{ sku: 'SKU-APPLE', quantity: 1, unitPrice: '1' }] },
};

describe('MCP tools', () => {
  it('offers the operator tools only when asked to', () => {
    const names = (operatorTools: McpServerOptions['operatorTools']) =>
      toolsFor(untouchableDeps(), { operatorTools }).map((tool) => tool.name);
    assert.deepEqual(names(false), ['submit_approved_order', 'get_order_status']);
    for (const door of DECISION_DOORS) {
      assert.deepEqual(names(door), [
        'submit_approved_order',
        'get_order_status',
        'list_orders_awaiting_decision',
        'decide_compensation',
        'decide_delivery',
      ]);
    }
  });

  it('says of every tool what calling it again does: each hint set, and every tool idempotent in effect', () => {
    const annotations = Object.fromEntries(
      toolsFor(untouchableDeps(), { operatorTools: 'mcp-operator' }).map((tool) => [
        tool.name,
        tool.listings['draft-2020-12'].annotations,
      ]),
    );
    const hints = (readOnly: boolean, destructive: boolean, openWorld: boolean) => ({
      readOnlyHint: readOnly,
      destructiveHint: destructive,
      idempotentHint: true,
      openWorldHint: openWorld,
    });
    for (const annotation of Object.values(annotations)) delete annotation?.title;
    assert.deepEqual(annotations, {
      submit_approved_order: hints(false, false, false),
      get_order_status: hints(true, false, false),
      list_orders_awaiting_decision: hints(true, false, false),
      // abandon gives an order up for good; the same decision again is refused and changes nothing
      decide_compensation: hints(false, true, false),
      // redeliver reaches the downstream system
      decide_delivery: hints(false, false, true),
    });
  });

  it('lists tool schemas in JSON Schema 2020-12 to a client of 2025-11-25 or later, and in draft-07 to one of 2025-06-18', async () => {
    const dialects = async (revision: string) =>
      new Set((await toolsListedTo(revision)).flatMap((tool) => [tool.inputSchema.$schema, tool.outputSchema.$schema]));
    const draft2020 = 'https://json-schema.org/draft/2020-12/schema';
    assert.deepEqual(await dialects('2025-11-25'), new Set([draft2020]));
    assert.deepEqual(await dialects('2025-06-18'), new Set(['http://json-schema.org/draft-07/schema#']));
    // A revision the server does not speak settles on its latest, 2025-11-25.
    assert.deepEqual(await dialects('2099-01-01'), new Set([draft2020]));
    // 2026-07-28 names itself on every request (no initialize): its dialect is 2020-12 as well.
    assert.equal(schemaDialectFor('2026-07-28'), 'draft-2020-12');
    // A request that names no revision is one of 2025-03-26.
    assert.equal(schemaDialectFor('2025-03-26'), 'draft-7');
  });

  it('says the same in both dialects: the listed schemas differ in their $schema only', () => {
    const without$schema = ({ $schema: _, ...rest }: Record<string, unknown>) => rest;
    for (const tool of toolsFor(untouchableDeps(), { operatorTools: 'mcp-operator' })) {
      const [draft7, draft2020] = [tool.listings['draft-7'], tool.listings['draft-2020-12']];
      assert.deepEqual(without$schema(draft7.inputSchema), without$schema(draft2020.inputSchema), tool.name);
      assert.deepEqual(
        without$schema(draft7.outputSchema ?? {}),
        without$schema(draft2020.outputSchema ?? {}),
        tool.name,
      );
    }
  });

  it('refuses an idempotencyKey argument before anything is touched, naming the field', async () => {
    const [submitTool] = toolsFor(untouchableDeps(), { operatorTools: false });
    assert.ok(submitTool);
    const signal = new AbortController().signal;
    const result = await submitTool.call(
      { ...body, idempotencyKey: 'APPROVAL:OTHER:MAIN' },
      { signal, reportProgress: () => Promise.resolve() },
    );
    assert.equal(result.isError, true);
    assert.match(textOf(result), /^The arguments were refused and nothing was started/);
    assert.match(textOf(result), /- \/idempotencyKey: unknown field: the idempotency key is computed/);
  });

  it('answers a malformed unit price with an isError result naming the field, before anything is touched', async () => {
    const [submitTool] = toolsFor(untouchableDeps(), { operatorTools: false });
    assert.ok(submitTool);
    const signal = new AbortController().signal;
    for (const unitPrice of ['12,50', '1e3', '-1', '', '1.23456', ' 1.00', '０.５']) {
      const args = { ...body, order: { ...body.order, lines: [{ ...body.order.lines[0], unitPrice }] } };
      const result = await submitTool.call(args, { signal, reportProgress: () => Promise.resolve() });
      assert.equal(result.isError, true, JSON.stringify(unitPrice));
      assert.match(textOf(result), /^The arguments were refused and nothing was started/);
      assert.match(textOf(result), /- \/order\/lines\/0\/unitPrice: must be a decimal string/);
    }
  });

  it('takes a decidedBy as long as the decision record stores after the longest door mark, and refuses a longer one naming the field', async () => {
    const decide = toolsFor(untouchableDeps(), { operatorTools: 'mcp-operator' }).find(
      (tool) => tool.name === 'decide_compensation',
    );
    assert.ok(decide);
    const context = { signal: new AbortController().signal, reportProgress: () => Promise.resolve() };
    const args = (decidedBy: string) => ({ idempotencyKey: 'APPROVAL:AP-1:MAIN', decision: 'abandon', decidedBy });
    // Accepted arguments reach Temporal, which the untouchable dependencies answer as unexpected.
    for (const door of DECISION_DOORS) {
      assert.ok(decidedThrough(door, 'o'.repeat(MARKED_DECIDED_BY_MAX_LENGTH)).length <= DECIDED_BY_MAX_LENGTH, door);
    }
    const longest = await decide.call(args('o'.repeat(MARKED_DECIDED_BY_MAX_LENGTH)), context);
    assert.doesNotMatch(textOf(longest), /arguments were refused/);
    const tooLong = await decide.call(args('o'.repeat(MARKED_DECIDED_BY_MAX_LENGTH + 1)), context);
    assert.equal(tooLong.isError, true);
    assert.match(textOf(tooLong), /^The arguments were refused and nothing was started/);
    assert.match(textOf(tooLong), /- \/decidedBy: /);
  });

  it('refuses a decidedBy that begins with a door prefix, as orders-cli --by, before anything is touched', async () => {
    const context = { signal: new AbortController().signal, reportProgress: () => Promise.resolve() };
    const tools = toolsFor(untouchableDeps(), { operatorTools: 'mcp-operator' });
    const decisions = [
      { tool: 'decide_compensation', decision: 'abandon' },
      { tool: 'decide_delivery', decision: 'mark-handled' },
    ];
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...decisions),
        fc.constantFrom(...DOOR_PREFIXES),
        fc.boolean(),
        fc.stringMatching(/^[ -~]{0,40}$/),
        async ({ tool, decision }, prefix, upper, suffix) => {
          const decide = tools.find((candidate) => candidate.name === tool)!;
          const decidedBy = (upper ? prefix.toUpperCase() : prefix) + suffix;
          const result = await decide.call({ idempotencyKey: 'APPROVAL:AP-1:MAIN', decision, decidedBy }, context);
          assert.equal(result.isError, true);
          assert.match(textOf(result), /^The arguments were refused and nothing was started/);
          assert.ok(textOf(result).includes(`- /decidedBy: must not begin with "${prefix}"`), textOf(result));
        },
      ),
    );
    // A colon elsewhere is a name like any other: the call reaches Temporal.
    const decide = tools.find((tool) => tool.name === 'decide_compensation')!;
    const taken = await decide.call(
      { idempotencyKey: 'APPROVAL:AP-1:MAIN', decision: 'abandon', decidedBy: 'ops:alice' },
      context,
    );
    assert.doesNotMatch(textOf(taken), /arguments were refused/);
  });

  it('names every bad field by its JSON pointer', () => {
    const result = invalidArgumentsResult('submit_approved_order', [
      { pointer: '/order/lines/0/quantity', message: 'Too small: expected number to be >=1' },
      { pointer: '', message: 'pass either idempotencyKey or approvalNo + operation' },
    ]);
    assert.equal(result.isError, true);
    assert.equal(
      textOf(result),
      'The arguments were refused and nothing was started. Fix these fields and call submit_approved_order again:\n' +
        '- /order/lines/0/quantity: Too small: expected number to be >=1\n' +
        '- (the arguments): pass either idempotencyKey or approvalNo + operation',
    );
  });

  it('tells a model what differs in a conflict and that nothing was written', () => {
    const conflict = new IdempotencyConflictError('APPROVAL:AP-1:MAIN', 'a', 'b', [
      'order.lines (sorted) [0].quantity',
    ]);
    const { result, expected } = errorResult('submit_approved_order', conflict);
    assert.equal(expected, true);
    assert.equal(result.isError, true);
    assert.match(textOf(result), /APPROVAL:AP-1:MAIN was already used for a different order/);
    assert.match(textOf(result), /order\.lines \(sorted\) \[0\]\.quantity differ/);
    assert.match(textOf(result), /Nothing was written and what holds the key is unchanged/);
  });

  it('says calling again is safe when Temporal or the database cannot be reached', () => {
    const unreachable = [
      new TemporalUnavailableError(new Error('Failed to connect')),
      Object.assign(new Error('14 UNAVAILABLE: No connection established'), { code: 14 }),
      Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }),
    ];
    for (const error of unreachable) {
      const { result, expected } = errorResult('submit_approved_order', error);
      assert.equal(expected, true, error.message);
      assert.match(textOf(result), /It is safe to call submit_approved_order again with the same arguments/);
    }
  });

  it('answers a missing decision plainly and hides the details of the unexpected', () => {
    const none = errorResult('decide_compensation', new NoPendingDecisionError('APPROVAL:AP-1:MAIN', 'nope'));
    assert.match(textOf(none.result), /^Nothing was decided: nope\. list_orders_awaiting_decision/);

    const unexpected = new Error('secret internals');
    const { result, expected } = errorResult('submit_approved_order', unexpected);
    assert.equal(expected, false);
    assert.doesNotMatch(textOf(result), /secret internals|\n\s+at /);
    assert.match(textOf(result), /details are in the server log/);
  });

  it('has a sentence for every status that says what to do next while it is still running', () => {
    const key = 'APPROVAL:AP-1:MAIN';
    assert.match(
      statusSentence({
        idempotencyKey: key,
        status: 'RECEIVED',
        attempts: 2,
        lastError: publicErrorOf('ConnectionLost: connect ECONNREFUSED 10.1.2.3:5432'),
      }),
      /still being written \(attempt 2 \(connection-lost\)\)\. Call get_order_status with idempotencyKey "APPROVAL:AP-1:MAIN"/,
    );
    assert.equal(
      statusSentence({ idempotencyKey: key, status: 'SUBMITTED', attempts: 1, orderNo: 'SO-1' }),
      'Order SO-1 is written.',
    );
    assert.match(statusSentence({ idempotencyKey: key, status: 'COMPENSATING', attempts: 1 }), /waits for an operator/);
    assert.match(statusSentence({ idempotencyKey: key, status: 'FAILED', attempts: 1 }), /^The order was not written/);
  });
});
