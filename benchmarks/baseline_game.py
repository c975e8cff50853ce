"""A straightforward Wordle game with the same rules and reward as wordle_agent.game.

This is the yardstick for the speed benchmark and a second, independent reading of the game
and reward rules: plain lists and dicts, and the possible answers found by checking every answer
against the knowledge after each guess. It shares only the word lists and the reward constants
with the real module (the constants are data, not logic). It must give the same tool text and
the same final reward, to the last bit, for any sequence of calls; the parity test
(tests/test_game_baseline_parity.py) and benchmarks/bench_game.py check that.

Bit-exact floats need one shared convention, stated here because the real module follows it too:
each call's shaping events are summed from 0.0 in the order reward.py lists them, and only that
sum is added to the running score.
"""

from __future__ import annotations

from wordle_agent import reward
from wordle_agent.words import ALLOWED, ANSWERS, ENTROPY

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
COLOR = {"G": "green", "Y": "yellow", "X": "gray"}
MAX_CALLS = 12
MAX_GUESSES = reward.MAX_GUESSES


def feedback(guess: str, answer: str) -> list[str]:
    """Greens first, then yellows left to right while the answer has copies left."""
    marks = ["X", "X", "X", "X", "X"]
    leftover = []
    for i in range(5):
        if guess[i] == answer[i]:
            marks[i] = "G"
        else:
            leftover.append(answer[i])
    for i in range(5):
        if marks[i] == "X" and guess[i] in leftover:
            marks[i] = "Y"
            leftover.remove(guess[i])
    return marks


def clean(raw: object) -> str | None:
    if not isinstance(raw, str):
        return None
    text = raw.strip()
    if len(text) != 5:
        return None
    for ch in text:
        if ch.upper() not in LETTERS or not ch.isascii():
            return None
    return text.upper()


