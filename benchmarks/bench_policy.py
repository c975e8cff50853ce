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

Everything a turn returns is hashed: content, tool call, token counts, finish reason and the
trace (numpy arrays by dtype, shape and bytes; floats by their exact hex), plus
`feedback_arrays.entropies` on random pattern matrices. The hash must equal GOLDEN, recorded
from the code before any speed work: a faster policy must give bit-identical results (training
is deterministic per seed and stored experiment results are compared to 1e-9). `--record` prints
the hash instead of checking it.

Timing is this process's CPU time per decision (time.process_time around each call; on a shared
machine wall-clock time mostly measures the neighbours): the median over decisions of each
repeat, then the median over repeats.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import time
from collections import Counter
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
from mtrl_course.local.policy import FORMATS, N_FEATURES, Adapter, StandInPolicy, vocabulary
from wordle_agent.game import PRIOR_GUESSES_HEADER, WordleGame, score_guess

# sha256 of every decision of the default run (320 games), recorded with the policy and
# feedback_arrays of commit 2d4cb19, before any speed work (that tree's agent_src first on
# PYTHONPATH, calling run(320) directly: the checks in main() need the new code).
GOLDEN = "ef8ffcc894c98d4614a2c152332bdf7b2bd3c730cac7c3517babb30fba6f7d82"
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


def digest_value(h: Any, value: Any) -> None:
    """Feed `value` into the hash with its type, exactly (floats as hex, arrays as bytes)."""
    if isinstance(value, np.ndarray):
        h.update(f"nd{value.dtype.str}{value.shape}".encode())
        h.update(np.ascontiguousarray(value).tobytes())
    elif isinstance(value, dict):
        h.update(f"dict{len(value)}".encode())
        for key in value:
            digest_value(h, key)
            digest_value(h, value[key])
    elif isinstance(value, (list, tuple)):
        h.update(f"{type(value).__name__}{len(value)}".encode())
        for item in value:
            digest_value(h, item)
    elif isinstance(value, float):
        h.update(f"float{value.hex()}".encode())
    elif isinstance(value, np.floating):
        h.update(f"{type(value).__name__}{float(value).hex()}".encode())
    else:
        h.update(f"{type(value).__name__}:{value!r}".encode())


def play(
    game_index: int,
    policies: list[StandInPolicy],
    answers: list[str],
    allowed: list[str],
    timings: list[float],
    h: Any,
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
            digest_value(h, [message, choice["finish_reason"], response["usage"], response["model"], trace])
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
            digest_value(
                h,
                [
                    decision.content,
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


def digest_entropies(h: Any) -> None:
    rnd = np.random.default_rng(3)
    for rows, cols, top in ((1, 1, 243), (3, 0, 243), (16, 2, 243), (16, 40, 9), (32, 300, 243), (200, 2309, 243)):
        matrix = rnd.integers(0, top, size=(rows, cols)).astype(np.uint8)
        digest_value(h, entropies(matrix))
        digest_value(h, entropies(matrix[:, : cols // 2]))
        if rows and cols:
            digest_value(h, entropy_bits(matrix[0]))


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


def run(games: int) -> tuple[str, list[float], Counter]:
    vocab = vocabulary()
    policies = [StandInPolicy(a, seed=s) for s, a in enumerate(adapters())]
    h = hashlib.sha256()
    timings: list[float] = []
    kinds: Counter = Counter()
    for g in range(games):
        kinds += play(g, policies, vocab.answers, vocab.allowed, timings, h)
    digest_entropies(h)
    return h.hexdigest(), timings, kinds


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
    print(f"hash: {digest}")
    if args.record:
        return
    if args.games != DEFAULT_GAMES:
        print(f"(not checked against GOLDEN: it covers the default {DEFAULT_GAMES} games)")
    elif digest != GOLDEN:
        raise SystemExit(f"GOLDEN MISMATCH: expected {GOLDEN}, got {digest}")
    else:
        print("golden hash: equal")


if __name__ == "__main__":
    main()
