// Feishu's settings (docs/connectors.md): the app's id and secret, the callback's two keys, the
// open API's address, how events reach the service, the chat decision cards go to with the
// operators allowed to decide there, and whom the orders' receipts are commented as; and the connector's part of the configuration.
import { z } from 'zod';
import { entriesNotOfForm, listEntries, type VendorSettings } from '../vendor-settings.js';
import { httpUrlSetting } from '../../services/config/setting-types.js';

/** How Feishu's events reach the service: `callback` (POST /webhooks/feishu) or `long-connection`. */
export const FEISHU_EVENT_MODES = ['callback', 'long-connection'] as const;
export type FeishuEventMode = (typeof FEISHU_EVENT_MODES)[number];

export const feishuSettings = {
  FEISHU_APP_ID: z.string().min(1).optional(),
  FEISHU_APP_SECRET: z.string().min(1).optional(),
  FEISHU_ENCRYPT_KEY: z.string().min(1).optional(),
  FEISHU_VERIFICATION_TOKEN: z.string().min(1).optional(),
  FEISHU_API_BASE_URL: httpUrlSetting.default('https://open.feishu.cn'),
  // How Feishu's events reach the service: its callback, or a long connection the API opens (docs/connectors.md).
  FEISHU_EVENT_MODE: z.enum(FEISHU_EVENT_MODES).default('callback'),
  // The chat decision cards are posted to (vendors/decision-cards.ts); unset: no cards.
  FEISHU_DECISION_CHAT_ID: z
    .string()
    .regex(/^oc_[0-9A-Za-z]{1,64}$/, 'must be a Feishu chat id: "oc_" and letters or digits, as Feishu gives it')
    .optional(),
  // The open ids allowed to decide from a card, comma-separated; required with the chat.
  FEISHU_OPERATOR_OPEN_IDS: z.string().optional(),
  // The open id an order's receipt is commented on its approval as (vendors/approval-receipts.ts); unset: no receipts.
  FEISHU_RECEIPT_USER_ID: z.string().optional(),
};
type FeishuEnv = z.output<z.ZodObject<typeof feishuSettings>>;

export interface FeishuConfig {
  appId: string;
  appSecret: string;
  /** The open API, and in long-connection mode where the connection's endpoint is discovered. */
  apiBaseUrl: string;
  /** FEISHU_EVENT_MODE: `long-connection` has the API process hold Feishu's long connection. */
  eventMode: FeishuEventMode;
  /**
   * The callback's keys; undefined when `POST /webhooks/feishu` is off (long-connection mode
   * without them). The Encrypt Key is required with the callback: without one Feishu neither
   * encrypts nor signs, and nothing can be verified.
   */
  callback: { encryptKey: string; verificationToken: string } | undefined;
  /**
   * FEISHU_DECISION_CHAT_ID and FEISHU_OPERATOR_OPEN_IDS: the chat decision cards go to, and the
   * open ids allowed to decide from them; undefined when no chat is named (no cards).
   */
  decisions: { chatId: string; operators: readonly string[] } | undefined;
  /**
   * FEISHU_RECEIPT_USER_ID: the open id each order's receipt is commented on its approval as;
   * undefined when unset (no receipts).
   */
  receipts: { userId: string } | undefined;
}

/** The SDK's WSClient starts only for an app id of this form; any other it refuses in a log line, silently. */
const FEISHU_APP_ID_FORM = /^cli_[0-9a-fA-F]{16}$/;
/** A user's open id as Feishu gives it. */
const FEISHU_OPEN_ID_FORM = /^ou_[0-9A-Za-z]{1,64}$/;

/**
 * The decision cards' chat and operators; a problem when the operators are missing, malformed or
 * set without a chat, or the chat is named while the Feishu app is off. Entries are named by
 * position: a value put in the wrong variable is not repeated.
 */
function decisionsFrom(env: FeishuEnv, problems: string[], appOn: boolean): FeishuConfig['decisions'] {
  const chatId = env.FEISHU_DECISION_CHAT_ID;
  const entries = listEntries(env.FEISHU_OPERATOR_OPEN_IDS);
  if (chatId === undefined) {
    if (entries.length > 0) {
      problems.push(
        'FEISHU_OPERATOR_OPEN_IDS: set without FEISHU_DECISION_CHAT_ID (no card is posted for them to decide from)',
      );
    }
    return undefined;
  }
  const problemsBefore = problems.length;
  if (!appOn) {
    problems.push(
      "FEISHU_DECISION_CHAT_ID: requires the Feishu connector on (the app posts the cards: FEISHU_APP_ID, FEISHU_APP_SECRET, and in callback mode the callback's two keys)",
    );
  }
  if (entries.length === 0) {
    problems.push(
      'FEISHU_OPERATOR_OPEN_IDS: required with FEISHU_DECISION_CHAT_ID (the open ids, comma-separated, allowed to decide from a card)',
    );
  }
  entriesNotOfForm(
    'FEISHU_OPERATOR_OPEN_IDS',
    entries,
    { pattern: FEISHU_OPEN_ID_FORM, says: 'a Feishu open id ("ou_" and letters or digits)' },
    problems,
  );
  return problems.length === problemsBefore ? { chatId, operators: entries } : undefined;
}

