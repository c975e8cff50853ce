"""Step 5: launch (or attach to) a multi-turn RL training job with the SageMaker SDK's own trainer.

The same calls run live and offline; only the backends behind the AWS calls differ:

    res = resources.prepare()
    trainer = make_trainer(res)                  # MultiTurnRLTrainer, the walkthrough's overrides set
    job = launch(trainer, confirm_spend=True)    # live: refuses without confirm_spend and says why
    job = wait(job)                              # offline: polls fast; live: the SDK's own wait
    status_table(job)                            # SecondaryStatusTransitions as a table

`make_trainer` builds the real `MultiTurnRLTrainer` pointed at the runtime, job role, datasets
and MLflow app, and sets the walkthrough's three overrides (`WALKTHROUGH_OVERRIDES`: the
service's maximum of 8192 sampling tokens, 20 epochs, 100 steps), keeping the base model's
defaults otherwise. Offline the job runs on the local MTRL service with a small stand-in policy
instead of gpt-oss-20b, so `OFFLINE_HYPERPARAMETERS` shrink the run to a notebook's size (about
30 seconds on two cores); the numbers it produces are the stand-in's own.

An instructor can start the 12 h 40 min live job before class; learners then `attach(name)` to
it (`latest_job()` finds the newest). Offline, jobs are kept on disk by the local service, so a
job trained in notebook 05 is still there in notebooks 06 and 07 (`ensure_trained_offline`).

Spending: `launch` refuses a live job unless `confirm_spend=True`, and prints the walkthrough's
own figures for its 100-step run beside the size of this one. Token prices are not in the
course's sources; take them from the SageMaker AI pricing page.
"""

from __future__ import annotations

import datetime as dt
import math
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from mtrl_course import config, dataset, naming, service_spec

# The walkthrough's three overrides (stated in service_spec; notebook 05 reads them here).
from mtrl_course.service_spec import WALKTHROUGH_OVERRIDES

if TYPE_CHECKING:
    from mtrl_course.resources import CourseResources

MODEL_ID = service_spec.GPT_OSS_20B
# Measured (idle 2-core machine, fast lane, seed 42, `mtrl course`): held-out
# val/reward/pass_at_1 0.00, 0.21, 0.47, 0.48, 0.51, 0.49 at steps 0, 2, ..., 10; 30 s from
# launch to Completed with the set-up, 45 s for the whole `mtrl course`.
OFFLINE_HYPERPARAMETERS: dict[str, Any] = service_spec.OFFLINE_OVERRIDES
# The documented defaults of the settings the course's arithmetic uses (stated once, in service_spec).
SERVICE_DEFAULTS = service_spec.training_defaults(
    ("global_batch_size", "group_size", "max_steps", "max_epochs", "val_every")
)
JOB_CATEGORY = service_spec.TRAINING
TERMINAL_STATUSES = ("Completed", "Failed", "Stopped")
JOB_KIND = "train"  # job names: mtrl-wordle-train-<run id>-<timestamp> (the SDK adds the time)
EXPERIMENT_NAME = "mtrl-wordle-training"
DEFAULT_NOTEBOOK = "05"
OFFLINE_POLL_S = 0.2
LIVE_POLL_S = 60
TRAINING_ROWS = dataset.DEFAULT_TRAIN  # the committed training split
VALIDATION_ROWS = dataset.DEFAULT_VAL  # the committed validation split

# What the walkthrough reports for its 100-step gpt-oss-20b run (us-east-1): cited, never derived
# from prices, which our sources do not have.
WALKTHROUGH_RUN = {
    "steps": 100,
    "rollouts": 105_486,
    "prefill_tokens_millions": 491.6,
    "sample_tokens_millions": 159.7,
    "train_tokens_millions": 643.3,
    "duration": "12 h 40 min",
    "token_cost": "about $339 at gpt-oss-20b list prices in us-east-1",
    "agentcore_cost": "about $79 of AgentCore runtime",
}


class SpendNotConfirmed(PermissionError):
    """A live call that would spend money was made without `confirm_spend=True`."""


