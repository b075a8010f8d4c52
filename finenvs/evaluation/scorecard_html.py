"""The scorecard as one self-contained HTML page, and the chart of the section aggregate.

:func:`write_html` renders the scorecard's Markdown (what
:func:`~finenvs.evaluation.bench.render_markdown` writes) to HTML with markdown-it-py
(CommonMark and pipe tables; raw HTML, links and entities stay text) and embeds the PNG charts the bench wrote into its folder as ``data:`` URIs, so
the page opens anywhere, offline, with no other file. Only those: an image
reference that is not one of the bench's charts (a name from outside written as
``![x](/abs/path.png)`` or a URL, were one to get past
:func:`finenvs.text.markdown.md_text`) stays text, so the page never embeds a host
file nor loads a remote image. The page is laid out to be read in windows from 800 to 1,280 px:

* a table's headers, and its cells of several words, wrap when the table would
  not fit otherwise (HERCULEAN Tables 2 and 3 fit at 1,280 px, the FAB++ aggregate
  at 800 px); numbers never wrap;
* every table sits in its own scroll box (a wide table scrolls sideways inside it,
  a long one downwards under a sticky header), so the page itself never
  overflows horizontally and a section's charts stay right below its tables;
  a box that hides columns says so: its first column stays in place, a shadow
  marks the side where columns are hidden (class ``more-right`` / ``more-left``
  on the ``.table-frame`` the script puts around it) and a line above it says
  the table scrolls sideways;
* a paragraph of images (a section's charts) is a responsive grid;
* clicking a column header sorts the table by that column (numbers numerically,
  ``n/a`` and ``—`` last; a second click reverses), with a small inline script;
  the same script frames the tables (above) and left-aligns the columns of text.

The script also records, on ``<body data-images-loaded>``, how many images
decoded (the headless-browser test reads it).

Charts are saved by :func:`save_png`: a palette PNG (at most 256 colours,
``optimize``) at :data:`CHART_DPI`, a quarter of the size of matplotlib's RGBA
output, so a full scorecard stays well under 2 MB. Legends sit outside the axes
(:func:`outside_legend`), never over bars or lines.

Each family's charts are its bench section's (:meth:`finenvs.tasks.section.Section.plots`, in the
family's folder); :func:`aggregate_plot` draws the FAB++ section aggregate.
"""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from finenvs.charts import CHART_DPI, bars, figure, have_matplotlib, outside_legend, save_png

