// The header compiles as C++11 (-Wall -Wextra -Werror -pedantic) and links from C++.
// A small RAII wrapper shows the intended ownership: one handle, one *_free.
#include "segflake.h"

#include <cstdio>
#include <cstring>
#include <memory>
#include <type_traits>

static_assert(std::is_standard_layout<segflake_layout_spec>::value, "C layout");
static_assert(std::is_standard_layout<segflake_snowflake_options>::value, "C layout");
static_assert(std::is_same<segflake_status, int32_t>::value, "status is int32_t");
static_assert(sizeof(segflake_decoded) == 4 * sizeof(uint64_t), "four u64 fields");

namespace {
struct SnowflakeDeleter {
    void operator()(segflake_snowflake *g) const { segflake_snowflake_free(g); }
};
using Snowflake = std::unique_ptr<segflake_snowflake, SnowflakeDeleter>;

int fail(const char *what) {
    std::fprintf(stderr, "FAIL - C++ %s: %s\n", what, segflake_last_error_message());
    return 1;
}
}  // namespace

int main() {
    segflake_snowflake_options opts;
    if (segflake_snowflake_options_init(&opts, 42) != SEGFLAKE_OK) return fail("options");
    segflake_snowflake *raw = nullptr;
    if (segflake_snowflake_new(&opts, &raw) != SEGFLAKE_OK) return fail("new");
    Snowflake gen(raw);

    uint64_t a = 0, b = 0;
    if (segflake_snowflake_next(gen.get(), &a) != SEGFLAKE_OK) return fail("next");
    if (segflake_snowflake_next(gen.get(), &b) != SEGFLAKE_OK) return fail("next");
    if (!(b > a)) return fail("increasing");

    segflake_decoded d;
    if (segflake_snowflake_decode(gen.get(), b, &d) != SEGFLAKE_OK || d.worker_id != 42)
        return fail("decode");

    char text[SEGFLAKE_ENCODE_BUF_LEN];
    if (segflake_encode(b, SEGFLAKE_FORMAT_BASE62, text, sizeof text, nullptr) != SEGFLAKE_OK ||
        std::strlen(text) != SEGFLAKE_BASE62_LEN)
        return fail("encode");

    if (segflake_snowflake_next(nullptr, &a) != SEGFLAKE_INVALID_ARGUMENT)
        return fail("NULL refused");
    std::printf("ok - C++ translation unit: header compiles as C++11 and links (%s)\n",
                segflake_version());
    return 0;
}
