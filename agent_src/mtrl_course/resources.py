"""The course resources a training or evaluation job needs, found (live) or made (offline) in one call.

Notebooks 05 to 07 start with

    res = resources.prepare()

and pass `res` to `training` and `evaluation`. The job needs five things, each made by an earlier
step of the walkthrough:

| resource | made by (live) | offline |
|---|---|---|
| training job role `mtrl-wordle-job-role-<run>` | notebook 01 | created in moto (`iam.ensure_job_role`) |
| course bucket with the two dataset files | notebook 04 | created in moto, both files uploaded |
| AgentCore runtime `<project>_<runtime>` | notebook 02 (`agentcore deploy`) | the real agent app on loopback (`smoke.local_runtime`) |
| MLflow app `mtrl-wordle-mlflow-<run>` (its own role `mtrl-wordle-mlflow-role-<run>`) | notebook 05 (`ensure_mlflow_app`) | a local sqlite store behind a CreateMlflowApp |
| the job's output location | under the course prefix of the bucket | the same, in moto |

Live, `prepare()` only looks things up and fails with one message listing everything missing and
the notebook that creates it; it never creates anything that bills. The environment variables
`MTRL_JOB_ROLE_ARN`, `MTRL_RUNTIME_ARN` and `MTRL_MLFLOW_APP_ARN` point it at resources with other
names (an instructor's runtime or MLflow app, say); `MTRL_BUCKET` does the same for the bucket
(`storage`).

Offline, `prepare()` also starts the local AgentCore runtime in this process (thread mode, with
the environment variables `agentcore.json` gives the deployed runtime: REASONING_EFFORT and
REASONING_PROMPT_HINT), attaches the Job Runtime emulator and installs the stand-in runners on
the local MTRL service, on the fast lane. It is idempotent within a process: a second call returns
the same resources at once (changing only the reasoning effort if asked to).

Reasoning effort is a runtime environment variable, never a job setting: changing it means
redeploying the runtime (`set_reasoning_effort`), which must not happen while a job runs. Offline
that is a restart of the local runtime with the new value; because the runtime runs in this
process, the fast lane's in-process rollouts read the same variable and stay consistent with it.
"""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mtrl_course import aws, config, deploy, errors, iam, instructor_run, naming, storage

MLFLOW_APP_KIND = "mlflow"
MLFLOW_ROLE_KIND = "mlflow-role"
MLFLOW_ROLE_POLICY = "mtrl-mlflow-artifacts"
MLFLOW_ARTIFACTS_DIR = "mlflow"
DEFAULT_NOTEBOOK = "05"
DEFAULT_REASONING_EFFORT = "low"
REASONING_EFFORT_ENV = "REASONING_EFFORT"
REASONING_LEVELS = ("low", "medium", "high")
# Point prepare() at resources that do not carry the course's names.
JOB_ROLE_ENV = "MTRL_JOB_ROLE_ARN"
RUNTIME_ENV = "MTRL_RUNTIME_ARN"
MLFLOW_APP_ENV = "MTRL_MLFLOW_APP_ARN"
# Offline stand-in adapters (the model packages' contents) live beside the job records.
ADAPTERS_SUBDIR = "adapters"
# A new MLflow app takes minutes to reach Created (the offline one is Created at once).
MLFLOW_READY_STATUSES = ("Created", "Updated")
MLFLOW_FAILED_STATUSES = ("CreateFailed", "UpdateFailed", "Deleting", "DeleteFailed", "Deleted")
MLFLOW_POLL_S = 15.0
MLFLOW_CREATE_TIMEOUT_S = 45 * 60.0
ACTIVE_JOB_STATUSES = ("InProgress", "Stopping")
JOB_CATEGORIES = ("AgentRFT", "AgentRFTEvaluation")


