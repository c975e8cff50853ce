"""The one error type every offline stand-in raises for a service error, in AWS's words; and the
one the course raises for a live refusal a learner can act on.

The seam turns a `ServiceError` into the botocore `ClientError` subclass for its `code`, so course
code catches the same exceptions offline as live. It lives outside `local/` because the service
spec (read in both modes) raises it for a hyperparameter the service would refuse.

`ActionableError` carries one sentence: what was refused, in AWS's words, and what to do. Jupyter
shows it as that one line, not a traceback (IPython's `_render_traceback_` hook), and the `mtrl`
command prints it as its error line.
"""

from __future__ import annotations


class ServiceError(Exception):
    """An error the service returns: the override layer raises it as botocore's ClientError."""

    def __init__(self, code: str, message: str, status_code: int = 400):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.status_code = status_code


def validation_error(message: str) -> ServiceError:
    return ServiceError("ValidationException", message)


def coral_errors(errors: list[str]) -> str:
    """AWS's validation-message style: 'N validation error(s) detected: a; b'."""
    count = len(errors)
    return f"{count} validation error{'s' if count != 1 else ''} detected: " + "; ".join(errors)


class ActionableError(RuntimeError):
    """A live call was refused for a reason the learner can act on; the message says what to do."""

    def _render_traceback_(self) -> list[str]:
        return [f"{type(self).__name__}: {self}"]


def aws_error_code(error: BaseException, *, or_type: bool = False) -> str:
    """The service's error code of a botocore ClientError; for anything else "", or with
    `or_type` the exception's class name (what a listing of failures shows)."""
    response = getattr(error, "response", None) or {}
    return str(response.get("Error", {}).get("Code", type(error).__name__ if or_type else ""))


def aws_refusal(error: BaseException) -> str:
    """`Operation: Code: message` of a botocore ClientError, on one line (else the error's text)."""
    response = getattr(error, "response", None) or {}
    details = response.get("Error", {})
    operation = getattr(error, "operation_name", "") or "the call"
    if details:
        message = " ".join(str(details.get("Message", "")).split())
        return f"{operation}: {details.get('Code', '?')}" + (f": {message}" if message else "")
    return " ".join(str(error).split()) or type(error).__name__
