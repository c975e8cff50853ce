"""Region advice checked against boto3's own resolution, not against what we believe it reads.

The advice used to say "set AWS_REGION"; boto3 never reads it (botocore takes AWS_DEFAULT_REGION
or the profile's region), so a learner who followed it kept the same error.
"""

from __future__ import annotations

import re
from pathlib import Path

import boto3
import pytest
from mtrl_course import aws, config, preflight

REPO = Path(config.REPO_ROOT)
VARIABLE = re.compile(r"\bAWS_[A-Z_]+\b")


@pytest.fixture
def no_region(monkeypatch, tmp_path):
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE", "AWS_DEFAULT_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    return monkeypatch


def resolves_with(monkeypatch, name: str) -> str | None:
    monkeypatch.setenv(name, "eu-west-1")
    try:
        return boto3.Session().region_name
    finally:
        monkeypatch.delenv(name)


def test_boto3_reads_aws_default_region_and_not_aws_region(no_region):
    assert resolves_with(no_region, "AWS_DEFAULT_REGION") == "eu-west-1"
    assert resolves_with(no_region, "AWS_REGION") is None


def test_boto3_reads_the_profile_region(no_region, tmp_path):
    (tmp_path / "no-config").write_text("[default]\nregion = ap-south-1\n")
    assert boto3.Session().region_name == "ap-south-1"


def first_variable(advice: str) -> str:
    found = VARIABLE.search(advice)
    assert found, advice
    return found.group()


def test_following_the_session_error_fixes_it(no_region):
    no_region.setattr(config, "MODE", config.Mode.LIVE)
    with pytest.raises(RuntimeError, match="No AWS Region") as info:
        aws.session()
    assert resolves_with(no_region, first_variable(str(info.value))) == "eu-west-1"


def test_the_session_error_says_aws_region_was_ignored(no_region):
    no_region.setattr(config, "MODE", config.Mode.LIVE)
    no_region.setenv("AWS_REGION", "eu-west-1")
    with pytest.raises(RuntimeError, match="AWS_REGION='eu-west-1' is set, but boto3 ignores it"):
        aws.session()


def test_following_the_preflight_advice_fixes_it(no_region):
    check = preflight.check_region(None)
    assert resolves_with(no_region, first_variable(check.fix)) == "eu-west-1"


def test_no_message_or_page_advises_aws_region():
    # Where AWS_REGION appears it must be named as what boto3 ignores (or read by the agent,
    # whose AgentCore runtime sets it), never as the thing to set.
    advice = re.compile(r"set (?:`)?AWS_REGION\b|AWS_REGION(?:`)? \(or AWS_DEFAULT_REGION", re.IGNORECASE)
    files = [*(REPO / "agent_src").rglob("*.py"), REPO / "README.md", *(REPO / "docs").rglob("*.md")]
    offenders = [
        f"{path.relative_to(REPO)}:{n}"
        for path in files
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if advice.search(line)
    ]
    assert offenders == []
