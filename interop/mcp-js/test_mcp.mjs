// Interop suite: the official TypeScript MCP clients against doubleagent's fake MCP tool servers.
//
// Started by run.sh, which serves interop/mcp-js/mcp-interop.toml and runs this file once per
// (client, server) pair:
//   MCP_CLIENT = "sdk"    @modelcontextprotocol/sdk 1.32.2, StreamableHTTPClientTransport: the
//                         legacy era (initialize, Mcp-Session-Id, 2025-11-25)
//              "client"   @modelcontextprotocol/client 2.4.0 with versionNegotiation { mode: 'auto' }:
//                         server/discover, then the modern era (per-request _meta, 2026-07-28)
//   MCP_SERVER = "payments"      answers as one JSON body
//                "payments-sse"  answers as an SSE stream (a drop is cut off mid-stream)
// DOUBLEAGENT_URL is the ready line's `url`.
//
// Each route of the scenario's payments service has one fate, and each tool calls one route, so a
// test picks the fate by picking the tool. Every test resets the world first (POST /_admin/reset),
// so fate sequences start over, and uses its own idempotency key (keys are scoped per service).
// Only the admin API (ledger, clock, reset) is reached with plain fetch.
//
// Client timeouts are short (a hang must not stall CI): both SDKs surface a dropped SSE answer
// only as a timeout. Rule IDs (../shared/spec/rules.md) are cited in test names.

import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { beforeEach, test } from 'node:test';

import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from '@modelcontextprotocol/client';

const URL_ = (process.env.DOUBLEAGENT_URL ?? '').replace(/\/+$/, '');
const CLIENT = process.env.MCP_CLIENT ?? 'sdk';
const SERVER = process.env.MCP_SERVER ?? 'payments';
if (!URL_) throw new Error('DOUBLEAGENT_URL not set: run interop/mcp-js/run.sh, which starts doubleagent');
if (!['sdk', 'client'].includes(CLIENT)) throw new Error(`MCP_CLIENT ${CLIENT}: "sdk" or "client"`);

const ERA = CLIENT === 'sdk' ? 'legacy' : 'modern';
const VERSION = CLIENT === 'sdk' ? '2025-11-25' : '2026-07-28';
const RESPONSES = SERVER.endsWith('-sse') ? 'sse' : 'json';
const LABEL = `[${CLIENT === 'sdk' ? 'sdk 1.32.2' : 'client 2.4.0 auto'} ${SERVER}]`;
const T = { timeout: 60_000 };
const OK_TIMEOUT = 10_000; // a call that should answer
const LOST_TIMEOUT = 2_000; // a call whose answer never comes

// ----------------------------------------------------------------------------------------------
// helpers

