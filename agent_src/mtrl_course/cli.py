"""`mtrl`: the course's steps from a terminal, for instructors, CI and anyone who prefers a shell.

Every subcommand calls the same toolkit functions the notebooks call, and prints a table.
Heavy imports happen inside each command so `mtrl --help` stays instant.

    mtrl agent bundle | serve | smoke        the agent: build its AgentCore bundle, serve it, check it
    mtrl train [--attach JOB]                 launch (or attach to) a training job, wait, print metrics
    mtrl evaluate --runs base:1.0 trained:1.0 --effort medium
    mtrl jobs                                 training and evaluation jobs, newest first

Offline (the default) every command runs against the offline backend and spends nothing. Live
(MTRL_MODE=live), `mtrl train` starts a job that bills for hours only with `--yes`.

Progress (tqdm bars, a line per training step or notebook) goes to stderr when it is a
terminal; tables and results go to stdout and are the same either way (`mtrl_course.progress`).

Every bad argument, and every failure a learner can cause (no credentials, an unknown job, a
broken file), ends in one line on stderr naming what was wrong and a non-zero exit: 2 for a
usage error, 1 for a failure. `mtrl --debug ...` (or MTRL_DEBUG=1) shows the traceback instead.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

# Metrics `mtrl train` prints per step (the first is what the SDK prints too; the last is the one
# to watch): one list for the live step lines and the final table. The module imports nothing heavy.
from mtrl_course.progress import STEP_METRICS

# A `--runs` item: `<model>:<temperature>`; the model is "base", "trained" or a training job name.
RUN_SEPARATOR = ":"
TRAINED_ALIAS = "trained"
JOB_LIST_LIMIT = 20
JOB_LIST_MAX = 100  # ListJobs' MaxResults range is 1..100 (the botocore model)
SERVE_POLL_S = 0.5
WORD_LENGTH = 5
USAGE_EXIT = 2  # argparse's own exit status for a bad argument
FAILURE_EXIT = 1
INTERRUPTED_EXIT = 130


SMOKE_HELP = "the first live run, smallest and in order, with a report of what it saw"
SMOKE_DESCRIPTION = (
    "Preflight (read-only), a cost estimate from YOUR prices (SageMaker AI pricing page, USD per million "
    "tokens; all three, or none for tokens without dollars), the job role and data, `agentcore deploy -y`, one smoke "
    "invocation, the MLflow app, a one-step training job at the smallest batch, a 4-word evaluation, clean-up. "
    "It stops at the first failure with the service's message and writes a report (.state/first-run/, account "
    "numbers masked). Live, nothing after the estimate starts without --yes-i-will-pay; offline (the default) "
    "it runs against the stand-ins. `mtrl agent smoke` is the invocation step alone."
)


class UsageError(Exception):
    """A combination of arguments the command refuses (argparse checks single values)."""


# The top-level help's closing section: the environment variables every command reads.
ENVIRONMENT_HELP = """environment:
  MTRL_MODE=offline   the default: every command runs against the course's local stand-ins
                      (moto, a local job service, a small stand-in policy); no AWS account,
                      no charge
  MTRL_MODE=live      your AWS account, with the credentials and Region of your AWS
                      configuration; a command that starts billable work (mtrl train) does
                      so only with --yes, and mtrl cleanup deletes what the course created
  MTRL_DEBUG=1        same as --debug
  MTRL_PROGRESS=0|1   progress bars and step lines on stderr off or on (default: on when
                      stderr is a terminal, off in notebooks, pipes and tests)

