"""Progress on long terminal work (mtrl_course.progress) and the notebook runner's learner-facing lines.

Progress goes to stderr, only when someone is watching a terminal, and never changes stdout.
The notebook runner prints no maintainer to-do; `--record-times` writes what it measured.
"""

from __future__ import annotations

import io
import sys
import types
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mtrl_course import cli, config, progress
from mtrl_course.curriculum import catalog, executor


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def watched(monkeypatch):
    """Progress forced on, as `MTRL_PROGRESS=1` does (pytest itself turns it off)."""
    monkeypatch.setenv(progress.PROGRESS_ENV_VAR, "1")


# ------------------------------------------------------------------------------------ enabled
def test_off_under_pytest_and_in_pipes(monkeypatch):
    monkeypatch.delenv(progress.PROGRESS_ENV_VAR, raising=False)
    assert not progress.enabled(Terminal())  # PYTEST_CURRENT_TEST is set while a test runs
    monkeypatch.delenv("PYTEST_CURRENT_TEST")
    monkeypatch.delenv("TQDM_DISABLE", raising=False)
    monkeypatch.delenv(progress.NOTEBOOK_BATCH_ENV_VAR, raising=False)
    assert progress.enabled(Terminal())
    assert not progress.enabled(io.StringIO())  # a pipe or a file


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"MTRL_PROGRESS": "0"}, False),
        ({"MTRL_PROGRESS": "1"}, True),
        ({"MTRL_PROGRESS": "", "TQDM_DISABLE": "1"}, False),
        ({"MTRL_PROGRESS": "", "MTRL_NOTEBOOK_BATCH": "1"}, False),  # the notebook runner's kernels
    ],
)
def test_the_switches(monkeypatch, env, expected):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert progress.enabled(Terminal()) is expected


def test_a_notebook_kernel_never_shows_progress(monkeypatch):
    # An interactive notebook's stderr is stored with its outputs, which nbval compares.
    monkeypatch.delenv(progress.PROGRESS_ENV_VAR, raising=False)
    monkeypatch.delenv("PYTEST_CURRENT_TEST")
    monkeypatch.delenv("TQDM_DISABLE", raising=False)
    monkeypatch.delenv(progress.NOTEBOOK_BATCH_ENV_VAR, raising=False)
    kernel_stream = type("OutStream", (Terminal,), {"__module__": "ipykernel.iostream"})
    monkeypatch.setattr(sys, "stderr", kernel_stream())
    assert not progress.enabled()
    # ipykernel merely imported (the notebook runner starts kernels with it) is not a kernel.
    monkeypatch.setattr(sys, "stderr", Terminal())
    monkeypatch.setitem(sys.modules, "ipykernel", types.ModuleType("ipykernel"))
    assert progress.enabled()


def test_when_off_nothing_is_written(capsys):
    with progress.bar(total=3, desc="x") as shown, progress.ticking(shown):
        shown.update()
        progress.note("a line")
    with progress.running("work"):
        pass
    assert capsys.readouterr() == ("", "")


def test_when_on_everything_goes_to_stderr(capsys, watched):
    with progress.bar(total=2, desc="notebooks") as shown, progress.ticking(shown):
        shown.update()
        progress.note("00_setup.ipynb: ok in 4.9 s")
    with progress.running("building"):
        pass
    out, err = capsys.readouterr()
    assert out == "" and "00_setup.ipynb: ok in 4.9 s" in err and "notebooks" in err


# ------------------------------------------------------------------------------------ training
class FakeJob:
    """A training job that advances one status per refresh, logging one step each time."""

    def __init__(self, statuses: list[str]):
        self.statuses = statuses
        self.job_name = "job-1"
        self.refreshes = 0
        self.training_config = {"HyperParameters": {"max_steps": "3"}}

    @property
    def job_status(self) -> str:
        return self.statuses[min(self.refreshes, len(self.statuses)) - 1]

    secondary_status = "Training"

    def refresh(self) -> None:
        self.refreshes += 1


