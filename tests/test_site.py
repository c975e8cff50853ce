"""The rendered course site: built from the catalog, readable offline, checked in a real browser.

The browser test serves the built site on 127.0.0.1 and drives Debian's chromium through
playwright: every page renders, every image loads, every internal link points at a file of the
site, and no request leaves the machine (each non-loopback request is aborted and fails the test).
Screenshots of a few pages go to build/test-artifacts/site/ (git-ignored).
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest
from mtrl_course import config
from mtrl_course.curriculum import catalog, site

CHROMIUM_CANDIDATES = ("chromium", "chromium-browser")
ARTIFACTS = config.REPO_ROOT / "build" / "test-artifacts" / "site"
SCREENSHOT_PAGES = ("index.html", "notebooks/index.html", "notebooks/05_launch_training.html", "docs/REWARD.html")


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


# ------------------------------------------------------------------------------------- the build
@pytest.fixture(scope="module")
def built_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("mkdocs", reason="mkdocs is not installed: pip install -e '.[test]' (or make venv)")
    pytest.importorskip("material", reason="mkdocs-material is not installed: pip install -e '.[test]'")
    pytest.importorskip("mkdocs_jupyter", reason="mkdocs-jupyter is not installed: pip install -e '.[test]'")
    root = tmp_path_factory.mktemp("site")
    return site.build(root / "src", root / "site")


@pytest.mark.slow
def test_every_existing_notebook_and_doc_has_a_page(built_site: Path) -> None:
    for entry in catalog.NOTEBOOKS:
        page = built_site / "notebooks" / entry.filename.replace(".ipynb", ".html")
        assert page.is_file() == entry.path.is_file(), page
    for name in site.DOC_TITLES:
        assert (built_site / "docs" / name.replace(".md", ".html")).is_file()
    assert (built_site / "index.html").is_file()


@pytest.mark.slow
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


def browse(
    root: Path, base_url: str, pages: list[str], screenshots: tuple[str, ...] = ()
) -> tuple[list[str], list[str]]:
    """Open every page in chromium; returns (requests that tried to leave the machine, problems)."""
    executable, sync_api = _browser_or_skip()
    left_machine: list[str] = []
    problems: list[str] = []

    def block_outside(route: Any) -> None:
        if _is_loopback(route.request.url):
            route.continue_()
        else:
            left_machine.append(route.request.url)
            route.abort()

    with sync_api.sync_playwright() as playwright:  # type: ignore[attr-defined]
        # --no-sandbox: CI runs as root, where chromium refuses its sandbox.
        browser = playwright.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        try:
            context = browser.new_context(viewport={"width": 1280, "height": 900})
            context.route("**/*", block_outside)
            page = context.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda err: errors.append(str(err)))
            for name in pages:
                errors.clear()
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
                if name in screenshots:
                    page.screenshot(path=str(ARTIFACTS / (name.replace("/", "__") + ".png")))
        finally:
            browser.close()
    return left_machine, problems


@pytest.mark.slow
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
def test_the_browser_check_catches_outside_requests_dead_images_and_links(tmp_path: Path) -> None:
    filler = "<p>" + "words to read " * 20 + "</p>"
    (tmp_path / "bad.html").write_text(
        "<html><body>" + filler + '<img src="https://example.org/logo.png"><img src="missing.png">'
        '<a href="nowhere.html">dead</a><a href="bad.html">self</a></body></html>'
    )
    with _serve(tmp_path) as base_url:
        left_machine, problems = browse(tmp_path, base_url, ["bad.html"])
    assert left_machine == ["https://example.org/logo.png"]
    assert sum("image did not load" in p for p in problems) == 2, problems
    assert [p for p in problems if "broken link" in p] == ["bad.html: broken link to /nowhere.html"]
