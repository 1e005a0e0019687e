/*
 * tripwire: the static inline functions of tripwire.h, which includes this
 * file at its end; include tripwire.h (this file includes it too, so that
 * it also stands alone).
 *
 * Written by hand, not generated: it only reads the structs, functions and
 * TW_HOT_ constants that cbindgen generates in tripwire.h from ffi/src.
 * ffi/tests/c_api.rs compiles it alone as C and as C++, and the C and C++
 * tests in ffi/tests/c/ use every function it defines.
 *
 * The _default() functions pass the caller's sizeof to the library, so they
 * live in the header (ffi/src/struct_size.rs says why). The inline fast
 * path decides from the breaker's hot line (ffi/src/hot.rs).
 */
#ifndef TRIPWIRE_INLINE_H
#define TRIPWIRE_INLINE_H

#include "tripwire.h"

/**
 * Fills `*out` with the default breaker config and sets `out->struct_size`
 * to this header's `sizeof(tw_breaker_config)`: call it before setting any
 * field. `tw_breaker_config_init` with `sizeof *out`; `out` must not be
 * NULL. Thread-safe.
 */
static inline tw_status tw_breaker_config_default(tw_breaker_config *out) {
    return tw_breaker_config_init(out, sizeof *out);
}

/**
 * Writes the config `breaker` runs with to `*out` (e.g. after attaching to
 * a shared breaker), as much of it as this header's struct holds:
 * `tw_breaker_get_config_sized` with `sizeof *out`. Neither pointer may be
 * NULL. Thread-safe.
 */
static inline tw_status tw_breaker_get_config(const tw_breaker *breaker, tw_breaker_config *out) {
    return tw_breaker_get_config_sized(breaker, out, sizeof *out);
}

/**
 * Fills `*out` with the default backoff config, `struct_size` set to this
 * header's `sizeof(tw_backoff_config)`: `tw_backoff_config_init` with
 * `sizeof *out`. `out` must not be NULL.
 */
static inline tw_status tw_backoff_config_default(tw_backoff_config *out) {
    return tw_backoff_config_init(out, sizeof *out);
}

/**
 * Fills `*out` with the default retry budget config, `struct_size` set to
 * this header's `sizeof(tw_retry_budget_config)`:
 * `tw_retry_budget_config_init` with `sizeof *out`. `out` must not be
 * NULL.
 */
static inline tw_status tw_retry_budget_config_default(tw_retry_budget_config *out) {
    return tw_retry_budget_config_init(out, sizeof *out);
}

/**
 * Fills `*out` with the default fleet options (all zero or NULL),
 * `struct_size` set to this header's `sizeof(tw_fleet_options)`:
 * `tw_fleet_options_init` with `sizeof *out`. `out` must not be NULL.
 */
static inline tw_status tw_fleet_options_default(tw_fleet_options *out) {
    return tw_fleet_options_init(out, sizeof *out);
}


/*
 * The fast path, inline: try-acquire and a success on a Closed breaker
 * that neither times calls nor keeps a rolling window, decided here from
 * the breaker's hot line (tw_breaker_hot) without a call into the library;
 * everything else calls the function of the same name without _fast.
 * Same arguments, same results, same thread-safety as those functions.
 *
 * The decisions are the library's own fast-path tests (the TW_HOT_
 * constants are the core's HotLine): nothing is decided here that the
 * library would decide otherwise. The stamp is checked first, so that a
 * program built with this header and run with a library of another
 * hot-line layout calls the library every time, and stays correct.
 *
 * Orderings: the state word is loaded with __ATOMIC_ACQUIRE on admission
 * (the core's Breaker::admit loads it with Ordering::Acquire) and with
 * __ATOMIC_RELAXED for a success (Breaker::record_healthy_success's
 * Ordering::Relaxed); the stamp and the flags are written once before the
 * handle is handed out and loaded with __ATOMIC_RELAXED. Needs GCC's or
 * Clang's __atomic builtins; with another compiler every _fast function
 * calls the library.
 */
#if defined(__GNUC__) || defined(__clang__)
#define TW_HOT_INLINE_ 1
#ifdef __cplusplus
#define TW_HOT_CAST_(type, value) (static_cast<type>(value))
#else
#define TW_HOT_CAST_(type, value) ((type)(value))
#endif
#define TW_HOT_OF_(breaker) \
    TW_HOT_CAST_(const tw_breaker_hot *, TW_HOT_CAST_(const void *, (breaker)))
#else
#define TW_HOT_INLINE_ 0
#endif

/**
 * Whether the inline path may decide for `breaker`: the library stamped
 * this header's hot-line layout, and none of `flags` is set.
 */
static inline bool tw_breaker_hot_allows_(const tw_breaker *breaker, uint32_t flags) {
#if TW_HOT_INLINE_
    const tw_breaker_hot *hot = TW_HOT_OF_(breaker);
    return __builtin_expect(__atomic_load_n(&hot->stamp, __ATOMIC_RELAXED) == TW_HOT_STAMP, 1) &&
           __builtin_expect((__atomic_load_n(&hot->flags, __ATOMIC_RELAXED) & flags) == 0, 1);
#else
    (void)breaker;
    (void)flags;
    return false;
#endif
}

/**
 * Admits the call on the inline path if it can: writes a plain ticket to
 * `*ticket` and returns true; false when the library must decide.
 */
