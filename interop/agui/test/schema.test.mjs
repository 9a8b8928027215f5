// Every event doubleagent emits, in every AG-UI scenario given (AGUI_SCENARIOS, set by run.sh:
// the shipped scenarios/*.toml that have ag-ui agents, agui-interop.toml among them), must parse with
// @ag-ui/core@1.0.0's zod schemas, survive @ag-ui/client@1.0.0's enforcement stage without a
// single strip, and pass its sequence verifier. Agents with `violate = [...]` are skipped
// (deliberate violations are the point of those).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { HttpAgent } from '@ag-ui/client'
import {
  SCENARIO, startDoubleagent, capturingFetch, judgeEvents, framingProblems, sleep,
} from './harness.mjs'

const scenarios = (process.env.AGUI_SCENARIOS ?? SCENARIO).split(/\s+/).filter(Boolean)

/** The `[agents.NAME]` tables of a scenario, with their top-level scalar keys (tiny TOML scan). */
function aguiAgents(file) {
  const agents = new Map()
  let current = null
  for (const raw of readFileSync(file, 'utf8').split('\n')) {
    const line = raw.replace(/#.*$/, '').trim()
    const header = line.match(/^\[([^\[\]]+)\]$/)
    if (header) {
      const m = header[1].trim().match(/^agents\.("?)([^".]+)\1$/)
      current = m ? m[2] : null
      if (current) agents.set(current, {})
      continue
    }
    if (line.startsWith('[[')) { current = null; continue }
    const kv = current && line.match(/^([A-Za-z_][\w-]*)\s*=\s*(.+)$/)
    if (kv) agents.get(current)[kv[1]] = kv[2].trim()
  }
  return [...agents].filter(([, kv]) => kv.protocol === '"ag-ui"' && !('violate' in kv)).map(([name, kv]) => ({ name, kv }))
}

/**
 * Drives one agent through every path a consumer can take: answer all interrupts, discard
 * all, answer frontend tool calls, play a defective consumer once (leave the interrupts
 * uncovered and send an unrecognized entry: warnings, RUN_ERROR or a re-interrupt), and send a
 * TanStack-style raw request.
 */
async function drive(da, agentName, answer) {
  const cap = capturingFetch()
  const agent = new HttpAgent({
    url: da.agentUrl(agentName),
    fetch: cap.fetch,
    initialMessages: [{ id: 'u1', role: 'user', content: 'Please go ahead.' }],
  })
  const quiet = console.error
  console.error = () => {}
  try {
    let params = {}
    for (let round = 0; round < 6; round++) {
      let pending = []
      await agent.runAgent(params, {
        onRunFinishedEvent: (p) => { if (p.outcome === 'success') pending = p.pendingToolCallIds },
      }).catch(() => {})
      if (agent.pendingInterrupts.length > 0 && answer === 'defective' && round === 0) {
        agent.pendingInterrupts = [] // the client would refuse this; the producer must cope
        params = { resume: [{ interruptId: 'no-such-interrupt', status: 'resolved', payload: {} }] }
        answer = 'resolve'
      } else if (agent.pendingInterrupts.length > 0) {
        const soon = agent.pendingInterrupts.some((i) => i.expiresAt && new Date(i.expiresAt) - Date.now() < 2000)
        if (soon) await sleep(Math.max(0, Math.max(...agent.pendingInterrupts.map((i) => new Date(i.expiresAt) - Date.now()))) + 50)
        params = {
          resume: agent.pendingInterrupts.map((i) =>
            answer === 'resolve' && !(i.expiresAt && new Date(i.expiresAt) <= new Date())
              ? { interruptId: i.id, status: 'resolved', payload: { approved: true } }
              : { interruptId: i.id, status: 'cancelled' }),
        }
      } else if (pending.length > 0) {
        agent.addMessages(pending.map((id, k) => ({ id: `tool-answer-${round}-${k}`, role: 'tool', toolCallId: id, content: '{"ok":true}' })))
        params = {}
      } else {
        break
      }
    }
  } finally {
    console.error = quiet
  }
  return cap.exchanges
}

async function tanstackStyleRequest(da, agentName) {
  const cap = capturingFetch()
  await cap.fetch(da.agentUrl(agentName), {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'X-Run-Id': 'run-ts-1' }, // fetch adds Accept: */*
    body: JSON.stringify({
      threadId: 'thread-ts', runId: 'run-ts-1', state: {},
      messages: [{ id: 'm1', role: 'user', content: 'Please go ahead.', metadata: { tanstack: { createdAt: new Date().toISOString() } } }],
      tools: [], context: [], forwardedProps: {}, data: {},
    }),
  })
  return cap.exchanges
}

for (const file of scenarios) {
  const agents = aguiAgents(file)
  test(`schema: every event of ${path.basename(file)} parses with @ag-ui/core@1.0.0`, async (t) => {
    assert.ok(agents.length > 0, `${file} has no ag-ui agents`)
    const da = await startDoubleagent(file)
    try {
      for (const { name } of agents) {
        await t.test(`agent ${name}`, async () => {
          const exchanges = [
            ...(await drive(da, name, 'resolve')),
            ...(await drive(da, name, 'cancel')),
            ...(await drive(da, name, 'defective')),
            ...(await tanstackStyleRequest(da, name)),
          ]
          const problems = []
          let events = 0
          for (const [i, ex] of exchanges.entries()) {
            if (ex.status !== 200) continue // rejected before any stream: nothing to check
            problems.push(...framingProblems(ex).map((p) => `exchange ${i}: ${p}`))
            problems.push(...(await judgeEvents(ex.events, `exchange ${i}`)))
            events += ex.events.length
            const started = ex.events.find((e) => e.type === 'RUN_STARTED')
            if (started && started.protocolVersion !== '1.0') problems.push(`exchange ${i}: RUN_STARTED.protocolVersion ${started.protocolVersion}`)
            for (const e of ex.events) {
              if (e.type === 'RUN_FINISHED' && e.outcome?.type === 'interrupt') {
                const ids = e.outcome.interrupts.map((x) => x.id)
                if (new Set(ids).size !== ids.length) problems.push(`exchange ${i}: duplicate interrupt ids ${ids} (INT-3)`)
              }
            }
          }
          assert.ok(events > 0, 'the agent emitted events')
          assert.deepEqual(problems, [])
        })
      }
    } finally {
      await da.stop()
    }
  })
}
