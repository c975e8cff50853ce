"""Vectorised Wordle feedback patterns (numpy), for the word-data build and the reference solver.

A pattern is one integer per (guess, answer) pair: position i contributes 3**i times its mark,
with gray 0, yellow 1, green 2. So 0 is all gray and 242 (3**5 - 1) is all green. The marks follow
the same duplicate-letter rule as `wordle_agent.game.score_guess` (greens first, then yellows from
left to right while unmatched copies remain); tests check the two agree on every pair they try.

The agent module itself never imports numpy: this module is only for bulk work in the toolkit,
where scoring one guess against two thousand answers at once is the whole point.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np

ALL_GREEN = 3**5 - 1
_POWERS = np.array([3**i for i in range(5)], dtype=np.int32)


def encode(words: Sequence[str]) -> np.ndarray:
    """Words as an (n, 5) uint8 array of letter indices 0..25 (case-insensitive)."""
    raw = "".join(w.upper() for w in words).encode("ascii")
    if len(raw) != 5 * len(words):
        raise ValueError("every word must have exactly five ASCII letters")
    arr = np.frombuffer(raw, dtype=np.uint8).reshape(len(words), 5) - ord("A")
    if arr.size and arr.max() > 25:
        raise ValueError("words must contain only the letters A-Z")
    return arr.astype(np.uint8)


def pattern_matrix(
    guesses: Sequence[str] | np.ndarray,
    answers: Sequence[str] | np.ndarray,
    chunk: int = 256,
) -> np.ndarray:
    """Feedback codes for every guess against every answer: a (len(guesses), len(answers)) uint8 array."""
    g_all = guesses if isinstance(guesses, np.ndarray) else encode(guesses)
    a = answers if isinstance(answers, np.ndarray) else encode(answers)
    n_a = a.shape[0]
    out = np.empty((g_all.shape[0], n_a), dtype=np.uint8)
    counts = np.zeros((n_a, 26), dtype=np.int8)
    rows = np.arange(n_a)
    for i in range(5):
        np.add.at(counts, (rows, a[:, i]), 1)
    for start in range(0, g_all.shape[0], chunk):
        g = g_all[start : start + chunk]
        c = g.shape[0]
        green = g[:, None, :] == a[None, :, :]  # (c, n_a, 5)
        remaining = np.broadcast_to(counts, (c, n_a, 26)).copy()
        for i in range(5):
            # A green uses up one copy of the answer's letter at that position.
            remaining[:, rows, a[:, i]] -= green[:, :, i]
        code = np.zeros((c, n_a), dtype=np.int32)
        ci = np.arange(c)[:, None]
        for i in range(5):
            letter = g[:, i][:, None]  # (c, 1)
            left = remaining[ci, rows[None, :], letter]  # (c, n_a)
            yellow = ~green[:, :, i] & (left > 0)
            remaining[ci, rows[None, :], letter] = left - yellow
            code += (2 * green[:, :, i] + yellow) * _POWERS[i]
        out[start : start + c] = code
    return out


def pattern_to_marks(code: int) -> list[str]:
    """Decode a pattern integer into the G/Y/X marks used by the game."""
    marks = []
    for _ in range(5):
        code, digit = divmod(int(code), 3)
        marks.append("XYG"[digit])
    return marks


def entropy_bits(codes: np.ndarray) -> float:
    """Shannon entropy (bits) of the pattern distribution in `codes` (uniform prior over its entries)."""
    if codes.size == 0:
        return 0.0
    counts = np.bincount(codes.astype(np.int64), minlength=ALL_GREEN + 1)
    p = counts[counts > 0] / codes.size
    return float(-(p * np.log2(p)).sum())


def entropies(matrix: np.ndarray) -> np.ndarray:
    """Entropy (bits) of each row of a pattern matrix, vectorised."""
    n_rows, n_cols = matrix.shape
    if n_cols == 0:
        return np.zeros(n_rows)
    # One bincount over (row, code) pairs instead of np.add.at: same counts, ~10x faster.
    keys = np.arange(n_rows, dtype=np.int64)[:, None] * (ALL_GREEN + 1) + matrix.astype(np.int64)
    counts = np.bincount(keys.ravel(), minlength=n_rows * (ALL_GREEN + 1)).reshape(n_rows, -1)
    # Each cell's term looked up by its count instead of computed: the same values, and the sum
    # runs over the same 243 cells per row in the same order, so the result is bit for bit what
    # the direct formula gives (the stand-in policy's stored results depend on that).
    return -_entropy_terms(n_cols)[counts].sum(axis=1)


@functools.lru_cache(maxsize=256)
def _entropy_terms(n_cols: int) -> np.ndarray:
    """p * log2(p) for p = count / n_cols, count = 0..n_cols (0 for count 0). Read only."""
    p = np.arange(n_cols + 1) / n_cols
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, p * np.log2(np.where(p > 0, p, 1.0)), 0.0)
    terms.flags.writeable = False
    return terms
