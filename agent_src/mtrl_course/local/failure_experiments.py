"""Notebook 10's failure experiments, reproduced on the offline backend, one function each.

Everything here runs the real pieces (the rollout handler, the game, the reward, the Job Runtime
emulator's bearer-token check, the training runner and its GRPO update) with the stand-in policy
(`mtrl_course.local.stand_in_policy`); the numbers are the stand-in's, never a real model's. Where a
failure needs something the offline backend does not have, a *model* of it is built here and
labelled as one: the credential provider with a capacity cap (`CredentialProviderModel`) and the
botocore session that holds its credentials (`SharedSessionModel`).

- `token_strategies`: 32 concurrent rollouts sign their model calls three ways (a fresh session
  per call; one token cached for an hour; the course's `wordle_agent.auth.TokenCache` with
  re-sign on 403) while the credentials rotate mid-run; every call is checked by the emulator's
  real bearer-token verification.
- `feedback_signatures` and `decorator_order`: the SDK's own feedback client signs each
  CompleteRollout/UpdateReward afresh (counted on real calls), and with the decorators reversed
  the invocation succeeds but no reward is recorded.
- `run_training` and `MemoryJob`: a training run through the real runner with an in-memory job,
  with the runner's faults, raw-text recovery on or off (`raw_text_recovery`) and checkpoints.
- `play`: games through the fast lane at chosen serving settings (temperature, effort, token cap).

The experiment script `experiments/failure_modes.py` runs these over seeds; notebook 10 reads
its JSON and re-runs one cheap configuration live.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from mtrl_course import config
from mtrl_course.service_spec import OFFLINE_OVERRIDES, WALKTHROUGH_OVERRIDES, TrainingHyperparameters
from mtrl_course.local import fastlane, mlflow_store, runner
from mtrl_course.local.job_runtime_emulator import JobRuntimeEmulator, JobRuntimeError
from mtrl_course.local.stand_in_policy import Adapter, StandInPolicy
from mtrl_course.local.tokens import mint_token
from wordle_agent import auth, rollout
from wordle_agent.reward import NO_PLAY_REWARD

MODEL_LABEL = "model (not AWS's): "
REGION = "us-east-1"
BASE_MODEL = "openai-reasoning-gpt-oss-20b"
DATA_DIR = config.REPO_ROOT / "data"
# The walkthrough's concurrency: the runtime served 32 rollouts at once.
CONCURRENCY = 32
STRATEGY_FRESH, STRATEGY_HOUR, STRATEGY_COURSE = (
    "fresh session per call",
    "one-hour cache",
    "course cache + re-sign on 403",
)
STRATEGIES = (STRATEGY_FRESH, STRATEGY_HOUR, STRATEGY_COURSE)
HOUR_S = 3600.0
_LAB_ACCOUNT = "123456789012"


# --- bearer tokens under concurrency -------------------------------------------------------------


class CredentialStarvation(RuntimeError):
    """The credential provider model had no free slot within its timeout."""


@dataclass
class CredentialProviderModel:
    """A MODEL of the container's credential endpoint, not AWS's: it resolves at most `capacity`
    requests at once, each taking `latency_s`; a caller that waits longer than `timeout_s` for a
    slot fails (credential starvation). `rotate()` issues new keys and revokes the old ones at the
    emulator, as a role's credentials rotating mid-run would. Counts every resolution.

    The numbers are chosen, not AWS's (the container endpoint's limits are not published): 4 slots
    so that the walkthrough's 32 concurrent signers must queue, 10 ms a resolution, and a 150 ms
    limit above the unloaded queue (32 / 4 x 10 ms = 80 ms), so that a call starves only when the
    machine delays the queue. Starvation therefore depends on load: notebook 10 says so beside
    its re-run, which on an idle machine may show none."""

    emulator: JobRuntimeEmulator
    capacity: int = 4
    latency_s: float = 0.010
    timeout_s: float = 0.150
    account: str = _LAB_ACCOUNT
    resolutions: int = 0
    starved: int = 0
    _generation: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        if self.capacity < 1 or self.latency_s < 0 or self.timeout_s <= 0:
            raise ValueError(
                f"capacity must be >= 1, latency_s >= 0 and timeout_s > 0; got {self.capacity}, "
                f"{self.latency_s}, {self.timeout_s}"
            )
        self._slots = threading.BoundedSemaphore(self.capacity)
        self.emulator.add_credentials(*self._keys(0), self.account)

    @staticmethod
    def _keys(generation: int) -> tuple[str, str]:
        return f"ASIAFAILLAB{generation:09d}", f"failure-lab-secret-{generation}"

    @property
    def current(self) -> tuple[str, str]:
        return self._keys(self._generation)

    def resolve(self) -> tuple[str, str]:
        """The current (access key, secret), after waiting for a slot and `latency_s`."""
        if not self._slots.acquire(timeout=self.timeout_s):
            with self._lock:
                self.starved += 1
            raise CredentialStarvation(f"no credential slot within {self.timeout_s * 1000:.0f} ms")
        try:
            time.sleep(self.latency_s)
            with self._lock:
                self.resolutions += 1
                return self.current
        finally:
            self._slots.release()

    def rotate(self) -> None:
        old = self.current[0]
        with self._lock:
            self._generation += 1
        self.emulator.rotate_credentials(old, *self.current)


class SharedSessionModel:
    """A MODEL of one botocore session shared by the process: it resolves credentials once and
    keeps them (refreshable credentials renew themselves, but a rotation can land before botocore
    expects it), until `drop_if_holding` forgets the key a rejected token was signed with."""

    def __init__(self, provider: CredentialProviderModel) -> None:
        self.provider = provider
        self._lock = threading.Lock()
        self._held: tuple[str, str] | None = None

    def credentials(self) -> tuple[str, str]:
        with self._lock:
            if self._held is None:
                self._held = self.provider.resolve()
            return self._held

    def drop_if_holding(self, access_key: str) -> None:
        # 32 rollouts see the same 403 at once: only the first drop resolves afresh.
        with self._lock:
            if self._held is not None and self._held[0] == access_key:
                self._held = None


def _access_key(token: str) -> str:
    from mtrl_course.local.tokens import parse_token

    return parse_token(token).access_key


@dataclass
class StrategyResult:
    """One strategy's run: counts from the real calls, latencies in milliseconds."""

    strategy: str
    rollouts: int
    calls: int
    signatures: int
    provider_resolutions: int
    starved: int
    rejected_403: int
    failed_calls: int
    failed_rollouts: int
    latency_ms_p50: float
    latency_ms_p95: float
    seconds: float

    def row(self) -> dict[str, Any]:
        return dict(self.__dict__)


