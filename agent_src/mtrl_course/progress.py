"""Progress on long terminal work (`mtrl`, `make course`): tqdm bars and one-line notes on stderr.

Progress is for a person watching a terminal, so it is on only when stderr is a terminal, and
never in a notebook kernel (stored outputs must not hold bars: nbval compares them), under
pytest, or with `TQDM_DISABLE` set. `MTRL_PROGRESS=1` forces it on (a CI log that wants the
lines), `MTRL_PROGRESS=0` off. It writes to stderr only, so what a command prints on stdout (its
tables and results) is the same with and without it.

    with progress.bar(total=10, desc="notebooks", unit="nb") as bar:   # a tqdm (disabled: a no-op)
        ...; bar.update(); progress.note("00_setup.ipynb: ok in 4.9 s")
    with progress.running("building the word lists"):                  # elapsed time, no total
        build()
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Iterator
from typing import IO, Any

PROGRESS_ENV_VAR = "MTRL_PROGRESS"
# The notebook runner's kernels set this (mtrl_course.notebook.BATCH_ENV_VAR); repeated here so
# this module imports nothing heavy.
NOTEBOOK_BATCH_ENV_VAR = "MTRL_NOTEBOOK_BATCH"
TICK_S = 0.5  # how often an open-ended bar redraws its elapsed time
_FALSE = {"", "0", "false", "no", "off"}


def enabled(stream: IO[str] | None = None) -> bool:
    """Whether progress should be shown on `stream` (default: stderr). See the module docstring."""
    forced = os.environ.get(PROGRESS_ENV_VAR)
    if forced is not None and forced.strip():
        return forced.strip().lower() not in _FALSE
    if os.environ.get("TQDM_DISABLE", "").strip().lower() not in _FALSE:
        return False
    if os.environ.get("PYTEST_CURRENT_TEST") or os.environ.get(NOTEBOOK_BATCH_ENV_VAR) == "1":
        return False
    stream = sys.stderr if stream is None else stream
    # A notebook kernel's stderr (ipykernel's OutStream) is stored with the cell's outputs. Not
    # "ipykernel imported": the notebook runner imports it to start kernels, in a terminal.
    if type(stream).__module__.startswith("ipykernel") or type(sys.stderr).__module__.startswith("ipykernel"):
        return False
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # a closed or replaced stream
        return False


def bar(total: int | None = None, desc: str = "", unit: str = "it", **kwargs: Any) -> Any:
    """A tqdm bar on stderr; a disabled one (every call a no-op) when progress is off."""
    from tqdm import tqdm

    return tqdm(
        total=total,
        desc=desc,
        unit=unit,
        file=sys.stderr,
        disable=not enabled(),
        dynamic_ncols=True,
        leave=kwargs.pop("leave", False),
        **kwargs,
    )


def note(line: str) -> None:
    """One line on stderr when progress is on (above any open bar, which tqdm redraws)."""
    if not enabled():
        return
    from tqdm import tqdm

    tqdm.write(line, file=sys.stderr)


@contextlib.contextmanager
def ticking(shown: Any) -> Iterator[Any]:
    """Redraw `shown` (a bar) every TICK_S while the block runs, so its elapsed time moves
    during one long item (a notebook, an evaluation job) and not only between items."""
    if getattr(shown, "disable", True):
        yield shown
        return
    stop = threading.Event()

    def tick() -> None:
        while not stop.wait(TICK_S):
            shown.refresh()

    ticker = threading.Thread(target=tick, name="mtrl-progress", daemon=True)
    ticker.start()
    try:
        yield shown
    finally:
        stop.set()
        ticker.join()


@contextlib.contextmanager
def running(desc: str) -> Iterator[None]:
    """An elapsed-time line for work whose length is not known in steps (a build, a game batch)."""
    if not enabled():
        yield
        return
    with bar(desc=desc, unit="s", bar_format="{desc}: {elapsed}") as shown, ticking(shown):
        yield


# ------------------------------------------------------------------------------------ training
# The per-step metrics a learner watches while a training job runs (their MLflow names): the
# mean reward of the step's rollouts and the held-out pass@1 from the job's own validation.
REWARD_METRIC = "rollout/reward/mean"
TURNS_METRIC = "rollout/turns/mean"
VALIDATION_METRIC = "val/reward/pass_at_1"
STEP_METRICS = (REWARD_METRIC, TURNS_METRIC, VALIDATION_METRIC)
OFFLINE_WATCH_POLL_S = 1.0  # reading MLflow more often only competes with the job for the CPU


class StepMetrics:
    """Reads a training job's per-step metrics from its MLflow run, as rows {"step": n, name: value}.

    Callable again and again while the job runs: the run exists once the job starts training,
    and each call returns every step logged so far.
    """

    def __init__(self, job: Any, names: tuple[str, ...] = STEP_METRICS) -> None:
        self.job = job
        self.names = names
        self._client: Any = None

    def _open(self) -> Any:
        config_doc = self.job.training_config or {}
        arn = (config_doc.get("MlflowConfig") or {}).get("MlflowResourceArn")
        if not arn:
            return None
        from mtrl_course import config, mlflow_client, resources, storage

        if not config.is_live():
            # Offline an MLflow app (and moto's bucket) lives in the process that created it; in a
            # fresh one (attaching to a job a detached process ran) the app is created again under
            # the same ARN and finds the job's runs on disk.
            resources.ensure_mlflow_app(bucket=storage.ensure_bucket())
        # Through the course's one MLflow client: sagemaker-mlflow signs for the global tracking
        # URI, not the client's (in a fresh process, `mtrl train --attach` after the job's own
        # process ended, a bare client failed with IndexError).
        return mlflow_client.client(arn)

    def __call__(self) -> list[dict[str, Any]]:
        run_id = (self.job.mlflow_details or {}).get("RunId")
        if not run_id:
            return []
        if self._client is None:
            self._client = self._open()
            if self._client is None:
                return []
        steps: dict[int, dict[str, Any]] = {}
        for key in self.names:
            for metric in self._client.get_metric_history(run_id, key):
                steps.setdefault(metric.step, {"step": metric.step})[key] = round(metric.value, 4)
        return [steps[s] for s in sorted(steps)]


def step_line(row: dict[str, Any]) -> str:
    """One training step as a learner reads it: `step 3: reward -0.120, 5.1 turns, validation pass@1 21.1%`."""
    parts = []
    if row.get(REWARD_METRIC) is not None:
        parts.append(f"reward {row[REWARD_METRIC]:+.3f}")
    if row.get(TURNS_METRIC) is not None:
        parts.append(f"{row[TURNS_METRIC]:.1f} turns")
    if row.get(VALIDATION_METRIC) is not None:
        parts.append(f"validation pass@1 {row[VALIDATION_METRIC]:.1%}")
    return f"step {row['step']}: " + (", ".join(parts) or "no metrics yet")


def _max_steps(job: Any) -> int | None:
    hyperparameters = (job.training_config or {}).get("HyperParameters") or {}
    try:
        return int(hyperparameters["max_steps"])
    except (KeyError, TypeError, ValueError):
        return None


def watch_training(
    job: Any, poll_s: float, *, read_steps: Any = None, indent: str = "", on_refresh: Any = None
) -> None:
    """Until `job` ends: a step bar with the latest reward and validation, and one line per step.

    `on_refresh()`, if given, runs after each refresh of the job, before that poll's step lines,
    with the bar cleared: `mtrl train` prints the job's statuses there, so they appear in order
    with the steps instead of all at the end.

    Returns as soon as the job is in a terminal status; the caller then waits on it as before
    (which returns at once) and prints its results. A failure to read the metrics (the run not
    created yet, a transient error) skips that poll: progress never fails the command.
    """
    import time

    from mtrl_course.training import TERMINAL_STATUSES

    if not enabled():
        return
    read = read_steps if read_steps is not None else StepMetrics(job)
    printed: dict[int, set[str]] = {}
    latest: dict[str, str] = {}
    with bar(total=_max_steps(job), desc=f"{indent}training", unit="step") as shown:
        while True:
            job.refresh()
            if on_refresh is not None:
                with shown.external_write_mode(file=sys.stdout):
                    on_refresh()
            try:
                rows = read()
            except Exception:  # noqa: BLE001 - see the docstring
                rows = []
            for row in rows:
                new = {k for k, v in row.items() if k != "step" and v is not None} - printed.get(row["step"], set())
                if not new:
                    continue
                printed.setdefault(row["step"], set()).update(new)
                note(indent + step_line({"step": row["step"], **{k: row[k] for k in new}}))
                if REWARD_METRIC in new:
                    latest["reward"] = f"{row[REWARD_METRIC]:+.3f}"
                if VALIDATION_METRIC in new:
                    latest["val pass@1"] = f"{row[VALIDATION_METRIC]:.1%}"
            done = max(printed, default=0)
            if done > shown.n:
                shown.update(done - shown.n)
            shown.set_postfix(latest, refresh=False)
            stage = getattr(job, "secondary_status", None)
            stage = stage if isinstance(stage, str) and stage else job.job_status
            shown.set_description_str(f"{indent}training ({stage})", refresh=True)
            if job.job_status in TERMINAL_STATUSES:
                return
            time.sleep(poll_s)
