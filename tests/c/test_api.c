/* The C API beyond the shared vectors: versions, status codes, the last error, every
 * NULL pointer, short buffers, bad options, the clock policy through a host clock. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <time.h>

#include "harness.h"

static uint64_t wall_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* A host clock for single-threaded tests: reads `now`, and advances by one millisecond
 * every `step_every` reads when that is non-zero. */
typedef struct {
    uint64_t now;
    uint64_t reads;
    uint64_t step_every;
} fake_clock;

static uint64_t fake_now(void *ctx) {
    fake_clock *c = (fake_clock *)ctx;
    c->reads++;
    if (c->step_every && c->reads % c->step_every == 0) c->now++;
    return c->now;
}

static segflake_snowflake *new_gen(uint64_t worker, fake_clock *clock, uint64_t drift) {
    segflake_snowflake_options o;
    segflake_snowflake *g = NULL;
    CHECK_OK(segflake_snowflake_options_init(&o, worker));
    o.max_drift_ms = drift;
    if (clock) {
        o.clock = fake_now;
        o.clock_ctx = clock;
    }
    CHECK_OK(segflake_snowflake_new(&o, &g));
    return g;
}

static void test_version(void) {
    char want[64];
    snprintf(want, sizeof want, "%d.%d.%d", SEGFLAKE_VERSION_MAJOR, SEGFLAKE_VERSION_MINOR,
             SEGFLAKE_VERSION_PATCH);
    CHECK_STR(segflake_version(), want);
    CHECK_U64(segflake_version_number(), SEGFLAKE_VERSION_NUMBER);
}

static void test_status_codes(void) {
    /* The stable codes every binding shares (SPEC: errors are typed, with a code). */
    static const struct {
        segflake_status status;
        const char *code;
    } table[] = {
        {SEGFLAKE_OK, "OK"},
        {SEGFLAKE_INVALID_LAYOUT, "INVALID_LAYOUT"},
        {SEGFLAKE_LAYOUT_EXHAUSTED, "LAYOUT_EXHAUSTED"},
        {SEGFLAKE_WORKER_ID_OUT_OF_RANGE, "WORKER_ID_OUT_OF_RANGE"},
        {SEGFLAKE_CLOCK_MOVED_BACKWARDS, "CLOCK_MOVED_BACKWARDS"},
        {SEGFLAKE_CLOCK_BEFORE_EPOCH, "CLOCK_BEFORE_EPOCH"},
        {SEGFLAKE_TIME_EXHAUSTED, "TIME_EXHAUSTED"},
        {SEGFLAKE_INVALID_ARGUMENT, "INVALID_ARGUMENT"},
        {SEGFLAKE_PARSE_ERROR, "PARSE_ERROR"},
        {SEGFLAKE_STORE_CONTRACT_VIOLATION, "STORE_CONTRACT_VIOLATION"},
        {SEGFLAKE_SEGMENTS_EXHAUSTED, "SEGMENTS_EXHAUSTED"},
        {SEGFLAKE_STORE_ERROR, "STORE_ERROR"},
        {SEGFLAKE_SERIAL_EXHAUSTED, "SERIAL_EXHAUSTED"},
        {SEGFLAKE_CLOSED, "CLOSED"},
        {SEGFLAKE_NO_FREE_WORKER_ID, "NO_FREE_WORKER_ID"},
        {SEGFLAKE_LEASE_EXPIRED, "LEASE_EXPIRED"},
        {SEGFLAKE_CLOCK_BEHIND_MARK, "CLOCK_BEHIND_MARK"},
        {SEGFLAKE_CLOCK_SKEW, "CLOCK_SKEW"},
        {SEGFLAKE_REGISTRY_ERROR, "REGISTRY_ERROR"},
        {SEGFLAKE_UNKNOWN_TAG, "UNKNOWN_TAG"},
        {SEGFLAKE_REGISTRY_LOST_DATA, "REGISTRY_LOST_DATA"},
        {SEGFLAKE_LEAF_NODE_ALIVE, "LEAF_NODE_ALIVE"},
        {SEGFLAKE_CLOCK_STALLED, "CLOCK_STALLED"},
        {SEGFLAKE_PANIC, "PANIC"},
        {-1, "UNKNOWN"},
        {23, "UNKNOWN"},
    };
    size_t i;
    for (i = 0; i < sizeof table / sizeof table[0]; i++)
        CHECK_STR(segflake_status_code(table[i].status), table[i].code);
    /* Error statuses are distinct and positive. */
    for (i = 1; i < sizeof table / sizeof table[0] - 2; i++) CHECK(table[i].status > 0);
}

