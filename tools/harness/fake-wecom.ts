// A fake WeCom (企业微信) server API (gettoken, oa/getapprovaldetail, and message/send with its
// duplicate check for the receipts) for reader and receipt tests, and the
// builder of callbacks exactly as WeCom sends them: the URL check's GET with an encrypted echostr,
// and the XML event whose Encrypt holds the encrypted sys_approval_change, msg_signature and a
// timestamp in seconds in the query. Built with node:crypto alone, apart from the code under test
// (message-crypto-scheme.ts).
import { randomBytes } from 'node:crypto';
import { type Answer, type FakeOaApi, type RequestContext, startFakeOaApi } from './fake-oa-api.js';
import { messageSignature, randomAesKey, sealMessage } from './message-crypto-scheme.js';

/** One control of `apply_data.contents`; a `Table`'s value holds `children: [{ list: controls }]`. */
export interface WeComControl {
  control: string;
  id?: string;
  title: Array<{ text: string; lang: string }>;
  value: Record<string, unknown>;
}

export interface WeComInstance {
  /** 1 pending, 2 approved, 3 rejected, 4 withdrawn, 6 withdrawn after approval, 7 deleted. */
  spStatus: number;
  templateId?: string;
  contents: WeComControl[];
  /** When the approver decided, unix seconds. */
  decidedAt?: number;
  /** The applicant's user id (`applyer.userid`); `applicant-1` unless given. */
  applicant?: string;
}

/** A text message the app sent (`POST /cgi-bin/message/send`). */
export interface WeComMessage {
  touser: string;
  agentid: number;
  content: string;
  sentAt: number;
}

export interface FakeWeCom extends FakeOaApi<WeComInstance> {
  corpId: string;
  agentSecret: string;
  /** The text messages sent to `userId`, oldest first; a repeat its duplicate check held back is not among them. */
  messagesTo(userId: string): WeComMessage[];
  /** Every message/send that arrived, held back or not. */
  sendRequests(): number;
  /** A message as if sent earlier by the app (a receipt sent before a worker died). */
  seedMessage(message: Omit<WeComMessage, 'sentAt'>): void;
}

