"""The work inside an offline job: training (AgentRFT) and evaluation (AgentRFTEvaluation) runners.

The local MTRL service (`mtrl_course.local.service`) validates CreateJob, walks the job through
Starting, Downloading and Pending, then calls a runner with the `LocalJob`. These runners do what
the real service does from there, with the stand-in policy (`mtrl_course.local.stand_in_policy`) in place
of the base model, and report through the job's methods (secondary status, ProgressInfo,
RolloutInfo, billable tokens, MLflow details, the output model package, FailureReason).

Training, per step: take `global_batch_size` prompts (each epoch visits the rows in an order
shuffled with the seed), play `group_size` rollouts of each at `temperature`; compute group
advantages and update the adapter with GRPO (`mtrl_course.local.grpo`); log the service's metrics
to MLflow. At most min(`rollout_max_concurrency`, the lane's worker count) rollouts are in flight.
A rollout that fails to deliver, or ends without a reward after running past `rollout_timeout`,
is tried again with a new trajectory, up to `rollout_max_retries` times (threads cannot be killed,
so the timeout is judged when the rollout returns; the handler's own 420 s budget bounds it).
Validation (one rollout per validation row at temperature 0) runs before the first step, every
`val_every` steps and after the last (`val_every` 0 turns it off). At the end the adapter is
saved under `config.STATE_DIR` and registered as the output model package. An input model
package (`InputModelPackageArn`) that a local job produced is where training resumes from.

Evaluation: `eval_group_size` rollouts of every evaluation row at the requested temperature, with
the base stand-in or the adapter of `ModelPackageConfig.InputModelPackageArn`; `eval/*` metrics.

Lanes (a runner option, set by the toolkit with `make_training_runner(lane=...)`, because the
service validates hyperparameters against the documented spec and would refuse a made-up one):
- "fast" (default): rollouts in-process through `mtrl_course.local.fastlane`;
- "full": each rollout is an InvokeAgentRuntime on the job's local AgentCore runtime (HTTP), whose
  real handler calls the Job Runtime emulator over loopback with bearer tokens.
Both use the same emulator, policy, records and metrics.

Failures, as the service reports them (FailureReason):
- a rollout that sent no sampling request: "No sampling requests were received ..." (for
  instance when every model call failed authentication);
- the agent signalled a failure (CompleteRollout with status failed);
- no reward arrived in time (CompleteRollout without UpdateReward);
- the agent runtime restarted (redeployed) while the job ran: its in-flight rollouts are lost,
  which the service reports as no sampling requests. The job fails at once: invocations are
  pinned to the runtime generation the job started with, the runtime cuts those in flight, and
  nothing more is dispatched.
The `fault` option injects each of them at training step `fault_step` (or into an evaluation
job's batch) for the lessons: "auth_failure", "agent_error", "missing_reward" (fast lane only:
they swap the handler of the batch's first rollout) and "runtime_restart" (mid-batch, once the
first rollouts are in flight, as a real redeploy would land).

An attempt the service gives up on (its invocation failed) has its session ended at the Job
Runtime (`end_session`), so a reward its agent reports afterwards is refused: no reward is
recorded for a rollout the service was told failed. One reported before the failure counts.

Course options (`RunnerOptions`): lane, seed, workers, fault, fault_step, reward_grace_seconds,
adapter_dir, reward and checkpoint_every. `reward` selects what the rollouts report (fast lane only, because it
swaps the handler as the faults do): any design of the one registry, `mtrl_course.rewards`:
"tiered" (default: the deployed agent's own `game.final_reward()`, untouched), "outcome_only"
(the same tiers without the shaping term), "legacy" (the first, summed design) or "first_fix"
(the walkthrough's first fix). The game is played by
the same handler either way; only the number sent with UpdateReward changes, so the reward deep
dive can train on a subtly wrong reward without redeploying the agent. The toolkit installs runners with `install(service, **options)`.

Billable tokens (the DescribeJob analogue): prefill = prompt tokens of every sampling request,
sample = completion tokens of every sampling request (training and validation rollouts alike, and
retried attempts too: they were sampled); train = prompt + completion tokens of every model call
of the trajectories that entered an update (each call is one datum). That reading matches the
walkthrough's run, whose train count (643.3 M) is close to its prefill + sample (651.3 M) minus
the validation rollouts.

Determinism: every random draw of the policy comes from (seed, phase, step, prompt row, rollout
index, attempt, turn), the update sums in a fixed order and results are gathered in task order, so
two jobs with the same seed log the same metrics (except `timing_s/*`), whatever the threads do.
"""

from __future__ import annotations

import json
import math
import os
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from mtrl_course import config, rewards
from mtrl_course.service_spec import TrainingHyperparameters
from mtrl_course.local import fastlane, metrics
from mtrl_course.local.job_runtime_emulator import JobRuntimeEmulator, TrajectoryRecord
from mtrl_course.local.names import (
    FAULT_AGENT_ERROR,
    FAULT_AUTH,
    FAULT_MISSING_REWARD,
    FAULT_RESTART,
    FAULTS,
    LANE_FAST,
    LANE_FULL,
    LANES,
)
from mtrl_course.local.standin_lane import ADAPTER_DIR
from mtrl_course.local.trainee import (
    POLICIES,
    POLICY_LEARNER,
    POLICY_STANDIN,
    POLICY_TAG,
    Trainee,
    evaluation_policy,
    start_trainee,
)
from mtrl_course.rl.advantages import ADVANTAGE_EPS, DEFAULT_ESTIMATOR, IMPLEMENTED_METHODS, estimator, group_advantages
from wordle_agent import rollout

