//! The tools step of a run: each proposed call gated by the judged answers, backend calls
//! made through the action pipeline ([`service::admit`]) with the agent as actor, and their
//! `TOOL_CALL_RESULT`s.

use std::collections::BTreeSet;

use hyper::body::Bytes;
use hyper::header::{HeaderName, HeaderValue};
use hyper::HeaderMap;
use serde_json::{json, Map, Value};

use super::{End, Run};
use crate::agent::agui::event::Event;
use crate::agent::agui::resume::{gate_for, Gate, SkipReason};
use crate::agent::agui::{Call, Threads};
use crate::scenario::agui::{InterruptSpec, Phase, ResumeMode, ToolKind};
use crate::service::{self, Plan, Request, Response};

impl Run {
    /// The tools step: every call not yet done runs if its gates allow. `held` are interrupts
    /// being raised again right now: calls they gate wait (reinterrupt).
    pub(super) async fn run_tools(
        &mut self,
        i: usize,
        calls: &mut [Call],
        held: &BTreeSet<String>,
    ) -> Result<(), End> {
        let spec = self.spec.clone();
        for call in calls.iter_mut() {
            if self.answered.contains(&call.id) {
                continue;
            }
            if call.done {
                // It ran in a run whose client went away before hearing the result.
                let content = call.result.clone().unwrap_or_else(lost_result);
                self.deliver(call, content);
                continue;
            }
            if self.gone || self.client_left() {
                self.gone = true;
                return Err(End::Gone);
            }
            let gates: Vec<&InterruptSpec> = spec
                .interrupts_at(i, Phase::BeforeTools)
                .filter(|d| d.tool == Some(call.tool))
                .collect();
            let tool = &spec.tools[call.tool];
            let mut detail = json!({
                "thread_id": self.input.thread_id,
                "run_id": self.input.run_id,
                "tool_call_id": call.id,
                "tool": tool.name,
                "args": *call.args,
                "gated_by": gates.iter().map(|g| g.key.as_str()).collect::<Vec<_>>(),
            });
            let verdict = self.verdict(&gates, held);
            // Held by a re-raised interrupt: it waits for the next continuation.
            let waits = matches!(verdict, Gate::Blocked) && !held.is_empty();
            if waits || self.settled_elsewhere(call) {
                continue;
            }
            let reason = match verdict {
                Gate::Blocked => "blocked",
                Gate::Skip(SkipReason::Discarded) => "discarded",
                Gate::Skip(SkipReason::NotApproved) => "not-approved",
                Gate::Run { payload } => {
                    detail["answer"] = payload.clone().unwrap_or(Value::Null);
                    self.run_call(call, &tool.kind, payload, detail).await?;
                    continue;
                }
            };
            detail["gate"] = json!(reason);
            self.record_for(&call.id, "tool-call", detail);
            let content = json!({"status": "not-run", "reason": reason}).to_string();
            self.deliver(call, content);
        }
        Ok(())
    }

    /// What a call's gates say together: blocked if any blocks, skipped if any skips, else it
    /// runs with the first answer's payload.
    fn verdict(&self, gates: &[&InterruptSpec], held: &BTreeSet<String>) -> Gate {
        let mut verdict = Gate::Run { payload: None };
        for g in gates {
            let v = if held.contains(&g.key) {
                Gate::Blocked
            } else if !self.judgement.answers.contains_key(&g.key)
                && self.carried.contains_key(&g.key)
            {
                gate_for(self.carried.get(&g.key), g.approve_if.as_deref())
            } else {
                self.judgement.gate(&g.key, g.approve_if.as_deref())
            };
            verdict = match (verdict, v) {
                (Gate::Blocked, _) | (_, Gate::Blocked) => Gate::Blocked,
                (Gate::Skip(r), _) | (_, Gate::Skip(r)) => Gate::Skip(r),
                (Gate::Run { payload: a }, Gate::Run { payload: b }) => {
                    Gate::Run { payload: a.or(b) }
                }
            };
        }
        verdict
    }

