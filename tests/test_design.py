"""The layering docs/DESIGN.md describes, checked on the source: who may import whom.

Every import counts: those inside functions (they are how a module reaches another at run time)
and those under `if TYPE_CHECKING:` (a type annotation that names a module of a higher layer, or
one that closes a circle, is the same coupling as a run-time import, only hidden). So a circle
behind a deferred or type-checking import is still a circle, and an up-layer import is found
wherever it is written. Every rule the "Packages" section of DESIGN.md states has a test here.
"""

from __future__ import annotations

import ast
import functools
import io
import json
import subprocess
import sys
import tokenize
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "agent_src"
TOOLKIT = "mtrl_course"
LOCAL = "mtrl_course.local"
SEAM = "mtrl_course.aws"
# The learner (a tiny language model and its GRPO) sits between the foundation and local/: local/
# serves it, it never reaches up into local/, the seam or a step module.
LEARNER = "mtrl_course.learner"
# The RL core (advantages, the clipped objective's weights, the one optimizer) sits just above the
# foundation: every learner (the stand-in in local/, the learner, the coding stand-in) uses it.
RL = "mtrl_course.rl"
# Layer 0, the foundation: what everything above may use.
FOUNDATION = {
    "mtrl_course.config",
    "mtrl_course.errors",
    "mtrl_course.service_spec",
    "mtrl_course.naming",
    "mtrl_course.feedback_arrays",
    "mtrl_course.numerics",
    "mtrl_course.rewards",
    "mtrl_course.solver",
    "mtrl_course.dataset",
    "mtrl_course.iam_decisions",
    "mtrl_course.netguard",
    "mtrl_course.telemetry",
    "mtrl_course.mlflow_client",
    "mtrl_course.wordlists",
    "mtrl_course.deferred_imports",
    "mtrl_course.lockfile",
    "mtrl_course.tool_answers",
    "mtrl_course.verdicts",
}
# Layer 3, one module per course step (and the lessons' toolkits: notebook 09's reward designs, notebook
# 05's anatomy of one GRPO update).
STEPS = {
    f"mtrl_course.{name}"
    for name in (
        "iam preflight deploy smoke storage resources training monitoring evaluation costs plots cleanup "
        "run_scope instructor_run reward_designs grpo_anatomy learner_results commands first_run notebook"
    ).split()
}
# Layer 4, the course machinery: the command line, progress bars and curriculum/ (and the
# package's own face, which imports nothing). The lessons' bootstrap (`notebook`) sits below it,
# with the step modules: a lesson's kernel loads nothing of the machinery.
MACHINERY = {"mtrl_course", "mtrl_course.cli", "mtrl_course.progress"}
# The seam builds the backend (local.offline_backend) and hands it the path to moto (local.apicall).
SEAM_MAY_USE = {"mtrl_course.local.offline_backend", "mtrl_course.local.apicall"}
# What the deployed agent may import besides the standard library (DESIGN.md, "Packages").
AGENT_MAY_USE = (
    "strands",
    "openai",
    "httpx",
    "sagemaker.train.rft",
    "sagemaker.core.token_generator",
    "bedrock_agentcore",
    "botocore",
)
# coding_agent's environment part (bundled for Nova Forge) uses the standard library only; its
# stand-in trainer reuses the Wordle stand-in's group-relative update and adapter scale, and its
# policy takes its machine-dependent float operations from numerics (the perturbation switch).
CODING_ENVIRONMENT = {f"coding_agent.{name}" for name in ("env", "sandbox", "jail", "reward", "tasks", "simulator")}
CODING_MAY_USE_OF_TOOLKIT = {
    "mtrl_course.local.grpo",
    "mtrl_course.local.stand_in_policy",
    "mtrl_course.numerics",
    "mtrl_course.rl.advantages",
    "mtrl_course.rl.optim",
}


def layer(name: str) -> float:
    """The layer DESIGN.md puts a module of mtrl_course in (KeyError for one it does not place)."""
    if name in MACHINERY or name.startswith("mtrl_course.curriculum"):
        return 4
    if name in STEPS:
        return 3
    if name == SEAM:
        return 2
    if name == LOCAL or name.startswith(LOCAL + "."):
        return 1
    if name == LEARNER or name.startswith(LEARNER + "."):
        return 0.5
    if name == RL or name.startswith(RL + "."):
        return 0.25
    if name in FOUNDATION:
        return 0
    raise KeyError(name)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


