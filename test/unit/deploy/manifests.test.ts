// The deployment examples under deploy/, read against the service itself: every probe of the
// Kubernetes manifests and every healthcheck of the compose file asks a path the API or the worker
// serves, on the port that process listens on; every variable they set is a setting
// docs/configuration.md documents, and together with the image's own environment (the
// Dockerfile's ENV) one the service accepts at start; and each grace period for a stop outlasts
// the process's own shutdown. Nothing here runs a cluster or compose: the image itself is built
// and run by test/image/image.test.ts (`npm run test:image`).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { parse, parseAllDocuments, stringify } from 'yaml';
import { controllerBuild, type EnvVar } from '../../../tools/harness/worker-controller.js';
import { openApiDocument } from '../../../edges/http/openapi.js';
import { type Config, loadConfig } from '../../../app/env.js';
import { ConfigError } from '../../../services/config/environment.js';
import { PROCESS_SECRETS, SECRET_NAMES } from '../../../app/process-secrets.js';
import { urlPassword } from '../../../services/config/production-refusals.js';
import { workerSlots } from '../../../worker/worker-slots.js';
import { storeOfUrl } from '../../../services/db/stores/store-of-url.js';
import { serveWorkerProbes, type WorkerProbes } from '../../../worker/probes.js';
import { FORCED_STOP_AFTER_GRACE_MS } from '../../../worker/run-worker.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const KUBERNETES = 'deploy/kubernetes';
const COMPOSE = 'deploy/compose.yaml';
const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');

// ---- What the service serves and reads --------------------------------------------------------

const ENTRIES = {
  api: 'dist/app/api-main.js',
  worker: 'dist/app/worker-main.js',
  migrate: 'dist/app/migrate-main.js',
} as const;
type Role = keyof typeof ENTRIES;

/** The Dockerfile's last stage: its environment and its default command. */
function imageDefaults(): { env: Record<string, string>; command: string[] } {
  const dockerfile = read('Dockerfile').replace(/\\\n/g, ' ');
  const runtime = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '));
  const env: Record<string, string> = {};
  for (const [, assignments] of runtime.matchAll(/^ENV\s+(.+)$/gm)) {
    for (const [, name, value] of assignments!.matchAll(/(\w+)=(\S+)/g)) env[name!] = value!;
  }
  const cmd = /^CMD\s+(\[.*\])\s*$/m.exec(runtime)?.[1];
  assert.ok(cmd, 'the Dockerfile has a CMD in exec form');
  return { env, command: JSON.parse(cmd) as string[] };
}

/** The role of a process from its command: the entry point it runs. */
function roleOf(command: string[]): Role {
  const role = (Object.keys(ENTRIES) as Role[]).find((name) => command.join(' ') === `node ${ENTRIES[name]}`);
  assert.ok(role, `a command that runs one of the service's entry points: ${command.join(' ')}`);
  return role;
}

/** Every name in the first column of docs/configuration.md's tables (`A` / `_B` names A and A's prefix + _B). */
function documentedSettings(): Set<string> {
  const names = new Set<string>();
  for (const line of read('docs/configuration.md').split('\n')) {
    if (!line.startsWith('|')) continue;
    let previous = '';
    for (const [, name] of (line.split('|')[1] ?? '').matchAll(/`(_?[A-Z][A-Z0-9_]*)`/g)) {
      const full = name!.startsWith('_') ? `${previous.slice(0, previous.lastIndexOf('_'))}${name}` : name!;
      names.add(full);
      previous = full;
    }
  }
  return names;
}

/** The API's GET paths without parameters, as its OpenAPI document describes what it serves. */
function apiPaths(): string[] {
  const { paths } = openApiDocument() as { paths: Record<string, { get?: unknown }> };
  return Object.entries(paths)
    .filter(([route, operations]) => operations.get && !route.includes('{'))
    .map(([route]) => route);
}

/** Whether the worker's probe server answers `probePath` with anything but 404. */
async function workerServes(probes: WorkerProbes, probePath: string): Promise<boolean> {
  const response = await fetch(`http://127.0.0.1:${probes.port}${probePath}`);
  await response.arrayBuffer();
  return response.status !== 404;
}

/** Where a process of `role` listens, and whether the kubelet or the engine can reach it. */
function listener(role: Role, config: Config): { port: number; host: string } | undefined {
  if (role === 'api') return { port: config.http.port, host: config.http.host };
  if (role === 'worker') return config.worker.health;
  return undefined;
}

/** How long a process needs after SIGTERM before it has certainly exited. */
function shutdownMs(role: Role, config: Config): number {
  if (role === 'api') {
    // The drain, then the longest request in flight: a webhook that waits for its order.
    return config.http.drainMs + config.http.startTimeoutMs + config.http.maxWaitSeconds * 1000;
  }
  if (role === 'worker') return config.worker.shutdownGraceMs + FORCED_STOP_AFTER_GRACE_MS;
  return 0;
}

// ---- What the examples say --------------------------------------------------------------------

interface Probe {
  kind: string;
  path: string;
  port: number;
}

/** One process the examples start: where it comes from, what it is given, how it is probed. */
interface Workload {
  where: string;
  role: Role;
  /** What the example itself sets, without the image's defaults. */
  env: Record<string, string>;
  /** Kubernetes: the variables it takes from Secrets, and the Secrets it names. */
  fromSecrets?: { keys: string[]; secrets: string[] };
  probes: Probe[];
  graceSeconds?: number;
}

type Manifest = Record<string, unknown> & { kind?: string; metadata?: { name?: string } };
interface K8sContainer {
  name: string;
  command?: string[];
  ports?: { name?: string; containerPort: number }[];
  env?: { name: string; value?: string; valueFrom?: { secretKeyRef?: { name: string; key: string } } }[];
  envFrom?: { configMapRef?: { name: string }; secretRef?: { name: string } }[];
  startupProbe?: { httpGet?: { path: string; port: number | string } };
  livenessProbe?: { httpGet?: { path: string; port: number | string } };
  readinessProbe?: { httpGet?: { path: string; port: number | string } };
}
interface PodSpec {
  terminationGracePeriodSeconds?: number;
  containers: K8sContainer[];
}

