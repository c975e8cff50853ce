"""The local MTRL service (control plane): CreateJob validation, job lifecycle, DescribeJob's
ServiceOutput, and the SDK's MultiTurnRLTrainer / MultiTurnRLEvaluator running against it."""

from __future__ import annotations

import json
import threading

import pytest
from botocore.exceptions import ClientError
from mtrl_course import aws, config, dataset, service_spec
from mtrl_course import iam as course_iam
from mtrl_course.local import hub, service
from mtrl_course.local.agent_server import LocalAgentRuntime

# sagemaker-train registers OmegaConf resolvers with a deprecated call on every train().
pytestmark = [pytest.mark.floats, pytest.mark.filterwarnings("ignore:register_new_resolver:UserWarning")]

ACCOUNT = config.MOTO_ACCOUNT
REGION = config.OFFLINE_REGION
BUCKET = "mtrl-course-test-bucket"
TRAIN_URI = f"s3://{BUCKET}/data/training-data.jsonl"
VAL_URI = f"s3://{BUCKET}/data/validation-data.jsonl"
# What the SDK's role pre-check wants (sagemaker.amazonaws.com) plus what CreateJob wants.
BOTH_PRINCIPALS = ["job.sagemaker.amazonaws.com", "sagemaker.amazonaws.com"]
WALKTHROUGH_OVERRIDES = {"sampling_max_tokens": "8192", "max_epochs": "20", "max_steps": "100"}


async def ok_app(scope, receive, send):
    """The runtime is only looked up by ARN in these tests; it answers /ping and nothing more."""
    if scope["type"] != "http":
        return
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": b'{"status": "Healthy"}'})


def trust(principals, actions=("sts:AssumeRole", "sts:TagSession")) -> str:
    statement = {"Effect": "Allow", "Principal": {"Service": list(principals)}, "Action": list(actions)}
    return json.dumps({"Version": "2012-10-17", "Statement": [statement]})


class World:
    """Everything a CreateJob needs, in moto: role, bucket, datasets, MLflow app, runtime."""

    def __init__(self, backend):
        self.backend = backend
        self.boto = aws.session()
        self.iam = self.boto.client("iam")
        self.s3 = self.boto.client("s3")
        self.sm = self.boto.client("sagemaker")
        self.role = self.make_role("MtrlJobRole", BOTH_PRINCIPALS)
        self.s3.create_bucket(Bucket=BUCKET)
        train, val = dataset.make_splits()
        self.put(TRAIN_URI, train)
        self.put(VAL_URI, val)
        self.mlflow_arn = self.sm.create_mlflow_app(
            Name="mtrl-test", ArtifactStoreUri=f"s3://{BUCKET}/mlflow", RoleArn=self.role
        )["Arn"]
        self.runtime = LocalAgentRuntime(f"{__name__}:ok_app", name="WordleTest")
        self.sm.create_model_package_group(ModelPackageGroupName="wordle-mpg")
        self.mpg_arn = f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:model-package-group/wordle-mpg"

    def make_role(self, name: str, principals, actions=("sts:AssumeRole", "sts:TagSession")) -> str:
        arn = self.iam.create_role(RoleName=name, AssumeRolePolicyDocument=trust(principals, actions))["Role"]["Arn"]
        # What the SDK's role check and the evaluation pipeline ask of the role (the course's
        # job role carries the same), so these tests reach the trust and service checks.
        self.iam.put_role_policy(
            RoleName=name, PolicyName="course-inline", PolicyDocument=json.dumps(course_iam.job_role_inline_policy(arn))
        )
        return arn

    def put(self, uri: str, rows) -> None:
        key = uri.split("/", 3)[3]
        self.s3.put_object(Bucket=BUCKET, Key=key, Body="".join(json.dumps(r) + "\n" for r in rows).encode())

    def document(self, hyperparameters=None, mlflow="training", runtime_arn=None, train=TRAIN_URI) -> dict:
        doc = {
            "AgentConfig": {
                "BedrockAgentCoreConfig": {"AgentRuntimeArn": runtime_arn or self.runtime.arn, "Qualifier": "DEFAULT"}
            },
            "InputDataConfig": [
                {"ChannelName": "train", "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": train}}},
                {
                    "ChannelName": "validation",
                    "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": VAL_URI}},
                },
            ],
            "OutputDataConfig": {"S3OutputPath": f"s3://{BUCKET}/out/"},
            "ModelPackageConfig": {"OutputModelPackageGroupArn": self.mpg_arn},
            "TrainingConfig": {
                "BaseModelArn": hub.hub_content_arn(REGION, service_spec.GPT_OSS_20B),
                "AcceptEula": True,
                "HyperParameters": dict(WALKTHROUGH_OVERRIDES if hyperparameters is None else hyperparameters),
            },
        }
        if mlflow == "training":
            doc["TrainingConfig"]["MlflowConfig"] = {
                "MlflowResourceArn": self.mlflow_arn,
                "MlflowExperimentName": "wordle",
            }
        elif mlflow == "output":
            doc["OutputDataConfig"]["MlflowConfig"] = {"MlflowResourceArn": self.mlflow_arn}
        return doc

    def create(self, name="wordle-mtrl-1", role=None, doc=None, category=service.TRAINING) -> str:
        return self.sm.create_job(
            JobName=name,
            RoleArn=role or self.role,
            JobCategory=category,
            JobConfigSchemaVersion="1.0.0",
            JobConfigDocument=json.dumps(self.document() if doc is None else doc),
        )["JobArn"]

    def rejects(self, **kwargs) -> tuple[str, str]:
        with pytest.raises(ClientError) as excinfo:
            self.create(**kwargs)
        error = excinfo.value.response["Error"]
        return error["Code"], error["Message"]


