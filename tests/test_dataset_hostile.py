"""The validator under hostile input: it reports, it never raises, and it stays bounded.

Each case here raised, printed unboundedly or passed silently before the validator streamed
its input (issue 12): deep nesting, a number over the digit limit, a lone surrogate, duplicate
keys, a one-line JSON array in a .jsonl file, a huge line, and problem lists in the millions.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mtrl_course import dataset
from mtrl_course.dataset import (
    encode_task,
    export,
    make_splits,
    validate_file,
    write_jsonl,
)

DEEP = 100_000  # far past any recursion limit
DIGITS = sys.get_int_max_str_digits() + 1 if sys.get_int_max_str_digits() else 5_000


@pytest.fixture(scope="module")
def rows() -> list[dict]:
    return make_splits(n_train=5, n_val=1)[0]


def write_lines(tmp_path: Path, lines: list[str], name: str = "d.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def one(problems, line: int | None) -> str:
    assert len(problems) == 1, [str(p) for p in problems]
    assert problems[0].line == line
    text = str(problems[0])
    text.encode("ascii")  # printable anywhere: no surrogates, no raw control characters
    return problems[0].message


def task_row(**task) -> str:
    return json.dumps({"prompt": json.dumps(task)})


# ------------------------------------------------------------------------ values that raised
def test_deep_nesting_in_a_row_is_reported(tmp_path, rows):
    bad = '{"prompt": ' + "[" * DEEP + "]" * DEEP + "}"
    path = write_lines(tmp_path, [json.dumps(rows[0]), bad])
    assert "nested too deeply" in one(validate_file(path), 2)


def test_deep_nesting_inside_the_task_string_is_reported(tmp_path):
    path = write_lines(tmp_path, [json.dumps({"prompt": "[" * DEEP + "]" * DEEP})])
    assert "nested too deeply" in one(validate_file(path), 1)


def test_a_number_over_the_digit_limit_is_reported(tmp_path):
    path = write_lines(tmp_path, ['{"prompt": "x", "n": ' + "7" * DIGITS + "}"])
    assert "digits" in one(validate_file(path), 1)


def test_a_number_over_the_digit_limit_inside_the_task_is_reported(tmp_path):
    task = '{"prompt": "Guess", "answer": "beach", "id": ' + "7" * DIGITS + "}"
    path = write_lines(tmp_path, [json.dumps({"prompt": task})])
    assert "digits" in one(validate_file(path), 1)


def test_a_lone_surrogate_in_an_answer_prints(tmp_path):
    path = write_lines(tmp_path, [task_row(prompt="Guess", answer="\ud800abcd", id="t1")])
    message = one(validate_file(path), 1)
    assert "\\ud800" in message and "letters a-z" in message


def test_control_characters_are_escaped_in_messages(tmp_path):
    path = write_lines(tmp_path, [task_row(prompt="Guess", answer="\x1b[2J!", id="t1")])
    message = one(validate_file(path), 1)
    assert "\x1b" not in message and "\\u001b" in message


def test_a_huge_value_is_cut_in_the_message(tmp_path):
    path = write_lines(tmp_path, [task_row(prompt="Guess", answer="x" * 50_000, id="t1")])
    message = one(validate_file(path), 1)
    assert len(message) < 200 and "50000 characters" in message


# ---------------------------------------------------------------- things that passed silently
def test_duplicate_keys_in_a_row_are_reported(tmp_path, rows):
    line = json.dumps(rows[0])[:-1] + ', "prompt": ' + json.dumps(rows[1]["prompt"]) + "}"
    path = write_lines(tmp_path, [line])
    assert 'repeats the key "prompt"' in one(validate_file(path), 1)


def test_duplicate_keys_in_the_task_are_reported(tmp_path):
    task = '{"prompt": "Guess", "answer": "zzzzz", "answer": "beach", "id": "t1"}'
    path = write_lines(tmp_path, [json.dumps({"prompt": task})])
    assert 'the task object repeats the key "answer"' in one(validate_file(path), 1)


def test_duplicate_keys_in_a_json_array_row_are_reported(tmp_path, rows):
    row = json.dumps(rows[0])[:-1] + ', "prompt": ' + json.dumps(rows[1]["prompt"]) + "}"
    path = tmp_path / "d.json"
    path.write_text("[" + row + "]")
    problems = validate_file(path)
    assert (problems[0].line, problems[0].unit) == (1, "row") and "repeats the key" in problems[0].message


def test_duplicate_csv_column_names_are_reported(tmp_path, rows):
    path = tmp_path / "d.csv"
    path.write_text(
        "prompt,prompt\n" + "".join(f'"x",{json.dumps(r["prompt"]).replace(chr(34) * 1, chr(34) * 2)}\n' for r in rows)
    )
    assert "the header repeats" in str(validate_file(path)[0])


def test_a_one_line_json_array_in_jsonl_gets_a_hint(tmp_path, rows):
    path = write_lines(tmp_path, [json.dumps(rows)])
    assert "name the file .json" in one(validate_file(path), 1)


def test_a_huge_one_line_array_in_jsonl_is_skipped_not_loaded(tmp_path, rows):
    big = json.dumps(rows * (dataset.MAX_RECORD_BYTES // len(json.dumps(rows)) + 1))
    path = write_lines(tmp_path, [big, json.dumps(rows[0])])
    message = one(validate_file(path), 1)
    assert "over the limit" in message and "name the file .json" in message


def test_a_row_in_a_json_array_over_the_cap_stops_the_reader(tmp_path, rows):
    path = tmp_path / "d.json"
    path.write_text("[" + json.dumps(rows[0]) + ', {"prompt": "' + "x" * (dataset.MAX_RECORD_BYTES + 10) + '"}]')
    assert "over the limit" in one(validate_file(path), 1)


def test_a_huge_csv_field_is_reported(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("prompt\n" + '"' + "x" * 200_000 + '"\n')
    assert "not valid CSV" in one(validate_file(path), 2)


# ---------------------------------------------------------------------------- bounded output
def test_problems_are_capped_and_counted(tmp_path):
    path = write_lines(tmp_path, ["x"] * 50)
    problems = validate_file(path, max_problems=7)
    assert [p.line for p in problems] == [1, 2, 3, 4, 5, 6, 7]
    assert (problems.total, problems.omitted) == (50, 43)


def test_the_cap_keeps_the_earliest_problems_even_when_found_late(tmp_path, rows):
    # The batch-size problem (file-wide) is found last but sorts first.
    path = write_lines(tmp_path, ['{"prompt": "x"}'] * 10)
    problems = validate_file(path, batch_size=128, max_problems=3)
    assert [p.line for p in problems] == [None, 1, 2] and problems.total == 11


def test_pair_totals_add_up(tmp_path):
    train = write_lines(tmp_path, ["x"] * 4, "t.jsonl")
    val = write_lines(tmp_path, ["y"] * 6, "v.jsonl")
    problems = dataset.validate_pair(train, val, max_problems=2)
    assert len(problems) == 4 and problems.total == 10


def test_dataset_error_counts_every_problem(tmp_path):
    path = write_lines(tmp_path, ["x"] * 30)
    with pytest.raises(dataset.DatasetError, match=r"^30 dataset problems") as info:
        dataset.check_or_raise(path)
    assert "... and 10 more" in str(info.value)


# ------------------------------------------------------------------- the streaming JSON reader
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(chunk=st.integers(min_value=1, max_value=97), indent=st.sampled_from([None, 0, 2]))
def test_the_streaming_array_reader_matches_json_loads_at_any_chunk_size(tmp_path, monkeypatch, chunk, indent):
    monkeypatch.setattr(dataset, "READ_CHUNK_BYTES", chunk)
    rows = [{"prompt": encode_task(w, f"id{i}")} for i, w in enumerate(["beach", "crane", "\u00e9clat"])]
    rows.append({"prompt": "x", "n": 12345678901234567890, "f": 1.5e-7, "t": True, "z": None})
    path = tmp_path / "d.json"
    path.write_text(json.dumps(rows, indent=indent, ensure_ascii=False), encoding="utf-8")
    table, records = dataset._open(path)
    assert [row for _, row in records] == rows and table.problems.total == 0


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=400), suffix=st.sampled_from(["jsonl", "json", "csv"]))
def test_any_bytes_give_problems_never_an_exception(tmp_path, data, suffix):
    path = tmp_path / f"fuzz.{suffix}"
    path.write_bytes(data)
    for problem in validate_file(path, batch_size=1):
        str(problem).encode("utf-8")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(max_size=60))
def test_any_answer_text_gives_a_printable_problem(tmp_path, text):
    path = write_lines(tmp_path, [task_row(prompt="Guess", answer=text, id="t1")])
    for problem in validate_file(path):
        str(problem).encode("ascii")


def test_a_json_array_over_several_chunks_reports_the_physical_line(tmp_path, rows, monkeypatch):
    monkeypatch.setattr(dataset, "READ_CHUNK_BYTES", 16)
    path = tmp_path / "d.json"
    path.write_text("[\n" + ",\n".join(json.dumps(r) for r in rows) + ',\n{"prompt": }\n]\n')
    problems = validate_file(path)
    assert len(problems) == 1 and problems[0].line == 7 and "not valid JSON" in problems[0].message


def test_parquet_is_read_in_batches(tmp_path, rows, monkeypatch):
    monkeypatch.setattr(dataset, "PARQUET_BATCH_ROWS", 2)
    bad = list(rows) + [{"prompt": encode_task("zzzzq", "late")}]
    path = export(bad, tmp_path / "d.parquet")
    assert "not in the answer list" in one(validate_file(path), 6)


def test_a_directory_or_unreadable_file_is_a_problem(tmp_path, rows):
    (tmp_path / "dir.jsonl").mkdir()
    assert "not a regular file" in one(validate_file(tmp_path / "dir.jsonl"), None)
    long_name = tmp_path / ("x" * 300 + ".jsonl")
    assert "cannot be read" in one(validate_file(long_name), None)


def test_clean_files_still_pass(tmp_path, rows):
    assert validate_file(write_jsonl(rows, tmp_path / "ok.jsonl")) == []


@settings(max_examples=100, deadline=None)
@given(values=st.lists(st.text(max_size=8), max_size=3000))
def test_the_compact_first_line_table_agrees_with_a_dict(values):
    table, expected = dataset._FirstLines(capacity=4), {}
    for line, value in enumerate(values, start=1):
        assert table.setdefault(value, line) == expected.setdefault(value, line)
    assert len(table) == len(expected)
    assert all(table.get(value) == line for value, line in expected.items())
    assert table.get("\x00not-there\x00") is None or "\x00not-there\x00" in expected
