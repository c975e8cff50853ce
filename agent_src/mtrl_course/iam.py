"""The two IAM roles of a multi-turn RL job, the caller's permissions, and how each goes wrong.

Step 1 of the walkthrough. Two roles take part in every rollout:

- the **training job role**, which you create: the service assumes it to read your data, write
  metrics to MLflow and invoke your agent. It must trust `job.sagemaker.amazonaws.com` (not the
  generic `sagemaker.amazonaws.com`) with both `sts:AssumeRole` and `sts:TagSession`, and carry
  the AWS managed policy `AmazonSageMakerJobFullAccess`;
- the **agent runtime role**, which `agentcore deploy` creates: AgentCore assumes it to run the
  agent, which then calls the policy model and reports rewards. It trusts
  `bedrock-agentcore.amazonaws.com` and needs `AmazonSageMakerJobRuntimeAccess`.

You, the caller, also need `iam:PassRole` on the job role, limited by the condition
`iam:PassedToService` to the job service and to SageMaker Pipelines (notebook 07's evaluator
creates a pipeline that runs as the job role), plus the job actions (CreateJob, DescribeJob, ...)
and what the evaluator's own pre-flight check asks of its caller.

The same functions run live and offline: offline, `aws.session()` answers IAM calls from moto.
moto's copies of AWS managed policies are not loaded by default, so offline the managed policies
are replaced by customer-managed stand-ins of the same name, under the path
`/aws-managed-stand-in/` of the moto account, holding moto's copy of the AWS document; every
report says so. Names carry the course prefix and a run id; everything created is tagged
(course, run_id, notebook) so notebook 08 can find it. Account IDs are masked in reports.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from mtrl_course.errors import aws_error_code
from mtrl_course import aws, config, iam_decisions, service_spec
from mtrl_course.naming import (
    DEFAULT_NOTEBOOK,
    NAME_PREFIX,
    course_tags,
    mask_account,
    resource_name,
)

# --- principals and actions (aws-docs.md §3.4 and §4) ------------------------------------------

JOB_SERVICE = "job.sagemaker.amazonaws.com"
# The principal learners reach for first; CreateJob cannot assume a role that trusts only this.
GENERIC_SAGEMAKER_SERVICE = "sagemaker.amazonaws.com"
RUNTIME_SERVICE = "bedrock-agentcore.amazonaws.com"
# The service tags the sessions it opens with the job role; without sts:TagSession it cannot
# assume the role even when the principal is right.
JOB_TRUST_ACTIONS = ("sts:AssumeRole", "sts:TagSession")
RUNTIME_TRUST_ACTIONS = ("sts:AssumeRole",)
POLICY_VERSION = "2012-10-17"

JOB_POLICY_NAME = "AmazonSageMakerJobFullAccess"
RUNTIME_POLICY_NAME = "AmazonSageMakerJobRuntimeAccess"
AWS_MANAGED_POLICY_ARN = "arn:aws:iam::aws:policy/{name}"
# Offline stand-ins for AWS managed policies live under this path, so nobody mistakes them for
# the real thing and clean-up can find them.
STAND_IN_POLICY_PATH = "/aws-managed-stand-in/"

# The caller's permissions for MTRL jobs (dg/model-customize-mtrl-prereqs.html).
PASS_ROLE_ACTION = "iam:PassRole"
PASSED_TO_SERVICE_KEY = "iam:PassedToService"
JOB_RESOURCE_ACTIONS = ("sagemaker:CreateJob", "sagemaker:DescribeJob", "sagemaker:StopJob", "sagemaker:DeleteJob")
JOB_LIST_ACTIONS = ("sagemaker:ListJobs", "sagemaker:ListJobSchemaVersions", "sagemaker:DescribeJobSchemaVersion")
JOB_RESOURCE_PATTERN = "arn:aws:sagemaker:*:*:job/*"
# MultiTurnRLEvaluator (notebook 07) runs as *your* credentials up to its pipeline: its
# CreatePipeline passes the job role to SageMaker Pipelines (iam:PassedToService
# sagemaker.amazonaws.com), and before that `verify_evaluation_caller_permissions` simulates these
# actions on your role and raises RoleValidationError if any is denied (sagemaker-core 2.27:
# `iam_policies.EVALUATION_CALLER_ACTIONS`; tests/test_sdk_role_check.py pins the tuple to it).
PIPELINES_SERVICE = GENERIC_SAGEMAKER_SERVICE
EVALUATOR_CALLER_ACTIONS = (
    "sagemaker:CreatePipeline",
    "sagemaker:UpdatePipeline",
    "sagemaker:DescribePipeline",
    "sagemaker:ListPipelines",
    "sagemaker:StartPipelineExecution",
    "sagemaker:DescribePipelineExecution",
    "sagemaker:ListPipelineExecutionSteps",
    "sagemaker:StopPipelineExecution",
    "sagemaker:ListTags",
    "sagemaker:AddTags",
    "sagemaker:DescribeTrainingJob",
    "sagemaker:DescribeHubContent",
    "sagemaker:ListHubContents",
    "sagemaker:DescribeHub",
    "sagemaker:ListHubs",
    "sagemaker:CreateArtifact",
    "sagemaker:ListArtifacts",
    "sagemaker:DescribeArtifact",
    "s3:PutObject",
    "s3:GetObject",
    "s3:ListBucket",
)

# What sagemaker-train's role check asks of a *training* role before CreateJob (1.27:
# `TrainDefaults.get_role` -> `resolve_and_validate_role(role_type="training")`, which simulates
# the actions of its policy config whose Resource is "*"). AmazonSageMakerJobFullAccess does not
# grant the first two at all and conditions the EC2 ones on aws:ResourceAccount, which the
# simulator cannot evaluate without context, so IAM answers implicitDeny and the SDK raises
# RoleValidationError whenever the caller may simulate. tests/test_sdk_role_check.py pins this
# tuple to the SDK's own list.
SDK_ROLE_CHECK_ACTIONS = (
    "ecr:GetAuthorizationToken",
    "cloudwatch:PutMetricData",
    "ec2:CreateNetworkInterface",
    "ec2:CreateNetworkInterfacePermission",
    "ec2:DeleteNetworkInterface",
    "ec2:DeleteNetworkInterfacePermission",
    "ec2:DescribeNetworkInterfaces",
    "ec2:DescribeVpcs",
    "ec2:DescribeDhcpOptions",
    "ec2:DescribeSubnets",
    "ec2:DescribeSecurityGroups",
)
# MultiTurnRLEvaluator's pipeline runs *as the job role*: SageMaker Pipelines assumes it, its
# Lineage steps record an action, a context and artifacts with associations, and its Job step
# calls CreateJob passing the same role on to the job service. Guess: the exact lineage actions
# Pipelines calls are not documented; these are the ones the rendered definition implies.
PIPELINE_JOB_ACTIONS = ("sagemaker:CreateJob", "sagemaker:DescribeJob", "sagemaker:StopJob", "sagemaker:AddTags")
PIPELINE_LINEAGE_ACTIONS = (
    "sagemaker:CreateAction",
    "sagemaker:CreateContext",
    "sagemaker:CreateArtifact",
    "sagemaker:AddAssociation",
    "sagemaker:AddTags",
    "sagemaker:DescribeAction",
    "sagemaker:DescribeContext",
    "sagemaker:DescribeArtifact",
    "sagemaker:ListActions",
    "sagemaker:ListContexts",
    "sagemaker:ListArtifacts",
    "sagemaker:ListAssociations",
)
JOB_ROLE_INLINE_POLICY = "mtrl-sdk-check-and-eval-pipeline"

# Role kinds, the middle of a role's name (naming.resource_name).
JOB_ROLE_KIND = "job-role"
RUNTIME_ROLE_KIND = "runtime-role"
WRONG_PRINCIPAL_KIND = "wrong-principal"
# Guess: SageMaker assumes an MLflow app's role as the generic principal (the CLI reference
# documents only --role-arn); docs/LIVE_CHECKLIST.md says how a first live run confirms it.
MLFLOW_SERVICE = GENERIC_SAGEMAKER_SERVICE

# --- the wrong-principal demonstration -----------------------------------------------------------

JOB_CATEGORY = service_spec.TRAINING
JOB_SCHEMA_VERSION = "1.0.0"
# The walkthrough reports that the message names the right principal only after retries; how many
# is not in its text, so the demonstration makes three attempts (the local service names it on the third).
WRONG_PRINCIPAL_ATTEMPTS = 3
BASE_MODEL_ID = service_spec.GPT_OSS_20B

# IAM's "not found" error, as moto and AWS spell it.
NOT_FOUND_CODES = ("NoSuchEntity", "NoSuchEntityException")


# --- policy documents ----------------------------------------------------------------------------------


def trust_policy(service: str, actions: Sequence[str]) -> dict[str, Any]:
    """A trust policy letting one AWS service principal assume the role with `actions`."""
    return {
        "Version": POLICY_VERSION,
        "Statement": [{"Effect": "Allow", "Principal": {"Service": service}, "Action": list(actions)}],
    }


def job_role_trust_policy() -> dict[str, Any]:
    """The training job role's trust policy: job.sagemaker.amazonaws.com (AssumeRole, TagSession).

    A second statement also trusts sagemaker.amazonaws.com. The MTRL job service never uses it,
    but SageMaker Pipelines does: MultiTurnRLEvaluator runs its pipeline as this role. And
    sagemaker-train's `MultiTurnRLTrainer.train()` (1.27) checks the role's trust policy for that
    principal before it calls CreateJob and raises `RoleValidationError` without it (measured
    offline against the SDK's own resolver). Trusting only the generic principal is the opposite
    mistake: the SDK is happy and CreateJob fails with "Could not assume role".
    """
    document = trust_policy(JOB_SERVICE, JOB_TRUST_ACTIONS)
    document["Statement"].append(
        {"Effect": "Allow", "Principal": {"Service": GENERIC_SAGEMAKER_SERVICE}, "Action": ["sts:AssumeRole"]}
    )
    return document


def job_role_inline_policy(job_role_arn: str) -> dict[str, Any]:
    """What the job role needs beyond AmazonSageMakerJobFullAccess (see SDK_ROLE_CHECK_ACTIONS).

    Three statements: the SDK's pre-flight actions on "*" (unconditioned, so the simulator can
    say yes); the evaluation pipeline's Job step (CreateJob, and PassRole on this very role to
    the job service only); and the pipeline's lineage records.
    """
    return {
        "Version": POLICY_VERSION,
        "Statement": [
            {"Sid": "SdkTrainingRoleCheck", "Effect": "Allow", "Action": list(SDK_ROLE_CHECK_ACTIONS), "Resource": "*"},
            {
                "Sid": "EvaluationPipelineJobStep",
                "Effect": "Allow",
                "Action": list(PIPELINE_JOB_ACTIONS),
                "Resource": JOB_RESOURCE_PATTERN,
            },
            {
                "Sid": "EvaluationPipelinePassesThisRole",
                "Effect": "Allow",
                "Action": PASS_ROLE_ACTION,
                "Resource": job_role_arn,
                "Condition": {"StringEquals": {PASSED_TO_SERVICE_KEY: JOB_SERVICE}},
            },
            {
                "Sid": "EvaluationPipelineLineage",
                "Effect": "Allow",
                "Action": list(PIPELINE_LINEAGE_ACTIONS),
                "Resource": "*",
            },
        ],
    }


def runtime_role_trust_policy() -> dict[str, Any]:
    """The agent runtime role's trust policy: bedrock-agentcore.amazonaws.com, AssumeRole."""
    return trust_policy(RUNTIME_SERVICE, RUNTIME_TRUST_ACTIONS)


