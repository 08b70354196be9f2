// The workers' build names the code they run: the image's tag and a hash of their pod template
// (tools/deploy/worker-build.ts), written into deploy/kubernetes/kustomization.yaml by
// `npm run deploy:build`. Every image reference a registry may hand out — a digest, a registry
// with a port, a tag with `+` and capitals — renders names Kubernetes takes and a build id the
// service and Temporal take.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { parse, parseAllDocuments, stringify } from 'yaml';
import { deploymentProblems, temporalSettings } from '../../../services/temporal/settings.js';
import { buildId, buildName, imageLabel, MAX_BUILD_NAME, templateHash } from '../../../tools/deploy/worker-build.js';
import {
  computedBuild,
  KUSTOMIZATION_DIR,
  writeBuild,
  writtenBuild,
} from '../../../tools/deploy/write-worker-build.js';

const DIGEST = `sha256:${'0123456789abcdef'.repeat(4)}`;
/** A label value: 63 at most, alphanumeric at both ends, `-`, `_` and `.` between. */
const LABEL_VALUE = /^[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$/;
/** A DNS-1123 label: what a Deployment's pods, a Service or a Job's name must be. */
const DNS_LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
/** The longest name of a per-build Deployment or Job whose pods' generated names stay labels. */
const MAX_WORKLOAD_NAME = 47;

/** The image references to hold the scheme to, each with the part its build is named by. */
const IMAGES: [image: string, label: string][] = [
  ['registry.example.com/exactly-once-orders:0.1.0', '0.1.0'],
  ['registry.local:5000/orders:1.2.3', '1.2.3'],
  ['registry.local:5000/orders', 'orders'],
  [`orders@${DIGEST}`, DIGEST.slice('sha256:'.length)],
  [`registry.local:5000/team/orders:1.2.3@${DIGEST}`, '1.2.3'],
  ['registry.example.com/orders:V1.2.3+Build.5', 'V1.2.3+Build.5'],
  ['localhost/orders:-weird.', '-weird.'],
  [`ghcr.io/team/orders:${'Release_'.repeat(16)}`, 'Release_'.repeat(16)],
];

const template = (image: string, memory = '768Mi') => ({
  metadata: { labels: { 'app.kubernetes.io/name': 'orders-worker' } },
  spec: { containers: [{ name: 'worker', image, resources: { limits: { memory } } }] },
});

/** Whether the service starts a versioned worker with this build id. */
function serviceTakes(id: string): boolean {
  const parsed = temporalSettings.TEMPORAL_BUILD_ID.safeParse(id);
  return (
    parsed.success && deploymentProblems({ TEMPORAL_DEPLOYMENT_NAME: 'orders', TEMPORAL_BUILD_ID: id }).length === 0
  );
}

function kustomize(dir: string) {
  const result = spawnSync('kubectl', ['kustomize', dir], { encoding: 'utf8' });
  if (result.error) throw new Error(`kubectl: ${result.error.message} (kubectl 1.27 or later renders it)`);
  assert.equal(result.status, 0, result.stderr);
  return parseAllDocuments(result.stdout).map(
    (doc) =>
      doc.toJS() as {
        kind: string;
        metadata: { name: string; labels?: Record<string, string> };
        spec?: { template?: { spec?: { containers?: { env?: { name: string; value?: string }[] }[] } } };
      },
  );
}

/** deploy/kubernetes with its image set to `image`, the build written as `npm run deploy:build` does, rendered. */
function renderedWith(image: string) {
  const copy = mkdtempSync(path.join(tmpdir(), 'orders-build-'));
  try {
    cpSync(KUSTOMIZATION_DIR, copy, { recursive: true });
    const file = path.join(copy, 'kustomization.yaml');
    const kustomization = parse(readFileSync(file, 'utf8')) as { images: Record<string, string>[] };
    const at = image.indexOf('@');
    const name = at === -1 ? image : image.slice(0, at);
    const colon = name.lastIndexOf(':') > name.lastIndexOf('/') ? name.lastIndexOf(':') : -1;
    kustomization.images[0] = {
      name: 'exactly-once-orders',
      newName: colon === -1 ? name : name.slice(0, colon),
      ...(colon === -1 ? {} : { newTag: name.slice(colon + 1) }),
      ...(at === -1 ? {} : { digest: image.slice(at + 1) }),
    };
    writeFileSync(file, stringify(kustomization));
    const { build } = writeBuild(copy);
    return { build, objects: kustomize(copy) };
  } finally {
    rmSync(copy, { recursive: true, force: true });
  }
}

describe("the workers' build", () => {
  it('is named by the tag, else the digest, else the repository, as the Worker Controller reads an image', () => {
    for (const [image, label] of IMAGES) assert.equal(imageLabel(image), label, image);
  });

  it('is a label value and a build id the service takes, and its names are DNS labels, for every image', () => {
    for (const [image] of IMAGES) {
      const id = buildId(image, template(image));
      assert.match(id, LABEL_VALUE, image);
      assert.ok(serviceTakes(id), `${image}: the service takes ${id}`);
      assert.ok(id.endsWith(`-${templateHash(template(image))}`), `${image}: ${id} ends with the template's hash`);
      const name = buildName(id);
      assert.ok(name.length <= MAX_BUILD_NAME, `${image}: ${name}`);
      for (const workload of [`orders-worker-${name}`, `orders-migrate-${name}`]) {
        assert.match(workload, DNS_LABEL, image);
        assert.ok(workload.length <= MAX_WORKLOAD_NAME, `${workload}: ${workload.length} characters`);
      }
    }
  });

  it('is the same for the same pods however their template is written, and another for any change to them', () => {
    const image = 'registry.example.com/orders:1.2.3';
    const id = buildId(image, template(image));
    const reordered = { spec: template(image).spec, metadata: template(image).metadata };
    assert.equal(buildId(image, reordered), id);
    assert.notEqual(buildId(image, template(image, '1Gi')), id, 'a resource');
    const pinned = `${image}@${DIGEST}`;
    const pushedAgain = `${image}@sha256:${'f'.repeat(64)}`;
    assert.notEqual(
      buildId(pinned, template(pinned)),
      buildId(pushedAgain, template(pushedAgain)),
      'a tag pushed again',
    );
    assert.match(buildId(pinned, template(pinned)), /^1\.2\.3-[a-z0-9]{4}$/, 'the tag names it, not the digest');
  });

  it('renders deploy/kubernetes with valid names, labels and TEMPORAL_BUILD_ID for a digest, a registry with a port, `+` and capitals', () => {
    for (const image of [
      'registry.local:5000/orders:1.2.3',
      `registry.example.com/orders@${DIGEST}`,
      `registry.local:5000/orders:V1.2.3+Build.5@${DIGEST}`,
    ]) {
      const { build, objects } = renderedWith(image);
      const perBuild = objects.filter((object) => object.metadata.labels?.['app.kubernetes.io/version']);
      assert.deepEqual(perBuild.map((object) => object.kind).sort(), [
        'Deployment',
        'Job',
        'PodDisruptionBudget',
        'ScaledObject',
      ]);
      for (const object of perBuild) {
        const where = `${image}: ${object.kind} ${object.metadata.name}`;
        assert.equal(object.metadata.labels?.['app.kubernetes.io/version'], build.id, where);
        assert.ok(object.metadata.name.endsWith(`-${build.name}`), where);
        assert.match(object.metadata.name, DNS_LABEL, where);
        assert.ok(object.metadata.name.length <= MAX_WORKLOAD_NAME, where);
      }
      assert.match(build.id, LABEL_VALUE, image);
      const worker = perBuild.find((object) => object.kind === 'Deployment');
      const env = worker?.spec?.template?.spec?.containers?.[0]?.env ?? [];
      assert.equal(env.find((variable) => variable.name === 'TEMPORAL_BUILD_ID')?.value, build.id, image);
      assert.ok(serviceTakes(build.id), image);
    }
  });

  it('is written in deploy/kubernetes/kustomization.yaml as its render computes it (`npm run deploy:build`)', () => {
    assert.deepEqual(writtenBuild(), computedBuild());
  });
});
