"""Step 7: evaluate the base and the trained model at the settings you will serve at.

An evaluation job (JobCategory `AgentRFTEvaluation`) plays every row of an evaluation dataset
through the same agent runtime and reward as training, with the base model or the trained model
package, and logs `eval/reward/pass_at_1` (and the rest of `eval/*`) to MLflow. Unlike the
training job's validation, which always samples at temperature 0, you choose the temperature.
The walkthrough evaluated both models at two reasoning efforts and two temperatures (`SETTINGS`).

    res = resources.prepare()
    result = evaluate(res, "base", temperature=1.0, reasoning_effort="medium")
    grid = run_grid(res, trained_job_name)          # the walkthrough's four settings, both models

Two ways to create an evaluation job, and why both are here:
- `MultiTurnRLEvaluator` (sagemaker-train) renders a SageMaker pipeline whose Job step creates
  the evaluation job. It forwards only six hyperparameter names of its own (`eval_group_size`,
  `sampling_temperature`, `top_p`, `max_tokens`, `pass_k_values`, `success_threshold`), while the
  evaluation recipe calls the sampling settings `temperature`, `sampling_top_p` and
  `sampling_max_tokens`. A temperature set on the evaluator is silently dropped and the job
  samples at the recipe default, 0.0 (measured offline; the public Wordle sample reports the
  same of the live service). So the evaluator is used only where everything asked for survives:
  temperature 0.0 and the recipe's own token cap (`max_tokens=None`).
- Otherwise a direct boto3 `create_job(JobCategory="AgentRFTEvaluation", ...)` with flat
  hyperparameter names, as the public sample does (`via="create_job"`).
Every job caps each turn at `EVAL_MAX_TOKENS` unless told otherwise: the training value, 8192.
The recipe's default, 4096, cuts gpt-oss off mid-reasoning, often before its first tool call (the
public Wordle sample evaluates at 8192 for that reason), so by default every job goes through
CreateJob, the one path that carries the cap.
`via="auto"` (the default) picks per call; the result says which was used. When the evaluator
refuses before it has started anything (the hub has no evaluation spec for the model, its role or
caller check says no, its pipeline cannot be created or started), or its pipeline ends before it
has created the evaluation job, `via="auto"` prints the reason in one line and runs the same
evaluation through CreateJob: in neither case does an evaluation job exist yet.

Reasoning effort is not a job setting: the agent reads REASONING_EFFORT from its runtime's
environment. Changing it is a redeploy (`resources.set_reasoning_effort`), refused while any job
runs; offline it restarts the local runtime. The default quota allows one evaluation job at a
time, so `run_grid` runs them back to back, grouped by effort so the runtime is redeployed as
few times as possible, and offline puts the effort back as it was at the end.

Offline the model is the stand-in policy and its numbers are its own, not gpt-oss-20b's.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import io
import json
import math
import time
from collections.abc import Mapping, Sequence
from typing import Any

from mtrl_course import config, naming, service_spec, storage, training
from mtrl_course import resources as course_resources

# The walkthrough's serving settings: reasoning effort x temperature.
SETTINGS: tuple[tuple[str, float], ...] = (("low", 0.0), ("low", 1.0), ("medium", 0.0), ("medium", 1.0))
# The AWS walkthrough's reported solve rates (gpt-oss-20b, 128 held-out words), base -> trained, by
# setting. It reports no single figure for medium effort at temperature 0, only that at temperature 0
# "both models often end the game without a solve"; low effort at temperature 0 is its training
# job's own validation at steps 0 and 100. Medium effort at T=1 trained: mean of two runs (80%, 88%).
WALKTHROUGH_GRID: tuple[dict[str, Any], ...] = (
    {"setting": "low effort, T=0", "base": 0.02, "trained": 0.37},
    {"setting": "low effort, T=1", "base": 0.15, "trained": 0.69},
    {"setting": "medium effort, T=0", "base": None, "trained": None},
    {"setting": "medium effort, T=1", "base": 0.61, "trained": 0.84},
)
BASE = "base"
TRAINED = "trained"
CATEGORY = "AgentRFTEvaluation"
HUB_NAME = "SageMakerPublicHub"
# The evaluation recipe's defaults (aws-docs.md §1.8): what a job gets for anything not sent.
RECIPE_TEMPERATURE = 0.0
SUCCESS_THRESHOLD = 1.0
TEMPERATURE_RANGE = (0.0, 2.0)
MAX_TOKENS_RANGE = (512, 8192)
# The per-turn token cap of every evaluation job by default: the training job's value (the
# walkthrough's override, the service's maximum). The recipe's default of 4096 cut gpt-oss off
# mid-turn, often before its first tool call; the public Wordle sample's run_mtrl_eval.py sends
# 8192 (`--max-tokens`, default 8192) and its lessons say to use the cap in training and
# evaluation alike (anchors.md, sections 1.5 and 1.14). Evaluating at another cap than training
# would measure the cap, not the training.
EVAL_MAX_TOKENS: int = service_spec.WALKTHROUGH_OVERRIDES["sampling_max_tokens"]
MAX_GROUP_SIZE = 32
VIA_AUTO, VIA_EVALUATOR, VIA_CREATE_JOB = "auto", "evaluator", "create_job"
VIA_LABELS = {VIA_EVALUATOR: "MultiTurnRLEvaluator", VIA_CREATE_JOB: "CreateJob"}
EXPERIMENT_NAME = "mtrl-wordle-evaluation"
JOB_KIND = "eval"
OUTPUT_DIR = "evaluation"
DEFAULT_NOTEBOOK = "07"
STOPPING_SECONDS = 24 * 3600  # the evaluator's default stopping condition
OFFLINE_POLL_S = 0.1
LIVE_POLL_S = 30.0
# A pipeline may take a while to create its job; after this long without one, something is wrong.
PIPELINE_START_TIMEOUT_S = {True: 30 * 60.0, False: 120.0}
TERMINAL = ("Completed", "Failed", "Stopped")
PIPELINE_TERMINAL = ("Succeeded", "Failed", "Stopped")
GRID_COLUMNS = ("model", "effort", "temperature", "pass_at_1", "mean_reward", "prefill_tokens", "sample_tokens")
# DescribeJob's billable-token keys; the train count has two spellings (aws-docs.md §1.6).
TRAIN_TOKEN_KEYS = ("TrainTokenCount", "TrainingTokenCount")


class EvaluationFailed(RuntimeError):
    """The evaluation job (or the evaluator's pipeline) failed; the message carries the reason."""


# ------------------------------------------------------------------------------------ tokens
def billable_tokens(job: Any) -> dict[str, int | None]:
    """{"prefill", "sample", "train"} billable tokens of a job; train is None where not reported.

    `job` is an `AgentRFTJob` (its `billable_token_usage`), a DescribeJob response, a
    BillableTokenUsage dict, or a job name (looked up as a training job, then as an
    evaluation job). Reads both spellings of the train count (TrainTokenCount in the SDK,
    TrainingTokenCount in the API reference).
    """
    usage = _usage_of(job) or {}
    train = next((usage[k] for k in TRAIN_TOKEN_KEYS if usage.get(k) is not None), None)
    return {
        "prefill": int(usage.get("PrefillTokenCount") or 0),
        "sample": int(usage.get("SampleTokenCount") or 0),
        "train": None if train is None else int(train),
    }


def _usage_of(job: Any) -> Mapping[str, Any] | None:
    if isinstance(job, Mapping):
        if "JobConfigDocument" in job:
            return json.loads(job["JobConfigDocument"] or "{}").get("ServiceOutput", {}).get("BillableTokenUsage")
        return job
    if isinstance(job, str):
        return _usage_of(_describe_any(job))
    usage = getattr(job, "billable_token_usage", None)
    return usage if isinstance(usage, Mapping) else None


def _describe_any(name: str) -> dict[str, Any]:
    from botocore.exceptions import ClientError

    sagemaker = _sagemaker()
    for category in (training.JOB_CATEGORY, CATEGORY):
        try:
            return sagemaker.describe_job(JobName=name, JobCategory=category)
        except ClientError as error:
            if "ResourceNotFound" not in str(error.response.get("Error", {}).get("Code", "")):
                raise
    raise LookupError(f"no training or evaluation job named {name!r}")


def _sagemaker() -> Any:
    from mtrl_course import aws

    return aws.session().client("sagemaker")


# -------------------------------------------------------------------------------- evaluation
def _check(temperature: float, eval_group_size: int, pass_k: Sequence[int], max_tokens: int | None, via: str) -> None:
    low, high = TEMPERATURE_RANGE
    if not isinstance(temperature, (int, float)) or not low <= float(temperature) <= high:
        raise ValueError(f"temperature must be a number from {low} to {high}, got {temperature!r}")
    if not isinstance(eval_group_size, int) or not 1 <= eval_group_size <= MAX_GROUP_SIZE:
        raise ValueError(f"eval_group_size must be a whole number from 1 to {MAX_GROUP_SIZE}, got {eval_group_size!r}")
    if not pass_k or any(not isinstance(k, int) or k < 1 for k in pass_k):
        raise ValueError(f"pass_k must be positive whole numbers, got {pass_k!r}")
    if max(pass_k) > eval_group_size:
        raise ValueError(
            f"pass@{max(pass_k)} needs at least {max(pass_k)} rollouts per word: set eval_group_size >= {max(pass_k)} "
            f"(it is {eval_group_size})"
        )
    if max_tokens is not None and not MAX_TOKENS_RANGE[0] <= max_tokens <= MAX_TOKENS_RANGE[1]:
        raise ValueError(f"max_tokens must be from {MAX_TOKENS_RANGE[0]} to {MAX_TOKENS_RANGE[1]}, got {max_tokens!r}")
    if via not in (VIA_AUTO, VIA_EVALUATOR, VIA_CREATE_JOB):
        raise ValueError(f"via must be one of {VIA_AUTO!r}, {VIA_EVALUATOR!r}, {VIA_CREATE_JOB!r}; got {via!r}")


def evaluator_carries(temperature: float, max_tokens: int | None = None) -> bool:
    """Whether MultiTurnRLEvaluator can run these settings (it drops temperature and token cap)."""
    return float(temperature) == RECIPE_TEMPERATURE and max_tokens is None


def _trained_package(job_name: str) -> tuple[str, str]:
    """(output model package ARN, base model ARN) of a completed training job."""
    describe = _sagemaker().describe_job(JobName=job_name, JobCategory=training.JOB_CATEGORY)
    if describe["JobStatus"] != "Completed":
        raise ValueError(
            f"training job {job_name} is {describe['JobStatus']}, not Completed: there is no trained model to evaluate yet"
        )
    document = json.loads(describe["JobConfigDocument"])
    package = (document.get("ServiceOutput") or {}).get("OutputModelPackageArn")
    if not package:
        raise ValueError(f"training job {job_name} reports no OutputModelPackageArn")
    return package, document["TrainingConfig"]["BaseModelArn"]


def _output_uri(resources: course_resources.CourseResources) -> str:
    bucket, _ = storage.parse_s3_uri(resources.output_s3_uri)
    return storage.s3_uri(bucket, f"{storage.course_prefix()}{OUTPUT_DIR}/")


def _job_name(label: str, effort: str, temperature: float) -> str:
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%d%H%M%S")
    return f"{naming.resource_name(JOB_KIND)}-{label}-{effort}-t{round(temperature * 10):02d}-{stamp}"[:63].rstrip("-")


# The runtime's reasoning effort is not part of an evaluation job's request (the agent reads it
# from its environment), and a job the evaluator's pipeline creates is named by the pipeline; so
# each job carries its effort as a tag, or a lab learner reading the results (instructor_run.evaluation_results)
# could not tell a low-effort job from a medium-effort one.
EFFORT_TAG = "reasoning_effort"


def _job_tags(notebook: str, effort: str) -> list[dict[str, str]]:
    return [*naming.course_tags(notebook), {"Key": EFFORT_TAG, "Value": str(effort)}]


def _start_with_create_job(
    resources: course_resources.CourseResources,
    model: str,
    package: str | None,
    base_model_arn: str,
    *,
    dataset_uri: str,
    temperature: float,
    effort: str,
    eval_group_size: int,
    pass_k: Sequence[int],
    max_tokens: int | None,
    notebook: str,
) -> str:
    name = _job_name(BASE if package is None else TRAINED, effort, temperature)
    hyperparameters = {
        "eval_group_size": str(eval_group_size),
        "temperature": str(float(temperature)),
        "pass_k_values": json.dumps(list(pass_k)),
        "success_threshold": str(SUCCESS_THRESHOLD),
    }
    if max_tokens is not None:
        hyperparameters["sampling_max_tokens"] = str(max_tokens)
    document: dict[str, Any] = {
        "AgentConfig": {"BedrockAgentCoreConfig": {"AgentRuntimeArn": resources.runtime_arn, "Qualifier": "DEFAULT"}},
        "InputDataConfig": [
            {
                "ChannelName": "evaluation",
                "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": dataset_uri}},
            }
        ],
        "OutputDataConfig": {
            "S3OutputPath": _output_uri(resources),
            "MlflowConfig": {
                "MlflowResourceArn": resources.mlflow_app_arn,
                "MlflowExperimentName": EXPERIMENT_NAME,
                "MlflowRunName": name,
            },
        },
        "EvaluationConfig": {"BaseModelArn": base_model_arn, "AcceptEula": True, "HyperParameters": hyperparameters},
        "StoppingCondition": {"MaxRuntimeInSeconds": STOPPING_SECONDS},
    }
    if package is not None:
        document["ModelPackageConfig"] = {"InputModelPackageArn": package}
    _sagemaker().create_job(
        JobName=name,
        RoleArn=resources.job_role_arn,
        JobCategory=CATEGORY,
        JobConfigSchemaVersion="1.0.0",
        JobConfigDocument=json.dumps(document),
        Tags=_job_tags(notebook, effort),
    )
    return name


