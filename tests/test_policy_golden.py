"""The stand-in policy's turns are bit-identical to the golden hash recorded before its speed-up.

Training is deterministic per seed and stored experiment results are compared to 1e-9, so any
change to what `StandInPolicy.decide` returns (content, tool call, token counts, trace bytes)
must be deliberate: re-record with `python benchmarks/bench_policy.py --record`, re-run the
experiments, and update GOLDEN in the same commit.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import bench_policy
    finally:
        sys.path.remove(str(BENCHMARKS))
    return bench_policy


def test_every_turn_of_the_fixed_games_hashes_to_the_golden_value(bench):
    digest, timings, kinds = bench.run(bench.DEFAULT_GAMES)
    assert digest == bench.GOLDEN
    # The games reach every kind of turn the hash is meant to cover.
    assert {"guess", "loop", "truncated", "closing"} <= set(kinds), kinds
    assert len(timings) == sum(kinds.values()) > 1000


def test_the_fast_consistency_check_and_entropy_table_match_their_definitions(bench):
    bench.check_consistent(trials=60)  # raises SystemExit naming the clues on a disagreement
    bench.check_entropy_terms()
