"""The learner's sampler and weights on disk: greedy is the temperature -> 0 limit, top-p, the
hard max_tokens cap, stop tokens, seeded determinism, and safetensors round trips."""

from __future__ import annotations

import numpy as np
import pytest

from mtrl_course.learner import model as lm
from mtrl_course.learner import sampler, weights
from mtrl_course.learner.lora import Adapter
from mtrl_course.learner.tokenizer import EOT, VOCAB_SIZE

pytestmark = pytest.mark.floats

CONFIG = lm.ModelConfig(vocab=VOCAB_SIZE, context=32, d_model=16, layers=2, heads=2, mlp_ratio=2)


@pytest.fixture(scope="module")
def params():
    p = lm.init_params(CONFIG, np.random.default_rng(0))
    # Sharper than the initial weights, so distributions are far from uniform.
    return {k: (v * 20 if k in ("wte",) else v).astype(np.float32) for k, v in p.items()}


def run(params, temperature, seeds=(1, 2, 3), top_p=1.0, max_tokens=12, stop=frozenset({EOT}), adapter=None):
    prompts = [[1, 2, 20 + i, 30] for i in range(len(seeds))]
    sp = [sampler.SamplingParams(temperature, top_p, max_tokens, stop) for _ in seeds]
    rngs = [np.random.default_rng(s) for s in seeds]
    return sampler.generate(params, CONFIG, prompts, sp, rngs, adapter)


def test_greedy_is_the_limit_of_temperature_to_zero(params):
    greedy = run(params, 0.0)
    cold = run(params, 1e-4)
    assert [g.tokens for g in greedy] == [c.tokens for c in cold]
    assert len({tuple(g.tokens) for g in run(params, 0.0, seeds=(5, 6, 7))}) == len({tuple(g.tokens) for g in greedy})


def test_same_seed_same_text_and_batching_does_not_change_a_sequence(params):
    a, b = run(params, 1.0), run(params, 1.0)
    assert [g.tokens for g in a] == [g.tokens for g in b]
    alone = sampler.generate(
        params, CONFIG, [[1, 2, 21, 30]], [sampler.SamplingParams(1.0, 1.0, 12)], [np.random.default_rng(2)]
    )
    assert alone[0].tokens == a[1].tokens
    assert [g.tokens for g in run(params, 1.0, seeds=(9, 10, 11))] != [g.tokens for g in a]


def test_max_tokens_is_a_hard_cap_and_stop_tokens_end_a_turn(params):
    for g in run(params, 1.0, max_tokens=3, stop=frozenset()):
        assert len(g.tokens) == 3 and not g.stopped
    everything = frozenset(range(VOCAB_SIZE))
    for g in run(params, 1.0, stop=everything):
        assert len(g.tokens) == 1 and g.stopped
    # The context is a cap too: a 4-token prompt in a 32-token context gets at most 28.
    for g in run(params, 1.0, max_tokens=100, stop=frozenset()):
        assert len(g.tokens) == CONFIG.context - 4


def test_logprobs_are_the_models_own(params):
    g = run(params, 0.7, seeds=(4,))[0]
    prompt = [1, 2, 20, 30]
    logits = lm.forward(params, CONFIG, np.array([prompt + g.tokens]))[0][0]
    expected = lm.log_softmax(logits.astype(np.float64))[np.arange(3, 3 + len(g.tokens)), g.tokens]
    np.testing.assert_allclose(g.logprobs, expected, atol=1e-4)


def test_top_p_keeps_only_the_nucleus():
    logits = np.log(np.array([0.5, 0.3, 0.15, 0.05]))
    picks = {sampler.choose(logits, sampler.SamplingParams(1.0, 0.7), u)[0] for u in np.linspace(0, 0.999, 200)}
    assert picks == {0, 1}
    assert sampler.choose(logits, sampler.SamplingParams(0.0), 0.99)[0] == 0


def test_bad_sampling_parameters_are_refused():
    with pytest.raises(ValueError, match="temperature"):
        sampler.SamplingParams(-1.0)
    with pytest.raises(ValueError, match="max_tokens"):
        sampler.SamplingParams(1.0, 1.0, 0)


def test_weights_and_adapters_round_trip_through_safetensors(tmp_path, params):
    path = weights.save_model(tmp_path / "base.safetensors", params, CONFIG, "test-base")
    loaded, config, base_id = weights.load_model(path)
    assert config == CONFIG and base_id == "test-base"
    assert all(np.array_equal(loaded[k], params[k]) for k in params)
    adapter = Adapter.new(CONFIG, rank=4, alpha=8, rng=np.random.default_rng(1))
    adapter.b = {k: np.full_like(v, 0.01) for k, v in adapter.b.items()}
    adapter.step = 7
    apath = weights.save_adapter(tmp_path / "adapter.safetensors", adapter, "test-base", {"job": "j"})
    back = weights.load_adapter(apath, "test-base")
    assert (back.rank, back.alpha, back.step) == (4, 8.0, 7)
    assert [g.tokens for g in run(params, 1.0, adapter=adapter)] == [g.tokens for g in run(params, 1.0, adapter=back)]
    assert weights.adapter_metadata(apath)["extra"] == {"job": "j"}
    with pytest.raises(ValueError, match="adapts base"):
        weights.load_adapter(apath, "another-base")
    with pytest.raises(ValueError, match="not a learner base"):
        weights.load_model(apath)


