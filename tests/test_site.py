"""The rendered course site: built from the catalog, readable offline, checked in a real browser.

The browser test serves the built site on 127.0.0.1 and drives Debian's chromium through
playwright: every page renders, every image loads, every internal link points at a file of the
site, and no request leaves the machine (each non-loopback request is aborted and fails the test).
On every page it also reads the layout, at 1400x900 (a desktop) and at 420x900 (a phone): no
table, output or code cell is wider than what shows of it without a visible cue, the copy button
covers no cue, no cell tag that only drives the tests is shown (site.LEARNER_TAGS are the ones a
page may show), and every figure shown smaller than it was drawn enlarges on click. At 1400 px,
in addition: no output breaks a word in the middle (JupyterLab's `break-all` did: "packa ge"), no
table scrolls, and every figure is shown at 80% of its size or more with its smallest text at 9 px
or more (issue 39: six figures were shown at 45 to 55% there, with 5 px axis labels). The
site is then read the way the README opens it, from disk (file://): search answers, and the 404
page is styled with working links. Screenshots of the home page and notebooks 05, 07 and 11 go
to build/test-artifacts/site/ (git-ignored).
"""

from __future__ import annotations

import contextlib
import functools
import json
import http.server
import re
import shutil
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote, urlsplit

import pytest
from mtrl_course import config, notebook
from mtrl_course.curriculum import catalog, site

