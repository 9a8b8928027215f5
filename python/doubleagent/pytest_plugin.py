"""The pytest plugin: one doubleagent server per scenario per test run, a fresh session per test.

    pytestmark = pytest.mark.doubleagent("scenarios/lost-response.toml")

    def test_something(doubleagent):          # a doubleagent.Session
        url = doubleagent.service_url("payments")

The scenario comes from the closest `doubleagent` marker (a path, or TOML text), else the
`doubleagent_scenario` ini option or `--doubleagent-scenario`. A relative path is looked up beside
the test file, then in the rootdir. With `--doubleagent-verify` (or `doubleagent_verify = true`,
or the marker's `verify=True`) a test whose session has findings fails with the verifier's
report. A failed test's report names its HTML timeline.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path
from typing import Dict, Iterator, Optional, Tuple

import pytest

from ._client import Server, Session, serve

_SESSION = pytest.StashKey[Tuple[Session, Path]]()
_counter = itertools.count(1)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("doubleagent")
    group.addoption(
        "--doubleagent-scenario",
        default=None,
        help="scenario for tests without a doubleagent marker (overrides the ini option)",
    )
    group.addoption(
        "--doubleagent-verify",
        action="store_true",
        default=None,
        help="verify every test's doubleagent session after the test; findings fail it",
    )
    parser.addini("doubleagent_scenario", "scenario for tests without a doubleagent marker", default="")
    parser.addini("doubleagent_verify", "verify every test's session after the test", type="bool", default=False)
    parser.addini("doubleagent_bin", "the doubleagent binary (default: $DOUBLEAGENT_BIN, the wheel's, PATH)", default="")
    parser.addini("doubleagent_args", "extra `doubleagent serve` flags", type="args", default=[])
    parser.addini("doubleagent_report_dir", "where failed tests' HTML timelines go (default: under pytest's basetemp)", default="")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "doubleagent(scenario, verify=None): the doubleagent scenario (a path or TOML text) "
        "for the `doubleagent` fixture; verify=True fails the test on findings",
    )


class _Servers:
    """The servers of this test run, one per scenario, started on first use."""

    def __init__(self, config: pytest.Config):
        self.config = config
        self.running: Dict[str, Server] = {}

    def get(self, scenario: str) -> Server:
        if scenario not in self.running:
            self.running[scenario] = serve(
                scenario,
                binary=self.config.getini("doubleagent_bin") or None,
                args=self.config.getini("doubleagent_args"),
            )
        return self.running[scenario]

    def stop(self) -> None:
        for s in self.running.values():
            s.stop()
        self.running.clear()


@pytest.fixture(scope="session")
def doubleagent_servers(pytestconfig: pytest.Config) -> Iterator[_Servers]:
    servers = _Servers(pytestconfig)
    try:
        yield servers
    finally:
        servers.stop()


def _scenario_of(request: pytest.FixtureRequest) -> str:
    config = request.config
    marker = request.node.get_closest_marker("doubleagent")
    given: Optional[str] = None
    bases = [Path(str(request.node.path)).parent, config.rootpath]
    if marker is not None:
        given = marker.kwargs.get("scenario", marker.args[0] if marker.args else None)
    if given is None:
        given = config.getoption("doubleagent_scenario") or None
        bases = [Path.cwd(), config.rootpath]
    if given is None:
        given = config.getini("doubleagent_scenario") or None
        bases = [config.inipath.parent if config.inipath else config.rootpath]
    if given is None:
        raise pytest.UsageError(
            "the doubleagent fixture needs a scenario: mark the test or module "
            '`pytest.mark.doubleagent("path/to/scenario.toml")`, or set `doubleagent_scenario` '
            "in the ini file"
        )
    given = str(given)
    if "\n" in given:
        return given  # TOML text
    path = Path(given)
    if path.is_absolute():
        return str(path)
    for base in bases:
        if (base / path).is_file():
            return str((base / path).resolve())
    tried = ", ".join(dict.fromkeys(str(b / path) for b in bases))  # each place once
    raise pytest.UsageError(f"doubleagent scenario {given!r} not found (looked at {tried})")


def _verify_wanted(item: pytest.Item) -> bool:
    marker = item.get_closest_marker("doubleagent")
    if marker is not None and marker.kwargs.get("verify") is not None:
        return bool(marker.kwargs["verify"])
    option = item.config.getoption("doubleagent_verify")
    if option is not None:
        return bool(option)
    return bool(item.config.getini("doubleagent_verify"))


@pytest.fixture
def doubleagent_server(request: pytest.FixtureRequest, doubleagent_servers: _Servers) -> Server:
    """The server running this test's scenario (its default session is shared by every test)."""
    return doubleagent_servers.get(_scenario_of(request))


@pytest.fixture
def doubleagent(
    request: pytest.FixtureRequest,
    doubleagent_server: Server,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Session]:
    """A fresh doubleagent session for this test: its own ledger, keys, fates and clock,
    behind its own URL."""
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", request.node.name).strip("-")[:40]
    session = doubleagent_server.session(f"t{next(_counter)}-{slug}")
    configured = request.config.getini("doubleagent_report_dir")
    reports = Path(configured) if configured else tmp_path_factory.getbasetemp() / "doubleagent"
    request.node.stash[_SESSION] = (session, reports / f"{session.name}.html")
    yield session
    try:
        session.drop()
    except Exception:  # the server may be gone already; the session dies with it
        pass


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    result = yield
    held = item.stash.get(_SESSION, None)
    if held is not None and _verify_wanted(item):
        session, report = held
        verdict = session.verify()
        if not verdict.clean:
            session.report_html(report)
            pytest.fail(
                f"doubleagent session {session.name} has findings:\n{verdict.text.rstrip()}\n\n"
                f"HTML timeline: {report}",
                pytrace=False,
            )
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    rep = yield
    held = item.stash.get(_SESSION, None)
    if held is not None and rep.when == "call" and rep.failed:
        session, report = held
        try:
            if not report.exists():
                session.report_html(report)
            rep.sections.append(("doubleagent", f"session {session.name}; HTML timeline: {report}"))
        except Exception as e:  # the report is a courtesy: never mask the test's own failure
            rep.sections.append(("doubleagent", f"session {session.name}; no HTML timeline: {e}"))
    return rep
