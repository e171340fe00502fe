/* A hand-written Twitter snowflake, as found in C code bases: a global pthread mutex,
 * clock_gettime(CLOCK_REALTIME) in milliseconds, 41 time / 10 worker / 12 sequence bits
 * from Twitter's epoch, a spin to the next millisecond once its 4,096 sequence numbers
 * are used, and a refusal (no ID) when the clock is behind the last millisecond issued. */
#define _POSIX_C_SOURCE 200809L
#include "peer_snowflake.h"

#include <pthread.h>
#include <time.h>

#define EPOCH_MS 1288834974657ULL /* Twitter's epoch, 2010-11-04 */
#define WORKER_BITS 10
#define SEQUENCE_BITS 12
#define MAX_WORKER ((1ULL << WORKER_BITS) - 1)
#define SEQUENCE_MASK ((1ULL << SEQUENCE_BITS) - 1)

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t worker;
static uint64_t last_ms;
static uint64_t sequence;

static uint64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

int peer_snowflake_init(uint64_t worker_id) {
    if (worker_id > MAX_WORKER) return -1;
    pthread_mutex_lock(&lock);
    worker = worker_id;
    pthread_mutex_unlock(&lock);
    return 0;
}

int peer_snowflake_next(uint64_t *out) {
    uint64_t ms;
    pthread_mutex_lock(&lock);
    ms = now_ms();
    if (ms < last_ms) {
        pthread_mutex_unlock(&lock);
        return -1;
    }
    if (ms == last_ms) {
        sequence = (sequence + 1) & SEQUENCE_MASK;
        if (sequence == 0)
            while ((ms = now_ms()) <= last_ms) {
            }
    } else {
        sequence = 0;
    }
    last_ms = ms;
    *out = ((ms - EPOCH_MS) << (WORKER_BITS + SEQUENCE_BITS)) | (worker << SEQUENCE_BITS) | sequence;
    pthread_mutex_unlock(&lock);
    return 0;
}
