"""Read a Wordle conversation back into clues, from the tool's answers alone.

A policy that must not see the secret word (the reference solver behind a Strands model, the
stand-in policy) works from the same text a language model would: the `guess_word` tool's
answers in the conversation. The formats are the game's (AGENT_SPEC section 2):

    Guess 2/6: BLOKE -> B=yellow, L=green, O=green, K=gray, E=green
    Guess 3/6: BLOKE — all green. Correct, you solved it!

Anything else (errors, repeats, "Game over", the knowledge summary) carries no new clue. Every
function here is pure and total: garbage in gives an empty result, never an exception, because a
policy that crashes on an odd message ends the rollout with the worst reward.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from wordle_agent.game import PRIOR_GUESSES_HEADER

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


def tool_result_texts(messages: Any) -> list[str]:
    """The text of every `toolResult` block in a Strands (Converse-style) message list, in order."""
    texts = []
    for message in messages if isinstance(messages, (list, tuple)) else ():
        content = message.get("content") if isinstance(message, dict) else None
        for block in content if isinstance(content, (list, tuple)) else ():
            result = block.get("toolResult") if isinstance(block, dict) else None
            if not isinstance(result, dict):
                continue
            parts = result.get("content")
            pieces = [
                part["text"]
                for part in (parts if isinstance(parts, (list, tuple)) else ())
                if isinstance(part, dict) and isinstance(part.get("text"), str)
            ]
            texts.append("\n".join(pieces))
    return texts


def clues_from_texts(texts: Iterable[Any]) -> list[Clue]:
    """The clues in a sequence of tool answers, skipping answers that carry none."""
    clues = []
    for text in texts:
        clue = parse_clue(text)
        if clue is not None:
            clues.append(clue)
    return clues


def clues_from_messages(messages: Any) -> list[Clue]:
    """Every (guess, marks) clue the conversation's tool answers contain, in play order."""
    return clues_from_texts(tool_result_texts(messages))


def game_over_in(messages: Any) -> bool:
    """Whether any tool answer in the conversation says the game has ended."""
    return any(is_over(text) for text in tool_result_texts(messages))


def solved_in(messages: Any) -> bool:
    """Whether any tool answer in the conversation reports a solve."""
    return any(is_solved(text) for text in tool_result_texts(messages))


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


def _message_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, (list, tuple)):
        return "\n".join(
            part["text"] for part in content if isinstance(part, dict) and isinstance(part.get("text"), str)
        )
    return ""


def seeded_clues(messages: Any) -> list[Clue]:
    """The clues of guesses a curriculum played before the policy's turn (`prior_guesses`).

    They sit in the first user message that carries `PRIOR_GUESSES_HEADER`, after the header; an
    instruction without the header seeds nothing, so example lines in a prompt are never read as
    clues. Works on OpenAI-format messages (string or text-part content).
    """
    for message in messages if isinstance(messages, (list, tuple)) else ():
        if not isinstance(message, dict) or message.get("role") != "user":
            continue
        text = _message_text(message.get("content"))
        head = text.find(PRIOR_GUESSES_HEADER)
        if head >= 0:
            return clues_in_text(text[head + len(PRIOR_GUESSES_HEADER) :])
    return []