def test_watch_training_prints_each_step_once_and_stops_at_the_end(capsys, watched):
    job = FakeJob(["InProgress", "InProgress", "InProgress", "Completed"])
    logged = [
        {"step": 0, progress.VALIDATION_METRIC: 0.0},
        {"step": 1, progress.REWARD_METRIC: -0.345, progress.TURNS_METRIC: 5.56},
        {"step": 2, progress.REWARD_METRIC: 0.16, progress.TURNS_METRIC: 5.08, progress.VALIDATION_METRIC: 0.211},
    ]

    def read():
        return logged[: job.refreshes]  # one more step visible per poll

    progress.watch_training(job, 0.0, read_steps=read)
    out, err = capsys.readouterr()
    assert out == "" and job.refreshes == 4
    assert err.count("step 1: reward -0.345, 5.6 turns") == 1
    assert "step 0: validation pass@1 0.0%" in err and "validation pass@1 21.1%" in err


def test_watch_training_survives_unreadable_metrics(capsys, watched):
    job = FakeJob(["InProgress", "Failed"])

    def read():
        raise OSError("the MLflow run is not there yet")

    progress.watch_training(job, 0.0, read_steps=read)
    assert job.refreshes == 2


class StagedJob(FakeJob):
    """A FakeJob whose secondary statuses appear one per refresh, as DescribeJob lists them."""

    def __init__(self, statuses: list[str], stages: list[str]):
        super().__init__(statuses)
        self.stages = stages

    @property
    def secondary_status_transitions(self) -> list:
        return [types.SimpleNamespace(status=s, status_message=None) for s in self.stages[: self.refreshes]]


def test_mtrl_train_prints_the_job_statuses_in_order_with_the_steps(monkeypatch, watched):
    # They came all at once after the last step line: the watch showed steps, `wait` the statuses.
    screen = Terminal()
    monkeypatch.setattr(sys, "stdout", screen)
    monkeypatch.setattr(sys, "stderr", screen)
    job = StagedJob(["InProgress", "InProgress", "InProgress", "Completed"], ["Starting", "Pending", "Downloading"])
    steps = [{"step": 1, progress.REWARD_METRIC: -0.345}, {"step": 2, progress.REWARD_METRIC: 0.16}]
    monkeypatch.setattr(progress, "StepMetrics", lambda job: lambda: steps[: max(0, job.refreshes - 1)])
    monkeypatch.setattr(progress, "OFFLINE_WATCH_POLL_S", 0.0)
    cli._wait_for_training(job)
    text = screen.getvalue()
    seen = ["  Starting\n", "  Pending\n", "step 1: reward -0.345", "  Downloading\n", "step 2:", "  Completed\n"]
    positions = [text.find(needle) for needle in seen]
    assert -1 not in positions and positions == sorted(positions), text
    assert all(text.count(needle) == 1 for needle in seen), text


def test_mtrl_train_shows_progress_from_the_first_second(capsys, monkeypatch, watched):
    monkeypatch.setattr(cli, "_quiet", lambda: None)

    def stop(args):
        raise ValueError("stop here")

    monkeypatch.setattr(cli, "_train_resources", stop)
    assert cli.main(["train"]) == cli.FAILURE_EXIT
    out, err = capsys.readouterr()
    assert out == ""
    assert err.index("loading the SageMaker SDK") < err.index("preparing the course resources") < err.index("stop here")


def test_watch_training_does_nothing_when_off(capsys):
    job = FakeJob(["InProgress"])
    progress.watch_training(job, 0.0, read_steps=lambda: [])
    assert job.refreshes == 0 and capsys.readouterr() == ("", "")


def test_step_line_reads_like_a_sentence():
    assert progress.step_line({"step": 4}) == "step 4: no metrics yet"
    line = progress.step_line({"step": 3, progress.REWARD_METRIC: 0.6538, progress.VALIDATION_METRIC: 0.2578})
    assert line == "step 3: reward +0.654, validation pass@1 25.8%"


