"""Watching a job: its metrics from MLflow, the way into the MLflow UI, and one traced game.

Metrics. The service logs every step's reward, token and turn statistics to the job's MLflow
app, under the names of the AWS metric reference (`rollout/reward/mean`, `val/reward/pass_at_1`,
...). `metrics_frame` reads them with the same MLflow client code in both modes: the tracking URI
is the MLflow app's ARN, read through `mlflow_client.client`. Live, the sagemaker-mlflow plugin
resolves that ARN to the managed app (and signs for the global tracking URI, which that client
points at the ARN);
offline, the offline backend resolves it to the app's local sqlite store. Which run belongs to
the job comes from DescribeJob (`ServiceOutput.MlflowDetails`).

The UI. Live, the MLflow app's UI opens through a presigned URL that expires within minutes; it
is never printed here, because a notebook's outputs get saved and shared. Offline, the same
store can be browsed with `mlflow ui` on 127.0.0.1.

A traced game. The service only ever sees one reward per rollout; the game behind it (guesses,
feedback, shaping events) lives in the agent. Offline, `traced_game` plays one held-out word with
the job's trained stand-in adapter at temperature 0, through the real rollout handler
in-process, is handed the finished game by the rollout (its `observer`), and renders it as a
transcript. `walkthrough_game` renders the walkthrough's own traced game (secret PASTE)
through the same game code, labelled as the walkthrough's.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from mtrl_course import config, naming, service_spec

if TYPE_CHECKING:
    from mtrl_course.resources import CourseResources

TRAINING = service_spec.TRAINING
EVALUATION = service_spec.EVALUATION
# What a lesson plots and discusses; `keys=None` reads every metric the run logged.
DEFAULT_KEYS = (
    "rollout/reward/mean",
    "rollout/reward/std",
    "rollout/reward/min",
    "rollout/reward/max",
    "rollout/turns/mean",
    "rollout/tokens/response_mean",
    "analysis/zero_adv_groups",
    "training/num_groups",
    "training/total_tokens",
    "val/reward/mean",
    "val/reward/pass_at_1",
)
STEP = "step"
WALKTHROUGH_LABEL = "gpt-oss-20b after training, as reported by the AWS walkthrough"
STAND_IN_LABEL = "stand-in policy (not gpt-oss-20b)"
WALKTHROUGH_GAME = ("PASTE", ("CRANE", "ALIVE", "HASTE", "PASTE"))
SQUARES = {"G": "\U0001f7e9", "Y": "\U0001f7e8", "X": "\u2b1b"}
# The presigned UI URL is valid this long at most (CreatePresignedMlflowAppUrl's ExpiresInSeconds
# is 5 to 300); the browser session it starts lasts longer (SessionExpirationDurationInSeconds).
PRESIGNED_MAX_SECONDS = 300
# traced_game(word=None) plays held-out words in file order and shows the first one the policy
# solves in at least this many guesses: a game where the feedback mattered.
INTERESTING_GUESSES = 3
SEARCH_LIMIT = 32
VALIDATION_PHASE = 1  # the runner's phase code for validation rollouts (rng keys)
TRACE_SUFFIX = "-trace"


# --- finding the job's MLflow run ------------------------------------------------------------------
@dataclass(frozen=True)
class RunLocation:
    """Where a job's metrics are: the MLflow app (tracking URI) and the run in it."""

    job_name: str
    category: str
    tracking_uri: str  # the MLflow app's ARN
    experiment_name: str
    run_id: str
    run_name: str
    status: str


def _job_name(job: Any) -> str:
    if isinstance(job, str):
        return job
    name = getattr(job, "job_name", None) or (job.get("JobName") if isinstance(job, Mapping) else None)
    if not isinstance(name, str) or not name:
        raise TypeError(f"expected a job name or a job object with .job_name; got {type(job).__name__}")
    return name


def describe(job: Any, category: str = TRAINING, session: Any = None) -> dict[str, Any]:
    """DescribeJob for a job name or job object, with its JobConfigDocument parsed."""
    from mtrl_course import aws

    if isinstance(job, Mapping) and "JobConfigDocument" in job:
        response = dict(job)
    else:
        client = (session or aws.session()).client("sagemaker")
        response = client.describe_job(JobName=_job_name(job), JobCategory=category)
    document = response.get("JobConfigDocument") or "{}"
    response["JobConfigDocument"] = json.loads(document) if isinstance(document, str) else dict(document)
    return response


