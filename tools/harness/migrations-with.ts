// A copy of a store's migrations with one more at their end, for a test that needs a migration the
// database has not seen: the folder, the new migration's name, and how to remove the folder.
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MIGRATION_DIRS } from '../../services/db/migrate.js';
import type { Store } from '../../services/db/stores/store.js';

/** `label`'s migration sorts after every migration of the project: `29991231000000_<label>`. */
export function migrationsWith(
  store: Store,
  label: string,
  sql: string,
): { dir: string; name: string; remove: () => void } {
  const name = `29991231000000_${label}`;
  const dir = mkdtempSync(path.join(os.tmpdir(), `orders-${store}-migrations-`));
  cpSync(MIGRATION_DIRS[store], dir, { recursive: true });
  mkdirSync(path.join(dir, name));
  writeFileSync(path.join(dir, name, 'migration.sql'), `${sql}\n`);
  return { dir, name, remove: () => rmSync(dir, { recursive: true, force: true }) };
}
