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
