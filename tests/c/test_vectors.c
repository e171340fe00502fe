/* Runs every case of every file in tests/vectors against the C API. A file this suite
 * does not know is a failure, so new vector files cannot be skipped silently. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <stdlib.h>

#include "harness.h"
#include "json.h"

static char case_name[512];

static void begin_case(const char *file, const char *group, size_t i, const json_value *c) {
    const char *name = json_get_string(c, "name");
    snprintf(case_name, sizeof case_name, "vector %s %s[%llu]%s%s", file, group, (ull)i,
             name ? ": " : "", name ? name : "");
    t_begin(case_name);
}

static uint64_t need_u64(const json_value *c, const char *key) {
    uint64_t v = 0;
    if (!json_get_u64(c, key, &v)) t_fail(__FILE__, __LINE__, "vector has no integer \"%s\"", key);
    return v;
}

/* Builds a vector layout object (a preset, default twitter, with overrides) through the
 * growable "layout" options builder, which carries every layout field (the frozen 0.1
 * segflake_layout_spec has no datacenter_bits). Returns the first refusal, or the status
 * of segflake_layout_new_with; the layout is in *out on success. */
static segflake_status new_layout_from_json(const json_value *l, segflake_layout **out) {
    static const char *const numbers[] = {"time_bits",  "worker_bits", "datacenter_bits",
                                          "sequence_bits", "tick_ms", "epoch_ms",
                                          "min_lifetime_years"};
    const char *preset = json_get_string(l, "preset");
    const char *order = json_get_string(l, "order");
    segflake_options *opts = NULL;
    segflake_status s;
    uint64_t v;
    size_t k;
    CHECK_OK(segflake_options_new("layout", &opts));
    /* The builder checks each value as it is set; a refused one is the case's outcome. */
    s = segflake_options_set_str(opts, "preset", preset ? preset : "twitter");
    for (k = 0; s == SEGFLAKE_OK && k < sizeof numbers / sizeof numbers[0]; k++)
        if (json_get_u64(l, numbers[k], &v)) s = segflake_options_set_u64(opts, numbers[k], v);
    if (s == SEGFLAKE_OK && order) s = segflake_options_set_str(opts, "order", order);
    if (s == SEGFLAKE_OK) s = segflake_layout_new_with(opts, out);
    segflake_options_free(opts);
    return s;
}

static segflake_layout *layout_from_json(const json_value *c) {
    segflake_layout *layout = NULL;
    CHECK_OK(new_layout_from_json(json_get(c, "layout"), &layout));
    return layout;
}

/* An expected error: the status's code string and an optional message substring. */
static void check_expected_error(segflake_status s, const json_value *c) {
    const char *code = json_get_string(c, "error");
    const char *contains = json_get_string(c, "message_contains");
    if (s == SEGFLAKE_OK) {
        t_fail(__FILE__, __LINE__, "succeeded, expected %s", code);
        return;
    }
    CHECK_STR(segflake_status_code(s), code);
    if (contains) CHECK_MSG(contains);
}

/* A field of the layout's growable record against the expectation (0 when not given). */
static void check_record_u64(const segflake_layout *layout, const char *name,
                             const json_value *e) {
    segflake_record *rec = NULL;
    uint64_t got = 0, want = 0;
    bool present = false;
    json_get_u64(e, name, &want);
    CHECK_OK(segflake_layout_get_record(layout, &rec));
    CHECK_OK(segflake_record_get_u64(rec, name, &got, &present));
    CHECK(present);
    CHECK_U64(got, want);
    segflake_record_free(rec);
}

