"""The chat template and the tool-call parser: OpenAI-format messages in, tokens out, and back.

A serving stack never shows a model the JSON of a chat request. Its chat template renders the
messages into the token layout the model was trained on, and after sampling its tool-call parser
turns the model's text back into `tool_calls` (vLLM's parsers do this for every model family).
This module is both halves for the learner, and it is compact on purpose: the model reads every
token of every turn, so what it does not need is left out.

What the model reads (`render`):

    <bos><low>                         the system prompt, reduced to the reasoning level
    <user>                             the task (the instruction is the same on every row; a
                                       curriculum's prior guesses are rendered as clues)
    <asst>guess_word(crane)<eot>       an assistant turn: optional text, then the call
    <tool>c-r?a-n-e+                   a tool result: each letter and its mark
    <asst>...                          (generation starts here)

Marks: `+` green, `?` yellow, `-` gray. Other tool answers become a short code: `!rep` (a
repeated word), `!bad` (not five letters, no guess used), `!over` (the game has ended or the
call limit was reached); a word outside the dictionary is marked with a trailing `!`.

The reasoning level is read as gpt-oss reads it: the request's `reasoning_effort`, else a
`Reasoning: <level>` line in the system prompt, else the model's default, medium. It is one
token in the context, and nothing else in the learner looks at it: what a level changes is
whatever the model learned to do after that token.

What comes back (`parse_completion`): a turn that ends with `<eot>` right after
`<call>` + five letters + `)` is a tool call to `guess_word` (the text before `<call>`, if any,
is its content: the scratchpad a medium-effort turn writes). Anything else (no call, two calls,
a four-letter word, a call cut off by `max_tokens`) is returned as plain text content, with
`<call>` read as "guess_word(", exactly as vLLM returns the raw text when its parser fails; the
agent's raw-text recovery then sees the model's real text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mtrl_course import tool_answers as answers
from mtrl_course.learner import tokenizer as tok
from wordle_agent.game import PRIOR_GUESSES_HEADER

TOOL_NAME = "guess_word"
TOOL_ARGUMENT = "guess"
EFFORT_LEVELS = ("low", "medium", "high")
DEFAULT_EFFORT = "medium"  # gpt-oss's default when no level is given
WORD_LENGTH = 5
# The parser's marks (`tool_answers`: G green, Y yellow, X gray) as the model reads them.
MARK_SYMBOL = {"G": "+", "Y": "?", "X": "-"}
REPEAT_CODE, MALFORMED_CODE, OVER_CODE, OUTSIDE_DICTIONARY_CODE = "!rep", "!bad", "!over", "!"

_REASONING_LINE = re.compile(r"^\s*Reasoning:\s*(low|medium|high)\s*$", re.IGNORECASE | re.MULTILINE)


def text_of(content: Any) -> str:
    """The text of an OpenAI message `content`: a string or a list of {"type": "text"} parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def effort_of(request: Mapping[str, Any]) -> str:
    """The reasoning level a request asks for (see the module docstring for the order)."""
    level = request.get("reasoning_effort")
    if isinstance(level, str) and level.lower() in EFFORT_LEVELS:
        return level.lower()
    for message in request.get("messages") or ():
        if isinstance(message, dict) and message.get("role") == "system":
            found = _REASONING_LINE.search(text_of(message.get("content")))
            if found:
                return found.group(1).lower()
    return DEFAULT_EFFORT


def compact_feedback(word: str, marks: Sequence[str]) -> str:
    """One guess's feedback as letter-mark pairs: `c-r?a-n-e+` (marks "G", "Y", "X")."""
    return "".join(letter.lower() + MARK_SYMBOL[mark] for letter, mark in zip(word, marks))


