"""The lab path: attach to an instructor's run and read it, without creating or spending anything.

In a lab, the instructor runs notebooks 01 to 05 (and usually 07) once; learners share that run's
job role, runtime, MLflow app, bucket and datasets. One call finds all of them from the run id
(or the training job's name) and remembers them for later notebooks and kernels:

    attached = instructor_run.attach("a1b2c3")            # or a job name; `mtrl lab attach a1b2c3`
    monitoring.metrics_frame(attached.job_name)           # notebook 06, read-only
    instructor_run.evaluation_results(attached)           # notebook 07: the instructor's results

Everything comes from the service's own records, not from names: DescribeJob of the training job
holds the role it ran as, the runtime ARN, the MLflow app, the dataset URIs and the output path;
the run's evaluation jobs (tagged with its run id) hold their settings and MLflow runs. The
attachment is written to `.state/lab.json` and read back by `resources.prepare()` (live: it fills
in what the learner's own run does not have) and `training.latest_job()`, so notebooks 06 and 07
work in a fresh kernel. Nothing is created, so clean-up (scoped to the learner's own run id) never
touches what it points at.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from mtrl_course import aws, config, naming, service_spec

LAB_FILE_NAME = "lab.json"
TRAINING_KIND = "train"  # training.JOB_KIND (not imported: training reads the attachment)
EVALUATION_KIND = "eval"  # evaluation.JOB_KIND
EFFORT_TAG = "reasoning_effort"  # evaluation.EFFORT_TAG: names by the evaluator's pipeline do not say
LIST_PAGE = 100
# What a run id looks like (naming.RUN_ID_PATTERN); anything else is taken for a job name.
RUN_ID = naming.RUN_ID_PATTERN


class NotFound(LookupError):
    """Nothing in this account and Region matches the run id or job name given."""


@dataclass(frozen=True)
class Attachment:
    """Every resource of an instructor's run that notebooks 06 and 07 need."""

    run_id: str
    job_name: str
    job_status: str
    region: str
    job_role_arn: str
    runtime_arn: str
    mlflow_app_arn: str
    bucket: str
    train_s3_uri: str
    validation_s3_uri: str
    output_s3_uri: str
    evaluation_jobs: tuple[str, ...] = field(default_factory=tuple)

    def rows(self) -> list[dict[str, str]]:
        """item -> value rows for a table, account IDs masked."""
        return [
            {"item": key, "value": naming.mask_account(", ".join(value) if isinstance(value, tuple) else str(value))}
            for key, value in asdict(self).items()
        ]


def lab_file() -> Path:
    """Where the attachment is kept (`.state/lab.json`, or under MTRL_STATE_DIR)."""
    return config.STATE_DIR / LAB_FILE_NAME


def _tags(describe: Mapping[str, Any]) -> dict[str, str]:
    return {t.get("Key", ""): t.get("Value", "") for t in describe.get("Tags") or []}


def _run_of(describe: Mapping[str, Any]) -> str:
    tagged = _tags(describe).get(naming.TAG_RUN_ID)
    if tagged:
        return tagged
    match = re.match(
        rf"^{re.escape(naming.NAME_PREFIX)}-{TRAINING_KIND}-([a-z0-9]{{1,12}})-", describe.get("JobName", "")
    )
    return match.group(1) if match else ""


def _jobs(sagemaker: Any, category: str, name_contains: str | None = None) -> list[dict[str, Any]]:
    params: dict[str, Any] = {
        "JobCategory": category,
        "SortBy": "CreationTime",
        "SortOrder": "Descending",
        "MaxResults": LIST_PAGE,
    }
    if name_contains:
        params["NameContains"] = name_contains
    summaries: list[dict[str, Any]] = []
    while True:
        page = sagemaker.list_jobs(**params)
        summaries += page.get("JobSummaries", [])
        if not page.get("NextToken"):
            return summaries
        params["NextToken"] = page["NextToken"]


