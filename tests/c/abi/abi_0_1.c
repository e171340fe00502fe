/* ABI test: a program written for libsegflake 0.1, compiled against the 0.1 header saved
 * here (tests/c/abi/segflake-0.1.h, include/segflake.h as of 0.1) and linked to the current
 * shared library. The frozen structs (options, layout spec and info, stats, store callback)
 * must keep working exactly. scripts/test-c.sh runs it natively and under valgrind.
 * Ends with "N passed, N failed". */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "segflake-0.1.h"

static int passed, failed;

#define EXPECT(cond)                                                                     \
    do {                                                                                 \
        if (cond) {                                                                      \
            passed++;                                                                    \
        } else {                                                                         \
            failed++;                                                                    \
            printf("FAIL - %s:%d: %s (last error: %s)\n", __FILE__, __LINE__, #cond,     \
                   segflake_last_error_message());                                       \
        }                                                                                \
    } while (0)

typedef struct {
    pthread_mutex_t lock;
    uint64_t max_id;
    int released;
    int fail;
} store_ctx;

static segflake_status allocate(void *ctx, const char *tag, uint64_t step,
                                segflake_allocation *out, char *error_buf, size_t cap) {
    store_ctx *s = (store_ctx *)ctx;
    (void)tag;
    pthread_mutex_lock(&s->lock);
    if (s->fail) {
        pthread_mutex_unlock(&s->lock);
        snprintf(error_buf, cap, "database down");
        return SEGFLAKE_STORE_ERROR;
    }
    s->max_id += step;
    out->max_id = s->max_id;
    out->step = step;
    pthread_mutex_unlock(&s->lock);
    return SEGFLAKE_OK;
}

static void release(void *ctx) { ((store_ctx *)ctx)->released++; }

static uint64_t fixed_clock(void *ctx) { return *(const uint64_t *)ctx; }

static void snowflakes(void) {
    segflake_layout_spec spec;
    segflake_layout *layout = NULL, *copy = NULL;
    segflake_layout_info info;
    segflake_snowflake_options o;
    segflake_snowflake *g = NULL;
    segflake_decoded d;
    uint64_t now = 1767225600000ull, id = 0, id2 = 0, hwm = 0;

    EXPECT(segflake_layout_spec_preset("sonyflake", &spec) == SEGFLAKE_OK);
    EXPECT(spec.time_bits == 39 && spec.order == SEGFLAKE_ORDER_TIME_SEQUENCE_WORKER);
    spec.worker_bits = 12;
    spec.sequence_bits = 12;
    EXPECT(segflake_layout_new_at(&spec, now, &layout) == SEGFLAKE_OK);
    EXPECT(segflake_layout_get_info(layout, &info) == SEGFLAKE_OK);
    EXPECT(info.spec.worker_bits == 12 && info.total_bits == 63 && info.max_worker_id == 4095);
    EXPECT(info.has_js_safe_until && info.js_safe_until_ms > info.spec.epoch_ms);
    spec.time_bits = 64;
    EXPECT(segflake_layout_new(&spec, &copy) == SEGFLAKE_INVALID_LAYOUT && copy == NULL);

    EXPECT(segflake_snowflake_options_init(&o, 4095) == SEGFLAKE_OK);
    EXPECT(o.max_drift_ms == SEGFLAKE_DEFAULT_MAX_DRIFT_MS && o.layout == NULL);
    o.layout = layout;
    o.clock = fixed_clock;
    o.clock_ctx = &now;
    o.sequence_start = SEGFLAKE_SEQUENCE_START_RANDOM;
    o.has_not_before_ms = true;
    o.not_before_ms = now - 1000;
    EXPECT(segflake_snowflake_new(&o, &g) == SEGFLAKE_OK);
    segflake_layout_free(layout); /* the generator copied it */
    EXPECT(segflake_snowflake_next(g, &id) == SEGFLAKE_OK);
    EXPECT(segflake_snowflake_next(g, &id2) == SEGFLAKE_OK && id2 > id);
    EXPECT(segflake_snowflake_decode(g, id, &d) == SEGFLAKE_OK);
    EXPECT(d.worker_id == 4095 && d.timestamp_ms == now);
    EXPECT(segflake_snowflake_high_water_mark_ms(g, &hwm) == SEGFLAKE_OK && hwm == now);
    EXPECT(segflake_snowflake_layout(g, &copy) == SEGFLAKE_OK);
    EXPECT(segflake_layout_get_info(copy, &info) == SEGFLAKE_OK && info.spec.worker_bits == 12);
    segflake_layout_free(copy);
    segflake_snowflake_free(g);

    /* An epoch override, and refusals with their 0.1 statuses. */
    EXPECT(segflake_snowflake_options_init(&o, 7) == SEGFLAKE_OK);
    o.has_epoch_ms = true;
    o.epoch_ms = 1735689600000ull;
    EXPECT(segflake_snowflake_new(&o, &g) == SEGFLAKE_OK);
    EXPECT(segflake_snowflake_next(g, &id) == SEGFLAKE_OK);
    EXPECT(segflake_snowflake_decode(g, id, &d) == SEGFLAKE_OK && d.worker_id == 7);
    segflake_snowflake_free(g);
    g = NULL;
    o.worker_id = 1024;
    EXPECT(segflake_snowflake_new(&o, &g) == SEGFLAKE_WORKER_ID_OUT_OF_RANGE && g == NULL);
    o.worker_id = 1;
    o.max_drift_ms = 3600001;
    EXPECT(segflake_snowflake_new(&o, &g) == SEGFLAKE_INVALID_ARGUMENT);
    EXPECT(strstr(segflake_last_error_message(), "max_drift_ms") != NULL);
    o.max_drift_ms = 0;
    o.sequence_start = 9;
    EXPECT(segflake_snowflake_new(&o, &g) == SEGFLAKE_INVALID_ARGUMENT && g == NULL);
}

