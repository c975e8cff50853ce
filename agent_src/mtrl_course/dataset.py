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

import codecs
import csv
import heapq
import itertools
import json
import random
import re
import string
import sys
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, BinaryIO

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
        raise ValueError(f"{path} does not end in .{fmt}; the service picks the reader from the extension")
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

# Kept problems per file: enough to fix a file in one pass, few enough that a hostile 100 MB file
# (two problems a row, about two million) does not hold its problem list in memory. The rest are
# counted (`ProblemList.total`), so a report can say how many it did not show.
MAX_KEPT_PROBLEMS = 1000
# A physical line (JSONL, CSV) or a JSON array element may be at most this long. The handler
# refuses task strings over 20,000 characters, which JSON escaping can grow to about 120 KB, so
# no usable row comes near 1 MiB; the cap is what keeps a one-line 100 MB file from being read
# into memory whole.
MAX_RECORD_BYTES = 1 << 20
READ_CHUNK_BYTES = 1 << 16
PARQUET_BATCH_ROWS = 1024
# Values quoted in messages are cut to this many characters: a problem line stays one line.
SHOWN_VALUE_CHARS = 40
# Duplicate JSON keys named per row, at most (a hostile row can repeat thousands).
SHOWN_DUPLICATE_KEYS = 3

_UNPRINTABLE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _printable(text: str) -> str:
    """`text` safe to print on any terminal: lone surrogates and control characters escaped.

    A lone surrogate in an answer made the CLI die with UnicodeEncodeError while printing the
    very problem that named it; an ESC byte could rewrite the learner's terminal.
    """
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return _UNPRINTABLE.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def _show(value: str) -> str:
    """A value from the file, quoted for a message: JSON-escaped and cut to a readable length."""
    if len(value) > SHOWN_VALUE_CHARS:
        return json.dumps(value[:SHOWN_VALUE_CHARS]) + f"... ({len(value)} characters)"
    return json.dumps(value)


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

    def __post_init__(self) -> None:
        object.__setattr__(self, "message", _printable(self.message))

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file} {self.unit} {self.line}"
        return _printable(f"{where}: {self.message}")


class ProblemList(list):
    """Problems in line order (file-wide ones first); `total` counts every problem found, kept or not."""

    def __init__(self, problems: Iterable[DatasetProblem] = (), total: int | None = None):
        super().__init__(problems)
        self.total = len(self) if total is None else total

    @property
    def omitted(self) -> int:
        """Problems found but not kept (beyond `max_problems`)."""
        return self.total - len(self)


class DatasetError(ValueError):
    """Raised by `check_or_raise` and `read_rows`; `.problems` holds the problems kept."""

    def __init__(self, problems: Sequence[DatasetProblem]):
        self.problems = list(problems)
        count = getattr(problems, "total", len(self.problems))
        shown = [f"  {p}" for p in self.problems[:MAX_LISTED_PROBLEMS]]
        hidden = count - len(shown)
        if hidden:
            shown.append(f"  ... and {hidden} more")
        title = f"{count} dataset problem{'s' if count != 1 else ''}:"
        super().__init__("\n".join([title, *shown]))


class _Collector:
    """Keeps the `limit` problems that come first in line order, counting all of them.

    Duplicates across files and the file-wide checks are found after the rows, so problems do
    not arrive in order; a bounded heap keeps the earliest without holding the rest.
    """

    def __init__(self, limit: int | None):
        self.limit = limit
        self.total = 0
        self._heap: list[tuple[int, int, int, DatasetProblem]] = []
        self._order = itertools.count()

    def add(self, problem: DatasetProblem) -> None:
        self.total += 1
        # Negated sort key: heap[0] is the problem that sorts last, the first to drop.
        item = (-(problem.line is not None), -(problem.line or 0), -next(self._order), problem)
        if self.limit is None or len(self._heap) < self.limit:
            heapq.heappush(self._heap, item)
        elif self._heap and item > self._heap[0]:
            heapq.heapreplace(self._heap, item)

    def result(self) -> ProblemList:
        kept = [item[3] for item in sorted(self._heap, reverse=True)]
        return ProblemList(kept, self.total)


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