def _training_job(sagemaker: Any, run_or_job: str) -> dict[str, Any]:
    try:
        return sagemaker.describe_job(JobName=run_or_job, JobCategory=service_spec.TRAINING)
    except Exception as error:
        code = str((getattr(error, "response", None) or {}).get("Error", {}).get("Code", ""))
        if code not in ("ResourceNotFound", "ResourceNotFoundException", "ValidationException"):
            raise
    if not RUN_ID.match(run_or_job):
        raise NotFound(
            f"no training job named {run_or_job!r} here, and it is not a run id (1 to 12 lowercase letters or digits)"
        )
    candidates = _jobs(sagemaker, service_spec.TRAINING, f"{naming.NAME_PREFIX}-{TRAINING_KIND}-{run_or_job}-")
    # Prefer a finished job: it has metrics to the end and an output model package.
    candidates.sort(key=lambda s: (s.get("JobStatus") != "Completed", -s["CreationTime"].timestamp()))
    if not candidates:
        raise NotFound(
            f"no training job of run {run_or_job!r} in this account and Region (names {naming.NAME_PREFIX}-"
            f"{TRAINING_KIND}-{run_or_job}-...); ask your instructor for the run id or the job name"
        )
    return sagemaker.describe_job(JobName=candidates[0]["JobName"], JobCategory=service_spec.TRAINING)


def _evaluation_jobs(sagemaker: Any, run: str) -> tuple[str, ...]:
    """The run's evaluation jobs, oldest first: named after the run, or tagged with its run id
    (the ones MultiTurnRLEvaluator's pipeline created carry the tags the course gave it)."""
    found = []
    for summary in _jobs(sagemaker, service_spec.EVALUATION):
        name = summary["JobName"]
        if name.startswith(f"{naming.NAME_PREFIX}-{EVALUATION_KIND}-{run}-"):
            found.append(summary)
            continue
        describe = sagemaker.describe_job(JobName=name, JobCategory=service_spec.EVALUATION)
        if _tags(describe).get(naming.TAG_RUN_ID) == run:
            found.append(summary)
    found.sort(key=lambda s: s["CreationTime"])
    return tuple(s["JobName"] for s in found)


def attach(run_or_job: str, session: Any | None = None, *, save: bool = True) -> Attachment:
    """Find an instructor's run by run id or training job name; remember it (see the module doc).

    Raises NotFound (a LookupError) naming what was looked for. Read-only: only Describe and
    List calls are made.
    """
    if not isinstance(run_or_job, str) or not run_or_job.strip():
        raise ValueError("give the instructor's run id (e.g. a1b2c3) or the training job's name")
    run_or_job = run_or_job.strip()
    session = aws.session_or_new(session)
    sagemaker = session.client("sagemaker")
    describe = _training_job(sagemaker, run_or_job)
    document = json.loads(describe.get("JobConfigDocument") or "{}")
    channels = {
        c.get("ChannelName"): ((c.get("DataSource") or {}).get("S3DataSource") or {}).get("S3Uri", "")
        for c in document.get("InputDataConfig") or []
    }
    train_uri = channels.get("train", "")
    run = _run_of(describe) or run_or_job
    attachment = Attachment(
        run_id=run,
        job_name=describe["JobName"],
        job_status=str(describe.get("JobStatus", "")),
        region=session.region_name or config.OFFLINE_REGION,
        job_role_arn=describe.get("RoleArn", ""),
        runtime_arn=((document.get("AgentConfig") or {}).get("BedrockAgentCoreConfig") or {}).get(
            "AgentRuntimeArn", ""
        ),
        mlflow_app_arn=(
            (
                (document.get("TrainingConfig") or {}).get("MlflowConfig")
                or (document.get("OutputDataConfig") or {}).get("MlflowConfig")
                or {}
            ).get("MlflowResourceArn", "")
        ),
        bucket=train_uri[len("s3://") :].split("/", 1)[0] if train_uri.startswith("s3://") else "",
        train_s3_uri=train_uri,
        validation_s3_uri=channels.get("validation", ""),
        output_s3_uri=(document.get("OutputDataConfig") or {}).get("S3OutputPath", ""),
        evaluation_jobs=_evaluation_jobs(sagemaker, run),
    )
    missing = [
        name
        for name in ("job_role_arn", "runtime_arn", "mlflow_app_arn", "train_s3_uri")
        if not getattr(attachment, name)
    ]
    if missing:
        raise NotFound(f"training job {attachment.job_name} does not name its {', '.join(missing)} (DescribeJob)")
    if save:
        path = lab_file()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(asdict(attachment), indent=2) + "\n", encoding="utf-8")
    return attachment


