"""The dataset: splits, byte-stable files, the four export formats, and the validator.

Tests never name specific words: the word list is regenerated independently, so every word a
test needs comes from `ANSWERS` or from `make_splits` itself.
"""

from __future__ import annotations

import csv
import itertools
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mtrl_course import config, dataset
from mtrl_course.dataset import (
    DatasetError,
    DatasetProblem,
    check_or_raise,
    encode_task,
    export,
    make_dataset,
    make_splits,
    read_rows,
    validate_file,
    validate_pair,
    validate_rows,
    write_jsonl,
)
from wordle_agent.words import ANSWERS


def inner(row: dict) -> dict:
    return json.loads(row["prompt"])


def answers_of(rows: list[dict]) -> list[str]:
    return [inner(row)["answer"] for row in rows]


def not_an_answer() -> str:
    """A five-letter string of letters that is not in the answer list."""
    candidates = ("".join(letters) for letters in itertools.product("ZQXJ", repeat=5))
    return next(w for w in candidates if w not in set(ANSWERS)).lower()


def not_used(rows: list[dict]) -> str:
    """An answer-list word that none of `rows` uses."""
    used = {w.upper() for w in answers_of(rows)}
    return next(w for w in ANSWERS if w not in used)


@pytest.fixture(scope="module")
def splits() -> tuple[list[dict], list[dict]]:
    return make_splits()


@pytest.fixture(scope="module")
def few_rows() -> list[dict]:
    return make_splits(n_train=5, n_val=1)[0]


def task_line(answer, task_id="t1", instruction=dataset.TASK_INSTRUCTION, **extra) -> str:
    """One JSONL line holding a (possibly malformed) task."""
    task = {"prompt": instruction, "answer": answer, "id": task_id, **extra}
    return json.dumps({"prompt": json.dumps(task)})


def write_text(tmp_path: Path, name: str, lines: list[str]) -> Path:
    path = tmp_path / name
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def with_bad_line(rows: list[dict], bad: str, at: int = 3) -> list[str]:
    """JSONL lines of good rows with `bad` placed on line `at`."""
    lines = [json.dumps(row) for row in rows]
    lines.insert(at - 1, bad)
    return lines


def bad_jsonl(tmp_path: Path, rows: list[dict], bad: str, at: int = 3) -> Path:
    return write_text(tmp_path, "d.jsonl", with_bad_line(rows, bad, at))


def pair(tmp_path: Path, train: list[dict], val: list[dict]) -> tuple[Path, Path]:
    return write_jsonl(train, tmp_path / "t.jsonl"), write_jsonl(val, tmp_path / "v.jsonl")


def only_problem(problems: list[DatasetProblem], path: Path, line: int | None, unit: str = "line") -> DatasetProblem:
    """Assert exactly one problem, at `line` of `path`, and that its text says where."""
    assert len(problems) == 1, [str(p) for p in problems]
    problem = problems[0]
    assert problem.file == str(path)
    assert problem.line == line
    where = f"{path} {unit} {line}:" if line is not None else f"{path}:"
    assert str(problem).startswith(where), str(problem)
    return problem


# -------------------------------------------------------------------------------------- splits


def test_default_sizes_unique_and_disjoint(splits):
    train, val = splits
    assert (len(train), len(val)) == (dataset.DEFAULT_TRAIN, dataset.DEFAULT_VAL) == (640, 128)
    train_words, val_words = answers_of(train), answers_of(val)
    assert len(set(train_words)) == 640 and len(set(val_words)) == 128
    assert not set(train_words) & set(val_words)
    assert {w.upper() for w in train_words + val_words} <= set(ANSWERS)
    assert all(w == w.lower() for w in train_words + val_words)


def test_ids_and_inner_object_shape(splits):
    train, val = splits
    assert [inner(r)["id"] for r in train] == [f"wordle_train_{i:04d}" for i in range(640)]
    assert [inner(r)["id"] for r in val] == [f"wordle_val_{i:04d}" for i in range(128)]
    for row in train + val:
        assert list(row) == ["prompt"] and isinstance(row["prompt"], str)
        task = inner(row)
        assert list(task) == ["prompt", "answer", "id"]
        assert task["prompt"] == dataset.TASK_INSTRUCTION