FAST_LANE_ONLY_FAULTS = (FAULT_AGENT_ERROR, FAULT_MISSING_REWARD)
# The fast lane is CPU-bound Python: a second thread only contends for the GIL. Measured on two
# cores (3 training steps of 256 episodes): 2 threads took 40% more CPU than 1 for the same result.
FAST_LANE_WORKERS = 1
# The full lane waits on HTTP; the service's own bound (rollout_max_concurrency, 32 to 96) is
# far more than two cores can serve.
FULL_LANE_WORKERS = 8
# Offline agents report their reward before their invocation returns; the real service waits up
# to rollout_timeout, the local one only this long after the agent answered.
REWARD_GRACE_S = 2.0
REWARD_POLL_S = 0.02
# The injected runtime_restart waits at most this long for invocations to be in flight.
FAULT_RESTART_WAIT_S = 5.0
# AgentCore's minimum runtime session id length.
SESSION_ID_MIN = 33
PHASE_CODES = {"train": 0, "val": 1, "eval": 2}

NO_SAMPLES = "No sampling requests were received"
# Which model plays (a runner option, or this environment variable for a whole process): the
# stand-in policy (the default) or the learner, a tiny language model (`mtrl_course.learner`,
# served by `local.learner_policy`, trained by `local.learner_lane`).
POLICY_ENV = "MTRL_OFFLINE_POLICY"


def default_policy() -> str:
    """`MTRL_OFFLINE_POLICY` if set, else the stand-in; a value naming no policy is refused by name."""
    value = os.environ.get(POLICY_ENV, "").strip().lower()
    if value and value not in POLICIES:
        raise ValueError(
            f"{POLICY_ENV}={value!r} names no offline policy; use one of {', '.join(POLICIES)} or unset it"
        )
    return value or POLICY_STANDIN


class ReportingJob(Protocol):
    """What a runner needs from the service's job (`mtrl_course.local.service.LocalJob`)."""

    name: str
    arn: str
    category: str
    config: Any  # JobConfig: base_model, input_model_package_arn, output_model_package_group_arn

    @property
    def hyperparameters(self) -> dict[str, Any]: ...
    @property
    def training_hyperparameters(self) -> TrainingHyperparameters: ...
    @property
    def runtime_arn(self) -> str: ...
    @property
    def mlflow_tracking_uri(self) -> str: ...
    def prompts(self, channel: str) -> list[str]: ...
    def set_secondary(self, status: str, message: str = "") -> None: ...
    def update_progress(self, **info: Any) -> None: ...
    def set_rollout_info(self, total: int, completed: int) -> None: ...
    def add_billable_tokens(self, prefill: int = 0, sample: int = 0, train: int = 0) -> None: ...
    def register_output_model_package(self, description: str = "", checkpoint: bool = False) -> str: ...
    def start_mlflow_run(self) -> tuple[str, str]: ...
    def log(self, message: str) -> None: ...
    def fail(self, reason: str) -> None: ...
    def should_stop(self) -> bool: ...


@dataclass(frozen=True)
class RunnerOptions:
    """Course-side settings of a runner (the job's hyperparameters come from the job)."""

    lane: str = LANE_FAST
    seed: int = config.DEFAULT_SEED
    workers: int | None = None  # default: FAST_LANE_WORKERS or FULL_LANE_WORKERS
    fault: str | None = None
    fault_step: int = 1
    reward_grace_seconds: float = REWARD_GRACE_S
    adapter_dir: Path = ADAPTER_DIR
    reward: str = rewards.TIERED
    # How rewards become per-token weights for either learner (`rl.advantages`): "grpo" (std-scaled
    # advantages, 1/|o_i|) or "dr_grpo" (mean-only, no length normalisation). Offline only: the
    # service documents no such switch.
    estimator: str = DEFAULT_ESTIMATOR
    # Save the adapter every this many steps as `<job>-step<NNN>.json` in adapter_dir (0: never),
    # the analogue of the service's intermediate checkpoints: notebook 10 evaluates them at
    # serving settings to ask whether training longer helps where the model is served.
    checkpoint_every: int = 0
    policy: str = field(default_factory=default_policy)
    # Handed every finished game of the job's rollouts, `observer(task_id, game)` (fast lane only:
    # on the full lane the games live in the served app, behind HTTP).
    observer: rollout.GameObserver | None = None

    def __post_init__(self) -> None:
        if self.policy not in POLICIES:
            raise ValueError(f"policy {self.policy!r} is not one of {POLICIES}")
        if self.lane not in LANES:
            raise ValueError(f"lane {self.lane!r} is not one of {LANES}")
        estimator(self.estimator)  # a clear error naming the choices
        if self.reward not in rewards.REWARDS:
            raise ValueError(f"reward {self.reward!r} is not one of {rewards.DESIGNS}")
        if self.reward != rewards.TIERED and self.lane != LANE_FAST:
            raise ValueError(f"reward {self.reward!r} swaps the rollout handler, which only the fast lane can do")
        if self.fault is not None and self.fault not in FAULTS:
            raise ValueError(f"fault {self.fault!r} is not one of {FAULTS}")
        if self.fault in FAST_LANE_ONLY_FAULTS and self.lane != LANE_FAST:
            raise ValueError(f"fault {self.fault!r} swaps the rollout handler, which only the fast lane can do")
        if self.observer is not None and self.lane != LANE_FAST:
            raise ValueError("an observer sees the games of the fast lane only; the full lane plays them behind HTTP")
        if self.workers is not None and self.workers < 1:
            raise ValueError(f"workers must be at least 1, got {self.workers}")
        if self.checkpoint_every < 0:
            raise ValueError(f"checkpoint_every must be 0 (off) or a number of steps, got {self.checkpoint_every}")


