/*
 * One bulkhead shared by several processes through MAP_SHARED mappings.
 *
 * 0. Bad calls: a region that is zero, too small, of a bad `max`, or
 *    corrupt; releases of receipts not held. Each a status and a message
 *    naming the field.
 * 1. Processes race to initialise one fresh region: exactly one wins.
 * 2. WORKERS processes hammer a bulkhead of MAX slots; each counts the
 *    holders in an independent shared counter while it holds a slot, and
 *    records the most it saw: never above MAX, across all processes.
 * 3. A worker holding two slots is SIGKILLed and reaped, another one is
 *    SIGKILLed and left a zombie: both keep their slots in the table, and a
 *    survivor's try_acquire gets every slot back through the reclaim pass.
 * 4. The README's example, compiled from ffi/README.md by c_api.rs, runs.
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
#include <time.h>
#include <unistd.h>

#define WORKERS 6
#define MAX 3u
#define RACERS 4

struct control {
    atomic_uint go;
    atomic_int holders;
    atomic_uint over_max;
    atomic_uint max_seen[WORKERS];
    atomic_ulong acquired[WORKERS];
    atomic_uint victim_holds;
    atomic_uint init_go;
    atomic_uint init_wins;
    atomic_uint init_attached;
};

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void die(const char *what) {
    fprintf(stderr, "test_shared_bulkhead: %s (last error: %s)\n", what, tw_last_error_message());
    exit(1);
}

static void *map_shared(size_t size) {
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        die("mmap");
    }
    return p;
}

static size_t region_size(uint32_t max) {
    size_t size = 0, align = 0;
    if (tw_shared_bulkhead_size(max, &size, &align) != TW_STATUS_OK || align != 64) {
        die("tw_shared_bulkhead_size");
    }
    return size;
}

static void wait_all(const pid_t *pids, int n) {
    for (int i = 0; i < n; i++) {
        int status = 0;
        if (waitpid(pids[i], &status, 0) != pids[i] || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            die("a child failed");
        }
    }
}

static int message_has(const char *needle) {
    return strstr(tw_last_error_message(), needle) != NULL;
}

/* 0. Bad calls. */
static void bad_calls(void) {
    size_t size = region_size(MAX);
    CHECK(size == 64 + 16 * MAX);
    size_t s, a;
    CHECK_STATUS(tw_shared_bulkhead_size(65537, &s, &a), TW_STATUS_INVALID_ARGUMENT);
    CHECK(message_has("`max` = 65537, expected 0 to 65536"));
    CHECK_STATUS(tw_shared_bulkhead_size(1, NULL, &a), TW_STATUS_NULL_ARGUMENT);

    unsigned char *mem = map_shared(4096);
    const tw_shared_bulkhead *b = NULL;
    CHECK_STATUS(tw_shared_bulkhead_attach(mem, size, &b), TW_STATUS_REGION_UNINITIALISED);
    CHECK_STATUS(tw_shared_bulkhead_attach(NULL, size, &b), TW_STATUS_NULL_ARGUMENT);
    CHECK_STATUS(tw_shared_bulkhead_init_in(mem + 8, size, MAX, &b), TW_STATUS_REGION_MISALIGNED);
    CHECK_STATUS(tw_shared_bulkhead_init_in(mem, size - 1, MAX, &b), TW_STATUS_REGION_TOO_SMALL);
    CHECK_STATUS(tw_shared_bulkhead_init_in(mem, 4096, 70000, &b), TW_STATUS_INVALID_ARGUMENT);
    CHECK(message_has("tw_shared_bulkhead_init_in: `max` = 70000"));
    CHECK(b == NULL);

    CHECK_STATUS(tw_shared_bulkhead_init_in(mem, size, MAX, &b), TW_STATUS_OK);
    CHECK(b != NULL);
    CHECK_STATUS(tw_shared_bulkhead_init_in(mem, size, MAX, &b), TW_STATUS_REGION_ALREADY_INITIALISED);
    const tw_shared_bulkhead *again = NULL;
    CHECK_STATUS(tw_shared_bulkhead_open_in(mem, size, MAX + 1, &again), TW_STATUS_REGION_CONFIG_MISMATCH);
    CHECK(message_has("`max` = 3, not the 4 asked for"));
    CHECK_STATUS(tw_shared_bulkhead_open_in(mem, size, MAX, &again), TW_STATUS_OK);
    CHECK(again == b);

    /* A receipt released twice, an index out of range, a forged holder. */
    tw_shared_slot slot;
    CHECK_STATUS(tw_shared_bulkhead_try_acquire(b, &slot), TW_STATUS_OK);
    CHECK((uint32_t)(slot.holder >> 40) == (uint32_t)getpid());
    CHECK_STATUS(tw_shared_bulkhead_release(b, slot), TW_STATUS_OK);
    CHECK_STATUS(tw_shared_bulkhead_release(b, slot), TW_STATUS_INVALID_ARGUMENT);
    CHECK(message_has("is not held by this receipt"));
    tw_shared_slot out_of_range = {MAX, slot.holder, slot.releases};
    CHECK_STATUS(tw_shared_bulkhead_release(b, out_of_range), TW_STATUS_INVALID_ARGUMENT);
    CHECK(message_has("`slot.index` = 3 is out of range"));
    tw_shared_slot forged = {0, 5, 0};
    CHECK_STATUS(tw_shared_bulkhead_release(b, forged), TW_STATUS_INVALID_ARGUMENT);
    CHECK(message_has("`slot.holder` = 0x5 names no holder"));
    uint32_t avail = 0;
    CHECK_STATUS(tw_shared_bulkhead_available(b, &avail), TW_STATUS_OK);
    CHECK(avail == MAX);
    CHECK_STATUS(tw_shared_bulkhead_try_acquire(b, NULL), TW_STATUS_NULL_ARGUMENT);

    /* Corruption found by a later attach: a `max` that disagrees with the
     * size, a garbage slot word, a wrong magic, another version. */
    uint32_t max_field;
    memcpy(&max_field, mem + 12, 4);
    uint32_t bigger = max_field + 1;
    memcpy(mem + 12, &bigger, 4);
    CHECK_STATUS(tw_shared_bulkhead_attach(mem, 4096, &again), TW_STATUS_REGION_CORRUPT);
    CHECK(message_has("`size` = 112 for `max` = 4"));
    memcpy(mem + 12, &max_field, 4);
    uint64_t garbage = 0xff;
    memcpy(mem + 64 + 8, &garbage, 8);
    CHECK_STATUS(tw_shared_bulkhead_attach(mem, size, &again), TW_STATUS_REGION_CORRUPT);
    CHECK(message_has("`slot[1]`"));
    garbage = 0;
    memcpy(mem + 64 + 8, &garbage, 8);
    uint32_t version = 99;
    memcpy(mem + 8, &version, 4);
    CHECK_STATUS(tw_shared_bulkhead_attach(mem, size, &again), TW_STATUS_REGION_VERSION_MISMATCH);
    uint64_t magic = 0x1234;
    memcpy(mem, &magic, 8);
    CHECK_STATUS(tw_shared_bulkhead_attach(mem, size, &again), TW_STATUS_REGION_INVALID);
    munmap(mem, 4096);
}

