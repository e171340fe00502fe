/* The peer of bench/c/bench.c: the Twitter snowflake a C programmer writes by hand (one
 * global generator behind a pthread mutex, 41 time / 10 worker / 12 sequence bits). */
#ifndef PEER_SNOWFLAKE_H
#define PEER_SNOWFLAKE_H

#include <stdint.h>

/* Sets the worker ID (0..1023); returns 0, or -1 if it does not fit in 10 bits. */
int peer_snowflake_init(uint64_t worker_id);

/* Takes the next ID into *out; returns 0, or -1 (and no ID) if the clock is behind the
 * last millisecond issued. */
int peer_snowflake_next(uint64_t *out);

#endif
