"""The docs site (mkdocs-material, mkdocs.yml, docs/) works offline and reads well.

The site is built once for the module (``mkdocs build --strict``, about 2 s; skipped without mkdocs-material).

* In the built HTML and CSS nothing loads from another host: no web font, no stylesheet, script, image or frame
  from a URL, no ``preconnect``, and no repository widget (mkdocs-material's ``repo_url`` header asks the GitHub
  API on every page). Links (``<a href>``) to other sites are fine: following one is the reader's choice.
* The same in headless Chromium (skipped without playwright or a browser): every page of the site loads at
  1,280 px, and the home and an env page at 800 px, with every non-file request recorded and aborted: none is
  made.
* The env ids of the home page's table stay on one line, the env pages' spec tables start with a header that
  says something, and the home page's code block is not clipped at 1,280 px.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
from headless import WIDTHS, launched, offline_page

ROOT = Path(__file__).resolve().parents[1]
EXTERNAL = re.compile(r"^\s*(https?:)?//", re.I)
#: <link rel=...> values that make the browser fetch the href.
FETCHING_RELS = {"stylesheet", "preconnect", "preload", "prefetch", "dns-prefetch", "modulepreload", "icon",
                 "shortcut", "apple-touch-icon", "manifest", "import"}
#: Elements whose src (or data/poster) the browser fetches.
FETCHING_TAGS = {"script", "img", "iframe", "source", "video", "audio", "embed", "track", "input", "object"}


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    if importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("material") is None:
        pytest.skip("mkdocs-material is not installed: pip install -e '.[docs]'")
    out = tmp_path_factory.mktemp("site")
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(ROOT / "mkdocs.yml"),
                           "-d", str(out)], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return out


class _Resources(HTMLParser):
    """What a page would fetch from another host, and the parts the tests look at."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.fetched: list[str] = []  # "tag attr=url" of every external URL the page would load
        self.source_widget = False
        self.styles: list[str] = []
        self._style: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get("data-md-component") == "source":
            self.source_widget = True
        if tag == "link" and FETCHING_RELS & set((a.get("rel") or "").lower().split()):
            self._check(tag, "href", a.get("href"))
        if tag in FETCHING_TAGS:
            for attr in ("src", "srcset", "data", "poster"):
                self._check(tag, attr, a.get(attr))
        if "style" in a:
            self.styles.append(a["style"] or "")
        if tag == "style":
            self._style = []

    def handle_endtag(self, tag):
        if tag == "style" and self._style is not None:
            self.styles.append("".join(self._style))
            self._style = None

    def handle_data(self, data):
        if self._style is not None:
            self._style.append(data)

    def _check(self, tag, attr, value):
        for url in re.split(r",\s*", value or ""):
            if EXTERNAL.match(url):
                self.fetched.append(f"{tag} {attr}={url.split()[0]}")


def _css_fetches(css: str) -> list[str]:
    """External URLs a style sheet loads (``url(...)`` and ``@import``)."""
    urls = re.findall(r"url\(\s*['\"]?([^'\")]+)", css) + re.findall(r"@import\s+['\"]([^'\"]+)", css)
    return [u for u in urls if EXTERNAL.match(u)]


def _parsed(path: Path) -> _Resources:
    parser = _Resources()
    parser.feed(path.read_text(encoding="utf-8"))
    parser.close()
    return parser


def test_the_config_asks_for_no_web_font_and_no_repository_widget():
    import yaml

    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    assert config["theme"].get("font") is False  # mkdocs-material would load Roboto from Google Fonts
    assert "repo_url" not in config  # its header widget asks api.github.com for stars and releases


def test_no_page_or_style_sheet_loads_anything_from_another_host(site):
    pages = sorted(site.rglob("*.html"))
    assert len(pages) >= 20 and (site / "index.html") in pages
    found: dict[str, list[str]] = {}
    for page in pages:
        parsed = _parsed(page)
        problems = parsed.fetched + [f"style url {u}" for css in parsed.styles for u in _css_fetches(css)]
        if parsed.source_widget:
            problems.append("the repository widget (data-md-component=source)")
        if problems:
            found[str(page.relative_to(site))] = problems
    for sheet in sorted(site.rglob("*.css")):
        if _css_fetches(sheet.read_text(encoding="utf-8", errors="replace")):
            found[str(sheet.relative_to(site))] = _css_fetches(sheet.read_text(encoding="utf-8", errors="replace"))
    assert found == {}


