"""The self-contained HTML scorecard: the Markdown subset it renders, a real bench run's page, and that page
opened in headless Chromium (skipped when no browser is installed): through its command line, and driven by
Playwright's Python API at a 1280x900 viewport (skipped without playwright or a browser; Playwright's own browser
download is not needed: Debian's ``chromium`` is launched by its path).

The bench is the run the tests share (tests/conftest.py ``small_bench``: every section, Trading, Hedging, Report,
Options, Audit, FinQA and the aggregate, on MSFT and AAPL).

Sections 5 and 6 check how the page and its charts read: every chart the bench draws, measured in matplotlib by
bounding boxes (no legend over an axis label, a tick label, a title or the data; no x labels running together;
series told apart by colour-blind-safe colours and line styles), and the page in headless Chromium at 800 and
1,280 px (tests/headless.py; one browser for the module): every table either shows all its columns or keeps its
first column in place with a shadow and a line saying it scrolls, HERCULEAN Tables 2 and 3 (as wide as the
default bench writes them) fit at 1,280 px and the FAB++ aggregate at 800 px, and the page loads nothing from
outside.
"""

from __future__ import annotations

import base64
import html
import pickle
import re
import shutil
import struct
import subprocess
import types
import zlib
from html.parser import HTMLParser
from pathlib import Path

import pytest

from finenvs.evaluation.scorecard_html import aggregate_plot, markdown_to_html, write_html

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
DATA_PNG = "data:image/png;base64,"


def _tiny_png() -> bytes:
    """A valid 1x1 RGB PNG (no matplotlib needed)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    return (PNG_SIGNATURE + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(b"\x00\x10\x80\xf0")) + chunk(b"IEND", b""))


class _Page(HTMLParser):
    """What a page holds: headings, tables (rows of cell texts), images, ids, nav links, body attributes."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.headings: list[tuple[int, str | None, str]] = []
        self.tables: list[list[tuple[str, list[str]]]] = []
        self.images: list[dict[str, str | None]] = []
        self.ids: list[str] = []
        self.links: list[str] = []
        self.body: dict[str, str | None] = {}
        self.scripts = 0
        self._text: list[str] | None = None
        self._heading: tuple[int, str | None] | None = None
        self._row: tuple[str, list[str]] | None = None
        self._cell_tag = ""

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "id" in a:
            self.ids.append(a["id"])
        if tag == "body":
            self.body = a
        elif tag == "script":
            self.scripts += 1
        elif tag == "img":
            self.images.append(a)
        elif tag == "a" and a.get("href"):
            self.links.append(a["href"])
        elif re.fullmatch(r"h[1-6]", tag):
            self._heading, self._text = (int(tag[1]), a.get("id")), []
        elif tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self._row = ("", [])
        elif tag in ("td", "th") and self._row is not None:
            self._cell_tag, self._text = tag, []

    def handle_endtag(self, tag):
        if re.fullmatch(r"h[1-6]", tag) and self._heading is not None:
            self.headings.append((*self._heading, "".join(self._text or [])))
            self._heading, self._text = None, None
        elif tag in ("td", "th") and self._row is not None and self._text is not None:
            self._row = (self._cell_tag, [*self._row[1], "".join(self._text)])
            self._text = None
        elif tag == "tr" and self._row is not None:
            self.tables[-1].append(self._row)
            self._row = None

    def handle_data(self, data):
        if self._text is not None:
            self._text.append(data)


def _parse(page: str) -> _Page:
    parser = _Page()
    parser.feed(page)
    parser.close()
    return parser


def _markdown_tables(markdown: str) -> list[list[list[str]]]:
    """The pipe tables of ``markdown`` as rows of plain cell texts (separator rows dropped)."""
    tables, block = [], []
    for line in [*markdown.splitlines(), ""]:
        if line.lstrip().startswith("|"):
            block.append([c.strip().replace("**", "").replace("`", "") for c in line.strip().strip("|").split("|")])
        elif block:
            tables.append([r for r in block if not all(re.fullmatch(r":?-{2,}:?", c) for c in r if c)])
            block = []
    return tables


# ====================================================================== 1. markdown_to_html
def test_headings_get_ids_and_are_returned():
    body, headings = markdown_to_html("# finenvs scorecard — run 7\n\n## Knowledge and analysis (FinQA-v0)\n\n"
                                      "### Mean over symbols\n")
    assert headings == [(1, "finenvs scorecard — run 7"), (2, "Knowledge and analysis (FinQA-v0)"),
                        (3, "Mean over symbols")]
    page = _parse(body)
    assert page.headings == [(1, "finenvs-scorecard-run-7", "finenvs scorecard — run 7"),
                             (2, "knowledge-and-analysis-finqa-v0", "Knowledge and analysis (FinQA-v0)"),
                             (3, "mean-over-symbols", "Mean over symbols")]


def test_pipe_tables_have_a_header_row_and_no_separator_row():
    markdown = ("| policy | Knowledge | overall |\n|---|---:|:---:|\n| reference | 100.00 | **100.00** |\n"
                "| naive |  0.00 | `0.00` |\n")
    body, _ = markdown_to_html(markdown)
    page = _parse(body)
    assert len(page.tables) == 1
    assert page.tables[0] == [("th", ["policy", "Knowledge", "overall"]), ("td", ["reference", "100.00", "100.00"]),
                              ("td", ["naive", "0.00", "0.00"])]
    assert body.count("<thead>") == 1 and body.count("<th>") == 3 and body.count("<tr>") == 3
    assert "---" not in body and ":" not in re.sub(r"<[^>]+>", "", body)
    assert "<td><strong>100.00</strong></td>" in body and "<td><code>0.00</code></td>" in body


