"""Step 3: invoke the deployed runtime once, by hand, before a training job spends anything.

The check sends the runtime a payload shaped like the training service's (the task string in
`prompt`, a fake `jobArn` and a `rolloutId` in `metadata`) through the same boto3 call live and
offline: `bedrock-agentcore` `invoke_agent_runtime`. A healthy chain answers `{"reward": -1.5}`:
the agent parsed the task, signed a bearer token, asked the Job Runtime for the policy model and
was told 400 "Could not find job" (the job is fake), so no guess was ever made and the game pays
the no-play reward. The job ARN must name your own account: for another account's ARN the Job
Runtime answers 403 before it looks the job up.

`diagnose()` is the walkthrough's diagnosis table as a function: it maps what an invocation
showed (status, error, reward, log lines) to a cause and a fix. Offline, each row can be produced
for real: the local runtime serves the real agent app against the Job Runtime emulator, and its
log lines are captured during the call; `NoServerRuntime` runs an entrypoint without
`@app.entrypoint`, which never serves HTTP, so the invocation times out (after a few seconds
offline; AgentCore waits 30 s).
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

from mtrl_course import aws, config, dataset, deploy, iam, naming

# The no-server runtime is an offline stand-in (local.no_server); notebook 03 reaches it here, so
# smoke re-exports it (`as` marks a re-export). The face of local/ imports only its names at load
# time, so this costs nothing.
from mtrl_course.local import NO_ENTRYPOINT_PROGRAM as NO_ENTRYPOINT_PROGRAM
from mtrl_course.local import NO_SERVER_NAME as NO_SERVER_NAME
from mtrl_course.local import OFFLINE_INIT_TIMEOUT_S as OFFLINE_INIT_TIMEOUT_S
from mtrl_course.local import NoServerRuntime as NoServerRuntime

# --- the service's rules and answers ------------------------------------------------------------
# AgentCore's runtimeSessionId: 33 to 256 characters (botocore checks the minimum before sending).
SESSION_ID_MIN, SESSION_ID_MAX = 33, 256
SESSION_ID_PREFIX = "mtrl-smoke"
# What the agent returns for a game in which no guess was made (wordle_agent.reward.NO_PLAY_REWARD;
# repeated here so this module does not import the agent).
EXPECTED_REWARD = -1.5
JOB_NOT_FOUND_TEXT = "Could not find job"
OTHER_ACCOUNT_TEXT = "not authorized to access this resource"
# The missing-policy denial names an IAM action the runtime role may not perform.
MISSING_POLICY_TEXTS = ("not authorized to perform", "AccessDenied")
NO_SERVER_TEXTS = ("initialization time exceeded", "Read timeout", "timed out")
SESSION_ID_TEXT = "runtimeSessionId"
RUNTIME_POLICY = iam.RUNTIME_POLICY_NAME

# --- timeouts -----------------------------------------------------------------------------------
# AgentCore waits this long for a runtime's HTTP server before failing the invocation.
AGENTCORE_INIT_TIMEOUT_S = 30.0
# Live: a cold runtime imports the agent (tens of seconds) before it answers.
LIVE_READ_TIMEOUT_S = 120.0
CONNECT_TIMEOUT_S = 10.0

# --- logs ---------------------------------------------------------------------------------------
# The agent's own progress lines (parsed task, token signed, policy errors, CompleteRollout).
AGENT_LOGGERS = ("wordle_agent", "sagemaker.train.rft")
# Offline only: the Job Runtime emulator's view of the same calls (what the service would log).
JOB_RUNTIME_LOGGER = "mtrl_course.local.job_runtime_emulator"
AGENT_SOURCE = "agent"
JOB_RUNTIME_SOURCE = "Job Runtime (offline stand-in)"
CLOUDWATCH_SOURCE = "runtime log (CloudWatch)"
LOG_GROUP_FORMAT = "/aws/bedrock-agentcore/runtimes/{runtime_id}-{qualifier}"
DEFAULT_QUALIFIER = "DEFAULT"
LOG_MESSAGE_CHARS = 150
# Numbers that change from run to run in the agent's summary line; blanked in tables.
VOLATILE = re.compile(r"\belapsed=\d+(?:\.\d+)?s\b")
# A loopback address's port is picked by the operating system per run; a table shows it blanked
# so that a filter on a status code ("403") never matches a port number by chance.
LOOPBACK_PORT = re.compile(r"\b(127\.0\.0\.1|localhost):\d+\b")
LIVE_LOG_LIMIT = 100
# The runtime's answer inside any text (a pasted CLI output, a log excerpt).
REWARD_IN_TEXT = re.compile(r'"reward"\s*:\s*(-?\d+(?:\.\d+)?)')
RUNTIME_ARN = re.compile(
    r"^arn:aws[a-z-]*:bedrock-agentcore:(?P<region>[a-z0-9-]+):(?P<account>\d{12}):runtime/(?P<id>[A-Za-z0-9_-]+)$"
)


# ----------------------------------------------------------------------------------- the payload
def smoke_payload(account_id: str, region: str | None = None, *, session: Any | None = None) -> dict:
    """The service-shaped payload with `account_id` and your Region in the fake job ARN.

    The Region defaults to the session's (where your runtime and jobs are): the Job Runtime in
    that Region answers 400 "Could not find job" only for a job ARN of its own Region, so a
    fixed us-east-1 ARN would send a learner elsewhere down the wrong row of the diagnosis table.
    """
    if region is None:
        region = aws.session_or_new(session).region_name or config.OFFLINE_REGION
    return dataset.smoke_payload(account_id, region)


def job_arn_region(payload: Mapping[str, Any]) -> str | None:
    """The Region of the payload's fake `metadata.jobArn` (None when it has none)."""
    arn = str(
        ((payload.get("metadata") or {}) if isinstance(payload.get("metadata"), Mapping) else {}).get("jobArn") or ""
    )
    parts = arn.split(":")
    return parts[3] if len(parts) > 5 and parts[2] == "sagemaker" else None


