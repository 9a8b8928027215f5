use doubleagent::agent::a2a::errors::*;
use doubleagent::agent::a2a::types::TaskState;
use serde_json::json;

#[test]
fn every_error_kind_has_its_code_and_reason() {
    let done = TaskState::Completed;
    let cases = [
        (
            RpcError::task_not_found("t1"),
            -32001,
            Some("TASK_NOT_FOUND"),
        ),
        (
            RpcError::task_not_cancelable("t1", done),
            -32002,
            Some("TASK_NOT_CANCELABLE"),
        ),
        (
            RpcError::task_in_terminal_state("t1", done),
            -32004,
            Some("UNSUPPORTED_OPERATION"),
        ),
        (
            RpcError::extended_agent_card_not_configured(),
            -32007,
            Some("EXTENDED_AGENT_CARD_NOT_CONFIGURED"),
        ),
        (
            RpcError::version_not_supported("0.3"),
            -32009,
            Some("VERSION_NOT_SUPPORTED"),
        ),
        (RpcError::parse_error("eof"), -32700, None),
        (
            RpcError::invalid_request("x"),
            -32600,
            Some("INVALID_REQUEST"),
        ),
        (
            RpcError::method_not_found("message/send"),
            -32601,
            Some("METHOD_NOT_FOUND"),
        ),
        (
            RpcError::context_mismatch("c2", "c1", "t1"),
            -32602,
            Some("INVALID_PARAMS"),
        ),
        (RpcError::internal("x"), -32603, Some("INTERNAL_ERROR")),
    ];
    for (err, code, reason) in cases {
        assert_eq!(err.code, code, "{err}");
        let info = err.data.first();
        assert_eq!(info.map(|i| i.reason), reason, "{err}");
        if let Some(info) = info {
            assert_eq!(
                (info.type_url, info.domain),
                (ERROR_INFO_TYPE, ERROR_DOMAIN)
            );
            assert!(info.metadata.is_empty());
        } else {
            assert!(err.data.is_empty(), "no reason, no data");
        }
    }
    assert_eq!(
        RpcError::task_in_terminal_state("t9", TaskState::Completed).message,
        "Task t9 is in terminal state: TASK_STATE_COMPLETED"
    );
}

#[test]
fn error_metadata_lands_in_error_info() {
    let err = RpcError::invalid_params("bad").with_metadata("parseError", "missing field `id`");
    assert_eq!(
        serde_json::to_value(&err.data).unwrap()[0]["metadata"],
        json!({"parseError": "missing field `id`"})
    );
}