def caller_passrole_policy(job_role_arn: str, mlflow_role_arn: str | None = None) -> dict[str, Any]:
    """What the person (or notebook role) launching jobs needs: PassRole on the job role, the job
    actions, and what MultiTurnRLEvaluator asks of its caller.

    The PassRole statements are conditioned on `iam:PassedToService`: the job role can be handed
    to the MTRL job service (CreateJob) and to SageMaker Pipelines (the evaluator's CreatePipeline,
    whose pipeline runs as the job role), and to nothing else. The evaluator's caller actions are
    granted on "*": its pre-flight check simulates them without a resource, and IAM's simulator
    answers implicitDeny for a statement scoped to resources then, so a scoped grant would be
    refused by the check although the calls themselves would succeed.
    """
    if not job_role_arn.startswith("arn:") or ":role/" not in job_role_arn:
        raise ValueError(
            f"job_role_arn must be an IAM role ARN (arn:aws:iam::<account>:role/<name>), got {job_role_arn!r}"
        )
    return {
        "Version": POLICY_VERSION,
        "Statement": [
            {
                "Sid": "PassTheJobRoleToMtrlJobsOnly",
                "Effect": "Allow",
                "Action": PASS_ROLE_ACTION,
                "Resource": job_role_arn,
                "Condition": {"StringEquals": {PASSED_TO_SERVICE_KEY: JOB_SERVICE}},
            },
            {
                "Sid": "ManageMtrlJobs",
                "Effect": "Allow",
                "Action": list(JOB_RESOURCE_ACTIONS),
                "Resource": JOB_RESOURCE_PATTERN,
            },
            {"Sid": "ListMtrlJobs", "Effect": "Allow", "Action": list(JOB_LIST_ACTIONS), "Resource": "*"},
            {
                "Sid": "PassTheJobRoleToTheEvaluatorsPipeline",
                "Effect": "Allow",
                "Action": PASS_ROLE_ACTION,
                "Resource": job_role_arn,
                "Condition": {"StringEquals": {PASSED_TO_SERVICE_KEY: PIPELINES_SERVICE}},
            },
            {
                "Sid": "RunTheEvaluatorsPipeline",
                "Effect": "Allow",
                "Action": list(EVALUATOR_CALLER_ACTIONS),
                "Resource": "*",
            },
        ]
        + (
            [
                {
                    "Sid": "PassTheMlflowRoleToSageMakerOnly",
                    "Effect": "Allow",
                    "Action": PASS_ROLE_ACTION,
                    "Resource": mlflow_role_arn,
                    "Condition": {"StringEquals": {PASSED_TO_SERVICE_KEY: MLFLOW_SERVICE}},
                }
            ]
            if mlflow_role_arn
            else []
        ),
    }