def test_lists_paragraphs_inline_code_and_bold():
    markdown = ("Run `finenvs bench` for **every** section.\nA second line.\n\n- first item\n- `code` item\n"
                "- **bold** item\n\nAfter the list.\n")
    body, _ = markdown_to_html(markdown)
    assert body.split("\n") == [
        "<p>Run <code>finenvs bench</code> for <strong>every</strong> section. A second line.</p>",
        "<ul><li>first item</li><li><code>code</code> item</li><li><strong>bold</strong> item</li></ul>",
        "<p>After the list.</p>",
    ]


@pytest.mark.parametrize("markdown", [
    "| a | b |\n|---|---|\n| <script>alert(1)</script> | x |\n",
    "Text with <script>alert(1)</script> inside.\n",
    "## <script>alert(1)</script>\n",
    "- <script>alert(1)</script>\n",
], ids=["cell", "paragraph", "heading", "list"])
def test_html_in_the_text_is_escaped(markdown):
    body, _ = markdown_to_html(markdown)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in body
    assert "<script" not in body
    assert _parse(body).scripts == 0


def test_ampersands_and_angle_brackets_are_escaped_once():
    body, _ = markdown_to_html("| P&L | a < b |\n|---|---|\n| 5 > 3 | x |\n")
    assert "<th>P&amp;L</th>" in body and "<th>a &lt; b</th>" in body and "<td>5 &gt; 3</td>" in body
    assert _parse(body).tables[0] == [("th", ["P&L", "a < b"]), ("td", ["5 > 3", "x"])]


def test_write_html_embeds_the_pngs_next_to_the_page(tmp_path):
    png = _tiny_png()
    (tmp_path / "chart.png").write_bytes(png)
    (tmp_path / "img").mkdir()
    (tmp_path / "img" / "nested.png").write_bytes(png)
    (tmp_path / "photo.jpg").write_bytes(b"\xff\xd8\xff\xe0 not embedded")
    markdown = ("# Title\n\n## Charts\n\n![chart](chart.png)\n![nested](img/nested.png)\n![missing](missing.png)\n"
                "![photo](photo.jpg)\n\n## Other <b>section</b>\n")
    written = [tmp_path / "chart.png", tmp_path / "img" / "nested.png", tmp_path / "missing.png", tmp_path / "photo.jpg"]
    path = write_html(markdown, tmp_path / "scorecard.html", title="run <7>", images=written)
    assert path == tmp_path / "scorecard.html"
    page_text = path.read_text(encoding="utf-8")
    assert page_text.startswith("<!DOCTYPE html>") and "<title>run &lt;7&gt;</title>" in page_text
    page = _parse(page_text)
    sources = {img["alt"]: img["src"] for img in page.images}
    encoded = DATA_PNG + base64.b64encode(png).decode("ascii")
    assert sources == {"chart": encoded, "nested": encoded}  # no file, or not a PNG: the reference stays text
    assert "![missing](missing.png)" in page_text and "![photo](photo.jpg)" in page_text
    assert base64.b64decode(sources["chart"].removeprefix(DATA_PNG)) == png
    # the nav links every level-2 heading, and the page's own script is the only script
    assert page.links == ["#charts", "#other-b-section-b"] and [h[1] for h in page.headings if h[0] == 2] == [
        "charts", "other-b-section-b"]
    assert page.scripts == 1 and "data-images-loaded" in page_text


def test_write_html_reads_images_relative_to_the_page_not_the_working_directory(tmp_path, monkeypatch):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "a.png").write_bytes(_tiny_png())
    monkeypatch.chdir(tmp_path)
    page = _parse(write_html("![a](a.png)\n", tmp_path / "out" / "page.html", images=[tmp_path / "out" / "a.png"])
                  .read_text())
    assert page.images[0]["src"].startswith(DATA_PNG)


def test_image_alt_text_is_escaped_once(tmp_path):
    (tmp_path / "pnl.png").write_bytes(_tiny_png())
    page = _parse(write_html("![P&L chart](pnl.png)\n", tmp_path / "page.html", images=[tmp_path / "pnl.png"])
                  .read_text())
    assert page.images[0]["alt"] == "P&L chart"


def test_png_with_an_ampersand_in_its_name_is_embedded(tmp_path):
    (tmp_path / "p&l.png").write_bytes(_tiny_png())
    page = _parse(write_html("![pnl](p&l.png)\n", tmp_path / "page.html", images=[tmp_path / "p&l.png"]).read_text())
    assert page.images[0]["src"].startswith(DATA_PNG)


def test_aggregate_plot_of_a_card_without_an_aggregate_draws_nothing(tmp_path):
    card = types.SimpleNamespace(aggregate=None, run_dir=tmp_path)
    assert aggregate_plot(card) == []
    assert list(tmp_path.iterdir()) == []


def test_tables_scroll_in_their_own_box_and_images_form_a_grid():
    body, _ = markdown_to_html("| a | b |\n|---|---|\n| 1 | 2 |\n\n![one](a.png)\n![two](b.png)\n\n"
                               "![alone](c.png)\n\nText with ![inline](d.png) image.\n",
                               {name: name for name in ("a.png", "b.png", "c.png", "d.png")})
    assert body.count('<div class="table-wrap"><table>') == 1 and "</table></div>" in body
    assert '<div class="charts"><img alt="one" src="a.png"><img alt="two" src="b.png"></div>' in body
    assert '<div class="charts one"><img alt="alone" src="c.png"></div>' in body
    assert '<p>Text with <img alt="inline" src="d.png"> image.</p>' in body


def test_the_page_script_sorts_tables_and_needs_no_network(tmp_path):
    page = write_html("| a | b |\n|---|---|\n| x | 2 |\n| y | 10 |\n", tmp_path / "p.html").read_text()
    assert "aria-sort" in page and "addEventListener('click'" in page
    assert not re.search(r"(src|href)=[\"']?(https?:)?//", page)  # no CDN, no remote resource


