//! Golden error messages: a bad scenario is rejected with `file:line:col: key.path: message`
//! (and a "did you mean" for a misspelt key), exit code 2, and nothing is served.

mod common;

use common::*;
use std::process::Command;

/// Run `doubleagent check bad.toml` in the file's directory; return (exit code, stderr).
fn check(toml: &str) -> (i32, String) {
    let path = temp_file("bad.toml", toml);
    let out = Command::new(bin())
        .args(["check", "bad.toml"])
        .current_dir(path.parent().unwrap())
        .output()
        .unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8(out.stderr)
            .unwrap()
            .trim_end()
            .to_string(),
    )
}

fn route(extra: &str) -> String {
    format!("[services.payments]\n[[services.payments.routes]]\nname = \"a\"\nmethod = \"POST\"\npath = \"/a\"\nkind = \"action\"\n{extra}\n")
}

#[track_caller]
fn golden(toml: &str, expected: &str) {
    let (code, err) = check(toml);
    assert_eq!(code, 2, "exit code for: {err}");
    assert_eq!(err, expected);
}

#[test]
fn a_misspelt_key_is_located_and_gets_a_hint() {
    golden(
        &route("fatez = [\"respond\"]"),
        "bad.toml:7:1: services.payments.routes[0].fatez: unknown key `fatez`; did you mean `fates`? (expected one of: name, method, path, kind, intent, fates, per, respond, idempotency, match, lag, available, policy, of, repeatable, id, error)",
    );
    golden(
        "nmae = \"x\"\n",
        "bad.toml:1:1: nmae: unknown key `nmae`; did you mean `name`? (expected one of: name, seed, clock, max_body_bytes, ledger_body_bytes, services, agents, mcp)",
    );
}

#[test]
fn a_bad_duration_says_what_a_duration_looks_like() {
    golden(
        "[services.payments]\nidempotency = { preset = \"stripe\", retention = \"24 hours\" }\n",
        "bad.toml:2:48: services.payments.idempotency.retention: expected a duration like \"250ms\", \"3s\", \"10m\", \"24h\" or \"1h30m\", found \"24 hours\"",
    );
}

#[test]
fn a_bad_status_code_is_rejected() {
    golden(
        &route("respond = { status = 999 }"),
        "bad.toml:7:22: services.payments.routes[0].respond.status: expected an HTTP status code between 100 and 599, found 999",
    );
}

#[test]
fn duplicate_route_names_and_paths_are_rejected() {
    let dup_name = format!("{}[[services.payments.routes]]\nname = \"a\"\nmethod = \"POST\"\npath = \"/b\"\nkind = \"action\"\n", route(""));
    golden(&dup_name, "bad.toml:9:1: services.payments.routes[1].name: duplicate route name \"a\" in service \"payments\"");
    let dup_path = format!("{}[[services.payments.routes]]\nname = \"b\"\nmethod = \"POST\"\npath = \"/a\"\nkind = \"action\"\n", route(""));
    golden(
        &dup_path,
        "bad.toml:11:1: services.payments.routes[1].path: duplicate route: POST /a is already served by route \"a\" (add a `match` to tell them apart)",
    );
}

#[test]
fn a_service_named_admin_is_rejected() {
    golden(
        "[services._admin]\n",
        "bad.toml:1:11: services._admin: \"_admin\" is reserved for doubleagent's own endpoints; pick another service name",
    );
}

#[test]
fn unknown_fates_and_kinds_get_hints() {
    golden(
        &route("fates = [\"respond\", \"dleay:1s\"]"),
        "bad.toml:7:9: services.payments.routes[0].fates[1]: unknown fate \"dleay:1s\"; did you mean `delay`?; expected one of: respond, delay:<dur>, drop-after-apply, hang-after-apply, reset-after-apply, drop-before-apply, error-before-apply:<status>, error-after-apply:<status>, respond-without-apply, apply-later:<dur>",
    );
    golden(
        "[services.payments]\n[[services.payments.routes]]\nname = \"a\"\nmethod = \"POST\"\npath = \"/a\"\nkind = \"acton\"\n",
        "bad.toml:6:8: services.payments.routes[0].kind: unknown variant `acton`, expected one of `action`, `lookup`, `cancel`; did you mean `action`?",
    );
}

