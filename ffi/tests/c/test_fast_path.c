/*
 * The header's inline fast path (tw_breaker_try_acquire_fast,
 * tw_breaker_record_fast and their _at forms) against the library's
 * out-of-line functions.
 *
 * - Differential: for many configs and state words (real ones and
 *   garbage), on heap breakers and on breakers in a shared region, the
 *   inline call gives what the out-of-line call gives on a twin breaker:
 *   the same status, ticket, rejection, transition, state word and
 *   counters.
 * - The inline path decides alone where it should (no library call on a
 *   healthy breaker that does not count successes), and a handle whose
 *   layout stamp is not this header's always goes to the library, with the
 *   library's results: a program built against one header and run with a
 *   library of another hot-line layout stays correct.
 *
 * Linked with -Wl,--wrap for the out-of-line functions (ffi/tests/c_api.rs)
 * so that calls from this file into the library are counted.
 */
#include "check.h"
#include "tripwire.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Calls from this file to each out-of-line function the inline path may take. */
static unsigned library_calls = 0;

tw_status __real_tw_breaker_try_acquire(const tw_breaker *b, tw_ticket *t, tw_rejection *r);
tw_status __real_tw_breaker_try_acquire_at(const tw_breaker *b, uint64_t now, tw_ticket *t,
                                           tw_rejection *r);
tw_status __real_tw_breaker_record(const tw_breaker *b, tw_ticket t, uint32_t o, tw_transition *tr);
tw_status __real_tw_breaker_record_at(const tw_breaker *b, uint64_t now, tw_ticket t, uint32_t o,
                                      tw_transition *tr);
bool __real_tw_breaker_record_healthy_success(const tw_breaker *b, uint32_t generation);
tw_status __wrap_tw_breaker_try_acquire(const tw_breaker *b, tw_ticket *t, tw_rejection *r);
tw_status __wrap_tw_breaker_try_acquire_at(const tw_breaker *b, uint64_t now, tw_ticket *t,
                                           tw_rejection *r);
tw_status __wrap_tw_breaker_record(const tw_breaker *b, tw_ticket t, uint32_t o, tw_transition *tr);
tw_status __wrap_tw_breaker_record_at(const tw_breaker *b, uint64_t now, tw_ticket t, uint32_t o,
                                      tw_transition *tr);
bool __wrap_tw_breaker_record_healthy_success(const tw_breaker *b, uint32_t generation);

tw_status __wrap_tw_breaker_try_acquire(const tw_breaker *b, tw_ticket *t, tw_rejection *r) {
    library_calls++;
    return __real_tw_breaker_try_acquire(b, t, r);
}
tw_status __wrap_tw_breaker_try_acquire_at(const tw_breaker *b, uint64_t now, tw_ticket *t,
                                           tw_rejection *r) {
    library_calls++;
    return __real_tw_breaker_try_acquire_at(b, now, t, r);
}
tw_status __wrap_tw_breaker_record(const tw_breaker *b, tw_ticket t, uint32_t o, tw_transition *tr) {
    library_calls++;
    return __real_tw_breaker_record(b, t, o, tr);
}
tw_status __wrap_tw_breaker_record_at(const tw_breaker *b, uint64_t now, tw_ticket t, uint32_t o,
                                      tw_transition *tr) {
    library_calls++;
    return __real_tw_breaker_record_at(b, now, t, o, tr);
}
bool __wrap_tw_breaker_record_healthy_success(const tw_breaker *b, uint32_t generation) {
    library_calls++;
    return __real_tw_breaker_record_healthy_success(b, generation);
}

/* xorshift64*: garbage that is the same on every run. */
static uint64_t rng = 0x9E3779B97F4A7C15u;
static uint64_t next_random(void) {
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return rng * 0x2545F4914F6CDD1Du;
}

/* The hot line of a breaker, writable: the tests damage it on purpose. */
static tw_breaker_hot *hot_of(const tw_breaker *b) { return (tw_breaker_hot *)(uintptr_t)b; }

