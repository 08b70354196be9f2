-- Two users for one orders database on MySQL 8 / MariaDB >= 10.11: `orders_owner` runs the migrate
-- Job (DATABASE_MIGRATION_URL); `orders_app` is what the API, the worker, the MCP server and
-- orders-cli connect as (DATABASE_URL): it reads and writes rows and cannot change the schema.
-- Run as an administrator, then give both users a password (ALTER USER … IDENTIFIED BY …).
-- test/integration/mysql-store.test.ts runs this file as it stands, with other names.

-- utf8mb4_bin, not the server's default: the migrations set every table's collation themselves,
-- and a table created here by hand would otherwise compare keys case-insensitively.
CREATE DATABASE orders CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
CREATE USER 'orders_owner'@'%';
GRANT SELECT, INSERT, UPDATE, DELETE, CREATE, ALTER, INDEX, REFERENCES, DROP ON orders.* TO 'orders_owner'@'%';
CREATE USER 'orders_app'@'%';
GRANT SELECT, INSERT, UPDATE, DELETE ON orders.* TO 'orders_app'@'%';