def locate_run(job: Any, category: str = TRAINING, session: Any = None) -> RunLocation:
    """The MLflow app and run of a job, from DescribeJob; ValueError if it has none yet."""
    response = describe(job, category, session)
    document = response["JobConfigDocument"]
    section = document.get("TrainingConfig") or document.get("EvaluationConfig") or {}
    # The trainer puts MlflowConfig in TrainingConfig, the evaluator in OutputDataConfig.
    mlflow_config = section.get("MlflowConfig") or (document.get("OutputDataConfig") or {}).get("MlflowConfig") or {}
    details = (document.get("ServiceOutput") or {}).get("MlflowDetails") or {}
    name = response.get("JobName", _job_name(job))
    arn = mlflow_config.get("MlflowResourceArn")
    if not arn:
        raise ValueError(f"job {name} names no MLflow app (MlflowConfig.MlflowResourceArn)")
    if not details.get("RunId"):
        raise ValueError(
            f"job {name} ({response.get('JobStatus')}, {response.get('SecondaryStatus')}) has not reported its "
            "MLflow run yet: metrics appear once it is Training; try again in a few minutes"
        )
    return RunLocation(
        job_name=name,
        category=response.get("JobCategory", category),
        tracking_uri=arn,
        experiment_name=details.get("ExperimentName") or mlflow_config.get("MlflowExperimentName") or "",
        run_id=details["RunId"],
        run_name=details.get("RunName") or "",
        status=str(response.get("JobStatus")),
    )


def _client(tracking_uri: str) -> Any:
    from mtrl_course import mlflow_client

    return mlflow_client.client(tracking_uri)


def metrics_frame(
    job: Any, keys: Sequence[str] | None = DEFAULT_KEYS, *, category: str = TRAINING, session: Any = None
) -> pd.DataFrame:
    """The job's metrics, one row per step (index `step`) and one column per metric name.

    `job`: a job name or a job object (`.job_name`). `keys`: metric names to read (the
    service's names); a name the run never logged is left out; None reads every metric.
    A metric logged only at some steps (validation) is NaN at the others.
    """
    location = locate_run(job, category, session)
    client = _client(location.tracking_uri)
    wanted = list(keys) if keys is not None else sorted(client.get_run(location.run_id).data.metrics)
    columns: dict[str, pd.Series] = {}
    for key in wanted:
        history = client.get_metric_history(location.run_id, key)
        if not history:
            continue
        # One value per step; should a step hold two, the later one wins.
        latest = {m.step: m.value for m in sorted(history, key=lambda m: (m.step, m.timestamp))}
        columns[key] = pd.Series(latest, dtype=float)
    frame = pd.DataFrame(columns).sort_index()
    frame.index.name = STEP
    return frame


def run_tags(job: Any, category: str = TRAINING, session: Any = None) -> dict[str, str]:
    """The tags of the job's MLflow run (offline they say which stand-in played and its seed)."""
    location = locate_run(job, category, session)
    return dict(_client(location.tracking_uri).get_run(location.run_id).data.tags)


# --- the MLflow UI ---------------------------------------------------------------------------------
def _mlflow_app_arn(resources: CourseResources | str) -> str:
    arn = resources if isinstance(resources, str) else getattr(resources, "mlflow_app_arn", None)
    if not isinstance(arn, str) or ":mlflow-app/" not in arn:
        raise ValueError(f"expected an MLflow app ARN (or resources with .mlflow_app_arn); got {arn!r}")
    return arn


def _batch_run() -> bool:
    return os.environ.get(config.NOTEBOOK_BATCH_ENV_VAR, "") == "1"


def _local_apps(arn: str) -> Any:
    """The offline backend's MLflow apps, after checking that `arn` is one of them."""
    from mtrl_course import local

    apps = local.mlflow_app_registry()
    if apps.info(arn) is None:
        raise ValueError(f"offline mode: no MLflow app {arn} in this kernel; run resources.prepare() first")
    return apps


