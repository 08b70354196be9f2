-- The order model on MySQL 8 / MariaDB 10.11+, as prisma/migrations has built it on PostgreSQL.
-- Every table is utf8mb4_bin and every key column ascii_bin: text compares byte for byte, so two
-- keys that differ only in case or accents stay two keys (the server's default collation,
-- utf8mb4_general_ci or utf8mb4_0900_ai_ci, would make them one). The service refuses to start
-- when a key column is not binary (services/db/stores/mysql-collations.ts).

CREATE TABLE `order_main` (
    `id` BIGINT NOT NULL AUTO_INCREMENT,
    `order_no` VARCHAR(40) NOT NULL,
    `idempotent_key` VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    `approval_no` VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    `operation` VARCHAR(16) NOT NULL,
    `customer_id` VARCHAR(64) NOT NULL,
    `currency` CHAR(3) NOT NULL,
    `total_amount` DECIMAL(18,4) NOT NULL,
    `fingerprint` CHAR(64) NOT NULL,
    `written_attempt` INTEGER NOT NULL,
    `created_at` DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    `status_at_purge` VARCHAR(20) NULL,
    `delivery_targets` JSON NOT NULL,

    PRIMARY KEY (`id`),
    UNIQUE INDEX `uk_order_no` (`order_no`),
    UNIQUE INDEX `uk_order_idempotent` (`idempotent_key`),
    INDEX `ix_order_main_approval` (`approval_no`, `operation`),
    INDEX `ix_order_main_fingerprint` (`fingerprint`, `created_at`),
    INDEX `ix_order_main_created` (`created_at`),
    CONSTRAINT `order_main_key_ascii` CHECK (`idempotent_key` REGEXP '^[!-~]+$'),
    CONSTRAINT `order_main_operation` CHECK (`operation` IN ('MAIN', 'SUPPLEMENT')),
    CONSTRAINT `order_main_total_not_negative` CHECK (`total_amount` >= 0),
    CONSTRAINT `order_main_delivery_targets`
        CHECK (JSON_TYPE(`delivery_targets`) = 'ARRAY' AND JSON_CONTAINS('["http", "broker"]', `delivery_targets`))
) ENGINE = InnoDB DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;

CREATE TABLE `order_line` (
    `order_id` BIGINT NOT NULL,
    `line_no` INTEGER NOT NULL,
    `sku` VARCHAR(64) NOT NULL,
    `quantity` INTEGER NOT NULL,
    `unit_price` DECIMAL(16,4) NOT NULL,

    PRIMARY KEY (`order_id`, `line_no`),
    CONSTRAINT `order_line_quantity_positive` CHECK (`quantity` > 0),
    CONSTRAINT `order_line_price_not_negative` CHECK (`unit_price` >= 0),
    CONSTRAINT `order_line_order_id_fkey` FOREIGN KEY (`order_id`) REFERENCES `order_main` (`id`)
        ON DELETE CASCADE ON UPDATE CASCADE
) ENGINE = InnoDB DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;

CREATE TABLE `inventory` (
    `sku` VARCHAR(64) NOT NULL,
    `on_hand` INTEGER NOT NULL,
    `reserved` INTEGER NOT NULL DEFAULT 0,
    `updated_at` DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),

    PRIMARY KEY (`sku`),
    CONSTRAINT `inventory_on_hand_not_negative` CHECK (`on_hand` >= 0),
    CONSTRAINT `inventory_reserved_not_negative` CHECK (`reserved` >= 0),
    CONSTRAINT `inventory_reserved_within_on_hand` CHECK (`reserved` <= `on_hand`)
) ENGINE = InnoDB DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;

CREATE TABLE `stock_reservation` (
    `idempotent_key` VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    `sku` VARCHAR(64) NOT NULL,
    `quantity` INTEGER NOT NULL,
    `released_at` DATETIME(3) NULL,
    `created_at` DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),

    PRIMARY KEY (`idempotent_key`, `sku`),
    CONSTRAINT `stock_reservation_quantity_positive` CHECK (`quantity` > 0)
) ENGINE = InnoDB DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;

