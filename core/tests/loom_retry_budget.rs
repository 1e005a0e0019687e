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
