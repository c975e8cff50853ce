"""Read a Wordle conversation back into clues, from the tool's answers alone.

A policy that must not see the secret word (the reference solver behind a Strands model, the
stand-in policy) works from the same text a language model would: the `guess_word` tool's
answers in the conversation. This module finds those answers in a Strands or OpenAI message list;
reading one answer is `mtrl_course.tool_answers`' (the one parser of the game's feedback text,
shared with the learner's chat template). Anything else (errors, repeats, "Game over", the
knowledge summary) carries no new clue. Every function here is total: garbage in gives an empty
result, never an exception.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from mtrl_course.tool_answers import Clue, clues_in_text, is_over, is_solved, parse_clue
from wordle_agent.game import PRIOR_GUESSES_HEADER


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
