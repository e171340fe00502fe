/* Date serials from a shared Redis counter, with hiredis: the script callback sends the
 * core's serial script (segflake_registry_statement("redis", "serial")) on the key the
 * core names, so C processes count in the same keys as Python, Node and CLI processes, and
 * a host whose clock is too far off gets SEGFLAKE_CLOCK_SKEW instead of a repeated serial
 * (docs/serials.md). Also the C serial worker of the scenario tests:
 *
 *   redis_serial --url redis://HOST:PORT/DB --prefix P --seconds S --out FILE --summary FILE
 *                [--sequence-digits 6] [--max-behind-ms MS] [--max-ahead-ms MS] [--last N]
 *
 * Build: gcc -std=c99 redis_serial.c -lsegflake -lhiredis
 *
 * Issues serials for S seconds (u64 little-endian into --out), counts typed errors and
 * keeps going, and writes a JSON summary with `last`, the value to persist and pass back
 * as --last after a restart. */
#define _POSIX_C_SOURCE 200809L
#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "segflake.h"

typedef struct {
    redisContext *c;
    char host[256];
    int port, db;
    const char *prefix;
} redis_counter;

static bool connect_redis(redis_counter *r, char *err, size_t cap) {
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

/* The script callback: EVAL script 1 <prefix>:<key> args..., the three integers back. */
static segflake_status run_script(void *ctx, const char *key, const uint64_t *args, size_t nargs,
                                  uint64_t *out_reply, char *err, size_t cap) {
    redis_counter *r = ctx;
    char full_key[512], numbers[8][24];
    const char *argv[12] = {"EVAL", segflake_registry_statement("redis", "serial"), "1", full_key};
    size_t argc = 4;
    if (nargs > 8) {
        snprintf(err, cap, "%zu script arguments; this example passes at most 8", nargs);
        return SEGFLAKE_STORE_ERROR;
    }
    snprintf(full_key, sizeof full_key, "%s:%s", r->prefix, key);
    for (size_t i = 0; i < nargs; i++) {
        snprintf(numbers[i], sizeof numbers[i], "%" PRIu64, args[i]);
        argv[argc++] = numbers[i];
    }
    if (!connect_redis(r, err, cap)) return SEGFLAKE_STORE_ERROR;
    redisReply *reply = redisCommandArgv(r->c, (int)argc, argv, NULL);
    if (!reply) {
        snprintf(err, cap, "Redis EVAL failed: %s", r->c->errstr);
        redisFree(r->c);
        r->c = NULL;
        return SEGFLAKE_STORE_ERROR;
    }
    segflake_status status = SEGFLAKE_OK;
    if (reply->type == REDIS_REPLY_ERROR) {
        snprintf(err, cap, "Redis EVAL failed: %s", reply->str);
        status = SEGFLAKE_STORE_ERROR;
    } else if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 3) {
        snprintf(err, cap, "the serial script answered a reply of type %d; expected 3 integers",
                 reply->type);
        status = SEGFLAKE_STORE_ERROR;
    } else {
        for (size_t i = 0; i < 3; i++) {
            const redisReply *e = reply->element[i];
            if (e->type != REDIS_REPLY_INTEGER || e->integer < 0) {
                snprintf(err, cap, "the serial script answered a non-integer in place %zu", i);
                status = SEGFLAKE_STORE_ERROR;
                break;
            }
            out_reply[i] = (uint64_t)e->integer;
        }
    }
    freeReplyObject(reply);
    return status;
}

static const char *arg(int argc, char **argv, const char *name, const char *fallback) {
    for (int i = 1; i + 1 < argc; i += 2)
        if (strcmp(argv[i], name) == 0) return argv[i + 1];
    return fallback;
}

static double monotonic_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Prints `s` as a JSON string body (quotes and backslashes escaped, controls dropped). */
static void json_text(FILE *f, const char *s) {
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') fputc('\\', f);
        if ((unsigned char)*s >= 0x20) fputc(*s, f);
    }
}

