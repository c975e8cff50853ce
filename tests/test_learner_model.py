"""The learner's transformer: every hand-written backward against finite differences (float64),
LoRA merged == base + adapter, the KV cache against the full forward pass, seeded determinism."""

from __future__ import annotations

import numpy as np
import pytest

from mtrl_course.learner import model as lm
from mtrl_course.learner.lora import Adapter

pytestmark = pytest.mark.floats

TINY = lm.ModelConfig(vocab=11, context=8, d_model=8, layers=2, heads=2, mlp_ratio=2)
EPS = 1e-6
RTOL, ATOL = 1e-5, 1e-8


def numeric_grad(f, x: np.ndarray) -> np.ndarray:
    """Central differences of scalar f() with respect to every entry of x (changed in place)."""
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        keep = x[i]
        x[i] = keep + EPS
        plus = f()
        x[i] = keep - EPS
        minus = f()
        x[i] = keep
        grad[i] = (plus - minus) / (2 * EPS)
    return grad


def assert_close(analytic, numeric, what):
    np.testing.assert_allclose(analytic, numeric, rtol=RTOL, atol=ATOL, err_msg=what)


@pytest.fixture
def rng():
    return np.random.default_rng(7)


def test_layer_norm_backward(rng):
    x, g, b = rng.normal(size=(2, 3, 6)), rng.normal(size=6), rng.normal(size=6)
    r = rng.normal(size=(2, 3, 6))
    y, cache = lm.layer_norm(x, g, b)
    dx, dg, db = lm.layer_norm_backward(r, cache)
    loss = lambda: float((lm.layer_norm(x, g, b)[0] * r).sum())  # noqa: E731
    assert_close(dx, numeric_grad(loss, x), "dx")
    assert_close(dg, numeric_grad(loss, g), "dg")
    assert_close(db, numeric_grad(loss, b), "db")


def test_attention_backward(rng):
    qkv, r = rng.normal(size=(2, 5, 12)), rng.normal(size=(2, 5, 4))
    _, cache = lm.attention(qkv, heads=2)
    d_qkv = lm.attention_backward(r, cache)
    assert_close(d_qkv, numeric_grad(lambda: float((lm.attention(qkv, 2)[0] * r).sum()), qkv), "dqkv")


def test_attention_is_causal(rng):
    qkv = rng.normal(size=(1, 5, 12))
    changed = qkv.copy()
    changed[0, 3:] += 1.0
    np.testing.assert_allclose(lm.attention(qkv, 2)[0][0, :3], lm.attention(changed, 2)[0][0, :3])


def test_mlp_backward(rng):
    x, up, down, r = (
        rng.normal(size=(2, 3, 4)),
        rng.normal(size=(4, 8)),
        rng.normal(size=(8, 4)),
        rng.normal(size=(2, 3, 4)),
    )
    _, cache = lm.mlp(x, up, down)
    dx, dup, ddown = lm.mlp_backward(r, cache, up, down)
    loss = lambda: float((lm.mlp(x, up, down)[0] * r).sum())  # noqa: E731
    assert_close(dx, numeric_grad(loss, x), "dx")
    assert_close(dup, numeric_grad(loss, up), "dWup")
    assert_close(ddown, numeric_grad(loss, down), "dWdown")


def _model_loss(params, tokens, r, adapter=None):
    return float((lm.forward(params, TINY, tokens, adapter)[0] * r).sum())


def test_whole_model_backward_matches_finite_differences(rng):
    params = lm.init_params(TINY, rng, np.float64)
    # Larger weights than the initial 0.02 so every path carries a gradient well above rounding.
    params = {k: v + rng.normal(0, 0.3, v.shape) for k, v in params.items()}
    tokens = rng.integers(0, TINY.vocab, (2, 6))
    r = rng.normal(size=(2, 6, TINY.vocab))
    _, cache = lm.forward(params, TINY, tokens)
    grads = lm.backward(r, params, TINY, cache)
    assert set(grads) == set(params)
    for name, value in params.items():
        assert_close(grads[name], numeric_grad(lambda: _model_loss(params, tokens, r), value), name)


def test_adapter_backward_matches_finite_differences(rng):
    params = {k: v + rng.normal(0, 0.3, v.shape) for k, v in lm.init_params(TINY, rng, np.float64).items()}
    adapter = Adapter.new(TINY, rank=3, alpha=6, rng=rng, dtype=np.float64)
    for name in adapter.b:
        adapter.b[name] = rng.normal(0, 0.3, adapter.b[name].shape)
    tokens = rng.integers(0, TINY.vocab, (2, 5))
    r = rng.normal(size=(2, 5, TINY.vocab))
    _, cache = lm.forward(params, TINY, tokens, adapter)
    grads = adapter.gradients(lm.backward(r, params, TINY, cache))
    for name, value in adapter.tensors().items():
        numeric = numeric_grad(lambda: _model_loss(params, tokens, r, adapter), value)
        assert_close(grads[name], numeric, name)


