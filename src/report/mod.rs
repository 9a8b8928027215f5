//! The HTML timeline: one self-contained file (inline CSS, JS and data, no network fetches)
//! showing a lane per service and agent, each attempt from arrival to response coloured by what
//! became of it, applied effects, cancels and revision switches as markers, and the verifier's
//! findings linked to their entries. The page draws on a canvas and keeps only the visible table
//! rows in the DOM, so tens of thousands of entries stay usable.
//!
//! Served at `GET /_admin/report` and written by `doubleagent report`.

use serde::Serialize;

use crate::ledger::Entry;
use crate::verify::Report;

const TEMPLATE: &str = include_str!("report.html");

/// Render the page for a ledger and its verdict.
pub fn render(title: &str, entries: &[Entry], report: &Report) -> String {
    #[derive(Serialize)]
    struct Data<'a> {
        entries: &'a [Entry],
        report: &'a Report,
    }
    let json = serde_json::to_string(&Data { entries, report }).unwrap_or_else(|_| "{}".into());
    // Inside <script>, "</" could close the element early; "<\/" means the same to JSON.parse.
    let json = json.replace("</", "<\\/");
    TEMPLATE
        .replace("__TITLE__", &escape(title))
        .replacen("__DATA__", &json, 1)
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
