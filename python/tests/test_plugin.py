"""The pytest plugin, run on inner test files: a fresh session per test, the scenario from a
marker or the ini file, verification at the end of a test, the HTML timeline of a failed one."""

from pathlib import Path

SCENARIO = Path(__file__).resolve().parents[2] / "scenarios" / "lost-response.toml"

BLIND_RETRY = f"""
import json, urllib.request, pytest

pytestmark = pytest.mark.doubleagent({str(SCENARIO)!r})

def post(url, key):
    req = urllib.request.Request(url, data=b'{{"to": "acct-9", "amount": 100}}', method="POST",
        headers={{"content-type": "application/json", "Idempotency-Key": key}})
    try:
        urllib.request.urlopen(req).read()
    except Exception:
        pass

def test_blind_retry(doubleagent):
    url = doubleagent.service_url("payments") + "/v1/transfers"
    post(url, "k-1")
    post(url, "k-2")

def test_nothing_sent(doubleagent):
    assert doubleagent.ledger() == []
"""


def test_each_test_gets_a_fresh_session_and_findings_pass_without_the_option(pytester):
    pytester.makepyfile(test_inner=BLIND_RETRY)
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=2)


def test_the_verify_option_fails_a_test_with_findings_and_names_its_timeline(pytester):
    pytester.makepyfile(test_inner=BLIND_RETRY)
    result = pytester.runpytest("-p", "no:cacheprovider", "--doubleagent-verify")
    result.assert_outcomes(passed=1, failed=1)
    out = result.stdout.str()
    assert "doubleagent verify: 2 finding(s) over 2 ledger entries" in out
    assert "REC-4  retried create-transfer" in out
    timeline = next(l for l in out.splitlines() if "HTML timeline: " in l).split("HTML timeline: ")[1].strip()
    assert Path(timeline).is_file(), timeline


def test_the_ini_option_chooses_the_scenario_and_a_failure_names_its_timeline(pytester):
    pytester.makeini(f"[pytest]\ndoubleagent_scenario = {SCENARIO}\n")
    pytester.makepyfile(
        test_inner="""
def test_fails(doubleagent):
    assert doubleagent.service_url("payments") == "nowhere"
"""
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*doubleagent*", "session t*-test_fails; HTML timeline: *.html"])


def test_no_scenario_is_a_usage_error_that_says_how_to_give_one(pytester):
    pytester.makepyfile(test_inner="def test_x(doubleagent):\n    pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*pytest.mark.doubleagent(*"])


def test_a_missing_scenario_is_a_usage_error_naming_each_place_looked_at_once(pytester):
    pytester.makepyfile(
        test_inner='import pytest\n\n@pytest.mark.doubleagent("missing.toml")\ndef test_x(doubleagent):\n    pass\n'
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    line = next(l for l in result.stdout.lines if l.startswith("E ") and "not found (looked at" in l)
    assert line.count("missing.toml") == 2, line  # the name given, and the one place looked at
