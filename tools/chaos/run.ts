// `npm run chaos -- --seed 7 --size 40`: proof under faults. Submits N distinct approvals through
// the real webhook, many redelivered 1–5 times (concurrently, and again after they finished),
// while it cuts COMMIT replies, resets and delays database connections, holds row locks, kills the
// worker, restarts Temporal and PostgreSQL (with `--store mysql`: the orders on MySQL/MariaDB, whose
// server goes away and comes back), and has the downstream answer 429, 5xx or hang; the
// worker also publishes each event to RabbitMQ through a proxy that cuts publishes mid-flight, and
// the reference broker consumer is killed between its commit and its ack. One approval in four comes
// as a Feishu approval over the long connection the API holds; the drain decides compensations from
// their Feishu cards and by update at once, and sees each Feishu order's receipt posted. Then it
// checks, from the database, Temporal and the fake Feishu themselves, that no approval was doubled or
// lost, that stock adds up exactly, that each consumer applied each event once, that no wait was
// decided twice and no approval carries two receipts — and exits non-zero if not.
// This file reads the command line and runs the parts in order: the stack (./stack.ts), the fault
// schedule (./faults.ts), the load (./load.ts), the operator's drain (./drain.ts), the checks
// (./checks.ts) and what is printed and written (./report.ts).
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { sleep } from '../harness/time.js';
import { type ChaosBroker, DEFAULT_AMQP_URL, openChaosBroker } from './broker.js';
import { runChecks, stockOfSkus } from './checks.js';
import { brokerConsumerCaughtUp, drainAsOperator, openWorkflows, receiptsPosted } from './drain.js';
import { downstreamFaults, faultInjector, faultSchedule, firedFaults } from './faults.js';
import { log } from './log.js';
import { approvalDoors, approvalNumbersOf, makeApprovals, submitUnderFaults, webhookSender } from './load.js';
import { seededRandom } from './prng.js';
import { report } from './report.js';
import { type ChaosStack, startChaosStack } from './stack.js';

const usage =
  'usage: npm run chaos -- [--seed N] [--size N] [--store postgres|mysql] [--broken key-per-attempt]\n' +
  '                        [--out results.json] [--keep]\n' +
  `needs RabbitMQ at AMQP_URL (default amqp://guest:guest@127.0.0.1:5672); --store mysql needs the\n` +
  `MySQL/MariaDB at MYSQL_TEST_URL (default mysql://root@127.0.0.1:3306), where it makes a database of its own`;
const { values } = parseArgs({
  options: {
    seed: { type: 'string', default: '1' },
    size: { type: 'string', default: '40' },
    store: { type: 'string', default: 'postgres' },
    broken: { type: 'string' },
    out: { type: 'string' },
    keep: { type: 'boolean', default: false },
    help: { type: 'boolean', default: false },
  },
});
if (values.help) {
  console.log(usage);
  process.exit(0);
}
const seed = Number(values.seed);
const size = Number(values.size);
if (!Number.isInteger(seed) || !Number.isInteger(size) || size < 1 || size > 20_000) {
  console.error(`--seed and --size must be integers (size 1..20000)\n${usage}`);
  process.exit(2);
}
if (values.store !== 'postgres' && values.store !== 'mysql') {
  console.error(`--store takes postgres or mysql\n${usage}`);
  process.exit(2);
}
const store = values.store === 'mysql' ? 'mysql' : 'postgresql';
if (values.broken !== undefined && values.broken !== 'key-per-attempt') {
  console.error(`--broken takes one value: key-per-attempt\n${usage}`);
  process.exit(2);
}

async function main(): Promise<number> {
  // Checked first: without a broker the run stops before it starts anything.
  let broker: ChaosBroker;
  try {
    broker = await openChaosBroker(process.env.AMQP_URL || DEFAULT_AMQP_URL, seed);
  } catch (error) {
    console.error(`chaos: ${(error as Error).message}`);
    return 2;
  }
  const random = seededRandom(seed);
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'orders-chaos-'));
  // As root, PostgreSQL runs as its own user, which must reach the data folder.
  chmodSync(dataDir, 0o755);
  const started = Date.now();
  const broken = values.broken !== undefined;
  let stack: ChaosStack | undefined;

  try {
    const downstream = downstreamFaults(seededRandom(seed + 2));
    stack = await startChaosStack({
      dataDir,
      seed,
      store,
      broker,
      broken: values.broken,
      downstreamReply: downstream.reply,
    });
    const { admin, orders, client } = stack;
    const initialStock = await stockOfSkus(orders);
    stack.dbProxy.forceEachOnce();
    log(
      `stack ready in ${Date.now() - started} ms; ${size} approvals, seed ${seed}${values.broken ? `, BROKEN: ${values.broken}` : ''}`,
    );

    // The schedule, each fault's pause and the load's pace draw from one seeded stream.
    const faultRandom = seededRandom(seed + 3);
    const schedule = faultSchedule(faultRandom, size);
    const injector = faultInjector(stack, broker, faultRandom);
    const sender = webhookSender(stack.apiUrl);
    const doors = approvalDoors(sender, stack.feishu);
    const approvals = makeApprovals(random, seed, size);
    await submitUnderFaults({ approvals, deliver: doors.deliver, schedule, injector, random: faultRandom });
    log(`all ${size} approvals answered; waiting for the fault schedule to finish`);
    await injector.finished();

    // Faults off; the run acts as the operator for anything awaiting a decision.
    stack.dbProxy.setEnabled(false);
    downstream.stop();
    const approvalNumbers = approvalNumbersOf(seed);
    const decided = await drainAsOperator({
      orders,
      client,
      approvalNumbers,
      // The broken variant's duplicates are written while the faults fire, and some of its runs
      // never end (their writes are filed under other keys): a short drain is all it needs.
      deadline: Date.now() + (broken ? 20_000 : 240_000 + size * 200),
      broken,
      feishu: stack.feishu,
    });
    const receipts = await receiptsPosted({ client, orders, feishu: stack.feishu, approvalNumbers, broken });

    // And once more after they finished: every redelivery must be a duplicate.
    const lateAnswers = await Promise.all(
      approvals.filter(() => random() < 0.3).map((approval) => doors.deliver(approval)),
    );
    const lateStarts = lateAnswers.filter((status) => status === 202).length;
    await sleep(500);
    if (!(await brokerConsumerCaughtUp({ admin, orders, broker, approvalNumbers, broken }))) {
      // The checks below say what is missing; this says where the consumer stood.
      log(
        `the broker consumer did not catch up in 2 minutes: ${await broker.queued()} messages queued; it ${broker.consumerState(40)}`,
      );
    }
    const running = await openWorkflows(client);

    const findings = await runChecks({
      size,
      broken,
      started,
      approvals,
      approvalNumbers,
      answers: sender.answers,
      feishuPushes: doors.feishuPushes,
      cardClicks: stack.feishu.clicks,
      receipts,
      admin,
      orders,
      client,
      broker,
      initialStock,
      decided,
      lateStarts,
      running,
      faults: firedFaults(stack, injector, downstream, broker),
    });
    return report(findings, { seed, size, broken: values.broken, out: values.out, decided });
  } finally {
    await stack?.stop();
    await broker.close().catch(() => undefined);
    if (!values.keep) rmSync(dataDir, { recursive: true, force: true });
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