def test_same_seed_gives_identical_bytes(tmp_path):
    a = write_jsonl(make_splits(seed=7)[0], tmp_path / "a.jsonl").read_bytes()
    b = write_jsonl(make_splits(seed=7)[0], tmp_path / "b.jsonl").read_bytes()
    c = write_jsonl(make_splits(seed=8)[0], tmp_path / "c.jsonl").read_bytes()
    assert a == b
    assert a != c


def test_input_order_and_case_do_not_matter():
    shuffled = [w.lower() for w in reversed(ANSWERS)] + ANSWERS[:10]  # also some duplicates
    assert make_splits(shuffled, 50, 10, seed=3) == make_splits(ANSWERS, 50, 10, seed=3)


@pytest.mark.parametrize(
    ("n_train", "n_val", "needle"),
    [
        (len(ANSWERS), 1, "only"),
        (len(ANSWERS) - 5, 6, "only"),
        (0, 10, "n_train"),
        (10, -1, "n_val"),
        (True, 10, "n_train"),
        (10.0, 10, "n_train"),
    ],
)
def test_make_splits_rejects_bad_sizes(n_train, n_val, needle):
    with pytest.raises(ValueError, match=needle):
        make_splits(ANSWERS, n_train, n_val)


def test_make_splits_rejects_a_bad_word_list():
    with pytest.raises(ValueError, match="five letters"):
        make_splits(list(ANSWERS[:20]) + ["TOOLONG"], 5, 5)


@settings(max_examples=30, deadline=None)
@given(data=st.data(), seed=st.integers(min_value=0, max_value=2**32))
def test_any_valid_request_gives_disjoint_clean_splits(data, seed):
    total = len(ANSWERS)
    n_train = data.draw(st.integers(min_value=1, max_value=total - 1), label="n_train")
    n_val = data.draw(st.integers(min_value=1, max_value=total - n_train), label="n_val")
    train, val = make_splits(ANSWERS, n_train, n_val, seed)
    train_words, val_words = answers_of(train), answers_of(val)
    assert (len(train), len(val)) == (n_train, n_val)
    assert len(set(train_words)) == n_train and len(set(val_words)) == n_val
    assert not set(train_words) & set(val_words)
    assert validate_rows(train) == [] and validate_rows(val) == []


# ------------------------------------------------------------------------ committed files


def test_committed_files_match_what_make_splits_builds_now(tmp_path):
    """Regeneration guard: after the word list changes, run `mtrl dataset make` and commit."""
    summary = make_dataset(tmp_path)
    for name in (dataset.TRAIN_FILE, dataset.VAL_FILE):
        committed = config.DATA_DIR / name
        assert committed.read_bytes() == (tmp_path / name).read_bytes(), (
            f"{committed} is stale: regenerate it with `mtrl dataset make`"
        )
    assert summary["train_rows"] == 640 and summary["val_rows"] == 128
    assert summary["overlap"] == 0


def test_committed_pair_validates_clean_at_the_default_batch_size():
    assert validate_pair(config.TRAIN_FILE, config.VALIDATION_FILE, batch_size=128) == []


def test_make_dataset_summary(tmp_path):
    summary = make_dataset(tmp_path, n_train=20, n_val=10, seed=5)
    train, val = make_splits(ANSWERS, 20, 10, 5)
    assert summary["first_train_answers"] == answers_of(train)[:3]
    assert summary["first_val_answers"] == answers_of(val)[:3]
    assert (summary["train_unique"], summary["val_unique"], summary["overlap"]) == (20, 10, 0)
    assert read_rows(summary["train_path"]) == train


def test_rollout_parser_accepts_every_row(splits):
    """The handler's own decoder reads exactly what the builder writes."""
    rollout = pytest.importorskip("wordle_agent.rollout")
    for row in splits[0] + splits[1]:
        instruction, answer = rollout.parse_task(row["prompt"])
        assert instruction == dataset.TASK_INSTRUCTION
        assert answer.lower() == inner(row)["answer"]


# ---------------------------------------------------------------------------- formats


@pytest.mark.parametrize("fmt", dataset.FORMATS)
def test_round_trip_through_every_format(tmp_path, splits, fmt):
    train = splits[0]
    path = export(train, tmp_path / f"train.{fmt}", fmt)
    assert read_rows(path) == train
    assert validate_file(path, batch_size=128) == []


