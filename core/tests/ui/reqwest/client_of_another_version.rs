// A reqwest 0.12 client given to the middleware, built for reqwest 0.13.
use std::sync::Arc;

use tripwire::reqwest::GuardMiddleware;
use tripwire::{BreakerConfig, NamedBreaker};

fn main() {
    let breaker = Arc::new(NamedBreaker::new("binance/rest", BreakerConfig::default()));
    let _client = GuardMiddleware::new(breaker).client(reqwest_012::Client::new());
}
