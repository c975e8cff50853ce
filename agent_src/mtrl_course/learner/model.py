"""A small decoder-only transformer in numpy, with its backward pass written out by hand.

The architecture is GPT-2's, small: token and position embeddings; `layers` blocks of pre-norm
causal multi-head self-attention and a ReLU MLP, each added back to the residual stream; a final
layer norm; the output head tied to the token embedding (logits = h @ wte.T, so the model has one
table of symbols, read and written). Linear layers have no biases (layer norms do).

    x = wte[tokens] + wpe[positions]
    for each block:  x = x + Attention(LN1(x)) @ Wo;   x = x + ReLU(LN2(x) @ Wup) @ Wdown
    logits = LN_f(x) @ wte.T

Every weight matrix a LoRA adapter can touch is one of `PROJECTIONS` ("qkv", "o", "up", "down").
`forward` takes an optional adapter (`mtrl_course.learner.lora`): each adapted projection then
uses W + (alpha / rank) A @ B, which is exactly what merging the adapter into the weights gives.

Two forward paths:
- `forward` (training and checks): a batch of whole sequences at once, keeping every activation
  the backward pass needs. `backward` then returns the gradient of any scalar loss, given
  dLoss/dlogits, with respect to every base weight and every adapter matrix. Each piece (layer
  norm, attention, MLP, embeddings and head) has its own small backward function, and
  tests/test_learner_model.py checks each against finite differences in float64.
- `KVCache` + `prefill` / `decode` (generation): the keys and values of past positions are kept,
  so each new token costs one row of work per layer instead of re-reading the whole context.
  Sequences in a batch may have different lengths: each has its own position. `extend` reads
  several new tokens after a row's cached ones (a conversation's next turn) in one padded pass.

Precision: weights are float32 for speed (numpy's float32 matrix multiply is about twice as fast
as float64 here); `cast(params, np.float64)` gives the float64 path the gradient checks use.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from mtrl_course.numerics import exp, log, matmul

PROJECTIONS = ("qkv", "o", "up", "down")
LN_EPS = 1e-5
# Initial weight scale (GPT-2's 0.02); the projections writing into the residual stream are
# scaled down by sqrt(2 * layers) so the stream's variance does not grow with depth.
INIT_STD = 0.02
NEG_INF = -1e30

Params = dict[str, np.ndarray]


@dataclass(frozen=True)
class ModelConfig:
    """The model's shape. `context` is the longest sequence it can read (position embeddings)."""

    vocab: int
    context: int = 384
    d_model: int = 128
    layers: int = 4
    heads: int = 4
    mlp_ratio: int = 4

    def __post_init__(self) -> None:
        if self.d_model % self.heads:
            raise ValueError(f"d_model {self.d_model} is not divisible by heads {self.heads}")

    @property
    def head_dim(self) -> int:
        return self.d_model // self.heads

    def projection_shape(self, name: str) -> tuple[int, int]:
        d, hidden = self.d_model, self.d_model * self.mlp_ratio
        return {"qkv": (d, 3 * d), "o": (d, d), "up": (d, hidden), "down": (hidden, d)}[name]

    def to_dict(self) -> dict[str, int]:
        return asdict(self)


def weight_name(layer: int, projection: str) -> str:
    return f"h{layer}.{projection}"


def init_params(config: ModelConfig, rng: np.random.Generator, dtype: Any = np.float32) -> Params:
    """Random initial weights (GPT-2's scheme)."""
    d = config.d_model
    p: Params = {
        "wte": rng.normal(0, INIT_STD, (config.vocab, d)),
        "wpe": rng.normal(0, INIT_STD / 2, (config.context, d)),
        "lnf.g": np.ones(d),
        "lnf.b": np.zeros(d),
    }
    residual_std = INIT_STD / math.sqrt(2 * config.layers)
    for layer in range(config.layers):
        p[f"h{layer}.ln1.g"], p[f"h{layer}.ln1.b"] = np.ones(d), np.zeros(d)
        p[f"h{layer}.ln2.g"], p[f"h{layer}.ln2.b"] = np.ones(d), np.zeros(d)
        for name in PROJECTIONS:
            std = residual_std if name in ("o", "down") else INIT_STD
            p[weight_name(layer, name)] = rng.normal(0, std, config.projection_shape(name))
    return cast(p, dtype)


