"""Issue 11: the places a first live run would stop, each checked offline (items 3, 4, 8, 9)."""

from __future__ import annotations

import json

import pytest
from mtrl_course import aws, config, deploy, lockfile, smoke


@pytest.fixture
def offline(tmp_path):
    aws.reset_offline(tmp_path / "state")
    yield aws.session()
    aws.reset_offline(tmp_path / "state")


# --- item 3: targets file, bundle pins, CDK pin -----------------------------------------------------


def test_configure_targets_writes_the_callers_account_and_region(offline, tmp_path):
    targets = tmp_path / "aws-targets.json"
    targets.write_text(deploy.TARGETS_FILE.read_text(encoding="utf-8"), encoding="utf-8")
    session = aws.session("eu-west-1")
    target = deploy.configure_targets(session, targets)
    written = json.loads(targets.read_text(encoding="utf-8"))
    assert written == [target]
    assert target["account"] == config.MOTO_ACCOUNT and target["region"] == "eu-west-1"
    assert target["account"] != config.PLACEHOLDER_ACCOUNT


@pytest.mark.parametrize(
    "account, region", [("1234", "us-east-1"), ("123456789012", "mars-1"), ("12345678901x", "us-east-1")]
)
def test_write_targets_names_the_bad_input(tmp_path, account, region):
    with pytest.raises(ValueError, match="account|region"):
        deploy.write_targets(account, region, tmp_path / "t.json")


def test_the_bundle_pins_every_locked_requirement_to_the_tested_version(tmp_path):
    requirements = deploy.bundle_requirements(deploy.AGENT_PACKAGE_DIR / deploy.REQUIREMENTS_NAME, with_otel=False)
    locked = lockfile.tested_versions()
    for line in requirements:
        name = lockfile.requirement_name(line)
        assert name in locked, f"{name} is not in requirements.lock, so the bundle cannot pin it"
        assert f"=={locked[name]}" in line, line
    assert any(line.startswith("strands-agents[openai]==") for line in requirements)


def test_a_requirement_that_excludes_the_tested_version_is_refused():
    with pytest.raises(ValueError, match="tested version 1.0"):
        deploy.pin_requirement("boto3>=2", {"boto3": "1.0"})
    assert deploy.pin_requirement("unlisted>=1", {}) == "unlisted>=1"


def test_the_cdk_package_is_pinned_to_the_clis_tested_version():
    package = json.loads(deploy.CDK_PACKAGE_FILE.read_text(encoding="utf-8"))
    assert package["dependencies"][deploy.CDK_NPM_PACKAGE] == deploy.CLI_TESTED_CDK_VERSION
    template = deploy.SCHEMA_CACHE_DIR / "package" / "dist" / "assets" / "cdk" / "package.json"
    if template.is_file():  # present once `ensure_cli_schemas` has fetched CLI 0.30.0
        cli = json.loads(template.read_text(encoding="utf-8"))
        assert cli["dependencies"][deploy.CDK_NPM_PACKAGE] == deploy.CLI_TESTED_CDK_VERSION


# --- item 4: the smoke payload's fake job ARN is in the learner's Region ---------------------------


def test_the_smoke_payload_uses_the_sessions_region(offline):
    payload = smoke.smoke_payload(config.MOTO_ACCOUNT, session=aws.session("ap-southeast-2"))
    assert smoke.job_arn_region(payload) == "ap-southeast-2"
    assert f":{config.MOTO_ACCOUNT}:" in payload["metadata"]["jobArn"]


def test_a_payload_for_another_region_than_the_runtime_is_refused_before_the_call():
    runtime = f"arn:aws:bedrock-agentcore:eu-central-1:{config.MOTO_ACCOUNT}:runtime/wordle-abcdefghij"
    payload = smoke.smoke_payload(config.MOTO_ACCOUNT, "us-east-1")
    with pytest.raises(ValueError, match="eu-central-1"):
        smoke.invoke_smoke(runtime, payload)


# --- item 8: reward reports reuse the token cache; one Region for both paths --------------------------


@pytest.mark.parametrize(
    "metadata, env, expected",
    [
        ({"region": "eu-west-1", "jobArn": "arn:aws:sagemaker:ap-south-1:1:job/x"}, {}, "eu-west-1"),
        (
            {"jobArn": "arn:aws:sagemaker:ap-south-1:123456789012:job/AgentRFT/x"},
            {"AWS_REGION": "us-west-2"},
            "ap-south-1",
        ),
        ({}, {"AWS_REGION": "us-west-2"}, "us-west-2"),
        ({}, {}, "us-east-1"),
    ],
)
def test_model_signing_and_reward_reports_resolve_the_same_region(monkeypatch, metadata, env, expected):
    from sagemaker.train.rft import feedback
    from wordle_agent import auth, rollout

    for name in auth.REGION_ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    payload = rollout.sanitize_payload({"prompt": "x", "metadata": {**metadata, "rolloutId": "r1"}})
    reporter = feedback.RolloutFeedbackClient(payload["metadata"])
    assert auth.rollout_region(payload["metadata"]) == expected
    assert reporter._region == expected  # what the SDK signs its reward reports for
    with auth.use_rollout_region(auth.rollout_region(payload["metadata"])):
        assert auth.current_region() == expected  # what the model factory signs for
