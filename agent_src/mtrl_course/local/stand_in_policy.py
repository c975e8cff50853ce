"""The stand-in policy: a small learnable Wordle player behind the offline Job Runtime.

Offline, nothing can serve gpt-oss-20b, so the Job Runtime emulator answers the agent's chat
completions with this policy instead. It is labelled "stand-in policy" everywhere it appears;
its numbers are its own and say nothing about any real model.

What it reads. Only the request: the conversation's messages (the `guess_word` tool's answers
are parsed back into (guess, marks) clues by `mtrl_course.local.transcript`), the tools offered,
`temperature` and `reasoning_effort` (`top_p` is accepted and ignored; `max_tokens` cuts a reply
that would be longer, see "Token cap" below). It never sees the secret word. Like a language model that
knows English, it knows the word lists (`wordle_agent.words`). Its random draws come from the
trajectory the service opened (the emulator passes it along): a key of integers the runner puts
in the trajectory's info (seed, phase, step, prompt row, rollout index, attempt) plus the turn
number (the trajectory's count of earlier sampling requests), so
the same conversation in the same trajectory slot always gets the same answer, whatever the
thread timing.

How it plays one turn.
1. Candidates: a few words it "weighs", drawn deterministically: one in `CONSISTENT_SHARE` (at
   least `MIN_CONSISTENT`) from the answers that still fit every clue, one in `OBSCURE_SHARE`
   (at least one) from dictionary words outside the answer list that fit the clues too (words a
   model knows but that are never the secret), the rest information probes (half from the 1,000
   best openers, half from the whole allowed list). Reasoning effort
   sets how many: see `EFFORTS`. Clues come from the tool's answers and, for a curriculum game
   seeded with `prior_guesses`, from the instruction (`transcript.seeded_clues`).
2. Features of each candidate (`FEATURE_NAMES`): could it still be the answer; how much of the
   remaining uncertainty its feedback would resolve (entropy over the answers still possible,
   divided by log2 of their number); how many of its letters are new; how many known-gray
   letters it uses; how many known greens it breaks; whether it repeats an earlier guess;
   whether it is a common (answer-list) word; its chance of solving right now; two
   interactions with the turn (fits_clues and information times the share of guesses still
   ahead); and whether it agrees with every clue, answer-list word or not.
3. Logits = features . (base weights + adapter weights), plus self-verification's offsets at
   higher effort; softmax at the request temperature, sampled (temperature 0: argmax, first
   index on ties).
4. Greedy decoding can loop (temperature 0 only, see below): the reply is then a repetition that
   runs to `max_tokens` and makes no call.
5. A format head picks how the answer is written: a real tool call, the call written as raw
   text in one of the three formats the walkthrough saw (`wordle_agent.recovery`), or no call.
   Its base logits strongly favour the tool call.

The base weights are a deliberately poor prior (it anchors on letters it has already seen, even
known-gray ones, and barely checks the clues). GRPO only trains the adapter (`Adapter`), the
analogue of a LoRA adapter: the base never changes and the adapter is saved as the job's model
package (a small JSON file).

Each mechanism below is an analogue of a cause the walkthrough or the literature names, built
for its direction, never tuned to reproduce the walkthrough's figures; its numbers are the
stand-in's own (measured in experiments/standin_lessons.py).

Greedy decoding can fail (degenerate repetition). Greedy decoding of a language model can fall
into a repetition loop (Holtzman et al., "The Curious Case of Neural Text Degeneration", 2020);
a reasoning model that cannot settle between options keeps re-deriving them until it runs out of
tokens, without ever calling the tool, and sampling escapes such loops. The analogue: at
temperature 0 a turn loops with chance `Effort.loop_rate` x (indecision)^`LOOP_POWER`, where
indecision is the entropy of the policy's own temperature-1 distribution over its proposals as a
share of its maximum. The draw is part of the turn's seeded random stream, so the same
conversation in the same slot loops every time (greedy is deterministic); at temperature > 0 it
never loops. A looping reply is the reasoning followed by the same hesitation repeated up to the
request's `max_tokens` pieces, with finish reason "length" (billed as such: the token analogue
sees it). The agent then ends the attempt without a call: before any guess the rollout retries
once with "call the tool now" (a new turn, so a new draw); mid-game the game simply ends
unsolved. Training sharpens the policy and loops become rarer, but two answers that both fit
the clues and look alike keep it undecided, so greedy validation levels off below the sampled
solve rate: the walkthrough's "the curve is not the serving number".

Reasoning effort (more for the base). Effort sets the candidates weighed, the reasoning text
written, how many of the best proposals are checked against the clues (`Effort.verified`:
self-verification; one that uses a known-gray letter, moves a known green or leaves out a known
yellow loses `VERIFY_PENALTY` of logit) and how easily a greedy decode loops
(`Effort.loop_rate`). The base's favourite proposals often break clues and the trained policy's
rarely do, so verification helps the base far more: the analogue of "medium effort adds 46
points to the base and 15 to the trained model". More effort still costs more tokens.

Capacity to learn the wrong thing. An obscure word that fits the clues is a clean guess (no
violation, new letters, eliminations) that can never solve: the legacy summed reward pays for
each one (every extra clean guess adds shaping points, so slower solves score more), the tiered
reward charges a tenth of a point for the delay. The `consistent` and `common_word` features and
the two turn interactions let a linear policy represent "play clean non-answers first, commit
late", so training can drift toward what each reward pays. From the base, every
reward first teaches "solve" and the gradients agree; once the policy solves, the legacy reward's
gradient points the other way from the tiered one's.

Limited capacity. The candidate pool, the ten features and the format radius below bound what
the adapter can reach: it cannot separate look-alike answers, which sets an honest ceiling.

Format drift. A large adapter disturbs the format head, as large LoRA updates erode a model's
tool-call formatting: once the norm of the adapter's weights passes `FORMAT_ROBUST_RADIUS`, the
raw-text logit rises with the square of the excess (`FORMAT_DRIFT_RATE`). The policy gradient
sees that term too, so at a sensible learning rate training stays inside the radius; a too-high
rate jumps far past it in one update, every rollout then writes its calls as text and gets the
same floor reward, the advantage vanishes and the policy stays there, as in the walkthrough.

Learning-rate scale. The service's learning rates (up to 1e-2; the docs' default is 4e-5) are
tuned for LoRA weights. Adam moves each parameter by about `learning_rate` per step, so the
stand-in multiplies its update by `ADAPTER_SCALE` x lora_alpha / lora_rank (the service's "update
magnitude is learning_rate x alpha / rank"). ADAPTER_SCALE was picked so that 1e-5, the course's
offline job rate (`service_spec.OFFLINE_OVERRIDES`; the AWS walkthrough names no rate), trains the
stand-in in a handful of steps. Measured with it: 1e-4 swings into raw text for a step or two and
recovers; 1e-3 collapses into raw text for good. That scale is a
choice made for the lesson, not a finding about any real model.

Token cap. A reply longer than the request's `max_tokens` is cut there, finish reason "length",
and carries no tool call (the call would have come after the reasoning). The service's default
cap (8,192) is far above any reply it writes unless it loops; a cap set below what the effort
writes per turn (a few tens of pieces at medium effort) means no turn ever reaches its call.

Token counts (the billing analogue). A "token" is one whitespace-separated piece of text.
Completion tokens: the pieces of the reply's text plus, per tool call, the pieces of its name and
of its JSON arguments (at least 1). Prompt tokens: the pieces of every request message's text,
plus the names and arguments of the tool calls in it (the tool definitions are not counted).
Reasoning effort changes how much reasoning text it writes, so it drives completion tokens, and
because that text stays in the conversation, prompt tokens of later turns too.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from mtrl_course.local.completions import chat_completion
from mtrl_course.feedback_arrays import encode, entropies
from mtrl_course.numerics import exp, log, matmul, matvec, norm
from mtrl_course.local.transcript import seeded_clues
from mtrl_course.tool_answers import Clue, is_over, parse_clue
from wordle_agent.game import WORD_LENGTH, Knowledge

LABEL = "stand-in policy"
# Identifies the frozen base parameters below; a model package records it, and loading a package
# made for another base fails.
BASE_ID = "standin-wordle-linear-v2"
PACKAGE_FORMAT = 1
MODEL_NAME = "stand-in-policy"

FEATURE_NAMES = (
    "fits_clues",
    "information",
    "new_letters",
    "gray_letters",
    "greens_broken",
    "repeat",
    "common_word",
    "solve_chance",
    # Interactions with the turn (see "Capacity to learn the wrong thing" above): the feature
    # times the share of guesses still ahead, 1 on the first guess and 0 on the sixth.
    "fits_early",
    "information_early",
    # Consistent with every clue, answer-list word or not (an obscure word that fits is a clean
    # guess that cannot be the answer: the legacy reward's favourite way to farm shaping).
    "consistent",
)
N_FEATURES = len(FEATURE_NAMES)
TURN_FEATURES = {"fits_early": "fits_clues", "information_early": "information"}
# The frozen base: anchored on familiar letters (new letters cost, gray ones are even mildly
# liked), averse to information, barely interested in fitting the clues. Greedy it solves well
# under 40% of the validation words at any effort (tests/test_stand_in_policy.py). The overall scale sets
# how far training must move the weights: at 1x one update already flips most greedy choices,
# at 3x the learning curve takes a few steps.
# The base has no turn-dependent habit: the interaction weights start at 0.
BASE_WEIGHTS = 3.0 * np.array([0.3, -1.5, -2.0, 0.3, 0.0, -3.0, 0.0, 0.5, 0.0, 0.0, 0.0])

FORMATS = ("tool_call", "raw_text", "no_call")
TOOL_CALL, RAW_TEXT, NO_CALL = range(len(FORMATS))
# About 0.7% raw-text and 0.2% no-call turns at temperature 1.
BASE_FORMAT_LOGITS = np.array([0.0, -5.0, -6.0])
# The raw-text formats of wordle_agent.recovery, written with the chosen word.
RAW_TEXT_TEMPLATES = (
    "<__function=guess_word> <__parameter=guess>{word}</__parameter> </__function>",
    '{{"guess": "{word}"}}',
    'guess_word("{word}")',
)
NO_CALL_TEXT = "I am not sure yet which word to play."
GAME_OVER_TEXT = "The game is over."
NO_TOOL_TEXT = "OK"
# See "Format drift" and "Learning-rate scale" above.
FORMAT_ROBUST_RADIUS = 10.0
FORMAT_DRIFT_RATE = 0.1
ADAPTER_SCALE = 15_000.0

T = TypeVar("T")

GUESS_TOOL = "guess_word"
GUESS_PARAMETER = "guess"


@dataclass(frozen=True)
class Effort:
    """What one reasoning-effort level means (see "Reasoning effort" in the module docstring).

    candidates: words weighed; described: candidates written out in the reasoning text;
    verified: top proposals checked against the clues; loop_rate: chance that a greedy decode of
    a turn whose two best proposals tie falls into a repetition loop.
    """

    candidates: int
    described: int
    verified: int
    loop_rate: float


# "none" writes no reasoning at all; absent means the model's default, medium (as for gpt-oss).
EFFORTS = {
    "none": Effort(candidates=8, described=0, verified=0, loop_rate=1.0),
    "low": Effort(candidates=8, described=3, verified=0, loop_rate=0.8),
    "medium": Effort(candidates=16, described=6, verified=4, loop_rate=0.5),
    "high": Effort(candidates=32, described=32, verified=8, loop_rate=0.3),
}
DEFAULT_EFFORT = "medium"
# Levels that describe this many candidates or fewer write one terse line instead of a list.
TERSE_UP_TO = 3
# One candidate in CONSISTENT_SHARE is drawn from the answers that still fit (at least
# MIN_CONSISTENT of them while that many fit); one in OBSCURE_SHARE from the dictionary words
# outside the answer list that fit the clues too (at least one while any does).
OBSCURE_SHARE = 4
OBSCURE_SAMPLE = 256
CONSISTENT_SHARE = 4
MIN_CONSISTENT = 3
# Self-verification: a verified proposal that breaks a known clue loses this much logit.
VERIFY_PENALTY = 6.0
# Degenerate loops (see loop_chance); a looping reply writes until the request's max_tokens
# (LOOP_TOKENS if it sets none).
LOOP_POWER = 2.0
LOOP_TOKENS = 8192
LOOP_FINISH_REASON = "length"
PROBE_POOL_SIZE = 1_000
# Texts whose token count, clue and game-over status a process remembers, and the longest one
# remembered (at most about 16 MB of text per memo).
MEMO_TEXTS = 4096
MEMO_TEXT_LIMIT = 4096
# Clue histories whose ClueState a process keeps (more than the games a run plays at once; at
# most about 20 MB even if every one still had all answers possible).
STATE_MEMO_SIZE = 1024
# Softmax temperatures below this count as greedy (temperature 0).
GREEDY_BELOW = 1e-6
# Guesses in a game minus one: the last turn's share of guesses still ahead is 0.
MAX_TURN = 5


def count_tokens(text: Any) -> int:
    """Whitespace-separated pieces of `text` (0 for anything that is not a string)."""
    return _pieces(text) if isinstance(text, str) else 0


def _memo_for_short_texts(function: Callable[[str], T]) -> Callable[[str], T]:
    """`function` memoised for texts up to MEMO_TEXT_LIMIT characters. Every turn re-reads the
    whole conversation (prompt tokens, clues), so the same texts come back turn after turn; the
    limit keeps looped replies (tens of kilobytes each) out of the memo."""
    memo = functools.lru_cache(maxsize=MEMO_TEXTS)(function)
    return lambda text: memo(text) if len(text) <= MEMO_TEXT_LIMIT else function(text)


_pieces = _memo_for_short_texts(lambda text: len(text.split()))
_clue_in = _memo_for_short_texts(parse_clue)
_over = _memo_for_short_texts(is_over)


def _content_text(content: Any) -> str:
    """The text of an OpenAI message `content`: a string or a list of {"type": "text"} parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            part["text"] for part in content if isinstance(part, dict) and isinstance(part.get("text"), str)
        )
    return ""


