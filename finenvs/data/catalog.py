"""The DuckDB catalog built from the shipped data, and loaders for a user's own data.

On first use the catalog is built from ``envs_data/`` (hashes and schema checked)
into a cache directory, then only ever opened read-only:

* location: ``$FINENVS_DATA`` if set, else the platform's user cache folder (platformdirs): on Linux
  ``$XDG_CACHE_HOME/finenvs`` (default ``~/.cache/finenvs``), on macOS ``~/Library/Caches/finenvs``,
  on Windows ``%LOCALAPPDATA%\\finenvs\\Cache``;
* file name: ``catalog-<first 16 hex of the MANIFEST sha256>-v<schema>.duckdb``, so
  a changed manifest gives a new file and the catalog is rebuilt;
* concurrency: each builder writes a private temporary file in the cache
  directory (``.<catalog stem>.<host>.<pid>.<token>.building.duckdb``) and
  publishes it with an atomic ``os.replace``; two processes starting at once both
  build, the last rename wins, and neither can observe a half-written catalog.
  A temporary left by a build that was killed is removed by the next
  :func:`ensure_catalog` once its process is gone (same host) or it is older
  than ``STALE_BUILD_SECONDS``;
* integrity: the build records, per table, its row count and a checksum of its
  content computed in DuckDB SQL (``bit_xor`` and ``sum`` of ``hash(row)``), and
  the manifest digest. Opening recomputes them (about 20 ms on the shipped data); a
  catalog whose content no longer matches (edited in place, truncated, corrupt) is
  rebuilt with one :class:`CatalogRebuiltWarning`.
  :func:`verify_catalog` (``finenvs data verify``) reports each table.

Tables: ``prices(dataset, symbol, date, open, high, low, close, volume)``,
``rates(series, date, value)``, ``news(id, symbol, published_at, ...)``,
``filing_sections(filing_id, symbol, form, filed, section, ...)``, ``files(...)``
(the manifest), ``meta(key, value)`` and ``checksums(table_name, rows, checksum)``.

Envs copy the arrays they need (:meth:`Catalog.series`) and keep no connection,
so they pickle and fork. Agent-facing reads go through :meth:`Catalog.as_of`.

The user layer (:mod:`finenvs.data.user_layer`, ``finenvs data add``) is merged at
read time: :meth:`Catalog.series`, :meth:`Catalog.symbols`, :meth:`Catalog.news` and
:meth:`Catalog.filings` serve the shipped rows followed by the user's, and re-read
when the layer's manifest changes (its mtime, size and inode are compared on each
read, so an add in the same process is seen at once). :attr:`Catalog.data_digest`
names the data served: the shipped manifest's digest, or one of both when the
layer is not empty.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import socket
import sys
import threading
import time
import uuid
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np

from finenvs.data.asof import AsOfView, Listing, LookAheadCounter
from finenvs.data.documents import FILING_COLUMNS, NEWS_COLUMNS, FilingStore, NewsStore
from finenvs.data.manifest import Manifest, VerifyResult, load_manifest, verify_entry
from finenvs.data.option_chain import OptionChain, chain_from_frame
from finenvs.data.schema import (
    PRICE_FIELDS,
    REQUIRED_COLUMNS,
    PriceSeries,
    SymbolColumn,
    column_map,
    frame_columns,
    series_from_frame,
    split_by_symbol,
)
from finenvs.data.user_files import LayerFiles, merge_series
from finenvs.errors import DataError, DataFileError, UnknownSymbolError, user_file

OPTION_COLUMNS = ("symbol", "snapshot_date", "expiry", "option_type", "strike", "bid", "ask", "last",
                  "implied_vol", "volume", "open_interest", "spot")

CATALOG_SCHEMA_VERSION = 4  # 4: checksums table
DEFAULT_DATASET = "core"
ENV_VAR = "FINENVS_DATA"
#: Moves the user layer (:mod:`finenvs.data.user_layer`); default ``<cache_dir()>/user``.
USER_ENV_VAR = "FINENVS_USER_DATA"
#: A build temporary older than this is removed even when its process cannot be checked (other host, Windows).
STALE_BUILD_SECONDS = 3600
_BUILD_SUFFIX = ".building.duckdb"
# .<catalog stem>.<host>.<pid>.<token>.building.duckdb[.wal|.tmp]; builds before schema 4 had no host part
_BUILD_NAME = re.compile(
    r"\.catalog-[^.]+\.(?:(?P<host>.+)\.)?(?P<pid>\d+)\.(?P<token>[0-9a-f]+)\.building\.duckdb(?:\.wal|\.tmp)?"
)


class CatalogRebuiltWarning(UserWarning):
    """An existing catalog failed its integrity check and was rebuilt from the shipped files."""


def cache_dir() -> Path:
    """Directory holding the built catalog (``$FINENVS_DATA`` overrides; else see the module doc)."""
    override = os.environ.get(ENV_VAR)
    if override:
        return Path(override).expanduser()
    from platformdirs import user_cache_path

    return user_cache_path("finenvs", appauthor=False)


def user_data_dir() -> Path:
    """Folder of the user layer (``finenvs data add``): ``$FINENVS_USER_DATA``, else ``<cache_dir()>/user``."""
    override = os.environ.get(USER_ENV_VAR)
    if override:
        return Path(override).expanduser()
    return cache_dir() / "user"


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
            [["manifest_sha256", manifest.digest], ["schema_version", str(CATALOG_SCHEMA_VERSION)],
             ["duckdb_version", duckdb.__version__]],
        )
        tables = [row[0] for row in con.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main' ORDER BY table_name"
        ).fetchall()]
        con.execute("CREATE TABLE checksums(table_name VARCHAR, rows BIGINT, checksum VARCHAR)")
        con.executemany("INSERT INTO checksums VALUES (?, ?, ?)",
                        [[name, rows, checksum] for name, (rows, checksum) in _table_checksums(con, tables).items()])
        con.execute("CHECKPOINT")
    finally:
        con.close()


def _table_checksums(con: Any, tables: list[str]) -> dict[str, tuple[int, str]]:
    """Row count and content checksum of each table, in one query.

    The checksum is ``bit_xor`` and ``sum`` of DuckDB's ``hash`` of every row: it
    does not depend on row order and changes with any value (the sum also sees a
    duplicated row, which the XOR alone would cancel).
    """
    parts = [f"SELECT '{name}' AS t, count(*) AS n, bit_xor(hash(x)) AS h, sum(hash(x)) AS s FROM \"{name}\" x"
             for name in tables]
    rows = con.execute(" UNION ALL ".join(parts)).fetchall()
    return {t: (int(n), f"{0 if h is None else int(h):016x}-{0 if s is None else int(s)}") for t, n, h, s in rows}


_EMPTY_DOC_TABLES = {
    "news": "CREATE TABLE news(id VARCHAR, symbol VARCHAR, published_at TIMESTAMP, title VARCHAR, summary VARCHAR, "
    "source VARCHAR, url VARCHAR, provider VARCHAR, provider_sentiment VARCHAR)",
    "filing_sections": "CREATE TABLE filing_sections(filing_id VARCHAR, symbol VARCHAR, form VARCHAR, filed DATE, "
    "section VARCHAR, title VARCHAR, text VARCHAR, chars BIGINT, document VARCHAR)",
}


def _check_catalog(path: Path, manifest: Manifest) -> tuple[list[tuple[str, int]], list[str]]:
    """``(intact tables with their rows, problems)`` of the catalog file at ``path`` for ``manifest``."""
    import duckdb

    try:
        con = duckdb.connect(str(path), read_only=True)
    except duckdb.Error as exc:
        return [], [f"cannot be opened ({exc})"]
    try:
        try:
            row = con.execute("SELECT value FROM meta WHERE key = 'manifest_sha256'").fetchone()
            built_by = con.execute("SELECT value FROM meta WHERE key = 'duckdb_version'").fetchone()
            recorded = {t: (int(n), c) for t, n, c in
                        con.execute("SELECT table_name, rows, checksum FROM checksums").fetchall()}
            present = {r[0] for r in con.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main'").fetchall()}
        except duckdb.Error as exc:
            return [], [f"has no readable meta or checksums table ({exc})"]
        if row is None or row[0] != manifest.digest:
            found = "none" if row is None else f"{row[0][:16]}..."
            return [], [f"was built from another manifest (recorded {found}, {manifest.root / 'MANIFEST.json'} is "
                        f"{manifest.digest[:16]}...)"]
        problems = [f"table {t}: missing" for t in sorted(set(recorded) - present)]
        problems += [f"table {t}: not in the recorded build" for t in sorted(present - set(recorded) - {"checksums"})]
        try:
            actual = _table_checksums(con, sorted(set(recorded) & present))
        except duckdb.Error as exc:
            return [], [*problems, f"cannot be read ({exc})"]
        intact: list[tuple[str, int]] = []
        for table, (rows, checksum) in sorted(actual.items()):
            want_rows, want_checksum = recorded[table]
            if rows != want_rows:
                problems.append(f"table {table}: {rows} rows, the build recorded {want_rows}")
            elif checksum != want_checksum:
                problems.append(f"table {table}: content checksum differs from the one recorded at build "
                                f"(row count {rows} unchanged: values were edited)")
            else:
                intact.append((table, rows))
        if problems and built_by is not None and built_by[0] != duckdb.__version__:
            note = f" (built with duckdb {built_by[0]}, running {duckdb.__version__}: its hash may differ)"
            problems = [p + note for p in problems]
        return intact, problems
    finally:
        con.close()


def catalog_problems(path: Path, manifest: Manifest) -> list[str]:
    """What is wrong with the catalog file at ``path`` for ``manifest`` (empty when it is intact).

    Checks that it opens, that it records this manifest's digest, and that every
    table recorded at build time is present with its row count and checksum, and
    no other table was added.
    """
    return _check_catalog(path, manifest)[1]


def verify_catalog(manifest: Manifest | None = None, directory: Path | None = None) -> VerifyResult:
    """Check the built catalog of ``manifest`` table by table (``finenvs data verify``).

    Each intact table is a line of ``checked``, each difference one of
    ``problems``. A catalog not built yet is not a problem: it is built, checked,
    on first use. Nothing is repaired here; the next :func:`ensure_catalog`
    rebuilds a catalog that fails.
    """
    manifest = manifest if manifest is not None else load_manifest()
    path = catalog_path(manifest, directory)
    result = VerifyResult()
    if not path.is_file():
        result.checked.append(f"cache {path}: not built yet (built from the files above on first use)")
        return result
    intact, problems = _check_catalog(path, manifest)
    result.checked += [f"cache {path.name}: table {t}: ok ({n} rows, checksum as recorded)" for t, n in intact]
    result.problems += [f"cache {path}: {p}; the next open rebuilds it" for p in problems]
    return result


def _host() -> str:
    """This host's name as it appears in build temporaries (letters, digits and '-')."""
    return re.sub(r"[^A-Za-z0-9-]", "-", socket.gethostname()) or "host"


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # PermissionError: it exists, owned by someone else
        return True
    return True


