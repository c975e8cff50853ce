"""Multi-seed runs of the composite-reward lesson (notebook 11), with provenance.

Trains the stand-in coder under every reward design in `coding_agent.trainer.variants()` for
several seeds and writes experiments/results/composite_rewards.json: the command, the seeds, the
git commit, the sandbox isolation of the machine, the time taken, and per variant and seed the
per-step history (behaviour rates and each component's mean, within-group std and advantage
share), the components flagged dead at the end and when a saturated term was down-weighted.
Notebook 11 reads the file and re-runs one seed live; tests/test_coding_trainer.py re-runs a
cheap configuration and checks it moves in the stored direction.

    python experiments/composite_rewards.py                # 5 seeds, every variant
    python experiments/composite_rewards.py --seeds 0 1    # fewer seeds
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "agent_src"))

from tqdm import tqdm  # noqa: E402

from coding_agent import env, sandbox, tasks, trainer  # noqa: E402

RESULTS = REPO / "experiments" / "results" / "composite_rewards.json"
DEFAULT_SEEDS = (0, 1, 2, 3, 4)
KEPT = (
    "asking_rate",
    "guess_rate",
    "commit_rate",
    "correctness",
    "loop_rate",
    "turns",
    "reward",
    "reward_within_std",
    "zero_adv_groups",
    "grad_norm",
)
PER_COMPONENT = ("mean", "within_std", "adv_share", "weight")
DIGITS = 4


def git_commit() -> str:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "agent_src/coding_agent", "experiments/composite_rewards.py"],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        return out + ("+uncommitted-changes" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def compact(result: trainer.TrainResult) -> dict:
    keys = [*KEPT, *(f"{name}/{part}" for name in result.names for part in PER_COMPONENT)]
    return {
        "history": {key: [round(float(row[key]), DIGITS) for row in result.history] for key in keys},
        "dead_at_end": result.dead(),
        "downweighted_at": result.downweighted_at,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=list(DEFAULT_SEEDS))
    parser.add_argument("--variants", nargs="+", default=None, help="names from coding_agent.trainer.variants()")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    configs = trainer.variants()
    names = args.variants or list(configs)
    unknown = set(names) - set(configs)
    if unknown:
        parser.error(f"unknown variants {sorted(unknown)}; known: {sorted(configs)}")
    started = time.monotonic()
    # Judge every submission once up front (both harness entry points), so training hits the cache.
    judged = env.warm_cache(tasks.all_tasks())
    judged += env.warm_cache(tasks.all_tasks(), configs["dead_correctness"].env)
    judged += env.warm_cache(tasks.all_tasks(), configs["gated_efficiency_hard"].env)
    warm_seconds = time.monotonic() - started
    runs: dict[str, dict[str, dict]] = {name: {} for name in names}
    jobs = [(name, seed) for name in names for seed in args.seeds]
    for name, seed in tqdm(jobs, desc="training runs", unit="run"):
        runs[name][str(seed)] = compact(trainer.train(trainer.with_seed(configs[name], seed)))
    layers = sandbox.isolation()
    payload = {
        "command": "python "
        + shlex.join(["experiments/composite_rewards.py", *(argv if argv is not None else sys.argv[1:])]),
        "git_commit": git_commit(),
        "seeds": args.seeds,
        "tasks": len(tasks.all_tasks()),
        "train_config": {k: v for k, v in trainer.TrainConfig().__dict__.items() if isinstance(v, (int, float))},
        "sandbox_isolation": {row["layer"]: row["active"] for row in layers.rows()},
        "submissions_judged_before_training": judged,
        "cache_warm_seconds": round(warm_seconds, 1),
        "total_seconds": round(time.monotonic() - started, 1),
        "variants": runs,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(payload, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(
        f"wrote {args.out.relative_to(REPO) if args.out.is_relative_to(REPO) else args.out} in {payload['total_seconds']} s"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
