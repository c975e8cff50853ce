"""The course's lessons on the learner, read from stored runs, beside the stand-in's and the walkthrough's.

The lessons of notebooks 05 to 10 run live on the stand-in policy. The learner (a tiny language
model, `mtrl_course.learner`) was trained on the same questions by two experiment scripts whose
runs take longer than a notebook may (`experiments/learner_lessons.py`: one epoch of 20 steps,
eight arms, three seeds; `experiments/learner_grpo.py`: the 160-step run). Each function here
reads those stored files and returns rows for `nb.table`: every number is computed from the
stored seeds, never typed in. Every verdict is the course's one rule (`mtrl_course.verdicts`:
the mean across seeds beyond the two-sided 95% cutoff of Student's t for that many seeds, 4.30
standard errors for 3), applied to the stored per-seed values; otherwise "no effect shown".

The walkthrough's column quotes what the AWS walkthrough reported for GPT-OSS-20B (BRIEF.md
sections 5 and 7): a direction or a figure, never a number measured here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from mtrl_course import config, service_spec, verdicts

RESULTS_DIR = config.REPO_ROOT / "experiments" / "results"
LESSONS_FILE = "learner_lessons.json"
# The lessons again on the recipe search's best pool (every answer word outside validation), 40 steps.
WIDE_LESSONS_FILE = "learner_lessons_all_words.json"
RECIPE_FILE = "learner_recipe.json"
RECIPE_SCREEN_FILE = "learner_recipe/screen_40_s1.json"
# experiments/learner_grpo.py's stored runs: the first three play through the real agent.
GRPO_FILES = (
    "learner_grpo.json",
    "learner_grpo_outcome_only.json",
    "learner_grpo_outcome_only_2epochs.json",
    "learner_grpo_outcome_only_long.json",
)
LONG_RUN_FILE = "learner_grpo_outcome_only_long.json"
STANDIN_FILE = "standin_lessons.json"
FAILURES_FILE = "failure_modes.json"

SETTINGS = (
    ("t1_low", "T=1, low"),
    ("t0_low", "T=0, low"),
    ("t1_medium", "T=1, medium"),
    ("t0_medium", "T=0, medium"),
)
REWARD_ARMS = (
    ("outcome_only", "outcome only"),
    ("tiered", "tiered (the course's)"),
    ("legacy", "legacy (summed per guess)"),
)


@cache
def _read(name: str, results_dir: Path = RESULTS_DIR) -> dict[str, Any]:
    path = Path(results_dir) / name
    if not path.is_file():
        raise FileNotFoundError(
            f"no stored results {path}: run the experiment script named in this module's docstring first"
        )
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def lessons(results_dir: Path = RESULTS_DIR) -> dict[str, Any]:
    """experiments/results/learner_lessons.json, as stored: 10 steps on the 640 training words."""
    return _read(LESSONS_FILE, results_dir)


def wide_lessons(results_dir: Path = RESULTS_DIR) -> dict[str, Any]:
    """experiments/results/learner_lessons_all_words.json, as stored: the same lessons, 40 steps on
    the 1,788 answer words outside validation (the recipe search's pool). The tables below read it
    unless given another file."""
    return _read(WIDE_LESSONS_FILE, results_dir)


def _fmt(stat: Mapping[str, Any], digits: int = 3) -> str:
    return f"{stat['mean']:+.{digits}f} ± {stat['se']:.{digits}f}"


def _verdict(stat: Mapping[str, Any], names: tuple[str, str] = ("higher", "lower")) -> str:
    """The rule's label for a statistic's per-seed values ("gain"/"loss" for gains over the base)."""
    return verdicts.verdict(stat["by_seed"], names=names).label


def _gain_verdict(stat: Mapping[str, Any]) -> str:
    return _verdict(stat, names=(verdicts.GAIN, verdicts.LOSS))


def _by_seed(stat: Mapping[str, Any], digits: int = 3) -> str:
    return ", ".join(f"{v:+.{digits}f}" for v in stat["by_seed"])


def _summary(values: Sequence[float]) -> dict[str, Any]:
    judged = verdicts.verdict([float(x) for x in values])
    return {"mean": judged.mean, "se": judged.se, "by_seed": [float(x) for x in values], "verdict": judged.label}


def _seeds(data: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [data["seeds"][k] for k in sorted(data["seeds"], key=int)]


def provenance(data: Mapping[str, Any] | None = None) -> str:
    """One line: which file, how many seeds, how many steps, which commit(s)."""
    data = data if data is not None else wide_lessons()
    commits = data["git_commit"] if isinstance(data["git_commit"], list) else [data["git_commit"]]
    short = sorted({c.split()[0][:7] for c in commits})
    name = WIDE_LESSONS_FILE if data.get("pool") == "all" else LESSONS_FILE
    return (
        f"stored: experiments/results/{name}, seeds {', '.join(sorted(data['seeds'], key=int))}, "
        f"{data['steps']} steps an arm, commit {', '.join(short)}"
    )


def headline(data: Mapping[str, Any] | None = None, long_run: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """Notebook 05: what GRPO does to the learner at the serving setting, by reward and length."""
    data = data if data is not None else wide_lessons()
    long_run = long_run if long_run is not None else _read(LONG_RUN_FILE)
    stats = data["statistics"]
    rows = []
    seeds = _seeds(data)
    base = _summary([s["base"]["t1_low"]["solve_rate"] for s in seeds])
    for arm, label in REWARD_ARMS:
        trained = _summary([s["arms"][arm]["trained"]["t1_low"]["solve_rate"] for s in seeds])
        gain = stats[f"gain/{arm}"]
        rows.append(
            {
                "run": f"{label}, {data['steps']} steps",
                "base": f"{base['mean']:.1%}",
                "trained": f"{trained['mean']:.1%}",
                "gain (± SE over seeds)": _fmt(gain),
                "gain by seed": _by_seed(gain),
                "verdict": _gain_verdict(gain),
            }
        )
    summary = long_run["summary"]["t1_low"]
    gain = _summary(summary["gains"])
    steps = long_run["overrides"].get("max_steps")
    rows.append(
        {
            "run": f"outcome only, {steps} steps",
            "base": f"{summary['base_mean']:.1%}",
            "trained": f"{summary['trained_mean']:.1%}",
            "gain (± SE over seeds)": _fmt(gain),
            "gain by seed": _by_seed(gain),
            "verdict": _gain_verdict(gain),
        }
    )
    return rows


def grid(data: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """Notebook 07: the four settings for the base and the outcome-only adapter (mean over seeds)."""
    data = data if data is not None else wide_lessons()
    seeds = _seeds(data)
    rows = []
    for key, label in SETTINGS:
        base = _summary([s["base"][key]["solve_rate"] for s in seeds])
        trained = _summary([s["arms"]["outcome_only"]["trained"][key]["solve_rate"] for s in seeds])
        adapter = _summary(
            [s["arms"]["outcome_only"]["trained"][key]["solve_rate"] - s["base"][key]["solve_rate"] for s in seeds]
        )
        rows.append(
            {
                "setting": label,
                "base": f"{base['mean']:.1%}",
                "trained (outcome only)": f"{trained['mean']:.1%}",
                "adapter adds (± SE)": _fmt(adapter),
                "verdict": _gain_verdict(adapter),
                "base tokens a game": float(np.mean([s["base"][key]["completion_tokens_per_game"] for s in seeds])),
            }
        )
    return rows


def grid_lessons(
    data: Mapping[str, Any] | None = None, standin: Mapping[str, Any] | None = None
) -> list[dict[str, Any]]:
    """Notebook 07: sampling against greedy, and medium effort against low, beside the others'."""
    data = data if data is not None else wide_lessons()
    standin = standin if standin is not None else _read(STANDIN_FILE)
    stats, other = data["statistics"], standin["statistics"]
    rows = []
    for model, learner_key, standin_model in (("base", "base", "base"), ("trained", "outcome_only", "trained")):
        for effort in ("low", "medium"):
            stat = stats[f"sampled_minus_greedy/{learner_key}/{effort}"]
            ref = other[f"1 greedy fails: {standin_model} {effort}, T1 - T0"]
            rows.append(
                {
                    "statistic": f"{model}, {effort}: T=1 minus T=0",
                    "tiny model": _fmt(stat),
                    "verdict": _verdict(stat),
                    "stand-in": _fmt(ref),
                    "walkthrough": "T=0 often ends without a solve; T=1 higher",
                }
            )
    stat = stats["medium_minus_low/base/t1"]
    ref = other["2 effort helps: base medium - low (T1)"]
    rows.append(
        {
            "statistic": "base, T=1: medium minus low effort",
            "tiny model": _fmt(stat),
            "verdict": _verdict(stat),
            "stand-in": _fmt(ref),
            "walkthrough": "+46 points",
        }
    )
    stat = stats["medium_minus_low/outcome_only/t1"]
    rows.append(
        {
            "statistic": "trained, T=1: medium minus low effort",
            "tiny model": _fmt(stat),
            "verdict": _verdict(stat),
            "stand-in": "",
            "walkthrough": "+15 points",
        }
    )
    return rows


def validation_curve(
    data: Mapping[str, Any] | None = None, long_run: Mapping[str, Any] | None = None
) -> list[dict[str, Any]]:
    """Notebooks 06 and 10: the learner's greedy validation by step, the 20-step arms and the 160-step run."""
    data = data if data is not None else wide_lessons()
    long_run = long_run if long_run is not None else _read(LONG_RUN_FILE)
    rows = []
    curves = [s["arms"]["outcome_only"]["curves"]["val/reward/pass_at_1"] for s in _seeds(data)]
    for step in sorted({int(k) for c in curves for k in c}):
        values = [c[str(step)] for c in curves if str(step) in c]
        rows.append(
            {
                "run": f"{data['steps']} steps, {'1,788' if data.get('pool') == 'all' else '640'} words",
                "step": step,
                "T=0 validation (mean)": float(np.mean(values)),
                "lowest seed": float(min(values)),
                "highest seed": float(max(values)),
            }
        )
    long_curves = [s["curves"]["val/reward/pass_at_1"] for s in long_run["seeds"].values()]
    for step in sorted({int(k) for c in long_curves for k in c}):
        values = [c[str(step)] for c in long_curves if str(step) in c]
        rows.append(
            {
                "run": f"{long_run['overrides'].get('max_steps')} steps, 640 words",
                "step": step,
                "T=0 validation (mean)": float(np.mean(values)),
                "lowest seed": float(min(values)),
                "highest seed": float(max(values)),
            }
        )
    return rows


def rewards(data: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """Notebook 09: the three rewards from the base, and what each trained adapter does at T=1."""
    data = data if data is not None else wide_lessons()
    seeds = _seeds(data)
    base = [s["base"]["t1_low"] for s in seeds]
    rows: list[dict[str, Any]] = [
        {
            "reward": "none (the base)",
            "solve rate (T=1)": f"{np.mean([b['solve_rate'] for b in base]):.1%}",
            "gain (± SE)": "",
            "solved within 3": f"{np.mean([b['solved_within_3'] for b in base]):.1%}",
            "tokens a game": float(np.mean([b["completion_tokens_per_game"] for b in base])),
            "training reward, last step": None,
            "training tokens a game, last step": None,
        }
    ]
    for arm, label in REWARD_ARMS:
        trained = [s["arms"][arm]["trained"]["t1_low"] for s in seeds]
        last = str(data["steps"])
        rows.append(
            {
                "reward": label,
                "solve rate (T=1)": f"{np.mean([t['solve_rate'] for t in trained]):.1%}",
                "gain (± SE)": _fmt(data["statistics"][f"gain/{arm}"]),
                "solved within 3": f"{np.mean([t['solved_within_3'] for t in trained]):.1%}",
                "tokens a game": float(np.mean([t["completion_tokens_per_game"] for t in trained])),
                "training reward, last step": float(
                    np.mean([s["arms"][arm]["curves"]["rollout/reward/mean"][last] for s in seeds])
                ),
                "training tokens a game, last step": float(
                    np.mean([s["arms"][arm]["curves"]["rollout/tokens_per_game"][last] for s in seeds])
                ),
            }
        )
    return rows


def reward_lessons(
    data: Mapping[str, Any] | None = None, standin: Mapping[str, Any] | None = None
) -> list[dict[str, Any]]:
    """Notebook 09: tiered against legacy, the learner beside the stand-in's continued run."""
    data = data if data is not None else wide_lessons()
    standin = standin if standin is not None else _read(STANDIN_FILE)
    stats, other = data["statistics"], standin["statistics"]
    pairs = (
        (
            "solved within 3 guesses, tiered minus legacy",
            "reward/solved_within_3/tiered_minus_legacy",
            "4 reward design: solved within 3, tiered - legacy (continued, T1)",
        ),
        (
            "guesses per solve, legacy minus tiered",
            "reward/guesses_per_solve/legacy_minus_tiered",
            "4 reward design: guesses per solve, legacy - tiered (continued, T1)",
        ),
        ("tiered minus outcome only, solve rate (T=1)", "vs_outcome_only/tiered", None),
        ("legacy minus outcome only, solve rate (T=1)", "vs_outcome_only/legacy", None),
    )
    return [
        {
            "statistic": label,
            "tiny model (from the base)": _fmt(stats[key]),
            "verdict": _verdict(stats[key]),
            "stand-in (continued run)": _fmt(other[ref]) if ref else "",
        }
        for label, key, ref in pairs
    ]


def drift(data: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """Notebook 10: three times the learning rate, raw-text recovery on and off."""
    data = data if data is not None else wide_lessons()
    seeds = _seeds(data)
    last = str(data["steps"])
    rows = []
    for arm, label in (
        ("outcome_only", "1e-5, recovery on"),
        ("lr_3e-5_recovery_on", "3e-5, recovery on"),
        ("lr_3e-5_recovery_off", "3e-5, recovery off"),
    ):
        curves = [s["arms"][arm]["curves"] for s in seeds]
        rows.append(
            {
                "learning rate": label,
                "training reward, last step": float(np.mean([c["rollout/reward/mean"][last] for c in curves])),
                "raw-text guesses, last step": float(np.mean([c["rollout/raw_text_share"][last] for c in curves])),
                "no-play games, last step": float(np.mean([c["rollout/no_play_share"][last] for c in curves])),
                "tokens a game, last step": float(np.mean([c["rollout/tokens_per_game"][last] for c in curves])),
                "gain at T=1 low (± SE)": _fmt(data["statistics"][f"gain/{arm}"]),
            }
        )
    return rows


def group_and_curriculum(
    data: Mapping[str, Any] | None = None, standin: Mapping[str, Any] | None = None
) -> list[dict[str, Any]]:
    """Notebook 10: group size and curriculum at an equal episode budget, against the default arm.

    The stand-in's column is its served solve rate for the same two runs (means over its seeds,
    experiments/standin_lessons.py point 5): a level, not a paired difference.
    """
    data = data if data is not None else wide_lessons()
    standin = standin if standin is not None else _read(STANDIN_FILE)
    stats, levels = data["statistics"], standin["levels"]
    rows = []
    for arm, label, prefix in (
        ("group_16", "group 16 minus 8", "group 16"),
        ("group_32", "group 32 minus 8", "group 32"),
        ("curriculum", "curriculum minus default", "curriculum"),
    ):
        stat = stats[f"vs_outcome_only/{arm}"]
        rows.append(
            {
                "comparison": label,
                "tiny model, solve rate at T=1": _fmt(stat),
                "by seed": _by_seed(stat),
                "verdict": _verdict(stat),
                "this run's gain over the base": _fmt(stats[f"gain/{arm}"]),
                "stand-in, served solve rate (this run / default)": (
                    f"{levels[f'{prefix} eval_T1_solve']['mean']:.1%} / {levels['group 8 eval_T1_solve']['mean']:.1%}"
                ),
            }
        )
    return rows


def checkpoints(data: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """Notebook 10: the default arm's checkpoints at the serving setting beside its greedy validation."""
    data = data if data is not None else wide_lessons()
    seeds = _seeds(data)
    base = float(np.mean([s["base"]["t1_low"]["solve_rate"] for s in seeds]))
    val0 = float(np.mean([s["arms"]["outcome_only"]["curves"]["val/reward/pass_at_1"]["0"] for s in seeds]))
    rows = [{"step": 0, "T=0 validation": val0, "T=1 low": base, "T=1 low minus base": "", "verdict": ""}]
    steps = sorted({int(k) for s in seeds for k in s["arms"]["outcome_only"]["checkpoints_t1_low"]})
    for step in steps:
        stat = data["statistics"][f"checkpoint/{step}/t1_low_minus_base"]
        rows.append(
            {
                "step": step,
                "T=0 validation": float(
                    np.mean([s["arms"]["outcome_only"]["curves"]["val/reward/pass_at_1"][str(step)] for s in seeds])
                ),
                "T=1 low": float(
                    np.mean([s["arms"]["outcome_only"]["checkpoints_t1_low"][str(step)]["solve_rate"] for s in seeds])
                ),
                "T=1 low minus base": _fmt(stat),
                "verdict": _gain_verdict(stat),
            }
        )
    return rows


# --- every stored run -------------------------------------------------------------------------------

GAIN_SETTINGS = (("t1_low", "T=1 low"), ("t0_low", "T=0 low"), ("t1_medium", "T=1 medium"))
ALL_SETTINGS = tuple(name for name, _ in GAIN_SETTINGS)
ARM_LABELS = {
    "outcome_only": "outcome only",
    "tiered": "tiered (the course's)",
    "legacy": "legacy (summed per guess)",
    "lr_3e-5_recovery_on": "outcome only, 3x learning rate",
    "lr_3e-5_recovery_off": "outcome only, 3x learning rate, no raw-text recovery",
    "group_16": "outcome only, groups of 16",
    "group_32": "outcome only, groups of 32",
    "curriculum": "outcome only, curriculum",
    "all": "outcome only",
    "all_dr": "outcome only, Dr. GRPO",
    "all_lr2": "outcome only, 2x learning rate",
    "all_g16": "outcome only, groups of 16",
    "all_fullloss": "tiered, abandoned games charged",
    "all_tiered": "tiered (the course's)",
    "base640": "outcome only",
}


def points(values: Sequence[float]) -> str:
    """A gain over seeds in points, with its standard error and the rule's label."""
    judged = verdicts.verdict([100 * v for v in values])
    if judged.n < 2:
        return f"{judged.mean:+.1f} (1 seed)"
    return f"{judged.mean:+.1f} ± {judged.se:.1f}: {judged.label}"


def _row(
    source: str,
    run: str,
    steps: int,
    words: str,
    gains: Mapping[str, Sequence[float]],
    settings: Sequence[str],
    **extra: Any,
) -> dict:
    row: dict[str, Any] = {"run": run, "steps": steps, "words": words}
    row["seeds"] = max((len(v) for v in gains.values()), default=0)
    for key, label in GAIN_SETTINGS:
        if key in settings:
            row[f"gain at {label}"] = points(gains[key]) if gains.get(key) else "-"
    row.update(extra)
    row["stored in"] = source.removesuffix(".json")
    return row


def every_run(results_dir: Path = RESULTS_DIR, settings: Sequence[str] = ALL_SETTINGS) -> list[dict[str, Any]]:
    """Every stored GRPO run of the tiny model from the committed base, one row per run (or arm):
    its held-out gain over the base at each setting measured, in points, with the rule's verdict
    (`mtrl_course.verdicts`), nulls and losses included ("-": not measured), at each of `settings`
    (keys of GAIN_SETTINGS). Each gain is against its own file's base evaluation (the files'
    evaluation seeds differ); pass@k is `pass_at_k`'s."""
    rows: list[dict[str, Any]] = []
    for name in GRPO_FILES:
        data = _read(name, results_dir)
        seeds = _seeds(data)
        via = "real agent" if data.get("eval_path", "agent") == "agent" else "batched player"
        gains = {key: [s[key]["gain"] for s in seeds if key in s] for key, _ in GAIN_SETTINGS}
        label = ARM_LABELS.get(data["reward"], data["reward"])
        steps = len(seeds[0]["curves"]["rollout/reward/mean"])  # max_steps capped by max_epochs' 20-step epochs
        rows.append(_row(name, f"{label} ({via})", steps, "640", gains, settings))
    for name, words in ((LESSONS_FILE, "640"), (WIDE_LESSONS_FILE, "1,788")):
        if not (Path(results_dir) / name).is_file() and name == WIDE_LESSONS_FILE:
            continue
        data = _read(name, results_dir)
        seeds = _seeds(data)
        for arm in data["arms"]:
            measured = [key for key, _ in GAIN_SETTINGS if key in seeds[0]["arms"][arm]["trained"]]
            gains = {
                key: [s["arms"][arm]["trained"][key]["solve_rate"] - s["base"][key]["solve_rate"] for s in seeds]
                for key in measured
            }
            rows.append(_row(name, ARM_LABELS.get(arm, arm), int(data["steps"]), words, gains, settings))
    for name in (RECIPE_FILE, RECIPE_SCREEN_FILE):
        data = _read(name, results_dir)
        for arm, summary in data["summary"].items():
            gains = {"t1_low": summary["t1_low"]["pass@1"]["gains"], "t0_low": summary["t0_low"]["pass@1"]["gains"]}
            words = f"{data['pool_sizes'][data['arms'][arm]['pool']]:,}"
            rows.append(_row(name, ARM_LABELS.get(arm, arm), int(data["steps"]), words, gains, settings))
    return rows


# --- memorisation: the same 160 steps on 640 words and on 1,788 --------------------------------------

BLOCK = 20  # steps per block of the on-policy training curve


def training_blocks(curve: Mapping[str, float], block: int = BLOCK) -> list[float]:
    """The on-policy training solve rate averaged over consecutive blocks of `block` steps."""
    steps = sorted(int(k) for k in curve)
    return [float(np.mean([curve[str(t)] for t in steps[i : i + block]])) for i in range(0, len(steps), block)]


def memorisation_runs(results_dir: Path = RESULTS_DIR) -> list[dict[str, Any]]:
    """The two 160-step outcome-only runs that differ only in their training words: per run, its
    training curve in blocks (one list per seed), its held-out trained solve rates at T=1 low and
    its file's base on the held-out words (the two files' evaluation seeds differ)."""
    long_run = _read(LONG_RUN_FILE, results_dir)
    recipe = _read(RECIPE_FILE, results_dir)
    batch = int(service_spec.OFFLINE_OVERRIDES["global_batch_size"])  # both runs' prompts a step
    runs = []
    for words, curves, held_out, base in (
        (
            640,
            [s["curves"]["rollout/solve_rate"] for s in _seeds(long_run)],
            [s["t1_low"]["trained"]["solve_rate"] for s in _seeds(long_run)],
            float(np.mean([s["t1_low"]["base"]["solve_rate"] for s in _seeds(long_run)])),
        ),
        (
            recipe["pool_sizes"]["all"],
            [recipe["runs"]["all"][k]["curves"]["rollout/solve_rate"] for k in sorted(recipe["runs"]["all"], key=int)],
            [recipe["runs"]["all"][k]["t1_low"]["solve_rate"] for k in sorted(recipe["runs"]["all"], key=int)],
            float(recipe["base"]["t1_low"]["solve_rate"]),
        ),
    ):
        steps = len(curves[0])
        runs.append(
            {
                "words": words,
                "steps": steps,
                "epochs": steps * batch / words,
                "blocks": [training_blocks(c) for c in curves],
                "held_out": held_out,
                "base": base,
            }
        )
    return runs


def memorisation(results_dir: Path = RESULTS_DIR) -> list[dict[str, Any]]:
    """Notebooks 04 and 05: the solve rate on the words a run trains on against the held-out words'."""
    rows = []
    for run in memorisation_runs(results_dir):
        first = float(np.mean([b[0] for b in run["blocks"]]))
        last = float(np.mean([b[-1] for b in run["blocks"]]))
        held_out = float(np.mean(run["held_out"]))
        rows.append(
            {
                "training words": f"{run['words']:,}",
                "epochs (passes over the words)": f"{run['epochs']:.1f}",
                "held-out solve rate of the base": f"{run['base']:.1%}",
                f"training solve rate, first {BLOCK} steps": f"{first:.1%}",
                f"training solve rate, last {BLOCK} steps": f"{last:.1%}",
                "held-out solve rate after training (T=1 low)": f"{held_out:.1%}",
                "training minus held-out, at the end": f"{100 * (last - held_out):+.1f} points",
            }
        )
    return rows


def pass_at_k(results_dir: Path = RESULTS_DIR) -> list[dict[str, Any]]:
    """Notebook 05: pass@1, pass@4 and pass@8 at T=1 low on the held-out words, the base and each
    160-step recipe (experiments/learner_recipe.py). The base's pass@8 is what sampling already
    finds within 8 tries; the last column is how much of the gap from its pass@1 a recipe closed."""
    data = _read(RECIPE_FILE, results_dir)
    base = data["base"]["t1_low"]["pass_at"]
    headroom = base["8"]["mean"] - base["1"]["mean"]
    rows: list[dict[str, Any]] = [
        {
            "model": "the base",
            "seeds": "",
            **{f"pass@{k}": f"{base[k]['mean']:.1%}" for k in ("1", "4", "8")},
            "of the pass@1 to pass@8 gap, closed": "",
        }
    ]
    for arm, summary in data["summary"].items():
        t1 = summary["t1_low"]
        row: dict[str, Any] = {
            "model": f"{ARM_LABELS.get(arm, arm)}, {data['steps']} steps",
            "seeds": summary["n_seeds"],
        }
        for k in ("1", "4", "8"):
            row[f"pass@{k}"] = f"{t1[f'pass@{k}']['trained_mean']:.1%} ({points(t1[f'pass@{k}']['gains'])})"
        row["of the pass@1 to pass@8 gap, closed"] = f"{t1['pass@1']['gain_mean'] / headroom:.0%}"
        rows.append(row)
    return rows