/* 1. RACERS processes race to initialise one fresh region. */
static void racing_initialisers(struct control *ctl) {
    size_t size = region_size(MAX);
    void *mem = map_shared(size);
    pid_t pids[RACERS];
    for (int i = 0; i < RACERS; i++) {
        pids[i] = fork();
        if (pids[i] < 0) {
            die("fork");
        }
        if (pids[i] == 0) {
            while (atomic_load(&ctl->init_go) == 0) {
            }
            const tw_shared_bulkhead *b = NULL;
            for (;;) {
                tw_status s = tw_shared_bulkhead_init_in(mem, size, MAX, &b);
                if (s == TW_STATUS_OK) {
                    atomic_fetch_add(&ctl->init_wins, 1);
                    break;
                }
                if (s == TW_STATUS_REGION_ALREADY_INITIALISED) {
                    if (tw_shared_bulkhead_attach(mem, size, &b) != TW_STATUS_OK) {
                        die("attach after losing the race");
                    }
                    atomic_fetch_add(&ctl->init_attached, 1);
                    break;
                }
                if (s != TW_STATUS_REGION_INITIALISING) {
                    die("init_in");
                }
            }
            _exit(0);
        }
    }
    atomic_store(&ctl->init_go, 1);
    wait_all(pids, RACERS);
    CHECK(atomic_load(&ctl->init_wins) == 1);
    CHECK(atomic_load(&ctl->init_attached) == RACERS - 1);
    munmap(mem, size);
}

