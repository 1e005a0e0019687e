//! Prints the size and alignment of the core's types, a breaker on each
//! storage first: `cargo run -p tripwire-breaker --example sizes`.

use core::mem::{align_of, size_of};

use tripwire::breaker::{AnyWindow, CountOnly, NoWindow, TimeOnly};
use tripwire::{Breaker, BreakerConfig, Ticket};

/// A row: the type, its size, its alignment, and 10,000 of it in MiB.
fn row<T>(name: &str) {
    let size = size_of::<T>();
    println!(
        "| `{name}` | {size} | {} | {:.1} |",
        align_of::<T>(),
        (size * 10_000) as f64 / (1 << 20) as f64
    );
}

fn main() {
    println!("| type | size (bytes) | align | 10,000 of them (MiB) |");
    println!("| --- | --- | --- | --- |");
    row::<Breaker<NoWindow>>("Breaker<NoWindow>");
    row::<Breaker<TimeOnly>>("Breaker<TimeOnly>");
    row::<Breaker<CountOnly>>("Breaker<CountOnly>");
    row::<Breaker<AnyWindow>>("Breaker (AnyWindow)");
    #[cfg(feature = "std")]
    row::<tripwire::NamedBreaker>("NamedBreaker");
    row::<BreakerConfig>("BreakerConfig");
    row::<Ticket>("Ticket");
}