def _start_with_evaluator(
    resources: course_resources.CourseResources,
    model: str,
    package: str | None,
    *,
    dataset_uri: str,
    eval_group_size: int,
    pass_k: Sequence[int],
    notebook: str,
    echo: bool,
    effort: str,
) -> str:
    """Start the evaluation through MultiTurnRLEvaluator's pipeline; the evaluation job's name.

    Raises EvaluatorRefused (nothing was started) for every way the SDK path documents refusing:
    a ValueError from its constructor's validators, from `hyperparameters` (the hub has no
    MTRLEvaluation override spec for the model) or from `evaluate(dry_run=True)` (agent, model,
    template); RoleValidationError from its execution-role or caller check; a ClientError from
    that validation, or from the calls that create, update or start its pipeline (say,
    AccessDenied on iam:PassRole). The dry run goes first so that no error raised after the
    pipeline execution has started is ever mistaken for a refusal.
    """
    from botocore.exceptions import ClientError
    from sagemaker.core.helper.iam_role_resolver import RoleValidationError
    from sagemaker.train.evaluate import MultiTurnRLEvaluator

    common = dict(
        dataset=dataset_uri,
        agent_config=resources.runtime_arn,
        s3_output_path=_output_uri(resources),
        mlflow_resource_arn=resources.mlflow_app_arn,
        mlflow_experiment_name=EXPERIMENT_NAME,
        role=resources.job_role_arn,
        tags=_job_tags(notebook, effort),
    )
    try:
        if package is None:
            evaluator = MultiTurnRLEvaluator(model=training.MODEL_ID, **common)
        else:
            evaluator = MultiTurnRLEvaluator(model=training.attach(model), evaluate_base_model=False, **common)
        training.set_hyperparameters(
            evaluator.hyperparameters, {"eval_group_size": eval_group_size, "pass_k_values": list(pass_k)}, "evaluation"
        )
        rejected = evaluator_would_send_rejected_names(evaluator.hyperparameters)
        if rejected:
            raise EvaluatorNamesRejected(
                f"MultiTurnRLEvaluator would send {', '.join(rejected)}, names the public Wordle sample reports the "
                "evaluation schema rejects (the base model's hub spec defines them)"
            )
        with contextlib.redirect_stdout(io.StringIO()):
            evaluator.evaluate(dry_run=True)
    except (ValueError, RoleValidationError, ClientError) as error:
        raise EvaluatorRefused(_refusal_reason(error)) from error
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed):  # its summary shows ARNs (masked below when echoed)
            execution = evaluator.evaluate()
    except ClientError as error:
        if error.operation_name not in PIPELINE_START_OPERATIONS:
            raise  # past the start: an execution may exist, so never start a second job
        raise EvaluatorRefused(_refusal_reason(error)) from error
    if echo:
        print(naming.mask_account(printed.getvalue().strip()))
    return _job_of_pipeline(execution.arn)


