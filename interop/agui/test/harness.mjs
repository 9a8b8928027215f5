// Shared helpers for the AG-UI interop suite: start a doubleagent binary, read its ledger,
// capture the exact bytes that cross the wire, and judge events with @ag-ui/core's schemas
// and @ag-ui/client's own enforcement/verification stages.
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import path from 'node:path'
import { from, lastValueFrom, toArray } from 'rxjs'
import { EventSchemas } from '@ag-ui/core/schemas'
import { enforceEvents, verifyEvents } from '@ag-ui/client'

export const HERE = path.dirname(fileURLToPath(import.meta.url))
export const SCENARIO = process.env.AGUI_SCENARIO ?? path.join(HERE, '..', '..', '..', 'scenarios', 'agui-interop.toml')

/** Path of the doubleagent binary (run.sh exports DOUBLEAGENT_BIN). */
export function binary() {
  const bin = process.env.DOUBLEAGENT_BIN
  if (!bin) throw new Error('DOUBLEAGENT_BIN is not set (run the suite through run.sh)')
  return bin
}

/**
 * `doubleagent serve SCENARIO --listen 127.0.0.1:0`; resolves once the first stdout line,
 * `{"event":"ready","url":...}`, has arrived.
 */
export async function startDoubleagent(scenario = SCENARIO) {
  const proc = spawn(binary(), ['serve', scenario, '--listen', '127.0.0.1:0'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stderr = ''
  proc.stderr.on('data', (d) => { stderr += d })
  const lines = createInterface({ input: proc.stdout })
  const first = new Promise((resolve, reject) => {
    lines.once('line', resolve)
    proc.once('exit', (code) => reject(new Error(`doubleagent exited (${code}) before ready:\n${stderr}`)))
  })
  const timeout = new Promise((_, reject) =>
    setTimeout(() => reject(new Error(`no ready line within 20 s:\n${stderr}`)), 20_000).unref())
  const ready = JSON.parse(await Promise.race([first, timeout]))
  if (ready.event !== 'ready' || typeof ready.url !== 'string') {
    throw new Error(`unexpected first line: ${JSON.stringify(ready)}`)
  }
  lines.on('line', () => {}) // keep draining stdout
  return {
    url: ready.url,
    ready,
    stderr: () => stderr,
    agentUrl: (name) => `${ready.url}/agents/${name}`,
    async stop() {
      if (proc.exitCode !== null) return
      proc.kill('SIGTERM')
      await Promise.race([once(proc, 'exit'), new Promise((r) => setTimeout(r, 5000).unref())])
      if (proc.exitCode === null) proc.kill('SIGKILL')
    },
  }
}

/** `GET {url}/_admin/ledger` → entries. */
export async function ledger(url) {
  const res = await fetch(`${url}/_admin/ledger`)
  if (!res.ok) throw new Error(`ledger: HTTP ${res.status}`)
  return (await res.json()).entries
}

/** The ledger entries of fake-service `create-transfer` actions that took effect. */
export async function appliedTransfers(url) {
  return (await ledger(url)).filter(
    (e) => e.service === 'payments' && e.route === 'create-transfer' && e.applied === true,
  )
}

/** Splits an SSE body into JSON payloads exactly as @ag-ui/client's parseSSEStream does. */
export function ssePayloads(text) {
  const out = []
  for (const frame of text.split(/\n\n/)) {
    const data = frame.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5).replace(/^ /, ''))
    if (data.length > 0) out.push(data.join('\n'))
  }
  return out
}

/**
 * A `fetch` that records every request and the raw response body, then hands the client an
 * identical Response. Pass it as `new HttpAgent({ fetch })` or TanStack's `fetchClient`.
 */
