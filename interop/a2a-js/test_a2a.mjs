// Interop suite: the official TypeScript A2A client (@a2a-js/sdk 1.3.0) against doubleagent's fake
// A2A agents.
//
// Started by run.sh, which serves scenarios/a2a-interop.toml and exports DOUBLEAGENT_URL (the
// ready line's `url`) and A2A_TRANSPORT, the one binding the client is restricted to (`JSONRPC`,
// `HTTP+JSON` or `GRPC`; run.sh runs the suite once per binding). The scenario's agents `honor`, `toolate`
// and `ackthen` (one per cancel policy), `early` (scripted behaviours) and `dedupe` each work 3 s
// on a manual clock and produce an artifact with a text part and a data part sharing a canary.
//
// Everything goes through the SDK's ClientFactory and Client as an orchestrator would use them:
// the card is resolved from the agent's URL, the transport chosen from its supportedInterfaces.
// Only the manual clock and the ledger are reached with plain fetch (they are doubleagent's admin
// API, not A2A). Plain ESM and node:test, so the install is the SDK and its one dependency.
//
// Rule IDs (../shared/spec/rules.md) are cited in test names.

import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { test } from 'node:test';

import { Role, StreamResponse, TaskState } from '@a2a-js/sdk';
import { ClientFactory, JsonRpcTransportFactory, RestTransportFactory } from '@a2a-js/sdk/client';
import { GrpcTransportFactory } from '@a2a-js/sdk/client/grpc';
import {
  RequestMalformedError,
  TaskNotCancelableError,
  TaskNotFoundError,
  UnsupportedOperationError,
} from '@a2a-js/sdk/errors';

const URL_ = (process.env.DOUBLEAGENT_URL ?? '').replace(/\/+$/, '');
const TRANSPORT = process.env.A2A_TRANSPORT ?? 'JSONRPC';
if (!URL_) throw new Error('DOUBLEAGENT_URL not set: run interop/a2a-js/run.sh, which starts doubleagent');

const S = TaskState;
const WORKING_OR_SUBMITTED = [S.TASK_STATE_SUBMITTED, S.TASK_STATE_WORKING];
const RESULT_PREFIX = 'Pay vendor account ';
const T = { timeout: 60_000 };

// ----------------------------------------------------------------------------------------------
// helpers

const agentUrl = (name) => `${URL_}/agents/${name}`;
const stateName = (s) => S[s] ?? String(s);

function transportFactory() {
  switch (TRANSPORT) {
    case 'JSONRPC':
      return new JsonRpcTransportFactory();
    case 'HTTP+JSON':
      return new RestTransportFactory();
    case 'GRPC':
      // Plain-text HTTP/2 to the card's `host:port`; the interface's tenant names the agent.
      return new GrpcTransportFactory();
    default:
      throw new Error(`A2A_TRANSPORT ${TRANSPORT}: this suite speaks JSONRPC, HTTP+JSON and GRPC`);
  }
}

/**
 * A client for one agent, restricted to this run's binding and resolved from the agent's card.
 *
 * The trailing slash matters: the SDK resolves its card path `.well-known/agent-card.json` relative
 * to the base URL (`new URL(path, base)`, client/card-resolver.ts), so `.../agents/honor` would
 * fetch `.../agents/.well-known/agent-card.json`.
 */
async function a2a(name, { polling = false } = {}) {
  const factory = new ClientFactory({ transports: [transportFactory()], clientConfig: { polling } });
  const client = await factory.createFromUrl(`${agentUrl(name)}/`);
  assert.equal(client.transport.protocolName, TRANSPORT);
  return client;
}

