/* A C program using an installed tripwire: the version it was built for
 * is the one it runs with, and a breaker trips. Prints one line. */
#include <stdio.h>
#include <string.h>
#include <tripwire.h>

int main(void) {
    char header[48];
    snprintf(header, sizeof header, "%d.%d.%d", TW_VERSION_MAJOR, TW_VERSION_MINOR,
             TW_VERSION_PATCH);
    if (strcmp(tw_version(), EXPECTED_VERSION) != 0 ||
        strncmp(tw_version(), header, strlen(header)) != 0) {
        fprintf(stderr, "library %s, header %s, expected %s\n", tw_version(), header,
                EXPECTED_VERSION);
        return 1;
    }
    tw_breaker_config cfg;
    tw_breaker_config_default(&cfg);
    cfg.failure_threshold = 1;
    tw_breaker *b;
    if (tw_breaker_new(&cfg, &b) != TW_STATUS_OK) {
        fprintf(stderr, "%s\n", tw_last_error_message());
        return 1;
    }
    tw_ticket ticket;
    tw_transition t;
    if (tw_breaker_try_acquire(b, &ticket, NULL) != TW_STATUS_OK ||
        tw_breaker_record(b, ticket, TW_OUTCOME_FAILURE, &t) != TW_STATUS_OK || !t.changed ||
        t.to != TW_STATE_OPEN) {
        fprintf(stderr, "the breaker did not trip\n");
        return 1;
    }
    tw_breaker_free(b);
    printf("consumer (C): tripwire %s\n", tw_version());
    return 0;
}
