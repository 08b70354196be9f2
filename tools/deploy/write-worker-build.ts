// `npm run deploy:build`: the workers' build of deploy/kubernetes, written where the kustomization
// reads it. Renders the kustomization with the build left as its placeholder (`build`), takes the
// workers' pod template and image from that render, and writes WORKER_BUILD_ID (`<tag>-<hash>`,
// the label and TEMPORAL_BUILD_ID) and WORKER_BUILD_NAME (its DNS-label form, in the names) into
// the settings of kustomization.yaml, splicing the two values in place so its comments stay.
// Run it after changing the image's tag or digest, or anything the workers' pods run.
//
//   tsx tools/deploy/write-worker-build.ts [--check] [--dir DIR]
//
// --check writes nothing and exits 1 when the kustomization holds another build than the render
// computes; --dir reads another kustomization laid out as deploy/kubernetes. Exit 2: a usage error.
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { isMap, isScalar, isSeq, parseAllDocuments, parseDocument } from 'yaml';
import { buildId, buildName } from './worker-build.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const KUSTOMIZATION_DIR = path.join(ROOT, 'deploy/kubernetes');
/** The kustomization's settings, applied to nothing (local-config), that the replacements read. */
export const SETTINGS = 'orders-deploy-settings';
/** What the manifests say where the build goes, before the kustomization fills it in. */
export const PLACEHOLDER = 'build';
/** The workers' entry point: the container that runs it is the one whose image names the build. */
const WORKER_ENTRY = 'dist/app/worker-main.js';

export interface WorkerBuild {
  id: string;
  name: string;
}

interface Container {
  name: string;
  image?: string;
  command?: string[];
}
interface Rendered {
  kind?: string;
  spec?: { template?: { spec?: { containers?: Container[] } } };
}

/** `kubectl kustomize dir`, each object parsed. */
export function kustomize(dir: string): Rendered[] {
  const result = spawnSync('kubectl', ['kustomize', dir], { encoding: 'utf8' });
  if (result.error) throw new Error(`kubectl: ${result.error.message} (kubectl 1.27 or later renders it)`);
  if (result.status !== 0) throw new Error(`kubectl kustomize ${dir}: ${result.stderr}`);
  return parseAllDocuments(result.stdout).map((doc) => doc.toJS() as Rendered);
}

/** The settings' literals in a kustomization's text: each literal's scalar node, by its name. */
function settingLiterals(text: string) {
  const doc = parseDocument(text);
  const generators = doc.get('configMapGenerator');
  const settings = isSeq(generators)
    ? generators.items.find((item) => isMap(item) && item.get('name') === SETTINGS)
    : undefined;
  const literals = isMap(settings) ? settings.get('literals') : undefined;
  if (!isSeq(literals)) throw new Error(`no configMapGenerator ${SETTINGS} with literals`);
  const nodes = new Map<string, { value: string; range: [number, number] }>();
  for (const item of literals.items) {
    if (!isScalar(item) || typeof item.value !== 'string' || !item.range) continue;
    const [name, ...value] = item.value.split('=');
    nodes.set(name!, { value: value.join('='), range: [item.range[0], item.range[1]] });
  }
  return nodes;
}

/** The build the kustomization in `dir` holds now. */
export function writtenBuild(dir = KUSTOMIZATION_DIR): WorkerBuild {
  const literals = settingLiterals(readFileSync(path.join(dir, 'kustomization.yaml'), 'utf8'));
  return { id: literals.get('WORKER_BUILD_ID')?.value ?? '', name: literals.get('WORKER_BUILD_NAME')?.value ?? '' };
}

/** `text` with each named literal's value replaced, nothing else touched. */
function withBuild(text: string, build: WorkerBuild): string {
  const literals = settingLiterals(text);
  const values: Record<string, string> = { WORKER_BUILD_ID: build.id, WORKER_BUILD_NAME: build.name };
  const edits = Object.entries(values).map(([name, value]) => {
    const node = literals.get(name);
    if (!node) throw new Error(`${SETTINGS} has no ${name} literal`);
    return { range: node.range, text: `${name}=${value}` };
  });
  return edits
    .sort((a, b) => b.range[0] - a.range[0])
    .reduce((result, edit) => result.slice(0, edit.range[0]) + edit.text + result.slice(edit.range[1]), text);
}

/** The workers' pod template and image in a render: the plain Deployment's, or the WorkerDeployment's. */
export function workerTemplate(objects: Rendered[]): { image: string; template: unknown } {
  for (const object of objects) {
    if (object.kind !== 'Deployment' && object.kind !== 'WorkerDeployment') continue;
    const container = object.spec?.template?.spec?.containers?.find((candidate) =>
      candidate.command?.includes(WORKER_ENTRY),
    );
    if (container?.image) return { image: container.image, template: object.spec!.template };
  }
  throw new Error(`no Deployment or WorkerDeployment runs ${WORKER_ENTRY}`);
}

/** The build the kustomization in `dir` renders: computed from a copy whose build is the placeholder. */
export function computedBuild(dir = KUSTOMIZATION_DIR): WorkerBuild {
  const copy = mkdtempSync(path.join(tmpdir(), 'orders-build-'));
  try {
    cpSync(dir, copy, { recursive: true });
    const file = path.join(copy, 'kustomization.yaml');
    writeFileSync(file, withBuild(readFileSync(file, 'utf8'), { id: PLACEHOLDER, name: PLACEHOLDER }));
    const { image, template } = workerTemplate(kustomize(copy));
    const id = buildId(image, template);
    return { id, name: buildName(id) };
  } finally {
    rmSync(copy, { recursive: true, force: true });
  }
}

/** Writes the build the render computes into the kustomization in `dir`; answers it and the one it replaced. */
export function writeBuild(dir = KUSTOMIZATION_DIR): { build: WorkerBuild; was: WorkerBuild } {
  const build = computedBuild(dir);
  const was = writtenBuild(dir);
  const file = path.join(dir, 'kustomization.yaml');
  if (was.id !== build.id || was.name !== build.name) writeFileSync(file, withBuild(readFileSync(file, 'utf8'), build));
  return { build, was };
}

function main() {
  let values;
  try {
    ({ values } = parseArgs({
      options: { check: { type: 'boolean', default: false }, dir: { type: 'string' } },
    }));
  } catch (error) {
    console.error(`write-worker-build: ${error instanceof Error ? error.message : String(error)}`);
    console.error('usage: write-worker-build.ts [--check] [--dir DIR]');
    process.exit(2);
  }
  const dir = path.resolve(values.dir ?? KUSTOMIZATION_DIR);
  if (values.check) {
    const [build, written] = [computedBuild(dir), writtenBuild(dir)];
    if (written.id === build.id && written.name === build.name) {
      console.log(`the workers' build is ${build.id} (names: ${build.name})`);
      return;
    }
    console.error(`${dir}/kustomization.yaml holds the build ${written.id}; the render is ${build.id}`);
    process.exit(1);
  }
  const { build, was } = writeBuild(dir);
  console.log(
    was.id === build.id
      ? `the workers' build is ${build.id} (names: ${build.name})`
      : `the workers' build is now ${build.id} (was ${was.id || 'unset'}; names: ${build.name})`,
  );
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
