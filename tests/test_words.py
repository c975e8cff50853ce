"""The word data: committed files verify, openers make sense, the build is reproducible, and the
feedback patterns behind the entropy table follow Wordle's duplicate-letter rule."""

from __future__ import annotations

import ast
import json
import os
import shutil
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mtrl_course import wordlists
from mtrl_course.feedback_arrays import pattern_matrix, pattern_to_marks
from wordle_agent import words

DATA_DIR = words.DATA_DIR
STRONG_OPENERS = {"SLATE", "SOARE", "CRANE", "CRATE", "TRACE", "STARE", "RAISE", "ARISE", "SALET", "REAST"}


def _provenance() -> dict:
    return json.loads((DATA_DIR / wordlists.PROVENANCE_FILE).read_text())


def _removed_by(rule: str) -> set[str]:
    rules = {r["rule"]: r["words"] for r in _provenance()["answers"]["inflection_rules"]}
    return {entry.split("<")[0] for entry in rules[rule]}


# ------------------------------------------------------------------------------ committed data
def test_committed_data_verifies():
    assert wordlists.verify() == []


def test_loaded_lists_are_consistent():
    assert words.ANSWERS == sorted(set(words.ANSWERS))
    assert all(len(w) == 5 and w.isascii() and w.isalpha() and w.isupper() for w in words.ALLOWED)
    assert set(words.ANSWERS) <= words.ALLOWED
    assert set(words.ENTROPY) == words.ALLOWED
    assert 1_800 <= len(words.ANSWERS) <= 2_100
    assert 10_000 <= len(words.ALLOWED) <= 12_000


def test_strong_openers_rank_near_the_top():
    top = wordlists.top_openers(words.ENTROPY, 10)
    assert top[0][1] > 5.5
    assert {w for w, _ in top} & STRONG_OPENERS
    assert words.ENTROPY["SLATE"] > 5.5 and words.ENTROPY["CRANE"] > 5.5
    # A word of repeated rare letters tells you little.
    assert words.ENTROPY["FUZZY"] < 3.0
    ranked = sorted(words.ENTROPY, key=words.ENTROPY.get, reverse=True)
    assert ranked.index("SLATE") < 0.001 * len(ranked)


# Each of these is in SCOWL english-words.35 (checked when the rules were reviewed); the build
# must remove it from the answers, keep it as a guess, and credit the rule named.
@pytest.mark.parametrize(
    "word, rule",
    [
        ("CARDS", "plural_or_s_verb"),
        ("BOXES", "plural_or_s_verb"),
        ("CRIES", "plural_or_s_verb"),
        ("WIVES", "plural_or_s_verb"),
        ("BAKED", "past_tense"),
        ("ACTED", "past_tense"),
        ("CRIED", "past_tense"),
        ("USING", "ing_form"),
        ("DYING", "ing_form"),
        ("NEWER", "comparative"),
        ("WIDER", "comparative"),
    ],
)
def test_known_inflections_are_not_answers(word, rule):
    assert word not in words.ANSWERS
    assert word in words.ALLOWED
    assert word in _removed_by(rule)


@pytest.mark.parametrize("word", ["TEETH", "WROTE", "GONNA", "SLAVE"])
def test_plain_denylist_words_stay_guesses_only(word):
    assert word not in words.ANSWERS and word in words.ALLOWED


@pytest.mark.parametrize(
    "word",
    # -er headwords (no superlative), keep-listed look-alikes, irregular forms that are headwords.
    [
        "COVER",
        "WATER",
        "TOWER",
        "POWER",
        "INNER",
        "BAKER",
        "BEING",
        "THING",
        "LOWER",
        "FOUND",
        "BLEED",
        "GREED",
        "SPEED",
        "NAKED",
        "CHAOS",
        "GENUS",
    ],
)
def test_headwords_that_look_inflected_are_answers(word):
    assert word in words.ANSWERS


# ------------------------------------------------------------------------------- corruption
@pytest.fixture
def data_copy(tmp_path: Path) -> Path:
    target = tmp_path / "data"
    shutil.copytree(DATA_DIR, target)
    return target


def _rewrite_words(path: Path, change) -> None:
    path.write_text("".join(w + "\n" for w in change(path.read_text().split())))


def test_verify_detects_a_changed_byte(data_copy: Path):
    path = data_copy / "answers.txt"
    raw = bytearray(path.read_bytes())
    raw[0] = ord("Z") if raw[0] != ord("Z") else ord("Y")
    path.write_bytes(bytes(raw))
    problems = wordlists.verify(data_copy)
    assert any("answers.txt: SHA-256" in p for p in problems), problems


