// The worker the fault harness runs: the real worker, unchanged — unless CHAOS_BROKEN=key-per-attempt
// asks for the deliberately broken variant that regenerates the idempotency key on every attempt
// (the seed's classic pitfall), which the harness must then catch as duplicates.
import { Context } from '@temporalio/activity';
import { runMain } from '../../services/config/process.js';
import type { OrderWorkflowInput } from '../../workflows/definitions.js';
import { runWorkerProcess } from '../../worker/run-worker.js';
import { loadConfig } from '../../app/env.js';

await runMain('worker', (log) => {
  if (process.env.CHAOS_BROKEN !== 'key-per-attempt') return runWorkerProcess(loadConfig(), log);
  log.warn('BROKEN VARIANT: the idempotency key is regenerated on every attempt');
  return runWorkerProcess(loadConfig(), log, (real) => ({
    ...real,
    writeOrder: (input: OrderWorkflowInput) =>
      real.writeOrder({
        ...input,
        idempotencyKey: `${input.idempotencyKey}#attempt-${Context.current().info.attempt}`,
      }),
  }));
});
