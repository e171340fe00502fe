-- Leaf's segment table, exactly as Meituan Leaf ships it (MySQL / MariaDB).
-- Allocation is one atomic statement pair on one connection:
--   UPDATE leaf_alloc SET max_id = LAST_INSERT_ID(max_id + ?) WHERE biz_tag = ?;
--   SELECT LAST_INSERT_ID(), step FROM leaf_alloc WHERE biz_tag = ?;
-- `step` is the tag's own step, as in Leaf: a tag's first allocation after start uses it
-- (read first with SELECT step), and it is the floor of the dynamic step that later
-- allocations ask for (up to max_step). Stores made with use_row_step off ignore it.
-- Durability: InnoDB with innodb_flush_log_at_trx_commit = 1 (or 2 against process
-- crashes only); 0 can lose acknowledged allocations.
CREATE TABLE IF NOT EXISTS `leaf_alloc` (
  `biz_tag` varchar(128) NOT NULL DEFAULT '',
  `max_id` bigint(20) NOT NULL DEFAULT '1',
  `step` int(11) NOT NULL,
  `description` varchar(256) DEFAULT NULL,
  `update_time` timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP,
  PRIMARY KEY (`biz_tag`)
) ENGINE=InnoDB;
-- segflake's give backs: a generator that closes gives back the IDs it fetched and did not
-- issue. Each give back is recorded here under a random token, then applied at most once
-- (max_id lowered only if nobody allocated since), so a statement resent after a lost
-- reply never lowers max_id a second time. The stores create this table on their first
-- give back; a database user without CREATE on the database needs it made beforehand,
-- with SELECT, INSERT and UPDATE granted on it (without it the IDs are not given back: a
-- gap).
CREATE TABLE IF NOT EXISTS `leaf_alloc_give_back` (
  `token` varchar(64) NOT NULL,
  `biz_tag` varchar(128) NOT NULL,
  `max_id` bigint(20) NOT NULL,
  `expected_max_id` bigint(20) NOT NULL,
  `applied` smallint(6) NOT NULL DEFAULT 0,
  `created` timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP,
  PRIMARY KEY (`token`)
) ENGINE=InnoDB;
