//! `benchkit pertest`: what one integration test costs a suite that gives every test a fresh
//! session, as the Python and npm packages do — create the session, one recorded action, the
//! verdict, drop the session — against one bare request to the baseline. Tests and bare
//! requests alternate in batches, so a drift of the machine's speed weighs on both alike.

use std::time::{Duration, Instant};

use doubleagent::client::send;

use super::Opts;

const TIMEOUT: Duration = Duration::from_secs(20);
const BATCH: u64 = 50;

/// One test in session `name` on the doubleagent at `da`; false if a step went wrong.
async fn one_test(da: &str, name: &str) -> bool {
    let s = format!("{da}/_s/{name}");
    let json = [("content-type", "application/json")];
    let body = br#"{"to":"acct-9","amount":100}"#.to_vec();
    let key = format!("k-{name}");
    let steps = [
        send(
            "GET",
            &format!("{s}/_admin/health"),
            &[],
            Vec::new(),
            TIMEOUT,
        )
        .await,
        send(
            "POST",
            &format!("{s}/pay/v1/transfers"),
            &[json[0], ("idempotency-key", &key)],
            body,
            TIMEOUT,
        )
        .await,
        send(
            "GET",
            &format!("{s}/_admin/verify"),
            &[],
            Vec::new(),
            TIMEOUT,
        )
        .await,
        send(
            "POST",
            &format!("{da}/_admin/reset?session={name}&drop=true"),
            &[],
            Vec::new(),
            TIMEOUT,
        )
        .await,
    ];
    steps
        .iter()
        .all(|r| r.as_ref().is_ok_and(|r| r.status < 300))
}

/// `benchkit pertest DA_URL --base BASE_URL [--n N]`: prints
/// `PERTEST {"n":..,"test_us":..,"bare_us":..,"overhead_us":..,"failed":..}`.
pub(crate) async fn pertest(opts: &Opts) {
    let da = opts.url().trim_end_matches('/').to_string();
    let base = opts.get("base").expect("--base URL").trim_end_matches('/');
    let n = opts.num("n", 1000);
    let bare_url = format!("{base}/pay/v1/transfers");
    let (mut tests, mut bare, mut failed) = (Duration::ZERO, Duration::ZERO, 0u64);
    let mut done = 0;
    while done < n {
        let batch = BATCH.min(n - done);
        let t = Instant::now();
        for i in done..done + batch {
            if !one_test(&da, &format!("pt-{i}")).await {
                failed += 1;
            }
        }
        tests += t.elapsed();
        let t = Instant::now();
        for _ in 0..batch {
            let body = br#"{"to":"acct-9","amount":100}"#.to_vec();
            let r = send("POST", &bare_url, &[], body, TIMEOUT).await;
            if !r.is_ok_and(|r| r.status < 300) {
                failed += 1;
            }
        }
        bare += t.elapsed();
        done += batch;
    }
    let per = |d: Duration| d.as_secs_f64() * 1e6 / n as f64;
    println!(
        "PERTEST {{\"n\":{n},\"test_us\":{:.1},\"bare_us\":{:.1},\"overhead_us\":{:.1},\"failed\":{failed}}}",
        per(tests),
        per(bare),
        per(tests) - per(bare)
    );
}