CHROMIUM_CANDIDATES = ("chromium", "chromium-browser")
ARTIFACTS = config.REPO_ROOT / "build" / "test-artifacts" / "site"
SCREENSHOT_PAGES = (
    "index.html",
    "notebooks/05_launch_training.html",
    "notebooks/07_evaluate_at_serving_settings.html",
    "notebooks/11_custom_composite_rewards.html",
)
# The two widths the layout is read at: a desktop window and a phone (issue 39 measured both).
DESKTOP = {"width": 1400, "height": 900}
PHONE = {"width": 420, "height": 900}
# A figure's smallest type, in pixels at its full size: site.FIGURE_SMALLEST_TYPE_PT at the
# notebooks' resolution (test_no_figure_draws_type_smaller_than_the_site_assumes keeps it true).
SMALLEST_TYPE_PX = site.FIGURE_SMALLEST_TYPE_PT * notebook.FIGURE_DPI / 72
# What a reader must be able to see, read in the page (see the module docstring). Returns a list
# of problems, each one line. A box that scrolls sideways needs the site's cue (course.js:
# data-overflows on the box, a visible .mtrl-scroll-cue above it); a box that hides what
# overflows (overflow hidden/clip) or lets it spill out of the article is always a problem.
# `opts.desktop` adds the desktop rules: no output breaks a word mid-word, no table scrolls, and
# figures are shown at `opts.minScale` of their size or more, their smallest type
# (`opts.smallestTypePx` at full size) at `opts.minTextPx` or more.
LAYOUT_CHECK = r"""
(opts) => {
  const problems = [];
  const article = document.querySelector("article");
  if (!article) return problems;
  const articleRight = article.getBoundingClientRect().right;
  const label = (el) => (el.innerText || el.getAttribute("src") || "").replace(/\s+/g, " ").trim().slice(0, 50);
  const hasCue = (box) => {
    const anchor = box.closest(".jp-OutputArea-child") || (box.matches("pre > code") ? box.parentElement : box);
    const cue = anchor.previousElementSibling;
    return box.hasAttribute("data-overflows") && !!cue && cue.classList.contains("mtrl-scroll-cue") && cue.offsetHeight > 0;
  };
  // A markdown code block (pre > code) may scroll on the code element itself, so the search for
  // the scrolling box starts at the item.
  const items = article.querySelectorAll("table, .jp-OutputArea-output pre, .highlight-ipynb pre, pre > code, .jp-RenderedImage img");
  for (const item of items) {
    let clipped = false;
    for (let box = item; box && box !== article.parentElement; box = box.parentElement) {
      if (box.scrollWidth <= box.clientWidth + 1) continue;
      const overflow = getComputedStyle(box).overflowX;
      if (overflow === "hidden" || overflow === "clip") {
        problems.push(`hidden overflow (${box.scrollWidth} px in ${box.clientWidth} px): ${label(item)}`);
      } else if (overflow === "visible") {
        continue;
      } else if (!hasCue(box)) {
        problems.push(`scrolls sideways without a cue (${box.scrollWidth} px in ${box.clientWidth} px): ${label(item)}`);
      } else if (opts.desktop && item.matches("table")) {
        problems.push(`table wider than its column at ${window.innerWidth} px (${box.scrollWidth} px in ${box.clientWidth} px): ${label(item)}`);
      }
      clipped = true;
      break;
    }
    if (!clipped && item.getBoundingClientRect().right > articleRight + 1) {
      problems.push(`spills out of the column: ${label(item)}`);
    }
  }
  // Words broken mid-word: read on the desktop only. In a phone's 40-odd characters an indented
  // code listing (show_source's output) must break some identifiers, and does, at the edge.
  for (const pre of opts.desktop ? article.querySelectorAll(".jp-OutputArea-output pre") : []) {
    const style = getComputedStyle(pre);
    if (style.wordBreak === "break-all" || !style.whiteSpace.startsWith("pre-wrap")) {
      problems.push(`output wraps with word-break ${style.wordBreak}, white-space ${style.whiteSpace}`);
    }
    // Rendered line breaks: a wrap between two letters or digits of a token that fits on a line.
    const walker = document.createTreeWalker(pre, NodeFilter.SHOW_TEXT);
    const range = document.createRange();
    let previousTop = null, previous = "\n", node, fits = 60;
    while ((node = walker.nextNode())) {
      const text = node.data;
      for (let i = 0; i < text.length; i++) {
        const ch = text[i];
        if (ch === "\n") { previousTop = null; previous = ch; continue; }
        range.setStart(node, i);
        range.setEnd(node, i + 1);
        const rects = range.getClientRects();
        if (!rects.length) continue;
        if (rects[0].width > 0) fits = Math.min(60, Math.floor(pre.clientWidth / rects[0].width));
        const top = rects[0].top;
        if (previousTop !== null && top > previousTop + 2 && /[A-Za-z0-9]/.test(ch) && /[A-Za-z0-9]/.test(previous)) {
          let start = i, end = i;
          while (start > 0 && !/\s/.test(text[start - 1])) start--;
          while (end < text.length && !/\s/.test(text[end])) end++;
          if (end - start < fits) problems.push(`output word broken mid-word: ${text.slice(start, i)}|${text.slice(i, end)}`);
        }
        previousTop = top;
        previous = ch;
      }
    }
  }
  // The copy button sits over a code cell's top right corner: it must not cover the cue's text.
  for (const cue of article.querySelectorAll(".mtrl-scroll-cue")) {
    const button = cue.parentElement && cue.parentElement.querySelector(":scope > .zeroclipboard-container");
    if (!button) continue;
    const b = button.getBoundingClientRect();
    const text = document.createRange();
    text.selectNodeContents(cue);
    if ([...text.getClientRects()].some(r => r.right > b.left && r.left < b.right && r.bottom > b.top && r.top < b.bottom)) {
      problems.push(`the copy button covers the scroll cue of: ${label(cue.nextElementSibling || cue.parentElement)}`);
    }
  }
  // Cell tags: a page shows only the ones a learner needs; the tests' tags are stripped.
  const shownTags = new Set();
  for (const tag of article.querySelectorAll(".cell-tag")) shownTags.add(tag.innerText.trim());
  for (const cell of article.querySelectorAll("[class*='celltag_']")) {
    for (const name of cell.classList) if (name.startsWith("celltag_")) shownTags.add(name.slice(8));
  }
  for (const tag of shownTags) {
    if (!opts.learnerTags.includes(tag)) problems.push(`test tag on the page: ${tag}`);
  }
  for (const img of article.querySelectorAll("img")) {
    if (!img.naturalWidth) continue;
    const scale = img.clientWidth / img.naturalWidth;
    if (opts.desktop && img.closest(".jp-RenderedImage")) {
      const text = opts.smallestTypePx * Math.min(scale, 1);
      if (scale < opts.minScale || text < opts.minTextPx) {
        problems.push(`figure shown at ${Math.round(100 * scale)}% of its ${img.naturalWidth} px, smallest text about ${text.toFixed(1)} px`);
      }
    }
    if (img.naturalWidth > img.clientWidth * 1.1 && !img.classList.contains("mtrl-zoomable")) {
      problems.push(`figure shown at ${img.clientWidth} of ${img.naturalWidth} px cannot be enlarged`);
    }
  }
  return problems;
}
"""


