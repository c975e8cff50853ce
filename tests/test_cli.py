"""The `mtrl` console script, driven offline through `cli.main(argv)`: agent, train, evaluate, jobs."""

from __future__ import annotations

import datetime as dt
import types
from pathlib import Path

import pytest
from mtrl_course import aws, cli, config, naming, resources, training
from mtrl_course.local import service

pytestmark = pytest.mark.filterwarnings("ignore:register_new_resolver:UserWarning")


@pytest.fixture
def offline(offline_backend):
    return offline_backend


def run(capsys, *argv: str) -> tuple[int, str]:
    code = cli.main(list(argv))
    return code, capsys.readouterr().out


# ------------------------------------------------------------------------------------ parsing
@pytest.mark.parametrize(
    ("text", "expected"),
    [("base:1.0", ("base", 1.0)), ("trained:0", ("trained", 0.0)), ("my-job:2026:0.5", ("my-job:2026", 0.5))],
)
def test_runs_are_model_temperature_pairs(text, expected):
    assert cli._run_spec(text) == expected


@pytest.mark.parametrize(
    ("text", "message"), [("base", "is not <model>:<temperature>"), ("base:hot", "'hot' is not a number")]
)
def test_a_malformed_run_is_refused_with_the_reason(capsys, text, message):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["evaluate", "--runs", text])
    assert exit_info.value.code == 2 and message in capsys.readouterr().err


def test_help_lists_the_job_commands(capsys):
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    out = capsys.readouterr().out
    assert all(name in out for name in ("agent", "train", "evaluate", "jobs", "course"))


# --------------------------------------------------------------------------------------- agent
def test_agent_bundle_writes_the_code_bundle(capsys, tmp_path):
    code, out = run(capsys, "agent", "bundle", "--out", str(tmp_path / "bundle"))
    assert code == 0 and (tmp_path / "bundle" / "main.py").is_file()
    assert "wordle_agent/game.py" in out and "pyproject.toml" in out


def test_agent_serve_prints_its_url_and_stops(capsys, offline):
    code, out = run(capsys, "agent", "serve", "--seconds", "0", "--effort", "medium")
    assert (
        code == 0 and "serving wordle_agent.main:app at http://127.0.0.1:" in out and out.rstrip().endswith("stopped")
    )
    assert "runtime/WordleMTRL_WordleAgent-" in out
    assert offline.runtimes.all() == []  # unregistered again


def test_agent_smoke_reaches_the_job_runtime_offline(capsys, offline):
    from wordle_agent.auth import TOKENS

    # conftest sets a fake session token per test; a token the agent cached under another
    # test's variables would be refused once (and re-signed), which the diagnosis would report.
    TOKENS.invalidate()
    code, out = run(capsys, "agent", "smoke")
    # The table shows the runtime's answer (no guess could be made: the job is fake) and the diagnosis.
    assert code == 0 and '{"reward": -1.5}' in out and "the chain works" in out


# ---------------------------------------------------------------------------------------- jobs
def test_jobs_says_when_there_are_none(capsys, offline):
    assert run(capsys, "jobs") == (0, "no jobs yet (mtrl train starts one)\n")


def test_jobs_lists_both_categories_newest_first(capsys, offline):
    store = service.JobStore(Path(offline.state_dir) / service.STORE_SUBDIR)
    for minute, (category, name) in enumerate([(service.TRAINING, "older-train"), (service.EVALUATION, "newer-eval")]):
        when = dt.datetime(2026, 1, 1, 12, minute, tzinfo=dt.timezone.utc)
        store.save(
            {
                "JobName": name,
                "JobArn": f"arn:aws:sagemaker:us-east-1:{config.MOTO_ACCOUNT}:job/{category}/{name}",
                "RoleArn": "r",
                "JobCategory": category,
                "JobConfigSchemaVersion": "1.0.0",
                "JobConfigDocument": "{}",
                "CreationTime": when,
                "LastModifiedTime": when,
                "EndTime": when + dt.timedelta(minutes=3),
                "JobStatus": "Completed",
                "SecondaryStatus": "Completed",
                "SecondaryStatusTransitions": [],
            },
            {"Pid": 1, "Started": "0"},
        )
    code, out = run(capsys, "jobs")
    lines = out.splitlines()
    assert code == 0 and "newer-eval" in lines[1] and "older-train" in lines[2] and "3.0" in lines[2]


# --------------------------------------------------------------------------------------- train
def test_a_live_train_without_yes_spends_nothing(capsys, monkeypatch):
    trainer = types.SimpleNamespace(
        hyperparameters=types.SimpleNamespace(global_batch_size=128, group_size=8, max_steps=100, max_epochs=20),
        train=lambda wait=True: pytest.fail("a job was started without --yes"),
    )
    monkeypatch.setattr(config, "MODE", config.Mode.LIVE)
    monkeypatch.setattr(cli, "_train_resources", lambda args: None)
    monkeypatch.setattr(training, "make_trainer", lambda res, hyperparameters=None: trainer)
    monkeypatch.setattr(cli, "_quiet", lambda: None)
    code, out = run(capsys, "train")
    assert code == 2 and "not launched" in out and "102,400 training rollouts" in out


