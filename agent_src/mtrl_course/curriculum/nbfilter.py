"""Git clean filter for the notebooks: metadata only, outputs stay.

Opening a notebook in JupyterLab changes it on disk without anyone editing a cell: the kernel's
`language_info` carries the interpreter's exact version, choosing another kernel (a conda
environment registered as "mtrl-wordle") rewrites `kernelspec`, and JupyterLab or other editors
add cell metadata (`execution` timings, `collapsed`, `scrolled`, Studio's instance list). Saved and
committed, that churn fails the hygiene test and turns every `git pull` into a conflict.

`.gitattributes` routes `notebooks/*.ipynb` and the lesson template (`templates/*.ipynb`) through
this filter and `make venv` registers it in the clone's git config (`filter.mtrl-notebook.clean`),
so git stores, diffs and compares every
notebook as if that metadata were absent: a notebook that was only opened, run and saved shows no
change in `git status`, and a pull goes through.

What it deliberately does not do, unlike nbstripout's defaults: clear outputs or execution counts
(nbval compares the stored outputs, and skips cells without a count), or re-stamp the source
hashes in `metadata.mtrl` (the hygiene test uses them to notice a cell edited after its outputs
were stored; re-stamping on commit would hide exactly that). `executor.normalise()` is the full
normaliser `mtrl notebooks run` applies; this is its metadata part, safe for any edit.

Usage as a filter: `python -m mtrl_course.curriculum.nbfilter < in.ipynb > out.ipynb`. Input that
is not a notebook (a file with merge-conflict markers, for instance) passes through unchanged,
so the filter never blocks git.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from mtrl_course.curriculum.executor import (
    CELL_METADATA_KEYS,
    HASH_KEY,
    KERNELSPEC,
    LANGUAGE_INFO_KEYS,
)

FILTER_NAME = "mtrl-notebook"
# Where the filter applies: the course notebooks and the lesson template (as in .gitattributes),
# not a learner's own files.
COURSE_FOLDERS = ("notebooks/", "templates/")


def clean_metadata(nb: dict[str, Any]) -> dict[str, Any]:
    """`nb` (the notebook's JSON as a dict) with volatile metadata removed, in place; returns it."""
    language = nb.get("metadata", {}).get("language_info", {"name": "python"})
    nb["metadata"] = {
        "kernelspec": dict(KERNELSPEC),
        "language_info": {k: v for k, v in language.items() if k in LANGUAGE_INFO_KEYS},
    }
    for cell in nb.get("cells", []):
        metadata = {k: v for k, v in cell.get("metadata", {}).items() if k in CELL_METADATA_KEYS}
        if not metadata.get("tags"):
            metadata.pop("tags", None)
        if cell.get("cell_type") != "code":
            metadata.pop(HASH_KEY, None)
        cell["metadata"] = metadata
        for output in cell.get("outputs", []):
            output.pop("transient", None)
    return nb


def dumps(nb: dict[str, Any]) -> str:
    """The notebook as nbformat (and so the Jupyter server and `mtrl notebooks run`) writes it."""
    return json.dumps(nb, sort_keys=True, indent=1, ensure_ascii=False) + "\n"


def clean_text(text: str) -> str:
    """The filtered text of a notebook file; anything that is not a notebook comes back unchanged."""
    try:
        nb = json.loads(text)
    except ValueError:
        return text
    if not isinstance(nb, dict) or "cells" not in nb or "nbformat" not in nb:
        return text
    return dumps(clean_metadata(nb))


def pre_save_hook(model: dict[str, Any], path: str, **_: Any) -> None:
    """JupyterLab's pre-save hook (`make lab` installs it): course notebooks reach the disk clean.

    The git filter alone leaves the working file different in size, and git then lists it as
    modified (with an empty diff) until it is added; cleaning before the server writes the file
    means a notebook that was only opened, run and saved is byte-identical to the committed one.
    """
    if (
        model.get("type") == "notebook"
        and path.lstrip("/").startswith(COURSE_FOLDERS)
        and isinstance(model.get("content"), dict)
    ):
        clean_metadata(model["content"])


def main() -> int:
    data = sys.stdin.buffer.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        sys.stdout.buffer.write(data)  # not a notebook we wrote; pass it through
        return 0
    sys.stdout.buffer.write(clean_text(text).encode("utf-8"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
