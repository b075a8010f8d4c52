"""Names from outside (an agent card's or a model's name, a symbol, a run name, an episode label) as Markdown text.

The scorecard's Markdown is read by people (in a Markdown viewer) and by
:func:`finenvs.evaluation.scorecard_html.markdown_to_html`; a name that enters it must stay text:
``![x](/etc/x.png)`` must not become an image, ``[x](http://...)`` a link, ``<img ...>`` raw HTML, and
``a | b`` or a line break must not break a table. :func:`md_text` escapes, with CommonMark's
backslash escapes, every character that could start such syntax, and replaces line breaks and other
non-printable characters by spaces; a Markdown viewer shows the name as it was written.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

#: Longest name shown (characters); a longer one is cut and ends with "...".
MAX_NAME_CHARS = 200
#: The characters :func:`md_text` escapes: those that open a link or image (``[``, ``]``), raw HTML or an
#: autolink (``<``, ``>``), a code span (backtick), a table cell (``|``), and the escape character itself.
MARKDOWN_SPECIAL = "\\`[]<>|"
_SPECIAL = re.compile("[" + re.escape(MARKDOWN_SPECIAL) + "]")


def md_text(value: Any, limit: int = MAX_NAME_CHARS) -> str:
    """``value`` (a name from outside) as Markdown that renders as exactly that text, on one line.

    Never raises: a value that is not a string is shown by its ``str`` (or its type when that fails).
    """
    if not isinstance(value, str):
        try:
            value = str(value)
        except Exception:  # e.g. the str() of a huge integer
            value = f"<{type(value).__name__}>"
    if len(value) > limit:
        value = value[: limit - 3] + "..."
    if not value.isprintable():
        value = "".join(ch if ch.isprintable() else " " for ch in value)
    return _SPECIAL.sub(lambda m: "\\" + m.group(), value)


def md_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A pipe table, each column padded to its widest cell. Cells are written as given: a name from outside
    goes through :func:`md_text` first."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    line = "| " + " | ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)) + " |"
    sep = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    body = ["| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |" for r in rows]
    return "\n".join([line, sep, *body])


def fmt_number(value: Any, scale: float = 1.0) -> str:
    """A table cell: ``value * scale`` with two decimals, ``n/a`` for None, NaN and infinity."""
    if value is None or not math.isfinite(value):
        return "n/a"
    return f"{value * scale:.2f}"


__all__ = ["MARKDOWN_SPECIAL", "MAX_NAME_CHARS", "fmt_number", "md_table", "md_text"]
