"""stripe-python 16.1.0 against scenarios/stripe-payments.toml (REC-4, ACC-1, ACC-3).

The SDK is pointed at doubleagent with `stripe.api_base = <url>/payments`: 16.1.0 builds each
request URL as api_base + "/v1/...", so the service's mount path is kept. The scenario picks the
fate by `metadata[fate]`; every test has its own server, so its ledger and verdict are its own.
"""

from __future__ import annotations

import pytest
import stripe

from conftest import rules


@pytest.fixture
def payments(serve):
    da = serve('stripe-payments.toml')
    stripe.api_key = 'sk_test_doubleagent'
    stripe.api_base = f'{da.url}/payments'
    stripe.max_network_retries = 0
    return da


def create(fate: str | None = None, **kw):
    metadata = {'order': '7'}
    if fate:
        metadata['fate'] = fate
    return stripe.PaymentIntent.create(amount=kw.pop('amount', 100), currency='usd', metadata=metadata, **kw)


@pytest.mark.parametrize('fate,route', [('drop', 'create-dropped'), ('reset', 'create-reset')])
def test_rec4_sdk_retries_a_lost_response_with_its_own_key_and_it_applies_once(payments, fate, route):
    stripe.max_network_retries = 2
    pi = create(fate)
    assert pi.id == 'pi_1'
    assert pi.object == 'payment_intent'
    entries = payments.ledger(route=route)
    # The SDK retried once, with the key it generated for the call: replayed, not executed again.
    assert [e['disposition'] for e in entries] == ['executed', 'replayed']
    assert len({e['idempotency_key'] for e in entries}) == 1
    assert entries[0]['response']['delivery'] == {'drop': 'dropped', 'reset': 'reset'}[fate]
    assert sum(e['applied'] for e in entries) == 1
    # The form body was read: the intent holds the values, not nulls.
    assert entries[0]['intent'] == {'/amount': '100', '/currency': 'usd', '/metadata/order': '7'}
    assert entries[0]['raw_body'].startswith('amount=100')
    verdict = payments.verify()
    assert verdict['state'] == 'clean', verdict
    assert rules(verdict) == []


def test_acc3_sdk_retries_a_lying_500_gets_it_replayed_and_raises_api_error(payments):
    stripe.max_network_retries = 2
    with pytest.raises(stripe.APIError) as e:
        create('error500')
    assert e.value.http_status == 500
    entries = payments.ledger(route='create-lying-500')
    # Stripe caches 500s: both SDK retries (same key) get the same 500 back; it applied once.
    assert [e['disposition'] for e in entries] == ['executed', 'replayed', 'replayed']
    assert [e['response']['status'] for e in entries] == [500, 500, 500]
    assert sum(e['applied'] for e in entries) == 1
    key = entries[0]['idempotency_key']
    # The client never learned the outcome: without claims the verdict cannot be clean.
    verdict = payments.verify()
    assert verdict['state'] == 'incomplete', verdict
    # Reporting the APIError as a failure is contradicted by the ledger (it took effect).
    payments.claims({'actions': [{'key': key, 'claim': 'failed'}]})
    verdict = payments.verify()
    assert rules(verdict) == ['ACC-3'], verdict


def test_acc3_a_lying_500_reported_as_unknown_is_clean(payments):
    stripe.max_network_retries = 2
    with pytest.raises(stripe.APIError):
        create('error500', idempotency_key='order-7')
    payments.claims({'actions': [{'key': 'order-7', 'claim': 'unknown'}]})
    verdict = payments.verify()
    assert verdict['state'] == 'clean', verdict


def test_rec4_a_new_key_after_the_sdk_gave_up_on_a_lying_500_is_flagged(payments):
    stripe.max_network_retries = 2
    with pytest.raises(stripe.APIError):
        create('error500')
    # The application retries the payment itself: the SDK makes a fresh key.
    create('error500')
    verdict = payments.verify()
    assert {'ACC-1', 'REC-4'} <= set(rules(verdict)), verdict


def test_rec4_a_key_reused_for_another_amount_raises_idempotency_error(payments):
    create(idempotency_key='k-1')
    with pytest.raises(stripe.IdempotencyError) as e:
        create(amount=200, idempotency_key='k-1')
    assert e.value.http_status == 400
    entries = payments.ledger()
    assert [e['disposition'] for e in entries] == ['executed', 'mismatch']
    assert sum(e['applied'] for e in entries) == 1
    assert 'REC-4' in rules(payments.verify())


def test_retrieve_finds_the_payment_intent_by_its_own_id(payments):
    pi = create()
    got = stripe.PaymentIntent.retrieve(pi.id)
    assert isinstance(got, stripe.PaymentIntent)
    assert got.id == 'pi_1'
    assert got.amount == '100'  # a form value is a string: the template copies it as received
    assert got.currency == 'usd'
    assert got.metadata['doubleagent_state'] == 'applied'
    assert payments.ledger()[-1]['disposition'] == 'lookup'


@pytest.mark.parametrize(
    'call,error,status',
    [
        (lambda: create('declined'), stripe.CardError, 402),
        (lambda: create('throttled'), stripe.RateLimitError, 429),
        (lambda: stripe.PaymentIntent.retrieve('pi_999'), stripe.InvalidRequestError, 404),
        (lambda: stripe.Customer.create(email='a@b.test'), stripe.InvalidRequestError, 404),
        (lambda: create('error500'), stripe.APIError, 500),
    ],
    ids=['402-card', '429-rate-limit', '404-lookup-miss', '404-unmatched', '500-api'],
)
def test_each_doubleagent_error_raises_the_right_stripe_error(payments, call, error, status):
    with pytest.raises(error) as e:
        call()
    assert type(e.value) is error
    assert e.value.http_status == status
    assert e.value.error is not None and e.value.error.type, e.value.json_body
