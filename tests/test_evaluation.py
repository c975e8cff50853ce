"""Evaluation toolkit (`mtrl_course.evaluation`): both ways of creating an evaluation job, results
read back from DescribeJob and MLflow, reasoning effort as a redeploy, and the settings grid."""

from __future__ import annotations

import json
import types
from pathlib import Path

import pytest
from botocore.exceptions import ClientError

from mtrl_course import aws, evaluation, resources, training
from mtrl_course.local import runner, service

pytestmark = pytest.mark.filterwarnings("ignore:register_new_resolver:UserWarning")

# Built at run time so no real-looking account ID is written in a committed file.
REAL_LOOKING = "4" + "0" * 7 + "9876"
TINY_RUN = {"global_batch_size": 32, "group_size": 4, "max_steps": 4, "val_every": 0}


# -------------------------------------------------------------------------------------- tokens
@pytest.mark.parametrize("train_key", ["TrainTokenCount", "TrainingTokenCount"])
def test_billable_tokens_read_either_spelling_of_the_train_count(train_key):
    usage = {"PrefillTokenCount": 10, "SampleTokenCount": 4, train_key: 7}
    assert evaluation.billable_tokens(usage) == {"prefill": 10, "sample": 4, "train": 7}
    described = {"JobConfigDocument": json.dumps({"ServiceOutput": {"BillableTokenUsage": usage}})}
    assert evaluation.billable_tokens(described)["train"] == 7
    assert evaluation.billable_tokens(types.SimpleNamespace(billable_token_usage=usage))["sample"] == 4


def test_an_evaluation_job_reports_no_train_tokens():
    assert evaluation.billable_tokens({"PrefillTokenCount": 3, "SampleTokenCount": 1}) == {
        "prefill": 3,
        "sample": 1,
        "train": None,
    }
    assert evaluation.billable_tokens(types.SimpleNamespace(billable_token_usage=None)) == {
        "prefill": 0,
        "sample": 0,
        "train": None,
    }


# ----------------------------------------------------------------------------- settings checks
@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"temperature": 2.5}, "temperature must be a number from 0.0 to 2.0"),
        ({"temperature": 0.0, "pass_k": (1, 4), "eval_group_size": 2}, r"set eval_group_size >= 4"),
        ({"temperature": 0.0, "eval_group_size": 0}, "eval_group_size must be a whole number"),
        ({"temperature": 0.0, "max_tokens": 100}, "max_tokens must be from 512 to 8192"),
        ({"temperature": 0.0, "via": "console"}, "via must be one of"),
        ({"temperature": 1.0, "via": "evaluator"}, "would drop these settings"),
    ],
)
def test_bad_settings_are_refused_before_anything_is_created(arguments, message):
    with pytest.raises(ValueError, match=message):
        evaluation.evaluate(None, "base", reasoning_effort="low", **arguments)


def test_the_evaluator_is_used_only_where_it_carries_every_setting():
    assert evaluation.evaluator_carries(0.0)
    assert not evaluation.evaluator_carries(1.0)
    assert not evaluation.evaluator_carries(0.0, max_tokens=8192)


class _RecordingSageMaker:
    """The two calls `evaluate` makes before a job exists, and CreateJob recorded (no service)."""

    created: list[dict] = []

    def describe_hub_content(self, **kwargs):
        return {"HubContentArn": "arn:aws:sagemaker:us-west-2:aws:hub-content/SageMakerPublicHub/Model/gpt-oss-20b"}

    def create_job(self, **kwargs):
        self.created.append(kwargs)
        return {"JobArn": "arn:aws:sagemaker:us-west-2:111122223333:job/x"}


@pytest.fixture
def no_service(monkeypatch):
    """`evaluate` up to CreateJob with nothing behind it: the request is recorded, the job "ends"."""
    _RecordingSageMaker.created = []
    monkeypatch.setattr(evaluation, "_sagemaker", _RecordingSageMaker)
    monkeypatch.setattr(resources, "running_jobs", lambda session=None, category=None: [])
    monkeypatch.setattr(resources, "set_reasoning_effort", lambda res, effort: None)
    monkeypatch.setattr(evaluation, "_wait_job", lambda name: {"JobName": name})
    monkeypatch.setattr(
        evaluation,
        "_results",
        lambda describe, arn, pass_k: {"pass_at_1": 0.5, "mean_reward": 0.0, "prefill_tokens": 1, "sample_tokens": 1},
    )
    return types.SimpleNamespace(
        runtime_arn="arn:aws:bedrock-agentcore:us-west-2:111122223333:runtime/WordleMTRL_WordleAgent-abc",
        output_s3_uri="s3://mtrl-wordle-bucket/mtrl-wordle/run/output/",
        mlflow_app_arn="arn:aws:sagemaker:us-west-2:111122223333:mlflow-app/app-x",
        validation_s3_uri="s3://mtrl-wordle-bucket/mtrl-wordle/run/validation-data/val.jsonl",
        job_role_arn="arn:aws:iam::111122223333:role/mtrl-wordle-job-role",
    )


