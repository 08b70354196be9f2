// What the Temporal Worker Controller makes of deploy/kubernetes/worker-controller for one build,
// as its source does (internal/k8s/deployments.go, NewDeploymentWithOwnerRef and
// ApplyControllerPodSpecModifications; internal/k8s/workerresourcetemplates.go for the per-build
// objects), at the commit the CRDs of test/fixtures/temporal-worker-controller/ name: the
// Deployment with the variables and the volume it adds to every container, and each
// WorkerResourceTemplate's object with the fields it fills in. The tests check those objects as
// they check the plain workers, and start the service's settings on the pods' environment.
import { buildId } from '../deploy/worker-build.js';

export interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { secretKeyRef?: { name: string; key: string } };
}
interface Container {
  name: string;
  image?: string;
  env?: EnvVar[];
  volumeMounts?: { name: string; mountPath: string }[];
}
interface PodTemplate {
  metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> };
  spec: { containers: Container[]; volumes?: { name: string; secret?: { secretName: string } }[] };
}
interface ConnectionSpec {
  hostPort: string;
  tls?: { serverName?: string };
  mutualTLSSecretRef?: { name: string };
  apiKeySecretRef?: { name: string; key: string };
}
type K8sObject = { kind?: string; apiVersion?: string; metadata?: { name?: string }; spec?: unknown };

/** The label and the separator the controller names a build's objects by. */
const BUILD_ID_LABEL = 'temporal.io/build-id';
const DEPLOYMENT_NAME_LABEL = 'temporal.io/deployment-name';

/** Its CleanStringForDNS: letters, digits and `-`, lower case. */
const dnsName = (text: string) => text.replace(/[^a-zA-Z0-9-]+/g, '-').toLowerCase();

export interface ControllerBuild {
  /** Temporal's name of the Worker Deployment: `<namespace>/<name>`. */
  deploymentName: string;
  buildId: string;
  /** The build's Deployment and the objects of each WorkerResourceTemplate. */
  objects: K8sObject[];
}

/**
 * The objects the controller keeps for the build of `render`'s WorkerDeployment in the Kubernetes
 * namespace `namespace`. The build id is the scheme's (tag and template hash), computed here as
 * tools/deploy/worker-build.ts does; the controller's own hash differs, and nothing here depends on it.
 */
export function controllerBuild(render: K8sObject[], namespace: string): ControllerBuild {
  const workers = render.find((object) => object.kind === 'WorkerDeployment') as
    | {
        metadata: { name: string };
        spec: {
          replicas?: number;
          template: PodTemplate;
          workerOptions: { connectionRef: { name: string }; temporalNamespace: string };
        };
      }
    | undefined;
  if (!workers) throw new Error('the render has no WorkerDeployment');
  const connection = render.find(
    (object) => object.kind === 'Connection' && object.metadata?.name === workers.spec.workerOptions.connectionRef.name,
  ) as { spec: ConnectionSpec } | undefined;
  if (!connection) throw new Error(`no Connection ${workers.spec.workerOptions.connectionRef.name}`);
  const name = workers.metadata.name;
  const temporalNamespace = workers.spec.workerOptions.temporalNamespace;
  const template = structuredClone(workers.spec.template);
  const build = buildId(template.spec.containers[0]?.image ?? '', template);
  const deploymentName = `${namespace}/${name}`;
  const selector = { [DEPLOYMENT_NAME_LABEL]: dnsName(name), [BUILD_ID_LABEL]: build };
  const deployment = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: dnsName(`${name}-${build}`), namespace, labels: selector },
    spec: {
      ...(workers.spec.replicas === undefined ? {} : { replicas: workers.spec.replicas }),
      selector: { matchLabels: selector },
      template: {
        metadata: { ...template.metadata, labels: { ...template.metadata?.labels, ...selector } },
        spec: withControllerEnv(template.spec, connection.spec, temporalNamespace, deploymentName, build),
      },
    },
  };
  const perBuild = render
    .filter((object) => object.kind === 'WorkerResourceTemplate')
    .map((object) => {
      const resource = object as { metadata: { name: string }; spec: { template: Record<string, unknown> } };
      const filled = structuredClone(resource.spec.template) as { metadata?: object; spec?: Record<string, unknown> };
      filled.metadata = { name: dnsName(`${resource.metadata.name}-${build}`), namespace };
      fillIn(filled.spec ?? {}, deployment.metadata.name, selector, deploymentName, build, temporalNamespace);
      return filled;
    });
  return { deploymentName, buildId: build, objects: [deployment, ...perBuild] };
}

