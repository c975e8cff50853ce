"""The one verdict rule: Student's t cutoff for the seed count, never a fixed 2 SE."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mtrl_course import verdicts

pytestmark = pytest.mark.floats


def test_the_cutoffs_are_students_t_at_95_percent_two_sided():
    for df, value in verdicts.T_CUTOFF_95.items():
        assert verdicts.cutoff(df + 1) == pytest.approx(value, abs=5e-4)
    # With 2 degrees of freedom P(T <= t) = 1/2 + t / (2 sqrt(2 + t^2)): the 2-SE rule's false-alarm rate.
    assert 2 * (1 - (0.5 + 2 / (2 * math.sqrt(6)))) == pytest.approx(0.184, abs=1e-3)


def test_three_seeds_more_than_two_but_less_than_four_point_three_se_away_is_no_effect():
    values = [0.05, 0.00, 0.10]  # mean 0.05, SE 0.0289: 1.7 SE
    assert verdicts.verdict(values).label == verdicts.NULL
    values = [0.05, 0.04, 0.09]  # mean 0.06, SE 0.0153: 3.9 SE, beyond 2 but within 4.30
    v = verdicts.verdict(values)
    assert v.mean / v.se > 2 and v.label == verdicts.NULL and v.cutoff == pytest.approx(4.303, abs=1e-3)
    v = verdicts.verdict([0.06, 0.05, 0.07])  # 6 SE
    assert v.label == verdicts.GAIN and v.beyond_noise
    assert verdicts.verdict([-0.06, -0.05, -0.07]).label == verdicts.LOSS
    assert verdicts.verdict([-0.06, -0.05, -0.07], names=("higher", "lower")).label == "lower"


def test_one_seed_gets_no_verdict_and_no_values_are_refused():
    assert verdicts.verdict([0.2]).label == verdicts.UNDECIDED
    with pytest.raises(ValueError, match="at least one value"):
        verdicts.verdict([])
    with pytest.raises(ValueError, match="at least 2 seeds"):
        verdicts.cutoff(1)


@given(st.lists(st.floats(-1, 1), min_size=2, max_size=8), st.floats(0.01, 10))
def test_the_verdict_does_not_depend_on_the_unit(values, scale):
    # Measuring the same gains in points instead of fractions changes no verdict.
    a, b = verdicts.verdict(values), verdicts.verdict([v * scale for v in values])
    margin = abs(abs(a.mean) - a.cutoff * a.se)
    if margin > 1e-9 * (abs(a.mean) + 1):
        assert a.label == b.label


# --- Every verdict in the course uses this rule -----------------------------------------------------

ROOT = Path(__file__).resolve().parents[1]
# A fixed multiple of a standard error (or of a spread) used as a cutoff: "2 * se", "1.96 * stat['se']",
# "(> 2 se)", "within 2 SE", "twice the standard error", "twice the larger seed sd".
FIXED_CUTOFF = re.compile(
    r"\b(?:1\.96|2(?:\.0)?)\s*\*\s*[\w\[\]\"'.]*\bs[ed]\b"
    r"|[<>(]\s*2 s[ed]\b|\bwithin 2 s[ed]\b|\b2 SE\b"
    r"|\btwice (?:the |its )?(?:larger )?(?:seed )?(?:standard error|standard deviation|sd|se)\b",
    re.IGNORECASE,
)
# This rule's own explanation of what it replaces.
EXPLAINS_THE_RULE = {"agent_src/mtrl_course/verdicts.py", "tests/test_verdicts.py"}


def _course_texts():
    for folder, suffix in (("agent_src", ".py"), ("experiments", ".py"), ("benchmarks", ".py"), ("tests", ".py")):
        for path in sorted((ROOT / folder).rglob(f"*{suffix}")):
            rel = path.relative_to(ROOT).as_posix()
            if rel not in EXPLAINS_THE_RULE and ".venv" not in rel:
                yield rel, path.read_text(encoding="utf-8")
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")) + [
        ROOT / "README.md",
        *sorted((ROOT / "docs").glob("*.md")),
    ]:
        if path.suffix == ".ipynb":
            cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
            for i, cell in enumerate(cells):
                yield f"{path.relative_to(ROOT).as_posix()} cell {i}", "".join(cell["source"])
        else:
            yield path.relative_to(ROOT).as_posix(), path.read_text(encoding="utf-8")


def test_no_table_or_sentence_judges_with_a_fixed_multiple_of_the_standard_error():
    found = [f"{where}: {match.group(0)!r}" for where, text in _course_texts() for match in FIXED_CUTOFF.finditer(text)]
    assert not found, (
        "a verdict with a fixed cutoff (it overclaims with few seeds; use mtrl_course.verdicts.verdict, "
        "Student's t for the seed count):\n" + "\n".join(found)
    )


def test_every_stored_verdict_is_the_rule_applied_to_its_seeds():
    checked = 0
    for path in sorted((ROOT / "experiments" / "results").rglob("*.json")):
        stats = json.loads(path.read_text()).get("statistics", {})
        for key, stat in stats.items() if isinstance(stats, dict) else ():
            values = stat.get("values", stat.get("by_seed")) if isinstance(stat, dict) else None
            if not values or not {"holds", "beyond_noise", "verdict"} & set(stat):
                continue
            judged = verdicts.verdict(values)
            if "verdict" in stat:
                assert stat["verdict"] == judged.label, (path.name, key)
            if "beyond_noise" in stat:
                assert stat["beyond_noise"] == judged.beyond_noise, (path.name, key)
            if "holds" in stat:
                assert stat["holds"] == (judged.label == verdicts.GAIN), (path.name, key)
                assert stat["opposite"] == (judged.label == verdicts.LOSS), (path.name, key)
            checked += 1
    assert checked >= 50, f"only {checked} stored verdicts found: did a results file's layout change?"
