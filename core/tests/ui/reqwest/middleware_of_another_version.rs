// The middleware given to a reqwest-middleware 0.4 client: it implements
// the `Middleware` of reqwest-middleware 0.5 (reqwest 0.13), another crate
// to rustc.
use std::sync::Arc;

use tripwire::reqwest::GuardMiddleware;
use tripwire::{BreakerConfig, NamedBreaker};

fn main() {
    let breaker = Arc::new(NamedBreaker::new("binance/rest", BreakerConfig::default()));
    let _client = reqwest_middleware_04::ClientBuilder::new(reqwest_012::Client::new())
        .with(GuardMiddleware::new(breaker))
        .build();
}
