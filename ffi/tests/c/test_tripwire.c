/*
 * The C API from C: every function, every status code, NULL arguments,
 * bad configs and bad regions, and the error messages.
 * Built with -std=c11 -Wall -Wextra -Werror, plainly and with
 * -fsanitize=address,undefined, by ffi/tests/c_api.rs.
 */
#include "check.h"
#include "tripwire.h"

#include <stdalign.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static tw_breaker_config config_with_threshold(uint32_t threshold, uint64_t open_timeout_ns) {
    tw_breaker_config c;
    CHECK_STATUS(tw_breaker_config_default(&c), TW_STATUS_OK);
    c.failure_threshold = threshold;
    c.open_timeout_ns = open_timeout_ns;
    return c;
}

static void test_strings(void) {
    CHECK(strcmp(tw_last_error_message(), "no error") == 0);
    /* The header's version macros name the library it goes with:
     * tw_version() is "MAJOR.MINOR.PATCH", then nothing or a pre-release
     * suffix ("-rc.1"). */
    char header_version[48];
    int len = snprintf(header_version, sizeof header_version, "%d.%d.%d", TW_VERSION_MAJOR,
                       TW_VERSION_MINOR, TW_VERSION_PATCH);
    CHECK(len > 0 && (size_t)len < sizeof header_version);
    CHECK(strncmp(tw_version(), header_version, (size_t)len) == 0);
    CHECK(tw_version()[len] == '\0' || tw_version()[len] == '-');
    CHECK(strcmp(tw_status_name(TW_STATUS_OK), "TW_STATUS_OK") == 0);
    CHECK(strcmp(tw_status_name(TW_STATUS_PANIC), "TW_STATUS_PANIC") == 0);
    CHECK(strcmp(tw_status_name(1000), "TW_STATUS_UNKNOWN") == 0);
    /* The values are part of the ABI. */
    CHECK(TW_STATUS_OK == 0 && TW_STATUS_REJECTED == 1 && TW_STATUS_NULL_ARGUMENT == 2);
    CHECK(TW_STATUS_INVALID_ARGUMENT == 3 && TW_STATUS_INVALID_CONFIG == 4);
    CHECK(TW_STATUS_REGION_MISALIGNED == 5 && TW_STATUS_REGION_TOO_SMALL == 6);
    CHECK(TW_STATUS_REGION_UNINITIALISED == 7 && TW_STATUS_REGION_INITIALISING == 8);
    CHECK(TW_STATUS_REGION_ALREADY_INITIALISED == 9 && TW_STATUS_REGION_INVALID == 10);
    CHECK(TW_STATUS_REGION_VERSION_MISMATCH == 11 && TW_STATUS_REGION_CORRUPT == 12);
    CHECK(TW_STATUS_REGION_CONFIG_MISMATCH == 13 && TW_STATUS_PANIC == 14);
    CHECK(TW_STATUS_INVALID_STRUCT_SIZE == 15);
    CHECK(strcmp(tw_status_name(TW_STATUS_INVALID_STRUCT_SIZE), "TW_STATUS_INVALID_STRUCT_SIZE") == 0);
    CHECK(sizeof(tw_ticket) == 16);
    /* This header's layouts: _default() sets struct_size to them. */
    CHECK(sizeof(tw_breaker_config) == TW_BREAKER_CONFIG_SIZE_V4);
    tw_breaker_config c;
    CHECK_STATUS(tw_breaker_config_default(&c), TW_STATUS_OK);
    CHECK(c.struct_size == sizeof c);
    tw_backoff_config bc;
    CHECK_STATUS(tw_backoff_config_default(&bc), TW_STATUS_OK);
    CHECK(bc.struct_size == sizeof bc);
    tw_retry_budget_config rc;
    CHECK_STATUS(tw_retry_budget_config_default(&rc), TW_STATUS_OK);
    CHECK(rc.struct_size == sizeof rc && rc.reserved == 0);
    /* A struct zeroed by hand has no layout. */
    memset(&c, 0, sizeof c);
    CHECK_STATUS(tw_breaker_config_validate(&c), TW_STATUS_INVALID_STRUCT_SIZE);
    CHECK(strstr(tw_last_error_message(), "tw_breaker_config.struct_size = 0") != NULL);
    memset(&bc, 0, sizeof bc);
    tw_backoff *bo = NULL;
    CHECK_STATUS(tw_backoff_new(&bc, &bo), TW_STATUS_INVALID_STRUCT_SIZE);
    CHECK(strstr(tw_last_error_message(), "tw_backoff_config.struct_size = 0") != NULL);
    CHECK(bo == NULL);
}

