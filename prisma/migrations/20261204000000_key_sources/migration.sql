-- A key belongs to the door that claimed it (docs/architecture.md, decision 38). Every claim has
-- recorded its door in "source" since 20261201000000_oa_connectors, where every record claimed
-- before it got 'webhook' (the MCP tool's claims of that time among them: the webhook and the tool
-- name their order alike, and the same order through either is still one approval). The doors are
-- now a closed list, so a claim can never name a door that is not one.
ALTER TABLE "idempotency_record"
    ADD CONSTRAINT "idempotency_record_source"
    CHECK ("source" IN ('webhook', 'mcp', 'feishu', 'dingtalk', 'wecom'));

-- A delivery refused because another door holds its key, kept for an operator: one row per key and
-- refused door, counting its refusals, until an operator clears it (`orders-cli clear-conflict`);
-- a refusal after that opens it again.
CREATE TABLE "key_source_conflict" (
    "idempotent_key" VARCHAR(128) COLLATE "C" NOT NULL,
    "door" VARCHAR(16) NOT NULL,
    "claimed_by" VARCHAR(16) NOT NULL,
    "fingerprint" CHAR(64),
    "refusals" INTEGER NOT NULL DEFAULT 1,
    "first_refused_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_refused_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "cleared_at" TIMESTAMPTZ(3),
    "cleared_by" VARCHAR(128),

    CONSTRAINT "key_source_conflict_pkey" PRIMARY KEY ("idempotent_key", "door"),
    CONSTRAINT "key_source_conflict_key_ascii" CHECK ("idempotent_key" ~ '^[\x21-\x7e]+$'),
    CONSTRAINT "key_source_conflict_door"
        CHECK ("door" IN ('webhook', 'mcp', 'feishu', 'dingtalk', 'wecom')),
    CONSTRAINT "key_source_conflict_claimed_by"
        CHECK ("claimed_by" IN ('webhook', 'mcp', 'feishu', 'dingtalk', 'wecom'))
);

CREATE INDEX "ix_key_source_conflict_refused" ON "key_source_conflict"("last_refused_at");
