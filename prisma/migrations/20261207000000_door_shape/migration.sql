-- A door (the webhook, the MCP tool, an OA vendor) is checked by its shape, not by a list, as
-- order_main.source_at_purge already is: a new OA vendor is a folder and a registry line, and adds
-- no migration (docs/connectors.md). The columns that name a door take the shape's 32 characters.
ALTER TABLE "idempotency_record" DROP CONSTRAINT "idempotency_record_source";
ALTER TABLE "key_source_conflict" DROP CONSTRAINT "key_source_conflict_door";
ALTER TABLE "key_source_conflict" DROP CONSTRAINT "key_source_conflict_claimed_by";

ALTER TABLE "idempotency_record" ALTER COLUMN "source" TYPE VARCHAR(32);
ALTER TABLE "key_source_conflict" ALTER COLUMN "door" TYPE VARCHAR(32);
ALTER TABLE "key_source_conflict" ALTER COLUMN "claimed_by" TYPE VARCHAR(32);
ALTER TABLE "oa_event" ALTER COLUMN "vendor" TYPE VARCHAR(32);

ALTER TABLE "idempotency_record"
    ADD CONSTRAINT "idempotency_record_source" CHECK ("source" ~ '^[a-z][a-z0-9-]{1,31}$');
ALTER TABLE "key_source_conflict"
    ADD CONSTRAINT "key_source_conflict_door" CHECK ("door" ~ '^[a-z][a-z0-9-]{1,31}$'),
    ADD CONSTRAINT "key_source_conflict_claimed_by" CHECK ("claimed_by" ~ '^[a-z][a-z0-9-]{1,31}$');
