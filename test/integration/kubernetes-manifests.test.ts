// deploy/kubernetes as a cluster receives it: rendered by `kubectl kustomize` (kustomize 5), every
// object checked against the Kubernetes API's schemas (kubernetes-validate, strict, for the oldest
// and the newest release we claim) and the custom resources against their CRDs' schemas (KEDA's and
// the Prometheus Operator's, from @kubernetes-models); then read for what a platform team would
// otherwise find in production: a workload without a probe, a disruption budget, a spread over
// nodes, a network policy or a locked-down securityContext; a worker whose build is not the image's
// tag; an autoscaler or a scraper that points elsewhere than the workers and the rules. Each of
// those checks is shown to fail on a render broken on purpose.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ScaledObject, TriggerAuthentication } from '@kubernetes-models/keda/keda.sh/v1alpha1';
import { PodMonitor, PrometheusRule } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1';
import { parse, parseAllDocuments, stringify } from 'yaml';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const KUBERNETES = path.join(ROOT, 'deploy/kubernetes');
const VALIDATE = path.join(ROOT, '.venv/bin/kubernetes-validate');
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

/** deploy/kubernetes copied, `edit` applied to the copy's kustomization, then rendered. */
function renderEdited(edit: (kustomization: Record<string, unknown>) => void): K8sObject[] {
  const copy = mkdtempSync(path.join(tmpdir(), 'orders-kustomize-'));
  try {
    cpSync(KUBERNETES, copy, { recursive: true });
    const file = path.join(copy, 'kustomization.yaml');
    const kustomization = parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
    edit(kustomization);
    writeFileSync(file, stringify(kustomization));
    return render(copy);
  } finally {
    rmSync(copy, { recursive: true, force: true });
  }
}

const selects = (selector: Record<string, string> | undefined, labels: Record<string, string>) =>
  selector !== undefined &&
  Object.keys(selector).length > 0 &&
  Object.entries(selector).every(([key, value]) => labels[key] === value);

const envOf = (container: Container | undefined, name: string) =>
  container?.env?.find((variable) => variable.name === name)?.value;

/** The worker Deployment: the one whose pods carry TEMPORAL_BUILD_ID. */
function workerOf(objects: K8sObject[]): { deployment: K8sObject; container: Container } {
  for (const deployment of objects.filter((object) => object.kind === 'Deployment')) {
    const container = deployment.spec?.template?.spec.containers.find((candidate) =>
      envOf(candidate, 'TEMPORAL_BUILD_ID'),
    );
    if (container) return { deployment, container };
  }
  return assert.fail('a Deployment runs versioned workers (TEMPORAL_BUILD_ID)');
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
    for (const container of pod.containers) {
      const at = `${where}, container ${container.name}`;
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

/** The workers' build is the image's tag, in the Deployment's name, its selector and its env. */
function workerBuildGaps(objects: K8sObject[]): string[] {
  const { deployment, container } = workerOf(objects);
  const tag = container.image.slice(container.image.lastIndexOf(':') + 1);
  const gaps: string[] = [];
  const where = `Deployment ${deployment.metadata.name}`;
  if (envOf(container, 'TEMPORAL_BUILD_ID') !== tag) gaps.push(`${where}: TEMPORAL_BUILD_ID is not the tag ${tag}`);
  if (!envOf(container, 'TEMPORAL_DEPLOYMENT_NAME')) gaps.push(`${where}: no TEMPORAL_DEPLOYMENT_NAME`);
  if (!deployment.metadata.name.endsWith(`-${tag}`)) gaps.push(`${where}: its name does not carry the build ${tag}`);
  if (deployment.spec?.selector?.matchLabels?.['app.kubernetes.io/version'] !== tag) {
    gaps.push(`${where}: its selector does not keep the build's pods apart`);
  }
  const migrate = objects.find((object) => object.kind === 'Job');
  if (!migrate?.metadata.name.endsWith(`-${tag}`))
    gaps.push(`the migrate Job's name does not carry the release ${tag}`);
  return gaps;
}

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
    workerDeploymentBuildId: envOf(container, 'TEMPORAL_BUILD_ID'),
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
  const tag = worker.container.image.slice(worker.container.image.lastIndexOf(':') + 1);

  it('renders every object a release needs, the workers under the name of their build', () => {
    const names = objects.map((object) => `${object.kind}/${object.metadata.name}`).sort();
    assert.deepEqual(names, [
      'ConfigMap/orders-config',
      'Deployment/orders-api',
      `Deployment/orders-worker-${tag}`,
      'HorizontalPodAutoscaler/orders-api',
      `Job/orders-migrate-${tag}`,
      'NetworkPolicy/orders-api',
      'NetworkPolicy/orders-default-deny',
      'NetworkPolicy/orders-egress',
      'NetworkPolicy/orders-migrate',
      'NetworkPolicy/orders-worker',
      'PodDisruptionBudget/orders-api',
      `PodDisruptionBudget/orders-worker-${tag}`,
      'PodMonitor/orders',
      'PrometheusRule/orders',
      `ScaledObject/orders-worker-${tag}`,
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
    assert.deepEqual(changed, [
      'Deployment/orders-worker-0.2.0-rc.1',
      'Job/orders-migrate-0.2.0-rc.1',
      'PodDisruptionBudget/orders-worker-0.2.0-rc.1',
      'ScaledObject/orders-worker-0.2.0-rc.1',
    ]);
    assert.deepEqual(operationalGaps(next), []);
    assert.equal(envOf(workerOf(next).container, 'TEMPORAL_BUILD_ID'), '0.2.0-rc.1');
  });

  it('renders without KEDA and the Prometheus Operator too: the workers then keep their own replicas', () => {
    const plain = renderEdited((kustomization) => delete kustomization.components);
    assert.ok(!plain.some((object) => object.kind in CUSTOM_RESOURCES), 'no custom resource left');
    assert.equal(workerOf(plain).deployment.spec?.replicas, 2);
    assert.deepEqual(operationalGaps(plain), []);
    for (const release of KUBERNETES_RELEASES) assert.deepEqual(validateAgainst(plain, release).noSchema, []);
  });
});
