"""Clean-up by discovery: it finds every kind of course resource (and nothing else), deletes only
with confirm=True, in a safe order, reports each deletion, and leaves the account empty. Offline
against moto and the local stand-ins."""

from __future__ import annotations

import json

import pytest
from mtrl_course import aws, cleanup, config, deploy, iam, naming, run_scope, storage, training
from mtrl_course.local.agent_server import LocalAgentRuntime

REAL_LOOKING = "4" + "0" * 7 + "9876"
MODEL = iam.BASE_MODEL_ID
UNRELATED_BUCKET = "team-analytics-data"
UNRELATED_ROLE = "analytics-reader"
UNRELATED_GROUP = "fraud-model-registry"


@pytest.fixture
def offline(monkeypatch, offline_session):
    # (offline_backend, under offline_session, already confines the evaluator's file to tmp_path.)
    monkeypatch.delenv(storage.BUCKET_ENV_VAR, raising=False)
    monkeypatch.delenv(naming.RUN_ID_ENV_VAR, raising=False)
    return offline_session


def make_course_resources(session, tmp_path) -> None:
    """What the notebooks leave behind: roles, S3 objects, an MLflow app, the trainer's package
    groups, the evaluator's pipeline and file, the runtime."""
    job_role = iam.ensure_job_role(session=session)
    iam.ensure_runtime_role(session=session)
    uploaded = storage.upload_dataset(session=session)
    sagemaker = session.client("sagemaker")
    sagemaker.create_mlflow_app(
        Name=naming.resource_name("mlflow"),
        ArtifactStoreUri=storage.s3_uri(uploaded[0].bucket, storage.course_prefix() + "mlflow/"),
        RoleArn=job_role.arn,
        Tags=naming.course_tags("05"),
    )
    # This run's trainer created the two groups (make_trainer records them).
    run_scope.record_created(
        sagemaker.create_model_package_group(ModelPackageGroupName=MODEL + suffix)["ModelPackageGroupArn"]
        for suffix in cleanup.PACKAGE_GROUP_SUFFIXES
    )
    sagemaker.create_model_package(ModelPackageGroupName=MODEL + "-mtrl-mpg", ModelPackageDescription="adapter")
    # The evaluator's pipeline is the account's, not this run's: it stays.
    sagemaker.create_pipeline(
        PipelineName=cleanup.EVAL_PIPELINE_PREFIX,
        PipelineDefinition=json.dumps({"Version": "2020-12-01", "Steps": []}),
        RoleArn=job_role.arn,
    )
    (tmp_path / cleanup.EVAL_PIPELINE_FILE).write_text("{}")
    LocalAgentRuntime(name=deploy.deployed_runtime_name())  # registered as deployed; never started


def make_unrelated_resources(session) -> None:
    session.client("s3").create_bucket(Bucket=UNRELATED_BUCKET)
    session.client("iam").create_role(
        RoleName=UNRELATED_ROLE,
        AssumeRolePolicyDocument=json.dumps(iam.trust_policy("ec2.amazonaws.com", ["sts:AssumeRole"])),
    )
    session.client("sagemaker").create_model_package_group(ModelPackageGroupName=UNRELATED_GROUP)


def unrelated_survive(session) -> bool:
    buckets = {b["Name"] for b in session.client("s3").list_buckets()["Buckets"]}
    groups = {
        g["ModelPackageGroupName"]
        for g in session.client("sagemaker").list_model_package_groups()["ModelPackageGroupSummaryList"]
    }
    return (
        UNRELATED_BUCKET in buckets and UNRELATED_GROUP in groups and iam.role_exists(UNRELATED_ROLE, session=session)
    )


