// The fake Feishu's messages API, as the decision cards use it: `POST /open-apis/im/v1/messages`
// (a card to a chat, deduplicated by its `uuid` for an hour: the same uuid posts no second message
// and is answered with the first) and `PATCH /open-apis/im/v1/messages/:message_id` (a card
// redrawn, only when it was sent as a shared card, `config.update_multi`); each checks the tenant
// token the fake issued. A test reads a chat's messages with their current content, and scripts
// faults: a send answered only after some time (the message is created at once, as when the
// platform posted it and the answer outlived the client's timeout), or refused with a status.
import { randomBytes } from 'node:crypto';
import type { Answer, RequestContext } from './fake-oa-api.js';

/** Feishu keeps a send's uuid this long. */
export const FEISHU_UUID_WINDOW_MS = 3_600_000;
/** The longest uuid Feishu takes. */
export const FEISHU_UUID_MAX_CHARS = 50;
/** Feishu's code for a request parameter it refuses ("Your request contains an invalid request parameter"). */
export const FEISHU_INVALID_PARAMETER = 230001;
/** Feishu's code for a request field that fails its validation, answered with `error.field_violations`. */
export const FEISHU_FIELD_VALIDATION_FAILED = 99992402;

/** One message the fake holds: a card in a chat, with its content as it reads now. */
export interface FakeFeishuMessage {
  messageId: string;
  chatId: string;
  uuid: string | undefined;
  /** The card as it reads now (its JSON, parsed), after any PATCH. */
  content: Record<string, unknown>;
  /** The content it was sent with. */
  sentContent: Record<string, unknown>;
  createdAt: number;
  /** How many PATCHes redrew it. */
  updates: number;
}

/** A scripted reply to the next sends, in order. */
export type SendFault =
  /** Create the message now, answer only after `ms`. */
  | { kind: 'answer-after'; ms: number }
  /** Create nothing, answer this HTTP status (Feishu's error body). */
  | { kind: 'status'; status: number };

export interface FakeFeishuMessages {
  /** The messages posted to `chatId`, oldest first, each with its current content. */
  messagesIn(chatId: string): FakeFeishuMessage[];
  /** Every send request that arrived, deduplicated or not. */
  sendRequests(): number;
  /** Every PATCH request that arrived, refused or not. */
  patchRequests(): number;
  /** Replies for the next sends, in order; then sends are answered at once. */
  scriptSends(faults: SendFault[]): void;
  /** Answers a messages request, or undefined when it is not one. */
  answer(method: string, url: URL, body: unknown, request: RequestContext): Answer | undefined;
}

const MESSAGES_PATH = '/open-apis/im/v1/messages';
const MESSAGE_PATH_PREFIX = `${MESSAGES_PATH}/`;

const refused = (status: number, code: number, msg: string): Answer => ({ status, body: { code, msg } });
const invalid = (ext: string) =>
  refused(400, FEISHU_INVALID_PARAMETER, `Your request contains an invalid request parameter, ext=${ext}`);

function bearerOf(request: RequestContext): string | undefined {
  const authorization = request.headers.authorization ?? '';
  return authorization.startsWith('Bearer ') ? authorization.slice('Bearer '.length) : undefined;
}

