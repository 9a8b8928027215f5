//! The params and results of the eleven A2A 1.0 methods (SendMessage's configuration,
//! GetTask, ListTasks, CancelTask, SubscribeToTask, the push-config methods), in ProtoJSON.

use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::types::{is_false, Message, Metadata, Task, TaskState};

/// Push requests carry the config's token here (verified against the a2a-sdk sender).
pub(crate) const NOTIFICATION_TOKEN_HEADER: &str = "X-A2A-Notification-Token";

/// Params of SendMessage and SendStreamingMessage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SendMessageRequest {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) tenant: Option<String>,
    pub(crate) message: Message,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) configuration: Option<SendMessageConfiguration>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) metadata: Option<Metadata>,
}

impl SendMessageRequest {
    /// SendMessage blocks until a terminal or interrupted state unless this is true.
    pub(crate) fn return_immediately(&self) -> bool {
        self.configuration
            .as_ref()
            .is_some_and(|c| c.return_immediately)
    }

    pub(crate) fn history_length(&self) -> Option<i32> {
        self.configuration.as_ref().and_then(|c| c.history_length)
    }

    pub(crate) fn push_config(&self) -> Option<&TaskPushNotificationConfig> {
        self.configuration
            .as_ref()
            .and_then(|c| c.task_push_notification_config.as_ref())
    }
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SendMessageConfiguration {
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        alias = "accepted_output_modes"
    )]
    pub(crate) accepted_output_modes: Vec<String>,
    #[serde(
        skip_serializing_if = "Option::is_none",
        alias = "task_push_notification_config"
    )]
    pub(crate) task_push_notification_config: Option<TaskPushNotificationConfig>,
    #[serde(default, deserialize_with = "opt_int", alias = "history_length")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) history_length: Option<i32>,
    #[serde(
        default,
        skip_serializing_if = "is_false",
        alias = "return_immediately"
    )]
    pub(crate) return_immediately: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct GetTaskRequest {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) tenant: Option<String>,
    pub(crate) id: String,
    #[serde(default, deserialize_with = "opt_int", alias = "history_length")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) history_length: Option<i32>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ListTasksRequest {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) tenant: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", alias = "context_id")]
    pub(crate) context_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) status: Option<TaskState>,
    #[serde(default, deserialize_with = "opt_int", alias = "page_size")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) page_size: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none", alias = "page_token")]
    pub(crate) page_token: Option<String>,
    #[serde(default, deserialize_with = "opt_int", alias = "history_length")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) history_length: Option<i32>,
    #[serde(
        skip_serializing_if = "Option::is_none",
        alias = "status_timestamp_after"
    )]
    pub(crate) status_timestamp_after: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", alias = "include_artifacts")]
    pub(crate) include_artifacts: Option<bool>,
}

/// The reference server's page size when none is asked for, and its ceiling.
pub(crate) const LIST_TASKS_DEFAULT_PAGE_SIZE: i32 = 50;
pub(crate) const LIST_TASKS_MAX_PAGE_SIZE: i32 = 100;

/// Every field is always present (SPEC §3.1.4: `nextPageToken` MUST be, `""` on the last page).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ListTasksResponse {
    #[serde(default, alias = "next_page_token")]
    pub(crate) next_page_token: String,
    #[serde(default, alias = "page_size")]
    pub(crate) page_size: i32,
    pub(crate) tasks: Vec<Task>,
    #[serde(default, alias = "total_size")]
    pub(crate) total_size: i32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CancelTaskRequest {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) tenant: Option<String>,
    pub(crate) id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) metadata: Option<Metadata>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SubscribeToTaskRequest {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) tenant: Option<String>,
    pub(crate) id: String,
}

/// A webhook registration. It is both the params and the result of
/// CreateTaskPushNotificationConfig (no wrapper object), and the element of list results. The
/// reference server fills `taskId` and defaults a missing `id` to the task id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TaskPushNotificationConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) authentication: Option<AuthenticationInfo>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", alias = "task_id")]
    pub(crate) task_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) tenant: Option<String>,
    /// Echoed back in the [`NOTIFICATION_TOKEN_HEADER`] of every delivery.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) token: Option<String>,
    pub(crate) url: String,
}

impl TaskPushNotificationConfig {
    /// What the server stores and returns: bound to its task, with an id.
    pub(crate) fn normalized(mut self, task_id: &str) -> TaskPushNotificationConfig {
        self.task_id = Some(task_id.to_owned());
        if self.id.as_deref().is_none_or(str::is_empty) {
            self.id = Some(task_id.to_owned());
        }
        self
    }

    /// Headers a delivery carries, as the reference sender builds them: the token, and
    /// `Authorization: <scheme> <credentials>` when both are set.
    pub(crate) fn delivery_headers(&self) -> Vec<(&'static str, String)> {
        let mut headers = Vec::new();
        if let Some(token) = self.token.as_deref().filter(|t| !t.is_empty()) {
            headers.push((NOTIFICATION_TOKEN_HEADER, token.to_owned()));
        }
        if let Some(auth) = &self.authentication {
            if let Some(creds) = auth.credentials.as_deref().filter(|c| !c.is_empty()) {
                if !auth.scheme.is_empty() {
                    headers.push(("Authorization", format!("{} {creds}", auth.scheme)));
                }
            }
        }
        headers
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AuthenticationInfo {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) credentials: Option<String>,
    pub(crate) scheme: String,
}

/// Params of GetTaskPushNotificationConfig and DeleteTaskPushNotificationConfig. (Delete answers
/// `"result": null`; an unknown config id on Get is -32001, as in the reference server.)
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TaskPushNotificationConfigRef {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) tenant: Option<String>,
    #[serde(alias = "task_id")]
    pub(crate) task_id: String,
    pub(crate) id: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ListTaskPushNotificationConfigsRequest {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) tenant: Option<String>,
    #[serde(alias = "task_id")]
    pub(crate) task_id: String,
    #[serde(default, deserialize_with = "opt_int", alias = "page_size")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) page_size: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none", alias = "page_token")]
    pub(crate) page_token: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ListTaskPushNotificationConfigsResponse {
    #[serde(default)]
    pub(crate) configs: Vec<TaskPushNotificationConfig>,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        alias = "next_page_token"
    )]
    pub(crate) next_page_token: String,
}

/// ProtoJSON lets int32 arrive as a number or a decimal string; accept both.
fn opt_int<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i32>, D::Error> {
    match Option::<Value>::deserialize(d)? {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => n
            .as_i64()
            .and_then(|v| i32::try_from(v).ok())
            .map(Some)
            .ok_or_else(|| de::Error::custom(format!("not an int32: {n}"))),
        Some(Value::String(s)) => s
            .parse()
            .map(Some)
            .map_err(|_| de::Error::custom(format!("not an int32: {s:?}"))),
        Some(other) => Err(de::Error::custom(format!("not an int32: {other}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::de::DeserializeOwned;
    use serde_json::json;

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
        let created: TaskPushNotificationConfig =
            round_trip(json!({"id": "hook-1", "taskId": "t1",
            "url": "http://127.0.0.1:41947/hook", "token": "tok-2"}));
        let get: TaskPushNotificationConfigRef =
            round_trip(json!({"taskId": "t1", "id": "hook-1"}));
        assert_eq!(get.id, "hook-1");
        round_trip::<TaskPushNotificationConfigRef>(json!({"taskId": "t1", "id": "hook-1"}));
        round_trip::<ListTaskPushNotificationConfigsRequest>(
            json!({"taskId": "t1", "pageSize": 5}),
        );
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
}