# The calls MultiTurnRLEvaluator.evaluate() makes to get its pipeline running; one that fails
# means no execution exists (StartPipelineExecution is the last of them).
PIPELINE_START_OPERATIONS = ("ListPipelines", "CreatePipeline", "UpdatePipeline", "StartPipelineExecution")
REFUSAL_REASON_CHARS = 300


class EvaluatorRefused(RuntimeError):
    """MultiTurnRLEvaluator refused before it started anything; the message says why."""


class PipelineEndedBeforeJob(EvaluationFailed):
    """The evaluator's pipeline ended (a step failed) before its Job step created the evaluation
    job: nothing bills and nothing will, so the same evaluation can run through CreateJob."""


def _refusal_reason(error: Exception) -> str:
    """One line: the error's type and first line, account IDs masked."""
    text = str(error).strip().splitlines()[0] if str(error).strip() else ""
    reason = f"{type(error).__name__}: {text}" if text else type(error).__name__
    return naming.mask_account(reason[:REFUSAL_REASON_CHARS])


class EvaluatorNamesRejected(ValueError):
    """MultiTurnRLEvaluator would forward hyperparameter names the evaluation schema rejects."""


def evaluator_would_send_rejected_names(options: Any) -> list[str]:
    """Names MultiTurnRLEvaluator (1.27) would forward that the evaluation recipe does not use.

    It forwards `sampling_temperature`, `top_p` and `max_tokens` whenever the hub's evaluation
    spec gives them a value; offline the hub serves the recipe's names, so nothing is sent, but a
    live spec with those names would make every evaluation job fail validation.
    """
    specs = getattr(options, "_specs", None) or {}
    return sorted(
        name for name in service_spec.EVALUATION_ALIASES if name in specs and getattr(options, name, None) is not None
    )


