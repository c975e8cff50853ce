"""The offline AWS backend through real boto3 clients: moto for IAM/STS/S3, local stand-ins for
what moto lacks (SimulatePrincipalPolicy, MLflow apps, the hub, InvokeAgentRuntime, the Job
Runtime), and the guard that keeps offline mode off the network."""

from __future__ import annotations

import json
import os
from pathlib import Path
import socket
import threading
import time

import pytest
from botocore.config import Config
from botocore.exceptions import ClientError, ParamValidationError
from mtrl_course import aws, config, service_spec
from mtrl_course.local import hub
from mtrl_course.local.job_runtime_emulator import (
    JOB_NOT_FOUND_MESSAGE,
    JobRuntimeEmulator,
    ScriptedPolicy,
)
from mtrl_course.local.agent_server import LocalAgentRuntime

ACCOUNT = config.MOTO_ACCOUNT
BUCKET = "mtrl-course-test-bucket"
JOB_TRUST = {
    "Version": "2012-10-17",
    "Statement": [
        {
            "Effect": "Allow",
            "Principal": {"Service": "job.sagemaker.amazonaws.com"},
            "Action": ["sts:AssumeRole", "sts:TagSession"],
        }
    ],
}
# Documentation address (TEST-NET-3): never routable, so a broken guard cannot reach anything.
UNROUTABLE = ("203.0.113.7", 443)


