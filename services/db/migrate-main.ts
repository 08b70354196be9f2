// `npm run migrate` / `npm run start:migrate` (the deploy's migrate Job): applies pending migrations
// over DATABASE_MIGRATION_URL (else DATABASE_URL) and says which.
import { loadConfig } from '../config/env.js';
import { requireSetting, runMain } from '../config/process.js';
import { migrate } from './migrate.js';

await runMain('migrate', async (log) => {
  const databaseUrl = requireSetting('DATABASE_URL', loadConfig().migrationUrl);
  const applied = await migrate(databaseUrl);
  log.info({ applied }, applied.length > 0 ? `applied ${applied.length} migration(s)` : 'database is up to date');
});
