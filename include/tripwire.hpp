// tripwire.hpp: header-only C++17 wrapper over the C API in tripwire.h.
//
// - tripwire::breaker owns a breaker made on the heap, or refers to one in
//   shared memory (never freeing it); move-only.
// - breaker::try_acquire() returns a tripwire::permit: a move-only RAII
//   value that records TW_OUTCOME_IGNORED when destroyed unless an outcome
//   was recorded, so an early return or an exception never leaves a probe
//   slot taken. No allocation, no exception on the hot path.
// - breaker::try_acquire_at(now_ns), for callers with their own clock,
//   returns a tripwire::permit_at instead, which records only through
//   tw_breaker_record_at (success_at(now_ns), failure_at(now_ns)): it has
//   no success() or failure(), so the two clocks cannot be mixed by mistake.
// - Admission and recording go through tripwire.h's inline fast path
//   (tw_breaker_try_acquire_fast, tw_breaker_record_fast and their _at
//   forms): a Closed breaker that needs no counting, timing or window
//   costs no call into the library; the rest calls it as before.
// - tripwire::bulkhead (with an RAII slot), tripwire::backoff and
//   tripwire::retry_budget wrap the other C types the same way;
//   tripwire::shared_bulkhead refers to a bulkhead in shared memory (one
//   cap for every process of a host; RAII slots too).
// - tripwire::registry names breakers and gives their Prometheus text as a
//   std::string (tw_registry_prometheus).
// - Config structs carry struct_size (see tripwire.h): the wrappers fill
//   them with the _default() functions, which set it.
// - Errors (bad config, bad shared region) throw tripwire::error (a
//   std::system_error whose what() is tw_last_error_message() and whose
//   status() / code() is the tw_status), or, with the overloads taking a
//   std::error_code&, set it instead. tw_status values compare with
//   std::error_code directly; success sets the empty std::error_code{},
//   which compares equal to TW_STATUS_OK.
//
// Example:
//   tripwire::breaker b{tripwire::config{}.failure_threshold(3)};
//   if (auto p = b.try_acquire()) {
//       bool ok = send_order();
//       ok ? p.success() : p.failure();
//   } else {
//       defer_for(p.retry_after());
//   }
#ifndef TRIPWIRE_HPP
#define TRIPWIRE_HPP

#include "tripwire.h"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <system_error>
#include <type_traits>
#include <utility>

namespace std {
template <>
struct is_error_code_enum<tw_status> : true_type {};
}  // namespace std

namespace tripwire {

/// The error category of tw_status codes; messages are the status names.
class status_category_t final : public std::error_category {
public:
    const char *name() const noexcept override { return "tripwire"; }
    std::string message(int value) const override {
        return tw_status_name(static_cast<std::uint32_t>(value));
    }
};

inline const std::error_category &status_category() noexcept {
    static const status_category_t category;
    return category;
}

}  // namespace tripwire

/// Found by argument-dependent lookup: `std::error_code ec = TW_STATUS_...;`.
/// TW_STATUS_OK is the empty std::error_code{} (value 0, system category),
/// the value every successful standard-library call leaves behind, so a
/// success compares equal both to std::error_code{} and to TW_STATUS_OK.
/// Every other status is in tripwire::status_category().
inline std::error_code make_error_code(tw_status s) noexcept {
    if (s == TW_STATUS_OK) {
        return {};
    }
    return {static_cast<int>(s), tripwire::status_category()};
}

