//! loom models of the retry budget: concurrent withdrawals never take more
//! tokens than the budget holds, and no deposit is lost.
#![cfg(loom)]

use core::time::Duration;

use loom::sync::Arc;
use loom::thread;
use tripwire::{FixedClock, RetryBudget, RetryBudgetConfig};

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

#[test]
fn concurrent_withdrawals_take_at_most_the_balance() {
    loom::model(|| {
        let budget = Arc::new(budget(0.0, 2.0));
        let others: Vec<_> = (0..2)
            .map(|_| {
                let b = budget.clone();
                thread::spawn(move || b.try_withdraw(&NOW))
            })
            .collect();
        let mine = budget.try_withdraw(&NOW);
        let taken = others.into_iter().map(|t| t.join().unwrap()).filter(|&t| t).count() + usize::from(mine);
        assert_eq!(taken, 2, "two tokens, three takers");
        assert_eq!(budget.available_milli(&NOW), 0);
    });
}

#[test]
fn deposits_racing_withdrawals_never_overdraw_or_get_lost() {
    loom::model(|| {
        // Each deposit is half a token; no reserve.
        let budget = Arc::new(budget(0.5, 0.0));
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
        assert!(taken <= 1, "one token deposited, {taken} taken");
        assert_eq!(budget.available_milli(&NOW), 1000 - 1000 * taken);
    });
}

#[test]
fn decay_racing_deposits_and_withdrawals_only_ever_shrinks_the_balance() {
    loom::model(|| {
        // A whole token per deposit, no reserve: decay can only take away.
        let budget = Arc::new(budget(1.0, 0.0));
        let clock = Arc::new(tripwire::ManualClock::new(1_000_000_000));
        let (b, c) = (budget.clone(), clock.clone());
        let depositor = thread::spawn(move || {
            b.deposit(&*c);
            b.deposit(&*c);
        });
        let (b, c) = (budget.clone(), clock.clone());
        let late = thread::spawn(move || {
            // One tick (ttl / 8) later, 1/8 of whatever is there is gone.
            c.advance(Duration::from_millis(125));
            b.try_withdraw(&*c)
        });
        let mine = budget.try_withdraw(&*clock);
        depositor.join().unwrap();
        let taken = u32::from(late.join().unwrap()) + u32::from(mine);
        let left = budget.available_milli(&*clock);
        assert!(left + 1000 * taken <= 2000, "{taken} taken and {left} left of 2000 deposited");
    });
}