class _Json:
    """`json.loads` that reports instead of raising, and notices keys an object repeats.

    `json.loads` raises RecursionError on deep nesting and ValueError on an integer over
    Python's digit limit (4,300 by default), neither a JSONDecodeError; and it keeps only the
    last of two equal keys without a word, so a row with two "prompt" keys silently lost one.
    """

    def __init__(self) -> None:
        self.duplicates: list[str] = []
        self.decoder = json.JSONDecoder(object_pairs_hook=self._object)

    def _object(self, pairs: list[tuple[str, Any]]) -> dict:
        obj: dict = {}
        for key, value in pairs:
            if key in obj and key not in self.duplicates:
                self.duplicates.append(key)
            obj[key] = value
        return obj

    def loads(self, text: str) -> tuple[Any, str | None]:
        """(value, None), or (None, why it cannot be read); `duplicates` names repeated keys."""
        self.duplicates = []
        try:
            return self.decoder.decode(text), None
        except json.JSONDecodeError as err:
            return None, f"{err.msg} at column {err.colno}"
        except (RecursionError, ValueError) as err:
            return None, _unreadable(err)

    def raw_decode(self, text: str, pos: int) -> tuple[Any, int]:
        self.duplicates = []
        return self.decoder.raw_decode(text, pos)


def _unreadable(err: Exception) -> str:
    if isinstance(err, RecursionError):
        return "it is nested too deeply for a JSON reader (keep rows flat)"
    if "digits" in str(err):
        return f"a number in it has more than {sys.get_int_max_str_digits()} digits, more than a JSON reader accepts"
    return f"{type(err).__name__}: {err}"


def _duplicate_keys(keys: Sequence[str], what: str) -> str:
    shown = ", ".join(_show(key) for key in keys[:SHOWN_DUPLICATE_KEYS])
    more = f" and {len(keys) - SHOWN_DUPLICATE_KEYS} more" if len(keys) > SHOWN_DUPLICATE_KEYS else ""
    return f"{what} repeats the key {shown}{more}; JSON readers keep only the last value, so write each key once"


# --------------------------------------------------------------------------------------------
# Loading: a file -> (line, row dict) pairs, one at a time, with problems instead of exceptions


@dataclass
class _Table:
    name: str
    unit: str
    problems: _Collector
    columns: list[str] | None = None  # the header, for formats that have one (CSV, Parquet)
    rows: int = 0

    def problem(self, line: int | None, message: str, unit: str | None = None) -> None:
        self.problems.add(DatasetProblem(self.name, line, message, unit or self.unit))


def _not_utf8(raw: bytes, err: UnicodeDecodeError) -> str:
    return f"byte 0x{raw[err.start]:02x} is not valid UTF-8; save the file as UTF-8"


def _too_long(length: int, what: str = "the line") -> str:
    return (
        f"{what} is {length:,} bytes, over the limit of {MAX_RECORD_BYTES:,}; a task row is a few "
        "hundred bytes, so this is not one row"
    )


_ARRAY_HINT = " (this looks like a JSON array: name the file .json, or write one object per line)"


def _physical_lines(fh: BinaryIO) -> Iterator[tuple[int, bytes, int]]:
    """(number, bytes with its line end, length) per physical line.

    A line over MAX_RECORD_BYTES is skipped in chunks rather than held: it comes back as its
    first 64 bytes (enough for a hint) with its length negated.
    """
    number = 0
    while True:
        data = fh.readline(MAX_RECORD_BYTES + 1)
        if not data:
            return
        number += 1
        if len(data) > MAX_RECORD_BYTES:
            length, head = len(data), data[:64]
            while not data.endswith(b"\n"):
                data = fh.readline(READ_CHUNK_BYTES)
                if not data:
                    break
                length += len(data)
            yield number, head, -length
            continue
        yield number, data, len(data)


