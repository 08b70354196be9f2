// A fake WeCom (企业微信) server API (gettoken, oa/getapprovaldetail, message/send with its
// duplicate check for the receipts and its template cards for decision cards, update_template_card)
// for reader, receipt and card tests, and the
// builder of callbacks exactly as WeCom sends them: the URL check's GET with an encrypted echostr,
// and the XML event whose Encrypt holds the encrypted sys_approval_change, msg_signature and a
// timestamp in seconds in the query. Built with node:crypto alone, apart from the code under test
// (message-crypto-scheme.ts).
import { randomBytes } from 'node:crypto';
import { type Answer, type FakeOaApi, type RequestContext, startFakeOaApi } from './fake-oa-api.js';
import { messageSignature, openMessage, randomAesKey, sealMessage } from './message-crypto-scheme.js';

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

/** A template card the app sent (`msgtype: template_card`), as the members' chats hold it. */
export interface WeComCard {
  taskId: string;
  touser: string[];
  agentid: number;
  /** The card as sent. */
  card: Record<string, unknown>;
  /** The response code the send answered, for one update within 72 hours. */
  responseCode: string;
  /** What every member's buttons were replaced by (`update_template_card` with `atall`), if they were. */
  replacedFor: { all?: string; byUser: Record<string, string> };
  /** Updates taken. */
  updates: number;
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
  /** The template cards the app sent, oldest first. */
  cards(): WeComCard[];
  /** Template card sends that arrived, taken or refused. */
  cardSendRequests(): number;
  /** update_template_card requests that arrived, taken or refused. */
  cardUpdateRequests(): number;
  /** The next template card send is answered this late (after the card is kept): a send answered after its client gave up. */
  answerNextCardSendAfter(ms: number): void;
  /**
   * A click on a card's button as WeCom records it: a fresh response code for one update, which
   * the click's event carries (`wecomCardClickXml`).
   */
  responseCodeForClick(taskId: string): string;
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
  const cards: WeComCard[] = [];
  /** Response codes not used yet, each naming its card. */
  const responseCodes = new Map<string, WeComCard>();
  let cardSends = 0;
  let cardUpdates = 0;
  let nextCardDelayMs = 0;
  const newResponseCode = (card: WeComCard) => {
    const code = randomBytes(24).toString('base64url');
    responseCodes.set(code, card);
    return code;
  };
  /**
   * A template card of the button-interaction kind, as WeCom takes it: a task id of its form, new to
   * the app (a used one is refused with 42014, the nearest code WeCom documents), 1 to 6 buttons
   * each with a key, and answered with the message id and a response code.
   */
  const sendCard = (sent: Record<string, unknown>): Answer => {
    cardSends += 1;
    const card = (sent.template_card ?? {}) as Record<string, unknown>;
    const taskId = card.task_id;
    const buttons = card.button_list;
    if (
      card.card_type !== 'button_interaction' ||
      typeof sent.touser !== 'string' ||
      typeof sent.agentid !== 'number'
    ) {
      return { status: 200, body: { errcode: 40008, errmsg: 'invalid message type' } };
    }
    if (typeof taskId !== 'string' || !/^[A-Za-z0-9_@-]{1,128}$/.test(taskId)) {
      return { status: 200, body: { errcode: 42014, errmsg: 'invalid task_id' } };
    }
    const title = (card.main_title as { title?: unknown } | undefined)?.title;
    if (typeof title !== 'string' || Array.from(title).length > 36) {
      return { status: 200, body: { errcode: 40058, errmsg: 'invalid parameter: main_title.title' } };
    }
    if (
      !Array.isArray(buttons) ||
      buttons.length === 0 ||
      buttons.length > 6 ||
      buttons.some(
        (button: { key?: unknown }) => typeof button.key !== 'string' || Buffer.byteLength(button.key) > 1024,
      )
    ) {
      return { status: 200, body: { errcode: 40058, errmsg: 'invalid parameter: button_list' } };
    }
    if (cards.some((earlier) => earlier.taskId === taskId && earlier.agentid === sent.agentid)) {
      return { status: 200, body: { errcode: 42014, errmsg: 'invalid task_id' } };
    }
    const kept: WeComCard = {
      taskId,
      touser: sent.touser.split('|'),
      agentid: sent.agentid,
      card,
      responseCode: '',
      replacedFor: { byUser: {} },
      updates: 0,
    };
    kept.responseCode = newResponseCode(kept);
    cards.push(kept);
    const delayMs = nextCardDelayMs;
    nextCardDelayMs = 0;
    return {
      status: 200,
      body: {
        errcode: 0,
        errmsg: 'ok',
        invaliduser: '',
        msgid: randomBytes(8).toString('hex'),
        response_code: kept.responseCode,
      },
      ...(delayMs > 0 ? { delayMs } : {}),
    };
  };
  /** `update_template_card`: a response code used once, the buttons replaced for every member (`atall`) or those named. */
  const updateCard = (sent: Record<string, unknown>): Answer => {
    cardUpdates += 1;
    const code = sent.response_code;
    const card = typeof code === 'string' ? responseCodes.get(code) : undefined;
    if (!card || typeof code !== 'string')
      return { status: 200, body: { errcode: 60140, errmsg: 'invalid response_code' } };
    const replaceName = (sent.button as { replace_name?: unknown } | undefined)?.replace_name;
    if (typeof replaceName !== 'string' || replaceName.length === 0) {
      return { status: 200, body: { errcode: 40058, errmsg: 'invalid parameter: button.replace_name' } };
    }
    responseCodes.delete(code);
    if (sent.atall === 1) card.replacedFor.all = replaceName;
    for (const user of Array.isArray(sent.userids) ? (sent.userids as string[]) : [])
      card.replacedFor.byUser[user] = replaceName;
    card.updates += 1;
    return { status: 200, body: { errcode: 0, errmsg: 'ok', invaliduser: [] } };
  };
  const send = (method: string, url: URL, body: unknown, request: RequestContext): Answer | undefined => {
    if (
      method !== 'POST' ||
      !['/cgi-bin/message/send', '/cgi-bin/message/update_template_card'].includes(url.pathname)
    ) {
      return undefined;
    }
    if (url.pathname === '/cgi-bin/message/send') sends += 1;
    if (!request.tokenValid(url.searchParams.get('access_token') ?? undefined)) {
      return { status: 200, body: { errcode: 42001, errmsg: 'access_token expired' } };
    }
    const sent = (body ?? {}) as Record<string, unknown>;
    if (url.pathname === '/cgi-bin/message/update_template_card') return updateCard(sent);
    if (sent.msgtype === 'template_card') return sendCard(sent);
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
    cards: () =>
      cards.map((card) => ({ ...card, replacedFor: { ...card.replacedFor, byUser: { ...card.replacedFor.byUser } } })),
    cardSendRequests: () => cardSends,
    cardUpdateRequests: () => cardUpdates,
    answerNextCardSendAfter: (ms) => void (nextCardDelayMs = ms),
    responseCodeForClick: (taskId) => {
      const card = cards.find((candidate) => candidate.taskId === taskId);
      if (!card) throw new Error(`no card with task id ${taskId}`);
      return newResponseCode(card);
    },
  };
}