def remove_stale_builds(directory: Path, now: float | None = None) -> list[Path]:
    """Delete build temporaries in ``directory`` whose builder is gone; returns what was removed.

    A temporary is stale when its process (named in the file name) no longer
    runs on this host, or when it is older than :data:`STALE_BUILD_SECONDS`
    (the only test for a temporary of another host, and on Windows, where a
    process cannot be probed safely).
    """
    now = time.time() if now is None else now
    host = _host()
    removed: list[Path] = []
    try:
        names = os.listdir(directory)
    except OSError:
        return removed
    for name in names:
        match = _BUILD_NAME.fullmatch(name)
        if match is None:
            continue
        path = directory / name
        try:
            age = now - path.stat().st_mtime
        except OSError:
            continue
        local = match["host"] in (None, host) and sys.platform != "win32"
        if age <= STALE_BUILD_SECONDS and not (local and not _pid_alive(int(match["pid"]))):
            continue
        try:
            if path.is_dir():
                shutil.rmtree(path)
            else:
                path.unlink()
        except FileNotFoundError:
            continue  # another process cleaned it first
        removed.append(path)
    return removed


def ensure_catalog(manifest: Manifest | None = None, directory: Path | None = None) -> Path:
    """Return the path of an intact catalog for ``manifest``, building it if needed.

    An existing file is checked with :func:`catalog_problems` (about 20 ms on the
    shipped data; a :class:`Catalog` checks once, and a process shares
    :func:`default_catalog`); one that fails is rebuilt with a
    :class:`CatalogRebuiltWarning` naming the first problem. Stale build
    temporaries of the cache directory are removed (:func:`remove_stale_builds`).
    Safe to call from several processes at once (atomic publish, see module doc).

    Raises:
        DataFileError: A shipped file is missing or fails its hash.
        DataError: A shipped file breaks the schema.
        OSError: The cache directory cannot be written (message names it and
            ``FINENVS_DATA``).
    """
    manifest = manifest if manifest is not None else load_manifest()
    target = catalog_path(manifest, directory)
    remove_stale_builds(target.parent)
    if target.is_file():
        problems = catalog_problems(target, manifest)
        if not problems:
            return target
        warnings.warn(
            f"finenvs: data catalog {target} failed its integrity check ({problems[0]}"
            f"{f'; {len(problems) - 1} more' if len(problems) > 1 else ''}); rebuilding it from {manifest.root}",
            CatalogRebuiltWarning,
            stacklevel=2,
        )
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OSError(
            f"cannot create the catalog cache directory {target.parent} ({exc}); "
            f"set {ENV_VAR} to a writable directory"
        ) from exc
    tmp = target.parent / f".{target.stem}.{_host()}.{os.getpid()}.{uuid.uuid4().hex[:16]}{_BUILD_SUFFIX}"
    try:
        _build(manifest, tmp)
        os.replace(tmp, target)
    finally:
        for leftover in (tmp, tmp.with_name(tmp.name + ".wal")):
            if leftover.exists():
                leftover.unlink()
        spill = tmp.with_name(tmp.name + ".tmp")
        if spill.is_dir():
            shutil.rmtree(spill, ignore_errors=True)
    return target


