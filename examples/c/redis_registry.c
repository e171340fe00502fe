/* A worker-ID registry on Redis for segflake_snowflake_new_leased, with hiredis: the four
 * callbacks send the core's Lua scripts (segflake_registry_statement), so C processes share
 * one registry with Python, Node and CLI processes; on a server with replicas a renewal
 * counts once every replica acknowledged it (ROLE, WAIT). Also the C lease worker of the
 * scenario tests:
 *
 *   redis_registry --registry redis://HOST:PORT/DB --out FILE --summary FILE [--count N]
 *                  [--worker-bits B] [--lease-ttl-ms MS] [--preferred-worker-id N]
 *                  [--max-peer-skew-ms MS] [--mark-ahead-ms MS]
 *                  [--clock-skew-allowance-ms MS] [--batch K] [--pause-ms MS]
 *
 * Build: gcc -std=c99 redis_registry.c -lsegflake -lhiredis -lpthread
 *
 * Writes one decimal ID per line to --out, counts typed errors and keeps going, releases
 * the worker ID on SIGTERM/SIGINT or after --count IDs, writes a JSON summary, and exits
 * with status 3 when start-up fails. */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <hiredis/hiredis.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "segflake.h"

/* One connection, used by one callback at a time (the library never overlaps a
 * generator's registry calls, even after a timeout; the lock keeps it safe anyway). Every
 * read and write is bounded by the timeout, so a dead connection fails the call in time. */
typedef struct {
    pthread_mutex_t lock;
    redisContext *c;
    char host[256];
    int port, db;
} redis_registry;

static bool connect_redis(redis_registry *r, char *err, size_t cap) {
    struct timeval timeout = {3, 0};
    if (r->c) return true;
    r->c = redisConnectWithTimeout(r->host, r->port, timeout);
    if (!r->c || r->c->err) {
        snprintf(err, cap, "cannot connect to Redis at %s:%d: %s", r->host, r->port,
                 r->c ? r->c->errstr : "out of memory");
        if (r->c) redisFree(r->c);
        r->c = NULL;
        return false;
    }
    redisSetTimeout(r->c, timeout);
    if (r->db != 0) {
        redisReply *reply = redisCommand(r->c, "SELECT %d", r->db);
        if (reply) freeReplyObject(reply);
    }
    return true;
}

/* EVAL of the core's script for `call` with `nkeys` keys then the arguments (argv[3..]).
 * Returns the reply, or NULL with a message (and a dropped connection) on failure. */
static redisReply *eval(redis_registry *r, const char *call, int argc, const char **argv,
                        char *err, size_t cap) {
    const char *script = segflake_registry_statement("redis", call);
    redisReply *reply;
    argv[0] = "EVAL";
    argv[1] = script;
    if (!connect_redis(r, err, cap)) return NULL;
    reply = redisCommandArgv(r->c, argc, argv, NULL);
    if (!reply) {
        snprintf(err, cap, "Redis %s failed: %s", call, r->c->errstr);
        redisFree(r->c);
        r->c = NULL;
        return NULL;
    }
    if (reply->type == REDIS_REPLY_ERROR) {
        snprintf(err, cap, "Redis %s failed: %s", call, reply->str);
        freeReplyObject(reply);
        return NULL;
    }
    return reply;
}

/* An integer reply as a mark: the scripts answer nil when another owner holds the worker
 * ID, and a negative integer when the registry has no record of it (data lost). */
static int64_t mark_of(const redisReply *reply) {
    if (reply->type != REDIS_REPLY_INTEGER) return SEGFLAKE_MARK_NOT_HELD;
    return reply->integer < 0 ? SEGFLAKE_MARK_LOST : (int64_t)reply->integer;
}

/* How many replicas are connected to the server now (ROLE; 0 if refused). */
static long long replicas_of(redis_registry *r) {
    long long n = 0;
    redisReply *role = redisCommand(r->c, "ROLE");
    if (role && role->type == REDIS_REPLY_ARRAY && role->elements >= 3 &&
        role->element[2]->type == REDIS_REPLY_ARRAY)
        n = (long long)role->element[2]->elements;
    if (role) freeReplyObject(role);
    return n;
}

#define KEYS(w)                                                                    \
    char worker_key[64], mark_key[64];                                             \
    snprintf(worker_key, sizeof worker_key, "{segflake}:worker:%llu", (unsigned long long)(w)); \
    snprintf(mark_key, sizeof mark_key, "{segflake}:mark:%llu", (unsigned long long)(w))