def token_strategies(
    strategies: Sequence[str] = STRATEGIES,
    *,
    concurrency: int = CONCURRENCY,
    rollouts: int = 2 * CONCURRENCY,
    calls_per_rollout: int = 6,
    call_latency_s: float = 0.005,
    rotate_at: float = 0.5,
    provider: dict[str, float] | None = None,
) -> list[StrategyResult]:
    """Run `rollouts` rollouts, `concurrency` at a time, each making `calls_per_rollout` model
    calls signed by one strategy; the credentials rotate once `rotate_at` of the calls are done.

    Each call is checked by the Job Runtime emulator's real bearer-token verification (SigV4
    tokens in the SDK's format, `local.tokens.mint_token`) and then takes `call_latency_s` (the
    model's sampling, a model). A 403 is retried up to the agent's MAX_AUTH_RETRIES times, as the
    rollout handler does; a strategy that re-signs on 403 re-signs first.
    """
    unknown = [s for s in strategies if s not in STRATEGIES]
    if unknown:
        raise ValueError(f"unknown strategies {unknown}; choose from {list(STRATEGIES)}")
    if not 0 <= rotate_at <= 1:
        raise ValueError(f"rotate_at is a share of the calls (0 to 1), got {rotate_at}")
    return [
        _run_strategy(s, concurrency, rollouts, calls_per_rollout, call_latency_s, rotate_at, provider or {})
        for s in strategies
    ]