async def echo_app(scope, receive, send):
    """A tiny AgentCore-shaped ASGI app: /ping, /invocations echoes; "fail" answers 500."""
    if scope["type"] != "http":
        return
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    headers = dict(scope["headers"])
    if scope["path"] == "/ping":
        status, reply = 200, {"status": "Healthy"}
    elif body == b'"fail"':
        status, reply = 500, {"error": "boom"}
    else:
        session = headers.get(b"x-amzn-bedrock-agentcore-runtime-session-id", b"").decode()
        status, reply = 200, {"echo": json.loads(body or b"null"), "session": session}
    data = json.dumps(reply).encode()
    await send({"type": "http.response.start", "status": status, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": data})


@pytest.fixture
def offline(offline_backend):
    return offline_backend


@pytest.fixture
def boto(offline):
    return aws.session()


@pytest.fixture
def runtime(offline):
    rt = LocalAgentRuntime(f"{__name__}:echo_app", name="EchoRuntime", init_timeout=2.0)
    rt.start()
    yield rt
    rt.close()


def make_role(boto, name="MtrlJobRole", trust=JOB_TRUST) -> str:
    return boto.client("iam").create_role(RoleName=name, AssumeRolePolicyDocument=json.dumps(trust))["Role"]["Arn"]


def error_of(excinfo) -> tuple[str, str]:
    error = excinfo.value.response["Error"]
    return error["Code"], error["Message"]


# --- session, moto, environment -------------------------------------------------------------------


def test_offline_session_uses_moto_in_the_offline_region(boto):
    identity = boto.client("sts").get_caller_identity()
    assert identity["Account"] == ACCOUNT
    assert boto.region_name == config.OFFLINE_REGION
    assert os.environ["AWS_DEFAULT_REGION"] == os.environ["AWS_REGION"] == config.OFFLINE_REGION


def test_session_in_another_region_keeps_that_region(offline):
    assert aws.session("us-west-2").client("s3").meta.region_name == "us-west-2"


def test_a_session_reuses_its_clients_per_arguments_and_never_across_sessions(offline):
    session = aws.session()
    s3 = session.client("s3")
    assert session.client("s3") is s3
    assert session.client("s3", region_name="eu-west-1") is not s3
    assert session.client("s3", region_name="eu-west-1").meta.region_name == "eu-west-1"
    assert session.client("iam") is not s3
    configured = Config(retries={"max_attempts": 1})
    assert session.client("s3", config=configured) is not session.client("s3", config=configured)
    assert aws.session().client("s3") is not s3  # a new session starts from fresh clients
    s3.create_bucket(Bucket="mtrl-reuse-check")  # a shared client still works
    assert "mtrl-reuse-check" in [b["Name"] for b in session.client("s3").list_buckets()["Buckets"]]


def test_threads_sharing_a_session_get_one_client(offline):
    session = aws.session()
    got: list[object] = []
    start = threading.Barrier(8)

    def ask() -> None:
        start.wait()
        got.append(session.client("sagemaker"))

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(got) == 8 and len({id(client) for client in got}) == 1


def test_iam_and_s3_round_trip_through_moto(boto):
    arn = make_role(boto)
    assert arn == f"arn:aws:iam::{ACCOUNT}:role/MtrlJobRole"
    s3 = boto.client("s3")
    s3.create_bucket(Bucket=BUCKET)
    s3.put_object(Bucket=BUCKET, Key="data/train.jsonl", Body=b'{"prompt": "x"}\n')
    assert s3.get_object(Bucket=BUCKET, Key="data/train.jsonl")["Body"].read() == b'{"prompt": "x"}\n'


def test_reset_forgets_moto_data(offline, tmp_path):
    aws.session().client("s3").create_bucket(Bucket=BUCKET)
    aws.reset_offline(tmp_path / "state")
    assert BUCKET not in [b["Name"] for b in aws.session().client("s3").list_buckets()["Buckets"]]


def test_sdk_telemetry_is_opted_out_through_the_sdk_config_file(offline):
    path = os.environ[aws.SDK_CONFIG_ENV_VAR]
    with open(path) as handle:
        assert "TelemetryOptOut: true" in handle.read()


def test_live_session_names_the_missing_region(monkeypatch):
    monkeypatch.setattr(config, "MODE", config.Mode.LIVE)
    for name in aws.REGION_ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", os.devnull)
    with pytest.raises(RuntimeError, match="No AWS Region"):
        aws.session()
    with pytest.raises(RuntimeError, match="not available with MTRL_MODE=live"):
        aws.offline_backend()


def test_call_trace_records_course_calls_but_not_the_stand_ins_own(boto, offline):
    offline.calls.clear()
    boto.client("sagemaker").describe_hub_content(
        HubName=hub.HUB_NAME, HubContentType="Model", HubContentName=service_spec.GPT_OSS_20B
    )
    # Seeding the hub bucket made S3 calls of its own; only the course's call is traced.
    assert list(offline.calls) == ["sagemaker.DescribeHubContent"]


# --- the network guard -----------------------------------------------------------------------------


def test_non_loopback_connection_is_refused(offline):
    with pytest.raises(aws.OfflineNetworkError, match="only loopback"):
        socket.create_connection(UNROUTABLE, timeout=1)


def test_non_loopback_name_lookup_is_refused(offline):
    with pytest.raises(socket.gaierror, match="offline mode"):
        socket.getaddrinfo("example.com", 443)


def test_loopback_connection_is_allowed(offline):
    with socket.create_server(("127.0.0.1", 0)) as server:
        with socket.create_connection(server.getsockname(), timeout=1):
            pass


# --- IAM SimulatePrincipalPolicy ---------------------------------------------------------------------


def test_simulate_principal_policy_decides_like_iam(boto):
    arn = make_role(boto)
    iam = boto.client("iam")
    allow = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}
    deny = {"Version": "2012-10-17", "Statement": [{"Effect": "Deny", "Action": "s3:Delete*", "Resource": "*"}]}
    iam.put_role_policy(RoleName="MtrlJobRole", PolicyName="s3", PolicyDocument=json.dumps(allow))
    iam.put_role_policy(RoleName="MtrlJobRole", PolicyName="no-deletes", PolicyDocument=json.dumps(deny))
    results = iam.simulate_principal_policy(
        PolicySourceArn=arn, ActionNames=["s3:GetObject", "s3:DeleteObject", "ecr:GetAuthorizationToken"]
    )["EvaluationResults"]
    decisions = {r["EvalActionName"]: r["EvalDecision"] for r in results}
    # Nothing allows ecr:GetAuthorizationToken: IAM's implicit deny, not "allowed".
    assert decisions == {
        "s3:GetObject": "allowed",
        "s3:DeleteObject": "explicitDeny",
        "ecr:GetAuthorizationToken": "implicitDeny",
    }


def test_simulate_principal_policy_reads_attached_managed_policies(boto):
    arn = make_role(boto)
    iam = boto.client("iam")
    deny = {"Version": "2012-10-17", "Statement": [{"Effect": "Deny", "NotAction": "sagemaker:*", "Resource": "*"}]}
    allow = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}
    for name, document in (("only-sagemaker", deny), ("everything", allow)):
        policy = iam.create_policy(PolicyName=name, PolicyDocument=json.dumps(document))["Policy"]["Arn"]
        iam.attach_role_policy(RoleName="MtrlJobRole", PolicyArn=policy)
    results = iam.simulate_principal_policy(PolicySourceArn=arn, ActionNames=["sagemaker:CreateJob", "s3:GetObject"])[
        "EvaluationResults"
    ]
    assert [r["EvalDecision"] for r in results] == ["allowed", "explicitDeny"]


