"""The OHLCV schema every market source uses, and its invariant checks.

Schema (one row per symbol and trading day)

| column | type | rule |
|---|---|---|
| ``symbol`` | str | optional in single-symbol files (the caller names the symbol); never empty |
| ``date`` | date | ISO 8601 ``YYYY-MM-DD`` (a time of day is dropped), or an ISO 8601 timestamp with a UTC offset (see below); strictly increasing within a symbol (sorted, unique) |
| ``open``, ``high``, ``low``, ``close`` | float | finite, within ``[PRICE_MIN, PRICE_MAX]`` = ``[1e-6, 1e9]``; ``high >= max(open, close)``; ``low <= min(open, close)`` |
| ``volume`` | float | finite and >= 0 (0 allowed for indices) |
| ``adj_close`` | float | optional (also spelt ``Adj Close`` or ``adjclose``): the split- and dividend-adjusted close, finite and > 0 |

Each schema column appears once (names match case-insensitively, surrounding
spaces ignored); other columns are ignored. A cell that is empty or not a number
is an error, never a NaN carried along. The price range keeps what an env derives
from one bar to the next finite: a share count (equity / price), its value at
another price, a ratio of two prices (at most 1e15) and its log, so each step's
reward (with 1e-300 and 1e300 in one series, a long position held through the
jump would earn NaN rewards). Rewards and features depend only on price ratios,
so a series outside the range can be rescaled by a constant without changing them.

Prices are split- and dividend-adjusted. A table with an adjusted-close column
is adjusted on load: each bar's open, high, low and close are multiplied by
``adj_close / close``, so the env trades the adjusted close and the bar stays
consistent; :attr:`PriceSeries.adjusted_from` records the column used. Without
one, the prices are taken as given (:func:`split_like_jumps` finds the days
that look like an unadjusted split).

Dates are exchange dates. A timestamp with a UTC offset and a time of day
(``2024-03-12T01:00:00Z``, ``2024-03-11 16:00:00-04:00``; offsets may differ
from row to row, as across daylight saving) is converted to New York time
(``EXCHANGE_TZ``) and its date taken. A stamp at midnight of its own offset
(``2024-03-12T00:00:00Z``, ``2024-03-11 00:00:00-04:00``: how vendors export
daily bars) names its day: its date is taken as written, whatever the offset.
A date or timestamp without an offset is taken as written.
A datetime column of a DataFrame or Parquet file is read the same way.

Nothing is imputed or forward-filled: the trading calendar of a symbol is
exactly the dates present.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from finenvs.errors import DataError

PRICE_FIELDS = ("open", "high", "low", "close", "volume")
REQUIRED_COLUMNS = ("date", *PRICE_FIELDS)
#: Smallest and largest valid price (see the module doc).
PRICE_MIN = 1e-6
PRICE_MAX = 1e9
#: Time zone whose date a timestamp with a UTC offset is taken in.
EXCHANGE_TZ = "America/New_York"
#: Spellings of the adjusted-close column once lower-cased with spaces and underscores removed.
ADJ_CLOSE_NAMES = ("adjclose",)
#: A day-over-day price ratio at or below this looks like an unadjusted split (a fall of 50% or worse).
SPLIT_DROP = 0.5
#: Split ratios (new shares per old share) whose price ratio, within ``SPLIT_TOLERANCE``, looks like a split.
SPLIT_RATIOS = (2, 3, 4, 5, 10)
SPLIT_TOLERANCE = 0.03


def date_span(dates: Any) -> str:
    """``"first..last"`` of a series' dates (``"no rows"`` without any): the one way every message and listing
    states what a symbol's data covers (``finenvs data list``, an empty-window error, a universe's gap), so
    that they name the same last date."""
    return f"{dates[0]}..{dates[-1]}" if len(dates) else "no rows"


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
        adjusted_from: The table's adjusted-close column the prices were scaled
            to (e.g. ``"Adj Close"``), or None when they are the close as given.
    """

    symbol: str
    dates: np.ndarray
    open: np.ndarray
    high: np.ndarray
    low: np.ndarray
    close: np.ndarray
    volume: np.ndarray
    adjusted_from: str | None = None

    @property
    def price_basis(self) -> str:
        """Which price the series holds, in words (``"adjusted close (Adj Close)"`` or ``"close as given"``)."""
        return f"adjusted close ({self.adjusted_from})" if self.adjusted_from else "close as given"

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
            self.adjusted_from,
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