/* Every array in a vectors file is a case group; one this suite does not know fails. */
static void check_groups(const char *file, const json_value *doc, const char *const *known,
                         size_t n) {
    size_t g, k;
    for (g = 0; g < doc->count; g++) {
        int found = 0;
        if (doc->items[g]->type != JSON_ARRAY) continue;
        for (k = 0; k < n; k++) found |= strcmp(doc->keys[g], known[k]) == 0;
        if (!found) {
            snprintf(case_name, sizeof case_name, "vector %s: group %s", file, doc->keys[g]);
            t_begin(case_name);
            t_fail(__FILE__, __LINE__, "unknown case group \"%s\"", doc->keys[g]);
            t_end();
        }
    }
}

static void run_layouts(const char *file, const json_value *doc) {
    static const char *const groups[] = {"cases"};
    const json_value *cases = json_get(doc, "cases");
    size_t i;
    check_groups(file, doc, groups, 1);
    for (i = 0; cases && i < cases->count; i++) {
        const json_value *c = cases->items[i];
        const json_value *e = json_get(c, "expect");
        const json_value *js;
        segflake_layout *layout = NULL;
        segflake_layout_info info;
        segflake_status s;
        begin_case(file, "cases", i, c);
        s = new_layout_from_json(json_get(c, "layout"), &layout);
        if (!e) {
            check_expected_error(s, c);
            CHECK(layout == NULL);
        } else if (s != SEGFLAKE_OK) {
            t_fail(__FILE__, __LINE__, "layout refused: %s", segflake_last_error_message());
        } else {
            const char *order = json_get_string(e, "order");
            CHECK_OK(segflake_layout_get_info(layout, &info));
            CHECK_U64(info.spec.time_bits, need_u64(e, "time_bits"));
            CHECK_U64(info.spec.worker_bits, need_u64(e, "worker_bits"));
            CHECK_U64(info.spec.sequence_bits, need_u64(e, "sequence_bits"));
            CHECK_U64(info.spec.tick_ms, need_u64(e, "tick_ms"));
            CHECK_U64(info.spec.epoch_ms, need_u64(e, "epoch_ms"));
            CHECK_U64(info.spec.order, order && strcmp(order, "time-sequence-worker") == 0
                                           ? SEGFLAKE_ORDER_TIME_SEQUENCE_WORKER
                                           : SEGFLAKE_ORDER_TIME_WORKER_SEQUENCE);
            CHECK(order != NULL);
            CHECK_U64(info.lifetime_ms, need_u64(e, "lifetime_ms"));
            CHECK_U64(info.exhausts_at_ms, need_u64(e, "exhausts_at_ms"));
            CHECK_U64(info.max_ids_per_second, need_u64(e, "max_ids_per_second"));
            CHECK_U64(info.max_worker_id, need_u64(e, "max_worker_id"));
            CHECK_U64(info.max_sequence, need_u64(e, "max_sequence"));
            check_record_u64(layout, "datacenter_bits", e);
            js = json_get(e, "js_safe_until_ms");
            CHECK(js != NULL);
            if (js && js->type == JSON_NULL) {
                CHECK(!info.has_js_safe_until);
            } else {
                CHECK(info.has_js_safe_until);
                CHECK_U64(info.js_safe_until_ms, need_u64(e, "js_safe_until_ms"));
            }
        }
        segflake_layout_free(layout);
        t_end();
    }
}

/* The decoded fields; datacenter_id (absent on layouts without a datacenter field) from
 * the growable record, which the frozen segflake_decoded struct does not carry. */
static void check_fields(const segflake_layout *layout, uint64_t id, const segflake_decoded *d,
                         const json_value *c) {
    segflake_record *rec = NULL;
    uint64_t dc = 0, want = 0;
    bool present = false;
    CHECK_U64(d->timestamp_ms, need_u64(c, "timestamp_ms"));
    CHECK_U64(d->tick, need_u64(c, "tick"));
    CHECK_U64(d->worker_id, need_u64(c, "worker_id"));
    CHECK_U64(d->sequence, need_u64(c, "sequence"));
    CHECK_OK(segflake_layout_decode_record(layout, id, &rec));
    CHECK_OK(segflake_record_get_u64(rec, "datacenter_id", &dc, &present));
    CHECK(present == json_get_u64(c, "datacenter_id", &want));
    if (present) CHECK_U64(dc, want);
    segflake_record_free(rec);
}