CREATE TABLE `idempotency_record` (
    `idempotent_key` VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    `approval_no` VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    `operation` VARCHAR(16) NOT NULL,
    `fingerprint` CHAR(64) NULL,
    `request` JSON NULL,
    `source` VARCHAR(16) NOT NULL DEFAULT 'webhook',
    `workflow_id` VARCHAR(160) NOT NULL,
    `status` VARCHAR(20) NOT NULL,
    `attempts` INTEGER NOT NULL DEFAULT 0,
    `last_error` TEXT NULL,
    `workflow_started_at` DATETIME(3) NULL,
    `first_delivery_at` DATETIME(3) NULL,
    `created_at` DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    `updated_at` DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),

    PRIMARY KEY (`idempotent_key`),
    INDEX `ix_idempotency_record_status` (`status`),
    INDEX `ix_idempotency_record_created` (`created_at`),
    CONSTRAINT `idempotency_record_source` CHECK (`source` IN ('webhook', 'mcp', 'feishu', 'dingtalk', 'wecom'))
) ENGINE = InnoDB DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;

CREATE TABLE `key_source_conflict` (
    `idempotent_key` VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    `door` VARCHAR(16) NOT NULL,
    `claimed_by` VARCHAR(16) NOT NULL,
    `fingerprint` CHAR(64) NULL,
    `refusals` INTEGER NOT NULL DEFAULT 1,
    `first_refused_at` DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    `last_refused_at` DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    `cleared_at` DATETIME(3) NULL,
    `cleared_by` VARCHAR(128) NULL,

    PRIMARY KEY (`idempotent_key`, `door`),
    INDEX `ix_key_source_conflict_refused` (`last_refused_at`),
    CONSTRAINT `key_source_conflict_key_ascii` CHECK (`idempotent_key` REGEXP '^[!-~]+$'),
    CONSTRAINT `key_source_conflict_door` CHECK (`door` IN ('webhook', 'mcp', 'feishu', 'dingtalk', 'wecom')),
    CONSTRAINT `key_source_conflict_claimed_by`
        CHECK (`claimed_by` IN ('webhook', 'mcp', 'feishu', 'dingtalk', 'wecom'))
) ENGINE = InnoDB DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;

CREATE TABLE `compensation_record` (
    `id` BIGINT NOT NULL AUTO_INCREMENT,
    `idempotent_key` VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    `order_run_id` VARCHAR(64) NOT NULL,
    `reason_type` VARCHAR(64) NOT NULL,
    `reason` TEXT NOT NULL,
    `attempts` INTEGER NOT NULL,
    `order_landed` BOOLEAN NOT NULL,
    `released_lines` INTEGER NOT NULL,
    `decision` VARCHAR(16) NULL,
    `decided_by` VARCHAR(128) NULL,
    `decided_at` DATETIME(3) NULL,
    `created_at` DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),

    PRIMARY KEY (`id`),
    UNIQUE INDEX `uk_compensation_run` (`idempotent_key`, `order_run_id`)
) ENGINE = InnoDB DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;

CREATE TABLE `duplicate_alert` (
    `id` BIGINT NOT NULL AUTO_INCREMENT,
    `alert_key` VARCHAR(300) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    `kind` VARCHAR(24) NOT NULL,
    `cluster_key` VARCHAR(300) NOT NULL,
    `approval_no` VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NULL,
    `operation` VARCHAR(16) NULL,
    `customer_id` VARCHAR(64) NOT NULL,
    `order_nos` JSON NOT NULL,
    `idempotent_keys` JSON NOT NULL,
    `order_count` INTEGER NOT NULL,
    `detail` TEXT NOT NULL,
    `last_order_at` DATETIME(3) NOT NULL,
    `detected_at` DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    `updated_at` DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    `superseded_by` BIGINT NULL,

    PRIMARY KEY (`id`),
    UNIQUE INDEX `uk_duplicate_alert` (`alert_key`),
    INDEX `ix_duplicate_alert_cluster` (`kind`, `cluster_key`),
    INDEX `ix_duplicate_alert_updated` (`updated_at`),
    CONSTRAINT `duplicate_alert_kind` CHECK (`kind` IN ('SAME_DOCUMENT', 'NEAR_IDENTICAL', 'REVOKED_AFTER_ORDER'))
) ENGINE = InnoDB DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;

CREATE TABLE `oa_event` (
    `vendor` VARCHAR(16) NOT NULL,
    `event_id` VARCHAR(128) NOT NULL,
    `event_type` VARCHAR(64) NOT NULL,
    `instance_id` VARCHAR(64) NOT NULL,
    `status` VARCHAR(16) NOT NULL,
    `idempotent_key` VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    `received_at` DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),

    PRIMARY KEY (`vendor`, `event_id`),
    INDEX `ix_oa_event_key` (`idempotent_key`)
) ENGINE = InnoDB DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;

INSERT INTO `inventory` (`sku`, `on_hand`) VALUES
    ('SKU-APPLE', 100000),
    ('SKU-PEAR', 100000),
    ('SKU-PLUM', 100000),
    ('SKU-RARE', 5);