static void set_word(const tw_breaker *b, uint64_t word) {
    __atomic_store_n(&hot_of(b)->word, word, __ATOMIC_SEQ_CST);
}
static uint64_t word_of(const tw_breaker *b) { return __atomic_load_n(&hot_of(b)->word, __ATOMIC_SEQ_CST); }

/* A breaker on the heap, or in a shared region this file allocates. */
typedef struct {
    const tw_breaker *b;
    tw_breaker *owned;
    void *region;
} twin;

static twin make(const tw_breaker_config *cfg, int shared) {
    twin t = {NULL, NULL, NULL};
    if (shared) {
        size_t size = 0, align = 0;
        CHECK_STATUS(tw_breaker_layout(&size, &align), TW_STATUS_OK);
        t.region = aligned_alloc(align, (size + align - 1) / align * align);
        CHECK(t.region != NULL);
        memset(t.region, 0, size);
        CHECK_STATUS(tw_breaker_init_in(t.region, size, cfg, &t.b), TW_STATUS_OK);
    } else {
        CHECK_STATUS(tw_breaker_new(cfg, &t.owned), TW_STATUS_OK);
        t.b = t.owned;
    }
    return t;
}

static void drop(twin t) {
    tw_breaker_free(t.owned);
    free(t.region);
}

static tw_snapshot snapshot(const tw_breaker *b) {
    tw_snapshot s;
    memset(&s, 0, sizeof s);
    CHECK_STATUS(tw_breaker_snapshot(b, &s), TW_STATUS_OK);
    return s;
}

static int same_snapshot(tw_snapshot a, tw_snapshot b) {
    return a.state == b.state && a.generation == b.generation && a.successes == b.successes &&
           a.failures == b.failures && a.ignored == b.ignored && a.rejected == b.rejected &&
           a.slow == b.slow && a.transitions == b.transitions;
}

static unsigned cases = 0, mismatches = 0;

static void report(const char *what, uint64_t word, unsigned config) {
    if (mismatches++ < 10) {
        fprintf(stderr, "fast path differs from the library: %s, word 0x%016llx, config %u\n", what,
                (unsigned long long)word, config);
    }
    failures++;
}

#define NOW 1000000000u

/* Admission from `word`: inline on one twin, out of line on the other. */
static void compare_acquire(const tw_breaker_config *cfg, unsigned config, int shared, uint64_t word,
                            int at) {
    twin fast = make(cfg, shared), lib = make(cfg, shared);
    set_word(fast.b, word);
    set_word(lib.b, word);
    tw_ticket t1, t2;
    tw_rejection r1, r2;
    memset(&t1, 0xAB, sizeof t1);
    memset(&t2, 0xAB, sizeof t2);
    memset(&r1, 0xCD, sizeof r1);
    memset(&r2, 0xCD, sizeof r2);
    tw_status s1 = at ? tw_breaker_try_acquire_at_fast(fast.b, NOW, &t1, &r1)
                      : tw_breaker_try_acquire_fast(fast.b, &t1, &r1);
    tw_status s2 = at ? tw_breaker_try_acquire_at(lib.b, NOW, &t2, &r2)
                      : tw_breaker_try_acquire(lib.b, &t2, &r2);
    cases++;
    if (s1 != s2) {
        report("try_acquire status", word, config);
    } else if (s1 == TW_STATUS_OK && (t1.started_at != t2.started_at || t1.generation != t2.generation ||
                                      t1.flags != t2.flags)) {
        /* Timed breakers without _at read CLOCK_MONOTONIC: only _at is compared on start times. */
        if (at || t1.generation != t2.generation || t1.flags != t2.flags) {
            report("try_acquire ticket", word, config);
        }
    } else if (s1 == TW_STATUS_REJECTED && at &&
               (r1.state != r2.state || r1.retry_after_ns != r2.retry_after_ns)) {
        report("try_acquire rejection", word, config);
    }
    if (word_of(fast.b) != word_of(lib.b)) {
        report("word after try_acquire", word, config);
    }
    if (!same_snapshot(snapshot(fast.b), snapshot(lib.b))) {
        report("counters after try_acquire", word, config);
    }
    drop(fast);
    drop(lib);
}

