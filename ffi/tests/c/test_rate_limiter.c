/*
 * One rate limiter shared by several processes through a MAP_SHARED
 * mapping: one request-weight budget for every process of a host.
 *
 * 0. Bad calls: a limit out of range, a zero or garbage region, costs of
 *    the wrong count or above a burst, a header value that is no number.
 *    Each a status and a message naming the field.
 * 1. WORKERS processes open one region and race for its burst: between
 *    them they take it exactly once, and a request one limit refuses takes
 *    nothing from the other.
 * 2. Reserving ahead returns the wait; a server's count slows the next
 *    calls; attach finds the limits another process made.
 * 3. Workers SIGKILLed in the middle of their checks and refunds leave a
 *    region that attaches, counts no more than was taken, and serves the
 *    next caller.
 *
 * Built with -std=c11 -Wall -Wextra -Werror -Wconversion, plainly and with
 * -fsanitize=address,undefined, by ffi/tests/c_api.rs.
 */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#include "tripwire.h"

#include "check.h"

#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define WORKERS 4
#define TRIES 40
/* Weight: 1,000 an hour, 20 at once. Orders: 10 an hour, 5 at once. */
#define WEIGHT_BURST 20u

static const uint32_t UNITS[2] = {1000, 10};
static const uint64_t PERIODS[2] = {3600000000000ull, 3600000000000ull};
static const uint32_t BURSTS[2] = {WEIGHT_BURST, 5};

struct control {
    atomic_uint go;
    atomic_uint taken;
    atomic_uint orders;
};

static void die(const char *what) {
    fprintf(stderr, "test_rate_limiter: %s (last error: %s)\n", what, tw_last_error_message());
    exit(1);
}

static void *map_shared(size_t size) {
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        die("mmap");
    }
    return p;
}

static int message_has(const char *needle) {
    return strstr(tw_last_error_message(), needle) != NULL;
}

static size_t region_size(size_t limits) {
    size_t size = 0, align = 0;
    if (tw_rate_limiter_size(limits, &size, &align) != TW_STATUS_OK || align != 64) {
        die("tw_rate_limiter_size");
    }
    return size;
}