static segflake_status claim(void *ctx, uint64_t w, const char *owner, uint64_t ttl_ms,
                             int64_t *out_mark, char *err, size_t cap) {
    redis_registry *r = ctx;
    char ttl[24];
    KEYS(w);
    snprintf(ttl, sizeof ttl, "%llu", (unsigned long long)ttl_ms);
    const char *argv[] = {NULL, NULL, "2", worker_key, mark_key, owner, ttl};
    pthread_mutex_lock(&r->lock);
    redisReply *reply = eval(r, "claim", 7, argv, err, cap);
    pthread_mutex_unlock(&r->lock);
    if (!reply) return SEGFLAKE_REGISTRY_ERROR;
    *out_mark = mark_of(reply);
    freeReplyObject(reply);
    return SEGFLAKE_OK;
}

static segflake_status renew(void *ctx, uint64_t w, const char *owner, uint64_t ttl_ms,
                             uint64_t mark_ms, uint64_t reported_ms, int64_t *out_mark,
                             char *err, size_t cap) {
    redis_registry *r = ctx;
    char ttl[24], mark[24], reported[24], worker[24];
    KEYS(w);
    snprintf(ttl, sizeof ttl, "%llu", (unsigned long long)ttl_ms);
    snprintf(mark, sizeof mark, "%llu", (unsigned long long)mark_ms);
    snprintf(reported, sizeof reported, "%llu", (unsigned long long)reported_ms);
    snprintf(worker, sizeof worker, "%llu", (unsigned long long)w);
    const char *argv[] = {NULL, NULL, "3", worker_key, mark_key, "{segflake}:reports",
                          owner, ttl, mark, reported, worker};
    pthread_mutex_lock(&r->lock);
    redisReply *reply = eval(r, "renew", 11, argv, err, cap);
    if (!reply) {
        pthread_mutex_unlock(&r->lock);
        return SEGFLAKE_REGISTRY_ERROR;
    }
    *out_mark = mark_of(reply);
    freeReplyObject(reply);
    /* On a server with replicas, a renewal counts only once every connected replica has it
     * (WAIT on this connection, half the timeout): a promoted replica must never lack a
     * mark this holder issued under (the core's rule, as the other adapters follow it). */
    segflake_status status = SEGFLAKE_OK;
    long long replicas = *out_mark >= 0 ? replicas_of(r) : 0;
    if (replicas > 0) {
        redisReply *acked = redisCommand(r->c, "WAIT %lld %d", replicas, 1500);
        if (!acked || acked->type != REDIS_REPLY_INTEGER || acked->integer < replicas) {
            snprintf(err, cap,
                     "the renewal reached %lld of the %lld replicas within 1500 ms (WAIT); it "
                     "does not count until every replica has it",
                     acked && acked->type == REDIS_REPLY_INTEGER ? acked->integer : 0LL, replicas);
            status = SEGFLAKE_REGISTRY_ERROR;
        }
        if (acked) {
            freeReplyObject(acked);
        } else { /* the connection failed: the next call connects again */
            redisFree(r->c);
            r->c = NULL;
        }
    }
    pthread_mutex_unlock(&r->lock);
    return status;
}

static segflake_status release(void *ctx, uint64_t w, const char *owner, uint64_t mark_ms,
                               bool *out_released, char *err, size_t cap) {
    redis_registry *r = ctx;
    char mark[24], worker[24];
    KEYS(w);
    snprintf(mark, sizeof mark, "%llu", (unsigned long long)mark_ms);
    snprintf(worker, sizeof worker, "%llu", (unsigned long long)w);
    const char *argv[] = {NULL, NULL, "3", worker_key, mark_key, "{segflake}:reports",
                          owner, mark, worker};
    pthread_mutex_lock(&r->lock);
    redisReply *reply = eval(r, "release", 9, argv, err, cap);
    pthread_mutex_unlock(&r->lock);
    if (!reply) return SEGFLAKE_REGISTRY_ERROR;
    *out_released = reply->type == REDIS_REPLY_INTEGER && reply->integer == 1;
    freeReplyObject(reply);
    return SEGFLAKE_OK;
}