@pytest.fixture
def world(tmp_path):
    backend = aws.reset_offline(tmp_path / "state")
    yield World(backend)
    aws.reset_offline(tmp_path / "state")


def finished(world, name, category=service.TRAINING) -> service.LocalJob:
    job = world.backend.service.get_job(name, category)
    assert job.wait(10), f"{name} did not finish"
    return job


# --- lifecycle ----------------------------------------------------------------------------------------


def test_demo_job_walks_the_statuses_and_reports_service_output(world):
    world.backend.service.set_runner(service.TRAINING, service.demo_runner)
    arn = world.create()
    assert arn == f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:job/AgentRFT/wordle-mtrl-1"
    finished(world, "wordle-mtrl-1")
    described = world.sm.describe_job(JobName="wordle-mtrl-1", JobCategory=service.TRAINING)
    assert (described["JobStatus"], described["SecondaryStatus"]) == ("Completed", "Completed")
    statuses = [t["Status"] for t in described["SecondaryStatusTransitions"]]
    assert statuses == ["Starting", "Downloading", "Pending", "Training", "Uploading", "Completed"]
    assert all("EndTime" in t for t in described["SecondaryStatusTransitions"])
    output = json.loads(described["JobConfigDocument"])["ServiceOutput"]
    assert output["BillableTokenUsage"] == {
        "PrefillTokenCount": 0,
        "SampleTokenCount": 0,
        "TrainTokenCount": 0,
        "TrainingTokenCount": 0,
    }
    assert output["ProgressInfo"] == {
        "MaxEpoch": 20,
        "StepsPerEpoch": 5,
        "CurrentEpoch": 20,
        "CurrentStep": 5,
        "BatchSize": 128,
    }
    assert output["RolloutInfo"] == {"Total": 100 * 128 * 8, "Completed": 100 * 128 * 8}
    packages = world.sm.list_model_packages(ModelPackageGroupName="wordle-mpg")["ModelPackageSummaryList"]
    assert [p["ModelPackageArn"] for p in packages] == [output["OutputModelPackageArn"]]


def test_runner_sees_typed_hyperparameters_prompts_and_mlflow(world):
    seen = {}

    def runner(job):
        seen.update(
            hp=job.hyperparameters,
            train=job.prompts("train"),
            val=job.prompts("validation"),
            mlflow=job.mlflow_tracking_uri,
            experiment=job.experiment_name,
            run=job.run_name,
        )

    world.backend.service.set_runner(service.TRAINING, runner)
    world.create()
    finished(world, "wordle-mtrl-1")
    assert (seen["hp"]["sampling_max_tokens"], seen["hp"]["max_epochs"], seen["hp"]["max_steps"]) == (8192, 20, 100)
    assert seen["hp"]["group_size"] == 8 and seen["hp"]["learning_rate"] == pytest.approx(4e-5)
    assert len(seen["train"]) == 640 and len(seen["val"]) == 128
    assert json.loads(seen["train"][0])["prompt"] == dataset.TASK_INSTRUCTION
    assert seen["mlflow"] == world.backend.mlflow.info(world.mlflow_arn).tracking_uri
    assert (seen["experiment"], seen["run"]) == ("wordle", "wordle-mtrl-1")


