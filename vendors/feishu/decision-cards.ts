// Feishu's decision cards (vendors/decision-cards.ts): a card posted to the decision chat as an
// interactive message (`POST /open-apis/im/v1/messages`, its `uuid` the send key, so that Feishu
// posts one message per key for an hour), then redrawn as decided (`PATCH
// /open-apis/im/v1/messages/:message_id`, allowed only for a card sent as shared:
// `config.update_multi`). Every request carries the app's tenant token (tenant-token.ts) and gets
// the per-request timeout.
//
// A card's text is plain text, never Lark Markdown, so that nothing a card shows (a customer id,
// a label) can turn into a mention or a link; the one link is the workflow's address, checked and
// escaped. Each text is cut to a length of its own, and the whole card is refused above the 30 KB
// Feishu takes for a card's request.
import type { CardClickReply, ConnectorReply } from '../connector.js';
import type { CardDecision, CardOutcome, DecisionCard, DecisionCardSender, PostedCard } from '../decision-cards.js';
import { outcomeLine } from '../../domain/decision-cards.js';
import { clipText, httpAddress, waitedFor } from '../card-text.js';
import { exchange } from '../oa-http.js';
import { readWithOneRefresh } from '../token-cache.js';
import { createFeishuTenantTokens, type FeishuAppOptions, feishuFailure, judgeFeishuAnswer } from './tenant-token.js';

export interface FeishuDecisionCardsOptions extends FeishuAppOptions {
  /** FEISHU_DECISION_CHAT_ID: the chat the cards go to. */
  chatId: string;
  /** The clock a card's waiting time is drawn with. */
  now?: () => number;
}

/** Feishu takes a send's `uuid` of at most 50 characters, and posts one message per uuid for an hour. */
export const FEISHU_SEND_KEY_MAX_CHARS = 50;
/** Feishu refuses a card's request body above 30 KB; the card's JSON is kept below it with room for the rest. */
export const FEISHU_CARD_MAX_BYTES = 28 * 1024;

/** How long each text of a card may be, in characters; a longer one is cut and ends with "…". */
export const CARD_TEXT_LIMITS = {
  title: 100,
  field: 200,
  cause: 600,
  buttonLabel: 40,
  confirm: 300,
  outcome: 300,
} as const;

interface PlainText {
  tag: 'plain_text';
  content: string;
}

/** A Feishu message card (card JSON 1.0): its config, header and elements. */
export interface FeishuCardJson {
  config: { update_multi: true; enable_forward: boolean };
  header: { template: string; title: PlainText };
  elements: Record<string, unknown>[];
}

const plain = (text: string, max: number): PlainText => ({ tag: 'plain_text', content: clipText(text, max) });
const field = (label: string, value: string) => ({
  is_short: true,
  text: plain(`${label}: ${value}`, CARD_TEXT_LIMITS.field),
});

/**
 * The workflow's address as a Lark Markdown link target: http(s) only, parentheses escaped so the
 * link cannot end early; undefined for anything else.
 */
function linkTarget(address: string | undefined): string | undefined {
  return httpAddress(address)?.replaceAll('(', '%28').replaceAll(')', '%29');
}

function button(card: DecisionCard, decision: CardDecision, index: number): Record<string, unknown> {
  return {
    tag: 'button',
    text: plain(decision.label, CARD_TEXT_LIMITS.buttonLabel),
    type: decision.confirm !== undefined ? 'danger' : index === 0 ? 'primary' : 'default',
    // What a click sends back (the card callback's `action.value`): enough to map it to the key's episode.
    value: { idempotencyKey: card.idempotencyKey, episode: card.episode, decision: decision.decision },
    ...(decision.confirm !== undefined
      ? {
          confirm: {
            title: plain(decision.label, CARD_TEXT_LIMITS.buttonLabel),
            text: plain(decision.confirm, CARD_TEXT_LIMITS.confirm),
          },
        }
      : {}),
  };
}

/**
 * The card Feishu shows for `card`: waiting, with one button per decision; or, with `outcome`,
 * decided, without buttons and with who decided what and when. Always a shared card, so that it can
 * be redrawn.
 */
