"""Every bad `mtrl` invocation: one line on stderr naming what was wrong, a non-zero exit, no
traceback (issue 12 counted 28 of 46 ending in one, and 5 accepting bad input silently).

Driven through `cli.main(argv)` in-process (argparse's own refusals arrive as SystemExit), plus
a few subprocesses for what only a fresh interpreter shows: a broken MTRL_MODE, the console script.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from mtrl_course import aws, cli, config

pytestmark = pytest.mark.filterwarnings("ignore:register_new_resolver:UserWarning")

# (argv, words the one line must contain). Refused by argparse or by the command before it
# does anything: nothing is launched, played, written or deleted.
USAGE_ERRORS = [
    ([], "required: command"),
    (["bogus"], "invalid choice: 'bogus'"),
    (["words"], "required: action"),
    (["dataset"], "required: action"),
    (["train", "--max-steps", "0"], "--max-steps: must be at least 1"),
    (["train", "--max-steps", "-3"], "--max-steps: must be at least 1"),
    (["train", "--max-steps", "ten"], "'ten' is not a whole number"),
    (["train", "--ye"], "unrecognized arguments: --ye"),  # no prefix matching for a spending flag
    (["train", "--runtime-arn", ""], "the ARN is empty"),
    (["train", "--role-arn", "MyRole"], "'MyRole' is not an ARN"),
    (["train", "--train-uri", "bucket/train.jsonl"], "is not an s3:// URI"),
    (["train", "--attach", "some-job", "--yes"], "cannot be combined with --yes"),
    (["train", "--attach", "some-job", "--max-steps", "5"], "cannot be combined with --max-steps"),
    (["train", "--wait"], "--wait applies only with --attach"),
    (["jobs", "--limit", "0"], "--limit: must be between 1 and 100, got 0"),
    (["jobs", "--limit", "101"], "between 1 and 100"),
    (["jobs", "--limit", "-1"], "between 1 and 100"),
    (["play", "--word", "xyz"], "'xyz' is not a five-letter word"),
    (["play", "--word", "cr4ne"], "'cr4ne' is not a five-letter word"),
    (["play", "--batch", "--limit", "-1"], "--limit: must be at least 1, got -1"),
    (["play", "--batch", "--limit", "0"], "--limit: must be at least 1, got 0"),
    (["play", "--batch", "--split", "test"], "invalid choice: 'test'"),
    (["play", "--limit", "3"], "--limit and --split apply only with --batch"),
    (["play", "--batch", "--word", "crane"], "--word is for an interactive game"),
    (["play", "--word", "ABCDE"], "'ABCDE' is not in the game's dictionary"),  # no guess could find it
    (["play", "--word", "aahed"], "not one of the game's 1916 answer words"),
    (["dataset", "validate", "--batch-size", "0"], "--batch-size: must be at least 1"),
    (["dataset", "validate", "--max-problems", "0"], "--max-problems: must be at least 1"),
    (["dataset", "validate", "--pair", "train.jsonl"], "--pair takes exactly two files"),
    (["dataset", "validate", "--pair", "a.jsonl", "b.jsonl", "c.jsonl"], "got 3"),
    (["dataset", "make", "--train", "0"], "--train: must be at least 1"),
    (["dataset", "make", "--val", "-1"], "--val: must be at least 1"),
    (["dataset", "export", "--format", "xml"], "invalid choice: 'xml'"),
    (["evaluate"], "required: --runs"),
    (["evaluate", "--runs", "base"], "is not <model>:<temperature>"),
    (["evaluate", "--runs", "base:hot"], "'hot' is not a number"),
    (["evaluate", "--runs", "base:-1"], "finite number, 0 or more"),
    (["evaluate", "--runs", "base:inf"], "finite number, 0 or more"),
    (["evaluate", "--runs", "base:3"], "over the service's maximum of 2"),
    (["evaluate", "--runs", "base:1", "base:1"], "more than once"),
    (["evaluate", "--runs", "base:1", "--job", "j"], "no trained:<temperature> run"),
    (["evaluate", "--runs", "base:1", "--group-size", "0"], "--group-size: must be at least 1"),
    (["evaluate", "--runs", "base:1", "--group-size", "99"], "--group-size must be between 1 and 32"),
    (["evaluate", "--runs", "base:1", "--effort", "extreme"], "invalid choice: 'extreme'"),
    (["agent", "serve", "--seconds", "-1"], "finite number of seconds"),
    (["agent", "serve", "--seconds", "nan"], "finite number of seconds"),
    (["agent", "smoke", "--account", "1234"], "not a 12-digit AWS account ID"),
    (["course", "--limit", "0"], "--limit: must be at least 1"),
    (["notebooks", "run", "--timeout", "0"], "--timeout: must be at least 1"),
    (["cleanup", "--yes", "--dry-run"], "give one of them"),
]

# Live commands with no credentials anywhere: a sentence, not botocore's traceback.
LIVE_WITHOUT_CREDENTIALS = [
    ["jobs"],
    ["train", "--yes", "--max-steps", "1"],
    ["train", "--attach", "some-job"],
    ["evaluate", "--runs", "base:0"],
    ["agent", "smoke"],
    ["cleanup", "--dry-run"],
]


def invoke(capsys, argv: list[str]) -> tuple[int, str, str]:
    try:
        code = cli.main(argv)
    except SystemExit as exit_info:
        code = exit_info.code if isinstance(exit_info.code, int) else 1
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line(code: int, out: str, err: str, needle: str, expected_code: int) -> None:
    assert "Traceback" not in out + err
    assert code == expected_code, (code, out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert needle in lines[0], lines[0]
    assert out == ""


@pytest.mark.parametrize(("argv", "needle"), USAGE_ERRORS, ids=[" ".join(a) or "(none)" for a, _ in USAGE_ERRORS])
def test_a_bad_invocation_gets_one_line_and_exit_2(capsys, argv, needle):
    assert_one_line(*invoke(capsys, argv), needle, cli.USAGE_EXIT)


@pytest.fixture
def live_without_credentials(monkeypatch):
    monkeypatch.setattr(config, "MODE", config.Mode.LIVE)
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", os.devnull)
    monkeypatch.setattr(cli, "_quiet", lambda: None)


@pytest.mark.parametrize("argv", LIVE_WITHOUT_CREDENTIALS, ids=" ".join)
def test_a_live_command_without_credentials_says_so_in_one_line(capsys, live_without_credentials, argv):
    assert_one_line(*invoke(capsys, argv), "No AWS credentials", cli.FAILURE_EXIT)


def test_debug_shows_the_traceback(capsys, live_without_credentials):
    with pytest.raises(RuntimeError, match="No AWS credentials"):
        cli.main(["--debug", "jobs"])


def test_a_failing_offline_command_is_one_line(capsys, tmp_path):
    backend = aws.reset_offline(tmp_path / "state")
    try:
        code, _, err = invoke(capsys, ["train", "--attach", "no-such-job"])
    finally:
        aws.reset_offline(tmp_path / "state")
    assert backend is not None
    assert code == cli.FAILURE_EXIT and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert "AWS refused DescribeJob: ResourceNotFound: Job no-such-job" in err, err


# Commands that fail on something named that is not there: one line on stderr, exit 1, no repr
# (they printed on stdout, one as a KeyError's repr with its quotes).
MISSING = [
    (["notebooks", "run", "99"], "no notebook '99' in the catalog"),
    (["notebooks", "run", "no_such_notebook"], "no notebook for 'no_such_notebook'"),
    (["dataset", "validate", "/nonexistent.jsonl"], "/nonexistent.jsonl: no such file"),
    (["dataset", "validate", "/"], "/: not a file"),
    (["lab", "attach", "no-such-run"], "not attached: no training job named 'no-such-run'"),
]


@pytest.mark.parametrize(("argv", "needle"), MISSING, ids=[" ".join(a) for a, _ in MISSING])
def test_a_missing_thing_is_named_in_one_line_on_stderr(capsys, tmp_path, argv, needle):
    aws.reset_offline(tmp_path / "state")
    try:
        code, out, err = invoke(capsys, argv)
    finally:
        aws.reset_offline(tmp_path / "state")
    assert_one_line(code, out, err, needle, cli.FAILURE_EXIT)
    said = err.split(": error: ", 1)[1]
    assert not said.startswith(("'", '"')) and "Error(" not in said, said


def test_a_key_error_is_explained_by_its_message_not_its_repr():
    assert cli._explain(KeyError("no notebook '99' in the catalog")) == "no notebook '99' in the catalog"


def test_zero_is_not_a_missing_value(capsys, monkeypatch):
    # `--max-steps 0` used to mean "not given": the default job was launched.
    monkeypatch.setattr(cli, "_train_resources", lambda args: pytest.fail("a job was prepared"))
    code, _, _ = invoke(capsys, ["train", "--max-steps", "0"])
    assert code == cli.USAGE_EXIT


def test_max_steps_reaches_the_trainer_as_given(capsys, monkeypatch):
    seen = {}

    def make_trainer(res, hyperparameters=None):
        seen["hyperparameters"] = hyperparameters
        raise ValueError("stop here")

    from mtrl_course import training

    monkeypatch.setattr(cli, "_train_resources", lambda args: None)
    monkeypatch.setattr(cli, "_quiet", lambda: None)
    monkeypatch.setattr(training, "make_trainer", make_trainer)
    code, _, err = invoke(capsys, ["train", "--max-steps", "1"])
    assert seen["hyperparameters"] == {"max_steps": 1} and code == 1 and "stop here" in err


def test_validate_prints_a_bounded_report(capsys, tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text("x\n" * 5000)
    code, out, err = invoke(capsys, ["dataset", "validate", str(path), "--max-problems", "5"])
    lines = out.splitlines()
    assert code == 1 and err == ""
    assert lines[0] == "5000 problem(s):" and len(lines) == 7 and lines[-1] == "  ... and 4995 more"


def test_validate_prints_a_lone_surrogate_without_dying(capsys, tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text('{"prompt": "{\\"prompt\\": \\"G\\", \\"answer\\": \\"\\\\ud800abcd\\", \\"id\\": \\"t\\"}"}\n')
    code, out, _ = invoke(capsys, ["dataset", "validate", str(path)])
    assert code == 1 and "\\ud800" in out


# ------------------------------------------------------------------ fresh interpreters
def run_mtrl(*argv: str, **env: str) -> subprocess.CompletedProcess:
    root = Path(cli.__file__).resolve().parents[1]
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]), **env}
    return subprocess.run(
        [sys.executable, "-m", "mtrl_course.cli", *argv],
        capture_output=True,
        text=True,
        env=environment,
        timeout=120,
        check=False,
    )


def test_help_works_whatever_the_mode_says():
    result = run_mtrl("--help", MTRL_MODE="bogus")
    assert result.returncode == 0 and "usage: mtrl" in result.stdout and result.stderr == ""


def test_a_bad_mode_is_one_line_for_a_command():
    result = run_mtrl("dataset", "validate", MTRL_MODE="bogus")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    expected = (
        "mtrl dataset validate: error: MTRL_MODE='bogus' is not a mode; set it to 'offline' (the default) or "
        "'live' (`mtrl --debug ...` shows the traceback)"
    )
    assert result.stderr.strip().splitlines() == [expected]
