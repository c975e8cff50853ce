"""Weights on disk in safetensors, the format the model ecosystem shares (Hugging Face, vLLM).

A safetensors file is a JSON header (names, dtypes, shapes, and a free-form string metadata map)
followed by the raw tensor bytes: nothing in it is executed on load, unlike a pickle. The base
model's file carries its `ModelConfig` and tokenizer in the metadata, so a file is enough to
rebuild the model; an adapter's file carries its rank, alpha, step and the id of the base it
was trained on (loading an adapter onto another base fails with a message that says so).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from safetensors.numpy import load_file, save_file
from safetensors import safe_open

from mtrl_course.learner import tokenizer
from mtrl_course.learner.lora import Adapter
from mtrl_course.learner.model import ModelConfig, Params

FORMAT = "mtrl-learner-v1"


def _metadata(path: Path) -> dict[str, str]:
    with safe_open(str(path), framework="numpy") as handle:
        return dict(handle.metadata() or {})


def save_model(path: Path, params: Mapping[str, np.ndarray], config: ModelConfig, base_id: str) -> Path:
    """Write the base weights (float32) with their config, tokenizer and id."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    metadata = {
        "format": FORMAT,
        "kind": "base",
        "base_id": base_id,
        "config": json.dumps(config.to_dict(), sort_keys=True),
        "specials": json.dumps(list(tokenizer.SPECIALS)),
        "characters": tokenizer.CHARACTERS,
    }
    save_file({k: np.ascontiguousarray(v, dtype=np.float32) for k, v in params.items()}, str(path), metadata)
    return path


def load_model(path: Path) -> tuple[Params, ModelConfig, str]:
    """(params, config, base_id) from a file `save_model` wrote; ValueError if it is not one."""
    path = Path(path)
    meta = _metadata(path)
    if meta.get("format") != FORMAT or meta.get("kind") != "base":
        raise ValueError(f"{path} is not a learner base model (format {meta.get('format')!r})")
    if meta.get("characters") != tokenizer.CHARACTERS or json.loads(meta["specials"]) != list(tokenizer.SPECIALS):
        raise ValueError(f"{path} was trained with another tokenizer than this code's; retrain the base")
    config = ModelConfig(**json.loads(meta["config"]))
    return dict(load_file(str(path))), config, meta["base_id"]


def save_adapter(path: Path, adapter: Adapter, base_id: str, extra: Mapping[str, Any] | None = None) -> Path:
    """Write a LoRA adapter (the model package's artefact) with its rank, alpha, step and base."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    metadata = {
        "format": FORMAT,
        "kind": "lora",
        "base_id": base_id,
        "rank": str(adapter.rank),
        "alpha": repr(float(adapter.alpha)),
        "step": str(adapter.step),
        "extra": json.dumps(dict(extra or {}), sort_keys=True),
    }
    tensors = {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in adapter.tensors().items()}
    save_file(tensors, str(path), metadata)
    return path


def load_adapter(path: Path, base_id: str | None = None) -> Adapter:
    """The adapter in `path`; ValueError if it was trained on another base than `base_id`."""
    path = Path(path)
    meta = _metadata(path)
    if meta.get("format") != FORMAT or meta.get("kind") != "lora":
        raise ValueError(f"{path} is not a learner LoRA adapter (format {meta.get('format')!r})")
    if base_id is not None and meta.get("base_id") != base_id:
        raise ValueError(f"{path} adapts base {meta.get('base_id')!r}, not {base_id!r}; train one for this base")
    tensors = load_file(str(path))
    names = sorted({k.rsplit(".", 1)[0] for k in tensors})
    a = {n: tensors[n + ".A"] for n in names}
    b = {n: tensors[n + ".B"] for n in names}
    return Adapter(int(meta["rank"]), float(meta["alpha"]), a, b, int(meta["step"]))


def adapter_metadata(path: Path) -> dict[str, Any]:
    meta = _metadata(Path(path))
    return {**meta, "extra": json.loads(meta.get("extra", "{}"))}
