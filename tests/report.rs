//! The HTML timeline, structurally: self-contained, carrying every entry and finding.

mod common;

use common::*;
use std::process::Command;

fn embedded(page: &str) -> serde_json::Value {
    let start = page
        .find("<script type=\"application/json\" id=\"data\">")
        .unwrap();
    let rest = &page[start..];
    let open = rest.find('>').unwrap() + 1;
    let close = rest.find("</script>").unwrap();
    serde_json::from_str(&rest[open..close].replace("<\\/", "</")).unwrap()
}

#[test]
fn the_report_is_one_self_contained_page_with_every_entry_and_finding() {
    let da = Da::start_file("lost-response.toml");
    let key = |k| [("Idempotency-Key", k)];
    assert!(da
        .post_json("/payments/v1/transfers", &key("k-1"), &transfer())
        .is_err());
    da.post_json("/payments/v1/transfers", &key("k-2"), &transfer())
        .unwrap();
    da.call(
        "POST",
        "/_admin/revision",
        &[("content-type", "application/json")],
        r#"{"revision": 2}"#,
    );
    let r = da.get("/_admin/report");
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("text/html; charset=utf-8"));
    let page = r.text();
    for external in [
        "src=\"http",
        "href=\"http",
        "@import",
        "<link ",
        "fetch(",
        "XMLHttpRequest",
    ] {
        assert!(
            !page.contains(external),
            "the page must not fetch anything ({external})"
        );
    }
    let data = embedded(&page);
    assert_eq!(data["entries"].as_array().unwrap().len(), 3);
    let rules: Vec<&str> = data["report"]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["rule"].as_str().unwrap())
        .collect();
    assert!(
        rules.contains(&"ACC-1") && rules.contains(&"REC-4"),
        "{rules:?}"
    );
    assert!(page.contains("id=\"timeline\"") && page.contains("id=\"findings\""));
}

#[test]
fn report_writes_the_page_from_an_exported_ledger() {
    let ledger = format!(
        "{}/tests/fixtures/verify/rec4_blind_retry_after_dropped_response.jsonl",
        env!("CARGO_MANIFEST_DIR")
    );
    let out = temp_file("report.html", "");
    let status = Command::new(bin())
        .args(["report", "--ledger", &ledger, "-o", out.to_str().unwrap()])
        .status()
        .unwrap();
    assert!(status.success());
    let page = std::fs::read_to_string(&out).unwrap();
    let data = embedded(&page);
    assert_eq!(data["report"]["findings"].as_array().unwrap().len(), 2);
    assert_eq!(data["entries"][0]["seq"], 1);
}

#[test]
fn report_reads_a_running_server_with_its_token_and_session() {
    let path = temp_file("s.toml", LOST_RESPONSE);
    let da = Da::start_args(&[path.to_str().unwrap(), "--admin-token", "tok"]);
    da.post_json(
        "/payments/v1/transfers",
        &[("X-Doubleagent-Session", "s9")],
        &transfer(),
    )
    .err();
    let out = temp_file("report.html", "");
    let denied = Command::new(bin())
        .args(["report", "--url", &da.url, "-o", out.to_str().unwrap()])
        .env_remove("DOUBLEAGENT_ADMIN_TOKEN")
        .output()
        .unwrap();
    assert_eq!(
        denied.status.code(),
        Some(1),
        "401 is reported (a runtime failure, as for verify and probe): {}",
        String::from_utf8_lossy(&denied.stderr)
    );
    let ok = Command::new(bin())
        .args([
            "report",
            "--url",
            &da.url,
            "--session",
            "s9",
            "--admin-token",
            "tok",
            "-o",
            out.to_str().unwrap(),
        ])
        .status()
        .unwrap();
    assert!(ok.success());
    assert_eq!(
        embedded(&std::fs::read_to_string(&out).unwrap())["entries"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
}
