import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { keyColumnProblem } from '../../../../services/db/key-columns.js';
import type { TextColumn } from '../../../../services/db/stores/statements.js';

const column = (charset: string | null, collation: string | null): TextColumn => ({
  table: 'order_main',
  column: 'idempotent_key',
  charset,
  collation,
});

describe('the key-column check', () => {
  it('accepts the binary collations the migrations create, on either store', () => {
    assert.equal(keyColumnProblem('mysql', column('ascii', 'ascii_bin')), undefined);
    assert.equal(keyColumnProblem('mysql', column('utf8mb4', 'utf8mb4_bin')), undefined);
    assert.equal(keyColumnProblem('mysql', column('binary', 'binary')), undefined);
    assert.equal(keyColumnProblem('postgresql', column(null, 'C')), undefined);
  });

  it('refuses every case- or accent-insensitive collation, naming table, column, charset and collation', () => {
    const insensitive = fc.constantFrom(
      'utf8mb4_general_ci',
      'utf8mb4_0900_ai_ci',
      'utf8mb4_unicode_ci',
      'utf8mb4_unicode_520_ci',
      'utf8mb4_uca1400_ai_ci',
      'utf8mb4_0900_as_ci',
      'ascii_general_ci',
    );
    fc.assert(
      fc.property(insensitive, (collation) => {
        const charset = collation.slice(0, collation.indexOf('_'));
        const problem = keyColumnProblem('mysql', column(charset, collation));
        assert.equal(
          problem,
          `order_main.idempotent_key (charset ${charset}, collation ${collation}): a key column must compare bytes ` +
            `(ascii_bin or utf8mb4_bin); ${collation} would make a1 and A1 one key`,
        );
      }),
    );
  });

  it("refuses latin1 even when its collation is binary: the field report's pitfall", () => {
    for (const collation of ['latin1_swedish_ci', 'latin1_bin', 'latin1_general_cs']) {
      assert.match(keyColumnProblem('mysql', column('latin1', collation)) ?? '', /must not be latin1/);
    }
  });

  it("refuses a binary collation of any character set but ascii and utf8mb4: their bytes are not the callers' UTF-8", () => {
    for (const charset of ['utf8mb3', 'utf8', 'gbk', 'gb18030', 'big5', 'utf16', 'ucs2', 'cp1252']) {
      assert.equal(
        keyColumnProblem('mysql', column(charset, `${charset}_bin`)),
        `order_main.idempotent_key (charset ${charset}, collation ${charset}_bin): a key column must be ascii or ` +
          'utf8mb4 (callers send UTF-8); use ascii_bin or utf8mb4_bin',
      );
    }
    assert.equal(keyColumnProblem('mysql', column('utf8mb4', 'utf8mb4_0900_bin')), undefined);
  });

  it('refuses a PostgreSQL key column without collation "C"', () => {
    assert.match(
      keyColumnProblem('postgresql', column(null, null)) ?? '',
      /collation default\): a key column must use collation "C"/,
    );
    assert.match(keyColumnProblem('postgresql', column(null, 'en_US.utf8')) ?? '', /must use collation "C"/);
  });
});
