"""Issue 21 item 5: the lab path in live mode, against the offline account with refusals injected.

`MTRL_BUCKET` set (the instructor guide's older way) must not hide the attached run's datasets,
and a refused GetRole, HeadBucket (403), ListAgentRuntimes or GetAgentRuntime ends in one clear
line (an ActionableError: Jupyter shows only its message) or, in a lab, falls back to what the
attached run names. Calls go through the offline seam with `config.MODE` set to live for the call.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import asdict

import pytest
from mtrl_course import aws, config, errors, instructor_run, resources, storage
from lab_fixtures import DATASETS, INSTRUCTOR_BUCKET, instructor_attachment
from mtrl_course.errors import ServiceError

LEARNER_RUN = "lrn1"


@pytest.fixture
def account(tmp_path, monkeypatch):
    aws.reset_offline(tmp_path / "state")
    monkeypatch.setattr(config, "STATE_DIR", tmp_path)
    monkeypatch.setenv("MTRL_RUN_ID", LEARNER_RUN)
    for name in (resources.JOB_ROLE_ENV, resources.RUNTIME_ENV, resources.MLFLOW_APP_ENV, storage.BUCKET_ENV_VAR):
        monkeypatch.delenv(name, raising=False)
    yield aws.session()
    config.MODE = config.Mode.OFFLINE
    aws.reset_offline(tmp_path / "state")


@contextlib.contextmanager
def live():
    previous, config.MODE = config.MODE, config.Mode.LIVE
    try:
        yield
    finally:
        config.MODE = previous


def attach(session) -> instructor_run.Attachment:
    """The instructor's run as `instructor_run.attach` saves it; its datasets exist in its bucket."""
    account, region = config.MOTO_ACCOUNT, session.region_name
    s3 = session.client("s3")
    s3.create_bucket(Bucket=INSTRUCTOR_BUCKET)
    for key in (f"{DATASETS}/t.jsonl", f"{DATASETS}/v.jsonl"):
        s3.put_object(Bucket=INSTRUCTOR_BUCKET, Key=key, Body=b"{}\n")
    attachment = instructor_attachment(account, region)
    instructor_run.lab_file().write_text(json.dumps(asdict(attachment)), encoding="utf-8")
    return attachment


def refuse(monkeypatch, service: str, operation: str, code: str = "AccessDenied", status: int = 403) -> None:
    message = "Forbidden" if code == "403" else f"User is not authorized to perform: {service}:{operation}"

    def handler(call):
        raise ServiceError(code, message, status)

    monkeypatch.setitem(aws.offline_backend().handlers, (service, operation), handler)


def assert_one_clear_line(error: errors.ActionableError, *needles: str) -> None:
    shown = error._render_traceback_()  # what Jupyter prints instead of a traceback
    assert len(shown) == 1 and "\n" not in shown[0] and shown[0].startswith("ActionableError: ")
    for needle in needles:
        assert needle in shown[0], shown[0]


@pytest.mark.parametrize("bucket", [INSTRUCTOR_BUCKET, "learners-own-bucket-never-created"])
def test_mtrl_bucket_set_still_takes_the_attached_runs_datasets(account, monkeypatch, bucket):
    attachment = attach(account)
    monkeypatch.setenv(storage.BUCKET_ENV_VAR, bucket)
    with live():
        found = resources._discover_live(account)
    assert (found.train_s3_uri, found.validation_s3_uri) == (attachment.train_s3_uri, attachment.validation_s3_uri)
    assert found.bucket == bucket  # the bucket the learner named stays theirs (outputs go there)


def test_getrole_refused_ends_in_one_line_or_takes_the_attached_role(account, monkeypatch):
    refuse(monkeypatch, "iam", "GetRole")
    with live(), pytest.raises(errors.ActionableError) as refused:
        resources._discover_live(account)
    assert_one_clear_line(refused.value, "GetRole: AccessDenied", "iam:GetRole", resources.JOB_ROLE_ENV)
    attachment = attach(account)
    with live():
        assert resources._discover_live(account).job_role_arn == attachment.job_role_arn


def test_headbucket_403_ends_in_one_line_or_takes_the_attached_datasets(account, monkeypatch):
    account.client("iam").create_role(RoleName=f"mtrl-wordle-job-role-{LEARNER_RUN}", AssumeRolePolicyDocument="{}")
    refuse(monkeypatch, "s3", "HeadBucket", code="403")
    with live(), pytest.raises(errors.ActionableError) as refused:
        resources._discover_live(account)
    assert_one_clear_line(refused.value, "HeadBucket: 403", "s3:ListBucket", storage.BUCKET_ENV_VAR)
    attachment = attach(account)
    with live():
        assert resources._discover_live(account).train_s3_uri == attachment.train_s3_uri


def test_listagentruntimes_refused_ends_in_one_line_or_takes_the_attached_runtime(account, monkeypatch):
    refuse(monkeypatch, "bedrock-agentcore-control", "ListAgentRuntimes", code="AccessDeniedException")
    with live(), pytest.raises(errors.ActionableError) as refused:
        resources._discover_live(account)
    assert_one_clear_line(
        refused.value, "ListAgentRuntimes: AccessDeniedException", "bedrock-agentcore:ListAgentRuntimes"
    )
    attachment = attach(account)
    with live():
        assert resources._discover_live(account).runtime_arn == attachment.runtime_arn


def test_the_deployed_effort_unreadable_ends_in_one_line_and_a_gone_runtime_is_none(account, monkeypatch):
    attachment = attach(account)
    with live():
        found = resources._discover_live(account)
    assert found.runtime_arn == attachment.runtime_arn
    refuse(monkeypatch, "bedrock-agentcore-control", "GetAgentRuntime", code="AccessDeniedException")
    with live(), pytest.raises(errors.ActionableError) as refused:
        resources.deployed_reasoning_effort(found, account)
    assert_one_clear_line(refused.value, "GetAgentRuntime: AccessDeniedException", "bedrock-agentcore:GetAgentRuntime")
    refuse(monkeypatch, "bedrock-agentcore-control", "GetAgentRuntime", code="ResourceNotFoundException", status=404)
    with live():
        assert resources.deployed_reasoning_effort(found, account) is None