# ------------------------------------------------------------------------------ link rewriting
def test_links_between_notebooks_point_at_their_pages() -> None:
    text = "[05 · Launch training](05_launch_training.ipynb) and the [README](../README.md#the-notebooks)"
    out = site.rewrite_links(text, "notebooks", "notebooks/04_dataset.ipynb", html_targets=True)
    assert out == "[05 · Launch training](05_launch_training.html) and the [README](../index.html#the-notebooks)"


def test_readme_links_stay_markdown_for_mkdocs_and_repo_files_become_text() -> None:
    text = "[Setup](notebooks/00_setup.ipynb), [guide](docs/REWARD.md), [licence](LICENSE), [web](https://example.org)"
    out = site.rewrite_links(text, "", "index.md", html_targets=False)
    assert "[Setup](notebooks/00_setup.ipynb)" in out and "[guide](docs/REWARD.md)" in out
    assert "licence (`LICENSE`)" in out and "](LICENSE)" not in out
    assert "[web](https://example.org)" in out


def _missing_entry() -> catalog.Entry:
    return catalog.Entry(
        nn="98",
        slug="not_written_yet",
        title="Not written yet",
        summary="A notebook in preparation.",
        modes=(catalog.OFFLINE,),
        offline_seconds=None,
        live_time=None,
        live_cost=None,
    )


def test_a_catalog_notebook_without_a_file_is_listed_but_not_linked(monkeypatch: pytest.MonkeyPatch) -> None:
    missing = _missing_entry()
    assert not missing.path.exists()
    monkeypatch.setattr(catalog, "NOTEBOOKS", (*catalog.NOTEBOOKS, missing))
    overview = site.overview_markdown()
    assert "| 98 | Not written yet (in preparation) |" in overview
    assert missing.filename not in overview
    nav_targets = str(site.nav())
    assert missing.filename not in nav_targets
    assert all(f"notebooks/{e.filename}" in nav_targets for e in catalog.NOTEBOOKS if e.path.is_file())
    link = site.rewrite_links(
        f"[{missing.label}]({missing.filename})", "notebooks", "notebooks/00_setup.ipynb", html_targets=True
    )
    assert "](" not in link


