"""What `make course` runs: the course's main job, offline, from a terminal.

Each stage prints a short table and the numbers it measured. Stages that need later parts of the
course (offline training, the notebooks) are added here as those parts land.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

from mtrl_course import config

BATCH_SIZE = 128  # the service's default global_batch_size; both splits must hold at least one


def split_words(split: str = "validation") -> list[str]:
    """The secret words of a committed dataset split, in file order (uppercase)."""
    path = {"validation": config.VALIDATION_FILE, "train": config.TRAIN_FILE}[split]
    words = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                words.append(json.loads(json.loads(line)["prompt"])["answer"].upper())
    return words


def _banner(title: str) -> None:
    print()
    print(title)
    print("-" * len(title))


def stage_word_data() -> bool:
    from mtrl_course import wordlists
    from wordle_agent import words

    _banner("1. Word data (SCOWL)")
    problems = wordlists.verify()
    for p in problems:
        print(f"  PROBLEM: {p}")
    provenance = json.loads((words.DATA_DIR / "PROVENANCE.json").read_text())
    version = provenance.get("scowl_version") or provenance.get("source", {}).get("version", "?")
    print(f"  answers: {len(words.ANSWERS)}   allowed guesses: {len(words.ALLOWED)}   SCOWL {version}")
    top = sorted(words.ENTROPY.items(), key=lambda kv: (-kv[1], kv[0]))[:5]
    print("  best openers (bits): " + ", ".join(f"{w} {h:.2f}" for w, h in top))
    print("  checksums: " + ("OK" if not problems else "FAILED"))
    return not problems


def stage_datasets() -> bool:
    from mtrl_course import dataset

    _banner("2. Datasets")
    problems = dataset.validate_pair(
        config.TRAIN_FILE, config.VALIDATION_FILE, batch_size=BATCH_SIZE
    )
    for p in problems:
        print(f"  PROBLEM: {p}")
    train, val = split_words("train"), split_words("validation")
    print(
        f"  {config.TRAIN_FILE.relative_to(config.REPO_ROOT)}: {len(train)} rows "
        f"({len(train) // BATCH_SIZE} full batches of {BATCH_SIZE})"
    )
    print(f"  {config.VALIDATION_FILE.relative_to(config.REPO_ROOT)}: {len(val)} rows")
    print(f"  overlap between splits: {len(set(train) & set(val))} words")
    print("  validator: " + ("OK" if not problems else "FAILED"))
    return not problems


def stage_reference_games(limit: int | None = None) -> bool:
    from mtrl_course import solver

    _banner("3. Held-out games through the real rollout handler (reference solver as the policy)")
    words = split_words("validation")[:limit] if limit else split_words("validation")
    start = time.perf_counter()
    frame = solver.play_through_handler(words)
    elapsed = time.perf_counter() - start
    summary = solver.summarise(frame)
    print(
        "  The policy here is the entropy-greedy reference solver, not a learned model: it is the\n"
        "  yardstick for the stand-in policy trained later (a strong baseline, not an optimum)."
    )
    print(f"  games: {len(frame)} in {elapsed:.1f} s ({len(frame) / elapsed:.1f} games/s)")
    print(f"  solve rate: {summary['solve_rate']:.1%}")
    print(f"  mean guesses (solved games): {summary['mean_guesses']:.2f}")
    print(f"  mean reward: {summary['mean_reward']:+.3f}")
    hist = summary.get("guess_histogram", {})
    if hist:
        print("  guesses to solve: " + ", ".join(f"{k}: {v}" for k, v in sorted(hist.items())))
    return summary["solve_rate"] == 1.0


def run(limit: int | None = None) -> int:
    logging.basicConfig(level=logging.WARNING)
    print(f"MTRL Wordle course, mode: {config.MODE.value}")
    ok = stage_word_data()
    ok &= stage_datasets()
    ok &= stage_reference_games(limit)
    print()
    print("course: OK" if ok else "course: FAILED (see the problems above)")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(run())