static void test_config(void) {
    tw_breaker_config c;
    CHECK_STATUS(tw_breaker_config_default(&c), TW_STATUS_OK);
    CHECK(c.failure_threshold == 5 && c.half_open_max == 1 && c.half_open_successes == 1);
    CHECK(c.open_timeout_ns == 30000000000ull && c.open_timeout_max_ns == 0);
    CHECK(c.open_timeout_growth == 1.0 && c.open_timeout_jitter == 0.0 && c.count_successes == 1);
    CHECK(c.window_buckets == 10 && c.window_bucket_ns == 1000000000ull && c.min_calls == 10);
    CHECK(c.failure_rate == 0.0 && c.slow_call_ns == 0 && c.slow_rate == 0.0);
    CHECK_STATUS(tw_breaker_config_validate(&c), TW_STATUS_OK);

    tw_breaker_config w = c;
    w.window_buckets = 0;
    CHECK_STATUS(tw_breaker_config_validate(&w), TW_STATUS_INVALID_CONFIG);
    CHECK_MESSAGE("tw_breaker_config_validate: invalid breaker config: window_buckets = 0, "
                  "expected 1 to 32");

    /* The last 100 calls instead of time buckets. */
    CHECK(c.window_kind == TW_WINDOW_KIND_TIME && c.count_window == 0);
    tw_breaker_config n = c;
    n.failure_rate = 0.5;
    n.window_kind = TW_WINDOW_KIND_COUNT;
    n.count_window = 100;
    CHECK_STATUS(tw_breaker_config_validate(&n), TW_STATUS_OK);
    n.count_window = 0;
    CHECK_STATUS(tw_breaker_config_validate(&n), TW_STATUS_INVALID_CONFIG);
    CHECK_MESSAGE("tw_breaker_config_validate: invalid breaker config: count_window = 0, "
                  "expected 1 to 1000");

    c.half_open_max = 0;
    CHECK_STATUS(tw_breaker_config_validate(&c), TW_STATUS_INVALID_CONFIG);
    CHECK_MESSAGE("tw_breaker_config_validate: invalid breaker config: half_open_max = 0, "
                  "expected 1 to 10");

    tw_breaker *b = NULL;
    CHECK_STATUS(tw_breaker_new(&c, &b), TW_STATUS_INVALID_CONFIG);
    CHECK(b == NULL);
    CHECK_MESSAGE("tw_breaker_new: invalid breaker config: half_open_max = 0, expected 1 to 10");

    c = config_with_threshold(5, 10000000000ull);
    c.open_timeout_max_ns = 5000000000ull;
    CHECK_STATUS(tw_breaker_new(&c, &b), TW_STATUS_INVALID_CONFIG);
    CHECK_MESSAGE("tw_breaker_new: invalid breaker config: open_timeout_max_ns = 5000000000, "
                  "expected at least open_timeout_ns (10000000000)");

    c = config_with_threshold(5, 1000);
    c.open_timeout_jitter = 1.0;
    CHECK_STATUS(tw_breaker_config_validate(&c), TW_STATUS_INVALID_CONFIG);
    CHECK_MESSAGE("tw_breaker_config_validate: invalid breaker config: open_timeout_jitter = 1, "
                  "expected at least 0 and below 1");

    c = config_with_threshold(5, 1000);
    c.count_successes = 7;
    CHECK_STATUS(tw_breaker_config_validate(&c), TW_STATUS_INVALID_CONFIG);
    CHECK_MESSAGE("tw_breaker_config_validate: invalid breaker config: count_successes = 7, "
                  "expected 0 to 1");
}

