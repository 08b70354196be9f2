// Temporal's settings: where Temporal is and how to reach it, read the way the `temporal` CLI and
// the SDKs read it (@temporalio/envconfig): a profile of a TOML file, then the TEMPORAL_* variables
// over it; the task queue the service's work runs on, and the Worker Deployment version its workers
// poll as. The loader's own errors name neither the file nor the variable, and it takes a key of the
// wrong type as it comes; this module checks what it is given first, so that a bad setting stops
// start-up naming the variable, or the file, profile and key, to fix — and never repeats a secret.
import { readFileSync } from 'node:fs';
import { platform } from 'node:os';
import path from 'node:path';
import { type ClientConfigProfile, type ConfigDataSource, loadClientConfigProfile } from '@temporalio/envconfig';
// The public API hands back a profile already converted, in which a table of the wrong type is
// lost (`tls = "on"` becomes an empty TLS table, which quietly turns TLS on): the raw document
// comes from the loader's own parser, so that both read the file alike.
import { loadFromTomlData } from '@temporalio/envconfig/lib/envconfig-toml.js';
import { z } from 'zod';

export const temporalAddressSetting = z.string().regex(/^[A-Za-z0-9.\-[\]:]+:\d{1,5}$/, 'must be host:port');

/** `1` / `true` or `0` / `false`, in any case, as the CLI reads them. */
const flagSetting = z
  .string()
  .regex(/^(0|1|true|false)$/i, 'must be 1, true, 0 or false')
  .transform((value) => /^(1|true)$/i.test(value));

const fileSetting = z.string().min(1);
const pemSetting = z.string().min(1);

/** The variables of Temporal's environment configuration the service reads; TEMPORAL_GRPC_META_* besides. */
export const temporalSettingsShape = {
  TEMPORAL_CONFIG_FILE: fileSetting.optional(),
  TEMPORAL_PROFILE: z.string().min(1).optional(),
  TEMPORAL_ADDRESS: temporalAddressSetting.optional(),
  TEMPORAL_NAMESPACE: z.string().min(1).optional(),
  TEMPORAL_API_KEY: z.string().min(1).optional(),
  TEMPORAL_TLS: flagSetting.optional(),
  TEMPORAL_TLS_SERVER_CA_CERT_PATH: fileSetting.optional(),
  TEMPORAL_TLS_SERVER_CA_CERT_DATA: pemSetting.optional(),
  TEMPORAL_TLS_CLIENT_CERT_PATH: fileSetting.optional(),
  TEMPORAL_TLS_CLIENT_CERT_DATA: pemSetting.optional(),
  TEMPORAL_TLS_CLIENT_KEY_PATH: fileSetting.optional(),
  TEMPORAL_TLS_CLIENT_KEY_DATA: pemSetting.optional(),
  TEMPORAL_TLS_SERVER_NAME: z.string().min(1).optional(),
  TEMPORAL_TLS_DISABLE_HOST_VERIFICATION: flagSetting.optional(),
  // The names this service read before it read Temporal's: accepted, with a line at start.
  TEMPORAL_TLS_CA: fileSetting.optional(),
  TEMPORAL_TLS_CERT: fileSetting.optional(),
  TEMPORAL_TLS_KEY: fileSetting.optional(),
};
export type TemporalEnv = z.output<z.ZodObject<typeof temporalSettingsShape>>;

export const temporalSettings = {
  // Where Temporal is and how to reach it: Temporal's own names.
  ...temporalSettingsShape,
  TEMPORAL_TASK_QUEUE: z.string().min(1).default('order-submission'),
  // Worker Deployment Versioning (docs/production.md, "Rolling out a release"); both or neither.
  // The Temporal Worker Controller names the build TEMPORAL_WORKER_BUILD_ID, and its deployment
  // name `<namespace>/<name>`: either name of the build is read.
  TEMPORAL_DEPLOYMENT_NAME: z.string().min(1).max(255).optional(),
  TEMPORAL_BUILD_ID: z.string().min(1).max(255).optional(),
  TEMPORAL_WORKER_BUILD_ID: z.string().min(1).max(255).optional(),
};
type DeploymentEnv = Pick<
  TemporalSettingsEnv,
  'TEMPORAL_DEPLOYMENT_NAME' | 'TEMPORAL_BUILD_ID' | 'TEMPORAL_WORKER_BUILD_ID'