/* Recording `outcome` with `ticket` from `word`, both ways. */
static void compare_record(const tw_breaker_config *cfg, unsigned config, int shared, uint64_t word,
                           tw_ticket ticket, uint32_t outcome, int with_transition) {
    twin fast = make(cfg, shared), lib = make(cfg, shared);
    set_word(fast.b, word);
    set_word(lib.b, word);
    tw_transition x1, x2;
    memset(&x1, 0xEF, sizeof x1);
    memset(&x2, 0xEF, sizeof x2);
    tw_transition *p1 = with_transition ? &x1 : NULL, *p2 = with_transition ? &x2 : NULL;
    tw_status s1 = tw_breaker_record_at_fast(fast.b, NOW, ticket, outcome, p1);
    tw_status s2 = tw_breaker_record_at(lib.b, NOW, ticket, outcome, p2);
    cases++;
    if (s1 != s2) {
        report("record status", word, config);
    } else if (s1 == TW_STATUS_OK && with_transition &&
               (x1.changed != x2.changed || x1.from != x2.from || x1.to != x2.to ||
                x1.generation != x2.generation)) {
        report("record transition", word, config);
    }
    if (word_of(fast.b) != word_of(lib.b)) {
        report("word after record", word, config);
    }
    if (!same_snapshot(snapshot(fast.b), snapshot(lib.b))) {
        report("counters after record", word, config);
    }
    /* The plain form, without _at, once per case as well. */
    set_word(fast.b, word);
    set_word(lib.b, word);
    s1 = tw_breaker_record_fast(fast.b, ticket, outcome, NULL);
    s2 = tw_breaker_record(lib.b, ticket, outcome, NULL);
    if (s1 != s2 || word_of(fast.b) != word_of(lib.b) ||
        !same_snapshot(snapshot(fast.b), snapshot(lib.b))) {
        report("record without _at", word, config);
    }
    drop(fast);
    drop(lib);
}

#define CONFIGS 7

/* Config `i`: every combination of the flags the fast path tests. */
static tw_breaker_config config_of(unsigned i) {
    tw_breaker_config cfg;
    tw_breaker_config_default(&cfg);
    switch (i) {
    case 0: /* the default: consecutive failures, successes counted */
        break;
    case 1: /* successes not counted: the fully inline case */
        cfg.count_successes = 0;
        break;
    case 2: /* timed calls */
        cfg.slow_call_ns = 1000;
        cfg.slow_rate = 0.5;
        break;
    case 3: /* a time-based rolling window */
        cfg.failure_rate = 0.5;
        cfg.count_successes = 0;
        break;
    case 4: /* a count-based rolling window */
        cfg.failure_rate = 0.5;
        cfg.window_kind = TW_WINDOW_KIND_COUNT;
        cfg.count_window = 20;
        break;
    case 5: /* several probes, uncounted */
        cfg.half_open_max = 3;
        cfg.half_open_successes = 2;
        cfg.count_successes = 0;
        break;
    default: /* timed without a rate: slow calls only counted */
        cfg.slow_call_ns = 1000;
        cfg.count_successes = 0;
        break;
    }
    tw_breaker_config check = cfg;
    CHECK_STATUS(tw_breaker_config_validate(&check), TW_STATUS_OK);
    return cfg;
}