def check_ohlcv(series: PriceSeries, *, source: str, rows: np.ndarray | slice | None = None) -> None:
    """Check every schema invariant of one symbol's bars.

    Args:
        series: The bars to check.
        source: File or object name used in the error message.
        rows: Position of each bar in its file (0-based): an array, or a slice of
            consecutive rows; default ``0..n-1``.

    Raises:
        DataError: At the first offending row, naming source, 1-based row, symbol,
            date, the column and the rule broken. Rows are numbered as data rows of
            the file (header excluded).
    """
    n = len(series)
    sym = series.symbol

    def _fail(i: int, date: Any, problem: str) -> DataError:
        if isinstance(rows, slice):
            row = (rows.start or 0) + i
        else:
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
        with np.errstate(invalid="ignore"):
            bad = ~((col >= PRICE_MIN) & (col <= PRICE_MAX))  # NaN fails both comparisons
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            x = float(col[i])
            if np.isnan(x):
                problem = f"{name}=nan is missing or not a number"
            elif not np.isfinite(x) or x <= 0:
                problem = f"{name}={x!r} is not a positive finite price"
            else:
                problem = (f"{name}={x!r} is outside the valid price range [{PRICE_MIN:g}, {PRICE_MAX:g}] "
                           "(rescale the series: rewards and features depend only on price ratios)")
            raise _fail(i, dates[i], problem)
    bad = ~(np.isfinite(v) & (v >= 0))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        x = float(v[i])
        problem = "volume=nan is missing or not a number" if np.isnan(x) else f"volume={x!r} is not a finite number >= 0"
        raise _fail(i, dates[i], problem)
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


class SymbolColumn(NamedTuple):
    """The symbol of every row as a code into ``names`` (names in order of first appearance)."""

    codes: np.ndarray
    names: list[str]


def column_map(columns: Any, source: str, *, need_symbol: bool) -> dict[str, Any]:
    """Map each schema column name to the table's own label of it.

    Names match case-insensitively with surrounding spaces ignored. An
    adjusted-close column (``Adj Close``, ``adj_close``, ``adjclose`` in any
    case) maps as ``adj_close``.

    Raises:
        DataError: A schema column is missing, or appears more than once (names
            the labels); ``symbol`` is required when ``need_symbol``.
    """
    labels: dict[str, list[Any]] = {}
    for label in columns:
        key = str(label).strip().lower()
        if key.replace(" ", "").replace("_", "") in ADJ_CLOSE_NAMES:
            key = "adj_close"
        labels.setdefault(key, []).append(label)
    for name in ("symbol", *REQUIRED_COLUMNS, "adj_close"):
        found = labels.get(name, [])
        if len(found) > 1:
            raise DataError(
                f"{source}: column {name!r} appears {len(found)} times ({', '.join(repr(str(x)) for x in found)}); "
                "each schema column must appear exactly once"
            )
    missing = [c for c in REQUIRED_COLUMNS if c not in labels]
    if missing:
        raise DataError(
            f"{source}: missing column(s) {missing}; the schema is "
            f"{['symbol (optional)', *REQUIRED_COLUMNS]}, found {[str(c) for c in columns]}"
        )
    if need_symbol and "symbol" not in labels:
        raise DataError(f"{source}: no 'symbol' column; pass symbol=... to name the series")
    return {name: labels[name][0] for name in ("symbol", *REQUIRED_COLUMNS, "adj_close") if name in labels}


