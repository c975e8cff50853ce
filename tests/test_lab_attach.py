"""The lab path, rehearsed offline end to end: an instructor trains and evaluates in one process;
a learner, in a fresh process that knows only the run id, attaches with `mtrl lab attach`, reads
the training curve (notebook 06) and the instructor's evaluation results from MLflow (notebook 07),
and finds every resource the later notebooks need, without creating anything of the instructor's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
from lab_fixtures import instructor_attachment

INSTRUCTOR_RUN = "inst1"
LEARNER_RUN = "lrn1"
TIMEOUT_S = 600
TINY_RUN = {"global_batch_size": 32, "group_size": 2, "max_steps": 2, "val_every": 1}

INSTRUCTOR = textwrap.dedent(f"""
    import json, sys, warnings
    from pathlib import Path
    warnings.filterwarnings("ignore")
    from mtrl_course import aws, evaluation, resources, training
    aws.reset_offline(Path(sys.argv[1]))
    res = resources.prepare()
    job = training.wait(training.launch(training.make_trainer(res, {TINY_RUN!r})), echo=False)
    greedy = evaluation.evaluate(res, job.job_name, temperature=0.0, reasoning_effort="low")
    sampled = evaluation.evaluate(res, job.job_name, temperature=1.0, reasoning_effort="low")
    print("RESULT " + json.dumps({{
        "job": job.job_name, "role": res.job_role_arn, "runtime": res.runtime_arn, "mlflow": res.mlflow_app_arn,
        "train": res.train_s3_uri, "evals": [greedy["job_name"], sampled["job_name"]],
        "vias": [greedy["via"], sampled["via"]], "pass_at_1": [greedy["pass_at_1"], sampled["pass_at_1"]],
    }}))
    resources.close(res)
""")

LEARNER = textwrap.dedent("""
    import json, sys, warnings
    from pathlib import Path
    warnings.filterwarnings("ignore")
    from mtrl_course import aws, cli, instructor_run, monitoring
    aws.reset_offline(Path(sys.argv[1]))
    code = cli.main(["lab", "attach", sys.argv[2]])
    attached = instructor_run.attached()
    frame = monitoring.metrics_frame(attached.job_name)
    results = instructor_run.evaluation_results()
    calls = list(aws.offline_backend().calls)
    print("RESULT " + json.dumps({
        "code": code, "attached": {k: (list(v) if isinstance(v, tuple) else v) for k, v in vars(attached).items()},
        "steps": len(frame), "val": frame["val/reward/pass_at_1"].dropna().tolist(),
        "results": results.to_dict("records"),
        "writes": sorted({c for c in calls if c.split(".")[1].startswith(("Create", "Put", "Delete", "Update", "Start", "Stop"))}),
    }))