# --- the Job Runtime the runners use ------------------------------------------------------------

_EMULATOR_LOCK = threading.Lock()
_EMULATOR: JobRuntimeEmulator | None = None


def job_runtime() -> JobRuntimeEmulator:
    """The process's Job Runtime emulator: the one attached to the offline backend, else a new one.

    It trusts the offline credentials (so the real handler's bearer tokens verify) and is
    attached to the backend, so boto3 `sagemakerjobruntime` calls reach it too.
    """
    global _EMULATOR
    from mtrl_course.local.offline_backend import active as offline_backend

    backend = offline_backend()
    with _EMULATOR_LOCK:
        attached = backend.job_runtime.emulator
        if attached is None:
            if _EMULATOR is None:
                _EMULATOR = JobRuntimeEmulator()
            attached = _EMULATOR
            backend.attach_job_runtime(attached)
        _trust_current_credentials(attached, backend.account)
        return attached


def _trust_current_credentials(emulator: JobRuntimeEmulator, account: str) -> None:
    import botocore.session

    credentials = botocore.session.get_session().get_credentials()
    if credentials is None:
        return
    frozen = credentials.get_frozen_credentials()
    emulator.add_credentials(frozen.access_key, frozen.secret_key, account, session_token=frozen.token)


# --- rollouts -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class RolloutTask:
    """One rollout the service dispatches: which row, which slot, which sampling settings."""

    phase: str  # "train", "val" or "eval"
    step: int
    prompt_index: int  # the row's index in its channel
    rollout_index: int
    prompt: str
    temperature: float
    top_p: float | None = None
    max_tokens: int | None = None

    def trajectory_id(self, job_name: str, attempt: int) -> str:
        return f"{job_name}-{self.phase}{self.step:04d}-p{self.prompt_index:04d}-r{self.rollout_index:02d}-a{attempt}"

    def rng_key(self, seed: int, attempt: int) -> list[int]:
        return [seed, PHASE_CODES[self.phase], self.step, self.prompt_index, self.rollout_index, attempt]


@dataclass(frozen=True)
class RolloutOutcome:
    task: RolloutTask
    record: metrics.RolloutRecord
    traces: tuple[dict, ...]
    failure: str | None
    prefill_tokens: int
    sample_tokens: int


def _scalar_reward(rewards: tuple[float, ...] | None) -> float | None:
    # A per-turn reward list (UpdateReward with several values) counts as its sum here.
    return None if rewards is None else float(sum(rewards))


def _reward_of(outcome: RolloutOutcome) -> float:
    """The reward GRPO uses; every rollout has one by then (a missing reward fails the job first)."""
    if outcome.record.reward is None:
        raise RuntimeError(f"rollout {outcome.task} reached the update without a reward")
    return float(outcome.record.reward)


def _keep_result_without_reward(
    payload: dict, model: rollout.ModelFactory, observer: rollout.GameObserver | None = None
) -> dict:
    result: dict[str, Any] = dict(rollout.run_rollout(payload, model=model, observer=observer))
    result.pop("reward", None)
    result["status"] = "done"
    return result


def reward_variant_handler(variant: str, inner: Callable[..., Any] = rollout.run_rollout) -> Callable[..., Any]:
    """A handler that plays `inner` and reports the `variant` reward of the game it played.

    `inner` is called as `inner(payload, model=model, observer=...)` (as `rollout.run_rollout`):
    the game is handed to this handler's own observer (then to the caller's, if any), nothing
    process-wide; a rollout that never made a game (a malformed task) keeps the handler's own reward.
    """
    if variant == rewards.TIERED:
        return inner  # the agent already reports the tiered reward
    scorer = rewards.REWARDS[variant]

    def handler(payload: dict, model: rollout.ModelFactory, observer: rollout.GameObserver | None = None) -> Any:
        games: list[Any] = []

        def keep(task_id: str, game: Any) -> None:
            games.append(game)
            if observer is not None:
                observer(task_id, game)

        result = inner(payload, model=model, observer=keep)
        if games and isinstance(result, dict) and "reward" in result:
            result = {**result, "reward": float(scorer(games[-1]))}
        return result

    return handler


