// `npm run migrate` / `npm run start:migrate` (the deploy's migrate Job): applies pending migrations
// over DATABASE_MIGRATION_URL (else DATABASE_URL) and says which.
import { ConfigError, loadConfig } from '../config/env.js';
import { requireSetting, runMain } from '../config/process.js';
import { migrate } from './migrate.js';
import { behindTransactionPooler } from './transaction-pooler.js';

await runMain('migrate', async (log) => {
  const databaseUrl = requireSetting('DATABASE_URL', loadConfig().migrationUrl);
  // The migration lock is held for the session, which a transaction pooler hands to other clients.
  if (behindTransactionPooler(databaseUrl)) {
    throw new ConfigError([
      'DATABASE_MIGRATION_URL: the migrations need a direct connection, not one through a transaction pooler (pgbouncer=true)',
    ]);
  }
  const applied = await migrate(databaseUrl);
  log.info({ applied }, applied.length > 0 ? `applied ${applied.length} migration(s)` : 'database is up to date');
});
