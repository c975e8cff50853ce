"""The course's IAM step: role trust and policies, the caller policy and its evaluation, the
wrong-principal demonstration, names, tags and masking. Offline against moto; live paths with
stub sessions (no network)."""

from __future__ import annotations

import json

import pytest
from mtrl_course import config, iam, naming

# Built at run time so no real-looking account ID is written in a committed file.
REAL_LOOKING = "4" + "0" * 7 + "9876"


@pytest.fixture
def offline(offline_session):
    return offline_session


@pytest.fixture
def live():
    # Not monkeypatch: the autouse env fixture's monkeypatch is undone only after `offline` resets
    # the backend, which refuses to run in live mode. Listed after `offline`, this undoes first.
    previous, config.MODE = config.MODE, config.Mode.LIVE
    yield
    config.MODE = previous


def role_tags(session, name: str) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in session.client("iam").list_role_tags(RoleName=name)["Tags"]}


# --- masking, names, tags --------------------------------------------------------------------------


def test_mask_account_hides_real_accounts_and_keeps_placeholders():
    text = f"arn:aws:iam::{REAL_LOOKING}:role/x and arn:aws:iam::{config.MOTO_ACCOUNT}:role/y ({config.PLACEHOLDER_ACCOUNT})"
    masked = naming.mask_account(text)
    assert REAL_LOOKING not in masked and "********9876" in masked
    assert config.MOTO_ACCOUNT in masked and config.PLACEHOLDER_ACCOUNT in masked
    assert naming.mask_account("order 1234567890123") == "order 1234567890123"  # 13 digits: not an account


def test_run_id_is_fixed_offline_and_overridable(monkeypatch):
    monkeypatch.delenv(naming.RUN_ID_ENV_VAR, raising=False)
    assert naming.run_id() == naming.OFFLINE_RUN_ID
    monkeypatch.setenv(naming.RUN_ID_ENV_VAR, "Lab7")
    assert naming.run_id() == "lab7"
    monkeypatch.setenv(naming.RUN_ID_ENV_VAR, "no spaces please")
    with pytest.raises(ValueError, match="MTRL_RUN_ID"):
        naming.run_id()


def test_live_run_id_is_created_once_and_reused(live, monkeypatch, tmp_path):
    monkeypatch.delenv(naming.RUN_ID_ENV_VAR, raising=False)
    monkeypatch.setattr(naming, "RUN_ID_FILE", tmp_path / "run_id")
    first = naming.run_id()
    assert naming.RUN_ID_PATTERN.match(first) and first != naming.OFFLINE_RUN_ID
    assert naming.run_id() == first == (tmp_path / "run_id").read_text().strip()


def test_names_and_tags():
    assert naming.resource_name(iam.JOB_ROLE_KIND, "offline") == "mtrl-wordle-job-role-offline"
    with pytest.raises(ValueError, match="64"):
        naming.resource_name("x" * 60, "offline")
    tags = {t["Key"]: t["Value"] for t in naming.course_tags("01", "abc123")}
    assert tags == {"course": config.COURSE_TAG, "run_id": "abc123", "notebook": "01"}


# --- documents -----------------------------------------------------------------------------------------


def test_job_role_trust_policy_names_the_job_principal_and_both_actions():
    statement = iam.job_role_trust_policy()["Statement"][0]
    assert statement["Principal"] == {"Service": "job.sagemaker.amazonaws.com"}
    assert statement["Action"] == ["sts:AssumeRole", "sts:TagSession"]
    assert iam.trust_problems(iam.job_role_trust_policy(), iam.JOB_SERVICE, iam.JOB_TRUST_ACTIONS) == []


@pytest.mark.parametrize(
    ("service", "actions", "problem"),
    [
        ("sagemaker.amazonaws.com", ["sts:AssumeRole", "sts:TagSession"], "does not trust job.sagemaker.amazonaws.com"),
        ("job.sagemaker.amazonaws.com", ["sts:AssumeRole"], "does not allow sts:TagSession"),
    ],
)
def test_trust_problems_name_what_is_wrong(service, actions, problem):
    problems = iam.trust_problems(
        json.dumps(iam.trust_policy(service, actions)), iam.JOB_SERVICE, iam.JOB_TRUST_ACTIONS
    )
    assert len(problems) == 1 and problem in problems[0]


