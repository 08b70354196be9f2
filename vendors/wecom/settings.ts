// WeCom's settings (docs/connectors.md): the corp id, the approval-reading app's secret, the
// callback's token and EncodingAESKey, the open API's address, and whether applicants get their
// order's receipt; and the connector's part of the configuration.
import { z } from 'zod';
import type { VendorSettings } from '../vendor-settings.js';
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
  // The app the receipts are sent as (message/send's agentid); required with WECOM_RECEIPTS=on.
  WECOM_AGENT_ID: z.string().optional(),
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
}

/** The connector, once all four of its settings are there (`on`, vendors/settings.ts). */
export function wecomFrom(env: WeComEnv, receipts: WeComConfig['receipts'] = undefined): WeComConfig {
  return {
    corpId: env.WECOM_CORP_ID as string,
    agentSecret: env.WECOM_AGENT_SECRET as string,
    token: env.WECOM_TOKEN as string,
    encodingAesKey: env.WECOM_ENCODING_AES_KEY as string,
    apiBaseUrl: env.WECOM_API_BASE_URL,
    receipts,
  };
}

/**
 * The receipts' app: a problem when WECOM_RECEIPTS=on comes without a WECOM_AGENT_ID (a positive
 * whole number, as the console shows it), or while the connector is off.
 */
function receiptsFrom(env: WeComEnv, problems: string[], connectorOn: boolean): WeComConfig['receipts'] {
  if (env.WECOM_RECEIPTS !== 'on') return undefined;
  const agentId = Number(env.WECOM_AGENT_ID?.trim());
  if (!env.WECOM_AGENT_ID?.trim() || !Number.isSafeInteger(agentId) || agentId <= 0) {
    problems.push(
      "WECOM_AGENT_ID: required with WECOM_RECEIPTS=on, a positive whole number (the app's AgentId the receipts are sent as)",
    );
    return undefined;
  }
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
    return connectorOn ? wecomFrom(env, receipts) : undefined;
  },
  events: () => ['callback'],
} satisfies VendorSettings<typeof wecomSettings, WeComConfig>;