class Catalog:
    """Read-only access to the shipped market data, with the user layer merged in.

    Args:
        data_dir: Folder with MANIFEST.json and the data files (default: shipped data).
        cache: Directory for the built catalog (default: :func:`cache_dir`).
        user_data: Folder of the user layer (default: :func:`user_data_dir`,
            resolved at each read, so ``FINENVS_USER_DATA`` set later is followed).
    """

    def __init__(self, data_dir: Path | str | None = None, cache: Path | str | None = None,
                 user_data: Path | str | None = None) -> None:
        self.manifest = load_manifest(Path(data_dir) if data_dir is not None else None)
        self.path = ensure_catalog(self.manifest, Path(cache) if cache is not None else None)
        self._user_root = Path(user_data).expanduser() if user_data is not None else None
        self._layers: dict[tuple[str | None, ...], LayerFiles] = {}
        self._layer_key: tuple[Path, Any] | None = None  # (layer folder, manifest stamp) the merged caches hold
        self._shipped: dict[tuple[str, str], PriceSeries] = {}
        self._series: dict[tuple[str, str], PriceSeries] = {}
        self._shipped_first: dict[str, dict[str, str]] = {}
        self._first_bars: dict[str, Mapping[str, str]] = {}
        self._rates: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._shipped_docs: dict[str, dict[str, Any]] = {}
        self._news: NewsStore | None = None
        self._filings: FilingStore | None = None
        self._chains: dict[str, list[Any]] = {}
        self._lock = threading.Lock()

    def user_layer(self) -> LayerFiles:
        """The user layer this catalog merges (see :mod:`finenvs.data.user_layer`)."""
        env = os.environ
        where = (env.get(USER_ENV_VAR), env.get(ENV_VAR), env.get("XDG_CACHE_HOME"))  # what user_data_dir reads
        layer = self._layers.get(where)
        if layer is None:
            root = self._user_root if self._user_root is not None else user_data_dir()
            with self._lock:
                layer = self._layers.setdefault(where, LayerFiles(root))
        return layer

    def _sync_layer(self) -> LayerFiles:
        """The user layer, dropping the merged caches when it changed since they were filled."""
        layer = self.user_layer()
        key = (layer.root, layer.stamp())
        with self._lock:
            if key != self._layer_key:
                self._series = {}
                self._first_bars = {}
                self._news = None
                self._filings = None
                self._layer_key = key
        return layer

    @property
    def data_digest(self) -> str:
        """The shipped manifest's digest when the user layer is empty, else a sha256 of both digests."""
        user = self._sync_layer().digest
        if user is None:
            return self.manifest.digest
        return hashlib.sha256(f"finenvs-data\nshipped {self.manifest.digest}\nuser {user}\n".encode()).hexdigest()

    def _query(self, sql: str, params: list[Any] | None = None) -> dict[str, np.ndarray]:
        import duckdb

        con = duckdb.connect(str(self.path), read_only=True)
        try:
            table = con.execute(sql, params or []).fetchnumpy()
            # an ENUM column comes back as a pandas Categorical: an array like the rest (NULLs keep their mask)
            return {name: np.asanyarray(col) for name, col in table.items()}
        finally:
            con.close()

    def datasets(self) -> list[str]:
        """Names of the price datasets (``core`` is the default)."""
        return list(self.manifest.datasets("prices"))

    def symbols(self, dataset: str = DEFAULT_DATASET) -> list[str]:
        """Symbols held by a dataset, shipped and user-added, sorted.

        The list is a :class:`~finenvs.data.asof.Listing`: it also knows each symbol's first bar
        (:meth:`first_bars`, read only when asked), so that an as-of view tells the symbols
        listed by its clock without reading every series.
        """
        shipped = self._entry(dataset).symbols
        names = sorted(set(shipped) | set(self._sync_layer().symbols(dataset)))
        with self._lock:
            layer_key = self._layer_key
        return Listing(names, functools.partial(self._first_bars_of, dataset, layer_key))

    def _first_bars_of(self, dataset: str, layer_key: Any) -> Mapping[str, str]:
        """:meth:`first_bars` for a list made when the layer was at ``layer_key`` (no new check while it is)."""
        with self._lock:
            cached = self._first_bars.get(dataset) if self._layer_key == layer_key else None
        return cached if cached is not None else self.first_bars(dataset)

    def first_bars(self, dataset: str = DEFAULT_DATASET) -> Mapping[str, str]:
        """The date (``YYYY-MM-DD``) of each symbol's first bar in ``dataset``, shipped or user-added (read-only).

        One query of the catalog per dataset and process for the shipped bars; the user layer's
        first dates come from its manifest.
        """
        layer = self._sync_layer()
        with self._lock:
            cached = self._first_bars.get(dataset)
            layer_key = self._layer_key
        if cached is not None:
            return cached
        shipped = self._shipped_first.get(dataset)
        if shipped is None:
            self._entry(dataset)
            table = self._query("SELECT symbol, MIN(date) AS first FROM prices WHERE dataset = ? GROUP BY symbol",
                                [dataset])
            days = np.datetime_as_string(np.asarray(table["first"]).astype("datetime64[D]"), unit="D")
            shipped = {str(sym): str(day) for sym, day in zip(table["symbol"].tolist(), days, strict=True)}
            with self._lock:
                self._shipped_first[dataset] = shipped
        first = dict(shipped)
        for entry in layer.entries().values():
            if entry.kind == "prices" and entry.dataset == dataset and entry.date_min:
                day = str(np.datetime64(entry.date_min, "D"))
                first[entry.symbol] = min(first.get(entry.symbol, day), day)
        view = MappingProxyType(first)
        with self._lock:
            if self._layer_key == layer_key:  # not when the layer changed meanwhile
                self._first_bars[dataset] = view
        return view

    def _entry(self, dataset: str) -> Any:
        entries = self.manifest.datasets("prices")
        if dataset not in entries:
            raise DataError(f"unknown dataset {dataset!r}; valid datasets: {sorted(entries)}")
        return entries[dataset]

    def series(self, symbol: str, dataset: str = DEFAULT_DATASET) -> PriceSeries:
        """Full history of one symbol, for simulators.

        A simulator owns the date lock (it only shows rows up to its clock);
        agent-facing code must read through :meth:`as_of` instead.

        The shipped bars are followed by the user layer's bars of the symbol.

        Raises:
            UnknownSymbolError: The dataset does not hold ``symbol`` (lists those it does).
        """
        self._entry(dataset)
        layer = self._sync_layer()
        key = (dataset, symbol)
        with self._lock:
            cached = self._series.get(key)
            layer_key = self._layer_key
        if cached is not None:
            return cached
        series = merge_series(self.shipped_series(symbol, dataset), layer.series(symbol, dataset))
        if series is None:
            raise UnknownSymbolError(
                f"unknown symbol {symbol!r} in dataset {dataset!r}; valid symbols: {self.symbols(dataset)}"
            )
        with self._lock:
            if self._layer_key == layer_key:  # not when the layer changed meanwhile
                self._series[key] = series
        return series

    def shipped_series(self, symbol: str, dataset: str = DEFAULT_DATASET) -> PriceSeries | None:
        """The shipped bars of ``symbol`` alone (None when the dataset does not ship it)."""
        if symbol not in self._entry(dataset).symbols:
            return None
        key = (dataset, symbol)
        with self._lock:
            cached = self._shipped.get(key)
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
            self._shipped[key] = series
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

    def shipped_documents(self, kind: str) -> dict[str, Any]:
        """The shipped ``"news"`` or ``"filings"`` table as columns (object arrays; times as datetime64)."""
        with self._lock:
            cached = self._shipped_docs.get(kind)
        if cached is None:
            if kind == "news":
                cached = _object_columns(self._query(f"SELECT {', '.join(NEWS_COLUMNS)} FROM news"))
                cached["published_at"] = np.asarray(cached["published_at"]).astype("datetime64[s]")
            elif kind == "filings":
                cached = _object_columns(self._query(f"SELECT {', '.join(FILING_COLUMNS)} FROM filing_sections"))
                cached["filed"] = np.asarray(cached["filed"]).astype("datetime64[D]")
            else:
                raise ValueError(f"kind {kind!r}: use 'news' or 'filings'")
            with self._lock:
                self._shipped_docs[kind] = cached
        return cached

    def news(self) -> NewsStore:
        """Every news item, shipped and user-added, for simulators and tools (agents read through :meth:`as_of`)."""
        layer = self._sync_layer()
        store = self._news
        if store is None:
            store = NewsStore.from_columns(_joined(self.shipped_documents("news"), layer.news_columns()))
            with self._lock:
                self._news = store
        return store

    def filings(self) -> FilingStore:
        """Every filing section, shipped and user-added (agents read through :meth:`as_of`)."""
        layer = self._sync_layer()
        store = self._filings
        if store is None:
            store = FilingStore.from_columns(_joined(self.shipped_documents("filings"), layer.filing_columns()))
            with self._lock:
                self._filings = store
        return store

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


