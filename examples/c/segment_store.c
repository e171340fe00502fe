/* Leaf-style segment IDs from C, with the store as a thread-safe callback.
 *
 *   cc -std=c99 segment_store.c $(pkg-config --cflags --libs segflake) -lpthread -o segment_store
 *   ./segment_store
 *
 * The store below keeps Leaf's leaf_alloc table in memory, guarded by a mutex. A real one
 * runs, in one transaction:
 *   UPDATE leaf_alloc SET max_id = max_id + ? WHERE biz_tag = ?;
 *   SELECT max_id FROM leaf_alloc WHERE biz_tag = ?;
 * and returns the new max_id with the step it used. The library calls it from its own
 * background threads, so it must be thread-safe; it reports failures with a status and a
 * message, which callers see as the cause of SEGFLAKE_SEGMENTS_EXHAUSTED. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <segflake.h>

typedef struct {
    pthread_mutex_t lock;
    struct {
        char biz_tag[129];
        uint64_t max_id;
    } rows[16];
    int nrows;
    int calls;
} leaf_table;

static segflake_status allocate(void *ctx, const char *tag, uint64_t step,
                                segflake_allocation *out, char *error, size_t error_capacity) {
    leaf_table *t = (leaf_table *)ctx;
    int i;
    pthread_mutex_lock(&t->lock);
    t->calls++;
    for (i = 0; i < t->nrows && strcmp(t->rows[i].biz_tag, tag) != 0; i++) {
    }
    if (i == t->nrows) {
        if (t->nrows == 16) {
            pthread_mutex_unlock(&t->lock);
            snprintf(error, error_capacity, "leaf_alloc has no row for biz_tag %s", tag);
            return SEGFLAKE_STORE_ERROR;
        }
        snprintf(t->rows[i].biz_tag, sizeof t->rows[i].biz_tag, "%s", tag);
        t->rows[i].max_id = 1; /* a fresh Leaf row */
        t->nrows++;
    }
    t->rows[i].max_id += step;
    out->max_id = t->rows[i].max_id;
    out->step = step;
    pthread_mutex_unlock(&t->lock);
    return SEGFLAKE_OK;
}

static void release(void *ctx) {
    leaf_table *t = (leaf_table *)ctx;
    printf("store released after %d allocate calls\n", t->calls);
    pthread_mutex_destroy(&t->lock);
}

typedef struct {
    segflake_segment_tag *orders;
    uint64_t first, last;
    int failed;
} worker;

static void *take(void *p) {
    worker *w = (worker *)p;
    int i;
    for (i = 0; i < 10000; i++) {
        uint64_t id;
        if (segflake_segment_tag_next(w->orders, &id) != SEGFLAKE_OK) {
            fprintf(stderr, "next: %s\n", segflake_last_error_message());
            w->failed = 1;
            return NULL;
        }
        if (i == 0) w->first = id;
        w->last = id;
    }
    return NULL;
}

int main(void) {
    static leaf_table table;
    segflake_segment_store store;
    segflake_segment_options opts;
    segflake_segment_generator *gen = NULL;
    segflake_segment_tag *orders = NULL;
    segflake_segment_stats st;
    pthread_t threads[4];
    worker workers[4];
    uint64_t user_id = 0;
    segflake_status s;
    int i, failed = 0;

    pthread_mutex_init(&table.lock, NULL);
    store.allocate = allocate;
    store.ctx = &table;
    store.release = release;
    segflake_segment_options_init(&opts);
    opts.step = 2000;
    if ((s = segflake_segment_generator_new(&store, &opts, &gen)) != SEGFLAKE_OK) {
        fprintf(stderr, "%s: %s\n", segflake_status_code(s), segflake_last_error_message());
        pthread_mutex_destroy(&table.lock);
        return 1;
    }
    if ((s = segflake_segment_tag_new(gen, "order", &orders)) != SEGFLAKE_OK) goto fail;

    for (i = 0; i < 4; i++) {
        workers[i].orders = orders;
        workers[i].failed = 0;
        pthread_create(&threads[i], NULL, take, &workers[i]);
    }
    for (i = 0; i < 4; i++) {
        pthread_join(threads[i], NULL);
        failed |= workers[i].failed;
        printf("thread %d: 10000 order IDs from %llu to %llu\n", i,
               (unsigned long long)workers[i].first, (unsigned long long)workers[i].last);
    }
    if ((s = segflake_segment_next(gen, "user", &user_id)) != SEGFLAKE_OK) goto fail;
    printf("first user ID: %llu\n", (unsigned long long)user_id);

    if ((s = segflake_segment_tag_get_stats(orders, &st)) != SEGFLAKE_OK) goto fail;
    printf("order: segment [%llu, %llu), position %llu, next ready: %s, step %llu, "
           "%llu fetches, %llu failures\n",
           (unsigned long long)st.current_start, (unsigned long long)st.current_end,
           (unsigned long long)st.position, st.next_ready ? "yes" : "no",
           (unsigned long long)st.step, (unsigned long long)st.fetches,
           (unsigned long long)st.failures);
    segflake_segment_tag_free(orders);
    segflake_segment_generator_free(gen); /* the store's release runs here */
    return failed;
fail:
    fprintf(stderr, "%s: %s\n", segflake_status_code(s), segflake_last_error_message());
    segflake_segment_tag_free(orders);
    segflake_segment_generator_free(gen);
    return 1;
}
