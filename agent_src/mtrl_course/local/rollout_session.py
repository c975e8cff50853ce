"""One job's rollouts: the Job Runtime the runners use, and the session that plays a batch of them.

`JobSession` dispatches a batch of rollout tasks to the job's agent runtime (the fast lane, in
process, or the full lane, over HTTP), with the service's concurrency, timeout and retries; waits
for each reward the agent reports to the Job Runtime; injects the faults a course option asks
for; and gathers the outcomes in task order. `job_runtime()` is the process's Job Runtime
emulator. `reward_variant_handler` swaps the reward a rollout reports (the fast lane's reward
designs, `mtrl_course.rewards`).
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any


from mtrl_course import rewards
from mtrl_course.local import fastlane, metrics
from mtrl_course.local.job_runtime_emulator import JobRuntimeEmulator, TrajectoryRecord
from mtrl_course.local.names import (
    FAULT_AGENT_ERROR,
    FAULT_AUTH,
    FAULT_MISSING_REWARD,
    FAULT_RESTART,
    LANE_FAST,
    LANE_FULL,
)
from mtrl_course.local.trainee import (
    POLICY_LEARNER,
)
from wordle_agent import rollout
from mtrl_course.local.job_options import FAST_LANE_ONLY_FAULTS, ReportingJob, RunnerOptions

# The fast lane is CPU-bound Python: a second thread only contends for the GIL. Measured on two
# cores (3 training steps of 256 episodes): 2 threads took 40% more CPU than 1 for the same result.
FAST_LANE_WORKERS = 1
# The full lane waits on HTTP; the service's own bound (rollout_max_concurrency, 32 to 96) is
# far more than two cores can serve.
FULL_LANE_WORKERS = 8
REWARD_POLL_S = 0.02
# The injected runtime_restart waits at most this long for invocations to be in flight.
FAULT_RESTART_WAIT_S = 5.0
# AgentCore's minimum runtime session id length.
SESSION_ID_MIN = 33
PHASE_CODES = {"train": 0, "val": 1, "eval": 2}

NO_SAMPLES = "No sampling requests were received"
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


class JobSession:
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


def first_failure(outcomes: Sequence[RolloutOutcome]) -> str | None:
    return next((o.failure for o in outcomes if o.failure), None)


def by_prompt(outcomes: Sequence[RolloutOutcome]) -> list[list[RolloutOutcome]]:
    by_prompt: dict[int, list[RolloutOutcome]] = {}
    for outcome in outcomes:
        by_prompt.setdefault(outcome.task.prompt_index, []).append(outcome)
    return [sorted(by_prompt[p], key=lambda o: o.task.rollout_index) for p in sorted(by_prompt)]