#[test]
fn keys_of_another_route_kind_are_rejected_not_ignored() {
    golden(
        &route("lag = \"2s\""),
        "bad.toml:7:1: services.payments.routes[0].lag: `lag` applies only to lookup routes; this route is kind = \"action\"",
    );
}

#[test]
fn syntax_errors_and_missing_fields_are_located() {
    golden(
        "[services.payments\n",
        "bad.toml:1:19: unclosed table, expected `]`",
    );
    golden(
        "[services.payments]\n[[services.payments.routes]]\nname = \"a\"\npath = \"/a\"\nkind = \"action\"\n",
        "bad.toml:2:1: services.payments.routes[0]: missing field `method`",
    );
}

#[test]
fn every_problem_the_semantic_pass_finds_is_reported() {
    let (code, err) = check("[services._admin]\n[services.agents]\n");
    assert_eq!(code, 2);
    assert_eq!(err.lines().count(), 2, "{err}");
}

#[test]
fn serve_refuses_a_bad_scenario_with_exit_2_and_serves_nothing() {
    let path = temp_file("bad.toml", "[services._admin]\n");
    let out = Command::new(bin())
        .args(["serve", path.to_str().unwrap(), "--listen", "127.0.0.1:0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        out.stdout.is_empty(),
        "no ready line: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("services._admin: \"_admin\" is reserved")
    );
}

#[test]
fn every_shipped_scenario_validates() {
    let dir = format!("{}/scenarios", env!("CARGO_MANIFEST_DIR"));
    let files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path().display().to_string())
        .filter(|p| p.ends_with(".toml"))
        .collect();
    assert!(
        files.len() >= 4,
        "quickstart plus at least three more: {files:?}"
    );
    let out = Command::new(bin())
        .arg("check")
        .args(&files)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn an_agent_needs_a_known_protocol() {
    golden(
        "[agents.researcher]\nprotocol = \"a2b\"\n",
        "bad.toml:2:1: agents.researcher.protocol: unknown protocol \"a2b\"; did you mean `a2a`?; expected \"a2a\" or \"ag-ui\"",
    );
    golden(
        "[agents.researcher]\nwork = \"3s\"\n",
        "bad.toml:1:9: agents.researcher: missing key `protocol` (\"a2a\" or \"ag-ui\")",
    );
}

/// A response placeholder that can name nothing is refused at load rather than sent to the
/// client verbatim (issue 27, item 6).
#[test]
fn a_response_placeholder_that_names_nothing_is_located_and_gets_a_hint() {
    golden(
        &route("respond = { json = { id = \"{{action.id}}\", n = \"{{acton.seq}}\" } }"),
        "bad.toml:7:44: services.payments.routes[0].respond.json.n: `{{acton.seq}}` names nothing; did you mean `action.seq`? (a response can use action.id, action.seq, key, work_id, revision, now, request.method, request.path, body./POINTER, path.NAME)",
    );
    golden(
        &route("respond = { body = \"{{path.id}} {{body.amount}}\" }"),
        "bad.toml:7:13: services.payments.routes[0].respond.body: `{{path.id}}`: the route's path has no parameter `{id}`\n\
         bad.toml:7:13: services.payments.routes[0].respond.body: `{{body.amount}}`: `body.` takes a JSON pointer, like `{{body./amount}}`",
    );
}

/// An A2A agent's texts are checked the same way: a typo in a result, a step's call or a
/// behaviour's message is an error at load, not text handed to the orchestrator (issue 27,
/// item 6).
#[test]
fn an_agent_placeholder_that_names_nothing_is_located_and_gets_a_hint() {
    golden(
        "[agents.researcher]\nprotocol = \"a2a\"\n\n[agents.researcher.result]\ntext = \"done {{task.idd}}\"\n",
        "bad.toml:5:1: agents.researcher.result.text: `{{task.idd}}` names nothing; did you mean `task.id`? (an A2A agent's texts can use canary, task.id, context.id, revision, agent, message.text)",
    );
    golden(
        "[agents.researcher]\nprotocol = \"a2a\"\n\n[[agents.researcher.behaviors]]\nmatch = { text = \"stop\" }\nmessage = \"ok {{revison}} {{canary}}\"\n",
        "bad.toml:6:1: agents.researcher.behaviors[0].message: `{{revison}}` names nothing; did you mean `revision`? (an A2A agent's texts can use canary, task.id, context.id, revision, agent, message.text)",
    );
}

