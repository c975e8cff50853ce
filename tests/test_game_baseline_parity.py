"""wordle_agent.game and the benchmark's straightforward baseline agree exactly.

The benchmark's speed-up only means something if both sides compute the same thing, and the
baseline is a second, independent reading of the rules: any disagreement is a bug in one of them.
"""

from __future__ import annotations

import importlib.util
import string
import sys
from pathlib import Path
from types import ModuleType

from hypothesis import given, settings
from hypothesis import strategies as st

from wordle_agent.game import MAX_TOOL_CALLS, WordleGame
from wordle_agent.words import ALLOWED, ANSWERS

BENCH_DIR = Path(__file__).resolve().parents[1] / "benchmarks"
PARITY_GAMES = 500
PARITY_SEED = 20_240


def load(name: str) -> ModuleType:
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, BENCH_DIR / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # bench_game imports baseline_game by name
    spec.loader.exec_module(module)
    return module


baseline = load("baseline_game")
bench = load("bench_game")


def test_benchmark_games_match_exactly() -> None:
    games = bench.make_games(PARITY_GAMES, PARITY_SEED)
    fast, base = bench.play_fast(games), bench.play_baseline(games)
    assert bench.mismatches(games, fast, base) == []
    # The generated mix really exercises every path, or the parity check proves little.
    kinds = set()
    for answer, calls in games:
        game = WordleGame(answer)
        for arg, raw in calls:
            (game.guess_from_text if raw else game.guess)(arg)
        kinds |= {e.kind for e in game.events}
        kinds |= {name for e in game.events for name, _ in e.reasons}
    assert {"solve", "repeat", "malformed", "guess", "raw_text", "not_in_dictionary"} <= kinds
    assert {"green_not_kept", "yellow_underused", "gray_used", "elimination"} <= kinds


def test_a_mismatch_is_reported() -> None:
    games = bench.make_games(3, PARITY_SEED)
    fast = bench.play_fast(games)
    tampered = [(texts, reward + 1e-15) for texts, reward in fast]
    assert len(bench.mismatches(games, fast, tampered)) == 3


@settings(max_examples=120, deadline=None)
@given(
    answer=st.sampled_from(ANSWERS),
    calls=st.lists(
        st.tuples(
            st.one_of(
                st.sampled_from(sorted(ALLOWED)),
                st.text(alphabet=string.ascii_letters + " \n", min_size=3, max_size=8),
                st.sampled_from([None, 7, "", "\u00c9CLAT"]),
            ),
            st.booleans(),
        ),
        max_size=MAX_TOOL_CALLS + 2,
    ),
)
def test_random_call_sequences_match_exactly(answer: str, calls: list[tuple[object, bool]]) -> None:
    fast, base = WordleGame(answer), baseline.BaselineGame(answer)
    for arg, raw in calls:
        f_text = fast.guess_from_text(arg) if raw else fast.guess(arg)
        assert f_text == base.guess(arg, from_text=raw)
        assert fast.score == base.score
        assert fast.possibilities() == base.possibilities()
    assert fast.final_reward() == base.final_reward()