def compact_tool_result(text: str) -> str:
    """A `guess_word` answer in the model's compact form (see the module docstring)."""
    clue = answers.parse_clue(text)
    if clue is not None and answers.is_solved(text):
        return compact_feedback(*clue)
    out = ""
    if clue is not None:
        out = compact_feedback(*clue)
        if answers.NOT_IN_DICTIONARY.search(text):
            out += OUTSIDE_DICTIONARY_CODE
    elif answers.REPEATED.search(text):
        out = REPEAT_CODE
    elif answers.MALFORMED.search(text):
        out = MALFORMED_CODE
    if answers.GAME_OVER.search(text):
        out += OVER_CODE
    return out


def _user_clues(text: str) -> str:
    """A curriculum's seeded guesses (after PRIOR_GUESSES_HEADER), one compact clue per line."""
    head = text.find(PRIOR_GUESSES_HEADER)
    if head < 0:
        return ""
    return "\n".join(compact_feedback(*clue) for clue in answers.clues_in_text(text[head:]))


def _call_word(call: Mapping[str, Any]) -> str:
    function = call.get("function") if isinstance(call.get("function"), Mapping) else call
    arguments = function.get("arguments") if isinstance(function, Mapping) else None
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return arguments
    if isinstance(arguments, Mapping):
        value = arguments.get(TOOL_ARGUMENT)
        return value if isinstance(value, str) else ""
    return ""


def render_message(message: Mapping[str, Any]) -> list[int]:
    """The tokens of one message (the system message renders as nothing: see `render`)."""
    role = message.get("role")
    text = text_of(message.get("content"))
    if role == "user":
        return [tok.USER, *tok.encode(_user_clues(text))]
    if role == "tool":
        return [tok.TOOL, *tok.encode(compact_tool_result(text))]
    if role == "assistant":
        ids = [tok.ASSISTANT, *tok.encode(text)]
        for call in message.get("tool_calls") or ():
            if isinstance(call, Mapping):
                ids += [tok.CALL, *tok.encode(_call_word(call)), tok.CLOSE_PAREN]
        return [*ids, tok.EOT]
    return []


def render(messages: Sequence[Any], effort: str = DEFAULT_EFFORT) -> list[int]:
    """The context of a conversation, without the generation prompt."""
    ids = [tok.BOS, tok.EFFORT_TOKENS.get(effort, tok.EFFORT_TOKENS[DEFAULT_EFFORT])]
    for message in messages:
        if isinstance(message, Mapping):
            ids += render_message(message)
    return ids


def generation_prompt(messages: Sequence[Any], effort: str = DEFAULT_EFFORT) -> list[int]:
    """`render` plus the `<asst>` that opens the model's turn: what the model continues."""
    return [*render(messages, effort), tok.ASSISTANT]


@dataclass(frozen=True)
class ParsedTurn:
    """What a serving stack returns for one sampled turn."""

    content: str | None
    guess: str | None  # the tool call's word, None if the turn made no well-formed call
    finish_reason: str  # "tool_calls", "stop" or "length"

    @property
    def tool_call(self) -> dict[str, Any] | None:
        if self.guess is None:
            return None
        return {"name": TOOL_NAME, "arguments": json.dumps({TOOL_ARGUMENT: self.guess})}


def parse_completion(ids: Sequence[int], stopped: bool) -> ParsedTurn:
    """Turn the sampled `ids` (with the final `<eot>` if `stopped`) into content and a call."""
    body = list(ids[:-1]) if stopped and ids and ids[-1] == tok.EOT else list(ids)
    if stopped and tok.CALL in body and body.count(tok.CALL) == 1:
        at = body.index(tok.CALL)
        word, close = body[at + 1 : at + 1 + WORD_LENGTH], body[at + 1 + WORD_LENGTH :]
        prefix = body[:at]
        if (
            len(word) == WORD_LENGTH
            and all(i in tok.LETTER_IDS for i in word)
            and close == [tok.CLOSE_PAREN]
            and all(i >= len(tok.SPECIALS) for i in prefix)
        ):
            return ParsedTurn(tok.decode(prefix) or None, tok.decode(word), "tool_calls")
    return ParsedTurn(tok.decode(body) or None, None, "stop" if stopped else "length")
