//! Server-sent event streams: SendStreamingMessage and SubscribeToTask.
//!
//! A stream starts with the event its call owes up front (the Task snapshot, or the direct
//! Message) and then forwards the task's broadcast events as the scenario clock produces them,
//! each framed as one JSON-RPC response echoing the call's id, in one `data:` line (compact JSON
//! never holds a raw newline) with CRLF line endings, as the reference server sends them. It
//! closes itself after a terminal or interrupted state, because the a2a-sdk client never ends a
//! task stream on its own; it also ends when the world closes or the client goes away.

use std::time::Duration;

use hyper::body::Bytes;
use serde_json::json;
use tokio::sync::{broadcast, mpsc};

use super::detail;
use super::errors::RpcError;
use super::rpc::{self, RpcId};
use super::types::StreamResponse;
use crate::agent::{Ctx, Reply};
use crate::world::World;

/// Keep-alive comment interval. Wall-clock time on purpose: it feeds the client's socket read
/// timeout (a2a-sdk's default httpx client gives up after 5 s of silence), which runs on real
/// time however the scenario clock moves, and the comments are invisible to the protocol.
const PING_EVERY: Duration = Duration::from_secs(2);

/// A comment line: sse-starlette sends one every 15 s; clients skip it, proxies see traffic.
const SSE_PING: &str = ": ping\r\n\r\n";

/// Open a stream: `first` goes out at once, then whatever `events` brings. A client that goes
/// away before the stream's end is recorded (`stream-abandoned`, delivery `abandoned`, at the
/// time it was seen, with how many events had been handed to its connection): what it never
/// received is not what it knows (REC-4).
///
/// A subscription's first event, the task as it stands, ends the stream only if the task has
/// ended: a task waiting for input is subscribed to so as to see it resume and finish
/// (STREAM-SUB-002).
pub(crate) fn open(
    ctx: &Ctx<'_>,
    id: RpcId,
    first: StreamResponse,
    events: Option<broadcast::Receiver<StreamResponse>>,
    subscription: bool,
) -> Reply {
    let (tx, rx) = mpsc::channel::<Bytes>(64);
    let (world, agent) = (ctx.world.clone(), ctx.name.clone());
    let task = match &first {
        StreamResponse::Task(t) => Some(t.id.clone()),
        _ => None,
    };
    tokio::spawn(async move {
        if let Err(sent) = pump(&world, id, first, events, subscription, tx).await {
            let detail = json!({"task_id": task, "events_sent": sent});
            let task_id = task.as_deref();
            let seq = detail::log(&world, &agent, "stream-abandoned", task_id, None, detail);
            world.abandon(seq);
        }
    });
    // The headers the a2a-sdk server sends (the client only checks that the content type holds
    // `text/event-stream`).
    let headers = vec![
        (
            "content-type".into(),
            "text/event-stream; charset=utf-8".into(),
        ),
        ("cache-control".into(), "no-store".into()),
        ("x-accel-buffering".into(), "no".into()),
    ];
    Reply::Stream {
        status: 200,
        headers,
        body: rx,
    }
}

/// One SSE event: the stream event as the JSON-RPC response to the call `id`.
fn frame(id: &RpcId, ev: &StreamResponse) -> Bytes {
    framed(id, b"data: ", |out| rpc::write(out, id, Ok(ev)))
}

/// An error in the middle of a stream: `event: error` so the client raises the mapped
/// exception. (An error before the first event is a plain JSON answer instead.)
fn error_frame(id: &RpcId, e: &RpcError) -> Bytes {
    framed(id, b"event: error\r\ndata: ", |out| {
        rpc::write::<()>(out, id, Err(e))
    })
}

/// What `write` writes, as one SSE event after `head`; over gRPC, bare: gRPC frames its
/// messages itself, each item one event (see `grpc`).
fn framed(id: &RpcId, head: &[u8], write: impl FnOnce(&mut Vec<u8>)) -> Bytes {
    let sse = *id != RpcId::Grpc;
    let mut out = if sse { head.to_vec() } else { Vec::new() };
    write(&mut out);
    if sse {
        out.extend_from_slice(b"\r\n\r\n");
    }
    Bytes::from(out)
}

