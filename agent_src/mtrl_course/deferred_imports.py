"""Start-up work of third-party packages that the course defers until something needs it.

`import jsonschema` (strands and the SageMaker SDK both import it) loads `rfc3987_syntax`, which
builds an Earley parser of the RFC 3987 IRI grammar while it is imported: about 1.3 s of CPU on
a 2-core machine, in every Python process that imports the SDK or strands (each notebook kernel,
each `mtrl` command, each test worker). jsonschema uses that parser only to check the `iri` and
`iri-reference` string formats, and nothing in the course validates one (upstream:
python-jsonschema/jsonschema#1428, "Lazy import rfc3987_syntax").

`defer_iri_parser()` puts a stand-in module under that name before jsonschema is imported. It
has the same functions; the first call of any of them (or the first other attribute read)
imports the real package, which then replaces the stand-in in `sys.modules`, and hands the call
on. A validation that uses the IRI formats gives the same answer as without the stand-in
(tests/test_deferred_imports.py), only its first call pays the parser's start-up.

The SageMaker SDK repeats one check. Whenever it reads a value of its config file (the offline
backend always writes one, for the telemetry opt-out; telemetry.py), it validates the whole file
with `jsonschema.validate(config, SAGEMAKER_PYTHON_SDK_CONFIG_SCHEMA)`, and that function first
checks the SDK's large schema against JSON Schema's meta-schema, on every call: about 0.1 s of
CPU each time, four or five times per trainer or evaluator built (sagemaker-core 2.27:
config_manager.py, config.py, common_utils.get_sagemaker_config_value). The same pattern, and
its cost, are described upstream for other projects (for example Significant-Gravitas/AutoGPT
#13749). `validate_sdk_config_once()` wraps `jsonschema.validate` so that, for the SDK's schema
only, a config already found valid in this process is not validated again: the first call for
each distinct config, and every call for an invalid one, run the real validation and raise its
error. Any other schema, or extra arguments, go to jsonschema untouched.
"""

from __future__ import annotations

import functools
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import threading
import types
from collections.abc import Callable, Sequence
from typing import Any

IRI_PACKAGE = "rfc3987_syntax"
_lock = threading.RLock()


def defer_iri_parser() -> bool:
    """Install the stand-in for `rfc3987_syntax`; False when it is imported already or absent."""
    with _lock:
        if IRI_PACKAGE in sys.modules:
            return False
        try:
            spec = importlib.util.find_spec(IRI_PACKAGE)
        except (ImportError, ValueError):
            return False
        if spec is None:
            return False
        stand_in = types.ModuleType(IRI_PACKAGE, "Stand-in for rfc3987_syntax: imports it on first use.")
        # Its submodules stay importable (`import rfc3987_syntax.syntax_helpers` builds the parser).
        stand_in.__path__ = list(spec.submodule_search_locations or [])

        def real() -> Any:
            with _lock:
                if sys.modules.get(IRI_PACKAGE) is stand_in:
                    del sys.modules[IRI_PACKAGE]
            return importlib.import_module(IRI_PACKAGE)

        def is_valid_syntax(term: str, value: str) -> bool:
            return bool(real().is_valid_syntax(term, value))

        def parse(term: str, value: str) -> Any:
            return real().parse(term, value)

        def __getattr__(name: str) -> Any:  # noqa: N807 - a module's attribute hook (PEP 562)
            if name.startswith("__"):
                raise AttributeError(name)
            return getattr(real(), name)

        stand_in.is_valid_syntax = is_valid_syntax  # type: ignore[attr-defined]
        stand_in.parse = parse  # type: ignore[attr-defined]
        stand_in.__getattr__ = __getattr__  # type: ignore[method-assign]
        stand_in.__dict__["_mtrl_stand_in"] = True
        sys.modules[IRI_PACKAGE] = stand_in
        return True


# ----------------------------------------------------------------------------------------------
# The SageMaker SDK's config file: validated once per distinct content, not on every read

VALIDATING_PACKAGE = "jsonschema"
SDK_SCHEMA_MODULE = "sagemaker.core.config.config_schema"
SDK_SCHEMA_NAME = "SAGEMAKER_PYTHON_SDK_CONFIG_SCHEMA"
_WRAPPED_MARK = "_mtrl_sdk_config_once"


def validate_sdk_config_once() -> bool:
    """Wrap `jsonschema.validate` now, or right after jsonschema is first imported; False when
    it is wrapped already or jsonschema is not installed."""
    with _lock:
        module = sys.modules.get(VALIDATING_PACKAGE)
        if module is not None:
            return _wrap_validate(module)
        if any(isinstance(finder, _AfterImport) for finder in sys.meta_path):
            return False
        try:
            if importlib.util.find_spec(VALIDATING_PACKAGE) is None:
                return False
        except (ImportError, ValueError):
            return False
        sys.meta_path.insert(0, _AfterImport(VALIDATING_PACKAGE, _wrap_validate))
        return True


class _AfterImport(importlib.abc.MetaPathFinder):
    """Runs `then(module)` once a package's own code has run (a one-shot post-import hook)."""

    def __init__(self, name: str, then: Callable[[types.ModuleType], object]) -> None:
        self.name, self.then = name, then

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != self.name:
            return None
        with _lock:
            if self in sys.meta_path:
                sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)  # the other finders, as if this one were absent
        loader = spec.loader if spec is not None else None
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        run_module = loader.exec_module
        then = self.then

        def exec_module(module: types.ModuleType) -> None:
            run_module(module)
            then(module)

        loader.exec_module = exec_module  # type: ignore[method-assign]  # this spec's own loader
        return spec


def _wrap_validate(module: types.ModuleType) -> bool:
    original = getattr(module, "validate", None)
    if original is None or getattr(original, _WRAPPED_MARK, False):
        return False
    passed: set[object] = set()  # canonical forms of the configs found valid

    @functools.wraps(original)
    def validate(instance: Any, schema: Any, *args: Any, **kwargs: Any) -> None:
        sdk = sys.modules.get(SDK_SCHEMA_MODULE)
        if args or kwargs or sdk is None or schema is not getattr(sdk, SDK_SCHEMA_NAME, None):
            return original(instance, schema, *args, **kwargs)
        try:
            key = _canonical(instance)
            known = key in passed
        except (TypeError, RecursionError):  # unhashable or self-containing content: always the real check
            return original(instance, schema)
        if not known:
            original(instance, schema)  # raises for an invalid config, every time
            passed.add(key)
        return None

    setattr(validate, _WRAPPED_MARK, True)
    module.validate = validate  # type: ignore[attr-defined]
    return True


def _canonical(value: Any) -> object:
    """A hashable form of a JSON-like value that keeps every type apart (a list is not a tuple,
    True is not 1), so two values with the same form validate alike."""
    if isinstance(value, dict):
        items = ((_canonical(key), _canonical(item)) for key, item in value.items())
        return ("dict", tuple(sorted(items, key=repr)))
    if isinstance(value, list | tuple):
        return (type(value).__name__, tuple(_canonical(item) for item in value))
    hash(value)  # TypeError for anything unhashable
    return (type(value), value)