def test_discover_finds_every_course_resource_and_nothing_else(offline, tmp_path):
    assert cleanup.discover(offline).empty
    make_course_resources(offline, tmp_path)
    make_unrelated_resources(offline)
    found = cleanup.discover(offline)
    kinds = list(found[cleanup.KIND])
    assert kinds == sorted(kinds, key=cleanup.ORDER.index)  # deletion order
    assert set(kinds) == {
        cleanup.RUNTIME,
        cleanup.MLFLOW,
        cleanup.BUCKET,
        cleanup.PACKAGE_GROUP,
        cleanup.ROLE,
        cleanup.POLICY,
        cleanup.FILE,
    }
    names = set(found[cleanup.NAME])
    assert {
        "mtrl-wordle-job-role-offline",
        "mtrl-wordle-runtime-role-offline",
        f"{MODEL}-mtrl-mpg",
        f"{MODEL}-mtrl-checkpoint-mpg",
        "mtrl-wordle-mlflow-offline",
        f"mtrl-wordle-{config.MOTO_ACCOUNT}-us-east-1",
    } <= names
    assert not names & {UNRELATED_BUCKET, UNRELATED_ROLE, UNRELATED_GROUP}
    assert all(isinstance(r, cleanup.Resource) for r in found[cleanup.RESOURCE])
    billing = dict(zip(found[cleanup.KIND], found[cleanup.BILLS]))
    assert billing[cleanup.ROLE] == "no" and billing[cleanup.MLFLOW].startswith("yes")
    assert "per second of an active session" in billing[cleanup.RUNTIME]
    assert list(cleanup.as_table(found).columns) == [cleanup.KIND, cleanup.NAME, cleanup.BILLS, cleanup.HOW_COLUMN]
    commands = cleanup.cli_commands(found, offline)
    assert len(commands) > len(found) and not any("delete-pipeline" in c for c in commands)


def test_the_printed_steps_run_as_printed_packages_before_groups_policies_before_roles(offline, tmp_path):
    make_course_resources(offline, tmp_path)
    found = cleanup.discover(offline)
    commands = cleanup.cli_commands(found, offline)
    at = {command: i for i, command in enumerate(commands)}

    def index(prefix: str) -> list[int]:
        return [i for c, i in at.items() if c.startswith(prefix)]

    group = f"aws sagemaker delete-model-package-group --model-package-group-name {MODEL}-mtrl-mpg"
    packages = index("aws sagemaker delete-model-package --model-package-name ")
    assert len(packages) == 1 and max(packages) < at[group]  # the one adapter package, before its group
    for role in ("mtrl-wordle-job-role-offline", "mtrl-wordle-runtime-role-offline"):
        detaches = index(f"aws iam detach-role-policy --role-name {role} ")
        inline = index(f"aws iam delete-role-policy --role-name {role} ")
        assert detaches, f"{role}: its attached policies must be detached first"
        assert max(detaches + inline) < at[f"aws iam delete-role --role-name {role}"]
    # A policy attached only to roles being deleted is detached once, in those roles' steps.
    assert len(commands) == len(set(commands))
    policy_deletes = index("aws iam delete-policy --policy-arn ")
    assert policy_deletes and min(policy_deletes) > max(index("aws iam delete-role --role-name "))


def test_nothing_is_deleted_without_an_explicit_true(offline, tmp_path, capsys):
    make_course_resources(offline, tmp_path)
    found = cleanup.discover(offline)
    for not_true in (False, "yes", 1):
        report = cleanup.delete(found, confirm=not_true, session=offline)
        assert set(report["result"]) == {cleanup.NOT_CONFIRMED}
    assert "dry run: nothing deleted" in capsys.readouterr().out
    assert len(cleanup.verify_empty(offline)) == len(found)


def test_delete_empties_the_account_and_spares_unrelated_resources(offline, tmp_path, capsys):
    make_course_resources(offline, tmp_path)
    make_unrelated_resources(offline)
    found = cleanup.discover(offline)
    report = cleanup.delete(found, confirm=True, session=offline)
    assert len(report) == len(found)
    assert all(r.startswith(("deleted", "stopped")) for r in report["result"]), report
    printed = capsys.readouterr().out.splitlines()
    assert len(printed) == len(found) and printed[0].startswith(cleanup.RUNTIME)
    assert cleanup.verify_empty(offline).empty
    pipelines = offline.client("sagemaker").list_pipelines()["PipelineSummaries"]
    assert [p["PipelineName"] for p in pipelines] == [cleanup.EVAL_PIPELINE_PREFIX]  # the account's, kept
    assert unrelated_survive(offline)
    assert not (tmp_path / cleanup.EVAL_PIPELINE_FILE).exists()
    assert aws.offline_backend().runtimes.all() == []
    # Deleting the same rows again finds them gone instead of failing.
    again = cleanup.delete(found, confirm=True, session=offline)
    assert not any(r.startswith("failed") for r in again["result"]), again