    /// A call its gates let run: a frontend call is left to the application (the run ends
    /// naming it, INT-2), a backend call goes to its service and gets its result.
    async fn run_call(
        &mut self,
        call: &mut Call,
        kind: &ToolKind,
        payload: Option<Value>,
        mut detail: Value,
    ) -> Result<(), End> {
        let ToolKind::Backend {
            service,
            route,
            headers,
            answer_at,
        } = kind
        else {
            detail["gate"] = json!("frontend");
            self.record_for(&call.id, "tool-call", detail);
            return Ok(());
        };
        detail["gate"] = json!("run");
        // Boxed: only runs that call a service pay for the call's state.
        let called = Box::pin(self.call_service(call, service, route, headers, answer_at, payload));
        let (content, facts) = match called.await {
            Ok(v) => v,
            Err(end) => {
                detail["interrupted_by"] = json!(match end {
                    End::WorldClosed => "world-reset",
                    _ => "client-disconnected",
                });
                self.record_for(&call.id, "tool-call", detail);
                return Err(end);
            }
        };
        if let (Value::Object(d), Value::Object(f)) = (&mut detail, facts) {
            d.extend(f);
        }
        // The TOOL_CALL_RESULT content, sent again to a retry that never heard it, also after
        // a restart.
        detail["result"] = json!(content);
        self.record_for(&call.id, "tool-call", detail);
        self.deliver(call, content);
        Ok(())
    }

    /// A stateful agent settles a call once per thread: take it, or, if another run of the
    /// thread has it (a retry or a concurrent continuation), send the result that one got.
    fn settled_elsewhere(&mut self, call: &mut Call) -> bool {
        if self.spec.resume != ResumeMode::Stateful
            || matches!(self.spec.tools[call.tool].kind, ToolKind::Frontend)
        {
            return false;
        }
        let threads = self.world.extension::<Threads>();
        let Some(had) = threads.claim(&self.agent, &self.input.thread_id, &call.id) else {
            return false;
        };
        self.deliver(call, had.unwrap_or_else(lost_result));
        true
    }

    /// A call's `TOOL_CALL_RESULT`; the call is done from now on (on the thread too).
    fn deliver(&mut self, call: &mut Call, content: String) {
        if self.spec.resume == ResumeMode::Stateful {
            let threads = self.world.extension::<Threads>();
            threads.settle(&self.agent, &self.input.thread_id, &call.id, &content);
        }
        call.done = true;
        call.result = Some(content.clone());
        self.executed.insert(call.id.clone(), Some(content.clone()));
        self.emit(Event::tool_call_result(
            &format!("result-{}", call.id),
            &call.id,
            content,
        ));
    }

