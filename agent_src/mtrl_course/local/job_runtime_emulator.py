"""Offline stand-in for the SageMaker Job Runtime: the service the agent talks to during training.

During a real MTRL job the agent never calls the policy model directly. It calls the Job Runtime,
which authenticates a bearer token, routes the request to the job's policy, records every turn of
the trajectory, and later receives CompleteRollout and UpdateReward from the agent's handler. This
module plays that role on loopback so the *unchanged* SDK clients can be its callers:

- `sagemaker.train.rft.adapters.strands.wrap_model(OpenAIModel(...))` posts OpenAI chat
  completions to `{endpoint}/v1/chat/completions` (streaming or not) with the job and trajectory
  headers and `Authorization: Bearer sagemaker-api-key-...`;
- `RolloutFeedbackClient` (used by `@sagemaker_rft_handler`) posts `/complete-rollout` and
  `/update-reward` with the job ARN in the JSON body.

A job's policy is any object with `complete(request, trajectory) -> response`: it receives the
OpenAI request (with the temperature and max_tokens actually used filled in) and a snapshot of the
trajectory so far, and returns a non-streaming chat completion dict with `usage`. The emulator turns
that into server-sent events when the caller asked for a stream. A policy may put a `policy_trace`
key in its response (whatever it needs later for its gradient); the emulator records it with the
turn and never sends it to the caller.

The core (`sample`, `complete_rollout`, `update_reward`, `authenticate`) is callable in-process;
`serve()` adds the HTTP front end (uvicorn on 127.0.0.1, a free port). The completion a policy
returns is built by `mtrl_course.local.completions` (no HTTP there, so policies and trainers load
without uvicorn).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import re
import socket
import threading
import time
import uuid
import weakref
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import uvicorn

from mtrl_course.local.completions import POLICY_TRACE_KEY, approx_tokens, chat_completion
from mtrl_course.local.tokens import TokenError, parse_token, signature_matches

log = logging.getLogger(__name__)

# --- the service's wire contract (botocore `sagemakerjobruntime` 2026-02-01 and the SDK) -------
OPENAI_CHAT_PATH = "/v1/chat/completions"
SAMPLE_PATH = "/sample"
SAMPLE_STREAM_PATH = "/sample-with-response-stream"
COMPLETE_ROLLOUT_PATH = "/complete-rollout"
UPDATE_REWARD_PATH = "/update-reward"
SAMPLING_PATHS = (OPENAI_CHAT_PATH, SAMPLE_PATH, SAMPLE_STREAM_PATH)
JOB_ARN_HEADER = "x-amzn-sagemaker-job-arn"
TRAJECTORY_HEADER = "x-amzn-sagemaker-trajectory-id"
ERROR_TYPE_HEADER = "x-amzn-ErrorType"
REQUEST_ID_HEADER = "x-amzn-RequestId"
BEARER_SCHEME = "bearer"
# The job ARN pattern from the botocore service model: job/<category>/<name>.
JOB_ARN_RE = re.compile(
    r"^arn:aws[a-z\-]*:sagemaker:(?P<region>[a-z0-9\-]*):(?P<account>[0-9]{12}):"
    r"job/[a-zA-Z0-9_\-]+/[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$"
)
ACCOUNT_RE = re.compile(r"^[0-9]{12}$")
MAX_TRAJECTORY_ID_LEN = 256
COMPLETION_STATUSES = ("ready", "failed")
DEFAULT_COMPLETION_STATUS = "ready"

# Service error types and the exact messages the course teaches learners to recognise.
VALIDATION_ERROR = "ValidationException"
ACCESS_DENIED = "AccessDeniedException"
INTERNAL_ERROR = "InternalServiceError"
THROTTLING_ERROR = "ThrottlingException"
UNKNOWN_OPERATION = "UnknownOperationException"
AUTH_FAILED_MESSAGE = "Authentication failed"
NOT_AUTHORIZED_MESSAGE = "The caller is not authorized to access this resource"
JOB_NOT_FOUND_MESSAGE = "Could not find job"

# Trajectory states: created by its first call, sealed by CompleteRollout, closed by UpdateReward.
IN_PROGRESS = "in_progress"
REWARD_RECEIVED = "reward_received"

DEFAULT_TEMPERATURE = 1.0
# A token dated this far in the future is refused, like SigV4's clock-skew check.
MAX_CLOCK_SKEW_S = 300.0
REJECTION_LOG_SIZE = 10_000
SERVER_HOST = "127.0.0.1"
SERVER_START_TIMEOUT_S = 10.0
SERVER_STOP_TIMEOUT_S = 10.0


# Emulators serving over HTTP, by endpoint URL: how a local AgentCore runtime finds the Job
# Runtime its cut-off rollouts talk to (see `end_session`).
_SERVING: weakref.WeakValueDictionary[str, JobRuntimeEmulator] = weakref.WeakValueDictionary()
_SERVING_LOCK = threading.Lock()


def serving_emulator(endpoint: str) -> JobRuntimeEmulator | None:
    """The emulator in this process serving at `endpoint` (a base URL), or None."""
    with _SERVING_LOCK:
        return _SERVING.get(endpoint.rstrip("/"))


class JobRuntimeError(Exception):
    """A request the service refuses: HTTP status, AWS error type and message, plus a diagnostic.

    `detail` is the emulator's own explanation (for example why a token failed); it is logged and
    returned in the body beside the service's message, which stays exactly what the service says.
    """

    def __init__(self, status: int, error_type: str, message: str, detail: str | None = None) -> None:
        super().__init__(f"{status} {error_type}: {message}" + (f" ({detail})" if detail else ""))
        self.status = status
        self.error_type = error_type
        self.message = message
        self.detail = detail


class Policy(Protocol):
    def complete(self, request: dict, trajectory: TrajectoryRecord) -> dict: ...


@dataclass(frozen=True)
class SampleRecord:
    """One sampling call of a trajectory: what the agent sent and what the policy answered."""

    turn: int
    path: str
    stream: bool
    request: dict  # the OpenAI request body as received (messages, tools, params)
    temperature: float
    max_tokens: int | None
    top_p: float | None
    content: str | None
    reasoning: str | None
    tool_calls: tuple[dict, ...]  # {"id", "name", "arguments"} with arguments as the JSON string
    finish_reason: str | None
    prompt_tokens: int
    completion_tokens: int
    policy_trace: Any
    requested_at: float
    responded_at: float

    @property
    def messages(self) -> list[dict]:
        return self.request.get("messages", [])


@dataclass(frozen=True)
class TrajectoryRecord:
    """One rollout as the service saw it: a snapshot, so later calls never change it."""

    job_arn: str
    trajectory_id: str
    state: str  # in_progress | ready | failed | reward_received
    completion_status: str | None  # ready | failed once CompleteRollout arrived
    rewards: tuple[float, ...] | None
    samples: tuple[SampleRecord, ...]
    info: Mapping[str, Any]
    created_at: float
    completed_at: float | None
    rewarded_at: float | None

    @property
    def sample_count(self) -> int:
        return len(self.samples)

    @property
    def prompt_tokens(self) -> int:
        return sum(s.prompt_tokens for s in self.samples)

    @property
    def completion_tokens(self) -> int:
        return sum(s.completion_tokens for s in self.samples)

    @property
    def is_complete(self) -> bool:
        return self.completion_status is not None


@dataclass(frozen=True)
class TokenTotals:
    """Billable-token analogues: prefill (history re-read every turn) and sample (generated)."""

    prefill_tokens: int
    sample_tokens: int
    sample_requests: int
    trajectories: int


@dataclass(frozen=True)
class RejectedCall:
    at: float
    path: str
    job_arn: str | None
    trajectory_id: str | None
    status: int
    error_type: str
    message: str
    detail: str | None


@dataclass(frozen=True)
class HttpReply:
    status: int
    body: bytes
    content_type: str = "application/json"
    headers: tuple[tuple[str, str], ...] = ()


@dataclass
class _Credential:
    secret: str
    account: str
    session_token: str | None
    revoked: bool = False


@dataclass
class _Job:
    arn: str
    account: str
    policy: Policy
    default_temperature: float
    default_max_tokens: int | None
    closed_status: str | None = None
    fail_auth: bool = False
    injected_errors: deque = field(default_factory=deque)


@dataclass
class _Trajectory:
    job_arn: str
    trajectory_id: str
    created_at: float
    info: dict = field(default_factory=dict)
    state: str = IN_PROGRESS
    completion_status: str | None = None
    rewards: tuple[float, ...] | None = None
    samples: list[SampleRecord] = field(default_factory=list)
    completed_at: float | None = None
    rewarded_at: float | None = None
    complete_token: str | None = None
    reward_token: str | None = None
    ended: str | None = None  # why the agent's session ended (end_session); its calls are refused

    def snapshot(self) -> TrajectoryRecord:
        return TrajectoryRecord(
            job_arn=self.job_arn,
            trajectory_id=self.trajectory_id,
            state=self.state,
            completion_status=self.completion_status,
            rewards=self.rewards,
            samples=tuple(self.samples),
            info=dict(self.info),
            created_at=self.created_at,
            completed_at=self.completed_at,
            rewarded_at=self.rewarded_at,
        )


def _refuse_if_ended(traj: _Trajectory) -> None:
    if traj.ended is not None:
        raise _validation(
            f"Trajectory {traj.trajectory_id} no longer accepts requests: its agent session ended ({traj.ended})"
        )


def _validation(message: str, detail: str | None = None) -> JobRuntimeError:
    return JobRuntimeError(400, VALIDATION_ERROR, message, detail)


def _auth_failed(detail: str) -> JobRuntimeError:
    return JobRuntimeError(403, ACCESS_DENIED, AUTH_FAILED_MESSAGE, detail)


def job_arn_account(job_arn: str) -> str:
    """The account that owns a job ARN; ValueError naming the ARN if it is not a job ARN."""
    match = JOB_ARN_RE.match(job_arn)
    if not match:
        raise ValueError(
            f"{job_arn!r} is not a SageMaker job ARN "
            "(expected arn:aws:sagemaker:<region>:<12-digit account>:job/<category>/<name>)"
        )
    return match.group("account")


class JobRuntimeEmulator:
    """The Job Runtime on loopback: auth, routing to a job's policy, trajectory recording, feedback.

    Thread-safe. Use in-process, or `serve()` it (also as a context manager) and point the SDK at
    `.endpoint`. `clock` is injectable so tests can expire tokens without waiting.
    """

    def __init__(self, *, region: str | None = None, clock: Callable[[], float] = time.time) -> None:
        self.region = region  # when set, tokens signed for another Region fail, as they would live
        self.clock = clock
        self._lock = threading.RLock()
        self._credentials: dict[str, _Credential] = {}
        self._jobs: dict[str, _Job] = {}
        self._trajectories: dict[str, dict[str, _Trajectory]] = {}
        self._rejections: deque[RejectedCall] = deque(maxlen=REJECTION_LOG_SIZE)
        # Separate from the state lock so a starting server never blocks in-process callers.
        self._server_lock = threading.Lock()
        self._server: LoopbackServer | None = None

    # --- credentials ---------------------------------------------------------------------------
    def add_credentials(self, access_key: str, secret: str, account: str, *, session_token: str | None = None) -> None:
        """Trust tokens signed with this key pair, acting for `account` (12 digits)."""
        if not ACCOUNT_RE.match(account):
            raise ValueError(f"account {account!r} must be 12 digits")
        if not access_key or not secret:
            raise ValueError("access_key and secret must be non-empty")
        with self._lock:
            self._credentials[access_key] = _Credential(secret, account, session_token)

    def rotate_credentials(
        self, old_access_key: str, new_access_key: str | None = None, new_secret: str | None = None
    ) -> None:
        """Revoke a key (its tokens now fail); optionally trust a replacement for the same account."""
        with self._lock:
            old = self._credentials.get(old_access_key)
            if old is None:
                raise KeyError(f"no credentials registered for access key {old_access_key!r}")
            old.revoked = True
            if new_access_key is not None:
                if not new_secret:
                    raise ValueError("rotating to a new access key needs its secret as well")
                self._credentials[new_access_key] = _Credential(new_secret, old.account, None)

    def authenticate(self, authorization: str | None) -> str:
        """The account a bearer `Authorization` header (or bare token) acts for; 403 if invalid."""
        if not authorization:
            raise _auth_failed("no Authorization header")
        scheme, _, token = authorization.strip().partition(" ")
        if scheme.lower() != BEARER_SCHEME:
            token = authorization.strip()
        try:
            parsed = parse_token(token.strip())
        except TokenError as exc:
            raise _auth_failed(f"malformed token: {exc.reason}") from None
        with self._lock:
            cred = self._credentials.get(parsed.access_key)
            if cred is None:
                raise _auth_failed("token signed with an unknown access key")
            if cred.revoked:
                raise _auth_failed("token signed with rotated (revoked) credentials; sign a new one")
            secret, account, session_token = cred.secret, cred.account, cred.session_token
        if parsed.session_token != session_token:
            raise _auth_failed("token's security token does not match the credentials")
        if not signature_matches(parsed, secret):
            raise _auth_failed("signature does not match")
        if self.region is not None and parsed.region != self.region:
            raise _auth_failed(f"token signed for Region {parsed.region}, this endpoint is {self.region}")
        now = self.clock()
        if parsed.issued_at - now > MAX_CLOCK_SKEW_S:
            raise _auth_failed("token is dated in the future")
        if now >= parsed.expires_at:
            raise _auth_failed(f"token expired {now - parsed.expires_at:.0f} s ago")
        return account

    # --- jobs and trajectories -------------------------------------------------------------------
    def register_job(
        self,
        job_arn: str,
        policy: Policy,
        account: str | None = None,
        *,
        default_temperature: float = DEFAULT_TEMPERATURE,
        default_max_tokens: int | None = None,
    ) -> None:
        """Accept rollouts for `job_arn`, answered by `policy`; defaults fill what requests omit."""
        arn_account = job_arn_account(job_arn)
        if account is not None and account != arn_account:
            raise ValueError(f"account {account} does not own {job_arn} (its account is {arn_account})")
        if not callable(getattr(policy, "complete", None)):
            raise TypeError(f"policy {policy!r} has no complete(request, trajectory) method")
        with self._lock:
            if job_arn in self._jobs:
                raise ValueError(f"job {job_arn} is already registered")
            self._jobs[job_arn] = _Job(job_arn, arn_account, policy, default_temperature, default_max_tokens)
            self._trajectories[job_arn] = {}

    def set_policy(self, job_arn: str, policy: Policy) -> None:
        """Swap the policy answering a job's sampling calls (for example a new adapter snapshot)."""
        with self._lock:
            self._known_job(job_arn).policy = policy

    def close_job(self, job_arn: str, status: str = "Completed") -> None:
        """Stop accepting calls for the job (they get 400); its records stay queryable."""
        with self._lock:
            self._known_job(job_arn).closed_status = status

    def jobs(self) -> list[str]:
        with self._lock:
            return sorted(self._jobs)

    def start_trajectory(self, job_arn: str, trajectory_id: str, **info: Any) -> TrajectoryRecord:
        """Open a trajectory before its rollout is dispatched, with service-side facts (step, ...).

        Optional: a trajectory is also opened by its first call. Raises if it already exists.
        """
        with self._lock:
            self._known_job(job_arn)
            if trajectory_id in self._trajectories[job_arn]:
                raise ValueError(f"trajectory {trajectory_id} of {job_arn} already exists")
            traj = _Trajectory(job_arn, trajectory_id, self.clock(), dict(info))
            self._trajectories[job_arn][trajectory_id] = traj
            return traj.snapshot()

    def end_session(self, job_arn: str, trajectory_id: str, reason: str) -> TrajectoryRecord:
        """The agent session playing this trajectory is gone: refuse every later call for it.

        Live, a runtime restart kills the session's microVM, so its agent never calls again. A
        local runtime in thread mode cannot kill the threads of a cut-off invocation; it ends
        their session here instead, so nothing they report after the cut is recorded. The
        service side uses it too, for an attempt it has given up on. Returns the trajectory as it
        stood at the cut (a reward already recorded stays). KeyError for an unknown job.
        """
        with self._lock:
            self._known_job(job_arn)
            traj = self._open_trajectory(job_arn, trajectory_id)
            if traj.ended is None:
                traj.ended = reason
            return traj.snapshot()

    # --- failure hooks ---------------------------------------------------------------------------
    def fail_auth_for(self, job_arn: str, enabled: bool = True) -> None:
        """Make every sampling call of the job fail with 403 "Authentication failed" (or stop)."""
        with self._lock:
            self._known_job(job_arn).fail_auth = enabled

    def inject_sampling_errors(
        self,
        job_arn: str,
        count: int,
        *,
        status: int = 429,
        error_type: str = THROTTLING_ERROR,
        message: str = "Rate exceeded",
    ) -> None:
        """Fail the job's next `count` sampling calls with this error (throttling by default)."""
        with self._lock:
            job = self._known_job(job_arn)
            for _ in range(count):
                job.injected_errors.append(JobRuntimeError(status, error_type, message, "injected fault"))

    # --- queries ---------------------------------------------------------------------------------
    def trajectories(self, job_arn: str) -> list[TrajectoryRecord]:
        """Snapshots of every trajectory of the job, in the order they were opened."""
        with self._lock:
            return [t.snapshot() for t in self._job_trajectories(job_arn).values()]

    def trajectory(self, job_arn: str, trajectory_id: str) -> TrajectoryRecord:
        with self._lock:
            trajs = self._job_trajectories(job_arn)
            if trajectory_id not in trajs:
                raise KeyError(f"job {job_arn} has no trajectory {trajectory_id!r}")
            return trajs[trajectory_id].snapshot()

    def sample_count(self, job_arn: str, trajectory_id: str) -> int:
        with self._lock:
            traj = self._job_trajectories(job_arn).get(trajectory_id)
            return len(traj.samples) if traj else 0

    def token_totals(self, job_arn: str) -> TokenTotals:
        with self._lock:
            trajs = list(self._job_trajectories(job_arn).values())
            samples = [s for t in trajs for s in t.samples]
        return TokenTotals(
            prefill_tokens=sum(s.prompt_tokens for s in samples),
            sample_tokens=sum(s.completion_tokens for s in samples),
            sample_requests=len(samples),
            trajectories=len(trajs),
        )

    def rejections(self, job_arn: str | None = None) -> list[RejectedCall]:
        """Refused calls (most recent last), optionally only those naming `job_arn`."""
        with self._lock:
            return [r for r in self._rejections if job_arn is None or r.job_arn == job_arn]

    # --- the service operations, in-process -------------------------------------------------------
    def sample(
        self,
        job_arn: str,
        trajectory_id: str,
        request: dict,
        *,
        account: str | None = None,
        path: str = OPENAI_CHAT_PATH,
    ) -> dict:
        """One policy turn: returns the non-streaming chat completion (without the policy trace).

        `account` is the caller's account (from `authenticate`); None means a trusted in-process
        caller acting for the job's own account.
        """
        job = self._authorize(job_arn, trajectory_id, account, sampling=True)
        if not isinstance(request, dict) or not isinstance(request.get("messages"), list) or not request["messages"]:
            raise _validation("Request body must be a chat completion request with a non-empty 'messages' list")
        temperature, max_tokens = _sampling_params(request, job)
        started = self.clock()
        with self._lock:
            traj = self._open_trajectory(job_arn, trajectory_id)
            _refuse_if_ended(traj)
            if traj.state != IN_PROGRESS:
                raise _validation(
                    f"Trajectory {trajectory_id} is already {traj.state}: CompleteRollout "
                    "sealed it, so it accepts no more sampling requests"
                )
            snapshot = traj.snapshot()
            policy = job.policy
        # The policy sees the parameters actually used, so a request without them samples at the
        # job's defaults and the record says which.
        policy_request = dict(request, temperature=temperature, max_tokens=max_tokens)
        try:
            response = policy.complete(policy_request, snapshot)
        except JobRuntimeError:
            raise
        except Exception as exc:  # a policy bug must reach the caller as the service's 500
            log.exception("policy %s failed on trajectory %s", type(policy).__name__, trajectory_id)
            raise JobRuntimeError(500, INTERNAL_ERROR, "The model failed to process the request", repr(exc)) from exc
        response = _checked_response(response, policy)
        record = _sample_record(path, request, policy_request, response, started, self.clock())
        with self._lock:
            # Recorded even if CompleteRollout or end_session raced in meanwhile: the tokens were
            # spent either way.
            traj.samples.append(dataclasses.replace(record, turn=len(traj.samples)))
        return response

    def complete_rollout(
        self,
        job_arn: str,
        trajectory_id: str,
        status: str = DEFAULT_COMPLETION_STATUS,
        client_token: str | None = None,
        *,
        account: str | None = None,
    ) -> None:
        """Seal the trajectory as `ready` or `failed`; a second completion is refused."""
        if status not in COMPLETION_STATUSES:
            raise _validation(f"Status must be one of {', '.join(COMPLETION_STATUSES)}, got {status!r}")
        self._authorize(job_arn, trajectory_id, account, sampling=False)
        with self._lock:
            traj = self._open_trajectory(job_arn, trajectory_id)
            _refuse_if_ended(traj)
            if traj.state != IN_PROGRESS:
                if (
                    client_token is not None
                    and client_token == traj.complete_token
                    and status == traj.completion_status
                ):
                    return  # the same request retried: idempotent success, nothing changes
                raise _validation(f"Cannot transition trajectory {trajectory_id} from {traj.state} to {status}")
            traj.state = status
            traj.completion_status = status
            traj.completed_at = self.clock()
            traj.complete_token = client_token

    def update_reward(
        self,
        job_arn: str,
        trajectory_id: str,
        rewards: Sequence[float] | None,
        client_token: str | None = None,
        *,
        account: str | None = None,
    ) -> None:
        """Record the trajectory's reward(s), once, after CompleteRollout."""
        if (
            isinstance(rewards, (str, bytes))
            or not isinstance(rewards, Sequence)
            or not rewards
            or any(isinstance(r, bool) or not isinstance(r, (int, float)) or not math.isfinite(r) for r in rewards)
        ):
            raise _validation(f"Rewards must be a non-empty list of finite numbers, got {rewards!r}")
        self._authorize(job_arn, trajectory_id, account, sampling=False)
        values = tuple(float(r) for r in rewards)
        with self._lock:
            traj = self._open_trajectory(job_arn, trajectory_id)
            _refuse_if_ended(traj)
            if traj.state == IN_PROGRESS:
                raise _validation(
                    f"Cannot update reward for trajectory {trajectory_id}: it is still "
                    f"{IN_PROGRESS}; call CompleteRollout first"
                )
            if traj.state == REWARD_RECEIVED:
                if client_token is not None and client_token == traj.reward_token and values == traj.rewards:
                    return
                raise _validation(
                    f"Cannot transition trajectory {trajectory_id} from {REWARD_RECEIVED} to "
                    f"{REWARD_RECEIVED}: its reward was already recorded"
                )
            traj.state = REWARD_RECEIVED
            traj.rewards = values
            traj.rewarded_at = self.clock()
            traj.reward_token = client_token

    # --- HTTP -------------------------------------------------------------------------------------
    def handle_http(self, method: str, path: str, headers: Mapping[str, str], body: bytes) -> HttpReply:
        """Answer one HTTP request (lower-case header names), whichever server carried it."""
        job_arn = headers.get(JOB_ARN_HEADER)
        trajectory_id = headers.get(TRAJECTORY_HEADER)
        try:
            if method != "POST" or path not in (
                *SAMPLING_PATHS,
                COMPLETE_ROLLOUT_PATH,
                UPDATE_REWARD_PATH,
            ):
                raise JobRuntimeError(404, UNKNOWN_OPERATION, f"No operation at {method} {path}")
            account = self.authenticate(headers.get("authorization"))
            try:
                payload = json.loads(body or b"null")
            except ValueError:
                raise _validation("Request body is not valid JSON") from None
            if path in SAMPLING_PATHS:
                if not job_arn or not trajectory_id:
                    raise _validation(
                        "Sampling requests need the X-Amzn-SageMaker-Job-Arn and X-Amzn-SageMaker-Trajectory-Id headers"
                    )
                response = self.sample(job_arn, trajectory_id, payload, account=account, path=path)
                if path == SAMPLE_STREAM_PATH or payload.get("stream"):
                    include_usage = bool((payload.get("stream_options") or {}).get("include_usage"))
                    return HttpReply(
                        200,
                        encode_sse(stream_chunks(response, include_usage)),
                        "text/event-stream; charset=utf-8",
                        (("cache-control", "no-cache"), (REQUEST_ID_HEADER, str(uuid.uuid4()))),
                    )
                return HttpReply(200, _json_bytes(response), headers=((REQUEST_ID_HEADER, str(uuid.uuid4())),))
            if not isinstance(payload, dict):
                raise _validation("Request body must be a JSON object")
            job_arn, trajectory_id = self._feedback_ids(payload, job_arn)
            if path == COMPLETE_ROLLOUT_PATH:
                self.complete_rollout(
                    job_arn,
                    trajectory_id,
                    payload.get("Status") or DEFAULT_COMPLETION_STATUS,
                    payload.get("ClientToken"),
                    account=account,
                )
            else:
                self.update_reward(
                    job_arn,
                    trajectory_id,
                    payload.get("Rewards"),
                    payload.get("ClientToken"),
                    account=account,
                )
            return HttpReply(200, b"{}", headers=((REQUEST_ID_HEADER, str(uuid.uuid4())),))
        except Exception as exc:
            err = exc if isinstance(exc, JobRuntimeError) else None
            # A bug here must still answer like the service does, not drop the connection.
            if err is None:
                log.exception("unexpected error answering %s %s", method, path)
                err = JobRuntimeError(500, INTERNAL_ERROR, "Internal service error", repr(exc))
            with self._lock:
                self._rejections.append(
                    RejectedCall(
                        self.clock(),
                        path,
                        job_arn,
                        trajectory_id,
                        err.status,
                        err.error_type,
                        err.message,
                        err.detail,
                    )
                )
            log.info("refused %s %s: %s", method, path, err)
            body_out = {"Message": err.message}
            if err.detail:
                body_out["Detail"] = err.detail
            return HttpReply(err.status, _json_bytes(body_out), headers=((ERROR_TYPE_HEADER, err.error_type),))

    async def asgi(self, scope: dict, receive: Callable, send: Callable) -> None:
        """ASGI entry point (HTTP only), for uvicorn or httpx.ASGITransport."""
        if scope["type"] != "http":
            return
        chunks = []
        while True:
            message = await receive()
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        # Inline on the event loop: policies are CPU-bound Python, so a thread hop only adds overhead
        # under the GIL (measured: 8 clients, about 1,940 calls/s inline against 1,680 via a thread).
        reply = self.handle_http(scope["method"], scope["path"], headers, b"".join(chunks))
        out_headers = [
            (b"content-type", reply.content_type.encode()),
            (b"content-length", str(len(reply.body)).encode()),
            *((k.encode("latin-1"), v.encode("latin-1")) for k, v in reply.headers),
        ]
        await send({"type": "http.response.start", "status": reply.status, "headers": out_headers})
        await send({"type": "http.response.body", "body": reply.body})

    def serve(self) -> JobRuntimeEmulator:
        """Start the loopback HTTP server (idempotent); returns self for `with emu.serve():`."""
        with self._server_lock:
            if self._server is None:
                server = LoopbackServer(self.asgi, name="job-runtime-emulator")
                server.start()
                self._server = server
                with _SERVING_LOCK:
                    _SERVING[server.url] = self
        return self

    def stop(self) -> None:
        with self._server_lock:
            server, self._server = self._server, None
        if server is not None:
            with _SERVING_LOCK:
                if _SERVING.get(server.url) is self:
                    del _SERVING[server.url]
            server.stop()

    @property
    def endpoint(self) -> str:
        """The base URL to give the SDK (metadata `endpoint`; `{endpoint}/v1` for OpenAIModel)."""
        if self._server is None:
            raise RuntimeError("the Job Runtime emulator is not serving; call serve() first")
        return self._server.url

    def __enter__(self) -> JobRuntimeEmulator:
        return self.serve()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # --- internals --------------------------------------------------------------------------------
    def _known_job(self, job_arn: str) -> _Job:
        job = self._jobs.get(job_arn)
        if job is None:
            raise KeyError(f"job {job_arn} is not registered with the emulator")
        return job

    def _job_trajectories(self, job_arn: str) -> dict[str, _Trajectory]:
        self._known_job(job_arn)
        return self._trajectories[job_arn]

    def _open_trajectory(self, job_arn: str, trajectory_id: str) -> _Trajectory:
        trajs = self._trajectories[job_arn]
        traj = trajs.get(trajectory_id)
        if traj is None:
            traj = trajs[trajectory_id] = _Trajectory(job_arn, trajectory_id, self.clock())
        return traj

    def _authorize(self, job_arn: str, trajectory_id: str, account: str | None, *, sampling: bool) -> _Job:
        """The checks after authentication, in the service's order: ARN, account, job, trajectory."""
        if not isinstance(job_arn, str) or not JOB_ARN_RE.match(job_arn):
            raise _validation(f"Invalid job ARN: {job_arn!r}")
        if account is not None and job_arn_account(job_arn) != account:
            # Before the existence check: another account must not learn which jobs exist.
            raise JobRuntimeError(
                403,
                ACCESS_DENIED,
                NOT_AUTHORIZED_MESSAGE,
                f"job {job_arn} is not in the caller's account",
            )
        with self._lock:
            job = self._jobs.get(job_arn)
            if job is None:
                raise _validation(f"{JOB_NOT_FOUND_MESSAGE}: {job_arn}")
            if sampling and job.fail_auth:
                raise _auth_failed("fail_auth_for() is set for this job")
            if job.closed_status is not None:
                raise _validation(f"Job {job_arn} is {job.closed_status} and no longer accepts requests")
            if sampling and job.injected_errors:
                raise job.injected_errors.popleft()
        if not isinstance(trajectory_id, str) or not 0 < len(trajectory_id) <= MAX_TRAJECTORY_ID_LEN:
            raise _validation(f"TrajectoryId must be a string of 1 to {MAX_TRAJECTORY_ID_LEN} characters")
        return job

    @staticmethod
    def _feedback_ids(payload: dict, header_arn: str | None) -> tuple[str, str]:
        # botocore's model sends JobArn as a header; the SDK's feedback client puts it in the body.
        body_arn = payload.get("JobArn")
        if header_arn and body_arn and header_arn != body_arn:
            raise _validation("JobArn in the body differs from the X-Amzn-SageMaker-Job-Arn header")
        job_arn = body_arn or header_arn
        if not job_arn:
            raise _validation("Missing JobArn (in the body or the X-Amzn-SageMaker-Job-Arn header)")
        trajectory_id = payload.get("TrajectoryId")
        if not trajectory_id:
            raise _validation("Missing TrajectoryId in the request body")
        return job_arn, trajectory_id


