"""Read an XBRL bundle (instance, schema and the four linkbases) with the standard library's ElementTree,
through defusedxml.

A bundle is a folder of six files, the form the SEC's EDGAR serves and the
HERCULEAN/FinAuditing filings use:

============  ==========================================================
instance      ``*_htm.xml`` (inline XBRL extracted) or the one other ``.xml``
schema        ``*.xsd`` (the filer's extension schema)
cal           ``*_cal.xml`` calculation linkbase
def           ``*_def.xml`` definition linkbase
lab           ``*_lab.xml`` label linkbase
pre           ``*_pre.xml`` presentation linkbase
============  ==========================================================

Rules (each one is what the tests pin down):

* Nothing is fetched: ``schemaRef``/``loc`` URLs are read as names only.
* A user's files are hostile until parsed: a DTD (where entity bombs and external entities live)
  is refused by defusedxml with an error naming the file, never expanded or fetched; XBRL uses none.
* Concept names are ``prefix:LocalName``. Instance facts take the prefix the
  instance declares for their namespace; linkbase locators take it from the
  ``#prefix_LocalName`` fragment (split at the first ``_``).
* ``decimals="INF"`` is exact (None); a missing ``decimals`` is None too.
* A nil fact keeps ``value=None``. A numeric fact whose text is not a number
  is an error naming the fact (a corrupt instance must not become a wrong truth).
* Calculation arcs other than summation-item are ignored; weights are floats.
* Concept metadata comes first from the filer's schema (custom concepts), then
  from the ``concepts`` table passed in (the shipped US-GAAP/SRT/DEI table), and
  a concept still without a period type gets the one its facts' contexts imply
  (``source="inferred from contexts"``). Balance is never inferred.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET  # the Element type only: files are parsed through defusedxml
from collections.abc import Iterator, Mapping
from pathlib import Path

import defusedxml
import defusedxml.ElementTree as SafeET

from finenvs.errors import DataError, DataFileError
from finenvs.xbrl.model import (
    SUMMATION_ITEM,
    CalcArc,
    ConceptInfo,
    Context,
    Fact,
    Filing,
    PresentationArc,
    Unit,
)
from finenvs.xbrl.taxonomy import taxonomy_concepts

XBRLI = "http://www.xbrl.org/2003/instance"
LINK = "http://www.xbrl.org/2003/linkbase"
XLINK = "http://www.w3.org/1999/xlink"
XSI = "http://www.w3.org/2001/XMLSchema-instance"
XBRLDI = "http://xbrl.org/2006/xbrldi"
XS = "http://www.w3.org/2001/XMLSchema"
#: The six files of a bundle, in the order errors list them.
BUNDLE_FILES = ("instance", "schema", "cal", "def", "lab", "pre")
_SUFFIX = {"cal": "_cal.xml", "def": "_def.xml", "lab": "_lab.xml", "pre": "_pre.xml"}
#: Instance-level elements that are not facts.
_NOT_FACTS = {f"{{{XBRLI}}}context", f"{{{XBRLI}}}unit", f"{{{LINK}}}schemaRef", f"{{{LINK}}}linkbaseRef",
              f"{{{LINK}}}roleRef", f"{{{LINK}}}arcroleRef", f"{{{LINK}}}footnoteLink"}


class XbrlError(DataError):
    """An XBRL bundle that cannot be read: a missing file, bad XML or a broken reference."""


def bundle_files(folder: str | Path) -> dict[str, Path]:
    """Find the six files of a bundle folder.

    Raises:
        XbrlError: The folder is missing, a file is missing, or two files claim one role.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise XbrlError(f"{folder}: XBRL bundle folder not found")
    names = sorted(p.name for p in folder.iterdir() if p.is_file())
    found: dict[str, list[str]] = {kind: [] for kind in BUNDLE_FILES}
    for name in names:
        low = name.lower()
        kind = next((k for k, suffix in _SUFFIX.items() if low.endswith(suffix)), None)
        if kind:
            found[kind].append(name)
        elif low.endswith(".xsd"):
            found["schema"].append(name)
        elif low.endswith(".xml") and low not in ("filingsummary.xml",):
            found["instance"].append(name)
    missing = [k for k in BUNDLE_FILES if not found[k]]
    if missing:
        what = ", ".join(f"{k} ({_SUFFIX.get(k, '.xsd' if k == 'schema' else '.xml')})" for k in missing)
        raise XbrlError(f"{folder}: bundle is missing its {what} file; a bundle needs instance, schema, "
                        f"calculation, definition, label and presentation files (found: {names})")
    if len(found["instance"]) > 1:  # prefer the inline-XBRL extract when both forms are present
        htm = [n for n in found["instance"] if n.lower().endswith("_htm.xml")]
        if len(htm) == 1:
            found["instance"] = htm
    ambiguous = {k: v for k, v in found.items() if len(v) > 1}
    if ambiguous:
        raise XbrlError(f"{folder}: more than one candidate file for {ambiguous}; keep one per role")
    return {k: folder / v[0] for k, v in found.items()}