# ---------------------------------------------------------------------------- tags and figures
def test_the_pages_copies_keep_only_the_tags_a_learner_needs(tmp_path: Path) -> None:
    nb = {
        "cells": [
            {"cell_type": "code", "metadata": {"tags": ["nbval-skip", "live-only"]}, "source": "", "outputs": []},
            {"cell_type": "code", "metadata": {"tags": ["numbers-within:rates", "stored-rerun"]}, "source": ""},
            {"cell_type": "markdown", "metadata": {"tags": ["banner"]}, "source": "# Title"},
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path = tmp_path / "05_launch_training.ipynb"
    path.write_text(json.dumps(nb))
    copy = site._notebook_copy(path)
    assert [cell["metadata"] for cell in copy["cells"]] == [{"tags": ["live-only"]}, {}, {}]
    assert json.loads(path.read_text()) == nb  # the notebook itself is untouched
    # Every committed notebook: its copy carries no other tag.
    for entry in catalog.NOTEBOOKS:
        if entry.path.is_file():
            shown = {
                tag for cell in site._notebook_copy(entry.path)["cells"] for tag in cell["metadata"].get("tags", [])
            }
            assert shown <= site.LEARNER_TAGS, (entry.filename, shown)


def test_the_figure_scale_keeps_the_smallest_type_readable_and_course_js_agrees() -> None:
    assert site.FIGURE_MIN_SCALE >= 0.8
    assert SMALLEST_TYPE_PX * site.FIGURE_MIN_SCALE >= 9
    script = (site.ASSETS_DIR / "course.js").read_text(encoding="utf-8")
    assert f"var FIGURE_MIN_SCALE = {site.FIGURE_MIN_SCALE};" in script


# A type size passed as a keyword argument: fontsize=8, labelsize=7.5, size="x-small".
FONT_SIZE = re.compile(r"(?<![\w.])(?:fontsize|labelsize|size)=(?:(\d+(?:\.\d+)?)(?![\w.])|[\"']([a-z-]+)[\"'])")


def test_no_figure_draws_type_smaller_than_the_site_assumes() -> None:
    """The site's figure rule reads site.FIGURE_SMALLEST_TYPE_PT: no figure may draw smaller type.

    Every literal size in the plotting code and the notebooks' code cells, the matplotlib style the
    notebooks set, and notebook 00's diagram as drawn (its sizes are constants, some minus 0.5).
    """
    import matplotlib
    import matplotlib.pyplot as plt
    from matplotlib.font_manager import FontProperties
    from mtrl_course.curriculum import diagram

    smallest = site.FIGURE_SMALLEST_TYPE_PT
    named = {name: FontProperties(size=name).get_size_in_points() for name in ("xx-small", "x-small", "small")}
    sources = {
        path.as_posix(): path.read_text(encoding="utf-8")
        for path in (config.REPO_ROOT / "agent_src" / "mtrl_course").rglob("*.py")
    }
    for entry in catalog.NOTEBOOKS:
        if entry.path.is_file():
            cells = json.loads(entry.path.read_text(encoding="utf-8"))["cells"]
            sources[entry.filename] = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    too_small = []
    for name, text in sources.items():
        for match in FONT_SIZE.finditer(text):
            number, word = match.groups()
            points = float(number) if number else named.get(word or "", smallest)
            if points < smallest:
                too_small.append(f"{name}: {match.group(0)}")
    assert not too_small, too_small
    style: Any = notebook.FIGURE_RC  # matplotlib types its keys as literals
    assert style["font.size"] >= smallest
    with matplotlib.rc_context(style):
        fig = diagram.draw_architecture()
        try:
            sizes = [text.get_fontsize() for text in fig.findobj(matplotlib.text.Text) if text.get_text().strip()]
        finally:
            plt.close(fig)
    assert min(sizes) >= smallest, min(sizes)


# ------------------------------------------------------------------------------ after the build
def test_long_identifiers_in_table_cells_get_break_points_and_numbers_are_marked() -> None:
    html = (
        '<p>arn:aws:iam::123456789012:role/outside-a-table</p><table class="dataframe"><tr>'
        "<td>arn:aws:iam::123456789012:role/mtrl-wordle</td><td>1,024</td><td>-0.345</td><td>short</td>"
        "<td>a &amp; b</td></tr></table>"
    )
    out = site.fit_tables(html)
    assert "<p>arn:aws:iam::123456789012:role/outside-a-table</p>" in out  # tables only
    assert "<td>arn:<wbr>aws:<wbr>iam:<wbr>:<wbr>123456789012:<wbr>role/<wbr>mtrl-wordle</td>" in out
    assert '<td class="num">1,024</td>' in out and '<td class="num">-0.345</td>' in out
    assert "<td>short</td>" in out and "<td>a &amp; b</td>" in out
    assert out.replace("<wbr>", "").replace(' class="num"', "") == html  # nothing else changes


def test_the_404_page_links_relatively() -> None:
    html = (
        '<script>__md_scope=new URL("/",location)</script><link href="/assets/x.css">'
        '<a href="/notebooks/05.html">05</a><a href="//example.org/">x</a><a href="https://example.org/">y</a>'
        '<script id="__config">{"base": "/", "search": "/assets/javascripts/workers/search.js"}</script>'
    )
    out = site.relative_404(html + "<h1>404 - Not found</h1>")
    assert '<a href="index.html">home page</a>' in out
    assert 'href="assets/x.css"' in out and 'href="notebooks/05.html"' in out
    assert 'href="//example.org/"' in out and 'href="https://example.org/"' in out
    assert 'new URL(".",' in out and '"base": "."' in out and '"search": "assets/javascripts' in out


# ------------------------------------------------------------------------------------- the build
@pytest.fixture(scope="module")
def built_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("mkdocs", reason="mkdocs is not installed: pip install -e '.[test]' (or make venv)")
    pytest.importorskip("material", reason="mkdocs-material is not installed: pip install -e '.[test]'")
    pytest.importorskip("mkdocs_jupyter", reason="mkdocs-jupyter is not installed: pip install -e '.[test]'")
    root = tmp_path_factory.mktemp("site")
    return site.build(root / "src", root / "site")


@pytest.mark.slow
@pytest.mark.experiments
def test_every_existing_notebook_and_doc_has_a_page(built_site: Path) -> None:
    for entry in catalog.NOTEBOOKS:
        page = built_site / "notebooks" / entry.filename.replace(".ipynb", ".html")
        assert page.is_file() == entry.path.is_file(), page
    for name in site.DOC_TITLES:
        assert (built_site / "docs" / name.replace(".md", ".html")).is_file()
    assert (built_site / "index.html").is_file()


@pytest.mark.slow
@pytest.mark.experiments
def test_the_search_index_is_also_a_script_for_reading_from_disk(built_site: Path) -> None:
    import json

    script = (built_site / "search" / "search_index.js").read_text(encoding="utf-8")
    assert script.startswith("var __index = ")
    index = json.loads(script.removeprefix("var __index = ").rstrip().rstrip(";"))
    assert index == json.loads((built_site / "search" / "search_index.json").read_text(encoding="utf-8"))
    for page in ("index.html", "notebooks/05_launch_training.html", "404.html"):
        html = (built_site / page).read_text(encoding="utf-8")
        assert "assets/course/file_worker.js" in html and "assets/course/course.css" in html, page
    assert 'href="/' not in (built_site / "404.html").read_text(encoding="utf-8")


@pytest.mark.slow
@pytest.mark.experiments
def test_no_page_asks_for_a_cdn_script_or_font(built_site: Path) -> None:
    for page in built_site.rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        assert "fonts.googleapis.com" not in text, page
        assert "mathjax/2.7.7" not in text, page  # replaced by the empty data: script
        assert "require.js" not in text, page


# ------------------------------------------------------------------------------------ the browser
def _chromium() -> str | None:
    return next(filter(None, (shutil.which(name) for name in CHROMIUM_CANDIDATES)), None)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base class's name
        pass


@contextlib.contextmanager
def _serve(root: Path) -> Iterator[str]:
    """Serve `root` on loopback only, on a free port, for the duration of the block."""
    handler = functools.partial(_QuietHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def served_site(built_site: Path) -> Iterator[str]:
    with _serve(built_site) as base_url:
        yield base_url


def _is_loopback(url: str) -> bool:
    parts = urlsplit(url)
    return parts.scheme in ("data", "blob", "about") or parts.hostname in ("127.0.0.1", "localhost", "::1")


def _browser_or_skip() -> tuple[str, object]:
    executable = _chromium()
    if executable is None:
        pytest.skip("no chromium on PATH: sudo apt-get install chromium (.ci/run does)")
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="playwright is not installed: pip install -e '.[test]'"
    )
    return executable, sync_api


@dataclass
class _Browser:
    page: Any
    left_machine: list[str] = field(default_factory=list)  # requests refused for leaving the machine
    errors: list[str] = field(default_factory=list)  # the pages' script errors


@contextlib.contextmanager
def _chromium_page(
    stays_local: Callable[[str], bool] = _is_loopback, viewport: dict[str, int] = DESKTOP
) -> Iterator[_Browser]:
    """One chromium page (1400x900 unless told) whose requests for which `stays_local` is false are refused and recorded."""
    executable, sync_api = _browser_or_skip()
    with sync_api.sync_playwright() as playwright:  # type: ignore[attr-defined]
        # --no-sandbox: CI runs as root, where chromium refuses its sandbox.
        browser = playwright.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        try:
            context = browser.new_context(viewport=viewport)
            opened = _Browser(context.new_page())

            def block_outside(route: Any) -> None:
                if stays_local(route.request.url):
                    route.continue_()
                else:
                    opened.left_machine.append(route.request.url)
                    route.abort()

            context.route("**/*", block_outside)
            opened.page.on("pageerror", lambda err: opened.errors.append(str(err)))
            yield opened
        finally:
            browser.close()


def layout_problems(page: Any, *, desktop: bool) -> list[str]:
    """LAYOUT_CHECK on the open page, with the desktop rules when `desktop`."""
    options = {
        "desktop": desktop,
        "learnerTags": sorted(site.LEARNER_TAGS),
        "smallestTypePx": SMALLEST_TYPE_PX,
        "minScale": 0.8,
        "minTextPx": 9,
    }
    return list(page.evaluate(LAYOUT_CHECK, options))


def browse(
    root: Path, base_url: str, pages: list[str], screenshots: tuple[str, ...] = (), *, phone: bool = True
) -> tuple[list[str], list[str]]:
    """Open every page in chromium; returns (requests that tried to leave the machine, problems).

    Each page is read at 1400x900, then (`phone`) loaded again at 420x900 for the layout alone.
    """
    problems: list[str] = []
    with _chromium_page() as opened:
        page, errors = opened.page, opened.errors
        for name in pages:
            errors.clear()
            page.set_viewport_size(DESKTOP)
            response = page.goto(base_url + name, wait_until="load")
            if response is None or response.status != 200:
                problems.append(f"{name}: HTTP {response.status if response else 'no response'}")
                continue
            page.wait_for_load_state("networkidle")
            text = page.inner_text("body")
            if len(text.strip()) < 100:
                problems.append(f"{name}: the page is (nearly) empty")
            broken = page.eval_on_selector_all(
                "img", "imgs => imgs.filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.src.slice(0, 80))"
            )
            problems += [f"{name}: image did not load: {src}" for src in broken]
            for href in page.eval_on_selector_all("a[href]", "links => links.map(a => a.href)"):
                if not href.startswith(base_url):
                    continue
                target = root / unquote(urlsplit(href).path).lstrip("/")
                if target.is_dir():
                    target = target / "index.html"
                if not target.is_file():
                    problems.append(f"{name}: broken link to {urlsplit(href).path}")
            problems += [f"{name}: script error: {err}" for err in errors]
            problems += [f"{name}: {problem}" for problem in layout_problems(page, desktop=True)]
            if name in screenshots:
                page.screenshot(path=str(ARTIFACTS / (name.replace("/", "__") + ".png")))
                # And the page's widest table in view: where values used to be out of sight.
                widest = page.evaluate_handle(
                    "() => [...document.querySelectorAll('article table')]"
                    ".sort((a, b) => b.scrollWidth - a.scrollWidth)[0] || null"
                ).as_element()
                if widest is not None:
                    widest.scroll_into_view_if_needed()
                    page.screenshot(path=str(ARTIFACTS / (name.replace("/", "__") + ".table.png")))
            if phone:
                page.set_viewport_size(PHONE)
                page.goto(base_url + name, wait_until="load")
                page.wait_for_load_state("networkidle")
                problems += [f"{name} at {PHONE['width']} px: {p}" for p in layout_problems(page, desktop=False)]
                problems += [f"{name} at {PHONE['width']} px: script error: {err}" for err in errors]
    return opened.left_machine, problems


@pytest.mark.slow
@pytest.mark.experiments
def test_every_page_renders_offline_in_chromium(built_site: Path, served_site: str) -> None:
    pages = sorted(p.relative_to(built_site).as_posix() for p in built_site.rglob("*.html") if p.name != "404.html")
    assert len(pages) >= len([e for e in catalog.NOTEBOOKS if e.path.is_file()]) + len(site.DOC_TITLES) + 2
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    left_machine, problems = browse(built_site, served_site, pages, SCREENSHOT_PAGES)
    assert not left_machine, f"requests left the machine: {sorted(set(left_machine))}"
    assert not problems, "\n".join(problems)
    for name in SCREENSHOT_PAGES:
        shot = ARTIFACTS / (name.replace("/", "__") + ".png")
        assert shot.is_file() and shot.stat().st_size > 10_000, shot


@pytest.mark.slow
@pytest.mark.experiments
def test_the_browser_check_catches_outside_requests_dead_images_and_links(tmp_path: Path) -> None:
    filler = "<p>" + "words to read " * 20 + "</p>"
    (tmp_path / "bad.html").write_text(
        "<html><body>" + filler + '<img src="https://example.org/logo.png"><img src="missing.png">'
        '<a href="nowhere.html">dead</a><a href="bad.html">self</a></body></html>'
    )
    with _serve(tmp_path) as base_url:
        left_machine, problems = browse(tmp_path, base_url, ["bad.html"], phone=False)
    assert left_machine == ["https://example.org/logo.png"]
    assert sum("image did not load" in p for p in problems) == 2, problems
    assert [p for p in problems if "broken link" in p] == ["bad.html: broken link to /nowhere.html"]


@pytest.mark.slow
@pytest.mark.experiments
def test_the_layout_check_catches_hidden_columns_broken_words_and_small_figures(tmp_path: Path) -> None:
    filler = "<p>" + "words to read " * 20 + "</p>"
    wide = "<tr>" + "<td>a_value_that_does_not_wrap_at_all</td>" * 8 + "</tr>"
    figure = "data:image/svg+xml," + quote('<svg xmlns="http://www.w3.org/2000/svg" width="1400" height="100"/>')
    cue = '<span class="mtrl-scroll-cue" style="display: block">Wider than the column: scroll sideways</span>'
    (tmp_path / "bad.html").write_text(
        "<html><body><article style='width: 500px'>"
        + filler
        + f"<div style='overflow: hidden'><table>{wide}</table></div>"
        f"<div style='overflow-x: auto'><table>{wide}</table></div>"
        f"{cue}<div data-overflows style='overflow-x: auto'><table><tr><td>a_table_with_its_cue</td>"
        f"{wide[4:-5]}</tr></table></div>"
        '<div class="jp-OutputArea-output" style="width: 200px"><pre style="word-break: break-all; white-space: pre-wrap">'
        "a package of words that wrap anywhere in the middle</pre></div>"
        '<div class="highlight-ipynb" style="overflow: auto; width: 200px"><pre>'
        "print(a_code_line_much_longer_than_its_column(with_arguments, that_scroll_sideways))</pre></div>"
        '<div class="highlight"><pre><code style="display: block; overflow: auto; width: 200px">'
        "make a_markdown_code_block_much_longer_than_its_column  # that scrolls sideways</code></pre></div>"
        '<div class="CodeMirror" style="position: relative; width: 300px">'
        '<div class="zeroclipboard-container" style="position: absolute; top: 0; right: 0; width: 200px; height: 40px">'
        f'</div>{cue}<div class="highlight-ipynb" data-overflows style="overflow: auto"><pre>'
        "print(a_cued_code_line_whose_cue_is_under_the_copy_button(and, more, arguments))</pre></div></div>"
        '<div class="jp-Cell celltag_nbval-skip celltag_live-only"><div class="celltoolbar">'
        '<span class="cell-tag">numbers-within:rates</span><span class="cell-tag">live-only</span></div></div>'
        f'<div class="jp-RenderedImage"><img src="{figure}" style="width: 400px"></div></article></body></html>'
    )
    with _serve(tmp_path) as base_url:
        _, problems = browse(tmp_path, base_url, ["bad.html"])
    assert any("hidden overflow" in p for p in problems), problems
    assert any("scrolls sideways without a cue" in p for p in problems), problems
    assert any("without a cue" in p and "a_code_line_much_longer" in p for p in problems), problems
    assert any("without a cue" in p and "a_markdown_code_block" in p for p in problems), problems
    assert any("word-break break-all" in p for p in problems), problems
    assert any("broken mid-word" in p for p in problems), problems
    assert any("cannot be enlarged" in p for p in problems), problems
    # Issue 39's rules: the desktop ones only at 1400 px.
    desktop = [p for p in problems if " at 420 px: " not in p]
    phone = [p for p in problems if " at 420 px: " in p]
    assert any("table wider than its column at 1400 px" in p and "a_table_with_its_cue" in p for p in desktop)
    assert not any("table wider than its column" in p for p in phone), phone
    assert any("figure shown at 29% of its 1400 px, smallest text about 3.1 px" in p for p in desktop), desktop
    assert not any("figure shown at 29%" in p for p in phone), phone
    assert any("the copy button covers the scroll cue" in p and "a_cued_code_line" in p for p in phone), phone
    shown_tags = sorted(p.rsplit(": ", 1)[1] for p in desktop if "test tag on the page" in p)
    assert shown_tags == ["nbval-skip", "numbers-within:rates"], desktop


@pytest.mark.slow
@pytest.mark.experiments
def test_a_code_cell_wider_than_the_column_shows_the_cue(built_site: Path, served_site: str) -> None:
    # Notebook 07 has code lines of over 140 characters: even at 1400x900 they scroll sideways.
    with _chromium_page() as opened:
        page = opened.page
        page.goto(served_site + "notebooks/07_evaluate_at_serving_settings.html", wait_until="load")
        page.wait_for_load_state("networkidle")
        cells = page.eval_on_selector_all(
            "article .highlight-ipynb",
            """boxes => boxes.filter(b => b.scrollWidth > b.clientWidth + 1).map(b => {
                const cue = b.previousElementSibling;
                return {cued: b.hasAttribute("data-overflows") && !!cue && cue.classList.contains("mtrl-scroll-cue")
                              && cue.offsetHeight > 0,
                        scrolls: getComputedStyle(b).overflowX};
            })""",
        )
        assert cells, "no code cell of notebook 07 is wider than the column at 1400x900"
        assert all(cell["cued"] and cell["scrolls"] == "scroll" for cell in cells), cells


@pytest.mark.slow
@pytest.mark.experiments
def test_a_wide_figure_enlarges_on_click_and_closes_with_escape(built_site: Path, served_site: str) -> None:
    # Notebook 10's figures are up to 1419 px wide. On a desktop a figure wider than the column is
    # shown at site.FIGURE_MIN_SCALE of its size in a box that scrolls (with the cue), and a click
    # fits it to the window; on a phone it fits the column and a tap opens it at full size.
    for viewport in (DESKTOP, PHONE):
        with _chromium_page(viewport=viewport) as opened:
            page = opened.page
            page.goto(served_site + "notebooks/10_what_went_wrong.html", wait_until="load")
            page.wait_for_load_state("networkidle")
            figure = page.locator("article img.mtrl-zoomable").first
            shown, natural = figure.evaluate("img => [img.clientWidth, img.naturalWidth]")
            if viewport is DESKTOP:
                assert shown == pytest.approx(natural * site.FIGURE_MIN_SCALE, abs=1), (shown, natural)
            figure.scroll_into_view_if_needed()
            figure.click()
            lightbox = page.locator(".mtrl-lightbox img")
            first = lightbox.evaluate("img => img.getBoundingClientRect().width")
            lightbox.click()
            second = lightbox.evaluate("img => img.getBoundingClientRect().width")
            if viewport is DESKTOP:  # fitted to the window, then full size
                assert shown < first <= natural + 1 and second == pytest.approx(natural, abs=1), (shown, first, second)
            else:  # full size, then fitted to the screen
                assert first == pytest.approx(natural, abs=1) and second < viewport["width"], (first, second)
            page.keyboard.press("Escape")
            assert page.locator(".mtrl-lightbox").count() == 0
            assert not opened.errors, opened.errors


@pytest.mark.slow
@pytest.mark.experiments
def test_the_site_read_from_disk_searches_and_its_404_page_works(built_site: Path) -> None:
    """As the README opens it: build/site/index.html from disk (file://), no server."""
    with _chromium_page(lambda url: urlsplit(url).scheme in ("file", "data", "about", "blob")) as opened:
        page = opened.page
        for name in ("index.html", "notebooks/05_launch_training.html"):
            page.goto((built_site / name).as_uri(), wait_until="load")
            page.click("input[data-md-component=search-query]")
            page.keyboard.type("reward", delay=20)
            found = page.locator(".md-search-result__item")
            found.first.wait_for(timeout=15_000)
            assert found.count() > 0, name
            assert "matching document" in page.inner_text(".md-search-result__meta"), name
        page.goto((built_site / "404.html").as_uri(), wait_until="load")
        header = page.evaluate("getComputedStyle(document.querySelector('.md-header')).backgroundColor")
        assert header not in ("rgba(0, 0, 0, 0)", "transparent"), "the 404 page has no theme styles"
        links = page.eval_on_selector_all("a[href]", "links => links.map(a => a.href)")
        local = [href for href in links if href.startswith("file:")]
        assert len(local) >= len([e for e in catalog.NOTEBOOKS if e.path.is_file()]), links
        dead = [href for href in local if not Path(unquote(urlsplit(href).path)).is_file()]
        assert not dead, dead
        assert not opened.errors, opened.errors
    assert not opened.left_machine, opened.left_machine