def test_stop_job_stops_a_running_job(world):
    release = threading.Event()

    def runner(job):
        job.set_secondary("Training")
        while not job.should_stop():
            release.wait(0.01)

    world.backend.service.set_runner(service.TRAINING, runner)
    world.create()
    world.sm.stop_job(JobName="wordle-mtrl-1", JobCategory=service.TRAINING)
    job = finished(world, "wordle-mtrl-1")
    assert (job.status, job.secondary_status) == ("Stopped", "Stopped")
    assert "Stopping" in [t["Status"] for t in job.transitions]
    world.sm.delete_job(JobName="wordle-mtrl-1", JobCategory=service.TRAINING)
    with pytest.raises(ClientError, match="ResourceNotFound"):
        world.sm.describe_job(JobName="wordle-mtrl-1", JobCategory=service.TRAINING)


def test_runner_failures_fail_the_job_with_a_reason(world):
    world.backend.service.set_runner(
        service.TRAINING, lambda job: job.fail("ClientError: No sampling requests were received")
    )
    world.create(name="fails-1")
    assert finished(world, "fails-1").failure_reason == "ClientError: No sampling requests were received"

    def crash(job):
        raise RuntimeError("runtime restarted")

    world.backend.service.set_runner(service.TRAINING, crash)
    world.create(name="fails-2")
    job = finished(world, "fails-2")
    assert (job.status, job.failure_reason) == ("Failed", "RuntimeError: runtime restarted")
    described = world.sm.describe_job(JobName="fails-2", JobCategory=service.TRAINING)
    assert described["FailureReason"] == "RuntimeError: runtime restarted" and described["SecondaryStatus"] == "Failed"


def test_job_without_a_runner_fails_and_says_why(world):
    world.create()
    assert "has no runner for AgentRFT" in finished(world, "wordle-mtrl-1").failure_reason


def test_second_concurrent_training_job_is_refused(world):
    hold = threading.Event()
    world.backend.service.set_runner(service.TRAINING, lambda job: hold.wait(10))
    world.create(name="first")
    code, message = world.rejects(name="second")
    hold.set()
    assert code == "ResourceLimitExceeded"
    assert "Maximum number of concurrent multi-turn reinforcement fine tuning jobs' is 1 Jobs" in message
    finished(world, "first")
    world.create(name="third")  # the quota frees up once the first one is done


def test_list_jobs_filters_sorts_and_pages(world):
    world.backend.service.set_runner(service.TRAINING, service.demo_runner)
    for name in ("job-a", "job-b", "other-c"):
        world.create(name=name)
        finished(world, name)
    listed = world.sm.list_jobs(JobCategory=service.TRAINING, NameContains="job", SortBy="Name", SortOrder="Ascending")
    assert [s["JobName"] for s in listed["JobSummaries"]] == ["job-a", "job-b"]
    page = world.sm.list_jobs(JobCategory=service.TRAINING, MaxResults=2)
    assert len(page["JobSummaries"]) == 2 and page["NextToken"]
    rest = world.sm.list_jobs(JobCategory=service.TRAINING, MaxResults=2, NextToken=page["NextToken"])
    assert [s["JobName"] for s in rest["JobSummaries"]] == ["job-a"]


def test_mlflow_config_in_output_data_config_is_accepted(world):
    world.backend.service.set_runner(service.TRAINING, service.demo_runner)
    world.create(doc=world.document(mlflow="output"))
    assert finished(world, "wordle-mtrl-1").status == "Completed"


