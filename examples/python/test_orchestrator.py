"""The orchestrator's own suite: each test gets a fresh doubleagent session (its own ledger,
keys, fates and clock) behind its own URL, so the code under test needs only that URL."""

import pytest

from orchestrator import pay, pay_safely

pytestmark = pytest.mark.doubleagent("scenarios/lost-response.toml")


def test_the_blind_retry_pays_twice(doubleagent):
    pay(doubleagent.service_url("payments"), "acct-9", 100)
    assert len(doubleagent.ledger(service="payments", applied=True)) == 2
    verdict = doubleagent.verify()
    assert "ACC-1" in verdict.rules
    with pytest.raises(AssertionError, match="ACC-1"):
        verdict.assert_clean()


@pytest.mark.doubleagent("scenarios/lost-response.toml", verify=True)
def test_the_same_key_retry_pays_once(doubleagent):
    # verify=True: the plugin fails this test if its session has any finding.
    done = pay_safely(doubleagent.service_url("payments"), "acct-9", 100)
    doubleagent.claims(actions=[{"key": done["key"], "claim": "succeeded"}])
    replay = doubleagent.ledger(disposition="replayed")
    assert [e.replay_of for e in replay] == [1]


def test_sessions_do_not_share_keys_or_fates(doubleagent, doubleagent_server):
    # Another session's first attempt is dropped too: fates start over per session.
    other = doubleagent_server.session()
    pay_safely(other.service_url("payments"), "acct-9", 100)
    assert doubleagent.ledger() == []
    assert len(other.ledger()) == 2


def test_the_clock_is_the_sessions_own(doubleagent):
    before = doubleagent.clock()["elapsed_ms"]
    doubleagent.advance("25h")
    assert doubleagent.clock()["elapsed_ms"] == before + 25 * 3600 * 1000
    entries = doubleagent.wait_for(0, timeout=1)
    assert entries == []