namespace tripwire {

/// A failed call: what() is the library's explanation, as
/// tw_last_error_message() gave it (e.g. "tw_breaker_new: invalid breaker
/// config: half_open_max = 0, expected 1 to 10"); status() and code() give
/// the tw_status, and code().message() its name ("TW_STATUS_INVALID_CONFIG").
class error : public std::system_error {
public:
    explicit error(tw_status s) : std::system_error(make_error_code(s)), message_(tw_last_error_message()) {}
    /// The library's message alone (std::system_error would append the
    /// status name to it).
    const char *what() const noexcept override { return message_.what(); }
    tw_status status() const noexcept { return static_cast<tw_status>(code().value()); }

private:
    // A std::runtime_error keeps the copy in a reference-counted string, so
    // copying an error (as throw and catch may) never throws.
    std::runtime_error message_;
};

namespace detail {
inline void throw_if_failed(const std::error_code &ec) {
    if (ec) {
        throw error(static_cast<tw_status>(ec.value()));
    }
}
inline bool set(std::error_code &ec, tw_status s) noexcept {
    ec = make_error_code(s);
    return s == TW_STATUS_OK;
}
/// A duration as the library's nanoseconds (a negative one is 0).
inline std::uint64_t to_ns(std::chrono::nanoseconds d) noexcept {
    return d.count() < 0 ? 0 : static_cast<std::uint64_t>(d.count());
}
/// The library's nanoseconds as a duration, saturating at nanoseconds::max().
inline std::chrono::nanoseconds from_ns(std::uint64_t ns) noexcept {
    using rep = std::chrono::nanoseconds::rep;
    const auto max = static_cast<std::uint64_t>(std::chrono::nanoseconds::max().count());
    return std::chrono::nanoseconds(static_cast<rep>(ns > max ? max : ns));
}
}  // namespace detail

/// Breaker settings, starting from tw_breaker_config_default(). Checked when
/// a breaker is made from them (or by validate()).
class config {
public:
    config() noexcept { tw_breaker_config_default(&raw_); }

    config &failure_threshold(std::uint32_t n) noexcept { raw_.failure_threshold = n; return *this; }
    config &open_timeout(std::chrono::nanoseconds d) noexcept { raw_.open_timeout_ns = ns(d); return *this; }
    config &open_timeout_max(std::chrono::nanoseconds d) noexcept { raw_.open_timeout_max_ns = ns(d); return *this; }
    config &open_timeout_growth(double f) noexcept { raw_.open_timeout_growth = f; return *this; }
    config &open_timeout_jitter(double f) noexcept { raw_.open_timeout_jitter = f; return *this; }
    config &jitter_seed(std::uint64_t s) noexcept { raw_.jitter_seed = s; return *this; }
    config &half_open_max(std::uint32_t n) noexcept { raw_.half_open_max = n; return *this; }
    config &half_open_successes(std::uint32_t n) noexcept { raw_.half_open_successes = n; return *this; }
    config &count_successes(bool on) noexcept { raw_.count_successes = on ? 1u : 0u; return *this; }
    config &window(std::uint32_t buckets, std::chrono::nanoseconds width) noexcept {
        raw_.window_buckets = buckets;
        raw_.window_bucket_ns = ns(width);
        return *this;
    }
    config &min_calls(std::uint32_t n) noexcept { raw_.min_calls = n; return *this; }
    config &failure_rate(double rate) noexcept { raw_.failure_rate = rate; return *this; }
    config &slow_call(std::chrono::nanoseconds d) noexcept { raw_.slow_call_ns = ns(d); return *this; }
    config &slow_rate(double rate) noexcept { raw_.slow_rate = rate; return *this; }
    config &probe_timeout(std::chrono::nanoseconds d) noexcept { raw_.probe_timeout_ns = ns(d); return *this; }
    config &max_hold(std::chrono::nanoseconds d) noexcept { raw_.max_hold_ns = ns(d); return *this; }

    /// Throws tripwire::error (TW_STATUS_INVALID_CONFIG) naming the bad field.
    void validate() const { detail::throw_if_failed(make_error_code(tw_breaker_config_validate(&raw_))); }

    const tw_breaker_config &raw() const noexcept { return raw_; }
    tw_breaker_config &raw() noexcept { return raw_; }

private:
    static std::uint64_t ns(std::chrono::nanoseconds d) noexcept {
        return detail::to_ns(d);
    }
    tw_breaker_config raw_;
};

/// How a call ended.
enum class outcome : std::uint32_t {
    success = TW_OUTCOME_SUCCESS,
    failure = TW_OUTCOME_FAILURE,
    ignored = TW_OUTCOME_IGNORED,
};

class breaker;

namespace detail {

/// What permit and permit_at share: the breaker to record with (NULL once
/// recorded, or if the call was refused), the ticket and the rejection.
class permit_base {
public:
    /// Whether the call was admitted and its outcome is still to be recorded.
    explicit operator bool() const noexcept { return breaker_ != nullptr; }

