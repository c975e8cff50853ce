"""The local MTRL service, control plane: CreateJob/DescribeJob/ListJobs/StopJob/DeleteJob.

It takes and returns the botocore shapes of the SageMaker `*Job` operations (job categories
`AgentRFT` and `AgentRFTEvaluation`), validates a CreateJob request the way the service does
(trust policy, same-Region runtime, MLflow app, datasets, hyperparameter ranges, the concurrency
quota) and runs each accepted job in a background thread through a pluggable runner. The runner
does the work (rollouts, updates, metrics); this module owns everything DescribeJob reports:
status, secondary-status transitions and the `ServiceOutput` block the SDK parses out of
JobConfigDocument (sagemaker/train/agent_rft_job.py, common_utils/job_wait.py).

The offline override layer (`mtrl_course.aws`) turns `ServiceError` into botocore's ClientError,
so the SDK and boto3 see the service's error codes and messages.

Where the real behaviour is not documented this module guesses, and says so at the spot.
"""

from __future__ import annotations

import copy
import datetime as dt
import json
import logging
import math
import re
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

logger = logging.getLogger(__name__)

TRAINING = "AgentRFT"
EVALUATION = "AgentRFTEvaluation"
JOB_CATEGORIES = (TRAINING, EVALUATION)
SCHEMA_VERSION = "1.0.0"
JOB_NAME_PATTERN = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$")
MAX_TRANSITIONS = 100  # DescribeJob's documented maximum
# Terminal statuses as the SDK's waiters read them (agent_rft_job.TERMINAL_STATUSES).
TERMINAL = ("Completed", "Failed", "Stopped")
ACTIVE = ("InProgress", "Stopping")
DEFAULT_MAX_RESULTS = 10
MAX_MAX_RESULTS = 100

# CreateJob needs the job role to trust this principal with both actions (aws-docs.md §4).
JOB_PRINCIPAL = "job.sagemaker.amazonaws.com"
IAM_REGION = "us-east-1"  # IAM is global; any Region's client sees the same roles
TRUST_ACTIONS = ("sts:AssumeRole", "sts:TagSession")
# A third-party report says the error names the right principal "only after the third retry";
# reproduced: the first attempts with a given role get the bare message.
ATTEMPTS_BEFORE_HINT = 2

# Default quota of each category (aws-docs.md §1.9), and the quota names the message quotes.
QUOTA = {
    TRAINING: (1, "Maximum number of concurrent multi-turn reinforcement fine tuning jobs"),
    EVALUATION: (1, "Maximum number of concurrent multi-turn reinforcement evaluation jobs"),
}
# Input channels each category reads; the first is required.
CHANNELS = {TRAINING: ("train", "validation"), EVALUATION: ("evaluation",)}
LOG_GROUP = "/aws/sagemaker/Job/{category}"
# Only the prefix `<job-name>/` is documented (aws-docs.md §1.5); the suffix is a guess.
LOG_STREAM = "{name}/service"
DATASET_SUFFIXES = (".jsonl", ".json", ".csv", ".parquet")
STAND_IN_IMAGE = "mtrl-offline-stand-in-adapter:latest"


class ServiceError(Exception):
    """An error the service returns: the override layer raises it as botocore's ClientError."""

    def __init__(self, code: str, message: str, status_code: int = 400):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.status_code = status_code


def validation_error(message: str) -> ServiceError:
    return ServiceError("ValidationException", message)


def _now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def _coral_errors(errors: list[str]) -> str:
    """AWS's validation-message style: 'N validation error(s) detected: a; b'."""
    count = len(errors)
    return f"{count} validation error{'s' if count != 1 else ''} detected: " + "; ".join(errors)


# ----------------------------------------------------------------------------------------------
# Hyperparameters


def _parse_value(text: str, kind: str) -> Any:
    if kind == "integer":
        return int(text)
    if kind == "float":
        value = float(text)
        if not math.isfinite(value):
            raise ValueError("not finite")
        return value
    if kind == "list":
        value = json.loads(text.replace("'", '"'))
        if not isinstance(value, list):
            raise ValueError("not a list")
        return value
    return text


_KIND_WORDS = {"integer": "an integer", "float": "a number", "list": "a list such as [1, 2, 4]", "string": "a string"}


