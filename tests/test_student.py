"""`make student`: output-free copies of every notebook, generated in sync with notebooks/, and
never over a copy the learner changed."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from mtrl_course import config
from mtrl_course.curriculum import catalog, executor, student


@pytest.fixture(scope="module")
def copies(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    return student.write(tmp_path_factory.mktemp("student")).copies


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
    # A copy make student wrote for a notebook the course no longer has goes; a file of the
    # learner's own stays.
    withdrawn = out / "42_withdrawn.ipynb"
    shutil.copyfile(copies[0], withdrawn)
    record = json.loads((out / student.RECORD_NAME).read_text())
    (out / student.RECORD_NAME).write_text(json.dumps({**record, withdrawn.name: record[copies[0].name]}))
    (out / "43_my_notes.ipynb").write_text("{}")
    done = student.write(out)
    assert done.removed == [withdrawn] and done.kept == [out / "43_my_notes.ipynb"] and done.replaced == []
    assert {p.name: p.read_bytes() for p in out.glob("*.ipynb")} == {**before, "43_my_notes.ipynb": b"{}"}


def _edit(path: Path) -> bytes:
    """What a learner does in JupyterLab: change a cell, run it, save (JupyterLab's own formatting)."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    code = next(cell for cell in nb["cells"] if cell["cell_type"] == "code")
    code["source"] = "# my own experiment\n" + "".join(code["source"])
    code["outputs"] = [{"output_type": "stream", "name": "stdout", "text": "mine\n"}]
    code["execution_count"] = 1
    path.write_text(json.dumps(nb, indent=2), encoding="utf-8")
    return path.read_bytes()


def test_make_student_twice_keeps_an_edited_copy(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert student.main(["--out", str(tmp_path)]) == 0
    edited = _edit(tmp_path / catalog.get("04").filename)
    untouched = (tmp_path / catalog.get("05").filename).read_bytes()
    capsys.readouterr()
    assert student.main(["--out", str(tmp_path)]) == 0
    said = capsys.readouterr().out
    assert (tmp_path / catalog.get("04").filename).read_bytes() == edited
    assert (tmp_path / catalog.get("05").filename).read_bytes() == untouched
    assert f"kept {catalog.get('04').filename}: changed since make student wrote it" in said, said
    assert "FORCE=1" in said and "1 kept)" in said, said
    # And again: still kept (the record still holds what make student wrote, not the edit).
    assert (tmp_path / catalog.get("04").filename) in student.write(tmp_path).kept
    # --force (make student FORCE=1) replaces it.
    done = student.write(tmp_path, force=True)
    assert done.kept == [] and (tmp_path / catalog.get("04").filename) in done.replaced
    assert "my own experiment" not in (tmp_path / catalog.get("04").filename).read_text()


def test_an_unchanged_copy_follows_its_notebook(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    student.write(tmp_path)
    # Opened and saved in JupyterLab without a change: another formatting and metadata, same cells.
    saved = tmp_path / catalog.get("05").filename
    nb = json.loads(saved.read_text(encoding="utf-8"))
    nb["metadata"]["widgets"] = {}
    saved.write_text(json.dumps(nb, indent=2), encoding="utf-8")
    edited = _edit(tmp_path / catalog.get("04").filename)
    # A pull changes the notebooks (here: the note every copy carries).
    monkeypatch.setattr(student, "note_markdown", lambda nn: f"> a newer note for {nn}")
    done = student.write(tmp_path)
    assert done.kept == [tmp_path / catalog.get("04").filename]
    assert saved in done.replaced and "a newer note for 05" in saved.read_text(encoding="utf-8")
    assert (tmp_path / catalog.get("04").filename).read_bytes() == edited


def test_a_copy_without_a_record_is_kept(tmp_path: Path) -> None:
    # Copies written before make student kept its record, or put there by hand: never replaced.
    student.write(tmp_path)
    (tmp_path / student.RECORD_NAME).unlink()
    _edit(tmp_path / catalog.get("04").filename)
    done = student.write(tmp_path)
    assert done.kept == [tmp_path / catalog.get("04").filename]
    assert len(done.current) == len(done.copies) - 1  # the others are already what it would write


def test_make_student_force_passes_force() -> None:
    make = shutil.which("make")
    if make is None:
        pytest.skip("make is not installed")

    def planned(*args: str) -> str:
        ran = subprocess.run(
            [make, "--no-print-directory", "-n", "-C", str(config.REPO_ROOT), "student", f"VENV={sys.prefix}", *args],
            capture_output=True,
            text=True,
            timeout=60,
        )
        return ran.stdout.strip().splitlines()[-1]

    assert planned().endswith("mtrl_course.curriculum.student")
    assert planned("FORCE=1").endswith("mtrl_course.curriculum.student --force")


def test_student_copy_leaves_the_original_alone() -> None:
    entry = next(e for e in catalog.NOTEBOOKS if e.path.is_file())
    nb = json.loads(entry.path.read_text(encoding="utf-8"))
    snapshot = json.dumps(nb, sort_keys=True)
    student.student_copy(nb, entry.nn)
    assert json.dumps(nb, sort_keys=True) == snapshot