@dataclass
class CourseResources:
    """Everything a job needs, in one place. `runtime` is the local runtime object offline, None live."""

    mode: str
    region: str
    account: str
    job_role_arn: str
    bucket: str
    train_s3_uri: str
    validation_s3_uri: str
    output_s3_uri: str
    mlflow_app_arn: str
    runtime_arn: str
    runtime: Any = None
    reasoning_effort: str | None = None  # what the runtime runs with (None: unknown or unset)
    adapter_dir: Path | None = None  # offline: where the stand-in adapters are kept
    state_dir: Path | None = field(default=None, repr=False)  # offline: the backend folder it was made in

    @property
    def offline(self) -> bool:
        return self.mode == config.Mode.OFFLINE.value

    def rows(self) -> list[dict[str, str]]:
        """item -> value rows for a notebook table, account IDs masked."""
        shown = (
            "mode",
            "region",
            "account",
            "job_role_arn",
            "bucket",
            "train_s3_uri",
            "validation_s3_uri",
            "output_s3_uri",
            "mlflow_app_arn",
            "runtime_arn",
            "reasoning_effort",
        )
        return [{"item": name, "value": naming.mask_account(str(getattr(self, name)))} for name in shown]


_LOCK = threading.RLock()
_OFFLINE: CourseResources | None = None


# ------------------------------------------------------------------------------------------ prepare
def prepare(
    session: Any | None = None, *, reasoning_effort: str = DEFAULT_REASONING_EFFORT, notebook: str = DEFAULT_NOTEBOOK
) -> CourseResources:
    """The course resources for this mode (see the module docstring).

    Offline: creates (or reuses) role, bucket and datasets, MLflow app, local runtime (with
    `reasoning_effort`), Job Runtime emulator and runners; cheap on a second call. Live: finds
    them and raises LookupError naming what is missing and which notebook creates it.
    `notebook` goes into the course tags of anything created.
    """
    _check_effort(reasoning_effort)
    if config.is_live():
        return _discover_live(session)
    return _prepare_offline(session, reasoning_effort, notebook)


def _check_effort(effort: str) -> None:
    if effort not in REASONING_LEVELS:
        raise ValueError(f"reasoning_effort {effort!r} is not one of {REASONING_LEVELS}")


def _still_usable(cached: CourseResources, backend: Any) -> bool:
    """True while nothing (a reset, close()) has taken the cached offline resources away."""
    from mtrl_course import local
    from mtrl_course.service_spec import EVALUATION, TRAINING

    runtime = cached.runtime
    return (
        cached.state_dir == Path(backend.state_dir)
        and runtime is not None
        and backend.runtimes.get(cached.runtime_arn) is runtime
        and runtime.serving
        and backend.mlflow.info(cached.mlflow_app_arn) is not None
        and local.runner_ready(TRAINING)
        and local.runner_ready(EVALUATION)
        and backend.job_runtime.emulator is not None
    )


def offline_adapter_dir(backend: Any | None = None) -> Path:
    """Where offline jobs keep the stand-in adapters: `<offline state>/adapters/`."""
    if backend is None:
        backend = aws.offline_backend()
    return Path(backend.state_dir) / ADAPTERS_SUBDIR


def _prepare_offline(session: Any | None, effort: str, notebook: str) -> CourseResources:
    global _OFFLINE
    from mtrl_course import local, smoke

    with _LOCK:
        backend = aws.offline_backend()
        cached = _OFFLINE
        if cached is not None and _still_usable(cached, backend):
            if cached.reasoning_effort != effort:
                set_reasoning_effort(cached, effort)
            return cached
        if cached is not None and cached.runtime is not None:
            cached.runtime.close()
        session = session or aws.session()
        region = session.region_name or config.OFFLINE_REGION
        account = session.client("sts").get_caller_identity()["Account"]
        role = iam.ensure_job_role(session=session, notebook=notebook)
        uploaded = storage.upload_dataset(session=session, notebook=notebook)
        bucket = uploaded[0].bucket
        mlflow_arn = ensure_mlflow_app(session, bucket=bucket, notebook=notebook)
        runtime = smoke.local_runtime(start=False)  # also serves and attaches the Job Runtime emulator
        runtime.env[REASONING_EFFORT_ENV] = effort
        runtime.start()
        adapters = offline_adapter_dir(backend)
        local.install_runners(lane=local.LANE_FAST, adapter_dir=adapters)
        _OFFLINE = CourseResources(
            mode=config.MODE.value,
            region=region,
            account=account,
            job_role_arn=str(role.arn),
            bucket=bucket,
            train_s3_uri=uploaded[0].uri,
            validation_s3_uri=uploaded[1].uri,
            output_s3_uri=storage.output_uri(session, bucket=bucket),
            mlflow_app_arn=mlflow_arn,
            runtime_arn=runtime.arn,
            runtime=runtime,
            reasoning_effort=effort,
            adapter_dir=adapters,
            state_dir=Path(backend.state_dir),
        )
        return _OFFLINE