def _parse_xml(path: Path, *, namespaces: bool = False) -> tuple[ET.Element, dict[str, str]]:
    """Parse ``path``; with ``namespaces`` also return ``{uri: prefix}`` as declared (first wins)."""
    prefixes: dict[str, str] = {}
    try:
        if not namespaces:
            return SafeET.parse(path, forbid_dtd=True).getroot(), prefixes
        root = None
        for event, item in SafeET.iterparse(path, events=("start-ns", "start"), forbid_dtd=True):
            if event == "start-ns":
                prefix, uri = item
                if prefix and uri not in prefixes:
                    prefixes[uri] = prefix
            elif root is None:
                root = item
        assert root is not None
        return root, prefixes
    except ET.ParseError as exc:
        raise XbrlError(f"{path}: not well-formed XML ({exc})") from exc
    except defusedxml.DefusedXmlException as exc:  # DTDForbidden, EntitiesForbidden, ExternalReferenceForbidden
        raise XbrlError(f"{path}: refused: the XML has a DTD (entity declarations or external references; "
                        f"{type(exc).__name__}); XBRL uses none") from exc
    except OSError as exc:
        raise DataFileError(f"{path}: cannot be read ({exc})") from exc


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _href_concept(href: str) -> str:
    fragment = href.rsplit("#", 1)[-1]
    prefix, sep, name = fragment.partition("_")
    return f"{prefix}:{name}" if sep else fragment


def _float(text: str | None, default: float = 0.0) -> float:
    try:
        return float(text) if text not in (None, "") else default
    except ValueError:
        return default


def _decimals(raw: str | None, where: str) -> int | None:
    if raw is None or raw.strip().upper() == "INF":
        return None
    try:
        return int(raw)
    except ValueError:
        raise XbrlError(f"{where}: decimals={raw!r} is neither an integer nor INF") from None


