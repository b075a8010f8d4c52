"""Build envs_data/questions/fab_public.json: the Finance Agent Benchmark's 50 public questions, with rubrics.

A maintainer tool (not run at install or run time)::

    python envs_data/build_fab_public.py --source /path/to/gathered/data

Reads ``questions/finance_agent_benchmark_public.csv`` (columns Question,
Answer, Question Type, Expert time (mins), Rubric) with the csv module and keeps
every row verbatim: the question, the expert answer, the question type, the
expert's time and the rubric parsed from its JSON text into a list of
``{"operator", "criteria"}`` items. A malformed row is an error naming the file,
row and column. The questions are closed-book for finenvs (no shipped data
answers them): FinQA-v0 asks them as ``split="fab_public"`` and scores their
rubrics with :mod:`finenvs.tasks.qa.fab_public`. The manifest's date range is the
range of the full dates the questions state (they have no as-of date of their own).
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path
from typing import Any

from finenvs.data.manifest import sha256_file
from finenvs.tasks.qa.fab_public import DATA_FILE, OPERATORS, count_items, item_from_record, read_figures

HERE = Path(__file__).resolve().parent
DEST = DATA_FILE
CSV = "questions/finance_agent_benchmark_public.csv"
SOURCE = "Finance Agent Benchmark public questions (vals-ai; MIT), finance_agent_benchmark_public.csv"
LICENCE = "MIT (vals-ai Finance Agent Benchmark)"
COLUMNS = ("Question", "Answer", "Question Type", "Expert time (mins)", "Rubric")


def read_rows(path: Path) -> list[dict[str, Any]]:
    """The CSV's rows as data-file records.

    Raises:
        ValueError: A missing column, an empty field, a rubric that is not a JSON list of items (names file,
            row and column).
    """
    with open(path, newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        missing = [c for c in COLUMNS if c not in (reader.fieldnames or ())]
        if missing:
            raise ValueError(f"{path}: missing column(s) {missing}; found {reader.fieldnames}")
        records = []
        for i, row in enumerate(reader):
            line = i + 2  # the header is row 1
            for column in ("Question", "Answer", "Question Type", "Rubric"):
                if not (row.get(column) or "").strip():
                    raise ValueError(f"{path}: row {line}, column {column!r}: empty")
            try:
                rubric = json.loads(row["Rubric"])
            except ValueError as exc:
                raise ValueError(f"{path}: row {line}, column 'Rubric': not JSON ({exc})") from None
            if not isinstance(rubric, list) or not rubric:
                raise ValueError(f"{path}: row {line}, column 'Rubric': not a non-empty list")
            for k, item in enumerate(rubric):
                if not isinstance(item, dict) or item.get("operator") not in OPERATORS \
                        or not isinstance(item.get("criteria"), str) or not item["criteria"].strip():
                    raise ValueError(f"{path}: row {line}, column 'Rubric', item {k}: needs operator in {OPERATORS} "
                                     "and a non-empty criteria")
            minutes_text = (row.get("Expert time (mins)") or "").strip()
            try:
                minutes: float | None = float(minutes_text) if minutes_text else None
            except ValueError:
                raise ValueError(f"{path}: row {line}, column 'Expert time (mins)': {minutes_text!r} is not a "
                                 "number") from None
            records.append({
                "id": f"fab_public/{i:02d}", "index": i, "kind": "fab_public", "source": f"{SOURCE}: row {line}",
                "question": row["Question"], "answer": row["Answer"], "question_type": row["Question Type"].strip(),
                "expert_minutes": minutes,
                "rubric": [{"operator": item["operator"], "criteria": item["criteria"]} for item in rubric],
            })
    return records


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", required=True, type=Path, help="folder holding questions/")
    args = parser.parse_args()
    records = read_rows(args.source / CSV)
    items = [item_from_record(r, f"{CSV} row {r['index'] + 2}") for r in records]  # the scorer reads every rubric
    dates = sorted(f"{y:04d}-{m:02d}-{d:02d}" for r in records for f in read_figures(r["question"])[0]
                   if f.date is not None for y, m, d in [f.date] if y is not None and d is not None)
    counts = count_items(items)
    doc = {"description": "The Finance Agent Benchmark's public questions with expert answers and rubrics; "
                          "closed-book for finenvs (FinQA-v0 split 'fab_public')",
           "source": SOURCE, "licence": LICENCE, "items": records}
    dest = HERE / DEST
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(json.dumps(doc, indent=1, ensure_ascii=False, allow_nan=False) + "\n", encoding="utf-8")
    manifest_path = HERE / "MANIFEST.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["files"] = [e for e in manifest["files"] if e["file"] != DEST]
    manifest["files"].append({
        "file": DEST, "kind": "questions", "dataset": "fab_public",
        "description": (f"Finance Agent Benchmark public set: {len(records)} closed-book questions with expert "
                        f"answers and rubrics ({counts['items']} items, {counts['deterministic']} stating a figure)"),
        "sha256": sha256_file(dest), "rows": len(records), "date_min": dates[0], "date_max": dates[-1],
        "symbols": [], "source": SOURCE, "licence": LICENCE,
        "transform": "verbatim rows; rubric JSON text parsed to a list; dates = range of full dates the questions state",
    })
    manifest_path.write_text(json.dumps(manifest, indent=2) + "\n")
    print(f"{dest}: {len(records)} items; rubric {counts}")


if __name__ == "__main__":
    main()
