// WeCom's settings (docs/connectors.md): the corp id, the approval-reading app's secret, the
// callback's token and EncodingAESKey, the open API's address, whether applicants get their
// order's receipt, and who gets decision cards and may decide from them; and the connector's part of the configuration.
import { z } from 'zod';
import { entriesNotOfForm, listEntries, type VendorSettings } from '../vendor-settings.js';
import { httpUrlSetting } from '../../services/config/setting-types.js';

export const wecomSettings = {
  WECOM_CORP_ID: z.string().min(1).optional(),
  WECOM_AGENT_SECRET: z.string().min(1).optional(),
  WECOM_TOKEN: z.string().min(1).optional(),
  WECOM_ENCODING_AES_KEY: z
    .string()
    .regex(/^[A-Za-z0-9+/]{43}$/, 'must be the 43 characters of base64 the WeCom console shows')
    .optional(),
  WECOM_API_BASE_URL: httpUrlSetting.default('https://qyapi.weixin.qq.com'),
  // `on`: each approval's applicant gets its order number as an app message (vendors/approval-receipts.ts).
  WECOM_RECEIPTS: z.enum(['on', 'off']).default('off'),
  // The app the receipts and decision cards are sent as (message/send's agentid); required with either.
  WECOM_AGENT_ID: z.string().optional(),
  // The members decision cards are sent to, comma-separated user ids (vendors/decision-cards.ts); unset: no cards.
  WECOM_DECISION_TO_USERS: z.string().optional(),
  // The user ids allowed to decide from a card, comma-separated; required with the recipients.
  WECOM_OPERATOR_USER_IDS: z.string().optional(),
};
type WeComEnv = z.output<z.ZodObject<typeof wecomSettings>>;

export interface WeComConfig {
  corpId: string;
  /** The secret of the app that reads approvals: the approval app's, or a self-built app's allowed to. */
  agentSecret: string;
  token: string;
  encodingAesKey: string;
  apiBaseUrl: string;
  /** WECOM_RECEIPTS=on: the app (its agent id) each approval's applicant gets the order number from; undefined: no receipts. */
  receipts: { agentId: number } | undefined;
  /**
   * WECOM_DECISION_TO_USERS and WECOM_OPERATOR_USER_IDS: the members decision cards are sent to by
   * the app WECOM_AGENT_ID, and the user ids allowed to decide from them; undefined: no cards.
   */
  decisions: { agentId: number; toUsers: readonly string[]; operators: readonly string[] } | undefined;
}

/** The connector, once all four of its settings are there (`on`, vendors/settings.ts). */
export function wecomFrom(
  env: WeComEnv,
  receipts: WeComConfig['receipts'] = undefined,
  decisions: WeComConfig['decisions'] = undefined,
): WeComConfig {
  return {
    corpId: env.WECOM_CORP_ID as string,
    agentSecret: env.WECOM_AGENT_SECRET as string,
    token: env.WECOM_TOKEN as string,
    encodingAesKey: env.WECOM_ENCODING_AES_KEY as string,
    apiBaseUrl: env.WECOM_API_BASE_URL,
    receipts,
    decisions,
  };
}

/** A WeCom member's user id as the admin console shows it. */
const WECOM_USER_ID_FORM = {
  pattern: /^[A-Za-z0-9._@-]{1,64}$/,
  says: 'a WeCom user id (1 to 64 letters, digits, ".", "_", "@", "-")',
};

/** WECOM_AGENT_ID as a positive whole number, or a problem naming what needs it. */
function agentIdFor(env: WeComEnv, problems: string[], neededBy: string): number | undefined {
  const agentId = Number(env.WECOM_AGENT_ID?.trim());
  if (!env.WECOM_AGENT_ID?.trim() || !Number.isSafeInteger(agentId) || agentId <= 0) {
    problems.push(
      `WECOM_AGENT_ID: required with ${neededBy}, a positive whole number (the app's AgentId, as the console shows it)`,
    );
    return undefined;
  }
  return agentId;
}

/**
 * The decision cards' recipients, operators and app; a problem when the operators are missing or
 * set alone, an entry is no user id, the app is not named, or the connector is off.
 */
function decisionsFrom(env: WeComEnv, problems: string[], connectorOn: boolean): WeComConfig['decisions'] {
  const toUsers = listEntries(env.WECOM_DECISION_TO_USERS);
  const operators = listEntries(env.WECOM_OPERATOR_USER_IDS);
  if (toUsers.length === 0) {
    if (operators.length > 0) {
      problems.push(
        'WECOM_OPERATOR_USER_IDS: set without WECOM_DECISION_TO_USERS (no card is sent for them to decide from)',
      );
    }
    return undefined;
  }
  const problemsBefore = problems.length;
  if (!connectorOn) {
    problems.push(
      'WECOM_DECISION_TO_USERS: requires the WeCom connector on (the clicks come to its callback: WECOM_CORP_ID, WECOM_AGENT_SECRET, WECOM_TOKEN, WECOM_ENCODING_AES_KEY)',
    );
  }
  if (operators.length === 0) {
    problems.push(
      'WECOM_OPERATOR_USER_IDS: required with WECOM_DECISION_TO_USERS (the user ids, comma-separated, allowed to decide from a card)',
    );
  }
  entriesNotOfForm('WECOM_DECISION_TO_USERS', toUsers, WECOM_USER_ID_FORM, problems);
  entriesNotOfForm('WECOM_OPERATOR_USER_IDS', operators, WECOM_USER_ID_FORM, problems);
  // WeCom's message/send takes at most 1000 members.
  if (toUsers.length > 1_000)
    problems.push(`WECOM_DECISION_TO_USERS: ${toUsers.length} members, above the 1000 WeCom sends one message to`);
  const agentId = agentIdFor(env, problems, 'WECOM_DECISION_TO_USERS');
  return problems.length === problemsBefore && agentId !== undefined ? { agentId, toUsers, operators } : undefined;
}

/**
 * The receipts' app: a problem when WECOM_RECEIPTS=on comes without a WECOM_AGENT_ID (a positive
 * whole number, as the console shows it), or while the connector is off.
 */
function receiptsFrom(env: WeComEnv, problems: string[], connectorOn: boolean): WeComConfig['receipts'] {
  if (env.WECOM_RECEIPTS !== 'on') return undefined;
  const agentId = agentIdFor(env, problems, 'WECOM_RECEIPTS=on');
  if (agentId === undefined) return undefined;
  if (!connectorOn) {
    problems.push(
      'WECOM_RECEIPTS: on requires the WeCom connector on (WECOM_CORP_ID, WECOM_AGENT_SECRET, WECOM_TOKEN, WECOM_ENCODING_AES_KEY)',
    );
    return undefined;
  }
  return { agentId };
}

/** The WeCom connector's part of the configuration (vendors/settings.ts). */
export const wecomConnectorSettings = {
  env: wecomSettings,
  required: ['WECOM_CORP_ID', 'WECOM_AGENT_SECRET', 'WECOM_TOKEN', 'WECOM_ENCODING_AES_KEY'],
  secrets: ['WECOM_AGENT_SECRET', 'WECOM_TOKEN', 'WECOM_ENCODING_AES_KEY'],
  apiUrls: ['WECOM_API_BASE_URL'],
  from: (env, problems, on) => {
    const connectorOn = on();
    const receipts = receiptsFrom(env, problems, connectorOn);
    const decisions = decisionsFrom(env, problems, connectorOn);
    return connectorOn ? wecomFrom(env, receipts, decisions) : undefined;
  },
  events: () => ['callback'],
} satisfies VendorSettings<typeof wecomSettings, WeComConfig>;
