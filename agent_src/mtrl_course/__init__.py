"""The course toolkit: the offline world, the step modules the notebooks call, the learner.

Importing it defers one third-party start-up cost that every course process would otherwise pay
(jsonschema's IRI grammar, about 1.3 s; see deferred_imports.py).
"""

from mtrl_course.deferred_imports import defer_iri_parser as _defer_iri_parser

_defer_iri_parser()
