//! MCP servers in a scenario (`doubleagent::scenario::mcp`): a tool compiles against its route;
//! unknown routes, keys, versions and annotations are located.

use doubleagent::scenario::Scenario;

const PAY: &str = "[services.payments]\nidempotency = { preset = \"stripe\" }\n[[services.payments.routes]]\nname = \"create-transfer\"\nmethod = \"POST\"\npath = \"/v1/transfers\"\nkind = \"action\"\n[[services.payments.routes]]\nname = \"get-transfer\"\nmethod = \"GET\"\npath = \"/v1/transfers/{id}\"\nkind = \"lookup\"\n";

fn err(extra: &str) -> String {
    Scenario::from_toml(&format!("{PAY}{extra}"), "s.toml")
        .unwrap_err()
        .to_string()
}

#[test]
fn a_tool_compiles_against_its_route() {
    let src = format!("{PAY}[mcp.payments]\n[[mcp.payments.tools]]\nname = \"get_transfer\"\ninput_schema = {{ type = \"object\" }}\ncall = {{ service = \"payments\", route = \"get-transfer\", path = {{ id = \"/id\" }} }}\nkey = \"/k\"\n");
    let s = Scenario::from_toml(&src, "s.toml").unwrap();
    let server = &s.mcp[0];
    assert_eq!(server.versions, ["2025-11-25", "2026-07-28"]);
    let tool = server.tool("get_transfer").unwrap();
    assert_eq!(tool.method, "GET");
    assert_eq!(tool.path_params, [("id".to_string(), "/id".to_string())]);
    assert_eq!(tool.key_header.as_str(), "idempotency-key");
}

#[test]
fn unknown_routes_keys_versions_and_annotations_are_located() {
    let bad_call = "[mcp.p]\nversions = [\"2025-11-25\", \"2024-01-01\"]\n[[mcp.p.tools]]\nname = \"t\"\ncall = { service = \"payments\", route = \"get-transfer\" }\nannotations = { idempotentHInt = true }\n";
    for (extra, wants) in [
        ("[mcp.p]\n[[mcp.p.tools]]\nname = \"t\"\ncall = { service = \"payments\", route = \"create-transfr\" }\n", &["s.toml:16:32: mcp.p.tools[0].call.route: no route named \"create-transfr\" in service \"payments\"; did you mean `create-transfer`?"][..]),
        (bad_call, &[
            "mcp.p.versions[1]: unknown MCP protocol version \"2024-01-01\"",
            "mcp.p.tools[0].call: route \"get-transfer\"'s path /v1/transfers/{id} has the parameter {id}",
            "mcp.p.tools[0].annotations.idempotentHInt: unknown annotation `idempotentHInt`; did you mean `idempotentHint`?",
        ]),
        ("[mcp.p]\n[[mcp.p.tools]]\nname = \"t\"\ncal = { service = \"payments\", route = \"create-transfer\" }\n", &["mcp.p.tools[0].cal: unknown key `cal`"]),
    ] {
        let e = err(extra);
        for want in wants {
            assert!(e.contains(want), "{e}");
        }
    }
}

#[test]
fn a_key_comes_from_an_argument_meta_or_params() {
    let tool = |key: &str| {
        let src = format!("{PAY}[mcp.p]\n[[mcp.p.tools]]\nname = \"t\"\ncall = {{ service = \"payments\", route = \"create-transfer\" }}\nkey = {key}\n");
        Scenario::from_toml(&src, "s.toml").map(|s| s.mcp[0].tools[0].key.clone())
    };
    use doubleagent::scenario::mcp::KeySource::*;
    assert_eq!(tool("\"/k\"").unwrap(), Some(Argument("/k".into())));
    assert_eq!(tool("{ meta = \"m\" }").unwrap(), Some(Meta("m".into())));
    assert_eq!(
        tool("{ params = \"idempotencyKey\" }").unwrap(),
        Some(Params("idempotencyKey".into()))
    );
    for bad in ["\"k\"", "{ meta = 1 }", "{ argument = \"/k\" }", "7"] {
        let e = tool(bad).unwrap_err().to_string();
        assert!(e.contains("mcp.p.tools[0].key: "), "{bad}: {e}");
    }
}