_as_list = iam_decisions.as_list
_statements = iam_decisions.statements
_action_matches = iam_decisions.action_matches


def trust_problems(document: Mapping[str, Any] | str, service: str, actions: Sequence[str]) -> list[str]:
    """What stops `service` from assuming a role with this trust policy (empty when nothing does).

    Reads Allow statements only and ignores conditions: a trust policy for an AWS service has
    none, and this check is for the two course roles, not for IAM in general.
    """
    parsed: Mapping[str, Any] = json.loads(document) if isinstance(document, str) else document
    trusting = []
    for statement in _statements(parsed):
        if statement.get("Effect") != "Allow":
            continue
        principal = statement.get("Principal") or {}
        services = _as_list(principal.get("Service")) if isinstance(principal, Mapping) else []
        if service in services:
            trusting.append(statement)
    if not trusting:
        found = sorted({s for st in _statements(parsed) for s in _as_list((st.get("Principal") or {}).get("Service"))})
        return [f"it does not trust {service} (it trusts {', '.join(found) or 'no service'})"]
    allowed = [a for st in trusting for a in _as_list(st.get("Action"))]
    missing = [a for a in actions if not _action_matches(allowed, a)]
    if missing:
        return [f"it trusts {service} but does not allow {', '.join(missing)}"]
    return []


# --- the policy evaluator (shared with the offline SimulatePrincipalPolicy) ------------------------

