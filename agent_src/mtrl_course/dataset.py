"""The task dataset: build the splits, export them, read them back, and validate them.

There are no target responses, transcripts or labels here: each row is one task. The service
reads the `prompt` column (or, without one, the first column) and passes that string to the
agent verbatim, never parsing it. So the whole task lives inside the string, as JSON encoded
a second time: `{"prompt": "<task JSON>"}` where the task decodes to
`{"prompt": <instruction>, "answer": <secret word>, "id": <row id>}`. The instruction is the
same on every row; only the hidden answer changes, and the policy never sees it (the
environment and the reward do).

Because the service checks none of this, a malformed row surfaces only as a wasted rollout in
the middle of a paid job. `validate_file` / `validate_pair` are the place bad rows are rejected,
before upload; the rollout handler only has to survive them.
"""

from __future__ import annotations

import csv
import io
import json
import random
import string
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from mtrl_course import config
from wordle_agent.words import ANSWERS

TASK_INSTRUCTION = "Guess the hidden 5-letter word."
DEFAULT_TRAIN = 640  # 5 full batches at the service's default global_batch_size of 128
DEFAULT_VAL = 128  # one batch of held-out words
DEFAULT_SEED = config.DEFAULT_SEED
TRAIN_ID_FORMAT = "wordle_train_{:04d}"
VAL_ID_FORMAT = "wordle_val_{:04d}"

# File names inside the data directory; config holds the repository's committed paths.
TRAIN_FILE = config.TRAIN_FILE.name
VAL_FILE = config.VALIDATION_FILE.name

# The column the service reads; without it, it reads the first column.
PROMPT_COLUMN = "prompt"
FORMATS = ("jsonl", "json", "csv", "parquet")
WORD_LENGTH = 5
# Fixed key order and separators make the task string, and so the committed files, byte-stable.
_TASK_SEPARATORS = (", ", ": ")
_LETTERS = frozenset(string.ascii_letters)
# Formats whose records have no physical line of their own: problems name a row instead.
_ROW_FORMATS = frozenset({"json", "parquet"})
MAX_LISTED_PROBLEMS = 20  # DatasetError lists this many, then counts the rest

# Smoke-test payload: shaped like what the service sends the runtime. The job ARN must name the
# caller's own account when used live (another account's ARN gets 403 before the job lookup).
SMOKE_ANSWER = "beach"
SMOKE_ID = "smoke-test"
SMOKE_ROLLOUT_ID = "r1"
SMOKE_REGION = "us-east-1"
SMOKE_JOB_ARN_FORMAT = "arn:aws:sagemaker:{region}:{account}:job/AgentRFT/smoke-test"


# --------------------------------------------------------------------------------------------
# Building the rows


def encode_task(answer: str, task_id: str, instruction: str = TASK_INSTRUCTION) -> str:
    """The task string the service passes to the agent: one JSON object, lowercase answer."""
    task = {"prompt": instruction, "answer": answer.lower(), "id": task_id}
    return json.dumps(task, separators=_TASK_SEPARATORS, ensure_ascii=True)


def _check_count(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"{name} must be a positive whole number, got {value!r}")


def make_splits(
    answers: Iterable[str] = ANSWERS,
    n_train: int = DEFAULT_TRAIN,
    n_val: int = DEFAULT_VAL,
    seed: int = DEFAULT_SEED,
) -> tuple[list[dict], list[dict]]:
    """Draw disjoint training and validation words from `answers`, without replacement.

    The words are deduplicated and sorted before the seeded shuffle, so the result depends only
    on the set of words and the seed, not on the order the list arrives in.
    """
    _check_count("n_train", n_train)
    _check_count("n_val", n_val)
    pool = sorted({word.strip().upper() for word in answers if word.strip()})
    bad = [w for w in pool if len(w) != WORD_LENGTH or not set(w) <= _LETTERS]
    if bad:
        raise ValueError(f"the answer list holds words that are not five letters a-z: {bad[:5]}")
    if n_train + n_val > len(pool):
        raise ValueError(
            f"asked for {n_train} training + {n_val} validation words, but the answer list has "
            f"only {len(pool)} unique words; ask for fewer"
        )
    random.Random(seed).shuffle(pool)
    train_words = pool[:n_train]
    val_words = pool[n_train : n_train + n_val]
    return _rows(train_words, TRAIN_ID_FORMAT), _rows(val_words, VAL_ID_FORMAT)


