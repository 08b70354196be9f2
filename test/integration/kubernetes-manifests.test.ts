// deploy/kubernetes as a cluster receives it: rendered by `kubectl kustomize` (kustomize 5), every
// object checked against the Kubernetes API's schemas (kubernetes-validate, strict, for the oldest
// and the newest release we claim) and the custom resources against their CRDs' schemas (KEDA's and
// the Prometheus Operator's, from @kubernetes-models; the Temporal Worker Controller's, from its
// published CRDs in test/fixtures/temporal-worker-controller/); then read for what a platform team would
// otherwise find in production: a workload without a probe, a disruption budget, a spread over
// nodes, a network policy or a locked-down securityContext; a worker whose build is not the image's
// tag; an autoscaler or a scraper that points elsewhere than the workers and the rules. Each of
// those checks is shown to fail on a render broken on purpose. Every way of running the workers is
// rendered so: plain, with KEDA, with the Temporal Worker Controller, with both; the controller's
// objects for a build as its source makes them (tools/harness/worker-controller.ts).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ScaledObject, TriggerAuthentication } from '@kubernetes-models/keda/keda.sh/v1alpha1';
import { PodMonitor, PrometheusRule } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1';
import { Ajv, type ValidateFunction } from 'ajv';
import { parse, parseAllDocuments, stringify } from 'yaml';
import { buildName } from '../../tools/deploy/worker-build.js';
import { writeBuild } from '../../tools/deploy/write-worker-build.js';
import { controllerBuild } from '../../tools/harness/worker-controller.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const KUBERNETES = path.join(ROOT, 'deploy/kubernetes');
const VALIDATE = path.join(ROOT, '.venv/bin/kubernetes-validate');
/** The Temporal Worker Controller's CRDs, as it publishes them. */
const CONTROLLER_CRDS = path.join(ROOT, 'test/fixtures/temporal-worker-controller');
/** The oldest and the newest Kubernetes release the manifests are checked against. */
const KUBERNETES_RELEASES = ['1.30.0', '1.37.0'];
/** The job names the alert rules and the dashboard select (deploy/prometheus/). */
const JOBS = ['orders-api', 'orders-worker'];

interface Metadata {
  name: string;
  labels?: Record<string, string>;
}
interface Container {
  name: string;
  env?: { name: string; value?: string }[];
  ports?: { name?: string }[];
  volumeMounts?: { name: string }[];
  startupProbe?: unknown;
  livenessProbe?: unknown;
  readinessProbe?: unknown;
  resources?: { requests?: { cpu?: string; memory?: string }; limits?: { memory?: string } };
  securityContext?: {
    allowPrivilegeEscalation?: boolean;
    readOnlyRootFilesystem?: boolean;
    capabilities?: { drop?: string[] };
  };
  image: string;
}
interface PodSpec {
  automountServiceAccountToken?: boolean;
  securityContext?: { runAsNonRoot?: boolean; seccompProfile?: { type?: string } };
  topologySpreadConstraints?: { topologyKey: string; labelSelector?: { matchLabels?: Record<string, string> } }[];
  containers: Container[];
  volumes?: { name: string }[];
}
interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: Metadata;
  spec?: Record<string, unknown> & {
    replicas?: number;
    selector?: { matchLabels?: Record<string, string> };
    podSelector?: { matchLabels?: Record<string, string> };
    template?: { metadata: { labels: Record<string, string> }; spec: PodSpec };
  };
  data?: Record<string, string>;
}

function kubectl(args: string[]): string {
  const result = spawnSync('kubectl', args, { encoding: 'utf8' });
  if (result.error) {
    throw new Error(
      `kubectl: ${result.error.message} (kubectl 1.27 or later, with its kustomize 5, renders deploy/kubernetes)`,
    );
  }
  assert.equal(result.status, 0, result.stderr);
  return result.stdout;
}

function render(dir = KUBERNETES): K8sObject[] {
  return parseAllDocuments(kubectl(['kustomize', dir])).map((doc) => doc.toJS() as K8sObject);
}

/** deploy/kubernetes copied, `edit` applied to the copy's kustomization (and `files` written), then rendered. */
function renderEdited(
  edit: (kustomization: Record<string, unknown>) => void,
  files: Record<string, string> = {},
): K8sObject[] {
  const copy = mkdtempSync(path.join(tmpdir(), 'orders-kustomize-'));
  try {
    cpSync(KUBERNETES, copy, { recursive: true });
    const file = path.join(copy, 'kustomization.yaml');
    const kustomization = parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
    edit(kustomization);
    writeFileSync(file, stringify(kustomization));
    for (const [name, text] of Object.entries(files)) writeFileSync(path.join(copy, name), text);
    // As a team does after changing the image or the workers' pods (`npm run deploy:build`).
    writeBuild(copy);
    return render(copy);
  } finally {
    rmSync(copy, { recursive: true, force: true });
  }
}