ALLOWED, EXPLICIT_DENY, IMPLICIT_DENY = iam_decisions.ALLOWED, iam_decisions.EXPLICIT_DENY, iam_decisions.IMPLICIT_DENY
evaluate_policy = iam_decisions.evaluate_policy


# --- sessions and the stand-in policies ---------------------------------------------------------------


def _account(session: Any) -> str:
    return session.client("sts").get_caller_identity()["Account"]


@functools.cache
def _moto_managed_policies() -> dict[str, Any]:
    # 4.7 MB of JSON (0.7 s to parse): read once per process.
    from moto.iam.aws_managed_policies import aws_managed_policies_data

    return json.loads(aws_managed_policies_data)


def _stand_in_document(name: str) -> tuple[dict[str, Any], str]:
    """moto's copy of an AWS managed policy document, and where it came from."""
    copies = _moto_managed_policies()
    if name not in copies:
        raise KeyError(
            f"moto has no copy of the AWS managed policy {name}; upgrade moto (requirements.lock pins one that has it)"
        )
    entry = copies[name]
    return entry["Document"], f"moto's copy of the AWS document, version {entry.get('DefaultVersionId', '?')}"


def managed_policy_arn(iam: Any, name: str, *, account: str, tags: list[dict[str, str]]) -> tuple[str, str | None]:
    """The ARN to attach for AWS managed policy `name`, and a note when it is an offline stand-in.

    Live: the AWS managed policy itself. Offline: the AWS ARN if moto loaded its managed
    policies, else a customer-managed policy of the same name under STAND_IN_POLICY_PATH (created
    once, with moto's copy of the AWS document).
    """
    aws_arn = AWS_MANAGED_POLICY_ARN.format(name=name)
    if config.is_live():
        return aws_arn, None
    try:
        iam.get_policy(PolicyArn=aws_arn)
        return aws_arn, None
    except Exception as error:
        if aws_error_code(error, or_type=True) not in NOT_FOUND_CODES:
            raise
    stand_in_arn = f"arn:aws:iam::{account}:policy{STAND_IN_POLICY_PATH}{name}"
    document, source = _stand_in_document(name)
    try:
        iam.get_policy(PolicyArn=stand_in_arn)
    except Exception as error:
        if aws_error_code(error, or_type=True) not in NOT_FOUND_CODES:
            raise
        iam.create_policy(
            PolicyName=name,
            Path=STAND_IN_POLICY_PATH,
            PolicyDocument=json.dumps(document),
            Description=f"Offline stand-in for the AWS managed policy {name} ({source})",
            Tags=tags,
        )
    note = (
        f"offline stand-in: moto does not load AWS managed policies, so {name} is a customer-managed "
        f"policy of the same name in the moto account ({source})"
    )
    return stand_in_arn, note


# --- role reports ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RoleReport:
    """What a role is and whether it is fit for its job; `as_rows()` for a notebook table."""

    purpose: str
    name: str
    arn: str | None
    exists: bool
    trusted_services: tuple[str, ...] = ()
    trust_actions: tuple[str, ...] = ()
    policies: tuple[str, ...] = ()
    created: bool = False
    problems: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def ok(self) -> bool:
        return self.exists and not self.problems

    def as_rows(self) -> dict[str, str]:
        """item -> value, account IDs masked."""
        rows = {
            "role": self.purpose,
            "name": self.name,
            "ARN": self.arn or "-",
            "status": ("created now" if self.created else "exists") if self.exists else "does not exist yet",
            "trusted service": ", ".join(self.trusted_services) or "-",
            "trust actions": ", ".join(self.trust_actions) or "-",
            "policies": ", ".join(self.policies) or "-",
            "fit for the job": "yes" if self.ok else "no: " + "; ".join(self.problems or ("role missing",)),
        }
        return {key: mask_account(value) for key, value in rows.items()}


def _read_role(iam: Any, name: str) -> dict[str, Any] | None:
    try:
        return iam.get_role(RoleName=name)["Role"]
    except Exception as error:
        if aws_error_code(error, or_type=True) in NOT_FOUND_CODES:
            return None
        raise


def _trust_document(role: Mapping[str, Any]) -> dict[str, Any]:
    document = role.get("AssumeRolePolicyDocument") or {}
    if isinstance(document, str):
        from urllib.parse import unquote

        document = json.loads(unquote(document))
    return document


def _attached(iam: Any, name: str) -> list[str]:
    return [p["PolicyArn"] for p in iam.list_attached_role_policies(RoleName=name)["AttachedPolicies"]]


def _describe(
    iam: Any,
    purpose: str,
    name: str,
    service: str,
    actions: Sequence[str],
    policy_name: str,
    *,
    created: bool,
    notes: Sequence[str],
) -> RoleReport:
    role = _read_role(iam, name)
    if role is None:
        return RoleReport(purpose, name, None, False, notes=tuple(notes))
    trust = _trust_document(role)
    problems = trust_problems(trust, service, actions)
    policies = _attached(iam, name)
    if not any(arn.endswith("/" + policy_name) for arn in policies):
        problems.append(f"the policy {policy_name} is not attached")
    services = sorted({s for st in _statements(trust) for s in _as_list((st.get("Principal") or {}).get("Service"))})
    trust_actions = sorted({a for st in _statements(trust) for a in _as_list(st.get("Action"))})
    return RoleReport(
        purpose,
        name,
        role["Arn"],
        True,
        tuple(services),
        tuple(trust_actions),
        tuple(policies),
        created,
        tuple(problems),
        tuple(notes),
    )