int main(int argc, char **argv) {
    const char *url = arg(argc, argv, "--url", NULL), *out_path = arg(argc, argv, "--out", NULL);
    const char *summary_path = arg(argc, argv, "--summary", NULL);
    redis_counter r = {.c = NULL, .port = 6379, .db = 0};
    r.prefix = arg(argc, argv, "--prefix", "segflake");
    if (!url || !out_path || !summary_path ||
        sscanf(url, "redis://%255[^:/]:%d/%d", r.host, &r.port, &r.db) < 2) {
        fprintf(stderr, "usage: redis_serial --url redis://HOST:PORT[/DB] --prefix P --seconds S "
                        "--out FILE --summary FILE [--sequence-digits N] [--max-behind-ms MS] "
                        "[--max-ahead-ms MS] [--last N]\n");
        return 2;
    }
    double seconds = atof(arg(argc, argv, "--seconds", "1"));

    segflake_options *opts = NULL;
    segflake_serial *gen = NULL;
    const char *names[] = {"--sequence-digits", "--max-behind-ms", "--max-ahead-ms", "--last"};
    const char *keys[] = {"sequence_digits", "counter_max_behind_ms", "counter_max_ahead_ms", "last"};
    if (segflake_options_new("serial", &opts) != SEGFLAKE_OK) goto failed;
    if (segflake_options_set_u64(opts, "sequence_digits", 6) != SEGFLAKE_OK) goto failed;
    for (size_t i = 0; i < 4; i++) {
        const char *v = arg(argc, argv, names[i], NULL);
        if (v && segflake_options_set_u64(opts, keys[i], strtoull(v, NULL, 10)) != SEGFLAKE_OK)
            goto failed;
    }
    if (segflake_serial_new_with(opts, NULL, NULL, &gen) != SEGFLAKE_OK) goto failed;
    segflake_options_free(opts);
    opts = NULL;

    FILE *out = fopen(out_path, "wb");
    if (!out) {
        perror(out_path);
        return 1;
    }
    uint64_t issued = 0, out_of_order = 0, previous = 0, skew = 0, other = 0;
    char first_message[1024] = "";
    const char *first_code = NULL;
    double deadline = monotonic_s() + seconds;
    while (monotonic_s() < deadline) {
        uint64_t serial;
        segflake_status st = segflake_serial_next_with_script(gen, run_script, &r, &serial);
        if (st != SEGFLAKE_OK) {
            if (st == SEGFLAKE_CLOCK_SKEW) skew++;
            else other++;
            if (!first_code) {
                first_code = segflake_status_code(st);
                snprintf(first_message, sizeof first_message, "%s: %s", first_code,
                         segflake_last_error_message());
            }
            poll(NULL, 0, 50);
            continue;
        }
        if (serial <= previous) out_of_order++;
        previous = serial;
        fwrite(&serial, sizeof serial, 1, out); /* little-endian on the platforms tested */
        issued++;
    }
    fclose(out);
    uint64_t persisted = 0;
    segflake_serial_last(gen, &persisted);
    FILE *summary = fopen(summary_path, "w");
    if (!summary) {
        perror(summary_path);
        return 1;
    }
    fprintf(summary, "{\"issued\": %" PRIu64 ", \"errors\": {", issued);
    bool comma = false;
    if (skew) {
        fprintf(summary, "\"CLOCK_SKEW\": %" PRIu64, skew);
        comma = true;
    }
    if (other) fprintf(summary, "%s\"other\": %" PRIu64, comma ? ", " : "", other);
    fputs("}, \"messages\": [", summary);
    if (first_code) {
        fputc('"', summary);
        json_text(summary, first_message);
        fputc('"', summary);
    }
    fprintf(summary, "], \"out_of_order\": %" PRIu64 ", \"last\": %" PRIu64 "}\n", out_of_order,
            persisted);
    fclose(summary);
    segflake_serial_free(gen);
    if (r.c) redisFree(r.c);
    return 0;

failed:
    fprintf(stderr, "redis_serial: %s\n", segflake_last_error_message());
    segflake_options_free(opts);
    return 3;
}
