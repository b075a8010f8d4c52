"""One option chain snapshot (:class:`OptionChain`) and reading it from a DataFrame or a CSV file.

A chain is one symbol's calls and puts at one snapshot date: expiry, strike,
bid/ask/last and the vendor's implied volatility per contract. :func:`chain_from_frame`
and :func:`load_chain_csv` read the finenvs layout (:data:`CHAIN_COLUMNS`) or
Yahoo's; contracts whose implied volatility is 0, missing or above ``iv_max``
(:data:`IV_MAX`) are dropped (Yahoo's placeholders for stale deep in-the-money
quotes) and counted in ``OptionChain.dropped``.

The catalog reads the shipped snapshots with these; :mod:`finenvs.data.chains`
(generated chains, the volatility surface) builds on them and re-exports every name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from finenvs.errors import DataError, user_file

#: finenvs chain layout (one row per contract); extra columns are ignored.
CHAIN_COLUMNS = ("symbol", "snapshot_date", "expiry", "option_type", "strike", "bid", "ask", "last",
                 "implied_vol", "volume", "open_interest", "spot")
#: Yahoo layout (the shipped source files) -> finenvs column
YAHOO_COLUMNS = {"ticker": "symbol", "underlying": "symbol", "spot_date": "snapshot_date", "type": "option_type",
                 "lastPrice": "last", "impliedVolatility": "implied_vol", "openInterest": "open_interest",
                 "S": "spot"}
IV_MAX = 1.0


@dataclass(frozen=True)
class OptionChain:
    """Calls and puts of one symbol at one snapshot (arrays aligned, read-only).

    ``expiry`` is ``datetime64[D]``; ``option_type`` holds ``"call"``/``"put"``;
    prices are per share. ``source`` says where it came from (``"yahoo"``,
    ``"generated"``, a file path); ``dropped`` counts contracts removed by the IV filter.
    ``rate`` and ``dividend_yield`` are the continuously compounded r and q the
    chain was priced with (generated chains) or None.
    """

    symbol: str
    snapshot: np.datetime64
    spot: float
    expiry: np.ndarray
    option_type: np.ndarray
    strike: np.ndarray
    bid: np.ndarray
    ask: np.ndarray
    last: np.ndarray
    implied_vol: np.ndarray
    volume: np.ndarray
    open_interest: np.ndarray
    source: str = ""
    dropped: int = 0
    rate: float | None = None
    dividend_yield: float | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("expiry", "option_type", "strike", "bid", "ask", "last", "implied_vol", "volume",
                     "open_interest"):
            arr = np.asarray(getattr(self, name))
            arr.setflags(write=False)
            object.__setattr__(self, name, arr)

    def __len__(self) -> int:
        return len(self.strike)

    @property
    def mid(self) -> np.ndarray:
        """(bid + ask) / 2 where both are quoted (> 0), else the last trade."""
        both = (self.bid > 0) & (self.ask > 0)
        return np.where(both, (self.bid + self.ask) / 2.0, self.last)

    def expiries(self) -> list[str]:
        """Expiry dates, ascending, as ISO strings."""
        return [str(d) for d in np.unique(self.expiry)]

    def days_to_expiry(self) -> np.ndarray:
        """Calendar days from the snapshot to each contract's expiry."""
        return (self.expiry - self.snapshot).astype(int)

    def select(self, expiry: Any = None, option_type: str | None = None) -> OptionChain:
        """The contracts of one expiry and/or type."""
        mask = np.ones(len(self), dtype=bool)
        if expiry is not None:
            mask &= self.expiry == np.datetime64(str(expiry)[:10], "D")
        if option_type is not None:
            mask &= self.option_type == option_type
        return self._take(mask)

    def _take(self, mask: np.ndarray) -> OptionChain:
        arrays = {name: getattr(self, name)[mask] for name in (
            "expiry", "option_type", "strike", "bid", "ask", "last", "implied_vol", "volume", "open_interest")}
        return OptionChain(self.symbol, self.snapshot, self.spot, source=self.source, dropped=self.dropped,
                           rate=self.rate, dividend_yield=self.dividend_yield, meta=dict(self.meta), **arrays)

    def quote(self, option_type: str, strike: float, expiry: Any) -> dict[str, Any]:
        """One contract as a dict.

        Raises:
            DataError: No such contract in the chain (names the nearest strikes listed).
        """
        day = np.datetime64(str(expiry)[:10], "D")
        mask = (self.option_type == option_type) & (self.expiry == day)
        hit = mask & np.isclose(self.strike, float(strike))
        if not hit.any():
            listed = np.sort(self.strike[mask])
            near = listed[np.argsort(np.abs(listed - float(strike)))[:4]]  # empty when none is listed
            raise DataError(f"no {option_type} {strike} expiring {day} in the {self.symbol} chain of "
                            f"{self.snapshot}; nearest listed strikes: {sorted(float(k) for k in near)}")
        i = int(np.flatnonzero(hit)[0])
        return self.record(i)

    def record(self, i: int) -> dict[str, Any]:
        """Row ``i`` as a JSON-able dict."""
        return {
            "symbol": self.symbol, "snapshot_date": str(self.snapshot), "expiry": str(self.expiry[i]),
            "days_to_expiry": int((self.expiry[i] - self.snapshot).astype(int)),
            "option_type": str(self.option_type[i]), "strike": float(self.strike[i]),
            "bid": float(self.bid[i]), "ask": float(self.ask[i]), "last": float(self.last[i]),
            "mid": float(self.mid[i]), "implied_vol": float(self.implied_vol[i]),
            "volume": float(self.volume[i]), "open_interest": float(self.open_interest[i]),
        }

    def records(self) -> list[dict[str, Any]]:
        """Every contract as a dict (ordered by expiry, type, strike)."""
        order = np.lexsort((self.strike, self.option_type, self.expiry))
        return [self.record(int(i)) for i in order]