/// Sends the stream until its last event went out, its task's events ended or the world
/// closed (`Ok`), or the client went away first, after this many events (`Err`).
async fn pump(
    world: &World,
    id: RpcId,
    first: StreamResponse,
    events: Option<broadcast::Receiver<StreamResponse>>,
    subscription: bool,
    tx: mpsc::Sender<Bytes>,
) -> Result<(), usize> {
    if tx.send(frame(&id, &first)).await.is_err() {
        return Err(0);
    }
    let mut sent = 1;
    let ends = match &first {
        StreamResponse::Task(t) if subscription => t.status.state.is_terminal(),
        _ => first.ends_stream(),
    };
    let (false, Some(mut events)) = (ends, events) else {
        return Ok(());
    };
    let mut ping = tokio::time::interval_at(tokio::time::Instant::now() + PING_EVERY, PING_EVERY);
    // HTTP/2 keeps a gRPC stream alive itself; SSE needs the comments.
    let sse = id != RpcId::Grpc;
    loop {
        tokio::select! {
            r = events.recv() => match r {
                Ok(ev) => {
                    if tx.send(frame(&id, &ev)).await.is_err() {
                        return Err(sent);
                    }
                    sent += 1;
                    if ev.ends_stream() {
                        return Ok(());
                    }
                }
                Err(broadcast::error::RecvError::Lagged(n)) => {
                    let e = RpcError::internal(format!("the stream fell {n} events behind; subscribe again"));
                    // The client may be gone already: the stream ends either way.
                    let _ = tx.send(error_frame(&id, &e)).await;
                    return Ok(());
                }
                Err(broadcast::error::RecvError::Closed) => return Ok(()),
            },
            _ = ping.tick(), if sse => {
                if tx.send(Bytes::from_static(SSE_PING.as_bytes())).await.is_err() {
                    return Err(sent);
                }
            }
            _ = world.clock.closed() => {
                // An error, not a clean end: the task has not ended (over gRPC, not status OK).
                let _ = tx.send(error_frame(&id, &world_closed(world))).await;
                return Ok(());
            }
            _ = tx.closed() => return Err(sent),
        }
    }
}

/// Why a call still waiting on its task is cut short when its world closes.
pub(super) fn world_closed(world: &World) -> RpcError {
    RpcError::internal(if world.server_stopped() {
        "the server stopped while the task was running"
    } else {
        "the world was reset while the task was running"
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::a2a::types::{TaskState, TaskStatus, TaskStatusUpdateEvent};
    use serde_json::{json, Value};

    #[test]
    fn frames_are_single_data_lines_with_crlf() {
        let ev = StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
            task_id: "t".into(),
            context_id: "c".into(),
            status: TaskStatus::new(TaskState::Working, "2026-01-01T00:00:00.000Z"),
            metadata: None,
        });
        let frame = frame(&RpcId::from(5), &ev);
        let text = std::str::from_utf8(&frame).unwrap();
        assert!(text.starts_with("data: {") && text.ends_with("}\r\n\r\n"));
        assert_eq!(text.matches('\n').count(), 2);
        let data = text.strip_prefix("data: ").unwrap().trim_end();
        // Keys sorted, as the frames have always had them.
        assert_eq!(
            data,
            r#"{"id":5,"jsonrpc":"2.0","result":{"statusUpdate":{"contextId":"c","status":{"state":"TASK_STATE_WORKING","timestamp":"2026-01-01T00:00:00.000Z"},"taskId":"t"}}}"#
        );

        let err = error_frame(&RpcId::from(5), &RpcError::internal("a\nb"));
        let text = std::str::from_utf8(&err).unwrap();
        assert!(text.starts_with("event: error\r\ndata: {") && text.ends_with("}\r\n\r\n"));
        assert_eq!(
            text.matches('\n').count(),
            3,
            "newlines in strings are escaped"
        );
        let data: Value = serde_json::from_str(text.split("data: ").nth(1).unwrap()).unwrap();
        assert_eq!(data["error"]["code"], json!(-32603));
    }
}
