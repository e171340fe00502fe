/* Throughput of libsegflake through the C ABI: bench/c/run.sh [ids-per-run]
 *
 * A 41/0/22-bit layout (4.2 billion IDs per second per generator) measures the library's
 * own cost. The twitter layout allows 4,096,000 per second; a run shorter than its 2-second
 * drift allowance borrows future ticks, so its figure is a burst rate, not a sustained one.
 * Most of the cost of `next` is the clock read (clock_gettime(CLOCK_REALTIME), 23-25 ns of
 * its 32-34 ns here).
 *
 * The peer (peer_snowflake.c) is the Twitter snowflake a C programmer writes by hand: C has
 * no package registry to take one from. It and segflake run at the twitter layout on 1
 * thread and on 2 threads sharing one generator; segflake strict (max_drift_ms = 0) waits
 * for the next millisecond as the peer does, segflake default is timed once its 2 s drift
 * borrow is spent. After the table, a duplicate check of both on 2 threads. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "segflake.h"
#include "peer_snowflake.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t unix_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static segflake_snowflake *make(const char *preset, unsigned seq_bits, uint64_t max_drift_ms) {
    segflake_options *layout = NULL, *opts = NULL;
    segflake_snowflake *g = NULL;
    if (segflake_options_new("layout", &layout) != SEGFLAKE_OK ||
        segflake_options_set_str(layout, "preset", preset) != SEGFLAKE_OK)
        goto fail;
    if (seq_bits && (segflake_options_set_u64(layout, "worker_bits", 0) != SEGFLAKE_OK ||
                     segflake_options_set_u64(layout, "sequence_bits", seq_bits) != SEGFLAKE_OK))
        goto fail;
    if (segflake_options_new("snowflake", &opts) != SEGFLAKE_OK ||
        segflake_options_set_options(opts, "layout", layout) != SEGFLAKE_OK ||
        /* worker 1, like the peer (the 41/0/22 layout has no worker field) */
        segflake_options_set_u64(opts, "worker_id", seq_bits ? 0 : 1) != SEGFLAKE_OK ||
        segflake_options_set_u64(opts, "max_drift_ms", max_drift_ms) != SEGFLAKE_OK ||
        segflake_snowflake_new_with(opts, NULL, NULL, &g) != SEGFLAKE_OK)
        goto fail;
    segflake_options_free(layout);
    segflake_options_free(opts);
    return g;
fail:
    fprintf(stderr, "%s\n", segflake_last_error_message());
    exit(1);
}

/* An in-memory Leaf row: the store call itself costs next to nothing. */
static pthread_mutex_t row_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t row_max_id = 1;

static segflake_status mem_allocate(void *ctx, const char *tag, uint64_t step,
                                    segflake_allocation *out, char *err, size_t cap) {
    (void)ctx;
    (void)tag;
    (void)err;
    (void)cap;
    pthread_mutex_lock(&row_lock);
    row_max_id += step;
    out->max_id = row_max_id;
    out->step = step;
    pthread_mutex_unlock(&row_lock);
    return SEGFLAKE_OK;
}

typedef struct {
    const segflake_snowflake *g;
    long n;
} arg_t;

static void *spin(void *p) {
    arg_t *a = (arg_t *)p;
    uint64_t id;
    long i;
    for (i = 0; i < a->n; i++)
        if (segflake_snowflake_next(a->g, &id) != SEGFLAKE_OK) exit(1);
    return NULL;
}

static void report(const char *what, long n, double secs) {
    printf("| %-56s | %10.3f | %7.1f |\n", what, (double)n / secs / 1e6, secs * 1e9 / (double)n);
}

/* One generator behind a function pointer, so that segflake and the peer are called alike;
 * `out`, when set, receives the thread's IDs (the duplicate check). */
typedef int (*next_fn)(const void *ctx, uint64_t *id);

static int call_segflake(const void *g, uint64_t *id) {
    return segflake_snowflake_next((const segflake_snowflake *)g, id) == SEGFLAKE_OK ? 0 : -1;
}