# agent_src/app/ is the deploy bundle `mtrl agent bundle` builds (git-ignored), not a package.
MODULES = {
    module_name(p): p for p in ROOT.rglob("*.py") if "egg-info" not in str(p) and p.relative_to(ROOT).parts[0] != "app"
}


@functools.cache
def _imported_names(name: str) -> list[str]:
    """Every dotted name `name`'s file imports, at any depth, TYPE_CHECKING blocks included."""
    path = MODULES[name]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            # `from pkg import sub` imports the submodule when one exists, else a name from pkg.
            names.extend(f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names)
    return names


def imports_of(name: str) -> set[str]:
    """Every module of agent_src that `name` imports (at any depth of the file)."""
    found: set[str] = set()
    for target in _imported_names(name):
        while target and target not in MODULES:
            target = target.rpartition(".")[0]
        if target and target != name:
            found.add(target)
    return found


def outside_imports(name: str) -> set[str]:
    """What `name` imports from outside agent_src and the standard library (dotted, as written)."""
    return {
        target
        for target in _imported_names(name)
        if target.split(".")[0] not in sys.stdlib_module_names
        and target.split(".")[0] not in {"__future__"}
        and not any(target == m or target.startswith(m + ".") for m in MODULES)
    }


class _ImportGraph(Mapping[str, set[str]]):
    """Each agent_src module to the agent_src modules it imports, parsed on first use: every
    pytest-xdist worker imports this file to collect it, and only one runs its tests."""

    @functools.cached_property
    def _edges(self) -> dict[str, set[str]]:
        return {name: imports_of(name) for name in MODULES}

    def __getitem__(self, name: str) -> set[str]:
        return self._edges[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._edges)

    def __len__(self) -> int:
        return len(self._edges)


GRAPH = _ImportGraph()
TOOLKIT_MODULES = sorted(n for n in MODULES if n == TOOLKIT or n.startswith(TOOLKIT + "."))


def up_layer_imports() -> list[tuple[str, str]]:
    """Imports from a module to one of a higher layer (DESIGN.md: each layer imports only below)."""
    return sorted(
        (name, target)
        for name in TOOLKIT_MODULES
        for target in GRAPH[name]
        if target.startswith(TOOLKIT) and layer(target) > layer(name)
    )


def test_the_graph_sees_the_packages():
    expected = {"wordle_agent.game", "mtrl_course.aws", "mtrl_course.local.offline_backend", "mtrl_course.local"}
    assert expected <= set(GRAPH)
    assert "mtrl_course.local.offline_backend" in GRAPH[SEAM]


def test_type_checking_imports_count(tmp_path, monkeypatch):
    sample = tmp_path / "sample_mod.py"
    sample.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from mtrl_course import cli\n")
    monkeypatch.setitem(MODULES, "sample_mod", sample)
    assert "mtrl_course.cli" in imports_of("sample_mod")


def test_every_toolkit_module_has_a_layer():
    unplaced = []
    for name in TOOLKIT_MODULES:
        try:
            layer(name)
        except KeyError:
            unplaced.append(name)
    assert not unplaced, f"place {unplaced} in a layer of docs/DESIGN.md and of this test"


def test_no_import_goes_up_a_layer():
    assert up_layer_imports() == []


def test_the_agent_module_imports_nothing_from_the_toolkit():
    for name, targets in GRAPH.items():
        if name.startswith("wordle_agent"):
            assert not {t for t in targets if not t.startswith("wordle_agent")}, f"{name} imports the toolkit"


def test_the_agent_module_imports_only_its_listed_dependencies():
    for name in MODULES:
        if name.startswith("wordle_agent"):
            extra = {t for t in outside_imports(name) if not t.startswith(AGENT_MAY_USE)}
            assert not extra, f"{name} imports {sorted(extra)}; the deployed agent may use {AGENT_MAY_USE}"


def _rebound_globals(name: str) -> list[str]:
    tree = ast.parse(MODULES[name].read_text(encoding="utf-8"))
    return [target for node in ast.walk(tree) if isinstance(node, ast.Global) for target in node.names]


