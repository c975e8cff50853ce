"""plots: data in, titles that state the finding, labelled axes, no dollars without prices."""

from __future__ import annotations

import hashlib
import io
import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from mtrl_course import costs, plots  # noqa: E402

DOLLAR = re.compile(r"\$\s?\d")


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def curves() -> pd.DataFrame:
    frame = pd.DataFrame(index=pd.Index(range(0, 6), name="step"))
    frame["rollout/reward/mean"] = [np.nan, -0.4, -0.1, 0.2, 0.3, 0.35]
    frame["rollout/reward/std"] = [np.nan, 0.7, 0.7, 0.6, 0.6, 0.5]
    frame["val/reward/pass_at_1"] = [0.25, np.nan, np.nan, 0.375, np.nan, 0.5]
    return frame


def texts(fig) -> list[str]:
    found = [fig._suptitle.get_text()] if fig._suptitle else []
    for ax in fig.axes:
        found += [ax.get_title(), ax.get_xlabel(), ax.get_ylabel()]
        found += [t.get_text() for t in ax.texts + ax.get_yticklabels() + ax.get_xticklabels()]
        found += [child.get_text() for child in ax.get_children() if isinstance(child, matplotlib.text.Annotation)]
    return found


def png_digest(fig) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=60, metadata={"Software": None})
    return hashlib.sha256(buffer.getvalue()).hexdigest()


def test_training_curves_title_states_the_validation_and_reward_change():
    fig = plots.training_curves(curves(), label="stand-in policy")
    title = fig._suptitle.get_text()
    assert "25% at step 0 -> 50% at step 5" in title
    assert "-0.40 -> +0.35" in title
    left, right = fig.axes
    assert left.get_xlabel() == right.get_xlabel() == "training step"
    assert "reward" in left.get_ylabel() and "(%)" in right.get_ylabel()
    # Validation is drawn at its own steps only, in percent.
    line = right.get_lines()[0]
    assert list(line.get_xdata()) == [0, 3, 5] and list(line.get_ydata()) == [25.0, 37.5, 50.0]


def test_training_curves_names_a_missing_metric():
    with pytest.raises(ValueError, match="val/reward/pass_at_1"):
        plots.training_curves(curves().drop(columns="val/reward/pass_at_1"))


def test_figures_are_deterministic():
    assert png_digest(plots.training_curves(curves())) == png_digest(plots.training_curves(curves()))


def evaluation_long() -> pd.DataFrame:
    rows = []
    for effort, temperature, base, trained in (("low", 0.0, 0.15, 0.69), ("medium", 1.0, 0.61, 0.84)):
        rows.append({"effort": effort, "temperature": temperature, "model": "base", "pass_at_1": base})
        rows.append({"effort": effort, "temperature": temperature, "model": "trained", "pass_at_1": trained})
    return pd.DataFrame(rows)


def test_evaluation_table_accepts_long_and_wide_forms():
    table = plots.evaluation_table(evaluation_long())
    assert list(table["setting"]) == ["low effort, T=0", "medium effort, T=1"]
    assert table["gain"].round(2).tolist() == [0.54, 0.23]
    wide = plots.evaluation_table(table[["setting", "base", "trained"]])
    pd.testing.assert_frame_equal(wide, table)
    with pytest.raises(ValueError, match="'base' or 'trained'"):
        plots.evaluation_table(evaluation_long().assign(model="other"))


def test_evaluation_bars_stack_the_gain_on_the_base_rate():
    fig = plots.evaluation_bars(evaluation_long())
    ax = fig.axes[0]
    heights = [round(p.get_height(), 6) for p in ax.patches]
    bottoms = [round(p.get_y(), 6) for p in ax.patches]
    assert heights == [15.0, 61.0, 54.0, 23.0]
    assert bottoms == [0.0, 0.0, 15.0, 61.0]
    assert "adds 23 to 54 points in every setting" in ax.get_title()
    assert ax.get_ylabel() == "held-out words solved (%)"


def test_evaluation_bars_show_a_loss_as_a_loss():
    frame = pd.DataFrame({"setting": ["a", "b"], "base": [0.5, 0.2], "trained": [0.4, 0.3]})
    ax = plots.evaluation_bars(frame).axes[0]
    assert "ranges from -10 to +10 points" in ax.get_title()
    assert any(p.get_hatch() == "//" for p in ax.patches)