def _run_strategy(
    strategy: str,
    concurrency: int,
    rollouts: int,
    calls_per_rollout: int,
    call_latency_s: float,
    rotate_at: float,
    provider_settings: dict[str, float],
) -> StrategyResult:
    from concurrent.futures import ThreadPoolExecutor

    emulator = JobRuntimeEmulator()
    provider = CredentialProviderModel(emulator, **provider_settings)  # type: ignore[arg-type]
    session = SharedSessionModel(provider)
    signatures = itertools.count()
    signed = [0]
    lock = threading.Lock()
    total_calls = rollouts * calls_per_rollout
    rotate_after = int(total_calls * rotate_at)
    done = [0]
    counts = {"403": 0, "failed_calls": 0}
    latencies: list[float] = []

    def mint(keys: tuple[str, str]) -> str:
        with lock:
            signed[0] = next(signatures) + 1
        return mint_token(keys[0], keys[1], REGION)

    hour = auth.TokenCache(HOUR_S, mint=lambda region: mint(session.credentials()))
    course = auth.TokenCache(auth.TOKEN_TTL_SECONDS, mint=lambda region: mint(session.credentials()))

    def token() -> str:
        if strategy == STRATEGY_FRESH:
            return mint(provider.resolve())
        return (hour if strategy == STRATEGY_HOUR else course).get(REGION)

    def call() -> bool:
        started = time.perf_counter()
        ok = False
        for _ in range(1 + rollout.MAX_AUTH_RETRIES):
            try:
                bearer = token()
            except CredentialStarvation:
                break
            try:
                emulator.authenticate(f"Bearer {bearer}")
            except JobRuntimeError:
                with lock:
                    counts["403"] += 1
                if strategy == STRATEGY_COURSE:
                    course.invalidate(REGION, token=bearer)
                    session.drop_if_holding(_access_key(bearer))
                continue
            time.sleep(call_latency_s)
            ok = True
            break
        with lock:
            latencies.append((time.perf_counter() - started) * 1000)
            done[0] += 1
            if done[0] == rotate_after:
                provider.rotate()
            if not ok:
                counts["failed_calls"] += 1
        return ok

    def one_rollout(_: int) -> bool:
        return all([call() for _ in range(calls_per_rollout)])

    if rotate_after == 0:  # rotate_at 0: the credentials rotate before the first call
        provider.rotate()
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        results = list(pool.map(one_rollout, range(rollouts)))
    seconds = time.perf_counter() - started
    return StrategyResult(
        strategy=strategy,
        rollouts=rollouts,
        calls=total_calls,
        signatures=signed[0],
        provider_resolutions=provider.resolutions,
        starved=provider.starved,
        rejected_403=counts["403"],
        failed_calls=counts["failed_calls"],
        failed_rollouts=sum(not ok for ok in results),
        latency_ms_p50=float(np.percentile(latencies, 50)),
        latency_ms_p95=float(np.percentile(latencies, 95)),
        seconds=seconds,
    )


# --- the SDK's feedback client and the decorator order -------------------------------------------


@dataclass
class FeedbackDemo:
    """One real invocation of an entrypoint whose SDK wrapper reports to a served emulator."""

    order: str
    http_status: int
    answer: Any
    rewards_recorded: list[float] | None
    feedback_signatures: int


@contextlib.contextmanager
def _counting_feedback_signer() -> Iterator[list[int]]:
    """Count the SDK feedback client's signatures (it signs each of its requests afresh)."""
    import importlib

    module = importlib.import_module(auth.FEEDBACK_MODULE)
    original = getattr(module, auth.FEEDBACK_SIGNER)
    count = [0]

    def counted(*args: Any, **kwargs: Any) -> str:
        count[0] += 1
        return original(*args, **kwargs)

    setattr(module, auth.FEEDBACK_SIGNER, counted)
    try:
        yield count
    finally:
        setattr(module, auth.FEEDBACK_SIGNER, original)