# ---------------------------------------------------------------------- instance
def parse_instance(path: Path) -> tuple[dict[str, Context], dict[str, Unit], list[Fact], dict[str, str]]:
    """Contexts, units and facts of an instance document (plus its ``{uri: prefix}`` map)."""
    root, prefixes = _parse_xml(path, namespaces=True)
    if _local(root.tag) != "xbrl":
        raise XbrlError(f"{path}: root element is <{_local(root.tag)}>, not an XBRL instance <xbrl>")

    def qname(tag: str) -> str:
        if tag.startswith("{"):
            uri, local = tag[1:].split("}", 1)
            return f"{prefixes.get(uri, uri)}:{local}"
        return tag

    contexts: dict[str, Context] = {}
    units: dict[str, Unit] = {}
    for el in root.findall(f"{{{XBRLI}}}context"):
        cid = el.get("id", "")
        ident = el.findtext(f"{{{XBRLI}}}entity/{{{XBRLI}}}identifier", default="").strip()
        period = el.find(f"{{{XBRLI}}}period")
        if period is None:
            raise XbrlError(f"{path}: context {cid!r} has no period")
        instant = period.findtext(f"{{{XBRLI}}}instant")
        start = period.findtext(f"{{{XBRLI}}}startDate")
        end = period.findtext(f"{{{XBRLI}}}endDate")
        if instant:
            start, end = None, instant.strip()[:10]
        elif start and end:
            start, end = start.strip()[:10], end.strip()[:10]
        elif period.find(f"{{{XBRLI}}}forever") is not None:
            start, end = "forever", "forever"
        else:
            raise XbrlError(f"{path}: context {cid!r} has neither an instant nor a start and end date")
        dims: list[tuple[str, str]] = []
        for holder in (f"{{{XBRLI}}}entity/{{{XBRLI}}}segment", f"{{{XBRLI}}}scenario"):
            for seg in el.findall(holder):
                for member in seg:
                    axis = member.get("dimension", _local(member.tag))
                    name = (member.text or "").strip() if _local(member.tag) == "explicitMember" else (
                        "typed:" + "".join(member.itertext()).strip())
                    dims.append((axis, name))
        contexts[cid] = Context(cid, ident, start, end, tuple(sorted(dims)))
    for el in root.findall(f"{{{XBRLI}}}unit"):
        uid = el.get("id", "")
        divide = el.find(f"{{{XBRLI}}}divide")
        if divide is not None:
            num = "*".join((m.text or "").strip() for m in divide.iterfind(f"{{{XBRLI}}}unitNumerator/{{{XBRLI}}}measure"))
            den = "*".join((m.text or "").strip()
                           for m in divide.iterfind(f"{{{XBRLI}}}unitDenominator/{{{XBRLI}}}measure"))
            measure = f"{num}/{den}"
        else:
            measure = "*".join((m.text or "").strip() for m in el.findall(f"{{{XBRLI}}}measure"))
        units[uid] = Unit(uid, measure)

    facts: list[Fact] = []
    for el in root:
        if el.tag in _NOT_FACTS or not isinstance(el.tag, str):
            continue
        ctx = el.get("contextRef")
        if ctx is None:
            continue  # tuples and footnotes: not facts of this model
        concept = qname(el.tag)
        if ctx not in contexts:
            raise XbrlError(f"{path}: fact {concept} refers to context {ctx!r}, which the instance does not define")
        unit = el.get("unitRef")
        if unit is not None and unit not in units:
            raise XbrlError(f"{path}: fact {concept} refers to unit {unit!r}, which the instance does not define")
        nil = el.get(f"{{{XSI}}}nil", "false").strip().lower() == "true"
        text = (el.text or "").strip()
        value: float | None = None
        where = f"{path.name}: fact {concept} in context {ctx}"
        if unit is not None and not nil:
            try:
                value = float(text)
            except ValueError:
                raise XbrlError(f"{where}: numeric fact text {text[:40]!r} is not a number") from None
            if not math.isfinite(value):
                raise XbrlError(f"{where}: numeric fact text {text[:40]!r} is not finite")
        facts.append(Fact(concept, ctx, unit, value, text, _decimals(el.get("decimals"), where) if unit else None,
                          el.get("id", ""), nil))
    return contexts, units, facts, prefixes


# ---------------------------------------------------------------------- linkbases
def _extended_links(root: ET.Element, name: str) -> list[ET.Element]:
    return root.findall(f"{{{LINK}}}{name}")


def _locators(link: ET.Element) -> dict[str, str]:
    return {loc.get(f"{{{XLINK}}}label", ""): _href_concept(loc.get(f"{{{XLINK}}}href", ""))
            for loc in link.findall(f"{{{LINK}}}loc")}


