"""The OHLCV schema every market source uses, and its invariant checks.

Schema (one row per symbol and trading day)

| column | type | rule |
|---|---|---|
| ``symbol`` | str | optional in single-symbol files (the caller names the symbol) |
| ``date`` | date | ISO ``YYYY-MM-DD``; strictly increasing within a symbol (sorted, unique) |
| ``open``, ``high``, ``low``, ``close`` | float | finite and > 0; ``high >= max(open, close)``; ``low <= min(open, close)`` |
| ``volume`` | float | finite and >= 0 (0 allowed for indices) |

Prices are split- and dividend-adjusted. Nothing is imputed or forward-filled:
the trading calendar of a symbol is exactly the dates present.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from finenvs.errors import DataError

PRICE_FIELDS = ("open", "high", "low", "close", "volume")
REQUIRED_COLUMNS = ("date", *PRICE_FIELDS)


def _readonly(values: Any, dtype: Any) -> np.ndarray:
    arr = np.array(values, dtype=dtype, copy=True)
    arr.setflags(write=False)
    return arr


@dataclass(frozen=True, eq=False)
class PriceSeries:
    """Daily OHLCV bars of one symbol, as read-only numpy arrays.

    Attributes:
        symbol: Ticker or synthetic name.
        dates: ``datetime64[D]`` trading dates, strictly increasing.
        open, high, low, close: Adjusted prices (float64).
        volume: Shares traded (float64).
    """

    symbol: str
    dates: np.ndarray
    open: np.ndarray
    high: np.ndarray
    low: np.ndarray
    close: np.ndarray
    volume: np.ndarray

    @classmethod
    def from_arrays(
        cls,
        symbol: str,
        dates: Any,
        open: Any,
        high: Any,
        low: Any,
        close: Any,
        volume: Any,
        *,
        source: str = "<arrays>",
        validate: bool = True,
    ) -> PriceSeries:
        """Build a series, copying every array and making the copies read-only.

        Args:
            symbol: Name of the series.
            dates: Anything ``np.datetime64`` accepts per element.
            open, high, low, close, volume: Numeric sequences of the same length.
            source: Name used in error messages (file path, "DataFrame", ...).
            validate: Run :func:`check_ohlcv` (the shipped catalog is checked once at build).

        Raises:
            DataError: If any schema rule is broken (message names source and row).
        """
        series = cls(
            symbol=str(symbol),
            dates=_readonly(np.asarray(dates, dtype="datetime64[D]"), "datetime64[D]"),
            open=_readonly(open, np.float64),
            high=_readonly(high, np.float64),
            low=_readonly(low, np.float64),
            close=_readonly(close, np.float64),
            volume=_readonly(volume, np.float64),
        )
        if validate:
            check_ohlcv(series, source=source)
        return series

    def __len__(self) -> int:
        return int(self.dates.shape[0])

    def slice(self, start: int, stop: int) -> PriceSeries:
        """Rows ``start:stop`` as a new series (views stay read-only)."""
        return PriceSeries(
            self.symbol,
            self.dates[start:stop],
            self.open[start:stop],
            self.high[start:stop],
            self.low[start:stop],
            self.close[start:stop],
            self.volume[start:stop],
        )

    def to_frame(self) -> Any:
        """The series as a pandas DataFrame in the finenvs schema."""
        import pandas as pd

        return pd.DataFrame(
            {
                "symbol": self.symbol,
                "date": self.dates.astype("datetime64[ns]"),
                "open": self.open,
                "high": self.high,
                "low": self.low,
                "close": self.close,
                "volume": self.volume,
            }
        )

    def to_records(self) -> list[dict[str, Any]]:
        """JSON-able rows ``{"date": "YYYY-MM-DD", "open": ..., ...}``."""
        return [
            {
                "date": str(d),
                "open": float(o),
                "high": float(h),
                "low": float(lo),
                "close": float(c),
                "volume": float(v),
            }
            for d, o, h, lo, c, v in zip(
                self.dates, self.open, self.high, self.low, self.close, self.volume, strict=True
            )
        ]


def check_ohlcv(series: PriceSeries, *, source: str, rows: np.ndarray | None = None) -> None:
    """Check every schema invariant of one symbol's bars.

    Args:
        series: The bars to check.
        source: File or object name used in the error message.
        rows: Position of each bar in its file (0-based), for the message; default
            ``0..n-1``.

    Raises:
        DataError: At the first offending row, naming source, 1-based row, symbol,
            date and the rule broken. Rows are numbered as data rows of the file
            (header excluded).
    """
    n = len(series)
    sym = series.symbol

    def _fail(i: int, date: Any, problem: str) -> DataError:
        row = int(rows[i]) if rows is not None else i
        return DataError(f"{source}: row {row + 1} ({sym} {date}): {problem}")

    if n == 0:
        raise DataError(f"{source}: no rows for {sym}")
    lengths = {f: getattr(series, f).shape[0] for f in PRICE_FIELDS}
    if any(length != n for length in lengths.values()):
        raise DataError(f"{source}: {sym}: column lengths differ: dates={n}, {lengths}")
    dates = series.dates
    if np.isnat(dates).any():
        i = int(np.flatnonzero(np.isnat(dates))[0])
        raise _fail(i, "NaT", "date is missing or unparsable")
    if n > 1:
        step = np.diff(dates).astype(np.int64)
        if (step <= 0).any():
            i = int(np.flatnonzero(step <= 0)[0]) + 1
            what = "duplicate date" if step[i - 1] == 0 else f"date goes back from {dates[i - 1]}"
            raise _fail(i, dates[i], f"{what}: dates must be sorted and unique")
    o, h, lo, c, v = series.open, series.high, series.low, series.close, series.volume
    for name, col in (("open", o), ("high", h), ("low", lo), ("close", c)):
        bad = ~np.isfinite(col) | (col <= 0)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise _fail(i, dates[i], f"{name}={float(col[i])!r} is not a positive finite price")
    bad = ~np.isfinite(v) | (v < 0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise _fail(i, dates[i], f"volume={float(v[i])!r} is not a finite number >= 0")
    bad = h < np.maximum(o, c)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise _fail(
            i, dates[i], f"high={float(h[i])!r} < max(open={float(o[i])!r}, close={float(c[i])!r})"
        )
    bad = lo > np.minimum(o, c)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise _fail(
            i, dates[i], f"low={float(lo[i])!r} > min(open={float(o[i])!r}, close={float(c[i])!r})"
        )


def series_from_frame(frame: Any, *, source: str, symbol: str | None = None) -> dict[str, PriceSeries]:
    """Split a DataFrame in the finenvs schema into checked per-symbol series.

    Args:
        frame: pandas DataFrame with ``date, open, high, low, close, volume`` and
            optionally ``symbol`` (column names are matched case-insensitively;
            ``Adj Close`` is not used: prices must already be adjusted).
        source: Name for error messages.
        symbol: Symbol for a frame without a ``symbol`` column.

    Returns:
        Mapping symbol -> PriceSeries, in order of first appearance.

    Raises:
        DataError: Missing columns, no symbol, or an invariant broken (names the row).
    """
    import pandas as pd

    if not isinstance(frame, pd.DataFrame):
        raise DataError(f"{source}: expected a pandas DataFrame, got {type(frame).__name__}")
    lower = {str(c).strip().lower(): c for c in frame.columns}
    missing = [c for c in REQUIRED_COLUMNS if c not in lower]
    if missing:
        raise DataError(
            f"{source}: missing column(s) {missing}; the schema is "
            f"{['symbol (optional)', *REQUIRED_COLUMNS]}, found {list(frame.columns)}"
        )
    if "symbol" in lower:
        symbols = frame[lower["symbol"]].astype(str).to_numpy()
    elif symbol is not None:
        symbols = np.full(len(frame), str(symbol), dtype=object)
    else:
        raise DataError(f"{source}: no 'symbol' column; pass symbol=... to name the series")
    try:
        dates = pd.to_datetime(frame[lower["date"]], errors="coerce").to_numpy().astype("datetime64[D]")
    except (TypeError, ValueError) as exc:
        raise DataError(f"{source}: column 'date' cannot be read as dates: {exc}") from exc
    columns = {}
    for field in PRICE_FIELDS:
        col = pd.to_numeric(frame[lower[field]], errors="coerce").to_numpy(dtype=np.float64)
        columns[field] = col
    if len(frame) == 0:
        raise DataError(f"{source}: the table has no rows")
    return split_by_symbol({"symbol": symbols, "date": dates, **columns}, source)


def split_by_symbol(table: dict[str, Any], source: str) -> dict[str, PriceSeries]:
    """Group a long table (``symbol``, ``date`` and the price columns, as arrays) by symbol.

    File order is kept within a symbol, and each symbol's bars are checked with
    :func:`check_ohlcv`; errors name the table's own row numbers.
    """
    symbols = np.asarray(table["symbol"]).astype(str)
    dates = np.asarray(table["date"])
    out: dict[str, PriceSeries] = {}
    for sym in dict.fromkeys(symbols.tolist()):
        rows = np.flatnonzero(symbols == sym)
        series = PriceSeries.from_arrays(
            sym,
            dates[rows],
            *(np.asarray(table[field])[rows] for field in PRICE_FIELDS),
            validate=False,
        )
        check_ohlcv(series, source=source, rows=rows)
        out[sym] = series
    return out
