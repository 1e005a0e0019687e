//! Prints the size and alignment of the core's types:
//! `cargo run -p tripwire-breaker --example sizes`.

use core::mem::{align_of, size_of};

use tripwire::{Breaker, BreakerConfig, Ticket};

fn main() {
    println!("| type | size (bytes) | align |");
    println!("| --- | --- | --- |");
    println!("| `Breaker` | {} | {} |", size_of::<Breaker>(), align_of::<Breaker>());
    println!("| `BreakerConfig` | {} | {} |", size_of::<BreakerConfig>(), align_of::<BreakerConfig>());
    println!("| `Ticket` | {} | {} |", size_of::<Ticket>(), align_of::<Ticket>());
}