def close(resources: CourseResources) -> None:
    """Stop the local runtime (offline) and forget the cached resources; live, nothing to do."""
    global _OFFLINE
    with _LOCK:
        if resources.runtime is not None:
            resources.runtime.close()
        if _OFFLINE is resources:
            _OFFLINE = None


# ----------------------------------------------------------------------------------- MLflow app
def mlflow_app_name() -> str:
    """`mtrl-wordle-mlflow-<run id>`."""
    return naming.resource_name(MLFLOW_APP_KIND)


def find_mlflow_app(session: Any | None = None, name: str | None = None) -> str | None:
    """The ARN of the course's MLflow app (by name), or None. `MTRL_MLFLOW_APP_ARN` wins if set."""
    given = os.environ.get(MLFLOW_APP_ENV, "").strip()
    if given:
        return given
    wanted = name or mlflow_app_name()
    sagemaker = aws.session_or_new(session).client("sagemaker")
    token = None
    while True:
        page = sagemaker.list_mlflow_apps(**({"NextToken": token} if token else {}))
        for summary in page.get("Summaries", []):
            if summary.get("Name") == wanted and summary.get("Status") not in MLFLOW_FAILED_STATUSES:
                return summary["Arn"]
        token = page.get("NextToken")
        if not token:
            return None


def mlflow_role_policy(bucket: str) -> dict[str, Any]:
    """The MLflow app's role: read and write its artifact store in the course bucket, nothing else."""
    if not bucket or "/" in bucket:
        raise ValueError(f"bucket must be an S3 bucket name, got {bucket!r}")
    return {
        "Version": iam.POLICY_VERSION,
        "Statement": [
            {
                "Sid": "ArtifactObjects",
                "Effect": "Allow",
                "Action": ["s3:GetObject", "s3:PutObject", "s3:DeleteObject"],
                "Resource": f"arn:aws:s3:::{bucket}/*",
            },
            {
                "Sid": "ArtifactBucket",
                "Effect": "Allow",
                "Action": ["s3:ListBucket", "s3:GetBucketLocation"],
                "Resource": f"arn:aws:s3:::{bucket}",
            },
        ],
    }


