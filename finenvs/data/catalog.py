"""The DuckDB catalog built from the shipped data, and loaders for a user's own data.

On first use the catalog is built from ``envs_data/`` (hashes and schema checked)
into a cache directory, then only ever opened read-only:

* location: ``$FINENVS_DATA`` if set, else ``$XDG_CACHE_HOME/finenvs`` (default
  ``~/.cache/finenvs``);
* file name: ``catalog-<first 16 hex of the MANIFEST sha256>-v<schema>.duckdb``, so
  a changed manifest gives a new file and the catalog is rebuilt;
* concurrency: each builder writes a private temporary file and publishes it with
  an atomic ``os.replace``; two processes starting at once both build, the last
  rename wins, and neither can observe a half-written catalog.

Tables: ``prices(dataset, symbol, date, open, high, low, close, volume)``,
``rates(series, date, value)``, ``news(id, symbol, published_at, ...)``,
``filing_sections(filing_id, symbol, form, filed, section, ...)``, ``files(...)``
(the manifest) and ``meta(key, value)``.

Envs copy the arrays they need (:meth:`Catalog.series`) and keep no connection,
so they pickle and fork. Agent-facing reads go through :meth:`Catalog.as_of`.
"""

from __future__ import annotations

import os
import threading
import uuid
from pathlib import Path
from typing import Any

import numpy as np

from finenvs.data.asof import AsOfView, LookAheadCounter
from finenvs.data.documents import FILING_COLUMNS, NEWS_COLUMNS, FilingStore, NewsStore
from finenvs.data.manifest import Manifest, load_manifest, verify_entry
from finenvs.data.option_chain import OptionChain, chain_from_frame
from finenvs.data.schema import PriceSeries, series_from_frame
from finenvs.errors import DataError, DataFileError, UnknownSymbolError

OPTION_COLUMNS = ("symbol", "snapshot_date", "expiry", "option_type", "strike", "bid", "ask", "last",
                  "implied_vol", "volume", "open_interest", "spot")

CATALOG_SCHEMA_VERSION = 3
DEFAULT_DATASET = "core"
ENV_VAR = "FINENVS_DATA"


def cache_dir() -> Path:
    """Directory holding the built catalog (``$FINENVS_DATA`` overrides)."""
    override = os.environ.get(ENV_VAR)
    if override:
        return Path(override).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "finenvs"


def catalog_path(manifest: Manifest, directory: Path | None = None) -> Path:
    """Where the catalog for this manifest lives."""
    directory = directory if directory is not None else cache_dir()
    return directory / f"catalog-{manifest.digest[:16]}-v{CATALOG_SCHEMA_VERSION}.duckdb"