async function admin(method, path, body) {
  const r = await fetch(`${URL_}${path}`, {
    method,
    headers: body === undefined ? {} : { 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  assert.ok(r.ok, `${method} ${path}: ${r.status} ${await r.clone().text()}`);
  return r.json().catch(() => null);
}

const advance = (by = '5s') => admin('POST', '/_admin/clock/advance', { by });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function tracked(promise) {
  const t = { done: false, promise };
  promise.then(
    () => (t.done = true),
    () => (t.done = true),
  );
  return t;
}

/** Moves the manual clock until `promise` settles, so blocking calls and streams can finish
 * without the test having to know exactly when the server registered the task. */
async function keepAdvancing(promise, by = '1s', maxTicks = 60) {
  const t = tracked(promise);
  for (let i = 0; i < maxTicks; i++) {
    if (t.done) return promise;
    await advance(by);
    await sleep(100);
  }
  if (t.done) return promise;
  throw new Error('gave up moving the clock: the call never finished');
}

const textPart = (value) => ({ content: { $case: 'text', value }, metadata: undefined, filename: '', mediaType: '' });

function userMsg(text = 'research vendor', extra = {}) {
  return {
    messageId: `interop-${randomUUID()}`,
    contextId: '',
    taskId: '',
    role: Role.ROLE_USER,
    parts: [textPart(text)],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
    ...extra,
  };
}

function sendRequest(message, configuration = {}) {
  return {
    tenant: '',
    message,
    configuration: {
      acceptedOutputModes: [],
      taskPushNotificationConfig: undefined,
      returnImmediately: false,
      ...configuration,
    },
    metadata: undefined,
  };
}

const isTask = (result) => 'status' in result && !('role' in result);

/** SendMessage with returnImmediately: the task comes back while still in flight. */
async function sendNonblocking(client, msg = userMsg(), configuration = {}) {
  const result = await client.sendMessage(sendRequest(msg, { returnImmediately: true, ...configuration }));
  assert.ok(isTask(result), `wanted a Task, got ${JSON.stringify(result)}`);
  assert.ok(WORKING_OR_SUBMITTED.includes(result.status.state), `state ${stateName(result.status.state)}`);
  return result;
}

async function waitState(client, taskId, states, timeoutMs = 5000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const t = await client.getTask({ tenant: '', id: taskId });
    if (states.includes(t.status?.state)) return t;
    if (Date.now() > deadline) {
      throw new Error(`task ${taskId} is ${stateName(t.status?.state)}, wanted ${states.map(stateName)}`);
    }
    await sleep(50);
  }
}

/** The scenario's result: one text part and one data part carrying the same expanded canary. */
function assertResultArtifact(artifacts) {
  const parts = artifacts.flatMap((a) => a.parts);
  const texts = parts.filter((p) => p.content?.$case === 'text').map((p) => p.content.value);
  const datas = parts.filter((p) => p.content?.$case === 'data').map((p) => p.content.value);
  assert.equal(texts.length, 1, JSON.stringify(texts));
  assert.ok(texts[0].startsWith(RESULT_PREFIX), texts[0]);
  const canary = texts[0].slice(RESULT_PREFIX.length);
  assert.ok(canary && !canary.includes('{{'), `canary not expanded: ${texts[0]}`);
  assert.deepEqual(datas, [{ account: canary }]);
  return canary;
}

/** Reads a whole SSE stream, moving the clock only once the first event proved the stream is
 * open (moving it earlier could finish the task before a subscription attaches). */
async function streamWithClock(stream) {
  const events = [];
  let sawFirst;
  const first = new Promise((r) => (sawFirst = r));
  const reader = (async () => {
    for await (const ev of stream) {
      events.push(ev);
      sawFirst();
    }
    return events;
  })();
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error('no first stream event within 10 s')), 10_000);
  });
  try {
    await Promise.race([first, reader, timeout]);
  } finally {
    clearTimeout(timer);
  }
  await keepAdvancing(reader);
  return reader;
}

const kinds = (events) => events.map((e) => e.payload?.$case);

/** Task states a stream reported, from Task snapshots and status updates alike. */
function seenStates(events) {
  const out = [];
  for (const e of events) {
    if (e.payload?.$case === 'task' || e.payload?.$case === 'statusUpdate') out.push(e.payload.value.status?.state);
  }
  return out;
}

/** The stream's last event must carry the terminal state: a status update, or the final Task
 * snapshot a server MAY resend before closing (SPEC §3.1.6). */
function finalState(events) {
  assert.ok(['statusUpdate', 'task'].includes(events.at(-1)?.payload?.$case), JSON.stringify(kinds(events)));
  return seenStates(events).at(-1);
}

async function drain(stream) {
  // eslint-disable-next-line no-unused-vars
  for await (const _ of stream);
}

// The scenario's `push_ports` (a2a-interop.toml): a loopback push target must use one of them.
const PUSH_PORTS = [47801, 47802, 47803, 47804, 47805, 47806, 47807, 47808];

