// A fake DingTalk open API (the new API on api.dingtalk.com: OAuth2 access token, process
// instance read with its comments as operation records, a comment's post, interactive cards:
// fake-dingtalk-cards.ts, and the Stream gateway: fake-dingtalk-stream.ts) for reader, card and connector tests,
// and the builder of callbacks exactly as DingTalk sends them (AES-256-CBC with the aes_key, the
// app key appended, SHA-1 signature in the query). Built with node:crypto alone, apart from the
// code under test (message-crypto-scheme.ts).
import { randomBytes } from 'node:crypto';
import { type FakeDingTalkCards, fakeDingTalkCards } from './fake-dingtalk-cards.js';
import { type FakeDingTalkStream, fakeStreamGateway, type FakeStreamGateway } from './fake-dingtalk-stream.js';
import { type Answer, type FakeOaApi, type RequestContext, startFakeOaApi } from './fake-oa-api.js';
import { messageSignature, openMessage, randomAesKey, sealMessage } from './message-crypto-scheme.js';

export interface DingTalkComponent {
  id?: string;
  name: string;
  componentType: string;
  /** A `TableField`'s value is a JSON string of rows `[{ rowValue: [{ label, value }] }]`. */
  value: string;
}

export interface DingTalkInstance {
  status: string;
  result?: string;
  formComponentValues: DingTalkComponent[];
  finishTime?: string;
  /** The comments on it, oldest first: each read answers them as `operationRecords` of type ADD_REMARK. */
  comments?: { text: string; userId: string }[];
}

/** A completed, agreed instance whose form the example mapping (examples/oa-form-mapping.json) reads as one line. */
export function approvedDingTalkOrder(
  sku: string,
  quantity: number,
  unitPrice: number,
  customer: string,
): DingTalkInstance {
  return {
    status: 'COMPLETED',
    result: 'agree',
    finishTime: new Date().toISOString(),
    formComponentValues: [
      { name: 'Customer ID', componentType: 'TextField', value: customer },
      {
        name: '明细',
        componentType: 'TableField',
        value: JSON.stringify([
          {
            rowValue: [
              { label: '物料编码', value: sku },
              { label: '数量', value: String(quantity) },
              { label: '单价', value: String(unitPrice) },
            ],
          },
        ]),
      },
    ],
  };
}

export interface FakeDingTalk extends FakeOaApi<DingTalkInstance> {
  appKey: string;
  appSecret: string;
  /** The Stream gateway on the same base URL (DINGTALK_API_BASE_URL). */
  stream: FakeDingTalkStream;
  /** The comments on a registered instance (`POST /v1.0/workflow/processInstances/comments`), oldest first. */
  commentsOn(instanceId: string): { text: string; userId: string }[];
  /** Every comment POST that arrived, refused or not. */
  commentPosts(): number;
  /** Its interactive cards (fake-dingtalk-cards.ts). */
  cards: FakeDingTalkCards;
}

/**
 * The settings that turn the DingTalk connector on against `fake`: its app, its open API (and Stream
 * gateway), the callback's `aesKey` and `token`, and the form mapping file.
 */
export function dingtalkSettings(
  fake: Pick<FakeDingTalk, 'appKey' | 'appSecret' | 'url'>,
  callback: { aesKey: string; token: string },
  formMapping: string,
): Record<string, string> {
  return {
    OA_FORM_MAPPING: formMapping,
    DINGTALK_APP_KEY: fake.appKey,
    DINGTALK_APP_SECRET: fake.appSecret,
    DINGTALK_AES_KEY: callback.aesKey,
    DINGTALK_TOKEN: callback.token,
    DINGTALK_API_BASE_URL: fake.url,
  };
}