# ------------------------------------------------------------------------------------ arithmetic
def step_arithmetic(
    n_rows: int,
    global_batch_size: int = 128,
    group_size: int = 8,
    max_steps: int = 100,
    max_epochs: int = 20,
    *,
    validation_rows: int = 0,
    val_every: int = 10,
) -> dict[str, Any]:
    """How a schedule plays out: steps per epoch, games per step, steps and epochs actually run.

    Training stops at whichever limit comes first, `max_steps` or `max_epochs` full passes over
    the rows; every step plays `global_batch_size` prompts x `group_size` rollouts. With
    `validation_rows`, validation passes (step 0, every `val_every` steps, the last step) and
    their rollouts are counted too. Pure arithmetic, no AWS.
    """
    for name, value in (
        ("n_rows", n_rows),
        ("global_batch_size", global_batch_size),
        ("group_size", group_size),
        ("max_steps", max_steps),
        ("max_epochs", max_epochs),
    ):
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive whole number, got {value!r}")
    steps_per_epoch = math.ceil(n_rows / global_batch_size)
    steps = min(max_steps, max_epochs * steps_per_epoch)
    games_per_step = global_batch_size * group_size
    passes = 0
    if validation_rows and val_every > 0:
        passes = len({0, steps} | set(range(val_every, steps + 1, val_every)))
    return {
        "rows": n_rows,
        "steps_per_epoch": steps_per_epoch,
        "games_per_step": games_per_step,
        "steps": steps,
        "limited_by": "max_steps" if max_steps <= max_epochs * steps_per_epoch else "max_epochs",
        "epochs_reached": round(steps / steps_per_epoch, 2),
        "training_rollouts": steps * games_per_step,
        "validation_passes": passes,
        "validation_rollouts": passes * validation_rows,
        "total_rollouts": steps * games_per_step + passes * validation_rows,
    }


# ---------------------------------------------------------------------------------------- trainer
def _trainer_class() -> Any:
    import os

    from mtrl_course import aws

    session = aws.session()  # offline: the backend and fake credentials
    # The SDK module creates a client when it is imported and fails without a Region.
    for name in aws.REGION_ENV_VARS:
        os.environ.setdefault(name, session.region_name)
    from sagemaker.train.multi_turn_rl_trainer import MultiTurnRLTrainer

    return _RecordsCreatedGroups(MultiTurnRLTrainer)


class _RecordsCreatedGroups:
    """MultiTurnRLTrainer, constructed so that clean-up knows which of the trainer's get-or-create
    model package groups this run created: the names are looked up before the constructor runs,
    and those that appear only after it are recorded as this run's (`run_scope.record_created`).
    Clean-up deletes no other group of those names: everyone in the account who trains this base
    model shares them. Everything else (`attach`, ...) is the class itself."""

    def __init__(self, trainer_class: Any) -> None:
        self._trainer_class = trainer_class

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        existed = _existing_package_groups()
        trainer = self._trainer_class(*args, **kwargs)
        _record_created_package_groups(trainer, existed)
        return trainer

    def __getattr__(self, name: str) -> Any:
        return getattr(self._trainer_class, name)


def job_base_name() -> str:
    """`mtrl-wordle-train-<run id>`: the SDK appends a timestamp to make each job's name."""
    return naming.resource_name(JOB_KIND)