def _arcs(root: ET.Element, link_name: str, arc_name: str
          ) -> Iterator[tuple[str, ET.Element, str | None, str | None]]:
    """``(role, arc, parent, child)`` for every arc of every extended link, in document order;
    parent/child are None when the arc names a locator the link does not hold."""
    for link in _extended_links(root, link_name):
        role = link.get(f"{{{XLINK}}}role", "")
        locs = _locators(link)
        for arc in link.findall(f"{{{LINK}}}{arc_name}"):
            yield (role, arc, locs.get(arc.get(f"{{{XLINK}}}from", "")), locs.get(arc.get(f"{{{XLINK}}}to", "")))


def parse_calculation(path: Path) -> list[CalcArc]:
    """Summation-item arcs of a calculation linkbase, in document order."""
    root, _ = _parse_xml(path)
    arcs: list[CalcArc] = []
    for role, arc, parent, child in _arcs(root, "calculationLink", "calculationArc"):
        if arc.get(f"{{{XLINK}}}arcrole") != SUMMATION_ITEM:
            continue
        if parent is None or child is None:
            src, dst = arc.get(f"{{{XLINK}}}from", ""), arc.get(f"{{{XLINK}}}to", "")
            raise XbrlError(f"{path}: calculation arc {src!r} -> {dst!r} in {role} names a missing locator")
        weight = arc.get("weight")
        try:
            w = float(weight if weight is not None else "")
        except ValueError:
            raise XbrlError(f"{path}: calculation arc {parent} -> {child} has weight {weight!r}") from None
        arcs.append(CalcArc(role, parent, child, w, _float(arc.get("order"))))
    return arcs


def parse_presentation(path: Path) -> list[PresentationArc]:
    """Parent-child arcs of a presentation linkbase, in document order."""
    root, _ = _parse_xml(path)
    return [PresentationArc(role, parent, child, _float(arc.get("order")),
                            arc.get("preferredLabel", "").rsplit("/", 1)[-1])
            for role, arc, parent, child in _arcs(root, "presentationLink", "presentationArc")
            if parent is not None and child is not None]


def count_definition_arcs(path: Path) -> int:
    """Number of definition arcs (dimension relationships); their content is not used by the audit tasks."""
    root, _ = _parse_xml(path)
    return sum(len(link.findall(f"{{{LINK}}}definitionArc")) for link in _extended_links(root, "definitionLink"))


def parse_labels(path: Path, lang: str = "en") -> dict[str, dict[str, str]]:
    """concept -> {label role (last part of the URI): text}, preferring ``lang``."""
    root, _ = _parse_xml(path)
    out: dict[str, dict[str, str]] = {}
    xml_lang = "{http://www.w3.org/XML/1998/namespace}lang"
    for link in _extended_links(root, "labelLink"):
        locs = _locators(link)
        resources: dict[str, list[tuple[str, str, str]]] = {}
        for lab in link.findall(f"{{{LINK}}}label"):
            resources.setdefault(lab.get(f"{{{XLINK}}}label", ""), []).append(
                (lab.get(f"{{{XLINK}}}role", "").rsplit("/", 1)[-1], lab.get(xml_lang, ""),
                 " ".join("".join(lab.itertext()).split())))
        for arc in link.findall(f"{{{LINK}}}labelArc"):
            concept = locs.get(arc.get(f"{{{XLINK}}}from", ""))
            if concept is None:
                continue
            for role, language, text in resources.get(arc.get(f"{{{XLINK}}}to", ""), ()):
                slot = out.setdefault(concept, {})
                if role not in slot or (language.startswith(lang) and text):
                    slot[role] = text
    return out


