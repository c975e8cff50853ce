"""A test run leaves the checkout as it found it (tests/checkout_unchanged_plugin.py).

The check is proved on throwaway repositories: a pytest session run there, with the plugin, whose
tests write a tracked file, a new file and a file the developer had already edited must fail
naming exactly those; a developer's own edit, a git-ignored folder and a folder outside any
checkout must not fail it. Outside the tests, `make course` (`mtrl notebooks run --no-store`)
sends the figures to build/figures/ (git-ignored); only `make figures` and `make notebooks` write
into figures/.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import checkout_unchanged_plugin as plugin
import pytest
from mtrl_course import config

TESTS_DIR = Path(__file__).resolve().parent
GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
}
# What the tests in the throwaway repositories do to them.
WRITES = textwrap.dedent(
    """
    from pathlib import Path

    HERE = Path(__file__).parent

    def test_writes_a_tracked_file():
        (HERE / "tracked.txt").write_text("changed by a test\\n")

    def test_writes_a_new_file_and_an_ignored_one():
        (HERE / "left_behind.txt").write_text("new\\n")
        (HERE / "ignored").mkdir(exist_ok=True)
        (HERE / "ignored" / "fine.txt").write_text("git-ignored\\n")

    def test_changes_a_file_the_developer_had_edited():
        (HERE / "edited_twice.txt").write_text("the test's version\\n")
    """
)
HARMLESS = textwrap.dedent(
    """
    from pathlib import Path

    def test_writes_only_where_it_may(tmp_path):
        (Path(__file__).parent / "ignored").mkdir(exist_ok=True)
        (Path(__file__).parent / "ignored" / "fine.txt").write_text("git-ignored\\n")
        (tmp_path / "scratch.txt").write_text("temporary\\n")
    """
)


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, **GIT_ENV}
    return subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True, check=True).stdout


def throwaway_repo(tmp_path: Path, tests: str) -> Path:
    """A committed repository with a test module, then a developer's uncommitted edits."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / ".gitignore").write_text("ignored/\n__pycache__/\n")
    for name in ("tracked.txt", "edited_once.txt", "edited_twice.txt"):
        (repo / name).write_text(f"{name} as committed\n")
    (repo / "test_probe.py").write_text(tests)
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "start")
    for name in ("edited_once.txt", "edited_twice.txt"):
        (repo / name).write_text("the developer's edit\n")
    return repo


