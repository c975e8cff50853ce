"""The Wordle environment: feedback, the knowledge state, and one game with its shaping score.

`WordleGame.guess(word)` is what the agent's `guess_word` tool calls: it returns the text the
model reads, and as a side effect adds the guess's shaping points to `game.score` (the constants
live in `reward.py`). `game.final_reward()` turns the finished game into the episode reward.

Speed matters because every guess counts the answers still possible, and the trainer plays many
thousands of games. Instead of re-checking every answer each time, the module builds, once at
import, one bitset per fact ("letter C at position 3", "at least two E", "no S") over the answer
list, each a Python int with bit i standing for ANSWERS[i]. The knowledge state keeps the AND of
the facts learned so far, so counting possibilities is one `int.bit_count()`. The agent image has
no numpy, and does not need it for this.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

from wordle_agent.reward import (
    ELIMINATION_BONUS,
    GRAY_USED_PENALTY,
    GREEN_KEPT_PENALTY,
    GREEN_NOT_KEPT_PENALTY,
    MALFORMED_PENALTY,
    MAX_GUESSES,
    NEW_LETTER_BONUS,
    NOT_IN_DICTIONARY_PENALTY,
    OPENER_ENTROPY_BONUS,
    RAW_TEXT_PENALTY,
    REPEAT_PENALTY,
    TIME_PENALTY,
    VALID_GUESS_BASE,
    YELLOW_REUSED_PENALTY,
    YELLOW_UNDERUSED_PENALTY,
    outcome_reward,
)
from wordle_agent.words import ALLOWED, ANSWERS, ENTROPY

__all__ = [
    "MAX_GUESSES",
    "MAX_TOOL_CALLS",
    "WORD_LENGTH",
    "GuessEvent",
    "Knowledge",
    "WordleGame",
    "check_prior_guesses",
    "normalize_guess",
    "score_guess",
]

WORD_LENGTH = 5
# Every call counts, valid or not: a policy stuck repeating malformed calls (which use no guess)
# would otherwise loop until the rollout's wall-clock budget ran out.
MAX_TOOL_CALLS = 12

GREEN, YELLOW, GRAY = "G", "Y", "X"
_COLOR_NAME = {GREEN: "green", YELLOW: "yellow", GRAY: "gray"}
_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
# ASCII letters only, and deliberately without re.IGNORECASE: with it, [a-z] also matches the
# Kelvin sign and the long s, which .upper() would then smuggle in as K and S.
_FIVE_LETTERS = re.compile(r"[A-Za-z]{5}")
# Hostile arguments (50 characters, a whole prompt) are echoed only this far.
_ECHO_LIMIT = 40

# Shaping-event names used in GuessEvent.reasons; each matches one constant in reward.py.
TIME, MALFORMED, REPEAT, BASE = "time", "malformed", "repeat", "base"
GREEN_NOT_KEPT, YELLOW_UNDERUSED, GRAY_USED = "green_not_kept", "yellow_underused", "gray_used"
GREEN_KEPT, YELLOW_REUSED = "green_kept", "yellow_reused"
OPENER_ENTROPY, NEW_LETTERS = "opener_entropy", "new_letters"
NOT_IN_DICTIONARY, ELIMINATION, RAW_TEXT = "not_in_dictionary", "elimination", "raw_text"

SOLVED_TEXT = "Guess {turn}/{max}: {word} \u2014 all green. Correct, you solved it!"
LOST_TEXT = "Out of guesses: the word was {answer}."
# A curriculum may seed a game with guesses played before the policy's turn (at most
# MAX_PRIOR_GUESSES, so the policy always has a guess left); the instruction then carries this
# header, their feedback lines and the knowledge summary.
MAX_PRIOR_GUESSES = MAX_GUESSES - 1
PRIOR_GUESSES_HEADER = "These guesses were already played for you:"
NOT_IN_DICTIONARY_NOTE = " (not in the dictionary; it still used a guess)"
REPEAT_TEXT = "Guess {turn}/{max}: {word} was already guessed; repeating it used a guess."
MALFORMED_TEXT = (
    "Invalid guess {shown}: a guess must be exactly five letters A-Z. "
    "No guess was used; guesses remaining: {remaining}."
)
GAME_OVER_TEXT = "Game over: this game has ended, so no more guesses are accepted."
LIMIT_TEXT = "Tool call limit reached: at most {limit} guess_word calls per game, so no more guesses are accepted."


# --- Feedback -------------------------------------------------------------------------------------


def score_guess(guess: str, answer: str) -> list[str]:
    """Per-position marks for `guess` against `answer`: "G" green, "Y" yellow, "X" gray.

    Greens are settled first; then, left to right, a letter is yellow while the answer still has
    a copy of it not already matched, else gray. So SPEED against ABIDE is X X Y X Y: ABIDE has
    one E, the first E takes it, and the second E is gray.
    """
    guess, answer = guess.upper(), answer.upper()
    if len(guess) != WORD_LENGTH or len(answer) != WORD_LENGTH:
        raise ValueError(f"score_guess needs two five-letter words; got {guess!r} and {answer!r}")
    marks = [GRAY] * WORD_LENGTH
    unmatched: dict[str, int] = {}
    for i in range(WORD_LENGTH):
        if guess[i] == answer[i]:
            marks[i] = GREEN
        else:
            unmatched[answer[i]] = unmatched.get(answer[i], 0) + 1
    for i in range(WORD_LENGTH):
        if marks[i] == GRAY:
            left = unmatched.get(guess[i], 0)
            if left:
                marks[i] = YELLOW
                unmatched[guess[i]] = left - 1
    return marks


def normalize_guess(raw: object) -> str | None:
    """The uppercase guess if `raw` is five ASCII letters once surrounding whitespace is stripped.

    Anything else (None, numbers, accented or fullwidth letters, a word with a newline and more
    text after it) gives None, never an exception: tool arguments come from the model.
    """
    if not isinstance(raw, str):
        return None
    text = raw.strip()
    if _FIVE_LETTERS.fullmatch(text) is None:
        return None
    return text.upper()


# --- Bitsets over the answer list, built once -----------------------------------------------------


def _build_bitsets(
    answers: list[str],
) -> tuple[int, list[dict[str, int]], list[dict[str, int]], dict[str, list[int]], dict[str, int]]:
    everything = (1 << len(answers)) - 1
    at = [dict.fromkeys(_LETTERS, 0) for _ in range(WORD_LENGTH)]
    at_least = {c: [everything] + [0] * WORD_LENGTH for c in _LETTERS}
    for index, word in enumerate(answers):
        bit = 1 << index
        for i, c in enumerate(word):
            at[i][c] |= bit
        for c in set(word):
            for n in range(1, word.count(c) + 1):
                at_least[c][n] |= bit
    not_at = [{c: everything ^ bits for c, bits in row.items()} for row in at]
    lacks = {c: everything ^ at_least[c][1] for c in _LETTERS}
    return everything, at, not_at, at_least, lacks


# _AT[i][c]: answers with c at position i; _NOT_AT[i][c]: the rest; _AT_LEAST[c][n]: answers with
# at least n copies of c; _LACKS[c]: answers without c.
_ALL, _AT, _NOT_AT, _AT_LEAST, _LACKS = _build_bitsets(ANSWERS)


def _members(mask: int) -> list[str]:
    # Reversed binary digits put bit i at index i; one pass over a string beats peeling bits off
    # a 2,000-bit int one at a time.
    digits = bin(mask)[:1:-1]
    return [ANSWERS[i] for i, d in enumerate(digits) if d == "1"]


# --- The knowledge state ------------------------------------------------------------------------


class Knowledge:
    """What the feedback so far proves about the answer, and the answers still consistent with it.

    - `greens[i]`: the letter known at position i (or None); the highest truth.
    - `min_counts[c]`: the most copies of c marked green or yellow within any single guess.
    - `grays`: letters marked gray in a guess that marked no copy of them green or yellow (a gray
      second E next to a yellow E says "only one E", not "no E").
    - `not_at[c]`: positions where c was marked yellow, so where it is not.
    - `yellow[c]`: letters known to be present with copies not yet placed on a green square, and
      how many copies the word has at least. A letter whose known copies are all green is dropped
      from this set (it shows as green only); a letter with a green copy and a yellow one stays.

    Facts only ever accumulate, so the set of possible answers only ever shrinks: `mask` is the AND
    of one precomputed bitset per fact. Feedback is truthful, so a letter can never be both gray
    and present: a gray letter can never turn green later.
    """

    __slots__ = ("greens", "min_counts", "grays", "not_at", "yellow", "mask")

    def __init__(self) -> None:
        self.greens: list[str | None] = [None] * WORD_LENGTH
        self.min_counts: dict[str, int] = {}
        self.grays: set[str] = set()
        self.not_at: dict[str, set[int]] = {}
        self.yellow: dict[str, int] = {}
        self.mask: int = _ALL

    def update(self, guess: str, marks: list[str]) -> None:
        """Add the facts one scored guess reveals."""
        mask = self.mask
        present: dict[str, int] = {}
        marked_gray = []
        for i in range(WORD_LENGTH):
            c, mark = guess[i], marks[i]
            if mark == GREEN:
                self.greens[i] = c
                mask &= _AT[i][c]
                present[c] = present.get(c, 0) + 1
            elif mark == YELLOW:
                self.not_at.setdefault(c, set()).add(i)
                mask &= _NOT_AT[i][c]
                present[c] = present.get(c, 0) + 1
            else:
                marked_gray.append(c)
        for c, n in present.items():
            if n > self.min_counts.get(c, 0):
                self.min_counts[c] = n
            mask &= _AT_LEAST[c][n]
        for c in marked_gray:
            if c not in present and c not in self.grays:
                self.grays.add(c)
                mask &= _LACKS[c]
        self.mask = mask
        greens = self.greens
        self.yellow = {c: n for c, n in self.min_counts.items() if n > greens.count(c)}

    def possibility_count(self) -> int:
        """How many answers are still consistent with every fact."""
        return self.mask.bit_count()

    def possibilities(self) -> list[str]:
        """The answers still consistent with every fact, in ANSWERS order."""
        return _members(self.mask)

    def summary_lines(self) -> list[str]:
        """The green, yellow and gray lines of the tool's knowledge summary."""
        greens = " ".join(c or "_" for c in self.greens)
        yellow = ", ".join(f"'{c}' (at least {n})" for c, n in sorted(self.yellow.items()))
        grays = ", ".join(sorted(self.grays))
        return [
            f"- Correct Position (Green): {greens}",
            f"- In Word, Wrong Position (Yellow): {yellow or 'None'}",
            f"- Not in Word (Gray): {grays or 'None'}",
        ]


