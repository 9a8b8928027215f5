"""The Python client against the real binary: URLs, sessions, the ledger, the clock, the verdict."""

from datetime import timedelta
from pathlib import Path

import pytest
import urllib.error
import urllib.request
import json

import doubleagent

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"

TOML = """
name = "inline"
clock = "manual"

[services.payments]
[[services.payments.routes]]
name = "create-transfer"
method = "POST"
path = "/v1/transfers"
kind = "action"
respond = { status = 201, json = { id = "{{action.id}}" } }
"""


def post(url, body, key):
    req = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        method="POST",
        headers={"content-type": "application/json", "Idempotency-Key": key},
    )
    with urllib.request.urlopen(req) as r:
        return r.status


@pytest.fixture(scope="module")
def server():
    with doubleagent.serve(TOML) as s:
        yield s


def test_serve_takes_toml_text_and_names_its_urls(server):
    assert server.url.startswith("http://127.0.0.1:")
    assert server.ready["scenario"] == "inline"
    assert server.service_url("payments") == server.url + "/payments"
    with pytest.raises(KeyError, match="no service named 'paymnts'"):
        server.service_url("paymnts")


def test_a_session_is_its_own_world_behind_its_prefix(server):
    a, b = server.session(), server.session()
    assert a.url == f"{server.url}/_s/{a.name}"
    assert post(a.service_url("payments") + "/v1/transfers", {"n": 1}, "k-1") == 201
    assert [e.idempotency_key for e in a.ledger()] == ["k-1"]
    assert b.ledger() == []
    assert a.name in server.sessions()
    a.drop()
    assert a.name not in server.sessions()


def test_ledger_filters_on_the_server_and_on_entry_fields(server):
    t = server.session()
    post(t.service_url("payments") + "/v1/transfers", {"n": 1}, "k-1")
    post(t.service_url("payments") + "/v1/transfers", {"n": 2}, "k-2")
    assert [e.seq for e in t.ledger(key="k-2")] == [2]
    assert [e.status for e in t.ledger(applied=True)] == [201, 201]
    assert t.ledger(route="create-transfer", seq=1)[0].body == {"n": 1}
    with pytest.raises(TypeError, match="no ledger filter 'colour'"):
        t.ledger(colour="red")


def test_wait_for_returns_matching_entries_or_times_out(server):
    t = server.session()
    post(t.service_url("payments") + "/v1/transfers", {"n": 1}, "k-1")
    assert len(t.wait_for(1, service="payments", timeout=5)) == 1
    with pytest.raises(TimeoutError, match="1 of 2"):
        t.wait_for(2, timeout=0.05)
    # A duration string, as advance() takes, and a timedelta.
    assert len(t.wait_for(1, timeout="2s", service="payments")) == 1
    with pytest.raises(TimeoutError, match="1 of 2"):
        t.wait_for(2, timeout="50ms")
    with pytest.raises(TimeoutError, match="1 of 2"):
        t.wait_for(2, timeout=timedelta(milliseconds=50))


def test_the_clock_advances_per_session(server):
    t = server.session()
    assert t.advance("25h")["elapsed_ms"] == 25 * 3600 * 1000
    assert t.advance(1.5)["elapsed_ms"] == 25 * 3600 * 1000 + 1500
    assert server.clock()["elapsed_ms"] == 0


def test_revisions_claims_and_a_failing_verdict_read_like_the_cli(tmp_path):
    with doubleagent.serve(SCENARIOS / "lost-response.toml") as server:
        t = server.session()
        url = t.service_url("payments") + "/v1/transfers"
        with pytest.raises(Exception):
            post(url, {"to": "acct-9", "amount": 100}, "k-1")
        post(url, {"to": "acct-9", "amount": 100}, "k-2")
        assert t.declare_revision(2, work_id="w-1")["revision"] == 2
        t.claims(actions=[{"key": "k-2", "claim": "succeeded"}])
        verdict = t.verify()
        assert not verdict.clean and verdict.state == "findings"
        assert {"ACC-1", "REC-4"} <= verdict.rules
        f = next(f for f in verdict.findings if f.rule == "ACC-1")
        assert f.entries == [1, 2] and f.hint
        with pytest.raises(AssertionError) as failed:
            verdict.assert_clean()
        message = str(failed.value)
        assert message.startswith("doubleagent verify: ")
        assert "\nACC-1  " in message and "expected: " in message
        page = t.report_html(tmp_path / "t.html")
        assert "ACC-1" in page.read_text()
        t.reset()
        assert t.ledger() == [] and t.verify().clean
        t.verify().assert_clean()


def test_a_server_that_cannot_start_says_why(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("name = 3\n")
    with pytest.raises(RuntimeError, match="did not start"):
        doubleagent.serve(bad)


def test_the_admin_token_in_the_environment_is_the_clients_default(monkeypatch):
    # The spawned server takes DOUBLEAGENT_ADMIN_TOKEN from the environment it inherits (as
    # docs/staging.md says to set it); the client must send the same token.
    monkeypatch.setenv("DOUBLEAGENT_ADMIN_TOKEN", "env-tok")
    with doubleagent.serve(TOML) as server:
        t = server.session()
        assert t.ledger() == [] and t.verify().clean
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(server.url + "/_admin/ledger")
        assert refused.value.code == 401
    monkeypatch.delenv("DOUBLEAGENT_ADMIN_TOKEN")
    with doubleagent.serve(TOML, env={"DOUBLEAGENT_ADMIN_TOKEN": "given-tok"}) as server:
        assert server.session().ledger() == []


def test_a_session_name_is_checked_by_the_servers_rule_before_it_goes_into_a_url(server):
    # "x?y" reset nothing, "a/b" made session "a", "bad name" and "é" raised from http.client.
    for bad in ["x?y", "a/b", "bad name", "\u00e9", "", "x" * 65, "x#y", "x\n"]:
        with pytest.raises(ValueError, match="bad session name .*: use 1 to 64 letters"):
            server.session(bad)
    assert server.session("A-b_c.9").url.endswith("/_s/A-b_c.9")
    assert "a" not in server.sessions() and "x" not in server.sessions()


def test_a_failed_start_names_inline_toml_as_such_and_its_server_still_has_a_repr():
    with pytest.raises(RuntimeError, match="did not start") as failed:
        doubleagent.serve("name = 3\n")
    message = str(failed.value)
    # Not the temporary file it was written to, which is gone by now.
    assert "<inline scenario>:1:" in message and "doubleagent-" not in message, message
    servers = [e.locals["self"] for e in failed.traceback if isinstance(e.locals.get("self"), doubleagent.Server)]
    assert servers and repr(servers[0]).startswith("Server(not running"), servers
