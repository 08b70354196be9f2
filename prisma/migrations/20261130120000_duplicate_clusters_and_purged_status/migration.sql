-- Duplicate alerts become one per cluster: the orders of one business document under different
-- keys, or one run of near-identical orders. A cluster that grows updates its alert instead of
-- adding one alert per pair, so the scan's work and its result stay bounded.
ALTER TABLE "duplicate_alert"
    ADD COLUMN "cluster_key" VARCHAR(300) COLLATE "C",
    ADD COLUMN "order_count" INTEGER,
    ADD COLUMN "last_order_at" TIMESTAMPTZ(3),
    ADD COLUMN "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    ADD COLUMN "superseded_by" BIGINT;

-- Alerts recorded before: a document's alert is keyed by operation and approval number, a
-- near-identical one by the fingerprint of its orders (when its first order still exists; else it
-- keeps a key of its own and no cluster joins it).
UPDATE "duplicate_alert" a SET
    "cluster_key" = CASE
        WHEN a."kind" = 'SAME_DOCUMENT' AND a."approval_no" IS NOT NULL AND a."operation" IS NOT NULL
            THEN a."operation" || ':' || a."approval_no"
        ELSE COALESCE((SELECT o."fingerprint" FROM "order_main" o WHERE o."order_no" = a."order_nos"[1]), a."alert_key")
    END,
    "order_count" = cardinality(a."order_nos"),
    "last_order_at" = COALESCE(
        (SELECT max(o."created_at") FROM "order_main" o WHERE o."order_no" = ANY (a."order_nos")), a."detected_at"),
    "updated_at" = a."detected_at";

ALTER TABLE "duplicate_alert"
    ALTER COLUMN "cluster_key" SET NOT NULL,
    ALTER COLUMN "order_count" SET NOT NULL,
    ALTER COLUMN "last_order_at" SET NOT NULL;

CREATE INDEX "ix_duplicate_alert_cluster" ON "duplicate_alert"("kind", "cluster_key");
CREATE INDEX "ix_duplicate_alert_updated" ON "duplicate_alert"("updated_at");

-- What a key had reached when the retention purge removed its idempotency record (SUBMITTED or
-- DELIVERED), so the status read still answers it from the order row.
ALTER TABLE "order_main" ADD COLUMN "status_at_purge" VARCHAR(20);
