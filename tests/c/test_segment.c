/* The segment generator with a C store callback, and date serials with a C counter:
 * Leaf semantics, failing stores, overlapping or empty ranges, bounded waits, threads,
 * stats, close, release, every NULL pointer and bad option. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "json.h"

/* ---- a thread-safe in-memory store with failure switches --------------------------- */

typedef struct {
    pthread_mutex_t mu;
    struct {
        char tag[130];
        uint64_t max_id;
    } rows[8];
    size_t nrows;
    int fail;          /* fail with a message */
    int fail_silent;   /* fail without a message */
    int overlap;       /* hand out the previous range again */
    int zero_step;     /* claim a step of 0 */
    uint64_t last_max, last_step, calls;
    int released;
} mem_store;

static void mem_init(mem_store *s) {
    memset(s, 0, sizeof *s);
    pthread_mutex_init(&s->mu, NULL);
}

static void mem_set(mem_store *s, int *flag, int value) {
    pthread_mutex_lock(&s->mu);
    *flag = value;
    pthread_mutex_unlock(&s->mu);
}

static segflake_status mem_allocate(void *ctx, const char *tag, uint64_t step,
                                    segflake_allocation *out, char *err, size_t cap) {
    mem_store *s = (mem_store *)ctx;
    size_t i;
    segflake_status rc = SEGFLAKE_OK;
    pthread_mutex_lock(&s->mu);
    s->calls++;
    if (s->fail) {
        snprintf(err, cap, "database is down (test store, call %llu)", (ull)s->calls);
        rc = SEGFLAKE_STORE_ERROR;
    } else if (s->fail_silent) {
        rc = SEGFLAKE_STORE_ERROR;
    } else if (s->overlap && s->last_step) {
        out->max_id = s->last_max;
        out->step = s->last_step;
    } else {
        for (i = 0; i < s->nrows && strcmp(s->rows[i].tag, tag) != 0; i++) {
        }
        if (i == s->nrows && s->nrows < 8) {
            /* A fresh Leaf row: max_id = 1. */
            snprintf(s->rows[i].tag, sizeof s->rows[i].tag, "%s", tag);
            s->rows[i].max_id = 1;
            s->nrows++;
        }
        s->rows[i].max_id += step;
        out->max_id = s->rows[i].max_id;
        out->step = s->zero_step ? 0 : step;
        s->last_max = out->max_id;
        s->last_step = step;
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

static void mem_release(void *ctx) {
    mem_store *s = (mem_store *)ctx;
    pthread_mutex_lock(&s->mu);
    s->released++;
    pthread_mutex_unlock(&s->mu);
}

static segflake_segment_generator *seg_new(mem_store *s, uint64_t step, uint32_t prefetch,
                                           uint64_t wait_ms) {
    segflake_segment_store store;
    segflake_segment_options o;
    segflake_segment_generator *g = NULL;
    store.allocate = mem_allocate;
    store.ctx = s;
    store.release = mem_release;
    CHECK_OK(segflake_segment_options_init(&o));
    o.step = step;
    o.dynamic_step = false;
    o.prefetch_percent = prefetch;
    o.wait_timeout_ms = wait_ms;
    o.retry_backoff_ms = 0;
    CHECK_OK(segflake_segment_generator_new(&store, &o, &g));
    return g;
}

static double mono_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_ms(long ms) {
    struct timespec ts;
    ts.tv_sec = ms / 1000;
    ts.tv_nsec = (ms % 1000) * 1000000L;
    nanosleep(&ts, NULL);
}

/* Waits (at most 20 s: the suite also runs under valgrind, under qemu and beside other
 * work) until the tag's next segment is ready (the prefetch finished). */
static int wait_next_ready(segflake_segment_generator *g, const char *tag) {
    segflake_segment_stats st;
    for (double end = mono_s() + 20; mono_s() < end;) {
        if (segflake_segment_get_stats(g, tag, &st) == SEGFLAKE_OK && st.next_ready && !st.fetch_in_flight)
            return 1;
        sleep_ms(1);
    }
    return 0;
}

static void test_leaf_semantics(void) {
    mem_store s;
    segflake_segment_generator *g;
    segflake_segment_stats st;
    uint64_t id = 0, i;
    mem_init(&s);
    g = seg_new(&s, 2000, 10, 1000);
    if (!g) return;
    /* A fresh Leaf row (max_id 1) with step 2000 yields 1..=2000, then 2001... */
    for (i = 1; i <= 2000; i++) {
        CHECK_OK(segflake_segment_next(g, "order", &id));
        if (id != i) {
            CHECK_U64(id, i);
            break;
        }
    }
    CHECK_OK(segflake_segment_next(g, "order", &id));
    CHECK_U64(id, 2001);
    CHECK_OK(segflake_segment_get_stats(g, "order", &st));
    CHECK_U64(st.current_start, 2001);
    CHECK_U64(st.current_end, 4001);
    CHECK_U64(st.position, 2002);
    CHECK_U64(st.remaining, 1999);
    CHECK_U64(st.step, 2000);
    CHECK(st.fetches >= 2);
    CHECK_U64(st.failures, 0);
    CHECK(!st.has_last_error && st.last_error[0] == '\0');
    CHECK(st.has_last_fetch_latency);
    CHECK_U64(st.issued, 2001);
    /* Tags are independent. */
    CHECK_OK(segflake_segment_next(g, "user", &id));
    CHECK_U64(id, 1);
    segflake_segment_generator_free(g);
    CHECK_U64(s.released, 1);
    pthread_mutex_destroy(&s.mu);
}

static void test_batches_and_tag_handles(void) {
    mem_store s;
    segflake_segment_generator *g;
    segflake_segment_tag *t = NULL;
    segflake_segment_stats st;
    uint64_t ids[5000], id = 0;
    bool ready = false;
    size_t i;
    mem_init(&s);
    g = seg_new(&s, 1000, 10, 1000);
    if (!g) return;
    CHECK_OK(segflake_segment_next_n(g, "pay", ids, 2500));
    for (i = 0; i < 2500; i++) CHECK_U64(ids[i], i + 1);
    CHECK_OK(segflake_segment_tag_new(g, "pay", &t));
    if (t) {
        CHECK_OK(segflake_segment_tag_next(t, &id));
        CHECK_U64(id, 2501);
        CHECK_OK(segflake_segment_tag_next_n(t, ids, 5000));
        for (i = 0; i < 5000; i++) CHECK_U64(ids[i], 2502 + i);
        CHECK_OK(segflake_segment_tag_try_next(t, &id, &ready));
        if (ready) CHECK_U64(id, 7502);
        CHECK_OK(segflake_segment_tag_get_stats(t, &st));
        CHECK(st.issued >= 7501);
        CHECK_ERR(segflake_segment_tag_next_n(t, ids, 0), SEGFLAKE_INVALID_ARGUMENT);
        CHECK_MSG("1..=16777216");
    }
    CHECK_OK(segflake_segment_try_next(g, "pay", &id, &ready));
    CHECK(ready);
    CHECK_ERR(segflake_segment_next_n(g, "pay", ids, (size_t)SEGFLAKE_MAX_BATCH + 1),
              SEGFLAKE_INVALID_ARGUMENT);
    /* A handle outlives its generator and then reports CLOSED. */
    segflake_segment_generator_free(g);
    if (t) {
        CHECK_ERR(segflake_segment_tag_next(t, &id), SEGFLAKE_CLOSED);
        CHECK_MSG("closed");
    }
    segflake_segment_tag_free(t);
    CHECK_U64(s.released, 1);
    pthread_mutex_destroy(&s.mu);
}

static void test_failing_store_bounded_wait(void) {
    mem_store s;
    segflake_segment_generator *g;
    segflake_segment_stats st;
    uint64_t id = 0;
    double t0, waited;
    mem_init(&s);
    s.fail = 1;
    g = seg_new(&s, 100, 10, 300);
    if (!g) return;
    t0 = mono_s();
    CHECK_ERR(segflake_segment_next(g, "order", &id), SEGFLAKE_SEGMENTS_EXHAUSTED);
    waited = mono_s() - t0;
    CHECK_MSG("database is down (test store");
    CHECK_MSG("\"order\"");
    CHECK(waited < 10.0); /* bounded by the 300 ms wait, not a hang (slack for qemu) */
    CHECK_OK(segflake_segment_get_stats(g, "order", &st));
    CHECK(st.failures >= 1 && st.consecutive_failures >= 1);
    CHECK(st.has_last_error && strstr(st.last_error, "database is down") != NULL);
    /* The next call retries the store. */
    mem_set(&s, &s.fail, 0);
    CHECK_OK(segflake_segment_next(g, "order", &id));
    CHECK_U64(id, 1);
    /* A failure without a message gets one that names the status. */
    mem_set(&s, &s.fail_silent, 1);
    {
        uint64_t ids[100];
        segflake_status rc = SEGFLAKE_OK;
        int i;
        for (i = 0; i < 10 && rc == SEGFLAKE_OK; i++) rc = segflake_segment_next_n(g, "order", ids, 100);
        CHECK_U64(rc, SEGFLAKE_SEGMENTS_EXHAUSTED);
        CHECK_MSG("returned status 11 (STORE_ERROR) without a message");
    }
    segflake_segment_generator_free(g);
    pthread_mutex_destroy(&s.mu);
}

static void test_buffered_ids_outlive_the_store(void) {
    mem_store s;
    segflake_segment_generator *g;
    uint64_t id = 0, prev = 0, taken = 0;
    segflake_status rc = SEGFLAKE_OK;
    mem_init(&s);
    g = seg_new(&s, 100, 10, 200);
    if (!g) return;
    {
        /* Going past 10% of the first segment starts the prefetch of the next. */
        uint64_t first[11];
        CHECK_OK(segflake_segment_next_n(g, "order", first, 11));
        prev = first[10];
    }
    CHECK(wait_next_ready(g, "order"));
    mem_set(&s, &s.fail, 1);
    /* 89 left in the current segment and 100 in the ready next one keep flowing. */
    while ((rc = segflake_segment_next(g, "order", &id)) == SEGFLAKE_OK) {
        if (id <= prev) { CHECK(id > prev); break; }
        prev = id;
        if (++taken > 1000) break;
    }
    CHECK_U64(taken, 189);
    CHECK_U64(rc, SEGFLAKE_SEGMENTS_EXHAUSTED);
    CHECK_MSG("database is down");
    mem_set(&s, &s.fail, 0);
    CHECK_OK(segflake_segment_next(g, "order", &id));
    CHECK(id > prev);
    segflake_segment_generator_free(g);
    pthread_mutex_destroy(&s.mu);
}

static void test_overlapping_and_empty_ranges(void) {
    mem_store s;
    segflake_segment_generator *g;
    segflake_segment_stats st;
    uint64_t seen[400], id = 0;
    size_t n = 0, i, j;
    segflake_status rc = SEGFLAKE_OK;
    mem_init(&s);
    g = seg_new(&s, 100, 100, 200); /* fetch the next segment only when one is used up */
    if (!g) return;
    CHECK_OK(segflake_segment_next_n(g, "order", seen, 100)); /* 1..=100 */
    n = 100;
    mem_set(&s, &s.overlap, 1); /* the store hands out [1, 101) again */
    while (n < 400 && (rc = segflake_segment_next(g, "order", &id)) == SEGFLAKE_OK) seen[n++] = id;
    CHECK_U64(rc, SEGFLAKE_SEGMENTS_EXHAUSTED);
    CHECK_MSG("store contract violation");
    CHECK_MSG("overlaps");
    CHECK_OK(segflake_segment_get_stats(g, "order", &st));
    CHECK(st.failures >= 1);
    CHECK(strstr(st.last_error, "overlaps") != NULL);
    /* A step of 0 is refused too. */
    mem_set(&s, &s.overlap, 0);
    mem_set(&s, &s.zero_step, 1);
    CHECK_ERR(segflake_segment_next(g, "order", &id), SEGFLAKE_SEGMENTS_EXHAUSTED);
    CHECK_MSG("step 0");
    /* A good range afterwards is accepted: never an ID issued twice. */
    mem_set(&s, &s.zero_step, 0);
    while (n < 400 && segflake_segment_next(g, "order", &id) == SEGFLAKE_OK) seen[n++] = id;
    CHECK(n == 400);
    for (i = 0; i < n; i++)
        for (j = i + 1; j < n; j++)
            if (seen[i] == seen[j]) {
                t_fail(__FILE__, __LINE__, "ID %llu issued twice", (ull)seen[i]);
                i = n;
                break;
            }
    segflake_segment_generator_free(g);
    pthread_mutex_destroy(&s.mu);
}

#define SEG_THREADS 4
#define SEG_PER_THREAD 20000

typedef struct {
    segflake_segment_generator *g;
    segflake_segment_tag *t;
    uint64_t *ids;
    int errors, decreases;
} seg_arg;

static void *seg_worker(void *p) {
    seg_arg *a = (seg_arg *)p;
    uint64_t prev = 0;
    size_t i;
    for (i = 0; i < SEG_PER_THREAD; i++) {
        segflake_status rc = (i % 2) ? segflake_segment_next(a->g, "order", &a->ids[i])
                                     : segflake_segment_tag_next(a->t, &a->ids[i]);
        if (rc != SEGFLAKE_OK) a->errors++;
        if (a->ids[i] <= prev) a->decreases++;
        prev = a->ids[i];
    }
    return NULL;
}

static int cmp_u64(const void *x, const void *y) {
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return a < b ? -1 : a > b;
}

static void test_threads_share_a_tag(void) {
    mem_store s;
    segflake_segment_generator *g;
    segflake_segment_tag *t = NULL;
    pthread_t th[SEG_THREADS];
    seg_arg args[SEG_THREADS];
    uint64_t *all = (uint64_t *)calloc((size_t)SEG_THREADS * SEG_PER_THREAD, sizeof *all);
    size_t i, dups = 0;
    mem_init(&s);
    g = seg_new(&s, 1000, 10, 2000);
    if (!g || !all) goto done;
    CHECK_OK(segflake_segment_tag_new(g, "order", &t));
    for (i = 0; i < SEG_THREADS; i++) {
        args[i].g = g;
        args[i].t = t;
        args[i].ids = all + i * SEG_PER_THREAD;
        args[i].errors = args[i].decreases = 0;
        CHECK(pthread_create(&th[i], NULL, seg_worker, &args[i]) == 0);
    }
    for (i = 0; i < SEG_THREADS; i++) {
        CHECK(pthread_join(th[i], NULL) == 0);
        CHECK(args[i].errors == 0);
        CHECK(args[i].decreases == 0);
    }
    qsort(all, (size_t)SEG_THREADS * SEG_PER_THREAD, sizeof *all, cmp_u64);
    for (i = 1; i < (size_t)SEG_THREADS * SEG_PER_THREAD; i++) dups += all[i] == all[i - 1];
    CHECK_U64(dups, 0);
    CHECK(all[0] >= 1);
done:
    segflake_segment_tag_free(t);
    segflake_segment_generator_free(g);
    free(all);
    pthread_mutex_destroy(&s.mu);
}

static void test_close_and_release(void) {
    mem_store s;
    segflake_segment_generator *g;
    segflake_segment_store store;
    segflake_segment_options o;
    uint64_t id;
    bool ready;
    mem_init(&s);
    g = seg_new(&s, 100, 10, 1000);
    if (!g) return;
    CHECK_OK(segflake_segment_next(g, "a", &id));
    CHECK_OK(segflake_segment_generator_close(g));
    CHECK_OK(segflake_segment_generator_close(g)); /* idempotent */
    CHECK_ERR(segflake_segment_next(g, "a", &id), SEGFLAKE_CLOSED);
    CHECK_ERR(segflake_segment_next(g, "b", &id), SEGFLAKE_CLOSED);
    CHECK_ERR(segflake_segment_try_next(g, "a", &id, &ready), SEGFLAKE_CLOSED);
    CHECK_U64(s.released, 0);
    segflake_segment_generator_free(g);
    CHECK_U64(s.released, 1);

    /* A generator that was never created does not release the caller's context. */
    store.allocate = mem_allocate;
    store.ctx = &s;
    store.release = mem_release;
    CHECK_OK(segflake_segment_options_init(&o));
    o.fetch_threads = 0;
    g = NULL;
    CHECK_ERR(segflake_segment_generator_new(&store, &o, &g), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_MSG("fetch_threads");
    CHECK(g == NULL);
    CHECK_U64(s.released, 1);
    /* NULL options mean the defaults; no release function is fine. */
    store.release = NULL;
    CHECK_OK(segflake_segment_generator_new(&store, NULL, &g));
    CHECK_OK(segflake_segment_next(g, "z", &id));
    CHECK_U64(id, 1);
    segflake_segment_generator_free(g);
    CHECK_U64(s.released, 1);
    pthread_mutex_destroy(&s.mu);
}

static void test_segment_bad_input(void) {
    mem_store s;
    segflake_segment_generator *g = NULL;
    segflake_segment_tag *t = NULL;
    segflake_segment_store store;
    segflake_segment_options o;
    segflake_segment_stats st;
    uint64_t id = 0, ids[4];
    bool ready;
    char long_tag[140];
    static const struct {
        const char *field;
        int which;
        uint64_t value;
    } bad[] = {
        {"step", 0, 0},          {"step", 0, 2000000},        {"max_step", 1, 0},
        {"prefetch_percent", 2, 101}, {"prefetch_percent", 2, 300},
        {"wait_timeout_ms", 3, 0}, {"wait_timeout_ms", 3, 3600001},
        {"retry_backoff_ms", 4, 3600001}, {"fetch_threads", 5, 65},
    };
    size_t i;
    mem_init(&s);
    store.allocate = mem_allocate;
    store.ctx = &s;
    store.release = NULL;
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK_OK(segflake_segment_options_init(&o));
        switch (bad[i].which) {
        case 0: o.step = bad[i].value; break;
        case 1: o.max_step = bad[i].value; break;
        case 2: o.prefetch_percent = (uint32_t)bad[i].value; break;
        case 3: o.wait_timeout_ms = bad[i].value; break;
        case 4: o.retry_backoff_ms = bad[i].value; break;
        default: o.fetch_threads = (uint32_t)bad[i].value; break;
        }
        CHECK_ERR(segflake_segment_generator_new(&store, &o, &g), SEGFLAKE_INVALID_ARGUMENT);
        CHECK_MSG(bad[i].field);
        CHECK(g == NULL);
    }
    store.allocate = NULL;
    CHECK_ERR(segflake_segment_generator_new(&store, NULL, &g), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_MSG("store->allocate is NULL");
    store.allocate = mem_allocate;
    CHECK_ERR(segflake_segment_generator_new(NULL, NULL, &g), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_segment_generator_new(&store, NULL, NULL), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_segment_options_init(NULL), SEGFLAKE_INVALID_ARGUMENT);

    CHECK_OK(segflake_segment_generator_new(&store, NULL, &g));
    if (!g) return;
    /* Tags: 1..=128 bytes, no whitespace or control characters, UTF-8. */
    memset(long_tag, 'x', 129);
    long_tag[129] = '\0';
    CHECK_ERR(segflake_segment_next(g, "", &id), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_MSG("1..=128 bytes");
    CHECK_ERR(segflake_segment_next(g, long_tag, &id), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_segment_next(g, "has space", &id), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_MSG("whitespace");
    CHECK_ERR(segflake_segment_tag_new(g, "tab\there", &t), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_segment_get_stats(g, "never-used", &st), SEGFLAKE_INVALID_ARGUMENT);
    /* NULL pointers, one by one. */
    CHECK_ERR(segflake_segment_next(NULL, "a", &id), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_MSG("generator is NULL");
    CHECK_ERR(segflake_segment_next(g, NULL, &id), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_MSG("tag is NULL");
    CHECK_ERR(segflake_segment_next(g, "a", NULL), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_segment_next_n(NULL, "a", ids, 4), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_segment_next_n(g, NULL, ids, 4), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_segment_next_n(g, "a", NULL, 4), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_segment_try_next(NULL, "a", &id, &ready), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_segment_try_next(g, NULL, &id, &ready), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_segment_try_next(g, "a", NULL, &ready), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_segment_try_next(g, "a", &id, NULL), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_segment_get_stats(NULL, "a", &st), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_segment_get_stats(g, NULL, &st), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_segment_get_stats(g, "a", NULL), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_segment_tag_new(NULL, "a", &t), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_segment_tag_new(g, NULL, &t), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_segment_tag_new(g, "a", NULL), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_segment_tag_next(NULL, &id), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_segment_tag_next_n(NULL, ids, 4), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_segment_tag_try_next(NULL, &id, &ready), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_segment_tag_get_stats(NULL, &st), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_segment_generator_close(NULL), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_OK(segflake_segment_tag_new(g, "a", &t));
    if (t) {
        CHECK_ERR(segflake_segment_tag_next(t, NULL), SEGFLAKE_INVALID_ARGUMENT);
        CHECK_ERR(segflake_segment_tag_next_n(t, NULL, 4), SEGFLAKE_INVALID_ARGUMENT);
        CHECK_ERR(segflake_segment_tag_try_next(t, NULL, &ready), SEGFLAKE_INVALID_ARGUMENT);
        CHECK_ERR(segflake_segment_tag_try_next(t, &id, NULL), SEGFLAKE_INVALID_ARGUMENT);
        CHECK_ERR(segflake_segment_tag_get_stats(t, NULL), SEGFLAKE_INVALID_ARGUMENT);
    }
    segflake_segment_tag_free(t);
    segflake_segment_tag_free(NULL);
    segflake_segment_generator_free(g);
    segflake_segment_generator_free(NULL);
    pthread_mutex_destroy(&s.mu);
}

static void test_engine_driven_by_the_host(void) {
    segflake_segment_engine *e = NULL;
    segflake_segment_options o;
    segflake_segment_stats st;
    segflake_allocation a;
    uint64_t step = 0, id = 0, ids[300], failures = 0;
    size_t count = 0, i;
    bool ready = true, wanted = false;

    CHECK_OK(segflake_segment_options_init(&o));
    o.step = 100;
    o.dynamic_step = false;
    o.retry_backoff_ms = 0;
    CHECK_OK(segflake_segment_engine_new("order", &o, &e));
    if (!e) return;
    /* Empty at first: no ID, and it wants its first fetch. */
    CHECK_OK(segflake_segment_engine_try_next(e, &id, &ready));
    CHECK(!ready);
    CHECK_OK(segflake_segment_engine_begin_fetch(e, 0, &step, &wanted));
    CHECK(wanted);
    CHECK_U64(step, 100);
    /* At most one fetch in flight. */
    CHECK_OK(segflake_segment_engine_begin_fetch(e, 0, &step, &wanted));
    CHECK(!wanted);
    a.max_id = 101;
    a.step = 100;
    CHECK_OK(segflake_segment_engine_complete_fetch(e, 5, &a, NULL));
    /* Completing twice is refused. */
    CHECK_ERR(segflake_segment_engine_complete_fetch(e, 5, &a, NULL), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_MSG("no fetch is in flight");
    CHECK_OK(segflake_segment_engine_try_next_n(e, ids, 300, &count));
    CHECK_U64(count, 100);
    for (i = 0; i < count; i++) CHECK_U64(ids[i], i + 1);
    /* The store fails: the host reports it, and gets the error for its callers. */
    CHECK_OK(segflake_segment_engine_begin_fetch(e, 10, &step, &wanted));
    CHECK(wanted);
    CHECK_ERR(segflake_segment_engine_complete_fetch(e, 12, NULL, "connection reset (test)"),
              SEGFLAKE_STORE_ERROR);
    CHECK_OK(segflake_segment_engine_failure_count(e, &failures));
    CHECK_U64(failures, 1);
    CHECK_ERR(segflake_segment_engine_exhausted(e, 20), SEGFLAKE_SEGMENTS_EXHAUSTED);
    CHECK_MSG("connection reset (test)");
    /* An overlapping range is refused; its IDs are never issued. */
    CHECK_OK(segflake_segment_engine_begin_fetch(e, 30, &step, &wanted));
    CHECK(wanted);
    a.max_id = 150;
    a.step = 100;
    CHECK_ERR(segflake_segment_engine_complete_fetch(e, 31, &a, NULL),
              SEGFLAKE_STORE_CONTRACT_VIOLATION);
    CHECK_MSG("overlaps or precedes");
    CHECK_OK(segflake_segment_engine_try_next(e, &id, &ready));
    CHECK(!ready);
    CHECK_OK(segflake_segment_engine_begin_fetch(e, 40, &step, &wanted));
    CHECK(wanted);
    a.max_id = 301;
    CHECK_OK(segflake_segment_engine_complete_fetch(e, 41, &a, NULL));
    CHECK_OK(segflake_segment_engine_try_next(e, &id, &ready));
    CHECK(ready);
    CHECK_U64(id, 201);
    CHECK_OK(segflake_segment_engine_get_stats(e, 42, &st));
    CHECK_U64(st.current_start, 201);
    CHECK_U64(st.current_end, 301);
    CHECK_U64(st.failures, 2);
    CHECK_OK(segflake_segment_engine_close(e));
    CHECK_OK(segflake_segment_engine_try_next(e, &id, &ready));
    CHECK(!ready);
    CHECK_ERR(segflake_segment_engine_exhausted(e, 50), SEGFLAKE_CLOSED);

    /* Bad input and NULL pointers. */
    CHECK_ERR(segflake_segment_engine_try_next_n(e, ids, 0, &count), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_segment_engine_new("a b", NULL, &e), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_segment_engine_new(NULL, NULL, &e), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_segment_engine_new("a", NULL, NULL), SEGFLAKE_INVALID_ARGUMENT);
    o.step = 0;
    CHECK_ERR(segflake_segment_engine_new("a", &o, &e), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_segment_engine_try_next(NULL, &id, &ready), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_MSG("engine is NULL");
    CHECK_ERR(segflake_segment_engine_try_next(e, NULL, &ready), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_segment_engine_try_next(e, &id, NULL), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_segment_engine_try_next_n(NULL, ids, 1, &count), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_segment_engine_try_next_n(e, NULL, 1, &count), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_segment_engine_try_next_n(e, ids, 1, NULL), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_segment_engine_begin_fetch(NULL, 0, &step, &wanted), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_segment_engine_begin_fetch(e, 0, NULL, &wanted), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_segment_engine_begin_fetch(e, 0, &step, NULL), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_segment_engine_complete_fetch(NULL, 0, &a, NULL), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_segment_engine_exhausted(NULL, 0), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_segment_engine_failure_count(NULL, &failures), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_segment_engine_failure_count(e, NULL), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_segment_engine_get_stats(NULL, 0, &st), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_segment_engine_get_stats(e, 0, NULL), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_segment_engine_close(NULL), SEGFLAKE_INVALID_ARGUMENT);
    segflake_segment_engine_free(e);
    segflake_segment_engine_free(NULL);
}

/* A generator inherited by a fork() child would issue the parent's IDs again: refused. */
static int child_checks(segflake_snowflake *sf, segflake_segment_generator *g,
                        segflake_segment_tag *t, segflake_serial *ser) {
    uint64_t id = 0;
    bool ready;
    segflake_snowflake_options o;
    segflake_snowflake *fresh = NULL;
    int bad = 0;
    bad |= segflake_snowflake_next(sf, &id) != SEGFLAKE_CLOSED;
    bad |= strstr(segflake_last_error_message(), "fork()") == NULL;
    bad |= segflake_snowflake_next_n(sf, &id, 1) != SEGFLAKE_CLOSED;
    bad |= segflake_segment_next(g, "order", &id) != SEGFLAKE_CLOSED;
    bad |= segflake_segment_try_next(g, "order", &id, &ready) != SEGFLAKE_CLOSED;
    bad |= segflake_segment_tag_next(t, &id) != SEGFLAKE_CLOSED;
    bad |= segflake_serial_next(ser, &id) != SEGFLAKE_CLOSED;
    /* A generator made in the child works. */
    bad |= segflake_snowflake_options_init(&o, 2) != SEGFLAKE_OK;
    bad |= segflake_snowflake_new(&o, &fresh) != SEGFLAKE_OK;
    bad |= segflake_snowflake_next(fresh, &id) != SEGFLAKE_OK;
    segflake_snowflake_free(fresh);
    return bad;
}

static void test_fork_child_refuses_inherited_generators(void) {
    mem_store s;
    segflake_segment_generator *g;
    segflake_segment_tag *t = NULL;
    segflake_snowflake_options o;
    segflake_snowflake *sf = NULL;
    segflake_serial_options so;
    segflake_serial *ser = NULL;
    uint64_t id = 0;
    pid_t pid;
    int status = 0, fds[2] = {-1, -1};
    char verdict = 'x';
    mem_init(&s);
    g = seg_new(&s, 100, 10, 1000);
    CHECK_OK(segflake_snowflake_options_init(&o, 1));
    CHECK_OK(segflake_snowflake_new(&o, &sf));
    CHECK_OK(segflake_serial_options_init(&so));
    CHECK_OK(segflake_serial_new(&so, &ser));
    if (g) CHECK_OK(segflake_segment_tag_new(g, "order", &t));
    if (!g || !t || !sf || !ser) goto done;
    CHECK_OK(segflake_segment_next(g, "order", &id));
    CHECK(pipe(fds) == 0);
    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        /* The child reports through the pipe, then ends without any exit processing: the
         * inherited objects belong to threads that do not exist here, so a leak checker
         * (valgrind, LeakSanitizer) at exit would see their memory as lost. */
        char v = child_checks(sf, g, t, ser) ? 'F' : 'P';
        if (write(fds[1], &v, 1) != 1) v = 'F';
        kill(getpid(), SIGKILL);
        _exit(2);
    }
    CHECK(pid > 0);
    if (pid > 0) {
        CHECK(read(fds[0], &verdict, 1) == 1);
        CHECK(verdict == 'P');
        CHECK(waitpid(pid, &status, 0) == pid);
        CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    }
    close(fds[0]);
    close(fds[1]);
    /* The parent's generators are unaffected. */
    CHECK_OK(segflake_segment_next(g, "order", &id));
    CHECK_U64(id, 2);
    CHECK_OK(segflake_snowflake_next(sf, &id));
    CHECK_OK(segflake_serial_next(ser, &id));
done:
    segflake_segment_tag_free(t);
    segflake_segment_generator_free(g);
    segflake_snowflake_free(sf);
    segflake_serial_free(ser);
    pthread_mutex_destroy(&s.mu);
}

/* ---- the file store, across processes -------------------------------------------- */

static void remove_store_files(const char *dir, const char *path) {
    char buf[512];
    unlink(path);
    snprintf(buf, sizeof buf, "%s.lock", path);
    unlink(buf);
    snprintf(buf, sizeof buf, "%s.tmp", path);
    unlink(buf);
    rmdir(dir);
}

static segflake_segment_generator *file_gen(const char *path, uint64_t step) {
    segflake_segment_store st;
    segflake_segment_options o;
    segflake_segment_generator *g = NULL;
    if (segflake_file_store_new(path, 1, &st) != SEGFLAKE_OK) return NULL;
    segflake_segment_options_init(&o);
    o.step = step;
    o.dynamic_step = false;
    if (segflake_segment_generator_new(&st, &o, &g) != SEGFLAKE_OK) segflake_segment_store_release(&st);
    return g;
}

static void test_file_store_restart_and_errors(void) {
    char dir[] = "/tmp/segflake-c-test-XXXXXX", path[256], missing[300];
    segflake_segment_generator *g;
    segflake_segment_store st;
    uint64_t id = 0, last = 0;
    int i;
    FILE *f;
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/leaf_alloc.txt", dir);
    g = file_gen(path, 50);
    CHECK(g != NULL);
    if (!g) goto done;
    for (i = 1; i <= 120; i++) {
        CHECK_OK(segflake_segment_next(g, "order", &id));
        if (id != (uint64_t)i) { CHECK_U64(id, i); break; }
    }
    last = id;
    segflake_segment_generator_free(g);
    /* A restart continues right after the last ID: the closed generator gave back the
     * rest of its range (the library's file store takes IDs back). */
    g = file_gen(path, 50);
    CHECK(g != NULL);
    if (g) {
        CHECK_OK(segflake_segment_next(g, "order", &id));
        CHECK_U64(id, last + 1);
        segflake_segment_generator_free(g);
    }
    /* A store that is never handed to a generator is released by the caller. */
    CHECK_OK(segflake_file_store_new(path, 1, &st));
    segflake_segment_store_release(&st);
    CHECK(st.allocate == NULL && st.release == NULL);
    segflake_segment_store_release(&st); /* a second call does nothing */
    segflake_segment_store_release(NULL);
    /* Errors. */
    snprintf(missing, sizeof missing, "%s/no-such-dir/ids.txt", dir);
    CHECK_ERR(segflake_file_store_new(missing, 1, &st), SEGFLAKE_STORE_ERROR);
    CHECK_MSG("does not exist");
    CHECK_ERR(segflake_file_store_new(path, 9223372036854775808ull, &st), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_MSG("initial_max_id");
    CHECK_ERR(segflake_file_store_new("", 1, &st), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_file_store_new(NULL, 1, &st), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_file_store_new(path, 1, NULL), SEGFLAKE_INVALID_ARGUMENT);
    /* A file that cannot be parsed is refused, never overwritten. */
    f = fopen(path, "w");
    CHECK(f != NULL);
    if (f) {
        fputs("order not-a-number 10 2025-01-01T00:00:00.000Z\n", f);
        fclose(f);
        CHECK_ERR(segflake_file_store_new(path, 1, &st), SEGFLAKE_STORE_ERROR);
    }
done:
    remove_store_files(dir, path);
}

#define PROCS 3
#define PER_PROC 1500

/* A store's give_back: max_id from expected to the new value if unchanged. */
static segflake_status mem_give_back(void *ctx, const char *tag, uint64_t expected, uint64_t max_id,
                                     bool *given, char *err, size_t cap) {
    mem_store *s = (mem_store *)ctx;
    size_t i;
    (void)err;
    (void)cap;
    pthread_mutex_lock(&s->mu);
    *given = false;
    for (i = 0; i < s->nrows; i++) {
        if (strcmp(s->rows[i].tag, tag) == 0 && s->rows[i].max_id == expected && max_id < expected) {
            s->rows[i].max_id = max_id;
            *given = true;
        }
    }
    pthread_mutex_unlock(&s->mu);
    return SEGFLAKE_OK;
}

static segflake_segment_generator *ext_gen(mem_store *s, bool give_back_option) {
    segflake_segment_store_ext ext;
    segflake_options *o = NULL;
    segflake_segment_generator *g = NULL;
    memset(&ext, 0, sizeof ext);
    ext.size = sizeof ext;
    ext.store.allocate = mem_allocate;
    ext.store.ctx = s;
    ext.give_back = mem_give_back;
    CHECK_OK(segflake_options_new("segment", &o));
    CHECK_OK(segflake_options_set_u64(o, "step", 100));
    CHECK_OK(segflake_options_set_bool(o, "dynamic_step", false));
    CHECK_OK(segflake_options_set_bool(o, "give_back", give_back_option));
    CHECK_OK(segflake_segment_generator_new_ext(&ext, o, &g));
    segflake_options_free(o);
    return g;
}

static void test_give_back_on_close(void) {
    mem_store s;
    segflake_segment_generator *g;
    segflake_segment_store_ext ext;
    uint64_t ids[5], id = 0;
    mem_init(&s);
    g = ext_gen(&s, true);
    if (!g) return;
    CHECK_OK(segflake_segment_next_n(g, "order", ids, 5)); /* 1..5 of [1, 101) */
    CHECK_U64(ids[4], 5);
    segflake_segment_generator_free(g);
    CHECK_U64(s.rows[0].max_id, 6); /* the other 95 went back */
    g = ext_gen(&s, true);
    if (g) {
        CHECK_OK(segflake_segment_next(g, "order", &id));
        CHECK_U64(id, 6);
        /* Someone else allocates after this generator's range: nothing goes back. */
        mem_allocate(&s, "order", 10, &(segflake_allocation){0, 0}, NULL, 0);
        segflake_segment_generator_free(g);
        CHECK_U64(s.rows[0].max_id, 116);
    }
    /* The give_back option off: the rest of the range is skipped. */
    g = ext_gen(&s, false);
    if (g) {
        CHECK_OK(segflake_segment_next(g, "order", &id));
        CHECK_U64(id, 116);
        segflake_segment_generator_free(g);
        CHECK_U64(s.rows[0].max_id, 216);
    }
    /* A size from an older header than the fields the library needs is refused. */
    memset(&ext, 0, sizeof ext);
    ext.size = sizeof(size_t);
    ext.store.allocate = mem_allocate;
    ext.store.ctx = &s;
    CHECK_ERR(segflake_segment_generator_new_ext(&ext, NULL, &g), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_MSG("sizeof(segflake_segment_store_ext)");
    CHECK_ERR(segflake_segment_generator_new_ext(NULL, NULL, &g), SEGFLAKE_INVALID_ARGUMENT);
    pthread_mutex_destroy(&s.mu);
}

static void test_file_store_shared_by_processes(void) {
    char dir[] = "/tmp/segflake-c-test-XXXXXX", path[256];
    uint64_t *all = (uint64_t *)calloc(PROCS * PER_PROC, sizeof *all);
    pid_t pids[PROCS];
    int fds[PROCS][2], p, status;
    size_t i, dups = 0;
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/leaf_alloc.txt", dir);
    fflush(stdout);
    for (p = 0; p < PROCS && all; p++) {
        CHECK(pipe(fds[p]) == 0);
        pids[p] = fork();
        if (pids[p] == 0) {
            /* Each process makes its own generator after fork(), over the shared file. */
            segflake_segment_generator *g = file_gen(path, 100);
            uint64_t ids[PER_PROC];
            int ok = g != NULL;
            close(fds[p][0]);
            if (g) ok = segflake_segment_next_n(g, "order", ids, PER_PROC) == SEGFLAKE_OK;
            segflake_segment_generator_free(g);
            if (ok) ok = write(fds[p][1], ids, sizeof ids) == (ssize_t)sizeof ids;
            /* No exit processing: a leak checker would count the parent's memory, which
             * this copy of the process never frees, as lost (see the fork test above). */
            kill(getpid(), SIGKILL);
            _exit(2);
        }
        close(fds[p][1]);
    }
    for (p = 0; p < PROCS && all; p++) {
        size_t got = 0;
        ssize_t r;
        char *dst = (char *)(all + (size_t)p * PER_PROC);
        while (got < PER_PROC * sizeof(uint64_t) &&
               (r = read(fds[p][0], dst + got, PER_PROC * sizeof(uint64_t) - got)) > 0)
            got += (size_t)r;
        CHECK_U64(got, PER_PROC * sizeof(uint64_t));
        close(fds[p][0]);
        CHECK(waitpid(pids[p], &status, 0) == pids[p]);
        CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    }
    if (all) {
        qsort(all, PROCS * PER_PROC, sizeof *all, cmp_u64);
        for (i = 1; i < PROCS * PER_PROC; i++) dups += all[i] == all[i - 1];
        CHECK_U64(dups, 0);
        CHECK(all[0] >= 1);
    }
    free(all);
    remove_store_files(dir, path);
}

/* ---- serials --------------------------------------------------------------------- */

typedef struct {
    uint64_t now;
} fixed_clock;

static uint64_t fixed_now(void *ctx) { return ((fixed_clock *)ctx)->now; }

/* 2025-04-13T12:00:00Z */
#define APRIL_13_NOON_MS 1744545600000ull

static segflake_serial *serial_new(fixed_clock *c, uint32_t worker_digits, uint64_t worker,
                                   uint32_t seq_digits) {
    segflake_serial_options o;
    segflake_serial *s = NULL;
    CHECK_OK(segflake_serial_options_init(&o));
    o.worker_digits = worker_digits;
    o.worker_id = worker;
    o.sequence_digits = seq_digits;
    o.clock = fixed_now;
    o.clock_ctx = c;
    CHECK_OK(segflake_serial_new(&o, &s));
    return s;
}

static void test_serials_local_counter(void) {
    fixed_clock c;
    segflake_serial *s, *w;
    segflake_serial_parts p;
    uint64_t v = 0, last = 0;
    c.now = APRIL_13_NOON_MS + 250;
    s = serial_new(&c, 0, 0, 4);
    w = serial_new(&c, 1, 7, 4);
    if (!s || !w) goto done;
    /* The specification's examples. */
    CHECK_OK(segflake_serial_next(s, &v));
    CHECK_U64(v, 2504131200000001ull);
    CHECK_OK(segflake_serial_next(s, &v));
    CHECK_U64(v, 2504131200000002ull);
    CHECK_OK(segflake_serial_next(w, &v));
    CHECK_U64(v, 25041312000070001ull);
    CHECK_OK(segflake_serial_decode(w, v, &p));
    CHECK_U64(p.date, 250413120000ull);
    CHECK_U64(p.unix_seconds, APRIL_13_NOON_MS / 1000);
    CHECK_U64(p.worker_id, 7);
    CHECK_U64(p.sequence, 1);
    /* The clock steps back: never a smaller number. */
    c.now -= 5000;
    CHECK_OK(segflake_serial_next(s, &v));
    CHECK_U64(v, 2504131200000003ull);
    CHECK_OK(segflake_serial_last(s, &last));
    CHECK_U64(last, v);
    c.now += 6000;
    CHECK_OK(segflake_serial_next(s, &v));
    CHECK_U64(v, 2504131200010001ull);
    CHECK_OK(segflake_serial_format(s, APRIL_13_NOON_MS / 1000, 42, &v));
    CHECK_U64(v, 2504131200000042ull);
    CHECK_OK(segflake_serial_date_prefix(s, APRIL_13_NOON_MS / 1000 + 59, &v));
    CHECK_U64(v, 250413120059ull);
    CHECK_ERR(segflake_serial_format(s, APRIL_13_NOON_MS / 1000, 10000, &v), SEGFLAKE_SERIAL_EXHAUSTED);
    CHECK_ERR(segflake_serial_date_prefix(s, 0, &v), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_MSG("2000 to 2099");
    CHECK_ERR(segflake_serial_decode(s, 2513131200000001ull, &p), SEGFLAKE_PARSE_ERROR);
done:
    segflake_serial_free(s);
    segflake_serial_free(w);
}

static void test_serials_exhaustion_restore_offset(void) {
    fixed_clock c;
    segflake_serial_options o;
    segflake_serial *s = NULL;
    uint64_t v = 0;
    int i;
    c.now = APRIL_13_NOON_MS;
    s = serial_new(&c, 0, 0, 1);
    if (s) {
        for (i = 1; i <= 9; i++) {
            CHECK_OK(segflake_serial_next(s, &v));
            CHECK_U64(v % 10, (uint64_t)i);
        }
        CHECK_ERR(segflake_serial_next(s, &v), SEGFLAKE_SERIAL_EXHAUSTED);
        CHECK_MSG("250413120000");
        c.now += 1000;
        CHECK_OK(segflake_serial_next(s, &v));
        CHECK_U64(v, 2504131200011ull);
        segflake_serial_free(s);
        s = NULL;
    }
    /* Restored from a persisted last serial: continues above it. */
    CHECK_OK(segflake_serial_options_init(&o));
    o.clock = fixed_now;
    o.clock_ctx = &c;
    o.has_last = true;
    o.last = 2504131200010500ull;
    CHECK_OK(segflake_serial_new(&o, &s));
    if (s) {
        CHECK_OK(segflake_serial_next(s, &v));
        CHECK_U64(v, 2504131200010501ull);
        segflake_serial_free(s);
        s = NULL;
    }
    o.last = 123;
    CHECK_ERR(segflake_serial_new(&o, &s), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_MSG("not a serial of this shape");
    /* A fixed UTC offset: +08:00. */
    o.has_last = false;
    o.utc_offset_minutes = 480;
    CHECK_OK(segflake_serial_new(&o, &s));
    if (s) {
        CHECK_OK(segflake_serial_next(s, &v));
        CHECK_U64(v, 2504132000010001ull);
        segflake_serial_free(s);
        s = NULL;
    }
    /* Bad options name the field. */
    CHECK_OK(segflake_serial_options_init(&o));
    o.sequence_digits = 0;
    CHECK_ERR(segflake_serial_new(&o, &s), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_MSG("sequence_digits");
    o.sequence_digits = 8;
    CHECK_ERR(segflake_serial_new(&o, &s), SEGFLAKE_INVALID_ARGUMENT);
    o.sequence_digits = 4;
    o.worker_digits = 250;
    CHECK_ERR(segflake_serial_new(&o, &s), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_MSG("worker_digits");
    o.worker_digits = 4;
    CHECK_ERR(segflake_serial_new(&o, &s), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_MSG("at most 7");
    o.worker_digits = 2;
    o.worker_id = 100;
    CHECK_ERR(segflake_serial_new(&o, &s), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_MSG("0..=99");
    o.worker_id = 0;
    o.utc_offset_minutes = -1081;
    CHECK_ERR(segflake_serial_new(&o, &s), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_MSG("utc_offset_minutes");
    CHECK(s == NULL);
}

typedef struct {
    uint64_t second;
    uint64_t count;
    uint64_t last_prefix;
    int mode; /* 0: count per second, 1: fail, 2: fail silently, 3: always return 1 */
} counter_ctx;

static segflake_status count(void *ctx, uint64_t second, uint64_t prefix, uint64_t *out,
                             char *err, size_t cap) {
    counter_ctx *c = (counter_ctx *)ctx;
    c->last_prefix = prefix;
    if (c->mode == 1) {
        snprintf(err, cap, "redis: connection refused (test)");
        return SEGFLAKE_STORE_ERROR;
    }
    if (c->mode == 2) return 1234;
    if (c->mode == 3) {
        *out = 1;
        return SEGFLAKE_OK;
    }
    if (second != c->second) {
        c->second = second;
        c->count = 0;
    }
    *out = ++c->count;
    return SEGFLAKE_OK;
}

static void test_serials_shared_counter(void) {
    fixed_clock c;
    counter_ctx k;
    segflake_serial *s;
    uint64_t v = 0, second = 0;
    bool accepted = false;
    memset(&k, 0, sizeof k);
    c.now = APRIL_13_NOON_MS;
    s = serial_new(&c, 0, 0, 4);
    if (!s) return;
    CHECK_OK(segflake_serial_next_with_counter(s, count, &k, &v));
    CHECK_U64(v, 2504131200000001ull);
    CHECK_U64(k.last_prefix, 250413120000ull);
    CHECK_OK(segflake_serial_next_with_counter(s, count, &k, &v));
    CHECK_U64(v, 2504131200000002ull);
    k.mode = 1;
    CHECK_ERR(segflake_serial_next_with_counter(s, count, &k, &v), SEGFLAKE_STORE_ERROR);
    CHECK_MSG("redis: connection refused (test)");
    k.mode = 2;
    CHECK_ERR(segflake_serial_next_with_counter(s, count, &k, &v), SEGFLAKE_STORE_ERROR);
    CHECK_MSG("returned status 1234 (UNKNOWN) without a message");
    k.mode = 3; /* a counter that was reset: its numbers are not above the last serial */
    CHECK_ERR(segflake_serial_next_with_counter(s, count, &k, &v), SEGFLAKE_STORE_ERROR);
    CHECK_MSG("not above the last serial");
    CHECK_ERR(segflake_serial_next_with_counter(s, NULL, &k, &v), SEGFLAKE_INVALID_ARGUMENT);
    /* The sans-I/O form. */
    CHECK_OK(segflake_serial_counter_second(s, c.now - 3000, &second));
    CHECK_U64(second, APRIL_13_NOON_MS / 1000); /* the clock is behind the last serial */
    CHECK_OK(segflake_serial_accept(s, second, 2, &v, &accepted));
    CHECK(!accepted);
    CHECK_OK(segflake_serial_accept(s, second, 3, &v, &accepted));
    CHECK(accepted);
    CHECK_U64(v, 2504131200000003ull);
    CHECK_ERR(segflake_serial_accept(s, second, 10000, &v, &accepted), SEGFLAKE_SERIAL_EXHAUSTED);
    segflake_serial_free(s);
}

/* A script counter answering as the core's Redis script would, at server time `now_ms`. */
typedef struct {
    uint64_t now_ms, count;
    char key[64];
    uint64_t args[4];
} script_ctx;

static segflake_status script(void *ctx, const char *key, const uint64_t *args, size_t nargs,
                              uint64_t *out, char *err, size_t cap) {
    script_ctx *c = (script_ctx *)ctx;
    uint64_t start = args[0] * 1000;
    (void)err;
    (void)cap;
    snprintf(c->key, sizeof c->key, "%s", key);
    memcpy(c->args, args, (nargs < 4 ? nargs : 4) * sizeof *args);
    if (c->now_ms > start + 1000 + args[1] || start > c->now_ms + args[2]) {
        out[0] = 0, out[1] = 0, out[2] = c->now_ms;
    } else {
        out[0] = 1, out[1] = ++c->count, out[2] = c->now_ms;
    }
    return SEGFLAKE_OK;
}

static void test_serials_script_counter(void) {
    fixed_clock c;
    script_ctx k;
    segflake_serial *s;
    uint64_t v = 0;
    memset(&k, 0, sizeof k);
    c.now = APRIL_13_NOON_MS;
    k.now_ms = APRIL_13_NOON_MS;
    s = serial_new(&c, 0, 0, 4);
    if (!s) return;
    CHECK_OK(segflake_serial_next_with_script(s, script, &k, &v));
    CHECK_U64(v, 2504131200000001ull);
    CHECK(strcmp(k.key, "serial:250413120000") == 0);
    CHECK_U64(k.args[0], APRIL_13_NOON_MS / 1000);
    CHECK_U64(k.args[1], 60000);
    CHECK_U64(k.args[2], 60000);
    /* A restart given the persisted last, on a counter that lost its keys: above it. */
    {
        segflake_options *o = NULL;
        segflake_serial *again = NULL;
        uint64_t persisted = 0;
        CHECK_OK(segflake_serial_last(s, &persisted));
        CHECK_OK(segflake_options_new("serial", &o));
        CHECK_OK(segflake_options_set_u64(o, "last", persisted));
        CHECK_OK(segflake_serial_new_with(o, fixed_now, &c, &again));
        segflake_options_free(o);
        k.count = 0;
        if (again) {
            CHECK_OK(segflake_serial_next_with_script(again, script, &k, &v));
            CHECK(v > persisted);
            CHECK_U64(v, 2504131200000002ull);
            segflake_serial_free(again);
        }
    }
    /* The counter's clock is 2 minutes ahead of this host's: refused, nothing issued. */
    segflake_serial_free(s);
    s = serial_new(&c, 0, 0, 4);
    if (!s) return;
    k.now_ms = APRIL_13_NOON_MS + 120000;
    CHECK_ERR(segflake_serial_next_with_script(s, script, &k, &v), SEGFLAKE_CLOCK_SKEW);
    CHECK_MSG("more than counter_max_behind_ms = 60000");
    CHECK_OK(segflake_serial_last(s, &v));
    CHECK_U64(v, 0);
    CHECK_ERR(segflake_serial_next_with_script(s, NULL, &k, &v), SEGFLAKE_INVALID_ARGUMENT);
    segflake_serial_free(s);
}

static void test_serial_null_pointers(void) {
    segflake_serial_options o;
    segflake_serial *s = NULL;
    segflake_serial_parts p;
    uint64_t v;
    bool b;
    counter_ctx k;
    memset(&k, 0, sizeof k);
    CHECK_ERR(segflake_serial_options_init(NULL), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_OK(segflake_serial_options_init(&o));
    CHECK_ERR(segflake_serial_new(NULL, &s), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_serial_new(&o, NULL), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_OK(segflake_serial_new(&o, &s));
    CHECK_ERR(segflake_serial_next(NULL, &v), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_MSG("serial is NULL");
    CHECK_ERR(segflake_serial_next(s, NULL), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_serial_next_with_counter(NULL, count, &k, &v), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_serial_next_with_counter(s, count, &k, NULL), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_serial_last(NULL, &v), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_serial_last(s, NULL), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_serial_decode(NULL, 1, &p), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_serial_decode(s, 1, NULL), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_serial_format(NULL, 1, 1, &v), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_serial_format(s, 1, 1, NULL), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_serial_date_prefix(NULL, 1, &v), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_serial_date_prefix(s, 1, NULL), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_serial_counter_second(NULL, 1, &v), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_serial_counter_second(s, 1, NULL), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_serial_accept(NULL, 1, 1, &v, &b), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_serial_accept(s, 1, 1, NULL, &b), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_serial_accept(s, 1, 1, &v, NULL), SEGFLAKE_INVALID_ARGUMENT);
    /* The system clock works too. */
    CHECK_OK(segflake_serial_next(s, &v));
    CHECK(v > 2500000000000000ull);
    segflake_serial_free(s);
    segflake_serial_free(NULL);
}

/* Tinyid's multi-database mode: store i of 2 gives only IDs = i (mod 2); a failing store
 * is skipped without an error, and a tag's IDs keep increasing. */
static void test_multi_store_residues_and_failover(void) {
    mem_store a, b;
    segflake_segment_store stores[2];
    segflake_options *o = NULL;
    segflake_segment_generator *g = NULL;
    uint64_t id = 0, last = 0;
    int i;
    mem_init(&a);
    mem_init(&b);
    stores[0].allocate = mem_allocate;
    stores[0].ctx = &a;
    stores[0].release = mem_release;
    stores[1] = stores[0];
    stores[1].ctx = &b;
    CHECK_OK(segflake_options_new("segment", &o));
    CHECK_OK(segflake_options_set_u64(o, "step", 100));
    CHECK_OK(segflake_options_set_bool(o, "dynamic_step", false));
    /* The failover must not depend on timing: a failed store is retried (the other one
     * taken) after 20 ms, and a call waits up to 20 s (debug builds, valgrind, qemu). */
    CHECK_OK(segflake_options_set_u64(o, "retry_backoff_ms", 20));
    CHECK_OK(segflake_options_set_u64(o, "wait_timeout_ms", 20000));
    CHECK_ERR(segflake_segment_generator_new_multi(stores, 0, o, &g), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_MSG("1..=64");
    CHECK_ERR(segflake_segment_generator_new_multi(NULL, 2, o, &g), SEGFLAKE_INVALID_ARGUMENT);
    stores[1].allocate = NULL;
    CHECK_ERR(segflake_segment_generator_new_multi(stores, 2, o, &g), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_MSG("stores[1]->allocate is NULL");
    stores[1].allocate = mem_allocate;
    CHECK_OK(segflake_segment_generator_new_multi(stores, 2, o, &g));
    segflake_options_free(o);
    if (!g) return;
    for (i = 0; i < 300; i++) {
        if (i == 100) mem_set(&a, &a.fail, 1); /* database 0 stops */
        CHECK_OK(segflake_segment_next(g, "order", &id));
        CHECK(id > last);
        last = id;
        if (i < 40) CHECK(id % 2 == 0);
    }
    CHECK(id % 2 == 1); /* database 1's class */
    CHECK(b.calls >= 1);
    segflake_segment_generator_free(g);
    CHECK_U64(a.released, 1);
    CHECK_U64(b.released, 1);
}

void run_segment_tests(void) {
    t_run("segments: several stores (Tinyid's multi-database mode): residues, failover",
          test_multi_store_residues_and_failover);
    t_run("segments: Leaf semantics (fresh row, step 2000 -> 1..=2000), stats", test_leaf_semantics);
    t_run("segments: batches and tag handles", test_batches_and_tag_handles);
    t_run("segments: a failing store gives SEGMENTS_EXHAUSTED within the bounded wait",
          test_failing_store_bounded_wait);
    t_run("segments: buffered IDs keep flowing while the store is down",
          test_buffered_ids_outlive_the_store);
    t_run("segments: overlapping and empty ranges are refused, never issued",
          test_overlapping_and_empty_ranges);
    t_run("segments: 4 pthreads share a tag: unique, per-thread increasing",
          test_threads_share_a_tag);
    t_run("segments: close, and the store's release callback", test_close_and_release);
    t_run("segments: bad options, bad tags, every NULL pointer", test_segment_bad_input);
    t_run("segments: the sans-I/O engine driven by the host", test_engine_driven_by_the_host);
    t_run("fork(): a child refuses generators it inherited", test_fork_child_refuses_inherited_generators);
    t_run("file store: restart continues above, errors, release", test_file_store_restart_and_errors);
    t_run("give back on close: ext store, compare-and-set, option off, bad size",
          test_give_back_on_close);
    t_run("file store: 3 processes share one file, no ID twice", test_file_store_shared_by_processes);
    t_run("serials: local counter, clock steps back, decode, format", test_serials_local_counter);
    t_run("serials: exhaustion, restore, UTC offset, bad options",
          test_serials_exhaustion_restore_offset);
    t_run("serials: shared counter callback and the sans-I/O form", test_serials_shared_counter);
    t_run("serials: a script counter gets the core key and arguments; its refusal is CLOCK_SKEW", test_serials_script_counter);
    t_run("serials: every NULL pointer", test_serial_null_pointers);
}

/* ---- shared vectors: segments.json and serials.json -------------------------------- */

static char vcase[512];

static void vbegin(const char *file, const char *group, size_t i, const json_value *c) {
    const char *name = json_get_string(c, "name");
    snprintf(vcase, sizeof vcase, "vector %s %s[%llu]%s%s", file, group, (ull)i,
             name ? ": " : "", name ? name : "");
    t_begin(vcase);
}

static uint64_t vu64(const json_value *c, const char *key) {
    uint64_t v = 0;
    if (!json_get_u64(c, key, &v)) t_fail(__FILE__, __LINE__, "vector has no integer \"%s\"", key);
    return v;
}

static void vexpect_error(segflake_status s, const json_value *c, const char *code_key) {
    const char *code = json_get_string(c, code_key);
    const char *contains = json_get_string(c, "message_contains");
    if (s == SEGFLAKE_OK) {
        t_fail(__FILE__, __LINE__, "succeeded, expected %s", code ? code : "(none)");
        return;
    }
    CHECK_STR(segflake_status_code(s), code);
    if (contains) CHECK_MSG(contains);
}

/* A store for the vectors: a Leaf row, or a script whose last entry repeats forever. */
typedef struct {
    pthread_mutex_t mu;
    int leaf;
    uint64_t max_id;
    uint64_t script[16][2];
    size_t n, calls;
} vec_store;

static segflake_status vec_allocate(void *ctx, const char *tag, uint64_t step,
                                    segflake_allocation *out, char *err, size_t cap) {
    vec_store *v = (vec_store *)ctx;
    (void)tag;
    (void)err;
    (void)cap;
    pthread_mutex_lock(&v->mu);
    if (v->leaf) {
        v->max_id += step;
        out->max_id = v->max_id;
        out->step = step;
    } else {
        size_t i = v->calls < v->n ? v->calls : v->n - 1;
        out->max_id = v->script[i][0];
        out->step = v->script[i][1];
    }
    v->calls++;
    pthread_mutex_unlock(&v->mu);
    return SEGFLAKE_OK;
}

static int segment_options_from_json(const json_value *o, segflake_segment_options *opts) {
    const json_value *dyn = json_get(o, "dynamic_step");
    uint64_t v;
    if (segflake_segment_options_init(opts) != SEGFLAKE_OK) return 0;
    if (json_get_u64(o, "step", &v)) opts->step = v;
    if (json_get_u64(o, "max_step", &v)) opts->max_step = v;
    if (json_get_u64(o, "prefetch_percent", &v)) opts->prefetch_percent = (uint32_t)v;
    if (dyn && dyn->type == JSON_BOOL) opts->dynamic_step = dyn->boolean != 0;
    return 1;
}

static void run_segment_sequences(const char *file, const json_value *cases) {
    size_t i, r;
    for (i = 0; cases && i < cases->count; i++) {
        const json_value *c = cases->items[i];
        const json_value *store = json_get(c, "store");
        const json_value *leaf = json_get(store, "leaf");
        const json_value *script = json_get(store, "script");
        const json_value *runs = json_get(c, "ids");
        const char *tag = json_get_string(c, "tag");
        segflake_segment_options opts;
        segflake_segment_store st;
        segflake_segment_generator *g = NULL;
        vec_store vs;
        uint64_t take = vu64(c, "take"), taken = 0, id = 0;
        vbegin(file, "sequences", i, c);
        memset(&vs, 0, sizeof vs);
        pthread_mutex_init(&vs.mu, NULL);
        if (leaf) {
            vs.leaf = 1;
            vs.max_id = vu64(leaf, "initial_max_id");
        } else if (script && script->count > 0 && script->count <= 16) {
            for (r = 0; r < script->count; r++) {
                vs.script[r][0] = vu64(script->items[r], "max_id");
                vs.script[r][1] = vu64(script->items[r], "step");
            }
            vs.n = script->count;
        } else {
            t_fail(__FILE__, __LINE__, "unknown store in vector");
        }
        CHECK(segment_options_from_json(json_get(c, "options"), &opts));
        st.allocate = vec_allocate;
        st.ctx = &vs;
        st.release = NULL;
        CHECK_OK(segflake_segment_generator_new(&st, &opts, &g));
        if (g && tag && runs && (vs.leaf || vs.n)) {
            for (r = 0; r < runs->count && !t_current_failures(); r++) {
                const json_value *run = runs->items[r];
                uint64_t from = 0, to = 0, want;
                if (run->count != 2 || !json_text_u64(run->items[0]->text, &from) ||
                    !json_text_u64(run->items[1]->text, &to)) {
                    t_fail(__FILE__, __LINE__, "bad run in vector");
                    break;
                }
                for (want = from; want <= to && want >= from; want++) {
                    CHECK_OK(segflake_segment_next(g, tag, &id));
                    if (id != want) {
                        CHECK_U64(id, want);
                        break;
                    }
                    taken++;
                    if (want == UINT64_MAX) break;
                }
            }
            CHECK_U64(taken, take);
            if (json_get_string(c, "then_error") && !t_current_failures())
                vexpect_error(segflake_segment_next(g, tag, &id), c, "then_error");
        }
        segflake_segment_generator_free(g);
        pthread_mutex_destroy(&vs.mu);
        t_end();
    }
}

static void run_segment_invalid(const char *file, const json_value *cases) {
    size_t i;
    for (i = 0; cases && i < cases->count; i++) {
        const json_value *c = cases->items[i];
        segflake_segment_options opts;
        segflake_segment_store st;
        segflake_segment_generator *g = NULL;
        segflake_segment_tag *t = NULL;
        vec_store vs;
        segflake_status rc;
        vbegin(file, "invalid", i, c);
        memset(&vs, 0, sizeof vs);
        pthread_mutex_init(&vs.mu, NULL);
        vs.leaf = 1;
        vs.max_id = 1;
        CHECK(segment_options_from_json(json_get(c, "options"), &opts));
        st.allocate = vec_allocate;
        st.ctx = &vs;
        st.release = NULL;
        rc = segflake_segment_generator_new(&st, &opts, &g);
        if (rc == SEGFLAKE_OK) rc = segflake_segment_tag_new(g, json_get_string(c, "tag"), &t);
        vexpect_error(rc, c, "error");
        CHECK(t == NULL);
        segflake_segment_tag_free(t);
        segflake_segment_generator_free(g);
        pthread_mutex_destroy(&vs.mu);
        t_end();
    }
}

static segflake_serial *serial_from_json(const json_value *o, fixed_clock *clock,
                                         segflake_status *rc) {
    segflake_serial_options opts;
    segflake_serial *s = NULL;
    const json_value *off = json_get(o, "utc_offset_minutes");
    uint64_t v;
    segflake_serial_options_init(&opts);
    if (json_get_u64(o, "worker_id", &v)) opts.worker_id = v;
    if (json_get_u64(o, "worker_digits", &v)) opts.worker_digits = (uint32_t)v;
    if (json_get_u64(o, "sequence_digits", &v)) opts.sequence_digits = (uint32_t)v;
    if (off && off->type == JSON_NUMBER) opts.utc_offset_minutes = (int32_t)strtol(off->text, NULL, 10);
    if (json_get_u64(o, "last", &v)) {
        opts.has_last = true;
        opts.last = v;
    }
    opts.clock = fixed_now;
    opts.clock_ctx = clock;
    *rc = segflake_serial_new(&opts, &s);
    return s;
}

static void run_serials(const char *file, const json_value *doc) {
    const char *groups[] = {"format", "format_errors", "next", "counter", "invalid_options"};
    size_t g, i, k;
    for (g = 0; g < doc->count; g++) {
        int found = 0;
        if (doc->items[g]->type != JSON_ARRAY) continue;
        for (k = 0; k < 5; k++) found |= strcmp(doc->keys[g], groups[k]) == 0;
        if (!found) {
            snprintf(vcase, sizeof vcase, "vector %s: group %s", file, doc->keys[g]);
            t_begin(vcase);
            t_fail(__FILE__, __LINE__, "unknown case group \"%s\"", doc->keys[g]);
            t_end();
        }
    }
    for (g = 0; g < 5; g++) {
        const json_value *cases = json_get(doc, groups[g]);
        for (i = 0; cases && i < cases->count; i++) {
            const json_value *c = cases->items[i];
            const json_value *o = json_get(c, "options");
            fixed_clock clock;
            segflake_status rc;
            segflake_serial *s;
            uint64_t v = 0;
            clock.now = 1744545600000ull;
            vbegin(file, groups[g], i, c);
            s = serial_from_json(o, &clock, &rc);
            if (g == 4) {
                vexpect_error(rc, c, "error");
                CHECK(s == NULL);
            } else if (!s) {
                t_fail(__FILE__, __LINE__, "options refused: %s", segflake_last_error_message());
            } else if (g == 0 || g == 1) {
                uint64_t second = vu64(c, "unix_ms") / 1000;
                rc = segflake_serial_format(s, second, vu64(c, "sequence"), &v);
                if (g == 1) {
                    vexpect_error(rc, c, "error");
                } else {
                    segflake_serial_parts p;
                    CHECK_OK(rc);
                    CHECK_U64(v, vu64(c, "serial"));
                    CHECK_OK(segflake_serial_date_prefix(s, second, &v));
                    CHECK_U64(v, vu64(c, "date"));
                    CHECK_OK(segflake_serial_decode(s, vu64(c, "serial"), &p));
                    CHECK_U64(p.unix_seconds, vu64(c, "unix_seconds"));
                    CHECK_U64(p.date, vu64(c, "date"));
                    CHECK_U64(p.worker_id, vu64(o, "worker_id"));
                    CHECK_U64(p.sequence, vu64(c, "sequence"));
                }
            } else {
                const json_value *steps = json_get(c, "steps");
                for (k = 0; steps && k < steps->count && !t_current_failures(); k++) {
                    const json_value *st = steps->items[k];
                    if (g == 2) {
                        clock.now = vu64(st, "unix_ms");
                        rc = segflake_serial_next(s, &v);
                        if (json_get_string(st, "error")) {
                            vexpect_error(rc, st, "error");
                        } else {
                            CHECK_OK(rc);
                            CHECK_U64(v, vu64(st, "serial"));
                        }
                    } else {
                        const json_value *want = json_get(st, "serial");
                        uint64_t second = 0;
                        bool accepted = false;
                        CHECK_OK(segflake_serial_counter_second(s, vu64(st, "now_ms"), &second));
                        CHECK_U64(second, vu64(st, "counter_second"));
                        CHECK_OK(segflake_serial_accept(s, second, vu64(st, "sequence"), &v, &accepted));
                        if (!want || want->type == JSON_NULL) {
                            CHECK(!accepted);
                        } else {
                            CHECK(accepted);
                            CHECK_U64(v, vu64(st, "serial"));
                        }
                    }
                }
            }
            segflake_serial_free(s);
            t_end();
        }
    }
}

/* dynamic_steps[]: the sans-I/O engine with explicit time and a Leaf store (max_id 1). */
static void run_engine_dynamic_steps(const char *file, const json_value *cases) {
    size_t i, k;
    for (i = 0; cases && i < cases->count; i++) {
        const json_value *c = cases->items[i];
        const json_value *fetches = json_get(c, "fetches");
        segflake_segment_options opts;
        segflake_segment_engine *e = NULL;
        uint64_t max_id = 1;
        vbegin(file, "dynamic_steps", i, c);
        CHECK(segment_options_from_json(json_get(c, "options"), &opts));
        CHECK_OK(segflake_segment_engine_new("t", &opts, &e));
        for (k = 0; e && fetches && k < fetches->count && !t_current_failures(); k++) {
            const json_value *f = fetches->items[k];
            uint64_t at = vu64(f, "at_ms"), step = 0, id, drained = 0;
            bool ready = true, wanted = false;
            segflake_allocation a;
            while (ready && drained < 100000000u) {
                CHECK_OK(segflake_segment_engine_try_next(e, &id, &ready));
                drained++;
            }
            CHECK_OK(segflake_segment_engine_begin_fetch(e, at, &step, &wanted));
            CHECK(wanted);
            CHECK_U64(step, vu64(f, "step"));
            max_id += step;
            a.max_id = max_id;
            a.step = step;
            CHECK_OK(segflake_segment_engine_complete_fetch(e, at, &a, NULL));
        }
        segflake_segment_engine_free(e);
        t_end();
    }
}

/* Returns 0 for files this suite has no runner for. */
int run_segment_vectors(const char *file, const json_value *doc) {
    if (strcmp(file, "segments.json") == 0) {
        size_t g;
        for (g = 0; g < doc->count; g++) {
            const char *k = doc->keys[g];
            if (doc->items[g]->type != JSON_ARRAY) continue;
            if (strcmp(k, "sequences") == 0) {
                run_segment_sequences(file, doc->items[g]);
            } else if (strcmp(k, "invalid") == 0) {
                run_segment_invalid(file, doc->items[g]);
            } else if (strcmp(k, "dynamic_steps") == 0) {
                run_engine_dynamic_steps(file, doc->items[g]);
            } else {
                snprintf(vcase, sizeof vcase, "vector %s: group %s", file, k);
                t_begin(vcase);
                t_fail(__FILE__, __LINE__, "unknown case group \"%s\"", k);
                t_end();
            }
        }
        return 1;
    }
    if (strcmp(file, "serials.json") == 0) {
        run_serials(file, doc);
        return 1;
    }
    return 0;
}
