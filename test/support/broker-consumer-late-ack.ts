// A broker consumer that lets time pass between the commit and the ack, so a test can SIGKILL it
// in that window. BROKER_CONSUMER_AFTER_COMMIT=hang: it logs that it committed (the line
// test/integration/broker-consumer.test.ts waits for) and never acks; a number: it waits that many
// milliseconds before each ack. Everything else is the real consumer
// (examples/consumer/run-broker-consumer.ts).
import { runMain } from '../../services/config/process.js';
import { runBrokerConsumerProcess } from '../../examples/consumer/run-broker-consumer.js';

const afterCommit = process.env.BROKER_CONSUMER_AFTER_COMMIT ?? 'hang';

await runMain('broker-consumer-late-ack', (log) =>
  runBrokerConsumerProcess(log, (apply) => async (event) => {
    const outcome = await apply(event);
    if (afterCommit !== 'hang') {
      await new Promise((resolve) => setTimeout(resolve, Number(afterCommit)));
      return outcome;
    }
    log.info({ idempotencyKey: event.idempotencyKey, outcome }, 'committed, now hanging until killed');
    return new Promise<never>(() => undefined);
  }),
);