def _jsonl_records(table: _Table, fh: BinaryIO) -> Iterator[tuple[int, dict]]:
    parser = _Json()
    blank_from, blanks = 0, 0  # a run of blank lines is a problem only if a row follows it
    for number, data, length in _physical_lines(fh):
        if length < 0:  # over the cap: `data` holds only its first bytes
            hint = _ARRAY_HINT if number == 1 and data.lstrip().startswith(b"[") else ""
            table.problem(number, _too_long(-length) + hint)
            continue
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as err:
            table.problem(number, _not_utf8(data, err))
            continue
        if not text.strip():
            blank_from, blanks = (blank_from or number), blanks + 1
            continue
        for blank in range(blank_from, blank_from + blanks):
            table.problem(blank, "blank line; every line must be one JSON object")
        blank_from, blanks = 0, 0
        row, error = parser.loads(text)
        hint = _ARRAY_HINT if number == 1 and text.lstrip().startswith("[") else ""
        if error is not None:
            table.problem(number, f"not valid JSON: {error}{hint}")
            continue
        if parser.duplicates:
            table.problem(number, _duplicate_keys(parser.duplicates, "the line"))
        if not isinstance(row, dict):
            table.problem(number, f"the line is {_json_type(row)}, not a JSON object{hint}")
            continue
        yield number, row


_NOT_SPACE = re.compile(r"[^ \t\n\r]")


class _JsonArrayReader:
    """A .json file read in chunks, one array element at a time.

    `json.loads` on the whole file held the text and every parsed row at once (11x the file
    size at peak on 100 MB); this holds one chunk and one element, and gives up on an element
    over MAX_RECORD_BYTES.
    """

    def __init__(self, table: _Table, fh: BinaryIO):
        self.table, self.fh = table, fh
        self.decoder = codecs.getincrementaldecoder("utf-8")()
        self.json = _Json()
        self.buf, self.pos, self.line = "", 0, 1  # self.line: the line buf[0] is on
        self.raw_lines = 0
        self.eof = False

    def line_at(self, pos: int) -> int:
        return self.line + self.buf.count("\n", 0, pos)

    def _more(self) -> bool:
        if self.eof:
            return False
        raw = self.fh.read(READ_CHUNK_BYTES)
        try:
            text = self.decoder.decode(raw, final=not raw)
        except UnicodeDecodeError as err:
            line = self.raw_lines + err.object.count(b"\n", 0, err.start) + 1
            self.table.problem(line, _not_utf8(err.object, err), "line")
            self.eof, self.buf, self.pos = True, "", 0
            return False
        self.raw_lines += raw.count(b"\n")
        self.eof = not raw
        # Drop what was read already (only here, per chunk: per element it would copy the
        # buffer once per row).
        self.line += self.buf.count("\n", 0, self.pos)
        self.buf, self.pos = self.buf[self.pos :] + text, 0
        return True

    def peek(self) -> str | None:
        """The next character that is not white space (not consumed), or None at the end."""
        while True:
            found = _NOT_SPACE.search(self.buf, self.pos)
            if found:
                self.pos = found.start()
                return self.buf[self.pos]
            self.pos = len(self.buf)
            if not self._more():
                return None

    def value(self) -> tuple[Any, str | None]:
        """The next JSON value, or (None, why not); the reader cannot go on after a failure."""
        while True:
            start = self.pos
            try:
                value, end = self.json.raw_decode(self.buf, start)
            except json.JSONDecodeError as err:
                if len(self.buf) - start > MAX_RECORD_BYTES:
                    return None, _too_long(len(self.buf) - start, "the row")
                if self._more():
                    continue  # the value may only be cut off by the chunk boundary
                return None, f"not valid JSON: {err.msg} (line {self.line_at(err.pos)})"
            except (RecursionError, ValueError) as err:
                return None, f"not readable: {_unreadable(err)}"
            # A number can end at the chunk boundary and still go on in the next chunk.
            if end == len(self.buf) and self._more():
                continue
            if end - start > MAX_RECORD_BYTES:
                return None, _too_long(end - start, "the row")
            self.pos = end
            return value, None