    /// The ticket of an admitted call.
    const tw_ticket &ticket() const noexcept { return ticket_; }
    /// Whether an admitted call is a Half-Open probe.
    bool is_probe() const noexcept { return tw_ticket_is_probe(&ticket_); }
    /// Why the call was refused (meaningful when it was).
    const tw_rejection &rejection() const noexcept { return rejection_; }
    /// Time until a probe may be admitted; nanoseconds::max() when forced open.
    std::chrono::nanoseconds retry_after() const noexcept { return detail::from_ns(rejection_.retry_after_ns); }

protected:
    permit_base() noexcept : ticket_{}, rejection_{} {}
    permit_base(permit_base &&other) noexcept
        : breaker_(std::exchange(other.breaker_, nullptr)), ticket_(other.ticket_),
          rejection_(other.rejection_) {}
    permit_base(const permit_base &) = delete;
    permit_base &operator=(const permit_base &) = delete;
    permit_base &operator=(permit_base &&) = delete;
    ~permit_base() = default;

    /// Takes over `other`'s duty to record (this one has recorded already).
    void take(permit_base &other) noexcept {
        breaker_ = std::exchange(other.breaker_, nullptr);
        ticket_ = other.ticket_;
        rejection_ = other.rejection_;
    }

    const tw_breaker *breaker_ = nullptr;
    tw_ticket ticket_;
    tw_rejection rejection_;
};

}  // namespace detail

/// The answer of breaker::try_acquire(), on the built-in clock
/// (CLOCK_MONOTONIC): admitted (true) with a ticket to record, or rejected
/// (false) with the reason. Records through tw_breaker_record, and
/// TW_OUTCOME_IGNORED on destruction if admitted and not yet recorded.
/// Move-only; never allocates.
class permit : public detail::permit_base {
public:
    permit(permit &&) noexcept = default;
    permit &operator=(permit &&other) noexcept {
        if (this != &other) {
            finish(outcome::ignored);
            take(other);
        }
        return *this;
    }
    ~permit() { finish(outcome::ignored); }

    /// Records the outcome (once; later calls do nothing) and returns the
    /// transition it caused.
    tw_transition record(outcome o) noexcept { return finish(o); }
    tw_transition success() noexcept { return finish(outcome::success); }
    tw_transition failure() noexcept { return finish(outcome::failure); }
    tw_transition ignore() noexcept { return finish(outcome::ignored); }
    /// Records what http_assess() made of the response (once): its outcome,
    /// and a hold if the server asked for one (tw_breaker_settle).
    tw_transition settle(const tw_assessment &a) noexcept {
        tw_transition t{};
        if (breaker_ != nullptr) {
            // Cannot fail: the handle is live, and an outcome that is no
            // tw_outcome records nothing.
            tw_breaker_settle(std::exchange(breaker_, nullptr), ticket_, a.outcome, a.hold_ns, &t);
        }
        return t;
    }

private:
    friend class breaker;
    permit() noexcept = default;

    tw_transition finish(outcome o) noexcept {
        tw_transition t{};
        if (breaker_ != nullptr) {
            // Cannot fail: the handle is live and `o` is a valid outcome.
            // An ignored outcome never reads the clock.
            tw_breaker_record_fast(std::exchange(breaker_, nullptr), ticket_,
                              static_cast<std::uint32_t>(o), &t);
        }
        return t;
    }
};

/// The answer of breaker::try_acquire_at(now_ns), on the caller's own
/// clock: as permit, but every outcome goes through tw_breaker_record_at
/// with a time the caller gives (success_at, failure_at, record_at), so
/// that a breaker fed by the caller's clock never sees CLOCK_MONOTONIC.
/// ignore() and the destructor record TW_OUTCOME_IGNORED with the time of
/// admission (an ignored outcome reads no time). Move-only; never allocates.
class permit_at : public detail::permit_base {
public:
    permit_at(permit_at &&other) noexcept : permit_base(std::move(other)), admitted_at_(other.admitted_at_) {}
    permit_at &operator=(permit_at &&other) noexcept {
        if (this != &other) {
            ignore();
            take(other);
            admitted_at_ = other.admitted_at_;
        }
        return *this;
    }
    ~permit_at() { ignore(); }

