use doubleagent::agent::a2a::card::*;
use doubleagent::agent::a2a::rpc::Binding;
use serde_json::json;

#[test]
fn agent_card_has_the_fields_the_client_requires() {
    // The card the reference server emitted (reference §2).
    let reference = json!({"name":"fake","description":"d","supportedInterfaces":[{"url":"http://127.0.0.1:8765/",
        "protocolBinding":"JSONRPC","protocolVersion":"1.0"}],"version":"0.1.0","capabilities":{"streaming":true},
        "defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],
        "skills":[{"id":"echo","name":"Echo","description":"echo","tags":["t"]}]});
    let card: AgentCard = serde_json::from_value(reference.clone()).unwrap();
    assert_eq!(serde_json::to_value(card).unwrap(), reference);

    let url = "http://127.0.0.1:7070/agents/researcher";
    let all = interfaces(&[], url, Some(("127.0.0.1:7071", "researcher".into())));
    let card = serde_json::to_value(agent_card("researcher", "does research", all)).unwrap();
    assert_eq!(
        card["supportedInterfaces"][2],
        json!({"url": "127.0.0.1:7071", "protocolBinding": "GRPC", "protocolVersion": "1.0",
            "tenant": "researcher"})
    );
    let two = interfaces(&[], url, None);
    let card = serde_json::to_value(agent_card("researcher", "does research", two)).unwrap();
    for field in [
        "name",
        "description",
        "supportedInterfaces",
        "version",
        "capabilities",
        "defaultInputModes",
        "defaultOutputModes",
        "skills",
    ] {
        assert!(card.get(field).is_some(), "{field}");
    }
    for legacy in [
        "url",
        "preferredTransport",
        "protocolVersion",
        "additionalInterfaces",
    ] {
        assert!(
            card.get(legacy).is_none(),
            "{legacy} would switch the client to 0.3"
        );
    }
    assert_eq!(
        card["supportedInterfaces"],
        json!([{"url": "http://127.0.0.1:7070/agents/researcher",
        "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
        {"url": "http://127.0.0.1:7070/agents/researcher",
        "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"}])
    );
    assert_eq!(
        card["capabilities"],
        json!({"streaming": true, "pushNotifications": true})
    );
    assert!(!card["skills"][0]["tags"].as_array().unwrap().is_empty());
    assert!(!serde_json::to_string(&card).unwrap().contains("null"));
}

#[test]
fn a_card_lists_only_the_bindings_the_agent_serves() {
    let only = interfaces(
        &[Binding::HttpJson],
        "http://h/agents/a",
        Some(("h:1", "a".into())),
    );
    assert_eq!(only.len(), 1);
    assert_eq!(only[0].protocol_binding, "HTTP+JSON");
}
