-- Which delivery of a key was answered "first" (202) is decided by this column alone: the one
-- delivery whose conditional update set it. Keys answered before it existed were answered when
-- their workflow was marked started.
ALTER TABLE "idempotency_record" ADD COLUMN "first_delivery_at" TIMESTAMPTZ(3);

UPDATE "idempotency_record" SET "first_delivery_at" = "workflow_started_at" WHERE "workflow_started_at" IS NOT NULL;
