"""The stand-in policy's turns equal the recorded run: exactly where that is machine-independent,
within a measured tolerance where floats are involved (docs/DESIGN.md, "Comparing numbers across
machines").

Any change to what `StandInPolicy.decide` returns (tool call, token counts, text length, the
trace) must be deliberate: re-record with `python benchmarks/bench_policy.py --record`, re-run
the experiments, and update GOLDEN_EXACT, FLOAT_COUNT and FINGERPRINT in the same commit.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.floats

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import bench_policy
    finally:
        sys.path.remove(str(BENCHMARKS))
    return bench_policy


def test_every_turn_of_the_fixed_games_matches_the_recorded_run(bench):
    result, timings, kinds = bench.run(bench.DEFAULT_GAMES)
    assert result.problems() == []
    # The games reach every kind of turn the hash is meant to cover.
    assert {"guess", "loop", "truncated", "closing"} <= set(kinds), kinds
    assert len(timings) == sum(kinds.values()) > 1000


def test_the_fast_consistency_check_and_entropy_table_match_their_definitions(bench):
    bench.check_consistent(trials=60)  # raises SystemExit naming the clues on a disagreement
    bench.check_entropy_terms()


def test_the_float_check_catches_a_change_of_meaning_but_not_a_last_bit(bench):
    recorded = bench.Result(bench.GOLDEN_EXACT, bench.FINGERPRINT, bench.FLOAT_COUNT)
    assert recorded.problems() == []
    last_bit = tuple(v + 4 * math.ulp(v) for v in bench.FINGERPRINT)
    assert bench.Result(bench.GOLDEN_EXACT, last_bit, bench.FLOAT_COUNT).problems() == []
    moved = (bench.FINGERPRINT[0] * (1 + 1e-7), *bench.FINGERPRINT[1:])
    assert "floats" in bench.Result(bench.GOLDEN_EXACT, moved, bench.FLOAT_COUNT).problems()[0]
    assert "exact part" in bench.Result("0" * 64, bench.FINGERPRINT, bench.FLOAT_COUNT).problems()[0]