static void test_nulls(void) {
    tw_breaker_config c = config_with_threshold(5, 1000);
    tw_breaker *b = NULL;
    CHECK_STATUS(tw_breaker_new(&c, &b), TW_STATUS_OK);
    tw_ticket t = {0, 0, 0};
    tw_transition tr;
    const tw_breaker *shared = NULL;
    size_t size = 0;
    alignas(128) unsigned char mem[256];

    CHECK_STATUS(tw_breaker_config_default(NULL), TW_STATUS_NULL_ARGUMENT);
    CHECK_MESSAGE("tw_breaker_config_init: `out` is NULL");
    CHECK_STATUS(tw_breaker_config_validate(NULL), TW_STATUS_NULL_ARGUMENT);
    CHECK_STATUS(tw_breaker_new(NULL, &b), TW_STATUS_NULL_ARGUMENT);
    CHECK_MESSAGE("tw_breaker_new: `config` is NULL");
    CHECK_STATUS(tw_breaker_new(&c, NULL), TW_STATUS_NULL_ARGUMENT);
    CHECK_STATUS(tw_breaker_get_config(NULL, &c), TW_STATUS_NULL_ARGUMENT);
    CHECK_STATUS(tw_breaker_get_config(b, NULL), TW_STATUS_NULL_ARGUMENT);
    CHECK_STATUS(tw_breaker_try_acquire(NULL, &t, NULL), TW_STATUS_NULL_ARGUMENT);
    CHECK_MESSAGE("tw_breaker_try_acquire: `breaker` is NULL");
    CHECK_STATUS(tw_breaker_try_acquire(b, NULL, NULL), TW_STATUS_NULL_ARGUMENT);
    CHECK_MESSAGE("tw_breaker_try_acquire: `ticket` is NULL");
    CHECK_STATUS(tw_breaker_try_acquire_at(NULL, 0, &t, NULL), TW_STATUS_NULL_ARGUMENT);
    CHECK_STATUS(tw_breaker_try_acquire_at(b, 0, NULL, NULL), TW_STATUS_NULL_ARGUMENT);
    CHECK_STATUS(tw_breaker_record(NULL, t, TW_OUTCOME_SUCCESS, &tr), TW_STATUS_NULL_ARGUMENT);
    CHECK_STATUS(tw_breaker_record_at(NULL, 0, t, TW_OUTCOME_SUCCESS, &tr),
                 TW_STATUS_NULL_ARGUMENT);
    CHECK(!tw_ticket_is_probe(NULL));
    CHECK_STATUS(tw_ticket_transition(NULL, &tr), TW_STATUS_NULL_ARGUMENT);
    CHECK_STATUS(tw_ticket_transition(&t, NULL), TW_STATUS_NULL_ARGUMENT);
    CHECK_STATUS(tw_breaker_state(NULL, NULL), TW_STATUS_NULL_ARGUMENT);
    CHECK_STATUS(tw_breaker_state(b, NULL), TW_STATUS_NULL_ARGUMENT);
    CHECK_STATUS(tw_breaker_snapshot(NULL, NULL), TW_STATUS_NULL_ARGUMENT);
    CHECK_STATUS(tw_breaker_snapshot(b, NULL), TW_STATUS_NULL_ARGUMENT);
    CHECK_STATUS(tw_breaker_force_open(NULL, NULL), TW_STATUS_NULL_ARGUMENT);
    CHECK_STATUS(tw_breaker_disable(NULL, NULL), TW_STATUS_NULL_ARGUMENT);
    CHECK_STATUS(tw_breaker_reset(NULL, NULL), TW_STATUS_NULL_ARGUMENT);
    CHECK_MESSAGE("tw_breaker_reset: `breaker` is NULL");
    CHECK_STATUS(tw_breaker_layout(NULL, &size), TW_STATUS_NULL_ARGUMENT);
    CHECK_STATUS(tw_breaker_layout(&size, NULL), TW_STATUS_NULL_ARGUMENT);
    CHECK_STATUS(tw_breaker_init_in(NULL, sizeof mem, &c, &shared), TW_STATUS_NULL_ARGUMENT);
    CHECK_MESSAGE("tw_breaker_init_in: `mem` is NULL");
    CHECK_STATUS(tw_breaker_init_in(mem, sizeof mem, NULL, &shared), TW_STATUS_NULL_ARGUMENT);
    CHECK_STATUS(tw_breaker_init_in(mem, sizeof mem, &c, NULL), TW_STATUS_NULL_ARGUMENT);
    CHECK_STATUS(tw_breaker_attach(NULL, sizeof mem, &shared), TW_STATUS_NULL_ARGUMENT);
    CHECK_STATUS(tw_breaker_attach(mem, sizeof mem, NULL), TW_STATUS_NULL_ARGUMENT);
    CHECK_STATUS(tw_breaker_open_in(NULL, sizeof mem, &c, &shared), TW_STATUS_NULL_ARGUMENT);
    CHECK_STATUS(tw_breaker_open_in(mem, sizeof mem, NULL, &shared), TW_STATUS_NULL_ARGUMENT);
    CHECK_STATUS(tw_breaker_open_in(mem, sizeof mem, &c, NULL), TW_STATUS_NULL_ARGUMENT);
    CHECK(shared == NULL);
    tw_breaker_free(NULL);
    tw_breaker_free(b);
}

