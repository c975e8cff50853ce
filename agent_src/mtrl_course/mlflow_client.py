"""The one way the course reads MLflow: a client for an MLflow app's ARN that the plugin can sign.

Live, an MLflow app ARN works as a tracking URI through the sagemaker-mlflow plugin (0.5.0). Its
request-header provider (the `x-sm-mlflow-app-arn` routing header) and its auth provider (the
SigV4 signature's Region and service) both read the *global* tracking URI,
`mlflow.get_tracking_uri()`, at the moment each request is sent; the URI given to
`MlflowClient(tracking_uri=...)` only chooses the host. So a bare `MlflowClient(tracking_uri=arn)`
fails before any request leaves (IndexError: the plugin splits MLflow's default URI as an ARN),
and once the global URI names another app (a lab learner who read their own app, then the
instructor's) the request goes out routed and signed for that other app. Offline the ARN scheme is
served by local sqlite stores that never reach the plugin, so offline runs cannot show either.

`client(arn)` returns an MLflow client whose every call first points the global tracking URI at
its own ARN, as the AWS documentation's `mlflow.set_tracking_uri(arn)` does once. The global URI
is left pointing at the app last read (the SDK's own MLflow helpers leave it set the same way).
`tests/test_mlflow_plugin.py` loads the real plugin with HTTP stubbed and reads through every
public path that uses this.
"""

from __future__ import annotations

import functools
from typing import Any

ARN_SCHEME = "arn:"


def point_global_uri_at(tracking_uri: str) -> None:
    """Make `tracking_uri` MLflow's global tracking URI if it is an ARN (what the plugin signs for)."""
    if not tracking_uri.startswith(ARN_SCHEME):
        return  # a local store (sqlite, file) needs no plugin
    import mlflow

    if mlflow.get_tracking_uri() != tracking_uri:
        mlflow.set_tracking_uri(tracking_uri)


class AppClient:
    """An `mlflow.tracking.MlflowClient` for one tracking URI; each method call re-points the
    global URI at it first (see the module docstring). Attributes are the client's own."""

    def __init__(self, tracking_uri: str) -> None:
        from mlflow.tracking import MlflowClient  # a 3 s import: only when MLflow is read

        self.tracking_uri = tracking_uri
        point_global_uri_at(tracking_uri)
        self._client = MlflowClient(tracking_uri=tracking_uri)

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._client, name)
        if not callable(attribute):
            return attribute

        @functools.wraps(attribute)
        def call(*args: Any, **kwargs: Any) -> Any:
            point_global_uri_at(self.tracking_uri)
            return attribute(*args, **kwargs)

        return call


def client(tracking_uri: str) -> AppClient:
    """An MLflow client for an MLflow app ARN (or a local store URI) that works with the plugin."""
    if not isinstance(tracking_uri, str) or not tracking_uri:
        raise ValueError(f"expected an MLflow tracking URI (an MLflow app ARN); got {tracking_uri!r}")
    return AppClient(tracking_uri)
