// The consumer's own database, PostgreSQL or MySQL/MariaDB as its URL says, and the statements the
// ledger runs there: one place per store. On both, the key column compares bytes (collation "C";
// ascii_bin), so `APPROVAL:a1:MAIN` and `APPROVAL:A1:MAIN` are two events, and a table someone made
// with another collation stops the consumer at start, as the service's own key columns do.
import mariadb from 'mariadb';
import pg from 'pg';
import { ConfigError } from '../../services/config/environment.js';
import { keyColumnProblem } from '../../services/db/key-columns.js';
import { listenForLostConnections } from '../../services/db/pg-connection-errors.js';
import { mysqlConnection } from '../../services/db/stores/mysql-connection.js';
import { storeOfUrl } from '../../services/db/stores/store-of-url.js';
import type { TextColumn } from '../../services/db/stores/statements.js';

/** A pool on the consumer's database, with the store it speaks. */
export type LedgerPool = { store: 'postgresql'; pool: pg.Pool } | { store: 'mysql'; pool: mariadb.Pool };

/** What the ledger does to one event, given a transaction on either store. */
export interface ClaimedEffect {
  idempotencyKey: string;
  eventId: string;
  orderNo: string;
  customerId: string;
  lines: unknown;
  totalAmount: string;
}

export interface LedgerStatements {
  /** Creates the schema's tables when missing, then refuses a key column that does not compare bytes. */
  migrate(schema: string): Promise<void>;
  /** Claims the key and records the effect in one transaction; false when the key was claimed before. */
  claimAndApply(schema: string, effect: ClaimedEffect): Promise<boolean>;
  end(): Promise<void>;
}

// Every wait is bounded: a connection or a statement that hangs would hold a prefetched message,
// and with it a share of the queue, for as long as it hangs. A statement past its limit fails, its
// transaction rolls back, and the message goes back to the queue after a pause.
const CONNECT_TIMEOUT_MS = 10_000;
const STATEMENT_TIMEOUT_MS = 30_000;

/** A pool on `url` (postgresql:// or mysql:// / mariadb://) of at most `max` connections. */
export function openLedgerPool(url: string, max: number): LedgerPool {
  const store = storeOfUrl(url);
  if (store === 'mysql') {
    const pool = mariadb.createPool({
      ...mysqlConnection(url),
      connectionLimit: max,
      foundRows: false,
      acquireTimeout: CONNECT_TIMEOUT_MS,
      connectTimeout: CONNECT_TIMEOUT_MS,
      // Row locks wait at most the statement limit (whole seconds, InnoDB's unit).
      initSql: `SET innodb_lock_wait_timeout = ${STATEMENT_TIMEOUT_MS / 1000}`,
    });
    return { store, pool };
  }
  if (store === 'postgresql') {
    const pool = new pg.Pool({
      connectionString: url,
      max,
      connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
      statement_timeout: STATEMENT_TIMEOUT_MS,
      lock_timeout: STATEMENT_TIMEOUT_MS,
      idle_in_transaction_session_timeout: 2 * STATEMENT_TIMEOUT_MS,
      keepAlive: true,
    });
    listenForLostConnections(pool);
    return { store, pool };
  }
  throw new ConfigError(['CONSUMER_DATABASE_URL: must be a postgresql:// or mysql:// (mariadb://) connection URL']);
}

export function ledgerStatements(database: LedgerPool): LedgerStatements {
  return database.store === 'mysql' ? mysqlLedger(database.pool) : postgresqlLedger(database.pool);
}

/** The key column's problem, as a ConfigError; nothing when it compares bytes. */
function refuseKeyColumn(store: 'postgresql' | 'mysql', column: TextColumn | undefined): void {
  const problem = column && keyColumnProblem(store, column);
  if (problem) throw new ConfigError([problem]);
}