/** A push-notification receiver on loopback, recording {headers, body} per POST. */
class Webhook {
  received = [];

  static async open() {
    const hook = new Webhook();
    for (const port of PUSH_PORTS) {
      const server = http.createServer((req, res) => {
        const chunks = [];
        req.on('data', (c) => chunks.push(c));
        req.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let body;
          try {
            body = JSON.parse(text);
          } catch {
            body = { _unparsed: text };
          }
          hook.received.push({ headers: req.headers, body });
          res.writeHead(200, { 'Content-Length': '0' }).end();
        });
      });
      const ok = await new Promise((resolve) => {
        server.once('error', () => resolve(false));
        server.listen(port, '127.0.0.1', () => resolve(true));
      });
      if (ok) {
        hook.server = server;
        hook.url = `http://127.0.0.1:${port}/hook`;
        return hook;
      }
    }
    throw new Error(`none of the push ports ${PUSH_PORTS} is free`);
  }

  close() {
    this.server.closeAllConnections?.();
    return new Promise((r) => this.server.close(r));
  }

  /** Deliveries about one task, each body parsed by the SDK as the StreamResponse it is. */
  forTask(taskId) {
    return this.received
      .map((d) => ({ ...d, event: StreamResponse.fromJSON(d.body) }))
      .filter(({ event }) => {
        const v = event.payload?.value;
        return v && (v.taskId === taskId || v.id === taskId);
      });
  }

  async waitCompleted(taskId, timeoutMs = 5000) {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const hit = this.forTask(taskId).find(({ event }) => seenStates([event])[0] === S.TASK_STATE_COMPLETED);
      if (hit) return hit;
      await sleep(50);
    }
    throw new Error(`no COMPLETED push for ${taskId}; got ${JSON.stringify(this.received)}`);
  }
}

async function withWebhook(fn) {
  const hook = await Webhook.open();
  try {
    return await fn(hook);
  } finally {
    await hook.close();
  }
}

const pushConfig = (fields) => ({ tenant: '', id: '', taskId: '', url: '', token: '', authentication: undefined, ...fields });

// ----------------------------------------------------------------------------------------------
// agent card

test(`ACC-T card resolves at the agent path and the factory picks ${TRANSPORT}`, T, async () => {
  const client = await a2a('honor');
  const card = await client.getAgentCard();
  assert.equal(card.name, 'honor');
  // JSON-RPC first: a client that speaks every binding takes the first it knows.
  assert.equal(card.supportedInterfaces[0].protocolBinding, 'JSONRPC');
  const ifaces = card.supportedInterfaces.filter((i) => i.protocolBinding === TRANSPORT);
  assert.equal(ifaces.length, 1, JSON.stringify(card.supportedInterfaces));
  // The client sends its calls to this URL, so it must be the real bound address.
  if (TRANSPORT === 'GRPC') {
    // A channel target (the ready line's `grpc`), the agent named by the interface's tenant.
    const ready = await (await fetch(`${URL_}/`)).json();
    assert.equal(ifaces[0].url, ready.grpc);
    assert.equal(ifaces[0].tenant, 'honor');
  } else {
    assert.equal(ifaces[0].url, agentUrl('honor'));
    assert.equal(client.transport.endpoint, agentUrl('honor'));
  }
  assert.equal(ifaces[0].protocolVersion, '1.0');
  assert.equal(client.protocolVersion, '1.0');
  assert.ok(card.capabilities?.streaming && card.capabilities?.pushNotifications);
});

// ----------------------------------------------------------------------------------------------
// send

test('blocking send returns the completed task with its artifacts once the clock moves', T, async () => {
  const client = await a2a('honor');
  const result = await keepAdvancing(client.sendMessage(sendRequest(userMsg())));
  assert.ok(isTask(result), JSON.stringify(result));
  assert.equal(stateName(result.status.state), 'TASK_STATE_COMPLETED');
  assertResultArtifact(result.artifacts);
});

