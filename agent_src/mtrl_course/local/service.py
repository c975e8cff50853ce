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

Jobs outlive the process, as they do in AWS. Each notebook runs in a fresh kernel, so the service
writes every job's DescribeJob record (on every change) and every model package it registers
under the offline state directory (`<state>/jobs/`, git-ignored), and a new process reads them
back on its first job call: `MultiTurnRLTrainer.attach(name)`, DescribeJob, ListJobs and an
evaluation of the trained package work across kernels. A reloaded job is read-only. A job that
was still running when its process ended (offline jobs run in threads of the process that created
them) comes back as Failed, with a reason that says so; one whose process is still alive (a second
kernel open at the same time) is shown as it progresses, read from its record.

Where the real behaviour is not documented this module guesses, and says so at the spot.
"""

from __future__ import annotations

import json
import logging
import math
import re
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from mtrl_course import service_spec
from mtrl_course.errors import ServiceError, coral_errors, validation_error
from mtrl_course.service_spec import (
    EVALUATION,
    JOB_CATEGORIES,
    TRAINING,
    TrainingHyperparameters,
    flatten_nested,
    resolve_hyperparameters,
)
from mtrl_course.local.job import (
    ACTIVE,
    SCHEMA_VERSION,
    TERMINAL,
    JobConfig,
    LocalJob,
    MlflowAppInfo,
    Runner,
)
from mtrl_course.local.store import (
    DEAD_OWNER_REASON,
    FOREIGN_JOB_MESSAGE,
    ORPHAN_REASON,
    STORE_SUBDIR,
    AnyJob,
    JobStore,
    StoredJob,
    _failed_record,
    _package_version,
    process_alive,
    process_identity,
)

logger = logging.getLogger(__name__)

JOB_NAME_PATTERN = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$")
DEFAULT_MAX_RESULTS = 10
MAX_MAX_RESULTS = 100

# CreateJob needs the job role to trust this principal with both actions (aws-docs.md §4).
JOB_PRINCIPAL = "job.sagemaker.amazonaws.com"
IAM_REGION = "us-east-1"  # IAM is global; any Region's client sees the same roles
TRUST_ACTIONS = ("sts:AssumeRole", "sts:TagSession")
# The walkthrough says the error names the right principal only after retries (a third-party
# sample says after the third); the course's reconstruction: the first two attempts with a given
# role get the bare message, the third names the principal.
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
        state_dir: where job records go (`<state_dir>/jobs/`): a path, a callable returning one
            (read at every call, so a backend reset to another folder is followed), or None for
            the offline backend's state directory when this is its service (else: no records).
    """

    def __init__(
        self,
        client: Callable[[str, str], Any],
        mlflow_app: Callable[[str], MlflowAppInfo | None],
        runtime_registered: Callable[[str], bool],
        account: str,
        phase_seconds: float = 0.0,
        state_dir: Path | Callable[[], Path | None] | None = None,
    ):
        self.client = client
        self._mlflow_app = mlflow_app
        self._runtime_registered = runtime_registered
        self.account = account
        self.phase_seconds = phase_seconds
        self._state_dir = state_dir
        self._store: JobStore | None = None
        self._loaded_from: Path | None = None
        self._jobs: dict[tuple[str, str], AnyJob] = {}
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
    def get_job(self, name: str, category: str = TRAINING) -> AnyJob:
        """The job (a `LocalJob` of this process, or a `StoredJob` read from disk)."""
        self._sync()
        with self._lock:
            job = self._jobs.get((category, name))
        if job is None:
            job = self._adopt_one(category, name)
        if job is None:
            raise ServiceError("ResourceNotFound", f"Job {name} of category {category} does not exist.")
        if isinstance(job, StoredJob):
            job.refresh()
        return job

    def jobs(self) -> list[AnyJob]:
        self._sync()
        with self._lock:
            jobs = list(self._jobs.values())
        for job in jobs:
            if isinstance(job, StoredJob):
                job.refresh()
        return jobs

    def running_here(self, category: str | None = None) -> list[LocalJob]:
        """Jobs this process is running (InProgress or Stopping), of one category or all."""
        with self._lock:
            return [
                j
                for j in self._jobs.values()
                if isinstance(j, LocalJob) and j.status in ACTIVE and (category is None or j.category == category)
            ]

    # -- persistence --------------------------------------------------------------------------
    def store(self) -> JobStore | None:
        """Where job records are kept (None: this service keeps nothing on disk)."""
        directory = self._state_dir() if callable(self._state_dir) else self._state_dir
        if directory is None:
            directory = self._backend_state_dir()
        if directory is None:
            return None
        directory = Path(directory) / STORE_SUBDIR
        with self._lock:
            if self._store is None or self._store.directory != directory:
                self._store = JobStore(directory)
            return self._store

    def _backend_state_dir(self) -> Path | None:
        # The offline backend builds this service before it is published as the process's
        # backend, so its folder is looked up at call time (and follows reset_offline(dir)).
        aws = sys.modules.get("mtrl_course.aws")
        backend = getattr(aws, "_BACKEND", None) if aws is not None else None
        if backend is not None and getattr(backend, "service", None) is self:
            return Path(backend.state_dir)
        return None

    # -- JobHost: what a LocalJob asks of the service that runs it ----------------------------------
    def save_job(self, job: LocalJob) -> None:
        store = self.store()
        if store is None:
            return
        try:
            store.save(job.describe(), process_identity())
        except OSError as err:  # a full disk must not fail the job itself
            logger.warning("offline job record of %s not written: %s", job.name, err)

    def record_package(self, arn: str, region: str, request: Mapping[str, Any]) -> None:
        store = self.store()
        if store is not None:
            store.add_package(arn, region, request)

    def forget_model_packages(self, arns: Sequence[str]) -> int:
        """Stop restoring these model packages in later processes (clean-up deleted them)."""
        store = self.store()
        return store.forget_packages(arns) if store is not None else 0

    def _sync(self) -> None:
        """Read the stored jobs on the first call (again after a reset or a change of folder)."""
        store = self.store()
        if store is None:
            return
        with self._lock:
            if self._loaded_from == store.directory:
                return
            self._loaded_from = store.directory
            for category, name in store.keys():
                if (category, name) not in self._jobs:
                    self._adopt_one(category, name)
            self._restore_packages(store)

    def _adopt_one(self, category: str, name: str) -> StoredJob | None:
        """Load one stored record into the service (None if there is none)."""
        store = self.store()
        if store is None:
            return None
        record = store.load(store.path(category, name))
        if record is None:
            return None
        if record["Describe"]["JobStatus"] in ACTIVE:
            owner = record.get("Owner") or {}
            if owner == process_identity():
                # This process wrote it, yet no runner holds it: a reset abandoned the job.
                record = _failed_record(record, ORPHAN_REASON)
                store.save(record["Describe"], owner)
            elif not process_alive(owner):
                record = _failed_record(record, DEAD_OWNER_REASON.format(pid=owner.get("Pid", "?")))
                store.save(record["Describe"], owner)
        job = StoredJob(record, store)
        with self._lock:
            return self._jobs.setdefault((category, name), job)  # type: ignore[return-value]

    def _restore_packages(self, store: JobStore) -> None:
        """Register the stored model packages again in moto, whose records die with the process.

        moto numbers a group's packages 1, 2, ...; registering them group by group in version
        order gives every package its old ARN back, so stored jobs still point at them.
        """
        entries = sorted(
            store.packages(), key=lambda e: (e["Request"]["ModelPackageGroupName"], _package_version(e["Arn"]))
        )
        for entry in entries:
            request = entry["Request"]
            sagemaker = self.client("sagemaker", entry.get("Region") or IAM_REGION)
            try:
                sagemaker.describe_model_package(ModelPackageName=entry["Arn"])
                continue
            except Exception:  # not there (the usual case in a new process)
                pass
            group = request["ModelPackageGroupName"]
            try:
                sagemaker.describe_model_package_group(ModelPackageGroupName=group)
            except Exception:
                sagemaker.create_model_package_group(
                    ModelPackageGroupName=group, ModelPackageGroupDescription="Restored by the offline MTRL service"
                )
            arn = sagemaker.create_model_package(**request)["ModelPackageArn"]
            if arn != entry["Arn"]:
                logger.warning(
                    "offline model package %s came back as %s (a version is missing from its group)", entry["Arn"], arn
                )

    # -- the API ------------------------------------------------------------------------------
    def create_job(self, params: Mapping[str, Any], region: str) -> dict[str, Any]:
        name, category = params["JobName"], params["JobCategory"]
        if category not in JOB_CATEGORIES:
            raise validation_error(
                coral_errors(
                    [
                        f"Value '{category}' at 'jobCategory' failed to satisfy constraint: Member must satisfy enum value set: [{', '.join(JOB_CATEGORIES)}]"
                    ]
                )
            )
        if not JOB_NAME_PATTERN.match(name):
            raise validation_error(
                coral_errors(
                    [
                        f"Value '{name}' at 'jobName' failed to satisfy constraint: Member must satisfy regular expression pattern: {JOB_NAME_PATTERN.pattern}"
                    ]
                )
            )
        if params["JobConfigSchemaVersion"] != SCHEMA_VERSION:
            raise validation_error(
                f"JobConfigSchemaVersion {params['JobConfigSchemaVersion']} is not supported for {category}; supported versions: {SCHEMA_VERSION}."
            )
        self._sync()
        with self._lock:
            if (category, name) in self._jobs or self._adopt_one(category, name) is not None:
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
            # service's check order is not documented). Offline each process runs its own jobs
            # on its own CPU, so a job running in another process (another kernel) does not count.
            limit, quota_name = QUOTA[category]
            active = self.running_here(category)
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

    def list_job_schema_versions(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """The one JobConfigDocument schema version the stand-in accepts, for the MTRL categories."""
        category = params["JobCategory"]
        if category not in JOB_CATEGORIES:
            raise ServiceError("ResourceNotFound", f"No job configuration schemas found for job category {category}.")
        return {"JobConfigSchemas": [{"JobConfigSchemaVersion": SCHEMA_VERSION}]}

    def describe_job_schema_version(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """The stand-in's JobConfigDocument schema: the hyperparameter names it accepts per category.

        A JSON Schema of the one shape the course reads (the recipe's flat names under
        HyperParameters, from service_spec); the live schema's layout is unknown, so a reader
        should look for names in it, not for this structure (first_run does).
        """
        category = params["JobCategory"]
        if category not in JOB_CATEGORIES or params["JobConfigSchemaVersion"] != SCHEMA_VERSION:
            raise ServiceError(
                "ResourceNotFound",
                f"No job configuration schema {params['JobConfigSchemaVersion']} found for job category {category}.",
            )
        spec = service_spec.EVALUATION_SPEC if category == service_spec.EVALUATION else service_spec.TRAINING_SPEC
        section = "EvaluationConfig" if category == service_spec.EVALUATION else "TrainingConfig"
        properties = {name: {"type": "string"} for name in sorted(spec)}
        schema = {
            "$schema": "http://json-schema.org/draft-07/schema#",
            "title": f"{category} job configuration (offline stand-in)",
            "type": "object",
            "properties": {
                section: {
                    "type": "object",
                    "properties": {"HyperParameters": {"type": "object", "properties": properties}},
                }
            },
        }
        return {
            "JobCategory": category,
            "JobConfigSchemaVersion": SCHEMA_VERSION,
            "JobConfigSchema": json.dumps(schema),
        }

    def list_jobs(self, params: Mapping[str, Any]) -> dict[str, Any]:
        category = params["JobCategory"]
        store = self.store()
        if store is not None:  # jobs another process created since this one last looked
            for key in store.keys():
                if key not in self._jobs:
                    self._adopt_one(*key)
        jobs = [j for j in self.jobs() if j.category == category]
        needle = params.get("NameContains")
        if needle:
            jobs = [j for j in jobs if needle.lower() in j.name.lower()]
        if params.get("StatusEquals"):
            jobs = [j for j in jobs if j.status == params["StatusEquals"]]
        for parameter, attribute, after in (
            ("CreationTimeAfter", "creation_time", True),
            ("CreationTimeBefore", "creation_time", False),
            ("LastModifiedTimeAfter", "last_modified_time", True),
            ("LastModifiedTimeBefore", "last_modified_time", False),
        ):
            bound = params.get(parameter)
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
        if isinstance(job, StoredJob):
            if job.foreign:
                raise validation_error(FOREIGN_JOB_MESSAGE.format(name=job.name, pid=job.owner.get("Pid", "?")))
            raise validation_error(f"Job {job.name} is in status {job.status} and cannot be stopped.")
        if not job.begin_stopping():
            raise validation_error(f"Job {job.name} is in status {job.status} and cannot be stopped.")
        job.set_secondary("Stopping", "Stop requested")
        return {}

    def delete_job(self, params: Mapping[str, Any]) -> dict[str, Any]:
        job = self.get_job(params["JobName"], params["JobCategory"])
        if isinstance(job, StoredJob) and job.foreign:
            raise validation_error(FOREIGN_JOB_MESSAGE.format(name=job.name, pid=job.owner.get("Pid", "?")))
        if job.status not in TERMINAL:
            raise validation_error(f"Job {job.name} is in status {job.status}; stop it before deleting it.")
        with self._lock:
            self._jobs.pop((job.category, job.name), None)
        store = self.store()
        if store is not None:
            store.remove(job.category, job.name)
        return {}

    def shutdown(self, timeout: float = 5.0) -> None:
        """Ask every running job of this process to stop and wait a little for their runners (used by resets)."""
        with self._lock:
            running = [j for j in self._jobs.values() if isinstance(j, LocalJob) and not j.done]
        for job in running:
            job.request_stop()
        deadline = time.monotonic() + timeout
        for job in running:
            job.wait(max(0.0, deadline - time.monotonic()))

    def reset(self) -> None:
        """Stop and forget every job, runner and retry count (the offline backend's reset).

        Job records on disk stay; the next call reads them again (from the backend's folder,
        which a reset may have moved).
        """
        self.shutdown()
        with self._lock:
            self._jobs.clear()
            self._runners.clear()
            self._assume_attempts.clear()
            self._loaded_from = None
            self._store = None
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

        agent = doc.get("AgentConfig") or {}
        if agent.get("CustomAgentLambdaConfig"):
            raise validation_error(
                "AgentConfig.CustomAgentLambdaConfig is not supported by the offline service: use a local AgentCore runtime (BedrockAgentCoreConfig)."
            )
        agentcore = agent.get("BedrockAgentCoreConfig") or {}
        runtime_arn = agentcore.get("AgentRuntimeArn")
        if not runtime_arn:
            raise validation_error(
                "AgentConfig must contain BedrockAgentCoreConfig.AgentRuntimeArn or CustomAgentLambdaConfig.LambdaArn."
            )
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
        base_model = service_spec.model_from_arn(base_model_arn)
        if base_model is None:
            raise validation_error(
                f"{section}.BaseModelArn {base_model_arn!r} is not a SageMaker Public Hub model ARN."
            )
        if base_model not in service_spec.MODELS:
            raise ServiceError("ResourceNotFound", f"Base model {base_model} is not supported for {category}.")
        if region not in service_spec.MODELS[base_model][1]:
            raise validation_error(f"Base model {base_model} is not available for {category} in {region}.")
        training: TrainingHyperparameters | None = None
        if category == TRAINING:
            # Typed once, here; the runner and both GRPOs receive this object, never the strings.
            training = TrainingHyperparameters.from_resolved(
                resolve_hyperparameters(
                    settings.get("HyperParameters"),
                    service_spec.training_spec(base_model),
                    f"{section}.HyperParameters",
                )
            )
            hyperparameters = training.as_dict()
        else:
            hyperparameters = resolve_hyperparameters(
                flatten_nested(settings.get("HyperParameters")),
                service_spec.evaluation_spec(base_model),
                f"{section}.HyperParameters",
            )

        output = doc.get("OutputDataConfig") or {}
        # The SDK's trainer puts MlflowConfig in TrainingConfig, the docs and the evaluator in
        # OutputDataConfig (aws-docs.md §1.1 CONFLICT): accept either, require one. Required for
        # evaluation too (a guess: the results are only readable from MLflow).
        mlflow_config = settings.get("MlflowConfig") or output.get("MlflowConfig")
        if not mlflow_config or not mlflow_config.get("MlflowResourceArn"):
            raise validation_error(
                f"MlflowConfig is required for {category} jobs: set {section}.MlflowConfig.MlflowResourceArn (or OutputDataConfig.MlflowConfig) to an MLflow app ARN."
            )
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
                raise validation_error(
                    f"ModelPackageConfig.InputModelPackageArn {input_package} does not exist."
                ) from None
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
            training=training,
        )

    def _check_schedule(self, hyperparameters: Mapping[str, Any], rows: int) -> None:
        # Guess: the brief's rule. The service could also just stop at whichever limit comes
        # first; what it really does with inconsistent values is not documented.
        batch, epochs, steps = (
            hyperparameters["global_batch_size"],
            hyperparameters["max_epochs"],
            hyperparameters["max_steps"],
        )
        per_epoch = math.ceil(rows / batch)
        if steps > epochs * per_epoch:
            raise validation_error(
                f"max_steps ({steps}) is more than max_epochs ({epochs}) x steps per epoch ({per_epoch} = "
                f"ceil({rows} training rows / global_batch_size {batch})) = {epochs * per_epoch}. "
                "Raise max_epochs or lower max_steps."
            )

    def _read_channels(
        self, category: str, channels: Any, region: str, hyperparameters: Mapping[str, Any]
    ) -> dict[str, list[str]]:
        if not isinstance(channels, list) or not channels:
            raise validation_error("InputDataConfig must list at least one channel.")
        allowed = CHANNELS[category]
        found: dict[str, list[str]] = {}
        for channel in channels:
            name = (channel or {}).get("ChannelName")
            if name not in allowed:
                raise validation_error(
                    f"Channel {name!r} is not valid for {category}; valid channels: {', '.join(allowed)}."
                )
            if name in found:
                raise validation_error(f"Channel {name!r} appears twice in InputDataConfig.")
            source = channel.get("DataSource") or {}
            s3 = source.get("S3DataSource") or {}
            if not s3.get("S3Uri"):
                raise validation_error(
                    f"Channel {name!r}: only S3DataSource.S3Uri is supported offline (DatasetSource ARNs need the live service)."
                )
            # The minimum size is one batch for training ("at least equal to the batch size",
            # aws-docs.md §1.7); other channels only need one row.
            batch = hyperparameters.get("global_batch_size") if name == "train" else None
            found[name] = self._read_dataset(name, s3["S3Uri"], region, batch)
        if allowed[0] not in found:
            raise validation_error(f"InputDataConfig must contain a {allowed[0]!r} channel for {category} jobs.")
        return found

    def _read_dataset(self, channel: str, uri: str, region: str, batch_size: int | None) -> list[str]:
        from mtrl_course import (
            dataset,  # pulls in the word lists: only when a job is created
        )

        match = re.match(r"^s3://([^/]+)/?(.*)$", uri)
        if not match:
            raise validation_error(f"Channel {channel!r}: {uri!r} is not an s3:// URI.")
        bucket, key = match.groups()
        s3 = self.client("s3", region)
        try:
            listing = s3.list_objects_v2(Bucket=bucket, Prefix=key).get("Contents", [])
        except Exception:
            raise validation_error(
                f"Channel {channel!r}: cannot read {uri}: the bucket does not exist or is not accessible."
            ) from None
        keys = [o["Key"] for o in listing if o["Key"] == key]
        if not keys:  # an S3Prefix: every data file under it, in key order
            keys = sorted(o["Key"] for o in listing if o["Key"].lower().endswith(DATASET_SUFFIXES))
        if not keys:
            raise validation_error(
                f"Channel {channel!r}: no dataset file found at {uri} (expected {', '.join(DATASET_SUFFIXES)})."
            )
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
                problems += [
                    f"s3://{bucket}/{object_key} {p.unit} {p.line}: {p.message}"
                    if p.line
                    else f"s3://{bucket}/{object_key}: {p.message}"
                    for p in found
                ]
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
            for status, message in (
                ("Downloading", "Downloading the input data"),
                ("Pending", "Waiting for rollout capacity"),
            ):
                # Real order of the secondary statuses is not documented (aws-docs.md §1.5);
                # this follows the walkthrough: Starting, Downloading, Pending, then Training.
                if job.should_stop():
                    break
                time.sleep(self.phase_seconds)
                job.set_secondary(status, message)
            time.sleep(self.phase_seconds)
            runner = self._runners.get(job.category)
            if runner is None:
                job.fail(
                    f"InternalServerError: the offline service has no runner for {job.category} jobs (call set_runner first)."
                )
            elif not job.should_stop():
                runner(job)
        except Exception as err:  # the runner's bug or an unexpected failure: fail the job, keep the trace
            job.log("".join(traceback.format_exception(err)))
            job.finish("Failed", f"{type(err).__name__}: {err}")
        job.finish("Stopped" if job.stop_requested else "Completed", None)

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
            logs.put_log_events(
                logGroupName=group,
                logStreamName=stream,
                logEvents=[{"timestamp": int(time.time() * 1000), "message": message}],
            )
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
        services = (
            (statement.get("Principal") or {}).get("Service") if isinstance(statement.get("Principal"), dict) else None
        )
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
        job.update_progress(
            MaxEpoch=hp["max_epochs"], StepsPerEpoch=per_epoch, CurrentEpoch=1, CurrentStep=0, BatchSize=batch
        )
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
