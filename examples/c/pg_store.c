/* Leaf-style segment IDs from C, with Leaf's leaf_alloc table on PostgreSQL through libpq.
 *
 *   cc -std=c99 -O2 pg_store.c $(pkg-config --cflags --libs segflake libpq) -lpthread -o pg_store
 *   ./pg_store --dsn postgresql://user@host/db --tag order --create --count 5
 *
 * Options:
 *   --dsn CONNINFO   libpq connection string or URL (default: $SEGFLAKE_PG_DSN, else libpq's
 *                    PG* environment variables)
 *   --tag T          the business tag (default "order")
 *   --create         create the leaf_alloc table and the tag's row if missing (max_id = 1)
 *   --count N        how many IDs (default 5)
 *   --step N         segment size (default 1000); --fixed-step turns Leaf's dynamic step off
 *   --out FILE       write the IDs to FILE as u64 little-endian instead of printing them
 *   --summary FILE   write counts and store latency as JSON
 *
 * The store runs one statement per allocation, atomic on its own:
 *   UPDATE leaf_alloc SET max_id = max_id + $1, update_time = now()
 *    WHERE biz_tag = $2 RETURNING max_id
 * on one connection guarded by a mutex (the library calls the store from its fetch
 * threads). A failed call drops the connection and the next call reconnects, so a
 * restarted server is picked up; meanwhile the generator serves its buffered segments and
 * then reports SEGFLAKE_SEGMENTS_EXHAUSTED with the database's message as the cause.
 * Durability: keep the server's synchronous_commit = on (the default). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libpq-fe.h>
#include <segflake.h>

typedef struct {
    pthread_mutex_t lock;
    char *conninfo;
    PGconn *conn;
    /* counters for the summary */
    uint64_t calls, failures;
    double total_ms, max_ms;
} pg_store;

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Copies libpq's message without its trailing newline. */
static void copy_message(char *buf, size_t cap, const char *prefix, const char *msg) {
    size_t n;
    snprintf(buf, cap, "%s%s", prefix, msg ? msg : "");
    n = strlen(buf);
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' ')) buf[--n] = '\0';
}

/* Opens the connection if needed; 0 on success. Called with the lock held. */
static int connect_locked(pg_store *s, char *error, size_t cap) {
    if (s->conn && PQstatus(s->conn) == CONNECTION_OK) return 0;
    if (s->conn) PQfinish(s->conn);
    s->conn = PQconnectdb(s->conninfo);
    if (PQstatus(s->conn) != CONNECTION_OK) {
        copy_message(error, cap, "PostgreSQL connection failed: ", PQerrorMessage(s->conn));
        PQfinish(s->conn);
        s->conn = NULL;
        return -1;
    }
    return 0;
}

static segflake_status pg_allocate(void *ctx, const char *tag, uint64_t step, segflake_allocation *out,
                                   char *error, size_t cap) {
    pg_store *s = (pg_store *)ctx;
    char step_text[24];
    const char *params[2];
    PGresult *res;
    segflake_status status = SEGFLAKE_STORE_ERROR;
    double t0 = now_ms(), dt;

    snprintf(step_text, sizeof step_text, "%" PRIu64, step);
    params[0] = step_text;
    params[1] = tag;
    pthread_mutex_lock(&s->lock);
    if (connect_locked(s, error, cap) != 0) goto done;
    res = PQexecParams(s->conn,
                       "UPDATE leaf_alloc SET max_id = max_id + $1::bigint, update_time = now() "
                       "WHERE biz_tag = $2 RETURNING max_id",
                       2, NULL, params, NULL, NULL, 0);
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        copy_message(error, cap, "leaf_alloc: ", PQerrorMessage(s->conn));
        /* The connection may be broken: drop it, the next call reconnects. */
        PQfinish(s->conn);
        s->conn = NULL;
    } else if (PQntuples(res) != 1) {
        snprintf(error, cap, "leaf_alloc has no row for biz_tag '%s': create it first", tag);
    } else {
        char *end = NULL;
        errno = 0;
        out->max_id = strtoull(PQgetvalue(res, 0, 0), &end, 10);
        if (errno != 0 || end == NULL || *end != '\0') {
            snprintf(error, cap, "leaf_alloc.max_id is not a number: '%s'", PQgetvalue(res, 0, 0));
        } else {
            out->step = step;
            status = SEGFLAKE_OK;
        }
    }
    PQclear(res);
done:
    dt = now_ms() - t0;
    if (status == SEGFLAKE_OK) s->calls++; else s->failures++;
    s->total_ms += dt;
    if (dt > s->max_ms) s->max_ms = dt;
    pthread_mutex_unlock(&s->lock);
    return status;
}

/* Creates Leaf's table and the tag's row (max_id = 1) unless they exist. */
static int ensure_tag(pg_store *s, const char *tag, uint64_t step) {
    char error[512], step_text[24];
    const char *params[2];
    PGresult *res;
    int rc = -1;
    snprintf(step_text, sizeof step_text, "%" PRIu64, step);
    params[0] = tag;
    params[1] = step_text;
    pthread_mutex_lock(&s->lock);
    if (connect_locked(s, error, sizeof error) != 0) {
        fprintf(stderr, "%s\n", error);
        goto done;
    }
    res = PQexec(s->conn,
                 "CREATE TABLE IF NOT EXISTS leaf_alloc (biz_tag VARCHAR(128) NOT NULL PRIMARY KEY, "
                 "max_id BIGINT NOT NULL DEFAULT 1, step INTEGER NOT NULL, description VARCHAR(256) DEFAULT NULL, "
                 "update_time TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP)");
    if (PQresultStatus(res) != PGRES_COMMAND_OK) {
        fprintf(stderr, "create table: %s", PQerrorMessage(s->conn));
        PQclear(res);
        goto done;
    }
    PQclear(res);
    res = PQexecParams(s->conn,
                       "INSERT INTO leaf_alloc (biz_tag, max_id, step) VALUES ($1, 1, $2::integer) "
                       "ON CONFLICT (biz_tag) DO NOTHING",
                       2, NULL, params, NULL, NULL, 0);
    if (PQresultStatus(res) != PGRES_COMMAND_OK)
        fprintf(stderr, "insert leaf_alloc row: %s", PQerrorMessage(s->conn));
    else
        rc = 0;
    PQclear(res);
done:
    pthread_mutex_unlock(&s->lock);
    return rc;
}

