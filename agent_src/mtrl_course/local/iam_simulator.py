"""Offline IAM SimulatePrincipalPolicy over the policies moto holds, decided as IAM decides."""

from __future__ import annotations

import json
import logging
from typing import Any
from urllib.parse import unquote

from mtrl_course import iam_decisions
from mtrl_course.errors import ServiceError
from mtrl_course.local.apicall import JSON, ApiCall

logger = logging.getLogger(__name__)

# IAM SimulatePrincipalPolicy


def _context(params: JSON) -> dict[str, list[str]]:
    return {
        entry["ContextKeyName"]: [str(v) for v in entry.get("ContextKeyValues") or []]
        for entry in params.get("ContextEntries") or []
    }


def simulate_principal_policy(call: ApiCall, iam: Any) -> JSON:
    """Evaluate the principal's identity policies (plus PolicyInputList) like IAM's simulator.

    Explicit deny wins, then allow; with no matching Allow the answer is `implicitDeny`. A
    condition whose key the request does not supply does not match, and the key is reported in
    MissingContextValues, as the real simulator does. Boundaries, SCPs and resource policies are
    not modelled (the answer never carries their decision details).
    """
    params = call.params
    documents = [json.loads(p) for p in params.get("PolicyInputList") or []]
    documents += _principal_policies(iam, params["PolicySourceArn"])
    resources = params.get("ResourceArns") or ["*"]
    context = _context(params)
    results = []
    for action in params["ActionNames"]:
        for resource in resources:
            decision = iam_decisions.decide(documents, action, resource, context)
            results.append(
                {
                    "EvalActionName": action,
                    "EvalResourceName": resource,
                    "EvalDecision": decision.decision,
                    "MatchedStatements": [{"SourcePolicyId": str(s.get("Sid", ""))} for s in decision.matched],
                    "MissingContextValues": list(decision.missing_context),
                }
            )
    return {"EvaluationResults": results, "IsTruncated": False}


def decision(
    iam: Any, principal_arn: str, action: str, resource: str, context: dict[str, list[str]] | None = None
) -> str:
    """IAM's decision for one request by `principal_arn` (its identity policies in moto)."""
    return iam_decisions.decide(_principal_policies(iam, principal_arn), action, resource, context).decision


def trusts(iam: Any, role_arn: str, service: str) -> bool:
    """Whether the role's trust policy lets `service` assume it (Allow statements, sts:AssumeRole)."""
    name = role_arn.rsplit("/", 1)[-1]
    try:
        document = iam.get_role(RoleName=name)["Role"]["AssumeRolePolicyDocument"]
    except Exception:
        return False
    if isinstance(document, str):
        document = json.loads(unquote(document))
    for statement in iam_decisions.statements(document):
        principal = statement.get("Principal") or {}
        services = iam_decisions.as_list(principal.get("Service")) if isinstance(principal, dict) else []
        if (
            statement.get("Effect") == "Allow"
            and service in services
            and iam_decisions.action_matches(iam_decisions.as_list(statement.get("Action")), "sts:AssumeRole")
        ):
            return True
    return False


def _principal_policies(iam: Any, arn: str) -> list[JSON]:
    kind_and_name = arn.split(":", 5)[-1]
    kind, _, path_name = kind_and_name.partition("/")
    name = path_name.rsplit("/", 1)[-1]
    try:
        if kind == "role":
            attached = iam.list_attached_role_policies(RoleName=name)["AttachedPolicies"]
            inline = [
                iam.get_role_policy(RoleName=name, PolicyName=p)["PolicyDocument"]
                for p in iam.list_role_policies(RoleName=name)["PolicyNames"]
            ]
        elif kind == "user":
            attached = iam.list_attached_user_policies(UserName=name)["AttachedPolicies"]
            inline = [
                iam.get_user_policy(UserName=name, PolicyName=p)["PolicyDocument"]
                for p in iam.list_user_policies(UserName=name)["PolicyNames"]
            ]
            for group in iam.list_groups_for_user(UserName=name)["Groups"]:
                attached += iam.list_attached_group_policies(GroupName=group["GroupName"])["AttachedPolicies"]
                inline += [
                    iam.get_group_policy(GroupName=group["GroupName"], PolicyName=p)["PolicyDocument"]
                    for p in iam.list_group_policies(GroupName=group["GroupName"])["PolicyNames"]
                ]
        else:
            raise ServiceError("InvalidInput", f"PolicySourceArn {arn} must be an IAM user, group or role ARN.")
    except ServiceError:
        raise
    except Exception:
        raise ServiceError("NoSuchEntity", f"The principal {arn} cannot be found.", 404) from None
    documents = []
    for policy in attached:
        version = iam.get_policy(PolicyArn=policy["PolicyArn"])["Policy"]["DefaultVersionId"]
        documents.append(
            iam.get_policy_version(PolicyArn=policy["PolicyArn"], VersionId=version)["PolicyVersion"]["Document"]
        )
    documents += inline
    return [json.loads(unquote(d)) if isinstance(d, str) else d for d in documents]
