"""The coding tasks and the user simulator: every task is solvable, and only by asking."""

from __future__ import annotations

from collections import Counter

import pytest

from coding_agent import sandbox, simulator, tasks

TASKS = tasks.all_tasks()


def test_there_are_enough_tasks_with_one_to_three_hidden_details() -> None:
    assert len(TASKS) >= 60
    counts = Counter(len(t.hidden) for t in TASKS)
    assert set(counts) == {1, 2, 3}
    assert all(4 <= len(t.tests) <= 8 for t in TASKS)
    assert len({t.id for t in TASKS}) == len(TASKS)


def test_the_in_process_check_finds_no_problem() -> None:
    assert tasks.problems() == []


def test_the_check_catches_a_task_whose_tests_cannot_tell() -> None:
    task = TASKS[0]
    # Keep only the first test: for some hidden detail a guess then passes everything.
    weak = [t for t in TASKS if tasks.problems([t.__class__(**{**t.__dict__, "tests": t.tests[:1]})])]
    assert weak, "cutting every task to one test should make at least one guess undetectable"
    assert "cannot tell" in " ".join(
        tasks.problems([weak[0].__class__(**{**weak[0].__dict__, "tests": weak[0].tests[:1]})])
    )
    assert task.reference != task.code_knowing(set())


@pytest.mark.slow
@pytest.mark.experiments
def test_in_the_sandbox_every_reference_passes_and_every_guess_fails() -> None:
    failures = []
    for task in TASKS:
        verdict = sandbox.run_tests(task.reference, task.entry_point, task.tests)
        if verdict.correctness != 1.0:
            failures.append(f"{task.id}: reference {verdict.status} {verdict.passed}/{verdict.total} {verdict.detail}")
        for key, code in task.guessed_variants().items():
            guessed = sandbox.run_tests(code, task.entry_point, task.tests)
            if guessed.status != sandbox.OK or guessed.correctness == 1.0:
                failures.append(f"{task.id}: guessing {key} gives {guessed.status} {guessed.passed}/{guessed.total}")
    assert failures == []


def test_the_brief_does_not_give_the_details_away() -> None:
    for task in TASKS:
        for line in task.spec():
            assert line not in task.brief


def test_unknown_task_names_some_ids() -> None:
    with pytest.raises(KeyError, match="ids look like"):
        tasks.get("nope_99")
    assert tasks.get(TASKS[3].id) is TASKS[3]


# ------------------------------------------------------------------------------ the user
def test_one_detail_per_relevant_question_in_any_order() -> None:
    task = next(t for t in TASKS if len(t.hidden) == 3)
    user = simulator.RuleBasedUser(task)
    for detail in reversed(task.hidden_details):
        assert user.answer(detail.question) == detail.answer(task.hidden[detail.key])
    assert user.revealed == [d.key for d in reversed(task.hidden_details)]


def test_a_generic_question_reveals_nothing() -> None:
    for task in TASKS:
        user = simulator.RuleBasedUser(task)
        assert user.answer(simulator.GENERIC_QUESTION) == simulator.VAGUE_ANSWER
        assert user.revealed == []


def test_asking_again_repeats_without_revealing_more() -> None:
    task = TASKS[0]
    user = simulator.RuleBasedUser(task)
    question = task.hidden_details[0].question
    first = user.answer(question)
    assert user.answer(question) == simulator.ALREADY_TOLD + first
    assert user.revealed == [task.hidden_details[0].key]


def test_free_text_questions_match_by_keyword() -> None:
    task = next(t for t in TASKS if t.family == "price" and "symbol" in t.hidden)
    assert simulator.match_detail(task, "Which CURRENCY do you want?").key == "symbol"
    assert simulator.match_detail(task, "What is your favourite colour?") is None


class FakeBedrock:
    def __init__(self) -> None:
        self.calls = []

    def converse(self, **kwargs):
        self.calls.append(kwargs)
        return {"output": {"message": {"content": [{"text": "Use euros."}]}}}


def test_the_bedrock_user_keeps_the_spec_in_the_system_prompt_and_tracks_reveals() -> None:
    task = next(t for t in TASKS if t.family == "price" and "symbol" in t.hidden)
    client = FakeBedrock()
    user = simulator.BedrockUser(task, client, "example-model-id")
    symbol = next(d for d in task.hidden_details if d.key == "symbol")
    assert user.answer(symbol.question) == "Use euros."
    system = client.calls[0]["system"][0]["text"]
    assert all(line in system for line in task.spec())
    assert user.revealed == ["symbol"]
    assert [m["role"] for m in client.calls[0]["messages"]] == ["user"]
    user.answer(simulator.GENERIC_QUESTION)
    assert [m["role"] for m in client.calls[1]["messages"]] == ["user", "assistant", "user"]
    assert user.revealed == ["symbol"]