test('non-blocking send, then get: working, then completed', T, async () => {
  const c = await a2a('honor', { polling: true });
  const task = await sendNonblocking(c);
  assert.ok(task.id && task.contextId);
  await waitState(c, task.id, [S.TASK_STATE_WORKING]);
  await advance('5s');
  const done = await waitState(c, task.id, [S.TASK_STATE_COMPLETED]);
  assert.equal(done.contextId, task.contextId);
  assertResultArtifact(done.artifacts);
});

test('REC-4 the same messageId twice makes two tasks when de-duplication is off', T, async () => {
  const c = await a2a('honor', { polling: true });
  const msg = userMsg();
  const a = await sendNonblocking(c, msg);
  const b = await sendNonblocking(c, msg);
  assert.notEqual(a.id, b.id);
});

test('list tasks by context, artifacts only with includeArtifacts', T, async () => {
  const c = await a2a('honor', { polling: true });
  const first = await sendNonblocking(c);
  // A follow-up in the same context without a taskId starts a second task there.
  const second = await sendNonblocking(c, userMsg('follow-up', { contextId: first.contextId }));
  assert.notEqual(second.id, first.id);
  assert.equal(second.contextId, first.contextId);
  await advance('5s');
  await waitState(c, second.id, [S.TASK_STATE_COMPLETED]);

  const page = await c.listTasks({ tenant: '', contextId: first.contextId, status: S.TASK_STATE_UNSPECIFIED, pageToken: '', statusTimestampAfter: undefined });
  assert.deepEqual(new Set(page.tasks.map((t) => t.id)), new Set([first.id, second.id]));
  assert.equal(page.totalSize, 2);
  assert.equal(page.nextPageToken, '');
  assert.ok(page.tasks.every((t) => t.artifacts.length === 0), 'artifacts only with includeArtifacts');

  const full = await c.listTasks({ tenant: '', contextId: first.contextId, status: S.TASK_STATE_UNSPECIFIED, pageToken: '', statusTimestampAfter: undefined, includeArtifacts: true });
  assert.equal(full.tasks.length, 2);
  for (const t of full.tasks) {
    assert.equal(stateName(t.status.state), 'TASK_STATE_COMPLETED');
    assertResultArtifact(t.artifacts);
  }
});

// ----------------------------------------------------------------------------------------------
// streaming

test('streaming send yields the task, then status and artifact updates, and ends completed', T, async () => {
  const c = await a2a('honor');
  const events = await streamWithClock(c.sendMessageStream(sendRequest(userMsg())));
  const k = kinds(events);
  assert.equal(k[0], 'task', JSON.stringify(k));
  const task = events[0].payload.value;
  assert.ok(WORKING_OR_SUBMITTED.includes(task.status.state));
  assert.ok(k.includes('artifactUpdate'), JSON.stringify(k));
  assert.equal(stateName(finalState(events)), 'TASK_STATE_COMPLETED', JSON.stringify(k));
  assert.ok(seenStates(events).includes(S.TASK_STATE_WORKING), JSON.stringify(k));
  for (const e of events.slice(1)) {
    if (e.payload.$case === 'statusUpdate' || e.payload.$case === 'artifactUpdate') {
      assert.equal(e.payload.value.taskId, task.id);
      assert.equal(e.payload.value.contextId, task.contextId);
    } else {
      // a final Task snapshot is allowed before the stream closes
      assert.equal(e.payload.$case, 'task', JSON.stringify(k));
      assert.equal(e.payload.value.id, task.id);
    }
  }
  assertResultArtifact(events.filter((e) => e.payload.$case === 'artifactUpdate').map((e) => e.payload.value.artifact));
});

test('resubscribe to a running task: the Task snapshot first, then updates to completion', T, async () => {
  const poller = await a2a('honor', { polling: true });
  const streamer = await a2a('honor');
  const task = await sendNonblocking(poller);
  const events = await streamWithClock(streamer.resubscribeTask({ tenant: '', id: task.id }));
  const k = kinds(events);
  // SubscribeToTask MUST start with the Task snapshot.
  assert.equal(k[0], 'task', JSON.stringify(k));
  assert.equal(events[0].payload.value.id, task.id);
  assert.ok(k.includes('artifactUpdate'), JSON.stringify(k));
  assert.equal(stateName(finalState(events)), 'TASK_STATE_COMPLETED', JSON.stringify(k));
});