/* 2. A worker: take slots for `run_ns`, counting holders while it holds one. */
static void worker(unsigned id, void *mem, size_t size, struct control *ctl, uint64_t run_ns) {
    const tw_shared_bulkhead *b = NULL;
    if (tw_shared_bulkhead_attach(mem, size, &b) != TW_STATUS_OK) {
        die("worker could not attach");
    }
    while (atomic_load(&ctl->go) == 0) {
    }
    uint64_t end = now_ns() + run_ns;
    unsigned long mine = 0;
    while (now_ns() < end) {
        tw_shared_slot slot;
        tw_status s = tw_shared_bulkhead_try_acquire(b, &slot);
        if (s == TW_STATUS_REJECTED) {
            continue;
        }
        if (s != TW_STATUS_OK) {
            die("try_acquire failed");
        }
        mine++;
        int n = atomic_fetch_add(&ctl->holders, 1) + 1;
        if ((unsigned)n > MAX) {
            atomic_fetch_add(&ctl->over_max, 1);
        }
        if ((unsigned)n > atomic_load(&ctl->max_seen[id])) {
            atomic_store(&ctl->max_seen[id], (unsigned)n);
        }
        uint64_t hold_end = now_ns() + 20000;
        while (now_ns() < hold_end) {
        }
        /* Leave the count before the slot is freed by the release below. */
        atomic_fetch_sub(&ctl->holders, 1);
        if (tw_shared_bulkhead_release(b, slot) != TW_STATUS_OK) {
            die("a holder's own release was refused");
        }
    }
    atomic_store(&ctl->acquired[id], mine);
}

static void cap_across_processes(struct control *ctl) {
    size_t size = region_size(MAX);
    void *mem = map_shared(size);
    const tw_shared_bulkhead *b = NULL;
    CHECK_STATUS(tw_shared_bulkhead_init_in(mem, size, MAX, &b), TW_STATUS_OK);
    pid_t pids[WORKERS];
    for (unsigned i = 0; i < WORKERS; i++) {
        pids[i] = fork();
        if (pids[i] < 0) {
            die("fork");
        }
        if (pids[i] == 0) {
            worker(i, mem, size, ctl, 400000000u);
            _exit(0);
        }
    }
    atomic_store(&ctl->go, 1);
    wait_all(pids, WORKERS);
    unsigned seen = 0;
    unsigned long acquired = 0;
    for (unsigned i = 0; i < WORKERS; i++) {
        unsigned m = atomic_load(&ctl->max_seen[i]);
        seen = m > seen ? m : seen;
        acquired += atomic_load(&ctl->acquired[i]);
    }
    printf("test_shared_bulkhead: %u workers, max %u: most holders seen %u, %lu acquires\n", WORKERS, MAX, seen,
           acquired);
    CHECK(atomic_load(&ctl->over_max) == 0);
    CHECK(seen <= MAX);
    CHECK(seen >= 2); /* the workers did overlap */
    tw_shared_bulkhead_stats st;
    CHECK_STATUS(tw_shared_bulkhead_snapshot(b, &st), TW_STATUS_OK);
    CHECK(st.max == MAX && st.held == 0);
    CHECK(st.acquired == acquired);
    CHECK(st.reclaimed == 0); /* nobody died */
    munmap(mem, size);
}

/* 3. A victim takes `n` slots, says so, and waits to be killed. */
static pid_t victim(const tw_shared_bulkhead *b, struct control *ctl, unsigned n) {
    atomic_store(&ctl->victim_holds, 0);
    pid_t v = fork();
    if (v < 0) {
        die("fork");
    }
    if (v == 0) {
        for (unsigned i = 0; i < n; i++) {
            tw_shared_slot slot;
            if (tw_shared_bulkhead_try_acquire(b, &slot) != TW_STATUS_OK) {
                die("the victim got no slot");
            }
        }
        atomic_store(&ctl->victim_holds, 1);
        for (;;) {
            pause();
        }
    }
    while (atomic_load(&ctl->victim_holds) == 0) {
    }
    return v;
}