def frame_columns(
    frame: Any,
    *,
    source: str,
    symbol: str | None = None,
    first_row: int = 0,
    registry: dict[str, int] | None = None,
) -> dict[str, Any]:
    """Convert a DataFrame (or one chunk of a file) into checked column arrays.

    Args:
        frame: pandas DataFrame in the schema.
        source: Name for error messages.
        symbol: Symbol of a frame without a ``symbol`` column.
        first_row: Row number (0-based) of the frame's first row in its file.
        registry: Symbol -> code, shared by the chunks of one file (codes in order
            of first appearance); a new one when None.

    Returns:
        ``{"symbol": str | SymbolColumn, "date": datetime64[D], "open".."volume": float64,
        "adjusted_from": str | None}``; with an adjusted-close column, open, high,
        low and close are scaled by ``adj_close / close`` (see the module doc). A
        float column may be a view of the frame's own memory.

    Raises:
        DataError: A missing or duplicated column, an empty symbol, a date that is
            not ISO 8601, or a cell that is not a number (names source, row, column).
    """
    import pandas as pd

    if not isinstance(frame, pd.DataFrame):
        raise DataError(f"{source}: expected a pandas DataFrame, got {type(frame).__name__}")
    names = column_map(frame.columns, source, need_symbol=symbol is None)

    def _row_error(mask: np.ndarray, what: str, column: Any) -> DataError:
        i = int(np.flatnonzero(mask)[0])
        return DataError(f"{source}: row {first_row + i + 1}: {what}: {column.iloc[i]!r}")

    out: dict[str, Any] = {}
    if "symbol" in names:
        raw = frame[names["symbol"]]
        text = raw.astype(str).str.strip()
        empty = raw.isna().to_numpy() | (text == "").to_numpy()
        if empty.any():
            raise _row_error(empty, "symbol is missing or empty", raw)
        codes, uniques = pd.factorize(text.to_numpy(dtype=object))
        registry = {} if registry is None else registry
        lookup = np.array([registry.setdefault(str(u), len(registry)) for u in uniques], dtype=np.int32)
        out["symbol"] = SymbolColumn(lookup[codes], list(registry))
    else:
        out["symbol"] = str(symbol)
    raw = frame[names["date"]]
    if pd.api.types.is_bool_dtype(raw.dtype) or pd.api.types.is_numeric_dtype(raw.dtype):
        raise DataError(f"{source}: column 'date' holds numbers ({raw.dtype}); write dates as YYYY-MM-DD")
    out["date"] = _exchange_dates(raw, source)
    bad = np.isnat(out["date"])
    if bad.any():
        raise _row_error(bad, "date is missing or unparsable (write dates as YYYY-MM-DD)", raw)
    for field in (*PRICE_FIELDS, "adj_close"):
        if field not in names:
            continue
        raw = frame[names[field]]
        if pd.api.types.is_bool_dtype(raw.dtype):
            raise DataError(f"{source}: column {field!r} holds true/false values, not numbers")
        if pd.api.types.is_numeric_dtype(raw.dtype):
            values = raw.to_numpy(dtype=np.float64, na_value=np.nan)
        else:
            values = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
            unreadable = np.isnan(values) & raw.notna().to_numpy()
            if unreadable.any():
                shown = str(names[field]).strip() if field == "adj_close" else field
                raise _row_error(unreadable, f"{shown} is not a number", raw)
        out[field] = values
    out["adjusted_from"] = None
    if "adj_close" in names:
        adj = out.pop("adj_close")
        label = str(names["adj_close"]).strip()
        with np.errstate(invalid="ignore"):
            bad = ~((adj >= PRICE_MIN) & (adj <= PRICE_MAX))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            x = float(adj[i])
            problem = "is missing or not a number" if np.isnan(x) else "is not a positive finite price"
            raise DataError(f"{source}: row {first_row + i + 1}: {label}={x!r} {problem}")
        close = out["close"]
        with np.errstate(invalid="ignore", divide="ignore"):
            usable = (close >= PRICE_MIN) & (close <= PRICE_MAX)  # a bad close is reported by check_ohlcv as given
            factor = np.where(usable, adj / np.where(usable, close, 1.0), 1.0)
        # one factor for the whole bar keeps its order (high >= close ...) exactly; close * factor is adj to 1 ulp
        for field in ("open", "high", "low", "close"):
            out[field] = out[field] * factor
        out["adjusted_from"] = label
    return out


