"""Compare two notebook outputs with their text exact and their numbers within a tolerance.

Used by the nbval plugin (tests/notebooks_conftest_plugin.py) for cells tagged
`numbers-within:NAME`, NAME one of TOLERANCES below: cells whose numbers come out of training or sampling, which differ
in the last digits from one CPU to another (docs/DESIGN.md, "Comparing numbers across machines").
Everything else in the cell must still match exactly: its words, its layout, how many numbers it
prints and in what order. A number matches when |fresh - stored| <= abs + rel * |stored|.

Percentages are compared as fractions: "49%" and "+49 points" count as 0.49, so one tolerance
serves a cell that prints a rate both ways (0.492 in a table, 49% in a sentence), and abs=0.01
admits the one-point flip of a rounded percentage whose rate moved by a fraction of a point.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from wordle_agent import reward

TAG_PREFIX = "numbers-within:"
# A number as the notebooks print it: an optional sign, thousands separators, a decimal part, an
# exponent. A leading "+" is part of the text (it marks a change), not of the number.
NUMBER = re.compile(r"(?<![\w.])-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w])")
PERCENT_AFTER = re.compile(r"^(?:%| points?\b| pts\b)")


@dataclass(frozen=True)
class Tolerance:
    rel: float
    abs: float

    def admits(self, fresh: float, stored: float) -> bool:
        return abs(fresh - stored) <= self.abs + self.rel * abs(stored)

    def __str__(self) -> str:
        return f"rel={self.rel:g},abs={self.abs:g}"


# One game of a learner training step (32 prompts x 8 games): the most a step's mean reward moves
# when one game is replayed differently, the reward's whole range (never played to the fastest
# solve) over the step's games. It also bounds one game of a 128-word rate (1/128).
LEARNER_GAMES_PER_STEP = 32 * 8
LEARNER_VALIDATION_WORDS = 128
ONE_GAME_OF_A_STEP = (
    reward.SOLVE_BASE + reward.SPEED_BONUS + reward.SOLVED_SHAPING_WEIGHT - reward.NO_PLAY_REWARD
) / LEARNER_GAMES_PER_STEP

# The named tolerances a cell may ask for. Measured: the cells whose numbers moved at all, between
# the committed outputs, numpy's AVX2 kernels (NPY_DISABLE_CPU_FEATURES=X86_V4 with OpenBLAS's
# Haswell kernels, as on an AVX2 CPU) and the test-only reversed summation, moved by at most 403
# billable tokens in 4.5 million (9e-5 relative) and 0.001 on a rate or a mean reward (one game in
# about a thousand). Both perturbations gave the same numbers: one draw of the training run
# flipped. Each tolerance is about ten times that, and still well below what a lesson reads off
# the cell (the smallest effect the notebooks state is several points of solve rate).
TOLERANCES = {
    # rates, rewards and token counts from training or evaluation: 10x the measured change
    "rates": Tolerance(rel=0.001, abs=0.01),
    # counts of sampled games or tokens over a handful of games (one game is several percent)
    "counts": Tolerance(rel=0.02, abs=0.01),
    # whole points printed without a % sign (a difference of two rounded rates can move by 1)
    "points": Tolerance(rel=0.001, abs=1.0),
    # the learner's re-runs of stored steps: one game of a step (ONE_GAME_OF_A_STEP). The learner
    # samples in float32 through BLAS; another CPU's kernels can flip one near-tied token, which
    # replays one game differently (the re-run tests of the learner's stored results use the same bound)
    "learner": Tolerance(rel=0.0, abs=ONE_GAME_OF_A_STEP),
}


def tolerance_from_tags(tags: list[str] | tuple[str, ...]) -> Tolerance | None:
    """The tolerance a cell's tags ask for, or None; an unknown or repeated tag is an error naming it."""
    found = [tag for tag in tags if tag.startswith(TAG_PREFIX)]
    if not found:
        return None
    if len(found) > 1:
        raise ValueError(f"a cell may carry one {TAG_PREFIX} tag; it has {found}")
    name = found[0][len(TAG_PREFIX) :]
    if name not in TOLERANCES:
        raise ValueError(f"tag {found[0]!r} names no tolerance; use {TAG_PREFIX}<{'|'.join(TOLERANCES)}>")
    return TOLERANCES[name]


def _values(text: str) -> list[float]:
    """Every number of `text`, percentages as fractions."""
    return [
        float(m.group().replace(",", "")) / (100 if PERCENT_AFTER.match(text[m.end() :]) else 1)
        for m in NUMBER.finditer(text)
    ]


def differences(stored: str, fresh: str, tolerance: Tolerance) -> list[str]:
    """What keeps `fresh` from matching `stored` within `tolerance` (empty when it matches)."""
    stored_text, fresh_text = NUMBER.split(stored), NUMBER.split(fresh)
    stored_numbers, fresh_numbers = NUMBER.findall(stored), NUMBER.findall(fresh)
    if len(stored_numbers) != len(fresh_numbers):
        return [f"{len(fresh_numbers)} numbers printed where {len(stored_numbers)} were stored"]
    found = []
    for index, (a, b) in enumerate(zip(stored_text, fresh_text)):
        if a != b:
            found.append(f"text differs after number {index}: {a[:60]!r} became {b[:60]!r}")
    for a, b, old, new in zip(stored_numbers, fresh_numbers, _values(stored), _values(fresh)):
        if not tolerance.admits(new, old):
            found.append(f"{b} where {a} was stored (tolerance {tolerance})")
    return found