/** The ways of running the workers, by the components each lists (the Prometheus Operator's beside). */
const VARIANTS: Record<string, string[]> = {
  plain: [],
  KEDA: ['keda', 'prometheus-operator'],
  'Worker Controller': ['worker-controller', 'prometheus-operator'],
  'Worker Controller and KEDA': ['worker-controller', 'worker-controller/keda', 'prometheus-operator'],
};
/** The Kubernetes namespace the controller's objects are made in, for these tests. */
const NAMESPACE = 'orders';

/**
 * A variant's render as the cluster ends up holding it: with the Worker Controller, its
 * WorkerDeployment's build made into the objects the controller keeps for it.
 */
function asRunning(objects: K8sObject[]): K8sObject[] {
  if (!objects.some((object) => object.kind === 'WorkerDeployment')) return objects;
  return [...objects, ...(controllerBuild(objects, NAMESPACE).objects as K8sObject[])];
}

const selects = (selector: Record<string, string> | undefined, labels: Record<string, string>) =>
  selector !== undefined &&
  Object.keys(selector).length > 0 &&
  Object.entries(selector).every(([key, value]) => labels[key] === value);

const envOf = (container: Container | undefined, name: string) =>
  container?.env?.find((variable) => variable.name === name)?.value;

/** The build a container polls as: TEMPORAL_BUILD_ID, or the Worker Controller's TEMPORAL_WORKER_BUILD_ID. */
const buildOf = (container: Container | undefined) =>
  envOf(container, 'TEMPORAL_BUILD_ID') ?? envOf(container, 'TEMPORAL_WORKER_BUILD_ID');

/** The worker Deployment: the one whose pods carry a build id. */
function workerOf(objects: K8sObject[]): { deployment: K8sObject; container: Container } {
  for (const deployment of objects.filter((object) => object.kind === 'Deployment')) {
    const container = deployment.spec?.template?.spec.containers.find((candidate) => buildOf(candidate));
    if (container) return { deployment, container };
  }
  return assert.fail('a Deployment runs versioned workers (TEMPORAL_BUILD_ID or TEMPORAL_WORKER_BUILD_ID)');
}

/**
 * What a platform team would find missing or pointing nowhere, one line each; empty when the
 * render is ready to apply.
 */
function operationalGaps(objects: K8sObject[]): string[] {
  const gaps: string[] = [];
  const ofKind = (kind: string) => objects.filter((object) => object.kind === kind);
  const workloads = [...ofKind('Deployment'), ...ofKind('Job')];
  for (const workload of workloads) {
    const where = `${workload.kind} ${workload.metadata.name}`;
    const template = workload.spec?.template;
    if (!template) {
      gaps.push(`${where}: no pod template`);
      continue;
    }
    const pod = template.spec;
    const labels = template.metadata.labels;
    if (pod.automountServiceAccountToken !== false) gaps.push(`${where}: mounts a service account token`);
    if (pod.securityContext?.runAsNonRoot !== true) gaps.push(`${where}: may run as root`);
    if (pod.securityContext?.seccompProfile?.type !== 'RuntimeDefault') gaps.push(`${where}: no seccomp profile`);
    const volumes = (pod.volumes ?? []).map((volume) => volume.name);
    if (new Set(volumes).size !== volumes.length)
      gaps.push(`${where}: two volumes of one name (${volumes.join(', ')})`);
    for (const container of pod.containers) {
      const at = `${where}, container ${container.name}`;
      const names = (container.env ?? []).map((variable) => variable.name);
      const twice = names.filter((name, index) => names.indexOf(name) !== index);
      if (twice.length > 0) gaps.push(`${at}: sets ${twice.join(', ')} twice`);
      const context = container.securityContext;
      if (context?.allowPrivilegeEscalation !== false) gaps.push(`${at}: may escalate privileges`);
      if (context?.readOnlyRootFilesystem !== true) gaps.push(`${at}: a writable root filesystem`);
      if (!context?.capabilities?.drop?.includes('ALL')) gaps.push(`${at}: keeps Linux capabilities`);
      const { requests, limits } = container.resources ?? {};
      if (!requests?.cpu || !requests.memory || !limits?.memory) gaps.push(`${at}: no requests or memory limit`);
      if (workload.kind === 'Deployment') {
        for (const probe of ['startupProbe', 'livenessProbe', 'readinessProbe'] as const) {
          if (!container[probe]) gaps.push(`${at}: no ${probe}`);
        }
      }
    }
    if (!ofKind('NetworkPolicy').some((policy) => selects(policy.spec?.podSelector?.matchLabels, labels))) {
      gaps.push(`${where}: no NetworkPolicy selects its pods`);
    }
    if (workload.kind !== 'Deployment') continue;
    if (!ofKind('PodDisruptionBudget').some((budget) => selects(budget.spec?.selector?.matchLabels, labels))) {
      gaps.push(`${where}: no PodDisruptionBudget selects its pods`);
    }
    const spread = pod.topologySpreadConstraints?.find(
      (constraint) => constraint.topologyKey === 'kubernetes.io/hostname',
    );
    if (!spread || !selects(spread.labelSelector?.matchLabels, labels)) {
      gaps.push(`${where}: its pods are not spread over nodes`);
    }
  }
  gaps.push(...workerBuildGaps(objects), ...autoscalerGaps(objects), ...monitoringGaps(objects));
  return gaps;
}

