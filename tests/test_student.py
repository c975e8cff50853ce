"""`make student`: output-free copies of every notebook, generated in sync with notebooks/."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
from mtrl_course.curriculum import catalog, executor, student


@pytest.fixture(scope="module")
def copies(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    return student.write(tmp_path_factory.mktemp("student"))


def test_one_copy_per_existing_catalog_notebook(copies: list[Path]) -> None:
    assert [p.name for p in copies] == [e.filename for e in catalog.NOTEBOOKS if e.path.is_file()]


def test_copies_have_every_source_and_no_output(copies: list[Path]) -> None:
    for path in copies:
        original = nbformat.read(catalog.get(path.name[:2]).path, as_version=4)
        copy = nbformat.read(path, as_version=4)
        nbformat.validate(copy)
        note = [c for c in copy.cells if student.NOTE_TAG in executor.tags(c)]
        assert len(note) == 1 and copy.cells.index(note[0]) == 1, path.name
        kept = [c for c in copy.cells if c is not note[0]]
        assert [(c.cell_type, c.source, executor.tags(c)) for c in kept] == [
            (c.cell_type, c.source, executor.tags(c)) for c in original.cells
        ], path.name
        code = [c for c in copy.cells if c.cell_type == "code"]
        assert code and all(c.outputs == [] and c.execution_count is None for c in code), path.name
        assert not any(executor.HASH_KEY in c.metadata for c in copy.cells)
        assert copy.metadata.kernelspec == executor.KERNELSPEC


def test_regenerating_is_byte_identical_and_removes_stale_copies(copies: list[Path]) -> None:
    out = copies[0].parent
    before = {p.name: p.read_bytes() for p in copies}
    (out / "42_withdrawn.ipynb").write_text("{}")
    student.write(out)
    assert {p.name: p.read_bytes() for p in out.glob("*.ipynb")} == before


def test_student_copy_leaves_the_original_alone() -> None:
    entry = next(e for e in catalog.NOTEBOOKS if e.path.is_file())
    nb = json.loads(entry.path.read_text(encoding="utf-8"))
    snapshot = json.dumps(nb, sort_keys=True)
    student.student_copy(nb, entry.nn)
    assert json.dumps(nb, sort_keys=True) == snapshot