def cast(params: Mapping[str, np.ndarray], dtype: Any) -> Params:
    """A copy of `params` in `dtype` (float32 to run, float64 to check gradients)."""
    return {k: np.asarray(v, dtype=dtype).copy() for k, v in params.items()}


def count_parameters(params: Mapping[str, np.ndarray]) -> int:
    return int(sum(v.size for v in params.values()))


def effective_weights(params: Mapping[str, np.ndarray], adapter: Any = None) -> dict[str, np.ndarray]:
    """The projection matrices a forward pass uses: W, or W + (alpha / rank) A @ B if adapted."""
    weights = {k: v for k, v in params.items() if k.rsplit(".", 1)[-1] in PROJECTIONS}
    if adapter is not None:
        for name in list(weights):
            delta = adapter.delta(name)
            if delta is not None:
                weights[name] = weights[name] + delta.astype(weights[name].dtype, copy=False)
    return weights


# --- the pieces, each with its backward -----------------------------------------------------------


def layer_norm(x: np.ndarray, g: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, tuple]:
    """y = g * (x - mean) / sqrt(var + eps) + b over the last axis; returns (y, cache)."""
    mu = x.mean(-1, keepdims=True)
    xc = x - mu
    inv = 1.0 / np.sqrt((xc * xc).mean(-1, keepdims=True) + LN_EPS)
    xhat = xc * inv
    return xhat * g + b, (xhat, inv, g)