def _json_records(table: _Table, fh: BinaryIO) -> Iterator[tuple[int, dict]]:
    reader = _JsonArrayReader(table, fh)
    first = reader.peek()
    if first is None:
        return  # empty (reported as an empty file) or not UTF-8 (reported by the reader)
    if first != "[":
        value, error = reader.value()
        if error is not None:
            table.problem(reader.line_at(reader.pos), error, "line")
        elif reader.peek() is not None:
            message = "not valid JSON: Extra data (one object per line is JSON Lines: name the file .jsonl)"
            table.problem(reader.line_at(reader.pos), message, "line")
        else:
            table.problem(None, f"a .json dataset must be an array of row objects, not {_json_type(value)}")
        return
    reader.pos += 1
    number = 0
    if reader.peek() == "]":
        reader.pos += 1
    else:
        while True:
            number += 1
            if reader.peek() is None:
                table.problem(reader.line_at(reader.pos), "not valid JSON: the array is not closed", "line")
                return
            line = reader.line_at(reader.pos)
            value, error = reader.value()
            if error is not None:
                table.problem(line, f"{error}; stopped reading at row {number}", "line")
                return
            if reader.json.duplicates:
                table.problem(number, _duplicate_keys(reader.json.duplicates, "the row"))
            if isinstance(value, dict):
                yield number, value
            else:
                table.problem(number, f"the row is {_json_type(value)}, not a JSON object")
            after = reader.peek()
            if after == ",":
                reader.pos += 1
                continue
            if after == "]":
                reader.pos += 1
                break
            found = "the end of the file" if after is None else repr(after)
            table.problem(
                reader.line_at(reader.pos),
                f"not valid JSON: expected ',' or ']' after row {number}, found {found}",
                "line",
            )
            return
    if reader.peek() is not None:
        table.problem(reader.line_at(reader.pos), "not valid JSON: Extra data after the array", "line")


def _csv_records(table: _Table, fh: BinaryIO) -> Iterator[tuple[int, dict]]:
    def text_lines() -> Iterator[str]:
        # Decoded line by line (UTF-8 never splits a character across '\n'); reading stops at
        # the first line that is too long or not UTF-8, since the quoting state is lost there.
        for number, data, length in _physical_lines(fh):
            if length < 0:
                table.problem(number, _too_long(-length))
                return
            try:
                yield data.decode("utf-8")
            except UnicodeDecodeError as err:
                table.problem(number, _not_utf8(data, err))
                return

    reader = csv.reader(text_lines())
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
                repeated = sorted({name for name in table.columns if table.columns.count(name) > 1})
                if repeated:
                    table.problem(line, _duplicate_keys(repeated, "the header"))
                continue
            yield line, {name: value for name, value in zip(header, fields) if name}
    except csv.Error as err:
        table.problem(reader.line_num, f"not valid CSV: {err}")


def _parquet_records(table: _Table, path: Path) -> Iterator[tuple[int, dict]]:
    # Imported here so that building and validating JSONL stays free of the pyarrow import.
    import pyarrow.parquet as pq

    number = 0
    try:
        parquet = pq.ParquetFile(path)
        table.columns = list(parquet.schema_arrow.names)
        for batch in parquet.iter_batches(batch_size=PARQUET_BATCH_ROWS):
            for row in batch.to_pylist():
                number += 1
                yield number, row
    except Exception as err:  # pyarrow raises several types for a damaged or foreign file
        where = "" if not number else f" after row {number}"
        table.problem(None, f"not a readable Parquet file{where} ({type(err).__name__}: {err})")


def _text_records(table: _Table, path: Path, fmt: str) -> Iterator[tuple[int, dict]]:
    try:
        with open(path, "rb") as fh:
            if fh.read(3) == b"\xef\xbb\xbf":
                table.problem(1, "starts with a UTF-8 byte-order mark; save the file without one", "line")
                return
            fh.seek(0)
            yield from {"jsonl": _jsonl_records, "json": _json_records, "csv": _csv_records}[fmt](table, fh)
    except OSError as err:
        table.problem(None, f"cannot be read ({type(err).__name__}: {err.strerror or err})")


def _open(path: str | Path, max_problems: int | None = MAX_KEPT_PROBLEMS) -> tuple[_Table, Iterator[tuple[int, dict]]]:
    """The file's table (problems so far) and its records, read lazily as the caller iterates."""
    if not isinstance(path, (str, Path)):
        raise TypeError(f"path must be a str or Path, got {type(path).__name__}")
    path = Path(path)
    fmt = _format_of(path)
    table = _Table(str(path), "row" if fmt in _ROW_FORMATS else "line", _Collector(max_problems))
    if fmt is None:
        known = ", ".join("." + f for f in FORMATS)
        suffix = repr(path.suffix[:SHOWN_VALUE_CHARS]) if path.suffix else "(no extension)"
        table.problem(None, f"unsupported file type {suffix}; the service reads {known}")
        return table, iter(())
    try:
        exists, regular = path.exists(), path.is_file()
    except OSError as err:  # a name too long for the file system, for one
        table.problem(None, f"cannot be read ({type(err).__name__}: {err.strerror or err})")
        return table, iter(())
    if not exists:
        table.problem(None, "file not found")
        return table, iter(())
    if not regular:
        table.problem(None, "not a regular file")
        return table, iter(())
    if fmt == "parquet":
        return table, _parquet_records(table, path)
    return table, _text_records(table, path, fmt)


