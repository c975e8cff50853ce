"""What a learner sees in the committed notebooks: no walls of text, nothing meant for maintainers.

Fast: it reads the committed files and executes nothing. It covers every course notebook (the
template is for authors and is left out) and checks what a learner reads there:

- every markdown cell's prose stays under `MAX_WORDS` words (fenced code and HTML comments do
  not count; the generated banner is a fixed list of fields checked by tests/test_catalog.py);
- no maintainer wording or internal reference (the issue tracker, "edit the catalog", TODO
  markers, helper agents, git commits and their hashes) in a markdown cell, a code cell or a
  stored output. This check skips HTML comments (JupyterLab, GitHub and the site do not render
  them); the generated banner carries none all the same, since a learner who opens the cell to
  edit it reads them. A note for maintainers belongs in a docstring or docs/.

Figures readable at the site's width (drawn at the column's width, or enlarged on click) and
tables that do not hide values are checked in the rendered pages, where the width is known:
tests/test_site.py (`LAYOUT_CHECK` at 1280x900, and the click-to-enlarge test).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from mtrl_course import config
from mtrl_course.curriculum import catalog, executor

COURSE_NOTEBOOKS = sorted(p for p in config.NOTEBOOKS_DIR.glob("*.ipynb") if executor.notebook_id(p) is not None)
MAX_WORDS = 200

# Markdown cells allowed over MAX_WORDS, by notebook and the words the cell starts with: none now
# (the ten there were when this check was written have been split or shortened). An entry whose
# cell is short enough (or gone) fails the test, so the set can only stay empty.
LONG_CELLS_ALLOWED: set[tuple[str, str]] = set()

HTML_COMMENT = re.compile(r"<!--.*?-->", re.S)
FENCED_CODE = re.compile(r"^```.*?^```", re.S | re.M)
# Words addressed to whoever maintains the course, not to a learner. Each with why it is wrong
# on the page: the learner has no issue tracker, no catalog to edit and no helper sessions.
MAINTAINER_WORDING = {
    "an issue of the tracker": re.compile(r"\b(?:the|this|that|an) issue\b|\bissue #?\d+", re.I),
    "an instruction to maintainers": re.compile(r"edit the catalog|not this cell", re.I),
    "a work marker": re.compile(r"\b(?:TODO|FIXME|XXX)\b"),
    "the helpers that build the course": re.compile(r"helper agent|\bsub-?agents?\b", re.I),
    "git provenance": re.compile(r"\bgit[ _]commit\b", re.I),
    "the course's own tests and design notes": re.compile(
        r"\bnbval\b|\bpytest\b|numbers-within|tolerance for this cell|\bthe (?:notebook )?tests? runs?\b"
        r"|DESIGN\.md|CONTRIBUTING\.md",
        re.I,
    ),
}
# A commit hash: 10 to 40 hex digits with at least one digit and one letter (so a word like
# "deadbeef" or a number is not one). Stored results keep their commits; pages do not show them.
COMMIT_HASH = re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{10,40}\b")


def _nn(path: Path) -> str:
    return str(executor.notebook_id(path))


def _prose(markdown: str) -> str:
    return FENCED_CODE.sub("", HTML_COMMENT.sub("", markdown))


def _start(markdown: str) -> str:
    return " ".join(_prose(markdown).split())


def word_count(markdown: str) -> int:
    return len(_prose(markdown).split())


def long_cells(nb: Any, nn: str) -> list[tuple[str, str, int]]:
    """(nn, start of the cell, words) for each markdown cell over MAX_WORDS, banners left out."""
    found = []
    for cell in nb.cells:
        if cell.cell_type != "markdown" or executor.BANNER_TAG in executor.tags(cell):
            continue
        words = word_count(cell.source)
        if words > MAX_WORDS:
            found.append((nn, _start(cell.source), words))
    return found


def _allowed(nn: str, start: str) -> tuple[str, str] | None:
    return next((entry for entry in LONG_CELLS_ALLOWED if entry[0] == nn and start.startswith(entry[1])), None)


def visible_texts(nb: Any) -> Iterator[tuple[int, str, str]]:
    """(cell index, where, text) for everything a learner reads: sources and stored outputs."""
    for index, cell in enumerate(nb.cells):
        yield index, f"{cell.cell_type} source", HTML_COMMENT.sub("", cell.source)
        for output in cell.get("outputs", []):
            if "text" in output:
                yield index, "output", output["text"]
            for mime, value in output.get("data", {}).items():
                if mime.startswith("text/"):
                    text = value if isinstance(value, str) else "".join(value)
                    yield index, f"output ({mime})", HTML_COMMENT.sub("", text)


def maintainer_words(nb: Any) -> list[str]:
    found = []
    for index, where, text in visible_texts(nb):
        for why, pattern in MAINTAINER_WORDING.items():
            for match in pattern.finditer(text):
                found.append(f"cell {index} {where}: {match.group(0)!r} ({why})")
        if where == "markdown source" or where.startswith("output"):
            for match in COMMIT_HASH.finditer(text):
                found.append(f"cell {index} {where}: {match.group(0)!r} (a commit hash)")
    return found


@pytest.fixture(scope="module")
def notebooks() -> dict[str, Any]:
    return {_nn(path): nbformat.read(path, as_version=4) for path in COURSE_NOTEBOOKS}


def test_every_course_notebook_is_checked(notebooks: dict[str, Any]) -> None:
    assert sorted(notebooks) == [
        entry.nn for entry in catalog.NOTEBOOKS if (config.NOTEBOOKS_DIR / entry.filename).is_file()
    ]


def test_no_markdown_cell_is_a_wall_of_text(notebooks: dict[str, Any]) -> None:
    too_long = [
        f"{nn}: {words} words in the cell starting {start[:60]!r}"
        for nn, nb in notebooks.items()
        for nn, start, words in long_cells(nb, nn)
        if _allowed(nn, start) is None
    ]
    assert not too_long, f"over {MAX_WORDS} words (split the cell or say it shorter):\n" + "\n".join(too_long)


def test_the_allow_list_only_shrinks(notebooks: dict[str, Any]) -> None:
    still_long = {_allowed(nn, start) for nn, nb in notebooks.items() for nn, start, _ in long_cells(nb, nn)}
    stale = sorted(LONG_CELLS_ALLOWED - still_long)
    assert not stale, f"these cells are short enough now (or gone): delete them from LONG_CELLS_ALLOWED: {stale}"


def test_no_maintainer_wording_in_what_a_learner_sees(notebooks: dict[str, Any]) -> None:
    found = [f"{nn} {problem}" for nn, nb in notebooks.items() for problem in maintainer_words(nb)]
    assert not found, (
        "words for maintainers in a learner's view (move them to an HTML comment, a docstring or docs/):\n"
        + "\n".join(found)
    )


def test_the_banner_says_nothing_to_maintainers_not_even_in_a_comment() -> None:
    banner = catalog.banner_markdown("05")
    assert not HTML_COMMENT.search(banner)
    assert not MAINTAINER_WORDING["an instruction to maintainers"].search(banner)


# ------------------------------------------------------------------ the checks catch what they should
def _notebook(*cells: Any) -> Any:
    nb = nbformat.v4.new_notebook()
    nb.cells = list(cells)
    return nb


def test_the_word_count_leaves_out_code_and_comments() -> None:
    text = "one two three\n\n```python\n" + "x = 1\n" * 300 + "```\n<!-- " + "hidden " * 300 + "-->"
    assert word_count(text) == 3


def test_a_long_cell_and_maintainer_words_are_caught() -> None:
    wall = nbformat.v4.new_markdown_cell("## A wall\n\n" + "word " * (MAX_WORDS + 1))
    [(nn, start, words)] = long_cells(_notebook(wall), "99")
    assert nn == "99" and start.startswith("## A wall word") and words == MAX_WORDS + 4
    note = nbformat.v4.new_markdown_cell("The issue that asked for this reports 2.4%. TODO: cite it.")
    output = nbformat.v4.new_code_cell("print(1)")
    output.outputs = [nbformat.v4.new_output("stream", text="git commit a1f8085665\n")]
    hidden = nbformat.v4.new_markdown_cell("Fine. <!-- edit the catalog, not this cell; the issue; a1f8085665 -->")
    found = maintainer_words(_notebook(note, output, hidden))
    assert any("'The issue'" in f for f in found) and any("TODO" in f for f in found)
    assert any("git commit" in f for f in found) and any("a1f8085665" in f and "commit hash" in f for f in found)
    assert not any(f.startswith("cell 2") for f in found)
