//! The judging rules, each test named after the rule it exercises.

use crate::support::{cancelled, resolved};
use doubleagent::agent::agui::interrupt::{Interrupt, ResumeEntry};
use doubleagent::agent::agui::message::{Message, ToolCall};
use doubleagent::agent::agui::resume::*;
use serde_json::json;

// 2026-12-01T00:00:00Z
const T0: i64 = 1_796_083_200_000;
const MIN: i64 = 60_000;

fn approval(id: &str, tool_call_id: &str) -> Interrupt {
    let mut i = Interrupt::new(id, "approval-required");
    i.tool_call_id = Some(tool_call_id.into());
    i.message = Some("Approve?".into());
    i
}

fn expiring(id: &str, expires_at_ms: i64) -> Interrupt {
    let mut i = Interrupt::new(id, "approval-required");
    i.expires_at = Some(doubleagent::clock::format_rfc3339_ms(expires_at_ms as u64));
    i
}

fn case<'a>(
    knowledge: Knowledge<'a>,
    entries: &'a [ResumeEntry],
    policy: UncoveredPolicy,
) -> ResumeCase<'a> {
    ResumeCase {
        knowledge,
        known_open_from_messages: &[],
        entries,
        parent_run_id: None,
        now_ms: T0,
        policy,
    }
}

/// The thread's checkpoint: run `r1`, paused on `open`.
fn kept(open: &[Interrupt]) -> Knowledge<'_> {
    Knowledge::Checkpoint {
        run_id: "r1",
        interrupts: open,
    }
}

/// A stateless agent that could have raised `raisable`.
fn stateless(raisable: &[Interrupt]) -> Knowledge<'_> {
    Knowledge::Stateless { raisable }
}

fn reinterrupt(still_open: Vec<Interrupt>) -> Decision {
    Decision::Reinterrupt { still_open }
}

fn approve(id: &str) -> ResumeEntry {
    resolved(id, Some(json!({"approved": true})))
}

const ALL_POLICIES: [UncoveredPolicy; 3] = [
    UncoveredPolicy::Reject,
    UncoveredPolicy::RunError,
    UncoveredPolicy::Reinterrupt,
];

// --- RES-1 / RES-3: answers and discards --------------------------------------------

#[test]
fn res1_entry_answers_the_open_interrupt_and_the_action_runs() {
    let open = [approval("approve-transfer", "tc-1")];
    let entries = [approve("approve-transfer")];
    let j = judge(&case(kept(&open), &entries, UncoveredPolicy::Reject));
    assert_eq!(j.decision, Decision::Proceed);
    assert!(j.uncovered.is_empty());
    assert!(j.warnings.is_empty());
    assert_eq!(j.verdicts[0].kind.label(), "answered");
    assert_eq!(
        j.gate("approve-transfer", Some("/approved")),
        Gate::Run {
            payload: Some(json!({"approved": true}))
        }
    );
}

#[test]
fn res3_discarded_interrupt_means_the_tool_is_not_run() {
    let open = [approval("approve-transfer", "tc-1")];
    let entries = [cancelled("approve-transfer")];
    let j = judge(&case(kept(&open), &entries, UncoveredPolicy::Reject));
    assert_eq!(j.decision, Decision::Proceed);
    assert_eq!(j.answers.get("approve-transfer"), Some(&Answer::Discarded));
    assert_eq!(
        j.gate("approve-transfer", Some("/approved")),
        Gate::Skip(SkipReason::Discarded)
    );
    assert_eq!(
        j.gate("approve-transfer", None),
        Gate::Skip(SkipReason::Discarded)
    );
}

#[test]
fn res3_resolved_with_approve_if_false_skips_the_tool() {
    let open = [approval("a", "tc-1")];
    for payload in [
        json!({"approved": false}),
        json!({"approved": "yes"}),
        json!({}),
        json!(true),
    ] {
        let entries = [resolved("a", Some(payload.clone()))];
        let j = judge(&case(kept(&open), &entries, UncoveredPolicy::Reject));
        assert_eq!(j.decision, Decision::Proceed, "{payload}");
        assert_eq!(
            j.gate("a", Some("/approved")),
            Gate::Skip(SkipReason::NotApproved),
            "{payload}"
        );
    }
    // Without approve_if any resolved answer runs it; a whole-payload pointer works too.
    let entries = [resolved("a", Some(json!(true)))];
    let j = judge(&case(kept(&open), &entries, UncoveredPolicy::Reject));
    assert!(matches!(j.gate("a", None), Gate::Run { .. }));
    assert!(matches!(j.gate("a", Some("")), Gate::Run { .. }));
}

