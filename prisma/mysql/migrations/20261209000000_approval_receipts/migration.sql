-- The receipt of an approval's order: the order number written back into the approval it came
-- from, once (docs/connectors.md, "The approver sees the order"). One row per key, written when the
-- receipt settled: POSTED with the vendor's id of the comment or message, or FAILED with the
-- classified cause once its retries ran out (listed by `orders-cli receipts`). A key with an order
-- and no row yet is one whose receipt is still to be posted.
CREATE TABLE `approval_receipt` (
    `idempotent_key` VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    `vendor` VARCHAR(32) NOT NULL,
    `instance_id` VARCHAR(64) NOT NULL,
    `order_no` VARCHAR(40) NOT NULL,
    `status` VARCHAR(16) NOT NULL,
    `posted_id` VARCHAR(128) NULL,
    `failure` TEXT NULL,
    `settled_at` DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),

    PRIMARY KEY (`idempotent_key`),
    INDEX `ix_approval_receipt_status` (`status`, `settled_at`),
    CONSTRAINT `approval_receipt_key_ascii` CHECK (`idempotent_key` REGEXP '^[!-~]+$'),
    CONSTRAINT `approval_receipt_vendor` CHECK (`vendor` REGEXP '^[a-z][a-z0-9-]{1,31}$'),
    CONSTRAINT `approval_receipt_status` CHECK (`status` IN ('POSTED', 'FAILED'))
) ENGINE = InnoDB DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
