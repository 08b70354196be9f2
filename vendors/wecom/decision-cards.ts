// WeCom's decision cards (vendors/decision-cards.ts): a card sent by the app WECOM_AGENT_ID to the
// members WECOM_DECISION_TO_USERS names, as a button-interaction template card (`POST
// /cgi-bin/message/send`, `msgtype: template_card`), its `task_id` the send key: WeCom takes a
// task id once per app, so a send repeated after a lost answer posts no second card. A click comes
// back to the app's callback as `template_card_event`, its `EventKey` the button's key (the
// decision, the episode and the key: `buttonKeyOf`), answered in the callback's reply, encrypted:
// the clicker's buttons replaced by the answer (`update_button`). Once the key no longer waits,
// every member's copy is redrawn the same way (`POST /cgi-bin/message/update_template_card` with
// the send's `response_code`, `atall`). WeCom lets a response code be used once, within 72 hours: a
// card older than that, or whose send's answer was lost, keeps its buttons for those who did not
// click it, and a click on it is answered with what became of its key.
//
// WeCom has no confirmation dialog on a button: what a decision that asks for one does is said on
// the card, above the buttons.
import type { CardClickEvent, CardClickReply, ConnectorReply } from '../connector.js';
import {
  buttonKeyOf,
  buttonOfKey,
  type CardDecision,
  type CardOutcome,
  type DecisionCard,
  type DecisionCardSender,
  type PostedCard,
} from '../decision-cards.js';
import { clipText, httpAddress, waitedFor } from '../card-text.js';
import type { MessageCrypto } from '../message-crypto.js';
import { sealReply } from '../message-crypto.js';
import { createWeComServerApi, type WeComAppOptions } from './server-api.js';
import { OaApiError } from '../../domain/errors.js';

export interface WeComDecisionCardsOptions extends WeComAppOptions {
  /** WECOM_AGENT_ID: the app the cards are sent as. */
  agentId: number;
  /** WECOM_DECISION_TO_USERS: the members each card goes to. */
  toUsers: readonly string[];
  /** The clock a card's waiting time and its response code's age are read with. */
  now?: () => number;
}

/** How long WeCom takes a send's `response_code` to update the card, once. */
export const WECOM_RESPONSE_CODE_TTL_MS = 72 * 3_600_000;
/** WeCom's task id: at most 128 characters of letters, digits, `_`, `-` and `@`, once per app. */
const TASK_ID_FORM = /^[A-Za-z0-9_@-]{1,128}$/;
/** A button's key: at most 1024 bytes, returned as the click's `EventKey`. */
const BUTTON_KEY_MAX_BYTES = 1_024;
/** WeCom shows at most 6 buttons and 6 lines of label and value on a card. */
const MAX_BUTTONS = 6;

/**
 * WeCom's errcode for a card's task id it does not take: "taskid has existed or empty or exceed max
 * len". The task id sent is always of the documented form (`TASK_ID_FORM`, checked before
 * sending), so on a retry it is read as taken by the first attempt.
 */
export const TASK_ID_TAKEN = 42_014;
/** WeCom's errcode for a response code that is invalid, expired (72 hours) or already used. */
export const RESPONSE_CODE_SPENT = 60_140;

/** How long each text of a card may be, in characters, as WeCom's card shows them; longer ones end with "…". */
export const WECOM_TEXT_LIMITS = {
  title: 36,
  desc: 44,
  keyname: 10,
  value: 30,
  subTitle: 160,
  quote: 160,
  button: 10,
  replaceName: 30,
} as const;

const line = (keyname: string, value: string) => ({
  keyname: clipText(keyname, WECOM_TEXT_LIMITS.keyname),
  value: clipText(value, WECOM_TEXT_LIMITS.value),
});

/** What the buttons that ask for a confirmation elsewhere do, said once above them; undefined: none does. */
function warnings(decisions: readonly CardDecision[]): string | undefined {
  const asked = decisions.filter((decision) => decision.confirm !== undefined);
  if (asked.length === 0) return undefined;
  return asked.map((decision) => `${decision.label}: ${decision.confirm}`).join(' ');
}