def ensure_mlflow_role(
    bucket: str, name: str | None = None, *, session: Any | None = None, notebook: str = DEFAULT_NOTEBOOK
) -> iam.RoleReport:
    """Create (or reuse and repair) the MLflow app's own role; returns its report.

    Not the job role: CreateMlflowApp hands its role to SageMaker (the generic principal), which
    the caller policy's PassRole condition (job.sagemaker.amazonaws.com only) rightly refuses for
    the job role, and the app needs only its artifact store, not the job's data, models and
    runtime. Trust: sagemaker.amazonaws.com (sts:AssumeRole). Policy: `mlflow_role_policy(bucket)`.
    """
    session = aws.session_or_new(session)
    iam_client = session.client("iam")
    name = name or naming.resource_name(MLFLOW_ROLE_KIND)
    wanted_trust = iam.trust_policy(iam.MLFLOW_SERVICE, iam.RUNTIME_TRUST_ACTIONS)
    role = iam._read_role(iam_client, name)
    created = False
    notes: list[str] = []
    if role is None:
        iam_client.create_role(
            RoleName=name,
            AssumeRolePolicyDocument=json.dumps(wanted_trust),
            Description="MLflow app role for the multi-turn RL Wordle course",
            Tags=naming.course_tags(notebook),
        )
        created = True
    elif iam.trust_problems(iam._trust_document(role), iam.MLFLOW_SERVICE, iam.RUNTIME_TRUST_ACTIONS):
        iam_client.update_assume_role_policy(RoleName=name, PolicyDocument=json.dumps(wanted_trust))
        notes.append(f"trust policy replaced: it did not let {iam.MLFLOW_SERVICE} assume the role")
    iam_client.put_role_policy(
        RoleName=name, PolicyName=MLFLOW_ROLE_POLICY, PolicyDocument=json.dumps(mlflow_role_policy(bucket))
    )
    role = iam._read_role(iam_client, name) or {}
    return iam.RoleReport(
        "MLflow app role",
        name,
        role.get("Arn"),
        bool(role),
        (iam.MLFLOW_SERVICE,),
        iam.RUNTIME_TRUST_ACTIONS,
        (f"inline: {MLFLOW_ROLE_POLICY}",),
        created,
        tuple(iam.trust_problems(iam._trust_document(role), iam.MLFLOW_SERVICE, iam.RUNTIME_TRUST_ACTIONS))
        if role
        else (),
        tuple(notes),
    )


def ensure_mlflow_app(
    session: Any | None = None,
    *,
    bucket: str | None = None,
    role_arn: str | None = None,
    notebook: str = DEFAULT_NOTEBOOK,
    confirm_spend: bool = False,
) -> str:
    """The course's MLflow app: found, or created (and waited for until it is usable).

    An MLflow app bills for as long as it exists, so live it is only created with
    `confirm_spend=True` (notebook 08 deletes it). Its artifacts go under the course prefix of the
    bucket; it runs as its own role (`ensure_mlflow_role`: that bucket only), not the job role.
    """
    session = aws.session_or_new(session)
    found = find_mlflow_app(session)
    if found:
        return found
    if config.is_live() and not confirm_spend:
        raise PermissionError(
            f"no MLflow app named {mlflow_app_name()} exists. An MLflow app bills for as long as it exists "
            "(SageMaker AI pricing page); call ensure_mlflow_app(confirm_spend=True) to create it, set "
            f"{MLFLOW_APP_ENV} to use one you have, and delete it in notebook 08."
        )
    bucket = bucket or storage.bucket_name(session)
    role_created = False
    if role_arn is None:
        report = ensure_mlflow_role(bucket, session=session, notebook=notebook)
        role_arn, role_created = report.arn, report.created
    sagemaker = session.client("sagemaker")
    # A role created a moment ago may not be assumable by SageMaker yet (IAM is eventually
    # consistent): iam.call_with_new_role waits for it, bounded, saying so.
    arn = iam.call_with_new_role(
        lambda: sagemaker.create_mlflow_app(
            Name=mlflow_app_name(),
            ArtifactStoreUri=storage.s3_uri(bucket, f"{storage.course_prefix()}{MLFLOW_ARTIFACTS_DIR}/"),
            RoleArn=role_arn,
            Tags=naming.course_tags(notebook),
        )["Arn"],
        str(role_arn),
        service=iam.MLFLOW_SERVICE,
        what="CreateMlflowApp",
        just_created=role_created,
        session=session,
    )
    deadline = time.monotonic() + MLFLOW_CREATE_TIMEOUT_S
    while True:
        status = sagemaker.describe_mlflow_app(Arn=arn)["Status"]
        if status in MLFLOW_READY_STATUSES:
            return arn
        if status in MLFLOW_FAILED_STATUSES:
            hint = (
                "; its role was created just before it, and IAM may not have reached SageMaker yet: delete the app "
                "(aws sagemaker delete-mlflow-app --arn <the ARN>) and run this again in a few minutes"
                if role_created
                else ""
            )
            raise RuntimeError(
                f"MLflow app {naming.mask_account(arn)} ended in status {status}; see the SageMaker AI console{hint}"
            )
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"MLflow app {naming.mask_account(arn)} is still {status} after {MLFLOW_CREATE_TIMEOUT_S / 60:.0f} min"
            )
        time.sleep(MLFLOW_POLL_S)


