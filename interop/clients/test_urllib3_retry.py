"""urllib3's Retry with a fixed Idempotency-Key against lost responses (REC-4, ACC-1).

urllib3 retries a POST after a dropped or reset connection once POST is in allowed_methods; the
key is the caller's and stays fixed, so the retry is replayed and the verdict is clean.
"""

from __future__ import annotations

import json

import pytest
import urllib3
from urllib3.util.retry import Retry

from conftest import rules


@pytest.mark.parametrize('fate,delivery', [('drop', 'dropped'), ('reset', 'reset')])
def test_rec4_urllib3_retry_with_a_fixed_key_is_replayed_and_clean(serve, fate, delivery):
    da = serve('stripe-payments.toml')
    retry = Retry(total=3, backoff_factor=0, allowed_methods=frozenset({'POST'}))
    http = urllib3.PoolManager(retries=retry)
    body = {'amount': 100, 'currency': 'usd', 'metadata': {'order': '7', 'fate': fate}}
    r = http.request(
        'POST',
        f'{da.url}/payments/v1/payment_intents',
        body=json.dumps(body),
        headers={'Content-Type': 'application/json', 'Idempotency-Key': 'order-7'},
    )
    assert r.status == 200
    assert r.headers.get('Idempotent-Replayed') == 'true'
    assert json.loads(r.data)['id'] == 'pi_1'
    entries = da.ledger(service='payments')
    assert [e['disposition'] for e in entries] == ['executed', 'replayed']
    assert entries[0]['response']['delivery'] == delivery
    assert {e['idempotency_key'] for e in entries} == {'order-7'}
    verdict = da.verify()
    assert verdict['state'] == 'clean', verdict
    assert rules(verdict) == []
