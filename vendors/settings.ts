// The OA connectors' part of the configuration (docs/oa-form-mapping.md): each vendor's settings,
// which the vendor declares in the settings.ts of its folder and vendors/registry.ts lists, each
// connector on when its settings are present; the mapping file they need (read here, once); and
// when a claim nobody started is started. Nothing here names a vendor: the configuration holds each
// one's under its id.
import { z, type ZodRawShape } from 'zod';
import type { FormMappingFile } from '../domain/form-mapping.js';
import type { OaVendor } from '../domain/oa-approval.js';
import { readFormMappingFile } from '../services/config/form-mapping-file.js';
import type { OaVendorModule } from './oa-vendor.js';
import { type ConfiguredVendors, OA_VENDOR_MODULES, oaVendorIds } from './registry.js';

/** The settings the vendors share; each vendor's own are its module's (`oaVendorSettings`). */
export const connectorSettings = {
  OA_FORM_MAPPING: z.string().min(1).optional(),
  // An OA approval claimed this long ago whose start nobody confirmed is started by the API: the
  // vendor, answered once the key was claimed, does not send it again (docs/architecture.md, decision 34).
  OA_UNSTARTED_CLAIM_AFTER_MS: z.coerce.number().int().min(1_000).max(3_600_000).default(120_000),
};
type ConnectorsEnv = z.output<z.ZodObject<typeof connectorSettings>>;

/** The OA connectors. */
export interface ConnectorsConfig extends ConfiguredVendors {
  /** Each vendor that is on, by its id, with its configuration (its module's); a vendor that is off has none. */
  vendors: ReadonlyMap<OaVendor, unknown>;
  /** The mapping file, read and validated at start; defined whenever a connector is on. */
  formMapping: { path: string; file: FormMappingFile } | undefined;
  /** OA_UNSTARTED_CLAIM_AFTER_MS: when a claim nobody started is started by submission/unstarted-claims.ts. */
  unstartedClaimAfterMs: number;
}

/**
 * The configuration of `module`'s vendor; undefined when it is off. Typed by the module: the only
 * writer of `vendors` (`connectorsFrom`) puts under each id what that vendor's own `from` built.
 */
export function vendorConfig<Settings>(
  module: OaVendorModule<Settings>,
  connectors: Pick<ConnectorsConfig, 'vendors'>,
): Settings | undefined {
  return connectors.vendors.get(module.vendor) as Settings | undefined;
}

/** Every vendor's variables, with their schemas: what the configuration reads besides its own. */
export function oaVendorSettings(): ZodRawShape {
  return Object.assign({}, ...OA_VENDOR_MODULES.map((module) => module.settings.env)) as ZodRawShape;
}

/** The vendors' variables that hold a secret as they are (services/config/production-refusals.ts). */
export function oaVendorSecretSettings(): string[] {
  return OA_VENDOR_MODULES.flatMap((module) => module.settings.secrets);
}

/** The addresses of the vendors' open APIs, which production takes over https:// only. */
export function oaVendorApiSettings(): string[] {
  return OA_VENDOR_MODULES.flatMap((module) => module.settings.apiUrls);
}

/** Each vendor's variables as its own schema parsed them, by its id. */
export type VendorEnvs = ReadonlyMap<OaVendor, Record<string, unknown>>;

/** Each vendor's variables parsed by its own schema; the problems of a value its schema refuses. */
export function vendorEnvsFrom(present: Readonly<Record<string, string>>): { envs: VendorEnvs; problems: string[] } {
  const envs = new Map<OaVendor, Record<string, unknown>>();
  const problems: string[] = [];
  for (const module of OA_VENDOR_MODULES) {
    const parsed = z.object(module.settings.env).safeParse(present);
    if (parsed.success) envs.set(module.vendor, parsed.data);
    else problems.push(...parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`));
  }
  return { envs, problems };
}

/**
 * Which OA connectors are on and how their events arrive (a callback, a connection the API opens,
 * or both), for the start-up log.
 */
export function connectorStates(config: { connectors: ConnectorsConfig }): {
  vendors: Record<OaVendor, 'off' | string[]>;
  formMapping: string;
} {
  const vendors = Object.fromEntries(
    OA_VENDOR_MODULES.map((module) => {
      const connector = vendorConfig(module, config.connectors);
      return [module.vendor, connector === undefined ? ('off' as const) : module.settings.events(connector)];
    }),
  );
  return { vendors, formMapping: config.connectors.formMapping?.path ?? 'none' };
}

/** Which connectors are on, their settings, and the mapping file they need (read here, once). */
export function connectorsFrom(env: ConnectorsEnv, vendorEnvs: VendorEnvs, problems: string[]): ConnectorsConfig {
  const vendors = new Map<OaVendor, unknown>();
  for (const module of OA_VENDOR_MODULES) {
    const values = vendorEnvs.get(module.vendor);
    if (values === undefined) continue;
    /** All of a vendor's required settings there: on; none: off; some: a problem, and off. */
    const on = (): boolean => {
      const { required } = module.settings;
      const present = required.filter((setting) => values[setting] !== undefined);
      if (present.length === 0) return false;
      const missing = required.filter((setting) => values[setting] === undefined);
      if (missing.length > 0) {
        problems.push(
          `${missing.join(', ')}: required with ${present.join(', ')} (the ${module.vendor} connector is partly configured)`,
        );
        return false;
      }
      return true;
    };
    const connector = module.settings.from(values, problems, on);
    if (connector !== undefined) vendors.set(module.vendor, connector);
  }
  let formMapping: ConnectorsConfig['formMapping'];
  if (env.OA_FORM_MAPPING) {
    const read = readFormMappingFile(env.OA_FORM_MAPPING, oaVendorIds());
    if (read.ok) formMapping = { path: env.OA_FORM_MAPPING, file: read.mapping };
    else problems.push(...read.problems);
  } else if (vendors.size > 0) {
    problems.push('OA_FORM_MAPPING: required when an OA connector is on (the file that maps approval forms to orders)');
  }
  return { vendors, formMapping, unstartedClaimAfterMs: env.OA_UNSTARTED_CLAIM_AFTER_MS };
}
