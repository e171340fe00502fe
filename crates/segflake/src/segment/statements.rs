//! What the segment stores send to their databases, decided here and carried by every
//! adapter (the CLI's, Python's and Node's stores).
//!
//! SQL uses `?` placeholders (adapters write their driver's) and `{table}` for the table
//! (Leaf's `leaf_alloc`, or the name the store was given, checked by the adapter). Redis
//! scripts take the tag's key as `KEYS[1]`.

/// `(store, call, text)`. The calls:
/// * `allocate` (PostgreSQL): one atomic statement, `max_id = max_id + step` for the tag
///   (the row's own step when the step is NULL, Leaf's first allocation of a tag).
///   Parameters: the step or NULL, the tag, the step or NULL again. Answers the new
///   `max_id`, the step used and the row's step, or no row for a tag without one.
///   `allocate_residue`: the same, and the row's `delta` and `remainder` (Tinyid's
///   multi-database mode, for a table with both columns).
/// * `row_step`, `allocate`, `allocated`, `allocated_residue` (MySQL/MariaDB, which has no
///   `UPDATE … RETURNING`): with no step given the row's is read first (`row_step`, the
///   tag), so the step used is known exactly even if an operator changes the row
///   meanwhile; then `allocate` (the step, the tag: no row matched = no such tag) sets
///   `max_id` through `LAST_INSERT_ID`, and `allocated` (the tag; or `allocated_residue`)
///   reads that value (as text: JavaScript drivers round a BIGINT above 2^53) and the
///   row's step on the same connection.
/// * `residue_columns` (SQL): how many of `delta` and `remainder` the table (its name is
///   the parameter) has: 2 when the database states its residue class.
/// * `allocate` (Redis): `KEYS[1]` the tag's counter, `ARGV[1]` the step: `INCRBY`, the new
///   value as a string; an error containing `NOTAG` when the counter does not exist
///   (`INCRBY` would start it at 0 and hand out IDs a Leaf row never would).
/// * `key` and `residue_key` (Redis): a tag's counter is `<prefix><tag>` with this default
///   prefix; the database's residue class, `DELTA:REMAINDER`, is at `residue_key`.
/// * `give_back` (SQL): [`crate::SegmentStore::give_back`], safe to run twice. The adapter
///   first runs `give_back_table` (once per store object), then `give_back_intent` with a
///   fresh random token (128 bits, hex) of its own, then `give_back` with that token: it
///   lowers the tag's `max_id` from the recorded `expected_max_id` to the recorded
///   `max_id` if it is still `expected_max_id`, and marks the record applied, at most once
///   per token. Parameter: the token; rows changed > 0 = lowered (PostgreSQL: 1; MySQL: 2,
///   both tables' rows). A plain `UPDATE … SET max_id = :max_id WHERE max_id =
///   :expected_max_id` is not: run a second time (a driver or pool that resends after a
///   lost reply, a delayed duplicate) after another process allocated exactly the range
///   given back, it would lower `max_id` again and that range would be handed out twice.
///   Each statement on its own is harmless when run again at any later time: the intent
///   of a token that exists changes nothing, and a token already applied is never applied
///   again.
/// * `give_back_table` (SQL): the marker table `{table}_give_back` beside the tag table,
///   one row per give back (its token, tag, `max_id`, `expected_max_id`, whether it was
///   applied, when it was made), unless it exists. A database user without the privilege
///   to create it (PostgreSQL: `CREATE` on the schema; MySQL: `CREATE` on the database)
///   needs it made beforehand (`stores/sql/leaf_alloc.*.sql`) with `SELECT, INSERT,
///   UPDATE` granted on it; a give back that can neither create nor write it fails, which
///   only leaves the range's gap (never an ID twice).
/// * `give_back_intent` (SQL): records one give back under its token unless the token is
///   recorded already. Parameters: the token, the tag, the new `max_id`, the expected one.
/// * `give_back` (Redis): `KEYS[1]` the tag's counter, `KEYS[2]` a marker key unique to this
///   give back (`give_back_marker`), `ARGV[1]` the expected value, `ARGV[2]` the new one;
///   sets the counter to the new value if it still holds the expected one; answers 1 if it
///   did, else 0. The marker makes the script safe to run twice (a client library that
///   resends a command whose reply was lost): the second run finds the marker and changes
///   nothing, even if other processes' allocations brought the counter back up to the
///   expected value meanwhile. It lives an hour, in the counter's cluster slot.
/// * `give_back_marker` (Redis): the marker key: `<key>` is the counter's key, `<token>` a
///   random token the adapter makes for each give back.
/// * `writable` (SQL): whether the server connected to takes writes, asked once on every
///   new connection by the stores and the lease registries (of every language) before
///   anything is written through it. One row, one integer column: 1 = writable, 0 = not
///   (PostgreSQL: a standby in recovery, or `transaction_read_only` on; MySQL/MariaDB:
///   `@@global.read_only` set). Asked explicitly because MySQL/MariaDB lets a user with
///   `SUPER` (`READ ONLY ADMIN`) write to a read-only server: a replica would take the write
///   and lose it, or diverge, at the next failover. With several hosts in the URL the
///   adapter connects to them in order and keeps the first that answers 1.
/// * `read_only_errors` (SQL): not a statement: the error codes (space-separated) with which
///   the server refuses a write because it is read-only (PostgreSQL's SQLSTATE 25006,
///   `read_only_sql_transaction`; MySQL/MariaDB 1290, `ER_OPTION_PREVENTS_STATEMENT` for
///   `--read-only`, and 1836, `ER_READ_ONLY_MODE`). An adapter that gets one reports the
///   call as failed on a read-only server (nothing is issued from it) and drops the
///   connection, so the next call connects to a writable host.
/// * `ensure_tag` (SQL): creates a tag's row unless it has one (an existing row is left as
///   it is). Parameters: the tag, its first `max_id`, its step, a description (or NULL);
///   one row changed when it was created.
/// * `create_table` (SQL): Leaf's table as Leaf ships it, unless it exists.
pub const STATEMENTS: &[(&str, &str, &str)] = &[
    (
        "postgres",
        "allocate",
        "UPDATE {table} SET max_id = max_id + COALESCE(?::bigint, step), update_time = now() \
         WHERE biz_tag = ? RETURNING max_id, COALESCE(?::bigint, step::bigint), step::bigint",
    ),
    (
        "postgres",
        "allocate_residue",
        "UPDATE {table} SET max_id = max_id + COALESCE(?::bigint, step), update_time = now() \
         WHERE biz_tag = ? RETURNING max_id, COALESCE(?::bigint, step::bigint), step::bigint, \
         delta::bigint, remainder::bigint",
    ),
    (
        "postgres",
        "residue_columns",
        "SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = current_schema() \
         AND table_name = ?::text AND column_name IN ('delta', 'remainder')",
    ),
    (
        "postgres",
        "give_back_table",
        "CREATE TABLE IF NOT EXISTS {table}_give_back (token VARCHAR(64) NOT NULL PRIMARY KEY, \
         biz_tag VARCHAR(128) NOT NULL, max_id BIGINT NOT NULL, expected_max_id BIGINT NOT NULL, \
         applied SMALLINT NOT NULL DEFAULT 0, \
         created TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP)",
    ),
    (
        "postgres",
        "give_back_intent",
        "INSERT INTO {table}_give_back (token, biz_tag, max_id, expected_max_id) \
         VALUES (?, ?, ?, ?) ON CONFLICT (token) DO NOTHING",
    ),
    (
        "postgres",
        "give_back",
        "WITH g AS (UPDATE {table}_give_back SET applied = 1 WHERE token = ? AND applied = 0 \
         RETURNING biz_tag, max_id, expected_max_id) \
         UPDATE {table} t SET max_id = g.max_id, update_time = now() FROM g \
         WHERE t.biz_tag = g.biz_tag AND t.max_id = g.expected_max_id",
    ),
    (
        "postgres",
        "ensure_tag",
        "INSERT INTO {table} (biz_tag, max_id, step, description) VALUES (?, ?, ?, ?) \
         ON CONFLICT (biz_tag) DO NOTHING",
    ),
    (
        "postgres",
        "create_table",
        "CREATE TABLE IF NOT EXISTS {table} (biz_tag VARCHAR(128) NOT NULL PRIMARY KEY, \
         max_id BIGINT NOT NULL DEFAULT 1, step INTEGER NOT NULL, \
         description VARCHAR(256) DEFAULT NULL, \
         update_time TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP)",
    ),
    (
        "postgres",
        "writable",
        "SELECT CASE WHEN pg_is_in_recovery() OR current_setting('transaction_read_only') = 'on' \
         THEN 0 ELSE 1 END",
    ),
    ("postgres", "read_only_errors", "25006"),
    (
        "mysql",
        "row_step",
        "SELECT step FROM {table} WHERE biz_tag = ?",
    ),
    (
        "mysql",
        "allocate",
        "UPDATE {table} SET max_id = LAST_INSERT_ID(max_id + ?) WHERE biz_tag = ?",
    ),
    (
        "mysql",
        "allocated",
        "SELECT CAST(LAST_INSERT_ID() AS CHAR), step FROM {table} WHERE biz_tag = ?",
    ),
    (
        "mysql",
        "allocated_residue",
        "SELECT CAST(LAST_INSERT_ID() AS CHAR), step, delta, remainder FROM {table} \
         WHERE biz_tag = ?",
    ),
    (
        "mysql",
        "residue_columns",
        "SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = DATABASE() \
         AND table_name = ? AND column_name IN ('delta', 'remainder')",
    ),
    (
        "mysql",
        "give_back_table",
        "CREATE TABLE IF NOT EXISTS `{table}_give_back` (`token` varchar(64) NOT NULL, \
         `biz_tag` varchar(128) NOT NULL, `max_id` bigint(20) NOT NULL, \
         `expected_max_id` bigint(20) NOT NULL, `applied` smallint(6) NOT NULL DEFAULT 0, \
         `created` timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP, \
         PRIMARY KEY (`token`)) ENGINE=InnoDB",
    ),
    (
        "mysql",
        "give_back_intent",
        "INSERT IGNORE INTO {table}_give_back (token, biz_tag, max_id, expected_max_id) \
         VALUES (?, ?, ?, ?)",
    ),
    (
        "mysql",
        "give_back",
        "UPDATE {table} t JOIN {table}_give_back g ON g.token = ? AND g.applied = 0 \
         AND g.biz_tag = t.biz_tag AND t.max_id = g.expected_max_id \
         SET t.max_id = g.max_id, g.applied = 1",
    ),
    (
        "mysql",
        "ensure_tag",
        "INSERT IGNORE INTO {table} (biz_tag, max_id, step, description) VALUES (?, ?, ?, ?)",
    ),
    (
        "mysql",
        "create_table",
        "CREATE TABLE IF NOT EXISTS `{table}` (`biz_tag` varchar(128) NOT NULL DEFAULT '', \
         `max_id` bigint(20) NOT NULL DEFAULT '1', `step` int(11) NOT NULL, \
         `description` varchar(256) DEFAULT NULL, \
         `update_time` timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP, \
         PRIMARY KEY (`biz_tag`)) ENGINE=InnoDB",
    ),
    (
        "mysql",
        "writable",
        "SELECT CASE WHEN CAST(@@global.read_only AS CHAR) IN ('0', 'OFF') THEN 1 ELSE 0 END",
    ),
    ("mysql", "read_only_errors", "1290 1836"),
    (
        "redis",
        "allocate",
        "if redis.call('EXISTS', KEYS[1]) == 0 then return redis.error_reply('NOTAG') end \
         return tostring(redis.call('INCRBY', KEYS[1], ARGV[1]))",
    ),
    ("redis", "key", "segflake:leaf_alloc:<tag>"),
    ("redis", "residue_key", "segflake:leaf_alloc_residue"),
    (
        "redis",
        "give_back",
        "if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end \
         if not redis.call('SET', KEYS[2], '1', 'NX', 'EX', '3600') then return 0 end \
         redis.call('SET', KEYS[1], ARGV[2]) return 1",
    ),
    ("redis", "give_back_marker", "{<key>}:given_back:<token>"),
];

