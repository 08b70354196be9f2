-- Orders whose content comes from an OA's approval form (docs/architecture.md, decision 17).
-- A Feishu or DingTalk delivery claims its key before the form is read: its record has no
-- fingerprint and no request until the order workflow has read and mapped the form. `source` says
-- where a key's approval came from; every record before this migration came from the webhook.
ALTER TABLE "idempotency_record"
    ADD COLUMN "source" VARCHAR(16) NOT NULL DEFAULT 'webhook',
    ALTER COLUMN "fingerprint" DROP NOT NULL,
    ALTER COLUMN "request" DROP NOT NULL;

-- Every approval event an OA connector received, once per vendor event id (a redelivered event is
-- recorded once). The key is the business key: two events of one instance share it.
CREATE TABLE "oa_event" (
    "vendor" VARCHAR(16) NOT NULL,
    "event_id" VARCHAR(128) COLLATE "C" NOT NULL,
    "event_type" VARCHAR(64) NOT NULL,
    "instance_id" VARCHAR(64) COLLATE "C" NOT NULL,
    "status" VARCHAR(16) NOT NULL,
    "idempotent_key" VARCHAR(128) COLLATE "C" NOT NULL,
    "received_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "oa_event_pkey" PRIMARY KEY ("vendor", "event_id")
);

CREATE INDEX "ix_oa_event_key" ON "oa_event"("idempotent_key");

-- An approval revoked (or canceled, or deleted) in its OA after its order was written is told to
-- operators through the duplicate alerts' channel, as an alert of its own kind.
ALTER TABLE "duplicate_alert" DROP CONSTRAINT "duplicate_alert_kind";
ALTER TABLE "duplicate_alert" ADD CONSTRAINT "duplicate_alert_kind"
    CHECK ("kind" IN ('SAME_DOCUMENT', 'NEAR_IDENTICAL', 'REVOKED_AFTER_ORDER'));
