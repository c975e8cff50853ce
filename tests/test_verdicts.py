"""The one verdict rule: Student's t cutoff for the seed count, never a fixed 2 SE."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mtrl_course import verdicts

pytestmark = pytest.mark.floats


def test_the_cutoffs_are_students_t_at_95_percent_two_sided():
    for df, value in verdicts.T_CUTOFF_95.items():
        assert verdicts.cutoff(df + 1) == pytest.approx(value, abs=5e-4)
    # With 2 degrees of freedom P(T <= t) = 1/2 + t / (2 sqrt(2 + t^2)): the 2-SE rule's false-alarm rate.
    assert 2 * (1 - (0.5 + 2 / (2 * math.sqrt(6)))) == pytest.approx(0.184, abs=1e-3)


def test_three_seeds_more_than_two_but_less_than_four_point_three_se_away_is_no_effect():
    values = [0.05, 0.00, 0.10]  # mean 0.05, SE 0.0289: 1.7 SE
    assert verdicts.verdict(values).label == verdicts.NULL
    values = [0.05, 0.04, 0.09]  # mean 0.06, SE 0.0153: 3.9 SE, beyond 2 but within 4.30
    v = verdicts.verdict(values)
    assert v.mean / v.se > 2 and v.label == verdicts.NULL and v.cutoff == pytest.approx(4.303, abs=1e-3)
    v = verdicts.verdict([0.06, 0.05, 0.07])  # 6 SE
    assert v.label == verdicts.GAIN and v.beyond_noise
    assert verdicts.verdict([-0.06, -0.05, -0.07]).label == verdicts.LOSS
    assert verdicts.verdict([-0.06, -0.05, -0.07], names=("higher", "lower")).label == "lower"


def test_one_seed_gets_no_verdict_and_no_values_are_refused():
    assert verdicts.verdict([0.2]).label == verdicts.UNDECIDED
    with pytest.raises(ValueError, match="at least one value"):
        verdicts.verdict([])
    with pytest.raises(ValueError, match="at least 2 seeds"):
        verdicts.cutoff(1)


@given(st.lists(st.floats(-1, 1), min_size=2, max_size=8), st.floats(0.01, 10))
def test_the_verdict_does_not_depend_on_the_unit(values, scale):
    # Measuring the same gains in points instead of fractions changes no verdict.
    a, b = verdicts.verdict(values), verdicts.verdict([v * scale for v in values])
    margin = abs(abs(a.mean) - a.cutoff * a.se)
    if margin > 1e-9 * (abs(a.mean) + 1):
        assert a.label == b.label