def runtime_session_id(prefix: str = SESSION_ID_PREFIX) -> str:
    """A fresh runtime session id: `<prefix>-<32 hex digits>`, within AgentCore's 33 to 256 characters."""
    session_id = f"{prefix}-{uuid.uuid4().hex}"
    if not SESSION_ID_MIN <= len(session_id) <= SESSION_ID_MAX:
        raise ValueError(
            f"prefix {prefix[:40]!r} makes a session id of {len(session_id)} characters; AgentCore takes "
            f"{SESSION_ID_MIN} to {SESSION_ID_MAX}"
        )
    return session_id


def caller_account(session: Any | None = None) -> str:
    """The account the credentials belong to (offline: moto's 123456789012)."""
    return aws.session_or_new(session).client("sts").get_caller_identity()["Account"]


def runtime_region(runtime_arn: str) -> str:
    match = RUNTIME_ARN.match(runtime_arn or "")
    if not match:
        raise ValueError(
            f"{naming.mask_account(runtime_arn)!r} is not an AgentCore runtime ARN (…:runtime/<name>-<id>)"
        )
    return match["region"]


# ---------------------------------------------------------------------------------- the runtime
def find_runtime_arn(session: Any | None = None, name: str | None = None) -> str:
    """The ARN of the course's runtime (`deploy.deployed_runtime_name()`), from ListAgentRuntimes.

    Live that is the runtime `agentcore deploy` created (notebook 02); offline, the local runtime
    started by `local_runtime()`. Raises LookupError saying which of the two is missing.
    """
    wanted = name or deploy.deployed_runtime_name()
    control = aws.session_or_new(session).client("bedrock-agentcore-control")
    token = None
    while True:
        page = control.list_agent_runtimes(**({"nextToken": token} if token else {}))
        for runtime in page.get("agentRuntimes", []):
            if runtime.get("agentRuntimeName") == wanted:
                return runtime["agentRuntimeArn"]
        token = page.get("nextToken")
        if not token:
            break
    where = (
        "deploy it with `agentcore deploy` (notebook 02)" if config.is_live() else "start it with smoke.local_runtime()"
    )
    raise LookupError(f"no AgentCore runtime named {wanted} in this account and Region: {where}")