static void test_last_error(void) {
    char small[8], big[512];
    size_t full;
    uint64_t id;
    segflake_clear_last_error();
    CHECK_U64(segflake_last_error_status(), SEGFLAKE_OK);
    CHECK_STR(segflake_last_error_message(), "");
    CHECK_U64(segflake_last_error_copy(NULL, 0), 0);

    CHECK_ERR(segflake_parse_decimal("12a", &id), SEGFLAKE_PARSE_ERROR);
    CHECK_MSG("position 2");
    full = segflake_last_error_copy(big, sizeof big);
    CHECK_U64(full, strlen(segflake_last_error_message()));
    CHECK_STR(big, segflake_last_error_message());
    /* Truncated like snprintf: capacity - 1 bytes and a NUL, full length returned. */
    memset(small, 'x', sizeof small);
    CHECK_U64(segflake_last_error_copy(small, sizeof small), full);
    CHECK(small[sizeof small - 1] == '\0');
    CHECK(strncmp(small, big, sizeof small - 1) == 0);
    CHECK_U64(segflake_last_error_copy(NULL, 0), full);
    CHECK_U64(segflake_last_error_copy(NULL, sizeof big), full); /* NULL buffer: nothing written */
    /* Truncation never splits a UTF-8 character: cut in the middle of the first "\xc3\xa9". */
    CHECK_ERR(segflake_parse_decimal("\xc3\xa9\xc3\xa9\xc3\xa9", &id), SEGFLAKE_PARSE_ERROR);
    {
        const char *m = segflake_last_error_message();
        const char *p = strstr(m, "\xc3\xa9");
        char cut[256];
        CHECK(p != NULL);
        if (p && (size_t)(p - m) + 2 <= sizeof cut) {
            size_t at = (size_t)(p - m);
            CHECK_U64(segflake_last_error_copy(cut, at + 2), strlen(m));
            CHECK_U64(strlen(cut), at);
            CHECK(strncmp(cut, m, at) == 0);
        }
    }
    /* A successful call leaves the last error alone, like errno. */
    CHECK_OK(segflake_parse_decimal("12", &id));
    CHECK_U64(segflake_last_error_status(), SEGFLAKE_PARSE_ERROR);
    segflake_clear_last_error();
    CHECK_STR(segflake_last_error_message(), "");
}

