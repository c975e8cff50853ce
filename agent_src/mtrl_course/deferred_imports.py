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
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
import types
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
