/*
 * A rough timing of one try-acquire + record through the C ABI, called
 * from C: the exported functions, and the header's inline fast path
 * (tw_breaker_try_acquire_fast, tw_breaker_record_fast). benches/c/timing.sh runs it next to the same calls made in Rust
 * (ffi/examples/abi_timing.rs). Informal: best of 5 runs of a tight loop.
 */
#define _POSIX_C_SOURCE 200809L
#include "tripwire.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#define CALLS 5000000u

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

enum mode { ACQUIRE_RECORD, ACQUIRE_RECORD_AT, FAST, FAST_AT, REJECT };

static double run(const tw_breaker *b, enum mode mode) {
    double best = 1e9;
    for (int round = 0; round < 5; round++) {
        uint64_t start = now_ns();
        for (uint32_t i = 0; i < CALLS; i++) {
            tw_ticket t;
            switch (mode) {
            case ACQUIRE_RECORD:
                if (tw_breaker_try_acquire(b, &t, NULL) == TW_STATUS_OK) {
                    tw_breaker_record(b, t, TW_OUTCOME_SUCCESS, NULL);
                }
                break;
            case ACQUIRE_RECORD_AT:
                if (tw_breaker_try_acquire_at(b, i, &t, NULL) == TW_STATUS_OK) {
                    tw_breaker_record_at(b, i, t, TW_OUTCOME_SUCCESS, NULL);
                }
                break;
            case FAST:
                if (tw_breaker_try_acquire_fast(b, &t, NULL) == TW_STATUS_OK) {
                    tw_breaker_record_fast(b, t, TW_OUTCOME_SUCCESS, NULL);
                }
                break;
            case FAST_AT:
                if (tw_breaker_try_acquire_at_fast(b, i, &t, NULL) == TW_STATUS_OK) {
                    tw_breaker_record_at_fast(b, i, t, TW_OUTCOME_SUCCESS, NULL);
                }
                break;
            case REJECT: {
                tw_rejection r;
                tw_breaker_try_acquire(b, &t, &r);
                break;
            }
            }
        }
        double ns = (double)(now_ns() - start) / CALLS;
        if (ns < best) {
            best = ns;
        }
    }
    return best;
}

/* The yardstick: one uncontended atomic fetch_add. */
static double fetch_add_ns(void) {
    static atomic_uint_fast64_t counter;
    double best = 1e9;
    for (int round = 0; round < 5; round++) {
        uint64_t start = now_ns();
        for (uint32_t i = 0; i < CALLS; i++) {
            atomic_fetch_add_explicit(&counter, 1, memory_order_relaxed);
        }
        double ns = (double)(now_ns() - start) / CALLS;
        if (ns < best) {
            best = ns;
        }
    }
    return best;
}

int main(void) {
    printf("C,            one uncontended fetch_add (yardstick):             %6.2f ns\n", fetch_add_ns());
    tw_breaker_config cfg;
    tw_breaker_config_default(&cfg);
    tw_breaker *counting, *quiet;
    tw_breaker_new(&cfg, &counting);
    cfg.count_successes = 0;
    tw_breaker_new(&cfg, &quiet);
    printf("C   -> C ABI, closed, try_acquire + record success (counted):     %6.2f ns\n",
           run(counting, ACQUIRE_RECORD));
    printf("C   -> C ABI, closed, try_acquire + record success (not counted): %6.2f ns\n",
           run(quiet, ACQUIRE_RECORD));
    printf("C   -> C ABI, closed, _at variants (not counted):                 %6.2f ns\n",
           run(quiet, ACQUIRE_RECORD_AT));
    printf("C   -> inline fast path, closed, try_acquire + record success (counted):     %6.2f ns\n",
           run(counting, FAST));
    printf("C   -> inline fast path, closed, try_acquire + record success (not counted): %6.2f ns\n",
           run(quiet, FAST));
    printf("C   -> inline fast path, closed, _at variants (not counted):                 %6.2f ns\n",
           run(quiet, FAST_AT));
    tw_breaker_force_open(quiet, NULL);
    printf("C   -> C ABI, forced open, rejection:                             %6.2f ns\n",
           run(quiet, REJECT));
    tw_breaker_free(counting);
    tw_breaker_free(quiet);
    return 0;
}