def run_pytest(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """A pytest session in `folder` with the plugin, as `make test` loads it.

    Without the installed plugins' autoload (nbval, hypothesis and the rest took a session from
    under a second to 5 to 20 s on a loaded 2-core machine); the xdist run names xdist itself.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "GIT_")) and k != plugin.CHECK_ENV_VAR}
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    command = [sys.executable, "-m", "pytest", "-p", "checkout_unchanged_plugin", "-p", "no:cacheprovider"]
    command += ["-q", "--rootdir", str(folder), "-o", f"pythonpath={TESTS_DIR}", "-c", "/dev/null", *args]
    return subprocess.run(command, cwd=folder, capture_output=True, text=True, env=env, timeout=180)


def test_a_session_whose_tests_change_the_checkout_fails_naming_every_path(tmp_path: Path) -> None:
    repo = throwaway_repo(tmp_path, WRITES)
    # Under xdist, as `make test` runs: the tests write in the workers, the controller checks once.
    ran = run_pytest(repo, "-p", "xdist", "-n", "2", "test_probe.py")
    out = ran.stdout
    assert ran.returncode == 1, out[-3000:]
    assert "3 passed" in out, out[-3000:]  # every test passed: the check alone failed the session
    section = out.split("the tests changed the checkout", 1)[1]
    named = sorted(line.split(":", 1)[0].strip() for line in section.splitlines() if line.startswith("  "))
    assert named == ["edited_twice.txt", "left_behind.txt", "tracked.txt"], section
    assert "tracked.txt: modified" in section and "left_behind.txt: new untracked file" in section
    assert "edited_twice.txt: changed again" in section
    assert "edited_once.txt" not in section and "ignored/" not in section  # the developer's edit; ignored


def test_a_session_that_writes_only_where_it_may_passes_beside_a_developers_edits(tmp_path: Path) -> None:
    repo = throwaway_repo(tmp_path, HARMLESS)
    ran = run_pytest(repo, "test_probe.py")
    assert ran.returncode == 0, ran.stdout[-3000:]
    assert "changed the checkout" not in ran.stdout
    assert (repo / "edited_once.txt").read_text() == "the developer's edit\n"


def test_outside_a_git_checkout_there_is_nothing_to_compare(tmp_path: Path) -> None:
    folder = tmp_path / "unpacked-sdist"
    folder.mkdir()
    (folder / "test_probe.py").write_text(WRITES.replace('"tracked.txt"', '"written.txt"'))
    (folder / "edited_twice.txt").write_text("\n")
    ran = subprocess.run(["git", "rev-parse"], cwd=folder, capture_output=True)
    if ran.returncode == 0:
        pytest.skip(f"{tmp_path} lies inside a git checkout")
    assert plugin.work_tree(folder) is None
    done = run_pytest(folder, "test_probe.py")
    assert done.returncode == 0, done.stdout[-3000:]


def test_a_developers_edit_committed_during_the_run_is_no_change(tmp_path: Path) -> None:
    # Someone commits their edit while the suite runs: the file leaves `git status` with the
    # content it had at the start, which is no change the tests made.
    repo = throwaway_repo(tmp_path, HARMLESS)
    before = plugin.snapshot(repo)
    assert set(before) == {"edited_once.txt", "edited_twice.txt"}
    git(repo, "commit", "-q", "-m", "the developer's edit", "--", "edited_once.txt")
    assert plugin.changes(before, plugin.snapshot(repo), repo) == []
    (repo / "edited_twice.txt").unlink()
    assert plugin.changes(before, plugin.snapshot(repo), repo) == [
        "edited_twice.txt: deleted (it already had uncommitted changes before the run)"
    ]


def test_figures_go_to_the_sessions_temporary_folder_not_to_figures() -> None:
    folder = Path(os.environ[plugin.FIGURES_ENV_VAR])
    assert config.FIGURES_DIR == folder
    assert not folder.resolve().is_relative_to(config.REPO_ROOT), folder
    # nbval's kernels, like this child process, inherit the environment: their figures land there.
    probe = (
        "import matplotlib; matplotlib.use('Agg'); import matplotlib.pyplot as plt; "
        "from mtrl_course import config, notebook; "
        "nb = notebook.NotebookContext(nn='07', mode=config.MODE, region='us-east-1', interactive=False); "
        "nb.save_figure(plt.subplots()[0], '07_where_figures_go'); print(nb.figures_dir)"
    )
    name = "07_where_figures_go.png"
    try:
        ran = subprocess.run(
            [sys.executable, "-c", probe], cwd=config.REPO_ROOT, capture_output=True, text=True, timeout=120
        )
        assert ran.returncode == 0, ran.stderr[-3000:]
        assert Path(ran.stdout.strip()) == folder
        assert (folder / name).is_file()
        assert not (config.REPO_ROOT / "figures" / name).exists()
    finally:
        (folder / name).unlink(missing_ok=True)


# ------------------------------------------------------------------ make course and make figures
def test_a_check_run_sends_figures_to_build_and_only_a_request_to_figures(monkeypatch, tmp_path: Path) -> None:
    from mtrl_course.curriculum import catalog, executor

    monkeypatch.setattr(config, "BATCH_STATE_DIR", tmp_path / "batch-state")
    monkeypatch.setattr(executor, "resolve", lambda selection: [catalog.get("00").path])
    monkeypatch.setattr(executor, "sync", lambda paths=None, check=False: [])  # a storing run syncs first
    seen: list[str | None] = []

    def execute(path: Path, timeout: int, *, store: bool = True) -> dict:
        seen.append(os.environ.get(config.FIGURES_ENV_VAR))  # what the kernels would inherit
        return {"notebook": path.name, "seconds": 1.0, "cells": 1, "stderr cells": 0, "status": "ok"}

    monkeypatch.setattr(executor, "execute", execute)
    monkeypatch.delenv(config.FIGURES_ENV_VAR)
    executor.run(["00"], store=False)  # make course
    executor.run(["00"], store=False, store_figures=True)  # make figures
    executor.run(["00"], store=True)  # make notebooks
    assert seen == [str(config.SCRATCH_FIGURES_DIR), *[str(config.COMMITTED_FIGURES_DIR)] * 2]
    assert config.FIGURES_ENV_VAR not in os.environ  # the run put it back as it was
    assert git_ignored(config.SCRATCH_FIGURES_DIR / "07_token_shares.png")
    monkeypatch.setenv(config.FIGURES_ENV_VAR, str(tmp_path / "chosen"))
    executor.run(["00"], store=False, store_figures=True)
    assert seen[-1] == str(tmp_path / "chosen")  # a folder someone chose wins (the suite's, here)


def git_ignored(path: Path) -> bool:
    return subprocess.run(["git", "check-ignore", "-q", str(path)], cwd=config.REPO_ROOT).returncode == 0


def test_make_course_stores_no_figures_and_make_figures_does() -> None:
    from mtrl_course import cli

    def planned(target: str) -> list[str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")}
        shown = subprocess.run(
            ["make", "--no-print-directory", "-n", "-C", str(config.REPO_ROOT), target, f"VENV={sys.prefix}"],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        return [line for line in shown.stdout.splitlines() if "mtrl notebooks run" in line]

    (course,) = planned("course")
    (figures,) = planned("figures")
    assert "--no-store" in course and "--store-figures" not in course
    assert "--no-store" in figures and "--store-figures" in figures
    args = cli.build_parser().parse_args(["notebooks", "run", "07", "--no-store", "--store-figures"])
    assert (args.no_store, args.store_figures) == (True, True)
