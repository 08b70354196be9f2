// DingTalk's decision cards (vendors/decision-cards.ts): a card drawn with the template
// DINGTALK_DECISION_CARD_TEMPLATE_ID, created and delivered to the open space
// DINGTALK_DECISION_OPEN_SPACE_ID by the app's robot (`POST /v1.0/card/instances/createAndDeliver`),
// its `outTrackId` the send key: DingTalk takes an outTrackId once (`param.cardAlreadyExist`), so a
// send repeated after a lost answer creates no second card, and the card is addressed by that id
// from then on. `callbackType: STREAM`: a click comes over the Stream connection
// (vendors/dingtalk/connection.ts) and is answered inside DingTalk's 2 s: the answer on the
// clicker's copy, and once the decision is taken, the card locked for everyone. Once the key no longer waits, the card is redrawn
// by its outTrackId (`PUT /v1.0/card/instances`).
//
// The template is the operator's, built in DingTalk's card builder; what it is given is a flat
// map of strings (`cardParamMap`, each value at most 1 KB), the variables docs/operations.md
// lists, and each button's callback sends its `action` back as a parameter (`buttonKeyOf`).
import { outcomeLine } from '../../domain/decision-cards.js';
import { OaApiError } from '../../domain/errors.js';
import { cardSendKey } from '../../domain-node/decision-card-keys.js';
import type { CardClickEvent, CardClickReply } from '../connector.js';
import {
  buttonKeyOf,
  buttonOfKey,
  type CardOutcome,
  type DecisionCard,
  type DecisionCardSender,
  type PostedCard,
} from '../decision-cards.js';
import { clipText, httpAddress, waitedFor } from '../card-text.js';
import { textOfValue } from '../form-text.js';
import { jsonObjectOf } from '../inbound.js';
import type { DingTalkDecisions } from './settings.js';
import { createDingTalkOpenApi, type DingTalkAppOptions, isAcceptedRefusal } from './open-api.js';

export interface DingTalkDecisionCardsOptions extends DingTalkAppOptions {
  decisions: Pick<DingTalkDecisions, 'templateId' | 'openSpaceId' | 'spaceType'>;
  /** The clock a card's waiting time is drawn with. */
  now?: () => number;
}

/** The Stream topic a card's clicks come on. */
export const DINGTALK_CARD_CALLBACK_TOPIC = '/v1.0/card/instances/callback';
/** How long DingTalk waits for a card callback's answer. */
export const DINGTALK_CARD_CALLBACK_DEADLINE_MS = 2_000;
/** DingTalk's code for an outTrackId it already took, and for a card it does not know. */
export const DINGTALK_CARD_ALREADY_EXISTS = 'param.cardAlreadyExist';
export const DINGTALK_CARD_NOT_FOUND = 'param.cardNotExist';
/** DingTalk takes a card variable's value of at most 1 KB. */
export const DINGTALK_CARD_VALUE_MAX_BYTES = 1_024;

/** How long each text of a card may be, in characters; a longer one ends with "…". */
export const DINGTALK_TEXT_LIMITS = {
  title: 100,
  field: 120,
  cause: 400,
  label: 40,
  confirm: 200,
  outcome: 300,
} as const;

/** The card's variables (`cardParamMap`): every value a string, as DingTalk takes them. */
export type DingTalkCardData = Record<string, string>;

/**
 * The card's variables for `card`: waiting, with its buttons (a JSON list of label, action,
 * confirmation and style); or, with `outcome`, decided, with no buttons and what became of it.
 */
export function dingtalkCardData(
  card: DecisionCard,
  options: { now: number; outcome?: CardOutcome },
): DingTalkCardData {
  const { outcome } = options;
  const waited = waitedFor(card.waitingSince, options.now);
  const field = (text: string) => clipText(text, DINGTALK_TEXT_LIMITS.field);
  const buttons = outcome
    ? []
    : card.decisions.map((decision, index) => ({
        label: clipText(decision.label, DINGTALK_TEXT_LIMITS.label),
        action: buttonKeyOf(card, decision.decision),
        confirm: decision.confirm === undefined ? '' : clipText(decision.confirm, DINGTALK_TEXT_LIMITS.confirm),
        style: decision.confirm !== undefined ? 'danger' : index === 0 ? 'primary' : 'default',
      }));
  return {
    title: clipText(
      `${outcome ? 'Decided' : 'Waiting for a decision'}: ${card.idempotencyKey}`,
      DINGTALK_TEXT_LIMITS.title,
    ),
    status: outcome ? 'decided' : 'waiting',
    idempotencyKey: field(card.idempotencyKey),
    waitingIn: field(card.waitingIn),
    customerId: field(card.customerId),
    amount: field(card.amount),
    waiting: field(outcome || waited === undefined ? card.waitingSince : `${waited} (since ${card.waitingSince})`),
    episode: field(card.episode),
    cause: clipText(`${card.cause.code} — ${card.cause.sentence}`, DINGTALK_TEXT_LIMITS.cause),
    workflowUrl: httpAddress(card.workflowUrl) ?? '',
    buttons: JSON.stringify(buttons),
    outcome: outcome ? clipText(outcomeLine(outcome), DINGTALK_TEXT_LIMITS.outcome) : '',
  };
}

/** Refuses a variable DingTalk would refuse for its size, before asking DingTalk. */
function checkedSizes(card: DecisionCard, data: DingTalkCardData): DingTalkCardData {
  for (const [name, value] of Object.entries(data)) {
    const bytes = Buffer.byteLength(value, 'utf8');
    if (bytes > DINGTALK_CARD_VALUE_MAX_BYTES) {
      throw new Error(
        `dingtalk decision card for ${card.idempotencyKey}: its ${name} is ${bytes} bytes, above the ${DINGTALK_CARD_VALUE_MAX_BYTES} DingTalk takes`,
      );
    }
  }
  return data;
}

