//! The A2A gRPC binding (SPEC §10) as a thin adapter: each RPC's protobuf request becomes its
//! ProtoJSON (pbjson), enters the one A2A engine through [`agent::a2a_grpc_call`], and the
//! engine's bare JSON answer becomes the protobuf response, or a `tonic::Status` carrying the
//! spec's `google.rpc.ErrorInfo`. The agent is named by the request's `tenant` (the card's
//! GRPC interface says so); a scenario with one A2A agent needs none. A session is picked by
//! a `_s/SESSION/` prefix of the tenant (what a named session's card says) or the
//! `x-doubleagent-session` metadata, as over HTTP.
//!
//! [`serve`] runs on its own listener (`serve --grpc-listen`), beside the HTTP one.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use tokio_stream::{Stream, StreamExt};
use tonic::{Code, Request, Response, Status};
use tonic_types::{ErrorDetails, StatusExt};

use super::App;
use crate::agent::{self, Reply};
use crate::scenario::AgentSpec;

/// The generated messages and service of `proto/a2a.proto`.
#[allow(clippy::all, missing_docs)]
pub mod pb {
    include!(concat!(env!("OUT_DIR"), "/lf.a2a.v1.rs"));
    include!(concat!(env!("OUT_DIR"), "/lf.a2a.v1.serde.rs"));
}

use pb::a2a_service_server::{A2aService, A2aServiceServer};

/// The service over an [`App`]'s worlds.
pub struct Grpc {
    app: Arc<App>,
}

/// The tonic service for `app`, to be served on the gRPC listener.
pub fn service(app: Arc<App>) -> A2aServiceServer<Grpc> {
    // The scenario's `max_body_bytes` is the limit, refused by the engine and recorded; tonic's
    // own (4 MiB by default, unrecorded) only guards memory, as the admin API's 16 MiB does.
    A2aServiceServer::new(Grpc { app }).max_decoding_message_size(16 << 20)
}

/// Serve the A2A gRPC service on `listener` until `shutdown` resolves; calls in flight then
/// finish (the caller bounds how long it waits for that).
pub async fn serve(
    listener: tokio::net::TcpListener,
    app: Arc<App>,
    shutdown: impl Future<Output = ()>,
) {
    let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener);
    let served = tonic::transport::Server::builder()
        .add_service(service(app))
        .serve_with_incoming_shutdown(incoming, shutdown)
        .await;
    if let Err(e) = served {
        tracing::error!(error = %e, "the gRPC listener stopped");
    }
}

/// A request's tenant split into the session it names (`_s/SESSION/NAME`) and the agent.
fn tenant_parts(tenant: &str) -> (Option<&str>, &str) {
    match tenant
        .strip_prefix("_s/")
        .and_then(|rest| rest.split_once('/'))
    {
        Some((session, name)) => (Some(session), name),
        None => (None, tenant),
    }
}

type Events = Pin<Box<dyn Stream<Item = Result<pb::StreamResponse, Status>> + Send>>;

impl Grpc {
    /// Run `method` with `req`; the engine's reply as it came.
    async fn call<Req: Serialize + prost::Message>(
        &self,
        method: &str,
        req: Request<Req>,
    ) -> Result<Reply, Status> {
        let (meta, _, msg) = req.into_parts();
        let size = msg.encoded_len();
        let params = serde_json::to_value(&msg).map_err(|e| Status::internal(e.to_string()))?;
        let mut headers = meta.into_headers();
        // `application/grpc` framed the call; the engine reads JSON made from it.
        headers.remove(hyper::header::CONTENT_TYPE);
        let tenant = params.get("tenant").and_then(Value::as_str).unwrap_or("");
        let (prefix, tenant) = tenant_parts(tenant);
        let session = super::pick_session(prefix, &headers)
            .map_err(|_| {
                Status::invalid_argument(
                    "the tenant's _s/SESSION/ prefix and the x-doubleagent-session metadata name different sessions: send one, or the same in both",
                )
            })?
            .map(str::to_string);
        let world = self
            .app
            .host
            .world_for(session.as_deref())
            .map_err(|e| Status::invalid_argument(e.to_string()))?;
        let name = if tenant.is_empty() {
            let mut a2a = world
                .scenario
                .agents
                .iter()
                .filter(|a| matches!(a.spec, AgentSpec::A2a(_)));
            match (a2a.next(), a2a.next()) {
                (Some(only), None) => only.name.to_string(),
                _ => return Err(Status::invalid_argument(
                    "name the agent in the request's tenant (the card's GRPC interface gives it)",
                )),
            }
        } else {
            tenant.to_string()
        };
        let urls = (self.app.base_url.as_str(), self.app.grpc.as_deref());
        let too_large = size > world.scenario.max_body_bytes;
        let call = (method, params.to_string());
        Ok(agent::a2a_grpc_call(world, urls, &name, call, (headers, too_large)).await)
    }

    async fn unary<Req: Serialize + prost::Message, Resp: DeserializeOwned>(
        &self,
        method: &str,
        req: Request<Req>,
    ) -> Result<Response<Resp>, Status> {
        match self.call(method, req).await? {
            Reply::Full(r) if r.status == 200 => decode(&r.body).map(Response::new),
            Reply::Full(r) => Err(status_of(&r.body)),
            _ => Err(Status::internal("a unary call was answered with a stream")),
        }
    }

