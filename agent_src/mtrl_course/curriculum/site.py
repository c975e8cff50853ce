"""The course as a static website (`make site`): the committed notebooks, README and docs, rendered.

`prepare()` writes a MkDocs project into `build/site-src/` (git-ignored): the README as the home
page, every catalog notebook whose file exists, an overview page generated from the catalog that
also lists the notebooks still in preparation (named, not linked), and the pages of `docs/`.
`build()` renders it with mkdocs-material and mkdocs-jupyter into `build/site/`.

Why the copies are rewritten instead of pointing MkDocs at the repository:
- links between notebooks (`05_launch_training.ipynb`, `../README.md`) are written for GitHub and
  JupyterLab; mkdocs-jupyter renders notebook markdown itself, so MkDocs never fixes those links,
  and a link to a notebook that is still in preparation would be a dead link on the site;
- links from the README or docs to repository files that are not pages (`LICENSE`, source files)
  would be dead too: they become plain code text naming the path.

The site is built for offline reading: theme fonts off (no Google Fonts request), no RequireJS,
and MathJax replaced by an empty data: script (the notebooks contain no math, and their dollar
amounts must not be typeset as formulas). `tests/test_site.py` proves no request leaves the
machine in a real browser.

It also reads well opened straight from disk (`build/site/index.html`, file://), which is how the
README opens it: `finish()` inlines the search index into `search/search_index.js` (the theme
reads that file on file://, where a page may not fetch JSON) and `site_assets/file_worker.js`
runs the search worker in a hidden iframe (a browser refuses a Worker to a file:// page); the
404 page's root-absolute links become relative. `site_assets/course.css` and `course.js` make
tables and outputs fit the column (wrapping at spaces, never mid-word), put a visible cue above
anything that still scrolls sideways, and enlarge a figure drawn narrower than its size on click.

Notebook pages are laid out for code and figures (issue 39). At 1400 px the theme's column held
about 80 characters of code (158 of 209 code cells scrolled) and showed the widest figures at 45%
of their size. Rewriting every notebook to 80 characters would have changed every cell the tests
compare, so the page gives code the width instead: the page's sections move into the left
navigation (the theme's `toc.integrate`, on every page, so the navigation does not jump between
pages) and a notebook page takes the window's whole width (about 140 characters of code at 1400
px). Lines longer than that still scroll, with the cue; on a phone nearly every cell does.
Figures are never shown below `FIGURE_MIN_SCALE` of their size where the sidebar layout applies
(course.js: a figure wider than that scrolls, with the cue), and open at full size on a tap on a
phone. Cell tags that only drive the tests (`nbval-skip`, `numbers-within:...`, `stored-rerun`,
...) are removed from the pages' copies: only `LEARNER_TAGS` are shown.
"""

from __future__ import annotations

import argparse
import json
import posixpath
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from mtrl_course import config
from mtrl_course.curriculum import catalog

SRC_DIR = config.REPO_ROOT / "build" / "site-src"
SITE_DIR = config.REPO_ROOT / "build" / "site"
DOCS_DIR = config.REPO_ROOT / "docs"
SITE_NAME = "Multi-turn RL for agents on Amazon SageMaker AI"
OVERVIEW_PAGE = "notebooks/index.md"
# The design notes go first: they explain the layers the other pages refer to.
DOC_TITLES = {
    "DESIGN.md": "Design notes",
    "REWARD.md": "The reward on one page",
    "INSTRUCTOR_GUIDE.md": "Instructor guide",
    "CONTRIBUTING.md": "Contributing: tests and maintenance",
}
# An empty script instead of MathJax from a CDN (see the module docstring).
NO_MATHJAX = "data:text/javascript,"
MARKDOWN_LINK = re.compile(r"(!?)\[([^\]\n]*)\]\(([^)\s]+)\)")
# The site's own stylesheet and scripts (package data), copied to assets/course/ on the site.
ASSETS_DIR = Path(__file__).resolve().parent / "site_assets"
ASSETS_URL = "assets/course"
# The cell tags a page shows, because they tell a reader something: a live-only cell does nothing
# offline. Every other tag drives the tests or the course's tooling (nbval-ignore-output,
# nbval-skip, numbers-within:..., stored-rerun, stderr-ok; banner, bootstrap, next) and is removed
# from the site's copy of the notebook, so the theme draws no tag bar for it.
LEARNER_TAGS = frozenset({"live-only"})
# Figures are drawn at notebook.FIGURE_DPI (110) with type no smaller than 7 pt (legends and
# footnotes; tests/test_site.py checks the plotting code), so the smallest text is 7 x 110 / 72 =
# 10.7 px at full size. Shown at 0.85 of its size or more it is 9.1 px or more; the site never
# shows a figure smaller than that where the layout has its sidebars (course.js reads the value).
FIGURE_SMALLEST_TYPE_PT = 7
FIGURE_MIN_SCALE = 0.85


