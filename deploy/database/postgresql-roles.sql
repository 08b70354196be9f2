-- Two roles for one orders database on PostgreSQL: `orders_owner` owns the schema and runs the
-- migrate Job (DATABASE_MIGRATION_URL); `orders_app` is what the API, the worker, the MCP server and
-- orders-cli connect as (DATABASE_URL): it reads and writes rows and cannot change the schema.
-- Run the first part as a superuser, give both roles a password (\password orders_owner), then run
-- the second part connected to the new database as a superuser or as orders_owner.
-- test/integration/production-install.test.ts runs this file as it stands, with other names.

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
-- Every table and sequence the migrations create, now and in later releases.
ALTER DEFAULT PRIVILEGES FOR ROLE orders_owner IN SCHEMA public
  GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO orders_app;
ALTER DEFAULT PRIVILEGES FOR ROLE orders_owner IN SCHEMA public
  GRANT USAGE, SELECT ON SEQUENCES TO orders_app;
