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

XBRL (:func:`list_xbrl_filings`, :func:`fetch_xbrl_files`): the filings of a company as EDGAR's submissions
JSON lists them (``https://data.sec.gov/submissions/CIK##########.json``, ``filings.recent``: accession
number, form, filing date, report date, acceptance time, whether it has XBRL), one record each::

    {"accession_number": "0000320193-25-000057", "cik": 320193, "company": "Apple Inc.", "form": "10-Q",
     "filing_date": "2025-05-02", "report_date": "2025-03-29", "acceptance_datetime": "2025-05-02T06:01:36.000Z",
     "is_xbrl": True}

and a filing's XBRL documents as EDGAR's filing folder serves them: the instance (the ``*_htm.xml`` EDGAR
extracts from an inline-XBRL filing, or the filed ``.xml``), the schema (``EX-101.SCH``) and the four
linkbases (``EX-101.CAL/DEF/LAB/PRE``), byte for byte, with the acceptance time of the filing's own SGML header
(Eastern time; the submissions JSON labels its time UTC, which for some filers it is not). Replay:
``DIR/edgar/submissions/<SYMBOL>.json`` is the submissions JSON, ``DIR/edgar/xbrl/<ACCESSION>/`` the filing's
XBRL documents, and ``DIR/edgar/xbrl/<ACCESSION>.hdr.sgml`` (optional) its SGML header as EDGAR serves it
(``<ACCEPTANCE-DATETIME>20250502060136``). :func:`save_submissions` and :func:`save_xbrl_files` write them.

Rate: EDGAR allows at most :data:`MAX_REQUESTS_PER_SECOND` requests a second per client. ``edgartools`` paces
its own requests (``$EDGAR_RATE_LIMIT_PER_SEC``, read when it is first imported); :func:`_edgar` caps that at
:data:`MAX_REQUESTS_PER_SECOND` before the import, and :mod:`finenvs.data.fetch` spaces this module's calls.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from finenvs.data.sources import SourceError, recording, replay_dir

NAME = "edgar"
IDENTITY_ENV_VAR = "EDGAR_IDENTITY"
#: EDGAR's fair-access limit per client (https://www.sec.gov/os/accessing-edgar-data).
MAX_REQUESTS_PER_SECOND = 10
RATE_ENV_VAR = "EDGAR_RATE_LIMIT_PER_SEC"
#: The XBRL documents of a filing, by EDGAR's document type (the instance is typed ``XML`` or ``EX-101.INS``).
XBRL_DOCUMENT_TYPES = {"EX-101.SCH": "schema", "EX-101.CAL": "cal", "EX-101.DEF": "def", "EX-101.LAB": "lab",
                       "EX-101.PRE": "pre"}
_IDENTITY = re.compile(r"\S.*\s\S+@\S+\.\S+")
_ACCESSION = re.compile(r"\d{10}-\d{2}-\d{6}")
_HEADER_ACCEPTED = re.compile(rb"<ACCEPTANCE-DATETIME>\s*(\d{14})")
#: Largest recorded or downloaded XBRL document read (a 10-K's instance is a few MB).
MAX_DOCUMENT_BYTES = 200_000_000


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
    edgar = _edgar(agent)
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


def _edgar(agent: str) -> Any:
    """``edgartools`` with ``agent`` declared and its request rate capped at EDGAR's limit."""
    try:
        asked = int(os.environ.get(RATE_ENV_VAR, "") or MAX_REQUESTS_PER_SECOND - 1)
    except ValueError:
        asked = MAX_REQUESTS_PER_SECOND - 1
    os.environ[RATE_ENV_VAR] = str(max(1, min(asked, MAX_REQUESTS_PER_SECOND)))
    try:
        import edgar
    except ImportError as exc:
        raise SourceError("fetching from SEC EDGAR needs edgartools: pip install 'finenvs[data]'") from exc
    edgar.set_identity(agent)
    return edgar


