"""`mtrl smoke`'s live branch from the opt-in to the report, every AWS call answered inside botocore.

The chain runs with `MTRL_MODE=live` semantics (every `config.is_live()` branch taken) while the
offline backend stays behind botocore: moto answers at `before-send` what it implements (IAM, S3,
STS, CloudWatch Logs), after botocore serialised and validated the request, and the course's
stand-ins answer the rest at the seam (`aws._routed_make_api_call`), which validates the
parameters against the service model first and checks the response against its output shape.
Each call is recorded with the outcome of that validation, and the network guard records any
attempt to leave loopback (there must be none).

`agentcore` runs through `commands.run` with a recorded `Popen`: the argv and folder must be the
ones `commands.py` defines, and each answers as the CLI's contract says (docs/LIVE_CHECKLIST.md,
"External commands"): `--version` prints the tested version, `deploy -y` exits 0 and leaves
`agentcore/.cli/deployed-state.json`, and what a deploy creates in the account (the runtime
role with AmazonSageMakerJobRuntimeAccess, the runtime, its CloudWatch log group) is created in
the stand-ins. The real CLI is run by tests/test_live_commands.py, not here. Nothing sleeps
longer than a second: the runtime-log read waits 0 s, the evaluation polls every 0.05 s, and the
SDK's training `job.wait` (whole seconds only) every 1 s.
"""

from __future__ import annotations

import io
import json
import logging
import re
import shutil
import subprocess
import threading
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import botocore.client
import botocore.validate
import pytest

from mtrl_course import (
    commands,
    config,
    deploy,
    evaluation,
    first_run,
    iam,
    local,
    naming,
    netguard,
    preflight,
    smoke,
    training,
)
from mtrl_course.errors import ServiceError
from mtrl_course.local.offline_backend import INTERNAL_CLIENT_MARK

RUN_ID = "smokelive"
TWELVE_DIGITS = re.compile(r"(?<!\d)\d{12}(?!\d)")
KEY_SHAPED = re.compile(r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b|(?<![A-Za-z0-9/+])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+])")
STEPS = ("preflight", "estimate", "roles and data", "deploy", "invoke", "MLflow app", "train", "evaluate", "clean-up")


class CallRecorder:
    """Every botocore call the chain makes: (service, operation), and whether its parameters
    passed botocore's validation against the service model (None: the operation has no input)."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []
        self.paused = False  # while the test plays what `agentcore deploy` creates
        self._current = threading.local()

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        make_api_call = botocore.client.BaseClient._make_api_call
        validate = botocore.validate.ParamValidator.validate
        recorder = self

        def recorded_call(client: Any, operation_name: str, api_params: dict[str, Any]) -> Any:
            if recorder.paused or getattr(client, INTERNAL_CLIENT_MARK, False):  # not the chain's calls
                return make_api_call(client, operation_name, api_params)
            model = client.meta.service_model.operation_model(operation_name)
            entry = {
                "service": client.meta.service_model.service_name,
                "operation": operation_name,
                "validation_on": bool(client.meta.config.parameter_validation),
                "has_input": model.input_shape is not None,
                "validated": None,
                "error": None,
                "category": api_params.get("JobCategory"),
            }
            recorder.calls.append(entry)
            outer = getattr(recorder._current, "entry", None)
            recorder._current.entry = entry
            try:
                return make_api_call(client, operation_name, api_params)
            except Exception as error:
                entry["error"] = getattr(error, "response", {}).get("Error", {}).get("Code") or type(error).__name__
                raise
            finally:
                recorder._current.entry = outer

        def recorded_validate(validator: Any, params: Any, shape: Any) -> Any:
            report = validate(validator, params, shape)
            entry = getattr(recorder._current, "entry", None)
            if entry is not None and entry["validated"] is None:
                entry["validated"] = not report.has_errors()
            return report

        monkeypatch.setattr(botocore.client.BaseClient, "_make_api_call", recorded_call)
        monkeypatch.setattr(botocore.validate.ParamValidator, "validate", recorded_validate)


class NetworkRecorder:
    """Connections and name lookups the network guard refused (anything not loopback)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.refused: list[str] = []
        for name in ("_check_address", "_check_lookup"):
            monkeypatch.setattr(netguard, name, self._recording(getattr(netguard, name)))

    def _recording(self, check: Any) -> Any:
        def recorded(*args: Any) -> None:
            try:
                check(*args)
            except OSError as error:
                self.refused.append(str(error))
                raise

        return recorded


