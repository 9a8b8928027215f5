"""Interop suite: the official Python A2A client (a2a-sdk 1.3.0) against doubleagent's fake A2A agents.

Started by run.sh, which serves a2a-interop.toml and exports DOUBLEAGENT_URL (the ready line's `url`)
and A2A_TRANSPORT, the binding the client is restricted to (`JSONRPC`, `HTTP+JSON` or `GRPC`;
run.sh runs the suite once per binding).
The scenario has three agents, one per cancel policy (`honor`, `toolate`, `ackthen`), each working 3 s
on a manual clock and producing an artifact with a text part and a data part that share a canary.

Everything goes through the SDK client as an orchestrator would use it, so a wire mistake in
doubleagent (enum spelling, result wrapping, SSE framing, card shape) shows up as a client failure
here. Only the malformed-JSON-RPC cases use raw HTTP: the client cannot produce them.

No pytest-asyncio: each test runs its own event loop through `run()`, which keeps the suite's
install to `a2a-sdk` + `pytest`.

Rule IDs (../shared/spec/rules.md) are cited per test.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import uuid

from contextlib import asynccontextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from google.protobuf.json_format import MessageToDict

from a2a.client import A2ACardResolver, ClientConfig, create_client
from a2a.types.a2a_pb2 import (
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    SubscribeToTaskRequest,
    Task,
    TaskPushNotificationConfig,
    TaskState,
)
from a2a.utils.errors import (
    InvalidParamsError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)


URL = os.environ.get('DOUBLEAGENT_URL', '').rstrip('/')
TRANSPORT = os.environ.get('A2A_TRANSPORT', 'JSONRPC')
pytestmark = pytest.mark.skipif(
    not URL, reason='DOUBLEAGENT_URL not set: run interop/run.sh, which starts doubleagent'
)

S = TaskState
WORKING_OR_SUBMITTED = (S.TASK_STATE_SUBMITTED, S.TASK_STATE_WORKING)
RESULT_PREFIX = 'Pay vendor account '
ERROR_INFO_TYPE = 'type.googleapis.com/google.rpc.ErrorInfo'


# ----------------------------------------------------------------------------------------------
# helpers


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, timeout=60))


def agent_url(name: str) -> str:
    return f'{URL}/agents/{name}'


def grpc_channel(target: str):
    """The channel the gRPC transport calls over: the card's GRPC interface URL is `host:port`."""
    import grpc  # only installed with a2a-sdk[grpc]

    return grpc.aio.insecure_channel(target)


@asynccontextmanager
async def a2a(name: str, *, streaming: bool = False, polling: bool = False):
    """A client for one agent, resolved from its card like an orchestrator would.

    Our own httpx client: the SDK's default one has a 5 s timeout, which a blocking SendMessage on
    a slow CI box, or an SSE stream idle between clock moves, can exceed.
    """
    hc = httpx.AsyncClient(timeout=httpx.Timeout(30.0))
    try:
        client = await create_client(
            agent_url(name),
            client_config=ClientConfig(
                httpx_client=hc,
                streaming=streaming,
                polling=polling,
                supported_protocol_bindings=[TRANSPORT],
                grpc_channel_factory=grpc_channel if TRANSPORT == 'GRPC' else None,
            ),
        )
        try:
            yield client
        finally:
            await client.close()
    finally:
        await hc.aclose()


async def advance(by: str = '5s') -> None:
    async with httpx.AsyncClient(timeout=10) as hc:
        r = await hc.post(f'{URL}/_admin/clock/advance', json={'by': by})
        r.raise_for_status()


async def keep_advancing(until: asyncio.Future | asyncio.Event, by: str = '1s', max_ticks: int = 60):
    """Moves the manual clock until `until` is done, so blocking calls and streams can finish
    without the test having to know exactly when the server registered the task."""
    for _ in range(max_ticks):
        if until.is_set() if isinstance(until, asyncio.Event) else until.done():
            return
        await advance(by)
        await asyncio.sleep(0.1)
    raise AssertionError('gave up moving the clock: the call never finished')