static void segments(void) {
    store_ctx ctx;
    segflake_segment_store store;
    segflake_segment_options o;
    segflake_segment_generator *g = NULL;
    segflake_segment_tag *tag = NULL;
    segflake_segment_engine *e = NULL;
    segflake_segment_stats st;
    segflake_allocation a;
    uint64_t id = 0, ids[3], step = 0;
    bool wanted = false, ready = false;

    pthread_mutex_init(&ctx.lock, NULL);
    ctx.max_id = 1;
    ctx.released = 0;
    ctx.fail = 0;
    store.allocate = allocate;
    store.ctx = &ctx;
    store.release = release;
    EXPECT(segflake_segment_options_init(&o) == SEGFLAKE_OK);
    EXPECT(o.step == 1000 && o.max_step == 1000000 && o.dynamic_step && o.prefetch_percent == 10 &&
           o.retry_backoff_ms == 1000 && o.wait_timeout_ms == 1000 && o.fetch_threads == 1);
    o.prefetch_percent = 101;
    EXPECT(segflake_segment_generator_new(&store, &o, &g) == SEGFLAKE_INVALID_ARGUMENT);
    EXPECT(strstr(segflake_last_error_message(), "prefetch_percent") != NULL && g == NULL);
    EXPECT(ctx.released == 0);
    o.prefetch_percent = 10;
    o.step = 100;
    o.dynamic_step = false;
    o.wait_timeout_ms = 5000;
    o.fetch_threads = 2;
    EXPECT(segflake_segment_generator_new(&store, &o, &g) == SEGFLAKE_OK);
    EXPECT(segflake_segment_next(g, "orders", &id) == SEGFLAKE_OK && id == 1);
    EXPECT(segflake_segment_next_n(g, "orders", ids, 3) == SEGFLAKE_OK && ids[0] == 2 && ids[2] == 4);
    EXPECT(segflake_segment_get_stats(g, "orders", &st) == SEGFLAKE_OK);
    EXPECT(st.current_start == 1 && st.current_end == 101 && st.position == 5 && st.remaining == 96);
    EXPECT(st.step == 100 && st.issued == 4 && st.failures == 0 && !st.has_last_error);
    EXPECT(st.has_last_fetch_latency && st.last_error[0] == '\0');
    EXPECT(segflake_segment_tag_new(g, "orders", &tag) == SEGFLAKE_OK);
    EXPECT(segflake_segment_tag_next(tag, &id) == SEGFLAKE_OK && id == 5);
    EXPECT(segflake_segment_tag_get_stats(tag, &st) == SEGFLAKE_OK && st.position == 6);
    segflake_segment_tag_free(tag);
    segflake_segment_generator_free(g);
    EXPECT(ctx.released == 1);

    /* A failing store: the cause reaches the stats struct, cut to its buffer. */
    ctx.fail = 1;
    o.wait_timeout_ms = 200;
    o.fetch_threads = 1;
    store.release = NULL;
    EXPECT(segflake_segment_generator_new(&store, &o, &g) == SEGFLAKE_OK);
    EXPECT(segflake_segment_next(g, "t", &id) == SEGFLAKE_SEGMENTS_EXHAUSTED);
    EXPECT(strstr(segflake_last_error_message(), "database down") != NULL);
    EXPECT(segflake_segment_get_stats(g, "t", &st) == SEGFLAKE_OK);
    EXPECT(st.has_last_error && strstr(st.last_error, "database down") != NULL);
    EXPECT(st.failures >= 1 && st.remaining == 0);
    segflake_segment_generator_free(g);

    /* The engine with 0.1 options. */
    o.step = 10;
    EXPECT(segflake_segment_engine_new("e", &o, &e) == SEGFLAKE_OK);
    EXPECT(segflake_segment_engine_begin_fetch(e, 0, &step, &wanted) == SEGFLAKE_OK && wanted);
    a.max_id = 10;
    a.step = step;
    EXPECT(step == 10 && segflake_segment_engine_complete_fetch(e, 1, &a, NULL) == SEGFLAKE_OK);
    EXPECT(segflake_segment_engine_try_next(e, &id, &ready) == SEGFLAKE_OK && ready && id == 0);
    EXPECT(segflake_segment_engine_get_stats(e, 2, &st) == SEGFLAKE_OK && st.remaining == 9);
    segflake_segment_engine_free(e);
    pthread_mutex_destroy(&ctx.lock);
}

