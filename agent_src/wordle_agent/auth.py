"""Bearer tokens for the SageMaker Job Runtime, cached for the whole process.

The agent calls the policy model through the Job Runtime's OpenAI-compatible endpoint with a
bearer token: a SigV4-presigned request, signed locally with the runtime role's credentials by
``sagemaker.core.token_generator.generate_token``. Two naive ways to get one broke training:

- Signing with a fresh botocore session on every call resolved credentials from scratch each
  time; at 32 concurrent rollouts that starved the container's credential provider.
- Caching one token for an hour kept it after the role's credentials rotated, and the endpoint
  began answering 403 "Authentication failed".

So this module keeps one botocore session for the process (its credentials refresh themselves),
signs with a snapshot of its *current* credentials, caches the token only for minutes, and lets
the caller drop it on a 403 so that the next request is signed again.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

logger = logging.getLogger(__name__)

# Short enough that a token signed just before a credential rotation is replaced well before
# the old credentials stop being accepted; long enough that 32 concurrent rollouts share one
# signature instead of each signing its own (signing costs about 23 ms of CPU).
TOKEN_TTL_SECONDS = 5 * 60
# Minting fails only when credentials cannot be resolved (a throttled or restarting credential
# endpoint); a few quick retries ride that out, then the rollout gets a clear error.
MINT_ATTEMPTS = 3
MINT_BACKOFF_SECONDS = 0.5
# Region used when neither the caller nor the environment names one.
DEFAULT_REGION = "us-east-1"
REGION_ENV_VARS = ("AWS_REGION", "AWS_DEFAULT_REGION")
ACCESS_KEY_ENV = "AWS_ACCESS_KEY_ID"

Mint = Callable[[str], str]


class TokenError(RuntimeError):
    """A Job Runtime bearer token could not be signed."""


def default_region() -> str:
    """The Region from ``AWS_REGION``, then ``AWS_DEFAULT_REGION``, then ``DEFAULT_REGION``."""
    for name in REGION_ENV_VARS:
        value = os.environ.get(name, "").strip()
        if value:
            return value
    return DEFAULT_REGION


def region_of_job_arn(job_arn: object) -> str | None:
    """The Region field of a SageMaker job ARN (``arn:aws:sagemaker:<region>:...``), else None."""
    parts = job_arn.split(":") if isinstance(job_arn, str) else []
    if len(parts) > 5 and parts[0] == "arn" and parts[2] == "sagemaker" and parts[3]:
        return parts[3]
    return None


def rollout_region(metadata: Mapping[str, Any] | None = None) -> str:
    """The one Region a rollout signs tokens for and reports rewards to.

    ``metadata.region``, then the Region of ``metadata.jobArn`` (the job's own Region), then
    ``default_region()``. The SDK's feedback client falls back on its own (``$AWS_REGION``, then
    us-west-2) where the model path fell back on ours (us-east-1): ``main.py`` therefore writes
    this Region into the metadata the SDK reads, so both paths always agree.
    """
    metadata = metadata if isinstance(metadata, Mapping) else {}
    region = metadata.get("region")
    if isinstance(region, str) and region:
        return region
    return region_of_job_arn(metadata.get("jobArn") or metadata.get("job_arn")) or default_region()


_ROLLOUT_REGION: contextvars.ContextVar[str | None] = contextvars.ContextVar("wordle_rollout_region", default=None)


@contextlib.contextmanager
def use_rollout_region(region: str) -> Iterator[None]:
    """Within the block, ``current_region()`` is ``region`` (per thread and asyncio task)."""
    token = _ROLLOUT_REGION.set(region)
    try:
        yield
    finally:
        _ROLLOUT_REGION.reset(token)


def current_region() -> str:
    """The running rollout's Region (``use_rollout_region``), else ``default_region()``."""
    return _ROLLOUT_REGION.get() or default_region()


