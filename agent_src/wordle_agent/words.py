"""The word lists the environment plays with, loaded once at import.

- `ANSWERS`: the secret words, sorted, uppercase (common five-letter words, no inflections).
- `ALLOWED`: every word a guess may be (a superset of `ANSWERS`).
- `ENTROPY`: for each allowed guess, the entropy in bits of its feedback over the answers; the
  reward's opening bonus reads it, so SLATE-like openers earn the most.

The files in `data/` are generated and committed; `mtrl_course.wordlists` builds them from
Debian's SCOWL lists and records how in `data/PROVENANCE.json` (`mtrl words build` / `verify`).
This module is deployed with the agent, so it reads them with the standard library only.
"""

from __future__ import annotations

import json
from pathlib import Path

DATA_DIR = Path(__file__).resolve().parent / "data"
ANSWERS_FILE = DATA_DIR / "answers.txt"
ALLOWED_FILE = DATA_DIR / "allowed_guesses.txt"
ENTROPY_FILE = DATA_DIR / "word_entropy.json"
_REBUILD_HINT = "regenerate it with `mtrl words build` (needs Debian's scowl package) or restore it from git"


def _open(path: Path):
    try:
        return open(path, encoding="ascii")
    except FileNotFoundError:
        # Without this the agent dies at import with a bare traceback on a packaging mistake
        # (data/ left out of the AgentCore bundle), and the cause is far from the symptom.
        raise FileNotFoundError(f"word data file missing: {path}; {_REBUILD_HINT}") from None


def _read_words(path: Path) -> list[str]:
    with _open(path) as fh:
        return [line.strip() for line in fh if line.strip()]


def _read_entropy(path: Path) -> dict[str, float]:
    with _open(path) as fh:
        return json.load(fh)


ANSWERS: list[str] = _read_words(ANSWERS_FILE)
ALLOWED: frozenset[str] = frozenset(_read_words(ALLOWED_FILE))
ENTROPY: dict[str, float] = _read_entropy(ENTROPY_FILE)