>;
type TemporalSettingsEnv = z.output<z.ZodObject<typeof temporalSettings>>;

export interface TemporalConfig extends TemporalConnectionConfig {
  /** The service's own: the task queue the worker polls and every start uses. */
  taskQueue: string;
}

/** A build of the workers within their Worker Deployment (TEMPORAL_DEPLOYMENT_NAME, TEMPORAL_BUILD_ID). */
export interface WorkerDeploymentVersion {
  deploymentName: string;
  buildId: string;
}

/**
 * The connection (`env` parsed, `source` as given, empty values dropped) and the task queue;
 * problems are added to `problems`, each naming the setting.
 */
export function temporalFrom(
  env: TemporalSettingsEnv,
  source: Record<string, string>,
  problems: string[],
): TemporalConfig {
  return { ...temporalConnectionFrom(env, source, problems), taskQueue: env.TEMPORAL_TASK_QUEUE };
}

/** The build id, by the service's own name or the Worker Controller's. */
const buildIdOf = (env: DeploymentEnv) => env.TEMPORAL_BUILD_ID ?? env.TEMPORAL_WORKER_BUILD_ID;

/** The Worker Deployment version every worker of the process polls as; undefined = unversioned. */
export function deploymentFrom(env: DeploymentEnv): WorkerDeploymentVersion | undefined {
  const buildId = buildIdOf(env);
  return env.TEMPORAL_DEPLOYMENT_NAME && buildId
    ? { deploymentName: env.TEMPORAL_DEPLOYMENT_NAME, buildId }
    : undefined;
}

// One without the other would run unversioned workers beside versioned ones without saying so; two
// build ids that differ would leave it to chance which code the build names.
export function deploymentProblems(env: DeploymentEnv): string[] {
  if (env.TEMPORAL_BUILD_ID && env.TEMPORAL_WORKER_BUILD_ID && env.TEMPORAL_BUILD_ID !== env.TEMPORAL_WORKER_BUILD_ID) {
    return ['TEMPORAL_BUILD_ID and TEMPORAL_WORKER_BUILD_ID: two different build ids; set one of them'];
  }
  if (Boolean(env.TEMPORAL_DEPLOYMENT_NAME) === Boolean(buildIdOf(env))) return [];
  return [
    env.TEMPORAL_DEPLOYMENT_NAME
      ? 'TEMPORAL_BUILD_ID (or TEMPORAL_WORKER_BUILD_ID): required with TEMPORAL_DEPLOYMENT_NAME (a versioned worker needs its build id)'
      : 'TEMPORAL_DEPLOYMENT_NAME: required with a build id (a build id belongs to a Worker Deployment)',
  ];
}

const GRPC_META_PREFIX = 'TEMPORAL_GRPC_META_';

/**
 * A PEM given as a file or inline, with the setting that gave it: messages name the setting, never
 * the PEM. `setting` leads a message (`TEMPORAL_TLS_CLIENT_CERT_PATH`, or the profile file's
 * variable, file, profile and key); `name` is the same inside a sentence.
 */
export type PemSource = { setting: string; name: string } & ({ file: string } | { inline: Buffer });

export interface TemporalTlsConfig {
  serverCaCert: PemSource | undefined;
  clientCert: PemSource | undefined;
  clientKey: PemSource | undefined;
  serverName: { setting: string; name: string } | undefined;
}

export interface TemporalConnectionConfig {
  address: string | undefined;
  namespace: string;
  /** Undefined: plaintext (the dev server). An API key alone turns TLS on with the system's trust. */
  tls: TemporalTlsConfig | undefined;
  apiKey: string | undefined;
  /** gRPC headers sent with every call; their values may be credentials and are never shown. */
  grpcMeta: Readonly<Record<string, string>>;
  /** The profile read, when a file was: TEMPORAL_CONFIG_FILE, or TEMPORAL_PROFILE in the default file. */
  profile: { file: string; name: string } | undefined;
  /** Old names that are set, each with the name that replaces it. */
  deprecated: readonly { name: string; replacement: string }[];
}