/* The worker field a case names: worker_id, or worker_id within datacenter_id. */
static segflake_status case_worker_field(const segflake_layout *layout, const json_value *c,
                                         uint64_t *out) {
    uint64_t dc = 0;
    if (!json_get_u64(c, "datacenter_id", &dc)) {
        *out = need_u64(c, "worker_id");
        return SEGFLAKE_OK;
    }
    return segflake_layout_worker_field(layout, dc, need_u64(c, "worker_id"), out);
}

static void run_snowflake(const char *file, const json_value *doc) {
    const char *groups[] = {"compose", "decode", "invalid_options", "invalid_decode"};
    size_t g, i;
    check_groups(file, doc, groups, 4);
    for (g = 0; g < 4; g++) {
        const json_value *cases = json_get(doc, groups[g]);
        for (i = 0; cases && i < cases->count; i++) {
            const json_value *c = cases->items[i];
            segflake_layout *layout;
            uint64_t id = 0, got = 0;
            segflake_decoded d;
            begin_case(file, groups[g], i, c);
            layout = layout_from_json(c);
            if (!layout) { t_end(); continue; }
            if (g == 0 || g == 1) {
                uint64_t worker = 0;
                id = need_u64(c, "id");
                CHECK_OK(segflake_layout_decode(layout, id, &d));
                check_fields(layout, id, &d, c);
                if (g == 0) {
                    CHECK_OK(case_worker_field(layout, c, &worker));
                    CHECK_OK(segflake_layout_compose(layout, need_u64(c, "tick"), worker,
                                                     need_u64(c, "sequence"), &got));
                    CHECK_U64(got, id);
                    got = 0;
                    CHECK_OK(segflake_layout_compose_at(layout, need_u64(c, "timestamp_ms"),
                                                        worker, need_u64(c, "sequence"), &got));
                    CHECK_U64(got, id);
                }
            } else if (g == 2) {
                segflake_snowflake_options opts;
                segflake_snowflake *gen = NULL;
                uint64_t worker = 0;
                segflake_status s = case_worker_field(layout, c, &worker);
                if (s == SEGFLAKE_OK) {
                    CHECK_OK(segflake_snowflake_options_init(&opts, worker));
                    opts.layout = layout;
                    s = segflake_snowflake_new(&opts, &gen);
                }
                check_expected_error(s, c);
                CHECK(gen == NULL);
                segflake_snowflake_free(gen);
            } else {
                check_expected_error(segflake_layout_decode(layout, need_u64(c, "id"), &d), c);
            }
            segflake_layout_free(layout);
            t_end();
        }
    }
}

static segflake_format format_named(const char *name) {
    segflake_format f = 99;
    if (!name || segflake_format_from_name(name, &f) != SEGFLAKE_OK)
        t_fail(__FILE__, __LINE__, "unknown format %s", name ? name : "(none)");
    return f;
}

