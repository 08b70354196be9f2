// The worker with the receipts' look broken on purpose: it reads every Feishu approval as carrying
// no comment, so a receipt attempt whose comment landed but whose answer was lost posts a second
// comment when it is retried. The explorer runs it for `--broken-rule receipt-posted-without-looking`;
// everything else is the product's worker (worker/run-worker.ts).
import { loadConfig } from '../../../app/env.js';
import { runMain } from '../../../services/config/process.js';
import { runWorkerProcess } from '../../../worker/run-worker.js';

const COMMENTS = /^\/open-apis\/approval\/v4\/instances\/[^/]+\/comments$/;
const realFetch = globalThis.fetch;

globalThis.fetch = (input, init) => {
  const url = new URL(input instanceof Request ? input.url : String(input));
  const method = init?.method ?? (input instanceof Request ? input.method : 'GET');
  if (method === 'GET' && COMMENTS.test(url.pathname)) {
    return Promise.resolve(Response.json({ code: 0, msg: 'success', data: { comments: [], has_more: false } }));
  }
  return realFetch(input, init);
};

await runMain('worker', (log) => {
  log.warn('BROKEN RULE: a receipt is posted without looking for one posted before');
  return runWorkerProcess(loadConfig(), log);
});