def test_the_tool_call_grammar_forces_five_letters_then_the_end(params):
    from mtrl_course.learner import template
    from mtrl_course.learner.tokenizer import CALL

    sp = sampler.SamplingParams(1.0, 1.0, 12, tool_call_grammar=True)
    # Prompts that end inside a call: whatever the weights prefer, the grammar finishes it.
    prompts = [[1, 2, CALL] for _ in range(4)]
    # The grammar counts the reply's own tokens, so start the reply with the call opener.
    out = []
    for seed in range(4):
        rng = np.random.default_rng(seed)
        tokens = [CALL]
        for _ in range(7):
            logits = lm.forward(params, CONFIG, np.array([prompts[0] + tokens]))[0][0, -1]
            token, logp = sampler.choose(logits, sp, float(rng.random()), sampler.grammar_mask(tokens))
            assert np.isfinite(logp)
            tokens.append(token)
        out.append(template.parse_completion(tokens, stopped=True))
    assert all(p.guess is not None and len(p.guess) == 5 for p in out)
    assert sampler.grammar_mask([5, 6]) is None


@pytest.mark.parametrize("temperature,top_p", [(1.0, 1.0), (0.7, 1.0), (0.0, 1.0), (1.0, 0.8)])
def test_choosing_many_rows_at_once_is_choosing_each_row(temperature, top_p):
    rng = np.random.default_rng(4)
    logits = (rng.normal(0, 3, (40, VOCAB_SIZE))).astype(np.float32)
    us = list(rng.random(40))
    sp = sampler.SamplingParams(temperature, top_p)
    tokens, logps = sampler.choose_rows(logits, sp, us)
    alone = [sampler.choose(row, sp, u) for row, u in zip(logits, us)]
    assert tokens == [t for t, _ in alone]
    # The same operations on the same numbers: equal here bit for bit; within 1e-12 on any CPU.
    np.testing.assert_allclose(logps, [lp for _, lp in alone], rtol=1e-12, atol=0)


def test_a_prompt_cache_reads_only_new_tokens_and_samples_the_same_text(params):
    """A second turn that extends the first turn's prompt and reply, with the cache kept from
    the first call and without it: the same tokens, log-probabilities equal up to rounding."""
    sp = [sampler.SamplingParams(1.0, 1.0, 6, frozenset()) for _ in range(3)]
    first = [[1, 2, 20 + i, 30] for i in range(3)]
    cache = sampler.PromptCache(CONFIG, 3)
    turn1 = sampler.generate(params, CONFIG, first, sp, [np.random.default_rng(s) for s in (1, 2, 3)], cache=cache)
    assert [len(t) for t in cache.tokens] == [4 + 6 - 1] * 3  # the last sampled token is not read yet
    second = [first[i] + turn1[i].tokens + [40, 41] for i in range(3)]
    second[1] = [1, 2, 44, 30]  # a fresh conversation shares only the first two tokens
    cache.select([0, 1, 2])
    with_cache = sampler.generate(
        params, CONFIG, second, sp, [np.random.default_rng(s) for s in (7, 8, 9)], cache=cache
    )
    without = sampler.generate(params, CONFIG, second, sp, [np.random.default_rng(s) for s in (7, 8, 9)])
    assert [g.tokens for g in with_cache] == [g.tokens for g in without]
    for a, b in zip(with_cache, without):
        np.testing.assert_allclose(a.logprobs, b.logprobs, rtol=1e-5, atol=1e-5)
    # Keeping rows 0 and 2 moves row 2 up; a third turn still matches a cache-free run.
    cache.select([0, 2])
    third = [second[i] + with_cache[i].tokens + [42] for i in (0, 2)]
    third = [t[: CONFIG.context - 2] for t in third]
    kept = sampler.generate(params, CONFIG, third, sp[:2], [np.random.default_rng(s) for s in (5, 6)], cache=cache)
    fresh = sampler.generate(params, CONFIG, third, sp[:2], [np.random.default_rng(s) for s in (5, 6)])
    assert [g.tokens for g in kept] == [g.tokens for g in fresh]
    with pytest.raises(ValueError, match="increasing"):
        cache.select([1, 0])
    with pytest.raises(ValueError, match="rows for"):
        sampler.generate(params, CONFIG, third[:1], sp[:1], [np.random.default_rng(0)], cache=cache)