def test_save_png_writes_a_palette_png_with_the_legend_outside(tmp_path):
    pytest.importorskip("matplotlib")
    from finenvs.evaluation.scorecard_html import figure, outside_legend, save_png

    fig = figure(6, 3)
    ax = fig.subplots()
    for k in range(5):
        ax.plot(range(50), [k * i for i in range(50)], label=f"policy number {k}")
    outside_legend(ax)
    data = save_png(fig, tmp_path / "c.png").read_bytes()
    assert data.startswith(PNG_SIGNATURE)
    width, height, depth, colour_type = struct.unpack(">IIBB", data[16:26])
    assert colour_type == 3 and depth <= 8  # indexed colour
    assert width > 600  # the legend to the right of the axes widens the saved image beyond the 6 in figure


# ====================================================================== 2. a real bench run
@pytest.fixture(scope="module")
def run(small_bench):
    """The shared bench run (tests/conftest.py ``small_bench``) and the Scorecard it returned; tests that write
    copy its folder first."""
    card = pickle.loads(small_bench.pickled_card.read_bytes())
    run_dir = small_bench.dir
    html_path = run_dir / "scorecard.html"
    return types.SimpleNamespace(card=card, dir=run_dir, html_path=html_path,
                                 markdown=(run_dir / "scorecard.md").read_text(encoding="utf-8"),
                                 html=html_path.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def section_headings(run):
    return [line[3:].strip() for line in run.markdown.splitlines() if line.startswith("## ")]


def _needs_matplotlib():
    pytest.importorskip("matplotlib", reason="matplotlib is not installed: the bench writes no PNG charts")


def test_the_run_writes_the_html_page(run):
    assert run.card.errors == []
    assert run.html_path.is_file() and run.card.files[2] == str(run.html_path)
    assert run.html.startswith("<!DOCTYPE html>") and "<title>finenvs scorecard — t</title>" in run.html


def test_every_section_heading_is_in_the_page(run, section_headings):
    expected = {"FinTrading-v0", "FinHedging-v0", "FinReport-v0", "Options", "Audit",
                "Knowledge and analysis (FinQA-v0)", "Section aggregate (FAB++)"}
    assert expected <= set(section_headings)
    page = _parse(run.html)
    assert [text for level, _, text in page.headings if level == 2] == section_headings
    anchors = [hid for level, hid, _ in page.headings if level == 2]
    assert page.links[: len(anchors)] == [f"#{a}" for a in anchors]  # the nav, in page order
    assert all(a and re.fullmatch(r"[a-z0-9-]+", a) for a in anchors)


def test_every_markdown_table_is_an_html_table(run):
    tables = _markdown_tables(run.markdown)
    page = _parse(run.html)
    assert len(tables) >= 10 and len(page.tables) == len(tables)
    for md_rows, html_rows in zip(tables, page.tables, strict=True):
        assert [cells for _, cells in html_rows] == md_rows
        assert [kind for kind, _ in html_rows] == ["th"] + ["td"] * (len(md_rows) - 1)


def test_the_aggregate_table(run):
    page = _parse(run.html)
    names = [text for level, _, text in page.headings if level == 2]
    assert "Section aggregate (FAB++)" in names
    section = run.html.split('<h2 id="section-aggregate-fab">', 1)[1].split("<h2", 1)[0]
    table = _parse(section).tables[0]
    assert table[0] == ("th", ["profile", "Knowledge Retrieval", "Analytical Reasoning", "Options Trading", "overall",
                               "alpha (R, C, P)"])
    assert [cells[0] for _, cells in table[1:]] == ["reference", "naive", "random", "scripted_agent",
                                                    "scripted_agent (closed book)"]
    reference = table[1][1]
    # Knowledge: the 60 eval knowledge questions (100 each) and the 50 closed-book public questions (0 each: the
    # scripted agent knows nothing beyond the shipped data) -> 6000 / 110
    assert reference[1] == "54.55 (scripted_agent, 110 tasks)" and reference[2].startswith("100.00")
    assert reference[-2] == f"{0.30 * 6000 / 110 + 0.35 * 100 + 0.35 * 100:.2f}" == "86.36"
    assert reference[-1].startswith("n/a: zero cost")  # offline: FAB++'s alpha divides by ln(1 + 0)
    assert "<strong>86.36</strong>" in section  # the overall column is bold
    assert "the zero-cost rule" in section


def test_ids_in_the_page_are_unique(run):
    ids = _parse(run.html).ids
    assert len(ids) == len(set(ids)), sorted({i for i in ids if ids.count(i) > 1})


def test_every_png_of_the_run_is_embedded_exactly_once(run):
    _needs_matplotlib()
    pngs = sorted(run.dir.glob("*.png"))
    assert {p.name for p in pngs} >= {"options_dimensions.png", "audit_breakdown.png", "qa_topics.png",
                                      "section_aggregate.png"}
    assert {str(p) for p in pngs} == {f for f in run.card.files if f.endswith(".png")}
    for png in pngs:
        data = png.read_bytes()
        assert data.startswith(PNG_SIGNATURE)
        assert run.html.count(DATA_PNG + base64.b64encode(data).decode("ascii")) == 1, png.name
    page = _parse(run.html)
    assert len(page.images) == len(pngs) and all(img["src"].startswith(DATA_PNG) for img in page.images)
    assert run.html.count(DATA_PNG) == len(pngs)
    assert {img["alt"] for img in page.images} == {p.stem for p in pngs}


def _section(page: str, heading_id: str) -> str:
    """The HTML of one level-2 section (from its heading to the next level-2 heading)."""
    return page.split(f'<h2 id="{heading_id}">', 1)[1].split("<h2", 1)[0]


def test_each_section_shows_its_charts_under_its_tables(run):
    _needs_matplotlib()
    trading = _section(run.html, "fintrading-v0")
    assert trading.index("Per symbol") < trading.index('alt="sharpe_FinTrading-v0"') < trading.index(
        'alt="equity_FinTrading-v0_MSFT"')
    assert 'alt="spread_FinHedging-v0"' in _section(run.html, "finhedging-v0")
    assert 'alt="equity_FinReport-v0_MSFT"' in _section(run.html, "finreport-v0")
    assert 'alt="options_dimensions"' in _section(run.html, "options")
    assert 'alt="audit_breakdown"' in _section(run.html, "audit")
    assert 'alt="qa_topics"' in _section(run.html, "knowledge-and-analysis-finqa-v0")
    assert 'alt="section_aggregate"' in _section(run.html, "section-aggregate-fab")
    assert "## Charts" not in run.markdown  # every chart found its section


def test_agents_sit_beside_the_baselines_with_their_efficiency(run):
    for heading_id, env_id in (("fintrading-v0", "FinTrading-v0"), ("finhedging-v0", "FinHedging-v0"),
                               ("finreport-v0", "FinReport-v0")):
        section = _section(run.html, heading_id)
        assert f"{env_id}: agents through the text interface" in section
        assert "Agents through the text interface, per episode" in section
        efficiency = _parse(section.split("per episode", 1)[1]).tables[0]
        assert efficiency[0][1][:2] == ["symbol", "agent"] and "tool calls/decision" in efficiency[0][1]
        assert {cells[1] for _, cells in efficiency[1:]} == {"scripted_agent"} and len(efficiency) > 1
    assert "FinQA-v0: agents through the text interface" in _section(run.html, "knowledge-and-analysis-finqa-v0")


def test_mean_over_symbols_rows_carry_bootstrap_intervals(run):
    table = _parse(_section(run.html, "fintrading-v0")).tables[0]
    header = table[0][1]
    assert header[-2:] == ["CR % 95% CI", "SR (all days) 95% CI"]
    assert all(cells[1] == "2" for _, cells in table[1:])  # MSFT and AAPL
    for _, cells in table[1:]:  # each known mean inside its interval
        mean = cells[header.index("CR %")]
        lo, hi = (float(x) for x in cells[header.index("CR % 95% CI")].strip("[]").split(", "))
        assert lo <= float(mean) <= hi, cells
    from finenvs.tasks.market_section import _ci_cell

    assert _ci_cell([0.1], 100.0, 0) == "n/a" and _ci_cell([], 100.0, 0) == "n/a"  # one symbol: no interval


def test_mean_over_symbols_interval_with_several_symbols(tmp_path):
    from finenvs.evaluation.bench import BenchConfig, run_bench

    run_bench(BenchConfig(envs=["FinTrading-v0"], symbols=["AAPL", "MSFT", "NVDA"], agents=False, plots=False,
                          html=False, out=tmp_path, run_name="ci", progress=False))
    markdown = (tmp_path / "ci" / "scorecard.md").read_text()
    rows = [ln for ln in markdown.splitlines() if ln.startswith("| buy_and_hold ")]
    cells = [c.strip() for c in rows[0].strip("|").split("|")]
    lo, hi = (float(x) for x in cells[-2].strip("[]").split(","))
    assert cells[1] == "3" and lo <= float(cells[2]) <= hi


def test_the_page_stays_small(run):
    assert run.html_path.stat().st_size < 2_000_000


# ====================================================================== 2b. names from outside stay text
HOSTILE_NAMES = [
    "![x](/etc/finenvs-secret.png)",
    "[click](http://evil.example/a) and <img src=http://evil.example/p.png>",
    "a | b | c",
    "tick `code ![y](z.png)` tock",
    "back\\slash\\",
    "line\nbreak\r\n# heading\u2028more",
    "\\![escaped](q.png) \\\\![double](q.png)",
]


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_md_text_renders_a_name_as_exactly_its_text(name):
    from finenvs.text.markdown import md_text

    body, _ = markdown_to_html(md_text(name), {"q.png": DATA_PNG, "z.png": DATA_PNG})
    shown = "".join(ch if ch.isprintable() else " " for ch in name)
    assert re.fullmatch(r"<p>[^<>]*</p>", body), body  # one paragraph of text: no img, a, code or other tag
    assert html.unescape(body[3:-4]) == shown.strip()
    cell, _ = markdown_to_html(f"| name | n |\n|---|---|\n| {md_text(name)} | 1 |\n")
    assert _parse(cell).tables[0][1] == ("td", [shown.strip(), "1"])  # the table keeps its two columns


def test_write_html_embeds_only_the_listed_charts_inside_its_folder(tmp_path):
    png = _tiny_png()
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "chart.png").write_bytes(png)
    (folder / "planted.png").write_bytes(png + b"planted")
    (tmp_path / "outside.png").write_bytes(png + b"outside")
    markdown = (f"![chart](chart.png)\n![planted](planted.png)\n![abs]({tmp_path / 'outside.png'})\n"
                f"![up](../outside.png)\n![abs-listed]({folder / 'chart.png'})\n![web](http://evil.example/x.png)\n"
                "\nIn code: `![chart](chart.png)`.\n")
    page_text = write_html(markdown, folder / "page.html",
                           images=[folder / "chart.png", tmp_path / "outside.png"]).read_text()
    page = _parse(page_text)
    assert [img["alt"] for img in page.images] == ["chart"] and page.images[0]["src"].startswith(DATA_PNG)
    for other in ("planted", "abs", "up", "abs-listed", "web"):  # each stays text, never an <img>
        assert f"![{other}](" in page_text
    assert page_text.count(DATA_PNG) == 1 and "<code>![chart](chart.png)</code>" in page_text
    assert not re.search(r"(src|href)=[\"']?(https?:)?//", page_text)