now: MTRL_MODE={mode}"""


class _HelpFormatter(argparse.HelpFormatter):
    """Help that states every option's default.

    argparse's ArgumentDefaultsHelpFormatter prints "(default: None)" and "(default: False)",
    which tell a reader nothing; here a default is appended only when it is a real value and the
    help does not already say it (options whose default is computed say what it is themselves).
    """

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if "default" in text or action.default in (None, False, argparse.SUPPRESS) or action.required:
            return text
        if action.option_strings or action.nargs in (argparse.OPTIONAL, argparse.ZERO_OR_MORE):
            return f"{text} (default: %(default)s)"
        return text


class _TopHelpFormatter(argparse.RawDescriptionHelpFormatter, _HelpFormatter):
    """The top-level help keeps its environment table's layout."""


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors, no prefix matching and defaults in the help.

    argparse's default answer to a bad argument is the whole usage block, and its prefix
    matching lets `--ye` mean `--yes`: a spending flag should be typed in full.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        kwargs.setdefault("formatter_class", _HelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> Any:  # type: ignore[override]
        self.exit(USAGE_EXIT, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


# ---------------------------------------------------------------------- argument value checks
def _whole_number(minimum: int, maximum: int | None = None, why: str = "") -> Any:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < minimum or (maximum is not None and value > maximum):
            span = f"at least {minimum}" if maximum is None else f"between {minimum} and {maximum}"
            raise argparse.ArgumentTypeError(f"must be {span}{why}, got {value}")
        return value

    parse.__name__ = "whole number"
    return parse


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"must be a finite number of seconds, 0 or more, got {text}")
    return value


def _secret_word(text: str) -> str:
    if len(text) != WORD_LENGTH or not (text.isascii() and text.isalpha()):
        raise argparse.ArgumentTypeError(f"{text!r} is not a five-letter word of letters a-z")
    from wordle_agent.words import ALLOWED, ANSWERS

    word = text.upper()
    if word not in ALLOWED:
        # A secret no guess can match (every guess outside the dictionary is refused): unwinnable.
        raise argparse.ArgumentTypeError(f"{text!r} is not in the game's dictionary, so no guess could ever find it")
    if word not in set(ANSWERS):
        raise argparse.ArgumentTypeError(
            f"{text!r} is an allowed guess but not one of the game's {len(ANSWERS)} answer words "
            "(agent_src/wordle_agent/data/answers.txt), the only words it picks as secrets"
        )
    return word


def _text(kind: str, prefix: str = "") -> Any:
    def parse(text: str) -> str:
        # An empty value used to be dropped silently, so the default was used instead.
        if not text.strip():
            raise argparse.ArgumentTypeError(f"the {kind} is empty")
        if prefix and not text.startswith(prefix):
            raise argparse.ArgumentTypeError(f"{text!r} is not an {kind} (it must start with {prefix})")
        return text

    parse.__name__ = kind
    return parse


_ARN = _text("ARN", "arn:")
_S3_URI = _text("s3:// URI", "s3://")


def _print_table(rows, columns: Sequence[str] | None = None) -> None:
    import pandas as pd

    frame = rows if isinstance(rows, pd.DataFrame) else pd.DataFrame(rows, columns=columns)
    with pd.option_context("display.width", 140, "display.max_columns", 30):
        print(frame.to_string(index=False))


# ---------------------------------------------------------------------------------------- words
def _words_build(args: argparse.Namespace) -> int:
    from mtrl_course import progress, wordlists

    with progress.running("building the word lists from SCOWL"):
        summary = wordlists.build(scowl_dir=Path(args.scowl_dir))
    _print_table([{"item": k, "value": v} for k, v in summary.items() if not isinstance(v, dict)])
    return 0


def _words_verify(args: argparse.Namespace) -> int:
    from wordle_agent import words

    from mtrl_course import wordlists

    problems = wordlists.verify()
    if problems:
        print("word data: FAILED")
        for p in problems:
            print(f"  - {p}")
        return 1
    print(
        f"word data: OK ({len(words.ANSWERS)} answers, {len(words.ALLOWED)} allowed guesses, "
        f"{len(words.ENTROPY)} entropy values; checksums match PROVENANCE.json)"
    )
    return 0


def _words_hash(args: argparse.Namespace) -> int:
    from mtrl_course import wordlists

    return int(wordlists.main(["hash", *args.words]) or 0)


# -------------------------------------------------------------------------------------- dataset
def _dataset_make(args: argparse.Namespace) -> int:
    from mtrl_course import dataset, progress

    with progress.running("drawing and writing the dataset splits"):
        summary = dataset.make_dataset(
            out_dir=Path(args.out) if args.out else None, n_train=args.train, n_val=args.val, seed=args.seed
        )
    _print_table([{"item": k, "value": v} for k, v in summary.items()])
    return 0


def _dataset_validate(args: argparse.Namespace) -> int:
    from mtrl_course import config, dataset

    if args.pair and len(args.files) not in (0, 2):
        raise UsageError(f"--pair takes exactly two files (training, then validation), got {len(args.files)}")
    files = [Path(f) for f in args.files] or [config.TRAIN_FILE, config.VALIDATION_FILE]
    for path in files:
        if not path.exists():
            raise FileNotFoundError(f"{path}: no such file")
        if not path.is_file():
            raise FileNotFoundError(f"{path}: not a file")
    limit = args.max_problems
    if not args.files or args.pair:
        problems = dataset.validate_pair(files[0], files[1], batch_size=args.batch_size, max_problems=limit)
    else:
        found = [dataset.validate_file(f, batch_size=args.batch_size, max_problems=limit) for f in files]
        problems = dataset.ProblemList([p for part in found for p in part], sum(part.total for part in found))
    if problems.total:
        # Bounded output: a hostile file has millions of problems; the first few say what to fix.
        print(f"{problems.total} problem(s):")
        for p in problems[:limit]:
            print(f"  - {p}")
        if problems.total > min(limit, len(problems)):
            print(f"  ... and {problems.total - min(limit, len(problems))} more")
        return 1
    print("dataset: OK (" + ", ".join(str(f) for f in files) + ")")
    return 0


def _dataset_export(args: argparse.Namespace) -> int:
    from mtrl_course import config, dataset

    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for src in (config.TRAIN_FILE, config.VALIDATION_FILE):
        rows = dataset.read_rows(src)
        target = out_dir / f"{src.stem}.{args.format}"
        dataset.export(rows, target, args.format)
        written.append({"source": src.name, "written": str(target), "rows": len(rows)})
    _print_table(written)
    return 0


# ----------------------------------------------------------------------------------------- play
def _play(args: argparse.Namespace) -> int:
    if args.batch and args.word:
        raise UsageError("--word is for an interactive game; --batch plays the split's own words")
    if not args.batch and (args.limit is not None or args.split is not None):
        raise UsageError("--limit and --split apply only with --batch")
    if args.batch:
        from mtrl_course import solver
        from mtrl_course.curriculum.course_run import split_words

        words = split_words(args.split or "validation")
        words = words[: args.limit] if args.limit is not None else words
        from mtrl_course import progress

        with progress.running(f"playing {len(words)} games with the reference solver"):
            frame = solver.play_many(words)
        _print_table(frame)
        print()
        _print_table([solver.summarise(frame)])
        return 0
    return _play_interactive(args.word)


def play_rules() -> str:
    """What `mtrl play` prints before the first guess: the game's rules, from the game's constants."""
    from wordle_agent.game import MAX_GUESSES, MAX_TOOL_CALLS, WORD_LENGTH

    return (
        f"Wordle: find the hidden {WORD_LENGTH}-letter word in {MAX_GUESSES} guesses.\n"
        "  After each guess every letter is marked: green = right letter, right place; yellow = in\n"
        "  the word, another place; gray = not in the word (or not again).\n"
        f"  Any {WORD_LENGTH} letters count as a guess (one not in the dictionary is marked so); anything\n"
        f"  else uses no guess, but at most {MAX_TOOL_CALLS} entries are read in all.\n"
        "  At the end you see the episode reward the agent is trained on.\n"
        "  Ctrl-D gives up and shows the answer; Ctrl-C quits."
    )


def _play_interactive(word: str | None) -> int:
    import random

    from wordle_agent.game import WordleGame
    from wordle_agent.words import ANSWERS

    answer = (word or random.SystemRandom().choice(ANSWERS)).upper()
    game = WordleGame(answer)
    print(play_rules())
    while not game.over and not game.limit_reached:
        try:
            guess = input("guess> ")
        except EOFError:
            print()
            print("given up")
            break
        except KeyboardInterrupt:
            # A quit, not a crash: no traceback (it used to print one), and the shell's usual
            # status for Ctrl-C.
            print("\nquit")
            return INTERRUPTED_EXIT
        print(game.guess(guess))
    print(f"answer: {answer}")
    for line in reward_lines(game):
        print(line)
    return 0


def reward_lines(game: Any) -> list[str]:
    """How the game's episode reward is made, in the terms of docs/REWARD.md (two lines)."""
    from wordle_agent import reward
    from wordle_agent.game import MAX_GUESSES

    played = len(game.guesses) if len(game.guesses) > game.seeded else 0
    total = game.final_reward()
    meaning = (
        f"shaping score {game.score:+.1f}: the points your guesses earned and lost, summed "
        f"(a valid guess {reward.VALID_GUESS_BASE:+g}, an ignored clue {reward.GRAY_USED_PENALTY:+g}, ...: "
        "docs/REWARD.md)"
    )
    if played == 0:
        return [f"reward {total:+.3f}: no valid guess was played, whatever the shaping score", meaning]
    shaping = reward.clipped_shaping(game.score)
    scaled = f"shaping {shaping:+.3f} (score / {reward.SHAPING_SCALE:g}, clipped to [-1, 1])"
    if game.solved:
        speed = reward.SPEED_BONUS * (MAX_GUESSES - played) / (MAX_GUESSES - 1)
        parts = (
            f"{reward.SOLVE_BASE:g} for the solve + {speed:.2f} for solving on guess {played} of {MAX_GUESSES} "
            f"+ {reward.SOLVED_SHAPING_WEIGHT:g} x {scaled}"
        )
    else:
        parts = f"{reward.LOSS_REWARD:g} for the loss + {reward.LOST_SHAPING_WEIGHT:g} x {scaled}"
    return [f"reward {total:+.3f} = {parts}", meaning]


# --------------------------------------------------------------------------------------- course
def _course(args: argparse.Namespace) -> int:
    from mtrl_course.curriculum import course_run as course

    return course.run(limit=args.limit, train=not args.no_train)


def _quiet() -> None:
    from mtrl_course.curriculum import course_run as course

    course.quiet()


def _mask(value: Any) -> Any:
    from mtrl_course import naming

    return naming.mask_account(value) if isinstance(value, str) else value


# ---------------------------------------------------------------------------------------- agent
def _agent_bundle(args: argparse.Namespace) -> int:
    from mtrl_course import deploy

    out = deploy.build_bundle(Path(args.out) if args.out else None)
    files = deploy.bundle_manifest(out)
    print(f"bundle: {out} ({len(files)} files)")
    _print_table([{"file": name, "sha256": digest[:16]} for name, digest in files])
    return 0


def _agent_serve(args: argparse.Namespace) -> int:
    from mtrl_course import config, deploy, local, smoke

    _quiet()
    if config.is_live():
        # Live, the agent would call the real Job Runtime: it serves, but only a real job's
        # rollouts (or the smoke payload, answered 400 "Could not find job") make sense.
        env = {item["name"]: item["value"] for item in deploy.agent_runtime(deploy.load_project()).get("envVars", [])}
        runtime = local.agent_runtime(deploy.deployed_runtime_name(), env, register=False).start()
    else:
        runtime = smoke.local_runtime(start=False)
    if args.effort:
        runtime.env["REASONING_EFFORT"] = args.effort
    runtime.start()
    print(f"serving {runtime.app_import} at {runtime.url} (POST /invocations, GET /ping)")
    print(
        f"runtime ARN: {_mask(runtime.arn)}"
        + ("" if config.is_live() else " (offline; boto3 invoke_agent_runtime reaches it)")
    )
    print("stop with Ctrl-C" if args.seconds is None else f"stopping after {args.seconds:g} s")
    deadline = None if args.seconds is None else time.monotonic() + args.seconds
    try:
        while deadline is None or time.monotonic() < deadline:
            time.sleep(SERVE_POLL_S if deadline is None else max(0.0, min(SERVE_POLL_S, deadline - time.monotonic())))
    except KeyboardInterrupt:
        print()
    finally:
        runtime.close()
    print("stopped")
    return 0


def _agent_smoke(args: argparse.Namespace) -> int:
    from mtrl_course import config, smoke

    _quiet()
    runtime = None
    if args.runtime_arn:
        arn = args.runtime_arn
    elif config.is_live():
        arn = smoke.find_runtime_arn()
    else:
        runtime = smoke.local_runtime()
        arn = runtime.arn
    try:
        result = smoke.invoke_smoke(
            arn, smoke.smoke_payload(args.account or smoke.caller_account(), smoke.runtime_region(arn))
        )
    finally:
        if runtime is not None:
            runtime.close()
    cause, fix = smoke.diagnose(result)
    rows = [{"item": k, "value": v} for k, v in result.summary().items()]
    rows += [{"item": "diagnosis", "value": cause}, {"item": "next", "value": fix}]
    _print_table(rows)
    return 0 if result.ok or smoke.diagnose_row(result) is smoke.UNCONFIRMED else 1


def _smoke(args: argparse.Namespace) -> int:
    from mtrl_course import first_run

    _quiet()
    prices = {d: getattr(args, f"price_{d}") for d in ("prefill", "sample", "train") if getattr(args, f"price_{d}")}
    run, _ = first_run.run_first(prices=prices or None, yes_i_will_pay=args.yes_i_will_pay, report_dir=args.report_dir)
    for rows in first_run.summary_tables(run):
        _print_table(rows)
    return 0 if run.ok or run.stopped_before_paying else 1


# ---------------------------------------------------------------------------------------- train
def _train_resources(args: argparse.Namespace) -> Any:
    """The course resources, with any of them replaced by a command-line flag."""
    from mtrl_course import aws, config, resources, storage

    given = {
        "runtime_arn": args.runtime_arn,
        "job_role_arn": args.role_arn,
        "train_s3_uri": args.train_uri,
        "validation_s3_uri": args.val_uri,
        "mlflow_app_arn": args.mlflow_app_arn,
        "output_s3_uri": args.output_uri,
    }
    given = {key: value for key, value in given.items() if value}
    if config.is_live() and len(given) == 6:  # everything on the command line: no discovery needed
        session = aws.session()
        account = session.client("sts").get_caller_identity()["Account"]
        bucket, _ = storage.parse_s3_uri(given["train_s3_uri"])
        return resources.CourseResources(
            mode=config.MODE.value, region=session.region_name, account=account, bucket=bucket, **given
        )
    return dataclasses.replace(resources.prepare(), **given)


def _step_metrics(job: Any) -> list[dict[str, Any]]:
    from mtrl_course import progress

    return progress.StepMetrics(job, STEP_METRICS)()


def _wait_for_training(job: Any) -> Any:
    """`training.wait`, after a terminal has watched the steps go by (mtrl_course.progress).

    The job's statuses (stdout) are printed as the watch sees them, between the step lines
    (stderr), and `wait` carries on after them: they used to come all at once, after every step.
    """
    from mtrl_course import config, progress, training

    poll = training.LIVE_POLL_S if config.is_live() else progress.OFFLINE_WATCH_POLL_S
    shown = 0

    def echo_statuses() -> None:
        nonlocal shown
        shown = training.echo_transitions(job, shown)

    progress.watch_training(job, poll, on_refresh=echo_statuses)
    return training.wait(job, shown=shown)


def _report_training(job: Any) -> None:
    from mtrl_course import evaluation, training

    print(f"job: {job.job_name}  status: {job.job_status}")
    _print_table(training.status_table(job))
    rows = _step_metrics(job)
    if rows:
        print()
        _print_table(rows, columns=["step", *STEP_METRICS])
    tokens = evaluation.billable_tokens(job)
    print()
    _print_table([{"billable tokens": kind, "count": count} for kind, count in tokens.items()])


def _train(args: argparse.Namespace) -> int:
    launch_flags = [
        flag
        for flag, value in (
            ("--runtime-arn", args.runtime_arn),
            ("--role-arn", args.role_arn),
            ("--train-uri", args.train_uri),
            ("--val-uri", args.val_uri),
            ("--mlflow-app-arn", args.mlflow_app_arn),
            ("--output-uri", args.output_uri),
            ("--max-steps", args.max_steps),
            ("--yes", args.yes),
            ("--no-wait", args.no_wait),
        )
        if value not in (None, False)
    ]
    if args.attach and launch_flags:
        raise UsageError(f"--attach reports on an existing job; it cannot be combined with {', '.join(launch_flags)}")
    if args.wait and not args.attach:
        raise UsageError("--wait applies only with --attach (a launched job is waited for unless --no-wait)")
    from mtrl_course import config

    if args.no_wait and not config.is_live():
        return _train_detached(args)
    from mtrl_course import progress

    # From the first second, a terminal sees what is happening (it used to see nothing for
    # about 34 s before "launched": the SDK's import, then the resources and the trainer).
    with progress.running("loading the SageMaker SDK"):
        from sagemaker.core.utils.exceptions import FailedStatusError

        from mtrl_course import training
    _quiet()
    if args.attach:
        job = training.attach(args.attach)
        if args.wait:
            job = _wait_for_training(job)
        _report_training(job)
        return 0 if job.job_status != "Failed" else 1
    # Preparing the resources and the trainer takes tens of seconds (offline: moto, the agent's
    # runtime, the MLflow store); a terminal shows each stage with its elapsed time.
    with progress.running("preparing the course resources (role, agent runtime, datasets, MLflow app)"):
        res = _train_resources(args)
    # `is not None`: a falsy 0 used to mean "not given" and launched the default job.
    hyperparameters = {"max_steps": args.max_steps} if args.max_steps is not None else None
    with progress.running("building the trainer (the SDK checks every hyperparameter)"):
        trainer = training.make_trainer(res, hyperparameters)
    try:
        with progress.running("launching the training job"):
            job = training.launch(trainer, confirm_spend=args.yes)
    except training.SpendNotConfirmed as error:
        print(error)
        return 2
    print(f"launched {job.job_name}")
    if args.no_wait:
        return 0
    try:
        job = _wait_for_training(job)
    except FailedStatusError:
        job.refresh()
    _report_training(job)
    return 0 if job.job_status == "Completed" else 1


# Offline the job runs inside the process that created it (the local service's threads), and a
# job whose process is gone is failed by the service. So `--no-wait` used to leave a Failed job
# every time. Offline it now starts `mtrl train` (without --no-wait) as a detached process that
# runs the job to its end, and returns once that process has launched it.
DETACHED_LAUNCH_TIMEOUT_S = 600.0  # imports and resources on a busy 2-core machine, with margin
DETACHED_POLL_S = 0.2
DETACHED_LOG_SUBDIR = "detached"


def _train_detached(args: argparse.Namespace) -> int:
    import subprocess

    from mtrl_course import config

    log_dir = config.STATE_DIR / DETACHED_LOG_SUBDIR
    log_dir.mkdir(parents=True, exist_ok=True)
    log = log_dir / f"train-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.log"
    child_argv = [arg for arg in args.argv if arg != "--no-wait"]
    package_root = str(Path(__file__).resolve().parents[1])  # the same code, wherever it is installed
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (package_root, os.environ.get("PYTHONPATH")) if p)}
    with open(log, "wb") as out:
        child = subprocess.Popen(
            [sys.executable, "-m", "mtrl_course.cli", *child_argv],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
        )
    deadline = time.monotonic() + DETACHED_LAUNCH_TIMEOUT_S
    while time.monotonic() < deadline:
        lines = log.read_text(encoding="utf-8", errors="replace").splitlines()
        launched = next((line for line in lines if line.startswith("launched ")), None)
        if launched:
            name = launched.removeprefix("launched ").strip()
            print(f"{launched} (offline: running in a detached process, pid {child.pid}; log {log})")
            print(f"follow it with `mtrl jobs` or `mtrl train --attach {name} --wait`")
            return 0
        if child.poll() is not None:
            tail = next((line for line in reversed(lines) if line.strip()), f"it exited with status {child.returncode}")
            raise RuntimeError(f"the detached training process did not launch a job: {tail} (log {log})")
        time.sleep(DETACHED_POLL_S)
    raise RuntimeError(
        f"the detached training process launched no job within {DETACHED_LAUNCH_TIMEOUT_S:.0f} s (log {log})"
    )


