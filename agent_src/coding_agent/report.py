"""Reading the stored multi-seed results (experiments/results/composite_rewards.json) for notebook 11."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

RESULTS_FILE = Path(__file__).resolve().parents[2] / "experiments" / "results" / "composite_rewards.json"
LAST_STEPS = 5  # "final" values are the mean of the last steps of a run (one step is noisy)


def load(path: Path = RESULTS_FILE) -> dict[str, Any]:
    if not Path(path).is_file():
        raise FileNotFoundError(f"{path} is missing: run `python experiments/composite_rewards.py` to create it")
    return json.loads(Path(path).read_text(encoding="utf-8"))


def curves(results: Mapping[str, Any], variant: str, key: str) -> np.ndarray:
    """seeds x steps for one variant's metric."""
    try:
        runs = results["variants"][variant]
    except KeyError:
        raise KeyError(f"no variant {variant!r} in the results; they hold {sorted(results['variants'])}") from None
    return np.array([runs[seed]["history"][key] for seed in sorted(runs, key=int)])


def final(results: Mapping[str, Any], variant: str, key: str) -> tuple[float, float]:
    """(mean over seeds, std over seeds) of the last-steps mean."""
    ends = curves(results, variant, key)[:, -LAST_STEPS:].mean(axis=1)
    return float(ends.mean()), float(ends.std())


def first(results: Mapping[str, Any], variant: str, key: str) -> float:
    return float(curves(results, variant, key)[:, 0].mean())


def table(results: Mapping[str, Any], variants: Sequence[str], keys: Mapping[str, str]) -> list[dict[str, str]]:
    """One row per variant: "first step -> final (± seed spread)" for each key (label -> metric)."""
    rows = []
    for variant in variants:
        row = {"variant": variant}
        for label, key in keys.items():
            mean, std = final(results, variant, key)
            row[label] = f"{first(results, variant, key):.2f} -> {mean:.2f} ± {std:.2f}"
        rows.append(row)
    return rows


def curves_figure(
    results: Mapping[str, Any],
    variants: Mapping[str, str],
    key: str,
    ylabel: str,
    title: str,
    live: Mapping[str, Sequence[float]] | None = None,
) -> Any:
    """Mean over seeds with a min-max band per variant; dashed lines for runs re-done in the notebook."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    for label, variant in variants.items():
        data = curves(results, variant, key)
        steps = np.arange(1, data.shape[1] + 1)
        (line,) = ax.plot(steps, data.mean(axis=0), label=f"{label} ({data.shape[0]} seeds)")
        ax.fill_between(steps, data.min(axis=0), data.max(axis=0), color=line.get_color(), alpha=0.15)
        if live and label in live:
            ax.plot(
                steps[: len(live[label])],
                live[label],
                linestyle="--",
                color=line.get_color(),
                label=f"{label}, re-run here",
            )
    ax.set_xlabel("training step")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def bars_figure(results: Mapping[str, Any], variants: Mapping[str, str], key: str, ylabel: str, title: str) -> Any:
    import matplotlib.pyplot as plt

    labels = list(variants)
    means, stds = zip(*(final(results, variants[label], key) for label in labels))
    fig, ax = plt.subplots()
    ax.bar(labels, means, yerr=stds, capsize=4, color="tab:blue", alpha=0.8)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.tick_params(axis="x", labelrotation=20)
    ax.grid(axis="x", visible=False)
    fig.tight_layout()
    return fig
