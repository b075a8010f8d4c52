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
* News: one row per (item, symbol); timestamps are UTC; items without a source
  or URL are excluded (their provenance cannot be shown) and listed by id.
* Filing sections: one row per (filing, section), text as extracted, filed date
  as given by the index (never the period end).
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
NEWS = [
    {
        "file": "news/finnhub_company_news_djia20_2025_stockbench.csv",
        "provider": "finnhub",
        "source": "GitHub huohua325/Trading_agent (Finnhub company-news API download)",
        "licence": "Apache-2.0 (repository licence); headline and summary text (c) the publishers",
    },
    {
        "file": "news/stocknewsapi_mag7_2025-10_2025-11.csv",
        "provider": "stocknewsapi",
        "source": "GitHub kathryntanardy/Stock_Predictor (StockNewsAPI download)",
        "licence": "No licence declared by the repository; headline and summary text (c) the publishers",
    },
]
FILINGS_SOURCE = "SEC EDGAR 10-K/10-Q filings held as test fixtures in GitHub dgunning/edgartools; sections extracted"
FILINGS_LICENCE = "Public domain (SEC filings); edgartools fixtures MIT"
SECTION_TITLES = {
    "item_1a_risk_factors": "Item 1A. Risk Factors",
    "item_7_mdna": "Item 7. Management's Discussion and Analysis",
    "item_7a_market_risk": "Item 7A. Quantitative and Qualitative Disclosures About Market Risk",
    "part1_item_2_mdna": "Part I, Item 2. Management's Discussion and Analysis",
    "part2_item_1a_risk_factors": "Part II, Item 1A. Risk Factors",
}

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


def import_news(source: Path) -> list[dict]:
    import hashlib

    frames = []
    excluded: list[dict] = []
    for spec in NEWS:
        raw = pd.read_csv(source / spec["file"], dtype=str, keep_default_na=False)
        if spec["provider"] == "finnhub":
            ids = "fh-" + raw["id"]
            sentiment = pd.Series([None] * len(raw), dtype=object)
        else:
            ids = raw["url"].map(lambda u: "sna-" + hashlib.sha1(u.encode("utf-8")).hexdigest()[:16])
            sentiment = raw["sentiment"].replace("", None)
        frame = pd.DataFrame(
            {
                "id": ids,
                "symbol": raw["ticker"],
                "published_at": pd.to_datetime(raw["published_utc"].str.rstrip("Z"), format="%Y-%m-%dT%H:%M:%S"),
                "title": raw["title"].str.strip(),
                "summary": raw["summary"].str.strip(),
                "source": raw["source"].str.strip(),
                "url": raw["url"].str.strip(),
                "provider": spec["provider"],
                "provider_sentiment": sentiment,
            }
        )
        no_provenance = (frame["source"] == "") | (frame["url"] == "")
        for _, row in frame[no_provenance].iterrows():
            excluded.append({"id": row["id"], "symbol": row["symbol"], "reason": "no source or URL in the source file"})
        frames.append(frame[~no_provenance])
    data = pd.concat(frames, ignore_index=True)
    dest = HERE / "news/news.parquet"
    _write_parquet(data, dest, "symbol, published_at, id")
    days = data["published_at"].dt.date
    return [
        {
            "file": "news/news.parquet",
            "kind": "news",
            "dataset": "news",
            "description": (
                "Company news headlines with short summaries, publisher and URL: 20 Dow names "
                "2024-12-31..2025-07-30 (Finnhub) and seven of the eight core tickers 2025-10-02..2025-11-16 "
                "(StockNewsAPI, with its sentiment label). One row per (item, symbol); times in UTC."
            ),
            "sha256": sha256_file(dest),
            "rows": int(len(data)),
            "date_min": str(min(days)),
            "date_max": str(max(days)),
            "symbols": sorted(data["symbol"].unique().tolist()),
            "source": "; ".join(spec["source"] for spec in NEWS),
            "licence": "; ".join(spec["licence"] for spec in NEWS),
            "transform": (
                "ids: 'fh-' + Finnhub id, 'sna-' + first 16 hex of sha1(url); published_utc parsed as UTC; "
                "text stripped; items without source or URL excluded"
            ),
            "excluded_rows": excluded,
        }
    ]