# ---------------------------------------------------------------------------- XBRL
def submissions_records(doc: Any, where: str) -> list[dict[str, Any]]:
    """The filings of an EDGAR submissions JSON (``filings.recent``) as records (see the module doc).

    Raises:
        SourceError: Not a submissions JSON: ``where`` and the missing or malformed field are named.
    """
    recent = doc.get("filings", {}).get("recent") if isinstance(doc, dict) and isinstance(doc.get("filings"),
                                                                                          dict) else None
    if not isinstance(recent, dict):
        raise SourceError(f"{where}: field 'filings.recent' not found; not an EDGAR submissions JSON")
    fields = ("accessionNumber", "form", "filingDate", "reportDate", "acceptanceDateTime", "isXBRL")
    columns = {}
    for name in fields:
        column = recent.get(name)
        if not isinstance(column, list):
            raise SourceError(f"{where}: field 'filings.recent.{name}' is missing or not a list")
        columns[name] = column
    n = len(columns["accessionNumber"])
    short = [name for name in fields if len(columns[name]) != n]
    if short:
        raise SourceError(f"{where}: field 'filings.recent.{short[0]}' has {len(columns[short[0]])} entries, "
                          f"'filings.recent.accessionNumber' {n}")
    cik, company = doc.get("cik", ""), doc.get("name", "")
    cik = int(cik) if isinstance(cik, str) and cik.isdigit() and len(cik) <= 10 else cik  # the JSON writes "320193"
    return [{"accession_number": str(columns["accessionNumber"][i]), "cik": cik, "company": str(company),
             "form": str(columns["form"][i]), "filing_date": str(columns["filingDate"][i]),
             "report_date": str(columns["reportDate"][i]), "acceptance_datetime": str(columns["acceptanceDateTime"][i]),
             "is_xbrl": bool(columns["isXBRL"][i])} for i in range(n)]


def list_xbrl_filings(symbol: str, start: str, end: str, forms: tuple[str, ...], identity: str | None = None
                      ) -> list[dict[str, Any]]:
    """Filings of ``symbol`` of ``forms`` filed ``start..end`` (ISO days, inclusive), as EDGAR lists them.

    Raises:
        SourceError: No declared User-Agent (checked first, also in replay), edgartools missing, or (replay) no
            recording of ``symbol`` or one that is not a submissions JSON.
    """
    agent = user_agent(identity)
    path = recording(NAME, "submissions", "EDGAR submissions", symbol, ".json")
    if path is not None:
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise SourceError(f"{path}: not JSON ({exc})") from exc
        records = submissions_records(doc, str(path))
    else:
        company = _edgar(agent).Company(symbol)
        records = [{"accession_number": str(f.accession_no), "cik": f.cik, "company": str(f.company),
                    "form": str(f.form), "filing_date": str(f.filing_date)[:10],
                    "report_date": str(getattr(f, "report_date", "") or "")[:10],
                    "acceptance_datetime": str(getattr(f, "acceptance_datetime", "") or ""),
                    "is_xbrl": bool(getattr(f, "is_xbrl", True))}
                   for f in company.get_filings(form=list(forms), filing_date=f"{start}:{end}")]
    return sorted((r for r in records if r["form"] in forms and start <= r["filing_date"][:10] <= end),
                  key=lambda r: (r["filing_date"], r["accession_number"]))


def _header_acceptance(data: bytes) -> str | None:
    """``YYYY-MM-DDTHH:MM:SS`` (Eastern) of an SGML header's ``<ACCEPTANCE-DATETIME>``, or None."""
    found = _HEADER_ACCEPTED.search(data[:20_000])
    if not found:
        return None
    d = found.group(1).decode()
    return f"{d[:4]}-{d[4:6]}-{d[6:8]}T{d[8:10]}:{d[10:12]}:{d[12:14]}"


def _is_instance(document_type: str, name: str, content: bytes) -> bool:
    return (document_type in ("XML", "EX-101.INS") and name.lower().endswith(".xml")
            and b"<xbrl" in content[:4000].replace(b"xbrli:xbrl", b"xbrl"))


