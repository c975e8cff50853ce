"""The training and evaluation runners, driven through the local MTRL service offline: metric
names in MLflow, billable tokens, the output model package, each failure mode's FailureReason,
and identical metrics for two runs with the same seed."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient
from mtrl_course import aws, config, dataset, rewards, service_spec
from mtrl_course.local import hub, metrics, runner, service, standin_lane
from mtrl_course.local.stand_in_policy import LABEL, Adapter
from mtrl_course.local.agent_server import LocalAgentRuntime

pytestmark = pytest.mark.floats

REGION = config.OFFLINE_REGION
ACCOUNT = config.MOTO_ACCOUNT
BUCKET = "mtrl-runner-test-bucket"
TRAIN_URI = f"s3://{BUCKET}/data/train.jsonl"
VAL_URI = f"s3://{BUCKET}/data/validation.jsonl"
VALIDATION_ROWS = 8
SEED = 7
JOB_TIMEOUT_S = 120
# The smallest job the service accepts, with validation at steps 0, 1 and 2.
SHORT_RUN = {
    "global_batch_size": "32",
    "group_size": "2",
    "max_steps": "2",
    "max_epochs": "1",
    "val_every": "1",
    "learning_rate": "1e-5",
}
ONE_STEP = {**SHORT_RUN, "max_steps": "1", "val_every": "0"}
REQUIRED_TRAINING_METRICS = {
    *(f"rollout/reward/{n}" for n in ("mean", "std", "min", "max", "zero_frac", "valid_mean")),
    *(f"rollout/turns/{n}" for n in ("mean", "min", "max")),
    *(f"rollout/tokens/{n}" for n in ("prompt_mean", "response_mean", "response_std", "response_min", "response_max")),
    *(f"rollout/advantage/{n}" for n in ("mean", "std", "min", "max", "n_positive", "n_negative")),
    "analysis/zero_adv_groups",
    "analysis/zero_adv_nonzero_reward",
    "analysis/zero_adv_zero_reward",
    "analysis/batch_completion_ratio",
    *(f"training/{n}" for n in ("global_step", "epoch", "num_trajectories", "total_tokens", "num_groups")),
    "timing_s/step",
    "timing_s/eval",
    *(
        f"val/reward/{n}"
        for n in (
            "mean",
            "std",
            "min",
            "max",
            "pass_at_1",
            "succeeded_rollouts",
            "failed_rollouts",
            "success_threshold",
            "num_prompts",
            "rollouts_per_prompt",
        )
    ),
    "val/turns/mean",
    "val/tokens/response_mean",
    "standin/format/raw_text_rate",
}
REQUIRED_EVAL_METRICS = {
    *(
        f"eval/reward/{n}"
        for n in (
            "mean",
            "std",
            "min",
            "max",
            "pass_at_1",
            "pass_at_2",
            "succeeded_rollouts",
            "failed_rollouts",
            "num_prompts",
            "rollouts_per_prompt",
            "success_threshold",
        )
    ),
    *(f"eval/tokens/{n}" for n in ("prompt_mean", "response_mean", "response_min", "response_max", "response_std")),
    *(f"eval/turns/{n}" for n in ("mean", "min", "max")),
    "timing_s/eval",
}


async def ok_app(scope, receive, send):
    """A runtime the fast lane never calls: it only has to exist for CreateJob's checks."""
    if scope["type"] != "http":
        return
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": b'{"status": "Healthy"}'})


HOLD = threading.Event()
HELD_INVOCATIONS: list[int] = []
_hold_pool = ThreadPoolExecutor(16, "held-rollout")
# A liveness bound, not a speed target: before the fix the job waited for every held rollout.
RESTART_FAIL_BOUND_S = 30.0


async def holding_app(scope, receive, send):
    """An agent that never finishes a rollout on its own (until HOLD is set): a restart must cut it."""
    if scope["type"] != "http":
        return
    while (await receive()).get("more_body"):
        pass
    if scope["path"] == "/invocations":
        HELD_INVOCATIONS.append(1)
        await asyncio.get_running_loop().run_in_executor(_hold_pool, HOLD.wait, 120)
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": b'{"reward": 0.0}'})


