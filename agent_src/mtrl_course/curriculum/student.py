"""Output-free student copies of the notebooks (`make student`), for labs where learners run every cell.

The copies are generated, not committed: `student/` is git-ignored and `make student` rewrites it
from `notebooks/` in a second. Committing them would double every notebook diff and let the two
drift whenever a branch re-ran a notebook without regenerating; generating them means they are in
sync by construction, and tests/test_student.py checks the generator.

Why `student/` beside `notebooks/` and not inside it: the relative links in the notebooks
(`../README.md`, `05_launch_training.ipynb`) keep working from a sibling folder, the bootstrap
cell imports the installed toolkit (which finds the checkout from any folder inside it:
`config.find_repo_root`), and pytest's nbval run over `notebooks/`
(and the hygiene tests' `notebooks/*.ipynb`) never picks the copies up.

A copy keeps every cell's source and tags and drops outputs, execution counts and the source
hashes (which vouch for stored outputs a copy does not have). One markdown cell after the banner
says what the copy is.

A copy the learner changed is never replaced (issue 39: running `make student` again silently
replaced an edited `student/04_dataset.ipynb`). `student/.make-student.json` records, for each
copy, a fingerprint of what `make student` last wrote there: the cells' types, sources, outputs
and execution counts, not the metadata or the file's formatting, which JupyterLab rewrites on a
save without anyone changing a cell. A copy whose content still has that fingerprint is replaced
by a fresh one (a pull may have changed its notebook); one with any other content, or with no
record (a copy written before the record existed, or a file the learner put there), is kept and
named. `--force` (`make student FORCE=1`) replaces every copy, changed or not.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mtrl_course import config
from mtrl_course.curriculum import catalog, nbfilter
from mtrl_course.curriculum.executor import BANNER_TAG, HASH_KEY

STUDENT_DIR = config.REPO_ROOT / "student"
NOTE_TAG = "student-note"
# Beside the copies: {file name: fingerprint of what make student last wrote there}.
RECORD_NAME = ".make-student.json"


def note_markdown(nn: str) -> str:
    return (
        f"> **Student copy:** the outputs are cleared; run the cells in order to produce them. "
        f"Generated from `notebooks/{catalog.get(nn).filename}` by `make student`, which never "
        f"replaces a copy you changed (`make student FORCE=1` does)."
    )


def student_copy(nb: dict[str, Any], nn: str) -> dict[str, Any]:
    """A copy of notebook `nn` (its JSON) without outputs, counts or source hashes."""
    out = copy.deepcopy(nb)
    for cell in out["cells"]:
        if cell["cell_type"] == "code":
            cell["outputs"] = []
            cell["execution_count"] = None
            cell.get("metadata", {}).pop(HASH_KEY, None)
    note: dict[str, Any] = {"cell_type": "markdown", "metadata": {"tags": [NOTE_TAG]}, "source": note_markdown(nn)}
    if out.get("nbformat_minor", 0) >= 5:
        note["id"] = NOTE_TAG
    position = 1 if out["cells"] and BANNER_TAG in out["cells"][0].get("metadata", {}).get("tags", []) else 0
    out["cells"].insert(position, note)
    return nbfilter.clean_metadata(out)


def fingerprint(nb: dict[str, Any]) -> str:
    """What a learner can change in a notebook: each cell's type, source, outputs and count."""

    def text(source: Any) -> str:
        return "".join(source) if isinstance(source, list) else str(source)

    cells = [
        [cell.get("cell_type"), text(cell.get("source", "")), cell.get("outputs"), cell.get("execution_count")]
        for cell in nb.get("cells", [])
    ]
    return hashlib.sha256(json.dumps(cells, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()


def _file_fingerprint(path: Path) -> str | None:
    """The fingerprint of the notebook at `path`, or None if it is not one (then it is the learner's)."""
    try:
        nb = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    return fingerprint(nb) if isinstance(nb, dict) else None


@dataclass
class Written:
    """What one `make student` did: `copies` is every catalog notebook's copy, in catalog order."""

    copies: list[Path] = field(default_factory=list)
    replaced: list[Path] = field(default_factory=list)  # written (new, or the notebook changed)
    current: list[Path] = field(default_factory=list)  # already the fresh copy: left as they are
    kept: list[Path] = field(default_factory=list)  # changed by the learner: left as they are
    removed: list[Path] = field(default_factory=list)  # copies of notebooks no longer in the course
    recorded: set[str] = field(default_factory=set)  # the file names make student had a record of


def write(out_dir: Path = STUDENT_DIR, *, force: bool = False) -> Written:
    """Write the student copy of every catalog notebook that exists, never over a changed copy.

    A copy is replaced when it is missing, when its content is what make student last wrote (its
    fingerprint matches the record), or with `force`; otherwise it is kept. Copies of notebooks no
    longer in the catalog are removed on the same terms.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    record_file = out_dir / RECORD_NAME
    try:
        record: dict[str, str] = json.loads(record_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        record = {}
    done = Written(recorded=set(record))

    def ours(path: Path) -> bool:
        return force or (path.name in record and _file_fingerprint(path) == record[path.name])

    for entry in catalog.NOTEBOOKS:
        if not entry.path.is_file():
            continue
        fresh = student_copy(json.loads(entry.path.read_text(encoding="utf-8")), entry.nn)
        target = out_dir / entry.filename
        done.copies.append(target)
        if target.exists() and _file_fingerprint(target) == fingerprint(fresh):
            record[target.name] = fingerprint(fresh)
            done.current.append(target)
        elif not target.exists() or ours(target):
            target.write_text(nbfilter.dumps(fresh), encoding="utf-8")
            record[target.name] = fingerprint(fresh)
            done.replaced.append(target)
        else:
            done.kept.append(target)
    for stale in sorted(set(out_dir.glob("*.ipynb")) - set(done.copies)):
        if ours(stale):
            stale.unlink()
            record.pop(stale.name, None)
            done.removed.append(stale)
        else:
            done.kept.append(stale)
    record_file.write_text(json.dumps(record, sort_keys=True, indent=1) + "\n", encoding="utf-8")
    return done


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m mtrl_course.curriculum.student", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--out", type=Path, default=STUDENT_DIR, help=f"output folder (default: {STUDENT_DIR})")
    parser.add_argument(
        "--force", action="store_true", help="replace every copy, also those you changed (make student FORCE=1)"
    )
    args = parser.parse_args(argv)
    done = write(args.out, force=args.force)
    print(
        f"student: {len(done.copies)} output-free notebooks in {args.out} "
        f"({len(done.replaced)} written, {len(done.current)} already current, {len(done.kept)} kept)"
    )
    for path in done.kept:
        why = "changed since make student wrote it" if path.name in done.recorded else "not written by make student"
        print(f"student: kept {path.name}: {why} (make student FORCE=1 replaces it; save your work elsewhere first)")
    for path in done.removed:
        print(f"student: removed {path.name}: its notebook is no longer in the course")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
