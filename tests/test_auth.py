"""The Job Runtime token cache: shared under concurrency, short-lived, re-signed on 403."""

from __future__ import annotations

import base64
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from wordle_agent import auth
from wordle_agent.auth import TOKEN_TTL_SECONDS, TokenCache, TokenError

TOKEN_PREFIX = "sagemaker-api-key-"
AGENT_SRC = Path(__file__).resolve().parents[1] / "agent_src"


class CountingSigner:
    """A stand-in signer that is slow enough for concurrent callers to pile up on it."""

    def __init__(self, delay: float = 0.05, failures: int = 0) -> None:
        self.delay = delay
        self.failures = failures
        self.calls = 0
        self._lock = threading.Lock()

    def __call__(self, region: str) -> str:
        with self._lock:
            self.calls += 1
            n = self.calls
        time.sleep(self.delay)
        if n <= self.failures:
            raise RuntimeError(f"credential provider unavailable (call {n})")
        return f"token-{region}-{n}"


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_64_concurrent_callers_share_one_or_two_mints() -> None:
    signer = CountingSigner(delay=0.05)
    cache = TokenCache(mint=signer)
    barrier = threading.Barrier(64)
    tokens: list[str] = []
    lock = threading.Lock()

    def ask() -> None:
        barrier.wait()
        token = cache.get("us-east-1")
        with lock:
            tokens.append(token)

    threads = [threading.Thread(target=ask) for _ in range(64)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(tokens) == 64
    assert cache.mints <= 2, f"64 threads minted {cache.mints} tokens"
    assert signer.calls == cache.mints
    assert len(set(tokens)) == cache.mints


def test_a_cached_token_is_reused_until_the_ttl_passes() -> None:
    clock = FakeClock()
    cache = TokenCache(mint=CountingSigner(delay=0), clock=clock)
    first = cache.get("us-east-1")
    clock.now += TOKEN_TTL_SECONDS - 1
    assert cache.get("us-east-1") == first
    assert cache.mints == 1
    clock.now += 2
    second = cache.get("us-east-1")
    assert second != first
    assert cache.mints == 2


def test_the_ttl_is_minutes_not_hours() -> None:
    assert 60 <= TOKEN_TTL_SECONDS <= 15 * 60


def test_tokens_are_cached_per_region() -> None:
    cache = TokenCache(mint=CountingSigner(delay=0))
    assert cache.get("us-east-1") != cache.get("us-west-2")
    assert cache.mints == 2


def test_region_defaults_to_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    signer = CountingSigner(delay=0)
    assert TokenCache(mint=signer).get() == "token-eu-west-1-1"


def test_invalidate_forces_a_new_signature() -> None:
    cache = TokenCache(mint=CountingSigner(delay=0))
    first = cache.get("us-east-1")
    cache.invalidate("us-east-1", token=first)
    second = cache.get("us-east-1")
    assert second != first
    assert cache.mints == 2


def test_invalidate_with_a_stale_token_keeps_the_fresh_one() -> None:
    # 32 rollouts that saw the same 403 must not each throw away the token the first re-signed.
    cache = TokenCache(mint=CountingSigner(delay=0))
    stale = cache.get("us-east-1")
    cache.invalidate("us-east-1", token=stale)
    fresh = cache.get("us-east-1")
    for _ in range(31):
        cache.invalidate("us-east-1", token=stale)
    assert cache.get("us-east-1") == fresh
    assert cache.mints == 2


def test_invalidate_without_arguments_drops_every_region() -> None:
    cache = TokenCache(mint=CountingSigner(delay=0))
    cache.get("us-east-1")
    cache.get("us-west-2")
    cache.invalidate()
    cache.get("us-east-1")
    cache.get("us-west-2")
    assert cache.mints == 4


def test_mint_failures_are_retried_with_backoff() -> None:
    sleeps: list[float] = []
    signer = CountingSigner(delay=0, failures=2)
    cache = TokenCache(mint=signer, attempts=3, backoff_seconds=0.5, sleep=sleeps.append)
    assert cache.get("us-east-1") == "token-us-east-1-3"
    assert sleeps == [0.5, 1.0]
    assert cache.mints == 1


def test_persistent_mint_failure_raises_a_clear_error() -> None:
    signer = CountingSigner(delay=0, failures=99)
    cache = TokenCache(mint=signer, attempts=3, sleep=lambda s: None)
    with pytest.raises(TokenError, match=r"us-east-1.*after 3 attempts.*credential provider unavailable"):
        cache.get("us-east-1")
    assert signer.calls == 3
    assert cache.mints == 0


def test_a_signer_returning_nothing_counts_as_a_failure() -> None:
    cache = TokenCache(mint=lambda region: "", attempts=2, sleep=lambda s: None)
    with pytest.raises(TokenError):
        cache.get("us-east-1")


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="ttl_seconds"):
        TokenCache(ttl_seconds=0)
    with pytest.raises(ValueError, match="attempts"):
        TokenCache(attempts=0)


