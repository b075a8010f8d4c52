"""Copy the XBRL bundles and the taxonomy tables into envs_data/xbrl/ and record them in MANIFEST.json.

A maintainer tool (not run at install or run time)::

    python envs_data/build_xbrl.py --source /path/to/gathered/data

What it writes:

* ``xbrl/<bundle>/``: the six files of each bundle (instance, schema, cal, def,
  lab, pre) byte for byte, plus ``filing.json`` (company, CIK, ticker, form,
  period end, release date, accession number, source). Metadata files of the
  source folder (``metadata.json``, ``MetaLinks.json``) are not copied; what
  they say is in ``filing.json`` and ``taxonomy/concepts.csv``.
* ``xbrl/taxonomy/concepts.csv``: balance and period type of the standard
  (us-gaap, srt, dei, ...) concepts, one row per concept, with the source of
  each row. Precedence: the SEC's MetaLinks.json of the AAPL 10-Q bundle, then
  the FASB SRT 2024 element schema, then the SEC Financial Statement Data Sets
  2010q2 tag table (``custom=0`` tags, read as us-gaap), then the derived
  ``concepts_observed_in_bundles.csv``. A concept none of them describes is
  absent: its balance is unknown and stays unknown.
* ``xbrl/taxonomy/us-gaap-2025_calculation_relationships.json``: the US-GAAP
  2025 calculation formulas, byte for byte (the ``get_taxonomy_calculation`` tool).

Every file gets a MANIFEST entry: kind ``xbrl`` (rows = facts, arcs, labels or
element declarations, which ``finenvs data verify`` recounts) or ``taxonomy``.
"""

from __future__ import annotations

import argparse
import csv
import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from finenvs.data.manifest import sha256_file
from finenvs.xbrl.corpus import count_rows, write_concept_table
from finenvs.xbrl.parse import bundle_files, load_bundle

HERE = Path(__file__).resolve().parent
DEST = HERE / "xbrl"
SOURCE = "SEC EDGAR XBRL bundle (public domain), via GitHub dgunning/edgartools test fixtures (MIT)"
LICENCE = "Public domain (SEC filing); fixture collection MIT"
#: Release (SEC acceptance) dates and accession numbers the source folders do not record in metadata.json.
#: AAPL's comes from the folder name and Apple's 10-Q cover; TSLA's from the 10-Q as filed with the SEC.
EXTRA_METADATA: dict[str, dict[str, Any]] = {
    "aapl_10q_2025-03-29_0000320193-25-000057": {
        "company": "Apple Inc.", "cik": 320193, "ticker": "AAPL", "form": "10-Q", "filing_date": "2025-05-02",
        "accession_no": "0000320193-25-000057"},
    "tsla_10q_2024-06-30": {
        "company": "Tesla, Inc.", "cik": 1318605, "ticker": "TSLA", "form": "10-Q", "filing_date": "2024-07-24",
        "accession_no": ""},
}
_BAL = {"C": "credit", "D": "debit"}
_IORD = {"I": "instant", "D": "duration"}


def _concept_rows(source: Path) -> dict[str, dict[str, str]]:
    rows: dict[str, dict[str, str]] = {}

    def put(name: str, balance: str, period: str, datatype: str, src: str) -> None:
        row = rows.setdefault(name, {"concept": name, "balance": "", "period_type": "", "datatype": "", "source": ""})
        used = []
        if balance and not row["balance"]:
            row["balance"] = balance
            used.append("balance")
        if period and not row["period_type"]:
            row["period_type"] = period
            used.append("period")
        if datatype and not row["datatype"]:
            row["datatype"] = datatype
        if used:
            row["source"] = "; ".join(filter(None, [row["source"], f"{'+'.join(used)}: {src}"]))

    metalinks = source / "xbrl/aapl_10q_2025-03-29_0000320193-25-000057/MetaLinks.json"
    for instance in json.loads(metalinks.read_text())["instance"].values():
        for key, tag in instance["tag"].items():
            prefix, _, local = key.partition("_")
            if prefix == "aapl":
                continue  # the filer's own concepts come from its schema
            put(f"{prefix}:{local}", tag.get("crdr", ""), "", tag.get("xbrltype", ""), "SEC MetaLinks.json")
    xs = "{http://www.w3.org/2001/XMLSchema}element"
    xbrli = "{http://www.xbrl.org/2003/instance}"
    for el in ET.parse(source / "taxonomy/srt-2024/elts/srt-2024.xsd").getroot().iter(xs):
        if el.get("name"):
            put(f"srt:{el.get('name')}", el.get(f"{xbrli}balance") or "", el.get(f"{xbrli}periodType") or "",
                (el.get("type") or "").rsplit(":", 1)[-1], "FASB SRT 2024 taxonomy")
    with open(source / "taxonomy/sec_fsds_2010q2_tag.txt", newline="") as fh:
        for row in csv.DictReader(fh, delimiter="\t"):
            if row["custom"] == "0" and row["version"].startswith(("us-gaap/", "dei/")):
                prefix = row["version"].split("/", 1)[0]
                put(f"{prefix}:{row['tag']}", _BAL.get(row["crdr"], ""), _IORD.get(row["iord"], ""),
                    row["datatype"] + "ItemType" if row["datatype"] else "", "SEC FSDS 2010q2 tag table")
    with open(source / "taxonomy/concepts_observed_in_bundles.csv", newline="") as fh:
        for row in csv.DictReader(fh):
            if row["prefix"] in ("us-gaap", "srt", "dei", "ecd", "country", "invest"):
                put(f"{row['prefix']}:{row['concept']}", row["balance"], row["period_type"], row["xbrltype"],
                    "concepts_observed_in_bundles.csv")
    return rows