def how_to_open_ui(resources: CourseResources | str) -> str:
    """How to open the job's MLflow UI in the current mode (text to print; starts nothing)."""
    arn = _mlflow_app_arn(resources)
    if config.is_live():
        return "\n".join(
            [
                f"live: your MLflow app is {naming.mask_account(arn)} (the full ARN is resources.mlflow_app_arn).",
                "Open it from SageMaker Studio (MLflow in the left menu), or ask for a sign-in link in a terminal:",
                "    aws sagemaker create-presigned-mlflow-app-url --arn <resources.mlflow_app_arn> "
                "--query AuthorizedUrl --output text",
                f"The link is good for at most {PRESIGNED_MAX_SECONDS // 60} minutes and is meant for you alone: "
                "do not paste it into a notebook or a chat. Expired? Run the command again.",
            ]
        )
    from mtrl_course import aws, local

    store = Path(_local_apps(arn).info(arn).tracking_uri.removeprefix("sqlite:///")).resolve()
    shown = store.relative_to(config.REPO_ROOT) if store.is_relative_to(config.REPO_ROOT) else store
    # Offline, CreatePresignedMlflowAppUrl answers with the loopback address the UI will use.
    address = aws.session().client("sagemaker").create_presigned_mlflow_app_url(Arn=arn)["AuthorizedUrl"]
    port = address.rstrip("/").rsplit(":", 1)[-1]
    return "\n".join(
        [
            f"offline: the MLflow app is a local store, {shown.as_posix()}.",
            "It lasts until clean-up (notebook 08, or `mtrl cleanup --yes`) deletes the app, and the store with it;",
            "training again (notebook 05) creates a new one.",
            "Browse it from this notebook with monitoring.open_ui(resources), which serves it on 127.0.0.1,",
            "or from a terminal at the repository root (one worker is plenty for one reader):",
            f"    .venv/bin/mlflow ui --backend-store-uri sqlite:///{shown.as_posix()} --host 127.0.0.1 --port {port} "
            f"--workers {local.MLFLOW_UI_WORKERS}",
            "In a SageMaker Studio space your browser cannot reach 127.0.0.1 there: open the port through the",
            f"space's Jupyter proxy, <your space's URL>/jupyterlab/default/proxy/{port}/ (path form not yet confirmed",
            "by the course team; see docs/LIVE_CHECKLIST.md).",
            "Live, the same notebook cell prints the presigned-URL command instead.",
        ]
    )


def open_ui(resources: CourseResources | str) -> str | None:
    """Offline: start `mlflow ui` on loopback for this app and return its URL (not in batch runs).

    Live: prints `how_to_open_ui` and returns None: a presigned URL never goes into an output.
    In a batch run (the notebook runner, nbval) nothing is started either.
    """
    if config.is_live():
        print(how_to_open_ui(resources))
        return None
    if _batch_run():
        print("not started: this is a batch run (nbval or the notebook runner); run the cell yourself to open the UI")
        return None
    arn = _mlflow_app_arn(resources)
    return _local_apps(arn).start_ui(arn)


def close_ui(resources: CourseResources | str) -> None:
    """Stop the local MLflow UI `open_ui` started (offline; nothing to do live)."""
    if config.is_live():
        return
    arn = _mlflow_app_arn(resources)
    _local_apps(arn).stop_ui(arn)


# --- transcripts ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TracedTurn:
    """One tool call of a game: the guess, its feedback and the shaping points it earned."""

    number: int | None  # the guess number it used (None: a malformed call uses none)
    word: str
    kind: str  # guess, solve, repeat or malformed
    marks: str  # "X X Y X G", empty for malformed calls
    summary: tuple[str, ...]  # the knowledge lines the model read after it
    possible: int  # answers still consistent with everything known after it
    events: tuple[tuple[str, float], ...]
    points: float

    @property
    def squares(self) -> str:
        return "".join(SQUARES[m] for m in self.marks.split())


