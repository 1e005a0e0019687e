/*
 * One breaker shared by several processes through a MAP_SHARED mapping.
 *
 * 1. N processes hammer one breaker that trips and recovers over and over:
 *    every process sees it open, and the probes in flight for any one
 *    generation never exceed half_open_max across all processes (counted
 *    in an extra shared atomic array, per generation, because a probe that
 *    outlives its probe timeout is taken over by the next generation by
 *    design).
 * 0. N processes race to initialise one fresh region: exactly one wins the
 *    claim, every other one ends up attached to the same breaker.
 * 2. A process is killed while it holds the only probe ticket: the others
 *    keep running, exactly one of them takes the probe over after the
 *    probe timeout (a new generation), and the breaker closes again.
 *
 * Built with -std=c11 -Wall -Wextra -Werror, plainly and with
 * -fsanitize=address,undefined, by ffi/tests/c_api.rs.
 */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS, rand_r */
#include "tripwire.h"

#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define WORKERS 4
#define HALF_OPEN_MAX 3u
#define GENERATIONS 1024

struct control {
    atomic_uint ready;
    atomic_uint go;
    atomic_int inflight[GENERATIONS];
    atomic_uint over_max;
    atomic_uint max_inflight;
    atomic_uint probes;
    atomic_uint saw_open[WORKERS];
    atomic_uint victim_holds;
    atomic_uint victim_generation;
    atomic_uint took_over;
    atomic_uint took_over_generation;
    atomic_uint rejected_half_open;
    atomic_uint init_go;
    atomic_uint init_wins;
    atomic_uint init_attached;
};

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void fail(const char *what) {
    fprintf(stderr, "test_shared: %s (last error: %s)\n", what, tw_last_error_message());
    exit(1);
}

static void spin_ns(uint64_t ns) {
    uint64_t end = now_ns() + ns;
    while (now_ns() < end) {
    }
}

/* Phase 1: hammer the breaker for `run_ns`, checking the probe bound. */
static void hammer(unsigned id, void *mem, size_t size, struct control *ctl, uint64_t run_ns) {
    const tw_breaker *b = NULL;
    if (tw_breaker_attach(mem, size, &b) != TW_STATUS_OK) {
        fail("worker could not attach");
    }
    unsigned seed = 12345u + id;
    atomic_fetch_add(&ctl->ready, 1);
    while (atomic_load(&ctl->go) == 0) {
    }
    uint64_t end = now_ns() + run_ns;
    while (now_ns() < end) {
        tw_ticket t;
        tw_rejection r;
        tw_status s = tw_breaker_try_acquire(b, &t, &r);
        if (s == TW_STATUS_REJECTED) {
            if (r.state == TW_STATE_OPEN) {
                atomic_store(&ctl->saw_open[id], 1);
            }
            continue;
        }
        if (s != TW_STATUS_OK) {
            fail("try_acquire failed");
        }
        uint32_t outcome;
        if (tw_ticket_is_probe(&t)) {
            atomic_int *slot = &ctl->inflight[t.generation % GENERATIONS];
            int n = atomic_fetch_add(slot, 1) + 1;
            if ((unsigned)n > HALF_OPEN_MAX) {
                atomic_fetch_add(&ctl->over_max, 1);
            }
            unsigned seen = atomic_load(&ctl->max_inflight);
            while ((unsigned)n > seen && !atomic_compare_exchange_weak(&ctl->max_inflight, &seen, (unsigned)n)) {
            }
            atomic_fetch_add(&ctl->probes, 1);
            spin_ns(200000);
            /* Leave the count before the slot is freed by the record below. */
            atomic_fetch_sub(slot, 1);
            outcome = (rand_r(&seed) % 2) ? TW_OUTCOME_SUCCESS : TW_OUTCOME_FAILURE;
        } else {
            outcome = (rand_r(&seed) % 10 < 7) ? TW_OUTCOME_FAILURE : TW_OUTCOME_SUCCESS;
        }
        if (tw_breaker_record(b, t, outcome, NULL) != TW_STATUS_OK) {
            fail("record failed");
        }
    }
}

/* Phase 2, victim: take the probe, announce it, and wait to be killed. */
static void victim(const tw_breaker *b, struct control *ctl) {
    for (;;) {
        tw_ticket t;
        if (tw_breaker_try_acquire(b, &t, NULL) == TW_STATUS_OK && tw_ticket_is_probe(&t)) {
            atomic_store(&ctl->victim_generation, t.generation);
            atomic_store(&ctl->victim_holds, 1);
            for (;;) {
                pause();
            }
        }
    }
}

