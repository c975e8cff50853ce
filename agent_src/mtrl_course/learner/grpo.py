"""Token-level GRPO on a LoRA adapter, in one file (read it top to bottom).

One training step of the local MTRL service with the learner as the policy:

1. Each prompt was played `group_size` times through the real agent; each game got ONE reward
   (the episode's, from the game). The runner turns a group's rewards into advantages,
   A_i = (r_i - mean(r)) / (std(r) + eps) (`mtrl_course.rl.advantages.group_advantages`, shared
   with every learner; Dr. GRPO's estimator leaves out the division by the std). Every token the model sampled in game i gets the same A_i: that is how one
   reward per game becomes a per-token update.
2. Which tokens are trained: only those the model itself sampled. Each turn's `policy_trace`
   holds the prompt it was given, the tokens it sampled and their log-probabilities. The system
   marker, the task and the tool results are in the prompt, never in the sampled tokens, so they
   are masked out: the model did not choose them, and pushing up their probability would teach
   it to predict the game instead of playing it. (The turns of one game share a growing prefix:
   turn k's prompt plus its reply is the start of turn k+1's prompt whenever the template
   re-renders the reply exactly, which the parser's round trip guarantees for well-formed
   calls; such turns are trained in one sequence, the others on their own.)
3. The per-token objective (PPO's clipped surrogate, as GRPO uses it; maximised):
       rho_t = pi_theta(o_t | o_<t) / pi_old(o_t | o_<t) = exp(logp_new - logp_old)
       J = (1 / |B|) sum_i (1 / |o_i|) sum_t min(rho_t A_i, clip(rho_t, low, high) A_i) - beta KL
   with `low`, `high` the service's `clip_low_threshold` and `clip_high_threshold` (0.8, 1.2):
   the service documents them as bounds on the ratio, so they are used as bounds, not as
   1 +- epsilon. The gradient of the min with respect to logp_new is rho_t A_i where the
   unclipped term is the smaller one, and 0 where the ratio is already past the bound in the
   advantage's direction (the clipped term is constant there). Then
       d logp(o_t) / d logits_t = onehot(o_t) - softmax(logits_t)
   and the model's backward pass carries it to the adapter. With one update per batch of fresh
   samples, rho = 1 everywhere on the first pass and clipping does not bite; it does when
   samples come from an older adapter (the service's `max_steps_off_policy`).
   Normalisation: GRPO's 1/|o_i| (each game weighs the same, however many tokens it wrote), or
   with Dr. GRPO's estimator (`rl.advantages.Estimator`, one switch for both learners) one
   constant for every game, the most tokens a game can sample (`length_constant`); then the mean
   over every game of the batch (zero-advantage games included, as the stand-in's update counts
   them). Which tokens' gradients are dropped by the clip is `rl.objective.ratio_weights`, shared
   with the stand-in.
4. The KL term. The service's documentation names no KL coefficient and does not say whether
   there is one, against which reference, or with which estimator. Chosen here: the k3 estimator
   (Schulman) against the base model (the adapter switched off), per sampled token,
       KL_t = exp(ref_t - new_t) - (ref_t - new_t) - 1,   dKL_t / d new_t = 1 - exp(ref_t - new_t),
   weighted by `KL_COEF`, which defaults to 0: recent GRPO recipes (DAPO, Dr. GRPO, TRL's default)
   drop it, and the base's reference forward pass would double the cost of a step. Set it above
   0 to see what it does; the code path is tested.
5. Adam (`rl.optim.AdamW`, the one optimizer; the service's beta1, beta2, eps and gradient-norm clip) takes
   one step on the adapter's A and B matrices; the base never changes. Its step size is the
   job's `learning_rate` times `LR_SCALE`: the service's rates (up to 1e-2; its documented
   default 4e-5) are meant for the LoRA of a 20-billion-parameter model; on this 128-wide model,
   Adam steps of 3e-4 (job rate 1e-6 at the former scale of 300) left the held-out solve rate
   unchanged over ten steps (exploratory, not stored).
   `LR_SCALE` is a choice for the lesson, not a finding about any real model: at 100, the course's
   offline job rate (1e-5, `service_spec.OFFLINE_OVERRIDES`) takes Adam steps of 1e-3 on the
   adapter. At 3e-3 (the scale of 300 used before), an exploratory run (not stored) collapsed the
   stage-5 base to 0% within 10 steps even with the outcome-only reward: one step moved a game's
   log-probability by several nats; at 2e-3 on the committed base, another (not stored) left
   held-out play no better after 80 steps while its replies grew longer. The stored runs at 1e-3
   on the committed base (`experiments/results/learner_grpo*.json`) do not collapse with the
   outcome-only reward; over 20 or 40 steps they gain nothing measurable, over 160 steps about 6
   points at T=1 low; the tiered reward collapses them (see experiments/learner_grpo.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from mtrl_course.learner import model as lm
from mtrl_course.learner.lora import Adapter
from mtrl_course.learner.threads import parallel_map
from mtrl_course.learner.tokenizer import PAD
from mtrl_course.service_spec import TRAINING_SPEC, TrainingHyperparameters
from mtrl_course.numerics import exp
from mtrl_course.rl.advantages import GRPO, Estimator
from mtrl_course.rl.objective import ratio_weights
from mtrl_course.rl.optim import AdamW
from wordle_agent.game import MAX_TOOL_CALLS

# The clip bounds' defaults are the service's (stated once, in service_spec); a job's own come
# with its hyperparameters (`update(..., hyperparameters=...)`).
CLIP_LOW_THRESHOLD: float = TRAINING_SPEC["clip_low_threshold"]["default"]
CLIP_HIGH_THRESHOLD: float = TRAINING_SPEC["clip_high_threshold"]["default"]
KL_COEF = 0.0
LR_SCALE = 100.0
# Sequences per backward pass are packed up to about this many tokens (memory: the attention
# probabilities of a pass are batch x heads x length^2 floats per layer), cut where padding is
# least, each pass counted as MICROBATCH_OVERHEAD tokens of fixed cost (`_microbatches`).
MICROBATCH_TOKENS = 6000
MICROBATCH_OVERHEAD = 300
MAX_LOG_RATIO = 20.0


@dataclass(frozen=True)
class Turn:
    """One sampled reply: the prompt it read, the tokens it wrote and their old log-probabilities."""

    prompt: tuple[int, ...]
    tokens: tuple[int, ...]
    logprobs: tuple[float, ...]

    @classmethod
    def from_trace(cls, trace: Mapping) -> Turn:
        return cls(tuple(trace["prompt"]), tuple(trace["tokens"]), tuple(float(x) for x in trace["logprobs"]))


@dataclass(frozen=True)
class Sample:
    """One game: its advantage and its turns in order."""

    advantage: float
    turns: Sequence[Turn]


@dataclass(frozen=True)
class Sequence_:
    """A token sequence to run forward, and which positions hold sampled tokens (with their game)."""

    tokens: np.ndarray
    positions: np.ndarray  # index t of each sampled token (predicted from position t - 1)
    old_logprobs: np.ndarray
    weight: float  # A_i / |o_i|
    advantage: float


def sequences(sample: Sample, length: float | None = None) -> list[Sequence_]:
    """The fewest sequences that hold every sampled token of a game with its exact context.

    Each token's weight is A_i / |o_i| (GRPO), or A_i / `length` when a constant is given (Dr. GRPO)."""
    turns = [t for t in sample.turns if t.tokens]
    total = sum(len(t.tokens) for t in turns)
    if not turns or total == 0:
        return []
    weight = sample.advantage / (total if length is None else length)
    out: list[Sequence_] = []
    current: list[int] = []
    positions: list[int] = []
    olds: list[float] = []
    for turn in turns:
        prompt = list(turn.prompt)
        if not (current and prompt[: len(current)] == current):
            if current:
                out.append(_seq(current, positions, olds, weight, sample.advantage))
            current, positions, olds = [], [], []
        current = prompt[:]  # the new prompt extends (or replaces) the running sequence
        positions += list(range(len(current), len(current) + len(turn.tokens)))
        olds += list(turn.logprobs)
        current += list(turn.tokens)
    out.append(_seq(current, positions, olds, weight, sample.advantage))
    return out