#[test]
fn res3_metadata_is_envelope_not_answer() {
    let open = [approval("a", "tc-1")];
    let mut e = resolved("a", None);
    e.metadata = Some(json!({"approved": true}).as_object().unwrap().clone());
    let entries = [e];
    let j = judge(&case(kept(&open), &entries, UncoveredPolicy::Reject));
    assert_eq!(
        j.gate("a", Some("/approved")),
        Gate::Skip(SkipReason::NotApproved)
    );
}

// --- RES-4 / PROD-3: uncovered interrupts -------------------------------------------

#[test]
fn res4_uncovered_interrupt_is_rejected() {
    let open = [approval("a", "tc-1"), approval("b", "tc-2")];
    let entries = [approve("a")];
    let j = judge(&case(kept(&open), &entries, UncoveredPolicy::Reject));
    match &j.decision {
        Decision::Reject {
            status,
            code,
            message,
        } => {
            assert_eq!(*status, 409);
            assert_eq!(*code, CODE_RESUME_INCOMPLETE);
            assert!(message.contains("b (no resume entry)"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(j.uncovered.len(), 1);
    assert_eq!(j.uncovered[0].why, UncoveredWhy::NoEntry);
    assert!(!j.uncovered.is_empty());
}

#[test]
fn res4_omission_is_not_discard() {
    let open = [approval("a", "tc-1")];
    let j = judge(&case(kept(&open), &[], UncoveredPolicy::Reinterrupt));
    // Not a Skip(Discarded): the action is blocked and the interrupt stays open.
    assert_eq!(j.gate("a", Some("/approved")), Gate::Blocked);
    assert_eq!(j.answers.get("a"), None);
    assert_eq!(j.decision, reinterrupt(open.to_vec()));
}

#[test]
fn res4_new_run_without_resume_on_an_interrupted_thread_is_uncovered() {
    // HttpAgent would refuse this client-side; a defective consumer may still send it.
    let open = [approval("a", "tc-1")];
    let j = judge(&case(kept(&open), &[], UncoveredPolicy::Reject));
    assert!(!j.is_continuation);
    assert!(matches!(j.decision, Decision::Reject { .. }));
}

#[test]
fn res4_fully_covered_batch_proceeds() {
    let open = [
        approval("a", "tc-1"),
        approval("b", "tc-2"),
        Interrupt::new("c", "choose"),
    ];
    let entries = [
        approve("a"),
        cancelled("b"),
        resolved("c", Some(json!("blue"))),
    ];
    for policy in ALL_POLICIES {
        let j = judge(&case(kept(&open), &entries, policy));
        assert_eq!(j.decision, Decision::Proceed);
        assert!(j.uncovered.is_empty());
    }
}

#[test]
fn prod3_run_error_policy_opens_the_stream_with_run_error() {
    let open = [approval("a", "tc-1")];
    let j = judge(&case(kept(&open), &[], UncoveredPolicy::RunError));
    assert_eq!(
        j.decision,
        Decision::RunError {
            code: CODE_RESUME_INCOMPLETE,
            message: "1 open interrupt(s) not covered by resume: a (no resume entry)".into()
        }
    );
}

#[test]
fn prod3_reinterrupt_runs_covered_entries_and_keeps_only_the_still_open() {
    let open = [approval("a", "tc-1"), approval("b", "tc-2")];
    let entries = [approve("a")];
    let j = judge(&case(kept(&open), &entries, UncoveredPolicy::Reinterrupt));
    assert_eq!(j.decision, reinterrupt(vec![open[1].clone()]));
    assert!(matches!(j.gate("a", Some("/approved")), Gate::Run { .. }));
    assert_eq!(j.gate("b", Some("/approved")), Gate::Blocked);
}

#[test]
fn prod3_never_proceeds_while_a_known_open_interrupt_is_unanswered() {
    let open = [approval("a", "tc-1")];
    let bogus = [resolved("bogus", Some(json!({"approved": true})))];
    for policy in ALL_POLICIES {
        for entries in [&[][..], &bogus[..]] {
            let j = judge(&case(kept(&open), entries, policy));
            assert_ne!(j.decision, Decision::Proceed, "{policy:?}");
            assert!(!j.uncovered.is_empty());
            assert_eq!(j.gate("a", Some("/approved")), Gate::Blocked);
        }
    }
}

#[test]
fn prod3_gated_tool_call_in_messages_is_known_open_to_a_stateless_producer() {
    let messages: Vec<Message> = serde_json::from_value(json!([
        {"id": "u1", "role": "user", "content": "pay acct-9"},
        {"id": "a1", "role": "assistant", "content": "I will move 100 to acct-9.",
         "toolCalls": [{"id": "tc-1", "type": "function", "function": {"name": "transfer_funds", "arguments": "{\"to\":\"acct-9\",\"amount\":100}"}}]}
    ]))
    .unwrap();
    let gate = |call: &ToolCall| {
        (call.function.name == "transfer_funds").then(|| approval("approve-transfer", &call.id))
    };
    let known = known_open_from_messages(&messages, gate);
    assert_eq!(known, vec![approval("approve-transfer", "tc-1")]);

    // No entry: blocked, whatever the policy.
    let mut c = case(stateless(&known), &[], UncoveredPolicy::RunError);
    c.known_open_from_messages = &known;
    let j = judge(&c);
    assert!(matches!(j.decision, Decision::RunError { .. }));
    assert_eq!(j.gate("approve-transfer", Some("/approved")), Gate::Blocked);

    // With the entry: covered.
    let entries = [approve("approve-transfer")];
    c.entries = &entries;
    let j = judge(&c);
    assert_eq!(j.decision, Decision::Proceed);
    assert!(matches!(
        j.gate("approve-transfer", Some("/approved")),
        Gate::Run { .. }
    ));
}

#[test]
fn prod3_a_stateful_producer_takes_no_answer_for_a_call_only_the_messages_show() {
    let from_messages = [approval("approve-transfer", "tc-1")];
    let entries = [approve("approve-transfer")];
    let mut c = case(
        Knowledge::NothingOpen,
        &entries,
        UncoveredPolicy::Reinterrupt,
    );
    c.known_open_from_messages = &from_messages;
    let j = judge(&c);
    assert_eq!(j.verdicts[0].kind.label(), "unrecognized");
    assert_eq!(j.warnings[0].rule, "ERR-1");
    assert_eq!(j.uncovered[0].why, UncoveredWhy::NoEntry);
    assert_eq!(j.decision, reinterrupt(from_messages.to_vec()));
    assert_eq!(j.gate("approve-transfer", Some("/approved")), Gate::Blocked);
}

#[test]
fn prod3_tool_call_with_a_result_is_not_known_open() {
    let messages: Vec<Message> = serde_json::from_value(json!([
        {"id": "a1", "role": "assistant",
         "toolCalls": [{"id": "tc-1", "type": "function", "function": {"name": "transfer_funds", "arguments": "{}"}},
                       {"id": "tc-2", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}]},
        {"id": "t1", "role": "tool", "toolCallId": "tc-1", "content": "skipped: approval discarded"}
    ]))
    .unwrap();
    let known = known_open_from_messages(&messages, |call| {
        (call.function.name == "transfer_funds").then(|| approval("approve-transfer", &call.id))
    });
    assert!(known.is_empty());
}

#[test]
fn prod3_checkpoint_and_messages_are_merged_without_duplicates() {
    let open = [approval("a", "tc-1")];
    let from_messages = [approval("a", "tc-1"), approval("b", "tc-2")];
    let mut c = case(kept(&open), &[], UncoveredPolicy::Reinterrupt);
    c.known_open_from_messages = &from_messages;
    let j = judge(&c);
    assert_eq!(j.uncovered.len(), 2);
    assert_eq!(j.decision, reinterrupt(from_messages.to_vec()));
}

// --- PROD-1: stateless ---------------------------------------------------------------

#[test]
fn prod1_stateless_producer_takes_entries_as_its_answers() {
    let raisable = [approval("approve-transfer", "tc-1")];
    let entries = [approve("approve-transfer")];
    let j = judge(&case(
        stateless(&raisable),
        &entries,
        UncoveredPolicy::Reject,
    ));
    assert_eq!(j.decision, Decision::Proceed);
    assert!(matches!(
        j.gate("approve-transfer", Some("/approved")),
        Gate::Run { .. }
    ));
}

#[test]
fn prod1_stateless_producer_with_nothing_visible_has_nothing_to_enforce() {
    let raisable = [approval("approve-transfer", "tc-1")];
    for policy in ALL_POLICIES {
        let j = judge(&case(stateless(&raisable), &[], policy));
        assert_eq!(j.decision, Decision::Proceed);
        // ...but it still never performs an action it has no answer for.
        assert_eq!(j.gate("approve-transfer", Some("/approved")), Gate::Blocked);
    }
}

// --- PROD-2 / ERR-1: unrecognized ----------------------------------------------------

#[test]
fn prod2_unrecognized_entry_is_ignored_with_a_warning_and_the_run_proceeds() {
    let open = [approval("a", "tc-1")];
    let entries = [approve("a"), resolved("bogus", Some(json!(1)))];
    let j = judge(&case(kept(&open), &entries, UncoveredPolicy::Reject));
    assert_eq!(j.decision, Decision::Proceed);
    assert_eq!(
        j.verdicts[1],
        EntryVerdict {
            interrupt_id: "bogus".into(),
            kind: Verdict::Unrecognized {
                why: UnrecognizedWhy::NotRaised
            }
        }
    );
    assert_eq!(j.warnings.len(), 1);
    assert_eq!(j.warnings[0].rule, "PROD-2");
    assert_eq!(j.warnings[0].interrupt_id.as_deref(), Some("bogus"));
    assert_eq!(j.answers.get("bogus"), None);
}

#[test]
fn prod2_stateless_unknown_id_is_unrecognized() {
    let raisable = [approval("approve-transfer", "tc-1")];
    let entries = [approve("nope")];
    let j = judge(&case(
        stateless(&raisable),
        &entries,
        UncoveredPolicy::Reject,
    ));
    assert_eq!(j.decision, Decision::Proceed);
    assert_eq!(j.verdicts[0].kind.label(), "unrecognized");
    assert_eq!(j.warnings[0].rule, "PROD-2");
}

#[test]
fn err1_resume_on_a_run_that_continues_nothing_is_all_unrecognized() {
    let entries = [approve("a"), cancelled("b")];
    let j = judge(&case(
        Knowledge::NothingOpen,
        &entries,
        UncoveredPolicy::Reject,
    ));
    assert_eq!(j.decision, Decision::Proceed);
    assert!(j.is_continuation);
    assert!(j.verdicts.iter().all(|v| matches!(
        v,
        EntryVerdict {
            kind: Verdict::Unrecognized {
                why: UnrecognizedWhy::NoInterruptedRun
            },
            ..
        }
    )));
    assert!(j.warnings.iter().all(|w| w.rule == "ERR-1"));
    assert_eq!(j.warnings.len(), 2);
    // Nothing it "answered" can run.
    assert_eq!(j.gate("a", None), Gate::Blocked);
}

// --- RES-5: expiry -------------------------------------------------------------------

#[test]
fn res5_answer_to_an_expired_interrupt_is_treated_as_uncovered() {
    let open = [expiring("a", T0 - MIN)];
    let entries = [approve("a")];
    let j = judge(&case(kept(&open), &entries, UncoveredPolicy::Reject));
    assert_eq!(
        j.verdicts[0],
        EntryVerdict {
            interrupt_id: "a".into(),
            kind: Verdict::AnswersExpired {
                expires_at: "2026-11-30T23:59:00.000Z".into()
            }
        }
    );
    assert_eq!(j.uncovered[0].why, UncoveredWhy::AnsweredAfterExpiry);
    assert!(matches!(
        j.decision,
        Decision::Reject {
            code: CODE_INTERRUPT_EXPIRED,
            ..
        }
    ));
    assert_eq!(j.gate("a", None), Gate::Blocked);
}

#[test]
fn res5_each_policy_handles_an_expired_answer_like_an_uncovered_one() {
    let open = [expiring("a", T0 - MIN)];
    let entries = [approve("a")];
    let mk = |policy| judge(&case(kept(&open), &entries, policy)).decision;
    assert!(matches!(
        mk(UncoveredPolicy::RunError),
        Decision::RunError {
            code: CODE_INTERRUPT_EXPIRED,
            ..
        }
    ));
    assert_eq!(mk(UncoveredPolicy::Reinterrupt), reinterrupt(open.to_vec()));
}

#[test]
fn res5_discarding_an_expired_interrupt_is_accepted() {
    let open = [expiring("a", T0 - MIN), approval("b", "tc-2")];
    let entries = [cancelled("a"), approve("b")];
    let j = judge(&case(kept(&open), &entries, UncoveredPolicy::Reject));
    assert_eq!(j.decision, Decision::Proceed);
    assert_eq!(
        j.verdicts[0],
        EntryVerdict {
            interrupt_id: "a".into(),
            kind: Verdict::Discarded { expired: true }
        }
    );
    assert_eq!(j.gate("a", None), Gate::Skip(SkipReason::Discarded));
}

#[test]
fn res5_now_equal_to_expires_at_is_expired_and_one_ms_before_is_not() {
    let at = [expiring("a", T0)];
    let before = [expiring("a", T0 + 1)];
    let entries = [approve("a")];
    let j = judge(&case(kept(&at), &entries, UncoveredPolicy::Reject));
    assert_eq!(j.verdicts[0].kind.label(), "answers-expired");
    let j = judge(&case(kept(&before), &entries, UncoveredPolicy::Reject));
    assert_eq!(j.verdicts[0].kind.label(), "answered");
}

#[test]
fn res5_unparseable_expires_at_never_expires() {
    let mut i = Interrupt::new("a", "x");
    i.expires_at = Some("next tuesday".into());
    assert!(!is_expired(&i, i64::MAX));
    let open = [i];
    let entries = [approve("a")];
    let j = judge(&case(kept(&open), &entries, UncoveredPolicy::Reject));
    assert_eq!(j.decision, Decision::Proceed);
}

#[test]
fn res5_stateless_expired_answer_to_a_raisable_interrupt_is_uncovered() {
    let raisable = [expiring("a", T0 - MIN)];
    let entries = [approve("a")];
    let j = judge(&case(
        stateless(&raisable),
        &entries,
        UncoveredPolicy::RunError,
    ));
    assert!(matches!(
        j.decision,
        Decision::RunError {
            code: CODE_INTERRUPT_EXPIRED,
            ..
        }
    ));
}

#[test]
fn res2_parent_run_id_naming_another_run_warns_but_entries_still_match_by_id() {
    let open = [approval("a", "tc-1")];
    let entries = [approve("a")];
    let mut c = case(kept(&open), &entries, UncoveredPolicy::Reject);
    c.parent_run_id = Some("r0");
    let j = judge(&c);
    assert_eq!(j.decision, Decision::Proceed);
    assert_eq!(j.warnings.len(), 1);
    assert_eq!(j.warnings[0].rule, "RES-2");
    c.parent_run_id = Some("r1");
    assert!(judge(&c).warnings.is_empty());
}

#[test]
fn int3_agreeing_duplicate_entries_only_warn() {
    let open = [approval("a", "tc-1")];
    let entries = [approve("a"), approve("a")];
    let j = judge(&case(kept(&open), &entries, UncoveredPolicy::Reject));
    assert_eq!(j.decision, Decision::Proceed);
    assert_eq!(
        j.verdicts[1],
        EntryVerdict {
            interrupt_id: "a".into(),
            kind: Verdict::Duplicate { conflicting: false }
        }
    );
    assert_eq!(j.warnings[0].rule, "INT-3");
    assert!(matches!(j.gate("a", Some("/approved")), Gate::Run { .. }));
}

#[test]
fn int3_contradicting_duplicate_entries_leave_the_interrupt_uncovered() {
    let open = [approval("a", "tc-1")];
    let entries = [approve("a"), cancelled("a")];
    let j = judge(&case(kept(&open), &entries, UncoveredPolicy::Reinterrupt));
    assert_eq!(j.uncovered[0].why, UncoveredWhy::ConflictingEntries);
    assert_eq!(j.gate("a", Some("/approved")), Gate::Blocked);
    assert_eq!(j.decision, reinterrupt(open.to_vec()));
}

#[test]
fn ph6_continuation_is_recognised_without_parent_run_id() {
    // @ag-ui/client@1.0.0 sends resume but never parentRunId.
    let open = [approval("a", "tc-1")];
    let entries = [approve("a")];
    let j = judge(&case(kept(&open), &entries, UncoveredPolicy::Reject));
    assert!(j.is_continuation);
    // TanStack sends parentRunId (and resume).
    let mut c = case(Knowledge::NothingOpen, &[], UncoveredPolicy::Reject);
    c.parent_run_id = Some("r1");
    assert!(judge(&c).is_continuation);
    assert!(!judge(&case(Knowledge::NothingOpen, &[], UncoveredPolicy::Reject)).is_continuation);
}

#[test]
fn uncovered_policy_parses_the_scenario_spellings() {
    for (spelling, policy) in [
        ("reject", UncoveredPolicy::Reject),
        ("run-error", UncoveredPolicy::RunError),
        ("reinterrupt", UncoveredPolicy::Reinterrupt),
    ] {
        assert_eq!(serde_json::from_value(json!(spelling)).ok(), Some(policy));
    }
    assert!(serde_json::from_value::<UncoveredPolicy>(json!("RunError")).is_err());
}
