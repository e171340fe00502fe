/* The growable API: options builders (segflake_options_*), the *_new_with constructors and
 * records read by name (segflake_record_*); and tests/vectors/options.json fed through the
 * setters, one call per input key, compared with the snake-case expectations. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdlib.h>

#include "harness.h"
#include "json.h"

/* ---- options.json ---- */

/* Feeds one JSON input value to the setter of its kind. */
static segflake_status set_json(segflake_options *o, const char *key, const json_value *v) {
    uint64_t u;
    size_t i;
    segflake_options *nested = NULL;
    segflake_status s;
    switch (v->type) {
    case JSON_NULL: return segflake_options_unset(o, key);
    case JSON_BOOL: return segflake_options_set_bool(o, key, v->boolean != 0);
    case JSON_STRING: return segflake_options_set_str(o, key, v->text);
    case JSON_NUMBER:
        if (strpbrk(v->text, ".eE")) return segflake_options_set_f64(o, key, strtod(v->text, NULL));
        if (v->text[0] == '-') return segflake_options_set_i64(o, key, strtoll(v->text, NULL, 10));
        if (json_text_u64(v->text, &u)) return segflake_options_set_u64(o, key, u);
        return segflake_options_set_text(o, key, v->text);
    case JSON_OBJECT:
        /* {"int": "digits"}: an exact integer, possibly beyond uint64_t. */
        if (v->count == 1 && strcmp(v->keys[0], "int") == 0 && v->items[0]->type == JSON_STRING) {
            if (json_text_u64(v->items[0]->text, &u)) return segflake_options_set_u64(o, key, u);
            return segflake_options_set_text(o, key, v->items[0]->text);
        }
        /* A nested options object (a snowflake's layout): a builder of the set it names. */
        s = segflake_options_new(key, &nested);
        for (i = 0; s == SEGFLAKE_OK && i < v->count; i++) s = set_json(nested, v->keys[i], v->items[i]);
        if (s == SEGFLAKE_OK) s = segflake_options_set_options(o, key, nested);
        segflake_options_free(nested);
        return s;
    default: return segflake_options_set_str(o, key, "an array");
    }
}

/* Checks every expected setting (nested objects as "outer.inner"); returns how many. */
static size_t check_settings(const segflake_record *rec, const json_value *want, const char *prefix) {
    size_t i, n = 0;
    for (i = 0; i < want->count; i++) {
        const json_value *w = want->items[i];
        char name[96];
        uint64_t u = 0, wu = 0;
        int64_t s64 = 0;
        bool b = false, present = true;
        const char *text = NULL;
        snprintf(name, sizeof name, "%.40s%.50s", prefix, want->keys[i]);
        if (w->type == JSON_OBJECT) {
            char inner[128];
            snprintf(inner, sizeof inner, "%s.", name);
            n += check_settings(rec, w, inner);
            continue;
        }
        n++;
        if (w->type == JSON_NULL) {
            CHECK_OK(segflake_record_get_u64(rec, name, &u, &present));
            if (present) t_fail(__FILE__, __LINE__, "%s is set, expected absent", name);
        } else if (w->type == JSON_BOOL) {
            CHECK_OK(segflake_record_get_bool(rec, name, &b, NULL));
            if (b != (w->boolean != 0)) t_fail(__FILE__, __LINE__, "%s differs", name);
        } else if (w->type == JSON_NUMBER && w->text[0] == '-') {
            CHECK_OK(segflake_record_get_i64(rec, name, &s64, NULL));
            CHECK(s64 == strtoll(w->text, NULL, 10));
        } else if (json_text_u64(w->text, &wu)) {
            /* A number, or an integer beyond 2^53 written as a decimal string. */
            CHECK_OK(segflake_record_get_u64(rec, name, &u, NULL));
            if (u != wu) t_fail(__FILE__, __LINE__, "%s is %llu, expected %s", name, (ull)u, w->text);
        } else {
            CHECK_OK(segflake_record_get_str(rec, name, &text, NULL));
            CHECK_STR(text, w->text);
        }
    }
    return n;
}

