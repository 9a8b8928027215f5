"""Interop suite: the official Python MCP client (`mcp` 2.3.0) against doubleagent's fake MCP servers.

Started by run.sh, which serves mcp-interop.toml and exports DOUBLEAGENT_URL (the ready line's
`url`) and MCP_MODE, the client's `mode` (`auto`: it probes `server/discover` and speaks
2026-07-28; `legacy`: `initialize` and a session, 2025-11-25); run.sh runs the suite once per mode.

The scenario is one payments service with a route per fate, each a tool of the MCP server
`payments` (and a few of `streaming`, which answers as an event stream). Every test runs in a
session of its own (`/_s/NAME/`), so its ledger, fate counters and manual clock start fresh.
Everything goes through `mcp.Client` as an agent would use it; the ledger and the manual clock
are doubleagent's admin API, reached with httpx. Rule IDs (shared/spec/rules.md) per test.
"""

from __future__ import annotations

import asyncio
import os
import uuid

import httpx
import pytest

from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.types import ElicitResult


URL = os.environ.get('DOUBLEAGENT_URL', '').rstrip('/')
MODE = os.environ.get('MCP_MODE', 'auto')
ERA = 'modern' if MODE == 'auto' else 'legacy'
VERSION = '2026-07-28' if MODE == 'auto' else '2025-11-25'
pytestmark = pytest.mark.skipif(not URL, reason='DOUBLEAGENT_URL not set: run interop/mcp/run.sh')

TRANSFER = {'to': 'acct-9', 'amount': 100}


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, timeout=60))


class World:
    """One session of the scenario: its MCP endpoints, ledger and clock."""

    def __init__(self) -> None:
        self.base = f'{URL}/_s/t-{uuid.uuid4().hex[:10]}'

    def client(self, server: str = 'payments') -> Client:
        # A short timeout: a hung call must fail the test, not stall CI.
        return Client(f'{self.base}/mcp/{server}', mode=MODE, read_timeout_seconds=10)

    def entries(self, **query: str) -> list[dict]:
        r = httpx.get(f'{self.base}/_admin/ledger', params=query, timeout=10)
        r.raise_for_status()
        return r.json()['entries']

    def actions(self) -> list[dict]:
        return [e for e in self.entries(service='payments') if e.get('route')]

    async def advance(self, by: str) -> None:
        async with httpx.AsyncClient(timeout=10) as hc:
            r = await hc.post(f'{self.base}/_admin/clock/advance', json={'by': by})
            r.raise_for_status()

    def verdict(self) -> dict:
        r = httpx.get(f'{self.base}/_admin/verify', timeout=10)
        r.raise_for_status()
        return r.json()


def rules(verdict: dict) -> set[str]:
    return {f['rule'] for f in verdict['findings']}


def transport_failure(e: BaseException) -> bool:
    """Whether the client failed for want of an answer: an MCP error, or its HTTP stack's
    transport error (the client's stack is `httpx2`, so the type is told by its module)."""
    return any(
        isinstance(x, MCPError) or type(x).__module__.split('.')[0] in ('httpx', 'httpx2', 'httpcore')
        for x in causes(e)
    )


def causes(e: BaseException) -> list[BaseException]:
    """An error and everything inside it (the client raises transport failures in groups)."""
    out = [e]
    for inner in getattr(e, 'exceptions', ()):
        out.extend(causes(inner))
    if e.__cause__ is not None:
        out.extend(causes(e.__cause__))
    return out


# ----------------------------------------------------------------------------------------------
# listing and calling


