"""A role a service assumes right after it was created: a bounded wait, said out loud.

IAM is eventually consistent, so CreateMlflowApp with the MLflow role created a moment earlier
may be refused because SageMaker cannot assume the role yet. `iam.call_with_new_role` retries
that one refusal, for a role created just before, for a bounded time; offline the stand-in
refuses twice on purpose and the wait is replaced, so nothing sleeps.
"""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError

from mtrl_course import aws, errors, iam, resources, storage
from mtrl_course.errors import ServiceError

# Built at run time so no real-looking account ID is written in a committed file; masked everywhere.
REAL_LOOKING_ACCOUNT = "4" + "0" * 7 + "9876"
NOT_ASSUMABLE = (
    f"Could not assume role arn:aws:iam::{REAL_LOOKING_ACCOUNT}:role/mtrl-wordle-mlflow-role-offline. Please ensure that the "
    "role exists and allows principal 'sagemaker.amazonaws.com' to assume the role."
)


def _client_error(code: str, message: str) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": message}}, "CreateMlflowApp")


@pytest.fixture
def no_sleep(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    slept: list[float] = []
    monkeypatch.setattr(iam, "_sleep", slept.append)
    return slept


def test_a_new_mlflow_role_sagemaker_cannot_assume_yet_is_waited_for(
    tmp_path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], no_sleep: list[float]
) -> None:
    aws.reset_offline(tmp_path / "state")
    try:
        session = aws.session()
        bucket = storage.bucket_name(session)
        session.client("s3").create_bucket(Bucket=bucket)
        backend = aws.offline_backend()
        create = backend.handlers[("sagemaker", "CreateMlflowApp")]
        refused: list[str] = []

        def not_yet(call):
            if len(refused) < 2:
                refused.append(call.params["RoleArn"])
                raise ServiceError("ValidationException", NOT_ASSUMABLE)
            return create(call)

        monkeypatch.setitem(backend.handlers, ("sagemaker", "CreateMlflowApp"), not_yet)
        before = len(iam.ROLE_PROPAGATION_LOG)
        arn = resources.ensure_mlflow_app(session, bucket=bucket)
    finally:
        aws.reset_offline(tmp_path / "state")
    assert arn.startswith("arn:aws:sagemaker:") and len(refused) == 2
    assert no_sleep == [iam.ROLE_PROPAGATION_POLL_S, iam.ROLE_PROPAGATION_POLL_S]
    out = capsys.readouterr().out
    assert out.count("CreateMlflowApp: sagemaker.amazonaws.com cannot assume the role created a moment ago yet") == 2
    assert "retrying in 10 s" in out and REAL_LOOKING_ACCOUNT not in out and "********9876" in out
    logged = iam.ROLE_PROPAGATION_LOG[before:]
    assert [entry["what"] for entry in logged] == ["CreateMlflowApp", "CreateMlflowApp"]


def test_the_wait_is_bounded_and_ends_in_one_actionable_line(no_sleep: list[float]) -> None:
    now = [0.0]

    def clock() -> float:
        return now[0]

    def refuse() -> str:
        now[0] += 50.0
        raise _client_error("ValidationException", NOT_ASSUMABLE)

    with pytest.raises(errors.ActionableError, match="still cannot assume the new role .* run this again"):
        iam.call_with_new_role(
            refuse,
            "arn:aws:iam::123456789012:role/r",
            service="sagemaker.amazonaws.com",
            what="CreateMlflowApp",
            just_created=True,
            clock=clock,
            echo=None,
        )
    assert len(no_sleep) == 2  # 50 s and 100 s waited, then 150 s > 120 s: given up


@pytest.mark.parametrize(
    ("just_created", "code", "message"),
    [
        (False, "ValidationException", NOT_ASSUMABLE),  # an old role: the refusal is real
        (True, "ValidationException", "The artifact store bucket b does not exist"),  # another problem
        (True, "ResourceLimitExceeded", "too many apps"),
    ],
)
def test_only_a_new_role_s_assume_refusal_is_retried(just_created: bool, code: str, message: str, no_sleep) -> None:
    calls = []

    def refuse() -> None:
        calls.append(1)
        raise _client_error(code, message)

    with pytest.raises(ClientError):
        iam.call_with_new_role(
            refuse, "arn:aws:iam::123456789012:role/r", service="s", what="w", just_created=just_created, echo=None
        )
    assert calls == [1] and no_sleep == []
