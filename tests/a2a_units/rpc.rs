use doubleagent::agent::a2a::errors::ErrorKind;
use doubleagent::agent::a2a::errors::RpcError;
use doubleagent::agent::a2a::params::SendMessageRequest;
use doubleagent::agent::a2a::rpc::*;
use doubleagent::agent::a2a::types::{Role, StreamResponse};
use serde::Deserialize;
use serde_json::json;
use serde_json::Value;

fn parsed(body: &[u8]) -> Value {
    serde_json::from_slice(body).unwrap()
}

#[test]
fn send_message_request_as_the_python_client_sends_it() {
    // Captured from a2a-sdk 1.3.0 (reference §2); the client always sends `configuration`.
    let req = json!({"method":"SendMessage","params":{"message":{"messageId":"2343","role":"ROLE_USER",
        "parts":[{"text":"hi"}]},"configuration":{}},"id":"602cb691","jsonrpc":"2.0"});
    let body = req.to_string();
    let rpc = parse_request(body.as_bytes()).unwrap();
    assert_eq!(rpc.id, RpcId::from("602cb691"));
    assert_eq!(Method::from_name(&rpc.method), Some(Method::SendMessage));
    let params: SendMessageRequest = rpc.params().unwrap();
    assert_eq!(params.message.role, Role::User);
    assert_eq!(params.message.text(), "hi");
    assert!(!params.return_immediately());
    assert_eq!(serde_json::to_value(&params).unwrap(), req["params"]);
}

#[test]
fn error_response_matches_reference_capture() {
    let captured = json!({"error":{"code":-32002,"message":"Task cannot be canceled","data":[{
        "@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"TASK_NOT_CANCELABLE",
        "domain":"a2a-protocol.org","metadata":{}}]},"id":"1","jsonrpc":"2.0"});
    let e = RpcError::new(ErrorKind::TaskNotCancelable, "Task cannot be canceled");
    let body = error_body(&RpcId::from("1"), &e);
    assert_eq!(parsed(&body), captured);
    // Keys sorted, as the answers have always had them.
    assert_eq!(body, serde_json::to_vec(&captured).unwrap());
}

