"""Step 8: find what *this run* created, say what still bills, and delete it on request.

Discovery reads the account, never notebook state, and is scoped to this run (`naming.run_id()`),
because a lab account holds an instructor's run and every learner's:

- a resource is this run's when it carries the `run_id` tag of this run, or its name ends in
  this run's id (`mtrl-wordle-<kind>-<run id>`), or its S3 key is under `mtrl-wordle/<run id>/`;
- the AgentCore runtime and its CloudFormation stack are this run's when this checkout deployed
  them (the CLI's `agentcore/.cli/deployed-state.json`), or offline when it runs in this process;
- the trainer's get-or-create model package groups (`<model>-mtrl-mpg`, one pair per base model
  for everyone in the account who trains it, course or not) are this run's only when the course
  recorded this run's trainer creating them (`run_scope.record_created`), and even then are left
  while other course runs are in the account (their packages go into the same group);
- MultiTurnRLEvaluator's one pipeline (`SagemakerEvaluation-MTRLEvaluation`) is never deleted,
  nor are its executions stopped: every evaluator user in the account shares it. This run's
  evaluation jobs are stopped as jobs;
- what only the course names the same for every run (the course bucket
  `mtrl-wordle-<account>-<region>` as a whole, the offline stand-in policies) is this run's only
  when no other course run is seen in the account; otherwise it is left alone.

`not_touched()` lists what discovery saw and will not delete, and why: other runs' resources,
shared resources while other runs exist, the CDK bootstrap stack (`CDKToolkit`, shared by every
CDK app in the account and Region) and the CloudWatch log groups the runtime and the jobs write.

    found = discover()                  # a table: kind, name, still bills?, how it is deleted
    not_touched()                       # what it leaves, and why
    delete(found, confirm=True)         # deletes exactly the rows given, in a safe order
    verify_empty()                      # discovers again: what is left (nothing, after a delete)

Nothing is deleted unless `confirm` is exactly True (the notebook's variable, the CLI's --yes).
The order is safe: running jobs stop first, then what bills (runtime, MLflow app, S3), then what
only clutters (model packages, roles, policies), so nothing is left without the role it runs as.

Regional resources are looked up in the session's Region; IAM and the S3 bucket list are global.
Offline, the same code runs against the moto account and the local stand-ins: the runtime is the
local runtime registry (stopping it is its deletion), and two operations moto lacks
(DeleteModelPackage, DeleteModelPackageGroup) fall back to removing the records from moto.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mtrl_course.errors import aws_error_code
from mtrl_course import aws, config, deploy, iam, naming, run_scope, storage

# --- what counts as the course's -------------------------------------------------------------------
NAME_PREFIX = naming.NAME_PREFIX
TAG_KEY = naming.TAG_COURSE
TAG_VALUE = config.COURSE_TAG
# The trainer's get-or-create model-package groups: `<model>-mtrl-mpg`, `<model>-mtrl-checkpoint-mpg`.
PACKAGE_GROUP_MARK = "-mtrl-"
PACKAGE_GROUP_SUFFIXES = ("-mtrl-mpg", "-mtrl-checkpoint-mpg")
# MultiTurnRLEvaluator reuses one pipeline of this name (sagemaker.train.evaluate.constants).
EVAL_PIPELINE_PREFIX = "SagemakerEvaluation-MTRLEvaluation"
# ... and writes this file into the working directory of whoever called evaluate().
EVAL_PIPELINE_FILE = "mtrl_eval_pipeline_input.json"
JOB_CATEGORIES = ("AgentRFT", "AgentRFTEvaluation")
# The AgentCore CLI's CloudFormation stack: AgentCore-<project>-<target>.
STACK_FORMAT = "AgentCore-{project}-{target}"
LIVE_STACK_STATES_GONE = ("DELETE_COMPLETE",)
STACK_DELETE_WAIT_S = 30 * 60
# SageMaker's default bucket, where the trainer writes when it is given no s3_output_path.
SAGEMAKER_DEFAULT_BUCKET = "sagemaker-{region}-{account}"

# --- the table ------------------------------------------------------------------------------------
KIND, NAME, BILLS, HOW_COLUMN, RESOURCE = "kind", "name", "still bills?", "how it is deleted", "resource"
COLUMNS = (KIND, NAME, BILLS, HOW_COLUMN, RESOURCE)
NOT_CONFIRMED = "not deleted: confirm=True was not given"
CHECK_BY_HAND = "could not be listed; check it in the console"

# --- kinds, in deletion order ------------------------------------------------------------------------
JOB, PIPELINE, STACK, RUNTIME, MLFLOW = (
    "running MTRL job",
    "evaluation pipeline",
    "CloudFormation stack",
    "AgentCore runtime",
    "MLflow app",
)
PREFIX, BUCKET, PACKAGE_GROUP, ROLE, POLICY, FILE = (
    "S3 prefix",
    "S3 bucket",
    "model package group",
    "IAM role",
    "IAM policy",
    "local file",
)
ORDER = (JOB, PIPELINE, STACK, RUNTIME, MLFLOW, PREFIX, BUCKET, PACKAGE_GROUP, ROLE, POLICY, FILE)
BILLING = {
    JOB: "yes: tokens (prefill, sample, train) until it ends",
    PIPELINE: "no (its evaluation jobs bill tokens while they run)",
    STACK: "no itself; it holds the runtime and its role",
    RUNTIME: "only per second of an active session (CPU and memory); nothing while no session runs",
    MLFLOW: "yes, for as long as it exists",
    PREFIX: "yes: S3 storage per GB-month (small)",
    BUCKET: "yes: S3 storage per GB-month (small)",
    PACKAGE_GROUP: "no (model packages are not billed)",
    ROLE: "no",
    POLICY: "no",
    FILE: "no (a file on this machine)",
}
UNKNOWN_BILLING = "unknown"
HOW = {
    JOB: "aws sagemaker stop-job",
    PIPELINE: "aws sagemaker delete-pipeline (after stopping its running executions)",
    STACK: "aws cloudformation delete-stack, or agentcore remove all + agentcore deploy",
    RUNTIME: "aws bedrock-agentcore-control delete-agent-runtime, or with its stack",
    MLFLOW: "aws sagemaker delete-mlflow-app",
    PREFIX: "aws s3 rm --recursive",
    BUCKET: "aws s3 rb --force (every object version, then the bucket)",
    PACKAGE_GROUP: "aws sagemaker delete-model-package for each package, then delete-model-package-group",
    ROLE: "detach its policies, then aws iam delete-role",
    POLICY: "detach it everywhere, then aws iam delete-policy",
    FILE: "rm",
}
LOCAL_RUNTIME_HOW = "offline: stop the local runtime (live: " + HOW[RUNTIME] + ")"


@dataclass
class Resource:
    """One thing to delete: what a person reads (`name`) and what the deleter needs (`ref`).

    Its printed form masks account IDs, so a table holding it never shows one.
    """

    kind: str
    name: str
    command: str  # the equivalent AWS CLI step (or shell step), with the real identifiers
    ref: dict[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        return f"{self.kind}: {naming.mask_account(self.name)}"

    __repr__ = __str__


@dataclass
class _Listing:
    """What one kind's discovery found, or why it could not look."""

    resources: list[Resource] = field(default_factory=list)
    error: str | None = None


