// WeCom's settings (docs/connectors.md): the corp id, the approval-reading app's secret, the
// callback's token and EncodingAESKey, and the open API's address; and the connector's part of the configuration.
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
};
type WeComEnv = z.output<z.ZodObject<typeof wecomSettings>>;

export interface WeComConfig {
  corpId: string;
  /** The secret of the app that reads approvals: the approval app's, or a self-built app's allowed to. */
  agentSecret: string;
  token: string;
  encodingAesKey: string;
  apiBaseUrl: string;
}

/** The connector, once all four of its settings are there (`on`, vendors/settings.ts). */
export function wecomFrom(env: WeComEnv): WeComConfig {
  return {
    corpId: env.WECOM_CORP_ID as string,
    agentSecret: env.WECOM_AGENT_SECRET as string,
    token: env.WECOM_TOKEN as string,
    encodingAesKey: env.WECOM_ENCODING_AES_KEY as string,
    apiBaseUrl: env.WECOM_API_BASE_URL,
  };
}

/** The WeCom connector's part of the configuration (vendors/settings.ts). */
export const wecomConnectorSettings = {
  env: wecomSettings,
  required: ['WECOM_CORP_ID', 'WECOM_AGENT_SECRET', 'WECOM_TOKEN', 'WECOM_ENCODING_AES_KEY'],
  secrets: ['WECOM_AGENT_SECRET', 'WECOM_TOKEN', 'WECOM_ENCODING_AES_KEY'],
  apiUrls: ['WECOM_API_BASE_URL'],
  from: (env, _problems, on) => (on() ? wecomFrom(env) : undefined),
  events: () => ['callback'],
} satisfies VendorSettings<typeof wecomSettings, WeComConfig>;
