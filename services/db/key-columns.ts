// The start-up check that every key column compares bytes as bytes. A key compared under a case-
// or accent-insensitive collation makes `APPROVAL:a1:MAIN` and `APPROVAL:A1:MAIN` one key — one
// approval answered with another's order — and a latin1 column holds other bytes than the UTF-8
// the callers send, so two keys that look the same are different values and the unique index lets
// the duplicate in. The migrations make every key column binary; a column altered by hand, or a
// table created by a DBA's own script, stops the process here (docs/decisions/43-two-stores-one-write-path.md).
import { ConfigError } from '../config/environment.js';
import type { Tx } from './prisma-client.js';
import type { TextColumn } from './stores/statements.js';
import { type Store, statementsFor, storeOf } from './stores/store.js';

/** The columns that hold a key or its approval number, in every table that has them. */
export const KEY_COLUMN_NAMES = ['idempotent_key', 'approval_no'] as const;

/**
 * Why `column` cannot hold keys on `store`, or undefined when it can: PostgreSQL's collation "C"
 * (or "POSIX"); on MySQL a binary collation (`*_bin`, `binary`) of ascii or utf8mb4.
 */
export function keyColumnProblem(store: Store, column: TextColumn): string | undefined {
  const named = `${column.table}.${column.column} (charset ${column.charset ?? 'default'}, collation ${
    column.collation ?? 'default'
  })`;
  if (store === 'postgresql') {
    return column.collation === 'C' || column.collation === 'POSIX'
      ? undefined
      : `${named}: a key column must use collation "C", which compares bytes`;
  }
  const charset = column.charset?.toLowerCase() ?? '';
  const collation = column.collation?.toLowerCase() ?? '';
  if (charset === 'latin1') {
    return `${named}: a key column must not be latin1 (callers send UTF-8); use ascii_bin or utf8mb4_bin`;
  }
  // The callers' keys are UTF-8: ascii holds the keys the grammar allows, utf8mb4 any UTF-8. Any
  // other set (utf8mb3, gbk, utf16…) stores other bytes or refuses some keys outright.
  if (!['ascii', 'utf8mb4', 'binary'].includes(charset)) {
    return `${named}: a key column must be ascii or utf8mb4 (callers send UTF-8); use ascii_bin or utf8mb4_bin`;
  }
  if (collation !== 'binary' && !collation.endsWith('_bin')) {
    return `${named}: a key column must compare bytes (ascii_bin or utf8mb4_bin); ${column.collation} would make a1 and A1 one key`;
  }
  return undefined;
}

/** Refuses to go on (ConfigError naming each column) when a key column does not compare bytes. */
export async function checkKeyColumns(db: Tx): Promise<void> {
  const store = storeOf(db);
  const columns = await statementsFor(db).textColumns(db, KEY_COLUMN_NAMES);
  const problems = columns.map((column) => keyColumnProblem(store, column)).filter((problem) => problem !== undefined);
  if (problems.length > 0) throw new ConfigError(problems);
}
