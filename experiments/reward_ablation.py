"""The reward ablation of notebook 09, trained for real: outcome-only, tiered and legacy rewards.

Every number here is the offline stand-in policy's (`mtrl_course.local.stand_in_policy`), never a real
model's. Each arm trains the base stand-in from scratch through the real offline runner (fast
lane, real rollout handler, game and GRPO) with one reward variant (`RunnerOptions.reward`), at
the same seed and budget as the other arms: STEPS steps of BATCH prompts x GROUP rollouts, no
validation during the run. Every training game is observed as it finishes, so each step's
behaviour is measured on the games the policy actually trained on, and all three rewards are
computed for the same games (the zero-advantage share of each design over the same groups).
After training, the adapter plays every validation word EVAL_ROLLOUTS times at temperature 1 at
the deployed effort.

    python experiments/reward_ablation.py --seeds 1 2 3          # writes results/reward_ablation.json
    python experiments/reward_ablation.py --seeds 1 --steps 3 --no-write   # a quick look

Per arm the JSON holds the per-step statistics (`reward_designs.step_stats`), the reward the runner
logged (`rollout/reward/mean`, in the arm's own reward's units), the evaluation, and seconds.
The tiered arm's final adapter of the first seed is saved next to the JSON for the notebook.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

if "MTRL_STATE_DIR" not in os.environ:
    os.environ["MTRL_STATE_DIR"] = tempfile.mkdtemp(prefix="reward-ablation-")

import numpy as np  # noqa: E402
from tqdm import tqdm  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import standin_lessons as lessons  # noqa: E402

from mtrl_course import rewards  # noqa: E402
from mtrl_course import reward_designs  # noqa: E402
from mtrl_course.local.stand_in_policy import Adapter  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "experiments" / "results" / "reward_ablation.json"
ADAPTER = ROOT / "experiments" / "results" / "reward_ablation_tiered_adapter.json"
COMPARED = (rewards.OUTCOME_ONLY, rewards.TIERED, rewards.LEGACY)
STEPS = 14
BATCH = 16
GROUP = 8
EVAL_ROLLOUTS = 2
EVAL_WORDS = 128


def train_arm(
    lab: lessons.Lab,
    seed: int,
    reward: str,
    steps: int = STEPS,
    observer: Callable[[str, Any], None] | None = None,
) -> tuple[dict[str, Any], Adapter]:
    """One arm's training run: per-step statistics from its own games, and its adapter.

    `observer(task_id, game)`, if given, is handed every game of the run too (notebook 09 reads them).
    """
    observed: list[tuple[str, Any]] = []

    def keep(task_id: str, game: Any) -> None:
        observed.append((task_id, game))
        if observer is not None:
            observer(task_id, game)

    adapter, job, seconds = lab.train(
        seed, reward=reward, global_batch_size=BATCH, group_size=GROUP, max_steps=steps, val_every=0, observer=keep
    )
    stats = reward_designs.step_stats([g for _, g in observed], [t for t, _ in observed], BATCH * GROUP, GROUP)
    logged = job.metric("rollout/reward/mean")
    return {
        "steps": stats,
        "train_reward_mean": [logged[k] for k in sorted(logged)],
        "train_seconds": seconds,
    }, adapter


def evaluate_arm(adapter: Adapter, seed: int, words: int = EVAL_WORDS) -> dict[str, float]:
    """The adapter at temperature 1, deployed effort, on the validation words."""
    e = lessons.evaluate(
        adapter, seed, temperature=1.0, effort=lessons.DEPLOYED_EFFORT, words=words, rollouts=EVAL_ROLLOUTS
    )
    lost = [not g["solved"] and g["guesses"] > 0 for g in e.per_game]
    return {
        "solve_rate": e.solve_rate,
        "lost_rate": float(np.mean(lost)),
        "guesses_per_solve": e.guesses_per_solve,
        "solved_within_3": e.solved_within_3,
        "mean_tiered_reward": e.mean_reward,
        "games": e.games,
    }


def summary(per_seed: dict[str, dict[str, Any]]) -> dict[str, dict[str, dict[str, float]]]:
    """Mean and seed spread of each arm's evaluation and of its last training step."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for reward in COMPARED:
        arms = [per_seed[s][reward] for s in per_seed]
        table = {f"eval {k}": reward_designs.seed_spread([a["eval"][k] for a in arms]) for k in arms[0]["eval"]}
        for key in ("solve_rate", "lost_rate", "guesses_per_solve", "zero_adv_outcome_only", "zero_adv_tiered"):
            table[f"last step {key}"] = reward_designs.seed_spread([a["steps"][-1][key] for a in arms])
        out[reward] = table
    return out


def _git_commit() -> str:
    return lessons._git_commit()


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--steps", type=int, default=STEPS)
    parser.add_argument("--output", type=Path, default=RESULTS)
    parser.add_argument("--no-write", action="store_true", help="print the summary only")
    parser.add_argument("--resume", action="store_true", help="reuse the arms an interrupted run finished")
    args = parser.parse_args(argv)
    if not args.no_write and (len(args.seeds) < 3 or args.steps != STEPS):
        parser.error(f"the stored results need at least 3 seeds and --steps {STEPS}")
    lab = lessons.Lab()
    started = time.monotonic()
    partial = args.output.with_suffix(".partial.json")
    per_seed: dict[str, dict[str, Any]] = {}
    if args.resume and partial.is_file():
        per_seed = {s: arms for s, arms in json.loads(partial.read_text()).items() if int(s) in args.seeds}
    with tqdm(total=len(args.seeds) * len(COMPARED), desc="reward ablation", file=sys.stderr) as progress:
        for seed in args.seeds:
            for reward in COMPARED:
                progress.set_postfix_str(f"seed {seed}: {reward}")
                if reward in per_seed.get(str(seed), {}):
                    progress.update(1)
                    continue
                arm, adapter = train_arm(lab, seed, reward, args.steps)
                arm["eval"] = evaluate_arm(adapter, seed)
                per_seed.setdefault(str(seed), {})[reward] = arm
                if not args.no_write:
                    if reward == rewards.TIERED and seed == args.seeds[0]:
                        adapter.save(ADAPTER)
                    partial.write_text(json.dumps(per_seed) + "\n")
                progress.update(1)
    result = {
        "label": "stand-in policy (offline); not a real model's numbers",
        "command": "python experiments/reward_ablation.py " + " ".join(sys.argv[1:] if argv is None else argv),
        "seeds": list(args.seeds),
        "config": {
            "steps": args.steps,
            "global_batch_size": BATCH,
            "group_size": GROUP,
            "evaluation": {"words": EVAL_WORDS, "rollouts_per_word": EVAL_ROLLOUTS, "temperature": 1.0},
            "rewards": list(COMPARED),
        },
        "git_commit": _git_commit(),
        "seconds": time.monotonic() - started,
        "summary": summary(per_seed),
        "per_seed": per_seed,
    }
    for reward, table in result["summary"].items():
        print(reward, {k: round(v["mean"], 3) for k, v in table.items()})
    if not args.no_write:
        args.output.write_text(json.dumps(result, indent=1) + "\n")
        print(f"wrote {args.output}")
        partial.unlink(missing_ok=True)
    return result


if __name__ == "__main__":
    main()