# ------------------------------------------------------------------------------------- evaluate
def _run_spec(text: str) -> tuple[str, float]:
    model, separator, temperature = text.rpartition(RUN_SEPARATOR)
    if not separator or not model:
        raise argparse.ArgumentTypeError(f"{text!r} is not <model>:<temperature> (for example base:1.0 or trained:0)")
    try:
        value = float(temperature)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: the temperature {temperature!r} is not a number") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"{text!r}: the temperature must be a finite number, 0 or more")
    return model, value


def _evaluate(args: argparse.Namespace) -> int:
    from mtrl_course import evaluation, resources, training
    from mtrl_course.service_spec import EVALUATION_SPEC

    repeated = sorted({f"{m}:{t:g}" for m, t in args.runs if args.runs.count((m, t)) > 1})
    if repeated:
        raise UsageError(f"--runs lists {', '.join(repeated)} more than once; each run is a separate (billed) job")
    top = EVALUATION_SPEC["temperature"]["max"]
    too_hot = [f"{m}:{t:g}" for m, t in args.runs if t > top]
    if too_hot:
        raise UsageError(f"temperature over the service's maximum of {top:g}: {', '.join(too_hot)}")
    group = EVALUATION_SPEC["eval_group_size"]
    if not group["min"] <= args.group_size <= group["max"]:
        raise UsageError(f"--group-size must be between {group['min']} and {group['max']}, got {args.group_size}")
    if args.job and not any(model == TRAINED_ALIAS for model, _ in args.runs):
        raise UsageError("--job names the model 'trained' means, but --runs has no trained:<temperature> run")
    _quiet()
    res = resources.prepare()
    trained = args.job
    if any(model == TRAINED_ALIAS for model, _ in args.runs) and not trained:
        trained = training.latest_job("Completed")
        if trained is None:
            print("no completed training job to evaluate as 'trained': run `mtrl train` first (or pass --job NAME)")
            return 1
    from mtrl_course import progress

    rows = []
    original = res.reasoning_effort
    shown = progress.bar(total=len(args.runs), desc="evaluation jobs", unit="job")
    try:
        for model, temperature in args.runs:
            name = trained if model == TRAINED_ALIAS else model
            shown.set_postfix_str(f"{model}:{temperature:g}", refresh=True)
            with progress.ticking(shown):
                result = evaluation.evaluate(
                    res, name, temperature=temperature, reasoning_effort=args.effort, eval_group_size=args.group_size
                )
            progress.note(f"evaluation {model}:{temperature:g}: pass@1 {result['pass_at_1']:.1%}")
            shown.update()
            rows.append(
                {
                    "model": model,
                    "effort": args.effort,
                    "temperature": temperature,
                    "pass@1": f"{result['pass_at_1']:.1%}",
                    "mean reward": round(result["mean_reward"], 3),
                    "prefill tokens": result["prefill_tokens"],
                    "sample tokens": result["sample_tokens"],
                    "via": result["via"],
                    "job": result["job_name"],
                }
            )
    finally:
        shown.close()
        if res.runtime is not None and original and res.reasoning_effort != original:
            resources.set_reasoning_effort(res, original)
    if trained and any(model == TRAINED_ALIAS for model, _ in args.runs):
        print(f"trained = {trained}")
    _print_table(rows)
    return 0