static int call_peer(const void *ctx, uint64_t *id) {
    (void)ctx;
    return peer_snowflake_next(id);
}

typedef struct {
    next_fn next;
    const void *ctx;
    long n;
    uint64_t *out;
} run_t;

static void *run_one(void *p) {
    run_t *r = (run_t *)p;
    uint64_t id;
    long i;
    for (i = 0; i < r->n; i++) {
        if (r->next(r->ctx, &id) != 0) {
            fprintf(stderr, "a generator refused to issue an ID (clock moved backwards?)\n");
            exit(1);
        }
        if (r->out) r->out[i] = id;
    }
    return NULL;
}

/* n IDs from `threads` threads (1 or 2) sharing one generator; returns the wall time. */
static double run_shared(next_fn next, const void *ctx, long n, int threads, uint64_t **out) {
    run_t r[2];
    pthread_t th[2];
    double t;
    int k;
    for (k = 0; k < threads; k++) {
        r[k].next = next;
        r[k].ctx = ctx;
        r[k].n = n / threads;
        r[k].out = out ? out[k] : NULL;
    }
    t = now_s();
    if (threads == 1) {
        run_one(&r[0]);
    } else {
        for (k = 0; k < threads; k++) pthread_create(&th[k], NULL, run_one, &r[k]);
        for (k = 0; k < threads; k++) pthread_join(th[k], NULL);
    }
    return now_s() - t;
}

/* Draws IDs until the generator has borrowed its whole drift allowance (or 10 s passed), so
 * that what follows is timed at the sustained rate. */
