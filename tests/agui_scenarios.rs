//! AG-UI agent scripts are validated before anything is served: every mistake is located as
//! `file:line:col: key.path: message`, with a "did you mean" where a name is close, and
//! `doubleagent check` exits 2.

mod common;

use std::process::Command;

use common::*;

/// The payments service of the core issue, with a lookup route (it has an `{id}` parameter).
const SERVICES: &str = r#"[services.payments]
[[services.payments.routes]]
name = "create-transfer"
method = "POST"
path = "/v1/transfers"
kind = "action"
[[services.payments.routes]]
name = "get-transfer"
method = "GET"
path = "/v1/transfers/{id}"
kind = "lookup"
"#;

/// An agent with one backend tool and one iteration calling it; `extra` is appended.
fn agent(extra: &str) -> String {
    format!(
        "{SERVICES}[agents.a]\nprotocol = \"ag-ui\"\n[[agents.a.tools]]\nname = \"transfer_funds\"\nservice = \"payments\"\nroute = \"create-transfer\"\n[[agents.a.iterations]]\ntext = \"x\"\ntool_calls = [{{ tool = \"transfer_funds\", args = {{ to = \"acct-9\" }} }}]\n{extra}"
    )
}

/// `doubleagent check bad.toml` in the file's directory: (exit code, stderr lines).
fn check(toml: &str) -> (i32, Vec<String>) {
    let path = temp_file("bad.toml", toml);
    let out = Command::new(bin())
        .args(["check", "bad.toml"])
        .current_dir(path.parent().unwrap())
        .output()
        .unwrap();
    let err = String::from_utf8(out.stderr).unwrap();
    (
        out.status.code().unwrap(),
        err.lines().map(str::to_string).collect(),
    )
}

#[track_caller]
fn rejected(toml: &str, expected: &[&str]) {
    let (code, lines) = check(toml);
    assert_eq!(code, 2, "{lines:?}");
    assert_eq!(lines, expected);
}

#[test]
fn agui_the_issue_example_validates() {
    let (code, lines) = check(&format!(
        "{SERVICES}{}",
        include_str!("../scenarios/agui-interop.toml")
            .split("# --- approver")
            .nth(1)
            .map(|s| format!(
                "# --- approver{}",
                s.split("# --- expiring").next().unwrap()
            ))
            .unwrap()
    ));
    assert_eq!(code, 0, "{lines:?}");
}

#[test]
fn agui_a_tool_naming_an_unknown_service_or_route_gets_a_hint() {
    rejected(
        &agent("").replace("service = \"payments\"\nroute", "service = \"paymnets\"\nroute"),
        &["bad.toml:16:1: agents.a.tools[0].service: no service named \"paymnets\"; did you mean `payments`?"],
    );
    rejected(
        &agent("").replace("route = \"create-transfer\"\n[[agents", "route = \"create-transfers\"\n[[agents"),
        &["bad.toml:17:1: agents.a.tools[0].route: no route named \"create-transfers\" in service \"payments\"; did you mean `create-transfer`?"],
    );
}

#[test]
fn agui_a_call_or_interrupt_naming_an_unknown_tool_gets_a_hint() {
    rejected(
        &agent("").replace("{ tool = \"transfer_funds\"", "{ tool = \"transfer_fund\""),
        &["bad.toml:20:17: agents.a.iterations[0].tool_calls[0].tool: no tool named \"transfer_fund\" in [[agents.a.tools]]; did you mean `transfer_funds`?"],
    );
    rejected(
        &agent("[[agents.a.interrupts]]\nphase = \"beforeTools\"\ntool_call = \"transfer_fund\"\n"),
        &["bad.toml:23:1: agents.a.interrupts[0].tool_call: no tool named \"transfer_fund\"; did you mean `transfer_funds`?"],
    );
}