@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_every_evaluation_caps_a_turn_at_the_training_value_by_default(no_service, temperature):
    """The recipe's default cap (4096) cuts gpt-oss off mid-reasoning; training ran at 8192."""
    result = evaluation.evaluate(no_service, "base", temperature=temperature, reasoning_effort="low")
    assert result["via"] == "CreateJob"  # the only path that carries a cap
    (request,) = _RecordingSageMaker.created
    sent = json.loads(request["JobConfigDocument"])["EvaluationConfig"]["HyperParameters"]
    assert sent["sampling_max_tokens"] == "8192" == str(training.WALKTHROUGH_OVERRIDES["sampling_max_tokens"])
    assert evaluation.EVAL_MAX_TOKENS == 8192


def test_a_pipeline_that_fails_before_its_job_falls_back_to_createjob_saying_why(no_service, monkeypatch, capsys):
    """The evaluator accepted the job, then its pipeline failed before its Job step created the
    evaluation job: nothing runs, so the same evaluation goes through CreateJob, with the reason."""

    class FailedPipeline(_RecordingSageMaker):
        def describe_pipeline_execution(self, PipelineExecutionArn):
            return {"PipelineExecutionStatus": "Failed"}

        def list_pipeline_execution_steps(self, PipelineExecutionArn):
            reason = f"ClientError: AccessDenied on sagemaker:CreateJob for arn:aws:iam::{REAL_LOOKING}:role/r"
            return {
                "PipelineExecutionSteps": [
                    {"StepName": "EvaluateBaseModel", "StepStatus": "Failed", "FailureReason": reason}
                ]
            }

    monkeypatch.setattr(evaluation, "_sagemaker", FailedPipeline)
    execution = "arn:aws:sagemaker:us-west-2:111122223333:pipeline/p/execution/e"
    monkeypatch.setattr(evaluation, "_start_with_evaluator", lambda *a, **k: evaluation._job_of_pipeline(execution))
    result = evaluation.evaluate(no_service, "base", temperature=0.0, reasoning_effort="low", max_tokens=None)
    assert result["via"] == "CreateJob" and len(FailedPipeline.created) == 1
    (line,) = [line for line in capsys.readouterr().out.splitlines() if "pipeline failed" in line]
    assert "EvaluateBaseModel: ClientError: AccessDenied on sagemaker:CreateJob" in line and REAL_LOOKING not in line
    assert line.endswith("evaluating with CreateJob instead")
    # Asked for by name, the evaluator's failure is raised, and nothing else is started.
    with pytest.raises(evaluation.PipelineEndedBeforeJob, match="EvaluateBaseModel"):
        evaluation.evaluate(
            no_service, "base", temperature=0.0, reasoning_effort="low", max_tokens=None, via="evaluator"
        )
    assert len(FailedPipeline.created) == 1


def test_one_evaluation_at_a_time(tmp_path, monkeypatch):
    aws.reset_offline(tmp_path / "state")
    try:
        monkeypatch.setattr(resources, "running_jobs", lambda session=None, category=None: ["eval-already-running"])
        with pytest.raises(RuntimeError, match="eval-already-running is still running; the default quota allows one"):
            evaluation.evaluate(types.SimpleNamespace(), "base", temperature=0.0, reasoning_effort="low")
    finally:
        aws.reset_offline(tmp_path / "state")


def test_run_grid_groups_by_effort_and_labels_the_models(monkeypatch, capsys):
    calls = []

    def fake_evaluate(res, model, *, temperature, reasoning_effort, **_):
        calls.append((reasoning_effort, temperature, model))
        solved = 0.9 if model != "base" else 0.2
        return {
            "pass_at_1": solved,
            "mean_reward": solved,
            "prefill_tokens": 10,
            "sample_tokens": 2,
            "job_name": f"job-{len(calls)}",
            "via": "CreateJob",
        }

    monkeypatch.setattr(evaluation, "evaluate", fake_evaluate)
    settings = (("low", 0.0), ("medium", 1.0), ("low", 1.0))
    frame = evaluation.run_grid(
        types.SimpleNamespace(reasoning_effort="low", runtime=None), "my-training-job", settings
    )
    assert calls == [
        ("low", 0.0, "base"),
        ("low", 0.0, "my-training-job"),
        ("low", 1.0, "base"),
        ("low", 1.0, "my-training-job"),
        ("medium", 1.0, "base"),
        ("medium", 1.0, "my-training-job"),
    ]
    assert list(frame.columns) == list(evaluation.GRID_COLUMNS)
    assert list(frame["model"]) == ["base", "trained"] * 3 and frame.attrs["jobs"] == [f"job-{i}" for i in range(1, 7)]
    assert "trained  effort medium temperature 1.0: pass@1 90.0% (CreateJob)" in capsys.readouterr().out