_CSS = """
*{box-sizing:border-box}
body{font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;max-width:1200px;margin:1.5em auto;padding:0 1em;
color:#1b1f24;line-height:1.45;overflow-wrap:anywhere}
h1{border-bottom:2px solid #d0d7de;padding-bottom:.3em}h2{border-bottom:1px solid #d0d7de;padding-bottom:.2em;
margin-top:2em}h3{margin-top:1.4em}
.table-frame{position:relative;width:fit-content;max-width:100%;margin:.8em 0}
.table-wrap{width:fit-content;max-width:100%;max-height:32em;overflow:auto;margin:.8em 0;border:1px solid #d0d7de;border-radius:4px}
.table-frame>.table-wrap{margin:0}
.table-frame::after{content:"";position:absolute;top:1px;right:1px;bottom:1px;width:22px;pointer-events:none;
opacity:0;transition:opacity .15s;background:linear-gradient(to left,rgba(27,31,36,.38),rgba(27,31,36,0))}
.table-frame.more-right::after{opacity:1}
.scroll-hint{font-size:.78em;color:#57606a;margin:.8em 0 -.6em}.scroll-hint[hidden]{display:none}
table{border-collapse:separate;border-spacing:0;font-size:.86em}
th,td{border-right:1px solid #d0d7de;border-bottom:1px solid #d0d7de;padding:3px 7px;text-align:right;
overflow-wrap:normal;background:#fff}
th{white-space:normal;vertical-align:bottom;min-width:3.5em}td{white-space:nowrap}
td:first-child{white-space:normal;min-width:8em}
th{background:#f6f8fa;position:sticky;top:0;z-index:2;cursor:pointer;user-select:none}
th:hover{background:#eaeef2}th[aria-sort=ascending]::after{content:" \\25B2";font-size:.75em}
th[aria-sort=descending]::after{content:" \\25BC";font-size:.75em}
td:first-child,th:first-child{text-align:left;position:sticky;left:0}td:first-child{z-index:1}
th:first-child{z-index:3}
.more-left td:first-child,.more-left th:first-child{box-shadow:5px 0 6px -3px rgba(27,31,36,.35)}
tbody tr:nth-child(even) td{background:#fafbfc}
td.wrap{white-space:normal;min-width:9em}td.text,th.text{text-align:left}
code{background:#f0f2f4;padding:0 .25em;border-radius:3px}
.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(min(100%,560px),1fr));gap:.8em;margin:.8em 0}
.charts.one{display:block}.charts.one img{width:auto;max-width:100%}
.charts img{width:100%;height:auto;border:1px solid #eaeef2;display:block}
img{max-width:100%;height:auto}
nav{background:#f6f8fa;padding:.6em 1em;border-radius:6px;line-height:1.9}nav a{margin-right:1em;white-space:nowrap}
"""
_SCRIPT = """<script>
window.addEventListener('load',function(){var n=0;for(var i of document.images){if(i.complete&&i.naturalWidth>0)n++;}
document.body.setAttribute('data-images-loaded',String(n));
document.body.setAttribute('data-images-total',String(document.images.length));});
document.addEventListener('DOMContentLoaded',function(){
document.querySelectorAll('table').forEach(function(t){var w=t.parentElement;
if(!w.classList.contains('table-wrap')){w=document.createElement('div');w.className='table-wrap';
t.parentNode.insertBefore(w,t);w.appendChild(t);}
var f=document.createElement('div');f.className='table-frame';w.parentNode.insertBefore(f,w);f.appendChild(w);
var h=document.createElement('p');h.className='scroll-hint';h.hidden=true;
h.textContent='\\u2190 wider than the window: scroll the table sideways (its first column stays) \\u2192';
f.parentNode.insertBefore(h,f);
t.querySelectorAll('td').forEach(function(td){var x=td.textContent.trim();if(x.length>16&&/\\s/.test(x))td.classList.add('wrap');});
var heads=t.querySelectorAll('thead th');heads.forEach(function(th,col){var cells=Array.prototype.map.call(t.tBodies.length?t.tBodies[0].rows:[],
function(r){return r.cells[col];}).filter(function(c){return c&&!/^(n\\/a|\\u2014|-|)$/.test(c.textContent.trim());});
if(col>0&&cells.length&&cells.every(function(c){return !/^[-+\\[(]?\\d/.test(c.textContent.trim());})){th.classList.add('text');
cells.forEach(function(c){c.classList.add('text');});}});
function cue(){var m=w.scrollWidth-w.clientWidth;f.classList.toggle('more-right',m>1&&w.scrollLeft<m-1);
f.classList.toggle('more-left',w.scrollLeft>1);h.hidden=m<=1;}
w.addEventListener('scroll',cue,{passive:true});window.addEventListener('resize',cue);cue();});
function key(td){var t=td?td.textContent.trim():'';var m=t.match(/^\\[?([-+]?\\d[\\d,]*\\.?\\d*(e[-+]?\\d+)?)/i);
return m?{n:parseFloat(m[1].replace(/,/g,'')),t:t}:{n:null,t:t};}
function cmp(a,b){if(a.n!==null&&b.n!==null)return a.n-b.n;if(a.n!==null)return -1;if(b.n!==null)return 1;
return a.t.localeCompare(b.t);}
document.querySelectorAll('table').forEach(function(table){var heads=table.querySelectorAll('thead th');
heads.forEach(function(th,col){th.title='sort by this column';th.addEventListener('click',function(){
var dir=th.getAttribute('aria-sort')==='ascending'?-1:1;heads.forEach(function(h){h.removeAttribute('aria-sort');});
th.setAttribute('aria-sort',dir>0?'ascending':'descending');var body=table.tBodies[0];
var rows=Array.prototype.slice.call(body.rows).map(function(r,i){return {r:r,k:key(r.cells[col]),i:i};});
rows.sort(function(a,b){var na=a.k.n===null&&!a.k.t.match(/\\w/)||a.k.t==='n/a';
var nb=b.k.n===null&&!b.k.t.match(/\\w/)||b.k.t==='n/a';if(na!==nb)return na?1:-1;
return dir*cmp(a.k,b.k)||a.i-b.i;});rows.forEach(function(x){body.appendChild(x.r);});});});});});
</script>"""


