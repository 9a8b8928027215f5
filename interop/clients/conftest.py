"""Shared fixture of the real-clients suite: a doubleagent per test, on 127.0.0.1:0.

run.sh exports DOUBLEAGENT_BIN and DOUBLEAGENT_SCENARIOS (the repository's scenarios/). Each test
gets its own server so that its ledger and verdict are its own; the URL comes from the ready line.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading

import httpx
import pytest

BIN = os.environ.get('DOUBLEAGENT_BIN', '')
SCENARIOS = os.environ.get('DOUBLEAGENT_SCENARIOS', '')


class Doubleagent:
    def __init__(self, scenario: str):
        self.proc = subprocess.Popen(
            [BIN, 'serve', os.path.join(SCENARIOS, scenario), '--listen', '127.0.0.1:0'],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f'doubleagent exited before its ready line (rc {self.proc.wait()})')
        ready = json.loads(line)
        assert ready['event'] == 'ready', ready
        self.url = ready['url'].rstrip('/')
        # Keep draining stdout so the server never blocks on a full pipe.
        threading.Thread(target=self.proc.stdout.read, daemon=True).start()
        self.admin = httpx.Client(base_url=f'{self.url}/_admin', timeout=30)

    def ledger(self, **filters) -> list[dict]:
        r = self.admin.get('/ledger', params=filters)
        r.raise_for_status()
        return r.json()['entries']

    def verify(self) -> dict:
        r = self.admin.get('/verify')
        r.raise_for_status()
        return r.json()

    def claims(self, claims: dict) -> None:
        self.admin.post('/claims', json=claims).raise_for_status()

    def advance(self, by: str) -> None:
        self.admin.post('/clock/advance', json={'by': by}).raise_for_status()

    def close(self) -> None:
        self.admin.close()
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def rules(verdict: dict) -> list[str]:
    return sorted(f['rule'] for f in verdict['findings'])


@pytest.fixture
def serve():
    if not BIN:
        pytest.skip('DOUBLEAGENT_BIN not set: run interop/clients/run.sh')
    started: list[Doubleagent] = []

    def start(scenario: str) -> Doubleagent:
        d = Doubleagent(scenario)
        started.append(d)
        return d

    yield start
    for d in started:
        d.close()