def test_simulate_principal_policy_unknown_role(boto):
    with pytest.raises(ClientError) as excinfo:
        boto.client("iam").simulate_principal_policy(
            PolicySourceArn=f"arn:aws:iam::{ACCOUNT}:role/Nobody", ActionNames=["s3:GetObject"]
        )
    assert error_of(excinfo)[0] == "NoSuchEntity"


# --- MLflow apps ------------------------------------------------------------------------------------------


def test_mlflow_app_create_describe_list_update_delete(boto, offline):
    role = make_role(boto)
    boto.client("s3").create_bucket(Bucket=BUCKET)
    sm = boto.client("sagemaker")
    arn = sm.create_mlflow_app(Name="mtrl-course", ArtifactStoreUri=f"s3://{BUCKET}/mlflow", RoleArn=role)["Arn"]
    assert arn.startswith(f"arn:aws:sagemaker:{config.OFFLINE_REGION}:{ACCOUNT}:mlflow-app/app-")
    described = sm.describe_mlflow_app(Arn=arn)
    assert (described["Name"], described["Status"]) == ("mtrl-course", "Created")
    assert [s["Arn"] for s in sm.list_mlflow_apps()["Summaries"]] == [arn]
    url = sm.create_presigned_mlflow_app_url(Arn=arn)["AuthorizedUrl"]
    assert url.startswith("http://127.0.0.1:") and "amazonaws" not in url
    assert offline.mlflow.info(arn).tracking_uri.startswith("sqlite:///")
    sm.update_mlflow_app(Arn=arn, AccountDefaultStatus="ENABLED")
    assert sm.describe_mlflow_app(Arn=arn)["Status"] == "Updated"
    sm.delete_mlflow_app(Arn=arn)
    with pytest.raises(ClientError) as excinfo:
        sm.describe_mlflow_app(Arn=arn)
    assert error_of(excinfo)[0] == "ResourceNotFound"
    assert offline.mlflow.info(arn) is None


def test_mlflow_app_needs_an_existing_bucket(boto):
    role = make_role(boto)
    with pytest.raises(ClientError) as excinfo:
        boto.client("sagemaker").create_mlflow_app(
            Name="x", ArtifactStoreUri="s3://no-such-bucket/mlflow", RoleArn=role
        )
    assert error_of(excinfo) == (
        "ValidationException",
        "The artifact store bucket no-such-bucket does not exist or is not accessible.",
    )


