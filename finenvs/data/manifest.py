"""The shipped data folder, its MANIFEST and the checks behind ``finenvs data verify``."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from finenvs.data.schema import split_by_symbol
from finenvs.errors import DataError, DataFileError

MANIFEST_NAME = "MANIFEST.json"


def shipped_data_dir() -> Path:
    """Folder of the shipped data (``envs_data/`` in a checkout, ``finenvs/envs_data`` installed)."""
    import finenvs.envs_data as pkg

    return Path(pkg.__file__).resolve().parent


def sha256_file(path: Path) -> str:
    """Hex sha256 of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@dataclass(frozen=True)
class ManifestEntry:
    """One shipped file: what it holds, where it came from, and its fingerprint."""

    file: str
    kind: str  # "prices" | "rates" | "news" | "filings" | "options" | "questions" | "xbrl" | "taxonomy"
    dataset: str
    sha256: str
    rows: int
    date_min: str
    date_max: str
    symbols: tuple[str, ...]
    source: str
    licence: str
    description: str = ""
    transform: str = ""
    excluded_rows: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True)
class Manifest:
    """Parsed MANIFEST.json plus the folder it describes."""

    root: Path
    entries: tuple[ManifestEntry, ...]
    digest: str  # sha256 of the MANIFEST.json bytes: the catalog's cache key

    def datasets(self, kind: str = "prices") -> dict[str, ManifestEntry]:
        """Entries of one kind keyed by dataset name (a new dict each call; built once per kind: every as-of view
        of an env asks)."""
        by_kind: dict[str, dict[str, ManifestEntry]] = self.__dict__.setdefault("_by_kind", {})
        found = by_kind.get(kind)
        if found is None:
            found = by_kind[kind] = {e.dataset: e for e in self.entries if e.kind == kind}
        return dict(found)


def load_manifest(root: Path | None = None) -> Manifest:
    """Read and check the structure of ``root/MANIFEST.json``.

    Raises:
        DataFileError: The manifest is missing, not JSON, or lacks a required field.
    """
    root = Path(root) if root is not None else shipped_data_dir()
    path = root / MANIFEST_NAME
    try:
        raw = path.read_bytes()
    except FileNotFoundError as exc:
        raise DataFileError(f"{path}: data manifest not found") from exc
    try:
        doc = json.loads(raw)
        entries = []
        for item in doc["files"]:
            entries.append(
                ManifestEntry(
                    file=item["file"],
                    kind=item["kind"],
                    dataset=item["dataset"],
                    sha256=item["sha256"],
                    rows=int(item["rows"]),
                    date_min=item["date_min"],
                    date_max=item["date_max"],
                    symbols=tuple(item["symbols"]),
                    source=item["source"],
                    licence=item["licence"],
                    description=item.get("description", ""),
                    transform=item.get("transform", ""),
                    excluded_rows=tuple(item.get("excluded_rows", ())),
                )
            )
    except (ValueError, KeyError, TypeError) as exc:
        raise DataFileError(f"{path}: malformed manifest ({type(exc).__name__}: {exc})") from exc
    return Manifest(root=root, entries=tuple(entries), digest=hashlib.sha256(raw).hexdigest())


def read_table(path: Path, columns: str) -> dict[str, np.ndarray]:
    """Read a Parquet file's columns (file order kept) into numpy arrays.

    Raises:
        DataFileError: The file is missing or not a readable Parquet file.
    """
    import duckdb

    if not path.is_file():
        raise DataFileError(f"{path}: data file not found")
    con = duckdb.connect()
    try:
        table = con.execute(f"SELECT {columns} FROM read_parquet(?)", [str(path)]).fetchnumpy()
        return {name: np.asanyarray(col) for name, col in table.items()}  # an ENUM column: Categorical -> array
    except duckdb.Error as exc:
        raise DataFileError(f"{path}: cannot be read as Parquet ({exc})") from exc
    finally:
        con.close()


def check_rate_table(table: dict[str, np.ndarray], source: str) -> None:
    """Rates: dates sorted and unique, values finite."""
    dates = np.asarray(table["date"]).astype("datetime64[D]")
    values = np.asarray(table["value"], dtype=np.float64)
    if dates.size == 0:
        raise DataError(f"{source}: no rows")
    step = np.diff(dates).astype(np.int64)
    if (step <= 0).any():
        i = int(np.flatnonzero(step <= 0)[0]) + 1
        raise DataError(f"{source}: row {i + 1} ({dates[i]}): dates must be sorted and unique")
    bad = ~np.isfinite(values)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise DataError(f"{source}: row {i + 1} ({dates[i]}): rate value is not finite")


