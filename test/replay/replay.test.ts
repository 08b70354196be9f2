// Replays the recorded histories of representative runs (test/replay/histories, recorded by
// `npm run replay:record`) against the current workflow code. A change that running workflows could
// not replay — an activity added, removed or reordered without `patched()` — fails here, in CI,
// instead of on the workflows in flight after a deploy.
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { historyFromFile, replayHistories } from '../../worker/replay.js';

const DIR = fileURLToPath(new URL('./histories/', import.meta.url));
const files = readdirSync(DIR)
  .filter((name) => name.endsWith('.json'))
  .sort();

describe('replay of recorded histories against the current workflow code', () => {
  it('has fixtures for every representative run and workflow type', () => {
    const scenarios = new Set(files.map((name) => name.split('.')[0]));
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
    const types = new Set(files.map((name) => name.split('.')[2]));
    for (const type of [
      'orderWorkflow',
      'compensationWorkflow',
      'deliveryWorkflow',
      'duplicateScanWorkflow',
      'retentionPurgeWorkflow',
    ]) {
      assert.ok(types.has(type), `no fixture replays ${type}`);
    }
  });

  it('replays every fixture without a determinism error', async () => {
    const histories = await Promise.all(files.map((name) => historyFromFile(`${DIR}${name}`)));
    const outcomes = await replayHistories(histories);
    assert.equal(outcomes.length, files.length);
    assert.deepEqual(
      outcomes.filter((outcome) => !outcome.ok),
      [],
      'a workflow change that running workflows cannot replay needs patched() (docs/proof-under-faults.md, "Changing workflow code safely")',
    );
  });
});