def test_presigned_url_expiry_is_range_checked(boto):
    role = make_role(boto)
    boto.client("s3").create_bucket(Bucket=BUCKET)
    sm = boto.client("sagemaker")
    arn = sm.create_mlflow_app(Name="m", ArtifactStoreUri=f"s3://{BUCKET}/m", RoleArn=role)["Arn"]
    with pytest.raises(ClientError, match="between 5 and 300"):
        sm.create_presigned_mlflow_app_url(Arn=arn, ExpiresInSeconds=301)


@pytest.mark.slow
def test_mlflow_app_arn_works_as_tracking_uri(boto):
    import mlflow
    from mlflow.tracking import MlflowClient

    role = make_role(boto)
    boto.client("s3").create_bucket(Bucket=BUCKET)
    arn = boto.client("sagemaker").create_mlflow_app(
        Name="tracking", ArtifactStoreUri=f"s3://{BUCKET}/m", RoleArn=role
    )["Arn"]
    client = MlflowClient(tracking_uri=arn)
    experiment = client.create_experiment("wordle")
    run = client.create_run(experiment)
    client.log_metric(run.info.run_id, "val/reward/pass_at_1", 0.5, step=3)
    # Read back through the plain sqlite URI: the ARN really reached the app's local store.
    local = MlflowClient(tracking_uri=aws.offline_backend().mlflow.info(arn).tracking_uri)
    history = local.get_metric_history(run.info.run_id, "val/reward/pass_at_1")
    assert [(m.step, m.value) for m in history] == [(3, 0.5)]
    mlflow.set_tracking_uri(None)


# --- the hub ------------------------------------------------------------------------------------------------


def test_describe_hub_content_serves_mtrl_recipes_with_specs_in_s3(boto):
    sm = boto.client("sagemaker")
    content = sm.describe_hub_content(
        HubName=hub.HUB_NAME, HubContentType="Model", HubContentName=service_spec.GPT_OSS_20B
    )
    assert content["HubContentArn"] == hub.hub_content_arn(config.OFFLINE_REGION, service_spec.GPT_OSS_20B)
    recipes = json.loads(content["HubContentDocument"])["RecipeCollection"]
    training = next(r for r in recipes if r.get("CustomizationTechnique") == "MTRL")
    evaluation = next(r for r in recipes if r.get("EvaluationType") == "MTRLEvaluation")
    assert training["Peft"] == "LORA"
    s3 = boto.client("s3")
    for recipe, spec in ((training, hub.TRAINING_SPEC), (evaluation, hub.EVALUATION_SPEC)):
        bucket, key = recipe["SmtjOverrideParamsS3Uri"][5:].split("/", 1)
        assert json.loads(s3.get_object(Bucket=bucket, Key=key)["Body"].read()) == spec
    assert hub.TRAINING_SPEC["sampling_max_tokens"] == {"type": "integer", "default": 4096, "min": 512, "max": 8192}


def test_unpublished_models_are_not_found_and_say_why(boto):
    with pytest.raises(ClientError) as excinfo:
        boto.client("sagemaker").describe_hub_content(
            HubName=hub.HUB_NAME, HubContentType="Model", HubContentName="gemma-4-31b-it"
        )
    code, message = error_of(excinfo)
    assert code == "ResourceNotFound" and "not public" in message


def test_list_hub_contents_tags_both_models_for_mtrl(boto):
    summaries = boto.client("sagemaker").list_hub_contents(HubName=hub.HUB_NAME, HubContentType="Model")[
        "HubContentSummaries"
    ]
    assert [s["HubContentName"] for s in summaries] == sorted(hub.MODELS)
    assert all(hub.TRAINING_KEYWORD in s["HubContentSearchKeywords"] for s in summaries)


# --- AgentCore: InvokeAgentRuntime and the control plane ---------------------------------------------


def test_invoke_agent_runtime_accepts_33_character_session_ids(boto, runtime):
    reply = boto.client("bedrock-agentcore").invoke_agent_runtime(
        agentRuntimeArn=runtime.arn, payload=b'{"prompt": "hi"}', runtimeSessionId="s" * 33
    )
    assert reply["statusCode"] == 200 and reply["contentType"] == "application/json"
    assert json.loads(reply["response"].read()) == {"echo": {"prompt": "hi"}, "session": "s" * 33}