def test_trust_wildcard_actions_count():
    document = iam.trust_policy(iam.JOB_SERVICE, ["sts:*"])
    assert iam.trust_problems(document, iam.JOB_SERVICE, iam.JOB_TRUST_ACTIONS) == []


def test_caller_policy_limits_passrole_to_the_job_service_and_the_evaluators_pipeline():
    role = f"arn:aws:iam::{config.MOTO_ACCOUNT}:role/r"
    passes = [s for s in iam.caller_passrole_policy(role)["Statement"] if s["Action"] == "iam:PassRole"]
    assert {p["Resource"] for p in passes} == {role}
    assert [p["Condition"] for p in passes] == [
        {"StringEquals": {"iam:PassedToService": "job.sagemaker.amazonaws.com"}},
        {"StringEquals": {"iam:PassedToService": "sagemaker.amazonaws.com"}},
    ]
    with pytest.raises(ValueError, match="'my-role'"):
        iam.caller_passrole_policy("my-role")


# --- the evaluator -------------------------------------------------------------------------------------------


def test_evaluate_policy_on_the_caller_scenarios():
    role = f"arn:aws:iam::{config.MOTO_ACCOUNT}:role/job"
    document = iam.caller_passrole_policy(role)
    decisions = [
        iam.evaluate_policy([document], s.action, s.resource, s.context())
        for s in iam.caller_scenarios(role, "us-east-1")
    ]
    assert decisions == ["allowed", "allowed", "implicitDeny", "implicitDeny", "allowed", "allowed", "allowed"]
    assert [s.should_allow for s in iam.caller_scenarios(role, "us-east-1")] == [d == "allowed" for d in decisions]


def test_evaluate_policy_rules():
    allow = {"Statement": [{"Effect": "Allow", "Action": "s3:Get*", "Resource": "*"}]}
    deny = {"Statement": {"Effect": "Deny", "NotAction": "s3:GetBucket*", "Resource": "arn:aws:s3:::b/*"}}
    assert iam.evaluate_policy([allow], "S3:GetObject", "arn:aws:s3:::b/k") == "allowed"  # actions ignore case
    assert iam.evaluate_policy([allow, deny], "s3:GetObject", "arn:aws:s3:::b/k") == "explicitDeny"
    assert iam.evaluate_policy([allow, deny], "s3:GetBucketPolicy", "arn:aws:s3:::b/k") == "allowed"
    assert iam.evaluate_policy([allow], "s3:PutObject", "*") == "implicitDeny"

    def conditioned(operator: str) -> dict:
        return {
            "Statement": [
                {
                    "Effect": "Allow",
                    "Action": "*",
                    "Resource": "*",
                    "Condition": {operator: {"iam:PassedToService": "job.*"}},
                }
            ]
        }

    assert (
        iam.evaluate_policy([conditioned("StringLike")], "iam:PassRole", "*", {"iam:PassedToService": ["job.x"]})
        == "allowed"
    )
    assert iam.evaluate_policy([conditioned("StringLike")], "iam:PassRole", "*") == "implicitDeny"  # key missing
    assert iam.evaluate_policy([conditioned("StringLikeIfExists")], "iam:PassRole", "*") == "allowed"
    assert (
        iam.evaluate_policy([conditioned("StringNotLike")], "iam:PassRole", "*", {"iam:PassedToService": ["job.x"]})
        == "implicitDeny"
    )
    with pytest.raises(ValueError, match="NumericLessThan"):
        iam.evaluate_policy([conditioned("NumericLessThan")], "iam:PassRole", "*", {"iam:PassedToService": ["1"]})


# --- roles, offline --------------------------------------------------------------------------------------------


