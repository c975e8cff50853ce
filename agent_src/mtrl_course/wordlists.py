"""The word data behind the game: build it from Debian's `scowl` lists, record how, and verify it.

Three files feed `wordle_agent.words`: `answers.txt` (the secret words), `allowed_guesses.txt`
(what a guess is checked against) and `word_entropy.json` (the opening information of every
allowed guess, which the reward's first-guess bonus reads). `PROVENANCE.json` records where every
word came from and what every filter removed; `SCOWL-COPYRIGHT.txt` carries SCOWL's licence.

The public sample used AGID, SCOWL's inflection database, to drop plurals and verb forms from the
answers. Debian's package ships no AGID, so this build removes inflections with explicit suffix
rules checked against a base vocabulary, plus two reviewed lists under `data/wordlists/`:

- `headword_keeplist.txt`: words a rule would remove that are headwords in their own right
  (BEING, THING, LOWER); every rule match is recorded, kept or not.
- `answer_denylist.txt`: `sha256:<hex>` lines for slurs and profanity (removed from both lists;
  hashed so the repository never spells them) and plain `WORD  # reason` lines for words that stay
  valid guesses but must never be a secret (irregular inflections the rules cannot see, bodily and
  sexual terms, informal contractions, historically loaded words).

Run `python -m mtrl_course.wordlists build` (or `mtrl words build`) to regenerate,
`... verify` to check the committed files, and `... hash` to make a denylist line.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import math
import re
import shutil
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import wordle_agent
from mtrl_course import config
from mtrl_course.feedback_arrays import ALL_GREEN, encode, entropies, pattern_matrix

# ------------------------------------------------------------------------------------- sources
SCOWL_DIR = Path("/usr/share/dict/scowl")
SCOWL_DOC_DIR = Path("/usr/share/doc/scowl")
SCOWL_PACKAGE = "scowl"
SCOWL_LEVELS = (10, 20, 35, 40, 50, 55, 60, 70, 80, 95)
# english-words is the common core; american-words adds the US spellings (COLOR, ARMOR). The
# british/canadian/australian variants and the proper-name and abbreviation lists stay out.
CATEGORIES = ("english-words", "american-words")
# SCOWL "small": everyday words a player can be expected to know.
ANSWER_MAX_LEVEL = 35
# SCOWL "huge": about 11,000 five-letter words, close to how permissive Wordle itself is.
GUESS_MAX_LEVEL = 80
# The vocabulary inflection stems are looked up in. Level 60 (words in at least two of the twelve
# dictionaries behind 12Dicts) still holds every common stem (EBB, ERR, ICE, OWE, JEAN), while level
# 70 and above add rare "stems" that turn headwords into false inflections: BREE (BREED), GREE
# (GREED), GENU (GENUS), KUDO (KUDOS), MUMP (MUMPS), and at 80, CHAO (CHAOS) and BLEE (BLEED).
BASE_MAX_LEVEL = 60
WORD_LENGTH = 5
WORD_RE = re.compile(rf"[a-z]{{{WORD_LENGTH}}}")
UPPER_WORD_RE = re.compile(rf"[A-Z]{{{WORD_LENGTH}}}")
# Debian 2020.12.07-2 ships the lists as UTF-8; upstream SCOWL is latin-1. Only ASCII lines
# survive the filters, so the decoding only changes which reason an accented entry is counted
# under in the audit, never the words.
ENCODINGS = ("utf-8", "latin-1")

# ------------------------------------------------------------------------------------- outputs
# Not `wordle_agent.words.DATA_DIR`: importing that module loads the files this builds.
AGENT_DATA_DIR = Path(wordle_agent.__file__).resolve().parent / "data"
ANSWERS_FILE = "answers.txt"
ALLOWED_FILE = "allowed_guesses.txt"
ENTROPY_FILE = "word_entropy.json"
PROVENANCE_FILE = "PROVENANCE.json"
COPYRIGHT_FILE = "SCOWL-COPYRIGHT.txt"
GENERATED_FILES = (ANSWERS_FILE, ALLOWED_FILE, ENTROPY_FILE, COPYRIGHT_FILE)
ENTROPY_DECIMALS = 6
MAX_ENTROPY_BITS = math.log2(ALL_GREEN + 1)  # 243 patterns
TOP_OPENERS = 5
EXAMPLES_PER_RULE = 6
# Guesses scored per pattern-matrix block: bounds memory (block x answers) at no cost in speed.
ENTROPY_BLOCK = 2048

WORDLIST_DIR = config.DATA_DIR / "wordlists"
DENYLIST_PATH = WORDLIST_DIR / "answer_denylist.txt"
KEEPLIST_PATH = WORDLIST_DIR / "headword_keeplist.txt"
HASH_PREFIX = "sha256:"
HEX_RE = re.compile(r"[0-9a-f]{64}")
HASHED_REASON = "# slur or profanity (reviewed)"
# verify() names at most this many offenders per kind of problem, so one bad file stays readable.
MAX_REPORTED = 10


class WordDataError(ValueError):
    """A reviewed list or a source file is malformed, or the SCOWL lists are missing."""


# ------------------------------------------------------------------------------------ denylist
def word_hash(word: str) -> str:
    """SHA-256 (hex) of the uppercase word: how hashed denylist entries identify a word."""
    return hashlib.sha256(word.strip().upper().encode("ascii")).hexdigest()


def denylist_line(word: str) -> str:
    """The denylist line that removes `word` from both lists without spelling it: `sha256:<hex>`."""
    clean = word.strip()
    if not (clean.isascii() and UPPER_WORD_RE.fullmatch(clean.upper())):
        raise WordDataError(f"cannot hash {word!r}: denylist entries are {WORD_LENGTH}-letter words (A-Z only)")
    return HASH_PREFIX + word_hash(clean)


@dataclass(frozen=True)
class Denylist:
    """A parsed denylist: hashes (out of both lists) and plain words -> reason (out of answers)."""

    hashes: frozenset[str]
    plain: dict[str, str]


def _reviewed_lines(path: Path) -> Iterable[tuple[int, str, str]]:
    """(line number, entry, reason) for each non-comment line of a reviewed list."""
    if not path.is_file():
        raise WordDataError(f"reviewed word list not found: {path}")
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        entry, _, reason = raw.partition("#")
        entry, reason = entry.strip(), reason.strip()
        if entry:
            yield number, entry, reason


def load_denylist(path: Path = DENYLIST_PATH) -> Denylist:
    """Parse the denylist; a malformed line raises WordDataError naming the file and line."""
    hashes: set[str] = set()
    plain: dict[str, str] = {}
    for number, entry, reason in _reviewed_lines(path):
        if entry.startswith(HASH_PREFIX):
            digest = entry[len(HASH_PREFIX) :]
            if not HEX_RE.fullmatch(digest):
                raise WordDataError(f"{path}:{number}: expected sha256:<64 lowercase hex>, got {entry!r}")
            hashes.add(digest)
        elif UPPER_WORD_RE.fullmatch(entry.upper()) and entry.isascii():
            if not reason:
                raise WordDataError(f"{path}:{number}: plain entry {entry!r} needs a '# reason'")
            plain[entry.upper()] = reason
        else:
            raise WordDataError(f"{path}:{number}: {entry!r} is neither sha256:<hex> nor a {WORD_LENGTH}-letter word")
    return Denylist(frozenset(hashes), plain)


def load_keeplist(path: Path = KEEPLIST_PATH) -> dict[str, str]:
    """Parse the headword keep-list: uppercase word -> reason (every entry must give one)."""
    keep: dict[str, str] = {}
    for number, entry, reason in _reviewed_lines(path):
        if not (UPPER_WORD_RE.fullmatch(entry.upper()) and entry.isascii()) or not reason:
            raise WordDataError(f"{path}:{number}: expected 'WORD  # reason', got {entry!r}")
        keep[entry.upper()] = reason
    return keep


# ---------------------------------------------------------------------------------- inflections
@dataclass(frozen=True)
class InflectionRule:
    """One family of inflections; `stems(word, base)` lists the base-vocabulary stems it fits."""

    name: str
    description: str
    stems: Callable[[str, frozenset[str]], list[str]]


def _found(base: frozenset[str], candidates: Iterable[str]) -> list[str]:
    out: list[str] = []
    for stem in candidates:
        if stem and stem in base and stem not in out:
            out.append(stem)
    return out


_SIBILANT_OR_O = ("s", "x", "z", "ch", "sh", "o")
_CONSONANTS = frozenset("bcdfghjklmnpqrstvwxz")


def _doubled(word: str, suffix: str) -> bool:
    """True when `word` ends in a doubled consonant plus `suffix` (UPPED, BIGGER)."""
    core = word[: -len(suffix)]
    return len(core) >= 3 and core[-1] == core[-2] and core[-1] in _CONSONANTS


def _plural_stems(w: str, base: frozenset[str]) -> list[str]:
    cands: list[str] = []
    if w.endswith("s") and not w.endswith("ss"):
        cands.append(w[:-1])  # CARDS <- CARD, BAKES <- BAKE
    if w.endswith("es") and w[:-2].endswith(_SIBILANT_OR_O):
        cands.append(w[:-2])  # BOXES <- BOX, ASHES <- ASH
    if w.endswith("ies"):
        cands.append(w[:-3] + "y")  # CRIES <- CRY
    if w.endswith("ves"):
        cands += [w[:-3] + "f", w[:-3] + "fe"]  # ELVES <- ELF, WIVES <- WIFE
    return _found(base, cands)


def _past_stems(w: str, base: frozenset[str]) -> list[str]:
    if not w.endswith("ed"):
        return []
    if w[:-1].endswith("e") and w[:-1] in base:
        return [w[:-1]]  # BAKED <- BAKE (and not COPED <- COP, which would be COPPED)
    cands = [w[:-2]]  # ACTED <- ACT
    if w.endswith("ied"):
        cands.append(w[:-3] + "y")  # CRIED <- CRY
    if _doubled(w, "ed"):
        cands.append(w[:-3])  # UPPED <- UP
    return _found(base, cands)


def _ing_stems(w: str, base: frozenset[str]) -> list[str]:
    if not w.endswith("ing"):
        return []
    if w.endswith("ying") and w[:-4] + "ie" in base:
        return [w[:-4] + "ie"]  # DYING <- DIE
    cands = [w[:-3], w[:-3] + "e"]  # DOING <- DO, USING <- USE (both listed when both exist)
    if _doubled(w, "ing"):
        cands.append(w[:-4])
    return _found(base, cands)


def _comparative_stems(w: str, base: frozenset[str]) -> list[str]:
    """-er forms of gradable adjectives only: the stem's superlative must exist too.

    Most -er words are not comparatives (COVER, WATER, TOWER, BAKER, INNER): requiring the
    superlative (NEWER needs NEWEST) separates FEWER from BAKER without a part-of-speech list.
    """
    if not w.endswith("r"):
        return []
    pairs = []
    if w.endswith("ier"):
        pairs.append((w[:-3] + "y", w[:-3] + "iest"))  # DRIER <- DRY (DRIEST)
    if w.endswith("er") and w[:-1].endswith("e") and w[:-1] in base:
        pairs.append((w[:-1], w[:-1] + "st"))  # WIDER <- WIDE (WIDEST)
    elif w.endswith("er"):
        pairs.append((w[:-2], w[:-2] + "est"))  # NEWER <- NEW (NEWEST)
    if w.endswith("er") and _doubled(w, "er"):
        pairs.append((w[:-3], w[:-2] + "est"))  # BIGGER <- BIG (BIGGEST)
    return _found(base, (stem for stem, sup in pairs if sup in base))


def _superlative_stems(w: str, base: frozenset[str]) -> list[str]:
    """-est forms whose comparative also exists (mirror of the comparative rule)."""
    if not w.endswith("st"):
        return []
    pairs = []
    if w.endswith("iest"):
        pairs.append((w[:-4] + "y", w[:-4] + "ier"))
    if w.endswith("est") and w[:-2].endswith("e") and w[:-2] in base:
        pairs.append((w[:-2], w[:-2] + "r"))
    elif w.endswith("est"):
        pairs.append((w[:-3], w[:-3] + "er"))
    return _found(base, (stem for stem, comp in pairs if comp in base))


# First match wins; the order only decides which rule a word is credited to in the audit.
INFLECTION_RULES: tuple[InflectionRule, ...] = (
    InflectionRule(
        "plural_or_s_verb",
        "-s, and -es after s/x/z/ch/sh/o, -ies from -y, -ves from -f/-fe (CARDS, BOXES, CRIES, ELVES)",
        _plural_stems,
    ),
    InflectionRule(
        "past_tense",
        "-ed, -d after e (BAKED), -ied from -y (CRIED), doubled consonant + ed (UPPED)",
        _past_stems,
    ),
    InflectionRule("ing_form", "-ing, e-drop (USING), -ying from -ie (DYING), doubled consonant", _ing_stems),
    InflectionRule(
        "comparative",
        "-er/-r/-ier/doubled+er on a stem whose superlative is also in the base vocabulary",
        _comparative_stems,
    ),
    InflectionRule(
        "superlative",
        "-est/-st/-iest on a stem whose comparative is also there",
        _superlative_stems,
    ),
)


def inflection_of(word: str, base: frozenset[str]) -> tuple[str, list[str]] | None:
    """(rule name, stems) of the first rule that makes lowercase `word` an inflection, else None."""
    for rule in INFLECTION_RULES:
        stems = rule.stems(word, base)
        if stems:
            return rule.name, stems
    return None


# ------------------------------------------------------------------------------------- reading
@dataclass
class _Source:
    words: set[str]  # every distinct entry (all shapes)
    files: dict[str, str]  # file name -> sha256 of its bytes
    encodings: dict[str, str]  # file name -> encoding it decoded with


def _read_levels(scowl_dir: Path, max_level: int) -> _Source:
    src = _Source(set(), {}, {})
    for category in CATEGORIES:
        for level in SCOWL_LEVELS:
            if level > max_level:
                continue
            path = scowl_dir / f"{category}.{level}"
            if not path.is_file():
                continue  # not every category has every level
            data = path.read_bytes()
            for enc in ENCODINGS:
                try:
                    text = data.decode(enc)
                    break
                except UnicodeDecodeError:
                    continue
            src.files[path.name] = hashlib.sha256(data).hexdigest()
            src.encodings[path.name] = enc
            src.words.update(line.strip() for line in text.splitlines() if line.strip())
    if not src.files:
        raise WordDataError(
            f"no SCOWL lists ({', '.join(CATEGORIES)}) in {scowl_dir}; install them with "
            "`apt-get install scowl` (Debian/Ubuntu) or pass scowl_dir"
        )
    return src


def _shape_reason(entry: str) -> str | None:
    """Why an entry is not a plain five-letter lowercase word (None when it is one).

    The first reason that applies, in this order, is the one counted in the provenance.
    """
    if "'" in entry:
        return "apostrophe (possessives and contractions)"
    if not entry.isascii():
        return "accented or other non-ASCII letters"
    if len(entry) != WORD_LENGTH:
        return f"not {WORD_LENGTH} characters long"
    if any(c.isupper() for c in entry):
        return "capitalised (proper names, acronyms)"
    if not WORD_RE.fullmatch(entry):
        return "other characters (digits, hyphens)"
    return None


def _shape_filter(entries: set[str]) -> tuple[set[str], dict[str, int]]:
    kept: set[str] = set()
    removed: dict[str, int] = {}
    for entry in entries:
        reason = _shape_reason(entry)
        if reason is None:
            kept.add(entry)
        else:
            removed[reason] = removed.get(reason, 0) + 1
    return kept, dict(sorted(removed.items()))


def scowl_version() -> str:
    """The installed Debian scowl package version (dpkg-query, else the packaged changelog)."""
    try:
        out = subprocess.run(
            ["dpkg-query", "-W", "-f=${Version}", SCOWL_PACKAGE],
            capture_output=True,
            text=True,
            check=True,
            timeout=30,
        ).stdout.strip()
        if out:
            return out
    except (OSError, subprocess.SubprocessError):
        pass
    changelog = SCOWL_DOC_DIR / "changelog.Debian.gz"
    if changelog.is_file():
        with gzip.open(changelog, "rt", encoding="utf-8") as fh:
            m = re.match(r"\S+ \(([^)]+)\)", fh.readline())
        if m:
            return m.group(1)
    return "unknown"


# ----------------------------------------------------------------------------------- the build
def _sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _write_words(path: Path, words: Sequence[str]) -> None:
    path.write_bytes("".join(w + "\n" for w in words).encode("ascii"))


def _entropy_table(allowed: Sequence[str], answers: Sequence[str]) -> dict[str, float]:
    ans = encode(answers)
    values: list[float] = []
    for start in range(0, len(allowed), ENTROPY_BLOCK):
        block = encode(allowed[start : start + ENTROPY_BLOCK])
        values.extend(entropies(pattern_matrix(block, ans)).tolist())
    return {w: round(float(h), ENTROPY_DECIMALS) for w, h in zip(allowed, values)}


def _entropy_json(table: dict[str, float]) -> str:
    # One "WORD": value per line, keys sorted: the layout the first data files used, diff-friendly.
    return json.dumps(table, indent=0, sort_keys=True) + "\n"


def top_openers(table: dict[str, float], n: int = TOP_OPENERS) -> list[tuple[str, float]]:
    """The n highest-entropy guesses (ties broken alphabetically)."""
    return sorted(table.items(), key=lambda kv: (-kv[1], kv[0]))[:n]


def _rel(path: Path) -> str:
    """A repository-relative path for provenance (never an absolute, possibly personal, path)."""
    try:
        return path.resolve().relative_to(config.REPO_ROOT).as_posix()
    except ValueError:
        return path.name


def _select_answers(
    candidates: set[str], base: frozenset[str], deny: Denylist, keep: dict[str, str]
) -> tuple[list[str], dict[str, Any]]:
    """Answers from the five-letter candidates: hashed denylist, inflection rules, plain denylist.

    Returns the sorted uppercase answers and the audit of every step (for PROVENANCE.json).
    """
    words = {w for w in candidates if word_hash(w) not in deny.hashes}
    n_hashed = len(candidates) - len(words)
    removed: dict[str, list[str]] = {rule.name: [] for rule in INFLECTION_RULES}
    kept: list[str] = []
    for word in sorted(words):
        hit = inflection_of(word, base)
        if hit is None:
            continue
        rule_name, stems = hit
        # A stem that is itself a hashed entry is never written out.
        shown = [s.upper() for s in stems if word_hash(s) not in deny.hashes] or ["(withheld)"]
        entry = f"{word.upper()}<{'|'.join(shown)}"
        if word.upper() in keep:
            kept.append(f"{entry} ({rule_name})")
        else:
            removed[rule_name].append(entry)
            words.discard(word)
    plain = sorted(w.upper() for w in words if w.upper() in deny.plain)
    answers = sorted(w.upper() for w in words if w.upper() not in deny.plain)
    audit = {
        "five_letter_candidates": len(candidates),
        "removed_hashed_denylist": n_hashed,
        "inflection_rules": [
            {
                "rule": rule.name,
                "description": rule.description,
                "removed": len(removed[rule.name]),
                "words": removed[rule.name],
            }
            for rule in INFLECTION_RULES
        ],
        "kept_by_headword_keeplist": kept,
        "removed_plain_denylist": {"count": len(plain), "words": plain},
        "count": len(answers),
    }
    return answers, audit


def _select_allowed(candidates: set[str], answers: list[str], deny: Denylist) -> tuple[list[str], dict]:
    """Allowed guesses: the candidates minus hashed entries, plus every answer (a superset)."""
    words = {w.upper() for w in candidates if word_hash(w) not in deny.hashes}
    allowed = sorted(words | set(answers))
    audit = {
        "five_letter_candidates": len(candidates),
        "removed_hashed_denylist": len(candidates) - len(words),
        "answers_added": len(allowed) - len(words),
        "count": len(allowed),
    }
    return allowed, audit


def _level_section(max_level: int, src: _Source, shape: dict[str, int]) -> dict:
    return {
        "max_level": max_level,
        "levels": [lv for lv in SCOWL_LEVELS if lv <= max_level],
        "distinct_entries_read": len(src.words),
        "removed_by_shape": shape,
    }


def _examples(entries: list[str]) -> list[str]:
    """A few entries spread across an alphabetical list (not just the A words)."""
    step = max(1, len(entries) // EXAMPLES_PER_RULE)
    return entries[::step][:EXAMPLES_PER_RULE]


def build(
    scowl_dir: Path = SCOWL_DIR,
    out_dir: Path = AGENT_DATA_DIR,
    *,
    denylist_path: Path = DENYLIST_PATH,
    keeplist_path: Path = KEEPLIST_PATH,
    copyright_path: Path = SCOWL_DOC_DIR / "copyright",
) -> dict:
    """Build the three word files, PROVENANCE.json and SCOWL-COPYRIGHT.txt into `out_dir`.

    Deterministic: the same SCOWL lists and reviewed lists give byte-identical files. Returns a
    summary (counts, top openers, per-rule removals with examples, timings in seconds).
    """
    t0 = time.perf_counter()
    scowl_dir, out_dir = Path(scowl_dir), Path(out_dir)
    deny = load_denylist(denylist_path)
    keep = load_keeplist(keeplist_path)
    if not copyright_path.is_file():
        raise WordDataError(f"SCOWL copyright notice not found at {copyright_path}; install `scowl` with apt-get")
    answer_src = _read_levels(scowl_dir, ANSWER_MAX_LEVEL)
    guess_src = _read_levels(scowl_dir, GUESS_MAX_LEVEL)
    base = frozenset(w for w in _read_levels(scowl_dir, BASE_MAX_LEVEL).words if re.fullmatch(r"[a-z]+", w))
    t_read = time.perf_counter()

    answer_candidates, answer_shape = _shape_filter(answer_src.words)
    answers, answer_audit = _select_answers(answer_candidates, base, deny, keep)
    guess_candidates, guess_shape = _shape_filter(guess_src.words)
    allowed, allowed_audit = _select_allowed(guess_candidates, answers, deny)
    t_filter = time.perf_counter()

    table = _entropy_table(allowed, answers)
    openers = top_openers(table)
    t_entropy = time.perf_counter()

    out_dir.mkdir(parents=True, exist_ok=True)
    _write_words(out_dir / ANSWERS_FILE, answers)
    _write_words(out_dir / ALLOWED_FILE, allowed)
    (out_dir / ENTROPY_FILE).write_bytes(_entropy_json(table).encode("ascii"))
    shutil.copyfile(copyright_path, out_dir / COPYRIGHT_FILE)

    kept_words = [e.split("<")[0] for e in answer_audit["kept_by_headword_keeplist"]]
    provenance: dict[str, Any] = {
        "generator": "mtrl_course.wordlists.build",
        "source": {
            "package": f"Debian {SCOWL_PACKAGE}",
            "version": scowl_version(),
            "categories": list(CATEGORIES),
            "files": dict(sorted(guess_src.files.items())),
            "encodings": dict(sorted(guess_src.encodings.items())),
            "copyright": f"{COPYRIGHT_FILE} is the package's copyright file, copied verbatim",
        },
        "reviewed_lists": {
            _rel(denylist_path): {
                "sha256": _sha256_file(denylist_path),
                "hashed_entries": len(deny.hashes),
                "plain_entries": len(deny.plain),
                "plain_entries_not_in_scowl_80": sorted(w for w in deny.plain if w.lower() not in guess_src.words),
            },
            _rel(keeplist_path): {
                "sha256": _sha256_file(keeplist_path),
                "entries": len(keep),
                "entries_no_rule_matched": sorted(set(keep) - set(kept_words)),
            },
        },
        "base_vocabulary": {
            "max_level": BASE_MAX_LEVEL,
            "words": len(base),
            "purpose": "inflection stems are looked up here (all lengths, lowercase entries)",
        },
        "answers": _level_section(ANSWER_MAX_LEVEL, answer_src, answer_shape) | answer_audit,
        "allowed_guesses": _level_section(GUESS_MAX_LEVEL, guess_src, guess_shape) | allowed_audit,
        "entropy": {
            "definition": "Shannon entropy (bits) of the feedback pattern of each allowed guess "
            "over a uniform prior on the answers",
            "decimals": ENTROPY_DECIMALS,
            "count": len(table),
            "top_openers": [[w, h] for w, h in openers],
        },
        "files": {
            name: {
                "sha256": _sha256_file(out_dir / name),
                "lines": (out_dir / name).read_bytes().count(b"\n"),
            }
            for name in GENERATED_FILES
        },
    }
    (out_dir / PROVENANCE_FILE).write_bytes(
        (json.dumps(provenance, indent=2, ensure_ascii=True) + "\n").encode("ascii")
    )
    t_end = time.perf_counter()

    rules = {
        r["rule"]: {"removed": r["removed"], "examples": _examples(r["words"])}
        for r in answer_audit["inflection_rules"]
    }
    plain = answer_audit["removed_plain_denylist"]
    return {
        "scowl_version": provenance["source"]["version"],
        "answers": len(answers),
        "allowed_guesses": len(allowed),
        "entropy_values": len(table),
        "top_openers": ", ".join(f"{w} {h:.3f}" for w, h in openers),
        "build_seconds": round(t_end - t0, 2),
        "out_dir": str(out_dir),
        "kept_headwords": ", ".join(kept_words),
        "rules": rules
        | {
            # Hashed entries are counted, never shown.
            "hashed_denylist": {"removed": answer_audit["removed_hashed_denylist"], "examples": []},
            "plain_denylist": {"removed": plain["count"], "examples": _examples(plain["words"])},
        },
        "timings": {
            "read_s": round(t_read - t0, 3),
            "filter_s": round(t_filter - t_read, 3),
            "entropy_s": round(t_entropy - t_filter, 3),
            "write_s": round(t_end - t_entropy, 3),
        },
    }


# ---------------------------------------------------------------------------------- verification
def _read_word_file(path: Path, problems: list[str]) -> list[str]:
    raw = path.read_bytes()
    if raw and not raw.endswith(b"\n"):
        problems.append(f"{path.name}: last line has no trailing newline")
    try:
        text = raw.decode("ascii")
    except UnicodeDecodeError:
        problems.append(f"{path.name}: not plain ASCII")
        return []
    words = text.splitlines()
    bad = [(i, w) for i, w in enumerate(words, start=1) if not UPPER_WORD_RE.fullmatch(w)]
    for i, w in bad[:MAX_REPORTED]:
        problems.append(f"{path.name}:{i}: {w!r} is not {WORD_LENGTH} uppercase letters A-Z")
    if words != sorted(set(words)):
        dupes = sorted(w for w, n in Counter(words).items() if n > 1)[:MAX_REPORTED]
        detail = f" (duplicates: {', '.join(dupes)})" if dupes else ""
        problems.append(f"{path.name}: not sorted and unique{detail}")
    return words


def _valid_bits(value: object) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return math.isfinite(value) and 0.0 <= value <= MAX_ENTROPY_BITS + 1e-9


def verify(data_dir: Path = AGENT_DATA_DIR, denylist_path: Path = DENYLIST_PATH) -> list[str]:
    """Check the committed word data; returns a list of problems (empty when everything holds).

    Needs no SCOWL: it checks the files against PROVENANCE.json (checksums, counts), their shape
    (sorted, unique, five letters A-Z), answers within allowed guesses, one finite entropy in
    [0, log2 243] per allowed guess and nothing else, and the denylist (no hashed entry in either
    list, no plain entry among the answers).
    """
    data_dir = Path(data_dir)
    problems: list[str] = []
    missing = [n for n in (*GENERATED_FILES, PROVENANCE_FILE) if not (data_dir / n).is_file()]
    if missing:
        return [f"missing file {data_dir / n} (regenerate: `mtrl words build`)" for n in missing]

    try:
        provenance = json.loads((data_dir / PROVENANCE_FILE).read_text(encoding="ascii"))
        recorded = provenance["files"]
        if not isinstance(recorded, dict):
            raise TypeError("'files' is not an object")
    except (ValueError, KeyError, TypeError) as exc:
        return [f"{PROVENANCE_FILE}: unreadable or without a 'files' section ({exc})"]
    for name in GENERATED_FILES:
        entry = recorded.get(name, {})
        digest = _sha256_file(data_dir / name)
        if entry.get("sha256") != digest:
            problems.append(
                f"{name}: SHA-256 {digest[:12]}... does not match PROVENANCE.json ({str(entry.get('sha256'))[:12]}...)"
            )
        lines = (data_dir / name).read_bytes().count(b"\n")
        if entry.get("lines") != lines:
            problems.append(f"{name}: {lines} lines, PROVENANCE.json records {entry.get('lines')}")

    answers = _read_word_file(data_dir / ANSWERS_FILE, problems)
    allowed = _read_word_file(data_dir / ALLOWED_FILE, problems)
    allowed_set = set(allowed)
    for key, words in (("answers", answers), ("allowed_guesses", allowed)):
        count = provenance.get(key, {}).get("count")
        if count != len(words):
            problems.append(f"{key}: {len(words)} words, PROVENANCE.json records {count}")
    strays = [w for w in answers if w not in allowed_set]
    if strays:
        problems.append(f"answers not in allowed guesses: {', '.join(strays[:MAX_REPORTED])}")

    try:
        table = json.loads((data_dir / ENTROPY_FILE).read_text(encoding="ascii"))
    except ValueError as exc:
        problems.append(f"{ENTROPY_FILE}: not valid JSON ({exc})")
        table = {}
    if not isinstance(table, dict):
        problems.append(f"{ENTROPY_FILE}: expected an object of word -> bits")
        table = {}
    extra, absent = sorted(set(table) - allowed_set), sorted(allowed_set - set(table))
    if extra:
        listed = ", ".join(extra[:MAX_REPORTED])
        problems.append(f"{ENTROPY_FILE}: words that are not allowed guesses: {listed}")
    if absent:
        listed = ", ".join(absent[:MAX_REPORTED])
        problems.append(f"{ENTROPY_FILE}: allowed guesses without entropy: {listed}")
    out_of_range = [
        f"{ENTROPY_FILE}: {word} has entropy {value!r}, outside [0, {MAX_ENTROPY_BITS:.4f}]"
        for word, value in table.items()
        if not _valid_bits(value)
    ]
    problems += out_of_range[:MAX_REPORTED]

    try:
        deny = load_denylist(denylist_path)
    except WordDataError as exc:
        problems.append(f"denylist: {exc}")
        return problems
    # Report positions, not words: a hashed entry must not be spelled even in an error message.
    for name, words in ((ANSWERS_FILE, answers), (ALLOWED_FILE, allowed)):
        for i, word in enumerate(words, start=1):
            if word_hash(word) in deny.hashes:
                problems.append(f"{name}:{i}: this line is a hashed denylist entry")
    for word in answers:
        if word in deny.plain:
            problems.append(f"{ANSWERS_FILE}: {word} is on the denylist ({deny.plain[word]})")
    return problems


# ------------------------------------------------------------------------------------------ CLI
def format_summary(summary: dict) -> str:
    """A reviewer-readable report of a build summary: counts, openers, per-rule removals."""
    lines = [
        f"SCOWL {summary['scowl_version']}: {summary['answers']} answers, "
        f"{summary['allowed_guesses']} allowed guesses, built in {summary['build_seconds']} s",
        f"top openers: {summary['top_openers']}",
    ]
    lines.append("removed from the answers:")
    for name, info in summary["rules"].items():
        lines.append(f"  {name:<18} {info['removed']:>5}  {', '.join(info['examples'])}")
    lines.append(f"kept by the headword keep-list: {summary['kept_headwords']}")
    lines.append(f"wrote {summary['out_dir']} (full audit in {PROVENANCE_FILE})")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mtrl_course.wordlists", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p_build = sub.add_parser("build", help="regenerate the word data from Debian's scowl lists")
    p_build.add_argument("--scowl-dir", type=Path, default=SCOWL_DIR)
    p_build.add_argument("--out-dir", type=Path, default=AGENT_DATA_DIR)
    p_verify = sub.add_parser("verify", help="check the committed word data (no SCOWL needed)")
    p_verify.add_argument("--data-dir", type=Path, default=AGENT_DATA_DIR)
    p_hash = sub.add_parser(
        "hash",
        help="print the denylist line for each word (reads stdin when no word is given, "
        "so the word stays out of your shell history)",
    )
    p_hash.add_argument("words", nargs="*")
    args = parser.parse_args(argv)

    if args.command == "build":
        print(format_summary(build(args.scowl_dir, args.out_dir)))
        return 0
    if args.command == "verify":
        problems = verify(args.data_dir)
        for p in problems:
            print(f"- {p}")
        print("word data: " + ("OK" if not problems else f"{len(problems)} problem(s)"))
        return 1 if problems else 0
    words = args.words or [line for line in sys.stdin.read().split() if line]
    try:
        for word in words:
            print(f"{denylist_line(word)}  {HASHED_REASON}")
    except WordDataError as exc:
        print(exc, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
