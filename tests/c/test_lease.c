/* Leased worker IDs through segflake_snowflake_new_leased with an in-memory registry
 * written in C: distinct worker IDs, distinct IDs, release on free, typed errors for a
 * registry that refuses, fails, forgets its data or answers outside the contract, owner
 * labels shared by generators, and NULL arguments. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#include "harness.h"
#include "json.h"

#define WORKERS 8 /* layout worker_bits = 3 */

typedef struct {
    pthread_mutex_t lock;
    char owner[WORKERS][SEGFLAKE_MAX_OWNER_TOKEN_LEN + 1];
    uint64_t expires[WORKERS];
    int64_t mark[WORKERS];
    int mode; /* 0: correct, 1: refuse every claim, 2: renew fails, 3: renew answers 5 */
    int freed;
} memory_registry;

static uint64_t mono_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* How long a test waits for what the library's lease thread does by itself: generous, as
 * the suite also runs under valgrind, under qemu and beside other work. */
#define PATIENCE_MS 20000

static bool held_by_other(memory_registry *r, uint64_t w, const char *owner) {
    return r->owner[w][0] && strcmp(r->owner[w], owner) != 0 && r->expires[w] > mono_ms();
}

static segflake_status mem_claim(void *ctx, uint64_t w, const char *owner, uint64_t ttl_ms,
                                 int64_t *out_mark, char *err, size_t cap) {
    memory_registry *r = ctx;
    (void)err, (void)cap;
    pthread_mutex_lock(&r->lock);
    if (r->mode == 1 || held_by_other(r, w, owner)) {
        *out_mark = SEGFLAKE_MARK_NOT_HELD;
    } else {
        snprintf(r->owner[w], sizeof r->owner[w], "%s", owner);
        r->expires[w] = mono_ms() + ttl_ms;
        *out_mark = r->mark[w];
    }
    pthread_mutex_unlock(&r->lock);
    return SEGFLAKE_OK;
}

static segflake_status mem_renew(void *ctx, uint64_t w, const char *owner, uint64_t ttl_ms,
                                 uint64_t mark_ms, uint64_t reported_ms, int64_t *out_mark,
                                 char *err, size_t cap) {
    memory_registry *r = ctx;
    segflake_status status = SEGFLAKE_OK;
    (void)reported_ms;
    pthread_mutex_lock(&r->lock);
    if (r->mode == 2) {
        snprintf(err, cap, "connection refused by the test registry");
        status = SEGFLAKE_REGISTRY_ERROR;
    } else if (r->mode == 3) {
        *out_mark = 5; /* below the mark asked for: outside the contract */
    } else if (!r->owner[w][0] && r->mark[w] == 0) {
        *out_mark = SEGFLAKE_MARK_LOST; /* no record at all: the registry forgot it */
    } else if (strcmp(r->owner[w], owner) != 0 || r->expires[w] <= mono_ms()) {
        *out_mark = SEGFLAKE_MARK_NOT_HELD;
    } else {
        r->expires[w] = mono_ms() + ttl_ms;
        if ((int64_t)mark_ms > r->mark[w]) r->mark[w] = (int64_t)mark_ms;
        *out_mark = r->mark[w];
    }
    pthread_mutex_unlock(&r->lock);
    return status;
}

static segflake_status mem_release(void *ctx, uint64_t w, const char *owner, uint64_t mark_ms,
                                   bool *out_released, char *err, size_t cap) {
    memory_registry *r = ctx;
    (void)err, (void)cap;
    pthread_mutex_lock(&r->lock);
    *out_released = strcmp(r->owner[w], owner) == 0;
    if (*out_released) {
        r->owner[w][0] = '\0';
        r->expires[w] = 0;
        r->mark[w] = (int64_t)mark_ms;
    }
    pthread_mutex_unlock(&r->lock);
    return SEGFLAKE_OK;
}

static void mem_free(void *ctx) {
    memory_registry *r = ctx;
    pthread_mutex_lock(&r->lock);
    r->freed++;
    pthread_mutex_unlock(&r->lock);
}

/* Waits (at most PATIENCE_MS) until the library released the registry `times` times, then
 * frees it; returns whether it did. */