static void test_breaker_lifecycle(void) {
    tw_breaker_config c = config_with_threshold(2, 1000);
    c.half_open_max = 2;
    c.half_open_successes = 2;
    tw_breaker *b = NULL;
    CHECK_STATUS(tw_breaker_new(&c, &b), TW_STATUS_OK);
    CHECK(b != NULL);

    tw_breaker_config got;
    CHECK_STATUS(tw_breaker_get_config(b, &got), TW_STATUS_OK);
    CHECK(got.open_timeout_max_ns == 1000 && got.half_open_max == 2);

    tw_ticket t;
    tw_rejection r;
    tw_transition tr;
    tw_state s;

    /* Two failures trip it; the second reports the transition. */
    CHECK_STATUS(tw_breaker_try_acquire_at(b, 100, &t, &r), TW_STATUS_OK);
    CHECK(!tw_ticket_is_probe(&t));
    CHECK_STATUS(tw_breaker_record_at(b, 100, t, TW_OUTCOME_FAILURE, &tr), TW_STATUS_OK);
    CHECK(!tr.changed && tr.to == TW_STATE_CLOSED);
    CHECK_STATUS(tw_breaker_try_acquire_at(b, 100, &t, &r), TW_STATUS_OK);
    CHECK_STATUS(tw_breaker_record_at(b, 100, t, TW_OUTCOME_FAILURE, &tr), TW_STATUS_OK);
    CHECK(tr.changed && tr.from == TW_STATE_CLOSED && tr.to == TW_STATE_OPEN && tr.generation == 1);
    CHECK_STATUS(tw_breaker_state(b, &s), TW_STATUS_OK);
    CHECK(s == TW_STATE_OPEN);

    /* Rejected with the time left; no message is set by a rejection. */
    CHECK_STATUS(tw_breaker_reset(NULL, NULL), TW_STATUS_NULL_ARGUMENT);
    CHECK_STATUS(tw_breaker_try_acquire_at(b, 400, &t, &r), TW_STATUS_REJECTED);
    CHECK(r.state == TW_STATE_OPEN && r.retry_after_ns == 700);
    CHECK_MESSAGE("tw_breaker_reset: `breaker` is NULL");
    CHECK_STATUS(tw_breaker_try_acquire_at(b, 400, &t, NULL), TW_STATUS_REJECTED);

    /* After the cool-down: two probes, a third is refused, two successes close it. */
    tw_ticket p1, p2;
    CHECK_STATUS(tw_breaker_try_acquire_at(b, 1100, &p1, &r), TW_STATUS_OK);
    CHECK(tw_ticket_is_probe(&p1) && p1.generation == 2);
    CHECK_STATUS(tw_ticket_transition(&p1, &tr), TW_STATUS_OK);
    CHECK(tr.changed && tr.from == TW_STATE_OPEN && tr.to == TW_STATE_HALF_OPEN);
    CHECK_STATUS(tw_breaker_try_acquire_at(b, 1100, &p2, &r), TW_STATUS_OK);
    CHECK_STATUS(tw_ticket_transition(&p2, &tr), TW_STATUS_OK);
    CHECK(!tr.changed);
    CHECK_STATUS(tw_breaker_try_acquire_at(b, 1100, &t, &r), TW_STATUS_REJECTED);
    CHECK(r.state == TW_STATE_HALF_OPEN);
    CHECK_STATUS(tw_breaker_record_at(b, 1200, p1, TW_OUTCOME_SUCCESS, &tr), TW_STATUS_OK);
    CHECK(!tr.changed && tr.to == TW_STATE_HALF_OPEN);
    CHECK_STATUS(tw_breaker_record_at(b, 1200, p2, TW_OUTCOME_SUCCESS, &tr), TW_STATUS_OK);
    CHECK(tr.changed && tr.to == TW_STATE_CLOSED && tr.generation == 3);

    /* A stale ticket (generation 2) changes nothing. */
    CHECK_STATUS(tw_breaker_record_at(b, 1300, p1, TW_OUTCOME_FAILURE, &tr), TW_STATUS_OK);
    CHECK_STATUS(tw_breaker_record_at(b, 1300, p1, TW_OUTCOME_FAILURE, &tr), TW_STATUS_OK);
    CHECK(!tr.changed && tr.to == TW_STATE_CLOSED);

    /* Unknown outcomes are refused and not recorded. */
    tr.generation = 77;
    CHECK_STATUS(tw_breaker_record(b, t, 3, &tr), TW_STATUS_INVALID_ARGUMENT);
    CHECK_MESSAGE("tw_breaker_record: outcome = 3, expected a tw_outcome (0 to 2)");
    CHECK(tr.generation == 77);
    CHECK_STATUS(tw_breaker_record_at(b, 0, t, 99, NULL), TW_STATUS_INVALID_ARGUMENT);

    /* The monotonic-clock functions on a fresh breaker. */
    tw_breaker *m = NULL;
    tw_breaker_config mc = config_with_threshold(1, 1000000000ull);
    CHECK_STATUS(tw_breaker_new(&mc, &m), TW_STATUS_OK);
    CHECK_STATUS(tw_breaker_try_acquire(m, &t, &r), TW_STATUS_OK);
    CHECK_STATUS(tw_breaker_record(m, t, TW_OUTCOME_FAILURE, &tr), TW_STATUS_OK);
    CHECK(tr.changed && tr.to == TW_STATE_OPEN);
    CHECK_STATUS(tw_breaker_try_acquire(m, &t, &r), TW_STATUS_REJECTED);
    CHECK(r.retry_after_ns > 0 && r.retry_after_ns <= 1000000000ull);
    tw_breaker_free(m);

    /* Manual modes. */
    CHECK_STATUS(tw_breaker_force_open(b, &tr), TW_STATUS_OK);
    CHECK(tr.changed && tr.from == TW_STATE_CLOSED && tr.to == TW_STATE_FORCED_OPEN);
    CHECK_STATUS(tw_breaker_try_acquire(b, &t, &r), TW_STATUS_REJECTED);
    CHECK(r.state == TW_STATE_FORCED_OPEN && r.retry_after_ns == UINT64_MAX);
    CHECK_STATUS(tw_breaker_disable(b, NULL), TW_STATUS_OK);
    for (int i = 0; i < 5; i++) {
        CHECK_STATUS(tw_breaker_try_acquire_at(b, 2000, &t, NULL), TW_STATUS_OK);
        CHECK_STATUS(tw_breaker_record_at(b, 2000, t, TW_OUTCOME_FAILURE, NULL), TW_STATUS_OK);
    }
    CHECK_STATUS(tw_breaker_state(b, &s), TW_STATUS_OK);
    CHECK(s == TW_STATE_DISABLED);
    CHECK_STATUS(tw_breaker_reset(b, &tr), TW_STATUS_OK);
    CHECK(tr.changed && tr.from == TW_STATE_DISABLED && tr.to == TW_STATE_CLOSED);

    tw_snapshot snap;
    CHECK_STATUS(tw_breaker_snapshot(b, &snap), TW_STATUS_OK);
    CHECK(snap.state == TW_STATE_CLOSED && snap.generation == 6);
    CHECK(snap.successes == 2 && snap.failures == 9 && snap.ignored == 0);
    CHECK(snap.rejected == 4 && snap.slow == 0 && snap.transitions == 6);
    tw_breaker_free(b);
}

