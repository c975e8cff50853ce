"""Adam with decoupled weight decay and global gradient-norm clipping, over named numpy arrays.

The same optimizer trains the base model (every weight) and the GRPO adapter (the LoRA matrices);
its defaults are the service's documented ones (`adam_beta1` 0.9, `adam_beta2` 0.95, eps 1e-8,
`adam_grad_clip_norm` 1.0). It *descends* the loss it is given.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np


@dataclass
class AdamW:
    learning_rate: float
    beta1: float = 0.9
    beta2: float = 0.95
    eps: float = 1e-8
    weight_decay: float = 0.0
    grad_clip_norm: float = 1.0  # 0 turns clipping off
    m: dict[str, np.ndarray] = field(default_factory=dict)
    v: dict[str, np.ndarray] = field(default_factory=dict)
    t: int = 0

    def step(
        self, params: Mapping[str, np.ndarray], grads: Mapping[str, np.ndarray], learning_rate: float | None = None
    ) -> tuple[dict[str, np.ndarray], float]:
        """New parameters after one step, and the gradient's global norm before clipping."""
        norm = math.sqrt(sum(float((g.astype(np.float64) ** 2).sum()) for g in grads.values()))
        clip = self.grad_clip_norm / norm if self.grad_clip_norm > 0 and norm > self.grad_clip_norm else 1.0
        lr = self.learning_rate if learning_rate is None else learning_rate
        self.t += 1
        c1, c2 = 1 - self.beta1**self.t, 1 - self.beta2**self.t
        out = {}
        for name, p in params.items():
            g = grads.get(name)
            if g is None:
                out[name] = p
                continue
            g = (g * clip).astype(p.dtype)
            m = self.m.get(name)
            if m is None:
                m = self.m[name] = np.zeros_like(p)
                self.v[name] = np.zeros_like(p)
            m *= self.beta1
            m += (1 - self.beta1) * g
            v = self.v[name]
            v *= self.beta2
            v += (1 - self.beta2) * g * g
            update = (m / c1) / (np.sqrt(v / c2) + self.eps)
            decayed = p * (1 - lr * self.weight_decay) if self.weight_decay and p.ndim > 1 else p
            out[name] = (decayed - lr * update).astype(p.dtype)
        return out, norm
