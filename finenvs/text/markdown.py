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


def md_table(headers: Sequence[str], rows: Sequence[Sequence[str]], *, align: Sequence[str] | None = None) -> str:
    """The project's one table writer: a Markdown pipe table (tabulate's ``pipe`` format), each column padded to
    its widest cell, so the terminal, the ``.md`` files and the HTML page show the same table.

    Cells are written as given (numbers already formatted, e.g. by :func:`fmt_number`; a name from outside goes
    through :func:`md_text` first). ``align`` gives each column's alignment (``"left"``/``"right"``/``"center"``);
    by default the first column is left-aligned and every other column is right-aligned when all its cells are
    numbers (or ``n/a``/``—``), left-aligned otherwise.
    """
    from tabulate import tabulate

    headers = [str(h) for h in headers]
    rows = [[str(c) for c in r] for r in rows]
    for r in rows:
        if len(r) != len(headers):
            raise ValueError(f"a row has {len(r)} cells for {len(headers)} columns")
    if align is None:
        align = ["left" if i == 0 or not all(_NUMBER_CELL.fullmatch(r[i].strip()) for r in rows) else "right"
                 for i in range(len(headers))]
    return tabulate(rows, headers=headers, tablefmt="pipe", disable_numparse=True, colalign=tuple(align))


#: The text of a value that is unknown or undefined (None, NaN, infinity), in every table, line and page.
NA = "n/a"
#: A cell that reads as a number (right-aligned by :func:`md_table`): -1,234.5, +3.2 %, 0.12 [0.01, 0.30],
#: 1.20 ± 0.30, n/a, —.
_NUMBER_CELL = re.compile(r"(\*\*)?([-+]?\$?[\d,]*\.?\d+(e[-+]?\d+)?( ?%)?( \[[^\]]*\]| ± \S+)?|n/a|—|-)?(\*\*)?",
                          re.I)


def is_known(value: Any) -> bool:
    """Whether ``value`` is a finite number (not None, NaN, infinity, a bool or a non-number)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) and not hasattr(value, "__float__"):
        return False
    try:
        return math.isfinite(float(value))
    except (TypeError, ValueError, OverflowError):
        return False


def fmt_number(value: Any, scale: float = 1.0, digits: int = 2, *, sign: bool = False) -> str:
    """The project's one number formatter: ``value * scale`` with ``digits`` decimals (``sign``: always a sign);
    :data:`NA` for anything unknown (None, NaN, infinity, a bool, a non-number). Never raises."""
    if not is_known(value):
        return NA
    return f"{float(value) * scale:{'+' if sign else ''}.{digits}f}"


def fmt_count(value: Any) -> str:
    """A whole count (tokens, decisions): ``1234`` as ``1234``; :data:`NA` when unknown (None, NaN)."""
    if not is_known(value):
        return NA
    return str(int(value))


__all__ = ["MARKDOWN_SPECIAL", "MAX_NAME_CHARS", "NA", "fmt_count", "fmt_number", "is_known", "md_table",
           "md_text"]