def test_evaluation_job_accepts_documented_nested_names_and_rejects_the_sdks(world):
    world.backend.service.set_runner(service.EVALUATION, service.demo_runner)
    doc = {
        "AgentConfig": {"BedrockAgentCoreConfig": {"AgentRuntimeArn": world.runtime.arn}},
        "InputDataConfig": [
            {"ChannelName": "evaluation", "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": VAL_URI}}}
        ],
        "OutputDataConfig": {
            "S3OutputPath": f"s3://{BUCKET}/eval/",
            "MlflowConfig": {"MlflowResourceArn": world.mlflow_arn},
        },
        "EvaluationConfig": {
            "BaseModelArn": hub.hub_content_arn(REGION, service_spec.GPT_OSS_20B),
            "AcceptEula": True,
            "HyperParameters": {
                "batch": {"eval_group_size": 4},
                "sampling_temperature": "1.0",
                "sampling_top_p": "0.9",
            },
        },
    }
    # MultiTurnRLEvaluator's own name: the public sample reports the live schema rejects it.
    code, message = world.rejects(name="eval-0", doc=doc, category=service.EVALUATION)
    assert code == "ValidationException" and "sampling_temperature" in message
    doc["EvaluationConfig"]["HyperParameters"] = {
        "batch": {"eval_group_size": 4},
        "temperature": "1.0",
        "sampling_top_p": "0.9",
    }
    world.create(name="eval-1", doc=doc, category=service.EVALUATION)
    job = finished(world, "eval-1", service.EVALUATION)
    assert (
        job.hyperparameters["eval_group_size"],
        job.hyperparameters["temperature"],
        job.hyperparameters["sampling_top_p"],
    ) == (4, 1.0, 0.9)
    usage = json.loads(world.sm.describe_job(JobName="eval-1", JobCategory=service.EVALUATION)["JobConfigDocument"])[
        "ServiceOutput"
    ]["BillableTokenUsage"]
    assert set(usage) == {"PrefillTokenCount", "SampleTokenCount"}
    doc["EvaluationConfig"]["HyperParameters"] = {"temperature": "2.5"}
    code, message = world.rejects(name="eval-2", doc=doc, category=service.EVALUATION)
    assert code == "ValidationException" and "Member must be less than or equal to 2.0" in message


# --- CreateJob validation ---------------------------------------------------------------------------------


def test_generic_sagemaker_principal_cannot_be_assumed(world):
    generic = world.make_role("GenericSageMaker", ["sagemaker.amazonaws.com"], ["sts:AssumeRole"])
    first = world.rejects(role=generic)
    assert first == (
        "ValidationException",
        f"Could not assume role {generic}. Please ensure that the role exists and its trust policy allows the service to assume it.",
    )
    world.rejects(role=generic)
    # The third attempt names the principal, as the walkthrough's authors found.
    third = world.rejects(role=generic)[1]
    assert "allows principal 'job.sagemaker.amazonaws.com'" in third and "sts:TagSession" in third


def test_job_principal_without_tag_session_cannot_be_assumed(world):
    role = world.make_role("NoTagSession", ["job.sagemaker.amazonaws.com"], ["sts:AssumeRole"])
    assert world.rejects(role=role)[1].startswith(f"Could not assume role {role}.")


def test_missing_role_cannot_be_assumed(world):
    missing = f"arn:aws:iam::{ACCOUNT}:role/DoesNotExist"
    assert world.rejects(role=missing)[1].startswith(f"Could not assume role {missing}.")


def test_runtime_in_another_region_is_rejected(world):
    west = world.runtime.arn.replace(f":{REGION}:", ":us-west-2:")
    code, message = world.rejects(doc=world.document(runtime_arn=west))
    assert code == "ValidationException"
    assert "is in Region 'us-west-2', but the job is being created in 'us-east-1'" in message


def test_unregistered_runtime_is_not_found(world):
    ghost = world.runtime.arn.replace("WordleTest", "Ghost")
    assert world.rejects(doc=world.document(runtime_arn=ghost)) == (
        "ResourceNotFound",
        f"Agent runtime {ghost} was not found.",
    )


def test_mlflow_config_is_required(world):
    code, message = world.rejects(doc=world.document(mlflow=None))
    assert code == "ValidationException" and message.startswith("MlflowConfig is required for AgentRFT jobs")


def test_mlflow_app_must_exist(world):
    doc = world.document()
    doc["TrainingConfig"]["MlflowConfig"]["MlflowResourceArn"] = world.mlflow_arn + "x"
    assert "does not exist" in world.rejects(doc=doc)[1]


def test_dataset_smaller_than_one_batch_is_rejected(world):
    small = f"s3://{BUCKET}/data/small.jsonl"
    world.put(small, dataset.make_splits()[0][:100])
    code, message = world.rejects(doc=world.document(train=small))
    assert code == "ValidationException"
    assert "the dataset has 100 rows, fewer than global_batch_size (128)" in message