def prompt_token_count(messages: Any) -> int:
    """Prompt tokens of a chat request (see the module docstring for the rule)."""
    total = 0
    for message in messages if isinstance(messages, list) else ():
        if not isinstance(message, dict):
            continue
        total += count_tokens(_content_text(message.get("content")))
        for call in message.get("tool_calls") or ():
            function = (call.get("function") or {}) if isinstance(call, dict) else {}
            total += count_tokens(function.get("name")) + count_tokens(function.get("arguments"))
    return total


# --- the vocabulary: word lists and feedback patterns, built once per process ------------------


class Vocabulary:
    """The word lists as arrays: feedback patterns, letters, opening entropies, probe pool; and
    the states of recent clue histories (`state`)."""

    def __init__(self) -> None:
        from mtrl_course.solver import default_solver
        from wordle_agent.words import ENTROPY

        solver = default_solver()
        self.allowed: list[str] = solver.allowed
        self.answers: list[str] = solver.answers
        # patterns[row of a guess in `allowed`, column of an answer in `answers`]
        self.patterns: np.ndarray = solver.matrix
        self.row_of: dict[str, int] = {w: i for i, w in enumerate(self.allowed)}
        self.answer_of_row = np.full(len(self.allowed), -1, dtype=np.int64)
        for column, word in enumerate(self.answers):
            self.answer_of_row[self.row_of[word]] = column
        self.is_answer = self.answer_of_row >= 0
        self.answer_rows = np.flatnonzero(self.is_answer)
        self.letters = encode(self.allowed).astype(np.int64)
        self.letter_sets = np.zeros((len(self.allowed), 26), dtype=bool)
        self.letter_sets[np.arange(len(self.allowed))[:, None], self.letters] = True
        self.opening_bits = np.array([ENTROPY.get(w, 0.0) for w in self.allowed])
        self.probe_pool = np.argsort(-self.opening_bits, kind="stable")[:PROBE_POOL_SIZE]
        self.obscure_rows = np.flatnonzero(~self.is_answer)
        self.letter_counts = np.zeros((len(self.allowed), 26), dtype=np.int8)
        for i in range(5):
            np.add.at(self.letter_counts, (np.arange(len(self.allowed)), self.letters[:, i]), 1)
        # One row per allowed word: where its letters are and how many copies (see COUNT_COLUMNS).
        self.profile = np.zeros((len(self.allowed), COUNT_COLUMNS + 26), dtype=np.int8)
        self.profile[np.arange(len(self.allowed))[:, None], 26 * np.arange(WORD_LENGTH) + self.letters] = 1
        self.profile[:, COUNT_COLUMNS:] = self.letter_counts
        # letter_sets beside the position columns of `profile`, for ClueState.letter_weights.
        self.letter_profile = np.concatenate([self.letter_sets, self.profile[:, :COUNT_COLUMNS]], axis=1).astype(
            np.int8
        )
        # The allowed-list row of each answer column (for clues from hand-typed words).
        self.column_rows = np.array([self.row_of[w] for w in self.answers], dtype=np.intp)
        self._states: dict[tuple[tuple[str, str], ...], ClueState] = {}
        self._states_lock = threading.Lock()

    def state(self, clues: Sequence[Clue]) -> ClueState:
        """What `clues` prove, as the policy's turn reads it (memoised per clue history: every turn
        of a game re-reads the clues of the turns before, and retries re-read them all)."""
        key = tuple((word, "".join(marks)) for word, marks in clues)
        with self._states_lock:
            known = self._states.get(key)
            parent = self._states.get(key[:-1]) if key else None
        if known is not None:
            return known
        state = ClueState.build(self, clues, parent)
        with self._states_lock:
            if len(self._states) >= STATE_MEMO_SIZE:
                self._states.clear()  # a crude bound: the memo only saves work within a game
            self._states[key] = state
        return state

    def consistent(self, clues: Sequence[Clue], rows: np.ndarray) -> np.ndarray:
        """Which of the allowed-word `rows` agree with every clue (answer-list words or not).

        A word agrees with a clue when playing the clue's guess against it as the answer gives
        the clue's marks (patterns.py's rule: greens first, then yellows while copies remain).
        Checked as bounds on columns of `profile` (see `_clue_constraints`), all clues at once:
        a turn asks about a few hundred rows, where numpy's per-call overhead is the cost.
        """
        if not clues or len(rows) == 0:
            return np.ones(len(rows), dtype=bool)
        constraints = _constraints_of(clues)
        if constraints is None:
            return np.zeros(len(rows), dtype=bool)
        columns, low, span = constraints
        values = self.profile.take(rows, axis=0).take(columns, axis=1)
        # low <= value <= low + span as one unsigned comparison (a value below low wraps round).
        return np.asarray(((values - low).view(np.uint8) <= span).all(axis=1))