def _job_of_pipeline(execution_arn: str) -> str:
    """The evaluation job a pipeline execution's Job step created (waits until it exists)."""
    sagemaker = _sagemaker()
    live = config.is_live()
    deadline = time.monotonic() + PIPELINE_START_TIMEOUT_S[live]
    while True:
        # The status first, then the steps: a pipeline ends after its failed step is recorded, so a
        # status that is already terminal comes with the step that says why. (Read the other way
        # round, a step could fail between the two reads and the reason would be lost.)
        status = sagemaker.describe_pipeline_execution(PipelineExecutionArn=execution_arn)["PipelineExecutionStatus"]
        steps = sagemaker.list_pipeline_execution_steps(PipelineExecutionArn=execution_arn).get(
            "PipelineExecutionSteps", []
        )
        for step in steps:
            arn = ((step.get("Metadata") or {}).get("Job") or {}).get("Arn")
            if arn:
                return arn.rsplit("/", 1)[-1]
        failed = [s for s in steps if s.get("StepStatus") == "Failed"]
        if failed or status in PIPELINE_TERMINAL:
            reasons = (
                "; ".join(f"{s['StepName']}: {s.get('FailureReason', 'no reason given')}" for s in failed) or status
            )
            raise PipelineEndedBeforeJob(
                f"the evaluator's pipeline ended before its evaluation job ran ({naming.mask_account(reasons)})"
            )
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"the evaluator's pipeline {naming.mask_account(execution_arn)} created no job within {PIPELINE_START_TIMEOUT_S[live]:.0f} s"
            )
        time.sleep(LIVE_POLL_S if live else OFFLINE_POLL_S)


