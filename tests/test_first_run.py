"""`mtrl smoke` (mtrl_course.first_run): the first live run, end to end offline, its live branch stubbed.

- Offline the whole chain runs against the stand-ins through the command itself, and its report
  records every contract (as a stand-in's answer, never as a confirmation).
- Live, each AWS read the chain makes is answered by botocore's Stubber (which checks every
  request against the service model) and the deploy runs the real AgentCore CLI against the
  loopback stub of tests/live_tools.py: the step stops with the CLI's own message.
- Nothing after the estimate starts live without the opt-in; the report holds no account number.
"""

from __future__ import annotations

import json
import re
import shutil

import boto3
import pytest
from botocore.stub import Stubber

from mtrl_course import cli, commands, config, deploy, first_run, service_spec

# Built at run time so no real-looking account ID is written in a committed file.
REAL_LOOKING = "4" + "0" * 7 + "9876"
REGION = "us-east-1"
TWELVE_DIGITS = re.compile(r"(?<!\d)\d{12}(?!\d)")


@pytest.fixture
def live(monkeypatch):
    """Live mode, and no offline backend behind botocore: a client's call reaches its Stubber (or,
    unstubbed, the network guard), as it would reach AWS. An earlier test on this worker may have
    activated the backend, which routes every call in the process while it is set."""
    from mtrl_course import aws

    monkeypatch.setattr(aws, "_BACKEND", None)
    previous, config.MODE = config.MODE, config.Mode.LIVE
    yield
    config.MODE = previous


# ------------------------------------------------------------------------------------ offline
def test_the_offline_chain_runs_end_to_end_through_the_command(offline_backend, tmp_path, capsys) -> None:
    prices = ["--price-prefill", "0.1", "--price-sample", "0.2", "--price-train", "0.3"]
    code = cli.main(["smoke", "--report-dir", str(tmp_path / "reports"), *prices])
    out = capsys.readouterr().out
    assert code == 0, out
    (report,) = (tmp_path / "reports").glob("report-offline-*.json")
    data = json.loads(report.read_text(encoding="utf-8"))
    assert data["ok"] and [s["name"] for s in data["steps"]] == [
        "preflight",
        "estimate",
        "roles and data",
        "deploy",
        "invoke",
        "MLflow app",
        "train",
        "evaluate",
        "clean-up",
    ]
    assert {s["status"] for s in data["steps"]} == {first_run.OK}
    verdicts = {c["key"]: c["verdict"] for c in data["contracts"]}
    # Offline nothing is confirmed: every contract is the stand-in's, with what it would say.
    assert set(verdicts) == {c.key for c in first_run.CONTRACTS}
    assert set(verdicts.values()) == {first_run.STAND_IN}
    observed = {c["key"]: c["observed"] for c in data["contracts"]}
    assert observed["token_caps"]["training_sampling_max_tokens"] == "8192"
    assert observed["token_caps"]["evaluation_sampling_max_tokens"] == "8192"
    assert observed["mlflow_metric_names"]["training_missing"] == []
    assert observed["evaluation_names"]["names_in_schema"]["sampling_max_tokens"] is True
    # The estimate shows its arithmetic at the prices given; the MLflow app's is not in our sources.
    rows = {row["item"]: row for row in data["estimate"]}
    assert "x $0.1/M = $" in rows["prefill tokens"]["arithmetic"] and "x $0.3/M" in rows["train tokens"]["arithmetic"]
    assert rows["MLflow app"]["usd"] is None and "not priced: MLflow app" in rows["total"]["arithmetic"]
    assert report.with_suffix(".md").is_file()
    assert "[clean-up] ok" in out and "stand-in only" in out


def test_the_estimate_is_arithmetic_on_your_prices_only() -> None:
    games = first_run.planned_rollouts()
    # One step of 32 prompts x 2 rollouts; validation on 8 words at steps 0 and 1; 4 evaluation words.
    assert games == {"training": 64, "validation": 16, "evaluation": 4}
    unpriced = first_run.estimate(None)
    assert [row["usd"] for row in unpriced if row["item"].endswith("tokens")] == [None, None, None]
    priced = {row["item"]: row for row in first_run.estimate({"prefill": 1.0, "sample": 2.0, "train": 3.0})}
    per_game = 491_600_000 / 105_486  # the walkthrough's prefill tokens per rollout (cited in costs)
    assert priced["prefill tokens"]["usd"] == pytest.approx(84 * per_game / 1e6 * 1.0)
    assert priced["train tokens"]["arithmetic"].startswith("80 games")  # evaluation trains nothing
    assert priced["MLflow app"]["usd"] is None
    with pytest.raises(ValueError):
        first_run.estimate({"prefill": -1})


