//! Multi-round-trip requests (2026-07-28): a tool with `input` answers a modern call not yet
//! asked with `resultType: "input_required"`, its question and a `requestState`; the call runs
//! only when re-sent with the answer and that state. A round that asks is no action, so a
//! correct re-send is never a duplicate. The state binds the answer to the tool, the arguments
//! and its issue time (refused past the input's `ttl`).

use serde_json::{json, Value};

use super::era::Era;
use super::rpc::{self, Id, McpError};
use super::task::{input_requests, seeded_token};
use super::{answer, complete, log, Reply};
use crate::scenario::mcp::{McpServer, TaskInput, Tool};
use crate::world::World;

/// The state that binds an answer to this tool and these arguments, issued at `issued_ms`.
fn state_of(
    world: &World,
    server: &McpServer,
    tool: &Tool,
    args: &Value,
    issued_ms: u128,
) -> String {
    let token = seeded_token(
        world,
        &format!("{}/{}/{args}/{issued_ms}", server.name, tool.name),
    );
    format!("{token}.{issued_ms}")
}

/// What a re-sent state says: `Ok` when it was issued for this call and is still honoured.
fn check_state(
    world: &World,
    (server, tool, input): (&McpServer, &Tool, &TaskInput),
    args: &Value,
    given: &str,
) -> Result<(), McpError> {
    let issued = given
        .rsplit_once('.')
        .and_then(|(_, ms)| ms.parse::<u128>().ok())
        .filter(|ms| state_of(world, server, tool, args, *ms) == given);
    let Some(issued_ms) = issued else {
        return Err(McpError::InvalidParams(
            "requestState does not belong to this call: re-send the same tool and arguments with the state it was given".into(),
        ));
    };
    let age = world.clock.now().as_millis().saturating_sub(issued_ms);
    match input.ttl {
        Some(ttl) if age > ttl.as_millis() => Err(McpError::InvalidParams(format!(
            "requestState has expired (issued {age} ms ago, honoured for {} ms): call again without it to be asked anew",
            ttl.as_millis()
        ))),
        _ => Ok(()),
    }
}

/// The round this call is: `Some` answer when it asks (or was declined), `None` when it was
/// answered and accepted and runs now.
pub(super) fn round(
    world: &World,
    (server, tool, input): (&McpServer, &Tool, &TaskInput),
    (era, id, params, sse): (&Era, &Id, &Value, bool),
    args: &Value,
) -> Result<Option<Reply>, McpError> {
    let reply = |result: Value, kind: &str| {
        let mut r = complete(result, era, server);
        r["resultType"] = kind.into();
        Reply::now(answer(200, rpc::result(id, r), sse))
    };
    match params.get("requestState") {
        None | Some(Value::Null) => {
            let state = state_of(world, server, tool, args, world.clock.now().as_millis());
            let detail = json!({"tool": tool.name, "id": id, "request_state": state});
            log(world, server, "input-required", detail);
            let ask = json!({"inputRequests": input_requests(input), "requestState": state});
            Ok(Some(reply(ask, "input_required")))
        }
        Some(Value::String(s)) => {
            check_state(world, (server, tool, input), args, s)?;
            let response = params.get("inputResponses").and_then(|r| r.get(&input.key));
            let action = response
                .and_then(|r| r.get("action"))
                .and_then(Value::as_str);
            let accepted = action == Some("accept");
            let detail =
                json!({"tool": tool.name, "id": id, "action": action, "response": response});
            log(world, server, "input-answered", detail);
            if accepted {
                return Ok(None);
            }
            let text = format!(
                "{} was not confirmed ({}): nothing was done",
                tool.name,
                action.unwrap_or("no answer")
            );
            let result = json!({"content": [{"type": "text", "text": text}], "isError": true});
            Ok(Some(reply(result, "complete")))
        }
        Some(_) => Err(McpError::InvalidParams(
            "requestState is the string this call was given".into(),
        )),
    }
}