    /// Records the outcome at `now_ns` on the caller's clock (once; later
    /// calls do nothing) and returns the transition it caused.
    tw_transition record_at(outcome o, std::uint64_t now_ns) noexcept {
        tw_transition t{};
        if (breaker_ != nullptr) {
            // Cannot fail: the handle is live and `o` is a valid outcome.
            tw_breaker_record_at_fast(std::exchange(breaker_, nullptr), now_ns, ticket_,
                                 static_cast<std::uint32_t>(o), &t);
        }
        return t;
    }
    tw_transition success_at(std::uint64_t now_ns) noexcept { return record_at(outcome::success, now_ns); }
    tw_transition failure_at(std::uint64_t now_ns) noexcept { return record_at(outcome::failure, now_ns); }
    tw_transition ignore() noexcept { return record_at(outcome::ignored, admitted_at_); }
    /// permit::settle at `now_ns` on the caller's clock.
    tw_transition settle_at(const tw_assessment &a, std::uint64_t now_ns) noexcept {
        tw_transition t{};
        if (breaker_ != nullptr) {
            tw_breaker_settle_at(std::exchange(breaker_, nullptr), now_ns, ticket_, a.outcome, a.hold_ns, &t);
        }
        return t;
    }

    /// The caller's time given to try_acquire_at().
    std::uint64_t admitted_at() const noexcept { return admitted_at_; }

private:
    friend class breaker;
    explicit permit_at(std::uint64_t now_ns) noexcept : admitted_at_(now_ns) {}

    std::uint64_t admitted_at_;
};

/// A circuit breaker: owned (made from a config, freed on destruction) or
/// shared (in memory mapped by several processes, never freed). Move-only.
/// Every member but construction, assignment and destruction is
/// thread-safe and never throws.
class breaker {
public:
    /// A heap breaker; throws tripwire::error if the config is invalid.
    explicit breaker(const config &c) { detail::throw_if_failed(make(c)); }
    /// A heap breaker; on failure sets `ec` and leaves the breaker empty.
    breaker(const config &c, std::error_code &ec) noexcept { ec = make(c); }

    /// Attaches to a breaker another process initialised in `mem`.
    static breaker attach(void *mem, std::size_t len) { return checked(shared(tw_breaker_attach, mem, len)); }
    static breaker attach(void *mem, std::size_t len, std::error_code &ec) noexcept {
        return shared(tw_breaker_attach, mem, len, ec);
    }
    /// Initialises a breaker in zero-filled shared memory.
    static breaker init_in(void *mem, std::size_t len, const config &c) {
        std::error_code ec;
        return checked(init_in(mem, len, c, ec), ec);
    }
    static breaker init_in(void *mem, std::size_t len, const config &c, std::error_code &ec) noexcept {
        breaker b;
        detail::set(ec, tw_breaker_init_in(mem, len, &c.raw(), &b.handle_));
        return b;
    }
    /// Initialises the shared breaker if nobody has, else attaches to it.
    static breaker open_in(void *mem, std::size_t len, const config &c) {
        std::error_code ec;
        return checked(open_in(mem, len, c, ec), ec);
    }
    static breaker open_in(void *mem, std::size_t len, const config &c, std::error_code &ec) noexcept {
        breaker b;
        detail::set(ec, tw_breaker_open_in(mem, len, &c.raw(), &b.handle_));
        return b;
    }
    /// The size and alignment shared memory for one breaker needs.
    static std::pair<std::size_t, std::size_t> layout() noexcept {
        std::size_t size = 0, align = 0;
        tw_breaker_layout(&size, &align);
        return {size, align};
    }

    breaker(breaker &&other) noexcept
        : owned_(std::exchange(other.owned_, nullptr)), handle_(std::exchange(other.handle_, nullptr)) {}
    breaker &operator=(breaker &&other) noexcept {
        if (this != &other) {
            tw_breaker_free(owned_);
            owned_ = std::exchange(other.owned_, nullptr);
            handle_ = std::exchange(other.handle_, nullptr);
        }
        return *this;
    }
    breaker(const breaker &) = delete;
    breaker &operator=(const breaker &) = delete;
    ~breaker() { tw_breaker_free(owned_); }

    /// Whether this holds a breaker (false after a failed error_code
    /// construction or a move).
    explicit operator bool() const noexcept { return handle_ != nullptr; }
    const tw_breaker *get() const noexcept { return handle_; }