# Columns of Vocabulary.profile: 26 * position + letter says whether the word has that letter
# there (0 or 1); COUNT_COLUMNS + letter is how many copies of the letter it has.
COUNT_COLUMNS = WORD_LENGTH * 26
Constraints = tuple[np.ndarray, np.ndarray, np.ndarray]


@functools.lru_cache(maxsize=4096)
def _clue_constraints(word: str, marks: str) -> tuple[tuple[int, int, int], ...] | None:
    """The (profile column, low, high) bounds a word must meet to give `marks` (G, Y and X, one
    per letter) when `word` is played against it, or None when no word can give these marks.
    Memoised per clue: a game's clues come back on every later turn.

    Under the greens-first, yellows-left-to-right rule a word w gives these marks exactly when:
    w has the guess's letter on the green squares and not on the others, and for each letter c
    of the guess with g green and y yellow marks, w holds exactly g + y copies of c if some copy
    of c is marked gray, else at least g + y. No word gives a gray copy of a letter before a
    yellow copy (the rule marks the leftmost copies yellow).
    """
    bounds = []
    seen_gray: set[int] = set()
    tally: dict[int, list[int]] = {}
    for i, (char, mark) in enumerate(zip(word, marks)):
        letter = ord(char) - 65
        green = int(mark == "G")
        bounds.append((26 * i + letter, green, green))
        counted = tally.setdefault(letter, [0, 0])
        if mark == "G":
            counted[0] += 1
        elif mark == "Y":
            if letter in seen_gray:
                return None
            counted[0] += 1
        else:
            seen_gray.add(letter)
            counted[1] += 1
    for letter, (present, grays) in tally.items():
        bounds.append((COUNT_COLUMNS + letter, present, present if grays else WORD_LENGTH))
    return tuple(bounds)