class BaselineGame:
    def __init__(self, answer: str) -> None:
        self.answer = answer.upper()
        self.guesses: list[str] = []
        self.score = 0.0
        self.solved = False
        self.calls = 0
        # Knowledge
        self.green = ["", "", "", "", ""]
        self.at_least: dict[str, int] = {}
        self.gray: list[str] = []
        self.yellow_not_at: dict[str, list[int]] = {}
        self.remaining = len(ANSWERS)

    def possibilities(self) -> list[str]:
        return [w for w in ANSWERS if self.fits(w)]

    def fits(self, word: str) -> bool:
        for i in range(5):
            if self.green[i] and word[i] != self.green[i]:
                return False
        for letter in self.gray:
            if letter in word:
                return False
        for letter, n in self.at_least.items():
            if word.count(letter) < n:
                return False
        for letter, spots in self.yellow_not_at.items():
            for i in spots:
                if word[i] == letter:
                    return False
        return True

    def yellow_letters(self) -> dict[str, int]:
        """Present letters with more known copies than green squares."""
        out = {}
        for letter, n in self.at_least.items():
            if n > self.green.count(letter):
                out[letter] = n
        return out

    def learn(self, word: str, marks: list[str]) -> None:
        seen: dict[str, int] = {}
        for i in range(5):
            if marks[i] == "G":
                self.green[i] = word[i]
            if marks[i] == "Y":
                self.yellow_not_at.setdefault(word[i], [])
                if i not in self.yellow_not_at[word[i]]:
                    self.yellow_not_at[word[i]].append(i)
            if marks[i] != "X":
                seen[word[i]] = seen.get(word[i], 0) + 1
        for letter, n in seen.items():
            self.at_least[letter] = max(self.at_least.get(letter, 0), n)
        for i in range(5):
            if marks[i] == "X" and word[i] not in seen and word[i] not in self.gray:
                self.gray.append(word[i])

    def summary(self) -> str:
        pattern = " ".join(c if c else "_" for c in self.green)
        yellow = self.yellow_letters()
        parts = [f"'{c}' (at least {yellow[c]})" for c in sorted(yellow)]
        unique = []
        for w in self.guesses:
            if w not in unique:
                unique.append(w)
        return "\n".join(
            [
                "Current Knowledge:",
                "- Correct Position (Green): " + pattern,
                "- In Word, Wrong Position (Yellow): " + (", ".join(parts) if parts else "None"),
                "- Not in Word (Gray): " + (", ".join(sorted(self.gray)) if self.gray else "None"),
                "- Words Already Guessed: " + (", ".join(unique) if unique else "None"),
                "- Guesses Remaining: " + str(MAX_GUESSES - len(self.guesses)),
            ]
        )

    def guess(self, raw: object, from_text: bool = False) -> str:
        self.calls += 1
        if self.solved or len(self.guesses) >= MAX_GUESSES:
            return "Game over: this game has ended, so no more guesses are accepted."
        if self.calls > MAX_CALLS:
            return (
                f"Tool call limit reached: at most {MAX_CALLS} guess_word calls per game, "
                "so no more guesses are accepted."
            )
        word = clean(raw)
        if word is None:
            try:
                shown = repr(raw)
            except Exception:
                shown = "<" + type(raw).__name__ + ">"
            if len(shown) > 40:
                shown = shown[:37] + "..."
            self.score += 0.0 + reward.MALFORMED_PENALTY
            return (
                f"Invalid guess {shown}: a guess must be exactly five letters A-Z. "
                f"No guess was used; guesses remaining: {MAX_GUESSES - len(self.guesses)}."
            )
        turn = len(self.guesses) + 1
        points = [reward.TIME_PENALTY]
        if word in self.guesses:
            points.append(reward.REPEAT_PENALTY)
            self.guesses.append(word)
            text = f"Guess {turn}/{MAX_GUESSES}: {word} was already guessed; "
            text += "repeating it used a guess.\n"
            text += self.summary()
        elif word == self.answer:
            self.solved = True
            self.guesses.append(word)
            text = f"Guess {turn}/{MAX_GUESSES}: {word} \u2014 all green. Correct, you solved it!"
        else:
            points += self.shaping(word, turn)
            self.guesses.append(word)
            marks = feedback(word, self.answer)
            text = f"Guess {turn}/{MAX_GUESSES}: {word} -> "
            text += ", ".join(word[i] + "=" + COLOR[marks[i]] for i in range(5))
            if word not in ALLOWED:
                text += " (not in the dictionary; it still used a guess)"
            text += "\n" + self.summary()
        if from_text:
            points.append(reward.RAW_TEXT_PENALTY)
        total = 0.0
        for p in points:
            total += p
        self.score += total
        if not self.solved and len(self.guesses) == MAX_GUESSES:
            text += f"\nOut of guesses: the word was {self.answer}."
        return text

    def shaping(self, word: str, turn: int) -> list[float]:
        """The events of an ordinary guess, in table order; also learns from its feedback."""
        points = [reward.VALID_GUESS_BASE]
        missed = sum(1 for i in range(5) if self.green[i] and word[i] != self.green[i])
        kept = sum(1 for i in range(5) if self.green[i] and word[i] == self.green[i])
        yellow = self.yellow_letters()
        short = sum(1 for c in yellow if word.count(c) < yellow[c])
        reused = sum(1 for c in yellow if c in word)
        grays = sum(1 for c in self.gray if c in word)
        points.append(reward.GREEN_NOT_KEPT_PENALTY * missed if missed else 0.0)
        points.append(reward.YELLOW_UNDERUSED_PENALTY * short if short else 0.0)
        points.append(reward.GRAY_USED_PENALTY * grays if grays else 0.0)
        points.append(reward.GREEN_KEPT_PENALTY * kept if kept else 0.0)
        points.append(reward.YELLOW_REUSED_PENALTY * reused if reused else 0.0)
        if turn == 1:
            points.append(reward.OPENER_ENTROPY_BONUS * ENTROPY.get(word, 0.0))
        else:
            before_letters = set("".join(self.guesses))
            fresh = len([c for c in set(word) if c not in before_letters])
            points.append(reward.NEW_LETTER_BONUS * fresh)
        if word not in ALLOWED:
            points.append(reward.NOT_IN_DICTIONARY_PENALTY)
        before = self.remaining
        self.learn(word, feedback(word, self.answer))
        after = len(self.possibilities())
        self.remaining = after
        if turn > 1 and before > 0:
            points.append(reward.ELIMINATION_BONUS * (before - after) / before)
        return points

    def final_reward(self) -> float:
        n = len(self.guesses)
        if n == 0:
            return reward.NO_PLAY_REWARD
        clip = reward.SHAPING_CLIP
        shaping = max(-clip, min(clip, self.score / reward.SHAPING_SCALE))
        if self.solved:
            speed = reward.SPEED_BONUS * (MAX_GUESSES - n) / (MAX_GUESSES - 1)
            return reward.SOLVE_BASE + speed + reward.SOLVED_SHAPING_WEIGHT * shaping
        return reward.LOSS_REWARD + reward.LOST_SHAPING_WEIGHT * shaping
