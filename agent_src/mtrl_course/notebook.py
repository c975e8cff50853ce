"""What every notebook's bootstrap cell calls: `nb = notebook.setup("05")`.

`setup` makes a kernel ready for a lesson in one call and returns a small context object with
the display helpers the lessons share:

| helper | what it does |
|---|---|
| `nb.mode`, `nb.is_live` | the mode, read once by `config` (offline unless MTRL_MODE=live) |
| `nb.root`, `nb.data_dir`, `nb.figures_dir`, `nb.state_dir` | repository paths |
| `nb.show_source(obj)` | shows the real source of a course function or class, so the page never differs from the package |
| `nb.save_figure(fig, "05_reward_curve")` | writes `figures/05_reward_curve.png` deterministically and shows it once |
| `nb.table(rows)` | a short table (DataFrame, list of dicts or dict), rendered as HTML with a plain-text twin |
| `nb.live_only("what it does", fn)` | runs `fn` only in live mode; offline it says what it would have done |
| `nb.run_live(commands.AGENTCORE_DEPLOY)` | runs an external command only in live mode, with no terminal (`commands.run`); offline it prints the command |
| `nb.progress(iterable)` | a tqdm bar when a person is watching, the bare iterable in batch runs |

Batch runs (`mtrl notebooks run`, nbval) set `BATCH_ENV_VAR` so progress bars stay out of the
committed outputs. The bootstrap cell itself is `bootstrap_source(nn)`; the hygiene tests check
that every notebook starts with exactly that cell.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import dataclasses
import inspect
import logging
import os
import re
import shlex
import textwrap
import sys
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from mtrl_course import commands, config, lockfile
from mtrl_course.commands import Command

T = TypeVar("T")

# Set (to "1") by the notebook runner and the nbval plugin: nobody is watching, so no progress bars.
BATCH_ENV_VAR = config.NOTEBOOK_BATCH_ENV_VAR
# The template is executed like a lesson but is not in the catalog, and its figures stay out of
# the committed figures/ folder.
TEMPLATE_ID = "_template"
TEMPLATE_FIGURES_DIR = config.STATE_DIR / "template-figures"
# The bootstrap cell's tags: found by name, and its output (versions, Region) is not compared
# by nbval, because it differs between machines by design.
BOOTSTRAP_TAGS = ("bootstrap", "nbval-ignore-output")
# Loggers that report every request or invocation at INFO; a lesson wants their warnings only.
# bedrock_agentcore.app logs one JSON line per invocation, sagemaker-core logs JSON lines.
NOISY_LOGGERS = (
    "bedrock_agentcore",
    "bedrock_agentcore.app",
    "botocore",
    "boto3",
    "urllib3",
    "httpx",
    "httpcore",
    "openai",
    "strands",
    "opentelemetry",
    "mlflow",
    "alembic",
    "sagemaker",
    "sagemaker.core",
    "sagemaker.train",
    "uvicorn",
    "uvicorn.error",
    "uvicorn.access",
    "moto",
    "matplotlib",
    "asyncio",
)
# Warnings that are third-party housekeeping, not lessons: deprecations inside the SDKs (the
# OmegaConf resolver notice sagemaker-train prints during train()), starlette's httpx notice, and
# tqdm's "IProgress not found" (an SDK imports tqdm.auto; without ipywidgets, which the course
# does not need, tqdm falls back to text bars and says so on stderr with a site-packages path).
QUIET_WARNING_CATEGORIES = (DeprecationWarning, PendingDeprecationWarning, FutureWarning)
QUIET_WARNING_MESSAGES = (
    r".*register_new_resolver.*",
    r"Using httpx with starlette\.testclient.*",
    r"IProgress not found.*",
)
LOG_FORMAT = "%(levelname)s %(name)s: %(message)s"
# Figures: fixed size, resolution and a font matplotlib ships, so PNG bytes are identical
# on every machine with the same matplotlib.
FIGURE_DPI = 110
FIGURE_RC = {
    "figure.figsize": (7.0, 3.6),
    "figure.dpi": FIGURE_DPI,
    "savefig.dpi": FIGURE_DPI,
    "font.family": "DejaVu Sans",
    "font.size": 10,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "svg.hashsalt": "mtrl-course",
}
# matplotlib writes its version into every PNG ("Software"); dropping it keeps figure files
# unchanged across matplotlib upgrades that draw the same pixels.
PNG_METADATA = {"Software": None}
FIGURE_NAME = re.compile(r"^(?P<nn>\d\d|_template)_[a-z0-9]+(?:_[a-z0-9]+)*$")
PANDAS_OPTIONS = {
    "display.max_rows": 40,
    "display.max_columns": 20,
    "display.width": 120,
    "display.precision": 3,
}
TABLE_MAX_ROWS = 30
SOURCE_ROOT = config.REPO_ROOT / "agent_src"


@dataclass(frozen=True)
class NotebookContext:
    """What `setup` returns: the mode, paths and the shared display helpers."""

    nn: str
    mode: config.Mode
    region: str
    interactive: bool
    root: Path = config.REPO_ROOT
    data_dir: Path = config.DATA_DIR
    notebooks_dir: Path = config.NOTEBOOKS_DIR
    state_dir: Path = config.STATE_DIR
    figures_dir: Path = config.FIGURES_DIR

    @property
    def is_live(self) -> bool:
        return self.mode is config.Mode.LIVE

    def experiment(self, name: str) -> Any:
        """The experiment script `experiments/<name>.py` as a module (once per kernel), for notebooks
        that re-run one cheap configuration of a stored experiment. Loaded from its file, so no
        cell has to put `experiments/` on `sys.path`."""
        if name in sys.modules:
            return sys.modules[name]

        path = self.root / "experiments" / f"{name}.py"
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None or not path.is_file():
            raise FileNotFoundError(f"no experiment script {name!r}: {path} does not exist")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[name]
            raise
        return module

    # ------------------------------------------------------------------------------- display
    def show_source(self, obj: Any) -> None:
        """Show the source of a function, class or module from agent_src, read from the package itself.

        Only course code: third-party source does not belong in the committed outputs. A
        decorated object (a Strands `@tool`) shows the function it wraps, decorators included; a
        function defined inside another (`wordle_agent.main.handle_rollout`) is shown dedented.
        """
        obj = inspect.unwrap(obj)
        path = Path(inspect.getsourcefile(obj) or "").resolve()
        if not path.is_relative_to(SOURCE_ROOT):
            raise ValueError(
                f"show_source shows course code from agent_src/ only; {getattr(obj, '__qualname__', obj)!r} "
                f"comes from {path.name or 'an unknown file'}"
            )
        source = inspect.getsource(obj)
        if "<locals>" in getattr(obj, "__qualname__", ""):
            source = textwrap.dedent(source)  # methods keep their class's indentation
        source = source.rstrip()
        _display_markdown(f"`agent_src/{path.relative_to(SOURCE_ROOT).as_posix()}`\n\n```python\n{source}\n```")

    def save_figure(self, fig: Any, name: str) -> None:
        """Write `fig` to `figures/<name>.png` (name like "05_reward_curve"), show it once, close it.

        The notebook shows the saved file, so the page and `figures/` hold the same pixels. Returns
        None on purpose: a returned figure would be displayed a second time.
        """
        match = FIGURE_NAME.match(name)
        if not match or match["nn"] != self.nn:
            raise ValueError(
                f"figure name {name!r} must be '{self.nn}_<lower_snake_case>' (the notebook number, then a "
                "slug; no extension)"
            )
        import matplotlib.pyplot as plt

        self.figures_dir.mkdir(parents=True, exist_ok=True)
        path = self.figures_dir / f"{name}.png"
        fig.savefig(path, dpi=FIGURE_DPI, bbox_inches="tight", metadata=PNG_METADATA)
        plt.close(fig)  # otherwise the inline backend would display it again at the end of the cell
        if _in_ipython():
            from IPython.display import Image, display

            display(Image(filename=str(path)))

    def table(self, rows: Any, max_rows: int = TABLE_MAX_ROWS, digits: int = 3) -> None:
        """Show a short table: a DataFrame, a list of dicts, or a dict (shown as item/value rows).

        Floats are rounded to `digits`; tables longer than `max_rows` show their first rows and
        say how many there were (aggregate first if you need them all).
        """
        import pandas as pd

        if isinstance(rows, pd.DataFrame):
            frame = rows
        elif isinstance(rows, Mapping):
            frame = pd.DataFrame({"item": list(rows.keys()), "value": list(rows.values())})
        else:
            frame = pd.DataFrame(list(rows))
        frame = frame.round(digits)
        note = f"(first {max_rows} of {len(frame)} rows)" if len(frame) > max_rows else ""
        shown = _Table(frame.head(max_rows), note)
        if _in_ipython():
            from IPython.display import display

            display(shown)
        else:
            print(repr(shown))

    def progress(self, iterable: Iterable[T], **tqdm_kwargs: Any) -> Iterable[T]:
        return progress(iterable, **tqdm_kwargs)

    # ---------------------------------------------------------------------------------- live
    def live_only(self, description: str, fn: Callable[[], T], *, offline: Callable[[], T] | None = None) -> T | None:
        """Run `fn` in live mode; offline, say what it would do and return `offline()` (or None)."""
        if self.is_live:
            print(f"live: {description}")
            return fn()
        print(f"offline: skipped, live only: {description}")
        return offline() if offline is not None else None

    def run_live(self, command: Command | str | Sequence[str], cwd: Path | str | None = None) -> int | None:
        """Run an external step (`commands.AGENTCORE_DEPLOY`, `aws ...`) in live mode, streaming its output.

        Offline it prints the command and returns None. Live it returns 0, or raises
        CommandFailed (a RuntimeError) naming the command when it fails. A `commands.Command`
        brings its folder and success codes; a string is split like a shell would (no pipes or
        variables). Either way the program runs as `commands.run` starts it: no terminal.
        """
        if not isinstance(command, Command):
            args = tuple(shlex.split(command) if isinstance(command, str) else command)
            command = Command(args, str(Path(cwd) if cwd is not None else self.root))
        elif cwd is not None:
            command = dataclasses.replace(command, cwd=str(cwd))
        where = command.where(self.root)
        shown = command.shown()
        relative = where.resolve().relative_to(self.root) if where.resolve().is_relative_to(self.root) else where
        if not self.is_live:
            print(f"offline: would run `{shown}` in {relative.as_posix() or '.'}/")
            return None
        print(f"live: running `{shown}`")
        commands.run(command, root=self.root)
        return 0


class _Table:
    """A DataFrame shown as HTML in notebooks, with a plain-text twin that nbval compares."""

    def __init__(self, frame: Any, note: str):
        self.frame = frame
        self.note = note

    def _repr_html_(self) -> str:
        html = self.frame.to_html(index=False, border=0, na_rep="")
        return html + (f"<p><em>{self.note}</em></p>" if self.note else "")

    def __repr__(self) -> str:
        text = self.frame.to_string(index=False, na_rep="")
        return text + (f"\n{self.note}" if self.note else "")


# -------------------------------------------------------------------------------------- setup
class UnknownLesson(KeyError):
    """A notebook number with no lesson file; its str() is the message (a KeyError's is a repr)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def check_lesson_number(nn: str) -> None:
    """UnknownLesson naming the known numbers unless notebooks/ holds a lesson `nn_*.ipynb`.

    The lesson files themselves are the list, so the bootstrap needs nothing of the course
    machinery (`curriculum.catalog` checks that its table and the files agree).
    """
    known = sorted({path.name[:2] for path in config.NOTEBOOKS_DIR.glob("[0-9][0-9]_*.ipynb")})
    if nn not in known:
        raise UnknownLesson(f"no notebook {nn!r} in {config.NOTEBOOKS_DIR}; known: {', '.join(known)}")


def setup(nn: str, seed: int = config.DEFAULT_SEED) -> NotebookContext:
    """Prepare this kernel for notebook `nn` and print one line: mode, Region, key versions.

    Offline, the offline AWS backend (fake credentials, Region us-east-1, moto, loopback-only
    network) is active before anything imports the SageMaker SDK, whose trainer module needs a
    Region at import time. Live, the Region comes from your AWS configuration.
    """
    if nn != TEMPLATE_ID:
        check_lesson_number(nn)  # a typo in the bootstrap cell fails here, with the known numbers
    interactive = os.environ.get(BATCH_ENV_VAR, "") != "1"
    if not interactive:
        os.environ["TQDM_DISABLE"] = "1"  # for tqdm bars inside the toolkit and the SDKs
    _quiet_logs()
    _quiet_warnings()
    config.seed_everything(seed)
    config.tune_garbage_collector()
    _setup_pandas()
    _setup_matplotlib()
    region = _activate_backend()
    figures_dir = TEMPLATE_FIGURES_DIR if nn == TEMPLATE_ID else config.FIGURES_DIR
    context = NotebookContext(nn=nn, mode=config.MODE, region=region, interactive=interactive, figures_dir=figures_dir)
    print(status_line(context))
    elsewhere = other_checkout_note()
    if elsewhere:
        print(elsewhere)
    mismatches = version_mismatches()
    if mismatches:
        print("note: running versions differ from the tested ones (" + "; ".join(mismatches) + ")")
    return context


def bootstrap_source(nn: str) -> str:
    """The exact first code cell of notebook `nn` (the hygiene tests compare against this).

    It imports the toolkit like any installed package: `make` (and `environment.yml`, and
    notebook 00's install cell in SageMaker Studio) install this repository into the kernel's
    environment in editable mode, and the Makefile's PYTHONPATH puts this checkout's
    `agent_src` first for `make lab`, `make test` and `mtrl notebooks run`. So no cell needs to
    search for the repository or touch `sys.path`; `setup` says so when the kernel imports the
    toolkit from another checkout than the one the notebook is in.
    """
    if nn == "00":  # notebook 00 installs the toolkit in Studio itself: it cannot send you to notebook 00
        installed = "installed by `make`, or in Studio by section 0"
        missing = "Use `make lab`, or in Studio section 0 below."
    else:
        installed = "installed by `make` or notebook 00"
        missing = "Run notebook 00 (or `make lab`) first."
    return "\n".join(
        [
            f"# Bootstrap: the course toolkit ({installed}); offline unless MTRL_MODE=live.",
            f"from mtrl_course import notebook  # No module named 'mtrl_course'? {missing}",
            f'nb = notebook.setup("{nn}")',
        ]
    )


def other_checkout_note(package_dir: Path | None = None, repo_root: Path | None = None) -> str | None:
    """A note when the imported toolkit is not this checkout's (a virtualenv shared by clones).

    The editable install points at the clone that created the virtualenv; a notebook opened in
    another clone without the Makefile's PYTHONPATH would run that clone's code on this clone's
    files. None when the toolkit comes from this checkout.
    """
    package = (package_dir or Path(__file__).parent).resolve()
    root = (repo_root or config.REPO_ROOT).resolve()
    if root in package.parents:
        return None
    return (
        f"note: this kernel imports the course toolkit from {package.parent}, not from this checkout's "
        f"{root / 'agent_src'}: start Jupyter here with `make lab`, or set PYTHONPATH={root / 'agent_src'} "
        "before starting it"
    )


def status_line(context: NotebookContext) -> str:
    versions = " · ".join(f"{name} {version}" for name, version in installed_versions().items())
    python = f"Python {sys.version_info.major}.{sys.version_info.minor}"
    return f"mode: {context.mode.value} · region: {context.region} · {python} · {versions}"


def installed_versions() -> dict[str, str]:
    found = {}
    for name in lockfile.KEY_PACKAGES:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            found[name] = "missing"
    return found


def version_mismatches() -> list[str]:
    """Key packages whose installed version differs from requirements.lock (a warning, not an error)."""
    tested = lockfile.key_versions()
    return [
        f"{name} {version}, tested {tested[name]}"
        for name, version in installed_versions().items()
        if name in tested and version != tested[name]
    ]


def progress(iterable: Iterable[T], **tqdm_kwargs: Any) -> Iterable[T]:
    """`tqdm` over `iterable` when a person is watching; the iterable itself in batch runs."""
    if os.environ.get(BATCH_ENV_VAR, "") == "1":
        return iterable
    from tqdm.auto import tqdm

    return tqdm(iterable, **tqdm_kwargs)


# ---------------------------------------------------------------------------------- internals
def _in_ipython() -> bool:
    ipython = sys.modules.get("IPython")
    return bool(ipython and ipython.get_ipython() is not None)


def _display_markdown(text: str) -> None:
    if _in_ipython():
        from IPython.display import Markdown, display

        display(Markdown(text))
    else:
        print(text)


# Loggers whose WARNINGs are housekeeping, not lessons: sagemaker-core warns "No region provided.
# Using default region." whenever the evaluator or attach() builds a client without one.
HOUSEKEEPING_WARNING_LOGGERS = ("sagemaker.core.utils.utils",)


def _quiet_logs() -> None:
    for name in NOISY_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)
    for name in HOUSEKEEPING_WARNING_LOGGERS:
        logging.getLogger(name).setLevel(logging.ERROR)
    # mlflow resets its own logger to INFO when it is imported (after this runs), unless this
    # variable says otherwise; without it a fresh store prints "Creating initial MLflow database
    # tables" into the page.
    os.environ.setdefault("MLFLOW_LOGGING_LEVEL", "WARNING")
    # BedrockAgentCoreApp() attaches an INFO handler to its logger unless one is already there,
    # which would print a JSON line per invocation after we quieted it: give it one first.
    app_logger = logging.getLogger("bedrock_agentcore.app")
    if not app_logger.handlers:
        app_logger.addHandler(logging.NullHandler())
    root = logging.getLogger()
    # A root handler of our own turns later `logging.basicConfig(level=INFO)` calls inside SDK
    # modules (sagemaker-core has one at import time) into no-ops, and its WARNING level keeps
    # INFO chatter out of the page even if a library lowers the root level.
    if not any(getattr(h, "_mtrl_course", False) for h in root.handlers):
        handler = logging.StreamHandler()
        handler.setLevel(logging.WARNING)
        handler.setFormatter(logging.Formatter(LOG_FORMAT))
        handler._mtrl_course = True  # type: ignore[attr-defined]
        root.addHandler(handler)
    root.setLevel(logging.WARNING)