static bool registry_done(memory_registry *r, int times) {
    int freed = 0;
    for (uint64_t end = mono_ms() + PATIENCE_MS; mono_ms() < end;) {
        pthread_mutex_lock(&r->lock);
        freed = r->freed;
        pthread_mutex_unlock(&r->lock);
        if (freed >= times) break;
        sleep_ms(10);
    }
    if (freed != times) return false;
    pthread_mutex_destroy(&r->lock);
    free(r);
    return true;
}

static memory_registry *registry_new(int mode) {
    memory_registry *r = calloc(1, sizeof *r);
    pthread_mutex_init(&r->lock, NULL);
    r->mode = mode;
    return r;
}

static segflake_registry registry_of(memory_registry *r) {
    segflake_registry reg = {mem_claim, mem_renew, mem_release, NULL, r, mem_free};
    return reg;
}

static segflake_options *small_layout(void) {
    segflake_options *o = NULL, *layout = NULL;
    CHECK_OK(segflake_options_new("snowflake", &o));
    CHECK_OK(segflake_options_new("layout", &layout));
    CHECK_OK(segflake_options_set_str(layout, "preset", "twitter"));
    CHECK_OK(segflake_options_set_u64(layout, "worker_bits", 3));
    CHECK_OK(segflake_options_set_options(o, "layout", layout));
    segflake_options_free(layout);
    return o;
}

/* A worker ID without a mark starts mark_ahead_ms + clock_skew_allowance_ms ahead of the
 * clock, so start-up waits that long: short here. */
#define MARK_AHEAD_MS 200

static segflake_options *lease_options(uint64_t ttl_ms, uint64_t claim_wait_ms) {
    segflake_options *o = NULL;
    CHECK_OK(segflake_options_new("lease", &o));
    CHECK_OK(segflake_options_set_u64(o, "lease_ttl_ms", ttl_ms));
    CHECK_OK(segflake_options_set_u64(o, "claim_wait_ms", claim_wait_ms));
    CHECK_OK(segflake_options_set_u64(o, "mark_ahead_ms", MARK_AHEAD_MS));
    CHECK_OK(segflake_options_set_u64(o, "clock_skew_allowance_ms", 0));
    return o;
}

static uint64_t wall_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* `n` IDs from `g`, waiting out LEASE_EXPIRED for at most PATIENCE_MS: under emulation or
 * on busy cores a renewal can come after the clock reached the last accepted mark, and the
 * generator refuses (as it must) until it comes. Any other status is returned at once. */
static segflake_status next_n_patiently(segflake_snowflake *g, uint64_t *out, size_t n) {
    for (uint64_t end = mono_ms() + PATIENCE_MS;;) {
        segflake_status s = segflake_snowflake_next_n(g, out, n);
        if (s != SEGFLAKE_LEASE_EXPIRED || mono_ms() >= end) return s;
        sleep_ms(10);
    }
}

static void distinct_workers_and_ids_and_release_on_free(void) {
    memory_registry *r = registry_new(0);
    segflake_registry reg = registry_of(r);
    segflake_options *so = small_layout(), *lo = lease_options(2000, 1000);
    segflake_snowflake *g[3] = {NULL, NULL, NULL};
    uint64_t worker[3], *ids = malloc(3 * 10000 * sizeof *ids);
    for (int i = 0; i < 3; i++) {
        CHECK_OK(segflake_snowflake_new_leased(so, lo, &reg, NULL, &g[i]));
        if (!g[i]) goto done;
        CHECK_OK(segflake_snowflake_worker_id(g[i], &worker[i]));
        CHECK_OK(next_n_patiently(g[i], ids + i * 10000, 10000));
    }
    CHECK(worker[0] != worker[1] && worker[1] != worker[2] && worker[0] != worker[2]);
    qsort(ids, 30000, sizeof *ids, cmp_u64);
    for (int i = 1; i < 30000; i++) CHECK(ids[i] != ids[i - 1]);

    segflake_record *rec = NULL;
    CHECK_OK(segflake_snowflake_lease_stats(g[0], &rec));
    const char *state = NULL;
    CHECK_OK(segflake_record_get_str(rec, "state", &state, NULL));
    CHECK_STR(state, "held");
    uint64_t held = 0;
    CHECK_OK(segflake_record_get_u64(rec, "worker_id", &held, NULL));
    CHECK_U64(held, worker[0]);
    segflake_record_free(rec);

    for (int i = 0; i < 3; i++) {
        segflake_snowflake_free(g[i]);
        g[i] = NULL;
    }
    for (int i = 0; i < 3; i++) CHECK(r->owner[worker[i]][0] == '\0'); /* released */
    CHECK(r->mark[worker[0]] > 0); /* the last ID's time */
done:
    for (int i = 0; i < 3; i++) segflake_snowflake_free(g[i]);
    CHECK(registry_done(r, 3));
    free(ids);
    segflake_options_free(so);
    segflake_options_free(lo);
}