/** The receipts' commenter; a problem when it is not an open id, or the Feishu app is off. */
function receiptsFrom(env: FeishuEnv, problems: string[], appOn: boolean): FeishuConfig['receipts'] {
  const userId = env.FEISHU_RECEIPT_USER_ID?.trim();
  if (!userId) return undefined;
  const problemsBefore = problems.length;
  if (!appOn) {
    problems.push(
      "FEISHU_RECEIPT_USER_ID: requires the Feishu connector on (the app posts the receipts: FEISHU_APP_ID, FEISHU_APP_SECRET, and in callback mode the callback's two keys)",
    );
  }
  if (!FEISHU_OPEN_ID_FORM.test(userId)) {
    problems.push('FEISHU_RECEIPT_USER_ID: is not a Feishu open id ("ou_" and letters or digits)');
  }
  return problems.length === problemsBefore ? { userId } : undefined;
}

/**
 * The Feishu connector. In callback mode all four settings turn it on, as for the other vendors
 * (`on`, vendors/settings.ts). In long-connection mode the connection needs the app id and secret
 * only (it is authenticated when its endpoint is discovered, and events arrive in plaintext); the
 * callback's two keys, when both are set too, keep `POST /webhooks/feishu` on beside it, for a migration.
 */
export function feishuFrom(env: FeishuEnv, problems: string[], on: () => boolean): FeishuConfig | undefined {
  const app = (
    callback: FeishuConfig['callback'],
    decisions: FeishuConfig['decisions'],
    receipts: FeishuConfig['receipts'],
  ): FeishuConfig => ({
    appId: env.FEISHU_APP_ID as string,
    appSecret: env.FEISHU_APP_SECRET as string,
    apiBaseUrl: env.FEISHU_API_BASE_URL,
    eventMode: env.FEISHU_EVENT_MODE,
    callback,
    decisions,
    receipts,
  });
  const callbackKeys = () =>
    env.FEISHU_ENCRYPT_KEY && env.FEISHU_VERIFICATION_TOKEN
      ? { encryptKey: env.FEISHU_ENCRYPT_KEY, verificationToken: env.FEISHU_VERIFICATION_TOKEN }
      : undefined;
  if (env.FEISHU_EVENT_MODE === 'callback') {
    const isOn = on();
    const decisions = decisionsFrom(env, problems, isOn);
    const receipts = receiptsFrom(env, problems, isOn);
    return isOn ? app(callbackKeys(), decisions, receipts) : undefined;
  }

  const problemsBefore = problems.length;
  const missing = (['FEISHU_APP_ID', 'FEISHU_APP_SECRET'] as const).filter((name) => env[name] === undefined);
  if (missing.length > 0) {
    problems.push(
      `${missing.join(', ')}: required with FEISHU_EVENT_MODE=long-connection (the connection is opened with the app's id and secret)`,
    );
  } else if (!FEISHU_APP_ID_FORM.test(env.FEISHU_APP_ID as string)) {
    problems.push(
      'FEISHU_APP_ID: must be "cli_" and 16 hexadecimal digits with FEISHU_EVENT_MODE=long-connection (the SDK opens no connection for another app id)',
    );
  }
  const keys = (['FEISHU_ENCRYPT_KEY', 'FEISHU_VERIFICATION_TOKEN'] as const).filter((name) => env[name] !== undefined);
  if (keys.length === 1) {
    const [given] = keys;
    const other = given === 'FEISHU_ENCRYPT_KEY' ? 'FEISHU_VERIFICATION_TOKEN' : 'FEISHU_ENCRYPT_KEY';
    problems.push(
      `${other}: required with ${given} (the Feishu callback beside the long connection is partly configured; unset both to keep the long connection alone)`,
    );
  }
  const decisions = decisionsFrom(env, problems, missing.length === 0);
  const receipts = receiptsFrom(env, problems, missing.length === 0);
  return problems.length === problemsBefore ? app(callbackKeys(), decisions, receipts) : undefined;
}

/** The Feishu connector's part of the configuration (vendors/settings.ts). */
export const feishuConnectorSettings = {
  env: feishuSettings,
  // The Encrypt Key is what Feishu signs with: a callback without it could be checked only by the
  // token inside the body, after parsing whatever an unauthenticated caller sent.
  required: ['FEISHU_APP_ID', 'FEISHU_APP_SECRET', 'FEISHU_ENCRYPT_KEY', 'FEISHU_VERIFICATION_TOKEN'],
  secrets: ['FEISHU_APP_SECRET', 'FEISHU_ENCRYPT_KEY', 'FEISHU_VERIFICATION_TOKEN'],
  // Also where the long connection's endpoint is discovered: the SDK opens it as that answer says.
  apiUrls: ['FEISHU_API_BASE_URL'],
  from: feishuFrom,
  events: (config) => [
    ...(config.callback ? ['callback'] : []),
    ...(config.eventMode === 'long-connection' ? ['long-connection'] : []),
  ],
} satisfies VendorSettings<typeof feishuSettings, FeishuConfig>;
