// One answer per door. A caller without the keys sends what it likes to the OA webhook, the Feishu
// callback, the DingTalk callback, the WeCom callback (its POST and its GET) and `/mcp`: unsigned, signed with another key or over another body,
// stale, random or truncated ciphertext, ciphertext of something that is not JSON, the wrong
// token. Every such request gets its door's single refusal, byte for byte, and leaves nothing
// behind; the reason is in the log, never in the answer. Generated requests go through the real
// routes, start path, worker, Temporal and PostgreSQL; only the vendors' open APIs are fakes. Two
// broken connectors, built here, show that the checks find what they are for.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import pino from 'pino';
import { AESCipher } from '@larksuiteoapi/node-sdk';
import { idempotencyKeyFor, orderWorkflowIdFor } from '../../domain/idempotency-key.js';
import type { OaVendor } from '../../domain/oa-approval.js';
import { feishuStatus } from '../../vendors/feishu/status.js';
import { signBody } from '../../domain-node/signature.js';
import type { Connector, InboundCallback, InboundRequest } from '../../vendors/connector.js';
import { FEISHU_SIGNATURE_HEADERS, feishuSignature } from '../../vendors/feishu/connector.js';
import { connectorsFromConfig } from '../../vendors/registry.js';
import { headerOf, jsonObjectOf, objectOf, sameSecret, textOf } from '../../vendors/inbound.js';
import { type MessageCrypto, openSealed } from '../../vendors/message-crypto.js';
import { xmlChildren } from '../../vendors/wecom/xml.js';
import { buildApp } from '../../edges/http/app.js';
import { OA_EVENT_COLUMNS } from '../../services/db/oa-events.js';
import {
  approvedDingTalkOrder,
  dingtalkApprovalPayload,
  dingtalkEncrypt,
  dingtalkSignature,
  type FakeDingTalk,
  randomDingTalkAesKey,
  startFakeDingTalk,
} from '../../tools/harness/fake-dingtalk.js';
import {
  approvedFeishuOrder,
  feishuApprovalPayload,
  feishuCallback,
  feishuEncrypt,
  feishuSignatureHeaders,
  type FakeFeishu,
  startFakeFeishu,
} from '../../tools/harness/fake-feishu.js';
import {
  approvedWeComOrder,
  type FakeWeCom,
  randomWeComAesKey,
  startFakeWeCom,
  wecomApprovalXml,
  wecomCallback,
  wecomEnvelope,
  type WeComRequest,
  wecomUrlCheck,
} from '../../tools/harness/fake-wecom.js';
import { messageSignature, sealMessage } from '../../tools/harness/message-crypto-scheme.js';
import {
  approval,
  createSku,
  orderCount,
  startTestService,
  statusReaches,
  testConfig,
  type TestService,
  uniqueApprovalNo,
  workflowExists,
} from '../../tools/harness/service.js';
import { signedHeaders, standardSignedHeaders, TEST_WEBHOOK_SECRET } from '../../tools/harness/signed-webhook.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const MAPPING = path.join(ROOT, 'examples/oa-form-mapping.json');
const FEISHU_ENCRYPT_KEY = 'door-feishu-encrypt-key-0123456789';
const FEISHU_TOKEN = 'door-feishu-verification-token';
const DINGTALK_TOKEN = 'door-dingtalk-token';
const DINGTALK_AES_KEY = randomDingTalkAesKey();
const WECOM_TOKEN = 'door-wecom-token';
const WECOM_AES_KEY = randomWeComAesKey();
const TOLERANCE_SECONDS = 300;
/** Per door: each kind of forgery several times over, and the file within a minute on a slow machine. */
const RUNS = 60;

type App = ReturnType<typeof buildApp>;
type Connectors = Partial<Record<OaVendor, Connector>>;

interface Sent {
  method?: 'GET' | 'POST';
  headers: Record<string, string>;
  query?: Record<string, string>;
  rawBody: Buffer | string;
}
/** What a caller can see of an answer: compared whole, so one different byte is a second answer. */
interface Answer {
  status: number;
  contentType: string;
  body: string;
}
interface LogLine {
  level: number;
  msg: string;
  reason?: string;
}

async function send(app: App, url: string, sent: Sent): Promise<Answer> {
  const response = await app.inject({
    method: sent.method ?? 'POST',
    url,
    headers: sent.headers,
    ...(sent.query ? { query: sent.query } : {}),
    payload: sent.rawBody,
  });
  return { status: response.statusCode, contentType: String(response.headers['content-type']), body: response.body };
}

const JSON_HEADERS = { 'content-type': 'application/json' };
const XML_HEADERS = { 'content-type': 'text/xml' };
const nowSeconds = () => Math.floor(Date.now() / 1000);

// ---- What a forger can send ----------------------------------------------------------------

/** Seconds outside the window, behind or ahead: at least one more than the tolerance, at most a day. */
const outsideWindow = fc
  .tuple(fc.integer({ min: TOLERANCE_SECONDS + 1, max: 86_400 }), fc.boolean())
  .map(([seconds, ahead]) => (ahead ? seconds : -seconds));
/** Text that is no JSON object: any string, JSON scalars and arrays, half an object. */
const notAJsonObject = fc
  .oneof(
    fc.string(),
    fc.constantFrom('null', '[]', '"text"', '42', 'hello world', '{"token":'),
    fc.jsonValue().map((value) => JSON.stringify(value) ?? 'null'),
  )
  .filter((text) => jsonObjectOf(text) === undefined);
const randomBase64 = fc
  .uint8Array({ minLength: 0, maxLength: 96 })
  .map((bytes) => Buffer.from(bytes).toString('base64'));
/** Another key or token: never the right one. */
const anotherSecret = (right: string) => fc.string({ minLength: 1 }).filter((secret) => secret !== right);
const statuses = fc.constantFrom('APPROVED', 'PENDING');

const webhookForgery = fc.oneof(
  fc.record({ kind: fc.constant('unsigned' as const) }),
  fc.record({ kind: fc.constant('another secret' as const), secret: anotherSecret(TEST_WEBHOOK_SECRET) }),
  fc.record({ kind: fc.constant('mutated body' as const), quantity: fc.integer({ min: 3, max: 1_000_000 }) }),
  fc.record({ kind: fc.constant('stale' as const), offset: outsideWindow }),
  fc.record({
    kind: fc.constant('malformed timestamp' as const),
    timestamp: fc.oneof(fc.constantFrom('', 'abc', '1e9', '-1', ' 1'), fc.string()),
  }),
  fc.record({ kind: fc.constant('garbage signature' as const), signature: fc.string() }),
  fc.record({ kind: fc.constant('another scheme' as const) }),
);
type WebhookForgery = typeof webhookForgery extends fc.Arbitrary<infer T> ? T : never;