# --- One game -----------------------------------------------------------------------------------


class GuessEvent(NamedTuple):
    """One scored tool call: where the game's shaping points came from.

    `turn` is the guess number it used (None for malformed input, which uses none), `word` the
    normalized guess or the echoed bad input, `kind` one of "guess", "solve", "repeat",
    "malformed", and `reasons` the shaping events that fired, in scoring order, with their points.
    """

    turn: int | None
    word: str
    kind: str
    delta: float
    reasons: tuple[tuple[str, float], ...]


def check_prior_guesses(prior_guesses: object, answer: str) -> list[str]:
    """Prior guesses as uppercase words; ValueError naming the problem if they cannot seed a game.

    They must be a list of at most MAX_PRIOR_GUESSES distinct dictionary words (ALLOWED), none
    of them the answer (a seeded solve would leave the policy nothing to play).
    """
    if isinstance(prior_guesses, (str, bytes)) or not isinstance(prior_guesses, Sequence):
        raise ValueError(f"prior_guesses must be a list of words, got {type(prior_guesses).__name__}")
    if len(prior_guesses) > MAX_PRIOR_GUESSES:
        raise ValueError(f"prior_guesses holds {len(prior_guesses)} words; at most {MAX_PRIOR_GUESSES} are allowed")
    words: list[str] = []
    for raw in prior_guesses:
        word = normalize_guess(raw)
        if word is None or word not in ALLOWED:
            raise ValueError(f"prior guess {_echo(raw)} is not a five-letter dictionary word")
        if word in words:
            raise ValueError(f"prior guess {word} appears twice")
        if word == answer.upper():
            raise ValueError(f"prior guess {word} is the answer; a seeded game must leave it to the policy")
        words.append(word)
    return words


