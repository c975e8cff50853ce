"""Token-level GRPO on the learner's LoRA adapter: the objective's gradient against finite
differences (clipping and the KL term included), which tokens are trained, and the update."""

from __future__ import annotations

import numpy as np
import pytest

from mtrl_course.learner import grpo
from mtrl_course.learner import model as lm
from mtrl_course.learner.lora import Adapter
from mtrl_course.rl.optim import AdamW
from mtrl_course.service_spec import TrainingHyperparameters
from wordle_agent.game import MAX_TOOL_CALLS

pytestmark = pytest.mark.floats

TINY = lm.ModelConfig(vocab=11, context=24, d_model=8, layers=2, heads=2, mlp_ratio=2)


def setup(seed=0):
    rng = np.random.default_rng(seed)
    params = {k: v + rng.normal(0, 0.3, v.shape) for k, v in lm.init_params(TINY, rng, np.float64).items()}
    adapter = Adapter.new(TINY, rank=2, alpha=4, rng=rng, dtype=np.float64)
    for name in adapter.b:
        adapter.b[name] = rng.normal(0, 0.3, adapter.b[name].shape)
    return rng, params, adapter


def game(rng, advantage, turns=2, shared=True):
    """A game whose turn k+1 prompt extends turn k's prompt + reply (shared) or not."""
    out, context = [], list(rng.integers(1, TINY.vocab, 3))
    for _ in range(turns):
        reply = list(rng.integers(1, TINY.vocab, 3))
        olds = list(rng.normal(-2.0, 0.5, len(reply)))
        out.append(grpo.Turn(tuple(context), tuple(reply), tuple(olds)))
        context = (context + reply if shared else list(rng.integers(1, TINY.vocab, 4))) + list(
            rng.integers(1, TINY.vocab, 2)
        )
    return grpo.Sample(advantage, out)


def loss_by_hand(params, adapter, batch, low, high, beta):
    """-J computed turn by turn, straight from the formula in learner.grpo's docstring."""
    total = 0.0
    for sample in batch:
        if sample.advantage == 0:
            continue
        n = sum(len(t.tokens) for t in sample.turns)
        for turn in sample.turns:
            seq = np.array([*turn.prompt, *turn.tokens])
            logp = lm.log_softmax(lm.forward(params, TINY, seq[None, :-1], adapter)[0][0])
            ref = lm.log_softmax(lm.forward(params, TINY, seq[None, :-1])[0][0])
            for j, token in enumerate(turn.tokens):
                row = len(turn.prompt) + j - 1
                ratio = np.exp(logp[row, token] - turn.logprobs[j])
                a = sample.advantage
                term = min(ratio * a, np.clip(ratio, low, high) * a)
                d = ref[row, token] - logp[row, token]
                total -= term / n
                total += beta * (np.exp(d) - d - 1) / n
    return total / len(batch)


