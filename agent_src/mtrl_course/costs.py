"""What a multi-turn RL job costs: billable tokens in three dimensions, times prices you supply.

SageMaker AI bills a multi-turn RL job per million tokens in three dimensions, priced per base
model (SageMaker AI docs): **prefill** (input tokens the policy reads; every turn re-reads the
game so far), **sample** (tokens it generates, reasoning included) and **train** (tokens in the
backward pass that updates the LoRA adapter). DescribeJob reports the counts under
BillableTokenUsage.

The per-token prices are on the SageMaker AI pricing page and in none of the course's sources,
so this module never holds one. Every dollar figure here is either computed from prices the
caller passes in, or quoted from the AWS walkthrough (the SageMaker AI multi-turn RL walkthrough
with Wordle) with that citation next to it. `tests/test_costs.py` checks both rules.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pandas as pd

DIMENSIONS = ("prefill", "sample", "train")
DIMENSION_MEANING = {
    "prefill": "input tokens the policy reads; every turn re-reads the conversation so far",
    "sample": "tokens the policy generates, reasoning tokens included",
    "train": "tokens in the backward pass that updates the LoRA adapter",
}
# DescribeJob's BillableTokenUsage keys per dimension. The training-token key is spelled
# TrainTokenCount in the SDK's docstring and TrainingTokenCount in the API's shape (aws-docs.md
# §1.6 CONFLICT): both are read.
TOKEN_KEYS = {
    "prefill": ("prefill", "PrefillTokenCount"),
    "sample": ("sample", "SampleTokenCount"),
    "train": ("train", "TrainTokenCount", "TrainingTokenCount"),
}
MILLION = 1_000_000
PRICING_PAGE = "https://aws.amazon.com/sagemaker/ai/pricing/"
PRICE_UNIT = "USD per million tokens"
NO_PRICES_NOTE = (
    "no prices given, so no dollars: enter prices from the SageMaker AI pricing page "
    f"({PRICING_PAGE}), in {PRICE_UNIT}, for your base model and Region"
)

# --- The AWS walkthrough's 100-step gpt-oss-20b run (cited, not measured here) ----------------
WALKTHROUGH = "AWS walkthrough"
WALKTHROUGH_SOURCE = "AWS walkthrough (SageMaker AI multi-turn RL with Wordle, 2026)"
WALKTHROUGH_TOKENS = {"prefill": 491_600_000, "sample": 159_700_000, "train": 643_300_000}
WALKTHROUGH_ROLLOUTS = 105_486
WALKTHROUGH_STEPS = 100
WALKTHROUGH_DURATION = "12 h 40 min"
WALKTHROUGH_TRAINING_USD = 339.0  # "about $339" in tokens at gpt-oss-20b list prices, us-east-1
WALKTHROUGH_AGENTCORE_USD = 79.0  # "about $79" of AgentCore runtime, from CloudWatch usage metrics
WALKTHROUGH_EVALUATION_USD = 1.20  # "about $1.20" in tokens for all its evaluation jobs
# How close a user's prices must bring the walkthrough's tokens to its reported total before we
# call them consistent; the reported figure is itself rounded ("about $339").
CONSISTENT_WITHIN = 0.05
BLENDED_RATE_LABEL = "derived: the AWS walkthrough's $339 / 1,294.6 M tokens; an average of three prices, not a price"


# --- inputs -----------------------------------------------------------------------------------
def token_counts(tokens: Mapping[str, Any]) -> dict[str, int]:
    """The three billable counts from `tokens`: keys prefill/sample/train or DescribeJob's
    BillableTokenUsage names. A missing dimension counts 0 (evaluation jobs train nothing).

    Raises ValueError naming the key if a count is not a whole number >= 0, or if a key is unknown.
    """
    known = {key.lower(): dimension for dimension, keys in TOKEN_KEYS.items() for key in keys}
    counts = dict.fromkeys(DIMENSIONS, 0)
    for key, value in tokens.items():
        dimension = known.get(str(key).lower())
        if dimension is None:
            raise ValueError(
                f"unknown token count {key!r}: use prefill, sample and train (or DescribeJob's "
                "PrefillTokenCount, SampleTokenCount, TrainTokenCount)"
            )
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0 or value != int(value):
            raise ValueError(f"token count {key!r} must be a whole number >= 0, got {value!r}")
        counts[dimension] = max(counts[dimension], int(value))  # both train spellings: same count
    return counts


def check_prices(prices: Mapping[str, Any] | None) -> dict[str, float] | None:
    """Your prices in USD per million tokens, checked; None when none were given.

    `None`, `{}` and a dict whose values are all None (the notebooks' empty input) mean "no
    prices". Otherwise every dimension needs a number >= 0; ValueError names what is wrong.
    """
    if not prices or all(value is None for value in prices.values()):
        return None
    unknown = set(prices) - set(DIMENSIONS)
    if unknown:
        raise ValueError(f"unknown price dimension(s) {sorted(unknown)}: prices are per {', '.join(DIMENSIONS)}")
    checked = {}
    for dimension in DIMENSIONS:
        value = prices.get(dimension)
        if value is None:
            raise ValueError(
                f"no price for {dimension!r}: give all three ({', '.join(DIMENSIONS)}) in {PRICE_UNIT}, "
                f"from {PRICING_PAGE}"
            )
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            raise ValueError(f"price for {dimension!r} must be a number >= 0 in {PRICE_UNIT}, got {value!r}")
        checked[dimension] = float(value)
    return checked


# --- estimates --------------------------------------------------------------------------------
def estimate(tokens: Mapping[str, Any], prices: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """One row per dimension plus a total: tokens, millions, share; with prices, their cost.

    Without prices the table has no price or cost column and `frame.attrs["note"]` says where to
    find prices. With prices, the price column is labelled as yours.
    """
    counts = token_counts(tokens)
    checked = check_prices(prices)
    total = sum(counts.values())
    rows = []
    for dimension in DIMENSIONS:
        row: dict[str, Any] = {
            "dimension": dimension,
            "tokens": counts[dimension],
            "million tokens": counts[dimension] / MILLION,
            "share of tokens": counts[dimension] / total if total else 0.0,
        }
        if checked is not None:
            row["your price (USD per 1M)"] = checked[dimension]
            row["cost (USD)"] = counts[dimension] / MILLION * checked[dimension]
        rows.append(row)
    totals: dict[str, Any] = {
        "dimension": "total",
        "tokens": total,
        "million tokens": total / MILLION,
        "share of tokens": 1.0 if total else 0.0,
    }
    if checked is not None:
        totals["your price (USD per 1M)"] = None
        totals["cost (USD)"] = sum(row["cost (USD)"] for row in rows)
    frame = pd.DataFrame([*rows, totals])
    frame.attrs["note"] = "prices: yours (user-supplied)" if checked is not None else NO_PRICES_NOTE
    return frame


def cost(tokens: Mapping[str, Any], prices: Mapping[str, Any]) -> float:
    """Total USD for `tokens` at your `prices` (USD per million tokens, all three dimensions)."""
    checked = check_prices(prices)
    if checked is None:
        raise ValueError(f"cost() needs prices: {NO_PRICES_NOTE}")
    counts = token_counts(tokens)
    return sum(counts[d] / MILLION * checked[d] for d in DIMENSIONS)


def summary(tokens: Mapping[str, Any], prices: Mapping[str, Any] | None = None) -> str:
    """One line: the total tokens, the largest dimension and, only with your prices, the cost."""
    counts = token_counts(tokens)
    total = sum(counts.values())
    if not total:
        return "no billable tokens"
    largest = max(DIMENSIONS, key=lambda d: counts[d])
    line = f"{total / MILLION:,.2f} M billable tokens; {largest} is the largest share ({counts[largest] / total:.0%})"
    checked = check_prices(prices)
    if checked is None:
        return f"{line}; {NO_PRICES_NOTE}"
    return f"{line}; ${cost(counts, checked):,.2f} at your prices"


# --- the walkthrough's run as the worked example ------------------------------------------------
def walkthrough_total_tokens() -> int:
    return sum(WALKTHROUGH_TOKENS.values())


def walkthrough_blended_rate() -> float:
    """$339 / 1,294.6 M tokens, in USD per million tokens. Derived from the AWS walkthrough's
    totals, NOT a price: the three dimensions have prices of their own (see BLENDED_RATE_LABEL)."""
    return WALKTHROUGH_TRAINING_USD / (walkthrough_total_tokens() / MILLION)


def walkthrough_figures() -> pd.DataFrame:
    """The walkthrough's reported run, one figure per row, each with its source."""
    tokens = WALKTHROUGH_TOKENS
    total = walkthrough_total_tokens()
    rows = [
        ("prefill tokens", f"{tokens['prefill'] / MILLION:,.1f} M", WALKTHROUGH),
        ("sample tokens", f"{tokens['sample'] / MILLION:,.1f} M", WALKTHROUGH),
        ("train tokens", f"{tokens['train'] / MILLION:,.1f} M", WALKTHROUGH),
        ("all billable tokens", f"{total / MILLION:,.1f} M", f"derived: the sum of the {WALKTHROUGH}'s three counts"),
        ("rollouts", f"{WALKTHROUGH_ROLLOUTS:,}", WALKTHROUGH),
        ("training steps", f"{WALKTHROUGH_STEPS}", WALKTHROUGH),
        ("duration", WALKTHROUGH_DURATION, WALKTHROUGH),
        (
            "training tokens cost",
            f"about ${WALKTHROUGH_TRAINING_USD:,.0f}",
            f"{WALKTHROUGH} (gpt-oss-20b list prices, us-east-1)",
        ),
        (
            "AgentCore runtime cost",
            f"about ${WALKTHROUGH_AGENTCORE_USD:,.0f}",
            f"{WALKTHROUGH} (from CloudWatch usage metrics)",
        ),
        ("evaluation jobs, tokens", f"about ${WALKTHROUGH_EVALUATION_USD:,.2f}", WALKTHROUGH),
        ("blended rate", f"${walkthrough_blended_rate():.3f} per 1M tokens", BLENDED_RATE_LABEL),
    ]
    return pd.DataFrame(rows, columns=["figure", "value", "source"])


def per_rollout(tokens: Mapping[str, Any], rollouts: int) -> dict[str, float]:
    """Tokens per rollout in each dimension (how a run's length and verbosity show up)."""
    if rollouts <= 0:
        raise ValueError(f"rollouts must be positive, got {rollouts}")
    counts = token_counts(tokens)
    return {dimension: counts[dimension] / rollouts for dimension in DIMENSIONS}


def walkthrough_at_prices(prices: Mapping[str, Any]) -> dict[str, Any]:
    """What your prices say the walkthrough's tokens cost, beside its reported total.

    A check on your prices, not a projection: at gpt-oss-20b list prices in us-east-1 the total
    should come out near the walkthrough's "about $339"; far off means other prices (another
    model or Region), a typo, or prices per token instead of per million.
    """
    computed = cost(WALKTHROUGH_TOKENS, prices)
    ratio = computed / WALKTHROUGH_TRAINING_USD
    consistent = abs(ratio - 1) <= CONSISTENT_WITHIN
    verdict = (
        "consistent with the walkthrough's total"
        if consistent
        else "not the walkthrough's prices (another model or Region, or a typo?)"
    )
    return {
        "at your prices (USD)": round(computed, 2),
        "walkthrough reports (USD)": WALKTHROUGH_TRAINING_USD,
        "ratio": round(ratio, 3),
        "verdict": verdict,
    }


def compare_with_walkthrough(tokens: Mapping[str, Any], prices: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """This run's tokens beside the walkthrough's, per dimension; dollars only at your prices.

    The projection from the walkthrough to your run goes through your prices only: both token
    sets are multiplied by the same user-supplied prices, never by a rate derived from $339.
    """
    counts = token_counts(tokens)
    checked = check_prices(prices)
    rows = []
    for dimension in [*DIMENSIONS, "total"]:
        ours = sum(counts.values()) if dimension == "total" else counts[dimension]
        theirs = walkthrough_total_tokens() if dimension == "total" else WALKTHROUGH_TOKENS[dimension]
        row: dict[str, Any] = {
            "dimension": dimension,
            "this run (tokens)": ours,
            "walkthrough (tokens)": theirs,
            "this run / walkthrough": ours / theirs,
        }
        if checked is not None:
            if dimension == "total":
                row["this run at your prices (USD)"] = cost(counts, checked)
                row["walkthrough at your prices (USD)"] = cost(WALKTHROUGH_TOKENS, checked)
            else:
                row["this run at your prices (USD)"] = ours / MILLION * checked[dimension]
                row["walkthrough at your prices (USD)"] = theirs / MILLION * checked[dimension]
        rows.append(row)
    frame = pd.DataFrame(rows)
    frame.attrs["note"] = "prices: yours (user-supplied)" if checked is not None else NO_PRICES_NOTE
    return frame
