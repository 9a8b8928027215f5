"""Reference stand-in for `doubleagent serve` built on a2a-sdk 1.3.0's own server.

Why it exists: test_a2a.py targets doubleagent, which does not serve agents yet. Running the same
tests against the SDK's reference server (DefaultRequestHandlerV2 + its JSON-RPC/SSE routes) checks
that the tests use the client correctly and that what they expect is what a conformant server
does on the wire. Only the scenario-specific parts are added here: the manual clock, the three
cancel policies, revision echo and canaries, mounted at doubleagent's paths.

Usage (same contract as doubleagent): `python ref_server.py serve SCENARIO.toml --listen 127.0.0.1:0`
prints one JSON line `{"event":"ready","url":...}` on stdout once listening.
Set A2A_CAPTURE=/path/file.jsonl to record every HTTP exchange (headers, bodies, SSE bytes).

Needs `a2a-sdk[http-server]==1.3.0` and uvicorn (run.sh installs them only for --reference).
"""

import argparse
import asyncio
import json
import os
import re
import socket
import sys
import tomllib
import uuid

import httpx
import uvicorn

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.request_handlers import DefaultRequestHandlerV2
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import (
    BasePushNotificationSender,
    InMemoryPushNotificationConfigStore,
    InMemoryTaskStore,
    TaskUpdater,
)
from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Part,
    Task,
    TaskState,
    TaskStatus,
)
from a2a.utils.errors import TaskNotCancelableError, TaskNotFoundError
from google.protobuf import struct_pb2
from google.protobuf.json_format import ParseDict

TERMINAL = {
    TaskState.TASK_STATE_COMPLETED,
    TaskState.TASK_STATE_FAILED,
    TaskState.TASK_STATE_CANCELED,
    TaskState.TASK_STATE_REJECTED,
}


def parse_duration(s: str) -> float:
    m = re.fullmatch(r'(\d+(?:\.\d+)?)(ms|s|m|h)', s.strip())
    if not m:
        raise ValueError(f'bad duration {s!r}')
    return float(m.group(1)) * {'ms': 0.001, 's': 1, 'm': 60, 'h': 3600}[m.group(2)]


class ManualClock:
    """Scenario time that only moves through the admin API."""

    def __init__(self) -> None:
        self.now = 0.0
        self._cond = asyncio.Condition()

    async def advance(self, by: float) -> None:
        async with self._cond:
            self.now += by
            self._cond.notify_all()
        # doubleagent's advance returns once woken sleepers have run; give the executors a
        # moment to do the same here (tests poll anyway).
        await asyncio.sleep(0.1)

    async def sleep_until(self, t: float) -> None:
        async with self._cond:
            await self._cond.wait_for(lambda: self.now >= t)


def expand(value, canary: str):
    if isinstance(value, str):
        return value.replace('{{canary}}', canary)
    if isinstance(value, dict):
        return {k: expand(v, canary) for k, v in value.items()}
    if isinstance(value, list):
        return [expand(v, canary) for v in value]
    return value


class ScriptedExecutor(AgentExecutor):
    def __init__(self, name: str, cfg: dict, clock: ManualClock) -> None:
        self.name = name
        self.work = parse_duration(cfg.get('work', '0s'))
        self.result = cfg.get('result', {})
        self.revision_key = cfg.get('revision_key', 'revision')
        self.clock = clock

    async def execute(self, context: RequestContext, event_queue) -> None:
        msg = context.message
        meta = {}
        if msg is not None and self.revision_key in msg.metadata:
            meta['revision'] = msg.metadata[self.revision_key]
        task = context.current_task
        if task is None:
            task = Task(
                id=context.task_id,
                context_id=context.context_id,
                status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED),
                history=[msg] if msg is not None else [],
            )
            await event_queue.enqueue_event(task)
        up = TaskUpdater(event_queue, context.task_id, context.context_id)
        start = self.clock.now
        await up.update_status(TaskState.TASK_STATE_WORKING, metadata=meta or None)
        await self.clock.sleep_until(start + self.work)
        canary = 'cny-' + uuid.uuid4().hex[:12]
        parts = []
        if 'text' in self.result:
            parts.append(Part(text=expand(self.result['text'], canary)))
        if 'data' in self.result:
            parts.append(Part(data=ParseDict(expand(self.result['data'], canary), struct_pb2.Value())))
        await up.add_artifact(parts, name='result', metadata=meta or None)
        await up.update_status(TaskState.TASK_STATE_COMPLETED, metadata=meta or None)

    async def cancel(self, context: RequestContext, event_queue) -> None:
        up = TaskUpdater(event_queue, context.task_id, context.context_id)
        await up.cancel()