def test_hostile_names_through_the_bench_render_as_text_and_embed_no_other_image(run, tmp_path):
    """The shared bench run, its names replaced by hostile ones (agent and model names, run name, symbol, episode
    label, an error), written again by the bench's own writer."""
    import copy

    from finenvs.evaluation.bench import write_scorecard

    secret = tmp_path / "secret.png"
    secret.write_bytes(_tiny_png() + b"host file")
    out = tmp_path / "hostile"
    shutil.copytree(run.dir, out)
    planted = out / "planted.png"  # in the run folder, not written by the bench
    planted.write_bytes(_tiny_png() + b"planted")
    agent = (f"evil ![x]({secret}) [click](http://evil.example/a) <img src=http://evil.example/p.png> a|b "
             "`![c](planted.png)`\n# heading")
    names = {"agent": agent, "run": "run ![r](planted.png) ![q](qa_topics.png)",
             "symbol": "SPY![s](http://evil.example/s.png)", "label": f"![l]({secret})"}
    card = copy.deepcopy(run.card)
    card.run_dir = out
    card.files = [str(out / Path(f).name) for f in run.card.files if f.endswith(".png")]
    card.config = {**card.config, "run": names["run"]}
    for agent_run in card.agents:
        if agent_run["agent"] == "scripted_agent":
            agent_run["agent"] = agent
            for episode in agent_run["episodes"]:
                episode["label"] = names["label"]
    for result in card.results:
        if result.efficiency is not None:
            result.policy, result.symbol = agent, names["symbol"]
    if card.aggregate:
        card.aggregate["profiles"] = {agent if k == "scripted_agent" else k: v
                                      for k, v in card.aggregate["profiles"].items()}
    relabelled = 0
    for tables in (card.herculean or {}).values():
        for table in tables:
            for row in table["rows"]:
                row["agent"] = agent if row["agent"] == "scripted_agent" else row["agent"]
                row["cells"] = {names["label"] if k == "MSFT" else k: v for k, v in row["cells"].items()}
            relabelled += "MSFT" in table["labels"]
            table["labels"] = [names["label"] if label == "MSFT" else label for label in table["labels"]]
    assert relabelled  # the HERCULEAN tables name their episodes (here MSFT): the label is exercised
    card.errors = [{"env": "FinTrading-v0", "symbol": names["symbol"], "policy": agent, "error": agent}]
    write_scorecard(card)
    markdown = (out / "scorecard.md").read_text(encoding="utf-8")
    page_text = (out / "scorecard.html").read_text(encoding="utf-8")
    page = _parse(page_text)
    charts = [Path(f) for f in card.files if f.endswith(".png")]
    # the page embeds the bench's charts and nothing else: not the host file, not the planted one, no URL
    assert len(page.images) == len(charts) == page_text.count(DATA_PNG) and all(
        img["src"].startswith(DATA_PNG) for img in page.images)
    for path in (secret, planted):
        assert base64.b64encode(path.read_bytes()).decode("ascii") not in page_text
    assert all(link.startswith("#") for link in page.links) and "<img src=http" not in page_text  # text only
    # in the Markdown every image reference is a chart of the bench's (the names' are escaped), no raw HTML
    assert set(re.findall(r"(?<!\\)!\[[^\]]*\]\(([^)]+)\)", markdown)) == {p.name for p in charts}
    assert not re.search(r"(?<!\\)<img", markdown)
    # the names read as written (a line break as a space) and every table keeps its shape
    shown = agent.replace("\n", " ")
    cells = [cell for table in page.tables for _, row in table for cell in row]
    assert cells.count(shown) >= 3  # the agents table, the per-episode table, the aggregate
    assert any(cell == names["symbol"] for cell in cells)
    assert any(cell.startswith(names["label"] + " ") for cell in cells)  # a HERCULEAN column header
    assert all(len({len(row) for _, row in table}) == 1 for table in page.tables)
    assert page.headings[0][2] == f"finenvs scorecard — {names['run']}"
    assert f"<li>FinTrading-v0 {names['symbol']} {shown}: {shown}</li>" in html.unescape(page_text)