def test_format_defaults_to_the_extension(tmp_path, few_rows):
    path = export(few_rows, tmp_path / "rows.csv")
    assert path.read_text(encoding="utf-8").splitlines()[0] == "prompt"


@pytest.mark.parametrize(
    ("name", "fmt", "needle"),
    [
        ("rows.csv", "json", "does not end in .json"),
        ("rows.txt", None, "unknown format"),
        ("rows.xml", "xml", "unknown format"),
    ],
)
def test_export_refuses_mismatched_formats(tmp_path, few_rows, name, fmt, needle):
    with pytest.raises(ValueError, match=needle):
        export(few_rows, tmp_path / name, fmt)


def test_writers_refuse_no_rows(tmp_path):
    with pytest.raises(ValueError, match="no rows"):
        write_jsonl([], tmp_path / "empty.jsonl")


def test_first_column_is_read_when_there_is_no_prompt_column(tmp_path, few_rows):
    lines = [json.dumps({"task": r["prompt"], "note": "x"}) for r in few_rows]
    path = write_text(tmp_path, "t.jsonl", lines)
    assert validate_file(path) == []
    assert read_rows(path) == few_rows


def test_prompt_column_wins_over_the_first_column(tmp_path, few_rows):
    path = tmp_path / "t.csv"
    with open(path, "w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["note", "prompt"])
        writer.writerows(["x", r["prompt"]] for r in few_rows)
    assert validate_file(path) == []
    assert read_rows(path) == few_rows


# ------------------------------------------------------------------------- rejections


def test_rejects_a_line_that_is_not_json(tmp_path, few_rows):
    path = bad_jsonl(tmp_path, few_rows, '{"prompt": "unterminated')
    assert "not valid JSON" in only_problem(validate_file(path), path, 3).message


def test_rejects_a_json_file_that_does_not_parse(tmp_path, few_rows):
    path = write_text(tmp_path, "d.json", ["[", json.dumps(few_rows[0]) + ",", '{"prompt": }', "]"])
    assert "not valid JSON" in only_problem(validate_file(path), path, 3).message


def test_json_lines_saved_as_json_get_a_hint(tmp_path, few_rows):
    path = write_text(tmp_path, "d.json", [json.dumps(r) for r in few_rows])
    assert ".jsonl" in only_problem(validate_file(path), path, 2).message


def test_rejects_a_json_file_that_is_not_an_array(tmp_path, few_rows):
    path = tmp_path / "d.json"
    path.write_text(json.dumps(few_rows[0]))
    assert "array" in only_problem(validate_file(path), path, None).message


def test_rejects_rows_with_no_column_at_all(tmp_path):
    path = write_text(tmp_path, "d.jsonl", ["{}", "{}"])
    problems = validate_file(path)
    assert [p.line for p in problems] == [1, 2]
    assert all("no prompt column and no first column" in p.message for p in problems)
    with pytest.raises(DatasetError, match="no prompt column"):
        read_rows(path)


def test_rejects_a_row_missing_the_prompt_column(tmp_path, few_rows):
    path = bad_jsonl(tmp_path, few_rows, json.dumps({"other": "x"}))
    message = only_problem(validate_file(path), path, 3).message
    assert "no value in the 'prompt' column" in message


def test_rejects_a_line_that_is_not_an_object(tmp_path, few_rows):
    path = bad_jsonl(tmp_path, few_rows, "[1, 2]")
    assert "an array, not a JSON object" in only_problem(validate_file(path), path, 3).message


def test_rejects_a_task_that_was_not_encoded_as_a_string(tmp_path, few_rows):
    task = inner(few_rows[0]) | {"id": "other"}
    path = bad_jsonl(tmp_path, few_rows[1:], json.dumps({"prompt": task}))
    message = only_problem(validate_file(path), path, 3).message
    assert "an object, not a string" in message and "json.dumps" in message


def test_rejects_a_prompt_string_that_is_not_json(tmp_path, few_rows):
    path = bad_jsonl(tmp_path, few_rows, json.dumps({"prompt": "Guess the word"}))
    assert "string is not JSON" in only_problem(validate_file(path), path, 3).message


def test_rejects_a_prompt_string_that_is_not_an_object(tmp_path, few_rows):
    path = bad_jsonl(tmp_path, few_rows, json.dumps({"prompt": '["a", "b"]'}))
    assert "decodes to an array" in only_problem(validate_file(path), path, 3).message


def test_rejects_a_task_without_an_instruction(tmp_path, few_rows):
    path = bad_jsonl(tmp_path, few_rows, task_line(not_used(few_rows), instruction=""))
    assert "no instruction" in only_problem(validate_file(path), path, 3).message


def test_rejects_a_task_without_an_answer(tmp_path, few_rows):
    task = {"prompt": dataset.TASK_INSTRUCTION, "id": "t1"}
    path = bad_jsonl(tmp_path, few_rows, json.dumps({"prompt": json.dumps(task)}))
    assert 'no "answer"' in only_problem(validate_file(path), path, 3).message


@pytest.mark.parametrize(
    ("answer", "needle"),
    [
        ("abc", 'answer "abc" is not five letters'),
        ("abcdef", "is not five letters"),
        ("ab1de", "characters other than the letters a-z"),
        ("ab de", "characters other than the letters a-z"),
        ("\u00e9clat", "characters other than the letters a-z"),  # isalpha() would let it through
        (12345, "answer is a number, not a string"),
        (None, "answer is null, not a string"),
    ],
)
def test_rejects_a_malformed_answer(tmp_path, few_rows, answer, needle):
    path = bad_jsonl(tmp_path, few_rows, task_line(answer))
    assert needle in only_problem(validate_file(path), path, 3).message


def test_accepts_an_answer_in_any_case(tmp_path, few_rows):
    path = bad_jsonl(tmp_path, few_rows, task_line(not_used(few_rows).upper()))
    assert validate_file(path) == []


def test_rejects_an_answer_not_in_the_list(tmp_path, few_rows):
    word = not_an_answer()
    path = bad_jsonl(tmp_path, few_rows, task_line(word))
    message = only_problem(validate_file(path), path, 3).message
    assert f'answer "{word}" is not in the answer list' in message
    assert validate_file(path, answers=None) == []


@pytest.mark.parametrize(("task_id", "found"), [(None, "null"), (7, "a number"), ("", "empty"), ("missing", "missing")])
def test_rejects_a_missing_or_non_string_id(tmp_path, few_rows, task_id, found):
    task = {"prompt": dataset.TASK_INSTRUCTION, "answer": not_used(few_rows)}
    if task_id != "missing":
        task["id"] = task_id
    path = bad_jsonl(tmp_path, few_rows, json.dumps({"prompt": json.dumps(task)}))
    message = only_problem(validate_file(path), path, 3).message
    assert "id must be a non-empty string" in message and f"found {found}" in message


def test_rejects_duplicate_ids(tmp_path, few_rows):
    first_id = inner(few_rows[0])["id"]
    path = bad_jsonl(tmp_path, few_rows, task_line(not_used(few_rows), first_id), at=4)
    message = only_problem(validate_file(path), path, 4).message
    assert f'duplicate id "{first_id}"' in message and "line 1" in message


def test_rejects_duplicate_answers(tmp_path, few_rows):
    word = inner(few_rows[1])["answer"]
    path = bad_jsonl(tmp_path, few_rows, task_line(word.upper(), "fresh-id"), at=6)
    message = only_problem(validate_file(path), path, 6).message
    assert f'duplicate answer "{word.upper()}"' in message and "line 2" in message


def test_rejects_overlap_between_training_and_validation(tmp_path):
    train, val = make_splits(n_train=6, n_val=4, seed=1)
    shared = inner(train[4])["answer"]
    val[2] = {"prompt": encode_task(shared, "wordle_val_0002")}
    train_path, val_path = pair(tmp_path, train, val)
    problem = only_problem(validate_pair(train_path, val_path), val_path, 3)
    assert f'answer "{shared}" is also in the training file' in problem.message
    assert f"{train_path} line 5" in problem.message


def test_rejects_an_id_used_in_both_files(tmp_path):
    train, val = make_splits(n_train=6, n_val=4, seed=1)
    val[1] = {"prompt": encode_task(inner(val[1])["answer"], inner(train[0])["id"])}
    train_path, val_path = pair(tmp_path, train, val)
    problem = only_problem(validate_pair(train_path, val_path), val_path, 2)
    assert "is also used in the training file" in problem.message


def test_rejects_fewer_rows_than_one_batch(tmp_path, few_rows):
    path = write_jsonl(few_rows, tmp_path / "d.jsonl")
    assert validate_file(path, batch_size=5) == []
    problem = only_problem(validate_file(path, batch_size=6), path, None)
    assert "only 5 rows, fewer than one batch of 6" in problem.message


def test_pair_applies_the_batch_floor_to_both_files(tmp_path):
    train_path, val_path = pair(tmp_path, *make_splits(n_train=8, n_val=4))
    assert only_problem(validate_pair(train_path, val_path, batch_size=5), val_path, None)


@pytest.mark.parametrize(
    ("name", "content"),
    [("e.jsonl", b""), ("e.jsonl", b"\n\n"), ("e.json", b"[]"), ("e.csv", b"prompt\n")],
)
def test_rejects_an_empty_file(tmp_path, name, content):
    path = tmp_path / name
    path.write_bytes(content)
    assert "empty" in only_problem(validate_file(path), path, None).message
    with pytest.raises(DatasetError, match="empty"):
        read_rows(path)


def test_rejects_a_blank_line_inside_the_file(tmp_path, few_rows):
    path = bad_jsonl(tmp_path, few_rows, "   ")
    assert "blank line" in only_problem(validate_file(path), path, 3).message


def test_rejects_bytes_that_are_not_utf8_in_jsonl(tmp_path, few_rows):
    path = tmp_path / "d.jsonl"
    lines = [json.dumps(r).encode() for r in few_rows]
    lines[1] = lines[1].replace(b"prompt", b"pr\xffompt", 1)
    path.write_bytes(b"\n".join(lines) + b"\n")
    assert "0xff is not valid UTF-8" in only_problem(validate_file(path), path, 2).message


def test_rejects_bytes_that_are_not_utf8_in_csv(tmp_path, few_rows):
    path = export(few_rows, tmp_path / "d.csv")
    data = path.read_bytes().split(b"\n")
    data[3] = data[3] + b"\xc3"  # a truncated two-byte sequence on line 4
    path.write_bytes(b"\n".join(data))
    assert "not valid UTF-8" in only_problem(validate_file(path), path, 4).message


def test_rejects_a_byte_order_mark(tmp_path, few_rows):
    path = write_jsonl(few_rows, tmp_path / "d.jsonl")
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    assert "byte-order mark" in only_problem(validate_file(path), path, 1).message


@pytest.mark.parametrize(
    ("name", "needle"),
    [("d.txt", "unsupported file type '.txt'"), ("missing.jsonl", "file not found")],
)
def test_rejects_unreadable_paths(tmp_path, name, needle):
    path = tmp_path / name
    if path.suffix == ".txt":
        path.write_text("x")
    assert needle in only_problem(validate_file(path), path, None).message


def test_rejects_a_file_that_is_not_parquet(tmp_path):
    path = tmp_path / "d.parquet"
    path.write_bytes(b"this is not parquet")
    assert "not a readable Parquet file" in only_problem(validate_file(path), path, None).message


def test_rejects_csv_without_column_names(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text(',\n"a",\n')
    assert "no prompt column" in only_problem(validate_file(path), path, 2).message


def test_csv_problems_name_the_line_where_the_record_starts(tmp_path, few_rows):
    path = tmp_path / "d.csv"
    with open(path, "w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(["prompt"])
        writer.writerow([few_rows[0]["prompt"]])
        writer.writerow(["not\njson"])  # one quoted field over lines 3 and 4
        writer.writerows([r["prompt"]] for r in few_rows[1:])
    assert "string is not JSON" in only_problem(validate_file(path), path, 3).message


# The same bad row (third data row) in every format: CSV counts its header line; JSON arrays and
# Parquet have no line per record and name the row.
@pytest.mark.parametrize(
    ("fmt", "line", "unit"),
    [("jsonl", 3, "line"), ("csv", 4, "line"), ("json", 3, "row"), ("parquet", 3, "row")],
)
def test_every_format_goes_through_the_same_checks(tmp_path, few_rows, fmt, line, unit):
    word = not_an_answer()
    rows = list(few_rows)
    rows.insert(2, {"prompt": encode_task(word, "bad-row")})
    path = export(rows, tmp_path / f"d.{fmt}")
    problem = only_problem(validate_file(path), path, line, unit)
    assert f'answer "{word}" is not in the answer list' in problem.message


def test_non_string_prompt_values_in_parquet(tmp_path):
    path = export([{"prompt": 1}, {"prompt": 2}], tmp_path / "d.parquet")
    problems = validate_file(path)
    assert [(p.line, p.unit) for p in problems] == [(1, "row"), (2, "row")]
    assert "is a number, not a string" in problems[0].message


def test_rejects_what_the_rollout_handler_would_refuse(tmp_path, few_rows):
    rollout = pytest.importorskip("wordle_agent.rollout")
    too_long = "x" * (rollout.MAX_INSTRUCTION_CHARS + 1)
    path = bad_jsonl(tmp_path, few_rows, task_line(not_used(few_rows), instruction=too_long))
    assert "rollout handler would refuse" in only_problem(validate_file(path), path, 3).message


def test_problems_read_as_file_line_message():
    problem = DatasetProblem("data/x.jsonl", 7, 'answer "cat" is not five letters')
    assert str(problem) == 'data/x.jsonl line 7: answer "cat" is not five letters'
    assert str(DatasetProblem("data/x.parquet", 2, "m", "row")) == "data/x.parquet row 2: m"
    assert str(DatasetProblem("data/x.jsonl", None, "empty")) == "data/x.jsonl: empty"


def test_check_or_raise_lists_every_problem(tmp_path, few_rows):
    lines = with_bad_line(few_rows, "not json", at=2)
    lines.insert(4, "also not json")
    path = write_text(tmp_path, "d.jsonl", lines)
    with pytest.raises(DatasetError) as info:
        check_or_raise(path)
    assert [p.line for p in info.value.problems] == [2, 5]
    assert f"{path} line 2:" in str(info.value) and f"{path} line 5:" in str(info.value)
    check_or_raise(write_jsonl(few_rows, tmp_path / "ok.jsonl"))  # clean: no exception


def test_long_problem_lists_are_truncated(tmp_path):
    path = write_text(tmp_path, "d.jsonl", ["x"] * 30)
    with pytest.raises(DatasetError, match=r"\.\.\. and 10 more"):
        check_or_raise(path)


def test_programmer_errors_raise(tmp_path):
    with pytest.raises(ValueError, match="batch_size"):
        validate_file(tmp_path / "d.jsonl", batch_size=0)
    with pytest.raises(TypeError, match="path"):
        validate_file(42)  # type: ignore[arg-type]


# ---------------------------------------------------------------------- smoke payload


def test_smoke_payload_shape(tmp_path):
    path = dataset.write_smoke_payload(tmp_path / "payload.json")
    payload = json.loads(path.read_text())
    assert set(payload) == {"prompt", "metadata"}
    assert json.loads(payload["prompt"]) == {
        "prompt": dataset.TASK_INSTRUCTION,
        "answer": dataset.SMOKE_ANSWER,
        "id": "smoke-test",
    }
    account = config.PLACEHOLDER_ACCOUNT
    assert payload["metadata"] == {
        "jobArn": f"arn:aws:sagemaker:us-east-1:{account}:job/AgentRFT/smoke-test",
        "rolloutId": "r1",
    }
    assert path.read_text().startswith('{\n  "prompt"')  # pretty-printed
    assert validate_rows([{"prompt": payload["prompt"]}]) == []


def test_committed_payload_is_current(tmp_path):
    fresh = dataset.write_smoke_payload(tmp_path / "payload.json")
    assert config.PAYLOAD_FILE.read_bytes() == fresh.read_bytes()


def test_smoke_payload_takes_the_learners_account():
    arn = dataset.smoke_payload(config.MOTO_ACCOUNT, "us-west-2")["metadata"]["jobArn"]
    assert arn.startswith(f"arn:aws:sagemaker:us-west-2:{config.MOTO_ACCOUNT}:")
    for bad in ("1234", "12345678901a", 111122223333):
        with pytest.raises(ValueError, match="12-digit"):
            dataset.smoke_payload(bad)  # type: ignore[arg-type]