def _wait_job(name: str) -> dict[str, Any]:
    sagemaker = _sagemaker()
    poll = LIVE_POLL_S if config.is_live() else OFFLINE_POLL_S
    while True:
        describe = sagemaker.describe_job(JobName=name, JobCategory=CATEGORY)
        if describe["JobStatus"] in TERMINAL:
            return describe
        time.sleep(poll)


def _results(describe: Mapping[str, Any], mlflow_app_arn: str, pass_k: Sequence[int]) -> dict[str, Any]:
    from mtrl_course import mlflow_client

    if describe["JobStatus"] != "Completed":
        reason = describe.get("FailureReason") or describe["JobStatus"]
        raise EvaluationFailed(
            f"evaluation job {describe['JobName']} ended {describe['JobStatus']}: {naming.mask_account(reason)}"
        )
    output = json.loads(describe["JobConfigDocument"]).get("ServiceOutput") or {}
    run_id = (output.get("MlflowDetails") or {}).get("RunId")
    if not run_id:
        raise EvaluationFailed(
            f"evaluation job {describe['JobName']} reports no MLflow run (ServiceOutput.MlflowDetails)"
        )
    metrics = mlflow_client.client(mlflow_app_arn).get_run(run_id).data.metrics
    tokens = billable_tokens(describe)
    return {
        "pass_at_1": metrics.get("eval/reward/pass_at_1"),
        "pass_at_k": {k: metrics.get(f"eval/reward/pass_at_{k}") for k in pass_k},
        "mean_reward": metrics.get("eval/reward/mean"),
        "prefill_tokens": tokens["prefill"],
        "sample_tokens": tokens["sample"],
        "mlflow_run_id": run_id,
    }