static void test_rolling_window(void) {
    tw_breaker_config c;
    CHECK_STATUS(tw_breaker_config_default(&c), TW_STATUS_OK);
    c.failure_threshold = 0; /* only the rate trips it */
    c.failure_rate = 0.5;
    c.min_calls = 4;
    c.window_buckets = 4;
    c.window_bucket_ns = 1000000000ull;
    tw_breaker *b = NULL;
    CHECK_STATUS(tw_breaker_new(&c, &b), TW_STATUS_OK);
    const uint32_t outcomes[4] = {TW_OUTCOME_SUCCESS, TW_OUTCOME_FAILURE, TW_OUTCOME_SUCCESS,
                                  TW_OUTCOME_FAILURE};
    tw_transition tr = {0};
    for (int i = 0; i < 4; i++) {
        tw_ticket t;
        CHECK_STATUS(tw_breaker_try_acquire_at(b, 1000 + (uint64_t)i, &t, NULL), TW_STATUS_OK);
        CHECK_STATUS(tw_breaker_record_at(b, 1000 + (uint64_t)i, t, outcomes[i], &tr), TW_STATUS_OK);
        CHECK(tr.changed == (i == 3));
    }
    CHECK(tr.to == TW_STATE_OPEN);
    tw_breaker_free(b);
}