_CONSTRAINTS: dict[tuple[tuple[str, str], ...], Constraints | None] = {}
_CONSTRAINTS_LIMIT = 4096
_UNKNOWN = object()


def _constraints_of(clues: Sequence[Clue]) -> Constraints | None:
    """All clues' bounds as (columns, low, high - low) arrays for `Vocabulary.consistent`
    (memoised: every turn of a game asks again for the clues before it), or None when some clue
    can match no word."""
    key = tuple((word, "".join(marks)) for word, marks in clues)
    cached = _CONSTRAINTS.get(key, _UNKNOWN)
    if cached is not _UNKNOWN:
        return cached  # type: ignore[return-value]
    bounds: list[tuple[int, int, int]] = []
    result: Constraints | None = None
    for word, marks in key:
        found = _clue_constraints(word, marks) if len(word) == WORD_LENGTH == len(marks) else None
        if found is None:
            break
        bounds += found
    else:
        result = (
            np.array([column for column, _, _ in bounds], dtype=np.intp),
            np.array([low for _, low, _ in bounds], dtype=np.int8),
            np.array([high - low for _, low, high in bounds], dtype=np.uint8),
        )
    if len(_CONSTRAINTS) >= _CONSTRAINTS_LIMIT:
        _CONSTRAINTS.clear()  # a crude bound: the memo only saves work within a game
    _CONSTRAINTS[key] = result
    return result


_VOCABULARY: Vocabulary | None = None
_VOCABULARY_LOCK = threading.Lock()


def vocabulary() -> Vocabulary:
    """The process-wide vocabulary (the pattern matrix loads from `.cache/solver` once)."""
    global _VOCABULARY
    with _VOCABULARY_LOCK:
        if _VOCABULARY is None:
            _VOCABULARY = Vocabulary()
        return _VOCABULARY


_MARK_DIGIT = {"X": 0, "Y": 1, "G": 2}


def _pattern_code(marks: Sequence[str]) -> int:
    return sum(_MARK_DIGIT[m] * 3**i for i, m in enumerate(marks))