def test_botocore_rejects_a_32_character_session_id_client_side(boto, runtime):
    with pytest.raises(ParamValidationError, match="valid min length: 33"):
        boto.client("bedrock-agentcore").invoke_agent_runtime(
            agentRuntimeArn=runtime.arn, payload=b"{}", runtimeSessionId="s" * 32
        )


def test_service_rejects_a_32_character_session_id_with_its_message(boto, runtime):
    client = boto.client("bedrock-agentcore", config=Config(parameter_validation=False))
    with pytest.raises(ClientError) as excinfo:
        client.invoke_agent_runtime(agentRuntimeArn=runtime.arn, payload=b"{}", runtimeSessionId="s" * 32)
    assert error_of(excinfo) == (
        "ValidationException",
        "1 validation error detected: Value at 'runtimeSessionId' failed to satisfy constraint: Member must have length greater than or equal to 33",
    )
    assert excinfo.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400


def test_session_id_longer_than_256_is_rejected(boto, runtime):
    with pytest.raises(ClientError, match="less than or equal to 256"):
        boto.client("bedrock-agentcore").invoke_agent_runtime(
            agentRuntimeArn=runtime.arn, payload=b"{}", runtimeSessionId="s" * 257
        )


def test_omitted_session_id_is_generated_like_botocore_does(boto, runtime):
    reply = boto.client("bedrock-agentcore").invoke_agent_runtime(agentRuntimeArn=runtime.arn, payload=b"{}")
    assert len(reply["runtimeSessionId"]) == 36


def test_unknown_runtime_arn_is_not_found(boto, runtime):
    other = runtime.arn.replace("EchoRuntime", "Nobody")
    with pytest.raises(ClientError) as excinfo:
        boto.client("bedrock-agentcore").invoke_agent_runtime(
            agentRuntimeArn=other, payload=b"{}", runtimeSessionId="s" * 40
        )
    assert error_of(excinfo)[0] == "ResourceNotFoundException"
    assert excinfo.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404


def test_app_error_comes_back_as_runtime_client_error(boto, runtime):
    with pytest.raises(ClientError) as excinfo:
        boto.client("bedrock-agentcore").invoke_agent_runtime(
            agentRuntimeArn=runtime.arn, payload=b'"fail"', runtimeSessionId="s" * 40
        )
    assert error_of(excinfo) == (
        "RuntimeClientError",
        "Received error (500) from runtime. Please check your CloudWatch logs for more information.",
    )


def test_runtime_that_never_serves_times_out_like_agentcore(boto, offline):
    never = LocalAgentRuntime(f"{__name__}:echo_app", name="NeverStarted", init_timeout=0.2)
    started = time.monotonic()
    with pytest.raises(ClientError) as excinfo:
        boto.client("bedrock-agentcore").invoke_agent_runtime(
            agentRuntimeArn=never.arn, payload=b"{}", runtimeSessionId="s" * 40
        )
    assert time.monotonic() - started >= 0.2
    assert error_of(excinfo) == (
        "RuntimeClientError",
        "Runtime initialization time exceeded. Please make sure that initialization completes in 0.2s.",
    )


def test_control_plane_lists_and_gets_local_runtimes(boto, runtime):
    control = boto.client("bedrock-agentcore-control")
    listed = control.list_agent_runtimes()["agentRuntimes"]
    assert [(r["agentRuntimeName"], r["agentRuntimeArn"], r["status"]) for r in listed] == [
        ("EchoRuntime", runtime.arn, "READY")
    ]
    got = control.get_agent_runtime(agentRuntimeId=runtime.runtime_id)
    assert got["agentRuntimeArn"] == runtime.arn
    # The real ARN format, which the trainer's agent_env pattern accepts (moto's agent/<uuid> does not).
    assert runtime.arn == f"arn:aws:bedrock-agentcore:{config.OFFLINE_REGION}:{ACCOUNT}:runtime/{runtime.runtime_id}"