/** One PEM of the TLS settings under each of its names. */
const PEMS = [
  {
    what: 'the server CA certificate',
    key: 'server_ca_cert',
    env: 'TEMPORAL_TLS_SERVER_CA_CERT',
    old: 'TEMPORAL_TLS_CA',
  },
  {
    what: 'the client certificate',
    key: 'client_cert',
    env: 'TEMPORAL_TLS_CLIENT_CERT',
    old: 'TEMPORAL_TLS_CERT',
  },
  {
    what: 'the client key',
    key: 'client_key',
    env: 'TEMPORAL_TLS_CLIENT_KEY',
    old: 'TEMPORAL_TLS_KEY',
  },
] as const;
type Pem = (typeof PEMS)[number];

/**
 * Whether the environment names a Temporal of its own. Only then is a profile file read (the
 * default one only with TEMPORAL_PROFILE), and only then do `npm run dev` and the operator tools
 * leave the dev stack's Temporal: a `temporal.toml` the CLI keeps in the home folder never
 * redirects them, nor a test run.
 */
export function namesOwnTemporal(source: Record<string, string>): boolean {
  return ['TEMPORAL_ADDRESS', 'TEMPORAL_PROFILE', 'TEMPORAL_CONFIG_FILE'].some((name) => source[name] !== undefined);
}

/**
 * Overrides that unset (an empty value is unset) each connection setting of `source` besides the
 * address and namespace — TLS, credentials, headers, profile: for a process bound for the plaintext
 * dev server, which they are not meant for.
 */
export function withoutTemporalCredentials(source: Record<string, string | undefined>): Record<string, string> {
  const named = Object.keys(temporalSettingsShape).filter(
    (name) => name !== 'TEMPORAL_ADDRESS' && name !== 'TEMPORAL_NAMESPACE',
  );
  const present = Object.keys(source).filter(
    (name) => source[name] && (named.includes(name) || name.startsWith(GRPC_META_PREFIX)),
  );
  return Object.fromEntries(present.map((name) => [name, '']));
}

/** The one start-up line about old names, when any is set; each process calls it once, after reading its config. */
export function warnOfDeprecatedSettings(connection: TemporalConnectionConfig, warn: (line: string) => void): void {
  if (connection.deprecated.length === 0) return;
  const renames = connection.deprecated.map(({ name, replacement }) => `${name} → ${replacement}`).join(', ');
  warn(
    `deprecated Temporal settings: rename ${renames} (the names the temporal CLI and the SDKs read; the old names will stop working in a later release)`,
  );
}

/**
 * The connection settings from the environment (`env` parsed, `source` as given, empty values
 * dropped) and the profile it names. Problems are added to `problems`, each naming the setting.
 */
export function temporalConnectionFrom(
  env: TemporalEnv,
  source: Record<string, string>,
  problems: string[],
): TemporalConnectionConfig {
  const before = problems.length;
  const deprecated = deprecatedNames(env, problems);
  const file = profileFile(env, source, problems);
  const profile = file ? readProfile(file, problems) : undefined;
  problems.push(...pemConflicts(env, file, profile));
  const meta = grpcMetaFromEnv(source);
  const loaded = problems.length === before ? loadProfile(env, meta, file, profile, problems) : undefined;
  const connection: TemporalConnectionConfig = {
    address: loaded?.address ?? env.TEMPORAL_ADDRESS,
    namespace: loaded?.namespace ?? env.TEMPORAL_NAMESPACE ?? 'default',
    tls: undefined,
    apiKey: loaded?.apiKey ?? env.TEMPORAL_API_KEY,
    grpcMeta: {},
    profile: file ? { file: file.path, name: file.profile } : undefined,
    deprecated,
  };
  if (!loaded) return connection;
  if (!env.TEMPORAL_ADDRESS && loaded.address !== undefined) {
    const address = temporalAddressSetting.safeParse(loaded.address);
    if (!address.success) problems.push(`${fileKey(file, 'address')}: must be host:port`);
  }
  if (!env.TEMPORAL_NAMESPACE && loaded.namespace === '')
    problems.push(`${fileKey(file, 'namespace')}: must not be empty`);
  connection.tls = tlsFrom(env, loaded, file, profile, problems);
  connection.grpcMeta = grpcMetaFrom(loaded, meta, file, connection.apiKey, problems);
  return connection;
}