static void serials(void) {
    segflake_serial_options o;
    segflake_serial *s = NULL;
    segflake_serial_parts p;
    uint64_t now = 1744545600000ull; /* 2025-04-13T12:00:00Z */
    uint64_t v = 0;

    EXPECT(segflake_serial_options_init(&o) == SEGFLAKE_OK);
    EXPECT(o.sequence_digits == 4 && o.worker_digits == 0 && !o.has_last);
    o.worker_digits = 1;
    o.worker_id = 7;
    o.utc_offset_minutes = 480;
    o.clock = fixed_clock;
    o.clock_ctx = &now;
    EXPECT(segflake_serial_new(&o, &s) == SEGFLAKE_OK);
    EXPECT(segflake_serial_next(s, &v) == SEGFLAKE_OK);
    EXPECT(segflake_serial_decode(s, v, &p) == SEGFLAKE_OK);
    EXPECT(p.date == 250413200000ull && p.worker_id == 7 && p.unix_seconds == now / 1000);
    segflake_serial_free(s);
    s = NULL;
    o.worker_digits = 4;
    EXPECT(segflake_serial_new(&o, &s) == SEGFLAKE_INVALID_ARGUMENT && s == NULL);
    EXPECT(strstr(segflake_last_error_message(), "worker_digits") != NULL);
}

int main(void) {
    snowflakes();
    segments();
    serials();
    printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