# --- the Job Runtime through boto3 --------------------------------------------------------------------------


def test_job_runtime_calls_reach_the_attached_emulator(boto, offline):
    job_arn = f"arn:aws:sagemaker:{config.OFFLINE_REGION}:{ACCOUNT}:job/AgentRFT/route-test"
    emulator = JobRuntimeEmulator()
    emulator.register_job(job_arn, ScriptedPolicy(["CRANE?"]))
    offline.attach_job_runtime(emulator)
    runtime = boto.client("sagemakerjobruntime")
    request = {"model": "default", "messages": [{"role": "user", "content": "play"}]}
    reply = runtime.sample(JobArn=job_arn, TrajectoryId="t1", Body=json.dumps(request).encode())
    assert json.loads(reply["Body"])["choices"][0]["message"]["content"] == "CRANE?"
    streamed = runtime.sample_with_response_stream(JobArn=job_arn, TrajectoryId="t2", Body=json.dumps(request).encode())
    assert streamed["ContentType"].startswith("text/event-stream") and b"data: [DONE]" in streamed["Body"].read()
    runtime.complete_rollout(JobArn=job_arn, TrajectoryId="t1", Status="ready")
    runtime.update_reward(JobArn=job_arn, TrajectoryId="t1", Rewards=[1.05])
    assert emulator.trajectory(job_arn, "t1").rewards == (1.05,)
    with pytest.raises(ClientError) as excinfo:
        runtime.complete_rollout(JobArn=job_arn, TrajectoryId="t1", Status="ready")
    assert error_of(excinfo)[0] == "ValidationException"
    with pytest.raises(ClientError) as excinfo:
        runtime.sample(
            JobArn=job_arn.replace("route-test", "missing"), TrajectoryId="t1", Body=json.dumps(request).encode()
        )
    assert JOB_NOT_FOUND_MESSAGE in error_of(excinfo)[1]


def test_job_runtime_without_emulator_says_so(boto):
    with pytest.raises(ClientError, match="no Job Runtime emulator is attached"):
        boto.client("sagemakerjobruntime").complete_rollout(
            JobArn=f"arn:aws:sagemaker:us-east-1:{ACCOUNT}:job/AgentRFT/x", TrajectoryId="t", Status="ready"
        )


def test_offline_backend_is_a_thread_safe_singleton(offline):
    seen = []
    threads = [threading.Thread(target=lambda: seen.append(aws.offline_backend())) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(backend is offline for backend in seen)


@pytest.mark.slow
@pytest.mark.experiments
def test_presigned_url_points_at_a_local_mlflow_ui_the_course_can_start(boto, offline):
    import httpx

    role = make_role(boto)
    boto.client("s3").create_bucket(Bucket=BUCKET)
    sm = boto.client("sagemaker")
    arn = sm.create_mlflow_app(Name="ui", ArtifactStoreUri=f"s3://{BUCKET}/m", RoleArn=role)["Arn"]
    try:
        started = offline.mlflow.start_ui(arn)
        assert sm.create_presigned_mlflow_app_url(Arn=arn)["AuthorizedUrl"] == started
        assert httpx.get(started + "api/2.0/mlflow/experiments/search", params={"max_results": 5}).status_code == 200
    finally:
        offline.mlflow.stop_ui(arn)


def test_the_sdk_opt_out_file_comes_back_after_its_folder_is_removed(offline):
    from mtrl_course import telemetry

    path = Path(os.environ[telemetry.SDK_CONFIG_ENV_VAR])
    path.unlink()
    aws.session()  # the SDK would refuse to start with a missing config file
    assert path.is_file() and "TelemetryOptOut: true" in path.read_text()