def _exchange_dates(raw: Any, source: str) -> np.ndarray:
    """A date column as ``datetime64[D]`` exchange dates (NaT where unreadable; see the module doc)."""
    import pandas as pd

    if pd.api.types.is_datetime64_any_dtype(raw.dtype):
        if getattr(raw.dt, "tz", None) is not None:  # midnights of the column's zone name their day
            local = raw.dt.tz_localize(None)
            midnight = (local == local.dt.normalize()).to_numpy(dtype=bool)
            raw = local.where(midnight, raw.dt.tz_convert(EXCHANGE_TZ).dt.tz_localize(None))
        return raw.to_numpy().astype("datetime64[D]")
    text = raw.astype("string").str.strip()
    # a time of day followed by Z or +hh:mm / -hhmm / +hh: the offset of an aware timestamp
    # (looked for only in text longer than a date, YYYY-MM-DD: a tenth of the time on plain dates)
    aware = (text.str.len() > 10).fillna(False).to_numpy(dtype=bool)
    if aware.any():
        offset = text[aware].str.contains(r"\d:\d\d(?::\d\d(?:[.,]\d+)?)?\s*(?:Z|z|[+-]\d\d(?::?\d\d)?)$")
        aware[aware] = offset.fillna(False).to_numpy(dtype=bool)
    out = np.full(len(raw), np.datetime64("NaT"), dtype="datetime64[D]")
    try:
        if (~aware).any():
            naive = pd.to_datetime(text[~aware], format="ISO8601", errors="coerce")
            out[~aware] = naive.to_numpy().astype("datetime64[D]")
        # a midnight of its own offset names its day (a daily bar): the date as written
        midnight = aware.copy()
        if aware.any():
            at_midnight = text[aware].str.contains(r"^\d{4}-\d\d-\d\d[T ]00:00(?::00(?:[.,]0+)?)?\s*(?:Z|z|[+-]\d\d(?::?\d\d)?)$")
            midnight[aware] = at_midnight.fillna(False).to_numpy(dtype=bool)
            aware &= ~midnight
        if midnight.any():  # the whole stamp must still read (an offset of +25:00 does not)
            readable = pd.to_datetime(text[midnight], format="ISO8601", utc=True, errors="coerce").notna()
            days = pd.to_datetime(text[midnight].str.slice(0, 10), format="%Y-%m-%d", errors="coerce")
            out[midnight] = days.where(readable).to_numpy().astype("datetime64[D]")
        if aware.any():
            stamps = pd.to_datetime(text[aware], format="ISO8601", utc=True, errors="coerce")
            out[aware] = stamps.dt.tz_convert(EXCHANGE_TZ).dt.tz_localize(None).to_numpy().astype("datetime64[D]")
    except (TypeError, ValueError) as exc:
        raise DataError(f"{source}: column 'date' cannot be read as ISO 8601 dates: {exc}") from exc
    return out


def split_like_jumps(series: PriceSeries) -> list[tuple[np.datetime64, str]]:
    """Days on which the prices move like an unadjusted stock split, with the move in words.

    A day is listed when its open against the previous close (overnight) or its
    close against the previous close falls to :data:`SPLIT_DROP` or below, or is
    within :data:`SPLIT_TOLERANCE` of a split ratio 1:k or k:1 (reverse split)
    for k in :data:`SPLIT_RATIOS`. A series already adjusted
    (``adjusted_from``) is not examined: an empty list.
    """
    if series.adjusted_from or len(series) < 2:
        return []
    prev = series.close[:-1]
    ratios = {"open": series.open[1:] / prev, "close": series.close[1:] / prev}

    def _near(r: np.ndarray, k: int) -> np.ndarray:
        return (np.abs(r * k - 1.0) <= SPLIT_TOLERANCE) | (np.abs(r / k - 1.0) <= SPLIT_TOLERANCE)

    flagged = np.zeros(len(prev), dtype=bool)
    for r in ratios.values():
        flagged |= r <= SPLIT_DROP
        for k in SPLIT_RATIOS:
            flagged |= _near(r, k)
    found: list[tuple[np.datetime64, str]] = []
    for i in np.flatnonzero(flagged):  # few rows: described one by one
        for what, r in ratios.items():
            near = [k for k in SPLIT_RATIOS if _near(r[i : i + 1], k)[0]]
            if r[i] <= SPLIT_DROP or near:
                ratio = (f"1:{near[0]}" if r[i] < 1 else f"{near[0]}:1 reverse") if near else "a fall of 50% or more"
                price = getattr(series, what)[i + 1]
                found.append((series.dates[i + 1], f"close {float(prev[i]):.6g} -> {what} {float(price):.6g} "
                                                   f"({float(r[i]) - 1.0:+.0%}, like {ratio})"))
                break
    return found