def _build(manifest: Manifest, dest: Path) -> None:
    """Build the catalog into ``dest`` (a fresh file), checking every source file."""
    import duckdb

    price_parts: list[str] = []
    params: list[Any] = []
    rate_parts: list[str] = []
    rate_params: list[Any] = []
    doc_files: dict[str, list[str]] = {"news": [], "filings": []}
    option_files: list[str] = []
    for entry in manifest.entries:
        path = manifest.root / entry.file
        verify_entry(manifest, entry)  # hash, row count, dates and schema: the `finenvs data verify` check
        if entry.kind == "prices":
            price_parts.append(
                "SELECT ? AS dataset, symbol, CAST(date AS DATE) AS date, open, high, low, close, "
                "CAST(volume AS DOUBLE) AS volume FROM read_parquet(?)"
            )
            params += [entry.dataset, str(path)]
        elif entry.kind == "rates":
            rate_parts.append("SELECT series, CAST(date AS DATE) AS date, value FROM read_parquet(?)")
            rate_params.append(str(path))
        elif entry.kind in doc_files:
            doc_files[entry.kind].append(str(path))
        elif entry.kind == "options":
            option_files.append(str(path))
    con = duckdb.connect(str(dest))
    try:
        con.execute("CREATE TABLE prices AS " + " UNION ALL ".join(price_parts), params)
        con.execute("CREATE INDEX prices_key ON prices(dataset, symbol)")
        if rate_parts:
            con.execute("CREATE TABLE rates AS " + " UNION ALL ".join(rate_parts), rate_params)
        else:
            con.execute("CREATE TABLE rates(series VARCHAR, date DATE, value DOUBLE)")
        for table, kind, columns in (("news", "news", NEWS_COLUMNS), ("filing_sections", "filings", FILING_COLUMNS)):
            files = doc_files[kind]
            if files:
                con.execute(f"CREATE TABLE {table} AS SELECT {', '.join(columns)} FROM read_parquet(?)", [files])
            else:
                con.execute(_EMPTY_DOC_TABLES[table])
        if option_files:
            con.execute(f"CREATE TABLE option_chains AS SELECT {', '.join(OPTION_COLUMNS)} FROM read_parquet(?)",
                        [option_files])
        else:
            con.execute("CREATE TABLE option_chains(symbol VARCHAR, snapshot_date DATE, expiry DATE, "
                        "option_type VARCHAR, strike DOUBLE, bid DOUBLE, ask DOUBLE, last DOUBLE, implied_vol DOUBLE, "
                        "volume DOUBLE, open_interest DOUBLE, spot DOUBLE)")
        con.execute(
            "CREATE TABLE files(file VARCHAR, kind VARCHAR, dataset VARCHAR, sha256 VARCHAR, rows BIGINT, "
            "date_min DATE, date_max DATE, source VARCHAR, licence VARCHAR, description VARCHAR)"
        )
        con.executemany(
            "INSERT INTO files VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                [e.file, e.kind, e.dataset, e.sha256, e.rows, e.date_min, e.date_max, e.source, e.licence,
                 e.description]
                for e in manifest.entries
            ],
        )
        con.execute("CREATE TABLE meta(key VARCHAR, value VARCHAR)")
        con.executemany(
            "INSERT INTO meta VALUES (?, ?)",
            [["manifest_sha256", manifest.digest], ["schema_version", str(CATALOG_SCHEMA_VERSION)]],
        )
        con.execute("CHECKPOINT")
    finally:
        con.close()


_EMPTY_DOC_TABLES = {
    "news": "CREATE TABLE news(id VARCHAR, symbol VARCHAR, published_at TIMESTAMP, title VARCHAR, summary VARCHAR, "
    "source VARCHAR, url VARCHAR, provider VARCHAR, provider_sentiment VARCHAR)",
    "filing_sections": "CREATE TABLE filing_sections(filing_id VARCHAR, symbol VARCHAR, form VARCHAR, filed DATE, "
    "section VARCHAR, title VARCHAR, text VARCHAR, chars BIGINT, document VARCHAR)",
}


def _is_valid_catalog(path: Path, manifest: Manifest) -> bool:
    import duckdb

    try:
        con = duckdb.connect(str(path), read_only=True)
    except duckdb.Error:
        return False
    try:
        row = con.execute("SELECT value FROM meta WHERE key = 'manifest_sha256'").fetchone()
        return row is not None and row[0] == manifest.digest
    except duckdb.Error:
        return False
    finally:
        con.close()


def ensure_catalog(manifest: Manifest | None = None, directory: Path | None = None) -> Path:
    """Return the path of a valid catalog for ``manifest``, building it if needed.

    Safe to call from several processes at once (atomic publish, see module doc).

    Raises:
        DataFileError: A shipped file is missing or fails its hash.
        DataError: A shipped file breaks the schema.
        OSError: The cache directory cannot be written (message names it and
            ``FINENVS_DATA``).
    """
    manifest = manifest if manifest is not None else load_manifest()
    target = catalog_path(manifest, directory)
    if target.is_file() and _is_valid_catalog(target, manifest):
        return target
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OSError(
            f"cannot create the catalog cache directory {target.parent} ({exc}); "
            f"set {ENV_VAR} to a writable directory"
        ) from exc
    tmp = target.parent / f".{target.stem}.{os.getpid()}.{uuid.uuid4().hex}.building.duckdb"
    try:
        _build(manifest, tmp)
        os.replace(tmp, target)
    finally:
        for leftover in (tmp, tmp.with_name(tmp.name + ".wal")):
            if leftover.exists():
                leftover.unlink()
    return target


