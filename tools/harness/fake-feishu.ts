// A fake Feishu open API (tenant access token, approval instance read) for reader tests, its
// messages API for the decision cards (fake-feishu-messages.ts), its approval comments for the
// receipts (fake-feishu-comments.ts), its long-connection service (fake-feishu-long-connection.ts: discovery on the same API, the gateway
// beside it), and the builders of events exactly as Feishu sends them: callbacks encrypted with
// the Encrypt Key and signed in the X-Lark-* headers, and the schema 1.0 and 2.0 bodies. Built with
// node:crypto alone, apart from the code under test, so a test compares two implementations of the
// same documented scheme.
import { createCipheriv, createHash, randomBytes, randomUUID } from 'node:crypto';
import { type FakeOaApi, startFakeOaApi } from './fake-oa-api.js';
import {
  type ClientConfig,
  createFakeFeishuLongConnection,
  type FakeFeishuLongConnection,
} from './fake-feishu-long-connection.js';
import { createFakeFeishuComments, type FakeFeishuComments } from './fake-feishu-comments.js';
import { createFakeFeishuMessages, type FakeFeishuMessages } from './fake-feishu-messages.js';

export interface FeishuWidget {
  id?: string;
  name: string;
  type: string;
  /** A `fieldList` widget's value is its rows, each an array of widgets. */
  value: unknown;
}

export interface FeishuInstance {
  status: string;
  form: FeishuWidget[];
  /** Milliseconds since the epoch, as Feishu gives it (a string, "0" while running). */
  endTime?: string;
}

export interface FakeFeishu extends FakeOaApi<FeishuInstance> {
  appId: string;
  appSecret: string;
  /** Its long-connection service: the endpoint is discovered at this API's `/callback/ws/endpoint`. */
  longConnection: FakeFeishuLongConnection;
  /** Its messages API: the chats' cards, and the faults a test scripts for sends. */
  messages: FakeFeishuMessages;
  /** Its approval comments: the receipts written into instances, and the faults a test scripts for posts. */
  comments: FakeFeishuComments;
}

/** An approved instance of the example mapping's purchase-order form (examples/), with one line. */
export function approvedFeishuOrder(sku: string, quantity: number, unitPrice: number): FeishuInstance {
  return approvedFeishuInstance({ customerId: 'CUST-FS-1', lines: [{ sku, quantity, unitPrice }] });
}

/** An approved instance of the example mapping's purchase-order form (examples/) holding `order`. */
export function approvedFeishuInstance(order: {
  customerId: string;
  lines: { sku: string; quantity: number; unitPrice: number | string }[];
}): FeishuInstance {
  return {
    status: 'APPROVED',
    endTime: String(Date.now()),
    form: [
      { name: 'Customer ID', type: 'input', value: order.customerId },
      { name: 'Currency', type: 'input', value: 'CNY' },
      {
        name: 'Items',
        type: 'fieldList',
        value: order.lines.map((line) => [
          { name: 'SKU', type: 'input', value: line.sku },
          { name: 'Quantity', type: 'number', value: line.quantity },
          { name: 'Unit price', type: 'amount', value: line.unitPrice },
        ]),
      },
    ],
  };
}

export const FEISHU_TOKEN_INVALID_CODE = 99991663;

export async function startFakeFeishu(
  options: { tokenTtlSeconds?: number; clientConfig?: Partial<ClientConfig> } = {},
): Promise<FakeFeishu> {
  const appId = `cli_${randomBytes(8).toString('hex')}`;
  const appSecret = randomBytes(16).toString('hex');
  const longConnection = createFakeFeishuLongConnection({
    appId,
    appSecret,
    ...(options.clientConfig ? { clientConfig: options.clientConfig } : {}),
  });
  const tokenInvalid = () => ({
    status: 400,
    body: { code: FEISHU_TOKEN_INVALID_CODE, msg: 'Invalid access token for authorization' },
  });
  const messages = createFakeFeishuMessages({ appId, tokenInvalid });
  const comments = createFakeFeishuComments({ tokenInvalid });
  const api = await startFakeOaApi<FeishuInstance>(
    {
      otherRequest: (method, url, body, request) =>
        longConnection.discovery(method, url, body) ??
        messages.answer(method, url, body, request) ??
        comments.answer(method, url, body, request),
      tokenRequest: (method, url, body, issue) => {
        if (method !== 'POST' || url.pathname !== '/open-apis/auth/v3/tenant_access_token/internal') return undefined;
        const credentials = body as { app_id?: string; app_secret?: string } | undefined;
        if (credentials?.app_id !== appId || credentials.app_secret !== appSecret) {
          return { status: 400, body: { code: 10014, msg: 'app secret invalid' } };
        }
        const { token, ttlSeconds } = issue();
        return { status: 200, body: { code: 0, msg: 'ok', tenant_access_token: token, expire: ttlSeconds } };
      },
      instanceRequest: (method, url, headers) => {
        const match = /^\/open-apis\/approval\/v4\/instances\/([^/]+)$/.exec(url.pathname);
        if (method !== 'GET' || !match?.[1]) return undefined;
        const authorization = headers.authorization ?? '';
        return {
          token: authorization.startsWith('Bearer ') ? authorization.slice(7) : undefined,
          instanceId: decodeURIComponent(match[1]),
        };
      },
      instanceAnswer: (value) => {
        const instance = value as FeishuInstance;
        return {
          status: 200,
          body: {
            code: 0,
            msg: 'success',
            data: {
              status: instance.status,
              form: JSON.stringify(instance.form),
              end_time: instance.endTime ?? '0',
              start_time: String(Date.now() - 60_000),
            },
          },
        };
      },
      notFound: () => ({ status: 400, body: { code: 1390003, msg: 'instance code not found' } }),
      tokenInvalid,
      error: (status) => ({
        status,
        body:
          status === 429 ? { code: 99991400, msg: 'request trigger frequency limit' } : { code: status, msg: 'error' },
      }),
    },
    options,
  );
  return {
    ...api,
    appId,
    appSecret,
    longConnection,
    messages,
    comments,
    close: async () => {
      await longConnection.close();
      await api.close();
    },
  };
}

