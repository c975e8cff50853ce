"""IAM identity-policy evaluation, as IAM decides: explicit deny wins, then allow, else implicit deny.

One evaluator for the whole toolkit: `iam` (step 1's caller-policy table) and the offline
IAM SimulatePrincipalPolicy (`local.iam_simulator`) both use it, so what the course teaches about a
policy and what the offline SDK role checks see cannot drift apart.

Covers what the course's and AWS's managed policies use: Allow/Deny, Action/NotAction and
Resource/NotResource with wildcards, and the String, Arn and Bool condition operators (with
...IfExists). Like IAM's policy simulator, a condition whose key is not in the request context
does not match (the key is reported as missing), so an unconditioned Allow is the only thing
that allows a request made without context. It is not IAM: no boundaries, no SCPs, no resource
policies, no session policies.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

ALLOWED, EXPLICIT_DENY, IMPLICIT_DENY = "allowed", "explicitDeny", "implicitDeny"

_VARIABLE = re.compile(r"\$\{([^}]+)\}")
_SUPPORTED_BASES = (
    "StringEquals",
    "StringNotEquals",
    "StringEqualsIgnoreCase",
    "StringLike",
    "StringNotLike",
    "ArnEquals",
    "ArnNotEquals",
    "ArnLike",
    "ArnNotLike",
    "Bool",
)


def as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return [value] if isinstance(value, (str, dict)) else list(value)


def statements(document: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [s for s in as_list(document.get("Statement")) if isinstance(s, Mapping)]


def action_matches(patterns: Sequence[str], action: str) -> bool:
    # IAM action names are case-insensitive; wildcards * and ? as in fnmatch.
    return any(fnmatch.fnmatchcase(action.lower(), str(p).lower()) for p in patterns)


def _resolve_variables(pattern: str, context: Mapping[str, Sequence[str]], missing: set[str]) -> str | None:
    """`${aws:PrincipalAccount}` and friends from the context; None when one is not there."""
    unresolved = False

    def replace(match: re.Match[str]) -> str:
        nonlocal unresolved
        values = context.get(match.group(1))
        if not values:
            missing.add(match.group(1))
            unresolved = True
            return ""
        return str(values[0])

    resolved = _VARIABLE.sub(replace, pattern)
    return None if unresolved else resolved


def _condition_holds(
    operator: str, key: str, expected: Any, context: Mapping[str, Sequence[str]], missing: set[str]
) -> bool:
    base = operator.removesuffix("IfExists")
    if base not in _SUPPORTED_BASES:
        raise ValueError(f"condition operator {operator!r} is not supported by the course's policy evaluator")
    values = [str(v) for v in context.get(key, ())]
    if not values:
        if operator.endswith("IfExists"):
            return True
        missing.add(key)
        # A missing key satisfies only the negated operators.
        return base.endswith(("NotEquals", "NotLike"))
    wanted = [w for w in (_resolve_variables(str(v), context, missing) for v in as_list(expected)) if w is not None]
    if base in ("StringEquals", "ArnEquals"):
        return any(v in wanted for v in values)
    if base == "StringEqualsIgnoreCase":
        return any(v.lower() in {w.lower() for w in wanted} for v in values)
    if base in ("StringLike", "ArnLike"):
        return any(fnmatch.fnmatchcase(v, w) for v in values for w in wanted)
    if base in ("StringNotEquals", "ArnNotEquals"):
        return all(v not in wanted for v in values)
    if base in ("StringNotLike", "ArnNotLike"):
        return not any(fnmatch.fnmatchcase(v, w) for v in values for w in wanted)
    return any(v.lower() in {w.lower() for w in wanted} for v in values)  # Bool


def _resource_matches(
    patterns: Sequence[Any], resource: str, context: Mapping[str, Sequence[str]], missing: set[str]
) -> bool:
    for pattern in patterns:
        resolved = _resolve_variables(str(pattern), context, missing)
        # A request for "*" (no resource given) matches only a "*" statement, as in IAM's simulator.
        if resolved is not None and fnmatch.fnmatchcase(resource, resolved) and (resource != "*" or resolved == "*"):
            return True
    return False


def statement_applies(
    statement: Mapping[str, Any],
    action: str,
    resource: str,
    context: Mapping[str, Sequence[str]],
    missing: set[str] | None = None,
) -> bool:
    """Whether one statement matches the request (action, resource and every condition)."""
    missing = set() if missing is None else missing
    if "NotAction" in statement:
        if action_matches(as_list(statement["NotAction"]), action):
            return False
    elif not action_matches(as_list(statement.get("Action")), action):
        return False
    if "NotResource" in statement:
        if _resource_matches(as_list(statement["NotResource"]), resource, context, missing):
            return False
    elif not _resource_matches(as_list(statement.get("Resource", "*")), resource, context, missing):
        return False
    for operator, block in (statement.get("Condition") or {}).items():
        for key, expected in block.items():
            if not _condition_holds(operator, key, expected, context, missing):
                return False
    return True


@dataclass(frozen=True)
class Decision:
    """IAM's answer for one request, with what decided it."""

    decision: str
    matched: tuple[Mapping[str, Any], ...] = ()
    missing_context: tuple[str, ...] = field(default_factory=tuple)


def decide(
    documents: Sequence[Mapping[str, Any]],
    action: str,
    resource: str,
    context: Mapping[str, Sequence[str]] | None = None,
) -> Decision:
    """Evaluate identity policies for one request: explicit deny > allow > implicit deny."""
    context = context or {}
    allows: list[Mapping[str, Any]] = []
    missing: set[str] = set()
    for document in documents:
        for statement in statements(document):
            if not statement_applies(statement, action, resource, context, missing):
                continue
            if statement.get("Effect") == "Deny":
                return Decision(EXPLICIT_DENY, (statement,), tuple(sorted(missing)))
            if statement.get("Effect") == "Allow":
                allows.append(statement)
    if allows:
        return Decision(ALLOWED, tuple(allows), ())
    return Decision(IMPLICIT_DENY, (), tuple(sorted(missing)))


def evaluate_policy(
    documents: Sequence[Mapping[str, Any]],
    action: str,
    resource: str,
    context: Mapping[str, Sequence[str]] | None = None,
) -> str:
    """IAM's decision for one request against identity policies: allowed, explicitDeny or implicitDeny."""
    return decide(documents, action, resource, context).decision