@dataclass(frozen=True)
class TracedGame:
    """A finished game, rendered: `print(game)` for the transcript, `game.table()` for a table."""

    label: str
    answer: str
    turns: tuple[TracedTurn, ...]
    solved: bool
    shaping_score: float
    reward: float
    note: str = ""

    @property
    def guesses(self) -> list[str]:
        return [t.word for t in self.turns if t.number is not None]

    def table(self) -> pd.DataFrame:
        return pd.DataFrame(
            [
                {
                    "guess": t.number if t.number is not None else "-",
                    "word": t.word,
                    "feedback": f"{t.squares} {t.marks}".strip(),
                    "answers still possible": t.possible,
                    "shaping points": t.points,
                    "shaping events": ", ".join(f"{name} {points:+.1f}" for name, points in t.events),
                }
                for t in self.turns
            ]
        )

    def __str__(self) -> str:
        lines = [f"{self.label}: secret word {self.answer}"]
        if self.note:
            lines.append(f"({self.note})")
        for turn in self.turns:
            head = f"guess {turn.number}" if turn.number is not None else "malformed call"
            feedback = f"  {turn.squares}  {turn.marks}" if turn.marks else ""
            lines.append("")
            possible = f"{turn.possible} answer{'s' if turn.possible != 1 else ''} still possible"
            lines.append(f"{head}: {turn.word}{feedback}   [{turn.kind}; {possible}]")
            lines += [f"    {line.lstrip('- ')}" for line in turn.summary]
            events = ", ".join(f"{name} {points:+.1f}" for name, points in turn.events)
            lines.append(f"    shaping: {events} = {turn.points:+.1f}")
        outcome = (
            f"solved in {len(self.guesses)} guesses" if self.solved else f"not solved after {len(self.guesses)} guesses"
        )
        lines.append("")
        lines.append(f"result: {outcome}; shaping score {self.shaping_score:+.1f}; final reward {self.reward:+.3f}")
        return "\n".join(lines)


def render(game: Any, label: str, note: str = "") -> TracedGame:
    """A finished `wordle_agent.game.WordleGame` as a `TracedGame`.

    The feedback and knowledge lines are what the model read: the game's moves are replayed
    through a fresh game of the same code, and the replay must reach the same score and reward.
    """
    from wordle_agent.game import RAW_TEXT, WordleGame, score_guess

    replay = WordleGame(game.answer)
    turns = []
    for event in game.events:
        if event.kind == "malformed":
            replay._record(None, event.word, event.kind, list(event.reasons))  # noqa: SLF001 - same score, no guess
            summary: tuple[str, ...] = ()
            marks = ""
        else:
            raw_text = any(name == RAW_TEXT for name, _ in event.reasons)
            text = replay.guess_from_text(event.word) if raw_text else replay.guess(event.word)
            summary = tuple(line for line in text.splitlines() if line.startswith("- "))
            marks = " ".join(score_guess(event.word, game.answer))
        turns.append(
            TracedTurn(
                number=event.turn,
                word=event.word,
                kind=event.kind,
                marks=marks,
                summary=summary,
                possible=replay.possibility_count(),
                events=tuple((name, float(points)) for name, points in event.reasons),
                points=float(event.delta),
            )
        )
    if abs(replay.final_reward() - game.final_reward()) > 1e-9:
        raise RuntimeError(
            f"replaying the game of {game.answer} gave reward {replay.final_reward()}, not {game.final_reward()}"
        )
    return TracedGame(
        label, game.answer, tuple(turns), game.solved, float(game.score), float(game.final_reward()), note
    )


def replay(answer: str, guesses: Iterable[str], label: str, note: str = "") -> TracedGame:
    """Play `guesses` against `answer` through the course's game code and render the game."""
    from wordle_agent.game import WordleGame

    game = WordleGame(answer)
    for word in guesses:
        game.guess(word)
    return render(game, label, note)


def walkthrough_game() -> TracedGame:
    """The AWS walkthrough's traced game of its trained gpt-oss-20b (secret PASTE).

    Its guesses are the walkthrough's; the feedback, shaping and reward are computed here by the
    course's game code (the walkthrough does not report a reward for this game).
    """
    answer, guesses = WALKTHROUGH_GAME
    return replay(
        answer,
        guesses,
        WALKTHROUGH_LABEL,
        "its guesses as reported; feedback, shaping and reward computed by this course's game code",
    )


# --- playing a game with the trained stand-in ---------------------------------------------------------
def _adapter_for(job: Any, session: Any = None) -> tuple[Any, dict[str, Any]]:
    """The stand-in adapter a finished offline training job produced, and its DescribeJob."""
    from mtrl_course import local, resources

    response = describe(job, TRAINING, session)
    name = response["JobName"]
    output = response["JobConfigDocument"].get("ServiceOutput") or {}
    package = output.get("OutputModelPackageArn")
    directory = resources.offline_adapter_dir()
    path = local.adapter_file(package, directory)
    if path is None or not path.is_file():
        path = directory / f"{name}.json"
    if not path.is_file():
        raise ValueError(
            f"job {name} ({response.get('JobStatus')}) has no stand-in adapter on this machine yet "
            f"(looked for {path.name}); wait until it has Completed"
        )
    return local.load_adapter(path), response