# ----------------------------------------------------------------------------------- real jobs
# The real-job tests evaluate on every fourth validation word (32 of 128): each job plays a quarter
# of the games, and what they check (paths, settings reaching the policy, tokens, failures, trained
# above base by a wide margin) does not need more. Notebook 07 evaluates on all 128.
VALIDATION_SHARE = 4


@pytest.fixture(scope="module")
def offline(tmp_path_factory):
    state = tmp_path_factory.mktemp("evaluation") / "state"
    aws.reset_offline(state)
    res = resources.prepare()
    bucket, key = res.validation_s3_uri.removeprefix("s3://").split("/", 1)
    s3 = aws.session().client("s3")
    rows = s3.get_object(Bucket=bucket, Key=key)["Body"].read().decode().splitlines()
    s3.put_object(Bucket=bucket, Key=key, Body="\n".join(rows[::VALIDATION_SHARE]).encode() + b"\n")
    yield res
    resources.close(res)
    aws.reset_offline(state)


@pytest.fixture(scope="module")
def trained(offline, tmp_path_factory, request):
    # The evaluator writes its pipeline file into the working directory.
    cwd = tmp_path_factory.mktemp("cwd")
    monkeypatch = pytest.MonkeyPatch()
    monkeypatch.chdir(cwd)
    request.addfinalizer(monkeypatch.undo)
    job = training.wait(training.launch(training.make_trainer(offline, TINY_RUN)), echo=False)
    assert job.job_status == "Completed"
    return job.job_name


def _job(name: str) -> service.LocalJob:
    return aws.offline_backend().service.get_job(name, evaluation.CATEGORY)


@pytest.mark.slow
def test_temperature_zero_runs_through_multiturnrlevaluator(offline, trained):
    # At the recipe's own token cap (max_tokens=None), the one the evaluator carries.
    result = evaluation.evaluate(offline, "base", temperature=0.0, reasoning_effort="low", max_tokens=None)
    assert result["via"] == "MultiTurnRLEvaluator" and result["job_name"].startswith("pipelines-")
    job = _job(result["job_name"])
    assert job.hyperparameters["temperature"] == 0.0 and job.config.input_model_package_arn is None
    # At temperature 0 the stand-in's looping turns bill the whole max_tokens as sample tokens,
    # so sample may exceed prefill here; both must be counted.
    assert 0.0 <= result["pass_at_1"] <= 1.0 and result["prefill_tokens"] > 0 and result["sample_tokens"] > 0
    assert result["mlflow_run_id"] == job.service_output["MlflowDetails"]["RunId"]
    assert Path("mtrl_eval_pipeline_input.json").is_file()  # the SDK's side effect, in the test's cwd


@pytest.mark.slow
def test_other_temperatures_run_through_createjob_and_reach_the_policy(offline, trained):
    result = evaluation.evaluate(
        offline, trained, temperature=1.0, reasoning_effort="low", eval_group_size=2, pass_k=(1, 2)
    )
    assert result["via"] == "CreateJob" and result["model"] == trained
    job = _job(result["job_name"])
    assert job.hyperparameters["temperature"] == 1.0 and job.hyperparameters["eval_group_size"] == 2
    assert job.hyperparameters["sampling_max_tokens"] == evaluation.EVAL_MAX_TOKENS == 8192
    package = aws.session().client("sagemaker").describe_job(JobName=trained, JobCategory=training.JOB_CATEGORY)
    assert (
        job.config.input_model_package_arn
        == json.loads(package["JobConfigDocument"])["ServiceOutput"]["OutputModelPackageArn"]
    )
    samples = [s for t in runner.job_runtime().trajectories(job.arn) for s in t.samples]
    assert samples and {s.temperature for s in samples} == {1.0}
    assert result["pass_at_k"][2] >= result["pass_at_k"][1] == result["pass_at_1"]
    assert {
        t["Key"]: t["Value"]
        for t in aws.session()
        .client("sagemaker")
        .describe_job(JobName=result["job_name"], JobCategory=evaluation.CATEGORY)["Tags"]
    }["notebook"] == "07"