export async function startFakeWeCom(options: { tokenTtlSeconds?: number } = {}): Promise<FakeWeCom> {
  const corpId = `ww${randomBytes(8).toString('hex')}`;
  const agentSecret = randomBytes(24).toString('base64url');
  const messages: WeComMessage[] = [];
  let sends = 0;
  /**
   * `POST /cgi-bin/message/send`: a text message from the app. With `enable_duplicate_check`, the
   * same content to the same user from the same app within `duplicate_check_interval` seconds
   * (1800 unless given, at most 4 hours) is answered as sent and not sent again, as WeCom does.
   */
  const send = (method: string, url: URL, body: unknown, request: RequestContext): Answer | undefined => {
    if (method !== 'POST' || url.pathname !== '/cgi-bin/message/send') return undefined;
    sends += 1;
    if (!request.tokenValid(url.searchParams.get('access_token') ?? undefined)) {
      return { status: 200, body: { errcode: 42001, errmsg: 'access_token expired' } };
    }
    const sent = (body ?? {}) as Record<string, unknown>;
    const content = (sent.text as { content?: unknown } | undefined)?.content;
    if (sent.msgtype !== 'text' || typeof content !== 'string' || typeof sent.touser !== 'string') {
      return { status: 200, body: { errcode: 40008, errmsg: 'invalid message type' } };
    }
    if (typeof sent.agentid !== 'number' || !Number.isInteger(sent.agentid) || sent.agentid <= 0) {
      return { status: 200, body: { errcode: 40056, errmsg: 'invalid agentid' } };
    }
    const message = { touser: sent.touser, agentid: sent.agentid, content, sentAt: Date.now() };
    const windowMs = Math.min(Number(sent.duplicate_check_interval ?? 1_800), 4 * 3_600) * 1000;
    const repeat =
      sent.enable_duplicate_check === 1 &&
      messages.some(
        (earlier) =>
          earlier.touser === message.touser &&
          earlier.agentid === message.agentid &&
          earlier.content === message.content &&
          message.sentAt - earlier.sentAt < windowMs,
      );
    if (!repeat) messages.push(message);
    return { status: 200, body: { errcode: 0, errmsg: 'ok', invaliduser: '', msgid: randomBytes(8).toString('hex') } };
  };
  const api = await startFakeOaApi<WeComInstance>(
    {
      otherRequest: (method, url, body, request) => send(method, url, body, request),
      tokenRequest: (method, url, _body, issue) => {
        if (method !== 'GET' || url.pathname !== '/cgi-bin/gettoken') return undefined;
        if (url.searchParams.get('corpid') !== corpId)
          return { status: 200, body: { errcode: 40013, errmsg: 'invalid corpid' } };
        if (url.searchParams.get('corpsecret') !== agentSecret) {
          return { status: 200, body: { errcode: 40001, errmsg: 'invalid credential' } };
        }
        const { token, ttlSeconds } = issue();
        return { status: 200, body: { errcode: 0, errmsg: 'ok', access_token: token, expires_in: ttlSeconds } };
      },
      instanceRequest: (method, url, _headers, body) => {
        if (method !== 'POST' || url.pathname !== '/cgi-bin/oa/getapprovaldetail') return undefined;
        const spNo = (body as { sp_no?: unknown } | undefined)?.sp_no;
        return {
          token: url.searchParams.get('access_token') ?? undefined,
          instanceId: typeof spNo === 'string' ? spNo : '',
        };
      },
      instanceAnswer: (value) => {
        const instance = value as WeComInstance;
        return {
          status: 200,
          body: {
            errcode: 0,
            errmsg: 'ok',
            info: {
              sp_name: 'Purchase request',
              sp_status: instance.spStatus,
              template_id: instance.templateId ?? 'TEMPLATE-FAKE',
              apply_time: (instance.decidedAt ?? 1_764_000_000) - 600,
              applyer: { userid: instance.applicant ?? 'applicant-1', partyid: '1' },
              sp_record: [
                {
                  sp_status: instance.spStatus,
                  approverattr: 1,
                  details: [
                    {
                      approver: { userid: 'approver-1' },
                      speech: '',
                      sp_status: instance.spStatus,
                      sptime: instance.decidedAt ?? 0,
                      media_id: [],
                    },
                  ],
                },
              ],
              notifyer: [],
              apply_data: { contents: instance.contents },
              comments: [],
            },
          },
        };
      },
      // WeCom answers an unknown sp_no as an invalid parameter.
      notFound: () => ({ status: 200, body: { errcode: 40058, errmsg: 'invalid parameter: sp_no' } }),
      tokenInvalid: () => ({ status: 200, body: { errcode: 42001, errmsg: 'access_token expired' } }),
      // WeCom's frequency limit comes under HTTP 200 with its errcode; 5xx are a gateway's, as they are.
      error: (status) =>
        status === 429
          ? { status: 200, body: { errcode: 45009, errmsg: 'api freq out of limit' } }
          : { status, body: { errcode: -1, errmsg: 'system busy' } },
    },
    options,
  );
  return {
    ...api,
    corpId,
    agentSecret,
    messagesTo: (userId) => messages.filter((message) => message.touser === userId).map((message) => ({ ...message })),
    sendRequests: () => sends,
    seedMessage: (message) => void messages.push({ ...message, sentAt: Date.now() }),
  };
}

const title = (text: string) => [{ text, lang: 'zh_CN' }];

/** A text control of `apply_data.contents`. */
export const wecomText = (label: string, text: string): WeComControl => ({
  control: 'Text',
  title: title(label),
  value: { text },
});

/** A number control: its value is `new_number`. */
export const wecomNumber = (label: string, value: number | string): WeComControl => ({
  control: 'Number',
  title: title(label),
  value: { new_number: String(value) },
});

/** A money control: its value is `new_money`. */
export const wecomMoney = (label: string, value: number | string): WeComControl => ({
  control: 'Money',
  title: title(label),
  value: { new_money: String(value) },
});

/** A detail table: each row a list of controls. */
export const wecomTable = (label: string, rows: WeComControl[][]): WeComControl => ({
  control: 'Table',
  title: title(label),
  value: { children: rows.map((list) => ({ list })) },
});

/** An approved purchase form as the example mapping's WeCom section reads it. */
export function approvedWeComOrder(
  sku: string,
  quantity: number,
  unitPrice: number,
  customer = 'CUST-WC-1',
): WeComInstance {
  return {
    spStatus: 2,
    decidedAt: Math.floor(Date.now() / 1000),
    contents: [
      wecomText('Customer ID', customer),
      wecomTable('明细', [[wecomText('物料编码', sku), wecomNumber('数量', quantity), wecomMoney('单价', unitPrice)]]),
    ],
  };
}