class PolicyHandler(DefaultRequestHandlerV2):
    """DefaultRequestHandlerV2 always cancels; too-late and ack-then-complete need other answers."""

    def __init__(self, policy: str, **kw) -> None:
        super().__init__(**kw)
        self.policy = policy

    async def on_cancel_task(self, params, context):
        if self.policy == 'honor':
            return await super().on_cancel_task(params, context)
        stored = await self._versioned_store.get(params.id, context)
        if stored is None:
            raise TaskNotFoundError
        if self.policy == 'too-late' or stored.task.status.state in TERMINAL:
            raise TaskNotCancelableError
        return stored.task  # ack-then-complete: still working, keeps going


def build_app(scenario: dict, base_url_holder: dict) -> Starlette:
    clock = ManualClock()
    push_client = httpx.AsyncClient(timeout=10)
    routes = []
    for name, cfg in scenario.get('agents', {}).items():
        card = AgentCard(
            name=name,
            description=f'doubleagent scripted A2A agent {name}',
            supported_interfaces=[
                AgentInterface(url='http://placeholder', protocol_binding='JSONRPC', protocol_version='1.0')
            ],
            version='0.1.0',
            capabilities=AgentCapabilities(streaming=True, push_notifications=True),
            default_input_modes=['text/plain'],
            default_output_modes=['text/plain', 'application/json'],
            skills=[AgentSkill(id='scripted', name='Scripted', description='scripted behaviour', tags=['doubleagent'])],
        )
        store = InMemoryTaskStore()
        push_store = InMemoryPushNotificationConfigStore()
        handler = PolicyHandler(
            cfg.get('cancel', 'honor'),
            agent_executor=ScriptedExecutor(name, cfg, clock),
            task_store=store,
            agent_card=card,
            push_config_store=push_store,
            push_sender=BasePushNotificationSender(push_client, push_store),
        )

        async def modifier(c: AgentCard, _name=name) -> AgentCard:
            out = AgentCard()
            out.CopyFrom(c)
            out.supported_interfaces[0].url = f"{base_url_holder['url']}/agents/{_name}"
            return out

        routes += create_agent_card_routes(
            card, card_modifier=modifier, card_url=f'/agents/{name}/.well-known/agent-card.json'
        )
        routes += create_jsonrpc_routes(handler, rpc_url=f'/agents/{name}')

    async def advance(request: Request):
        body = await request.json()
        await clock.advance(parse_duration(body['by']))
        return JSONResponse({'now': f'{clock.now}s'})

    routes.append(Route('/_admin/clock/advance', advance, methods=['POST']))
    app = Starlette(routes=routes)
    cap = os.environ.get('A2A_CAPTURE')
    return CaptureMiddleware(app, cap) if cap else app


class CaptureMiddleware:
    """Records raw HTTP exchanges so the wire can be compared with doubleagent's later."""

    def __init__(self, app, path: str) -> None:
        self.app = app
        self.path = path

    async def __call__(self, scope, receive, send):
        if scope['type'] != 'http':
            return await self.app(scope, receive, send)
        rec = {
            'method': scope['method'],
            'path': scope['path'],
            'req_headers': {k.decode(): v.decode() for k, v in scope['headers']},
            'req_body': b'',
            'status': None,
            'resp_headers': {},
            'resp_body': b'',
        }

        async def rcv():
            m = await receive()
            if m['type'] == 'http.request':
                rec['req_body'] += m.get('body', b'')
            return m

        async def snd(m):
            if m['type'] == 'http.response.start':
                rec['status'] = m['status']
                rec['resp_headers'] = {k.decode(): v.decode() for k, v in m['headers']}
            elif m['type'] == 'http.response.body':
                rec['resp_body'] += m.get('body', b'')
            await send(m)

        try:
            await self.app(scope, rcv, snd)
        finally:
            rec['req_body'] = rec['req_body'].decode('utf-8', 'replace')
            rec['resp_body'] = rec['resp_body'].decode('utf-8', 'replace')
            with open(self.path, 'a') as f:
                f.write(json.dumps(rec) + '\n')


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument('cmd', choices=['serve'])
    ap.add_argument('scenario')
    ap.add_argument('--listen', default='127.0.0.1:0')
    a = ap.parse_args()
    with open(a.scenario, 'rb') as f:
        scenario = tomllib.load(f)
    host, port = a.listen.rsplit(':', 1)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, int(port)))
    url = f'http://{host}:{sock.getsockname()[1]}'
    holder = {'url': url}
    app = build_app(scenario, holder)
    server = uvicorn.Server(uvicorn.Config(app, log_level='warning'))
    started = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        await asyncio.sleep(0.05)
    print(json.dumps({'event': 'ready', 'url': url, 'scenario': scenario.get('name')}), flush=True)
    await started


if __name__ == '__main__':
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        sys.exit(0)