@pytest.mark.slow
def test_reasoning_effort_is_the_runtimes_variable_and_reaches_every_request(offline, trained):
    generation = offline.runtime.generation
    result = evaluation.evaluate(offline, "base", temperature=1.0, reasoning_effort="medium")
    assert offline.runtime.env["REASONING_EFFORT"] == "medium" and offline.runtime.generation == generation + 1
    samples = [s for t in runner.job_runtime().trajectories(_job(result["job_name"]).arn) for s in t.samples]
    assert samples and {s.request.get("reasoning_effort") for s in samples} == {"medium"}
    low = evaluation.evaluate(offline, "base", temperature=1.0, reasoning_effort="low")
    # The stand-in writes more reasoning at medium effort, as gpt-oss does: more sampled tokens.
    assert result["sample_tokens"] > low["sample_tokens"]
    assert offline.reasoning_effort == "low"


@pytest.mark.slow
def test_a_failed_evaluation_says_why_on_both_paths(offline, trained):
    missing = offline.validation_s3_uri.replace("validation-data", "no-such-file")
    with pytest.raises(
        evaluation.EvaluationFailed, match="EvaluateBaseModel: ValidationException: Channel 'evaluation'"
    ):
        evaluation.evaluate(
            offline,
            "base",
            temperature=0.0,
            reasoning_effort="low",
            dataset_uri=missing,
            max_tokens=None,
            via="evaluator",
        )
    # Chosen automatically, the pipeline's failure before its job falls back to CreateJob, which
    # then says the same thing in its own words.
    with pytest.raises(ClientError, match="no dataset file found"):
        evaluation.evaluate(
            offline, "base", temperature=0.0, reasoning_effort="low", dataset_uri=missing, max_tokens=None
        )
    with pytest.raises(ClientError, match="no dataset file found"):
        evaluation.evaluate(offline, "base", temperature=1.0, reasoning_effort="low", dataset_uri=missing)
    with pytest.raises(ClientError, match="ResourceNotFound"):
        evaluation.evaluate(offline, "no-such-training-job", temperature=1.0, reasoning_effort="low")


@pytest.mark.slow
def test_run_grid_evaluates_both_models_and_restores_the_effort(offline, trained):
    # One setting, two real jobs: the order of several settings is checked above with a stand-in
    # `evaluate`, each path on its own by the tests before this one, and the whole grid, both paths
    # mixed, by notebook 07 in `make test`.
    frame = evaluation.run_grid(offline, trained, settings=(("medium", 0.0),), echo=False)
    assert [(r.model, r.effort, r.temperature) for r in frame.itertuples()] == [
        ("base", "medium", 0.0),
        ("trained", "medium", 0.0),
    ]
    # At the training cap (the default) only CreateJob carries the setting.
    assert frame.attrs["via"] == ["CreateJob", "CreateJob"]
    assert {_job(name).hyperparameters["sampling_max_tokens"] for name in frame.attrs["jobs"]} == {8192}
    solved = {r.model: r.pass_at_1 for r in frame.itertuples()}
    assert solved["trained"] > solved["base"]
    assert offline.reasoning_effort == "low" == offline.runtime.env["REASONING_EFFORT"]


# --- issue 21 item 2: every way the SDK path refuses ends in CreateJob, with the reason ------------
def _no_evaluation_spec(monkeypatch, offline):
    """The hub's MTRLEvaluation override spec is empty: the SDK's `hyperparameters` raises ValueError."""
    from mtrl_course.local import hub
    from mtrl_course.service_spec import EVALUATION_SPEC

    aws.offline_backend().hub.seed()
    s3 = aws.session().client("s3")
    key = hub.EVALUATION_SPEC_KEY.format(model=training.MODEL_ID)
    s3.put_object(Bucket=hub.HUB_BUCKET, Key=key, Body=b"{}")
    monkeypatch.setattr(aws.offline_backend().hub, "_seeded", True)  # not re-seeded under the test
    yield "does not expose AgentRFTEvaluation hyperparameter overrides"
    s3.put_object(Bucket=hub.HUB_BUCKET, Key=key, Body=json.dumps(EVALUATION_SPEC, indent=1).encode())