def user_msg(text: str = 'research vendor', **kw) -> Message:
    return Message(
        role=Role.ROLE_USER,
        message_id=f'interop-{uuid.uuid4()}',
        parts=[Part(text=text)],
        **kw,
    )


async def only_event(stream):
    events = [ev async for ev in stream]
    assert len(events) == 1, events
    return events[0]


async def send_nonblocking(client, msg: Message | None = None, **config) -> Task:
    """SendMessage with returnImmediately: the task comes back while still in flight."""
    req = SendMessageRequest(
        message=msg or user_msg(),
        configuration=SendMessageConfiguration(return_immediately=True, **config),
    )
    ev = await only_event(client.send_message(req))
    assert ev.WhichOneof('payload') == 'task', MessageToDict(ev)
    assert ev.task.status.state in WORKING_OR_SUBMITTED, MessageToDict(ev.task)
    return ev.task


async def wait_state(client, task_id: str, *states, timeout: float = 5.0) -> Task:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        t = await client.get_task(GetTaskRequest(id=task_id))
        if t.status.state in states:
            return t
        if loop.time() > deadline:
            raise AssertionError(
                f'task {task_id} is {S.Name(t.status.state)}, wanted {[S.Name(s) for s in states]}'
            )
        await asyncio.sleep(0.05)


def assert_result_artifact(artifacts) -> str:
    """The scenario's result: one text part and one data part carrying the same expanded canary."""
    parts = [p for a in artifacts for p in a.parts]
    texts = [p.text for p in parts if p.WhichOneof('content') == 'text']
    datas = [MessageToDict(p)['data'] for p in parts if p.WhichOneof('content') == 'data']
    assert len(texts) == 1 and texts[0].startswith(RESULT_PREFIX), texts
    canary = texts[0][len(RESULT_PREFIX):]
    assert canary and '{{' not in canary, f'canary not expanded: {texts[0]!r}'
    assert datas == [{'account': canary}], datas
    return canary


async def collect(stream, first_seen: asyncio.Event):
    events = []
    async for ev in stream:
        events.append(ev)
        first_seen.set()
    first_seen.set()
    return events


async def stream_with_clock(stream):
    """Reads a whole SSE stream, moving the clock only once the first event proved the stream is
    open (moving it earlier could finish the task before a subscription attaches)."""
    first = asyncio.Event()
    reader = asyncio.ensure_future(collect(stream, first))
    await asyncio.wait_for(first.wait(), 10)
    await keep_advancing(reader)
    return await reader


def kinds(events) -> list[str]:
    return [ev.WhichOneof('payload') for ev in events]


def seen_states(events) -> list:
    """Task states a stream reported, from Task snapshots and status updates alike."""
    out = []
    for ev in events:
        if ev.HasField('task'):
            out.append(ev.task.status.state)
        elif ev.HasField('status_update'):
            out.append(ev.status_update.status.state)
    return out


def final_state(events):
    """The stream's last event must carry the terminal state: a status update, or the final Task
    snapshot a server MAY resend before closing (SPEC §3.1.6)."""
    last = events[-1]
    assert last.WhichOneof('payload') in ('status_update', 'task'), kinds(events)
    return seen_states(events)[-1]


# The scenario's `push_ports` (a2a-interop.toml).
PUSH_PORTS = range(47801, 47809)


