"""The perturbation switch reaches every float path, and every test that compares floats runs under it.

docs/DESIGN.md, "Comparing numbers across machines": BLAS products and numpy's vectorised `exp`
and `log` round differently on another CPU, so the course's float paths take them from
`mtrl_course.numerics`, whose test-only switch (`MTRL_PERTURB_ARITHMETIC=1`) perturbs them the
way another CPU's kernels would. Two rules keep that true as code is added:

1. The float-path modules below write no `@` product, `np.exp`, `np.log`, `np.dot` or
   `np.linalg.norm` of their own (docstrings and comments aside).
2. A test module that compares numbers within a tolerance carries the `floats` mark, so
   tests/test_perturbed_arithmetic.py runs it again under the switch; or it is listed in
   `MACHINE_INDEPENDENT` with the reason its numbers cannot depend on the CPU.
"""

from __future__ import annotations

import ast
import io
import os
import re
import subprocess
import sys
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "agent_src"

# Every module whose floats feed a committed output or a test's comparison.
FLOAT_PATHS = [
    "mtrl_course/learner/model.py",
    "mtrl_course/learner/lora.py",
    "mtrl_course/rl/optim.py",
    "mtrl_course/rl/objective.py",
    "mtrl_course/rl/advantages.py",
    "mtrl_course/learner/grpo.py",
    "mtrl_course/learner/pretrain.py",
    "mtrl_course/learner/sampler.py",
    "mtrl_course/learner/play.py",
    "mtrl_course/grpo_anatomy.py",
    "mtrl_course/local/grpo.py",
    "mtrl_course/local/stand_in_policy.py",
    "mtrl_course/local/runner.py",
    "mtrl_course/local/learner_lane.py",
    "mtrl_course/local/learner_policy.py",
    "coding_agent/policy.py",
    "coding_agent/trainer.py",
    "coding_agent/instrumentation.py",
]
FORBIDDEN = re.compile(r"\bnp\.(exp|log|dot|matmul|einsum)\(|\bnp\.linalg\.norm\(|\bmath\.fsum\(")

# Test modules that use a tolerance but whose compared numbers never pass through a BLAS product
# or a vectorised exp/log, with the reason.
MACHINE_INDEPENDENT = {
    "test_costs.py": "prices times counts: element-wise arithmetic on integers and decimals",
    "test_first_run.py": "the first run's cost estimate: prices times token counts, element-wise arithmetic",
    "test_site.py": "sizes measured in a browser's layout, no numpy arithmetic",
    "test_main.py": "timings and integer counts of the CLI entry point",
    "test_cli_play_cleanup.py": "rewards of scripted games: integer tiers and element-wise arithmetic",
    "test_plots.py": "a reward band (mean and std of given numbers: sums and sqrt, the same on any CPU)",
    "test_reward.py": "the reward of fixed games: element-wise arithmetic only",
    "test_reward_designs.py": "the reward designs on fixed games: element-wise arithmetic only",
    "test_rewards.py": "the reward registry on fixed games: element-wise arithmetic only",
    "test_coding_reward.py": "the coding reward on fixed rollouts: element-wise arithmetic only",
    "test_solver.py": "the reference solver's entropies of fixed feedback tables (numpy sums and log2 of counts)",
    "test_learner_grpo_results.py": "summaries of stored numbers (sums, sqrt); its re-run is in the second tier",
    "test_learner_lessons_results.py": "statistics of stored numbers (sums, sqrt); its re-runs are in the second tier",
    "test_game.py": "the game's reward on fixed games: element-wise arithmetic only",
    "test_game_baseline_parity.py": "two implementations of the game's rules on the same games, compared exactly",
    "test_float_paths.py": "this module: it runs the switch itself, in subprocesses",
}
TOLERANCE = re.compile(r"\bapprox\(|allclose\(|isclose\(|assert_array_almost_equal|rerun_matches\(|\b1e-\d+\b")


def _code_only(path: Path) -> str:
    """The file's source without comments and docstrings (strings kept: they may be code)."""
    text = path.read_text()
    docstrings = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                docstrings.add(body[0].lineno)
    kept = []
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type == tokenize.COMMENT:
            continue
        if token.type == tokenize.STRING and token.start[0] in docstrings:
            continue
        kept.append(token)
    return tokenize.untokenize(kept)