static void spend_borrow(const segflake_snowflake *g, uint64_t max_drift_ms) {
    uint64_t id, mark = 0;
    double start = now_s();
    long i;
    do {
        for (i = 0; i < 4096; i++) segflake_snowflake_next(g, &id);
        segflake_snowflake_high_water_mark_ms(g, &mark);
    } while (mark + 1 < unix_ms() + max_drift_ms && now_s() - start < 10.0);
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Takes `n` IDs from 2 threads sharing the generator; prints the duplicates among them and
 * the times an ID was not above the same thread's previous one. */
static void dup_check(const char *what, next_fn next, const void *ctx, long n) {
    uint64_t *ids = (uint64_t *)malloc((size_t)n * sizeof *ids);
    uint64_t *parts[2];
    long i, half = n / 2, dups = 0, order = 0;
    if (!ids) exit(1);
    parts[0] = ids;
    parts[1] = ids + half;
    run_shared(next, ctx, 2 * half, 2, parts);
    for (i = 1; i < 2 * half; i++)
        if (i != half && ids[i] <= ids[i - 1]) order++;
    qsort(ids, (size_t)(2 * half), sizeof *ids, cmp_u64);
    for (i = 1; i < 2 * half; i++)
        if (ids[i] == ids[i - 1]) dups++;
    printf("%s: %ld duplicates, %ld order errors in %ld IDs from 2 threads sharing one\n", what,
           dups, order, 2 * half);
    free(ids);
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 5000000;
    segflake_snowflake *wide = make("twitter", 22, 2000), *tw = make("twitter", 0, 2000);
    segflake_snowflake *strict = make("twitter", 0, 0), *strict2 = make("twitter", 0, 0);
    uint64_t *buf = (uint64_t *)malloc(4096 * sizeof *buf);
    double t;
    long i;
    uint64_t id;
    char text[SEGFLAKE_ENCODE_BUF_LEN];
    pthread_t th[2];
    arg_t args[2];

    printf("| %-56s | %10s | %7s |\n|%s|%s|%s|\n", "call (n = each row's count)", "M per s", "ns each",
           "---", "---:", "---:");
    {
        struct timespec ts;
        unsigned long long sink = 0;
        t = now_s();
        for (i = 0; i < n; i++) {
            clock_gettime(CLOCK_REALTIME, &ts);
            sink += (unsigned long long)ts.tv_nsec;
        }
        report(sink ? "floor: clock_gettime(CLOCK_REALTIME)" : "floor", n, now_s() - t);
    }

    t = now_s();
    for (i = 0; i < n; i++) segflake_snowflake_next(wide, &id);
    report("next, 1 thread, 41/0/22 layout", n, now_s() - t);

    t = now_s();
    for (i = 0; i < n; i += 4096) segflake_snowflake_next_n(wide, buf, 4096);
    report("next_n(4096), 1 thread, 41/0/22 layout", n, now_s() - t);

    args[0].g = args[1].g = wide;
    args[0].n = args[1].n = n / 2;
    t = now_s();
    pthread_create(&th[0], NULL, spin, &args[0]);
    pthread_create(&th[1], NULL, spin, &args[1]);
    pthread_join(th[0], NULL);
    pthread_join(th[1], NULL);
    report("next, 2 threads sharing one, 41/0/22 layout", n, now_s() - t);

    t = now_s();
    for (i = 0; i < n; i++) segflake_snowflake_next(tw, &id);
    report("next, 1 thread, twitter layout (burst)", n, now_s() - t);

    /* The twitter layout beside the hand-written peer (4,096,000 IDs/s is the ceiling). */
    if (peer_snowflake_init(1) != 0) return 1;
    report("next, 1 thread, twitter, strict (drift 0)", n, run_shared(call_segflake, strict, n, 1, NULL));
    report("next, 2 threads sharing one, twitter, strict", n,
           run_shared(call_segflake, strict2, n, 2, NULL));
    spend_borrow(tw, 2000);
    report("next, 1 thread, twitter, default, sustained", n, run_shared(call_segflake, tw, n, 1, NULL));
    spend_borrow(tw, 2000);
    report("next, 2 threads sharing one, twitter, default, sustained", n,
           run_shared(call_segflake, tw, n, 2, NULL));
    report("peer: hand-written snowflake, 1 thread, twitter", n, run_shared(call_peer, NULL, n, 1, NULL));
    report("peer: hand-written snowflake, 2 threads sharing one", n,
           run_shared(call_peer, NULL, n, 2, NULL));

    t = now_s();
    for (i = 0; i < n; i++) segflake_encode_base62((uint64_t)i * 7919u, text, sizeof text, NULL);
    report("encode_base62 into a caller buffer", n, now_s() - t);

    {
        segflake_segment_store store;
        segflake_options *o = NULL;
        segflake_segment_generator *seg = NULL;
        segflake_segment_tag *tag = NULL;
        store.allocate = mem_allocate;
        store.ctx = NULL;
        store.release = NULL;
        if (segflake_options_new("segment", &o) != SEGFLAKE_OK ||
            segflake_options_set_u64(o, "step", 100000) != SEGFLAKE_OK ||
            segflake_segment_generator_new_with(&store, o, &seg) != SEGFLAKE_OK ||
            segflake_segment_tag_new(seg, "order", &tag) != SEGFLAKE_OK) {
            fprintf(stderr, "%s\n", segflake_last_error_message());
            return 1;
        }
        t = now_s();
        for (i = 0; i < n; i++) segflake_segment_next(seg, "order", &id);
        report("segment next(tag), 1 thread, in-memory store", n, now_s() - t);
        t = now_s();
        for (i = 0; i < n; i++) segflake_segment_tag_next(tag, &id);
        report("segment tag handle next, 1 thread", n, now_s() - t);
        segflake_segment_tag_free(tag);
        segflake_segment_generator_free(seg);
        segflake_options_free(o);
    }

    printf("\n");
    dup_check("segflake next, twitter, strict", call_segflake, strict, 1000000);
    dup_check("segflake next, twitter, default", call_segflake, tw, 1000000);
    dup_check("peer: hand-written snowflake", call_peer, NULL, 1000000);

    free(buf);
    segflake_snowflake_free(wide);
    segflake_snowflake_free(tw);
    segflake_snowflake_free(strict);
    segflake_snowflake_free(strict2);
    return 0;
}
