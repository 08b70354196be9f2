// The HTTP API's OpenAPI 3.1 document, built from the schemas the handlers themselves use: the
// approval body is the zod schema the webhook parses with, the statuses and key patterns come from
// domain/. Served at `GET /openapi.json` and committed as docs/openapi.json (`npm run openapi`).
// The routes read every body as raw bytes and validate in the handler (the signature covers the
// exact bytes), so the document is written here rather than derived from fastify route schemas.
import { z } from 'zod';
import { approvalSchema } from '../../domain/order-input.js';
import { IDEMPOTENCY_KEY_PATTERN } from '../../domain/idempotency-key.js';
import { ORDER_STATUSES } from '../../domain/order-status.js';
import type { OaVendor } from '../../domain/oa-approval.js';
import { OA_HEADERS, STANDARD_HEADERS } from '../../domain-node/signature.js';
import { MCP_PATH } from './routes/mcp.js';
import { oaCallbackMethods, oaCallbackPath } from './routes/oa-callbacks.js';
import { PROBLEM_CONTENT_TYPE, PROBLEM_TYPES, type ProblemSlug } from './problem.js';
import { oaVendorIds, oaVendorModule } from '../../vendors/registry.js';

export const OPENAPI_PATH = '/openapi.json';
export const WEBHOOK_PATH = '/webhooks/oa/approvals';

type Json = Record<string, unknown>;

const ref = (name: string): Json => ({ $ref: `#/components/schemas/${name}` });

/** The JSON Schema (2020-12, the dialect of OpenAPI 3.1) of a body the handler parses with zod. */
function requestSchema(schema: z.ZodType): Json {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, { target: 'draft-2020-12', io: 'input' });
  return rest;
}

/** Answers with `slugs`; the statuses come from the table, so a route lists types, not numbers. */
function problemAnswers(...slugs: ProblemSlug[]): Record<string, Json> {
  const byStatus = new Map<number, ProblemSlug[]>();
  for (const slug of slugs) {
    const status = PROBLEM_TYPES[slug].status;
    byStatus.set(status, [...(byStatus.get(status) ?? []), slug]);
  }
  const answers: Record<string, Json> = {};
  for (const [status, types] of [...byStatus].sort(([a], [b]) => a - b)) {
    answers[String(status)] = {
      description: types.map((slug) => `\`/problems/${slug}\`: ${PROBLEM_TYPES[slug].when}`).join('; '),
      ...(status === 503 ? { headers: { 'Retry-After': { $ref: '#/components/headers/RetryAfter' } } } : {}),
      content: {
        [PROBLEM_CONTENT_TYPE]: {
          schema: {
            allOf: [
              ref('Problem'),
              { properties: { type: { enum: types.map((slug) => `/problems/${slug}`) }, status: { const: status } } },
            ],
          },
        },
      },
    };
  }
  return answers;
}

/** Errors any route may give: the framework's own refusals, a failure, the drain. */
const EVERY_ROUTE: ProblemSlug[] = ['bad-request', 'request-timeout', 'internal-error', 'shutting-down'];
const DEPENDENCIES: ProblemSlug[] = ['temporal-unavailable', 'database-unavailable'];
/** A delivery this instance could not take inside its deadline (docs/architecture.md, decision 34). */
const SHED: ProblemSlug[] = ['overloaded'];

function json(schema: Json, description: string, headers: Json = {}): Json {
  return { description, headers, content: { 'application/json': { schema } } };
}

/** A probe: 200 or 503 with a body naming each part; 503 as a problem while the instance drains. */
function probeOperation(operationId: string, summary: string, schema: string, ready: string): Json {
  return {
    operationId,
    summary,
    responses: {
      '200': json(ref(schema), ready),
      '503': {
        description: 'A part is not ready (named, never its own message), or the instance is draining',
        content: {
          'application/json': { schema: ref(schema) },
          [PROBLEM_CONTENT_TYPE]: { schema: ref('Problem') },
        },
      },
      ...problemAnswers('bad-request', 'request-timeout', 'internal-error'),
    },
  };
}

const submissionAnswer = (description: string): Json =>
  json(ref('Submission'), description, {
    'Preference-Applied': {
      description: '`wait=<seconds>`: the request asked `Prefer: wait` and the wait was honoured (capped)',
      schema: { type: 'string', pattern: '^wait=[0-9]+$' },
    },
  });