static segflake_status peers(void *ctx, segflake_peer *out, size_t capacity, size_t *out_count,
                             char *err, size_t cap) {
    redis_registry *r = ctx;
    const char *argv[] = {NULL, NULL, "1", "{segflake}:reports", "{segflake}:worker:"};
    size_t n = 0;
    pthread_mutex_lock(&r->lock);
    redisReply *reply = eval(r, "peers", 5, argv, err, cap);
    pthread_mutex_unlock(&r->lock);
    if (!reply) return SEGFLAKE_REGISTRY_ERROR;
    for (size_t i = 0; reply->type == REDIS_REPLY_ARRAY && i < reply->elements && n < capacity; i++) {
        redisReply *row = reply->element[i];
        if (row->type != REDIS_REPLY_ARRAY || row->elements != 3) continue;
        out[n].worker_id = (uint64_t)row->element[0]->integer;
        out[n].reported_ms = (uint64_t)row->element[1]->integer;
        out[n].age_ms = (uint64_t)row->element[2]->integer;
        n++;
    }
    *out_count = n;
    freeReplyObject(reply);
    return SEGFLAKE_OK;
}

static void free_registry(void *ctx) {
    redis_registry *r = ctx;
    if (r->c) redisFree(r->c);
    pthread_mutex_destroy(&r->lock);
    free(r);
}

static volatile sig_atomic_t stop;
static void on_signal(int sig) { (void)sig, stop = 1; }

static void sleep_ms(double ms) {
    long long ns = (long long)(ms * 1e6);
    struct timespec ts = {(time_t)(ns / 1000000000), (long)(ns % 1000000000)};
    nanosleep(&ts, NULL);
}

static const char *arg(int argc, char **argv, const char *name, const char *fallback) {
    for (int i = 1; i + 1 < argc; i += 2)
        if (strcmp(argv[i], name) == 0) return argv[i + 1];
    return fallback;
}

/* A record as a JSON object: each field as whichever type reads it (absent fields: null). */
static void write_record(FILE *f, const segflake_record *rec) {
    if (!rec) {
        fputs("null", f);
        return;
    }
    fputc('{', f);
    for (size_t i = 0; i < segflake_record_count(rec); i++) {
        const char *name = segflake_record_field_name(rec, i), *str = NULL;
        uint64_t u;
        int64_t n;
        double d;
        bool b, present = false;
        fprintf(f, "%s\"%s\": ", i ? ", " : "", name);
        if (segflake_record_get_u64(rec, name, &u, &present) == SEGFLAKE_OK) {
            if (present) fprintf(f, "%llu", (unsigned long long)u);
        } else if (segflake_record_get_i64(rec, name, &n, &present) == SEGFLAKE_OK) {
            if (present) fprintf(f, "%lld", (long long)n);
        } else if (segflake_record_get_bool(rec, name, &b, &present) == SEGFLAKE_OK) {
            if (present) fputs(b ? "true" : "false", f);
        } else if (segflake_record_get_f64(rec, name, &d, &present) == SEGFLAKE_OK) {
            if (present) fprintf(f, "%g", d);
        } else if (segflake_record_get_str(rec, name, &str, &present) == SEGFLAKE_OK && present) {
            fputc('"', f);
            for (; *str; str++) {
                if (*str == '"' || *str == '\\') fputc('\\', f);
                if ((unsigned char)*str >= 0x20) fputc(*str, f);
            }
            fputc('"', f);
        }
        if (!present) fputs("null", f);
    }
    fputc('}', f);
}