""")


def _run(script: str, state: str, run: str, *args: str) -> dict:
    env = {**os.environ, "MTRL_MODE": "offline", "MTRL_RUN_ID": run, "MTRL_STATE_DIR": state}
    # Run from the state's folder: MultiTurnRLEvaluator writes its pipeline file into the CWD.
    completed = subprocess.run(
        [sys.executable, "-c", script, state, *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        env=env,
        cwd=os.path.dirname(state),
    )
    lines = [line for line in completed.stdout.splitlines() if line.startswith("RESULT ")]
    assert completed.returncode == 0 and lines, completed.stderr[-4000:]
    return json.loads(lines[-1][len("RESULT ") :])


@pytest.mark.slow
@pytest.mark.experiments
def test_a_learner_attaches_to_the_instructors_run_with_only_its_id(tmp_path):
    state = str(tmp_path / "state")
    os.makedirs(state, exist_ok=True)
    teacher = _run(INSTRUCTOR, state, INSTRUCTOR_RUN)
    assert teacher["job"].startswith(f"mtrl-wordle-train-{INSTRUCTOR_RUN}-")
    # Both through CreateJob, the one path that carries the training token cap (evaluation.EVAL_MAX_TOKENS).
    assert teacher["vias"] == ["CreateJob", "CreateJob"]

    learner = _run(LEARNER, state, LEARNER_RUN, INSTRUCTOR_RUN)
    assert learner["code"] == 0
    attached = learner["attached"]
    assert attached["run_id"] == INSTRUCTOR_RUN and attached["job_name"] == teacher["job"]
    assert attached["job_role_arn"] == teacher["role"] and attached["runtime_arn"] == teacher["runtime"]
    assert attached["mlflow_app_arn"] == teacher["mlflow"] and attached["train_s3_uri"] == teacher["train"]
    assert attached["bucket"] and attached["validation_s3_uri"] and attached["output_s3_uri"]
    assert attached["evaluation_jobs"] == teacher["evals"]  # the evaluator's job found by its run_id tag
    assert learner["steps"] == TINY_RUN["max_steps"] + 1 and learner["val"]  # step 0 is the baseline validation
    results = learner["results"]
    assert [r["temperature"] for r in results] == [0.0, 1.0]
    # The evaluator's job is named by its pipeline; its effort comes from the job's tag.
    assert [r["effort"] for r in results] == ["low", "low"]
    assert [r["pass_at_1"] for r in results] == teacher["pass_at_1"]
    assert {r["model"] for r in results} == {"trained"}
    assert learner["writes"] == []  # read-only: no Create/Put/Delete/Update/Start/Stop call


def test_attach_names_what_it_could_not_find(tmp_path):
    from mtrl_course import aws, instructor_run

    aws.reset_offline(tmp_path / "state")
    try:
        with pytest.raises(instructor_run.NotFound, match="no training job of run 'nobody'"):
            instructor_run.attach("nobody", save=False)
        with pytest.raises(instructor_run.NotFound, match="not a run id"):
            instructor_run.attach("Not-A-Job-Or-Run", save=False)
        with pytest.raises(ValueError, match="run id"):
            instructor_run.attach("  ")
        with pytest.raises(LookupError, match="not attached"):
            instructor_run.evaluation_results(None) if instructor_run.attached() is None else None
    finally:
        aws.reset_offline(tmp_path / "state")


def test_prepare_in_live_mode_fills_what_the_learner_lacks_from_the_attachment(tmp_path, monkeypatch):
    """resources.prepare() live, for a learner with nothing of their own: the instructor's run."""
    from dataclasses import asdict

    from mtrl_course import aws, config, instructor_run, resources

    aws.reset_offline(tmp_path / "state")
    try:
        session = aws.session()
        monkeypatch.setattr(config, "STATE_DIR", tmp_path)
        monkeypatch.setenv("MTRL_RUN_ID", LEARNER_RUN)
        for name in (resources.JOB_ROLE_ENV, resources.RUNTIME_ENV, resources.MLFLOW_APP_ENV, "MTRL_BUCKET"):
            monkeypatch.delenv(name, raising=False)
        account, region = config.MOTO_ACCOUNT, session.region_name
        attachment = instructor_attachment(account, region)
        instructor_run.lab_file().write_text(__import__("json").dumps(asdict(attachment)), encoding="utf-8")
        monkeypatch.setattr(config, "MODE", config.Mode.LIVE)
        found = resources._discover_live(session)
        assert (found.job_role_arn, found.runtime_arn, found.mlflow_app_arn) == (
            attachment.job_role_arn,
            attachment.runtime_arn,
            attachment.mlflow_app_arn,
        )
        assert (found.bucket, found.train_s3_uri, found.validation_s3_uri, found.output_s3_uri) == (
            "instructor-bucket",
            attachment.train_s3_uri,
            attachment.validation_s3_uri,
            attachment.output_s3_uri,
        )
        monkeypatch.setattr(config, "MODE", config.Mode.OFFLINE)
        assert instructor_run.detach() and instructor_run.attached() is None
    finally:
        monkeypatch.setattr(config, "MODE", config.Mode.OFFLINE)
        aws.reset_offline(tmp_path / "state")
