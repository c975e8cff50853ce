"""pytest plugin (loaded first, with `-p checkout_unchanged_plugin`): a test run leaves the checkout as it found it.

- Figures: `nb.save_figure` writes into `figures/`, which is committed. A fresh clone's
  `make test` rewrote figures/07_token_shares.png (another CPU draws its bars a few pixels
  apart), so the suite changed the checkout it tested. Before anything reads the setting
  (mtrl_course.config reads MTRL_FIGURES_DIR once, at import; nbval's kernels and every
  subprocess inherit this environment), MTRL_FIGURES_DIR points at a temporary folder of this
  session's own, removed at its end. xdist workers, and pytest sessions that a test starts, keep
  the folder (or whatever other folder) their parent chose.
- The check: the controlling process (not an xdist worker) records `git status --porcelain`,
  untracked files included and ignored ones not, with a hash of each listed file's content, when
  the session starts, and at its end fails the session (exit status 1) naming every path whose
  status or content changed. Edits that were there before the run are compared by content, so a
  developer's own uncommitted work does not fail the run, but a test that changes such a file
  again does. Outside a git checkout (an sdist) there is nothing to compare and the check is off.
  Only git-ignored places (.state/, build/, .cache/, notebooks/mtrl_eval_pipeline_input.json)
  may receive what a test run writes.

This module imports nothing of the course's: it must be loaded before anything imports
mtrl_course.config.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

import pytest
from _pytest.terminal import TerminalReporter

FIGURES_ENV_VAR = "MTRL_FIGURES_DIR"  # = mtrl_course.config's
# Set when a test session chose the figures folder: xdist workers and nested sessions keep it.
OURS_ENV_VAR = "MTRL_FIGURES_DIR_FROM_TESTS"
# `MTRL_CHECKOUT_CHECK=off` skips the check (for a developer who edits files while the suite
# runs, which the check cannot tell from a test's writes). CI never sets it.
CHECK_ENV_VAR = "MTRL_CHECKOUT_CHECK"
GIT_TIMEOUT_S = 60

_created_figures_dir: Path | None = None
_owner: list[pytest.Config] = []  # the session that removes the folder: the first one configured here
if os.environ.get(OURS_ENV_VAR) != "1":
    _created_figures_dir = Path(tempfile.mkdtemp(prefix="mtrl-test-figures-"))
    os.environ[FIGURES_ENV_VAR] = str(_created_figures_dir)
    os.environ[OURS_ENV_VAR] = "1"

# A snapshot: each path `git status` lists (relative to the top of the work tree) -> its
# two-letter status and a digest of what is on disk there.
Snapshot = dict[str, tuple[str, str]]
_before = pytest.StashKey[tuple[Path, Snapshot]]()
_changed = pytest.StashKey[list[str]]()


def _git(top: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # --no-optional-locks: never write the index (another git process may hold its lock).
    return subprocess.run(
        ["git", "--no-optional-locks", *args], cwd=top, capture_output=True, text=True, timeout=GIT_TIMEOUT_S
    )


def work_tree(start: Path) -> Path | None:
    """The top of the git work tree holding `start`, or None (no git, or not a checkout)."""
    if shutil.which("git") is None:
        return None
    try:
        found = _git(start, "rev-parse", "--show-toplevel")
    except (OSError, subprocess.SubprocessError):
        return None
    return Path(found.stdout.strip()) if found.returncode == 0 and found.stdout.strip() else None


def digest(path: Path) -> str:
    """What is on disk at `path`: "absent", a symlink's target, "directory", or a hash of the bytes."""
    if path.is_symlink():
        return f"symlink to {os.readlink(path)}"
    if not path.exists():
        return "absent"
    if path.is_dir():  # a nested repository, which git lists as one untracked entry
        return "directory"
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError as error:  # unreadable: compare the error, not nothing
        return f"unreadable ({error.strerror})"


def snapshot(top: Path) -> Snapshot:
    """`git status --porcelain`, every untracked file listed on its own, with each file's digest."""
    listed = _git(top, "status", "--porcelain=v1", "-z", "--untracked-files=all")
    if listed.returncode != 0:
        raise RuntimeError(f"git status failed in {top}: {listed.stderr.strip()}")
    fields = listed.stdout.split("\0")
    found: Snapshot = {}
    index = 0
    while index < len(fields):
        entry = fields[index]
        index += 1
        if len(entry) < 4:
            continue
        status, path = entry[:2], entry[3:]
        if status[0] in "RC":  # a rename or copy: the next field is the original path
            index += 1
        found[path] = (status, digest(top / path))
    return found


def changes(before: Snapshot, after: Snapshot, top: Path) -> list[str]:
    """Every path whose status or content differs between the two snapshots, with what happened.

    A path listed before is compared by what is on disk now, listed or not: a developer's edit
    committed by someone else during the run is not a change; a test writing the file again is.
    """
    found = []
    for path in sorted(before.keys() | after.keys()):
        now = after[path][1] if path in after else digest(top / path)
        if path not in before:
            status = after[path][0]
            what = "new untracked file" if status == "??" else "deleted" if "D" in status else "modified"
            found.append(f"{path}: {what} (git status {status.strip()!r})")
        elif now != before[path][1]:
            what = "deleted" if now == "absent" else "changed again"
            found.append(f"{path}: {what} (it already had uncommitted changes before the run)")
    return found


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")  # pytest-xdist gives every worker's config one


def _checking(env: Mapping[str, str] = os.environ) -> bool:
    return env.get(CHECK_ENV_VAR, "").strip().lower() not in {"off", "0", "no", "false"}


@pytest.hookimpl(tryfirst=True)  # before xdist starts its workers
def pytest_sessionstart(session: pytest.Session) -> None:
    if _is_worker(session.config) or not _checking():
        return
    top = work_tree(session.config.rootpath)
    if top is not None:
        session.config.stash[_before] = (top, snapshot(top))


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Runs inside the terminal reporter's own sessionfinish: its summary, which follows, reports."""
    recorded = session.config.stash.get(_before, None)
    if recorded is None:
        return
    top, before = recorded
    found = changes(before, snapshot(top), top)
    if found:
        session.config.stash[_changed] = found
        if session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: TerminalReporter, exitstatus: int, config: pytest.Config) -> None:
    found = config.stash.get(_changed, None)
    if not found:
        return
    terminalreporter.section("the tests changed the checkout", sep="=", red=True, bold=True)
    terminalreporter.line(
        f"A test run must leave the checkout it tests as it found it; {len(found)} path(s) changed "
        "(write into tmp_path, or a git-ignored folder such as .state/ or build/):",
        red=True,
    )
    for line in found:
        terminalreporter.line(f"  {line}", red=True)
    terminalreporter.line(
        f"(If you edited these files yourself while the tests ran, run again; {CHECK_ENV_VAR}=off skips this check.)"
    )


def pytest_configure(config: pytest.Config) -> None:
    if _created_figures_dir is not None and not _owner:
        _owner.append(config)


def pytest_unconfigure(config: pytest.Config) -> None:
    found = config.stash.get(_changed, None)
    if found and config.pluginmanager.get_plugin("terminalreporter") is None:
        print("the tests changed the checkout:\n  " + "\n  ".join(found), file=sys.stderr)
    if _created_figures_dir is not None and _owner and _owner[0] is config:
        shutil.rmtree(_created_figures_dir, ignore_errors=True)