class Webhook:
    """A push-notification receiver on loopback, recording (headers, JSON body) per POST."""

    def __init__(self):
        self.received: list[tuple[dict, dict]] = []
        hook = self

        class H(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get('Content-Length') or 0))
                try:
                    doc = json.loads(body)
                except ValueError:
                    doc = {'_unparsed': body.decode('utf-8', 'replace')}
                hook.received.append(({k.lower(): v for k, v in self.headers.items()}, doc))
                self.send_response(200)
                self.send_header('Content-Length', '0')
                self.end_headers()

            def log_message(self, *a):
                pass

        # A loopback push target must be on a port the scenario lists (its `push_ports`).
        for port in PUSH_PORTS:
            try:
                self.server = ThreadingHTTPServer(('127.0.0.1', port), H)
                break
            except OSError:
                continue
        else:
            raise RuntimeError(f'none of the push ports {PUSH_PORTS} is free')
        self.url = f'http://127.0.0.1:{self.server.server_address[1]}/hook'
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()

    def for_task(self, task_id: str) -> list[tuple[dict, dict]]:
        out = []
        for headers, doc in self.received:
            inner = next(iter(doc.values())) if len(doc) == 1 else {}
            if inner.get('taskId') == task_id or inner.get('id') == task_id:
                out.append((headers, doc))
        return out

    async def wait_completed(self, task_id: str, timeout: float = 5.0):
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while loop.time() < deadline:
            for headers, doc in self.for_task(task_id):
                state = (doc.get('statusUpdate') or doc.get('task') or {}).get('status', {}).get('state')
                if state == 'TASK_STATE_COMPLETED':
                    return headers, doc
            await asyncio.sleep(0.05)
        raise AssertionError(f'no COMPLETED push for {task_id}; got {self.received}')


@pytest.fixture
def webhook():
    hook = Webhook()
    yield hook
    hook.close()


async def raw_rpc(name: str, body: bytes | dict) -> tuple[int, dict]:
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    async with httpx.AsyncClient(timeout=10) as hc:
        r = await hc.post(
            agent_url(name),
            content=content,
            headers={'Content-Type': 'application/json', 'A2A-Version': '1.0'},
        )
    return r.status_code, r.json()


# ----------------------------------------------------------------------------------------------
# agent card


def test_card_resolves_with_this_binding_at_agent_path():
    async def t():
        async with httpx.AsyncClient(timeout=10) as hc:
            card = await A2ACardResolver(hc, agent_url('honor')).get_agent_card()
            raw = (await hc.get(f"{agent_url('honor')}/.well-known/agent-card.json")).json()
        assert card.name == 'honor'
        # JSON-RPC first: a client that speaks every binding takes the first it knows.
        assert card.supported_interfaces[0].protocol_binding == 'JSONRPC'
        [iface] = [i for i in card.supported_interfaces if i.protocol_binding == TRANSPORT]
        # The client RPCs to this URL, so it must be the real bound address, not a template.
        if TRANSPORT == 'GRPC':
            # A channel target (the ready line's `grpc`), the agent named by the tenant.
            async with httpx.AsyncClient(timeout=10) as hc:
                ready = (await hc.get(f'{URL}/')).json()
            assert iface.url == ready['grpc'] and iface.tenant == 'honor'
        else:
            assert iface.url == agent_url('honor')
        # Anything other than 1.x (or a legacy top-level `url`) flips the client to v0.3 method names.
        assert iface.protocol_version == '1.0'
        assert card.capabilities.streaming and card.capabilities.push_notifications
        for field in ('name', 'description', 'supportedInterfaces', 'version', 'capabilities',
                      'defaultInputModes', 'defaultOutputModes', 'skills'):
            assert field in raw, field
        assert 'url' not in raw and 'protocolVersion' not in raw, 'legacy 0.3 card fields'

    run(t())


# ----------------------------------------------------------------------------------------------
# send


def test_blocking_send_returns_completed_task_with_artifacts():
    async def t():
        async with a2a('honor') as c:
            call = asyncio.ensure_future(
                only_event(c.send_message(SendMessageRequest(message=user_msg())))
            )
            await keep_advancing(call)
            ev = call.result()
        assert ev.WhichOneof('payload') == 'task'
        assert ev.task.status.state == S.TASK_STATE_COMPLETED
        assert_result_artifact(ev.task.artifacts)

    run(t())