    /// Asks to make a call (reads CLOCK_MONOTONIC only when open).
    permit try_acquire() const noexcept {
        permit p;
        if (tw_breaker_try_acquire_fast(handle_, &p.ticket_, &p.rejection_) == TW_STATUS_OK) {
            p.breaker_ = handle_;
        }
        return p;
    }
    /// Asks to make a call at the caller's own time (see
    /// tw_breaker_try_acquire_at); record its outcome with the same clock
    /// through the permit_at. One breaker should see one clock: use either
    /// try_acquire() or try_acquire_at() with it, not both.
    permit_at try_acquire_at(std::uint64_t now_ns) const noexcept {
        permit_at p{now_ns};
        if (tw_breaker_try_acquire_at_fast(handle_, now_ns, &p.ticket_, &p.rejection_) == TW_STATUS_OK) {
            p.breaker_ = handle_;
        }
        return p;
    }

    tw_state state() const noexcept {
        tw_state s = TW_STATE_FORCED_OPEN;
        tw_breaker_state(handle_, &s);
        return s;
    }
    tw_snapshot snapshot() const noexcept {
        tw_snapshot s{};
        tw_breaker_snapshot(handle_, &s);
        return s;
    }
    config current_config() const noexcept {
        config c;
        tw_breaker_get_config(handle_, &c.raw());
        return c;
    }
    tw_transition force_open() const noexcept { return manual(tw_breaker_force_open); }
    tw_transition disable() const noexcept { return manual(tw_breaker_disable); }
    tw_transition reset() const noexcept { return manual(tw_breaker_reset); }

    /// Holds the breaker open for `d` (at most an hour), as a server's
    /// Retry-After asks (tw_breaker_hold_for); `changed` is false when a
    /// hold at least as long is in place or an operator's mode rules.
    tw_transition hold_for(std::chrono::nanoseconds d) const noexcept {
        tw_transition t{};
        tw_breaker_hold_for(handle_, detail::to_ns(d), &t);
        return t;
    }
    tw_transition hold_for_at(std::uint64_t now_ns, std::chrono::nanoseconds d) const noexcept {
        tw_transition t{};
        tw_breaker_hold_for_at(handle_, now_ns, detail::to_ns(d), &t);
        return t;
    }
    /// The time left on the hold in place; zero when not held.
    std::chrono::nanoseconds hold_left() const noexcept {
        std::uint64_t left = 0;
        tw_breaker_hold_left(handle_, &left);
        return detail::from_ns(left);
    }
    std::chrono::nanoseconds hold_left_at(std::uint64_t now_ns) const noexcept {
        std::uint64_t left = 0;
        tw_breaker_hold_left_at(handle_, now_ns, &left);
        return detail::from_ns(left);
    }

private:
    breaker() noexcept = default;

    std::error_code make(const config &c) noexcept {
        tw_status s = tw_breaker_new(&c.raw(), &owned_);
        handle_ = owned_;
        return make_error_code(s);
    }
    using attach_fn = tw_status (*)(void *, std::size_t, const tw_breaker **);
    static breaker shared(attach_fn f, void *mem, std::size_t len, std::error_code &ec) noexcept {
        breaker b;
        detail::set(ec, f(mem, len, &b.handle_));
        return b;
    }
    static std::pair<breaker, std::error_code> shared(attach_fn f, void *mem, std::size_t len) noexcept {
        std::error_code ec;
        breaker b = shared(f, mem, len, ec);
        return {std::move(b), ec};
    }
    static breaker checked(std::pair<breaker, std::error_code> r) {
        detail::throw_if_failed(r.second);
        return std::move(r.first);
    }
    static breaker checked(breaker b, const std::error_code &ec) {
        detail::throw_if_failed(ec);
        return b;
    }
    tw_transition manual(tw_status (*f)(const tw_breaker *, tw_transition *)) const noexcept {
        tw_transition t{};
        f(handle_, &t);
        return t;
    }

