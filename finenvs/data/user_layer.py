"""The user layer of the catalog: bars, news and filings a user appends after the shipped data.

A live run rolls forward one day at a time (HERCULEAN's live regime): the user
appends the next days' bars, news items and filings with ``finenvs data add``,
and :class:`finenvs.data.catalog.Catalog` serves the shipped rows followed by
the user's. The shipped files and the built DuckDB catalog are never touched.

Location: ``$FINENVS_USER_DATA`` if set, else ``<cache_dir()>/user`` (so
``FINENVS_DATA`` moves it with the catalog cache). Layout::

    prices/<dataset>/<SYMBOL>.csv   date,open,high,low,close,volume (the price schema of finenvs.data.schema)
    news.csv                        id,symbol,published_at,title,summary,source,url,provider,provider_sentiment
    filings.csv                     filing_id,symbol,form,filed,section,title,text,document
    xbrl/<bundle>/                  one filing's XBRL bundle as the shipped corpus holds them (finenvs data fetch
                                    --xbrl): instance, schema, four linkbases and filing.json
    MANIFEST.json                   per file: sha256, rows, date range; and the layer digest

Rules of an add (each names the file, row and column of the first row that breaks one, as a
:class:`~finenvs.errors.DataError`):

* prices go through :func:`finenvs.data.catalog.load_prices` (required columns, finite prices
  in range, sorted unique dates; an adjusted-close column scales the bars). A bar dated on or
  before the last date held for the symbol in that dataset (shipped rows plus earlier user rows)
  must equal the held bar within :data:`OVERLAP_RTOL` relative in every column: re-adding a day
  is a no-op, changing one is an error. The other bars must come after the last held date;
  nothing is inserted into, or prepended to, a held history. A symbol the dataset does not ship
  is allowed and joins its symbol list. The dataset must be one the catalog ships.
* news: ``id``, ``symbol``, ``published_at``, ``title``, ``source`` (``publisher`` is accepted as
  its name) and ``url`` are required and non-empty; ``published_at`` is an ISO 8601 timestamp with
  a time zone (``Z`` or ``+hh:mm``), stored in UTC rounded up to the second (never earlier than
  published); ``url`` is http(s). ``summary``, ``provider`` (default ``user``) and
  ``provider_sentiment`` are optional.
* filings: ``filing_id``, ``symbol``, ``form``, ``filed`` (``YYYY-MM-DD``), ``section`` and
  ``text`` are required and non-empty; ``title`` (default: the section) and ``document`` optional.
  The sections of one filing share its ``filed`` date, ``symbol`` and ``form``, in the file and with
  the sections already held (shipped or user): a row that differs is refused, naming the file, row,
  column and the section it differs from. A section filed later belongs to another filing (an
  amendment): give it its own ``filing_id``. (Refused rather than split, so that no filing id is
  invented and a filing's date never depends on which of its sections an agent reads; each section
  is still served only from its own filing date, see :mod:`finenvs.data.asof`.)
* an item whose key (``(id, symbol)`` for news, ``(filing_id, section)`` for filings) is already
  held is skipped when every stored column is equal, else an error naming the column that differs.
* XBRL bundles (:meth:`UserLayer.add_xbrl`): the bundle is checked as a whole by the caller's ``check``
  (the data layer parses no XBRL: ``finenvs data fetch`` passes :func:`finenvs.xbrl.corpus.bundle_rows`, which
  loads it as FinAudit-v0 does and counts each file's rows) before it enters the layer; it moves into place
  whole (one rename), so a reader of ``xbrl/`` never sees part of one. Every file is recorded with the bundle's
  known-from day (``filed`` of its ``filing.json``) as its date range. A bundle already held is skipped when
  every file is equal, else an error naming the file that differs.

Each add writes its file and then the manifest with an atomic replace (temporary file in the
same folder, ``os.replace``) under an exclusive lock of ``<layer>/.lock`` (POSIX), so a reader
never sees half a file. Reads check each file's sha256 against the manifest: a file edited by
hand fails with a :class:`~finenvs.errors.DataFileError`, and :meth:`UserLayer.verify` (run by
``finenvs data verify``) lists every difference.

The date lock is unchanged: user news is visible from its publication time and user filings
from 17:30 New York on their filing date, exactly as shipped ones
(:mod:`finenvs.data.documents`).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import uuid
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import numpy as np

from finenvs.data.catalog import USER_ENV_VAR as ENV_VAR
from finenvs.data.catalog import default_catalog, load_prices, user_data_dir
from finenvs.data.schema import PRICE_FIELDS, PriceSeries, series_from_frame
from finenvs.data.user_files import (
    FILINGS_FILE,
    LAYER_FORMAT,
    NEWS_FILE,
    USER_FILING_COLUMNS,
    USER_NEWS_COLUMNS,
    XBRL_DIR,
    LayerFile,
    LayerFiles,
    layer_digest,
    merge_series,
    sha256_bytes,
)
from finenvs.errors import DataError, DataFileError, shown, user_file
from finenvs.text.plural import counted

NEWS_REQUIRED = ("id", "symbol", "published_at", "title", "source", "url")
FILING_REQUIRED = ("filing_id", "symbol", "form", "filed", "section", "text")
#: Largest relative difference at which a re-added bar counts as the held one.
OVERLAP_RTOL = 1e-9
#: A symbol names a file: letters, digits and ``^ . _ = -``, starting with a letter, digit or ``^``.
SYMBOL_PATTERN = re.compile(r"[A-Za-z0-9^][A-Za-z0-9^._=-]{0,31}")
_AWARE = re.compile(r".*\d:\d\d(?::\d\d(?:[.,]\d+)?)?\s*(?:Z|z|[+-]\d\d(?::?\d\d)?)")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_BUNDLE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,119}")


@dataclass(frozen=True)
class AddResult:
    """What one ``add_*`` did: rows appended, rows already held (skipped), and the layer after it."""

    kind: str
    source: str
    file: Path
    added: int
    skipped: int
    date_min: str | None  # of the rows added (None when nothing was added)
    date_max: str | None
    rows: int  # rows of the layer file after the add
    digest: str | None  # layer digest after the add
    symbol: str = ""
    dataset: str = ""


def _write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder and ``os.replace``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:12]}.tmp")
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def _float_text(x: float) -> str:
    return repr(float(x))  # shortest text that reads back to the same float


def _prices_csv(series: PriceSeries) -> bytes:
    lines = ["date,open,high,low,close,volume"]
    for d, *values in zip(series.dates, *(getattr(series, f) for f in PRICE_FIELDS), strict=True):
        lines.append(",".join([str(d), *(_float_text(v) for v in values)]))
    return ("\n".join(lines) + "\n").encode("utf-8")


def _text_csv(columns: tuple[str, ...], table: dict[str, list[str]]) -> bytes:
    import csv

    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows(zip(*(table[c] for c in columns), strict=True))
    return out.getvalue().encode("utf-8")


class UserLayer(LayerFiles):
    """The user layer in one folder: read it (:class:`~finenvs.data.user_files.LayerFiles`), append to it.

    Args:
        root: The layer's folder (default: :func:`user_data_dir`). Created on the first add.
    """

    def __init__(self, root: Path | str | None = None) -> None:
        super().__init__(root if root is not None else user_data_dir())

    # ------------------------------------------------------------------ writes
    @contextlib.contextmanager
    def _exclusive(self) -> Iterator[None]:
        """One writer at a time: an OS file lock on ``<layer>/.lock`` (``flock`` on POSIX, ``msvcrt`` on Windows)."""
        from filelock import FileLock

        self.root.mkdir(parents=True, exist_ok=True)
        with FileLock(self.root / ".lock"):
            yield

    def _publish(self, entry: LayerFile, data: bytes) -> str | None:
        """Write one layer file, then the manifest recording it; returns the new layer digest."""
        entries = dict(self._read_manifest())
        entries[entry.file] = entry
        _write_atomic(self.root / entry.file, data)
        return self._write_manifest(entries)

    def add_prices(self, data: Any, symbol: str, dataset: str = "core", *, catalog: Any = None,
                   source: str | None = None) -> AddResult:
        """Append bars of ``symbol`` to ``dataset`` (see the module doc for the rules).

        Args:
            data: A CSV or Parquet file, or a DataFrame, in the price schema.
            symbol: The symbol the bars belong to (a ``symbol`` column, if any, must hold only it).
            dataset: A price dataset the catalog ships.
            catalog: The catalog whose shipped bars are held (default: the process-wide one).
            source: Name of a DataFrame in messages (default ``"DataFrame"``; a file is named by its path).

        Raises:
            DataError: The data breaks the schema, conflicts with a held bar, or would go into a held history.
        """
        catalog = catalog if catalog is not None else default_catalog()
        if not isinstance(symbol, str) or not SYMBOL_PATTERN.fullmatch(symbol):
            raise DataError(f"symbol {shown(symbol)}: use letters, digits and ^ . _ = - (at most 32 characters)")
        if dataset not in catalog.datasets():
            raise DataError(f"unknown dataset {dataset!r}; valid datasets: {sorted(catalog.datasets())}")
        if source is not None and not isinstance(data, (str, os.PathLike)):
            loaded = series_from_frame(data, source=source, symbol=symbol)
        else:
            source = "DataFrame" if not isinstance(data, (str, os.PathLike)) else str(data)
            loaded = load_prices(data, symbol=symbol)
        if set(loaded) != {symbol}:
            other = next(s for s in loaded if s != symbol)
            raise DataError(f"{source}: column 'symbol': row {_first_row_of(data, other)} holds {other!r}; "
                            f"a file added for {symbol!r} must hold only its bars")
        new = loaded[symbol]
        with self._exclusive():
            self._state = None
            user = self.series(symbol, dataset)
            shipped = catalog.shipped_series(symbol, dataset)
            held = merge_series(shipped, user)
            start = 0
            if held is not None:
                start = _check_overlap(new, held, shipped, source, symbol, dataset,
                                       str(self.root / self.price_file(symbol, dataset)))
            if start == len(new):
                entry = self.entries().get(self.price_file(symbol, dataset))
                return AddResult("prices", source, self.root / self.price_file(symbol, dataset), 0, len(new),
                                 None, None, entry.rows if entry else 0, self.digest, symbol, dataset)
            added = new.slice(start, len(new))
            if user is not None:
                keep = user.dates > shipped.dates[-1] if shipped is not None else np.ones(len(user), bool)
                body = PriceSeries.from_arrays(
                    symbol, *(np.concatenate([getattr(user, f)[keep], getattr(added, f)])
                              for f in ("dates", *PRICE_FIELDS)), validate=False)
            else:
                body = added
            data_bytes = _prices_csv(body)
            entry = LayerFile(self.price_file(symbol, dataset), "prices", dataset, symbol, sha256_bytes(data_bytes),
                              len(body), str(body.dates[0]), str(body.dates[-1]))
            digest = self._publish(entry, data_bytes)
            self._state = None
        return AddResult("prices", source, self.root / entry.file, len(added), start, str(added.dates[0]),
                         str(added.dates[-1]), len(body), digest, symbol, dataset)

    def add_xbrl(self, bundle: str, files: dict[str, bytes], *, symbol: str, filed: str,
                 check: Any, source: str) -> AddResult:
        """Add one XBRL bundle as ``xbrl/<bundle>/`` (see the module doc for the rules).

        Args:
            bundle: The bundle's folder name (letters, digits, ``_ . -``).
            files: Its files by name (no folders): instance, schema, linkbases and ``filing.json``.
            symbol: The ticker it belongs to (recorded in the manifest).
            filed: The first day its facts may be seen (ISO), recorded as every file's date range.
            check: ``check(folder) -> {file name: rows}`` run on the staged bundle; raises a DataError naming the
                file to refuse it.
            source: What the bundle is, for messages (e.g. ``edgar XBRL of AAPL 0000320193-25-000057``).

        Returns:
            ``added`` 1 (or 0 and ``skipped`` 1 when held with equal files); ``rows``: the facts of its instance.

        Raises:
            DataError: A name that cannot be a folder or file, a bad day, a refused bundle, or a held bundle whose
                files differ.
        """
        if not isinstance(bundle, str) or not _BUNDLE.fullmatch(bundle):
            raise DataError(f"{source}: bundle name {shown(bundle)}: use letters, digits and _ . - (at most 120)")
        if not isinstance(symbol, str) or not SYMBOL_PATTERN.fullmatch(symbol):
            raise DataError(f"{source}: symbol {shown(symbol)}: use letters, digits and ^ . _ = - (at most 32 "
                            "characters)")
        if not _is_day(filed):
            raise DataError(f"{source}: field 'filed': {shown(filed)} is not a date YYYY-MM-DD")
        bad = [n for n in files if not _BUNDLE.fullmatch(n) or n.startswith(".")]
        if bad or not files:
            raise DataError(f"{source}: file name {shown(bad[0] if bad else '')}: a bundle holds named files only")
        prefix = f"{XBRL_DIR}/{bundle}/"
        with self._exclusive():
            self._state = None
            held = {e.file[len(prefix):]: e for e in self.xbrl_bundles().get(bundle, [])}
            if held:
                for name in sorted(set(held) | set(files)):
                    if name not in files or name not in held or sha256_bytes(files[name]) != held[name].sha256:
                        raise DataError(f"{source}: file {name!r} of bundle {bundle!r} differs from the bundle the "
                                        f"user layer holds ({self.xbrl_dir / bundle}); a held bundle cannot change")
                facts = max((e.rows for n, e in held.items() if _is_instance_name(n)), default=0)
                return AddResult("xbrl", source, self.xbrl_dir / bundle, 0, 1, None, None, facts, self.digest,
                                 symbol, bundle)
            for stale in self.root.glob(".staging-*"):  # left by a killed add (one writer holds the lock)
                _remove_tree(stale)
            staging = self.root / f".staging-{os.getpid()}-{uuid.uuid4().hex[:12]}"
            try:
                folder = staging / bundle
                for name, data in files.items():
                    _write_atomic(folder / name, data)
                rows = dict(check(folder))
                missing = sorted(set(files) - set(rows))
                if missing:
                    raise DataError(f"{source}: the check gave no row count for file {missing[0]!r}")
                self.xbrl_dir.mkdir(parents=True, exist_ok=True)
                target = self.xbrl_dir / bundle
                if target.exists():  # left by an add that died before its manifest: not held, so replaced
                    _remove_tree(target)
                os.replace(folder, target)
            finally:
                _remove_tree(staging)
            entries = dict(self._read_manifest())
            for name, data in files.items():
                entry = LayerFile(prefix + name, "xbrl", bundle, symbol, sha256_bytes(data), int(rows[name]), filed,
                                  filed)
                entries[entry.file] = entry
            digest = self._write_manifest(entries)
            self._state = None
        facts = max((int(rows[n]) for n in files if _is_instance_name(n)), default=0)
        return AddResult("xbrl", source, self.xbrl_dir / bundle, 1, 0, filed, filed, facts, digest, symbol, bundle)

    def _write_manifest(self, entries: dict[str, LayerFile]) -> str | None:
        files = sorted(entries.values(), key=lambda e: e.file)
        digest = layer_digest(files)
        doc = {"format": LAYER_FORMAT, "digest": digest, "files": [asdict(f) for f in files]}
        _write_atomic(self.manifest_path, (json.dumps(doc, indent=1, sort_keys=True) + "\n").encode("utf-8"))
        return digest

    def add_news(self, data: Any, *, catalog: Any = None, source: str | None = None) -> AddResult:
        """Append news items from a CSV/Parquet file or DataFrame (see the module doc for the rules).

        ``source`` names a DataFrame in messages (default ``"DataFrame"``)."""
        return self._add_documents("news", data, catalog, source)

    def add_filings(self, data: Any, *, catalog: Any = None, source: str | None = None) -> AddResult:
        """Append filing sections from a CSV/Parquet file or DataFrame (see the module doc for the rules).

        ``source`` names a DataFrame in messages (default ``"DataFrame"``)."""
        return self._add_documents("filings", data, catalog, source)

    def _add_documents(self, kind: str, data: Any, catalog: Any, label: str | None = None) -> AddResult:
        catalog = catalog if catalog is not None else default_catalog()
        source, frame = _read_input(data)
        if label is not None and source == "DataFrame":
            source = label
        if kind == "news":
            table, key_cols, columns, name = _news_rows(frame, source), ("id", "symbol"), USER_NEWS_COLUMNS, NEWS_FILE
            day_col = "published_at"
        else:
            table, key_cols, columns, name = (_filing_rows(frame, source), ("filing_id", "section"),
                                              USER_FILING_COLUMNS, FILINGS_FILE)
            day_col = "filed"
        n = len(table[columns[0]])
        seen: dict[tuple[str, str], int] = {}
        for i in range(n):
            key = (table[key_cols[0]][i], table[key_cols[1]][i])
            if key in seen:
                raise DataError(f"{source}: row {i + 1}, columns {key_cols}: {key} repeats row {seen[key] + 1}; "
                                "each must be unique")
            seen[key] = i
        with self._exclusive():
            self._state = None
            existing = self.documents(kind) or {c: [] for c in columns}
            held = _held_documents(catalog.shipped_documents(kind), kind, columns, key_cols)
            held.update({(existing[key_cols[0]][j], existing[key_cols[1]][j]): ("the user layer", j, existing)
                         for j in range(len(existing[columns[0]]))})
            fresh: list[int] = []
            for i in range(n):
                key = (table[key_cols[0]][i], table[key_cols[1]][i])
                if key not in held:
                    fresh.append(i)
                    continue
                where, j, other = held[key]
                for col in columns:
                    if table[col][i] != other[col][j]:
                        raise DataError(
                            f"{source}: row {i + 1}, column {col!r}: {shown(table[col][i])} differs from the value "
                            f"held by {where} for {key_cols} = {key}: {shown(other[col][j])}; a held item cannot change")
            if kind == "filings":
                _check_filing_sections_agree(table, held, source)
            path = self.root / name
            if not fresh:
                return AddResult(kind, source, path, 0, n, None, None, len(existing[columns[0]]), self.digest)
            body = {c: list(existing[c]) + [table[c][i] for i in fresh] for c in columns}
            data_bytes = _text_csv(columns, body)
            days = sorted(v[:10] for v in body[day_col])
            entry = LayerFile(name, kind, "", "", sha256_bytes(data_bytes), len(days), days[0], days[-1])
            digest = self._publish(entry, data_bytes)
            self._state = None
        added_days = sorted(table[day_col][i][:10] for i in fresh)
        return AddResult(kind, source, path, len(fresh), n - len(fresh), added_days[0], added_days[-1], len(days),
                         digest)


    # ------------------------------------------------------------------ removal
    def _unpublish(self, drop: set[str], put: tuple[LayerFile, bytes] | None = None) -> str | None:
        """Write the manifest without the files ``drop`` (and with ``put``, whose file is written first), then
        delete the dropped files; returns the new layer digest. A removal cut short leaves at worst a file the
        manifest no longer lists (never read; ``finenvs data verify`` names it), never a listed file missing."""
        entries = {k: v for k, v in self._read_manifest().items() if k not in drop}
        if put is not None:
            entries[put[0].file] = put[0]
            _write_atomic(self.root / put[0].file, put[1])
        digest = self._write_manifest(entries)
        for name in sorted(drop):
            with contextlib.suppress(FileNotFoundError):
                (self.root / name).unlink()
        for folder in sorted({(self.root / name).parent for name in drop}, reverse=True):  # an XBRL bundle's folder
            if folder != self.root:
                with contextlib.suppress(OSError):
                    folder.rmdir()
        self._state = None
        return digest

    def remove_prices(self, symbols: Any, dataset: str = "core", *, catalog: Any = None) -> list[LayerFile]:
        """Remove the user layer's bars of ``symbols`` from ``dataset`` (the shipped bars stay: they are part of
        finenvs). Every symbol is checked before anything is removed.

        Returns:
            The manifest records of the removed files (rows and dates of the bars removed).

        Raises:
            ValueError: An unknown dataset, or a symbol without user bars in it (names it, says whether the
                dataset ships it, and lists the symbols with user bars).
        """
        catalog = catalog if catalog is not None else default_catalog()
        if dataset not in catalog.datasets():
            raise ValueError(f"unknown dataset {shown(dataset)}; valid datasets: {sorted(catalog.datasets())}")
        symbols = list(dict.fromkeys(symbols))
        with self._exclusive():
            self._state = None
            entries = self.entries()
            found = [entries.get(self.price_file(str(s), dataset)) for s in symbols]
            missing = [s for s, e in zip(symbols, found, strict=True) if e is None]
            if missing:
                held = self.symbols(dataset)
                first = missing[0]
                shipped = ("; its shipped bars are part of finenvs and cannot be removed" if
                           isinstance(first, str) and first in catalog.manifest.datasets("prices")[dataset].symbols
                           else "")
                raise ValueError(f"the user layer holds no bars of {shown(first, 40)} in dataset {dataset!r}{shipped} "
                                 f"(symbols with user bars there: {', '.join(held) if held else 'none'})")
            removed = [e for e in found if e is not None]
            self._unpublish({e.file for e in removed})
        return removed

    def remove_documents(self, kind: str, symbols: Any = None) -> tuple[int, LayerFile | None]:
        """Remove the user layer's news items (``kind="news"``) or filing sections (``"filings"``): all of them, or
        those of ``symbols``. Shipped items stay.

        Returns:
            ``(items removed, the layer file's record after the removal or None when none is left)``.

        Raises:
            ValueError: The layer holds none (of a given symbol: names it and lists the symbols it holds).
        """
        name, columns, day_col = ((NEWS_FILE, USER_NEWS_COLUMNS, "published_at") if kind == "news"
                                  else (FILINGS_FILE, USER_FILING_COLUMNS, "filed"))
        what = "news items" if kind == "news" else "filing sections"
        with self._exclusive():
            self._state = None
            table = self.documents(kind)
            if table is None:
                raise ValueError(f"the user layer holds no {what} (shipped ones are part of finenvs and cannot be "
                                 "removed)")
            n = len(table[columns[0]])
            if symbols is None:
                self._unpublish({name})
                return n, None
            wanted = set(dict.fromkeys(symbols))
            held = sorted(set(table["symbol"]))
            missing = [s for s in dict.fromkeys(symbols) if s not in held]
            if missing:
                raise ValueError(f"the user layer holds no {what} of {shown(missing[0], 40)} (it holds {what} of: "
                                 f"{', '.join(held)})")
            keep = [i for i in range(n) if table["symbol"][i] not in wanted]
            if not keep:
                self._unpublish({name})
                return n, None
            body = {c: [table[c][i] for i in keep] for c in columns}
            data_bytes = _text_csv(columns, body)
            days = sorted(v[:10] for v in body[day_col])
            entry = LayerFile(name, kind, "", "", sha256_bytes(data_bytes), len(days), days[0], days[-1])
            self._unpublish(set(), (entry, data_bytes))
            return n - len(keep), entry

    def remove_all(self) -> list[LayerFile]:
        """Empty the user layer: every file it lists is removed (shipped data is untouched); returns their records."""
        with self._exclusive():
            self._state = None
            entries = list(self.entries().values())
            if entries:
                self._unpublish({e.file for e in entries})
        return sorted(entries, key=lambda e: e.file)


def _is_day(value: Any) -> bool:
    if not isinstance(value, str) or not _DATE.fullmatch(value):
        return False
    try:
        np.datetime64(value, "D")
    except ValueError:
        return False
    return True


def _is_instance_name(name: str) -> bool:
    """Whether a bundle file named ``name`` is its instance (not the schema, a linkbase or ``filing.json``)."""
    low = name.lower()
    return low.endswith(".xml") and not low.endswith(("_cal.xml", "_def.xml", "_lab.xml", "_pre.xml"))


def _remove_tree(path: Path) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)


def _first_row_of(data: Any, symbol: str) -> str:
    """1-based row of the first bar of ``symbol`` in a price file or frame ("?" when it cannot be told)."""
    try:
        _, frame = _read_input(data)
        column = next(c for c in frame.columns if str(c).strip().lower() == "symbol")
        return str(int(np.flatnonzero(frame[column].astype(str).str.strip().to_numpy() == symbol)[0]) + 1)
    except Exception:
        return "?"


def _check_overlap(new: PriceSeries, held: PriceSeries, shipped: PriceSeries | None, source: str, symbol: str,
                   dataset: str, user_file: str) -> int:
    """Index of the first bar of ``new`` after the held history; bars before it must equal held ones."""
    last = held.dates[-1]
    start = int(np.searchsorted(new.dates, last, side="right"))
    for i in range(start):
        day = new.dates[i]
        j = int(np.searchsorted(held.dates, day))
        if j >= len(held) or held.dates[j] != day:
            raise DataError(
                f"{source}: row {i + 1}, column 'date': {day} is on or before {last}, the last date held for "
                f"{symbol} in dataset {dataset!r}, and is not a held date; bars can only be appended after {last}")
        where = (f"the shipped dataset {dataset!r}" if shipped is not None and day <= shipped.dates[-1]
                 else f"the user layer ({user_file})")
        for field in PRICE_FIELDS:
            a, b = float(getattr(new, field)[i]), float(getattr(held, field)[j])
            if abs(a - b) > OVERLAP_RTOL * max(abs(a), abs(b)):
                raise DataError(
                    f"{source}: row {i + 1} ({symbol} {day}), column {field!r}: {a!r} differs from the held value "
                    f"{b!r} in {where} (more than {OVERLAP_RTOL:g} relative); a held bar cannot change")
    return start


def _read_input(data: Any) -> tuple[str, Any]:
    """``(source name, DataFrame of the file's cells)`` of a CSV/Parquet path or a DataFrame."""
    import pandas as pd

    if isinstance(data, pd.DataFrame):
        return "DataFrame", data
    path = user_file(data, "CSV or Parquet file")
    suffix = path.suffix.lower()
    try:
        if suffix == ".csv":
            return str(path), pd.read_csv(path, dtype=str, keep_default_na=False, na_filter=False,
                                          encoding="utf-8-sig")
        if suffix in (".parquet", ".pq"):
            import duckdb

            con = duckdb.connect()
            try:
                return str(path), con.execute("SELECT * FROM read_parquet(?)", [str(path)]).df()
            finally:
                con.close()
    except Exception as exc:
        raise DataFileError(f"{path}: cannot be read ({type(exc).__name__}: {exc})") from exc
    raise DataFileError(f"{path}: unsupported file type {suffix!r}; use .csv or .parquet")


def _columns(frame: Any, source: str, schema: tuple[str, ...], required: tuple[str, ...],
             aliases: dict[str, str]) -> dict[str, Any]:
    """Schema column -> the frame's column (case-insensitive); duplicates and missing required ones are errors."""
    labels: dict[str, list[Any]] = {}
    for label in frame.columns:
        key = str(label).strip().lower()
        labels.setdefault(aliases.get(key, key), []).append(label)
    for name in schema:
        if len(labels.get(name, [])) > 1:
            raise DataError(f"{source}: column {name!r} appears {len(labels[name])} times "
                            f"({', '.join(repr(str(x)) for x in labels[name])}); each must appear once")
    missing = [c for c in required if c not in labels]
    if missing:
        raise DataError(f"{source}: missing column(s) {missing}; the schema is {list(schema)} (required: "
                        f"{list(required)}), found {[str(c) for c in frame.columns]}")
    if len(frame) == 0:
        raise DataError(f"{source}: the table has no rows")
    return {name: labels[name][0] for name in schema if name in labels}


def _text_cells(frame: Any, label: Any) -> list[str]:
    return ["" if v is None or (isinstance(v, float) and v != v) else str(v).strip() for v in frame[label].tolist()]


def _required_cells(frame: Any, names: dict[str, Any], required: tuple[str, ...], source: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for col in required:
        cells = _text_cells(frame, names[col])
        blank = [i for i, v in enumerate(cells) if not v]
        if blank:
            raise DataError(f"{source}: row {blank[0] + 1}, column {col!r}: is empty")
        out[col] = cells
    return out


def _news_rows(frame: Any, source: str) -> dict[str, list[str]]:
    """Checked news rows as stored columns (``published_at`` as ``YYYY-MM-DDTHH:MM:SSZ``)."""
    import pandas as pd

    names = _columns(frame, source, USER_NEWS_COLUMNS, NEWS_REQUIRED, {"publisher": "source"})
    table = _required_cells(frame, names, NEWS_REQUIRED, source)
    raw = frame[names["published_at"]]
    if pd.api.types.is_datetime64_any_dtype(raw.dtype):
        if getattr(raw.dt, "tz", None) is None:
            raise DataError(f"{source}: row 1, column 'published_at': timestamps have no time zone; "
                            "give them in UTC or with an offset")
        stamps = raw.dt.tz_convert("UTC")
    else:
        cells = table["published_at"]
        naive = [i for i, v in enumerate(cells) if not _AWARE.fullmatch(v)]
        if naive:
            raise DataError(f"{source}: row {naive[0] + 1}, column 'published_at': {cells[naive[0]]!r} is not an "
                            "ISO 8601 timestamp with a time zone (write e.g. 2026-04-16T14:30:00Z or "
                            "2026-04-16T10:30:00-04:00)")
        stamps = pd.to_datetime(pd.Series(cells), format="ISO8601", utc=True, errors="coerce")
        bad = np.flatnonzero(stamps.isna().to_numpy())
        if bad.size:
            i = int(bad[0])
            raise DataError(f"{source}: row {i + 1}, column 'published_at': {cells[i]!r} is not a valid timestamp")
    ceil = stamps.dt.tz_localize(None).dt.ceil("s").to_numpy().astype("datetime64[s]")
    table["published_at"] = [f"{t}Z" for t in ceil]
    for i, url in enumerate(table["url"]):
        parts = urlparse(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise DataError(f"{source}: row {i + 1}, column 'url': {url!r} is not an http(s) URL")
    n = len(frame)
    table["summary"] = _text_cells(frame, names["summary"]) if "summary" in names else [""] * n
    provider = _text_cells(frame, names["provider"]) if "provider" in names else [""] * n
    table["provider"] = [p or "user" for p in provider]
    table["provider_sentiment"] = (_text_cells(frame, names["provider_sentiment"]) if "provider_sentiment" in names
                                   else [""] * n)
    return table


def _filing_rows(frame: Any, source: str) -> dict[str, list[str]]:
    """Checked filing sections as stored columns (``filed`` as ``YYYY-MM-DD``)."""
    names = _columns(frame, source, USER_FILING_COLUMNS, FILING_REQUIRED, {})
    table = _required_cells(frame, names, FILING_REQUIRED, source)
    for i, day in enumerate(table["filed"]):
        ok = bool(_DATE.fullmatch(day))
        if ok:
            try:
                np.datetime64(day, "D")
            except ValueError:
                ok = False
        if not ok:
            raise DataError(f"{source}: row {i + 1}, column 'filed': {day!r} is not a date YYYY-MM-DD")
    n = len(frame)
    titles = _text_cells(frame, names["title"]) if "title" in names else [""] * n
    table["title"] = [t or s for t, s in zip(titles, table["section"], strict=True)]
    table["document"] = _text_cells(frame, names["document"]) if "document" in names else [""] * n
    return table


#: Columns every section of one filing shares, with their names in messages.
FILING_SHARED = {"filed": "filing date", "symbol": "symbol", "form": "form"}


def _check_filing_sections_agree(table: dict[str, list[str]], held: dict[tuple[str, str], tuple[str, int, dict]],
                           source: str) -> None:
    """Refuse a section whose ``filed``, ``symbol`` or ``form`` differs from another section of its filing.

    The other section is the first one met: a held one (shipped or user layer), else an earlier row of the file.

    Raises:
        DataError: Names the file, the row, the column, both values and the section it differs from.
    """
    first: dict[str, tuple[dict[str, str], str]] = {}
    for (fid, section), (where, j, other) in held.items():
        if fid not in first:
            first[fid] = ({c: other[c][j] for c in FILING_SHARED}, f"section {shown(section)} held by {where}")
    for i, fid in enumerate(table["filing_id"]):
        mine = {c: table[c][i] for c in FILING_SHARED}
        if fid not in first:
            first[fid] = (mine, f"section {shown(table['section'][i])} in row {i + 1}")
            continue
        theirs, whose = first[fid]
        for col in FILING_SHARED:
            if mine[col] != theirs[col]:
                hint = (" (a section filed later belongs to another filing, e.g. an amendment: give it its own "
                        "filing_id)" if col == "filed" else "")
                what = FILING_SHARED[col]
                raise DataError(f"{source}: row {i + 1}, column {col!r}: {shown(mine[col])} differs from "
                                f"{shown(theirs[col])}, the {what} of {whose} of filing {shown(fid)}; every section of "
                                f"one filing has the same {what}{hint}")


def _held_documents(shipped: dict[str, Any], kind: str, columns: tuple[str, ...], key_cols: tuple[str, str]
                    ) -> dict[tuple[str, str], tuple[str, int, dict[str, list[str]]]]:
    """Shipped items by key, with their columns as stored text (for comparison with a re-added item)."""
    n = len(shipped[columns[0]])
    text: dict[str, list[str]] = {}
    for col in columns:
        values = shipped[col]
        if col == "published_at":
            text[col] = [f"{np.datetime64(v, 's')}Z" for v in values]
        elif col == "filed":
            text[col] = [str(np.datetime64(v, "D")) for v in values]
        else:
            text[col] = ["" if v is None else str(v) for v in values]
    return {(text[key_cols[0]][j], text[key_cols[1]][j]): (f"the shipped {kind}", j, text) for j in range(n)}


# ---------------------------------------------------------------------------- module-level API and the CLI
def add_prices(path_or_frame: Any, symbol: str, dataset: str = "core") -> AddResult:
    """Append bars to the user layer at :func:`user_data_dir` (see :meth:`UserLayer.add_prices`)."""
    return UserLayer().add_prices(path_or_frame, symbol, dataset)


def add_news(path: Any) -> AddResult:
    """Append news items to the user layer at :func:`user_data_dir` (see the module doc)."""
    return UserLayer().add_news(path)


def add_filings(path: Any) -> AddResult:
    """Append filing sections to the user layer at :func:`user_data_dir` (see the module doc)."""
    return UserLayer().add_filings(path)


def cli_data_add(prices: Any = None, symbol: str | None = None, dataset: str = "core", news: Any = None,
                 filings: Any = None) -> int:
    """``finenvs data add``: append one file to the user layer and print what was added; returns 0.

    Raises:
        ValueError: Not exactly one of ``prices``, ``news``, ``filings``; or ``prices`` without ``symbol``.
        DataError: The file breaks a rule of the layer (names file, row and column).
    """
    from finenvs.data.catalog import default_catalog

    given = [name for name, value in (("--prices", prices), ("--news", news), ("--filings", filings))
             if value is not None]
    if len(given) != 1:
        raise ValueError(f"finenvs data add takes exactly one of --prices, --news, --filings (got {given or 'none'})")
    layer = UserLayer()
    if prices is not None:
        if not symbol:
            raise ValueError("finenvs data add --prices needs --symbol")
        result = layer.add_prices(prices, symbol, dataset)
        what = f"bars of {symbol} to dataset {dataset!r}"
    elif news is not None:
        result = layer.add_news(news)
        what = "news items"
    else:
        result = layer.add_filings(filings)
        what = "filing sections"
    span = f" ({result.date_min}..{result.date_max})" if result.added else ""
    print(f"added {result.added} {what}{span} from {result.source}; {result.skipped} already held")
    entry = layer.entries().get(result.file.relative_to(layer.root).as_posix())
    if entry is not None:
        print(f"layer file {result.file}: {entry.rows} rows, {entry.date_min}..{entry.date_max}")
    print(f"user layer {layer.root}: digest {result.digest}; data digest {default_catalog().data_digest}")
    return 0


def cli_data_remove(prices: Any = None, dataset: str = "core", news: Any = None, filings: Any = None,
                    everything: bool = False) -> int:
    """``finenvs data remove``: take bars, news items or filing sections out of the user layer (never shipped data)
    and print what was removed; returns 0.

    Args:
        prices: Symbols whose user bars in ``dataset`` go.
        news, filings: Symbols whose user items go; an empty sequence: all of them.
        everything: Empty the whole user layer.

    Raises:
        ValueError: Not exactly one of the four, or nothing of what was named is in the user layer.
    """
    from finenvs.data.catalog import default_catalog

    given = [flag for flag, value in (("--prices", prices), ("--news", news), ("--filings", filings),
                                      ("--all", everything or None)) if value is not None]
    if len(given) != 1:
        raise ValueError(f"finenvs data remove takes exactly one of --prices, --news, --filings, --all "
                         f"(got {', '.join(given) or 'none'})")
    layer = UserLayer()
    if prices is not None:
        for e in layer.remove_prices(prices, dataset):
            print(f"removed {counted(e.rows, 'user bar')} of {e.symbol} ({e.date_min}..{e.date_max}) from dataset "
                  f"{e.dataset!r}")
    elif everything:
        removed = layer.remove_all()
        for e in removed:
            print(f"removed {e.file} ({counted(e.rows, 'row')}, {e.date_min}..{e.date_max})")
        if not removed:
            print("the user layer is already empty")
    else:
        kind = "news" if news is not None else "filings"
        symbols = list(news if news is not None else filings) or None
        noun = "news item" if kind == "news" else "filing section"
        count, left = layer.remove_documents(kind, symbols)
        whose = f" of {', '.join(symbols)}" if symbols else ""
        rest = (f"; {counted(left.rows, 'user ' + noun)} left ({left.date_min}..{left.date_max})" if left is not None
                else "")
        print(f"removed {counted(count, 'user ' + noun)}{whose}{rest}")
    print(f"user layer {layer.root}: {'empty' if layer.digest is None else 'digest ' + layer.digest}; data digest "
          f"{default_catalog().data_digest}")
    return 0


def cli_data_list() -> int:
    """``finenvs data list``: each price dataset's symbols, grouped by the dates their bars cover (shipped and user
    bars merged, as the envs read them; :func:`~finenvs.data.schema.date_span`, the span an empty-window error
    names), then the user layer's files; returns 0."""
    from finenvs.data.catalog import default_catalog
    from finenvs.data.schema import date_span

    catalog = default_catalog()
    layer = UserLayer()
    user = {(e.dataset, e.symbol) for e in layer.entries().values() if e.kind == "prices"}
    for name, entry in sorted(catalog.manifest.datasets("prices").items()):
        symbols = catalog.symbols(name)
        added = [s for s in symbols if s not in entry.symbols]
        extended = [s for s in entry.symbols if (name, s) in user]
        head = f"{name}: {counted(len(entry.symbols), 'symbol')} shipped"
        if added:
            head += f", {len(added)} added ({', '.join(added)})"
        if extended:
            head += f"; user bars after the shipped ones for {', '.join(extended)}"
        print(head)
        spans: dict[str, list[str]] = {}
        for symbol in symbols:
            spans.setdefault(date_span(catalog.series(symbol, name).dates), []).append(symbol)
        for span, group in sorted(spans.items()):
            print(f"  {span}  {' '.join(group)}")
    for e in sorted((e for e in layer.entries().values() if e.kind in ("news", "filings")), key=lambda e: e.file):
        print(f"{e.kind}: user {counted(e.rows, 'row')}, {e.date_min}..{e.date_max}")
    bundles = layer.xbrl_bundles()
    if bundles:
        firsts = [files[0] for files in bundles.values()]
        print(f"xbrl: user {len(bundles)} bundles ({', '.join(sorted({e.symbol for e in firsts}))}), seen from "
              f"{min(e.date_min for e in firsts)}..{max(e.date_max for e in firsts)}, corpus folder {layer.xbrl_dir}")
    print(f"user layer {layer.root}: {'empty' if layer.digest is None else 'digest ' + layer.digest}")
    return 0


__all__ = [
    "ENV_VAR",
    "OVERLAP_RTOL",
    "AddResult",
    "LayerFile",
    "LayerFiles",
    "UserLayer",
    "add_filings",
    "add_news",
    "add_prices",
    "cli_data_add",
    "cli_data_list",
    "cli_data_remove",
    "layer_digest",
    "merge_series",
    "user_data_dir",
]