class World:
    """Role, bucket, datasets, MLflow app, runtime and model package group in the offline backend."""

    def __init__(self, state: Path, adapters: Path) -> None:
        self.backend = aws.reset_offline(state)
        self.adapters = adapters
        boto = aws.session()
        self.sm, s3, iam = boto.client("sagemaker"), boto.client("s3"), boto.client("iam")
        statement = {
            "Effect": "Allow",
            "Principal": {"Service": ["job.sagemaker.amazonaws.com"]},
            "Action": ["sts:AssumeRole", "sts:TagSession"],
        }
        trust = json.dumps({"Version": "2012-10-17", "Statement": [statement]})
        self.role = iam.create_role(RoleName="RunnerTestRole", AssumeRolePolicyDocument=trust)["Role"]["Arn"]
        s3.create_bucket(Bucket=BUCKET)
        train, validation = dataset.make_splits()
        for uri, rows in ((TRAIN_URI, train), (VAL_URI, validation[:VALIDATION_ROWS])):
            s3.put_object(
                Bucket=BUCKET, Key=uri.split("/", 3)[3], Body="".join(json.dumps(r) + "\n" for r in rows).encode()
            )
        app = self.sm.create_mlflow_app(Name="runner-test", ArtifactStoreUri=f"s3://{BUCKET}/mlflow", RoleArn=self.role)
        self.mlflow_arn = app["Arn"]
        self.runtime = LocalAgentRuntime(f"{__name__}:ok_app", name="RunnerTest")
        self.sm.create_model_package_group(ModelPackageGroupName="runner-test-mpg")
        self.mpg_arn = f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:model-package-group/runner-test-mpg"

    def document(
        self,
        category: str,
        hyperparameters: dict,
        channels: dict,
        package: str | None = None,
        runtime_arn: str | None = None,
    ) -> dict:
        section = "TrainingConfig" if category == service.TRAINING else "EvaluationConfig"
        doc = {
            "AgentConfig": {"BedrockAgentCoreConfig": {"AgentRuntimeArn": runtime_arn or self.runtime.arn}},
            "InputDataConfig": [
                {"ChannelName": name, "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": uri}}}
                for name, uri in channels.items()
            ],
            "OutputDataConfig": {"S3OutputPath": f"s3://{BUCKET}/out/"},
            "ModelPackageConfig": {"OutputModelPackageGroupArn": self.mpg_arn},
            section: {
                "BaseModelArn": hub.hub_content_arn(REGION, service_spec.GPT_OSS_20B),
                "AcceptEula": True,
                "HyperParameters": hyperparameters,
                "MlflowConfig": {"MlflowResourceArn": self.mlflow_arn, "MlflowExperimentName": "runner-test"},
            },
        }
        if package:
            doc["ModelPackageConfig"]["InputModelPackageArn"] = package
        return doc

    def run(
        self,
        name: str,
        hyperparameters: dict,
        *,
        category: str = service.TRAINING,
        package: str | None = None,
        runtime_arn: str | None = None,
        timeout: float = JOB_TIMEOUT_S,
        **options,
    ) -> service.LocalJob:
        runner.install(self.backend.service, adapter_dir=self.adapters, seed=SEED, **options)
        channels = (
            {"train": TRAIN_URI, "validation": VAL_URI} if category == service.TRAINING else {"evaluation": VAL_URI}
        )
        self.sm.create_job(
            JobName=name,
            RoleArn=self.role,
            JobCategory=category,
            JobConfigSchemaVersion="1.0.0",
            JobConfigDocument=json.dumps(self.document(category, hyperparameters, channels, package, runtime_arn)),
        )
        job = self.backend.service.get_job(name, category)
        assert job.wait(timeout), f"job {name} did not finish within {timeout:g} s"
        return job

    def described(self, job: service.LocalJob) -> tuple[dict, dict]:
        response = self.sm.describe_job(JobName=job.name, JobCategory=job.category)
        return response, json.loads(response["JobConfigDocument"]).get("ServiceOutput", {})


def metric_histories(job: service.LocalJob) -> dict[tuple[str, int], float]:
    client = MlflowClient(job.mlflow_tracking_uri)
    run_id = job.service_output["MlflowDetails"]["RunId"]
    keys = client.get_run(run_id).data.metrics
    return {(key, m.step): m.value for key in keys for m in client.get_metric_history(run_id, key)}


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("runner")
    yield World(root / "state", root / "adapters")
    aws.reset_offline(root / "state")


@pytest.fixture(scope="module")
def trained(world) -> service.LocalJob:
    return world.run("runner-train-a", SHORT_RUN)