def decorator_order(reward: float = 1.25) -> list[FeedbackDemo]:
    """Serve a BedrockAgentCoreApp twice, decorators in the right and the reversed order, invoke
    each once over HTTP (the app's own ASGI server, in-process) and read what the emulator recorded.

    The handler returns `{"reward": reward}` without playing (the order, not the game, is the
    lesson). Uses the process's Job Runtime emulator (`runner.job_runtime()`), which trusts the
    offline credentials the SDK signs with.
    """
    from bedrock_agentcore import BedrockAgentCoreApp
    from sagemaker.train.rft import sagemaker_rft_handler
    from starlette.testclient import TestClient

    emulator = runner.job_runtime()
    account = _backend_account()
    arn = f"arn:aws:sagemaker:{REGION}:{account}:job/AgentRFT/failure-lab-decorators-{os.getpid()}"
    emulator.register_job(arn, StandInPolicy())
    endpoint = emulator.serve().endpoint
    out: list[FeedbackDemo] = []
    # The app logs a JSON line per invocation to stdout; the lesson reads the emulator instead.
    app_logger = logging.getLogger("bedrock_agentcore.app")
    level = app_logger.level
    app_logger.setLevel(logging.WARNING)
    try:
        for order in ("@app.entrypoint over @sagemaker_rft_handler", "@sagemaker_rft_handler over @app.entrypoint"):
            app = BedrockAgentCoreApp()

            def handler(payload: dict) -> dict:
                return {"reward": reward}

            if order.startswith("@app"):
                app.entrypoint(sagemaker_rft_handler(handler))
            else:
                # Reversed: the app registers the bare handler; the SDK wrapper around it is
                # never what the app calls.
                sagemaker_rft_handler(app.entrypoint(handler))
            tid = f"decorators-{len(out)}"
            emulator.start_trajectory(arn, tid)
            payload = {
                "prompt": "{}",
                "metadata": {"jobArn": arn, "trajectoryId": tid, "endpoint": endpoint, "region": REGION},
            }
            with _counting_feedback_signer() as count, TestClient(app) as client:
                reply = client.post("/invocations", json=payload)
            record = emulator.trajectory(arn, tid)
            out.append(FeedbackDemo(order, reply.status_code, reply.json(), _rewards(record), count[0]))
    finally:
        app_logger.setLevel(level)
        emulator.close_job(arn)
    return out


def _rewards(record: Any) -> list[float] | None:
    rewards = getattr(record, "rewards", None)
    return None if rewards is None else [float(r) for r in rewards]


def _backend_account() -> str:
    from mtrl_course.local.offline_backend import active

    return active().account


# --- training runs with an in-memory job ---------------------------------------------------------


def rows(split: str) -> list[str]:
    """The task strings of `data/<split>-data.jsonl` (training or validation)."""
    path = DATA_DIR / f"{split}-data.jsonl"
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: build the dataset with `mtrl dataset build` (notebook 04)")
    return [json.loads(line)["prompt"] for line in path.read_text().splitlines() if line.strip()]


class MemoryJob:
    """Just enough of the local service's job (`runner.ReportingJob`) for `runner.train`: metrics
    go to an MLflow store of its own, the failure reason is kept in `failure`."""

    category = "AgentRFT"

    def __init__(
        self,
        name: str,
        hyperparameters: Mapping[str, Any],
        prompts: dict[str, list[str]],
        tracking_uri: str,
        *,
        experiment: str = "failure-lab",
    ) -> None:
        self.name = name
        self.experiment = experiment  # the MLflow experiment its runs are logged under
        account = _backend_account()
        self.arn = f"arn:aws:sagemaker:{REGION}:{account}:job/AgentRFT/{name}"
        self.config = SimpleNamespace(
            base_model=BASE_MODEL, input_model_package_arn=None, output_model_package_group_arn=None, region=REGION
        )
        # Typed, with the service's defaults, and an unknown name refused in its words (not dropped);
        # ranges are not checked: experiment runs go below the service's minimums on purpose.
        self.training_hyperparameters = TrainingHyperparameters.unbounded(hyperparameters)
        self.hyperparameters = self.training_hyperparameters.as_dict()
        self._prompts = prompts
        self.mlflow_tracking_uri = tracking_uri
        self.runtime_arn = f"arn:aws:bedrock-agentcore:{REGION}:{account}:runtime/failure-lab-none"
        self.failure: str | None = None
        self.messages: list[str] = []
        self.run_id = ""

    def prompts(self, channel: str) -> list[str]:
        return list(self._prompts.get(channel, []))

    def set_secondary(self, status: str, message: str = "") -> None: ...
    def update_progress(self, **info: Any) -> None: ...
    def set_rollout_info(self, total: int, completed: int) -> None: ...
    def add_billable_tokens(self, prefill: int = 0, sample: int = 0, train: int = 0) -> None: ...
    def register_output_model_package(self, description: str = "", checkpoint: bool = False) -> str:
        return ""

    def log(self, message: str) -> None:
        self.messages.append(message)

    def should_stop(self) -> bool:
        return False

    def fail(self, reason: str) -> None:
        self.failure = reason

    def start_mlflow_run(self) -> tuple[str, str]:
        from mlflow.tracking import MlflowClient

        client = MlflowClient(tracking_uri=self.mlflow_tracking_uri)
        experiment = client.get_experiment_by_name(self.experiment)
        experiment_id = experiment.experiment_id if experiment else client.create_experiment(self.experiment)
        self.run_id = client.create_run(experiment_id, run_name=self.name).info.run_id
        return str(experiment_id), self.run_id

    def metric(self, key: str) -> dict[int, float]:
        """One metric's history, step -> value."""
        from mlflow.tracking import MlflowClient

        history = MlflowClient(tracking_uri=self.mlflow_tracking_uri).get_metric_history(self.run_id, key)
        return {m.step: m.value for m in history}


