// A worker process whose order write commits and then never returns: it logs that it committed
// (the line test/integration/local-write.test.ts waits for) and hangs, so the test can SIGKILL it
// after the commit and before the workflow task that ran the write completes. Everything else is
// the real worker (worker/run-worker.ts).
import { runMain } from '../../services/config/process.js';
import type { OrderWorkflowInput } from '../../workflows/definitions.js';
import { runWorkerProcess } from '../../worker/run-worker.js';
import { loadConfig } from '../../app/env.js';

await runMain('worker-dies-after-commit', (log) =>
  runWorkerProcess(loadConfig(), log, (real) => ({
    ...real,
    async writeOrder(input: OrderWorkflowInput) {
      const written = await real.writeOrder(input);
      log.info(
        { idempotencyKey: input.idempotencyKey, orderNo: written.orderNo },
        'committed, now hanging until killed',
      );
      return new Promise<never>(() => undefined);
    },
  })),
);