def test_tools_are_listed_with_their_schemas_and_annotations_as_written():
    async def t():
        async with World().client() as c:
            assert c.protocol_version == VERSION
            tools = {t.name: t for t in (await c.list_tools()).tools}
        assert {'create_transfer', 'lost_transfer', 'get_transfer'} <= tools.keys()
        create = tools['create_transfer']
        assert create.description == 'Move money to an account.'
        assert create.input_schema['required'] == ['to', 'amount']
        # Advertised as the scenario says, true or not: orchestrators key retries on it.
        assert create.annotations.idempotent_hint is True
        assert tools['lost_transfer'].annotations.idempotent_hint is False
        assert tools['get_transfer'].annotations.read_only_hint is True

    run(t())


def test_acc_t_a_tool_call_is_an_action_in_the_ledger_with_its_mcp_facts():
    w = World()

    async def t():
        async with w.client() as c:
            r = await c.call_tool('create_transfer', {**TRANSFER, 'idempotency_key': 'k-1'})
        assert not r.is_error
        assert r.structured_content['status'] == 'succeeded'
        return r.structured_content['id']

    action_id = run(t())
    [entry] = w.actions()
    assert entry['route'] == 'create-transfer' and entry['applied'] is True
    assert entry['action_id'] == action_id and entry['idempotency_key'] == 'k-1'
    assert entry['body'] == {**TRANSFER, 'idempotency_key': 'k-1'}
    mcp = entry['detail']['mcp']
    assert mcp['server'] == 'payments' and mcp['tool'] == 'create_transfer'
    assert mcp['era'] == ERA and mcp['protocol_version'] == VERSION
    assert mcp['key_source'] == {'argument': '/idempotency_key'}
    assert isinstance(mcp['jsonrpc_id'], int)


def test_acc_1_the_same_key_twice_is_replayed_and_takes_effect_once():
    w = World()

    async def t():
        async with w.client() as c:
            first = await c.call_tool('create_transfer', {**TRANSFER, 'idempotency_key': 'k-2'})
            again = await c.call_tool('create_transfer', {**TRANSFER, 'idempotency_key': 'k-2'})
        assert first.structured_content == again.structured_content

    run(t())
    entries = w.actions()
    assert [e['applied'] for e in entries].count(True) == 1, entries
    assert entries[1]['replay_of'] == entries[0]['seq']
    assert 'ACC-1' not in rules(w.verdict())


def test_invalid_arguments_are_a_tool_error_and_nothing_is_executed():
    w = World()

    async def t():
        async with w.client() as c:
            r = await c.call_tool('create_transfer', {'to': 'acct-9', 'amount': 'a lot'})
        assert r.is_error
        assert '/amount' in r.content[0].text

    run(t())
    assert w.actions() == []
    assert w.entries(event='invalid-arguments')


def test_an_unknown_tool_is_refused_as_a_json_rpc_error_and_recorded_not_executed():
    w = World()

    async def t():
        async with w.client() as c:
            with pytest.raises(MCPError) as e:
                await c.call_tool('refund_everything', {})
        assert e.value.error.code == -32602

    run(t())
    assert w.actions() == []
    [refusal] = w.entries(event='rpc-error')
    assert refusal['detail']['code'] == -32602


# ----------------------------------------------------------------------------------------------
# fates on the MCP wire


def test_rec_4_a_lost_answer_after_the_effect_is_looked_up_not_re_called():
    # The first lost_transfer takes effect and its connection closes with no answer: the client
    # only sees a transport failure. The ledger knows better; a lookup by key tells the agent.
    w = World()

    async def lost():
        async with w.client() as c:
            await c.call_tool('lost_transfer', {**TRANSFER, 'idempotency_key': 'k-3'})

    with pytest.raises(BaseException) as e:
        run(lost())
    assert transport_failure(e.value), e.value
    [entry] = w.actions()
    assert entry['applied'] is True and entry['response']['delivery'] == 'dropped'

    async def look_up():
        async with w.client() as c:
            return await c.call_tool('get_transfer', {'id': 'k-3'})

    found = run(look_up())
    assert not found.is_error, found.content
    assert 'ACC-1' not in rules(w.verdict()) and 'REC-4' not in rules(w.verdict())


