-- Two users for one orders database on MySQL 8 / MariaDB >= 10.11: `orders_owner` runs the migrate
-- Job (DATABASE_MIGRATION_URL); `orders_app` is what the API, the worker, the MCP server and
-- orders-cli connect as (DATABASE_URL): it reads every table and changes only what the product
-- changes, and cannot change the schema.
-- Two parts, both as an administrator: the first once, the second after every migration (the
-- migrate Job). Replace each <… password> with the password, quoted ('…'): each user is created
-- with it, never for a moment without one; left as it is, the first statement fails and nothing
-- is made.
-- To refuse connections without TLS, end each CREATE USER with REQUIRE SSL (REQUIRE X509 for a
-- client certificate), e.g. CREATE USER 'orders_app'@'%' IDENTIFIED BY '…' REQUIRE SSL; and add
-- ?ssl=true to DATABASE_URL and DATABASE_MIGRATION_URL (docs/production.md, "MySQL and MariaDB
-- settings that matter").
-- test/integration/database-roles.test.ts and mysql-store.test.ts run this file as it stands, with
-- other names and passwords.

CREATE USER 'orders_owner'@'%' IDENTIFIED BY <orders_owner password>;
CREATE USER 'orders_app'@'%' IDENTIFIED BY <orders_app password>;
-- utf8mb4_bin, not the server's default: the migrations set every table's collation themselves,
-- and a table created here by hand would otherwise compare keys case-insensitively.
CREATE DATABASE orders CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
GRANT SELECT, INSERT, UPDATE, DELETE, CREATE, ALTER, INDEX, REFERENCES, DROP ON orders.* TO 'orders_owner'@'%';
-- Reading every table, now and in later releases; whatever else the user may do is granted table
-- by table, after each migration, below.
GRANT SELECT ON orders.* TO 'orders_app'@'%';

-- after every migration:

-- What the application user may change, and nothing more: the audit of what happened (the orders,
-- the OA events, the refusals, the compensations, the alerts, the migrations) is inserted and
-- read, never rewritten, except the columns the product itself keeps up to date. Run again, it
-- changes nothing. The last statement takes back what an earlier version of this file gave on
-- the whole database, once the grants below are in place.
-- - order_main: INSERT; UPDATE order_no (numbered from the id the insert drew, on the day it was
--   created), status_at_purge and source_at_purge (the retention purge keeps the key's status and
--   door there).
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
GRANT INSERT ON orders.order_main TO 'orders_app'@'%';
GRANT UPDATE (order_no, status_at_purge, source_at_purge) ON orders.order_main TO 'orders_app'@'%';
GRANT INSERT ON orders.order_line TO 'orders_app'@'%';
GRANT INSERT ON orders.stock_reservation TO 'orders_app'@'%';
GRANT UPDATE (reserved, updated_at) ON orders.inventory TO 'orders_app'@'%';
GRANT INSERT, DELETE ON orders.idempotency_record TO 'orders_app'@'%';
GRANT UPDATE (fingerprint, request, status, attempts, last_error, workflow_started_at, first_delivery_at, updated_at)
  ON orders.idempotency_record TO 'orders_app'@'%';
GRANT INSERT ON orders.key_source_conflict TO 'orders_app'@'%';
GRANT UPDATE (claimed_by, fingerprint, refusals, first_refused_at, last_refused_at, cleared_at, cleared_by)
  ON orders.key_source_conflict TO 'orders_app'@'%';
GRANT INSERT ON orders.compensation_record TO 'orders_app'@'%';
GRANT UPDATE (decision, decided_by, decided_at) ON orders.compensation_record TO 'orders_app'@'%';
GRANT INSERT ON orders.duplicate_alert TO 'orders_app'@'%';
GRANT UPDATE (order_nos, idempotent_keys, order_count, detail, last_order_at, updated_at, superseded_by)
  ON orders.duplicate_alert TO 'orders_app'@'%';
GRANT INSERT ON orders.oa_event TO 'orders_app'@'%';
GRANT INSERT ON orders.approval_receipt TO 'orders_app'@'%';
REVOKE INSERT, UPDATE, DELETE ON orders.* FROM 'orders_app'@'%';
