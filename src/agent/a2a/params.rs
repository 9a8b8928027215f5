//! The params and results of the eleven A2A 1.0 methods (SendMessage's configuration,
//! GetTask, ListTasks, CancelTask, SubscribeToTask, the push-config methods), in ProtoJSON.

use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::types::{is_false, Message, Metadata, Task, TaskState};

/// Push requests carry the config's token here (verified against the a2a-sdk sender).
pub const NOTIFICATION_TOKEN_HEADER: &str = "X-A2A-Notification-Token";

/// Params of SendMessage and SendStreamingMessage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageRequest {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    pub message: Message,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub configuration: Option<SendMessageConfiguration>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

impl SendMessageRequest {
    /// SendMessage blocks until a terminal or interrupted state unless this is true.
    pub fn return_immediately(&self) -> bool {
        self.configuration
            .as_ref()
            .is_some_and(|c| c.return_immediately)
    }

    pub fn history_length(&self) -> Option<i32> {
        self.configuration.as_ref().and_then(|c| c.history_length)
    }

    pub fn push_config(&self) -> Option<&TaskPushNotificationConfig> {
        self.configuration
            .as_ref()
            .and_then(|c| c.task_push_notification_config.as_ref())
    }
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageConfiguration {
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        alias = "accepted_output_modes"
    )]
    pub accepted_output_modes: Vec<String>,
    #[serde(
        skip_serializing_if = "Option::is_none",
        alias = "task_push_notification_config"
    )]
    pub task_push_notification_config: Option<TaskPushNotificationConfig>,
    #[serde(default, deserialize_with = "opt_int", alias = "history_length")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub history_length: Option<i32>,
    #[serde(
        default,
        skip_serializing_if = "is_false",
        alias = "return_immediately"
    )]
    pub return_immediately: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetTaskRequest {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    pub id: String,
    #[serde(default, deserialize_with = "opt_int", alias = "history_length")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub history_length: Option<i32>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTasksRequest {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", alias = "context_id")]
    pub context_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<TaskState>,
    #[serde(default, deserialize_with = "opt_int", alias = "page_size")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub page_size: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none", alias = "page_token")]
    pub page_token: Option<String>,
    #[serde(default, deserialize_with = "opt_int", alias = "history_length")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub history_length: Option<i32>,
    #[serde(
        skip_serializing_if = "Option::is_none",
        alias = "status_timestamp_after"
    )]
    pub status_timestamp_after: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", alias = "include_artifacts")]
    pub include_artifacts: Option<bool>,
}

/// The reference server's page size when none is asked for, and its ceiling.
pub const LIST_TASKS_DEFAULT_PAGE_SIZE: i32 = 50;
pub const LIST_TASKS_MAX_PAGE_SIZE: i32 = 100;

/// Every field is always present (SPEC §3.1.4: `nextPageToken` MUST be, `""` on the last page).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTasksResponse {
    #[serde(default, alias = "next_page_token")]
    pub next_page_token: String,
    #[serde(default, alias = "page_size")]
    pub page_size: i32,
    pub tasks: Vec<Task>,
    #[serde(default, alias = "total_size")]
    pub total_size: i32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CancelTaskRequest {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    pub id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscribeToTaskRequest {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    pub id: String,
}

/// A webhook registration. It is both the params and the result of
/// CreateTaskPushNotificationConfig (no wrapper object), and the element of list results. The
/// reference server fills `taskId` and defaults a missing `id` to the task id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskPushNotificationConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub authentication: Option<AuthenticationInfo>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", alias = "task_id")]
    pub task_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// Echoed back in the [`NOTIFICATION_TOKEN_HEADER`] of every delivery.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    pub url: String,
}

impl TaskPushNotificationConfig {
    /// What the server stores and returns: bound to its task, with an id.
    pub fn normalized(mut self, task_id: &str) -> TaskPushNotificationConfig {
        self.task_id = Some(task_id.to_owned());
        if self.id.as_deref().is_none_or(str::is_empty) {
            self.id = Some(task_id.to_owned());
        }
        self
    }

    /// Headers a delivery carries, as the reference sender builds them: the token, and
    /// `Authorization: <scheme> <credentials>` when both are set.
    pub fn delivery_headers(&self) -> Vec<(&'static str, String)> {
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
pub struct AuthenticationInfo {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub credentials: Option<String>,
    pub scheme: String,
}

/// Params of GetTaskPushNotificationConfig and DeleteTaskPushNotificationConfig. (Delete answers
/// `"result": null`; an unknown config id on Get is -32001, as in the reference server.)
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskPushNotificationConfigRef {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    #[serde(alias = "task_id")]
    pub task_id: String,
    pub id: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTaskPushNotificationConfigsRequest {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    #[serde(alias = "task_id")]
    pub task_id: String,
    #[serde(default, deserialize_with = "opt_int", alias = "page_size")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub page_size: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none", alias = "page_token")]
    pub page_token: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTaskPushNotificationConfigsResponse {
    #[serde(default)]
    pub configs: Vec<TaskPushNotificationConfig>,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        alias = "next_page_token"
    )]
    pub next_page_token: String,
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
