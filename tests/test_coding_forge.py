"""The Nova Forge side: the bundle's layout, the rollout report of a real conversation, the recipe."""

from __future__ import annotations

import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from coding_agent import byoo, forge, reward, tasks

pytestmark = pytest.mark.floats

TASK = tasks.all_tasks()[0]


def test_the_bundle_has_the_layout_the_container_installs(tmp_path: Path) -> None:
    archive = forge.bundle(tmp_path)
    with tarfile.open(archive) as tar:
        names = tar.getnames()
    assert f"{forge.ENV_ID}/pyproject.toml" in names and f"{forge.ENV_ID}/{forge.MODULE}/__init__.py" in names
    assert all(f"{forge.ENV_ID}/coding_agent/{n}" in names for n in forge.SHIPPED)
    assert archive.read_bytes() == forge.bundle(tmp_path).read_bytes()  # reproducible bytes


def test_the_bundled_package_imports_on_its_own(tmp_path: Path) -> None:
    # The container installs only the shipped files: a module the shipped ones import but the
    # bundle leaves out (sandbox.py's jail, once) fails there at the first rollout, not here.
    archive = forge.bundle(tmp_path / "out")
    with tarfile.open(archive) as tar:
        tar.extractall(tmp_path / "unpacked", filter="data")
    root = tmp_path / "unpacked" / forge.ENV_ID
    code = f"import sys; sys.path.insert(0, {str(root)!r}); import coding_agent.byoo, {forge.MODULE}"
    done = subprocess.run([sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-1000:]


def test_a_model_conversation_is_scored_like_the_stand_in() -> None:
    asked = [TASK.hidden_details[0].question, f"Here it is:\n```python\n{TASK.reference}```"]
    report = byoo.score_conversation(TASK, asked, 5, "sample-7")
    listed = {m["name"]: m["value"] for m in report["metrics_list"]}
    assert report["id"] == "sample-7" and listed["correctness"] == 1.0 and listed["asked_before_coding"] == 1.0
    assert report["aggregate_reward_score"] == pytest.approx(1.0 + 0.6)
    guessed = byoo.score_conversation(TASK, [f"```python\n{TASK.code_knowing(set())}```"], 5, "s")
    assert {m["name"]: m["value"] for m in guessed["metrics_list"]}["guessed_immediately"] == reward.GUESS_PENALTY


def test_prose_without_a_code_block_is_a_question() -> None:
    assert byoo.split_turn("What currency?").kind == "question"
    assert byoo.split_turn("```python\ndef f(): pass\n```").text == "def f(): pass\n"


def test_the_recipe_delegates_rollouts_and_checks_its_inputs() -> None:
    text = forge.recipe_fragment()
    assert "delegate: true" in text and f"number_generation: {forge.RECIPE_GROUP_SIZE}" in text
    assert forge.LAMBDA_LIMIT_SECONDS == 900
    with pytest.raises(ValueError, match="group_size"):
        forge.recipe_fragment(group_size=1)