def _has_matmul_operator(source: str) -> list[int]:
    """Lines with a `@` binary operator (decorators are not BinOps)."""
    return sorted(
        node.lineno
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.BinOp | ast.AugAssign) and isinstance(node.op, ast.MatMult)
    )


@pytest.mark.parametrize("module", FLOAT_PATHS)
def test_float_paths_take_their_machine_dependent_operations_from_numerics(module):
    path = SRC / module
    assert path.is_file(), f"{module} moved: update FLOAT_PATHS"
    source = path.read_text()
    lines = _has_matmul_operator(source)
    assert not lines, f"{module} lines {lines}: use numerics.matmul instead of `@`"
    found = FORBIDDEN.findall(_code_only(path))
    assert not found, f"{module}: {sorted(set(found))}: use numerics.exp / log / matmul / norm"


def test_the_rule_would_catch_a_stray_product(tmp_path):
    stray = tmp_path / "stray.py"
    stray.write_text('"""np.exp( in a docstring is fine."""\nimport numpy as np\n\ny = np.exp(1.0)\nz = y @ y\n')
    assert FORBIDDEN.findall(_code_only(stray)) == ["exp"]
    assert _has_matmul_operator(stray.read_text()) == [5]


def _test_modules() -> list[Path]:
    return sorted((ROOT / "tests").glob("test_*.py"))


def _is_marked_floats(source: str) -> bool:
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "pytestmark" for t in node.targets):
            return "pytest.mark.floats" in ast.unparse(node.value)
    return False


@pytest.mark.parametrize("path", _test_modules(), ids=lambda p: p.name)
def test_a_module_that_compares_floats_runs_under_the_perturbation(path):
    source = path.read_text()
    uses_tolerance = bool(TOLERANCE.search(_code_only(path)))
    marked = _is_marked_floats(source)
    if path.name in MACHINE_INDEPENDENT:
        assert not marked, f"{path.name} is marked floats and listed as machine-independent: choose one"
        assert uses_tolerance, f"{path.name} no longer uses a tolerance: remove it from MACHINE_INDEPENDENT"
        return
    if uses_tolerance:
        assert marked, (
            f"{path.name} compares numbers within a tolerance: add `pytestmark = pytest.mark.floats` "
            "(docs/DESIGN.md, 'Comparing numbers across machines'), or list it in MACHINE_INDEPENDENT with the reason"
        )


def test_the_switch_changes_the_last_bits_of_every_operation_and_nothing_else() -> None:
    probe = (
        "import numpy as np; from mtrl_course import numerics as nx; rng = np.random.default_rng(0); "
        "m = rng.standard_normal((40, 300)).astype(np.float32); w = rng.standard_normal((300, 7)).astype(np.float32); "
        "v = rng.standard_normal(300); x = rng.standard_normal(1000); "
        "pairs = [(nx.matmul(m, w), m @ w), (nx.matvec(m.astype(float), v), m.astype(float) @ v), "
        "(nx.exp(x), np.exp(x)), (nx.log(np.abs(x)), np.log(np.abs(x))), "
        "(nx.exp(x.astype(np.float32)), np.exp(x.astype(np.float32))), "
        "(np.array([nx.norm(v)]), np.array([np.linalg.norm(v)]))]; "
        "print(nx.PERTURBED, ' '.join(f'{int((a != b).sum())}:{float(np.abs(a - b).max() / np.abs(b).max()):.3g}:{a.dtype == b.dtype}' "
        "for a, b in pairs), nx.exp(np.array([0.0, -np.inf]))[1], nx.exp(np.float32(0.0)).dtype)"
    )
    for value, perturbed in (("1", True), ("", False)):
        env = {**os.environ, "MTRL_PERTURB_ARITHMETIC": value}
        out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
        flag, *pairs, zero, dtype = out.stdout.split()
        assert flag == str(perturbed) and zero == "0.0" and dtype == "float32"  # exp(-inf) stays 0; dtypes kept
        for pair in pairs:
            changed, worst, same_dtype = pair.split(":")
            assert same_dtype == "True"
            assert (int(changed) > 0) == perturbed, pair
            assert float(worst) < 1e-6, pair  # the last bits only, relative to the result's scale