static void every_id_held_is_no_free_worker_id(void) {
    memory_registry *r = registry_new(1);
    segflake_registry reg = registry_of(r);
    segflake_options *so = small_layout(), *lo = lease_options(2000, 200);
    segflake_snowflake *g = NULL;
    uint64_t started = mono_ms();
    CHECK_ERR(segflake_snowflake_new_leased(so, lo, &reg, NULL, &g), SEGFLAKE_NO_FREE_WORKER_ID);
    CHECK_MSG("8 of 8");
    CHECK(g == NULL);
    CHECK(mono_ms() - started < 5000);
    CHECK(registry_done(r, 1)); /* the library took the registry and let it go */
    segflake_options_free(so);
    segflake_options_free(lo);
}

static void a_failing_registry_ends_the_lease_with_its_error(void) {
    memory_registry *r = registry_new(0);
    segflake_registry reg = registry_of(r);
    segflake_options *so = small_layout(), *lo = lease_options(300, 1000);
    segflake_snowflake *g = NULL;
    uint64_t id = 0;
    CHECK_OK(segflake_snowflake_new_leased(so, lo, &reg, "c-test-owner", &g));
    if (!g) goto done;
    CHECK_OK(segflake_snowflake_next(g, &id));
    pthread_mutex_lock(&r->lock);
    r->mode = 2;
    pthread_mutex_unlock(&r->lock);
    /* The lease ends once no renewal succeeded within its TTL. On busy cores it can also
     * end before the renewal thread tried once, naming no error: waited out. */
    segflake_status s = SEGFLAKE_OK;
    for (uint64_t end = mono_ms() + PATIENCE_MS; mono_ms() < end; sleep_ms(10)) {
        s = segflake_snowflake_next(g, &id);
        if (s != SEGFLAKE_OK && s != SEGFLAKE_LEASE_EXPIRED) break;
        if (s == SEGFLAKE_LEASE_EXPIRED && strstr(segflake_last_error_message(), "test registry")) break;
    }
    CHECK_U64(s, SEGFLAKE_LEASE_EXPIRED);
    CHECK_MSG("connection refused by the test registry");
    /* Back: the generator claims again and IDs resume by themselves. */
    pthread_mutex_lock(&r->lock);
    r->mode = 0;
    pthread_mutex_unlock(&r->lock);
    for (uint64_t end = mono_ms() + PATIENCE_MS; s != SEGFLAKE_OK && mono_ms() < end;) {
        sleep_ms(25);
        s = segflake_snowflake_next(g, &id);
    }
    CHECK_U64(s, SEGFLAKE_OK);
done:
    segflake_snowflake_free(g);
    CHECK(registry_done(r, 1));
    segflake_options_free(so);
    segflake_options_free(lo);
}

static void answers_outside_the_contract_are_counted_failures(void) {
    memory_registry *r = registry_new(0);
    segflake_registry reg = registry_of(r);
    segflake_options *so = small_layout(), *lo = lease_options(600, 1000);
    segflake_snowflake *g = NULL;
    CHECK_OK(segflake_snowflake_new_leased(so, lo, &reg, NULL, &g));
    if (!g) goto done;
    pthread_mutex_lock(&r->lock);
    r->mode = 3;
    pthread_mutex_unlock(&r->lock);
    segflake_record *rec = NULL;
    uint64_t failures = 0;
    /* The next renewal (a third of the lease away) meets the bad answer. */
    for (uint64_t end = mono_ms() + PATIENCE_MS; failures == 0 && mono_ms() < end;) {
        sleep_ms(20);
        segflake_record_free(rec);
        rec = NULL;
        CHECK_OK(segflake_snowflake_lease_stats(g, &rec));
        if (!rec) break;
        CHECK_OK(segflake_record_get_u64(rec, "failures", &failures, NULL));
    }
    CHECK(failures >= 1);
    const char *last = NULL;
    bool present = false;
    CHECK_OK(segflake_record_get_str(rec, "last_error", &last, &present));
    CHECK(present && last && strstr(last, "outside the registry contract"));
    segflake_record_free(rec);
    pthread_mutex_lock(&r->lock);
    r->mode = 0;
    pthread_mutex_unlock(&r->lock);
done:
    segflake_snowflake_free(g);
    CHECK(registry_done(r, 1));
    segflake_options_free(so);
    segflake_options_free(lo);
}

