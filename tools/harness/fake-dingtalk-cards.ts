// The fake DingTalk's interactive cards (`POST /v1.0/card/instances/createAndDeliver`, `PUT
// /v1.0/card/instances`), as DingTalk documents them: a card is created and delivered to one open
// space by the app's robot under an `outTrackId` DingTalk takes once (a second create is refused
// `param.cardAlreadyExist`); its variables are strings of at most 1 KB; an update by the
// outTrackId merges the variables given when `updateCardDataByKey` is set, else replaces them; a
// card callback's answer (`response`) updates the card for everyone (`cardData`) and the clicker's
// copy (`userPrivateData`). Kept apart from fake-dingtalk.ts, which routes to it.
import { randomBytes } from 'node:crypto';
import type { Answer, RequestContext } from './fake-oa-api.js';

/** A card as DingTalk holds it. */
export interface FakeDingTalkCard {
  outTrackId: string;
  templateId: string;
  openSpaceId: string;
  callbackType: string;
  /** Its variables as created. */
  createdWith: Record<string, string>;
  /** Its variables now. */
  data: Record<string, string>;
  /** Each user's own variables, from the answers to their clicks. */
  privateData: Record<string, Record<string, string>>;
  /** Updates taken: PUTs and callback answers that changed the card's variables. */
  updates: number;
}

export interface FakeDingTalkCards {
  /** Routes a request of the card API; undefined for any other. */
  request(method: string, url: URL, body: unknown, context: RequestContext): Answer | undefined;
  cards(): FakeDingTalkCard[];
  /** Creates that arrived, taken or refused. */
  createRequests(): number;
  /** The next create is answered this late, after the card is kept: a create answered after its client gave up. */
  answerNextCreateAfter(ms: number): void;
  /** The next create delivers to no space (the robot is not in the group): created, not delivered. */
  failNextDelivery(): void;
  /** Applies a card callback's answer, as DingTalk does: the card's variables, the clicker's own. */
  applyCallbackAnswer(outTrackId: string, userId: string, response: Record<string, unknown>): void;
}

const OPEN_SPACE = /^dtv1\.card\/\/(IM_GROUP|IM_ROBOT)\.(.+)$/;
const VALUE_MAX_BYTES = 1_024;

const refusal = (code: string, message: string): Answer => ({
  status: 400,
  body: { requestid: randomBytes(8).toString('hex'), code, message },
});

/** A `cardParamMap` DingTalk takes: strings, each of at most 1 KB; undefined for anything else. */
function paramMap(value: unknown): Record<string, string> | undefined {
  const map = (value as { cardParamMap?: unknown } | undefined)?.cardParamMap;
  if (map === null || typeof map !== 'object' || Array.isArray(map)) return undefined;
  const entries = Object.entries(map as Record<string, unknown>);
  if (entries.some(([, each]) => typeof each !== 'string' || Buffer.byteLength(each) > VALUE_MAX_BYTES))
    return undefined;
  return Object.fromEntries(entries) as Record<string, string>;
}