def _has_course_tag(tags: Iterable[dict[str, str]]) -> bool:
    return any(t.get("Key") == TAG_KEY and t.get("Value") == TAG_VALUE for t in tags or [])


def _project_name() -> str:
    return deploy.load_project()["name"]


def stack_names() -> list[str]:
    """The AgentCore CLI's stacks for this project: one per deployment target."""
    try:
        targets = json.loads(deploy.TARGETS_FILE.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        targets = [{"name": "default"}]
    project = _project_name()
    return [STACK_FORMAT.format(project=project, target=t.get("name", "default")) for t in targets]


def _is_course_runtime(name: str) -> bool:
    project = _project_name()
    return name == deploy.deployed_runtime_name() or name == project or name.startswith(project + "_")


# ------------------------------------------------------------------------------------- discovery
_tag_index = run_scope.tag_index
_tagged_arns = run_scope.tagged_arns
_RUN_NAMED = run_scope.RUN_NAMED
_runs_in_bucket = run_scope.runs_in_bucket
other_runs = run_scope.other_runs
deployed_from_this_checkout = run_scope.deployed_from_this_checkout
_Scope = run_scope.Scope


def _skip(resource: Resource, why: str) -> Resource:
    resource.ref["skip"] = why
    return resource


def _jobs(session: Any, scope: _Scope) -> list[Resource]:
    """Jobs in progress that carry the course tag and this run's id: another learner's or the
    instructor's job (a different run id) is never stopped from here."""
    sagemaker = session.client("sagemaker")
    run = naming.run_id()
    found = []
    for category in JOB_CATEGORIES:
        token = None
        while True:
            page = sagemaker.list_jobs(
                JobCategory=category, StatusEquals="InProgress", **({"NextToken": token} if token else {})
            )
            for summary in page.get("JobSummaries", []):
                tags = sagemaker.describe_job(JobName=summary["JobName"], JobCategory=category).get("Tags", [])
                tag_map = {t["Key"]: t["Value"] for t in tags}
                mine = _has_course_tag(tags) and tag_map.get(naming.TAG_RUN_ID, run) == run
                if mine or summary["JobArn"] in scope.tagged:
                    found.append(
                        Resource(
                            JOB,
                            summary["JobName"],
                            f"aws sagemaker stop-job --job-name {summary['JobName']} --job-category {category}",
                            {"name": summary["JobName"], "category": category},
                        )
                    )
            token = page.get("NextToken")
            if not token:
                break
    return found


SHARED_PIPELINE_WHY = (
    "MultiTurnRLEvaluator's one pipeline for everyone in this account and Region who evaluates with it, "
    "course or not: it and its executions may be anyone's. This run's evaluation jobs are stopped as jobs; "
    "delete the pipeline by hand only if nobody else evaluates here"
)


def _pipelines(session: Any, scope: _Scope) -> list[Resource]:
    """The evaluator's shared pipeline, only to say why it is left (see SHARED_PIPELINE_WHY)."""
    sagemaker = session.client("sagemaker")
    found = []
    for page in sagemaker.get_paginator("list_pipelines").paginate(PipelineNamePrefix=EVAL_PIPELINE_PREFIX):
        for summary in page.get("PipelineSummaries", []):
            name = summary["PipelineName"]
            resource = Resource(PIPELINE, name, f"aws sagemaker delete-pipeline --pipeline-name {name}", {"name": name})
            found.append(_skip(resource, SHARED_PIPELINE_WHY))
    return found


def _stacks(session: Any, scope: _Scope) -> list[Resource]:
    cloudformation = session.client("cloudformation")
    found = []
    for name in stack_names():
        try:
            stack = cloudformation.describe_stacks(StackName=name)["Stacks"][0]
        except Exception as error:
            if aws_error_code(error, or_type=True) == "ValidationError":  # CloudFormation's "does not exist"
                continue
            raise
        if stack.get("StackStatus") in LIVE_STACK_STATES_GONE:
            continue
        resource = Resource(STACK, name, f"aws cloudformation delete-stack --stack-name {name}", {"name": name})
        tags = {t.get("Key"): t.get("Value") for t in stack.get("Tags", [])}
        if (
            scope.deployed_here
            or scope.alone
            or tags.get(naming.TAG_RUN_ID) == scope.run
            or stack.get("StackId") in scope.tagged
        ):
            found.append(resource)
        else:
            found.append(
                _skip(resource, "not deployed from this checkout (another run's runtime, e.g. the instructor's)")
            )
    return found


def _runtimes(session: Any, scope: _Scope) -> list[Resource]:
    control = session.client("bedrock-agentcore-control")
    local = _local_runtime_arns()
    found = []
    token = None
    while True:
        page = control.list_agent_runtimes(**({"nextToken": token} if token else {}))
        for summary in page.get("agentRuntimes", []):
            name, arn = summary.get("agentRuntimeName", ""), summary["agentRuntimeArn"]
            if not (_is_course_runtime(name) or arn in scope.tagged):
                continue
            command = (
                f"aws bedrock-agentcore-control delete-agent-runtime --agent-runtime-id {summary['agentRuntimeId']}"
            )
            resource = Resource(
                RUNTIME, arn, command, {"arn": arn, "id": summary["agentRuntimeId"], "local": arn in local}
            )
            if arn in local or arn in scope.tagged or scope.deployed_here or scope.alone:
                found.append(resource)
            else:
                found.append(
                    _skip(resource, "not deployed from this checkout (another run's runtime, e.g. the instructor's)")
                )
        token = page.get("nextToken")
        if not token:
            break
    return found


def _local_runtime_arns() -> set[str]:
    if config.is_live():
        return set()
    from mtrl_course import local

    aws.session()
    return {runtime.arn for runtime in local.local_runtimes()}


def _mlflow_apps(session: Any, scope: _Scope) -> list[Resource]:
    sagemaker = session.client("sagemaker")
    found = []
    token = None
    mine = naming.resource_name("mlflow", scope.run)
    while True:
        page = sagemaker.list_mlflow_apps(**({"NextToken": token} if token else {}))
        for summary in page.get("Summaries", []):
            arn, name = summary["Arn"], summary.get("Name", "")
            resource = Resource(MLFLOW, name or arn, f"aws sagemaker delete-mlflow-app --arn {arn}", {"arn": arn})
            if name == mine or arn in scope.tagged or _sagemaker_run(sagemaker, arn) == scope.run:
                found.append(resource)
            elif name.startswith(NAME_PREFIX) or _sagemaker_run(sagemaker, arn) is not None:
                found.append(_skip(resource, "another run's MLflow app (its name or run_id tag is not this run's)"))
        token = page.get("NextToken")
        if not token:
            break
    return found


def _sagemaker_run(sagemaker: Any, arn: str) -> str | None:
    """The run_id tag of a course-tagged SageMaker resource ("" without one), None if not the course's."""
    try:
        tags = sagemaker.list_tags(ResourceArn=arn).get("Tags", [])
    except Exception:  # moto cannot list tags of every resource type; the name test still applies
        return None
    if not _has_course_tag(tags):
        return None
    return {t["Key"]: t["Value"] for t in tags}.get(naming.TAG_RUN_ID, "")


def _buckets_and_prefixes(session: Any, scope: _Scope) -> list[Resource]:
    s3 = session.client("s3")
    names = [b["Name"] for b in s3.list_buckets().get("Buckets", [])]
    found = []
    mine = storage.course_prefix(scope.run)
    owned: set[str] = set()
    for name in names:
        if not (storage.is_course_bucket(name) or f"arn:aws:s3:::{name}" in scope.tagged):
            continue
        runs = _runs_in_bucket(s3, name)
        if scope.alone and runs <= {scope.run}:
            found.append(Resource(BUCKET, name, f"aws s3 rb s3://{name} --force", {"bucket": name}))
            owned.add(name)
        else:
            shared = Resource(BUCKET, name, f"aws s3 rb s3://{name} --force", {"bucket": name})
            found.append(
                _skip(
                    shared,
                    "holds other runs' data ("
                    + ", ".join(sorted((runs | scope.others) - {scope.run}))
                    + "); only this run's prefix is deleted",
                )
            )
    # This run's prefix inside buckets that are not deleted whole: shared course buckets, the
    # learner's MTRL_BUCKET and SageMaker's default bucket (where the trainer writes without an
    # s3_output_path).
    account = session.client("sts").get_caller_identity()["Account"]
    others = {SAGEMAKER_DEFAULT_BUCKET.format(region=session.region_name or config.OFFLINE_REGION, account=account)}
    others |= {n for n in names if storage.is_course_bucket(n)}
    try:
        others.add(storage.bucket_name(session))
    except ValueError:
        pass
    for name in sorted(others & set(names) - owned):
        if storage.prefix_exists(name, mine, session):
            uri = storage.s3_uri(name, mine)
            found.append(Resource(PREFIX, uri, f"aws s3 rm {uri} --recursive", {"bucket": name, "prefix": mine}))
    return found


NOT_CREATED_GROUP_WHY = (
    "not created by this run: the trainer's get-or-create group for this base model, shared by everyone in "
    "the account who trains it (this run's trainer found it already there, or the run did not record it)"
)


def _package_groups(session: Any, scope: _Scope) -> list[Resource]:
    sagemaker = session.client("sagemaker")
    found = []
    for page in sagemaker.get_paginator("list_model_package_groups").paginate(NameContains=PACKAGE_GROUP_MARK):
        for summary in page.get("ModelPackageGroupSummaryList", []):
            name = summary["ModelPackageGroupName"]
            resource = Resource(
                PACKAGE_GROUP,
                name,
                f"aws sagemaker delete-model-package-group --model-package-group-name {name}",
                {"name": name},
            )
            arn = summary["ModelPackageGroupArn"]
            if name.endswith(PACKAGE_GROUP_SUFFIXES):
                # The trainer's get-or-create names: one pair per base model for the whole account.
                if arn not in scope.created and arn not in scope.tagged:
                    found.append(_skip(resource, NOT_CREATED_GROUP_WHY))
                else:
                    found.append(resource if scope.alone else _skip(resource, scope.shared_reason()))
            elif (name.startswith(NAME_PREFIX) and name.endswith("-" + scope.run)) or summary[
                "ModelPackageGroupArn"
            ] in scope.tagged:
                found.append(resource)
    return found


def _roles(session: Any, scope: _Scope) -> list[Resource]:
    iam_client = session.client("iam")
    found = []
    for page in iam_client.get_paginator("list_roles").paginate():
        for role in page.get("Roles", []):
            name = role["RoleName"]
            if not (name.startswith(NAME_PREFIX + "-") or role["Arn"] in scope.tagged):
                continue
            resource = Resource(ROLE, name, f"aws iam delete-role --role-name {name}", {"name": name})
            match = _RUN_NAMED.match(name)
            if role["Arn"] in scope.tagged or (match and match["run"] == scope.run) or (not match and scope.alone):
                found.append(resource)
            else:
                found.append(_skip(resource, "another run's role (its name ends in another run id)"))
    return found


def _policies(session: Any, scope: _Scope) -> list[Resource]:
    iam_client = session.client("iam")
    found = []
    for page in iam_client.get_paginator("list_policies").paginate(Scope="Local"):
        for policy in page.get("Policies", []):
            name, arn = policy["PolicyName"], policy["Arn"]
            shown = (policy.get("Path", "/") + name).lstrip("/")
            resource = Resource(POLICY, shown, f"aws iam delete-policy --policy-arn {arn}", {"arn": arn})
            if policy.get("Path") == iam.STAND_IN_POLICY_PATH:
                # Offline stand-ins for AWS managed policies: every run's roles attach the same one.
                found.append(resource if scope.alone else _skip(resource, scope.shared_reason()))
            elif arn in scope.tagged or (name.startswith(NAME_PREFIX) and name.endswith("-" + scope.run)):
                found.append(resource)
            elif name.startswith(NAME_PREFIX):
                found.append(_skip(resource, "another run's policy"))
    return found


def _file_places() -> set[Path]:
    """Where the evaluator may have written its pipeline file: this directory, the repo, notebooks/."""
    return {Path.cwd().resolve(), config.REPO_ROOT.resolve(), config.NOTEBOOKS_DIR.resolve()}


def local_files() -> list[Path]:
    """The evaluator's pipeline files that exist in `_file_places()`."""
    return sorted(p / EVAL_PIPELINE_FILE for p in _file_places() if (p / EVAL_PIPELINE_FILE).is_file())


def _files(session: Any, scope: _Scope) -> list[Resource]:
    found = []
    for path in local_files():
        shown = path.relative_to(config.REPO_ROOT) if path.is_relative_to(config.REPO_ROOT) else path
        found.append(Resource(FILE, shown.as_posix(), f"rm {shown.as_posix()}", {"path": str(path)}))
    return found


DISCOVERERS: dict[str, Callable[[Any, _Scope], list[Resource]]] = {
    JOB: _jobs,
    PIPELINE: _pipelines,
    STACK: _stacks,
    RUNTIME: _runtimes,
    MLFLOW: _mlflow_apps,
    BUCKET: _buckets_and_prefixes,
    PACKAGE_GROUP: _package_groups,
    ROLE: _roles,
    POLICY: _policies,
    FILE: _files,
}


def _scope(session: Any) -> _Scope:
    try:
        tagged = _tagged_arns(session)
    except Exception:  # the tag index is an extra net; names still find everything the course makes
        tagged = set()
    return _Scope(
        naming.run_id(),
        frozenset(tagged),
        frozenset(other_runs(session)),
        deployed_from_this_checkout(),
        frozenset(run_scope.created_arns()),
    )


def _listings(session: Any, scope: _Scope) -> list[tuple[str, _Listing]]:
    listings = []
    for kind, discoverer in DISCOVERERS.items():
        try:
            listings.append((kind, _Listing(discoverer(session, scope))))
        except Exception as error:
            listings.append(
                (
                    kind,
                    _Listing(error=f"{aws_error_code(error, or_type=True)}: {naming.mask_account(str(error))[:160]}"),
                )
            )
    return listings


def discover(session: Any | None = None) -> Any:
    """A pandas DataFrame of everything this run created, one row per resource, in deletion order.

    Columns: kind, name (accounts masked), still bills?, how it is deleted (the equivalent CLI
    step), resource (what `delete` acts on). A kind that could not be listed (no permission,
    a service not in this Region) gets one row saying so, with no resource. What belongs to
    other runs (or is shared while other runs exist) is not here: see `not_touched`.
    """
    import pandas as pd

    session = aws.session_or_new(session)
    rows = []
    for kind, listing in _listings(session, _scope(session)):
        for resource in listing.resources:
            if "skip" in resource.ref:
                continue
            how = LOCAL_RUNTIME_HOW if resource.ref.get("local") else HOW[resource.kind]
            rows.append(
                {
                    KIND: resource.kind,
                    NAME: naming.mask_account(resource.name),
                    BILLS: BILLING[resource.kind],
                    HOW_COLUMN: how,
                    RESOURCE: resource,
                }
            )
        if listing.error:
            rows.append(
                {
                    KIND: kind,
                    NAME: f"{CHECK_BY_HAND} ({listing.error})",
                    BILLS: UNKNOWN_BILLING,
                    HOW_COLUMN: "-",
                    RESOURCE: None,
                }
            )
    # Deletion order, then by name: listings come back in whatever order a service keeps.
    rows.sort(key=lambda row: (ORDER.index(row[KIND]), row[NAME]))
    return pd.DataFrame(rows, columns=list(COLUMNS))


# What clean-up never deletes, even when it is the course's.
CDK_BOOTSTRAP_STACK = "CDKToolkit"
CDK_BOOTSTRAP_WHY = (
    "the CDK bootstrap stack (and its cdk-hnb659fds-* assets bucket and ECR repository): `agentcore deploy` "
    "needs it, and so does every other CDK app in this account and Region; it holds the uploaded code bundles "
    "(S3 storage billed per GB-month). Delete it by hand only if nothing else here uses CDK."
)
LOG_GROUP_PREFIXES = ("/aws/bedrock-agentcore/runtimes/", "/aws/sagemaker/Job/")
LOG_GROUP_WHY = (
    "a CloudWatch log group (the runtime's or the jobs' logs, shared by every job of a category): kept for "
    "reading what happened; storage is billed per GB-month. aws logs delete-log-group --log-group-name <name> "
    "when you no longer need it."
)
WHY_COLUMN = "why it is left"


def not_touched(session: Any | None = None) -> Any:
    """A DataFrame (kind, name, why it is left) of what clean-up sees and will not delete.

    Other runs' resources, resources every run shares while other runs exist, the CDK bootstrap
    stack (always listed, found or not) and the runtime's and jobs' CloudWatch log groups.
    """
    import pandas as pd

    session = aws.session_or_new(session)
    rows = []
    for _kind, listing in _listings(session, _scope(session)):
        for resource in listing.resources:
            if "skip" in resource.ref:
                rows.append(
                    {KIND: resource.kind, NAME: naming.mask_account(resource.name), WHY_COLUMN: resource.ref["skip"]}
                )
    try:
        session.client("cloudformation").describe_stacks(StackName=CDK_BOOTSTRAP_STACK)
        bootstrap = CDK_BOOTSTRAP_STACK
    except Exception:
        bootstrap = f"{CDK_BOOTSTRAP_STACK} (not found in this Region)"
    rows.append({KIND: STACK, NAME: bootstrap, WHY_COLUMN: CDK_BOOTSTRAP_WHY})
    try:
        logs = session.client("logs")
        for prefix in LOG_GROUP_PREFIXES:
            for page in logs.get_paginator("describe_log_groups").paginate(logGroupNamePrefix=prefix):
                for group in page.get("logGroups", []):
                    rows.append({KIND: "CloudWatch log group", NAME: group["logGroupName"], WHY_COLUMN: LOG_GROUP_WHY})
    except Exception as error:
        rows.append(
            {
                KIND: "CloudWatch log group",
                NAME: f"{CHECK_BY_HAND} ({aws_error_code(error, or_type=True)})",
                WHY_COLUMN: LOG_GROUP_WHY,
            }
        )
    return pd.DataFrame(rows, columns=[KIND, NAME, WHY_COLUMN])


def as_table(frame: Any) -> Any:
    """The frame without its `resource` column: what a notebook or terminal shows."""
    return frame.drop(columns=[RESOURCE])


def _steps_before(session: Any, resource: Resource, deleting: set[str]) -> list[str]:
    """The by-hand steps a resource's own deletion needs first, read from the account now.

    AWS refuses to delete a model-package group that still holds packages, a role that still has
    policies attached or inline, and a policy still attached to a role that is not being deleted;
    `delete` does these steps itself, so the printed version must too, in the same order.
    """
    if resource.kind == PACKAGE_GROUP:
        sagemaker = session.client("sagemaker")
        return [
            f"aws sagemaker delete-model-package --model-package-name {summary['ModelPackageArn']}"
            for page in sagemaker.get_paginator("list_model_packages").paginate(
                ModelPackageGroupName=resource.ref["name"]
            )
            for summary in page.get("ModelPackageSummaryList", [])
        ]
    if resource.kind == ROLE:
        iam_client = session.client("iam")
        name = resource.ref["name"]
        attached = iam_client.list_attached_role_policies(RoleName=name)["AttachedPolicies"]
        inline = iam_client.list_role_policies(RoleName=name)["PolicyNames"]
        profiles = iam_client.list_instance_profiles_for_role(RoleName=name)["InstanceProfiles"]
        return (
            [f"aws iam detach-role-policy --role-name {name} --policy-arn {p['PolicyArn']}" for p in attached]
            + [f"aws iam delete-role-policy --role-name {name} --policy-name {p}" for p in inline]
            + [
                f"aws iam remove-role-from-instance-profile --instance-profile-name {p['InstanceProfileName']} "
                f"--role-name {name}"
                for p in profiles
            ]
        )
    if resource.kind == POLICY:
        iam_client = session.client("iam")
        arn = resource.ref["arn"]
        entities = iam_client.list_entities_for_policy(PolicyArn=arn)
        steps = [
            f"aws iam detach-role-policy --role-name {r['RoleName']} --policy-arn {arn}"
            for r in entities.get("PolicyRoles", [])
            if r["RoleName"] not in deleting  # detached in that role's own steps
        ]
        steps += [
            f"aws iam detach-user-policy --user-name {u['UserName']} --policy-arn {arn}"
            for u in entities.get("PolicyUsers", [])
        ]
        steps += [
            f"aws iam detach-group-policy --group-name {g['GroupName']} --policy-arn {arn}"
            for g in entities.get("PolicyGroups", [])
        ]
        steps += [
            f"aws iam delete-policy-version --policy-arn {arn} --version-id {v['VersionId']}"
            for v in iam_client.list_policy_versions(PolicyArn=arn)["Versions"]
            if not v["IsDefaultVersion"]
        ]
        return steps
    return []


def cli_commands(frame: Any, session: Any | None = None) -> list[str]:
    """The AWS CLI (or shell) steps that delete the resources of `frame`, in order, accounts masked.

    What `delete` does, written out for anyone who prefers to run it by hand and runnable as
    printed: each model-package group after its packages, each role after its policies are
    detached, each policy after it is detached everywhere else (those steps are read from the
    account when this is called).
    """
    session = aws.session_or_new(session)
    resources = sorted(
        (r for r in frame[RESOURCE] if isinstance(r, Resource)), key=lambda r: (ORDER.index(r.kind), r.name)
    )
    deleting = {r.ref.get("name", "") for r in resources if r.kind == ROLE}
    commands = []
    for resource in resources:
        try:
            commands += _steps_before(session, resource, deleting)
        except Exception as error:
            commands.append(
                f"# {resource.kind} {resource.name}: {CHECK_BY_HAND} ({aws_error_code(error, or_type=True)})"
            )
        commands.append(resource.command)
    return [naming.mask_account(command) for command in commands]


# --------------------------------------------------------------------------------------- deletion
def _stop_job(session: Any, resource: Resource) -> str:
    session.client("sagemaker").stop_job(JobName=resource.ref["name"], JobCategory=resource.ref["category"])
    return "stop requested (billing ends when it stops)"


def _delete_stack(session: Any, resource: Resource) -> str:
    cloudformation = session.client("cloudformation")
    cloudformation.delete_stack(StackName=resource.ref["name"])
    waiter = cloudformation.get_waiter("stack_delete_complete")
    waiter.wait(StackName=resource.ref["name"], WaiterConfig={"Delay": 15, "MaxAttempts": STACK_DELETE_WAIT_S // 15})
    return "deleted, with the runtime and the role it held"


def _delete_runtime(session: Any, resource: Resource) -> str:
    if resource.ref.get("local"):
        from mtrl_course import local

        runtime = local.get_runtime(resource.ref["arn"])
        if runtime is None:
            return "already gone"
        runtime.close()
        return "stopped and unregistered (offline: the local runtime)"
    control = session.client("bedrock-agentcore-control")
    try:
        control.delete_agent_runtime(agentRuntimeId=resource.ref["id"])
    except Exception as error:
        if aws_error_code(error, or_type=True) == "ResourceNotFoundException":
            return "already gone (deleted with its stack)"
        raise
    return "deleted"


def _delete_mlflow_app(session: Any, resource: Resource) -> str:
    session.client("sagemaker").delete_mlflow_app(Arn=resource.ref["arn"])
    return "deleted"


def _delete_prefix(session: Any, resource: Resource) -> str:
    count = storage.delete_prefix(resource.ref["bucket"], resource.ref["prefix"], session)
    return f"deleted {count} object(s)"


def _delete_bucket(session: Any, resource: Resource) -> str:
    count = storage.delete_bucket(resource.ref["bucket"], session)
    return f"deleted, with {count} object(s)"


def _delete_package_group(session: Any, resource: Resource) -> str:
    sagemaker = session.client("sagemaker")
    name = resource.ref["name"]
    sagemaker.describe_model_package_group(ModelPackageGroupName=name)  # raises when it is already gone
    packages = [
        summary["ModelPackageArn"]
        for page in sagemaker.get_paginator("list_model_packages").paginate(ModelPackageGroupName=name)
        for summary in page.get("ModelPackageSummaryList", [])
    ]
    try:
        for arn in packages:
            sagemaker.delete_model_package(ModelPackageName=arn)
        sagemaker.delete_model_package_group(ModelPackageGroupName=name)
    except NotImplementedError:
        if config.is_live():
            raise
        _forget_package_group_in_moto(session, name, packages)
    return "deleted" + (f", with {len(packages)} model package(s)" if packages else "")


def _forget_package_group_in_moto(session: Any, name: str, packages: list[str]) -> None:
    # moto 5.2.5 implements neither DeleteModelPackage nor DeleteModelPackageGroup; offline the
    # records are removed from its backend directly, so the account really ends up empty.
    from moto.backends import get_backend

    account = session.client("sts").get_caller_identity()["Account"]
    backend = get_backend("sagemaker")[account][session.region_name or config.OFFLINE_REGION]
    for arn in packages:
        backend.model_packages.pop(arn, None)
    for key in [k for k, v in backend.model_package_name_mapping.items() if v in packages]:
        del backend.model_package_name_mapping[key]
    backend.model_package_groups.pop(name, None)
    # The local service re-registers finished jobs' packages in every new process (so a later
    # kernel can evaluate them); tell it these are gone for good.
    from mtrl_course import local

    local.forget_model_packages(packages)


def _delete_role(session: Any, resource: Resource) -> str:
    iam_client = session.client("iam")
    name = resource.ref["name"]
    for policy in iam_client.list_attached_role_policies(RoleName=name)["AttachedPolicies"]:
        iam_client.detach_role_policy(RoleName=name, PolicyArn=policy["PolicyArn"])
    for policy in iam_client.list_role_policies(RoleName=name)["PolicyNames"]:
        iam_client.delete_role_policy(RoleName=name, PolicyName=policy)
    for profile in iam_client.list_instance_profiles_for_role(RoleName=name)["InstanceProfiles"]:
        iam_client.remove_role_from_instance_profile(InstanceProfileName=profile["InstanceProfileName"], RoleName=name)
    iam_client.delete_role(RoleName=name)
    return "deleted"


def _delete_policy(session: Any, resource: Resource) -> str:
    iam_client = session.client("iam")
    arn = resource.ref["arn"]
    entities = iam_client.list_entities_for_policy(PolicyArn=arn)
    for role in entities.get("PolicyRoles", []):
        iam_client.detach_role_policy(RoleName=role["RoleName"], PolicyArn=arn)
    for user in entities.get("PolicyUsers", []):
        iam_client.detach_user_policy(UserName=user["UserName"], PolicyArn=arn)
    for group in entities.get("PolicyGroups", []):
        iam_client.detach_group_policy(GroupName=group["GroupName"], PolicyArn=arn)
    for version in iam_client.list_policy_versions(PolicyArn=arn)["Versions"]:
        if not version["IsDefaultVersion"]:
            iam_client.delete_policy_version(PolicyArn=arn, VersionId=version["VersionId"])
    iam_client.delete_policy(PolicyArn=arn)
    return "deleted"


def _delete_file(session: Any, resource: Resource) -> str:
    path = Path(resource.ref["path"])
    if not path.exists():
        return "already gone"
    path.unlink()
    return "deleted"


DELETERS: dict[str, Callable[[Any, Resource], str]] = {
    JOB: _stop_job,
    STACK: _delete_stack,
    RUNTIME: _delete_runtime,
    MLFLOW: _delete_mlflow_app,
    PREFIX: _delete_prefix,
    BUCKET: _delete_bucket,
    PACKAGE_GROUP: _delete_package_group,
    ROLE: _delete_role,
    POLICY: _delete_policy,
    FILE: _delete_file,
}
GONE_CODES = ("NoSuchEntity", "NoSuchBucket", "ResourceNotFound", "ResourceNotFoundException")
# Some services say "gone" with a validation error and a sentence.
GONE_VALIDATION_CODES = ("ValidationException", "ValidationError")
GONE_MESSAGE = re.compile(r"could not find|does not exist|not found", re.IGNORECASE)


def _is_gone(error: Exception) -> bool:
    code = aws_error_code(error, or_type=True)
    return code in GONE_CODES or (code in GONE_VALIDATION_CODES and bool(GONE_MESSAGE.search(str(error))))


def delete(frame: Any, confirm: bool = False, session: Any | None = None, *, echo: bool = True) -> Any:
    """Delete the resources of `frame` (as `discover` returns it, possibly filtered), in safe order.

    Only when `confirm is True`: anything else (False, "yes", 1) deletes nothing and says so in
    every row. Returns a DataFrame (kind, name, result); with `echo`, prints one line per
    deletion as it happens, since a stack deletion takes minutes live. A failure is reported in
    its row and the rest goes on; already-deleted resources count as gone.
    """
    import pandas as pd

    session = aws.session_or_new(session)
    resources = [r for r in frame[RESOURCE] if isinstance(r, Resource)] if RESOURCE in frame else []
    resources.sort(key=lambda r: (ORDER.index(r.kind), r.name))
    rows = []
    for resource in resources:
        if confirm is not True:
            result = NOT_CONFIRMED
        else:
            try:
                result = DELETERS[resource.kind](session, resource)
            except Exception as error:
                code = aws_error_code(error, or_type=True)
                result = "already gone" if _is_gone(error) else f"failed: {code}: {str(error)[:200]}"
        row = {KIND: resource.kind, NAME: naming.mask_account(resource.name), "result": naming.mask_account(result)}
        rows.append(row)
        if echo and confirm is True:
            print(f"{row[KIND]} {row[NAME]}: {row['result']}", flush=True)
    if echo and confirm is not True:
        print(f"dry run: nothing deleted ({len(resources)} resource(s) found). Set confirm=True to delete them.")
    return pd.DataFrame(rows, columns=[KIND, NAME, "result"])


def verify_empty(session: Any | None = None) -> Any:
    """Discover again; the rows still there (an empty frame once everything is gone)."""
    frame = discover(session)
    return frame[frame[RESOURCE].notna()].reset_index(drop=True)