/** The plaintext XML of a click on a template card's button, as WeCom pushes it to the app's callback. */
export function wecomCardClickXml(click: {
  corpId: string;
  userId: string;
  eventKey: string;
  taskId: string;
  responseCode: string;
  agentId: number;
  createTime?: number;
}): string {
  const createTime = click.createTime ?? Math.floor(Date.now() / 1000);
  return (
    `<xml><ToUserName><![CDATA[${click.corpId}]]></ToUserName><FromUserName><![CDATA[${click.userId}]]></FromUserName>` +
    `<CreateTime>${createTime}</CreateTime><MsgType><![CDATA[event]]></MsgType>` +
    `<Event><![CDATA[template_card_event]]></Event><EventKey><![CDATA[${click.eventKey}]]></EventKey>` +
    `<TaskId><![CDATA[${click.taskId}]]></TaskId><CardType><![CDATA[button_interaction]]></CardType>` +
    `<ResponseCode><![CDATA[${click.responseCode}]]></ResponseCode><AgentID>${click.agentId}</AgentID></xml>`
  );
}

/**
 * The plaintext of an encrypted passive reply, once its signature over the ciphertext holds (WeCom
 * drops a reply whose signature does not); throws otherwise.
 */
export function openWeComReply(reply: string, crypto: WeComCrypto): string {
  const field = (name: string) => {
    const match = new RegExp(`<${name}>(?:<!\\[CDATA\\[)?(.*?)(?:\\]\\]>)?</${name}>`, 's').exec(reply);
    if (!match) throw new Error(`the reply has no ${name}: ${reply}`);
    return match[1] as string;
  };
  const ciphertext = field('Encrypt');
  const signature = messageSignature(crypto.token, field('TimeStamp'), field('Nonce'), ciphertext);
  if (signature !== field('MsgSignature')) throw new Error('the reply’s signature does not hold');
  const opened = openMessage(crypto.encodingAesKey, ciphertext);
  if (opened.receiverId !== crypto.corpId) throw new Error('the reply is encrypted for another corp id');
  return opened.message;
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