def _rows(words: Sequence[str], id_format: str) -> list[dict]:
    return [{PROMPT_COLUMN: encode_task(w, id_format.format(i))} for i, w in enumerate(words)]


def task_answers(rows: Sequence[dict]) -> list[str]:
    """The (lowercase) answers inside rows built by `make_splits`, in row order."""
    return [json.loads(row[PROMPT_COLUMN])["answer"] for row in rows]


# --------------------------------------------------------------------------------------------
# Writing


def _format_of(path: Path) -> str | None:
    fmt = path.suffix.lower().lstrip(".")
    return fmt if fmt in FORMATS else None


def _columns_of(rows: Iterable[dict]) -> list[str]:
    """Every key that appears in any row, in order of first appearance."""
    columns: dict[str, None] = {}
    for row in rows:
        if isinstance(row, dict):
            columns.update(dict.fromkeys(row))
    return list(columns)


def write_jsonl(rows: Sequence[dict], path: str | Path) -> Path:
    """Write one JSON object per line (ASCII, '\\n' line ends, so the bytes are stable)."""
    if not rows:
        raise ValueError(f"no rows to write to {path}: the service needs at least one batch")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="\n") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=True) + "\n")
    return path


def export(rows: Sequence[dict], path: str | Path, fmt: str | None = None) -> Path:
    """Write rows as jsonl, json (one array), csv or parquet; `fmt` defaults to the extension.

    The service picks its reader from the file extension, so a mismatch is refused.
    """
    path = Path(path)
    suffix_fmt = _format_of(path)
    fmt = fmt or suffix_fmt
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r} for {path}; use one of {', '.join(FORMATS)}")
    if suffix_fmt != fmt:
        raise ValueError(
            f"{path} does not end in .{fmt}; the service picks the reader from the extension"
        )
    if not rows:
        raise ValueError(f"no rows to write to {path}: the service needs at least one batch")
    if fmt == "jsonl":
        return write_jsonl(rows, path)
    path.parent.mkdir(parents=True, exist_ok=True)
    columns = _columns_of(rows)
    if fmt == "json":
        with open(path, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(json.dumps(list(rows), indent=2, ensure_ascii=True) + "\n")
    elif fmt == "csv":
        with open(path, "w", encoding="utf-8", newline="") as fh:
            writer = csv.writer(fh, lineterminator="\n")
            writer.writerow(columns)
            for row in rows:
                writer.writerow([row.get(column, "") for column in columns])
    else:
        # Imported here so that building and validating JSONL stays free of the pandas import.
        import pandas as pd

        frame = pd.DataFrame.from_records(list(rows), columns=columns)
        frame.to_parquet(path, index=False, engine="pyarrow")
    return path


def make_dataset(
    out_dir: str | Path | None = None,
    n_train: int = DEFAULT_TRAIN,
    n_val: int = DEFAULT_VAL,
    seed: int = DEFAULT_SEED,
    answers: Iterable[str] = ANSWERS,
) -> dict:
    """Write the training and validation JSONL files (what `mtrl dataset make` runs).

    Returns a summary: paths, row counts, unique answers, overlap (always 0) and the first
    answers of each split. The written pair is validated before returning.
    """
    answers = list(answers)
    out = Path(out_dir) if out_dir is not None else config.DATA_DIR
    train, val = make_splits(answers, n_train, n_val, seed)
    train_path = write_jsonl(train, out / TRAIN_FILE)
    val_path = write_jsonl(val, out / VAL_FILE)
    check_or_raise(train_path, val_path, answers=answers)
    train_answers, val_answers = task_answers(train), task_answers(val)
    return {
        "train_path": str(train_path),
        "val_path": str(val_path),
        "seed": seed,
        "train_rows": len(train),
        "val_rows": len(val),
        "train_unique": len(set(train_answers)),
        "val_unique": len(set(val_answers)),
        "overlap": len(set(train_answers) & set(val_answers)),
        "first_train_answers": train_answers[:3],
        "first_val_answers": val_answers[:3],
    }


def smoke_payload(account_id: str = config.PLACEHOLDER_ACCOUNT, region: str = SMOKE_REGION) -> dict:
    """A payload shaped like the service's, for invoking the runtime by hand before training."""
    if not (isinstance(account_id, str) and len(account_id) == 12 and account_id.isdigit()):
        raise ValueError(f"account_id must be a 12-digit AWS account ID, got {account_id!r}")
    return {
        "prompt": encode_task(SMOKE_ANSWER, SMOKE_ID),
        "metadata": {
            "jobArn": SMOKE_JOB_ARN_FORMAT.format(region=region, account=account_id),
            "rolloutId": SMOKE_ROLLOUT_ID,
        },
    }


def write_smoke_payload(
    path: str | Path | None = None,
    *,
    account_id: str = config.PLACEHOLDER_ACCOUNT,
    region: str = SMOKE_REGION,
) -> Path:
    """Write the smoke-test payload as indented JSON (default `<repo>/data/payload.json`)."""
    path = Path(path) if path is not None else config.PAYLOAD_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="\n") as fh:
        fh.write(json.dumps(smoke_payload(account_id, region), indent=2, ensure_ascii=True) + "\n")
    return path


