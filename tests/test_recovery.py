"""Raw-text guess recovery: the three observed formats, exact five-letter words, and hostile text."""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wordle_agent.recovery import MAX_SCAN_CHARS, extract_guesses


@pytest.mark.parametrize(
    "text, expected",
    [
        # the markup of a tool-call parser that gave up
        ("<__function=guess_word>\n<__parameter=guess>STARE</__parameter>\n</__function>", ["STARE"]),
        ("<__function=guess_word><__parameter=guess> stare </__parameter>", ["STARE"]),
        # JSON-ish arguments
        ('{"guess": "STARE"}', ["STARE"]),
        ("{'guess':'crane'}", ["CRANE"]),
        ("guess=STARE", ["STARE"]),
        ('guess: "stare"', ["STARE"]),
        ("My next guess: slate", ["SLATE"]),
        # a call written as prose
        ('I will call guess_word("crane") now.', ["CRANE"]),
        ("guess_word(guess='crane')", ["CRANE"]),
        ('guess_word( guess = "Crane" )', ["CRANE"]),
        ("guess_word(crane)", ["CRANE"]),
    ],
)
def test_each_observed_format_is_recovered(text: str, expected: list[str]) -> None:
    assert extract_guesses(text) == expected


def test_guesses_come_out_in_order_of_appearance_across_formats() -> None:
    text = (
        'First guess_word("slate"), then {"guess": "crane"} and finally '
        "<__parameter=guess>PIOUS</__parameter>; again guess=slate"
    )
    assert extract_guesses(text) == ["SLATE", "CRANE", "PIOUS", "SLATE"]


@pytest.mark.parametrize(
    "text",
    [
        '{"guess": "cranes"}',  # six letters
        '{"guess": "cran"}',  # four letters
        'guess_word("cr4ne")',
        "<__parameter=guess>CRANES</__parameter>",
        '{"guess": "crane1"}',  # glued to a digit: not a five-letter word
        "guess=crané",  # not a-z
        "guesses=crane",  # another key
        "myguess=crane",
        'guess_word("crane',  # unclosed call
        "I think CRANE is a good word.",  # a word in prose is not a call
        "",
    ],
)
def test_only_exact_five_letter_calls_count(text: str) -> None:
    assert extract_guesses(text) == []


@pytest.mark.parametrize("value", [None, 42, b'{"guess": "crane"}', ["guess=crane"], {"guess": "crane"}])
def test_non_text_yields_nothing(value: object) -> None:
    assert extract_guesses(value) == []  # type: ignore[arg-type]


def test_only_the_first_max_scan_chars_are_read() -> None:
    text = "x" * MAX_SCAN_CHARS + '{"guess": "crane"}'
    assert extract_guesses(text) == []
    assert extract_guesses('{"guess": "slate"}' + text) == ["SLATE"]


@pytest.mark.parametrize(
    "hostile",
    [
        "guess=" * 200_000,
        "guess_word(" * 200_000,
        "<__parameter=guess>" * 100_000,
        '{"guess": "' + " " * 500_000,
        "guess" + " " * 500_000 + "=crane",
    ],
)
def test_hostile_text_is_scanned_in_linear_time(hostile: str) -> None:
    started = time.perf_counter()
    extract_guesses(hostile)
    assert time.perf_counter() - started < 1.0


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.text(alphabet=st.sampled_from(list("guess_word(){}\"'=: <>/_parmtiCRANE \n")), max_size=300))
def test_any_text_gives_uppercase_five_letter_words(text: str) -> None:
    words = extract_guesses(text)
    assert all(len(w) == 5 and w.isascii() and w.isalpha() and w.isupper() for w in words)
