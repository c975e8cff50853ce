"""Speed of the Wordle environment: wordle_agent.game against the straightforward baseline.

    python benchmarks/bench_game.py [--games 10000] [--repeats 3] [--seed 7]

Generates a fixed set of random games (random answers; call sequences that mix clue-consistent
words, random dictionary words, the answer, repeats, non-words, malformed input and raw-text
recoveries), then for each repeat plays every game through both implementations, checks they
give the same tool text and the same final reward (exact float equality) for every game, and
times each. Throughput is scored calls (guesses that used a turn, plus malformed calls) per
second over the whole run; the figures printed are medians over the repeats and their ratio.

Both sides are single-threaded pure Python, so throughput uses this process's CPU time
(time.process_time): on a shared 2-core machine wall-clock time mostly measures the neighbours.
Wall-clock medians are printed beside it.
"""

from __future__ import annotations

import argparse
import gc
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from baseline_game import BaselineGame  # noqa: E402

from wordle_agent.game import MAX_TOOL_CALLS, WordleGame  # noqa: E402
from wordle_agent.words import ALLOWED, ANSWERS  # noqa: E402

DEFAULT_GAMES = 10_000
DEFAULT_REPEATS = 3
DEFAULT_SEED = 7
TARGET_RATIO = 10.0

# Call mix (cumulative thresholds on one uniform draw per call); the rest are random dictionary
# words.
P_MALFORMED = 0.07
P_REPEAT = 0.13
P_NON_WORD = 0.19
P_CONSISTENT = 0.55
# Share of calls sent through the raw-text path (guess_from_text).
P_RAW_TEXT = 0.08
MALFORMED_INPUTS: tuple[object, ...] = (
    "",
    "hi",
    "CRANES",
    "\u00c9CLAT",
    None,
    42,
    "cr ane",
    "CRANE\nSLATE",
    "\uff23\uff32\uff21\uff2e\uff25",
    "x" * 50,
)

Call = tuple[object, bool]  # (tool argument, recovered from raw text?)
Game = tuple[str, list[Call]]


def make_games(n_games: int, seed: int) -> list[Game]:
    """A fixed set of games: each is an answer and the sequence of tool calls to replay on it.

    Clue-consistent words are drawn from the possibilities while the sequence is generated (with
    the real game as a scratchpad), so games resemble a policy's play and many of them end in a
    solve; the sequences are then fixed, so both implementations see exactly the same calls.
    """
    rng = random.Random(seed)
    allowed = sorted(ALLOWED)
    games = []
    for _ in range(n_games):
        answer = rng.choice(ANSWERS)
        scratch = WordleGame(answer)
        calls: list[Call] = []
        for _ in range(rng.randint(1, MAX_TOOL_CALLS)):
            if scratch.over:
                break
            draw = rng.random()
            if draw < P_MALFORMED:
                arg: object = rng.choice(MALFORMED_INPUTS)
            elif draw < P_REPEAT and scratch.guesses:
                # Case and padding differ, so the repeat check must compare normalized words.
                arg = "  " + rng.choice(scratch.guesses).lower()
            elif draw < P_NON_WORD:
                arg = "".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ") for _ in range(5))
            elif draw < P_CONSISTENT:
                arg = rng.choice(scratch.possibilities() or allowed)
            else:
                arg = rng.choice(allowed)
            raw_text = rng.random() < P_RAW_TEXT
            calls.append((arg, raw_text))
            (scratch.guess_from_text if raw_text else scratch.guess)(arg)
        games.append((answer, calls))
    return games


def play_fast(games: list[Game]) -> list[tuple[list[str], float]]:
    out = []
    for answer, calls in games:
        game = WordleGame(answer)
        texts = [game.guess_from_text(a) if raw else game.guess(a) for a, raw in calls]
        out.append((texts, game.final_reward()))
    return out


def play_baseline(games: list[Game]) -> list[tuple[list[str], float]]:
    out = []
    for answer, calls in games:
        game = BaselineGame(answer)
        texts = [game.guess(a, from_text=raw) for a, raw in calls]
        out.append((texts, game.final_reward()))
    return out


def scored_calls(games: list[Game]) -> int:
    """Calls that changed a game's score (turns used plus malformed input)."""
    total = 0
    for answer, calls in games:
        game = WordleGame(answer)
        for arg, raw in calls:
            (game.guess_from_text if raw else game.guess)(arg)
        total += len(game.events)
    return total


def mismatches(games: list[Game], fast: list, base: list) -> list[str]:
    """Human-readable differences between the two implementations' results (empty if none)."""
    problems = []
    for (answer, calls), (f_texts, f_reward), (b_texts, b_reward) in zip(games, fast, base):
        if f_reward != b_reward:
            problems.append(f"{answer} {calls}: reward {f_reward!r} != baseline {b_reward!r}")
        for i, (f, b) in enumerate(zip(f_texts, b_texts)):
            if f != b:
                problems.append(f"{answer} call {i} {calls[i][0]!r}:\n{f}\n--- baseline ---\n{b}")
                break
    return problems


def timed(play: Callable[[list[Game]], list], games: list[Game]) -> tuple[float, float, list]:
    """(CPU seconds, wall seconds, result) of one whole run."""
    gc.collect()
    cpu, wall = time.process_time(), time.perf_counter()
    result = play(games)
    return time.process_time() - cpu, time.perf_counter() - wall, result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=DEFAULT_GAMES)
    parser.add_argument("--repeats", type=int, default=DEFAULT_REPEATS)
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    args = parser.parse_args(argv)

    games = make_games(args.games, args.seed)
    n_scored = scored_calls(games)
    print(
        f"{args.games} games (seed {args.seed}, {len(ANSWERS)} answers), "
        f"{n_scored} scored calls per run, {args.repeats} repeats"
    )
    base_rates, fast_rates, base_walls, fast_walls = [], [], [], []
    for repeat in range(args.repeats):
        base_s, base_wall, base = timed(play_baseline, games)
        fast_s, fast_wall, fast = timed(play_fast, games)
        problems = mismatches(games, fast, base)
        if problems:
            print(f"PARITY FAILURE in {len(problems)} games, e.g.\n{problems[0]}")
            return 1
        base_rates.append(n_scored / base_s)
        fast_rates.append(n_scored / fast_s)
        base_walls.append(n_scored / base_wall)
        fast_walls.append(n_scored / fast_wall)
        print(
            f"  run {repeat + 1}: baseline {base_s:.2f} s CPU ({base_wall:.2f} s wall), "
            f"fast {fast_s:.3f} s CPU ({fast_wall:.3f} s wall); "
            "identical text and rewards in every game"
        )
    base_rate = statistics.median(base_rates)
    fast_rate = statistics.median(fast_rates)
    ratio = fast_rate / base_rate
    wall_ratio = statistics.median(fast_walls) / statistics.median(base_walls)
    print("scored calls per second, median over runs (CPU time; wall clock in brackets):")
    print(f"  baseline (straightforward): {base_rate:10,.0f}  ({statistics.median(base_walls):,.0f})")
    print(f"  wordle_agent.game         : {fast_rate:10,.0f}  ({statistics.median(fast_walls):,.0f})")
    verdict = "meets" if ratio >= TARGET_RATIO else "BELOW"
    print(f"speed-up: {ratio:.1f}x ({verdict} the {TARGET_RATIO:.0f}x target); wall clock {wall_ratio:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
