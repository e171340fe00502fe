/* Generate snowflake IDs from C.
 *
 *   cc -std=c99 snowflake.c $(pkg-config --cflags --libs segflake) -o snowflake
 *   ./snowflake [worker-id]
 */
#include <stdio.h>
#include <stdlib.h>

#include <segflake.h>

static int report(const char *what, segflake_status status) {
    fprintf(stderr, "%s failed: %s (%s)\n", what, segflake_status_code(status),
            segflake_last_error_message());
    return 1;
}

int main(int argc, char **argv) {
    segflake_snowflake_options opts;
    segflake_snowflake *gen = NULL, *refused = NULL;
    segflake_layout *layout = NULL;
    uint64_t worker = argc > 1 ? strtoull(argv[1], NULL, 10) : 1;
    uint64_t batch[5];
    segflake_status s;
    size_t i;

    /* The Sonyflake layout (39/16/8 bits, 10 ms ticks) with a newer epoch. */
    segflake_layout_spec spec;
    if ((s = segflake_layout_spec_preset("sonyflake", &spec)) != SEGFLAKE_OK)
        return report("segflake_layout_spec_preset", s);
    if ((s = segflake_parse_time_ms("2025-06-01", &spec.epoch_ms)) != SEGFLAKE_OK)
        return report("segflake_parse_time_ms", s);
    if ((s = segflake_layout_new(&spec, &layout)) != SEGFLAKE_OK)
        return report("segflake_layout_new", s);

    segflake_snowflake_options_init(&opts, worker);
    opts.layout = layout; /* copied: the layout may be freed right after */
    s = segflake_snowflake_new(&opts, &gen);
    segflake_layout_free(layout);
    if (s != SEGFLAKE_OK) return report("segflake_snowflake_new", s);

    if ((s = segflake_snowflake_next_n(gen, batch, 5)) != SEGFLAKE_OK)
        return report("segflake_snowflake_next_n", s);
    for (i = 0; i < 5; i++) {
        segflake_decoded d;
        char base62[SEGFLAKE_ENCODE_BUF_LEN], when[SEGFLAKE_TIME_BUF_LEN];
        segflake_snowflake_decode(gen, batch[i], &d);
        segflake_encode_base62(batch[i], base62, sizeof base62, NULL);
        segflake_format_time_ms(d.timestamp_ms, when, sizeof when, NULL);
        printf("%llu  %s  %s  worker=%llu sequence=%llu\n", (unsigned long long)batch[i],
               base62, when, (unsigned long long)d.worker_id, (unsigned long long)d.sequence);
    }

    /* Errors carry a status and a message saying what is allowed. */
    segflake_snowflake_options_init(&opts, 70000);
    opts.layout = NULL; /* twitter: 10 worker bits */
    s = segflake_snowflake_new(&opts, &refused);
    printf("worker 70000 on the twitter layout: %s: %s\n", segflake_status_code(s),
           segflake_last_error_message());

    segflake_snowflake_free(refused); /* still NULL: nothing was created */
    segflake_snowflake_free(gen);
    return s == SEGFLAKE_WORKER_ID_OUT_OF_RANGE ? 0 : 1;
}
