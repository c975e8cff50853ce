"""Supervised training of the base model on rendered games (next-token cross-entropy).

loss = - mean over the assistant's tokens t of log p(token_t | tokens before t). The gradient
with respect to the logits at the position before t is (softmax - onehot(token_t)) / N, zero at
unmasked positions; `model.backward` carries it to every weight.

Batches hold sequences of similar length (sorted, then cut into chunks of about
`batch_tokens` tokens, in a seeded random order), padded at the end with `<pad>`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from mtrl_course.learner import model as lm
from mtrl_course.learner.corpus import Example
from mtrl_course.rl.optim import AdamW
from mtrl_course.learner.tokenizer import PAD
from mtrl_course.numerics import exp


@dataclass(frozen=True)
class Batch:
    tokens: np.ndarray  # (B, T) int
    mask: np.ndarray  # (B, T) bool: which positions are predicted (the target is trained)

    @property
    def trained_tokens(self) -> int:
        return int(self.mask[:, 1:].sum())


def pad(examples: Sequence[Example]) -> Batch:
    width = max(len(e.tokens) for e in examples)
    tokens = np.full((len(examples), width), PAD, dtype=np.int64)
    mask = np.zeros((len(examples), width), dtype=bool)
    for i, e in enumerate(examples):
        tokens[i, : len(e.tokens)] = e.tokens
        mask[i, : len(e.mask)] = e.mask
    return Batch(tokens, mask)


def batches(examples: Sequence[Example], batch_tokens: int, rng: np.random.Generator) -> Iterator[Batch]:
    """One epoch of length-bucketed batches in a random order."""
    order = sorted(range(len(examples)), key=lambda i: (len(examples[i].tokens), i))
    chunks: list[list[int]] = []
    current: list[int] = []
    longest = 0
    for i in order:
        longest = max(longest, len(examples[i].tokens))
        if current and longest * (len(current) + 1) > batch_tokens:
            chunks.append(current)
            current, longest = [], len(examples[i].tokens)
        current.append(i)
    if current:
        chunks.append(current)
    for k in rng.permutation(len(chunks)):
        yield pad([examples[i] for i in chunks[k]])


def loss_and_grads(
    params: Mapping[str, np.ndarray], config: lm.ModelConfig, batch: Batch
) -> tuple[float, dict[str, np.ndarray]]:
    """Mean cross-entropy over the batch's trained tokens, and its gradient for every weight."""
    inputs, targets, mask = batch.tokens[:, :-1], batch.tokens[:, 1:], batch.mask[:, 1:]
    logits, cache = lm.forward(params, config, inputs)
    logp = lm.log_softmax(logits)
    n = max(int(mask.sum()), 1)
    picked = np.take_along_axis(logp, targets[..., None], -1)[..., 0]
    loss = -float((picked * mask).sum()) / n
    dlogits = exp(logp)
    np.put_along_axis(dlogits, targets[..., None], np.take_along_axis(dlogits, targets[..., None], -1) - 1, -1)
    dlogits *= (mask / n)[..., None].astype(dlogits.dtype)
    return loss, lm.backward(dlogits, params, config, cache)


def mean_loss(
    params: Mapping[str, np.ndarray], config: lm.ModelConfig, examples: Sequence[Example], batch_tokens: int
) -> float:
    total, count = 0.0, 0
    for batch in batches(examples, batch_tokens, np.random.default_rng(0)):
        loss, _ = _loss_only(params, config, batch)
        total += loss * batch.trained_tokens
        count += batch.trained_tokens
    return total / max(count, 1)


def _loss_only(params: Mapping[str, np.ndarray], config: lm.ModelConfig, batch: Batch) -> tuple[float, int]:
    inputs, targets, mask = batch.tokens[:, :-1], batch.tokens[:, 1:], batch.mask[:, 1:]
    logp = lm.log_softmax(lm.forward(params, config, inputs)[0])
    picked = np.take_along_axis(logp, targets[..., None], -1)[..., 0]
    n = max(int(mask.sum()), 1)
    return -float((picked * mask).sum()) / n, n


def cosine_lr(step: int, total: int, peak: float, warmup: int) -> float:
    if step < warmup:
        return peak * (step + 1) / warmup
    progress = (step - warmup) / max(1, total - warmup)
    return peak * (0.1 + 0.9 * 0.5 * (1 + np.cos(np.pi * min(1.0, progress))))


def train(
    params: dict[str, np.ndarray],
    config: lm.ModelConfig,
    examples: Sequence[Example],
    *,
    epochs: float,
    batch_tokens: int,
    learning_rate: float,
    seed: int,
    warmup: int = 50,
    weight_decay: float = 0.01,
    time_limit_s: float | None = None,
    on_step: Callable[[int, int, float, float], None] | None = None,
) -> tuple[dict[str, np.ndarray], list[dict[str, float]]]:
    """Train every weight; returns (params, per-step log). Stops early at `time_limit_s`."""
    rng = np.random.default_rng(seed)
    per_epoch = sum(1 for _ in batches(examples, batch_tokens, np.random.default_rng(0)))
    total = int(per_epoch * epochs)
    opt = AdamW(learning_rate, weight_decay=weight_decay)
    log: list[dict[str, float]] = []
    started, step = time.monotonic(), 0
    while step < total:
        for batch in batches(examples, batch_tokens, rng):
            if step >= total or (time_limit_s is not None and time.monotonic() - started > time_limit_s):
                return params, log
            lr = cosine_lr(step, total, learning_rate, warmup)
            loss, grads = loss_and_grads(params, config, batch)
            params, norm = opt.step(params, grads, lr)
            log.append({"step": step, "loss": loss, "lr": lr, "grad_norm": norm, "tokens": batch.trained_tokens})
            if on_step is not None:
                on_step(step, total, loss, time.monotonic() - started)
            step += 1
    return params, log
