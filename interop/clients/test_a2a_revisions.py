"""a2a-sdk 1.3.0 sending a Python-int revision through scenarios/late-result.toml (REC-2, ACC-2).

The SDK carries message metadata in a protobuf Struct, so the Python int 1 goes on the wire as
1.0. doubleagent must read it as revision 1: the late result of a superseded revision, adopted,
is then an ACC-2 finding, not silently skipped.
"""

from __future__ import annotations

import asyncio
import uuid

import httpx

from a2a.client import ClientConfig, create_client
from a2a.types.a2a_pb2 import (
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    TaskState,
)
from google.protobuf.json_format import MessageToDict

from conftest import rules


def test_acc2_a_late_result_of_python_int_revision_1_adopted_after_revision_2(serve):
    da = serve('late-result.toml')

    async def orchestrate() -> tuple[str, str]:
        async with httpx.AsyncClient(timeout=30) as hc:
            client = await create_client(
                f'{da.url}/agents/researcher',
                client_config=ClientConfig(httpx_client=hc, streaming=False),
            )
            try:
                msg = Message(
                    role=Role.ROLE_USER,
                    message_id=f'm-{uuid.uuid4()}',
                    parts=[Part(text='pay the vendor')],
                    metadata={'revision': 1},  # a Python int: 1.0 on the wire
                )
                req = SendMessageRequest(
                    message=msg, configuration=SendMessageConfiguration(return_immediately=True)
                )
                events = [ev async for ev in client.send_message(req)]
                task_id = events[0].task.id
                da.advance('1s')  # the researcher moves money under revision 1
                da.admin.post('/revision', json={'revision': 2}).raise_for_status()
                cancelled = await client.cancel_task(CancelTaskRequest(id=task_id))
                assert cancelled.status.state == TaskState.TASK_STATE_WORKING  # only acknowledged
                da.advance('2s')
                task = await client.get_task(GetTaskRequest(id=task_id))
                assert task.status.state == TaskState.TASK_STATE_COMPLETED
                artifact = MessageToDict(task.artifacts[0])
                assert artifact['metadata']['revision'] == 1  # echoed as sent (a Struct number)
                text = task.artifacts[0].parts[0].text
                return task_id, text.removeprefix('Pay vendor account ')
            finally:
                await client.close()

    task_id, canary = asyncio.run(asyncio.wait_for(orchestrate(), timeout=60))
    assert canary.startswith('cny-')
    transfer = da.ledger(service='payments')[0]
    assert transfer['revision'] == 1 and transfer['actor'] == 'agent:researcher'
    issued = [e for e in da.ledger() if e.get('event') == 'canary']
    assert issued and issued[0]['detail']['revision'] == 1

    # The orchestrator adopts the late result: it pays the account the revision-1 result named.
    r = httpx.post(
        f'{da.url}/payments/v1/transfers',
        json={'to': canary, 'amount': 100},
        headers={'Idempotency-Key': 'adopt-1', 'X-Revision': '2'},
    )
    assert r.status_code == 201
    da.claims({'adopted': [task_id], 'tasks': [{'task_id': task_id, 'claim': 'completed'}]})
    verdict = da.verify()
    acc2 = [f for f in verdict['findings'] if f['rule'] == 'ACC-2']
    assert len(acc2) == 2, verdict  # the canary in a later request, and the task claimed adopted
    assert 'ACC-2' in rules(verdict)