# --------------------------------------------------------------------------------------------
# Problems


@dataclass(frozen=True)
class DatasetProblem:
    """One thing wrong with a dataset file. `line` is 1-based, or None for the whole file.

    For JSONL and CSV `line` is the physical line; for JSON arrays and Parquet, which have no
    line per record, it is the row number and `unit` is "row".
    """

    file: str
    line: int | None
    message: str
    unit: str = "line"

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file} {self.unit} {self.line}"
        return f"{where}: {self.message}"


class DatasetError(ValueError):
    """Raised by `check_or_raise` and `read_rows`; `.problems` holds every problem found."""

    def __init__(self, problems: Sequence[DatasetProblem]):
        self.problems = list(problems)
        shown = [f"  {p}" for p in self.problems[:MAX_LISTED_PROBLEMS]]
        hidden = len(self.problems) - len(shown)
        if hidden:
            shown.append(f"  ... and {hidden} more")
        count = len(self.problems)
        title = f"{count} dataset problem{'s' if count != 1 else ''}:"
        super().__init__("\n".join([title, *shown]))


_JSON_TYPES = {
    dict: "an object",
    list: "an array",
    str: "a string",
    bool: "a boolean",
    type(None): "null",
}


def _json_type(value: Any) -> str:
    """How a value reads to someone who wrote it as JSON (a dict is 'an object')."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return "a number"
    return _JSON_TYPES.get(type(value), f"a {type(value).__name__}")


# --------------------------------------------------------------------------------------------
# Loading: bytes -> (columns, [(line, row dict)]) with problems instead of exceptions


@dataclass
class _Table:
    name: str
    unit: str
    columns: list[str]
    records: list[tuple[int, dict]]
    problems: list[DatasetProblem]

    def problem(self, line: int | None, message: str) -> None:
        self.problems.append(DatasetProblem(self.name, line, message, self.unit))


def _not_utf8(raw: bytes, err: UnicodeDecodeError) -> str:
    return f"byte 0x{raw[err.start]:02x} is not valid UTF-8; save the file as UTF-8"


def _decode(table: _Table, raw: bytes) -> str | None:
    """Whole-file UTF-8 decode; a failure names the line of the first bad byte."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line = raw.count(b"\n", 0, err.start) + 1
        table.problems.append(DatasetProblem(table.name, line, _not_utf8(raw, err)))
        return None