/* 0. Bad calls. */
static void bad_calls(void) {
    size_t s, a;
    CHECK(region_size(2) == 96);
    CHECK_STATUS(tw_rate_limiter_size(0, &s, &a), TW_STATUS_INVALID_ARGUMENT);
    CHECK(message_has("`n` = 0 limits, expected 1 to 4"));
    CHECK_STATUS(tw_rate_limiter_size(1, NULL, &a), TW_STATUS_NULL_ARGUMENT);

    unsigned char *mem = map_shared(4096);
    const tw_rate_limiter *l = NULL;
    size_t n = 0;
    CHECK_STATUS(tw_rate_limiter_attach(mem, 4096, &n, &l), TW_STATUS_REGION_UNINITIALISED);
    const uint32_t one_unit[1] = {1};
    CHECK_STATUS(tw_rate_limiter_open_in(mem, 4096, 1, one_unit, PERIODS, NULL, &l), TW_STATUS_INVALID_CONFIG);
    CHECK(message_has("`units[0]`: invalid rate limit config: units = 1, expected 2 to 1000000000"));
    const uint64_t no_period[2] = {3600000000000ull, 0};
    CHECK_STATUS(tw_rate_limiter_open_in(mem, 4096, 2, UNITS, no_period, NULL, &l), TW_STATUS_INVALID_CONFIG);
    CHECK(message_has("`period_ns[1]`: invalid rate limit config: period_ns = 0"));
    CHECK_STATUS(tw_rate_limiter_open_in(mem, 4096, 2, UNITS, PERIODS, NULL, NULL), TW_STATUS_NULL_ARGUMENT);
    CHECK(l == NULL);

    CHECK_STATUS(tw_rate_limiter_open_in(mem, 4096, 2, UNITS, PERIODS, BURSTS, &l), TW_STATUS_OK);
    const tw_rate_limiter *other = NULL;
    CHECK_STATUS(tw_rate_limiter_open_in(mem, 4096, 1, UNITS, PERIODS, BURSTS, &other), TW_STATUS_REGION_CONFIG_MISMATCH);
    CHECK(message_has("holds `limits` = 2, not the 1 asked for"));
    const uint32_t other_bursts[2] = {WEIGHT_BURST, 4};
    CHECK_STATUS(tw_rate_limiter_open_in(mem, 4096, 2, UNITS, PERIODS, other_bursts, &other),
                 TW_STATUS_REGION_CONFIG_MISMATCH);
    CHECK(message_has("`limit[1]` differs"));

    uint64_t ready = 0, in_use[2] = {0, 0};
    tw_throttled why = {0, 0};
    const uint32_t one_cost[1] = {1};
    CHECK_STATUS(tw_rate_limiter_acquire(l, one_cost, 1, 0, &ready, &why), TW_STATUS_INVALID_ARGUMENT);
    CHECK(message_has("`n` = 1 costs, the rate limiter has 2 limits"));
    const uint32_t too_many_orders[2] = {1, 6};
    CHECK_STATUS(tw_rate_limiter_acquire(l, too_many_orders, 2, 0, &ready, &why), TW_STATUS_INVALID_ARGUMENT);
    CHECK(message_has("rate limit 1: a cost of 6 is above its burst of 5"));
    CHECK_STATUS(tw_rate_limiter_observe_header(l, 0, "12a", UINT64_MAX), TW_STATUS_INVALID_ARGUMENT);
    CHECK(message_has("`value` \"12a\" is not a whole number"));
    CHECK_STATUS(tw_rate_limiter_observe_used(l, 2, 5, UINT64_MAX), TW_STATUS_INVALID_ARGUMENT);
    CHECK_STATUS(tw_rate_limiter_in_use(l, in_use, 2), TW_STATUS_OK);
    CHECK(in_use[0] == 0 && in_use[1] == 0);

    /* Garbage where a limit's config was: attach refuses it by name. */
    unsigned char *junk = map_shared(4096);
    memcpy(junk, mem, 96);
    junk[32] = 1; /* limit 0's units: 1 */
    junk[33] = junk[34] = junk[35] = 0;
    CHECK_STATUS(tw_rate_limiter_attach(junk, 4096, &n, &other), TW_STATUS_REGION_CORRUPT);
    CHECK(message_has("`limit[0]`: invalid rate limit config: units = 1"));
    memset(junk, 0x5a, 4096);
    CHECK_STATUS(tw_rate_limiter_attach(junk, 4096, &n, &other), TW_STATUS_REGION_INVALID);
    munmap(junk, 4096);
    munmap(mem, 4096);
}

/* 1. Processes race for one burst. */
static void one_budget_across_processes(void) {
    struct control *ctl = map_shared(sizeof *ctl);
    unsigned char *mem = map_shared(4096);
    pid_t pids[WORKERS];
    for (int w = 0; w < WORKERS; w++) {
        pid_t pid = fork();
        if (pid < 0) {
            die("fork");
        }
        if (pid == 0) {
            const tw_rate_limiter *l = NULL;
            tw_status st;
            while ((st = tw_rate_limiter_open_in(mem, 4096, 2, UNITS, PERIODS, BURSTS, &l)) ==
                   TW_STATUS_REGION_INITIALISING) {
            }
            if (st != TW_STATUS_OK) {
                die("open_in in a worker");
            }
            while (atomic_load(&ctl->go) == 0) {
            }
            for (int i = 0; i < TRIES; i++) {
                /* Every other request is an order. */
                const uint32_t costs[2] = {1, (uint32_t)(i & 1)};
                uint64_t ready = 0;
                tw_throttled why = {0, 0};
                tw_status got = tw_rate_limiter_acquire(l, costs, 2, 0, &ready, &why);
                if (got == TW_STATUS_OK) {
                    atomic_fetch_add(&ctl->taken, 1);
                    atomic_fetch_add(&ctl->orders, costs[1]);
                } else if (got != TW_STATUS_REJECTED || why.wait_ns == 0 || why.limit > 1) {
                    die("acquire in a worker");
                }
            }
            _exit(0);
        }
        pids[w] = pid;
    }
    atomic_store(&ctl->go, 1);
    for (int w = 0; w < WORKERS; w++) {
        int status = 0;
        if (waitpid(pids[w], &status, 0) != pids[w] || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            die("a worker failed");
        }
    }
    const tw_rate_limiter *l = NULL;
    size_t n = 0;
    CHECK_STATUS(tw_rate_limiter_attach(mem, 4096, &n, &l), TW_STATUS_OK);
    CHECK(n == 2);
    uint64_t in_use[2] = {0, 0};
    CHECK_STATUS(tw_rate_limiter_in_use(l, in_use, 2), TW_STATUS_OK);
    unsigned taken = atomic_load(&ctl->taken), orders = atomic_load(&ctl->orders);
    /* Never more than a burst of either; what was taken is what is counted. */
    CHECK(orders <= 5 && taken <= WEIGHT_BURST);
    CHECK(in_use[0] == taken && in_use[1] == orders);
    /* The orders' burst runs out first: the weight's is not all spent. */
    CHECK(orders == 5);
    printf("test_rate_limiter: %u requests, %u of them orders, across %d processes\n", taken, orders, WORKERS);

    /* 2. Reserving ahead, a server's count, a refund. */
    uint64_t ready = 0;
    tw_throttled why = {0, 0};
    const uint32_t weight_only[2] = {1, 0};
    while (in_use[0] < WEIGHT_BURST) {
        CHECK_STATUS(tw_rate_limiter_acquire(l, weight_only, 2, 0, &ready, &why), TW_STATUS_OK);
        CHECK_STATUS(tw_rate_limiter_in_use(l, in_use, 2), TW_STATUS_OK);
    }
    CHECK_STATUS(tw_rate_limiter_acquire(l, weight_only, 2, 0, &ready, &why), TW_STATUS_REJECTED);
    CHECK(why.limit == 0 && why.wait_ns > 0);
    CHECK_STATUS(tw_rate_limiter_acquire(l, weight_only, 2, UINT64_MAX, &ready, &why), TW_STATUS_OK);
    CHECK(ready > 0 && ready <= why.wait_ns);
    CHECK_STATUS(tw_rate_limiter_observe_header(l, 0, " 900 ", UINT64_MAX), TW_STATUS_OK);
    CHECK_STATUS(tw_rate_limiter_in_use(l, in_use, 2), TW_STATUS_OK);
    CHECK(in_use[0] >= 900);
    CHECK_STATUS(tw_rate_limiter_refund(l, weight_only, 2), TW_STATUS_OK);
    munmap(mem, 4096);
    munmap(ctl, sizeof *ctl);
}