def _seq(tokens: list[int], positions: list[int], olds: list[float], weight: float, advantage: float) -> Sequence_:
    return Sequence_(np.asarray(tokens), np.asarray(positions), np.asarray(olds), weight, advantage)


@dataclass
class StepStats:
    games: int = 0
    games_used: int = 0
    sampled_tokens: int = 0
    clipped_tokens: int = 0
    kl: float = 0.0
    grad_norm: float = 0.0
    loss: float = 0.0
    forward_tokens: int = 0


def objective_gradient(
    params: Mapping[str, np.ndarray],
    config: lm.ModelConfig,
    adapter: Adapter,
    batch: Sequence[Sample],
    *,
    clip_low: float = CLIP_LOW_THRESHOLD,
    clip_high: float = CLIP_HIGH_THRESHOLD,
    kl_coef: float = KL_COEF,
    length: float | None = None,
) -> tuple[dict[str, np.ndarray], StepStats]:
    """The gradient of the loss -J (descend it) with respect to the adapter's A and B matrices.

    `length`: None for GRPO's 1/|o_i|, or Dr. GRPO's constant (`length_constant`)."""
    return _gradient(params, config, adapter, batch, clip_low, clip_high, kl_coef, length, threads=1)


def _gradient(
    params: Mapping[str, np.ndarray],
    config: lm.ModelConfig,
    adapter: Adapter,
    batch: Sequence[Sample],
    clip_low: float,
    clip_high: float,
    kl_coef: float,
    length: float | None,
    threads: int,
) -> tuple[dict[str, np.ndarray], StepStats]:
    """`objective_gradient`, with `threads` microbatches computed at once (numpy releases the GIL
    in its products and large element-wise loops); their gradients and statistics are added in
    the same order as with one thread, so the result is the same, bit for bit."""
    stats = StepStats(games=len(batch))
    seqs = []
    for sample in batch:
        if sample.advantage == 0:
            continue
        found = sequences(sample, length)
        if found:
            stats.games_used += 1
            seqs += found
    grads = {k: np.zeros_like(v, dtype=np.float64) for k, v in adapter.tensors().items()}
    if not seqs or not batch:
        return grads, stats
    scale = 1.0 / len(batch)
    kl_sum = 0.0

    def one(chunk: list[Sequence_]) -> tuple[dict[str, np.ndarray], list[tuple[int, int, float, float]], int]:
        return _microbatch_gradient(params, config, adapter, chunk, scale, clip_low, clip_high, kl_coef)

    for chunk_grads, per_sequence, forward_tokens in parallel_map(one, _microbatches(seqs), threads):
        for clipped, sampled, loss, kl in per_sequence:
            stats.clipped_tokens += clipped
            stats.sampled_tokens += sampled
            stats.loss -= loss
            kl_sum += kl
        stats.forward_tokens += forward_tokens
        for name, g in chunk_grads.items():
            grads[name] += g
    stats.kl = kl_sum / max(stats.sampled_tokens, 1)
    return grads, stats