def _load_jsonl(table: _Table, raw: bytes) -> None:
    lines = raw.split(b"\n")
    while lines and not lines[-1].strip():  # trailing newline(s) are not rows
        lines.pop()
    for number, line_bytes in enumerate(lines, start=1):
        try:
            text = line_bytes.decode("utf-8")
        except UnicodeDecodeError as err:
            table.problem(number, _not_utf8(line_bytes, err))
            continue
        if not text.strip():
            table.problem(number, "blank line; every line must be one JSON object")
            continue
        try:
            row = json.loads(text)
        except json.JSONDecodeError as err:
            hint = ""
            if number == 1 and text.lstrip().startswith("["):
                hint = " (this looks like a JSON array: name the file .json)"
            table.problem(number, f"not valid JSON: {err.msg} at column {err.colno}{hint}")
            continue
        if not isinstance(row, dict):
            table.problem(number, f"the line is {_json_type(row)}, not a JSON object")
            continue
        table.records.append((number, row))
    table.columns = _columns_of(row for _, row in table.records)


def _load_json(table: _Table, raw: bytes) -> None:
    text = _decode(table, raw)
    if text is None:
        return
    if not text.strip():
        return  # reported as an empty file
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        hint = ""
        if err.msg == "Extra data":
            hint = " (one object per line is JSON Lines: name the file .jsonl)"
        message = f"not valid JSON: {err.msg}{hint}"
        table.problems.append(DatasetProblem(table.name, err.lineno, message))
        return
    if not isinstance(data, list):
        found = _json_type(data)
        table.problem(None, f"a .json dataset must be an array of row objects, not {found}")
        return
    for number, row in enumerate(data, start=1):
        if isinstance(row, dict):
            table.records.append((number, row))
        else:
            table.problem(number, f"the row is {_json_type(row)}, not a JSON object")
    table.columns = _columns_of(row for _, row in table.records)


def _load_csv(table: _Table, raw: bytes) -> None:
    text = _decode(table, raw)
    if text is None:
        return
    reader = csv.reader(io.StringIO(text, newline=""))
    header: list[str] | None = None
    start = 1
    try:
        for fields in reader:
            line, start = start, reader.line_num + 1  # a quoted field may span several lines
            if not fields:
                continue  # blank lines are skipped, as CSV readers do
            if header is None:
                header = fields
                table.columns = [name for name in header if name]
                continue
            row = {name: value for name, value in zip(header, fields) if name}
            table.records.append((line, row))
    except csv.Error as err:
        table.problems.append(DatasetProblem(table.name, reader.line_num, f"not valid CSV: {err}"))


def _load_parquet(table: _Table, path: Path) -> None:
    # Imported here so that building and validating JSONL stays free of the pyarrow import.
    import pyarrow.parquet as pq

    try:
        data = pq.read_table(path)
    except Exception as err:  # pyarrow raises several types for a damaged or foreign file
        table.problem(None, f"not a readable Parquet file ({type(err).__name__}: {err})")
        return
    table.columns = list(data.column_names)
    table.records = list(enumerate(data.to_pylist(), start=1))


def _load(path: str | Path) -> _Table:
    if not isinstance(path, (str, Path)):
        raise TypeError(f"path must be a str or Path, got {type(path).__name__}")
    path = Path(path)
    fmt = _format_of(path)
    table = _Table(str(path), "row" if fmt in _ROW_FORMATS else "line", [], [], [])
    if fmt is None:
        known = ", ".join("." + f for f in FORMATS)
        suffix = repr(path.suffix) if path.suffix else "(no extension)"
        table.problem(None, f"unsupported file type {suffix}; the service reads {known}")
        return table
    if not path.exists():
        table.problem(None, "file not found")
        return table
    if not path.is_file():
        table.problem(None, "not a regular file")
        return table
    if fmt == "parquet":
        _load_parquet(table, path)
        return table
    raw = path.read_bytes()
    if raw.startswith(b"\xef\xbb\xbf"):
        message = "starts with a UTF-8 byte-order mark; save the file without one"
        table.problems.append(DatasetProblem(table.name, 1, message))
        return table
    {"jsonl": _load_jsonl, "json": _load_json, "csv": _load_csv}[fmt](table, raw)
    return table