/* Phase 2, survivors: keep calling until the breaker has closed again. */
static void survivor(const tw_breaker *b, struct control *ctl) {
    uint64_t end = now_ns() + 5000000000ull;
    while (now_ns() < end) {
        tw_ticket t;
        tw_rejection r;
        tw_state s;
        if (tw_breaker_state(b, &s) != TW_STATUS_OK) {
            fail("state failed");
        }
        if (s == TW_STATE_CLOSED) {
            return;
        }
        tw_status st = tw_breaker_try_acquire(b, &t, &r);
        if (st == TW_STATUS_REJECTED) {
            if (r.state == TW_STATE_HALF_OPEN) {
                atomic_fetch_add(&ctl->rejected_half_open, 1);
            }
            continue;
        }
        if (st != TW_STATUS_OK) {
            fail("try_acquire failed");
        }
        tw_transition tr;
        if (tw_ticket_transition(&t, &tr) != TW_STATUS_OK) {
            fail("ticket_transition failed");
        }
        if (tr.changed && tr.from == TW_STATE_HALF_OPEN && tr.to == TW_STATE_HALF_OPEN) {
            atomic_fetch_add(&ctl->took_over, 1);
            unsigned none = 0;
            atomic_compare_exchange_strong(&ctl->took_over_generation, &none, tr.generation);
        }
        if (tw_breaker_record(b, t, TW_OUTCOME_SUCCESS, NULL) != TW_STATUS_OK) {
            fail("record failed");
        }
    }
    fail("the breaker did not close again within 5 s");
}

/* Phase 0: race to initialise `mem`; attach if another process won. */
static void race_to_init(void *mem, size_t size, struct control *ctl) {
    tw_breaker_config c;
    tw_breaker_config_default(&c);
    c.failure_threshold = 7;
    while (atomic_load(&ctl->init_go) == 0) {
    }
    const tw_breaker *b = NULL;
    for (;;) {
        tw_status s = tw_breaker_init_in(mem, size, &c, &b);
        if (s == TW_STATUS_OK) {
            atomic_fetch_add(&ctl->init_wins, 1);
            break;
        }
        if (s == TW_STATUS_REGION_ALREADY_INITIALISED && tw_breaker_attach(mem, size, &b) == TW_STATUS_OK) {
            break;
        }
        if (s != TW_STATUS_REGION_INITIALISING && s != TW_STATUS_REGION_ALREADY_INITIALISED) {
            fail("init_in failed");
        }
    }
    tw_breaker_config got;
    if (tw_breaker_get_config(b, &got) != TW_STATUS_OK || got.failure_threshold != 7) {
        fail("attached to a breaker with another config");
    }
    atomic_fetch_add(&ctl->init_attached, 1);
}

static void wait_all(pid_t *pids, int n, const char *phase) {
    for (int i = 0; i < n; i++) {
        int status = 0;
        if (waitpid(pids[i], &status, 0) != pids[i] || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            fprintf(stderr, "test_shared: %s worker %d ended badly (status %d)\n", phase, i, status);
            exit(1);
        }
    }
}