/** ApplyControllerPodSpecModifications: what every container of a build's pods is given. */
function withControllerEnv(
  pod: PodTemplate['spec'],
  connection: ConnectionSpec,
  temporalNamespace: string,
  deploymentName: string,
  build: string,
): PodTemplate['spec'] {
  const added: EnvVar[] = [
    { name: 'TEMPORAL_ADDRESS', value: connection.hostPort },
    { name: 'TEMPORAL_NAMESPACE', value: temporalNamespace },
    { name: 'TEMPORAL_DEPLOYMENT_NAME', value: deploymentName },
    { name: 'TEMPORAL_WORKER_BUILD_ID', value: build },
  ];
  if (connection.tls?.serverName) added.push({ name: 'TEMPORAL_TLS_SERVER_NAME', value: connection.tls.serverName });
  const mtls = connection.mutualTLSSecretRef;
  if (mtls) {
    added.push(
      { name: 'TEMPORAL_TLS', value: 'true' },
      { name: 'TEMPORAL_TLS_CLIENT_KEY_PATH', value: '/etc/temporal/tls/tls.key' },
      { name: 'TEMPORAL_TLS_CLIENT_CERT_PATH', value: '/etc/temporal/tls/tls.crt' },
    );
  } else if (connection.apiKeySecretRef) {
    added.push({ name: 'TEMPORAL_API_KEY', valueFrom: { secretKeyRef: connection.apiKeySecretRef } });
  }
  return {
    ...pod,
    containers: pod.containers.map((container) => ({
      ...container,
      env: [...(container.env ?? []), ...added],
      ...(mtls
        ? {
            volumeMounts: [...(container.volumeMounts ?? []), { name: 'temporal-tls', mountPath: '/etc/temporal/tls' }],
          }
        : {}),
    })),
    ...(mtls ? { volumes: [...(pod.volumes ?? []), { name: 'temporal-tls', secret: { secretName: mtls.name } }] } : {}),
  };
}

/** The fields a WorkerResourceTemplate leaves to the controller ({} or ''), filled in for the build. */
function fillIn(
  spec: Record<string, unknown>,
  deployment: string,
  selector: Record<string, string>,
  deploymentName: string,
  build: string,
  temporalNamespace: string,
) {
  if (isEmptyObject(spec.scaleTargetRef)) {
    spec.scaleTargetRef = { apiVersion: 'apps/v1', kind: 'Deployment', name: deployment };
  }
  const matchLabels = (spec.selector as { matchLabels?: unknown } | undefined)?.matchLabels;
  if (isEmptyObject(matchLabels)) (spec.selector as { matchLabels: unknown }).matchLabels = selector;
  for (const trigger of (spec.triggers ?? []) as { type: string; metadata: Record<string, string> }[]) {
    if (trigger.type !== 'temporal') continue;
    const values = {
      workerDeploymentName: deploymentName,
      workerDeploymentBuildId: build,
      namespace: temporalNamespace,
    };
    for (const [key, value] of Object.entries(values)) if (trigger.metadata[key] === '') trigger.metadata[key] = value;
  }
}

const isEmptyObject = (value: unknown) =>
  value !== null && typeof value === 'object' && !Array.isArray(value) && Object.keys(value).length === 0;
