// The C++ wrapper: RAII permits, move-only handles, both error styles,
// shared breakers, the caller's clock. Built with -std=c++17 -Wall -Wextra
// -Werror -Wconversion -Wsign-conversion -Wold-style-cast -Wshadow, plainly
// and with -fsanitize=address,undefined, by ffi/tests/c_api.rs.
#include "tripwire.hpp"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <type_traits>
#include <utility>

static int failures = 0;

#define CHECK(cond)                                                                       \
    do {                                                                                  \
        if (!(cond)) {                                                                    \
            std::fprintf(stderr, "%s:%d: CHECK(%s) failed; last error: %s\n", __FILE__,   \
                         __LINE__, #cond, tw_last_error_message());                       \
            failures++;                                                                   \
        }                                                                                 \
    } while (0)

using namespace std::chrono_literals;

static_assert(!std::is_copy_constructible_v<tripwire::permit>, "permits are move-only");
static_assert(std::is_nothrow_move_constructible_v<tripwire::permit>, "permits move without throwing");
static_assert(!std::is_copy_constructible_v<tripwire::permit_at>, "permits are move-only");
static_assert(std::is_nothrow_move_constructible_v<tripwire::permit_at>, "permits move without throwing");
static_assert(std::is_nothrow_move_assignable_v<tripwire::permit_at>, "permits move without throwing");
static_assert(!std::is_copy_constructible_v<tripwire::breaker>, "breakers are move-only");
static_assert(std::is_nothrow_copy_constructible_v<tripwire::error>, "errors copy without throwing");

// The two clocks cannot be mixed: a permit from try_acquire() records on
// CLOCK_MONOTONIC only, a permit from try_acquire_at() on the caller's only.
template <class P, class = void>
struct records_on_system_clock : std::false_type {};
template <class P>
struct records_on_system_clock<P, std::void_t<decltype(std::declval<P &>().success()),
                                              decltype(std::declval<P &>().failure()),
                                              decltype(std::declval<P &>().record(tripwire::outcome::success))>>
    : std::true_type {};
template <class P, class = void>
struct records_on_caller_clock : std::false_type {};
template <class P>
struct records_on_caller_clock<P, std::void_t<decltype(std::declval<P &>().success_at(std::uint64_t{1})),
                                              decltype(std::declval<P &>().failure_at(std::uint64_t{1})),
                                              decltype(std::declval<P &>().record_at(tripwire::outcome::success,
                                                                                     std::uint64_t{1}))>>
    : std::true_type {};
static_assert(records_on_system_clock<tripwire::permit>::value && !records_on_caller_clock<tripwire::permit>::value,
              "try_acquire() permits record on the built-in clock only");
static_assert(records_on_caller_clock<tripwire::permit_at>::value &&
                  !records_on_system_clock<tripwire::permit_at>::value,
              "try_acquire_at() permits record on the caller's clock only");
static_assert(std::is_same_v<decltype(std::declval<const tripwire::breaker &>().try_acquire_at(0)),
                             tripwire::permit_at>,
              "try_acquire_at() returns a permit_at");

static void test_errors() {
    // Exceptions.
    bool thrown = false;
    try {
        tripwire::breaker b{tripwire::config{}.half_open_max(0)};
    } catch (const tripwire::error &e) {
        thrown = true;
        CHECK(e.status() == TW_STATUS_INVALID_CONFIG);
        CHECK(e.code() == TW_STATUS_INVALID_CONFIG);
        CHECK(e.code().category() == tripwire::status_category());
        // what() is the library's message itself, nothing appended; the
        // status stays available through status() and code().
        CHECK(std::strcmp(e.what(), tw_last_error_message()) == 0);
        CHECK(std::string(e.what()).find("half_open_max = 0, expected 1 to 10") != std::string::npos);
        CHECK(std::string(e.what()).find("TW_STATUS") == std::string::npos);
        CHECK(e.code().message() == "TW_STATUS_INVALID_CONFIG");
        // A copy (as a rethrow makes) keeps the message.
        tripwire::error copy = e;
        CHECK(std::strcmp(copy.what(), e.what()) == 0 && copy.status() == e.status());
    }
    CHECK(thrown);

    thrown = false;
    try {
        tripwire::config{}.open_timeout(0ns).validate();
    } catch (const tripwire::error &e) {
        thrown = true;
        CHECK(std::string(e.what()).find("open_timeout_ns = 0, expected 1000 to") != std::string::npos);
    }
    CHECK(thrown);

    // std::error_code.
    std::error_code ec;
    tripwire::breaker bad{tripwire::config{}.failure_threshold(0), ec};
    CHECK(ec == TW_STATUS_INVALID_CONFIG);
    CHECK(ec != TW_STATUS_OK);
    CHECK(ec.message() == "TW_STATUS_INVALID_CONFIG");
    CHECK(!bad);
    // A success overwrites the earlier failure, and compares equal to
    // TW_STATUS_OK as well as to the empty error_code.
    tripwire::breaker good{tripwire::config{}, ec};
    CHECK(!ec);
    CHECK(ec == TW_STATUS_OK);
    CHECK(ec == std::error_code{});
    CHECK(ec != TW_STATUS_INVALID_CONFIG);
    CHECK(good);
    std::error_code ok = TW_STATUS_OK;
    CHECK(!ok && ok == std::error_code{});
    tripwire::config{}.validate();  // a valid config throws nothing
    tripwire::breaker windowed{tripwire::config{}.failure_threshold(0).failure_rate(0.5).min_calls(2).window(4, 1s), ec};
    CHECK(!ec);
    CHECK(windowed.current_config().raw().min_calls == 2);
    tripwire::breaker probed{tripwire::config{}.probe_timeout(5s).max_hold(60s), ec};
    CHECK(!ec && probed.current_config().raw().probe_timeout_ns == 5000000000ull);
    CHECK(probed.current_config().raw().max_hold_ns == 60000000000ull);
    tripwire::breaker slow{tripwire::config{}.slow_rate(0.5), ec};
    CHECK(ec == TW_STATUS_INVALID_CONFIG);
}

static void test_permits() {
    tripwire::breaker b{tripwire::config{}.failure_threshold(2).open_timeout(1us).half_open_max(2)};
    CHECK(b.state() == TW_STATE_CLOSED);

    // A permit dropped unrecorded counts as ignored.
    { auto p = b.try_acquire_at(10); CHECK(p); }
    CHECK(b.snapshot().ignored == 1);

    // Recorded once: the destructor then does nothing.
    {
        auto p = b.try_acquire_at(10);
        CHECK(!p.is_probe());
        CHECK(p.admitted_at() == 10);
        tw_transition t = p.failure_at(15);
        CHECK(!t.changed);
        CHECK(!p);
        CHECK(!p.success_at(16).changed);
    }
    CHECK(b.snapshot().ignored == 1 && b.snapshot().failures == 1 && b.snapshot().successes == 0);

    // Moving hands the duty over: only the last owner records.
    {
        auto p = b.try_acquire_at(10);
        tripwire::permit_at q = std::move(p);
        CHECK(!p && q);
        tw_transition t = q.record_at(tripwire::outcome::failure, 20);
        CHECK(t.changed && t.from == TW_STATE_CLOSED && t.to == TW_STATE_OPEN);
    }
    CHECK(b.snapshot().ignored == 1 && b.snapshot().failures == 2);

    // Rejected with the time left.
    {
        auto p = b.try_acquire_at(500);
        CHECK(!p);
        CHECK(p.rejection().state == TW_STATE_OPEN);
        CHECK(p.retry_after() == 520ns);
    }

    // A probe, moved into a permit that already held one: that one is ignored.
    {
        auto probe = b.try_acquire_at(2000);
        CHECK(probe && probe.is_probe());
        auto other = b.try_acquire_at(2000);
        CHECK(other && other.is_probe());
        other = std::move(probe);
        CHECK(b.snapshot().ignored == 2);
        tw_transition t = other.success_at(2100);
        CHECK(t.changed && t.from == TW_STATE_HALF_OPEN && t.to == TW_STATE_CLOSED);
    }
    CHECK(b.state() == TW_STATE_CLOSED);

    // The same with permits on the built-in clock.
    {
        tripwire::breaker m{tripwire::config{}.failure_threshold(2)};
        { auto p = m.try_acquire(); CHECK(p); }
        CHECK(m.snapshot().ignored == 1);
        auto p = m.try_acquire();
        tripwire::permit q = std::move(p);
        CHECK(!p && q);
        CHECK(!q.failure().changed && !q);
        auto r = m.try_acquire();
        auto s = m.try_acquire();
        s = std::move(r);  // the permit s held is ignored
        CHECK(m.snapshot().ignored == 2);
        CHECK(s.record(tripwire::outcome::failure).to == TW_STATE_OPEN);
    }

    // Manual modes.
    CHECK(b.force_open().to == TW_STATE_FORCED_OPEN);
    {
        auto p = b.try_acquire();
        CHECK(!p && p.rejection().retry_after_ns == UINT64_MAX);
        CHECK(p.retry_after() == std::chrono::nanoseconds::max());
    }
    CHECK(b.disable().to == TW_STATE_DISABLED);
    CHECK(b.try_acquire());
    CHECK(b.reset().to == TW_STATE_CLOSED);
    CHECK(b.current_config().raw().half_open_max == 2);

    // Breakers move too.
    tripwire::breaker moved = std::move(b);
    CHECK(moved && !b);
    CHECK(moved.try_acquire().success().to == TW_STATE_CLOSED);
}

// A permit from try_acquire_at() records at the caller's time: the cool-down
// counts from the caller's trip time, slow calls are timed on the caller's
// clock. The times are far from CLOCK_MONOTONIC's (2^62 ns, ~146 years), so
// a record that read CLOCK_MONOTONIC instead would be seen at once.
static void test_caller_clock() {
    constexpr std::uint64_t t0 = std::uint64_t{1} << 62;
    constexpr std::uint64_t ms = 1000000;
    tripwire::breaker b{tripwire::config{}.failure_threshold(1).open_timeout(1ms)};
    {
        auto p = b.try_acquire_at(t0);
        CHECK(p);
        tw_transition t = p.failure_at(t0 + 10);  // trips at t0 + 10 on the caller's clock
        CHECK(t.changed && t.to == TW_STATE_OPEN);
    }
    {
        auto early = b.try_acquire_at(t0 + 20);
        CHECK(!early);
        CHECK(early.retry_after() == 1ms - 10ns);
    }
    {
        auto probe = b.try_acquire_at(t0 + 10 + ms);
        CHECK(probe && probe.is_probe());
        CHECK(probe.success_at(t0 + 2 * ms).to == TW_STATE_CLOSED);
    }

    tripwire::breaker timed{tripwire::config{}.slow_call(1ms)};
    {
        auto p = timed.try_acquire_at(t0);
        p.success_at(t0 + 2 * ms);  // 2 ms on the caller's clock: slow
    }
    CHECK(timed.snapshot().slow == 1);
    {
        auto p = timed.try_acquire_at(t0);
        p.success_at(t0 + ms / 2);  // 0.5 ms: not slow
    }
    CHECK(timed.snapshot().slow == 1 && timed.snapshot().successes == 2);
    {
        auto p = timed.try_acquire_at(t0);
        CHECK(p.ignore().changed == false && !p);
    }
    CHECK(timed.snapshot().ignored == 1);
}

static void test_shared() {
    auto [size, align] = tripwire::breaker::layout();
    void *mem = ::operator new(size, std::align_val_t(align));
    std::memset(mem, 0, size);

    std::error_code ec;
    auto none = tripwire::breaker::attach(mem, size, ec);
    CHECK(ec != TW_STATUS_OK);
    CHECK(ec == TW_STATUS_REGION_UNINITIALISED && !none);
    bool thrown = false;
    try {
        auto b = tripwire::breaker::attach(mem, size);
    } catch (const tripwire::error &e) {
        thrown = true;
        CHECK(std::string(e.what()).find("not initialised") != std::string::npos);
    }
    CHECK(thrown);

    {
        auto a = tripwire::breaker::init_in(mem, size, tripwire::config{}.failure_threshold(1));
        auto b = tripwire::breaker::attach(mem, size);
        auto c = tripwire::breaker::open_in(mem, size, tripwire::config{}.failure_threshold(1));
        auto d = tripwire::breaker::open_in(mem, size, tripwire::config{}, ec);
        CHECK(ec == TW_STATUS_REGION_CONFIG_MISMATCH && !d);
        auto e = tripwire::breaker::attach(mem, size, ec);
        CHECK(ec == TW_STATUS_OK && e);
        CHECK(a.try_acquire().failure().to == TW_STATE_OPEN);
        CHECK(b.state() == TW_STATE_OPEN && c.state() == TW_STATE_OPEN);
    }  // Shared handles free nothing: the region is still intact.
    auto again = tripwire::breaker::attach(mem, size);
    CHECK(again.state() == TW_STATE_OPEN);
    ::operator delete(mem, std::align_val_t(align));
}

static void test_bulkhead_backoff_budget() {
    tripwire::bulkhead orders{1};
    {
        auto a = orders.try_acquire();
        CHECK(a);
        auto b = orders.try_acquire();
        CHECK(!b);
        tripwire::bulkhead::slot moved = std::move(a);
        CHECK(moved && !a);
        CHECK(orders.stats().in_flight == 1);
    }
    CHECK(orders.stats().in_flight == 0 && orders.stats().acquired == 1 && orders.stats().rejected == 1);

    tw_backoff_config c = tripwire::backoff::defaults();
    c.jitter = TW_JITTER_NONE;
    c.base_ns = 100;
    c.cap_ns = 150;
    tripwire::backoff delays{c};
    CHECK(delays.next_delay() == 100ns);
    CHECK(delays.next_delay() == 150ns);
    delays.reset();
    CHECK(delays.next_delay() == 100ns);
    c.factor = 0.0;
    bool thrown = false;
    try {
        tripwire::backoff bad{c};
    } catch (const tripwire::error &e) {
        thrown = true;
        CHECK(std::string(e.what()).find("factor = 0") != std::string::npos);
    }
    CHECK(thrown);

    tripwire::retry_budget budget;
    budget.deposit();
    CHECK(budget.try_withdraw());  // the default reserve allows retries at once
}

static void test_backpressure() {
    constexpr std::uint64_t t0 = std::uint64_t{1} << 40;
    tripwire::breaker b{tripwire::config{}};
    tw_assessment a = tripwire::http_assess(429, "7");
    CHECK(a.outcome == TW_OUTCOME_IGNORED && a.hold_ns == 7000000000u);
    {
        auto p = b.try_acquire_at(t0);
        CHECK(p.settle_at(a, t0).to == TW_STATE_OPEN && !p);
    }
    CHECK(b.hold_left_at(t0 + 2000000000u) == 5s);
    CHECK(!b.try_acquire_at(t0 + 1).operator bool());
    CHECK(b.hold_for_at(t0, 9s).changed && b.hold_left_at(t0) == 9s);
    CHECK(!b.hold_for_at(t0, 1s).changed);
    CHECK(b.hold_left_at(t0 + 9000000000u) == 0ns);
    CHECK(b.snapshot().ignored == 1 && b.snapshot().failures == 0);
    // A success settles like a record.
    {
        auto p = b.try_acquire_at(t0 + 9000000000u);
        CHECK(p && p.is_probe());
        CHECK(p.settle_at(tripwire::http_assess(200), t0 + 9000000001u).to == TW_STATE_CLOSED);
    }
    bool threw = false;
    try {
        tripwire::http_assess(1000);
    } catch (const tripwire::error &e) {
        threw = e.code() == TW_STATUS_INVALID_ARGUMENT &&
                std::strcmp(e.what(), "tw_http_assess: status = 1000, expected an HTTP status from 100 to 999") == 0;
    }
    CHECK(threw);
    std::error_code ec;
    tripwire::http_assess(0, nullptr, nullptr, nullptr, ec);
    CHECK(ec == TW_STATUS_INVALID_ARGUMENT);
}

static void test_registry() {
    tripwire::breaker orders{tripwire::config{}.failure_threshold(1)};
    tripwire::breaker books{tripwire::config{}};
    tripwire::registry r;
    CHECK(r.prometheus().empty());
    r.add("binance/orders", orders);
    r.add(std::string("binance/books"), books);
    std::error_code ec;
    CHECK(!r.add("binance/books", orders, ec) && ec == TW_STATUS_INVALID_ARGUMENT);
    bool thrown = false;
    try {
        r.add("", orders);
    } catch (const tripwire::error &e) {
        thrown = true;
        CHECK(e.status() == TW_STATUS_INVALID_ARGUMENT);
        CHECK(std::string(e.what()) == "tw_registry_add_breaker: `name` is empty");
    }
    CHECK(thrown);
    orders.try_acquire_at(10).failure_at(11);
    const std::string text = r.prometheus();
    // The whole text: what the C call gives with room to spare.
    std::size_t len = 0;
    CHECK(tw_registry_prometheus(r.get(), nullptr, 0, &len) == TW_STATUS_OK);
    CHECK(text.size() == len && text.find('\0') == std::string::npos);
    CHECK(text.find("tripwire_breaker_state{breaker=\"binance/orders\",state=\"open\"} 1\n") != std::string::npos);
    CHECK(text.find("tripwire_breaker_state{breaker=\"binance/books\",state=\"closed\"} 1\n") != std::string::npos);
    CHECK(text.back() == '\n');
    // A registry moves; the moved-from one holds nothing.
    tripwire::registry moved = std::move(r);
    CHECK(moved.prometheus() == text);
    CHECK(r.get() == nullptr);
}

int main() {
    test_errors();
    test_permits();
    test_caller_clock();
    test_shared();
    test_bulkhead_backoff_budget();
    test_backpressure();
    test_registry();
    if (failures != 0) {
        std::fprintf(stderr, "%d check(s) failed\n", failures);
        return 1;
    }
    std::printf("test_tripwire_cpp: all checks passed\n");
    return 0;
}