/// A status doubleagent answers with must be one the wire can carry as that answer: an
/// idempotency error status (a same-key request during a `delay` gets `conflict_status`, REC-4)
/// is 4xx or 5xx, as a fate's error status is; a response's status is not an interim 1xx.
#[test]
fn idempotency_error_statuses_must_be_4xx_or_5xx_and_a_respond_status_not_1xx() {
    let idem = |fields: &str| {
        format!("[services.payments]\nidempotency = {{ preset = \"stripe\", {fields} }}\n")
    };
    golden(
        &idem("conflict_status = 101"),
        "bad.toml:2:54: services.payments.idempotency.conflict_status: expected an HTTP error status between 400 and 599, found 101",
    );
    golden(
        &idem("mismatch_status = 200, missing_status = 204"),
        "bad.toml:2:54: services.payments.idempotency.mismatch_status: expected an HTTP error status between 400 and 599, found 200\n\
         bad.toml:2:59: services.payments.idempotency.missing_status: expected an HTTP error status between 400 and 599, found 204",
    );
    golden(
        &route("idempotency = { conflict_status = 999 }"),
        "bad.toml:7:35: services.payments.routes[0].idempotency.conflict_status: expected an HTTP error status between 400 and 599, found 999",
    );
    golden(
        &route("respond = { status = 101 }"),
        "bad.toml:7:22: services.payments.routes[0].respond.status: expected an HTTP status code between 200 and 599, found 101 (a 1xx status is interim, not an answer)",
    );
    // Every error status a response may take passes.
    let (code, err) = check(&idem(
        "mismatch_status = 409, conflict_status = 503, missing_status = 428",
    ));
    assert_eq!(code, 0, "{err}");
    let (code, err) = check(&route("respond = { status = 204 }"));
    assert_eq!(code, 0, "{err}");
}

