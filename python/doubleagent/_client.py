"""A typed client over doubleagent's admin API (standard library only).

`serve()` starts the binary on port 0 and reads its ready line; `Server.session()` hands out an
isolated world reached through the `/_s/NAME` URL prefix, so the code under test needs only a
base URL. Every admin call of a `Session` goes to `/_s/NAME/_admin/...`.
"""

from __future__ import annotations

import json
import os
import queue
import re
import shutil
import subprocess
import sysconfig
import tempfile
import threading
import urllib.error
import urllib.parse
import urllib.request
import uuid
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Union

__all__ = [
    "AdminError",
    "Entry",
    "Finding",
    "Server",
    "Session",
    "Verdict",
    "find_binary",
    "serve",
]

# Ledger filters the server applies itself (GET /_admin/ledger); any other keyword of
# `ledger(**filters)` is compared with the entry's field of that name here.
SERVER_FILTERS = ("service", "route", "key", "work_id", "since", "disposition", "event", "actor")

# The admin token a server takes from its environment when not given --admin-token.
TOKEN_ENV = "DOUBLEAGENT_ADMIN_TOKEN"


class AdminError(Exception):
    """The admin API answered with an error: `{"error": ..., "status": N}`."""

    def __init__(self, status: int, message: str, body: Any = None):
        super().__init__(f"{status}: {message}")
        self.status = status
        self.message = message
        self.body = body


@dataclass(frozen=True)
class Entry:
    """One ledger entry (see docs/ledger.md for every field)."""

    seq: int
    service: str
    method: str
    path: str
    disposition: str
    applied: bool
    route: Optional[str] = None
    received_at: str = ""
    idempotency_key: Optional[str] = None
    work_id: Optional[str] = None
    revision: Any = None
    body: Any = None
    fate: Optional[str] = None
    action_id: Optional[str] = None
    replay_of: Optional[int] = None
    status: Optional[int] = None
    """The response's status, if one was decided."""
    delivery: Optional[str] = None
    """How the response went out: sent, dropped, reset, ..."""
    actor: Optional[str] = None
    event: Optional[str] = None
    detail: Any = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The entry as the server sent it, every field included."""

    @classmethod
    def from_json(cls, e: Mapping[str, Any]) -> "Entry":
        response = e.get("response") or {}
        return cls(
            seq=e["seq"],
            service=e.get("service", ""),
            method=e.get("method", ""),
            path=e.get("path", ""),
            disposition=e.get("disposition", ""),
            applied=bool(e.get("applied")),
            route=e.get("route"),
            received_at=e.get("received_at", ""),
            idempotency_key=e.get("idempotency_key"),
            work_id=e.get("work_id"),
            revision=e.get("revision"),
            body=e.get("body"),
            fate=e.get("fate"),
            action_id=e.get("action_id"),
            replay_of=e.get("replay_of"),
            status=response.get("status"),
            delivery=response.get("delivery"),
            actor=e.get("actor"),
            event=e.get("event"),
            detail=e.get("detail"),
            raw=dict(e),
        )

    def get(self, name: str) -> Any:
        """A field by name: this class's, else the raw entry's."""
        if name in _ENTRY_FIELDS:
            return getattr(self, name)
        return self.raw.get(name)


_ENTRY_FIELDS = {f for f in Entry.__dataclass_fields__ if f != "raw"}


@dataclass(frozen=True)
class Finding:
    """A broken rule: its ID, what happened, the ledger seqs involved, what was expected."""

    rule: str
    summary: str
    entries: List[int]
    hint: str


@dataclass(frozen=True)
class Verdict:
    """The verifier's verdict over one session's ledger."""

    state: str
    """"clean", "findings" or "incomplete" (no findings, but not everything could be judged)."""
    clean: bool
    findings: List[Finding]
    entries: int
    claims: bool
    notes: List[str]
    text: str = ""
    """The verdict as `doubleagent verify` prints it (fetched when there are findings)."""
    report: Optional[Path] = None
    """Where the HTML timeline was written, if it was."""

    @property
    def rules(self) -> set:
        return {f.rule for f in self.findings}

    def assert_clean(self) -> None:
        """Raise AssertionError with the CLI's report unless there are no findings."""
        if not self.clean:
            msg = self.text.rstrip() or "\n".join(f"{f.rule}  {f.summary}" for f in self.findings)
            if self.report is not None:
                msg += f"\n\nHTML timeline: {self.report}"
            raise AssertionError(msg)

    def __bool__(self) -> bool:
        return self.clean


