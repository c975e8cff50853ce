"""The course's figures: training curves, base-versus-trained bars, billable-token shares.

Each function takes plain data (a DataFrame or a dict), returns a matplotlib Figure and draws
nothing else: the notebook saves and shows it with `nb.save_figure`. Titles state what the data
shows, computed from the data itself, so a title can never claim more than the plot holds. Axis
labels carry units. Every title names whose numbers it shows (the stand-in's, the walkthrough's,
yours). No randomness and no dates, so the same data gives the same PNG bytes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from mtrl_course import costs
from wordle_agent import reward as wordle_reward

REWARD_MEAN = "rollout/reward/mean"
REWARD_STD = "rollout/reward/std"
VAL_PASS_AT_1 = "val/reward/pass_at_1"
SOLVE_THRESHOLD_NOTE = "a solve scores >= 1.01, a loss <= -0.35"
COLOUR_THRESHOLD = "tab:green"
# Colours: one per meaning, the same in every figure of the course.
COLOUR_REWARD = "tab:blue"
COLOUR_VALIDATION = "tab:orange"
COLOUR_BASE = "0.65"
COLOUR_GAIN = "tab:green"
COLOUR_LOSS = "tab:red"
DIMENSION_COLOURS = {"prefill": "tab:blue", "sample": "tab:orange", "train": "tab:purple"}
WIDE_FIGSIZE = (10.0, 3.8)
BAND_ALPHA = 0.2
PERCENT = 100.0
PERCENT_HEADROOM = 1.12
PERCENT_TICK = 20
# Bar labels below this share of the axis would not fit inside their bar.
MIN_LABELLED_SHARE = 0.06


def _percent_axis(ax: Any, label: str) -> None:
    # Headroom above 100% keeps value labels on top of full bars clear of the title.
    ax.set_ylim(0, PERCENT * PERCENT_HEADROOM)
    ax.set_yticks(range(0, int(PERCENT) + 1, PERCENT_TICK))
    ax.set_ylabel(label)


Z_95 = 1.959963984540054  # two-sided 95% normal quantile


def wilson_interval(rate: float, games: int, z: float = Z_95) -> tuple[float, float]:
    """95% Wilson score interval (low, high) of a solve rate measured on `games` games.

    Wilson rather than rate +- 1.96 SE because the course's rates sit near 0% and 100%, where the
    normal interval runs past the ends and shrinks to nothing at 0 or 1 solved.
    """
    if not isinstance(games, int) or isinstance(games, bool) or games < 1:
        raise ValueError(f"wilson_interval needs a positive whole number of games; got {games!r}")
    if not 0.0 <= float(rate) <= 1.0:
        raise ValueError(f"wilson_interval needs a solve rate between 0 and 1; got {rate!r}")
    denominator = 1.0 + z * z / games
    centre = (rate + z * z / (2 * games)) / denominator
    half = z * math.sqrt(rate * (1 - rate) / games + z * z / (4 * games * games)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def wordle_reward_range() -> tuple[float, float]:
    """(lowest, highest) reward one Wordle game can pay: never a valid guess, and a first-guess
    solve with the shaping term at its clip, computed from `wordle_agent.reward` itself."""
    beyond_clip = 10 * wordle_reward.SHAPING_SCALE
    lowest = min(wordle_reward.outcome_reward(False, 0, 0.0), wordle_reward.outcome_reward(False, 1, -beyond_clip))
    return lowest, wordle_reward.outcome_reward(True, 1, beyond_clip)


# --- training curves ------------------------------------------------------------------------------
def reward_band(reward: pd.Series, std: pd.Series, reward_range: tuple[float, float]) -> tuple[pd.Series, pd.Series]:
    """The (low, high) edges of `training_curves`' band: mean -+ one std at each step of `reward`,
    clipped to `reward_range` (lowest, highest a game can pay); a step without a std gets none."""
    lowest, highest = reward_range
    spread = std.reindex(reward.index).fillna(0.0)
    return (reward - spread).clip(lower=lowest), (reward + spread).clip(upper=highest)


def training_curves(
    frame: pd.DataFrame,
    *,
    label: str = "stand-in policy",
    games: int | None = None,
    served: Mapping[str, float] | None = None,
    reward_range: tuple[float, float] | None = None,
    success_threshold: float = wordle_reward.SUCCESS_THRESHOLD,
) -> Figure:
    """Reward per game (mean +- std band) per step, and the validation solve rate where measured.

    `frame`: one row per step (the index), columns named like the service's metrics, as
    `monitoring.metrics_frame` returns; it needs `rollout/reward/mean` and `val/reward/pass_at_1`
    (`rollout/reward/std` draws the band when present). `label` names the policy in the title.
    `games` (the held-out words per validation pass) adds a 95% Wilson band around each
    validation point, so step-to-step noise can be told from progress. `served` ({setting: solve
    rate}) draws each served solve rate as a dashed line beside the curve's last point.
    `reward_range` (lowest, highest reward a game can pay; default: the Wordle reward's) clips the
    std band, because mean + std of a skewed reward can exceed anything a game pays and would
    suggest rewards that never happen; the legend says it is clipped. A horizontal line marks
    `success_threshold`, the reward at which the service counts a rollout as solved.
    """
    for column in (REWARD_MEAN, VAL_PASS_AT_1):
        if column not in frame.columns:
            raise ValueError(f"training_curves needs the metric {column!r}; the frame has {sorted(frame.columns)}")
    data = frame.sort_index()
    reward = data[REWARD_MEAN].dropna()
    validation = data[VAL_PASS_AT_1].dropna()
    if reward.empty or validation.empty:
        raise ValueError("training_curves needs at least one logged value of each metric")
    fig, (left, right) = plt.subplots(1, 2, figsize=WIDE_FIGSIZE)

    lowest, highest = reward_range if reward_range is not None else wordle_reward_range()
    if not lowest < highest:
        raise ValueError(f"training_curves needs reward_range as (lowest, highest); got {reward_range!r}")
    left.plot(reward.index, reward.values, color=COLOUR_REWARD, marker="o", markersize=3, label="mean")
    if REWARD_STD in data.columns:
        low, high = reward_band(reward, data[REWARD_STD], (lowest, highest))
        left.fill_between(
            reward.index,
            low,
            high,
            color=COLOUR_REWARD,
            alpha=BAND_ALPHA,
            label=f"± 1 std, clipped to the reward's range [{lowest:+.2f}, {highest:+.2f}]",
        )
    left.axhline(0.0, color="0.4", linewidth=0.8)
    left.axhline(
        success_threshold,
        color=COLOUR_THRESHOLD,
        linestyle="--",
        linewidth=1.0,
        label=f"success threshold (reward {success_threshold:.1f})",
    )
    left.set_xlabel("training step")
    left.set_ylabel("reward per game (reward units)")
    left.set_title(f"Training rollouts (temperature 1): {SOLVE_THRESHOLD_NOTE}", fontsize=9)
    left.legend(loc="lower right", fontsize=7)

    right.plot(
        validation.index,
        validation.values * PERCENT,
        color=COLOUR_VALIDATION,
        marker="s",
        markersize=5,
        label="validation (T=0)",
    )
    if games is not None:
        bounds = [wilson_interval(float(v), games) for v in validation.values]
        right.fill_between(
            validation.index,
            [lo * PERCENT for lo, _ in bounds],
            [hi * PERCENT for _, hi in bounds],
            color=COLOUR_VALIDATION,
            alpha=BAND_ALPHA,
            label=f"95% interval ({games} words)",
        )
    for (name, rate), style in zip((served or {}).items(), ("--", ":", "-.")):
        right.axhline(
            float(rate) * PERCENT,
            color=COLOUR_GAIN,
            linestyle=style,
            linewidth=1.2,
            label=f"served: {name} ({float(rate):.0%})",
        )
    for step, value in validation.items():
        right.annotate(
            f"{value:.0%}", (step, value * PERCENT), textcoords="offset points", xytext=(0, 6), ha="center", fontsize=8
        )
    right.set_xlabel("training step")
    _percent_axis(right, "held-out words solved (%)")
    right.set_title("Validation (temperature 0): val/reward/pass_at_1", fontsize=9)
    if games is not None or served:
        right.legend(loc="lower right", fontsize=7)
    steps = list(reward.index) + list(validation.index)
    for ax in (left, right):
        ax.set_xlim(min(steps) - 0.5, max(steps) + 0.5)

    first_step, last_step = validation.index[0], validation.index[-1]
    title = (
        f"{label}: validation solve rate {validation.iloc[0]:.0%} at step {first_step} -> "
        f"{validation.iloc[-1]:.0%} at step {last_step} (best {validation.max():.0%}); "
        f"reward per game {reward.iloc[0]:+.2f} -> {reward.iloc[-1]:+.2f}"
    )
    if served:
        top_name, top_rate = max(served.items(), key=lambda item: float(item[1]))
        gap = (float(top_rate) - float(validation.iloc[-1])) * PERCENT
        title += f"\nserved ({top_name}): {float(top_rate):.0%}, {gap:+.0f} points against the curve's last point"
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


# --- evaluation bars ------------------------------------------------------------------------------
def setting_label(effort: str, temperature: float) -> str:
    """ "low effort, T=0": how a serving setting is named in tables and figures."""
    return f"{effort} effort, T={float(temperature):g}"


def evaluation_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Base and trained solve rates per setting, in one row per setting.

    Accepts the wide form (columns `setting`, `base`, `trained`) or the long form of
    `evaluation.run_grid` (one row per model and setting: `setting`, or `effort` (or
    `reasoning_effort`) and `temperature`; a `model` column whose values start with "base" or
    "trained"; the solve rate in `pass_at_1` or `eval/reward/pass_at_1`). Returns `setting`,
    `base`, `trained`, `gain` (fractions), settings in the order they first appear.
    """
    data = frame.copy()
    if "setting" not in data.columns:
        effort = next((c for c in ("effort", "reasoning_effort") if c in data.columns), None)
        if effort is None or "temperature" not in data.columns:
            raise ValueError("evaluation results need a 'setting' column, or 'effort' and 'temperature'")
        data["setting"] = [setting_label(e, t) for e, t in zip(data[effort], data["temperature"])]
    if {"base", "trained"} <= set(data.columns):
        wide = data[["setting", "base", "trained"]]
    else:
        rate = next((c for c in ("pass_at_1", "eval/reward/pass_at_1", "solve_rate") if c in data.columns), None)
        if rate is None or "model" not in data.columns:
            raise ValueError(
                "evaluation results need 'base' and 'trained' columns, or a 'model' column and a solve-rate "
                f"column (pass_at_1); got {sorted(data.columns)}"
            )
        kind = data["model"].astype(str).str.lower().str.extract(r"^(base|trained)", expand=False)
        if kind.isna().any():
            raise ValueError(f"model values must start with 'base' or 'trained'; got {sorted(set(data['model']))}")
        wide = (
            data.assign(kind=kind).pivot_table(index="setting", columns="kind", values=rate, sort=False).reset_index()
        )
        wide.columns.name = None
    order = list(dict.fromkeys(data["setting"]))  # the caller's order of the settings
    wide = wide.set_index("setting").loc[order].reset_index()
    wide["gain"] = wide["trained"] - wide["base"]
    return wide[["setting", "base", "trained", "gain"]]


def evaluation_bars(frame: pd.DataFrame, *, label: str = "stand-in policy") -> Figure:
    """Stacked bars per setting: the base model's solve rate, and the adapter's gain on top.

    A setting where the adapter lost ground shows the trained rate as the bar and the loss as a
    hatched red segment above it. `frame`: see `evaluation_table`.
    """
    table = evaluation_table(frame)
    fig, ax = plt.subplots(figsize=(max(6.0, 1.6 * len(table) + 2.0), 4.0))
    x = range(len(table))
    lower = [min(b, t) * PERCENT for b, t in zip(table["base"], table["trained"])]
    step = [abs(g) * PERCENT for g in table["gain"]]
    ax.bar(x, lower, color=COLOUR_BASE, label="base model")
    gains = [s if g >= 0 else 0.0 for s, g in zip(step, table["gain"])]
    losses = [s if g < 0 else 0.0 for s, g in zip(step, table["gain"])]
    ax.bar(x, gains, bottom=lower, color=COLOUR_GAIN, label="gain from the adapter")
    if any(losses):
        ax.bar(x, losses, bottom=lower, color="white", edgecolor=COLOUR_LOSS, hatch="//", label="loss from the adapter")
    for i, row in table.iterrows():
        top = max(row["base"], row["trained"]) * PERCENT
        _label_change(ax, i, top, row, fontsize=9)
    ax.set_xticks(list(x), list(table["setting"]), fontsize=9)
    ax.set_xlabel("serving setting (reasoning effort, sampling temperature)")
    _percent_axis(ax, "held-out words solved (%)")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    points = table["gain"] * PERCENT
    if (points > 0).all():
        finding = f"the adapter adds {points.min():.0f} to {points.max():.0f} points in every setting"
    else:
        finding = f"the adapter's effect ranges from {points.min():+.0f} to {points.max():+.0f} points"
    best = table.loc[table["trained"].idxmax()]
    ax.set_title(f"{label}: {finding}; best: {best['setting']} ({best['trained']:.0%})", fontsize=10)
    fig.tight_layout()
    return fig


def _grid_panel(ax: Any, table: pd.DataFrame, games: int | None) -> None:
    x = list(range(len(table)))
    base = [float(b) * PERCENT if pd.notna(b) else 0.0 for b in table["base"]]
    trained = [float(t) * PERCENT if pd.notna(t) else 0.0 for t in table["trained"]]
    lower = [min(b, t) for b, t in zip(base, trained)]
    ax.bar(x, lower, color=COLOUR_BASE, label="base model")
    ax.bar(
        x,
        [max(t - b, 0.0) for b, t in zip(base, trained)],
        bottom=lower,
        color=COLOUR_GAIN,
        label="gain from the adapter",
    )
    if any(t < b for b, t in zip(base, trained)):
        ax.bar(
            x,
            [max(b - t, 0.0) for b, t in zip(base, trained)],
            bottom=lower,
            color="white",
            edgecolor=COLOUR_LOSS,
            hatch="//",
            label="loss from the adapter",
        )
    for i, row in table.reset_index(drop=True).iterrows():
        if pd.isna(row["base"]) or pd.isna(row["trained"]):
            ax.annotate("not reported", (i, 2), ha="center", fontsize=8, rotation=90, color="0.3")
            continue
        top = max(base[i], trained[i])
        if games is not None:
            # Offset the two whiskers sideways so overlapping intervals stay readable.
            for offset, rate in ((-0.15, row["base"]), (0.15, row["trained"])):
                low, high = wilson_interval(float(rate), games)
                ax.errorbar(
                    i + offset,
                    float(rate) * PERCENT,
                    yerr=[[(float(rate) - low) * PERCENT], [(high - float(rate)) * PERCENT]],
                    fmt="none",
                    ecolor="black",
                    elinewidth=1,
                    capsize=3,
                )
                top = max(top, high * PERCENT)
        _label_change(ax, i, top, row, fontsize=8)
    ax.set_xticks(x, [str(s).replace(", ", "\n") for s in table["setting"]], fontsize=8)
    _percent_axis(ax, "held-out words solved (%)")


def stand_in_effort_note() -> str:
    """What "effort" means for the offline stand-in policy, read from its own `EFFORTS` table.

    The stand-in has no reasoning tokens to spend; its effort levels change how many candidate
    words it weighs and how many of its best proposals it checks against the clues. A figure of
    its results says so, or a reader takes "medium effort" for gpt-oss's reasoning.
    """
    from mtrl_course import local

    efforts = local.stand_in_efforts()
    levels = "; ".join(
        f"{name}: weighs {efforts[name].candidates} words, checks {efforts[name].verified}"
        for name in ("low", "medium")
    )
    return (
        "Effort, for the stand-in: how many candidate words it weighs and how many of its best proposals it "
        f"checks against the clues ({levels}); not gpt-oss's reasoning (mtrl_course/local/stand_in_policy.py)."
    )


def serving_grid(
    frame: pd.DataFrame,
    *,
    games: int,
    cited: pd.DataFrame | None = None,
    label: str = "stand-in policy",
    effort_note: str | None = None,
) -> Figure:
    """Base and trained solve rates per serving setting, with a 95% interval on every bar.

    `frame`: the measured grid (see `evaluation_table`), each rate from `games` games; the whiskers
    are Wilson intervals (black: base on the left, trained on the right of each bar). `cited`: the
    same settings as reported elsewhere (wide form: setting, base, trained; missing rates are
    drawn as "not reported"), shown in a second panel without intervals, because their counts are
    not ours to assume. The title states, from the measured data, whether temperature 1 beat
    temperature 0 at each effort and the range of the adapter's gain. `effort_note` (for the
    stand-in: `stand_in_effort_note()`) is printed under the panels, saying what "effort" means
    for the policy that played.
    """
    table = evaluation_table(frame)
    panels = 2 if cited is not None else 1
    fig, axes = plt.subplots(
        1, panels, figsize=(WIDE_FIGSIZE[0] + 1.0, 4.4) if panels == 2 else (7.0, 4.4), squeeze=False
    )
    _grid_panel(axes[0][0], table, games)
    axes[0][0].set_title(f"{label}: measured, {games} words per bar, 95% intervals", fontsize=9)
    axes[0][0].set_xlabel("serving setting")
    if cited is not None:
        reported = cited.set_index("setting").reindex(table["setting"]).reset_index()
        _grid_panel(axes[0][1], reported, None)
        axes[0][1].set_title("AWS walkthrough (gpt-oss-20b): as reported", fontsize=9)
        axes[0][1].set_xlabel("serving setting")
    axes[0][-1].legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    parsed = table["setting"].str.extract(r"^(?P<effort>\S+) effort, T=(?P<temperature>[\d.]+)$")
    wins, compared = 0, 0
    for effort in dict.fromkeys(parsed["effort"].dropna()):
        at = {float(t): i for i, (e, t) in enumerate(zip(parsed["effort"], parsed["temperature"])) if e == effort}
        if 0.0 in at and 1.0 in at:
            for model in ("base", "trained"):
                compared += 1
                wins += int(table.loc[at[1.0], model] > table.loc[at[0.0], model])
    points = table["gain"] * PERCENT
    finding = f"the adapter adds {points.min():+.0f} to {points.max():+.0f} points"
    if compared:
        finding = f"temperature 1 beats 0 in {wins} of {compared} model-and-effort pairs; " + finding
    fig.suptitle(f"{label}: {finding}", fontsize=10)
    if effort_note:
        fig.text(0.01, 0.01, effort_note, fontsize=7, color="0.25", ha="left", va="bottom", wrap=True)
        fig.tight_layout(rect=(0.0, 0.06, 1.0, 1.0))
    else:
        fig.tight_layout()
    return fig


# --- billable tokens ---------------------------------------------------------------------------------
def _runs(tokens: Mapping[str, Any]) -> dict[str, dict[str, int]]:
    """{run label: counts}: one mapping of token counts, or several under labels."""
    values = list(tokens.values())
    if values and all(isinstance(v, Mapping) for v in values):
        return {str(name): costs.token_counts(v) for name, v in tokens.items()}
    return {"this run": costs.token_counts(tokens)}


def _stacked_shares(ax: Any, runs: Mapping[str, Mapping[str, float]], text: Mapping[str, Mapping[str, str]]) -> None:
    names = list(runs)
    for row, name in enumerate(names):
        total = sum(runs[name].values())
        left = 0.0
        for dimension in costs.DIMENSIONS:
            share = runs[name][dimension] / total if total else 0.0
            ax.barh(
                row,
                share * PERCENT,
                left=left * PERCENT,
                color=DIMENSION_COLOURS[dimension],
                label=dimension if row == 0 else None,
            )
            if share >= MIN_LABELLED_SHARE:
                ax.text(
                    (left + share / 2) * PERCENT,
                    row,
                    f"{dimension}\n{text[name][dimension]}",
                    ha="center",
                    va="center",
                    fontsize=8,
                    color="white",
                )
            elif share > 0:
                # Too narrow to hold its label: write it just above the bar, so no segment is unnamed.
                ax.text(
                    (left + share / 2) * PERCENT,
                    row - 0.42,
                    f"{dimension} {text[name][dimension]}",
                    ha="center",
                    va="bottom",
                    fontsize=7,
                    color="0.2",
                )
            left += share
    ax.set_yticks(range(len(names)), names)
    ax.invert_yaxis()
    ax.set_xlim(0, PERCENT)
    ax.grid(axis="y", visible=False)


def token_shares(tokens: Mapping[str, Any], prices: Mapping[str, Any] | None = None) -> Figure:
    """Billable tokens by dimension (prefill, sample, train) as shares of each run's total.

    `tokens`: one run's counts (keys prefill/sample/train or DescribeJob's names), or several
    runs as {label: counts}; the labels say whose numbers they are and appear in the title.
    Token shares are not cost shares (the dimensions are priced differently), so only with your
    `prices` (USD per million tokens) does a second panel show each dimension's share of the
    cost and the total in dollars; without prices there are no dollars anywhere in the figure.
    """
    runs = _runs(tokens)
    checked = costs.check_prices(prices)
    panels = 2 if checked is not None else 1
    fig, axes = plt.subplots(
        1, panels, figsize=(WIDE_FIGSIZE[0] if panels == 2 else 7.0, 1.0 + 0.9 * len(runs) + 0.8), squeeze=False
    )
    token_text = {
        name: {
            d: f"{counts[d] / costs.MILLION:,.1f} M" if counts[d] >= costs.MILLION / 10 else f"{counts[d]:,}"
            for d in costs.DIMENSIONS
        }
        for name, counts in runs.items()
    }
    _stacked_shares(axes[0][0], runs, token_text)
    axes[0][0].set_xlabel("share of billable tokens (%)")
    axes[0][0].legend(loc="upper center", bbox_to_anchor=(0.5, -0.3), ncol=3, fontsize=8, frameon=False)
    if checked is not None:
        dollars = {
            name: {d: counts[d] / costs.MILLION * checked[d] for d in costs.DIMENSIONS} for name, counts in runs.items()
        }
        dollar_text = {name: {d: f"${v:,.2f}" for d, v in values.items()} for name, values in dollars.items()}
        _stacked_shares(axes[0][1], dollars, dollar_text)
        axes[0][1].set_xlabel("share of cost at your prices (%)")
        axes[0][1].set_yticks(
            range(len(runs)), [f"{name}\n${sum(v.values()):,.2f} in all" for name, v in dollars.items()]
        )
    shares = {
        name: {d: counts[d] / max(1, sum(counts.values())) for d in costs.DIMENSIONS} for name, counts in runs.items()
    }
    largest = {max(costs.DIMENSIONS, key=lambda d: s[d]) for s in shares.values()}
    whose = " and ".join(runs)
    if len(largest) == 1:
        dimension = largest.pop()
        low = min(s[dimension] for s in shares.values())
        high = max(s[dimension] for s in shares.values())
        span = f"{low:.0%}" if math.isclose(low, high, abs_tol=0.005) else f"{low:.0%} to {high:.0%}"
        title = f"Billable-token shares, {whose}: {dimension} tokens are the largest share, {span}"
    else:
        leading = {name: max(costs.DIMENSIONS, key=shares[name].__getitem__) for name in runs}
        title = "Billable-token shares: the largest is " + "; ".join(
            f"{leading[name]}, {shares[name][leading[name]]:.0%}, in {name}" for name in runs
        )
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def _label_change(ax: Any, x: float, top: float, row: Any, *, fontsize: int) -> None:
    """Write "base -> trained" just above a pair of bars."""
    ax.annotate(
        f"{row['base']:.0%} -> {row['trained']:.0%}",
        (x, top),
        textcoords="offset points",
        xytext=(0, 4),
        ha="center",
        fontsize=fontsize,
    )


# --- Notebook 10: the stored plateau runs and checkpoints (experiments/results/*.json) ------------

PLATEAU_RUNS = (("group_16", "group 16"), ("group_32", "group 32"), ("curriculum", "curriculum, group 8"))
PLATEAU_COLOURS = ("black", "tab:blue", "tab:purple", "tab:olive")
TRAIN_REWARD_KEY = "rollout/reward/mean"


def plateau_runs(plateau: Mapping[str, Any], lessons: Mapping[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Per run label, one curve record per seed (step -> value, keyed by metric name).

    `plateau` is failure_modes.json's "plateau" part (group 16, 32 and the curriculum with
    validation every two steps); the default run's curves come from standin_lessons.json.
    """
    runs = {
        "group 8 (default)": [
            {VAL_PASS_AT_1: s["default_run"]["val_pass_at_1"], TRAIN_REWARD_KEY: s["default_run"]["train_reward_mean"]}
            for s in lessons["per_seed"]
            if s["seed"] in plateau["seeds"]
        ]
    }
    for name, label in PLATEAU_RUNS:
        runs[label] = [s[name] for s in plateau["per_seed"]]
    return runs


def plateau_curves(runs: Mapping[str, Sequence[Mapping[str, Any]]]) -> Figure:
    """Training reward and T=0 validation per run: mean over seeds, band = their range."""
    seeds = len(next(iter(runs.values())))
    fig, axes = plt.subplots(1, 2, figsize=(12, 3.8))
    panels = [(TRAIN_REWARD_KEY, "training reward (mean)"), (VAL_PASS_AT_1, "validation pass@1 (T=0)")]
    for ax, (key, label) in zip(axes, panels):
        for (name, per_seed), color in zip(runs.items(), PLATEAU_COLOURS):
            steps = sorted(int(k) for k in per_seed[0][key])
            curves = np.array([[s[key][str(t)] for t in steps] for s in per_seed])
            ax.plot(steps, curves.mean(axis=0), marker="o", ms=3, color=color, label=name)
            ax.fill_between(steps, curves.min(axis=0), curves.max(axis=0), color=color, alpha=0.12)
        ax.set_xlabel("training step")
        ax.set_ylabel(label)
    axes[0].legend(fontsize=8)
    fig.suptitle(
        f"Stand-in, {seeds} seeds (mean, band = range): at an equal episode budget the curves overlap", fontsize=10
    )
    fig.tight_layout()
    return fig


def plateau_matches_lessons(
    runs: Mapping[str, Sequence[Mapping[str, Any]]], plateau: Mapping[str, Any], lessons: Mapping[str, Any]
) -> bool:
    """Whether each re-run's last validation equals standin_lessons' stored final validation.

    Validation does not change what a run trains, so the two must agree to the last bit (both
    were written on the recording machine).
    """
    stored = {("group 16", s["seed"]): s["group_size"]["16"]["final_val"] for s in lessons["per_seed"]}
    stored |= {("group 32", s["seed"]): s["group_size"]["32"]["final_val"] for s in lessons["per_seed"]}
    stored |= {("curriculum, group 8", s["seed"]): s["curriculum"]["final_val"] for s in lessons["per_seed"]}
    return all(
        abs(run[VAL_PASS_AT_1][str(max(int(k) for k in run[VAL_PASS_AT_1]))] - stored[(label, seed)]) < 1e-9
        for _, label in PLATEAU_RUNS
        for seed, run in zip(plateau["seeds"], runs[label])
    )


def checkpoint_series(stats: Mapping[str, Mapping[str, float]]) -> pd.DataFrame:
    """Per step (index): each checkpoint served at T=1 (solve rate mean and sd, mean reward) and
    the run's own T=0 validation (mean and sd), from failure_modes.json's statistics; NaN where a
    step has no such measurement."""
    served = sorted(
        int(k.split()[2].rstrip(":"))
        for k in stats
        if k.startswith("checkpoint step") and k.endswith("solve rate (T1)")
    )
    validated = sorted(int(k.split()[2].rstrip(":")) for k in stats if k.startswith("validation step"))
    columns = {
        "served": {s: stats[f"checkpoint step {s}: served solve rate (T1)"]["mean"] for s in served},
        "served_sd": {s: stats[f"checkpoint step {s}: served solve rate (T1)"]["sd"] for s in served},
        "served_reward": {s: stats[f"checkpoint step {s}: served mean reward (T1)"]["mean"] for s in served},
        "validation": {s: stats[f"validation step {s}: pass@1 (T0)"]["mean"] for s in validated},
        "validation_sd": {s: stats[f"validation step {s}: pass@1 (T0)"]["sd"] for s in validated},
    }
    frame = pd.DataFrame({name: pd.Series(values, dtype=float) for name, values in columns.items()}).sort_index()
    frame.index.name = "step"
    return frame


def settled_step(served: pd.Series, within: float = 0.02) -> int:
    """The first step whose served solve rate is within `within` of the best one."""
    served = served.dropna()
    return int(served.index[(served >= served.max() - within).to_numpy().argmax()])


def checkpoint_curves(series: pd.DataFrame) -> Figure:
    """Checkpoints served at T=1 beside the run's T=0 validation (error bars: sd over seeds)."""
    served, validation = series[["served", "served_sd"]].dropna(), series[["validation", "validation_sd"]].dropna()
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.errorbar(
        list(served.index), served["served"], yerr=served["served_sd"], marker="o", capsize=3,
        label="checkpoint served at T=1, effort low",
    )  # fmt: skip
    ax.errorbar(
        list(validation.index), validation["validation"], yerr=validation["validation_sd"], marker="s", capsize=3,
        label="the run's validation, T=0",
    )  # fmt: skip
    ax.set_xlabel("training step")
    ax.set_ylabel("held-out solve rate")
    ax.set_ylim(0, 1.05)
    ax.set_title(
        f"Stand-in: served at T=1 it is within 2 points of its best by step {settled_step(series['served'])}; "
        "T=0 validation keeps rising",
        fontsize=10,
    )
    ax.legend(fontsize=8)
    return fig


def checkpoint_table(series: pd.DataFrame) -> pd.DataFrame:
    """One row per served checkpoint: solve rate (mean ± sd), mean reward, and the validation
    where that step has one (empty otherwise)."""
    rows = [
        {
            "step": int(step),
            "served solve rate (T=1)": f"{row['served']:.3f} ± {row['served_sd']:.3f}",
            "served mean reward (T=1)": f"{row['served_reward']:.3f}",
            "validation (T=0)": "" if math.isnan(row["validation"]) else f"{row['validation']:.3f}",
        }
        for step, row in series.dropna(subset=["served"]).iterrows()
    ]
    return pd.DataFrame(rows)


MEMORISATION_COLOURS = ("tab:purple", "tab:blue")


def _finish_learner_figure(
    fig: Figure, ax: Any, *, xlabel: str, ylabel: str, ymax: float, title: str, legend: str
) -> Figure:
    """The tiny model's figures end alike: labels, a 0-based percent axis, a small legend, a title."""
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_ylim(0, ymax)
    ax.legend(fontsize=8, loc=legend)
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return fig


def memorisation_curves(runs: Sequence[Mapping[str, Any]], block: int) -> Figure:
    """The tiny model's on-policy solve rate on its training words, by block of `block` steps
    (mean over seeds, band = their range), with each run's held-out solve rate after training
    as a dashed line of the same colour and the base's as a square at step 0: the gap between a
    line and its dashes is what the run learned about its own words and not about the game."""
    fig, ax = plt.subplots(figsize=WIDE_FIGSIZE)
    for run, colour in zip(runs, MEMORISATION_COLOURS):
        blocks = np.array(run["blocks"]) * PERCENT
        x = (np.arange(blocks.shape[1]) + 0.5) * block
        label = f"{run['words']:,} training words ({run['epochs']:.1f} epochs)"
        ax.plot(x, blocks.mean(axis=0), marker="o", ms=3, color=colour, label=f"{label}: training words")
        ax.fill_between(x, blocks.min(axis=0), blocks.max(axis=0), color=colour, alpha=BAND_ALPHA)
        held_out = float(np.mean(run["held_out"])) * PERCENT
        ax.axhline(held_out, color=colour, ls="--", lw=1.2, label=f"{label}: held-out words after training")
        ax.plot(0, run["base"] * PERCENT, marker="s", ms=5, color=colour, ls="none")
    ax.plot([], [], marker="s", ms=5, color=COLOUR_BASE, ls="none", label="the base on the held-out words (step 0)")
    return _finish_learner_figure(
        fig,
        ax,
        xlabel="training step",
        ylabel="solve rate (%), T=1 low",
        ymax=60,
        title="Tiny model, 160 outcome-only steps, 3 seeds: training words against held-out words",
        legend="lower right",
    )


def learner_validation_curves(
    validation: Sequence[Mapping[str, Any]], checkpoints: Sequence[Mapping[str, Any]]
) -> Figure:
    """The tiny model's greedy validation by step for each stored run (`learner_results.validation_curve`
    rows: mean over seeds, band = their range) and, as dots, one run's checkpoints evaluated at
    T=1 low (`learner_results.checkpoints` rows): the same adapters at the two settings."""
    fig, ax = plt.subplots(figsize=WIDE_FIGSIZE)
    frame = pd.DataFrame(list(validation))
    for (run, rows), colour in zip(frame.groupby("run", sort=False), MEMORISATION_COLOURS[::-1]):
        ax.plot(
            rows["step"],
            rows["T=0 validation (mean)"] * PERCENT,
            marker="o",
            ms=3,
            color=colour,
            label=f"{run}: T=0 validation (the job's curve)",
        )
        ax.fill_between(
            rows["step"], rows["lowest seed"] * PERCENT, rows["highest seed"] * PERCENT, color=colour, alpha=BAND_ALPHA
        )
    points = pd.DataFrame(list(checkpoints))
    ax.plot(
        points["step"],
        points["T=1 low"] * PERCENT,
        marker="D",
        ms=5,
        ls=":",
        color=COLOUR_REWARD,
        label="40 steps, 1,788 words: the same checkpoints at T=1 low",
    )
    return _finish_learner_figure(
        fig,
        ax,
        xlabel="training step",
        ylabel="held-out solve rate (%)",
        ymax=45,
        title="Tiny model, outcome-only GRPO, 3 seeds: greedy validation against sampled play",
        legend="lower right",
    )


def learner_settings_bars(grids: Mapping[str, Sequence[Mapping[str, Any]]]) -> Figure:
    """The tiny model's held-out solve rate at each setting (`learner_results.grid` rows), the base
    and each trained adapter named in `grids` (label -> rows) side by side: which setting is best
    for this model, and what training did at each."""
    labels = list(grids)
    settings = [row["setting"] for row in next(iter(grids.values()))]
    x = np.arange(len(settings))
    width = 0.8 / (len(labels) + 1)
    fig, ax = plt.subplots(figsize=WIDE_FIGSIZE)

    def rates(rows: Sequence[Mapping[str, Any]], column: str) -> list[float]:
        return [float(str(row[column]).rstrip("%")) for row in rows]

    first = next(iter(grids.values()))
    ax.bar(x - width * len(labels) / 2, rates(first, "base"), width, color=COLOUR_BASE, label="the base")
    for k, (label, rows) in enumerate(grids.items(), start=1):
        colour = MEMORISATION_COLOURS[(k - 1) % len(MEMORISATION_COLOURS)]
        ax.bar(
            x - width * len(labels) / 2 + k * width,
            rates(rows, "trained (outcome only)"),
            width,
            color=colour,
            label=label,
        )
    ax.set_xticks(x, settings)
    return _finish_learner_figure(
        fig,
        ax,
        xlabel="",
        ylabel="held-out solve rate (%)",
        ymax=45,
        title="Tiny model, 3 seeds: greedy (T=0) is its best setting; training raised T=1 and lowered T=0",
        legend="upper right",
    )