test('REC-6 the revision from message metadata is echoed in status updates, artifacts and the task', T, async () => {
  const c = await a2a('honor');
  const msg = userMsg('research vendor', { metadata: { revision: 'r1' } });
  const events = await streamWithClock(c.sendMessageStream(sendRequest(msg)));
  let updates = 0;
  let artifacts = 0;
  for (const e of events) {
    if (e.payload.$case === 'statusUpdate') {
      updates++;
      assert.equal(e.payload.value.metadata?.revision, 'r1', JSON.stringify(e.payload.value));
    } else if (e.payload.$case === 'artifactUpdate') {
      artifacts++;
      assert.equal(e.payload.value.artifact.metadata?.revision, 'r1', JSON.stringify(e.payload.value));
    } else if (e.payload.$case === 'task') {
      assert.equal(e.payload.value.metadata?.revision, 'r1', JSON.stringify(e.payload.value));
    }
  }
  assert.ok(updates > 0 && artifacts > 0, JSON.stringify(kinds(events)));
});

// ----------------------------------------------------------------------------------------------
// cancel policies (REC-3: cancellation is an attempt; observe the outcome)

test('REC-3 cancel under `honor`: canceled, the result never lands, a second cancel is refused', T, async () => {
  const c = await a2a('honor', { polling: true });
  const task = await sendNonblocking(c);
  await waitState(c, task.id, [S.TASK_STATE_WORKING]);
  const canceled = await c.cancelTask({ tenant: '', id: task.id, metadata: undefined });
  assert.equal(stateName(canceled.status.state), 'TASK_STATE_CANCELED');
  await advance('5s');
  const after = await c.getTask({ tenant: '', id: task.id });
  assert.equal(stateName(after.status.state), 'TASK_STATE_CANCELED');
  assert.deepEqual(after.artifacts, []);
  // Cancelling a terminal task is refused, not silently accepted.
  await assert.rejects(c.cancelTask({ tenant: '', id: task.id, metadata: undefined }), TaskNotCancelableError);
});

test('REC-3 cancel under `too-late`: TaskNotCancelable, and the task completes anyway', T, async () => {
  const c = await a2a('toolate', { polling: true });
  const task = await sendNonblocking(c);
  await waitState(c, task.id, [S.TASK_STATE_WORKING]);
  await assert.rejects(c.cancelTask({ tenant: '', id: task.id, metadata: undefined }), TaskNotCancelableError);
  await advance('5s');
  const done = await waitState(c, task.id, [S.TASK_STATE_COMPLETED]);
  assertResultArtifact(done.artifacts);
});

test('REC-3 ACC-T cancel under `ack-then-complete`: answered working, then completes with its result', T, async () => {
  const c = await a2a('ackthen', { polling: true });
  const task = await sendNonblocking(c);
  await waitState(c, task.id, [S.TASK_STATE_WORKING]);
  const acked = await c.cancelTask({ tenant: '', id: task.id, metadata: undefined });
  assert.equal(acked.id, task.id);
  assert.equal(stateName(acked.status.state), 'TASK_STATE_WORKING');
  await advance('5s');
  const done = await waitState(c, task.id, [S.TASK_STATE_COMPLETED]);
  assertResultArtifact(done.artifacts);
});

test('REC-3 cancelling a completed task is TaskNotCancelable', T, async () => {
  const c = await a2a('honor', { polling: true });
  const task = await sendNonblocking(c);
  await advance('5s');
  await waitState(c, task.id, [S.TASK_STATE_COMPLETED]);
  await assert.rejects(c.cancelTask({ tenant: '', id: task.id, metadata: undefined }), TaskNotCancelableError);
});

// ----------------------------------------------------------------------------------------------
// push notifications

test('REC-4 push config given in the send is delivered to the webhook with its token', T, () =>
  withWebhook(async (hook) => {
    const c = await a2a('honor', { polling: true });
    const task = await sendNonblocking(c, userMsg(), {
      taskPushNotificationConfig: pushConfig({ url: hook.url, token: 'tok-send' }),
    });
    await advance('5s');
    await waitState(c, task.id, [S.TASK_STATE_COMPLETED]);
    const { headers, body } = await hook.waitCompleted(task.id);
    // The body is a bare StreamResponse (no JSON-RPC envelope); the token comes back as a header.
    assert.ok(!('jsonrpc' in body), JSON.stringify(body));
    assert.equal(headers['x-a2a-notification-token'], 'tok-send');
    for (const d of hook.forTask(task.id)) assert.match(d.headers['content-type'] ?? '', /^application\/json/);
  }),
);

