"""What went wrong, measured over seeds on the stand-in (notebook 10's experiments).

Every number here is the offline stand-in policy's (`mtrl_course.local.stand_in_policy`), never a real
model's; the walkthrough's own figures are cited in BRIEF.md section 7 and only its *directions*
are checked here. Three experiments, all through the real pieces (`mtrl_course.local.failure_experiments`):

1. Tool calls drifting into text: the default offline run (notebook 05's: 32 prompts x 8
   rollouts, 10 steps) at learning rate 1e-3 with raw-text recovery off and on, and at 1e-4
   (recovery on, the agent's default); per step the training reward, its spread, the
   zero-advantage groups, the raw-text rate and the adapter's norm, then the final adapter
   evaluated at temperature 1 (deployed effort low) on the held-out words.
2. Checkpoints at serving settings: the default run (1e-5) saves its adapter after every step;
   each checkpoint plays the held-out words at temperature 1 (deployed effort low), beside the
   run's own validation curve at temperature 0. The same run counts its no-play games (no valid
   guess: the -1.5 floor).
3. Bearer tokens under concurrency: 32 concurrent rollouts sign their model calls three ways while
   the credentials rotate mid-run (`failure_experiments.token_strategies`; the credential provider with a
   capacity cap is a model, labelled so). Thread timing varies, so it is repeated once per seed.

Run:

    python experiments/failure_modes.py --seeds 1 2 3       # writes results/failure_modes.json
    python experiments/failure_modes.py --seeds 1 --no-write --only lr_1e-3_recovery_off --steps 2

    python experiments/failure_modes.py --seeds 1 2 3 --plateau   # adds the plateau's curves

4. The plateau's curves (`--plateau`, stored under "plateau" with its own command and commit):
   group size 16 and 32 and the curriculum of experiments/standin_lessons.py point 5, at the same
   equal episode budget, run again with validation every 2 steps and the training reward per step.

`--resume` reuses the seeds an interrupted run finished. tests/test_failure_experiments.py re-runs the
first two steps of one configuration and checks them against the stored result.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

# The offline state (MLflow store, adapters) goes to a scratch folder: the experiment must never
# read or write the learner's .state.
if "MTRL_STATE_DIR" not in os.environ:
    os.environ["MTRL_STATE_DIR"] = tempfile.mkdtemp(prefix="failure-modes-")

import numpy as np  # noqa: E402
from tqdm import tqdm  # noqa: E402

from mtrl_course.local import failure_experiments  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "experiments" / "results" / "failure_modes.json"
STEP_METRICS = (
    "rollout/reward/mean",
    "rollout/reward/std",
    "analysis/zero_adv_groups",
    "standin/format/raw_text_rate",
    "standin/adapter/norm",
)
# name -> (learning rate, raw-text recovery)
LR_CONFIGS = {
    "lr_1e-3_recovery_off": (1e-3, False),
    "lr_1e-3_recovery_on": (1e-3, True),
    "lr_1e-4_recovery_on": (1e-4, True),
}
EVAL_WORDS = 128  # the held-out words, once each at temperature 1
# The plateau's next steps at an equal episode budget (experiments/standin_lessons.py point 5),
# run again with validation every 2 steps so that they have curves: name -> overrides.
PLATEAU = {
    "group_16": {"group_size": 16, "global_batch_size": 16},
    "group_32": {"group_size": 32, "global_batch_size": 8},
    "curriculum": {},
}
PLATEAU_METRICS = ("val/reward/pass_at_1", "rollout/reward/mean")


def _series(values: dict[int, float]) -> dict[str, float]:
    return {str(k): float(v) for k, v in sorted(values.items())}


def run_lr(name: str, seed: int, state: Path, steps: int, evaluate: bool = True) -> dict[str, Any]:
    """One learning-rate configuration: per-step metrics and the final adapter at serving settings."""
    rate, recovery = LR_CONFIGS[name]
    run = failure_experiments.run_training(
        seed,
        state_dir=state,
        hyperparameters={"learning_rate": rate, "val_every": 0, "max_steps": steps},
        recovery=recovery,
        metric_keys=STEP_METRICS,
    )
    if run.job.failure:
        raise RuntimeError(f"{name} seed {seed} failed: {run.job.failure}")
    out: dict[str, Any] = {"seconds": run.seconds, "steps": {k: _series(v) for k, v in run.metrics.items()}}
    if evaluate and run.adapter is not None:
        with failure_experiments.raw_text_recovery(recovery):
            games = failure_experiments.play(
                run.adapter, failure_experiments.rows("validation")[:EVAL_WORDS], seed=seed
            )
        out["served_T1"] = failure_experiments.summarize(games)
    return out


def run_checkpoints(seed: int, state: Path, progress: tqdm) -> dict[str, Any]:
    """The default run with a checkpoint per step, each evaluated at temperature 1; no-play games."""
    run = failure_experiments.run_training(
        seed, state_dir=state, checkpoint_every=1, metric_keys=("val/reward/pass_at_1",), collect_games=True
    )
    if run.job.failure:
        raise RuntimeError(f"default run seed {seed} failed: {run.job.failure}")
    validation = {json.loads(t)["answer"].upper() for t in failure_experiments.rows("validation")}
    train_games = [g for g in run.games if g.answer.upper() not in validation]
    val_games = [g for g in run.games if g.answer.upper() in validation]
    served = failure_experiments.evaluate_checkpoints(
        run.checkpoints, failure_experiments.rows("validation")[:EVAL_WORDS], seed=seed
    )
    progress.set_postfix_str(f"seed {seed}: checkpoints evaluated")
    return {
        "seconds": run.seconds,
        "val_pass_at_1_T0": _series(run.metrics["val/reward/pass_at_1"]),
        "served_T1": {str(step): s for step, s in served.items()},
        "no_play": {
            "train_games": len(train_games),
            "train_no_play": failure_experiments.no_play_count(train_games),
            "val_games": len(val_games),
            "val_no_play": failure_experiments.no_play_count(val_games),
        },
    }


def run_seed(seed: int, steps: int, only: Sequence[str] | None, progress: tqdm) -> dict[str, Any]:
    state = Path(os.environ["MTRL_STATE_DIR"]) / f"seed{seed}"
    out: dict[str, Any] = {"seed": seed, "lr": {}}
    for name in LR_CONFIGS:
        if only and name not in only:
            continue
        out["lr"][name] = run_lr(name, seed, state, steps, evaluate=not only)
        progress.set_postfix_str(f"seed {seed}: {name}")
        progress.update(1)
    if only:
        return out
    out["checkpoints"] = run_checkpoints(seed, state, progress)
    progress.update(1)
    out["tokens"] = [r.row() for r in failure_experiments.token_strategies()]
    progress.update(1)
    return out


STEPS_PER_SEED = len(LR_CONFIGS) + 2


def run_plateau(seed: int, state: Path, progress: tqdm) -> dict[str, Any]:
    """Group 16 and 32 and the curriculum (standin_lessons' settings), with their curves."""
    sys.path.insert(0, str(ROOT / "experiments"))
    try:
        import standin_lessons
    finally:
        sys.path.remove(str(ROOT / "experiments"))
    out: dict[str, Any] = {"seed": seed}
    for name, overrides in PLATEAU.items():
        rows = (
            standin_lessons.curriculum_rows(failure_experiments.rows("training"), seed)
            if name == "curriculum"
            else None
        )
        run = failure_experiments.run_training(
            seed, state_dir=state, hyperparameters=overrides, train_rows=rows, metric_keys=PLATEAU_METRICS
        )
        if run.job.failure:
            raise RuntimeError(f"{name} seed {seed} failed: {run.job.failure}")
        out[name] = {"seconds": run.seconds, **{key: _series(run.metrics[key]) for key in PLATEAU_METRICS}}
        progress.set_postfix_str(f"seed {seed}: {name}")
        progress.update(1)
    return out


def summary(values: Sequence[float]) -> dict[str, Any]:
    v = np.asarray(values, dtype=float)
    sd = float(v.std(ddof=1)) if len(v) > 1 else float("nan")
    return {
        "mean": float(v.mean()),
        "sd": sd,
        "se": sd / np.sqrt(len(v)) if len(v) > 1 else float("nan"),
        "n": int(len(v)),
        "values": [float(x) for x in v],
    }


def statistics(per_seed: list[dict]) -> dict[str, dict[str, Any]]:
    """Means and spreads across seeds of what the notebook's closing table reports."""
    stats: dict[str, dict[str, Any]] = {}
    for name in LR_CONFIGS:
        runs = [s["lr"][name] for s in per_seed]
        last = str(max(int(k) for k in runs[0]["steps"]["rollout/reward/mean"]))
        stats[f"{name}: final training reward"] = summary([r["steps"]["rollout/reward/mean"][last] for r in runs])
        stats[f"{name}: final zero-advantage groups (of 32)"] = summary(
            [r["steps"]["analysis/zero_adv_groups"][last] for r in runs]
        )
        stats[f"{name}: final raw-text rate"] = summary(
            [r["steps"]["standin/format/raw_text_rate"][last] for r in runs]
        )
        norms = [r["steps"]["standin/adapter/norm"] for r in runs]
        stats[f"{name}: adapter norm change, steps 2 to last"] = summary([abs(n[last] - n["2"]) for n in norms])
        stats[f"{name}: served solve rate (T1)"] = summary([r["served_T1"]["solve_rate"] for r in runs])
    ck = [s["checkpoints"] for s in per_seed]
    for step in ck[0]["served_T1"]:
        stats[f"checkpoint step {step}: served solve rate (T1)"] = summary(
            [c["served_T1"][step]["solve_rate"] for c in ck]
        )
        stats[f"checkpoint step {step}: served mean reward (T1)"] = summary(
            [c["served_T1"][step]["mean_reward"] for c in ck]
        )
    for step in ck[0]["val_pass_at_1_T0"]:
        stats[f"validation step {step}: pass@1 (T0)"] = summary([c["val_pass_at_1_T0"][step] for c in ck])
    stats["no-play games per 1,000 training rollouts"] = summary(
        [1000 * c["no_play"]["train_no_play"] / c["no_play"]["train_games"] for c in ck]
    )
    for i, strategy in enumerate(failure_experiments.STRATEGIES):
        for key in (
            "signatures",
            "provider_resolutions",
            "starved",
            "rejected_403",
            "failed_rollouts",
            "latency_ms_p50",
            "latency_ms_p95",
        ):
            stats[f"tokens {strategy}: {key}"] = summary([s["tokens"][i][key] for s in per_seed])
    return stats


def table(stats: dict[str, dict[str, Any]]) -> str:
    width = max(len(k) for k in stats)
    lines = [f"{'statistic (stand-in policy)':<{width}}  {'mean':>9} {'sd':>8}", "-" * (width + 20)]
    lines += [f"{k:<{width}}  {s['mean']:>9.3f} {s['sd']:>8.3f}" for k, s in stats.items()]
    return "\n".join(lines)


def _git_commit() -> str:
    try:
        return subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument(
        "--steps",
        type=int,
        default=failure_experiments.DEFAULT_RUN["max_steps"],
        help="steps of the learning-rate runs",
    )
    parser.add_argument(
        "--only",
        nargs="+",
        choices=sorted(LR_CONFIGS),
        help="run only these learning-rate configurations (no evaluation, checkpoints or tokens)",
    )
    parser.add_argument(
        "--plateau",
        action="store_true",
        help="run only the plateau's curves (group 16, 32, curriculum) and add them to the stored result",
    )
    parser.add_argument("--output", type=Path, default=RESULTS)
    parser.add_argument("--no-write", action="store_true", help="print the result only")
    parser.add_argument("--resume", action="store_true", help="reuse the seeds an interrupted run finished")
    args = parser.parse_args(argv)
    if not args.no_write and (len(args.seeds) < 3 or args.only):
        parser.error("the stored results need at least 3 seeds and every configuration")
    from mtrl_course.aws import offline_backend

    offline_backend()
    commit = _git_commit()  # the code that runs, even if commits land while it does
    started = time.monotonic()
    if args.plateau:
        return _plateau_main(args, commit, started)
    partial = args.output.with_suffix(".partial.json")
    done: dict[int, dict] = {}
    if args.resume and partial.is_file():
        done = {int(s["seed"]): s for s in json.loads(partial.read_text())["per_seed"] if int(s["seed"]) in args.seeds}
    per_seed = []
    total = (len(args.only) if args.only else STEPS_PER_SEED) * len(args.seeds)
    with tqdm(total=total, desc="failure modes", file=sys.stderr) as progress:
        for seed in args.seeds:
            if seed in done:
                per_seed.append(done[seed])
                progress.update(STEPS_PER_SEED)
                continue
            per_seed.append(run_seed(seed, args.steps, args.only, progress))
            if not args.no_write:
                partial.parent.mkdir(parents=True, exist_ok=True)
                partial.write_text(json.dumps({"per_seed": per_seed}) + "\n")
    result: dict[str, Any] = {
        "label": "stand-in policy (offline); not a real model's numbers. The credential provider with a capacity cap is a model.",
        "command": "python experiments/failure_modes.py " + " ".join(sys.argv[1:] if argv is None else argv),
        "seeds": list(args.seeds),
        "lr_steps": args.steps,
        "eval_words": EVAL_WORDS,
        "git_commit": commit,
        "seconds": time.monotonic() - started,
        "per_seed": per_seed,
    }
    if not args.only:
        result["statistics"] = statistics(per_seed)
        print(table(result["statistics"]))
    if not args.no_write:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(json.dumps(result, indent=1) + "\n")
        print(f"wrote {args.output}")
        partial.unlink(missing_ok=True)
    return result


def _plateau_main(args: argparse.Namespace, commit: str, started: float) -> dict[str, Any]:
    per_seed = []
    with tqdm(total=len(PLATEAU) * len(args.seeds), desc="plateau curves", file=sys.stderr) as progress:
        for seed in args.seeds:
            per_seed.append(run_plateau(seed, Path(os.environ["MTRL_STATE_DIR"]) / f"plateau{seed}", progress))
    plateau = {
        "command": "python experiments/failure_modes.py " + " ".join(sys.argv[1:]),
        "seeds": list(args.seeds),
        "git_commit": commit,
        "seconds": time.monotonic() - started,
        "per_seed": per_seed,
    }
    if not args.no_write:
        result = json.loads(args.output.read_text())
        result["plateau"] = plateau
        args.output.write_text(json.dumps(result, indent=1) + "\n")
        print(f"added the plateau curves to {args.output}")
    return plateau


if __name__ == "__main__":
    main()