static void killed_holders_give_their_slots_back(struct control *ctl) {
    size_t size = region_size(MAX);
    void *mem = map_shared(size);
    const tw_shared_bulkhead *b = NULL;
    CHECK_STATUS(tw_shared_bulkhead_init_in(mem, size, MAX, &b), TW_STATUS_OK);

    pid_t reaped = victim(b, ctl, 2);
    pid_t zombie = victim(b, ctl, 1);
    uint32_t avail = 99;
    CHECK_STATUS(tw_shared_bulkhead_available(b, &avail), TW_STATUS_OK);
    CHECK(avail == 0);
    kill(reaped, SIGKILL);
    int status = 0;
    CHECK(waitpid(reaped, &status, 0) == reaped && WIFSIGNALED(status));
    kill(zombie, SIGKILL);
    /* Not reaped yet: wait until it is a zombie (waitid with WNOWAIT leaves it one). */
    siginfo_t info;
    memset(&info, 0, sizeof info);
    CHECK(waitid(P_PID, (id_t)zombie, &info, WEXITED | WNOWAIT) == 0);

    /* The dead keep their slots in the table until a reclaim pass. */
    CHECK_STATUS(tw_shared_bulkhead_available(b, &avail), TW_STATUS_OK);
    CHECK(avail == 0);

    /* A survivor (a fresh process) gets all three slots back by acquiring. */
    pid_t survivor = fork();
    if (survivor < 0) {
        die("fork");
    }
    if (survivor == 0) {
        const tw_shared_bulkhead *mine = NULL;
        if (tw_shared_bulkhead_attach(mem, size, &mine) != TW_STATUS_OK) {
            die("survivor attach");
        }
        tw_shared_slot got[MAX];
        unsigned n = 0;
        uint64_t end = now_ns() + 2000000000u;
        while (n < MAX && now_ns() < end) {
            if (tw_shared_bulkhead_try_acquire(mine, &got[n]) == TW_STATUS_OK) {
                n++;
            }
        }
        if (n != MAX) {
            die("the killed workers' slots did not come back");
        }
        tw_shared_slot extra;
        if (tw_shared_bulkhead_try_acquire(mine, &extra) != TW_STATUS_REJECTED) {
            die("a fourth slot");
        }
        for (unsigned i = 0; i < n; i++) {
            if (tw_shared_bulkhead_release(mine, got[i]) != TW_STATUS_OK) {
                die("survivor release");
            }
        }
        _exit(0);
    }
    wait_all(&survivor, 1);
    tw_shared_bulkhead_stats st;
    CHECK_STATUS(tw_shared_bulkhead_snapshot(b, &st), TW_STATUS_OK);
    CHECK(st.reclaimed == 3);
    CHECK(st.held == 0);
    CHECK(waitpid(zombie, &status, 0) == zombie);

    /* The explicit pass: a victim killed and reaped, reclaimed at once. */
    pid_t third = victim(b, ctl, 1);
    kill(third, SIGKILL);
    waitpid(third, &status, 0);
    uint32_t freed = 0;
    CHECK_STATUS(tw_shared_bulkhead_reclaim(b, &freed), TW_STATUS_OK);
    CHECK(freed == 1);
    /* Our own slots are never reclaimed: we are alive. */
    tw_shared_slot mine;
    CHECK_STATUS(tw_shared_bulkhead_try_acquire(b, &mine), TW_STATUS_OK);
    CHECK_STATUS(tw_shared_bulkhead_reclaim(b, &freed), TW_STATUS_OK);
    CHECK(freed == 0);
    CHECK_STATUS(tw_shared_bulkhead_release(b, mine), TW_STATUS_OK);
    munmap(mem, size);
}

int main(void) {
    struct control *ctl = map_shared(sizeof *ctl);
    memset(ctl, 0, sizeof *ctl);
    bad_calls();
    racing_initialisers(ctl);
    cap_across_processes(ctl);
    killed_holders_give_their_slots_back(ctl);
    munmap(ctl, sizeof *ctl);
    if (failures != 0) {
        fprintf(stderr, "test_shared_bulkhead: %d checks failed\n", failures);
        return 1;
    }
    printf("test_shared_bulkhead: ok\n");
    return 0;
}
