"""Which sandboxed processes are this test's own, for the "nothing left running" checks.

Listing every process on the machine that runs the harness counts the sandboxes of other test
workers, notebooks and other checkouts as ours (issue 22's suite failed that way on a shared
machine). As root every run has a fresh uid of its own, so a test records the uids the sandbox
hands out and looks only for processes of those uids. Without root (no uid drop) it falls back
to harness processes of our own uid.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from coding_agent import sandbox

HARNESS_MARK = b"payload = json.loads(sys.stdin.read())"
HANDED_OUT: set[int] = set()


def record_uids(monkeypatch: pytest.MonkeyPatch) -> None:
    """From now on, remember every uid the sandbox hands to a run (reset per test)."""
    HANDED_OUT.clear()
    real = sandbox._sandbox_uid

    def recorded() -> int:
        uid = real()
        HANDED_OUT.add(uid)
        return uid

    monkeypatch.setattr(sandbox, "_sandbox_uid", recorded)


def our_sandbox_processes() -> list[int]:
    """Pids of processes still running for this test's sandbox runs."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            owner = entry.stat().st_uid
            if owner in HANDED_OUT or (owner == os.getuid() and HARNESS_MARK in (entry / "cmdline").read_bytes()):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def wait_until_gone(seconds: float = 5.0) -> list[int]:
    deadline = time.monotonic() + seconds
    while our_sandbox_processes() and time.monotonic() < deadline:
        time.sleep(0.1)
    return our_sandbox_processes()