function cardOf(content: unknown): Record<string, unknown> | undefined {
  if (typeof content !== 'string') return undefined;
  try {
    const card: unknown = JSON.parse(content);
    return card !== null && typeof card === 'object' && !Array.isArray(card)
      ? (card as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

const isShared = (card: Record<string, unknown>) =>
  (card.config as { update_multi?: unknown } | undefined)?.update_multi === true;

export function createFakeFeishuMessages(options: {
  appId: string;
  tokenInvalid: () => Answer;
  now?: () => number;
}): FakeFeishuMessages {
  const now = options.now ?? Date.now;
  const messages = new Map<string, FakeFeishuMessage>();
  const byUuid = new Map<string, FakeFeishuMessage>();
  let faults: SendFault[] = [];
  let sends = 0;
  let patches = 0;

  const messageData = (message: FakeFeishuMessage) => ({
    message_id: message.messageId,
    msg_type: 'interactive',
    create_time: String(message.createdAt),
    update_time: String(message.createdAt),
    deleted: false,
    updated: message.updates > 0,
    chat_id: message.chatId,
    sender: { id: options.appId, id_type: 'app_id', sender_type: 'app', tenant_key: 'fake-tenant' },
    body: { content: JSON.stringify(message.content) },
  });
  const success = (data: unknown): Answer => ({ status: 200, body: { code: 0, msg: 'success', data } });

  const send = (url: URL, body: unknown): Answer => {
    const fault = faults.shift();
    if (fault?.kind === 'status') {
      return refused(fault.status, fault.status === 429 ? 99991400 : fault.status, 'scripted failure');
    }
    if (url.searchParams.get('receive_id_type') !== 'chat_id') return invalid('receive_id_type must be chat_id');
    const request = (body ?? {}) as { receive_id?: unknown; msg_type?: unknown; content?: unknown; uuid?: unknown };
    if (typeof request.receive_id !== 'string' || !request.receive_id.startsWith('oc_')) {
      return invalid('invalid receive_id');
    }
    if (request.msg_type !== 'interactive') return invalid('the fake takes interactive messages only');
    const card = cardOf(request.content);
    if (!card) return invalid('content is not a JSON object');
    const uuid = request.uuid;
    if (uuid !== undefined && (typeof uuid !== 'string' || Array.from(uuid).length > FEISHU_UUID_MAX_CHARS)) {
      return {
        status: 400,
        body: {
          code: FEISHU_FIELD_VALIDATION_FAILED,
          msg: 'field validation failed',
          error: {
            field_violations: [
              { field: 'uuid', description: `the length of uuid must be at most ${FEISHU_UUID_MAX_CHARS}` },
            ],
          },
        },
      };
    }
    const delayMs = fault?.kind === 'answer-after' ? fault.ms : undefined;
    const earlier = typeof uuid === 'string' ? byUuid.get(uuid) : undefined;
    if (earlier && now() - earlier.createdAt < FEISHU_UUID_WINDOW_MS) {
      return { ...success(messageData(earlier)), ...(delayMs !== undefined ? { delayMs } : {}) };
    }
    const message: FakeFeishuMessage = {
      messageId: `om_${randomBytes(16).toString('hex')}`,
      chatId: request.receive_id,
      uuid: typeof uuid === 'string' ? uuid : undefined,
      content: card,
      sentContent: card,
      createdAt: now(),
      updates: 0,
    };
    messages.set(message.messageId, message);
    if (typeof uuid === 'string') byUuid.set(uuid, message);
    return { ...success(messageData(message)), ...(delayMs !== undefined ? { delayMs } : {}) };
  };

  const patch = (messageId: string, body: unknown): Answer => {
    const message = messages.get(messageId);
    if (!message) return invalid('message not found');
    const card = cardOf((body as { content?: unknown } | undefined)?.content);
    if (!card) return invalid('content is not a JSON object');
    // Feishu updates a card for everyone only when it is a shared card before and after the update.
    if (!isShared(message.content) || !isShared(card)) {
      return invalid('the card is not a shared card: config.update_multi must be true before and after the update');
    }
    message.content = card;
    message.updates += 1;
    return success({});
  };

  return {
    messagesIn: (chatId) =>
      [...messages.values()]
        .filter((message) => message.chatId === chatId)
        .sort((a, b) => a.createdAt - b.createdAt)
        .map((message) => ({ ...message })),
    sendRequests: () => sends,
    patchRequests: () => patches,
    scriptSends: (scripted) => void (faults = [...scripted]),
    answer(method, url, body, request) {
      const isSend = method === 'POST' && url.pathname === MESSAGES_PATH;
      const messageId =
        method === 'PATCH' && url.pathname.startsWith(MESSAGE_PATH_PREFIX)
          ? decodeURIComponent(url.pathname.slice(MESSAGE_PATH_PREFIX.length))
          : undefined;
      if (!isSend && (messageId === undefined || messageId.length === 0 || messageId.includes('/'))) return undefined;
      if (isSend) sends += 1;
      else patches += 1;
      if (!request.tokenValid(bearerOf(request))) return options.tokenInvalid();
      return isSend ? send(url, body) : patch(messageId as string, body);
    },
  };
}