def deployed_environment() -> dict[str, str]:
    """The runtime's environment variables as agentcore.json deploys them (REASONING_EFFORT, ...)."""
    from mtrl_course import deploy

    runtime = deploy.agent_runtime(deploy.load_project())
    return {item["name"]: item["value"] for item in runtime.get("envVars") or []}


def _validation_tasks(words: Sequence[str] | None) -> list[tuple[int, str, str]]:
    """(row index, answer, task string) of the held-out words to try, in validation-file order."""
    from mtrl_course import dataset

    rows = [json.loads(row[dataset.PROMPT_COLUMN]) for row in dataset.read_rows(config.VALIDATION_FILE)]
    held_out = [(i, row["answer"].upper(), json.dumps(row)) for i, row in enumerate(rows)]
    if words is None:
        return held_out[:SEARCH_LIMIT]
    found = []
    for word in words:
        match = next((task for task in held_out if task[1] == word.upper()), None)
        if match is None:
            # Not a held-out word: still playable, with a task string of the dataset's format.
            match = (len(held_out), word.upper(), dataset.encode_task(word.lower(), "traced_game"))
        found.append(match)
    return found


def traced_game(job: Any, word: str | None = None, *, seed: int | None = None, session: Any = None) -> TracedGame:
    """Offline: play one held-out word with the job's trained stand-in and render the game.

    The game is played the way the job's validation plays (temperature 0, the runtime's
    environment from agentcore.json, the job's seed) by the real `run_rollout` handler in this
    process, with the stand-in policy behind an in-process Job Runtime. `word=None` plays the
    held-out words in file order and shows the first one solved in at least INTERESTING_GUESSES
    guesses (the rule is printed with the game). Live there is no stand-in to play: read traces
    in the MLflow app's Traces tab instead (RuntimeError).
    """
    if config.is_live():
        raise RuntimeError(
            "traced_game plays the offline stand-in; live, open the job's MLflow experiment and its Traces tab"
        )
    from wordle_agent import rollout

    from mtrl_course import aws, local

    adapter, response = _adapter_for(job, session)
    name = response["JobName"]
    if seed is None:
        seed = int(run_tags(response, TRAINING, session).get("mtrl.offline.seed", config.DEFAULT_SEED))
    progress = (response["JobConfigDocument"].get("ServiceOutput") or {}).get("ProgressInfo") or {}
    final_step = int(progress.get("MaxSteps") or adapter.step or 0)
    region = aws.session().region_name or config.OFFLINE_REGION
    job_arn = f"arn:aws:sagemaker:{region}:{local.backend().account}:job/AgentRFT/{name}{TRACE_SUFFIX}"
    player = local.StandInPlayer(adapter, seed=seed, job_arn=job_arn)
    games: dict[str, Any] = {}

    def keep(task_id: str, game: Any) -> None:
        games[task_id] = game

    chosen, interesting = None, False
    tasks = _validation_tasks(None if word is None else [word])
    with config.environment(deployed_environment()):
        for index, answer, task in tasks:
            tid = f"{name}{TRACE_SUFFIX}-p{index:04d}"
            rng_key = [seed, VALIDATION_PHASE, final_step, index, 0, 0]
            player.play(tid, task, rng_key=rng_key, temperature=0.0, observer=keep)
            game = games.get(json.loads(task)["id"])
            if game is None:
                raise RuntimeError(f"the rollout of {answer} finished without a game (the handler failed?)")
            interesting = game.solved and len(game.guesses) >= INTERESTING_GUESSES
            if word is not None or interesting:
                chosen = game
                break
            chosen = chosen or game
    effort = deployed_environment().get(rollout.REASONING_EFFORT_ENV, "the model's default")
    if word is not None:
        rule = "the word you chose"
    elif interesting:
        rule = f"the first held-out word, in validation-file order, it solved in {INTERESTING_GUESSES}+ guesses"
    else:
        rule = f"the first held-out word: none of the first {len(tasks)} was solved in {INTERESTING_GUESSES}+ guesses"
    note = f"adapter of job {name}, temperature 0, reasoning effort {effort}; {rule}"
    return render(chosen, STAND_IN_LABEL, note)
