"""The learner's tokenizer: one token per character of the project's own text, plus a few specials.

The tiny model reads and writes Wordle conversations and nothing else, so its alphabet is what
those conversations contain once the chat template (`mtrl_course.learner.template`) has made them
compact: the letters a-z (guesses and scratchpads are lowercase), the three feedback marks, the
digits and a little punctuation (the scratchpad and the raw-text call formats that
`wordle_agent.recovery` reads). Everything else in a message is dropped on encoding: a
character-level model with a 60-symbol vocabulary learns spelling from a few thousand games,
where a BPE vocabulary of thousands of pieces would need far more data than the project has.

Special tokens carry the structure (who speaks, the reasoning level, where a tool call starts,
where a turn ends). A real serving stack does the same with its chat template's special tokens
(gpt-oss's Harmony format has `<|start|>`, `<|channel|>`, `<|call|>`, `<|end|>`). They are never
produced by encoding text: a message that happens to contain the string "<eot>" stays text.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

# The specials, in id order. `PAD` pads a batch; `BOS` starts a context; `LOW`/`MEDIUM`/`HIGH`
# are the reasoning level (gpt-oss reads it from its system message, here it is one token);
# `USER`, `ASSISTANT`, `TOOL` open a turn; `CALL` opens a tool call; `EOT` ends an assistant
# turn (the sampler's stop token).
SPECIALS = ("<pad>", "<bos>", "<low>", "<medium>", "<high>", "<user>", "<asst>", "<tool>", "<call>", "<eot>")
PAD, BOS, LOW, MEDIUM, HIGH, USER, ASSISTANT, TOOL, CALL, EOT = range(len(SPECIALS))
EFFORT_TOKENS = {"low": LOW, "medium": MEDIUM, "high": HIGH}
# How a special reads when the model's text is returned as plain content (a malformed turn): the
# call opener reads as the start of a call written as prose, so a well-formed word after it is
# what `wordle_agent.recovery` would find ("guess_word(crane)").
SPECIAL_TEXT = {CALL: "guess_word(", EOT: "", PAD: "", BOS: ""}

LETTERS = "abcdefghijklmnopqrstuvwxyz"
# Feedback marks in the compact tool result: green, yellow, gray.
MARKS = "+?-"
DIGITS = "0123456789"
PUNCTUATION = " \n_:=,.()\"'!/"
CHARACTERS = LETTERS + MARKS + DIGITS + PUNCTUATION
VOCAB_SIZE = len(SPECIALS) + len(CHARACTERS)

_CHAR_ID = {c: len(SPECIALS) + i for i, c in enumerate(CHARACTERS)}
_ID_CHAR = {i: c for c, i in _CHAR_ID.items()}
LETTER_IDS = frozenset(_CHAR_ID[c] for c in LETTERS)
CLOSE_PAREN = _CHAR_ID[")"]


def encode(text: str) -> list[int]:
    """Token ids of `text`: lowercased, one per known character; unknown characters dropped."""
    return [_CHAR_ID[c] for c in text.lower() if c in _CHAR_ID]


def decode(ids: Iterable[int]) -> str:
    """The text of `ids`; specials read as `SPECIAL_TEXT` (or their name in angle brackets)."""
    out = []
    for i in ids:
        i = int(i)
        if i in _ID_CHAR:
            out.append(_ID_CHAR[i])
        elif 0 <= i < len(SPECIALS):
            out.append(SPECIAL_TEXT.get(i, SPECIALS[i]))
    return "".join(out)


def char_id(character: str) -> int:
    """The id of one known character (KeyError names it if it is not in the vocabulary)."""
    try:
        return _CHAR_ID[character]
    except KeyError:
        raise KeyError(f"{character!r} is not in the learner's vocabulary") from None


def show(ids: Sequence[int]) -> str:
    """`ids` for reading: specials by name, characters as themselves (for notebooks and tests)."""
    return "".join(_ID_CHAR.get(int(i)) or SPECIALS[int(i)] for i in ids)
