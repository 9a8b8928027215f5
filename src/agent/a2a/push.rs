//! Push notifications: the webhook configs of a task and the real HTTP deliveries to them.
//!
//! A config is checked when it arrives ([`check`]): plain `http://`, a loopback host only on a
//! port the scenario lists in `push_ports` (never doubleagent's own), any other host only if
//! listed in `push_hosts`. Every event of a task (the initial Task snapshot, status and artifact
//! updates) is queued for each of its targets ([`enqueue`]), `push.delay` later on the scenario
//! clock and `1 + push.duplicates` times (at-least-once delivery repeats itself). Each copy is a
//! ledger entry `push` when it is attempted and `push-delivery` with the HTTP status (or the
//! error) when the webhook answered. Bodies are the bare `StreamResponse`, headers carry the
//! config's token, as the a2a-sdk sender does.
//!
//! Deliveries to one target go out one at a time, in the order their times came due, through
//! one poster task per target (over [`crate::client`]); the posters end when the world closes.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::sync::mpsc;

use super::detail::log;
use super::errors::RpcError;
use super::params::TaskPushNotificationConfig;
use super::task::arm;
use super::types::StreamResponse;
use crate::scenario::a2a::{A2aAgent, PushPolicy};
use crate::world::World;

/// How long one webhook POST may take. Wall-clock on purpose: it bounds a socket, not anything
/// in the simulated world, and must fire even on a stopped manual clock.
const POST_TIMEOUT: Duration = Duration::from_secs(10);

/// One registered webhook of a task.
pub(crate) struct PushTarget {
    pub(crate) config: TaskPushNotificationConfig,
    policy: PushPolicy,
    owner: Arc<Owner>,
    poster: mpsc::UnboundedSender<Delivery>,
}

/// The task whose webhooks these are: its agent, id and revision, which its `push` entries carry.
pub(crate) struct Owner {
    pub(crate) agent: String,
    pub(crate) task_id: String,
    pub(crate) revision: Option<Value>,
}

impl Owner {
    fn log(&self, world: &World, event: &str, detail: Value) -> u64 {
        let (task, rev) = (Some(&*self.task_id), self.revision.as_ref());
        log(world, &self.agent, event, task, rev, detail)
    }
}

/// One copy of one notification, ready to post.
struct Delivery {
    attempt_seq: u64,
    body: Vec<u8>,
}

