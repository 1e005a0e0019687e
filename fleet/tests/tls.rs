//! The fleet's link over TLS (`rediss://`, feature `tls`), to a
//! redis-server whose certificate chains to a root of the test's own.
#![cfg(feature = "tls")]

mod support;

use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use support::{KEY, PrivateRedis, namespace, redis_url, wait_for};
use tripwire::{BreakerConfig, NamedBreaker, Outcome, State};
use tripwire_fleet::{Fleet, FleetConfig, LinkState};

/// A root and a server certificate for 127.0.0.1, made with openssl in `dir`.
fn certificates(dir: &std::path::Path) {
    let run = |args: &[&str]| {
        let ok = Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .output()
            .expect("openssl on PATH")
            .status
            .success();
        assert!(ok, "openssl {args:?}");
    };
    run(&[
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
        "-days",
        "2",
        "-subj",
        "/CN=tripwire test root",
    ]);
    run(&[
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "server.key",
        "-out",
        "server.csr",
        "-subj",
        "/CN=127.0.0.1",
    ]);
    std::fs::write(dir.join("ext.cnf"), "subjectAltName=IP:127.0.0.1\n").unwrap();
    run(&[
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "server.pem",
        "-days",
        "2",
        "-extfile",
        "ext.cnf",
    ]);
}

#[test]
fn the_link_runs_over_tls_and_refuses_an_unknown_root() {
    if redis_url("the_link_runs_over_tls_and_refuses_an_unknown_root").is_none() {
        return;
    }
    let dir = std::env::temp_dir().join(namespace("tls"));
    std::fs::create_dir_all(&dir).unwrap();
    certificates(&dir);
    let path = |f: &str| dir.join(f).to_str().unwrap().to_string();
    let tls_port = support::free_port().to_string();
    let redis = PrivateRedis::start_on(
        tls_port.parse().unwrap(),
        &[
            "--port",
            "0",
            "--tls-port",
            &tls_port,
            "--tls-cert-file",
            &path("server.pem"),
            "--tls-key-file",
            &path("server.key"),
            "--tls-ca-cert-file",
            &path("ca.pem"),
            "--tls-auth-clients",
            "no",
        ],
    );
    let url = format!("rediss://127.0.0.1:{}", redis.port);
    let root = std::fs::read(dir.join("ca.pem")).unwrap();
    let ns = namespace("tls");
    let config =
        BreakerConfig::builder().failure_threshold(1).open_timeout(Duration::from_secs(2)).build().unwrap();
    let (a, b) =
        (Arc::new(NamedBreaker::new("exchange", config)), Arc::new(NamedBreaker::new("exchange", config)));
    let hosts: Vec<Fleet> = [&a, &b]
        .iter()
        .map(|br| {
            let f = Fleet::new(
                FleetConfig::builder(&url, &ns, *KEY).tls_root_cert(root.clone()).build().unwrap(),
            )
            .unwrap();
            f.join(br).unwrap();
            assert!(f.wait_linked(Duration::from_secs(5)), "{:?}", f.snapshot());
            f
        })
        .collect();
    let t = a.try_acquire().unwrap();
    a.record(t, Outcome::Failure);
    wait_for(Duration::from_secs(2), || b.state() == State::Open).expect("b heard over TLS");
    // The system's roots do not know the test's: no link, no panic.
    let c = Arc::new(NamedBreaker::new("exchange", BreakerConfig::default()));
    let stranger = Fleet::new(FleetConfig::builder(&url, &ns, *KEY).build().unwrap()).unwrap();
    stranger.join(&c).unwrap();
    assert!(!stranger.wait_linked(Duration::from_millis(500)));
    assert_eq!((stranger.link_state(), c.state()), (LinkState::Down, State::Closed));
    // And says why.
    let why = stranger.last_error().unwrap_or_default();
    assert!(why.contains("TLS handshake") && why.contains("UnknownIssuer"), "{why}");
    assert!(stranger.snapshot().connect_failures >= 1);
    assert_eq!(hosts[1].snapshot().applied, 1);
    let _ = std::fs::remove_dir_all(&dir);
}
