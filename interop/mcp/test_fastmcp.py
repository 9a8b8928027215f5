"""Interop suite, part two: FastMCP 4.1.6's client (on `mcp` 2.3.0) against the same fake server.

Started by run.sh with DOUBLEAGENT_URL, once (FastMCP picks the era itself). FastMCP raises
`ToolError` for a result with `isError`, so the lie and invalid arguments reach an agent as
exceptions; the ledger still says what took effect. Rule IDs (shared/spec/rules.md) per test.
"""

from __future__ import annotations

import asyncio
import os
import uuid

import httpx
import pytest

from fastmcp import Client
from fastmcp.exceptions import ToolError


URL = os.environ.get('DOUBLEAGENT_URL', '').rstrip('/')
pytestmark = pytest.mark.skipif(not URL, reason='DOUBLEAGENT_URL not set: run interop/mcp/run.sh')

TRANSFER = {'to': 'acct-9', 'amount': 100}


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, timeout=60))


def session() -> str:
    return f'{URL}/_s/f-{uuid.uuid4().hex[:10]}'


def actions(base: str) -> list[dict]:
    r = httpx.get(f'{base}/_admin/ledger', params={'service': 'payments'}, timeout=10)
    r.raise_for_status()
    return [e for e in r.json()['entries'] if e.get('route')]


def client(base: str) -> Client:
    return Client(f'{base}/mcp/payments', timeout=10)


def test_acc_1_fastmcp_lists_calls_and_replays_a_repeated_key():
    base = session()

    async def t():
        async with client(base) as c:
            tools = {t.name: t for t in await c.list_tools()}
            assert tools['create_transfer'].annotations.idempotent_hint is True
            first = await c.call_tool('create_transfer', {**TRANSFER, 'idempotency_key': 'f-1'})
            again = await c.call_tool('create_transfer', {**TRANSFER, 'idempotency_key': 'f-1'})
        assert first.structured_content == again.structured_content
        assert first.structured_content['status'] == 'succeeded'

    run(t())
    entries = actions(base)
    assert [e['applied'] for e in entries].count(True) == 1, entries
    assert entries[0]['detail']['mcp']['tool'] == 'create_transfer'


def test_the_lie_raises_tool_error_though_the_ledger_says_applied():
    base = session()

    async def t():
        async with client(base) as c:
            with pytest.raises(ToolError):
                await c.call_tool('lying_transfer', TRANSFER)
            # The raw result says the same, without raising.
            raw = await c.call_tool_mcp('lying_transfer', TRANSFER)
            assert raw.is_error

    run(t())
    assert [e['applied'] for e in actions(base)] == [True, True]


def test_invalid_arguments_raise_tool_error_and_execute_nothing():
    base = session()

    async def t():
        async with client(base) as c:
            with pytest.raises(ToolError) as e:
                await c.call_tool('create_transfer', {'to': 'acct-9'})
        assert 'amount' in str(e.value)

    run(t())
    assert actions(base) == []


def test_rec_4_a_lost_answer_is_an_error_to_fastmcp_and_an_effect_in_the_ledger():
    base = session()

    async def t():
        async with client(base) as c:
            await c.call_tool('lost_transfer', {**TRANSFER, 'idempotency_key': 'f-2'})

    with pytest.raises(BaseException):
        run(t())
    [entry] = actions(base)
    assert entry['applied'] is True and entry['response']['delivery'] == 'dropped'

    async def look_up():
        async with client(base) as c:
            return await c.call_tool('get_transfer', {'id': 'f-2'})

    assert not run(look_up()).is_error