def series_from_frame(frame: Any, *, source: str, symbol: str | None = None) -> dict[str, PriceSeries]:
    """Split a DataFrame in the finenvs schema into checked per-symbol series.

    Args:
        frame: pandas DataFrame with ``date, open, high, low, close, volume`` and
            optionally ``symbol`` (column names are matched case-insensitively;
            with ``Adj Close`` the bars are scaled to it, see the module doc).
        source: Name for error messages.
        symbol: Symbol for a frame without a ``symbol`` column.

    Returns:
        Mapping symbol -> PriceSeries, in order of first appearance. The series
        own their arrays (nothing is shared with ``frame``).

    Raises:
        DataError: Missing or duplicated columns, no symbol, a cell that is not a
            number or a date, or an invariant broken (names the row and column).
    """
    table = frame_columns(frame, source=source, symbol=symbol)
    if len(table["date"]) == 0:
        raise DataError(f"{source}: the table has no rows")
    return split_by_symbol(table, source)


def _float_column(values: Any) -> np.ndarray:
    if isinstance(values, np.ma.MaskedArray):  # a NULL read from a database is missing, not its fill value
        return np.ma.filled(values.astype(np.float64), np.nan)
    return np.asarray(values, dtype=np.float64)


def _date_column(values: Any) -> np.ndarray:
    if isinstance(values, np.ma.MaskedArray):
        values = np.ma.filled(values.astype("datetime64[D]"), np.datetime64("NaT"))
    return np.asarray(values).astype("datetime64[D]", copy=False)


def _symbol_groups(symbols: Any, n: int, source: str) -> list[tuple[str, slice | np.ndarray]]:
    """``(symbol, rows)`` per symbol in order of first appearance; rows a slice when consecutive."""
    if isinstance(symbols, str):
        return [(symbols, slice(0, n))]
    if isinstance(symbols, SymbolColumn):
        codes, names = np.asarray(symbols.codes), list(symbols.names)
    else:
        import pandas as pd

        values = symbols.filled(None) if isinstance(symbols, np.ma.MaskedArray) else symbols
        codes, uniques = pd.factorize(np.asarray(values, dtype=object))
        names = [str(u) for u in uniques]
    missing = codes < 0
    if missing.any():
        raise DataError(f"{source}: row {int(np.flatnonzero(missing)[0]) + 1}: symbol is missing")
    if len(names) == 1:
        return [(names[0], slice(0, n))]
    groups: list[tuple[str, slice | np.ndarray]] = []
    for k, name in enumerate(names):
        rows = np.flatnonzero(codes == k)
        if rows.size and rows[-1] - rows[0] + 1 == rows.size:
            groups.append((name, slice(int(rows[0]), int(rows[-1]) + 1)))
        else:
            groups.append((name, rows))
    return groups


def split_by_symbol(table: dict[str, Any], source: str, *, copy: bool = True) -> dict[str, PriceSeries]:
    """Group a long table by symbol into checked series.

    ``table`` holds ``symbol`` (one name for every row, a :class:`SymbolColumn`,
    or an array of names), ``date`` and the price columns as arrays. File order
    is kept within a symbol, each series gets read-only copies of its rows
    (``copy=False``: read-only views where a symbol's rows are consecutive, for
    arrays the caller made and drops), and each is checked with
    :func:`check_ohlcv`; errors name the table's own row numbers.
    """
    dates = _date_column(table["date"])
    columns = [_float_column(table[field]) for field in PRICE_FIELDS]
    adjusted_from = table.get("adjusted_from")
    out: dict[str, PriceSeries] = {}
    for sym, rows in _symbol_groups(table["symbol"], len(dates), source):
        parts = []
        for col in (dates, *columns):
            part = col[rows].copy() if copy and isinstance(rows, slice) else col[rows]  # fancy indexing copies
            part.setflags(write=False)
            parts.append(part)
        day, open_, high, low, close, volume = parts
        series = PriceSeries(sym, day, open_, high, low, close, volume, adjusted_from=adjusted_from)
        check_ohlcv(series, source=source, rows=rows)
        out[sym] = series
    return out