def _ensure_role(
    session: Any,
    purpose: str,
    name: str,
    service: str,
    actions: Sequence[str],
    policy_name: str,
    notebook: str,
    wanted_trust: dict[str, Any] | None = None,
) -> RoleReport:
    iam = session.client("iam")
    tags = course_tags(notebook)
    created = False
    notes: list[str] = []
    role = _read_role(iam, name)
    wanted_trust = wanted_trust or trust_policy(service, actions)
    if role is None:
        iam.create_role(
            RoleName=name,
            AssumeRolePolicyDocument=json.dumps(wanted_trust),
            Description=f"{purpose} for the multi-turn RL Wordle course",
            Tags=tags,
        )
        created = True
    elif trust_problems(_trust_document(role), service, actions) or _missing_principals(
        _trust_document(role), wanted_trust
    ):
        # A role left over from an earlier attempt with the generic principal: fix it in place.
        iam.update_assume_role_policy(RoleName=name, PolicyDocument=json.dumps(wanted_trust))
        notes.append(f"trust policy replaced: it did not let {service} assume the role")
    policy_arn, note = managed_policy_arn(iam, policy_name, account=_account(session), tags=tags)
    if note:
        notes.append(note)
    if policy_arn not in _attached(iam, name):
        iam.attach_role_policy(RoleName=name, PolicyArn=policy_arn)
    return _describe(iam, purpose, name, service, actions, policy_name, created=created, notes=notes)


def ensure_job_role(
    name: str | None = None, *, session: Any | None = None, notebook: str = DEFAULT_NOTEBOOK
) -> RoleReport:
    """Create (or reuse and repair) the training job role; returns its report.

    Trust: job.sagemaker.amazonaws.com with sts:AssumeRole and sts:TagSession (plus
    sagemaker.amazonaws.com for the SDK's pre-flight check; see `job_role_trust_policy`). Policy:
    AmazonSageMakerJobFullAccess (offline: its stand-in), plus the inline policy
    `job_role_inline_policy` (the SDK's pre-flight actions and the evaluation pipeline's needs).
    IAM roles are not billed.
    """
    session = aws.session_or_new(session)
    report = _ensure_role(
        session,
        "training job role",
        name or resource_name(JOB_ROLE_KIND),
        JOB_SERVICE,
        JOB_TRUST_ACTIONS,
        JOB_POLICY_NAME,
        notebook,
        wanted_trust=job_role_trust_policy(),
    )
    if report.arn:
        iam = session.client("iam")
        wanted = job_role_inline_policy(report.arn)
        try:
            current = iam.get_role_policy(RoleName=report.name, PolicyName=JOB_ROLE_INLINE_POLICY)["PolicyDocument"]
        except Exception as error:
            if aws_error_code(error, or_type=True) not in NOT_FOUND_CODES:
                raise
            current = None
        if isinstance(current, str):
            from urllib.parse import unquote

            current = json.loads(unquote(current))
        if current != wanted:
            iam.put_role_policy(
                RoleName=report.name, PolicyName=JOB_ROLE_INLINE_POLICY, PolicyDocument=json.dumps(wanted)
            )
        report = dataclasses.replace(report, policies=(*report.policies, f"inline: {JOB_ROLE_INLINE_POLICY}"))
    return report


def _missing_principals(current: Mapping[str, Any], wanted: Mapping[str, Any]) -> list[str]:
    """Service principals the wanted trust policy names that the current one does not."""

    def services(doc: Mapping[str, Any]) -> set[str]:
        return {s for st in _statements(doc) for s in _as_list((st.get("Principal") or {}).get("Service"))}

    return sorted(services(wanted) - services(current))


def _deployed_runtime_role(session: Any) -> str | None:
    """The execution role name of the deployed Wordle runtime, or None when it is not deployed."""
    from mtrl_course import deploy

    control = session.client("bedrock-agentcore-control")
    wanted = deploy.deployed_runtime_name()
    token = None
    while True:
        page = control.list_agent_runtimes(**({"nextToken": token} if token else {}))
        for runtime in page.get("agentRuntimes", []):
            if runtime.get("agentRuntimeName") == wanted:
                detail = control.get_agent_runtime(agentRuntimeId=runtime["agentRuntimeId"])
                return detail["roleArn"].rsplit("/", 1)[-1]
        token = page.get("nextToken")
        if not token:
            return None


def ensure_runtime_role(
    name: str | None = None, *, session: Any | None = None, notebook: str = DEFAULT_NOTEBOOK
) -> RoleReport:
    """The agent runtime role: described live, created as a stand-in offline.

    Live, `agentcore deploy` (notebook 02) creates this role and attaches
    AmazonSageMakerJobRuntimeAccess, so this function only finds and checks it (through the
    deployed runtime, or by `name`). Offline, it creates a stand-in role with the same trust
    and policy, so the next notebooks have one to point at.
    """
    session = aws.session_or_new(session)
    iam = session.client("iam")
    purpose = "agent runtime role"
    if config.is_live():
        found = name or _deployed_runtime_role(session)
        if found is None:
            return RoleReport(
                purpose,
                "(created by agentcore deploy)",
                None,
                False,
                notes=(
                    "not deployed yet: `agentcore deploy` in notebook 02 creates this role with the policy attached",
                ),
            )
        return _describe(
            iam,
            purpose,
            found,
            RUNTIME_SERVICE,
            RUNTIME_TRUST_ACTIONS,
            RUNTIME_POLICY_NAME,
            created=False,
            notes=("created by agentcore deploy; read only here",),
        )
    report = _ensure_role(
        session,
        purpose,
        name or resource_name(RUNTIME_ROLE_KIND),
        RUNTIME_SERVICE,
        RUNTIME_TRUST_ACTIONS,
        RUNTIME_POLICY_NAME,
        notebook,
    )
    note = "offline stand-in for the role agentcore deploy creates live"
    return dataclasses.replace(report, notes=(note, *report.notes))