def test_token_shares_without_prices_has_no_dollars():
    fig = plots.token_shares(
        {
            "this job": {"prefill": 3_000_000, "sample": 500_000, "train": 3_500_000},
            "AWS walkthrough": costs.WALKTHROUGH_TOKENS,
        }
    )
    assert len(fig.axes) == 1
    assert not any(DOLLAR.search(t) for t in texts(fig))
    assert fig._suptitle.get_text() == (
        "Billable-token shares, this job and AWS walkthrough: train tokens are the largest share, 50%"
    )
    assert fig.axes[0].get_xlabel() == "share of billable tokens (%)"


def test_token_shares_names_each_runs_largest_dimension_when_they_differ():
    fig = plots.token_shares(
        {"a": {"prefill": 6, "sample": 1, "train": 3}, "b": {"prefill": 1, "sample": 1, "train": 8}}
    )
    assert fig._suptitle.get_text() == "Billable-token shares: the largest is prefill, 60%, in a; train, 80%, in b"


def test_token_shares_with_prices_adds_a_cost_panel_at_those_prices():
    prices = {"prefill": 0.1, "sample": 0.4, "train": 0.3}
    fig = plots.token_shares({"prefill": 4_000_000, "sample": 1_000_000, "train": 5_000_000}, prices)
    assert len(fig.axes) == 2
    labels = [t.get_text() for t in fig.axes[1].get_yticklabels()]
    assert labels == ["this run\n$2.30 in all"]
    assert "your prices" in fig.axes[1].get_xlabel()


# --- 95% intervals and the serving grid ------------------------------------------------------------
def test_wilson_interval_matches_a_known_value_and_stays_inside_0_1():
    low, high = plots.wilson_interval(0.5, 128)
    assert round(low, 3) == 0.415 and round(high, 3) == 0.585
    assert plots.wilson_interval(0.0, 128)[0] == 0.0 and plots.wilson_interval(1.0, 128)[1] == 1.0
    assert 0.0 < plots.wilson_interval(0.0, 128)[1] < 0.05  # zero solved still leaves an upper bound


@pytest.mark.parametrize("rate, games", [(0.5, 0), (0.5, 12.5), (1.2, 128), (-0.1, 128)])
def test_wilson_interval_names_bad_input(rate, games):
    with pytest.raises(ValueError, match="wilson_interval"):
        plots.wilson_interval(rate, games)


def grid_long() -> pd.DataFrame:
    rows = []
    for effort, temperature, base, trained in (
        ("low", 0.0, 0.05, 0.55),
        ("low", 1.0, 0.14, 0.98),
        ("medium", 0.0, 0.16, 0.72),
        ("medium", 1.0, 0.21, 0.99),
    ):
        rows.append({"effort": effort, "temperature": temperature, "model": "base", "pass_at_1": base})
        rows.append({"effort": effort, "temperature": temperature, "model": "trained", "pass_at_1": trained})
    return pd.DataFrame(rows)


def test_serving_grid_draws_an_interval_per_measured_bar_and_states_the_temperature_finding():
    cited = pd.DataFrame([{"setting": "low effort, T=1", "base": 0.15, "trained": 0.69}])
    fig = plots.serving_grid(grid_long(), games=128, cited=cited)
    measured, reported = fig.axes[:2]
    whiskers = [c for c in measured.containers if c.__class__.__name__ == "ErrorbarContainer"]
    assert len(whiskers) == 8 and not [c for c in reported.containers if c.__class__.__name__ == "ErrorbarContainer"]
    title = fig._suptitle.get_text()
    assert "temperature 1 beats 0 in 4 of 4" in title and "+50 to +84 points" in title
    assert any("not reported" in t for t in texts(fig))


def test_serving_grid_title_counts_a_pair_where_greedy_wins():
    frame = grid_long()
    frame.loc[(frame["model"] == "base") & (frame["effort"] == "low") & (frame["temperature"] == 0.0), "pass_at_1"] = (
        0.5
    )
    assert "3 of 4" in plots.serving_grid(frame, games=128)._suptitle.get_text()


def test_training_curves_states_the_served_gap_against_the_last_point():
    fig = plots.training_curves(curves(), games=128, served={"trained, low effort, T=1": 0.9})
    assert "90%, +40 points against the curve's last point" in fig._suptitle.get_text()


# --- issue 13's figure fixes ------------------------------------------------------------------------
def test_training_band_never_rises_above_what_a_game_can_pay_and_says_so():
    frame = curves()
    frame["rollout/reward/mean"] = [np.nan, 1.2, 1.3, 1.4, 1.5, 1.55]
    frame["rollout/reward/std"] = [np.nan, 0.9, 0.9, 0.9, 0.9, 0.9]
    left = plots.training_curves(frame).axes[0]
    lowest, highest = plots.wordle_reward_range()
    assert (lowest, highest) == (-1.5, 1.59)  # never a valid guess; a first-guess solve at the clip
    band = next(c for c in left.collections if c.get_label().startswith("± 1 std"))
    ys = np.concatenate([path.vertices[:, 1] for path in band.get_paths()])
    assert ys.max() <= highest + 1e-9 and ys.min() >= lowest - 1e-9
    assert ys.max() == pytest.approx(highest)  # the clip is active here, not merely unreached
    assert "clipped to the reward's range [-1.50, +1.59]" in band.get_label()