# ----------------------------------------------------------------------------------------- jobs
def _jobs(args: argparse.Namespace) -> int:
    from mtrl_course import aws

    sagemaker = aws.session().client("sagemaker")
    rows = []
    for category in ("AgentRFT", "AgentRFTEvaluation"):
        page = sagemaker.list_jobs(
            JobCategory=category, SortBy="CreationTime", SortOrder="Descending", MaxResults=args.limit
        )
        for summary in page.get("JobSummaries", []):
            created, ended = summary.get("CreationTime"), summary.get("EndTime")
            rows.append(
                {
                    "category": category,
                    "name": summary["JobName"],
                    "status": summary["JobStatus"],
                    "secondary": summary.get("JobSecondaryStatus", ""),
                    "created": created.strftime("%Y-%m-%d %H:%M:%S") if created else "",
                    "minutes": round((ended - created).total_seconds() / 60, 1) if created and ended else "",
                }
            )
    if not rows:
        print("no jobs yet (mtrl train starts one)")
        return 0
    _print_table(sorted(rows, key=lambda r: r["created"], reverse=True))
    return 0


# ------------------------------------------------------------------------------------ notebooks
def _notebooks_run(args: argparse.Namespace) -> int:
    from mtrl_course.curriculum import executor

    return executor.run_command(
        args.notebooks or None,
        timeout=args.timeout,
        store=not args.no_store,
        record_times=args.record_times,
        store_figures=args.store_figures,
    )