class _ColumnRule:
    """The service's column rule, decided as rows stream past: `prompt`, else the first column.

    CSV and Parquet name their columns up front. JSON rows do not; the column is decided by the
    first row that has any key. A later row that brings a `prompt` key when the first did not is
    a file the service would read differently (every row through `prompt`), so it is a problem.
    """

    def __init__(self, table: _Table):
        self.table = table
        self.column: str | None = None
        self.decided_on: int | None = None
        if table.columns is not None:
            self._from_header()

    def _from_header(self) -> None:
        columns = self.table.columns or []
        self.column = PROMPT_COLUMN if PROMPT_COLUMN in columns else (columns[0] if columns else None)
        self.decided_on = 0

    def __call__(self, line: int, row: dict) -> str | None:
        if self.decided_on is None and self.table.columns is not None:
            self._from_header()  # Parquet's schema is read with its first batch
        if self.decided_on is None:
            if row:
                self.column = PROMPT_COLUMN if PROMPT_COLUMN in row else next(iter(row))
                self.decided_on = line
        elif self.column != PROMPT_COLUMN and self.decided_on and PROMPT_COLUMN in row:
            self.table.problem(
                line,
                f"this row has a 'prompt' column but {self.table.unit} {self.decided_on} has none; with "
                "'prompt' in any row the service reads 'prompt' from every row, so give every row one",
            )
        return self.column


def read_rows(path: str | Path) -> list[dict]:
    """Load a dataset file of any of the four formats into `[{"prompt": value}, ...]`.

    Follows the service's column rule: the `prompt` column, otherwise the first column. Raises
    `DatasetError` if the file cannot be read that far; it does not check the task strings.
    """
    table, records = _open(path)
    rule = _ColumnRule(table)
    rows = []
    for line, row in records:
        table.rows += 1
        column = rule(line, row)
        if column is None:
            table.problem(line, "no prompt column and no first column: the row has no values")
        elif column not in row:
            table.problem(line, f"no value in the {column!r} column")
        else:
            rows.append({PROMPT_COLUMN: row[column]})
    if not table.rows and not table.problems.total:
        table.problem(None, "the file is empty: no rows")
    if table.problems.total:
        raise DatasetError(table.problems.result())
    return rows


# --------------------------------------------------------------------------------------------
# Validation


