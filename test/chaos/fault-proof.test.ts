// The short, seeded fault run that CI gates on: every fault kind fires, and still no approval is
// doubled or lost and stock adds up exactly. And the harness can fail: the deliberately broken
// variant (a key regenerated per attempt) must be reported with duplicates. Both are sized for the
// suite's budget; `npm run chaos -- --seed 2026 --size 500` is the long run. A smaller broken run is
// no faster: its time is the stack's start and the drain's deadline, not the approvals.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { runToolForResult } from '../../tools/harness/tool-result.js';

interface ChaosResult {
  checks: { name: string; value: string | number; ok: boolean }[];
  duplicateKeys: string[];
  lostKeys: string[];
}

function runChaos(args: string[]) {
  return runToolForResult<ChaosResult>('tools/chaos/run.ts', args);
}

const check = (result: ChaosResult, name: string) => result.checks.find((entry) => entry.name === name);

describe('proof under faults', () => {
  it('a seeded run with every fault kind ends with no duplicate, no loss and exact stock', async () => {
    const { code, result, output } = await runChaos(['--seed', '7', '--size', '24']);
    assert.equal(code, 0, output.slice(-6_000));
    assert.equal(check(result, 'duplicate orders')?.value, 0);
    assert.equal(check(result, 'approvals neither ordered nor in compensation (lost)')?.value, 0);
    assert.equal(check(result, 'stock: initial available − ordered = final available')?.ok, true);
    assert.equal(check(result, 'events applied by the broker consumer (per key, max)')?.ok, true);
    const faults = result.checks.filter((entry) => entry.name.startsWith('fault: '));
    assert.equal(faults.length, 12);
    for (const fault of faults) assert.ok(Number(fault.value) > 0, `${fault.name} never fired`);
  });

  it('catches the broken variant that regenerates the key per attempt: duplicates reported, exit 1', async () => {
    const { code, result, output } = await runChaos(['--seed', '7', '--size', '24', '--broken', 'key-per-attempt']);
    assert.equal(code, 1, output.slice(-6_000));
    assert.ok(Number(check(result, 'duplicate orders')?.value) > 0, 'the harness reports duplicates');
    assert.ok(result.duplicateKeys.length > 0);
  });
});
