"""Peak memory, time and output size of `mtrl dataset validate` on large hostile files.

Issue 12 measured the validator on a 100 MB file: about two million problem lines (200 MB of
output) and a peak of 11x the file size in memory. This rebuilds such files and runs the CLI on
each in a fresh process, reading the child's peak RSS from the kernel (wait4's ru_maxrss):

    python benchmarks/bench_dataset_validate.py                     # 100 MB files, this checkout
    python benchmarks/bench_dataset_validate.py --size-mb 20 --code ../old/agent_src

The files: the committed training split copied until the size is reached (every row after the
first 640 repeats an answer and an id: two problems a row); the same rows with a fresh id on
every row (the id map grows with the file: the one state the validator must keep); that file as
one JSON array (.json); and one JSON array written on a single line of a .jsonl file. The
baseline row is the committed 80 KB file: the interpreter and its imports.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TRAIN = REPO / "data" / "training-data.jsonl"
MB = 1024 * 1024


def build_files(folder: Path, size: int) -> dict[str, Path]:
    lines = TRAIN.read_text(encoding="utf-8").splitlines()  # 80 KB
    files = {"copies.jsonl": folder / "copies.jsonl", "fresh-ids.jsonl": folder / "fresh-ids.jsonl"}
    with (
        open(files["copies.jsonl"], "w", encoding="utf-8") as copies,
        open(files["fresh-ids.jsonl"], "w", encoding="utf-8") as fresh,
    ):
        written, n = 0, 0
        while written < size:
            line = lines[n % len(lines)]
            copies.write(line + "\n")
            task = json.loads(json.loads(line)["prompt"])
            task["id"] = f"row_{n:09d}"
            fresh_line = json.dumps({"prompt": json.dumps(task)})
            fresh.write(fresh_line + "\n")
            written += len(line) + 1
            n += 1
    # Streamed, never held: a child's peak RSS as wait4 reports it starts from the parent's
    # at fork time (Linux keeps the high-water mark across exec), so the parent stays small.
    files["array.json"] = folder / "array.json"
    files["one-line-array.jsonl"] = folder / "one-line-array.jsonl"
    with (
        open(files["fresh-ids.jsonl"], encoding="utf-8") as source,
        open(files["array.json"], "w", encoding="utf-8") as array,
        open(files["one-line-array.jsonl"], "w", encoding="utf-8") as one_line,
    ):
        array.write("[\n")
        one_line.write("[")
        for n, row in enumerate(source):
            array.write((",\n" if n else "") + row.rstrip("\n"))
            one_line.write((", " if n else "") + row.rstrip("\n"))
        array.write("\n]\n")
        one_line.write("]\n")
    return files


def measure(path: Path, code: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(code), os.environ.get("PYTHONPATH", "")])}
    with tempfile.TemporaryFile() as out:
        start = time.perf_counter()
        child = subprocess.Popen(
            [sys.executable, "-m", "mtrl_course.cli", "dataset", "validate", str(path)],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
        )
        _, status, usage = os.wait4(child.pid, 0)
        seconds = time.perf_counter() - start
        out.seek(0)
        head = out.read(200).decode(errors="replace").splitlines()[:1]
        output_bytes = out.seek(0, os.SEEK_END)
    return {
        "file": path.name,
        "size MB": round(path.stat().st_size / MB, 1),
        "peak RSS MB": round(usage.ru_maxrss / 1024, 1),  # Linux reports KiB
        "seconds": round(seconds, 1),
        "output bytes": output_bytes,
        "first line": (head[0] if head else "")[:60],
        "exit": os.waitstatus_to_exitcode(status),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=float, default=100.0)
    parser.add_argument("--code", type=Path, default=REPO / "agent_src", help="the agent_src folder to run")
    parser.add_argument("--only", nargs="*", default=None, help="file names to run (default: all)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mtrl-bench-validate-") as tmp:
        files = build_files(Path(tmp), int(args.size_mb * MB))
        rows = [measure(TRAIN, args.code)]
        rows[0]["file"] = "baseline (committed file)"
        for name, path in files.items():
            if args.only is None or name in args.only:
                rows.append(measure(path, args.code))
    base = rows[0]["peak RSS MB"]
    for row in rows:
        row["RSS over baseline / size"] = (
            round((row["peak RSS MB"] - base) / row["size MB"], 2) if row["size MB"] >= 1 else ""
        )
        print(json.dumps(row))


if __name__ == "__main__":
    main()
