"""costs: token arithmetic, user-supplied prices only, and no dollar figure without a source."""

from __future__ import annotations

import ast
import inspect
import re

import pytest

from mtrl_course import costs

DOLLAR_AMOUNT = re.compile(r"\$\s?\d")
PRICES = {"prefill": 0.1, "sample": 0.4, "train": 0.3}
RUN = {"PrefillTokenCount": 4_000_000, "SampleTokenCount": 1_000_000, "TrainTokenCount": 5_000_000}


def _text(frame) -> str:
    return frame.to_string() + "\n" + str(frame.attrs.get("note", ""))


# --- token counts and prices -----------------------------------------------------------------
def test_token_counts_read_both_spellings_and_default_missing_dimensions_to_zero():
    assert costs.token_counts({"PrefillTokenCount": 5, "SampleTokenCount": 2}) == {
        "prefill": 5,
        "sample": 2,
        "train": 0,
    }
    assert costs.token_counts({"prefill": 1, "sample": 2, "TrainingTokenCount": 3}) == {
        "prefill": 1,
        "sample": 2,
        "train": 3,
    }
    # DescribeJob may report both train spellings for the same count: it is not added twice.
    assert costs.token_counts({"TrainTokenCount": 7, "TrainingTokenCount": 7})["train"] == 7


@pytest.mark.parametrize("bad", [{"prefill": -1}, {"sample": 1.5}, {"train": "10"}, {"train": True}])
def test_token_counts_reject_bad_values_naming_the_key(bad):
    with pytest.raises(ValueError, match=next(iter(bad))):
        costs.token_counts(bad)


def test_token_counts_reject_unknown_keys():
    with pytest.raises(ValueError, match="'decode'"):
        costs.token_counts({"decode": 3})


@pytest.mark.parametrize("empty", [None, {}, {"prefill": None, "sample": None, "train": None}])
def test_empty_prices_mean_no_prices(empty):
    assert costs.check_prices(empty) is None


@pytest.mark.parametrize(
    "bad, named",
    [
        ({"prefill": 0.1, "sample": 0.2}, "'train'"),
        ({"prefill": 0.1, "sample": -0.2, "train": 0.1}, "'sample'"),
        ({"prefill": float("nan"), "sample": 0.2, "train": 0.1}, "'prefill'"),
        ({"prefill": 0.1, "sample": 0.2, "train": 0.1, "storage": 1.0}, "storage"),
    ],
)
def test_bad_prices_are_refused_naming_the_dimension(bad, named):
    with pytest.raises(ValueError, match=named):
        costs.check_prices(bad)


# --- estimates ---------------------------------------------------------------------------------
def test_estimate_without_prices_has_tokens_only_and_the_pricing_page_note():
    frame = costs.estimate(RUN)
    assert list(frame["dimension"]) == ["prefill", "sample", "train", "total"]
    assert list(frame["tokens"]) == [4_000_000, 1_000_000, 5_000_000, 10_000_000]
    assert frame["share of tokens"].iloc[:3].sum() == pytest.approx(1.0)
    assert not any("USD" in column or "price" in column for column in frame.columns)
    assert "SageMaker AI pricing page" in frame.attrs["note"]


def test_estimate_with_prices_multiplies_per_million_and_totals():
    frame = costs.estimate(RUN, PRICES).set_index("dimension")
    assert frame.loc["prefill", "cost (USD)"] == pytest.approx(0.4)
    assert frame.loc["sample", "cost (USD)"] == pytest.approx(0.4)
    assert frame.loc["train", "cost (USD)"] == pytest.approx(1.5)
    assert frame.loc["total", "cost (USD)"] == pytest.approx(2.3)
    assert costs.cost(RUN, PRICES) == pytest.approx(2.3)
    assert "user-supplied" in frame.attrs["note"]


def test_cost_needs_prices():
    with pytest.raises(ValueError, match="pricing page"):
        costs.cost(RUN, {})


def test_summary_names_the_largest_dimension_and_adds_dollars_only_with_prices():
    line = costs.summary(RUN)
    assert "train is the largest share (50%)" in line
    assert not DOLLAR_AMOUNT.search(line)
    assert "$2.30 at your prices" in costs.summary(RUN, PRICES)
    assert costs.summary({}) == "no billable tokens"


# --- the walkthrough ------------------------------------------------------------------------------
def test_walkthrough_totals_and_the_derived_blended_rate():
    assert costs.walkthrough_total_tokens() == 1_294_600_000
    assert costs.walkthrough_blended_rate() == pytest.approx(339 / 1294.6)
    assert "not a price" in costs.BLENDED_RATE_LABEL


def test_every_walkthrough_dollar_figure_carries_its_source():
    figures = costs.walkthrough_figures()
    dollar_rows = figures[figures["value"].str.contains(r"\$")]
    assert len(dollar_rows) == 4  # training tokens, AgentCore runtime, evaluation, blended rate
    assert dollar_rows["source"].str.contains("walkthrough").all()
    blended = figures.set_index("figure").loc["blended rate"]
    assert "not a price" in blended["source"]


def test_prices_that_reproduce_the_walkthrough_total_are_called_consistent():
    # Any triple with 491.6 P + 159.7 S + 643.3 T = 339 reproduces the total; these are made up.
    scale = 339 / 1294.6
    made_up = {"prefill": scale, "sample": scale, "train": scale}
    assert costs.walkthrough_at_prices(made_up)["verdict"].startswith("consistent")
    tenfold = {d: 10 * v for d, v in made_up.items()}
    assert costs.walkthrough_at_prices(tenfold)["verdict"].startswith("not the walkthrough")


def test_comparison_goes_through_user_prices_only():
    plain = costs.compare_with_walkthrough(RUN)
    assert not DOLLAR_AMOUNT.search(_text(plain))
    assert not any("USD" in column for column in plain.columns)
    priced = costs.compare_with_walkthrough(RUN, PRICES).set_index("dimension")
    assert priced.loc["total", "this run at your prices (USD)"] == pytest.approx(2.3)
    expected = sum(costs.WALKTHROUGH_TOKENS[d] / 1e6 * PRICES[d] for d in costs.DIMENSIONS)
    assert priced.loc["total", "walkthrough at your prices (USD)"] == pytest.approx(expected)
    assert priced.loc["train", "this run / walkthrough"] == pytest.approx(5e6 / 643.3e6)


# --- never an invented price ----------------------------------------------------------------------
def test_no_dollar_amount_without_a_user_price_or_a_citation():
    """Every output path without prices is free of dollar amounts, and every dollar amount
    written into the module's own text cites the walkthrough."""
    for text in (_text(costs.estimate(RUN)), costs.summary(RUN), _text(costs.compare_with_walkthrough(RUN))):
        assert not DOLLAR_AMOUNT.search(text), text
    tree = ast.parse(inspect.getsource(costs))
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and DOLLAR_AMOUNT.search(node.value):
            assert "walkthrough" in node.value.lower(), f"a dollar amount without its source: {node.value!r}"
    # Numbers that are dollars are named as the walkthrough's, and there is no price table.
    dollars = [name for name in vars(costs) if name.endswith("_USD")]
    assert dollars and all(name.startswith("WALKTHROUGH_") for name in dollars)
    assert not [name for name in vars(costs) if "PRICE" in name and isinstance(getattr(costs, name), dict)]
