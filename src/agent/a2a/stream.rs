//! Server-sent event streams: SendStreamingMessage and SubscribeToTask.
//!
//! A stream starts with the events its call owes up front (the Task snapshot, or the direct
//! Message) and then forwards the task's broadcast events as the scenario clock produces them,
//! each framed as one JSON-RPC response echoing the call's id. It closes itself after a
//! terminal or interrupted state, because the a2a-sdk client never ends a task stream on its
//! own; it also ends when the world closes or the client goes away.

use std::sync::Arc;
use std::time::Duration;

use hyper::body::Bytes;
use tokio::sync::{broadcast, mpsc};

use super::wire::{self, RpcError, RpcId, RpcResponse, StreamResponse};
use crate::agent::Reply;
use crate::world::World;

/// Keep-alive comment interval. Wall-clock time on purpose: it feeds the client's socket read
/// timeout (a2a-sdk's default httpx client gives up after 5 s of silence), which runs on real
/// time however the scenario clock moves, and the comments are invisible to the protocol.
const PING_EVERY: Duration = Duration::from_secs(2);

/// The response headers of an SSE reply, as the a2a-sdk server sends them.
fn headers() -> Vec<crate::idempotency::Header> {
    vec![
        (
            "content-type".into(),
            "text/event-stream; charset=utf-8".into(),
        ),
        ("cache-control".into(), "no-store".into()),
        ("x-accel-buffering".into(), "no".into()),
    ]
}

/// Open a stream: `first` goes out at once, then whatever `events` brings.
pub(super) fn open(
    world: Arc<World>,
    id: RpcId,
    first: Vec<StreamResponse>,
    events: Option<broadcast::Receiver<StreamResponse>>,
) -> Reply {
    let (tx, rx) = mpsc::channel::<Bytes>(64);
    tokio::spawn(pump(world, id, first, events, tx));
    Reply::Stream {
        status: 200,
        headers: headers(),
        body: rx,
    }
}

fn frame(id: &RpcId, ev: &StreamResponse) -> Bytes {
    Bytes::from(wire::sse_frame(&wire::stream_event(id, ev)))
}

async fn pump(
    world: Arc<World>,
    id: RpcId,
    first: Vec<StreamResponse>,
    events: Option<broadcast::Receiver<StreamResponse>>,
    tx: mpsc::Sender<Bytes>,
) {
    for ev in &first {
        if tx.send(frame(&id, ev)).await.is_err() || ev.ends_stream() {
            return;
        }
    }
    let Some(mut events) = events else { return };
    let mut ping = tokio::time::interval_at(tokio::time::Instant::now() + PING_EVERY, PING_EVERY);
    loop {
        tokio::select! {
            r = events.recv() => match r {
                Ok(ev) => {
                    if tx.send(frame(&id, &ev)).await.is_err() || ev.ends_stream() {
                        return;
                    }
                }
                Err(broadcast::error::RecvError::Lagged(n)) => {
                    let err = RpcResponse::error(
                        id.clone(),
                        RpcError::internal(format!("the stream fell {n} events behind; subscribe again")),
                    );
                    let _ = tx.send(Bytes::from(wire::sse_error_frame(&err.to_value()))).await;
                    return;
                }
                Err(broadcast::error::RecvError::Closed) => return,
            },
            _ = ping.tick() => {
                if tx.send(Bytes::from_static(wire::SSE_PING.as_bytes())).await.is_err() {
                    return;
                }
            }
            _ = world.clock.closed() => return,
            _ = tx.closed() => return,
        }
    }
}
