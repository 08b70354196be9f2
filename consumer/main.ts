// `npm run consumer`: the reference consumer as a process. Reads CONSUMER_PORT (4000),
// CONSUMER_DATABASE_URL (or DATABASE_URL) and DOWNSTREAM_SECRET (the secret events are signed with).
import http from 'node:http';
import pg from 'pg';
import { runMain } from '../config/process.js';
import { ConfigError } from '../config/env.js';
import { createConsumer } from './consumer.js';

await runMain('consumer', async (log) => {
  const databaseUrl = process.env.CONSUMER_DATABASE_URL ?? process.env.DATABASE_URL;
  const secret = process.env.DOWNSTREAM_SECRET;
  const port = Number(process.env.CONSUMER_PORT ?? 4000);
  const problems = [
    ...(databaseUrl ? [] : ['CONSUMER_DATABASE_URL: required (or DATABASE_URL)']),
    ...(secret && secret.length >= 16 ? [] : ['DOWNSTREAM_SECRET: required, at least 16 characters']),
    ...(Number.isInteger(port) && port > 0 && port < 65536 ? [] : ['CONSUMER_PORT: must be a port number']),
  ];
  if (problems.length > 0) throw new ConfigError(problems);
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 5 });
  const consumer = createConsumer({
    pool,
    secret: secret as string,
    log: (message, fields) => log.info(fields, message),
  });
  await consumer.migrate();
  const server = http.createServer(consumer.handler);
  server.listen(port, '127.0.0.1', () =>
    log.info({ port }, 'consumer listening; set DOWNSTREAM_URL to http://127.0.0.1:' + port + '/events'),
  );
  const stop = () => server.close(() => void pool.end().then(() => process.exit(0)));
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
});
