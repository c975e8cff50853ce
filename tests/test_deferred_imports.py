"""jsonschema's IRI grammar is built on first use, not at import, and validates as before.

Each check runs in a fresh interpreter: the stand-in only works if it is installed before
jsonschema is imported, which this process (and every course process) did long ago.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
import types
from collections.abc import Callable

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


# ------------------------------------------------- the SageMaker SDK's config, validated once
SDK_CONFIG = {"SchemaVersion": "1.0", "SageMaker": {"PythonSDK": {"Modules": {"TelemetryOptOut": True}}}}


def _sdk_schema() -> dict:
    from sagemaker.core.config.config_schema import SAGEMAKER_PYTHON_SDK_CONFIG_SCHEMA

    return SAGEMAKER_PYTHON_SDK_CONFIG_SCHEMA


def _counted_wrapper() -> tuple[Callable[..., None], list[object], Callable[..., None]]:
    """A wrapper like the one every course process has, around a spy on jsonschema's own validate."""
    import jsonschema

    from mtrl_course import deferred_imports

    real = jsonschema.validate.__wrapped__  # this process wrapped it when it imported mtrl_course
    calls: list[object] = []

    def spy(instance: object, schema: object, *args: object, **kwargs: object) -> None:
        calls.append(instance)
        real(instance, schema, *args, **kwargs)

    module = types.ModuleType("jsonschema_spy")
    module.validate = spy  # type: ignore[attr-defined]
    assert deferred_imports._wrap_validate(module)
    assert not deferred_imports._wrap_validate(module)  # once
    return module.validate, calls, real  # type: ignore[attr-defined]


def test_a_valid_sdk_config_is_validated_once_per_content() -> None:
    validate, calls, _ = _counted_wrapper()
    for _ in range(3):
        validate(copy.deepcopy(SDK_CONFIG), _sdk_schema())
    assert len(calls) == 1
    changed = copy.deepcopy(SDK_CONFIG)
    changed["SageMaker"]["PythonSDK"]["Modules"]["TelemetryOptOut"] = False
    validate(changed, _sdk_schema())
    validate(changed, _sdk_schema())
    assert len(calls) == 2


def test_an_invalid_sdk_config_raises_the_real_error_every_time() -> None:
    import jsonschema

    validate, calls, real = _counted_wrapper()
    bad = copy.deepcopy(SDK_CONFIG)
    bad["SageMaker"]["PythonSDK"]["Modules"]["TelemetryOptOut"] = "yes"
    for _ in range(2):
        with pytest.raises(jsonschema.ValidationError) as wrapped_error:
            validate(bad, _sdk_schema())
        with pytest.raises(jsonschema.ValidationError) as real_error:
            real(bad, _sdk_schema())
        assert wrapped_error.value.message == real_error.value.message == "'yes' is not of type 'boolean'"
    assert len(calls) == 2


def test_other_schemas_and_unhashable_configs_always_reach_jsonschema() -> None:
    import jsonschema

    validate, calls, _ = _counted_wrapper()
    for _ in range(2):
        validate({"a": 1}, {"type": "object"})  # another schema
        with pytest.raises(jsonschema.ValidationError):  # a set has no canonical form: checked each time
            validate({**SDK_CONFIG, "Extra": {1, 2}}, _sdk_schema())
    assert len(calls) == 4


def test_values_json_would_confuse_stay_apart() -> None:
    from mtrl_course.deferred_imports import _canonical

    assert _canonical([1, 2]) != _canonical((1, 2))
    assert _canonical({"a": True}) != _canonical({"a": 1})
    assert _canonical({"a": 1.0}) != _canonical({"a": 1})
    assert _canonical({"a": 1, "b": [2]}) == _canonical({"b": [2], "a": 1})
    with pytest.raises(TypeError):
        _canonical({"a": {1, 2}})


def test_the_sdk_reads_its_config_through_the_wrapper_and_still_refuses_a_bad_one() -> None:
    import jsonschema
    from sagemaker.core.config.config_manager import SageMakerConfig

    assert getattr(jsonschema.validate, "_mtrl_sdk_config_once", False)
    SageMakerConfig.validate_sagemaker_config(SDK_CONFIG)
    bad = copy.deepcopy(SDK_CONFIG)
    bad["SageMaker"]["PythonSDK"]["Modules"]["TelemetryOptOut"] = 1
    for _ in range(2):
        with pytest.raises(jsonschema.ValidationError) as refused:
            SageMakerConfig.validate_sagemaker_config(bad)
        assert refused.value.message == "1 is not of type 'boolean'"


@pytest.mark.slow
def test_a_fresh_course_process_wraps_jsonschema_when_it_is_first_imported() -> None:
    probe = (
        "import json, sys, mtrl_course\n"
        "before = 'jsonschema' in sys.modules\n"
        "from sagemaker.core.config.config_manager import SageMakerConfig\n"
        "import jsonschema\n"
        "print(json.dumps({'imported_early': before,\n"
        "                  'wrapped': getattr(jsonschema.validate, '_mtrl_sdk_config_once', False),\n"
        "                  'hook_left': any(type(f).__name__ == '_AfterImport' for f in sys.meta_path)}))"
    )
    ran = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    assert json.loads(ran.stdout.strip().splitlines()[-1]) == {
        "imported_early": False,
        "wrapped": True,
        "hook_left": False,
    }