def _entry(path: Path, kind: str, dataset: str, rows: int, lo: str, hi: str, symbols: list[str], source: str,
           licence: str, description: str, transform: str) -> dict[str, Any]:
    return {"file": str(path.relative_to(HERE)), "kind": kind, "dataset": dataset, "description": description,
            "sha256": sha256_file(path), "rows": rows, "date_min": lo, "date_max": hi, "symbols": symbols,
            "source": source, "licence": licence, "transform": transform, "excluded_rows": []}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", required=True, type=Path, help="folder holding xbrl/ and taxonomy/")
    args = parser.parse_args()
    if DEST.exists():
        shutil.rmtree(DEST)
    (DEST / "taxonomy").mkdir(parents=True)
    entries: list[dict[str, Any]] = []

    concepts_path = DEST / "taxonomy/concepts.csv"
    rows = _concept_rows(args.source)
    write_concept_table(concepts_path, rows.values())
    entries.append(_entry(concepts_path, "taxonomy", "concepts", len(rows), "2010-04-01", "2025-03-29", [],
                          "SEC MetaLinks.json (AAPL 10-Q 2025), FASB SRT 2024 taxonomy, SEC FSDS 2010q2 tag table, "
                          "concepts_observed_in_bundles.csv", "Public domain (SEC, FASB taxonomy elements)",
                          "Balance and period type of standard concepts, for concepts a filer's schema does not "
                          "declare.", "one row per concept; first source that gives a field wins (see build_xbrl.py)"))
    calc = DEST / "taxonomy/us-gaap-2025_calculation_relationships.json"
    shutil.copyfile(args.source / "taxonomy/us-gaap-2025_calculation_relationships_financial4all.json", calc)
    entries.append(_entry(calc, "taxonomy", "us-gaap-2025-calculation", count_rows(calc, "taxonomy"), "2025-01-01",
                          "2025-12-31", [], "GitHub jacobmgeiger/Financial4All (US-GAAP 2025 taxonomy)", "MIT",
                          "US-GAAP 2025 calculation relationships: parent -> [role, children with weights].",
                          "copied byte for byte"))

    from finenvs.xbrl.corpus import concept_table

    table = concept_table(concepts_path)
    for folder in sorted(p for p in (args.source / "xbrl").iterdir() if p.is_dir()):
        meta_path = folder / "metadata.json"
        meta = json.loads(meta_path.read_text()) if meta_path.is_file() else dict(EXTRA_METADATA[folder.name])
        dest = DEST / folder.name
        dest.mkdir()
        files = bundle_files(folder)
        for path in files.values():
            shutil.copyfile(path, dest / path.name)
        filing = load_bundle(dest, concepts=table, ticker=meta["ticker"], filed=meta["filing_date"])
        info = {"bundle": folder.name, "company": meta["company"], "cik": int(meta["cik"]),
                "ticker": meta["ticker"], "form": meta["form"], "period_end": filing.period_end,
                "filed": meta["filing_date"], "accession_no": meta.get("accession_no", ""),
                "files": {k: p.name for k, p in files.items()}, "source": SOURCE}
        (dest / "filing.json").write_text(json.dumps(info, indent=2) + "\n")
        for kind, path in [*((k, dest / p.name) for k, p in files.items()), ("index", dest / "filing.json")]:
            entries.append(_entry(
                path, "xbrl", folder.name, count_rows(path, kind), filing.period_end, meta["filing_date"],
                [meta["ticker"]], SOURCE, LICENCE,
                f"{meta['ticker']} {meta['form']} for the period ended {filing.period_end}, filed "
                f"{meta['filing_date']}: {kind} file", "copied byte for byte" if kind != "index" else
                "bundle index written from the source's metadata"))
        print(f"{folder.name}: {filing.summary()}")

    manifest_path = HERE / "MANIFEST.json"
    doc = json.loads(manifest_path.read_text())
    doc["files"] = [e for e in doc["files"] if e["kind"] not in ("xbrl", "taxonomy")] + entries
    manifest_path.write_text(json.dumps(doc, indent=2) + "\n")
    print(f"{len(entries)} manifest entries written")


if __name__ == "__main__":
    main()