def test_a_filtered_frame_deletes_only_its_rows(offline, tmp_path):
    make_course_resources(offline, tmp_path)
    found = cleanup.discover(offline)
    keep = {cleanup.ROLE, cleanup.POLICY, cleanup.PACKAGE_GROUP}
    cleanup.delete(found[~found[cleanup.KIND].isin(keep)], confirm=True, session=offline, echo=False)
    assert set(cleanup.verify_empty(offline)[cleanup.KIND]) == keep


def test_a_failure_is_reported_and_the_rest_goes_on(offline, tmp_path, monkeypatch):
    make_course_resources(offline, tmp_path)

    def refuse(session, resource):
        raise RuntimeError("simulated refusal")

    monkeypatch.setitem(cleanup.DELETERS, cleanup.MLFLOW, refuse)
    report = cleanup.delete(cleanup.discover(offline), confirm=True, session=offline, echo=False)
    results = dict(zip(report[cleanup.KIND], report["result"]))
    assert results[cleanup.MLFLOW].startswith("failed: RuntimeError: simulated refusal")
    assert list(cleanup.verify_empty(offline)[cleanup.KIND]) == [cleanup.MLFLOW]


def test_only_the_course_prefix_is_deleted_from_the_learners_bucket(offline, monkeypatch):
    monkeypatch.setenv(storage.BUCKET_ENV_VAR, "learner-bucket")
    s3 = offline.client("s3")
    s3.create_bucket(Bucket="learner-bucket")
    s3.put_object(Bucket="learner-bucket", Key="theirs/data.csv", Body=b"a")
    storage.upload_dataset(session=offline)
    found = cleanup.discover(offline)
    assert list(found[cleanup.KIND]) == [cleanup.PREFIX]
    assert found[cleanup.NAME][0] == "s3://learner-bucket/mtrl-wordle/offline/"  # this run's prefix only
    cleanup.delete(found, confirm=True, session=offline, echo=False)
    assert [o.key for o in storage.list_prefix("learner-bucket", "", offline)] == ["theirs/data.csv"]


def test_a_kind_that_cannot_be_listed_gets_a_row_without_a_resource(offline, monkeypatch):
    def denied(session, tagged):
        raise RuntimeError("AccessDenied listing apps")

    monkeypatch.setitem(cleanup.DISCOVERERS, cleanup.MLFLOW, denied)
    found = cleanup.discover(offline)
    assert list(found[cleanup.KIND]) == [cleanup.MLFLOW] and found[cleanup.RESOURCE][0] is None
    assert found[cleanup.NAME][0].startswith(cleanup.CHECK_BY_HAND)
    assert cleanup.verify_empty(offline).empty
    assert cleanup.delete(found, confirm=True, session=offline, echo=False).empty


class _JobsStub:
    """A SageMaker client with three running jobs: ours, another run's, and an untagged one."""

    def __init__(self):
        self.stopped = []

    def client(self, name):
        return self

    def list_jobs(self, JobCategory, StatusEquals, **_):
        if JobCategory != "AgentRFT":
            return {"JobSummaries": []}
        return {
            "JobSummaries": [
                {"JobName": n, "JobArn": f"arn:aws:sagemaker:us-east-1:{config.MOTO_ACCOUNT}:job/AgentRFT/{n}"}
                for n in ("mine", "instructors", "untagged")
            ]
        }

    def describe_job(self, JobName, JobCategory):
        run = {"mine": "offline", "instructors": "abc123"}.get(JobName)
        tags = [{"Key": "course", "Value": config.COURSE_TAG}, {"Key": "run_id", "Value": run}] if run else []
        return {"Tags": tags}

    def stop_job(self, JobName, JobCategory):
        self.stopped.append(JobName)


def test_only_this_runs_running_jobs_are_stopped(monkeypatch):
    monkeypatch.delenv(naming.RUN_ID_ENV_VAR, raising=False)
    stub = _JobsStub()
    jobs = cleanup._jobs(stub, cleanup._Scope("offline", frozenset(), frozenset({"abc123"}), False))
    assert [r.name for r in jobs] == ["mine"]
    assert cleanup._stop_job(stub, jobs[0]).startswith("stop requested") and stub.stopped == ["mine"]