/** The image's tag as it leads a build id: what a build id may not hold made `-`. */
const tagOf = (image: string) =>
  image
    .replace(/@.*$/, '')
    .slice(image.lastIndexOf('/') + 1)
    .split(':')[1] ?? '';
const asBuildIdPrefix = (tag: string) => tag.replace(/[^a-zA-Z0-9._-]+/g, '-');

/**
 * The workers' build is the image's tag and a hash of their pods, in the Deployment's name, its
 * selector and its env; the migrate Job's name carries the release.
 */
function workerBuildGaps(objects: K8sObject[]): string[] {
  const { deployment, container } = workerOf(objects);
  const tag = tagOf(container.image);
  const build = buildOf(container) ?? '';
  const gaps: string[] = [];
  const where = `Deployment ${deployment.metadata.name}`;
  if (!new RegExp(`^${escape(asBuildIdPrefix(tag))}-[a-z0-9]{4}$`).test(build)) {
    gaps.push(`${where}: its build ${build} is not the tag ${tag} and a hash`);
  }
  if (!envOf(container, 'TEMPORAL_DEPLOYMENT_NAME')) gaps.push(`${where}: no TEMPORAL_DEPLOYMENT_NAME`);
  if (!deployment.metadata.name.endsWith(`-${buildName(build)}`)) {
    gaps.push(`${where}: its name does not carry the build ${build}`);
  }
  if (!Object.values(deployment.spec?.selector?.matchLabels ?? {}).includes(build)) {
    gaps.push(`${where}: its selector does not keep the build's pods apart`);
  }
  const migrate = objects.find((object) => object.kind === 'Job');
  if (!migrate?.metadata.name.startsWith(`orders-migrate-${buildName(`${asBuildIdPrefix(tag)}-0000`).slice(0, -5)}`)) {
    gaps.push(`the migrate Job's name does not carry the release ${tag}`);
  }
  return gaps;
}

/** `text` as a literal part of a regular expression. */
const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** The ScaledObject scales the workers on the backlog of their own task queue and build. */
function autoscalerGaps(objects: K8sObject[]): string[] {
  const scaled = objects.find((object) => object.kind === 'ScaledObject');
  if (!scaled) return [];
  const { deployment, container } = workerOf(objects);
  const config = objects.find((object) => object.kind === 'ConfigMap')?.data ?? {};
  const spec = scaled.spec as {
    scaleTargetRef: { name: string };
    triggers: { type: string; metadata: Record<string, string> }[];
  };
  const gaps: string[] = [];
  if (spec.scaleTargetRef.name !== deployment.metadata.name) {
    gaps.push(`ScaledObject ${scaled.metadata.name} scales ${spec.scaleTargetRef.name}, not the workers`);
  }
  if (deployment.spec?.replicas !== undefined) gaps.push('the worker Deployment sets replicas beside its ScaledObject');
  const trigger = spec.triggers.find((candidate) => candidate.type === 'temporal')?.metadata ?? {};
  const expected = {
    endpoint: config.TEMPORAL_ADDRESS,
    namespace: config.TEMPORAL_NAMESPACE,
    taskQueue: config.TEMPORAL_TASK_QUEUE,
    workerDeploymentName: envOf(container, 'TEMPORAL_DEPLOYMENT_NAME'),
    workerDeploymentBuildId: buildOf(container),
  };
  for (const [name, value] of Object.entries(expected)) {
    if (!value || trigger[name] !== value)
      gaps.push(`the temporal trigger's ${name} is ${trigger[name]}, not ${value}`);
  }
  return gaps;
}

