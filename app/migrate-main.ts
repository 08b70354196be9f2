// `npm run migrate` / `npm run start:migrate` (the deploy's migrate Job): applies pending migrations
// over DATABASE_MIGRATION_URL (else DATABASE_URL) and says which.
import { ConfigError } from '../services/config/environment.js';
import { loadConfig } from './env.js';
import { requireSetting, runMain } from '../services/config/process.js';
import { migrate } from '../services/db/migrate.js';
import { behindTransactionPooler } from '../services/db/transaction-pooler.js';

await runMain('migrate', async (log) => {
  const config = loadConfig();
  const databaseUrl = requireSetting('DATABASE_URL', config.migrationUrl);
  // The migration lock is held for the session, which a transaction pooler hands to other clients.
  if (behindTransactionPooler(databaseUrl)) {
    throw new ConfigError([
      'DATABASE_MIGRATION_URL: the migrations need a direct connection, not one through a transaction pooler (pgbouncer=true)',
    ]);
  }
  const applied = await migrate(databaseUrl, { lockTimeoutMs: config.migrationLockTimeoutMs });
  log.info({ applied }, applied.length > 0 ? `applied ${applied.length} migration(s)` : 'database is up to date');
});
