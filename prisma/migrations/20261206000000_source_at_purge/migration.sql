-- The door that claimed a key (the idempotency record's source), kept on the order row when the
-- retention purge removes the record, as status_at_purge keeps its status: a later delivery of the
-- key through another door is then still a key source conflict, not a silent duplicate
-- (docs/architecture.md, decision 38). A door is checked by its shape, not by a list: a new OA
-- vendor adds no migration. Orders purged before this column existed have none; the order row
-- alone answers for them, as before.
ALTER TABLE "order_main" ADD COLUMN "source_at_purge" VARCHAR(32);
ALTER TABLE "order_main"
    ADD CONSTRAINT "order_main_source_at_purge" CHECK ("source_at_purge" ~ '^[a-z][a-z0-9-]{1,31}$');
