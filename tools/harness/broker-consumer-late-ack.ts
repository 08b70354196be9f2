// A broker consumer that lets time pass between the commit and the ack, so a test can act in that
// window. BROKER_CONSUMER_AFTER_COMMIT=hang: it logs that it committed (the line
// test/integration/broker-consumer.test.ts waits for) and never acks; `hold`: it logs that it
// committed and holds every ack until the process gets SIGUSR2, then acks as usual (the test cuts
// the connection in between, whatever the machine's speed); a number: it waits that many
// milliseconds before each ack. Everything else is the real consumer
// (examples/consumer/run-broker-consumer.ts).
import { runMain } from '../../services/config/process.js';
import { runBrokerConsumerProcess } from '../../examples/consumer/run-broker-consumer.js';

const afterCommit = process.env.BROKER_CONSUMER_AFTER_COMMIT ?? 'hang';

// Listening from the start: SIGUSR2 without a listener would end the process.
const released = new Promise<void>((resolve) => process.once('SIGUSR2', () => resolve()));

await runMain('broker-consumer-late-ack', (log) =>
  runBrokerConsumerProcess(log, (apply) => async (event) => {
    const outcome = await apply(event);
    if (afterCommit === 'hold') {
      log.info({ idempotencyKey: event.idempotencyKey, outcome }, 'committed, holding the ack until SIGUSR2');
      await released;
      return outcome;
    }
    if (afterCommit !== 'hang') {
      await new Promise((resolve) => setTimeout(resolve, Number(afterCommit)));
      return outcome;
    }
    log.info({ idempotencyKey: event.idempotencyKey, outcome }, 'committed, now hanging until killed');
    return new Promise<never>(() => undefined);
  }),
);