/** The plaintext XML of a sys_approval_change event as the approval app pushes it. */
export function wecomApprovalXml(event: {
  corpId: string;
  spNo: string;
  spStatus: number;
  templateId?: string;
  createTime?: number;
}): string {
  const createTime = event.createTime ?? Math.floor(Date.now() / 1000);
  return (
    `<xml><ToUserName><![CDATA[${event.corpId}]]></ToUserName><FromUserName><![CDATA[sys]]></FromUserName>` +
    `<CreateTime>${createTime}</CreateTime><MsgType><![CDATA[event]]></MsgType>` +
    `<Event><![CDATA[sys_approval_change]]></Event><AgentID>3010040</AgentID>` +
    `<ApprovalInfo><SpNo>${event.spNo}</SpNo><SpName><![CDATA[Purchase request]]></SpName>` +
    `<SpStatus>${event.spStatus}</SpStatus><TemplateId><![CDATA[${event.templateId ?? 'TEMPLATE-FAKE'}]]></TemplateId>` +
    `<ApplyTime>${createTime - 600}</ApplyTime><Applyer><UserId><![CDATA[applicant-1]]></UserId><Party><![CDATA[1]]></Party></Applyer>` +
    `<SpRecord><SpStatus>${event.spStatus}</SpStatus><ApproverAttr>1</ApproverAttr><Details><Approver><UserId><![CDATA[approver-1]]></UserId></Approver>` +
    `<Speech><![CDATA[]]></Speech><SpStatus>${event.spStatus}</SpStatus><SpTime>${createTime}</SpTime></Details></SpRecord>` +
    `<StatuChangeEvent>${event.spStatus === 2 ? 2 : 1}</StatuChangeEvent></ApprovalInfo></xml>`
  );
}

export interface WeComCrypto {
  token: string;
  encodingAesKey: string;
  corpId: string;
}

/** A request as WeCom sends it: method, the signed query, and (for an event) the XML body. */
export interface WeComRequest {
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  query: Record<string, string>;
  rawBody: Buffer;
}

function signedQuery(crypto: WeComCrypto, ciphertext: string, options: { timestamp?: string; nonce?: string }) {
  const timestamp = options.timestamp ?? String(Math.floor(Date.now() / 1000));
  const nonce = options.nonce ?? String(randomBytes(4).readUInt32BE());
  return { msg_signature: messageSignature(crypto.token, timestamp, nonce, ciphertext), timestamp, nonce };
}

/** The URL check WeCom sends when the callback is saved in the console: a GET whose echostr is encrypted. */
export function wecomUrlCheck(
  echo: string,
  crypto: WeComCrypto,
  options: { timestamp?: string; nonce?: string } = {},
): WeComRequest {
  const echostr = sealMessage(crypto.encodingAesKey, echo, crypto.corpId);
  return {
    method: 'GET',
    headers: {},
    query: { ...signedQuery(crypto, echostr, options), echostr },
    rawBody: Buffer.alloc(0),
  };
}

/** The XML body carrying a ciphertext, as WeCom posts it. */
export const wecomEnvelope = (ciphertext: string, toUser: string) =>
  `<xml><ToUserName><![CDATA[${toUser}]]></ToUserName><Encrypt><![CDATA[${ciphertext}]]></Encrypt>` +
  `<AgentID><![CDATA[3010040]]></AgentID></xml>`;

/** An event callback as WeCom posts it: the message encrypted into the XML envelope, signed in the query. */
export function wecomCallback(
  message: string,
  crypto: WeComCrypto,
  options: { timestamp?: string; nonce?: string; ciphertext?: string } = {},
): WeComRequest {
  const ciphertext = options.ciphertext ?? sealMessage(crypto.encodingAesKey, message, crypto.corpId);
  return {
    method: 'POST',
    headers: { 'content-type': 'text/xml' },
    query: signedQuery(crypto, ciphertext, options),
    rawBody: Buffer.from(wecomEnvelope(ciphertext, crypto.corpId), 'utf8'),
  };
}

/** A random EncodingAESKey as the console generates one: 43 characters of base64. */
export const randomWeComAesKey = randomAesKey;