static void test_shared_regions(void) {
    size_t size = 0, align = 0;
    CHECK_STATUS(tw_breaker_layout(&size, &align), TW_STATUS_OK);
    CHECK(size >= 1024 && align >= 8 && (align & (align - 1)) == 0);
    size_t rounded = (size + align - 1) / align * align;
    unsigned char *mem = aligned_alloc(align, rounded);
    CHECK(mem != NULL);
    memset(mem, 0, rounded);
    tw_breaker_config c = config_with_threshold(1, 1000);
    const tw_breaker *a = NULL, *b = NULL;

    CHECK_STATUS(tw_breaker_attach(mem, size, &a), TW_STATUS_REGION_UNINITIALISED);
    CHECK_STATUS(tw_breaker_init_in(mem + 8, size, &c, &a), TW_STATUS_REGION_MISALIGNED);
    CHECK_STATUS(tw_breaker_init_in(mem, size - 1, &c, &a), TW_STATUS_REGION_TOO_SMALL);
    CHECK(a == NULL);
    tw_breaker_config bad = c;
    bad.failure_threshold = 0;
    CHECK_STATUS(tw_breaker_init_in(mem, size, &bad, &a), TW_STATUS_INVALID_CONFIG);
    CHECK_STATUS(tw_breaker_open_in(mem, size, &bad, &a), TW_STATUS_INVALID_CONFIG);

    CHECK_STATUS(tw_breaker_init_in(mem, size, &c, &a), TW_STATUS_OK);
    CHECK_STATUS(tw_breaker_init_in(mem, size, &c, &b), TW_STATUS_REGION_ALREADY_INITIALISED);
    CHECK_STATUS(tw_breaker_attach(mem, size, &b), TW_STATUS_OK);
    CHECK_STATUS(tw_breaker_open_in(mem, size, &c, &b), TW_STATUS_OK);
    tw_breaker_config other = c;
    other.failure_threshold = 9;
    CHECK_STATUS(tw_breaker_open_in(mem, size, &other, &b), TW_STATUS_REGION_CONFIG_MISMATCH);

    tw_ticket t;
    tw_state s;
    CHECK_STATUS(tw_breaker_try_acquire_at(a, 5, &t, NULL), TW_STATUS_OK);
    CHECK_STATUS(tw_breaker_record_at(a, 5, t, TW_OUTCOME_FAILURE, NULL), TW_STATUS_OK);
    CHECK_STATUS(tw_breaker_state(b, &s), TW_STATUS_OK);
    CHECK(s == TW_STATE_OPEN);
    /* Freeing a shared handle does nothing: the breaker lives on. */
    tw_breaker_free((tw_breaker *)a);
    CHECK_STATUS(tw_breaker_state(b, &s), TW_STATUS_OK);
    CHECK(s == TW_STATE_OPEN);

    /* Another layout version, a corrupt header, a claimed region, garbage. */
    uint32_t version;
    memcpy(&version, mem + 8, 4);
    uint32_t other_version = version + 1;
    memcpy(mem + 8, &other_version, 4);
    CHECK_STATUS(tw_breaker_attach(mem, size, &b), TW_STATUS_REGION_VERSION_MISMATCH);
    memcpy(mem + 8, &version, 4);
    uint64_t recorded_size;
    memcpy(&recorded_size, mem + 16, 8);
    uint64_t wrong_size = recorded_size + 64;
    memcpy(mem + 16, &wrong_size, 8);
    CHECK_STATUS(tw_breaker_attach(mem, size, &b), TW_STATUS_REGION_CORRUPT);
    memcpy(mem + 16, &recorded_size, 8);
    CHECK_STATUS(tw_breaker_attach(mem, size, &b), TW_STATUS_OK);
    memcpy(mem, "TRIPWIR~", 8);
    CHECK_STATUS(tw_breaker_attach(mem, size, &b), TW_STATUS_REGION_INITIALISING);
    CHECK_STATUS(tw_breaker_open_in(mem, size, &c, &b), TW_STATUS_REGION_INITIALISING);
    memset(mem, 0x5A, size);
    CHECK_STATUS(tw_breaker_attach(mem, size, &b), TW_STATUS_REGION_INVALID);
    CHECK_MESSAGE("tw_breaker_attach: not a tripwire shared region: magic 0x5a5a5a5a5a5a5a5a, "
                  "expected 0x4552495750495254");
    CHECK_STATUS(tw_breaker_init_in(mem, size, &c, &b), TW_STATUS_REGION_INVALID);
    free(mem);
}

static void test_bulkhead_backoff_budget(void) {
    tw_bulkhead *bh = NULL;
    CHECK_STATUS(tw_bulkhead_new(1, &bh), TW_STATUS_OK);
    CHECK_STATUS(tw_bulkhead_try_acquire(bh), TW_STATUS_OK);
    CHECK_STATUS(tw_bulkhead_try_acquire(bh), TW_STATUS_REJECTED);
    CHECK_STATUS(tw_bulkhead_release(bh), TW_STATUS_OK);
    CHECK_STATUS(tw_bulkhead_release(bh), TW_STATUS_INVALID_ARGUMENT);
    CHECK_MESSAGE("tw_bulkhead_release: no call is in flight (a release without an acquire)");
    tw_bulkhead_stats bs;
    CHECK_STATUS(tw_bulkhead_snapshot(bh, &bs), TW_STATUS_OK);
    CHECK(bs.acquired == 1 && bs.rejected == 1 && bs.in_flight == 0 && bs.peak_in_flight == 1);
    CHECK_STATUS(tw_bulkhead_snapshot(NULL, &bs), TW_STATUS_NULL_ARGUMENT);
    CHECK_STATUS(tw_bulkhead_new(1, NULL), TW_STATUS_NULL_ARGUMENT);
    tw_bulkhead_free(bh);
    tw_bulkhead_free(NULL);

    tw_backoff_config bc;
    CHECK_STATUS(tw_backoff_config_default(&bc), TW_STATUS_OK);
    CHECK(bc.base_ns == 100000000ull && bc.jitter == TW_JITTER_FULL);
    bc.jitter = TW_JITTER_NONE;
    bc.base_ns = 1000;
    bc.cap_ns = 3000;
    tw_backoff *bo = NULL;
    CHECK_STATUS(tw_backoff_new(&bc, &bo), TW_STATUS_OK);
    uint64_t d = 0;
    CHECK_STATUS(tw_backoff_next_delay(bo, &d), TW_STATUS_OK);
    CHECK(d == 1000);
    CHECK_STATUS(tw_backoff_next_delay(bo, &d), TW_STATUS_OK);
    CHECK(d == 2000);
    CHECK_STATUS(tw_backoff_next_delay(bo, &d), TW_STATUS_OK);
    CHECK(d == 3000);
    CHECK_STATUS(tw_backoff_reset(bo), TW_STATUS_OK);
    CHECK_STATUS(tw_backoff_next_delay(bo, &d), TW_STATUS_OK);
    CHECK(d == 1000);
    CHECK_STATUS(tw_backoff_reset(NULL), TW_STATUS_NULL_ARGUMENT);
    tw_backoff_free(bo);
    bc.cap_ns = 10;
    tw_backoff *none = NULL;
    CHECK_STATUS(tw_backoff_new(&bc, &none), TW_STATUS_INVALID_CONFIG);
    CHECK(none == NULL);

    tw_retry_budget_config rc;
    CHECK_STATUS(tw_retry_budget_config_default(&rc), TW_STATUS_OK);
    CHECK(rc.ratio == 0.2 && rc.ttl_ns == 10000000000ull);
    rc.min_retries_per_sec = 0.0;
    rc.ratio = 1.0;
    tw_retry_budget *rb = NULL;
    CHECK_STATUS(tw_retry_budget_new(&rc, &rb), TW_STATUS_OK);
    CHECK_STATUS(tw_retry_budget_try_withdraw_at(rb, 5), TW_STATUS_REJECTED);
    CHECK_STATUS(tw_retry_budget_deposit_at(rb, 5), TW_STATUS_OK);
    uint32_t milli = 0;
    CHECK_STATUS(tw_retry_budget_available_at(rb, 5, &milli), TW_STATUS_OK);
    CHECK(milli == 1000);
    CHECK_STATUS(tw_retry_budget_try_withdraw_at(rb, 5), TW_STATUS_OK);
    CHECK_STATUS(tw_retry_budget_deposit(rb), TW_STATUS_OK);
    CHECK_STATUS(tw_retry_budget_try_withdraw(NULL), TW_STATUS_NULL_ARGUMENT);
    tw_retry_budget_free(rb);
    rc.ttl_ns = 1;
    tw_retry_budget *rnone = NULL;
    CHECK_STATUS(tw_retry_budget_new(&rc, &rnone), TW_STATUS_INVALID_CONFIG);
    CHECK(strncmp(tw_last_error_message(), "tw_retry_budget_new: invalid retry budget config: ttl", 53) == 0);
}