# --- chat completion helpers ----------------------------------------------------------------------
def _checked_response(response: Any, policy: object) -> dict:
    name = type(policy).__name__
    if not isinstance(response, dict) or not isinstance(response.get("choices"), list):
        raise JobRuntimeError(
            500,
            INTERNAL_ERROR,
            "The model returned an invalid response",
            f"{name} returned no 'choices' list",
        )
    usage = response.get("usage")
    if not isinstance(usage, dict) or not all(
        isinstance(usage.get(k), int) for k in ("prompt_tokens", "completion_tokens")
    ):
        raise JobRuntimeError(
            500,
            INTERNAL_ERROR,
            "The model returned an invalid response",
            f"{name} returned no usage token counts",
        )
    out = dict(response)
    # Filled in only when missing: a policy built with chat_completion has them all, and a fresh
    # uuid per sampling call is measurable on the hot path.
    if "id" not in out:
        out["id"] = f"chatcmpl-{uuid.uuid4().hex[:24]}"
    if "created" not in out:
        out["created"] = int(time.time())
    out.setdefault("object", "chat.completion")
    out.setdefault("model", "default")
    return out


def _sampling_params(request: dict, job: _Job) -> tuple[float, int | None]:
    """The temperature and max_tokens a request samples with: its own, else the job's defaults."""
    temperature = request.get("temperature")
    if temperature is None:
        temperature = job.default_temperature
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) or temperature < 0:
        raise _validation(f"temperature must be a non-negative number, got {temperature!r}")
    max_tokens = request.get("max_tokens") or request.get("max_completion_tokens")
    if max_tokens is None:
        max_tokens = job.default_max_tokens
    if max_tokens is not None and (isinstance(max_tokens, bool) or not isinstance(max_tokens, int)):
        raise _validation(f"max_tokens must be an integer, got {max_tokens!r}")
    return float(temperature), max_tokens