def test_printed_forms_mask_real_accounts():
    resource = cleanup.Resource(
        cleanup.ROLE, f"arn:aws:iam::{REAL_LOOKING}:role/x", f"aws iam delete-role --role-name x {REAL_LOOKING}"
    )
    assert REAL_LOOKING not in str(resource) and "9876" in repr(resource)
    import pandas as pd

    frame = pd.DataFrame([{cleanup.KIND: cleanup.ROLE, cleanup.RESOURCE: resource}])
    assert REAL_LOOKING not in " ".join(cleanup.cli_commands(frame))


def test_the_command_lists_then_deletes_with_yes(offline, tmp_path, capsys, monkeypatch):
    from mtrl_course import cli

    monkeypatch.setattr(cleanup.aws, "session_or_new", lambda session: offline)
    assert cli.main(["cleanup"]) == 0 and "nothing of this run's was found" in capsys.readouterr().out
    iam.ensure_job_role(session=offline)
    assert cli.main(["cleanup", "--dry-run"]) == 0
    assert "dry run: nothing deleted" in capsys.readouterr().out
    assert iam.role_exists("mtrl-wordle-job-role-offline", session=offline)
    assert cli.main(["cleanup", "--yes"]) == 0
    assert "clean: nothing of the course's is left" in capsys.readouterr().out
    assert not iam.role_exists("mtrl-wordle-job-role-offline", session=offline)


def test_the_agentcore_stack_and_a_control_plane_runtime_are_found_and_deleted(offline):
    """The AgentCore CLI's CloudFormation stack, and a runtime known to the control plane."""
    stack = cleanup.stack_names()[0]
    assert stack == "AgentCore-WordleMTRL-default"
    template = {"Resources": {"Logs": {"Type": "AWS::Logs::LogGroup", "Properties": {"LogGroupName": "/mtrl/test"}}}}
    offline.client("cloudformation").create_stack(StackName=stack, TemplateBody=json.dumps(template))
    control = offline.client("bedrock-agentcore-control")
    control.create_agent_runtime(
        agentRuntimeName=deploy.deployed_runtime_name(),
        agentRuntimeArtifact={
            "codeConfiguration": {
                "code": {"s3": {"bucket": "b", "prefix": "p"}},
                "runtime": "PYTHON_3_12",
                "entryPoint": ["main.py"],
            }
        },
        roleArn=f"arn:aws:iam::{config.MOTO_ACCOUNT}:role/x",
        networkConfiguration={"networkMode": "PUBLIC"},
    )
    found = cleanup.discover(offline)
    assert list(found[cleanup.KIND]) == [cleanup.STACK, cleanup.RUNTIME]
    cleanup.delete(found, confirm=True, session=offline, echo=False)
    assert cleanup.verify_empty(offline).empty


# --- a lab account: the instructor's run and a learner's -------------------------------------------


def _make_run(session, run: str, monkeypatch) -> None:
    monkeypatch.setenv(naming.RUN_ID_ENV_VAR, run)
    role = iam.ensure_job_role(session=session)
    iam.ensure_runtime_role(session=session)
    uploaded = storage.upload_dataset(session=session)
    session.client("sagemaker").create_mlflow_app(
        Name=naming.resource_name("mlflow"),
        ArtifactStoreUri=storage.s3_uri(uploaded[0].bucket, storage.course_prefix() + "mlflow/"),
        RoleArn=role.arn,
        Tags=naming.course_tags("05"),
    )