def attached() -> Attachment | None:
    """The attachment saved by `attach` (in this or an earlier process), or None."""
    path = lab_file()
    if not path.is_file():
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    data["evaluation_jobs"] = tuple(data.get("evaluation_jobs") or ())
    return Attachment(**data)


def detach() -> bool:
    """Forget the attachment; True if there was one."""
    path = lab_file()
    if path.is_file():
        path.unlink()
        return True
    return False


# --- notebook 07 without spending: the instructor's evaluation results, from MLflow -------------------

_EVAL_NAME = re.compile(
    rf"^{re.escape(naming.NAME_PREFIX)}-{EVALUATION_KIND}-[a-z0-9]+-(?P<label>base|trained)-(?P<effort>low|medium|high)-t(?P<t>\d\d)-"
)


def evaluation_results(attachment: Attachment | None = None, session: Any | None = None) -> Any:
    """A DataFrame of the run's finished evaluation jobs as their MLflow runs logged them.

    Columns: model (base/trained), effort (from the job's name, else its reasoning_effort tag; "-"
    when neither says),
    temperature (what the job was sent, else the recipe default), pass_at_1, mean_reward,
    job_name. Reads DescribeJob and the MLflow app only; jobs not Completed are left out.
    """
    import pandas as pd

    from mtrl_course import mlflow_client

    attachment = attachment or attached()
    if attachment is None:
        raise LookupError(
            "not attached to a run: call instructor_run.attach(run_id) (or `mtrl lab attach RUN_ID`) first"
        )
    sagemaker = aws.session_or_new(session).client("sagemaker")
    default_temperature = service_spec.EVALUATION_SPEC["temperature"]["default"]
    rows = []
    for name in attachment.evaluation_jobs:
        describe = sagemaker.describe_job(JobName=name, JobCategory=service_spec.EVALUATION)
        if describe.get("JobStatus") != "Completed":
            continue
        document = json.loads(describe.get("JobConfigDocument") or "{}")
        mlflow_config = (document.get("OutputDataConfig") or {}).get("MlflowConfig") or {}
        run_id = ((document.get("ServiceOutput") or {}).get("MlflowDetails") or {}).get("RunId")
        arn = mlflow_config.get("MlflowResourceArn") or attachment.mlflow_app_arn
        if not run_id:
            continue
        metrics = mlflow_client.client(arn).get_run(run_id).data.metrics
        sent = (document.get("EvaluationConfig") or {}).get("HyperParameters") or {}
        match = _EVAL_NAME.match(name)
        temperature = sent.get("temperature", sent.get("sampling_temperature"))
        rows.append(
            {
                "model": match["label"] if match else ("trained" if document.get("ModelPackageConfig") else "base"),
                "effort": match["effort"] if match else _tags(describe).get(EFFORT_TAG, "-"),
                "temperature": float(temperature) if temperature is not None else float(default_temperature),
                "pass_at_1": metrics.get("eval/reward/pass_at_1"),
                "mean_reward": metrics.get("eval/reward/mean"),
                "job_name": name,
            }
        )
    return pd.DataFrame(rows, columns=["model", "effort", "temperature", "pass_at_1", "mean_reward", "job_name"])


def command(run_or_job: str) -> int:
    """`mtrl lab attach RUN_ID_OR_JOB_NAME`: attach, print what was found, exit 0 (LookupError if not found)."""
    try:
        attachment = attach(run_or_job)
    except LookupError as error:
        # Raised on for `mtrl`, which says it in one line on stderr (exit 1).
        raise LookupError(f"not attached: {error}") from error
    width = max(len(row["item"]) for row in attachment.rows())
    for row in attachment.rows():
        print(f"{row['item']:<{width}}  {row['value']}")
    print(f"saved to {lab_file()}: notebooks 06 and 07 (and resources.prepare()) now use this run")
    return 0
