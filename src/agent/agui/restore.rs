//! Rebuilding a world's AG-UI threads from its ledger after a restart (`--journal`): the open
//! checkpoint of each thread of a stateful agent (the interrupts as emitted, `expiresAt` and
//! TanStack bindings included, where it paused, its tool calls and which already ran, the state
//! it left, answers carried from earlier continuations). Everything else an agent knows comes
//! from the client's messages.
//!
//! The entries are replayed in order:
//! - `run-finished` carries the `checkpoint` the run left open (an interrupt outcome, or the
//!   consumed checkpoint a run whose client went away put back): it becomes the thread's open
//!   one, unless a continuation already consumed it;
//! - `run-started` names the checkpoint it consumed (`continues`); it is taken off the thread
//!   (or, if its `run-finished` comes later in the ledger — the two are not written under one
//!   lock — marked taken for when it does);
//! - `tool-call` gives each call's result (`result` for one that ran, `not-run` for a skipped
//!   one): the calls each thread settled; any entry of the agent's own calls to a service says
//!   the call reached it.
//!
//! A run still streaming at the crash cannot be continued: it ends as if its client had gone
//! away (`run-finished`, `outcome: "cancelled"`, `cause: "restart"`), putting back the
//! checkpoint it consumed with every call it already ran marked done, so a retry re-sends the
//! result instead of repeating the call. Not restored: a late `RUN_ERROR` not yet sent, and
//! threads whose entries `--max-entries` evicted.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;

use serde::Deserialize;
use serde_json::{json, Value};

use super::start::parse_call_id;
use super::{run_hashes, Checkpoint, ThreadMaps, Threads};
use crate::ledger::{Disposition, Record};
use crate::scenario::agui::AgUiAgent;
use crate::scenario::AgentSpec;
use crate::world::World;

impl Checkpoint {
    /// The checkpoint as a `run-finished` entry keeps it.
    pub(crate) fn ledger_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or_default()
    }

    /// Read back what [`Checkpoint::ledger_json`] wrote; `results` are the calls' result
    /// contents by call id. `None` if it is not a checkpoint; calls that are not this script's
    /// are left out.
    fn from_ledger(
        spec: &AgUiAgent,
        v: &Value,
        results: &HashMap<String, Option<String>>,
    ) -> Option<Checkpoint> {
        let mut cp = Checkpoint::deserialize(v).ok()?;
        cp.calls.retain_mut(|c| {
            let scripted =
                parse_call_id(&c.id).and_then(|(i, k)| spec.iterations.get(i)?.tool_calls.get(k));
            let Some(scripted) = scripted else {
                return false;
            };
            c.tool = scripted.tool;
            c.args = scripted.args.clone();
            c.result = results.get(&c.id).filter(|_| c.done).cloned().flatten();
            true
        });
        Some(cp)
    }
}

/// A run seen starting.
struct Started {
    agent: String,
    thread: String,
    run_id: String,
    /// The checkpoint it consumed (stateful continuations).
    consumed: Option<Checkpoint>,
    finished: bool,
}

