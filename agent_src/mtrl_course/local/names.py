"""The names of the offline world a caller may need without starting it: lanes, faults, defaults.

Stated once here and imported by the modules that use them (`runner`, `agent_server`, `no_server`,
`mlflow_apps`) and by the face (`mtrl_course.local`), so step modules and notebooks read them
as `local.FAULT_RESTART` without importing the runner (several seconds) or anything else heavy.
Standard library only.
"""

from __future__ import annotations

# How an offline job plays its rollouts: in-process (fast) or through the served agent (full).
LANE_FAST, LANE_FULL = "fast", "full"
LANES = (LANE_FAST, LANE_FULL)
# The service's failure modes the walkthrough names, injectable into an offline job.
FAULT_AUTH, FAULT_AGENT_ERROR, FAULT_MISSING_REWARD, FAULT_RESTART = (
    "auth_failure",
    "agent_error",
    "missing_reward",
    "runtime_restart",
)
FAULTS = (FAULT_AUTH, FAULT_AGENT_ERROR, FAULT_MISSING_REWARD, FAULT_RESTART)

# The name a local runtime gets when none is given.
DEFAULT_RUNTIME_NAME = "WordleMTRL"
# A guess at AgentCore's message (the Python SDK does not contain it).
INIT_TIMEOUT_MESSAGE = (
    "Runtime initialization time exceeded. Please make sure that initialization completes in {seconds:g}s."
)

# The runtime whose program never serves HTTP (notebook 03). Offline its wait is shortened, so the
# lesson shows the failure in seconds.
OFFLINE_INIT_TIMEOUT_S = 3.0
# The walkthrough's broken decorator stack: the handler is wrapped for the training service but
# nothing creates a BedrockAgentCoreApp, so running the file starts no HTTP server at all.
NO_ENTRYPOINT_PROGRAM = """\
from sagemaker.train.rft import sagemaker_rft_handler


@sagemaker_rft_handler
def handle_rollout(payload):
    return {"reward": -1.5}
"""
NO_SERVER_NAME = "WordleMTRL_NoEntrypoint"

# `mlflow ui` workers: the default four made it take 40 s to answer on the 2-core machine, one
# takes about 9 s (measured); a single local reader needs no more.
MLFLOW_UI_WORKERS = "1"
