# The example of the issue that asked for the pytest plugin, as written.
import httpx, pytest

pytestmark = pytest.mark.doubleagent("scenarios/lost-response.toml")

def test_blind_retry_is_caught(doubleagent):
    url = doubleagent.service_url("payments") + "/v1/transfers"
    body = {"to": "acct-9", "amount": 100}
    with pytest.raises(httpx.HTTPError):
        httpx.post(url, json=body, headers={"Idempotency-Key": "k-1"})
    httpx.post(url, json=body, headers={"Idempotency-Key": "k-2"})
    rules = {f.rule for f in doubleagent.verify().findings}
    assert {"ACC-1", "REC-4"} <= rules

def test_same_key_retry_is_clean(doubleagent):
    url = doubleagent.service_url("payments") + "/v1/transfers"
    body = {"to": "acct-9", "amount": 100}
    for _ in range(2):
        try:
            httpx.post(url, json=body, headers={"Idempotency-Key": "k-1"})
        except httpx.HTTPError:
            pass
    doubleagent.claims(actions=[{"key": "k-1", "claim": "succeeded"}])
    assert len(doubleagent.ledger(applied=True)) == 1
    doubleagent.verify().assert_clean()