# ====================================================================== 3. the page in headless Chromium
def _browser() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    pytest.skip("no browser is installed (chromium, chromium-browser or google-chrome): the headless check needs one")


def _chromium(browser: str, profile: Path, *args: str) -> subprocess.CompletedProcess:
    command = [browser, "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={profile}", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


def test_chromium_decodes_every_image_and_shows_every_section(run, section_headings, tmp_path):
    browser = _browser()
    _needs_matplotlib()
    proc = _chromium(browser, tmp_path / "profile", "--virtual-time-budget=10000", "--dump-dom",
                     run.html_path.resolve().as_uri())
    assert proc.returncode == 0, proc.stderr[-2000:]
    dom = proc.stdout
    body = _parse(dom).body
    loaded, total = body.get("data-images-loaded"), body.get("data-images-total")
    assert loaded is not None and total is not None, "the page's load script did not run"
    assert int(loaded) == int(total) == len(list(run.dir.glob("*.png"))) > 0
    headings = [text for level, _, text in _parse(dom).headings if level == 2]
    assert headings == section_headings
    for text in section_headings:
        assert html.escape(text, quote=False) in dom


def test_chromium_screenshot(run, tmp_path):
    browser = _browser()
    shot = tmp_path / "shot.png"
    proc = _chromium(browser, tmp_path / "profile", f"--screenshot={shot}", "--window-size=1280,2000",
                     run.html_path.resolve().as_uri())
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert shot.is_file() and shot.stat().st_size > 10_000
    data = shot.read_bytes()
    assert data.startswith(PNG_SIGNATURE)
    width, height = struct.unpack(">II", data[16:24])
    assert (width, height) == (1280, 2000)


# ====================================================================== 4. the page driven by Playwright
VIEWPORT = {"width": 1280, "height": 900}


@pytest.fixture(scope="module")
def chromium():
    """One headless Chromium for the module's Playwright tests (Debian's chromium, see tests/headless.py)."""
    _needs_matplotlib()
    from headless import launched

    with launched() as browser:
        yield browser


@pytest.fixture(scope="module")
def browser_page(run, chromium):
    """The run's page in headless Chromium at 1280x900, via Playwright with Debian's chromium."""
    page = chromium.new_page(viewport=VIEWPORT)
    page.goto(run.html_path.resolve().as_uri())
    page.wait_for_load_state("load")
    yield page
    page.close()


def test_playwright_no_horizontal_overflow_at_1280(browser_page, tmp_path):
    page = browser_page
    assert page.evaluate("innerWidth") == VIEWPORT["width"]
    scroll_width = page.evaluate("document.documentElement.scrollWidth")
    assert scroll_width <= page.evaluate("innerWidth"), f"the page is {scroll_width}px wide"
    wide = page.evaluate("""Array.from(document.querySelectorAll('body *')).filter(
        e => e.getBoundingClientRect().right > innerWidth + 1 && !e.closest('.table-wrap')).map(e => e.tagName)""")
    assert wide == []
    page.screenshot(path=str(tmp_path / "top.png"))
    page.screenshot(path=str(tmp_path / "full.png"), full_page=True)
    assert (tmp_path / "full.png").stat().st_size > 10_000


def test_playwright_every_image_is_loaded_and_visible(browser_page, run, tmp_path):
    page = browser_page
    images = page.evaluate("""Array.from(document.images).map(i => ({alt: i.alt, complete: i.complete,
        natural: i.naturalWidth, width: i.getBoundingClientRect().width, height: i.getBoundingClientRect().height,
        visible: getComputedStyle(i).visibility === 'visible' && getComputedStyle(i).display !== 'none'}))""")
    assert len(images) == len(list(run.dir.glob("*.png"))) > 0
    for img in images:
        assert img["complete"] and img["natural"] > 0, img
        assert img["visible"] and img["width"] > 100 and img["height"] > 50, img
        assert img["width"] <= VIEWPORT["width"], img
    chart = page.locator('img[alt="sharpe_FinTrading-v0"]')
    chart.scroll_into_view_if_needed()
    assert chart.is_visible()
    page.screenshot(path=str(tmp_path / "trading_chart.png"))


def _column(page, table: int, col: int) -> list[str]:
    return page.evaluate(f"""Array.from(document.querySelectorAll('table')[{table}].tBodies[0].rows).map(
        r => r.cells[{col}].textContent.trim())""")


def _numbers(cells: list[str]) -> list[float]:
    return [float(c) for c in cells if re.fullmatch(r"-?\d+(\.\d+)?", c)]


def test_playwright_clicking_a_header_sorts_the_table(browser_page, tmp_path):
    page = browser_page
    tables = page.evaluate("""Array.from(document.querySelectorAll('table')).map(t => Array.from(
        t.tHead.rows[0].cells).map(c => c.textContent.trim()))""")
    # the FinTrading-v0 per-symbol table: policies in name order, sorted here by CR %
    index = next(k for k, head in enumerate(tables) if head[:3] == ["symbol", "policy", "CR %"])
    before = _column(page, index, 2)
    values = _numbers(before)
    assert len(values) >= 3 and values != sorted(values), "pick a table that is not sorted by CR % already"
    header = page.locator("table").nth(index).locator("thead th").nth(2)
    header.scroll_into_view_if_needed()
    header.click()
    ascending = _column(page, index, 2)
    assert _numbers(ascending) == sorted(values) and sorted(ascending) == sorted(before)
    assert header.get_attribute("aria-sort") == "ascending"
    page.screenshot(path=str(tmp_path / "sorted.png"))
    header.click()
    assert _numbers(_column(page, index, 2)) == sorted(values, reverse=True)
    assert header.get_attribute("aria-sort") == "descending"
    # a text column sorts by name
    policy = page.locator("table").nth(index).locator("thead th").nth(1)
    policy.click()
    names = _column(page, index, 1)
    assert names == sorted(names, key=str.lower) or names == sorted(names)


# ====================================================================== 5. charts: styles, legends, labels
def _box_overlap(a, b, tolerance: float = 0.5) -> bool:
    """Whether two display-space boxes overlap by more than ``tolerance`` pixels both ways."""
    return (min(a.x1, b.x1) - max(a.x0, b.x0) > tolerance) and (min(a.y1, b.y1) - max(a.y0, b.y0) > tolerance)


def _chart_problems(fig) -> list[str]:
    """Legends over an axis label, a tick label, a title or an axes' data area; unrotated x tick labels closer
    than a letter's width. Measured on the drawn figure (matplotlib's bounding boxes, not pixels)."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    legends = [*fig.legends, *(ax.get_legend() for ax in fig.axes if ax.get_legend() is not None)]
    problems = []
    for ax in fig.axes:
        (x_lo, x_hi), (y_lo, y_hi) = sorted(ax.get_xlim()), sorted(ax.get_ylim())
        xticks = [t for t in ax.get_xticklabels() if t.get_visible() and t.get_text()
                  and x_lo <= t.get_position()[0] <= x_hi]
        yticks = [t for t in ax.get_yticklabels() if t.get_visible() and t.get_text()
                  and y_lo <= t.get_position()[1] <= y_hi]
        texts = [t for t in (ax.xaxis.label, ax.yaxis.label, ax.title) if t.get_visible() and t.get_text()]
        name = ax.get_title() or ax.get_ylabel() or "axes"
        for legend in legends:
            box = legend.get_window_extent(renderer)
            if _box_overlap(box, ax.bbox):
                problems.append(f"{name}: the legend covers the data area")
            for text in [*texts, *xticks, *yticks]:
                if _box_overlap(box, text.get_window_extent(renderer)):
                    problems.append(f"{name}: the legend covers {text.get_text()!r}")
        flat = sorted((t for t in xticks if t.get_rotation() == 0), key=lambda t: t.get_position()[0])
        for left, right in zip(flat, flat[1:], strict=False):  # a gap narrower than a letter reads as one label
            gap = right.get_window_extent(renderer).x0 - left.get_window_extent(renderer).x1
            if gap < 0.6 * left.get_fontsize() * fig.dpi / 72:
                problems.append(f"{name}: x labels {left.get_text()!r} and {right.get_text()!r} run together")
    return problems


def test_bars_wrap_group_names_and_show_zero_scores():
    pytest.importorskip("matplotlib")
    from finenvs.charts import MIN_VISIBLE_BAR, bars, figure

    fig = figure(9, 4)
    ax = fig.subplots()
    groups = ["Knowledge Retrieval", "Analytical Reasoning", "Options Trading", "Overall"]
    bars(ax, groups, {"reference": [55, 100, 100, 86], "naive": [0.36, 0.0, 0.0, 0.11], "missing": [None] * 4},
         "score 0-100")
    assert [t.get_text() for t in ax.get_xticklabels()] == ["Knowledge\nRetrieval", "Analytical\nReasoning",
                                                            "Options\nTrading", "Overall"]
    naive = ax.containers[1]
    assert all(p.get_height() < MIN_VISIBLE_BAR for p in naive)
    marks = [c for c in ax.collections if len(c.get_segments()) == 1
             and tuple(c.get_colors()[0]) == tuple(naive.patches[0].get_facecolor())]
    assert len(marks) == 4  # each (near-)zero score shows as a tick of the series' colour
    assert not any(len(c.get_segments()) == 1 and tuple(c.get_colors()[0]) == tuple(ax.containers[2].patches[0]
                   .get_facecolor()) for c in ax.collections)  # an unknown score is not drawn as a zero
    assert _chart_problems(fig) == []


def test_every_chart_axes_cycles_colour_blind_safe_colours_with_line_styles():
    pytest.importorskip("matplotlib")
    from matplotlib.colors import to_hex

    from finenvs.charts import SERIES_COLOURS, figure

    fig = figure(9, 4.6)
    top, bottom = fig.subplots(2, 1)
    top_lines = [top.plot(range(5), [k] * 5)[0] for k in range(8)]
    bottom_lines = [bottom.plot(range(5), [k] * 5)[0] for k in range(7)]
    styles = [(to_hex(line.get_color()), line.get_linestyle()) for line in top_lines]
    assert [c for c, _ in styles] == [c.lower() for c in SERIES_COLOURS]  # eight distinct colours in order
    assert [s for _, s in styles[:4]] == ["-", "--", "-.", ":"]  # and a dash pattern of their own
    assert all(s != "-" for _, s in styles[1:6])  # no second solid line before the seventh
    # the n-th curve of the drawdown panel has the n-th curve's style of the equity panel
    assert [(to_hex(a.get_color()), a.get_linestyle()) for a in bottom_lines] == [
        (to_hex(b.get_color()), b.get_linestyle()) for b in top_lines[:7]]
    assert "#d62728" not in {c for c, _ in styles} and "#8c564b" not in {c for c, _ in styles}  # tab10 red, brown


def test_a_legend_below_sits_under_the_x_axis_label_and_is_drawn_once():
    pytest.importorskip("matplotlib")
    from finenvs.charts import figure, outside_legend

    fig = figure(9, 3)
    axes = fig.subplots(1, 2)
    for ax in axes:
        for k, name in enumerate(("ACC", "SER", "EER", "CER")):
            ax.barh(["random", "extract_only", "oracle"], [25] * 3, left=[25 * k] * 3, label=name)
        ax.set_xlabel("% of answers (ACC + SER + EER + CER = 100)")
        outside_legend(ax, below=True, ncol=4)
    assert len(fig.legends) == 1 and not any(ax.get_legend() for ax in axes)
    assert _chart_problems(fig) == []
    renderer = fig.canvas.get_renderer()
    assert fig.legends[0].get_window_extent(renderer).y1 <= axes[0].xaxis.label.get_window_extent(renderer).y0


def test_no_chart_of_the_bench_has_a_legend_over_its_labels_or_data(run, tmp_path, monkeypatch):
    """Every chart the bench draws (the shared run's scorecard drawn again into a scratch folder), checked on the
    figure itself before it is saved."""
    _needs_matplotlib()
    import copy

    from matplotlib.figure import Figure

    from finenvs.evaluation.bench.plots import write_plots

    drawn: dict[str, Figure] = {}

    def recording(self, fname, *args, **kwargs):  # keeps the figure; a 1x1 PNG stands in for the rendering
        drawn[f"#{len(drawn)}"] = self
        fname.write(_tiny_png())

    monkeypatch.setattr(Figure, "savefig", recording)
    card = copy.deepcopy(run.card)
    card.run_dir = tmp_path
    files = write_plots(card)
    assert len(drawn) == len(files) >= 8
    names = [Path(f).name for f in files]
    assert {"audit_breakdown.png", "section_aggregate.png", "qa_topics.png", "options_dimensions.png"} <= set(names)
    problems = {name: _chart_problems(fig) for name, fig in zip(names, drawn.values(), strict=True)}
    assert {name: found for name, found in problems.items() if found} == {}


# ====================================================================== 6. the page at 800 and 1,280 px
HERCULEAN_SYMBOLS = ["MSFT", "TSLA", "AAPL", "NVDA"]


@pytest.fixture(scope="module")
def wide_page(run, tmp_path_factory):
    """The shared run's page with HERCULEAN Tables 2 and 3 as wide as the default bench writes them (their four
    symbols, 13 and 17 columns; here MSFT's cells under each name), written by the bench's own writer."""
    import copy

    from finenvs.evaluation.bench import write_scorecard

    out = tmp_path_factory.mktemp("wide") / "wide"
    shutil.copytree(run.dir, out)
    card = copy.deepcopy(run.card)
    card.run_dir = out
    card.files = [str(out / Path(f).name) for f in run.card.files if f.endswith(".png")]
    widened = 0
    for tables in (card.herculean or {}).values():
        for table in tables:
            if table["labels"] == ["MSFT", "AAPL"]:
                table["labels"] = list(HERCULEAN_SYMBOLS)
                for row in table["rows"]:
                    row["cells"] = {s: row["cells"]["MSFT"] for s in HERCULEAN_SYMBOLS} if "MSFT" in row["cells"] \
                        else row["cells"]
                widened += 1
    assert widened >= 4  # Trading and Market Insights, backtest and live
    write_scorecard(card)
    return out / "scorecard.html"


@pytest.fixture(scope="module")
def browser_pages(wide_page, chromium):
    """The wide page open in headless Chromium at each width of :data:`headless.WIDTHS` (900 px high)."""
    from headless import WIDTHS, offline_page

    pages = {}
    for width in WIDTHS:
        page, outside = offline_page(chromium, width)
        page.goto(wide_page.resolve().as_uri())
        page.wait_for_load_state("load")
        pages[width] = (page, outside)
    yield pages
    for page, _ in pages.values():
        page.close()


_TABLES_JS = """() => Array.from(document.querySelectorAll('table')).map((t, i) => {
    const wrap = t.closest('.table-wrap'), frame = wrap && wrap.parentElement;
    let e = frame; while (e && !/^H[1-6]$/.test(e.tagName)) e = e.previousElementSibling;
    const hint = frame && frame.previousElementSibling;
    const first = (t.tBodies.length && t.tBodies[0].rows.length ? t.tBodies[0].rows[0] : t.tHead.rows[0]).cells[0];
    const box = wrap.getBoundingClientRect();
    return {index: i, heading: e ? e.textContent : '', columns: t.tHead.rows[0].cells.length,
            header: Array.from(t.tHead.rows[0].cells).map(c => c.textContent.trim()),
            overflows: wrap.scrollWidth > wrap.clientWidth + 1, framed: frame.classList.contains('table-frame'),
            moreRight: frame.classList.contains('more-right'), moreLeft: frame.classList.contains('more-left'),
            shadow: getComputedStyle(frame, '::after').opacity,
            hint: !!hint && hint.classList.contains('scroll-hint') && !hint.hidden && hint.offsetHeight > 0,
            sticky: getComputedStyle(first).position, boxLeft: box.left, boxRight: box.right};
})"""


@pytest.mark.parametrize("width", [800, 1280])
def test_every_table_shows_its_columns_or_says_it_scrolls(browser_pages, width, tmp_path):
    page, outside = browser_pages[width]
    assert outside == []  # the page loads nothing from anywhere
    assert page.evaluate("document.documentElement.scrollWidth") <= width  # the page itself never scrolls sideways
    tables = page.evaluate(_TABLES_JS)
    assert len(tables) >= 10 and all(t["framed"] for t in tables)
    for t in tables:
        assert t["boxRight"] <= width, t["heading"]
        if t["overflows"]:  # the cue: a fixed first column, a shadow on the right, a line above the table
            assert (t["sticky"], t["moreRight"], t["shadow"], t["hint"]) == ("sticky", True, "1", True), t
        else:  # no false cue on a table that shows every column
            assert (t["moreRight"], t["moreLeft"], t["hint"]) == (False, False, False), t
    wide = [t for t in tables if t["overflows"]]
    page.screenshot(path=str(tmp_path / f"page_{width}.png"))
    for t in wide:  # scrolled to its end, a table still shows its first column and now says more is on the left
        page.evaluate(f"""() => {{const w = document.querySelectorAll('table')[{t['index']}].closest('.table-wrap');
            w.scrollLeft = w.scrollWidth; w.dispatchEvent(new Event('scroll'));}}""")
        state = page.evaluate(f"""() => {{const t = document.querySelectorAll('table')[{t['index']}];
            const w = t.closest('.table-wrap'), box = w.getBoundingClientRect();
            const first = t.tHead.rows[0].cells[0].getBoundingClientRect();
            const cells = t.tHead.rows[0].cells, last = cells[cells.length - 1].getBoundingClientRect();
            return {{firstIn: first.left >= box.left - 1 && first.right <= box.right,
                     lastIn: last.right <= box.right + 1, left: w.parentElement.classList.contains('more-left'),
                     right: w.parentElement.classList.contains('more-right')}}; }}""")
        assert state == {"firstIn": True, "lastIn": True, "left": True, "right": False}, (t["heading"], state)


def test_key_tables_fit_without_scrolling(browser_pages):
    """HERCULEAN Tables 2 and 3 at 1,280 px, and the FAB++ aggregate (its overall column) at 800 px, show every
    column without scrolling."""
    for width, wanted in ((1280, lambda t: t["heading"].startswith(("Table 2", "Table 3"))),
                          (800, lambda t: t["header"][:1] == ["profile"] and "overall" in t["header"])):
        page, _ = browser_pages[width]
        tables = [t for t in page.evaluate(_TABLES_JS) if wanted(t)]
        assert tables, width
        if width == 1280:
            assert max(t["columns"] for t in tables) == 1 + 4 * 4  # Market Insights: four symbols, four columns
        assert [t["heading"] for t in tables if t["overflows"]] == [], width
        if width == 800:
            overall = page.evaluate("""() => { const th = Array.from(document.querySelectorAll('th')).find(
                c => c.textContent.trim() === 'overall'); th.scrollIntoView(); return th.getBoundingClientRect().right; }""")
            assert overall <= 800
