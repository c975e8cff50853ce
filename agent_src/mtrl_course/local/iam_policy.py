"""Offline IAM SimulatePrincipalPolicy over the policies moto holds."""

from __future__ import annotations

import fnmatch
import json
import logging
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote

from mtrl_course.errors import ServiceError
from mtrl_course.local.apicall import JSON, ApiCall

logger = logging.getLogger(__name__)

# IAM SimulatePrincipalPolicy


def simulate_principal_policy(call: ApiCall, iam: Any) -> JSON:
    """Evaluate the principal's policies as stored in moto: allowed unless explicitly denied.

    Deliberately simple: Deny statements whose Action/NotAction and Resource/NotResource match
    give `explicitDeny`; everything else is `allowed` (conditions, boundaries, SCPs and the
    missing-Allow case are ignored). That is enough for the SDK's role pre-checks, which only
    block on a definite denial; it is not a policy evaluator to learn IAM from.
    """
    params = call.params
    documents = [json.loads(p) for p in params.get("PolicyInputList") or []]
    documents += _principal_policies(iam, params["PolicySourceArn"])
    resources = params.get("ResourceArns") or ["*"]
    results = []
    for action in params["ActionNames"]:
        for resource in resources:
            denied = [s for d in documents for s in _statements(d) if s.get("Effect") == "Deny" and _matches(s, action, resource)]
            results.append(
                {
                    "EvalActionName": action,
                    "EvalResourceName": resource,
                    "EvalDecision": "explicitDeny" if denied else "allowed",
                    "MatchedStatements": [],
                    "MissingContextValues": [],
                }
            )
    return {"EvaluationResults": results, "IsTruncated": False}


def _principal_policies(iam: Any, arn: str) -> list[JSON]:
    kind_and_name = arn.split(":", 5)[-1]
    kind, _, path_name = kind_and_name.partition("/")
    name = path_name.rsplit("/", 1)[-1]
    try:
        if kind == "role":
            attached = iam.list_attached_role_policies(RoleName=name)["AttachedPolicies"]
            inline = [iam.get_role_policy(RoleName=name, PolicyName=p)["PolicyDocument"] for p in iam.list_role_policies(RoleName=name)["PolicyNames"]]
        elif kind == "user":
            attached = iam.list_attached_user_policies(UserName=name)["AttachedPolicies"]
            inline = [iam.get_user_policy(UserName=name, PolicyName=p)["PolicyDocument"] for p in iam.list_user_policies(UserName=name)["PolicyNames"]]
            for group in iam.list_groups_for_user(UserName=name)["Groups"]:
                attached += iam.list_attached_group_policies(GroupName=group["GroupName"])["AttachedPolicies"]
                inline += [iam.get_group_policy(GroupName=group["GroupName"], PolicyName=p)["PolicyDocument"] for p in iam.list_group_policies(GroupName=group["GroupName"])["PolicyNames"]]
        else:
            raise ServiceError("InvalidInput", f"PolicySourceArn {arn} must be an IAM user, group or role ARN.")
    except ServiceError:
        raise
    except Exception:
        raise ServiceError("NoSuchEntity", f"The principal {arn} cannot be found.", 404) from None
    documents = []
    for policy in attached:
        version = iam.get_policy(PolicyArn=policy["PolicyArn"])["Policy"]["DefaultVersionId"]
        documents.append(iam.get_policy_version(PolicyArn=policy["PolicyArn"], VersionId=version)["PolicyVersion"]["Document"])
    documents += inline
    return [json.loads(unquote(d)) if isinstance(d, str) else d for d in documents]


def _statements(document: Mapping[str, Any]) -> list[JSON]:
    statements = document.get("Statement") or []
    return [statements] if isinstance(statements, dict) else list(statements)


def _as_list(value: Any) -> list[str]:
    return [value] if isinstance(value, str) else list(value or [])


def _matches(statement: Mapping[str, Any], action: str, resource: str) -> bool:
    def any_match(patterns: list[str], value: str) -> bool:
        return any(fnmatch.fnmatchcase(value.lower(), p.lower()) for p in patterns)

    if "NotAction" in statement:
        action_ok = not any_match(_as_list(statement["NotAction"]), action)
    else:
        action_ok = any_match(_as_list(statement.get("Action")), action)
    if "NotResource" in statement:
        resource_ok = not any_match(_as_list(statement["NotResource"]), resource)
    else:
        resource_ok = any_match(_as_list(statement.get("Resource", "*")), resource) or resource == "*"
    return action_ok and resource_ok


