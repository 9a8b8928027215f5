// @tanstack/ai-client@0.33.2's headless ChatClient against an agent with client = "tanstack".
// It does not enforce AG-UI coverage or expiry itself, and answers only interrupts that carry
// metadata["tanstack:interruptBinding"]; see the TanStack section of shared/reference/ag-ui-1.0.md.
import { test, before, after, beforeEach } from 'node:test'
import assert from 'node:assert/strict'
import { ChatClient, fetchServerSentEvents } from '@tanstack/ai-client'
import { startDoubleagent, appliedTransfers, capturingFetch, judgeEvents, until, ledger } from './harness.mjs'

let da
before(async () => { da = await startDoubleagent() })
after(async () => { await da?.stop() })
beforeEach(async () => {
  const res = await fetch(`${da.url}/_admin/reset`, { method: 'POST' })
  assert.ok(res.ok, `reset: HTTP ${res.status}`)
})

function newClient(agent) {
  const cap = capturingFetch()
  const errors = []
  const client = new ChatClient({
    connection: fetchServerSentEvents(da.agentUrl(agent), { fetchClient: cap.fetch }),
    onError: (e) => errors.push(e),
  })
  return { client, cap, errors }
}

test('TanStack ChatClient: approve -> resume -> the tool runs (client = "tanstack")', async () => {
  const { client, cap, errors } = newClient('tanstack-approver')
  try {
    await client.sendMessage('Move 100 to acct-9, please.')
    assert.deepEqual(errors, [])
    assert.equal(cap.exchanges.length, 1)
    const first = cap.exchanges[0]

    // TanStack's request habits, which the agent must tolerate.
    assert.equal(first.body.protocolVersion, undefined)
    assert.ok('data' in first.body, 'legacy `data` mirror of forwardedProps')
    assert.equal(first.body.parentRunId, undefined)
    assert.equal(first.requestHeaders['x-run-id'], first.body.runId)

    const interrupts = client.getInterrupts()
    assert.equal(interrupts.length, 1)
    const [it] = interrupts
    assert.equal(it.kind, 'generic', 'bound through metadata["tanstack:interruptBinding"]')
    assert.equal(it.canResolve, true)
    assert.equal(it.interruptId, 'approve-transfer')
    assert.equal(it.interruptedRunId, first.body.runId)
    assert.equal((await appliedTransfers(da.url)).length, 0, 'PH-3: nothing moved yet')

    it.resolveInterrupt({ approved: true })
    await until(() => cap.exchanges.length === 2 && client.getStatus() === 'ready', 10_000, 'the continuation')
    assert.deepEqual(errors, [])

    const second = cap.exchanges[1].body
    assert.equal(second.threadId, first.body.threadId)
    assert.equal(second.parentRunId, first.body.runId, 'TanStack does send parentRunId')
    assert.deepEqual(second.resume, [{ interruptId: 'approve-transfer', payload: { approved: true }, status: 'resolved' }])
    assert.equal(client.getInterrupts().length, 0)

    const transfers = await appliedTransfers(da.url)
    assert.equal(transfers.length, 1)
    const texts = client.getMessages().flatMap((m) => m.parts.filter((p) => p.type === 'text').map((p) => p.content))
    assert.ok(texts.includes('Done.'), JSON.stringify(texts))

    for (const [i, ex] of cap.exchanges.entries()) {
      assert.deepEqual(await judgeEvents(ex.events, `tanstack run ${i}`), [])
    }
    // TanStack's habits (no protocolVersion, `data`, Accept */*) are tolerated silently, and
    // its continuation carries the thread's state and tool calls (RES-6): no warning at all.
    const warnings = (await ledger(da.url)).filter((e) => e.event === 'warning')
    assert.deepEqual(warnings, [])
  } finally {
    client.dispose()
  }
})

test('TanStack ChatClient: a plain AG-UI interrupt (no binding) is display-only', async () => {
  const { client } = newClient('approver')
  try {
    await client.sendMessage('Move 100 to acct-9, please.')
    const [it] = client.getInterrupts()
    assert.equal(it.kind, 'unbound')
    assert.equal(it.canResolve, false)
    assert.equal(typeof it.resolveInterrupt, 'undefined')
  } finally {
    client.dispose()
  }
})