    async fn streaming<Req: Serialize + prost::Message>(
        &self,
        method: &str,
        req: Request<Req>,
    ) -> Result<Response<Events>, Status> {
        match self.call(method, req).await? {
            // A direct Message answer to a streaming send: one event.
            Reply::Full(r) if r.status == 200 => one(&r.body),
            Reply::Full(r) => Err(status_of(&r.body)),
            Reply::Stream { body, .. } => {
                let events = tokio_stream::wrappers::ReceiverStream::new(body).map(|frame| {
                    let v: Value = serde_json::from_slice(&frame)
                        .map_err(|e| Status::internal(e.to_string()))?;
                    if v.get("error").is_some() {
                        return Err(status_of(&frame));
                    }
                    serde_json::from_value(v).map_err(|e| Status::internal(e.to_string()))
                });
                Ok(Response::new(Box::pin(events)))
            }
            Reply::Ready { body, .. } => one(&body),
        }
    }

    /// `DeleteTaskPushNotificationConfig`: the engine answers `null`, the protobuf answer is
    /// `Empty`.
    async fn empty<Req: Serialize + prost::Message>(
        &self,
        method: &str,
        req: Request<Req>,
    ) -> Result<Response<pbjson_types::Empty>, Status> {
        let answered = self.unary::<Req, Value>(method, req).await;
        answered.map(|_| Response::new(pbjson_types::Empty {}))
    }
}

/// A stream of one event.
fn one(body: &[u8]) -> Result<Response<Events>, Status> {
    let ev: pb::StreamResponse = decode(body)?;
    Ok(Response::new(Box::pin(tokio_stream::once(Ok(ev)))))
}

fn decode<T: DeserializeOwned>(body: &[u8]) -> Result<T, Status> {
    serde_json::from_slice(body).map_err(|e| Status::internal(format!("answer not readable: {e}")))
}

/// The engine's `{"error": {code, status, message, details}}` as a gRPC status: the code from
/// its status name, the ErrorInfo in the details.
fn status_of(body: &[u8]) -> Status {
    let v: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let e = &v["error"];
    let message = e["message"].as_str().unwrap_or("error").to_string();
    let code = match e["status"].as_str().unwrap_or("") {
        "NOT_FOUND" => Code::NotFound,
        "FAILED_PRECONDITION" => Code::FailedPrecondition,
        "UNIMPLEMENTED" => Code::Unimplemented,
        "INVALID_ARGUMENT" => Code::InvalidArgument,
        _ => Code::Internal,
    };
    let info = e["details"].as_array().and_then(|d| d.first());
    match info.and_then(|i| i["reason"].as_str()) {
        Some(reason) => {
            let domain = info
                .and_then(|i| i["domain"].as_str())
                .unwrap_or("a2a-protocol.org");
            let details = ErrorDetails::with_error_info(
                reason,
                domain,
                std::collections::HashMap::<String, String>::new(),
            );
            Status::with_error_details(code, message, details)
        }
        None => Status::new(code, message),
    }
}

/// The service's RPCs, each one of [`Grpc`]'s shapes (`unary`, `streaming`, `empty`) under its
/// method name.
macro_rules! rpcs {
    ($($rpc:ident($req:ty) -> $resp:ty = $shape:ident($method:literal);)*) => {
        #[tonic::async_trait]
        impl A2aService for Grpc {
            type SendStreamingMessageStream = Events;
            type SubscribeToTaskStream = Events;
            $(
                async fn $rpc(&self, r: Request<$req>) -> Result<Response<$resp>, Status> {
                    self.$shape($method, r).await
                }
            )*
        }
    };
}

rpcs! {
    send_message(pb::SendMessageRequest) -> pb::SendMessageResponse = unary("SendMessage");
    send_streaming_message(pb::SendMessageRequest) -> Events = streaming("SendStreamingMessage");
    get_task(pb::GetTaskRequest) -> pb::Task = unary("GetTask");
    list_tasks(pb::ListTasksRequest) -> pb::ListTasksResponse = unary("ListTasks");
    cancel_task(pb::CancelTaskRequest) -> pb::Task = unary("CancelTask");
    subscribe_to_task(pb::SubscribeToTaskRequest) -> Events = streaming("SubscribeToTask");
    create_task_push_notification_config(pb::TaskPushNotificationConfig)
        -> pb::TaskPushNotificationConfig = unary("CreateTaskPushNotificationConfig");
    get_task_push_notification_config(pb::GetTaskPushNotificationConfigRequest)
        -> pb::TaskPushNotificationConfig = unary("GetTaskPushNotificationConfig");
    list_task_push_notification_configs(pb::ListTaskPushNotificationConfigsRequest)
        -> pb::ListTaskPushNotificationConfigsResponse = unary("ListTaskPushNotificationConfigs");
    get_extended_agent_card(pb::GetExtendedAgentCardRequest)
        -> pb::AgentCard = unary("GetExtendedAgentCard");
    delete_task_push_notification_config(pb::DeleteTaskPushNotificationConfigRequest)
        -> pbjson_types::Empty = empty("DeleteTaskPushNotificationConfig");
}