def test_ensure_job_role_creates_tags_and_attaches_the_stand_in(offline):
    report = iam.ensure_job_role(session=offline)
    assert report.ok and report.created
    # job.sagemaker.amazonaws.com for the service; sagemaker.amazonaws.com for the SDK's pre-flight.
    assert report.trusted_services == ("job.sagemaker.amazonaws.com", "sagemaker.amazonaws.com")
    assert report.trust_actions == ("sts:AssumeRole", "sts:TagSession")
    policy_arn, inline = report.policies
    assert inline == f"inline: {iam.JOB_ROLE_INLINE_POLICY}"
    assert policy_arn == f"arn:aws:iam::{config.MOTO_ACCOUNT}:policy/aws-managed-stand-in/AmazonSageMakerJobFullAccess"
    assert any("offline stand-in" in note for note in report.notes)
    assert role_tags(offline, report.name) == {"course": config.COURSE_TAG, "run_id": "offline", "notebook": "01"}
    client = offline.client("iam")
    version = client.get_policy(PolicyArn=policy_arn)["Policy"]["DefaultVersionId"]
    document = client.get_policy_version(PolicyArn=policy_arn, VersionId=version)["PolicyVersion"]["Document"]
    actions = {a for s in document["Statement"] for a in iam._as_list(s["Action"])}
    assert "bedrock-agentcore:InvokeAgentRuntime" in actions  # the AWS document, not an empty placeholder
    assert report.as_rows()["fit for the job"] == "yes"


def test_ensure_job_role_reuses_and_repairs_a_generic_principal_role(offline):
    name = "mtrl-wordle-job-role-test"
    offline.client("iam").create_role(
        RoleName=name,
        AssumeRolePolicyDocument=json.dumps(iam.trust_policy(iam.GENERIC_SAGEMAKER_SERVICE, iam.JOB_TRUST_ACTIONS)),
    )
    repaired = iam.ensure_job_role(name, session=offline)
    assert repaired.ok and not repaired.created
    assert any("trust policy replaced" in note for note in repaired.notes)
    again = iam.ensure_job_role(name, session=offline)
    assert again.ok and not again.created and len(again.policies) == 2  # the managed policy and the inline one


def test_ensure_runtime_role_offline_creates_the_stand_in(offline):
    report = iam.ensure_runtime_role(session=offline)
    assert report.ok and report.trusted_services == ("bedrock-agentcore.amazonaws.com",)
    assert report.policies[0].endswith("/AmazonSageMakerJobRuntimeAccess")
    assert report.notes[0].startswith("offline stand-in for the role agentcore deploy creates")


def test_a_role_without_its_policy_is_not_fit(offline):
    name = "bare-role"
    offline.client("iam").create_role(RoleName=name, AssumeRolePolicyDocument=json.dumps(iam.job_role_trust_policy()))
    report = iam._describe(
        offline.client("iam"),
        "training job role",
        name,
        iam.JOB_SERVICE,
        iam.JOB_TRUST_ACTIONS,
        iam.JOB_POLICY_NAME,
        created=False,
        notes=(),
    )
    assert not report.ok and report.problems == ("the policy AmazonSageMakerJobFullAccess is not attached",)
    assert report.as_rows()["fit for the job"].startswith("no: the policy")


