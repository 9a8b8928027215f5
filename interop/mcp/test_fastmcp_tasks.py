"""Interop suite, part three: FastMCP 4.1.6 with fastmcp-tasks 4.1.4 (the 2026-07-28
`io.modelcontextprotocol/tasks` extension) against the fake server's task tools.

The scenario clock is manual: each test waits (on the ledger, not a sleep) until the client has
polled, then advances the clock so the task's work ends. A task's effect lands in the ledger when
its work ends, and a cancel the server ignores is acknowledged and then completed anyway.
Rule IDs (shared/spec/rules.md) per test.
"""

from __future__ import annotations

import asyncio
import os
import uuid

import httpx
import pytest

import fastmcp_tasks  # noqa: F401  (registers the tasks extension on every Client)
from fastmcp import Client
from fastmcp.client.elicitation import ElicitResult
from fastmcp_tasks.client import call_tool_task


URL = os.environ.get('DOUBLEAGENT_URL', '').rstrip('/')
pytestmark = pytest.mark.skipif(not URL, reason='DOUBLEAGENT_URL not set: run interop/mcp/run.sh')

TRANSFER = {'to': 'acct-9', 'amount': 100}


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, timeout=60))


def session() -> str:
    return f'{URL}/_s/t-{uuid.uuid4().hex[:10]}'


def ledger(base: str, **params) -> list[dict]:
    r = httpx.get(f'{base}/_admin/ledger', params=params, timeout=10)
    r.raise_for_status()
    return r.json()['entries']


def transfers(base: str) -> list[dict]:
    return [e for e in ledger(base, service='payments') if e.get('route')]


async def advance_once_polled(base: str, by: str, polls: int = 1) -> None:
    """Wait until the client has polled `polls` times, then move the clock on."""

    def wait_and_advance():
        r = httpx.get(
            f'{base}/_admin/ledger/wait',
            params={'event': 'task-get', 'count': polls, 'timeout': '15s'},
            timeout=20,
        )
        r.raise_for_status()
        httpx.post(f'{base}/_admin/clock/advance', json={'by': by}, timeout=10).raise_for_status()

    await asyncio.to_thread(wait_and_advance)


def client(base: str, **kw) -> Client:
    return Client(f'{base}/mcp/payments', timeout=10, **kw)


def test_acc_t_a_transparent_call_polls_its_task_and_the_effect_lands_when_it_completes():
    base = session()

    async def t():
        async with client(base) as c:
            result, _ = await asyncio.gather(
                c.call_tool('book_task', TRANSFER), advance_once_polled(base, '2s')
            )
        assert result.structured_content['status'] == 'succeeded'

    run(t())
    [entry] = transfers(base)
    assert entry['applied'] is True
    task_id = entry['detail']['mcp']['task_id']
    polls = ledger(base, event='task-get')
    assert polls and all(p['detail']['task_id'] == task_id for p in polls)
    assert polls[-1]['detail']['status'] == 'completed'


def test_rec_3_a_cancel_the_server_ignores_is_acknowledged_and_the_task_completes_anyway():
    base = session()

    async def t():
        async with client(base) as c:
            task = await call_tool_task(c, 'book_task', TRANSFER)
            assert (await task.status()).status == 'working'
            await task.cancel()
            await asyncio.to_thread(
                lambda: httpx.post(f'{base}/_admin/clock/advance', json={'by': '2s'}, timeout=10)
            )
            final = await task.status()
            return task.task_id, final.status

    task_id, status = run(t())
    assert status == 'completed'
    [entry] = transfers(base)
    assert entry['applied'] is True and entry['detail']['mcp']['task_id'] == task_id
    [cancel] = ledger(base, event='task-cancel')
    assert cancel['detail']['outcome'] == 'ignored'


def test_acc_t_a_task_asks_for_confirmation_and_runs_only_after_it_is_given():
    base = session()
    asked = []

    async def confirm(message, response_type, params, context):
        asked.append(message)
        return ElicitResult(action='accept', content={'ok': True})

    async def t():
        async with client(base, elicitation_handler=confirm) as c:
            # The first poll finds the question; after the answer, the work takes 1 s.
            result, _ = await asyncio.gather(
                c.call_tool('confirm_task', TRANSFER), advance_once_polled(base, '1s', polls=2)
            )
        assert result.structured_content['status'] == 'succeeded'

    run(t())
    assert asked == ['Send the transfer?']
    [update] = ledger(base, event='task-update')
    assert update['detail']['responses']['input']['action'] == 'accept'
    [entry] = transfers(base)
    assert entry['applied'] is True