def _agent_error_result(
    payload: dict, model: rollout.ModelFactory, observer: rollout.GameObserver | None = None
) -> dict:
    rollout.run_rollout(payload, model=model, observer=observer)
    return {"status": "error", "error": "injected fault: the agent gave up on this rollout"}


class _JobSession:
    """Everything one job's rollouts share: the job, its emulator registration, lane and options."""

    def __init__(
        self,
        job: ReportingJob,
        options: RunnerOptions,
        policy: Any,
        max_concurrency: int,
        timeout_s: float,
        max_retries: int,
    ) -> None:
        from mtrl_course.local.offline_backend import active as offline_backend

        self.job = job
        self.options = options
        self.emulator = job_runtime()
        self.runtime = offline_backend().runtimes.get(job.runtime_arn)
        self.generation = getattr(self.runtime, "generation", 0)
        default_workers = FAST_LANE_WORKERS if options.lane == LANE_FAST else FULL_LANE_WORKERS
        if options.policy == POLICY_LEARNER and options.lane == LANE_FAST:
            from mtrl_course.local.learner_lane import LEARNER_WORKERS

            default_workers = LEARNER_WORKERS
        self.workers = max(1, min(max_concurrency, options.workers or default_workers))
        self.timeout_s = float(timeout_s)
        self.attempts = 1 + int(max_retries)
        self.faulted: set[str] = set()
        self.handler = reward_variant_handler(options.reward)
        self._fault_lock = threading.Lock()
        # The rollout whose handler a fault swaps: the first of the faulted batch, chosen before
        # any thread runs, so the failing trajectory does not depend on thread timing.
        self.fault_target: RolloutTask | None = None
        # The injected restart: when the restart_at-th rollout of the faulted batch is dispatched.
        self.restart_at: int | None = None
        self._dispatched = 0
        if job.arn in self.emulator.jobs():
            # A job deleted and created again under the same name: the shared emulator still
            # holds the old one's trajectories, so this run gets an emulator of its own.
            self.emulator = JobRuntimeEmulator()
            _trust_current_credentials(self.emulator, offline_backend().account)
        if options.lane == LANE_FULL and not getattr(self.runtime, "serving", False):
            # Fail at once: every invocation would otherwise wait out AgentCore's 30 s start-up.
            raise RuntimeError(
                f"the full lane needs the local AgentCore runtime {job.runtime_arn} serving; "
                "start it first (LocalAgentRuntime(...).start())"
            )
        self.emulator.register_job(job.arn, policy)
        if options.lane == LANE_FULL:
            self.emulator.serve()

    def set_policy(self, policy: Any) -> None:
        self.emulator.set_policy(self.job.arn, policy)

    def close(self) -> None:
        try:
            self.emulator.close_job(self.job.arn)
        except KeyError:
            pass

    # -- faults ---------------------------------------------------------------------------------
    def _take_fault(self, name: str) -> bool:
        with self._fault_lock:
            if self.options.fault != name or name in self.faulted:
                return False
            self.faulted.add(name)
            return True

    def before_batch(self, phase: str, step: int, tasks: Sequence[RolloutTask]) -> None:
        """Inject the faults due at this batch, before any of its rollouts runs."""
        if phase == "val" or (phase == "train" and step != self.options.fault_step):
            return
        if self.options.fault in FAST_LANE_ONLY_FAULTS and self.fault_target is None and tasks:
            self.fault_target = tasks[0]
        if self._take_fault(FAULT_AUTH):
            self.job.log("fault injected: every sampling call of this job now fails authentication")
            self.emulator.fail_auth_for(self.job.arn)
        if self._take_fault(FAULT_RESTART):
            # Mid-batch, as a redeploy would land: once the first rollouts are in flight.
            self.restart_at = min(len(tasks), self.workers)
            self._dispatched = 0

    def _count_dispatch(self) -> None:
        """Count a dispatched rollout; start the injected restart when enough are in flight."""
        with self._fault_lock:
            if self.restart_at is None:
                return
            self._dispatched += 1
            if self._dispatched < self.restart_at:
                return
            self.restart_at = None
        self.job.log("fault injected: the agent runtime is restarted (a redeploy) with rollouts in flight")
        if self.runtime is not None and getattr(self.runtime, "serving", False) and self.options.lane == LANE_FULL:
            threading.Thread(target=self._restart_when_busy, name=f"fault-restart-{self.job.name}", daemon=True).start()
        elif self.runtime is not None and getattr(self.runtime, "serving", False):
            # The fast lane's rollouts never pass through the runtime, so there is nothing in
            # flight to wait for: restart it now. In a thread that waited instead, a short job
            # could finish before the restart landed, and the job's fate hung on thread timing.
            self.runtime.restart()
        elif self.runtime is not None:
            # A runtime that is registered but not serving (the fast lane does not need it) is
            # "redeployed" by bumping its generation, as restart() would; the rollouts already
            # running in-process are judged lost.
            self.runtime.generation += 1

    def _runtime(self) -> Any:
        if self.runtime is None:
            raise RuntimeError("the full lane needs the job's runtime, and none is registered for it")
        return self.runtime

    def _restart_when_busy(self) -> None:
        # Wait (briefly) until invocations are actually in flight, so the restart cuts some off.
        deadline = time.monotonic() + FAULT_RESTART_WAIT_S
        while getattr(self.runtime, "in_flight", 1) == 0 and time.monotonic() < deadline:
            time.sleep(REWARD_POLL_S)
        self._runtime().restart()

    def restarted(self) -> str | None:
        """The service's FailureReason tail if the job's runtime was restarted since it began."""
        generation = getattr(self.runtime, "generation", self.generation)
        if generation == self.generation:
            return None
        return (
            f"the agent runtime {self.job.runtime_arn} was restarted while the job was running "
            f"(generation {self.generation} -> {generation}), so its in-flight rollouts never reached the "
            "policy. Never redeploy the agent while a job runs."
        )

    def _handler_for(self, task: RolloutTask, attempt: int) -> Callable[..., Any]:
        if task == self.fault_target and attempt == 0:
            if self._take_fault(FAULT_AGENT_ERROR):
                return _agent_error_result
            if self._take_fault(FAULT_MISSING_REWARD):
                return _keep_result_without_reward
        return self.handler

    # -- one rollout ----------------------------------------------------------------------------
    def play(self, task: RolloutTask) -> RolloutOutcome:
        prefill = sample = 0
        failure: str | None = None
        trajectory: TrajectoryRecord | None = None
        for attempt in range(self.attempts):
            tid = task.trajectory_id(self.job.name, attempt)
            trajectory = self.emulator.start_trajectory(
                self.job.arn,
                tid,
                rng_key=task.rng_key(self.options.seed, attempt),
                phase=task.phase,
                step=task.step,
                prompt_index=task.prompt_index,
                rollout_index=task.rollout_index,
                attempt=attempt,
            )
            started = time.monotonic()
            transport_error: str | None = None
            refusals: list[str] = []
            if self.restarted() is None:
                # After a restart nothing more is dispatched: the job fails at once.
                transport_error, refusals = self._dispatch(task, tid, attempt)
            if transport_error is not None or self.restarted() is not None:
                # The caller (this service) is told the rollout failed: end its session, so a
                # reward the agent reports later is refused; one that came before the cut counts.
                trajectory = self.emulator.end_session(self.job.arn, tid, "the service gave up on this attempt")
            else:
                trajectory = self._await_reward(tid)
            prefill += trajectory.prompt_tokens
            sample += trajectory.completion_tokens
            failure, retry = self._judge(trajectory, transport_error, refusals, time.monotonic() - started)
            if not retry or attempt + 1 == self.attempts:
                break
            self.job.log(f"rollout {tid} is retried: {failure}")
        assert trajectory is not None
        record = metrics.RolloutRecord(
            prompt_index=task.prompt_index,
            rollout_index=task.rollout_index,
            reward=None if failure else _scalar_reward(trajectory.rewards),
            prompt_tokens=tuple(s.prompt_tokens for s in trajectory.samples),
            completion_tokens=tuple(s.completion_tokens for s in trajectory.samples),
            formats=tuple(
                int(s.policy_trace["format"])
                for s in trajectory.samples
                if isinstance(s.policy_trace, dict) and s.policy_trace.get("kind") == "guess"
            ),
        )
        traces = tuple(s.policy_trace for s in trajectory.samples if isinstance(s.policy_trace, dict))
        return RolloutOutcome(task, record, traces, failure, prefill, sample)

    def _dispatch(self, task: RolloutTask, tid: str, attempt: int) -> tuple[str | None, list[str]]:
        """Deliver one rollout to the agent: (transport error message or None, refused sampling calls)."""
        if self.options.lane == LANE_FAST:
            self._count_dispatch()
            episode = fastlane.play_episode(
                self.emulator,
                self.job.arn,
                tid,
                task.prompt,
                temperature=task.temperature,
                top_p=task.top_p,
                max_tokens=task.max_tokens,
                handler=self._handler_for(task, attempt),
                observer=self.options.observer,
            )
            return (episode.error if episode.reported == "nothing" else None), list(episode.refusals)
        from mtrl_course.local.service import ServiceError

        payload = fastlane.payload_for(
            task.prompt, self.job.arn, tid, temperature=task.temperature, top_p=task.top_p, max_tokens=task.max_tokens
        )
        payload["metadata"]["endpoint"] = self.emulator.endpoint
        payload["metadata"]["region"] = self.job.config.region
        session_id = f"{tid}-{uuid.uuid4().hex}"[: max(SESSION_ID_MIN, len(tid) + 33)]
        error_message = None
        self._count_dispatch()
        try:
            # Pinned to the deployment the job started with: after a redeploy nothing reaches the new one.
            self._runtime().invoke_http(json.dumps(payload).encode(), session_id, generation=self.generation)
        except ServiceError as error:
            error_message = error.message
        refused = [f"{r.status} {r.message}" for r in self.emulator.rejections(self.job.arn) if r.trajectory_id == tid]
        return error_message, refused

    def _await_reward(self, tid: str) -> TrajectoryRecord:
        deadline = time.monotonic() + self.options.reward_grace_seconds
        while True:
            trajectory = self.emulator.trajectory(self.job.arn, tid)
            if trajectory.rewards is not None or time.monotonic() >= deadline:
                return trajectory
            time.sleep(REWARD_POLL_S)

    def _judge(
        self, trajectory: TrajectoryRecord, transport_error: str | None, refusals: list[str], elapsed: float
    ) -> tuple[str | None, bool]:
        """(FailureReason or None, whether another attempt may fix it)."""
        tid = trajectory.trajectory_id
        restarted = self.restarted()
        if restarted is not None:
            return f"{NO_SAMPLES} for rollout {tid}: {restarted}", False
        if transport_error is not None and trajectory.completion_status is None:
            return (
                f"Rollout {tid} could not be completed by the agent runtime {self.job.runtime_arn} "
                f"after {self.attempts} attempt(s): {transport_error}",
                True,
            )
        if trajectory.sample_count == 0:
            cause = (
                f"all {len(refusals)} of its sampling calls were refused ({refusals[-1]})"
                if refusals
                else "the agent never called the policy model"
            )
            return f"{NO_SAMPLES} for rollout {tid}: {cause}. A rollout must reach the policy at least once.", False
        if trajectory.completion_status == fastlane.FAILED:
            return (
                f"Rollout {tid} failed: the agent reported CompleteRollout with status FAILED "
                "(an error status or an exception in the handler). Always return a reward.",
                False,
            )
        if trajectory.rewards is None:
            arrived = (
                "CompleteRollout arrived but UpdateReward never did"
                if trajectory.is_complete
                else "neither CompleteRollout nor UpdateReward arrived"
            )
            return (
                f"No reward was received for rollout {tid} within rollout_timeout ({self.timeout_s:g} s): {arrived}.",
                elapsed > self.timeout_s,
            )
        return None, False

    def run(self, tasks: Sequence[RolloutTask]) -> list[RolloutOutcome]:
        """Play tasks with bounded concurrency; results in task order (never completion order)."""
        if not tasks:
            return []
        if self.workers == 1:
            return [self.play(task) for task in tasks]
        with fastlane.installed(), ThreadPoolExecutor(self.workers, f"rollout-{self.job.name}") as pool:
            return list(pool.map(self.play, tasks))


