// The broker consumer the fault harness runs: the real reference consumer
// (examples/consumer/run-broker-consumer.ts), unchanged, plus one way in for the harness. On
// SIGUSR2 the next event that commits is never acked: the consumer logs ACK_HELD_LINE and waits on
// that message, while every other message goes on as usual. The harness then SIGKILLs it, so the
// broker must deliver a message whose effect already committed — the crash between commit and ack.
import { runMain } from '../../services/config/process.js';
import { runBrokerConsumerProcess } from '../../examples/consumer/run-broker-consumer.js';
import { ACK_HELD_LINE } from './broker.js';

await runMain('broker-consumer', (log) => {
  let holdNext = false;
  process.on('SIGUSR2', () => {
    holdNext = true;
  });
  return runBrokerConsumerProcess(log, (apply) => async (event) => {
    const outcome = await apply(event);
    if (!holdNext || outcome !== 'applied') return outcome;
    holdNext = false;
    log.info({ idempotencyKey: event.idempotencyKey }, ACK_HELD_LINE);
    return new Promise<never>(() => undefined);
  });
});
