/* Bad stores in C: every contract violation is refused and none of its IDs issued.
 * Each case hands out one good range [1, 1001), then keeps answering with a bad one; the
 * generator must issue exactly 1..=1000, then fail with SEGFLAKE_SEGMENTS_EXHAUSTED whose
 * message names the violation; once the store behaves again it resumes above everything.
 *   cc -std=c99 bad_store.c -I<prefix>/include <prefix>/lib/libsegflake.a -lpthread -ldl -lm */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <segflake.h>

typedef struct {
    pthread_mutex_t lock;
    int first_pending;
    segflake_allocation first, current;
} scripted;

static segflake_status allocate(void *ctx, const char *tag, uint64_t step, segflake_allocation *out, char *error,
                                size_t cap) {
    scripted *s = (scripted *)ctx;
    (void)tag; (void)step; (void)error; (void)cap;
    pthread_mutex_lock(&s->lock);
    if (s->first_pending) {
        *out = s->first;
        s->first_pending = 0;
    } else {
        *out = s->current;
    }
    pthread_mutex_unlock(&s->lock);
    return SEGFLAKE_OK;
}

struct bad_case {
    const char *name;
    int has_first;
    uint64_t bad_max_id, bad_step;
    const char *words;
};

static int run(const struct bad_case *c) {
    scripted s;
    segflake_segment_options opts;
    segflake_segment_store store = {allocate, &s, NULL};
    segflake_segment_generator *gen = NULL;
    segflake_segment_stats stats;
    uint64_t id = 0, issued = 0, expected = c->has_first ? 1000 : 0;
    segflake_status st = SEGFLAKE_OK;
    char message[2048];

    pthread_mutex_init(&s.lock, NULL);
    s.first_pending = c->has_first;
    s.first.max_id = 1001;
    s.first.step = 1000;
    s.current.max_id = c->bad_max_id;
    s.current.step = c->bad_step;
    segflake_segment_options_init(&opts);
    opts.step = 1000;
    opts.dynamic_step = false;
    opts.retry_backoff_ms = 5;
    opts.wait_timeout_ms = 300;
    if (segflake_segment_generator_new(&store, &opts, &gen) != SEGFLAKE_OK) {
        printf("%s: generator: %s\n", c->name, segflake_last_error_message());
        return 1;
    }
    while (issued <= 5000) {
        st = segflake_segment_next(gen, "t", &id);
        if (st != SEGFLAKE_OK) break;
        issued++;
        if (id != issued) {
            printf("%s: ID %" PRIu64 " issued where %" PRIu64 " was expected\n", c->name, id, issued);
            return 1;
        }
    }
    segflake_last_error_copy(message, sizeof message);
    if (issued != expected) {
        printf("%s: issued %" PRIu64 " IDs, expected %" PRIu64 "\n", c->name, issued, expected);
        return 1;
    }
    if (st != SEGFLAKE_SEGMENTS_EXHAUSTED || !strstr(message, "store contract violation") ||
        !strstr(message, c->words)) {
        printf("%s: got %s: %s (wanted SEGMENTS_EXHAUSTED naming the violation and '%s')\n", c->name,
               segflake_status_code(st), message, c->words);
        return 1;
    }
    if (segflake_segment_get_stats(gen, "t", &stats) != SEGFLAKE_OK || stats.failures < 1) {
        printf("%s: no failure recorded\n", c->name);
        return 1;
    }
    pthread_mutex_lock(&s.lock);
    s.current.max_id = 20001;
    s.current.step = 1000;
    pthread_mutex_unlock(&s.lock);
    if (segflake_segment_next(gen, "t", &id) != SEGFLAKE_OK || id != 19001) {
        printf("%s: resumed at %" PRIu64 " (%s), expected 19001\n", c->name, id, segflake_last_error_message());
        return 1;
    }
    segflake_segment_generator_free(gen);
    pthread_mutex_destroy(&s.lock);
    return 0;
}

int main(void) {
    static const struct bad_case cases[] = {
        {"overlap", 1, 1501, 1000, "overlaps or precedes"},
        {"smaller_max_id", 1, 600, 100, "overlaps or precedes"},
        {"same_range_twice", 1, 1001, 1000, "overlaps or precedes"},
        {"zero_step", 1, 3001, 0, "step 0"},
        {"max_id_below_step", 0, 500, 1000, "below step"},
        {"max_id_above_int64", 0, UINT64_MAX, 1000, "max_id"},
    };
    size_t i, n = sizeof cases / sizeof cases[0];
    for (i = 0; i < n; i++)
        if (run(&cases[i]) != 0) return 1;
    printf("%zu bad answers refused, no ID from them issued:", n);
    for (i = 0; i < n; i++) printf(" %s%s", cases[i].name, i + 1 < n ? "," : "\n");
    return 0;
}