def evaluate(
    resources: course_resources.CourseResources,
    model: str,
    *,
    temperature: float,
    reasoning_effort: str,
    eval_group_size: int = 1,
    pass_k: Sequence[int] = (1,),
    dataset_uri: str | None = None,
    max_tokens: int | None = EVAL_MAX_TOKENS,
    via: str = VIA_AUTO,
    notebook: str = DEFAULT_NOTEBOOK,
    echo: bool = False,
) -> dict[str, Any]:
    """Run one evaluation job to the end and return its results.

    `model` is "base" or the name of a completed training job (its output model package is
    evaluated). `temperature` is the sampling temperature of every turn; `reasoning_effort` the
    runtime's REASONING_EFFORT (a redeploy if it differs; see the module docstring).
    `eval_group_size` rollouts are played per word (pass@k needs k of them); `dataset_uri`
    defaults to the held-out validation words; `max_tokens` caps each turn (default
    EVAL_MAX_TOKENS, the training value; None: the recipe's default, 4096, the only cap the
    evaluator carries). `via`: "auto", "evaluator" (MultiTurnRLEvaluator) or "create_job".

    Returns {model, job_name, via, reasoning_effort, temperature, eval_group_size, pass_at_1,
    pass_at_k, mean_reward, prefill_tokens, sample_tokens, mlflow_run_id, seconds}. Raises
    EvaluationFailed with the job's FailureReason if it fails.
    """
    _check(temperature, eval_group_size, pass_k, max_tokens, via)
    requested = via
    if via == VIA_AUTO:
        via = VIA_EVALUATOR if evaluator_carries(temperature, max_tokens) else VIA_CREATE_JOB
    elif via == VIA_EVALUATOR and not evaluator_carries(temperature, max_tokens):
        raise ValueError(
            "MultiTurnRLEvaluator would drop these settings (it forwards sampling_temperature and max_tokens, "
            "names the evaluation recipe does not use) and run at temperature 0.0 with the default token cap; "
            'use via="create_job" (or "auto")'
        )
    if model == BASE:
        package = None
        base_model_arn = _sagemaker().describe_hub_content(
            HubName=HUB_NAME, HubContentType="Model", HubContentName=training.MODEL_ID
        )["HubContentArn"]
    else:
        package, base_model_arn = _trained_package(model)
    busy = course_resources.running_jobs(category=CATEGORY)
    if busy:
        raise RuntimeError(f"evaluation job {', '.join(busy)} is still running; the default quota allows one at a time")
    course_resources.set_reasoning_effort(resources, reasoning_effort)
    dataset_uri = dataset_uri or resources.validation_s3_uri
    started = time.monotonic()
    chosen_automatically = via == VIA_EVALUATOR and requested == VIA_AUTO
    name = ""
    if via == VIA_EVALUATOR:
        try:
            name = _start_with_evaluator(
                resources,
                model,
                package,
                dataset_uri=dataset_uri,
                eval_group_size=eval_group_size,
                pass_k=pass_k,
                notebook=notebook,
                echo=echo,
                effort=reasoning_effort,
            )
        except EvaluatorRefused as refusal:
            if not chosen_automatically:
                raise (refusal.__cause__ or refusal) from None
            # Nothing was started (see _start_with_evaluator), so CreateJob runs the same evaluation.
            print(f"MultiTurnRLEvaluator refused ({refusal}); evaluating with CreateJob instead", flush=True)
            via = VIA_CREATE_JOB
        except PipelineEndedBeforeJob as ended:
            if not chosen_automatically:
                raise
            # The pipeline is over and its Job step never created a job: nothing runs, so one
            # CreateJob is still the only evaluation job. (A pipeline still running after
            # PIPELINE_START_TIMEOUT_S may yet create one: that TimeoutError is raised, not retried.)
            print(f"MultiTurnRLEvaluator's pipeline failed ({ended}); evaluating with CreateJob instead", flush=True)
            via = VIA_CREATE_JOB
    if via == VIA_CREATE_JOB:
        name = _start_with_create_job(
            resources,
            model,
            package,
            base_model_arn,
            dataset_uri=dataset_uri,
            temperature=float(temperature),
            effort=reasoning_effort,
            eval_group_size=eval_group_size,
            pass_k=pass_k,
            max_tokens=max_tokens,
            notebook=notebook,
        )
    results = _results(_wait_job(name), resources.mlflow_app_arn, pass_k)
    return {
        "model": model,
        "job_name": name,
        "via": VIA_LABELS[via],
        "reasoning_effort": reasoning_effort,
        "temperature": float(temperature),
        "eval_group_size": eval_group_size,
        **results,
        "seconds": round(time.monotonic() - started, 1),
    }