def test_merged_lora_equals_base_plus_adapter(rng):
    params = lm.init_params(TINY, rng, np.float64)
    adapter = Adapter.new(TINY, rank=4, alpha=8, rng=rng, dtype=np.float64)
    for name in adapter.b:
        adapter.b[name] = rng.normal(0, 0.1, adapter.b[name].shape)
    tokens = rng.integers(0, TINY.vocab, (3, 7))
    with_adapter = lm.forward(params, TINY, tokens, adapter)[0]
    merged = lm.forward(adapter.merged(params), TINY, tokens)[0]
    np.testing.assert_allclose(with_adapter, merged, rtol=1e-10, atol=1e-12)
    # The projection itself: x W_merged == x W + (alpha / r) (x A) B.
    x, name = rng.normal(size=(4, TINY.d_model)), "h1.qkv"
    np.testing.assert_allclose(
        x @ adapter.merged(params)[name], x @ params[name] + adapter.scale * (x @ adapter.a[name]) @ adapter.b[name]
    )
    # A fresh adapter (B = 0) changes nothing.
    fresh = Adapter.new(TINY, rank=4, alpha=8, rng=rng, dtype=np.float64)
    np.testing.assert_array_equal(lm.forward(params, TINY, tokens, fresh)[0], lm.forward(params, TINY, tokens)[0])


@pytest.mark.parametrize("dtype,tol", [(np.float64, 1e-10), (np.float32, 1e-4)])
def test_kv_cache_decoding_equals_the_full_forward_pass(rng, dtype, tol):
    params = lm.init_params(TINY, rng, dtype)
    params = {k: (v + rng.normal(0, 0.3, v.shape)).astype(dtype) for k, v in params.items()}
    seqs = [rng.integers(0, TINY.vocab, 8), rng.integers(0, TINY.vocab, 8)]
    full = [lm.forward(params, TINY, s[None])[0][0] for s in seqs]
    cache = lm.KVCache(TINY, 2, dtype)
    starts = [3, 5]
    # Different prompt lengths, read in one padded prefill, then decoded together.
    last = lm.prefill(params, TINY, cache, [0, 1], [seqs[0][: starts[0]], seqs[1][: starts[1]]])
    for row, t in enumerate(starts):
        np.testing.assert_allclose(last[row], full[row][t - 1], rtol=tol, atol=tol)
    for step in range(3):
        rows = np.array([0, 1])
        tokens = np.array([seqs[0][starts[0] + step], seqs[1][starts[1] + step]])
        logits = lm.decode(params, TINY, cache, rows, tokens)
        for row in range(2):
            np.testing.assert_allclose(logits[row], full[row][starts[row] + step], rtol=tol, atol=tol)


def test_same_seed_same_weights():
    a = lm.init_params(TINY, np.random.default_rng(3))
    b = lm.init_params(TINY, np.random.default_rng(3))
    assert all(np.array_equal(a[k], b[k]) for k in a)
    assert lm.count_parameters(a) == sum(v.size for v in a.values())


def test_too_long_input_is_refused(rng):
    params = lm.init_params(TINY, rng)
    with pytest.raises(ValueError, match="at most 8"):
        lm.forward(params, TINY, np.zeros((1, 9), dtype=int))


def test_projections_only_backward_returns_the_same_projection_gradients(rng):
    params = {k: v + rng.normal(0, 0.3, v.shape) for k, v in lm.init_params(TINY, rng, np.float64).items()}
    tokens = rng.integers(0, TINY.vocab, (2, 6))
    r = rng.normal(size=(2, 6, TINY.vocab))
    _, cache = lm.forward(params, TINY, tokens)
    full = lm.backward(r, params, TINY, cache)
    only = lm.backward(r, params, TINY, cache, projections_only=True)
    assert "wte" not in only and "wpe" not in only
    for layer in range(TINY.layers):
        for name in lm.PROJECTIONS:
            key = lm.weight_name(layer, name)
            np.testing.assert_array_equal(only[key], full[key])


@pytest.mark.parametrize("dtype,tol", [(np.float64, 1e-10), (np.float32, 1e-4)])
def test_extending_cached_rows_equals_the_full_forward_pass(rng, dtype, tol):
    """Rows holding different prefixes read different numbers of new tokens in one padded pass,
    and a row left out keeps its cache."""
    params = lm.init_params(TINY, rng, dtype)
    params = {k: (v + rng.normal(0, 0.3, v.shape)).astype(dtype) for k, v in params.items()}
    seqs = [rng.integers(0, TINY.vocab, 8) for _ in range(3)]
    full = [lm.forward(params, TINY, s[None])[0][0] for s in seqs]
    cache = lm.KVCache(TINY, 3, dtype)
    lm.prefill(params, TINY, cache, [0, 1, 2], [seqs[0][:2], seqs[1][:4], seqs[2][:3]])
    # Every row, in order (the cache's windows are views), then two rows out of order (gathers).
    last = lm.extend(params, TINY, cache, [0, 1, 2], [seqs[0][2:4], seqs[1][4:5], seqs[2][3:6]])
    for row, t in enumerate((3, 4, 5)):
        np.testing.assert_allclose(last[row], full[row][t], rtol=tol, atol=tol)
    last = lm.extend(params, TINY, cache, [2, 0], [seqs[2][6:7], seqs[0][4:6]])
    np.testing.assert_allclose(last[0], full[2][6], rtol=tol, atol=tol)
    np.testing.assert_allclose(last[1], full[0][5], rtol=tol, atol=tol)
    assert list(cache.lengths) == [6, 5, 7]
    # Decoding goes on from the extended rows.
    logits = lm.decode(params, TINY, cache, np.arange(3), np.array([seqs[0][6], seqs[1][5], seqs[2][7]]))
    for row, t in enumerate((6, 5, 7)):
        np.testing.assert_allclose(logits[row], full[row][t], rtol=tol, atol=tol)
    with pytest.raises(ValueError, match="does not fit"):
        lm.extend(params, TINY, cache, [2], [seqs[2][:1]])