def test_in_a_two_run_account_only_this_runs_resources_are_deleted(offline, tmp_path, monkeypatch):
    _make_run(offline, "inst", monkeypatch)
    sagemaker = offline.client("sagemaker")
    for suffix in cleanup.PACKAGE_GROUP_SUFFIXES:  # the trainer's shared get-or-create groups
        sagemaker.create_model_package_group(ModelPackageGroupName=MODEL + suffix)
    sagemaker.create_pipeline(
        PipelineName=cleanup.EVAL_PIPELINE_PREFIX,
        PipelineDefinition=json.dumps({"Version": "2020-12-01", "Steps": []}),
        RoleArn=iam.ensure_job_role(session=offline).arn,
    )
    _make_run(offline, "lrn", monkeypatch)

    found = cleanup.discover(offline)
    names = set(found[cleanup.NAME])
    assert {"mtrl-wordle-job-role-lrn", "mtrl-wordle-runtime-role-lrn", "mtrl-wordle-mlflow-lrn"} <= names
    assert not any("inst" in name for name in names)
    bucket = storage.default_bucket_name(config.MOTO_ACCOUNT, "us-east-1")
    assert f"s3://{bucket}/mtrl-wordle/lrn/" in names and bucket not in names
    assert not {cleanup.PIPELINE, cleanup.PACKAGE_GROUP, cleanup.POLICY} & set(found[cleanup.KIND])

    left = cleanup.not_touched(offline)
    why = dict(zip(left[cleanup.NAME], left[cleanup.WHY_COLUMN]))
    assert "another run" in why["mtrl-wordle-job-role-inst"] and "another run" in why["mtrl-wordle-mlflow-inst"]
    assert why[f"{MODEL}-mtrl-mpg"] == cleanup.NOT_CREATED_GROUP_WHY
    assert why[cleanup.EVAL_PIPELINE_PREFIX] == cleanup.SHARED_PIPELINE_WHY
    assert "only this run's prefix" in why[bucket]
    assert any(name.startswith(cleanup.CDK_BOOTSTRAP_STACK) for name in why)

    report = cleanup.delete(found, confirm=True, session=offline, echo=False)
    assert all(r.startswith("deleted") for r in report["result"]), report
    assert iam.role_exists("mtrl-wordle-job-role-inst", session=offline)
    assert not iam.role_exists("mtrl-wordle-job-role-lrn", session=offline)
    apps = {a["Name"] for a in sagemaker.list_mlflow_apps()["Summaries"]}
    assert "mtrl-wordle-mlflow-inst" in apps and "mtrl-wordle-mlflow-lrn" not in apps
    assert storage.prefix_exists(bucket, "mtrl-wordle/inst/", offline)
    assert not storage.prefix_exists(bucket, "mtrl-wordle/lrn/", offline)
    groups = {g["ModelPackageGroupName"] for g in sagemaker.list_model_package_groups()["ModelPackageGroupSummaryList"]}
    assert {MODEL + s for s in cleanup.PACKAGE_GROUP_SUFFIXES} <= groups
    assert cleanup.verify_empty(offline).empty  # nothing of the learner's run is left


# --- issue 21 item 3: what another user (not a course run) has in the same account ------------------


def _another_users_evaluations_and_groups(session) -> str:
    """Someone outside the course evaluates with MultiTurnRLEvaluator (its one shared pipeline, an
    execution running) and trains this base model and another (the trainer's get-or-create groups).
    Returns the running execution's ARN."""
    sagemaker = session.client("sagemaker")
    trust = json.dumps(iam.trust_policy("sagemaker.amazonaws.com", ["sts:AssumeRole"]))
    role = session.client("iam").create_role(RoleName="someone-elses-pipeline-role", AssumeRolePolicyDocument=trust)
    sagemaker.create_pipeline(
        PipelineName=cleanup.EVAL_PIPELINE_PREFIX,
        PipelineDefinition=json.dumps({"Version": "2020-12-01", "Steps": []}),
        RoleArn=role["Role"]["Arn"],
    )
    execution = sagemaker.start_pipeline_execution(PipelineName=cleanup.EVAL_PIPELINE_PREFIX)
    for model in (MODEL, "someone-elses-model"):
        for suffix in cleanup.PACKAGE_GROUP_SUFFIXES:
            sagemaker.create_model_package_group(ModelPackageGroupName=model + suffix)
    sagemaker.create_model_package(ModelPackageGroupName=MODEL + "-mtrl-mpg", ModelPackageDescription="theirs")
    return execution["PipelineExecutionArn"]