def _task_problems(
    value: Any, column: str, answer_set: frozenset[str] | None, parser: _Json
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
    task, error = parser.loads(value)
    if error is not None:
        message = f"the {column!r} string is not JSON ({error}); it must hold the task object"
        return [message], None, None
    if not isinstance(task, dict):
        message = f"the {column!r} string decodes to {_json_type(task)}, not a task object"
        return [message], None, None
    problems = []
    if parser.duplicates:
        problems.append(_duplicate_keys(parser.duplicates, "the task object"))
    instruction = task.get("prompt")
    if not isinstance(instruction, str) or not instruction.strip():
        problems.append('the task has no instruction: "prompt" must be a non-empty string')
    answer = task.get("answer")
    if "answer" not in task:
        problems.append('the task has no "answer"')
    elif not isinstance(answer, str):
        problems.append(f"the answer is {_json_type(answer)}, not a string")
    elif len(answer) != WORD_LENGTH:
        problems.append(f"answer {_show(answer)} is not five letters (it has {len(answer)} characters)")
    elif not set(answer) <= _LETTERS:
        problems.append(f"answer {_show(answer)} has characters other than the letters a-z")
    elif answer_set is not None and answer.upper() not in answer_set:
        problems.append(f"answer {_show(answer)} is not in the answer list")
    task_id = task.get("id")
    if not isinstance(task_id, str) or not task_id:
        found = "missing" if "id" not in task else "empty" if task_id == "" else _json_type(task_id)
        problems.append(f"the task id must be a non-empty string (found {found})")
    if not problems:
        # Last word to the handler's own decoder, so that nothing this validator passes can be
        # refused at rollout time (it also enforces the handler's size limits).
        try:
            _handler_parse_task()(value)
        except (ValueError, RecursionError, UnicodeError) as err:
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


class _FirstLines:
    """Where each string was first seen: a compact hash table of (64-bit hash, line) slots.

    Duplicate answers and ids are the validator's only state that grows with the file: one
    entry per distinct value. A dict of them cost about 110 bytes an entry (a 100 MB file with a
    fresh id on every row grew the peak by 1.2x the file size); 12-byte slots at most half full
    cost 24. Strings are compared by hash only: with Python's 64-bit string hash, two distinct
    values among a million collide with odds of about 3 in 100 million.
    """

    _EMPTY = 0

    def __init__(self, capacity: int = 1024):
        self._hashes, self._lines = self._slots(capacity)
        self._size = 0

    @staticmethod
    def _slots(capacity: int) -> tuple[array, array]:
        # Repeating a one-item array allocates once; array("Q", bytes(n)) held both copies.
        return array("Q", [0]) * capacity, array("I", [0]) * capacity

    @staticmethod
    def _key(text: str) -> int:
        return (hash(text) & 0xFFFF_FFFF_FFFF_FFFF) or 1  # 0 marks an empty slot

    def _slot(self, key: int) -> int:
        mask = len(self._hashes) - 1
        index = key & mask
        hashes = self._hashes
        while hashes[index] != self._EMPTY and hashes[index] != key:
            index = (index + 1) & mask
        return index

    def get(self, text: str) -> int | None:
        index = self._slot(self._key(text))
        return self._lines[index] if self._hashes[index] != self._EMPTY else None

    def setdefault(self, text: str, line: int) -> int:
        """The line `text` was first seen on, recording `line` if this is the first time."""
        key = self._key(text)
        index = self._slot(key)
        if self._hashes[index] != self._EMPTY:
            return self._lines[index]
        self._hashes[index], self._lines[index] = key, line
        self._size += 1
        if 2 * self._size > len(self._hashes):
            self._grow()
        return line

    def _grow(self) -> None:
        # Slot by slot from the old arrays: a list of the entries first would cost about 100
        # bytes each at the very moment the table is largest (it set the peak, measured).
        old_hashes, old_lines = self._hashes, self._lines
        self._hashes, self._lines = self._slots(2 * len(old_hashes))
        for key, line in zip(old_hashes, old_lines):
            if key != self._EMPTY:
                index = self._slot(key)
                self._hashes[index], self._lines[index] = key, line

    def __len__(self) -> int:
        return self._size


@dataclass
class _Checked:
    """What validating one file yields: its problems, and where each answer and id appeared."""

    table: _Table
    answers: _FirstLines  # uppercase answer -> first line
    ids: _FirstLines


def _check_table(
    table: _Table,
    records: Iterable[tuple[int, dict]],
    batch_size: int | None,
    answers: Iterable[str] | None,
    training: _Checked | None = None,
) -> _Checked:
    """Check every record as it streams past. With `training` (a checked training file), each
    answer and id is also looked up there: validation must hold out unseen words."""
    answer_set = None if answers is None else frozenset(word.upper() for word in answers)
    checked = _Checked(table, _FirstLines(), _FirstLines())
    rule = _ColumnRule(table)
    parser = _Json()
    for line, row in records:
        table.rows += 1
        column = rule(line, row)
        if column is None:
            table.problem(line, "no prompt column and no first column: the row has no values")
            continue
        if column not in row:
            table.problem(line, f"no value in the {column!r} column")
            continue
        messages, answer, task_id = _task_problems(row[column], column, answer_set, parser)
        for message in messages:
            table.problem(line, message)
        if answer is not None:
            first = checked.answers.setdefault(answer.upper(), line)
            if first != line:
                table.problem(line, f"duplicate answer {_show(answer)} (first on {table.unit} {first})")
            elif training is not None and (seen := training.answers.get(answer.upper())) is not None:
                where = f"{training.table.name} {training.table.unit} {seen}"
                table.problem(
                    line,
                    f"answer {_show(answer.lower())} is also in the training file ({where}); "
                    "validation must hold out unseen words",
                )
        if task_id is not None:
            first = checked.ids.setdefault(task_id, line)
            if first != line:
                table.problem(line, f"duplicate id {_show(task_id)} (first on {table.unit} {first})")
            elif training is not None and (seen := training.ids.get(task_id)) is not None:
                where = f"{training.table.name} {training.table.unit} {seen}"
                table.problem(line, f"id {_show(task_id)} is also used in the training file ({where})")
    # An unreadable file already has its reason; "empty" would only add noise.
    if not table.rows and not table.problems.total:
        table.problem(None, "the file is empty: no rows")
    elif batch_size is not None and table.rows and table.rows < batch_size:
        table.problem(
            None,
            f"only {table.rows} rows, fewer than one batch of {batch_size}; "
            "the service needs at least global_batch_size rows",
        )
    return checked


def _check_batch_size(batch_size: int | None) -> None:
    if batch_size is not None:
        _check_count("batch_size", batch_size)


def _check_max_problems(max_problems: int | None) -> None:
    if max_problems is not None:
        _check_count("max_problems", max_problems)


def validate_rows(
    rows: Sequence[dict],
    *,
    name: str = "<rows>",
    batch_size: int | None = None,
    answers: Iterable[str] | None = ANSWERS,
    max_problems: int | None = MAX_KEPT_PROBLEMS,
) -> ProblemList:
    """Validate rows held in memory (as `make_splits` returns them); problems name rows 1..n."""
    _check_batch_size(batch_size)
    _check_max_problems(max_problems)
    table = _Table(name, "row", _Collector(max_problems))

    def records() -> Iterator[tuple[int, dict]]:
        for number, row in enumerate(rows, start=1):
            if isinstance(row, dict):
                yield number, row
            else:
                table.problem(number, f"the row is {_json_type(row)}, not a dict with a prompt column")

    return _check_table(table, records(), batch_size, answers).table.problems.result()


def validate_file(
    path: str | Path,
    *,
    batch_size: int | None = None,
    answers: Iterable[str] | None = ANSWERS,
    max_problems: int | None = MAX_KEPT_PROBLEMS,
) -> ProblemList:
    """The problems in one dataset file (.jsonl, .json, .csv or .parquet); [] when it is fine.

    Never raises for a bad file, and reads it as a stream: memory does not grow with the file,
    only with its distinct answers and ids. `batch_size` adds the service's minimum row count;
    `answers` is the list every answer must come from (None skips that check). At most
    `max_problems` are kept (the first in line order); `.total` counts them all.
    """
    _check_batch_size(batch_size)
    _check_max_problems(max_problems)
    table, records = _open(path, max_problems)
    return _check_table(table, records, batch_size, answers).table.problems.result()


def validate_pair(
    train_path: str | Path,
    val_path: str | Path,
    batch_size: int | None = None,
    answers: Iterable[str] | None = ANSWERS,
    max_problems: int | None = MAX_KEPT_PROBLEMS,
) -> ProblemList:
    """Both files' problems, plus words or ids shared between them.

    `batch_size` applies to both files. The service documents its minimum (one batch) for the
    training data; the course holds the validation split to the same floor, as a full batch.
    """
    _check_batch_size(batch_size)
    _check_max_problems(max_problems)
    answers = None if answers is None else list(answers)
    train_table, train_records = _open(train_path, max_problems)
    train = _check_table(train_table, train_records, batch_size, answers)
    val_table, val_records = _open(val_path, max_problems)
    val = _check_table(val_table, val_records, batch_size, answers, training=train)
    parts = [train.table.problems.result(), val.table.problems.result()]
    return ProblemList([p for part in parts for p in part], sum(part.total for part in parts))


def check_or_raise(
    train_path: str | Path,
    val_path: str | Path | None = None,
    *,
    batch_size: int | None = None,
    answers: Iterable[str] | None = ANSWERS,
) -> None:
    """Validate one file or a training/validation pair; raise `DatasetError` listing the problems."""
    if val_path is None:
        problems = validate_file(train_path, batch_size=batch_size, answers=answers)
    else:
        problems = validate_pair(train_path, val_path, batch_size=batch_size, answers=answers)
    if problems:
        raise DatasetError(problems)
