//! What the segment stores send to their databases beyond the allocation itself, decided
//! here and carried by every adapter (the CLI's, Python's and Node's stores).
//!
//! SQL uses `?` placeholders (adapters write their driver's) and `{table}` for the table
//! (Leaf's `leaf_alloc`, or the name the store was given, checked by the adapter). Redis
//! scripts take the tag's key as `KEYS[1]`.

/// `(store, call, text)`. The calls:
/// * `give_back`: [`crate::SegmentStore::give_back`]: sets the tag's `max_id` to the first
///   argument if it is still the third (SQL: `max_id, biz_tag, expected_max_id`). Redis:
///   `KEYS[1]` the tag's counter, `KEYS[2]` a marker key unique to this give back
///   (`give_back_marker`), `ARGV[1]` the expected value, `ARGV[2]` the new one; answers 1
///   if it did, else 0. The marker makes the script safe to run twice (a client library
///   that resends a command whose reply was lost): the second run finds the marker and
///   changes nothing, even if other processes' allocations brought the counter back up to
///   the expected value meanwhile. It lives an hour, in the counter's cluster slot.
/// * `give_back_marker` (Redis): the marker key: `<key>` is the counter's key, `<token>` a
///   random token the adapter makes for each give back.
pub const STATEMENTS: &[(&str, &str, &str)] = &[
    (
        "postgres",
        "give_back",
        "UPDATE {table} SET max_id = ?, update_time = now() WHERE biz_tag = ? AND max_id = ?",
    ),
    (
        "mysql",
        "give_back",
        "UPDATE {table} SET max_id = ? WHERE biz_tag = ? AND max_id = ?",
    ),
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
    fn every_sql_statement_has_its_three_placeholders() {
        for (store, call, _) in STATEMENTS.iter().filter(|(s, _, _)| *s != "redis") {
            let sql = statement(store, call, "ids").unwrap();
            assert_eq!(sql.matches('?').count(), 3, "{sql}");
            assert!(sql.starts_with("UPDATE ids SET max_id = ?"), "{sql}");
        }
        assert_eq!(numbered("a = ? AND b = ?"), "a = $1 AND b = $2".to_string());
        assert_eq!(
            redis_give_back_marker("segflake:leaf_alloc:order", "t1"),
            "{segflake:leaf_alloc:order}:given_back:t1"
        );
    }
}