def test_cli_and_progress_name_the_same_step_metrics():
    assert cli.STEP_METRICS == progress.STEP_METRICS


# ----------------------------------------------------------------------------- notebook runner
def fake_runs(monkeypatch, tmp_path, seconds: dict[str, float]) -> list:
    """Notebook runs without kernels: `execute` returns a row with the given time."""
    monkeypatch.setattr(config, "BATCH_STATE_DIR", tmp_path / "batch-state")
    paths = [catalog.get(nn).path for nn in seconds]

    def execute(path, timeout, *, store=True):
        nn = executor.notebook_id(path)
        return {"notebook": path.name, "seconds": seconds[nn], "cells": 3, "stderr cells": 1, "status": "ok"}

    monkeypatch.setattr(executor, "execute", execute)
    monkeypatch.setattr(executor, "resolve", lambda selection: paths)
    return paths


def test_the_runner_prints_no_maintainer_to_do(capsys, monkeypatch, tmp_path):
    stated = catalog.get("05").offline_seconds or 60
    fake_runs(monkeypatch, tmp_path, {"00": 1.0, "05": stated * 3 + 60})
    executor.run(["00", "05"], store=False)
    out = capsys.readouterr().out
    assert "catalog.py" not in out and "offline_seconds" not in out and "update" not in out
    assert "stderr-ok" not in out  # a check run (--no-store) changes nothing: no hygiene to-do
    note = next(line for line in out.splitlines() if line.startswith("note: 05_"))
    assert "the course says" in note and "nothing is wrong" in note


def test_the_runner_prints_one_line_per_notebook_as_it_finishes(capsys, monkeypatch, tmp_path, watched):
    fake_runs(monkeypatch, tmp_path, {"00": 1.5, "01": 2.5})
    executor.run(["00", "01"], store=False)
    out, err = capsys.readouterr()
    assert "00_setup.ipynb: ok in 1.5 s" in err and f"{catalog.get('01').filename}: ok in 2.5 s" in err
    assert "ok in" not in out  # the table on stdout is unchanged


# The machine the suite runs on is shared: no deadline, and no "too slow" for a loaded moment.
RELAXED = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
CATALOG_TEXT = catalog.CATALOG_FILE.read_text(encoding="utf-8")


@RELAXED
@given(st.floats(0.1, 10_000), st.integers(1, 5_000))
def test_a_time_note_only_when_far_off(measured, stated):
    note = executor.time_note("05_x.ipynb", measured, stated)
    far = (
        abs(measured - stated) >= executor.TIME_NOTE_MIN_GAP_S
        and max(measured, stated) / max(1, min(measured, stated)) >= executor.TIME_NOTE_FACTOR
    )
    assert (note is not None) == far
    if note:
        assert "catalog" not in note and "update" not in note


def test_no_time_note_for_a_notebook_not_yet_measured():
    assert executor.time_note("09_x.ipynb", 500.0, None) is None


def test_a_notebook_run_without_its_prerequisites_is_told_why_it_took_longer(capsys):
    alone = [
        {"notebook": "06_monitor_in_mlflow.ipynb", "seconds": 500.0, "cells": 1, "stderr cells": 0, "status": "ok"}
    ]
    executor.print_results(alone, store=False)
    note = capsys.readouterr().out.splitlines()[-1]
    assert note.startswith("note: 06_monitor_in_mlflow.ipynb") and "05 did not run before it" in note
    in_order = [dict(alone[0], notebook="05_launch_training.ipynb", seconds=70.0), *alone]
    executor.print_results(in_order, store=False)
    note = capsys.readouterr().out.splitlines()[-1]
    assert "did not run before it" not in note and "busier or slower machine" in note