/** The template card WeCom shows for `card`, waiting: its facts, the cause, and one button per decision. */
export function wecomCardJson(card: DecisionCard, sendKey: string, options: { now: number }): Record<string, unknown> {
  const waited = waitedFor(card.waitingSince, options.now);
  const link = httpAddress(card.workflowUrl);
  const warning = warnings(card.decisions);
  const buttons = card.decisions.slice(0, MAX_BUTTONS);
  return {
    card_type: 'button_interaction',
    source: { desc: 'Orders' },
    main_title: {
      title: clipText('Waiting for a decision', WECOM_TEXT_LIMITS.title),
      desc: clipText(card.idempotencyKey, WECOM_TEXT_LIMITS.desc),
    },
    sub_title_text: clipText(`Cause: ${card.cause.code} — ${card.cause.sentence}`, WECOM_TEXT_LIMITS.subTitle),
    horizontal_content_list: [
      line('Waits in', card.waitingIn),
      line('Customer', card.customerId),
      line('Amount', card.amount),
      line('Waiting', waited ?? card.waitingSince),
      line('Episode', card.episode),
      ...(link ? [{ ...line('Workflow', 'Open'), type: 1, url: link }] : []),
    ],
    ...(link ? { card_action: { type: 1, url: link } } : {}),
    ...(warning ? { quote_area: { type: 0, quote_text: clipText(warning, WECOM_TEXT_LIMITS.quote) } } : {}),
    task_id: sendKey,
    button_list: buttons.map((decision, index) => ({
      text: clipText(decision.label, WECOM_TEXT_LIMITS.button),
      // 1 blue, 2 red, 4 grey, as WeCom draws them: a decision that cannot be undone in red.
      style: decision.confirm !== undefined ? 2 : index === 0 ? 1 : 4,
      key: buttonKeyOf(card, decision.decision),
    })),
  };
}

/** What a decided card's buttons are replaced by, for every member: the decision, who took it. */
export const decidedLabel = (outcome: CardOutcome): string => {
  const by = outcome.decidedBy?.startsWith('card:wecom:')
    ? outcome.decidedBy.slice('card:wecom:'.length)
    : outcome.decidedBy;
  return clipText(`${outcome.decision}${by ? ` by ${by}` : ''}`, WECOM_TEXT_LIMITS.replaceName);
};

export function wecomDecisionCards(options: WeComDecisionCardsOptions): DecisionCardSender {
  const now = options.now ?? Date.now;
  const api = createWeComServerApi(options);
  return {
    async send(card, sendKey, attempt) {
      if (!TASK_ID_FORM.test(sendKey)) {
        throw new Error(`wecom decision card for ${card.idempotencyKey}: the send key is no WeCom task_id`);
      }
      for (const decision of card.decisions) {
        const key = buttonKeyOf(card, decision.decision);
        if (Buffer.byteLength(key) > BUTTON_KEY_MAX_BYTES || buttonOfKey(key) === undefined) {
          throw new Error(`wecom decision card for ${card.idempotencyKey}: a button's key would not be read back`);
        }
      }
      const what = `send decision card for ${card.idempotencyKey}`;
      const postedAt = now();
      const sent = await api.call(
        '/cgi-bin/message/send',
        {
          touser: options.toUsers.join('|'),
          msgtype: 'template_card',
          agentid: options.agentId,
          template_card: wecomCardJson(card, sendKey, { now: postedAt }),
        },
        what,
        // WeCom's own idempotency: a task id it already took is refused, so a send repeated after a
        // lost answer posts nothing. Read so only on a retry: on a first attempt the refusal says
        // something else (another deployment of the same app took the key, say) and is one.
        attempt?.retried ? [TASK_ID_TAKEN] : [],
      );
      // The card is the first attempt's, whose response code was lost with its answer.
      if (sent.errcode === TASK_ID_TAKEN) return { messageId: sendKey } satisfies PostedCard;
      if (typeof sent.invaliduser === 'string' && sent.invaliduser.length > 0) {
        // Sent to the others; a member WeCom does not know is not sent to on a retry either.
        throw new OaApiError(
          'wecom',
          400,
          undefined,
          `wecom ${what}: a member of WECOM_DECISION_TO_USERS is not reached by the app`,
        );
      }
      const responseCode = typeof sent.response_code === 'string' ? sent.response_code : undefined;
      return {
        messageId: sendKey,
        ...(responseCode
          ? { updateToken: responseCode, updatableUntil: new Date(postedAt + WECOM_RESPONSE_CODE_TTL_MS).toISOString() }
          : {}),
      } satisfies PostedCard;
    },

    async refresh(posted, card, outcome) {
      // The send's answer was lost, or its code is too old: WeCom lets nothing update the card.
      if (!posted.updateToken || !posted.updatableUntil || Date.parse(posted.updatableUntil) <= now()) {
        return 'not updatable';
      }
      const updated = await api.call(
        '/cgi-bin/message/update_template_card',
        {
          atall: 1,
          agentid: options.agentId,
          response_code: posted.updateToken,
          button: { replace_name: decidedLabel(outcome) },
        },
        `refresh decision card for ${card.idempotencyKey}`,
        [RESPONSE_CODE_SPENT],
      );
      return updated.errcode === RESPONSE_CODE_SPENT ? 'not updatable' : 'updated';
    },
  };
}