@dataclass(frozen=True)
class ClueState:
    """What a clue history proves, in the forms a turn needs. Shared between turns: read only.

    possible: answer columns that fit every clue (`possible_mask` as a mask over the answers);
    tried and grays: 26-letter masks of the letters guessed and known gray; greens: how many
    positions have a known green; letter_weights: a (26 + COUNT_COLUMNS, 3) matrix that turns
    a row of `Vocabulary.letter_profile` into (letters not tried, known-gray letters used, known
    greens in place).
    """

    possible: np.ndarray
    possible_mask: np.ndarray
    knowledge: Knowledge
    tried: np.ndarray
    grays: np.ndarray
    greens: int
    letter_weights: np.ndarray

    @classmethod
    def build(cls, vocab: Vocabulary, clues: Sequence[Clue], parent: ClueState | None = None) -> ClueState:
        """The state of `clues`; `parent`, the state of all clues but the last, saves the masks."""
        knowledge = Knowledge()
        for word, marks in clues:
            knowledge.update(word, marks)
        if parent is None:
            mask = np.ones(len(vocab.answers), dtype=bool)
            tried = np.zeros(26, dtype=bool)
            new = clues
        else:
            mask, tried, new = parent.possible_mask.copy(), parent.tried.copy(), clues[-1:]
        for word, marks in new:
            tried[[ord(c) - 65 for c in word]] = True
            row = vocab.row_of.get(word)
            if row is None:  # a word outside the lists (typed by hand): no pattern row, check each answer
                mask &= vocab.consistent([(word, marks)], vocab.column_rows)
            else:
                mask &= vocab.patterns[row] == _pattern_code(marks)
        grays = np.zeros(26, dtype=bool)
        grays[[ord(c) - 65 for c in knowledge.grays]] = True
        greens = [(i, ord(letter) - 65) for i, letter in enumerate(knowledge.greens) if letter is not None]
        weights = np.zeros((26 + COUNT_COLUMNS, 3), dtype=np.int64)
        weights[:26, 0] = ~tried
        weights[:26, 1] = grays
        for i, letter in greens:
            weights[26 + 26 * i + letter, 2] = 1
        return cls(
            possible=np.flatnonzero(mask),
            possible_mask=mask,
            knowledge=knowledge,
            tried=tried,
            grays=grays,
            greens=len(greens),
            letter_weights=weights,
        )


# --- the adapter (the trainable part) --------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Adapter:
    """The trainable delta on the frozen base: the stand-in's "LoRA adapter" and model package.

    `weights` adds to BASE_WEIGHTS (one per feature), `format_logits` to BASE_FORMAT_LOGITS.
    `step`, `seed` and `base_model` (the base model the job named; the stand-in plays for it)
    are metadata written into the package file.
    """

    weights: np.ndarray = field(default_factory=lambda: np.zeros(N_FEATURES))
    format_logits: np.ndarray = field(default_factory=lambda: np.zeros(len(FORMATS)))
    step: int = 0
    seed: int = 0
    base_model: str = ""

    def __post_init__(self) -> None:
        weights = np.asarray(self.weights, dtype=float).reshape(-1)
        formats = np.asarray(self.format_logits, dtype=float).reshape(-1)
        if weights.shape != (N_FEATURES,) or formats.shape != (len(FORMATS),):
            raise ValueError(
                f"an adapter needs {N_FEATURES} weights and {len(FORMATS)} format logits; "
                f"got {weights.size} and {formats.size}"
            )
        if not (np.all(np.isfinite(weights)) and np.all(np.isfinite(formats))):
            raise ValueError("adapter values must be finite numbers")
        object.__setattr__(self, "weights", weights)
        object.__setattr__(self, "format_logits", formats)

    def vector(self) -> np.ndarray:
        """All trainable values in one vector: the weights, then the format logits."""
        return np.concatenate([self.weights, self.format_logits])

    def with_vector(self, vector: np.ndarray, **metadata: Any) -> Adapter:
        """A new adapter holding `vector` (as from `vector()`), metadata updated from keywords."""
        values = np.asarray(vector, dtype=float)
        fields = {"step": self.step, "seed": self.seed, "base_model": self.base_model, **metadata}
        return Adapter(values[:N_FEATURES], values[N_FEATURES:], **fields)

    def to_dict(self) -> dict[str, Any]:
        return {
            "label": LABEL,
            "format": PACKAGE_FORMAT,
            "base_id": BASE_ID,
            "base_model": self.base_model,
            "step": int(self.step),
            "seed": int(self.seed),
            "feature_names": list(FEATURE_NAMES),
            "weights": [float(x) for x in self.weights],
            "format_names": list(FORMATS),
            "format_logits": [float(x) for x in self.format_logits],
        }

    def save(self, path: str | Path) -> Path:
        """Write the model package (JSON) and return its path."""
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(self.to_dict(), indent=1) + "\n")
        return target

    @classmethod
    def load(cls, path: str | Path) -> Adapter:
        """Read a package written by `save`; ValueError naming the file if it is not one."""
        source = Path(path)
        try:
            data = json.loads(source.read_text())
        except (OSError, ValueError) as error:
            raise ValueError(f"{source} is not a readable stand-in adapter package: {error}") from None
        if not isinstance(data, dict) or data.get("base_id") != BASE_ID:
            found = data.get("base_id") if isinstance(data, dict) else None
            raise ValueError(f"{source} is not an adapter for the stand-in base {BASE_ID} (base_id {found!r})")
        if data.get("feature_names") != list(FEATURE_NAMES) or data.get("format_names") != list(FORMATS):
            raise ValueError(f"{source} was saved with other feature or format names than {BASE_ID} uses")
        return cls(
            np.array(data["weights"], dtype=float),
            np.array(data["format_logits"], dtype=float),
            step=int(data.get("step", 0)),
            seed=int(data.get("seed", 0)),
            base_model=str(data.get("base_model", "")),
        )


def format_logits_for(vector: np.ndarray) -> np.ndarray:
    """Format-head logits (tool call, raw text, no call) for an adapter vector, drift included."""
    logits = BASE_FORMAT_LOGITS + vector[N_FEATURES:]
    excess = norm(vector[:N_FEATURES]) - FORMAT_ROBUST_RADIUS
    if excess > 0:
        logits[RAW_TEXT] += FORMAT_DRIFT_RATE * excess**2
    return logits


def format_drift_gradient(vector: np.ndarray) -> np.ndarray:
    """d(raw-text logit) / d(adapter weights): the drift term's gradient (zero inside the radius)."""
    weights = vector[:N_FEATURES]
    length = norm(weights)
    if length <= FORMAT_ROBUST_RADIUS:
        return np.zeros(N_FEATURES)
    return 2 * FORMAT_DRIFT_RATE * (length - FORMAT_ROBUST_RADIUS) * weights / length