def _sample_record(
    path: str, request: dict, policy_request: dict, response: dict, started: float, ended: float
) -> SampleRecord:
    """The turn's record; pops the policy trace off `response` so it never reaches the caller."""
    trace = response.pop(POLICY_TRACE_KEY, None)
    choice = response["choices"][0] if response["choices"] else {}
    message = choice.get("message") or {}
    calls = []
    for call in message.get("tool_calls") or ():
        fn = call.get("function") or {}
        calls.append({"id": call.get("id"), "name": fn.get("name"), "arguments": fn.get("arguments")})
    return SampleRecord(
        turn=-1,  # assigned under the lock, in arrival order
        path=path,
        stream=bool(request.get("stream")) or path == SAMPLE_STREAM_PATH,
        request=request,
        temperature=policy_request["temperature"],
        max_tokens=policy_request["max_tokens"],
        top_p=request.get("top_p"),
        content=message.get("content"),
        reasoning=message.get("reasoning_content") or message.get("reasoning"),
        tool_calls=tuple(calls),
        finish_reason=choice.get("finish_reason"),
        prompt_tokens=int(response["usage"]["prompt_tokens"]),
        completion_tokens=int(response["usage"]["completion_tokens"]),
        policy_trace=trace,
        requested_at=started,
        responded_at=ended,
    )