def resolve_hyperparameters(
    given: Mapping[str, Any] | None,
    spec: Mapping[str, Mapping[str, Any]],
    where: str,
    aliases: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Typed hyperparameters: the spec's defaults overlaid with `given` (strings, as sent).

    Raises a ValidationException listing every unknown name, unparsable value and value out of
    range or outside its enum, in AWS's 'N validation errors detected' style. `where` is the
    document path quoted in the messages, `aliases` maps extra accepted names to spec names.
    """
    values = {name: copy.deepcopy(entry.get("default")) for name, entry in spec.items()}
    errors: list[str] = []
    for raw_name, raw in (given or {}).items():
        name = (aliases or {}).get(raw_name, raw_name)
        path = f"{where}.{raw_name}"
        if name not in spec:
            errors.append(f"Value at '{path}' failed to satisfy constraint: Member must be one of the supported hyperparameters ({', '.join(sorted(spec))})")
            continue
        entry = spec[name]
        kind = entry.get("type", "string")
        text = raw if isinstance(raw, str) else json.dumps(raw)
        try:
            value = _parse_value(text, kind)
        except (ValueError, TypeError):
            errors.append(f"Value '{text}' at '{path}' failed to satisfy constraint: Member must be {_KIND_WORDS.get(kind, kind)}")
            continue
        if "enum" in entry and value not in entry["enum"]:
            errors.append(f"Value '{text}' at '{path}' failed to satisfy constraint: Member must satisfy enum value set: {entry['enum']}")
            continue
        low, high = entry.get("min"), entry.get("max")
        if low is not None and (value < low or (entry.get("min_exclusive") and value == low)):
            relation = "greater than" if entry.get("min_exclusive") else "greater than or equal to"
            errors.append(f"Value '{text}' at '{path}' failed to satisfy constraint: Member must be {relation} {low}")
            continue
        if high is not None and value > high:
            errors.append(f"Value '{text}' at '{path}' failed to satisfy constraint: Member must be less than or equal to {high}")
            continue
        values[name] = value
    if errors:
        raise validation_error(_coral_errors(errors))
    return values


def _flatten_nested(hyperparameters: Mapping[str, Any] | None) -> dict[str, Any]:
    """Accept the docs' nested evaluation form ({"batch": {"eval_group_size": 1}}) as flat names.

    Guess: the live schema's shape is disputed (aws-docs.md §1.8), so both forms are accepted.
    """
    flat: dict[str, Any] = {}
    for key, value in (hyperparameters or {}).items():
        if isinstance(value, Mapping):
            for inner, inner_value in value.items():
                flat[f"rollout_{inner}" if key == "rollout" else inner] = inner_value
        else:
            flat[key] = value
    return flat


# ----------------------------------------------------------------------------------------------
# What the service needs from the rest of the offline stack


@dataclass(frozen=True)
class MlflowAppInfo:
    """Where a (local) MLflow app keeps its data."""

    arn: str
    tracking_uri: str
    artifact_root: str


@dataclass
class JobConfig:
    """The parts of a parsed JobConfigDocument a runner needs (defaults applied)."""

    category: str
    region: str
    document: dict[str, Any]
    base_model: str
    base_model_arn: str
    hyperparameters: dict[str, Any]
    runtime_arn: str
    runtime_qualifier: str
    mlflow: MlflowAppInfo
    experiment_name: str
    run_name: str
    prompts: dict[str, list[str]]
    s3_output_path: str
    output_model_package_group_arn: str | None
    checkpoint_model_package_group_arn: str | None
    input_model_package_arn: str | None
    max_runtime_seconds: int | None


# ----------------------------------------------------------------------------------------------
# One job


class LocalJob:
    """A job as the service tracks it; the runner reports progress through these methods.

    Status contract: the service walks Starting -> Downloading -> Pending and then calls the
    runner, which sets Training (or Evaluating) and Uploading with `set_secondary`. When the
    runner returns, the service completes the job, unless it called `fail` (the job is Failed
    at once) or a StopJob arrived (Stopped). A runner should poll `should_stop()` between units
    of work. An exception from the runner fails the job with the exception as the reason.
    """

    def __init__(self, service: LocalMTRLService, name: str, arn: str, role_arn: str, config: JobConfig, tags: list[dict]):
        self._service = service
        self.name = name
        self.arn = arn
        self.role_arn = role_arn
        self.config = config
        self.category = config.category
        self.tags = tags
        self.creation_time = _now()
        self.last_modified_time = self.creation_time
        self.end_time: dt.datetime | None = None
        self.status = "InProgress"
        self.secondary_status = ""
        self.failure_reason: str | None = None
        self.transitions: list[dict[str, Any]] = []
        self.service_output: dict[str, Any] = {}
        self._tokens = {"PrefillTokenCount": 0, "SampleTokenCount": 0, "TrainTokenCount": 0}
        self._stop_requested = threading.Event()
        self._terminal = threading.Event()
        self._lock = threading.RLock()
        self.set_secondary("Starting", "Starting the job")

    # -- accessors for runners ----------------------------------------------------------------
    @property
    def hyperparameters(self) -> dict[str, Any]:
        return self.config.hyperparameters

    @property
    def runtime_arn(self) -> str:
        return self.config.runtime_arn

    @property
    def mlflow_app_arn(self) -> str:
        return self.config.mlflow.arn

    @property
    def mlflow_tracking_uri(self) -> str:
        return self.config.mlflow.tracking_uri

    @property
    def experiment_name(self) -> str:
        return self.config.experiment_name

    @property
    def run_name(self) -> str:
        return self.config.run_name

    def prompts(self, channel: str) -> list[str]:
        """The prompt strings of one input channel, exactly as the service passes them on."""
        return list(self.config.prompts.get(channel, []))

    # -- progress reporting -------------------------------------------------------------------
    def set_secondary(self, status: str, message: str = "") -> None:
        """Enter a secondary status; the previous transition gets its end time."""
        with self._lock:
            if self._terminal.is_set():
                return
            now = _now()
            if self.transitions and "EndTime" not in self.transitions[-1]:
                self.transitions[-1]["EndTime"] = now
            self.transitions.append({"Status": status, "StartTime": now, "StatusMessage": message})
            del self.transitions[:-MAX_TRANSITIONS]
            self.secondary_status = status
            self.last_modified_time = now
        self.log(f"{status}: {message}" if message else status)

    def update_progress(self, **info: Any) -> None:
        """Merge ProgressInfo keys: MaxEpoch, StepsPerEpoch, CurrentEpoch, CurrentStep, MaxSteps, BatchSize."""
        self._update_output("ProgressInfo", info)

    def set_rollout_info(self, total: int, completed: int) -> None:
        self._update_output("RolloutInfo", {"Total": int(total), "Completed": int(completed)})

    def add_billable_tokens(self, prefill: int = 0, sample: int = 0, train: int = 0) -> None:
        with self._lock:
            self._tokens["PrefillTokenCount"] += int(prefill)
            self._tokens["SampleTokenCount"] += int(sample)
            self._tokens["TrainTokenCount"] += int(train)
            usage = dict(self._tokens)
            if self.category == TRAINING:
                # The SDK docstring says TrainTokenCount, the API type says TrainingTokenCount
                # (aws-docs.md §1.6 CONFLICT): report both so either reader works.
                usage["TrainingTokenCount"] = usage["TrainTokenCount"]
            else:
                # Evaluation does no training; a third-party test shows only these two keys.
                del usage["TrainTokenCount"]
            self.service_output["BillableTokenUsage"] = usage
            self.last_modified_time = _now()

    def set_output_model_package(self, arn: str) -> None:
        self._update_output("OutputModelPackageArn", arn, merge=False)

    def register_output_model_package(self, description: str = "", checkpoint: bool = False, adapter_s3_uri: str | None = None) -> str:
        """Create a model package in the output (or checkpoint) group in moto; records its ARN.

        The package names its base model in InferenceSpecification.Containers[0].BaseModel,
        which is how MultiTurnRLEvaluator recognises "a model package customized by SageMaker's
        fine-tuning flows". `adapter_s3_uri` is where the adapter files are, if anywhere.
        """
        from mtrl_course.local import hub

        group_arn = self.config.checkpoint_model_package_group_arn if checkpoint else self.config.output_model_package_group_arn
        if not group_arn:
            raise RuntimeError(f"job {self.name} has no {'checkpoint' if checkpoint else 'output'} model package group")
        container: dict[str, Any] = {
            # Never pulled offline; names the stand-in honestly instead of a real serving image.
            "Image": f"{self._service.account}.dkr.ecr.{self.config.region}.amazonaws.com/{STAND_IN_IMAGE}",
            "BaseModel": {"HubContentName": self.config.base_model, "HubContentVersion": hub.HUB_CONTENT_VERSION},
            "IsCheckpoint": checkpoint,
        }
        if adapter_s3_uri:
            container["ModelDataSource"] = {"S3DataSource": {"S3Uri": adapter_s3_uri, "S3DataType": "S3Prefix", "CompressionType": "None"}}
        sagemaker = self._service.client("sagemaker", self.config.region)
        group = group_arn.rsplit("/", 1)[-1]
        arn = sagemaker.create_model_package(
            ModelPackageGroupName=group,
            ModelPackageDescription=description or f"LoRA adapter from {self.category} job {self.name} (offline stand-in)",
            InferenceSpecification={
                "Containers": [container],
                "SupportedContentTypes": ["application/json"],
                "SupportedResponseMIMETypes": ["application/json"],
            },
        )["ModelPackageArn"]
        if not checkpoint:
            self.set_output_model_package(arn)
        return arn

    def set_mlflow_details(self, experiment_id: str, run_id: str, experiment_name: str | None = None, run_name: str | None = None) -> None:
        details = {
            "ExperimentName": experiment_name or self.experiment_name,
            "RunName": run_name or self.run_name,
            "ExperimentId": str(experiment_id),
            "RunId": str(run_id),
        }
        self._update_output("MlflowDetails", details, merge=False)

    def start_mlflow_run(self) -> tuple[str, str]:
        """Create (or reuse) the job's experiment, start its run; returns (experiment_id, run_id).

        Guess: with no MlflowExperimentName / MlflowRunName the real defaults are not
        documented; the local service uses the job name for both.
        """
        from mlflow.tracking import MlflowClient  # 3 s import: only when a runner logs metrics

        client = MlflowClient(tracking_uri=self.mlflow_tracking_uri)
        experiment = client.get_experiment_by_name(self.experiment_name)
        if experiment is None:
            location = f"{self.config.mlflow.artifact_root.rstrip('/')}/{self.experiment_name}"
            experiment_id = client.create_experiment(self.experiment_name, artifact_location=location)
        else:
            experiment_id = experiment.experiment_id
        run = client.create_run(experiment_id, run_name=self.run_name, tags={"sagemaker.job_arn": self.arn})
        self.set_mlflow_details(experiment_id, run.info.run_id)
        return str(experiment_id), run.info.run_id

    def log(self, message: str) -> None:
        """One line in the job's CloudWatch log stream (moto), as `trainer.stream_logs()` reads."""
        self._service.put_log(self, message)

    def fail(self, reason: str) -> None:
        """Fail the job now with this FailureReason; later status calls are ignored."""
        self._service._finish(self, "Failed", reason)

    def should_stop(self) -> bool:
        return self._stop_requested.is_set() or self._terminal.is_set()

    @property
    def done(self) -> bool:
        return self._terminal.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the job is terminal; True if it is."""
        return self._terminal.wait(timeout)

    def _update_output(self, key: str, value: Any, merge: bool = True) -> None:
        with self._lock:
            if merge:
                self.service_output.setdefault(key, {}).update(value)
            else:
                self.service_output[key] = value
            self.last_modified_time = _now()

    # -- API shapes ---------------------------------------------------------------------------
    def describe(self) -> dict[str, Any]:
        with self._lock:
            document = dict(self.config.document)
            if self.service_output:
                document["ServiceOutput"] = copy.deepcopy(self.service_output)
            response = {
                "JobName": self.name,
                "JobArn": self.arn,
                "RoleArn": self.role_arn,
                "JobCategory": self.category,
                "JobConfigSchemaVersion": SCHEMA_VERSION,
                "JobConfigDocument": json.dumps(document),
                "CreationTime": self.creation_time,
                "LastModifiedTime": self.last_modified_time,
                "JobStatus": self.status,
                "SecondaryStatus": self.secondary_status,
                "SecondaryStatusTransitions": copy.deepcopy(self.transitions),
            }
            if self.end_time:
                response["EndTime"] = self.end_time
            if self.failure_reason:
                response["FailureReason"] = self.failure_reason
            if self.tags:
                response["Tags"] = copy.deepcopy(self.tags)
            return response

    def summary(self) -> dict[str, Any]:
        with self._lock:
            summary = {
                "JobArn": self.arn,
                "JobName": self.name,
                "JobCategory": self.category,
                "JobStatus": self.status,
                "JobSecondaryStatus": self.secondary_status,
                "CreationTime": self.creation_time,
                "LastModifiedTime": self.last_modified_time,
            }
            if self.end_time:
                summary["EndTime"] = self.end_time
            return summary


Runner = Callable[[LocalJob], None]


# ----------------------------------------------------------------------------------------------
# The service


class LocalMTRLService:
    """Validates and runs AgentRFT / AgentRFTEvaluation jobs; one instance per offline backend.

    Args:
        client: `client(service_name, region)` returning a boto3 client that reaches moto.
        mlflow_app: `mlflow_app(arn)` returning the app's `MlflowAppInfo`, or None if unknown.
        runtime_registered: `runtime_registered(arn)` True if a local runtime serves that ARN.
        account: the offline account id (moto's).
        phase_seconds: pause in each of Starting / Downloading / Pending, so a watcher sees them.
    """

    def __init__(
        self,
        client: Callable[[str, str], Any],
        mlflow_app: Callable[[str], MlflowAppInfo | None],
        runtime_registered: Callable[[str], bool],
        account: str,
        phase_seconds: float = 0.0,
    ):
        self.client = client
        self._mlflow_app = mlflow_app
        self._runtime_registered = runtime_registered
        self.account = account
        self.phase_seconds = phase_seconds
        self._jobs: dict[tuple[str, str], LocalJob] = {}
        self._runners: dict[str, Runner] = {}
        self._assume_attempts: dict[str, int] = {}
        self._lock = threading.RLock()
        self._log_lock = threading.Lock()
        self._log_streams: set[tuple[str, str]] = set()

    # -- runners ------------------------------------------------------------------------------
    def set_runner(self, category: str, runner: Runner | None) -> None:
        """Install the function that does a job's work for one category (None removes it)."""
        if category not in JOB_CATEGORIES:
            raise ValueError(f"unknown job category {category!r}; expected one of {JOB_CATEGORIES}")
        with self._lock:
            if runner is None:
                self._runners.pop(category, None)
            else:
                self._runners[category] = runner

    def runner(self, category: str) -> Runner | None:
        return self._runners.get(category)

    # -- lookups for runners and tests --------------------------------------------------------
    def get_job(self, name: str, category: str = TRAINING) -> LocalJob:
        with self._lock:
            job = self._jobs.get((category, name))
        if job is None:
            raise ServiceError("ResourceNotFound", f"Job {name} of category {category} does not exist.")
        return job

    def jobs(self) -> list[LocalJob]:
        with self._lock:
            return list(self._jobs.values())

    # -- the API ------------------------------------------------------------------------------
    def create_job(self, params: Mapping[str, Any], region: str) -> dict[str, Any]:
        name, category = params["JobName"], params["JobCategory"]
        if category not in JOB_CATEGORIES:
            raise validation_error(_coral_errors([f"Value '{category}' at 'jobCategory' failed to satisfy constraint: Member must satisfy enum value set: [{', '.join(JOB_CATEGORIES)}]"]))
        if not JOB_NAME_PATTERN.match(name):
            raise validation_error(_coral_errors([f"Value '{name}' at 'jobName' failed to satisfy constraint: Member must satisfy regular expression pattern: {JOB_NAME_PATTERN.pattern}"]))
        if params["JobConfigSchemaVersion"] != SCHEMA_VERSION:
            raise validation_error(f"JobConfigSchemaVersion {params['JobConfigSchemaVersion']} is not supported for {category}; supported versions: {SCHEMA_VERSION}.")
        with self._lock:
            if (category, name) in self._jobs:
                raise ServiceError("ResourceInUse", f"Job {name} of category {category} already exists.")
        try:
            document = json.loads(params["JobConfigDocument"])
        except json.JSONDecodeError as err:
            raise validation_error(f"JobConfigDocument is not valid JSON: {err.msg} at position {err.pos}.") from None
        if not isinstance(document, dict):
            raise validation_error("JobConfigDocument must be a JSON object.")
        if "ServiceOutput" in document:
            raise validation_error("JobConfigDocument must not contain ServiceOutput: the service writes it.")

        self._check_role(params["RoleArn"])
        config = self._parse_config(category, document, region, name)
        arn = f"arn:aws:sagemaker:{region}:{self.account}:job/{category}/{name}"
        with self._lock:
            # Checked last, as the quota applies to accepted requests only (a guess: the real
            # service's check order is not documented).
            limit, quota_name = QUOTA[category]
            active = [j for j in self._jobs.values() if j.category == category and j.status in ACTIVE]
            if len(active) >= limit:
                raise ServiceError(
                    "ResourceLimitExceeded",
                    f"The account-level service limit '{quota_name}' is {limit} Jobs, with current utilization "
                    f"of {len(active)} Jobs and a request delta of 1 Jobs. Please use AWS Service Quotas to "
                    "request an increase for this quota.",
                )
            if (category, name) in self._jobs:
                raise ServiceError("ResourceInUse", f"Job {name} of category {category} already exists.")
            job = LocalJob(self, name, arn, params["RoleArn"], config, list(params.get("Tags") or []))
            self._jobs[(category, name)] = job
        threading.Thread(target=self._run, args=(job,), name=f"mtrl-job-{name}", daemon=True).start()
        return {"JobArn": arn}

    def describe_job(self, params: Mapping[str, Any]) -> dict[str, Any]:
        return self.get_job(params["JobName"], params["JobCategory"]).describe()

    def list_jobs(self, params: Mapping[str, Any]) -> dict[str, Any]:
        category = params["JobCategory"]
        jobs = [j for j in self.jobs() if j.category == category]
        needle = params.get("NameContains")
        if needle:
            jobs = [j for j in jobs if needle.lower() in j.name.lower()]
        if params.get("StatusEquals"):
            jobs = [j for j in jobs if j.status == params["StatusEquals"]]
        for key, attribute, after in (
            ("CreationTimeAfter", "creation_time", True),
            ("CreationTimeBefore", "creation_time", False),
            ("LastModifiedTimeAfter", "last_modified_time", True),
            ("LastModifiedTimeBefore", "last_modified_time", False),
        ):
            bound = params.get(key)
            if bound is not None:
                jobs = [j for j in jobs if (getattr(j, attribute) > bound) == after]
        sort_by = params.get("SortBy", "CreationTime")
        sort_key = {"Name": lambda j: j.name, "Status": lambda j: j.status}.get(sort_by, lambda j: j.creation_time)
        jobs.sort(key=sort_key, reverse=params.get("SortOrder", "Descending") == "Descending")
        start = int(params.get("NextToken") or 0)
        size = min(int(params.get("MaxResults") or DEFAULT_MAX_RESULTS), MAX_MAX_RESULTS)
        page = jobs[start : start + size]
        response: dict[str, Any] = {"JobSummaries": [j.summary() for j in page]}
        if start + size < len(jobs):
            response["NextToken"] = str(start + size)
        return response

    def stop_job(self, params: Mapping[str, Any]) -> dict[str, Any]:
        job = self.get_job(params["JobName"], params["JobCategory"])
        with job._lock:
            if job.status != "InProgress":
                raise validation_error(f"Job {job.name} is in status {job.status} and cannot be stopped.")
            job.status = "Stopping"
            job._stop_requested.set()
        job.set_secondary("Stopping", "Stop requested")
        return {}

    def delete_job(self, params: Mapping[str, Any]) -> dict[str, Any]:
        job = self.get_job(params["JobName"], params["JobCategory"])
        if job.status not in TERMINAL:
            raise validation_error(f"Job {job.name} is in status {job.status}; stop it before deleting it.")
        with self._lock:
            self._jobs.pop((job.category, job.name), None)
        return {}

    def shutdown(self, timeout: float = 5.0) -> None:
        """Ask every running job to stop and wait a little for their runners (used by resets)."""
        for job in self.jobs():
            if not job.done:
                job._stop_requested.set()
        deadline = time.monotonic() + timeout
        for job in self.jobs():
            job.wait(max(0.0, deadline - time.monotonic()))

    def reset(self) -> None:
        """Stop and forget every job, runner and retry count (the offline backend's reset)."""
        self.shutdown()
        with self._lock:
            self._jobs.clear()
            self._runners.clear()
            self._assume_attempts.clear()
        self.forget_logs()

    # -- validation ---------------------------------------------------------------------------
    def _check_role(self, role_arn: str) -> None:
        attempts = self._assume_attempts[role_arn] = self._assume_attempts.get(role_arn, 0) + 1
        bare = f"Could not assume role {role_arn}. Please ensure that the role exists and its trust policy allows the service to assume it."
        hinted = (
            f"Could not assume role {role_arn}. Please ensure that the role exists and allows principal "
            f"'{JOB_PRINCIPAL}' to assume the role with the actions {' and '.join(TRUST_ACTIONS)}."
        )
        message = hinted if attempts > ATTEMPTS_BEFORE_HINT else bare
        match = re.match(r"^arn:aws[a-z-]*:iam::(\d{12}):role/(?:.*/)?([\w+=,.@-]+)$", role_arn)
        if not match or match.group(1) != self.account:
            raise validation_error(message)
        iam = self.client("iam", IAM_REGION)
        try:
            role = iam.get_role(RoleName=match.group(2))["Role"]
        except Exception:  # NoSuchEntity: the service reports it as an assume failure too
            raise validation_error(message) from None
        trust = role.get("AssumeRolePolicyDocument") or {}
        if isinstance(trust, str):
            from urllib.parse import unquote

            trust = json.loads(unquote(trust))
        if not _trusts(trust, JOB_PRINCIPAL, TRUST_ACTIONS):
            raise validation_error(message)

    def _parse_config(self, category: str, doc: dict[str, Any], region: str, name: str) -> JobConfig:
        from mtrl_course.local import hub  # hub imports this module: import here, not at the top

        agent = doc.get("AgentConfig") or {}
        if agent.get("CustomAgentLambdaConfig"):
            raise validation_error("AgentConfig.CustomAgentLambdaConfig is not supported by the offline service: use a local AgentCore runtime (BedrockAgentCoreConfig).")
        agentcore = agent.get("BedrockAgentCoreConfig") or {}
        runtime_arn = agentcore.get("AgentRuntimeArn")
        if not runtime_arn:
            raise validation_error("AgentConfig must contain BedrockAgentCoreConfig.AgentRuntimeArn or CustomAgentLambdaConfig.LambdaArn.")
        runtime_region = runtime_arn.split(":")[3] if runtime_arn.count(":") >= 5 else ""
        if runtime_region != region:
            raise validation_error(
                f"The agent runtime {runtime_arn} is in Region '{runtime_region}', but the job is being created in "
                f"'{region}'. The agent runtime must be in the same Region as the job."
            )
        if not self._runtime_registered(runtime_arn):
            raise ServiceError("ResourceNotFound", f"Agent runtime {runtime_arn} was not found.")

        section = "TrainingConfig" if category == TRAINING else "EvaluationConfig"
        settings = doc.get(section)
        if not isinstance(settings, dict):
            raise validation_error(f"JobConfigDocument.{section} is required for {category} jobs.")
        base_model_arn = settings.get("BaseModelArn") or ""
        base_model = hub.model_from_arn(base_model_arn)
        if base_model is None:
            raise validation_error(f"{section}.BaseModelArn {base_model_arn!r} is not a SageMaker Public Hub model ARN.")
        if base_model not in hub.MODELS:
            raise ServiceError("ResourceNotFound", f"Base model {base_model} is not supported for {category}.")
        if region not in hub.MODELS[base_model][1]:
            raise validation_error(f"Base model {base_model} is not available for {category} in {region}.")
        if category == TRAINING:
            hyperparameters = resolve_hyperparameters(settings.get("HyperParameters"), hub.training_spec(base_model), f"{section}.HyperParameters")
        else:
            hyperparameters = resolve_hyperparameters(
                _flatten_nested(settings.get("HyperParameters")),
                hub.evaluation_spec(base_model),
                f"{section}.HyperParameters",
                aliases=hub.EVALUATION_ALIASES,
            )

        output = doc.get("OutputDataConfig") or {}
        # The SDK's trainer puts MlflowConfig in TrainingConfig, the docs and the evaluator in
        # OutputDataConfig (aws-docs.md §1.1 CONFLICT): accept either, require one. Required for
        # evaluation too (a guess: the results are only readable from MLflow).
        mlflow_config = settings.get("MlflowConfig") or output.get("MlflowConfig")
        if not mlflow_config or not mlflow_config.get("MlflowResourceArn"):
            raise validation_error(f"MlflowConfig is required for {category} jobs: set {section}.MlflowConfig.MlflowResourceArn (or OutputDataConfig.MlflowConfig) to an MLflow app ARN.")
        mlflow_arn = mlflow_config["MlflowResourceArn"]
        app = self._mlflow_app(mlflow_arn)
        if app is None:
            raise validation_error(f"MLflow resource {mlflow_arn} does not exist or is not in a usable state.")

        prompts = self._read_channels(category, doc.get("InputDataConfig"), region, hyperparameters)
        if category == TRAINING:
            self._check_schedule(hyperparameters, len(prompts["train"]))
        packages = doc.get("ModelPackageConfig") or {}
        input_package = packages.get("InputModelPackageArn")
        if input_package:
            try:
                self.client("sagemaker", region).describe_model_package(ModelPackageName=input_package)
            except Exception:
                raise validation_error(f"ModelPackageConfig.InputModelPackageArn {input_package} does not exist.") from None
        stopping = doc.get("StoppingCondition") or {}
        return JobConfig(
            category=category,
            region=region,
            document=doc,
            base_model=base_model,
            base_model_arn=base_model_arn,
            hyperparameters=hyperparameters,
            runtime_arn=runtime_arn,
            runtime_qualifier=agentcore.get("Qualifier") or "DEFAULT",
            mlflow=app,
            experiment_name=mlflow_config.get("MlflowExperimentName") or name,
            run_name=mlflow_config.get("MlflowRunName") or name,
            prompts=prompts,
            s3_output_path=output.get("S3OutputPath") or "",
            output_model_package_group_arn=packages.get("OutputModelPackageGroupArn"),
            checkpoint_model_package_group_arn=packages.get("IntermediateCheckpointModelPackageGroupArn"),
            input_model_package_arn=input_package,
            max_runtime_seconds=stopping.get("MaxRuntimeInSeconds"),
        )

    def _check_schedule(self, hyperparameters: Mapping[str, Any], rows: int) -> None:
        # Guess: the brief's rule. The service could also just stop at whichever limit comes
        # first; what it really does with inconsistent values is not documented.
        batch, epochs, steps = hyperparameters["global_batch_size"], hyperparameters["max_epochs"], hyperparameters["max_steps"]
        per_epoch = math.ceil(rows / batch)
        if steps > epochs * per_epoch:
            raise validation_error(
                f"max_steps ({steps}) is more than max_epochs ({epochs}) x steps per epoch ({per_epoch} = "
                f"ceil({rows} training rows / global_batch_size {batch})) = {epochs * per_epoch}. "
                "Raise max_epochs or lower max_steps."
            )

    def _read_channels(self, category: str, channels: Any, region: str, hyperparameters: Mapping[str, Any]) -> dict[str, list[str]]:
        if not isinstance(channels, list) or not channels:
            raise validation_error("InputDataConfig must list at least one channel.")
        allowed = CHANNELS[category]
        found: dict[str, list[str]] = {}
        for channel in channels:
            name = (channel or {}).get("ChannelName")
            if name not in allowed:
                raise validation_error(f"Channel {name!r} is not valid for {category}; valid channels: {', '.join(allowed)}.")
            if name in found:
                raise validation_error(f"Channel {name!r} appears twice in InputDataConfig.")
            source = (channel.get("DataSource") or {})
            s3 = source.get("S3DataSource") or {}
            if not s3.get("S3Uri"):
                raise validation_error(f"Channel {name!r}: only S3DataSource.S3Uri is supported offline (DatasetSource ARNs need the live service).")
            # The minimum size is one batch for training ("at least equal to the batch size",
            # aws-docs.md §1.7); other channels only need one row.
            batch = hyperparameters.get("global_batch_size") if name == "train" else None
            found[name] = self._read_dataset(name, s3["S3Uri"], region, batch)
        if allowed[0] not in found:
            raise validation_error(f"InputDataConfig must contain a {allowed[0]!r} channel for {category} jobs.")
        return found

    def _read_dataset(self, channel: str, uri: str, region: str, batch_size: int | None) -> list[str]:
        from mtrl_course import dataset  # pulls in the word lists: only when a job is created

        match = re.match(r"^s3://([^/]+)/?(.*)$", uri)
        if not match:
            raise validation_error(f"Channel {channel!r}: {uri!r} is not an s3:// URI.")
        bucket, key = match.groups()
        s3 = self.client("s3", region)
        try:
            listing = s3.list_objects_v2(Bucket=bucket, Prefix=key).get("Contents", [])
        except Exception:
            raise validation_error(f"Channel {channel!r}: cannot read {uri}: the bucket does not exist or is not accessible.") from None
        keys = [o["Key"] for o in listing if o["Key"] == key]
        if not keys:  # an S3Prefix: every data file under it, in key order
            keys = sorted(o["Key"] for o in listing if o["Key"].lower().endswith(DATASET_SUFFIXES))
        if not keys:
            raise validation_error(f"Channel {channel!r}: no dataset file found at {uri} (expected {', '.join(DATASET_SUFFIXES)}).")
        prompts: list[str] = []
        problems: list[str] = []
        with tempfile.TemporaryDirectory(prefix="mtrl-dataset-") as tmp:
            for object_key in keys:
                suffix = PurePosixPath(object_key).suffix.lower()
                local = Path(tmp) / f"{channel}{suffix}"
                local.write_bytes(s3.get_object(Bucket=bucket, Key=object_key)["Body"].read())
                # Stricter than the real service, which passes each prompt string on unparsed:
                # the course validator also checks the task JSON inside it.
                found = dataset.validate_file(local, answers=None)
                problems += [f"s3://{bucket}/{object_key} {p.unit} {p.line}: {p.message}" if p.line else f"s3://{bucket}/{object_key}: {p.message}" for p in found]
                if not found:
                    prompts += [row[dataset.PROMPT_COLUMN] for row in dataset.read_rows(local)]
        if problems:
            shown = "; ".join(problems[:5]) + (f"; and {len(problems) - 5} more" if len(problems) > 5 else "")
            raise validation_error(f"Channel {channel!r}: the dataset is not valid: {shown}")
        if batch_size is not None and len(prompts) < batch_size:
            raise validation_error(
                f"Channel {channel!r}: the dataset has {len(prompts)} rows, fewer than global_batch_size "
                f"({batch_size}); the training dataset must hold at least one batch."
            )
        return prompts

    # -- running ------------------------------------------------------------------------------
    def _run(self, job: LocalJob) -> None:
        try:
            for status, message in (("Downloading", "Downloading the input data"), ("Pending", "Waiting for rollout capacity")):
                # Real order of the secondary statuses is not documented (aws-docs.md §1.5);
                # this follows the walkthrough: Starting, Downloading, Pending, then Training.
                if job.should_stop():
                    break
                time.sleep(self.phase_seconds)
                job.set_secondary(status, message)
            time.sleep(self.phase_seconds)
            runner = self._runners.get(job.category)
            if runner is None:
                job.fail(f"InternalServerError: the offline service has no runner for {job.category} jobs (call set_runner first).")
            elif not job.should_stop():
                runner(job)
        except Exception as err:  # the runner's bug or an unexpected failure: fail the job, keep the trace
            job.log("".join(traceback.format_exception(err)))
            self._finish(job, "Failed", f"{type(err).__name__}: {err}")
        if job._stop_requested.is_set():
            self._finish(job, "Stopped", None)
        else:
            self._finish(job, "Completed", None)

    def _finish(self, job: LocalJob, status: str, reason: str | None) -> None:
        with job._lock:
            if job._terminal.is_set():
                return
            job.set_secondary(status, reason or "")
            now = _now()
            job.transitions[-1]["EndTime"] = now
            job.status = status
            job.failure_reason = reason
            job.end_time = now
            job.last_modified_time = now
            job._terminal.set()

    def put_log(self, job: LocalJob, message: str) -> None:
        group = LOG_GROUP.format(category=job.category)
        stream = LOG_STREAM.format(name=job.name)
        try:
            logs = self.client("logs", job.config.region)
            with self._log_lock:
                if (group, stream) not in self._log_streams:
                    try:
                        logs.create_log_group(logGroupName=group)
                    except logs.exceptions.ResourceAlreadyExistsException:
                        pass
                    logs.create_log_stream(logGroupName=group, logStreamName=stream)
                    self._log_streams.add((group, stream))
            logs.put_log_events(logGroupName=group, logStreamName=stream, logEvents=[{"timestamp": int(time.time() * 1000), "message": message}])
        except Exception as err:  # logging must never fail a job (e.g. moto reset mid-run)
            logger.debug("job log for %s not written: %s", job.name, err)

    def forget_logs(self) -> None:
        with self._log_lock:
            self._log_streams.clear()


def _trusts(trust: Mapping[str, Any], principal: str, actions: tuple[str, ...]) -> bool:
    """True if Allow statements for this service principal grant every one of `actions`."""
    granted: set[str] = set()
    for statement in trust.get("Statement") or []:
        if statement.get("Effect") != "Allow":
            continue
        services = (statement.get("Principal") or {}).get("Service") if isinstance(statement.get("Principal"), dict) else None
        services = [services] if isinstance(services, str) else list(services or [])
        if principal not in services:
            continue
        stated = statement.get("Action") or []
        stated = [stated] if isinstance(stated, str) else stated
        for action in stated:
            if action in ("*", "sts:*"):
                granted.update(actions)
            else:
                granted.add(action)
    return all(action in granted for action in actions)


# ----------------------------------------------------------------------------------------------
# The demo runner (tests only)

DEMO_LABEL = "demo runner (tests only): no rollouts were played; token counts are zero"


def demo_runner(job: LocalJob) -> None:
    """Walk a job through its statuses with no work at all: for the service's own tests.

    It reports zero billable tokens and a model package that holds nothing, and says so in the
    job log. The course's real runner (rollouts through the runtime, updates of the stand-in
    policy, MLflow metrics) comes from the training module.
    """
    job.log(DEMO_LABEL)
    hp = job.hyperparameters
    if job.category == TRAINING:
        batch, group = hp["global_batch_size"], hp["group_size"]
        per_epoch = math.ceil(len(job.prompts("train")) / batch)
        steps = min(hp["max_steps"], hp["max_epochs"] * per_epoch)
        job.set_secondary("Training", DEMO_LABEL)
        job.update_progress(MaxEpoch=hp["max_epochs"], StepsPerEpoch=per_epoch, CurrentEpoch=1, CurrentStep=0, BatchSize=batch)
        for step in range(1, steps + 1):
            if job.should_stop():
                return
            job.update_progress(CurrentEpoch=(step - 1) // per_epoch + 1, CurrentStep=(step - 1) % per_epoch + 1)
            job.set_rollout_info(total=steps * batch * group, completed=step * batch * group)
        job.add_billable_tokens(prefill=0, sample=0, train=0)
        job.set_secondary("Uploading", "Registering the (empty) adapter")
        if job.config.output_model_package_group_arn:
            job.register_output_model_package(DEMO_LABEL)
    else:
        prompts = job.prompts("evaluation")
        total = len(prompts) * hp["eval_group_size"]
        # Guess: "Evaluating" is in the SecondaryStatus enum; its use for these jobs is not documented.
        job.set_secondary("Evaluating", DEMO_LABEL)
        job.set_rollout_info(total=total, completed=total)
        job.add_billable_tokens(prefill=0, sample=0)
        job.set_secondary("Uploading", "Writing the evaluation results")