const feishuForgery = fc.oneof(
  fc.record({ kind: fc.constant('unsigned event' as const), status: statuses }),
  fc.record({ kind: fc.constant('another key' as const), key: anotherSecret(FEISHU_ENCRYPT_KEY), status: statuses }),
  fc.record({ kind: fc.constant('mutated body' as const), status: statuses }),
  fc.record({ kind: fc.constant('stale' as const), offset: outsideWindow, status: statuses }),
  fc.record({ kind: fc.constant('random ciphertext' as const), ciphertext: randomBase64, signed: fc.boolean() }),
  fc.record({ kind: fc.constant('truncated ciphertext' as const), keep: fc.nat(), signed: fc.boolean() }),
  fc.record({ kind: fc.constant('ciphertext of no JSON' as const), text: notAJsonObject, signed: fc.boolean() }),
  fc.record({
    kind: fc.constant('wrong token' as const),
    token: anotherSecret(FEISHU_TOKEN),
    urlCheck: fc.boolean(),
    signed: fc.boolean(),
  }),
  fc.record({ kind: fc.constant('plain body' as const), signed: fc.boolean() }),
);
type FeishuForgery = typeof feishuForgery extends fc.Arbitrary<infer T> ? T : never;

const dingtalkForgery = fc.oneof(
  fc.record({ kind: fc.constant('unsigned' as const) }),
  fc.record({ kind: fc.constant('another token' as const), token: anotherSecret(DINGTALK_TOKEN) }),
  fc.record({ kind: fc.constant('mutated ciphertext' as const) }),
  fc.record({ kind: fc.constant('stale' as const), offset: outsideWindow }),
  fc.record({ kind: fc.constant('random ciphertext' as const), ciphertext: randomBase64 }),
  fc.record({ kind: fc.constant('truncated ciphertext' as const), keep: fc.nat() }),
  fc.record({ kind: fc.constant('ciphertext of no JSON' as const), text: notAJsonObject }),
  fc.record({ kind: fc.constant('another app key' as const), appKey: fc.stringMatching(/^ding[a-z0-9]{1,16}$/) }),
  fc.record({ kind: fc.constant('no ciphertext' as const), body: notAJsonObject }),
);
type DingTalkForgery = typeof dingtalkForgery extends fc.Arbitrary<infer T> ? T : never;

/**
 * Base64 ciphertext cut short by at least one data character: cutting only its `=` padding would
 * leave the same bytes, which a lenient decoder rightly takes as the genuine ciphertext.
 */
function truncated(ciphertext: string, keep: number): string {
  return ciphertext.slice(0, keep % ciphertext.replace(/=+$/, '').length);
}

/** Text that is no XML element: any string, JSON, half an element, two roots. */
const notXml = fc
  .oneof(
    fc.string(),
    fc.constantFrom('{"Event":"sys_approval_change"}', '<xml>', '<xml><SpNo>1</xml>', '<a/><b/>', 'hello world'),
  )
  .filter((text) => xmlChildren(text) === undefined);
const wecomForgery = fc.oneof(
  fc.record({ kind: fc.constant('unsigned' as const), urlCheck: fc.boolean() }),
  fc.record({ kind: fc.constant('another token' as const), token: anotherSecret(WECOM_TOKEN), urlCheck: fc.boolean() }),
  fc.record({ kind: fc.constant('mutated ciphertext' as const), urlCheck: fc.boolean() }),
  fc.record({ kind: fc.constant('stale' as const), offset: outsideWindow, urlCheck: fc.boolean() }),
  fc.record({ kind: fc.constant('random ciphertext' as const), ciphertext: randomBase64, urlCheck: fc.boolean() }),
  fc.record({ kind: fc.constant('truncated ciphertext' as const), keep: fc.nat(), urlCheck: fc.boolean() }),
  fc.record({ kind: fc.constant('ciphertext of no XML' as const), text: notXml }),
  fc.record({
    kind: fc.constant('another corp id' as const),
    corpId: fc.stringMatching(/^ww[a-z0-9]{1,16}$/),
    urlCheck: fc.boolean(),
  }),
  fc.record({ kind: fc.constant('no ciphertext' as const), body: fc.oneof(notXml, fc.constant('<xml></xml>')) }),
);
type WeComForgery = typeof wecomForgery extends fc.Arbitrary<infer T> ? T : never;

function forgedWebhook(forged: WebhookForgery, approvalNo: string, sku: string): Sent {
  const order = approval(approvalNo, sku);
  const body = JSON.stringify(order);
  switch (forged.kind) {
    case 'unsigned':
      return { headers: JSON_HEADERS, rawBody: body };
    case 'another secret':
      return { headers: signedHeaders(body, forged.secret), rawBody: body };
    case 'mutated body': {
      const lines = [{ ...order.order.lines[0], sku, quantity: forged.quantity, unitPrice: '10.50' }];
      return { headers: signedHeaders(body), rawBody: JSON.stringify({ ...order, order: { ...order.order, lines } }) };
    }
    case 'stale':
      return { headers: signedHeaders(body, TEST_WEBHOOK_SECRET, nowSeconds() + forged.offset), rawBody: body };
    case 'malformed timestamp': {
      const signature = signBody(TEST_WEBHOOK_SECRET, forged.timestamp, body);
      return {
        headers: { ...JSON_HEADERS, 'x-oa-timestamp': forged.timestamp, 'x-oa-signature': signature },
        rawBody: body,
      };
    }
    case 'garbage signature':
      return { headers: { ...signedHeaders(body), 'x-oa-signature': forged.signature }, rawBody: body };
    case 'another scheme':
      return { headers: standardSignedHeaders(body), rawBody: body };
  }
}

/** Signed as Feishu signs, with the right Encrypt Key, when `signed`; else without any X-Lark-* header. */
const feishuHeaders = (body: string, signed: boolean, options: { key?: string; timestamp?: string } = {}) => ({
  ...JSON_HEADERS,
  ...(signed ? feishuSignatureHeaders(body, options.key ?? FEISHU_ENCRYPT_KEY, options) : {}),
});
const encryptedBody = (plain: string) => JSON.stringify({ encrypt: feishuEncrypt(FEISHU_ENCRYPT_KEY, plain) });