def test_a_run_alone_in_the_account_never_deletes_another_users_pipeline_or_groups(offline, tmp_path):
    iam.ensure_job_role(session=offline)  # something of this run's, so the run is not empty
    execution = _another_users_evaluations_and_groups(offline)
    scope = cleanup._scope(offline)
    assert scope.alone  # no other course run: the old rule ("alone") deleted all of the above

    found = cleanup.discover(offline)
    assert not {cleanup.PIPELINE, cleanup.PACKAGE_GROUP} & set(found[cleanup.KIND])
    report = cleanup.delete(found, confirm=True, session=offline, echo=False)
    assert all(r.startswith("deleted") for r in report["result"]), report

    sagemaker = offline.client("sagemaker")
    assert [p["PipelineName"] for p in sagemaker.list_pipelines()["PipelineSummaries"]] == [
        cleanup.EVAL_PIPELINE_PREFIX
    ]
    status = sagemaker.describe_pipeline_execution(PipelineExecutionArn=execution)["PipelineExecutionStatus"]
    assert status != "Stopping" and status != "Stopped"
    groups = {g["ModelPackageGroupName"] for g in sagemaker.list_model_package_groups()["ModelPackageGroupSummaryList"]}
    assert {m + s for m in (MODEL, "someone-elses-model") for s in cleanup.PACKAGE_GROUP_SUFFIXES} <= groups

    left = cleanup.not_touched(offline)
    why = dict(zip(left[cleanup.NAME], left[cleanup.WHY_COLUMN]))
    assert why[cleanup.EVAL_PIPELINE_PREFIX] == cleanup.SHARED_PIPELINE_WHY
    for model in (MODEL, "someone-elses-model"):
        for suffix in cleanup.PACKAGE_GROUP_SUFFIXES:
            assert why[model + suffix] == cleanup.NOT_CREATED_GROUP_WHY


def test_the_trainer_records_only_the_groups_it_created(offline, monkeypatch):
    sagemaker = offline.client("sagemaker")
    existing = sagemaker.create_model_package_group(ModelPackageGroupName=training.PACKAGE_GROUP_NAMES[0])
    before = training._existing_package_groups()
    assert before == {training.PACKAGE_GROUP_NAMES[0]}
    created = sagemaker.create_model_package_group(ModelPackageGroupName=training.PACKAGE_GROUP_NAMES[1])

    class Trainer:  # what MultiTurnRLTrainer holds after its get-or-create
        output_model_package_group = existing["ModelPackageGroupArn"]
        intermediate_checkpoint_model_package_group = created["ModelPackageGroupArn"]

    training._record_created_package_groups(Trainer(), before)
    assert run_scope.created_arns() == {created["ModelPackageGroupArn"]}
    found = cleanup.discover(offline)
    assert list(found[cleanup.NAME]) == [training.PACKAGE_GROUP_NAMES[1]]  # alone: its own group goes
    left = cleanup.not_touched(offline)
    assert dict(zip(left[cleanup.NAME], left[cleanup.WHY_COLUMN]))[training.PACKAGE_GROUP_NAMES[0]] == (
        cleanup.NOT_CREATED_GROUP_WHY
    )


def test_the_trainer_class_records_what_its_constructor_created(offline, monkeypatch):
    sagemaker = offline.client("sagemaker")
    before = sagemaker.create_model_package_group(ModelPackageGroupName=training.PACKAGE_GROUP_NAMES[0])

    class GetOrCreate:  # what MultiTurnRLTrainer's constructor does with the two default names
        def __init__(self):
            arns = []
            for name in training.PACKAGE_GROUP_NAMES:
                try:
                    arns.append(
                        sagemaker.describe_model_package_group(ModelPackageGroupName=name)["ModelPackageGroupArn"]
                    )
                except Exception:
                    arns.append(
                        sagemaker.create_model_package_group(ModelPackageGroupName=name)["ModelPackageGroupArn"]
                    )
            self.output_model_package_group, self.intermediate_checkpoint_model_package_group = arns

        @classmethod
        def attach(cls, name):
            return f"attached {name}"

    wrapped = training._RecordsCreatedGroups(GetOrCreate)
    trainer = wrapped()
    assert run_scope.created_arns() == {trainer.intermediate_checkpoint_model_package_group}
    assert before["ModelPackageGroupArn"] not in run_scope.created_arns()
    assert wrapped.attach("j") == "attached j"


def test_a_group_that_cannot_be_read_is_never_recorded_as_this_runs(offline, monkeypatch):
    from mtrl_course.errors import ServiceError

    def refuse(call):
        raise ServiceError("AccessDeniedException", "not authorized to perform: sagemaker:DescribeModelPackageGroup")

    monkeypatch.setitem(aws.offline_backend().handlers, ("sagemaker", "DescribeModelPackageGroup"), refuse)
    assert training._existing_package_groups() == set(training.PACKAGE_GROUP_NAMES)
