//! A2A agents in a scenario (`doubleagent::scenario::a2a`): behaviours inherit the agent's script
//! and match in order; unknown names, late steps, keys and policies are located.

use doubleagent::scenario::{AgentSpec, Scenario};

fn agent(src: &str) -> doubleagent::scenario::a2a::A2aAgent {
    let s = Scenario::from_toml(src, "s.toml").unwrap();
    match &s.agents[0].spec {
        AgentSpec::A2a(a) => a.clone(),
        AgentSpec::AgUi(_) => panic!("not a2a"),
    }
}

fn err(src: &str) -> String {
    Scenario::from_toml(src, "s.toml").unwrap_err().to_string()
}

const PAY: &str = "[services.payments]\n[[services.payments.routes]]\nname = \"create-transfer\"\nmethod = \"POST\"\npath = \"/v1/transfers\"\nkind = \"action\"\n";

#[test]
fn behaviours_inherit_the_agent_script_and_match_in_order() {
    let a = agent(&format!(
        "{PAY}[agents.r]\nprotocol = \"a2a\"\nwork = \"3s\"\ncancel = \"honor-before:1s\"\n[agents.r.result]\ntext = \"x\"\n\
         [[agents.r.steps]]\nat = \"1s\"\ncall = {{ service = \"payments\", route = \"create-transfer\", json = {{ a = 1 }} }}\n\
         [[agents.r.behaviors]]\nmatch = {{ message_id_prefix = \"rej-\" }}\noutcome = \"rejected\"\nmessage = \"no\"\n\
         [[agents.r.behaviors]]\nmatch = {{ text = \"quick\", metadata = {{ lane = \"fast\" }} }}\nwork = \"1s\"\n"
    ));
    assert_eq!(a.script.steps.len(), 1);
    assert_eq!(
        a.script.cancel,
        doubleagent::scenario::a2a::CancelPolicy::HonorBefore(std::time::Duration::from_secs(1))
    );
    let (i, s) = a.script_for("hi", "rej-1", None);
    assert_eq!(i, Some(0));
    assert!(
        s.artifacts.is_empty(),
        "a rejection does not inherit the result"
    );
    assert_eq!(s.steps.len(), 1);
    let meta: serde_json::Map<_, _> = serde_json::from_str(r#"{"lane":"fast"}"#).unwrap();
    let (i, s) = a.script_for("be quick", "m", Some(&meta));
    assert_eq!(i, Some(1));
    assert_eq!(s.artifacts.len(), 1);
    assert_eq!(a.script_for("be quick", "m", None).0, None);
}

#[test]
fn unknown_names_late_steps_keys_and_policies_are_located() {
    let step = |work: &str, at: &str, route: &str| {
        format!("{PAY}[agents.r]\nprotocol = \"a2a\"\nwork = \"{work}\"\n[[agents.r.steps]]\nat = \"{at}\"\ncall = {{ service = \"payments\", route = \"{route}\" }}\n")
    };
    for (src, want) in [
        (
            step("3s", "1s", "create-transfr"),
            "agents.r.steps[0].call.route: no route named \"create-transfr\" in service \"payments\"; did you mean `create-transfer`?",
        ),
        (
            step("1s", "2s", "create-transfer"),
            "agents.r.steps[0].at: at = \"2s\" comes after the task ends",
        ),
        (
            "[agents.r]\nprotocol = \"a2a\"\ncancel = \"too-lat\"\n".into(),
            "agents.r.cancel: unknown cancel policy \"too-lat\"; did you mean `too-late`?",
        ),
    ] {
        let e = err(&src);
        assert!(e.contains(want), "{e}");
    }
    let e = err("[agents.r]\nprotocol = \"a2a\"\nwrok = \"1s\"\n");
    assert!(
        e.starts_with("s.toml:3:1: agents.r.wrok: unknown key `wrok`; did you mean `work`?"),
        "{e}"
    );
}
