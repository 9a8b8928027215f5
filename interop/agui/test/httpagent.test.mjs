// The official @ag-ui/client@1.0.0 HttpAgent against doubleagent's fake AG-UI agents.
// Scenario: scenarios/agui-interop.toml. Rules: INT-1, INT-3, RES-1, RES-3..6, PROD-2, PROD-3, PH-3.
import { test, before, after, beforeEach } from 'node:test'
import assert from 'node:assert/strict'
import { HttpAgent } from '@ag-ui/client'
import {
  startDoubleagent, appliedTransfers, capturingFetch, recorder, expiresAtMs, sleep, ledger,
} from './harness.mjs'

let da
before(async () => { da = await startDoubleagent() })
after(async () => { await da?.stop() })
beforeEach(async () => {
  const res = await fetch(`${da.url}/_admin/reset`, { method: 'POST' })
  assert.ok(res.ok, `reset: HTTP ${res.status}`)
})

const userAsks = [{ id: 'u1', role: 'user', content: 'Move 100 to acct-9, please.' }]

function newAgent(name) {
  const cap = capturingFetch()
  const agent = new HttpAgent({ url: da.agentUrl(name), fetch: cap.fetch, initialMessages: userAsks })
  return { agent, cap }
}

/** First run: ends with the beforeTools approval interrupt, and nothing has moved yet. */
async function runUntilInterrupted(agent) {
  const rec = recorder()
  await agent.runAgent({}, rec.subscriber)
  assert.equal(rec.finished.length, 1, `one RUN_FINISHED (got ${rec.types().join(',')})`)
  const fin = rec.finished[0]
  assert.equal(fin.outcome, 'interrupt') // INT-1
  assert.equal(fin.interrupts.length, 1)
  const [interrupt] = fin.interrupts
  const started = rec.events.filter((e) => e.type === 'TOOL_CALL_START')
  assert.equal(started.length, 1)
  assert.equal(started[0].toolCallName, 'transfer_funds')
  assert.equal(interrupt.toolCallId, started[0].toolCallId) // the pending call
  assert.deepEqual(agent.pendingInterrupts.map((i) => i.id), [interrupt.id])
  assert.equal(await appliedTransfers(da.url).then((t) => t.length), 0, 'PH-3: no effect at beforeTools')
  return { rec, interrupt }
}

test('approval cycle: interrupt -> approve -> resume -> the tool runs once (INT-1, RES-1, RES-6, PH-3)', async () => {
  const { agent, cap } = newAgent('approver')
  const { interrupt } = await runUntilInterrupted(agent)
  assert.equal(interrupt.id, 'approve-transfer')
  assert.equal(interrupt.reason, 'approval-required')
  assert.equal(interrupt.message, 'Approve transferring 100 to acct-9?')
  assert.deepEqual(interrupt.responseSchema, { type: 'object', properties: { approved: { type: 'boolean' } } })
  assert.ok(expiresAtMs(interrupt) > Date.now(), `expiresAt ${interrupt.expiresAt} is a future ISO 8601 date`)
  assert.ok(expiresAtMs(interrupt) <= Date.now() + 10 * 60_000 + 5_000, 'expires_in = "10m"')

  const rec = recorder()
  await agent.runAgent(
    { resume: [{ interruptId: interrupt.id, status: 'resolved', payload: { approved: true } }] },
    rec.subscriber,
  )
  assert.equal(rec.finished.length, 1)
  assert.equal(rec.finished[0].outcome, 'success')
  assert.deepEqual(rec.finished[0].pendingToolCallIds, [])
  assert.deepEqual(agent.pendingInterrupts, [])
  assert.equal(rec.errors.length, 0)

  const transfers = await appliedTransfers(da.url)
  assert.equal(transfers.length, 1, 'exactly one transfer took effect')
  assert.match(JSON.stringify(transfers[0]), /acct-9/)

  // The tool result reached the conversation, then iteration 1 spoke.
  const toolMsg = agent.messages.find((m) => m.role === 'tool' && m.toolCallId === interrupt.toolCallId)
  assert.ok(toolMsg, 'a tool message answers the approved call')
  assert.ok(agent.messages.some((m) => m.role === 'assistant' && m.content === 'Done.'))

  // What crossed the wire: same thread, new run, the resume entry (RES-1, RES-6).
  assert.equal(cap.exchanges.length, 2)
  const [first, second] = cap.exchanges.map((x) => x.body)
  assert.equal(second.threadId, first.threadId)
  assert.notEqual(second.runId, first.runId)
  assert.equal(second.parentRunId, undefined, '@ag-ui/client 1.0.0 never sends parentRunId')
  assert.deepEqual(second.resume, [{ interruptId: 'approve-transfer', status: 'resolved', payload: { approved: true } }])
  assert.ok(second.messages.some((m) => m.role === 'assistant' && m.toolCalls?.[0]?.id === interrupt.toolCallId),
    'the accumulated messages carry the pending tool call')

  // The ledger tells the same story: the side effect was made by the agent, under its tool call.
  const entries = await ledger(da.url)
  assert.equal(transfers[0].actor, 'agent:approver')
  assert.equal(transfers[0].work_id, interrupt.toolCallId)
  assert.deepEqual(entries.filter((e) => e.event === 'warning'), [], 'a conforming client draws no warning')
  assert.deepEqual(entries.filter((e) => e.event === 'run-finished').map((e) => e.detail.outcome), ['interrupt', 'success'])
})