def test_the_report_is_scrubbed(tmp_path) -> None:
    run = first_run.FirstRun(mode="live", region=REGION, started="2026-12-07T00:00:00Z")
    key = "AKIA" + "ABCDEFGHIJKLMNOP"
    secret = "a" * 20 + "/" + "B" * 19
    run.steps = [
        first_run.StepResult("deploy", first_run.FAILED, 1.0, f"arn:aws:iam::{REAL_LOOKING}:role/x {key} {secret}")
    ]
    run.observe("runtime_policy", first_run.CONFIRMED, role=f"role of {REAL_LOOKING}")
    path = first_run.write_report(run, tmp_path)
    for text in (path.read_text(encoding="utf-8"), path.with_suffix(".md").read_text(encoding="utf-8")):
        assert REAL_LOOKING not in text and key not in text and secret not in text
        assert "********9876" in text
        assert all(m in (config.PLACEHOLDER_ACCOUNT, config.MOTO_ACCOUNT) for m in TWELVE_DIGITS.findall(text))


# ------------------------------------------------------------------------------- live, stubbed
class StubbedSession:
    """A boto3-like session whose clients are real botocore clients behind Stubbers."""

    def __init__(self) -> None:
        base = boto3.Session(aws_access_key_id="testing", aws_secret_access_key="testing", region_name=REGION)
        self.region_name = REGION
        self._credentials = base.get_credentials()
        self.clients = {name: base.client(name) for name in ("sts", "sagemaker", "iam", "bedrock-agentcore-control")}
        self.stubs = {name: Stubber(client) for name, client in self.clients.items()}

    def client(self, name: str, **_: object):
        return self.clients[name]

    def get_credentials(self):
        return self._credentials

    def __enter__(self):
        for stub in self.stubs.values():
            stub.activate()
        return self

    def __exit__(self, *exc):
        for stub in self.stubs.values():
            stub.deactivate()


def _preflight_answers(session: StubbedSession, schema: dict) -> None:
    identity = {"Account": REAL_LOOKING, "Arn": f"arn:aws:iam::{REAL_LOOKING}:user/me", "UserId": "AIDAEXAMPLE"}
    session.stubs["sts"].add_response("get_caller_identity", identity, {})
    sagemaker = session.stubs["sagemaker"]
    sagemaker.add_response(
        "list_job_schema_versions",
        {"JobConfigSchemas": [{"JobConfigSchemaVersion": "1.0.0"}]},
        {"JobCategory": "AgentRFT"},
    )
    for category in ("AgentRFT", "AgentRFTEvaluation"):
        sagemaker.add_response(
            "list_jobs",
            {"JobSummaries": []},
            {"JobCategory": category, "StatusEquals": "InProgress", "MaxResults": 100},
        )
    sagemaker.add_response(
        "describe_job_schema_version",
        {
            "JobCategory": service_spec.EVALUATION,
            "JobConfigSchemaVersion": "1.0.0",
            "JobConfigSchema": json.dumps(schema),
        },
        {"JobCategory": service_spec.EVALUATION, "JobConfigSchemaVersion": "1.0.0"},
    )


def _schema(*names: str) -> dict:
    return {
        "properties": {"EvaluationConfig": {"properties": {"HyperParameters": {"properties": {n: {} for n in names}}}}}
    }


def test_live_without_the_opt_in_stops_after_the_estimate_having_created_nothing(live, tmp_path, monkeypatch) -> None:
    monkeypatch.setattr("shutil.which", lambda name: None)  # no node, CLI or uv: warnings, not failures
    with StubbedSession() as session:
        _preflight_answers(session, _schema("temperature", "sampling_top_p", "sampling_max_tokens"))
        lines: list[str] = []
        run, path = first_run.run_first(session=session, echo=lines.append, report_dir=tmp_path)
        for stub in session.stubs.values():
            stub.assert_no_pending_responses()  # and any further call would have raised
    assert [s.status for s in run.steps][:3] == [first_run.OK, first_run.SKIPPED, first_run.NOT_RUN]
    assert first_run.OPT_IN_FLAG in run.steps[1].message
    assert run.contracts["evaluation_names"].verdict == first_run.CONFIRMED
    assert run.contracts["agentrft_enablement"].observed["list_job_schema_versions"] == ["1.0.0"]
    text = path.read_text(encoding="utf-8")
    assert REAL_LOOKING not in text and run.region == REGION
    assert any("AgentCore runtime" in line for line in lines)


def test_an_evaluation_schema_with_the_sdk_s_names_is_a_contradiction(live) -> None:
    run = first_run.FirstRun(mode="live")
    with StubbedSession() as session:
        session.stubs["sagemaker"].add_response(
            "describe_job_schema_version",
            {
                "JobCategory": service_spec.EVALUATION,
                "JobConfigSchemaVersion": "1.0.0",
                "JobConfigSchema": json.dumps(_schema("temperature", "sampling_temperature", "max_tokens")),
            },
            {"JobCategory": service_spec.EVALUATION, "JobConfigSchemaVersion": "1.0.0"},
        )
        first_run.observe_evaluation_schema(run, session)
    seen = run.contracts["evaluation_names"]
    assert seen.verdict == first_run.CONTRADICTED
    assert seen.observed["names_in_schema"]["sampling_temperature"] is True
    assert seen.observed["names_in_schema"]["sampling_max_tokens"] is False