/* Real words: what a breaker of this config goes through. */
static size_t real_words(const tw_breaker_config *cfg, uint64_t *out, size_t cap) {
    size_t n = 0;
    twin t = make(cfg, 0);
    tw_ticket ticket;
    for (int round = 0; round < 12 && n < cap; round++) {
        out[n++] = word_of(t.b);
        if (tw_breaker_try_acquire_at(t.b, NOW + (uint64_t)round * 40000000000u, &ticket, NULL) ==
            TW_STATUS_OK) {
            out[n++] = word_of(t.b);
            uint32_t outcome = round % 3 == 2 ? (uint32_t)TW_OUTCOME_SUCCESS : (uint32_t)TW_OUTCOME_FAILURE;
            tw_breaker_record_at(t.b, NOW, ticket, outcome, NULL);
        }
    }
    tw_breaker_force_open(t.b, NULL);
    out[n++] = word_of(t.b);
    tw_breaker_disable(t.b, NULL);
    out[n++] = word_of(t.b);
    tw_breaker_reset(t.b, NULL);
    out[n++] = word_of(t.b);
    drop(t);
    return n;
}

static void differential(void) {
    for (unsigned c = 0; c < CONFIGS; c++) {
        tw_breaker_config cfg = config_of(c);
        uint64_t words[64];
        size_t n = real_words(&cfg, words, 48);
        /* Garbage: every kind, random counts and generations, and the extremes. */
        words[n++] = 0;
        words[n++] = UINT64_MAX;
        words[n++] = (uint64_t)UINT32_MAX << 32;
        while (n < 64) {
            uint64_t w = next_random();
            /* Half of them with the low bits clear: more Closed kinds. */
            words[n] = n % 2 ? w & ~(uint64_t)0xFFFF : w;
            n++;
        }
        for (size_t i = 0; i < n; i++) {
            uint64_t w = words[i];
            uint32_t generation = (uint32_t)(w >> 32);
            int shared = (int)(i % 2);
            compare_acquire(&cfg, c, shared, w, 1);
            compare_acquire(&cfg, c, shared, w, 0);
            tw_ticket tickets[4] = {
                {0, generation, 0},
                {0, generation - 1u, 0},
                {next_random(), (uint32_t)next_random(), (uint32_t)next_random()},
                {NOW, generation, 1u | (1u << 8)},
            };
            const uint32_t outcomes[] = {TW_OUTCOME_SUCCESS, TW_OUTCOME_FAILURE, TW_OUTCOME_IGNORED, 3u,
                                         UINT32_MAX};
            for (size_t k = 0; k < 4; k++) {
                for (size_t o = 0; o < sizeof outcomes / sizeof outcomes[0]; o++) {
                    compare_record(&cfg, c, shared, w, tickets[k], outcomes[o], (int)((k + o) % 2));
                }
            }
        }
    }
    printf("fast path: %u cases compared with the library\n", cases);
}

/* Where the inline path decides alone, it calls nothing. */
static void inline_where_it_should(void) {
    tw_breaker_config cfg = config_of(1);
    for (int shared = 0; shared < 2; shared++) {
        twin t = make(&cfg, shared);
        CHECK(hot_of(t.b)->stamp == TW_HOT_STAMP);
        tw_ticket ticket;
        tw_transition x;
        library_calls = 0;
        CHECK_STATUS(tw_breaker_try_acquire_fast(t.b, &ticket, NULL), TW_STATUS_OK);
        CHECK_STATUS(tw_breaker_record_fast(t.b, ticket, TW_OUTCOME_SUCCESS, &x), TW_STATUS_OK);
        CHECK_STATUS(tw_breaker_try_acquire_at_fast(t.b, NOW, &ticket, NULL), TW_STATUS_OK);
        CHECK_STATUS(tw_breaker_record_at_fast(t.b, NOW, ticket, TW_OUTCOME_SUCCESS, &x), TW_STATUS_OK);
        CHECK(library_calls == 0);
        CHECK(!x.changed && x.from == TW_STATE_CLOSED && x.generation == 0);
        /* A failure is the library's to record. */
        CHECK_STATUS(tw_breaker_record_fast(t.b, ticket, TW_OUTCOME_FAILURE, NULL), TW_STATUS_OK);
        CHECK(library_calls == 1);
        drop(t);
    }
    /* Counting successes takes one call: the library's own fast path. */
    tw_breaker_config counted = config_of(0);
    twin t = make(&counted, 0);
    tw_ticket ticket;
    library_calls = 0;
    CHECK_STATUS(tw_breaker_try_acquire_fast(t.b, &ticket, NULL), TW_STATUS_OK);
    CHECK_STATUS(tw_breaker_record_fast(t.b, ticket, TW_OUTCOME_SUCCESS, NULL), TW_STATUS_OK);
    CHECK(library_calls == 1);
    CHECK(snapshot(t.b).successes == 1);
    drop(t);
}

