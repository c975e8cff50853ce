"""Usage telemetry off, in both modes, through each library's documented switch.

Telemetry here means a library reporting its own use to its vendor. Offline the network guard
would refuse it (and a blocked request can still cost a timeout); live it would be sent. Each
switch below was found where the installed package reads it:

| library | switch | read in |
|---|---|---|
| MLflow 3 | MLFLOW_DISABLE_TELEMETRY=true | mlflow/telemetry/utils.py `is_telemetry_disabled` |
| SageMaker SDK (sagemaker-core, -train) | SDK config `SageMaker.PythonSDK.Modules.TelemetryOptOut` | sagemaker/core/telemetry/telemetry_logging.py |
| SageMaker JumpStart | DISABLE_JUMPSTART_TELEMETRY | sagemaker/core/jumpstart/utils.py (user-agent model tags) |
| jupyter_builder's yarn | YARN_ENABLE_TELEMETRY=0 | jupyter_builder/jlpm.py |

The SageMaker SDK reads no telemetry environment variable (`SAGEMAKER_TELEMETRY_DISABLED` is read
nowhere in sagemaker-core 2.27); its opt-out lives in the SDK config file, which
SAGEMAKER_USER_CONFIG_OVERRIDE points at. Strands, bedrock-agentcore and OpenTelemetry send
nothing unless an exporter is configured; the deployed runtime's exporter (the ADOT distro) sends
traces to the learner's own CloudWatch, which is AgentCore observability, not vendor telemetry.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping
from pathlib import Path

TELEMETRY_ENV = {
    "MLFLOW_DISABLE_TELEMETRY": "true",
    "DISABLE_JUMPSTART_TELEMETRY": "1",
    "YARN_ENABLE_TELEMETRY": "0",
}
SDK_CONFIG_ENV_VAR = "SAGEMAKER_USER_CONFIG_OVERRIDE"
SDK_CONFIG_FILE = "sagemaker-sdk-config.yaml"
SDK_CONFIG_TEXT = "SchemaVersion: '1.0'\nSageMaker:\n  PythonSDK:\n    Modules:\n      TelemetryOptOut: true\n"


def switch_off(environ: MutableMapping[str, str] | None = None) -> None:
    """Set every environment switch, unless the learner set that variable already."""
    environ = os.environ if environ is None else environ
    for name, value in TELEMETRY_ENV.items():
        environ.setdefault(name, value)


def _default_sdk_config() -> Path:
    from platformdirs import user_config_dir

    return Path(user_config_dir("sagemaker")) / "config.yaml"


def sdk_opt_out(state_dir: Path, *, keep_user_config: bool) -> Path | None:
    """Point the SageMaker SDK at a config file that opts out of its telemetry; returns it.

    The override replaces the user's own SDK config file rather than adding to it, so live
    (`keep_user_config`) a learner who has one keeps it, and it decides (None is returned).
    """
    if SDK_CONFIG_ENV_VAR in os.environ:
        existing = Path(os.environ[SDK_CONFIG_ENV_VAR])
        if existing.name == SDK_CONFIG_FILE and not existing.is_file():
            # Our own file, removed with the state folder it lived in (a reset, a test's clean-up):
            # the SDK refuses to start with a missing config file, so write it again.
            existing.parent.mkdir(parents=True, exist_ok=True)
            existing.write_text(SDK_CONFIG_TEXT)
        return existing
    if keep_user_config and _default_sdk_config().is_file():
        return None
    state_dir.mkdir(parents=True, exist_ok=True)
    path = state_dir / SDK_CONFIG_FILE
    path.write_text(SDK_CONFIG_TEXT)
    os.environ[SDK_CONFIG_ENV_VAR] = str(path)
    return path
