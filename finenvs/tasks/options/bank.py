"""The curated FinOptions-v0 bank: FAB++ options questions with engine-recomputed truths.

Built by ``envs_data/build_questions.py`` into ``envs_data/questions/options.json``
(listed in the manifest with its sha256). Each item is a FinOptions-v0 task plus
``published`` (the FAB++ answer), ``engine`` (the recomputed numbers scored),
``reference_answer``, ``assumptions`` and, where the published answer is wrong,
``erratum``; ``excluded`` lists the questions left out and why.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from finenvs.data.manifest import shipped_data_dir
from finenvs.errors import DataFileError

BANK_FILE = "questions/options.json"


def load_bank_document(root: Path | None = None) -> dict[str, Any]:
    """The whole bank file (items, excluded questions, conventions)."""
    path = (root or shipped_data_dir()) / BANK_FILE
    if not path.is_file():
        raise DataFileError(f"{path}: the options question bank is not installed")
    return json.loads(path.read_text(encoding="utf-8"))


def load_bank(root: Path | None = None) -> list[dict[str, Any]]:
    """The bank's tasks, in file order."""
    return list(load_bank_document(root)["items"])