def softmax(logits: np.ndarray, temperature: float) -> np.ndarray:
    z = logits / temperature
    z = exp(z - z.max())
    return z / z.sum()


# --- one decision ------------------------------------------------------------------------------


@dataclass
class Decision:
    """One turn of the stand-in: what it writes and what the gradient needs later (`trace`)."""

    content: str | None
    tool_call: dict[str, Any] | None  # {"id", "name", "arguments"}
    trace: dict[str, Any]
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str | None = None


def _rng_key(trajectory: Any, fallback_seed: int) -> list[int]:
    info = getattr(trajectory, "info", None) or {}
    key = info.get("rng_key") if isinstance(info, Mapping) else None
    if isinstance(key, (list, tuple)) and key and all(isinstance(k, int) and k >= 0 for k in key):
        return [fallback_seed, *key]
    # No key from the service (a trajectory opened by its first call): hash its id instead.
    tid = str(getattr(trajectory, "trajectory_id", "") or "")
    digest = hashlib.sha256(tid.encode()).digest()
    return [fallback_seed, *(int.from_bytes(digest[i : i + 4], "little") for i in range(0, 16, 4))]


def _guess_tool(tools: Any) -> tuple[str, str] | None:
    """(name, argument) of the guessing tool among OpenAI `tools`, if one is offered."""
    functions = [
        t["function"]
        for t in tools or []
        if isinstance(t, dict) and isinstance(t.get("function"), dict) and isinstance(t["function"].get("name"), str)
    ]
    chosen = next((f for f in functions if f["name"] == GUESS_TOOL), None)
    if chosen is None and len(functions) == 1:
        chosen = functions[0]
    if chosen is None:
        return None
    properties = list(((chosen.get("parameters") or {}).get("properties") or {}))
    if GUESS_PARAMETER in properties or len(properties) != 1:
        return chosen["name"], GUESS_PARAMETER
    return chosen["name"], properties[0]


def _conversation(messages: Any) -> tuple[list[str], set[str]]:
    """The tool answers (in order) and every word the assistant already sent as a tool call."""
    answers, sent = [], set()
    for message in messages if isinstance(messages, list) else ():
        if not isinstance(message, dict):
            continue
        if message.get("role") == "tool":
            answers.append(_content_text(message.get("content")))
        for call in message.get("tool_calls") or ():
            function = (call.get("function") or {}) if isinstance(call, dict) else {}
            arguments = function.get("arguments") or "{}"
            word = _sent_in(arguments) if isinstance(arguments, str) else _guess_sent(arguments)
            if word is not None:
                sent.add(word)
    return answers, sent


def _guess_sent(arguments: Any) -> str | None:
    """The five-letter guess (uppercase) a tool call's JSON arguments carry, if any."""
    try:
        parsed = json.loads(arguments)
    except (TypeError, ValueError):
        return None
    word = parsed.get(GUESS_PARAMETER) if isinstance(parsed, dict) else None
    return word.strip().upper() if isinstance(word, str) and len(word.strip()) == 5 else None


_sent_in = _memo_for_short_texts(_guess_sent)


