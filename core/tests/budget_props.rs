//! The retry budget against a plain reference model: a balance in `f64`
//! that relaxes towards the reserve by a factor of 7/8 per `ttl / 8`.
// Single-threaded properties of safe code: miri, which runs the tests that
// reach `unsafe` code or race threads, has nothing to find here that the
// native run does not.
#![cfg(not(miri))]

use core::time::Duration;

use proptest::prelude::*;
use tripwire::{
    clock::FixedClock,
    retry::{RetryBudget, RetryBudgetConfig},
};

#[derive(Debug, Clone)]
enum Op {
    Deposit,
    Withdraw,
    Advance(u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => Just(Op::Deposit),
        4 => Just(Op::Withdraw),
        1 => (0u64..30_000_000_000).prop_map(Op::Advance),
    ]
}

/// The reference: the same rules, written plainly.
struct Model {
    reserve: f64,
    deposit: f64,
    tick_ns: u64,
    balance: f64,
    stamp: Option<u64>,
}

impl Model {
    fn at(&mut self, now: u64) {
        let tick = now / self.tick_ns;
        let elapsed = self.stamp.map_or(0, |stamp| tick.saturating_sub(stamp));
        if elapsed > 0 {
            let keep = 0.875f64.powi(elapsed.min(10_000) as i32);
            self.balance = self.reserve + (self.balance - self.reserve) * keep;
        }
        self.stamp = Some(self.stamp.map_or(tick, |s| s.max(tick)));
    }
}

fn cases() -> ProptestConfig {
    ProptestConfig::with_cases(256)
}

proptest! {
    #![proptest_config(cases())]

    #[test]
    fn the_budget_follows_the_reference(
        ratio in 0.0f64..3.0,
        min_per_sec in 0.0f64..5.0,
        ttl_ms in 100u64..60_000,
        start in 0u64..1_000_000_000_000,
        ops in proptest::collection::vec(op(), 1..120),
    ) {
        let config = RetryBudgetConfig::builder()
            .ratio(ratio)
            .min_retries_per_sec(min_per_sec)
            .ttl(Duration::from_millis(ttl_ms))
            .build()
            .unwrap();
        let budget = RetryBudget::new(config);
        let mut model = Model {
            // The config keeps both to a thousandth of a token.
            reserve: (config.reserve_tokens() * 1000.0).round(),
            deposit: (ratio * 1000.0).round(),
            tick_ns: ttl_ms * 1_000_000 / 8,
            balance: (config.reserve_tokens() * 1000.0).round(),
            stamp: None,
        };
        let mut now = start;
        for op in ops {
            let clock = FixedClock(now);
            model.at(now);
            // Fixed-point decay rounds down at each step: a few milli-tokens.
            let tolerance = 4.0 + model.balance * 1e-6;
            match op {
                Op::Deposit => {
                    budget.deposit(&clock);
                    model.balance += model.deposit;
                }
                Op::Withdraw => {
                    let took = budget.try_withdraw(&clock);
                    if model.balance >= 1000.0 + tolerance {
                        prop_assert!(took, "refused with {} in the model", model.balance);
                    }
                    if model.balance < 1000.0 - tolerance {
                        prop_assert!(!took, "granted with {} in the model", model.balance);
                    }
                    if took {
                        model.balance -= 1000.0;
                    }
                }
                Op::Advance(ns) => now += ns,
            }
            let real = f64::from(budget.available_milli(&FixedClock(now)));
            model.at(now);
            prop_assert!((real - model.balance).abs() <= tolerance, "real {real}, model {}", model.balance);
            // Follow the real balance, so that rounding does not pile up.
            model.balance = real;
            prop_assert!(real >= 0.0);
        }
    }

    #[test]
    fn withdrawals_never_exceed_what_was_deposited_plus_the_reserve(
        deposits in 0u32..200,
        withdrawals in 0u32..200,
    ) {
        let config = RetryBudgetConfig::builder().ratio(0.1).min_retries_per_sec(0.5).build().unwrap();
        let budget = RetryBudget::new(config);
        let now = FixedClock(42_000_000_000);
        for _ in 0..deposits {
            budget.deposit(&now);
        }
        let granted = (0..withdrawals).filter(|_| budget.try_withdraw(&now)).count() as u32;
        // 5 reserve tokens (0.5/s over 10 s) and a tenth of a token per call.
        prop_assert_eq!(granted, withdrawals.min(5 + deposits / 10));
    }
}