def _first_bad(mask: np.ndarray) -> int | None:
    bad = np.flatnonzero(mask)
    return int(bad[0]) if bad.size else None


def _blank(values: np.ndarray) -> np.ndarray:
    return np.array([v is None or not str(v).strip() for v in values], dtype=bool)


def _check_documents(table: dict[str, np.ndarray], source: str, what: str, required: tuple[str, ...],
                     time_column: str, unit: str, key: tuple[str, str]) -> None:
    for col in required:
        i = _first_bad(_blank(table[col]))
        if i is not None:
            raise DataError(f"{source}: row {i + 1}: {what} {col} is empty")
    i = _first_bad(np.isnat(np.asarray(table[time_column]).astype(f"datetime64[{unit}]")))
    if i is not None:
        raise DataError(f"{source}: row {i + 1}: {what} {time_column} is missing")
    keys = list(zip(table[key[0]].tolist(), table[key[1]].tolist(), strict=True))
    if len(set(keys)) != len(keys):
        raise DataError(f"{source}: ({key[0]}, {key[1]}) pairs must be unique")


def check_news_table(table: dict[str, np.ndarray], source: str) -> None:
    """News: id, symbol, title, source and url non-empty; timestamp present; (id, symbol) unique."""
    _check_documents(table, source, "news", ("id", "symbol", "title", "source", "url"), "published_at", "s",
                     ("id", "symbol"))


def check_filing_table(table: dict[str, np.ndarray], source: str) -> None:
    """Filing sections: ids, symbol, form, section and text non-empty; filed date present; (filing_id, section) unique."""
    _check_documents(table, source, "filing", ("filing_id", "symbol", "form", "section", "text"), "filed", "D",
                     ("filing_id", "section"))


def check_option_table(table: dict[str, np.ndarray], source: str) -> None:
    """Option chains: call/put, strike > 0, expiry on or after the snapshot, IV in (0, 1], spot > 0."""
    kinds = np.asarray(table["option_type"], dtype=object)
    checks = (
        (~np.isin(kinds, ["call", "put"]), "option_type is not call or put"),
        (~(np.asarray(table["strike"], dtype=float) > 0), "strike is not > 0"),
        (np.asarray(table["expiry"]).astype("datetime64[D]") < np.asarray(table["snapshot_date"]).astype("datetime64[D]"),
         "expiry is before the snapshot date"),
        (~((np.asarray(table["implied_vol"], dtype=float) > 0) & (np.asarray(table["implied_vol"], dtype=float) <= 1)),
         "implied_vol is not in (0, 1]"),
        (~(np.asarray(table["spot"], dtype=float) > 0), "spot is not > 0"),
    )
    for mask, what in checks:
        row = _first_bad(mask)
        if row is not None:
            raise DataError(f"{source}: row {row}: {what}")