function forgedFeishu(forged: FeishuForgery, instanceCode: string): Sent {
  const event = (status: string, token = FEISHU_TOKEN) =>
    JSON.stringify({ ...feishuApprovalPayload({ instanceCode, status }), token });
  switch (forged.kind) {
    case 'unsigned event': {
      const body = encryptedBody(event(forged.status));
      return { headers: feishuHeaders(body, false), rawBody: body };
    }
    case 'another key': {
      const body = encryptedBody(event(forged.status));
      return { headers: feishuHeaders(body, true, { key: forged.key }), rawBody: body };
    }
    case 'mutated body': {
      // Signed over one encryption of the event, sent with another: the same plaintext, other bytes.
      const plain = event(forged.status);
      return { headers: feishuHeaders(encryptedBody(plain), true), rawBody: encryptedBody(plain) };
    }
    case 'stale': {
      const body = encryptedBody(event(forged.status));
      return { headers: feishuHeaders(body, true, { timestamp: String(nowSeconds() + forged.offset) }), rawBody: body };
    }
    case 'random ciphertext': {
      const body = JSON.stringify({ encrypt: forged.ciphertext });
      return { headers: feishuHeaders(body, forged.signed), rawBody: body };
    }
    case 'truncated ciphertext': {
      const ciphertext = feishuEncrypt(FEISHU_ENCRYPT_KEY, event('APPROVED'));
      const body = JSON.stringify({ encrypt: truncated(ciphertext, forged.keep) });
      return { headers: feishuHeaders(body, forged.signed), rawBody: body };
    }
    case 'ciphertext of no JSON': {
      const body = encryptedBody(forged.text);
      return { headers: feishuHeaders(body, forged.signed), rawBody: body };
    }
    case 'wrong token': {
      const plain = forged.urlCheck
        ? JSON.stringify({ type: 'url_verification', challenge: instanceCode, token: forged.token })
        : event('APPROVED', forged.token);
      const body = encryptedBody(plain);
      return { headers: feishuHeaders(body, forged.signed), rawBody: body };
    }
    case 'plain body': {
      const body = event('APPROVED');
      return { headers: feishuHeaders(body, forged.signed), rawBody: body };
    }
  }
}

/** The forgeries of the message-encryption scheme DingTalk and WeCom share. */
type SealedForgery =
  | { kind: 'unsigned' }
  | { kind: 'another token'; token: string }
  | { kind: 'mutated ciphertext' }
  | { kind: 'stale'; offset: number }
  | { kind: 'random ciphertext'; ciphertext: string }
  | { kind: 'truncated ciphertext'; keep: number };

/** How one vendor carries the scheme: its signed query, where the ciphertext goes, a genuine one. */
interface SealedDoor {
  signedQuery: (ciphertext: string, token?: string, timestamp?: string) => Record<string, string>;
  sent: (ciphertext: string, query?: Record<string, string>) => Sent;
  genuine: () => string;
  /** The signed timestamp `offset` seconds from now, in the vendor's unit. */
  timestampIn: (offset: number) => string;
}

function forgedSealed(forged: SealedForgery, door: SealedDoor): Sent {
  const { signedQuery, sent, genuine } = door;
  switch (forged.kind) {
    case 'unsigned': {
      const { timestamp = '', nonce = '' } = signedQuery('');
      return sent(genuine(), { timestamp, nonce });
    }
    case 'another token': {
      const ciphertext = genuine();
      return sent(ciphertext, signedQuery(ciphertext, forged.token));
    }
    case 'mutated ciphertext':
      return sent(genuine(), signedQuery(genuine()));
    case 'stale': {
      const ciphertext = genuine();
      return sent(ciphertext, signedQuery(ciphertext, undefined, door.timestampIn(forged.offset)));
    }
    case 'random ciphertext':
      return sent(forged.ciphertext);
    case 'truncated ciphertext': {
      const ciphertext = genuine();
      return sent(truncated(ciphertext, forged.keep));
    }
  }
}

function forgedDingTalk(forged: DingTalkForgery, processInstanceId: string, appKey: string): Sent {
  const payload = JSON.stringify(dingtalkApprovalPayload({ processInstanceId, type: 'finish', result: 'agree' }));
  const signedQuery = (ciphertext: string, token = DINGTALK_TOKEN, timestamp = String(Date.now())) => {
    const nonce = randomBytes(4).toString('hex');
    return { msg_signature: dingtalkSignature(token, timestamp, nonce, ciphertext), timestamp, nonce };
  };
  const sent = (ciphertext: string, query: Record<string, string> = signedQuery(ciphertext)): Sent => ({
    headers: JSON_HEADERS,
    query,
    rawBody: JSON.stringify({ encrypt: ciphertext }),
  });
  switch (forged.kind) {
    case 'ciphertext of no JSON':
      return sent(dingtalkEncrypt(DINGTALK_AES_KEY, forged.text, appKey));
    case 'another app key':
      return sent(dingtalkEncrypt(DINGTALK_AES_KEY, payload, forged.appKey === appKey ? `${appKey}x` : forged.appKey));
    case 'no ciphertext':
      return { headers: JSON_HEADERS, query: signedQuery(''), rawBody: forged.body };
    default:
      return forgedSealed(forged, {
        signedQuery,
        sent,
        genuine: () => dingtalkEncrypt(DINGTALK_AES_KEY, payload, appKey),
        timestampIn: (offset) => String(Date.now() + offset * 1000),
      });
  }
}