# --------------------------------------------------------------------------------- reasoning effort
def deployed_reasoning_effort(resources: CourseResources, session: Any | None = None) -> str | None:
    """REASONING_EFFORT of the runtime: the local runtime's variable offline, GetAgentRuntime's live.

    None when the runtime does not say (no such variable, or the runtime is gone:
    ResourceNotFoundException). Any other refusal (say, no bedrock-agentcore:GetAgentRuntime on an
    instructor's runtime) is an ActionableError naming the call and what to do.
    """
    if resources.runtime is not None:
        return resources.runtime.env.get(REASONING_EFFORT_ENV)
    control = aws.session_or_new(session).client("bedrock-agentcore-control")
    runtime_id = resources.runtime_arn.rsplit("/", 1)[-1]
    try:
        variables = control.get_agent_runtime(agentRuntimeId=runtime_id).get("environmentVariables") or {}
    except Exception as error:
        code = errors.aws_error_code(error)
        if code == "ResourceNotFoundException":
            return None
        if not code:
            raise
        raise errors.ActionableError(
            f"could not read the runtime's {REASONING_EFFORT_ENV} ({naming.mask_account(errors.aws_refusal(error))}): "
            f"ask for bedrock-agentcore:GetAgentRuntime on {naming.mask_account(resources.runtime_arn)}, or read "
            f"the value under envVars in {deploy.PROJECT_FILE.relative_to(config.REPO_ROOT)} of the checkout that "
            "deployed it"
        ) from None
    return variables.get(REASONING_EFFORT_ENV)


def running_jobs(session: Any | None = None, category: str | None = None) -> list[str]:
    """Names of the jobs (training and evaluation, or one `category`) that are InProgress or Stopping.

    Live: every such job in the account and Region. Offline: the jobs this process runs (a job
    running in another kernel uses that kernel's own local runtime and CPU, not this one's).
    """
    if not config.is_live():
        from mtrl_course import local

        aws.session()
        return local.running_jobs(category)
    sagemaker = aws.session_or_new(session).client("sagemaker")
    names = []
    for kind in (category,) if category else JOB_CATEGORIES:
        for status in ACTIVE_JOB_STATUSES:
            for page in _paginate(sagemaker.list_jobs, JobCategory=kind, StatusEquals=status):
                names += [s["JobName"] for s in page.get("JobSummaries", [])]
    return sorted(names)


def _paginate(call: Any, **params: Any) -> Any:
    token = None
    while True:
        page = call(**params, **({"NextToken": token} if token else {}))
        yield page
        token = page.get("NextToken")
        if not token:
            return


def set_reasoning_effort(resources: CourseResources, effort: str, session: Any | None = None) -> CourseResources:
    """Run the agent at `effort` from now on: a redeploy of the runtime with REASONING_EFFORT changed.

    Refused while any job runs (a redeploy restarts the runtime, and the service fails a job
    whose rollouts are cut off). Offline the local runtime restarts with the new variable (well
    under a second). Live this cannot redeploy for you: unless the deployed runtime already
    runs at `effort`, it raises, saying what to edit and run.
    """
    _check_effort(effort)
    current = deployed_reasoning_effort(resources, session)
    if current == effort:
        resources.reasoning_effort = effort
        return resources
    if resources.runtime is None:
        raise RuntimeError(
            f"the deployed runtime runs with {REASONING_EFFORT_ENV}={current}, not {effort}. To change it: set "
            f"the value of {REASONING_EFFORT_ENV} under envVars in {deploy.PROJECT_FILE.relative_to(config.REPO_ROOT)}, "
            "run `agentcore deploy` (never while a job runs), wait for the runtime to be READY, then evaluate again."
        )
    busy = running_jobs(session)
    if busy:
        raise RuntimeError(
            f"cannot change {REASONING_EFFORT_ENV} now: redeploying the runtime would fail the running job(s) "
            f"{', '.join(busy)}. Wait for them to finish."
        )
    resources.runtime.restart(env={REASONING_EFFORT_ENV: effort})
    resources.reasoning_effort = effort
    return resources


