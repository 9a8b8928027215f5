//! Placeholder: the a2a protocol is being built (see its issue).

use serde_json::json;

use super::{AgentRequest, Ctx, Reply};
use crate::service::Response;

pub async fn handle(ctx: Ctx, _spec: &crate::scenario::a2a::A2aAgent, _req: AgentRequest) -> Reply {
    Reply::Full(Response::json(
        501,
        &json!({"error": format!("agent \"{}\": protocol not implemented yet", ctx.name), "status": 501}),
    ))
}