int run_options_vectors(const char *file, const json_value *doc) {
    const json_value *cases = json_get(doc, "cases");
    uint64_t now_ms = 0;
    size_t i, k;
    char name[512];
    if (strcmp(file, "options.json") != 0) return 0;
    t_begin("vector options.json: now_ms and cases");
    CHECK(json_get_u64(doc, "now_ms", &now_ms));
    CHECK(cases && cases->type == JSON_ARRAY && cases->count > 0);
    t_end();
    for (i = 0; cases && i < cases->count; i++) {
        const json_value *c = cases->items[i];
        const json_value *input = json_get(c, "input");
        const json_value *snake = json_get(c, "snake");
        const json_value *err = snake ? json_get(snake, "error") : NULL;
        const json_value *want = snake ? json_get(snake, "settings") : NULL;
        segflake_options *o = NULL;
        segflake_record *rec = NULL;
        segflake_status s;
        snprintf(name, sizeof name, "vector options.json cases[%llu]: %s", (ull)i,
                 json_get_string(c, "name") ? json_get_string(c, "name") : "?");
        t_begin(name);
        s = segflake_options_new(json_get_string(c, "set"), &o);
        CHECK_OK(s);
        for (k = 0; s == SEGFLAKE_OK && input && k < input->count; k++)
            s = set_json(o, input->keys[k], input->items[k]);
        if (s == SEGFLAKE_OK) s = segflake_options_check_at(o, now_ms, &rec);
        if (err) {
            CHECK_STR(segflake_status_code(s), json_get_string(err, "code"));
            if (s != SEGFLAKE_OK) CHECK_STR(segflake_last_error_message(), json_get_string(err, "message"));
            CHECK(rec == NULL);
        } else if (!want) {
            t_fail(__FILE__, __LINE__, "case has neither settings nor error");
        } else if (s != SEGFLAKE_OK) {
            t_fail(__FILE__, __LINE__, "refused: %s", segflake_last_error_message());
        } else {
            CHECK_U64(segflake_record_count(rec), check_settings(rec, want, ""));
        }
        segflake_record_free(rec);
        segflake_options_free(o);
        t_end();
    }
    return 1;
}

/* ---- the builder API ---- */

typedef struct {
    pthread_mutex_t lock;
    uint64_t max_id;
} counter_store;

static segflake_status counter_allocate(void *ctx, const char *tag, uint64_t step,
                                        segflake_allocation *out, char *error_buf,
                                        size_t error_capacity) {
    counter_store *s = (counter_store *)ctx;
    (void)tag;
    (void)error_buf;
    (void)error_capacity;
    pthread_mutex_lock(&s->lock);
    s->max_id += step;
    out->max_id = s->max_id;
    out->step = step;
    pthread_mutex_unlock(&s->lock);
    return SEGFLAKE_OK;
}