function webhookOperation(): Json {
  return {
    operationId: 'submitApproval',
    summary: 'Submit one signed OA approval; its order is written exactly once',
    // One scheme or the other, as WEBHOOK_SIGNATURE_SCHEME says (oa by default).
    security: [
      { oaTimestamp: [], oaSignature: [] },
      { webhookId: [], webhookTimestamp: [], webhookSignature: [] },
    ],
    parameters: [
      {
        name: 'Prefer',
        in: 'header',
        required: false,
        description:
          'RFC 7240. `wait=<seconds>` (1–25, capped below the start deadline) asks to answer 201 with the ' +
          'order number when the order is written within the wait; other preferences are ignored.',
        schema: { type: 'string', examples: ['wait=5'] },
      },
    ],
    requestBody: {
      required: true,
      content: { 'application/json': { schema: ref('Approval') } },
    },
    responses: {
      '200': submissionAnswer('A redelivery of a key already accepted (`duplicate: true`); nothing new starts'),
      '201': submissionAnswer('Only with `Prefer: wait`: the first delivery, answered once its order was written'),
      '202': submissionAnswer('The first delivery of a key: its workflow started (`duplicate: false`)'),
      ...problemAnswers(
        'validation-failed',
        'malformed-json',
        'invalid-signature',
        'workflow-already-started',
        'payload-too-large',
        'unsupported-media-type',
        'idempotency-key-conflict',
        ...DEPENDENCIES,
        ...SHED,
        ...EVERY_ROUTE,
      ),
    },
  };
}

function orderStatusOperation(): Json {
  return {
    operationId: 'getOrderStatus',
    summary: 'Where a key stands',
    description:
      'Open while STATUS_TOKEN is unset; with it, only `Authorization: Bearer <STATUS_TOKEN>` is answered, and ' +
      'every other request gets the same 401, checked before the key.',
    // No security requirement, or the status bearer token when STATUS_TOKEN is set.
    security: [{}, { statusBearer: [] }],
    parameters: [
      {
        name: 'key',
        in: 'path',
        required: true,
        description: '`APPROVAL:<approvalNo>:<operation>`, URL-encoded (the colons may be sent as they are)',
        schema: { type: 'string', examples: ['APPROVAL:AP-2026-0001:MAIN'] },
      },
    ],
    responses: {
      '200': json(ref('OrderStatusView'), 'The key’s status, from the database (live attempts while retrying)'),
      ...problemAnswers('invalid-key', 'invalid-token', 'order-not-found', ...DEPENDENCIES, ...EVERY_ROUTE),
    },
  };
}

function connectorOperation(vendor: OaVendor, method: 'GET' | 'POST'): Json {
  const { body } = oaVendorModule(vendor).callback;
  const description =
    'The vendor signs or encrypts the callback its own way (vendors/<vendor>/connector.ts). Every callback that is not ' +
    'proven authentic gets the same 401; an authentic one is always acknowledged, even when it is of no ' +
    'use. Answers 404 while the connector is off (its settings absent).';
  if (method === 'GET') {
    return {
      operationId: `${vendor}UrlCheck`,
      summary: `The ${vendor} connector's URL check: the signed, encrypted echostr answered with its plaintext`,
      description,
      responses: {
        '200': { description: 'The plaintext of echostr', content: { 'text/plain': { schema: { type: 'string' } } } },
        ...problemAnswers('invalid-callback', 'not-found', ...EVERY_ROUTE),
      },
    };
  }
  return {
    operationId: `${vendor}Callback`,
    summary: `The ${vendor} connector's callback: approval events, URL checks`,
    description,
    requestBody: {
      required: true,
      content:
        body === 'xml'
          ? { 'text/xml': { schema: { type: 'string' } } }
          : { 'application/json': { schema: { type: 'object' } } },
    },
    responses: {
      '200':
        body === 'xml'
          ? {
              description:
                'The URL check (GET) answered with the decrypted echostr; an event (POST) acknowledged, empty',
              content: { 'text/plain': { schema: { type: 'string' } } },
            }
          : json({}, 'What the vendor expects back: the URL check answered, or the event acknowledged'),
      ...problemAnswers('invalid-callback', 'not-found', 'payload-too-large', ...DEPENDENCIES, ...SHED, ...EVERY_ROUTE),
    },
  };
}