def test_a_short_training_run_logs_the_service_metrics(world, trained):
    assert (trained.status, trained.failure_reason) == ("Completed", None)
    history = metric_histories(trained)
    names = {key for key, _ in history}
    assert REQUIRED_TRAINING_METRICS <= names, sorted(REQUIRED_TRAINING_METRICS - names)
    assert sorted(step for key, step in history if key == "val/reward/pass_at_1") == [0, 1, 2]
    assert sorted(step for key, step in history if key == "training/global_step") == [1, 2]
    assert history[("training/num_trajectories", 1)] == 64 and history[("val/reward/num_prompts", 0)] == VALIDATION_ROWS
    run = MlflowClient(trained.mlflow_tracking_uri).get_run(trained.service_output["MlflowDetails"]["RunId"])
    assert LABEL in run.data.tags[runner.POLICY_TAG] and run.info.status == "FINISHED"
    assert run.data.tags["mtrl.offline.learner"] == "standin"
    assert run.data.params["group_size"] == "2"
    response, output = world.described(trained)
    statuses = [t["Status"] for t in response["SecondaryStatusTransitions"]]
    assert statuses == ["Starting", "Downloading", "Pending", "Training", "Uploading", "Completed"]
    assert output["RolloutInfo"] == {"Total": 2 * 32 * 2, "Completed": 2 * 32 * 2}
    assert output["ProgressInfo"]["MaxSteps"] == 2 and output["ProgressInfo"]["BatchSize"] == 32


def test_billable_tokens_follow_the_documented_rule(world, trained):
    _, output = world.described(trained)
    usage = output["BillableTokenUsage"]
    emulator = runner.job_runtime()
    totals = emulator.token_totals(trained.arn)
    # Prefill and sample: every sampling request of the job, training and validation alike.
    assert (usage["PrefillTokenCount"], usage["SampleTokenCount"]) == (totals.prefill_tokens, totals.sample_tokens)
    # Train: prompt + completion of every model call of the trajectories that entered an update.
    trained_trajectories = [t for t in emulator.trajectories(trained.arn) if t.info["phase"] == "train"]
    assert usage["TrainTokenCount"] == sum(t.prompt_tokens + t.completion_tokens for t in trained_trajectories) > 0
    history = metric_histories(trained)
    assert usage["TrainTokenCount"] == sum(v for (k, _), v in history.items() if k == "training/total_tokens")
    assert usage["TrainingTokenCount"] == usage["TrainTokenCount"]


def test_the_adapter_is_saved_and_registered_as_the_output_model_package(world, trained):
    _, output = world.described(trained)
    package = output["OutputModelPackageArn"]
    path = standin_lane.adapter_for_package(package, world.adapters)
    assert path is not None and path.parent == world.adapters and path.is_file()
    adapter = Adapter.load(path)
    assert (adapter.step, adapter.seed, adapter.base_model) == (2, SEED, service_spec.GPT_OSS_20B)
    assert adapter.vector().any()
    description = world.sm.describe_model_package(ModelPackageName=package)["ModelPackageDescription"]
    assert LABEL in description


def test_two_runs_with_the_same_seed_log_identical_metrics(world, trained):
    again = world.run("runner-train-b", SHORT_RUN)
    first = {k: v for k, v in metric_histories(trained).items() if not k[0].startswith("timing_s/")}
    second = {k: v for k, v in metric_histories(again).items() if not k[0].startswith("timing_s/")}
    assert first == second
    adapters = [
        Adapter.load(standin_lane.adapter_for_package(job.service_output["OutputModelPackageArn"], world.adapters))
        for job in (trained, again)
    ]
    assert adapters[0].vector().tobytes() == adapters[1].vector().tobytes()


@pytest.mark.parametrize(
    ("fault", "reason"),
    [
        ("auth_failure", "No sampling requests were received for rollout runner-fault-auth-failure-train0001-"),
        ("agent_error", "the agent reported CompleteRollout with status FAILED"),
        ("missing_reward", "No reward was received for rollout"),
        ("runtime_restart", "No sampling requests were received"),
    ],
)
def test_each_failure_mode_fails_the_job_with_the_service_reason(world, fault, reason):
    name = f"runner-fault-{fault.replace('_', '-')}"
    job = world.run(name, ONE_STEP, fault=fault, reward_grace_seconds=0.2)
    assert job.status == "Failed"
    response, _ = world.described(job)
    assert reason in response["FailureReason"]
    if fault == "auth_failure":
        assert "403 Authentication failed" in response["FailureReason"]
    if fault == "runtime_restart":
        assert "restarted" in response["FailureReason"]
    run = MlflowClient(job.mlflow_tracking_uri).get_run(job.service_output["MlflowDetails"]["RunId"])
    assert run.info.status == "FAILED"


