"""LoRA adapters: a low-rank update to every attention and MLP projection of the frozen base.

For a projection y = x W (W is d_in x d_out), LoRA (Hu et al., 2021) learns two small matrices,
A (d_in x r) and B (r x d_out), and serves

    y = x W + (alpha / r) (x A) B  =  x (W + (alpha / r) A B)

so an adapter can be kept apart (a few hundred kilobytes here, a few hundred megabytes for
gpt-oss-20b) or merged into the weights, with the same output. B starts at zero, so a new
adapter changes nothing; A starts random (Kaiming-uniform-like scale 1/sqrt(d_in)). The rank r
and alpha are the service's `lora_rank` and `lora_alpha` (defaults 32 and 64): alpha / r scales
the update, so a larger rank at the same alpha does not make each step larger.

Gradients: the model's backward pass returns G = dLoss/dW_eff for each adapted projection
(W_eff = W + s A B, s = alpha / r); by the chain rule dLoss/dA = s G B^T and dLoss/dB = s A^T G.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from mtrl_course.learner.model import PROJECTIONS, ModelConfig, Params, weight_name
from mtrl_course.numerics import matmul


@dataclass
class Adapter:
    """LoRA matrices for every projection of every layer: `a[name]` (d_in, r), `b[name]` (r, d_out)."""

    rank: int
    alpha: float
    a: dict[str, np.ndarray] = field(default_factory=dict)
    b: dict[str, np.ndarray] = field(default_factory=dict)
    step: int = 0

    @property
    def scale(self) -> float:
        return float(self.alpha) / float(self.rank)

    @classmethod
    def new(
        cls, config: ModelConfig, rank: int, alpha: float, rng: np.random.Generator, dtype: type = np.float32
    ) -> Adapter:
        """A fresh adapter (B = 0, so it changes nothing yet) for every projection of `config`."""
        if rank <= 0:
            raise ValueError(f"lora rank must be positive, got {rank}")
        a: dict[str, np.ndarray] = {}
        b: dict[str, np.ndarray] = {}
        for layer in range(config.layers):
            for projection in PROJECTIONS:
                name = weight_name(layer, projection)
                d_in, d_out = config.projection_shape(projection)
                bound = 1.0 / math.sqrt(d_in)
                a[name] = rng.uniform(-bound, bound, (d_in, rank)).astype(dtype)
                b[name] = np.zeros((rank, d_out), dtype)
        return cls(rank, alpha, a, b)

    def delta(self, name: str) -> np.ndarray | None:
        """(alpha / r) A B for one projection, or None if it is not adapted."""
        if name not in self.a:
            return None
        return self.scale * matmul(self.a[name], self.b[name])

    def merged(self, params: Mapping[str, np.ndarray]) -> Params:
        """The base weights with this adapter folded in (what a serving stack may do once)."""
        out = {k: v.copy() for k, v in params.items()}
        for name in self.a:
            out[name] = out[name] + (self.scale * matmul(self.a[name], self.b[name])).astype(out[name].dtype)
        return out

    def gradients(self, weight_grads: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """dLoss/dA and dLoss/dB (keys "<name>.A", "<name>.B") from dLoss/dW_eff."""
        out = {}
        for name, a in self.a.items():
            g = weight_grads[name]
            out[name + ".A"] = self.scale * matmul(g, self.b[name].T)
            out[name + ".B"] = self.scale * matmul(a.T, g)
        return out

    def tensors(self) -> dict[str, np.ndarray]:
        """Every trainable matrix by name ("<name>.A", "<name>.B"): what the optimizer updates."""
        out = {}
        for name in self.a:
            out[name + ".A"], out[name + ".B"] = self.a[name], self.b[name]
        return out

    def with_tensors(self, tensors: Mapping[str, np.ndarray], step: int | None = None) -> Adapter:
        """A new adapter holding `tensors` (as `tensors()` names them)."""
        a = {name: np.asarray(tensors[name + ".A"]) for name in self.a}
        b = {name: np.asarray(tensors[name + ".B"]) for name in self.a}
        return Adapter(self.rank, self.alpha, a, b, self.step if step is None else step)

    def cast(self, dtype: type) -> Adapter:
        return Adapter(
            self.rank,
            self.alpha,
            {k: v.astype(dtype) for k, v in self.a.items()},
            {k: v.astype(dtype) for k, v in self.b.items()},
            self.step,
        )

    def parameter_count(self) -> int:
        return int(sum(v.size for v in self.a.values()) + sum(v.size for v in self.b.values()))
