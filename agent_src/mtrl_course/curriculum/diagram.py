"""The system figure of notebook 00, drawn by code: two services and one rollout between them.

Left, the SageMaker AI multi-turn RL service: the training job, the policy model (base model plus
LoRA adapter), the Job Runtime endpoint the agent samples from, the dataset and the MLflow app.
Right, the AgentCore runtime with the one agent module: entrypoint, Strands agent, `guess_word`
tool, game and reward. Numbered arrows follow one rollout (ARCHITECTURE.md §5); each box says in
gray what stands in for it offline.

Everything is placed in fixed data coordinates, so the same matplotlib draws the same pixels.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

TITLE = "One rollout: AgentCore plays and scores the game, SageMaker AI samples and trains the policy"
FIGURE_SIZE = (11.0, 6.6)
WIDTH, HEIGHT = 110.0, 65.0

SAGEMAKER_COLOR, SAGEMAKER_EDGE = "#e8f1fb", "#2f6db3"
AGENTCORE_COLOR, AGENTCORE_EDGE = "#fdf0e2", "#c46a12"
AGENT_MODULE_COLOR = "#fff8ef"
BOX_COLOR, BOX_EDGE = "white", "#555555"
ARROW_COLOR = "#333333"
STEP_COLOR = "#b3261e"
OFFLINE_COLOR = "#6b6b6b"
TITLE_SIZE, PANEL_SIZE, BOX_TITLE_SIZE, BOX_TEXT_SIZE, LEGEND_SIZE = 11.5, 9.5, 8.5, 7.5, 7.5
STEP_RADIUS = 1.45


@dataclass(frozen=True)
class Box:
    """A component: where it is, what it does, what stands in for it offline."""

    key: str
    x: float
    y: float
    w: float
    h: float
    title: str
    text: str
    offline: str

    def anchor(self, side: str, fraction: float = 0.5) -> tuple[float, float]:
        """A point on one side ("left", "right", "top", "bottom"), `fraction` along it."""
        if side == "left":
            return self.x, self.y + self.h * fraction
        if side == "right":
            return self.x + self.w, self.y + self.h * fraction
        if side == "top":
            return self.x + self.w * fraction, self.y + self.h
        if side == "bottom":
            return self.x + self.w * fraction, self.y
        raise ValueError(f"side must be left, right, top or bottom, got {side!r}")


BOXES: tuple[Box, ...] = (
    Box("mlflow", 4, 49, 20, 9, "MLflow app", "metrics of every step", "offline: sqlite file"),
    Box("dataset", 4, 35, 20, 10, "Dataset (S3)", "one task per row:\nprompt, secret word, id", "offline: moto S3"),
    Box(
        "policy", 4, 20, 20, 11, "Policy model", "base model (gpt-oss-20b)\n+ LoRA adapter", "offline: stand-in policy"
    ),
    Box(
        "job",
        29,
        45,
        23,
        14,
        "Training job (GRPO)",
        "runs a group of rollouts\nper row, scores them,\nupdates the adapter",
        "offline: local MTRL service",
    ),
    Box(
        "runtime",
        29,
        20,
        23,
        15,
        "Job Runtime",
        "OpenAI-compatible endpoint;\nbearer token, job and\ntrajectory headers",
        "offline: loopback emulator",
    ),
    Box(
        "handler",
        63,
        46,
        42,
        10,
        "Entrypoint: @app.entrypoint over @sagemaker_rft_handler",
        'parses the task, runs the agent, returns {"reward": ...}',
        "offline: same app on 127.0.0.1",
    ),
    Box("agent", 63, 32, 18, 10, "Strands agent", "system prompt;\nup to 6 guesses", "offline: unchanged"),
    Box("tool", 87, 32, 18, 10, "guess_word tool", "one guess per call", "offline: unchanged"),
    Box(
        "game",
        63,
        20,
        42,
        8,
        "WordleGame and reward",
        "feedback and clues; shaping; final_reward()",
        "offline: unchanged",
    ),
)
BY_KEY = {box.key: box for box in BOXES}

# (number, from box, side, fraction, to box, side, fraction, two-way): one rollout, in order.
ARROWS: tuple[tuple[int, str, str, float, str, str, float, bool], ...] = (
    (1, "dataset", "right", 0.5, "job", "left", 0.2, False),
    (2, "job", "right", 0.55, "handler", "left", 0.6, False),
    (3, "handler", "bottom", 0.2, "agent", "top", 0.5, False),
    (4, "agent", "left", 0.5, "runtime", "right", 0.8, True),
    (5, "runtime", "left", 0.45, "policy", "right", 0.45, True),
    (6, "agent", "right", 0.5, "tool", "left", 0.5, False),
    (7, "handler", "left", 0.15, "runtime", "right", 0.97, False),
    (8, "job", "bottom", 0.1, "policy", "top", 0.9, False),
    (9, "job", "left", 0.8, "mlflow", "right", 0.65, False),
)
# The tool's answer comes from the game; drawn without a number (part of step 6).
TOOL_TO_GAME = ("tool", "bottom", 0.5, "game", "top", 0.79)

ROLLOUT_STEPS: tuple[str, ...] = (
    "the service picks a dataset row (a small JSON task string)",
    "it invokes the agent once per rollout: POST /invocations with prompt and metadata",
    "the handler parses the task and creates the game and the guess_word tool",
    "the Strands agent asks the Job Runtime for every model turn",
    "the policy (base model + LoRA adapter) samples the turn",
    "tool calls play the game; each answer is feedback plus what is known so far",
    "at the end the handler reports one reward (CompleteRollout, UpdateReward)",
    "per group of rollouts: advantages from the spread of rewards, then a LoRA update",
    "reward, token and turn statistics go to MLflow",
)
OFFLINE_NOTE = (
    "Offline (the default), the same agent code runs against stand-ins, named in gray in each box;\n"
    "IAM, STS and S3 come from moto. The stand-in policy is not gpt-oss: its numbers are its own."
)


def _panel(ax: Any, x: float, y: float, w: float, h: float, face: str, edge: str, label: str) -> None:
    from matplotlib.patches import FancyBboxPatch

    ax.add_patch(
        FancyBboxPatch(
            (x, y), w, h, boxstyle="round,pad=0.4,rounding_size=1.5", facecolor=face, edgecolor=edge, linewidth=1.4
        )
    )
    ax.text(x + 1.2, y + h - 1.4, label, fontsize=PANEL_SIZE, fontweight="bold", color=edge, va="top", ha="left")


def _box(ax: Any, box: Box) -> None:
    from matplotlib.patches import FancyBboxPatch

    ax.add_patch(
        FancyBboxPatch(
            (box.x, box.y),
            box.w,
            box.h,
            boxstyle="round,pad=0.2,rounding_size=0.8",
            facecolor=BOX_COLOR,
            edgecolor=BOX_EDGE,
            linewidth=1.0,
        )
    )
    cx = box.x + box.w / 2
    ax.text(cx, box.y + box.h - 1.0, box.title, fontsize=BOX_TITLE_SIZE, fontweight="bold", ha="center", va="top")
    ax.text(cx, box.y + box.h / 2 - 0.6, box.text, fontsize=BOX_TEXT_SIZE, ha="center", va="center", linespacing=1.15)
    ax.text(
        cx,
        box.y + 0.7,
        box.offline,
        fontsize=BOX_TEXT_SIZE - 0.5,
        ha="center",
        va="bottom",
        color=OFFLINE_COLOR,
        style="italic",
    )


def _arrow(ax: Any, start: tuple[float, float], end: tuple[float, float], two_way: bool) -> None:
    from matplotlib.patches import FancyArrowPatch

    ax.add_patch(
        FancyArrowPatch(
            start,
            end,
            arrowstyle="<|-|>" if two_way else "-|>",
            mutation_scale=11,
            color=ARROW_COLOR,
            linewidth=1.2,
            shrinkA=1.5,
            shrinkB=1.5,
        )
    )


def _step_marker(ax: Any, number: int, x: float, y: float) -> None:
    from matplotlib.patches import Circle

    ax.add_patch(Circle((x, y), STEP_RADIUS, facecolor=STEP_COLOR, edgecolor="white", linewidth=0.8, zorder=5))
    ax.text(
        x, y, str(number), fontsize=BOX_TEXT_SIZE, color="white", fontweight="bold", ha="center", va="center", zorder=6
    )


def draw_architecture() -> Any:
    """The architecture figure (a matplotlib Figure); save it with `nb.save_figure`."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=FIGURE_SIZE)
    ax.set_xlim(0, WIDTH)
    ax.set_ylim(0, HEIGHT)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(TITLE, fontsize=TITLE_SIZE, fontweight="bold", loc="left", pad=4)

    _panel(ax, 2, 17.5, 52, 46, SAGEMAKER_COLOR, SAGEMAKER_EDGE, "Amazon SageMaker AI: multi-turn RL service")
    _panel(ax, 59, 17.5, 49, 46, AGENTCORE_COLOR, AGENTCORE_EDGE, "Amazon Bedrock AgentCore runtime")
    from matplotlib.patches import FancyBboxPatch

    ax.add_patch(
        FancyBboxPatch(
            (61, 18.6),
            46,
            40.2,
            boxstyle="round,pad=0.2,rounding_size=1.0",
            facecolor=AGENT_MODULE_COLOR,
            edgecolor=AGENTCORE_EDGE,
            linewidth=0.8,
            linestyle="--",
        )
    )
    ax.text(
        62,
        58.1,
        "one Python module: wordle_agent (environment, tool, reward)",
        fontsize=BOX_TEXT_SIZE,
        color=AGENTCORE_EDGE,
        va="top",
        ha="left",
        style="italic",
    )
    for box in BOXES:
        _box(ax, box)

    for number, src, src_side, src_at, dst, dst_side, dst_at, two_way in ARROWS:
        start = BY_KEY[src].anchor(src_side, src_at)
        end = BY_KEY[dst].anchor(dst_side, dst_at)
        _arrow(ax, start, end, two_way)
        _step_marker(ax, number, (start[0] + end[0]) / 2, (start[1] + end[1]) / 2)
    src, src_side, src_at, dst, dst_side, dst_at = TOOL_TO_GAME
    _arrow(ax, BY_KEY[src].anchor(src_side, src_at), BY_KEY[dst].anchor(dst_side, dst_at), False)

    half = (len(ROLLOUT_STEPS) + 1) // 2
    for index, text in enumerate(ROLLOUT_STEPS):
        column, row = divmod(index, half)
        x, y = 3 + column * 54, 14.2 - row * 2.6
        _step_marker(ax, index + 1, x, y)
        ax.text(x + 2.0, y, text, fontsize=LEGEND_SIZE, va="center", ha="left")
    ax.text(
        57,
        14.2 - (len(ROLLOUT_STEPS) - half) * 2.6 - 0.4,
        OFFLINE_NOTE,
        fontsize=LEGEND_SIZE - 0.5,
        color=OFFLINE_COLOR,
        style="italic",
        va="top",
        ha="left",
        linespacing=1.2,
    )
    fig.subplots_adjust(left=0.01, right=0.99, top=0.95, bottom=0.01)
    return fig