class Catalog:
    """Read-only access to the shipped market data.

    Args:
        data_dir: Folder with MANIFEST.json and the data files (default: shipped data).
        cache: Directory for the built catalog (default: :func:`cache_dir`).
    """

    def __init__(self, data_dir: Path | str | None = None, cache: Path | str | None = None) -> None:
        self.manifest = load_manifest(Path(data_dir) if data_dir is not None else None)
        self.path = ensure_catalog(self.manifest, Path(cache) if cache is not None else None)
        self._series: dict[tuple[str, str], PriceSeries] = {}
        self._rates: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._news: NewsStore | None = None
        self._filings: FilingStore | None = None
        self._chains: dict[str, list[Any]] = {}
        self._lock = threading.Lock()

    def _query(self, sql: str, params: list[Any] | None = None) -> dict[str, np.ndarray]:
        import duckdb

        con = duckdb.connect(str(self.path), read_only=True)
        try:
            return con.execute(sql, params or []).fetchnumpy()
        finally:
            con.close()

    def datasets(self) -> list[str]:
        """Names of the price datasets (``core`` is the default)."""
        return list(self.manifest.datasets("prices"))

    def symbols(self, dataset: str = DEFAULT_DATASET) -> list[str]:
        """Symbols held by a dataset, sorted."""
        return sorted(self._entry(dataset).symbols)

    def _entry(self, dataset: str) -> Any:
        entries = self.manifest.datasets("prices")
        if dataset not in entries:
            raise DataError(f"unknown dataset {dataset!r}; valid datasets: {sorted(entries)}")
        return entries[dataset]

    def series(self, symbol: str, dataset: str = DEFAULT_DATASET) -> PriceSeries:
        """Full history of one symbol, for simulators.

        A simulator owns the date lock (it only shows rows up to its clock);
        agent-facing code must read through :meth:`as_of` instead.

        Raises:
            UnknownSymbolError: The dataset does not hold ``symbol`` (lists those it does).
        """
        entry = self._entry(dataset)
        if symbol not in entry.symbols:
            raise UnknownSymbolError(
                f"unknown symbol {symbol!r} in dataset {dataset!r}; valid symbols: {sorted(entry.symbols)}"
            )
        key = (dataset, symbol)
        with self._lock:
            cached = self._series.get(key)
        if cached is not None:
            return cached
        table = self._query(
            "SELECT date, open, high, low, close, volume FROM prices WHERE dataset = ? AND symbol = ? "
            "ORDER BY date",
            [dataset, symbol],
        )
        series = PriceSeries.from_arrays(
            symbol,
            table["date"],
            table["open"],
            table["high"],
            table["low"],
            table["close"],
            table["volume"],
            validate=False,  # checked when the catalog was built
        )
        with self._lock:
            self._series[key] = series
        return series

    def rates(self, series: str = "DTB3") -> tuple[np.ndarray, np.ndarray]:
        """Full history ``(dates, values in % p.a.)`` of a rate series, for simulators."""
        known = self.manifest.datasets("rates")
        if series not in known:
            raise UnknownSymbolError(f"unknown rate series {series!r}; valid series: {sorted(known)}")
        if series not in self._rates:
            table = self._query("SELECT date, value FROM rates WHERE series = ? ORDER BY date", [series])
            dates = np.asarray(table["date"]).astype("datetime64[D]")
            values = np.asarray(table["value"], dtype=np.float64)
            dates.setflags(write=False)
            values.setflags(write=False)
            self._rates[series] = (dates, values)
        return self._rates[series]

    def news(self) -> NewsStore:
        """Every shipped news item, for simulators and tools (agents read through :meth:`as_of`)."""
        if self._news is None:
            table = self._query(f"SELECT {', '.join(NEWS_COLUMNS)} FROM news")
            self._news = NewsStore.from_columns(_object_columns(table))
        return self._news

    def filings(self) -> FilingStore:
        """Every shipped filing section (agents read through :meth:`as_of`)."""
        if self._filings is None:
            table = self._query(f"SELECT {', '.join(FILING_COLUMNS)} FROM filing_sections")
            self._filings = FilingStore.from_columns(_object_columns(table))
        return self._filings

    def option_chains(self, symbol: str) -> list[OptionChain]:
        """Every shipped real chain snapshot of ``symbol``, oldest first (agents read through :meth:`as_of`)."""
        with self._lock:
            cached = self._chains.get(symbol)
        if cached is not None:
            return cached
        import duckdb

        con = duckdb.connect(str(self.path), read_only=True)
        try:
            frame = con.execute(f"SELECT {', '.join(OPTION_COLUMNS)} FROM option_chains WHERE symbol = ? "
                                "ORDER BY snapshot_date, expiry, option_type, strike", [symbol]).df()
        finally:
            con.close()
        chains = [
            chain_from_frame(part.reset_index(drop=True), source=f"shipped {symbol} chain {snap}")
            for snap, part in frame.groupby(frame["snapshot_date"].astype(str), sort=True)
        ]
        with self._lock:
            self._chains[symbol] = chains
        return chains

    def as_of(self, date: Any, counter: LookAheadCounter | None = None, dataset: str = DEFAULT_DATASET) -> AsOfView:
        """A date-locked view: reads return only rows dated on or before ``date``.

        Prices of ``dataset``, rates, news and filing sections, each under the
        lock documented in :mod:`finenvs.data.asof` and :mod:`finenvs.data.documents`.
        """
        return AsOfView(
            lambda sym: self.series(sym, dataset),
            date,
            counter=counter,
            rate_lookup=self.rates,
            news=self.news(),
            filings=self.filings(),
            symbols=self.symbols(dataset),
            chain_lookup=self.option_chains,
        )