def _first_failure(outcomes: Sequence[RolloutOutcome]) -> str | None:
    return next((o.failure for o in outcomes if o.failure), None)


def _groups(outcomes: Sequence[RolloutOutcome]) -> list[list[RolloutOutcome]]:
    by_prompt: dict[int, list[RolloutOutcome]] = {}
    for outcome in outcomes:
        by_prompt.setdefault(outcome.task.prompt_index, []).append(outcome)
    return [sorted(by_prompt[p], key=lambda o: o.task.rollout_index) for p in sorted(by_prompt)]


# --- MLflow ---------------------------------------------------------------------------------------


class _MlflowLog:
    """The job's MLflow run: parameters, which learner played (its tag), metrics per step."""

    def __init__(self, job: ReportingJob, options: RunnerOptions, policy_tag: str) -> None:
        from mlflow.entities import Param, RunTag
        from mlflow.tracking import MlflowClient

        self.client = MlflowClient(tracking_uri=job.mlflow_tracking_uri)
        self.finished = False
        self.experiment_id, self.run_id = job.start_mlflow_run()
        params = [Param(k, str(v)[:500]) for k, v in sorted(job.hyperparameters.items())]
        tags = [
            RunTag(POLICY_TAG, policy_tag),
            RunTag("mtrl.offline.learner", options.policy),
            RunTag("mtrl.offline.estimator", options.estimator),
            RunTag("mtrl.offline.lane", options.lane),
            RunTag("mtrl.offline.seed", str(options.seed)),
            RunTag("mtrl.offline.reward", options.reward),
            RunTag("mtrl.offline.base_model", str(getattr(job.config, "base_model", ""))),
        ]
        self.client.log_batch(self.run_id, params=params, tags=tags)

    def log(self, values: dict[str, float], step: int) -> None:
        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        items = [Metric(k, float(v), now, step) for k, v in sorted(values.items()) if math.isfinite(float(v))]
        for start in range(0, len(items), 900):  # MLflow takes at most 1,000 metrics per batch
            self.client.log_batch(self.run_id, metrics=items[start : start + 900])

    def finish(self, status: str) -> None:
        """End the run (once; later calls do nothing)."""
        if self.finished:
            return
        self.finished = True
        self.client.set_terminated(self.run_id, status)

    def fail_job(self, job: ReportingJob, reason: str) -> None:
        # The run is closed first: the job turns terminal inside fail(), and whoever waits on it
        # may read the run at once.
        self.finish("FAILED")
        job.fail(reason)


