"""The work inside an offline job: training (AgentRFT) and evaluation (AgentRFTEvaluation) runners.

The local MTRL service (`mtrl_course.local.service`) validates CreateJob, walks the job through
Starting, Downloading and Pending, then calls a runner with the `LocalJob`. These runners do what
the real service does from there, with a small learner in place of the base model (the stand-in
policy by default, or the tiny language model: `local.trainee`), and report through the job's
methods (secondary status, ProgressInfo, RolloutInfo, billable tokens, MLflow details, the output
model package, FailureReason).

This module holds the two loops; each other concern has its own module: the runner's settings
and what it needs of a job (`local.job_options`), a batch of rollouts with its faults and the
Job Runtime (`local.rollout_session`), the MLflow run (`local.mlflow_log`), and each learner's
side behind the `Trainee` protocol (`local.trainee`, `local.standin_lane`, `local.learner_lane`).

Training, per step: take `global_batch_size` prompts (each epoch visits the rows in an order
shuffled with the seed), play `group_size` rollouts of each at `temperature`; compute group
advantages (`rl.advantages`) and hand them with the games' traces to the trainee, which updates
its adapter with GRPO; log the service's metrics to MLflow. The loop is the same for every
learner. At most min(`rollout_max_concurrency`, the lane's worker count) rollouts are in flight.
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

import math
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mtrl_course.local import fastlane, metrics
from mtrl_course.local.mlflow_log import MlflowLog
from mtrl_course.local.rollout_session import JobSession, RolloutOutcome, RolloutTask, by_prompt, first_failure
from mtrl_course.local.trainee import Trainee, evaluation_policy, start_trainee
from mtrl_course.rl.advantages import ADVANTAGE_EPS, IMPLEMENTED_METHODS, estimator, group_advantages

# What callers read from the runner (tests, experiments, the face), each defined in its own module:
from mtrl_course.local.job_options import POLICY_ENV, ReportingJob, RunnerOptions, default_policy  # noqa: F401, E402
from mtrl_course.local.names import FAULT_AGENT_ERROR, FAULT_AUTH, FAULT_MISSING_REWARD  # noqa: F401, E402
from mtrl_course.local.rollout_session import (  # noqa: F401, E402
    FULL_LANE_WORKERS,
    NO_SAMPLES,
    PHASE_CODES,
    job_runtime,
    reward_variant_handler,
)
from mtrl_course.local.trainee import POLICIES, POLICY_LEARNER, POLICY_STANDIN, POLICY_TAG  # noqa: F401, E402


def _reward_of(outcome: RolloutOutcome) -> float:
    """The reward GRPO uses; every rollout has one by then (a missing reward fails the job first)."""
    if outcome.record.reward is None:
        raise RuntimeError(f"rollout {outcome.task} reached the update without a reward")
    return float(outcome.record.reward)


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
    return [[o.record for o in group] for group in by_prompt(outcomes)]


def _open(job: ReportingJob, options: RunnerOptions, policy: Any, policy_tag: str) -> tuple[JobSession, MlflowLog]:
    hp = job.hyperparameters
    session = JobSession(
        job, options, policy, int(hp["rollout_max_concurrency"]), hp["rollout_timeout"], hp["rollout_max_retries"]
    )
    try:
        return session, MlflowLog(job, options, policy_tag)
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
        failure = first_failure(outcomes)
        if failure:
            self.mlflow.fail_job(self.job, failure)
            return False
        self.completed += len(outcomes)
        self.job.set_rollout_info(total=self.total_steps * self.batch * self.group, completed=self.completed)

        groups = by_prompt(outcomes)
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
        failure = first_failure(outcomes)
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
        failure = first_failure(outcomes)
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