def local_runtime(*, start: bool = True, name: str | None = None) -> Any:
    """Offline: the real Wordle agent app served on loopback under the deployed runtime's name.

    The runtime gets the environment variables `agentcore.json` gives the deployed one, plus
    `RFT_RUNTIME_ENDPOINT` pointing at the process's Job Runtime emulator (which trusts the offline
    credentials the agent signs its tokens with). A runtime of the same name started earlier in
    this process is closed first. Live this raises: the runtime is the one `agentcore deploy` made.
    """
    if config.is_live():
        raise RuntimeError(
            "local_runtime() is offline only; live, invoke the runtime agentcore deploy created (find_runtime_arn())"
        )
    from wordle_agent.rollout import RUNTIME_ENDPOINT_ENV

    from mtrl_course import local

    aws.session()  # starts the offline backend if nothing has yet

    name = name or deploy.deployed_runtime_name()
    emulator = local.job_runtime().serve()
    variables = {item["name"]: item["value"] for item in deploy.agent_runtime(deploy.load_project()).get("envVars", [])}
    variables[RUNTIME_ENDPOINT_ENV] = emulator.endpoint
    runtime_id = local.runtime_id_for(name)
    for earlier in local.local_runtimes():
        if earlier.runtime_id == runtime_id:
            earlier.close()
    runtime = local.agent_runtime(name, variables)
    return runtime.start() if start else runtime


# ------------------------------------------------------------------------------- the invocation
@dataclass(frozen=True)
class LogLine:
    source: str
    level: str
    message: str


@dataclass(frozen=True)
class SmokeResult:
    """One invocation: what came back, how long it took, and (offline) what was logged meanwhile."""

    runtime_arn: str
    session_id: str
    job_arn: str | None
    status: int | None  # HTTP status of the answer; None when the call failed before one
    body: str  # the runtime's answer as text ("" when there was none)
    reward: float | None
    elapsed: float
    error_code: str | None = None
    error_message: str | None = None
    logs: tuple[LogLine, ...] = field(default_factory=tuple)

    @property
    def ok(self) -> bool:
        """The expected proof: reward -1.5 and the Job Runtime's 400 "Could not find job"."""
        return diagnose_row(self) is WORKS

    def with_logs(self, lines: Sequence[LogLine]) -> SmokeResult:
        """The same result with more log lines (live: the runtime's CloudWatch lines)."""
        return replace(self, logs=self.logs + tuple(lines))

    def summary(self) -> dict[str, Any]:
        """item -> value for a notebook table (accounts masked)."""
        rows = {
            "runtime": self.runtime_arn,
            "session id length": len(self.session_id),
            "job ARN in the payload": self.job_arn or "-",
            "HTTP status": self.status if self.status is not None else "-",
            "answer": self.body or "-",
            "reward": self.reward if self.reward is not None else "-",
            "error": f"{self.error_code}: {self.error_message}" if self.error_code else "-",
        }
        return {key: naming.mask_account(value) if isinstance(value, str) else value for key, value in rows.items()}

    def log_table(self, max_chars: int = LOG_MESSAGE_CHARS) -> list[dict[str, str]]:
        """The log lines as rows (source, level, message), shortened; accounts masked, timings and loopback ports blanked."""
        rows = []
        for line in self.logs:
            message = VOLATILE.sub("elapsed=…", naming.mask_account(line.message))
            message = LOOPBACK_PORT.sub(r"\1:<port>", message)
            if len(message) > max_chars:
                message = message[: max_chars - 1] + "…"
            rows.append({"source": line.source, "level": line.level, "message": message})
        return rows