/** The PodMonitor scrapes the API and the workers under the job names the rules select. */
function monitoringGaps(objects: K8sObject[]): string[] {
  const monitor = objects.find((object) => object.kind === 'PodMonitor');
  if (!monitor) return [];
  const spec = monitor.spec as {
    jobLabel?: string;
    selector: { matchExpressions?: { key: string; operator: string; values: string[] }[] };
    podMetricsEndpoints: { port: string }[];
  };
  const matches = (labels: Record<string, string>) =>
    (spec.selector.matchExpressions ?? []).every(
      (expression) => expression.operator === 'In' && expression.values.includes(labels[expression.key] ?? ''),
    );
  const scraped = objects.filter(
    (object) => object.kind === 'Deployment' && matches(object.spec?.template?.metadata.labels ?? {}),
  );
  const jobs = scraped.map((object) => object.spec?.template?.metadata.labels[spec.jobLabel ?? ''] ?? '(none)');
  const gaps: string[] = [];
  if ([...new Set(jobs)].sort().join() !== JOBS.join()) {
    gaps.push(`the PodMonitor gives the jobs ${jobs.join(', ')}, not ${JOBS.join(', ')}`);
  }
  for (const object of scraped) {
    const ports = object.spec?.template?.spec.containers.flatMap((container) => container.ports ?? []) ?? [];
    for (const endpoint of spec.podMetricsEndpoints) {
      if (!ports.some((port) => port.name === endpoint.port)) {
        gaps.push(`the PodMonitor scrapes port ${endpoint.port}, which ${object.metadata.name} does not declare`);
      }
    }
  }
  return gaps;
}