# --------------------------------------------------------------------------------- record-times
@pytest.fixture
def catalog_copy(monkeypatch, tmp_path):
    """A copy of catalog.py to write into; the in-memory catalog is restored after the test."""
    copy = tmp_path / "catalog.py"
    copy.write_text(catalog.CATALOG_FILE.read_text(encoding="utf-8"), encoding="utf-8")
    monkeypatch.setattr(catalog, "CATALOG_FILE", copy)
    monkeypatch.setattr(catalog, "NOTEBOOKS", catalog.NOTEBOOKS)
    monkeypatch.setattr(catalog, "_BY_NN", catalog._BY_NN)
    return copy


def test_record_times_writes_what_it_measured(capsys, monkeypatch, tmp_path, catalog_copy):
    original = catalog_copy.read_text(encoding="utf-8")
    real = Path(catalog.__file__)
    real_before = real.read_text(encoding="utf-8")
    fake_runs(monkeypatch, tmp_path, {"00": 3.4, "05": 123.6})
    results = executor.run(["00", "05"], store=False, record_times=True)
    assert [r["seconds"] for r in results] == [3.4, 123.6]
    text = catalog_copy.read_text(encoding="utf-8")
    assert text != original
    assert "offline_seconds=124," in text and "offline_seconds=3," in text
    assert catalog.get("05").offline_seconds == 124 and catalog.get("00").offline_seconds == 3  # in memory too
    assert real.read_text(encoding="utf-8") == real_before  # only the copy was written
    out = capsys.readouterr().out
    assert "record-times: 05_launch_training.ipynb: offline_seconds=124" in out
    assert "mtrl notebooks sync" in out  # --no-store: the banners are the maintainer's next step


def test_record_times_records_nothing_when_a_notebook_fails(capsys, monkeypatch, tmp_path, catalog_copy):
    monkeypatch.setattr(config, "BATCH_STATE_DIR", tmp_path / "batch-state")
    path = catalog.get("00").path

    def execute(path, timeout, *, store=True):
        row = {"notebook": path.name, "seconds": 2.0, "cells": 3, "stderr cells": 0, "status": "error"}
        raise executor.NotebookRunError("00_setup.ipynb: code cell 2: boom", [row])

    monkeypatch.setattr(executor, "execute", execute)
    monkeypatch.setattr(executor, "resolve", lambda selection: [path])
    before = catalog_copy.read_text(encoding="utf-8")
    assert executor.run_command(["00"], store=False, record_times=True) == 1
    assert catalog_copy.read_text(encoding="utf-8") == before


def test_with_offline_seconds_changes_only_the_number():
    text = catalog.CATALOG_FILE.read_text(encoding="utf-8")
    updated, previous = catalog.with_offline_seconds(text, {"05": 777})
    assert previous == {"05": catalog.get("05").offline_seconds}
    changed = [(a, b) for a, b in zip(text.splitlines(), updated.splitlines()) if a != b]
    assert len(changed) == 1 and changed[0][1].strip() == "offline_seconds=777,"
    assert catalog.with_offline_seconds(updated, {"05": 777})[1] == {}  # the same again: nothing to change


@RELAXED
@given(st.dictionaries(st.sampled_from([e.nn for e in catalog.NOTEBOOKS]), st.integers(1, 100_000), min_size=1))
def test_with_offline_seconds_round_trips(measured):
    text = CATALOG_TEXT
    updated, _ = catalog.with_offline_seconds(text, measured)
    for nn, seconds in measured.items():
        block = updated.split(f'nn="{nn}",', 1)[1].split("    Entry(", 1)[0]
        assert f"offline_seconds={seconds}," in block
    assert len(updated.splitlines()) == len(text.splitlines())


@pytest.mark.parametrize(
    ("measured", "message"),
    [({"99": 5}, 'no catalog entry with nn="99"'), ({"05": 0}, "positive whole number"), ({"5": 3}, "two digits")],
)
def test_with_offline_seconds_names_what_is_wrong(measured, message):
    with pytest.raises(ValueError, match=message):
        catalog.with_offline_seconds(catalog.CATALOG_FILE.read_text(encoding="utf-8"), measured)