test('discard: a cancelled entry means the transfer never happens (RES-3)', async () => {
  const { agent } = newAgent('approver')
  const { interrupt } = await runUntilInterrupted(agent)
  const rec = recorder()
  await agent.runAgent({ resume: [{ interruptId: interrupt.id, status: 'cancelled' }] }, rec.subscriber)
  assert.equal(rec.finished.length, 1)
  assert.notEqual(rec.finished[0].outcome, 'interrupt')
  assert.deepEqual(agent.pendingInterrupts, [])
  assert.equal((await appliedTransfers(da.url)).length, 0, 'discarded approval: no ledger effect')
})

test('approved:false in the payload is not an approval (approve_if = "/approved")', async () => {
  const { agent } = newAgent('approver')
  const { interrupt } = await runUntilInterrupted(agent)
  const rec = recorder()
  await agent.runAgent(
    { resume: [{ interruptId: interrupt.id, status: 'resolved', payload: { approved: false } }] },
    rec.subscriber,
  )
  assert.equal(rec.finished[0]?.outcome, 'success')
  assert.equal((await appliedTransfers(da.url)).length, 0)
})

test('client refuses an uncovered resume before sending anything (RES-4, consumer side)', async () => {
  const { agent, cap } = newAgent('approver')
  await runUntilInterrupted(agent)
  const sent = cap.exchanges.length
  const err = console.error
  console.error = () => {}
  try {
    await assert.rejects(agent.runAgent({}), /pending interrupt\(s\) not addressed by resume: approve-transfer/)
    await assert.rejects(
      agent.runAgent({ resume: [{ interruptId: 'bogus', status: 'resolved', payload: {} }] }),
      /not addressed by resume: approve-transfer/,
    )
  } finally {
    console.error = err
  }
  assert.equal(cap.exchanges.length, sent, 'nothing was sent')
  assert.equal((await appliedTransfers(da.url)).length, 0)
})

