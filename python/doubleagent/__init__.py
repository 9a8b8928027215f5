"""doubleagent: plays the outside world for AI-agent orchestrators under test.

    with doubleagent.serve("scenarios/lost-response.toml") as server:
        t = server.session()
        ...  # point the code under test at t.service_url("payments")
        t.verify().assert_clean()

The wheel carries the `doubleagent` binary; `find_binary()` says which one runs. The pytest
plugin (`doubleagent.pytest_plugin`) is registered on install.
"""

from ._client import (
    AdminError,
    Entry,
    Finding,
    Server,
    Session,
    Verdict,
    find_binary,
    serve,
)

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
__version__ = "0.1.0"