export function capturingFetch() {
  const exchanges = []
  const capture = async (url, init = {}) => {
    const res = await fetch(url, init)
    const text = await res.text()
    const headers = new Headers(init.headers ?? {})
    exchanges.push({
      url: String(url),
      method: init.method ?? 'GET',
      requestHeaders: Object.fromEntries(headers.entries()),
      body: typeof init.body === 'string' ? JSON.parse(init.body) : undefined,
      status: res.status,
      contentType: res.headers.get('content-type') ?? '',
      text,
      events: res.ok && (res.headers.get('content-type') ?? '').includes('text/event-stream')
        ? ssePayloads(text).map((p) => JSON.parse(p))
        : [],
    })
    return new Response(text, { status: res.status, statusText: res.statusText, headers: res.headers })
  }
  return { fetch: capture, exchanges }
}

/** Collects everything an @ag-ui/client subscriber sees during one runAgent call. */
export function recorder() {
  const rec = { events: [], finished: [], errors: [], customs: [], failed: [] }
  rec.subscriber = {
    onEvent: ({ event }) => { rec.events.push(event) },
    onRunFinishedEvent: (p) => { rec.finished.push({ outcome: p.outcome, interrupts: p.interrupts, pendingToolCallIds: p.pendingToolCallIds, event: p.event }) },
    onRunErrorEvent: ({ event }) => { rec.errors.push(event) },
    onCustomEvent: ({ event }) => { rec.customs.push(event) },
    onRunFailed: ({ error }) => { rec.failed.push(error) },
  }
  rec.types = () => rec.events.map((e) => e.type)
  return rec
}

/**
 * Judges one response's events the way the official client does, and stricter:
 * 1. each event parses with @ag-ui/core@1.0.0 `EventSchemas` (zod);
 * 2. @ag-ui/client's `enforceEvents` stage strips nothing (no `[ag-ui][enforce]` warning:
 *    unknown members or unknown event types would be stripped with one);
 * 3. @ag-ui/client's `verifyEvents` stage accepts the sequence (first event, closing order...).
 * Returns a list of problems (empty = clean).
 */
export async function judgeEvents(events, label = 'stream') {
  const problems = []
  events.forEach((e, i) => {
    const r = EventSchemas.safeParse(e)
    if (!r.success) problems.push(`${label}[${i}] ${e?.type}: ${r.error.message}`)
  })
  const warnings = []
  const warn = console.warn
  console.warn = (...args) => { warnings.push(args.join(' ')) }
  try {
    await lastValueFrom(from(events).pipe(enforceEvents(), verifyEvents(), toArray()))
  } catch (err) {
    problems.push(`${label}: client pipeline rejected the stream: ${err.message}`)
  } finally {
    console.warn = warn
  }
  for (const w of warnings) if (w.includes('[ag-ui]')) problems.push(`${label}: ${w}`)
  return problems
}

/** Wire-level checks on a captured exchange: SSE content type, LF-only frames. */
export function framingProblems(ex) {
  const problems = []
  if (!ex.contentType.startsWith('text/event-stream')) problems.push(`content-type ${ex.contentType}`)
  if (ex.text.includes('\r')) problems.push('CR in stream (LF only)')
  if (!ex.text.endsWith('\n\n')) problems.push('stream does not end with a blank line')
  for (const frame of ex.text.split('\n\n').filter(Boolean)) {
    if (!/^data: /.test(frame) && !frame.startsWith(':')) problems.push(`frame is not "data: <json>": ${frame.slice(0, 60)}`)
    if (frame.startsWith('data: ') && frame.includes('\n')) problems.push('multi-line data frame')
  }
  return problems
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

/** Waits until `pred()` is truthy (polling), or throws after `ms`. */
export async function until(pred, ms = 10_000, what = 'condition') {
  const end = Date.now() + ms
  while (Date.now() < end) {
    if (await pred()) return
    await sleep(25)
  }
  throw new Error(`timed out waiting for ${what}`)
}

/** The `expiresAt` of an interrupt, in ms, read the way @ag-ui/client reads it. */
export const expiresAtMs = (interrupt) => new Date(interrupt.expiresAt).getTime()