# ------------------------------------------------------------------------------ link rewriting
def _is_external(target: str) -> bool:
    return bool(re.match(r"^[a-z][a-z0-9+.-]*:", target)) or target.startswith(("#", "//"))


def site_target(repo_path: str) -> str | None:
    """Where a repository path lives on the site (a path in the docs folder), or None if nowhere.

    `repo_path` is relative to the repository root, normalised ("notebooks/05_x.ipynb").
    """
    if repo_path == "README.md":
        return "index.md"
    if repo_path.startswith("docs/") and repo_path.endswith(".md") and (config.REPO_ROOT / repo_path).is_file():
        return repo_path
    if repo_path.startswith("notebooks/") and repo_path.endswith(".ipynb"):
        name = repo_path.removeprefix("notebooks/")
        if any(entry.filename == name and entry.path.is_file() for entry in catalog.NOTEBOOKS):
            return repo_path
    return None


def rewrite_links(text: str, repo_dir: str, page: str, *, html_targets: bool) -> str:
    """Rewrite markdown links in `text`, written in repository folder `repo_dir`, for site page `page`.

    Links to pages of the site stay links (to the `.html` file when `html_targets`, as notebook
    markdown is not processed by MkDocs); links to anything else in the repository become code
    text naming the path; external links and anchors are left alone.
    """

    def replace(match: re.Match[str]) -> str:
        bang, label, target = match.groups()
        if bang or _is_external(target):
            return match.group(0)
        path, _, anchor = target.partition("#")
        repo_path = posixpath.normpath(posixpath.join(repo_dir, path)) if repo_dir else posixpath.normpath(path)
        where = site_target(repo_path)
        if where is None:
            if label.startswith("`") or repo_path.startswith(".."):
                return label
            return f"{label} (`{repo_path}`)" if label.strip("`") != repo_path else f"`{repo_path}`"
        if html_targets:
            where = re.sub(r"\.(md|ipynb)$", ".html", where)
        relative = posixpath.relpath(where, posixpath.dirname(page) or ".")
        return f"[{label}]({relative}{'#' + anchor if anchor else ''})"

    return MARKDOWN_LINK.sub(replace, text)


# --------------------------------------------------------------------------------- the project
def overview_markdown() -> str:
    """The notebooks page: every catalog entry; those whose file is missing are named, not linked."""
    lines = [
        "# The notebooks",
        "",
        "Every notebook runs offline by default; its banner says what live mode costs and creates.",
        "",
        "| # | notebook | what you do | offline |",
        "|---|---|---|---|",
    ]
    for entry in catalog.NOTEBOOKS:
        title = f"[{entry.title}]({entry.filename})" if entry.path.is_file() else f"{entry.title} (in preparation)"
        lines.append(
            f"| {entry.nn} | {title} | {entry.summary} | {catalog.format_offline_time(entry.offline_seconds)} |"
        )
    return "\n".join(lines) + "\n"


def nav() -> list[Any]:
    """The site's navigation, from the catalog: only notebooks whose file exists get an entry."""
    notebooks: list[Any] = [{"Overview": OVERVIEW_PAGE}]
    notebooks += [{entry.label: f"notebooks/{entry.filename}"} for entry in catalog.NOTEBOOKS if entry.path.is_file()]
    docs = [{title: f"docs/{name}"} for name, title in DOC_TITLES.items() if (DOCS_DIR / name).is_file()]
    return [{"Home": "index.md"}, {"Notebooks": notebooks}, {"About the course": docs}]