class _Capture(logging.Handler):
    """Collects records from the agent's loggers (and the emulator's) during one invocation."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[LogLine] = []
        self._guard = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        source = JOB_RUNTIME_SOURCE if record.name.startswith(JOB_RUNTIME_LOGGER) else AGENT_SOURCE
        with self._guard:
            self.lines.append(LogLine(source, record.levelname, record.getMessage()))


@contextmanager
def capture_runtime_logs() -> Iterator[list[LogLine]]:
    """Collect the in-process runtime's log lines (INFO and up) while the block runs.

    Offline the runtime serves in this process, so its loggers are ours to read. The lines go to
    the returned list only, not to the notebook's stderr, and the loggers are restored afterwards.
    """
    handler = _Capture()
    saved = []
    for name in (*AGENT_LOGGERS, JOB_RUNTIME_LOGGER):
        logger = logging.getLogger(name)
        saved.append((logger, logger.level, logger.propagate))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        logger.propagate = False
    try:
        yield handler.lines
    finally:
        for logger, level, propagate in saved:
            logger.removeHandler(handler)
            logger.setLevel(level)
            logger.propagate = propagate


def _reward_of(body: str) -> float | None:
    try:
        value = json.loads(body)
    except ValueError:
        return None
    reward = value.get("reward") if isinstance(value, dict) else None
    if isinstance(reward, bool) or not isinstance(reward, (int, float)):
        return None
    return float(reward)


def invoke_smoke(
    runtime_arn: str,
    payload: Mapping[str, Any] | bytes,
    session: Any | None = None,
    *,
    timeout: float = LIVE_READ_TIMEOUT_S,
    session_id: str | None = None,
    qualifier: str | None = None,
    validate: bool = True,
) -> SmokeResult:
    """Invoke the runtime once with `payload` (boto3 `invoke_agent_runtime`) and report what happened.

    Never raises for what the diagnosis table covers: a service error, a client-side validation
    error or a timeout is returned in `error_code`/`error_message`. `timeout` is the read timeout
    of the live call. `validate=False` skips botocore's client-side parameter checks, so a bad
    session id reaches the service (and its ValidationException) instead of failing locally.
    Offline, the runtime's log lines during the call are in `logs`.
    """
    from botocore.config import Config
    from botocore.exceptions import (
        ClientError,
        ConnectTimeoutError,
        ParamValidationError,
        ReadTimeoutError,
    )

    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    try:
        job_arn = json.loads(body).get("metadata", {}).get("jobArn")
    except (ValueError, AttributeError):
        job_arn = None
    if isinstance(payload, Mapping):
        arn_region, runtime_at = job_arn_region(payload), RUNTIME_ARN.match(runtime_arn or "")
        if arn_region and runtime_at and arn_region != runtime_at["region"]:
            # The answer would be about the wrong Region's Job Runtime, not about this runtime.
            raise ValueError(
                f"the payload's fake jobArn is in {arn_region} but the runtime is in {runtime_at['region']}: "
                f"build it with smoke_payload(account, region={runtime_at['region']!r})"
            )
    session_id = runtime_session_id() if session_id is None else session_id
    client = aws.session_or_new(session).client(
        "bedrock-agentcore",
        config=Config(
            read_timeout=timeout,
            connect_timeout=CONNECT_TIMEOUT_S,
            retries={"total_max_attempts": 1},
            parameter_validation=validate,
        ),
    )
    request: dict[str, Any] = {
        "agentRuntimeArn": runtime_arn,
        "payload": body,
        "runtimeSessionId": session_id,
        "contentType": "application/json",
        "accept": "application/json",
    }
    if qualifier:
        request["qualifier"] = qualifier
    fields: dict[str, Any] = {}
    started = time.perf_counter()
    with capture_runtime_logs() if not config.is_live() else _no_capture() as lines:
        try:
            response = client.invoke_agent_runtime(**request)
            text = response["response"].read().decode("utf-8", errors="replace")
            status = response.get("statusCode") or response["ResponseMetadata"]["HTTPStatusCode"]
            fields = {"status": int(status), "body": text, "reward": _reward_of(text)}
        except ClientError as error:
            details = error.response.get("Error", {})
            fields = {
                "status": error.response.get("ResponseMetadata", {}).get("HTTPStatusCode"),
                "error_code": details.get("Code", "ClientError"),
                "error_message": details.get("Message", str(error)),
            }
        except ParamValidationError as error:
            fields = {"error_code": "ParamValidationError", "error_message": " ".join(str(error).split())}
        except (ReadTimeoutError, ConnectTimeoutError) as error:
            fields = {"error_code": type(error).__name__, "error_message": str(error)}
    elapsed = time.perf_counter() - started
    return SmokeResult(
        runtime_arn=runtime_arn,
        session_id=session_id,
        job_arn=job_arn,
        status=fields.get("status"),
        body=fields.get("body", ""),
        reward=fields.get("reward"),
        elapsed=elapsed,
        error_code=fields.get("error_code"),
        error_message=fields.get("error_message"),
        logs=tuple(lines),
    )


@contextmanager
def _no_capture() -> Iterator[list[LogLine]]:
    # Live, the runtime runs in AgentCore: its lines are in CloudWatch (runtime_logs()).
    yield []


def stop_session(runtime_arn: str, session_id: str, session: Any | None = None) -> None:
    """Live: end the smoke test's runtime session now instead of at its idle timeout."""
    aws.session_or_new(session).client("bedrock-agentcore").stop_runtime_session(
        agentRuntimeArn=runtime_arn, runtimeSessionId=session_id
    )


