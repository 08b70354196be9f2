-- Initial order model. Written by hand in Prisma's migration layout; applied by db/migrate.ts,
-- which keeps Prisma's _prisma_migrations bookkeeping so `prisma migrate status` agrees.

-- Keys are plain ASCII and compared byte for byte: collation "C" on every key column, so the
-- unique index can never treat two different keys as equal or two equal keys as different.

-- Order numbers come from a sequence: readable, unique, and never the thing that decides
-- "already written" (only uk_order_idempotent does).
CREATE SEQUENCE "order_no_seq";

CREATE TABLE "order_main" (
    "id" BIGSERIAL NOT NULL,
    "order_no" VARCHAR(40) NOT NULL DEFAULT ('SO-' || to_char(now() AT TIME ZONE 'UTC', 'YYYYMMDD') || '-' || lpad(nextval('order_no_seq')::text, 8, '0')),
    "idempotent_key" VARCHAR(128) COLLATE "C" NOT NULL,
    "approval_no" VARCHAR(64) COLLATE "C" NOT NULL,
    "operation" VARCHAR(16) NOT NULL,
    "customer_id" VARCHAR(64) NOT NULL,
    "currency" CHAR(3) NOT NULL,
    "total_amount" DECIMAL(18,4) NOT NULL,
    "fingerprint" CHAR(64) NOT NULL,
    "written_attempt" INTEGER NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "order_main_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "order_main_key_ascii" CHECK ("idempotent_key" ~ '^[\x21-\x7e]+$'),
    CONSTRAINT "order_main_operation" CHECK ("operation" IN ('MAIN', 'SUPPLEMENT')),
    CONSTRAINT "order_main_total_not_negative" CHECK ("total_amount" >= 0)
);

CREATE UNIQUE INDEX "uk_order_no" ON "order_main"("order_no");
CREATE UNIQUE INDEX "uk_order_idempotent" ON "order_main"("idempotent_key");
CREATE INDEX "ix_order_main_approval" ON "order_main"("approval_no", "operation");

CREATE TABLE "order_line" (
    "order_id" BIGINT NOT NULL,
    "line_no" INTEGER NOT NULL,
    "sku" VARCHAR(64) NOT NULL,
    "quantity" INTEGER NOT NULL,
    "unit_price" DECIMAL(16,4) NOT NULL,

    CONSTRAINT "order_line_pkey" PRIMARY KEY ("order_id","line_no"),
    CONSTRAINT "order_line_quantity_positive" CHECK ("quantity" > 0),
    CONSTRAINT "order_line_price_not_negative" CHECK ("unit_price" >= 0)
);

ALTER TABLE "order_line" ADD CONSTRAINT "order_line_order_id_fkey" FOREIGN KEY ("order_id") REFERENCES "order_main"("id") ON DELETE CASCADE ON UPDATE CASCADE;

CREATE TABLE "inventory" (
    "sku" VARCHAR(64) NOT NULL,
    "on_hand" INTEGER NOT NULL,
    "reserved" INTEGER NOT NULL DEFAULT 0,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "inventory_pkey" PRIMARY KEY ("sku"),
    CONSTRAINT "inventory_on_hand_not_negative" CHECK ("on_hand" >= 0),
    CONSTRAINT "inventory_reserved_not_negative" CHECK ("reserved" >= 0),
    CONSTRAINT "inventory_reserved_within_on_hand" CHECK ("reserved" <= "on_hand")
);

CREATE TABLE "stock_reservation" (
    "idempotent_key" VARCHAR(128) COLLATE "C" NOT NULL,
    "sku" VARCHAR(64) NOT NULL,
    "quantity" INTEGER NOT NULL,
    "released_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "stock_reservation_pkey" PRIMARY KEY ("idempotent_key","sku"),
    CONSTRAINT "stock_reservation_quantity_positive" CHECK ("quantity" > 0)
);

CREATE TABLE "idempotency_record" (
    "idempotent_key" VARCHAR(128) COLLATE "C" NOT NULL,
    "approval_no" VARCHAR(64) COLLATE "C" NOT NULL,
    "operation" VARCHAR(16) NOT NULL,
    "fingerprint" CHAR(64) NOT NULL,
    "request" JSONB NOT NULL,
    "workflow_id" VARCHAR(160) NOT NULL,
    "status" VARCHAR(20) NOT NULL,
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "last_error" TEXT,
    "workflow_started_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "idempotency_record_pkey" PRIMARY KEY ("idempotent_key")
);

CREATE INDEX "ix_idempotency_record_status" ON "idempotency_record"("status");

CREATE TABLE "compensation_record" (
    "id" BIGSERIAL NOT NULL,
    "idempotent_key" VARCHAR(128) COLLATE "C" NOT NULL,
    "order_run_id" VARCHAR(64) NOT NULL,
    "reason_type" VARCHAR(64) NOT NULL,
    "reason" TEXT NOT NULL,
    "attempts" INTEGER NOT NULL,
    "order_landed" BOOLEAN NOT NULL,
    "released_lines" INTEGER NOT NULL,
    "decision" VARCHAR(16),
    "decided_by" VARCHAR(128),
    "decided_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "compensation_record_pkey" PRIMARY KEY ("id")
);

CREATE UNIQUE INDEX "uk_compensation_run" ON "compensation_record"("idempotent_key", "order_run_id");

-- Demo stock, so a fresh `npm run dev` can take orders at once.
INSERT INTO "inventory" ("sku", "on_hand") VALUES
    ('SKU-APPLE', 100000),
    ('SKU-PEAR', 100000),
    ('SKU-PLUM', 100000),
    ('SKU-RARE', 5);