def mkdocs_config(src_dir: Path, site_dir: Path) -> dict[str, Any]:
    return {
        "site_name": SITE_NAME,
        "docs_dir": str(src_dir / "docs"),
        "site_dir": str(site_dir),
        # Plain .html files: the site also works from a file:// folder and any static server.
        "use_directory_urls": False,
        "theme": {
            "name": "material",
            "font": False,
            "features": ["navigation.sections", "navigation.footer", "toc.integrate"],
        },
        "markdown_extensions": ["tables", "admonition", {"toc": {"permalink": False}}],
        "plugins": [
            "search",
            {
                "mkdocs-jupyter": {
                    "include": ["*.ipynb"],
                    "execute": False,
                    "include_requirejs": False,
                    "include_source": False,
                    "custom_mathjax_url": NO_MATHJAX,
                    "cache": False,
                }
            },
        ],
        "extra_css": [f"{ASSETS_URL}/course.css"],
        "extra_javascript": [f"{ASSETS_URL}/course.js"],
        # Loaded in <head>, before the theme's bundle creates the search worker.
        "extra": {"polyfills": [f"{ASSETS_URL}/file_worker.js"]},
        "validation": {"links": {"not_found": "warn", "absolute_links": "warn", "unrecognized_links": "warn"}},
        "nav": nav(),
    }


def learner_tags(tags: list[str]) -> list[str]:
    """The tags of a cell that its page shows (see LEARNER_TAGS), in their order."""
    return [tag for tag in tags if tag in LEARNER_TAGS]


def _notebook_copy(path: Path) -> dict[str, Any]:
    nb = json.loads(path.read_text(encoding="utf-8"))
    page = f"notebooks/{path.name}"
    for cell in nb["cells"]:
        metadata = cell.get("metadata", {})
        if "tags" in metadata:
            shown = learner_tags(metadata["tags"])
            if shown:
                metadata["tags"] = shown
            else:
                del metadata["tags"]
        if cell["cell_type"] == "markdown":
            source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            cell["source"] = rewrite_links(source, "notebooks", page, html_targets=True)
    return dict(nb)


