/* A plain test runner: each test prints "ok - name" or "FAIL - name" with the failed
 * checks, and main() ends with "N passed, N failed". */
#ifndef SEGFLAKE_TEST_HARNESS_H
#define SEGFLAKE_TEST_HARNESS_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "segflake.h"

void t_begin(const char *name);
void t_end(void);
void t_fail(const char *file, int line, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
void t_run(const char *name, void (*fn)(void));
int t_current_failures(void);

typedef unsigned long long ull;

#define CHECK(cond)                                                                   \
    do {                                                                              \
        if (!(cond)) t_fail(__FILE__, __LINE__, "CHECK(%s)", #cond);                  \
    } while (0)

#define CHECK_U64(actual, expected)                                                   \
    do {                                                                              \
        uint64_t a_ = (uint64_t)(actual), e_ = (uint64_t)(expected);                  \
        if (a_ != e_)                                                                 \
            t_fail(__FILE__, __LINE__, "%s is %llu, expected %llu", #actual, (ull)a_, \
                   (ull)e_);                                                          \
    } while (0)

#define CHECK_STR(actual, expected)                                                   \
    do {                                                                              \
        const char *a_ = (actual), *e_ = (expected);                                  \
        if (!a_ || !e_ || strcmp(a_, e_) != 0)                                        \
            t_fail(__FILE__, __LINE__, "%s is \"%s\", expected \"%s\"", #actual,      \
                   a_ ? a_ : "(null)", e_ ? e_ : "(null)");                           \
    } while (0)

#define CHECK_OK(expr)                                                                \
    do {                                                                              \
        segflake_status s_ = (expr);                                                  \
        if (s_ != SEGFLAKE_OK)                                                        \
            t_fail(__FILE__, __LINE__, "%s returned %s: %s", #expr,                   \
                   segflake_status_code(s_), segflake_last_error_message());          \
    } while (0)

/* Expects a failure with `want` and a non-empty message. */
#define CHECK_ERR(expr, want)                                                         \
    do {                                                                              \
        segflake_status s_ = (expr);                                                  \
        if (s_ != (want))                                                             \
            t_fail(__FILE__, __LINE__, "%s returned %s, expected %s (%s)", #expr,     \
                   segflake_status_code(s_), segflake_status_code(want),              \
                   s_ ? segflake_last_error_message() : "no error");                  \
        else if (segflake_last_error_status() != (want) ||                            \
                 segflake_last_error_message()[0] == '\0')                            \
            t_fail(__FILE__, __LINE__, "%s: last error not recorded", #expr);         \
    } while (0)

/* The last error message contains `sub`. */
#define CHECK_MSG(sub)                                                                \
    do {                                                                              \
        const char *m_ = segflake_last_error_message();                               \
        if (!strstr(m_, (sub)))                                                       \
            t_fail(__FILE__, __LINE__, "last error \"%s\" does not contain \"%s\"", m_, \
                   (sub));                                                            \
    } while (0)

/* Test groups, each in its own file. */
void run_api_tests(void);
void run_thread_tests(void);
void run_vector_tests(const char *dir);
void run_segment_tests(void);
void run_options_tests(void);
void run_lease_tests(void);

#endif