function mcpOperation(): Json {
  const refusals = problemAnswers(
    'invalid-token',
    'origin-not-allowed',
    'not-found',
    'payload-too-large',
    ...EVERY_ROUTE,
  );
  // The MCP transport refuses as its protocol says: a JSON-RPC error, not problem+json.
  const rpcError = { 'application/json': { schema: ref('JsonRpcError') } };
  const rpcRefusal = (description: string): Json => ({ description, content: rpcError });
  const badRequest = refusals['400'] as { description: string; content: Json };
  return {
    operationId: 'mcp',
    summary: 'MCP over Streamable HTTP (stateless); the tools of docs/mcp.md',
    description:
      'Answers 404 while MCP_TOKEN is unset. A request whose Origin header MCP_ALLOWED_ORIGINS does not ' +
      'list is refused with 403 before the token is checked; a request without Origin is not refused for it.',
    security: [{ mcpBearer: [] }],
    requestBody: { required: true, content: { 'application/json': { schema: { type: 'object' } } } },
    responses: {
      '200': {
        description: 'The JSON-RPC answer, as JSON or as an event stream carrying progress',
        content: { 'application/json': { schema: {} }, 'text/event-stream': { schema: { type: 'string' } } },
      },
      '202': { description: 'A notification or response was received; nothing to answer' },
      ...refusals,
      '400': {
        description: `${badRequest.description}; or a JSON-RPC error: the body is not a JSON-RPC message`,
        content: { ...badRequest.content, ...rpcError },
      },
      '406': rpcRefusal('JSON-RPC error: Accept names neither application/json nor text/event-stream'),
      '415': rpcRefusal('JSON-RPC error: the body is not application/json'),
    },
  };
}

function componentSchemas(): Json {
  const fieldError = {
    type: 'object',
    required: ['pointer', 'message'],
    properties: {
      pointer: { type: 'string', description: 'RFC 6901 pointer into the body' },
      message: { type: 'string' },
    },
  };
  // What every answer about one key starts with.
  const keyFields = {
    idempotencyKey: { type: 'string', pattern: IDEMPOTENCY_KEY_PATTERN.source },
    workflowId: { type: 'string' },
    status: ref('OrderStatus'),
  };
  return {
    Approval: requestSchema(approvalSchema),
    Submission: {
      type: 'object',
      required: ['idempotencyKey', 'workflowId', 'duplicate', 'status'],
      properties: {
        ...keyFields,
        duplicate: { type: 'boolean', description: 'false for exactly one delivery of a key' },
        orderNo: { type: 'string', description: 'the written order’s number, once it is written' },
      },
    },
    OrderStatusView: {
      type: 'object',
      required: ['idempotencyKey', 'workflowId', 'status', 'attempts'],
      properties: {
        ...keyFields,
        orderId: { type: 'string' },
        orderNo: { type: 'string' },
        attempts: { type: 'integer', minimum: 0 },
        lastError: {
          type: 'object',
          description:
            'Why the last attempt failed, told by the classification table (domain/error-classification.ts): ' +
            'a stable code and its sentence, never the error’s own text (the operator CLI shows that)',
          required: ['code', 'message'],
          additionalProperties: false,
          properties: {
            code: { type: 'string', examples: ['insufficient-stock', 'connection-lost', 'downstream-unavailable'] },
            message: { type: 'string', examples: ['A line of the order asks for more stock than is available.'] },
          },
        },
      },
    },
    OrderStatus: { type: 'string', enum: [...ORDER_STATUSES] },
    Health: {
      type: 'object',
      required: ['status', 'database', 'temporal'],
      properties: {
        status: { type: 'string', enum: ['ok', 'unavailable'] },
        database: { type: 'string', description: '`ok`, `unreachable` or `migrations pending` (which ones: the log)' },
        temporal: { type: 'string', enum: ['ok', 'unreachable'] },
        connections: {
          type: 'object',
          description:
            'Only when the process holds outbound OA event connections (a vendor whose event mode opens one, ' +
            'docs/connectors.md): where each stands, by vendor; a connection that is not up changes no status code',
          additionalProperties: { type: 'string', enum: ['connecting', 'up', 'down'] },
        },
      },
    },
    Readiness: {
      allOf: [
        ref('Health'),
        {
          properties: {
            worker: {
              type: 'string',
              description:
                'Only when the API hosts the worker (API_HOSTS_WORKER): `ok` while it polls its task queue, ' +
                'else its state (`initialized`, `stopping`, `draining`, `stopped`, `failed`)',
            },
          },
        },
      ],
    },
    Problem: {
      type: 'object',
      description: 'RFC 9457 problem details; `type` is a relative reference `/problems/<slug>`',
      required: ['type', 'title', 'status', 'detail'],
      properties: {
        type: { type: 'string', enum: Object.keys(PROBLEM_TYPES).map((slug) => `/problems/${slug}`) },
        title: { type: 'string' },
        status: { type: 'integer', minimum: 400, maximum: 599 },
        detail: { type: 'string' },
        errors: { type: 'array', items: fieldError },
      },
    },
    JsonRpcError: {
      type: 'object',
      required: ['jsonrpc', 'error'],
      properties: {
        jsonrpc: { const: '2.0' },
        error: {
          type: 'object',
          required: ['code', 'message'],
          properties: { code: { type: 'integer' }, message: { type: 'string' } },
        },
        id: {},
      },
    },
  };
}