def _object_columns(table: dict[str, np.ndarray]) -> dict[str, Any]:
    """duckdb's fetchnumpy gives masked arrays for columns with NULLs: turn them into object arrays with None."""
    out: dict[str, Any] = {}
    for name, col in table.items():
        if isinstance(col, np.ma.MaskedArray):
            filled = np.asarray(col.data, dtype=object)
            filled[np.ma.getmaskarray(col)] = None
            out[name] = filled
        else:
            out[name] = col
    return out


_DEFAULT: dict[tuple[str, str], Catalog] = {}
_DEFAULT_LOCK = threading.Lock()


def default_catalog() -> Catalog:
    """The process-wide catalog of the shipped data (built on first use)."""
    key = (os.environ.get(ENV_VAR, ""), os.environ.get("XDG_CACHE_HOME", ""))
    with _DEFAULT_LOCK:
        cat = _DEFAULT.get(key)
        if cat is None:
            cat = Catalog()
            _DEFAULT[key] = cat
        return cat


def load_prices(data: Any, symbol: str | None = None) -> dict[str, PriceSeries]:
    """Load a user's own prices through the same schema checks as the shipped data.

    Args:
        data: Path to a CSV or Parquet file, or a pandas DataFrame, in the finenvs
            schema (``[symbol,] date, open, high, low, close, volume``; adjusted prices).
        symbol: Name for data without a ``symbol`` column (default: the file stem).

    Returns:
        Mapping symbol -> checked :class:`PriceSeries`.

    Raises:
        DataFileError: Missing, unreadable or unsupported file.
        DataError: Schema broken (names the file and row).
    """
    import pandas as pd

    if isinstance(data, pd.DataFrame):
        return series_from_frame(data, source="DataFrame", symbol=symbol)
    path = Path(data)
    if not path.is_file():
        raise DataFileError(f"{path}: price file not found")
    suffix = path.suffix.lower()
    try:
        if suffix == ".csv":
            frame = pd.read_csv(path)
        elif suffix in (".parquet", ".pq"):
            import duckdb

            con = duckdb.connect()
            try:
                frame = con.execute("SELECT * FROM read_parquet(?)", [str(path)]).df()
            finally:
                con.close()
        else:
            raise DataFileError(f"{path}: unsupported file type {suffix!r}; use .csv or .parquet")
    except DataFileError:
        raise
    except Exception as exc:  # parser errors of pandas/duckdb: report as a file problem
        raise DataFileError(f"{path}: cannot be read ({type(exc).__name__}: {exc})") from exc
    return series_from_frame(frame, source=str(path), symbol=symbol if symbol is not None else path.stem)
