"""The course toolkit: the offline world, the step modules the notebooks call, the learner.

Importing it defers one third-party start-up cost that every course process would otherwise pay
(jsonschema's IRI grammar, about 1.3 s) and stops the SageMaker SDK from validating its config
file again on every read (about 0.1 s each); see deferred_imports.py.
"""

from mtrl_course.deferred_imports import defer_iri_parser as _defer_iri_parser
from mtrl_course.deferred_imports import validate_sdk_config_once as _validate_sdk_config_once

_defer_iri_parser()
_validate_sdk_config_once()