static void test_null_pointers(void) {
    segflake_layout_spec spec;
    segflake_layout *layout = NULL;
    segflake_layout_info info;
    segflake_decoded d;
    segflake_snowflake_options opts;
    segflake_snowflake *gen = NULL;
    segflake_obfuscator *obf = NULL;
    segflake_format f;
    uint64_t u = 0, ids[4];
    char buf[32];
    static const uint8_t key[16] = {0};

    CHECK_OK(segflake_layout_spec_preset("twitter", &spec));
    CHECK_OK(segflake_layout_new(&spec, &layout));
    CHECK_OK(segflake_snowflake_options_init(&opts, 1));
    CHECK_OK(segflake_snowflake_new(&opts, &gen));
    CHECK_OK(segflake_obfuscator_new(key, sizeof key, &obf));

    CHECK_ERR(segflake_layout_spec_preset(NULL, &spec), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_MSG("name is NULL");
    CHECK_ERR(segflake_layout_spec_preset("twitter", NULL), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_MSG("out is NULL");
    CHECK_ERR(segflake_layout_new(NULL, &layout), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_MSG("spec is NULL");
    CHECK_ERR(segflake_layout_new(&spec, NULL), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_layout_new_at(NULL, 0, &layout), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_layout_new_at(&spec, wall_ms(), NULL), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_layout_preset(NULL, &layout), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_layout_preset("twitter", NULL), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_layout_get_info(NULL, &info), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_MSG("layout is NULL");
    CHECK_ERR(segflake_layout_get_info(layout, NULL), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_layout_decode(NULL, 1, &d), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_layout_decode(layout, 1, NULL), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_layout_compose(NULL, 1, 1, 1, &u), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_layout_compose(layout, 1, 1, 1, NULL), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_MSG("out_id is NULL");
    CHECK_ERR(segflake_layout_compose_at(NULL, wall_ms(), 1, 1, &u), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_layout_compose_at(layout, wall_ms(), 1, 1, NULL), SEGFLAKE_INVALID_ARGUMENT);

    CHECK_ERR(segflake_snowflake_options_init(NULL, 1), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_MSG("opts is NULL");
    CHECK_ERR(segflake_snowflake_new(NULL, &gen), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_snowflake_new(&opts, NULL), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_snowflake_next(NULL, &u), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_MSG("generator is NULL");
    CHECK_ERR(segflake_snowflake_next(gen, NULL), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_snowflake_next_n(NULL, ids, 4), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_snowflake_next_n(gen, NULL, 4), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_MSG("out_ids is NULL");
    CHECK_ERR(segflake_snowflake_high_water_mark_ms(NULL, &u), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_snowflake_high_water_mark_ms(gen, NULL), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_snowflake_worker_id(NULL, &u), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_snowflake_worker_id(gen, NULL), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_snowflake_layout(NULL, &layout), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_snowflake_layout(gen, NULL), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_snowflake_decode(NULL, 1, &d), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_snowflake_decode(gen, 1, NULL), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_snowflake_compose(NULL, 1, 1, 1, &u), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_snowflake_compose(gen, 1, 1, 1, NULL), SEGFLAKE_INVALID_ARGUMENT);

    CHECK_ERR(segflake_format_from_name(NULL, &f), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_format_from_name("base62", NULL), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_encode(1, SEGFLAKE_FORMAT_BASE62, NULL, 32, NULL), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_MSG("buf is NULL");
    CHECK_ERR(segflake_encode_decimal(1, NULL, 32, NULL), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_encode_base62(1, NULL, 32, NULL), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_encode_base32(1, NULL, 32, NULL), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_parse(NULL, SEGFLAKE_FORMAT_DECIMAL, &u), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_MSG("text is NULL");
    CHECK_ERR(segflake_parse("1", SEGFLAKE_FORMAT_DECIMAL, NULL), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_parse_decimal(NULL, &u), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_parse_base62(NULL, &u), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_parse_base32(NULL, &u), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_parse_base32("0000000000000", NULL), SEGFLAKE_INVALID_ARGUMENT);

    CHECK_ERR(segflake_obfuscator_new(NULL, 16, &obf), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_MSG("key is NULL");
    CHECK_ERR(segflake_obfuscator_new(key, 16, NULL), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_obfuscator_new_hex(NULL, &obf), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_obfuscator_new_hex("000102030405060708090a0b0c0d0e0f", NULL),
              SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_obfuscator_obfuscate(NULL, 1, &u), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_obfuscator_obfuscate(obf, 1, NULL), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_obfuscator_deobfuscate(NULL, 1, &u), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_obfuscator_deobfuscate(obf, 1, NULL), SEGFLAKE_INVALID_ARGUMENT);

    CHECK_ERR(segflake_worker_id_from_hostname(NULL, &u), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_worker_id_from_hostname("web-1", NULL), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_worker_id_from_ipv4(NULL, 10, &u), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_worker_id_from_ipv4("10.0.0.1", 10, NULL), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_worker_id_from_text(NULL, "1", 10, &u), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_MSG("name is NULL");
    CHECK_ERR(segflake_worker_id_from_text("POD_INDEX", "1", 10, NULL), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_parse_time_ms(NULL, &u), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_parse_time_ms("2025-01-01", NULL), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_format_time_ms(0, NULL, sizeof buf, NULL), SEGFLAKE_INVALID_ARGUMENT);

    /* Releasing NULL is a no-op. */
    segflake_layout_free(NULL);
    segflake_snowflake_free(NULL);
    segflake_obfuscator_free(NULL);

    segflake_layout_free(layout);
    segflake_snowflake_free(gen);
    segflake_obfuscator_free(obf);
}

static void test_short_buffers(void) {
    char buf[SEGFLAKE_ENCODE_BUF_LEN];
    size_t len = 0;
    const uint64_t id = 1050118621198921728ull; /* "1FZYNDFWXYm" in base62 */
    /* Too small by one (no room for the NUL): refused, untouched, needed length reported. */
    memset(buf, '#', sizeof buf);
    CHECK_ERR(segflake_encode(id, SEGFLAKE_FORMAT_BASE62, buf, SEGFLAKE_BASE62_LEN, &len),
              SEGFLAKE_INVALID_ARGUMENT);
    CHECK_MSG("buffer too small");
    CHECK_MSG("needs 12");
    CHECK_U64(len, SEGFLAKE_BASE62_LEN);
    CHECK(buf[0] == '#' && buf[SEGFLAKE_BASE62_LEN - 1] == '#');
    len = 0;
    CHECK_ERR(segflake_encode_base32(id, buf, 0, &len), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_U64(len, SEGFLAKE_BASE32_LEN);
    CHECK_ERR(segflake_encode_decimal(id, buf, 5, &len), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_U64(len, 19);
    CHECK(buf[0] == '#');
    /* Exactly enough. */
    CHECK_OK(segflake_encode(id, SEGFLAKE_FORMAT_BASE62, buf, SEGFLAKE_BASE62_LEN + 1, &len));
    CHECK_STR(buf, "1FZYNDFWXYm");
    CHECK_OK(segflake_encode_decimal(UINT64_MAX, buf, SEGFLAKE_DECIMAL_MAX_LEN + 1, &len));
    CHECK_STR(buf, "18446744073709551615");
    /* Time formatting into a buffer. */
    {
        char t[SEGFLAKE_TIME_BUF_LEN];
        CHECK_ERR(segflake_format_time_ms(0, t, 10, &len), SEGFLAKE_INVALID_ARGUMENT);
        CHECK_U64(len, 24);
        CHECK_OK(segflake_format_time_ms(1735689600000ull, t, sizeof t, &len));
        CHECK_STR(t, "2025-01-01T00:00:00.000Z");
    }
}

static void test_bad_names_and_values(void) {
    segflake_layout_spec spec;
    segflake_layout *layout = NULL;
    segflake_format f;
    uint64_t u = 0;
    const char bad_utf8[] = {'t', 'w', (char)0xC3, (char)0x28, 0};

    CHECK_ERR(segflake_layout_spec_preset("snowflake", &spec), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_MSG("twitter, sonyflake, uid-generator, js-safe");
    CHECK_ERR(segflake_layout_preset(bad_utf8, &layout), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_MSG("UTF-8");
    CHECK(layout == NULL);
    CHECK_ERR(segflake_format_from_name("base64", &f), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_MSG("decimal, base62, base32");
    CHECK_ERR(segflake_encode(1, 3, (char *)&u, sizeof u, NULL), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_MSG("SEGFLAKE_FORMAT_BASE32");
    CHECK_ERR(segflake_parse("1", 7, &u), SEGFLAKE_INVALID_ARGUMENT);

    /* Layout specs: every field is range-checked by the core's layout options, with a
     * message naming it (a layout field is refused as SEGFLAKE_INVALID_LAYOUT, as through
     * segflake_options_set_*). */
    CHECK_OK(segflake_layout_spec_preset("twitter", &spec));
    spec.time_bits = 300;
    CHECK_ERR(segflake_layout_new(&spec, &layout), SEGFLAKE_INVALID_LAYOUT);
    CHECK_STR(segflake_last_error_message(),
              "invalid layout: time_bits: got 300; allowed integers 8..=63");
    CHECK_OK(segflake_layout_spec_preset("twitter", &spec));
    spec.order = 2;
    CHECK_ERR(segflake_layout_new(&spec, &layout), SEGFLAKE_INVALID_LAYOUT);
    CHECK_STR(segflake_last_error_message(), "invalid layout: order: got 2; allowed one of "
                                             "time-worker-sequence, time-sequence-worker");
    CHECK_OK(segflake_layout_spec_preset("twitter", &spec));
    spec.min_lifetime_years = 10001;
    CHECK_ERR(segflake_layout_new(&spec, &layout), SEGFLAKE_INVALID_LAYOUT);
    CHECK_MSG("min_lifetime_years: got 10001; allowed integers 0..=10000");
    CHECK_OK(segflake_layout_spec_preset("twitter", &spec));
    spec.tick_ms = 86400001;
    CHECK_ERR(segflake_layout_new(&spec, &layout), SEGFLAKE_INVALID_LAYOUT);
    CHECK_MSG("tick_ms");
    CHECK(layout == NULL);
    CHECK_ERR(segflake_layout_preset("uid-generator", &layout), SEGFLAKE_LAYOUT_EXHAUSTED);
    CHECK_MSG("2024-11-20");

    /* Worker helpers and time parsing. */
    CHECK_OK(segflake_worker_id_from_hostname("id-gen-12.id-gen.ns.svc", &u));
    CHECK_U64(u, 12);
    CHECK_ERR(segflake_worker_id_from_hostname("web", &u), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_MSG("-<ordinal>");
    CHECK_OK(segflake_worker_id_from_ipv4("10.0.3.7", 10, &u));
    CHECK_U64(u, 775);
    CHECK_ERR(segflake_worker_id_from_ipv4("10.0.3.256", 10, &u), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_worker_id_from_ipv4("10.0.3.7", 33, &u), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_ERR(segflake_worker_id_from_ipv4("10.0.3.7", 4096, &u), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_MSG("4096");
    /* A worker ID from an environment variable (Kubernetes' pod index): getenv's NULL is unset. */
    setenv("SEGFLAKE_TEST_POD_INDEX", "3", 1);
    CHECK_OK(segflake_worker_id_from_text("SEGFLAKE_TEST_POD_INDEX", getenv("SEGFLAKE_TEST_POD_INDEX"), 10, &u));
    CHECK_U64(u, 3);
    CHECK_OK(segflake_worker_id_from_text("POD_INDEX", "1023", 10, &u));
    CHECK_U64(u, 1023);
    unsetenv("SEGFLAKE_TEST_POD_INDEX");
    CHECK_ERR(segflake_worker_id_from_text("SEGFLAKE_TEST_POD_INDEX", getenv("SEGFLAKE_TEST_POD_INDEX"), 10, &u),
              SEGFLAKE_INVALID_ARGUMENT);
    CHECK_MSG("invalid SEGFLAKE_TEST_POD_INDEX: SEGFLAKE_TEST_POD_INDEX is not set; expected a decimal worker ID 0..=1023");
    CHECK_ERR(segflake_worker_id_from_text("POD_INDEX", "web-3", 10, &u), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_MSG("POD_INDEX=\"web-3\" is not a decimal number");
    CHECK_ERR(segflake_worker_id_from_text("POD_INDEX", "", 10, &u), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_MSG("POD_INDEX is empty");
    CHECK_ERR(segflake_worker_id_from_text("POD_INDEX", "8", 3, &u), SEGFLAKE_WORKER_ID_OUT_OF_RANGE);
    CHECK_MSG("worker id 8 is out of range: the layout has 3 worker bits, so worker ids are 0..=7");
    CHECK_ERR(segflake_worker_id_from_text("POD_INDEX", "1", 64, &u), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_MSG("worker_bits");
    CHECK_OK(segflake_parse_time_ms("2025-01-01T00:00:00Z", &u));
    CHECK_U64(u, 1735689600000ull);
    CHECK_ERR(segflake_parse_time_ms("2025-02-30", &u), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_MSG("calendar date");

    /* Obfuscator keys. */
    {
        segflake_obfuscator *o = NULL;
        static const uint8_t key[17] = {0};
        CHECK_ERR(segflake_obfuscator_new(key, 17, &o), SEGFLAKE_INVALID_ARGUMENT);
        CHECK_MSG("exactly 16 bytes");
        CHECK_ERR(segflake_obfuscator_new(key, SIZE_MAX, &o), SEGFLAKE_INVALID_ARGUMENT);
        CHECK_MSG("18446744073709551615 bytes");
        CHECK_ERR(segflake_obfuscator_new_hex("000102030405060708090a0b0c0d0e0x", &o),
                  SEGFLAKE_INVALID_ARGUMENT);
        CHECK_MSG("position 31");
        CHECK_ERR(segflake_obfuscator_new_hex("000102030405060708090a0b0c0d0e", &o),
                  SEGFLAKE_INVALID_ARGUMENT);
        CHECK_MSG("32 hex digits");
        CHECK(o == NULL);
    }
    {
        /* A hex key in either case is the same key as its 16 bytes. */
        static const uint8_t bytes[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
        segflake_obfuscator *hex = NULL, *raw = NULL;
        uint64_t a = 0, b = 1;
        CHECK_OK(segflake_obfuscator_new_hex("000102030405060708090a0b0c0d0E0F", &hex));
        CHECK_OK(segflake_obfuscator_new(bytes, 16, &raw));
        CHECK_OK(segflake_obfuscator_obfuscate(hex, 123456789, &a));
        CHECK_OK(segflake_obfuscator_obfuscate(raw, 123456789, &b));
        CHECK_U64(a, b);
        segflake_obfuscator_free(hex);
        segflake_obfuscator_free(raw);
    }
}

static void test_layout_queries_and_round_trips(void) {
    const char *presets[] = {"twitter", "sonyflake", "js-safe"};
    size_t p;
    for (p = 0; p < 3; p++) {
        segflake_layout *l = NULL;
        segflake_layout_info info;
        segflake_decoded d;
        uint64_t id = 0;
        CHECK_OK(segflake_layout_preset(presets[p], &l));
        if (!l) continue;
        CHECK_OK(segflake_layout_get_info(l, &info));
        CHECK_U64(info.max_worker_id, (1ull << info.spec.worker_bits) - 1);
        CHECK_U64(info.max_id, (1ull << info.total_bits) - 1);
        CHECK(info.exhausts_at_ms > wall_ms());
        CHECK_OK(segflake_layout_compose(l, info.max_tick, info.max_worker_id, info.max_sequence, &id));
        CHECK_U64(id, info.max_id);
        CHECK_OK(segflake_layout_decode(l, id, &d));
        CHECK_U64(d.tick, info.max_tick);
        CHECK_U64(d.worker_id, info.max_worker_id);
        CHECK_U64(d.sequence, info.max_sequence);
        CHECK_ERR(segflake_layout_compose(l, 0, info.max_worker_id + 1, 0, &id),
                  SEGFLAKE_WORKER_ID_OUT_OF_RANGE);
        CHECK_ERR(segflake_layout_compose(l, 0, 0, info.max_sequence + 1, &id),
                  SEGFLAKE_INVALID_ARGUMENT);
        CHECK_ERR(segflake_layout_compose(l, info.max_tick + 1, 0, 0, &id),
                  SEGFLAKE_INVALID_ARGUMENT);
        CHECK_ERR(segflake_layout_compose_at(l, info.spec.epoch_ms - 1, 0, 0, &id),
                  SEGFLAKE_INVALID_ARGUMENT);
        CHECK_MSG("before the layout epoch");
        segflake_layout_free(l);
    }
    {
        /* A custom layout validated at a given time, with the check switched off. */
        segflake_layout_spec spec;
        segflake_layout *l = NULL;
        CHECK_OK(segflake_layout_spec_preset("twitter", &spec));
        spec.time_bits = 20;
        spec.epoch_ms = 1000;
        CHECK_ERR(segflake_layout_new_at(&spec, 2000, &l), SEGFLAKE_LAYOUT_EXHAUSTED);
        spec.min_lifetime_years = 0;
        CHECK_OK(segflake_layout_new_at(&spec, 2000, &l));
        segflake_layout_free(l);
    }
}

static void test_generator_basics(void) {
    segflake_snowflake *g = new_gen(513, NULL, 2000);
    uint64_t prev = 0, id = 0, hwm = 0, w = 0, batch[1000];
    segflake_decoded d;
    segflake_layout *l = NULL;
    segflake_layout_info info;
    size_t i;
    uint64_t before = wall_ms();
    if (!g) return;
    for (i = 0; i < 10000; i++) {
        CHECK_OK(segflake_snowflake_next(g, &id));
        if (id <= prev) {
            t_fail(__FILE__, __LINE__, "ID %llu after %llu", (ull)id, (ull)prev);
            break;
        }
        prev = id;
    }
    CHECK_OK(segflake_snowflake_decode(g, id, &d));
    CHECK_U64(d.worker_id, 513);
    CHECK(d.timestamp_ms + 2000 >= before && d.timestamp_ms <= wall_ms() + 2000);
    CHECK_OK(segflake_snowflake_next_n(g, batch, 1000));
    CHECK(batch[0] > id);
    for (i = 1; i < 1000; i++) CHECK(batch[i] > batch[i - 1]);
    CHECK_OK(segflake_snowflake_decode(g, batch[999], &d));
    CHECK_OK(segflake_snowflake_high_water_mark_ms(g, &hwm));
    CHECK(hwm >= d.timestamp_ms);
    CHECK_OK(segflake_snowflake_worker_id(g, &w));
    CHECK_U64(w, 513);
    CHECK_OK(segflake_snowflake_layout(g, &l));
    CHECK_OK(segflake_layout_get_info(l, &info));
    CHECK_U64(info.spec.worker_bits, 10);
    CHECK_OK(segflake_snowflake_compose(g, d.tick, 513, d.sequence, &id));
    CHECK_U64(id, batch[999]);
    segflake_layout_free(l);

    /* Batch sizes outside 1..=SEGFLAKE_MAX_BATCH are refused before anything is written. */
    batch[0] = 42;
    CHECK_ERR(segflake_snowflake_next_n(g, batch, 0), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_MSG("1..=16777216");
    CHECK_ERR(segflake_snowflake_next_n(g, batch, (size_t)SEGFLAKE_MAX_BATCH + 1),
              SEGFLAKE_INVALID_ARGUMENT);
    CHECK_U64(batch[0], 42);
    segflake_snowflake_free(g);
}

static void test_generator_options(void) {
    segflake_snowflake_options o;
    segflake_snowflake *g = NULL;
    segflake_layout *js = NULL;
    uint64_t id;
    segflake_decoded d;

    CHECK_OK(segflake_snowflake_options_init(&o, 1024));
    CHECK_ERR(segflake_snowflake_new(&o, &g), SEGFLAKE_WORKER_ID_OUT_OF_RANGE);
    CHECK_MSG("0..=1023");
    CHECK(g == NULL);
    CHECK_OK(segflake_snowflake_options_init(&o, UINT64_MAX));
    CHECK_ERR(segflake_snowflake_new(&o, &g), SEGFLAKE_WORKER_ID_OUT_OF_RANGE);

    CHECK_OK(segflake_snowflake_options_init(&o, 1));
    o.max_drift_ms = 3600001;
    CHECK_ERR(segflake_snowflake_new(&o, &g), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_MSG("max_drift_ms");

    CHECK_OK(segflake_snowflake_options_init(&o, 1));
    o.sequence_start = 2;
    CHECK_ERR(segflake_snowflake_new(&o, &g), SEGFLAKE_INVALID_ARGUMENT);
    CHECK_STR(segflake_last_error_message(),
              "invalid sequence_start: got 2; allowed one of zero, random");

    /* An epoch override in the future is refused; a past one applies. */
    CHECK_OK(segflake_snowflake_options_init(&o, 1));
    o.has_epoch_ms = true;
    o.epoch_ms = wall_ms() + 86400000ull;
    CHECK_ERR(segflake_snowflake_new(&o, &g), SEGFLAKE_INVALID_LAYOUT);
    CHECK_MSG("in the future");
    o.epoch_ms = 1735689600000ull;
    CHECK_OK(segflake_snowflake_new(&o, &g));
    if (g) {
        CHECK_OK(segflake_snowflake_next(g, &id));
        CHECK_OK(segflake_snowflake_decode(g, id, &d));
        CHECK_U64(d.tick, d.timestamp_ms - 1735689600000ull);
        segflake_snowflake_free(g);
        g = NULL;
    }

    /* A layout given by handle is copied: freeing it does not affect the generator. */
    CHECK_OK(segflake_layout_preset("js-safe", &js));
    CHECK_OK(segflake_snowflake_options_init(&o, 8));
    o.layout = js;
    CHECK_ERR(segflake_snowflake_new(&o, &g), SEGFLAKE_WORKER_ID_OUT_OF_RANGE);
    CHECK_MSG("0..=7");
    o.worker_id = 7;
    o.sequence_start = SEGFLAKE_SEQUENCE_START_RANDOM;
    CHECK_OK(segflake_snowflake_new(&o, &g));
    segflake_layout_free(js);
    if (g) {
        uint64_t prev = 0;
        int i;
        for (i = 0; i < 2000; i++) {
            CHECK_OK(segflake_snowflake_next(g, &id));
            CHECK(id > prev && id < (1ull << 53));
            prev = id;
        }
        CHECK_OK(segflake_snowflake_decode(g, id, &d));
        CHECK_U64(d.worker_id, 7);
        segflake_snowflake_free(g);
    }
}

static void test_clock_policy(void) {
    fake_clock clock;
    segflake_snowflake *g;
    uint64_t id = 0, prev = 0, hwm = 0;
    segflake_decoded d;
    int i;
    clock.now = wall_ms();
    clock.reads = 0;
    clock.step_every = 0;
    g = new_gen(3, &clock, 2000);
    if (!g) return;
    CHECK_OK(segflake_snowflake_next(g, &prev));
    /* Back by less than max_drift_ms: keep issuing, still increasing. */
    clock.now -= 1500;
    CHECK_OK(segflake_snowflake_next(g, &id));
    CHECK(id > prev);
    /* Back by more: fail fast, saying by how much. */
    clock.now -= 1500;
    CHECK_ERR(segflake_snowflake_next(g, &id), SEGFLAKE_CLOCK_MOVED_BACKWARDS);
    CHECK_MSG("by 3000 ms");
    CHECK_MSG("max_drift_ms = 2000");
    CHECK_ERR(segflake_snowflake_next_n(g, &id, 1), SEGFLAKE_CLOCK_MOVED_BACKWARDS);
    /* And recovers when the clock catches up. */
    clock.now += 3000;
    CHECK_OK(segflake_snowflake_next(g, &id));
    CHECK(id > prev);
    /* A frozen clock: sequence overflow borrows future ticks (within the drift), never an error. */
    prev = id;
    for (i = 0; i < 3 * 4096; i++) {
        CHECK_OK(segflake_snowflake_next(g, &id));
        if (id <= prev) { CHECK(id > prev); break; }
        prev = id;
    }
    CHECK_OK(segflake_snowflake_decode(g, id, &d));
    CHECK(d.timestamp_ms > clock.now && d.timestamp_ms <= clock.now + 2000);
    CHECK_OK(segflake_snowflake_high_water_mark_ms(g, &hwm));
    CHECK_U64(hwm, d.timestamp_ms);
    /* Before the epoch. */
    clock.now = 1000;
    CHECK_ERR(segflake_snowflake_next(g, &id), SEGFLAKE_CLOCK_BEFORE_EPOCH);
    CHECK_MSG("before the layout epoch");
    segflake_snowflake_free(g);

    /* Strict mode (drift 0) on a slowly advancing clock: waits for ticks, never fails. */
    clock.now = wall_ms();
    clock.reads = 0;
    clock.step_every = 50;
    g = new_gen(4, &clock, 0);
    if (!g) return;
    prev = 0;
    for (i = 0; i < 20000; i++) {
        CHECK_OK(segflake_snowflake_next(g, &id));
        if (id <= prev) { CHECK(id > prev); break; }
        prev = id;
        CHECK_OK(segflake_snowflake_decode(g, id, &d));
        if (d.timestamp_ms > clock.now) {
            t_fail(__FILE__, __LINE__, "strict mode issued a future tick");
            break;
        }
    }
    segflake_snowflake_free(g);
}

static void test_frozen_host_clock_fails_instead_of_hanging(void) {
    fake_clock clock;
    segflake_snowflake *g;
    uint64_t *ids = (uint64_t *)malloc(5000 * sizeof *ids);
    uint64_t id;
    clock.now = wall_ms();
    clock.reads = 0;
    clock.step_every = 0;
    g = new_gen(6, &clock, 0); /* strict: waits for the next tick after 4096 IDs */
    if (!g || !ids) goto done;
    CHECK_ERR(segflake_snowflake_next_n(g, ids, 5000), SEGFLAKE_CLOCK_STALLED);
    CHECK_MSG("for 2000 ms while the generator waited");
    /* Once the clock moves, the generator goes on. */
    clock.now += 1;
    CHECK_OK(segflake_snowflake_next(g, &id));
done:
    segflake_snowflake_free(g);
    free(ids);
}

static void test_not_before_and_time_exhausted(void) {
    fake_clock clock;
    segflake_snowflake_options o;
    segflake_snowflake *g = NULL;
    segflake_layout_spec spec;
    segflake_layout *tiny = NULL;
    uint64_t id, hwm = 0;
    segflake_decoded d;

    clock.now = wall_ms();
    clock.reads = 0;
    clock.step_every = 0;
    CHECK_OK(segflake_snowflake_options_init(&o, 5));
    o.clock = fake_now;
    o.clock_ctx = &clock;
    o.has_not_before_ms = true;
    o.not_before_ms = clock.now + 500;
    CHECK_OK(segflake_snowflake_new(&o, &g));
    if (g) {
        CHECK_OK(segflake_snowflake_high_water_mark_ms(g, &hwm));
        CHECK_U64(hwm, o.not_before_ms);
        CHECK_OK(segflake_snowflake_next(g, &id));
        CHECK_OK(segflake_snowflake_decode(g, id, &d));
        CHECK(d.timestamp_ms > o.not_before_ms);
        segflake_snowflake_free(g);
        g = NULL;
    }
    /* A high-water mark further ahead than the drift: refused until the clock catches up. */
    o.not_before_ms = clock.now + 10000;
    CHECK_OK(segflake_snowflake_new(&o, &g));
    if (g) {
        CHECK_ERR(segflake_snowflake_next(g, &id), SEGFLAKE_CLOCK_MOVED_BACKWARDS);
        clock.now += 10000;
        CHECK_OK(segflake_snowflake_next(g, &id));
        CHECK_OK(segflake_snowflake_decode(g, id, &d));
        CHECK(d.timestamp_ms > o.not_before_ms);
        segflake_snowflake_free(g);
        g = NULL;
    }

    /* A 20-bit, 1 ms layout lasts about 17 minutes: an hour after its epoch it is spent. */
    CHECK_OK(segflake_layout_spec_preset("twitter", &spec));
    spec.time_bits = 20;
    spec.min_lifetime_years = 0;
    spec.epoch_ms = clock.now - 3600000ull;
    CHECK_OK(segflake_layout_new(&spec, &tiny));
    CHECK_OK(segflake_snowflake_options_init(&o, 1));
    o.layout = tiny;
    o.clock = fake_now;
    o.clock_ctx = &clock;
    CHECK_OK(segflake_snowflake_new(&o, &g));
    if (g) {
        CHECK_ERR(segflake_snowflake_next(g, &id), SEGFLAKE_TIME_EXHAUSTED);
        CHECK_MSG("ran out");
        segflake_snowflake_free(g);
    }
    segflake_layout_free(tiny);
}

static void test_obfuscator_permutation(void) {
    segflake_obfuscator *o = NULL, *other = NULL;
    uint64_t i, out = 0, back = 0, prev_out = UINT64_MAX, other_out = 0;
    int differs = 0;
    CHECK_OK(segflake_obfuscator_new_hex("736567666C616B652D746573742D6B21", &o));
    CHECK_OK(segflake_obfuscator_new_hex("000102030405060708090a0b0c0d0e0f", &other));
    if (!o || !other) goto done;
    for (i = 0; i < 2000; i++) {
        uint64_t id = 1050118621198921728ull + i;
        CHECK_OK(segflake_obfuscator_obfuscate(o, id, &out));
        CHECK(out < (1ull << 63));
        CHECK(out != prev_out);
        CHECK_OK(segflake_obfuscator_deobfuscate(o, out, &back));
        CHECK_U64(back, id);
        CHECK_OK(segflake_obfuscator_obfuscate(other, id, &other_out));
        differs += other_out != out;
        prev_out = out;
    }
    CHECK(differs > 1990);
    CHECK_ERR(segflake_obfuscator_obfuscate(o, 1ull << 63, &out), SEGFLAKE_INVALID_ARGUMENT);
done:
    segflake_obfuscator_free(o);
    segflake_obfuscator_free(other);
}

/* Deterministic pseudo-random inputs: every call returns OK or a documented error, never
 * SEGFLAKE_PANIC (a panic caught at the boundary) or an unknown status. */
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* A host clock that jumps around (single-threaded use only). */
static uint64_t jumpy_now(void *ctx) {
    uint64_t base = *(uint64_t *)ctx;
    uint64_t r = rnd();
    switch (r % 4) {
    case 0: return base + (r >> 40);
    case 1: return base - (r >> 44);
    case 2: return r >> (r % 64);
    default: return base;
    }
}

static int sane(segflake_status s) {
    return s == SEGFLAKE_OK || (s >= SEGFLAKE_INVALID_LAYOUT && s <= SEGFLAKE_CLOSED);
}

static void test_random_input_never_panics(void) {
    static const char alphabet[] = "0123456789-:.TZ zZaAoOiIlLuU\xc3\xa9\xff\x01";
    char text[48], buf[SEGFLAKE_ENCODE_BUF_LEN];
    uint64_t u;
    int i, bad = 0;
    for (i = 0; i < 20000 && !bad; i++) {
        size_t len = (size_t)(rnd() % 40), k;
        segflake_format f = (segflake_format)(rnd() % 4);
        for (k = 0; k < len; k++) text[k] = alphabet[rnd() % (sizeof alphabet - 1)];
        text[len] = '\0';
        bad |= !sane(segflake_parse(text, f, &u));
        bad |= !sane(segflake_parse_time_ms(text, &u));
        bad |= !sane(segflake_worker_id_from_hostname(text, &u));
        bad |= !sane(segflake_worker_id_from_ipv4(text, (uint32_t)(rnd() % 40), &u));
        bad |= !sane(segflake_layout_spec_preset(text, NULL));
        bad |= !sane(segflake_encode(rnd(), f, buf, (size_t)(rnd() % sizeof buf), NULL));
        bad |= !sane(segflake_format_time_ms(rnd(), text, sizeof text, NULL));
    }
    CHECK(!bad);
    for (i = 0; i < 20000 && !bad; i++) {
        segflake_layout_spec spec;
        segflake_layout *l = NULL;
        segflake_decoded d;
        spec.time_bits = (uint32_t)(rnd() % 70);
        spec.worker_bits = (uint32_t)(rnd() % 35);
        spec.sequence_bits = (uint32_t)(rnd() % 35);
        spec.tick_ms = rnd() % 4 ? rnd() % 100000 : rnd();
        spec.epoch_ms = rnd() % 2 ? rnd() % 1800000000000ull : rnd();
        spec.order = (segflake_order)(rnd() % 3);
        spec.min_lifetime_years = (uint32_t)(rnd() % 3 ? rnd() % 20 : rnd());
        bad |= !sane(segflake_layout_new_at(&spec, rnd() % 4 ? 1800000000000ull : rnd(), &l));
        if (l) {
            bad |= !sane(segflake_layout_decode(l, rnd(), &d));
            bad |= !sane(segflake_layout_compose(l, rnd() >> (rnd() % 64), rnd() >> (rnd() % 64),
                                                 rnd() >> (rnd() % 64), &u));
            bad |= !sane(segflake_layout_compose_at(l, rnd(), rnd() % 8, rnd() % 8, &u));
            segflake_layout_free(l);
        }
    }
    CHECK(!bad);
    for (i = 0; i < 5000 && !bad; i++) {
        segflake_serial_options o;
        segflake_serial *sr = NULL;
        segflake_serial_parts p;
        segflake_serial_options_init(&o);
        o.worker_digits = (uint32_t)(rnd() % 12);
        o.sequence_digits = (uint32_t)(rnd() % 12);
        o.worker_id = rnd() % 3 ? rnd() % 1000 : rnd();
        o.utc_offset_minutes = (int32_t)(rnd() % 4000) - 2000;
        o.has_last = rnd() % 2;
        o.last = rnd() >> (rnd() % 64);
        bad |= !sane(segflake_serial_new(&o, &sr));
        if (sr) {
            bad |= !sane(segflake_serial_format(sr, rnd() >> (rnd() % 64), rnd() % 100000, &u));
            bad |= !sane(segflake_serial_decode(sr, rnd() >> (rnd() % 64), &p));
            bad |= !sane(segflake_serial_date_prefix(sr, rnd() >> (rnd() % 64), &u));
            segflake_serial_free(sr);
        }
    }
    CHECK(!bad);
    for (i = 0; i < 3000 && !bad; i++) {
        segflake_snowflake_options o;
        segflake_snowflake *g = NULL;
        segflake_layout *l = NULL;
        uint64_t base = wall_ms(), ids[5];
        const char *presets[] = {"twitter", "sonyflake", "js-safe"};
        int k;
        bad |= !sane(segflake_layout_preset(presets[rnd() % 3], &l));
        segflake_snowflake_options_init(&o, rnd() % 3 ? rnd() % 16 : rnd());
        o.layout = rnd() % 4 ? l : NULL;
        o.has_epoch_ms = rnd() % 4 == 0;
        o.epoch_ms = rnd() % 2 ? base - rnd() % 100000000000ull : rnd();
        o.max_drift_ms = rnd() % 3 ? rnd() % 5000 : rnd();
        o.sequence_start = (segflake_sequence_start)(rnd() % 3);
        o.has_not_before_ms = rnd() % 3 == 0;
        o.not_before_ms = rnd() % 2 ? base + rnd() % 5000 - 2500 : rnd();
        o.clock = jumpy_now;
        o.clock_ctx = &base;
        bad |= !sane(segflake_snowflake_new(&o, &g));
        segflake_layout_free(l);
        for (k = 0; g && k < 3; k++) bad |= !sane(segflake_snowflake_next(g, &u));
        if (g) {
            bad |= !sane(segflake_snowflake_next_n(g, ids, 5));
            bad |= !sane(segflake_snowflake_high_water_mark_ms(g, &u));
        }
        segflake_snowflake_free(g);
    }
    CHECK(!bad);
}

void run_api_tests(void) {
    t_run("version macros match the library", test_version);
    t_run("status codes", test_status_codes);
    t_run("last error message", test_last_error);
    t_run("every NULL pointer is refused", test_null_pointers);
    t_run("short buffers are refused with the needed length", test_short_buffers);
    t_run("bad names, values and UTF-8", test_bad_names_and_values);
    t_run("layout queries, compose and decode", test_layout_queries_and_round_trips);
    t_run("generator basics", test_generator_basics);
    t_run("generator options", test_generator_options);
    t_run("clock policy with a host clock", test_clock_policy);
    t_run("not_before_ms and time exhaustion", test_not_before_and_time_exhausted);
    t_run("a host clock that never advances fails instead of hanging",
          test_frozen_host_clock_fails_instead_of_hanging);
    t_run("obfuscator is a keyed permutation", test_obfuscator_permutation);
    t_run("random input never panics", test_random_input_never_panics);
}