def _microbatch_gradient(
    params: Mapping[str, np.ndarray],
    config: lm.ModelConfig,
    adapter: Adapter,
    chunk: list[Sequence_],
    scale: float,
    clip_low: float,
    clip_high: float,
    kl_coef: float,
) -> tuple[dict[str, np.ndarray], list[tuple[int, int, float, float]], int]:
    """One forward and backward pass: the adapter's gradient from these sequences, each one's
    (clipped tokens, sampled tokens, share of the loss, summed KL) and the tokens run forward."""
    width = max(len(s.tokens) for s in chunk)
    tokens = np.full((len(chunk), width), PAD, dtype=np.int64)
    for i, s in enumerate(chunk):
        tokens[i, : len(s.tokens)] = s.tokens
    inputs = tokens[:, :-1]
    logits, cache = lm.forward(params, config, inputs, adapter)
    logp = lm.log_softmax(logits.astype(np.float64))
    dlogits = np.zeros_like(logits)
    reference = lm.log_softmax(lm.forward(params, config, inputs)[0].astype(np.float64)) if kl_coef > 0 else None
    per_sequence = []
    for i, s in enumerate(chunk):
        rows = s.positions - 1
        picked = s.tokens[s.positions]
        new = logp[i, rows, picked]
        ratio = exp(np.minimum(new - s.old_logprobs, MAX_LOG_RATIO))
        weights, clipped = ratio_weights(ratio, s.advantage, "ppo", clip_low, clip_high)
        surrogate = np.minimum(ratio * s.advantage, np.clip(ratio, clip_low, clip_high) * s.advantage)
        loss = float(surrogate.sum()) * s.weight / s.advantage * scale
        # d(-J)/d logp_new per token: -(A / |o_i|) rho where unclipped, 0 where clipped.
        d_new = -weights * s.weight
        kl_total = 0.0
        if reference is not None:
            ref = reference[i, rows, picked]
            kl = exp(ref - new) - (ref - new) - 1
            kl_total = float(kl.sum())
            d_new = d_new + kl_coef * (1 - exp(ref - new)) * abs(s.weight / s.advantage)
        d_new = d_new * scale
        # d logp(o_t) / d logits_t = onehot - softmax.
        probs = exp(logp[i, rows])
        d = -probs * d_new[:, None]
        d[np.arange(len(rows)), picked] += d_new
        dlogits[i, rows] += d.astype(dlogits.dtype)
        per_sequence.append((int(clipped.sum()), len(picked), loss, kl_total))
    weight_grads = lm.backward(dlogits, params, config, cache, projections_only=True)
    return adapter.gradients(weight_grads), per_sequence, int(inputs.size)


