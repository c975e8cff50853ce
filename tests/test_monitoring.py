"""monitoring: metrics read back from an MLflow app by its ARN, the UI guard, game transcripts."""

from __future__ import annotations

import json
import math

import pytest

from mtrl_course import aws, monitoring, notebook
from wordle_agent.game import WordleGame

pytestmark = pytest.mark.floats

BUCKET = "mtrl-monitoring-test"
JOB = "wordle-mtrl-monitoring"


# --- transcripts -------------------------------------------------------------------------------------
def test_walkthrough_game_replays_paste_through_the_course_game_code():
    game = monitoring.walkthrough_game()
    assert game.answer == "PASTE" and game.guesses == ["CRANE", "ALIVE", "HASTE", "PASTE"]
    assert game.solved and "AWS walkthrough" in game.label
    assert [t.marks for t in game.turns] == ["X X Y X G", "Y X X X G", "X G G G G", "G G G G G"]
    first = game.turns[0]
    assert first.squares == "\u2b1b\u2b1b\U0001f7e8\u2b1b\U0001f7e9"
    assert "- Correct Position (Green): _ _ _ _ E" in first.summary
    reference = WordleGame("PASTE")
    for word in game.guesses:
        reference.guess(word)
    assert game.reward == pytest.approx(reference.final_reward())
    assert sum(t.points for t in game.turns) == pytest.approx(game.shaping_score)
    text = str(game)
    assert "final reward +1.279" in text and "solved in 4 guesses" in text


def test_render_keeps_malformed_calls_repeats_and_raw_text_guesses():
    game = WordleGame("CRANE")
    game.guess("xx")  # malformed: uses no guess
    game.guess("SLATE")
    game.guess("SLATE")  # repeat
    game.guess_from_text("CRANE")  # a solve recovered from raw text
    traced = monitoring.render(game, "test")
    assert [t.kind for t in traced.turns] == ["malformed", "guess", "repeat", "solve"]
    assert traced.turns[0].number is None and traced.turns[0].marks == ""
    assert "raw_text" in [name for name, _ in traced.turns[-1].events]
    assert traced.reward == pytest.approx(game.final_reward())
    assert list(traced.table()["guess"]) == ["-", 1, 2, 3]
    assert "malformed call" in str(traced)


def test_a_lost_game_reads_as_not_solved():
    traced = monitoring.replay("PASTE", ["CRANE", "BLIMP", "FUDGY", "WORST", "SHOCK", "JAZZY"], "test")
    assert not traced.solved
    assert "not solved after 6 guesses" in str(traced)
    assert traced.reward < 0


# --- metrics from MLflow, by the app's ARN -----------------------------------------------------------
@pytest.fixture
def offline(tmp_path):
    backend = aws.reset_offline(tmp_path / "state")
    yield backend
    aws.reset_offline(tmp_path / "state")


