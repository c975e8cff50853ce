"""Sampling: how the learner turns next-token logits into text, for a batch of requests at once.

This is the only place the temperature acts. Per token: logits / temperature, softmax, keep the
smallest set of tokens whose probability reaches `top_p` (nucleus sampling, Holtzman et al.
2020), renormalise, draw. Temperature 0 is greedy decoding (the most likely token; the limit
of temperature -> 0, which tests/test_learner_sampler.py checks). Generation stops at a stop
token (`<eot>`, kept as the last token, as a tokenizer's end-of-turn is) or after `max_tokens`
tokens, a hard cap (the finish reason is then "length"), or when the context is full.

Whatever the model does at temperature 0 (loop, hesitate, stop early) is what greedy decoding
of these weights does: nothing here looks at the temperature except the softmax and the greedy
argmax.

Each sequence draws from its own `numpy.random.Generator`, one uniform number per token, so a
sequence's text depends on its own seed and the weights, not on which other requests shared
its batch. (Float rounding can differ with batch shape; on one machine the same batch gives the
same result, bit for bit.)

A `PromptCache` kept across calls (learner.play keeps one per batch of games) lets a prompt that
extends an earlier prompt and its reply read only its new tokens; rows sharing one
`SamplingParams` are sampled in one numpy pass (`choose_rows`, the same numbers as `choose`).

The recorded log-probability of each sampled token is the model's own, log softmax(logits) at
temperature 1: that is pi_theta(token | context), the quantity GRPO's importance ratio compares
between the sampling weights and the weights being trained (training samples at temperature 1,
the service's default, where the two coincide).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from mtrl_course.learner import model as lm
from mtrl_course.learner.tokenizer import CALL, CLOSE_PAREN, EOT, LETTER_IDS, VOCAB_SIZE
from mtrl_course.numerics import exp


# At most this many attention scores per head in one batched prefill (about 8 MB per layer).
PREFILL_SCORES = 2_000_000


@dataclass(frozen=True)
class SamplingParams:
    temperature: float = 1.0
    top_p: float = 1.0
    max_tokens: int = 64
    stop: frozenset[int] = field(default_factory=lambda: frozenset({EOT}))
    # Structured output for the tool call (as vLLM's guided decoding can enforce a tool's JSON
    # schema): after `<call>` only letters may follow, exactly five, then ")" and `<eot>`. Off
    # by default: the course's point is that a model's malformed calls are seen as text. It is a
    # mask on the logits, applied at every temperature alike. GRPO (learner.grpo) recomputes
    # log-probabilities without the mask, so train only on replies sampled without it.
    tool_call_grammar: bool = False

    def __post_init__(self) -> None:
        if self.temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")
        if self.max_tokens < 1:
            raise ValueError(f"max_tokens must be at least 1, got {self.max_tokens}")


@dataclass
class Generation:
    """One request's sampled tokens, the model's log-probability of each, and why it ended."""

    prompt_tokens: int
    tokens: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    stopped: bool = False  # ended on a stop token (else: max_tokens or the context ran out)


def grammar_mask(written: Sequence[int]) -> np.ndarray | None:
    """The tokens `tool_call_grammar` allows next after `written` (None: any token)."""
    if CALL not in written:
        return None
    after = len(written) - 1 - written[::-1].index(CALL)
    inside = len(written) - after - 1
    allowed = np.zeros(VOCAB_SIZE, dtype=bool)
    if inside < 5:
        allowed[sorted(LETTER_IDS)] = True
    elif inside == 5:
        allowed[CLOSE_PAREN] = True
    else:
        allowed[EOT] = True
    return allowed


def choose(
    logits: np.ndarray, params: SamplingParams, u: float, allowed: np.ndarray | None = None
) -> tuple[int, float]:
    """(token, its model log-probability) from one row of logits and one uniform draw `u`.

    With a grammar mask (`allowed`), disallowed tokens get probability 0 and the recorded
    log-probability is of the masked distribution, the policy that actually sampled."""
    logits = logits.astype(np.float64)
    if allowed is not None:
        logits = np.where(allowed, logits, -np.inf)
    logp = lm.log_softmax(logits)
    if params.temperature == 0:
        token = int(np.argmax(logits))
    else:
        z = logits / params.temperature
        probs = exp(z - z.max())
        probs /= probs.sum()
        if params.top_p < 1:
            order = np.argsort(-probs, kind="stable")
            kept = order[: int(np.searchsorted(np.cumsum(probs[order]), params.top_p)) + 1]
            trimmed = np.zeros_like(probs)
            trimmed[kept] = probs[kept]
            probs = trimmed / trimmed.sum()
        cdf = np.cumsum(probs)
        token = min(int(np.searchsorted(cdf, u * cdf[-1], side="right")), len(probs) - 1)
    return token, float(logp[token])


def choose_rows(logits: np.ndarray, params: SamplingParams, us: Sequence[float]) -> tuple[list[int], list[float]]:
    """`choose` for many rows of logits sharing one `SamplingParams` (no grammar mask), one uniform
    draw per row: the same tokens and log-probabilities as `choose` row by row, in one pass of
    numpy instead of one per row (tests/test_learner_sampler.py compares them bit for bit)."""
    if params.top_p < 1:
        picks = [choose(row, params, u) for row, u in zip(logits, us)]
        return [t for t, _ in picks], [lp for _, lp in picks]
    logits = logits.astype(np.float64)
    logp = lm.log_softmax(logits)
    if params.temperature == 0:
        tokens = np.argmax(logits, axis=-1)
    else:
        z = logits / params.temperature
        probs = exp(z - z.max(-1, keepdims=True))
        probs /= probs.sum(-1, keepdims=True)
        cdf = np.cumsum(probs, axis=-1)
        # searchsorted(cdf, x, side="right") of a non-decreasing cdf counts the entries <= x.
        drawn = (cdf <= (np.asarray(us, dtype=np.float64) * cdf[:, -1])[:, None]).sum(-1)
        tokens = np.minimum(drawn, logits.shape[-1] - 1)
    return tokens.tolist(), logp[np.arange(len(tokens)), tokens].tolist()


class PromptCache:
    """A KV cache that remembers which tokens each row holds, kept across `generate` calls.

    A conversation's next prompt starts with the previous prompt and reply (whenever the template
    re-renders the reply exactly), so `generate` reads only the tokens after the longest prefix a
    row already holds (`model.extend`) instead of the whole conversation again: the same keys and
    values, computed once. `select` keeps some rows (the games still playing), in a new order.
    """

    def __init__(self, config: lm.ModelConfig, rows: int, dtype: object = np.float32) -> None:
        self.kv = lm.KVCache(config, rows, dtype=dtype)
        self.tokens: list[list[int]] = [[] for _ in range(rows)]

    def __len__(self) -> int:
        return len(self.tokens)

    def select(self, rows: Sequence[int]) -> None:
        """Keep `rows` (increasing) as rows 0, 1, ...: each kept row's held positions move up in
        place, and the cache becomes a view of its first rows (no copy of the whole cache)."""
        rows = list(rows)
        if any(b <= a for a, b in zip(rows, rows[1:])):
            raise ValueError("the rows to keep must be increasing")
        if rows == list(range(len(self))):
            return
        for i, r in enumerate(rows):
            held = int(self.kv.lengths[r])
            if r != i and held:
                for table in (*self.kv.keys, *self.kv.values):
                    table[i, :, :held] = table[r, :, :held]
        m = len(rows)
        self.kv.keys = [k[:m] for k in self.kv.keys]
        self.kv.values = [v[:m] for v in self.kv.values]
        self.kv.lengths = self.kv.lengths[np.asarray(rows, dtype=np.int64)]
        self.tokens = [self.tokens[r] for r in rows]


def generate(
    params: Mapping[str, np.ndarray],
    config: lm.ModelConfig,
    prompts: Sequence[Sequence[int]],
    sampling: Sequence[SamplingParams],
    rngs: Sequence[np.random.Generator],
    adapter: object = None,
    cache: PromptCache | None = None,
) -> list[Generation]:
    """Sample a continuation of every prompt, in one batch: each prompt is read into the KV cache
    (prefill), then every unfinished sequence advances one token per shared forward pass.

    With a `cache` (one row per prompt, in order, kept by the caller across calls with the same
    weights), each prompt reads only what its row does not already hold; the row then holds the
    prompt and the reply."""
    weights = lm.effective_weights(params, adapter)
    n = len(prompts)
    if cache is None:
        cache = PromptCache(config, n, dtype=params["wte"].dtype)
    if len(cache) != n:
        raise ValueError(f"the cache has {len(cache)} rows for {n} prompts")
    kv = cache.kv
    out = [Generation(prompt_tokens=len(p)) for p in prompts]
    budgets = [min(s.max_tokens, config.context - len(p)) for p, s in zip(prompts, sampling)]
    for row, prompt in enumerate(prompts):
        # Keep the longest prefix the row holds, short of the whole prompt (its last logits are needed).
        known = cache.tokens[row]
        held = 0
        for a, b in zip(known, prompt[: len(prompt) - 1]):
            if a != b:
                break
            held += 1
        kv.lengths[row] = held
        cache.tokens[row] = list(prompt[:held])
    pending: list[int] = []
    next_token: dict[int, int] = {}
    ready = [row for row, prompt in enumerate(prompts) if budgets[row] > 0 and prompt]  # else: empty, "length"
    fresh = [row for row in ready if kv.lengths[row] == 0]
    held_rows = [row for row in ready if kv.lengths[row] > 0]
    chunks = [(chunk, True) for chunk in _prefill_chunks(fresh, prompts)]
    chunks += [(sorted(chunk), False) for chunk in _extend_chunks(held_rows, prompts, kv.lengths)]
    for chunk, from_scratch in chunks:
        if from_scratch:
            logits = lm.prefill(params, config, kv, chunk, [prompts[r] for r in chunk], weights)
        else:
            suffixes = [prompts[r][int(kv.lengths[r]) :] for r in chunk]
            logits = lm.extend(params, config, kv, chunk, suffixes, weights)
        for row in chunk:
            cache.tokens[row] = list(prompts[row])
        pending += _take_rows(chunk, logits, out, sampling, rngs, budgets)
    for row in pending:
        next_token[row] = out[row].tokens[-1]
    pending.sort()
    while pending:
        # While most sequences are still going, every row of the cache runs (slices are views,
        # and finished rows are parked at a fixed position, their output ignored); once fewer
        # than half are left, only those run (a gather, but no wasted rows).
        if len(pending) * 2 > n:
            rows = np.arange(n)
            parked = [r for r in range(n) if r not in next_token]
            saved = kv.lengths.copy()
            kv.lengths[parked] = np.minimum(kv.lengths[parked], config.context - 1)
            tokens = np.asarray([next_token.get(r, EOT) for r in range(n)])
            logits = lm.decode(params, config, kv, rows, tokens, weights)
            kv.lengths[parked] = saved[parked]
            logits = logits[pending]
        else:
            rows = np.asarray(pending)
            logits = lm.decode(params, config, kv, rows, np.asarray([next_token[r] for r in pending]), weights)
        for row in pending:
            cache.tokens[row].append(next_token[row])
        still = _take_rows(pending, logits, out, sampling, rngs, budgets)
        for row in pending:
            next_token.pop(row, None)
        for row in still:
            next_token[row] = out[row].tokens[-1]
        pending = still
    for row in range(n):
        # A parked row at the context's end had its last position overwritten: forget that one.
        del cache.tokens[row][config.context - 1 :]
        kv.lengths[row] = len(cache.tokens[row])
    return out


def _extend_chunks(rows: list[int], prompts: Sequence[Sequence[int]], held: np.ndarray) -> list[list[int]]:
    """Rows that continue a held prefix, grouped so that one padded pass holds at most
    PREFILL_SCORES attention scores per head (new tokens x the longest row's positions)."""
    ordered = sorted(rows, key=lambda r: len(prompts[r]))
    chunks: list[list[int]] = []
    current: list[int] = []
    width = span = 0
    for row in ordered:
        w, s = max(width, len(prompts[row]) - int(held[row])), max(span, len(prompts[row]))
        if current and (len(current) + 1) * w * s > PREFILL_SCORES:
            chunks.append(current)
            current, w, s = [], len(prompts[row]) - int(held[row]), len(prompts[row])
        current.append(row)
        width, span = w, s
    if current:
        chunks.append(current)
    return chunks


def _prefill_chunks(rows: list[int], prompts: Sequence[Sequence[int]]) -> list[list[int]]:
    """Rows grouped by prompt length so that one padded prefill holds at most PREFILL_SCORES
    attention scores per head (its memory) and wastes little on padding."""
    ordered = sorted(rows, key=lambda r: len(prompts[r]))
    chunks: list[list[int]] = []
    current: list[int] = []
    for row in ordered:
        width = len(prompts[row])
        if current and (len(current) + 1) * width * width > PREFILL_SCORES:
            chunks.append(current)
            current = []
        current.append(row)
    if current:
        chunks.append(current)
    return chunks


def _take_rows(
    rows: Sequence[int],
    logits: np.ndarray,
    out: list[Generation],
    sampling: Sequence[SamplingParams],
    rngs: Sequence[np.random.Generator],
    budgets: Sequence[int],
) -> list[int]:
    """Sample one token for each of `rows` (logits row i for rows[i]); the rows that go on.

    Rows sharing one `SamplingParams` without the grammar are sampled together (`choose_rows`),
    others one by one (`choose`); either way each row draws one uniform number from its own
    generator, in the same order."""
    rows = list(rows)
    if not rows:
        return []
    first = sampling[rows[0]]
    if not first.tool_call_grammar and all(sampling[r] == first for r in rows):
        picked, logps = choose_rows(logits, first, [float(rngs[r].random()) for r in rows])
    else:
        picked, logps = [], []
        for i, row in enumerate(rows):
            allowed = grammar_mask(out[row].tokens) if sampling[row].tool_call_grammar else None
            token, logp = choose(logits[i], sampling[row], float(rngs[row].random()), allowed)
            picked.append(token)
            logps.append(logp)
    going = []
    for row, token, logp in zip(rows, picked, logps):
        gen = out[row]
        gen.tokens.append(token)
        gen.logprobs.append(logp)
        if token in sampling[row].stop:
            gen.stopped = True
        elif len(gen.tokens) < budgets[row]:
            going.append(row)
    return going
