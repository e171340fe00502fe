-- Worker-ID leases (MySQL / MariaDB, InnoDB). One row per worker ID ever claimed: the
-- owner token of the process holding it, the lease's expiry on the database's clock, and
-- the time mark no ID of that worker ID has exceeded (it only grows while held, survives
-- release and expiry, and a new holder starts above it).
-- Durability: innodb_flush_log_at_trx_commit = 1 (or 2 against process crashes only).
-- Times are UTC DATETIME(3) (TIMESTAMP ends in 2038), compared with UTC_TIMESTAMP(3).
CREATE TABLE IF NOT EXISTS `segflake_worker_lease` (
  `worker_id` int(11) NOT NULL,
  `owner` varchar(160) DEFAULT NULL,
  `expires_at` datetime(3) NULL DEFAULT NULL,
  `mark_ms` bigint(20) NOT NULL DEFAULT '0',
  `reported_ms` bigint(20) DEFAULT NULL,
  `reported_at` datetime(3) NULL DEFAULT NULL,
  PRIMARY KEY (`worker_id`)
) ENGINE=InnoDB;
-- Tables made by earlier versions: owner tokens are a label of up to 128 bytes, '#' and
-- 16 hex digits (varchar(64) is widened), and TIMESTAMP(3) columns become UTC
-- DATETIME(3) (this session converts in UTC).
SET time_zone = '+00:00';
ALTER TABLE `segflake_worker_lease` MODIFY `owner` varchar(160) DEFAULT NULL,
  MODIFY `expires_at` datetime(3) NULL DEFAULT NULL,
  MODIFY `reported_at` datetime(3) NULL DEFAULT NULL;
-- uid-generator's table, exactly as it ships, kept as the audit trail: a row per claim,
-- PORT = worker_id@owner.
CREATE TABLE IF NOT EXISTS `WORKER_NODE` (
  `ID` bigint NOT NULL AUTO_INCREMENT COMMENT 'auto increment id',
  `HOST_NAME` varchar(64) NOT NULL COMMENT 'host name',
  `PORT` varchar(64) NOT NULL COMMENT 'port',
  `TYPE` int NOT NULL COMMENT 'node type: ACTUAL or CONTAINER',
  `LAUNCH_DATE` date NOT NULL COMMENT 'launch date',
  `MODIFIED` timestamp NOT NULL COMMENT 'modified time',
  `CREATED` timestamp NOT NULL COMMENT 'created time',
  PRIMARY KEY (`ID`)
) ENGINE=InnoDB;
