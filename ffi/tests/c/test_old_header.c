/*
 * A program built against an older header, run with the current library.
 *
 * It does not include tripwire.h: it declares what a header whose
 * tw_breaker_config had only its first layout (TW_BREAKER_CONFIG_SIZE_V1,
 * the fields up to `reserved`, without the rolling window and the window
 * kind) declared, word for word as such a header would. Built against the
 * static and the shared library, plainly and with ASan/UBSan, which would
 * catch the library reading or writing past this smaller struct.
 *
 * It must get a working breaker whose missing fields take the library's
 * defaults (zeros would be refused: window_buckets and min_calls must be at
 * least 1), and TW_STATUS_INVALID_STRUCT_SIZE for a garbage struct_size.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* ---- the older header: the declarations this program uses ---- */

typedef enum tw_status {
    TW_STATUS_OK = 0,
    TW_STATUS_REJECTED = 1,
    TW_STATUS_NULL_ARGUMENT = 2,
    TW_STATUS_INVALID_ARGUMENT = 3,
    TW_STATUS_INVALID_CONFIG = 4,
    TW_STATUS_INVALID_STRUCT_SIZE = 15,
} tw_status;

typedef enum tw_state {
    TW_STATE_CLOSED = 0,
    TW_STATE_OPEN = 1,
    TW_STATE_HALF_OPEN = 2,
    TW_STATE_FORCED_OPEN = 3,
    TW_STATE_DISABLED = 4,
} tw_state;

#define TW_OUTCOME_FAILURE 1u
#define TW_BREAKER_CONFIG_SIZE_V1 64

typedef struct tw_breaker tw_breaker;
typedef struct tw_transition tw_transition;

typedef struct tw_breaker_config {
    uint32_t struct_size;
    uint32_t failure_threshold;
    uint32_t half_open_max;
    uint32_t half_open_successes;
    uint64_t open_timeout_ns;
    uint64_t open_timeout_max_ns;
    double open_timeout_growth;
    double open_timeout_jitter;
    uint64_t jitter_seed;
    uint32_t count_successes;
    uint32_t reserved;
} tw_breaker_config;

typedef struct tw_ticket {
    uint64_t started_at;
    uint32_t generation;
    uint32_t flags;
} tw_ticket;

typedef struct tw_rejection {
    tw_state state;
    uint64_t retry_after_ns;
} tw_rejection;

tw_status tw_breaker_config_init(tw_breaker_config *out, size_t size);
tw_status tw_breaker_config_validate(const tw_breaker_config *config);
tw_status tw_breaker_new(const tw_breaker_config *config, tw_breaker **out);
void tw_breaker_free(tw_breaker *breaker);
tw_status tw_breaker_try_acquire_at(const tw_breaker *breaker, uint64_t now_ns, tw_ticket *ticket,
                                    tw_rejection *rejection);
tw_status tw_breaker_record_at(const tw_breaker *breaker, uint64_t now_ns, tw_ticket ticket,
                               uint32_t outcome, tw_transition *transition);
tw_status tw_breaker_get_config_sized(const tw_breaker *breaker, tw_breaker_config *out, size_t size);
const char *tw_last_error_message(void);

static inline tw_status tw_breaker_config_default(tw_breaker_config *out) {
    return tw_breaker_config_init(out, sizeof *out);
}
static inline tw_status tw_breaker_get_config(const tw_breaker *breaker, tw_breaker_config *out) {
    return tw_breaker_get_config_sized(breaker, out, sizeof *out);
}

/* ---- the program ---- */

static int failures = 0;

#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "%s:%d: CHECK(%s) failed; last error: %s\n", __FILE__,   \
                    __LINE__, #cond, tw_last_error_message());                       \
            failures++;                                                              \
        }                                                                            \
    } while (0)

/* The struct, with guard bytes after it that the library must not touch. */
typedef struct guarded {
    tw_breaker_config c;
    unsigned char guard[64];
} guarded;

static bool guard_intact(const guarded *g) {
    for (size_t i = 0; i < sizeof g->guard; i++) {
        if (g->guard[i] != 0xA5) {
            return false;
        }
    }
    return true;
}

