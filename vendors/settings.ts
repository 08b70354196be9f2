// The OA connectors' part of the configuration (docs/oa-form-mapping.md): each vendor's settings
// (the settings.ts of its folder, e.g. vendors/feishu/settings.ts), each connector on when its
// settings are present, the mapping file they need (read here, once), and when a claim nobody
// started is started.
import { z } from 'zod';
import type { FormMappingFile } from '../domain/form-mapping.js';
import { readFormMappingFile } from '../services/config/form-mapping-file.js';
import { dingtalkConnectorSettings } from './dingtalk/settings.js';
import { feishuConnectorSettings } from './feishu/settings.js';
import { wecomConnectorSettings } from './wecom/settings.js';
import type { VendorSettings } from './vendor-settings.js';

/** Each OA vendor's settings (vendors/vendor-settings.ts), by its name: a new vendor is one entry. */
const VENDOR_SETTINGS = {
  feishu: feishuConnectorSettings,
  dingtalk: dingtalkConnectorSettings,
  wecom: wecomConnectorSettings,
};
type Vendors = typeof VENDOR_SETTINGS;
type Vendor = keyof Vendors;
type UnionToIntersection<U> = (U extends unknown ? (arg: U) => void : never) extends (arg: infer I) => void ? I : never;
/** Every vendor's variables in one shape. */
type VendorShapes = UnionToIntersection<Vendors[Vendor]['settings']>;
type ConfigOf<V extends Vendor> = Exclude<ReturnType<Vendors[V]['from']>, undefined>;

/** The vendors' entries seen through their common shape, for the code that loops over them. */
const vendorEntries = Object.entries(VENDOR_SETTINGS) as unknown as [Vendor, VendorSettings<z.ZodRawShape, unknown>][];

export const connectorSettings = {
  ...(Object.assign({}, ...vendorEntries.map(([, vendor]) => vendor.settings)) as VendorShapes),
  OA_FORM_MAPPING: z.string().min(1).optional(),
  // An OA approval claimed this long ago whose start nobody confirmed is started by the API: the
  // vendor, answered once the key was claimed, does not send it again (docs/architecture.md, decision 34).
  OA_UNSTARTED_CLAIM_AFTER_MS: z.coerce.number().int().min(1_000).max(3_600_000).default(120_000),
};
type ConnectorsEnv = z.output<z.ZodObject<typeof connectorSettings>>;

/** The OA connectors: a vendor's entry is undefined when its connector is off. */
export type ConnectorsConfig = { [V in Vendor]: ConfigOf<V> | undefined } & {
  /** The mapping file, read and validated at start; defined whenever a connector is on. */
  formMapping: { path: string; file: FormMappingFile } | undefined;
  /** OA_UNSTARTED_CLAIM_AFTER_MS: when a claim nobody started is started by submission/unstarted-claims.ts. */
  unstartedClaimAfterMs: number;
};

/**
 * Which OA connectors are on and how their events arrive (a callback, a connection the API opens,
 * or both), for the start-up log.
 */
export function connectorStates(config: { connectors: ConnectorsConfig }): {
  vendors: Record<Vendor, 'off' | string[]>;
  formMapping: string;
} {
  const vendors = Object.fromEntries(
    vendorEntries.map(([name, vendor]) => {
      const connector = config.connectors[name];
      return [name, connector === undefined ? 'off' : vendor.events(connector)];
    }),
  ) as Record<Vendor, 'off' | string[]>;
  return { vendors, formMapping: config.connectors.formMapping?.path ?? 'none' };
}

/** Which connectors are on, their settings, and the mapping file they need (read here, once). */
export function connectorsFrom(env: ConnectorsEnv, problems: string[]): ConnectorsConfig {
  /** All of a vendor's required settings there: on; none: off; some: a problem, and off. */
  const on = (name: Vendor, required: readonly string[]): boolean => {
    const values = env as Record<string, unknown>;
    const present = required.filter((setting) => values[setting] !== undefined);
    if (present.length === 0) return false;
    const missing = required.filter((setting) => values[setting] === undefined);
    if (missing.length > 0) {
      problems.push(
        `${missing.join(', ')}: required with ${present.join(', ')} (the ${name} connector is partly configured)`,
      );
      return false;
    }
    return true;
  };
  const vendors = Object.fromEntries(
    vendorEntries.map(([name, vendor]) => [name, vendor.from(env, problems, () => on(name, vendor.required))]),
  ) as { [V in Vendor]: ConfigOf<V> | undefined };
  let formMapping: ConnectorsConfig['formMapping'];
  if (env.OA_FORM_MAPPING) {
    const read = readFormMappingFile(
      env.OA_FORM_MAPPING,
      vendorEntries.map(([name]) => name),
    );
    if (read.ok) formMapping = { path: env.OA_FORM_MAPPING, file: read.mapping };
    else problems.push(...read.problems);
  } else if (Object.values(vendors).some((connector) => connector !== undefined)) {
    problems.push('OA_FORM_MAPPING: required when an OA connector is on (the file that maps approval forms to orders)');
  }
  return { ...vendors, formMapping, unstartedClaimAfterMs: env.OA_UNSTARTED_CLAIM_AFTER_MS };
}