static void a_registry_that_forgets_stops_ids_with_lost_data_then_recovers(void) {
    memory_registry *r = registry_new(0);
    segflake_registry reg = registry_of(r);
    /* A lease of 3 s: the renewal that finds the record gone comes long before it would
     * expire, even under qemu with both cores busy (with 600 ms the lease could expire
     * first and a fresh claim succeed, and the loss was never seen). */
    segflake_options *so = small_layout(), *lo = lease_options(3000, 1000);
    segflake_snowflake *g = NULL;
    uint64_t before = 0, after = 0, worker = 0, ts = 0, lost_at = 0;
    segflake_decoded d;
    CHECK_OK(segflake_snowflake_new_leased(so, lo, &reg, "c-test-forget", &g));
    if (!g) goto done;
    CHECK_OK(segflake_snowflake_worker_id(g, &worker));
    CHECK_OK(segflake_snowflake_next(g, &before));
    /* The registry loses everything (FLUSHALL, a restart without persistence). */
    pthread_mutex_lock(&r->lock);
    memset(r->owner, 0, sizeof r->owner);
    memset(r->expires, 0, sizeof r->expires);
    memset(r->mark, 0, sizeof r->mark);
    pthread_mutex_unlock(&r->lock);
    /* A renewal then finds no lease. On busy cores the lease can expire first, before the
     * renewal thread ran (LEASE_EXPIRED, no IDs either): waited out. */
    segflake_status s = SEGFLAKE_OK;
    for (uint64_t end = mono_ms() + PATIENCE_MS; mono_ms() < end; sleep_ms(5)) {
        s = segflake_snowflake_next(g, &before);
        if (s != SEGFLAKE_OK && s != SEGFLAKE_LEASE_EXPIRED) break;
    }
    lost_at = wall_ms();
    CHECK_U64(s, SEGFLAKE_REGISTRY_LOST_DATA);
    CHECK_STR(segflake_status_code(s), "REGISTRY_LOST_DATA");
    CHECK_MSG("lost the record of worker ID");
    /* The generator claims again by itself; IDs resume above anything an unseen holder of
     * the forgotten worker ID could have issued. */
    for (uint64_t end = mono_ms() + PATIENCE_MS; s != SEGFLAKE_OK && mono_ms() < end;) {
        sleep_ms(10);
        s = segflake_snowflake_next(g, &after);
        if (s != SEGFLAKE_OK) CHECK(s == SEGFLAKE_REGISTRY_LOST_DATA || s == SEGFLAKE_LEASE_EXPIRED);
    }
    CHECK_U64(s, SEGFLAKE_OK);
    CHECK(after > before);
    CHECK_OK(segflake_snowflake_decode(g, after, &d));
    ts = d.timestamp_ms;
    CHECK(ts + 50 >= lost_at + MARK_AHEAD_MS); /* above the claim's floor (with slack) */
    segflake_record *rec = NULL;
    CHECK_OK(segflake_snowflake_lease_stats(g, &rec));
    uint64_t lost = 0;
    CHECK_OK(segflake_record_get_u64(rec, "lost", &lost, NULL));
    CHECK(lost >= 1);
    segflake_record_free(rec);
done:
    segflake_snowflake_free(g);
    CHECK(registry_done(r, 1));
    segflake_options_free(so);
    segflake_options_free(lo);
}