def test_nonblocking_send_then_get_working_then_completed():
    async def t():
        async with a2a('honor', polling=True) as c:
            task = await send_nonblocking(c)
            assert task.id and task.context_id
            await wait_state(c, task.id, S.TASK_STATE_WORKING)
            await advance('5s')
            done = await wait_state(c, task.id, S.TASK_STATE_COMPLETED)
            assert done.context_id == task.context_id
            assert_result_artifact(done.artifacts)

    run(t())


def test_same_message_id_twice_makes_two_tasks_when_dedupe_is_off():
    # REC-4: A2A message-id de-duplication is optional; the interop scenario has it off.
    async def t():
        async with a2a('honor', polling=True) as c:
            msg = user_msg()
            a = await send_nonblocking(c, msg)
            b = await send_nonblocking(c, msg)
            assert a.id != b.id

    run(t())


def test_list_tasks_by_context():
    async def t():
        async with a2a('honor', polling=True) as c:
            first = await send_nonblocking(c)
            # A follow-up in the same context without a taskId starts a second task there.
            second = await send_nonblocking(c, user_msg('follow-up', context_id=first.context_id))
            assert second.id != first.id and second.context_id == first.context_id
            await advance('5s')
            await wait_state(c, second.id, S.TASK_STATE_COMPLETED)

            page = await c.list_tasks(ListTasksRequest(context_id=first.context_id))
            assert {t.id for t in page.tasks} == {first.id, second.id}
            assert page.total_size == 2
            assert page.next_page_token == ''
            assert all(not t.artifacts for t in page.tasks), 'artifacts only with includeArtifacts'

            full = await c.list_tasks(
                ListTasksRequest(context_id=first.context_id, include_artifacts=True)
            )
            for t in full.tasks:
                assert t.status.state == S.TASK_STATE_COMPLETED
                assert_result_artifact(t.artifacts)

    run(t())


# ----------------------------------------------------------------------------------------------
# streaming


def test_stream_sends_task_then_status_and_artifact_updates():
    async def t():
        async with a2a('honor', streaming=True) as c:
            events = await stream_with_clock(
                c.send_message(SendMessageRequest(message=user_msg()))
            )
        k = kinds(events)
        assert k[0] == 'task', k
        task = events[0].task
        assert task.status.state in WORKING_OR_SUBMITTED
        assert 'artifact_update' in k, k
        assert final_state(events) == S.TASK_STATE_COMPLETED, k
        assert S.TASK_STATE_WORKING in seen_states(events), k
        for e in events[1:]:
            if e.WhichOneof('payload') in ('status_update', 'artifact_update'):
                upd = getattr(e, e.WhichOneof('payload'))
                assert upd.task_id == task.id and upd.context_id == task.context_id
            else:  # a final Task snapshot is allowed before the stream closes
                assert e.WhichOneof('payload') == 'task' and e.task.id == task.id, k
        assert_result_artifact([e.artifact_update.artifact for e in events if e.HasField('artifact_update')])

    run(t())


def test_subscribe_to_running_task():
    async def t():
        async with a2a('honor', polling=True) as poller, a2a('honor', streaming=True) as streamer:
            task = await send_nonblocking(poller)
            events = await stream_with_clock(streamer.subscribe(SubscribeToTaskRequest(id=task.id)))
        k = kinds(events)
        # SubscribeToTask MUST start with the Task snapshot.
        assert k[0] == 'task' and events[0].task.id == task.id, k
        assert 'artifact_update' in k, k
        assert final_state(events) == S.TASK_STATE_COMPLETED, k

    run(t())


def test_revision_from_metadata_is_echoed_in_updates_and_artifacts():
    # REC-6: results must state the revision they were produced under (issue 3, item 4).
    async def t():
        async with a2a('honor', streaming=True) as c:
            msg = user_msg(metadata={'revision': 'r1'})
            events = await stream_with_clock(c.send_message(SendMessageRequest(message=msg)))
        for e in events:
            if e.HasField('status_update'):
                assert MessageToDict(e.status_update).get('metadata', {}).get('revision') == 'r1'
            if e.HasField('artifact_update'):
                assert MessageToDict(e.artifact_update.artifact).get('metadata', {}).get('revision') == 'r1'

    run(t())