/** The OpenAPI 3.1 document of the HTTP API, as served and as committed. */
export function openApiDocument(): Json {
  const paths: Json = {
    [WEBHOOK_PATH]: { post: webhookOperation() },
    '/orders/{key}': { get: orderStatusOperation() },
    '/healthz': {
      get: probeOperation(
        'readiness',
        'Ready: PostgreSQL answers with every migration applied, and Temporal answers',
        'Health',
        'Both dependencies answer',
      ),
    },
    '/readyz': {
      get: probeOperation(
        'readinessProbe',
        'Ready for traffic: what /healthz checks, and the hosted worker polling when there is one',
        'Readiness',
        'Every part is ready',
      ),
    },
    '/livez': {
      get: {
        operationId: 'liveness',
        summary: 'Alive: no dependency is checked',
        responses: {
          '200': json(
            { type: 'object', required: ['status'], properties: { status: { const: 'ok' } } },
            'The process is up',
          ),
          ...problemAnswers('bad-request', 'request-timeout', 'internal-error'),
        },
      },
    },
    [OPENAPI_PATH]: {
      get: {
        operationId: 'openApiDocument',
        summary: 'This document',
        responses: {
          '200': json({ type: 'object' }, 'The OpenAPI 3.1 document of this API'),
          ...problemAnswers(...EVERY_ROUTE),
        },
      },
    },
    [MCP_PATH]: { post: mcpOperation() },
  };
  for (const vendor of oaVendorIds()) {
    paths[oaCallbackPath(vendor)] = Object.fromEntries(
      oaCallbackMethods(vendor).map((method) => [method.toLowerCase(), connectorOperation(vendor, method)]),
    );
  }

  return {
    openapi: '3.1.0',
    info: {
      title: 'exactly-once-orders',
      version: '1',
      description:
        'OA approvals start Temporal workflows that write each order exactly once. Errors are RFC 9457 ' +
        'problem details (`application/problem+json`); docs/http-api.md explains every route.',
    },
    servers: [{ url: 'http://127.0.0.1:3000' }],
    paths,
    components: {
      schemas: componentSchemas(),
      headers: {
        RetryAfter: { description: 'Seconds to wait before sending again', schema: { type: 'string' } },
      },
      securitySchemes: {
        oaTimestamp: {
          type: 'apiKey',
          in: 'header',
          name: OA_HEADERS.timestamp,
          description: 'Unix seconds; more than WEBHOOK_TOLERANCE_SECONDS off is refused. Sent with the signature.',
        },
        oaSignature: {
          type: 'apiKey',
          in: 'header',
          name: OA_HEADERS.signature,
          description:
            '`sha256=<hex>`: HMAC-SHA256 with WEBHOOK_SECRET over `"<timestamp>.<raw body bytes>"` ' +
            '(domain-node/signature.ts).',
        },
        webhookId: {
          type: 'apiKey',
          in: 'header',
          name: STANDARD_HEADERS.id,
          description: 'WEBHOOK_SIGNATURE_SCHEME=standard: the message id, 1–256 printable ASCII without a dot.',
        },
        webhookTimestamp: {
          type: 'apiKey',
          in: 'header',
          name: STANDARD_HEADERS.timestamp,
          description: 'WEBHOOK_SIGNATURE_SCHEME=standard: unix seconds, held to WEBHOOK_TOLERANCE_SECONDS.',
        },
        webhookSignature: {
          type: 'apiKey',
          in: 'header',
          name: STANDARD_HEADERS.signature,
          description:
            'WEBHOOK_SIGNATURE_SCHEME=standard: space-separated `v1,<base64>` entries, HMAC-SHA256 over ' +
            '`"<id>.<timestamp>.<raw body bytes>"` (Standard Webhooks; domain-node/signature.ts); one match passes.',
        },
        mcpBearer: {
          type: 'http',
          scheme: 'bearer',
          description: 'MCP_TOKEN (submit and status tools), or MCP_OPERATOR_TOKEN (the operator tools as well)',
        },
        statusBearer: { type: 'http', scheme: 'bearer', description: 'STATUS_TOKEN, when it is set' },
      },
    },
  };
}