class StandInPolicy:
    """The stand-in policy (not gpt-oss): frozen base weights plus a trainable `Adapter`.

    A policy for `JobRuntimeEmulator.register_job`: `complete(request, trajectory)` returns an
    OpenAI chat completion with a `policy_trace` the emulator records for the gradient. Immutable
    once built (the runner swaps in a new policy after each update), so concurrent rollouts
    always see one consistent set of parameters.
    """

    def __init__(self, adapter: Adapter | None = None, *, seed: int = 0) -> None:
        self.adapter = adapter or Adapter()
        self.seed = int(seed)
        self.vector = self.adapter.vector()
        self.weights = BASE_WEIGHTS + self.adapter.weights
        self.format_logits = format_logits_for(self.vector)

    @property
    def name(self) -> str:
        return f"{LABEL} ({BASE_ID}, adapter step {self.adapter.step})"

    def __repr__(self) -> str:
        return f"StandInPolicy<{self.name}>"

    def with_adapter(self, adapter: Adapter) -> StandInPolicy:
        return StandInPolicy(adapter, seed=self.seed)

    def format_probabilities(self, temperature: float = 1.0) -> dict[str, float]:
        """How likely each answer format is at `temperature` (for monitoring drift)."""
        if temperature < GREEDY_BELOW:
            top = int(np.argmax(self.format_logits))
            return {name: float(i == top) for i, name in enumerate(FORMATS)}
        return dict(zip(FORMATS, (float(p) for p in softmax(self.format_logits, temperature))))

    # -- the Job Runtime's policy interface ------------------------------------------------------
    def complete(self, request: dict, trajectory: Any = None) -> dict:
        """Answer one chat-completion request (the emulator has filled in the temperature)."""
        messages = request.get("messages") or []
        requested = request.get("temperature")
        temperature = float(requested) if requested is not None else 1.0
        turn = getattr(trajectory, "sample_count", None)
        if turn is None:
            turn = sum(1 for m in messages if isinstance(m, dict) and m.get("role") == "assistant")
        decision = self.decide(
            messages,
            request.get("tools"),
            temperature=temperature,
            effort=request.get("reasoning_effort"),
            rng_key=[*_rng_key(trajectory, self.seed), int(turn)],
            max_tokens=_max_tokens(request),
        )
        return chat_completion(
            content=decision.content,
            tool_calls=[decision.tool_call] if decision.tool_call else (),
            prompt_tokens=decision.prompt_tokens,
            completion_tokens=decision.completion_tokens,
            model=MODEL_NAME,
            finish_reason=decision.finish_reason,
            policy_trace=decision.trace,
        )

    def decide(
        self,
        messages: Any,
        tools: Any,
        *,
        temperature: float,
        effort: Any,
        rng_key: Sequence[int],
        max_tokens: int | None = None,
    ) -> Decision:
        """One turn from the conversation alone (see the module docstring)."""
        level = effort if effort in EFFORTS else DEFAULT_EFFORT
        prompt_tokens = prompt_token_count(messages)
        tool = _guess_tool(tools)
        answers, sent = _conversation(messages)
        if tool is None or (answers and _over(answers[-1])):
            text = NO_TOOL_TEXT if tool is None else GAME_OVER_TEXT
            trace = {"kind": "closing", "temperature": temperature, "effort": level}
            return Decision(text, None, trace, prompt_tokens, max(1, count_tokens(text)))

        vocab = vocabulary()
        # The parsed clues are shared between turns: nothing here changes them.
        clues = [*seeded_clues(messages), *(clue for clue in map(_clue_in, answers) if clue is not None)]
        rng = np.random.default_rng(np.random.SeedSequence(list(rng_key)))
        state = vocab.state(clues)
        possible, knowledge = state.possible, state.knowledge
        guessed = sent | {word for word, _ in clues}
        spec = EFFORTS[level]
        candidates = self._candidates(vocab, rng, possible, spec.candidates, clues)
        features = self._features(vocab, candidates, clues, state, guessed)

        greedy = temperature < GREEDY_BELOW
        format_probs = None if greedy else softmax(self.format_logits, temperature)
        fmt = int(np.argmax(self.format_logits)) if format_probs is None else _draw(format_probs, rng.random())
        raw_logits = matvec(features, self.weights)
        offsets = self._verification(vocab, candidates, knowledge, raw_logits, spec.verified)
        logits = raw_logits + offsets
        probs = None if greedy else softmax(logits, temperature)
        chosen = int(np.argmax(logits)) if probs is None else _draw(probs, rng.random())
        word = vocab.allowed[int(candidates[chosen])]
        # Drawn on every turn (greedy or not) so the rest of the stream does not depend on it.
        loop_draw = rng.random()

        reasoning = self._reasoning(vocab, level, candidates, features, logits, possible, knowledge, word)
        trace = {
            "kind": "guess",
            "features": features,
            "offsets": offsets,
            "chosen": chosen,
            "format": fmt,
            "temperature": temperature,
            "effort": level,
            "candidates": [vocab.allowed[c] for c in candidates.tolist()],
            "word": word,
            # Log-probability of the action under the sampling parameters (PPO's "old" policy).
            "logp": None if probs is None or format_probs is None else _action_logp(probs, chosen, format_probs, fmt),
        }
        if greedy and fmt != NO_CALL and loop_draw < loop_chance(logits, spec.loop_rate):
            runner_up = vocab.allowed[int(candidates[_runner_up(logits)])]
            trace.update(kind="loop", runner_up=runner_up)
            budget = LOOP_TOKENS if max_tokens is None else max(1, int(max_tokens))
            looped = loop_text(reasoning, word, runner_up, budget)
            return Decision(looped, None, trace, prompt_tokens, budget, LOOP_FINISH_REASON)
        tool_call = None
        if fmt == TOOL_CALL:
            name, argument = tool
            arguments = json.dumps({argument: word})
            tool_call = {"id": f"call_{rng_key[-1]}_{word.lower()}", "name": name, "arguments": arguments}
            content: str | None = reasoning or None
            completion = count_tokens(content) + count_tokens(name) + count_tokens(arguments)
        else:
            if fmt == RAW_TEXT:
                tail = RAW_TEXT_TEMPLATES[int(rng.integers(len(RAW_TEXT_TEMPLATES)))].format(word=word)
            else:
                tail = NO_CALL_TEXT
            content = f"{reasoning}\n{tail}" if reasoning else tail
            completion = count_tokens(content)
        if max_tokens is not None and completion > max_tokens:
            # A cap below what the effort writes: the reasoning is cut off before the call, as a
            # model's reply is cut at max_tokens (finish reason "length"). The word never reached
            # the game, so the trace is not a guess the gradient could credit.
            cut = " ".join((content or "").split()[: int(max_tokens)])
            trace.update(kind="truncated")
            return Decision(cut, None, trace, prompt_tokens, int(max_tokens), LOOP_FINISH_REASON)
        return Decision(content, tool_call, trace, prompt_tokens, max(1, completion))

    # -- pieces ---------------------------------------------------------------------------------
    @staticmethod
    def _candidates(
        vocab: Vocabulary, rng: np.random.Generator, possible: np.ndarray, count: int, clues: Sequence[Clue]
    ) -> np.ndarray:
        fitting = min(len(possible), max(MIN_CONSISTENT, count // CONSISTENT_SHARE))
        chosen = vocab.answer_rows[rng.choice(possible, size=fitting, replace=False)].tolist() if fitting else []
        # Obscure words that fit: the first of OBSCURE_SAMPLE random non-answer words that agree
        # with the clues (a model recalls a few such words, it does not enumerate the dictionary).
        sample = rng.choice(vocab.obscure_rows, size=OBSCURE_SAMPLE, replace=False)
        fits = sample[vocab.consistent(clues, sample)]
        chosen += fits[: max(1, count // OBSCURE_SHARE)].tolist()
        probes = count - len(chosen)
        chosen += vocab.probe_pool[rng.choice(len(vocab.probe_pool), size=probes // 2, replace=False)].tolist()
        chosen += rng.choice(len(vocab.allowed), size=probes - probes // 2, replace=False).tolist()
        # Duplicates are dropped, keeping the first: the candidate order is part of the key.
        return np.array(list(dict.fromkeys(chosen)), dtype=np.int64)

    @staticmethod
    def _features(
        vocab: Vocabulary,
        rows: np.ndarray,
        clues: list[Clue],
        state: ClueState,
        guessed: set[str],
    ) -> np.ndarray:
        # The float columns are computed exactly as they always were (same operations, same
        # order): stored results are compared bit for bit. Masks and counts are free to change.
        features = np.zeros((len(rows), N_FEATURES))
        answer_column = vocab.answer_of_row[rows]
        common = answer_column >= 0
        fits = common & state.possible_mask[answer_column]
        features[:, 0] = fits
        n = len(state.possible)
        if n > 1:
            bits = vocab.opening_bits[rows] if not clues else entropies(vocab.patterns[rows[:, None], state.possible])
            features[:, 1] = bits / math.log2(n)
        # New letters, known-gray letters used, and known greens kept: integer counts from one
        # product (see ClueState.letter_weights).
        counts = matmul(vocab.letter_profile.take(rows, axis=0), state.letter_weights)
        features[:, 2] = counts[:, 0] / 5
        features[:, 3] = counts[:, 1]
        features[:, 4] = state.greens - counts[:, 2]
        features[:, 5] = [vocab.allowed[r] in guessed for r in rows.tolist()]
        features[:, 6] = common
        features[:, 7] = fits / max(n, 1)
        early = (MAX_TURN - min(len(clues), MAX_TURN)) / MAX_TURN
        features[:, 8] = features[:, 0] * early
        features[:, 9] = features[:, 1] * early
        features[:, 10] = vocab.consistent(clues, rows)
        return features

    @staticmethod
    def _verification(
        vocab: Vocabulary, rows: np.ndarray, knowledge: Knowledge, logits: np.ndarray, count: int
    ) -> np.ndarray:
        """Logit offsets of self-verification: the `count` best proposals are checked against the
        clues and those that break one (a known gray letter, a known green moved, a known yellow
        left out) lose VERIFY_PENALTY. Not trained: it is what the reasoning does with the text."""
        offsets = np.zeros(len(rows))
        if count <= 0:
            return offsets
        for i in np.argsort(-logits, kind="stable")[:count]:
            if breaks_clues(vocab.allowed[int(rows[i])], knowledge):
                offsets[i] = -VERIFY_PENALTY
        return offsets

    @staticmethod
    def _reasoning(
        vocab: Vocabulary,
        level: str,
        rows: np.ndarray,
        features: np.ndarray,
        logits: np.ndarray,
        possible: np.ndarray,
        knowledge: Knowledge,
        word: str,
    ) -> str:
        """The reasoning text: longer at higher effort. It never spells a call to the tool."""
        shown = EFFORTS[level].described
        if not shown:
            return ""
        order = np.argsort(-logits, kind="stable")[:shown]
        words = [vocab.allowed[row] for row in rows[order].tolist()]
        if shown <= TERSE_UP_TO:
            listed = ", ".join(words)
            return f"{len(possible)} answers still fit. Top words: {listed}. Going with {word}."
        greens = " ".join(c or "_" for c in knowledge.greens)
        present = ", ".join(sorted(knowledge.yellow)) or "none"
        absent = ", ".join(sorted(knowledge.grays)) or "none"
        lines = [
            f"Known so far: greens {greens}; present elsewhere {present}; absent {absent}.",
            f"{len(possible)} answers still fit. Weighing {len(rows)} words.",
        ]
        # fits_clues, information and new_letters of the shown words, as Python floats
        for shown_word, (fit, information, new_share) in zip(words, features[order, :3].tolist()):
            fits = "fits the clues" if fit else "does not fit"
            new = int(round(new_share * 5))
            # + 0.0 turns the entropy's -0.0 into 0.0 for printing
            info = information + 0.0
            lines.append(f"{shown_word}: {fits}, information {info:.2f}, {new} new letters.")
        lines.append(f"Going with {word}.")
        return "\n".join(lines)


def breaks_clues(word: str, knowledge: Knowledge) -> bool:
    """Whether `word` uses a known-gray letter, moves a known green or leaves out a known yellow."""
    if any(green is not None and word[i] != green for i, green in enumerate(knowledge.greens)):
        return True
    if knowledge.grays.intersection(word):
        return True
    return any(word.count(letter) < n for letter, n in knowledge.yellow.items())


def _runner_up(logits: np.ndarray) -> int:
    order = np.argsort(-logits, kind="stable")
    return int(order[1]) if len(order) > 1 else int(order[0])


def loop_chance(logits: np.ndarray, rate: float) -> float:
    """Chance that a greedy decode of this turn loops: `rate` times the policy's indecision, the
    entropy of its temperature-1 distribution over the proposals as a share of the most it could
    be (log of their number), to the power LOOP_POWER. 0 with a single proposal."""
    if len(logits) < 2:
        return 0.0
    z = exp(logits - logits.max())
    p = z / z.sum()
    entropy = float(-(p * log(np.maximum(p, 1e-300))).sum())
    share = min(1.0, max(0.0, entropy / math.log(len(p))))
    return float(rate * share**LOOP_POWER)


def loop_text(reasoning: str, word: str, runner_up: str, budget: int) -> str:
    """A degenerate reply: the reasoning, then the same hesitation repeated until `budget` pieces."""
    head = reasoning.split() if reasoning else []
    cycle = f"Wait, {runner_up} also fits. But {word} looks better. Let me check again.".split()
    pieces = head[:budget]
    missing = budget - len(pieces)
    if missing > 0:
        pieces += (cycle * (missing // len(cycle) + 1))[:missing]
    return " ".join(pieces)


def _max_tokens(request: Mapping[str, Any]) -> int | None:
    for key in ("max_tokens", "max_completion_tokens"):
        value = request.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def _draw(probs: np.ndarray, u: float) -> int:
    """Inverse-CDF draw: index of the first cumulative probability above u (deterministic)."""
    index = int(np.searchsorted(np.cumsum(probs), u * float(probs.sum()), side="right"))
    return min(index, len(probs) - 1)


def _action_logp(probs: np.ndarray, chosen: int, format_probs: np.ndarray, fmt: int) -> float:
    logp = math.log(max(float(format_probs[fmt]), 1e-300))
    if fmt != NO_CALL:  # without a call the word choice never reached the conversation
        logp += math.log(max(float(probs[chosen]), 1e-300))
    return logp