def _microbatches(seqs: list[Sequence_]) -> list[list[Sequence_]]:
    """The sequences, sorted by length, cut into microbatches of at most MICROBATCH_TOKENS padded
    tokens each, at the cuts that make the fewest padded tokens (each pass also counted as
    MICROBATCH_OVERHEAD tokens, its fixed cost): a game's length comes in steps of a turn, and
    greedy filling put a step's edge inside a microbatch, padding a tenth of a batch's tokens."""
    ordered = sorted(seqs, key=lambda s: len(s.tokens))
    widths = [len(s.tokens) for s in ordered]
    # cost[j]: the cheapest cut of the first j sequences; start[j]: where its last microbatch begins.
    cost = [0] + [0] * len(ordered)
    start = [0] * (len(ordered) + 1)
    for j in range(1, len(ordered) + 1):
        width, best = widths[j - 1], None
        for i in range(j - 1, -1, -1):
            if i < j - 1 and (j - i) * width > MICROBATCH_TOKENS:
                break
            candidate = cost[i] + (j - i) * width + MICROBATCH_OVERHEAD
            if best is None or candidate < best:
                best, start[j] = candidate, i
        cost[j] = best if best is not None else 0
    chunks: list[list[Sequence_]] = []
    j = len(ordered)
    while j:
        chunks.append(ordered[start[j] : j])
        j = start[j]
    return chunks[::-1]


def optimizer(hyperparameters: TrainingHyperparameters) -> AdamW:
    """A job's Adam for the adapter: its learning rate times `LR_SCALE`, the service's betas, eps,
    weight decay and gradient-norm clip."""
    return AdamW(
        hyperparameters.learning_rate * LR_SCALE,
        beta1=hyperparameters.adam_beta1,
        beta2=hyperparameters.adam_beta2,
        eps=hyperparameters.adam_eps,
        weight_decay=hyperparameters.adam_weight_decay,
        grad_clip_norm=hyperparameters.adam_grad_clip_norm,
    )


def length_constant(hyperparameters: TrainingHyperparameters | None, config: lm.ModelConfig) -> int:
    """Dr. GRPO's constant normaliser: the most tokens a game can sample.

    Each turn samples at most the job's `sampling_max_tokens`, and every turn's reply stays in the
    context the next turn reads, so a whole game samples at most the model's context as well. The
    smaller bound is the constant: with the walkthrough's 8,192-token cap the first alone would be
    12 x 8,192 = 98,304 for games of about 43 tokens, which shrank the gradient about 2,000-fold
    and put a fifth of its elements below Adam's eps (measured on one batch of 256 games).
    """
    per_turn = hyperparameters.sampling_max_tokens if hyperparameters is not None else 64
    return min(MAX_TOOL_CALLS * per_turn, config.context)


def update(
    params: Mapping[str, np.ndarray],
    config: lm.ModelConfig,
    adapter: Adapter,
    batch: Sequence[Sample],
    optimizer: AdamW,
    step: int,
    hyperparameters: TrainingHyperparameters | None = None,
    estimator: Estimator = GRPO,
    threads: int = 1,
    **objective: float,
) -> tuple[Adapter, StepStats]:
    """One GRPO step: the batch's gradient, then one Adam step on the adapter (if any game counted).

    A job's `hyperparameters` give the clip bounds; `objective` (clip_low, clip_high, kl_coef) sets
    them by hand instead. `estimator` decides the length normalisation (its advantages were made
    with the same estimator by the caller). `threads`: microbatches computed at once (the same
    gradient; faster only on otherwise idle cores, see `_gradient`).
    """
    if hyperparameters is not None:
        objective = {
            "clip_low": hyperparameters.clip_low_threshold,
            "clip_high": hyperparameters.clip_high_threshold,
            **objective,
        }
    length = None if estimator.length_normalised else length_constant(hyperparameters, config)
    terms = {"clip_low": CLIP_LOW_THRESHOLD, "clip_high": CLIP_HIGH_THRESHOLD, "kl_coef": KL_COEF, **objective}
    unknown = set(terms) - {"clip_low", "clip_high", "kl_coef"}
    if unknown:
        raise TypeError(f"update() got unexpected objective settings {sorted(unknown)}")
    grads, stats = _gradient(
        params,
        config,
        adapter,
        batch,
        terms["clip_low"],
        terms["clip_high"],
        terms["kl_coef"],
        length,
        threads,
    )
    if not stats.games_used:
        return adapter.with_tensors(adapter.tensors(), step=step), stats
    new, stats.grad_norm = optimizer.step(adapter.tensors(), grads)
    return adapter.with_tensors(new, step=step), stats