    tw_breaker *owned_ = nullptr;
    const tw_breaker *handle_ = nullptr;
};


/// What an HTTP response says (tw_http_assess): pass it to
/// permit::settle(). Header values may be nullptr (absent). Throws
/// tripwire::error for a status outside 100..999.
inline tw_assessment http_assess(std::uint16_t status, const char *retry_after = nullptr,
                                 const char *ratelimit_reset = nullptr,
                                 const char *x_ratelimit_reset = nullptr) {
    tw_assessment a{};
    detail::throw_if_failed(
        make_error_code(tw_http_assess(status, retry_after, ratelimit_reset, x_ratelimit_reset, &a)));
    return a;
}
inline tw_assessment http_assess(std::uint16_t status, const char *retry_after, const char *ratelimit_reset,
                                 const char *x_ratelimit_reset, std::error_code &ec) noexcept {
    tw_assessment a{};
    ec = make_error_code(tw_http_assess(status, retry_after, ratelimit_reset, x_ratelimit_reset, &a));
    return a;
}

/// A cap on calls in flight. Move-only; try_acquire() returns a slot that
/// frees itself when destroyed.
class bulkhead {
public:
    /// Holds one slot while alive (if it got one). Move-only.
    class slot {
    public:
        slot(slot &&other) noexcept : b_(std::exchange(other.b_, nullptr)) {}
        slot &operator=(slot &&other) noexcept {
            if (this != &other) {
                release();
                b_ = std::exchange(other.b_, nullptr);
            }
            return *this;
        }
        slot(const slot &) = delete;
        slot &operator=(const slot &) = delete;
        ~slot() { release(); }
        /// Whether a slot was taken (and is still held).
        explicit operator bool() const noexcept { return b_ != nullptr; }
        /// Frees the slot now (once).
        void release() noexcept {
            if (b_ != nullptr) {
                tw_bulkhead_release(std::exchange(b_, nullptr));
            }
        }

    private:
        friend class bulkhead;
        explicit slot(const tw_bulkhead *b) noexcept : b_(b) {}
        const tw_bulkhead *b_;
    };

    explicit bulkhead(std::uint32_t max) {
        detail::throw_if_failed(make_error_code(tw_bulkhead_new(max, &h_)));
    }
    bulkhead(bulkhead &&other) noexcept : h_(std::exchange(other.h_, nullptr)) {}
    bulkhead &operator=(bulkhead &&other) noexcept {
        if (this != &other) {
            tw_bulkhead_free(h_);
            h_ = std::exchange(other.h_, nullptr);
        }
        return *this;
    }
    bulkhead(const bulkhead &) = delete;
    bulkhead &operator=(const bulkhead &) = delete;
    ~bulkhead() { tw_bulkhead_free(h_); }

    /// Takes a slot if one is free, without waiting.
    slot try_acquire() const noexcept {
        return slot(tw_bulkhead_try_acquire(h_) == TW_STATUS_OK ? h_ : nullptr);
    }
    tw_bulkhead_stats stats() const noexcept {
        tw_bulkhead_stats s{};
        tw_bulkhead_snapshot(h_, &s);
        return s;
    }

private:
    tw_bulkhead *h_ = nullptr;
};

/// Named breakers exported together as Prometheus text. It borrows the
/// breakers added to it: each must outlive the registry. Move-only;
/// add() and prometheus() are thread-safe (the registry's lock, never on a
/// breaker's call path).
class registry {
public:
    registry() { detail::throw_if_failed(make_error_code(tw_registry_new(&h_))); }
    registry(registry &&other) noexcept : h_(std::exchange(other.h_, nullptr)) {}
    registry &operator=(registry &&other) noexcept {
        if (this != &other) {
            tw_registry_free(h_);
            h_ = std::exchange(other.h_, nullptr);
        }
        return *this;
    }
    registry(const registry &) = delete;
    registry &operator=(const registry &) = delete;
    ~registry() { tw_registry_free(h_); }

    /// Adds `b` under `name` (non-empty UTF-8, not taken yet); throws
    /// tripwire::error (TW_STATUS_INVALID_ARGUMENT) otherwise.
    void add(const std::string &name, const breaker &b) {
        detail::throw_if_failed(make_error_code(tw_registry_add_breaker(h_, name.c_str(), b.get())));
    }
    bool add(const std::string &name, const breaker &b, std::error_code &ec) noexcept {
        return detail::set(ec, tw_registry_add_breaker(h_, name.c_str(), b.get()));
    }