function kubernetesManifests(): Manifest[] {
  return readdirSync(path.join(ROOT, KUBERNETES))
    .filter((file) => file.endsWith('.yaml') && file !== 'kustomization.yaml')
    .flatMap((file) => parseAllDocuments(read(`${KUBERNETES}/${file}`)).map((doc) => doc.toJS() as Manifest));
}

/** The variables a ConfigMap's data or a Secret's stringData set, by the object's name. */
function envSources(manifests: Manifest[], kind: 'ConfigMap' | 'Secret'): Map<string, Record<string, string>> {
  return new Map(
    manifests
      .filter((manifest) => manifest.kind === kind)
      .map((manifest) => [
        manifest.metadata?.name ?? '',
        ((kind === 'ConfigMap' ? manifest.data : manifest.stringData) ?? {}) as Record<string, string>,
      ]),
  );
}

/**
 * The example Secret's values as an operator sets them: each placeholder (a URL's password, or the
 * whole value) replaced by a value of their own. As written they are refused in production.
 */
function operatorSecrets(values: Record<string, string>): Record<string, string> {
  const own = `operators-own-${randomBytes(16).toString('hex')}`;
  return Object.fromEntries(
    Object.entries(values).map(([name, value]) => {
      if (value === '') return [name, value];
      const password = urlPassword(value);
      return [name, password === undefined ? own : value.replace(`:${password}@`, `:${own}@`)];
    }),
  );
}

/** `asWritten`: the example Secret's placeholders as they are, not as an operator replaces them. */
function kubernetesWorkloads(defaultCommand: string[], asWritten = false): Workload[] {
  const manifests = kubernetesManifests();
  const configMaps = envSources(manifests, 'ConfigMap');
  const secrets = new Map(
    [...envSources(manifests, 'Secret')].map(([name, values]) => [name, asWritten ? values : operatorSecrets(values)]),
  );
  return manifests
    .filter((manifest) => manifest.kind === 'Deployment' || manifest.kind === 'Job')
    .flatMap((manifest) => {
      const pod = (manifest as { spec: { template: { spec: PodSpec } } }).spec.template.spec;
      return pod.containers.map((container): Workload => {
        const where = `${KUBERNETES} ${manifest.kind} ${manifest.metadata?.name}, container ${container.name}`;
        const env: Record<string, string> = {};
        const fromSecrets = { keys: [] as string[], secrets: [] as string[] };
        for (const source of container.envFrom ?? []) {
          const name = source.configMapRef?.name ?? source.secretRef?.name ?? '';
          const values = (source.configMapRef ? configMaps : secrets).get(name);
          assert.ok(values, `${where}: envFrom names ${name}, which the manifests define`);
          Object.assign(env, values);
          if (source.secretRef) fromSecrets.keys.push(...Object.keys(values));
          if (source.secretRef) fromSecrets.secrets.push(name);
        }
        for (const variable of container.env ?? []) {
          const fromSecret = variable.valueFrom?.secretKeyRef;
          if (fromSecret) {
            fromSecrets.keys.push(variable.name);
            fromSecrets.secrets.push(fromSecret.name);
            env[variable.name] = secrets.get(fromSecret.name)?.[fromSecret.key] ?? '';
          } else {
            env[variable.name] = variable.value ?? '';
          }
        }
        const portNumber = (port: number | string) => {
          if (typeof port === 'number') return port;
          const named = container.ports?.find((candidate) => candidate.name === port);
          assert.ok(named, `${where}: a probe names port ${port}, which the container declares`);
          return named.containerPort;
        };
        const probes = (['startupProbe', 'livenessProbe', 'readinessProbe'] as const).flatMap((kind) => {
          const httpGet = container[kind]?.httpGet;
          return httpGet ? [{ kind, path: httpGet.path, port: portNumber(httpGet.port) }] : [];
        });
        return {
          where,
          role: roleOf(container.command ?? defaultCommand),
          env,
          fromSecrets,
          probes,
          ...(manifest.kind === 'Deployment' ? { graceSeconds: pod.terminationGracePeriodSeconds ?? 30 } : {}),
        };
      });
    });
}

interface ComposeService {
  image?: string;
  command?: string[];
  environment?: Record<string, string>;
  healthcheck?: { test?: string[] };
  stop_grace_period?: string;
  ports?: string[];
}

/** `${NAME:-default}` becomes its default; any other `${…}` a value each setting accepts. */
const interpolate = (value: string) =>
  value.replace(/\$\{\w+(?::-([^}]*)|:\?[^}]*)?\}/g, (_match, fallback: string | undefined) =>
    fallback === undefined ? 'set-by-the-operator-0123456789' : fallback,
  );

function composeWorkloads(defaultCommand: string[]): Workload[] {
  const services = (parse(read(COMPOSE), { merge: true }) as { services: Record<string, ComposeService> }).services;
  return Object.entries(services)
    .filter(([, service]) => service.image?.startsWith('exactly-once-orders:'))
    .map(([name, service]): Workload => {
      const env = Object.fromEntries(
        Object.entries(service.environment ?? {}).map(([key, value]) => [key, interpolate(String(value))]),
      );
      const probes = [
        ...(service.healthcheck?.test ?? []).join(' ').matchAll(/http:\/\/127\.0\.0\.1:(\d+)(\/[\w/-]*)/g),
      ].map(([, port, probePath]) => ({ kind: 'healthcheck', path: probePath!, port: Number(port) }));
      const grace = /^(\d+)s$/.exec(service.stop_grace_period ?? '10s')?.[1];
      assert.ok(grace, `${COMPOSE} service ${name}: stop_grace_period in whole seconds`);
      return {
        where: `${COMPOSE} service ${name}`,
        role: roleOf(service.command ?? defaultCommand),
        env,
        probes,
        graceSeconds: Number(grace),
      };
    });
}

// ---- The checks -------------------------------------------------------------------------------

