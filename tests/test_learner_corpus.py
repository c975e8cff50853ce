"""The base model's training text (mtrl_course.learner.corpus): what is trained on, and slips."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mtrl_course.learner import corpus, template
from mtrl_course.learner import tokenizer as tok
from wordle_agent.words import ALLOWED, ANSWERS

PLAYERS = corpus.Players()
OUTSIDE = re.compile(r"[+?-]!(?!over)")  # a feedback mark, then the outside-dictionary mark (not "!over")
WORDS = sorted(ANSWERS)[:200]


def _assistant_spans(tokens: tuple[int, ...]) -> list[tuple[int, int]]:
    """(start, end) of each assistant turn's body: after `<asst>`, through its `<eot>`."""
    spans, start = [], None
    for i, t in enumerate(tokens):
        if t == tok.ASSISTANT:
            start = i + 1
        elif t == tok.EOT and start is not None:
            spans.append((start, i + 1))
            start = None
    return spans


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), effort=st.sampled_from(corpus.EFFORTS), player=st.sampled_from(corpus.PLAYERS))
def test_only_the_assistants_own_tokens_are_trained(seed: int, effort: str, player: str) -> None:
    (example,) = corpus.build(WORDS, {player: 1.0}, {effort: 1.0}, 1, seed, players=PLAYERS)
    trained = {i for i, m in enumerate(example.mask) if m}
    spans = _assistant_spans(example.tokens)
    assert trained == {i for a, b in spans for i in range(a, b)}
    assert len(spans) == example.guesses


def test_a_slipped_turn_is_outside_the_dictionary_answered_with_the_mark_and_not_trained() -> None:
    rng = np.random.default_rng(3)
    messages, game = corpus.conversation("CRANE", "solver", "low", PLAYERS, rng, slip_rate=1.0)
    turns = [(m, t["content"]) for m, t in zip(messages[2::2], messages[3::2])]
    slipped = [(m, answer) for m, answer in turns if m.get(corpus.UNTRAINED)]
    # Every word is slipped except the answer itself (a slip is noise in the context, not a lost game).
    assert len(slipped) == len(turns) - int(game.solved) > 0
    assert [w for w in game.guesses if w != "CRANE"] == [w for w in game.guesses if w not in ALLOWED]
    assert all(template.compact_tool_result(a).endswith(template.OUTSIDE_DICTIONARY_CODE) for _, a in slipped)
    ids, mask = corpus.render_example(messages, "low")
    trained_calls = tok.show([t for t, m in zip(ids, mask) if m])
    assert trained_calls == ("<call>crane)<eot>" if game.solved else "")
    assert len(OUTSIDE.findall(tok.show(ids))) == len(slipped)


@pytest.mark.parametrize("rate", [0.0, 0.3])
def test_slips_change_only_the_slipped_turns(rate: float) -> None:
    examples = corpus.build(WORDS, {"plausible": 1.0}, {"low": 1.0}, 60, 11, players=PLAYERS, slip_rate=rate)
    marked = sum(len(OUTSIDE.findall(tok.show(e.tokens))) for e in examples)
    untrained_turns = sum(len(_assistant_spans(e.tokens)) for e in examples) - sum(
        sum(1 for a, _ in _assistant_spans(e.tokens) if e.mask[a]) for e in examples
    )
    assert marked == untrained_turns
    assert (marked > 0) == (rate > 0)


def test_slip_changes_one_letter_into_a_word_outside_the_dictionary() -> None:
    rng = np.random.default_rng(0)
    for word in WORDS[:50]:
        out = corpus.slip(word, set(), rng)
        assert len(out) == 5 and out not in ALLOWED
        assert sum(a != b for a, b in zip(word, out)) == 1
