"""The reference solver (entropy-greedy, no learning) and the bare game loop it plays in.

`EntropySolver` picks, at every turn, the allowed word whose feedback pattern splits the answers
still possible into the most even buckets (the highest Shannon entropy). It is the yardstick for
the course: what a clue-respecting player with the full answer list can do. It is not a learned
policy and not a stand-in for one.

`play` runs one game with a real `WordleGame` and nothing else (no agent, no HTTP);
`mtrl_course.local.play_through_handler` runs the same solver through the real rollout handler,
in-process, via the solver-backed Strands model in `mtrl_course.local.solver_model`. The two must agree.

Speed: the solver needs every allowed guess scored against every answer once (about 11k x 3.5k
one-byte patterns). That matrix is built on first use, kept for the life of the process, and
saved under `.cache/solver/` keyed by a hash of the word lists, so later processes load it in
milliseconds instead of rebuilding it in seconds.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from wordle_agent.game import MAX_GUESSES, WordleGame, score_guess
from wordle_agent.words import ALLOWED, ANSWERS, ENTROPY

from mtrl_course import config
from mtrl_course.feedback_arrays import ALL_GREEN, encode, pattern_matrix

logger = logging.getLogger(__name__)

CACHE_DIR = config.CACHE_DIR / "solver"
# Bump when the cached file's layout or meaning changes, so stale files are never reused.
CACHE_FORMAT = 1
CACHE_PREFIX = "patterns-"
CACHE_GLOB = f"{CACHE_PREFIX}*.npy"
CACHE_FILES_KEPT = 3
N_PATTERNS = ALL_GREEN + 1
MARK_DIGITS = {"X": 0, "Y": 1, "G": 2}
# Two entropies closer than this are a tie. Without it, two words with the same bucket sizes in a
# different order can differ in the last floating-point bit, and the tie-break rules never apply.
ENTROPY_TIE = 1e-9
# At most this many possibilities left: guess one of them (a chance to win now beats information).
GUESS_POSSIBLE_AT = 2
# A guess cache entry is one (history -> word) pair; the bound keeps a long batch from growing it.
MEMO_LIMIT = 50_000
SPLIT_FILES = {"validation": config.VALIDATION_FILE, "train": config.TRAIN_FILE}
# The instruction in payloads built here; the solver ignores it, the handler only passes it on.
HANDLER_INSTRUCTION = "Play Wordle: guess the hidden five-letter word in at most six guesses."
HANDLER_ID_PREFIX = "solver-"
# The SDK warns on every in-process call without job metadata; here that is the intent.
SDK_FEEDBACK_LOGGER = "sagemaker.train.rft.feedback"
SDK_NO_TRAJECTORY = "No trajectory_id in metadata"

Clue = tuple[str, Sequence[str]]

_MATRICES: dict[str, np.ndarray] = {}
_MATRICES_LOCK = threading.Lock()


def marks_to_code(marks: Sequence[str] | str) -> int:
    """The pattern integer (see `mtrl_course.feedback_arrays`) for five G/Y/X marks."""
    letters = [str(m).strip().upper() for m in marks]
    if len(letters) != 5 or any(m not in MARK_DIGITS for m in letters):
        raise ValueError(f"marks must be five of G, Y, X; got {marks!r}")
    return sum(MARK_DIGITS[m] * 3**i for i, m in enumerate(letters))


def _lists_key(allowed: Sequence[str], answers: Sequence[str]) -> str:
    digest = hashlib.sha256()
    digest.update(f"format {CACHE_FORMAT}\n".encode())
    for name, words in (("allowed", allowed), ("answers", answers)):
        # The SHA-256 of each list's text, as written to the word files, one word a line.
        text = "".join(f"{w}\n" for w in words).encode("ascii")
        digest.update(f"{name} {hashlib.sha256(text).hexdigest()}\n".encode())
    return digest.hexdigest()[:16]


def _load_or_build_matrix(allowed: Sequence[str], answers: Sequence[str], cache_dir: Path | None) -> np.ndarray:
    key = _lists_key(allowed, answers)
    with _MATRICES_LOCK:
        if key in _MATRICES:
            return _MATRICES[key]
        path = cache_dir / f"{CACHE_PREFIX}{key}.npy" if cache_dir is not None else None
        matrix = None
        if path is not None and path.is_file():
            try:
                matrix = np.load(path)
            except (OSError, ValueError) as exc:
                logger.warning("ignoring unreadable solver cache %s (%s); rebuilding", path, exc)
            if matrix is not None and matrix.shape != (len(allowed), len(answers)):
                logger.warning("ignoring solver cache %s with shape %s", path, matrix.shape)
                matrix = None
        if matrix is None:
            matrix = pattern_matrix(allowed, answers)
            if path is not None:
                _save_quietly(path, matrix)
        matrix.setflags(write=False)
        _MATRICES[key] = matrix
        return matrix


def _save_quietly(path: Path, matrix: np.ndarray) -> None:
    # A read-only checkout must still play: the cache only saves time.
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{threading.get_ident()}.tmp")
        with open(tmp, "wb") as fh:
            np.save(fh, matrix)
        tmp.replace(path)  # atomic, so a concurrent reader never sees half a file
        # Each word-list change leaves a 20-40 MB file behind; keep only the newest few.
        cached = sorted(path.parent.glob(CACHE_GLOB), key=lambda p: p.stat().st_mtime, reverse=True)
        for stale in cached[CACHE_FILES_KEPT:]:
            stale.unlink(missing_ok=True)
    except OSError as exc:
        logger.warning("could not save the solver cache to %s (%s)", path, exc)


def _row_entropies(patterns: np.ndarray) -> np.ndarray:
    """Entropy in bits of each row's pattern distribution (rows are guesses, columns answers).

    With n columns and bucket sizes c, H = log2(n) - sum(c * log2(c)) / n, and c * log2(c) comes
    from a lookup table over 0..n. One `bincount` plus one table gather is about 10x faster than
    `feedback_arrays.entropies` (`add.at`, then logs of every cell) on the second turn's block of 11k
    rows by a few hundred columns, which is the solver's hot spot.
    """
    n_rows, n_cols = patterns.shape
    if n_cols == 0:
        return np.zeros(n_rows)
    offsets = np.arange(n_rows, dtype=np.int64)[:, None] * N_PATTERNS
    counts = np.bincount((offsets + patterns).ravel(), minlength=n_rows * N_PATTERNS)
    sizes = np.arange(n_cols + 1, dtype=float)
    c_log_c = np.zeros(n_cols + 1)
    c_log_c[1:] = sizes[1:] * np.log2(sizes[1:])
    return np.log2(n_cols) - c_log_c[counts].reshape(n_rows, N_PATTERNS).sum(axis=1) / n_cols


class EntropySolver:
    """Entropy-greedy Wordle solver over a fixed answer list (the course's reference solver).

    Deterministic: ties on entropy go to words that are still possible answers, then to the
    alphabetically first. Thread-safe after construction (the shared matrix is read-only).
    """

    def __init__(
        self,
        answers: Iterable[str] = ANSWERS,
        allowed: Iterable[str] = ALLOWED,
        cache_dir: Path | None = CACHE_DIR,
    ) -> None:
        self.answers: list[str] = sorted({w.strip().upper() for w in answers})
        # Answers are always guessable, whatever the allowed list says.
        self.allowed: list[str] = sorted({w.strip().upper() for w in allowed} | set(self.answers))
        if not self.answers:
            raise ValueError("EntropySolver needs at least one answer word")
        encode(self.allowed)  # fails early, naming the rule, on a word that is not five letters
        self._cache_dir = cache_dir
        self._row_of = {w: i for i, w in enumerate(self.allowed)}
        self._answer_set = frozenset(self.answers)
        self._is_answer = np.array([w in self._answer_set for w in self.allowed])
        self._matrix: np.ndarray | None = None
        self._opener: str | None = None
        self._memo: dict[tuple[tuple[str, int], ...], str] = {}
        self._lock = threading.Lock()

    @property
    def matrix(self) -> np.ndarray:
        """Patterns of every allowed guess (rows, alphabetical) against every answer (columns)."""
        if self._matrix is None:
            self._matrix = _load_or_build_matrix(self.allowed, self.answers, self._cache_dir)
        return self._matrix

    @property
    def opener(self) -> str:
        """The first guess: top entropy over all answers (from ENTROPY for the packaged lists)."""
        if self._opener is None:
            packaged = self.answers == sorted(ANSWERS) and set(self.allowed) == set(ENTROPY)
            if packaged:
                scores = np.array([ENTROPY[w] for w in self.allowed])
            else:
                scores = _row_entropies(self.matrix)
            self._opener = self._best(scores, self._is_answer, excluded=set())
        return self._opener

    def possibilities(self, history: Sequence[Clue]) -> list[str]:
        """The answers consistent with every (guess, marks) clue so far."""
        mask = self._consistent(self._clue_codes(history))
        return [self.answers[i] for i in np.flatnonzero(mask)]

    def next_guess(self, history: Sequence[Clue]) -> str:
        """The next guess after `history`: (guess, marks) pairs, marks like ["G", "Y", "X", ...]."""
        clues = self._clue_codes(history)
        if not clues:
            return self.opener
        key = tuple(clues)
        cached = self._memo.get(key)
        if cached is not None:
            return cached
        guess = self._choose(clues)
        with self._lock:
            if len(self._memo) < MEMO_LIMIT:
                self._memo[key] = guess
        return guess

    # ------------------------------------------------------------------------------- internals
    def _clue_codes(self, history: Sequence[Clue]) -> list[tuple[str, int]]:
        clues = []
        for item in history:
            try:
                word, marks = item
            except (TypeError, ValueError):
                raise ValueError(f"a clue must be a (guess, marks) pair; got {item!r}") from None
            word = str(word).strip().upper()
            if len(word) != 5 or not word.isascii() or not word.isalpha():
                raise ValueError(f"a clue's guess must be five letters A-Z; got {word!r}")
            clues.append((word, marks_to_code(marks)))
        return clues

    def _guess_row(self, word: str) -> np.ndarray:
        row = self._row_of.get(word)
        if row is not None:
            return self.matrix[row]
        # A guess outside the allowed list (the game accepts it with a penalty) still carries
        # information; score it on the fly.
        return pattern_matrix([word], self.answers)[0]

    def _consistent(self, clues: Sequence[tuple[str, int]]) -> np.ndarray:
        mask = np.ones(len(self.answers), dtype=bool)
        for word, code in clues:
            mask &= self._guess_row(word) == code
        return mask

    def _choose(self, clues: Sequence[tuple[str, int]]) -> str:
        guessed = {w for w, _ in clues}
        remaining = np.flatnonzero(self._consistent(clues))
        if remaining.size == 0:
            return self._fallback(clues, guessed)
        if remaining.size <= GUESS_POSSIBLE_AT:
            return self.answers[remaining[0]]
        scores = _row_entropies(self.matrix[:, remaining])
        possible = np.zeros(len(self.allowed), dtype=bool)
        possible[[self._row_of[self.answers[i]] for i in remaining]] = True
        return self._best(scores, possible, excluded=guessed)

    def _fallback(self, clues: Sequence[tuple[str, int]], guessed: set[str]) -> str:
        """No answer fits the clues (the secret word is not in the answer list): widen the pool.

        The same entropy rule, over the allowed words that fit; only when even none of those fit
        (contradictory clues) does it fall back to the best opener not yet tried.
        """
        pool = np.array(self.allowed)
        codes = pattern_matrix([w for w, _ in clues], encode(self.allowed))
        fits = np.all(codes == np.array([c for _, c in clues], dtype=np.uint8)[:, None], axis=0)
        candidates = pool[fits]
        if candidates.size == 0:
            scores = np.array([ENTROPY.get(w, 0.0) for w in self.allowed])
            return self._best(scores, self._is_answer, excluded=guessed)
        if candidates.size <= GUESS_POSSIBLE_AT:
            return str(candidates[0])
        scores = _row_entropies(pattern_matrix(self.allowed, list(candidates)))
        return self._best(scores, fits, excluded=guessed)

    def _best(self, scores: np.ndarray, preferred: np.ndarray, excluded: set[str]) -> str:
        scores = scores.astype(float).copy()
        for word in excluded:
            if word in self._row_of:
                scores[self._row_of[word]] = -np.inf
        top = scores >= scores.max() - ENTROPY_TIE
        both = top & preferred
        # Rows are alphabetical, so the first index is the alphabetical tie-break.
        return self.allowed[int(np.flatnonzero(both if both.any() else top)[0])]


# ------------------------------------------------------------------------------ the bare loop
@dataclass(frozen=True)
class GameRecord:
    """One finished game: what was guessed and what the environment paid for it."""

    answer: str
    guesses: tuple[str, ...]
    solved: bool
    n_guesses: int
    reward: float
    score: float


def play(answer: str, solver: EntropySolver | None = None) -> GameRecord:
    """Play one game with a real `WordleGame`: solver and game only (no agent, no HTTP)."""
    solver = solver or default_solver()
    game = WordleGame(answer)
    history: list[tuple[str, list[str]]] = []
    # The game ends itself after six guesses; the bound only stops a broken game from looping.
    for _ in range(MAX_GUESSES):
        if game.over:
            break
        guess = solver.next_guess(history)
        game.guess(guess)
        history.append((guess, score_guess(guess, answer.strip().upper())))
    return GameRecord(
        answer=answer.strip().upper(),
        guesses=tuple(game.guesses),
        solved=bool(game.solved),
        n_guesses=len(game.guesses),
        reward=float(game.final_reward()),
        score=float(game.score),
    )


_DEFAULT_SOLVER: EntropySolver | None = None


def default_solver() -> EntropySolver:
    """One process-wide solver over the packaged word lists (its memo makes batches fast)."""
    global _DEFAULT_SOLVER
    if _DEFAULT_SOLVER is None:
        _DEFAULT_SOLVER = EntropySolver()
    return _DEFAULT_SOLVER


def results_frame(rows: list[dict]) -> pd.DataFrame:
    columns = [*GameRecord.__dataclass_fields__, "seconds"]
    frame = pd.DataFrame(rows, columns=columns)
    frame["guesses"] = frame["guesses"].map(" ".join)
    return frame


def play_many(words: Iterable[str], solver: EntropySolver | None = None) -> pd.DataFrame:
    """Play each word with the bare loop: one row per word (guesses space-separated, seconds)."""
    solver = solver or default_solver()
    solver.matrix  # build or load it before the clock starts, so per-game times are comparable
    rows = []
    for word in words:
        start = time.perf_counter()
        record = play(word, solver)
        rows.append({**asdict(record), "seconds": time.perf_counter() - start})
    return results_frame(rows)


def summarise(df: pd.DataFrame) -> dict:
    """Solve rate, mean guesses (solved games), mean reward and the guess-count histogram."""
    solved = df[df["solved"]] if len(df) else df
    histogram = {n: int((solved["n_guesses"] == n).sum()) for n in range(1, MAX_GUESSES + 1)}
    return {
        "games": int(len(df)),
        "solve_rate": float(df["solved"].mean()) if len(df) else 0.0,
        "mean_guesses": float(solved["n_guesses"].mean()) if len(solved) else float("nan"),
        "mean_reward": float(df["reward"].mean()) if len(df) else float("nan"),
        "guess_histogram": histogram,
        "unsolved": int(len(df) - len(solved)),
    }


# --------------------------------------------------------------------------------- word lists
def load_split_words(split: str = "validation", path: Path | None = None) -> list[str]:
    """The secret words of a dataset split, from its JSONL rows (`{"prompt": "<task json>"}`)."""
    if path is None:
        if split not in SPLIT_FILES:
            raise ValueError(f"unknown split {split!r}; choose one of {sorted(SPLIT_FILES)}")
        path = SPLIT_FILES[split]
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist; run `make dataset` to write it")
    words = []
    with open(path, encoding="utf-8") as fh:
        for number, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                task = json.loads(json.loads(line)["prompt"])
                words.append(str(task["answer"]).strip().upper())
            except (ValueError, KeyError, TypeError) as exc:
                raise ValueError(f"{path}:{number}: not a task row with an answer ({exc})") from None
    return words


# ----------------------------------------------------------------------- through the handler
class _DropRecords(logging.Filter):
    def __init__(self, prefix: str) -> None:
        super().__init__()
        self.prefix = prefix

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(self.prefix)


@contextlib.contextmanager
def quiet_missing_metadata() -> Iterator[None]:
    target = logging.getLogger(SDK_FEEDBACK_LOGGER)
    drop = _DropRecords(SDK_NO_TRAJECTORY)
    target.addFilter(drop)
    try:
        yield
    finally:
        target.removeFilter(drop)


def handler_payload(answer: str, index: int = 0) -> dict:
    """A service-shaped payload for one game, without job metadata (nothing is reported)."""
    task = {
        "prompt": HANDLER_INSTRUCTION,
        "answer": answer.strip().upper(),
        "id": f"{HANDLER_ID_PREFIX}{index}",
    }
    return {"prompt": json.dumps(task)}
