/* A C segment-ID process for the scenarios on MariaDB (libmariadb) or Redis (hiredis); the
 * PostgreSQL one is examples/c/pg_store.c. Same flags and output as pg_store:
 *   c_worker --db mysql|redis --tag T --count N [--step N] --out FILE --summary FILE
 * (fixed step: Leaf's dynamic step off). Connection settings come from SEGFLAKE_MYSQL_*
 * and SEGFLAKE_REDIS_URL (redis://HOST:PORT[/DB]).
 * MariaDB: UPDATE leaf_alloc SET max_id = LAST_INSERT_ID(max_id + ?) WHERE biz_tag = ?,
 *          then SELECT LAST_INSERT_ID(), on one connection (autocommit).
 * Redis:   INCRBY on the key segflake:leaf_alloc:<tag> inside a script that refuses a
 *          missing key (the same script as the Python and Node adapters). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <hiredis/hiredis.h>
#include <mysql.h>
#include <segflake.h>

typedef struct {
    pthread_mutex_t lock;
    int redis;
    MYSQL *my;
    redisContext *rc;
    uint64_t calls, failures;
    double total_ms, max_ms;
} store_ctx;

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static const char *env(const char *name) {
    const char *v = getenv(name);
    if (!v) {
        fprintf(stderr, "%s is not set\n", name);
        exit(2);
    }
    return v;
}

static int my_alloc(store_ctx *s, const char *tag, uint64_t step, uint64_t *max_id, char *err, size_t cap) {
    char sql[512], esc[300];
    MYSQL_RES *res;
    MYSQL_ROW row;
    if (!s->my) {
        unsigned int timeout = 5;
        s->my = mysql_init(NULL);
        mysql_options(s->my, MYSQL_OPT_CONNECT_TIMEOUT, &timeout);
        if (!mysql_real_connect(s->my, env("SEGFLAKE_MYSQL_HOST"), env("SEGFLAKE_MYSQL_USER"),
                                env("SEGFLAKE_MYSQL_PASSWORD"), env("SEGFLAKE_MYSQL_DB"),
                                (unsigned)atoi(env("SEGFLAKE_MYSQL_PORT")), NULL, 0)) {
            snprintf(err, cap, "MariaDB connection failed: %s", mysql_error(s->my));
            mysql_close(s->my);
            s->my = NULL;
            return -1;
        }
        mysql_autocommit(s->my, 1);
    }
    if (strlen(tag) > 128) {
        snprintf(err, cap, "tag longer than 128 characters");
        return -1;
    }
    mysql_real_escape_string(s->my, esc, tag, (unsigned long)strlen(tag));
    snprintf(sql, sizeof sql, "UPDATE leaf_alloc SET max_id = LAST_INSERT_ID(max_id + %" PRIu64 ") WHERE biz_tag = '%s'",
             step, esc);
    if (mysql_query(s->my, sql) != 0) goto broken;
    if (mysql_affected_rows(s->my) != 1) {
        snprintf(err, cap, "leaf_alloc has no row for biz_tag '%s'", tag);
        return -1;
    }
    if (mysql_query(s->my, "SELECT LAST_INSERT_ID()") != 0 || !(res = mysql_store_result(s->my))) goto broken;
    row = mysql_fetch_row(res);
    *max_id = row && row[0] ? strtoull(row[0], NULL, 10) : 0;
    mysql_free_result(res);
    return 0;
broken:
    snprintf(err, cap, "MariaDB: %s", mysql_error(s->my));
    mysql_close(s->my);
    s->my = NULL;
    return -1;
}

static const char *ALLOCATE =
    "if redis.call('EXISTS', KEYS[1]) == 0 then return redis.error_reply('NOTAG') end "
    "return tostring(redis.call('INCRBY', KEYS[1], ARGV[1]))";

static int redis_alloc(store_ctx *s, const char *tag, uint64_t step, uint64_t *max_id, char *err, size_t cap) {
    redisReply *r;
    char key[200], step_text[24];
    if (!s->rc) {
        char host[128] = "127.0.0.1";
        int port = 6379;
        struct timeval tv = {5, 0};
        sscanf(env("SEGFLAKE_REDIS_URL"), "redis://%127[^:/]:%d", host, &port);
        s->rc = redisConnectWithTimeout(host, port, tv);
        if (!s->rc || s->rc->err) {
            snprintf(err, cap, "Redis connection failed: %s", s->rc ? s->rc->errstr : "out of memory");
            if (s->rc) redisFree(s->rc);
            s->rc = NULL;
            return -1;
        }
        redisSetTimeout(s->rc, tv);
    }
    snprintf(key, sizeof key, "segflake:leaf_alloc:%s", tag);
    snprintf(step_text, sizeof step_text, "%" PRIu64, step);
    r = redisCommand(s->rc, "EVAL %s 1 %s %s", ALLOCATE, key, step_text);
    if (!r) {
        snprintf(err, cap, "Redis: %s", s->rc->errstr);
        redisFree(s->rc);
        s->rc = NULL;
        return -1;
    }
    if (r->type != REDIS_REPLY_STRING) {
        snprintf(err, cap, "Redis: %s", r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
        freeReplyObject(r);
        return -1;
    }
    *max_id = strtoull(r->str, NULL, 10);
    freeReplyObject(r);
    return 0;
}

static segflake_status allocate(void *ctx, const char *tag, uint64_t step, segflake_allocation *out, char *err,
                                size_t cap) {
    store_ctx *s = (store_ctx *)ctx;
    uint64_t max_id = 0;
    double t0 = now_ms(), dt;
    int rc;
    pthread_mutex_lock(&s->lock);
    rc = s->redis ? redis_alloc(s, tag, step, &max_id, err, cap) : my_alloc(s, tag, step, &max_id, err, cap);
    dt = now_ms() - t0;
    if (rc == 0) s->calls++; else s->failures++;
    s->total_ms += dt;
    if (dt > s->max_ms) s->max_ms = dt;
    pthread_mutex_unlock(&s->lock);
    if (rc != 0) return SEGFLAKE_STORE_ERROR;
    out->max_id = max_id;
    out->step = step;
    return SEGFLAKE_OK;
}

int main(int argc, char **argv) {
    const char *db = NULL, *tag = NULL, *out_path = NULL, *summary_path = NULL;
    uint64_t count = 0, step = 1000, issued = 0, i, n;
    store_ctx ctx;
    segflake_segment_options opts;
    segflake_segment_store store;
    segflake_segment_generator *gen = NULL;
    segflake_segment_tag *handle = NULL;
    uint64_t *ids;
    double t0, elapsed;
    FILE *f;
    int a;

    for (a = 1; a + 1 < argc; a += 2) {
        if (strcmp(argv[a], "--db") == 0) db = argv[a + 1];
        else if (strcmp(argv[a], "--tag") == 0) tag = argv[a + 1];
        else if (strcmp(argv[a], "--count") == 0) count = strtoull(argv[a + 1], NULL, 10);
        else if (strcmp(argv[a], "--step") == 0) step = strtoull(argv[a + 1], NULL, 10);
        else if (strcmp(argv[a], "--out") == 0) out_path = argv[a + 1];
        else if (strcmp(argv[a], "--summary") == 0) summary_path = argv[a + 1];
        else { fprintf(stderr, "unknown option %s\n", argv[a]); return 2; }
    }
    if (!db || !tag || !count || !step || !out_path || !summary_path ||
        (strcmp(db, "mysql") != 0 && strcmp(db, "redis") != 0)) {
        fprintf(stderr, "usage: c_worker --db mysql|redis --tag T --count N [--step N] --out F --summary F\n");
        return 2;
    }
    memset(&ctx, 0, sizeof ctx);
    pthread_mutex_init(&ctx.lock, NULL);
    ctx.redis = strcmp(db, "redis") == 0;
    segflake_segment_options_init(&opts);
    opts.step = step;
    opts.max_step = step;
    opts.dynamic_step = false;
    store.allocate = allocate;
    store.ctx = &ctx;
    store.release = NULL;
    if (segflake_segment_generator_new(&store, &opts, &gen) != SEGFLAKE_OK ||
        segflake_segment_tag_new(gen, tag, &handle) != SEGFLAKE_OK) {
        fprintf(stderr, "segflake: %s\n", segflake_last_error_message());
        return 1;
    }
    ids = malloc(count * sizeof *ids);
    if (!ids) return 1;
    t0 = now_ms();
    for (i = 0; i < count; i++) {
        segflake_status st = segflake_segment_tag_next(handle, &ids[i]);
        if (st != SEGFLAKE_OK) {
            fprintf(stderr, "segflake: %s (%s)\n", segflake_last_error_message(), segflake_status_code(st));
            return 1;
        }
        issued++;
    }
    elapsed = (now_ms() - t0) / 1e3;
    segflake_segment_tag_free(handle);
    segflake_segment_generator_free(gen);
    f = fopen(out_path, "wb");
    if (!f || fwrite(ids, sizeof *ids, issued, f) != issued || fclose(f) != 0) return 1;
    n = ctx.calls + ctx.failures;
    f = fopen(summary_path, "w");
    if (!f) return 1;
    fprintf(f,
            "{\"lang\":\"c\",\"db\":\"%s\",\"issued\":%" PRIu64 ",\"elapsed_s\":%.3f,\"ids_per_s\":%.0f,"
            "\"allocations\":%" PRIu64 ",\"store_failures\":%" PRIu64 ",\"alloc_ms_mean\":%.3f,\"alloc_ms_max\":%.3f}\n",
            db, issued, elapsed, elapsed > 0 ? (double)issued / elapsed : 0.0, ctx.calls, ctx.failures,
            n ? ctx.total_ms / (double)n : 0.0, ctx.max_ms);
    fclose(f);
    if (ctx.my) mysql_close(ctx.my);
    if (ctx.rc) redisFree(ctx.rc);
    free(ids);
    return 0;
}