int main(void) {
    size_t size = 0, align = 0;
    if (tw_breaker_layout(&size, &align) != TW_STATUS_OK) {
        fail("layout");
    }
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t slot = (size + page - 1) / page * page;
    size_t total = 3 * slot + sizeof(struct control);
    unsigned char *map = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (map == MAP_FAILED) {
        fail("mmap");
    }
    void *region_a = map;
    void *region_b = map + slot;
    void *region_c = map + 2 * slot;
    struct control *ctl = (struct control *)(map + 3 * slot);
    pid_t pids[WORKERS];

    /* Phase 0. */
    for (unsigned i = 0; i < WORKERS; i++) {
        pids[i] = fork();
        if (pids[i] < 0) {
            fail("fork");
        }
        if (pids[i] == 0) {
            race_to_init(region_c, size, ctl);
            _exit(0);
        }
    }
    atomic_store(&ctl->init_go, 1);
    wait_all(pids, WORKERS, "phase 0");
    printf("phase 0: %u of %u racing processes initialised the region, %u attached\n",
           atomic_load(&ctl->init_wins), WORKERS, atomic_load(&ctl->init_attached));
    if (atomic_load(&ctl->init_wins) != 1 || atomic_load(&ctl->init_attached) != WORKERS) {
        fail("not exactly one initialiser");
    }

    /* Phase 1. */
    tw_breaker_config c;
    tw_breaker_config_default(&c);
    c.failure_threshold = 20;
    c.half_open_max = HALF_OPEN_MAX;
    c.half_open_successes = HALF_OPEN_MAX;
    c.open_timeout_ns = 5000000;  /* 5 ms */
    c.probe_timeout_ns = 5000000; /* 5 ms */
    const tw_breaker *a = NULL;
    if (tw_breaker_init_in(region_a, size, &c, &a) != TW_STATUS_OK) {
        fail("init_in");
    }
    for (unsigned i = 0; i < WORKERS; i++) {
        pids[i] = fork();
        if (pids[i] < 0) {
            fail("fork");
        }
        if (pids[i] == 0) {
            hammer(i, region_a, size, ctl, 400000000ull);
            _exit(0);
        }
    }
    while (atomic_load(&ctl->ready) < WORKERS) {
    }
    atomic_store(&ctl->go, 1);
    wait_all(pids, WORKERS, "phase 1");
    tw_snapshot snap;
    tw_breaker_snapshot(a, &snap);
    printf("phase 1: %u probes, at most %u in flight in one generation (max %u); "
           "%llu failures, %llu rejected, %u generations\n",
           atomic_load(&ctl->probes), atomic_load(&ctl->max_inflight), HALF_OPEN_MAX,
           (unsigned long long)snap.failures, (unsigned long long)snap.rejected, snap.generation);
    if (atomic_load(&ctl->over_max) != 0) {
        fail("more probes in flight than half_open_max");
    }
    if (atomic_load(&ctl->probes) == 0 || snap.generation < 2) {
        fail("the breaker never tripped and probed");
    }
    for (unsigned i = 0; i < WORKERS; i++) {
        if (atomic_load(&ctl->saw_open[i]) == 0) {
            fprintf(stderr, "test_shared: worker %u never saw the breaker open\n", i);
            return 1;
        }
    }

    /* Phase 2. */
    tw_breaker_config_default(&c);
    c.failure_threshold = 1;
    c.open_timeout_ns = 50000000;  /* 50 ms */
    c.probe_timeout_ns = 50000000; /* 50 ms */
    const tw_breaker *b = NULL;
    if (tw_breaker_open_in(region_b, size, &c, &b) != TW_STATUS_OK) {
        fail("open_in");
    }
    tw_ticket t;
    tw_breaker_try_acquire(b, &t, NULL);
    tw_breaker_record(b, t, TW_OUTCOME_FAILURE, NULL);
    pid_t v = fork();
    if (v < 0) {
        fail("fork");
    }
    if (v == 0) {
        victim(b, ctl);
    }
    while (atomic_load(&ctl->victim_holds) == 0) {
    }
    kill(v, SIGKILL);
    int status = 0;
    waitpid(v, &status, 0);
    if (!WIFSIGNALED(status)) {
        fail("the victim was not killed");
    }
    for (unsigned i = 0; i < WORKERS; i++) {
        pids[i] = fork();
        if (pids[i] < 0) {
            fail("fork");
        }
        if (pids[i] == 0) {
            survivor(b, ctl);
            _exit(0);
        }
    }
    wait_all(pids, WORKERS, "phase 2");
    tw_state s;
    tw_breaker_state(b, &s);
    unsigned victim_gen = atomic_load(&ctl->victim_generation);
    printf("phase 2: probe of generation %u lost with its process; taken over by generation %u "
           "(%u takeover(s), %u rejections while it was held); state %d\n",
           victim_gen, atomic_load(&ctl->took_over_generation), atomic_load(&ctl->took_over),
           atomic_load(&ctl->rejected_half_open), (int)s);
    if (s != TW_STATE_CLOSED) {
        fail("the breaker did not close after the takeover");
    }
    /* Exactly one process learns of each takeover; a second one happens only if the
     * first taker is itself stalled past a probe timeout, which a loaded machine allows. */
    if (atomic_load(&ctl->took_over) < 1 || atomic_load(&ctl->took_over_generation) != victim_gen + 1) {
        fail("the lost probe was not taken over by the next generation");
    }
    munmap(map, total);
    printf("test_shared: all checks passed\n");
    return 0;
}