function forgedWeCom(forged: WeComForgery, spNo: string, corpId: string): Sent {
  const message = wecomApprovalXml({ corpId, spNo, spStatus: 2 });
  const urlCheck = 'urlCheck' in forged && forged.urlCheck;
  const signedQuery = (ciphertext: string, token = WECOM_TOKEN, timestamp = String(nowSeconds())) => {
    const nonce = String(randomBytes(4).readUInt32BE());
    return { msg_signature: messageSignature(token, timestamp, nonce, ciphertext), timestamp, nonce };
  };
  // The URL check carries its ciphertext in the query, an event in the XML body; both are signed.
  const sent = (ciphertext: string, query: Record<string, string> = signedQuery(ciphertext)): Sent =>
    urlCheck
      ? { method: 'GET', headers: {}, query: { ...query, echostr: ciphertext }, rawBody: '' }
      : { headers: XML_HEADERS, query, rawBody: wecomEnvelope(ciphertext, corpId) };
  switch (forged.kind) {
    case 'ciphertext of no XML':
      return wecomCallback(forged.text, { token: WECOM_TOKEN, encodingAesKey: WECOM_AES_KEY, corpId });
    case 'another corp id':
      return sent(sealMessage(WECOM_AES_KEY, message, forged.corpId === corpId ? `${corpId}x` : forged.corpId));
    case 'no ciphertext':
      return { headers: XML_HEADERS, query: signedQuery(''), rawBody: forged.body };
    default:
      return forgedSealed(forged, {
        signedQuery,
        sent,
        genuine: () => sealMessage(WECOM_AES_KEY, urlCheck ? spNo : message, corpId),
        timestampIn: (offset) => String(nowSeconds() + offset),
      });
  }
}

// ---- The broken connectors the checks must find --------------------------------------------

/**
 * The Feishu connector as it was: X-Lark-Signature checked only when present, no timestamp bound,
 * so an unsigned body with the right token passes. Kept here, never in the product.
 */
function optionalSignatureFeishu(encryptKey: string, verificationToken: string): Connector {
  const cipher = new AESCipher(encryptKey);
  const refused = (reason: string): InboundCallback => ({ kind: 'refused', reason });
  const read = (request: InboundRequest): InboundCallback => {
    const outer = jsonObjectOf(request.rawBody.toString('utf8'));
    if (!outer) return refused('the body is not a JSON object');
    const signature = headerOf(request, FEISHU_SIGNATURE_HEADERS.signature);
    if (signature !== undefined) {
      const timestamp = headerOf(request, FEISHU_SIGNATURE_HEADERS.timestamp) ?? '';
      const nonce = headerOf(request, FEISHU_SIGNATURE_HEADERS.nonce) ?? '';
      if (!sameSecret(signature, feishuSignature(timestamp, nonce, encryptKey, request.rawBody))) {
        return refused('X-Lark-Signature does not match the body');
      }
    }
    if (typeof outer.encrypt !== 'string') return refused('a plain body arrived');
    let payload: Record<string, unknown> | undefined;
    try {
      payload = jsonObjectOf(cipher.decrypt(outer.encrypt));
    } catch {
      return refused('the body does not decrypt');
    }
    if (!payload) return refused('the decrypted body is not a JSON object');
    if (!sameSecret(textOf(payload.token), verificationToken)) return refused('the verification token does not match');
    const event = objectOf(payload.event);
    const eventId = textOf(payload.uuid);
    const instanceId = textOf(event?.instance_code);
    if (textOf(event?.type) !== 'approval_instance' || !eventId || !instanceId) {
      return { kind: 'other', eventType: 'unknown', ack: { status: 200, body: {} } };
    }
    const status = feishuStatus(event?.status);
    return {
      kind: 'event',
      event: {
        vendor: 'feishu',
        eventId,
        eventType: 'approval_instance',
        instanceId,
        status,
        definitionCode: undefined,
      },
      ack: { status: 200, body: {} },
    };
  };
  return { vendor: 'feishu', vendorDeadlineMs: 3_000, read };
}

/**
 * A connector that tells the caller why it refused (the decryption's error among them): the
 * padding oracle, answered as the route once answered, with the reason in the problem's detail.
 */
function reasonsInTheAnswer(connector: Connector): Connector {
  return {
    ...connector,
    read(request) {
      const read = connector.read(request);
      if (read.kind !== 'refused') return read;
      const detail = { type: '/problems/invalid-callback', title: 'Bad request', status: 400, detail: read.reason };
      return {
        kind: 'challenge',
        reply: { status: 400, headers: { 'content-type': 'application/problem+json' }, body: detail },
      };
    },
  };
}

/**
 * The WeCom URL check as it was: any signed, fresh ciphertext in `echostr` answered with its
 * plaintext, so a captured event replayed as a GET was answered with the approval it carried.
 * Kept here, never in the product.
 */
function echoesAnyPlaintextWeCom(genuine: Connector, crypto: MessageCrypto): Connector {
  return {
    ...genuine,
    read: (request) => {
      if (request.method !== 'GET') return genuine.read(request);
      const opened = openSealed(crypto, {
        signature: request.query.msg_signature,
        timestamp: request.query.timestamp,
        nonce: request.query.nonce,
        ciphertext: request.query.echostr,
      });
      if (!opened.ok) return { kind: 'refused', reason: opened.reason };
      return {
        kind: 'challenge',
        reply: { status: 200, headers: { 'content-type': 'text/plain' }, body: opened.message },
      };
    },
  };
}

