-- Leaf's segment table, as Meituan Leaf ships it (PostgreSQL spelling).
-- segflake uses an existing table as it is: a row's max_id is the end of the last range
-- handed out; allocation is one statement: UPDATE ... SET max_id = max_id + ? RETURNING.
-- `step` is the tag's own step, as in Leaf: a tag's first allocation after start uses it,
-- and it is the floor of the dynamic step that later allocations ask for (up to max_step).
-- Stores made with use_row_step off ignore it.
-- Durability: keep synchronous_commit = on (the default): with it off, acknowledged
-- allocations can be lost in a crash and the same range handed out twice.
CREATE TABLE IF NOT EXISTS leaf_alloc (
    biz_tag     VARCHAR(128) NOT NULL PRIMARY KEY,
    max_id      BIGINT       NOT NULL DEFAULT 1,
    step        INTEGER      NOT NULL,
    description VARCHAR(256) DEFAULT NULL,
    update_time TIMESTAMP    NOT NULL DEFAULT CURRENT_TIMESTAMP
);
-- segflake's give backs: a generator that closes gives back the IDs it fetched and did not
-- issue. Each give back is recorded here under a random token, then applied at most once
-- (max_id lowered only if nobody allocated since), so a statement resent after a lost
-- reply never lowers max_id a second time. The stores create this table on their first
-- give back; a database user without CREATE on the schema needs it made beforehand, with
-- SELECT, INSERT and UPDATE granted on it (without it the IDs are not given back: a gap).
CREATE TABLE IF NOT EXISTS leaf_alloc_give_back (
    token           VARCHAR(64)  NOT NULL PRIMARY KEY,
    biz_tag         VARCHAR(128) NOT NULL,
    max_id          BIGINT       NOT NULL,
    expected_max_id BIGINT       NOT NULL,
    applied         SMALLINT     NOT NULL DEFAULT 0,
    created         TIMESTAMP    NOT NULL DEFAULT CURRENT_TIMESTAMP
);
