/*
 * tw_fleet_* from C, through include/tripwire.h: every declaration compiles
 * as C (each name its own), NULL and bad arguments give their statuses and
 * messages, a link that cannot connect says why (tw_fleet_last_error), and
 * with TRIPWIRE_TEST_REDIS set (.ci/run sets it) a trip through one fleet
 * handle refuses calls through another and a missing database is named.
 * Built with -std=c11 -Wall -Wextra -Werror, plainly and with
 * -fsanitize=address,undefined, by ffi/tests/c_api.rs.
 */
#define _POSIX_C_SOURCE 200809L
#include "check.h"
#include "tripwire.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const uint8_t KEY[] = "0123456789abcdef0123456789abcdef";
#define KEY_LEN ((size_t)32)

static tw_breaker *new_breaker(void) {
    tw_breaker_config c;
    tw_breaker *b = NULL;
    CHECK_STATUS(tw_breaker_config_default(&c), TW_STATUS_OK);
    c.failure_threshold = 1;
    c.open_timeout_ns = 5000000000u;
    CHECK_STATUS(tw_breaker_new(&c, &b), TW_STATUS_OK);
    return b;
}

static int contains(const char *haystack, const char *needle) {
    return strstr(haystack, needle) != NULL;
}

static void sleep_ms(long ms) {
    struct timespec t = {0, ms * 1000000L};
    nanosleep(&t, NULL);
}

/* Waits (at most 3 s) for a last error holding `words` and a failed
 * attempt; 1 if both came. */
static int says_why(const tw_fleet *f, const char *words) {
    char buf[512];
    size_t len = 0;
    uint64_t failed = 0;
    for (int waited = 0; waited < 3000; waited += 5) {
        CHECK_STATUS(tw_fleet_last_error(f, buf, sizeof buf, &len), TW_STATUS_OK);
        CHECK_STATUS(tw_fleet_connect_failures(f, &failed), TW_STATUS_OK);
        if (failed >= 1 && contains(buf, words) && strlen(buf) == len) {
            return 1;
        }
        sleep_ms(5);
    }
    fprintf(stderr, "last error \"%s\", %llu failures: no \"%s\"\n", buf, (unsigned long long)failed, words);
    return 0;
}

static void test_bad_arguments(void) {
    const char *url = "redis://127.0.0.1:1";
    tw_fleet *f = NULL;
    CHECK_STATUS(tw_fleet_new(NULL, "c", KEY, KEY_LEN, NULL, &f), TW_STATUS_NULL_ARGUMENT);
    CHECK(strcmp(tw_last_error_message(), "tw_fleet_new: `url` is NULL") == 0);
    CHECK_STATUS(tw_fleet_new(url, "c", KEY, KEY_LEN, NULL, NULL), TW_STATUS_NULL_ARGUMENT);
    CHECK_STATUS(tw_fleet_new(url, "c", KEY, 5, NULL, &f), TW_STATUS_INVALID_ARGUMENT);
    CHECK(strcmp(tw_last_error_message(),
                 "tw_fleet_new: fleet setting `key_len` = 5: must be at least 16 bytes") == 0);
    static const uint8_t zeros[16] = {0};
    CHECK_STATUS(tw_fleet_new(url, "c", zeros, sizeof zeros, NULL, &f), TW_STATUS_INVALID_ARGUMENT);
    CHECK(contains(tw_last_error_message(), "`key` = 16 bytes of 0x00: must be random bytes"));
    CHECK_STATUS(tw_fleet_new("http://nowhere", "c", KEY, KEY_LEN, NULL, &f), TW_STATUS_INVALID_ARGUMENT);
    tw_fleet_options o;
    /* Zeroed by hand, struct_size is 0: no layout. */
    memset(&o, 0, sizeof o);
    CHECK_STATUS(tw_fleet_new(url, "c", KEY, KEY_LEN, &o, &f), TW_STATUS_INVALID_STRUCT_SIZE);
    CHECK(contains(tw_last_error_message(), "tw_fleet_options.struct_size = 0"));
    CHECK_STATUS(tw_fleet_options_default(&o), TW_STATUS_OK);
    CHECK(o.struct_size == sizeof o && o.username == NULL && o.io_timeout_ns == 0);
    o.probe_timeout_ns = 1;
    CHECK_STATUS(tw_fleet_new(url, "c", KEY, KEY_LEN, &o, &f), TW_STATUS_INVALID_ARGUMENT);
    CHECK(contains(tw_last_error_message(), "`options.probe_timeout_ns` = 1: must be from 10 ms to 1 h"));
    CHECK(f == NULL);

    /* Unlinked (nothing listens on port 1): made at once, joined, counted. */
    o.probe_timeout_ns = 0;
    o.connect_timeout_ns = 50000000u;
    CHECK_STATUS(tw_fleet_new(url, "c", KEY, KEY_LEN, &o, &f), TW_STATUS_OK);
    tw_breaker *b = new_breaker();
    CHECK_STATUS(tw_fleet_join(f, "exchange", b), TW_STATUS_OK);
    CHECK_STATUS(tw_fleet_join(f, "exchange", b), TW_STATUS_INVALID_ARGUMENT);
    CHECK(contains(tw_last_error_message(), "joined already"));
    CHECK_STATUS(tw_fleet_join(f, "", b), TW_STATUS_INVALID_ARGUMENT);
    CHECK_STATUS(tw_fleet_join(f, NULL, b), TW_STATUS_NULL_ARGUMENT);
    CHECK_STATUS(tw_fleet_snapshot(f, NULL), TW_STATUS_NULL_ARGUMENT);
    tw_fleet_stats s;
    CHECK_STATUS(tw_fleet_snapshot(f, &s), TW_STATUS_OK);
    CHECK(s.publisher_up == 0 && s.subscriber_up == 0 && s.sent == 0);
    /* And says why. */
    CHECK(says_why(f, "connect: Connection refused"));
    size_t len = 0;
    CHECK_STATUS(tw_fleet_last_error(f, NULL, 0, &len), TW_STATUS_OK);
    CHECK(len > 0);
    CHECK_STATUS(tw_fleet_last_error(f, NULL, 8, &len), TW_STATUS_NULL_ARGUMENT);
    CHECK_STATUS(tw_fleet_connect_failures(f, NULL), TW_STATUS_NULL_ARGUMENT);
    tw_fleet_free(f);
    tw_fleet_free(NULL);
    tw_breaker_free(b);
}

