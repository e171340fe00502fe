/* Throughput of libsegflake through the C ABI: bench/c/run.sh [ids-per-run]
 *
 * A 41/0/22-bit layout (4.2 billion IDs per second per generator) measures the library's
 * own cost. The twitter layout allows 4,096,000 per second; a run shorter than its 2-second
 * drift allowance borrows future ticks, so its figure is a burst rate, not a sustained one.
 * Most of the cost of `next` is the clock read (clock_gettime, about 50 ns on the test VM). */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "segflake.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static segflake_snowflake *make(const char *preset, unsigned seq_bits) {
    segflake_layout_spec spec;
    segflake_layout *l = NULL;
    segflake_snowflake_options o;
    segflake_snowflake *g = NULL;
    segflake_layout_spec_preset(preset, &spec);
    if (seq_bits) {
        spec.worker_bits = 0;
        spec.sequence_bits = seq_bits;
    }
    if (segflake_layout_new(&spec, &l) != SEGFLAKE_OK) goto fail;
    segflake_snowflake_options_init(&o, 0);
    o.layout = l;
    if (segflake_snowflake_new(&o, &g) != SEGFLAKE_OK) goto fail;
    segflake_layout_free(l);
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
    printf("| %-48s | %10.1f | %7.1f |\n", what, (double)n / secs / 1e6, secs * 1e9 / (double)n);
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 5000000;
    segflake_snowflake *wide = make("twitter", 22), *tw = make("twitter", 0);
    uint64_t *buf = (uint64_t *)malloc(4096 * sizeof *buf);
    double t;
    long i;
    uint64_t id;
    char text[SEGFLAKE_ENCODE_BUF_LEN];
    pthread_t th[2];
    arg_t args[2];

    printf("| %-48s | %10s | %7s |\n|%s|%s|%s|\n", "call (n = each row's count)", "M per s", "ns each",
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

    t = now_s();
    for (i = 0; i < n; i++) segflake_encode_base62((uint64_t)i * 7919u, text, sizeof text, NULL);
    report("encode_base62 into a caller buffer", n, now_s() - t);

    {
        segflake_segment_store store;
        segflake_segment_options o;
        segflake_segment_generator *seg = NULL;
        segflake_segment_tag *tag = NULL;
        store.allocate = mem_allocate;
        store.ctx = NULL;
        store.release = NULL;
        segflake_segment_options_init(&o);
        o.step = 100000;
        if (segflake_segment_generator_new(&store, &o, &seg) != SEGFLAKE_OK ||
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
    }

    free(buf);
    segflake_snowflake_free(wide);
    segflake_snowflake_free(tw);
    return 0;
}