def _caller_may_not_run_pipelines(monkeypatch, offline):
    """The caller is a role that may do nothing: the SDK's own caller check raises RoleValidationError."""
    from sagemaker.core.helper import iam_role_resolver

    trust = {"Version": "2012-10-17", "Statement": []}
    iam_client = aws.session().client("iam")
    arn = iam_client.create_role(RoleName="mtrl-test-bare-caller", AssumeRolePolicyDocument=json.dumps(trust))["Role"][
        "Arn"
    ]
    monkeypatch.setattr(iam_role_resolver, "_resolve_caller_role_arn", lambda *args: arn)
    yield "RoleValidationError: Your identity"
    iam_client.delete_role(RoleName="mtrl-test-bare-caller")


def _pipeline_refused(monkeypatch, offline):
    """CreatePipeline and UpdatePipeline answer AccessDenied (the caller may not pass the job role)."""
    from mtrl_course.errors import ServiceError

    def refuse(call):
        raise ServiceError("AccessDeniedException", "not authorized to perform: iam:PassRole on the job role")

    for operation in ("CreatePipeline", "UpdatePipeline"):
        monkeypatch.setitem(aws.offline_backend().handlers, ("sagemaker", operation), refuse)
    yield "ClientError: An error occurred (AccessDeniedException)"


def _evaluation_jobs() -> list[str]:
    summaries = aws.session().client("sagemaker").list_jobs(JobCategory=evaluation.CATEGORY)["JobSummaries"]
    return sorted(s["JobName"] for s in summaries)


@pytest.fixture
def create_job_stub(monkeypatch):
    """CreateJob's path records its call instead of running a job (the SDK path is what is tested)."""
    started: list[str] = []

    def start(*args, **kwargs):
        started.append(kwargs["notebook"])
        return "fallback-job"

    monkeypatch.setattr(evaluation, "_start_with_create_job", start)
    monkeypatch.setattr(evaluation, "_wait_job", lambda name: {"JobName": name})
    monkeypatch.setattr(
        evaluation,
        "_results",
        lambda describe, arn, pass_k: {"pass_at_1": 0.5, "mean_reward": 0.0, "prefill_tokens": 1, "sample_tokens": 1},
    )
    return started


@pytest.mark.slow
@pytest.mark.parametrize("refusal", [_no_evaluation_spec, _caller_may_not_run_pipelines, _pipeline_refused])
def test_every_refusal_of_the_evaluator_falls_back_to_createjob_and_says_why(
    offline, refusal, create_job_stub, monkeypatch, capsys, tmp_path
):
    monkeypatch.chdir(tmp_path)  # the evaluator writes its pipeline file into the working directory
    setup = refusal(monkeypatch, offline)
    reason = next(setup)
    before = _evaluation_jobs()
    try:
        result = evaluation.evaluate(offline, "base", temperature=0.0, reasoning_effort="low", max_tokens=None)
    finally:
        next(setup, None)
    assert result["via"] == "CreateJob" and result["job_name"] == "fallback-job" and create_job_stub == ["07"]
    lines = [line for line in capsys.readouterr().out.splitlines() if "MultiTurnRLEvaluator refused" in line]
    assert len(lines) == 1 and reason in lines[0] and lines[0].endswith("evaluating with CreateJob instead")
    assert _evaluation_jobs() == before  # the evaluator's path started no job


@pytest.mark.slow
def test_asked_for_by_name_the_evaluators_own_error_is_raised(offline, create_job_stub, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    setup = _no_evaluation_spec(monkeypatch, offline)
    reason = next(setup)
    try:
        with pytest.raises(ValueError, match=reason):
            evaluation.evaluate(
                offline, "base", temperature=0.0, reasoning_effort="low", via="evaluator", max_tokens=None
            )
    finally:
        next(setup, None)
    assert create_job_stub == []


def test_a_step_failing_between_two_polls_of_the_pipeline_keeps_its_reason(monkeypatch):
    """The pipeline's status is read before its steps: a step that fails between the two reads
    is seen with the ended status on the next poll, and its reason reaches the error."""

    class Pipeline:
        status, steps = "Executing", []

        def describe_pipeline_execution(self, PipelineExecutionArn):
            return {"PipelineExecutionStatus": self.status}

        def list_pipeline_execution_steps(self, PipelineExecutionArn):
            seen = list(self.steps)
            if not seen:  # the step fails right after this read, and the pipeline ends with it
                self.steps = [{"StepName": "EvaluateBaseModel", "StepStatus": "Failed", "FailureReason": "no data"}]
                self.status = "Failed"
            return {"PipelineExecutionSteps": seen}

    monkeypatch.setattr(evaluation, "_sagemaker", Pipeline)
    with pytest.raises(evaluation.EvaluationFailed, match=r"\(EvaluateBaseModel: no data\)"):
        evaluation._job_of_pipeline("arn:aws:sagemaker:us-west-2:111122223333:pipeline/p/execution/e")