def _echo(raw: object) -> str:
    try:
        shown = repr(raw)
    except Exception:  # a hostile object's __repr__ must not crash the tool
        shown = f"<{type(raw).__name__}>"
    if len(shown) > _ECHO_LIMIT:
        shown = shown[: _ECHO_LIMIT - 3] + "..."
    return shown


class WordleGame:
    """One game of Wordle against `answer`, scored for shaping as it is played.

    Rules the tool description and the reward table leave open, settled here:
    - A five-letter word outside the dictionary (ALLOWED) uses a turn, is scored like any other
      guess plus NOT_IN_DICTIONARY_PENALTY, and its feedback updates the knowledge (the marks are
      true facts about the answer, whatever the guess was). As an opener its entropy counts as 0.
    - A repeat uses a turn and adds TIME_PENALTY + REPEAT_PENALTY only; the knowledge is unchanged.
    - The raw-text penalty applies to every recovered guess that used a turn, the solving one
      included, so a raw-text solve pays slightly less than a tool-call solve.
    - `guess` and `guess_from_text` share the MAX_TOOL_CALLS budget; calls after the game is over
      answer GAME_OVER_TEXT, calls beyond the budget answer LIMIT_TEXT, and neither is scored.
    - A game that stops before six guesses without a solve is a loss (see reward.outcome_reward).
    - Prior guesses (a curriculum's `prior_guesses`, played for the policy before its first
      turn): each uses a turn and adds its facts to the knowledge, exactly as if played, but
      scores no shaping (the policy did not choose it) and makes no tool call. The outcome tier
      counts them (a game seeded with two guesses and solved on the policy's first is a solve on
      guess 3), so every tier guarantee still holds; a game where the policy itself never made a
      valid guess pays NO_PLAY_REWARD (and the legacy design's no-play penalty) whatever was
      seeded. The policy's first guess is not an opener: it earns new-letter and elimination
      bonuses against the seeded knowledge, not the opening-entropy bonus.
    - Any five-letter answer plays, but possibilities are drawn from ANSWERS, so an answer outside
      that list never appears among them (dataset rows are validated against the lists).
    """

    def __init__(self, answer: str, prior_guesses: Sequence[str] = ()) -> None:
        word = normalize_guess(answer)
        if word is None:
            raise ValueError(f"WordleGame needs a five-letter answer (letters A-Z); got {answer!r}")
        self.answer: str = word
        self.guesses: list[str] = []
        self.score: float = 0.0
        self.solved: bool = False
        self.tool_calls: int = 0
        self.events: list[GuessEvent] = []
        self.knowledge = Knowledge()
        self._distinct: list[str] = []
        self._tried: set[str] = set()
        self.prior_texts: list[str] = []
        for prior in check_prior_guesses(prior_guesses, word):
            marks = score_guess(prior, word)
            self.knowledge.update(prior, marks)
            self._remember(prior)
            feedback = ", ".join(f"{c}={_COLOR_NAME[m]}" for c, m in zip(prior, marks))
            self.prior_texts.append(f"Guess {len(self.guesses)}/{MAX_GUESSES}: {prior} -> {feedback}")
            self.events.append(GuessEvent(len(self.guesses), prior, "prior", 0.0, ()))
        self.seeded: int = len(self.guesses)

    # -- state ----------------------------------------------------------------------------------

    @property
    def turns_used(self) -> int:
        return len(self.guesses)

    @property
    def policy_guesses(self) -> list[str]:
        """The guesses the policy played (after the seeded prior guesses)."""
        return self.guesses[self.seeded :]

    def prior_guesses_text(self) -> str:
        """The block that tells the policy which guesses were played for it ('' if none)."""
        if not self.seeded:
            return ""
        lines = [PRIOR_GUESSES_HEADER, *self.prior_texts, self.knowledge_summary()]
        return "\n".join(lines)

    @property
    def over(self) -> bool:
        """Solved, or all six guesses used: later calls answer GAME_OVER_TEXT."""
        return self.solved or len(self.guesses) >= MAX_GUESSES

    @property
    def limit_reached(self) -> bool:
        """MAX_TOOL_CALLS calls made: any further call is refused unscored."""
        return self.tool_calls >= MAX_TOOL_CALLS

    def possibilities(self) -> list[str]:
        """The answers consistent with the knowledge so far (in ANSWERS order)."""
        return self.knowledge.possibilities()

    def possibility_count(self) -> int:
        """How many answers are consistent with the knowledge so far (cheap: one popcount)."""
        return self.knowledge.possibility_count()

    def final_reward(self) -> float:
        """The episode reward (reward.outcome_reward on this game's outcome and score)."""
        played = len(self.guesses) if len(self.guesses) > self.seeded else 0
        return outcome_reward(self.solved, played, self.score)

    def knowledge_summary(self) -> str:
        """The "Current Knowledge:" block the tool appends to each guess's feedback."""
        lines = ["Current Knowledge:", *self.knowledge.summary_lines()]
        lines.append(f"- Words Already Guessed: {', '.join(self._distinct) or 'None'}")
        lines.append(f"- Guesses Remaining: {MAX_GUESSES - len(self.guesses)}")
        return "\n".join(lines)

    # -- playing --------------------------------------------------------------------------------

    def guess(self, word: object) -> str:
        """Play one tool call and return the text the model reads; never raises."""
        return self._play(word, raw_text=False)

    def guess_from_text(self, word: object) -> str:
        """Like `guess`, for a guess recovered from raw assistant text (RAW_TEXT_PENALTY on top)."""
        return self._play(word, raw_text=True)

    def _play(self, raw: object, raw_text: bool) -> str:
        self.tool_calls += 1
        if self.over:
            return GAME_OVER_TEXT
        if self.tool_calls > MAX_TOOL_CALLS:
            return LIMIT_TEXT.format(limit=MAX_TOOL_CALLS)
        word = normalize_guess(raw)
        if word is None:
            shown = _echo(raw)
            self._record(None, shown, "malformed", [(MALFORMED, MALFORMED_PENALTY)])
            return MALFORMED_TEXT.format(shown=shown, remaining=MAX_GUESSES - len(self.guesses))

        turn = len(self.guesses) + 1
        reasons = [(TIME, TIME_PENALTY)]
        if word in self._distinct:
            kind = "repeat"
            reasons.append((REPEAT, REPEAT_PENALTY))
            self.guesses.append(word)
            text = REPEAT_TEXT.format(turn=turn, max=MAX_GUESSES, word=word)
            text += "\n" + self.knowledge_summary()
        elif word == self.answer:
            # The solve's reward lives in the outcome term; shaping it too would pay twice.
            kind = "solve"
            self.solved = True
            self.knowledge.update(word, [GREEN] * WORD_LENGTH)
            self._remember(word)
            text = SOLVED_TEXT.format(turn=turn, max=MAX_GUESSES, word=word)
        else:
            kind = "guess"
            marks = score_guess(word, self.answer)
            self._score_guess(word, marks, turn, reasons)
            self._remember(word)
            feedback = ", ".join(f"{c}={_COLOR_NAME[m]}" for c, m in zip(word, marks))
            note = "" if word in ALLOWED else NOT_IN_DICTIONARY_NOTE
            text = f"Guess {turn}/{MAX_GUESSES}: {word} -> {feedback}{note}\n"
            text += self.knowledge_summary()
        if raw_text:
            reasons.append((RAW_TEXT, RAW_TEXT_PENALTY))
        self._record(turn, word, kind, reasons)
        if not self.solved and len(self.guesses) == MAX_GUESSES:
            text += "\n" + LOST_TEXT.format(answer=self.answer)
        return text

    def _remember(self, word: str) -> None:
        self.guesses.append(word)
        self._distinct.append(word)
        self._tried.update(word)

    def _score_guess(self, word: str, marks: list[str], turn: int, reasons: list[tuple[str, float]]) -> None:
        """Append the shaping events of an ordinary guess and fold its facts into the knowledge.

        Violations and stagnation are judged against what was known *before* this guess: the
        guess could not have known what its own feedback would reveal.
        """
        known = self.knowledge
        reasons.append((BASE, VALID_GUESS_BASE))
        kept = missed = 0
        for i, green in enumerate(known.greens):
            if green is not None:
                if word[i] == green:
                    kept += 1
                else:
                    missed += 1
        underused = reused = 0
        for c, n in known.yellow.items():
            used = word.count(c)
            if used < n:
                underused += 1
            if used:
                reused += 1
        grays_used = len(known.grays.intersection(word))
        if missed:
            reasons.append((GREEN_NOT_KEPT, GREEN_NOT_KEPT_PENALTY * missed))
        if underused:
            reasons.append((YELLOW_UNDERUSED, YELLOW_UNDERUSED_PENALTY * underused))
        if grays_used:
            reasons.append((GRAY_USED, GRAY_USED_PENALTY * grays_used))
        if kept:
            reasons.append((GREEN_KEPT, GREEN_KEPT_PENALTY * kept))
        if reused:
            reasons.append((YELLOW_REUSED, YELLOW_REUSED_PENALTY * reused))
        if turn == 1:
            opener = OPENER_ENTROPY_BONUS * ENTROPY.get(word, 0.0)
            if opener:
                reasons.append((OPENER_ENTROPY, opener))
        else:
            fresh = len(set(word) - self._tried)
            if fresh:
                reasons.append((NEW_LETTERS, NEW_LETTER_BONUS * fresh))
        if word not in ALLOWED:
            reasons.append((NOT_IN_DICTIONARY, NOT_IN_DICTIONARY_PENALTY))
        before = known.mask.bit_count()
        known.update(word, marks)
        if turn > 1 and before:
            after = known.mask.bit_count()
            if after != before:
                reasons.append((ELIMINATION, ELIMINATION_BONUS * (before - after) / before))

    def _record(self, turn: int | None, word: str, kind: str, reasons: list[tuple[str, float]]) -> None:
        # Sum this call's events first, then add the total to the score: the baseline in
        # benchmarks/ does the same, so the two agree to the last bit.
        delta = 0.0
        for _, points in reasons:
            delta += points
        self.score += delta
        self.events.append(GuessEvent(turn, word, kind, delta, tuple(reasons)))
