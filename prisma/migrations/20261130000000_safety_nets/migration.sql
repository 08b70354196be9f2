-- Safety nets: alerts of the duplicate scan, and the indexes the scan and the retention purge use.

CREATE TABLE "duplicate_alert" (
    "id" BIGSERIAL NOT NULL,
    "alert_key" VARCHAR(300) COLLATE "C" NOT NULL,
    "kind" VARCHAR(24) NOT NULL,
    "approval_no" VARCHAR(64) COLLATE "C",
    "operation" VARCHAR(16),
    "customer_id" VARCHAR(64) NOT NULL,
    "order_nos" TEXT[] NOT NULL,
    "idempotent_keys" TEXT[] NOT NULL,
    "detail" TEXT NOT NULL,
    "detected_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "duplicate_alert_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "duplicate_alert_kind" CHECK ("kind" IN ('SAME_DOCUMENT', 'NEAR_IDENTICAL'))
);

-- One alert per set of orders: a scan that finds the same duplicates again records nothing new.
CREATE UNIQUE INDEX "uk_duplicate_alert" ON "duplicate_alert"("alert_key");
CREATE INDEX "ix_order_main_fingerprint" ON "order_main"("fingerprint", "created_at");
CREATE INDEX "ix_order_main_created" ON "order_main"("created_at");
CREATE INDEX "ix_idempotency_record_created" ON "idempotency_record"("created_at");