// ---- Old names ---------------------------------------------------------------------------------

function deprecatedNames(env: TemporalEnv, problems: string[]): { name: string; replacement: string }[] {
  const deprecated: { name: string; replacement: string }[] = [];
  for (const pem of PEMS) {
    const old = env[pem.old];
    if (old === undefined) continue;
    const replacement = `${pem.env}_PATH` as const;
    deprecated.push({ name: pem.old, replacement });
    const current = env[replacement];
    if (current !== undefined && current !== old) {
      problems.push(
        `${pem.old}, ${replacement}: both set, to different files (${pem.old} is the old name of ${replacement}: keep only ${replacement})`,
      );
    }
    if (env[`${pem.env}_DATA`] !== undefined) {
      problems.push(
        `${pem.old}, ${pem.env}_DATA: both give ${pem.what} (${pem.old} is the old name of ${replacement}: keep one)`,
      );
    }
  }
  return deprecated;
}

// ---- The profile file --------------------------------------------------------------------------

interface ProfileFile {
  /** The variable that led to the file: TEMPORAL_CONFIG_FILE, or TEMPORAL_PROFILE for the default file. */
  variable: 'TEMPORAL_CONFIG_FILE' | 'TEMPORAL_PROFILE';
  path: string;
  profile: string;
  /** Whether TEMPORAL_PROFILE named the profile (else it is "default"). */
  profileNamed: boolean;
}

/** A key of the profile, to lead a message: `TEMPORAL_CONFIG_FILE: /etc/temporal.toml, profile "prod", tls.server_name`. */
function profileKey(file: ProfileFile, key: string): string {
  return `${file.variable}: ${file.path}, profile "${file.profile}", ${key}`;
}

/** The same inside a sentence: `tls.server_name of profile "prod" in /etc/temporal.toml`. */
function profileKeyInline(file: ProfileFile, key: string): string {
  return `${key} of profile "${file.profile}" in ${file.path}`;
}

function fileKey(file: ProfileFile | undefined, key: string): string {
  return file ? profileKey(file, key) : key;
}

function profileFile(env: TemporalEnv, source: Record<string, string>, problems: string[]): ProfileFile | undefined {
  const named = { profile: env.TEMPORAL_PROFILE ?? 'default', profileNamed: env.TEMPORAL_PROFILE !== undefined };
  if (env.TEMPORAL_CONFIG_FILE) return { variable: 'TEMPORAL_CONFIG_FILE', path: env.TEMPORAL_CONFIG_FILE, ...named };
  if (!env.TEMPORAL_PROFILE) return undefined;
  const file = defaultConfigFile(source);
  if (file === undefined) {
    problems.push('TEMPORAL_PROFILE: no home folder to find temporalio/temporal.toml in; set TEMPORAL_CONFIG_FILE');
    return undefined;
  }
  return { variable: 'TEMPORAL_PROFILE', path: file, ...named };
}

/** Where the CLI keeps its profiles: the user's configuration folder, then `temporalio/temporal.toml`. */
export function defaultConfigFile(
  source: Record<string, string>,
  os: NodeJS.Platform = platform(),
): string | undefined {
  const folder =
    os === 'win32'
      ? source.APPDATA
      : os === 'darwin'
        ? source.HOME && path.join(source.HOME, 'Library', 'Application Support')
        : source.XDG_CONFIG_HOME && path.isAbsolute(source.XDG_CONFIG_HOME)
          ? source.XDG_CONFIG_HOME
          : source.HOME && path.join(source.HOME, '.config');
  return folder ? path.join(folder, 'temporalio', 'temporal.toml') : undefined;
}

