"""Chart helpers shared by the scorecard and the families' bench sections (matplotlib, loaded when used).

Every chart is a figure on the Agg canvas (no pyplot state) saved as a palette PNG, so the scorecard page
embeds it as is. Callers check :func:`have_matplotlib` first: without the ``plot`` extra a bench writes
no charts.

Series are told apart by colour and by line style: every axes of a :func:`figure` cycles through
:data:`SERIES_COLOURS` (Okabe and Ito's colour-blind-safe palette) together with :data:`SERIES_DASHES`, so seven
equity curves never rely on red, brown and pink alone. Legends sit outside the data (:func:`outside_legend`):
to the right of the axes, or below the whole figure, under the x-axis label, never over it.
"""

from __future__ import annotations

import functools
import io
import math
from pathlib import Path
from typing import Any

#: Resolution of the scorecard charts (a 9-inch-wide chart is 900 px: sharp at the page's width).
CHART_DPI = 100
#: Colours of a chart's palette PNG.
CHART_COLOURS = 256
#: Series colours in drawing order: Okabe and Ito's colour-blind-safe palette (its yellow, faint on white, replaced
#: by grey), most distinct first.
SERIES_COLOURS = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#000000", "#999999")
#: Line styles in drawing order, paired with :data:`SERIES_COLOURS` (the n-th line has both the n-th colour and the
#: n-th dash pattern): solid, dashed, dash-dot, dotted, dash-dot-dot, short dashes, solid, loose dots.
SERIES_DASHES: tuple[Any, ...] = ("-", "--", "-.", ":", (0, (8, 2, 1.5, 2, 1.5, 2)), (0, (3, 1.5)), "-", (0, (1, 3)))


def series_cycler() -> Any:
    """The property cycle of every chart axes: :data:`SERIES_COLOURS` paired with :data:`SERIES_DASHES`."""
    from cycler import cycler

    return cycler(color=list(SERIES_COLOURS)) + cycler(linestyle=list(SERIES_DASHES))


@functools.cache
def _figure_class() -> Any:
    from matplotlib.figure import Figure

    class ChartFigure(Figure):
        """A figure whose every subplot uses :func:`series_cycler` (without touching matplotlib's global rcParams)."""

        def add_subplot(self, *args: Any, **kwargs: Any) -> Any:
            ax = super().add_subplot(*args, **kwargs)
            ax.set_prop_cycle(series_cycler())
            return ax

    return ChartFigure


def figure(width: float, height: float) -> Any:
    """A matplotlib figure on the Agg canvas (no pyplot state) with constrained layout; its subplots cycle through
    :data:`SERIES_COLOURS` and :data:`SERIES_DASHES`."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = _figure_class()(figsize=(width, height), dpi=CHART_DPI, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def outside_legend(ax: Any, *, below: bool = False, ncol: int = 1) -> None:
    """The axes' legend outside the data: to the right (top-aligned), or centred below the whole figure.

    Below, it is a figure legend placed by the constrained layout under everything else (tick labels and the
    x-axis label included), so it never covers them; when several axes of one figure ask for the same legend
    below, it is drawn once.
    """
    if below:
        fig = ax.get_figure()
        handles, labels = ax.get_legend_handles_labels()
        if not labels or any([t.get_text() for t in legend.get_texts()] == labels for legend in fig.legends):
            return
        fig.legend(handles, labels, fontsize=8, ncol=ncol, loc="outside lower center", frameon=False)
    else:
        ax.legend(fontsize=8, ncol=ncol, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0,
                  frameon=False)


def save_png(fig: Any, path: Path) -> Path:
    """Write ``fig`` as a palette PNG (:data:`CHART_COLOURS` colours, optimised): the page embeds it as is.

    The legend outside the axes is kept (``bbox_inches="tight"``). Without Pillow the figure is saved as
    matplotlib writes it.
    """
    path = Path(path)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=CHART_DPI, bbox_inches="tight", pad_inches=0.08)
    try:
        from PIL import Image
    except ImportError:  # matplotlib depends on Pillow; kept for a stripped install
        path.write_bytes(buffer.getvalue())
        return path
    with Image.open(io.BytesIO(buffer.getvalue())) as image:
        palette = image.convert("RGB").quantize(colors=CHART_COLOURS, method=Image.Quantize.MEDIANCUT,
                                                dither=Image.Dither.NONE)
        palette.save(path, format="PNG", optimize=True)
    return path


#: A bar lower than this (in axis units, of 0-110) is drawn with a tick of its colour on top, so a series of
#: (near-)zero scores is still seen beside its legend entry.
MIN_VISIBLE_BAR = 1.5


def bars(ax: Any, groups: list[str], series: dict[str, list[float]], ylabel: str, *, wrap: int = 12) -> None:
    """Grouped bars of 0-100 scores with their values on top; group names are wrapped at spaces to ``wrap``
    characters so neighbours never run together, and a (near-)zero bar shows as a tick of its colour."""
    import textwrap

    import numpy as np

    n = max(1, len(series))
    width = 0.8 / n
    x = np.arange(len(groups))
    for k, (name, values) in enumerate(series.items()):
        vals = [0.0 if v is None or (isinstance(v, float) and math.isnan(v)) else v for v in values]
        centres = x + (k - (n - 1) / 2) * width
        drawn = ax.bar(centres, vals, width, label=name)
        colour = drawn.patches[0].get_facecolor() if drawn.patches else None
        for b, v in zip(drawn, values, strict=True):
            known = v is not None and not (isinstance(v, float) and math.isnan(v))
            if known and b.get_height() < MIN_VISIBLE_BAR:
                ax.hlines(b.get_height(), b.get_x(), b.get_x() + b.get_width(), colors=[colour], lw=3)
            if known:
                ax.text(b.get_x() + b.get_width() / 2, b.get_height() + 1.5, f"{v:.0f}", ha="center", fontsize=7)
    ax.set_xticks(x, [textwrap.fill(g, wrap, break_long_words=False, break_on_hyphens=False) for g in groups])
    ax.set_ylim(0, 110)
    ax.set_ylabel(ylabel)
    outside_legend(ax)


def have_matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True



__all__ = ["CHART_COLOURS", "CHART_DPI", "MIN_VISIBLE_BAR", "SERIES_COLOURS", "SERIES_DASHES", "bars", "figure",
           "have_matplotlib", "outside_legend", "save_png", "series_cycler"]
