//! loom models of the retry budget: concurrent withdrawals never take more
//! tokens than the budget holds, no deposit is lost, and decay happens once
//! per tick whatever the order the clock readings land in. Run with
//! `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test -p tripwire-breaker
//! --release --target-dir target/loom --test loom_retry_budget`.
//!
//! Every model races for real (see `loom_support`) and fails when the
//! ordering or check it names under "Guards" is weakened;
//! `tests/mutants/run.sh` makes each of those weakenings and shows it.
#![cfg(loom)]

mod loom_support;

use core::time::Duration;

use loom::sync::Arc;
use loom::thread;
use loom_support::model;
use tripwire::{
    clock::FixedClock,
    retry::{RetryBudget, RetryBudgetConfig},
};

const NOW: FixedClock = FixedClock(1_000_000_000);

fn budget(ratio: f64, reserve_tokens: f64) -> RetryBudget {
    let ttl = Duration::from_secs(1);
    RetryBudget::new(
        RetryBudgetConfig::builder()
            .ratio(ratio)
            .ttl(ttl)
            .min_retries_per_sec(reserve_tokens)
            .build()
            .unwrap(),
    )
}

/// Guards: the CAS in `RetryBudget::update` (as a plain store, two
/// withdrawals from the same balance both take its last token), and the
/// check in `try_withdraw` that a whole token is left.
#[test]
fn concurrent_withdrawals_take_at_most_the_balance() {
    model(["this thread was refused", "a spawned thread was refused"], |sides| {
        let budget = Arc::new(budget(0.0, 2.0));
        let others: Vec<_> = (0..2)
            .map(|_| {
                let b = budget.clone();
                thread::spawn(move || b.try_withdraw(&NOW))
            })
            .collect();
        let mine = budget.try_withdraw(&NOW);
        sides.saw(usize::from(mine));
        let taken = others.into_iter().map(|t| t.join().unwrap()).filter(|&t| t).count() + usize::from(mine);
        assert_eq!(taken, 2, "two tokens, three takers");
        assert_eq!(budget.available_milli(&NOW), 0);
    });
}

/// Two deposits of half a token race two withdrawals from a budget that
/// starts with one token: every deposit and every withdrawal lands, so the
/// balance and the tokens taken always add up to the two tokens there were.
///
/// Guards: the CAS in `RetryBudget::update` (as a plain store, a deposit
/// and a withdrawal racing each other lose one of the two), and the retry
/// of a CAS that failed (taken as done, the deposit or withdrawal that lost
/// the race is lost, or a withdrawal is granted without taking its token).
#[test]
fn deposits_racing_withdrawals_never_overdraw_or_get_lost() {
    model(["both retries got a token", "one retry was refused"], |sides| {
        // A reserve of one token to start from; each deposit is half a token.
        let budget = Arc::new(budget(0.5, 1.0));
        let b = budget.clone();
        let depositor = thread::spawn(move || {
            b.deposit(&NOW);
            b.deposit(&NOW);
        });
        let b = budget.clone();
        let other = thread::spawn(move || b.try_withdraw(&NOW));
        let mine = budget.try_withdraw(&NOW);
        depositor.join().unwrap();
        let taken = u32::from(other.join().unwrap()) + u32::from(mine);
        // The first withdrawal always finds the reserve's token.
        assert!(taken >= 1, "a token there from the start, none taken");
        sides.saw(usize::from(taken == 1));
        let left = budget.available_milli(&NOW);
        assert_eq!(left + 1000 * taken, 2000, "{taken} taken and {left} left of 2000");
    });
}

/// Two whole tokens deposited at the start, one more while one thread moves
/// the clock on by one decay tick and withdraws: the balance decays once, by
/// at most an eighth of what it held, is never taken back to an older tick
/// (which would decay it again), and never grows.
///
/// Guards: the check in the word's `at` that a time older than the stamp
/// decays nothing (without it a deposit that read the clock before the
/// tick and lands after it wipes the balance and moves the stamp back).
#[test]
fn decay_racing_deposits_and_withdrawals_only_ever_shrinks_the_balance() {
    model(["the late retry got a token", "the late retry was refused"], |sides| {
        // A whole token per deposit, no reserve: decay can only take away.
        let budget = Arc::new(budget(1.0, 0.0));
        let clock = Arc::new(tripwire::ManualClock::new(1_000_000_000));
        budget.deposit(&*clock);
        budget.deposit(&*clock);
        let (b, c) = (budget.clone(), clock.clone());
        let depositor = thread::spawn(move || b.deposit(&*c));
        let (b, c) = (budget.clone(), clock.clone());
        let late = thread::spawn(move || {
            // One tick (ttl / 8) later, 1/8 of whatever is there is gone.
            c.advance(Duration::from_millis(125));
            b.try_withdraw(&*c)
        });
        let mine = budget.try_withdraw(&*clock);
        depositor.join().unwrap();
        let late = late.join().unwrap();
        sides.saw(usize::from(!late));
        let taken = u32::from(late) + u32::from(mine);
        let left = budget.available_milli(&*clock);
        // One decay of at most 3000 milli-tokens takes at most 375 of them.
        let kept = left + 1000 * taken;
        assert!((2625..=3000).contains(&kept), "{taken} taken and {left} left of 3000 deposited");
    });
}
