"""The notebook catalog is well formed and the README and banners are rendered from it."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
from mtrl_course import config, lockfile, notebook
from mtrl_course.curriculum import catalog, executor

EXPECTED_FILES = [
    "00_setup.ipynb",
    "01_iam_roles.ipynb",
    "02_deploy_the_agent.ipynb",
    "03_verify_the_runtime.ipynb",
    "04_dataset.ipynb",
    "05_launch_training.ipynb",
    "06_monitor_in_mlflow.ipynb",
    "07_evaluate_at_serving_settings.ipynb",
    "08_clean_up.ipynb",
    "09_designing_the_reward.ipynb",
    "10_what_went_wrong.ipynb",
    "11_custom_composite_rewards.ipynb",
]
DOLLARS = re.compile(r"\$\d[\d,.]*")


def test_catalog_is_well_formed() -> None:
    assert catalog.problems() == []


def test_course_order_and_file_names_are_stable() -> None:
    # Names are an API once published: links, the README and instructor guides use them.
    assert [entry.filename for entry in catalog.NOTEBOOKS] == EXPECTED_FILES


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"nn": "5"}, "two digits"),
        ({"slug": "Launch-Training"}, "snake_case"),
        ({"summary": "two\nlines"}, "one line"),
        ({"modes": ("live",)}, "modes must be"),
        ({"live_cost": None}, "needs live_time and live_cost"),
        ({"creates": ("a bucket",), "cleaned_up_in": None}, "cleaned_up_in must name"),
        ({"prerequisites": ("07",)}, "does not come before"),
        ({"live_cost": "about $5 of tokens"}, "needs its source"),
        ({"offline_seconds": 0}, "must be positive"),
        ({"summary": "Launch the job. " * 60}, "keep it under 200"),
    ],
)
def test_problems_catches_malformed_entries(monkeypatch: pytest.MonkeyPatch, change: dict, expected: str) -> None:
    broken = dataclasses.replace(catalog.get("05"), **change)
    entries = tuple(broken if e.nn == "05" else e for e in catalog.NOTEBOOKS)
    monkeypatch.setattr(catalog, "NOTEBOOKS", entries)
    monkeypatch.setattr(catalog, "_BY_NN", {e.nn: e for e in entries})
    assert any(expected in p for p in catalog.problems()), catalog.problems()


def test_dollar_figures_are_only_the_walkthroughs() -> None:
    # The only prices the course may quote are the walkthrough's reported totals (BRIEF.md).
    reported = {"$339", "$79", "$1.20"}
    text = catalog.readme_table() + "".join(catalog.banner_markdown(e.nn) for e in catalog.NOTEBOOKS)
    assert set(DOLLARS.findall(text)) <= reported


def test_unknown_notebook_names_the_known_ones() -> None:
    with pytest.raises(KeyError, match="known: 00, 01"):
        catalog.get("12")


def test_tested_versions_come_from_the_lock() -> None:
    pins = lockfile.key_versions()
    assert list(pins) == list(lockfile.KEY_PACKAGES)
    lock = lockfile.LOCK_FILE.read_text()
    for name, version in pins.items():
        assert f"{name}=={version}" in lock
        assert f"{name} {version}" in catalog.tested_with()


def test_banner_carries_every_field() -> None:
    for entry in catalog.NOTEBOOKS:
        banner = catalog.banner_markdown(entry.nn)
        assert banner.startswith(f"# {entry.nn} · {entry.title}\n")
        for field in (
            "Modes",
            "Time",
            "Live cost",
            "Billable resources (live)",
            "Creates (live)",
            "Prerequisites",
            "Tested with",
        ):
            assert f"- **{field}:**" in banner, (entry.nn, field)


def test_every_banner_is_short_enough_to_read_before_starting() -> None:
    # The review that set the limit found banners of 235 and 244 words, where the cost and the
    # prerequisites drowned; under 200 they still carry every field (the test above).
    counts = {entry.nn: len(catalog.banner_markdown(entry.nn).split()) for entry in catalog.NOTEBOOKS}
    too_long = {nn: words for nn, words in counts.items() if words >= catalog.BANNER_WORD_LIMIT}
    assert not too_long, f"banners of {catalog.BANNER_WORD_LIMIT} words or more: {too_long}"


def test_banner_links_prerequisites_and_the_clean_up() -> None:
    banner = catalog.banner_markdown("05")
    assert "[04 · Dataset](04_dataset.ipynb)" in banner
    assert "Cleaned up in [08 · Clean up](08_clean_up.ipynb)" in banner
    assert "about $339 in training tokens" in banner
    assert "offline only" in catalog.banner_markdown("09")


@pytest.mark.parametrize(("seconds", "text"), [(None, "not yet measured"), (42, "under 1 min"), (95, "about 2 min")])
def test_offline_time_wording(seconds: int | None, text: str) -> None:
    assert catalog.format_offline_time(seconds) == text


def test_next_cells_chain_the_course() -> None:
    assert catalog.next_markdown("04").startswith("**Next:** [05 · Launch training](05_launch_training.ipynb)")
    assert "last notebook" in catalog.next_markdown("11")


def test_readme_table_has_one_row_per_notebook() -> None:
    rows = [line for line in catalog.readme_table().splitlines() if line.startswith("| ")]
    assert len(rows) == 1 + len(catalog.NOTEBOOKS)
    assert all(row.count(" | ") == 5 for row in rows)  # six columns: no stray pipe in a cell


def test_readme_block_replacement() -> None:
    text = f"intro\n{catalog.README_START}\nold\n{catalog.README_END}\nrest\n"
    updated = executor.readme_with_table(text)
    assert updated == f"intro\n{catalog.README_START}\n{catalog.readme_table()}\n{catalog.README_END}\nrest\n"
    assert executor.readme_with_table(updated) == updated
    assert executor.readme_with_table("no markers") is None


def test_readme_block_matches_the_catalog() -> None:
    text = catalog.README_FILE.read_text(encoding="utf-8")
    updated = executor.readme_with_table(text)
    assert updated is not None, (
        f"README.md needs the lines {catalog.README_START} and {catalog.README_END} around the notebooks table"
    )
    assert updated == text, "README.md's notebooks table differs from the catalog: run `mtrl notebooks sync`"


def test_existing_notebooks_are_in_sync() -> None:
    stale = [m for m in executor.sync(readme=False, check=True)]
    assert stale == [], "run `mtrl notebooks sync`: " + "; ".join(stale)


GUIDE = Path(__file__).resolve().parents[1] / "docs" / "INSTRUCTOR_GUIDE.md"
GUIDE_ROW = re.compile(r"^\| (\d\d) · [^|]+\| about (\d+) s", re.MULTILINE)


def test_instructor_guide_times_are_the_catalogs() -> None:
    # The guide's timing table is written by hand; a re-recorded catalog must not leave it stale.
    stated = {number: int(seconds) for number, seconds in GUIDE_ROW.findall(GUIDE.read_text(encoding="utf-8"))}
    measured = {entry.nn: entry.offline_seconds for entry in catalog.NOTEBOOKS}
    assert stated == measured


def test_the_catalog_lists_the_lesson_files_on_disk() -> None:
    # The lessons' bootstrap checks a notebook number against these files (notebook.check_lesson_number).
    assert sorted(path.name for path in config.NOTEBOOKS_DIR.glob("[0-9][0-9]_*.ipynb")) == EXPECTED_FILES


def test_a_lesson_number_with_no_file_names_the_known_ones() -> None:
    notebook.check_lesson_number("05")
    with pytest.raises(notebook.UnknownLesson, match="known: 00, 01, .*, 11$"):
        notebook.check_lesson_number("12")