    /// A backend tool call through the action pipeline. Returns the `TOOL_CALL_RESULT` content
    /// and facts for the ledger, or how the run ended while it waited for the response.
    async fn call_service(
        &mut self,
        call: &Call,
        service: &str,
        route: &str,
        headers: &[(String, String)],
        answer_at: &Option<String>,
        payload: Option<Value>,
    ) -> Result<(String, Value), End> {
        let world = self.world.clone();
        let Some(r) = world.scenario.service(service).and_then(|s| s.route(route)) else {
            // Validated when the scenario loaded; a swapped scenario is another world.
            let content =
                json!({"error": format!("no route \"{route}\" in service \"{service}\"")});
            return Ok((content.to_string(), json!({})));
        };
        let method = r.method.as_str();
        let path = render_path(&r.path.raw, &call.args);
        let mut body = (*call.args).clone();
        if let (Some(ptr), Some(p)) = (answer_at, &payload) {
            set_pointer(&mut body, ptr, p.clone());
        }
        let mut map = HeaderMap::new();
        let mut skipped = Vec::new();
        let with_body = !matches!(method, "GET" | "HEAD");
        if with_body {
            map.insert(
                hyper::header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
        }
        for (k, v) in headers {
            let v = v
                .replace("{{tool_call_id}}", &call.id)
                .replace("{{run_id}}", &self.input.run_id)
                .replace("{{thread_id}}", &self.input.thread_id);
            match (
                HeaderName::from_bytes(k.as_bytes()),
                HeaderValue::from_str(&v),
            ) {
                (Ok(k), Ok(v)) => {
                    map.insert(k, v);
                }
                _ => skipped.push(k.clone()),
            }
        }
        let req = Request {
            service: service.into(),
            method: method.into(),
            path: path.as_str().into(),
            headers: map,
            body: if with_body {
                body.to_string().into()
            } else {
                Bytes::new()
            },
            actor: Some(format!("agent:{}", self.agent)),
            work_id: Some(call.id.clone()),
            revision: self.revision.clone(),
            ..Request::default()
        };
        let out = service::admit(&world, req);
        // The effect is in the world now, whether or not anyone hears the response.
        self.executed.insert(call.id.clone(), None);
        let mut facts = json!({
            "service": service,
            "route": route,
            "request": {"method": method, "path": path, "body": if with_body { body } else { Value::Null }},
            "action_seq": out.seq,
        });
        if !skipped.is_empty() {
            facts["skipped_headers"] = json!(skipped);
        }
        let response = match out.plan {
            Plan::Now => Ok(out.response),
            Plan::At(t) => {
                self.cursor = self.cursor.max(t);
                self.sleep_until(t).await?;
                Ok(out.response)
            }
            Plan::Drop => Err("dropped"),
            Plan::Reset => Err("reset"),
            Plan::Hang => Err("hung"),
        };
        let content = match response {
            Ok(resp) => {
                facts["response"] = json!({"status": resp.status});
                result_content(service, &resp)
            }
            Err(delivery) => {
                facts["response"] = json!({"delivery": delivery});
                json!({"error": format!("no response from service \"{service}\""), "delivery": delivery})
                    .to_string()
            }
        };
        Ok((content, facts))
    }
}

/// The content sent for a call that ran when its result is not known.
fn lost_result() -> String {
    json!({"error": "the result was lost: the client went away while the service answered", "delivery": "unknown"}).to_string()
}

/// A service response as tool-result content: the body of a 2xx as is; otherwise an error
/// envelope with the status, so a consumer can tell a failed call from a result.
fn result_content(service: &str, resp: &Response) -> String {
    let text = String::from_utf8_lossy(&resp.body).into_owned();
    if (200..300).contains(&resp.status) {
        return text;
    }
    let body = serde_json::from_str::<Value>(&text).unwrap_or(Value::String(text));
    json!({
        "error": format!("service \"{service}\" answered {}", resp.status),
        "status": resp.status,
        "body": body,
    })
    .to_string()
}

/// A route path with its `{name}` segments filled from the call's arguments.
fn render_path(raw: &str, args: &Value) -> String {
    raw.split('/')
        .map(|seg| {
            match seg
                .strip_prefix('{')
                .and_then(|s| s.strip_suffix('}'))
                .and_then(|name| args.get(name))
            {
                Some(Value::String(s)) => s.clone(),
                Some(v) => v.to_string(),
                None => seg.to_string(),
            }
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// Put `value` at JSON pointer `ptr`, creating objects on the way.
fn set_pointer(target: &mut Value, ptr: &str, value: Value) {
    let parts: Vec<String> = ptr
        .split('/')
        .skip(1)
        .map(|p| p.replace("~1", "/").replace("~0", "~"))
        .collect();
    let mut cur = target;
    for (n, part) in parts.iter().enumerate() {
        if !cur.is_object() {
            *cur = Value::Object(Map::new());
        }
        let Value::Object(map) = cur else { return };
        if n + 1 == parts.len() {
            map.insert(part.clone(), value);
            return;
        }
        cur = map.entry(part.clone()).or_insert(Value::Null);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_filled_from_arguments() {
        let args = json!({"id": "act_3", "n": 4});
        assert_eq!(render_path("/v1/t/{id}", &args), "/v1/t/act_3");
        assert_eq!(render_path("/v1/{n}/x", &args), "/v1/4/x");
        assert_eq!(render_path("/v1/{zz}", &args), "/v1/{zz}");
    }

    #[test]
    fn answers_are_placed_at_their_pointer() {
        let mut body = json!({"to": "acct-9"});
        set_pointer(&mut body, "/approval/by", json!("ann"));
        assert_eq!(body, json!({"to": "acct-9", "approval": {"by": "ann"}}));
    }
}
