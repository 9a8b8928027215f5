//! The in-process API, as a Rust test would use it (in the spirit of wiremock-rs's
//! `MockServer::start()`): start on port 0, get URLs, read the ledger, move the clock, stop on drop.

use std::time::{Duration, Instant};

use doubleagent::ledger::Filter;
use doubleagent::Server;

const SCENARIO: &str = r#"
name = "in-process"
clock = "manual"

[services.payments]
idempotency = { preset = "stripe", retention = "24h" }

[[services.payments.routes]]
name = "create-transfer"
method = "POST"
path = "/v1/transfers"
kind = "action"
fates = ["delay:3s"]
"#;

async fn post(url: &str, key: &str) -> tokio::task::JoinHandle<String> {
    let url = url.trim_start_matches("http://").to_string();
    let key = key.to_string();
    tokio::spawn(async move {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let (host, path) = url.split_once('/').unwrap();
        let mut s = tokio::net::TcpStream::connect(host).await.unwrap();
        let req = format!("POST /{path}/v1/transfers HTTP/1.1\r\nHost: x\r\nConnection: close\r\nIdempotency-Key: {key}\r\nContent-Length: 2\r\n\r\n{{}}");
        s.write_all(req.as_bytes()).await.unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).await.unwrap();
        out
    })
}

#[tokio::test]
async fn start_read_the_ledger_and_advance_a_manual_clock_in_process() {
    let server = Server::start_toml(SCENARIO).await.unwrap();
    let payments = server.service_url("payments").unwrap();
    assert_eq!(payments, format!("{}/payments", server.url()));
    assert_eq!(server.ready()["scenario"], "in-process");

    let pending = post(&payments, "k-1").await;
    while server.ledger().is_empty() {
        tokio::task::yield_now().await;
    }
    let entry = &server.ledger()[0];
    assert!(entry.applied, "applied before the delayed response");
    assert_eq!(
        entry.response.delivery,
        doubleagent::ledger::Delivery::Pending
    );

    server.advance(Duration::from_secs(3)).await.unwrap();
    let raw = pending.await.unwrap();
    assert!(raw.starts_with("HTTP/1.1 200"), "{raw}");
    let filter = Filter {
        service: Some("payments".into()),
        ..Filter::default()
    };
    assert_eq!(server.entries(&filter).len(), 1);
}

#[tokio::test]
async fn a_24h_retention_window_expires_in_well_under_a_second_of_wall_time() {
    let server = Server::start_toml(&SCENARIO.replace("delay:3s", "respond"))
        .await
        .unwrap();
    let payments = server.service_url("payments").unwrap();
    post(&payments, "k-1").await.await.unwrap();
    let started = Instant::now();
    server
        .advance(Duration::from_secs(25 * 3600))
        .await
        .unwrap();
    let took = started.elapsed();
    post(&payments, "k-1").await.await.unwrap();
    let ledger = server.ledger();
    assert_eq!(ledger.len(), 2);
    assert!(
        ledger[1].executed_after_expiry,
        "the key was forgotten after 24h"
    );
    assert!(ledger.iter().all(|e| e.applied));
    assert!(took < Duration::from_secs(1), "advancing 25h took {took:?}");
}

#[tokio::test]
async fn dropping_the_server_stops_it() {
    let server = Server::start_toml(SCENARIO).await.unwrap();
    let addr = server.url().trim_start_matches("http://").to_string();
    drop(server);
    // The listener closes once the accept loop sees the stop signal.
    let mut refused = false;
    for _ in 0..200 {
        if tokio::net::TcpStream::connect(&addr).await.is_err() {
            refused = true;
            break;
        }
        tokio::task::yield_now().await;
    }
    assert!(refused, "server still accepting after drop");
}

#[tokio::test]
async fn an_invalid_scenario_is_an_error_not_a_panic() {
    let err = Server::start_toml("[services._admin]\n")
        .await
        .err()
        .unwrap();
    assert!(
        err.to_string()
            .contains("<inline scenario>:1:11: services._admin"),
        "{err}"
    );
}
