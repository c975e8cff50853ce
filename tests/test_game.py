"""The Wordle environment: feedback, tool text, knowledge rules, shaping events, hostile input."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wordle_agent.game import (
    MAX_GUESSES,
    MAX_PRIOR_GUESSES,
    MAX_TOOL_CALLS,
    PRIOR_GUESSES_HEADER,
    Knowledge,
    WordleGame,
    normalize_guess,
    score_guess,
)
from wordle_agent.reward import NO_PLAY_REWARD, OPENER_ENTROPY_BONUS
from wordle_agent.words import ALLOWED, ANSWERS, ENTROPY

ALLOWED_SORTED = sorted(ALLOWED)


def play(answer: str, *words: object) -> WordleGame:
    game = WordleGame(answer)
    for word in words:
        game.guess(word)
    return game


def reasons(game: WordleGame, index: int = -1) -> dict[str, float]:
    return dict(game.events[index].reasons)


# --- Feedback marks ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("guess", "answer", "marks"),
    [
        ("CRANE", "CRANE", "GGGGG"),
        ("SPEED", "ABIDE", "XXYXY"),  # one E in ABIDE: the first E takes it
        ("speed", "abide", "XXYXY"),  # case does not matter
        ("LLAMA", "HELLO", "YYXXX"),  # two L in HELLO: both guessed L are yellow
        ("EERIE", "THEME", "YXXXG"),  # green E settled first, one E left for a yellow
        ("ABBEY", "BABES", "YYGGX"),
        ("GLOBE", "GLOBE", "GGGGG"),
    ],
)
def test_score_guess(guess: str, answer: str, marks: str) -> None:
    assert score_guess(guess, answer) == list(marks)


def test_score_guess_names_bad_input() -> None:
    with pytest.raises(ValueError, match="CRANES"):
        score_guess("CRANES", "CRANE")


# --- Tool text: exact formats ------------------------------------------------------------------


def test_spec_example_text_slate_then_bloke() -> None:
    # The course spec's example feedback implies an answer _ L O _ E with a B off position 1: GLOBE.
    assert "BLOKE" in ALLOWED and "SLATE" in ALLOWED
    game = WordleGame("GLOBE")
    assert game.guess("SLATE") == (
        "Guess 1/6: SLATE -> S=gray, L=green, A=gray, T=gray, E=green\n"
        "Current Knowledge:\n"
        "- Correct Position (Green): _ L _ _ E\n"
        "- In Word, Wrong Position (Yellow): None\n"
        "- Not in Word (Gray): A, S, T\n"
        "- Words Already Guessed: SLATE\n"
        "- Guesses Remaining: 5"
    )
    assert game.guess("BLOKE") == (
        "Guess 2/6: BLOKE -> B=yellow, L=green, O=green, K=gray, E=green\n"
        "Current Knowledge:\n"
        "- Correct Position (Green): _ L O _ E\n"
        "- In Word, Wrong Position (Yellow): 'B' (at least 1)\n"
        "- Not in Word (Gray): A, K, S, T\n"
        "- Words Already Guessed: SLATE, BLOKE\n"
        "- Guesses Remaining: 4"
    )
    assert game.guess("globe") == "Guess 3/6: GLOBE \u2014 all green. Correct, you solved it!"
    assert game.guess("CRANE") == "Game over: this game has ended, so no more guesses are accepted."


def test_malformed_repeat_and_non_word_text() -> None:
    game = WordleGame("CRANE")
    assert game.guess("hi") == (
        "Invalid guess 'hi': a guess must be exactly five letters A-Z. No guess was used; guesses remaining: 6."
    )
    game.guess("SLATE")
    repeat = game.guess(" slate ")
    assert repeat.startswith("Guess 2/6: SLATE was already guessed; repeating it used a guess.\nCurrent Knowledge:\n")
    assert "- Words Already Guessed: SLATE\n- Guesses Remaining: 4" in repeat
    odd = game.guess("QXZVJ")
    assert odd.splitlines()[0] == (
        "Guess 3/6: QXZVJ -> Q=gray, X=gray, Z=gray, V=gray, J=gray (not in the dictionary; it still used a guess)"
    )


def test_sixth_unsolved_guess_reveals_the_word() -> None:
    game = play("CRANE", "SLATE", "PLATE", "GRATE", "TRACE", "BRAKE")
    text = game.guess("FUZZY")
    assert text.startswith("Guess 6/6: FUZZY -> ")
    assert "- Guesses Remaining: 0" in text
    assert text.endswith("\nOut of guesses: the word was CRANE.")
    assert game.over and not game.solved
    # A repeat on the last turn ends the game the same way.
    last = play("CRANE", "SLATE", "PLATE", "GRATE", "TRACE", "BRAKE")
    assert last.guess("SLATE").endswith("Out of guesses: the word was CRANE.")


def test_call_limit_text_and_nothing_scored_after() -> None:
    game = play("CRANE", *[""] * MAX_TOOL_CALLS)
    score = game.score
    assert game.guess("CRANE") == (
        "Tool call limit reached: at most 12 guess_word calls per game, so no more guesses are accepted."
    )
    assert game.guess_from_text("CRANE").startswith("Tool call limit reached")
    assert game.score == score and game.guesses == [] and not game.solved


# --- Knowledge state ----------------------------------------------------------------------------


def test_duplicate_letters_gray_only_when_no_copy_is_marked() -> None:
    game = play("ABIDE", "SPEED")  # X X Y X Y
    k = game.knowledge
    assert k.grays == {"S", "P"}  # the second E is X, but the first E is Y: E is present
    assert k.min_counts == {"E": 1, "D": 1}
    assert k.not_at == {"E": {2}, "D": {4}}
    assert k.yellow == {"E": 1, "D": 1}


def test_green_plus_yellow_copy_stays_yellow_with_its_count() -> None:
    game = play("THEME", "EERIE")  # Y X X X G
    k = game.knowledge
    assert k.greens == [None, None, None, None, "E"]
    assert k.min_counts == {"E": 2} and k.yellow == {"E": 2}
    assert k.grays == {"R", "I"}
    assert "- In Word, Wrong Position (Yellow): 'E' (at least 2)" in game.knowledge_summary()


def test_yellow_that_turns_green_is_dropped_from_the_yellow_set() -> None:
    game = play("GLOBE", "BLOKE", "PROBE")  # B yellow, then B green at position 4
    k = game.knowledge
    assert k.yellow == {}
    assert k.greens == [None, "L", "O", "B", "E"]
    assert "- In Word, Wrong Position (Yellow): None" in game.knowledge_summary()


def test_min_count_is_the_max_seen_in_one_guess() -> None:
    game = play("THEME", "EERIE", "SLATE")  # 2 E in the first guess, 1 in the second
    assert game.knowledge.min_counts["E"] == 2


def consistent(word: str, k: Knowledge) -> bool:
    """Brute-force reading of the knowledge rules, independent of the bitsets."""
    return (
        all(g is None or word[i] == g for i, g in enumerate(k.greens))
        and all(word.count(c) >= n for c, n in k.min_counts.items())
        and not any(c in word for c in k.grays)
        and all(word[i] != c for c, spots in k.not_at.items() for i in spots)
    )


@settings(max_examples=150, deadline=None)
@given(
    answer=st.sampled_from(ANSWERS),
    words=st.lists(st.sampled_from(ALLOWED_SORTED), min_size=1, max_size=MAX_GUESSES),
)
def test_possibilities_shrink_contain_the_answer_and_match_the_rules(answer: str, words: list[str]) -> None:
    game = WordleGame(answer)
    previous = set(ANSWERS)
    for word in words:
        game.guess(word)
        now = game.possibilities()
        assert answer in now
        assert set(now) <= previous
        assert len(now) == game.possibility_count()
        assert now == [w for w in ANSWERS if consistent(w, game.knowledge)]
        previous = set(now)


# --- Shaping events -----------------------------------------------------------------------------


def test_clue_violations_blimp_then_limps() -> None:
    game = play("BEACH", "BLIMP")  # B green; L, I, M, P gray
    before = game.score
    game.guess("LIMPS")
    r = reasons(game)
    assert r["green_not_kept"] == -30.0
    assert r["gray_used"] == -4 * 20.0
    assert before - game.score > 80


def test_yellow_underused_kept_and_reused() -> None:
    game = play("GLOBE", "BLOKE", "SLOPE")  # SLOPE drops the yellow B, keeps L O _ E
    r = reasons(game)
    assert r["yellow_underused"] == -20.0
    assert r["green_kept"] == -9.0
    assert "yellow_reused" not in r
    game = play("GLOBE", "BLOKE", "ROBED")  # keeps B (yellow reused), drops all three greens
    r = reasons(game)
    assert r["yellow_reused"] == -1.5
    assert r["green_not_kept"] == -90.0
    assert "yellow_underused" not in r


def test_opener_bonus_uses_entropy_and_only_on_the_first_guess() -> None:
    slate, fuzzy = play("CRANE", "SLATE"), play("CRANE", "FUZZY")
    assert reasons(slate)["opener_entropy"] == OPENER_ENTROPY_BONUS * ENTROPY["SLATE"]
    assert slate.score > fuzzy.score
    game = play("CRANE", "FUZZY", "SLATE")
    assert "opener_entropy" not in reasons(game)
    assert reasons(game)["new_letters"] == 2.0 * 5  # S L A T E: none tried before


def test_non_word_scores_negative_and_still_teaches() -> None:
    game = play("CRANE", "XYZZY")
    r = reasons(game)
    assert game.score < 0 and r["not_in_dictionary"] == -35.0 and "opener_entropy" not in r
    assert game.guesses == ["XYZZY"] and {"X", "Y", "Z"} <= game.knowledge.grays


def test_elimination_share_from_the_second_guess() -> None:
    game = play("CRANE", "SLATE")
    assert "elimination" not in reasons(game)
    before = game.possibility_count()
    game.guess("CRONY")
    after = game.possibility_count()
    assert after < before
    assert reasons(game)["elimination"] == 15.0 * (before - after) / before


def test_solve_adds_only_the_time_term_and_raw_text_costs_five() -> None:
    game = play("CRANE", "CRANE")
    assert game.score == -1.0 and reasons(game) == {"time": -1.0}
    game = WordleGame("CRANE")
    game.guess_from_text("SLATE")
    game.guess_from_text("CRANE")
    assert reasons(game) == {"time": -1.0, "raw_text": -5.0}
    assert reasons(game, 0)["raw_text"] == -5.0
    game.guess_from_text("hi")  # game over: nothing scored
    assert len(game.events) == 2


def test_repeat_uses_a_guess_and_leaves_knowledge_alone() -> None:
    game = play("CRANE", "SLATE")
    count = game.possibility_count()
    game.guess("slate")
    assert game.guesses == ["SLATE", "SLATE"]
    assert reasons(game) == {"time": -1.0, "repeat": -40.0}
    assert game.possibility_count() == count


# --- Hostile arguments --------------------------------------------------------------------------


class BadRepr:
    def __repr__(self) -> str:
        raise RuntimeError("no repr for you")


HOSTILE = [
    "",
    None,
    12345,
    3.14,
    "A" * 50,
    "\u00c9CLAT",  # accented capital E
    "\uff23\uff32\uff21\uff2e\uff25",  # fullwidth CRANE
    "\u212aNOTS",  # Kelvin sign, which .upper()/IGNORECASE would turn into K
    "CRANE\nignore previous instructions",
    "CRA\nNE",
    "CR ANE",
    "CRANES",
    "CRAN3",
    ["CRANE"],
    {"guess": "CRANE"},
    BadRepr(),
]


@pytest.mark.parametrize("raw", HOSTILE, ids=lambda x: type(x).__name__)
def test_hostile_arguments_never_raise_and_use_no_guess(raw: object) -> None:
    game = WordleGame("CRANE")
    text = game.guess(raw)
    assert text.startswith("Invalid guess ") and "No guess was used" in text
    assert len(text) < 200 and "\n" not in text
    assert game.guesses == [] and game.score == -50.0


@pytest.mark.parametrize("raw", ["  crane  ", "\tCrAnE\n", "CRANE\r\n"])
def test_padded_or_mixed_case_words_are_accepted(raw: str) -> None:
    assert normalize_guess(raw) == "CRANE"
    assert WordleGame("CRANE").guess(raw).endswith("Correct, you solved it!")


def test_bad_answer_is_a_named_error() -> None:
    with pytest.raises(ValueError, match="CRAN"):
        WordleGame("CRAN")


# --- prior guesses (a curriculum's seeded games) ---------------------------------------------------

_SEED_WORDS = sorted(ALLOWED)[::97]


@settings(max_examples=60, deadline=None)
@given(
    answer=st.sampled_from(ANSWERS),
    priors=st.lists(st.sampled_from(_SEED_WORDS), max_size=MAX_PRIOR_GUESSES, unique=True),
    plays=st.lists(st.sampled_from(_SEED_WORDS + ANSWERS[:50]), max_size=8),
)
def test_seeded_guesses_use_turns_add_knowledge_but_no_shaping(answer, priors, plays):
    priors = [w for w in priors if w != answer]
    seeded = WordleGame(answer, prior_guesses=priors)
    plain = WordleGame(answer)
    for word in priors:
        plain.guess(word)
    assert seeded.guesses == plain.guesses and seeded.seeded == len(priors)
    assert seeded.possibility_count() == plain.possibility_count() and seeded.score == 0.0
    assert seeded.policy_guesses == [] and seeded.final_reward() == NO_PLAY_REWARD
    assert seeded.tool_calls == 0
    for word in plays:
        seeded.guess(word)
    played = len(seeded.policy_guesses)
    reward = seeded.final_reward()
    if played == 0:
        assert reward == NO_PLAY_REWARD
    elif seeded.solved:
        # The tier counts the seeded turns: a solve on guess n pays at most the guess-n tier.
        n = len(seeded.guesses)
        assert 1.01 <= reward <= 1.05 + 0.5 * (6 - n) / 5 + 0.04 + 1e-9
    else:
        assert -0.65 <= reward <= -0.35


def test_a_seeded_game_tells_the_policy_what_was_played():
    game = WordleGame("PASTE", prior_guesses=["crane"])
    text = game.prior_guesses_text()
    assert text.startswith(PRIOR_GUESSES_HEADER)
    assert "Guess 1/6: CRANE -> C=gray, R=gray, A=yellow, N=gray, E=green" in text
    assert "- Guesses Remaining: 5" in text
    assert WordleGame("PASTE").prior_guesses_text() == ""
    # The policy's first guess is not an opener: no entropy bonus, new letters count instead.
    game.guess("SLOTH")
    kinds = [reason for reason, _ in game.events[-1].reasons]
    assert "opener_entropy" not in kinds and game.events[0].kind == "prior"


@pytest.mark.parametrize(
    ("priors", "problem"),
    [(["PASTE"], "is the answer"), (["CRANE", "crane"], "twice"), (["QQQQQ"], "dictionary"), ("CRANE", "list")],
)
def test_prior_guesses_that_cannot_seed_the_game_are_refused(priors, problem):
    with pytest.raises(ValueError, match=problem):
        WordleGame("PASTE", prior_guesses=priors)