/**
 * A click on a card as WeCom's `template_card_event` tells it (the plaintext's fields), or why it
 * is no click of these cards.
 */
export function wecomCardClickOf(
  message: ReadonlyMap<string, string>,
  eventId: string,
): { kind: 'click'; click: CardClickEvent } | { kind: 'unusable'; reason: string } {
  const userId = message.get('FromUserName')?.trim();
  const button = buttonOfKey(message.get('EventKey')?.trim() ?? '');
  if (!userId) return { kind: 'unusable', reason: 'template_card_event without a FromUserName' };
  if (!button) return { kind: 'unusable', reason: 'template_card_event whose EventKey is no decision card button' };
  return { kind: 'click', click: { vendor: 'wecom', eventId, userId, ...button } };
}

/**
 * The callback's reply to a click, inside WeCom's 5 s. When the click locked the card (it was
 * decided, now or before), an encrypted reply replaces the clicker's buttons with what became of it
 * (`update_button`), so that it is not clicked again; otherwise (a refusal, a decision still under
 * way) nothing: the connector's empty acknowledgement, the buttons as they were (WeCom shows no
 * passing message).
 */
export function wecomClickReply(
  crypto: Pick<MessageCrypto, 'token' | 'aesKey' | 'receiverId'>,
  to: string,
  answer: CardClickReply,
  now: number,
): ConnectorReply | undefined {
  if (answer.lockedAs === undefined) return undefined;
  const text = answer.outcome ? decidedLabel(answer.outcome) : clipText(answer.lockedAs, WECOM_TEXT_LIMITS.replaceName);
  const createTime = Math.floor(now / 1_000);
  const plaintext =
    `<xml><ToUserName>${cdata(to)}</ToUserName><FromUserName>${cdata(crypto.receiverId)}</FromUserName>` +
    `<CreateTime>${createTime}</CreateTime><MsgType>${cdata('update_button')}</MsgType>` +
    `<Button><ReplaceName>${cdata(text)}</ReplaceName></Button></xml>`;
  const sealed = sealReply(crypto, plaintext, String(createTime));
  return {
    status: 200,
    headers: { 'content-type': 'application/xml; charset=utf-8' },
    body:
      `<xml><Encrypt>${cdata(sealed.ciphertext)}</Encrypt><MsgSignature>${cdata(sealed.signature)}</MsgSignature>` +
      `<TimeStamp>${sealed.timestamp}</TimeStamp><Nonce>${cdata(sealed.nonce)}</Nonce></xml>`,
  };
}

/** `text` as XML character data: a `]]>` inside is split across two sections. */
const cdata = (text: string) => `<![CDATA[${text.replaceAll(']]>', ']]]]><![CDATA[>')}]]>`;
