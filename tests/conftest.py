"""Shared pytest fixtures: no test may reach a real AWS account, and third-party logs stay quiet."""

from __future__ import annotations

import logging

import pytest
from hypothesis import HealthCheck, settings
from mtrl_course import config

# Hypothesis's timing checks (the per-example deadline, "too slow" data generation) measure the
# machine, not the code: on a loaded 2-core machine they failed tests that were right. Tests
# that pass their own settings keep them; anything they leave out comes from this profile.
settings.register_profile("course", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("course")

# The course's own collection thresholds in every test process too (mtrl_course.config says why).
config.tune_garbage_collector()

# Values botocore accepts but AWS never would; "testing" is moto's convention.
FAKE_AWS_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_SECURITY_TOKEN": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_REGION": "us-east-1",
    # Never fall back to the instance metadata service or a developer's own profile files.
    "AWS_EC2_METADATA_DISABLED": "true",
    "AWS_CONFIG_FILE": "/nonexistent/aws-config",
    "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/aws-credentials",
}
UNSET_AWS_ENV = (
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_ROLE_ARN",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
)
NOISY_LOGGERS = (
    "httpx",
    "httpcore",
    "openai",
    "urllib3",
    "botocore",
    "strands",
    "opentelemetry",
    "bedrock_agentcore",
    "sagemaker",
    "uvicorn",
    "uvicorn.error",
    "uvicorn.access",
)


@pytest.fixture(autouse=True)
def fake_aws_env(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Fake AWS credentials and Region for every test."""
    for name in UNSET_AWS_ENV:
        monkeypatch.delenv(name, raising=False)
    for name, value in FAKE_AWS_ENV.items():
        monkeypatch.setenv(name, value)
    return dict(FAKE_AWS_ENV)


@pytest.fixture(autouse=True, scope="session")
def quiet_loggers() -> None:
    """Third-party libraries log every request at INFO; tests only want warnings and up."""
    for name in NOISY_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)


def pytest_configure(config: pytest.Config) -> None:
    """Block every non-loopback connection for the whole run, before any test imports a client.

    The offline backend's guard refuses connections and name lookups that would leave the
    machine; installing it here means a test that forgot to go offline fails loudly instead of
    reaching the network. Subprocesses (the npm fetch of the AgentCore CLI schemas, notebook
    kernels) are not affected: each decides for itself.
    """
    from mtrl_course import aws

    aws.install_network_guard()


@pytest.fixture
def offline_backend(tmp_path, monkeypatch):
    """A fresh offline backend whose state lives in this test's own folder; reset again after.

    The reset afterwards drops what the test created (moto's records, runtimes, jobs), so the
    next test on this worker starts from nothing whatever this one left behind. `cleanup` looks
    for the evaluator's pipeline file in this folder only: otherwise a test that deletes with
    confirm=True removes the one notebook 07 leaves in notebooks/ for notebook 08 to list, while
    the notebooks run on another worker (it did, in CI).
    """
    from mtrl_course import aws, cleanup

    monkeypatch.setattr(cleanup, "_file_places", lambda: {tmp_path})
    backend = aws.reset_offline(tmp_path / "state")
    yield backend
    aws.reset_offline(tmp_path / "state")


@pytest.fixture
def offline_session(offline_backend):
    """A boto3 session on a fresh offline backend (see `offline_backend`)."""
    from mtrl_course import aws

    return aws.session()
