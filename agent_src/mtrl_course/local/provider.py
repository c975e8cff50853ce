"""The part every in-process Strands model provider of the course shares.

Strands' `Model` asks for four methods; the offline providers (the reference solver, the fast
lane's stand-in policy) only differ in `stream`. This base keeps the config as a plain dict and
refuses structured output, which no Wordle rollout asks for.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

from strands.models.model import Model


class InProcessModel(Model):
    """A Strands model whose config is a dict; subclasses implement `stream` only."""

    # Said when something asks for structured output (subclasses name what they do instead).
    STRUCTURED_OUTPUT_REFUSAL = "this in-process model only plays Wordle through its tool"

    config: dict[str, Any]

    def update_config(self, **model_config: Any) -> None:
        self.config.update(model_config)

    def get_config(self) -> dict[str, Any]:
        return dict(self.config)

    async def structured_output(
        self, output_model: Any, prompt: Any, system_prompt: str | None = None, **kwargs: Any
    ) -> AsyncGenerator[dict[str, Any], None]:
        raise NotImplementedError(self.STRUCTURED_OUTPUT_REFUSAL)
        yield {}  # pragma: no cover - makes this an async generator, as the interface requires