# --- training ---------------------------------------------------------------------------------------


def _batch_rows(rows: int, batch: int, step: int, seed: int) -> tuple[int, int, list[int]]:
    """(epoch, step within epoch, row indices) of 1-based training step `step`.

    Each epoch visits the rows in its own seeded order; a last, partial batch wraps around to
    the start of that order so that every step plays `batch` prompts.
    """
    per_epoch = math.ceil(rows / batch)
    epoch, within = divmod(step - 1, per_epoch)
    order = np.random.default_rng([seed, epoch]).permutation(rows)
    picks = [int(order[(within * batch + i) % rows]) for i in range(batch)]
    return epoch + 1, within + 1, picks


def _validation_due(step: int, total: int, every: int) -> bool:
    return every > 0 and (step == 0 or step == total or step % every == 0)


def _bill_sampling(job: ReportingJob, outcomes: Sequence[RolloutOutcome]) -> None:
    job.add_billable_tokens(
        prefill=sum(o.prefill_tokens for o in outcomes), sample=sum(o.sample_tokens for o in outcomes)
    )


def _records(outcomes: Sequence[RolloutOutcome]) -> list[list[metrics.RolloutRecord]]:
    return [[o.record for o in group] for group in _groups(outcomes)]


def _open(job: ReportingJob, options: RunnerOptions, policy: Any, policy_tag: str) -> tuple[_JobSession, _MlflowLog]:
    hp = job.hyperparameters
    session = _JobSession(
        job, options, policy, int(hp["rollout_max_concurrency"]), hp["rollout_timeout"], hp["rollout_max_retries"]
    )
    try:
        return session, _MlflowLog(job, options, policy_tag)
    except Exception:
        session.close()
        raise