static void test_backpressure(void) {
    /* A 429 with Retry-After: 7 from C strings, settled on the ticket of
     * the call that got it: ignored, and the breaker held for 7 s. */
    const uint64_t sec = 1000000000ull, now = 50 * sec;
    tw_breaker_config c;
    CHECK_STATUS(tw_breaker_config_default(&c), TW_STATUS_OK);
    tw_breaker *b = NULL;
    CHECK_STATUS(tw_breaker_new(&c, &b), TW_STATUS_OK);
    tw_assessment a;
    CHECK_STATUS(tw_http_assess(429, "7", NULL, "1", &a), TW_STATUS_OK);
    CHECK(a.outcome == TW_OUTCOME_IGNORED && a.hold_ns == 7 * sec);
    tw_ticket t;
    CHECK_STATUS(tw_breaker_try_acquire_at(b, now, &t, NULL), TW_STATUS_OK);
    tw_transition tr = {0};
    CHECK_STATUS(tw_breaker_settle_at(b, now, t, a.outcome, a.hold_ns, &tr), TW_STATUS_OK);
    CHECK(tr.changed && tr.from == TW_STATE_CLOSED && tr.to == TW_STATE_OPEN);
    uint64_t left = 0;
    CHECK_STATUS(tw_breaker_hold_left_at(b, now + 2 * sec, &left), TW_STATUS_OK);
    CHECK(left == 5 * sec);
    tw_rejection r;
    CHECK_STATUS(tw_breaker_try_acquire_at(b, now + 2 * sec, &t, &r), TW_STATUS_REJECTED);
    CHECK(r.state == TW_STATE_OPEN && r.retry_after_ns == 5 * sec);
    /* No wait named: the cool-down. A 503 holds nothing. */
    CHECK_STATUS(tw_http_assess(418, NULL, NULL, NULL, &a), TW_STATUS_OK);
    CHECK(a.hold_ns == TW_HOLD_UNSPECIFIED);
    CHECK_STATUS(tw_http_assess(503, "7", NULL, NULL, &a), TW_STATUS_OK);
    CHECK(a.outcome == TW_OUTCOME_FAILURE && a.hold_ns == 0);
    CHECK_STATUS(tw_http_assess(42, NULL, NULL, NULL, &a), TW_STATUS_INVALID_ARGUMENT);
    CHECK_MESSAGE("tw_http_assess: status = 42, expected an HTTP status from 100 to 999");
    /* An hour at most. */
    CHECK_STATUS(tw_breaker_hold_for_at(b, now, UINT64_MAX - 1, &tr), TW_STATUS_OK);
    CHECK(tr.changed);
    CHECK_STATUS(tw_breaker_hold_left_at(b, now, &left), TW_STATUS_OK);
    CHECK(left == 3600 * sec);
    tw_breaker_free(b);
}