def test_ensure_runtime_role_live_finds_the_deployed_runtimes_role(offline, live):
    from mtrl_course import deploy

    absent = iam.ensure_runtime_role(session=offline)
    assert not absent.exists and "notebook 02" in absent.notes[0]
    client = offline.client("iam")
    role_arn = client.create_role(
        RoleName="AgentCoreRole", AssumeRolePolicyDocument=json.dumps(iam.runtime_role_trust_policy())
    )["Role"]["Arn"]
    policy = client.create_policy(
        PolicyName=iam.RUNTIME_POLICY_NAME,
        PolicyDocument=json.dumps(
            {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sagemaker:Sample", "Resource": "*"}]}
        ),
    )["Policy"]["Arn"]
    client.attach_role_policy(RoleName="AgentCoreRole", PolicyArn=policy)
    offline.client("bedrock-agentcore-control").create_agent_runtime(
        agentRuntimeName=deploy.deployed_runtime_name(),
        agentRuntimeArtifact={
            "containerConfiguration": {"containerUri": f"{config.MOTO_ACCOUNT}.dkr.ecr.us-east-1.amazonaws.com/a:1"}
        },
        roleArn=role_arn,
        networkConfiguration={"networkMode": "PUBLIC"},
    )
    found = iam.ensure_runtime_role(session=offline)
    assert found.ok and found.name == "AgentCoreRole" and not found.created


# --- the caller policy, simulated ----------------------------------------------------------------------


def test_simulate_caller_policy_offline(offline):
    role = iam.ensure_job_role(session=offline).arn
    table = iam.simulate_caller_policy(role, session=offline)
    assert list(table["decision"]) == [
        "allowed",
        "allowed",
        "implicitDeny",
        "implicitDeny",
        "allowed",
        "allowed",
        "allowed",
    ]
    assert set(table["decided by"]) == {"course evaluator (offline)"}


class StubIam:
    """Answers simulate_* with a fixed decision and records what it was asked."""

    def __init__(self, decision: str):
        self.decision = decision
        self.calls: list[tuple[str, dict]] = []

    def simulate_custom_policy(self, **params):
        self.calls.append(("custom", params))
        return {"EvaluationResults": [{"EvalActionName": params["ActionNames"][0], "EvalDecision": self.decision}]}

    def simulate_principal_policy(self, **params):
        self.calls.append(("principal", params))
        return {"EvaluationResults": [{"EvalActionName": params["ActionNames"][0], "EvalDecision": self.decision}]}

    def get_role(self, RoleName):
        return {"Role": {"Arn": f"arn:aws:iam::{REAL_LOOKING}:role/team/{RoleName}"}}


class StubSts:
    def get_caller_identity(self):
        return {"Account": REAL_LOOKING, "Arn": f"arn:aws:sts::{REAL_LOOKING}:assumed-role/Learner/session-1"}


class StubSession:
    region_name = "us-west-2"

    def __init__(self, decision: str = "allowed"):
        self.iam = StubIam(decision)

    def client(self, name):
        return {"iam": self.iam, "sts": StubSts()}[name]


def test_simulate_caller_policy_live_asks_iam_and_masks(live):
    session = StubSession("allowed")
    role = f"arn:aws:iam::{REAL_LOOKING}:role/job"
    table = iam.simulate_caller_policy(role, session=session)
    kinds = {kind for kind, _ in session.iam.calls}
    assert kinds == {"custom"} and len(session.iam.calls) == len(table) == 7
    first = session.iam.calls[0][1]
    assert json.loads(first["PolicyInputList"][0]) == iam.caller_passrole_policy(role)
    assert first["ContextEntries"] == [
        {
            "ContextKeyName": "iam:PassedToService",
            "ContextKeyValues": ["job.sagemaker.amazonaws.com"],
            "ContextKeyType": "string",
        }
    ]
    assert set(table["decided by"]) == {"IAM policy simulator"}
    assert not table.to_string().count(REAL_LOOKING)


def test_check_my_permissions_uses_the_role_behind_an_assumed_role_session(live):
    session = StubSession("implicitDeny")
    table = iam.check_my_permissions(f"arn:aws:iam::{REAL_LOOKING}:role/job", session=session)
    sources = {params["PolicySourceArn"] for kind, params in session.iam.calls if kind == "principal"}
    assert sources == {f"arn:aws:iam::{REAL_LOOKING}:role/team/Learner"}
    assert list(table["decision"]) == ["implicitDeny"] * 5


# --- the wrong principal ------------------------------------------------------------------------------------


def test_wrong_principal_fails_like_the_service_then_names_the_principal(offline):
    right = iam.ensure_job_role(session=offline).arn
    table = iam.demonstrate_wrong_principal(session=offline, right_role_arn=right)
    wrong = table[table["attempt"] != "contrast"]
    assert list(wrong["error code"]) == ["ValidationException"] * 3
    assert all(m.startswith("Could not assume role") for m in wrong["message"])
    named = ["'job.sagemaker.amazonaws.com'" in m for m in wrong["message"]]
    assert named == [False, False, True]
    contrast = table[table["attempt"] == "contrast"].iloc[0]
    assert "Could not assume role" not in contrast["message"]  # the right role got past the role check
    assert not iam.role_exists(naming.resource_name(iam.WRONG_PRINCIPAL_KIND), session=offline)


def test_wrong_principal_is_not_run_live(live, capsys):
    assert iam.demonstrate_wrong_principal(session=StubSession()) is None
    assert "live: not run" in capsys.readouterr().out


def test_job_role_passes_the_sdk_role_check_and_the_service(offline):
    """The real SDK resolver accepts the job role (it looks for sagemaker.amazonaws.com)."""
    from sagemaker.core.helper import iam_role_resolver

    doc = iam.job_role_trust_policy()
    trusted = iam_role_resolver._trusted_services_in_document(doc)
    assert iam_role_resolver._expected_trust_services("training") <= trusted
    assert "job.sagemaker.amazonaws.com" in trusted
    assert not iam.trust_problems(doc, "job.sagemaker.amazonaws.com", ("sts:AssumeRole", "sts:TagSession"))