test('push config create/get/list/delete, and a delivery in between', T, () =>
  withWebhook(async (hook) => {
    const c = await a2a('toolate', { polling: true });
    const task = await sendNonblocking(c);
    const created = await c.createTaskPushNotificationConfig(
      pushConfig({ taskId: task.id, id: 'hook-1', url: hook.url, token: 'tok-2' }),
    );
    assert.deepEqual([created.taskId, created.id, created.url, created.token], [task.id, 'hook-1', hook.url, 'tok-2']);
    const got = await c.getTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'hook-1' });
    assert.equal(got.url, hook.url);
    assert.equal(got.id, 'hook-1');
    let listed = await c.listTaskPushNotificationConfig({ tenant: '', taskId: task.id, pageSize: 0, pageToken: '' });
    assert.deepEqual(listed.configs.map((cfg) => cfg.id), ['hook-1']);

    await advance('5s');
    await waitState(c, task.id, [S.TASK_STATE_COMPLETED]);
    const { headers } = await hook.waitCompleted(task.id);
    assert.equal(headers['x-a2a-notification-token'], 'tok-2');

    assert.equal(await c.deleteTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'hook-1' }), undefined);
    listed = await c.listTaskPushNotificationConfig({ tenant: '', taskId: task.id, pageSize: 0, pageToken: '' });
    assert.deepEqual(listed.configs, []);
  }),
);

// ----------------------------------------------------------------------------------------------
// errors

test('an unknown task is TaskNotFound for get, cancel, send and subscribe', T, async () => {
  const c = await a2a('honor', { polling: true });
  await assert.rejects(c.getTask({ tenant: '', id: 'no-such-task' }), TaskNotFoundError);
  await assert.rejects(c.cancelTask({ tenant: '', id: 'no-such-task', metadata: undefined }), TaskNotFoundError);
  await assert.rejects(sendNonblocking(c, userMsg('more', { taskId: 'no-such-task' })), TaskNotFoundError);
  const s = await a2a('honor');
  await assert.rejects(drain(s.resubscribeTask({ tenant: '', id: 'no-such-task' })), TaskNotFoundError);
});

test('REC-6 a message to a terminal task is UnsupportedOperation, and the task stays completed', T, async () => {
  const c = await a2a('honor', { polling: true });
  const s = await a2a('honor');
  const task = await sendNonblocking(c);
  await advance('5s');
  await waitState(c, task.id, [S.TASK_STATE_COMPLETED]);
  await assert.rejects(
    sendNonblocking(c, userMsg('more', { taskId: task.id, contextId: task.contextId })),
    UnsupportedOperationError,
  );
  await assert.rejects(drain(s.resubscribeTask({ tenant: '', id: task.id })), UnsupportedOperationError);
  // The terminal task itself is untouched.
  const again = await c.getTask({ tenant: '', id: task.id });
  assert.equal(stateName(again.status.state), 'TASK_STATE_COMPLETED');
});

test('a taskId with another contextId is refused as invalid params', T, async () => {
  const c = await a2a('honor', { polling: true });
  const task = await sendNonblocking(c);
  // The SDK's class for INVALID_PARAMS (JSON-RPC -32602, REST reason INVALID_PARAMS).
  await assert.rejects(
    sendNonblocking(c, userMsg('more', { taskId: task.id, contextId: 'some-other-context' })),
    RequestMalformedError,
  );
});

// ----------------------------------------------------------------------------------------------
// doubleagent's scripted behaviours (agents `early` and `dedupe`)

test('REC-3 cancel under `honor-before:1s`: honoured early, refused late', T, async () => {
  const c = await a2a('early', { polling: true });
  const first = await sendNonblocking(c);
  const canceled = await c.cancelTask({ tenant: '', id: first.id, metadata: undefined });
  assert.equal(stateName(canceled.status.state), 'TASK_STATE_CANCELED');
  const second = await sendNonblocking(c);
  await advance('2s');
  await assert.rejects(c.cancelTask({ tenant: '', id: second.id, metadata: undefined }), TaskNotCancelableError);
  await advance('2s');
  assertResultArtifact((await waitState(c, second.id, [S.TASK_STATE_COMPLETED])).artifacts);
});