# ----------------------------------------------------------------------------- reading real chains
def chain_from_frame(frame: Any, *, source: str, symbol: str | None = None, snapshot: Any = None,
                     iv_max: float = IV_MAX) -> OptionChain:
    """Build a chain from a DataFrame in the finenvs or Yahoo layout (one snapshot, one symbol).

    Raises:
        DataError: Missing columns, several symbols/snapshots, no spot, a strike <= 0,
            an expiry before the snapshot, or no contract left after the IV filter.
    """
    import pandas as pd

    data = frame.rename(columns={k: v for k, v in YAHOO_COLUMNS.items() if k in frame.columns})
    data = data.loc[:, ~data.columns.duplicated()]
    if symbol is not None:
        data = data.assign(symbol=symbol)
    if snapshot is not None:
        data = data.assign(snapshot_date=str(snapshot)[:10])
    required = ("symbol", "snapshot_date", "expiry", "option_type", "strike", "implied_vol", "spot")
    missing = [c for c in required if c not in data.columns]
    if missing:
        raise DataError(f"{source}: chain lacks columns {missing} (pass symbol=/snapshot= for the ones a "
                        f"file does not carry); expected the finenvs layout {list(CHAIN_COLUMNS)} or Yahoo's")
    for name, values in (("symbol", data["symbol"]), ("snapshot_date", data["snapshot_date"])):
        unique = sorted({str(v) for v in values})
        if len(unique) != 1:
            raise DataError(f"{source}: one chain holds one {name}; found {unique[:5]}")
    kinds = data["option_type"].astype(str).str.lower()
    bad_kind = ~kinds.isin(("call", "put"))
    if bad_kind.any():
        raise DataError(f"{source}: option_type {data['option_type'][bad_kind].iloc[0]!r} (row "
                        f"{int(np.flatnonzero(bad_kind.to_numpy())[0])}) is not call or put")
    strike = pd.to_numeric(data["strike"], errors="coerce").to_numpy(dtype=float)
    if not np.all(np.isfinite(strike) & (strike > 0)):
        row = int(np.flatnonzero(~(np.isfinite(strike) & (strike > 0)))[0])
        raise DataError(f"{source}: strike {data['strike'].iloc[row]!r} at row {row} must be a number > 0")
    snap = np.datetime64(str(data["snapshot_date"].iloc[0])[:10], "D")
    expiry = pd.to_datetime(data["expiry"]).to_numpy().astype("datetime64[D]")
    if (expiry < snap).any():
        row = int(np.flatnonzero(expiry < snap)[0])
        raise DataError(f"{source}: expiry {expiry[row]} at row {row} is before the snapshot date {snap}")
    spot = pd.to_numeric(data["spot"], errors="coerce").to_numpy(dtype=float)
    if not (np.isfinite(spot[0]) and spot[0] > 0):
        raise DataError(f"{source}: spot {data['spot'].iloc[0]!r} must be a number > 0")

    def col(name: str) -> np.ndarray:
        if name not in data.columns:
            return np.full(len(data), np.nan)
        return pd.to_numeric(data[name], errors="coerce").to_numpy(dtype=float)

    iv = col("implied_vol")
    keep = np.isfinite(iv) & (iv > 0) & (iv <= iv_max)
    if not keep.any():
        raise DataError(f"{source}: no contract has an implied volatility in (0, {iv_max}]")
    volume, oi = np.nan_to_num(col("volume")), np.nan_to_num(col("open_interest"))
    return OptionChain(
        symbol=str(data["symbol"].iloc[0]), snapshot=snap, spot=float(spot[0]),
        expiry=expiry[keep], option_type=kinds.to_numpy(dtype=object)[keep], strike=strike[keep],
        bid=np.nan_to_num(col("bid"))[keep], ask=np.nan_to_num(col("ask"))[keep],
        last=np.nan_to_num(col("last"))[keep], implied_vol=iv[keep], volume=volume[keep],
        open_interest=oi[keep], source=source, dropped=int((~keep).sum()),
    )


def load_chain_csv(path: str | Path, *, symbol: str | None = None, snapshot: Any = None,
                   iv_max: float = IV_MAX) -> OptionChain:
    """Read a user's chain CSV (finenvs layout :data:`CHAIN_COLUMNS`, or Yahoo's) into an :class:`OptionChain`.

    Args:
        path: CSV file.
        symbol, snapshot: Supply these when the file does not carry them.
        iv_max: Contracts with implied volatility 0, missing or above this are dropped.

    Raises:
        DataError: The file is missing, unreadable, or breaks the layout (see :func:`chain_from_frame`).
    """
    import pandas as pd

    path = user_file(path, "chain file")
    try:
        frame = pd.read_csv(path)
    except (ValueError, OSError) as exc:
        raise DataError(f"{path}: cannot be read as CSV ({exc})") from exc
    return chain_from_frame(frame, source=str(path), symbol=symbol, snapshot=snapshot, iv_max=iv_max)


__all__ = ["CHAIN_COLUMNS", "IV_MAX", "YAHOO_COLUMNS", "OptionChain", "chain_from_frame", "load_chain_csv"]