/** kubernetes-validate's verdicts on the objects, for one Kubernetes release. */
function validateAgainst(objects: K8sObject[], release: string): { failed: string[]; noSchema: string[] } {
  const dir = mkdtempSync(path.join(tmpdir(), 'orders-validate-'));
  try {
    const file = path.join(dir, 'rendered.yaml');
    writeFileSync(file, objects.map((object) => stringify(object)).join('---\n'));
    const result = spawnSync(VALIDATE, ['--strict', '-k', release, file], { encoding: 'utf8' });
    if (result.error) throw new Error(`kubernetes-validate: ${result.error.message} (npm ci installs it into .venv)`);
    const lines = `${result.stdout}${result.stderr}`.split('\n').filter(Boolean);
    const failed = lines.filter((line) => !line.startsWith('INFO') && !line.startsWith('WARN'));
    const noSchema = lines.flatMap((line) => /Couldn't find schema for kind (\w+)/.exec(line)?.[1] ?? []);
    if (result.status !== 0 && failed.length === 0) failed.push(`exit code ${result.status}`);
    return { failed, noSchema };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const CUSTOM_RESOURCES: Record<string, new (data: never) => { validate: () => void }> = {
  ScaledObject,
  TriggerAuthentication,
  PodMonitor,
  PrometheusRule,
};

// ---- The Temporal Worker Controller's CRDs ----------------------------------------------------

type Schema = Record<string, unknown> & {
  properties?: Record<string, Schema>;
  items?: Schema;
  'x-kubernetes-validations'?: { rule: string; message: string }[];
};

/** A Go duration (`15m`, `1h30m`, `30s`) in seconds; NaN when it is not one. */
function durationSeconds(text: unknown): number {
  if (typeof text !== 'string' || !/^(\d+(\.\d+)?(h|m|s|ms))+$/.test(text)) return Number.NaN;
  const unit = { h: 3600, m: 60, s: 1, ms: 0.001 } as Record<string, number>;
  return [...text.matchAll(/(\d+(?:\.\d+)?)(ms|h|m|s)/g)].reduce((sum, [, n, u]) => sum + Number(n) * unit[u!]!, 0);
}

type Node = Record<string, unknown> & { metadata?: { name?: string } };
const has = (node: unknown, key: string) => typeof node === 'object' && node !== null && key in node;
/**
 * The CEL rules of the CRDs (x-kubernetes-validations), which the API server evaluates and a JSON
 * Schema validator does not, each written out here. A rule a new CRD adds fails the test until it is.
 */
const CEL_RULES: Record<string, (self: Node) => boolean> = {
  '!(has(self.mutualTLSSecretRef) && has(self.apiKeySecretRef))': (self) =>
    !(has(self, 'mutualTLSSecretRef') && has(self, 'apiKeySecretRef')),
  'size(self.metadata.name) <= 63': (self) => (self.metadata?.name ?? '').length <= 63,
  "self.strategy != 'Progressive' || (has(self.steps) && size(self.steps) > 0)": (self) =>
    self.strategy !== 'Progressive' || (Array.isArray(self.steps) && self.steps.length > 0),
  '!has(self.gate) || !has(self.gate.inputFrom) || (has(self.gate.inputFrom.configMapKeyRef) != has(self.gate.inputFrom.secretKeyRef))':
    (self) => {
      const from = (self.gate as Node | undefined)?.inputFrom as Node | undefined;
      return !from || has(from, 'configMapKeyRef') !== has(from, 'secretKeyRef');
    },
  "duration(self.pauseDuration) >= duration('30s')": (self) => durationSeconds(self.pauseDuration) >= 30,
  'has(self.workerDeploymentRef) || has(self.temporalWorkerDeploymentRef)': (self) =>
    has(self, 'workerDeploymentRef') || has(self, 'temporalWorkerDeploymentRef'),
  '!(has(self.workerDeploymentRef) && has(self.temporalWorkerDeploymentRef))': (self) =>
    !(has(self, 'workerDeploymentRef') && has(self, 'temporalWorkerDeploymentRef')),
};

/** The CEL rules an object breaks, walking the schema and the object together. */
function celFailures(schema: Schema, node: unknown, where: string): string[] {
  const failures: string[] = [];
  for (const { rule, message } of schema['x-kubernetes-validations'] ?? []) {
    const check = CEL_RULES[rule];
    if (!check) failures.push(`${where}: a CEL rule this test does not evaluate: ${rule}`);
    else if (!check(node as Node)) failures.push(`${where}: ${message}`);
  }
  if (schema.properties && typeof node === 'object' && node !== null && !Array.isArray(node)) {
    for (const [key, value] of Object.entries(node)) {
      const property = schema.properties[key];
      if (property) failures.push(...celFailures(property, value, `${where}.${key}`));
    }
  }
  if (schema.items && Array.isArray(node)) {
    node.forEach((item, index) => failures.push(...celFailures(schema.items!, item, `${where}[${index}]`)));
  }
  return failures;
}

/**
 * The schema as the API server applies it with strict field validation (kubectl's default): an
 * object with properties takes no other field, unless it keeps unknown fields. The Kubernetes
 * extensions are left for ajv to ignore.
 */
function strict(schema: Schema): Schema {
  const copy: Schema = { ...schema };
  if (copy.properties) {
    copy.properties = Object.fromEntries(Object.entries(copy.properties).map(([key, value]) => [key, strict(value)]));
    if (copy.additionalProperties === undefined && !copy['x-kubernetes-preserve-unknown-fields']) {
      copy.additionalProperties = false;
    }
  }
  if (copy.items) copy.items = strict(copy.items);
  if (typeof copy.additionalProperties === 'object')
    copy.additionalProperties = strict(copy.additionalProperties as Schema);
  for (const key of ['anyOf', 'allOf', 'oneOf'] as const) {
    if (Array.isArray(copy[key])) copy[key] = (copy[key] as Schema[]).map(strict);
  }
  return copy;
}

interface CrdValidator {
  schema: Schema;
  validate: ValidateFunction;
}

/** Each kind of the controller's CRDs (`apiVersion/kind`), with its schema compiled. */
function controllerCrds(): Map<string, CrdValidator> {
  const ajv = new Ajv({ strict: false, allErrors: true, validateFormats: false });
  const validators = new Map<string, CrdValidator>();
  for (const file of readdirSync(CONTROLLER_CRDS).filter((name) => name.endsWith('.yaml'))) {
    const crd = parse(readFileSync(path.join(CONTROLLER_CRDS, file), 'utf8')) as {
      spec: {
        group: string;
        names: { kind: string };
        versions: { name: string; served: boolean; schema: { openAPIV3Schema: Schema } }[];
      };
    };
    for (const version of crd.spec.versions.filter((candidate) => candidate.served)) {
      const schema = version.schema.openAPIV3Schema;
      validators.set(`${crd.spec.group}/${version.name}/${crd.spec.names.kind}`, {
        schema,
        validate: ajv.compile(strict(schema)),
      });
    }
  }
  return validators;
}

/** What the CRD of a temporal.io object says of it: schema errors and broken CEL rules; empty when valid. */
function crdFailures(crds: Map<string, CrdValidator>, object: K8sObject): string[] {
  const where = `${object.kind} ${object.metadata.name}`;
  const crd = crds.get(`${object.apiVersion}/${object.kind}`);
  if (!crd) return [`${where}: no CRD defines ${object.apiVersion} ${object.kind}`];
  const failures = crd.validate(object)
    ? []
    : (crd.validate.errors ?? []).map(
        (error) => `${where}${error.instancePath}: ${error.message} ${JSON.stringify(error.params)}`,
      );
  return [...failures, ...celFailures(crd.schema, object, where)];
}

/** The render with one object changed by `change` (a deep copy, the original untouched). */
function broken(objects: K8sObject[], pick: (object: K8sObject) => boolean, change: (object: K8sObject) => void) {
  const copy = structuredClone(objects);
  const target = copy.find(pick);
  assert.ok(target, 'the object to break is in the render');
  change(target);
  return copy;
}

describe('deploy/kubernetes, rendered', () => {
  const objects = render();
  const worker = workerOf(objects);
  const build = buildName(buildOf(worker.container) ?? '');

  it('renders every object a release needs, the workers under the name of their build', () => {
    const names = objects.map((object) => `${object.kind}/${object.metadata.name}`).sort();
    assert.deepEqual(names, [
      'ConfigMap/orders-config',
      'Deployment/orders-api',
      `Deployment/orders-worker-${build}`,
      'HorizontalPodAutoscaler/orders-api',
      `Job/orders-migrate-${build}`,
      'NetworkPolicy/orders-api',
      'NetworkPolicy/orders-default-deny',
      'NetworkPolicy/orders-egress',
      'NetworkPolicy/orders-migrate',
      'NetworkPolicy/orders-worker',
      'PodDisruptionBudget/orders-api',
      `PodDisruptionBudget/orders-worker-${build}`,
      'PodMonitor/orders',
      'PrometheusRule/orders',
      `ScaledObject/orders-worker-${build}`,
      'Service/orders-api',
      'TriggerAuthentication/orders-temporal',
    ]);
  });

  it("passes the Kubernetes API's schemas, strictly, from the oldest release claimed to the newest", () => {
    for (const release of KUBERNETES_RELEASES) {
      const { failed, noSchema } = validateAgainst(objects, release);
      assert.deepEqual(failed, [], `Kubernetes ${release}`);
      assert.deepEqual(
        noSchema.sort(),
        Object.keys(CUSTOM_RESOURCES).sort(),
        'only the custom resources lack a schema',
      );
    }
    const wrong = broken(
      objects,
      (object) => object.kind === 'PodDisruptionBudget',
      (object) => Object.assign(object.spec ?? {}, { maxUnavailable: 1, minAvailable: 1, maxUnavialable: 1 }),
    );
    assert.notDeepEqual(validateAgainst(wrong, KUBERNETES_RELEASES[0] as string).failed, [], 'a misspelt field');
  });

  it("passes the custom resources' own schemas (KEDA's and the Prometheus Operator's CRDs)", () => {
    for (const object of objects.filter((candidate) => candidate.kind in CUSTOM_RESOURCES)) {
      const Model = CUSTOM_RESOURCES[object.kind]!;
      assert.doesNotThrow(() => new Model(object as never).validate(), `${object.kind} ${object.metadata.name}`);
    }
    const [monitor] = broken(
      objects,
      (object) => object.kind === 'PodMonitor',
      (object) => Object.assign(object.spec ?? {}, { podMetricsEndpoints: [{ port: 9464 }] }),
    ).filter((object) => object.kind === 'PodMonitor');
    assert.throws(() => new PodMonitor(monitor as never).validate(), /port must be string/);
  });

  it('leaves a platform team nothing to add: probes, budgets, spread, policies, locked-down pods', () => {
    assert.deepEqual(operationalGaps(objects), []);
  });

  it('names what is missing when a probe, a budget or a securityContext goes', () => {
    const isApi = (object: K8sObject) => object.kind === 'Deployment' && object.metadata.name === 'orders-api';
    const cases: [string, K8sObject[], RegExp][] = [
      [
        'no readiness probe',
        broken(objects, isApi, (object) => delete object.spec?.template?.spec.containers[0]?.readinessProbe),
        /Deployment orders-api, container api: no readinessProbe/,
      ],
      [
        'no budget for the workers',
        objects.filter((object) => !(object.kind === 'PodDisruptionBudget' && object.metadata.name.includes('worker'))),
        /Deployment orders-worker-.*: no PodDisruptionBudget selects its pods/,
      ],
      [
        'no container securityContext',
        broken(
          objects,
          (object) => object.kind === 'Job',
          (object) => delete object.spec?.template?.spec.containers[0]?.securityContext,
        ),
        /Job orders-migrate-.*, container migrate: may escalate privileges/,
      ],
      [
        'a service account token',
        broken(objects, isApi, (object) => delete object.spec?.template?.spec.automountServiceAccountToken),
        /Deployment orders-api: mounts a service account token/,
      ],
      [
        'the job names the operator would make',
        broken(
          objects,
          (object) => object.kind === 'PodMonitor',
          (object) => delete (object.spec as { jobLabel?: string }).jobLabel,
        ),
        /the PodMonitor gives the jobs \(none\), \(none\)/,
      ],
      [
        'a build that is not the tag',
        broken(
          objects,
          (object) => object.kind === 'ScaledObject',
          (object) =>
            ((
              object.spec as { triggers: { metadata: Record<string, string> }[] }
            ).triggers[0]!.metadata.workerDeploymentBuildId = 'old'),
        ),
        /the temporal trigger's workerDeploymentBuildId is old/,
      ],
    ];
    for (const [what, render, expected] of cases) {
      assert.match(operationalGaps(render).join('\n'), expected, what);
    }
  });

  it("makes a new image tag a new build beside the old one: the workers', their budget's and autoscaler's names change, the API's do not", () => {
    const next = renderEdited((kustomization) => {
      (kustomization.images as { newTag: string }[])[0]!.newTag = '0.2.0-rc.1';
    });
    const names = (render: K8sObject[]) => new Set(render.map((object) => `${object.kind}/${object.metadata.name}`));
    const [before, afterwards] = [names(objects), names(next)];
    const changed = [...afterwards].filter((name) => !before.has(name)).sort();
    const nextBuild = buildOf(workerOf(next).container) ?? '';
    assert.match(nextBuild, /^0\.2\.0-rc\.1-[a-z0-9]{4}$/);
    assert.deepEqual(
      changed,
      ['Deployment', 'Job', 'PodDisruptionBudget', 'ScaledObject'].map(
        (kind) => `${kind}/orders-${kind === 'Job' ? 'migrate' : 'worker'}-${buildName(nextBuild)}`,
      ),
    );
    assert.deepEqual(operationalGaps(next), []);
  });

  it('makes a change to the pods a new build under the same tag, and a tag pushed again too once its digest is pinned', () => {
    const build = buildOf(worker.container);
    const moreMemory = renderEdited(() => {}, {
      'worker.yaml': readFileSync(path.join(KUBERNETES, 'worker.yaml'), 'utf8').replace('memory: 768Mi', 'memory: 1Gi'),
    });
    const pinned = (digest: string) =>
      renderEdited((kustomization) => Object.assign((kustomization.images as object[])[0]!, { digest }));
    const [first, pushedAgain] = [pinned(`sha256:${'a'.repeat(64)}`), pinned(`sha256:${'b'.repeat(64)}`)];
    const builds = [build, ...[moreMemory, first, pushedAgain].map((render) => buildOf(workerOf(render).container))];
    assert.equal(new Set(builds).size, 4, `four builds: ${builds.join(', ')}`);
    for (const render of [moreMemory, first, pushedAgain]) assert.deepEqual(operationalGaps(render), []);
    assert.match(workerOf(first).container.image, /:0\.1\.0@sha256:a{64}$/, 'the tag kept beside the digest');
  });

  it('renders without KEDA and the Prometheus Operator too: the workers then keep their own replicas', () => {
    const plain = renderEdited((kustomization) => delete kustomization.components);
    assert.ok(!plain.some((object) => object.kind in CUSTOM_RESOURCES), 'no custom resource left');
    assert.equal(workerOf(plain).deployment.spec?.replicas, 2);
    assert.deepEqual(operationalGaps(plain), []);
    for (const release of KUBERNETES_RELEASES) assert.deepEqual(validateAgainst(plain, release).noSchema, []);
  });
});

describe('deploy/kubernetes, each way of running the workers', () => {
  const crds = controllerCrds();
  const renders = Object.fromEntries(
    Object.entries(VARIANTS).map(([variant, components]) => [
      variant,
      renderEdited((kustomization) => (kustomization.components = components)),
    ]),
  );
  const isController = (object: K8sObject) => object.apiVersion.startsWith('temporal.io/');
  /** Every custom resource's verdict: the controller's against its CRDs, the others against their models. */
  const customFailures = (objects: K8sObject[]) =>
    objects.flatMap((object) => {
      if (isController(object)) return crdFailures(crds, object);
      const Model = CUSTOM_RESOURCES[object.kind];
      if (!Model) return [];
      try {
        new Model(object as never).validate();
        return [];
      } catch (error) {
        return [`${object.kind} ${object.metadata.name}: ${String(error)}`];
      }
    });

  for (const [variant, components] of Object.entries(VARIANTS)) {
    it(`renders ${variant} (components: ${components.join(', ') || 'none'}), valid against every schema and ready to run`, () => {
      const running = asRunning(renders[variant]!);
      for (const release of KUBERNETES_RELEASES) {
        const { failed, noSchema } = validateAgainst(running, release);
        assert.deepEqual(failed, [], `Kubernetes ${release}`);
        const custom = running.filter((object) => object.kind in CUSTOM_RESOURCES || isController(object));
        assert.deepEqual([...new Set(noSchema)].sort(), [...new Set(custom.map((object) => object.kind))].sort());
      }
      assert.deepEqual(customFailures(running), []);
      assert.deepEqual(operationalGaps(running), []);
      const controlled = running.some(isController);
      assert.equal(controlled, components.includes('worker-controller'), 'the WorkerDeployment with its component');
      const scaled = running.filter((object) => object.kind === 'ScaledObject');
      assert.equal(
        scaled.length,
        components.some((name) => name.endsWith('keda')) ? 1 : 0,
        'one ScaledObject with KEDA',
      );
    });
  }

  it("leaves the build to the Worker Controller: a Progressive rollout in the runbook's steps, no build of its own in the pods", () => {
    const objects = renders['Worker Controller']!;
    const workers = objects.find((object) => object.kind === 'WorkerDeployment')!;
    const spec = workers.spec as {
      rollout: { strategy: string; steps: { rampPercentage: number; pauseDuration: string }[] };
      template: { metadata: { labels: Record<string, string> }; spec: PodSpec };
    };
    assert.equal(spec.rollout.strategy, 'Progressive');
    // docs/production.md's "Rolling out a release": ramp 10%, watch for OrdersWorkflowTaskFailing's window, promote.
    assert.deepEqual(
      spec.rollout.steps.map((step) => [step.rampPercentage, durationSeconds(step.pauseDuration)]),
      [[10, 15 * 60]],
    );
    const container = spec.template.spec.containers.find((candidate) => candidate.name === 'worker')!;
    for (const name of ['TEMPORAL_BUILD_ID', 'TEMPORAL_WORKER_BUILD_ID', 'TEMPORAL_DEPLOYMENT_NAME']) {
      assert.equal(envOf(container, name), undefined, `${name} is the controller's`);
    }
    assert.equal(spec.template.metadata.labels['app.kubernetes.io/version'], undefined);
    assert.ok(
      !objects.some((object) => object.kind === 'Deployment' && object.metadata.name.startsWith('orders-worker')),
    );
    // The same pods as the plain workers otherwise: the template is worker.yaml's.
    const plain = workerOf(renders.plain!).deployment.spec!.template!.spec;
    const initContainers = (pod: PodSpec) => (pod as { initContainers?: unknown }).initContainers;
    assert.deepEqual(initContainers(spec.template.spec), initContainers(plain));
    assert.deepEqual(container.resources, plain.containers[0]!.resources);
    const { deploymentName, buildId } = controllerBuild(objects, NAMESPACE);
    assert.equal(deploymentName, `${NAMESPACE}/orders-worker`);
    assert.match(buildId, /^0\.1\.0-[a-z0-9]{4}$/);
  });

  it("finds what the controller's CRDs refuse: a ramp of 100%, a pause under 30 s, a misspelt field, an address without a port", () => {
    const objects = renders['Worker Controller']!;
    const isWorkers = (object: K8sObject) => object.kind === 'WorkerDeployment';
    const rollout = (object: K8sObject) =>
      (object.spec as { rollout: { steps: { rampPercentage: number; pauseDuration: string }[] } }).rollout;
    const cases: [string, K8sObject[], RegExp][] = [
      ['ramp 100%', broken(objects, isWorkers, (o) => (rollout(o).steps[0]!.rampPercentage = 100)), /must be <= 99/],
      ['pause 10 s', broken(objects, isWorkers, (o) => (rollout(o).steps[0]!.pauseDuration = '10s')), /at least 30s/],
      ['no steps', broken(objects, isWorkers, (o) => (rollout(o).steps = [])), /steps are required/],
      [
        'a misspelt field',
        broken(objects, isWorkers, (o) => Object.assign(o.spec ?? {}, { sunsett: {} })),
        /additionalProperty":"sunsett"/,
      ],
      [
        'an address without a port',
        broken(
          objects,
          (object) => object.kind === 'Connection',
          (object) => Object.assign(object.spec ?? {}, { hostPort: 'temporal-frontend' }),
        ),
        /hostPort: must match pattern/,
      ],
    ];
    for (const [what, render, expected] of cases) {
      assert.match(customFailures(render).join('\n'), expected, what);
    }
    assert.deepEqual(customFailures(objects), []);
  });

  it("keeps the pods valid when the controller mounts its mTLS Secret: the workers' own volume has another name", () => {
    const mtls = (objects: K8sObject[]) =>
      broken(
        objects,
        (object) => object.kind === 'Connection',
        (object) =>
          (object.spec = {
            hostPort: 'orders.a1b2c.tmprl.cloud:7233',
            mutualTLSSecretRef: { name: 'orders-temporal-tls' },
          }),
      );
    const objects = mtls(renders['Worker Controller']!);
    assert.deepEqual(customFailures(objects), []);
    assert.deepEqual(operationalGaps(asRunning(objects)), []);
    const sameName = broken(
      objects,
      (object) => object.kind === 'WorkerDeployment',
      (object) => {
        const pod = object.spec!.template!.spec;
        pod.volumes!.find((volume) => volume.name === 'orders-temporal-tls')!.name = 'temporal-tls';
        for (const mount of pod.containers[0]!.volumeMounts ?? [])
          if (mount.name === 'orders-temporal-tls') mount.name = 'temporal-tls';
      },
    );
    assert.match(operationalGaps(asRunning(sameName)).join('\n'), /two volumes of one name/);
  });
});
