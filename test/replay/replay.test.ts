// Replays the recorded histories of representative runs (test/replay/histories, recorded by
// `npm run replay:record`) against the current workflow code. A change that running workflows could
// not replay — an activity added, removed or reordered without `patched()` — fails here, in CI,
// instead of on the workflows in flight after a deploy.
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { historyFromFile, replayHistories } from '../../worker/replay.js';
import { VERSIONING_BEHAVIOURS } from '../../workflows/versioning-behaviours.js';

const DIR = fileURLToPath(new URL('./histories/', import.meta.url));
/**
 * Fixtures of the current workflow shape sit at the top; those of earlier shapes, which runs still in
 * flight after a deploy may have, in a folder each and are never re-recorded: the write scheduled
 * as an activity task, before it became a local activity (docs/architecture.md, decision 18), and
 * the local write's runs recorded while a patch marker said so (decision 45). Among the latter,
 * `resubmitted-input-without-threshold` is first-delivery's history with the local retry threshold
 * taken out of its input: an operator's resubmit of a run recorded before the threshold existed,
 * started while the patch was called. Its marker, not its input, says how it wrote.
 */
const EARLIER_SHAPES = ['write-as-activity-task', 'write-with-patch-marker'];
const current = fixturesIn('');
const files = [...current, ...EARLIER_SHAPES.flatMap((shape) => fixturesIn(`${shape}/`))];

function fixturesIn(folder: string): string[] {
  return readdirSync(`${DIR}${folder}`)
    .filter((name) => name.endsWith('.json'))
    .sort()
    .map((name) => `${folder}${name}`);
}

describe('replay of recorded histories against the current workflow code', () => {
  it('has fixtures for every representative run and workflow type, of the current shape and the earlier ones', () => {
    for (const shape of ['', ...EARLIER_SHAPES.map((folder) => `${folder}/`)]) {
      assertRepresentative(files.filter((name) => name.startsWith(shape) && !name.slice(shape.length).includes('/')));
    }
  });

  it('replays every auto-upgrading workflow type: its runs move to a new build and replay there', () => {
    const types = new Set(files.map((name) => name.split('/').at(-1)?.split('.')[2]));
    for (const [type, behaviour] of Object.entries(VERSIONING_BEHAVIOURS)) {
      if (behaviour === 'AUTO_UPGRADE') assert.ok(types.has(type), `no fixture replays ${type}, which auto-upgrades`);
    }
  });

  it('has a fixture of the current shape started with the writeOutcome update riding on the start', () => {
    assert.ok(
      current.some((name) => name.startsWith('update-with-start.')),
      'missing fixtures for update-with-start (RECORD_ONLY=Update-with-Start npm run replay:record)',
    );
  });

  it('has a fixture of the current shape in which compensation looked again and found a late order', () => {
    assert.ok(
      current.some((name) => name.startsWith('compensation-landed-late.') && name.includes('compensationWorkflow')),
      "missing fixtures for compensation-landed-late (RECORD_ONLY='a commit that lands' npm run replay:record)",
    );
  });

  function assertRepresentative(fixtures: string[]) {
    const scenarios = new Set(fixtures.map((name) => name.split('/').at(-1)?.split('.')[0]));
    for (const scenario of [
      'first-delivery',
      'lost-response-retry',
      'compensation-resubmit',
      'compensation-abandon',
      'delivery-failed-redeliver',
      'delivery-after-window',
      'safety-nets',
    ]) {
      assert.ok(scenarios.has(scenario), `missing fixtures for ${scenario}`);
    }
    const types = new Set(fixtures.map((name) => name.split('/').at(-1)?.split('.')[2]));
    for (const type of [
      'orderWorkflow',
      'compensationWorkflow',
      'deliveryWorkflow',
      'duplicateScanWorkflow',
      'retentionPurgeWorkflow',
    ]) {
      assert.ok(types.has(type), `no fixture replays ${type}`);
    }
  }

  it('replays every fixture without a determinism error', async () => {
    const histories = await Promise.all(files.map((name) => historyFromFile(`${DIR}${name}`)));
    // The bundle the suite's workers run (the runner prebuilds it), or workflows/ bundled now.
    const outcomes = await replayHistories(histories, { bundleDir: process.env.WORKFLOW_BUNDLE_DIR });
    assert.equal(outcomes.length, files.length);
    assert.deepEqual(
      outcomes.filter((outcome) => !outcome.ok),
      [],
      'a workflow change that running workflows cannot replay needs patched() (docs/proof-under-faults.md, "Changing workflow code safely")',
    );
  });
});