static void test_builder_checks_each_call(void) {
    segflake_options *o = NULL, *l = NULL;
    segflake_layout *layout = NULL;
    segflake_record *rec = NULL;
    uint64_t u = 0;
    const char *text = NULL;

    CHECK_ERR(segflake_options_new("leaf", &o), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_MSG("layout, snowflake, segment, serial");
    CHECK(o == NULL);
    CHECK_ERR(segflake_options_new(NULL, &o), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_options_new("segment", NULL), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_OK(segflake_options_new("segment", &o));
    if (!o) return;
    /* Unknown keys, kinds and ranges are refused at once, with the core's messages. */
    CHECK_ERR(segflake_options_set_u64(o, "maxStep", 5), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_MSG("unknown option \"maxStep\" (did you mean max_step?)");
    CHECK_ERR(segflake_options_set_u64(o, "prefetch_percent", 101), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_STR(segflake_last_error_message(),
              "invalid prefetch_percent: got 101; allowed integers 0..=100");
    CHECK_ERR(segflake_options_set_str(o, "step", "9"), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_MSG("got the string \"9\"");
    CHECK_ERR(segflake_options_set_f64(o, "step", 2.5), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_MSG("not an integer");
    CHECK_ERR(segflake_options_set_bool(o, "step", true), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_options_set_i64(o, "step", -3), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_MSG("got -3");
    CHECK_ERR(segflake_options_set_text(o, "step", "99999999999999999999999"),
              SEGFLAKE_INVALID_ARGUMENT);
    CHECK_MSG("got 99999999999999999999999");
    CHECK_ERR(segflake_options_unset(o, "steps"), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_options_set_u64(NULL, "step", 1), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_MSG("opts is NULL");
    CHECK_ERR(segflake_options_set_u64(o, NULL, 1), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_MSG("key is NULL");
    CHECK_ERR(segflake_options_set_str(o, "step", NULL), SEGFLAKE_INVALID_ARGUMENT);
    /* Accepted values; text is read as the option expects; the last value wins. */
    CHECK_OK(segflake_options_set_text(o, "step", "700"));
    CHECK_OK(segflake_options_set_text(o, "dynamic_step", "false"));
    CHECK_OK(segflake_options_set_f64(o, "store_timeout_ms", 2500.0));
    CHECK_OK(segflake_options_set_u64(o, "max_step", 5));
    CHECK_OK(segflake_options_set_u64(o, "max_step", 9000));
    CHECK_OK(segflake_options_check_at(o, 0, NULL));
    CHECK_OK(segflake_options_check_at(o, 0, &rec));
    CHECK_OK(segflake_record_get_u64(rec, "step", &u, NULL));
    CHECK_U64(u, 700);
    CHECK_OK(segflake_record_get_u64(rec, "max_step", &u, NULL));
    CHECK_U64(u, 9000);
    CHECK_OK(segflake_record_get_u64(rec, "store_timeout_ms", &u, NULL));
    CHECK_U64(u, 2500);
    segflake_record_free(rec);
    rec = NULL;
    /* Cross-field rules run when the options are used. */
    CHECK_OK(segflake_options_set_u64(o, "max_step", 5));
    CHECK_ERR(segflake_options_check_at(o, 0, &rec), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_STR(segflake_last_error_message(), "invalid step: 700 is out of range; allowed 1..=5 (max_step)");
    CHECK(rec == NULL);
    CHECK_OK(segflake_options_unset(o, "max_step"));
    CHECK_OK(segflake_options_check_at(o, 0, NULL));
    /* A builder of another set is refused by a constructor. */
    CHECK_ERR(segflake_layout_new_with(o, &layout), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_MSG("opts holds segment options; this function takes layout options");
    segflake_options_free(o);

    /* A snowflake's layout: a preset name, or a nested layout builder (copied when set). */
    CHECK_OK(segflake_options_new("snowflake", &o));
    CHECK_OK(segflake_options_new("layout", &l));
    if (!o || !l) return;
    CHECK_ERR(segflake_options_set_u64(l, "time_bits", 64), SEGFLAKE_INVALID_LAYOUT);
    CHECK_STR(segflake_last_error_message(), "invalid layout: time_bits: got 64; allowed integers 8..=63");
    CHECK_ERR(segflake_options_set_str(o, "layout", "leaf"), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_OK(segflake_options_set_str(l, "preset", "sonyflake"));
    CHECK_OK(segflake_options_set_str(l, "epoch_ms", "2025-06-01"));
    CHECK_OK(segflake_options_set_options(o, "layout", l));
    CHECK_OK(segflake_options_set_u64(l, "worker_bits", 2)); /* after the copy: no effect */
    CHECK_ERR(segflake_options_check_at(o, 1795000000000ull, &rec), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_MSG("invalid worker_id: is required");
    CHECK_OK(segflake_options_set_u64(o, "worker_id", 65535));
    CHECK_OK(segflake_options_check_at(o, 1795000000000ull, &rec));
    CHECK_OK(segflake_record_get_u64(rec, "layout.worker_bits", &u, NULL));
    CHECK_U64(u, 16);
    CHECK_OK(segflake_record_get_u64(rec, "layout.epoch_ms", &u, NULL));
    CHECK_U64(u, 1748736000000ull);
    CHECK_OK(segflake_record_get_str(rec, "layout.order", &text, NULL));
    CHECK_STR(text, "time-sequence-worker");
    CHECK_OK(segflake_record_get_str(rec, "sequence_start", &text, NULL));
    CHECK_STR(text, "zero");
    segflake_record_free(rec);
    segflake_options_free(l);
    segflake_options_free(o);
    segflake_options_free(NULL);
    segflake_record_free(NULL);
}

static void test_constructors_with_builders(void) {
    segflake_options *o = NULL;
    segflake_layout *layout = NULL;
    segflake_snowflake *g = NULL;
    segflake_serial *serial = NULL;
    segflake_record *rec = NULL;
    uint64_t id = 0, u = 0, worker = 0;
    int64_t offset = 0;
    bool present = true;
    const char *text = NULL;

    /* Layouts: NULL is the twitter preset. */
    CHECK_OK(segflake_layout_new_with(NULL, &layout));
    CHECK_OK(segflake_layout_get_record(layout, &rec));
    CHECK_OK(segflake_record_get_u64(rec, "max_worker_id", &u, NULL));
    CHECK_U64(u, 1023);
    CHECK_OK(segflake_record_get_str(rec, "order", &text, NULL));
    CHECK_STR(text, "time-worker-sequence");
    CHECK_OK(segflake_record_get_u64(rec, "js_safe_until_ms", &u, &present));
    CHECK(present);
    CHECK_ERR(segflake_record_get_u64(rec, "order", &u, NULL), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_MSG("field order is the string \"time-worker-sequence\", not an unsigned integer");
    CHECK_ERR(segflake_record_get_u64(rec, "maxWorkerId", &u, NULL), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_MSG("fields: time_bits, worker_bits");
    CHECK_ERR(segflake_record_get_u64(NULL, "max_id", &u, NULL), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_record_get_u64(rec, "max_id", NULL, NULL), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_STR(segflake_record_field_name(rec, 0), "time_bits");
    CHECK(segflake_record_field_name(rec, segflake_record_count(rec)) == NULL);
    CHECK(segflake_record_field_name(NULL, 0) == NULL);
    CHECK_U64(segflake_record_count(NULL), 0);
    segflake_record_free(rec);
    rec = NULL;
    segflake_layout_free(layout);
    layout = NULL;

    CHECK_OK(segflake_options_new("layout", &o));
    CHECK_OK(segflake_options_set_str(o, "preset", "js-safe"));
    CHECK_OK(segflake_options_set_u64(o, "epoch_ms", 1735689600000ull));
    CHECK_OK(segflake_layout_new_with(o, &layout));
    /* 53 bits: IDs never pass 2^53, so js_safe_until_ms is absent. */
    CHECK_OK(segflake_layout_get_record(layout, &rec));
    CHECK_ERR(segflake_record_get_u64(rec, "js_safe_until_ms", &u, NULL), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_MSG("js_safe_until_ms is not set");
    CHECK_OK(segflake_record_get_u64(rec, "js_safe_until_ms", &u, &present));
    CHECK(!present);
    segflake_record_free(rec);
    rec = NULL;
    CHECK_OK(segflake_layout_decode_record(layout, (1ull << 12) | (5ull << 9) | 7, &rec));
    CHECK_OK(segflake_record_get_u64(rec, "worker_id", &u, NULL));
    CHECK_U64(u, 5);
    CHECK_OK(segflake_record_get_u64(rec, "timestamp_ms", &u, NULL));
    CHECK_U64(u, 1735689600001ull);
    segflake_record_free(rec);
    rec = NULL;
    segflake_layout_free(layout);
    segflake_options_free(o);

    /* Snowflakes. */
    CHECK_ERR(segflake_snowflake_new_with(NULL, NULL, NULL, &g), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_MSG("worker_id: is required");
    CHECK_OK(segflake_options_new("snowflake", &o));
    CHECK_OK(segflake_options_set_u64(o, "worker_id", 1024));
    CHECK_ERR(segflake_snowflake_new_with(o, NULL, NULL, &g), SEGFLAKE_WORKER_ID_OUT_OF_RANGE);
    CHECK(g == NULL);
    CHECK_OK(segflake_options_set_u64(o, "worker_id", 9));
    CHECK_OK(segflake_options_set_str(o, "sequence_start", "random"));
    CHECK_ERR(segflake_snowflake_new_with(o, NULL, NULL, NULL), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_OK(segflake_snowflake_new_with(o, NULL, NULL, &g));
    segflake_options_free(o); /* the generator copied what it needs */
    CHECK_OK(segflake_snowflake_next(g, &id));
    CHECK_OK(segflake_snowflake_worker_id(g, &worker));
    CHECK_U64(worker, 9);
    segflake_snowflake_free(g);

    /* Serials. */
    CHECK_OK(segflake_options_new("serial", &o));
    CHECK_OK(segflake_options_set_u64(o, "worker_digits", 2));
    CHECK_OK(segflake_options_set_u64(o, "worker_id", 42));
    CHECK_OK(segflake_options_set_i64(o, "utc_offset_minutes", -300));
    CHECK_OK(segflake_options_set_u64(o, "counter_timeout_ms", 250));
    CHECK_OK(segflake_options_check_at(o, 0, &rec));
    CHECK_OK(segflake_record_get_i64(rec, "utc_offset_minutes", &offset, NULL));
    CHECK(offset == -300);
    CHECK_OK(segflake_record_get_u64(rec, "last", &u, &present));
    CHECK(!present);
    segflake_record_free(rec);
    rec = NULL;
    CHECK_OK(segflake_serial_new_with(o, NULL, NULL, &serial));
    CHECK_OK(segflake_serial_next(serial, &id));
    CHECK_OK(segflake_serial_decode_record(serial, id, &rec));
    CHECK_OK(segflake_record_get_u64(rec, "worker_id", &u, NULL));
    CHECK_U64(u, 42);
    CHECK_OK(segflake_record_get_u64(rec, "sequence", &u, NULL));
    CHECK_U64(u, 1);
    segflake_record_free(rec);
    segflake_serial_free(serial);
    segflake_options_free(o);
}

static void test_segment_stats_records(void) {
    counter_store cs;
    segflake_segment_store store;
    segflake_options *o = NULL;
    segflake_segment_generator *g = NULL;
    segflake_segment_tag *tag = NULL;
    segflake_segment_engine *e = NULL;
    segflake_record *rec = NULL;
    segflake_segment_stats old;
    uint64_t id = 0, u = 0, step = 0;
    double rate = -1;
    bool b = true, present = true, wanted = false;
    const char *text = NULL;

    pthread_mutex_init(&cs.lock, NULL);
    cs.max_id = 1;
    store.allocate = counter_allocate;
    store.ctx = &cs;
    store.release = NULL;
    CHECK_OK(segflake_options_new("segment", &o));
    CHECK_OK(segflake_options_set_u64(o, "step", 50));
    CHECK_OK(segflake_options_set_bool(o, "dynamic_step", false));
    CHECK_OK(segflake_options_set_u64(o, "wait_timeout_ms", 5000));
    CHECK_OK(segflake_options_set_u64(o, "store_timeout_ms", 4000));
    CHECK_ERR(segflake_segment_generator_new_with(NULL, o, &g), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_OK(segflake_segment_generator_new_with(&store, o, &g));
    if (!g) goto done;
    CHECK_OK(segflake_segment_next(g, "orders", &id));
    CHECK_U64(id, 1);
    CHECK_ERR(segflake_segment_get_stats_record(g, "none", &rec), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_OK(segflake_segment_get_stats_record(g, "orders", &rec));
    CHECK_OK(segflake_segment_get_stats(g, "orders", &old));
    CHECK_U64(segflake_record_count(rec), 18);
    CHECK_OK(segflake_record_get_str(rec, "tag", &text, NULL));
    CHECK_STR(text, "orders");
    CHECK_OK(segflake_record_get_u64(rec, "current_start", &u, NULL));
    CHECK_U64(u, old.current_start);
    CHECK_OK(segflake_record_get_u64(rec, "current_end", &u, NULL));
    CHECK_U64(u, 51);
    CHECK_OK(segflake_record_get_u64(rec, "step", &u, NULL));
    CHECK_U64(u, 50);
    CHECK_OK(segflake_record_get_u64(rec, "issued", &u, NULL));
    CHECK_U64(u, old.issued);
    CHECK_OK(segflake_record_get_bool(rec, "fetch_in_flight", &b, NULL));
    CHECK(b == old.fetch_in_flight);
    CHECK_OK(segflake_record_get_f64(rec, "ids_per_second", &rate, NULL));
    CHECK(rate >= 0);
    CHECK_OK(segflake_record_get_str(rec, "last_error", &text, &present));
    CHECK(!present);
    CHECK_OK(segflake_record_get_u64(rec, "last_fetch_latency_ms", &u, &present));
    CHECK(present);
    CHECK_ERR(segflake_record_get_bool(rec, "remaining", &b, NULL), SEGFLAKE_INVALID_ARGUMENT);
    segflake_record_free(rec);
    rec = NULL;

    CHECK_OK(segflake_segment_tag_new(g, "orders", &tag));
    CHECK_OK(segflake_segment_tag_next(tag, &id));
    CHECK_U64(id, 2);
    CHECK_OK(segflake_segment_tag_get_stats_record(tag, &rec));
    CHECK_OK(segflake_record_get_u64(rec, "position", &u, NULL));
    CHECK_U64(u, 3);
    segflake_record_free(rec);
    rec = NULL;
    segflake_segment_tag_free(tag);

    /* The engine. */
    CHECK_OK(segflake_segment_engine_new_with("e", o, &e));
    if (e) {
        segflake_allocation a;
        CHECK_OK(segflake_segment_engine_begin_fetch(e, 0, &step, &wanted));
        CHECK(wanted);
        CHECK_U64(step, 50);
        a.max_id = 100;
        a.step = 50;
        CHECK_OK(segflake_segment_engine_complete_fetch(e, 1, &a, NULL));
        CHECK_OK(segflake_segment_engine_get_stats_record(e, 2, &rec));
        CHECK_OK(segflake_record_get_u64(rec, "remaining", &u, NULL));
        CHECK_U64(u, 50);
        CHECK_OK(segflake_record_get_u64(rec, "fetches", &u, NULL));
        CHECK_U64(u, 1);
        segflake_record_free(rec);
        segflake_segment_engine_free(e);
    }
    CHECK_ERR(segflake_segment_engine_new_with(NULL, NULL, &e), SEGFLAKE_INVALID_ARGUMENT);
done:
    segflake_segment_generator_free(g);
    segflake_options_free(o);
    pthread_mutex_destroy(&cs.lock);
}

void run_options_tests(void) {
    t_run("options builder: each call checked by the core", test_builder_checks_each_call);
    t_run("options builder: layouts, snowflakes and serials made with builders",
          test_constructors_with_builders);
    t_run("records: segment stats by name (generator, tag handle, engine)",
          test_segment_stats_records);
}
