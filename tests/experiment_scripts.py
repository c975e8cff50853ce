"""Import a script of experiments/ by name, as its stored results' tests need it.

The scripts import one another by bare name (`learner_recipe` imports `learner_grpo`), so the
folder is on sys.path while the script loads, and off it afterwards.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType

EXPERIMENTS = Path(__file__).resolve().parents[1] / "experiments"


def load(name: str) -> ModuleType:
    """experiments/`name`.py as a module (the same module object on every call in a process)."""
    sys.path.insert(0, str(EXPERIMENTS))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(EXPERIMENTS))