static int linked(const tw_fleet *f) {
    tw_fleet_stats s;
    return tw_fleet_snapshot(f, &s) == TW_STATUS_OK && s.publisher_up == 1 && s.subscriber_up == 1;
}

static tw_state state_of(const tw_breaker *b) {
    tw_state st = TW_STATE_CLOSED;
    CHECK_STATUS(tw_breaker_state(b, &st), TW_STATUS_OK);
    return st;
}

static void test_a_trip_travels(const char *url) {
    /* A namespace of this run alone: the state key a trip leaves lives on
     * for its cool-down, and the sanitized build runs right after. */
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    char ns[64];
    snprintf(ns, sizeof ns, "c-%ld-%ld-%ld", (long)getpid(), (long)now.tv_sec, now.tv_nsec);
    tw_fleet *fa = NULL, *fb = NULL;
    CHECK_STATUS(tw_fleet_new(url, ns, KEY, KEY_LEN, NULL, &fa), TW_STATUS_OK);
    CHECK_STATUS(tw_fleet_new(url, ns, KEY, KEY_LEN, NULL, &fb), TW_STATUS_OK);
    if (fa == NULL || fb == NULL) {
        return;
    }
    tw_breaker *a = new_breaker(), *b = new_breaker();
    CHECK_STATUS(tw_fleet_join(fa, "exchange", a), TW_STATUS_OK);
    CHECK_STATUS(tw_fleet_join(fb, "exchange", b), TW_STATUS_OK);
    int waited = 0;
    while (!(linked(fa) && linked(fb)) && waited < 5000) {
        sleep_ms(2);
        waited += 2;
    }
    CHECK(linked(fa) && linked(fb));

    tw_ticket t;
    tw_rejection r;
    CHECK_STATUS(tw_breaker_try_acquire(a, &t, &r), TW_STATUS_OK);
    CHECK_STATUS(tw_breaker_record(a, t, TW_OUTCOME_FAILURE, NULL), TW_STATUS_OK);
    CHECK(state_of(a) == TW_STATE_OPEN);
    waited = 0;
    while (state_of(b) != TW_STATE_OPEN && waited < 5000) {
        sleep_ms(1);
        waited += 1;
    }
    CHECK(state_of(b) == TW_STATE_OPEN);
    CHECK_STATUS(tw_breaker_try_acquire(b, &t, &r), TW_STATUS_REJECTED);
    /* The link threads count a message after sending or applying it, so
     * the counters may trail the state seen above: wait for them. */
    tw_fleet_stats sa, sb;
    waited = 0;
    for (;;) {
        CHECK_STATUS(tw_fleet_snapshot(fa, &sa), TW_STATUS_OK);
        CHECK_STATUS(tw_fleet_snapshot(fb, &sb), TW_STATUS_OK);
        if ((sa.sent >= 1 && sb.received >= 1 && sb.applied >= 1) || waited >= 5000) {
            break;
        }
        sleep_ms(1);
        waited += 1;
    }
    if (!(sa.sent == 1 && sb.received == 1 && sb.applied == 1)) {
        fprintf(stderr, "sent %llu, received %llu, applied %llu\n", (unsigned long long)sa.sent,
                (unsigned long long)sb.received, (unsigned long long)sb.applied);
        failures++;
    }
    tw_fleet_free(fa);
    tw_fleet_free(fb);
    tw_breaker_free(a);
    tw_breaker_free(b);
}

/* A database the server lacks: the server's reason reaches C. */
static void test_a_missing_database_says_why(const char *url) {
    char db99[256];
    snprintf(db99, sizeof db99, "%s/99", url);
    tw_fleet *f = NULL;
    CHECK_STATUS(tw_fleet_new(db99, "c-db99", KEY, KEY_LEN, NULL, &f), TW_STATUS_OK);
    if (f == NULL) {
        return;
    }
    CHECK(says_why(f, "SELECT 99: ResponseError: DB index is out of range"));
    tw_fleet_free(f);
}

int main(void) {
    test_bad_arguments();
    const char *url = getenv("TRIPWIRE_TEST_REDIS");
    if (url != NULL && url[0] != '\0') {
        test_a_trip_travels(url);
        test_a_missing_database_says_why(url);
    } else {
        printf("test_fleet: SKIPPED the linked check: set TRIPWIRE_TEST_REDIS=redis://127.0.0.1:PORT\n");
    }
    if (failures != 0) {
        fprintf(stderr, "%d check(s) failed\n", failures);
        return 1;
    }
    printf("test_fleet: all checks passed\n");
    return 0;
}
