"""The shipped XBRL corpus (envs_data/xbrl) and user-supplied bundle folders.

``envs_data/xbrl/<bundle>/`` holds one filing's six files and ``filing.json``
(company, ticker, form, period end, release date, accession number).
``envs_data/xbrl/taxonomy/`` holds the standard-concept table (balance and
period type) and the US-GAAP 2025 calculation relationships (read by
:mod:`finenvs.xbrl.taxonomy`, whose names this module re-exports). A user's folder
of bundles in the same form (with or without ``filing.json``) loads through
:class:`Corpus` too.
"""

from __future__ import annotations

import csv
import functools
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from finenvs.xbrl.model import ConceptInfo, Filing
from finenvs.xbrl.parse import (
    XbrlError,
    count_definition_arcs,
    load_bundle,
    parse_calculation,
    parse_instance,
    parse_labels,
    parse_presentation,
    parse_schema,
)
from finenvs.xbrl.taxonomy import (  # noqa: F401  (the taxonomy tables, re-exported)
    CONCEPT_COLUMNS,
    concept_table,
    shipped_xbrl_dir,
    taxonomy_calculations,
    taxonomy_concepts,
    write_concept_table,
)

INDEX_NAME = "filing.json"


def count_rows(path: Path, kind: str) -> int:
    """The MANIFEST row count of a corpus file (recounted by ``finenvs data verify``).

    instance: facts; schema: element declarations; cal: summation-item arcs; def:
    definition arcs; lab: labelled concepts; pre: presentation arcs; index: 1;
    taxonomy JSON: parent concepts; CSV: data rows.
    """
    if kind == "instance":
        return len(parse_instance(path)[2])
    if kind == "schema":
        return len(parse_schema(path)[0])
    if kind == "cal":
        return len(parse_calculation(path))
    if kind == "def":
        return count_definition_arcs(path)
    if kind == "lab":
        return len(parse_labels(path))
    if kind == "pre":
        return len(parse_presentation(path))
    if kind == "index":
        json.loads(path.read_text())
        return 1
    if path.suffix == ".json":
        return len(json.loads(path.read_text()))
    if path.suffix == ".csv":
        with open(path, newline="") as fh:
            return sum(1 for _ in csv.DictReader(fh))
    raise ValueError(f"{path}: no row count for kind {kind!r}")


def file_kind(path: Path) -> str:
    """The :func:`count_rows` kind of a corpus file, from its name."""
    low = path.name.lower()
    if low == INDEX_NAME:
        return "index"
    for kind in ("cal", "def", "lab", "pre"):
        if low.endswith(f"_{kind}.xml"):
            return kind
    if low.endswith(".xsd"):
        return "schema"
    if path.parent.name == "taxonomy":
        return "taxonomy"
    return "instance"


#: Row counters of the manifest's XBRL kinds, for :func:`finenvs.data.manifest.verify_data` (the data layer
#: does not parse XBRL: whoever verifies the corpus passes these).
ROW_COUNTERS = {"xbrl": lambda path: count_rows(path, file_kind(path)),
                "taxonomy": lambda path: count_rows(path, file_kind(path))}


def bundle_rows(folder: str | Path) -> dict[str, int]:
    """Check a bundle folder as :class:`Corpus` reads it, and count each file's rows (:func:`count_rows`).

    The check the user layer runs on an XBRL bundle before it enters (``finenvs data fetch --xbrl``): the six
    files found, every one parsed (a DTD refused), every fact's context and unit defined, numeric facts numbers.

    Raises:
        XbrlError: Names the file (and the fact or field) that breaks the bundle.
    """
    folder = Path(folder)
    meta: dict[str, Any] = {}
    index = folder / INDEX_NAME
    if index.is_file():
        try:
            meta = dict(json.loads(index.read_text(encoding="utf-8")))
        except (ValueError, TypeError) as exc:
            raise XbrlError(f"{index}: not a JSON object ({exc})") from exc
    filing = load_bundle(folder, ticker=str(meta.get("ticker", "")), filed=str(meta.get("filed", "")))
    if not filing.facts:
        raise XbrlError(f"{folder / filing.files['instance']}: the instance holds no fact")
    return {p.name: count_rows(p, file_kind(p)) for p in sorted(folder.iterdir()) if p.is_file()}


# ---------------------------------------------------------------------- corpora
class Corpus:
    """A folder of bundles, loaded lazily and cached per bundle.

    Args:
        root: Folder whose sub-folders are bundles (default: the shipped corpus).
            A ``taxonomy`` sub-folder is not a bundle.
        concepts: Standard-concept table (default: the shipped one).

    Raises:
        XbrlError: ``root`` is not a folder or holds no bundle.
    """

    def __init__(self, root: str | Path | None = None, *, concepts: Mapping[str, ConceptInfo] | None = None) -> None:
        self.root = Path(root) if root is not None else shipped_xbrl_dir()
        if not self.root.is_dir():
            raise XbrlError(f"{self.root}: XBRL corpus folder not found")
        self.names = tuple(sorted(p.name for p in self.root.iterdir() if p.is_dir() and p.name != "taxonomy"))
        if not self.names:
            raise XbrlError(f"{self.root}: no bundle folders in the XBRL corpus")
        self._concepts = concepts
        self._cache: dict[str, Filing] = {}

    def __reduce__(self) -> tuple[Any, ...]:  # pickles as its folder; bundles reload on use
        return (type(self), (self.root,), {"_concepts": self._concepts})

    def __repr__(self) -> str:
        return f"Corpus({str(self.root)!r}, {len(self.names)} bundles)"

    def index(self, name: str) -> dict[str, Any]:
        """The bundle's ``filing.json`` (``{}`` when the folder has none)."""
        self._check(name)
        path = self.root / name / INDEX_NAME
        if not path.is_file():
            return {}
        try:
            return dict(json.loads(path.read_text()))
        except ValueError as exc:
            raise XbrlError(f"{path}: not valid JSON ({exc})") from exc

    def filing(self, name: str) -> Filing:
        """The parsed bundle (cached)."""
        self._check(name)
        if name not in self._cache:
            meta = self.index(name)
            concepts = self._concepts if self._concepts is not None else taxonomy_concepts()
            self._cache[name] = load_bundle(self.root / name, concepts=concepts, ticker=meta.get("ticker", ""),
                                            filed=meta.get("filed", ""), name=name)
        return self._cache[name]

    def filings(self) -> list[Filing]:
        return [self.filing(n) for n in self.names]

    def find(self, ticker: str, form: str | None = None, *, period: str | None = None,
             filed_by: str | None = None) -> list[Filing]:
        """Bundles of ``ticker`` (and ``form``; period end or release date when given), oldest release first."""
        want_form = _norm_form(form) if form else None
        out = []
        for filing in self.filings():
            if filing.ticker.upper() != ticker.upper():
                continue
            if want_form and _norm_form(filing.form) != want_form:
                continue
            if period and filing.period_end != period:
                continue
            if filed_by and filing.filed and filing.filed > filed_by:
                continue
            out.append(filing)
        return sorted(out, key=lambda f: (f.filed or f.period_end, f.bundle))

    def _check(self, name: str) -> None:
        if name not in self.names:
            raise KeyError(f"no bundle {name!r} in {self.root}; bundles: {list(self.names)}")


def _norm_form(form: str) -> str:
    return form.upper().replace("-", "").replace(" ", "")


@functools.lru_cache(maxsize=1)
def shipped_corpus() -> Corpus:
    """The shipped corpus (one instance per process, so bundles are parsed once)."""
    return Corpus()
