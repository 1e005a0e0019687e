// A C++ program using an installed tripwire through tripwire.hpp. Prints
// one line.
#include <tripwire.hpp>

#include <cstdio>
#include <cstring>

int main() {
    if (std::strcmp(tw_version(), EXPECTED_VERSION) != 0) {
        std::fprintf(stderr, "library %s, expected %s\n", tw_version(), EXPECTED_VERSION);
        return 1;
    }
    tripwire::breaker b{tripwire::config{}.failure_threshold(1)};
    auto permit = b.try_acquire();
    if (!permit || permit.failure().to != TW_STATE_OPEN || b.try_acquire()) {
        std::fprintf(stderr, "the breaker did not trip\n");
        return 1;
    }
    std::error_code ec;
    tripwire::breaker bad{tripwire::config{}.half_open_max(0), ec};
    if (ec != TW_STATUS_INVALID_CONFIG || bad) {
        std::fprintf(stderr, "an invalid config was accepted\n");
        return 1;
    }
    std::printf("consumer (C++): tripwire %s\n", tw_version());
    return 0;
}
