"""The tolerant comparison for notebook cells whose numbers depend on the CPU (tests/numbers_within.py)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from numbers_within import TOLERANCES, Tolerance, differences, tolerance_from_tags

LOOSE = TOLERANCES["rates"]


def test_a_last_digit_change_passes_and_a_real_change_does_not() -> None:
    stored = "billable prefill tokens: 4,536,181 (mean reward 0.339)"
    assert differences(stored, "billable prefill tokens: 4,536,581 (mean reward 0.338)", LOOSE) == []
    moved = differences(stored, "billable prefill tokens: 5,036,181 (mean reward 0.339)", LOOSE)
    assert moved and "5,036,181 where 4,536,181" in moved[0]


def test_the_text_around_the_numbers_must_match_exactly() -> None:
    # A setting printed in a tolerant cell is a number too: the tolerance must be tight enough
    # that a changed setting still fails (temperature 1 against 0 is far outside 0.01 + 0.002).
    assert differences("solved 0.42 at temperature 1", "solved 0.42 at temperature 0", LOOSE)
    assert differences("best: CRANE 0.5", "best: SLATE 0.5", LOOSE)[0].startswith("text differs")


def test_a_different_count_of_numbers_is_named() -> None:
    assert differences("steps 1 2 3", "steps 1 2", LOOSE) == ["2 numbers printed where 3 were stored"]


def test_words_with_digits_are_text_not_numbers() -> None:
    # A model id, a notebook name and an ARN suffix are text: they must match exactly.
    assert differences("gpt-oss-20b in 05_launch", "gpt-oss-21b in 05_launch", Tolerance(0.5, 5))
    assert differences("run r03-a0", "run r04-a0", Tolerance(0.5, 5))


@given(
    st.lists(st.floats(min_value=-1e6, max_value=1e6, allow_nan=False), min_size=1, max_size=8),
    st.floats(min_value=-0.009, max_value=0.009),
)
def test_numbers_moved_within_the_relative_tolerance_pass(values: list[float], shift: float) -> None:
    stored = " | ".join(f"x {v:.3f}" for v in values)
    fresh = " | ".join(f"x {v * (1 + shift):.3f}" for v in values)
    assert differences(stored, fresh, Tolerance(rel=0.01, abs=0.002)) == []


@pytest.mark.parametrize(
    "tags, expected",
    [
        ([], None),
        (["stderr-ok"], None),
        (["numbers-within:rates"], Tolerance(0.001, 0.01)),
        (["numbers-within:points"], Tolerance(0.001, 1.0)),
    ],
)
def test_tags_are_read(tags: list[str], expected: Tolerance | None) -> None:
    assert tolerance_from_tags(tags) == expected


@pytest.mark.parametrize("tags", [["numbers-within:rel=0.01"], ["numbers-within:rates", "numbers-within:counts"]])
def test_an_unknown_or_repeated_tag_is_refused_by_name(tags: list[str]) -> None:
    with pytest.raises(ValueError, match="numbers-within"):
        tolerance_from_tags(tags)


def test_every_named_tolerance_is_a_valid_notebook_tag() -> None:
    # nbformat's schema forbids commas in tags.
    assert all("," not in name and " " not in name for name in TOLERANCES)


def test_percentages_are_compared_as_fractions() -> None:
    # A rate of 0.495 printed as 49% on one machine and 50% on another: one point, inside abs=0.01.
    assert differences("solve rate 49% (+12 points)", "solve rate 50% (+13 points)", LOOSE) == []
    assert differences("solve rate 49%", "solve rate 52%", LOOSE) == [
        "52 where 49 was stored (tolerance rel=0.001,abs=0.01)"
    ]