def planned_hyperparameters(hyperparameters: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The values `make_trainer` sets: the walkthrough's overrides, offline the stand-in's run, then yours."""
    values = dict(WALKTHROUGH_OVERRIDES)
    if not config.is_live():
        values.update(OFFLINE_HYPERPARAMETERS)
    values.update(hyperparameters or {})
    return values


def _sdk_tags(notebook: str) -> list[dict[str, str]]:
    # sagemaker-core serialises tags from its own lower-case shape.
    return [{"key": tag["Key"], "value": tag["Value"]} for tag in naming.course_tags(notebook)]


def make_trainer(
    resources: Any, hyperparameters: Mapping[str, Any] | None = None, *, notebook: str = DEFAULT_NOTEBOOK
) -> Any:
    """A real `MultiTurnRLTrainer` for the course's resources, with the overrides set.

    `hyperparameters` are set last (names and ranges are checked by the SDK against the base
    model's spec at once). Offline the stand-in's `OFFLINE_HYPERPARAMETERS` apply unless given.
    The constructor creates the two model-package groups if missing (`<model>-mtrl-mpg` and
    `<model>-mtrl-checkpoint-mpg`) and the output prefix marker; nothing that bills.
    """
    trainer_class = _trainer_class()
    trainer = trainer_class(
        model=MODEL_ID,
        agent_env=resources.runtime_arn,
        training_dataset=resources.train_s3_uri,
        validation_dataset=resources.validation_s3_uri,
        mlflow_app_arn=resources.mlflow_app_arn,
        mlflow_experiment_name=EXPERIMENT_NAME,
        s3_output_path=resources.output_s3_uri,
        role=resources.job_role_arn,
        accept_eula=True,
        base_job_name=job_base_name(),
        tags=_sdk_tags(notebook),
    )
    set_hyperparameters(trainer.hyperparameters, planned_hyperparameters(hyperparameters), "training")
    return trainer


# The trainer's get-or-create model package groups (sagemaker-train 1.27: `{model}-mtrl-mpg`,
# `{model}-mtrl-checkpoint-mpg`), one pair per base model for the whole account.
PACKAGE_GROUP_NAMES = tuple(f"{MODEL_ID}{suffix}" for suffix in ("-mtrl-mpg", "-mtrl-checkpoint-mpg"))


def _existing_package_groups() -> set[str]:
    """Which of the trainer's group names exist now, or may: DescribeModelPackageGroup answers
    ValidationException "... does not exist." for a missing group; any other answer (a group, or
    a refusal) counts as existing, so a group this run cannot see is never recorded as its own."""
    from mtrl_course import aws, errors

    sagemaker = aws.session().client("sagemaker")
    found = set()
    for name in PACKAGE_GROUP_NAMES:
        try:
            sagemaker.describe_model_package_group(ModelPackageGroupName=name)
        except Exception as error:
            code = errors.aws_error_code(error)
            if code == "ValidationException" and "does not exist" in str(error):
                continue
            if not code:
                raise
        found.add(name)
    return found


def _record_created_package_groups(trainer: Any, existed: set[str]) -> None:
    from mtrl_course import run_scope

    arns = [
        arn
        for arn in (
            getattr(trainer, "output_model_package_group", None),
            getattr(trainer, "intermediate_checkpoint_model_package_group", None),
        )
        if isinstance(arn, str)
        and arn.rsplit("/", 1)[-1] in PACKAGE_GROUP_NAMES
        and arn.rsplit("/", 1)[-1] not in existed
    ]
    if arns:
        run_scope.record_created(arns)


def set_hyperparameters(options: Any, values: Mapping[str, Any], where: str) -> None:
    """Set `values` on an SDK `FineTuningOptions`; a ValueError naming the bad name or value.

    The SDK raises AttributeError for a name the base model's spec does not have; the learner
    sees instead which name was wrong, the closest valid names, and where the spec comes from.
    """
    import difflib

    known = sorted(getattr(options, "_specs", None) or {})
    for name, value in values.items():
        if known and name not in known:
            close = difflib.get_close_matches(name, known, n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise ValueError(
                f"unknown {where} hyperparameter {name!r}{hint} The base model's spec (from the SageMaker "
                f"Public Hub) has: {', '.join(known)}"
            )
        try:
            setattr(options, name, value)
        except AttributeError as error:
            raise ValueError(f"unknown {where} hyperparameter {name!r}: {error}") from None
        except (ValueError, TypeError) as error:
            raise ValueError(f"{where} hyperparameter {name}={value!r} was refused: {error}") from None


def _value(trainer: Any, name: str) -> Any:
    value = getattr(trainer.hyperparameters, name, None)
    return SERVICE_DEFAULTS.get(name) if value is None else value


def spend_summary(trainer: Any, n_rows: int = TRAINING_ROWS) -> list[str]:
    """Lines describing what a live launch of `trainer` would play, beside the walkthrough's figures."""
    plan = step_arithmetic(
        n_rows,
        int(_value(trainer, "global_batch_size")),
        int(_value(trainer, "group_size")),
        int(_value(trainer, "max_steps")),
        int(_value(trainer, "max_epochs")),
    )
    share = plan["training_rollouts"] / WALKTHROUGH_RUN["rollouts"]
    run = WALKTHROUGH_RUN
    return [
        f"This job: {plan['steps']} steps x {plan['games_per_step']:,} games = {plan['training_rollouts']:,} training "
        f"rollouts (plus validation), on {n_rows} training rows.",
        f"The AWS walkthrough's 100-step run: {run['rollouts']:,} rollouts, {run['prefill_tokens_millions']} M prefill, "
        f"{run['sample_tokens_millions']} M sample and {run['train_tokens_millions']} M train tokens, {run['duration']}, "
        f"{run['token_cost']}, plus {run['agentcore_cost']}.",
        f"This job plays about {share:.0%} as many training rollouts; tokens (and cost) grow with rollouts and with "
        "the length of each game.",
        "Token prices per million (prefill, sample, train) are on the SageMaker AI pricing page; the course never assumes them.",
    ]


def launch(trainer: Any, *, confirm_spend: bool = False) -> Any:
    """Start the job (`trainer.train(wait=False)`) and return its `AgentRFTJob`.

    Live this spends money for hours, so without `confirm_spend=True` it prints what the job
    would play beside the walkthrough's cited figures and raises `SpendNotConfirmed`.
    Offline it costs nothing and needs no confirmation.
    """
    if config.is_live() and not confirm_spend:
        for line in spend_summary(trainer):
            print(line)
        raise SpendNotConfirmed(
            "not launched: a live training job bills tokens until it ends. Call launch(trainer, confirm_spend=True) "
            "to start it, or attach(job_name) to a job that is already running."
        )
    return trainer.train(wait=False)


def attach(job_name: str) -> Any:
    """The `AgentRFTJob` of an existing training job (`MultiTurnRLTrainer.attach`): the instructor path."""
    return _trainer_class().attach(job_name)


def latest_job(status: str | None = None, *, name_contains: str | None = None) -> str | None:
    """Name of the newest training job (optionally with this status or name part), or None.

    After `instructor_run.attach(...)`, the attached run's job when it has `status`: in a lab account the
    newest job may be another learner's.
    """
    from mtrl_course import aws, instructor_run

    attachment = instructor_run.attached() if config.is_live() and name_contains is None else None
    if attachment is not None:
        current = aws.session().client("sagemaker").describe_job(JobName=attachment.job_name, JobCategory=JOB_CATEGORY)
        if status is None or current.get("JobStatus") == status:
            return attachment.job_name
    params: dict[str, Any] = {
        "JobCategory": JOB_CATEGORY,
        "SortBy": "CreationTime",
        "SortOrder": "Descending",
        "MaxResults": 1,
    }
    if status:
        params["StatusEquals"] = status
    if name_contains:
        params["NameContains"] = name_contains
    summaries = aws.session().client("sagemaker").list_jobs(**params).get("JobSummaries", [])
    return summaries[0]["JobName"] if summaries else None


# ------------------------------------------------------------------------------------- watching
def _assigned(value: Any) -> Any:
    """None for the SDK's `Unassigned()` placeholders, else the value."""
    return None if value is None or type(value).__name__ == "Unassigned" else value


def _transitions(job: Any) -> list[Any]:
    return list(_assigned(job.secondary_status_transitions) or [])


def status_table(job: Any) -> Any:
    """The job's SecondaryStatusTransitions as a DataFrame: status, message, start, end, seconds."""
    import pandas as pd

    rows = []
    for transition in _transitions(job):
        start, end = _assigned(transition.start_time), _assigned(transition.end_time)
        rows.append(
            {
                "status": transition.status,
                "message": _assigned(transition.status_message) or "",
                "start": start.strftime("%H:%M:%S") if isinstance(start, dt.datetime) else "",
                "end": end.strftime("%H:%M:%S") if isinstance(end, dt.datetime) else "",
                "seconds": round((end - start).total_seconds(), 1)
                if isinstance(start, dt.datetime) and isinstance(end, dt.datetime)
                else None,
            }
        )
    return pd.DataFrame(rows, columns=["status", "message", "start", "end", "seconds"])


def echo_transitions(job: Any, shown: int = 0) -> int:
    """Print each secondary status the job reached after the first `shown` (one line each, as
    `wait` does); returns how many there are now. The job is not refreshed here."""
    transitions = _transitions(job)
    for transition in transitions[shown:]:
        if transition.status not in TERMINAL_STATUSES:
            message = _assigned(transition.status_message)
            print(f"  {transition.status}" + (f": {message}" if message else ""))
    return len(transitions)


def wait(job: Any, poll: float | None = None, *, echo: bool = True, shown: int = 0) -> Any:
    """Block until the job ends; returns it refreshed. Raises the SDK's FailedStatusError if it failed.

    Live this is the SDK's own `job.wait` (polling every `poll` seconds, default 60, no
    timeout: a training job runs for hours). Offline it polls DescribeJob every 0.2 s and, with
    `echo`, prints each secondary status once as it is reached, instead of the SDK's 5 s sleeps
    and full status block per poll; `shown` statuses were printed already (by a caller that
    watched the job, `mtrl train`), so it starts after them.
    """
    if config.is_live():
        job.wait(poll=int(poll or LIVE_POLL_S), timeout=None)
        job.refresh()
        return job
    from sagemaker.core.utils.exceptions import FailedStatusError

    interval = OFFLINE_POLL_S if poll is None else float(poll)
    while True:
        job.refresh()
        shown = echo_transitions(job, shown) if echo else len(_transitions(job))
        status = job.job_status
        if status in TERMINAL_STATUSES:
            if echo:
                print(f"  {status}" + (f" ({_assigned(job.failure_reason)})" if status == "Failed" else ""))
            if status == "Failed":
                raise FailedStatusError(resource_type="Job", status=status, reason=_assigned(job.failure_reason))
            return job
        time.sleep(interval)


# ------------------------------------------------------------------------------- offline reuse
def _matches_offline_recipe(
    describe: Mapping[str, Any], resources: CourseResources, expected: Mapping[str, Any]
) -> bool:
    import json

    from mtrl_course import local
    from mtrl_course.errors import ServiceError

    document = json.loads(describe.get("JobConfigDocument") or "{}")
    settings = document.get("TrainingConfig") or {}
    channels = {
        c.get("ChannelName"): ((c.get("DataSource") or {}).get("S3DataSource") or {}).get("S3Uri")
        for c in document.get("InputDataConfig") or []
    }
    agent = (document.get("AgentConfig") or {}).get("BedrockAgentCoreConfig") or {}
    if channels != {"train": resources.train_s3_uri, "validation": resources.validation_s3_uri}:
        return False
    if (
        agent.get("AgentRuntimeArn") != resources.runtime_arn
        or service_spec.model_from_arn(settings.get("BaseModelArn") or "") != MODEL_ID
    ):
        return False
    try:
        sent = service_spec.resolve_hyperparameters(
            settings.get("HyperParameters"), service_spec.training_spec(MODEL_ID), "HyperParameters"
        )
    except ServiceError:
        return False
    if sent != expected:
        return False
    package = (document.get("ServiceOutput") or {}).get("OutputModelPackageArn")
    if resources.adapter_dir is None:  # resources without an offline adapter folder (live ones)
        return False
    path = local.adapter_file(package, resources.adapter_dir)
    return path is not None and path.is_file() and local.load_adapter(path).seed == config.DEFAULT_SEED


def find_trained_offline(resources: CourseResources) -> str | None:
    """The newest completed offline job trained with `OFFLINE_HYPERPARAMETERS` on these resources, or None.

    It must still have its stand-in adapter on disk and the course's seed, so reusing it gives
    exactly what training again would.
    """
    from mtrl_course import aws

    expected = service_spec.resolve_hyperparameters(
        {k: str(v) for k, v in planned_hyperparameters().items()},
        service_spec.training_spec(MODEL_ID),
        "HyperParameters",
    )
    sagemaker = aws.session().client("sagemaker")
    token = None
    while True:
        page = sagemaker.list_jobs(
            JobCategory=JOB_CATEGORY,
            StatusEquals="Completed",
            SortBy="CreationTime",
            SortOrder="Descending",
            MaxResults=100,
            **({"NextToken": token} if token else {}),
        )
        for summary in page.get("JobSummaries", []):
            describe = sagemaker.describe_job(JobName=summary["JobName"], JobCategory=JOB_CATEGORY)
            if _matches_offline_recipe(describe, resources, expected):
                return summary["JobName"]
        token = page.get("NextToken")
        if not token:
            return None


def ensure_trained_offline(resources: CourseResources, *, echo: bool = False) -> str:
    """Name of a completed offline training job: reused from an earlier kernel, else trained now.

    Training is deterministic (same seed, same metrics), so a reused job is the one this call
    would have trained. Offline only: live, attach to a real job instead.
    """
    if config.is_live():
        raise RuntimeError(
            "ensure_trained_offline() is offline only; live, use attach(job_name) or latest_job('Completed')"
        )
    found = find_trained_offline(resources)
    if found:
        return found
    job = wait(launch(make_trainer(resources)), echo=echo)
    return job.job_name