# ------------------------------------------------------------------------------------------ grid
def run_grid(
    resources: course_resources.CourseResources,
    trained_job: str,
    settings: Sequence[tuple[str, float]] = SETTINGS,
    models: Sequence[str] | None = None,
    *,
    eval_group_size: int = 1,
    pass_k: Sequence[int] = (1,),
    dataset_uri: str | None = None,
    max_tokens: int | None = EVAL_MAX_TOKENS,
    echo: bool = True,
) -> Any:
    """Evaluate every model at every (effort, temperature) setting, one job at a time.

    `models` defaults to ("base", trained_job); rows name them "base" and "trained". Every job
    caps each turn at `max_tokens` (default EVAL_MAX_TOKENS, the training value). Settings
    are run grouped by effort (one redeploy per effort). Live, settings whose effort differs
    from the deployed runtime's are skipped with a note (redeploy, then run them). Offline the
    runtime's effort is restored at the end. Returns a tidy DataFrame with columns
    model, effort, temperature, pass_at_1, mean_reward, prefill_tokens, sample_tokens; the job
    names are in `frame.attrs["jobs"]` and the creation path of each in `frame.attrs["via"]`.
    """
    import pandas as pd

    models = tuple(models) if models is not None else (BASE, trained_job)
    efforts = list(dict.fromkeys(effort for effort, _ in settings))
    original = resources.reasoning_effort
    if config.is_live():
        deployed = course_resources.deployed_reasoning_effort(resources)
        skipped = [e for e in efforts if e != deployed]
        if skipped and echo:
            print(
                f"skipped: effort {', '.join(skipped)} (the runtime runs {deployed}; redeploy with the other "
                "REASONING_EFFORT, then run those settings)"
            )
        efforts = [e for e in efforts if e == deployed]
    rows, jobs, via = [], [], []
    try:
        for effort in efforts:
            for temperature in [t for e, t in settings if e == effort]:
                for model in models:
                    result = evaluate(
                        resources,
                        model,
                        temperature=temperature,
                        reasoning_effort=effort,
                        eval_group_size=eval_group_size,
                        pass_k=pass_k,
                        dataset_uri=dataset_uri,
                        max_tokens=max_tokens,
                    )
                    label = BASE if model == BASE else (TRAINED if model == trained_job else model)
                    rows.append(
                        {
                            "model": label,
                            "effort": effort,
                            "temperature": float(temperature),
                            "pass_at_1": result["pass_at_1"],
                            "mean_reward": result["mean_reward"],
                            "prefill_tokens": result["prefill_tokens"],
                            "sample_tokens": result["sample_tokens"],
                        }
                    )
                    jobs.append(result["job_name"])
                    via.append(result["via"])
                    if echo:
                        print(
                            f"  {label:<8} effort {effort:<6} temperature {temperature:.1f}: pass@1 "
                            f"{_percent(result['pass_at_1'])} ({result['via']})"
                        )
    finally:
        if original and resources.runtime is not None and resources.reasoning_effort != original:
            course_resources.set_reasoning_effort(resources, original)
    frame = pd.DataFrame(rows, columns=list(GRID_COLUMNS))
    frame.attrs["jobs"] = jobs
    frame.attrs["via"] = via
    return frame


def _percent(value: float | None) -> str:
    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.1%}"
