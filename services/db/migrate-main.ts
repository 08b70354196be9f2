// `npm run migrate`: applies pending migrations to DATABASE_URL and says which.
import { loadConfig } from '../config/env.js';
import { requireSetting, runMain } from '../config/process.js';
import { migrate } from './migrate.js';

await runMain('migrate', async (log) => {
  const databaseUrl = requireSetting('DATABASE_URL', loadConfig().databaseUrl);
  const applied = await migrate(databaseUrl);
  log.info({ applied }, applied.length > 0 ? `applied ${applied.length} migration(s)` : 'database is up to date');
});
