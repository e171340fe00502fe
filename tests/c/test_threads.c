/* Several pthreads share one generator: every ID is unique, and each thread sees its own
 * IDs strictly increase. The last error is per thread. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdlib.h>

#include "harness.h"

#define THREADS 4
#define PER_THREAD 40000
#define BATCH 64

typedef struct {
    const segflake_snowflake *gen;
    uint64_t *ids;
    size_t count;
    int errors;
    int decreases;
} worker_arg;

static void *take_ids(void *p) {
    worker_arg *a = (worker_arg *)p;
    uint64_t prev = 0;
    size_t i = 0, k;
    while (i < a->count) {
        if ((i / BATCH) % 2 == 0 && a->count - i >= BATCH) {
            if (segflake_snowflake_next_n(a->gen, a->ids + i, BATCH) != SEGFLAKE_OK) a->errors++;
            for (k = 0; k < BATCH; k++) {
                if (a->ids[i + k] <= prev) a->decreases++;
                prev = a->ids[i + k];
            }
            i += BATCH;
        } else {
            if (segflake_snowflake_next(a->gen, &a->ids[i]) != SEGFLAKE_OK) a->errors++;
            if (a->ids[i] <= prev) a->decreases++;
            prev = a->ids[i];
            i++;
        }
    }
    return NULL;
}

static int cmp_u64(const void *x, const void *y) {
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return a < b ? -1 : a > b;
}

static void test_shared_generator(void) {
    segflake_snowflake_options o;
    segflake_snowflake *gen = NULL;
    pthread_t threads[THREADS];
    worker_arg args[THREADS];
    uint64_t *all = (uint64_t *)calloc((size_t)THREADS * PER_THREAD, sizeof *all);
    size_t t, i, dups = 0;
    CHECK(all != NULL);
    CHECK_OK(segflake_snowflake_options_init(&o, 77));
    CHECK_OK(segflake_snowflake_new(&o, &gen));
    if (!all || !gen) goto done;
    for (t = 0; t < THREADS; t++) {
        args[t].gen = gen;
        args[t].ids = all + t * PER_THREAD;
        args[t].count = PER_THREAD;
        args[t].errors = 0;
        args[t].decreases = 0;
        CHECK(pthread_create(&threads[t], NULL, take_ids, &args[t]) == 0);
    }
    for (t = 0; t < THREADS; t++) {
        CHECK(pthread_join(threads[t], NULL) == 0);
        CHECK(args[t].errors == 0);
        CHECK(args[t].decreases == 0);
    }
    qsort(all, (size_t)THREADS * PER_THREAD, sizeof *all, cmp_u64);
    for (i = 1; i < (size_t)THREADS * PER_THREAD; i++) dups += all[i] == all[i - 1];
    CHECK_U64(dups, 0);
    CHECK(all[0] != 0);
done:
    segflake_snowflake_free(gen);
    free(all);
}

typedef struct {
    segflake_status seen;
    char message[256];
} error_arg;

static void *fail_in_thread(void *p) {
    error_arg *a = (error_arg *)p;
    uint64_t id;
    a->seen = segflake_parse_base62("too short", &id);
    segflake_last_error_copy(a->message, sizeof a->message);
    return NULL;
}

static void test_last_error_is_per_thread(void) {
    pthread_t th;
    error_arg arg;
    uint64_t id;
    memset(&arg, 0, sizeof arg);
    CHECK_ERR(segflake_parse_decimal("-1", &id), SEGFLAKE_PARSE_ERROR);
    CHECK(pthread_create(&th, NULL, fail_in_thread, &arg) == 0);
    CHECK(pthread_join(th, NULL) == 0);
    CHECK_U64(arg.seen, SEGFLAKE_PARSE_ERROR);
    CHECK(strstr(arg.message, "exactly 11") != NULL);
    /* This thread still sees its own error. */
    CHECK(strstr(segflake_last_error_message(), "decimal") != NULL);
    CHECK(strstr(segflake_last_error_message(), "exactly 11") == NULL);
}

void run_thread_tests(void) {
    t_run("4 pthreads share one generator: unique, per-thread increasing",
          test_shared_generator);
    t_run("the last error is per thread", test_last_error_is_per_thread);
}