def fetch_xbrl_files(record: dict[str, Any], identity: str | None = None) -> dict[str, Any]:
    """The XBRL documents of one filing (a record of :func:`list_xbrl_filings`) and its header's acceptance time.

    Returns:
        ``{"files": {document name: bytes}, "accepted": "YYYY-MM-DDTHH:MM:SS" (Eastern) or None}``.

    Raises:
        SourceError: No declared User-Agent, edgartools missing, a malformed accession number, or (replay) no
            recorded folder of the filing.
    """
    agent = user_agent(identity)
    accession = str(record.get("accession_number", ""))
    if not _ACCESSION.fullmatch(accession):
        raise SourceError(f"accession number {accession[:40]!r}: expected ##########-##-######")
    folder = replay_dir()
    if folder is not None:
        where = folder / NAME / "xbrl" / accession
        if not where.is_dir():
            raise SourceError(f"no recorded XBRL documents for {accession} ({where} not found)")
        recorded = {p.name: p.read_bytes() for p in sorted(where.iterdir())
                    if p.is_file() and p.stat().st_size <= MAX_DOCUMENT_BYTES}
        header = where.with_name(f"{accession}.hdr.sgml")
        return {"files": recorded, "accepted": _header_acceptance(header.read_bytes()) if header.is_file() else None}
    edgar = _edgar(agent)
    filing = edgar.Filing(cik=int(record.get("cik") or 0), company=str(record.get("company", "")),
                          form=str(record.get("form", "")), filing_date=str(record.get("filing_date", "")),
                          accession_no=accession)
    files = _xbrl_documents(filing.attachments)  # the full submission: one request
    if not any(_is_instance(t, n, c) for n, (t, c) in files.items()):  # older inline filings: the folder's copy
        files.update(_xbrl_documents(filing.homepage.attachments))
    accepted = None
    try:
        stamp = filing.header.acceptance_datetime
        accepted = stamp.strftime("%Y-%m-%dT%H:%M:%S") if stamp is not None else None
    except Exception:  # noqa: BLE001 - a submission without a readable header: the listing's time is used
        accepted = None
    return {"files": {n: c for n, (_, c) in files.items()}, "accepted": accepted}


def _xbrl_documents(attachments: Any) -> dict[str, tuple[str, bytes]]:
    out: dict[str, tuple[str, bytes]] = {}
    for attachment in list(getattr(attachments, "data_files", None) or []):
        kind, name = str(attachment.document_type or "").strip().upper(), str(attachment.document or "")
        if kind not in XBRL_DOCUMENT_TYPES and kind not in ("XML", "EX-101.INS"):
            continue
        content = attachment.content
        data = content.encode("utf-8") if isinstance(content, str) else bytes(content or b"")
        if kind in XBRL_DOCUMENT_TYPES or _is_instance(kind, name, data):
            out[Path(name).name] = (kind, data)
    return out


def save_submissions(doc: dict[str, Any], symbol: str, folder: Path | str) -> Path:
    """Record an EDGAR submissions JSON of ``symbol`` for replay under ``folder``."""
    path = Path(folder) / NAME / "submissions" / f"{symbol}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1), encoding="utf-8")
    return path


def save_xbrl_files(files: dict[str, bytes], accession: str, folder: Path | str, accepted: str | None = None
                    ) -> Path:
    """Record a filing's XBRL documents (and, given ``accepted`` as ``YYYY-MM-DDTHH:MM:SS``, its SGML header's
    acceptance time) for replay under ``folder``; returns the filing's folder."""
    where = Path(folder) / NAME / "xbrl" / accession
    where.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (where / Path(name).name).write_bytes(data)
    if accepted is not None:
        stamp = re.sub(r"\D", "", accepted)[:14]
        where.with_name(f"{accession}.hdr.sgml").write_text(
            f"<SEC-HEADER>\n<ACCEPTANCE-DATETIME>{stamp}\n<ACCESSION-NUMBER>{accession}\n</SEC-HEADER>\n")
    return where


__all__ = ["IDENTITY_ENV_VAR", "MAX_REQUESTS_PER_SECOND", "fetch_filings", "fetch_xbrl_files", "list_xbrl_filings",
           "save_filings", "save_submissions", "save_xbrl_files", "submissions_records", "user_agent"]