def layer_norm_backward(dy: np.ndarray, cache: tuple) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(dx, dg, db). With xhat = (x - mean) * inv:
    dx = inv * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)), dxhat = dy * g."""
    xhat, inv, g = cache
    axes = tuple(range(dy.ndim - 1))
    dg = (dy * xhat).sum(axes)
    db = dy.sum(axes)
    dxhat = dy * g
    dx = inv * (dxhat - dxhat.mean(-1, keepdims=True) - xhat * (dxhat * xhat).mean(-1, keepdims=True))
    return dx, dg, db


def split_heads(x: np.ndarray, heads: int) -> np.ndarray:
    """(B, T, d) -> (B, heads, T, d / heads), contiguous.

    Contiguous on purpose: numpy's batched matmul of two strided views falls back to a loop
    that was measured 800 times slower than BLAS on these shapes."""
    b, t, d = x.shape
    return np.ascontiguousarray(x.reshape(b, t, heads, d // heads).transpose(0, 2, 1, 3))


def merge_heads(x: np.ndarray) -> np.ndarray:
    """(B, heads, T, dh) -> (B, T, heads * dh)."""
    b, h, t, dh = x.shape
    return x.transpose(0, 2, 1, 3).reshape(b, t, h * dh)


def attention(qkv: np.ndarray, heads: int) -> tuple[np.ndarray, tuple]:
    """Causal softmax attention of (B, T, 3d) queries, keys and values; returns ((B, T, d), cache).

    scores = q k^T / sqrt(dh), with position j > i masked out; p = softmax(scores); y = p v.
    """
    q, k, v = (split_heads(part, heads) for part in np.split(qkv, 3, axis=-1))
    t = qkv.shape[1]
    scale = 1.0 / math.sqrt(q.shape[-1])
    # In place: the scores are batch x heads x T^2 floats, the largest arrays of a pass.
    scores = matmul(q, k.transpose(0, 1, 3, 2))
    scores *= scale
    np.copyto(scores, NEG_INF, where=np.triu(np.ones((t, t), dtype=bool), 1))
    scores -= scores.max(-1, keepdims=True)
    p = exp(scores)
    p /= p.sum(-1, keepdims=True)
    return merge_heads(matmul(p, v)), (q, k, v, p, scale)


def attention_backward(dy: np.ndarray, cache: tuple) -> np.ndarray:
    """d(qkv) from d(output). With y = p v and p = softmax(s):
    dv = p^T dy;  dp = dy v^T;  ds = p * (dp - sum_j dp * p);  dq = ds k * scale;  dk = ds^T q * scale.
    Masked scores have p = 0, so they pass no gradient."""
    q, k, v, p, scale = cache
    dy = split_heads(dy, q.shape[1])
    dv = matmul(p.transpose(0, 1, 3, 2), dy)
    dp = matmul(dy, np.ascontiguousarray(v.transpose(0, 1, 3, 2)))
    # ds = p * (dp - sum_j dp * p) * scale, in place in dp (the same operations in the same order).
    ds = dp
    ds -= (dp * p).sum(-1, keepdims=True)
    ds *= p
    ds *= scale
    dq = matmul(ds, k)
    dk = matmul(ds.transpose(0, 1, 3, 2), q)
    return np.concatenate([merge_heads(dq), merge_heads(dk), merge_heads(dv)], axis=-1)


def linear(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """x @ w over the last axis, as one 2-D product (numpy's 3-D @ 2-D was measured 2x slower)."""
    return matmul(x.reshape(-1, x.shape[-1]), w).reshape(*x.shape[:-1], w.shape[1])


def mlp(x: np.ndarray, w_up: np.ndarray, w_down: np.ndarray) -> tuple[np.ndarray, tuple]:
    """ReLU(x @ Wup) @ Wdown; returns (y, cache)."""
    hidden = linear(x, w_up)
    active = np.maximum(hidden, 0)
    return linear(active, w_down), (x, hidden, active)


def mlp_backward(
    dy: np.ndarray, cache: tuple, w_up: np.ndarray, w_down: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(dx, dWup, dWdown): dWdown = r^T dy; dh = (dy Wdown^T) * [h > 0]; dWup = x^T dh; dx = dh Wup^T."""
    x, hidden, active = cache
    d_active = linear(dy, w_down.T)
    d_hidden = d_active * (hidden > 0)
    return linear(d_hidden, w_up.T), _outer(x, d_hidden), _outer(active, dy)


def _outer(x: np.ndarray, dy: np.ndarray) -> np.ndarray:
    """The weight gradient of y = x @ W summed over every leading axis: x^T dy."""
    return matmul(x.reshape(-1, x.shape[-1]).T, dy.reshape(-1, dy.shape[-1]))


# --- the whole model ------------------------------------------------------------------------------


@dataclass
class ForwardCache:
    tokens: np.ndarray
    weights: dict[str, np.ndarray]
    blocks: list[dict[str, Any]]
    final: tuple
    xf: np.ndarray


def forward(
    params: Mapping[str, np.ndarray], config: ModelConfig, tokens: np.ndarray, adapter: Any = None
) -> tuple[np.ndarray, ForwardCache]:
    """Logits (B, T, vocab) of a batch of token sequences (B, T), and what backward needs.

    Padding goes at the end of a sequence: causal attention means a real token never reads a
    later pad, so padded positions only need masking out of the loss.
    """
    tokens = np.asarray(tokens)
    if tokens.ndim != 2 or tokens.shape[1] > config.context:
        raise ValueError(f"tokens must be (batch, at most {config.context}); got shape {tokens.shape}")
    weights = effective_weights(params, adapter)
    x = params["wte"][tokens] + params["wpe"][: tokens.shape[1]]
    blocks = []
    for layer in range(config.layers):
        pre = f"h{layer}."
        h1, ln1 = layer_norm(x, params[pre + "ln1.g"], params[pre + "ln1.b"])
        qkv = linear(h1, weights[pre + "qkv"])
        attended, att = attention(qkv, config.heads)
        x = x + linear(attended, weights[pre + "o"])
        h2, ln2 = layer_norm(x, params[pre + "ln2.g"], params[pre + "ln2.b"])
        out, mlp_cache = mlp(h2, weights[pre + "up"], weights[pre + "down"])
        x = x + out
        blocks.append({"ln1": ln1, "h1": h1, "att": att, "attended": attended, "ln2": ln2, "mlp": mlp_cache})
    xf, final = layer_norm(x, params["lnf.g"], params["lnf.b"])
    logits = linear(xf, params["wte"].T)
    return logits, ForwardCache(tokens, weights, blocks, final, xf)


def backward(
    dlogits: np.ndarray,
    params: Mapping[str, np.ndarray],
    config: ModelConfig,
    cache: ForwardCache,
    projections_only: bool = False,
) -> dict[str, np.ndarray]:
    """Gradients of the loss with respect to every base weight (by name), given dLoss/dlogits.

    The projection gradients are with respect to the *effective* weights (W, or W + s A B):
    `lora.Adapter.gradients` turns those into the adapter's dA and dB by the chain rule.
    `projections_only` (all a LoRA adapter needs) skips the work only the embeddings, the head and
    the first block's first layer norm need: their gradients are left out, and every gradient it
    does return is the same number as without it.
    """
    grads: dict[str, np.ndarray] = {}
    weights = cache.weights
    if not projections_only:
        grads["wte"] = _outer(dlogits, cache.xf)  # the head's share: logits = xf wte^T
    dx, grads["lnf.g"], grads["lnf.b"] = layer_norm_backward(linear(dlogits, params["wte"]), cache.final)
    for layer in reversed(range(config.layers)):
        pre, block = f"h{layer}.", cache.blocks[layer]
        d_h2, grads[pre + "up"], grads[pre + "down"] = mlp_backward(
            dx, block["mlp"], weights[pre + "up"], weights[pre + "down"]
        )
        d_ln2, grads[pre + "ln2.g"], grads[pre + "ln2.b"] = layer_norm_backward(d_h2, block["ln2"])
        dx = dx + d_ln2
        grads[pre + "o"] = _outer(block["attended"], dx)
        d_qkv = attention_backward(linear(dx, weights[pre + "o"].T), block["att"])
        grads[pre + "qkv"] = _outer(block["h1"], d_qkv)
        if projections_only and layer == 0:
            return grads
        d_ln1, grads[pre + "ln1.g"], grads[pre + "ln1.b"] = layer_norm_backward(
            linear(d_qkv, weights[pre + "qkv"].T), block["ln1"]
        )
        dx = dx + d_ln1
    # The embeddings' share: each position's gradient goes to its token's row and its position's row.
    np.add.at(grads["wte"], cache.tokens.reshape(-1), dx.reshape(-1, dx.shape[-1]))
    grads["wpe"] = np.zeros_like(params["wpe"])
    grads["wpe"][: dx.shape[1]] = dx.sum(0)
    return grads


def log_softmax(logits: np.ndarray) -> np.ndarray:
    shifted = logits - logits.max(-1, keepdims=True)
    return shifted - log(exp(shifted).sum(-1, keepdims=True))


# --- generation with a KV cache -------------------------------------------------------------------


class KVCache:
    """Keys and values of every past position, per layer, for a batch of sequences.

    `lengths[b]` is how many positions sequence b has filled; each new token is written at its
    own sequence's next position, so sequences of different lengths decode together.
    """

    def __init__(self, config: ModelConfig, batch: int, dtype: Any = np.float32) -> None:
        shape = (batch, config.heads, config.context, config.head_dim)
        self.keys = [np.zeros(shape, dtype) for _ in range(config.layers)]
        self.values = [np.zeros(shape, dtype) for _ in range(config.layers)]
        self.lengths = np.zeros(batch, dtype=np.int64)


def prefill(
    params: Mapping[str, np.ndarray],
    config: ModelConfig,
    cache: KVCache,
    rows: Sequence[int],
    prompts: Sequence[Sequence[int]],
    weights: Mapping[str, np.ndarray] | None = None,
) -> np.ndarray:
    """Read prompts into rows of the cache in one padded pass; returns each one's last logits.

    Prompts are padded at the end: causal attention means a prompt never reads its padding, and
    the padding's keys and values sit beyond the row's length, where decoding overwrites them
    before they could be read.
    """
    lengths = [len(p) for p in prompts]
    width = max(lengths)
    if width > config.context:
        raise ValueError(f"a prompt of {width} tokens does not fit the context of {config.context}")
    tokens = np.zeros((len(prompts), width), dtype=np.int64)
    for i, prompt in enumerate(prompts):
        tokens[i, : len(prompt)] = prompt
    weights = weights if weights is not None else effective_weights(params)
    row_index = np.asarray(rows)
    x = params["wte"][tokens] + params["wpe"][:width]
    for layer in range(config.layers):
        pre = f"h{layer}."
        h1, _ = layer_norm(x, params[pre + "ln1.g"], params[pre + "ln1.b"])
        attended, (_, k, v, _, _) = attention(linear(h1, weights[pre + "qkv"]), config.heads)
        cache.keys[layer][row_index, :, :width] = k
        cache.values[layer][row_index, :, :width] = v
        x = x + linear(attended, weights[pre + "o"])
        h2, _ = layer_norm(x, params[pre + "ln2.g"], params[pre + "ln2.b"])
        x = x + mlp(h2, weights[pre + "up"], weights[pre + "down"])[0]
    cache.lengths[row_index] = lengths
    last = x[np.arange(len(prompts)), np.asarray(lengths) - 1]
    xf, _ = layer_norm(last, params["lnf.g"], params["lnf.b"])
    return matmul(xf, params["wte"].T)


def extend(
    params: Mapping[str, np.ndarray],
    config: ModelConfig,
    cache: KVCache,
    rows: Sequence[int],
    suffixes: Sequence[Sequence[int]],
    weights: Mapping[str, np.ndarray] | None = None,
) -> np.ndarray:
    """Append tokens to rows of the cache in one padded pass; returns each row's last logits.

    Row `rows[i]` already holds `cache.lengths[rows[i]]` positions (a conversation's earlier
    turns); its `suffixes[i]` are read at the positions after them, attending to the cached
    positions and to each other causally. This is `prefill` of the whole sequence without
    recomputing the cached part: the same quantities, summed in a different order (the last bits
    of the logits may differ). Padding queries write nothing and their outputs are discarded.
    """
    row_index = np.asarray(rows)
    starts = cache.lengths[row_index].copy()
    lengths = np.asarray([len(s) for s in suffixes])
    width = int(lengths.max())
    ends = starts + lengths
    if int(ends.max()) > config.context:
        raise ValueError(f"a sequence of {int(ends.max())} tokens does not fit the context of {config.context}")
    n, heads, dh = len(suffixes), config.heads, config.head_dim
    tokens = np.zeros((n, width), dtype=np.int64)
    for i, suffix in enumerate(suffixes):
        tokens[i, : len(suffix)] = suffix
    query_positions = starts[:, None] + np.arange(width)[None, :]
    span = int(ends.max())
    # Query j of row i reads the row's positions 0 .. starts[i] + j.
    masked = (np.arange(span)[None, None, :] > query_positions[:, :, None])[:, None]
    real_row, real_col = np.nonzero(np.arange(width)[None, :] < lengths[:, None])
    write_rows, write_positions = row_index[real_row], starts[real_row] + real_col
    weights = weights if weights is not None else effective_weights(params)
    # Every row of the cache, in order: its windows are slices (views); a subset needs a gather.
    whole = n == len(cache.lengths) and bool((row_index == np.arange(n)).all())
    x = params["wte"][tokens] + params["wpe"][np.minimum(query_positions, config.context - 1)]
    for layer in range(config.layers):
        pre = f"h{layer}."
        h1, _ = layer_norm(x, params[pre + "ln1.g"], params[pre + "ln1.b"])
        qkv = linear(h1, weights[pre + "qkv"]).reshape(n, width, 3, heads, dh)
        keys, values = cache.keys[layer], cache.values[layer]
        keys[write_rows, :, write_positions] = qkv[real_row, real_col, 1]
        values[write_rows, :, write_positions] = qkv[real_row, real_col, 2]
        q = np.ascontiguousarray(qkv[:, :, 0].transpose(0, 2, 1, 3))
        if whole:
            window_k, window_v = keys[:, :, :span], values[:, :, :span]  # views
        else:
            window_k, window_v = keys[row_index, :, :span], values[row_index, :, :span]  # gathers
        scores = matmul(q, window_k.transpose(0, 1, 3, 2)) / math.sqrt(dh)
        scores = np.where(masked, NEG_INF, scores)
        p = exp(scores - scores.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
        x = x + linear(merge_heads(matmul(p, window_v)), weights[pre + "o"])
        h2, _ = layer_norm(x, params[pre + "ln2.g"], params[pre + "ln2.b"])
        x = x + mlp(h2, weights[pre + "up"], weights[pre + "down"])[0]
    cache.lengths[row_index] = ends
    last = x[np.arange(n), lengths - 1]
    xf, _ = layer_norm(last, params["lnf.g"], params["lnf.b"])
    return matmul(xf, params["wte"].T)


def decode(
    params: Mapping[str, np.ndarray],
    config: ModelConfig,
    cache: KVCache,
    rows: np.ndarray,
    tokens: np.ndarray,
    weights: Mapping[str, np.ndarray] | None = None,
) -> np.ndarray:
    """Append one token to each sequence in `rows`; returns their next-token logits (len(rows), vocab)."""
    rows = np.asarray(rows)
    positions = cache.lengths[rows]
    if int(positions.max(initial=0)) >= config.context:
        raise ValueError(f"a sequence is already at the context limit of {config.context}")
    weights = weights if weights is not None else effective_weights(params)
    n, heads, dh = len(rows), config.heads, config.head_dim
    span = int(positions.max()) + 1
    # Every row of the cache at once: slices are views; a subset needs a gather (a copy).
    whole = n == len(cache.lengths) and bool((rows == np.arange(n)).all())
    # Each row attends to its own positions 0..p; later slots of the window are masked.
    masked = (np.arange(span)[None, :] > positions[:, None])[:, None, None, :]
    x = params["wte"][np.asarray(tokens)] + params["wpe"][positions]
    for layer in range(config.layers):
        pre = f"h{layer}."
        h1, _ = layer_norm(x, params[pre + "ln1.g"], params[pre + "ln1.b"])
        q, k, v = np.split(matmul(h1, weights[pre + "qkv"]).reshape(n, 3, heads, dh), 3, axis=1)
        keys, values = cache.keys[layer], cache.values[layer]
        keys[rows, :, positions] = k[:, 0]
        values[rows, :, positions] = v[:, 0]
        window_k = keys[:, :, :span] if whole else keys[rows, :, :span]
        window_v = values[:, :, :span] if whole else values[rows, :, :span]
        # (n, heads, 1, dh) @ (n, heads, dh, span): a batched matmul, about 6x faster than einsum here.
        scores = matmul(q.transpose(0, 2, 1, 3), window_k.transpose(0, 1, 3, 2)) / math.sqrt(dh)
        scores = np.where(masked, NEG_INF, scores)
        p = exp(scores - scores.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
        attended = matmul(p, window_v).reshape(n, heads * dh)
        x = x + matmul(attended, weights[pre + "o"])
        h2, _ = layer_norm(x, params[pre + "ln2.g"], params[pre + "ln2.b"])
        x = x + mlp(h2, weights[pre + "up"], weights[pre + "down"])[0]
    cache.lengths[rows] = positions + 1
    xf, _ = layer_norm(x, params["lnf.g"], params["lnf.b"])
    return matmul(xf, params["wte"].T)
