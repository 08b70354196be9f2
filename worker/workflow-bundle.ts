// The workflow code a worker runs and a replay checks. A release carries it prebuilt: `npm run
// build` writes dist/workflow-bundles/, and a worker run from dist/ loads that file, so what runs is
// the artifact that was built and tested and no start spends seconds bundling. Run from source, the
// worker bundles workflows/ once at start, so an edit is never hidden behind an older bundle.
// Two variants: tracing puts OpenTelemetry's workflow interceptors into the bundle; without
// tracing the bundle holds none of it.
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import { workflowTracingModules } from '../services/telemetry/tracing.js';

/** The workflow bundle's entry, as TypeScript source under tsx or as built JavaScript. */
export function workflowsPath(): string {
  const typescript = fileURLToPath(new URL('../workflows/index.ts', import.meta.url));
  return existsSync(typescript) ? typescript : fileURLToPath(new URL('../workflows/index.js', import.meta.url));
}

/** The directory `npm run build` writes the bundles to, beside the built worker (dist/workflow-bundles). */
export function shippedBundleDir(): string | undefined {
  const runsFromBuild = import.meta.url.endsWith('.js');
  return runsFromBuild ? fileURLToPath(new URL('../workflow-bundles', import.meta.url)) : undefined;
}

export function bundleFileName(traced: boolean): string {
  return traced ? 'workflows-traced.js' : 'workflows.js';
}

/**
 * Bundles workflows/ now (webpack's report is kept out of the logs). The workflow modules are
 * preloaded: evaluated once in the worker's reused V8 context and shared by every run, instead of
 * evaluated again for each new run, which took a fourteenth of the workflow thread's time in a
 * profile of the bench. That is safe because their module scope holds no state of a run —
 * definitions, constants, read-only tables and activity proxies, which find the running workflow
 * when called (docs/architecture.md, decision 45); test/unit/workflows/preloaded-modules.test.ts
 * keeps it so.
 */
export async function bundleWorkflows(traced: boolean): Promise<string> {
  const entry = workflowsPath();
  const { code } = await bundleWorkflowCode({
    workflowsPath: entry,
    preloadModules: [entry],
    logger: new DefaultLogger('WARN'),
    workflowInterceptorModules: traced ? workflowTracingModules() : [],
  });
  return code;
}

/** Writes both variants into `dir`; returns their paths. */
export async function writeWorkflowBundles(dir: string): Promise<string[]> {
  await mkdir(dir, { recursive: true });
  const written: string[] = [];
  for (const traced of [false, true]) {
    const file = path.join(dir, bundleFileName(traced));
    await writeFile(file, await bundleWorkflows(traced));
    written.push(file);
  }
  return written;
}

/** The workflow code as the worker takes it: a prebuilt file, or code bundled in this process. */
export type WorkflowCode = { codePath: string } | { code: string };

/** For a start-up log line: which code this worker runs. */
export function describeWorkflowCode(workflows: WorkflowCode): string {
  return 'codePath' in workflows ? `prebuilt ${workflows.codePath}` : 'bundled at start from workflows/';
}

const bundledAtStart = new Map<boolean, Promise<string>>();

/**
 * The bundle for this process: the prebuilt file in `dir` (WORKFLOW_BUNDLE_DIR), else the one
 * shipped beside the built worker, else workflows/ bundled once per process. A `dir` that was named
 * but lacks the file is an error, never a silent fallback to other code.
 */
export async function workflowCode(options: { traced: boolean; dir?: string | undefined }): Promise<WorkflowCode> {
  const name = bundleFileName(options.traced);
  if (options.dir) {
    const codePath = path.resolve(options.dir, name);
    if (!existsSync(codePath)) {
      throw new Error(`WORKFLOW_BUNDLE_DIR holds no ${name} (${codePath}): run \`npm run build\` or unset it`);
    }
    return { codePath };
  }
  const shipped = shippedBundleDir();
  if (shipped && existsSync(path.join(shipped, name))) return { codePath: path.join(shipped, name) };
  let code = bundledAtStart.get(options.traced);
  if (!code) {
    code = bundleWorkflows(options.traced);
    bundledAtStart.set(options.traced, code);
  }
  return { code: await code };
}