static void run_codecs(const char *file, const json_value *doc) {
    const json_value *valid = json_get(doc, "valid");
    const json_value *aliases = json_get(doc, "parse_aliases");
    const json_value *bad = json_get(doc, "invalid");
    const char *names[] = {"decimal", "base62", "base32"};
    static const char *const groups[] = {"valid", "parse_aliases", "invalid"};
    size_t i, k;
    check_groups(file, doc, groups, 3);
    for (i = 0; valid && i < valid->count; i++) {
        const json_value *c = valid->items[i];
        uint64_t id = need_u64(c, "id");
        begin_case(file, "valid", i, c);
        for (k = 0; k < 3; k++) {
            char buf[SEGFLAKE_ENCODE_BUF_LEN];
            size_t len = 0;
            uint64_t back = 0;
            const char *want = json_get_string(c, names[k]);
            segflake_format f = format_named(names[k]);
            CHECK(want != NULL);
            CHECK_OK(segflake_encode(id, f, buf, sizeof buf, &len));
            CHECK_STR(buf, want);
            CHECK_U64(len, want ? strlen(want) : 0);
            CHECK_OK(segflake_parse(want, f, &back));
            CHECK_U64(back, id);
            /* The named helpers agree. */
            memset(buf, 0, sizeof buf);
            if (k == 0) {
                CHECK_OK(segflake_encode_decimal(id, buf, sizeof buf, NULL));
                CHECK_OK(segflake_parse_decimal(want, &back));
            } else if (k == 1) {
                CHECK_OK(segflake_encode_base62(id, buf, sizeof buf, NULL));
                CHECK_OK(segflake_parse_base62(want, &back));
            } else {
                CHECK_OK(segflake_encode_base32(id, buf, sizeof buf, NULL));
                CHECK_OK(segflake_parse_base32(want, &back));
            }
            CHECK_STR(buf, want);
            CHECK_U64(back, id);
        }
        t_end();
    }
    for (i = 0; aliases && i < aliases->count; i++) {
        const json_value *c = aliases->items[i];
        uint64_t back = 0;
        begin_case(file, "parse_aliases", i, c);
        CHECK_OK(segflake_parse(json_get_string(c, "text"),
                                format_named(json_get_string(c, "format")), &back));
        CHECK_U64(back, need_u64(c, "id"));
        t_end();
    }
    for (i = 0; bad && i < bad->count; i++) {
        const json_value *c = bad->items[i];
        uint64_t back = 12345;
        begin_case(file, "invalid", i, c);
        check_expected_error(segflake_parse(json_get_string(c, "text"),
                                            format_named(json_get_string(c, "format")), &back),
                             c);
        CHECK_U64(back, 12345); /* untouched on error */
        t_end();
    }
}

static int hex_to_bytes(const char *hex, uint8_t *out, size_t cap, size_t *len) {
    size_t n = strlen(hex), i;
    if (n % 2 || n / 2 > cap) return 0;
    for (i = 0; i < n / 2; i++) {
        unsigned v;
        if (sscanf(hex + 2 * i, "%2x", &v) != 1) return 0;
        out[i] = (uint8_t)v;
    }
    *len = n / 2;
    return 1;
}

static void run_obfuscation(const char *file, const json_value *doc) {
    const json_value *cases = json_get(doc, "cases");
    const json_value *bad = json_get(doc, "invalid");
    static const char *const groups[] = {"cases", "invalid"};
    size_t i;
    check_groups(file, doc, groups, 2);
    for (i = 0; cases && i < cases->count; i++) {
        const json_value *c = cases->items[i];
        const char *hex = json_get_string(c, "key_hex");
        segflake_obfuscator *from_hex = NULL, *from_bytes = NULL;
        uint8_t key[32];
        size_t key_len = 0;
        uint64_t id = need_u64(c, "id"), want = need_u64(c, "obfuscated"), got = 0, back = 0;
        begin_case(file, "cases", i, c);
        CHECK(hex && hex_to_bytes(hex, key, sizeof key, &key_len));
        CHECK_OK(segflake_obfuscator_new_hex(hex, &from_hex));
        CHECK_OK(segflake_obfuscator_new(key, key_len, &from_bytes));
        if (from_hex && from_bytes) {
            CHECK_OK(segflake_obfuscator_obfuscate(from_hex, id, &got));
            CHECK_U64(got, want);
            CHECK_OK(segflake_obfuscator_deobfuscate(from_hex, want, &back));
            CHECK_U64(back, id);
            got = back = 0;
            CHECK_OK(segflake_obfuscator_obfuscate(from_bytes, id, &got));
            CHECK_U64(got, want);
            CHECK_OK(segflake_obfuscator_deobfuscate(from_bytes, want, &back));
            CHECK_U64(back, id);
        }
        segflake_obfuscator_free(from_hex);
        segflake_obfuscator_free(from_bytes);
        t_end();
    }
    for (i = 0; bad && i < bad->count; i++) {
        const json_value *c = bad->items[i];
        const char *hex = json_get_string(c, "key_hex");
        segflake_obfuscator *o = NULL;
        uint8_t key[32];
        size_t key_len = 0;
        uint64_t id, out = 7;
        begin_case(file, "invalid", i, c);
        CHECK(hex && hex_to_bytes(hex, key, sizeof key, &key_len));
        if (json_get_u64(c, "id", &id)) {
            /* The key is fine; the ID is refused. */
            CHECK_OK(segflake_obfuscator_new(key, key_len, &o));
            if (o) {
                check_expected_error(segflake_obfuscator_obfuscate(o, id, &out), c);
                check_expected_error(segflake_obfuscator_deobfuscate(o, id, &out), c);
                CHECK_U64(out, 7);
            }
        } else {
            check_expected_error(segflake_obfuscator_new(key, key_len, &o), c);
            CHECK(o == NULL);
            check_expected_error(segflake_obfuscator_new_hex(hex, &o), c);
            CHECK(o == NULL);
        }
        segflake_obfuscator_free(o);
        t_end();
    }
}