@contextlib.contextmanager
def raw_text_recovery(enabled: bool) -> Iterator[None]:
    """Within the block, the agent reads guesses written as raw text back (True, the default) or not."""
    with config.environment({rollout.RAW_TEXT_RECOVERY_ENV: "on" if enabled else "off"}):
        yield


@contextlib.contextmanager
def reasoning_effort(effort: str) -> Iterator[None]:
    """Within the block, the agent sends `effort` with every model call (the runtime's setting)."""
    with config.environment({rollout.REASONING_EFFORT_ENV: effort}):
        yield


# The course's default offline run (service_spec's offline overrides over the walkthrough's, as
# mtrl_course.training plans it): 32 prompts x 8 rollouts, 10 steps, validation every 2 steps.
DEFAULT_RUN: dict[str, Any] = {**WALKTHROUGH_OVERRIDES, **OFFLINE_OVERRIDES}
DEPLOYED_EFFORT = "low"
_RUNS = itertools.count(1)


@dataclass
class TrainingRun:
    """A finished (or failed) run: its job, final adapter, the metrics asked for and checkpoints."""

    job: MemoryJob
    adapter: Adapter | None
    metrics: dict[str, dict[int, float]]
    checkpoints: dict[int, Path]
    seconds: float
    games: list[Any] = field(default_factory=list, repr=False)


def run_training(
    seed: int,
    *,
    state_dir: Path,
    hyperparameters: dict[str, Any] | None = None,
    recovery: bool = True,
    fault: str | None = None,
    checkpoint_every: int = 0,
    metric_keys: Sequence[str] = (),
    collect_games: bool = False,
    train_rows: list[str] | None = None,
) -> TrainingRun:
    """One training run through the real runner (fast lane) with an in-memory job.

    `hyperparameters` override the course's default offline run (`DEFAULT_RUN` on the service's
    documented defaults); the runtime's reasoning effort is the deployed "low". With
    `collect_games`, every finished game of the run (training and validation) is kept.
    """
    hp = {**DEFAULT_RUN, **(hyperparameters or {})}  # the job applies the table's defaults
    # Unique across kernels (adapters and checkpoints are files named after the job), and the
    # timestamp suffix is the one the SDKs use, which the notebooks' output checks already mask.
    name = f"failure-lab-{next(_RUNS):03d}-s{seed}-{time.strftime('%Y%m%d%H%M%S')}"
    state_dir = Path(state_dir)
    state_dir.mkdir(parents=True, exist_ok=True)
    tracking = mlflow_store.ensure_store(state_dir / "failure-lab-mlflow.db")
    prompts = {"train": train_rows or rows("training"), "validation": rows("validation")}
    job = MemoryJob(name, hp, prompts, tracking)
    adapters = state_dir / "adapters"
    games: list[Any] = []
    options = runner.RunnerOptions(
        seed=seed,
        adapter_dir=adapters,
        fault=fault,
        checkpoint_every=checkpoint_every,
        observer=(lambda task_id, game: games.append(game)) if collect_games else None,
    )
    started = time.monotonic()
    with raw_text_recovery(recovery), reasoning_effort(DEPLOYED_EFFORT):
        runner.train(job, options)
    seconds = time.monotonic() - started
    final = adapters / f"{name}.json"
    checkpoints = {
        step: runner.checkpoint_path(adapters, name, step)
        for step in range(1, job.training_hyperparameters.max_steps + 1)
        if runner.checkpoint_path(adapters, name, step).is_file()
    }
    return TrainingRun(
        job=job,
        adapter=Adapter.load(final) if final.is_file() else None,
        metrics={key: job.metric(key) for key in metric_keys} if job.run_id else {},
        checkpoints=checkpoints,
        seconds=seconds,
        games=games,
    )