int main(int argc, char **argv) {
    const char *url = arg(argc, argv, "--registry", NULL), *out_path = arg(argc, argv, "--out", NULL),
               *summary_path = arg(argc, argv, "--summary", NULL);
    unsigned long long count = strtoull(arg(argc, argv, "--count", "0"), NULL, 10);
    unsigned long long batch = strtoull(arg(argc, argv, "--batch", "100"), NULL, 10);
    double pause = atof(arg(argc, argv, "--pause-ms", "1"));
    const char *preferred = arg(argc, argv, "--preferred-worker-id", NULL);
    redis_registry *r = calloc(1, sizeof *r);
    if (!url || !out_path || !summary_path || !r || batch == 0 || batch > 100000) {
        fprintf(stderr, "usage: %s --registry redis://HOST:PORT/DB --out FILE --summary FILE [...]\n", argv[0]);
        return 2;
    }
    if (sscanf(url, "redis://%255[^:/]:%d/%d", r->host, &r->port, &r->db) < 2) {
        fprintf(stderr, "--registry %s: expected redis://HOST:PORT[/DB]\n", url);
        return 2;
    }
    pthread_mutex_init(&r->lock, NULL);
    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);

    segflake_options *so = NULL, *layout = NULL, *lo = NULL;
    segflake_options_new("snowflake", &so);
    segflake_options_new("layout", &layout);
    segflake_options_set_str(layout, "preset", "twitter");
    segflake_options_set_u64(layout, "worker_bits", strtoull(arg(argc, argv, "--worker-bits", "3"), NULL, 10));
    segflake_options_set_options(so, "layout", layout);
    segflake_options_new("lease", &lo);
    segflake_options_set_u64(lo, "lease_ttl_ms", strtoull(arg(argc, argv, "--lease-ttl-ms", "3000"), NULL, 10));
    segflake_options_set_u64(lo, "max_peer_skew_ms", strtoull(arg(argc, argv, "--max-peer-skew-ms", "0"), NULL, 10));
    if (preferred) segflake_options_set_u64(lo, "preferred_worker_id", strtoull(preferred, NULL, 10));
    const char *ahead = arg(argc, argv, "--mark-ahead-ms", NULL);
    const char *skew = arg(argc, argv, "--clock-skew-allowance-ms", NULL);
    if (ahead) segflake_options_set_u64(lo, "mark_ahead_ms", strtoull(ahead, NULL, 10));
    if (skew) segflake_options_set_u64(lo, "clock_skew_allowance_ms", strtoull(skew, NULL, 10));

    /* The output file exists from the start, also for a process refused at start-up. */
    FILE *out = fopen(out_path, "a");
    if (!out) {
        fprintf(stderr, "cannot open %s\n", out_path);
        return 2;
    }
    segflake_registry registry = {claim, renew, release, peers, r, free_registry};
    segflake_snowflake *gen = NULL;
    segflake_status s = segflake_snowflake_new_leased(so, lo, &registry, NULL, &gen);
    segflake_options_free(so);
    segflake_options_free(layout);
    segflake_options_free(lo);
    if (s != SEGFLAKE_OK) {
        fprintf(stderr, "start-up failed: %s: %s\n", segflake_status_code(s), segflake_last_error_message());
        fclose(out);
        return 3;
    }

    uint64_t *ids = malloc(batch * sizeof *ids), workers[64], worker = 0;
    unsigned long long issued = 0, errors[32] = {0};
    size_t nworkers = 0;
    while (!stop && (count == 0 || issued < count)) {
        size_t n = (size_t)(count == 0 || count - issued > batch ? batch : count - issued);
        s = segflake_snowflake_next_n(gen, ids, n);
        if (s != SEGFLAKE_OK) {
            errors[s < 32 ? s : 0]++;
            sleep_ms(50);
            continue;
        }
        segflake_snowflake_worker_id(gen, &worker);
        bool seen = false;
        for (size_t i = 0; i < nworkers; i++) seen = seen || workers[i] == worker;
        if (!seen && nworkers < 64) workers[nworkers++] = worker;
        for (size_t i = 0; i < n; i++) fprintf(out, "%llu\n", (unsigned long long)ids[i]);
        fflush(out);
        issued += n;
        if (pause > 0) sleep_ms(pause);
    }
    fclose(out);
    free(ids);
    segflake_record *stats = NULL;
    segflake_snowflake_lease_stats(gen, &stats); /* before free: the last renewal's figures */
    segflake_snowflake_free(gen);                /* releases the worker ID */

    FILE *summary = fopen(summary_path, "w");
    fprintf(summary, "{\"lang\": \"c\", \"ids\": %llu, \"worker_ids\": [", issued);
    for (size_t i = 0; i < nworkers; i++) fprintf(summary, "%s%llu", i ? ", " : "", (unsigned long long)workers[i]);
    fprintf(summary, "], \"errors\": {");
    const char *sep = "";
    for (int k = 1; k < 32; k++) {
        if (!errors[k]) continue;
        /* The kind's name as the other languages write it: LEASE_EXPIRED -> LeaseExpired. */
        fprintf(summary, "%s\"", sep);
        bool upper = true;
        for (const char *c = segflake_status_code(k); *c; c++) {
            if (*c == '_') {
                upper = true;
                continue;
            }
            fputc(upper ? *c : tolower((unsigned char)*c), summary);
            upper = false;
        }
        fprintf(summary, "\": %llu", errors[k]);
        sep = ", ";
    }
    fprintf(summary, "}, \"stats\": ");
    write_record(summary, stats);
    fprintf(summary, "}\n");
    segflake_record_free(stats);
    fclose(summary);
    return 0;
}