def _notebooks_sync(args: argparse.Namespace) -> int:
    from mtrl_course.curriculum import executor

    return executor.sync_command(check=args.check)


# ------------------------------------------------------------------------------------------ lab
def _lab_attach(args: argparse.Namespace) -> int:
    from mtrl_course import instructor_run

    return instructor_run.command(args.run_or_job)


# -------------------------------------------------------------------------------------- cleanup
CLEANUP_CONFIRM_WORD = "yes"


def _cleanup(args: argparse.Namespace) -> int:
    """List this run's resources; delete them with --yes, or after a typed "yes" in a terminal.

    --dry-run differs from the default: it never asks, and it prints the deletion steps in the
    order `--yes` would take them, so a reviewer sees exactly what would happen.
    """
    import pandas as pd

    from mtrl_course import cleanup, naming

    if args.yes and args.dry_run:
        raise UsageError("--yes deletes and --dry-run deletes nothing: give one of them")
    found = cleanup.discover()
    with pd.option_context("display.width", 160, "display.max_colwidth", 70):
        print(f"run {naming.run_id()}: left alone on purpose:")
        print(cleanup.not_touched().to_string(index=False))
        print()
        if found.empty:
            print("nothing of this run's was found in this account and Region")
            return 0
        print(cleanup.as_table(found).to_string(index=False))
    count = int(found[cleanup.RESOURCE].notna().sum())
    if args.dry_run:
        print("\nwould run, in this order:")
        for step in cleanup.cli_commands(found):
            print(f"  {step}")
        print(f"\ndry run: nothing deleted. `mtrl cleanup --yes` deletes the {count} resource(s) above.")
        return 0
    if not args.yes and not _confirmed(
        f"\ndelete the {count} resource(s) above? type {CLEANUP_CONFIRM_WORD} to delete: "
    ):
        print(
            f"nothing deleted. Run `mtrl cleanup` in a terminal and answer {CLEANUP_CONFIRM_WORD}, or "
            f"`mtrl cleanup --yes`, to delete the {count} resource(s) above."
        )
        return 0
    print()
    cleanup.delete(found, confirm=True)
    left = cleanup.verify_empty()
    if left.empty:
        print("\nclean: nothing of the course's is left")
        return 0
    print("\nstill there:")
    print(cleanup.as_table(left).to_string(index=False))
    return 1