function postgresqlLedger(pool: pg.Pool): LedgerStatements {
  return {
    async migrate(schema) {
      await pool.query(`
        CREATE SCHEMA IF NOT EXISTS ${schema};
        CREATE TABLE IF NOT EXISTS ${schema}.processed_event (
          idempotency_key VARCHAR(128) COLLATE "C" NOT NULL,
          event_id        VARCHAR(64) NOT NULL,
          processed_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
          CONSTRAINT processed_event_pkey PRIMARY KEY (idempotency_key)
        );
        CREATE TABLE IF NOT EXISTS ${schema}.shipment_request (
          id              BIGSERIAL PRIMARY KEY,
          idempotency_key VARCHAR(128) COLLATE "C" NOT NULL,
          order_no        VARCHAR(40) NOT NULL,
          customer_id     VARCHAR(64) NOT NULL,
          lines           JSONB NOT NULL,
          total_amount    NUMERIC(18,4) NOT NULL,
          created_at      TIMESTAMPTZ NOT NULL DEFAULT now()
        );`);
      const { rows } = await pool.query<TextColumn>(
        `SELECT table_name AS "table", column_name AS "column", NULL AS charset, collation_name AS collation
           FROM information_schema.columns
          WHERE table_schema = $1 AND table_name = 'processed_event' AND column_name = 'idempotency_key'`,
        [schema],
      );
      refuseKeyColumn('postgresql', rows[0]);
    },

    async claimAndApply(schema, effect) {
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        // The claim comes first and decides: a concurrent twin waits on the key's row lock here and
        // finds it taken once the first commits.
        const claimed = await client.query(
          `INSERT INTO ${schema}.processed_event (idempotency_key, event_id) VALUES ($1, $2)
           ON CONFLICT (idempotency_key) DO NOTHING`,
          [effect.idempotencyKey, effect.eventId],
        );
        if (claimed.rowCount === 0) {
          await client.query('ROLLBACK');
          return false;
        }
        await client.query(
          `INSERT INTO ${schema}.shipment_request (idempotency_key, order_no, customer_id, lines, total_amount)
           VALUES ($1, $2, $3, $4::jsonb, $5)`,
          [effect.idempotencyKey, effect.orderNo, effect.customerId, JSON.stringify(effect.lines), effect.totalAmount],
        );
        await client.query('COMMIT');
        return true;
      } catch (error) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw error;
      } finally {
        client.release();
      }
    },

    end: () => pool.end(),
  };
}

/** On MySQL a schema is a database: the consumer's tables live in `<schema>` on the URL's server. */
function mysqlLedger(pool: mariadb.Pool): LedgerStatements {
  return {
    async migrate(schema) {
      await pool.query(`CREATE DATABASE IF NOT EXISTS \`${schema}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`);
      await pool.query(`
        CREATE TABLE IF NOT EXISTS \`${schema}\`.processed_event (
          idempotency_key VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
          event_id        VARCHAR(64) NOT NULL,
          processed_at    DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
          CONSTRAINT processed_event_pkey PRIMARY KEY (idempotency_key)
        ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`);
      await pool.query(`
        CREATE TABLE IF NOT EXISTS \`${schema}\`.shipment_request (
          id              BIGINT AUTO_INCREMENT PRIMARY KEY,
          idempotency_key VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
          order_no        VARCHAR(40) NOT NULL,
          customer_id     VARCHAR(64) NOT NULL,
          \`lines\`         JSON NOT NULL,
          total_amount    DECIMAL(18,4) NOT NULL,
          created_at      DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3)
        ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`);
      const rows = await pool.query<TextColumn[]>(
        `SELECT TABLE_NAME AS \`table\`, COLUMN_NAME AS \`column\`, CHARACTER_SET_NAME AS charset,
                COLLATION_NAME AS collation
           FROM information_schema.COLUMNS
          WHERE TABLE_SCHEMA = ? AND TABLE_NAME = 'processed_event' AND COLUMN_NAME = 'idempotency_key'`,
        [schema],
      );
      refuseKeyColumn('mysql', rows[0]);
    },

    async claimAndApply(schema, effect) {
      const connection = await pool.getConnection();
      try {
        await connection.beginTransaction();
        // As on PostgreSQL, the claim decides: a twin waits on the key's lock, then finds it taken
        // (no row changed; `foundRows: false` makes "changed" what affectedRows counts).
        const claimed = await connection.query<mariadb.UpsertResult>(
          `INSERT INTO \`${schema}\`.processed_event (idempotency_key, event_id) VALUES (?, ?)
           ON DUPLICATE KEY UPDATE idempotency_key = idempotency_key`,
          [effect.idempotencyKey, effect.eventId],
        );
        if (claimed.affectedRows === 0) {
          await connection.rollback();
          return false;
        }
        await connection.query(
          `INSERT INTO \`${schema}\`.shipment_request (idempotency_key, order_no, customer_id, \`lines\`, total_amount)
           VALUES (?, ?, ?, ?, ?)`,
          [effect.idempotencyKey, effect.orderNo, effect.customerId, JSON.stringify(effect.lines), effect.totalAmount],
        );
        await connection.commit();
        return true;
      } catch (error) {
        await connection.rollback().catch(() => undefined);
        throw error;
      } finally {
        await connection.release();
      }
    },

    end: () => pool.end(),
  };
}