def test_verify_detects_an_answer_outside_allowed(data_copy: Path):
    _rewrite_words(data_copy / "answers.txt", lambda ws: sorted(ws + ["ZZZZQ"]))
    problems = wordlists.verify(data_copy)
    assert any("answers not in allowed guesses: ZZZZQ" in p for p in problems), problems
    assert any("PROVENANCE.json records" in p for p in problems), problems


def test_verify_detects_denylisted_words(data_copy: Path, tmp_path: Path):
    # A stand-in denylist: CRANE hashed as if it were a slur, SLATE as a plain entry.
    deny = tmp_path / "deny.txt"
    deny.write_text(f"# test\n{wordlists.denylist_line('crane')}\nSLATE  # test entry\n")
    problems = wordlists.verify(data_copy, denylist_path=deny)
    hashed = [p for p in problems if "hashed denylist entry" in p]
    assert any(p.startswith("answers.txt:") for p in hashed), problems
    assert any(p.startswith("allowed_guesses.txt:") for p in hashed), problems
    assert any("SLATE is on the denylist" in p for p in problems), problems
    assert not any("CRANE" in p for p in problems), "hashed words must not be spelled in messages"


def test_verify_detects_entropy_problems(data_copy: Path):
    path = data_copy / "word_entropy.json"
    table = json.loads(path.read_text())
    del table["CRANE"]
    table["SLATE"] = 9.5
    path.write_text(json.dumps(table, indent=0, sort_keys=True) + "\n")
    problems = wordlists.verify(data_copy)
    assert any("allowed guesses without entropy: CRANE" in p for p in problems), problems
    assert any("SLATE has entropy 9.5" in p for p in problems), problems


def test_verify_names_a_missing_file(data_copy: Path):
    (data_copy / "allowed_guesses.txt").unlink()
    problems = wordlists.verify(data_copy)
    assert len(problems) == 1 and "allowed_guesses.txt" in problems[0]


def test_words_module_names_a_missing_file(tmp_path: Path):
    with pytest.raises(FileNotFoundError, match="nothing.txt.*mtrl words build"):
        words._read_words(tmp_path / "nothing.txt")


def test_words_module_imports_only_the_stdlib():
    tree = ast.parse(Path(words.__file__).read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module.split(".")[0])
    assert names - {"__future__"} <= set(sys.stdlib_module_names)


# ---------------------------------------------------------------------------------- denylist
def test_denylist_line_hashes_the_uppercase_word():
    line = wordlists.denylist_line(" crane ")
    assert line == wordlists.denylist_line("CRANE")
    assert line.startswith("sha256:") and len(line) == len("sha256:") + 64
    with pytest.raises(wordlists.WordDataError, match="'cran'"):
        wordlists.denylist_line("cran")


def test_hash_command_reads_arguments_and_stdin(capsys, monkeypatch):
    assert wordlists.main(["hash", "crane"]) == 0
    assert capsys.readouterr().out.startswith(wordlists.denylist_line("CRANE") + "  #")
    monkeypatch.setattr(sys, "stdin", __import__("io").StringIO("slate\n"))
    assert wordlists.main(["hash"]) == 0
    assert wordlists.denylist_line("SLATE") in capsys.readouterr().out


@pytest.mark.parametrize(
    "line, message",
    [
        ("CRANE", "needs a '# reason'"),
        ("sha256:abc", "64 lowercase hex"),
        ("CRANES  # x", "neither"),
    ],
)
def test_malformed_denylist_lines_name_the_line(tmp_path: Path, line, message):
    path = tmp_path / "deny.txt"
    path.write_text(f"# header\n{line}\n")
    with pytest.raises(wordlists.WordDataError, match=f"deny.txt:2: .*{message}"):
        wordlists.load_denylist(path)


def test_committed_denylist_parses():
    deny = wordlists.load_denylist()
    assert len(deny.hashes) >= 40 and "GONNA" in deny.plain


# ---------------------------------------------------------------------------- inflection rules
BASE = frozenset(
    "card box cry wife elf bake act cry up use die do new newest wide widest dry driest "
    "newer cove wat tow inn low lowest".split()
)