def stream_chunks(response: dict, include_usage: bool) -> list[dict]:
    """The `chat.completion.chunk` sequence a streaming server would send for this completion.

    Per choice: role, reasoning, content, each tool call (header with id and name, then its
    arguments), then the finish reason; last a choices-less usage chunk if the caller asked for it
    (Strands reads usage from the final event after the finish reason).
    """
    base = {
        "id": response["id"],
        "object": "chat.completion.chunk",
        "created": response["created"],
        "model": response["model"],
    }

    def chunk(choices: list[dict], usage: dict | None = None) -> dict:
        out = dict(base, choices=choices)
        if include_usage:
            out["usage"] = usage
        return out

    chunks = []
    for choice in response["choices"]:
        index = choice.get("index", 0)
        message = choice.get("message") or {}

        def delta(d: dict, finish: str | None = None) -> dict:
            return chunk([{"index": index, "delta": d, "logprobs": None, "finish_reason": finish}])

        chunks.append(delta({"role": "assistant", "content": ""}))
        if message.get("reasoning_content"):
            chunks.append(delta({"reasoning_content": message["reasoning_content"]}))
        if message.get("content"):
            chunks.append(delta({"content": message["content"]}))
        for i, call in enumerate(message.get("tool_calls") or ()):
            fn = call.get("function") or {}
            header = {
                "index": i,
                "id": call.get("id"),
                "type": "function",
                "function": {"name": fn.get("name"), "arguments": ""},
            }
            chunks.append(delta({"tool_calls": [header]}))
            chunks.append(delta({"tool_calls": [{"index": i, "function": {"arguments": fn.get("arguments", "")}}]}))
        chunks.append(delta({}, choice.get("finish_reason") or "stop"))
    if include_usage:
        chunks.append(chunk([], response.get("usage")))
    return chunks