# ----------------------------------------------------------------------------------------------
# cancel policies (REC-3: cancellation is an attempt; observe the outcome)


def test_cancel_honor_cancels_and_result_never_lands():
    async def t():
        async with a2a('honor', polling=True) as c:
            task = await send_nonblocking(c)
            await wait_state(c, task.id, S.TASK_STATE_WORKING)
            canceled = await c.cancel_task(CancelTaskRequest(id=task.id))
            assert canceled.status.state == S.TASK_STATE_CANCELED
            await advance('5s')
            after = await c.get_task(GetTaskRequest(id=task.id))
            assert after.status.state == S.TASK_STATE_CANCELED
            assert not after.artifacts
            # Cancelling a terminal task is refused, not silently accepted.
            with pytest.raises(TaskNotCancelableError):
                await c.cancel_task(CancelTaskRequest(id=task.id))

    run(t())


def test_cancel_too_late_is_refused_and_task_completes():
    async def t():
        async with a2a('toolate', polling=True) as c:
            task = await send_nonblocking(c)
            await wait_state(c, task.id, S.TASK_STATE_WORKING)
            with pytest.raises(TaskNotCancelableError):
                await c.cancel_task(CancelTaskRequest(id=task.id))
            await advance('5s')
            done = await wait_state(c, task.id, S.TASK_STATE_COMPLETED)
            assert_result_artifact(done.artifacts)

    run(t())


def test_cancel_ack_then_complete_returns_working_and_completes_anyway():
    # ACC-T: the subagent that returns its result after being told to stop.
    async def t():
        async with a2a('ackthen', polling=True) as c:
            task = await send_nonblocking(c)
            await wait_state(c, task.id, S.TASK_STATE_WORKING)
            acked = await c.cancel_task(CancelTaskRequest(id=task.id))
            assert acked.id == task.id
            assert acked.status.state == S.TASK_STATE_WORKING
            await advance('5s')
            done = await wait_state(c, task.id, S.TASK_STATE_COMPLETED)
            assert_result_artifact(done.artifacts)

    run(t())


def test_cancel_completed_task_is_not_cancelable():
    async def t():
        async with a2a('honor', polling=True) as c:
            task = await send_nonblocking(c)
            await advance('5s')
            await wait_state(c, task.id, S.TASK_STATE_COMPLETED)
            with pytest.raises(TaskNotCancelableError):
                await c.cancel_task(CancelTaskRequest(id=task.id))

    run(t())


# ----------------------------------------------------------------------------------------------
# push notifications


def test_push_config_in_send_delivers_to_webhook(webhook):
    async def t():
        async with a2a('honor', polling=True) as c:
            task = await send_nonblocking(
                c,
                task_push_notification_config=TaskPushNotificationConfig(url=webhook.url, token='tok-send'),
            )
            await advance('5s')
            await wait_state(c, task.id, S.TASK_STATE_COMPLETED)
            headers, doc = await webhook.wait_completed(task.id)
        # The body is a bare StreamResponse (no JSON-RPC envelope); the token comes back as a header.
        assert 'jsonrpc' not in doc
        assert headers.get('x-a2a-notification-token') == 'tok-send'
        for h, _ in webhook.for_task(task.id):
            assert h.get('content-type', '').startswith('application/json')

    run(t())


