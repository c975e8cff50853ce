"""What a local stand-in receives for one routed AWS call, and the small helpers they share.

The seam (`mtrl_course.aws`) builds an `ApiCall` for every botocore call it routes to a stand-in.
`ApiCall.original()` sends the call on to moto as if there were no override; the seam installs
the function that does that (`set_original`), so stand-ins never import the seam.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from mtrl_course import config

JSON = dict[str, Any]

_ORIGINAL: Callable[[Any, str, dict[str, Any]], Any] | None = None


def set_original(make_api_call: Callable[[Any, str, dict[str, Any]], Any]) -> None:
    """Called by the seam with botocore's own `_make_api_call` (the path to moto)."""
    global _ORIGINAL
    _ORIGINAL = make_api_call


@dataclass
class ApiCall:
    """One routed call: what a local implementation gets."""

    client: Any
    service: str
    operation: str
    params: dict[str, Any]

    @property
    def region(self) -> str:
        return self.client.meta.region_name or config.OFFLINE_REGION

    def original(self, params: Mapping[str, Any] | None = None) -> Any:
        """Send this call (or these params) on to moto, as if there were no override."""
        if _ORIGINAL is None:
            raise RuntimeError("the offline API override is not installed (call mtrl_course.aws.session() first)")
        return _ORIGINAL(self.client, self.operation, dict(self.params if params is None else params))


def now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def short_id(text: str, length: int) -> str:
    """A stable id of letters and digits derived from `text` (deterministic ARNs, reproducible outputs)."""
    digest = base64.b32encode(hashlib.sha256(text.encode()).digest()).decode().lower()
    return digest[:length]
