// tripwire::shared_bulkhead: RAII slots over a region in MAP_SHARED memory,
// errors as exceptions or std::error_code, and a child killed while holding
// a slot giving it back. Built with -std=c++17 -Wall -Wextra -Werror
// -Wold-style-cast, plainly and with sanitizers, by ffi/tests/c_api.rs.
#ifndef _DEFAULT_SOURCE
#define _DEFAULT_SOURCE  // MAP_ANONYMOUS
#endif
#include "tripwire.hpp"

#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <system_error>

static int failures = 0;

#define EXPECT(cond)                                                                       \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            std::fprintf(stderr, "%s:%d: EXPECT(%s) failed\n", __FILE__, __LINE__, #cond); \
            failures++;                                                                    \
        }                                                                                  \
    } while (0)

static void *map_shared(std::size_t size) {
    void *p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        std::perror("mmap");
        std::exit(1);
    }
    return p;
}

int main() {
    const std::size_t size = tripwire::shared_bulkhead::size_for(2);
    EXPECT(size == 64 + 2 * 16);
    try {
        (void)tripwire::shared_bulkhead::size_for(70000);
        EXPECT(false);
    } catch (const tripwire::error &e) {
        EXPECT(e.status() == TW_STATUS_INVALID_ARGUMENT);
        EXPECT(std::string(e.what()).find("`max` = 70000") != std::string::npos);
    }

    void *mem = map_shared(size);
    std::error_code ec;
    auto none = tripwire::shared_bulkhead::attach(mem, size, ec);
    EXPECT(ec == TW_STATUS_REGION_UNINITIALISED);
    EXPECT(!none);

    auto b = tripwire::shared_bulkhead::init_in(mem, size, 2);
    auto other = tripwire::shared_bulkhead::open_in(mem, size, 2, ec);
    EXPECT(ec == TW_STATUS_OK && other && other.raw() == b.raw());
    {
        auto one = b.try_acquire();
        auto two = other.try_acquire();
        EXPECT(one && two);
        EXPECT(!b.try_acquire());
        EXPECT(b.available() == 0);
        tripwire::shared_bulkhead::slot moved = std::move(one);
        EXPECT(moved && !one);
        EXPECT(moved.release());
        EXPECT(!moved.release());
        EXPECT(b.available() == 1);
    }
    EXPECT(b.available() == 2);

    // A child takes both slots and is killed holding them.
    auto *ready = static_cast<std::atomic<int> *>(map_shared(sizeof(std::atomic<int>)));
    new (ready) std::atomic<int>(0);
    pid_t child = fork();
    if (child == 0) {
        auto mine = tripwire::shared_bulkhead::attach(mem, size);
        auto x = mine.try_acquire();
        auto y = mine.try_acquire();
        ready->store((x && y) ? 1 : 2);
        for (;;) {
            pause();
        }
    }
    while (ready->load() == 0) {
    }
    EXPECT(ready->load() == 1);
    EXPECT(b.available() == 0);
    kill(child, SIGKILL);
    int status = 0;
    waitpid(child, &status, 0);
    {
        // Full: try_acquire reclaims the dead child's slots, at most one
        // pass per 10 ms (one ran when this process was refused above).
        tripwire::shared_bulkhead::slot back = b.try_acquire();
        const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(2);
        while (!back && std::chrono::steady_clock::now() < end) {
            back = b.try_acquire();
        }
        EXPECT(back);
        EXPECT(b.stats().reclaimed == 2);
    }
    EXPECT(b.reclaim() == 0);
    EXPECT(b.available() == 2);

    // Garbage in the header: an error_code, never a crash.
    std::memset(mem, 0x5a, size);
    auto garbage = tripwire::shared_bulkhead::attach(mem, size, ec);
    EXPECT(ec == TW_STATUS_REGION_INVALID && !garbage);

    munmap(ready, sizeof(std::atomic<int>));
    munmap(mem, size);
    if (failures != 0) {
        std::fprintf(stderr, "test_shared_bulkhead_cpp: %d checks failed\n", failures);
        return 1;
    }
    std::printf("test_shared_bulkhead_cpp: ok\n");
    return 0;
}