def test_the_agent_keeps_no_swappable_model_or_observer():
    # DESIGN.md, "The model-factory seam": every caller hands run_rollout its model (no default)
    # and its observer; no module of the deployed agent rebinds a module-level name at run time
    # (the removed `use_model_factory` did, `global _model_factory`).
    agent = [name for name in MODULES if name.startswith("wordle_agent")]
    assert "wordle_agent.rollout" in agent and "wordle_agent.main" in agent
    assert {name: _rebound_globals(name) for name in agent if _rebound_globals(name)} == {}
    tree = ast.parse(MODULES["wordle_agent.rollout"].read_text(encoding="utf-8"))
    (run_rollout,) = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "run_rollout"]
    positional = [arg.arg for arg in run_rollout.args.args]
    defaulted = positional[len(positional) - len(run_rollout.args.defaults) :]
    assert positional[:2] == ["payload", "model"] and "model" not in defaulted


def test_the_rebound_global_finder_finds_one(tmp_path, monkeypatch):
    sample = tmp_path / "swap.py"
    sample.write_text("_factory = None\n\ndef use(f):\n    global _factory\n    _factory = f\n")
    monkeypatch.setitem(MODULES, "swap", sample)
    assert _rebound_globals("swap") == ["_factory"]


def test_the_coding_environment_uses_the_standard_library_only():
    for name in CODING_ENVIRONMENT:
        assert name in MODULES, name
        assert not outside_imports(name), f"{name} imports {sorted(outside_imports(name))}"
        assert all(t.startswith("coding_agent") for t in GRAPH[name]), f"{name} imports {sorted(GRAPH[name])}"


# The trainers and the policies they update need numpy, not the HTTP emulator: loading one of them
# must not load uvicorn (the emulator's server), directly or through what it imports.
TRAINERS = (
    "mtrl_course.local.grpo",
    "mtrl_course.local.stand_in_policy",
    "mtrl_course.local.learner_policy",
    "mtrl_course.learner.grpo",
    "mtrl_course.grpo_anatomy",
    "coding_agent.trainer",
)


@pytest.mark.parametrize("module", TRAINERS)
def test_no_trainer_loads_the_http_server(module):
    probe = f"import sys, {module}; print('uvicorn' in sys.modules, 'mtrl_course.local.job_runtime_emulator' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False"], f"{module} loads uvicorn or the job runtime emulator: {out}"


def test_the_coding_agent_uses_of_the_toolkit_only_the_stand_ins_update():
    for name, targets in GRAPH.items():
        if name.startswith("coding_agent"):
            toolkit = {t for t in targets if t.startswith(TOOLKIT)}
            assert toolkit <= CODING_MAY_USE_OF_TOOLKIT, f"{name} imports {sorted(toolkit)}"


def test_step_modules_use_only_the_face_of_local():
    for name, targets in GRAPH.items():
        if not name.startswith(TOOLKIT + ".") or name.startswith(LOCAL):
            continue
        inner = {t for t in targets if t.startswith(LOCAL + ".")}
        if name == SEAM:
            inner -= SEAM_MAY_USE
        assert not inner, f"{name} reaches into {sorted(inner)}; use `from mtrl_course import local`"


def test_the_face_of_local_names_what_it_offers():
    # No `__getattr__` resolving names from strings: editors and mypy see every name of the face.
    tree = ast.parse(MODULES[LOCAL].read_text(encoding="utf-8"))
    functions = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
    assert "__getattr__" not in functions


def _attributes_of(source: str, name: str) -> set[str]:
    """Every `name.attribute` the code (not its comments or strings) reads."""
    tokens = [
        t for t in tokenize.generate_tokens(io.StringIO(source).readline) if t.type in (tokenize.NAME, tokenize.OP)
    ]
    return {
        tokens[i + 2].string
        for i in range(len(tokens) - 2)
        if tokens[i].string == name
        and tokens[i + 1].string == "."
        and tokens[i + 2].type == tokenize.NAME
        and (i == 0 or tokens[i - 1].string != ".")
    }


def _face_all() -> set[str]:
    tree = ast.parse(MODULES[LOCAL].read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "__all__" for t in node.targets):
            return set(ast.literal_eval(node.value))
    raise AssertionError("local/__init__.py has no __all__")


def test_the_faces_all_lists_exactly_what_it_defines_or_hands_on():
    tree = ast.parse(MODULES[LOCAL].read_text(encoding="utf-8"))
    public = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)):
            public.add(node.name)
        elif isinstance(node, ast.Assign):
            public |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            public.add(node.target.id)
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(LOCAL):
            public |= {a.asname or a.name for a in node.names}
    public = {n for n in public if not n.startswith("_")}
    listed = _face_all()
    assert listed <= public, f"__all__ names what the face does not have: {sorted(listed - public)}"
    assert public <= listed, f"the face offers names __all__ does not list: {sorted(public - listed)}"