/// Rebuild a world's AG-UI threads from its ledger (see the module docs). Meant for a world
/// just restored from the journal; one whose threads are in use is left alone. Returns how many
/// checkpoints are open.
pub fn restore(world: &Arc<World>) -> usize {
    let agents: HashMap<&str, &AgUiAgent> = world
        .scenario
        .agents
        .iter()
        .filter_map(|a| match &a.spec {
            AgentSpec::AgUi(spec) => Some((&*a.name, spec)),
            _ => None,
        })
        .collect();
    if agents.is_empty() {
        return 0;
    }
    let actors: HashMap<String, &str> = agents.keys().map(|a| (format!("agent:{a}"), *a)).collect();
    let records: Vec<Record> = world
        .lock()
        .ledger
        .iter()
        .filter(|r| {
            if r.disposition == Disposition::Agent {
                agents.contains_key(&*r.service)
            } else {
                r.actor.as_ref().is_some_and(|a| actors.contains_key(a))
            }
        })
        .collect();
    if records.is_empty() {
        return 0;
    }
    let threads = world.extension::<Threads>();
    if !threads.lock().open.is_empty() {
        return 0;
    }

    let mut rb = Rebuild::default();
    for r in &records {
        if r.disposition != Disposition::Agent {
            // The agent's own call reached the service: it ran, whatever became of its result.
            if let (Some(agent), Some(call)) = (
                r.actor.as_ref().and_then(|a| actors.get(a)),
                r.work_id.as_ref(),
            ) {
                rb.reached.insert((agent.to_string(), call.clone()));
            }
            continue;
        }
        if let (Some(spec), Some(event), Some(d)) = (
            agents.get(&*r.service),
            r.event.as_deref(),
            r.detail.as_ref(),
        ) {
            rb.apply(spec, event, r, &d.value());
        }
    }

    // Runs still streaming when the server stopped: as if their clients had gone away.
    let now = world.clock.now();
    let mut interrupted = 0;
    for s in rb.started.iter_mut().filter(|s| !s.finished) {
        interrupted += 1;
        let mut detail = json!({
            "thread_id": s.thread,
            "run_id": s.run_id,
            "outcome": "cancelled",
            "cause": "restart",
            "message": "doubleagent restarted while this run was in progress: it ended there, as if its client had gone away",
        });
        if let Some(mut cp) = s.consumed.take() {
            let results = rb.results.entry((s.agent.clone(), s.thread.clone()));
            let results = results.or_default();
            for c in cp.calls.iter_mut().filter(|c| !c.done) {
                if let Some(result) = results.get(&c.id) {
                    c.done = true;
                    c.result = result.clone();
                } else if rb.reached.contains(&(s.agent.clone(), c.id.clone())) {
                    c.done = true;
                    results.insert(c.id.clone(), None);
                }
            }
            detail["restored_checkpoint"] = json!(cp.run_id);
            detail["checkpoint"] = cp.ledger_json();
            rb.open.insert((s.agent.clone(), s.thread.clone()), cp);
        }
        let mut rec = Record::agent_event(&s.agent, "run-finished", now, detail);
        rec.work_id = Some(s.run_id.clone());
        // Its client never got RUN_FINISHED (REC-4), as for one that went away.
        rec.abandon(now);
        world.lock().ledger.append(rec);
    }

    let n = rb.open.len();
    *threads.lock() = ThreadMaps {
        open: rb.open,
        settled: rb.results,
        runs: rb.runs,
    };
    if n > 0 || interrupted > 0 {
        tracing::info!(
            session = world.session.as_deref().unwrap_or("default"),
            open_checkpoints = n,
            interrupted_runs = interrupted,
            "restored AG-UI threads from the journal"
        );
    }
    n
}

#[derive(Default)]
struct Rebuild {
    open: HashMap<(String, String), Checkpoint>,
    started: Vec<Started>,
    /// Unfinished runs by (agent, thread, run), oldest first.
    running: HashMap<(String, String, String), VecDeque<usize>>,
    /// Runs waiting for the checkpoint they consumed, by (agent, thread, its run).
    awaiting: HashMap<(String, String, String), usize>,
    /// Result contents of calls that ran or were skipped, by (agent, thread) then call id.
    results: HashMap<(String, String), HashMap<String, Option<String>>>,
    /// The thread each run id was first started on, by (agent, run id), as hashes (`run_hashes`).
    runs: crate::hash::FastMap<u64, u64>,
    /// (agent, call id) of calls that reached a service.
    reached: HashSet<(String, String)>,
}

fn str_of<'v>(d: &'v Value, k: &str) -> Option<&'v str> {
    d.get(k).and_then(Value::as_str)
}

