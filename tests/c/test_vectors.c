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

/* Fills a spec from a vector layout object: a preset (default twitter) with overrides. */
static int spec_from_json(const json_value *l, segflake_layout_spec *spec) {
    const char *preset = json_get_string(l, "preset");
    const char *order = json_get_string(l, "order");
    uint64_t v;
    if (segflake_layout_spec_preset(preset ? preset : "twitter", spec) != SEGFLAKE_OK) {
        t_fail(__FILE__, __LINE__, "preset %s: %s", preset, segflake_last_error_message());
        return 0;
    }
    if (json_get_u64(l, "time_bits", &v)) spec->time_bits = (uint32_t)v;
    if (json_get_u64(l, "worker_bits", &v)) spec->worker_bits = (uint32_t)v;
    if (json_get_u64(l, "sequence_bits", &v)) spec->sequence_bits = (uint32_t)v;
    if (json_get_u64(l, "tick_ms", &v)) spec->tick_ms = v;
    if (json_get_u64(l, "epoch_ms", &v)) spec->epoch_ms = v;
    if (json_get_u64(l, "min_lifetime_years", &v)) spec->min_lifetime_years = (uint32_t)v;
    if (order) {
        if (strcmp(order, "time-worker-sequence") == 0) {
            spec->order = SEGFLAKE_ORDER_TIME_WORKER_SEQUENCE;
        } else if (strcmp(order, "time-sequence-worker") == 0) {
            spec->order = SEGFLAKE_ORDER_TIME_SEQUENCE_WORKER;
        } else {
            t_fail(__FILE__, __LINE__, "unknown order %s in vector", order);
            return 0;
        }
    }
    return 1;
}

static segflake_layout *layout_from_json(const json_value *c) {
    segflake_layout_spec spec;
    segflake_layout *layout = NULL;
    if (!spec_from_json(json_get(c, "layout"), &spec)) return NULL;
    CHECK_OK(segflake_layout_new(&spec, &layout));
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
        segflake_layout_spec spec;
        segflake_layout *layout = NULL;
        segflake_layout_info info;
        segflake_status s;
        begin_case(file, "cases", i, c);
        if (!spec_from_json(json_get(c, "layout"), &spec)) { t_end(); continue; }
        s = segflake_layout_new(&spec, &layout);
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

static void check_fields(const segflake_decoded *d, const json_value *c) {
    CHECK_U64(d->timestamp_ms, need_u64(c, "timestamp_ms"));
    CHECK_U64(d->tick, need_u64(c, "tick"));
    CHECK_U64(d->worker_id, need_u64(c, "worker_id"));
    CHECK_U64(d->sequence, need_u64(c, "sequence"));
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
                id = need_u64(c, "id");
                CHECK_OK(segflake_layout_decode(layout, id, &d));
                check_fields(&d, c);
                if (g == 0) {
                    CHECK_OK(segflake_layout_compose(layout, need_u64(c, "tick"),
                                                     need_u64(c, "worker_id"),
                                                     need_u64(c, "sequence"), &got));
                    CHECK_U64(got, id);
                    got = 0;
                    CHECK_OK(segflake_layout_compose_at(layout, need_u64(c, "timestamp_ms"),
                                                        need_u64(c, "worker_id"),
                                                        need_u64(c, "sequence"), &got));
                    CHECK_U64(got, id);
                }
            } else if (g == 2) {
                segflake_snowflake_options opts;
                segflake_snowflake *gen = NULL;
                CHECK_OK(segflake_snowflake_options_init(&opts, need_u64(c, "worker_id")));
                opts.layout = layout;
                check_expected_error(segflake_snowflake_new(&opts, &gen), c);
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
        } else if (!run_segment_vectors(names[i], doc) && !run_options_vectors(names[i], doc)) {
            snprintf(case_name, sizeof case_name, "vector %s", names[i]);
            t_begin(case_name);
            t_fail(__FILE__, __LINE__, "no C runner for vectors file %s", names[i]);
            t_end();
        }
        json_free(doc);
        free(names[i]);
    }
}