# --- a role a service assumes right after it was created ------------------------------------------------
# IAM is eventually consistent: a role created a moment ago may not yet be assumable by a service in
# the Region (the IAM User Guide's troubleshooting page, "Changes that I make are not always
# immediately visible"), and the service then refuses the call that hands it the role. The error's
# exact wording per service is not in the course's sources (docs/LIVE_CHECKLIST.md, step 1); any
# refusal whose message speaks of assuming the role counts. The wait is bounded (chosen, not
# measured) and every retry is recorded, so `mtrl smoke` can report what the account did.
ROLE_PROPAGATION_TIMEOUT_S = 120.0
ROLE_PROPAGATION_POLL_S = 10.0
ROLE_NOT_ASSUMABLE_CODES = ("ValidationException", "AccessDeniedException", "AccessDenied", "InvalidParameterValue")
ROLE_NOT_ASSUMABLE_TEXT = re.compile(r"\bassum(e|ed|ing)\b", re.IGNORECASE)
# What happened while waiting, newest last: (what, role ARN masked, seconds waited, the refusal).
ROLE_PROPAGATION_LOG: list[dict[str, Any]] = []

T = TypeVar("T")


def _sleep(seconds: float) -> None:
    """The wait between two tries (looked up at call time, so a test can replace it)."""
    time.sleep(seconds)


def is_role_not_assumable(error: BaseException) -> bool:
    """A service's refusal that says it could not assume the role it was given."""
    from mtrl_course import errors

    return errors.aws_error_code(error) in ROLE_NOT_ASSUMABLE_CODES and bool(
        ROLE_NOT_ASSUMABLE_TEXT.search(errors.aws_refusal(error))
    )


def call_with_new_role(
    call: Callable[[], T],
    role_arn: str,
    *,
    service: str,
    what: str,
    just_created: bool,
    session: Any | None = None,
    sleep: Callable[[float], None] | None = None,
    clock: Callable[[], float] = time.monotonic,
    timeout: float | None = None,
    poll: float | None = None,
    echo: Callable[[str], object] | None = print,
) -> T:
    """`call()`, retried while `service` cannot yet assume a role created just before.

    A role that was not just created is never waited for: its refusal is real and raised at once.
    For a new one, IAM's own waiter first confirms the role exists, then each refusal that speaks
    of assuming the role is retried every `poll` seconds; after `timeout` seconds the last refusal
    becomes an ActionableError naming the role and what to do.
    """
    from mtrl_course import errors

    sleep = sleep or _sleep
    timeout = ROLE_PROPAGATION_TIMEOUT_S if timeout is None else timeout
    poll = ROLE_PROPAGATION_POLL_S if poll is None else poll
    if just_created and session is not None:
        role_name = role_arn.rsplit("/", 1)[-1]
        session.client("iam").get_waiter("role_exists").wait(
            RoleName=role_name, WaiterConfig={"Delay": 1, "MaxAttempts": 20}
        )
    started = clock()
    while True:
        try:
            return call()
        except Exception as error:
            if not (just_created and is_role_not_assumable(error)):
                raise
            waited = clock() - started
            refusal = mask_account(errors.aws_refusal(error))
            ROLE_PROPAGATION_LOG.append(
                {"what": what, "role": mask_account(role_arn), "waited_s": round(waited, 1), "refusal": refusal}
            )
            if waited >= timeout:
                raise errors.ActionableError(
                    f"{service} still cannot assume the new role {mask_account(role_arn)} {waited:.0f} s after it "
                    f"was created ({refusal}); IAM changes can take longer to reach a service: run this again "
                    "in a few minutes (the role is kept)"
                ) from None
            if echo is not None:
                echo(
                    f"{what}: {service} cannot assume the role created a moment ago yet ({refusal}); "
                    f"IAM changes take a while to propagate, retrying in {poll:.0f} s "
                    f"(at most {timeout:.0f} s)"
                )
            sleep(poll)


# --- the caller's policy, simulated ---------------------------------------------------------------------


@dataclass(frozen=True)
class Scenario:
    """One request to evaluate against the caller policy."""

    action: str
    resource: str
    passed_to: str | None = None
    expectation: str = ""
    should_allow: bool = True

    def context(self) -> dict[str, list[str]]:
        return {PASSED_TO_SERVICE_KEY: [self.passed_to]} if self.passed_to else {}


# A service the job role must never be handed to (the scenarios show the condition refusing it).
OTHER_SERVICE_EXAMPLE = "lambda.amazonaws.com"


