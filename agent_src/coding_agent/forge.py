"""Nova Forge packaging, recipe and infrastructure: what notebook 11's live cells use.

Nothing here calls AWS. `bundle()` writes the environment in the layout the Nova infra sample
expects (`custom-environments/<env-id>/` with a `pyproject.toml` and a module whose
`load_environment` returns a verifiers environment) and archives it; the notebook uploads it
only in live mode. `recipe_fragment()` renders the training-config lines that switch on
bring-your-own-orchestrator rollouts. The infrastructure rows and clean-up steps are the ones
the sources name, cited where they come from.
"""

from __future__ import annotations

import gzip
import shutil
import tarfile
from pathlib import Path

ENV_ID = "collab-coding"
MODULE = "collab_coding"
# Reward Lambdas (single-turn RFT, `reward_lambda_arn`) must finish within 15 minutes (Nova 2 User Guide).
LAMBDA_LIMIT_SECONDS = 15 * 60
# The sample recipe's rollout timeout for a whole conversation, in seconds (Nova BYOO docs).
RECIPE_ROLLOUT_TIMEOUT = 600
RECIPE_GROUP_SIZE = 16  # advantage_strategy.number_generation in the docs' recipe: K rollouts per prompt

PYPROJECT = """[build-system]
requires = ["hatchling"]
build-backend = "hatchling.build"

[project]
name = "{env_id}"
version = "0.1.0"
requires-python = ">=3.11"
# verifiers ships with the Nova Forge starter kit; list only what else the environment needs.
dependencies = []

[tool.hatch.build.targets.wheel]
packages = ["{module}", "coding_agent"]
"""

MODULE_SOURCE = '''"""Nova Forge custom environment: the course's collaborative-coding task (notebook 11)."""

from coding_agent.byoo import load_environment

__all__ = ["load_environment"]
'''

# The package files the container needs (the trainer, policy and forge helpers stay behind).
SHIPPED = ("__init__.py", "tasks.py", "sandbox.py", "jail.py", "simulator.py", "reward.py", "byoo.py")


def bundle(out_dir: Path) -> Path:
    """Write custom-environments/<env-id>/ under `out_dir` and return its .tar.gz next to it."""
    package = Path(__file__).resolve().parent
    root = Path(out_dir) / "custom-environments" / ENV_ID
    if root.exists():
        shutil.rmtree(root)
    (root / MODULE).mkdir(parents=True)
    (root / "coding_agent").mkdir()
    (root / "pyproject.toml").write_text(PYPROJECT.format(env_id=ENV_ID, module=MODULE), encoding="utf-8")
    (root / MODULE / "__init__.py").write_text(MODULE_SOURCE, encoding="utf-8")
    for name in SHIPPED:
        shutil.copyfile(package / name, root / "coding_agent" / name)
    archive = root.parent / f"{ENV_ID}.tar.gz"
    # gzip stamps the time into its header unless told otherwise; mtime=0 keeps the bytes stable.
    with gzip.GzipFile(archive, "wb", mtime=0) as packed, tarfile.open(fileobj=packed, mode="w") as tar:
        for path in sorted(root.rglob("*")):
            if path.is_file():
                info = tar.gettarinfo(str(path), arcname=str(path.relative_to(root.parent)))
                info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""  # same bytes every build
                with path.open("rb") as handle:
                    tar.addfile(info, handle)
    return archive


def recipe_fragment(rollout_timeout: int = RECIPE_ROLLOUT_TIMEOUT, group_size: int = RECIPE_GROUP_SIZE) -> str:
    """The training_config lines that delegate rollouts to your container.

    Abridged from the example BYOO recipe in the Nova 2 User Guide ("Reinforcement Learning",
    Nova Forge): `delegate: true`, `timeout: 600` and `advantage_strategy.number_generation: 16`
    are that example's values, not recommendations of the course.
    """
    if rollout_timeout <= 0 or group_size < 2:
        raise ValueError(
            f"rollout_timeout must be positive and group_size at least 2, got {rollout_timeout}, {group_size}"
        )
    return (
        "# from the example BYOO recipe in the Nova 2 User Guide (abridged)\n"
        "training_config:\n"
        "  rollout:\n"
        "    delegate: true              # BYOO: Nova Forge hands each rollout to your environment container\n"
        f"    timeout: {rollout_timeout}                # seconds for the whole conversation; a timeout fails the training\n"
        "    advantage_strategy:\n"
        f"      number_generation: {group_size}     # K rollouts per prompt: the GRPO group\n"
    )


INFRASTRUCTURE = (
    {
        "part": "SageMaker HyperPod cluster (training and generation)",
        "setting": "ml.p5.48xlarge x 10 (the infra sample's defaults; 10 is its minimum for generation_replicas 4)",
        "source": "Nova infra sample cdk.json",
    },
    {
        "part": "EKS cluster behind HyperPod",
        "setting": "endpoint access PUBLIC (its README requires it; a note in its CDK code says PUBLIC_AND_PRIVATE left HyperPod not stabilised)",
        "source": "Nova infra sample README and CDK code",
    },
    {
        "part": "ECS on Fargate reward workers (your environment container)",
        "setting": "reward_cpu 2048, reward_memory 4096",
        "source": "Nova infra sample cdk.json",
    },
    {
        "part": "Proxy Lambda, SQS FIFO queues (rollout response, generate request, generate response), DynamoDB state",
        "setting": "one SDK stack <prefix>-<run>-NovaForgeSDK per environment run in parallel",
        "source": "Nova BYOO docs, infra sample",
    },
    {
        "part": "Custom environment bundle",
        "setting": f"use_custom_env 'true', custom_env_id '{ENV_ID}'; uploaded to s3://<bucket>/custom-envs/{ENV_ID}.tar.gz",
        "source": "Nova infra sample",
    },
    {
        "part": "Training recipe",
        "setting": "rollout.delegate: true; model amazon.nova-2-lite-v1:0:256k in the docs' example",
        "source": "Nova BYOO docs",
    },
)

CLEANUP = (
    "Stop the Step Functions executions and the ECS reward workers",
    "Delete the SDK stacks <prefix>-*-NovaForgeSDK",
    "cdk destroy (the infra sample's stack: HyperPod, EKS, VPC, ECS, pipeline)",
    "If the VPC will not delete because of GuardDuty ENIs: delete the VPC endpoints, wait about 2 minutes, retry",
    "Delete the bundle from s3://<bucket>/custom-envs/ (the sample's bucket is retained by default)",
)