def test_the_check_finds_what_the_default_theme_loads():
    """The checker itself: the pieces mkdocs-material writes with fonts and repo_url on are caught."""
    page = ('<link rel="preconnect" href="https://fonts.gstatic.com" crossorigin>'
            '<link rel="stylesheet" href="https://fonts.googleapis.com/css?family=Roboto">'
            '<a href="https://github.com/x/y" class="md-source" data-md-component="source">repo</a>'
            '<img src="//cdn.example/p.png"><style>@import "https://x.example/a.css";</style>'
            '<a href="https://example.com">a plain link is not a request</a><script src="assets/local.js"></script>')
    parser = _Resources()
    parser.feed(page)
    assert parser.fetched == ["link href=https://fonts.gstatic.com", "link href=https://fonts.googleapis.com/css?family=Roboto",
                              "img src=//cdn.example/p.png"]
    assert parser.source_widget and _css_fetches(parser.styles[0]) == ["https://x.example/a.css"]


def test_env_pages_start_with_a_spec_table_whose_header_says_something():
    pages = sorted((ROOT / "docs" / "envs").glob("*.md"))
    assert len(pages) >= 7
    for page in pages:
        lines = page.read_text(encoding="utf-8").splitlines()
        first_row = next(line for line in lines if line.startswith("|"))
        cells = [c.strip() for c in first_row.strip().strip("|").split("|")]
        assert all(cells), f"{page.name}: the table's header row has an empty cell: {first_row}"


# ---------------------------------------------------------------------------------------- in headless Chromium
@pytest.fixture(scope="module")
def browser(site):
    with launched() as browser:
        yield browser


def test_every_page_loads_offline_in_chromium(site, browser):
    """Every page at 1,280 px (the theme's header, fonts and scripts are the same at every width; the 800 px
    pages of the test below are checked too)."""
    page, outside = offline_page(browser, 1280)
    try:
        pages = sorted(site.rglob("*.html"))
        for path in pages:
            if path.name == "404.html":
                continue
            page.goto(path.resolve().as_uri())
            page.wait_for_load_state("load")
        page.wait_for_timeout(300)  # the theme's scripts run after load
        assert outside == []
        assert page.evaluate("document.querySelector('.md-header') !== null")  # the theme's page, not an error
    finally:
        page.close()


@pytest.mark.parametrize("width", WIDTHS)
def test_env_ids_stay_on_one_line_and_the_home_code_block_fits(site, browser, width, tmp_path):
    page, outside = offline_page(browser, width)
    try:
        page.goto((site / "index.html").resolve().as_uri())
        page.wait_for_load_state("load")
        ids = page.evaluate("""Array.from(document.querySelectorAll('.md-typeset table td:first-child code')).map(
            c => ({text: c.textContent, lines: c.getClientRects().length}))""")
        assert len(ids) >= 7 and all(re.fullmatch(r"Fin\w+-v0", i["text"]) for i in ids), ids
        assert [i for i in ids if i["lines"] != 1] == []  # FinDeltaHedge-v0 is never "FinDeltaHe / dge-v0"
        blocks = page.evaluate("""Array.from(document.querySelectorAll('.md-typeset pre > code')).map(
            c => ({scroll: c.scrollWidth, client: c.clientWidth, text: c.textContent.slice(0, 40)}))""")
        assert blocks
        if width >= 1280:
            assert [b for b in blocks if b["scroll"] > b["client"] + 1] == []  # nothing cut off at the right
        page.screenshot(path=str(tmp_path / f"home_{width}.png"))
        page.goto((site / "envs" / "trading" / "index.html").resolve().as_uri())
        page.wait_for_load_state("load")
        header = page.evaluate("""Array.from(document.querySelector('.md-typeset table').tHead.rows[0].cells).map(
            c => c.textContent.trim())""")
        assert header and all(header), header
        page.wait_for_timeout(300)  # the theme's scripts run after load
        assert outside == []
    finally:
        page.close()