@pytest.mark.parametrize(
    "word, rule",
    [
        ("cards", "plural_or_s_verb"),
        ("boxes", "plural_or_s_verb"),
        ("cries", "plural_or_s_verb"),
        ("wives", "plural_or_s_verb"),
        ("elves", "plural_or_s_verb"),
        ("baked", "past_tense"),
        ("acted", "past_tense"),
        ("cried", "past_tense"),
        ("upped", "past_tense"),
        ("using", "ing_form"),
        ("dying", "ing_form"),
        ("doing", "ing_form"),
        ("newer", "comparative"),
        ("wider", "comparative"),
        ("drier", "comparative"),
        ("lower", "comparative"),
        ("newest", "superlative"),
    ],
)
def test_rules_find_inflections(word, rule):
    hit = wordlists.inflection_of(word, BASE)
    assert hit is not None and hit[0] == rule


@pytest.mark.parametrize("word", ["cover", "water", "tower", "baker", "inner", "bless", "speed"])
def test_rules_leave_headwords_alone(word):
    # -er without a superlative in the base (COVE but no COVEST) is not a comparative.
    assert wordlists.inflection_of(word, BASE) is None


# ------------------------------------------------------------------------------ regeneration
def _scowl_or_skip() -> Path:
    if (wordlists.SCOWL_DIR / "english-words.35").is_file():
        return wordlists.SCOWL_DIR
    reason = f"SCOWL lists not found in {wordlists.SCOWL_DIR}; install them with `apt-get install scowl`"
    if os.environ.get("CI"):
        pytest.fail(reason + " (CI installs scowl, so this must not be skipped there)")
    pytest.skip(reason)


@pytest.mark.slow
def test_build_reproduces_the_committed_files(tmp_path: Path):
    scowl = _scowl_or_skip()
    start = time.perf_counter()
    summary = wordlists.build(scowl, tmp_path)
    elapsed = time.perf_counter() - start
    committed = _provenance()
    assert summary["scowl_version"] == committed["source"]["version"], (
        "installed scowl differs from the one the committed data was built from; rebuild with "
        "`mtrl words build` and review the diff"
    )
    for name in (*wordlists.GENERATED_FILES, wordlists.PROVENANCE_FILE):
        assert (tmp_path / name).read_bytes() == (DATA_DIR / name).read_bytes(), (
            f"{name} differs from the committed file: run `mtrl words build` and commit the result"
        )
    assert wordlists.verify(tmp_path) == []
    # A bound on hanging, not a speed claim (the build takes seconds; speed belongs in benchmarks).
    assert elapsed < 600


# ---------------------------------------------------------------------------- feedback patterns
def reference_marks(guess: str, answer: str) -> list[str]:
    """Wordle's rule, plainly: greens first, then yellows left to right while copies remain."""
    marks = ["G" if g == a else "X" for g, a in zip(guess, answer)]
    unmatched = Counter(a for g, a in zip(guess, answer) if g != a)
    for i, g in enumerate(guess):
        if marks[i] == "X" and unmatched[g] > 0:
            marks[i] = "Y"
            unmatched[g] -= 1
    return marks


def _marks(guess: str, answer: str, chunk: int = 256) -> list[str]:
    return pattern_to_marks(int(pattern_matrix([guess], [answer], chunk=chunk)[0, 0]))


def test_reference_case_speed_vs_abide():
    assert reference_marks("SPEED", "ABIDE") == list("XXYXY")
    assert _marks("SPEED", "ABIDE") == list("XXYXY")


@pytest.mark.parametrize(
    "guess, answer, expected",
    [("CRANE", "CRANE", "GGGGG"), ("EERIE", "THEME", "YXXXG"), ("LLAMA", "HELLO", "YYXXX")],
)
def test_duplicate_letter_cases(guess, answer, expected):
    assert reference_marks(guess, answer) == list(expected)
    assert _marks(guess, answer) == list(expected)


_WORD = st.text(alphabet="ABCDE", min_size=5, max_size=5)  # five letters: duplicates everywhere


@settings(max_examples=150, deadline=None)
@given(st.lists(_WORD, min_size=1, max_size=6), st.lists(_WORD, min_size=1, max_size=6))
def test_pattern_matrix_matches_the_reference(guesses, answers):
    matrix = pattern_matrix(guesses, answers, chunk=4)  # small chunks exercise the block loop
    for i, g in enumerate(guesses):
        for j, a in enumerate(answers):
            assert pattern_to_marks(int(matrix[i, j])) == reference_marks(g, a), (g, a)
