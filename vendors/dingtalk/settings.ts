// DingTalk's settings (docs/connectors.md): the app's key and secret, the HTTP callback's aes_key
// and token, the open API's address, how events arrive, whom the orders' receipts are commented
// as, and the decision cards' template, open space and operators; and the connector's part of the
// configuration.
import { z } from 'zod';
import { entriesNotOfForm, listEntries, type VendorSettings } from '../vendor-settings.js';
import { httpUrlSetting } from '../../services/config/setting-types.js';

export const dingtalkSettings = {
  DINGTALK_APP_KEY: z.string().min(1).optional(),
  DINGTALK_APP_SECRET: z.string().min(1).optional(),
  DINGTALK_AES_KEY: z
    .string()
    .regex(/^[A-Za-z0-9+/]{43}$/, 'must be the 43 characters of base64 the DingTalk console shows')
    .optional(),
  DINGTALK_TOKEN: z.string().min(1).optional(),
  DINGTALK_API_BASE_URL: httpUrlSetting.default('https://api.dingtalk.com'),
  // How DingTalk's events arrive: its HTTP callback, or the Stream connection the API opens as well.
  DINGTALK_EVENT_MODE: z.enum(['callback', 'stream']).default('callback'),
  // The user an order's receipt is commented on its approval as (vendors/approval-receipts.ts); unset: no receipts.
  DINGTALK_RECEIPT_USER_ID: z.string().optional(),
  // The card template decision cards are drawn with (vendors/decision-cards.ts); unset: no cards.
  DINGTALK_DECISION_CARD_TEMPLATE_ID: z.string().optional(),
  // Where the cards go: a group (`dtv1.card//IM_GROUP.<open conversation id>`) or one person's chat with the app's robot.
  DINGTALK_DECISION_OPEN_SPACE_ID: z.string().optional(),
  // The user ids allowed to decide from a card, comma-separated; required with the template.
  DINGTALK_OPERATOR_USER_IDS: z.string().optional(),
};
type DingTalkEnv = z.output<z.ZodObject<typeof dingtalkSettings>>;

export interface DingTalkConfig {
  appKey: string;
  appSecret: string;
  /** The HTTP callback's keys; undefined: `POST /webhooks/dingtalk` is off (Stream mode without them). */
  callback: { aesKey: string; token: string } | undefined;
  /** DINGTALK_EVENT_MODE=stream: the API also takes events over the Stream connection it opens. */
  stream: boolean;
  apiBaseUrl: string;
  /** DINGTALK_RECEIPT_USER_ID: the user each order's receipt is commented on its approval as; undefined: no receipts. */
  receipts: { userId: string } | undefined;
  /**
   * DINGTALK_DECISION_CARD_TEMPLATE_ID, DINGTALK_DECISION_OPEN_SPACE_ID and DINGTALK_OPERATOR_USER_IDS:
   * the template decision cards are drawn with, where they go, and the user ids allowed to decide
   * from them; undefined: no cards.
   */
  decisions: DingTalkDecisions | undefined;
}

export interface DingTalkDecisions {
  templateId: string;
  openSpaceId: string;
  /** A group's chat, or one person's chat with the app's robot, as the open space names it. */
  spaceType: 'IM_GROUP' | 'IM_ROBOT';
  operators: readonly string[];
}

/** A DingTalk user id (`userid`) as the address book gives it. */
const DINGTALK_USER_ID_FORM = /^[A-Za-z0-9_-]{1,64}$/;
/** A card template's id as the card builder shows it (`….schema`). */
const DINGTALK_TEMPLATE_ID_FORM = /^[A-Za-z0-9._-]{1,128}$/;
/** One open space: a group's open conversation id, or a user id for the robot's chat with that person. */
const DINGTALK_OPEN_SPACE_FORM = /^dtv1\.card\/\/(IM_GROUP|IM_ROBOT)\.([A-Za-z0-9_+/=$-]{1,128})$/;

/**
 * The decision cards' template, open space and operators; a problem when one is set without the
 * others, malformed, or set without the Stream (a card's clicks come over it: callbackType STREAM).
 * Entries are named by position: a value put in the wrong variable is not repeated.
 */
function decisionsFrom(env: DingTalkEnv, problems: string[]): DingTalkDecisions | undefined {
  const templateId = env.DINGTALK_DECISION_CARD_TEMPLATE_ID?.trim();
  const openSpaceId = env.DINGTALK_DECISION_OPEN_SPACE_ID?.trim();
  const operators = listEntries(env.DINGTALK_OPERATOR_USER_IDS);
  if (!templateId && !openSpaceId && operators.length === 0) return undefined;
  const problemsBefore = problems.length;
  const missing = [
    ...(templateId ? [] : ['DINGTALK_DECISION_CARD_TEMPLATE_ID']),
    ...(openSpaceId ? [] : ['DINGTALK_DECISION_OPEN_SPACE_ID']),
    ...(operators.length > 0 ? [] : ['DINGTALK_OPERATOR_USER_IDS']),
  ];
  if (missing.length > 0) {
    problems.push(
      `${missing.join(', ')}: required for DingTalk decision cards (the template, where the cards go, and the user ids allowed to decide, all three or none)`,
    );
  }
  if (env.DINGTALK_EVENT_MODE !== 'stream') {
    const named = [
      ...(templateId ? ['DINGTALK_DECISION_CARD_TEMPLATE_ID'] : []),
      ...(openSpaceId ? ['DINGTALK_DECISION_OPEN_SPACE_ID'] : []),
      ...(operators.length > 0 ? ['DINGTALK_OPERATOR_USER_IDS'] : []),
    ];
    problems.push(
      `${named.join(', ')}: DingTalk decision cards require DINGTALK_EVENT_MODE=stream (a card's clicks come over the Stream connection)`,
    );
  }
  if (templateId && !DINGTALK_TEMPLATE_ID_FORM.test(templateId)) {
    problems.push('DINGTALK_DECISION_CARD_TEMPLATE_ID: is not a card template id (letters, digits, ".", "_", "-")');
  }
  const space = openSpaceId ? DINGTALK_OPEN_SPACE_FORM.exec(openSpaceId) : null;
  if (openSpaceId && !space) {
    problems.push(
      'DINGTALK_DECISION_OPEN_SPACE_ID: is not one open space (dtv1.card//IM_GROUP.<open conversation id> or dtv1.card//IM_ROBOT.<user id>)',
    );
  }
  entriesNotOfForm(
    'DINGTALK_OPERATOR_USER_IDS',
    operators,
    { pattern: DINGTALK_USER_ID_FORM, says: 'a DingTalk user id (letters, digits, _ or -)' },
    problems,
  );
  if (problems.length !== problemsBefore || !templateId || !openSpaceId || !space) return undefined;
  return { templateId, openSpaceId, spaceType: space[1] as DingTalkDecisions['spaceType'], operators };
}

