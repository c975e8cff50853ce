"""Reading clues back out of the tool's answers: exact on real game text, total on garbage."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from mtrl_course.local.transcript import clues_from_messages, game_over_in, solved_in, tool_result_texts
from mtrl_course.tool_answers import is_over, is_solved, parse_clue
from wordle_agent.game import MAX_TOOL_CALLS, WordleGame, score_guess
from wordle_agent.words import ALLOWED, ANSWERS

ALLOWED_SORTED = sorted(ALLOWED)
ALL_GREEN = ["G"] * 5

answers = st.sampled_from(ANSWERS)
# Mostly dictionary words; sometimes the answer itself (a solve) or a repeat, plus junk input.
moves = st.lists(
    st.one_of(
        st.sampled_from(ALLOWED_SORTED),
        st.just("<answer>"),
        st.just("<repeat>"),
        st.text(max_size=8),
        st.from_regex(r"[a-z]{5}", fullmatch=True),
    ),
    min_size=1,
    max_size=14,
)


def _as_messages(texts: list[str]) -> list[dict]:
    """A Strands-shaped conversation whose tool results are `texts`."""
    messages: list[dict] = [{"role": "user", "content": [{"text": "Play Wordle."}]}]
    for i, text in enumerate(texts):
        messages.append(
            {
                "role": "assistant",
                "content": [{"toolUse": {"toolUseId": f"t{i}", "name": "guess_word", "input": {}}}],
                "metadata": {"usage": {}},
                "tracking_id": "x",
            }
        )
        messages.append(
            {
                "role": "user",
                "content": [
                    {
                        "toolResult": {
                            "toolUseId": f"t{i}",
                            "status": "success",
                            "content": [{"text": text}],
                        }
                    }
                ],
            }
        )
    return messages


@settings(max_examples=150, deadline=None)
@given(answer=answers, plan=moves)
def test_real_game_text_round_trips_to_clues(answer, plan):
    game = WordleGame(answer)
    texts, expected = [], []
    for move in plan:
        if move == "<answer>":
            move = answer
        elif move == "<repeat>":
            move = game.guesses[-1] if game.guesses else answer
        guesses_before = len(game.guesses)
        was_over = game.over
        distinct_before = set(game.guesses)
        text = game.guess(move)
        texts.append(text)
        clue = parse_clue(text)
        used_a_turn = len(game.guesses) > guesses_before and not was_over
        word = game.guesses[-1] if used_a_turn else None
        if used_a_turn and word not in distinct_before:
            want = (word, ALL_GREEN) if word == answer else (word, score_guess(word, answer))
            assert clue == want, text
            expected.append(want)
        else:
            assert clue is None, text  # errors, repeats and "game over" carry no new clue
        # Ended: solved, six guesses used, or past the per-game tool-call cap.
        assert is_over(text) == (game.over or game.tool_calls > MAX_TOOL_CALLS), text
        assert is_solved(text) == (used_a_turn and word == answer)
    messages = _as_messages(texts)
    assert tool_result_texts(messages) == texts
    assert clues_from_messages(messages) == expected
    assert game_over_in(messages) == (game.over or game.tool_calls > MAX_TOOL_CALLS)
    assert solved_in(messages) == game.solved


def test_the_tool_call_cap_reads_as_over():
    game = WordleGame(ANSWERS[0])
    texts = [game.guess("??") for _ in range(MAX_TOOL_CALLS + 1)]
    assert not any(is_over(t) for t in texts[:-1])
    assert is_over(texts[-1]) and not game.over
    assert clues_from_messages(_as_messages(texts)) == []


def test_the_spec_examples_parse():
    line = "Guess 2/6: BLOKE -> B=yellow, L=green, O=green, K=gray, E=green\nCurrent Knowledge:\n- Guesses Remaining: 4"
    assert parse_clue(line) == ("BLOKE", ["Y", "G", "G", "X", "G"])
    assert not is_over(line)
    solve = "Guess 4/6: BLOKE \u2014 all green. Correct, you solved it!"
    assert parse_clue(solve) == ("BLOKE", ALL_GREEN)
    assert is_solved(solve) and is_over(solve)
    assert is_over("Guess 6/6: BLOKE -> B=yellow, L=green, O=green, K=gray, E=green")


def test_feedback_naming_other_letters_is_not_a_clue():
    assert parse_clue("Guess 2/6: BLOKE -> B=yellow, L=green, O=green, K=gray, X=green") is None
    assert parse_clue("Guess 2/6: BLOKE -> B=yellow, L=green") is None


json_like = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(["role", "content", "toolResult", "text", "toolUse", "status", "x"]),
            children,
            max_size=4,
        )
    ),
    max_leaves=25,
)


@settings(max_examples=300, deadline=None)
@given(blob=json_like)
def test_garbage_never_raises(blob):
    for value in (
        blob,
        [blob],
        [{"role": "user", "content": [{"toolResult": blob}]}],
        [{"content": [{"toolResult": {"content": blob}}]}],
    ):
        assert isinstance(tool_result_texts(value), list)
        assert isinstance(clues_from_messages(value), list)
        assert isinstance(game_over_in(value), bool)
        assert isinstance(solved_in(value), bool)


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=200) | st.from_regex(r"Guess \d{1,6}/\d{1,6}: [A-Za-z]{5} .{0,60}", fullmatch=True))
def test_garbage_text_never_raises(text):
    clue = parse_clue(text)
    assert clue is None or (len(clue[0]) == 5 and len(clue[1]) == 5)
    assert isinstance(is_over(text), bool)
    assert isinstance(is_solved(text), bool)
