// DingTalk's settings (docs/connectors.md): the app's key and secret, the HTTP callback's aes_key
// and token, the open API's address, how events arrive, and whom the orders' receipts are commented
// as; and the connector's part of the configuration.
import { z } from 'zod';
import type { VendorSettings } from '../vendor-settings.js';
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
}

/** A DingTalk user id (`userid`) as the address book gives it. */
const DINGTALK_USER_ID_FORM = /^[A-Za-z0-9_-]{1,64}$/;

export function dingtalkFrom(env: DingTalkEnv, stream = false): DingTalkConfig {
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
  };
}

/**
 * The connector as its event mode makes it, with the receipts' commenter checked: a problem when
 * it is not a user id, or it is set while the connector is off.
 */
function dingtalkWithReceipts(env: DingTalkEnv, problems: string[], on: () => boolean): DingTalkConfig | undefined {
  const problemsBefore = problems.length;
  const config =
    env.DINGTALK_EVENT_MODE === 'stream' ? dingtalkStreamFrom(env, problems) : on() ? dingtalkFrom(env) : undefined;
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
export function dingtalkStreamFrom(env: DingTalkEnv, problems: string[]): DingTalkConfig | undefined {
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
  return dingtalkFrom(env, true);
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