export function feishuCardJson(card: DecisionCard, options: { now: number; outcome?: CardOutcome }): FeishuCardJson {
  const { outcome } = options;
  const waited = waitedFor(card.waitingSince, options.now);
  const link = linkTarget(card.workflowUrl);
  const elements: Record<string, unknown>[] = [
    {
      tag: 'div',
      fields: [
        field('Key', card.idempotencyKey),
        field('Waits in', card.waitingIn),
        field('Customer', card.customerId),
        field('Amount', card.amount),
        field(
          outcome ? 'Waited since' : 'Waiting',
          outcome || waited === undefined ? card.waitingSince : `${waited} (since ${card.waitingSince})`,
        ),
        field('Episode', card.episode),
      ],
    },
    { tag: 'div', text: plain(`Cause: ${card.cause.code} — ${card.cause.sentence}`, CARD_TEXT_LIMITS.cause) },
    ...(link ? [{ tag: 'div', text: { tag: 'lark_md', content: `[Open its workflow](${link})` } }] : []),
    { tag: 'hr' },
  ];
  if (outcome) {
    elements.push({
      tag: 'div',
      text: plain(outcomeLine(outcome), CARD_TEXT_LIMITS.outcome),
    });
  } else if (card.decisions.length > 0) {
    elements.push({ tag: 'action', actions: card.decisions.map((decision, index) => button(card, decision, index)) });
  }
  return {
    config: { update_multi: true, enable_forward: false },
    header: {
      template: outcome ? 'green' : 'orange',
      title: plain(`${outcome ? 'Decided' : 'Waiting for a decision'}: ${card.idempotencyKey}`, CARD_TEXT_LIMITS.title),
    },
    elements,
  };
}

/**
 * The answer to a click on a card, inside Feishu's 3 s: the toast the clicker sees and, when the
 * click locked the card, the card redrawn without buttons, reading `lockedAs` (the card's workflow
 * redraws it in full once the key has moved on).
 */
export function feishuClickReply(idempotencyKey: string, answer: CardClickReply): ConnectorReply {
  return {
    status: 200,
    body: {
      toast: { type: answer.tone, content: clipText(answer.text, CARD_TEXT_LIMITS.outcome) },
      ...(answer.lockedAs === undefined
        ? {}
        : {
            card: {
              type: 'raw',
              data: {
                config: { update_multi: true, enable_forward: false },
                header: { template: 'grey', title: plain(`Deciding: ${idempotencyKey}`, CARD_TEXT_LIMITS.title) },
                elements: [{ tag: 'div', text: plain(answer.lockedAs, CARD_TEXT_LIMITS.outcome) }],
              },
            },
          }),
    },
  };
}

/** The card as the `content` of a message: its JSON, refused when Feishu would refuse its size. */
function contentOf(card: DecisionCard, json: FeishuCardJson): string {
  const content = JSON.stringify(json);
  const bytes = Buffer.byteLength(content, 'utf8');
  if (bytes > FEISHU_CARD_MAX_BYTES) {
    throw new Error(
      `feishu decision card for ${card.idempotencyKey}: ${bytes} bytes, above the ${FEISHU_CARD_MAX_BYTES} a card may have`,
    );
  }
  return content;
}

export function feishuDecisionCards(options: FeishuDecisionCardsOptions): DecisionCardSender {
  const now = options.now ?? Date.now;
  const tokens = createFeishuTenantTokens(options);
  const request = (token: string, method: 'POST' | 'PATCH', url: URL, body: unknown) =>
    exchange('feishu', url, { method, headers: { authorization: `Bearer ${token}` }, body }, options.timeoutMs);

  return {
    async send(card, sendKey) {
      const keyLength = Array.from(sendKey).length;
      if (keyLength === 0 || keyLength > FEISHU_SEND_KEY_MAX_CHARS) {
        throw new Error(
          `feishu decision card for ${card.idempotencyKey}: the send key has ${keyLength} characters; Feishu's uuid takes 1 to ${FEISHU_SEND_KEY_MAX_CHARS}`,
        );
      }
      const content = contentOf(card, feishuCardJson(card, { now: now() }));
      const url = new URL('/open-apis/im/v1/messages', options.baseUrl);
      url.searchParams.set('receive_id_type', 'chat_id');
      const what = `send decision card for ${card.idempotencyKey}`;
      const data = await readWithOneRefresh(tokens, async (token) =>
        judgeFeishuAnswer(
          await request(token, 'POST', url, {
            receive_id: options.chatId,
            msg_type: 'interactive',
            content,
            // Feishu's own idempotency key: a send repeated with it (after a timeout, say) posts
            // no second message and is answered with the first.
            uuid: sendKey,
          }),
          what,
        ),
      );
      if (typeof data.message_id !== 'string' || data.message_id.length === 0) {
        throw feishuFailure(200, undefined, `${what}: the answer names no message_id`);
      }
      return { messageId: data.message_id } satisfies PostedCard;
    },

    async refresh(posted, card, outcome) {
      const content = contentOf(card, feishuCardJson(card, { now: now(), outcome }));
      const url = new URL(`/open-apis/im/v1/messages/${encodeURIComponent(posted.messageId)}`, options.baseUrl);
      const what = `refresh decision card for ${card.idempotencyKey}`;
      await readWithOneRefresh(tokens, async (token) =>
        judgeFeishuAnswer(await request(token, 'PATCH', url, { content }), what),
      );
      return 'updated';
    },
  };
}