def test_training_curves_draw_the_success_threshold():
    left = plots.training_curves(curves()).axes[0]
    threshold = [line for line in left.get_lines() if line.get_label() == "success threshold (reward 1.0)"]
    assert len(threshold) == 1 and list(threshold[0].get_ydata()) == [1.0, 1.0]


def test_training_curves_reject_an_empty_reward_range():
    with pytest.raises(ValueError, match="reward_range"):
        plots.training_curves(curves(), reward_range=(1.0, -1.0))


def test_token_shares_labels_every_segment_even_a_thin_one():
    fig = plots.token_shares({"this job (stand-in policy)": {"prefill": 960, "sample": 10, "train": 30}})
    labels = " ".join(t.get_text() for t in fig.axes[0].texts)
    for dimension in ("prefill", "sample", "train"):
        assert dimension in labels
    title = fig._suptitle.get_text()
    assert "this job (stand-in policy)" in title and ") (" not in title and "cost" not in title.lower()


def test_serving_grid_says_what_effort_means_for_the_stand_in():
    from mtrl_course.local.stand_in_policy import EFFORTS

    note = plots.stand_in_effort_note()
    assert f"low: weighs {EFFORTS['low'].candidates} words, checks {EFFORTS['low'].verified}" in note
    assert "not gpt-oss" in note
    fig = plots.serving_grid(grid_long(), games=128, label="stand-in policy", effort_note=note)
    assert note in [t.get_text() for t in fig.texts]
    assert fig._suptitle.get_text().startswith("stand-in policy:")
    assert [t.get_text() for t in plots.serving_grid(grid_long(), games=128).texts] == [
        plots.serving_grid(grid_long(), games=128)._suptitle.get_text()
    ]


# The band's property over many curves is checked on the function that computes it (drawing a
# figure per example cost about 0.2 s each); the test after it checks that the figure draws
# exactly that band, clip included.
@settings(max_examples=200, deadline=None)
@given(
    means=st.lists(st.floats(-1.5, 1.59), min_size=2, max_size=6),
    std=st.floats(0.0, 3.0),
    missing=st.sets(st.integers(0, 5)),
)
def test_training_band_stays_inside_the_reward_range_for_any_curve(means, std, missing):
    reward = pd.Series(means, index=range(1, len(means) + 1))
    stds = pd.Series([np.nan if i in missing else std for i in range(len(means))], index=reward.index)
    lowest, highest = plots.wordle_reward_range()
    low, high = plots.reward_band(reward, stds, (lowest, highest))
    assert list(low.index) == list(high.index) == list(reward.index)
    assert (lowest - 1e-9 <= low).all() and (high <= highest + 1e-9).all()
    assert (low <= reward + 1e-12).all() and (reward <= high + 1e-12).all()
    assert (high - low <= 2 * std + 1e-9).all()  # the clip only ever narrows it
    for i in missing & set(range(len(means))):  # a step without a std gets no band
        assert low.iloc[i] == high.iloc[i] == reward.iloc[i]


def test_the_figure_draws_the_computed_band():
    frame = curves()
    frame["rollout/reward/mean"] = [np.nan, -1.4, 0.2, 1.3, 1.5, 1.55]
    frame["rollout/reward/std"] = [np.nan, 0.9, np.nan, 0.9, 0.2, 0.9]
    left = plots.training_curves(frame).axes[0]
    band = next(c for c in left.collections if c.get_label().startswith("± 1 std"))
    drawn: dict[float, set[float]] = {}
    for path in band.get_paths():
        for x, y in path.vertices:
            drawn.setdefault(round(float(x), 9), set()).add(round(float(y), 9))
    reward = frame["rollout/reward/mean"].dropna()
    low, high = plots.reward_band(reward, frame["rollout/reward/std"], plots.wordle_reward_range())
    assert drawn == {round(float(x), 9): {round(low[x], 9), round(high[x], 9)} for x in reward.index}
    assert min(low) == pytest.approx(-1.5) and max(high) == pytest.approx(1.59)  # both clips active
    plt.close("all")


# --- notebook 10's stored runs ---------------------------------------------------------------------