const tlsTable = z.strictObject({
  disabled: z.boolean().optional(),
  server_ca_cert_path: z.string().optional(),
  server_ca_cert_data: z.string().optional(),
  client_cert_path: z.string().optional(),
  client_cert_data: z.string().optional(),
  client_key_path: z.string().optional(),
  client_key_data: z.string().optional(),
  server_name: z.string().optional(),
  disable_host_verification: z.boolean().optional(),
});
/** A profile as the CLI writes it. `codec` is the CLI's (a codec server for what it shows): read, not used. */
const profileTable = z.strictObject({
  address: z.string().optional(),
  namespace: z.string().optional(),
  api_key: z.string().optional(),
  tls: tlsTable.optional(),
  codec: z.strictObject({ endpoint: z.string().optional(), auth: z.string().optional() }).optional(),
  grpc_meta: z.record(z.string(), z.string()).optional(),
});
type RawProfile = z.output<typeof profileTable>;

interface ReadProfile {
  text: string;
  raw: RawProfile;
}

function readProfile(file: ProfileFile, problems: string[]): ReadProfile | undefined {
  const where = `${file.variable}: ${file.path}`;
  let text: string;
  try {
    text = readFileSync(file.path, 'utf8');
  } catch (error) {
    problems.push(`${where}: cannot read the file (${(error as NodeJS.ErrnoException).code ?? String(error)})`);
    return undefined;
  }
  let document: Record<string, unknown>;
  try {
    document = loadFromTomlData(text, false) as unknown as Record<string, unknown>;
  } catch (error) {
    problems.push(`${where}: not valid TOML (${tomlProblem(error)})`);
    return undefined;
  }
  const profiles = document.profile;
  if (profiles !== undefined && !isTable(profiles)) {
    problems.push(`${where}: "profile" must be a table of profiles ([profile.<name>])`);
    return undefined;
  }
  const found = profiles?.[file.profile];
  if (found === undefined) {
    const names = Object.keys(profiles ?? {});
    const there = names.length > 0 ? `it has ${names.map((name) => `"${name}"`).join(', ')}` : 'it has none';
    // Without TEMPORAL_PROFILE the file's profile "default" is read, as the CLI reads it. Unlike
    // the CLI, a file named for nothing it holds stops the start: it is a mistake, not a default.
    if (file.profileNamed) problems.push(`TEMPORAL_PROFILE: no profile "${file.profile}" in ${file.path} (${there})`);
    else problems.push(`${file.variable}: ${file.path} has no profile "default" (${there}); set TEMPORAL_PROFILE`);
    return undefined;
  }
  const parsed = profileTable.safeParse(found);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) problems.push(...profileIssue(file, issue));
    return undefined;
  }
  return { text, raw: parsed.data };
}

function isTable(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Date);
}

/** The parser's reason and position; never its excerpt of the file, which may hold a key. */
function tomlProblem(error: unknown): string {
  const { line, column, message } = error as { line?: number; column?: number; message?: string };
  const reason = (message ?? String(error)).replace(/^Invalid TOML document: /, '').split('\n')[0];
  return line === undefined ? `${reason}` : `line ${line}, column ${column}: ${reason}`;
}

/** A type as a TOML file's writer knows it. */
const TOML_TYPES: Partial<Record<string, string>> = {
  string: 'a string',
  boolean: 'true or false',
  object: 'a table',
  record: 'a table',
};

function profileIssue(file: ProfileFile, issue: z.core.$ZodIssue): string[] {
  const at = issue.path.join('.');
  if (issue.code === 'unrecognized_keys') {
    // A key of a newer CLI, as much as a typo: the service would not connect as the CLI does.
    return issue.keys.map(
      (key) =>
        `${profileKey(file, at ? `${at}.${key}` : key)}: not a key this service knows (a typo, or one it cannot apply)`,
    );
  }
  if (issue.code === 'invalid_type') {
    return [`${profileKey(file, at || 'profile')}: must be ${TOML_TYPES[issue.expected] ?? issue.expected}`];
  }
  return [`${profileKey(file, at)}: ${issue.message}`];
}

// ---- PEMs --------------------------------------------------------------------------------------

/**
 * Each PEM may come from one place of each layer: a path or inline data, from the environment
 * over the profile. Two at once would leave one of them quietly unused.
 */