/// The host a webhook URL names (an IPv6 literal without its brackets) and its port: plain
/// `http://`, with a host and no credentials.
fn webhook_host(url: &str) -> Result<(String, u16), String> {
    // https is taken (webhooks in staging are), though its deliveries fail and are recorded
    // so: doubleagent's client speaks plain HTTP.
    let default_port = if url.starts_with("http://") {
        80
    } else if url.starts_with("https://") {
        443
    } else {
        return Err(format!(
            "push url \"{url}\": expected an http:// or https:// URL"
        ));
    };
    let uri: hyper::Uri = url
        .parse()
        .map_err(|e| format!("push url \"{url}\": {e}"))?;
    let authority = uri.authority().map_or("", |a| a.as_str());
    // No host reads as an empty one, refused just below.
    let host = uri.host().unwrap_or_default();
    if host.is_empty() || authority.contains('@') {
        return Err(format!("push url \"{url}\" has no usable host"));
    }
    // What follows the host can only be its port (no credentials, checked above).
    let port = authority.get(host.len()..).unwrap_or_default();
    let number = match port.strip_prefix(':') {
        None if port.is_empty() => default_port,
        Some(p) => p
            .parse::<u16>()
            .map_err(|_| format!("push url \"{url}\": bad port \"{port}\""))?,
        None => return Err(format!("push url \"{url}\": bad port \"{port}\"")),
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    Ok((host.to_string(), number))
}

fn is_loopback(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<IpAddr>()
            .is_ok_and(|ip| ip.is_loopback() || ip.is_unspecified())
}

/// Accept a config only if doubleagent may deliver to it (see the module docs), else -32602
/// (recorded as `rpc-error`). Loopback is restricted because it reaches a pod's local services,
/// doubleagent's admin API among them: the caller's credentials only go where the scenario allows.
/// `base_url` is the server's own (`http://127.0.0.1:PORT`).
pub(crate) fn check(
    spec: &A2aAgent,
    cfg: TaskPushNotificationConfig,
    (base_url, grpc): (&str, Option<&str>),
) -> Result<TaskPushNotificationConfig, RpcError> {
    let (host, port) = webhook_host(&cfg.url).map_err(RpcError::invalid_params)?;
    if is_loopback(&host) {
        let http = base_url
            .parse::<hyper::Uri>()
            .ok()
            .and_then(|u| u.port_u16());
        let grpc = grpc.and_then(|a| a.parse::<std::net::SocketAddr>().ok());
        if http == Some(port) || grpc.map(|a| a.port()) == Some(port) {
            return Err(RpcError::invalid_params(format!(
                "push url \"{}\" is doubleagent's own listener: refused",
                cfg.url
            )));
        }
        if !spec.push_ports.allows(port) {
            return Err(RpcError::invalid_params(format!(
                "push url \"{}\": loopback port {port} is not listed in the agent's `push_ports`",
                cfg.url
            )));
        }
    } else if !spec
        .push_hosts
        .iter()
        .any(|h| h.eq_ignore_ascii_case(&host))
    {
        return Err(RpcError::invalid_params(format!(
            "push url host \"{host}\" is not loopback; the scenario must list it in the agent's `push_hosts`"
        )));
    }
    Ok(cfg)
}

/// Register a checked config on a task (replacing one with the same id) and start its poster.
pub(crate) fn add(
    world: &Arc<World>,
    policy: PushPolicy,
    owner: Owner,
    targets: &mut Vec<PushTarget>,
    cfg: TaskPushNotificationConfig,
) -> TaskPushNotificationConfig {
    let cfg = cfg.normalized(&owner.task_id);
    targets.retain(|t| t.config.id != cfg.id);
    // The token and the authentication scheme let a restart restore the config; credentials
    // stay out of the ledger (and so out of exports and reports).
    let mut detail = json!({"action": "create", "config_id": cfg.id, "url": cfg.url});
    if let Some(token) = &cfg.token {
        detail["token"] = json!(token);
    }
    if let Some(auth) = &cfg.authentication {
        detail["auth_scheme"] = json!(auth.scheme);
    }
    owner.log(world, "push-config", detail);
    targets.push(target(world, policy, Arc::new(owner), cfg.clone(), true));
    cfg
}

/// A registered target for a normalized config, without a ledger entry (also used to restore
/// one after a restart). `live`: start its poster; a task that can send nothing more needs none.
pub(crate) fn target(
    world: &Arc<World>,
    policy: PushPolicy,
    owner: Arc<Owner>,
    cfg: TaskPushNotificationConfig,
    live: bool,
) -> PushTarget {
    let (tx, rx) = mpsc::unbounded_channel();
    if live {
        tokio::spawn(poster(world.clone(), owner.clone(), cfg.clone(), rx));
    }
    PushTarget {
        config: cfg,
        policy,
        owner,
        poster: tx,
    }
}

/// Remove a config; its queued deliveries still go out (they were already due to).
pub(crate) fn remove(world: &World, targets: &mut Vec<PushTarget>, id: &str) {
    if let Some(i) = (targets.iter()).position(|t| t.config.id.as_deref() == Some(id)) {
        let detail = json!({"action": "delete", "config_id": id});
        targets.remove(i).owner.log(world, "push-config", detail);
    }
}

fn event_kind(ev: &StreamResponse) -> (&'static str, Option<&'static str>) {
    match ev {
        StreamResponse::Task(t) => ("task", Some(t.status.state.as_str())),
        StreamResponse::Message(_) => ("message", None),
        StreamResponse::StatusUpdate(u) => ("statusUpdate", Some(u.status.state.as_str())),
        StreamResponse::ArtifactUpdate(_) => ("artifactUpdate", None),
    }
}

/// Queue `ev` for every target: `delay` from now on the scenario clock, `1 + duplicates` copies.
/// Each copy's sleeper is registered before this returns (see `task::arm`), so on a manual
/// clock the attempts happen at their own instants, in order.
pub(crate) fn enqueue(world: &Arc<World>, targets: &[PushTarget], ev: &StreamResponse) {
    if targets.is_empty() {
        return;
    }
    // The bare StreamResponse, no JSON-RPC envelope, as the reference sender posts it. Writing
    // into a Vec cannot fail, and these types always serialise.
    let body = serde_json::to_vec(ev).unwrap_or_default();
    let (kind, state) = event_kind(ev);
    let due = world.clock.now();
    for t in targets {
        for copy in 0..=t.policy.duplicates {
            let armed = arm(world.clock.clone(), due + t.policy.delay);
            let world = world.clone();
            let poster = t.poster.clone();
            let body = body.clone();
            let detail = json!({
                "task_id": t.owner.task_id,
                "config_id": t.config.id,
                "url": t.config.url,
                "event": kind,
                "state": state,
                "copy": copy + 1,
                "copies": t.policy.duplicates + 1,
            });
            let owner = t.owner.clone();
            tokio::spawn(async move {
                // None: the world closed before the delivery was due.
                let Some(tick) = armed.await else {
                    return;
                };
                let attempt_seq = owner.log(&world, "push", detail);
                // The poster ends only when the world closes: then nothing is delivered anyway.
                let _ = poster.send(Delivery { attempt_seq, body });
                drop(tick);
            });
        }
    }
}

/// Posts one target's deliveries in order and records how each went.
async fn poster(
    world: Arc<World>,
    owner: Arc<Owner>,
    cfg: TaskPushNotificationConfig,
    mut rx: mpsc::UnboundedReceiver<Delivery>,
) {
    loop {
        let d = tokio::select! {
            d = rx.recv() => match d { Some(d) => d, None => return },
            _ = world.clock.closed() => return,
        };
        let outcome = tokio::select! {
            r = post(&cfg, d.body) => r,
            _ = world.clock.closed() => return,
        };
        let detail = match outcome {
            Ok(status) => {
                json!({"attempt": d.attempt_seq, "delivered": (200..300).contains(&status), "status": status})
            }
            Err(e) => json!({"attempt": d.attempt_seq, "delivered": false, "error": e}),
        };
        owner.log(&world, "push-delivery", detail);
    }
}

async fn post(cfg: &TaskPushNotificationConfig, body: Vec<u8>) -> Result<u16, String> {
    let extra = cfg.delivery_headers();
    let mut headers: Vec<(&str, &str)> = vec![("content-type", "application/json")];
    headers.extend(extra.iter().map(|(k, v)| (*k, v.as_str())));
    crate::client::send("POST", &cfg.url, &headers, body, POST_TIMEOUT)
        .await
        .map(|r| r.status)
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn webhook_urls_parse_and_only_loopback_is_allowed_by_default() {
        let host = |url| webhook_host(url).map(|(h, _)| h);
        assert_eq!(host("http://127.0.0.1:8080/hook?x=1").unwrap(), "127.0.0.1");
        assert_eq!(host("http://[::1]:9/").unwrap(), "::1");
        assert_eq!(host("http://localhost").unwrap(), "localhost");
        assert_eq!(webhook_host("http://[::1]:9/").unwrap().1, 9);
        assert_eq!(webhook_host("http://localhost/").unwrap().1, 80);
        assert_eq!(webhook_host("https://localhost/").unwrap().1, 443);
        for bad in [
            "ftp://127.0.0.1/",
            "http://u:p@127.0.0.1/",
            "http://",
            "http://h:x/",
        ] {
            assert!(host(bad).is_err(), "{bad}");
        }
        assert!(is_loopback("127.0.0.2") && is_loopback("::1") && is_loopback("LOCALHOST"));
        assert!(!is_loopback("10.0.0.1") && !is_loopback("example.com"));
    }
}