static inline bool tw_breaker_admit_inline_(const tw_breaker *breaker, tw_ticket *ticket) {
#if TW_HOT_INLINE_
    if (breaker == NULL || ticket == NULL || !tw_breaker_hot_allows_(breaker, TW_HOT_ADMIT_FLAGS)) {
        return false;
    }
    /* Acquire: as the core's Breaker::admit (Ordering::Acquire). */
    uint64_t word = __atomic_load_n(&TW_HOT_OF_(breaker)->word, __ATOMIC_ACQUIRE);
    if (__builtin_expect((word & TW_HOT_ADMIT_MASK) != TW_HOT_ADMIT_VALUE, 0)) {
        return false;
    }
    /* A plain ticket: started at 0, this generation, flags 0. Written as
     * two 8-byte words, not one store per field: the caller reads it back
     * as two 8-byte words to pass it by value to the record call, and a
     * 4-byte store cannot forward to an 8-byte load (a stall of a dozen
     * cycles). The second word is the generation, then the flags. */
    uint64_t second = word >> TW_HOT_GENERATION_SHIFT;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    second <<= 32;
#endif
    const uint64_t words[2] = {0, second};
    __builtin_memcpy(ticket, words, sizeof words);
    return true;
#else
    (void)breaker;
    (void)ticket;
    return false;
#endif
}

/**
 * Records a success on the inline path if there is nothing to do but count
 * it: writes the unchanged transition to `*transition` (if not NULL) and
 * returns true; false, having done nothing, when the library must record
 * it. Counting a success is the library's: when the breaker counts them,
 * its own fast path (tw_breaker_record_healthy_success) makes the same
 * test and counts, in one call.
 */
static inline bool tw_breaker_success_inline_(const tw_breaker *breaker, tw_ticket ticket,
                                              uint32_t outcome, tw_transition *transition) {
#if TW_HOT_INLINE_
    if (breaker == NULL || outcome != TW_HOT_CAST_(uint32_t, TW_OUTCOME_SUCCESS) ||
        !tw_breaker_hot_allows_(breaker, TW_HOT_RECORD_FLAGS)) {
        return false;
    }
    const tw_breaker_hot *hot = TW_HOT_OF_(breaker);
    if (__atomic_load_n(&hot->flags, __ATOMIC_RELAXED) & TW_HOT_COUNT_SUCCESSES) {
        if (!tw_breaker_record_healthy_success(breaker, ticket.generation)) {
            return false;
        }
    } else {
        /* Relaxed: as the core's Breaker::record_healthy_success
         * (Ordering::Relaxed); deciding that there is nothing to write
         * orders nothing. */
        uint64_t word = __atomic_load_n(&hot->word, __ATOMIC_RELAXED);
        if (__builtin_expect(word != ((TW_HOT_CAST_(uint64_t, ticket.generation)
                                       << TW_HOT_GENERATION_SHIFT) |
                                      TW_HOT_ADMIT_VALUE), 0)) {
            return false;
        }
    }
    if (transition != NULL) {
        transition->changed = false;
        transition->from = TW_STATE_CLOSED;
        transition->to = TW_STATE_CLOSED;
        transition->generation = ticket.generation;
    }
    return true;
#else
    (void)breaker;
    (void)ticket;
    (void)outcome;
    (void)transition;
    return false;
#endif
}

/** `tw_breaker_try_acquire`, inline on a Closed breaker that does not time calls. */
static inline tw_status tw_breaker_try_acquire_fast(const tw_breaker *breaker, tw_ticket *ticket,
                                                    tw_rejection *rejection) {
    if (tw_breaker_admit_inline_(breaker, ticket)) {
        return TW_STATUS_OK;
    }
    return tw_breaker_try_acquire(breaker, ticket, rejection);
}

/** `tw_breaker_try_acquire_at`, inline as `tw_breaker_try_acquire_fast`. */
static inline tw_status tw_breaker_try_acquire_at_fast(const tw_breaker *breaker, uint64_t now_ns,
                                                       tw_ticket *ticket, tw_rejection *rejection) {
    if (tw_breaker_admit_inline_(breaker, ticket)) {
        return TW_STATUS_OK;
    }
    return tw_breaker_try_acquire_at(breaker, now_ns, ticket, rejection);
}

/**
 * `tw_breaker_record`, inline for a success on a Closed breaker with no
 * failure to forget, in the ticket's generation, that neither times calls
 * nor keeps a rolling window (one call to count it if the breaker counts
 * successes).
 */
static inline tw_status tw_breaker_record_fast(const tw_breaker *breaker, tw_ticket ticket,
                                               uint32_t outcome, tw_transition *transition) {
    if (tw_breaker_success_inline_(breaker, ticket, outcome, transition)) {
        return TW_STATUS_OK;
    }
    return tw_breaker_record(breaker, ticket, outcome, transition);
}

/** `tw_breaker_record_at`, inline as `tw_breaker_record_fast`. */
static inline tw_status tw_breaker_record_at_fast(const tw_breaker *breaker, uint64_t now_ns,
                                                  tw_ticket ticket, uint32_t outcome,
                                                  tw_transition *transition) {
    if (tw_breaker_success_inline_(breaker, ticket, outcome, transition)) {
        return TW_STATUS_OK;
    }
    return tw_breaker_record_at(breaker, now_ns, ticket, outcome, transition);
}

#endif  /* TRIPWIRE_INLINE_H */