# ---------------------------------------------------------------------------------------- live
# S3's answers when the bucket exists but this identity may not use it (HeadBucket has no body,
# so botocore reports the status code) or may not list it.
S3_DENIED_CODES = ("403", "Forbidden", "AccessDenied")


def _own_role(session: Any, attachment: Any) -> tuple[str, str | None]:
    """(ARN of the learner's own job role or "", why it could not be read, or None).

    GetRole refused (no iam:GetRole, common for a lab learner) is not fatal in a lab: the caller
    falls back to the role the attached run's job ran as.
    """
    name = naming.resource_name(iam.JOB_ROLE_KIND)
    try:
        return session.client("iam").get_role(RoleName=name)["Role"]["Arn"], None
    except Exception as error:
        code = errors.aws_error_code(error)
        if code in iam.NOT_FOUND_CODES:
            return "", None
        if not code:
            raise
        return "", (
            f"could not read your training job role {name} ({errors.aws_refusal(error)}): ask for iam:GetRole on "
            f"it, or set {JOB_ROLE_ENV} to its ARN"
        )


def _own_datasets(session: Any, bucket: str) -> tuple[str, str] | None:
    """The learner's own dataset URIs in `bucket`, or None when the bucket or a file is missing or
    not readable (HeadBucket 403, ListObjectsV2 denied)."""
    try:
        if not storage.bucket_exists(bucket, session):
            return None
        uris = storage.dataset_uris(session, bucket=bucket)
        for uri in (uris["training"], uris["validation"]):
            if not storage.prefix_exists(*storage.parse_s3_uri(uri), session):
                return None
    except Exception as error:
        if errors.aws_error_code(error) in S3_DENIED_CODES:
            return None
        raise
    return uris["training"], uris["validation"]


def _bucket_denied(session: Any, bucket: str) -> tuple[bool, str | None]:
    """(whether the bucket exists, why this identity may not read it, or None)."""
    try:
        return storage.bucket_exists(bucket, session), None
    except Exception as error:
        if errors.aws_error_code(error) not in S3_DENIED_CODES:
            raise
        return True, (
            f"the S3 bucket {naming.mask_account(bucket)} exists but this identity may not read it "
            f"({errors.aws_refusal(error)}: s3:ListBucket is denied, or another account owns it); set "
            f"{storage.BUCKET_ENV_VAR} to a bucket you can use, or ask for s3:ListBucket on it"
        )


def _runtime_arn(session: Any, attachment: Any) -> tuple[str, str | None]:
    """(the course runtime's ARN or "", why ListAgentRuntimes could not tell, or None)."""
    from mtrl_course import smoke

    try:
        return smoke.find_runtime_arn(session), None
    except LookupError:
        return (attachment.runtime_arn if attachment is not None else ""), None
    except Exception as error:
        if not errors.aws_error_code(error):
            raise
        if attachment is not None:
            return attachment.runtime_arn, None
        return "", (
            f"could not list the AgentCore runtimes ({errors.aws_refusal(error)}): ask for "
            f"bedrock-agentcore:ListAgentRuntimes, or set {RUNTIME_ENV} to the runtime's ARN"
        )