def _quiet_warnings() -> None:
    for category in QUIET_WARNING_CATEGORIES:
        warnings.filterwarnings("ignore", category=category)
    for message in QUIET_WARNING_MESSAGES:
        warnings.filterwarnings("ignore", message=message)


def _setup_pandas() -> None:
    import pandas as pd

    for option, value in PANDAS_OPTIONS.items():
        pd.set_option(option, value)


def _setup_matplotlib() -> None:
    import matplotlib

    if _in_ipython():
        from IPython import get_ipython

        # The Makefile exports MPLBACKEND=Agg for scripts; in a kernel we want figures inline.
        get_ipython().run_line_magic("matplotlib", "inline")
        from matplotlib_inline.backend_inline import set_matplotlib_formats

        set_matplotlib_formats("png", metadata=PNG_METADATA)
    else:
        matplotlib.use("Agg")
    # After the backend: activating the inline backend applies its own rc settings.
    matplotlib.rcParams.update(FIGURE_RC)  # type: ignore[arg-type]  # rcParams' keys are typed as literals


def _activate_backend() -> str:
    if config.is_live():
        import boto3

        # Credentials are checked by 00's preflight and by the first call that needs them;
        # here we only report where the course will work.
        return boto3.Session().region_name or f"not set ({config.REGION_ADVICE})"
    from mtrl_course import aws

    aws.offline_backend()
    return config.OFFLINE_REGION