def import_filings(source: Path) -> list[dict]:
    folder = source / "filings/sections"
    index = json.loads((folder / "index.json").read_text())
    rows = []
    for filing in index:
        filing_id = f"{filing['ticker']}-{filing['form']}-{filing['filed']}"
        for key, meta in filing.items():
            if key in ("ticker", "form", "filed", "source") or meta is None:
                continue
            text = (folder / meta["file"]).read_text(encoding="utf-8")
            rows.append(
                {
                    "filing_id": filing_id,
                    "symbol": filing["ticker"],
                    "form": filing["form"],
                    "filed": pd.Timestamp(filing["filed"]).date(),
                    "section": key,
                    "title": SECTION_TITLES[key],
                    "text": text,
                    "chars": len(text),
                    "document": filing["source"],
                }
            )
    data = pd.DataFrame(rows)
    dest = HERE / "filings/sections.parquet"
    _write_parquet(data, dest, "symbol, filed, filing_id, section")
    return [
        {
            "file": "filings/sections.parquet",
            "kind": "filings",
            "dataset": "filing_sections",
            "description": (
                "Text sections of 10-K/10-Q filings (risk factors, MD&A, market risk) of AAPL ADBE AMZN "
                "GOOGL META NVDA TSLA and peers CRM IBM NFLX, filed 2024-11..2025-08; no MSFT text."
            ),
            "sha256": sha256_file(dest),
            "rows": int(len(data)),
            "date_min": str(min(data["filed"])),
            "date_max": str(max(data["filed"])),
            "symbols": sorted(data["symbol"].unique().tolist()),
            "source": FILINGS_SOURCE,
            "licence": FILINGS_LICENCE,
            "transform": "one row per (filing, section); filing id = TICKER-FORM-FILED; text unchanged",
            "excluded_rows": [],
        }
    ]


OPTIONS = [
    {
        "file": "options/spy_chain_2026-05-01.parquet",
        "source_file": "options/SPY_chain_asof_2026-05-01_yahoo.csv",
        "source": "GitHub ZOOMKB/bs-vs-heston (Yahoo option chain download)",
        "licence": "No licence declared by the repository; vendor data from Yahoo",
    },
]
OPTION_COLUMNS = ["symbol", "snapshot_date", "expiry", "option_type", "strike", "bid", "ask", "last",
                  "implied_vol", "volume", "open_interest", "spot"]


def import_options(source: Path) -> list[dict]:
    """Real chain snapshots: tidy columns; contracts with implied vol 0, missing or > 1 excluded."""
    entries = []
    for spec in OPTIONS:
        raw = pd.read_csv(source / spec["source_file"])
        frame = pd.DataFrame({
            "symbol": raw["ticker"], "snapshot_date": pd.to_datetime(raw["spot_date"]).dt.date,
            "expiry": pd.to_datetime(raw["expiry"]).dt.date, "option_type": raw["option_type"].str.lower(),
            "strike": raw["strike"].astype("float64"), "bid": raw["bid"].fillna(0.0),
            "ask": raw["ask"].fillna(0.0), "last": raw["lastPrice"].fillna(0.0),
            "implied_vol": raw["impliedVolatility"], "volume": raw["volume"].fillna(0.0),
            "open_interest": raw["openInterest"].fillna(0.0), "spot": raw["S"].astype("float64"),
        })
        iv = frame["implied_vol"]
        bad = iv.isna() | (iv <= 0) | (iv > 1.0)
        excluded = [
            {"contract": str(raw["contractSymbol"][i]), "reason": f"implied volatility {iv[i]!r} is 0 or above 1"}
            for i in np.flatnonzero(bad.to_numpy())
        ]
        data = frame[~bad][OPTION_COLUMNS]
        dest = HERE / spec["file"]
        _write_parquet(data, dest, "snapshot_date, expiry, option_type, strike")
        entries.append(
            {
                "file": spec["file"],
                "kind": "options",
                "dataset": f"{data['symbol'].iloc[0]}-{data['snapshot_date'].iloc[0]}",
                "description": (
                    f"Full {data['symbol'].iloc[0]} option chain at the close of {data['snapshot_date'].iloc[0]}: "
                    f"{data['expiry'].nunique()} expiries, calls and puts with bid/ask/last, the vendor's implied "
                    f"volatility, volume and open interest; spot {data['spot'].iloc[0]:.2f}."
                ),
                "sha256": sha256_file(dest),
                "rows": int(len(data)),
                "date_min": str(min(data["snapshot_date"])),
                "date_max": str(max(data["snapshot_date"])),
                "symbols": sorted(data["symbol"].unique().tolist()),
                "source": spec["source"],
                "licence": spec["licence"],
                "transform": (
                    "columns renamed to the finenvs chain layout; blank bid/ask/last/volume/open interest read as 0; "
                    "contracts with implied volatility 0, missing or above 1 excluded (listed)"
                ),
                "excluded_rows": excluded,
            }
        )
    return entries


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", required=True, type=Path, help="folder holding prices/ and rates/")
    args = parser.parse_args()
    entries = import_prices(args.source) + import_rates(args.source) + import_news(args.source) + import_filings(args.source)
    entries += import_options(args.source)
    # files built by other tools (the question banks: envs_data/build_questions.py) keep their entries
    produced = {entry["kind"] for entry in entries}
    manifest_path = HERE / "MANIFEST.json"
    if manifest_path.is_file():
        entries += [e for e in json.loads(manifest_path.read_text())["files"] if e["kind"] not in produced]
    manifest = {"schema_version": 1, "files": entries}
    (HERE / "MANIFEST.json").write_text(json.dumps(manifest, indent=2) + "\n")
    for entry in entries:
        print(f"{entry['file']}: {entry['rows']} rows {entry['date_min']}..{entry['date_max']}")


if __name__ == "__main__":
    main()
