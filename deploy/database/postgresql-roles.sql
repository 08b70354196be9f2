-- Two roles for one orders database on PostgreSQL: `orders_owner` owns the schema and runs the
-- migrate Job (DATABASE_MIGRATION_URL); `orders_app` is what the API, the worker, the MCP server and
-- orders-cli connect as (DATABASE_URL): it reads every table and changes only what the product
-- changes, and cannot change the schema.
-- Three parts: the first as a superuser, then give both roles a password (\password orders_owner);
-- the second connected to the new database as a superuser or as orders_owner, before the first
-- migration; the third after every migration (the migrate Job), connected the same way.
-- test/integration/database-roles.test.ts and production-install.test.ts run this file as it
-- stands, with other names.

CREATE ROLE orders_owner LOGIN;
CREATE ROLE orders_app LOGIN;
CREATE DATABASE orders OWNER orders_owner;
-- The innermost rung of the timeout ladder, on every connection of the application role, however
-- it connects: the service sets the same at connect (DB_STATEMENT_TIMEOUT_MS, 2 s by default), but
-- behind a transaction-mode pooler (DATABASE_URL with pgbouncer=true) it cannot, and it refuses to
-- start unless the role sets them, no longer than DB_STATEMENT_TIMEOUT_MS.
ALTER ROLE orders_app SET statement_timeout = '2s';
ALTER ROLE orders_app SET lock_timeout = '2s';
ALTER ROLE orders_app SET idle_in_transaction_session_timeout = '10s';

-- connected to the orders database:

ALTER SCHEMA public OWNER TO orders_owner;
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
GRANT USAGE ON SCHEMA public TO orders_app;
-- Reading every table and drawing from every sequence (order numbers, ids), now and in later
-- releases; whatever else the role may do is granted table by table, after each migration, below.
ALTER DEFAULT PRIVILEGES FOR ROLE orders_owner IN SCHEMA public
  GRANT SELECT ON TABLES TO orders_app;
ALTER DEFAULT PRIVILEGES FOR ROLE orders_owner IN SCHEMA public
  GRANT USAGE, SELECT ON SEQUENCES TO orders_app;

-- after every migration, in the orders database:

-- What the application role may change, and nothing more: the audit of what happened (the orders,
-- the OA events, the refusals, the compensations, the alerts, the migrations) is inserted and
-- read, never rewritten, except the columns the product itself keeps up to date. One transaction,
-- so the role is never without a right it needs; run again, it changes nothing. It starts from
-- nothing, which also takes back the UPDATE and DELETE an earlier version of this file gave.
-- - order_main: INSERT; UPDATE status_at_purge and source_at_purge (the retention purge keeps the
--   key's status and door there).
-- - order_line, stock_reservation: INSERT (with their order, in its transaction).
-- - inventory: UPDATE reserved, updated_at (the order write reserves stock); no INSERT: stock is
--   not the service's to create.
-- - idempotency_record: INSERT (the claim); UPDATE of the columns a delivery, a start, the form
--   mapping and the status writer change; DELETE (the retention purge, the only DELETE there is).
-- - key_source_conflict: INSERT; UPDATE of all but the key and the refused door (a refusal counts
--   again and reopens, orders-cli clear-conflict clears).
-- - compensation_record: INSERT; UPDATE decision, decided_by, decided_at (the first decision).
-- - duplicate_alert: INSERT; UPDATE of what a cluster that grows or merges changes.
-- - oa_event, approval_receipt: INSERT only (a receipt's record is written once, when it settles).
-- - _prisma_migrations: read only (the schema check at start).
BEGIN;
REVOKE ALL ON ALL TABLES IN SCHEMA public FROM orders_app;
ALTER DEFAULT PRIVILEGES FOR ROLE orders_owner IN SCHEMA public
  REVOKE INSERT, UPDATE, DELETE ON TABLES FROM orders_app;
GRANT SELECT ON ALL TABLES IN SCHEMA public TO orders_app;
GRANT INSERT ON order_main, order_line, stock_reservation, idempotency_record, key_source_conflict,
  compensation_record, duplicate_alert, oa_event, approval_receipt TO orders_app;
GRANT UPDATE (status_at_purge, source_at_purge) ON order_main TO orders_app;
GRANT UPDATE (reserved, updated_at) ON inventory TO orders_app;
GRANT UPDATE (fingerprint, request, status, attempts, last_error, workflow_started_at, first_delivery_at,
  updated_at) ON idempotency_record TO orders_app;
GRANT DELETE ON idempotency_record TO orders_app;
GRANT UPDATE (claimed_by, fingerprint, refusals, first_refused_at, last_refused_at, cleared_at, cleared_by)
  ON key_source_conflict TO orders_app;
GRANT UPDATE (decision, decided_by, decided_at) ON compensation_record TO orders_app;
GRANT UPDATE (order_nos, idempotent_keys, order_count, detail, last_order_at, updated_at, superseded_by)
  ON duplicate_alert TO orders_app;
COMMIT;