def test_real_signer_works_offline_with_fake_credentials() -> None:
    cache = TokenCache()
    token = cache.get("us-east-1")
    assert token.startswith(TOKEN_PREFIX)
    presigned = base64.b64decode(token[len(TOKEN_PREFIX) :]).decode()
    assert "Action=CallWithBearerToken" in presigned
    assert "us-east-1" in presigned
    # the credentials come from the environment (conftest's fake values), through the shared session
    assert "testing" in presigned  # the session token travels in the presigned query
    assert cache.get("us-east-1") == token
    assert cache.mints == 1


def test_the_shared_session_is_created_once_and_renewed_on_invalidate() -> None:
    cache = TokenCache()
    first = cache.get("us-east-1")
    session = cache._session
    cache.get("us-west-2")
    assert cache._session is session
    cache.invalidate("us-east-1", token=first)
    cache.get("us-east-1")
    assert cache._session is not session


def test_importing_the_module_does_no_aws_work() -> None:
    code = (
        "import sys, wordle_agent.auth as a; "
        "print(a.TOKENS._session is None, a.TOKENS.mints, 'sagemaker.core.token_generator' in sys.modules)"
    )
    env = {**os.environ, "PYTHONPATH": str(AGENT_SRC)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.split() == ["True", "0", "False"]


def test_the_feedback_signer_signs_afresh_with_the_shared_session_and_verifies(monkeypatch: pytest.MonkeyPatch) -> None:
    """The SDK's feedback client gets tokens from the shared session: valid, never cached, and
    what the SDK's own generate_token would sign (the emulator accepts them)."""
    from sagemaker.train.rft import feedback
    from mtrl_course.local.tokens import parse_token, signature_matches

    monkeypatch.setattr(feedback, "generate_token", feedback.generate_token)  # restored afterwards
    original = feedback.generate_token
    cache = TokenCache()
    assert auth.install_feedback_signer(cache) is True
    assert feedback.generate_token is not original
    first = feedback.generate_token(region="us-east-1")
    time.sleep(1.1)  # a new second: a fresh signature differs, a cached token would not
    second = feedback.generate_token(region="us-east-1")
    assert first != second and cache.mints == 2
    parsed = parse_token(second)
    assert parsed.region == "us-east-1" and parsed.access_key == os.environ["AWS_ACCESS_KEY_ID"]
    assert signature_matches(parsed, os.environ["AWS_SECRET_ACCESS_KEY"])
    assert parse_token(original(region="us-east-1")).access_key == parsed.access_key


def test_the_feedback_signer_follows_a_change_of_the_environments_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    cache = TokenCache()
    first = parse_token_of(cache.sign("us-east-1"))
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing-other-access-key")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "another-secret")
    second = parse_token_of(cache.sign("us-east-1"))
    assert first.access_key != second.access_key == "testing-other-access-key"


def test_a_cached_token_is_re_signed_when_the_environments_credentials_change(monkeypatch: pytest.MonkeyPatch) -> None:
    # Before this, a token cached under the old key was sent once more and refused (HTTP 403):
    # a process whose AWS_ACCESS_KEY_ID changed (a new offline backend, a learner's new keys)
    # saw one rejected model call per Region.
    cache = TokenCache()
    first = cache.get("us-east-1")
    assert cache.get("us-east-1") == first and cache.mints == 1
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing-other-access-key")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "another-secret")
    second = cache.get("us-east-1")
    assert parse_token_of(second).access_key == "testing-other-access-key" and cache.mints == 2
    assert cache.get("us-east-1") == second and cache.mints == 2


def parse_token_of(token: str):
    from mtrl_course.local.tokens import parse_token

    return parse_token(token)


def test_the_feedback_signer_leaves_an_sdk_without_that_attribute_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    from sagemaker.train.rft import feedback

    monkeypatch.delattr(feedback, "generate_token")
    assert auth.install_feedback_signer(TokenCache()) is False
    assert not hasattr(feedback, "generate_token")