#[test]
fn agui_misspelt_keys_phases_and_policies_get_a_hint() {
    rejected(
        &agent("[[agents.a.interrupts]]\nphase = \"beforeTool\"\n"),
        &["bad.toml:22:1: agents.a.interrupts[0].phase: unknown variant `beforeTool`, expected one of `beforeModel`, `afterModel`, `beforeTools`, `afterTools`; did you mean `beforeTools`?"],
    );
    rejected(
        &agent("[[agents.a.interrupts]]\nphase = \"beforeTools\"\nexpire_in = \"10m\"\n"),
        &["bad.toml:23:1: agents.a.interrupts[0].expire_in: unknown key `expire_in`; did you mean `expires_in`? (expected one of: phase, iteration, key, reason, message, tool_call, approve_if, response_schema, expires_in, subagent_run_id, on_continuation)"],
    );
    rejected(
        &agent("").replace("protocol = \"ag-ui\"\n", "protocol = \"ag-ui\"\nuncovered = \"rejected\"\n"),
        &["bad.toml:14:1: agents.a.uncovered: unknown variant `rejected`, expected one of `reinterrupt`, `reject`, `run-error`; did you mean `reject`?"],
    );
    rejected(
        &agent("").replace("protocol = \"ag-ui\"\n", "protocol = \"ag-ui\"\nviolate = [\"unknown-field\"]\n"),
        &["bad.toml:14:12: agents.a.violate[0]: unknown variant `unknown-field`, expected one of `success-while-interrupted`, `duplicate-interrupt-ids`, `interrupt-without-interrupts`, `missing-run-finished`, `unknown-fields`; did you mean `unknown-fields`?"],
    );
    rejected(
        &agent("[[agents.a.interrupts]]\nphase = \"beforeTools\"\nexpires_in = \"10 minutes\"\n"),
        &["bad.toml:23:1: agents.a.interrupts[0].expires_in: expected a duration like \"250ms\", \"3s\", \"10m\", \"24h\" or \"1h30m\", found \"10 minutes\""],
    );
}

#[test]
fn agui_interrupt_semantics_are_checked() {
    rejected(
        &agent("[[agents.a.interrupts]]\nphase = \"afterModel\"\niteration = 3\n[[agents.a.interrupts]]\nphase = \"afterModel\"\ntool_call = \"transfer_funds\"\napprove_if = \"approved\"\n"),
        &[
            "bad.toml:23:1: agents.a.interrupts[0].iteration: iteration 3 does not exist: the agent has 1 iteration(s), numbered from 0",
            "bad.toml:26:1: agents.a.interrupts[1].tool_call: `tool_call` applies only at beforeTools (an approval: the call has not run) or afterTools (an audit: it has); at afterModel this iteration's tool calls are not in the messages yet (PH-1, PH-2)",
            "bad.toml:27:1: agents.a.interrupts[1].approve_if: \"approved\" is not a JSON pointer; pointers start with '/', e.g. \"/approved\"",
            "bad.toml:27:1: agents.a.interrupts[1].approve_if: `approve_if` gates a tool call: it needs `tool_call` and phase = \"beforeTools\"",
        ],
    );
    rejected(
        &agent("[[agents.a.interrupts]]\nphase = \"beforeTools\"\nkey = \"k\"\n[[agents.a.interrupts]]\nphase = \"afterTools\"\nkey = \"k\"\n"),
        &["bad.toml:26:1: agents.a.interrupts[1].key: duplicate interrupt key \"k\": keys are the interrupts' ids and must be unique per agent (INT-3)"],
    );
    rejected(
        &agent("[[agents.a.interrupts]]\nphase = \"beforeTools\"\nresponse_schema = \"object\"\n"),
        &["bad.toml:23:1: agents.a.interrupts[0].response_schema: response_schema must be a table (a JSON Schema object)"],
    );
}

#[test]
fn agui_tools_are_backend_or_frontend_and_calls_fill_their_route() {
    rejected(
        &agent("").replace("route = \"create-transfer\"\n[[agents", "route = \"create-transfer\"\nfrontend = true\n[[agents"),
        &["bad.toml:14:1: agents.a.tools[0]: a tool is either a backend tool (service + route) or a frontend tool (frontend = true), not both"],
    );
    rejected(
        &agent("").replace("service = \"payments\"\n", ""),
        &["bad.toml:14:1: agents.a.tools[0]: missing key `service`: a backend tool names a fake-service route (service + route); a tool the application runs says frontend = true"],
    );
    rejected(
        &agent("").replace("route = \"create-transfer\"", "route = \"get-transfer\""),
        &["bad.toml:20:42: agents.a.iterations[0].tool_calls[0].args: route \"get-transfer\" of service \"payments\" has a {id} path segment: give `id` (a string or number) in args"],
    );
    rejected(
        &format!("{SERVICES}[agents.a]\nprotocol = \"ag-ui\"\n"),
        &["bad.toml:12:9: agents.a: an AG-UI agent needs at least one [[agents.a.iterations]] (a scripted model turn)"],
    );
}
