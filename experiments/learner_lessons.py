"""The course's lessons measured on the learner (the tiny language model), over seeds.

Notebooks 05 to 10 teach their lessons on the stand-in policy (experiments/standin_lessons.py and
experiments/failure_modes.py hold its numbers). This script asks the same questions of the
learner (`mtrl_course.learner`, the committed stage-6 base), trained with the same token-level
GRPO as experiments/learner_grpo.py `--trainer batch` (the batched player, which plays the agent's
rules; see `learner_grpo.train_batch`). By default at notebook 05's budget: 10 steps of 256 games
(half an epoch of the 640 training words); `--steps` and `--pool all` (every answer word outside
validation, `learner_grpo.word_pool`) give the recipe search's setting. Validation at temperature
0 and kept checkpoints come at fifths of the run (every 2 of 10 steps, every 8 of 40). Longer runs
are experiments/learner_grpo.py's and experiments/learner_recipe.py's. Every arm starts from the
same base with the same seed; only the named setting differs:

- `outcome_only`: the learner's default arm. The course's tiered reward collapses the learner
  (`tiered`, and experiments/results/learner_grpo.json), so the other comparisons use the
  outcome-only reward, which does not.
- `tiered`, `legacy`: the reward ablation (notebook 09), from the base.
- `lr_3e-5_recovery_on`, `lr_3e-5_recovery_off`: three times the learning rate, with the agent's
  raw-text recovery on (its default) and off (notebook 10's format drift).
- `group_16`, `group_32`: group size at an equal episode budget (16 x 16 and 8 x 32 games a step
  against 32 x 8).
- `curriculum`: half the training rows seeded with two prior guesses (the first one of the 50
  best openers), drawn as experiments/standin_lessons.py draws them.

Measured per seed (base and each arm's final adapter on the 128 held-out words, `--eval-seeds`
evaluation seeds x 128 games at temperature 1, 2 by default, one greedy pass at temperature 0): solve rates, guesses per
solve, the share solved within three guesses, completion tokens per game, the share of guesses
recovered from raw text and of games with no guess; the four settings (temperature 0/1 x effort
low/medium) for the base and the `outcome_only` adapter; the `outcome_only` run's checkpoints
at the fifths of the run at temperature 1 and low effort beside its greedy
validation curve; per step the training reward, solve rate, tokens, raw-text and no-play shares.
Across seeds: mean, standard deviation and standard error of each lesson's statistic, with the
verdict of `mtrl_course.verdicts`; nothing is expected of any of them, and the stored file says
what was measured, nulls included.

    python experiments/learner_lessons.py --seeds 1 2 3                 # results/learner_lessons.json
    python experiments/learner_lessons.py --seeds 1 --out build/learner_lessons_s1.json  # one seed; then
    python experiments/learner_lessons.py --combine build/learner_lessons_s1.json \
        build/learner_lessons_s2.json build/learner_lessons_s3.json
    # results/learner_lessons_all_words.json: the same with --steps 40 --pool all --eval-seeds 4

Each arm's result is written as soon as it finishes; `--resume` skips the arms an interrupted
run already wrote. The stored runs: three seeds side by side, one process each (one BLAS thread),
on a two-core machine shared with other work: 25 to 26 minutes (10 steps), 55 minutes (40 steps on
all the words).
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # see experiments/train_base_lm.py
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import importlib.util  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402
from tqdm import tqdm  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "agent_src"))
os.environ.setdefault("MTRL_MODE", "offline")

from mtrl_course.learner import play as batch_play  # noqa: E402
from mtrl_course.learner.grpo import LR_SCALE  # noqa: E402
from mtrl_course.local.learner_policy import load_base  # noqa: E402
from mtrl_course.verdicts import verdict  # noqa: E402
from wordle_agent.words import ALLOWED, ENTROPY  # noqa: E402


def _load_learner_grpo() -> Any:
    spec = importlib.util.spec_from_file_location("learner_grpo", REPO / "experiments" / "learner_grpo.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


learner_grpo = _load_learner_grpo()

RESULTS = REPO / "experiments" / "results" / "learner_lessons.json"
STEPS = 10  # notebook 05's run: 10 steps of 32 prompts x 8 rollouts
POINTS = 5  # greedy validations and kept checkpoints a run: after every STEPS / POINTS steps
EVAL_SEEDS = 2  # x 128 held-out words at temperature 1
HIGH_LR = 3e-5  # three times the course's 1e-5 (ten times broke play within two steps in a smoke run, not stored)
# The curriculum of experiments/standin_lessons.py: half the rows, two priors, the first an opener.
CURRICULUM_SHARE, CURRICULUM_PRIORS, OPENER_POOL = 0.5, 2, 50
GRID = (("t1_low", 1.0, "low"), ("t0_low", 0.0, "low"), ("t1_medium", 1.0, "medium"), ("t0_medium", 0.0, "medium"))

ARMS: dict[str, dict[str, Any]] = {
    "outcome_only": {"reward": "outcome_only"},
    "tiered": {"reward": "tiered"},
    "legacy": {"reward": "legacy"},
    "lr_3e-5_recovery_on": {"reward": "outcome_only", "learning_rate": HIGH_LR, "recovery": True},
    "lr_3e-5_recovery_off": {"reward": "outcome_only", "learning_rate": HIGH_LR, "recovery": False},
    "group_16": {"reward": "outcome_only", "group_size": 16, "global_batch_size": 16},
    "group_32": {"reward": "outcome_only", "group_size": 32, "global_batch_size": 8},
    "curriculum": {"reward": "outcome_only", "curriculum": True},
}


def curriculum_priors(answers: list[str], seed: int) -> list[list[str]]:
    """Prior guesses for `answers`: CURRICULUM_SHARE of them get CURRICULUM_PRIORS, the rest none."""
    rng = np.random.default_rng([seed, 5])
    openers = sorted(ENTROPY, key=lambda w: -ENTROPY[w])[:OPENER_POOL]
    allowed = sorted(ALLOWED)
    seeded = set(rng.choice(len(answers), size=int(len(answers) * CURRICULUM_SHARE), replace=False).tolist())
    out: list[list[str]] = []
    for i, answer in enumerate(answers):
        priors: list[str] = []
        while i in seeded and len(priors) < CURRICULUM_PRIORS:
            pool = openers if not priors else allowed
            word = pool[int(rng.integers(len(pool)))]
            if word != answer.upper() and word not in priors:
                priors.append(word)
        out.append(priors)
    return out


def checkpoints_for(steps: int) -> tuple[int, ...]:
    """The steps after which a run is validated and its adapter kept: POINTS evenly spaced ones."""
    every = max(1, steps // POINTS)
    return tuple(range(every, steps, every))[: POINTS - 1] + (steps,)


def evaluate(
    adapter: Any, *, temperature: float, effort: str, seed: int, eval_seeds: int = EVAL_SEEDS
) -> dict[str, Any]:
    """The held-out words at one setting: at temperature 0 one pass, else `eval_seeds` passes."""
    params, model_config, _ = load_base()
    words = learner_grpo.validation_words()
    passes = 1 if temperature == 0 else eval_seeds
    games = []
    for k in range(passes):
        games += batch_play.play_games(
            params,
            model_config,
            words,
            temperature=temperature,
            effort=effort,
            seed=10_000 + 100 * seed + k,
            adapter=adapter,
            batch=256,
        )
    solved = [g for g in games if g.solved]
    rate, se = batch_play.solve_rate(games)
    return {
        "games": len(games),
        "solve_rate": rate,
        "standard_error": se,
        "mean_reward": float(np.mean([g.reward for g in games])),
        "guesses_per_solve": float(np.mean([len(g.game.policy_guesses) for g in solved])) if solved else None,
        "solved_within_3": float(np.mean([g.solved and len(g.game.policy_guesses) <= 3 for g in games])),
        "completion_tokens_per_game": float(np.mean([sum(len(t["tokens"]) for t in g.turns) for g in games])),
        "raw_text_share": learner_grpo.raw_text_share(games),
        "no_play_share": float(np.mean([not g.game.policy_guesses for g in games])),
    }


def run_seed(
    seed: int,
    arms: list[str],
    progress: tqdm,
    out: dict[str, Any],
    save: Callable[[], None],
    *,
    steps: int = STEPS,
    pool: str = "training",
    eval_seeds: int = EVAL_SEEDS,
) -> dict[str, Any]:
    """Fill `out` (this seed's base and arms; what it already holds is kept) and `save()` after each part.

    Each arm trains `steps` steps on prompts from word pool `pool` (learner_grpo.POOLS) and is
    evaluated over `eval_seeds` x 128 held-out games at temperature 1."""

    def evaluate_at(adapter: Any, temperature: float, effort: str) -> dict[str, Any]:
        return evaluate(adapter, temperature=temperature, effort=effort, seed=seed, eval_seeds=eval_seeds)

    if "base" not in out:
        out["base"] = {name: evaluate_at(None, t, e) for name, t, e in GRID}
        save()
    progress.update(1)
    out.setdefault("arms", {})
    answers = learner_grpo.word_pool(pool)
    kept = checkpoints_for(steps)
    for arm in arms:
        if arm in out["arms"]:
            progress.update(1)
            continue
        spec = dict(ARMS[arm])
        reward = spec.pop("reward")
        recovery = spec.pop("recovery", True)
        priors = curriculum_priors(answers, seed) if spec.pop("curriculum", False) else None
        overrides = {"max_steps": steps, "max_epochs": 1, **spec}
        checkpoints: dict[int, Any] | None = dict.fromkeys(kept) if arm == "outcome_only" else None
        adapter, curves, seconds = learner_grpo.train_batch(
            seed,
            overrides,
            reward,
            val_every=kept[0],
            train_priors=priors,
            recovery=recovery,
            checkpoints=checkpoints,
            answers=answers,
        )
        row: dict[str, Any] = {
            "overrides": overrides,
            "reward": reward,
            "recovery": recovery,
            "curriculum": priors is not None,
            "train_seconds": seconds,
            "curves": {k: {str(s): v for s, v in c.items()} for k, c in curves.items()},
            "trained": {"t1_low": evaluate_at(adapter, 1.0, "low")},
        }
        if arm == "outcome_only":
            for name, temperature, effort in GRID[1:]:
                row["trained"][name] = evaluate_at(adapter, temperature, effort)
            assert checkpoints is not None
            row["checkpoints_t1_low"] = {str(step): evaluate_at(a, 1.0, "low") for step, a in checkpoints.items()}
        out["arms"][arm] = row
        save()
        progress.update(1)
        progress.set_postfix_str(
            f"seed {seed} {arm}: T1 low {out['base']['t1_low']['solve_rate']:.3f} -> "
            f"{row['trained']['t1_low']['solve_rate']:.3f}"
        )
    return out


def _stat(values: list[float]) -> dict[str, Any]:
    v = np.asarray(values, dtype=float)
    sd = float(v.std(ddof=1)) if len(v) > 1 else float("nan")
    judged = verdict([float(x) for x in v])  # the course's one rule: Student's t cutoff for len(v) seeds
    return {
        "mean": judged.mean,
        "sd": sd,
        "se": judged.se,
        "by_seed": [float(x) for x in v],
        "cutoff_se": judged.cutoff,
        "verdict": judged.label,
        "beyond_noise": judged.beyond_noise,
    }


def statistics(seeds: dict[str, Any]) -> dict[str, Any]:
    """Each lesson's statistic across seeds (mean, sd, se, by seed), computed from the seeds."""
    rows = list(seeds.values())
    steps = int(next(iter(rows))["arms"].get("outcome_only", {}).get("overrides", {}).get("max_steps", STEPS))
    checkpoints = sorted(int(s) for s in next(iter(rows))["arms"].get("outcome_only", {}).get("checkpoints_t1_low", {}))
    arms = sorted(set.intersection(*(set(r["arms"]) for r in rows)))

    def rate(r: dict, arm: str | None, setting: str = "t1_low", key: str = "solve_rate") -> float:
        block = r["base"] if arm is None else r["arms"][arm]["trained"]
        value = block[setting][key]
        return float("nan") if value is None else float(value)  # guesses per solve without a solve

    stats: dict[str, Any] = {}
    for arm in arms:
        stats[f"gain/{arm}"] = _stat([rate(r, arm) - rate(r, None) for r in rows])
    if "outcome_only" in arms:
        for model in ("base", "outcome_only"):
            arm = None if model == "base" else "outcome_only"
            for effort in ("low", "medium"):
                stats[f"sampled_minus_greedy/{model}/{effort}"] = _stat(
                    [rate(r, arm, f"t1_{effort}") - rate(r, arm, f"t0_{effort}") for r in rows]
                )
            stats[f"medium_minus_low/{model}/t1"] = _stat([rate(r, arm, "t1_medium") - rate(r, arm) for r in rows])
        val = [r["arms"]["outcome_only"]["curves"]["val/reward/pass_at_1"] for r in rows]
        stats["plateau/validation_rise"] = _stat([v[str(steps)] - v["0"] for v in val])
        stats["plateau/served_minus_final_validation"] = _stat(
            [rate(r, "outcome_only") - v[str(steps)] for r, v in zip(rows, val)]
        )
        for step in checkpoints:
            stats[f"checkpoint/{step}/t1_low_minus_base"] = _stat(
                [r["arms"]["outcome_only"]["checkpoints_t1_low"][str(step)]["solve_rate"] - rate(r, None) for r in rows]
            )
        for arm in ("group_16", "group_32", "curriculum", "tiered", "legacy"):
            if arm in arms:
                stats[f"vs_outcome_only/{arm}"] = _stat([rate(r, arm) - rate(r, "outcome_only") for r in rows])
    if {"tiered", "legacy"} <= set(arms):
        stats["reward/solved_within_3/tiered_minus_legacy"] = _stat(
            [rate(r, "tiered", key="solved_within_3") - rate(r, "legacy", key="solved_within_3") for r in rows]
        )
        stats["reward/guesses_per_solve/legacy_minus_tiered"] = _stat(
            [rate(r, "legacy", key="guesses_per_solve") - rate(r, "tiered", key="guesses_per_solve") for r in rows]
        )
        stats["reward/tokens_per_game/tiered_minus_legacy"] = _stat(
            [
                rate(r, "tiered", key="completion_tokens_per_game")
                - rate(r, "legacy", key="completion_tokens_per_game")
                for r in rows
            ]
        )
    for arm in ("lr_3e-5_recovery_on", "lr_3e-5_recovery_off"):
        if arm in arms:
            last = [r["arms"][arm]["curves"]["rollout/raw_text_share"][str(steps)] for r in rows]
            stats[f"drift/{arm}/raw_text_share_last_step"] = _stat(last)
            stats[f"drift/{arm}/eval_raw_text_share"] = _stat([rate(r, arm, key="raw_text_share") for r in rows])
            stats[f"drift/{arm}/eval_no_play_share"] = _stat([rate(r, arm, key="no_play_share") for r in rows])
    return stats


def combine(parts: list[Path], out: Path) -> int:
    """One results file from one-seed files of the same arms (run side by side)."""
    keys = ("base_id", "arms", "steps", "eval_seeds", "lr_scale", "pool")
    combined = learner_grpo.merge_runs(parts, keys, "experiments/learner_lessons.py")
    combined["statistics"] = statistics(combined["seeds"])
    out.write_text(json.dumps(combined, indent=1) + "\n")
    print(f"wrote {out}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--arms", nargs="+", choices=sorted(ARMS), default=list(ARMS))
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--steps", type=int, default=STEPS, help="training steps per arm (a smoke test uses 2)")
    ap.add_argument(
        "--pool", choices=learner_grpo.POOLS, default="training", help="the training words (see learner_grpo.word_pool)"
    )
    ap.add_argument(
        "--eval-seeds", type=int, default=EVAL_SEEDS, help="x 128 held-out games per setting at temperature 1"
    )
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--resume", action="store_true", help="keep the base and arms --out already holds")
    ap.add_argument("--combine", type=Path, nargs="+", help="merge one-seed results files into --out, then stop")
    args = ap.parse_args(argv)
    if args.combine:
        return combine(args.combine, args.out)
    _, _, base_id = load_base()
    out: dict[str, Any] = {
        "command": "python experiments/learner_lessons.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "git_commit": learner_grpo.git_commit(),
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "base_id": base_id,
        "lr_scale": LR_SCALE,
        "steps": args.steps,
        "pool": args.pool,
        "eval_seeds": args.eval_seeds,
        "arms": {a: ARMS[a] for a in args.arms},
        "seeds": {},
    }
    if args.resume and args.out.is_file():
        before = json.loads(args.out.read_text())
        for key in ("base_id", "steps", "pool", "eval_seeds", "arms"):
            if before.get(key, "training" if key == "pool" else None) != out[key]:  # pool: older files had none
                raise SystemExit(f"cannot resume {args.out}: it was made with another {key}")
        out["seeds"] = before["seeds"]

    def save() -> None:
        if not args.no_write:  # after every part: an interrupted run keeps what it finished
            args.out.write_text(json.dumps(out, indent=1) + "\n")

    with tqdm(total=len(args.seeds) * (1 + len(args.arms)), desc="learner lessons", unit="run") as progress:
        for seed in args.seeds:
            run_seed(
                seed,
                args.arms,
                progress,
                out["seeds"].setdefault(str(seed), {}),
                save,
                steps=args.steps,
                pool=args.pool,
                eval_seeds=args.eval_seeds,
            )
    if len({len(row.get("arms", {})) for row in out["seeds"].values()}) == 1:
        out["statistics"] = statistics(out["seeds"])
        save()
    for key, stat in statistics(out["seeds"]).items():
        print(f"{key}: {stat['mean']:+.3f} (sd {stat['sd']:.3f}, se {stat['se']:.3f}) by seed {stat['by_seed']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