test('client refuses to answer an expired interrupt, but a discard goes through (RES-5)', async () => {
  const { agent, cap } = newAgent('expiring') // expires_in = "300ms"
  const { interrupt } = await runUntilInterrupted(agent)
  const wait = expiresAtMs(interrupt) - Date.now() + 50
  if (wait > 0) await sleep(wait)
  const sent = cap.exchanges.length
  const err = console.error
  console.error = () => {}
  try {
    await assert.rejects(
      agent.runAgent({ resume: [{ interruptId: interrupt.id, status: 'resolved', payload: { approved: true } }] }),
      new RegExp(`Interrupt ${interrupt.id} expired at .* can no longer be answered`),
    )
  } finally {
    console.error = err
  }
  assert.equal(cap.exchanges.length, sent, 'nothing was sent')

  const rec = recorder()
  await agent.runAgent({ resume: [{ interruptId: interrupt.id, status: 'cancelled' }] }, rec.subscriber)
  assert.equal(cap.exchanges.length, sent + 1)
  assert.notEqual(rec.finished[0]?.outcome, 'interrupt')
  assert.deepEqual(agent.pendingInterrupts, [])
  assert.equal((await appliedTransfers(da.url)).length, 0)
})

// --- The producer's own rules, reached by switching the client's guard off -----------------

test('producer re-interrupts when a defective consumer omits the entry (PROD-3, uncovered = "reinterrupt")', async () => {
  const { agent } = newAgent('approver')
  const { interrupt } = await runUntilInterrupted(agent)
  agent.pendingInterrupts = [] // play a consumer that forgot the open interrupt
  const rec = recorder()
  await agent.runAgent({}, rec.subscriber)
  assert.equal(rec.finished.length, 1)
  assert.equal(rec.finished[0].outcome, 'interrupt', 'never success while the approval is open')
  assert.deepEqual(rec.finished[0].interrupts.map((i) => i.id), [interrupt.id])
  assert.equal((await appliedTransfers(da.url)).length, 0, 'the gated action was not performed')
})

test('producer opens the stream with RUN_ERROR when uncovered = "run-error" (PROD-3)', async () => {
  const { agent } = newAgent('strict')
  await runUntilInterrupted(agent)
  agent.pendingInterrupts = []
  const rec = recorder()
  await agent.runAgent({}, rec.subscriber)
  assert.equal(rec.events[0]?.type, 'RUN_ERROR')
  assert.equal(rec.finished.length, 0)
  assert.equal((await appliedTransfers(da.url)).length, 0)
})

test('producer rejects before any stream when uncovered = "reject" (PROD-3, RES-5 producer side)', async () => {
  const { agent, cap } = newAgent('expiring') // uncovered = "reject"
  const { interrupt } = await runUntilInterrupted(agent)
  const wait = expiresAtMs(interrupt) - Date.now() + 50
  if (wait > 0) await sleep(wait)
  agent.pendingInterrupts = [] // the client would refuse; send the expired answer anyway
  const err = console.error
  console.error = () => {}
  try {
    await assert.rejects(
      agent.runAgent({ resume: [{ interruptId: interrupt.id, status: 'resolved', payload: { approved: true } }] }),
      (e) => e.status >= 400 && e.status < 500,
    )
  } finally {
    console.error = err
  }
  const last = cap.exchanges.at(-1)
  assert.ok(last.status >= 400 && last.status < 500)
  assert.equal(last.events.length, 0, 'no stream')
  assert.equal((await appliedTransfers(da.url)).length, 0)
})

test('an unrecognized entry is ignored with a CUSTOM warning and the run proceeds (PROD-2)', async () => {
  const { agent } = newAgent('approver')
  const { interrupt } = await runUntilInterrupted(agent)
  const rec = recorder()
  await agent.runAgent({
    resume: [
      { interruptId: interrupt.id, status: 'resolved', payload: { approved: true } },
      { interruptId: 'bogus', status: 'resolved', payload: { approved: true } }, // HttpAgent sends it as-is
    ],
  }, rec.subscriber)
  assert.equal(rec.finished[0]?.outcome, 'success')
  assert.ok(rec.customs.some((e) => JSON.stringify(e.value).includes('bogus')), 'a CUSTOM warning names the entry')
  assert.equal((await appliedTransfers(da.url)).length, 1)
})
