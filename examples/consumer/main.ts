// `npm run consumer`: the reference consumer as a process (settings: examples/consumer/consumer-config.ts).
import http from 'node:http';
import { runMain } from '../../services/config/process.js';
import { loadConsumerConfig } from './consumer-config.js';
import { createConsumer } from './consumer.js';
import { ledgerStatements, openLedgerPool } from './ledger-stores.js';
import { httpEventVerifier } from './event-signature.js';

await runMain('consumer', async (log) => {
  const { databaseUrl, secrets, port, schema } = loadConsumerConfig();
  const database = openLedgerPool(databaseUrl, 5);
  const consumer = createConsumer({
    database,
    verify: httpEventVerifier(secrets),
    schema,
    log: (message, fields) => log.info(fields, message),
  });
  await consumer.migrate();
  const server = http.createServer(consumer.handler);
  server.listen(port, '127.0.0.1', () =>
    log.info({ port }, 'consumer listening; set DOWNSTREAM_URL to http://127.0.0.1:' + port + '/events'),
  );
  const stop = () =>
    server.close(
      () =>
        void ledgerStatements(database)
          .end()
          .then(() => process.exit(0)),
    );
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
});