def read_rows(path: str | Path) -> list[dict]:
    """Load a dataset file of any of the four formats into `[{"prompt": value}, ...]`.

    Follows the service's column rule: the `prompt` column, otherwise the first column. Raises
    `DatasetError` if the file cannot be read that far; it does not check the task strings.
    """
    table = _load(path)
    column = _prompt_column(table)
    if not table.records and not table.problems:
        table.problem(None, "the file is empty: no rows")
    elif column is None and not table.problems:
        table.problem(None, "no prompt column and no first column")
    for line, row in table.records:
        if column is not None and column not in row:
            table.problem(line, f"no value in the {column!r} column")
    if table.problems:
        raise DatasetError(table.problems)
    return [{PROMPT_COLUMN: row[column]} for _, row in table.records]


# --------------------------------------------------------------------------------------------
# Validation


def _prompt_column(table: _Table) -> str | None:
    if PROMPT_COLUMN in table.columns:
        return PROMPT_COLUMN
    return table.columns[0] if table.columns else None


def _task_problems(
    value: Any, column: str, answer_set: frozenset[str] | None
) -> tuple[list[str], str | None, str | None]:
    """Check one prompt value: (problems, answer, id), the last two only when they are strings.

    A value that is not a JSON object string stops at the first problem; past that point the
    instruction, answer and id are checked independently, so one row can report several.
    """
    if not isinstance(value, str):
        hint = ""
        if isinstance(value, dict):
            # The most common slip: the task written as a nested object instead of a string.
            hint = "; write json.dumps(task) there, the service passes only strings on"
        return [f"the {column!r} value is {_json_type(value)}, not a string{hint}"], None, None
    try:
        task = json.loads(value)
    except json.JSONDecodeError as err:
        message = f"the {column!r} string is not JSON ({err.msg}); it must hold the task object"
        return [message], None, None
    if not isinstance(task, dict):
        message = f"the {column!r} string decodes to {_json_type(task)}, not a task object"
        return [message], None, None
    problems = []
    instruction = task.get("prompt")
    if not isinstance(instruction, str) or not instruction.strip():
        problems.append('the task has no instruction: "prompt" must be a non-empty string')
    answer = task.get("answer")
    if "answer" not in task:
        problems.append('the task has no "answer"')
    elif not isinstance(answer, str):
        problems.append(f"the answer is {_json_type(answer)}, not a string")
    elif len(answer) != WORD_LENGTH:
        problems.append(f'answer "{answer}" is not five letters (it has {len(answer)} characters)')
    elif not set(answer) <= _LETTERS:
        problems.append(f'answer "{answer}" has characters other than the letters a-z')
    elif answer_set is not None and answer.upper() not in answer_set:
        problems.append(f'answer "{answer}" is not in the answer list')
    task_id = task.get("id")
    if not isinstance(task_id, str) or not task_id:
        found = "missing" if "id" not in task else "empty" if task_id == "" else _json_type(task_id)
        problems.append(f"the task id must be a non-empty string (found {found})")
    if not problems:
        # Last word to the handler's own decoder, so that nothing this validator passes can be
        # refused at rollout time (it also enforces the handler's size limits).
        try:
            _handler_parse_task()(value)
        except ValueError as err:
            problems.append(f"the rollout handler would refuse this task: {err}")
    return (
        problems,
        answer if isinstance(answer, str) else None,
        task_id if isinstance(task_id, str) and task_id else None,
    )


@cache
def _handler_parse_task() -> Callable[[str], tuple[str, str]]:
    # Imported on first use: the rollout module pulls in Strands (about 1.5 s), which building
    # the files and the rest of the toolkit do not need.
    from wordle_agent.rollout import parse_task

    return parse_task


@dataclass
class _Checked:
    """What validating one file yields: its problems, and where each answer and id appeared."""

    table: _Table
    answers: dict[str, int]  # uppercase answer -> first line
    ids: dict[str, int]