_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")  # CommonMark: a backslash before ASCII punctuation keeps it literal
_IMAGE = re.compile(r"!\[([^\]]*)\]\(([^)]+)\)")


def _plain(text: str) -> str:
    """Markdown text without its backslash escapes (a heading in the page's navigation)."""
    return _ESCAPE.sub(r"\1", text)


def _anchor(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "section"


def _ids(texts: list[str]) -> list[str]:
    """Unique ids for headings in page order: a repeated heading gets -2, -3, ..."""
    seen: dict[str, int] = {}
    taken: set[str] = set()
    out = []
    for text in texts:
        base = _anchor(text)
        n = seen.get(base, 0)
        ident = base if n == 0 else f"{base}-{n + 1}"
        while ident in taken:
            n += 1
            ident = f"{base}-{n + 1}"
        seen[base] = n + 1
        taken.add(ident)
        out.append(ident)
    return out


def _parser() -> Any:
    """CommonMark with pipe tables (markdown-it-py), and nothing that reaches outside the page: raw HTML is shown as
    text, links, autolinks and entities stay text, and an image becomes an ``<img>`` only through :func:`_image`."""
    try:
        from markdown_it import MarkdownIt
    except ImportError as exc:
        raise ImportError("scorecard.html needs markdown-it-py: pip install 'finenvs[plot]'") from exc
    md = MarkdownIt("commonmark", {"html": False}).enable("table").disable(["link", "autolink", "entity"])
    # an image's source as written (not percent-encoded): it is matched against the bench's own charts
    md.normalizeLink = lambda url: url  # type: ignore[method-assign]
    md.add_render_rule("image", _image)
    md.add_render_rule("softbreak", lambda self, tokens, idx, options, env: "" if env.get("charts") else " ")
    md.add_render_rule("table_open", lambda self, tokens, idx, options, env: '<div class="table-wrap"><table>')
    md.add_render_rule("table_close", lambda self, tokens, idx, options, env: "</table></div>")
    for cell in ("th_open", "td_open"):  # alignment is the page's CSS (numbers right, the first column left)
        md.add_render_rule(cell, lambda self, tokens, idx, options, env: f"<{tokens[idx].tag}>")
    md.add_render_rule("paragraph_open", _paragraph_open)
    md.add_render_rule("paragraph_close", _paragraph_close)
    return md


def _image(self: Any, tokens: list[Any], idx: int, options: Any, env: dict[str, Any]) -> str:
    """An ``<img>`` when ``env["images"]`` names its source (a chart the bench wrote); otherwise the reference as
    text."""
    token = tokens[idx]
    src = token.attrGet("src") or ""
    alt = self.renderInlineAsText(token.children or [], options, env)
    if src not in env["images"]:
        return html.escape(f"![{token.content}]({src})", quote=False)
    return f'<img alt="{html.escape(alt)}" src="{html.escape(env["images"][src])}">'


def _only_images(inline: Any) -> int:
    """How many images a paragraph holds when it holds nothing else (a section's charts), else 0."""
    children = inline.children or [] if inline is not None and inline.type == "inline" else []
    if any(c.type not in ("image", "softbreak") and not (c.type == "text" and not c.content.strip())
           for c in children):
        return 0
    return sum(c.type == "image" for c in children)


def _paragraph_open(self: Any, tokens: list[Any], idx: int, options: Any, env: dict[str, Any]) -> str:
    if tokens[idx].hidden:  # a tight list item's paragraph
        return ""
    n = _only_images(tokens[idx + 1])
    env["charts"] = bool(n)  # the line breaks between a section's charts are no text
    return '<div class="charts one">' if n == 1 else '<div class="charts">' if n else "<p>"


def _paragraph_close(self: Any, tokens: list[Any], idx: int, options: Any, env: dict[str, Any]) -> str:
    if tokens[idx].hidden:
        return ""
    env["charts"] = False
    return "</div>" if _only_images(tokens[idx - 1]) else "</p>"


_TAG_BREAK = re.compile(r"\n(?=<)|(?<=>)\n")  # the renderer's line breaks between tags (text never holds < or >)


def markdown_to_html(markdown: str, images: dict[str, str] | None = None) -> tuple[str, list[tuple[int, str]]]:
    """(HTML body, [(level, heading)]) of the scorecard's Markdown, one top-level block per line.

    ``images`` maps an image reference's source to the ``src`` of its ``<img>``; a reference it does not name
    stays text. Headings get unique ids (``## Knowledge (FinQA-v0)`` -> ``id="knowledge-finqa-v0"``).
    """
    md = _parser()
    env = {"images": images or {}}
    tokens = md.parse(markdown.replace("\x00", ""), env)
    headings = [(int(t.tag[1]), tokens[i + 1].content) for i, t in enumerate(tokens) if t.type == "heading_open"]
    for token, ident in zip((t for t in tokens if t.type == "heading_open"), _ids([t for _, t in headings]),
                            strict=True):
        token.attrSet("id", ident)
    blocks, start = [], 0
    for i, token in enumerate(tokens):
        if token.level == 0 and token.nesting <= 0:  # the end of a top-level block
            blocks.append(_TAG_BREAK.sub("", md.renderer.render(tokens[start:i + 1], md.options, env)))
            start = i + 1
    return "\n".join(b for b in blocks if b), headings


def write_html(markdown: str, path: Path, title: str = "finenvs scorecard", *,
               images: Iterable[Path | str] = ()) -> Path:
    """Write the self-contained page of ``markdown``.

    Args:
        markdown: The scorecard's Markdown.
        path: The page to write.
        title: The page's title.
        images: The PNG charts the bench wrote. An image reference of the Markdown is embedded (as a ``data:``
            URI) only when it is a relative path, inside ``path``'s folder, to one of them; any other image
            reference (an absolute path, ``..``, a URL, a file the bench did not write) is shown as text, never as
            an ``<img>``.
    """
    path = Path(path)
    folder = path.parent.resolve()
    written = {Path(p).resolve() for p in images}
    embedded = {}
    for src in dict.fromkeys(m.group(2) for m in _IMAGE.finditer(markdown)):
        relative = not Path(src).is_absolute() and ".." not in Path(src).parts and "\\" not in src
        file = (folder / src).resolve()
        if relative and file in written and file.is_relative_to(folder) and file.suffix.lower() == ".png" \
                and file.is_file():
            embedded[src] = "data:image/png;base64," + base64.b64encode(file.read_bytes()).decode("ascii")
    body, headings = markdown_to_html(markdown, embedded)
    ids = _ids([t for _, t in headings])
    nav = " ".join(f'<a href="#{ident}">{html.escape(_plain(t))}</a>'
                   for (level, t), ident in zip(headings, ids, strict=True) if level == 2)
    page = (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title>"
            f"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><style>{_CSS}</style>"
            f"{_SCRIPT}</head>\n<body>\n<nav>{nav}</nav>\n{body}\n</body></html>\n")
    path.write_text(page, encoding="utf-8")
    return path


def aggregate_plot(card: Any) -> list[Path]:
    """The FAB++ section aggregate by profile and agent."""
    if not card.aggregate or not have_matplotlib():
        return []
    from finenvs.scoring.aggregate import SECTION_NAMES

    names = list(card.aggregate["weights"])
    fig = figure(9, 4)
    ax = fig.subplots()
    bars(ax, [SECTION_NAMES.get(n, n) for n in names] + ["Overall"],
          {p: [rec["sections"][n]["score"] for n in names] + [rec["overall"]]
           for p, rec in card.aggregate["profiles"].items()}, "score 0-100")
    ax.set_title("FAB++ section aggregate by profile and agent", fontsize=11)
    path = card.run_dir / "section_aggregate.png"
    return [save_png(fig, path)]


__all__ = ["CHART_DPI", "aggregate_plot", "figure", "markdown_to_html", "outside_legend", "save_png", "write_html"]