def test_push_config_methods_and_delivery(webhook):
    async def t():
        async with a2a('toolate', polling=True) as c:
            task = await send_nonblocking(c)
            created = await c.create_task_push_notification_config(
                TaskPushNotificationConfig(task_id=task.id, id='hook-1', url=webhook.url, token='tok-2')
            )
            assert (created.task_id, created.id, created.url, created.token) == (
                task.id, 'hook-1', webhook.url, 'tok-2'
            )
            got = await c.get_task_push_notification_config(
                GetTaskPushNotificationConfigRequest(task_id=task.id, id='hook-1')
            )
            assert got.url == webhook.url and got.id == 'hook-1'
            listed = await c.list_task_push_notification_configs(
                ListTaskPushNotificationConfigsRequest(task_id=task.id)
            )
            assert [cfg.id for cfg in listed.configs] == ['hook-1']

            await advance('5s')
            await wait_state(c, task.id, S.TASK_STATE_COMPLETED)
            headers, _ = await webhook.wait_completed(task.id)
            assert headers.get('x-a2a-notification-token') == 'tok-2'

            assert await c.delete_task_push_notification_config(
                DeleteTaskPushNotificationConfigRequest(task_id=task.id, id='hook-1')
            ) is None
            listed = await c.list_task_push_notification_configs(
                ListTaskPushNotificationConfigsRequest(task_id=task.id)
            )
            assert list(listed.configs) == []

    run(t())


# ----------------------------------------------------------------------------------------------
# errors


def test_unknown_task_is_task_not_found():
    async def t():
        async with a2a('honor', polling=True) as c:
            with pytest.raises(TaskNotFoundError):
                await c.get_task(GetTaskRequest(id='no-such-task'))
            with pytest.raises(TaskNotFoundError):
                await c.cancel_task(CancelTaskRequest(id='no-such-task'))
            with pytest.raises(TaskNotFoundError):
                await send_nonblocking(c, user_msg(task_id='no-such-task'))
        async with a2a('honor', streaming=True) as s:
            with pytest.raises(TaskNotFoundError):
                async for _ in s.subscribe(SubscribeToTaskRequest(id='no-such-task')):
                    pass

    run(t())


def test_message_to_terminal_task_is_unsupported_operation():
    # REC-6: a terminal task is never restarted; follow-ups need a new task.
    async def t():
        async with a2a('honor', polling=True) as c, a2a('honor', streaming=True) as s:
            task = await send_nonblocking(c)
            await advance('5s')
            await wait_state(c, task.id, S.TASK_STATE_COMPLETED)
            with pytest.raises(UnsupportedOperationError):
                await send_nonblocking(
                    c, user_msg('more', task_id=task.id, context_id=task.context_id)
                )
            with pytest.raises(UnsupportedOperationError):
                async for _ in s.subscribe(SubscribeToTaskRequest(id=task.id)):
                    pass
            # The terminal task itself is untouched.
            again = await c.get_task(GetTaskRequest(id=task.id))
            assert again.status.state == S.TASK_STATE_COMPLETED

    run(t())


def test_context_mismatch_is_invalid_params():
    async def t():
        async with a2a('honor', polling=True) as c:
            task = await send_nonblocking(c)
            with pytest.raises(InvalidParamsError):
                await send_nonblocking(
                    c, user_msg('more', task_id=task.id, context_id='some-other-context')
                )

    run(t())


jsonrpc_only = pytest.mark.skipif(TRANSPORT != 'JSONRPC', reason='JSON-RPC envelope errors')
rest_only = pytest.mark.skipif(TRANSPORT != 'HTTP+JSON', reason='HTTP+JSON error bodies')
grpc_only = pytest.mark.skipif(TRANSPORT != 'GRPC', reason='gRPC statuses')


@jsonrpc_only
def test_raw_jsonrpc_errors():
    async def t():
        status, body = await raw_rpc(
            'honor', {'jsonrpc': '2.0', 'id': 7, 'method': 'message/send', 'params': {}}
        )
        assert status == 200 and body['id'] == 7 and body['error']['code'] == -32601

        status, body = await raw_rpc('honor', b'{"jsonrpc": "2.0", "id": 1, "method": ')
        assert status == 200 and body['id'] is None and body['error']['code'] == -32700

        status, body = await raw_rpc('honor', {'jsonrpc': '1.0', 'id': 'x', 'method': 'GetTask'})
        assert status == 200 and body['error']['code'] == -32600

        status, body = await raw_rpc(
            'honor', {'jsonrpc': '2.0', 'id': 'g1', 'method': 'GetTask', 'params': {'id': 'nope'}}
        )
        assert status == 200 and body['id'] == 'g1'
        err = body['error']
        assert err['code'] == -32001 and isinstance(err['message'], str)
        # Not read by the Python client beyond `metadata`, but it is what the reference server sends.
        info = err['data'][0]
        assert info['@type'] == ERROR_INFO_TYPE
        assert info['reason'] == 'TASK_NOT_FOUND' and info['domain'] == 'a2a-protocol.org'

    run(t())