class _Training:
    """One training job's loop: steps of rollouts, GRPO updates and metrics; validation between.

    The same loop for every learner: what differs is behind `trainee` (`local.trainee.Trainee`)."""

    def __init__(self, job: ReportingJob, options: RunnerOptions, trainee: Trainee) -> None:
        hp = self.hp = job.training_hyperparameters
        self.job, self.options, self.trainee = job, options, trainee
        self.estimator = estimator(options.estimator)
        self.train_rows, self.val_rows = job.prompts("train"), job.prompts("validation")
        self.batch, self.group = hp.global_batch_size, hp.group_size
        self.per_epoch = math.ceil(len(self.train_rows) / self.batch)
        self.total_steps = min(hp.max_steps, hp.max_epochs * self.per_epoch)
        self.val_every = hp.val_every if self.val_rows else 0
        self.completed = 0

    def run(self) -> None:
        job, hp, trainee = self.job, self.hp, self.trainee
        if hp.advantage_method not in IMPLEMENTED_METHODS:
            job.log(f"advantage_method {hp.advantage_method} runs as group_based with the {trainee.label}")
        job.set_secondary("Training", f"Training with the {trainee.label} on the {self.options.lane} lane")
        self.session, self.mlflow = _open(job, self.options, trainee.policy(), trainee.tag)
        job.update_progress(
            MaxEpoch=hp.max_epochs,
            StepsPerEpoch=self.per_epoch,
            CurrentEpoch=1,
            CurrentStep=0,
            MaxSteps=self.total_steps,
            BatchSize=self.batch,
        )
        status = "FAILED"
        try:
            with fastlane.installed():
                if not self._validate(0):
                    return
                for step in range(1, self.total_steps + 1):
                    if job.should_stop():
                        status = "KILLED"
                        return
                    if not self._step(step) or not self._validate(step):
                        return
            job.set_secondary("Uploading", f"Saving the {trainee.label} adapter as the output model package")
            trainee.publish(job, self.options.adapter_dir)
            status = "FINISHED"
        finally:
            self.mlflow.finish(status)
            self.session.close()

    def _step(self, step: int) -> bool:
        """One training step; False if it failed the job."""
        hp, started = self.hp, time.monotonic()
        epoch, within, rows = _batch_rows(len(self.train_rows), self.batch, step, self.options.seed)
        self.job.update_progress(CurrentEpoch=epoch, CurrentStep=within)
        sampling = (hp.temperature, hp.sampling_top_p, hp.sampling_max_tokens)
        tasks = [
            RolloutTask("train", step, row, r, self.train_rows[row], *sampling)
            for row in rows
            for r in range(self.group)
        ]
        self.session.before_batch("train", step, tasks)
        outcomes = self.session.run(tasks)
        rollout_seconds = time.monotonic() - started
        _bill_sampling(self.job, outcomes)
        failure = _first_failure(outcomes)
        if failure:
            self.mlflow.fail_job(self.job, failure)
            return False
        self.completed += len(outcomes)
        self.job.set_rollout_info(total=self.total_steps * self.batch * self.group, completed=self.completed)

        groups = _groups(outcomes)
        advantages = [
            group_advantages(
                [_reward_of(o) for o in g],
                method=hp.advantage_method,
                scale_by_std=self.estimator.scale_by_std,
                eps=ADVANTAGE_EPS,
            )
            for g in groups
        ]
        traces = [o.traces for g in groups for o in g]
        update_seconds = self.trainee.update(traces, [float(a) for adv in advantages for a in adv], step)
        if self.options.checkpoint_every and step % self.options.checkpoint_every == 0:
            self.trainee.save(self.options.adapter_dir, f"{self.job.name}-step{int(step):03d}")
        self.session.set_policy(self.trainee.policy())
        train_tokens = sum(o.record.tokens for o in outcomes)
        self.job.add_billable_tokens(train=train_tokens)

        records = [[o.record for o in g] for g in groups]
        values = metrics.rollout_metrics(records, advantages, dispatched=len(tasks))
        values.update(metrics.training_metrics(step, epoch, records, train_tokens))
        values.update(self.trainee.metrics(records, traces))
        values["timing_s/training"] = rollout_seconds
        values["timing_s/policy_update"] = update_seconds
        values["timing_s/step"] = time.monotonic() - started
        self.mlflow.log(values, step)
        return True

    def _validate(self, step: int) -> bool:
        """Validation at temperature 0, one rollout per row, when due; False if it failed the job."""
        if not _validation_due(step, self.total_steps, self.val_every):
            return True
        started = time.monotonic()
        max_tokens = self.hp.sampling_max_tokens
        tasks = [RolloutTask("val", step, i, 0, row, 0.0, None, max_tokens) for i, row in enumerate(self.val_rows)]
        outcomes = self.session.run(tasks)
        _bill_sampling(self.job, outcomes)
        failure = _first_failure(outcomes)
        if failure:
            self.mlflow.fail_job(self.job, failure)
            return False
        values = metrics.success_metrics("val", _records(outcomes), self.hp.success_threshold, self.hp.pass_k_values)
        values["timing_s/eval"] = time.monotonic() - started
        self.mlflow.log(values, step)
        return True