test('a direct Message reply instead of a Task', T, async () => {
  const c = await a2a('early');
  const msg = userMsg('hi', { messageId: `direct-${randomUUID()}` });
  const result = await c.sendMessage(sendRequest(msg));
  assert.ok('role' in result && !('status' in result), JSON.stringify(result));
  assert.equal(result.role, Role.ROLE_AGENT);
  assert.equal(result.parts[0].content.$case, 'text');
  assert.ok(result.parts[0].content.value.startsWith('Direct answer cny-'), result.parts[0].content.value);
});

test('an input-required task resumes on a follow-up with its taskId', T, async () => {
  const c = await a2a('early', { polling: true });
  const first = await c.sendMessage(sendRequest(userMsg('pay, but which account?'), { returnImmediately: true }));
  assert.ok(isTask(first), JSON.stringify(first));
  const task = await waitState(c, first.id, [S.TASK_STATE_INPUT_REQUIRED]);
  assert.equal(task.status.message?.parts[0].content.value, 'Which account?');
  await sendNonblocking(c, userMsg('acct-9', { taskId: task.id, contextId: task.contextId }));
  await advance('5s');
  const done = await waitState(c, task.id, [S.TASK_STATE_COMPLETED]);
  assert.equal(done.history.length, 2);
  assertResultArtifact(done.artifacts);
});

test('a streamed artifact in two chunks carries append and lastChunk', T, async () => {
  const c = await a2a('early');
  const msg = userMsg('go', { messageId: `chunks-${randomUUID()}` });
  const events = await streamWithClock(c.sendMessageStream(sendRequest(msg)));
  const chunks = events.filter((e) => e.payload.$case === 'artifactUpdate').map((e) => e.payload.value);
  assert.deepEqual(chunks.map((u) => [u.append, u.lastChunk]), [[false, false], [true, true]]);
  assert.deepEqual(new Set(chunks.map((u) => u.artifact.artifactId)), new Set(['report']));
  assert.equal(chunks.flatMap((u) => u.artifact.parts).map((p) => p.content.value).join(''), 'chunk-1 chunk-2');
  assert.equal(stateName(finalState(events)), 'TASK_STATE_COMPLETED');
});

test('REC-4 pushes are delayed and duplicated (at-least-once delivery)', T, () =>
  withWebhook(async (hook) => {
    const c = await a2a('early', { polling: true });
    const task = await sendNonblocking(c, userMsg(), {
      taskPushNotificationConfig: pushConfig({ url: hook.url, token: 'tok-d' }),
    });
    await sleep(300);
    assert.deepEqual(hook.forTask(task.id), [], 'nothing before the delay has passed');
    await advance('5s');
    await hook.waitCompleted(task.id);
    const completed = () =>
      hook.forTask(task.id).filter(({ event }) => event.payload?.$case === 'statusUpdate' && event.payload.value.status?.state === S.TASK_STATE_COMPLETED);
    const deadline = Date.now() + 5000;
    while (completed().length < 2 && Date.now() < deadline) await sleep(50);
    const done = completed();
    assert.equal(done.length, 2, JSON.stringify(hook.forTask(task.id).map((d) => d.body)));
    assert.deepEqual(done[0].body, done[1].body);
  }),
);

test('REC-4 with de-duplication on, a resent messageId gets the first task back', T, async () => {
  const c = await a2a('dedupe', { polling: true });
  const msg = userMsg();
  const a = await sendNonblocking(c, msg);
  const b = await sendNonblocking(c, msg);
  assert.equal(a.id, b.id);
});

test(`ACC-T the ledger's message entry says the client used ${TRANSPORT}`, T, async () => {
  const c = await a2a('honor', { polling: true });
  const msg = userMsg();
  await sendNonblocking(c, msg);
  const ledger = await admin('GET', '/_admin/ledger?service=honor&event=message');
  const entries = ledger.entries.filter((e) => e.detail?.message_id === msg.messageId);
  assert.equal(entries.length, 1, JSON.stringify(entries));
  assert.equal(entries[0].detail.binding, TRANSPORT);
});