/* Defined in test_segment.c: runs segments.json / serials.json once those engines exist. */
int run_segment_vectors(const char *file, const json_value *doc);
/* Defined in test_options.c: runs options.json through the options builder. */
int run_options_vectors(const char *file, const json_value *doc);
/* Defined in test_lease.c: runs the registry protocols' conversations. */
int run_registry_vectors(const char *file, const json_value *doc);

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

void run_vector_tests(const char *dir) {
    DIR *d = opendir(dir);
    struct dirent *e;
    char *names[64];
    size_t n = 0, i;
    t_begin("vector files found");
    if (!d) {
        t_fail(__FILE__, __LINE__, "cannot open vectors directory %s", dir);
        t_end();
        return;
    }
    while ((e = readdir(d)) != NULL && n < 64) {
        size_t len = strlen(e->d_name);
        if (len > 5 && strcmp(e->d_name + len - 5, ".json") == 0) {
            names[n] = (char *)malloc(len + 1);
            if (names[n]) memcpy(names[n++], e->d_name, len + 1);
        }
    }
    closedir(d);
    qsort(names, n, sizeof names[0], cmp_str);
    CHECK(n >= 4);
    t_end();
    for (i = 0; i < n; i++) {
        char path[1024], err[256];
        json_value *doc;
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        doc = json_parse_file(path, err, sizeof err);
        if (!doc || doc->type != JSON_OBJECT) {
            snprintf(case_name, sizeof case_name, "vector %s parses", names[i]);
            t_begin(case_name);
            t_fail(__FILE__, __LINE__, "%s: %s", path, doc ? "not an object" : err);
            t_end();
        } else if (strcmp(names[i], "layouts.json") == 0) {
            run_layouts(names[i], doc);
        } else if (strcmp(names[i], "snowflake.json") == 0) {
            run_snowflake(names[i], doc);
        } else if (strcmp(names[i], "codecs.json") == 0) {
            run_codecs(names[i], doc);
        } else if (strcmp(names[i], "obfuscation.json") == 0) {
            run_obfuscation(names[i], doc);
        } else if (!run_segment_vectors(names[i], doc) && !run_options_vectors(names[i], doc) &&
                   !run_registry_vectors(names[i], doc)) {
            snprintf(case_name, sizeof case_name, "vector %s", names[i]);
            t_begin(case_name);
            t_fail(__FILE__, __LINE__, "no C runner for vectors file %s", names[i]);
            t_end();
        }
        json_free(doc);
        free(names[i]);
    }
}
