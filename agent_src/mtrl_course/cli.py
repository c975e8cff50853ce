"""`mtrl`: the course's steps from a terminal, for instructors, CI and anyone who prefers a shell.

Every subcommand calls the same toolkit functions the notebooks call, and prints a table.
Heavy imports happen inside each command so `mtrl --help` stays instant.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path


def _print_table(rows, columns: Sequence[str] | None = None) -> None:
    import pandas as pd

    frame = rows if isinstance(rows, pd.DataFrame) else pd.DataFrame(rows, columns=columns)
    with pd.option_context("display.width", 140, "display.max_columns", 30):
        print(frame.to_string(index=False))


# ---------------------------------------------------------------------------------------- words
def _words_build(args: argparse.Namespace) -> int:
    from mtrl_course import wordlists

    summary = wordlists.build(scowl_dir=Path(args.scowl_dir))
    _print_table([{"item": k, "value": v} for k, v in summary.items() if not isinstance(v, dict)])
    return 0


def _words_verify(args: argparse.Namespace) -> int:
    from mtrl_course import wordlists
    from wordle_agent import words

    problems = wordlists.verify()
    if problems:
        print("word data: FAILED")
        for p in problems:
            print(f"  - {p}")
        return 1
    print(
        f"word data: OK ({len(words.ANSWERS)} answers, {len(words.ALLOWED)} allowed guesses, "
        f"{len(words.ENTROPY)} entropy values; checksums match PROVENANCE.json)"
    )
    return 0


def _words_hash(args: argparse.Namespace) -> int:
    from mtrl_course import wordlists

    return int(wordlists.main(["hash", *args.words]) or 0)


# -------------------------------------------------------------------------------------- dataset
def _dataset_make(args: argparse.Namespace) -> int:
    from mtrl_course import dataset

    summary = dataset.make_dataset(
        out_dir=Path(args.out), n_train=args.train, n_val=args.val, seed=args.seed
    )
    _print_table([{"item": k, "value": v} for k, v in summary.items()])
    return 0


def _dataset_validate(args: argparse.Namespace) -> int:
    from mtrl_course import config, dataset

    files = [Path(f) for f in args.files] or [config.TRAIN_FILE, config.VALIDATION_FILE]
    if len(files) == 2 and not args.files or args.pair:
        problems = dataset.validate_pair(files[0], files[1], batch_size=args.batch_size)
    else:
        problems = [p for f in files for p in dataset.validate_file(f, batch_size=args.batch_size)]
    if problems:
        print(f"{len(problems)} problem(s):")
        for p in problems:
            print(f"  - {p}")
        return 1
    print("dataset: OK (" + ", ".join(str(f) for f in files) + ")")
    return 0


def _dataset_export(args: argparse.Namespace) -> int:
    from mtrl_course import config, dataset

    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for src in (config.TRAIN_FILE, config.VALIDATION_FILE):
        rows = dataset.read_rows(src)
        target = out_dir / f"{src.stem}.{args.format}"
        dataset.export(rows, target, args.format)
        written.append({"source": src.name, "written": str(target), "rows": len(rows)})
    _print_table(written)
    return 0


# ----------------------------------------------------------------------------------------- play
def _play(args: argparse.Namespace) -> int:
    if args.batch:
        from mtrl_course import solver
        from mtrl_course.course import split_words

        words = split_words(args.split)[: args.limit] if args.limit else split_words(args.split)
        frame = solver.play_many(words)
        _print_table(frame)
        print()
        _print_table([solver.summarise(frame)])
        return 0
    return _play_interactive(args.word)


def _play_interactive(word: str | None) -> int:
    import random

    from wordle_agent.game import WordleGame
    from wordle_agent.words import ANSWERS

    answer = (word or random.SystemRandom().choice(ANSWERS)).upper()
    game = WordleGame(answer)
    print("Wordle: guess the hidden five-letter word in six tries (Ctrl-D to give up).")
    while not game.over:
        try:
            guess = input("guess> ")
        except EOFError:
            print()
            break
        print(game.guess(guess))
    print(f"answer: {answer}; reward: {game.final_reward():+.3f} (shaping score {game.score:+.1f})")
    return 0


# --------------------------------------------------------------------------------------- course
def _course(args: argparse.Namespace) -> int:
    from mtrl_course import course

    return course.run(limit=args.limit)


# ------------------------------------------------------------------------------------ notebooks
def _notebooks_run(args: argparse.Namespace) -> int:
    from mtrl_course import notebooks_run

    return notebooks_run.run_command(args.notebooks or None, timeout=args.timeout, store=not args.no_store)


def _notebooks_sync(args: argparse.Namespace) -> int:
    from mtrl_course import notebooks_run

    return notebooks_run.sync_command(check=args.check)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mtrl", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    words = sub.add_parser("words", help="build or verify the SCOWL word data").add_subparsers(
        dest="action", required=True
    )
    p = words.add_parser("build", help="regenerate the word files from Debian's scowl lists")
    p.add_argument("--scowl-dir", default="/usr/share/dict/scowl")
    p.set_defaults(func=_words_build)
    p = words.add_parser("verify", help="check the committed word files against their provenance")
    p.set_defaults(func=_words_verify)
    p = words.add_parser("hash", help="print the denylist line for a word (reads stdin if none given)")
    p.add_argument("words", nargs="*")
    p.set_defaults(func=_words_hash)

    ds = sub.add_parser("dataset", help="make, validate or export the training data").add_subparsers(
        dest="action", required=True
    )
    p = ds.add_parser("make", help="write data/training-data.jsonl and data/validation-data.jsonl")
    p.add_argument("--train", type=int, default=640)
    p.add_argument("--val", type=int, default=128)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--out", default=str(_default_data_dir()))
    p.set_defaults(func=_dataset_make)
    p = ds.add_parser("validate", help="check dataset files the way the service will read them")
    p.add_argument("files", nargs="*", help="files to check (default: the committed pair)")
    p.add_argument("--pair", action="store_true", help="treat two files as train + validation")
    p.add_argument("--batch-size", type=int, default=None, help="require at least this many rows")
    p.set_defaults(func=_dataset_validate)
    p = ds.add_parser("export", help="export the committed datasets to another format")
    p.add_argument("--format", choices=["jsonl", "parquet", "csv", "json"], default="jsonl")
    p.add_argument("--out", default="build/datasets")
    p.set_defaults(func=_dataset_export)

    p = sub.add_parser("play", help="play Wordle in the terminal, or a batch with the reference solver")
    p.add_argument("--word", help="the secret word (default: a random answer)")
    p.add_argument("--batch", action="store_true", help="play a batch with the reference solver")
    p.add_argument("--split", choices=["validation", "train"], default="validation")
    p.add_argument("--limit", type=int, default=None)
    p.set_defaults(func=_play)

    p = sub.add_parser("course", help="the course's main job, offline (what `make course` runs)")
    p.add_argument("--limit", type=int, default=None, help="play only this many held-out games")
    p.set_defaults(func=_course)

    nbs = sub.add_parser("notebooks", help="execute the notebooks offline, or sync their banners").add_subparsers(
        dest="action", required=True
    )
    p = nbs.add_parser("run", help="execute notebooks in fresh offline kernels and store their outputs")
    p.add_argument("notebooks", nargs="*", help="numbers (05), file names or _template (default: all, then the template)")
    p.add_argument("--timeout", type=int, default=600, help="seconds allowed per cell")
    p.add_argument("--no-store", action="store_true", help="only check that they run; leave the files alone")
    p.set_defaults(func=_notebooks_run)
    p = nbs.add_parser("sync", help="rewrite banners, next cells and the README table from the catalog")
    p.add_argument("--check", action="store_true", help="only report what is out of date (exit 1 if anything is)")
    p.set_defaults(func=_notebooks_sync)
    return parser


def _default_data_dir() -> Path:
    from mtrl_course.config import DATA_DIR

    return DATA_DIR


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