def runtime_log_group(runtime_arn: str, qualifier: str = DEFAULT_QUALIFIER) -> str:
    """The CloudWatch log group of a runtime endpoint (aws-docs.md §1.5)."""
    match = RUNTIME_ARN.match(runtime_arn or "")
    if not match:
        raise ValueError(f"{naming.mask_account(runtime_arn)!r} is not an AgentCore runtime ARN")
    return LOG_GROUP_FORMAT.format(runtime_id=match["id"], qualifier=qualifier)


def runtime_logs(
    runtime_arn: str,
    since: float,
    session: Any | None = None,
    *,
    qualifier: str = DEFAULT_QUALIFIER,
    limit: int = LIVE_LOG_LIMIT,
) -> list[LogLine]:
    """Live: the runtime's CloudWatch lines since `since` (epoch seconds). They arrive with a delay
    of seconds; call again if the smoke test's lines are not there yet."""
    logs = aws.session_or_new(session).client("logs")
    group = runtime_log_group(runtime_arn, qualifier)
    try:
        events = logs.filter_log_events(logGroupName=group, startTime=int(since * 1000), limit=limit)["events"]
    except Exception as error:
        code = getattr(error, "response", {}).get("Error", {}).get("Code", type(error).__name__)
        raise LookupError(f"cannot read the runtime's log group {naming.mask_account(group)}: {code}") from None
    return [LogLine(CLOUDWATCH_SOURCE, "", event["message"].strip()) for event in events]


# ------------------------------------------------------------------------------------ diagnosis
@dataclass(frozen=True)
class Diagnosis:
    """One row of the diagnosis table."""

    symptom: str
    cause: str
    fix: str


