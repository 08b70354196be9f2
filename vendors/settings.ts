// The OA connectors' part of the configuration (docs/oa-form-mapping.md): each vendor's settings
// (the settings.ts of its folder, e.g. vendors/feishu/settings.ts), each connector on when its
// settings are present, the mapping file they need (read here, once), and when a claim nobody
// started is started.
import { z } from 'zod';
import type { FormMappingFile } from '../domain/form-mapping.js';
import { readFormMappingFile } from '../services/config/form-mapping-file.js';
import { type DingTalkConfig, dingtalkFrom, dingtalkSettings, dingtalkStreamFrom } from './dingtalk/settings.js';
import { type FeishuConfig, feishuFrom, feishuSettings } from './feishu/settings.js';
import { type WeComConfig, wecomFrom, wecomSettings } from './wecom/settings.js';

export const connectorSettings = {
  ...feishuSettings,
  ...dingtalkSettings,
  ...wecomSettings,
  OA_FORM_MAPPING: z.string().min(1).optional(),
  // An OA approval claimed this long ago whose start nobody confirmed is started by the API: the
  // vendor, answered once the key was claimed, does not send it again (docs/architecture.md, decision 34).
  OA_UNSTARTED_CLAIM_AFTER_MS: z.coerce.number().int().min(1_000).max(3_600_000).default(120_000),
};
type ConnectorsEnv = z.output<z.ZodObject<typeof connectorSettings>>;

/** The OA connectors: a vendor's entry is undefined when its connector is off. */
export interface ConnectorsConfig {
  feishu: FeishuConfig | undefined;
  dingtalk: DingTalkConfig | undefined;
  wecom: WeComConfig | undefined;
  /** The mapping file, read and validated at start; defined whenever a connector is on. */
  formMapping: { path: string; file: FormMappingFile } | undefined;
  /** OA_UNSTARTED_CLAIM_AFTER_MS: when a claim nobody started is started by submission/unstarted-claims.ts. */
  unstartedClaimAfterMs: number;
}

/**
 * Which OA connectors are on, for the start-up log; Feishu's events come through its callback, its
 * long connection or both, DingTalk's through its callback, its Stream or both.
 */
export function connectorStates(config: { connectors: ConnectorsConfig }): {
  feishu: 'on' | 'off';
  feishuEvents: ('callback' | 'long-connection')[];
  dingtalk: 'on' | 'off';
  dingtalkEvents: ('callback' | 'stream')[];
  wecom: 'on' | 'off';
  formMapping: string;
} {
  const { feishu, dingtalk } = config.connectors;
  return {
    feishu: feishu ? 'on' : 'off',
    feishuEvents: [
      ...(feishu?.callback ? (['callback'] as const) : []),
      ...(feishu?.eventMode === 'long-connection' ? (['long-connection'] as const) : []),
    ],
    dingtalk: dingtalk ? 'on' : 'off',
    dingtalkEvents: [
      ...(dingtalk?.callback ? (['callback'] as const) : []),
      ...(dingtalk?.stream ? (['stream'] as const) : []),
    ],
    wecom: config.connectors.wecom ? 'on' : 'off',
    formMapping: config.connectors.formMapping?.path ?? 'none',
  };
}

/** What turns each connector on; a connector with some of them and not all is refused. */
const CONNECTOR_SETTINGS = {
  feishu: {
    // The Encrypt Key is what Feishu signs with: a callback without it could be checked only by
    // the token inside the body, after parsing whatever an unauthenticated caller sent.
    required: ['FEISHU_APP_ID', 'FEISHU_APP_SECRET', 'FEISHU_ENCRYPT_KEY', 'FEISHU_VERIFICATION_TOKEN'],
    optional: [],
  },
  dingtalk: {
    required: ['DINGTALK_APP_KEY', 'DINGTALK_APP_SECRET', 'DINGTALK_AES_KEY', 'DINGTALK_TOKEN'],
    optional: [],
  },
  wecom: {
    required: ['WECOM_CORP_ID', 'WECOM_AGENT_SECRET', 'WECOM_TOKEN', 'WECOM_ENCODING_AES_KEY'],
    optional: [],
  },
} as const satisfies Record<
  string,
  { required: readonly (keyof ConnectorsEnv)[]; optional: readonly (keyof ConnectorsEnv)[] }
>;

/** Which connectors are on, their settings, and the mapping file they need (read here, once). */
export function connectorsFrom(env: ConnectorsEnv, problems: string[]): ConnectorsConfig {
  const on = (vendor: keyof typeof CONNECTOR_SETTINGS): boolean => {
    const { required, optional } = CONNECTOR_SETTINGS[vendor];
    const present = [...required, ...optional].filter((name) => env[name] !== undefined);
    if (present.length === 0) return false;
    const missing = required.filter((name) => env[name] === undefined);
    if (missing.length > 0) {
      problems.push(
        `${missing.join(', ')}: required with ${present.join(', ')} (the ${vendor} connector is partly configured)`,
      );
      return false;
    }
    return true;
  };
  const feishu = feishuFrom(env, problems, on);
  const dingtalk =
    env.DINGTALK_EVENT_MODE === 'stream'
      ? dingtalkStreamFrom(env, problems)
      : on('dingtalk')
        ? dingtalkFrom(env)
        : undefined;
  const wecom = on('wecom') ? wecomFrom(env) : undefined;
  let formMapping: ConnectorsConfig['formMapping'];
  if (env.OA_FORM_MAPPING) {
    const read = readFormMappingFile(env.OA_FORM_MAPPING);
    if (read.ok) formMapping = { path: env.OA_FORM_MAPPING, file: read.mapping };
    else problems.push(...read.problems);
  } else if (feishu || dingtalk || wecom) {
    problems.push('OA_FORM_MAPPING: required when an OA connector is on (the file that maps approval forms to orders)');
  }
  return { feishu, dingtalk, wecom, formMapping, unstartedClaimAfterMs: env.OA_UNSTARTED_CLAIM_AFTER_MS };
}
