"""The layering docs/DESIGN.md describes, checked on the source: who may import whom.

Every import counts, also those inside functions (they are how a module reaches another at run
time), so a circle hidden behind a deferred import is still a circle. Imports under
`if TYPE_CHECKING:` are left out: they exist for the type checker only and never run.
"""

from __future__ import annotations

import ast
import io
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "agent_src"
TOOLKIT = "mtrl_course"
LOCAL = "mtrl_course.local"
SEAM = "mtrl_course.aws"
# The learner (a tiny language model and its GRPO) sits between the foundation and local/: local/
# serves it, it never reaches up into local/, the seam or a step module.
LEARNER = "mtrl_course.learner"
# What the stand-ins in local/ may use of the toolkit: the foundation, never the seam or a step.
FOUNDATION = {
    "mtrl_course.config",
    "mtrl_course.errors",
    "mtrl_course.service_spec",
    "mtrl_course.naming",
    "mtrl_course.feedback_arrays",
    "mtrl_course.numerics",
    "mtrl_course.solver",
    "mtrl_course.dataset",
    "mtrl_course.policy_eval",
}
# The seam builds the backend (local.stack) and hands it the path to moto (local.apicall).
SEAM_MAY_USE = {"mtrl_course.local.stack", "mtrl_course.local.apicall"}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


# agent_src/app/ is the deploy bundle `mtrl agent bundle` builds (git-ignored), not a package.
MODULES = {
    module_name(p): p for p in ROOT.rglob("*.py") if "egg-info" not in str(p) and p.relative_to(ROOT).parts[0] != "app"
}


def imports_of(name: str) -> set[str]:
    """Every module of agent_src that `name` imports (at any depth of the file)."""
    path = MODULES[name]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    type_only = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"
        for inner in ast.walk(node)
    }
    for node in ast.walk(tree):
        if id(node) in type_only:
            continue
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            # `from pkg import sub` imports the submodule when one exists, else a name from pkg.
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
        else:
            continue
        for target in targets:
            while target and target not in MODULES:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


GRAPH = {name: imports_of(name) for name in MODULES}


def test_the_graph_sees_the_packages():
    assert {"wordle_agent.game", "mtrl_course.aws", "mtrl_course.local.stack", "mtrl_course.local"} <= set(GRAPH)
    assert "mtrl_course.local.stack" in GRAPH[SEAM]


def test_the_agent_module_imports_nothing_from_the_toolkit():
    for name, targets in GRAPH.items():
        if name.startswith("wordle_agent"):
            assert not {t for t in targets if t.startswith(TOOLKIT)}, f"{name} imports the toolkit"


def test_step_modules_use_only_the_face_of_local():
    for name, targets in GRAPH.items():
        if not name.startswith(TOOLKIT + ".") or name.startswith(LOCAL):
            continue
        inner = {t for t in targets if t.startswith(LOCAL + ".")}
        if name == SEAM:
            inner -= SEAM_MAY_USE
        assert not inner, f"{name} reaches into {sorted(inner)}; use `from mtrl_course import local`"


def test_nothing_in_local_imports_back_up():
    for name, targets in GRAPH.items():
        if not name.startswith(LOCAL):
            continue
        up = {
            t for t in targets if t.startswith(TOOLKIT) and not t.startswith((LOCAL, LEARNER)) and t not in FOUNDATION
        }
        assert not up, f"{name} imports {sorted(up)}; local/ may use only {sorted(FOUNDATION)} and the learner"


def test_the_learner_imports_only_the_foundation_and_the_agents_text():
    learner = [name for name in GRAPH if name == LEARNER or name.startswith(LEARNER + ".")]
    assert f"{LEARNER}.model" in learner
    for name in learner:
        toolkit = {t for t in GRAPH[name] if t.startswith(TOOLKIT) and not t.startswith(LEARNER)}
        assert toolkit <= FOUNDATION, f"{name} imports {sorted(toolkit - FOUNDATION)}; the learner sits below local/"


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_circles():
    # The package faces (`__init__`) import their own submodules lazily, by design; a circle
    # through a face is not a circle between two concerns, so faces are left out.
    graph = {n: {t for t in ts if MODULES[t].name != "__init__.py"} for n, ts in GRAPH.items()}
    assert _cycles(graph) == []


def test_the_cycle_finder_finds_a_circle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def code_lines(path: Path) -> int:
    """Lines that hold code: not blank, not a comment, not a docstring (the formatter's line
    wrapping and the course's long explanations do not count against a module)."""
    lines: set[int] = set()
    previous = tokenize.NEWLINE
    skip = {
        tokenize.COMMENT,
        tokenize.NL,
        tokenize.NEWLINE,
        tokenize.INDENT,
        tokenize.DEDENT,
        tokenize.ENCODING,
        tokenize.ENDMARKER,
    }
    for token in tokenize.generate_tokens(io.StringIO(path.read_text(encoding="utf-8")).readline):
        if token.type in skip:
            previous = token.type if token.type != tokenize.COMMENT else previous
            continue
        if token.type == tokenize.STRING and previous in (
            tokenize.NEWLINE,
            tokenize.INDENT,
            tokenize.DEDENT,
            tokenize.NL,
        ):
            previous = token.type
            continue  # a docstring or a bare string statement
        lines.update(range(token.start[0], token.end[0] + 1))
        previous = token.type
    return len(lines)


def test_code_lines_skip_docstrings_comments_and_blanks(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text(
        '"""Doc.\n\nMore."""\n\n# comment\nx = 1\n\n\ndef f():\n    """Doc."""\n    return (\n        x\n    )\n'
    )
    assert code_lines(sample) == 5


@pytest.mark.parametrize("name", sorted(n for n in MODULES if n.startswith((TOOLKIT, "coding_agent"))))
def test_no_module_is_very_long(name):
    # About 700 lines of code is where a module stops being one concern. The exceptions are one
    # concern each (docs/DESIGN.md): the Job Runtime emulator (one protocol, many endpoints), the
    # dataset format (most of it the bounded, never-raising reader for hostile files), the job
    # runner (one training loop with its faults), the coding tasks (data: 68 task definitions) and
    # the command line (a third of it the parser's declarations, every option with its help text;
    # the handlers are a few lines each and call the toolkit).
    exceptions = {
        "mtrl_course.cli": 850,
        "mtrl_course.local.jobruntime": 950,
        "mtrl_course.dataset": 900,
        "mtrl_course.local.runner": 750,
        "coding_agent.tasks": 800,
    }
    lines = code_lines(MODULES[name])
    assert lines <= exceptions.get(name, 700), f"{name} has {lines} lines of code"
