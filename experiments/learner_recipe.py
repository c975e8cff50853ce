"""Which GRPO recipe makes the learner's held-out play improve? Arms of one search, over seeds, by pass@k.

Each arm (`ARMS`) is one recipe for the learner's token-level GRPO (`mtrl_course.learner`): its
hyperparameter overrides on the course's default offline run (`failure_experiments.DEFAULT_RUN`:
32 prompts x 8 rollouts a step, learning rate 1e-5 times `LR_SCALE`), its estimator (GRPO, or
Dr. GRPO's: no std scaling, one length constant; `rl.advantages.Estimator`), its reward (by name
from the one registry, `mtrl_course.rewards`) and its training word pool: "training", the 640
training rows' answers, or "all", every answer of the course's list (`wordle_agent.words.ANSWERS`)
except notebook 04's 128 validation words (1,788 words). Every arm trains with
`learner_grpo.train_batch` (the batched player, the deployed effort "low", the run's sampling
temperature) for `--steps` steps, never cut short by the epoch count.

    python experiments/learner_recipe.py --arms base640 all all_dr --seeds 1 2 3 --steps 160 \
        --out experiments/results/<one file per process>.json
    python experiments/learner_recipe.py --combine <files> --out experiments/results/learner_recipe.json

One process runs its (arm, seed) pairs in sequence, on one BLAS thread (run two processes side
by side on a two-core machine, then `--combine` their files). Evaluation is on the 128 validation
words with the batched player (`learner.play.play_games`) at the deployed effort, with the run's
token cap per reply (`sampling_max_tokens`, as training and its validation play; the context
bounds it): at temperature 1 with `--eval-seeds` K sampling seeds (default 8, 1,024 games) and at
temperature 0 once (128 greedy games). The evaluation seeds are `EVAL_SEED` + 0..K-1 for every
arm, seed and process, so every arm is compared on the same draws; the base's evaluation is the
same for every arm, so it is made once per process and stored once (`base`).

From the K games of each word, pass@k for k = 1, 4, 8 is the unbiased estimator
1 - C(K - c, k) / C(K, k) (c solves of K; Chen et al., 2021; `local.metrics.pass_at_k`, the one the
local service's validation metrics use), averaged over the words, with its
standard error over words; pass@1 also as the pooled solve rate with its binomial standard error.
Each file holds its command, its commit (read once, at the start), its start time, the base's id,
`LR_SCALE`, the evaluation seeds, the arms' definitions and, per arm and seed, the training
seconds, `train_batch`'s curves and the evaluations (with each word's solve count, so two arms
can later be compared word by word). `summarize` gives, per arm over its seeds, the mean trained
pass@k, the mean gain over the base and its standard error over seeds: numbers only, no verdicts.

Stored results (the committed stage-6 base; evaluation on the same 8 seeds, 1,024 games at T=1 low
and 128 greedy; the base: pass@1 18.7%, pass@4 45.1%, pass@8 57.8%, greedy 32.8%):

- `learner_recipe/screen_40_s1.json`, every arm for 40 steps, training seed 1 (one seed: a lead,
  no verdict). T=1 low pass@1 / pass@8, greedy: `all` 26.0 / 60.2, 25.8; `all_dr` 27.6 / 59.4,
  35.9; `all_lr2` 19.0 / 49.2, 28.1; `all_g16` 23.0 / 60.9, 21.9; `all_fullloss` 23.7 / 51.6,
  28.9; `all_tiered` 1.8 / 7.8, 3.1 (collapsed: its games shrank to 22 sampled tokens, from 43);
  `base640` 24.7 / 64.1, 27.3. Charging an abandoned game (`tiered_full_loss`) kept the tiered
  reward from collapsing (43 tokens a game, as outcome-only); twice the learning rate lost
  coverage (pass@8 -8.6 points); over 40 steps every word of the pool is new, so `all` and
  `base640` differ only in which words they saw.
- `learner_recipe.json` (combined from `learner_recipe/all_160_*.json` and
  `learner_recipe/all_dr_160_*.json`), 160 steps (2.9 passes over the 1,788 words): `all` over
  three seeds, T=1 low pass@1 18.7% -> 27.5% (+8.9 +- 0.6 points, SE over seeds; 28.6, 27.2, 26.7),
  pass@4 +5.3 +- 0.3, pass@8 +2.9 +- 1.4, greedy -0.3 +- 1.6 (by the course's verdict rule,
  `mtrl_course.verdicts`, with its cutoff of 4.30 SE for three seeds: gains at pass@1 and pass@4,
  no effect shown at pass@8 or greedy); `all_dr` over two seeds, pass@1
  26.3 and 29.3 (+9.1 +- 1.5). The gain of `all` at 160 steps is little more than seed 1's at 40
  (+7.3): the run converts about 9 of the 39 points between the base's pass@1 and pass@8, and
  pass@8 itself barely moves, so GRPO here sharpens what the base already finds rather than
  finding more. The issue's bar (+15 points) is not reached by any arm tried.

Cost: a 160-step run took 26 to 47 minutes with three or four such processes sharing the two
cores; 16 minutes (978 s, `all_dr` seed 2) after the learner's step was made faster (a step of 256
games 0.60x the time, commit 7e00a8e), with two others running beside it. One adapter's
evaluation (1,152 games) takes 10 to 60 seconds.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # see experiments/train_base_lm.py
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections.abc import Sequence  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "experiments"))

import learner_grpo  # noqa: E402  (puts agent_src on the path and the course in offline mode)

from mtrl_course.learner import play as batch_play  # noqa: E402
from mtrl_course.learner.grpo import LR_SCALE  # noqa: E402
from mtrl_course.learner.threads import one_blas_thread  # noqa: E402
from mtrl_course.local import failure_experiments  # noqa: E402
from mtrl_course.local.learner_policy import load_base  # noqa: E402
from mtrl_course.local.metrics import pass_at_k  # noqa: E402  (the service's pass@k, one home)
from mtrl_course.rewards import OUTCOME_ONLY, TIERED, TIERED_FULL_LOSS  # noqa: E402
from mtrl_course.rl.advantages import estimator  # noqa: E402
from mtrl_course.service_spec import TrainingHyperparameters  # noqa: E402

RESULTS = REPO / "experiments" / "results" / "learner_recipe.json"
SCRIPT = "experiments/learner_recipe.py"
EVAL_SEED = 5000  # evaluation seeds EVAL_SEED + 0..K-1, the same for every arm and training seed
PASS_KS = (1, 4, 8)
EFFORT = failure_experiments.DEPLOYED_EFFORT
SETTINGS = (("t1_low", 1.0), ("t0_low", 0.0))  # name, temperature; temperature 0 is played once
VAL_EVERY = 20  # train_batch's greedy validation on the held-out words, every this many steps

# name -> the recipe: hyperparameter overrides (on failure_experiments.DEFAULT_RUN), estimator
# name (rl.advantages.ESTIMATORS), reward name (mtrl_course.rewards.REWARDS), word pool (learner_grpo.POOLS).
ARMS: dict[str, dict[str, Any]] = {
    # Today's recipe (experiments/learner_grpo.py's stored long run, outcome-only).
    "base640": {"overrides": {"learning_rate": 1e-5}, "estimator": "grpo", "reward": OUTCOME_ONLY, "pool": "training"},
    "all": {"overrides": {"learning_rate": 1e-5}, "estimator": "grpo", "reward": OUTCOME_ONLY, "pool": "all"},
    "all_dr": {"overrides": {"learning_rate": 1e-5}, "estimator": "dr_grpo", "reward": OUTCOME_ONLY, "pool": "all"},
    "all_lr2": {"overrides": {"learning_rate": 2e-5}, "estimator": "grpo", "reward": OUTCOME_ONLY, "pool": "all"},
    # Twice the games per word and half the words a step: the same 256 games a step.
    "all_g16": {
        "overrides": {"learning_rate": 1e-5, "group_size": 16, "global_batch_size": 16},
        "estimator": "grpo",
        "reward": OUTCOME_ONLY,
        "pool": "all",
    },
    "all_fullloss": {
        "overrides": {"learning_rate": 1e-5},
        "estimator": "grpo",
        "reward": TIERED_FULL_LOSS,
        "pool": "all",
    },
    "all_tiered": {"overrides": {"learning_rate": 1e-5}, "estimator": "grpo", "reward": TIERED, "pool": "all"},
}


# --- pass@k ----------------------------------------------------------------------------------------


def pass_rates(solves: Sequence[int] | np.ndarray, n: int, ks: Sequence[int] = PASS_KS) -> dict[str, dict[str, float]]:
    """pass@k for each k <= n, averaged over words (`solves[i]`: word i's solves in n games), with
    its standard error over words."""
    out = {}
    for k in ks:
        if k > n:
            continue
        per_word = np.array([pass_at_k(n, int(c), k) for c in solves])
        se = float(per_word.std(ddof=1) / np.sqrt(len(per_word))) if len(per_word) > 1 else float("nan")
        out[str(k)] = {"mean": float(per_word.mean()), "se_over_words": se}
    return out


# --- Evaluation ------------------------------------------------------------------------------------


def max_tokens() -> int:
    """The run's token cap per reply (training and its validation use it; the context bounds it)."""
    return TrainingHyperparameters.unbounded(failure_experiments.DEFAULT_RUN).sampling_max_tokens


def evaluate(adapter, words: Sequence[str], *, temperature: float, seeds: Sequence[int]) -> dict:
    """Every word played once per seed by the batched player: per-word solve counts, pass@k, and the
    pooled solve rate with its binomial standard error."""
    params, model_config, _ = load_base()
    started = time.monotonic()
    solves = np.zeros(len(words), dtype=int)
    rewards, tokens = [], []
    with one_blas_thread():
        for seed in seeds:
            games = batch_play.play_games(
                params,
                model_config,
                list(words),
                temperature=temperature,
                effort=EFFORT,
                seed=seed,
                adapter=adapter,
                max_tokens=max_tokens(),
            )
            solves += np.array([g.solved for g in games], dtype=int)
            rewards += [g.reward for g in games]
            tokens += [sum(len(t["tokens"]) for t in g.turns) for g in games]
    games_played = len(words) * len(seeds)
    rate = float(solves.sum() / games_played)
    return {
        "temperature": temperature,
        "effort": EFFORT,
        "seeds": list(seeds),
        "games": games_played,
        "solve_rate": rate,
        "standard_error": float(np.sqrt(rate * (1 - rate) / max(games_played - 1, 1))),
        "pass_at": pass_rates(solves, len(seeds)),
        "solves_by_word": [int(c) for c in solves],
        "mean_reward": float(np.mean(rewards)),
        "completion_tokens_per_game": float(np.mean(tokens)),
        "seconds": time.monotonic() - started,
    }


def evaluate_all(adapter, eval_seeds: Sequence[int]) -> dict:
    """Both settings: temperature 1 over every evaluation seed, temperature 0 once (the first)."""
    words = learner_grpo.validation_words()
    return {
        name: evaluate(adapter, words, temperature=t, seeds=eval_seeds if t > 0 else eval_seeds[:1])
        for name, t in SETTINGS
    }


def describe(name: str, result: dict) -> str:
    ks = ", ".join(f"pass@{k} {v['mean']:.3f} ± {v['se_over_words']:.3f}" for k, v in result["pass_at"].items())
    return f"{name}: solve rate {result['solve_rate']:.3f} ± {result['standard_error']:.3f} ({result['games']} games); {ks}"


# --- Training --------------------------------------------------------------------------------------


class StepBar:
    """`train_batch`'s `on_step`: a progress bar over the steps, the step's reward and solve rate."""

    def __init__(self, total: int, desc: str) -> None:
        from tqdm import tqdm

        self.bar = tqdm(total=total, desc=desc, unit="step", file=sys.stderr, dynamic_ncols=True)

    def __call__(self, step: int, total: int, curves: dict[str, dict[int, float]]) -> None:
        postfix = {
            "reward": f"{curves['rollout/reward/mean'][step]:+.3f}",
            "solved": f"{curves['rollout/solve_rate'][step]:.3f}",
            "grad": f"{curves['learner/update/grad_norm'][step]:.2g}",
        }
        if step in curves["val/reward/pass_at_1"]:
            postfix["val_T0"] = f"{curves['val/reward/pass_at_1'][step]:.3f}"
        self.bar.set_postfix(postfix, refresh=False)
        self.bar.update(1)

    def close(self) -> None:
        self.bar.close()


def arm_overrides(name: str, steps: int, extra: dict | None = None) -> dict:
    """The arm's hyperparameter overrides for a run of `steps` steps: `max_epochs` as large as the
    step count, so the epochs never cut the run short (an epoch is at least one step)."""
    return {**ARMS[name]["overrides"], "max_steps": steps, "max_epochs": steps, **(extra or {})}


def train_arm(
    name: str,
    seed: int,
    steps: int,
    *,
    val_every: int | None = VAL_EVERY,
    hp_overrides: dict | None = None,
    on_step=None,
):
    """`learner_grpo.train_batch` with arm `name`'s recipe: (adapter, curves, seconds)."""
    arm = ARMS[name]
    return learner_grpo.train_batch(
        seed,
        arm_overrides(name, steps, hp_overrides),
        arm["reward"],
        val_every,
        estimator=estimator(arm["estimator"]),
        answers=learner_grpo.word_pool(arm["pool"]),
        on_step=on_step,
    )


# --- Summary and files -----------------------------------------------------------------------------


def summarize(runs: dict, base: dict) -> dict:
    """Per arm over its seeds, per setting and k: the base's pass@k, the mean trained pass@k, the mean
    gain over the base and its standard error over seeds, and the number of seeds."""
    summary: dict = {}
    for arm, seeds in runs.items():
        row: dict = {"n_seeds": len(seeds)}
        for setting, _ in SETTINGS:
            row[setting] = {}
            for k, base_k in base[setting]["pass_at"].items():
                trained = np.array([seeds[s][setting]["pass_at"][k]["mean"] for s in seeds])
                gains = trained - base_k["mean"]
                se = float(gains.std(ddof=1) / np.sqrt(len(gains))) if len(gains) > 1 else float("nan")
                row[setting][f"pass@{k}"] = {
                    "base": base_k["mean"],
                    "trained_mean": float(trained.mean()),
                    "gain_mean": float(gains.mean()),
                    "gain_se_over_seeds": se,
                    "gains": [float(g) for g in gains],
                }
        summary[arm] = row
        for setting, _ in SETTINGS:
            cells = "; ".join(
                f"{k} {v['base']:.3f} -> {v['trained_mean']:.3f} ({v['gain_mean']:+.3f} ± {v['gain_se_over_seeds']:.3f})"
                for k, v in row[setting].items()
            )
            print(f"{arm} [{len(seeds)} seeds] {setting}: {cells}")
    return summary


def write(out: dict, path: Path) -> None:
    out["summary"] = summarize(out["runs"], out["base"]) if out["runs"] else {}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {path}", flush=True)


COMBINED_KEYS = ("base_id", "lr_scale", "eval_seeds", "steps", "val_every", "max_tokens", "pool_sizes", "base")


def combine(parts: list[Path], out: Path) -> int:
    """One results file from several files of this script (run side by side): the base, the steps and
    the evaluation seeds must agree, and so must an arm's definition wherever it appears."""
    combined = learner_grpo.merge_runs(parts, COMBINED_KEYS, SCRIPT, table="runs", depth=2)
    arms: dict = {}
    for part in parts:
        for name, arm in json.loads(part.read_text())["arms"].items():
            if arms.setdefault(name, arm) != arm:
                raise SystemExit(f"cannot combine: arm {name} is defined differently in {part}")
    combined["arms"] = arms
    combined["base_seconds"] = [json.loads(part.read_text()).get("base_seconds") for part in parts]
    write(combined, out)
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--arms", nargs="+", choices=tuple(ARMS), default=list(ARMS))
    ap.add_argument("--seeds", type=int, nargs="+", default=[1])
    ap.add_argument("--steps", type=int, default=160, help="training steps (max_steps; the epochs never cut it)")
    ap.add_argument("--eval-seeds", type=int, default=8, help="temperature-1 evaluation seeds (128 games each)")
    ap.add_argument("--val-every", type=int, default=VAL_EVERY, help="greedy validation during training")
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--out", type=Path, default=RESULTS, help="where to write the results")
    ap.add_argument("--combine", type=Path, nargs="+", help="merge results files of this script into --out, then stop")
    args = ap.parse_args(argv)
    if args.combine:
        return combine(args.combine, args.out)
    commit = learner_grpo.git_commit()  # read once, before anything runs
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    _, _, base_id = load_base()
    eval_seeds = [EVAL_SEED + k for k in range(args.eval_seeds)]
    pools = {name: len(learner_grpo.word_pool(name)) for name in learner_grpo.POOLS}
    print(f"word pools: {pools} (validation words excluded from both)", flush=True)
    out: dict = {
        "command": f"python {SCRIPT} " + " ".join(argv if argv is not None else sys.argv[1:]),
        "git_commit": commit,
        "started": started,
        "base_id": base_id,
        "lr_scale": LR_SCALE,
        "eval_seeds": eval_seeds,
        "steps": args.steps,
        "val_every": args.val_every,
        "max_tokens": max_tokens(),
        "pool_sizes": pools,
        "arms": {name: ARMS[name] for name in args.arms},
        "base": evaluate_all(None, eval_seeds),
        "runs": {},
    }
    # The base's numbers must agree between files to be combined; its timings need not.
    out["base_seconds"] = {name: result.pop("seconds") for name, result in out["base"].items()}
    for name, result in out["base"].items():
        print(f"base {describe(name, result)} [{out['base_seconds'][name]:.0f} s]", flush=True)
    for name in args.arms:
        for seed in args.seeds:
            bar = StepBar(args.steps, f"{name} s{seed}")
            try:
                adapter, curves, seconds = train_arm(name, seed, args.steps, val_every=args.val_every, on_step=bar)
            finally:
                bar.close()
            print(f"{name} seed {seed}: trained {args.steps} steps in {seconds:.0f} s", flush=True)
            row: dict = {
                "train_seconds": seconds,
                "curves": {k: {str(s): v for s, v in c.items()} for k, c in curves.items()},
                **evaluate_all(adapter, eval_seeds),
            }
            for setting, _ in SETTINGS:
                print(f"  trained {describe(setting, row[setting])} [{row[setting]['seconds']:.0f} s]", flush=True)
            out["runs"].setdefault(name, {})[str(seed)] = row
            if not args.no_write:
                write(out, args.out)  # after every run, so a long process loses nothing finished
    if args.no_write:
        summarize(out["runs"], out["base"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