def _confirmed(question: str) -> bool:
    """True only when a person at a terminal types the confirmation word; a pipe never confirms."""
    if not sys.stdin.isatty():
        return False
    try:
        answer = input(question)
    except (EOFError, KeyboardInterrupt):
        print()
        return False
    return answer.strip().lower() == CLEANUP_CONFIRM_WORD


def _command(sub: Any, name: str, help_text: str, **kwargs: Any) -> argparse.ArgumentParser:
    """A subcommand whose own --help opens with the line the parent's list shows."""
    return sub.add_parser(name, help=help_text, description=kwargs.pop("description", help_text), **kwargs)


def build_parser() -> argparse.ArgumentParser:
    mode = os.environ.get("MTRL_MODE", "").strip() or "offline (not set)"
    parser = _Parser(
        prog="mtrl",
        formatter_class=_TopHelpFormatter,
        description="\n\n".join(__doc__.split("\n\n")[i] for i in (0, 3)),
        epilog=ENVIRONMENT_HELP.format(mode=mode),
    )
    parser.add_argument("--debug", action="store_true", help="show the Python traceback when a command fails")
    sub = parser.add_subparsers(dest="command", required=True)

    words = _command(sub, "words", "build or verify the SCOWL word data").add_subparsers(dest="action", required=True)
    p = _command(
        words,
        "build",
        "regenerate the word files from Debian's scowl lists (rewrites the committed files in "
        "agent_src/wordle_agent/data/)",
    )
    p.add_argument("--scowl-dir", type=_text("folder"), default="/usr/share/dict/scowl", help="the scowl word lists")
    p.set_defaults(func=_words_build)
    p = _command(words, "verify", "check the committed word files against their provenance")
    p.set_defaults(func=_words_verify)
    p = _command(words, "hash", "print the denylist line for a word (reads stdin if none given)")
    p.add_argument("words", nargs="*", help="words to hash (default: one per line from stdin)")
    p.set_defaults(func=_words_hash)

    ds = _command(sub, "dataset", "make, validate or export the training data").add_subparsers(
        dest="action", required=True
    )
    p = _command(
        ds,
        "make",
        "write the training and validation splits (without --out: rewrites the committed "
        "data/training-data.jsonl and data/validation-data.jsonl)",
    )
    p.add_argument("--train", type=_whole_number(1), default=640, help="training rows")
    p.add_argument("--val", type=_whole_number(1), default=128, help="validation rows")
    p.add_argument("--seed", type=_whole_number(0), default=42, help="random seed for the word draw")
    p.add_argument(
        "--out", type=_text("output folder"), default=None, help="output folder (default: the repository's data/)"
    )
    p.set_defaults(func=_dataset_make)
    p = _command(ds, "validate", "check dataset files the way the service will read them")
    p.add_argument("files", nargs="*", help="files to check (default: the committed pair)")
    p.add_argument("--pair", action="store_true", help="treat the two files given as training, then validation")
    p.add_argument(
        "--batch-size",
        type=_whole_number(1),
        default=None,
        help="require at least this many rows in each file (default: no minimum)",
    )
    p.add_argument(
        "--max-problems",
        type=_whole_number(1),
        default=20,
        help="print at most this many problems, then count the rest",
    )
    p.set_defaults(func=_dataset_validate)
    p = _command(ds, "export", "export the committed datasets to another format")
    p.add_argument("--format", choices=["jsonl", "parquet", "csv", "json"], default="jsonl", help="file format")
    p.add_argument("--out", type=_text("output folder"), default="build/datasets", help="output folder")
    p.set_defaults(func=_dataset_export)

    p = _command(
        sub,
        "play",
        "play Wordle in the terminal, or a batch with the reference solver",
        description="Play Wordle in the terminal against the course's game (the rules are printed "
        "at the start; Ctrl-D gives up, Ctrl-C quits), or play a batch of words with the reference "
        "solver.",
    )
    p.add_argument(
        "--word", type=_secret_word, help="the secret word, one of the game's answer words (default: a random one)"
    )
    p.add_argument("--batch", action="store_true", help="play a batch with the reference solver instead")
    p.add_argument(
        "--split", choices=["validation", "train"], default=None, help="with --batch: whose words (default: validation)"
    )
    p.add_argument(
        "--limit", type=_whole_number(1), default=None, help="with --batch: play only this many words (default: all)"
    )
    p.set_defaults(func=_play)

    p = _command(sub, "course", "the course's main job, offline (what `make course` runs)")
    p.add_argument(
        "--limit",
        type=_whole_number(1),
        default=None,
        help="play only this many held-out games (default: the whole validation split)",
    )
    p.add_argument("--no-train", action="store_true", help="skip stage 4 (offline training and evaluation)")
    p.set_defaults(func=_course)

    agent = _command(sub, "agent", "the agent: AgentCore bundle, a local runtime, the smoke test").add_subparsers(
        dest="action", required=True
    )
    p = _command(agent, "bundle", "write the code bundle `agentcore deploy` uploads")
    p.add_argument("--out", default=None, help="output folder (default: agentcore.json's codeLocation)")
    p.set_defaults(func=_agent_bundle)
    p = _command(agent, "serve", "serve the agent app on loopback in the foreground (Ctrl-C stops it)")
    p.add_argument(
        "--effort",
        choices=["low", "medium", "high"],
        default=None,
        help="the agent's REASONING_EFFORT (default: agentcore.json's)",
    )
    p.add_argument(
        "--seconds", type=_seconds, default=None, help="stop after this many seconds (default: run until Ctrl-C)"
    )
    p.set_defaults(func=_agent_serve)
    p = _command(agent, "smoke", "invoke the runtime once with the service-shaped payload and diagnose the answer")
    p.add_argument(
        "--runtime-arn",
        type=_ARN,
        default=None,
        help="live: the runtime to invoke (default: the one deployed under the project's name; offline: a local one)",
    )
    p.add_argument("--account", type=_account, default=None, help="account ID for the fake job ARN (default: your own)")
    p.set_defaults(func=_agent_smoke)

    p = _command(
        sub,
        "train",
        "launch a training job (offline: the stand-in's run) or attach to one",
        description="Launch a training job and wait for it (offline: the stand-in policy's run on the "
        "offline backend; live: a billed job, started only with --yes), or report on an existing one. "
        "While it runs, a terminal shows a step bar with the latest reward and validation pass@1, "
        "and one line per step; the tables at the end are printed either way.",
    )
    p.add_argument("--runtime-arn", type=_ARN, default=None, help="AgentCore runtime ARN (default: the course's)")
    p.add_argument("--role-arn", type=_ARN, default=None, help="training job role ARN (default: the course's)")
    p.add_argument(
        "--train-uri", type=_S3_URI, default=None, help="s3:// URI of the training dataset (default: the course's)"
    )
    p.add_argument(
        "--val-uri", type=_S3_URI, default=None, help="s3:// URI of the validation dataset (default: the course's)"
    )
    p.add_argument("--mlflow-app-arn", type=_ARN, default=None, help="MLflow app ARN (default: the course's)")
    p.add_argument(
        "--output-uri", type=_S3_URI, default=None, help="s3:// output path (default: under the course prefix)"
    )
    # 0 is refused, not honoured: the service's max_steps range starts at 1, and 0 used to be
    # read as "not given", which launched the default (live: the 100-step walkthrough) job.
    p.add_argument(
        "--max-steps",
        type=_whole_number(1, why=" (the service trains at least one step)"),
        default=None,
        help="training steps, at least 1 (default: the course's recipe for the mode)",
    )
    p.add_argument("--yes", action="store_true", help="live: really start the job (it bills tokens for hours)")
    p.add_argument(
        "--no-wait",
        action="store_true",
        help="return once the job is created (offline: it runs on in a detached process)",
    )
    p.add_argument(
        "--attach",
        metavar="JOB_NAME",
        type=_text("job name"),
        default=None,
        help="report on an existing job instead of starting one (default: start one)",
    )
    p.add_argument("--wait", action="store_true", help="with --attach: wait for the job to end first")
    p.set_defaults(func=_train)

    p = _command(sub, "evaluate", "evaluation jobs, one at a time: base and trained at chosen temperatures")
    p.add_argument(
        "--runs",
        nargs="+",
        type=_run_spec,
        required=True,
        metavar="MODEL:TEMPERATURE",
        help="required; e.g. base:0 base:1.0 trained:1.0 (trained = --job, by default the newest completed "
        "training job)",
    )
    p.add_argument("--effort", choices=["low", "medium", "high"], default="low", help="the runtime's REASONING_EFFORT")
    p.add_argument(
        "--job",
        type=_text("job name"),
        default=None,
        help="the training job whose model 'trained' means (default: the newest completed one)",
    )
    p.add_argument("--group-size", type=_whole_number(1), default=1, help="rollouts per word (eval_group_size)")
    p.set_defaults(func=_evaluate)

    p = _command(sub, "jobs", "list training and evaluation jobs, newest first")
    p.add_argument(
        "--limit",
        type=_whole_number(1, JOB_LIST_MAX),
        default=JOB_LIST_LIMIT,
        help=f"at most this many of each category (1-{JOB_LIST_MAX})",
    )
    p.set_defaults(func=_jobs)

    p = _command(sub, "smoke", SMOKE_HELP, description=SMOKE_DESCRIPTION)
    p.add_argument("--yes-i-will-pay", action="store_true", help="live: go on after the estimate (what follows bills)")
    for dimension in ("prefill", "sample", "train"):
        p.add_argument(
            f"--price-{dimension}",
            type=float,
            metavar="USD",
            help=f"{dimension} tokens, USD per million (default: none, no dollars)",
        )
    p.add_argument("--report-dir", default=None, help="where the report goes (default: .state/first-run/)")
    p.set_defaults(func=_smoke)

    p = _command(
        sub,
        "cleanup",
        "find everything this run of the course created (by tag and prefix) and delete it on confirmation",
        description="Find everything this run of the course created (by tag and prefix), list it with "
        "what still bills, and delete it on confirmation. Three ways to run it: with no flag it lists, "
        "then asks 'delete? (type yes)' when run in a terminal and deletes nothing otherwise; "
        "--dry-run lists and shows the deletion steps in order, never asks and deletes nothing; "
        "--yes deletes without asking (for scripts).",
    )
    # Not an argparse mutually exclusive group: its error names neither flag's meaning.
    p.add_argument("--yes", action="store_true", help="delete what was found without asking")
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="list what would be deleted and the steps, in order; never ask, delete nothing",
    )
    p.set_defaults(func=_cleanup)

    lab_actions = _command(sub, "lab", "the lab path: use an instructor's run").add_subparsers(
        dest="action", required=True
    )
    p = _command(
        lab_actions, "attach", "find an instructor's run by run id or job name; notebooks 06 and 07 then use it"
    )
    p.add_argument("run_or_job", metavar="RUN_ID_OR_JOB_NAME", help="the instructor's run id or training job name")
    p.set_defaults(func=_lab_attach)

    nbs = _command(sub, "notebooks", "execute the notebooks offline, or sync their banners").add_subparsers(
        dest="action", required=True
    )
    p = _command(
        nbs,
        "run",
        "execute notebooks in fresh offline kernels and store their outputs (rewrites the committed "
        "notebooks unless --no-store)",
    )
    p.add_argument(
        "notebooks", nargs="*", help="numbers (05), file names or _template (default: all, then the template)"
    )
    p.add_argument("--timeout", type=_whole_number(1), default=600, help="seconds allowed per cell")
    p.add_argument(
        "--no-store",
        action="store_true",
        help="only check that they run; leave the files alone (figures go to build/figures/, git-ignored)",
    )
    p.add_argument(
        "--store-figures",
        action="store_true",
        help="with --no-store: write the figures into the committed figures/ all the same (what `make figures` runs)",
    )
    p.add_argument(
        "--record-times",
        action="store_true",
        help="maintainers: write each notebook's measured time into the catalog's offline_seconds "
        "(catalog.py), then sync the banners and README table",
    )
    p.set_defaults(func=_notebooks_run)
    p = _command(nbs, "sync", "rewrite banners, next cells and the README table from the catalog")
    p.add_argument("--check", action="store_true", help="only report what is out of date (exit 1 if anything is)")
    p.set_defaults(func=_notebooks_sync)
    return parser