export function dingtalkFrom(
  env: DingTalkEnv,
  stream = false,
  decisions: DingTalkConfig['decisions'] = undefined,
): DingTalkConfig {
  return {
    appKey: env.DINGTALK_APP_KEY as string,
    appSecret: env.DINGTALK_APP_SECRET as string,
    callback:
      env.DINGTALK_AES_KEY && env.DINGTALK_TOKEN
        ? { aesKey: env.DINGTALK_AES_KEY, token: env.DINGTALK_TOKEN }
        : undefined,
    stream,
    apiBaseUrl: env.DINGTALK_API_BASE_URL,
    receipts: env.DINGTALK_RECEIPT_USER_ID?.trim() ? { userId: env.DINGTALK_RECEIPT_USER_ID.trim() } : undefined,
    decisions,
  };
}

/**
 * The connector as its event mode makes it, with the receipts' commenter checked: a problem when
 * it is not a user id, or it is set while the connector is off.
 */
function dingtalkWithReceipts(env: DingTalkEnv, problems: string[], on: () => boolean): DingTalkConfig | undefined {
  const problemsBefore = problems.length;
  const decisions = decisionsFrom(env, problems);
  const config =
    env.DINGTALK_EVENT_MODE === 'stream'
      ? dingtalkStreamFrom(env, problems, decisions)
      : on()
        ? dingtalkFrom(env)
        : undefined;
  const userId = env.DINGTALK_RECEIPT_USER_ID?.trim();
  if (!userId) return config;
  if (!DINGTALK_USER_ID_FORM.test(userId)) {
    problems.push('DINGTALK_RECEIPT_USER_ID: is not a DingTalk user id (letters, digits, _ or -)');
  } else if (!config && problems.length === problemsBefore) {
    problems.push(
      "DINGTALK_RECEIPT_USER_ID: requires the DingTalk connector on (the app posts the receipts: DINGTALK_APP_KEY, DINGTALK_APP_SECRET, and in callback mode the callback's two keys)",
    );
  }
  return config;
}

/**
 * DINGTALK_EVENT_MODE=stream: the Stream connection opens with the app's key and secret alone; the
 * callback's aes_key and token, when both are set too, keep `POST /webhooks/dingtalk` open beside it
 * (both doors during a move from one to the other).
 */
export function dingtalkStreamFrom(
  env: DingTalkEnv,
  problems: string[],
  decisions: DingTalkConfig['decisions'] = undefined,
): DingTalkConfig | undefined {
  const missing = (['DINGTALK_APP_KEY', 'DINGTALK_APP_SECRET'] as const).filter((name) => env[name] === undefined);
  if (missing.length > 0) {
    problems.push(
      `${missing.join(', ')}: required with DINGTALK_EVENT_MODE=stream (the Stream connection opens with them)`,
    );
    return undefined;
  }
  if (Boolean(env.DINGTALK_AES_KEY) !== Boolean(env.DINGTALK_TOKEN)) {
    problems.push(
      env.DINGTALK_AES_KEY
        ? 'DINGTALK_TOKEN: required with DINGTALK_AES_KEY (the callback needs both; unset both for the Stream alone)'
        : 'DINGTALK_AES_KEY: required with DINGTALK_TOKEN (the callback needs both; unset both for the Stream alone)',
    );
    return undefined;
  }
  return dingtalkFrom(env, true, decisions);
}

/** The DingTalk connector's part of the configuration (vendors/settings.ts). */
export const dingtalkConnectorSettings = {
  env: dingtalkSettings,
  required: ['DINGTALK_APP_KEY', 'DINGTALK_APP_SECRET', 'DINGTALK_AES_KEY', 'DINGTALK_TOKEN'],
  secrets: ['DINGTALK_APP_SECRET', 'DINGTALK_AES_KEY', 'DINGTALK_TOKEN'],
  // The Stream has no endpoint setting: its endpoint is discovered over this address, and one
  // discovered over https:// is opened as wss:// or not at all (stream.ts).
  apiUrls: ['DINGTALK_API_BASE_URL'],
  from: dingtalkWithReceipts,
  events: (config) => [...(config.callback ? ['callback'] : []), ...(config.stream ? ['stream'] : [])],
} satisfies VendorSettings<typeof dingtalkSettings, DingTalkConfig>;