function pemConflicts(env: TemporalEnv, file: ProfileFile | undefined, profile: ReadProfile | undefined): string[] {
  const problems: string[] = [];
  for (const pem of PEMS) {
    const [envPath, envData] = [`${pem.env}_PATH`, `${pem.env}_DATA`] as const;
    if (env[envPath] !== undefined && env[envData] !== undefined) {
      problems.push(`${envPath}, ${envData}: both give ${pem.what}; set one`);
    }
    const tls = profile?.raw.tls;
    if (!file || !tls) continue;
    const [filePath, fileData] = [`${pem.key}_path`, `${pem.key}_data`] as const;
    if (tls[filePath] !== undefined && tls[fileData] !== undefined) {
      problems.push(`${profileKey(file, `tls.${filePath}, tls.${fileData}`)}: both give ${pem.what}; keep one`);
    }
    // The environment replaces a path with a path and data with data, as the CLI does; a path over
    // data (or the reverse) would hand the loader both.
    const pathOverData = (env[envPath] ?? env[pem.old]) !== undefined && tls[fileData] !== undefined;
    const dataOverPath = env[envData] !== undefined && tls[filePath] !== undefined;
    if (pathOverData || dataOverPath) {
      const [variable, key] = pathOverData ? [env[envPath] ? envPath : pem.old, fileData] : [envData, filePath];
      problems.push(`${variable}: ${pem.what} is also given by ${profileKeyInline(file, `tls.${key}`)}; set one`);
    }
  }
  return problems;
}

/** The PEM the loader settled on, with the setting that gave it: the environment's if set, else the profile's. */
function pemFrom(
  pem: Pem,
  env: TemporalEnv,
  file: ProfileFile | undefined,
  source: ConfigDataSource | undefined,
): PemSource | undefined {
  if (source === undefined) return undefined;
  const kind = 'data' in source ? 'data' : 'path';
  const variable = (kind === 'data' ? [`${pem.env}_DATA`] : [`${pem.env}_PATH`, pem.old]).find(
    (name) => env[name as keyof TemporalEnv] !== undefined,
  );
  const key = `tls.${pem.key}_${kind}`;
  const named =
    variable !== undefined || !file
      ? { setting: variable ?? key, name: variable ?? key }
      : { setting: profileKey(file, key), name: profileKeyInline(file, key) };
  return 'data' in source ? { ...named, inline: Buffer.from(source.data) } : { ...named, file: source.path };
}

// ---- Through the loader ------------------------------------------------------------------------

/** TEMPORAL_GRPC_META_<NAME> → the header, named as the CLI names it: lower case, `_` as `-`. */
function grpcMetaFromEnv(source: Record<string, string>): Map<string, { variable: string; value: string }> {
  const meta = new Map<string, { variable: string; value: string }>();
  for (const [variable, value] of Object.entries(source)) {
    if (variable.startsWith(GRPC_META_PREFIX))
      meta.set(headerName(variable.slice(GRPC_META_PREFIX.length)), { variable, value });
  }
  return meta;
}

function headerName(key: string): string {
  return key.toLowerCase().replaceAll('_', '-');
}

function loadProfile(
  env: TemporalEnv,
  meta: Map<string, { variable: string; value: string }>,
  file: ProfileFile | undefined,
  profile: ReadProfile | undefined,
  problems: string[],
): ClientConfigProfile | undefined {
  // The loader is given the environment the service was configured with, never process.env, and
  // the file chosen above, never one it would look for itself.
  const overrideEnvVars: Record<string, string> = {};
  for (const name of [
    'TEMPORAL_ADDRESS',
    'TEMPORAL_NAMESPACE',
    'TEMPORAL_API_KEY',
    'TEMPORAL_TLS_SERVER_NAME',
  ] as const) {
    const value = env[name];
    if (value !== undefined) overrideEnvVars[name] = value;
  }
  if (env.TEMPORAL_TLS !== undefined) overrideEnvVars.TEMPORAL_TLS = String(env.TEMPORAL_TLS);
  for (const pem of PEMS) {
    const filePath = env[`${pem.env}_PATH`] ?? env[pem.old];
    if (filePath !== undefined) overrideEnvVars[`${pem.env}_PATH`] = filePath;
    const data = env[`${pem.env}_DATA`];
    if (data !== undefined) overrideEnvVars[`${pem.env}_DATA`] = data;
  }
  for (const [header, { value }] of meta) overrideEnvVars[`${GRPC_META_PREFIX}${header}`] = value;
  try {
    return loadClientConfigProfile({
      ...(file && profile ? { configSource: { data: profile.text }, profile: file.profile } : { disableFile: true }),
      overrideEnvVars,
    });
  } catch (error) {
    // Its messages name keys, never values ("Cannot specify both client_cert_path and …").
    const where = file ? `${file.variable}: ${file.path}, profile "${file.profile}"` : 'TEMPORAL_*';
    problems.push(`${where}: ${(error as Error).message}`);
    return undefined;
  }
}