def encode_sse(chunks: Iterable[dict]) -> bytes:
    """Server-sent events: one `data: <json>` event per chunk, then `data: [DONE]`."""
    return b"".join(b"data: " + _json_bytes(c) + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"


def _json_bytes(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode("utf-8")


class ScriptedPolicy:
    """A test double: turn k of every trajectory answers `script[k]`, whatever was said.

    A step is a string (a plain-text answer), a tool call {"name", "arguments"}, or a list of tool
    calls. Past the end of the script it answers `final_text`. Keyed by the trajectory's turn, not
    a shared cursor, so concurrent rollouts each get the whole script. Not a learner: the stand-in
    policy is a separate module.
    """

    def __init__(
        self,
        script: Sequence[str | Mapping[str, Any] | Sequence[Mapping[str, Any]]],
        final_text: str = "Done.",
    ) -> None:
        self.script = list(script)
        self.final_text = final_text

    def complete(self, request: dict, trajectory: TrajectoryRecord) -> dict:
        turn = trajectory.sample_count
        step = self.script[turn] if turn < len(self.script) else self.final_text
        prompt_tokens = approx_tokens(json.dumps(request.get("messages", [])))
        if isinstance(step, str):
            return chat_completion(
                content=step,
                prompt_tokens=prompt_tokens,
                completion_tokens=approx_tokens(step),
                model=request.get("model", "default"),
                policy_trace={"turn": turn},
            )
        calls = [step] if isinstance(step, Mapping) else list(step)
        calls = [{"id": f"call_t{turn}_{i}", **call} for i, call in enumerate(calls)]
        return chat_completion(
            tool_calls=calls,
            prompt_tokens=prompt_tokens,
            completion_tokens=sum(approx_tokens(json.dumps(c)) for c in calls),
            model=request.get("model", "default"),
            policy_trace={"turn": turn},
        )


# The SageMaker SDK's rollout feedback client (sagemaker/train/rft/feedback.py, sagemaker-train
# 1.27: complete_rollout and update_reward) takes any failure whose text contains "404" for a
# missing trajectory, logs "CompleteRollout 404: trajectory ... not found" and swallows it. The
# text is requests' "400 Client Error: Bad Request for url: http://127.0.0.1:PORT/...", so on a
# port such as 40412 a 400 became a swallowed "404" offline, and notebook 03's log table changed
# with the port the OS picked (it failed `make test` once). Live, the endpoint's URL has no port.
# So the loopback servers never listen on a port whose digits contain a status code the SDK
# looks for (tests/test_job_runtime_emulator.py shows the SDK's behaviour).
PORT_DIGITS_TO_AVOID = ("404",)
_BIND_ATTEMPTS = 64


def bind_loopback(make_socket: Callable[[], socket.socket] | None = None) -> socket.socket:
    """A TCP socket bound on SERVER_HOST to a port the OS picked, none of PORT_DIGITS_TO_AVOID."""
    make_socket = make_socket or (lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP))
    refused: list[socket.socket] = []  # held open until the end, so the OS cannot hand one back
    try:
        for _ in range(_BIND_ATTEMPTS):
            candidate = make_socket()
            refused.append(candidate)  # until it proves good (closed with the others on any error)
            candidate.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            candidate.bind((SERVER_HOST, 0))
            if not any(digits in str(candidate.getsockname()[1]) for digits in PORT_DIGITS_TO_AVOID):
                refused.remove(candidate)
                return candidate
        raise RuntimeError(f"no free loopback port without {PORT_DIGITS_TO_AVOID} in {_BIND_ATTEMPTS} tries")
    finally:
        for held in refused:
            held.close()


class LoopbackServer:
    """uvicorn serving an ASGI app on 127.0.0.1 in a background thread, on a port the OS picked
    (never one with "404" in it: see PORT_DIGITS_TO_AVOID)."""

    def __init__(self, app: Callable, name: str) -> None:
        # Binding here, before the thread starts, means the URL is known and free: no port race.
        # proto must be IPPROTO_TCP (not the default 0): asyncio only sets TCP_NODELAY on accepted
        # sockets whose proto says TCP, and without it every keep-alive request after the first
        # waited 40 ms for a delayed ACK (Nagle), capping a client at about 23 requests/s.
        self._socket = bind_loopback()
        self.url = f"http://{SERVER_HOST}:{self._socket.getsockname()[1]}"
        config = uvicorn.Config(
            app,
            interface="asgi3",
            lifespan="off",
            log_level="warning",
            access_log=False,
            timeout_graceful_shutdown=int(SERVER_STOP_TIMEOUT_S / 2),
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._error: BaseException | None = None

    def _run(self) -> None:
        try:
            self._server.run(sockets=[self._socket])
        except BaseException as exc:  # surfaced by start() instead of dying silently in the thread
            self._error = exc

    def start(self) -> None:
        self._thread.start()
        deadline = time.monotonic() + SERVER_START_TIMEOUT_S
        while not self._server.started:
            if self._error is not None or not self._thread.is_alive():
                raise RuntimeError(f"the loopback server for {self._thread.name} failed to start") from self._error
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"the loopback server for {self._thread.name} did not start within {SERVER_START_TIMEOUT_S} s"
                )
            time.sleep(0.005)

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(SERVER_STOP_TIMEOUT_S)
        self._socket.close()