def test_acc_1_rec_4_a_blind_re_call_after_a_lost_answer_executes_twice_and_is_found():
    w = World()

    async def call():
        async with w.client() as c:
            return await c.call_tool('lost_transfer', TRANSFER)

    with pytest.raises(BaseException):
        run(call())
    assert not run(call()).is_error
    assert [e['applied'] for e in w.actions()] == [True, True]
    assert {'ACC-1', 'REC-4'} <= rules(w.verdict())


def test_rec_4_a_lost_answer_on_an_event_stream_fails_the_call_and_keeps_the_client():
    # With `responses = "sse"` the headers go out, then the stream ends without the answer: the
    # client fails just that call (-32000) and stays usable, so a same-key retry replays.
    w = World()

    async def t():
        async with w.client('streaming') as c:
            with pytest.raises(MCPError) as e:
                await c.call_tool('lost_transfer', {**TRANSFER, 'idempotency_key': 'k-4'})
            assert e.value.error.code == -32000
            return await c.call_tool('lost_transfer', {**TRANSFER, 'idempotency_key': 'k-4'})

    retried = run(t())
    assert not retried.is_error
    entries = w.actions()
    assert [e['applied'] for e in entries].count(True) == 1, entries
    assert entries[1]['replay_of'] == entries[0]['seq']


def test_a_reset_after_the_effect_is_a_transport_failure_yet_the_ledger_says_applied():
    w = World()

    async def t():
        async with w.client() as c:
            await c.call_tool('reset_transfer', TRANSFER)

    with pytest.raises(BaseException) as e:
        run(t())
    assert transport_failure(e.value), e.value
    [entry] = w.actions()
    assert entry['applied'] is True and entry['response']['delivery'] == 'reset'


def test_a_delayed_answer_waits_for_the_scenario_clock():
    w = World()

    async def t(server: str):
        async with w.client(server) as c:
            call = asyncio.ensure_future(c.call_tool('slow_transfer', TRANSFER))
            await asyncio.sleep(0.3)
            assert not call.done(), 'answered before the clock moved'
            for _ in range(20):
                await w.advance('1s')
                if call.done():
                    break
                await asyncio.sleep(0.05)
            return await call

    for server in ('payments', 'streaming'):
        r = run(t(server))
        assert not r.is_error and r.structured_content['status'] == 'succeeded', server
    assert all(e['applied'] for e in w.actions())


def test_the_lie_is_a_tool_error_though_the_effect_happened():
    w = World()

    async def t():
        async with w.client() as c:
            return await c.call_tool('lying_transfer', TRANSFER)

    r = run(t())
    assert r.is_error
    [entry] = w.actions()
    assert entry['applied'] is True and entry['response']['status'] == 500


def test_rec_3_a_call_the_client_gave_up_on_still_took_effect():
    # The answer is held on the scenario clock; the client times out and (legacy) POSTs
    # notifications/cancelled, which the server ignores (`cancel = "ignore"`): the ledger says
    # the transfer was applied and its answer abandoned, so "cancelled" is no proof of "not done".
    w = World()

    async def t():
        async with w.client() as c:
            with pytest.raises(MCPError) as e:
                await c.call_tool('slow_transfer', TRANSFER, read_timeout_seconds=0.5)
            assert e.value.error.code == -32001  # the SDK's own timeout code
            await asyncio.sleep(0.3)  # let the cancellation notice (or the closed stream) arrive

    run(t())
    [entry] = w.actions()
    assert entry['applied'] is True
    if ERA == 'legacy':
        [cancel] = w.entries(event='cancelled')
        assert cancel['detail']['outcome'] == 'ignored'
        assert cancel['detail']['target'] == entry['detail']['mcp']['jsonrpc_id']