def _discover_live(session: Any | None) -> CourseResources:
    session = aws.session_or_new(session)
    region = session.region_name
    account = session.client("sts").get_caller_identity()["Account"]
    missing: list[str] = []
    # A lab: what the learner's own run lacks comes from the instructor's run (instructor_run.attach).
    attachment = instructor_run.attached()
    if attachment is not None and attachment.region != region:
        attachment = None

    refused: list[str] = []  # what could not be read: one line each, with what to do
    role_arn = os.environ.get(JOB_ROLE_ENV, "").strip()
    if not role_arn:
        role_arn, problem = _own_role(session, attachment)
        if not role_arn and attachment is not None:
            role_arn = attachment.job_role_arn
        elif problem:
            refused.append(problem)
        elif not role_arn:
            missing.append(
                f"the training job role {naming.resource_name(iam.JOB_ROLE_KIND)} (notebook 01 creates it; or set "
                f"{JOB_ROLE_ENV})"
            )

    # MTRL_BUCKET (the lab's older way, or the learner's own bucket) names where the learner's
    # own datasets would be; in a lab they usually are not there, and the attached run's are used.
    bucket = storage.bucket_name(session)
    bucket_given = bool(os.environ.get(storage.BUCKET_ENV_VAR, "").strip())
    train_uri = validation_uri = ""
    output_uri = ""
    own = _own_datasets(session, bucket)
    if own is not None:
        train_uri, validation_uri = own
    elif attachment is not None:
        train_uri, validation_uri = attachment.train_s3_uri, attachment.validation_s3_uri
        if not bucket_given:
            bucket, output_uri = attachment.bucket, attachment.output_s3_uri
    else:
        exists, problem = _bucket_denied(session, bucket)
        if problem:
            refused.append(problem)
        elif not exists:
            missing.append(
                f"the S3 bucket {naming.mask_account(bucket)} with the datasets (notebook 04 creates it; or set "
                f"{storage.BUCKET_ENV_VAR})"
            )
        else:
            uris = storage.dataset_uris(session, bucket=bucket)
            train_uri, validation_uri = uris["training"], uris["validation"]
            for uri in (train_uri, validation_uri):
                key_bucket, key = storage.parse_s3_uri(uri)
                if not storage.prefix_exists(key_bucket, key, session):
                    missing.append(f"the dataset file {naming.mask_account(uri)} (notebook 04 uploads it)")

    runtime_arn = os.environ.get(RUNTIME_ENV, "").strip()
    if not runtime_arn:
        runtime_arn, problem = _runtime_arn(session, attachment)
        if problem:
            refused.append(problem)
        elif not runtime_arn:
            missing.append(
                f"the AgentCore runtime {deploy.deployed_runtime_name()} (notebook 02 deploys it; or set {RUNTIME_ENV})"
            )

    try:
        mlflow_arn = find_mlflow_app(session) or ""
    except Exception as error:
        if not errors.aws_error_code(error):
            raise
        mlflow_arn = ""
        if attachment is None:
            refused.append(
                f"could not list the MLflow apps ({errors.aws_refusal(error)}): ask for sagemaker:ListMlflowApps, "
                f"or set {MLFLOW_APP_ENV} to the app's ARN"
            )
    mlflow_arn = mlflow_arn or (attachment.mlflow_app_arn if attachment is not None else "")
    if not mlflow_arn and not refused:
        missing.append(
            f"the MLflow app {mlflow_app_name()} (notebook 05 creates it with resources.ensure_mlflow_app(confirm_spend=True); "
            f"or set {MLFLOW_APP_ENV})"
        )
    if refused:
        raise errors.ActionableError(
            f"live mode ({naming.mask_account(account)}, {region}): "
            + "; ".join(naming.mask_account(line) for line in refused)
        )
    if missing:
        raise LookupError(
            f"live mode ({naming.mask_account(account)}, {region}): these course resources are missing:\n  - "
            + "\n  - ".join(missing)
            + "\nIn a lab, `mtrl lab attach <your instructor's run id>` (or instructor_run.attach(...)) fills them in from the instructor's run."
        )
    resources = CourseResources(
        mode=config.MODE.value,
        region=region,
        account=account,
        job_role_arn=role_arn,
        bucket=bucket,
        train_s3_uri=train_uri,
        validation_s3_uri=validation_uri,
        output_s3_uri=output_uri or storage.output_uri(session, bucket=bucket),
        mlflow_app_arn=mlflow_arn,
        runtime_arn=runtime_arn,
        runtime=None,
    )
    try:
        resources.reasoning_effort = deployed_reasoning_effort(resources, session)
    except Exception:  # reading the runtime's variables needs GetAgentRuntime; not worth failing for
        resources.reasoning_effort = None
    return resources