export function fakeDingTalkCards(): FakeDingTalkCards {
  const cards = new Map<string, FakeDingTalkCard>();
  let creates = 0;
  let nextCreateDelayMs = 0;
  let failDelivery = false;

  const tokenHeld = (context: RequestContext) => {
    const token = context.headers['x-acs-dingtalk-access-token'];
    return context.tokenValid(Array.isArray(token) ? token[0] : token);
  };

  const create = (body: Record<string, unknown>): Answer => {
    creates += 1;
    const { cardTemplateId, outTrackId, callbackType, openSpaceId } = body;
    const data = paramMap(body.cardData);
    if (typeof cardTemplateId !== 'string' || !cardTemplateId)
      return refusal('param.templateIdEmpty', 'cardTemplateId is required');
    if (typeof outTrackId !== 'string' || !outTrackId)
      return refusal('param.outTrackIdEmpty', 'outTrackId is required');
    if (!data)
      return refusal('param.cardDataInvalid', 'cardData.cardParamMap must map names to strings of at most 1 KB');
    if (callbackType !== undefined && callbackType !== 'STREAM' && callbackType !== 'HTTP') {
      return refusal('param.callbackTypeInvalid', 'callbackType is STREAM or HTTP');
    }
    const space = typeof openSpaceId === 'string' ? OPEN_SPACE.exec(openSpaceId) : null;
    if (!space) return refusal('param.openSpaceIdInvalid', 'openSpaceId is not an open space');
    const deliver =
      space[1] === 'IM_GROUP'
        ? (body.imGroupOpenDeliverModel as { robotCode?: unknown } | undefined)?.robotCode
        : (body.imRobotOpenDeliverModel as { spaceType?: unknown } | undefined)?.spaceType === 'IM_ROBOT';
    if (!deliver) return refusal('param.deliverModelInvalid', `the ${space[1]} deliver model is missing`);
    if (cards.has(outTrackId)) return refusal('param.cardAlreadyExist', 'card already exists');
    cards.set(outTrackId, {
      outTrackId,
      templateId: cardTemplateId,
      openSpaceId: openSpaceId as string,
      callbackType: typeof callbackType === 'string' ? callbackType : 'HTTP',
      createdWith: { ...data },
      data: { ...data },
      privateData: {},
      updates: 0,
    });
    const delayMs = nextCreateDelayMs;
    nextCreateDelayMs = 0;
    const delivered = !failDelivery;
    failDelivery = false;
    return {
      status: 200,
      body: {
        success: true,
        result: {
          outTrackId,
          deliverResults: [
            {
              spaceType: space[1],
              spaceId: space[2],
              success: delivered,
              ...(delivered ? { carrierId: randomBytes(8).toString('hex') } : { errorMsg: 'robot not in the group' }),
            },
          ],
        },
      },
      ...(delayMs > 0 ? { delayMs } : {}),
    };
  };

  const update = (body: Record<string, unknown>): Answer => {
    const { outTrackId } = body;
    const card = typeof outTrackId === 'string' ? cards.get(outTrackId) : undefined;
    if (typeof outTrackId !== 'string' || !outTrackId)
      return refusal('param.outTrackIdEmpty', 'outTrackId is required');
    if (!card) return refusal('param.cardNotExist', 'card does not exist');
    const data = paramMap(body.cardData);
    if (!data) return refusal('param.cardDataAndPrivateDataBothEmpty', 'cardData is empty');
    const byKey =
      (body.cardUpdateOptions as { updateCardDataByKey?: unknown } | undefined)?.updateCardDataByKey === true;
    card.data = byKey ? { ...card.data, ...data } : { ...data };
    card.updates += 1;
    return { status: 200, body: { success: true, result: true } };
  };

  return {
    request(method, url, body, context) {
      const path = url.pathname;
      const isCreate = method === 'POST' && path === '/v1.0/card/instances/createAndDeliver';
      const isUpdate = method === 'PUT' && path === '/v1.0/card/instances';
      if (!isCreate && !isUpdate) return undefined;
      if (!tokenHeld(context))
        return { status: 401, body: { code: 'InvalidAuthentication', message: 'access token invalid' } };
      const given = (body ?? {}) as Record<string, unknown>;
      return isCreate ? create(given) : update(given);
    },
    cards: () => [...cards.values()].map((card) => structuredClone(card)),
    createRequests: () => creates,
    answerNextCreateAfter: (ms) => void (nextCreateDelayMs = ms),
    failNextDelivery: () => void (failDelivery = true),
    applyCallbackAnswer(outTrackId, userId, response) {
      const card = cards.get(outTrackId);
      if (!card) return;
      const shared = paramMap(response.cardData);
      if (shared) {
        card.data = { ...card.data, ...shared };
        card.updates += 1;
      }
      const own = paramMap(response.userPrivateData);
      if (own) card.privateData[userId] = { ...card.privateData[userId], ...own };
    },
  };
}

/** A click on a card's button as DingTalk's card callback carries it (the data of a CALLBACK frame). */
export function dingtalkCardClick(click: {
  outTrackId: string;
  userId: string;
  action: string;
}): Record<string, unknown> {
  return {
    type: 'actionCallback',
    outTrackId: click.outTrackId,
    corpId: 'dingfakecorp',
    userId: click.userId,
    userIdType: 1,
    spaceType: 'IM_GROUP',
    content: JSON.stringify({ cardPrivateData: { actionIds: ['decide'], params: { action: click.action } } }),
  };
}
