"""Chart helpers shared by the scorecard and the families' bench sections (matplotlib, loaded when used).

Every chart is a figure on the Agg canvas (no pyplot state) saved as a palette PNG, so the scorecard page
embeds it as is. Callers check :func:`have_matplotlib` first: without the ``plot`` extra a bench writes
no charts.
"""

from __future__ import annotations

import io
import math
from pathlib import Path
from typing import Any

#: Resolution of the scorecard charts (a 9-inch-wide chart is 900 px: sharp at the page's width).
CHART_DPI = 100
#: Colours of a chart's palette PNG.
CHART_COLOURS = 256


def figure(width: float, height: float) -> Any:
    """A matplotlib figure on the Agg canvas (no pyplot state) with constrained layout."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=CHART_DPI, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def outside_legend(ax: Any, *, below: bool = False, ncol: int = 1) -> None:
    """The axes' legend outside the data: to the right (top-aligned), or centred below the axes."""
    if below:
        ax.legend(fontsize=8, ncol=ncol, loc="upper center", bbox_to_anchor=(0.5, -0.14), frameon=False)
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


def bars(ax: Any, groups: list[str], series: dict[str, list[float]], ylabel: str) -> None:
    import numpy as np

    n = max(1, len(series))
    width = 0.8 / n
    x = np.arange(len(groups))
    for k, (name, values) in enumerate(series.items()):
        vals = [0.0 if v is None or (isinstance(v, float) and math.isnan(v)) else v for v in values]
        bars = ax.bar(x + (k - (n - 1) / 2) * width, vals, width, label=name)
        for b, v in zip(bars, values, strict=True):
            if v is not None and not (isinstance(v, float) and math.isnan(v)):
                ax.text(b.get_x() + b.get_width() / 2, b.get_height() + 1, f"{v:.0f}", ha="center", fontsize=7)
    ax.set_xticks(x, groups)
    ax.set_ylim(0, 110)
    ax.set_ylabel(ylabel)
    outside_legend(ax)


def have_matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True



__all__ = ["CHART_COLOURS", "CHART_DPI", "bars", "figure", "have_matplotlib", "outside_legend", "save_png"]
