// The API with the start path's guard broken on purpose: every delivery starts its key's workflow —
// also a key already answered, started or abandoned — and a start replaces a closed run. The
// explorer runs it for `--broken-rule redelivery-restarts-after-abandon`; everything else is the
// product's API (edges/http/run-api.ts).
import { loadConfig } from '../../../app/env.js';
import { runApiProcess } from '../../../edges/http/run-api.js';
import { runMain } from '../../../services/config/process.js';

await runMain('api', (log) => {
  log.warn('BROKEN RULE: a redelivery starts its key again, even after an abandon');
  return runApiProcess(loadConfig(), log, { startGuard: { mayStart: () => true, reusePolicy: 'ALLOW_DUPLICATE' } });
});