static void an_older_struct_gets_a_working_breaker_with_the_defaults(void) {
    CHECK(sizeof(tw_breaker_config) == TW_BREAKER_CONFIG_SIZE_V1);
    guarded g;
    memset(&g, 0xA5, sizeof g);
    CHECK(tw_breaker_config_default(&g.c) == TW_STATUS_OK);
    CHECK(guard_intact(&g));
    CHECK(g.c.struct_size == sizeof(tw_breaker_config));
    CHECK(g.c.failure_threshold == 5 && g.c.half_open_max == 1 && g.c.half_open_successes == 1);
    CHECK(g.c.open_timeout_ns == 30000000000u && g.c.open_timeout_max_ns == 0);
    CHECK(g.c.count_successes == 1 && g.c.reserved == 0);

    /* A struct of its own on the stack: ASan sees any byte past it. */
    tw_breaker_config c = g.c;
    c.failure_threshold = 2;
    CHECK(tw_breaker_config_validate(&c) == TW_STATUS_OK);
    tw_breaker *b = NULL;
    CHECK(tw_breaker_new(&c, &b) == TW_STATUS_OK);
    if (b == NULL) {
        return;
    }
    /* Two failures trip it; the default 30 s cool-down follows. */
    tw_ticket t;
    for (uint64_t now = 1; now <= 2; now++) {
        CHECK(tw_breaker_try_acquire_at(b, now, &t, NULL) == TW_STATUS_OK);
        CHECK(tw_breaker_record_at(b, now, t, TW_OUTCOME_FAILURE, NULL) == TW_STATUS_OK);
    }
    tw_rejection r;
    CHECK(tw_breaker_try_acquire_at(b, 3, &t, &r) == TW_STATUS_REJECTED);
    CHECK(r.state == TW_STATE_OPEN && r.retry_after_ns == 30000000000u - 1);

    /* Reading the config back writes only this header's struct. */
    memset(&g, 0xA5, sizeof g);
    CHECK(tw_breaker_get_config(b, &g.c) == TW_STATUS_OK);
    CHECK(guard_intact(&g));
    CHECK(g.c.struct_size == sizeof(tw_breaker_config));
    CHECK(g.c.failure_threshold == 2 && g.c.open_timeout_max_ns == 30000000000u);
    tw_breaker_free(b);
}

static bool says(const char *needle) {
    return strstr(tw_last_error_message(), needle) != NULL;
}

static void a_garbage_size_is_refused(void) {
    tw_breaker_config c;
    CHECK(tw_breaker_config_default(&c) == TW_STATUS_OK);
    tw_breaker *b = NULL;

    c.struct_size = 0;
    CHECK(tw_breaker_new(&c, &b) == TW_STATUS_INVALID_STRUCT_SIZE);
    CHECK(says("tw_breaker_new: tw_breaker_config.struct_size = 0, smaller than the first layout"));
    c.struct_size = 72; /* inside a layout, no layout's end */
    CHECK(tw_breaker_new(&c, &b) == TW_STATUS_INVALID_STRUCT_SIZE);
    CHECK(says("tw_breaker_config.struct_size = 72, between two layouts"));
    c.struct_size = 0xDEADBEEFu; /* refused before a byte past `c` is read */
    CHECK(tw_breaker_config_validate(&c) == TW_STATUS_INVALID_STRUCT_SIZE);
    CHECK(says("tw_breaker_config.struct_size = 3735928559, not the size of any layout"));
    CHECK(b == NULL);
    CHECK(tw_breaker_config_init(&c, 3) == TW_STATUS_INVALID_STRUCT_SIZE);
    CHECK(says("tw_breaker_config_init: tw_breaker_config.struct_size = 3, "));
}

int main(void) {
    an_older_struct_gets_a_working_breaker_with_the_defaults();
    a_garbage_size_is_refused();
    if (failures > 0) {
        fprintf(stderr, "%d check(s) failed\n", failures);
        return 1;
    }
    puts("test_old_header: ok");
    return 0;
}