def test_step_modules_and_notebooks_use_only_what_the_face_lists():
    offered = _face_all()
    used: dict[str, set[str]] = {}
    sources = {name: path.read_text(encoding="utf-8") for name, path in MODULES.items() if name.startswith(TOOLKIT)}
    root = Path(__file__).resolve().parents[1]
    for path in [*sorted((root / "notebooks").glob("*.ipynb")), root / "templates" / "_template.ipynb"]:
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        sources[path.name] = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    for name, text in sources.items():
        if name == LOCAL or name.startswith(LOCAL + "."):
            continue
        found = _attributes_of(text, "local")
        if found - offered:
            used[name] = found - offered
    assert not used, f"names used from the face that its __all__ does not list: {used}"


def test_no_module_of_local_shadows_a_name_of_the_face():
    # Importing mtrl_course.local.<name> sets the package's attribute <name> to that module, so a
    # submodule named like a face function (`backend`, `agent_runtime`, `job_runtime`) would replace
    # the function for every caller once anything imported the submodule.
    tree = ast.parse(MODULES[LOCAL].read_text(encoding="utf-8"))
    face = {node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef))}
    submodules = {name.rpartition(".")[2] for name in MODULES if name.startswith(LOCAL + ".")}
    assert {"backend", "agent_runtime", "job_runtime"} <= face
    assert not face & submodules, sorted(face & submodules)


def test_nothing_in_local_imports_back_up():
    for name, targets in GRAPH.items():
        if not name.startswith(LOCAL):
            continue
        up = {
            t
            for t in targets
            if t.startswith(TOOLKIT) and not t.startswith((LOCAL, LEARNER, RL)) and t not in FOUNDATION
        }
        assert not up, (
            f"{name} imports {sorted(up)}; local/ may use only {sorted(FOUNDATION)}, the RL core and the learner"
        )


def test_the_learner_imports_only_the_foundation_and_the_agents_text():
    learner = [name for name in GRAPH if name == LEARNER or name.startswith(LEARNER + ".")]
    assert f"{LEARNER}.model" in learner
    for name in learner:
        toolkit = {t for t in GRAPH[name] if t.startswith(TOOLKIT) and not t.startswith((LEARNER, RL))}
        assert toolkit <= FOUNDATION, f"{name} imports {sorted(toolkit - FOUNDATION)}; the learner sits below local/"


def test_the_rl_core_imports_only_the_foundation():
    core = [name for name in GRAPH if name == RL or name.startswith(RL + ".")]
    assert {f"{RL}.advantages", f"{RL}.objective", f"{RL}.optim"} <= set(core)
    for name in core:
        toolkit = {t for t in GRAPH[name] if t.startswith(TOOLKIT) and not t.startswith(RL)}
        assert toolkit <= FOUNDATION, (
            f"{name} imports {sorted(toolkit - FOUNDATION)}; the RL core sits on the foundation"
        )


def test_the_seam_uses_of_local_only_the_backend_and_the_call():
    local = {t for t in GRAPH[SEAM] if t.startswith(LOCAL)}
    assert local <= SEAM_MAY_USE, sorted(local - SEAM_MAY_USE)


def _cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
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
    # Every import counts, type-checking and package faces (`__init__`) included.
    assert _cycles(GRAPH) == []


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
    # dataset format (most of it the bounded, never-raising reader for hostile files), the coding
    # tasks (data: 68 task definitions) and
    # the command line (a third of it the parser's declarations, every option with its help text;
    # the handlers are a few lines each and call the toolkit; `mtrl smoke`, the first live run,
    # added its options).
    exceptions = {
        "mtrl_course.cli": 880,
        "mtrl_course.local.job_runtime_emulator": 950,
        "mtrl_course.dataset": 900,
        "coding_agent.tasks": 800,
    }
    lines = code_lines(MODULES[name])
    assert lines <= exceptions.get(name, 700), f"{name} has {lines} lines of code"