def check_question_bank(path: Path, source: str) -> int:
    """A question bank: JSON with an ``items`` list, each with an ``id``, ``kind`` and ``source``; returns the count."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        items = doc["items"]
    except (ValueError, KeyError, TypeError) as exc:
        raise DataError(f"{source}: not a question bank ({type(exc).__name__}: {exc})") from exc
    seen: set[str] = set()
    for i, item in enumerate(items):
        for key in ("id", "kind", "source"):
            if not isinstance(item, dict) or not item.get(key):
                raise DataError(f"{source}: item {i} lacks {key!r}")
        if item["id"] in seen:
            raise DataError(f"{source}: item {i}: duplicate id {item['id']!r}")
        seen.add(item["id"])
    return len(items)


@dataclass
class VerifyResult:
    """Outcome of :func:`verify_data`: one line per file, problems first."""

    checked: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


#: A manifest kind's row counter, for kinds whose files another layer parses (``path -> rows``).
RowCounter = Callable[[Path], int]


def verify_entry(manifest: Manifest, entry: ManifestEntry, row_counters: Mapping[str, RowCounter] | None = None
                 ) -> str:
    """Verify one manifest entry: hash, row count, coverage and schema invariants.

    Files of a kind the data layer does not parse (the XBRL corpus) are recounted with ``row_counters[kind]``
    (:data:`finenvs.xbrl.corpus.ROW_COUNTERS`; ``finenvs data verify`` passes them); without one their hash
    is checked and the line says their rows were not recounted.

    Returns:
        A one-line summary of the file when it passes.

    Raises:
        DataFileError: Missing file or hash/row mismatch.
        DataError: A schema invariant broken (names file and row).
    """
    path = manifest.root / entry.file
    if not path.is_file():
        raise DataFileError(f"{entry.file}: listed in {MANIFEST_NAME} but not found")
    digest = sha256_file(path)
    if digest != entry.sha256:
        raise DataFileError(
            f"{entry.file}: sha256 {digest[:16]}... does not match the manifest's {entry.sha256[:16]}... "
            "(file changed or corrupt)"
        )
    symbols: tuple[str, ...] | None = None
    if entry.kind == "prices":
        table = read_table(path, "symbol, date, open, high, low, close, volume")
        symbols = tuple(sorted(split_by_symbol(table, entry.file)))
        date_column = "date"
    elif entry.kind == "rates":
        table = read_table(path, "date, value")
        check_rate_table(table, entry.file)
        date_column = "date"
    elif entry.kind == "news":
        table = read_table(path, "id, symbol, published_at, title, source, url")
        check_news_table(table, entry.file)
        symbols = tuple(sorted(set(table["symbol"].tolist())))
        date_column = "published_at"
    elif entry.kind == "filings":
        table = read_table(path, "filing_id, symbol, form, filed, section, text")
        check_filing_table(table, entry.file)
        symbols = tuple(sorted(set(table["symbol"].tolist())))
        date_column = "filed"
    elif entry.kind == "options":
        table = read_table(path, "symbol, snapshot_date, expiry, option_type, strike, implied_vol, spot")
        check_option_table(table, entry.file)
        symbols = tuple(sorted(set(table["symbol"].tolist())))
        date_column = "snapshot_date"
    elif entry.kind == "questions":
        rows = check_question_bank(path, entry.file)
        if rows != entry.rows:
            raise DataError(f"{entry.file}: {rows} rows, the manifest says {entry.rows}")
        return f"{entry.file}: ok ({rows} items, sha256 {digest[:12]})"
    elif entry.kind in ("xbrl", "taxonomy"):
        counter = (row_counters or {}).get(entry.kind)
        if counter is None:
            return f"{entry.file}: ok (sha256 {digest[:12]}; {entry.rows} rows, not recounted without the XBRL layer)"
        rows = counter(path)
        if rows != entry.rows:
            raise DataError(f"{entry.file}: {rows} rows, the manifest says {entry.rows}")
        return f"{entry.file}: ok ({rows} rows, sha256 {digest[:12]})"
    else:
        raise DataFileError(f"{entry.file}: unknown kind {entry.kind!r} in {MANIFEST_NAME}")
    if symbols is not None and symbols != tuple(sorted(entry.symbols)):
        raise DataError(f"{entry.file}: symbols {symbols} differ from the manifest's {entry.symbols}")
    rows = len(table[date_column])
    if rows != entry.rows:
        raise DataError(f"{entry.file}: {rows} rows, the manifest says {entry.rows}")
    dates = np.asarray(table[date_column]).astype("datetime64[D]")
    lo, hi = str(dates.min()), str(dates.max())
    if (lo, hi) != (entry.date_min, entry.date_max):
        raise DataError(f"{entry.file}: dates {lo}..{hi}, the manifest says {entry.date_min}..{entry.date_max}")
    return f"{entry.file}: ok ({rows} rows, {lo}..{hi}, sha256 {digest[:12]})"


def verify_data(root: Path | None = None, *, row_counters: Mapping[str, RowCounter] | None = None) -> VerifyResult:
    """Check every file in the manifest; collect the first problem of each file (see :func:`verify_entry`)."""
    result = VerifyResult()
    try:
        manifest = load_manifest(root)
    except DataError as exc:
        result.problems.append(str(exc))
        return result
    for entry in manifest.entries:
        try:
            result.checked.append(verify_entry(manifest, entry, row_counters))
        except DataError as exc:
            result.problems.append(str(exc))
    return result