#[test]
fn parse_request_classifies_envelope_errors_in_reference_order() {
    let code = |body: &str| parse_request(body.as_bytes()).unwrap_err();
    let (id, e) = code(r#"{"jsonrpc": "2.0", "id": 1, "method": "#);
    assert_eq!((e.code, &id), (-32700, &RpcId::Null));
    assert_eq!(
        parsed(&error_body(&id, &e))["id"],
        Value::Null,
        "id is sent as null, not omitted"
    );
    assert!(e.data.is_empty());

    let (_, e) = code(r#"[{"jsonrpc":"2.0","id":1,"method":"GetTask"}]"#);
    assert_eq!(e.code, -32600);
    let (_, e) = code(r#""just a string""#);
    assert_eq!(e.code, -32600);

    let (id, e) = code(r#"{"jsonrpc":"1.0","id":"x","method":"GetTask"}"#);
    assert_eq!((e.code, id), (-32600, RpcId::from("x")));

    let (id, e) = code(r#"{"jsonrpc":"2.0","id":true,"method":"GetTask"}"#);
    assert_eq!((e.code, id), (-32600, RpcId::Null));

    let (id, e) = code(r#"{"jsonrpc":"2.0","id":3,"method":""}"#);
    assert_eq!((e.code, id), (-32600, RpcId::from(3)));

    let (id, e) = code(r#"{"jsonrpc":"2.0","id":3,"method":"GetTask","params":[1]}"#);
    assert_eq!((e.code, id), (-32602, RpcId::from(3)));

    // Unknown methods pass the envelope check; the caller answers -32601.
    let ok =
        parse_request(br#"{"jsonrpc":"2.0","id":7,"method":"message/send","params":{}}"#).unwrap();
    assert_eq!(Method::from_name(&ok.method), None);
    // A repeated member is its last value, as for any JSON object.
    let twice = parse_request(br#"{"jsonrpc":"2.0","id":1,"id":"2","method":"GetTask"}"#);
    assert_eq!(twice.unwrap().id, RpcId::from("2"));
    let null = parse_request(br#" {"jsonrpc":"2.0","method":"GetTask","params":null} "#);
    assert_eq!(null.unwrap().id, RpcId::Null);
}

#[test]
fn params_mismatch_is_invalid_params() {
    let rpc = parse_request(
        br#"{"jsonrpc":"2.0","id":"g","method":"GetTask","params":{"historyLength":2}}"#,
    )
    .unwrap();
    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct NeedsId {
        id: String,
    }
    let err = rpc.params::<NeedsId>().unwrap_err();
    assert_eq!(err.code, -32602);
    assert_eq!(
        err.message,
        "invalid params for GetTask: missing field `id`"
    );
    let meta = &err.data[0].metadata;
    assert_eq!(meta["parseError"], "missing field `id`");
}

#[test]
fn rpc_ids_are_echoed_as_sent() {
    for id in [json!("abc"), json!(42), json!(null), json!(1.5)] {
        let rid: RpcId = serde_json::from_value(id.clone()).unwrap();
        let body = success_body(&rid, &json!({}));
        assert_eq!(
            parsed(&body),
            json!({"jsonrpc": "2.0", "result": {}, "id": id})
        );
    }
}

#[test]
fn delete_result_null_is_still_a_result() {
    let body = success_body(&RpcId::from("d1"), &Value::Null);
    assert_eq!(body, br#"{"id":"d1","jsonrpc":"2.0","result":null}"#);
}

#[test]
fn stream_events_from_reference_sse_capture() {
    let submitted = json!({"result": {"task": {"id": "66e5", "contextId": "0546",
        "status": {"state": "TASK_STATE_SUBMITTED"}, "history": [{"messageId": "m1", "contextId": "0546",
        "taskId": "66e5", "role": "ROLE_USER", "parts": [{"text": "research vendor"}]}]}},
        "id": "s1", "jsonrpc": "2.0"});
    let artifact = json!({"result": {"artifactUpdate": {"taskId": "66e5", "contextId": "0546",
        "artifact": {"artifactId": "a1", "name": "answer", "parts": [{"text": "result text"}]}}},
        "id": "s1", "jsonrpc": "2.0"});
    let completed = json!({"result": {"statusUpdate": {"taskId": "66e5", "contextId": "0546",
        "status": {"state": "TASK_STATE_COMPLETED", "timestamp": "2026-11-30T08:20:56.819310Z"}}},
        "id": "s1", "jsonrpc": "2.0"});
    let mut ends = Vec::new();
    for doc in [&submitted, &artifact, &completed] {
        let ev: StreamResponse = serde_json::from_value(doc["result"].clone()).unwrap();
        let body = success_body(&RpcId::from("s1"), &ev);
        assert_eq!(parsed(&body), *doc);
        assert_eq!(body, serde_json::to_vec(doc).unwrap(), "keys sorted");
        ends.push(ev.ends_stream());
    }
    assert_eq!(ends, [false, false, true]);
}

#[test]
fn methods_by_name() {
    for m in Method::ALL {
        assert_eq!(Method::from_name(m.as_str()), Some(m));
    }
    for old in [
        "message/send",
        "message/stream",
        "tasks/get",
        "tasks/cancel",
        "tasks/resubscribe",
        "sendMessage",
    ] {
        assert_eq!(Method::from_name(old), None, "{old}");
    }
}

#[test]
fn version_header_values() {
    assert!(VERSION_HEADER.eq_ignore_ascii_case(VERSION_HEADER_NAME.as_str()));
    for ok in ["1.0", "1.1", "1", "1.0.0", " 1.0 "] {
        assert!(version_supported(Some(ok)), "{ok}");
    }
    for bad in [
        None,
        Some(""),
        Some("0.3"),
        Some("0.3.0"),
        Some("2.0"),
        Some("1.x"),
        Some("v1"),
    ] {
        assert!(!version_supported(bad), "{bad:?}");
    }
}