    /// Every breaker's state and counters in the Prometheus text format,
    /// the text of a Rust Registry holding the same breakers.
    std::string prometheus() const {
        std::string text;
        std::size_t len = 0;
        detail::throw_if_failed(make_error_code(tw_registry_prometheus(h_, nullptr, 0, &len)));
        // Counters may grow a digit between two calls: ask again until the
        // whole text fits.
        for (;;) {
            text.resize(len + 64);
            std::size_t need = 0;
            detail::throw_if_failed(make_error_code(tw_registry_prometheus(h_, &text[0], text.size(), &need)));
            if (need < text.size()) {
                text.resize(need);
                return text;
            }
            len = need;
        }
    }

    const tw_registry *get() const noexcept { return h_; }

private:
    tw_registry *h_ = nullptr;
};

/// The delays between attempts of one operation. Move-only; one thread at a time.
class backoff {
public:
    explicit backoff(const tw_backoff_config &c) { detail::throw_if_failed(make_error_code(tw_backoff_new(&c, &h_))); }
    backoff() : backoff(defaults()) {}
    backoff(backoff &&other) noexcept : h_(std::exchange(other.h_, nullptr)) {}
    backoff &operator=(backoff &&other) noexcept {
        if (this != &other) {
            tw_backoff_free(h_);
            h_ = std::exchange(other.h_, nullptr);
        }
        return *this;
    }
    backoff(const backoff &) = delete;
    backoff &operator=(const backoff &) = delete;
    ~backoff() { tw_backoff_free(h_); }

    static tw_backoff_config defaults() noexcept {
        tw_backoff_config c;
        tw_backoff_config_default(&c);
        return c;
    }
    /// The delay before the next attempt.
    std::chrono::nanoseconds next_delay() noexcept {
        std::uint64_t ns = 0;
        tw_backoff_next_delay(h_, &ns);
        return detail::from_ns(ns);
    }
    void reset() noexcept { tw_backoff_reset(h_); }

private:
    tw_backoff *h_ = nullptr;
};

/// Retries as a share of recent calls. Move-only; thread-safe members.
class retry_budget {
public:
    explicit retry_budget(const tw_retry_budget_config &c) {
        detail::throw_if_failed(make_error_code(tw_retry_budget_new(&c, &h_)));
    }
    retry_budget() : retry_budget(defaults()) {}
    retry_budget(retry_budget &&other) noexcept : h_(std::exchange(other.h_, nullptr)) {}
    retry_budget &operator=(retry_budget &&other) noexcept {
        if (this != &other) {
            tw_retry_budget_free(h_);
            h_ = std::exchange(other.h_, nullptr);
        }
        return *this;
    }
    retry_budget(const retry_budget &) = delete;
    retry_budget &operator=(const retry_budget &) = delete;
    ~retry_budget() { tw_retry_budget_free(h_); }

    static tw_retry_budget_config defaults() noexcept {
        tw_retry_budget_config c;
        tw_retry_budget_config_default(&c);
        return c;
    }
    /// Counts one call.
    void deposit() const noexcept { tw_retry_budget_deposit(h_); }
    /// Takes a token for a retry; false: do not retry.
    bool try_withdraw() const noexcept { return tw_retry_budget_try_withdraw(h_) == TW_STATUS_OK; }

private:
    tw_retry_budget *h_ = nullptr;
};

/// A bulkhead in memory shared by several processes (one cap for every
/// worker of a host). Refers to the region, never frees it: the memory is
/// the caller's and must stay mapped while this (and any slot) is used.
/// Copyable (it is only the region's address). Thread-safe, and safe from
/// every process that maps the region.
///
/// try_acquire() returns a slot: a move-only RAII receipt released when
/// destroyed. A process killed while holding slots does not keep them:
/// try_acquire() reclaims the slots of dead processes when it finds every
/// slot held (see tw_shared_bulkhead_try_acquire).
class shared_bulkhead {
public:
    /// One slot while alive (if it got one). Move-only.
    class slot {
    public:
        slot(slot &&other) noexcept : b_(std::exchange(other.b_, nullptr)), s_(other.s_) {}
        slot &operator=(slot &&other) noexcept {
            if (this != &other) {
                release();
                b_ = std::exchange(other.b_, nullptr);
                s_ = other.s_;
            }
            return *this;
        }
        slot(const slot &) = delete;
        slot &operator=(const slot &) = delete;
        ~slot() { release(); }
        /// Whether a slot was taken (and is still held by this receipt).
        explicit operator bool() const noexcept { return b_ != nullptr; }
        /// The C receipt (meaningful while operator bool is true).
        const tw_shared_slot &raw() const noexcept { return s_; }
        /// Frees the slot now (once). false if it was no longer this
        /// receipt's (reclaimed, which happens only if the library took
        /// this process for dead) or was never taken.
        bool release() noexcept {
            if (b_ == nullptr) {
                return false;
            }
            return tw_shared_bulkhead_release(std::exchange(b_, nullptr), s_) == TW_STATUS_OK;
        }