def test_an_evaluation_job_reports_pass_at_k_for_the_trained_package(world, trained):
    _, output = world.described(trained)
    hyperparameters = {"eval_group_size": "2", "temperature": "1.0", "pass_k_values": "[1, 2, 4]"}
    job = world.run(
        "runner-eval", hyperparameters, category=service.EVALUATION, package=output["OutputModelPackageArn"]
    )
    assert (job.status, job.failure_reason) == ("Completed", None)
    history = metric_histories(job)
    names = {key for key, _ in history}
    assert REQUIRED_EVAL_METRICS <= names, sorted(REQUIRED_EVAL_METRICS - names)
    assert "eval/reward/pass_at_4" not in names  # k above the group size is not reported
    assert history[("eval/reward/pass_at_2", 0)] >= history[("eval/reward/pass_at_1", 0)]
    assert history[("eval/reward/rollouts_per_prompt", 0)] == 2
    _, eval_output = world.described(job)
    assert set(eval_output["BillableTokenUsage"]) == {"PrefillTokenCount", "SampleTokenCount"}
    assert eval_output["RolloutInfo"] == {"Total": 2 * VALIDATION_ROWS, "Completed": 2 * VALIDATION_ROWS}


def test_evaluating_a_package_without_an_adapter_fails_clearly(world):
    created = world.sm.create_model_package(
        ModelPackageGroupName="runner-test-mpg", ModelPackageDescription="not trained here"
    )
    package = created["ModelPackageArn"]
    job = world.run("runner-eval-missing", {"eval_group_size": "1"}, category=service.EVALUATION, package=package)
    assert job.status == "Failed" and package in job.failure_reason and "no stand-in adapter" in job.failure_reason


@pytest.mark.slow
def test_the_full_path_trains_through_the_agentcore_app_over_http(world):
    runtime = LocalAgentRuntime(name="RunnerFullPath").start()
    try:
        job = world.run("runner-full", ONE_STEP, lane="full", runtime_arn=runtime.arn)
    finally:
        runtime.close()
    assert (job.status, job.failure_reason) == ("Completed", None)
    records = runner.job_runtime().trajectories(job.arn)
    assert len(records) == 64 and all(r.state == "reward_received" and r.sample_count > 0 for r in records)
    # Over HTTP the real OpenAIModel asked for a stream and the SDK decorator reported the reward.
    assert all(s.stream for r in records for s in r.samples)
    history = metric_histories(job)
    assert history[("training/num_trajectories", 1)] == 64


def test_a_runtime_restart_mid_step_fails_the_job_at_once_with_the_service_message(world):
    """The injected restart lands with rollouts in flight (not between batches): they are cut off,
    nothing more is dispatched, and the job fails with the restart message at once, instead of
    waiting for its held rollouts (before: up to the 900 s invoke timeout each)."""
    HOLD.clear()
    HELD_INVOCATIONS.clear()
    runtime = LocalAgentRuntime(f"{__name__}:holding_app", name="RunnerRestart").start()
    started = time.monotonic()
    try:
        job = world.run(
            "runner-restart-mid-step",
            ONE_STEP,
            lane="full",
            runtime_arn=runtime.arn,
            fault="runtime_restart",
            timeout=RESTART_FAIL_BOUND_S,
        )
    finally:
        HOLD.set()
        runtime.close()
    assert job.status == "Failed"
    assert "No sampling requests were received" in job.failure_reason and "was restarted" in job.failure_reason
    assert runtime.generation == 1
    # The rollouts in flight when the restart landed, and no more: 64 were due.
    assert 1 <= len(HELD_INVOCATIONS) <= runner.FULL_LANE_WORKERS
    records = runner.job_runtime().trajectories(job.arn)
    assert all(r.rewards is None for r in records)
    print(
        f"\njob failed {time.monotonic() - started:.1f} s after it started; {len(HELD_INVOCATIONS)} rollouts were cut off"
    )


