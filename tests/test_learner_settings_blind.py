"""Nothing in the tiny model knows a setting's outcome: only the sampler reads the temperature
and only the chat template (and the corpus that the template's examples are rendered from) reads
the reasoning effort. A branch on either anywhere else in `mtrl_course.learner`, or in the GRPO
core, could write what a setting should do into the model instead of letting it emerge."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "agent_src" / "mtrl_course"
SETTINGS = {"temperature", "effort"}
# Where a setting is read by design: the sampler turns a temperature into a distribution; the
# template renders an effort into the prompt (and the corpus renders the base's training examples
# the same way, a scratchpad above low effort).
READERS = {"learner/sampler.py": {"temperature"}, "learner/template.py": {"effort"}, "learner/corpus.py": {"effort"}}
CHECKED = sorted([*ROOT.joinpath("learner").glob("*.py"), *ROOT.joinpath("rl").glob("*.py")])


def _names(node: ast.AST) -> set[str]:
    found = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name):
            found.add(sub.id)
        elif isinstance(sub, ast.Attribute):
            found.add(sub.attr)
        elif isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            found.add(sub.value)
    return {name for name in found if name in SETTINGS}


def branches_on_settings(source: str) -> list[tuple[int, str]]:
    """(line, setting) for every condition (if, while, conditional expression, assert, match,
    comprehension filter, comparison) that reads a temperature or an effort."""
    out = []
    for node in ast.walk(ast.parse(source)):
        tests: list[ast.AST] = []
        if isinstance(node, (ast.If, ast.While, ast.IfExp, ast.Assert)):
            tests.append(node.test)
        elif isinstance(node, ast.comprehension):
            tests.extend(node.ifs)
        elif isinstance(node, ast.Match):
            tests.append(node.subject)
        elif isinstance(node, ast.Compare):
            tests.append(node)
        for test in tests:
            out.extend((node.lineno, name) for name in sorted(_names(test)))
    return sorted(set(out))


def test_only_the_sampler_and_the_template_branch_on_a_setting():
    assert len(CHECKED) > 10
    found = []
    for path in CHECKED:
        rel = path.relative_to(ROOT).as_posix()
        allowed = READERS.get(rel, set())
        found += [
            f"{rel}:{line} reads {name}" for line, name in branches_on_settings(path.read_text()) if name not in allowed
        ]
    assert not found, "a setting read outside the sampler and the template:\n" + "\n".join(found)


def test_the_check_finds_a_branch_on_a_setting():
    assert branches_on_settings("def f(x, temperature):\n    return x if temperature > 0 else 0\n") == [
        (2, "temperature")
    ]
    assert branches_on_settings("def f(req):\n    if req['effort'] == 'medium':\n        pass\n") == [(2, "effort")]
    assert branches_on_settings("def f(effort):\n    return g(effort)\n") == []
