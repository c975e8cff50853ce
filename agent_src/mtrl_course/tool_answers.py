"""The `guess_word` tool's answers, read back: the one parser of the game's feedback text.

The game writes its answers in the formats of AGENT_SPEC section 2:

    Guess 2/6: BLOKE -> B=yellow, L=green, O=green, K=gray, E=green
    Guess 3/6: BLOKE — all green. Correct, you solved it!

Two readers use this module: the policies that must not see the secret word read clues from the
conversation (`local.transcript`: the reference solver, the stand-in policy), and the learner's
chat template renders each answer in its compact form (`learner.template`). Every function here is
pure and total: garbage in gives None, False or an empty list, never an exception, because a
policy that crashes on an odd message ends the rollout with the worst reward.
"""

from __future__ import annotations

import re
from typing import Any

WORD_LENGTH = 5
MARK_NAMES = {"green": "G", "yellow": "Y", "gray": "X", "grey": "X"}
ALL_GREEN = ["G"] * WORD_LENGTH

_GUESS_HEAD = r"Guess\s+(\d{1,3})\s*/\s*(\d{1,3})\s*:\s*([A-Za-z]{5})\b"
# "->" in the spec; an arrow character is accepted too, since an edited prompt may render one.
FEEDBACK_LINE = re.compile(_GUESS_HEAD + r"\s*(?:->|\u2192)\s*(.*)$", re.MULTILINE)
# The spec writes an em dash; en dash and hyphens are accepted for the same reason.
SOLVE_LINE = re.compile(_GUESS_HEAD + r"\s*(?:\u2014|\u2013|-{1,2})\s*all green", re.IGNORECASE)
MARK_ITEM = re.compile(r"([A-Za-z])\s*=\s*(green|yellow|gray|grey)\b", re.IGNORECASE)
GUESS_HEAD = re.compile(_GUESS_HEAD)
# The game's closing answers: after the end, on the sixth unsolved guess, past the call cap.
GAME_OVER = re.compile(r"\bgame over\b|\bout of guesses\b|\blimit reached\b", re.IGNORECASE)
# Answers that carry no clue but say what went wrong.
REPEATED = re.compile(r"was already guessed", re.IGNORECASE)
MALFORMED = re.compile(r"^Invalid guess", re.IGNORECASE)
NOT_IN_DICTIONARY = re.compile(r"not in the dictionary", re.IGNORECASE)

Clue = tuple[str, list[str]]


def parse_clue(text: Any) -> Clue | None:
    """The (guess, marks) a tool answer reports, or None if it reports no new feedback.

    Marks are "G", "Y", "X" per position; the guess is uppercase.
    """
    if not isinstance(text, str):
        return None
    solved = SOLVE_LINE.search(text)
    if solved:
        return solved.group(3).upper(), list(ALL_GREEN)
    for line in FEEDBACK_LINE.finditer(text):
        word = line.group(3).upper()
        items = MARK_ITEM.findall(line.group(4))
        if len(items) != WORD_LENGTH:
            continue
        # Each mark names its letter; a line whose letters disagree with the word is not feedback.
        if [letter.upper() for letter, _ in items] != list(word):
            continue
        return word, [MARK_NAMES[name.lower()] for _, name in items]
    return None


def is_solved(text: Any) -> bool:
    """Whether a tool answer reports the solving guess."""
    return isinstance(text, str) and SOLVE_LINE.search(text) is not None


def is_over(text: Any) -> bool:
    """Whether a tool answer says the game has ended (solved, out of guesses, over, or capped)."""
    if not isinstance(text, str):
        return False
    if is_solved(text) or GAME_OVER.search(text):
        return True
    # The last guess's line ("Guess 6/6: ...", feedback or repeat) ends the game, however the
    # reveal after it is worded.
    return any(int(m.group(1)) >= int(m.group(2)) > 0 for m in GUESS_HEAD.finditer(text))


def clues_in_text(text: Any) -> list[Clue]:
    """Every (guess, marks) feedback line in one text, in order (a text may hold several)."""
    if not isinstance(text, str):
        return []
    clues = []
    for line in text.splitlines():
        clue = parse_clue(line)
        if clue is not None:
            clues.append(clue)
    return clues