def test_the_full_lane_refuses_a_runtime_that_is_not_serving(world):
    job = world.run("runner-full-not-serving", ONE_STEP, lane="full")
    assert job.status == "Failed" and "needs the local AgentCore runtime" in job.failure_reason


@pytest.mark.parametrize(("n", "c", "k", "expected"), [(2, 1, 1, 0.5), (2, 1, 2, 1.0), (4, 0, 2, 0.0), (4, 1, 2, 0.5)])
def test_pass_at_k_is_the_unbiased_estimator(n, c, k, expected):
    assert metrics.pass_at_k(n, c, k) == pytest.approx(expected)


# --- reward variants (the reward deep dive trains on a subtly wrong reward) ----------------------


def NO_MODEL(endpoint: str, params: dict) -> None:
    """A model factory for handlers whose inner rollout never builds a model."""


def test_reward_variants_report_another_number_for_the_same_game(monkeypatch):
    from wordle_agent import rollout
    from wordle_agent.game import WordleGame
    from wordle_agent.reward import legacy_reward

    def play(payload: dict, model: object = None, observer: object = None) -> dict:
        game = WordleGame("PASTE")
        for word in ("CRANE", "HOIST", "PASTE"):
            game.guess(word)
        rollout._notify(observer, "row", game)  # type: ignore[arg-type]
        return {"reward": game.final_reward()}

    expected = WordleGame("PASTE")
    for word in ("CRANE", "HOIST", "PASTE"):
        expected.guess(word)
    assert runner.reward_variant_handler(rewards.TIERED, play) is play
    legacy = runner.reward_variant_handler(rewards.LEGACY, play)
    assert legacy({}, model=NO_MODEL)["reward"] == pytest.approx(legacy_reward(expected))
    # Outcome only: the guess-3 tier without the shaping term.
    outcome_only = runner.reward_variant_handler(rewards.OUTCOME_ONLY, play)
    assert outcome_only({}, model=NO_MODEL)["reward"] == pytest.approx(1.05 + 0.5 * 3 / 5)
    # A rollout that made no game (a malformed task) keeps the handler's own reward.
    no_game = runner.reward_variant_handler(rewards.LEGACY, lambda p, **_: {"reward": -1.5})
    assert no_game({}, model=NO_MODEL) == {"reward": -1.5}
    # The caller's observer is handed the game too, after the variant's own.
    seen: list[tuple[str, object]] = []
    handler = runner.reward_variant_handler(rewards.LEGACY, play)
    handler({}, model=NO_MODEL, observer=lambda task_id, game: seen.append((task_id, game)))
    assert [(task_id, game.guesses) for task_id, game in seen] == [("row", ["CRANE", "HOIST", "PASTE"])]


def test_an_observer_is_a_fast_lane_option():
    with pytest.raises(ValueError, match="fast lane only"):
        runner.RunnerOptions(lane="full", observer=lambda task_id, game: None)


def test_outcome_only_ignores_seeded_guesses_when_the_policy_never_played():
    from wordle_agent.game import WordleGame
    from wordle_agent.reward import NO_PLAY_REWARD, legacy_reward

    game = WordleGame("PASTE", prior_guesses=["CRANE"])
    assert rewards.score(rewards.OUTCOME_ONLY, game) == NO_PLAY_REWARD
    assert legacy_reward(game) == pytest.approx(-200 / 150)


@pytest.mark.parametrize(
    ("options", "problem"),
    [({"reward": "summed"}, "is not one of"), ({"reward": "legacy", "lane": "full"}, "only the fast lane")],
)
def test_runner_options_name_a_bad_reward_variant(options, problem):
    with pytest.raises(ValueError, match=problem):
        runner.RunnerOptions(**options)


def test_the_estimator_is_one_runner_option_for_either_learner():
    from mtrl_course.rl.advantages import DR_GRPO

    assert runner.RunnerOptions().estimator == "grpo"
    assert runner.RunnerOptions(estimator="dr_grpo").estimator == "dr_grpo"
    with pytest.raises(ValueError, match="estimator 'ppo' is not one of \\('grpo', 'dr_grpo'\\)"):
        runner.RunnerOptions(estimator="ppo")
    hp = service_spec.TrainingHyperparameters.resolve()
    from mtrl_course.local import grpo

    assert grpo.GRPOConfig.from_training(hp, estimator=DR_GRPO).estimator is DR_GRPO