@pytest.mark.parametrize("beta", [0.0, 0.3])
def test_objective_gradient_matches_finite_differences(beta):
    rng, params, adapter = setup()
    batch = [game(rng, 1.3), game(rng, -0.7, shared=False), game(rng, 0.0), game(rng, 0.4, turns=1)]
    # Clip bounds inside the ratios' range, so some tokens are clipped and some are not.
    low, high = 0.9, 1.1
    grads, stats = grpo.objective_gradient(params, TINY, adapter, batch, clip_low=low, clip_high=high, kl_coef=beta)
    assert stats.games_used == 3 and stats.sampled_tokens == 15  # 2 + 2 + 1 turns of 3 tokens
    assert 0 < stats.clipped_tokens < stats.sampled_tokens
    tensors = adapter.tensors()
    eps = 1e-6
    for name in ("h0.qkv.A", "h1.down.B", "h0.o.B"):
        value = tensors[name]
        for index in list(np.ndindex(value.shape))[:: max(1, value.size // 12)]:
            keep = value[index]
            value[index] = keep + eps
            plus = loss_by_hand(params, adapter, batch, low, high, beta)
            value[index] = keep - eps
            minus = loss_by_hand(params, adapter, batch, low, high, beta)
            value[index] = keep
            np.testing.assert_allclose(grads[name][index], (plus - minus) / (2 * eps), rtol=1e-5, atol=1e-8)
    if beta == 0:
        np.testing.assert_allclose(stats.loss, loss_by_hand(params, adapter, batch, low, high, 0.0), rtol=1e-10)


def test_turns_that_extend_each_other_are_trained_in_one_sequence():
    rng = np.random.default_rng(1)
    shared = grpo.sequences(game(rng, 1.0, turns=3))
    separate = grpo.sequences(game(rng, 1.0, turns=3, shared=False))
    assert len(shared) == 1 and len(separate) == 3
    seq = shared[0]
    # Only the sampled tokens are trained: 3 turns x 3 tokens, none of the prompt or tool tokens.
    assert len(seq.positions) == 9
    assert seq.weight == pytest.approx(1.0 / 9)


def test_a_group_that_ties_teaches_nothing_and_an_update_moves_only_the_adapter():
    rng, params, adapter = setup(2)
    before = {k: v.copy() for k, v in params.items()}
    tie = [game(rng, 0.0), game(rng, 0.0)]
    same, stats = grpo.update(params, TINY, adapter, tie, AdamW(1e-2), step=1)
    assert stats.games_used == 0
    assert all(np.array_equal(same.tensors()[k], v) for k, v in adapter.tensors().items())
    moved, stats = grpo.update(params, TINY, adapter, [game(rng, 1.0), game(rng, -1.0)], AdamW(1e-2), step=2)
    assert stats.games_used == 2 and moved.step == 2
    assert any(not np.array_equal(moved.tensors()[k], v) for k, v in adapter.tensors().items())
    assert all(np.array_equal(params[k], before[k]) for k in params)


def test_positive_advantage_raises_the_sampled_tokens_probability():
    rng, params, adapter = setup(3)
    sample = game(rng, 1.0, turns=1)
    turn = sample.turns[0]
    seq = np.array([*turn.prompt, *turn.tokens])

    def logp(a):
        out = lm.log_softmax(lm.forward(params, TINY, seq[None, :-1], a)[0][0])
        return sum(out[len(turn.prompt) + j - 1, t] for j, t in enumerate(turn.tokens))

    # Old log-probabilities equal to the current ones: ratio 1, nothing clipped.
    fresh = grpo.Sample(
        1.0,
        [
            grpo.Turn(
                turn.prompt,
                turn.tokens,
                tuple(
                    lm.log_softmax(lm.forward(params, TINY, seq[None, :-1], adapter)[0][0])[len(turn.prompt) + j - 1, t]
                    for j, t in enumerate(turn.tokens)
                ),
            )
        ],
    )
    new, _ = grpo.update(params, TINY, adapter, [fresh], AdamW(1e-2), step=1)
    assert logp(new) > logp(adapter)


def test_dr_grpos_estimator_weighs_every_token_by_one_constant():
    # GRPO: a token of game i weighs A_i / |o_i|; Dr. GRPO (the one switch, rl.advantages.DR_GRPO):
    # A_i / L for every game, L the most tokens a game can sample. The gradient is then the GRPO
    # gradient with each game rescaled by |o_i| / L, which the finite-difference loss confirms.
    rng, params, adapter = setup(4)
    batch = [game(rng, 1.0, turns=1), game(rng, -0.5, turns=3, shared=False)]
    length = grpo.length_constant(None, TINY)
    # The bound is the smaller of the turns' caps and the context every reply stays in: the
    # walkthrough's 8,192-token cap on the committed base's 384-token context is 384, not 98,304.
    assert length == TINY.context
    walkthrough = TrainingHyperparameters.unbounded({"sampling_max_tokens": 8192})
    assert grpo.length_constant(walkthrough, lm.ModelConfig(vocab=11, context=384)) == 384
    one_token_turns = TrainingHyperparameters.unbounded({"sampling_max_tokens": 1})
    assert grpo.length_constant(one_token_turns, TINY) == MAX_TOOL_CALLS  # here the turns' caps bound it
    grads_dr, _ = grpo.objective_gradient(params, TINY, adapter, batch, length=length)
    rescaled = [grpo.Sample(s.advantage * sum(len(t.tokens) for t in s.turns) / length, s.turns) for s in batch]
    grads_equiv, _ = grpo.objective_gradient(params, TINY, adapter, rescaled)
    for name in grads_dr:
        np.testing.assert_allclose(grads_dr[name], grads_equiv[name], rtol=1e-9, atol=1e-15)
    grads_grpo, _ = grpo.objective_gradient(params, TINY, adapter, batch)
    assert any(not np.allclose(grads_grpo[n], grads_dr[n]) for n in grads_dr)
    # The switch reaches the update: the same step with each estimator moves the adapter differently.
    from mtrl_course.rl.advantages import DR_GRPO, GRPO

    moved = {}
    for estimator in (GRPO, DR_GRPO):
        new, stats = grpo.update(params, TINY, adapter, batch, AdamW(1e-2), 1, estimator=estimator)
        moved[estimator.name] = new.tensors()
        assert stats.games_used == 2
    assert any(not np.array_equal(moved["grpo"][n], moved["dr_grpo"][n]) for n in moved["grpo"])


def test_microbatches_hold_every_sequence_once_within_the_token_budget(monkeypatch):
    rng = np.random.default_rng(3)
    seqs = [s for i in range(40) for s in grpo.sequences(game(rng, 1.0, turns=1 + i % 4))]
    monkeypatch.setattr(grpo, "MICROBATCH_TOKENS", 60)
    chunks = grpo._microbatches(seqs)
    assert sorted(id(s) for c in chunks for s in c) == sorted(id(s) for s in seqs)
    assert all(len(c) == 1 or len(c) * max(len(s.tokens) for s in c) <= 60 for c in chunks)
    widths = [len(s.tokens) for c in chunks for s in c]
    assert widths == sorted(widths)


def test_threads_give_the_same_update_bit_for_bit(monkeypatch):
    rng, params, adapter = setup(5)
    batch = [game(rng, a, turns=2 + i % 2, shared=i % 3 > 0) for i, a in enumerate([1.0, -0.5, 0.7, -1.2, 0.3, -0.3])]
    monkeypatch.setattr(grpo, "MICROBATCH_TOKENS", 30)  # several microbatches
    assert len(grpo._microbatches([s for b in batch for s in grpo.sequences(b)])) > 2
    one, stats_one = grpo.update(params, TINY, adapter, batch, AdamW(1e-2), 1, kl_coef=0.2)
    two, stats_two = grpo.update(params, TINY, adapter, batch, AdamW(1e-2), 1, kl_coef=0.2, threads=2)
    assert stats_one == stats_two and stats_one.kl > 0
    for name, value in one.tensors().items():
        np.testing.assert_array_equal(value, two.tensors()[name])
    with pytest.raises(TypeError, match="clip_lo"):
        grpo.update(params, TINY, adapter, batch, AdamW(1e-2), 1, clip_lo=0.9)