def _joined(shipped: dict[str, Any], user: dict[str, Any] | None) -> dict[str, Any]:
    """Columns of the shipped rows followed by the user's (the shipped ones when there are none)."""
    if user is None:
        return shipped
    out: dict[str, Any] = {}
    for name, col in shipped.items():
        col = np.asarray(col)
        extra = np.asarray(user[name])
        if col.dtype.kind == "M":
            out[name] = np.concatenate([col, extra.astype(col.dtype)])
        else:
            out[name] = np.concatenate([col.astype(object), extra.astype(object)])
    return out


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


#: Rows per chunk when a CSV is read: memory stays at the parsed arrays plus one chunk.
CSV_CHUNK_ROWS = 65_536


def load_prices(data: Any, symbol: str | None = None) -> dict[str, PriceSeries]:
    """Load a user's own prices through the same schema checks as the shipped data.

    Args:
        data: Path to a CSV or Parquet file, or a pandas DataFrame, in the finenvs
            schema (``[symbol,] date, open, high, low, close, volume[, adj_close]``;
            with an adjusted-close column (``Adj Close``) the bars are scaled to it,
            else the prices are taken as adjusted; timestamps with a UTC offset
            become New York dates; see :mod:`finenvs.data.schema` for every rule,
            including the valid price range).
        symbol: Name for data without a ``symbol`` column (default: the file stem).

    Returns:
        Mapping symbol -> checked :class:`PriceSeries`.

    Raises:
        DataFileError: Missing, unreadable or unsupported file.
        DataError: Schema broken: a missing or duplicated column, an empty cell, a
            value that is not a number or a date, a price outside the valid range, a
            negative volume, unsorted or duplicated dates (names the file, row and column).
    """
    import pandas as pd

    if isinstance(data, pd.DataFrame):
        return series_from_frame(data, source="DataFrame", symbol=symbol)
    path = user_file(data, "price file")
    suffix = path.suffix.lower()
    if suffix not in (".csv", ".parquet", ".pq"):
        raise DataFileError(f"{path}: unsupported file type {suffix!r}; use .csv or .parquet")
    name = symbol if symbol is not None else path.stem
    try:
        table = _read_csv(path, name) if suffix == ".csv" else _read_parquet(path, name)
    except DataError:
        raise
    except Exception as exc:  # parser errors of pandas/duckdb: report as a file problem
        raise DataFileError(f"{path}: cannot be read ({type(exc).__name__}: {exc})") from exc
    if len(table["date"]) == 0:
        raise DataError(f"{path}: the table has no rows")
    return split_by_symbol(table, str(path), copy=False)  # the arrays were made here, for this