class AgentCoreCli:
    """`agentcore` as commands.run starts it (no terminal), answering as its contract documents."""

    def __init__(self, project_root: Any, on_deploy: Any) -> None:
        self.project_root = project_root
        self.on_deploy = on_deploy
        self.ran: list[tuple[tuple[str, ...], Any, dict[str, Any]]] = []

    def popen(self, args: list[str], **kwargs: Any) -> Any:
        cli = self
        self.ran.append((tuple(args), kwargs["cwd"], kwargs))
        assert kwargs["stdin"] is subprocess.DEVNULL and kwargs["stdout"] is subprocess.PIPE  # no terminal
        if tuple(args) == commands.AGENTCORE_VERSION.args:
            output, code = deploy.CLI_VERSION + "\n", 0
        elif tuple(args) == commands.AGENTCORE_DEPLOY.args:
            state = kwargs["cwd"] / "agentcore" / ".cli"
            state.mkdir(parents=True, exist_ok=True)
            (state / "deployed-state.json").write_text("{}\n", encoding="utf-8")
            cli.on_deploy()
            output, code = "Deploying WordleMTRL to default...\nDeployed.\n", 0
        else:
            raise AssertionError(f"the live chain ran a command commands.py does not define: {args}")

        class Process:
            returncode = code
            stdout = io.StringIO(output)

            def __enter__(self) -> Any:
                return self

            def __exit__(self, *exc: Any) -> None:
                return None

            def communicate(self, timeout: float | None = None) -> tuple[str, None]:
                return self.stdout.read(), None

        return Process()


class RuntimeLogsToCloudWatch(logging.Handler):
    """The deployed runtime's lines in its CloudWatch log group, as AgentCore writes them."""

    def __init__(self, group: str) -> None:
        super().__init__(logging.INFO)
        from moto.backends import get_backend

        self.group = group
        self.logs = get_backend("logs")[config.MOTO_ACCOUNT][config.OFFLINE_REGION]
        self.logs.create_log_group(group, {})
        self.logs.create_log_stream(group, "runtime")

    def emit(self, record: logging.LogRecord) -> None:
        event = {"timestamp": int(record.created * 1000), "message": record.getMessage()}
        self.logs.put_log_events(self.group, "runtime", [event])


def _aws_managed_policies(names: tuple[str, ...]) -> None:
    """Put AWS managed policies into moto's account, as every real account has them (the offline
    backend does not load moto's 1,300 copies: the offline path makes stand-ins instead)."""
    from moto.backends import get_backend
    from moto.iam.models import AWSManagedPolicy

    backend = get_backend("iam")[config.MOTO_ACCOUNT]["global"]
    for name in names:
        data = iam._moto_managed_policies()[name]
        policy = AWSManagedPolicy.from_data(name, config.MOTO_ACCOUNT, config.OFFLINE_REGION, data)
        backend.managed_policies[policy.arn] = policy