/// A header value the server could not send (a control character) is refused at `check`, not
/// left to fail the response: static text only, as a placeholder's value is the request's.
#[test]
fn a_header_value_with_a_control_character_is_rejected() {
    golden(
        &route(r#"respond = { headers = { "X-A" = "v\nw", "X-B" = "é", "X-C" = "{{body./h}}" } }"#),
        r#"bad.toml:7:25: services.payments.routes[0].respond.headers.X-A: "v\nw" is not a valid HTTP header value"#,
    );
    golden(
        &route(r#"respond = { headers = { "X-A" = "k={{key}}\r" } }"#),
        r#"bad.toml:7:25: services.payments.routes[0].respond.headers.X-A: "k={{key}}\r" is not a valid HTTP header value"#,
    );
    golden(
        &route(r#"match = { headers = { "X-Mode" = "a\u0000b" } }"#),
        r#"bad.toml:7:23: services.payments.routes[0].match.headers.X-Mode: "a\0b" is not a valid HTTP header value"#,
    );
}

/// An `error` template's placeholder that names nothing is a `check` error with its key path,
/// on a service and on a route, as a response's is.
#[test]
fn an_error_template_placeholder_that_names_nothing_is_located_and_gets_a_hint() {
    golden(
        "[services.payments]\nerror = { oops = \"{{error.nope}}\", ok = \"{{error.id}} {{error.message}}\" }\n",
        "bad.toml:2:11: services.payments.error.oops: `{{error.nope}}` names nothing (an error template can use error.status, error.message, error.kind, error.id, error.state, error.closest, error.services)",
    );
    golden(
        &route("error = { m = \"{{error.mesage}}\" }"),
        "bad.toml:7:11: services.payments.routes[0].error.m: `{{error.mesage}}` names nothing; did you mean `error.message`? (an error template can use error.status, error.message, error.kind, error.id, error.state, error.closest, error.services)",
    );
}

/// A JSON pointer whose `~` is not `~0` or `~1` (RFC 6901) points at nothing any body can
/// have: refused at `check`, in a placeholder and wherever a scenario takes a pointer.
#[test]
fn a_json_pointer_with_an_invalid_escape_is_rejected() {
    golden(
        &route("respond = { json = { c = \"{{body./a~2}}\", d = \"{{body./a~0b~1c}}\" } }"),
        "bad.toml:7:22: services.payments.routes[0].respond.json.c: `{{body./a~2}}`: \"/a~2\" is not a valid JSON pointer: a `~` is written `~0`, and a `/` within a key `~1`",
    );
    golden(
        &route("intent = [\"/to\", \"/a~\"]"),
        "bad.toml:7:10: services.payments.routes[0].intent[1]: \"/a~\" is not a valid JSON pointer: a `~` is written `~0`, and a `/` within a key `~1`",
    );
}

/// A path parameter named twice (`/x/{id}/{id}`) could fill `{{path.id}}` from either segment:
/// refused at `check`.
#[test]
fn a_path_parameter_named_twice_is_rejected() {
    golden(
        "[services.payments]\n[[services.payments.routes]]\nname = \"a\"\nmethod = \"GET\"\npath = \"/x/{id}/{id}\"\nkind = \"lookup\"\n",
        "bad.toml:5:1: services.payments.routes[0].path: \"{id}\" is named twice in the path; give each parameter its own name",
    );
}

/// When the only fate is invalid, only its problem is reported: the empty sequence left by
/// dropping it is a consequence, not the user's (docs/cli.md).
#[test]
fn an_invalid_only_fate_is_reported_without_an_empty_sequence_error() {
    golden(
        &route("fates = [\"error-before-apply:999\"]"),
        "bad.toml:7:9: services.payments.routes[0].fates[0]: error-before-apply needs an HTTP error status 400..=599, found \"999\"",
    );
    golden(
        &route("fates = [\"delay:-1s\"]"),
        "bad.toml:7:9: services.payments.routes[0].fates[0]: delay: expected a duration like \"250ms\", \"3s\", \"10m\", \"24h\" or \"1h30m\", found \"-1s\"",
    );
    // A sequence the user left empty is still refused.
    golden(
        &route("fates = []"),
        "bad.toml:7:9: services.payments.routes[0].fates: a fate sequence needs at least one fate",
    );
}

/// A bad header in a service's `idempotency` is reported once, at the service's key, not again
/// for each route under a key path the file does not have.
#[test]
fn a_service_idempotency_header_problem_is_reported_once_at_its_own_key() {
    let svc = "[services.payments]\nidempotency = { header = \"\", replay_header = \"a b\" }\n";
    let routes = "[[services.payments.routes]]\nname = \"a\"\nmethod = \"POST\"\npath = \"/a\"\nkind = \"action\"\n\
                  [[services.payments.routes]]\nname = \"b\"\nmethod = \"POST\"\npath = \"/b\"\nkind = \"action\"\n";
    let expected = "bad.toml:2:17: services.payments.idempotency.header: \"\" is not a valid HTTP header name\n\
                    bad.toml:2:30: services.payments.idempotency.replay_header: \"a b\" is not a valid HTTP header name (\"\" for none)";
    golden(&format!("{svc}{routes}"), expected);
    // A service without routes: its table is still checked.
    golden(svc, expected);
    // A route's own table is reported at the route's key.
    golden(
        &route("idempotency = { header = \"a b\" }"),
        "bad.toml:7:17: services.payments.routes[0].idempotency.header: \"a b\" is not a valid HTTP header name",
    );
}

/// A lookup's `respond` (a template over the action found) is checked as an action's is: a
/// placeholder that names nothing a lookup can name is a `check` error.
#[test]
fn a_lookup_response_placeholder_that_names_nothing_is_located_and_gets_a_hint() {
    golden(
        "[services.payments]\n[[services.payments.routes]]\nname = \"a\"\nmethod = \"GET\"\npath = \"/x/{id}\"\nkind = \"lookup\"\nrespond = { json = { id = \"{{id}}\", s = \"{{stat}}\", p = \"{{path.nope}} {{path.id}}\" } }\n",
        "bad.toml:7:53: services.payments.routes[0].respond.json.p: `{{path.nope}}`: the route's path has no parameter `{nope}`\n\
         bad.toml:7:37: services.payments.routes[0].respond.json.s: `{{stat}}` names nothing; did you mean `state`? (a lookup's answer can use id, action.id, action.seq, state, key, applied_at, received_at, now, intent, body./POINTER, path.NAME)",
    );
}