    private:
        friend class shared_bulkhead;
        slot(const tw_shared_bulkhead *b, tw_shared_slot s) noexcept : b_(b), s_(s) {}
        const tw_shared_bulkhead *b_;
        tw_shared_slot s_;
    };

    /// Bytes a region of `max` slots needs (alignment: 64); throws
    /// tripwire::error if `max` is above 65536.
    static std::size_t size_for(std::uint32_t max) {
        std::size_t size = 0, align = 0;
        detail::throw_if_failed(make_error_code(tw_shared_bulkhead_size(max, &size, &align)));
        return size;
    }
    /// Initialises a bulkhead of `max` slots in zero-filled shared memory.
    static shared_bulkhead init_in(void *mem, std::size_t len, std::uint32_t max) {
        std::error_code ec;
        return checked(init_in(mem, len, max, ec), ec);
    }
    static shared_bulkhead init_in(void *mem, std::size_t len, std::uint32_t max, std::error_code &ec) noexcept {
        shared_bulkhead b;
        detail::set(ec, tw_shared_bulkhead_init_in(mem, len, max, &b.h_));
        return b;
    }
    /// Attaches to a bulkhead another process initialised in `mem`.
    static shared_bulkhead attach(void *mem, std::size_t len) {
        std::error_code ec;
        return checked(attach(mem, len, ec), ec);
    }
    static shared_bulkhead attach(void *mem, std::size_t len, std::error_code &ec) noexcept {
        shared_bulkhead b;
        detail::set(ec, tw_shared_bulkhead_attach(mem, len, &b.h_));
        return b;
    }
    /// Initialises the region if nobody has, else attaches to it.
    static shared_bulkhead open_in(void *mem, std::size_t len, std::uint32_t max) {
        std::error_code ec;
        return checked(open_in(mem, len, max, ec), ec);
    }
    static shared_bulkhead open_in(void *mem, std::size_t len, std::uint32_t max, std::error_code &ec) noexcept {
        shared_bulkhead b;
        detail::set(ec, tw_shared_bulkhead_open_in(mem, len, max, &b.h_));
        return b;
    }

    /// Whether this refers to a region (false after a failed call with an
    /// error_code).
    explicit operator bool() const noexcept { return h_ != nullptr; }
    /// Takes a slot for this process if one is free, without waiting.
    slot try_acquire() const noexcept {
        tw_shared_slot s{};
        return tw_shared_bulkhead_try_acquire(h_, &s) == TW_STATUS_OK ? slot(h_, s) : slot(nullptr, s);
    }
    /// Slots free now, across every process.
    std::uint32_t available() const noexcept {
        std::uint32_t n = 0;
        tw_shared_bulkhead_available(h_, &n);
        return n;
    }
    /// One reclaim pass now: the number of dead processes' slots it freed.
    std::uint32_t reclaim() const noexcept {
        std::uint32_t n = 0;
        tw_shared_bulkhead_reclaim(h_, &n);
        return n;
    }
    tw_shared_bulkhead_stats stats() const noexcept {
        tw_shared_bulkhead_stats s{};
        tw_shared_bulkhead_snapshot(h_, &s);
        return s;
    }
    const tw_shared_bulkhead *raw() const noexcept { return h_; }

private:
    shared_bulkhead() noexcept = default;
    static shared_bulkhead checked(shared_bulkhead b, const std::error_code &ec) {
        detail::throw_if_failed(ec);
        return b;
    }
    const tw_shared_bulkhead *h_ = nullptr;
};

}  // namespace tripwire

#endif  // TRIPWIRE_HPP