/**
 * A click on a decision card's button, as Feishu sends it (schema 2.0 `card.action.trigger`, over
 * the callback or the long connection): who clicked, what the button carries, the card's message.
 */
export function feishuCardClickPayload(click: {
  appId: string;
  openId: string;
  button: { idempotencyKey: string; episode: string; decision: string };
  chatId: string;
  messageId: string;
}): Record<string, unknown> {
  return {
    schema: '2.0',
    header: {
      event_id: `evt-${randomBytes(6).toString('hex')}`,
      event_type: 'card.action.trigger',
      create_time: String(Date.now()),
      app_id: click.appId,
    },
    event: {
      operator: { open_id: click.openId },
      action: { tag: 'button', value: click.button },
      context: { open_message_id: click.messageId, open_chat_id: click.chatId },
    },
  };
}

/** A schema 1.0 approval_instance event, as Feishu pushes it (without the token: the builder adds it). */
export function feishuApprovalPayload(event: {
  uuid?: string;
  instanceCode: string;
  status: string;
  approvalCode?: string;
}): Record<string, unknown> {
  return {
    ts: `${Math.floor(Date.now() / 1000)}.123456`,
    uuid: event.uuid ?? randomBytes(16).toString('hex'),
    type: 'event_callback',
    event: {
      app_id: 'cli_fake',
      tenant_key: 'fake-tenant',
      type: 'approval_instance',
      approval_code: event.approvalCode ?? randomUUID().toUpperCase(),
      instance_code: event.instanceCode,
      status: event.status,
      operate_time: Date.now(),
      instance_operate_time: String(Date.now()),
    },
  };
}

/**
 * The same approval event in schema 2.0 (`approval.instance.status_changed_v4`), as the SDK's
 * typings declare it: the event id and type in `header`, the instance in `event`.
 */
export function feishuApprovalPayloadV2(event: {
  eventId?: string;
  instanceCode: string;
  status: string;
  approvalCode?: string;
}): Record<string, unknown> {
  return {
    schema: '2.0',
    header: {
      event_id: event.eventId ?? randomBytes(16).toString('hex'),
      event_type: 'approval.instance.status_changed_v4',
      create_time: String(Date.now()),
      tenant_key: 'fake-tenant',
      app_id: 'cli_fake',
    },
    event: {
      approval_code: event.approvalCode ?? randomUUID().toUpperCase(),
      instance_code: event.instanceCode,
      status: event.status,
      operate_time: String(Date.now()),
    },
  };
}

export interface BuiltCallback {
  headers: Record<string, string>;
  query: Record<string, string>;
  rawBody: Buffer;
}

/** Feishu's encryption: AES-256-CBC, the key SHA-256 of the Encrypt Key, the IV before the ciphertext. */
export function feishuEncrypt(encryptKey: string, plain: string, iv: Buffer = randomBytes(16)): string {
  const key = createHash('sha256').update(encryptKey).digest();
  const cipher = createCipheriv('aes-256-cbc', key, iv);
  return Buffer.concat([iv, cipher.update(plain, 'utf8'), cipher.final()]).toString('base64');
}

/** The X-Lark-* headers Feishu sends with a body it signs: SHA-256 of timestamp, nonce, key and body. */
export function feishuSignatureHeaders(
  rawBody: Buffer | string,
  encryptKey: string,
  options: { timestamp?: string; nonce?: string } = {},
): Record<string, string> {
  const timestamp = options.timestamp ?? String(Math.floor(Date.now() / 1000));
  const nonce = options.nonce ?? randomBytes(8).toString('hex');
  return {
    'x-lark-request-timestamp': timestamp,
    'x-lark-request-nonce': nonce,
    'x-lark-signature': createHash('sha256')
      .update(timestamp + nonce + encryptKey)
      .update(rawBody)
      .digest('hex'),
  };
}

/**
 * The request Feishu would send for this payload: the verification token put where the payload's
 * schema carries it, the body encrypted when an Encrypt Key is given, and the X-Lark-* signature
 * headers on every callback but the URL check, which Feishu sends unsigned (`sign` overrides).
 */
export function feishuCallback(
  payload: Record<string, unknown>,
  options: { encryptKey?: string; token: string; sign?: boolean; timestamp?: string; nonce?: string },
): BuiltCallback {
  const header = payload.header as Record<string, unknown> | undefined;
  const withToken =
    payload.schema === '2.0' && header
      ? { ...payload, header: { ...header, token: options.token } }
      : { ...payload, token: options.token };
  const plain = JSON.stringify(withToken);
  const body = options.encryptKey ? JSON.stringify({ encrypt: feishuEncrypt(options.encryptKey, plain) }) : plain;
  const sign = options.sign ?? payload.type !== 'url_verification';
  const headers: Record<string, string> = {
    'content-type': 'application/json; charset=utf-8',
    ...(sign ? feishuSignatureHeaders(body, options.encryptKey ?? '', options) : {}),
  };
  return { headers, query: {}, rawBody: Buffer.from(body, 'utf8') };
}