def _read_csv(path: Path, symbol: str) -> dict[str, Any]:
    """A CSV's columns as arrays, read in chunks of :data:`CSV_CHUNK_ROWS` rows (checked as in :func:`frame_columns`)."""
    import csv

    import pandas as pd

    with open(path, newline="", encoding="utf-8-sig", errors="replace") as fh:
        header = next((row for row in csv.reader(fh) if any(cell.strip() for cell in row)), [])
    if not header:
        raise DataError(f"{path}: empty file (only blank lines); a price file needs a header line "
                        f"{','.join(REQUIRED_COLUMNS)} and one row per bar")
    column_map(header, str(path), need_symbol=False)  # duplicated names: pandas would rename them silently
    labels = pd.read_csv(path, nrows=0).columns
    text_columns = {label: str for label in labels if str(label).strip().lower() in ("symbol", "date")}
    chunks = pd.read_csv(path, chunksize=CSV_CHUNK_ROWS, dtype=text_columns)
    return _concat_chunks(chunks, str(path), symbol, empty=lambda: pd.read_csv(path, nrows=0, dtype=text_columns))


def _read_parquet(path: Path, symbol: str) -> dict[str, Any]:
    """A Parquet file's schema columns (only those are read), in chunks, checked as in :func:`frame_columns`."""
    import duckdb

    con = duckdb.connect(config={"threads": 1})  # one reader thread: a third less memory, and small files anyway
    try:
        # the file's own column names: duckdb's reader renames duplicates (close, close_1)
        raw = [row[0] for row in con.execute(
            "SELECT name FROM parquet_schema(?) WHERE num_children IS NULL OR num_children = 0", [str(path)]
        ).fetchall()]
        column_map(raw, str(path), need_symbol=False)
        labels = [row[0] for row in con.execute("DESCRIBE SELECT * FROM read_parquet(?)", [str(path)]).fetchall()]
        wanted = column_map(labels, str(path), need_symbol=False)
        select = ", ".join('"' + str(label).replace('"', '""') + '"' for label in wanted.values())
        result = con.execute(f"SELECT {select} FROM read_parquet(?)", [str(path)])
        vectors = max(1, CSV_CHUNK_ROWS // 2048)

        def chunks() -> Any:
            while len(chunk := result.fetch_df_chunk(vectors)):
                yield chunk

        return _concat_chunks(chunks(), str(path), symbol, empty=lambda: result.df())
    finally:
        con.close()


def _concat_chunks(chunks: Any, source: str, symbol: str, *, empty: Callable[[], Any]) -> dict[str, Any]:
    """Columns of consecutive DataFrame chunks of one file, converted chunk by chunk and joined.

    Row numbers in errors count from the file's first data row; symbols keep one
    code across chunks. ``empty()`` (a frame with the file's columns) is checked when
    there is no chunk at all.
    """
    registry: dict[str, int] = {}
    parts: list[dict[str, Any]] = []
    first = 0
    for chunk in chunks:
        parts.append(frame_columns(chunk, source=source, symbol=symbol, first_row=first, registry=registry))
        first += len(chunk)
    if not parts:
        parts.append(frame_columns(empty(), source=source, symbol=symbol))
    table: dict[str, Any] = {}
    for key in ("date", *PRICE_FIELDS):  # one column at a time, dropping its chunks as it goes
        table[key] = np.concatenate([part.pop(key) for part in parts])
    if isinstance(parts[0]["symbol"], SymbolColumn):
        table["symbol"] = SymbolColumn(np.concatenate([part["symbol"].codes for part in parts]), list(registry))
    else:
        table["symbol"] = symbol
    table["adjusted_from"] = parts[0]["adjusted_from"]  # every chunk has the file's columns
    return table