def test_malformed_dataset_is_rejected_with_the_line(world):
    bad = f"s3://{BUCKET}/data/bad.jsonl"
    rows = "".join(json.dumps(r) + "\n" for r in dataset.make_splits()[0])
    world.s3.put_object(Bucket=BUCKET, Key="data/bad.jsonl", Body=(rows + "{not json\n").encode())
    code, message = world.rejects(doc=world.document(train=bad))
    assert code == "ValidationException"
    assert "the dataset is not valid: s3://mtrl-course-test-bucket/data/bad.jsonl line 641" in message


def test_missing_dataset_is_rejected(world):
    assert "no dataset file found at" in world.rejects(doc=world.document(train=f"s3://{BUCKET}/nothing/here.jsonl"))[1]


def test_hyperparameter_out_of_range_is_rejected(world):
    code, message = world.rejects(
        doc=world.document({**WALKTHROUGH_OVERRIDES, "sampling_max_tokens": "16384", "global_batch_size": "100"})
    )
    assert code == "ValidationException"
    assert message.startswith("2 validation errors detected: ")
    assert (
        "Value '16384' at 'TrainingConfig.HyperParameters.sampling_max_tokens' failed to satisfy constraint: Member must be less than or equal to 8192"
        in message
    )
    assert "Member must satisfy enum value set: [32, 64, 128]" in message


def test_learning_rate_zero_is_rejected_as_the_range_is_open(world):
    message = world.rejects(doc=world.document({**WALKTHROUGH_OVERRIDES, "learning_rate": "0"}))[1]
    assert "Member must be greater than 0.0" in message


def test_unknown_hyperparameter_is_rejected(world):
    assert "learning_rat" in world.rejects(doc=world.document({**WALKTHROUGH_OVERRIDES, "learning_rat": "1e-5"}))[1]


def test_max_steps_beyond_max_epochs_is_rejected(world):
    # The defaults (max_epochs 1, max_steps 50) on 640 rows: only 5 steps fit in one epoch.
    code, message = world.rejects(doc=world.document({}))
    assert code == "ValidationException"
    assert message == (
        "max_steps (50) is more than max_epochs (1) x steps per epoch (5 = ceil(640 training rows / "
        "global_batch_size 128)) = 5. Raise max_epochs or lower max_steps."
    )


def test_bad_job_name_and_schema_version_are_rejected(world):
    assert "regular expression pattern" in world.rejects(name="bad_name")[1]
    with pytest.raises(ClientError, match="JobConfigSchemaVersion 2.0.0 is not supported"):
        world.sm.create_job(
            JobName="x",
            RoleArn=world.role,
            JobCategory=service.TRAINING,
            JobConfigSchemaVersion="2.0.0",
            JobConfigDocument="{}",
        )


def test_resolve_hyperparameters_applies_defaults_and_types():
    values = service.resolve_hyperparameters({"group_size": "16", "pass_k_values": "[1, 4]"}, hub.TRAINING_SPEC, "HP")
    assert values["group_size"] == 16 and values["pass_k_values"] == [1, 4] and values["global_batch_size"] == 128
    with pytest.raises(service.ServiceError, match="Member must be an integer"):
        service.resolve_hyperparameters({"group_size": "8.5"}, hub.TRAINING_SPEC, "HP")


# --- the SDK against the local service (slow: importing the trainer takes about 8 s) -----------------


@pytest.fixture
def trainer_class(world, tmp_path, monkeypatch):
    from sagemaker.train.multi_turn_rl_trainer import MultiTurnRLTrainer

    # The evaluator writes mtrl_eval_pipeline_input.json into the working directory.
    monkeypatch.chdir(tmp_path)
    return MultiTurnRLTrainer


def make_trainer(trainer_class, world, role=None, agent_env=None, training_dataset=TRAIN_URI):
    trainer = trainer_class(
        model=service_spec.GPT_OSS_20B,
        agent_env=agent_env or world.runtime.arn,
        training_dataset=training_dataset,
        validation_dataset=VAL_URI,
        mlflow_app_arn=world.mlflow_arn,
        mlflow_experiment_name="wordle-mtrl",
        role=role or world.role,
        s3_output_path=f"s3://{BUCKET}/out/",
        accept_eula=True,
        base_job_name="wordle-mtrl",
    )
    trainer.hyperparameters.sampling_max_tokens = 8192
    trainer.hyperparameters.max_epochs = 20
    trainer.hyperparameters.max_steps = 100
    return trainer