def caller_scenarios(job_role_arn: str, region: str) -> list[Scenario]:
    """The requests that show what the caller policy allows, and what its condition refuses."""
    account = job_role_arn.split(":")[4]
    job_arn = f"arn:aws:sagemaker:{region}:{account}:job/{JOB_CATEGORY}/example-job"
    other_role = f"arn:aws:iam::{account}:role/some-other-role"
    return [
        Scenario(PASS_ROLE_ACTION, job_role_arn, JOB_SERVICE, "pass the job role to an MTRL job"),
        Scenario(
            PASS_ROLE_ACTION,
            job_role_arn,
            PIPELINES_SERVICE,
            "pass it to the evaluator's pipeline (SageMaker)",
        ),
        Scenario(PASS_ROLE_ACTION, job_role_arn, OTHER_SERVICE_EXAMPLE, "pass it to any other service", False),
        Scenario(PASS_ROLE_ACTION, other_role, JOB_SERVICE, "pass another role", False),
        Scenario("sagemaker:CreateJob", job_arn, None, "create a job"),
        Scenario("sagemaker:ListJobs", "*", None, "list jobs"),
        Scenario("sagemaker:CreatePipeline", "*", None, "create the evaluator's pipeline"),
    ]


def _simulate_live(session: Any, document: Mapping[str, Any], scenario: Scenario) -> str:
    iam = session.client("iam")
    entries = [
        {"ContextKeyName": key, "ContextKeyValues": values, "ContextKeyType": "string"}
        for key, values in scenario.context().items()
    ]
    result = iam.simulate_custom_policy(
        PolicyInputList=[json.dumps(document)],
        ActionNames=[scenario.action],
        ResourceArns=[scenario.resource],
        ContextEntries=entries,
    )["EvaluationResults"][0]
    return result["EvalDecision"]


def simulate_caller_policy(job_role_arn: str, *, session: Any | None = None) -> Any:
    """Evaluate `caller_passrole_policy(job_role_arn)` on a few requests; a pandas DataFrame.

    Live: IAM's policy simulator (`iam:SimulateCustomPolicy`) evaluates the document alone, so
    your own, possibly broader, permissions do not hide what the condition does. Offline:
    `evaluate_policy` stands in (moto has no policy simulator, and the offline layer's
    SimulatePrincipalPolicy ignores conditions). The `decided by` column says which.
    """
    import pandas as pd

    session = aws.session_or_new(session)
    document = caller_passrole_policy(job_role_arn)
    region = session.region_name or config.OFFLINE_REGION
    rows = []
    for scenario in caller_scenarios(job_role_arn, region):
        if config.is_live():
            decision, judge = _simulate_live(session, document, scenario), "IAM policy simulator"
        else:
            decision = evaluate_policy([document], scenario.action, scenario.resource, scenario.context())
            judge = "course evaluator (offline)"
        rows.append(
            {
                "request": scenario.expectation,
                "action": scenario.action,
                "resource": mask_account(scenario.resource),
                "iam:PassedToService": scenario.passed_to or "-",
                "decision": decision,
                "decided by": judge,
            }
        )
    return pd.DataFrame(rows)


def caller_principal_arn(session: Any) -> str:
    """Your identity as an IAM principal ARN (an assumed-role session becomes its role)."""
    arn = session.client("sts").get_caller_identity()["Arn"]
    match = re.match(r"^arn:(aws[a-z-]*):sts::(\d{12}):assumed-role/([^/]+)/", arn)
    if match:
        # The STS ARN drops the role's path; IAM knows the full ARN.
        return session.client("iam").get_role(RoleName=match.group(3))["Role"]["Arn"]
    return arn


def check_my_permissions(job_role_arn: str, *, session: Any | None = None) -> Any:
    """Live: can *you* pass the job role and run jobs today? (`iam:SimulatePrincipalPolicy`)

    Simulates your own identity's policies for the caller scenarios. Needs
    iam:SimulatePrincipalPolicy on yourself; SCPs and boundaries show up as denials.
    """
    import pandas as pd

    session = aws.session_or_new(session)
    principal = caller_principal_arn(session)
    iam = session.client("iam")
    region = session.region_name or config.OFFLINE_REGION
    rows = []
    for scenario in [s for s in caller_scenarios(job_role_arn, region) if s.should_allow]:
        entries = [
            {"ContextKeyName": key, "ContextKeyValues": values, "ContextKeyType": "string"}
            for key, values in scenario.context().items()
        ]
        result = iam.simulate_principal_policy(
            PolicySourceArn=principal,
            ActionNames=[scenario.action],
            ResourceArns=[scenario.resource],
            ContextEntries=entries,
        )["EvaluationResults"][0]
        rows.append({"request": scenario.expectation, "action": scenario.action, "decision": result["EvalDecision"]})
    return pd.DataFrame(rows)


# --- the wrong principal, as the service reports it ----------------------------------------------------


def _demo_job_document(account: str, region: str) -> dict[str, Any]:
    """A CreateJob configuration like the trainer's, pointing at a runtime not deployed yet."""
    from mtrl_course import deploy, local

    runtime_id = local.runtime_id_for(deploy.deployed_runtime_name())
    bucket = f"{NAME_PREFIX}-{account}-{region}"
    return {
        "AgentConfig": {
            "BedrockAgentCoreConfig": {
                "AgentRuntimeArn": f"arn:aws:bedrock-agentcore:{region}:{account}:runtime/{runtime_id}"
            }
        },
        "InputDataConfig": [
            {
                "ChannelName": "train",
                "DataSource": {"S3DataSource": {"S3Uri": f"s3://{bucket}/data/training-data.jsonl"}},
            }
        ],
        "OutputDataConfig": {"S3OutputPath": f"s3://{bucket}/output/"},
        "TrainingConfig": {
            "BaseModelArn": f"arn:aws:sagemaker:{region}:aws:hub-content/SageMakerPublicHub/Model/{BASE_MODEL_ID}",
            "MlflowConfig": {"MlflowResourceArn": f"arn:aws:sagemaker:{region}:{account}:mlflow-app/app-NOTCREATED"},
        },
    }