def test_train_flags_replace_the_discovered_resources(offline, monkeypatch):
    fake = resources.CourseResources(
        "offline",
        "us-east-1",
        "123456789012",
        "role",
        "bucket",
        "s3://bucket/t.jsonl",
        "s3://bucket/v.jsonl",
        "s3://bucket/out/",
        "mlflow",
        "runtime",
    )
    monkeypatch.setattr(resources, "prepare", lambda *a, **k: fake)
    args = cli.build_parser().parse_args(["train", "--runtime-arn", "arn:other", "--val-uri", "s3://b/v2.jsonl"])
    replaced = cli._train_resources(args)
    assert (replaced.runtime_arn, replaced.validation_s3_uri, replaced.train_s3_uri) == (
        "arn:other",
        "s3://b/v2.jsonl",
        "s3://bucket/t.jsonl",
    )


@pytest.mark.slow
@pytest.mark.experiments
def test_train_evaluate_jobs_and_attach_offline(capsys, offline, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the evaluator writes its pipeline file into the working directory
    try:
        code, out = run(capsys, "train", "--max-steps", "1")
        assert code == 0, out
        name = out.splitlines()[0].removeprefix("launched ")
        assert name.startswith("mtrl-wordle-train-offline-") and f"job: {name}  status: Completed" in out
        assert "val/reward/pass_at_1" in out and "prefill" in out
        assert "  Training: Training with the stand-in policy on the fast lane" in out

        code, out = run(capsys, "evaluate", "--runs", "base:0", "trained:1.0")
        assert code == 0 and f"trained = {name}" in out
        rows = [line for line in out.splitlines() if " low " in line]
        # Both through CreateJob: only it carries the training token cap (evaluation.EVAL_MAX_TOKENS);
        # the SDK's pipeline is exercised in tests/test_evaluation.py.
        assert len(rows) == 2 and "CreateJob" in rows[0] and "CreateJob" in rows[1]

        code, out = run(capsys, "jobs")
        assert code == 0 and name in out and out.count("AgentRFTEvaluation") == 2

        code, out = run(capsys, "train", "--attach", name)
        assert code == 0 and f"job: {name}  status: Completed" in out and "Uploading" in out
    finally:
        res = resources.prepare()
        resources.close(res)


def test_evaluate_needs_a_trained_job_to_mean_trained(capsys, offline, monkeypatch):
    monkeypatch.setattr(
        resources, "prepare", lambda *a, **k: types.SimpleNamespace(reasoning_effort="low", runtime=None)
    )
    monkeypatch.setattr(training, "latest_job", lambda status=None: None)
    code, out = run(capsys, "evaluate", "--runs", "trained:1.0")
    assert code == 1 and "run `mtrl train` first" in out


def test_cleanup_lists_then_deletes_only_with_yes(capsys, offline):
    from mtrl_course import iam

    iam.ensure_job_role(session=aws.session())
    code, out = run(capsys, "cleanup", "--dry-run")
    assert code == 0 and "mtrl-wordle" in out and "nothing deleted" in out
    assert iam.role_exists(naming.resource_name(iam.JOB_ROLE_KIND))
    code, out = run(capsys, "cleanup", "--yes")
    assert code == 0
    assert not iam.role_exists(naming.resource_name(iam.JOB_ROLE_KIND))


@pytest.mark.slow
@pytest.mark.experiments
def test_offline_no_wait_leaves_a_job_that_completes(tmp_path):
    # Offline the job runs in the process that created it; --no-wait used to end that process
    # at once, and the service failed the job ("the Python process that ran it ended").
    import os
    import signal
    import subprocess
    import sys

    root = str(Path(cli.__file__).resolve().parents[1])
    env = {
        **os.environ,
        "MTRL_STATE_DIR": str(tmp_path / "state"),
        "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]),
    }

    def mtrl(*argv: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "mtrl_course.cli", *argv],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=900,
            check=False,
        )

    launched = mtrl("train", "--no-wait", "--max-steps", "1")
    assert launched.returncode == 0, launched.stdout + launched.stderr
    first = launched.stdout.splitlines()[0]
    name = first.removeprefix("launched ").split()[0]
    pid = int(first.split("pid ")[1].split(";")[0]) if "pid " in first else None
    try:
        attached = mtrl("train", "--attach", name, "--wait")
        assert attached.returncode == 0 and f"job: {name}  status: Completed" in attached.stdout, (
            attached.stdout + attached.stderr
        )
    finally:
        if pid is not None:  # the detached process ends with its job; make sure of it
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