WORKS = Diagnosis(
    'reward -1.5, and the Job Runtime answered 400 "Could not find job"',
    "the chain works: the runtime started, the agent parsed the task, signed a bearer token and "
    "reached the Job Runtime, which has no such job (it is fake), so no guess was made",
    "nothing to fix: build the dataset (04), then launch training (05)",
)
OTHER_ACCOUNT = Diagnosis(
    '403 "not authorized to access this resource" from the Job Runtime',
    "the job ARN in the payload names another account: the Job Runtime refuses it before it "
    "checks whether the job exists",
    "put your own account ID into metadata.jobArn (smoke_payload(caller_account()))",
)
NO_SERVER = Diagnosis(
    "the invocation times out after 30 s (RuntimeClientError: initialization time exceeded)",
    "the runtime's HTTP server never starts: for example the handler carries @sagemaker_rft_handler "
    "but no @app.entrypoint of a BedrockAgentCoreApp (the SDK decorator starts no server), or app.run() is missing",
    "stack @app.entrypoint outermost and @sagemaker_rft_handler inside, end main.py with app.run(), "
    "redeploy (agentcore deploy)",
)
SHORT_SESSION = Diagnosis(
    "ValidationException (or botocore's ParamValidationError) on runtimeSessionId",
    f"the runtime session id is shorter than {SESSION_ID_MIN} characters",
    f"use an id of {SESSION_ID_MIN} to {SESSION_ID_MAX} characters (smoke.runtime_session_id())",
)
MISSING_POLICY = Diagnosis(
    "AccessDenied when the agent samples the policy (not authorized to perform ...)",
    f"the runtime's execution role lacks {RUNTIME_POLICY}, so sampling, CompleteRollout and UpdateReward are denied",
    f"attach {RUNTIME_POLICY} to the runtime role (agentcore.json additionalPolicies, then agentcore deploy)",
)
AGENT_ERROR = Diagnosis(
    "RuntimeClientError: the runtime answered with an error status",
    "the agent's code failed inside the container: an import error, or a handler under "
    "@sagemaker_rft_handler that takes (payload, context) and gets HTTP 500 on every call",
    "read the runtime's logs (smoke.runtime_logs()); the handler must take only `payload`",
)
UNCONFIRMED = Diagnosis(
    "reward -1.5, but no log lines to read",
    "the runtime answered as expected; only its logs tell the healthy 400 from a 403 (another "
    "account's job ARN) or an AccessDenied (missing policy)",
    "read the runtime's logs (smoke.runtime_logs(result.runtime_arn, since)) and diagnose again with them",
)
UNKNOWN = Diagnosis(
    "anything else",
    "not in the walkthrough's diagnosis table",
    "read the runtime's logs (CloudWatch group /aws/bedrock-agentcore/runtimes/<runtime id>-DEFAULT)",
)
DIAGNOSIS_TABLE = (WORKS, OTHER_ACCOUNT, NO_SERVER, SHORT_SESSION, MISSING_POLICY, AGENT_ERROR)


def _evidence(outcome: Any) -> tuple[str, str | None, float | None]:
    """(all text an outcome carries, its error code, its reward)."""
    if isinstance(outcome, SmokeResult):
        parts = [outcome.error_code or "", outcome.error_message or "", outcome.body]
        parts += [line.message for line in outcome.logs]
        return "\n".join(parts), outcome.error_code, outcome.reward
    if isinstance(outcome, BaseException):
        response = getattr(outcome, "response", None) or {}
        code = response.get("Error", {}).get("Code") or type(outcome).__name__
        return f"{code}\n{outcome}", code, None
    text = str(outcome)
    found = REWARD_IN_TEXT.search(text)
    return text, None, float(found.group(1)) if found else None


def diagnose_row(outcome: Any) -> Diagnosis:
    """The diagnosis-table row an outcome matches: a SmokeResult, an exception, or text (a log
    excerpt, an error message, the runtime's answer)."""
    text, code, reward = _evidence(outcome)
    lowered = text.lower()
    if SESSION_ID_TEXT.lower() in lowered and ("validation" in lowered or "length" in lowered):
        return SHORT_SESSION
    if any(t.lower() in lowered for t in NO_SERVER_TEXTS) or code in ("ReadTimeoutError", "ConnectTimeoutError"):
        return NO_SERVER
    if OTHER_ACCOUNT_TEXT in lowered:
        return OTHER_ACCOUNT
    if any(t.lower() in lowered for t in MISSING_POLICY_TEXTS):
        return MISSING_POLICY
    if code == "RuntimeClientError" or "runtimeclienterror" in lowered:
        return AGENT_ERROR
    expected = reward is not None and abs(reward - EXPECTED_REWARD) < 1e-9
    if expected and JOB_NOT_FOUND_TEXT.lower() in lowered:
        return WORKS
    if expected and isinstance(outcome, SmokeResult) and not outcome.logs:
        return UNCONFIRMED
    return UNKNOWN


def diagnose(outcome: Any) -> tuple[str, str]:
    """(cause, fix) for what an invocation showed; see `DIAGNOSIS_TABLE`."""
    row = diagnose_row(outcome)
    return row.cause, row.fix


def diagnosis_table() -> list[dict[str, str]]:
    """The table as rows (symptom, cause, fix), for a notebook."""
    return [{"symptom": d.symptom, "cause": d.cause, "fix": d.fix} for d in DIAGNOSIS_TABLE]