impl Rebuild {
    fn apply(&mut self, spec: &AgUiAgent, event: &str, r: &Record, d: &Value) {
        let agent = r.service.clone();
        if event == "tool-call" {
            let (Some(call), Some(thread)) = (r.work_id.clone(), str_of(d, "thread_id")) else {
                return;
            };
            let result = match str_of(d, "gate") {
                Some("run") => str_of(d, "result").map(str::to_string),
                Some(reason @ ("discarded" | "not-approved" | "blocked")) => {
                    Some(json!({"status": "not-run", "reason": reason}).to_string())
                }
                _ => return,
            };
            let thread = thread.to_string();
            self.results
                .entry((agent, thread))
                .or_default()
                .insert(call, result);
            return;
        }
        let (Some(thread), Some(run_id)) = (str_of(d, "thread_id"), str_of(d, "run_id")) else {
            return;
        };
        let (thread, run_id) = (thread.to_string(), run_id.to_string());
        let run = (agent.clone(), thread.clone(), run_id.clone());
        match event {
            "run-started" => {
                let (key, first) = run_hashes(&agent, &run_id, &thread);
                self.runs.entry(key).or_insert(first);
                let mut consumed = None;
                let ix = self.started.len();
                if let Some(c) = str_of(d, "continues") {
                    let key = (agent.clone(), thread.clone());
                    if self.open.get(&key).is_some_and(|cp| cp.run_id == c) {
                        consumed = self.open.remove(&key);
                    } else {
                        // Its checkpoint's `run-finished` comes later in the ledger.
                        self.awaiting.insert((key.0, key.1, c.to_string()), ix);
                    }
                }
                self.running.entry(run).or_default().push_back(ix);
                self.started.push(Started {
                    agent,
                    thread,
                    run_id,
                    consumed,
                    finished: false,
                });
            }
            "run-finished" => {
                if let Some(ix) = self.running.get_mut(&run).and_then(VecDeque::pop_front) {
                    self.started[ix].finished = true;
                }
                let results = self.results.entry((agent.clone(), thread.clone()));
                let Some(cp) = d
                    .get("checkpoint")
                    .and_then(|v| Checkpoint::from_ledger(spec, v, results.or_default()))
                else {
                    return;
                };
                let taken = (agent.clone(), thread.clone(), cp.run_id.clone());
                match self.awaiting.remove(&taken) {
                    // A continuation was judged against it before this entry was written.
                    Some(ix) => self.started[ix].consumed = Some(cp),
                    None => {
                        self.open.insert((agent, thread), cp);
                    }
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::agui::{interrupt::Interrupt, resume::Answer, Boundary, Call};
    use crate::scenario::agui::Phase;
    use std::collections::BTreeMap;

    const SCENARIO: &str = r#"
name = "t"
clock = "manual"
[services.payments]
[[services.payments.routes]]
name = "create-transfer"
method = "POST"
path = "/v1/transfers"
kind = "action"
[agents.a]
protocol = "ag-ui"
tools = [{ name = "pay", service = "payments", route = "create-transfer" }]
[[agents.a.iterations]]
tool_calls = [{ tool = "pay", args = { to = "acct-9" } }, { tool = "pay", args = { to = "acct-7" } }]
[[agents.a.interrupts]]
phase = "beforeTools"
key = "ok"
tool_call = "pay"
"#;

    #[test]
    fn a_checkpoint_comes_back_from_its_ledger_form() {
        let sc = crate::scenario::Scenario::from_toml(SCENARIO, "t.toml").unwrap();
        let AgentSpec::AgUi(spec) = &sc.agent("a").unwrap().spec else {
            panic!("not an AG-UI agent");
        };
        let mut i = Interrupt::new("ok", "approval-required");
        i.expires_at = Some("2026-01-01T00:10:00.000Z".into());
        i.tool_call_id = Some("call-0-0-r1".into());
        let cp = Checkpoint {
            run_id: "r1".into(),
            interrupts: vec![i],
            at: Boundary {
                iteration: 0,
                phase: Phase::BeforeTools,
            },
            calls: vec![
                Call {
                    id: "call-0-0-r1".into(),
                    tool: 0,
                    args: Arc::new(json!({"to": "acct-9"})),
                    done: true,
                    result: Some("{\"id\":\"act_2\"}".into()),
                },
                Call {
                    id: "call-0-1-r1".into(),
                    tool: 0,
                    args: Arc::new(json!({"to": "acct-7"})),
                    done: false,
                    result: None,
                },
            ],
            state: json!({"step": 2}),
            answers: BTreeMap::from([
                (
                    "a".to_string(),
                    Answer::Resolved {
                        payload: Some(json!({"approved": true})),
                    },
                ),
                ("b".to_string(), Answer::Discarded),
            ]),
        };
        let v = cp.ledger_json();
        assert_eq!(
            v["calls"],
            json!([{"id": "call-0-0-r1", "done": true}, {"id": "call-0-1-r1"}])
        );
        let results = HashMap::from([(
            "call-0-0-r1".to_string(),
            Some("{\"id\":\"act_2\"}".to_string()),
        )]);
        let back = Checkpoint::from_ledger(spec, &v, &results).unwrap();
        assert_eq!(back.run_id, "r1");
        assert_eq!(back.interrupts, cp.interrupts);
        assert_eq!(back.at, cp.at);
        assert_eq!(back.state, cp.state);
        assert_eq!(back.answers, cp.answers);
        assert_eq!(back.calls.len(), 2);
        assert_eq!(back.calls[0].result, cp.calls[0].result);
        assert_eq!(*back.calls[1].args, json!({"to": "acct-7"}));
        assert!(back.calls[0].done && !back.calls[1].done);
        let no_answers = Checkpoint {
            answers: BTreeMap::new(),
            ..cp
        };
        assert!(no_answers.ledger_json().get("answers").is_none());
    }

    /// An entry of agent `a`'s run `detail.run_id`.
    fn append(world: &World, event: &str, detail: Value) {
        let mut r = Record::agent_event("a", event, world.clock.now(), &detail);
        r.work_id = detail["run_id"].as_str().map(str::to_string);
        world.lock().ledger.append(r);
    }

    /// The `run-started` of a run, continuing the checkpoint of run `continues`.
    fn started(world: &World, thread: &str, run: &str, continues: Option<&str>) {
        let mut detail = json!({"thread_id": thread, "run_id": run});
        if let Some(c) = continues {
            detail["continues"] = json!(c);
        }
        append(world, "run-started", detail);
    }

    /// The `run-finished` of a run paused on `ok` before its first call.
    fn interrupted(thread: &str, run: &str) -> Value {
        json!({"thread_id": thread, "run_id": run, "outcome": "interrupt", "checkpoint": paused(run)})
    }

    /// The entries that end a run as the restart did.
    fn restarts(world: &World) -> Vec<Record> {
        let ledger = &world.lock().ledger;
        let restart = |r: &Record| r.detail.as_ref().unwrap().value()["cause"] == "restart";
        ledger
            .iter()
            .filter(|r| r.detail.is_some() && restart(r))
            .collect()
    }

    fn paused(run: &str) -> Value {
        json!({"run_id": run, "interrupts": [{"id": "ok", "reason": "approval-required"}],
            "paused_at": {"iteration": 0, "phase": "beforeTools"},
            "calls": [{"id": format!("call-0-0-{run}")}], "state": {}})
    }

    #[test]
    fn consumed_checkpoints_stay_closed_in_either_order_and_a_streaming_run_puts_its_back() {
        let sc = crate::scenario::Scenario::from_toml(SCENARIO, "t.toml").unwrap();
        let world = Arc::new(World::new(Arc::new(sc), None));
        // t1: r1 paused, r2 continues it and is still streaming at the crash, after the call
        // reached the service.
        started(&world, "t1", "r1", None);
        append(&world, "run-finished", interrupted("t1", "r1"));
        started(&world, "t1", "r2", Some("r1"));
        let mut hit = Record::agent_event("payments", "x", world.clock.now(), Value::Null);
        hit.disposition = Disposition::Executed;
        hit.event = None;
        hit.actor = Some("agent:a".into());
        hit.work_id = Some("call-0-0-r1".into());
        world.lock().ledger.append(hit);
        // t2: the continuation r4 was judged before r3's run-finished was written.
        started(&world, "t2", "r3", None);
        started(&world, "t2", "r4", Some("r3"));
        append(&world, "run-finished", interrupted("t2", "r3"));
        append(
            &world,
            "run-finished",
            json!({"thread_id": "t2", "run_id": "r4", "outcome": "success"}),
        );

        assert_eq!(restore(&world), 1);
        let threads = world.extension::<Threads>();
        let maps = threads.lock();
        let open = &maps.open;
        assert!(!open.contains_key(&("a".to_string(), "t2".to_string())));
        let cp = &open[&("a".to_string(), "t1".to_string())];
        assert_eq!(cp.run_id, "r1");
        assert!(
            cp.calls[0].done,
            "the call that reached the service is not made again"
        );
        drop(maps);
        let ended = restarts(&world);
        assert_eq!(ended.len(), 1);
        assert_eq!(ended[0].work_id.as_deref(), Some("r2"));
        let d = ended[0].detail.as_ref().unwrap().value();
        assert_eq!(d["restored_checkpoint"], "r1");
        assert_eq!(d["checkpoint"]["calls"][0]["done"], true);
        // Nothing more to do a second time.
        threads.lock().open.clear();
        restore(&world);
        assert_eq!(restarts(&world).len(), 1);
        assert_eq!(
            threads.lock().open[&("a".to_string(), "t1".to_string())].run_id,
            "r1"
        );
    }
}
