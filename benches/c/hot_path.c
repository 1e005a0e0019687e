/*
 * One C ABI hot path run a fixed number of times, for instruction counting
 * under callgrind (benches/callgrind.sh builds it against the static and
 * the shared library): hot_path <path> [iterations]. The paths mirror
 * benches/examples/hot_path.rs: try-acquire, a call to an opaque function,
 * record success, with a fixed time (the _at functions), so the C figures
 * sit next to the Rust ones. The fast_ paths go through the header's
 * inline fast path (tw_breaker_try_acquire_at_fast, ..._record_at_fast).
 */
#include "tripwire.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The dependency every breaker guards, opaque to the optimiser. */
__attribute__((noinline)) static uint64_t guarded(uint64_t x) {
    __asm__ volatile("" : "+r"(x));
    return x;
}

static void sink(uint64_t x) { __asm__ volatile("" : : "r"(x) : "memory"); }

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "consecutive";
    unsigned long long n = argc > 2 ? strtoull(argv[2], NULL, 10) : 1000000ull;
    tw_breaker_config cfg;
    tw_breaker_config_default(&cfg);
    tw_breaker *counted, *uncounted;
    if (tw_breaker_new(&cfg, &counted) != TW_STATUS_OK) {
        return 1;
    }
    cfg.count_successes = 0;
    if (tw_breaker_new(&cfg, &uncounted) != TW_STATUS_OK) {
        return 1;
    }
    int uncounted_path = strstr(path, "uncounted") != NULL;
    const tw_breaker *b = uncounted_path ? uncounted : counted;
    if (strcmp(path, "bare") == 0) {
        for (unsigned long long i = 0; i < n; i++) {
            sink(guarded(1));
        }
    } else if (strcmp(path, "consecutive") == 0 || strcmp(path, "consecutive_uncounted") == 0) {
        for (unsigned long long i = 0; i < n; i++) {
            tw_ticket t;
            if (tw_breaker_try_acquire_at(b, 1, &t, NULL) != TW_STATUS_OK) {
                return 1;
            }
            uint64_t r = guarded(1);
            sink((uint64_t)tw_breaker_record_at(b, 1, t, TW_OUTCOME_SUCCESS, NULL));
            sink(r);
        }
    } else if (strcmp(path, "fast_consecutive") == 0 || strcmp(path, "fast_consecutive_uncounted") == 0) {
        for (unsigned long long i = 0; i < n; i++) {
            tw_ticket t;
            if (tw_breaker_try_acquire_at_fast(b, 1, &t, NULL) != TW_STATUS_OK) {
                return 1;
            }
            uint64_t r = guarded(1);
            sink((uint64_t)tw_breaker_record_at_fast(b, 1, t, TW_OUTCOME_SUCCESS, NULL));
            sink(r);
        }
    } else {
        fprintf(stderr, "hot_path: unknown path %s\n", path);
        return 2;
    }
    tw_breaker_free(counted);
    tw_breaker_free(uncounted);
    return 0;
}