def _check_table(table: _Table, batch_size: int | None, answers: Iterable[str] | None) -> _Checked:
    answer_set = None if answers is None else frozenset(word.upper() for word in answers)
    checked = _Checked(table, {}, {})
    column = _prompt_column(table)
    for line, row in table.records:
        if column is None:
            table.problem(line, "no prompt column and no first column: the row has no values")
            continue
        if column not in row:
            table.problem(line, f"no value in the {column!r} column")
            continue
        messages, answer, task_id = _task_problems(row[column], column, answer_set)
        for message in messages:
            table.problem(line, message)
        if answer is not None:
            first = checked.answers.setdefault(answer.upper(), line)
            if first != line:
                where = f"{table.unit} {first}"
                table.problem(line, f'duplicate answer "{answer}" (first on {where})')
        if task_id is not None:
            first = checked.ids.setdefault(task_id, line)
            if first != line:
                table.problem(line, f'duplicate id "{task_id}" (first on {table.unit} {first})')
    # An unreadable file already has its reason; "empty" would only add noise.
    if not table.records and not table.problems:
        table.problem(None, "the file is empty: no rows")
    elif batch_size is not None and table.records and len(table.records) < batch_size:
        table.problem(
            None,
            f"only {len(table.records)} rows, fewer than one batch of {batch_size}; "
            "the service needs at least global_batch_size rows",
        )
    table.problems.sort(key=lambda p: (p.line is not None, p.line or 0))
    return checked


def _check_batch_size(batch_size: int | None) -> None:
    if batch_size is not None:
        _check_count("batch_size", batch_size)


def validate_rows(
    rows: Sequence[dict],
    *,
    name: str = "<rows>",
    batch_size: int | None = None,
    answers: Iterable[str] | None = ANSWERS,
) -> list[DatasetProblem]:
    """Validate rows held in memory (as `make_splits` returns them); problems name rows 1..n."""
    _check_batch_size(batch_size)
    table = _Table(name, "row", [], [], [])
    for number, row in enumerate(rows, start=1):
        if isinstance(row, dict):
            table.records.append((number, row))
        else:
            table.problem(number, f"the row is {_json_type(row)}, not a dict with a prompt column")
    table.columns = _columns_of(row for _, row in table.records)
    return _check_table(table, batch_size, answers).table.problems


def validate_file(
    path: str | Path,
    *,
    batch_size: int | None = None,
    answers: Iterable[str] | None = ANSWERS,
) -> list[DatasetProblem]:
    """Every problem in one dataset file (.jsonl, .json, .csv or .parquet); [] when it is fine.

    Never raises for a bad file. `batch_size` adds the service's minimum row count; `answers`
    is the list every answer must come from (None skips that check).
    """
    _check_batch_size(batch_size)
    return _check_table(_load(path), batch_size, answers).table.problems


def validate_pair(
    train_path: str | Path,
    val_path: str | Path,
    batch_size: int | None = None,
    answers: Iterable[str] | None = ANSWERS,
) -> list[DatasetProblem]:
    """Both files' problems, plus words or ids shared between them.

    `batch_size` applies to both files. The service documents its minimum (one batch) for the
    training data; the course holds the validation split to the same floor, as a full batch.
    """
    _check_batch_size(batch_size)
    answers = None if answers is None else list(answers)
    train = _check_table(_load(train_path), batch_size, answers)
    val = _check_table(_load(val_path), batch_size, answers)
    shared: list[DatasetProblem] = []
    for answer, line in val.answers.items():
        if answer in train.answers:
            where = f"{train.table.name} {train.table.unit} {train.answers[answer]}"
            shared.append(
                DatasetProblem(
                    val.table.name,
                    line,
                    f'answer "{answer.lower()}" is also in the training file ({where}); '
                    "validation must hold out unseen words",
                    val.table.unit,
                )
            )
    for task_id, line in val.ids.items():
        if task_id in train.ids:
            where = f"{train.table.name} {train.table.unit} {train.ids[task_id]}"
            message = f'id "{task_id}" is also used in the training file ({where})'
            shared.append(DatasetProblem(val.table.name, line, message, val.table.unit))
    shared.sort(key=lambda p: p.line or 0)
    return train.table.problems + val.table.problems + shared


def check_or_raise(
    train_path: str | Path,
    val_path: str | Path | None = None,
    *,
    batch_size: int | None = None,
    answers: Iterable[str] | None = ANSWERS,
) -> None:
    """Validate one file or a training/validation pair; raise `DatasetError` listing all problems."""
    if val_path is None:
        problems = validate_file(train_path, batch_size=batch_size, answers=answers)
    else:
        problems = validate_pair(train_path, val_path, batch_size=batch_size, answers=answers)
    if problems:
        raise DatasetError(problems)