static bool has_line(const char *text, const char *line) {
    size_t n = strlen(line);
    for (const char *p = strstr(text, line); p != NULL; p = strstr(p + 1, line)) {
        if ((p == text || p[-1] == '\n') && p[n] == '\n') {
            return true;
        }
    }
    return false;
}

static void test_registry(void) {
    tw_breaker_config c = config_with_threshold(1, 1000);
    tw_breaker *orders = NULL, *books = NULL;
    CHECK_STATUS(tw_breaker_new(&c, &orders), TW_STATUS_OK);
    CHECK_STATUS(tw_breaker_new(&c, &books), TW_STATUS_OK);
    tw_registry *r = NULL;
    CHECK_STATUS(tw_registry_new(&r), TW_STATUS_OK);
    CHECK_STATUS(tw_registry_add_breaker(r, "binance/orders", orders), TW_STATUS_OK);
    CHECK_STATUS(tw_registry_add_breaker(r, "binance/books", books), TW_STATUS_OK);
    CHECK_STATUS(tw_registry_add_breaker(r, "binance/books", orders), TW_STATUS_INVALID_ARGUMENT);
    CHECK_MESSAGE("tw_registry_add_breaker: a breaker named \"binance/books\" is registered already");
    tw_ticket t;
    CHECK_STATUS(tw_breaker_try_acquire_at(orders, 5, &t, NULL), TW_STATUS_OK);
    CHECK_STATUS(tw_breaker_record_at(orders, 5, t, TW_OUTCOME_FAILURE, NULL), TW_STATUS_OK);

    /* snprintf's convention: the length needed, at most cap bytes, NUL-terminated. */
    size_t len = 0;
    CHECK_STATUS(tw_registry_prometheus(r, NULL, 0, &len), TW_STATUS_OK);
    CHECK(len > 0);
    char small[16];
    memset(small, 'x', sizeof small);
    size_t cut = 0;
    CHECK_STATUS(tw_registry_prometheus(r, small, sizeof small, &cut), TW_STATUS_OK);
    CHECK(cut == len && small[sizeof small - 1] == '\0' && strlen(small) == sizeof small - 1);
    char *text = malloc(len + 1);
    CHECK(text != NULL);
    if (text != NULL) {
        size_t got = 0;
        CHECK_STATUS(tw_registry_prometheus(r, text, len + 1, &got), TW_STATUS_OK);
        CHECK(got == len && strlen(text) == len);
        CHECK(strncmp(text, small, sizeof small - 1) == 0);
        CHECK(has_line(text, "# TYPE tripwire_breaker_state gauge"));
        CHECK(has_line(text, "tripwire_breaker_state{breaker=\"binance/orders\",state=\"open\"} 1"));
        CHECK(has_line(text, "tripwire_breaker_state{breaker=\"binance/books\",state=\"closed\"} 1"));
        CHECK(has_line(text, "tripwire_breaker_calls_total{breaker=\"binance/orders\",outcome=\"failure\"} 1"));
        CHECK(has_line(text, "tripwire_breaker_transitions_total{breaker=\"binance/orders\"} 1"));
        /* Sorted by name, as a Rust Registry's. */
        const char *first = strstr(text, "\"binance/books\"");
        const char *second = strstr(text, "\"binance/orders\"");
        CHECK(first != NULL && second != NULL && first < second);
        free(text);
    }
    CHECK_STATUS(tw_registry_prometheus(r, NULL, 8, &len), TW_STATUS_NULL_ARGUMENT);
    CHECK_STATUS(tw_registry_prometheus(r, small, sizeof small, NULL), TW_STATUS_NULL_ARGUMENT);
    CHECK_STATUS(tw_registry_prometheus(NULL, small, sizeof small, &len), TW_STATUS_NULL_ARGUMENT);
    CHECK_STATUS(tw_registry_add_breaker(r, "", books), TW_STATUS_INVALID_ARGUMENT);
    CHECK_STATUS(tw_registry_add_breaker(r, NULL, books), TW_STATUS_NULL_ARGUMENT);
    CHECK_STATUS(tw_registry_new(NULL), TW_STATUS_NULL_ARGUMENT);
    /* The registry first: it borrows the breakers. */
    tw_registry_free(r);
    tw_registry_free(NULL);
    tw_breaker_free(orders);
    tw_breaker_free(books);
}

int main(void) {
    test_strings();
    test_config();
    test_nulls();
    test_breaker_lifecycle();
    test_rolling_window();
    test_shared_regions();
    test_bulkhead_backoff_budget();
    test_backpressure();
    test_registry();
    if (failures != 0) {
        fprintf(stderr, "%d check(s) failed\n", failures);
        return 1;
    }
    printf("test_tripwire: all checks passed\n");
    return 0;
}