describe('the deployment examples under deploy/', () => {
  const image = imageDefaults();
  const workloads = [...kubernetesWorkloads(image.command), ...composeWorkloads(image.command)];
  const configOf = (workload: Workload) => loadConfig({ ...image.env, ...workload.env });
  let probes: WorkerProbes;

  before(async () => {
    probes = await serveWorkerProbes({ host: '127.0.0.1', port: 0, log: pino({ level: 'silent' }) });
  });
  after(async () => {
    await probes.close();
  });

  it('run the API, the worker and the migrations, each from the image', () => {
    assert.equal(roleOf(image.command), 'api', "the image's default command is the API");
    const roles = (source: string) =>
      new Set(workloads.filter((workload) => workload.where.startsWith(source)).map((workload) => workload.role));
    for (const source of [KUBERNETES, COMPOSE]) {
      assert.deepEqual([...roles(source)].sort(), ['api', 'migrate', 'worker'], source);
    }
  });

  it('set only variables that docs/configuration.md documents', () => {
    const documented = documentedSettings();
    const undocumented = [
      ...Object.keys(image.env).map((name) => `Dockerfile ENV: ${name}`),
      ...workloads.flatMap((workload) => Object.keys(workload.env).map((name) => `${workload.where}: ${name}`)),
    ].filter((entry) => !documented.has(entry.slice(entry.lastIndexOf(' ') + 1)));
    assert.deepEqual(undocumented, []);
  });

  it('leave the Secret out of the kustomization: `kubectl apply -k` never overwrites the real one', () => {
    const { resources } = parse(read(`${KUBERNETES}/kustomization.yaml`)) as { resources: string[] };
    assert.ok(!resources.includes('secret.example.yaml'), 'secret.example.yaml is not a resource');
    for (const resource of resources) {
      assert.ok(existsSync(path.join(ROOT, KUBERNETES, resource)), `${resource} exists`);
      const kinds = parseAllDocuments(read(`${KUBERNETES}/${resource}`)).map((doc) => (doc.toJS() as Manifest).kind);
      assert.ok(!kinds.includes('Secret'), `${resource} defines no Secret`);
    }
    // What the workloads read from their Secrets is documented beside them, for those created apart.
    const secrets = new Set(
      kubernetesWorkloads(image.command).flatMap((workload) => workload.fromSecrets?.secrets ?? []),
    );
    const listed = new Set(envSources(kubernetesManifests(), 'Secret').keys());
    for (const secret of secrets) assert.ok(listed.has(secret), `secret.example.yaml lists the keys of ${secret}`);
  });

  it('give each workload, in a Secret of its own, exactly the secrets its entry point reads', () => {
    const kubernetes = kubernetesWorkloads(image.command);
    const sorted = (names: Iterable<string>) => [...new Set(names)].sort();
    for (const workload of kubernetes) {
      const given = workload.fromSecrets?.keys ?? [];
      // Named apart so that a failure says which way it is wrong.
      const reads: readonly string[] = PROCESS_SECRETS[workload.role];
      assert.deepEqual(
        sorted(given.filter((name) => !reads.includes(name))),
        [],
        `${workload.where}: given secrets its entry point does not read`,
      );
      assert.deepEqual(
        sorted(reads.filter((name) => !given.includes(name))),
        [],
        `${workload.where}: lacks secrets its entry point reads`,
      );
      // Nothing secret reaches it through the ConfigMap either.
      const secretInConfig = Object.keys(workload.env).filter(
        (name) => SECRET_NAMES.has(name) && !given.includes(name),
      );
      assert.deepEqual(secretInConfig, [], `${workload.where}: secrets set outside its Secret`);
    }
    // One Secret per workload: none is read by two.
    const readers = new Map<string, string[]>();
    for (const workload of kubernetes) {
      for (const secret of workload.fromSecrets?.secrets ?? [])
        readers.set(secret, [...(readers.get(secret) ?? []), workload.where]);
    }
    const shared = [...readers].filter(([, where]) => where.length > 1).map(([secret]) => secret);
    assert.deepEqual(shared, [], 'a Secret read by two workloads');
    // Every secret setting is some process's: a new one is placed, not forgotten.
    const read = new Set(Object.values(PROCESS_SECRETS).flat());
    assert.deepEqual(
      [...SECRET_NAMES].filter((name) => !read.has(name)),
      [],
      'secret settings no entry point reads',
    );
  });

  it("stop in production on the example Secret's placeholders as written, naming each setting and not its value", () => {
    const refused = kubernetesWorkloads(image.command, true).map((workload) => {
      try {
        configOf(workload);
      } catch (error) {
        assert.ok(error instanceof ConfigError, workload.where);
        return error.message;
      }
      return assert.fail(`${workload.where}: started with the example Secret's placeholders`);
    });
    const workloads = kubernetesWorkloads(image.command, true);
    for (const [index, message] of refused.entries()) {
      const workload = workloads[index]!;
      const placeholders = (workload.fromSecrets?.keys ?? []).filter((name) => workload.env[name]);
      assert.ok(placeholders.length > 0, `${workload.where}: its Secret shows a placeholder`);
      for (const name of placeholders) {
        assert.match(message, new RegExp(`^\\s*${name}: (holds a placeholder|its password is a placeholder)`, 'm'));
      }
      assert.doesNotMatch(message, /replace-me/);
    }
  });

  it('give every process settings it accepts at start, a worker slots its pool can hold', () => {
    for (const workload of workloads) {
      assert.doesNotThrow(() => configOf(workload), workload.where);
      if (workload.role === 'migrate') continue;
      const config = configOf(workload);
      const runsWorker = workload.role === 'worker' || config.http.hostsWorker;
      if (runsWorker) assert.doesNotThrow(() => workerSlots(config, workload.role === 'api'), workload.where);
    }
  });

  it('run on either store: the MySQL URLs the example Secret names in its comment are accepted too', () => {
    const mysql = (url: string) => url.replace(/^postgresql:\/\//, 'mysql://').replace(/:5432\//, ':3306/');
    for (const workload of workloads) {
      const env = { ...workload.env };
      for (const name of ['DATABASE_URL', 'DATABASE_MIGRATION_URL']) if (env[name]) env[name] = mysql(env[name]);
      // The migrate Job holds the owner's URL alone.
      assert.match(env.DATABASE_URL ?? env.DATABASE_MIGRATION_URL ?? '', /^mysql:\/\//, workload.where);
      const config = loadConfig({ ...image.env, ...env });
      assert.equal(storeOfUrl(config.migrationUrl ?? ''), 'mysql', workload.where);
    }
  });

  it('probe only paths the API and the worker serve, on the ports they listen on', async () => {
    const served = apiPaths();
    for (const workload of workloads) {
      const config = configOf(workload);
      const listening = listener(workload.role, config);
      if (workload.role !== 'migrate') {
        assert.ok(listening, `${workload.where}: WORKER_HEALTH_PORT is set, or nothing answers the probes`);
        assert.ok(workload.probes.length > 0, `${workload.where}: is probed`);
        assert.ok(!listening.host.startsWith('127.'), `${workload.where}: listens beyond the loopback`);
      }
      for (const probe of workload.probes) {
        const at = `${workload.where}: ${probe.kind} ${probe.path} on ${probe.port}`;
        assert.equal(probe.port, listening?.port, `${at}: the port the process listens on`);
        if (workload.role === 'api') assert.ok(served.includes(probe.path), `${at}: one of ${served.join(', ')}`);
        else assert.ok(await workerServes(probes, probe.path), `${at}: a path the worker's probes answer`);
      }
    }
  });

  it('point liveness at /livez, which checks no dependency', () => {
    for (const workload of workloads) {
      for (const probe of workload.probes.filter((candidate) => candidate.kind === 'livenessProbe')) {
        assert.equal(probe.path, '/livez', workload.where);
      }
    }
  });

  it('give each process more time to stop than its own shutdown takes', () => {
    for (const workload of workloads.filter((candidate) => candidate.graceSeconds !== undefined)) {
      const needed = shutdownMs(workload.role, configOf(workload));
      assert.ok(
        workload.graceSeconds! * 1000 > needed,
        `${workload.where}: a grace of ${workload.graceSeconds} s, more than the ${needed / 1000} s its shutdown may take`,
      );
    }
  });
});

// ---- deploy/kubernetes as a GitOps controller applies it --------------------------------------

/** deploy/kubernetes rendered by `kubectl kustomize`, as Argo CD and Flux render it; `components` instead of its own. */
function rendered(components?: string[]): Manifest[] {
  if (components) {
    const copy = mkdtempSync(path.join(tmpdir(), 'orders-kustomize-'));
    try {
      cpSync(path.join(ROOT, KUBERNETES), copy, { recursive: true });
      const file = path.join(copy, 'kustomization.yaml');
      writeFileSync(file, stringify({ ...(parse(readFileSync(file, 'utf8')) as object), components }));
      return renderedAt(copy);
    } finally {
      rmSync(copy, { recursive: true, force: true });
    }
  }
  return renderedAt(path.join(ROOT, KUBERNETES));
}

function renderedAt(dir: string): Manifest[] {
  const result = spawnSync('kubectl', ['kustomize', dir], { encoding: 'utf8' });
  if (result.error) {
    throw new Error(`kubectl: ${result.error.message} (kubectl 1.27 or later, with its kustomize 5, renders it)`);
  }
  assert.equal(result.status, 0, result.stderr);
  return parseAllDocuments(result.stdout).map((doc) => doc.toJS() as Manifest);
}

/** The labels the team puts on its gateway, its scraper and its egress proxy (docs/production.md). */
const GATEWAY = { 'orders.example/gateway': 'true' };
const SCRAPER = { 'orders.example/metrics-scraper': 'true' };
const EGRESS_PROXY = { 'orders.example/egress-proxy': 'true' };
/** What the API and the workers open, besides the proxy: DNS, the database, Temporal, the broker, https, OTLP. */
const EGRESS_PORTS = ['53/UDP', '53/TCP', '5432/TCP', '3306/TCP', '7233/TCP', '5672/TCP', '5671/TCP', '443/TCP'];
const OTLP_PORTS = ['4317/TCP', '4318/TCP'];
/** The migrate Job opens one connection, whatever DB_POOL_SIZE says (services/db/migrate.ts). */
const MIGRATE_CONNECTIONS = 1;
/** During a rollout two builds' workers run side by side (docs/production.md, "Rolling out a release"). */
const BUILDS_AT_ONCE = 2;
/**
 * Under the Temporal Worker Controller, three: the build draining (until its sunset's
 * `scaledownDelay`), the current one and the one ramping — while that delay is shorter than the
 * ramp's pauses, so the build before is gone before a fourth can start ramping.
 */
const CONTROLLER_BUILDS_AT_ONCE = 3;

interface PolicyPeer {
  podSelector?: { matchLabels?: Record<string, string> };
  namespaceSelector?: { matchLabels?: Record<string, string> };
}
interface PolicyRule {
  from?: PolicyPeer[];
  to?: PolicyPeer[];
  ports?: { port?: number | string; protocol?: string }[];
}
interface PolicySpec {
  podSelector: {
    matchLabels?: Record<string, string>;
    matchExpressions?: { key: string; operator: string; values: string[] }[];
  };
  policyTypes?: string[];
  ingress?: PolicyRule[];
  egress?: PolicyRule[];
}
type Rendered = Manifest & {
  metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec: Record<string, unknown>;
};

const ofKind = (objects: Manifest[], kind: string) => objects.filter((object) => object.kind === kind) as Rendered[];

/** Whether a policy's pod selector takes the pods of `name` (app.kubernetes.io/name). */
function policySelects(spec: PolicySpec, name: string): boolean {
  const { matchLabels = {}, matchExpressions = [] } = spec.podSelector;
  const labels = { 'app.kubernetes.io/name': name };
  return (
    (Object.keys(matchLabels).length > 0 || matchExpressions.length > 0) &&
    Object.entries(matchLabels).every(([key, value]) => labels[key as keyof typeof labels] === value) &&
    matchExpressions.every(
      (expression) =>
        expression.operator === 'In' && expression.values.includes(labels[expression.key as keyof typeof labels]),
    )
  );
}

const policiesOf = (objects: Manifest[], name: string) =>
  ofKind(objects, 'NetworkPolicy')
    .map((policy) => policy.spec as unknown as PolicySpec)
    .filter((spec) => policySelects(spec, name));

/** Every peer of a rule is pods carrying `labels`, in any namespace; a rule with no peer is open to all. */
const onlyFrom = (peers: PolicyPeer[] | undefined, labels: Record<string, string>) =>
  (peers ?? []).length > 0 &&
  (peers ?? []).every(
    (peer) =>
      Object.keys(peer.namespaceSelector?.matchLabels ?? {}).length === 0 &&
      Object.entries(labels).every(([key, value]) => peer.podSelector?.matchLabels?.[key] === value),
  );

/** The ingress rules of the pods of `name` that open `port`. */
const ingressTo = (objects: Manifest[], name: string, port: string) =>
  policiesOf(objects, name).flatMap((spec) =>
    (spec.ingress ?? []).filter((rule) => (rule.ports ?? []).some((candidate) => candidate.port === port)),
  );

/** The ports the pods of `name` may open, as `port/protocol`, with no peer named. */
const egressPorts = (objects: Manifest[], name: string) =>
  policiesOf(objects, name).flatMap((spec) =>
    (spec.egress ?? []).flatMap((rule) => (rule.ports ?? []).map((port) => `${port.port}/${port.protocol ?? 'TCP'}`)),
  );

/**
 * The number docs/production.md states as the connection budget the manifests are sized for: the
 * plain workers', or with `controller` the Temporal Worker Controller's.
 */
function connectionBudget(controller = false): number {
  const pattern = controller
    ? /The connection budget under the Temporal Worker Controller: \*\*(\d+)\*\*/
    : /The connection budget of `deploy\/kubernetes`: \*\*(\d+)\*\*/;
  const stated = pattern.exec(read('docs/production.md'))?.[1];
  assert.ok(stated, `docs/production.md states the connection budget${controller ? ' under the controller' : ''}`);
  return Number(stated);
}

/** A duration as the controller's fields write it (`30s`, `15m`, `1h`, `1h30m`), in seconds. */
function durationSeconds(text: string): number {
  const parts = [...text.matchAll(/(\d+)(h|m|s)/g)];
  assert.ok(parts.length > 0 && parts.map((part) => part[0]).join('') === text, `a duration: ${text}`);
  const unit = { h: 3600, m: 60, s: 1 } as const;
  return parts.reduce((sum, [, count, name]) => sum + Number(count) * unit[name as keyof typeof unit], 0);
}

/** A workload's DB_POOL_SIZE as its pods see it: the container's env over the ConfigMap's. */
function poolSizeOf(objects: Manifest[], workload: Rendered): number {
  const pod = (workload.spec as { template: { spec: PodSpec } }).template.spec;
  const configMaps = envSources(objects, 'ConfigMap');
  let size: string | undefined;
  for (const container of pod.containers) {
    for (const source of container.envFrom ?? []) {
      size = configMaps.get(source.configMapRef?.name ?? '')?.DB_POOL_SIZE ?? size;
    }
    size = container.env?.find((variable) => variable.name === 'DB_POOL_SIZE')?.value ?? size;
  }
  assert.ok(size, `${workload.kind} ${workload.metadata.name}: DB_POOL_SIZE is set`);
  return Number(size);
}

/**
 * Whether a build that stops being current is scaled down before the next build can finish its
 * ramp: its sunset's `scaledownDelay` shorter than the ramp's pauses together.
 */
function drainedBeforeNextRamp(objects: Manifest[]): boolean {
  const spec = ofKind(objects, 'WorkerDeployment')[0]?.spec as {
    rollout: { steps: { pauseDuration: string }[] };
    sunset: { scaledownDelay: string };
  };
  const ramp = spec.rollout.steps.reduce((sum, step) => sum + durationSeconds(step.pauseDuration), 0);
  return durationSeconds(spec.sunset.scaledownDelay) < ramp;
}

/** The workers of one build at their most, and the workload their pods come from. */
function workersPerBuild(objects: Manifest[]): { count: number; workload: Rendered } {
  const controlled = ofKind(objects, 'WorkerDeployment')[0];
  if (controlled) {
    // A ScaledObject per build when worker-controller/keda is there, the WorkerDeployment's count otherwise.
    const scaled = ofKind(objects, 'WorkerResourceTemplate')
      .map((object) => (object.spec as { template: { kind: string; spec: { maxReplicaCount?: number } } }).template)
      .find((template) => template.kind === 'ScaledObject');
    const count = scaled ? scaled.spec.maxReplicaCount : (controlled.spec as { replicas?: number }).replicas;
    assert.ok(count, 'the WorkerDeployment or its ScaledObject bounds each build');
    return { count, workload: controlled };
  }
  const worker = ofKind(objects, 'Deployment').find(
    (deployment) => deployment.metadata.labels?.['app.kubernetes.io/component'] === 'worker',
  );
  assert.ok(worker, 'the render has the worker Deployment');
  const scaled = ofKind(objects, 'ScaledObject').find(
    (object) => (object.spec as { scaleTargetRef: { name: string } }).scaleTargetRef.name === worker.metadata.name,
  );
  assert.ok(scaled, 'a ScaledObject scales the workers');
  return { count: (scaled.spec as { maxReplicaCount: number }).maxReplicaCount, workload: worker };
}

/**
 * The connections the render may hold at its peak, each term named. The plain workers run two builds
 * at once during a rollout; under the controller, three (CONTROLLER_BUILDS_AT_ONCE).
 */
function connectionsAtPeak(objects: Manifest[]): { total: number; terms: string[] } {
  const api = ofKind(objects, 'Deployment').find(
    (deployment) => deployment.metadata.labels?.['app.kubernetes.io/component'] === 'api',
  );
  assert.ok(api, 'the render has the API Deployment');
  const hpa = ofKind(objects, 'HorizontalPodAutoscaler').find(
    (object) => (object.spec as { scaleTargetRef: { name: string } }).scaleTargetRef.name === api.metadata.name,
  );
  assert.ok(hpa, 'a HorizontalPodAutoscaler scales the API');
  const workers = workersPerBuild(objects);
  const builds = workers.workload.kind === 'WorkerDeployment' ? CONTROLLER_BUILDS_AT_ONCE : BUILDS_AT_ONCE;
  const apis = (hpa.spec as { maxReplicas: number }).maxReplicas;
  const jobs = ofKind(objects, 'Job').map((job) => (job.spec as { parallelism?: number }).parallelism ?? 1);
  const [workerPool, apiPool] = [poolSizeOf(objects, workers.workload), poolSizeOf(objects, api)];
  const terms = [
    `workers: ${workers.count} × ${builds} builds × ${workerPool}`,
    `API: ${apis} × ${apiPool}`,
    `migrate: ${jobs.join(' + ')} × ${MIGRATE_CONNECTIONS}`,
  ];
  const total =
    workers.count * builds * workerPool +
    apis * apiPool +
    jobs.reduce((sum, parallelism) => sum + parallelism * MIGRATE_CONNECTIONS, 0);
  return { total, terms };
}

describe('deploy/kubernetes, rendered for a GitOps controller', () => {
  const objects = rendered();
  const changed = (pick: (object: Rendered) => boolean, change: (object: Rendered) => void) => {
    const copy = structuredClone(objects) as Rendered[];
    const target = copy.find(pick);
    assert.ok(target, 'the object to change is in the render');
    change(target);
    return copy;
  };

  it("is closed by default: the API's port from the gateway alone, the metrics ports from the scraper alone", () => {
    const http = ingressTo(objects, 'orders-api', 'http');
    assert.ok(http.length > 0, "a rule lets the gateway reach the API's port");
    for (const rule of http) assert.ok(onlyFrom(rule.from, GATEWAY), `the API's port from the gateway alone`);
    for (const name of ['orders-api', 'orders-worker']) {
      const metrics = ingressTo(objects, name, 'metrics');
      assert.ok(metrics.length > 0, `${name}: a rule lets the scraper reach its metrics`);
      for (const rule of metrics) assert.ok(onlyFrom(rule.from, SCRAPER), `${name}: metrics from the scraper alone`);
    }
    for (const label of [GATEWAY, SCRAPER, EGRESS_PROXY]) {
      const [[key, value]] = Object.entries(label) as [[string, string]];
      assert.ok(read('docs/production.md').includes(`${key}: "${value}"`), `docs/production.md documents ${key}`);
    }
    // An API rule open to the whole cluster, as the policy had before, is found.
    const open = changed(
      (object) => object.kind === 'NetworkPolicy' && object.metadata.name === 'orders-api',
      (object) => delete (object.spec as unknown as PolicySpec).ingress![0]!.from,
    );
    assert.ok(!ingressTo(open, 'orders-api', 'http').every((rule) => onlyFrom(rule.from, GATEWAY)));
  });

  it('denies all egress by default and allows the service its own list, the vendors through the proxy', () => {
    for (const name of ['orders-api', 'orders-worker', 'orders-migrate']) {
      const denying = policiesOf(objects, name).filter(
        (spec) =>
          spec.policyTypes?.includes('Egress') &&
          spec.policyTypes.includes('Ingress') &&
          (spec.egress ?? []).length === 0 &&
          (spec.ingress ?? []).length === 0,
      );
      assert.ok(denying.length > 0, `${name}: a default-deny policy, ingress and egress, selects its pods`);
    }
    for (const name of ['orders-api', 'orders-worker']) {
      const allowed = egressPorts(objects, name);
      const missing = [...EGRESS_PORTS, ...OTLP_PORTS].filter((port) => !allowed.includes(port));
      assert.deepEqual(missing, [], `${name}: egress ports not allowed`);
      const proxy = policiesOf(objects, name).flatMap((spec) =>
        (spec.egress ?? []).filter((rule) => onlyFrom(rule.to, EGRESS_PROXY)),
      );
      assert.ok(proxy.length > 0 && proxy.every((rule) => (rule.ports ?? []).length > 0), `${name}: the egress proxy`);
    }
    const dns = policiesOf(objects, 'orders-worker').flatMap((spec) =>
      (spec.egress ?? []).filter((rule) => rule.ports?.some((port) => port.port === 53)),
    );
    for (const rule of dns) {
      assert.deepEqual(
        rule.to?.map((peer) => peer.namespaceSelector?.matchLabels),
        [{ 'kubernetes.io/metadata.name': 'kube-system' }],
        'DNS to kube-system alone',
      );
    }
    // The migrate Job: DNS and the database, nothing else.
    assert.deepEqual(egressPorts(objects, 'orders-migrate').sort(), ['3306/TCP', '53/TCP', '53/UDP', '5432/TCP']);
  });

  it('adds up: workers of two builds at their maximum, the API at its maximum and the migration fit the connection budget', () => {
    const budget = connectionBudget();
    const { total, terms } = connectionsAtPeak(objects);
    assert.ok(total <= budget, `${terms.join(' + ')} = ${total} connections, over the budget of ${budget}`);
    // The ScaledObject holds a count in range when it cannot read Temporal, and the API's count is the HPA's.
    for (const scaled of ofKind(objects, 'ScaledObject')) {
      const spec = scaled.spec as { minReplicaCount: number; maxReplicaCount: number; fallback?: { replicas: number } };
      assert.ok(spec.fallback, `ScaledObject ${scaled.metadata.name}: a fallback`);
      assert.ok(spec.fallback.replicas >= spec.minReplicaCount && spec.fallback.replicas <= spec.maxReplicaCount);
    }
    const hpa = ofKind(objects, 'HorizontalPodAutoscaler')[0]!.spec as {
      minReplicas: number;
      maxReplicas: number;
      metrics: { resource?: { name: string } }[];
    };
    assert.ok(hpa.minReplicas >= 2 && hpa.maxReplicas >= hpa.minReplicas, 'the API: 2 replicas at least');
    assert.deepEqual(
      hpa.metrics.map((metric) => metric.resource?.name),
      ['cpu'],
      'the API scales on its CPU',
    );
    const api = ofKind(objects, 'Deployment').find((deployment) => deployment.metadata.name === 'orders-api');
    assert.equal(
      (api?.spec as { replicas?: number }).replicas,
      undefined,
      'the API Deployment leaves replicas to the HPA',
    );
    // The workers' maximum as it was before the budget was counted does not fit.
    const before = changed(
      (object) => object.kind === 'ScaledObject',
      (object) => Object.assign(object.spec, { maxReplicaCount: 8 }),
    );
    assert.ok(connectionsAtPeak(before).total > budget, 'eight workers a build are over the budget');
  });

  it("keeps every build's workers from a controller's prune", () => {
    const perBuild = objects.filter(
      (object) =>
        (object as Rendered).metadata.labels?.['app.kubernetes.io/component'] === 'worker' &&
        (object as Rendered).metadata.labels?.['app.kubernetes.io/version'],
    ) as Rendered[];
    assert.deepEqual(perBuild.map((object) => object.kind).sort(), [
      'Deployment',
      'PodDisruptionBudget',
      'ScaledObject',
    ]);
    for (const object of perBuild) {
      const annotations = object.metadata.annotations ?? {};
      const where = `${object.kind} ${object.metadata.name}`;
      assert.match(annotations['argocd.argoproj.io/sync-options'] ?? '', /(^|,)Prune=false(,|$)/, `${where}: Argo CD`);
      assert.equal(annotations['kustomize.toolkit.fluxcd.io/prune'], 'disabled', `${where}: Flux`);
    }
  });

  it('runs the migration before the workloads, and gives up on it after a deadline', () => {
    const [job, ...others] = ofKind(objects, 'Job');
    assert.ok(job && others.length === 0, 'one migrate Job');
    const deadline = (job.spec as { activeDeadlineSeconds?: number }).activeDeadlineSeconds;
    assert.ok(deadline !== undefined && deadline > 0 && deadline <= 3600, `activeDeadlineSeconds: ${deadline}`);
    const annotations = job.metadata.annotations ?? {};
    assert.ok(['Sync', 'PreSync'].includes(annotations['argocd.argoproj.io/hook'] ?? ''), 'an Argo CD sync hook');
    const wave = (object: Rendered) => Number(object.metadata.annotations?.['argocd.argoproj.io/sync-wave'] ?? 0);
    assert.ok(wave(job) < 0, 'the Job before the workloads (wave 0)');
    for (const config of ofKind(objects, 'ConfigMap')) {
      assert.ok(wave(config) < wave(job), `ConfigMap ${config.metadata.name} before the Job that reads it`);
    }
  });

  it('starts the API and the workers only on a current schema: an init container waits on `orders-cli schema-status`', () => {
    for (const workload of ofKind(objects, 'Deployment')) {
      const pod = (workload.spec as { template: { spec: { initContainers?: { command?: string[] }[] } } }).template
        .spec;
      const waits = (pod.initContainers ?? []).find((container) => container.command?.includes('schema-status'));
      assert.ok(waits, `${workload.metadata.name} waits for the schema`);
      const command = waits.command ?? [];
      assert.deepEqual(command.slice(0, 3), ['node', 'dist/app/cli-main.js', 'schema-status']);
      const waitSeconds = Number(command[command.indexOf('--wait') + 1]);
      const jobDeadline = (ofKind(objects, 'Job')[0]?.spec as { activeDeadlineSeconds?: number }).activeDeadlineSeconds;
      assert.ok(
        waitSeconds >= (jobDeadline ?? 0),
        `${workload.metadata.name} waits ${waitSeconds} s, as long as the Job may run (${jobDeadline} s)`,
      );
    }
  });

  it("takes the runbook links' base and the Prometheus selector label from one setting each", () => {
    const kustomization = parse(read(`${KUBERNETES}/kustomization.yaml`)) as {
      configMapGenerator: { name: string; literals: string[] }[];
    };
    const base = kustomization.configMapGenerator
      .find((generator) => generator.name === 'orders-deploy-settings')
      ?.literals.find((literal) => literal.startsWith('RUNBOOK_BASE_URL='))
      ?.slice('RUNBOOK_BASE_URL='.length);
    assert.ok(base, 'RUNBOOK_BASE_URL among the settings');
    assert.ok(
      !objects.some((object) => (object as Rendered).metadata.name === 'orders-deploy-settings'),
      'not applied',
    );
    const rule = ofKind(objects, 'PrometheusRule')[0]!;
    const links = (
      rule.spec as { groups: { rules: { alert?: string; annotations?: { runbook_url?: string } }[] }[] }
    ).groups
      .flatMap((group) => group.rules)
      .filter((candidate) => candidate.alert)
      .map((candidate) => candidate.annotations?.runbook_url ?? '');
    assert.ok(
      links.length > 0 && links.every((link) => link.startsWith(`${base}#`)),
      'every runbook link under the base',
    );
    for (const kind of ['PrometheusRule', 'PodMonitor']) {
      assert.ok(ofKind(objects, kind)[0]?.metadata.labels?.release, `${kind}: the selector label`);
    }
    assert.ok(
      !ofKind(objects, 'Deployment').some((deployment) => deployment.metadata.labels?.release),
      'on those alone',
    );
  });
});

describe('deploy/kubernetes/worker-controller, as the Temporal Worker Controller runs it', () => {
  const image = imageDefaults();
  const objects = rendered(['worker-controller', 'prometheus-operator']);
  /** The namespace the team applies the kustomization in: the controller names the deployment after it. */
  const namespace = 'orders';

  /** The environment of a build's worker container: the ConfigMap, the Secret, then its env (the controller's last). */
  function workerEnv(render: Manifest[], secrets: Record<string, string>): Record<string, string> {
    const deployment = controllerBuild(render, namespace).objects[0] as {
      spec: { template: { spec: { containers: (K8sContainer & { env: EnvVar[] })[] } } };
    };
    const container = deployment.spec.template.spec.containers.find((candidate) => candidate.name === 'worker')!;
    const env: Record<string, string> = {};
    const configMaps = envSources(render, 'ConfigMap');
    for (const source of container.envFrom ?? []) {
      Object.assign(env, source.configMapRef ? configMaps.get(source.configMapRef.name) : secrets);
    }
    for (const variable of container.env) {
      env[variable.name] = variable.valueFrom?.secretKeyRef
        ? (secrets[variable.valueFrom.secretKeyRef.key] ?? '')
        : (variable.value ?? '');
    }
    return env;
  }
  const workerSecrets = () =>
    operatorSecrets(envSources(kubernetesManifests(), 'Secret').get('orders-worker-secrets') ?? {});

  it("starts the worker on what the controller sets: its deployment `<namespace>/orders-worker`, its build, the Connection's address", () => {
    const env = workerEnv(objects, workerSecrets());
    const config = loadConfig({ ...image.env, ...env });
    const { deploymentName, buildId } = controllerBuild(objects, namespace);
    assert.deepEqual(config.worker.deployment, { deploymentName: `${namespace}/orders-worker`, buildId });
    assert.equal(deploymentName, `${namespace}/orders-worker`);
    const connection = objects.find((object) => object.kind === 'Connection') as { spec: { hostPort: string } };
    assert.equal(config.temporal.address, connection.spec.hostPort);
    assert.equal(config.temporal.namespace, envSources(objects, 'ConfigMap').get('orders-config')?.TEMPORAL_NAMESPACE);
    // Every variable the controller sets is a setting the service documents, the TLS ones included.
    const documented = documentedSettings();
    /** The render with the Connection's spec replaced by `spec`. */
    const withConnection = (spec: Record<string, unknown>) =>
      objects.map((object) => (object.kind === 'Connection' ? { ...object, spec } : object));
    const tls = workerEnv(
      withConnection({
        hostPort: 'orders.a1b2c.tmprl.cloud:7233',
        tls: { serverName: 'orders.a1b2c.tmprl.cloud' },
        mutualTLSSecretRef: { name: 'orders-temporal-tls' },
      }),
      workerSecrets(),
    );
    const key = workerEnv(
      withConnection({
        hostPort: 'orders.a1b2c.tmprl.cloud:7233',
        apiKeySecretRef: { name: 'orders-worker-secrets', key: 'TEMPORAL_API_KEY' },
      }),
      { ...workerSecrets(), TEMPORAL_API_KEY: 'operators-own-api-key' },
    );
    const injected = new Set([...Object.keys(tls), ...Object.keys(key)].filter((name) => name.startsWith('TEMPORAL_')));
    assert.deepEqual(
      [...injected].filter((name) => !documented.has(name)),
      [],
    );
    assert.equal(loadConfig({ ...image.env, ...key }).temporal.apiKey, 'operators-own-api-key');
  });

  it('adds up: three builds at their maximum, the API and the migration fit the budget stated for the controller', () => {
    const budget = connectionBudget(true);
    for (const components of [
      ['worker-controller', 'prometheus-operator'],
      ['worker-controller', 'worker-controller/keda', 'prometheus-operator'],
    ]) {
      const render = components.length === 2 ? objects : rendered(components);
      const { total, terms } = connectionsAtPeak(render);
      assert.ok(total <= budget, `${components.join(', ')}: ${terms.join(' + ')} = ${total}, over ${budget}`);
      assert.ok(drainedBeforeNextRamp(render), `${components.join(', ')}: the sunset outlasts the ramp`);
    }
    // An hour's sunset, as the controller's default, lets builds pile up beyond three.
    const hourLong = structuredClone(objects) as Rendered[];
    const workers = ofKind(hourLong, 'WorkerDeployment')[0]!.spec as { sunset: { scaledownDelay: string } };
    workers.sunset.scaledownDelay = '1h';
    assert.ok(!drainedBeforeNextRamp(hourLong));
    // Eight workers a build, as the plain workers had before the budget was counted, do not fit.
    const eight = structuredClone(objects) as Rendered[];
    Object.assign(ofKind(eight, 'WorkerDeployment')[0]!.spec, { replicas: 8 });
    assert.ok(connectionsAtPeak(eight).total > budget);
  });

  it("refuses to render with the plain workers' keda, in either order, saying which component to use", () => {
    for (const components of [
      ['keda', 'worker-controller'],
      ['worker-controller', 'keda'],
    ]) {
      assert.throws(() => rendered(components), /worker-controller|orders-worker-build/, components.join(', '));
    }
    assert.throws(
      () => rendered(['keda', 'worker-controller']),
      /list-worker-controller~1keda-after-it-instead/,
      'the refusal names the way out',
    );
  });

  it("refuses nothing the plain workers are held to: secrets, probes and grace are worker.yaml's", () => {
    const workers = objects.find((object) => object.kind === 'WorkerDeployment') as {
      spec: { template: { spec: PodSpec & { containers: K8sContainer[] } } };
    };
    const plain = rendered([]).find(
      (object) => object.kind === 'Deployment' && (object as Rendered).metadata.name.startsWith('orders-worker-'),
    ) as { spec: { template: { spec: PodSpec } } };
    assert.equal(
      workers.spec.template.spec.terminationGracePeriodSeconds,
      plain.spec.template.spec.terminationGracePeriodSeconds,
    );
    const probes = (pod: PodSpec) =>
      pod.containers.map((container) => [container.readinessProbe, container.livenessProbe, container.startupProbe]);
    assert.deepEqual(probes(workers.spec.template.spec), probes(plain.spec.template.spec));
  });
});
