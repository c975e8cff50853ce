"""The reference solver and the bare game loop: it must be a yardstick worth trusting."""

from __future__ import annotations

import json
import os
import random

import numpy as np
import pandas as pd
import pytest

from mtrl_course import config
from mtrl_course.feedback_arrays import pattern_to_marks
from mtrl_course.solver import (
    EntropySolver,
    GameRecord,
    default_solver,
    load_split_words,
    marks_to_code,
    play,
    play_many,
    summarise,
)
from wordle_agent.game import score_guess
from wordle_agent.words import ALLOWED, ANSWERS, ENTROPY

SAMPLE_SIZE = 128
SAMPLE_SEED = 7
MIN_SOLVE_REWARD = 1.01


def _held_out_words() -> list[str]:
    if config.VALIDATION_FILE.is_file():
        return load_split_words("validation")
    return random.Random(SAMPLE_SEED).sample(ANSWERS, SAMPLE_SIZE)


@pytest.fixture(scope="module")
def held_out() -> pd.DataFrame:
    return play_many(_held_out_words())


def test_solves_every_held_out_word_within_six(held_out):
    assert len(held_out) > 0
    failed = held_out[~held_out["solved"]]
    assert failed.empty, f"unsolved: {failed[['answer', 'guesses']].to_dict('records')}"
    assert held_out["n_guesses"].between(1, 6).all()


def test_every_solve_clears_the_success_threshold(held_out):
    assert (held_out["reward"] >= MIN_SOLVE_REWARD).all(), held_out.nsmallest(3, "reward")


def test_summary_matches_the_games(held_out):
    summary = summarise(held_out)
    assert summary["games"] == len(held_out)
    assert summary["solve_rate"] == 1.0
    assert sum(summary["guess_histogram"].values()) == len(held_out)
    assert summary["unsolved"] == 0
    assert 2.5 < summary["mean_guesses"] < 4.5
    assert summary["mean_reward"] == pytest.approx(held_out["reward"].mean())


def test_first_guess_is_the_top_entropy_word():
    opener = EntropySolver(cache_dir=None).opener
    assert ENTROPY[opener] == max(ENTROPY.values())
    assert all(r.guesses.split()[0] == opener for r in play_many(ANSWERS[:3]).itertuples())


def test_same_guesses_twice_with_fresh_solvers():
    words = random.Random(SAMPLE_SEED + 1).sample(ANSWERS, 20)
    first = play_many(words, EntropySolver())
    second = play_many(words, EntropySolver())
    assert first["guesses"].tolist() == second["guesses"].tolist()


def test_every_guess_respects_what_the_solver_believes():
    solver = default_solver()
    for answer in random.Random(SAMPLE_SEED + 2).sample(ANSWERS, 15):
        record = play(answer, solver)
        history = []
        for guess in record.guesses:
            possible = solver.possibilities(history)
            # The solver's filter must be exactly "every earlier clue would come out the same".
            brute = [w for w in ANSWERS if all(score_guess(g, w) == m for g, m in history)]
            assert possible == brute
            assert answer in possible
            if len(possible) <= 2:
                assert guess in possible
            history.append((guess, score_guess(guess, answer)))


def test_record_fields_agree_with_each_other():
    record = play(ANSWERS[0])
    assert isinstance(record, GameRecord)
    assert record.solved and record.guesses[-1] == record.answer
    assert record.n_guesses == len(record.guesses)


def test_marks_round_trip_through_the_pattern_code():
    for code in range(243):
        assert marks_to_code(pattern_to_marks(code)) == code
    assert marks_to_code("GGGGG") == 242


@pytest.mark.parametrize("bad", [["G"] * 4, ["G", "Y", "X", "X", "B"], "GGGG!"])
def test_bad_marks_name_the_input(bad):
    with pytest.raises(ValueError, match="five of G, Y, X"):
        marks_to_code(bad)


def test_bad_history_names_the_input():
    with pytest.raises(ValueError, match="five letters"):
        default_solver().next_guess([("CAT", "XXXXX")])
    with pytest.raises(ValueError, match="pair"):
        default_solver().next_guess(["TARES"])


def test_small_custom_lists_use_computed_entropy_and_cache(tmp_path):
    answers = random.Random(1).sample(ANSWERS, 60)
    allowed = sorted(set(answers) | set(random.Random(2).sample(sorted(ALLOWED), 300)))
    solver = EntropySolver(answers, allowed, cache_dir=tmp_path)
    assert len(list(tmp_path.glob("patterns-*.npy"))) == 0  # lazy: nothing built yet
    records = [play(w, solver) for w in answers[:10]]
    assert all(r.solved for r in records)
    assert len(list(tmp_path.glob("patterns-*.npy"))) == 1
    reloaded = np.load(next(tmp_path.glob("patterns-*.npy")))
    assert np.array_equal(reloaded, solver.matrix)


def test_the_cache_keeps_only_the_newest_files(tmp_path):
    for i in range(4):
        old = tmp_path / f"patterns-old{i}.npy"
        np.save(old, np.zeros((1, 1), dtype=np.uint8))
        os.utime(old, (1_000_000 + i, 1_000_000 + i))
    solver = EntropySolver(ANSWERS[:5], ANSWERS[:5], cache_dir=tmp_path)
    solver.matrix
    kept = sorted(p.name for p in tmp_path.glob("patterns-*.npy"))
    assert len(kept) == 3
    assert "patterns-old3.npy" in kept and "patterns-old0.npy" not in kept


def test_a_secret_outside_the_answer_list_still_gets_played():
    answers = ["CRANE", "SLATE", "TRAIN"]
    secret = "PIOUS"
    allowed = sorted(set(answers) | {secret} | set(random.Random(3).sample(sorted(ALLOWED), 200)))
    record = play(secret, EntropySolver(answers, allowed, cache_dir=None))
    assert record.n_guesses == 6 or record.solved
    assert len(set(record.guesses)) == len(record.guesses)  # never a repeat


def test_empty_answer_list_is_refused():
    with pytest.raises(ValueError, match="at least one answer"):
        EntropySolver([], ALLOWED, cache_dir=None)


def test_summarise_counts_a_hand_made_frame():
    frame = pd.DataFrame({"solved": [True, True, False], "n_guesses": [3, 5, 6], "reward": [1.5, 1.3, -0.5]})
    summary = summarise(frame)
    assert summary["solve_rate"] == pytest.approx(2 / 3)
    assert summary["mean_guesses"] == 4.0
    assert summary["guess_histogram"] == {1: 0, 2: 0, 3: 1, 4: 0, 5: 1, 6: 0}
    assert summary["unsolved"] == 1


def test_split_words_read_the_task_rows(tmp_path):
    good = tmp_path / "split.jsonl"
    tasks = [{"prompt": "play", "answer": w, "id": str(i)} for i, w in enumerate(["crane", "SLATE"])]
    rows = [{"prompt": json.dumps(task)} for task in tasks]
    good.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert load_split_words(path=good) == ["CRANE", "SLATE"]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"prompt": "not json"}\n')
    with pytest.raises(ValueError, match="bad.jsonl:1"):
        load_split_words(path=bad)
    with pytest.raises(ValueError, match="unknown split"):
        load_split_words("test")
    with pytest.raises(FileNotFoundError, match="make dataset"):
        load_split_words(path=tmp_path / "missing.jsonl")
