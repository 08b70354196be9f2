// Which workflow code a worker takes: a named bundle directory is used as it is, and one without
// the bundle stops the worker instead of quietly running other code.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { bundleFileName, workflowCode } from '../../../worker/workflow-bundle.js';

describe('the workflow code a worker runs', () => {
  const dirs: string[] = [];
  const bundleDir = (): string => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'bundles-'));
    dirs.push(dir);
    return dir;
  };
  after(() => dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

  it('loads the variant it needs from WORKFLOW_BUNDLE_DIR', async () => {
    const dir = bundleDir();
    writeFileSync(path.join(dir, bundleFileName(false)), '/* plain */');
    writeFileSync(path.join(dir, bundleFileName(true)), '/* traced */');
    assert.deepEqual(await workflowCode({ traced: false, dir }), { codePath: path.join(dir, 'workflows.js') });
    assert.deepEqual(await workflowCode({ traced: true, dir }), { codePath: path.join(dir, 'workflows-traced.js') });
  });

  it('refuses a named directory that lacks the bundle, naming the file and the way out', async () => {
    const dir = bundleDir();
    writeFileSync(path.join(dir, bundleFileName(false)), '/* plain only */');
    await assert.rejects(workflowCode({ traced: true, dir }), (error: Error) => {
      assert.match(error.message, /WORKFLOW_BUNDLE_DIR holds no workflows-traced\.js/);
      assert.match(error.message, /npm run build/);
      return true;
    });
  });
});