@rest_only
def test_raw_rest_errors_are_google_rpc_status_with_the_spec_http_status():
    # REC-6 over HTTP+JSON (SPEC §5.4, §11.6): the status line carries the error, the body says it
    # again with the gRPC status name and the A2A reason.
    async def t():
        async with httpx.AsyncClient(timeout=10) as hc:
            r = await hc.get(f"{agent_url('honor')}/tasks/nope", headers={'A2A-Version': '1.0'})
            assert r.status_code == 404
            err = r.json()['error']
            assert err['code'] == 404 and err['status'] == 'NOT_FOUND'
            info = err['details'][0]
            assert info['@type'] == ERROR_INFO_TYPE and info['reason'] == 'TASK_NOT_FOUND'
            r = await hc.post(
                f"{agent_url('honor')}/message:send",
                content=b'{"message": ',
                headers={'Content-Type': 'application/a2a+json'},
            )
            assert r.status_code == 400 and r.json()['error']['status'] == 'INVALID_ARGUMENT'

    run(t())


@grpc_only
def test_grpc_errors_are_statuses_with_the_error_info():
    # REC-6 over gRPC (SPEC §10.6): the status code carries the error, an ErrorInfo detail the
    # A2A reason; read with the stubs the SDK ships, below its client.
    import grpc
    from google.rpc import error_details_pb2, status_pb2

    from a2a.types import a2a_pb2_grpc

    async def t():
        async with httpx.AsyncClient(timeout=10) as hc:
            target = (await hc.get(f'{URL}/')).json()['grpc']
        async with grpc.aio.insecure_channel(target) as ch:
            stub = a2a_pb2_grpc.A2AServiceStub(ch)
            with pytest.raises(grpc.aio.AioRpcError) as e:
                await stub.GetTask(GetTaskRequest(tenant='honor', id='nope'))
        assert e.value.code() == grpc.StatusCode.NOT_FOUND
        raw = dict(e.value.trailing_metadata()).get('grpc-status-details-bin')
        assert raw, 'a google.rpc.Status in the trailers'
        status = status_pb2.Status.FromString(raw)
        info = error_details_pb2.ErrorInfo()
        assert status.details[0].Unpack(info)
        assert info.reason == 'TASK_NOT_FOUND' and info.domain == 'a2a-protocol.org'

    run(t())


# ----------------------------------------------------------------------------------------------
# doubleagent's scripted behaviours (agents `early` and `dedupe`; not in the reference server)

doubleagent_only = pytest.mark.skipif(
    os.environ.get('A2A_REFERENCE') == '1', reason='scripted behaviour of doubleagent only'
)


@doubleagent_only
def test_cancel_honor_before_honours_early_and_refuses_late():
    # REC-3: whether a cancel works depends on when it comes.
    async def t():
        async with a2a('early', polling=True) as c:
            first = await send_nonblocking(c)
            canceled = await c.cancel_task(CancelTaskRequest(id=first.id))
            assert canceled.status.state == S.TASK_STATE_CANCELED
            second = await send_nonblocking(c)
            await advance('2s')
            with pytest.raises(TaskNotCancelableError):
                await c.cancel_task(CancelTaskRequest(id=second.id))
            await advance('2s')
            assert_result_artifact((await wait_state(c, second.id, S.TASK_STATE_COMPLETED)).artifacts)

    run(t())


