"""Recover Wordle guesses that the policy wrote as raw text instead of a tool call.

During the walkthrough's training run, a learning rate that was too high made the model drift
from real tool calls to text that only *looks* like one. Every such rollout then scored the same
floor reward, the group's advantage went to zero and learning stopped. Reading the intended
guesses back out of the text (and charging a small formatting penalty for them, in the game)
keeps rewards varied within a group, so the gradient survives while the format recovers.

Three formats were observed:

- the tool-call markup of an OpenAI-compatible server whose parser failed:
  ``<__function=guess_word> <__parameter=guess>STARE</__parameter>``
- JSON-ish arguments: ``{"guess": "STARE"}``, ``guess=STARE``, ``guess: "stare"``
- a call written as prose: ``guess_word("crane")`` or ``guess_word(guess="crane")``

Only exact five-letter words of the letters a-z are returned; whether a word is in the dictionary
is the game's business.
"""

from __future__ import annotations

import logging
import re

logger = logging.getLogger(__name__)

# The model's visible text is at most a few tens of thousands of characters (8,192 sampled
# tokens); anything longer is hostile or broken, and scanning it would only cost time.
MAX_SCAN_CHARS = 100_000

# One alternation, so matches of the three formats come out in order of appearance. No nested
# quantifiers: every branch is a literal prefix, bounded whitespace runs and a fixed-length
# word, so the scan is linear in the length of the text.
_WORD = r"[A-Za-z]{5}"
_GUESS_PATTERN = re.compile(
    # <__parameter=guess>STARE</__parameter>
    rf"<__parameter=guess>\s*(?P<markup>{_WORD})\s*</__parameter>"
    # guess_word("crane"), guess_word(guess='crane'), guess_word(crane)
    rf"|guess_word\s*\(\s*(?:guess\s*[=:]\s*)?(?P<q1>[\"']?)(?P<prose>{_WORD})(?P=q1)\s*\)"
    # {"guess": "STARE"}, guess=STARE, guess: "stare"; "guesses=" or "myguess=" do not count
    rf"|(?<![A-Za-z0-9_])[\"']?guess[\"']?\s*[:=]\s*(?P<q2>[\"']?)(?P<json>{_WORD})(?P=q2)"
    r"(?![A-Za-z0-9_])",
)


def extract_guesses(text: str) -> list[str]:
    """Return the guesses written as raw text in ``text``, uppercase, in order of appearance.

    Repeats are kept (the caller decides what a repeat means). Never raises: anything that is
    not a string yields an empty list, and only the first ``MAX_SCAN_CHARS`` characters are read.
    """
    if not isinstance(text, str) or not text:
        return []
    try:
        window = text[:MAX_SCAN_CHARS]
        found = []
        for match in _GUESS_PATTERN.finditer(window):
            word = match.group("markup") or match.group("prose") or match.group("json")
            if word:
                found.append(word.upper())
        return found
    except Exception:  # a recovery helper must never take the rollout down with it
        logger.exception("raw-text guess recovery failed; recovering nothing")
        return []
