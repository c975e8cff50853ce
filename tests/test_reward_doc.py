"""docs/REWARD.md must state exactly the constants wordle_agent.reward defines, and all of them."""

from __future__ import annotations

import re
from pathlib import Path

from wordle_agent import reward

DOC = Path(__file__).resolve().parents[1] / "docs" / "REWARD.md"
ROW = re.compile(r"^\| `([A-Z_]+)` \| (-?[0-9.]+) \|", re.MULTILINE)


def test_every_documented_constant_matches_the_code():
    rows = ROW.findall(DOC.read_text())
    assert rows, "no constant rows found in docs/REWARD.md"
    for name, value in rows:
        assert hasattr(reward, name), f"docs/REWARD.md names {name}, which reward.py does not define"
        assert float(value) == float(getattr(reward, name)), (
            f"{name}: doc says {value}, code says {getattr(reward, name)}"
        )


def test_every_constant_in_the_code_is_documented():
    documented = {name for name, _ in ROW.findall(DOC.read_text())}
    defined = {n for n in vars(reward) if n.isupper() and isinstance(getattr(reward, n), (int, float))}
    assert defined == documented, f"undocumented: {sorted(defined - documented)}; stale: {sorted(documented - defined)}"