@pytest.mark.slow
def test_multi_turn_rl_trainer_runs_a_job_to_completion(world, trainer_class):
    world.backend.service.set_runner(service.TRAINING, service.demo_runner)
    trainer = make_trainer(trainer_class, world)
    assert trainer.hyperparameters.group_size == 8  # the hub spec's default reached the SDK
    world.backend.calls.clear()
    job = trainer.train(wait=False)
    assert list(world.backend.calls)[-2:] == ["sagemaker.CreateJob", "sagemaker.DescribeJob"]
    sent = json.loads(world.backend.service.get_job(job.job_name).describe()["JobConfigDocument"])
    # Only the three changed hyperparameters are sent, as strings, MlflowConfig in TrainingConfig.
    assert sent["TrainingConfig"]["HyperParameters"] == WALKTHROUGH_OVERRIDES
    assert sent["TrainingConfig"]["MlflowConfig"]["MlflowResourceArn"] == world.mlflow_arn
    attached = trainer_class.attach(job.job_name)
    attached.wait(poll=0.2, timeout=30)
    attached.refresh()
    assert attached.job_status == "Completed"
    assert attached.billable_token_usage["TrainTokenCount"] == attached.billable_token_usage["TrainingTokenCount"] == 0
    assert [t.status for t in attached.secondary_status_transitions][:4] == [
        "Starting",
        "Downloading",
        "Pending",
        "Training",
    ]
    assert attached.output_model_package_arn.startswith(
        f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:model-package/{service_spec.GPT_OSS_20B}-mtrl-mpg/"
    )
    assert attached.progress_info["StepsPerEpoch"] == 5


@pytest.mark.slow
def test_trainer_surfaces_the_service_validation_errors(world, trainer_class):
    generic = world.make_role("GenericSageMaker", ["sagemaker.amazonaws.com"], ["sts:AssumeRole"])
    with pytest.raises(ClientError, match="Could not assume role"):
        make_trainer(trainer_class, world, role=generic).train(wait=False)
    west = world.runtime.arn.replace(f":{REGION}:", ":us-west-2:")
    with pytest.raises(ClientError, match="must be in the same Region"):
        make_trainer(trainer_class, world, agent_env=west).train(wait=False)
    small = f"s3://{BUCKET}/data/small.jsonl"
    world.put(small, dataset.make_splits()[0][:64])
    with pytest.raises(ClientError, match="fewer than global_batch_size"):
        make_trainer(trainer_class, world, training_dataset=small).train(wait=False)
    trainer = make_trainer(trainer_class, world)
    with pytest.raises(ValueError, match="sampling_max_tokens must be <= 8192"):
        trainer.hyperparameters.sampling_max_tokens = 16384  # the SDK checks the hub spec itself
    trainer.hyperparameters.max_epochs = 1
    with pytest.raises(ClientError, match=r"max_steps \(100\) is more than max_epochs \(1\)"):
        trainer.train(wait=False)


@pytest.mark.slow
def test_trainer_role_precheck_wants_the_generic_principal_too(world, trainer_class):
    """SDK 1.27 checks the role trusts sagemaker.amazonaws.com before CreateJob; the job principal alone fails there."""
    from sagemaker.core.helper.iam_role_resolver import RoleValidationError

    job_only = world.make_role("JobOnly", ["job.sagemaker.amazonaws.com"])
    with pytest.raises(RoleValidationError, match="does not allow 'sagemaker.amazonaws.com'"):
        make_trainer(trainer_class, world, role=job_only).train(wait=False)