def _account(text: str) -> str:
    if not (len(text) == 12 and text.isdigit()):
        raise argparse.ArgumentTypeError(f"{text!r} is not a 12-digit AWS account ID")
    return text


def _explain(error: BaseException) -> str:
    """One line for a failure: what happened and, where the cause is known, what to do."""
    from botocore.exceptions import ClientError, NoCredentialsError, NoRegionError

    name = type(error).__name__
    if isinstance(error, NoCredentialsError):
        return (
            "no AWS credentials: configure a profile (aws configure / aws sso login) or set "
            "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY; to run without AWS, unset MTRL_MODE"
        )
    if isinstance(error, NoRegionError):
        from mtrl_course.config import REGION_ADVICE

        return f"no AWS Region: {REGION_ADVICE}"
    if isinstance(error, ClientError):
        details = error.response.get("Error", {})
        return f"AWS refused {error.operation_name}: {details.get('Code', '?')}: {details.get('Message', '')}"
    # str(KeyError("...")) is the message's repr, quotes included: use the message itself.
    message = error.args[0] if isinstance(error, KeyError) and len(error.args) == 1 else error
    text = " ".join(str(message).split()) or name
    if isinstance(error, (RuntimeError, ValueError, LookupError, OSError, PermissionError)):
        return text
    return f"{name}: {text}"


def main(argv: Sequence[str] | None = None) -> int:
    """Run one `mtrl` command; returns its exit status (argparse exits 2 itself on a bad argument)."""
    # A lone surrogate or a stray escape in a file name or dataset value must not kill the
    # command while it prints the problem that names it.
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    args.argv = argv
    command = " ".join(["mtrl", args.command] + ([args.action] if getattr(args, "action", None) else []))
    try:
        from mtrl_course import config  # here: a bad MTRL_MODE is then one line, as for any command

        config.tune_garbage_collector()
        return int(args.func(args) or 0)
    except UsageError as error:
        if args.debug:
            raise
        print(f"{command}: error: {error} (see `{command} --help`)", file=sys.stderr)
        return USAGE_EXIT
    except KeyboardInterrupt:
        print(f"{command}: interrupted", file=sys.stderr)
        return INTERRUPTED_EXIT
    except Exception as error:  # the one place every failure is turned into a sentence
        if args.debug or os.environ.get("MTRL_DEBUG"):
            raise
        print(f"{command}: error: {_explain(error)} (`mtrl --debug ...` shows the traceback)", file=sys.stderr)
        return FAILURE_EXIT


if __name__ == "__main__":
    sys.exit(main())