def parse_schema(path: Path) -> tuple[dict[str, ConceptInfo], dict[str, str]]:
    """Concepts the filer's schema declares (with balance/period type) and its role definitions."""
    root, _ = _parse_xml(path)
    if _local(root.tag) != "schema":
        raise XbrlError(f"{path}: root element is <{_local(root.tag)}>, not an XML Schema")
    concepts: dict[str, ConceptInfo] = {}
    for el in root.iter(f"{{{XS}}}element"):
        ident, local = el.get("id"), el.get("name")
        if not local:
            continue
        name = _href_concept("#" + ident) if ident and "_" in ident else local
        concepts[name] = ConceptInfo(
            name=name,
            balance=el.get("{http://www.xbrl.org/2003/instance}balance"),
            period_type=el.get("{http://www.xbrl.org/2003/instance}periodType"),
            datatype=(el.get("type") or "").rsplit(":", 1)[-1] or None,
            abstract=el.get("abstract", "false").lower() == "true",
            source=f"filer schema {path.name}",
        )
    roles: dict[str, str] = {}
    for role in root.iter(f"{{{LINK}}}roleType"):
        roles[role.get("roleURI", "")] = (role.findtext(f"{{{LINK}}}definition") or "").strip()
    return concepts, roles


# ---------------------------------------------------------------------- the bundle
def _dei(facts: list[Fact], contexts: Mapping[str, Context], local: str) -> str:
    for fact in facts:
        if fact.concept.endswith(":" + local) and not contexts[fact.context].dimensions and fact.text:
            return fact.text.strip()
    return ""


def load_bundle(
    folder: str | Path,
    *,
    concepts: Mapping[str, ConceptInfo] | None = None,
    ticker: str = "",
    filed: str = "",
    name: str | None = None,
) -> Filing:
    """Parse a six-file bundle into a :class:`~finenvs.xbrl.model.Filing`.

    Args:
        folder: The bundle folder.
        concepts: Taxonomy metadata for concepts the filer's schema does not declare
            (default: the shipped table, :func:`finenvs.xbrl.taxonomy.taxonomy_concepts`).
        ticker: Trading symbol (default: ``dei:TradingSymbol``).
        filed: Release date (``YYYY-MM-DD``) when known.
        name: Bundle name (default: the folder name).

    Raises:
        XbrlError: A missing file, malformed XML, a fact pointing at an undefined
            context or unit, or a numeric fact that is not a number.
    """
    files = bundle_files(folder)
    folder = Path(folder)
    if concepts is None:
        concepts = taxonomy_concepts()
    contexts, units, facts, _ = parse_instance(files["instance"])
    declared, roles = parse_schema(files["schema"])
    calculation = parse_calculation(files["cal"])
    presentation = parse_presentation(files["pre"])
    labels = parse_labels(files["lab"])
    definition_arcs = count_definition_arcs(files["def"])

    used = dict.fromkeys(f.concept for f in facts)
    for arc in calculation:
        used[arc.parent] = None
        used[arc.child] = None
    for parc in presentation:
        used[parc.parent] = None
        used[parc.child] = None
    periods: dict[str, set[str]] = {}
    for fact in facts:
        periods.setdefault(fact.concept, set()).add("instant" if contexts[fact.context].instant else "duration")
    info: dict[str, ConceptInfo] = {}
    for concept in [*declared, *used]:
        if concept in info:
            continue
        meta = declared.get(concept) or concepts.get(concept) or ConceptInfo(concept, source="")
        if meta.period_type is None and len(periods.get(concept, ())) == 1:
            meta = ConceptInfo(meta.name, meta.balance, next(iter(periods[concept])), meta.datatype, meta.abstract,
                               (meta.source + "; " if meta.source else "") + "period type inferred from contexts")
        info[concept] = meta
    return Filing(
        bundle=name or folder.name,
        ticker=(ticker or _dei(facts, contexts, "TradingSymbol")).upper(),
        form=_dei(facts, contexts, "DocumentType"),
        period_end=_dei(facts, contexts, "DocumentPeriodEndDate"),
        filed=filed,
        company=_dei(facts, contexts, "EntityRegistrantName"),
        contexts=contexts,
        units=units,
        facts=tuple(facts),
        calculation=tuple(calculation),
        presentation=tuple(presentation),
        definition_arcs=definition_arcs,
        labels=labels,
        concepts=info,
        roles=roles,
        files={k: p.name for k, p in files.items()},
    )