async function admin(method, path, body) {
  const r = await fetch(`${URL_}${path}`, {
    method,
    headers: body === undefined ? {} : { 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  assert.ok(r.ok, `${method} ${path}: ${r.status} ${await r.clone().text()}`);
  return r.json().catch(() => null);
}

const advance = (by) => admin('POST', '/_admin/clock/advance', { by });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** The ledger's entries matching `query` (e.g. { service: 'payments', route: 'create-transfer' }). */
async function ledger(query = {}) {
  const q = new URLSearchParams(query).toString();
  return (await admin('GET', `/_admin/ledger${q ? `?${q}` : ''}`)).entries;
}

/** Waits (wall clock, bounded) until `count` entries match, then returns them. */
async function ledgerWait(query, count = 1) {
  const q = new URLSearchParams({ ...query, count: String(count), timeout: '5s' }).toString();
  const r = await fetch(`${URL_}/_admin/ledger/wait?${q}`);
  assert.equal(r.status, 200, `ledger/wait ${q}: ${r.status} ${await r.clone().text()}`);
  return (await r.json()).entries;
}

/** The verifier's rule ids over the ledger so far (GET /_admin/verify). */
const findings = async () => (await admin('GET', '/_admin/verify')).findings.map((f) => f.rule);

const payments = (route) => ledger({ service: 'payments', ...(route ? { route } : {}) });
const mcpEntries = async (event) => (await ledger({ service: `mcp/${SERVER}` })).filter((e) => !event || e.event === event);

/** One connected client of this run's kind, with one call/list surface over both SDKs. */
async function connect() {
  const endpoint = new URL(`${URL_}/mcp/${SERVER}`);
  const info = { name: 'doubleagent-interop-mcp-js', version: '1.0.0' };
  if (CLIENT === 'sdk') {
    const client = new ClientV1(info);
    const transport = new TransportV1(endpoint, { reconnectionOptions: { maxRetries: 0, initialReconnectionDelay: 100, maxReconnectionDelay: 100, reconnectionDelayGrowFactor: 1 } });
    await client.connect(transport);
    return {
      client,
      transport,
      version: () => transport.protocolVersion,
      list: () => client.listTools(),
      call: (name, args, timeout = OK_TIMEOUT) => client.callTool({ name, arguments: args }, undefined, { timeout }),
      close: () => client.close().catch(() => {}),
    };
  }
  const client = new ClientV2(info, { versionNegotiation: { mode: 'auto' } });
  const transport = new TransportV2(endpoint);
  await client.connect(transport);
  return {
    client,
    transport,
    version: () => client.getNegotiatedProtocolVersion?.() ?? transport.protocolVersion,
    list: () => client.listTools(undefined, { cacheMode: 'bypass' }),
    call: (name, args, timeout = OK_TIMEOUT) => client.callTool({ name, arguments: args }, { timeout }),
    close: () => client.close().catch(() => {}),
  };
}

/** Runs `fn` with a fresh client and closes it afterwards, whatever happened. */
async function withClient(fn) {
  const c = await connect();
  try {
    return await fn(c);
  } finally {
    await c.close();
  }
}

const newKey = () => `interop-${randomUUID()}`;
const transfer = (key, extra = {}) => ({ to: 'acct_42', amount: 1250, idempotency_key: key, ...extra });

/** The call must fail (transport error or timeout); returns the error. */
async function callFails(c, name, args, timeout = LOST_TIMEOUT) {
  const started = Date.now();
  try {
    const r = await c.call(name, args, timeout);
    assert.fail(`${name}: expected an error or a timeout, got ${JSON.stringify(r)}`);
  } catch (e) {
    if (e instanceof assert.AssertionError) throw e;
    return { error: e, ms: Date.now() - started };
  }
}

function assertMcpDetail(entry, tool, key) {
  const m = entry.detail?.mcp;
  assert.ok(m, `entry ${entry.seq} has no detail.mcp: ${JSON.stringify(entry)}`);
  assert.equal(m.server, SERVER);
  assert.equal(m.tool, tool);
  assert.equal(m.era, ERA);
  assert.equal(m.protocol_version, VERSION);
  assert.equal(m.response, RESPONSES);
  assert.ok(m.jsonrpc_id !== undefined && m.jsonrpc_id !== null, 'detail.mcp.jsonrpc_id');
  if (ERA === 'legacy') assert.match(String(m.session), new RegExp(`^${SERVER}-\\d+$`));
  else assert.ok(m.session === undefined || m.session === null, `modern call with a session: ${m.session}`);
  if (key !== undefined) {
    assert.equal(m.key, key);
    assert.deepEqual(m.key_source, { argument: '/idempotency_key' });
  }
}

/** The lookup tool's answer for an action id or idempotency key: the parsed JSON text. */
async function lookup(c, id) {
  const r = await c.call('get_transfer', { id });
  const text = r.content?.find((b) => b.type === 'text')?.text ?? '';
  return { isError: r.isError === true, body: JSON.parse(text) };
}

beforeEach(async () => {
  await admin('POST', '/_admin/reset');
});

// ----------------------------------------------------------------------------------------------
// the wire

test(`${LABEL} ACC-T connects in the ${ERA} era and lists the tools with their annotations as written`, T, async () => {
  await withClient(async (c) => {
    assert.equal(c.version(), VERSION);
    const { tools } = await c.list();
    const names = tools.map((t) => t.name).sort();
    assert.ok(names.includes('create_transfer') && names.includes('get_transfer'), names.join(', '));
    assert.equal(names.length, 11);
    const create = tools.find((t) => t.name === 'create_transfer');
    assert.equal(create.description, 'Move money to an account.');
    assert.deepEqual(create.annotations, { title: 'Create transfer', destructiveHint: false, idempotentHint: true });
    assert.deepEqual(create.inputSchema.required, ['to', 'amount']);
    assert.equal(create.inputSchema.additionalProperties, false);
    assert.deepEqual(tools.find((t) => t.name === 'create_transfer_unsent').annotations, { idempotentHint: false });
    assert.deepEqual(tools.find((t) => t.name === 'get_transfer').annotations, { readOnlyHint: true, idempotentHint: true });
  });
  const inits = await mcpEntries('initialize');
  if (ERA === 'legacy') {
    assert.equal(inits.length, 1, JSON.stringify(inits));
    assert.equal(inits[0].detail.protocol_version, VERSION);
    assert.equal(inits[0].detail.client_info.name, 'doubleagent-interop-mcp-js');
  } else {
    assert.equal(inits.length, 0, `auto mode should not initialize: ${JSON.stringify(inits)}`);
  }
  assert.equal((await payments()).length, 0, 'listing is not an action');
});

// ----------------------------------------------------------------------------------------------
// deliver, and idempotency

test(`${LABEL} ACC-T a delivered call is one applied action whose entry carries detail.mcp`, T, async () => {
  const key = newKey();
  const r = await withClient((c) => c.call('create_transfer', transfer(key)));
  assert.equal(r.isError, false);
  assert.equal(r.structuredContent.status, 'succeeded');
  assert.equal(r.structuredContent.to, 'acct_42');
  assert.equal(r.structuredContent.amount, 1250);
  assert.deepEqual(JSON.parse(r.content[0].text), r.structuredContent);
  const [e, ...more] = await payments('create-transfer');
  assert.equal(more.length, 0);
  assert.equal(e.applied, true);
  assert.equal(e.disposition, 'executed');
  assert.equal(e.fate, 'respond');
  assert.equal(e.action_id, r.structuredContent.id);
  assert.deepEqual(e.body, transfer(key));
  assert.equal(e.idempotency_key, key);
  assert.equal(e.response.delivery, 'sent');
  assert.equal(e.response.status, 201);
  assertMcpDetail(e, 'create_transfer', key);
});

test(`${LABEL} ACC-1 a repeated call with the same key is replayed: one effect, the same answer`, T, async () => {
  const key = newKey();
  const [first, second] = await withClient(async (c) => [
    await c.call('create_transfer', transfer(key)),
    await c.call('create_transfer', transfer(key)),
  ]);
  assert.deepEqual(second.structuredContent, first.structuredContent);
  const entries = await payments('create-transfer');
  assert.deepEqual(entries.map((e) => e.disposition), ['executed', 'replayed']);
  assert.equal(entries.filter((e) => e.applied).length, 1);
  assert.equal(entries[1].replay_of, entries[0].seq);
  entries.forEach((e) => assertMcpDetail(e, 'create_transfer', key));
  assert.notEqual(String(entries[0].detail.mcp.jsonrpc_id) + entries[0].detail.mcp.session, String(entries[1].detail.mcp.jsonrpc_id) + entries[1].detail.mcp.session, 'two requests');
  assert.ok(!(await findings()).includes('ACC-1'), 'a replay is not a second effect');
  // Without a key every call executes: two effects, which is what ACC-1 forbids an orchestrator,
  // and the verifier says so.
  await withClient(async (c) => {
    await c.call('create_transfer', { to: 'acct_7', amount: 99 });
    await c.call('create_transfer', { to: 'acct_7', amount: 99 });
  });
  assert.equal((await payments('create-transfer')).filter((e) => e.applied).length, 3);
  assert.ok((await findings()).includes('ACC-1'), 'the keyless re-call is found');
});

// ----------------------------------------------------------------------------------------------
// fates after the effect: the client cannot know it happened; the ledger does (REC-4)

test(`${LABEL} REC-4 a response dropped after the effect: the client sees an error, the ledger the applied action; a lookup and a same-key retry resolve it`, T, async () => {
  const key = newKey();
  await withClient(async (c) => {
    const { error, ms } = await callFails(c, 'create_transfer_lost', transfer(key));
    if (RESPONSES === 'sse') {
      // Headers came, the stream was cut: both SDKs wait for the answer until their timeout.
      assert.ok(ms >= LOST_TIMEOUT - 200, `gave up after ${ms} ms: ${error}`);
    }
    const [e] = await ledgerWait({ service: 'payments', route: 'create-transfer-lost' });
    assert.equal(e.applied, true);
    assert.equal(e.fate, 'drop-after-apply');
    assert.equal(e.response.delivery, 'dropped');
    assertMcpDetail(e, 'create_transfer_lost', key);
    // The orchestrator's right move: look it up (by key) ...
    const found = await lookup(c, key);
    assert.equal(found.isError, false);
    assert.equal(found.body.state, 'applied');
    assert.equal(found.body.id, e.action_id);
    // ... or retry with the SAME key: replayed, not executed again.
    const retry = await c.call('create_transfer_lost', transfer(key));
    assert.equal(retry.isError, false);
    assert.equal(retry.structuredContent.id, e.action_id);
  });
  const entries = await payments('create-transfer-lost');
  assert.deepEqual(entries.map((e) => e.disposition), ['executed', 'replayed']);
  assert.equal(entries.filter((e) => e.applied).length, 1, 'one effect');
  const rules = await findings();
  assert.ok(!rules.includes('ACC-1') && !rules.includes('REC-4'), `resolved, yet found: ${rules}`);
});

test(`${LABEL} ACC-1 REC-4 the wrong move: a blind re-call under a new key after a lost answer moves the money twice, and the verifier says so`, T, async () => {
  await withClient(async (c) => {
    await callFails(c, 'create_transfer_lost', transfer(newKey()));
    await ledgerWait({ service: 'payments', route: 'create-transfer-lost' });
    // What the 2026-07-28 spec tells a client whose stream broke ("re-issue it as a new request"),
    // done by an orchestrator that mints a fresh key per attempt:
    const again = await c.call('create_transfer_lost', transfer(newKey()));
    assert.equal(again.isError, false);
  });
  const entries = await payments('create-transfer-lost');
  assert.deepEqual(entries.map((e) => [e.disposition, e.applied]), [['executed', true], ['executed', true]]);
  assert.ok((await findings()).includes('ACC-1'), 'the duplicate effect is found');
});

test(`${LABEL} REC-4 a request lost before the effect: an error, nothing applied, the lookup finds nothing`, T, async () => {
  const key = newKey();
  await withClient(async (c) => {
    await callFails(c, 'create_transfer_unsent', transfer(key));
    const [e] = await ledgerWait({ service: 'payments', route: 'create-transfer-unsent' });
    assert.equal(e.applied, false);
    assert.equal(e.fate, 'drop-before-apply');
    assert.equal(e.response.delivery, 'dropped');
    assertMcpDetail(e, 'create_transfer_unsent', key);
    const found = await lookup(c, key);
    assert.equal(found.isError, true, 'a 404 lookup is a tool error');
    assert.equal(found.body.state, 'unknown');
  });
});

test(`${LABEL} REC-4 a connection reset after the effect: an error at once, the action applied`, T, async () => {
  const key = newKey();
  await withClient(async (c) => {
    const { ms } = await callFails(c, 'create_transfer_reset', transfer(key), OK_TIMEOUT);
    assert.ok(ms < OK_TIMEOUT - 1000, `a reset should fail fast, took ${ms} ms`);
  });
  const [e] = await payments('create-transfer-reset');
  assert.equal(e.applied, true);
  assert.equal(e.response.delivery, 'reset');
  assertMcpDetail(e, 'create_transfer_reset', key);
});

test(`${LABEL} REC-4 REC-3 a hung call: the client times out, the action stands applied`, T, async () => {
  const key = newKey();
  await withClient(async (c) => {
    const { ms } = await callFails(c, 'create_transfer_hung', transfer(key));
    assert.ok(ms >= LOST_TIMEOUT - 200, `gave up after ${ms} ms`);
    if (ERA === 'legacy') {
      // sdk 1.32.2 posts notifications/cancelled on its timeout (after rejecting the call, so the
      // client stays open meanwhile); cancel = "ignore" lets the effect stand.
      const [cancel] = await ledgerWait({ service: `mcp/${SERVER}`, event: 'cancelled' });
      assert.equal(cancel.detail.outcome, 'ignored', JSON.stringify(cancel.detail));
    }
  });
  const [e] = await payments('create-transfer-hung');
  assert.equal(e.applied, true);
  assert.equal(e.fate, 'hang-after-apply');
  assertMcpDetail(e, 'create_transfer_hung', key);
  if (ERA === 'modern') {
    // client 2.4.0 aborts the POST on its timeout: in 2026-07-28 closing the stream is the
    // cancellation, recorded as the answer abandoned; the effect stands.
    let delivery = e.response.delivery;
    for (let i = 0; i < 30 && delivery !== 'abandoned'; i++) {
      await sleep(100);
      delivery = (await payments('create-transfer-hung'))[0].response.delivery;
    }
    assert.equal(delivery, 'abandoned');
  }
  assert.equal((await payments('create-transfer-hung'))[0].applied, true, 'still applied after the cancel');
});

test(`${LABEL} ACC-T a delayed answer is held until the manual clock passes the delay`, T, async () => {
  const key = newKey();
  await withClient(async (c) => {
    let settled = false;
    const pending = c.call('create_transfer_slow', transfer(key), OK_TIMEOUT).finally(() => (settled = true));
    const [e] = await ledgerWait({ service: 'payments', route: 'create-transfer-slow' });
    assert.equal(e.applied, true, 'applied now, answered later');
    await sleep(300);
    assert.equal(settled, false, 'answered before the clock moved');
    await advance('29s');
    await sleep(300);
    assert.equal(settled, false, 'answered before the delay was over');
    await advance('1s');
    const r = await pending;
    assert.equal(r.isError, false);
    assert.equal(r.structuredContent.id, e.action_id);
  });
  const [e] = await payments('create-transfer-slow');
  assert.equal(e.response.delivery, 'sent');
  assertMcpDetail(e, 'create_transfer_slow', key);
});

test(`${LABEL} ACC-3 the lie: isError true though the effect happened, and the ledger says applied`, T, async () => {
  const key = newKey();
  await withClient(async (c) => {
    const r = await c.call('create_transfer_lie', transfer(key));
    assert.equal(r.isError, true);
    assert.equal(r.structuredContent, undefined);
    assert.match(r.content[0].text, /500/);
    const found = await lookup(c, key);
    assert.equal(found.body.state, 'applied', 'the lookup tells the truth');
  });
  const [e] = await payments('create-transfer-lie');
  assert.equal(e.applied, true);
  assert.equal(e.response.status, 500);
  assertMcpDetail(e, 'create_transfer_lie', key);
});

test(`${LABEL} ACC-T a refusal before the effect: isError true and nothing applied`, T, async () => {
  const key = newKey();
  const r = await withClient((c) => c.call('create_transfer_busy', transfer(key)));
  assert.equal(r.isError, true);
  assert.match(r.content[0].text, /503/);
  const [e] = await payments('create-transfer-busy');
  assert.equal(e.applied, false);
  assert.equal(e.response.status, 503);
  assertMcpDetail(e, 'create_transfer_busy', key);
});

test(`${LABEL} REC-4 apply-later: a pending answer, applied when the clock passes it, as the lookup shows`, T, async () => {
  const key = newKey();
  await withClient(async (c) => {
    const r = await c.call('create_transfer_later', transfer(key));
    assert.equal(r.isError, false);
    assert.equal(r.structuredContent.status, 'pending');
    assert.equal((await lookup(c, key)).body.state, 'pending');
    await advance('10s');
    assert.equal((await lookup(c, key)).body.state, 'applied');
  });
  const [e] = await payments('create-transfer-later');
  assert.equal(e.applied, true);
  assertMcpDetail(e, 'create_transfer_later', key);
});

// ----------------------------------------------------------------------------------------------
// refusals: never actions

test(`${LABEL} ACC-T invalid arguments: isError with each problem's pointer, nothing executed`, T, async () => {
  const r = await withClient((c) => c.call('create_transfer', { amount: 'lots', idempotency_key: newKey() }));
  assert.equal(r.isError, true);
  const text = r.content.map((b) => b.text).join('\n');
  assert.match(text, /\/amount/);
  assert.match(text, /to/);
  assert.equal((await payments()).length, 0, 'nothing reached the route');
  const [bad] = await mcpEntries('invalid-arguments');
  assert.ok(bad, 'an invalid-arguments entry');
  assert.equal(bad.applied, false);
});

test(`${LABEL} ACC-T an unknown tool is refused as a JSON-RPC error and recorded as rpc-error, not an action`, T, async () => {
  await withClient(async (c) => {
    await assert.rejects(c.call('wire_money_twice', transfer(newKey())), (e) => {
      assert.equal(e.code, -32602, `${e?.constructor?.name} ${e?.code} ${e?.message}`);
      assert.match(e.message, /Unknown tool/);
      return true;
    });
  });
  assert.equal((await payments()).length, 0);
  const refusals = await mcpEntries('rpc-error');
  const r = refusals.find((e) => e.detail?.code === -32602);
  assert.ok(r, `an rpc-error entry with -32602: ${JSON.stringify(refusals)}`);
  assert.equal(r.detail.method, 'tools/call');
  assert.equal(r.applied, false);
});

test(`${LABEL} REC-4 a key reused for other arguments, or while its call is in flight, is refused as -32602 with error.data.type and executes nothing`, T, async () => {
  const key = newKey();
  const slowKey = newKey();
  await withClient(async (c) => {
    await c.call('create_transfer', transfer(key));
    await assert.rejects(c.call('create_transfer', transfer(key, { amount: 9999 })), (e) => {
      assert.equal(e.code, -32602, `${e?.constructor?.name} ${e?.code} ${e?.message}`);
      assert.equal(e.data?.type, 'idempotency_key_conflict', JSON.stringify(e.data));
      return true;
    });
    // The first call with slowKey is applied and held 30 s (scenario clock); a second one meanwhile:
    const first = c.call('create_transfer_slow', transfer(slowKey));
    await ledgerWait({ service: 'payments', route: 'create-transfer-slow' });
    await assert.rejects(c.call('create_transfer_slow', transfer(slowKey)), (e) => {
      assert.equal(e.code, -32602, `${e?.constructor?.name} ${e?.code} ${e?.message}`);
      assert.equal(e.data?.type, 'idempotency_key_in_progress', JSON.stringify(e.data));
      return true;
    });
    await advance('30s');
    assert.equal((await first).isError, false);
  });
  const create = await payments('create-transfer');
  assert.deepEqual(create.map((e) => [e.disposition, e.applied]), [['executed', true], ['mismatch', false]]);
  assert.equal(create[1].detail.key_owner, create[0].seq);
  const slow = await payments('create-transfer-slow');
  assert.deepEqual(slow.map((e) => e.disposition).sort(), ['conflict', 'executed']);
  assert.equal(slow.filter((e) => e.applied).length, 1, 'one effect');
  [...create, ...slow].forEach((e) => assertMcpDetail(e, e.route === 'create-transfer' ? 'create_transfer' : 'create_transfer_slow'));
});

// ----------------------------------------------------------------------------------------------
// tasks

test(`${LABEL} ACC-T a tool that runs as a task: the legacy SDK streams it to completion; a client without the tasks extension gets a plain result`, T, async () => {
  const key = newKey();
  await withClient(async (c) => {
    if (CLIENT === 'sdk') {
      const stream = c.client.experimental.tasks.callToolStream(
        { name: 'book_task', arguments: transfer(key) }, undefined, { task: { ttl: 60_000 }, timeout: OK_TIMEOUT });
      // Once the SDK has polled the working task, the clock moves past its 2 s of work.
      const moved = ledgerWait({ service: `mcp/${SERVER}`, event: 'task-get' }).then(() => advance('2s'));
      const seen = [];
      let result;
      for await (const m of stream) {
        seen.push(m.type === 'taskStatus' ? m.task.status : m.type);
        if (m.type === 'result') result = m.result;
        if (m.type === 'error') throw m.error;
      }
      await moved;
      assert.equal(seen[0], 'taskCreated', seen.join(', '));
      assert.ok(seen.includes('working') && seen.includes('completed'), seen.join(', '));
      assert.equal(result.structuredContent.status, 'succeeded');
    } else {
      const r = await c.call('book_task', transfer(key));
      assert.equal(r.isError, false);
      assert.equal(r.structuredContent.status, 'succeeded');
    }
  });
  const [entry] = await payments('create-transfer');
  assert.equal(entry.applied, true);
  const created = await mcpEntries('task-created');
  if (CLIENT === 'sdk') {
    assert.equal(created.length, 1, JSON.stringify(created));
    assert.equal(entry.detail.mcp.task_id, created[0].detail.task_id);
    assert.equal(created[0].detail.target, entry.seq);
  } else {
    assert.equal(created.length, 0, 'no task for a client that did not declare the extension');
  }
});