/*
 * A handle stamped with another layout: what a program built with this
 * header sees when it runs with a library of another hot-line layout. The
 * flags copy is damaged as well, the way another layout might fill those
 * bytes: an inline path that ignored the stamp would time no call (an
 * admission started at 0) and count no success.
 */
static void other_layout_goes_to_the_library(void) {
    for (int shared = 0; shared < 2; shared++) {
        tw_breaker_config timed = config_of(6), counted = config_of(0);
        twin a = make(&timed, shared), b = make(&counted, shared);
        hot_of(a.b)->stamp = TW_HOT_STAMP + 1;
        hot_of(a.b)->flags = 0;
        hot_of(b.b)->stamp = TW_HOT_STAMP ^ 0xFFFF0000u;
        hot_of(b.b)->flags = 0;
        tw_ticket ticket;
        tw_transition x;
        library_calls = 0;
        CHECK_STATUS(tw_breaker_try_acquire_at_fast(a.b, NOW, &ticket, NULL), TW_STATUS_OK);
        CHECK(library_calls == 1);
        CHECK(ticket.started_at == NOW); /* the library timed it */
        CHECK_STATUS(tw_breaker_record_at_fast(a.b, NOW + 5000, ticket, TW_OUTCOME_SUCCESS, &x), TW_STATUS_OK);
        CHECK(library_calls == 2);
        CHECK(snapshot(a.b).slow == 1);
        CHECK_STATUS(tw_breaker_try_acquire_fast(b.b, &ticket, NULL), TW_STATUS_OK);
        CHECK_STATUS(tw_breaker_record_fast(b.b, ticket, TW_OUTCOME_SUCCESS, &x), TW_STATUS_OK);
        CHECK(library_calls == 4);
        CHECK(snapshot(b.b).successes == 1); /* the library counted it */
        CHECK(!x.changed && x.to == TW_STATE_CLOSED);
        drop(a);
        drop(b);
    }
}

/* NULL handles and tickets are the library's to report. */
static void null_arguments_go_to_the_library(void) {
    tw_ticket ticket = {0, 0, 0};
    library_calls = 0;
    CHECK_STATUS(tw_breaker_try_acquire_fast(NULL, &ticket, NULL), TW_STATUS_NULL_ARGUMENT);
    CHECK_STATUS(tw_breaker_record_fast(NULL, ticket, TW_OUTCOME_SUCCESS, NULL), TW_STATUS_NULL_ARGUMENT);
    tw_breaker_config cfg = config_of(1);
    twin t = make(&cfg, 0);
    CHECK_STATUS(tw_breaker_try_acquire_at_fast(t.b, NOW, NULL, NULL), TW_STATUS_NULL_ARGUMENT);
    CHECK(library_calls == 3);
    CHECK(!tw_breaker_record_healthy_success(NULL, 0));
    drop(t);
}

int main(void) {
    differential();
    inline_where_it_should();
    other_layout_goes_to_the_library();
    null_arguments_go_to_the_library();
    if (failures != 0) {
        fprintf(stderr, "%d check(s) failed\n", failures);
        return 1;
    }
    printf("test_fast_path: all checks passed\n");
    return 0;
}
