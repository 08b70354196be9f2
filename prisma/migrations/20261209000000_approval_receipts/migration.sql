-- The receipt of an approval's order: the order number written back into the approval it came
-- from, once (docs/connectors.md, "The approver sees the order"). One row per key, written when the
-- receipt settled: POSTED with the vendor's id of the comment or message, or FAILED with the
-- classified cause once its retries ran out (listed by `orders-cli receipts`). A key with an order
-- and no row yet is one whose receipt is still to be posted.
CREATE TABLE "approval_receipt" (
    "idempotent_key" VARCHAR(128) COLLATE "C" NOT NULL,
    "vendor" VARCHAR(32) NOT NULL,
    "instance_id" VARCHAR(64) NOT NULL,
    "order_no" VARCHAR(40) NOT NULL,
    "status" VARCHAR(16) NOT NULL,
    "posted_id" VARCHAR(128),
    "failure" TEXT,
    "settled_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "approval_receipt_pkey" PRIMARY KEY ("idempotent_key"),
    CONSTRAINT "approval_receipt_key_ascii" CHECK ("idempotent_key" ~ '^[\x21-\x7e]+$'),
    CONSTRAINT "approval_receipt_vendor" CHECK ("vendor" ~ '^[a-z][a-z0-9-]{1,31}$'),
    CONSTRAINT "approval_receipt_status" CHECK ("status" IN ('POSTED', 'FAILED'))
);

CREATE INDEX "ix_approval_receipt_status" ON "approval_receipt"("status", "settled_at");