def prepare(src_dir: Path = SRC_DIR, site_dir: Path = SITE_DIR) -> Path:
    """Write the MkDocs project for the site into `src_dir`; returns its mkdocs.yml."""
    import yaml

    malformed = catalog.problems()
    if malformed:
        raise ValueError("the notebook catalog has problems:\n  " + "\n  ".join(malformed))
    shutil.rmtree(src_dir, ignore_errors=True)
    docs = src_dir / "docs"
    (docs / "notebooks").mkdir(parents=True)
    (docs / "docs").mkdir()
    readme = catalog.README_FILE.read_text(encoding="utf-8")
    (docs / "index.md").write_text(rewrite_links(readme, "", "index.md", html_targets=False), encoding="utf-8")
    (docs / OVERVIEW_PAGE).write_text(overview_markdown(), encoding="utf-8")
    for entry in catalog.NOTEBOOKS:
        if entry.path.is_file():
            copy = _notebook_copy(entry.path)
            (docs / "notebooks" / entry.filename).write_text(
                json.dumps(copy, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
            )
    for name in DOC_TITLES:
        if (DOCS_DIR / name).is_file():
            text = (DOCS_DIR / name).read_text(encoding="utf-8")
            (docs / "docs" / name).write_text(
                rewrite_links(text, "docs", f"docs/{name}", html_targets=False), encoding="utf-8"
            )
    shutil.copytree(ASSETS_DIR, docs / ASSETS_URL)
    config_file = src_dir / "mkdocs.yml"
    config_file.write_text(yaml.safe_dump(mkdocs_config(src_dir, site_dir), sort_keys=False), encoding="utf-8")
    return config_file


def build(src_dir: Path = SRC_DIR, site_dir: Path = SITE_DIR) -> Path:
    """Prepare and render the site into `site_dir` (strict: any MkDocs warning fails); returns it."""
    import importlib.util

    missing = [name for name in ("mkdocs", "material", "mkdocs_jupyter") if importlib.util.find_spec(name) is None]
    if missing:
        raise RuntimeError(
            f"{', '.join(missing)} not installed in {sys.prefix}: run `make venv` (the lock pins them) "
            "or pip install mkdocs mkdocs-material mkdocs-jupyter"
        )
    config_file = prepare(src_dir, site_dir)
    shutil.rmtree(site_dir, ignore_errors=True)
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--config-file", str(config_file)]
    ran = subprocess.run(command, capture_output=True, text=True, cwd=src_dir)
    if ran.returncode != 0:
        raise RuntimeError(f"mkdocs build failed (exit {ran.returncode}):\n{ran.stdout}{ran.stderr}")
    finish(site_dir)
    return site_dir


# ------------------------------------------------------------------------------ after the build
TABLE = re.compile(r"<table\b.*?</table>", re.DOTALL)
TEXT_NODE = re.compile(r">([^<>]+)<")
# A run of 12 or more characters without a space: an ARN, an S3 URI, a metric or column name.
LONG_TOKEN = re.compile(r"[^\s<>]{12,}")
# Where a long identifier may wrap: after these characters (never inside an HTML entity).
BREAK_AFTER = re.compile(r"([/:_.=,])(?=[^\s])")
NUMBER_CELL = re.compile(r"<td>(\s*[-+\u2212]?\$?(?:\d[\d,]*)?(?:\.\d+)?(?:e[-+]?\d+)?\s*%?\s*)</td>")
ROOT_ABSOLUTE = re.compile(r'((?:href|src)=")/(?!/)')


def _wrappable(token: re.Match[str]) -> str:
    return BREAK_AFTER.sub(r"\1<wbr>", token.group(0))


def fit_tables(html: str) -> str:
    """Let long identifiers in table cells wrap (<wbr> after / : _ . = ,) and mark number cells.

    Without break points a cell holding an ARN is as wide as the ARN, and the table overflows its
    column; `<wbr>` adds a place to wrap without adding a character (a copied ARN stays whole).
    """

    def one_table(table: re.Match[str]) -> str:
        text = TEXT_NODE.sub(lambda node: ">" + LONG_TOKEN.sub(_wrappable, node.group(1)) + "<", table.group(0))
        if 'class="dataframe"' in text:
            text = NUMBER_CELL.sub(
                lambda cell: (
                    f'<td class="num">{cell.group(1)}</td>' if re.search(r"\d", cell.group(1)) else cell.group(0)
                ),
                text,
            )
        return text

    return TABLE.sub(one_table, html)


def relative_404(html: str) -> str:
    """The 404 page with relative links: MkDocs writes it with root-absolute ones ("/assets/..."),
    which from a file:// folder point at the disk's root (no styles, dead links). The page lives
    at the site's root, so relative links work from disk and from a server serving the site at /."""
    html = ROOT_ABSOLUTE.sub(r"\1", html)
    html = html.replace(
        "<h1>404 - Not found</h1>",
        "<h1>404 - Not found</h1>\n<p>This page is not part of the course site. Start again from the "
        '<a href="index.html">home page</a>, pick a notebook on the left, or search above.</p>',
    )
    html = html.replace('new URL("/",', 'new URL(".",').replace('"base": "/"', '"base": "."')
    return html.replace('"search": "/assets/', '"search": "assets/')


def finish(site_dir: Path) -> None:
    """What MkDocs leaves undone for reading the site from disk (see the module docstring)."""
    index = site_dir / "search" / "search_index.json"
    if index.is_file():
        # The name and the variable are the theme's: on file:// its bundle loads this script.
        (site_dir / "search" / "search_index.js").write_text(
            "var __index = " + index.read_text(encoding="utf-8") + ";\n", encoding="utf-8"
        )
    for page in site_dir.rglob("*.html"):
        html = page.read_text(encoding="utf-8")
        fixed = fit_tables(html)
        if page.relative_to(site_dir).as_posix() == "404.html":
            fixed = relative_404(fixed)
        if fixed != html:
            page.write_text(fixed, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m mtrl_course.curriculum.site", description="Build the course website."
    )
    parser.add_argument("--out", type=Path, default=SITE_DIR, help=f"output folder (default: {SITE_DIR})")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    try:
        out = build(SRC_DIR, args.out.resolve())
    except (RuntimeError, ValueError) as err:
        print(f"site: FAILED\n{err}")
        return 1
    pages = len(list(out.rglob("*.html")))
    print(f"site: {pages} pages in {out} ({time.perf_counter() - start:.1f} s); open {out / 'index.html'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
