"""The XBRL taxonomy tables: the standard-concept table and the US-GAAP calculation relationships.

``envs_data/xbrl/taxonomy/`` ships ``concepts.csv`` (balance and period type of
the us-gaap, srt and dei concepts, :data:`CONCEPT_COLUMNS`) and the US-GAAP 2025
calculation relationships. :func:`finenvs.xbrl.parse.load_bundle` reads concept
metadata a filer's schema does not declare from here; :mod:`finenvs.xbrl.corpus`
re-exports every name.
"""

from __future__ import annotations

import csv
import functools
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from finenvs.errors import DataFileError
from finenvs.xbrl.model import ConceptInfo

CONCEPT_COLUMNS = ("concept", "balance", "period_type", "datatype", "source")


def shipped_xbrl_dir() -> Path:
    """``envs_data/xbrl`` (installed: ``finenvs/envs_data/xbrl``)."""
    import finenvs.envs_data as shipped  # the shipped-data package (no code: only its folder is used)

    return Path(shipped.__file__).resolve().parent / "xbrl"


def write_concept_table(path: Path, rows: Iterable[Mapping[str, str]]) -> None:
    """Write the standard-concept table (sorted by concept)."""
    ordered = sorted(rows, key=lambda r: r["concept"])
    with open(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=CONCEPT_COLUMNS, lineterminator="\n")
        writer.writeheader()
        for row in ordered:
            writer.writerow({k: row.get(k, "") for k in CONCEPT_COLUMNS})


def concept_table(path: Path) -> dict[str, ConceptInfo]:
    """Read a concept table written by :func:`write_concept_table`."""
    if not path.is_file():
        raise DataFileError(f"{path}: concept table not found")
    out: dict[str, ConceptInfo] = {}
    with open(path, newline="") as fh:
        reader = csv.DictReader(fh)
        if tuple(reader.fieldnames or ()) != CONCEPT_COLUMNS:
            raise DataFileError(f"{path}: columns {reader.fieldnames}, expected {list(CONCEPT_COLUMNS)}")
        for row in reader:
            out[row["concept"]] = ConceptInfo(
                row["concept"], row["balance"] or None, row["period_type"] or None, row["datatype"] or None,
                False, row["source"])
    return out


@functools.lru_cache(maxsize=1)
def taxonomy_concepts() -> dict[str, ConceptInfo]:
    """The shipped standard-concept table (us-gaap, srt, dei, ...)."""
    return concept_table(shipped_xbrl_dir() / "taxonomy" / "concepts.csv")


@functools.lru_cache(maxsize=1)
def taxonomy_calculations() -> dict[str, list[dict[str, Any]]]:
    """US-GAAP 2025 calculation relationships: ``"us-gaap:X" -> [{"role", "children": [{"child", "weight"}]}]``."""
    path = shipped_xbrl_dir() / "taxonomy" / "us-gaap-2025_calculation_relationships.json"
    try:
        raw = json.loads(path.read_text())
    except FileNotFoundError as exc:
        raise DataFileError(f"{path}: taxonomy calculation table not found") from exc

    def name(key: str) -> str:  # "Assets" is us-gaap; "srt_X" / "us-gaap-ebp_X" carry their prefix
        prefix, _, local = key.partition("_")
        return f"{prefix}:{local}" if local else f"us-gaap:{key}"

    return {name(parent): [{"role": rel["role"], "children": [{"child": name(c["child"]), "weight": c["weight"]}
                                                             for c in rel["children"]]} for rel in rels]
            for parent, rels in raw.items()}


__all__ = ["CONCEPT_COLUMNS", "concept_table", "shipped_xbrl_dir", "taxonomy_calculations", "taxonomy_concepts",
           "write_concept_table"]