def _model_package_deletes(backend: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """DeleteModelPackage and DeleteModelPackageGroup, which moto 5.2.5 lacks (offline, clean-up
    removes the records from moto itself; live it calls these), answered at the seam."""
    from moto.backends import get_backend

    def records(call: Any) -> Any:
        return get_backend("sagemaker")[config.MOTO_ACCOUNT][call.region]

    def delete_package(call: Any) -> dict[str, Any]:
        arn = call.params["ModelPackageName"]
        records(call).model_packages.pop(arn, None)
        local.forget_model_packages([arn])
        return {}

    def delete_group(call: Any) -> dict[str, Any]:
        records(call).model_package_groups.pop(call.params["ModelPackageGroupName"], None)
        return {}

    monkeypatch.setitem(backend.handlers, ("sagemaker", "DeleteModelPackage"), delete_package)
    monkeypatch.setitem(backend.handlers, ("sagemaker", "DeleteModelPackageGroup"), delete_group)


@pytest.fixture
def live_chain(
    offline_backend: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[types.SimpleNamespace]:
    """The live branch on a stubbed transport: everything the two tests below share."""
    from mtrl_course import aws

    session = aws.session()  # offline: fake credentials; the backend stays behind botocore
    _aws_managed_policies((iam.JOB_POLICY_NAME, iam.RUNTIME_POLICY_NAME))
    _model_package_deletes(offline_backend, monkeypatch)
    root = tmp_path / "checkout"
    shutil.copytree(
        deploy.AGENTCORE_DIR,
        root / commands.AGENTCORE_PROJECT_DIR / "agentcore",
        ignore=shutil.ignore_patterns("node_modules", "cdk.out", "dist", ".cli"),
    )
    handlers: list[tuple[logging.Logger, logging.Handler]] = []
    calls = CallRecorder()

    def what_a_deploy_creates() -> None:
        # The stand-ins are set up offline, outside the record; the chain goes on live.
        config.MODE, calls.paused = config.Mode.OFFLINE, True
        try:
            runtime = smoke.local_runtime()
            local.install_runners(lane=local.LANE_FAST, adapter_dir=tmp_path / "adapters")
            # The stack's runtime role, with the policy agentcore.json's additionalPolicies attach.
            role = runtime.describe()["roleArn"].rsplit("/", 1)[-1]
            trust = {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Effect": "Allow",
                        "Principal": {"Service": "bedrock-agentcore.amazonaws.com"},
                        "Action": "sts:AssumeRole",
                    }
                ],
            }
            session.client("iam").create_role(RoleName=role, AssumeRolePolicyDocument=json.dumps(trust))
            session.client("iam").attach_role_policy(RoleName=role, PolicyArn=deploy.JOB_RUNTIME_POLICY_ARN)
        finally:
            config.MODE, calls.paused = config.Mode.LIVE, False
        handler = RuntimeLogsToCloudWatch(smoke.runtime_log_group(runtime.arn))
        for name in smoke.AGENT_LOGGERS:
            logger = logging.getLogger(name)
            logger.addHandler(handler)
            handlers.append((logger, handler))

    cli = AgentCoreCli(root, what_a_deploy_creates)
    monkeypatch.setattr(commands, "subprocess", types.SimpleNamespace(**{**vars(subprocess), "Popen": cli.popen}))
    # The preflight's tool checks: node, the CLI and uv are "installed" (the CLI answers above).
    monkeypatch.setattr(preflight, "shutil", types.SimpleNamespace(which=lambda name: f"/stub/bin/{name}"))
    monkeypatch.setattr(preflight, "_node_version", lambda: "22.12.0")
    # No waiting: the course's polls and the runtime-log read.
    monkeypatch.setattr(first_run, "RUNTIME_LOG_WAIT_S", 0.0)
    monkeypatch.setattr(training, "LIVE_POLL_S", 1)  # the SDK's job.wait takes whole seconds
    monkeypatch.setattr(evaluation, "LIVE_POLL_S", 0.05)
    monkeypatch.setenv("MTRL_RUN_ID", RUN_ID)  # live, a run id is otherwise written under .state/
    monkeypatch.setattr(config, "STATE_DIR", tmp_path / "state-dir")
    network = NetworkRecorder(monkeypatch)
    calls.install(monkeypatch)
    previous, config.MODE = config.MODE, config.Mode.LIVE
    try:
        yield types.SimpleNamespace(session=session, root=root, cli=cli, calls=calls, network=network)
    finally:
        config.MODE = previous
        for logger, handler in handlers:
            logger.removeHandler(handler)
        from mtrl_course import resources

        for runtime in local.local_runtimes():
            runtime.close()
        resources._OFFLINE = None


# What each step must call, in this order (other calls come between them: reads, polls, the
# SDK's own look-ups). A "CreateJob:<category>" entry names the job category it was sent.
EXPECTED_IN_ORDER = (
    # preflight
    "sts.GetCallerIdentity",
    "sagemaker.ListJobSchemaVersions",
    "sagemaker.DescribeJobSchemaVersion",
    # roles and data
    "iam.CreateRole",
    "iam.AttachRolePolicy",
    "iam.PutRolePolicy",
    "s3.CreateBucket",
    "s3.PutObject",
    # invoke (the deploy itself is the CLI's)
    "bedrock-agentcore-control.ListAgentRuntimes",
    "bedrock-agentcore.InvokeAgentRuntime",
    "logs.FilterLogEvents",
    "bedrock-agentcore.StopRuntimeSession",
    "bedrock-agentcore-control.GetAgentRuntime",
    "iam.ListAttachedRolePolicies",
    # MLflow app, with its own role
    "sagemaker.ListMlflowApps",
    "iam.CreateRole",
    "sagemaker.CreateMlflowApp",
    "sagemaker.DescribeMlflowApp",
    # train
    "sagemaker.CreateJob:AgentRFT",
    "sagemaker.DescribeJob",
    # evaluate
    "sagemaker.CreateJob:AgentRFTEvaluation",
    "sagemaker.DescribeJob",
    # clean-up
    "sagemaker.DeleteMlflowApp",
    "s3.DeleteObjects",
    "s3.DeleteBucket",
    "sagemaker.DeleteModelPackageGroup",
    "iam.DetachRolePolicy",
    "iam.DeleteRole",
)


def _named(call: dict[str, Any]) -> str:
    name = f"{call['service']}.{call['operation']}"
    return f"{name}:{call['category']}" if call["operation"] == "CreateJob" else name


def _in_order(wanted: tuple[str, ...], seen: list[str]) -> list[str]:
    """The entries of `wanted` that `seen` does not contain in that order (empty: all there)."""
    rest = iter(seen)
    return [name for name in wanted if not any(name == item for item in rest)]


def _assert_every_call_validated(calls: CallRecorder) -> None:
    assert calls.calls
    unchecked = [c for c in calls.calls if not c["validation_on"] or (c["has_input"] and c["validated"] is not True)]
    assert unchecked == []