/// The Redis marker key of one give back on the counter `key` (see `give_back_marker`).
pub fn redis_give_back_marker(key: &str, token: &str) -> String {
    statement("redis", "give_back_marker", "")
        .unwrap_or_default()
        .replace("<key>", key)
        .replace("<token>", token)
}

/// The text of `call` for `store`, with `{table}` replaced by `table`.
pub fn statement(store: &str, call: &str, table: &str) -> Option<String> {
    STATEMENTS
        .iter()
        .find(|(s, c, _)| *s == store && *c == call)
        .map(|(_, _, text)| text.replace("{table}", table))
}

/// Whether `code` (a PostgreSQL SQLSTATE, a MySQL/MariaDB error number) is one with which
/// `store`'s server refuses a write because it is read-only (`read_only_errors`).
pub fn is_read_only_error(store: &str, code: &str) -> bool {
    statement(store, "read_only_errors", "")
        .is_some_and(|codes| codes.split_whitespace().any(|c| c == code))
}

/// `?` placeholders numbered as PostgreSQL's drivers take them (`$1`, `$2`, ...).
pub fn numbered(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len() + 8);
    let mut n = 0;
    for c in sql.chars() {
        if c == '?' {
            n += 1;
            out.push_str(&format!("${n}"));
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sql_statements_have_their_placeholders_and_no_other_question_mark_or_percent() {
        let placeholders = [
            ("allocate", 3),
            ("allocate_residue", 3),
            ("residue_columns", 1),
            ("give_back", 1),
            ("give_back_table", 0),
            ("give_back_intent", 4),
            ("row_step", 1),
            ("allocated", 1),
            ("allocated_residue", 1),
            ("ensure_tag", 4),
            ("create_table", 0),
            ("writable", 0),
        ];
        let sql_statements = STATEMENTS
            .iter()
            .filter(|(s, c, _)| *s != "redis" && *c != "read_only_errors");
        for (store, call, text) in sql_statements {
            let sql = statement(store, call, "ids").unwrap();
            let want = placeholders.iter().find(|(c, _)| c == call).unwrap().1;
            let want = if (*store, *call) == ("mysql", "allocate") {
                2
            } else {
                want
            };
            assert_eq!(sql.matches('?').count(), want, "{store} {call}: {sql}");
            assert!(!sql.contains('%'), "{sql}");
            assert_eq!(
                text.contains("{table}"),
                !["residue_columns", "writable"].contains(call),
                "{text}"
            );
        }
        for (store, _, _) in STATEMENTS {
            assert!(["postgres", "mysql", "redis"].contains(store));
        }
        for store in ["postgres", "mysql"] {
            // The give back goes through the marker table, keyed by the give back's token.
            let apply = statement(store, "give_back", "ids").unwrap();
            assert!(apply.contains("ids_give_back"), "{apply}");
            assert!(apply.contains("token = ?"), "{apply}");
            assert!(apply.contains("applied = 0"), "{apply}");
            let intent = statement(store, "give_back_intent", "ids").unwrap();
            assert!(intent.starts_with("INSERT "), "{intent}");
            assert!(intent.contains("ids_give_back"), "{intent}");
            let table = statement(store, "give_back_table", "ids").unwrap();
            assert!(table.starts_with("CREATE TABLE IF NOT EXISTS "), "{table}");
            assert!(table.contains("ids_give_back"), "{table}");
        }
        assert!(is_read_only_error("postgres", "25006"));
        assert!(is_read_only_error("mysql", "1290"));
        assert!(is_read_only_error("mysql", "1836"));
        assert!(!is_read_only_error("postgres", "40001"));
        assert!(!is_read_only_error("mysql", "1205"));
        assert!(!is_read_only_error("redis", "25006"));
        assert_eq!(numbered("a = ? AND b = ?"), "a = $1 AND b = $2".to_string());
        assert_eq!(
            redis_give_back_marker("segflake:leaf_alloc:order", "t1"),
            "{segflake:leaf_alloc:order}:given_back:t1"
        );
    }

    /// Whitespace collapsed, none inside parentheses' edges: the schema files' layout.
    fn squeeze(sql: &str) -> String {
        let words: Vec<&str> = sql.split_whitespace().collect();
        words.join(" ").replace("( ", "(").replace(" )", ")")
    }

    #[test]
    fn the_schema_files_create_the_give_back_table_the_stores_create() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../stores/sql/");
        for store in ["postgres", "mysql"] {
            let file = std::fs::read_to_string(format!("{root}leaf_alloc.{store}.sql")).unwrap();
            let table = statement(store, "give_back_table", "leaf_alloc").unwrap();
            assert!(
                squeeze(&file).contains(&squeeze(&table)),
                "stores/sql/leaf_alloc.{store}.sql lacks {table}"
            );
        }
    }
}
