/*
 * The checks the C tests share: each failed check is printed with the
 * library's last error and counted in `failures`; main returns non-zero
 * when any failed.
 */
#ifndef TRIPWIRE_TEST_CHECK_H
#define TRIPWIRE_TEST_CHECK_H

#include "tripwire.h"

#include <stdio.h>
#include <string.h>

static int failures = 0;

#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "%s:%d: CHECK(%s) failed; last error: %s\n", __FILE__,   \
                    __LINE__, #cond, tw_last_error_message());                       \
            failures++;                                                              \
        }                                                                            \
    } while (0)

#define CHECK_STATUS(call, want)                                                     \
    do {                                                                             \
        tw_status got_ = (call);                                                     \
        if (got_ != (want)) {                                                        \
            fprintf(stderr, "%s:%d: %s returned %s, expected %s; last error: %s\n",  \
                    __FILE__, __LINE__, #call, tw_status_name(got_),                 \
                    tw_status_name(want), tw_last_error_message());                  \
            failures++;                                                              \
        }                                                                            \
    } while (0)

#define CHECK_MESSAGE(want)                                                          \
    do {                                                                             \
        const char *got_ = tw_last_error_message();                                  \
        if (strcmp(got_, (want)) != 0) {                                             \
            fprintf(stderr, "%s:%d: message \"%s\", expected \"%s\"\n", __FILE__,    \
                    __LINE__, got_, (want));                                         \
            failures++;                                                              \
        }                                                                            \
    } while (0)

#endif
