"""The one error type every offline stand-in raises for a service error, in AWS's words.

The seam turns a `ServiceError` into the botocore `ClientError` subclass for its `code`, so course
code catches the same exceptions offline as live. It lives outside `local/` because the service
spec (read in both modes) raises it for a hyperparameter the service would refuse.
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