// ---- TLS and headers ---------------------------------------------------------------------------

function tlsFrom(
  env: TemporalEnv,
  loaded: ClientConfigProfile,
  file: ProfileFile | undefined,
  profile: ReadProfile | undefined,
  problems: string[],
): TemporalTlsConfig | undefined {
  const tls = loaded.tls;
  if (env.TEMPORAL_TLS_DISABLE_HOST_VERIFICATION || profile?.raw.tls?.disable_host_verification) {
    const setting = env.TEMPORAL_TLS_DISABLE_HOST_VERIFICATION
      ? 'TEMPORAL_TLS_DISABLE_HOST_VERIFICATION'
      : fileKey(file, 'tls.disable_host_verification');
    problems.push(
      `${setting}: not supported (the TypeScript SDK always checks the server's name); set TEMPORAL_TLS_SERVER_NAME to a name in the server's certificate instead`,
    );
  }
  if (tls?.disabled) return undefined;
  if (tls === undefined && loaded.apiKey === undefined) return undefined;
  const config: TemporalTlsConfig = {
    serverCaCert: pemFrom(PEMS[0], env, file, tls?.serverCACert),
    clientCert: pemFrom(PEMS[1], env, file, tls?.clientCert),
    clientKey: pemFrom(PEMS[2], env, file, tls?.clientKey),
    serverName:
      tls?.serverName === undefined
        ? undefined
        : {
            setting: env.TEMPORAL_TLS_SERVER_NAME ? 'TEMPORAL_TLS_SERVER_NAME' : fileKey(file, 'tls.server_name'),
            name: tls.serverName,
          },
  };
  // The loader drops a certificate without its key (or a key without its certificate) silently.
  const { clientCert, clientKey } = config;
  if (clientCert && !clientKey) {
    problems.push(
      `${missingPem(PEMS[2], file)}: required with ${clientCert.name} (mTLS needs the certificate and its key)`,
    );
  } else if (clientKey && !clientCert) {
    problems.push(
      `${missingPem(PEMS[1], file)}: required with ${clientKey.name} (mTLS needs the certificate and its key)`,
    );
  }
  return config;
}

function missingPem(pem: Pem, file: ProfileFile | undefined): string {
  return file ? `${pem.env}_PATH (or tls.${pem.key}_path in the profile)` : `${pem.env}_PATH`;
}

function grpcMetaFrom(
  loaded: ClientConfigProfile,
  meta: Map<string, { variable: string; value: string }>,
  file: ProfileFile | undefined,
  apiKey: string | undefined,
  problems: string[],
): Record<string, string> {
  const headers: Record<string, string> = {};
  // The loader turns only the first `_` of a name into `-`; the CLI turns them all. The
  // environment's headers come after the profile's, so the environment wins, as everywhere.
  for (const [key, value] of Object.entries(loaded.grpcMeta ?? {})) headers[headerName(key)] = value;
  for (const [header, value] of Object.entries(headers)) {
    const setting = meta.get(header)?.variable ?? fileKey(file, `grpc_meta.${header}`);
    if (!/^[a-z0-9][a-z0-9.-]*$/.test(header) || header.startsWith('grpc-')) {
      problems.push(`${setting}: "${header}" is not a header a client may send`);
    } else if (!/^[\x20-\x7e]*$/.test(value)) {
      problems.push(`${setting}: the value must be printable ASCII`);
    } else if (header === 'authorization' && apiKey !== undefined) {
      problems.push(`${setting}: an API key is set too, and sends the authorization header itself; set one`);
    }
  }
  return headers;
}