export async function startFakeDingTalk(
  options: { tokenTtlSeconds?: number; redeliverAfterMs?: number } = {},
): Promise<FakeDingTalk> {
  const appKey = `ding${randomBytes(8).toString('hex')}`;
  const appSecret = randomBytes(24).toString('base64url');
  // The gateway answers on the API's own server, so it is made once the server is.
  const route: { gateway?: FakeStreamGateway } = {};
  const registered = new Map<string, DingTalkInstance>();
  const cards = fakeDingTalkCards();
  let commentPosts = 0;
  /** `POST /v1.0/workflow/processInstances/comments`: a comment on a registered instance, as `commentUserId`. */
  const comment = (method: string, url: URL, body: unknown, request: RequestContext): Answer | undefined => {
    if (method !== 'POST' || url.pathname !== '/v1.0/workflow/processInstances/comments') return undefined;
    commentPosts += 1;
    const token = request.headers['x-acs-dingtalk-access-token'];
    if (!request.tokenValid(Array.isArray(token) ? token[0] : token)) {
      return { status: 401, body: { code: 'InvalidAuthentication', message: 'access token invalid' } };
    }
    const { processInstanceId, text, commentUserId } = (body ?? {}) as Record<string, unknown>;
    if (typeof text !== 'string' || text.length === 0 || typeof commentUserId !== 'string' || !commentUserId) {
      return { status: 400, body: { code: 'MissingParameter', message: 'text and commentUserId are required' } };
    }
    const instance = typeof processInstanceId === 'string' ? registered.get(processInstanceId) : undefined;
    if (!instance) return { status: 400, body: { code: 'processInstanceNotFound', message: 'instance not found' } };
    instance.comments = [...(instance.comments ?? []), { text, userId: commentUserId }];
    return { status: 200, body: { success: true, result: true } };
  };
  const api = await startFakeOaApi<DingTalkInstance>(
    {
      otherRequest: (method, url, body, request) =>
        route.gateway?.endpointAnswer(method, url, body) ??
        cards.request(method, url, body, request) ??
        comment(method, url, body, request),
      tokenRequest: (method, url, body, issue) => {
        if (method !== 'POST' || url.pathname !== '/v1.0/oauth2/accessToken') return undefined;
        const credentials = body as { appKey?: string; appSecret?: string } | undefined;
        if (credentials?.appKey !== appKey || credentials.appSecret !== appSecret) {
          return { status: 400, body: { code: 'invalidClientIdOrSecret', message: 'wrong appKey or appSecret' } };
        }
        const { token, ttlSeconds } = issue();
        return { status: 200, body: { accessToken: token, expireIn: ttlSeconds } };
      },
      instanceRequest: (method, url, headers) => {
        if (method !== 'GET' || url.pathname !== '/v1.0/workflow/processInstances') return undefined;
        const token = headers['x-acs-dingtalk-access-token'];
        return {
          token: Array.isArray(token) ? token[0] : token,
          instanceId: url.searchParams.get('processInstanceId') ?? '',
        };
      },
      instanceAnswer: (value) => {
        const instance = value as DingTalkInstance;
        return {
          status: 200,
          body: {
            success: true,
            result: {
              status: instance.status,
              result: instance.result ?? '',
              finishTime: instance.finishTime,
              formComponentValues: instance.formComponentValues,
              operationRecords: (instance.comments ?? []).map((each) => ({
                userId: each.userId,
                date: new Date().toISOString(),
                type: 'ADD_REMARK',
                result: 'NONE',
                remark: each.text,
              })),
            },
          },
        };
      },
      notFound: () => ({ status: 400, body: { code: 'processInstanceNotFound', message: 'instance not found' } }),
      tokenInvalid: () => ({ status: 401, body: { code: 'InvalidAuthentication', message: 'access token invalid' } }),
      error: (status) => ({
        status,
        body: {
          code: status === 429 ? 'Forbidden.AccessDenied.QpsLimitForApi' : 'ServiceUnavailable',
          message: 'error',
        },
      }),
    },
    options,
  );
  const streamGateway = fakeStreamGateway(api.server, () => api.url, { appKey, appSecret }, options);
  route.gateway = streamGateway;
  return {
    ...api,
    register: (instanceId, instance) => {
      registered.set(instanceId, instance);
      api.register(instanceId, instance);
    },
    commentsOn: (instanceId) => [...(registered.get(instanceId)?.comments ?? [])],
    commentPosts: () => commentPosts,
    cards,
    appKey,
    appSecret,
    stream: streamGateway,
    close: async () => {
      streamGateway.close();
      await api.close();
    },
  };
}

/** A bpms_instance_change event's data as the Stream pushes it (the callback's fields, no EventType). */
export function dingtalkStreamApproval(event: {
  processInstanceId: string;
  type: string;
  result?: string;
  processCode?: string;
}): { eventType: string; data: Record<string, unknown> } {
  const { EventType, ...data } = dingtalkApprovalPayload(event);
  return {
    eventType: String(EventType),
    data: { ...data, ...(event.processCode === undefined ? {} : { processCode: event.processCode }) },
  };
}

/** A bpms_instance_change event as DingTalk pushes it. */
export function dingtalkApprovalPayload(event: {
  processInstanceId: string;
  type: string;
  result?: string;
  eventId?: string;
}): Record<string, unknown> {
  return {
    EventType: 'bpms_instance_change',
    processInstanceId: event.processInstanceId,
    corpId: 'dingfakecorp',
    createTime: Date.now() - 60_000,
    finishTime: Date.now(),
    title: 'Purchase request',
    type: event.type,
    ...(event.result === undefined ? {} : { result: event.result }),
    ...(event.eventId === undefined ? {} : { EventId: event.eventId }),
    staffId: 'staff-1',
    processCode: 'PROC-FAKE',
  };
}

/** DingTalk's message encryption (message-crypto-scheme.ts), the app key as the receiver. */
export const dingtalkEncrypt = (aesKey: string, message: string, key: string): string =>
  sealMessage(aesKey, message, key);

export function dingtalkDecrypt(aesKey: string, ciphertext: string): { message: string; key: string } {
  const { message, receiverId } = openMessage(aesKey, ciphertext);
  return { message, key: receiverId };
}

export const dingtalkSignature = messageSignature;

/** The request DingTalk would send for this payload: encrypted body, signature in the query. */
export function dingtalkCallback(
  payload: Record<string, unknown>,
  options: { aesKey: string; token: string; appKey: string; timestamp?: string; nonce?: string },
): { headers: Record<string, string>; query: Record<string, string>; rawBody: Buffer } {
  const ciphertext = dingtalkEncrypt(options.aesKey, JSON.stringify(payload), options.appKey);
  const timestamp = options.timestamp ?? String(Date.now());
  const nonce = options.nonce ?? randomBytes(4).toString('hex');
  return {
    headers: { 'content-type': 'application/json' },
    query: { msg_signature: dingtalkSignature(options.token, timestamp, nonce, ciphertext), timestamp, nonce },
    rawBody: Buffer.from(JSON.stringify({ encrypt: ciphertext }), 'utf8'),
  };
}

/** A random aes_key as the console generates one: 43 characters of base64. */
export const randomDingTalkAesKey = randomAesKey;
