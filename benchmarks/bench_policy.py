"""Speed of the stand-in policy's turn (`StandInPolicy.decide`), with a golden check.

    python benchmarks/bench_policy.py [--games 320] [--repeats 3] [--record]

Plays a fixed set of games through `decide` (and, for every other game, through `complete`, the
emulator's entry point): efforts none/low/medium/high, temperatures 0, 0.7 and 1, several rng
keys and adapters (the base, a trained-looking one, one whose format head drifted to raw text or
no call), some games seeded with prior guesses, some with a hand-typed word outside the lists
(first guess or prior guess), some with made-up marks (clues that contradict the game or that
no word can give), some with a `max_tokens` cap that cuts replies, and loops (greedy
turns of an undecided policy). After a reply without a call the conversation gets one "call the
tool now" nudge, as the rollout does; finished games get one more turn (the closing text).

Everything a turn returns is checked, in two parts (docs/DESIGN.md, "Comparing numbers across
machines"):
- the machine-independent part, exactly: content, tool call, token counts, finish reason, the
  trace's structure, integers and strings (numpy arrays by dtype and shape; floats by their
  place only). Its sha256 must equal GOLDEN_EXACT.
- the floats (every float and float array of the trace, and `feedback_arrays.entropies` on
  random pattern matrices), within a tolerance: they are folded into FINGERPRINT_BUCKETS sums
  (the i-th float into bucket i mod FINGERPRINT_BUCKETS), which must equal FINGERPRINT to a
  relative FLOAT_RTOL. Their last bits depend on the CPU: numpy's AVX-512 kernels for dot
  products and `exp` round differently from the AVX2 ones, which changed a bytes-level hash of
  the same turns on an AVX2 machine.
Both were recorded from code whose bytes-level hash still equalled the one recorded before any
speed work (ef8ffcc8..., on an AVX-512 machine): a faster policy must give the same turns (training
is deterministic per seed on one machine). `--record` prints them instead of checking them.

Timing is this process's CPU time per decision (time.process_time around each call; on a shared
machine wall-clock time mostly measures the neighbours): the median over decisions of each
repeat, then the median over repeats.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import statistics
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np

from mtrl_course.feedback_arrays import (
    _entropy_terms,
    encode,
    entropies,
    entropy_bits,
    pattern_matrix,
    pattern_to_marks,
)
from mtrl_course.local.stand_in_policy import FORMATS, N_FEATURES, Adapter, StandInPolicy, vocabulary
from wordle_agent.game import PRIOR_GUESSES_HEADER, WordleGame, score_guess

# The default run's 320 games, recorded at the commit that introduced the split (its bytes-level
# hash equalled the one recorded from commit 2d4cb19's policy before any speed work).
GOLDEN_EXACT = "0ec1a233b827988009e171452f173b4bfb4e0928ec24b048eba95baafcb63192"
FINGERPRINT_BUCKETS = 16
FINGERPRINT: tuple[float, ...] = tuple(
    float.fromhex(h)
    for h in (
        "0x1.7d47e443b4094p+12",
        "0x1.7d65e6b6a1b1ap+12",
        "0x1.7d936fd9364d2p+12",
        "0x1.7fca4c46374bep+12",
        "0x1.7e3b53fed5465p+12",
        "0x1.7e7e50866ef3fp+12",
        "0x1.7a4196ce5f7a2p+12",
        "0x1.7be34797e72d8p+12",
        "0x1.831e3a748dd52p+12",
        "0x1.825f1029773dbp+12",
        "0x1.82b139bc7fc24p+12",
        "0x1.83528ad51770bp+12",
        "0x1.835f5b45fa3dcp+12",
        "0x1.8260b3c847684p+12",
        "0x1.8132fe163771fp+12",
        "0x1.78fb5f82d8e25p+12",
    )
)
FLOAT_COUNT = 247500
# Measured: the buckets were equal to the last bit between repeats, with numpy's AVX-512 kernels
# switched off (NPY_DISABLE_CPU_FEATURES=X86_V4 with OpenBLAS's Haswell kernels, as on an AVX2
# CPU) and with the test-only reversed summation (MTRL_PERTURB_ARITHMETIC=1): last-bit changes of
# single floats vanish in sums of about 15,000. 1e-9 leaves room for kernels not measured and
# still catches a change of meaning (a feature moved by 1e-6 moves its bucket by about 1e-7).
FLOAT_RTOL = 1e-9
DEFAULT_GAMES = 320
DEFAULT_REPEATS = 3
MAX_TURNS_PER_GAME = 10
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "guess_word",
            "description": "Play one Wordle guess.",
            "parameters": {"type": "object", "properties": {"guess": {"type": "string"}}, "required": ["guess"]},
        },
    }
]
EFFORT_CHOICES = ("low", "medium", "low", "medium", "high", "none", None)
TEMPERATURES = (0.0, 1.0, 0.0, 1.0, 0.7)
# Five-letter strings outside the word lists: a learner can type anything.
HAND_TYPED = ("QXZJV", "AEIOU", "ZZZZZ", "CRNAE", "PPAST")
CAPS = (None, None, None, None, 12, 40, 90, 8192)
COLOR = {"G": "green", "Y": "yellow", "X": "gray"}
NUDGE = "Call the guess_word tool now."


def adapters() -> list[Adapter]:
    drifted = np.zeros(len(FORMATS))
    drifted[1] = 6.0
    nocall = np.zeros(len(FORMATS))
    nocall[2] = 6.5
    return [
        Adapter(),
        Adapter(weights=np.array([2.0, 1.5, 1.0, -0.5, -0.3, 1.0, 0.2, 0.4, 0.5, -0.2, 0.3])),
        Adapter(weights=np.array([20.0, 5, 0, 0, 0, -20, 0, 5, 0, 0, 0])),
        Adapter(format_logits=drifted),
        Adapter(weights=np.linspace(-1.0, 1.0, N_FEATURES), format_logits=nocall),
    ]


def text_shape(content: str | None) -> int | None:
    """A reply's text in the exact part: only whether there is one and its length in characters.

    The reasoning lists the top candidates in the order of their logits, so which words it shows
    and in what order is decided by float comparisons: two candidates whose logits are equal but
    for the last bits swap places, or trade the last listed place, when the dot product is summed
    in another order (2 of 1,475 turns under MTRL_PERTURB_ARITHMETIC=1; none with numpy's AVX2
    kernels). The words themselves are checked through the tool call and the trace.
    """
    return None if content is None else len(content)


class Digest:
    """The exact hash of what is machine-independent, and the floats set aside for a tolerance."""

    def __init__(self) -> None:
        self.exact = hashlib.sha256()
        self.floats: list[float] = []

    def add(self, value: Any) -> None:
        exact = self.exact
        if isinstance(value, np.ndarray):
            exact.update(f"nd{value.dtype.str}{value.shape}".encode())
            if value.dtype.kind == "f":
                self.floats.extend(np.ravel(value).astype(float).tolist())
            else:
                exact.update(np.ascontiguousarray(value).tobytes())
        elif isinstance(value, dict):
            exact.update(f"dict{len(value)}".encode())
            for key in value:
                self.add(key)
                self.add(value[key])
        elif isinstance(value, (list, tuple)):
            exact.update(f"{type(value).__name__}{len(value)}".encode())
            for item in value:
                self.add(item)
        elif isinstance(value, (float, np.floating)):
            exact.update(type(value).__name__.encode())
            self.floats.append(float(value))
        else:
            exact.update(f"{type(value).__name__}:{value!r}".encode())

    def fingerprint(self) -> tuple[float, ...]:
        buckets = [0.0] * FINGERPRINT_BUCKETS
        for index, value in enumerate(self.floats):
            buckets[index % FINGERPRINT_BUCKETS] += abs(value) if math.isfinite(value) else 0.0
        return tuple(buckets)

    def result(self) -> Result:
        return Result(self.exact.hexdigest(), self.fingerprint(), len(self.floats))


@dataclass(frozen=True)
class Result:
    exact: str
    fingerprint: tuple[float, ...]
    float_count: int

    def problems(self) -> list[str]:
        """What differs from the recorded run (empty when it matches)."""
        found = []
        if self.exact != GOLDEN_EXACT:
            found.append(f"exact part: expected {GOLDEN_EXACT}, got {self.exact}")
        if self.float_count != FLOAT_COUNT:
            found.append(f"float count: expected {FLOAT_COUNT}, got {self.float_count}")
        worst = max_relative_change(self.fingerprint, FINGERPRINT)
        if not worst <= FLOAT_RTOL:
            found.append(f"floats: a fingerprint bucket moved by {worst:.3g} relative (tolerance {FLOAT_RTOL:g})")
        return found


def max_relative_change(got: tuple[float, ...], expected: tuple[float, ...]) -> float:
    if len(got) != len(expected):
        return math.inf
    return max((abs(a - b) / max(abs(b), 1e-300) for a, b in zip(got, expected)), default=0.0)


def play(
    game_index: int,
    policies: list[StandInPolicy],
    answers: list[str],
    allowed: list[str],
    timings: list[float],
    h: Digest,
) -> Counter:
    rnd = np.random.default_rng(game_index)
    policy = policies[game_index % len(policies)]
    effort = EFFORT_CHOICES[game_index % len(EFFORT_CHOICES)]
    temperature = TEMPERATURES[game_index % len(TEMPERATURES)]
    cap = CAPS[game_index % len(CAPS)]
    answer = answers[int(rnd.integers(len(answers)))]
    prior: list[str] = []
    if game_index % 4 == 1:
        others = [w for w in answers if w != answer]
        prior = [others[int(i)] for i in rnd.choice(len(others), size=int(rnd.integers(1, 3)), replace=False)]
    game = WordleGame(answer, prior_guesses=prior)
    instruction = "Guess the hidden 5-letter word."
    if prior:
        instruction += "\n\n" + game.prior_guesses_text()
        if game_index % 8 == 1:  # a hand-typed prior (the game itself only seeds dictionary words)
            typed = HAND_TYPED[game_index % len(HAND_TYPED)]
            marks = ", ".join(f"{c}={COLOR[m]}" for c, m in zip(typed, score_guess(typed, answer)))
            instruction = instruction.replace(
                PRIOR_GUESSES_HEADER, f"{PRIOR_GUESSES_HEADER}\nGuess 0/6: {typed} -> {marks}"
            )
    messages: list[dict] = [
        {"role": "system", "content": "You are playing Wordle."},
        {"role": "user", "content": [{"type": "text", "text": instruction}] if game_index % 2 else instruction},
    ]
    if game_index % 5 == 2:  # a hand-typed first guess, outside the lists
        word = HAND_TYPED[game_index % len(HAND_TYPED)]
        call = {
            "id": "call_typed",
            "type": "function",
            "function": {"name": "guess_word", "arguments": json.dumps({"guess": word})},
        }
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": "call_typed", "content": game.guess(word)})
    if game_index % 9 == 4:  # made-up marks: clues that contradict the game, or that no word can give
        word = allowed[int(rnd.integers(len(allowed)))]
        marks = "".join(str(m) for m in rnd.choice(list("GYX"), size=5))
        text = f"Guess 1/6: {word} -> " + ", ".join(f"{c}={COLOR[m]}" for c, m in zip(word, marks))
        call = {
            "id": "call_made_up",
            "type": "function",
            "function": {"name": "guess_word", "arguments": json.dumps({"guess": word})},
        }
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": "call_made_up", "content": text})
    via_complete = game_index % 2 == 1
    key = [int(rnd.integers(1000)), 0, game_index, 0, int(rnd.integers(8)), 0]
    kinds: Counter = Counter()
    nudged = False
    for turn in range(MAX_TURNS_PER_GAME):
        finished = game.over
        started = time.process_time()
        if via_complete:
            request: dict[str, Any] = {"model": "m", "messages": messages, "tools": TOOLS, "temperature": temperature}
            if effort is not None:
                request["reasoning_effort"] = effort
            if cap is not None:
                request["max_tokens"] = cap
            trajectory = _Slot({"rng_key": key}, turn)
            response = policy.complete(request, trajectory)
            timings.append(time.process_time() - started)
            trace = response["policy_trace"]
            choice = response["choices"][0]
            message = choice["message"]
            shown = {**message, "content": text_shape(message.get("content"))}
            h.add([shown, choice["finish_reason"], response["usage"], response["model"], trace])
            calls = message.get("tool_calls") or []
            content = message.get("content")
            word = json.loads(calls[0]["function"]["arguments"])["guess"] if calls else None
            call_id = calls[0]["id"] if calls else None
        else:
            decision = policy.decide(
                messages, TOOLS, temperature=temperature, effort=effort, rng_key=[*key, turn], max_tokens=cap
            )
            timings.append(time.process_time() - started)
            trace = decision.trace
            h.add(
                [
                    text_shape(decision.content),
                    decision.tool_call,
                    decision.trace,
                    decision.prompt_tokens,
                    decision.completion_tokens,
                    decision.finish_reason,
                ],
            )
            content = decision.content
            word = json.loads(decision.tool_call["arguments"])["guess"] if decision.tool_call else None
            call_id = decision.tool_call["id"] if decision.tool_call else None
        kinds[trace["kind"]] += 1
        if finished:
            break
        if word is not None:
            call = {
                "id": call_id,
                "type": "function",
                "function": {"name": "guess_word", "arguments": json.dumps({"guess": word})},
            }
            messages.append({"role": "assistant", "content": content, "tool_calls": [call]})
            messages.append({"role": "tool", "tool_call_id": call_id, "content": game.guess(word)})
            nudged = False
        elif trace["kind"] == "guess" and trace["format"] == 1:  # raw text: the rollout recovers it
            messages.append({"role": "assistant", "content": content})
            messages.append({"role": "user", "content": game.guess_from_text(trace["word"])})
        else:
            if nudged:
                break
            messages.append({"role": "assistant", "content": content})
            messages.append({"role": "user", "content": NUDGE})
            nudged = True
    return kinds


class _Slot:
    """The trajectory facts `complete` reads: the rng key and the count of earlier turns."""

    def __init__(self, info: dict, sample_count: int) -> None:
        self.info = info
        self.sample_count = sample_count
        self.trajectory_id = "bench"


def digest_entropies(h: Digest) -> None:
    rnd = np.random.default_rng(3)
    for rows, cols, top in ((1, 1, 243), (3, 0, 243), (16, 2, 243), (16, 40, 9), (32, 300, 243), (200, 2309, 243)):
        matrix = rnd.integers(0, top, size=(rows, cols)).astype(np.uint8)
        h.add(entropies(matrix))
        h.add(entropies(matrix[:, : cols // 2]))
        if rows and cols:
            h.add(entropy_bits(matrix[0]))


def check_consistent(trials: int = 300) -> None:
    """`Vocabulary.consistent` against the definition: scoring the clue's guess against each word.

    Clue guesses are dictionary words and hand-typed strings with repeated letters; marks are
    mostly real (the guess scored against a random word, so many words agree) and sometimes any
    of the 243 codes, including impossible ones. Every allowed word is checked, with up to three
    clues at once.
    """
    vocab = vocabulary()
    rnd = np.random.default_rng(11)
    rows = np.arange(len(vocab.allowed))
    allowed = encode(vocab.allowed)
    for _ in range(trials):
        clues = []
        expected = np.ones(len(rows), dtype=bool)
        for _ in range(int(rnd.integers(1, 4))):
            if rnd.random() < 0.7:
                word = vocab.allowed[int(rnd.integers(len(vocab.allowed)))]
            else:
                word = "".join(chr(65 + int(c)) for c in rnd.choice([0, 4, 4, 8, 14, 18, 19, 17, 11, 25], size=5))
            scores = pattern_matrix([word], allowed)[0]
            code = int(scores[int(rnd.integers(len(rows)))]) if rnd.random() < 0.8 else int(rnd.integers(243))
            clues.append((word, pattern_to_marks(code)))
            expected &= scores == code
        if not np.array_equal(vocab.consistent(clues, rows), expected):
            raise SystemExit(f"Vocabulary.consistent disagrees with the scoring rule on clues {clues}")


def check_entropy_terms() -> None:
    """The lookup table `entropies` reads against the formula it replaced, for every answer count
    (1 to the answer list's size) and every count in it, evaluated inside a larger array."""
    rnd = np.random.default_rng(5)
    for n in range(1, len(vocabulary().answers) + 1):
        counts = np.concatenate([rnd.integers(0, n + 1, size=int(rnd.integers(0, 40))), rnd.permutation(n + 1)])
        p = counts / n
        with np.errstate(divide="ignore", invalid="ignore"):
            direct = np.where(p > 0, p * np.log2(np.where(p > 0, p, 1.0)), 0.0)
        if direct.tobytes() != _entropy_terms(n)[counts].tobytes():
            raise SystemExit(f"entropies' lookup table differs from the formula for {n} answers")


def run(games: int) -> tuple[Result, list[float], Counter]:
    vocab = vocabulary()
    policies = [StandInPolicy(a, seed=s) for s, a in enumerate(adapters())]
    h = Digest()
    timings: list[float] = []
    kinds: Counter = Counter()
    for g in range(games):
        kinds += play(g, policies, vocab.answers, vocab.allowed, timings, h)
    digest_entropies(h)
    return h.result(), timings, kinds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=DEFAULT_GAMES)
    parser.add_argument("--repeats", type=int, default=DEFAULT_REPEATS)
    parser.add_argument("--record", action="store_true", help="print the hash instead of checking it")
    args = parser.parse_args()
    vocabulary()  # load the pattern matrix outside the timing
    check_consistent()
    check_entropy_terms()
    medians, totals = [], []
    digests = set()
    kinds: Counter = Counter()
    for _ in range(args.repeats):
        digest, timings, kinds = run(args.games)
        digests.add(digest)
        medians.append(statistics.median(timings))
        totals.append(sum(timings))
    print(f"decisions per run: {sum(kinds.values())} ({dict(sorted(kinds.items()))})")
    print(
        f"median CPU per decision: {1e3 * statistics.median(medians):.3f} ms (repeats: "
        + ", ".join(f"{1e3 * m:.3f}" for m in medians)
        + ")"
    )
    print(f"median CPU per run: {statistics.median(totals):.2f} s")
    if len(digests) != 1:
        raise SystemExit(f"the policy is not deterministic: {len(digests)} different hashes over the repeats")
    digest = digests.pop()
    print(f"exact part: {digest.exact}; {digest.float_count} floats")
    if args.record:
        print(f"GOLDEN_EXACT = {digest.exact!r}\nFLOAT_COUNT = {digest.float_count}")
        print(f"FINGERPRINT = {tuple(float.hex(v) for v in digest.fingerprint)!r}  # float.fromhex each")
        return
    if args.games != DEFAULT_GAMES:
        print(f"(not checked against the recorded run: it covers the default {DEFAULT_GAMES} games)")
    elif problems := digest.problems():
        raise SystemExit("GOLDEN MISMATCH: " + "; ".join(problems))
    else:
        print(f"golden: exact part equal, floats within {FLOAT_RTOL:g}")


if __name__ == "__main__":
    main()
