"""Reading the user layer of the catalog: its manifest, files, digest and checks.

The layer itself, its rules and how rows are added are described in
:mod:`finenvs.data.user_layer`; this module is the read side that
:class:`finenvs.data.catalog.Catalog` merges (it imports nothing of the catalog).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import threading
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from finenvs.data.documents import FILING_COLUMNS, NEWS_COLUMNS
from finenvs.data.manifest import VerifyResult
from finenvs.data.schema import PRICE_FIELDS, PriceSeries
from finenvs.errors import DataError, DataFileError

LAYER_FORMAT = "finenvs-user-layer/1"
MANIFEST_NAME = "MANIFEST.json"
NEWS_FILE = "news.csv"
FILINGS_FILE = "filings.csv"
#: Folder of the layer's XBRL bundles (``xbrl/<bundle>/``: a filing's instance, schema, four linkbases and
#: ``filing.json``), the form of the shipped corpus: ``Corpus(layer.xbrl_dir)`` reads them.
XBRL_DIR = "xbrl"
#: Columns of the layer's news.csv (those of the shipped news table).
USER_NEWS_COLUMNS: tuple[str, ...] = NEWS_COLUMNS
#: Columns of the layer's filings.csv (the shipped table's, without the derived ``chars``).
USER_FILING_COLUMNS: tuple[str, ...] = tuple(c for c in FILING_COLUMNS if c != "chars")


@dataclass(frozen=True)
class LayerFile:
    """One file of the layer as its manifest records it (dates are ISO days; news: UTC days)."""

    file: str
    kind: str  # "prices" | "news" | "filings" | "xbrl"
    dataset: str  # the price dataset; the bundle of an XBRL file; "" for news and filings
    symbol: str  # the price file's or XBRL bundle's symbol; "" for news and filings
    sha256: str
    rows: int
    date_min: str
    date_max: str



def layer_digest(files: list[LayerFile] | tuple[LayerFile, ...]) -> str | None:
    """sha256 of the canonical JSON of the manifest's file records (None for an empty layer)."""
    if not files:
        return None
    records = [asdict(f) for f in sorted(files, key=lambda f: f.file)]
    text = json.dumps({"format": LAYER_FORMAT, "files": records}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def merge_series(shipped: PriceSeries | None, user: PriceSeries | None) -> PriceSeries | None:
    """Shipped bars followed by the user's bars dated after the last shipped one.

    User bars on or before that date were equal to the shipped ones when added; should a later
    release ship them too, the shipped bars are kept.
    """
    if user is None or len(user) == 0:
        return shipped
    if shipped is None or len(shipped) == 0:
        return user
    keep = user.dates > shipped.dates[-1]
    if not keep.any():
        return shipped
    return PriceSeries.from_arrays(
        shipped.symbol,
        *(np.concatenate([getattr(shipped, f), getattr(user, f)[keep]]) for f in ("dates", *PRICE_FIELDS)),
        validate=False,  # both parts were checked and the dates join strictly increasing
    )


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()



def _read_text_csv(data: bytes, source: str, columns: tuple[str, ...]) -> dict[str, list[str]]:
    """A layer document file as columns of str (no NA guessing: an empty cell is "")."""
    import pandas as pd

    try:
        frame = pd.read_csv(io.BytesIO(data), dtype=str, keep_default_na=False, na_filter=False)
    except Exception as exc:
        raise DataFileError(f"{source}: cannot be read ({type(exc).__name__}: {exc})") from exc
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise DataFileError(f"{source}: missing column(s) {missing}")
    return {c: frame[c].astype(str).tolist() for c in columns}


class LayerFiles:
    """The user layer in one folder, read side: manifest, files (hash-checked), digest and :meth:`verify`.

    Args:
        root: The layer's folder (it need not exist: an empty layer).
    """

    def __init__(self, root: Path | str) -> None:
        self.root = Path(root).expanduser()
        self._manifest_text = str(self.root / MANIFEST_NAME)  # stat on each catalog read: no Path work
        self._lock = threading.Lock()
        self._state: tuple[Any, dict[str, LayerFile]] | None = None

    # ------------------------------------------------------------------ manifest
    @property
    def manifest_path(self) -> Path:
        return self.root / MANIFEST_NAME

    def stamp(self) -> tuple[int, int, int] | None:
        """``(mtime_ns, size, inode)`` of the manifest, or None without one: changes with every add."""
        try:
            st = os.stat(self._manifest_text)
        except FileNotFoundError:
            return None
        return (st.st_mtime_ns, st.st_size, st.st_ino)

    def _read_manifest(self) -> dict[str, LayerFile]:
        path = self.manifest_path
        try:
            doc = json.loads(path.read_bytes())
            if doc.get("format") != LAYER_FORMAT:
                raise ValueError(f"format {doc.get('format')!r}, expected {LAYER_FORMAT!r}")
            files = [LayerFile(**{k: item[k] for k in LayerFile.__dataclass_fields__}) for item in doc["files"]]
        except FileNotFoundError:
            return {}
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise DataFileError(f"{path}: malformed user-layer manifest ({type(exc).__name__}: {exc})") from exc
        recorded = doc.get("digest")
        actual = layer_digest(files)
        if recorded != actual:
            raise DataFileError(
                f"{path}: its file records do not match its digest (recorded {str(recorded)[:16]}..., "
                f"computed {str(actual)[:16]}...): the manifest was edited by hand"
            )
        return {f.file: f for f in files}

    def entries(self) -> dict[str, LayerFile]:
        """The manifest's file records by layer-relative path (re-read when the manifest changes)."""
        stamp = self.stamp()
        with self._lock:
            if self._state is not None and self._state[0] == stamp:
                return self._state[1]
        entries = {} if stamp is None else self._read_manifest()
        with self._lock:
            self._state = (stamp, entries)
        return entries

    @property
    def digest(self) -> str | None:
        """sha256 over the layer manifest's file records; None when the layer is empty."""
        return layer_digest(tuple(self.entries().values()))

    def is_empty(self) -> bool:
        return not self.entries()

    # ------------------------------------------------------------------ reads
    def _read(self, entry: LayerFile) -> bytes:
        """A layer file's bytes, checked against the manifest's sha256."""
        path = self.root / entry.file
        try:
            data = path.read_bytes()
        except FileNotFoundError as exc:
            raise DataFileError(f"{path}: listed in the user layer's {MANIFEST_NAME} but not found") from exc
        digest = sha256_bytes(data)
        if digest != entry.sha256:
            raise DataFileError(
                f"{path}: sha256 {digest[:16]}... does not match the user layer manifest's {entry.sha256[:16]}... "
                "(edited by hand?); restore it or re-add the data (finenvs data verify lists every difference)"
            )
        return data

    @staticmethod
    def price_file(symbol: str, dataset: str) -> str:
        return f"prices/{dataset}/{symbol}.csv"

    def symbols(self, dataset: str) -> list[str]:
        """Symbols with user bars in ``dataset`` (sorted)."""
        return sorted(e.symbol for e in self.entries().values() if e.kind == "prices" and e.dataset == dataset)

    def series(self, symbol: str, dataset: str) -> PriceSeries | None:
        """The user's bars of ``symbol`` in ``dataset`` (None when it has none)."""
        entry = self.entries().get(self.price_file(symbol, dataset))
        if entry is None:
            return None
        return self._parse_prices(self._read(entry), str(self.root / entry.file), symbol)

    @staticmethod
    def _parse_prices(data: bytes, source: str, symbol: str) -> PriceSeries:
        """A layer price file (written by :func:`_prices_csv`), floats parsed exactly, every invariant checked."""
        lines = data.decode("utf-8").splitlines()
        header = ",".join(("date", *PRICE_FIELDS))
        if not lines or lines[0] != header:
            raise DataFileError(f"{source}: the header is not {header!r}")
        columns: list[list[Any]] = [[] for _ in range(6)]
        for i, line in enumerate(lines[1:]):
            cells = line.split(",")
            try:
                if len(cells) != 6:
                    raise ValueError(f"{len(cells)} cells, expected 6")
                columns[0].append(np.datetime64(cells[0], "D"))
                for k in range(1, 6):
                    columns[k].append(float(cells[k]))
            except ValueError as exc:
                raise DataFileError(f"{source}: row {i + 1}: cannot be read ({exc})") from exc
        return PriceSeries.from_arrays(symbol, *columns, source=source)

    @property
    def xbrl_dir(self) -> Path:
        """The folder of the layer's XBRL bundles (a corpus folder: ``finenvs.xbrl.corpus.Corpus(xbrl_dir)``)."""
        return self.root / XBRL_DIR

    def xbrl_bundles(self) -> dict[str, list[LayerFile]]:
        """The layer's XBRL bundles: bundle name -> its files as the manifest records them (file order)."""
        out: dict[str, list[LayerFile]] = {}
        for entry in sorted(self.entries().values(), key=lambda e: e.file):
            if entry.kind == "xbrl":
                out.setdefault(entry.dataset, []).append(entry)
        return out

    def documents(self, kind: str) -> dict[str, list[str]] | None:
        """The layer's news (``kind="news"``) or filings as columns of str, or None when it has none."""
        name, columns = (NEWS_FILE, USER_NEWS_COLUMNS) if kind == "news" else (FILINGS_FILE, USER_FILING_COLUMNS)
        entry = self.entries().get(name)
        if entry is None:
            return None
        return _read_text_csv(self._read(entry), str(self.root / name), columns)

    def news_columns(self) -> dict[str, Any] | None:
        """The layer's news in the columns :meth:`NewsStore.from_columns` takes (None when it has none)."""
        table = self.documents("news")
        if table is None:
            return None
        out: dict[str, Any] = {c: np.array(table[c], dtype=object) for c in USER_NEWS_COLUMNS}
        out["published_at"] = np.array([v.rstrip("Z") for v in table["published_at"]], dtype="datetime64[s]")
        out["provider_sentiment"] = np.array([v or None for v in table["provider_sentiment"]], dtype=object)
        return out

    def filing_columns(self) -> dict[str, Any] | None:
        """The layer's filing sections in the columns :meth:`FilingStore.from_columns` takes."""
        table = self.documents("filings")
        if table is None:
            return None
        out: dict[str, Any] = {c: np.array(table[c], dtype=object) for c in USER_FILING_COLUMNS}
        out["filed"] = np.array(table["filed"], dtype="datetime64[D]")
        out["chars"] = np.array([len(t) for t in table["text"]], dtype=np.int64)
        return out

    # ------------------------------------------------------------------ verify
    def verify(self, row_counters: dict[str, Any] | None = None) -> VerifyResult:
        """Recompute every file's sha256, rows and date range against the manifest; list files it does not know.

        Args:
            row_counters: ``{"xbrl": path -> rows}`` to recount XBRL files (the data layer parses no XBRL:
                ``finenvs data verify`` passes :data:`finenvs.xbrl.corpus.ROW_COUNTERS`); without one their
                sha256 is checked and their rows taken as recorded.
        """
        result = VerifyResult()
        counters = row_counters or {}
        try:
            entries = self._read_manifest()
        except DataError as exc:
            result.problems.append(str(exc))
            return result
        for entry in sorted(entries.values(), key=lambda e: e.file):
            path = self.root / entry.file
            try:
                data = self._read(entry)
                rows, lo, hi = self._measure(entry, data, str(path), counters)
            except DataError as exc:
                result.problems.append(f"user layer: {exc}")
                continue
            if (rows, lo, hi) != (entry.rows, entry.date_min, entry.date_max):
                result.problems.append(f"user layer: {path}: {rows} rows, {lo}..{hi}; the manifest says "
                                       f"{entry.rows} rows, {entry.date_min}..{entry.date_max}")
            else:
                result.checked.append(f"user layer {entry.file}: ok ({rows} rows, {lo}..{hi}, sha256 "
                                      f"{entry.sha256[:12]})")
        if self.root.is_dir():
            known = set(entries)
            xbrl = sorted(p for p in self.xbrl_dir.rglob("*") if p.is_file()) if self.xbrl_dir.is_dir() else []
            for path in [*sorted(self.root.rglob("*.csv")), *xbrl]:
                rel = path.relative_to(self.root).as_posix()
                if rel not in known and not path.name.startswith("."):
                    if rel.startswith(f"{XBRL_DIR}/"):  # a corpus of the folder reads every bundle in it
                        result.problems.append(f"user layer: {path}: not in its {MANIFEST_NAME}: no fetch wrote it, "
                                               "yet a corpus of this folder reads it (remove it, or fetch the "
                                               "filing with finenvs data fetch --xbrl)")
                    else:
                        result.problems.append(f"user layer: {path}: not in its {MANIFEST_NAME}, so never read "
                                               "(add it with finenvs data add)")
        return result

    def _measure(self, entry: LayerFile, data: bytes, source: str, counters: dict[str, Any]) -> tuple[int, str, str]:
        if entry.kind == "prices":
            series = self._parse_prices(data, source, entry.symbol)
            return len(series), str(series.dates[0]), str(series.dates[-1])
        if entry.kind == "xbrl":  # the known-from day is in the bundle's filing.json, recorded with every file
            counter = counters.get("xbrl")
            return (int(counter(Path(source))) if counter else entry.rows), entry.date_min, entry.date_max
        table = _read_text_csv(data, source, USER_NEWS_COLUMNS if entry.kind == "news" else USER_FILING_COLUMNS)
        column = "published_at" if entry.kind == "news" else "filed"
        days = sorted(v[:10] for v in table[column])
        return len(days), days[0], days[-1]


__all__ = [
    "FILINGS_FILE",
    "LAYER_FORMAT",
    "MANIFEST_NAME",
    "NEWS_FILE",
    "XBRL_DIR",
    "USER_FILING_COLUMNS",
    "USER_NEWS_COLUMNS",
    "LayerFile",
    "LayerFiles",
    "layer_digest",
    "merge_series",
    "sha256_bytes",
]