static void generators_sharing_an_owner_label_get_distinct_worker_ids(void) {
    memory_registry *r = registry_new(0);
    segflake_registry reg = registry_of(r);
    segflake_options *so = small_layout(), *lo = lease_options(2000, 1000);
    segflake_snowflake *g[2] = {NULL, NULL};
    uint64_t worker[2] = {0, 0}, ids[2000];
    const char *owners[2] = {NULL, NULL};
    segflake_record *rec[2] = {NULL, NULL};
    for (int i = 0; i < 2; i++) {
        CHECK_OK(segflake_snowflake_new_leased(so, lo, &reg, "web-1", &g[i]));
        if (!g[i]) goto done;
        CHECK_OK(segflake_snowflake_worker_id(g[i], &worker[i]));
        CHECK_OK(next_n_patiently(g[i], ids + i * 1000, 1000));
        CHECK_OK(segflake_snowflake_lease_stats(g[i], &rec[i]));
        CHECK_OK(segflake_record_get_str(rec[i], "owner", &owners[i], NULL));
    }
    CHECK(worker[0] != worker[1]);
    /* The label, '#' and the generator's own nonce (16 hex digits). */
    for (int i = 0; i < 2; i++) {
        CHECK(owners[i] && strncmp(owners[i], "web-1#", 6) == 0 && strlen(owners[i]) == 6 + 16);
        CHECK_STR(r->owner[worker[i]], owners[i]);
    }
    CHECK(owners[0] && owners[1] && strcmp(owners[0], owners[1]) != 0);
    qsort(ids, 2000, sizeof ids[0], cmp_u64);
    for (int i = 1; i < 2000; i++) CHECK(ids[i] != ids[i - 1]);
done:
    for (int i = 0; i < 2; i++) {
        segflake_record_free(rec[i]);
        segflake_snowflake_free(g[i]);
    }
    CHECK(registry_done(r, 2));
    segflake_options_free(so);
    segflake_options_free(lo);
}

