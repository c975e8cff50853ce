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
"""

from __future__ import annotations

import argparse
import copy
import json
from pathlib import Path
from typing import Any

from mtrl_course import config
from mtrl_course.curriculum import catalog, nbfilter
from mtrl_course.curriculum.executor import BANNER_TAG, HASH_KEY

STUDENT_DIR = config.REPO_ROOT / "student"
NOTE_TAG = "student-note"


def note_markdown(nn: str) -> str:
    return (
        f"> **Student copy:** the outputs are cleared; run the cells in order to produce them. "
        f"Generated from `notebooks/{catalog.get(nn).filename}` by `make student`, which overwrites "
        f"this folder: save your own work under another name."
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


def write(out_dir: Path = STUDENT_DIR) -> list[Path]:
    """Write the student copy of every catalog notebook that exists; remove stale copies. Returns the files."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for entry in catalog.NOTEBOOKS:
        if not entry.path.is_file():
            continue
        nb = json.loads(entry.path.read_text(encoding="utf-8"))
        target = out_dir / entry.filename
        target.write_text(nbfilter.dumps(student_copy(nb, entry.nn)), encoding="utf-8")
        written.append(target)
    for stale in set(out_dir.glob("*.ipynb")) - set(written):
        stale.unlink()
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m mtrl_course.curriculum.student", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--out", type=Path, default=STUDENT_DIR, help=f"output folder (default: {STUDENT_DIR})")
    args = parser.parse_args(argv)
    written = write(args.out)
    print(f"student: {len(written)} output-free notebooks in {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