def _stats() -> dict[str, dict[str, float]]:
    served = {0: 0.2, 1: 0.9, 2: 0.95, 3: 0.96}
    stats = {f"checkpoint step {s}: served solve rate (T1)": {"mean": v, "sd": 0.01} for s, v in served.items()}
    stats |= {f"checkpoint step {s}: served mean reward (T1)": {"mean": v - 0.5, "sd": 0.0} for s, v in served.items()}
    stats |= {f"validation step {s}: pass@1 (T0)": {"mean": 0.1 * s, "sd": 0.02} for s in (0, 2)}
    stats["tokens fresh: calls"] = {"mean": 1.0, "sd": 0.0}  # other statistics are ignored
    return stats


def test_checkpoint_series_table_and_settled_step():
    series = plots.checkpoint_series(_stats())
    assert list(series.index) == [0, 1, 2, 3] and np.isnan(series.loc[1, "validation"])
    assert plots.settled_step(series["served"]) == 2  # 0.95 is within 2 points of the best, 0.96
    table = plots.checkpoint_table(series)
    assert list(table["step"]) == [0, 1, 2, 3]
    assert table.loc[1, "served solve rate (T=1)"] == "0.900 ± 0.010" and table.loc[1, "validation (T=0)"] == ""
    assert table.loc[2, "validation (T=0)"] == "0.200" and table.loc[3, "served mean reward (T=1)"] == "0.460"
    fig = plots.checkpoint_curves(series)
    assert "by step 2" in fig.axes[0].get_title() and fig.axes[0].get_ylabel() == "held-out solve rate"


def test_plateau_runs_curves_and_the_check_against_the_stored_final_validation():
    curve = lambda last: {"0": 0.0, "2": last}  # noqa: E731
    run = lambda last: {plots.VAL_PASS_AT_1: curve(last), plots.TRAIN_REWARD_KEY: curve(1.0)}  # noqa: E731
    plateau = {"seeds": [1], "per_seed": [{"group_16": run(0.5), "group_32": run(0.6), "curriculum": run(0.4)}]}
    lessons = {
        "per_seed": [
            {
                "seed": 1,
                "default_run": {"val_pass_at_1": curve(0.55), "train_reward_mean": curve(1.1)},
                "group_size": {"16": {"final_val": 0.5}, "32": {"final_val": 0.6}},
                "curriculum": {"final_val": 0.4},
            }
        ]
    }
    runs = plots.plateau_runs(plateau, lessons)
    assert list(runs) == ["group 8 (default)", "group 16", "group 32", "curriculum, group 8"]
    assert plots.plateau_matches_lessons(runs, plateau, lessons)
    lessons["per_seed"][0]["curriculum"]["final_val"] = 0.41
    assert not plots.plateau_matches_lessons(runs, plateau, lessons)
    fig = plots.plateau_curves(runs)
    assert (
        "1 seeds" in fig._suptitle.get_text() and [ax.get_ylabel() for ax in fig.axes][1] == "validation pass@1 (T=0)"
    )


def test_the_memorisation_figure_draws_each_run_its_held_out_line_and_base():
    from mtrl_course import learner_results

    runs = learner_results.memorisation_runs()
    fig = plots.memorisation_curves(runs, learner_results.BLOCK)
    ax = fig.axes[0]
    # Per run: the training curve, its held-out line and its base marker; plus the legend's base entry.
    assert len(ax.lines) == 3 * len(runs) + 1
    held_out = [line for line in ax.lines if line.get_linestyle() == "--"]
    assert [round(line.get_ydata()[0], 6) for line in held_out] == [
        round(100 * float(np.mean(run["held_out"])), 6) for run in runs
    ]
    plt.close(fig)


def test_the_learner_validation_figure_shows_both_settings():
    from mtrl_course import learner_results

    fig = plots.learner_validation_curves(learner_results.validation_curve(), learner_results.checkpoints())
    ax = fig.axes[0]
    labels = [line.get_label() for line in ax.lines]
    assert sum("T=0 validation" in label for label in labels) == 2 and any("T=1 low" in label for label in labels)
    plt.close(fig)


def test_the_learner_settings_figure_has_a_bar_per_model_and_setting():
    from mtrl_course import learner_results

    grids = {"40 steps": learner_results.grid(), "10 steps": learner_results.grid(learner_results.lessons())}
    fig = plots.learner_settings_bars(grids)
    ax = fig.axes[0]
    assert len(ax.patches) == (1 + len(grids)) * len(learner_results.SETTINGS)
    heights = [round(p.get_height(), 1) for p in ax.patches[: len(learner_results.SETTINGS)]]
    assert heights == [float(row["base"].rstrip("%")) for row in grids["40 steps"]]
    plt.close(fig)