def _submit(sagemaker: Any, job_name: str, role_arn: str, document: Mapping[str, Any]) -> tuple[str, str]:
    try:
        sagemaker.create_job(
            JobName=job_name,
            RoleArn=role_arn,
            JobCategory=JOB_CATEGORY,
            JobConfigSchemaVersion=JOB_SCHEMA_VERSION,
            JobConfigDocument=json.dumps(document),
        )
    except Exception as error:
        response = getattr(error, "response", None) or {}
        message = response.get("Error", {}).get("Message", str(error))
        return aws_error_code(error, or_type=True), mask_account(message)
    return "accepted", "the job was created"


def demonstrate_wrong_principal(
    *,
    session: Any | None = None,
    attempts: int = WRONG_PRINCIPAL_ATTEMPTS,
    right_role_arn: str | None = None,
    notebook: str = DEFAULT_NOTEBOOK,
) -> Any:
    """Offline: submit CreateJob with a role trusting only sagemaker.amazonaws.com; the service's answers.

    Creates the role (tagged, named `mtrl-wordle-wrong-principal-<run id>`), calls the real boto3
    `create_job` `attempts` times with it, optionally once with `right_role_arn` for contrast,
    and deletes the role again. Returns a DataFrame (attempt, role, error code, message).

    Live it does nothing and returns None: a CreateJob that got further than expected would start
    a billed job, so notebook 01 only explains the failure there.
    """
    import pandas as pd

    if config.is_live():
        print(
            f"live: not run. A job role that trusts only {GENERIC_SAGEMAKER_SERVICE} makes CreateJob fail with "
            f"'Could not assume role'; the message names {JOB_SERVICE} only after retries (AWS walkthrough). "
            "The offline run of this notebook shows the exchange."
        )
        return None
    if attempts < 1:
        raise ValueError(f"attempts must be at least 1, got {attempts}")
    session = aws.session_or_new(session)
    iam, sagemaker = session.client("iam"), session.client("sagemaker")
    account, region = _account(session), session.region_name or config.OFFLINE_REGION
    name = resource_name(WRONG_PRINCIPAL_KIND)
    document = _demo_job_document(account, region)
    if _read_role(iam, name) is not None:
        _delete_role(iam, name)  # left over from an interrupted run
    role_arn = iam.create_role(
        RoleName=name,
        AssumeRolePolicyDocument=json.dumps(trust_policy(GENERIC_SAGEMAKER_SERVICE, JOB_TRUST_ACTIONS)),
        Description="Deliberately wrong job role (generic SageMaker principal); deleted right away",
        Tags=course_tags(notebook),
    )["Role"]["Arn"]
    rows = []
    try:
        for attempt in range(1, attempts + 1):
            code, message = _submit(sagemaker, f"{name}-{attempt}", role_arn, document)
            rows.append(
                {"attempt": attempt, "role trusts": GENERIC_SAGEMAKER_SERVICE, "error code": code, "message": message}
            )
        if right_role_arn:
            code, message = _submit(sagemaker, f"{name}-contrast", right_role_arn, document)
            rows.append({"attempt": "contrast", "role trusts": JOB_SERVICE, "error code": code, "message": message})
    finally:
        _delete_role(iam, name)
    return pd.DataFrame(rows)


def _delete_role(iam: Any, name: str) -> None:
    """Detach, remove inline policies, delete: IAM refuses to delete a role that still has policies."""
    for arn in _attached(iam, name):
        iam.detach_role_policy(RoleName=name, PolicyArn=arn)
    for policy in iam.list_role_policies(RoleName=name)["PolicyNames"]:
        iam.delete_role_policy(RoleName=name, PolicyName=policy)
    iam.delete_role(RoleName=name)


def describe_policy(policy_arn: str, *, session: Any | None = None) -> Any:
    """The statements of a managed policy's default version as a table (sid, effect, actions, resources)."""
    import pandas as pd

    iam = aws.session_or_new(session).client("iam")
    version = iam.get_policy(PolicyArn=policy_arn)["Policy"]["DefaultVersionId"]
    document = iam.get_policy_version(PolicyArn=policy_arn, VersionId=version)["PolicyVersion"]["Document"]
    if isinstance(document, str):
        from urllib.parse import unquote

        document = json.loads(unquote(document))
    rows = [
        {
            "sid": statement.get("Sid", "-"),
            "effect": statement.get("Effect"),
            "actions": ", ".join(_as_list(statement.get("Action"))),
            "resources": mask_account(", ".join(_as_list(statement.get("Resource")))),
        }
        for statement in _statements(document)
    ]
    return pd.DataFrame(rows)


def role_exists(name: str, *, session: Any | None = None) -> bool:
    """Whether an IAM role of that name exists in the account."""
    return _read_role(aws.session_or_new(session).client("iam"), name) is not None