static void an_owner_label_is_checked(void) {
    memory_registry *r = registry_new(0);
    segflake_registry reg = registry_of(r);
    segflake_options *so = small_layout(), *lo = lease_options(2000, 1000);
    segflake_snowflake *g = NULL;
    char long_label[SEGFLAKE_MAX_OWNER_LABEL_LEN + 2];
    memset(long_label, 'a', sizeof long_label - 1);
    long_label[sizeof long_label - 1] = '\0';
    CHECK_ERR(segflake_snowflake_new_leased(so, lo, &reg, long_label, &g), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_MSG("owner label");
    CHECK(g == NULL);
    reg = registry_of(r);
    CHECK_ERR(segflake_snowflake_new_leased(so, lo, &reg, "", &g), SEGFLAKE_INVALID_ARGUMENT);
    CHECK(registry_done(r, 2));
    segflake_options_free(so);
    segflake_options_free(lo);
}

static void bad_arguments_are_refused(void) {
    memory_registry *r = registry_new(0);
    segflake_registry reg = registry_of(r), no_renew = registry_of(r);
    segflake_snowflake *g = NULL;
    segflake_options *so = NULL, *wrong = NULL;
    no_renew.renew = NULL;
    no_renew.free_ctx = NULL;
    CHECK_ERR(segflake_snowflake_new_leased(NULL, NULL, NULL, NULL, &g), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_snowflake_new_leased(NULL, NULL, &reg, NULL, NULL), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_snowflake_new_leased(NULL, NULL, &no_renew, NULL, &g), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_MSG("registry->renew is NULL");
    CHECK_OK(segflake_options_new("snowflake", &so));
    CHECK_OK(segflake_options_set_u64(so, "worker_id", 3));
    CHECK_ERR(segflake_snowflake_new_leased(so, NULL, &reg, NULL, &g), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_MSG("preferred_worker_id");
    CHECK_OK(segflake_options_new("segment", &wrong));
    CHECK_ERR(segflake_snowflake_new_leased(NULL, wrong, &reg, NULL, &g), SEGFLAKE_INVALID_ARGUMENT);
    CHECK(g == NULL);
    segflake_options *lo = NULL;
    CHECK_OK(segflake_options_new("lease", &lo));
    CHECK_ERR(segflake_options_set_u64(lo, "lease_ttl_ms", 5), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_MSG("allowed integers 100..=86400000");
    segflake_record *rec = NULL;
    segflake_snowflake *plain = NULL;
    CHECK_OK(segflake_options_set_u64(so, "worker_id", 1));
    CHECK_OK(segflake_snowflake_new_with(so, NULL, NULL, &plain));
    CHECK_ERR(segflake_snowflake_lease_stats(plain, &rec), SEGFLAKE_INVALID_ARGUMENT);
    segflake_snowflake_free(plain);
    segflake_options_free(so);
    segflake_options_free(wrong);
    segflake_options_free(lo);
    /* The two calls given `reg` (with free_ctx) and an out pointer took it and let it go;
     * the one with a NULL out pointer took nothing. */
    CHECK(registry_done(r, 2));
}

static void test_registry_protocol_bad_input(void);

void run_lease_tests(void) {
    t_run("registry protocols: bad input gets typed errors", test_registry_protocol_bad_input);
    t_run("lease: distinct worker IDs and IDs, released on free", distinct_workers_and_ids_and_release_on_free);
    t_run("lease: every ID held is NO_FREE_WORKER_ID naming the count", every_id_held_is_no_free_worker_id);
    t_run("lease: a failing registry ends the lease with its error, then recovers",
          a_failing_registry_ends_the_lease_with_its_error);
    t_run("lease: answers outside the contract are counted failures", answers_outside_the_contract_are_counted_failures);
    t_run("lease: a registry that forgets gives REGISTRY_LOST_DATA, then recovers above the floor",
          a_registry_that_forgets_stops_ids_with_lost_data_then_recovers);
    t_run("lease: generators sharing an owner label get distinct worker IDs",
          generators_sharing_an_owner_label_get_distinct_worker_ids);
    t_run("lease: an owner label is checked", an_owner_label_is_checked);
    t_run("lease: bad arguments are refused", bad_arguments_are_refused);
}

/* ---- the registry protocols: tests/vectors/{zookeeper,etcd,redis,sql}.json ------------- */


/* `expected` with a SQL statement named "dialect.call" replaced by the core's text (the
 * vectors name statements; the protocol sends their text). Returns a new value to free. */
static json_value *with_statement_text(const json_value *expected) {
    char *text = json_write(expected), err[128];
    json_value *copy = text ? json_parse(text, err, sizeof err) : NULL;
    size_t i;
    free(text);
    for (i = 0; copy && copy->type == JSON_OBJECT && i < copy->count; i++) {
        char db[32], *dot;
        const char *stmt;
        if (strcmp(copy->keys[i], "statement") != 0 || copy->items[i]->type != JSON_STRING) continue;
        snprintf(db, sizeof db, "%s", copy->items[i]->text);
        dot = strchr(db, '.');
        if (!dot) continue;
        *dot = '\0';
        stmt = segflake_registry_statement(db, dot + 1);
        if (stmt) {
            char *t = (char *)malloc(strlen(stmt) + 1);
            if (t) {
                strcpy(t, stmt);
                free(copy->items[i]->text);
                copy->items[i]->text = t;
            }
        }
    }
    return copy;
}

/* Compares the step text with `expected` (an op, or the call's answer). */
static void check_step(const char *where, const char *step_text, const json_value *expected,
                       const char *key) {
    char err[128];
    json_value *step = json_parse(step_text, err, sizeof err);
    json_value *want = with_statement_text(expected);
    const json_value *got = step;
    if (key) got = step ? json_get(step, key) : NULL;
    if (!step || !want || !json_equal(got, want)) {
        char *w = json_write(expected);
        t_fail(__FILE__, __LINE__, "%s: stepped %s, expected %s%s", where, step_text,
               key ? key : "", w ? w : "?");
        free(w);
    }
    json_free(step);
    json_free(want);
}

static void run_registry_case(const char *file, const json_value *doc, size_t n, const json_value *c) {
    const json_value *calls = json_get(c, "calls");
    const char *kind = json_get_string(c, "kind");
    char *config = json_write(json_get(doc, "config"));
    segflake_registry_protocol *p = NULL;
    char name[512];
    size_t i, j;
    snprintf(name, sizeof name, "vector %s cases[%llu]: %s", file, (ull)n,
             json_get_string(c, "name") ? json_get_string(c, "name") : "");
    t_begin(name);
    if (!kind) kind = json_get_string(doc, "kind");
    CHECK_OK(segflake_registry_protocol_new(kind, config, &p));
    for (i = 0; p && calls && i < calls->count; i++) {
        const json_value *call = calls->items[i], *ex = json_get(call, "exchange");
        const json_value *session = json_get(call, "session"), *now = json_get(call, "now_ms");
        const char *want_error = json_get_string(call, "error_contains");
        char *args = json_write(json_get(call, "args")), context[96] = "null", where[64];
        const char *step = NULL;
        if (session && now)
            snprintf(context, sizeof context, "{\"session\":%s,\"now_ms\":%s}", session->text,
                     now->text);
        CHECK_OK(segflake_registry_protocol_start(p, json_get_string(call, "call"), args, context,
                                                  &step));
        free(args);
        for (j = 0; step && ex && j < ex->count; j++) {
            char *reply = json_write(json_get(ex->items[j], "reply"));
            snprintf(where, sizeof where, "call %llu request %llu", (ull)i, (ull)j);
            check_step(where, step, json_get(ex->items[j], "op"), NULL);
            CHECK_OK(segflake_registry_protocol_resume(p, reply, &step));
            free(reply);
        }
        snprintf(where, sizeof where, "call %llu", (ull)i);
        if (!step) {
            t_fail(__FILE__, __LINE__, "%s: no step", where);
        } else if (want_error) {
            char err[128];
            json_value *got = json_parse(step, err, sizeof err);
            const char *message = got ? json_get_string(got, "error") : NULL;
            if (!message || !strstr(message, want_error))
                t_fail(__FILE__, __LINE__, "%s: %s lacks the error %s", where, step, want_error);
            json_free(got);
        } else {
            check_step(where, step, json_get(call, "answer"), "answer");
        }
    }
    segflake_registry_protocol_free(p);
    free(config);
    t_end();
}

int run_registry_vectors(const char *file, const json_value *doc) {
    const json_value *cases;
    size_t i;
    if (strcmp(file, "zookeeper.json") != 0 && strcmp(file, "etcd.json") != 0 &&
        strcmp(file, "redis.json") != 0 && strcmp(file, "sql.json") != 0)
        return 0;
    cases = json_get(doc, "cases");
    for (i = 0; cases && i < cases->count; i++) run_registry_case(file, doc, i, cases->items[i]);
    return 1;
}

/* Bad input through the C API: typed errors, never a crash. */
static void test_registry_protocol_bad_input(void) {
    segflake_registry_protocol *p = NULL;
    const char *step = NULL, *facts = NULL;
    CHECK_ERR(segflake_registry_protocol_new("consul", "{}", &p), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_MSG("zookeeper, etcd, redis, postgres, mysql");
    CHECK_ERR(segflake_registry_protocol_new("etcd", "{", &p), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_MSG("config_json is not JSON at byte 1");
    CHECK_ERR(segflake_registry_protocol_new("zookeeper", "{\"identity\":\"x\"}", &p),
              SEGFLAKE_INVALID_ARGUMENT);
    CHECK_MSG("not IP:PORT");
    CHECK_ERR(segflake_registry_protocol_new(NULL, "{}", &p), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_registry_protocol_new("etcd", "{}", NULL), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_OK(segflake_registry_protocol_new("etcd", "{\"prefix\":\"/p\"}", &p));
    if (!p) return;
    CHECK_ERR(segflake_registry_protocol_start(p, "claim", "{}", NULL, &step),
              SEGFLAKE_INVALID_ARGUMENT);
    CHECK_MSG("not an array");
    CHECK_ERR(segflake_registry_protocol_start(NULL, "peers", "[]", NULL, &step),
              SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_registry_protocol_start(p, "peers", "[]", NULL, NULL),
              SEGFLAKE_INVALID_ARGUMENT);
    CHECK_OK(segflake_registry_protocol_start(p, "claim", "[1]", NULL, &step));
    CHECK(step && strstr(step, "claim takes 3 arguments, not 1"));
    CHECK_OK(segflake_registry_protocol_start(p, "peers", "[]", NULL, &step));
    CHECK_STR(step, "{\"op\": \"prefix\", \"prefix\": \"/p/report/\"}");
    CHECK_ERR(segflake_registry_protocol_resume(p, "[", &step), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_OK(segflake_registry_protocol_resume(p, "{\"kvs\":[[\"/p/report/2\",\"77\"]]}", &step));
    CHECK_STR(step, "{\"answer\": [[2, 77, 0]]}");
    CHECK_OK(segflake_registry_protocol_describe(p, &facts));
    CHECK_STR(facts, "{\"prefix\": \"/p\", \"leases\": []}");
    CHECK_ERR(segflake_registry_protocol_describe(p, NULL), SEGFLAKE_INVALID_ARGUMENT);
    segflake_registry_protocol_free(p);
    segflake_registry_protocol_free(NULL);
}
