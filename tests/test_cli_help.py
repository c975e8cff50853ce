"""`mtrl --help` and every subcommand's help: each option explains itself and states its default."""

from __future__ import annotations

import argparse

import pytest
from mtrl_course import cli


def subparsers(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> list[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every (command path, parser) below `parser`, depth first, the parser itself included."""
    found = [(path, parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                found += subparsers(child, (*path, name))
    return found


PARSERS = subparsers(cli.build_parser())
OPTIONS = [
    (path, action)
    for path, parser in PARSERS
    for action in parser._actions
    if not isinstance(action, (argparse._HelpAction, argparse._SubParsersAction))
]


def rendered_help(path: tuple[str, ...], capsys) -> str:
    with pytest.raises(SystemExit) as exit_info:
        cli.main([*path, "--help"])
    assert exit_info.value.code == 0
    return " ".join(capsys.readouterr().out.split())


def test_every_command_is_reached():
    names = {" ".join(path) for path, _ in PARSERS}
    assert {"cleanup", "play", "train", "notebooks run", "dataset make", "words build"} <= names
    assert len(OPTIONS) > 40  # the walk found the options, not an empty list


@pytest.mark.parametrize(("path", "action"), OPTIONS, ids=[f"{' '.join(p)} {a.dest}" for p, a in OPTIONS])
def test_every_option_has_help_that_states_its_default(path, action):
    assert action.help and len(action.help) > 10, f"mtrl {' '.join(path)} {action.dest}: no help text"
    flag = isinstance(action, argparse._StoreTrueAction)
    if flag or action.required:
        return  # off unless given, or no default at all
    text = cli._HelpFormatter("mtrl")._get_help_string(action)
    assert "default" in text, f"mtrl {' '.join(path)} {action.dest}: the help does not state the default"


def test_a_real_default_is_printed_and_none_never_is(capsys):
    text = rendered_help(("dataset", "make"), capsys)
    assert "training rows (default: 640)" in text and "(default: 42)" in text
    assert "default: None" not in text and "default: False" not in text
    for path, _ in PARSERS:
        out = rendered_help(path, capsys)
        assert "default: None" not in out and "default: False" not in out, path


def test_the_top_level_help_explains_the_mode(capsys, monkeypatch):
    monkeypatch.delenv("MTRL_MODE", raising=False)
    text = rendered_help((), capsys)
    assert "MTRL_MODE=offline" in text and "MTRL_MODE=live" in text
    assert "no AWS account" in text and "--yes" in text
    assert "now: MTRL_MODE=offline (not set)" in text
    monkeypatch.setenv("MTRL_MODE", "live")
    assert "now: MTRL_MODE=live" in rendered_help((), capsys)


def test_commands_that_rewrite_committed_files_say_so(capsys):
    assert "rewrites the committed" in rendered_help(("words", "build"), capsys)
    assert "rewrites the committed" in rendered_help(("dataset", "make"), capsys)
    assert "rewrites the committed notebooks unless --no-store" in rendered_help(("notebooks", "run"), capsys)


def test_cleanup_help_tells_the_three_ways_apart(capsys):
    text = rendered_help(("cleanup",), capsys)
    assert "--dry-run lists and shows the deletion steps" in text and "--yes deletes without asking" in text
