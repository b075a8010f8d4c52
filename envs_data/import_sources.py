"""Import the raw source files into envs_data/ and write MANIFEST.json.

This is a maintainer tool, not run at install or run time. It reads the
gathered source folder (the layout documented in envs_data/README.md, section
"Sources"), converts every price file to the tidy finenvs schema and writes one
Parquet file per dataset plus one per rate series, then records sha256, row
count, date range, symbols, source and licence of each file in MANIFEST.json.

Usage::

    python envs_data/import_sources.py --source /path/to/gathered/data

Transformations (all recorded per file in the manifest's ``transform`` field):

* Columns are renamed to ``symbol, date, open, high, low, close, volume``.
* Where a source gives raw (split-adjusted) OHLC plus an adjusted close, every
  price column is multiplied by the same factor ``adj_close / close`` so the
  bar stays internally consistent (high >= open, close >= low hold exactly,
  because multiplying by one positive float preserves order).
* Rows that break an OHLC invariant in the source are excluded, never repaired,
  and listed under ``excluded_rows``.
* Rate series drop holidays (blank values in the source); nothing is filled.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd

from finenvs.data.manifest import sha256_file

HERE = Path(__file__).resolve().parent

PRICE_COLUMNS = ["symbol", "date", "open", "high", "low", "close", "volume"]

DATASETS = [
    {
        "dataset": "core",
        "file": "prices/core_2024_2026.parquet",
        "folder": "prices/adjusted_2024_2026",
        "layout": "lower",
        "description": (
            "Daily split- and dividend-adjusted OHLCV of the ten core symbols "
            "(AAPL ADBE AMZN GOOGL META MSFT NVDA TSLA SPY QQQ); the default "
            "dataset of every market env."
        ),
        "source": "GitHub DrRobAnthony/market-data data/<T>.csv (yfinance download of Yahoo data)",
        "licence": "No licence declared by the repository; vendor data from Yahoo",
    },
    {
        "dataset": "yahoo_2000_2024",
        "file": "prices/yahoo_2000_2024.parquet",
        "folder": "prices/yahoo_history_2000_2024",
        "layout": "adj_close_title",
        "description": "Longer daily history of 21 large-cap tech names, 2000 (or IPO) to 2024-03-08.",
        "source": "GitHub dieperdev/yfinance-stock-data (Yahoo data)",
        "licence": "Unlicense (public-domain dedication of the repository)",
    },
    {
        "dataset": "yahoo_2015_2026",
        "file": "prices/yahoo_2015_2026.parquet",
        "folder": "prices/yahoo_raw_and_adjusted_2015_2026",
        "layout": "adj_close_lower",
        "description": (
            "Daily history 2015-01-02 to 2026-02-27 of 15 large caps across sectors "
            "and the S&P 500 (^GSPC) and Nasdaq Composite (^IXIC) indices."
        ),
        "source": "GitHub SU-IST707-SP26/group-project-algorithm-architects (Yahoo data)",
        "licence": "No licence declared by the repository; vendor data from Yahoo",
    },
    {
        "dataset": "stooq_etf_2005_2026",
        "file": "prices/stooq_etf_2005_2026.parquet",
        "folder": "prices/stooq_etf_adjusted_2005_2026",
        "layout": "title",
        "description": "Adjusted daily ETFs SPY QQQ IEF HYG ARKK and the VIX index (volume 0), 2005 (QQQ 1999) to 2026-03-12.",
        "source": "GitHub kam-reef/Market-Correction-Watch (Stooq data)",
        "licence": "MIT (repository licence); Stooq data",
    },
]

RATES = [
    {
        "series": "DTB3",
        "file": "rates/fred_dtb3.parquet",
        "source_file": "rates/DTB3.csv",
        "description": "3-month Treasury bill secondary market rate, discount basis, percent per annum.",
    },
    {
        "series": "DGS10",
        "file": "rates/fred_dgs10.parquet",
        "source_file": "rates/DGS10.csv",
        "description": "10-year Treasury constant maturity yield, percent per annum.",
    },
]
RATE_SOURCE = "FRED, Federal Reserve Board H.15 release"
RATE_LICENCE = "Public domain (U.S. government data)"

INDEX_SYMBOLS = {"IDX_GSPC": "^GSPC", "IDX_IXIC": "^IXIC"}

#: layouts with raw (split-adjusted) OHLC plus an adjusted close: field -> source column
ADJUSTED_LAYOUTS = {
    "adj_close_title": {"date": "Date", "open": "Open", "high": "High", "low": "Low", "close": "Close",
                        "adj_close": "Adj Close", "volume": "Volume"},
    "adj_close_lower": {"date": "date", "open": "open", "high": "high", "low": "low", "close": "close",
                        "adj_close": "adj_close", "volume": "volume"},
}


def _read_price_csv(path: Path, layout: str) -> pd.DataFrame:
    raw = pd.read_csv(path)
    symbol = INDEX_SYMBOLS.get(path.stem, path.stem)
    if layout in ("lower", "title"):
        frame = raw.rename(columns=str.lower)
    elif layout in ADJUSTED_LAYOUTS:
        names = ADJUSTED_LAYOUTS[layout]  # source column of date, open, high, low, close, adj close, volume
        factor = raw[names["adj_close"]] / raw[names["close"]]
        frame = pd.DataFrame({"date": raw[names["date"]], "volume": raw[names["volume"]]})
        for field in ("open", "high", "low", "close"):
            frame[field] = raw[names[field]] * factor
    else:  # pragma: no cover - maintainer error
        raise ValueError(f"unknown layout {layout!r}")
    frame["symbol"] = symbol
    frame["date"] = pd.to_datetime(frame["date"]).dt.date
    frame["volume"] = frame["volume"].astype("float64")
    return frame[PRICE_COLUMNS]


def _invariant_violations(frame: pd.DataFrame) -> pd.Series:
    prices = frame[["open", "high", "low", "close"]]
    return (
        prices.isna().any(axis=1)
        | (prices <= 0).any(axis=1)
        | (frame["high"] < frame[["open", "close"]].max(axis=1))
        | (frame["low"] > frame[["open", "close"]].min(axis=1))
        | (frame["volume"] < 0)
        | frame["volume"].isna()
    )


def _write_parquet(frame: pd.DataFrame, dest: Path, order: str) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect()
    try:
        con.register("frame", frame)
        con.execute(
            f"COPY (SELECT * FROM frame ORDER BY {order}) TO '{dest.as_posix()}' "
            "(FORMAT PARQUET, COMPRESSION ZSTD, ROW_GROUP_SIZE 100000)"
        )
    finally:
        con.close()


def import_prices(source: Path) -> list[dict]:
    entries = []
    for spec in DATASETS:
        folder = source / spec["folder"]
        frames = []
        excluded: list[dict] = []
        for csv in sorted(folder.glob("*.csv")):
            if csv.name.startswith("_"):
                continue  # partial corporate-actions table: not price data
            frame = _read_price_csv(csv, spec["layout"])
            bad = _invariant_violations(frame)
            for _, row in frame[bad].iterrows():
                excluded.append(
                    {
                        "symbol": row["symbol"],
                        "date": str(row["date"]),
                        "reason": "OHLC invariant broken in the source "
                        f"(open={row['open']}, high={row['high']}, low={row['low']}, close={row['close']})",
                    }
                )
            frames.append(frame[~bad])
        data = pd.concat(frames, ignore_index=True)
        dest = HERE / spec["file"]
        _write_parquet(data, dest, "symbol, date")
        transform = "columns renamed to the finenvs schema"
        if spec["layout"].startswith("adj_close"):
            transform = (
                "open/high/low/close multiplied by adj_close/close of the same row "
                "(split- and dividend-adjusted bar); columns renamed"
            )
        entries.append(
            {
                "file": spec["file"],
                "kind": "prices",
                "dataset": spec["dataset"],
                "description": spec["description"],
                "sha256": sha256_file(dest),
                "rows": int(len(data)),
                "date_min": str(min(data["date"])),
                "date_max": str(max(data["date"])),
                "symbols": sorted(data["symbol"].unique().tolist()),
                "source": spec["source"],
                "licence": spec["licence"],
                "transform": transform,
                "excluded_rows": excluded,
            }
        )
    return entries


def import_rates(source: Path) -> list[dict]:
    entries = []
    for spec in RATES:
        raw = pd.read_csv(source / spec["source_file"])
        raw.columns = ["date", "value"]
        raw["value"] = pd.to_numeric(raw["value"], errors="coerce")
        dropped = int(raw["value"].isna().sum())
        data = raw.dropna().copy()
        data["series"] = spec["series"]
        data["date"] = pd.to_datetime(data["date"]).dt.date
        data = data[["series", "date", "value"]]
        if not np.all(np.isfinite(data["value"].to_numpy())):  # pragma: no cover
            raise ValueError(f"non-finite rate in {spec['source_file']}")
        dest = HERE / spec["file"]
        _write_parquet(data, dest, "date")
        entries.append(
            {
                "file": spec["file"],
                "kind": "rates",
                "dataset": spec["series"],
                "description": spec["description"],
                "sha256": sha256_file(dest),
                "rows": int(len(data)),
                "date_min": str(min(data["date"])),
                "date_max": str(max(data["date"])),
                "symbols": [spec["series"]],
                "source": RATE_SOURCE,
                "licence": RATE_LICENCE,
                "transform": f"blank values (holidays) dropped: {dropped} rows; nothing filled",
                "excluded_rows": [],
            }
        )
    return entries


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", required=True, type=Path, help="folder holding prices/ and rates/")
    args = parser.parse_args()
    entries = import_prices(args.source) + import_rates(args.source)
    manifest = {"schema_version": 1, "files": entries}
    (HERE / "MANIFEST.json").write_text(json.dumps(manifest, indent=2) + "\n")
    for entry in entries:
        print(f"{entry['file']}: {entry['rows']} rows {entry['date_min']}..{entry['date_max']}")


if __name__ == "__main__":
    main()