def checkpoint_path(directory: Path, job_name: str, step: int) -> Path:
    """Where `checkpoint_every` saves the adapter of `job_name` after training step `step`."""
    return Path(directory) / f"{job_name}-step{int(step):03d}.json"


def train(job: ReportingJob, options: RunnerOptions) -> None:
    """The training runner's body (see the module docstring)."""
    trainee = start_trainee(options.policy, job, options.adapter_dir, options.seed, estimator(options.estimator))
    if isinstance(trainee, str):
        job.fail(trainee)
        return
    _Training(job, options, trainee).run()


# --- evaluation -----------------------------------------------------------------------------------


def evaluate(job: ReportingJob, options: RunnerOptions) -> None:
    """The evaluation runner's body: eval_group_size rollouts per row at the requested temperature."""
    hp = job.hyperparameters
    found = evaluation_policy(options.policy, job, options.adapter_dir, options.seed)
    if isinstance(found, str):
        job.fail(found)
        return
    policy, label, tag, adapter_step, own_metrics = found
    rows = job.prompts("evaluation")
    model = f"adapter step {adapter_step}" if adapter_step else "base"
    job.set_secondary("Evaluating", f"Evaluating the {label} ({model}) on the {options.lane} lane")
    session, mlflow = _open(job, options, policy, tag)
    status = "FAILED"
    try:
        started = time.monotonic()
        sampling = (float(hp["temperature"]), float(hp["sampling_top_p"]), int(hp["sampling_max_tokens"]))
        tasks = [
            RolloutTask("eval", 0, i, r, row, *sampling)
            for i, row in enumerate(rows)
            for r in range(int(hp["eval_group_size"]))
        ]
        session.before_batch("eval", 0, tasks)
        with fastlane.installed():
            outcomes = session.run(tasks)
        _bill_sampling(job, outcomes)
        failure = _first_failure(outcomes)
        if failure:
            mlflow.fail_job(job, failure)
            return
        job.set_rollout_info(total=len(tasks), completed=len(outcomes))
        records = _records(outcomes)
        values = metrics.success_metrics("eval", records, float(hp["success_threshold"]), hp["pass_k_values"])
        values.update(own_metrics(records))
        values["timing_s/eval"] = time.monotonic() - started
        mlflow.log(values, 0)
        job.set_secondary("Uploading", "Writing the evaluation results")
        status = "FINISHED"
    finally:
        mlflow.finish(status)
        session.close()


# --- the runners the service calls ------------------------------------------------------------------


def make_training_runner(**options: Any) -> Callable[[ReportingJob], None]:
    """A training runner with course options (`RunnerOptions` fields: lane, seed, workers, fault, ...)."""
    settings = RunnerOptions(**options)
    return lambda job: train(job, settings)


def make_evaluation_runner(**options: Any) -> Callable[[ReportingJob], None]:
    """An evaluation runner with course options (as `make_training_runner`)."""
    settings = RunnerOptions(**options)
    return lambda job: evaluate(job, settings)


def training_runner(job: ReportingJob) -> None:
    """The default training runner: fast lane, the course's default seed."""
    train(job, RunnerOptions())


def evaluation_runner(job: ReportingJob) -> None:
    """The default evaluation runner: fast lane, the course's default seed."""
    evaluate(job, RunnerOptions())


def install(service: Any = None, **options: Any) -> None:
    """Install both runners (with `options`) on a local service (default: the offline backend's)."""
    from mtrl_course.local.service import EVALUATION, TRAINING

    if service is None:
        from mtrl_course.local.offline_backend import active as offline_backend

        service = offline_backend().service
    service.set_runner(TRAINING, make_training_runner(**options))
    service.set_runner(EVALUATION, make_evaluation_runner(**options))