# --- games at serving settings ---------------------------------------------------------------------


@dataclass
class Game:
    """One finished game as the evaluation reads it."""

    word: str
    reward: float
    solved: bool
    guesses: int
    finish_reasons: tuple[str, ...]
    completion_tokens: int


_PLAYS = itertools.count(1)


def play(
    adapter: Adapter | None,
    tasks: Sequence[str],
    *,
    seed: int,
    temperature: float = 1.0,
    effort: str = DEPLOYED_EFFORT,
    max_tokens: int | None = 8192,
    rollouts: int = 1,
) -> list[Game]:
    """Play `tasks` (`rollouts` times each) through the fast lane, as an evaluation job would:
    the real handler, game and reward, with the stand-in policy (base, or with `adapter`)."""
    emulator = JobRuntimeEmulator()
    arn = f"arn:aws:sagemaker:{REGION}:{_backend_account()}:job/AgentRFTEvaluation/failure-lab-{os.getpid()}-{next(_PLAYS)}"
    emulator.register_job(arn, StandInPolicy(adapter, seed=seed))
    finished: dict[str, Any] = {}
    out = []
    with reasoning_effort(effort):
        for i, task in enumerate(tasks):
            task_id = json.loads(task)["id"]
            for r in range(rollouts):
                tid = f"e{i:04d}-r{r:02d}"
                emulator.start_trajectory(arn, tid, rng_key=[runner.PHASE_CODES["eval"], 0, i, r, 0])
                fastlane.play_episode(
                    emulator,
                    arn,
                    tid,
                    task,
                    temperature=temperature,
                    max_tokens=max_tokens,
                    observer=lambda task_id, game: finished.update({task_id: game}),
                )
                game = finished.pop(task_id, None)
                samples = emulator.trajectory(arn, tid).samples
                out.append(
                    Game(
                        word=json.loads(task)["answer"].upper(),
                        reward=float(game.final_reward()) if game is not None else float(NO_PLAY_REWARD),
                        solved=bool(game is not None and game.solved),
                        guesses=len(game.policy_guesses) if game is not None else 0,
                        finish_reasons=tuple(str(s.finish_reason) for s in samples),
                        completion_tokens=sum(s.completion_tokens for s in samples),
                    )
                )
    emulator.close_job(arn)
    return out


def summarize(games: Sequence[Game]) -> dict[str, float]:
    """Solve rate, mean reward, no-play share (no valid guess: the floor reward) and tokens."""
    if not games:
        raise ValueError("no games to summarize")
    return {
        "games": float(len(games)),
        "solve_rate": float(np.mean([g.solved for g in games])),
        "mean_reward": float(np.mean([g.reward for g in games])),
        "no_play_share": float(np.mean([g.guesses == 0 for g in games])),
        "completion_tokens_per_game": float(np.mean([g.completion_tokens for g in games])),
    }


def no_play_count(games: Sequence[Any]) -> int:
    """Games (`wordle_agent.game.WordleGame`) in which the policy made no valid guess (seeded
    prior guesses do not count): the ones that score the floor reward."""
    return sum(1 for g in games if not g.policy_guesses)


def evaluate_checkpoints(
    checkpoints: dict[int, Path],
    tasks: Sequence[str],
    *,
    seed: int,
    temperature: float = 1.0,
    effort: str = DEPLOYED_EFFORT,
    progress: Callable[[int], None] | None = None,
) -> dict[int, dict[str, float]]:
    """Each checkpoint's `summarize(play(...))` at one serving setting; step 0 is the base."""
    out = {0: summarize(play(None, tasks, seed=seed, temperature=temperature, effort=effort))}
    for step, path in sorted(checkpoints.items()):
        out[step] = summarize(play(Adapter.load(path), tasks, seed=seed, temperature=temperature, effort=effort))
        if progress is not None:
            progress(step)
    return out
