"""The learner's tokenizer, chat template and tool-call parser: round trips, malformed text, and
the real agent's messages (from wordle_agent.game) rendered compactly."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from mtrl_course.learner import template
from mtrl_course.learner import tokenizer as tok
from wordle_agent.game import WordleGame
from wordle_agent.recovery import extract_guesses
from wordle_agent.rollout import SYSTEM_PROMPT, build_system_prompt

WORD = st.text(alphabet=tok.LETTERS, min_size=5, max_size=5)
SCRATCH = st.text(alphabet=tok.LETTERS + tok.MARKS + tok.DIGITS + " _:=,.", max_size=30)


def call_message(word: str, content: str | None = None) -> dict:
    message = {
        "role": "assistant",
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "guess_word", "arguments": json.dumps({"guess": word})},
            }
        ],
    }
    if content:
        message["content"] = [{"type": "text", "text": content}]
    return message


@given(st.text(max_size=200))
def test_encode_decode_round_trip_on_known_characters(text):
    kept = "".join(c for c in text.lower() if c in tok.CHARACTERS)
    assert tok.decode(tok.encode(text)) == kept
    assert all(i >= len(tok.SPECIALS) for i in tok.encode(text))  # text never becomes a special


def test_vocabulary_is_small():
    assert tok.VOCAB_SIZE < 100
    assert len(set(tok.CHARACTERS)) == len(tok.CHARACTERS)


@given(WORD, SCRATCH)
@settings(max_examples=200)
def test_a_well_formed_call_parses_and_renders_back_to_the_same_tokens(word, scratch):
    ids = [*tok.encode(scratch), tok.CALL, *tok.encode(word), tok.CLOSE_PAREN, tok.EOT]
    parsed = template.parse_completion(ids, stopped=True)
    assert parsed.guess == word and parsed.finish_reason == "tool_calls"
    assert parsed.content == (scratch or None)
    assert json.loads(parsed.tool_call["arguments"]) == {"guess": word}
    # What the agent sends back next turn renders to exactly what the model wrote.
    assert template.render_message(call_message(word, parsed.content)) == [tok.ASSISTANT, *ids]


@given(st.lists(st.integers(0, tok.VOCAB_SIZE - 1), max_size=30), st.booleans())
@settings(max_examples=300)
def test_anything_else_comes_back_as_text(ids, stopped):
    parsed = template.parse_completion(ids, stopped)
    if parsed.guess is not None:  # only the well-formed shape is a call
        body = ids[:-1]
        at = body.index(tok.CALL)
        assert stopped and ids[-1] == tok.EOT and body[at + 6 :] == [tok.CLOSE_PAREN]
    else:
        assert parsed.finish_reason == ("stop" if stopped else "length")
        assert parsed.content == (tok.decode(ids[:-1] if stopped and ids and ids[-1] == tok.EOT else ids) or None)


def test_malformed_calls_are_text_the_agent_can_still_read():
    four = [tok.CALL, *tok.encode("cran"), tok.CLOSE_PAREN, tok.EOT]
    assert template.parse_completion(four, True).guess is None
    two = [tok.CALL, *tok.encode("crane"), tok.CLOSE_PAREN, tok.CALL, *tok.encode("slate"), tok.CLOSE_PAREN, tok.EOT]
    parsed = template.parse_completion(two, True)
    assert parsed.guess is None and parsed.content == "guess_word(crane)guess_word(slate)"
    assert extract_guesses(parsed.content) == ["CRANE", "SLATE"]
    cut = [tok.CALL, *tok.encode("crane"), tok.CLOSE_PAREN]  # max_tokens hit before <eot>
    parsed = template.parse_completion(cut, False)
    assert parsed.guess is None and parsed.finish_reason == "length" and parsed.content == "guess_word(crane)"


def test_effort_is_read_as_gpt_oss_reads_it():
    system = {"role": "system", "content": build_system_prompt("high")}
    assert template.effort_of({"reasoning_effort": "low", "messages": [system]}) == "low"
    assert template.effort_of({"messages": [system]}) == "high"
    assert template.effort_of({"messages": [{"role": "system", "content": SYSTEM_PROMPT}]}) == "medium"
    assert template.render([], "low")[:2] == [tok.BOS, tok.LOW]


def test_a_real_game_renders_compactly():
    game = WordleGame("SLATE")
    messages = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": [{"type": "text", "text": "Guess the hidden 5-letter word."}]},
    ]
    for word in ("CRANE", "CRANE", "ABC", "PLATE", "SLATE"):
        messages.append(call_message(word.lower()))
        messages.append({"role": "tool", "tool_call_id": "c1", "content": game.guess(word)})
    shown = tok.show(template.generation_prompt(messages, "low"))
    assert shown == (
        "<bos><low><user>"
        "<asst><call>crane)<eot><tool>c-r-a+n-e+"
        "<asst><call>crane)<eot><tool>!rep"
        "<asst><call>abc)<eot><tool>!bad"
        "<asst><call>plate)<eot><tool>p-l+a+t+e+"
        "<asst><call>slate)<eot><tool>s+l+a+t+e+"
        "<asst>"
    )


def test_lost_game_and_outside_dictionary_words():
    game = WordleGame("SLATE")
    texts = [game.guess(w) for w in ("ZZZZZ", "CRANE", "CRANE", "CRANE", "CRANE", "CRANE")]
    assert template.compact_tool_result(texts[0]) == "z-z-z-z-z-!"
    assert template.compact_tool_result(texts[-1]).endswith("!over")
    assert template.compact_tool_result(game.guess("SLATE")) == "!over"


def test_prior_guesses_in_the_task_become_clues():
    game = WordleGame("SLATE", prior_guesses=["CRANE"])
    text = "Guess the hidden 5-letter word.\n\n" + game.prior_guesses_text()
    ids = template.render_message({"role": "user", "content": text})
    assert tok.show(ids) == "<user>c-r-a+n-e+"