export function dingtalkDecisionCards(options: DingTalkDecisionCardsOptions): DecisionCardSender {
  const now = options.now ?? Date.now;
  const api = createDingTalkOpenApi(options);
  const { templateId, openSpaceId, spaceType } = options.decisions;
  // The app's robot delivers the card: an app's robot code is its AppKey.
  const delivery =
    spaceType === 'IM_GROUP'
      ? {
          imGroupOpenSpaceModel: { supportForward: false },
          imGroupOpenDeliverModel: { robotCode: options.appKey },
        }
      : {
          imRobotOpenSpaceModel: { supportForward: false },
          imRobotOpenDeliverModel: { spaceType: 'IM_ROBOT', robotCode: options.appKey },
        };
  return {
    async send(card, sendKey, attempt) {
      const what = `send decision card for ${card.idempotencyKey}`;
      const result = await api.call(
        'POST',
        '/v1.0/card/instances/createAndDeliver',
        {
          body: {
            cardTemplateId: templateId,
            // DingTalk's own idempotency key: a repeated send is refused, and the card is the first attempt's.
            outTrackId: sendKey,
            callbackType: 'STREAM',
            cardData: { cardParamMap: checkedSizes(card, dingtalkCardData(card, { now: now() })) },
            openSpaceId,
            userIdType: 1,
            ...delivery,
          },
          // Read as the card being there only on a retry: on a first attempt the key was taken
          // by something else (another deployment of the same app), and that is a refusal.
          accept: attempt?.retried ? [DINGTALK_CARD_ALREADY_EXISTS] : [],
        },
        what,
      );
      if (!isAcceptedRefusal(result)) {
        const delivered = (result as { deliverResults?: unknown } | undefined)?.deliverResults;
        const failed = Array.isArray(delivered)
          ? (delivered as { success?: unknown }[]).filter((entry) => entry.success === false)
          : [];
        // Created but not delivered (the robot is not in the group, say): sending again delivers
        // nothing more, so it is said, not retried.
        if (failed.length > 0) {
          const said = textOfValue((failed[0] as { errorMsg?: unknown }).errorMsg);
          throw new OaApiError(
            'dingtalk',
            400,
            undefined,
            `dingtalk ${what}: created, but not delivered to its open space${said ? ` (${clipText(said, 200)})` : ''}`,
          );
        }
      }
      return { messageId: sendKey } satisfies PostedCard;
    },

    async refresh(posted, card, outcome) {
      const result = await api.call(
        'PUT',
        '/v1.0/card/instances',
        {
          body: {
            outTrackId: posted.messageId,
            cardData: { cardParamMap: checkedSizes(card, dingtalkCardData(card, { now: now(), outcome })) },
            cardUpdateOptions: { updateCardDataByKey: true },
            userIdType: 1,
          },
          accept: [DINGTALK_CARD_NOT_FOUND],
        },
        `refresh decision card for ${card.idempotencyKey}`,
      );
      return isAcceptedRefusal(result) ? 'not updatable' : 'updated';
    },
  };
}

/**
 * A click as a card callback's data tells it (`outTrackId`, `userId`, and in `content` the
 * button's parameters, its `action` among them), or why it is no click of these cards.
 */
export function dingtalkCardClickOf(
  data: string,
  eventId: string,
): { kind: 'click'; click: CardClickEvent } | { kind: 'unusable'; reason: string } {
  const callback = jsonObjectOf(data);
  if (!callback) return { kind: 'unusable', reason: 'a card callback whose data is not a JSON object' };
  const userId = typeof callback.userId === 'string' ? callback.userId.trim() : '';
  if (!userId) return { kind: 'unusable', reason: 'a card callback without a userId' };
  const content = typeof callback.content === 'string' ? jsonObjectOf(callback.content) : undefined;
  const params = (content?.cardPrivateData as { params?: unknown } | undefined)?.params;
  const action = (params as { action?: unknown } | undefined)?.action;
  const button = typeof action === 'string' ? buttonOfKey(action) : undefined;
  if (!button) return { kind: 'unusable', reason: 'a card callback whose action is no decision card button' };
  // The button's card is the card of its key's episode: a click names the card it came from.
  if (callback.outTrackId !== cardSendKey('dingtalk', button.idempotencyKey, button.episode)) {
    return { kind: 'unusable', reason: 'a card callback whose action is not of the card it came from' };
  }
  return { kind: 'click', click: { vendor: 'dingtalk', eventId, userId, ...button } };
}

/**
 * The answer to a click, inside DingTalk's 2 s: on the clicker's copy, the answer and its tone
 * (`userPrivateData`); and when the click locked the card, the card for everyone without its
 * buttons, reading `lockedAs` (the card's workflow redraws it in full once the key moved on).
 */
export function dingtalkClickAnswer(answer: CardClickReply): Record<string, unknown> {
  return {
    userPrivateData: {
      cardParamMap: { clickAnswer: clipText(answer.text, DINGTALK_TEXT_LIMITS.outcome), clickTone: answer.tone },
    },
    ...(answer.lockedAs === undefined
      ? {}
      : {
          cardData: {
            cardParamMap: {
              status: 'locked',
              buttons: '[]',
              outcome: clipText(answer.lockedAs, DINGTALK_TEXT_LIMITS.outcome),
            },
          },
        }),
    cardUpdateOptions: { updateCardDataByKey: true, updatePrivateDataByKey: true },
  };
}