@pytest.mark.slow
def test_multi_turn_rl_evaluator_runs_its_pipeline_through_the_local_service(world, trainer_class):
    from sagemaker.train.evaluate import MultiTurnRLEvaluator

    world.backend.service.set_runner(service.EVALUATION, service.demo_runner)
    evaluator = MultiTurnRLEvaluator(
        model=service_spec.GPT_OSS_20B,
        dataset=VAL_URI,
        agent_config=world.runtime.arn,
        s3_output_path=f"s3://{BUCKET}/eval/",
        mlflow_resource_arn=world.mlflow_arn,
        role=world.role,
    )
    evaluator.hyperparameters.temperature = 1.0
    evaluator.hyperparameters.eval_group_size = 4
    execution = evaluator.evaluate()
    execution.wait(poll=0.2, timeout=30)
    assert execution.status.overall_status == "Succeeded"
    assert [s.name for s in execution.status.step_details] == [
        "CreateEvaluationAction",
        "EvaluateBaseModel",
        "AssociateLineage",
    ]
    (job,) = [j for j in world.backend.service.jobs() if j.category == service.EVALUATION]
    assert job.status == "Completed" and job.name.startswith("pipelines-") and job.name.endswith("-EvaluateBaseModel")
    assert job.hyperparameters["eval_group_size"] == 4
    # The SDK forwards only its own six names, so the documented `temperature` never arrives.
    assert job.hyperparameters["temperature"] == 0.0


@pytest.mark.slow
def test_evaluator_compares_base_and_trained_models(world, trainer_class):
    from sagemaker.train.evaluate import MultiTurnRLEvaluator

    world.backend.service.set_runner(service.TRAINING, service.demo_runner)
    world.backend.service.set_runner(service.EVALUATION, service.demo_runner)
    trained = make_trainer(trainer_class, world).train(wait=False)
    finished(world, trained.job_name)
    trained.refresh()
    evaluator = MultiTurnRLEvaluator(
        model=trained,
        dataset=VAL_URI,
        s3_output_path=f"s3://{BUCKET}/eval/",
        mlflow_resource_arn=world.mlflow_arn,
        role=world.role,
        evaluate_base_model=True,
    )
    execution = evaluator.evaluate()
    execution.wait(poll=0.2, timeout=30)
    assert execution.status.overall_status == "Succeeded"
    jobs = sorted(
        (j for j in world.backend.service.jobs() if j.category == service.EVALUATION), key=lambda j: j.creation_time
    )
    assert [j.name.rsplit("-", 1)[-1] for j in jobs] == ["EvaluateBaseModel", "EvaluateFineTunedModel"]
    assert jobs[1].config.input_model_package_arn == trained.output_model_package_arn
    assert jobs[0].config.run_name == "base-model-eval" and jobs[1].config.run_name == "fine-tuned-model-eval"


@pytest.mark.slow
def test_failed_evaluation_job_fails_the_pipeline(world, trainer_class):
    from sagemaker.core.utils.exceptions import FailedStatusError
    from sagemaker.train.evaluate import MultiTurnRLEvaluator

    world.backend.service.set_runner(
        service.EVALUATION, lambda job: job.fail("ClientError: No sampling requests were received")
    )
    evaluator = MultiTurnRLEvaluator(
        model=service_spec.GPT_OSS_20B,
        dataset=VAL_URI,
        agent_config=world.runtime.arn,
        s3_output_path=f"s3://{BUCKET}/eval/",
        mlflow_resource_arn=world.mlflow_arn,
        role=world.role,
    )
    execution = evaluator.evaluate()
    with pytest.raises(FailedStatusError):
        execution.wait(poll=0.2, timeout=30)
    failed = [s for s in execution.status.step_details if s.status == "Failed"]
    assert [(s.name, s.failure_reason) for s in failed] == [
        ("EvaluateBaseModel", "ClientError: No sampling requests were received")
    ]


@pytest.mark.slow
def test_sdk_reads_the_runner_metrics_through_the_mlflow_app_arn(world, trainer_class):
    from mlflow.tracking import MlflowClient

    def runner(job):
        _, run_id = job.start_mlflow_run()
        client = MlflowClient(tracking_uri=job.mlflow_tracking_uri)
        for step in (1, 2):
            client.log_metric(run_id, "rollout/reward/mean", 0.1 * step, step=step)
            client.log_metric(run_id, "training/num_trajectories", 1024, step=step)

    world.backend.service.set_runner(service.TRAINING, runner)
    job = make_trainer(trainer_class, world).train(wait=False)
    finished(world, job.job_name)
    job.refresh()
    details = job.mlflow_details
    assert (details["ExperimentName"], details["RunName"]) == ("wordle-mtrl", job.job_name)
    rows = job.get_training_metrics()  # the SDK sets the tracking URI to the app ARN
    assert [(r["step"], r["rollout/reward/mean"], r["training/num_trajectories"]) for r in rows] == [
        (1, 0.1, 1024),
        (2, 0.2, 1024),
    ]