/* 3. Killed mid-check. */
static void killed_workers_leave_a_sound_region(void) {
    unsigned char *mem = map_shared(4096);
    const uint32_t units[1] = {1000000};
    const uint64_t period[1] = {1000000000ull}; /* a million a second: the counts move fast */
    const tw_rate_limiter *l = NULL;
    CHECK_STATUS(tw_rate_limiter_open_in(mem, 4096, 1, units, period, NULL, &l), TW_STATUS_OK);
    for (int round = 0; round < 20; round++) {
        pid_t pid = fork();
        if (pid < 0) {
            die("fork");
        }
        if (pid == 0) {
            const uint32_t cost[1] = {3};
            for (;;) {
                uint64_t ready = 0;
                tw_throttled why = {0, 0};
                if (tw_rate_limiter_acquire(l, cost, 1, 0, &ready, &why) == TW_STATUS_OK) {
                    tw_rate_limiter_refund(l, cost, 1);
                }
            }
        }
        usleep((useconds_t)(200 + 137 * round));
        kill(pid, SIGKILL);
        int status = 0;
        if (waitpid(pid, &status, 0) != pid || !WIFSIGNALED(status)) {
            die("the worker was not killed");
        }
        size_t n = 0;
        const tw_rate_limiter *again = NULL;
        CHECK_STATUS(tw_rate_limiter_attach(mem, 4096, &n, &again), TW_STATUS_OK);
        uint64_t in_use[1] = {0};
        CHECK_STATUS(tw_rate_limiter_in_use(again, in_use, 1), TW_STATUS_OK);
        /* Each word moves by one compare-and-swap: a kill leaves whole
         * takes counted, never more than the burst (50,000). */
        CHECK(in_use[0] <= 50000);
        uint64_t ready = 0;
        tw_throttled why = {0, 0};
        const uint32_t one[1] = {1};
        CHECK_STATUS(tw_rate_limiter_acquire(again, one, 1, 1000000000ull, &ready, &why), TW_STATUS_OK);
    }
    munmap(mem, 4096);
}

int main(void) {
    bad_calls();
    one_budget_across_processes();
    killed_workers_leave_a_sound_region();
    if (failures != 0) {
        fprintf(stderr, "test_rate_limiter: %d checks failed\n", failures);
        return 1;
    }
    printf("test_rate_limiter: ok\n");
    return 0;
}
