"""`mtrl play` states its rules and quits cleanly; `mtrl cleanup` lists, dry-runs or deletes, as asked."""

from __future__ import annotations

import builtins
import io

import pytest
from mtrl_course import aws, cli, cleanup, iam, naming


def play(capsys, monkeypatch, answers: list) -> tuple[int, str, str]:
    """`mtrl play --word crane` with `answers` typed (an exception class is raised at that prompt)."""
    typed = iter(answers)

    def fake_input(prompt: str = "") -> str:
        print(prompt, end="")
        answer = next(typed)
        if isinstance(answer, type) and issubclass(answer, BaseException):
            raise answer
        return answer

    monkeypatch.setattr(builtins, "input", fake_input)
    code = cli.main(["play", "--word", "crane"])
    out, err = capsys.readouterr()
    return code, out, err


def test_play_states_its_rules_before_the_first_guess(capsys, monkeypatch):
    code, out, err = play(capsys, monkeypatch, ["crane"])
    rules, _, game = out.partition("guess> ")
    assert code == 0 and err == ""
    assert "6 guesses" in rules and "green = right letter, right place" in rules and "Ctrl-C quits" in rules
    assert "solved" in game and "answer: CRANE" in game


def _reward_parts(out: str) -> tuple[float, list[float]]:
    """The total and the terms of the "reward ... = ..." line (a weight times a shaping counts once)."""
    import re

    line = next(line for line in out.splitlines() if line.startswith("reward "))
    total_text, _, parts = line.removeprefix("reward ").partition(" = ")
    terms = [float(t) for t in re.findall(r"(?:^|\+ )([-+]?\d+\.\d+) for", parts)]
    weighted = re.search(r"([\d.]+) x shaping ([-+]\d\.\d+)", parts)
    assert weighted, line
    return float(total_text), [*terms, float(weighted.group(1)) * float(weighted.group(2))]


def test_the_end_of_a_game_says_what_the_shaping_score_is_and_how_it_enters_the_reward(capsys, monkeypatch):
    from wordle_agent import reward

    code, out, _ = play(capsys, monkeypatch, ["slate", "crane"])
    assert code == 0
    total, terms = _reward_parts(out)
    assert total == pytest.approx(sum(terms), abs=0.0015)
    assert f"{reward.SOLVE_BASE:g} for the solve" in out and "solving on guess 2 of 6" in out
    assert f"score / {reward.SHAPING_SCALE:g}, clipped to [-1, 1]" in out
    assert "shaping score " in out and "the points your guesses earned and lost" in out and "docs/REWARD.md" in out


def test_a_lost_game_shows_the_loss_tier(capsys, monkeypatch):
    from wordle_agent import reward

    code, out, _ = play(capsys, monkeypatch, ["slate", EOFError])
    total, terms = _reward_parts(out)
    assert code == 0 and f"{reward.LOSS_REWARD:g} for the loss" in out
    assert total == pytest.approx(sum(terms), abs=0.0015)


def test_end_of_input_gives_up_cleanly(capsys, monkeypatch):
    code, out, err = play(capsys, monkeypatch, ["slate", EOFError])
    assert code == 0 and err == "" and "given up" in out and "answer: CRANE" in out


def test_ctrl_c_quits_with_130_and_no_traceback(capsys, monkeypatch):
    code, out, err = play(capsys, monkeypatch, ["slate", KeyboardInterrupt])
    assert code == cli.INTERRUPTED_EXIT == 130
    assert "Traceback" not in out + err and out.rstrip().endswith("quit")
    assert "CRANE" not in out  # quitting is not giving up: the answer stays hidden


def test_a_game_of_nonsense_ends_at_the_entry_limit(capsys, monkeypatch):
    from wordle_agent.game import MAX_TOOL_CALLS

    code, out, _ = play(capsys, monkeypatch, ["?"] * MAX_TOOL_CALLS)  # a 13th prompt would raise StopIteration
    assert code == 0 and out.count("guess> ") == MAX_TOOL_CALLS and "answer: CRANE" in out


# --------------------------------------------------------------------------------------- cleanup
@pytest.fixture
def offline_role(offline_backend):
    """A fresh offline backend (conftest: reset before and after, cleanup's file search confined
    to the test's folder) holding the course's job role; its name."""
    iam.ensure_job_role(session=aws.session())
    return naming.resource_name(iam.JOB_ROLE_KIND)


class Keyboard(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_dry_run_deletes_nothing_and_shows_the_steps_in_order(capsys, monkeypatch, offline_role):
    monkeypatch.setattr("sys.stdin", Keyboard("yes\n"))  # even a person ready to say yes is not asked
    code = cli.main(["cleanup", "--dry-run"])
    out = capsys.readouterr().out
    assert code == 0 and iam.role_exists(offline_role)
    assert "would run, in this order:" in out and "dry run: nothing deleted" in out and "type yes" not in out
    steps = out.split("would run, in this order:")[1].split("dry run:")[0].split()
    assert any(offline_role in step for step in steps)
    assert len(cleanup.discover()) > 0  # everything is still there


def test_the_default_without_a_terminal_lists_and_deletes_nothing(capsys, monkeypatch, offline_role):
    monkeypatch.setattr("sys.stdin", io.StringIO("yes\n"))  # piped input never confirms a deletion
    assert cli.main(["cleanup"]) == 0
    out = capsys.readouterr().out
    assert iam.role_exists(offline_role) and "nothing deleted" in out and "mtrl cleanup --yes" in out


@pytest.mark.parametrize("answer", ["no\n", "y\n", "\n", ""])
def test_the_default_in_a_terminal_deletes_only_on_yes(capsys, monkeypatch, offline_role, answer):
    monkeypatch.setattr("sys.stdin", Keyboard(answer))
    monkeypatch.setattr(builtins, "input", lambda prompt="": _read_line(answer))
    assert cli.main(["cleanup"]) == 0
    assert iam.role_exists(offline_role) and "nothing deleted" in capsys.readouterr().out


def test_the_default_in_a_terminal_deletes_after_yes(capsys, monkeypatch, offline_role):
    monkeypatch.setattr("sys.stdin", Keyboard("yes\n"))
    monkeypatch.setattr(builtins, "input", lambda prompt="": " YES ")
    assert cli.main(["cleanup"]) == 0
    assert not iam.role_exists(offline_role) and "clean: nothing of the course's is left" in capsys.readouterr().out


def test_yes_deletes_without_asking(capsys, monkeypatch, offline_role):
    def no_questions(prompt: str = "") -> str:
        raise AssertionError("--yes must not ask")

    monkeypatch.setattr(builtins, "input", no_questions)
    assert cli.main(["cleanup", "--yes"]) == 0
    assert not iam.role_exists(offline_role)


def _read_line(answer: str) -> str:
    if not answer:
        raise EOFError
    return answer.rstrip("\n")