def _assert_scrubbed(path: Any) -> None:
    for text in (path.read_text(encoding="utf-8"), path.with_suffix(".md").read_text(encoding="utf-8")):
        assert all(m in naming.PLACEHOLDER_ACCOUNTS for m in TWELVE_DIGITS.findall(text)), TWELVE_DIGITS.findall(text)
        assert not KEY_SHAPED.search(text), KEY_SHAPED.search(text)


def test_the_live_chain_runs_from_the_opt_in_to_the_report_on_stubbed_aws(live_chain, tmp_path) -> None:
    run, path = first_run.run_first(
        session=live_chain.session,
        yes_i_will_pay=True,
        echo=lambda line: None,
        report_dir=tmp_path / "reports",
        project_root=live_chain.root,
    )
    assert run.mode == "live"
    assert [(s.name, s.status) for s in run.steps] == [(name, first_run.OK) for name in STEPS], run.steps
    # Live, every contract gets a real verdict; the stand-ins answer as the course assumes AWS does.
    assert {key: seen.verdict for key, seen in run.contracts.items()} == {
        c.key: first_run.CONFIRMED for c in first_run.CONTRACTS
    }
    assert run.contracts["runtime_policy"].observed["attached_managed_policies"] == [deploy.JOB_RUNTIME_POLICY_ARN]
    assert run.resources_left == []

    # The CLI: exactly the commands commands.py defines, in their folders, without a terminal.
    assert [(args, cwd) for args, cwd, _ in live_chain.cli.ran] == [
        (commands.AGENTCORE_VERSION.args, commands.AGENTCORE_VERSION.where()),
        (commands.AGENTCORE_DEPLOY.args, commands.AGENTCORE_DEPLOY.where(live_chain.root)),
    ]

    # AWS: every call validated against botocore's model, the steps' calls in order, no network.
    _assert_every_call_validated(live_chain.calls)
    seen = [_named(c) for c in live_chain.calls.calls]
    assert _in_order(EXPECTED_IN_ORDER, seen) == [], seen
    assert seen.count("sagemaker.CreateJob:AgentRFT") == 1 and seen.count("sagemaker.CreateJob:AgentRFTEvaluation") == 1
    assert live_chain.network.refused == []
    _assert_scrubbed(path)


def test_a_refused_create_job_stops_the_chain_at_training_with_the_service_s_message(
    live_chain, offline_backend, tmp_path, monkeypatch
) -> None:
    real_account = "4" + "0" * 7 + "9876"  # built at run time: no real-looking ID in a committed file
    key = "AKIA" + "ABCDEFGHIJKLMNOP"
    create_job = offline_backend.handlers[("sagemaker", "CreateJob")]

    def refuse_training(call: Any) -> Any:
        if call.params.get("JobCategory") == "AgentRFT":
            raise ServiceError(
                "ValidationException",
                f"Role arn:aws:iam::{real_account}:role/other is not valid for this job ({key})",
            )
        return create_job(call)

    monkeypatch.setitem(offline_backend.handlers, ("sagemaker", "CreateJob"), refuse_training)
    run, path = first_run.run_first(
        session=live_chain.session,
        yes_i_will_pay=True,
        echo=lambda line: None,
        report_dir=tmp_path / "reports",
        project_root=live_chain.root,
    )
    statuses = {s.name: s.status for s in run.steps}
    assert [statuses[name] for name in STEPS] == [first_run.OK] * 6 + [first_run.FAILED] + [first_run.NOT_RUN] * 2
    train = run.steps[STEPS.index("train")]
    assert "ValidationException" in train.message and "is not valid for this job" in train.message
    assert real_account not in train.message and key not in train.message
    # A refusal that is not AccessDenied says nothing about enablement either way.
    assert run.contracts["agentrft_enablement"].verdict == first_run.NOT_REACHED
    assert run.contracts["token_caps"].verdict == first_run.NOT_REACHED

    # Nothing after the refusal: one CreateJob (refused), no evaluation, no clean-up.
    seen = [_named(c) for c in live_chain.calls.calls]
    refused = seen.index("sagemaker.CreateJob:AgentRFT")
    assert live_chain.calls.calls[refused]["error"] == "ValidationException"
    assert [name for name in seen[refused + 1 :] if not name.startswith("sts.")] == []
    _assert_every_call_validated(live_chain.calls)
    assert live_chain.network.refused == []

    # The report names the step and lists what the run created so far, scrubbed.
    data = json.loads(path.read_text(encoding="utf-8"))
    assert not data["ok"]
    assert [s["name"] for s in data["steps"] if s["status"] == first_run.FAILED] == ["train"]
    left = data["resources_left"]
    assert [item.split(" ")[0] for item in left] == ["role", "bucket", "CloudFormation", "MLflow"], left
    assert any(RUN_ID in item for item in left)
    _assert_scrubbed(path)
    assert "Left in the account" in path.with_suffix(".md").read_text(encoding="utf-8")