@pytest.mark.parametrize(("attached", "verdict"), [(True, "confirmed"), (False, "contradicted")])
def test_the_runtime_role_s_policies_are_read_from_the_deployed_runtime(live, attached, verdict) -> None:
    run = first_run.FirstRun(mode="live")
    runtime_arn = f"arn:aws:bedrock-agentcore:{REGION}:{REAL_LOOKING}:runtime/WordleMTRL_WordleAgent-abc1234567"
    role = "AgentCore-WordleMTRL-default-RuntimeRole-XYZ"
    with StubbedSession() as session:
        session.stubs["bedrock-agentcore-control"].add_response(
            "get_agent_runtime",
            {
                "agentRuntimeArn": runtime_arn,
                "agentRuntimeName": "WordleMTRL_WordleAgent",
                "agentRuntimeId": "WordleMTRL_WordleAgent-abc1234567",
                "agentRuntimeVersion": "1",
                "createdAt": "2026-12-07T00:00:00Z",
                "lastUpdatedAt": "2026-12-07T00:00:00Z",
                "roleArn": f"arn:aws:iam::{REAL_LOOKING}:role/{role}",
                "networkConfiguration": {"networkMode": "PUBLIC"},
                "status": "READY",
                "lifecycleConfiguration": {"idleRuntimeSessionTimeout": 900, "maxLifetime": 28800},
            },
            {"agentRuntimeId": "WordleMTRL_WordleAgent-abc1234567"},
        )
        policies = [{"PolicyName": "AmazonSageMakerJobRuntimeAccess", "PolicyArn": deploy.JOB_RUNTIME_POLICY_ARN}]
        session.stubs["iam"].add_response(
            "list_attached_role_policies",
            {"AttachedPolicies": policies if attached else [], "IsTruncated": False},
            {"RoleName": role},
        )
        first_run.observe_runtime_policy(run, session, runtime_arn)
    assert run.contracts["runtime_policy"].verdict == verdict


def test_the_job_document_s_cap_and_status_are_read_back(live) -> None:
    run = first_run.FirstRun(mode="live")
    document = {"TrainingConfig": {"HyperParameters": {"sampling_max_tokens": "8192"}}}
    with StubbedSession() as session:
        session.stubs["sagemaker"].add_response(
            "describe_job",
            {
                "JobName": "mtrl-wordle-train-x",
                "JobArn": f"arn:aws:sagemaker:{REGION}:{REAL_LOOKING}:job/AgentRFT/mtrl-wordle-train-x",
                "JobCategory": "AgentRFT",
                "RoleArn": f"arn:aws:iam::{REAL_LOOKING}:role/mtrl-wordle-job-role",
                "JobConfigSchemaVersion": "1.0.0",
                "JobConfigDocument": json.dumps(document),
                "CreationTime": "2026-12-07T00:00:00Z",
                "LastModifiedTime": "2026-12-07T01:00:00Z",
                "JobStatus": "Completed",
                "SecondaryStatus": "Completed",
                "SecondaryStatusTransitions": [],
            },
            {"JobName": "mtrl-wordle-train-x", "JobCategory": "AgentRFT"},
        )
        first_run.observe_job_document(run, session, "mtrl-wordle-train-x", "AgentRFT")
    seen = run.contracts["token_caps"]
    assert seen.verdict == first_run.CONFIRMED and seen.observed["training_sampling_max_tokens"] == "8192"


# -------------------------------------------------------------- live deploy, through the real CLI
def test_the_live_deploy_step_runs_the_real_cli_and_stops_with_its_message(live, tmp_path, monkeypatch) -> None:
    """The chain's deploy step, live: aws-targets.json from the caller's identity, the bundle, and
    `agentcore deploy -y` through commands.run (no terminal). The stub answers STS with another
    account than the one the targets file got, so the CLI stops at its first AWS call, and the
    step fails with the CLI's own words."""
    import live_tools

    agentcore_bin = live_tools.install_agentcore_cli()
    root = tmp_path / "checkout"
    shutil.copytree(
        deploy.AGENTCORE_DIR,
        root / commands.AGENTCORE_PROJECT_DIR / "agentcore",
        ignore=shutil.ignore_patterns("node_modules", "cdk.out", "dist", ".cli"),
    )
    run = first_run.FirstRun(mode="live")
    with live_tools.StubEndpoint() as endpoint, StubbedSession() as session:
        for name, value in live_tools.tool_environment(endpoint, tmp_path / "home", agentcore_bin).items():
            monkeypatch.setenv(name, value)
        session.stubs["sts"].add_response(
            "get_caller_identity",
            {"Account": REAL_LOOKING, "Arn": f"arn:aws:iam::{REAL_LOOKING}:user/me", "UserId": "AIDAEXAMPLE"},
            {},
        )
        ctx = first_run._Context(session=session, echo=lambda line: None, project_root=root)
        with pytest.raises(commands.CommandFailed) as failed:
            first_run._step_deploy(run, ctx)
    assert failed.value.returncode == 1
    assert "Your AWS credentials are for account" in failed.value.output
    assert endpoint.actions() == ["GetCallerIdentity"]
    targets = json.loads((root / commands.AGENTCORE_PROJECT_DIR / "agentcore" / "aws-targets.json").read_text())
    assert targets[0]["account"] == REAL_LOOKING and targets[0]["region"] == REGION
