/* The C test suite of libsegflake. Usage: segflake_tests VECTORS_DIR [FILTER]
 * With FILTER, only the tests whose name contains it run (and count). */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static int passed, failed, current_failures;
static const char *current_name;
static const char *filter;
/* Whether the current test is left out by the filter: its checks are not reported. */
static int skipping;

static int selected(const char *name) { return filter == NULL || (name && strstr(name, filter) != NULL); }

void t_begin(const char *name) {
    current_name = name;
    current_failures = 0;
    skipping = !selected(name);
}

int t_current_failures(void) { return current_failures; }

void t_fail(const char *file, int line, const char *fmt, ...) {
    va_list ap;
    if (skipping) return;
    if (current_failures == 0) printf("FAIL - %s\n", current_name ? current_name : "?");
    current_failures++;
    printf("    %s:%d: ", file, line);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
}

void t_end(void) {
    if (skipping) {
        skipping = 0;
    } else if (current_failures == 0) {
        passed++;
        printf("ok - %s\n", current_name);
    } else {
        failed++;
    }
    fflush(stdout);
    current_name = NULL;
}

void t_run(const char *name, void (*fn)(void)) {
    if (!selected(name)) return;
    t_begin(name);
    fn();
    t_end();
}

int main(int argc, char **argv) {
    if (argc != 2 && argc != 3) {
        fprintf(stderr, "usage: %s VECTORS_DIR [FILTER]\n", argv[0]);
        return 2;
    }
    if (argc == 3) filter = argv[2];
    run_api_tests();
    run_thread_tests();
    run_segment_tests();
    run_options_tests();
    run_lease_tests();
    run_vector_tests(argv[1]);
    printf("%d passed, %d failed\n", passed, failed);
    if (filter != NULL && passed + failed == 0) fprintf(stderr, "no test name contains \"%s\"\n", filter);
    return failed == 0 && passed > 0 ? 0 : 1;
}
