"""Issue 11, item 1: the offline IAM simulator decides like IAM, and the SDK's own role check
(`MultiTurnRLTrainer.train()` -> `resolve_and_validate_role(role_type="training")`) passes for the
course's job role because the role really grants what it asks, not because the stand-in says yes.

Also item 2's offline half: every stand-in response is checked against botocore's output shapes.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from mtrl_course import aws, iam, iam_decisions


@pytest.fixture
def offline(offline_session):
    return offline_session


def _role(session, name: str, *documents: dict) -> str:
    client = session.client("iam")
    arn = client.create_role(RoleName=name, AssumeRolePolicyDocument=json.dumps(iam.job_role_trust_policy()))["Role"][
        "Arn"
    ]
    for index, document in enumerate(documents):
        client.put_role_policy(RoleName=name, PolicyName=f"p{index}", PolicyDocument=json.dumps(document))
    return arn


def _simulate(session, arn: str, action: str, resource: str | None = None, context: dict | None = None) -> dict:
    params: dict = {"PolicySourceArn": arn, "ActionNames": [action]}
    if resource:
        params["ResourceArns"] = [resource]
    if context:
        params["ContextEntries"] = [
            {"ContextKeyName": k, "ContextKeyValues": v, "ContextKeyType": "string"} for k, v in context.items()
        ]
    return session.client("iam").simulate_principal_policy(**params)["EvaluationResults"][0]


def _allow(action: str, resource: str = "*", **extra) -> dict:
    return {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": action, "Resource": resource, **extra}],
    }


def test_nothing_allows_means_implicit_deny(offline):
    arn = _role(offline, "bare")
    assert _simulate(offline, arn, "ecr:GetAuthorizationToken")["EvalDecision"] == "implicitDeny"


def test_allow_allows_and_an_explicit_deny_wins(offline):
    deny = {"Version": "2012-10-17", "Statement": [{"Effect": "Deny", "Action": "s3:*", "Resource": "*"}]}
    arn = _role(offline, "mixed", _allow("s3:GetObject"), _allow("ecr:*"), deny)
    assert _simulate(offline, arn, "ecr:GetAuthorizationToken")["EvalDecision"] == "allowed"
    assert _simulate(offline, arn, "s3:GetObject")["EvalDecision"] == "explicitDeny"


def test_a_resource_scoped_allow_does_not_cover_a_request_without_resources(offline):
    arn = _role(offline, "scoped", _allow("sagemaker:CreateJob", "arn:aws:sagemaker:*:*:job/*"))
    assert _simulate(offline, arn, "sagemaker:CreateJob")["EvalDecision"] == "implicitDeny"
    job = "arn:aws:sagemaker:us-west-2:123456789012:job/AgentRFT/x"
    assert _simulate(offline, arn, "sagemaker:CreateJob", job)["EvalDecision"] == "allowed"


def test_a_condition_without_its_context_key_does_not_match_and_is_reported(offline):
    condition = {"Condition": {"StringEquals": {"iam:PassedToService": "job.sagemaker.amazonaws.com"}}}
    arn = _role(offline, "conditional", _allow("iam:PassRole", **condition))
    result = _simulate(offline, arn, "iam:PassRole")
    assert result["EvalDecision"] == "implicitDeny"
    assert result["MissingContextValues"] == ["iam:PassedToService"]
    given_context = {"iam:PassedToService": ["job.sagemaker.amazonaws.com"]}
    assert _simulate(offline, arn, "iam:PassRole", context=given_context)["EvalDecision"] == "allowed"


@given(
    effects=st.lists(st.sampled_from(["Allow", "Deny"]), max_size=4),
    action=st.sampled_from(["s3:GetObject", "ecr:GetAuthorizationToken", "iam:PassRole"]),
)
def test_the_decision_is_ordered_like_iams(effects, action):
    documents = [{"Statement": [{"Effect": effect, "Action": "*", "Resource": "*"}]} for effect in effects]
    decision = iam_decisions.evaluate_policy(documents, action, "*")
    expected = "explicitDeny" if "Deny" in effects else "allowed" if "Allow" in effects else "implicitDeny"
    assert decision == expected


def test_the_course_grants_exactly_what_the_sdk_checks():
    from sagemaker.core.helper.iam_role_resolver import _expected_trust_services, _get_smoke_test_actions

    assert set(iam.SDK_ROLE_CHECK_ACTIONS) == set(_get_smoke_test_actions("training"))
    services = {
        s
        for st_ in iam.job_role_trust_policy()["Statement"]
        for s in iam_decisions.as_list(st_["Principal"]["Service"])
    }
    assert _expected_trust_services("training") <= services


def test_the_sdk_role_check_refuses_a_role_with_only_the_managed_policy(offline):
    """What a live account answers for a job role carrying only AmazonSageMakerJobFullAccess."""
    from sagemaker.core.helper.iam_role_resolver import RoleValidationError, resolve_and_validate_role

    client = offline.client("iam")
    arn = client.create_role(RoleName="managed-only", AssumeRolePolicyDocument=json.dumps(iam.job_role_trust_policy()))[
        "Role"
    ]["Arn"]
    policy_arn, _ = iam.managed_policy_arn(client, iam.JOB_POLICY_NAME, account=arn.split(":")[4], tags=[])
    client.attach_role_policy(RoleName="managed-only", PolicyArn=policy_arn)
    with pytest.raises(RoleValidationError, match="ecr:GetAuthorizationToken"):
        resolve_and_validate_role(provided_role=arn, role_type="training", sagemaker_session=_sdk_session(offline))


def test_the_sdk_role_check_accepts_the_course_job_role(offline):
    from sagemaker.core.helper.iam_role_resolver import resolve_and_validate_role

    role = iam.ensure_job_role(session=offline)
    assert (
        resolve_and_validate_role(provided_role=role.arn, role_type="training", sagemaker_session=_sdk_session(offline))
        == role.arn
    )
    assert f"inline: {iam.JOB_ROLE_INLINE_POLICY}" in role.policies


def test_the_job_role_lets_its_evaluation_pipeline_create_and_pass(offline):
    role = iam.ensure_job_role(session=offline)
    job = f"arn:aws:sagemaker:us-west-2:{role.arn.split(':')[4]}:job/AgentRFTEvaluation/x"
    assert _simulate(offline, role.arn, "sagemaker:CreateJob", job)["EvalDecision"] == "allowed"
    passed = {"iam:PassedToService": ["job.sagemaker.amazonaws.com"]}
    assert _simulate(offline, role.arn, "iam:PassRole", role.arn, passed)["EvalDecision"] == "allowed"
    generic = {"iam:PassedToService": ["sagemaker.amazonaws.com"]}
    assert _simulate(offline, role.arn, "iam:PassRole", role.arn, generic)["EvalDecision"] == "implicitDeny"
    assert _simulate(offline, role.arn, "sagemaker:AddAssociation")["EvalDecision"] == "allowed"


def _sdk_session(boto_session):
    from sagemaker.core.helper.session_helper import Session

    return Session(boto_session=boto_session)


# --- stand-in responses against botocore's output shapes ---------------------------------------------


def test_response_problems_names_unknown_and_missing_members(offline):
    shape = offline.client("sagemaker").meta.service_model.operation_model("DescribeJob").output_shape
    ok = {"JobName": "j", "JobArn": "a", "JobCategory": "AgentRFT", "JobStatus": "InProgress"}
    problems = aws.response_problems(shape, {**ok, "Hyperparameters": {}})
    assert any("Hyperparameters: not a member" in p for p in problems)
    summaries = offline.client("sagemaker").meta.service_model.operation_model("ListJobs").output_shape
    assert any("[0].Surprise" in p for p in aws.response_problems(summaries, {"JobSummaries": [{"Surprise": 1}]}))


def test_a_stand_in_answering_outside_the_model_fails_the_call(offline, monkeypatch):
    backend = aws.offline_backend()
    monkeypatch.setitem(backend.handlers, ("sagemaker", "ListJobs"), lambda call: {"JobSummaries": [], "Extra": 1})
    with pytest.raises(aws.StandInContractError, match="Extra"):
        offline.client("sagemaker").list_jobs(JobCategory="AgentRFT")


# --- item 2: the evaluation pipeline runs as the job role ----------------------------------------------


def test_the_evaluation_pipeline_runs_only_as_a_role_that_may_run_it(offline):
    from mtrl_course.local.pipelines import _Execution, _Step

    pipelines = aws.offline_backend().pipelines
    good = iam.ensure_job_role(session=offline).arn
    bare = _role(offline, "bare-pipeline-role")  # trusts the right principals, grants nothing
    client = offline.client("iam")
    untrusted = client.create_role(
        RoleName="job-service-only",
        AssumeRolePolicyDocument=json.dumps(iam.trust_policy(iam.JOB_SERVICE, iam.JOB_TRUST_ACTIONS)),
    )["Role"]["Arn"]
    job = _Step("EvaluateCustomModel", "Job", {"JobCategory": "AgentRFTEvaluation", "RoleArn": good}, [])
    lineage = _Step("CreateEvaluationAction", "Lineage", {"Actions": [{}], "Contexts": [{}], "Associations": [{}]}, [])
    for step in (job, lineage):
        assert pipelines._denied(_Execution("arn", [step], role_arn=good), step, "us-east-1") is None
        refused = pipelines._denied(_Execution("arn", [step], role_arn=bare), step, "us-east-1")
        assert refused and refused.startswith("AccessDeniedException") and "no identity-based policy allows" in refused
        assert "could not assume" in pipelines._denied(_Execution("arn", [step], role_arn=untrusted), step, "us-east-1")


def test_the_local_service_rejects_the_evaluators_own_names():
    from mtrl_course import service_spec
    from mtrl_course.errors import ServiceError

    for name in service_spec.EVALUATION_ALIASES:
        with pytest.raises(ServiceError, match="supported hyperparameters"):
            service_spec.resolve_hyperparameters(
                {name: "0.5"}, service_spec.EVALUATION_SPEC, "EvaluationConfig.HyperParameters"
            )


def test_an_evaluator_spec_with_the_rejected_names_is_caught_before_anything_starts():
    from mtrl_course import evaluation

    class Options:
        _specs = {"eval_group_size": {}, "sampling_temperature": {}, "top_p": {}}
        eval_group_size = 1
        sampling_temperature = 0.0
        top_p = None

    assert evaluation.evaluator_would_send_rejected_names(Options()) == ["sampling_temperature"]


def test_an_unknown_hyperparameter_name_is_a_clear_value_error():
    from mtrl_course import training
    from sagemaker.train.common import FineTuningOptions

    options = FineTuningOptions({"max_steps": {"type": "integer", "default": 50, "min": 1, "max": 1000}})
    with pytest.raises(ValueError, match="unknown training hyperparameter 'max_step'; did you mean max_steps"):
        training.set_hyperparameters(options, {"max_step": 5}, "training")
    with pytest.raises(ValueError, match="max_steps=0 was refused"):
        training.set_hyperparameters(options, {"max_steps": 0}, "training")


# --- item 5: the MLflow app's own role ----------------------------------------------------------------


def test_the_mlflow_app_runs_as_its_own_role_scoped_to_its_bucket(offline):
    from mtrl_course import resources, storage

    bucket = storage.bucket_name(offline)
    offline.client("s3").create_bucket(Bucket=bucket)
    arn = resources.ensure_mlflow_app(offline, bucket=bucket)
    role_arn = offline.client("sagemaker").describe_mlflow_app(Arn=arn)["RoleArn"]
    assert role_arn.endswith("/mtrl-wordle-mlflow-role-offline") and not role_arn.endswith(
        iam.JOB_ROLE_KIND + "-offline"
    )
    assert (
        _simulate(offline, role_arn, "s3:PutObject", f"arn:aws:s3:::{bucket}/mtrl-wordle/offline/mlflow/x")[
            "EvalDecision"
        ]
        == "allowed"
    )
    assert (
        _simulate(offline, role_arn, "s3:GetObject", "arn:aws:s3:::another-bucket/x")["EvalDecision"] == "implicitDeny"
    )
    assert _simulate(offline, role_arn, "sagemaker:CreateJob", "*")["EvalDecision"] == "implicitDeny"
    caller = iam.caller_passrole_policy(iam.ensure_job_role(session=offline).arn, role_arn)
    context = {"iam:PassedToService": ["sagemaker.amazonaws.com"]}
    assert iam_decisions.evaluate_policy([caller], "iam:PassRole", role_arn, context) == "allowed"
    job_role = iam.ensure_job_role(session=offline).arn
    # The evaluator's CreatePipeline passes the job role to SageMaker too (issue 21 item 4).
    assert iam_decisions.evaluate_policy([caller], "iam:PassRole", job_role, context) == "allowed"
    lambda_service = {"iam:PassedToService": ["lambda.amazonaws.com"]}
    assert iam_decisions.evaluate_policy([caller], "iam:PassRole", job_role, lambda_service) == "implicitDeny"


# --- issue 21 item 4: the caller policy of notebook 01 lets the caller run the evaluator ----------------


def _assumed_caller(session, name: str, document: dict):
    """A boto3 session as an assumed-role caller whose only permissions are `document`."""
    import boto3

    account = session.client("sts").get_caller_identity()["Account"]
    trust = {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Principal": {"AWS": f"arn:aws:iam::{account}:root"}, "Action": "sts:AssumeRole"}
        ],
    }
    client = session.client("iam")
    arn = client.create_role(RoleName=name, AssumeRolePolicyDocument=json.dumps(trust))["Role"]["Arn"]
    client.put_role_policy(RoleName=name, PolicyName="caller", PolicyDocument=json.dumps(document))
    credentials = session.client("sts").assume_role(RoleArn=arn, RoleSessionName="learner")["Credentials"]
    return boto3.Session(
        aws_access_key_id=credentials["AccessKeyId"],
        aws_secret_access_key=credentials["SecretAccessKey"],
        aws_session_token=credentials["SessionToken"],
        region_name=session.region_name,
    ), arn


def test_the_evaluator_pipeline_actions_are_the_sdks_caller_check():
    from sagemaker.core.helper.iam_policies import EVALUATION_CALLER_ACTIONS

    assert set(iam.EVALUATOR_CALLER_ACTIONS) == set(EVALUATION_CALLER_ACTIONS)


def test_the_sdks_evaluation_caller_check_passes_for_the_documented_caller(offline):
    from sagemaker.core.helper.iam_role_resolver import verify_evaluation_caller_permissions

    job_role = iam.ensure_job_role(session=offline).arn
    caller, caller_role = _assumed_caller(offline, "documented-caller", iam.caller_passrole_policy(job_role))
    assert caller.client("sts").get_caller_identity()["Arn"].split(":")[5].startswith("assumed-role/documented-caller")
    assert verify_evaluation_caller_permissions(sagemaker_session=_sdk_session(caller)) is True
    # What the evaluator's CreatePipeline asks IAM: pass the job role to SageMaker (Pipelines).
    passed = {"iam:PassedToService": ["sagemaker.amazonaws.com"]}
    assert _simulate(offline, caller_role, "iam:PassRole", job_role, passed)["EvalDecision"] == "allowed"


def test_a_caller_with_the_job_actions_only_is_refused_clearly(offline):
    from sagemaker.core.helper.iam_role_resolver import RoleValidationError, verify_evaluation_caller_permissions

    job_role = iam.ensure_job_role(session=offline).arn
    document = iam.caller_passrole_policy(job_role)
    evaluator_sids = {"PassTheJobRoleToTheEvaluatorsPipeline", "RunTheEvaluatorsPipeline"}
    document["Statement"] = [s for s in document["Statement"] if s["Sid"] not in evaluator_sids]
    caller, caller_role = _assumed_caller(offline, "jobs-only-caller", document)
    with pytest.raises(
        RoleValidationError, match=r"jobs-only-caller' is missing IAM permissions.*sagemaker:CreatePipeline"
    ):
        verify_evaluation_caller_permissions(sagemaker_session=_sdk_session(caller))
    passed = {"iam:PassedToService": ["sagemaker.amazonaws.com"]}
    assert _simulate(offline, caller_role, "iam:PassRole", job_role, passed)["EvalDecision"] == "implicitDeny"
