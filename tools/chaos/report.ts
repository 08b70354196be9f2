// What a chaos run prints and writes: the table of checks, the JSON result the fault-proof test
// reads, the keys behind any failure, and the closing RESULT line.
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Check, Findings } from './checks.js';
import type { OperatorDecisions } from './drain.js';

/** Prints everything and returns the exit code: 0 when every check holds. */
export function report(
  findings: Findings,
  run: { seed: number; size: number; broken: string | undefined; out: string | undefined; decided: OperatorDecisions },
): number {
  const { checks, duplicates, lost } = findings;
  printTable(checks);
  const failed = checks.filter(([, , , ok]) => !ok).map(([name]) => name);
  if (run.out) {
    mkdirSync(path.dirname(path.resolve(run.out)), { recursive: true });
    writeFileSync(
      run.out,
      JSON.stringify(
        {
          seed: run.seed,
          size: run.size,
          broken: run.broken ?? null,
          checks: checks.map(([name, value, expected, ok]) => ({ name, value, expected, ok })),
          duplicateKeys: duplicates.map((row) => `${row.approvalNo}:${row.operation}`),
          lostKeys: lost.map((approval) => approval.key),
        },
        null,
        2,
      ) + '\n',
    );
  }
  if (duplicates.length > 0)
    console.log(
      `DUPLICATES: ${duplicates.map((row) => `${row.approvalNo}:${row.operation} ×${row.orders}`).join(', ')}`,
    );
  if (lost.length > 0) console.log(`LOST: ${lost.map((approval) => approval.key).join(', ')}`);
  if (findings.openWorkflowIds.length > 0) {
    console.log(`open workflows: ${findings.openWorkflowIds.join(', ')}`);
    for (const line of findings.openWorkflowsAt) console.log(`  ${line}`);
  }
  if (findings.unfinished.length > 0) {
    console.log('not DELIVERED at the end:');
    for (const row of findings.unfinished)
      console.log(`  ${row.key} ${row.status}: ${row.lastError ?? 'no error recorded'}`);
  }
  for (const [cause, count] of run.decided.redeliveredAfter)
    console.log(`redelivered by the operator ×${count} after: ${cause}`);
  if (findings.silentFaults.length > 0)
    console.log(`faults that never fired (this run proves less): ${findings.silentFaults.join(', ')}`);
  console.log(
    failed.length === 0 ? 'RESULT: PASS — no duplicate, no loss, stock exact' : `RESULT: FAIL — ${failed.join('; ')}`,
  );
  return failed.length === 0 ? 0 : 1;
}

function printTable(rows: Check[]): void {
  const width = Math.max(...rows.map(([name]) => name.length));
  const valueWidth = Math.max(...rows.map(([, value]) => String(value).length));
  console.log('');
  console.log(`${'check'.padEnd(width)}  ${'value'.padEnd(valueWidth)}  expected   ok`);
  console.log(`${'-'.repeat(width)}  ${'-'.repeat(valueWidth)}  ---------  --`);
  for (const [name, value, expected, ok] of rows) {
    console.log(
      `${name.padEnd(width)}  ${String(value).padEnd(valueWidth)}  ${expected.padEnd(9)}  ${ok ? 'ok' : 'FAIL'}`,
    );
  }
  console.log('');
}