def test_acc_1_a_call_that_asks_for_confirmation_runs_once_after_the_answer():
    w = World()
    asked = []

    async def confirm(context, params):
        asked.append(params.message)
        return ElicitResult(action='accept', content={'ok': True})

    async def t():
        async with Client(
            f'{w.base}/mcp/payments', mode=MODE, read_timeout_seconds=10, elicitation_callback=confirm
        ) as c:
            return await c.call_tool('confirm_transfer', TRANSFER)

    result = run(t())
    assert not result.is_error
    [entry] = w.actions()
    assert entry['applied'] is True
    rounds = w.entries(event='input-required')
    if ERA == 'modern':
        # The client answered the question and re-sent the call with its requestState.
        assert asked == ['Send the transfer?']
        assert len(rounds) == 1
    else:
        assert asked == [] and rounds == []
    assert not rules(w.verdict()) & {'ACC-1', 'REC-4'}


@pytest.mark.skipif(ERA != 'legacy', reason='a 2025-11-25 core task: legacy sessions only')
def test_acc_1_acc_t_a_legacy_task_asks_on_its_tasks_result_stream_and_runs_once_accepted():
    """The 2025-11-25 task flow the SDK has no runtime for, driven through its public pieces: the
    tasked `tools/call` goes out beside the client (2.3.0 validates a `tools/call` result as a
    `CallToolResult`, so a `CreateTaskResult` fails its own validation) in the client's own
    session, whose id an httpx2 event hook reads; `tasks/result` goes through the session's
    `send_request`, and the server's `elicitation/create` on that stream reaches the client's
    elicitation callback, whose answer the client POSTs back itself."""
    import httpx2
    from pydantic import TypeAdapter

    from mcp import types
    from mcp.client.streamable_http import streamable_http_client

    w = World()
    url = f'{w.base}/mcp/payments'
    asked = []
    sessions = []

    async def confirm(context, params):
        asked.append((params.message, (params.meta or {}).get('io.modelcontextprotocol/related-task')))
        return ElicitResult(action='accept', content={'ok': True})

    async def seen(response):
        if sid := response.headers.get('mcp-session-id'):
            sessions.append(sid)

    async def answered_then_advance():
        # The work goes on for its 1 s only once the answer is in.
        for _ in range(100):
            if w.entries(event='task-update'):
                return await w.advance('1s')
            await asyncio.sleep(0.05)
        raise AssertionError('no answer reached the server')

    async def t():
        http = httpx2.AsyncClient(event_hooks={'response': [seen]}, timeout=10)
        transport = streamable_http_client(url, http_client=http)
        async with Client(transport, mode=MODE, read_timeout_seconds=10, elicitation_callback=confirm) as c:
            call = {'jsonrpc': '2.0', 'id': 'create-1', 'method': 'tools/call',
                    'params': {'name': 'confirm_task', 'arguments': TRANSFER, 'task': {'ttl': 60000}}}
            headers = {'mcp-session-id': sessions[-1], 'mcp-protocol-version': VERSION,
                       'accept': 'application/json, text/event-stream'}
            async with httpx.AsyncClient(timeout=10) as hc:
                created = (await hc.post(url, json=call, headers=headers)).json()
            task_id = created['result']['task']['taskId']
            request = types.GetTaskPayloadRequest(params=types.GetTaskPayloadRequestParams(task_id=task_id))
            result, _ = await asyncio.gather(
                c.session.send_request(request, TypeAdapter(dict)), answered_then_advance()
            )
            return task_id, result

    task_id, result = run(t())
    assert asked == [('Send the transfer?', {'taskId': task_id})]
    assert result['isError'] is False
    assert result['_meta']['io.modelcontextprotocol/related-task'] == {'taskId': task_id}
    [update] = w.entries(event='task-update')
    assert update['detail']['responses']['input']['action'] == 'accept'
    [entry] = w.actions()
    assert entry['applied'] is True and entry['detail']['mcp']['task_id'] == task_id
    assert not rules(w.verdict()) & {'ACC-1', 'REC-4'}
