"""Offline SageMaker Pipelines and lineage: what `MultiTurnRLEvaluator` runs its Job steps through.

Start/Describe/List/StopPipelineExecution(s) and ListPipelineExecutionSteps run the evaluator's Job
steps through the local MTRL service; Create/Describe/ListArtifacts keep the lineage it records.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mtrl_course.errors import ServiceError
from mtrl_course.local.apicall import JSON, ApiCall
from mtrl_course.local.apicall import now as _now
from mtrl_course.local.iam_simulator import decision, trusts

if TYPE_CHECKING:
    from mtrl_course.local.service import LocalMTRLService

logger = logging.getLogger(__name__)

# ----------------------------------------------------------------------------------------------
# SageMaker Pipelines: run the evaluator's Job steps through the local service

PIPELINE_FAILURE = "Step failure: One or multiple steps failed."
PIPELINES_SERVICE = "sagemaker.amazonaws.com"
JOB_SERVICE = "job.sagemaker.amazonaws.com"
STEP_POLL_S = 0.05


@dataclass
class _Step:
    name: str
    kind: str
    arguments: JSON
    depends_on: list[str]
    status: str = "Starting"
    start: dt.datetime | None = None
    end: dt.datetime | None = None
    failure: str | None = None
    job_arn: str | None = None
    job_name: str | None = None


@dataclass
class _Execution:
    arn: str
    steps: list[_Step]
    status: str = "Executing"
    failure: str | None = None
    modified: dt.datetime = field(default_factory=_now)
    stop: threading.Event = field(default_factory=threading.Event)
    role_arn: str = ""


class LocalPipelines:
    """Executes pipelines that contain `Type: Job` steps, which moto records but never runs.

    MultiTurnRLEvaluator renders a pipeline (Lineage -> Job(AgentRFTEvaluation) -> Lineage) and
    starts it; moto marks every execution Succeeded at once. For executions with Job steps this
    runs the steps in DependsOn order: Lineage steps succeed without doing anything, Job steps
    become CreateJob calls on the local service and finish with their job. Other executions are
    left to moto.
    """

    def __init__(self, service: LocalMTRLService, client: Callable[[str, str], Any]):
        self.service = service
        self._client = client
        self._executions: dict[str, _Execution] = {}
        self._lock = threading.RLock()

    def start(self, call: ApiCall) -> JSON:
        response = call.original()
        arn = response["PipelineExecutionArn"]
        sagemaker = self._client("sagemaker", call.region)
        definition = json.loads(
            sagemaker.describe_pipeline(PipelineName=call.params["PipelineName"])["PipelineDefinition"]
        )
        raw_steps = definition.get("Steps") or []
        if not any(s.get("Type") == "Job" for s in raw_steps):
            return response
        steps = [
            _Step(s["Name"], s.get("Type", ""), s.get("Arguments") or {}, list(s.get("DependsOn") or []))
            for s in raw_steps
        ]
        execution = _Execution(arn, steps)
        execution.role_arn = sagemaker.describe_pipeline(PipelineName=call.params["PipelineName"]).get("RoleArn", "")
        with self._lock:
            self._executions[arn] = execution
        threading.Thread(
            target=self._run, args=(execution, call.region), name=f"pipeline-{arn.rsplit('/', 1)[-1]}", daemon=True
        ).start()
        return response

    def _run(self, execution: _Execution, region: str) -> None:
        execution_id = execution.arn.rsplit("/", 1)[-1]
        done: set[str] = set()
        pending = list(execution.steps)
        while pending:
            ready = [s for s in pending if all(d in done for d in s.depends_on)]
            if not ready or execution.stop.is_set():
                break
            step = ready[0]
            pending.remove(step)
            step.start, step.status = _now(), "Executing"
            self._touch(execution)
            ok = self._run_step(step, execution, execution_id, region)
            step.end = _now()
            self._touch(execution)
            if not ok:
                break
            done.add(step.name)
        with self._lock:
            if execution.stop.is_set():
                execution.status = "Stopped"
            elif any(s.status == "Failed" for s in execution.steps):
                execution.status, execution.failure = "Failed", PIPELINE_FAILURE
            else:
                execution.status = "Succeeded"
            execution.modified = _now()

    def _unused_job_name(self, base: str, category: str) -> str:
        """`base`, or `base-2`, `base-3`... when an earlier kernel's persisted job holds the name.

        moto draws execution ids from Python's global `random`, which the notebooks seed, so two
        kernels can get the same id; job records outlive their kernel, so the name must not clash.
        """
        candidate, counter = base[:63].rstrip("-"), 1
        while True:
            try:
                self.service.get_job(candidate, category)
            except Exception:
                return candidate
            counter += 1
            suffix = f"-{counter}"
            candidate = base[: 63 - len(suffix)].rstrip("-") + suffix

    def _denied(self, execution: _Execution, step: _Step, region: str) -> str | None:
        """Why the pipeline's role may not run `step` (None when it may), decided like IAM.

        Pipelines assumes the pipeline's role (trust: sagemaker.amazonaws.com) and makes every
        step's calls as that role: a Lineage step records actions, contexts and associations; a
        Job step calls CreateJob and passes its RoleArn to the job service. Guess: the failure
        wording follows AWS's AccessDenied messages; the lineage actions are inferred from the
        step's arguments (docs/LIVE_CHECKLIST.md).
        """
        iam = self._client("iam", region)
        role = execution.role_arn
        if not trusts(iam, role, PIPELINES_SERVICE):
            return f"AccessDenied: SageMaker Pipelines could not assume the role {role}: its trust policy does not allow {PIPELINES_SERVICE}"
        account = self.service.account
        needs: list[tuple[str, str, dict[str, list[str]]]] = []
        if step.kind == "Lineage":
            lineage = f"arn:aws:sagemaker:{region}:{account}:"
            args = step.arguments
            needs += (
                [("sagemaker:CreateAction", lineage + "action/" + step.name.lower(), {})] if args.get("Actions") else []
            )
            needs += (
                [("sagemaker:CreateContext", lineage + "context/" + step.name.lower(), {})]
                if args.get("Contexts")
                else []
            )
            needs += (
                [("sagemaker:CreateArtifact", lineage + "artifact/" + step.name.lower(), {})]
                if args.get("Artifacts")
                else []
            )
            needs += [("sagemaker:AddAssociation", "*", {})] if args.get("Associations") else []
        elif step.kind == "Job":
            category = step.arguments.get("JobCategory", "")
            needs.append(
                ("sagemaker:CreateJob", f"arn:aws:sagemaker:{region}:{account}:job/{category}/{step.name.lower()}", {})
            )
            passed = step.arguments.get("RoleArn", "")
            needs.append(("iam:PassRole", passed, {"iam:PassedToService": [JOB_SERVICE]}))
        for action, resource, context in needs:
            if decision(iam, role, action, resource, context) != "allowed":
                return (
                    f"AccessDeniedException: User: {role} is not authorized to perform: {action} on resource: {resource} "
                    f"because no identity-based policy allows the {action} action"
                )
        return None

    def _run_step(self, step: _Step, execution: _Execution, execution_id: str, region: str) -> bool:
        denied = self._denied(execution, step, region)
        if denied:
            step.status, step.failure = "Failed", denied
            return False
        if step.kind == "Lineage":
            step.status = "Succeeded"
            return True
        if step.kind != "Job":
            step.status, step.failure = (
                "Failed",
                f"Step type {step.kind} is not supported by the offline pipeline runner.",
            )
            return False
        args = step.arguments
        # Guess: Pipelines' own naming of Job-step jobs is not documented; this mirrors the
        # `pipelines-<execution id>-<step>` names it gives training jobs.
        name = self._unused_job_name(f"pipelines-{execution_id}-{step.name}", args.get("JobCategory", ""))
        document = args.get("JobConfigDocument")
        try:
            created = self.service.create_job(
                {
                    "JobName": name,
                    "RoleArn": args.get("RoleArn", ""),
                    "JobCategory": args.get("JobCategory", ""),
                    "JobConfigSchemaVersion": args.get("JobConfigSchemaVersion", ""),
                    "JobConfigDocument": document if isinstance(document, str) else json.dumps(document),
                    "Tags": args.get("Tags") or [],
                },
                region,
            )
        except ServiceError as err:
            step.status, step.failure = "Failed", f"{err.code}: {err.message}"
            return False
        step.job_arn, step.job_name = created["JobArn"], name
        job = self.service.get_job(name, args["JobCategory"])
        while not job.wait(STEP_POLL_S):
            if execution.stop.is_set() and job.status == "InProgress":
                step.status = "Stopping"
                self.service.stop_job({"JobName": name, "JobCategory": job.category})
        step.status = {"Completed": "Succeeded", "Stopped": "Stopped"}.get(job.status, "Failed")
        step.failure = job.failure_reason
        return step.status == "Succeeded"

    def _touch(self, execution: _Execution) -> None:
        with self._lock:
            execution.modified = _now()

    def _get(self, arn: str) -> _Execution | None:
        with self._lock:
            return self._executions.get(arn)

    def describe(self, call: ApiCall) -> JSON:
        response = call.original()
        execution = self._get(call.params["PipelineExecutionArn"])
        if execution is not None:
            response["PipelineExecutionStatus"] = execution.status
            response["LastModifiedTime"] = execution.modified
            response.pop("FailureReason", None)
            if execution.failure:
                response["FailureReason"] = execution.failure
        return response

    def list_executions(self, call: ApiCall) -> JSON:
        response = call.original()
        for summary in response.get("PipelineExecutionSummaries", []):
            execution = self._get(summary["PipelineExecutionArn"])
            if execution is not None:
                summary["PipelineExecutionStatus"] = execution.status
                if execution.failure:
                    summary["PipelineExecutionFailureReason"] = execution.failure
        return response

    def list_steps(self, call: ApiCall) -> JSON:
        execution = self._get(call.params["PipelineExecutionArn"])
        if execution is None:
            # moto has no steps for the executions it "ran"; answer with none rather than fail.
            self._require_moto_execution(call.params["PipelineExecutionArn"], call.region)
            return {"PipelineExecutionSteps": []}
        steps = []
        for step in execution.steps:
            if step.start is None:
                continue
            entry: JSON = {"StepName": step.name, "StartTime": step.start, "StepStatus": step.status, "AttemptCount": 1}
            if step.end:
                entry["EndTime"] = step.end
            if step.failure:
                entry["FailureReason"] = step.failure
            if step.job_arn:
                entry["Metadata"] = {"Job": {"Arn": step.job_arn}}
            steps.append(entry)
        steps.sort(key=lambda s: s["StartTime"], reverse=call.params.get("SortOrder", "Descending") == "Descending")
        return {"PipelineExecutionSteps": steps}

    def stop(self, call: ApiCall) -> JSON:
        arn = call.params["PipelineExecutionArn"]
        execution = self._get(arn)
        if execution is None:
            self._require_moto_execution(arn, call.region)
            raise ServiceError("ConflictException", f"Pipeline execution {arn} is not running and cannot be stopped.")
        with self._lock:
            if execution.status != "Executing":
                raise ServiceError(
                    "ConflictException", f"Pipeline execution {arn} is {execution.status} and cannot be stopped."
                )
            execution.status = "Stopping"
            execution.stop.set()
        return {"PipelineExecutionArn": arn}

    def _require_moto_execution(self, arn: str, region: str) -> None:
        try:
            self._client("sagemaker", region).describe_pipeline_execution(PipelineExecutionArn=arn)
        except Exception:
            raise ServiceError("ResourceNotFound", f"Pipeline execution {arn} does not exist.") from None

    def reset(self) -> None:
        with self._lock:
            for execution in self._executions.values():
                execution.stop.set()
            self._executions.clear()


# ----------------------------------------------------------------------------------------------
# Lineage artifacts (the evaluator records the evaluated model as one; moto has none)


class LocalLineage:
    """CreateArtifact / DescribeArtifact / ListArtifacts, kept in memory."""

    def __init__(self, account: str):
        self.account = account
        self._artifacts: dict[str, JSON] = {}
        self._lock = threading.Lock()

    def create(self, call: ApiCall) -> JSON:
        now = _now()
        arn = f"arn:aws:sagemaker:{call.region}:{self.account}:artifact/{uuid.uuid4().hex}"
        record = {key: value for key, value in call.params.items() if key != "Tags"}
        record.update(ArtifactArn=arn, CreationTime=now, LastModifiedTime=now)
        with self._lock:
            self._artifacts[arn] = record
        return {"ArtifactArn": arn}

    def describe(self, call: ApiCall) -> JSON:
        with self._lock:
            record = self._artifacts.get(call.params["ArtifactArn"])
        if record is None:
            raise ServiceError("ResourceNotFound", f"Artifact {call.params['ArtifactArn']} does not exist.")
        return dict(record)

    def list(self, call: ApiCall) -> JSON:
        params = call.params
        with self._lock:
            records = list(self._artifacts.values())
        if params.get("SourceUri"):
            records = [r for r in records if (r.get("Source") or {}).get("SourceUri") == params["SourceUri"]]
        if params.get("ArtifactType"):
            records = [r for r in records if r.get("ArtifactType") == params["ArtifactType"]]
        keys = ("ArtifactArn", "ArtifactName", "Source", "ArtifactType", "CreationTime", "LastModifiedTime")
        return {"ArtifactSummaries": [{k: r[k] for k in keys if k in r} for r in records]}

    def reset(self) -> None:
        with self._lock:
            self._artifacts.clear()


# ----------------------------------------------------------------------------------------------
