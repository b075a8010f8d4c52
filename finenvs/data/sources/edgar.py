"""SEC EDGAR through ``edgartools``: a company's filings and their sections (the ``data`` extra).

The only module that calls ``edgartools``. EDGAR asks every client to declare who it is (a name and an
e-mail address as the User-Agent, see https://www.sec.gov/os/accessing-edgar-data); :func:`fetch_filings`
refuses to run without one, given as an argument or in ``$EDGAR_IDENTITY`` (the variable ``edgartools``
reads).

:func:`fetch_filings` returns one plain record per filing, as ``Filing.to_dict()`` gives it plus its
sections::

    {"accession_number": "0001318605-26-000012", "cik": 1318605, "company": "Tesla, Inc.", "form": "10-Q",
     "filing_date": "2026-04-22", "url": "https://www.sec.gov/...", "sections": {"Item 2": "...", ...}}

(sections: the items of a 10-K/10-Q/8-K as ``Filing.obj()`` splits them, else the whole text as
``"document"``). Replay (``$FINENVS_FETCH_REPLAY=DIR``): ``DIR/edgar/filings/<SYMBOL>.json`` holds such a
list, cut to the forms and dates asked for, as the live call would.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from finenvs.data.sources import SourceError, recording

NAME = "edgar"
IDENTITY_ENV_VAR = "EDGAR_IDENTITY"
_IDENTITY = re.compile(r"\S.*\s\S+@\S+\.\S+")


def user_agent(given: str | None = None) -> str:
    """The declared User-Agent (``given``, else ``$EDGAR_IDENTITY``): ``"Name email@domain"``.

    Raises:
        SourceError: None declared, or one without a name and an e-mail address.
    """
    value = (given if given is not None else os.environ.get(IDENTITY_ENV_VAR, "")).strip()
    if not value:
        raise SourceError("SEC EDGAR requires a declared User-Agent: give --user-agent 'Your Name you@example.com' "
                          f"or set ${IDENTITY_ENV_VAR}")
    if len(value) > 200 or not _IDENTITY.fullmatch(value):
        raise SourceError(f"User-Agent {value[:60]!r}: EDGAR asks for a name and an e-mail address, "
                          "e.g. 'Your Name you@example.com'")
    return value


def _sections(filing: Any) -> dict[str, str]:
    try:
        obj = filing.obj()
        items = list(getattr(obj, "items", None) or [])
        found = {str(item): str(obj[item]) for item in items if obj[item]}
    except Exception:  # noqa: BLE001 - forms without a parsed object: the whole text below
        found = {}
    return found or {"document": str(filing.text() or "")}


def fetch_filings(symbol: str, start: str, end: str, forms: tuple[str, ...], identity: str | None = None
                  ) -> list[dict[str, Any]]:
    """Filings of ``symbol`` of ``forms`` filed ``start..end`` (ISO days, inclusive), with their sections.

    Raises:
        SourceError: No declared User-Agent (checked first, also in replay), edgartools missing, or (replay) no
            recording of ``symbol``.
    """
    agent = user_agent(identity)
    path = recording(NAME, "filings", "filings", symbol, ".json")
    if path is not None:
        records = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(records, list):
            raise SourceError(f"{path}: expected a list of filings")
        return [r for r in records if isinstance(r, dict) and r.get("form") in forms
                and start <= str(r.get("filing_date", "")) <= end]
    try:
        import edgar
    except ImportError as exc:
        raise SourceError("fetching from SEC EDGAR needs edgartools: pip install 'finenvs[data]'") from exc
    edgar.set_identity(agent)
    filings = edgar.Company(symbol).get_filings(form=list(forms), filing_date=f"{start}:{end}")
    out = []
    for filing in filings:
        record = dict(filing.to_dict())
        record["filing_date"] = str(record.get("filing_date", ""))[:10]
        record["url"] = str(getattr(filing, "url", "") or "")
        record["sections"] = _sections(filing)
        out.append(record)
    return out


def save_filings(records: list[dict[str, Any]], symbol: str, folder: Path | str) -> Path:
    """Record ``records`` (as :func:`fetch_filings` returns them) for replay under ``folder``."""
    path = Path(folder) / NAME / "filings" / f"{symbol}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(records, indent=1, default=str), encoding="utf-8")
    return path


__all__ = ["IDENTITY_ENV_VAR", "fetch_filings", "save_filings", "user_agent"]