@pytest.fixture
def logged_job(offline):
    """An MLflow app holding one run with training and validation metrics, and the DescribeJob
    response of a job that points at it (what the service reports)."""
    from mlflow.tracking import MlflowClient

    boto = aws.session()
    role = boto.client("iam").create_role(RoleName="r", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    boto.client("s3").create_bucket(Bucket=BUCKET)
    arn = boto.client("sagemaker").create_mlflow_app(
        Name="monitoring", ArtifactStoreUri=f"s3://{BUCKET}/m", RoleArn=role
    )["Arn"]
    client = MlflowClient(tracking_uri=arn)
    experiment = client.create_experiment(JOB)
    run = client.create_run(experiment, run_name=JOB, tags={"mtrl.offline.seed": "7"})
    for step in range(1, 4):
        client.log_metric(run.info.run_id, "rollout/reward/mean", -0.5 + 0.25 * step, step=step)
        client.log_metric(run.info.run_id, "rollout/reward/std", 0.1 * step, step=step)
    for step, value in ((0, 0.125), (3, 0.375)):
        client.log_metric(run.info.run_id, "val/reward/pass_at_1", value, step=step)
    document = {
        "TrainingConfig": {"MlflowConfig": {"MlflowResourceArn": arn, "MlflowExperimentName": JOB}},
        "ServiceOutput": {
            "MlflowDetails": {
                "ExperimentName": JOB,
                "RunName": JOB,
                "ExperimentId": experiment,
                "RunId": run.info.run_id,
            }
        },
    }
    return {
        "JobName": JOB,
        "JobCategory": "AgentRFT",
        "JobStatus": "Completed",
        "JobConfigDocument": json.dumps(document),
    }, arn


def test_metrics_frame_has_one_row_per_step_and_nan_where_not_logged(logged_job):
    response, arn = logged_job
    frame = monitoring.metrics_frame(response)
    assert frame.index.name == "step"
    assert list(frame.index) == [0, 1, 2, 3]
    assert list(frame.columns) == ["rollout/reward/mean", "rollout/reward/std", "val/reward/pass_at_1"]
    assert frame.loc[3, "rollout/reward/mean"] == pytest.approx(0.25)
    assert math.isnan(frame.loc[1, "val/reward/pass_at_1"])
    assert frame["val/reward/pass_at_1"].dropna().to_dict() == {0: 0.125, 3: 0.375}
    everything = monitoring.metrics_frame(response, keys=None)
    assert set(everything.columns) == {"rollout/reward/mean", "rollout/reward/std", "val/reward/pass_at_1"}
    assert monitoring.run_tags(response)["mtrl.offline.seed"] == "7"


def test_a_job_without_an_mlflow_run_yet_says_when_to_come_back(logged_job):
    response, _ = logged_job
    document = json.loads(response["JobConfigDocument"])
    document.pop("ServiceOutput")
    starting = dict(
        response, JobStatus="InProgress", SecondaryStatus="Starting", JobConfigDocument=json.dumps(document)
    )
    with pytest.raises(ValueError, match="has not reported its MLflow run yet"):
        monitoring.metrics_frame(starting)


def test_ui_instructions_offline_are_relative_and_start_nothing_in_batch_runs(logged_job, monkeypatch, capsys):
    _, arn = logged_job
    text = monitoring.how_to_open_ui(arn)
    assert "mlflow ui --backend-store-uri sqlite:///" in text and "127.0.0.1" in text
    assert "/mlflow/monitoring/mlflow.db" in text
    assert "--workers 1" in text  # mlflow's default is 4 worker processes for one reader
    assert "notebook 08" in text and "/proxy/" in text  # the store's lifetime; the Studio route
    monkeypatch.setenv(notebook.BATCH_ENV_VAR, "1")
    assert monitoring.open_ui(arn) is None
    assert "not started" in capsys.readouterr().out
    assert not aws.offline_backend().mlflow._ui  # no `mlflow ui` process was started


def test_bad_resources_are_named():
    with pytest.raises(ValueError, match="MLflow app ARN"):
        monitoring.how_to_open_ui("arn:aws:sagemaker:us-east-1:123456789012:job/AgentRFT/x")


# --- a game played by a stand-in adapter ----------------------------------------------------------
@pytest.mark.slow
def test_traced_game_plays_the_jobs_adapter_through_the_real_handler_deterministically(offline, monkeypatch):
    import os

    from mtrl_course import resources
    from mtrl_course.local.stand_in_policy import Adapter

    Adapter(seed=42).save(resources.offline_adapter_dir() / f"{JOB}.json")  # the untrained stand-in
    response = {"JobName": JOB, "JobStatus": "Completed", "JobConfigDocument": json.dumps({"ServiceOutput": {}})}
    monkeypatch.delenv("REASONING_EFFORT", raising=False)
    first = monitoring.traced_game(response, "bough", seed=42)
    again = monitoring.traced_game(response, "BOUGH", seed=42)
    assert first == again
    assert first.answer == "BOUGH" and first.label == monitoring.STAND_IN_LABEL
    assert "temperature 0, reasoning effort low" in first.note
    # At temperature 0 the stand-in can fall into a repetition loop and end the game before any
    # guess (issue 8's greedy-decoding lesson); then the handler pays the no-play reward.
    assert all(len(word) == 5 for word in first.guesses)
    assert first.guesses or (first.reward == -1.5 and not first.solved)
    replayed = monitoring.replay("BOUGH", first.guesses, "check")
    assert replayed.reward == pytest.approx(first.reward)
    assert "REASONING_EFFORT" not in os.environ  # the runtime's variables were set for the game only


def test_traced_game_is_offline_only(monkeypatch):
    from mtrl_course import config

    monkeypatch.setattr(config, "MODE", config.Mode.LIVE)
    with pytest.raises(RuntimeError, match="Traces tab"):
        monitoring.traced_game("any-job")