class TokenCache:
    """Process-wide, thread-safe cache of Job Runtime bearer tokens, one per Region.

    ``get(region)`` returns a cached token younger than ``ttl_seconds`` or signs a new one;
    ``invalidate()`` drops tokens after the endpoint rejected one; ``mints`` counts signatures
    (for tests and metrics). Pass ``mint`` to replace the signer (tests do).
    """

    def __init__(
        self,
        ttl_seconds: float = TOKEN_TTL_SECONDS,
        *,
        mint: Mint | None = None,
        attempts: int = MINT_ATTEMPTS,
        backoff_seconds: float = MINT_BACKOFF_SECONDS,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if ttl_seconds <= 0:
            raise ValueError(f"ttl_seconds must be positive, got {ttl_seconds!r}")
        if attempts < 1:
            raise ValueError(f"attempts must be at least 1, got {attempts!r}")
        self.ttl_seconds = float(ttl_seconds)
        self.attempts = int(attempts)
        self.backoff_seconds = float(backoff_seconds)
        self.mints = 0
        self._mint = mint or self._sign_with_shared_session
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()
        # region -> (token, expires_at, the environment's access key when it was signed)
        self._tokens: dict[str, tuple[str, float, str | None]] = {}
        self._session: Any = None  # botocore session, created on first use

    def get(self, region: str | None = None) -> str:
        """Return a valid bearer token for ``region`` (default: the environment's Region)."""
        region = region or default_region()
        # A token signed before the process's AWS_ACCESS_KEY_ID changed names the old key: the
        # endpoint would refuse it (403) once, so it is re-signed instead (a dictionary lookup).
        environment_key = os.environ.get(ACCESS_KEY_ENV)
        # Double-checked expiry: the common case (a fresh token) takes no lock, and when it has
        # expired only the first of many concurrent callers signs; the rest wait for it.
        cached = self._tokens.get(region)
        if cached is not None and self._clock() < cached[1] and cached[2] == environment_key:
            return cached[0]
        with self._lock:
            cached = self._tokens.get(region)
            if cached is not None and self._clock() < cached[1] and cached[2] == environment_key:
                return cached[0]
            self._drop_session_if_environment_changed()
            token = self._mint_with_retries(region)
            self._tokens[region] = (token, self._clock() + self.ttl_seconds, environment_key)
            return token

    def invalidate(self, region: str | None = None, token: str | None = None) -> None:
        """Forget cached tokens after the endpoint rejected one (HTTP 403).

        With ``token``, forget it only if it is still the cached one: when 32 rollouts see the
        same 403 at once, the first re-signs and the other 31 keep the new token. The shared
        session is dropped as well, so the next signature resolves credentials afresh in case
        they rotated before botocore expected.
        """
        with self._lock:
            regions = [region] if region else list(self._tokens)
            dropped = False
            for name in regions:
                cached = self._tokens.get(name)
                if cached is None or (token is not None and cached[0] != token):
                    continue
                del self._tokens[name]
                dropped = True
            if dropped or token is None:
                self._session = None
        if dropped:
            logger.info("dropped the cached Job Runtime token; the next request signs a new one")

    def sign(self, region: str | None = None) -> str:
        """A freshly signed token (never cached) from the shared session's current credentials.

        For callers that sign on every request, such as the SDK's feedback client
        (`install_feedback_signer`): the same token format as ``generate_token``, without
        resolving credentials from scratch each time (about 7 ms against 0.1 ms).
        """
        region = region or default_region()
        with self._lock:
            self._drop_session_if_environment_changed()
            self._shared_session()
        return self._mint_with_retries(region, announce=False)

    def _drop_session_if_environment_changed(self) -> None:
        # Credentials from the environment never refresh inside a botocore session; if the
        # process's AWS_ACCESS_KEY_ID now names another key, resolve afresh (a dictionary lookup
        # per token, against the 7 ms a full resolution costs). Refreshable credentials (a
        # role's) renew themselves and are left alone.
        environment_key = os.environ.get(ACCESS_KEY_ENV)
        if self._session is None or not environment_key:
            return
        current = self._session.get_credentials()
        if current is None or current.access_key != environment_key:
            self._session = None

    def _mint_with_retries(self, region: str, *, announce: bool = True) -> str:
        delay = self.backoff_seconds
        last_error: Exception | None = None
        for attempt in range(1, self.attempts + 1):
            try:
                token = self._mint(region)
            except Exception as error:  # any signer failure is retried the same way
                last_error = error
                logger.warning(
                    "signing a Job Runtime token failed (attempt %d of %d): %s",
                    attempt,
                    self.attempts,
                    error,
                )
                if attempt < self.attempts:
                    self._sleep(delay)
                    delay *= 2
                continue
            if not isinstance(token, str) or not token:
                last_error = TokenError(f"the signer returned {type(token).__name__}, not a token")
                continue
            self.mints += 1
            if announce:  # a cached token is worth a log line; a per-request one is not
                logger.info("signed a Job Runtime bearer token for %s", region)
            return token
        raise TokenError(
            f"could not sign a Job Runtime bearer token for Region {region!r} after "
            f"{self.attempts} attempts ({last_error}); check that the runtime role's credentials "
            "are available (AmazonSageMakerJobRuntimeAccess attached)"
        ) from last_error

    def _sign_with_shared_session(self, region: str) -> str:
        # Imported here: it takes seconds, and importing this module must stay free of AWS work.
        from botocore.credentials import CredentialProvider, Credentials
        from sagemaker.core.token_generator import generate_token

        session = self._shared_session()

        class _SharedSessionCredentials(CredentialProvider):
            METHOD = "wordle-agent-shared-session"

            def load(self) -> Credentials | None:
                current = session.get_credentials()
                if current is None:
                    return None
                # One consistent snapshot, so a refresh cannot mix two key versions mid-signature.
                frozen = current.get_frozen_credentials()
                return Credentials(frozen.access_key, frozen.secret_key, frozen.token)

        return generate_token(region=region, aws_credentials_provider=_SharedSessionCredentials())

    def _shared_session(self) -> Any:
        # Called under self._lock (from get), so only one session exists at a time.
        if self._session is None:
            import botocore.session

            self._session = botocore.session.get_session()
        return self._session


TOKENS = TokenCache()

# The SDK module whose CompleteRollout/UpdateReward client signs a token per request, and the
# name it imported the signer under.
FEEDBACK_MODULE = "sagemaker.train.rft.feedback"
FEEDBACK_SIGNER = "generate_token"


def install_feedback_signer(cache: TokenCache = TOKENS) -> bool:
    """Make the SDK's feedback client sign with the shared session (fresh tokens, no cache).

    ``RolloutFeedbackClient`` calls ``generate_token(region=...)`` for each of its two requests
    per rollout, and without a credentials provider that builds botocore's whole credential
    chain every time: about 7 ms of CPU per token on the 2-core reference machine, some 15% of a
    rollout's CPU in the offline stack. Every token is still signed afresh from current
    credentials, so a rotation is picked up exactly as before. Returns False (and changes
    nothing) if the SDK no longer has that module attribute; a test notices.
    """
    import importlib

    try:
        module = importlib.import_module(FEEDBACK_MODULE)
    except ImportError:
        return False
    if not callable(getattr(module, FEEDBACK_SIGNER, None)):
        return False

    def generate_token(region: str | None = None, **_: Any) -> str:
        return cache.sign(region)

    setattr(module, FEEDBACK_SIGNER, generate_token)
    return True
