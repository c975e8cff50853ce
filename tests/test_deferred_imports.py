"""jsonschema's IRI grammar is built on first use, not at import, and validates as before.

Each check runs in a fresh interpreter: the stand-in only works if it is installed before
jsonschema is imported, which this process (and every course process) did long ago.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

PROBE = """
import json, sys, time
started = time.process_time()
import mtrl_course, jsonschema
import_cpu = time.process_time() - started
built_at_import = "rfc3987_syntax.syntax_helpers" in sys.modules
checker = jsonschema.Draft202012Validator.FORMAT_CHECKER
answers = {value: checker.conforms(value, "iri") for value in ("https://example.com/a?b#c", "http://ex ample.com", "not an iri")}
answers.update({"ref:" + value: checker.conforms(value, "iri-reference") for value in ("../a/b", "a b")})
print(json.dumps({"built_at_import": built_at_import, "import_cpu": import_cpu, "answers": answers,
                  "real_after_use": getattr(sys.modules["rfc3987_syntax"], "_mtrl_stand_in", False) is False}))
"""
# The same answers from the real package, imported first (a child of a process running the
# offline backend imports mtrl_course in its sitecustomize, netguard.py: the stand-in goes first).
REFERENCE = PROBE.replace(
    "import mtrl_course, jsonschema",
    "sys.modules.pop('rfc3987_syntax', None); import rfc3987_syntax, jsonschema, mtrl_course",
)


def _run(source: str) -> dict:
    ran = subprocess.run([sys.executable, "-c", source], capture_output=True, text=True, timeout=120, check=True)
    return json.loads(ran.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_the_iri_grammar_is_built_on_first_use_and_answers_as_the_real_package() -> None:
    deferred, real = _run(PROBE), _run(REFERENCE)
    assert not deferred["built_at_import"] and real["built_at_import"]
    assert deferred["answers"] == real["answers"]
    assert deferred["answers"]["https://example.com/a?b#c"] and not deferred["answers"]["http://ex ample.com"]
    assert deferred["real_after_use"]  # the real package replaced the stand-in on first use


@pytest.mark.slow
def test_a_submodule_of_the_deferred_package_still_imports() -> None:
    probe = (
        "import json, mtrl_course, sys; import rfc3987_syntax.syntax_helpers as helpers; "
        "print(json.dumps(helpers.is_valid_syntax('iri', 'https://example.com/')))"
    )
    ran = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    assert json.loads(ran.stdout.strip().splitlines()[-1]) is True


def test_installing_twice_or_after_the_real_import_changes_nothing() -> None:
    from mtrl_course import deferred_imports

    assert deferred_imports.IRI_PACKAGE in sys.modules  # this process imported mtrl_course long ago
    assert deferred_imports.defer_iri_parser() is False
