"""Yahoo Finance through ``yfinance``: daily bars and a ticker's recent news (the ``data`` extra).

The only module that calls ``yfinance``. It returns what ``yfinance`` returns:

* :func:`fetch_bars`: ``Ticker(symbol).history(start, end + 1 day, interval="1d", auto_adjust=False,
  actions=False)``, a DataFrame indexed by a time-zone-aware ``Date`` (the exchange's midnights) with
  ``Open, High, Low, Close, Adj Close, Volume`` (``end`` is inclusive here, exclusive in ``yfinance``).
* :func:`fetch_news`: ``Ticker(symbol).news``, a list of dicts (``{"id", "content": {"title",
  "pubDate", "provider": {"displayName"}, "canonicalUrl": {"url"}, ...}}``, or the older flat
  ``{"uuid", "title", "publisher", "link", "providerPublishTime"}``).

Replay (``$FINENVS_FETCH_REPLAY=DIR``): ``DIR/yahoo/prices/<SYMBOL>.csv`` is such a frame written
by ``DataFrame.to_csv()`` (cut to ``[start, end]`` on reading, as the live call would) and
``DIR/yahoo/news/<SYMBOL>.json`` such a list. :func:`save_bars` and :func:`save_news` write them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from finenvs.data.sources import SourceError, recording

NAME = "yahoo"
BAR_COLUMNS = ("Open", "High", "Low", "Close", "Adj Close", "Volume")
#: yfinance reports the exchange's midnights in this zone for US listings.
EXCHANGE_TZ = "America/New_York"


def _yfinance() -> Any:
    try:
        import yfinance  # type: ignore[import-untyped]  # no inline types, no stub package
    except ImportError as exc:
        raise SourceError("fetching from Yahoo Finance needs yfinance: pip install 'finenvs[data]'") from exc
    return yfinance


def _next_day(day: str) -> str:
    import numpy as np

    return str(np.datetime64(day, "D") + np.timedelta64(1, "D"))


def fetch_bars(symbol: str, start: str, end: str) -> Any:
    """Daily bars of ``symbol`` dated ``start..end`` (ISO days, both inclusive), as ``yfinance`` returns them.

    Raises:
        SourceError: Without yfinance installed, or (replay) without a recording of ``symbol``.
    """
    import pandas as pd

    path = recording(NAME, "prices", "bars", symbol, ".csv")
    if path is not None:
        frame = pd.read_csv(path, index_col=0)
        index = pd.to_datetime(frame.index, utc=True, format="ISO8601").tz_convert(EXCHANGE_TZ)
        frame.index = index.rename("Date")
        days = index.strftime("%Y-%m-%d")
        return frame[(days >= start) & (days <= end)]
    frame = _yfinance().Ticker(symbol).history(start=start, end=_next_day(end), interval="1d", auto_adjust=False,
                                               actions=False)
    keep = [c for c in BAR_COLUMNS if c in frame.columns]
    return frame[keep] if len(frame) else frame


def fetch_news(symbol: str) -> list[dict[str, Any]]:
    """The recent news items Yahoo lists for ``symbol`` (``yfinance.Ticker(symbol).news``).

    Raises:
        SourceError: Without yfinance installed, or (replay) without a recording of ``symbol``.
    """
    path = recording(NAME, "news", "news", symbol, ".json")
    if path is not None:
        items = json.loads(path.read_text(encoding="utf-8"))
    else:
        items = _yfinance().Ticker(symbol).news
    if not isinstance(items, list):
        raise SourceError(f"news of {symbol}: expected a list of items, got {type(items).__name__}")
    return items


def save_bars(frame: Any, symbol: str, folder: Path | str) -> Path:
    """Record ``frame`` (as :func:`fetch_bars` returns it) for replay under ``folder``."""
    path = Path(folder) / NAME / "prices" / f"{symbol}.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(path)
    return path


def save_news(items: list[dict[str, Any]], symbol: str, folder: Path | str) -> Path:
    """Record ``items`` (as :func:`fetch_news` returns them) for replay under ``folder``."""
    path = Path(folder) / NAME / "news" / f"{symbol}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(items, indent=1), encoding="utf-8")
    return path


__all__ = ["BAR_COLUMNS", "SourceError", "fetch_bars", "fetch_news", "save_bars", "save_news"]