static void pg_release(void *ctx) {
    pg_store *s = (pg_store *)ctx;
    if (s->conn) PQfinish(s->conn);
    s->conn = NULL;
}

static int parse_u64(const char *text, uint64_t *out) {
    char *end = NULL;
    errno = 0;
    *out = strtoull(text, &end, 10);
    return errno == 0 && end && *end == '\0' && text[0] != '-' && text[0] != '\0';
}

int main(int argc, char **argv) {
    const char *dsn = getenv("SEGFLAKE_PG_DSN"), *tag = "order", *out_path = NULL, *summary_path = NULL;
    uint64_t count = 5, step = 1000, issued = 0, i;
    int create = 0, fixed_step = 0, a, exit_code = 0;
    pg_store store_ctx;
    segflake_segment_options opts;
    segflake_segment_store store;
    segflake_segment_generator *gen = NULL;
    segflake_segment_tag *handle = NULL;
    uint64_t *ids;
    double t0, elapsed;

    for (a = 1; a < argc; a++) {
        const char *arg = argv[a], *val = a + 1 < argc ? argv[a + 1] : NULL;
        if (strcmp(arg, "--create") == 0) { create = 1; continue; }
        if (strcmp(arg, "--fixed-step") == 0) { fixed_step = 1; continue; }
        if (!val) { fprintf(stderr, "%s needs a value (see the comment at the top of pg_store.c)\n", arg); return 2; }
        a++;
        if (strcmp(arg, "--dsn") == 0) dsn = val;
        else if (strcmp(arg, "--tag") == 0) tag = val;
        else if (strcmp(arg, "--out") == 0) out_path = val;
        else if (strcmp(arg, "--summary") == 0) summary_path = val;
        else if (strcmp(arg, "--count") == 0 && parse_u64(val, &count) && count > 0) continue;
        else if (strcmp(arg, "--step") == 0 && parse_u64(val, &step) && step > 0) continue;
        else { fprintf(stderr, "bad option or value: %s %s\n", arg, val); return 2; }
    }

    memset(&store_ctx, 0, sizeof store_ctx);
    pthread_mutex_init(&store_ctx.lock, NULL);
    store_ctx.conninfo = (char *)(dsn ? dsn : "");
    if (create && ensure_tag(&store_ctx, tag, step) != 0) return 1;

    segflake_segment_options_init(&opts);
    opts.step = step;
    if (fixed_step) {
        opts.max_step = step;
        opts.dynamic_step = false;
    }
    store.allocate = pg_allocate;
    store.ctx = &store_ctx;
    store.release = pg_release;
    if (segflake_segment_generator_new(&store, &opts, &gen) != SEGFLAKE_OK ||
        segflake_segment_tag_new(gen, tag, &handle) != SEGFLAKE_OK) {
        fprintf(stderr, "segflake: %s\n", segflake_last_error_message());
        segflake_segment_generator_free(gen);
        return 1;
    }

    ids = malloc(count * sizeof *ids);
    if (!ids) { fprintf(stderr, "out of memory\n"); return 1; }
    t0 = now_ms();
    for (i = 0; i < count; i++) {
        segflake_status st = segflake_segment_tag_next(handle, &ids[i]);
        if (st != SEGFLAKE_OK) {
            /* SEGFLAKE_SEGMENTS_EXHAUSTED: the store failed and the buffers ran dry. */
            fprintf(stderr, "segflake: %s (%s)\n", segflake_last_error_message(), segflake_status_code(st));
            exit_code = 1;
            break;
        }
        issued++;
    }
    elapsed = (now_ms() - t0) / 1e3;

    if (out_path) {
        FILE *f = fopen(out_path, "wb");
        if (!f || fwrite(ids, sizeof *ids, issued, f) != issued || fclose(f) != 0) {
            fprintf(stderr, "cannot write %s\n", out_path);
            exit_code = 1;
        }
    } else {
        for (i = 0; i < issued; i++) printf("%" PRIu64 "\n", ids[i]);
    }
    segflake_segment_tag_free(handle);
    segflake_segment_generator_free(gen); /* the store's release closes the connection */
    if (summary_path) {
        FILE *f = fopen(summary_path, "w");
        if (f) {
            fprintf(f,
                    "{\"lang\":\"c\",\"db\":\"pg\",\"issued\":%" PRIu64 ",\"elapsed_s\":%.3f,\"ids_per_s\":%.0f,"
                    "\"allocations\":%" PRIu64 ",\"store_failures\":%" PRIu64
                    ",\"alloc_ms_mean\":%.3f,\"alloc_ms_max\":%.3f}\n",
                    issued, elapsed, elapsed > 0 ? (double)issued / elapsed : 0.0, store_ctx.calls,
                    store_ctx.failures, store_ctx.total_ms / (double)(store_ctx.calls + store_ctx.failures ? store_ctx.calls + store_ctx.failures : 1),
                    store_ctx.max_ms);
            fclose(f);
        }
    }
    pthread_mutex_destroy(&store_ctx.lock);
    free(ids);
    return exit_code;
}