describe('one answer per door: a forged or replayed request is refused alike and leaves nothing behind', () => {
  let service: TestService;
  let feishu: FakeFeishu;
  let dingtalk: FakeDingTalk;
  let wecom: FakeWeCom;
  /** The service's API with its own connectors, logging into `logged`. */
  let app: App;
  let sku: string;
  const logged: LogLine[] = [];
  const apps: App[] = [];

  before(async () => {
    feishu = await startFakeFeishu();
    dingtalk = await startFakeDingTalk();
    wecom = await startFakeWeCom();
    service = await startTestService({
      config: testConfig({
        OA_FORM_MAPPING: MAPPING,
        WEBHOOK_TOLERANCE_SECONDS: String(TOLERANCE_SECONDS),
        FEISHU_APP_ID: feishu.appId,
        FEISHU_APP_SECRET: feishu.appSecret,
        FEISHU_ENCRYPT_KEY,
        FEISHU_VERIFICATION_TOKEN: FEISHU_TOKEN,
        FEISHU_API_BASE_URL: feishu.url,
        DINGTALK_APP_KEY: dingtalk.appKey,
        DINGTALK_APP_SECRET: dingtalk.appSecret,
        DINGTALK_AES_KEY,
        DINGTALK_TOKEN,
        DINGTALK_API_BASE_URL: dingtalk.url,
        WECOM_CORP_ID: wecom.corpId,
        WECOM_AGENT_SECRET: wecom.agentSecret,
        WECOM_TOKEN,
        WECOM_ENCODING_AES_KEY: WECOM_AES_KEY,
        WECOM_API_BASE_URL: wecom.url,
      }),
    });
    app = await appWith(connectorsFromConfig(service.config));
    sku = await createSku(service.prisma, 10_000);
  });
  after(async () => {
    for (const each of apps) await each.close();
    await service.stop();
    await feishu.close();
    await dingtalk.close();
    await wecom.close();
  });

  async function appWith(connectors: Connectors): Promise<App> {
    const logger = pino({ level: 'info' }, { write: (line: string) => void logged.push(JSON.parse(line) as LogLine) });
    const built = buildApp({
      config: service.config,
      prisma: service.prisma,
      temporal: service.temporal,
      logger,
      connectors,
    });
    await built.ready();
    apps.push(built);
    return built;
  }

  /** Nothing of the id exists: no OA event, no claim, no workflow. */
  async function assertNothingRecorded(id: string) {
    const key = idempotencyKeyFor(id, 'MAIN');
    assert.equal(await service.prisma.oaEvent.count({ where: { instanceId: id } }), 0, 'no oa_event row');
    assert.equal(await service.prisma.idempotencyRecord.count({ where: { idempotentKey: key } }), 0, 'no claim');
    assert.equal(await workflowExists(service.temporal, orderWorkflowIdFor(key)), false, 'no workflow');
  }

  /**
   * The generated check of one door: every request `build` makes of a forgery is answered exactly
   * as `first` was (status, media type, body bytes), and nothing is recorded for the id it carries.
   */
  function doorCheck<T>(
    target: App,
    url: string,
    first: Answer,
    forgery: fc.Arbitrary<T>,
    build: (forged: T, id: string) => Sent,
  ) {
    return fc.asyncProperty(forgery, async (forged) => {
      const id = uniqueApprovalNo('DOOR');
      assert.deepEqual(await send(target, url, build(forged, id)), first, 'the door’s one answer');
      await assertNothingRecorded(id);
    });
  }

  /** The first refusal of a door: a body no one signed. */
  const firstRefusal = (target: App, url: string) => send(target, url, { headers: JSON_HEADERS, rawBody: '{}' });

  /** The door check run against the vendor's own connector made to answer with its reasons: it must fail. */
  async function assertCheckFindsReasonsInTheAnswer<T>(
    vendor: OaVendor,
    url: string,
    forgery: fc.Arbitrary<T>,
    build: (forged: T, id: string) => Sent,
  ) {
    const broken = await appWith({
      [vendor]: reasonsInTheAnswer(connectorsFromConfig(service.config)[vendor] as Connector),
    });
    const result = await fc.check(doorCheck(broken, url, await firstRefusal(broken, url), forgery, build), {
      numRuns: RUNS,
      endOnFailure: true,
    });
    assert.ok(result.failed, `the check must fail against a ${vendor} connector that names its reasons`);
  }

  describe('the OA webhook', () => {
    const url = '/webhooks/oa/approvals';

    it('every unsigned, mis-signed, tampered, stale or otherwise-signed approval gets the same 401, and nothing starts', async () => {
      const first = await firstRefusal(app, url);
      assert.equal(first.status, 401);
      await fc.assert(
        doorCheck(app, url, first, webhookForgery, (forged, id) => forgedWebhook(forged, id, sku)),
        { numRuns: RUNS },
      );
    });

    it('the reason of a refusal is logged at warn and never answered', async () => {
      const first = await firstRefusal(app, url);
      const stale = await send(
        app,
        url,
        forgedWebhook({ kind: 'stale', offset: -3_600 }, uniqueApprovalNo('DRW'), sku),
      );
      assert.deepEqual(stale, first);
      const line = logged.findLast((entry) => entry.msg === 'webhook refused: not authenticated');
      assert.equal(line?.level, 40, 'at warn');
      assert.match(line?.reason ?? '', /X-OA-Timestamp is more than 300 seconds off/);
      assert.doesNotMatch(stale.body, /timestamp|seconds|X-OA/i);
    });

    it('a genuine approval replayed inside the window is a duplicate: one workflow, one order', async () => {
      const approvalNo = uniqueApprovalNo('DRWREP');
      const body = JSON.stringify(approval(approvalNo, sku));
      const request = { headers: signedHeaders(body), rawBody: body };
      const answers = [await send(app, url, request), await send(app, url, request)];
      assert.deepEqual(
        answers.map((answer) => [answer.status, (JSON.parse(answer.body) as { duplicate: boolean }).duplicate]),
        [
          [202, false],
          [200, true],
        ],
      );
      const key = idempotencyKeyFor(approvalNo, 'MAIN');
      await statusReaches(service, key, 'SUBMITTED');
      assert.equal(await orderCount(service.prisma, key), 1);
    });
  });

  describe('the Feishu callback', () => {
    const url = '/webhooks/feishu';

    it('every unsigned, mis-signed, tampered, stale, undecryptable, non-JSON or wrong-token callback gets the same 401, and nothing is recorded', async () => {
      const first = await firstRefusal(app, url);
      assert.equal(first.status, 401);
      assert.equal(first.contentType, 'application/problem+json; charset=utf-8');
      await fc.assert(doorCheck(app, url, first, feishuForgery, forgedFeishu), { numRuns: RUNS });
    });

    it('the check finds the optional-signature connector: an unsigned event with the right token gets through', async (t) => {
      const broken = await appWith({ feishu: optionalSignatureFeishu(FEISHU_ENCRYPT_KEY, FEISHU_TOKEN) });
      const result = await fc.check(
        doorCheck(broken, url, await firstRefusal(broken, url), feishuForgery, forgedFeishu),
        {
          numRuns: 200,
          endOnFailure: true,
        },
      );
      assert.ok(result.failed, 'the check must fail against the optional-signature connector');
      const [forged] = result.counterexample ?? [];
      t.diagnostic(`found: ${JSON.stringify(forged)}`);
      // An unsigned event passes it, and so does a genuine one replayed a day later.
      assert.match(JSON.stringify(forged), /unsigned event|stale/);
    });

    it('the check finds a connector that answers with the decryption’s error: two different answers', async (t) => {
      const broken = await appWith({
        feishu: reasonsInTheAnswer(connectorsFromConfig(service.config).feishu as Connector),
      });
      const result = await fc.check(
        doorCheck(broken, url, await firstRefusal(broken, url), feishuForgery, forgedFeishu),
        {
          numRuns: RUNS,
          endOnFailure: true,
        },
      );
      assert.ok(result.failed, 'the check must fail against a connector that names its reasons');
      t.diagnostic(`found: ${JSON.stringify(result.counterexample?.[0])}`);
    });

    it('a genuine URL check, unsigned as Feishu sends it, is answered with its challenge', async () => {
      const check = feishuCallback(
        { type: 'url_verification', challenge: 'door-challenge' },
        { encryptKey: FEISHU_ENCRYPT_KEY, token: FEISHU_TOKEN },
      );
      assert.equal(check.headers['x-lark-signature'], undefined);
      const answer = await send(app, url, check);
      assert.deepEqual([answer.status, JSON.parse(answer.body)], [200, { challenge: 'door-challenge' }]);
    });

    it('a genuine event replayed inside the window is a duplicate: one oa_event row, one form read, one order', async () => {
      const id = uniqueApprovalNo('DRFREP');
      const key = idempotencyKeyFor(id, 'MAIN');
      feishu.register(id, approvedFeishuOrder(sku, 2, 10.5));
      const callback = feishuCallback(feishuApprovalPayload({ instanceCode: id, status: 'APPROVED' }), {
        encryptKey: FEISHU_ENCRYPT_KEY,
        token: FEISHU_TOKEN,
      });
      const answers = [await send(app, url, callback), await send(app, url, callback)];
      assert.deepEqual(
        answers.map((answer) => [answer.status, answer.body]),
        [
          [200, '{}'],
          [200, '{}'],
        ],
      );
      await statusReaches(service, key, 'SUBMITTED');
      assert.equal(await service.prisma.oaEvent.count({ where: { instanceId: id } }), 1);
      assert.equal(await orderCount(service.prisma, key), 1);
      assert.equal(feishu.reads(id), 1);
    });

    it('the padding oracle is closed: 256 ciphertexts one IV byte apart get one answer, unsigned and signed', async (t) => {
      // One block of ciphertext: the last IV byte decides the padding byte, so most of the 256
      // fail to decrypt and a few decrypt to text that is not JSON, the two answers of an oracle.
      const genuine = Buffer.from(feishuEncrypt(FEISHU_ENCRYPT_KEY, 'hello world'), 'base64');
      const bodies = Array.from({ length: 256 }, (_, byte) => {
        const ciphertext = Buffer.from(genuine);
        ciphertext[15] = byte;
        return JSON.stringify({ encrypt: ciphertext.toString('base64') });
      });
      const experiment = async (target: App, signed: boolean) => {
        const since = logged.length;
        const answers = new Set<string>();
        for (const body of bodies) {
          answers.add(JSON.stringify(await send(target, url, { headers: feishuHeaders(body, signed), rawBody: body })));
        }
        const reasons = new Set(
          logged
            .slice(since)
            .filter((line) => line.msg === 'OA callback refused')
            .map((line) => line.reason),
        );
        return { answers: answers.size, reasons: [...reasons] };
      };
      const report = (what: string, result: { answers: number; reasons: unknown[] }) => {
        const line = `${what}: ${result.answers} distinct answer(s) to 256 ciphertexts; reasons logged: ${result.reasons.join(' | ') || 'none'}`;
        t.diagnostic(line);
        console.log(line);
      };

      const unsigned = await experiment(app, false);
      report('unsigned', unsigned);
      const signed = await experiment(app, true);
      report('signed over the garbage', signed);
      assert.equal(unsigned.answers, 1);
      assert.equal(signed.answers, 1);
      assert.ok(signed.reasons.length >= 2, 'both failures were met (padding and not JSON), and still answered alike');

      const leaky = await appWith({
        feishu: reasonsInTheAnswer(connectorsFromConfig(service.config).feishu as Connector),
      });
      const oracle = await experiment(leaky, true);
      report('a connector that answers with its reason', oracle);
      assert.ok(oracle.answers >= 2, 'the experiment sees the oracle where there is one');
    });
  });

  describe('the DingTalk callback', () => {
    const url = '/webhooks/dingtalk';

    it('every unsigned, mis-signed, tampered, stale, undecryptable, non-JSON or misaddressed callback gets the same 401, and nothing is recorded', async () => {
      const first = await firstRefusal(app, url);
      assert.equal(first.status, 401);
      await fc.assert(
        doorCheck(app, url, first, dingtalkForgery, (forged, id) => forgedDingTalk(forged, id, dingtalk.appKey)),
        { numRuns: RUNS },
      );
    });

    it('the check finds a connector that answers with the decryption’s error: two different answers', async () => {
      await assertCheckFindsReasonsInTheAnswer('dingtalk', url, dingtalkForgery, (forged, id) =>
        forgedDingTalk(forged, id, dingtalk.appKey),
      );
    });

    it('a genuine event replayed inside the window is a duplicate: one oa_event row, one form read, one order', async () => {
      const id = uniqueApprovalNo('DRDREP');
      const key = idempotencyKeyFor(id, 'MAIN');
      dingtalk.register(id, approvedDingTalkOrder(sku, 1, 3, 'CUST-DOOR'));
      const payload = JSON.stringify(
        dingtalkApprovalPayload({ processInstanceId: id, type: 'finish', result: 'agree' }),
      );
      const ciphertext = dingtalkEncrypt(DINGTALK_AES_KEY, payload, dingtalk.appKey);
      const timestamp = String(Date.now());
      const callback: Sent = {
        headers: JSON_HEADERS,
        query: {
          msg_signature: dingtalkSignature(DINGTALK_TOKEN, timestamp, 'n0nce', ciphertext),
          timestamp,
          nonce: 'n0nce',
        },
        rawBody: JSON.stringify({ encrypt: ciphertext }),
      };
      const answers = [await send(app, url, callback), await send(app, url, callback)];
      assert.deepEqual(
        answers.map((answer) => answer.status),
        [200, 200],
      );
      await statusReaches(service, key, 'SUBMITTED');
      assert.equal(await service.prisma.oaEvent.count({ where: { instanceId: id } }), 1);
      assert.equal(await orderCount(service.prisma, key), 1);
      assert.equal(dingtalk.reads(id), 1);
    });
  });

  describe('the WeCom callback', () => {
    const url = '/webhooks/wecom';

    it('every unsigned, mis-signed, tampered, stale, undecryptable, non-XML or misaddressed callback or URL check gets the same 401, and nothing is recorded', async () => {
      const first = await firstRefusal(app, url);
      assert.equal(first.status, 401);
      // The URL check's GET is the same door: its refusal is the POST's, byte for byte.
      assert.deepEqual(await send(app, url, { method: 'GET', headers: {}, rawBody: '' }), first);
      await fc.assert(
        doorCheck(app, url, first, wecomForgery, (forged, id) => forgedWeCom(forged, id, wecom.corpId)),
        { numRuns: RUNS },
      );
    });

    it('a wrong signature, a stale timestamp and an undecryptable body are each logged with their reason, never answered', async () => {
      const first = await firstRefusal(app, url);
      const cases: Array<[WeComForgery, RegExp]> = [
        [{ kind: 'another token', token: 'not-the-token', urlCheck: false }, /msg_signature does not match/],
        [{ kind: 'stale', offset: -3_600, urlCheck: false }, /timestamp is more than 300 seconds off/],
        [{ kind: 'random ciphertext', ciphertext: 'AAAA', urlCheck: false }, /does not decrypt|another corp id/],
      ];
      for (const [forged, reason] of cases) {
        const id = uniqueApprovalNo('DRWC');
        assert.deepEqual(await send(app, url, forgedWeCom(forged, id, wecom.corpId)), first);
        await assertNothingRecorded(id);
        const line = logged.findLast((entry) => entry.msg === 'OA callback refused');
        assert.equal(line?.level, 40);
        assert.match(line?.reason ?? '', reason);
      }
    });

    it('the check finds a connector that answers with the decryption’s error: two different answers', async () => {
      await assertCheckFindsReasonsInTheAnswer('wecom', url, wecomForgery, (forged, id) =>
        forgedWeCom(forged, id, wecom.corpId),
      );
    });

    /** A genuine event callback, captured, and sent back as a URL check: its query, its Encrypt as the echostr. */
    const capturedEventAsUrlCheck = fc.record({
      spStatus: fc.constantFrom(1, 2, 3, 4, 6, 7, 10),
      templateId: fc.stringMatching(/^[A-Za-z0-9]{1,32}$/),
    });
    const replayedAsUrlCheck = (event: { spStatus: number; templateId: string }, id: string): Sent => {
      const crypto = { token: WECOM_TOKEN, encodingAesKey: WECOM_AES_KEY, corpId: wecom.corpId };
      const callback = wecomCallback(wecomApprovalXml({ corpId: wecom.corpId, spNo: id, ...event }), crypto);
      const encrypt = xmlChildren(callback.rawBody.toString('utf8'))?.get('Encrypt');
      assert.ok(encrypt);
      return { method: 'GET', headers: {}, query: { ...callback.query, echostr: encrypt }, rawBody: '' };
    };

    it('a captured event replayed as a URL check gets the door’s one refusal, never the approval it carries', async () => {
      const first = await firstRefusal(app, url);
      await fc.assert(doorCheck(app, url, first, capturedEventAsUrlCheck, replayedAsUrlCheck), { numRuns: RUNS });
    });

    it('the check finds a URL check that answers any plaintext it can open', async () => {
      const crypto: MessageCrypto = {
        token: WECOM_TOKEN,
        aesKey: WECOM_AES_KEY,
        receiverId: wecom.corpId,
        toleranceSeconds: TOLERANCE_SECONDS,
        timestampUnit: 'seconds',
        now: Date.now,
        names: { aesKey: 'EncodingAESKey', receiver: 'corp id' },
      };
      const genuine = connectorsFromConfig(service.config).wecom as Connector;
      const broken = await appWith({ wecom: echoesAnyPlaintextWeCom(genuine, crypto) });
      const result = await fc.check(
        doorCheck(broken, url, await firstRefusal(broken, url), capturedEventAsUrlCheck, replayedAsUrlCheck),
        { numRuns: RUNS, endOnFailure: true },
      );
      assert.ok(result.failed, 'the check must fail against a URL check that echoes an event');
    });

    it('a genuine URL check is answered with its plaintext, and a genuine event replayed inside the window is a duplicate', async () => {
      const crypto = { token: WECOM_TOKEN, encodingAesKey: WECOM_AES_KEY, corpId: wecom.corpId };
      const check = await send(app, url, wecomUrlCheck('door-echo', crypto));
      assert.deepEqual([check.status, check.body], [200, 'door-echo']);

      const id = uniqueApprovalNo('DRWCREP');
      const key = idempotencyKeyFor(id, 'MAIN');
      wecom.register(id, approvedWeComOrder(sku, 1, 3));
      const callback: WeComRequest = wecomCallback(
        wecomApprovalXml({ corpId: wecom.corpId, spNo: id, spStatus: 2 }),
        crypto,
      );
      const answers = [await send(app, url, callback), await send(app, url, callback)];
      assert.deepEqual(
        answers.map((answer) => [answer.status, answer.body]),
        [
          [200, ''],
          [200, ''],
        ],
      );
      await statusReaches(service, key, 'SUBMITTED');
      assert.equal(await service.prisma.oaEvent.count({ where: { instanceId: id } }), 1);
      assert.equal(await orderCount(service.prisma, key), 1);
      assert.equal(wecom.reads(id), 1);
    });
  });

  describe('the MCP endpoint', () => {
    const TOKEN = 'door-mcp-token-0123456789';
    const PREVIOUS = 'door-mcp-previous-token-0123';
    /** What a caller without either token may put in Authorization: nothing, another scheme, a near miss. */
    const wrongAuthorization = fc.oneof(
      fc.constant(undefined),
      fc.string().map((text) => text.replace(/[^\x21-\x7e ]/g, '')),
      fc.constantFrom(`Basic ${TOKEN}`, `Token ${TOKEN}`, 'Bearer', 'Bearer ', `${TOKEN}`),
      fc.stringMatching(/^[A-Za-z0-9._~+/-]{1,64}$/).map((guess) => `Bearer ${guess}`),
      fc.constantFrom(TOKEN, PREVIOUS).chain((token) =>
        fc
          .oneof(
            fc.constant(token.slice(1)),
            fc.constant(token.slice(0, -1)),
            fc.constant(token + 'x'),
            fc.constant(token.toUpperCase()),
            fc.nat({ max: token.length - 1 }).map((at) => token.slice(0, at) + '_' + token.slice(at + 1)),
          )
          .filter((near) => near !== TOKEN && near !== PREVIOUS)
          .map((near) => `Bearer ${near}`),
      ),
    );
    const call = (approvalNo: string) =>
      JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'submit_approved_order', arguments: approval(approvalNo, sku) },
      });
    const mcpHeaders = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    const withAuthorization = (authorization: string | undefined): Record<string, string> =>
      authorization === undefined ? mcpHeaders : { ...mcpHeaders, authorization };

    it('every request without the token or the one it replaces gets the same 401, and no tool runs', async () => {
      const mcp = buildApp({
        config: { ...service.config, mcp: { ...service.config.mcp, token: TOKEN, previousToken: PREVIOUS } },
        prisma: service.prisma,
        temporal: service.temporal,
        logger: pino({ level: 'silent' }),
        connectors: {},
      });
      await mcp.ready();
      apps.push(mcp);
      const first = await send(mcp, '/mcp', { headers: mcpHeaders, rawBody: call(uniqueApprovalNo('DMCP')) });
      assert.equal(first.status, 401);
      await fc.assert(
        fc.asyncProperty(wrongAuthorization, async (authorization) => {
          const approvalNo = uniqueApprovalNo('DMCP');
          const answer = await send(mcp, '/mcp', {
            headers: withAuthorization(authorization),
            rawBody: call(approvalNo),
          });
          assert.deepEqual(answer, first, 'the door’s one answer');
          await assertNothingRecorded(approvalNo);
        }),
        { numRuns: RUNS },
      );
      // The tokens themselves are served: the refusals above were about the token, not the request.
      for (const token of [TOKEN, PREVIOUS]) {
        const served = await send(mcp, '/mcp', {
          headers: withAuthorization(`Bearer ${token}`),
          rawBody: call(uniqueApprovalNo('DMCPOK')),
        });
        assert.equal(served.status, 200, served.body);
      }
    });
  });

  describe('an authentic callback the service cannot use', () => {
    const feishuEvent = (payload: Record<string, unknown>) =>
      send(app, '/webhooks/feishu', feishuCallback(payload, { encryptKey: FEISHU_ENCRYPT_KEY, token: FEISHU_TOKEN }));

    it('an event id longer than its column (129 characters) is acknowledged and logged, and nothing is recorded', async () => {
      const id = uniqueApprovalNo('DRLONG');
      const uuid = 'u'.repeat(OA_EVENT_COLUMNS.eventId + 1);
      const answer = await feishuEvent(feishuApprovalPayload({ uuid, instanceCode: id, status: 'APPROVED' }));
      assert.deepEqual([answer.status, answer.body], [200, '{}'], 'the vendor’s success reply, not a 500');
      await assertNothingRecorded(id);
      const line = logged.findLast((entry) => entry.msg === 'approval event unusable: acknowledged, nothing recorded');
      assert.equal(line?.level, 40);
      assert.match(line?.reason ?? '', /eventId is 129 characters; the column holds 1–128/);
    });

    it('an event id of exactly 128 characters is recorded', async () => {
      const id = uniqueApprovalNo('DREDGE');
      const uuid = `${id}-`.padEnd(OA_EVENT_COLUMNS.eventId, 'e');
      const answer = await feishuEvent(feishuApprovalPayload({ uuid, instanceCode: id, status: 'PENDING' }));
      assert.equal(answer.status, 200);
      const rows = await service.prisma.oaEvent.findMany({ where: { instanceId: id } });
      assert.deepEqual(
        rows.map((row) => row.eventId.length),
        [128],
      );
    });

    it('an instance id that cannot be an approval number (65 characters, or not ASCII) is acknowledged, and nothing is recorded', async () => {
      for (const instanceCode of [
        'I'.repeat(OA_EVENT_COLUMNS.instanceId + 1),
        `审批-${randomBytes(3).toString('hex')}`,
      ]) {
        const answer = await feishuEvent(feishuApprovalPayload({ instanceCode, status: 'APPROVED' }));
        assert.deepEqual([answer.status, answer.body], [200, '{}']);
        assert.equal(await service.prisma.oaEvent.count({ where: { instanceId: instanceCode } }), 0);
      }
      const line = logged.findLast((entry) => entry.msg === 'approval event unusable: acknowledged, nothing recorded');
      assert.match(line?.reason ?? '', /instance id: approvalNo .* is not a plain ASCII approval number/);
    });

    it('a DingTalk event id longer than its column is acknowledged with the encrypted success, and nothing is recorded', async () => {
      const id = uniqueApprovalNo('DRDLONG');
      const payload = dingtalkApprovalPayload({
        processInstanceId: id,
        type: 'finish',
        result: 'agree',
        eventId: 'E'.repeat(OA_EVENT_COLUMNS.eventId + 1),
      });
      const ciphertext = dingtalkEncrypt(DINGTALK_AES_KEY, JSON.stringify(payload), dingtalk.appKey);
      const timestamp = String(Date.now());
      const answer = await send(app, '/webhooks/dingtalk', {
        headers: JSON_HEADERS,
        query: { msg_signature: dingtalkSignature(DINGTALK_TOKEN, timestamp, 'n', ciphertext), timestamp, nonce: 'n' },
        rawBody: JSON.stringify({ encrypt: ciphertext }),
      });
      assert.equal(answer.status, 200);
      assert.ok((JSON.parse(answer.body) as { encrypt?: string }).encrypt, 'the encrypted success');
      await assertNothingRecorded(id);
    });

    it('an approval event without its uuid is acknowledged as unusable, not refused', async () => {
      const id = uniqueApprovalNo('DRNOID');
      const payload = feishuApprovalPayload({ instanceCode: id, status: 'APPROVED' });
      delete payload.uuid;
      const answer = await feishuEvent(payload);
      assert.deepEqual([answer.status, answer.body], [200, '{}']);
      await assertNothingRecorded(id);
      const line = logged.findLast((entry) => entry.msg === 'OA callback acknowledged: unusable, nothing recorded');
      assert.deepEqual([line?.level, line?.reason], [40, 'approval_instance event without a uuid']);
    });
  });

  it('no log line carries a key, a token, a secret or decrypted text', () => {
    const text = logged.map((line) => JSON.stringify(line)).join('\n');
    assert.ok(logged.length > 100, `the doors logged (${logged.length} lines)`);
    for (const secret of [
      FEISHU_ENCRYPT_KEY,
      FEISHU_TOKEN,
      DINGTALK_TOKEN,
      DINGTALK_AES_KEY,
      WECOM_TOKEN,
      WECOM_AES_KEY,
      TEST_WEBHOOK_SECRET,
      'hello world',
    ]) {
      assert.ok(!text.includes(secret), `a log line holds ${secret.slice(0, 4)}…`);
    }
  });
});
