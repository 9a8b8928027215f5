use doubleagent::agent::a2a::params::*;
use doubleagent::agent::a2a::types::TaskState;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::json;
use serde_json::Value;

/// Decode `doc` as `T`, encode it again, and require the same JSON.
fn round_trip<T: DeserializeOwned + Serialize>(doc: Value) -> T {
    let typed: T = serde_json::from_value(doc.clone()).expect("decodes");
    assert_eq!(serde_json::to_value(&typed).unwrap(), doc);
    typed
}

#[test]
fn return_immediately_and_push_config_in_send() {
    let params = json!({"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"go"}],
        "metadata":{"revision":"1"}},"configuration":{"returnImmediately":true,"historyLength":2,
        "taskPushNotificationConfig":{"url":"http://127.0.0.1:9/hook","token":"tok"}}});
    let req: SendMessageRequest = round_trip(params);
    assert!(req.return_immediately());
    assert_eq!(req.history_length(), Some(2));
    assert_eq!(req.push_config().unwrap().token.as_deref(), Some("tok"));
    assert_eq!(req.message.metadata.unwrap()["revision"], "1");
}

#[test]
fn unknown_incoming_fields_are_ignored() {
    let req: SendMessageRequest = serde_json::from_value(json!({
        "message": {"kind": "message", "messageId": "m", "role": "ROLE_USER",
            "parts": [{"kind": "text", "text": "hi"}], "futureField": 1},
        "configuration": {"blocking": true, "somethingNew": {}}, "extra": []
    }))
    .unwrap();
    assert_eq!(req.message.text(), "hi");
    assert!(!req.return_immediately());
}

#[test]
fn method_params_round_trip() {
    round_trip::<GetTaskRequest>(json!({"id": "t1", "historyLength": 10}));
    round_trip::<CancelTaskRequest>(json!({"id": "t1", "metadata": {"reason": "redirected"}}));
    round_trip::<SubscribeToTaskRequest>(json!({"id": "t1"}));
    let list: ListTasksRequest =
        round_trip(json!({"contextId": "c1", "status": "TASK_STATE_WORKING",
        "pageSize": 10, "pageToken": "p", "historyLength": 0,
        "statusTimestampAfter": "2026-01-01T00:00:00Z", "includeArtifacts": true}));
    assert_eq!(list.status, Some(TaskState::Working));
    assert_eq!(
        round_trip::<ListTasksRequest>(json!({})),
        ListTasksRequest::default()
    );
    // int32 as a string is valid ProtoJSON.
    let g: GetTaskRequest =
        serde_json::from_value(json!({"id": "t", "historyLength": "3"})).unwrap();
    assert_eq!(g.history_length, Some(3));
}

#[test]
fn list_tasks_result_always_has_every_field() {
    let captured = json!({"tasks": [], "pageSize": 50, "totalSize": 1, "nextPageToken": ""});
    let page: ListTasksResponse = round_trip(captured);
    assert_eq!(page.next_page_token, "");
}

#[test]
fn push_config_methods_round_trip() {
    // Params and result of CreateTaskPushNotificationConfig, captured from the reference server.
    let created: TaskPushNotificationConfig = round_trip(json!({"id": "hook-1", "taskId": "t1",
        "url": "http://127.0.0.1:41947/hook", "token": "tok-2"}));
    let get: TaskPushNotificationConfigRef = round_trip(json!({"taskId": "t1", "id": "hook-1"}));
    assert_eq!(get.id, "hook-1");
    round_trip::<TaskPushNotificationConfigRef>(json!({"taskId": "t1", "id": "hook-1"}));
    round_trip::<ListTaskPushNotificationConfigsRequest>(json!({"taskId": "t1", "pageSize": 5}));
    let listed: ListTaskPushNotificationConfigsResponse =
        round_trip(json!({"configs": [{"id": "hook-1",
        "taskId": "t1", "url": "http://127.0.0.1:41947/hook", "token": "tok-2"}]}));
    assert_eq!(listed.configs, [created]);

    let bare: TaskPushNotificationConfig =
        serde_json::from_value(json!({"url": "http://127.0.0.1:1/h",
        "authentication": {"scheme": "Bearer", "credentials": "s3"}, "token": "tk"}))
        .unwrap();
    let n = bare.normalized("t9");
    assert_eq!(
        (n.id.as_deref(), n.task_id.as_deref()),
        (Some("t9"), Some("t9"))
    );
    assert_eq!(
        n.delivery_headers(),
        [
            (NOTIFICATION_TOKEN_HEADER, "tk".to_owned()),
            ("Authorization", "Bearer s3".to_owned()),
        ]
    );
}