# DESIGN.md, "Where each concept lives, once": a name that defines a concept, and the one module
# that may define it. Importing the name anywhere is fine; a second definition (a def, a class or
# a module-level assignment of that name, in agent_src, the experiments or the benchmarks) is a
# second home, which is how the two optimizers, two reward registries and two clue parsers began.
CONCEPT_HOMES = {
    "group_advantages": "mtrl_course.rl.advantages",
    "Estimator": "mtrl_course.rl.advantages",
    "ratio_weights": "mtrl_course.rl.objective",
    "AdamW": "mtrl_course.rl.optim",
    "REWARDS": "mtrl_course.rewards",
    "TRAINING_SPEC": "mtrl_course.service_spec",
    "TrainingHyperparameters": "mtrl_course.service_spec",
    "WALKTHROUGH_OVERRIDES": "mtrl_course.service_spec",
    "OFFLINE_OVERRIDES": "mtrl_course.service_spec",
    "ServiceError": "mtrl_course.errors",
    "aws_error_code": "mtrl_course.errors",
    "session_or_new": "mtrl_course.aws",
    "parse_clue": "mtrl_course.tool_answers",
    "tested_versions": "mtrl_course.lockfile",
    "Trainee": "mtrl_course.local.trainee",
    "RunnerOptions": "mtrl_course.local.job_options",
    "T_CUTOFF_95": "mtrl_course.verdicts",
}
# A few concepts have no single name: they are recognised by what the code holds.
REPO = ROOT.parent
OTHER_CODE = sorted([*(REPO / "experiments").glob("*.py"), *(REPO / "benchmarks").glob("*.py")])


def _definitions(path: Path) -> set[str]:
    """Names a file defines: every def and class at any depth, and module-level assignments."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    for node in tree.body:
        targets = (
            node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        )
        names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return names


def _string_constants(path: Path) -> set[str]:
    return {
        n.value
        for n in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(n, ast.Constant) and isinstance(n.value, str)
    }


def test_each_concept_is_defined_in_its_one_home():
    files = {**{name: path for name, path in MODULES.items()}, **{str(p.relative_to(REPO)): p for p in OTHER_CODE}}
    homes: dict[str, list[str]] = {concept: [] for concept in CONCEPT_HOMES}
    for name, path in files.items():
        for concept in _definitions(path) & set(CONCEPT_HOMES):
            homes[concept].append(name)
    assert {c: sorted(h) for c, h in homes.items() if h != [CONCEPT_HOMES[c]]} == {}


def test_only_the_lock_reader_names_the_lock_file_and_only_the_answer_parser_reads_feedback():
    lock_readers, feedback_parsers = [], []
    for name, path in [*MODULES.items(), *((str(p.relative_to(REPO)), p) for p in OTHER_CODE)]:
        strings = _string_constants(path)
        if "requirements.lock" in strings:
            lock_readers.append(name)
        # The game's feedback and solve lines are parsed with these two patterns' pieces.
        if any("all green" in s and "\\s" in s for s in strings) or any(s.startswith(r"Guess\s+") for s in strings):
            feedback_parsers.append(name)
    assert lock_readers == ["mtrl_course.lockfile"]
    assert feedback_parsers == ["mtrl_course.tool_answers"]


def test_design_md_names_every_concepts_home():
    text = (REPO / "docs" / "DESIGN.md").read_text(encoding="utf-8")
    start = text.index("Where each concept lives, once")
    table = text[start:].split("\n\n")[1]
    assert table.startswith("| concept | module |")
    for concept, home in CONCEPT_HOMES.items():
        short = home.removeprefix("mtrl_course.")
        assert f"`{short}" in table, f"DESIGN.md's concept table does not name {short} ({concept})"


def test_no_function_imports_again_a_name_its_module_imports():
    # `from mtrl_course import aws` inside a function makes `aws` local to the whole function, so a
    # use of the module's own `aws` elsewhere in it (another branch, an earlier line) raises
    # UnboundLocalError at run time; ruff's F823 sees only uses above the import. It happened once:
    # `resources.running_jobs` re-imported aws in its offline branch and failed live.
    found = []
    for name, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        top = {
            a.asname or a.name.split(".")[0]
            for n in tree.body
            if isinstance(n, (ast.Import, ast.ImportFrom))
            for a in n.names
        }
        for function in ast.walk(tree):
            if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for node in ast.walk(function):
                    if isinstance(node, (ast.Import, ast.ImportFrom)):
                        again = {a.asname or a.name.split(".")[0] for a in node.names} & top
                        found += [f"{name}.{function.name}: {n} (line {node.lineno})" for n in sorted(again)]
    assert found == []