@doubleagent_only
def test_direct_message_reply_instead_of_a_task():
    async def t():
        async with a2a('early') as c:
            msg = Message(role=Role.ROLE_USER, message_id=f'direct-{uuid.uuid4()}', parts=[Part(text='hi')])
            ev = await only_event(c.send_message(SendMessageRequest(message=msg)))
        assert ev.WhichOneof('payload') == 'message', MessageToDict(ev)
        assert ev.message.role == Role.ROLE_AGENT
        assert ev.message.parts[0].text.startswith('Direct answer cny-')

    run(t())


@doubleagent_only
def test_input_required_task_resumes_on_a_follow_up():
    async def t():
        async with a2a('early', polling=True) as c:
            ev = await only_event(c.send_message(SendMessageRequest(
                message=user_msg('pay, but which account?'),
                configuration=SendMessageConfiguration(return_immediately=True))))
            task = await wait_state(c, ev.task.id, S.TASK_STATE_INPUT_REQUIRED)
            assert task.status.message.parts[0].text == 'Which account?'
            await send_nonblocking(c, user_msg('acct-9', task_id=task.id, context_id=task.context_id))
            await advance('5s')
            done = await wait_state(c, task.id, S.TASK_STATE_COMPLETED)
            assert len(done.history) == 2
            assert_result_artifact(done.artifacts)

    run(t())


@doubleagent_only
def test_stream_sends_artifact_chunks_with_append_and_last_chunk():
    async def t():
        async with a2a('early', streaming=True) as c:
            msg = Message(role=Role.ROLE_USER, message_id=f'chunks-{uuid.uuid4()}', parts=[Part(text='go')])
            events = await stream_with_clock(c.send_message(SendMessageRequest(message=msg)))
        chunks = [e.artifact_update for e in events if e.HasField('artifact_update')]
        assert [(u.append, u.last_chunk) for u in chunks] == [(False, False), (True, True)]
        assert {u.artifact.artifact_id for u in chunks} == {'report'}
        assert ''.join(p.text for u in chunks for p in u.artifact.parts) == 'chunk-1 chunk-2'
        assert final_state(events) == S.TASK_STATE_COMPLETED

    run(t())


@doubleagent_only
def test_push_is_delayed_and_duplicated(webhook):
    # At-least-once delivery: every notification arrives twice, 1 s of scenario time late.
    async def t():
        async with a2a('early', polling=True) as c:
            task = await send_nonblocking(
                c, task_push_notification_config=TaskPushNotificationConfig(url=webhook.url, token='tok-d'),
            )
            await asyncio.sleep(0.3)
            assert webhook.for_task(task.id) == [], 'nothing before the delay has passed'
            await advance('5s')
            await webhook.wait_completed(task.id)
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 5
            while loop.time() < deadline:
                done = [d for _, d in webhook.for_task(task.id)
                        if d.get('statusUpdate', {}).get('status', {}).get('state') == 'TASK_STATE_COMPLETED']
                if len(done) == 2:
                    break
                await asyncio.sleep(0.05)
            assert len(done) == 2, webhook.for_task(task.id)
            assert done[0] == done[1]

    run(t())


@doubleagent_only
def test_resent_message_with_dedupe_on_gets_the_first_task():
    # REC-4: with de-duplication on, the same messageId does not start a second task.
    async def t():
        async with a2a('dedupe', polling=True) as c:
            msg = user_msg()
            a = await send_nonblocking(c, msg)
            b = await send_nonblocking(c, msg)
            assert a.id == b.id

    run(t())


@doubleagent_only
def test_the_ledger_says_which_binding_the_client_used():
    # One engine behind every binding: the entries are the same, and each says its binding.
    async def t():
        async with a2a('honor', polling=True) as c:
            msg = user_msg()
            await send_nonblocking(c, msg)
        async with httpx.AsyncClient(timeout=10) as hc:
            r = await hc.get(f'{URL}/_admin/ledger', params={'service': 'honor', 'event': 'message'})
        [entry] = [e for e in r.json()['entries'] if e['detail']['message_id'] == msg.message_id]
        assert entry['detail']['binding'] == TRANSPORT

    run(t())