def _duration(d: Union[str, int, float, timedelta]) -> str:
    """A duration as the server reads it: "25h", "1500ms"; numbers are seconds."""
    if isinstance(d, str):
        return d
    if isinstance(d, timedelta):
        d = d.total_seconds()
    ms = round(float(d) * 1000)
    if ms < 0:
        raise ValueError(f"a duration cannot be negative: {d}")
    return f"{ms}ms"


def _seconds(d: Union[str, int, float, timedelta]) -> float:
    """How long a wait may take, in seconds: a string is the server's to read, and it waits
    at most 300 s."""
    if isinstance(d, str):
        return 300.0
    return d.total_seconds() if isinstance(d, timedelta) else float(d)


class _World:
    """What a server's default session and a named session share: URLs and admin calls."""

    url: str
    """The root URL of this world (`http://127.0.0.1:PORT` or `.../_s/NAME`)."""

    def __init__(self, url: str, ready: Mapping[str, Any], token: Optional[str]):
        self.url = url
        self._ready = dict(ready)
        self._token = token

    # -- URLs -------------------------------------------------------------------------------

    def service_url(self, name: str) -> str:
        """`URL/NAME`: where the code under test reaches fake service NAME."""
        return f"{self.url}/{self._known('services', name)}"

    def agent_url(self, name: str) -> str:
        """`URL/agents/NAME`: agent NAME (its card is below it, at `/.well-known/agent-card.json`)."""
        return f"{self.url}/agents/{self._known('agents', name)}"

    def _known(self, kind: str, name: str) -> str:
        names = self._ready.get(kind) or {}
        if name not in names:
            raise KeyError(f"the scenario has no {kind[:-1]} named {name!r}; it has: {', '.join(names) or 'none'}")
        return name

    # -- admin API --------------------------------------------------------------------------

    def _admin(
        self,
        method: str,
        path: str,
        query: Optional[Sequence[tuple]] = None,
        body: Any = None,
        timeout: float = 30.0,
        raw: bool = False,
    ) -> Any:
        url = f"{self.url}/_admin{path}"
        if query:
            url += "?" + urllib.parse.urlencode(list(query))
        data = None
        headers = {"accept": "application/json"}
        if body is not None:
            data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
            headers["content-type"] = "application/json"
        if self._token:
            headers["authorization"] = f"Bearer {self._token}"
        req = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                payload = r.read()
        except urllib.error.HTTPError as e:
            payload = e.read()
            try:
                doc = json.loads(payload)
                message = doc.get("error", payload.decode(errors="replace"))
            except ValueError:
                doc, message = None, payload.decode(errors="replace")
            raise AdminError(e.code, message, doc) from None
        if raw:
            return payload
        return json.loads(payload)

    def health(self) -> Dict[str, Any]:
        return self._admin("GET", "/health")

    def ledger(self, **filters: Any) -> List[Entry]:
        """The ledger's entries, oldest first. The server filters by service, route, key,
        work_id, since, disposition, event and actor; any other keyword is an entry field
        compared for equality (`applied=True`, `fate="respond"`, `status=201`)."""
        query, local = _split_filters(filters)
        doc = self._admin("GET", "/ledger", query)
        entries = [Entry.from_json(e) for e in doc["entries"]]
        return [e for e in entries if all(e.get(k) == v for k, v in local.items())]

    def wait_for(
        self, count: int = 1, timeout: Union[str, int, float, timedelta] = 10.0, **filters: Any
    ) -> List[Entry]:
        """Block until at least `count` entries match (server-side filters only), then return
        them; TimeoutError after `timeout` (seconds, a timedelta or "2s") of wall-clock time."""
        query, local = _split_filters(filters)
        if local:
            raise TypeError(
                f"wait_for filters on {', '.join(SERVER_FILTERS)}; not on {', '.join(local)}"
            )
        query += [("count", str(count)), ("timeout", _duration(timeout))]
        try:
            doc = self._admin("GET", "/ledger/wait", query, timeout=_seconds(timeout) + 30)
        except AdminError as e:
            if e.status == 408:
                raise TimeoutError(e.message) from None
            raise
        return [Entry.from_json(e) for e in doc["entries"]]

    def clock(self) -> Dict[str, Any]:
        return self._admin("GET", "/clock")

    def advance(self, by: Union[str, int, float, timedelta]) -> Dict[str, Any]:
        """Move the manual clock: `advance("25h")`, `advance(1.5)` (seconds), a timedelta."""
        return self._admin("POST", "/clock/advance", body={"by": _duration(by)})

    def reset(self) -> Dict[str, Any]:
        """A fresh world from the same scenario: empty ledger, keys, fates and clock."""
        return self._admin("POST", "/reset")

    def declare_revision(self, revision: Union[int, str], work_id: Optional[str] = None) -> Dict[str, Any]:
        """Record that instruction revision `revision` took over (for one work item, or all)."""
        return self._admin("POST", "/revision", body={"revision": revision, "work_id": work_id})

    def claims(
        self,
        actions: Iterable[Mapping[str, Any]] = (),
        tasks: Iterable[Mapping[str, Any]] = (),
        adopted: Iterable[str] = (),
    ) -> Dict[str, Any]:
        """The orchestrator's own account, judged by the verifier's ACC-3 checks:
        `claims(actions=[{"key": "k-1", "claim": "succeeded"}])`."""
        return self._admin(
            "POST",
            "/claims",
            body={"actions": list(actions), "tasks": list(tasks), "adopted": list(adopted)},
        )

    def verify(self) -> Verdict:
        """Run the verifier over this world's ledger (and claims)."""
        doc = self._admin("GET", "/verify")
        text = ""
        if not doc.get("clean", False):
            text = self._admin("GET", "/verify.txt", raw=True).decode(errors="replace")
        return Verdict(
            state=doc.get("state", "clean" if doc.get("clean") else "findings"),
            clean=bool(doc.get("clean")),
            findings=[
                Finding(rule=f["rule"], summary=f["summary"], entries=list(f["entries"]), hint=f["hint"])
                for f in doc.get("findings", [])
            ],
            entries=doc.get("entries", 0),
            claims=bool(doc.get("claims")),
            notes=list(doc.get("notes", [])),
            text=text,
        )

    def report_html(self, path: Union[str, os.PathLike]) -> Path:
        """Write the HTML timeline (ledger and verdict) to `path`; return it."""
        out = Path(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(self._admin("GET", "/report", raw=True))
        return out


# Fields of the raw entry that `Entry` does not lift out, still usable as filters.
_RAW_FIELDS = {"fingerprint", "intent", "body_truncated", "object_id", "executed_after_expiry", "applied_at", "cancelled_at"}


def _split_filters(filters: Mapping[str, Any]):
    query, local = [], {}
    for k, v in filters.items():
        if k in SERVER_FILTERS:
            query.append((k, str(v).lower() if isinstance(v, bool) else str(v)))
        elif k in _ENTRY_FIELDS or k in _RAW_FIELDS:
            local[k] = v
        else:
            known = sorted(set(SERVER_FILTERS) | _ENTRY_FIELDS | _RAW_FIELDS)
            raise TypeError(f"no ledger filter {k!r}; known: {', '.join(known)}")
    return query, local


# The server's rule for session names (they go into URLs as they are).
_SESSION_NAME = re.compile(r"[A-Za-z0-9._-]{1,64}")


class Session(_World):
    """A named session: its own ledger, keys, fates and clock, behind `/_s/NAME`."""

    def __init__(self, server: "Server", name: str):
        if not _SESSION_NAME.fullmatch(name):
            raise ValueError(f"bad session name {name!r}: use 1 to 64 letters, digits, '-', '_' or '.'")
        super().__init__(f"{server.url}/_s/{name}", server.ready, server._token)
        self.name = name
        self.server = server

    def drop(self) -> None:
        """End the session now (otherwise it expires after the server's --session-ttl)."""
        self.server._admin("POST", "/reset", [("session", self.name), ("drop", "true")])

    def __repr__(self) -> str:
        return f"Session({self.name!r}, url={self.url!r})"


def find_binary(explicit: Optional[Union[str, os.PathLike]] = None) -> str:
    """The binary to run: `explicit`, `$DOUBLEAGENT_BIN`, the one this package's wheel
    installed beside the interpreter, or `doubleagent` on PATH."""
    for candidate in (explicit, os.environ.get("DOUBLEAGENT_BIN")):
        if candidate:
            return os.fspath(candidate)
    exe = "doubleagent.exe" if os.name == "nt" else "doubleagent"
    beside = Path(sysconfig.get_path("scripts")) / exe
    if beside.is_file():
        return str(beside)
    on_path = shutil.which("doubleagent")
    if on_path:
        return on_path
    raise FileNotFoundError(
        "no doubleagent binary: install the doubleagent wheel, put doubleagent on PATH, "
        "or set DOUBLEAGENT_BIN"
    )


class Server(_World):
    """A running `doubleagent serve`: the default session's world, and `session()` for more.
    Use as a context manager (or call `stop()`)."""

    def __init__(
        self,
        scenario: Union[str, os.PathLike],
        *,
        binary: Optional[Union[str, os.PathLike]] = None,
        args: Sequence[str] = (),
        admin_token: Optional[str] = None,
        env: Optional[Mapping[str, str]] = None,
        startup_timeout: float = 30.0,
    ):
        self._tmp = None
        program = find_binary(binary)
        path = _scenario_path(scenario)
        if path is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="doubleagent-")
            path = Path(self._tmp.name) / "scenario.toml"
            path.write_text(os.fspath(scenario))
        self.scenario_path = path
        self._stderr = tempfile.TemporaryFile()
        cmd = [program, "serve", str(path), "--listen", "127.0.0.1:0", *args]
        if admin_token:
            cmd += ["--admin-token", admin_token]
        env = {**os.environ, "RUST_LOG": os.environ.get("RUST_LOG", "warn"), **(env or {})}
        # Without admin_token the server takes DOUBLEAGENT_ADMIN_TOKEN from its environment.
        token = admin_token or env.get(TOKEN_ENV) or None
        self.process = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env=env,
        )
        ready = self._read_ready(startup_timeout)
        super().__init__(ready["url"], ready, token)
        self.ready = ready
        """The ready line, parsed: url, scenario, services, agents."""

    def _read_ready(self, timeout: float) -> Dict[str, Any]:
        lines: "queue.Queue[bytes]" = queue.Queue()
        stdout = self.process.stdout
        assert stdout is not None

        def read() -> None:
            # The first line is the ready line (b"" if the server exits first); the rest is
            # drained so a full pipe never blocks the server.
            lines.put(stdout.readline())
            for _ in iter(stdout.readline, b""):
                pass

        threading.Thread(target=read, daemon=True, name="doubleagent-stdout").start()
        try:
            line = lines.get(timeout=timeout)
            ready = json.loads(line)
            if not isinstance(ready, dict) or ready.get("event") != "ready":
                raise ValueError(line)
            return ready
        except (queue.Empty, ValueError):
            log = self.stderr()
            if self._tmp is not None:  # the file is gone after stop(): name what it held
                log = log.replace(str(self.scenario_path), "<inline scenario>")
            self.stop()
            raise RuntimeError(
                f"doubleagent did not start (exit {self.process.returncode}); stderr:\n{log}"
            ) from None

    def stderr(self) -> str:
        """What the server wrote to stderr so far (its log)."""
        self._stderr.seek(0)
        return self._stderr.read().decode(errors="replace")

    def session(self, name: Optional[str] = None) -> Session:
        """An isolated world: a fresh one under a new unique name when `name` is None; the
        session NAME as it stands otherwise (created on first use). A name is 1 to 64 letters,
        digits, '-', '_' or '.' (ValueError otherwise)."""
        if name is None:
            name = f"t-{uuid.uuid4().hex[:16]}"
        s = Session(self, name)
        s.health()  # the server is up; the session itself is made by its first use
        return s

    def sessions(self) -> List[str]:
        return list(self._admin("GET", "/sessions")["sessions"])

    def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL after 10 s)."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def __enter__(self) -> "Server":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def __repr__(self) -> str:
        if not hasattr(self, "ready"):  # not started (yet, or ever)
            return f"Server(not running, scenario_path={getattr(self, 'scenario_path', None)!r})"
        return f"Server(url={self.url!r}, scenario={self.ready.get('scenario')!r})"


def _scenario_path(scenario: Union[str, os.PathLike]) -> Optional[Path]:
    """The scenario's file, or None when `scenario` is TOML text."""
    if isinstance(scenario, os.PathLike):
        return Path(scenario)
    if "\n" in scenario or "=" in scenario:
        return None
    return Path(scenario)


def serve(scenario: Union[str, os.PathLike], **kwargs: Any) -> Server:
    """Start `doubleagent serve` on 127.0.0.1 port 0 with `scenario` (a path, or TOML text) and
    wait for its ready line. Keyword arguments: binary, args (extra CLI flags), admin_token
    (default: DOUBLEAGENT_ADMIN_TOKEN, which the server reads too), env, startup_timeout. Use as `with doubleagent.serve(...) as server:`."""
    return Server(scenario, **kwargs)
