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


def generate(
    params: Mapping[str, np.ndarray],
    config: lm.ModelConfig,
    prompts: Sequence[Sequence[int]],
    sampling: Sequence[SamplingParams],
    rngs: Sequence[np.random.Generator],
    adapter: object = None,
) -> list[Generation]:
    """Sample a continuation of every prompt, in one batch: each prompt is read into the KV cache
    (prefill), then every unfinished sequence advances one token per shared forward pass."""
    weights = lm.effective_weights(params, adapter)
    n = len(prompts)
    cache = lm.KVCache(config, n, dtype=params["wte"].dtype)
    out = [Generation(prompt_tokens=len(p)) for p in prompts]
    budgets = [min(s.max_tokens, config.context - len(p)) for p, s in zip(prompts, sampling)]
    pending: list[int] = []
    next_token: dict[int, int] = {}
    ready = [row for row, prompt in enumerate(prompts) if budgets[row] > 0 and prompt]  # else: empty, "length"
    for chunk in _prefill_chunks(ready, prompts):
        logits = lm.prefill(params, config, cache, chunk, [prompts[r] for r in chunk], weights)
        for i, row in enumerate(chunk):
            if _take(row, logits[i], out, sampling, rngs, budgets):
                pending.append(row)
                next_token[row] = out[row].tokens[-1]
    pending.sort()
    while pending:
        # While most sequences are still going, every row of the cache runs (slices are views,
        # and finished rows are parked at a fixed position, their output ignored); once fewer
        # than half are left, only those run (a gather, but no wasted rows).
        if len(pending) * 2 > n:
            rows = np.arange(n)
            parked = [r for r in range(n) if r not in next_token]
            saved = cache.lengths.copy()
            cache.lengths[parked] = np.minimum(cache.lengths[parked], config.context - 1)
            tokens = np.asarray([next_token.get(r, EOT) for r in range(n)])
            logits = lm.decode(params, config, cache, rows, tokens, weights)
            cache.lengths[parked] = saved[parked]
            logits = logits[pending]
        else:
            rows = np.asarray(pending)
            logits = lm.decode(params, config, cache, rows, np.asarray([next_token[r] for r in pending]), weights)
        still = []
        for i, row in enumerate(pending):
            if _take(row, logits[i], out, sampling, rngs, budgets):
                still.append(row)
                next_token[row] = out[row].tokens[-1]
            else:
                next_token.pop(row, None)
        pending = still
    return out


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


def _take(
    row: int,
    logits: np.ndarray,
    out: list[Generation],
    sampling: Sequence[SamplingParams],
    rngs: Sequence[np.random.Generator],
    budgets: Sequence[int],
) -> bool:
    """Sample one token for `row`; True if the sequence goes on."""
    gen = out[row]
    allowed = grammar_mask(gen.tokens) if sampling[row].tool_call_grammar else None
    token, logp = choose(logits, sampling[row], float(rngs[row].random()), allowed)
    gen.tokens.append(token)
    gen.logprobs.append(logp)
    if token in sampling[row].stop:
        gen.stopped = True
        return False
    return len(gen.tokens) < budgets[row]
