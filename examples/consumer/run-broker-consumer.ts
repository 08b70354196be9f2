// The RabbitMQ consumer as a process: its settings (examples/consumer/consumer-config.ts), its
// tables, and a connection to the broker that is made again whenever it is lost — unacked messages
// wait in the queue meanwhile. `wrap` lets a test change how events are applied; the real process
// (broker-main.ts) applies them as they are.
import type { Logger } from 'pino';
import { jitteredBackoffMs } from '../../domain/backoff.js';
import { redactUrl } from '../../domain-node/redact-url.js';
import { loadBrokerConsumerConfig } from './consumer-config.js';
import { ConfigError } from '../../services/config/environment.js';
import { type ApplyEvent, createEventLedger } from './apply-once.js';
import { ledgerStatements, openLedgerPool } from './ledger-stores.js';
import {
  type BrokerConsumer,
  brokerTopology,
  startBrokerConsumer,
  unrecoverableBrokerFailure,
} from './broker-consumer.js';
import { brokerEventVerifier } from './event-signature.js';

const RECONNECT_BACKOFF = { initialIntervalMs: 500, backoffCoefficient: 2, maximumIntervalMs: 15_000 };

export async function runBrokerConsumerProcess(
  log: Logger,
  wrap: (apply: ApplyEvent) => ApplyEvent = (apply) => apply,
): Promise<void> {
  const config = loadBrokerConsumerConfig();
  const database = openLedgerPool(config.databaseUrl, Math.min(config.prefetch, 10));
  // An idle client whose server went away reports it here; the next query fails and says why.
  if (database.store === 'postgresql') {
    database.pool.on('error', (error) => log.warn({ err: error }, 'idle database connection lost'));
  }
  const pool = ledgerStatements(database);
  const ledger = createEventLedger({ database, schema: config.schema });
  await ledger.migrate();
  const topology = brokerTopology(config.exchange, config.name);
  const apply = wrap(ledger.apply);

  let consumer: BrokerConsumer | undefined;
  let stopping = false;
  const stop = () => {
    stopping = true;
    void (consumer?.stop() ?? Promise.resolve()).then(() => pool.end()).then(() => process.exit(0));
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);

  for (let failedAttempts = 0; !stopping; ) {
    try {
      consumer = await startBrokerConsumer({
        url: config.amqpUrl,
        topology,
        prefetch: config.prefetch,
        verify: brokerEventVerifier(config.secrets),
        apply,
        log,
      });
      failedAttempts = 0;
      log.info({ queue: topology.queue, deadLetterQueue: topology.deadLetterQueue }, 'consuming order.created');
      const reason = await consumer.closed;
      if (stopping) return;
      log.warn({ err: reason, counts: consumer.counts }, 'broker connection lost; connecting again');
    } catch (error) {
      const unrecoverable = unrecoverableBrokerFailure(error);
      if (unrecoverable) {
        // Trying again would fail the same way for ever: stop, and say why.
        await pool.end();
        throw new ConfigError([
          `AMQP_URL: ${redactUrl(config.amqpUrl)} will not serve queue ${topology.queue}; ${unrecoverable}`,
        ]);
      }
      log.warn({ err: error, url: redactUrl(config.amqpUrl) }, 'broker not reachable; trying again');
    }
    failedAttempts += 1;
    await new Promise((resolve) => setTimeout(resolve, jitteredBackoffMs(failedAttempts, RECONNECT_BACKOFF)));
  }
}
