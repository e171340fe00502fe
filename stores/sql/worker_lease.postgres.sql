-- Worker-ID leases (PostgreSQL). One row per worker ID ever claimed: the owner token of
-- the process holding it, the lease's expiry on the database's clock, and the time mark no
-- ID of that worker ID has exceeded (it only grows while held, survives release and
-- expiry, and a new holder starts above it). Keep synchronous_commit = on.
CREATE TABLE IF NOT EXISTS segflake_worker_lease (
    worker_id   INTEGER      NOT NULL PRIMARY KEY,
    owner       VARCHAR(160) DEFAULT NULL,
    expires_at  TIMESTAMPTZ(3) DEFAULT NULL,
    mark_ms     BIGINT       NOT NULL DEFAULT 0,
    reported_ms BIGINT       DEFAULT NULL,
    reported_at TIMESTAMPTZ(3) DEFAULT NULL
);
-- Owner tokens are a label of up to 128 bytes, '#' and 16 hex digits (tables made with
-- VARCHAR(64) are widened).
ALTER TABLE segflake_worker_lease ALTER COLUMN owner TYPE VARCHAR(160);
-- uid-generator's table, kept as the audit trail: a row per claim, PORT = worker_id@owner.
CREATE TABLE IF NOT EXISTS worker_node (
    id          BIGSERIAL    NOT NULL PRIMARY KEY,
    host_name   VARCHAR(64)  NOT NULL,
    port        VARCHAR(64)  NOT NULL,
    type        INTEGER      NOT NULL,
    launch_date DATE         NOT NULL,
    modified    TIMESTAMP    NOT NULL,
    created     TIMESTAMP    NOT NULL
);
