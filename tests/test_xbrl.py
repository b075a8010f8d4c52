"""XBRL modules: bundle parsing, ground-truth rules, network checks, audit instances, task files, corpus.

Counts and values of the shipped bundles were checked against the raw files (the regex
cross-checks below recount them from the XML text); the ground-truth rules are pinned with
small hand-made bundles written to ``tmp_path`` by :func:`write_bundle`.
"""

from __future__ import annotations

import csv
import dataclasses
import pickle
import re
from pathlib import Path

import pytest

from finenvs.errors import DataError, DataFileError
from finenvs.scoring.audit import classify
from finenvs.xbrl import tasks
from finenvs.xbrl.calc import (
    AmbiguousCalculationError,
    AmbiguousFactError,
    AuditDataError,
    CalcCycleError,
    Calculator,
    ConceptNotFoundError,
    FilingFacts,
    NoContextError,
    NoFactError,
    balance_implied_weight,
    calc_cycles,
    check_duplicates,
    check_network,
    non_negative,
    parse_period,
)
from finenvs.xbrl.corpus import (
    Corpus,
    count_rows,
    file_kind,
    shipped_corpus,
    taxonomy_calculations,
    taxonomy_concepts,
)
from finenvs.xbrl.model import SUMMATION_ITEM, CalcArc, ConceptInfo, half_unit
from finenvs.xbrl.parse import XbrlError, bundle_files, load_bundle
from finenvs.xbrl.tasks import (
    EVAL_SEEDS,
    INJECTIONS,
    MIN_GAP_HALF_UNITS,
    eval_instances,
    generate,
    ground_truth,
    instance_filing,
    load_herculean_tasks,
    published_truth,
)

BUNDLES = (
    "aapl_10k_2023-09-30",
    "aapl_10q_2025-03-29_0000320193-25-000057",
    "amzn_10k_2022-12-31",
    "msft_10k_2015-06-30",
    "nflx_10k_2023-12-31",
    "nflx_10q_2024-09-30",
    "tsla_10q_2024-06-30",
)
COUNT_KEYS = ("contexts", "units", "facts", "numeric_facts", "calculation_arcs", "calculation_roles",
              "presentation_arcs", "definition_arcs", "labelled_concepts")
#: bundle -> (counts in COUNT_KEYS order, ticker, form, period_end, filed), measured on the raw files.
EXPECTED_SUMMARY = {
    "aapl_10k_2023-09-30": ((205, 9, 1164, 995, 215, 25, 768, 386, 689), "AAPL", "10-K", "2023-09-30",
                            "2023-11-03"),
    "aapl_10q_2025-03-29_0000320193-25-000057": ((163, 5, 760, 674, 106, 9, 486, 251, 450), "AAPL", "10-Q",
                                                 "2025-03-29", "2025-05-02"),
    "amzn_10k_2022-12-31": ((339, 7, 1457, 1280, 288, 24, 974, 577, 802), "AMZN", "10-K", "2022-12-31",
                            "2023-02-03"),
    "msft_10k_2015-06-30": ((779, 6, 2151, 1883, 214, 28, 1602, 1506, 899), "MSFT", "10-K", "2015-06-30",
                            "2015-07-31"),
    "nflx_10k_2023-12-31": ((230, 10, 1086, 955, 136, 17, 745, 309, 658), "NFLX", "10-K", "2023-12-31",
                            "2024-01-26"),
    "nflx_10q_2024-09-30": ((332, 7, 1162, 1068, 103, 14, 678, 348, 556), "NFLX", "10-Q", "2024-09-30",
                            "2024-10-18"),
    "tsla_10q_2024-06-30": ((338, 8, 1149, 1044, 121, 14, 646, 412, 545), "TSLA", "10-Q", "2024-06-30",
                            "2024-07-24"),
}
MSFT_ALT_ROLE = "http://www.microsoft.com/taxonomy/role/DisclosureDeferredIncomeTaxAssetsAndLiabilitiesAlternate1"


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return shipped_corpus()


@pytest.fixture(scope="module")
def eval_set() -> tuple[tasks.AuditInstance, ...]:
    return tuple(generate(s) for s in EVAL_SEEDS)


# ====================================================================== hand-made bundles
ROLE = "http://example.com/role/Statement"
ROLE2 = "http://example.com/role/Note"
X_NS = "http://example.com/x/2023"
STEM = "x-20231231"
#: Two instants, two durations and one dimensional instant (a segment of 2023-12-31).
DEFAULT_CONTEXTS = {
    "I23": (None, "2023-12-31", ()),
    "I22": (None, "2022-12-31", ()),
    "FY23": ("2023-01-01", "2023-12-31", ()),
    "FY22": ("2022-01-01", "2022-12-31", ()),
    "I23seg": (None, "2023-12-31", (("x:SegmentAxis", "x:EuropeMember"),)),
}
DEFAULT_UNITS = {"usd": "iso4217:USD", "eur": "iso4217:EUR", "shares": "xbrli:shares"}


def fact(concept: str, text: object, context: str = "I23", unit: str | None = "usd",
         decimals: str | None = "0", nil: bool = False) -> tuple:
    """One fact for :func:`write_bundle` (``unit=None``: a non-numeric fact)."""
    return concept, str(text), context, unit, decimals, nil


def _loc(concept: str) -> tuple[str, str]:
    prefix, local = concept.split(":", 1)
    label = f"loc_{prefix}_{local}"
    return label, (f'<link:loc xlink:type="locator" xlink:label="{label}" '
                   f'xlink:href="{STEM}.xsd#{prefix}_{local}"/>')


def _linkbase(body: str) -> str:
    return ('<?xml version="1.0" encoding="utf-8"?>\n'
            '<link:linkbase xmlns:link="http://www.xbrl.org/2003/linkbase" '
            'xmlns:xlink="http://www.w3.org/1999/xlink" xmlns:xml="http://www.w3.org/XML/1998/namespace">\n'
            f"{body}</link:linkbase>\n")


def _extended(link: str, arc: str, arcrole: str, rows: list[tuple], extra=lambda row: "") -> str:
    """Extended links of ``link`` grouped by role; ``rows`` are ``(role, parent, child, ...)``."""
    out = []
    for role in dict.fromkeys(r[0] for r in rows):
        locs: dict[str, str] = {}
        arcs = []
        for n, row in enumerate([r for r in rows if r[0] == role], start=1):
            (src, src_xml), (dst, dst_xml) = _loc(row[1]), _loc(row[2])
            locs.setdefault(src, src_xml)
            locs.setdefault(dst, dst_xml)
            arcs.append(f'<link:{arc} xlink:type="arc" xlink:arcrole="{arcrole}" xlink:from="{src}" '
                        f'xlink:to="{dst}" order="{n}"{extra(row)}/>')
        out.append(f'<link:{link} xlink:type="extended" xlink:role="{role}">\n  '
                   + "\n  ".join([*locs.values(), *arcs]) + f"\n</link:{link}>\n")
    return "".join(out)


def write_bundle(
    folder: Path,
    facts: list[tuple],
    *,
    calc: list[tuple] = (),
    elements: list[tuple] = (),
    labels: dict[str, str] | None = None,
    presentation: list[tuple] = (),
    definition: list[tuple] = (),
    contexts: dict[str, tuple] | None = None,
    units: dict[str, str] | None = None,
    dei: bool = True,
    override: dict[str, str] | None = None,
    omit: tuple[str, ...] = (),
) -> Path:
    """Write a six-file bundle to ``folder`` and return it.

    Args:
        facts: :func:`fact` tuples.
        calc: ``(role, parent, child, weight)`` summation-item arcs.
        elements: ``(local_name, balance, period_type)`` custom ``x:`` concepts of the schema
            (``balance``/``period_type`` None: attribute left out).
        labels: concept -> standard label.
        presentation, definition: ``(role, parent, child)`` arcs.
        contexts: id -> ``(start, end, dims)``; units: id -> measure.
        dei: Add DocumentType, DocumentPeriodEndDate, TradingSymbol and EntityRegistrantName facts.
        override: kind (``instance``, ``schema``, ``cal``, ``def``, ``lab``, ``pre``) -> raw file text.
        omit: Kinds whose file is not written.
    """
    folder.mkdir(parents=True, exist_ok=True)
    contexts = DEFAULT_CONTEXTS if contexts is None else contexts
    units = DEFAULT_UNITS if units is None else units
    parts = []
    for cid, (start, end, dims) in contexts.items():
        seg = ""
        if dims:
            seg = "<xbrli:segment>" + "".join(
                f'<xbrldi:explicitMember dimension="{axis}">{member}</xbrldi:explicitMember>'
                for axis, member in dims) + "</xbrli:segment>"
        period = (f"<xbrli:instant>{end}</xbrli:instant>" if start is None
                  else f"<xbrli:startDate>{start}</xbrli:startDate><xbrli:endDate>{end}</xbrli:endDate>")
        parts.append(f'<xbrli:context id="{cid}"><xbrli:entity><xbrli:identifier scheme="http://www.sec.gov/CIK">'
                     f"0000000001</xbrli:identifier>{seg}</xbrli:entity><xbrli:period>{period}</xbrli:period>"
                     "</xbrli:context>")
    for uid, measure in units.items():
        parts.append(f'<xbrli:unit id="{uid}"><xbrli:measure>{measure}</xbrli:measure></xbrli:unit>')
    all_facts = list(facts)
    if dei:
        all_facts = [fact("dei:DocumentType", "10-K", "FY23", None), fact("dei:DocumentPeriodEndDate", "2023-12-31",
                     "FY23", None), fact("dei:TradingSymbol", "xmpl", "FY23", None),
                     fact("dei:EntityRegistrantName", "Example Corp", "FY23", None), *all_facts]
    for n, (concept, text, context, unit, decimals, nil) in enumerate(all_facts):
        attrs = f'contextRef="{context}" id="f-{n}"'
        if unit is not None:
            attrs += f' unitRef="{unit}"'
            if decimals is not None:
                attrs += f' decimals="{decimals}"'
        if nil:
            attrs += ' xsi:nil="true"'
        parts.append(f"<{concept} {attrs}>{text}</{concept}>")
    instance = ('<?xml version="1.0" encoding="utf-8"?>\n'
                '<xbrli:xbrl xmlns:xbrli="http://www.xbrl.org/2003/instance" '
                'xmlns:link="http://www.xbrl.org/2003/linkbase" xmlns:xlink="http://www.w3.org/1999/xlink" '
                'xmlns:iso4217="http://www.xbrl.org/2003/iso4217" xmlns:xbrldi="http://xbrl.org/2006/xbrldi" '
                'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" '
                f'xmlns:x="{X_NS}" xmlns:us-gaap="http://fasb.org/us-gaap/2023" '
                'xmlns:dei="http://xbrl.sec.gov/dei/2023">\n'
                f'<link:schemaRef xlink:type="simple" xlink:href="{STEM}.xsd"/>\n'
                + "\n".join(parts) + "\n</xbrli:xbrl>\n")
    decls = []
    for local, balance, period_type in elements:
        attrs = f'id="x_{local}" name="{local}" abstract="false" nillable="true" substitutionGroup="xbrli:item"'
        attrs += ' type="xbrli:monetaryItemType"' if balance else ' type="xbrli:decimalItemType"'
        if balance:
            attrs += f' xbrli:balance="{balance}"'
        if period_type:
            attrs += f' xbrli:periodType="{period_type}"'
        decls.append(f"<xs:element {attrs}/>")
    schema = ('<?xml version="1.0" encoding="utf-8"?>\n'
              '<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns:xbrli="http://www.xbrl.org/2003/instance" '
              f'xmlns:link="http://www.xbrl.org/2003/linkbase" xmlns:x="{X_NS}" targetNamespace="{X_NS}">\n'
              '<xs:annotation><xs:appinfo>'
              f'<link:roleType roleURI="{ROLE}" id="Statement"><link:definition>0001 - Statement - Main'
              "</link:definition></link:roleType>"
              f'<link:roleType roleURI="{ROLE2}" id="Note"><link:definition>0002 - Disclosure - Note'
              "</link:definition></link:roleType>"
              "</xs:appinfo></xs:annotation>\n" + "\n".join(decls) + "\n</xs:schema>\n")
    cal = _linkbase(_extended("calculationLink", "calculationArc", SUMMATION_ITEM, list(calc),
                              lambda row: f' weight="{row[3]}"'))
    pre = _linkbase(_extended("presentationLink", "presentationArc", "http://www.xbrl.org/2003/arcrole/parent-child",
                              list(presentation)))
    dfn = _linkbase(_extended("definitionLink", "definitionArc", "http://xbrl.org/int/dim/arcrole/domain-member",
                              list(definition)))
    lab_body = []
    for n, (concept, text) in enumerate((labels or {}).items()):
        loc_label, loc_xml = _loc(concept)
        lab_body.append(f"{loc_xml}\n  <link:label xlink:type=\"resource\" xlink:label=\"lab_{n}\" "
                        f'xlink:role="http://www.xbrl.org/2003/role/label" xml:lang="en-US">{text}</link:label>\n  '
                        '<link:labelArc xlink:type="arc" xlink:arcrole="http://www.xbrl.org/2003/arcrole/concept-label" '
                        f'xlink:from="{loc_label}" xlink:to="lab_{n}"/>')
    lab = _linkbase('<link:labelLink xlink:type="extended" xlink:role="http://www.xbrl.org/2003/role/link">\n  '
                    + "\n  ".join(lab_body) + "\n</link:labelLink>\n")
    texts = {"instance": instance, "schema": schema, "cal": cal, "def": dfn, "lab": lab, "pre": pre}
    texts.update(override or {})
    names = {"instance": f"{STEM}_htm.xml", "schema": f"{STEM}.xsd", "cal": f"{STEM}_cal.xml",
             "def": f"{STEM}_def.xml", "lab": f"{STEM}_lab.xml", "pre": f"{STEM}_pre.xml"}
    for kind, text in texts.items():
        if kind not in omit:
            (folder / names[kind]).write_text(text, encoding="utf-8")
    return folder


def _load(folder: Path, concepts: dict | None = None):
    return load_bundle(folder, concepts={} if concepts is None else concepts)


# ---------------------------------------------------------------------- the builder itself
def test_hand_made_bundle_parses_every_part(tmp_path):
    folder = write_bundle(
        tmp_path / "b",
        [fact("x:Total", 30), fact("x:PartA", 10), fact("x:PartB", 20), fact("x:Total", 25, "I22"),
         fact("x:Note", "some text", "FY23", None), fact("x:Shares", 5, "I23", "shares", "INF")],
        calc=[(ROLE, "x:Total", "x:PartA", 1), (ROLE, "x:Total", "x:PartB", 1)],
        elements=[("Total", "debit", "instant"), ("PartA", "debit", "instant"), ("PartB", "debit", None)],
        labels={"x:Total": "Total things"},
        presentation=[(ROLE, "x:Total", "x:PartA"), (ROLE, "x:Total", "x:PartB")],
        definition=[(ROLE, "x:SegmentAxis", "x:EuropeMember")],
    )
    filing = _load(folder)
    summary = filing.summary()
    assert (summary["contexts"], summary["units"], summary["facts"], summary["numeric_facts"]) == (5, 3, 10, 5)
    assert (summary["calculation_arcs"], summary["calculation_roles"], summary["presentation_arcs"],
            summary["definition_arcs"], summary["labelled_concepts"]) == (2, 1, 2, 1, 1)
    assert (filing.ticker, filing.form, filing.period_end, filing.company) == ("XMPL", "10-K", "2023-12-31",
                                                                               "Example Corp")
    assert filing.bundle == "b" and filing.filed == ""
    assert filing.files == {"instance": f"{STEM}_htm.xml", "schema": f"{STEM}.xsd", "cal": f"{STEM}_cal.xml",
                            "def": f"{STEM}_def.xml", "lab": f"{STEM}_lab.xml", "pre": f"{STEM}_pre.xml"}
    assert list(filing.roles) == [ROLE, ROLE2] and filing.roles[ROLE] == "0001 - Statement - Main"
    assert filing.label("x:Total") == "Total things" and filing.label("x:PartA") == "PartA"
    assert filing.calculation[0] == CalcArc(ROLE, "x:Total", "x:PartA", 1.0, 1.0)
    assert filing.children("x:Total") == {ROLE: [("x:PartA", 1.0), ("x:PartB", 1.0)]}
    assert filing.parents("x:PartB") == {ROLE: [("x:Total", 1.0)]}
    seg = filing.contexts["I23seg"]
    assert seg.dimensions == (("x:SegmentAxis", "x:EuropeMember"),) and seg.instant and seg.period == "2023-12-31"
    assert filing.contexts["FY23"].period == "2023-01-01 to 2023-12-31" and not filing.contexts["FY23"].instant
    shares = next(f for f in filing.facts if f.concept == "x:Shares")
    assert shares.decimals is None and shares.value == 5.0 and not filing.units["shares"].monetary
    note = next(f for f in filing.facts if f.concept == "x:Note")
    assert note.value is None and note.text == "some text" and not note.numeric
    # metadata: schema first; a period type missing from the schema is inferred from the facts' contexts
    assert filing.concept("x:Total") == ConceptInfo("x:Total", "debit", "instant", "monetaryItemType", False,
                                                    f"filer schema {STEM}.xsd")
    part_b = filing.concept("x:PartB")
    assert part_b.balance == "debit" and part_b.period_type == "instant"
    assert part_b.source.endswith("period type inferred from contexts")
    assert filing.concept("x:Note").period_type == "duration" and filing.concept("x:Note").balance is None
    with pytest.raises(KeyError, match="x:Nope"):
        filing.concept("x:Nope")


def test_concept_metadata_falls_back_to_the_concepts_table(tmp_path):
    folder = write_bundle(tmp_path / "b", [fact("us-gaap:Assets", 100), fact("us-gaap:Cash", 100)],
                          calc=[(ROLE, "us-gaap:Assets", "us-gaap:Cash", 1)])
    table = {"us-gaap:Assets": ConceptInfo("us-gaap:Assets", "debit", "instant", "monetaryItemType", False, "table")}
    filing = _load(folder, table)
    assert filing.concept("us-gaap:Assets") == table["us-gaap:Assets"]
    cash = filing.concept("us-gaap:Cash")
    assert cash.balance is None, "balance is never inferred"
    assert cash.period_type == "instant" and cash.source == "period type inferred from contexts"


# ====================================================================== 1. parsing the shipped bundles
@pytest.mark.parametrize("bundle", BUNDLES)
def test_shipped_bundle_summary_counts(corpus, bundle):
    counts, ticker, form, period_end, filed = EXPECTED_SUMMARY[bundle]
    summary = corpus.filing(bundle).summary()
    assert tuple(summary[k] for k in COUNT_KEYS) == counts
    assert (summary["ticker"], summary["form"], summary["period_end"], summary["filed"]) == (
        ticker, form, period_end, filed)
    assert summary["bundle"] == bundle and summary["company"]


def test_shipped_corpus_holds_exactly_the_seven_bundles(corpus):
    assert corpus.names == BUNDLES
    assert set(EXPECTED_SUMMARY) == set(BUNDLES)


@pytest.mark.parametrize("bundle", BUNDLES)
def test_shipped_counts_match_a_regex_recount_of_the_raw_files(corpus, bundle):
    filing = corpus.filing(bundle)
    instance = (corpus.root / bundle / filing.files["instance"]).read_text(encoding="utf-8")
    assert len(re.findall(r"<(?:xbrli:)?context[\s>]", instance)) == len(filing.contexts)
    assert len(re.findall(r"<(?:xbrli:)?unit[\s>]", instance)) == len(filing.units)
    assert len(re.findall(r"\bcontextRef=", instance)) == len(filing.facts)
    assert len(re.findall(r"\bunitRef=", instance)) == sum(1 for f in filing.facts if f.numeric)
    cal = (corpus.root / bundle / filing.files["cal"]).read_text(encoding="utf-8")
    assert len(re.findall(r"arcrole/summation-item", cal)) == len(filing.calculation)
    # context ids are the ones the instance defines, and every fact refers to one of them
    ids = set(re.findall(r"<(?:xbrli:)?context\s+id=\"([^\"]+)\"", instance))
    assert ids == set(filing.contexts)
    assert {f.context for f in filing.facts} <= ids


@pytest.mark.parametrize("bundle", BUNDLES)
def test_bundle_index_agrees_with_the_parsed_filing(corpus, bundle):
    index = corpus.index(bundle)
    filing = corpus.filing(bundle)
    assert index["ticker"] == filing.ticker and index["filed"] == filing.filed
    assert index["period_end"] == filing.period_end and index["form"] == filing.form
    assert index["files"] == filing.files


# ====================================================================== 2. known values from the raw filings
#: (bundle, concept, period, value as written in the instance, decimals attribute); found by grepping the XML.
KNOWN_VALUES = [
    ("aapl_10k_2023-09-30", "us-gaap:Assets", "2023-09-30", 352_583_000_000, -6),
    ("aapl_10k_2023-09-30", "us-gaap:Assets", "2022-09-24", 352_755_000_000, -6),
    ("tsla_10q_2024-06-30", "us-gaap:Assets", "2024-06-30", 112_832_000_000, -6),
    ("amzn_10k_2022-12-31", "us-gaap:Assets", "2022-12-31", 462_675_000_000, -6),
    ("msft_10k_2015-06-30", "us-gaap:Assets", "2015-06-30", 176_223_000_000, -6),
    ("nflx_10k_2023-12-31", "us-gaap:Assets", "2023-12-31", 48_731_992_000, -3),
    ("aapl_10k_2023-09-30", "us-gaap:NetIncomeLoss", "2022-09-25 to 2023-09-30", 96_995_000_000, -6),
]


@pytest.mark.parametrize(("bundle", "concept", "period", "value", "decimals"), KNOWN_VALUES)
def test_reported_value_matches_the_raw_filing(corpus, bundle, concept, period, value, decimals):
    fact = Calculator(corpus.filing(bundle)).reported(concept, period)
    assert fact.value == value and fact.decimals == decimals and fact.unit is not None


@pytest.mark.parametrize(("bundle", "concept", "period", "value", "decimals"),
                         [k for k in KNOWN_VALUES if k[2] != "2022-09-24"])
def test_ground_truth_is_consistent_for_known_totals(corpus, bundle, concept, period, value, decimals):
    truth = ground_truth(corpus.filing(bundle), concept, period)
    assert truth.truth.reported_value == value
    assert truth.truth.calculated_value == value
    assert truth.truth.reported_tolerance == truth.truth.calculated_tolerance == half_unit(decimals)
    assert classify({"reported_value": value, "calculated_value": value}, truth.truth).label == "pass"


def test_aapl_assets_is_the_sum_of_current_and_non_current(corpus):
    calc = Calculator(corpus.filing("aapl_10k_2023-09-30")).calculated("us-gaap:Assets", "2023-09-30")
    assert calc.method == "sum" and calc.role == "http://www.apple.com/role/CONSOLIDATEDBALANCESHEETS"
    # raw instance: AssetsCurrent 143,566,000,000 and AssetsNoncurrent 209,017,000,000 at 2023-09-30
    assert {(t.concept, t.weight, t.value) for t in calc.terms} == {
        ("us-gaap:AssetsCurrent", 1.0, 143_566_000_000), ("us-gaap:AssetsNoncurrent", 1.0, 209_017_000_000)}
    assert all(t.source == "fact" for t in calc.terms)


def test_the_raw_assets_facts_are_what_the_test_hard_codes(corpus):
    raw = (corpus.root / "aapl_10k_2023-09-30" / "aapl-20230930_htm.xml").read_text()
    assert re.search(r'<us-gaap:Assets contextRef="c-22"[^>]*>352583000000<', raw)
    assert re.search(r'<us-gaap:AssetsCurrent contextRef="c-22"[^>]*>143566000000<', raw)
    assert re.search(r'<us-gaap:AssetsNoncurrent contextRef="c-22"[^>]*>209017000000<', raw)


def test_labels_of_a_shipped_filing(corpus):
    filing = corpus.filing("aapl_10k_2023-09-30")
    assert filing.label("us-gaap:Assets") == "Assets"
    assert filing.label("us-gaap:Assets", "totalLabel") == "Total assets"
    assert filing.label("us-gaap:Assets", "noSuchRole") == "Assets"  # falls back to the standard label
    assert filing.labels["us-gaap:Assets"] == {"totalLabel": "Total assets", "label": "Assets"}
    assert filing.label("us-gaap:NotInThisFiling") == "NotInThisFiling"


@pytest.mark.parametrize(("concept", "balance", "period_type", "datatype", "abstract"), [
    ("aapl:DeferredTaxLiabilitiesMinimumTaxonForeignEarnings", "credit", "instant", "monetaryItemType", False),
    ("aapl:CashCashEquivalentsAndMarketableSecuritiesCost", "debit", "instant", "monetaryItemType", False),
    ("aapl:NumberOfSignificantVendors", None, "instant", "integerItemType", False),
    ("aapl:MacMember", None, "duration", "domainItemType", True),
])
def test_custom_concept_metadata_comes_from_the_filer_schema(corpus, concept, balance, period_type, datatype,
                                                            abstract):
    filing = corpus.filing("aapl_10k_2023-09-30")
    info = filing.concept(concept)
    assert (info.balance, info.period_type, info.datatype, info.abstract) == (balance, period_type, datatype,
                                                                                abstract)
    assert info.source == "filer schema aapl-20230930.xsd"
    # and it is what the .xsd says, read with a regex
    xsd = (corpus.root / "aapl_10k_2023-09-30" / "aapl-20230930.xsd").read_text()
    element = re.search(rf'<xs:element id="{concept.replace(":", "_")}"[^>]*/>', xsd).group(0)
    written = re.search(r'xbrli:balance="(\w+)"', element)
    assert (written.group(1) if written else None) == balance
    assert re.search(r'xbrli:periodType="(\w+)"', element).group(1) == period_type


def test_standard_concept_metadata_comes_from_the_taxonomy_table(corpus):
    info = corpus.filing("aapl_10k_2023-09-30").concept("us-gaap:Assets")
    assert (info.balance, info.period_type, info.datatype) == ("debit", "instant", "monetaryItemType")
    assert info == taxonomy_concepts()["us-gaap:Assets"]


# ====================================================================== 3. calculation network
def test_network_of_every_shipped_bundle_is_consistent_but_for_one_msft_note(corpus):
    inconsistent = set()
    for bundle in BUNDLES:
        checks = check_network(corpus.filing(bundle))
        assert len(checks) >= 80, f"{bundle}: too few summations checked ({len(checks)})"
        for check in checks:
            assert check.tolerance > 0 and check.children >= 1
            if not check.consistent:
                assert check.role == MSFT_ALT_ROLE and check.dimensions == ()
                inconsistent.add((bundle, check.parent, check.period))
    assert inconsistent == {
        ("msft_10k_2015-06-30", "us-gaap:DeferredIncomeTaxLiabilitiesNet", "2015-06-30"),
        ("msft_10k_2015-06-30", "us-gaap:DeferredIncomeTaxLiabilitiesNet", "2014-06-30"),
    }


def test_msft_alternate_role_exists_and_the_other_role_agrees(corpus):
    filing = corpus.filing("msft_10k_2015-06-30")
    assert MSFT_ALT_ROLE in filing.calc_roles()
    roles = filing.children("us-gaap:DeferredIncomeTaxLiabilitiesNet")
    assert set(roles) == {MSFT_ALT_ROLE, MSFT_ALT_ROLE.removesuffix("Alternate1")}
    checks = [c for c in check_network(filing) if c.parent == "us-gaap:DeferredIncomeTaxLiabilitiesNet"]
    by_role = {(c.role, c.period): c for c in checks}
    assert by_role[(MSFT_ALT_ROLE, "2015-06-30")].reported == 1_067_000_000
    assert by_role[(MSFT_ALT_ROLE, "2015-06-30")].computed == 4_733_000_000
    assert by_role[(MSFT_ALT_ROLE.removesuffix("Alternate1"), "2015-06-30")].consistent
    # two complete roles disagree: the calculated value is ambiguous, never a silent pick
    with pytest.raises(AmbiguousCalculationError, match="DeferredIncomeTaxLiabilitiesNet"):
        Calculator(filing).calculated("us-gaap:DeferredIncomeTaxLiabilitiesNet", "2015-06-30")


@pytest.mark.parametrize("bundle", BUNDLES)
def test_shipped_bundles_have_no_cycles_or_duplicate_conflicts(corpus, bundle):
    filing = corpus.filing(bundle)
    assert calc_cycles(filing) == []
    assert check_duplicates(filing) == []


def test_nflx_reports_face_amounts_in_two_units_without_duplicate_conflicts(corpus):
    filing = corpus.filing("nflx_10k_2023-12-31")
    lookup = FilingFacts(filing)
    multi = [k for k, facts in lookup._index.items() if len({f.unit for f in facts}) > 1]
    assert multi and all(k[0] == "us-gaap:DebtInstrumentFaceAmount" for k in multi)
    concept, start, end, dims = multi[0]
    with pytest.raises(AmbiguousFactError, match="several units"):
        lookup.value(concept, start, end, dims)
    units = {f.unit for f in lookup.facts(concept, start, end, dims)}
    for unit in units:
        assert lookup.value(concept, start, end, dims, unit).unit == unit


# ====================================================================== 4. ground-truth rules (hand-made)
def test_sum_of_children_with_weights(tmp_path):
    folder = write_bundle(
        tmp_path / "b",
        [fact("x:Net", 70, "FY23"), fact("x:Gross", 100, "FY23"), fact("x:Cost", 25, "FY23"),
         fact("x:Other", 5, "FY23")],
        calc=[(ROLE, "x:Net", "x:Gross", 1), (ROLE, "x:Net", "x:Cost", -1), (ROLE, "x:Net", "x:Other", -1)])
    calc = Calculator(_load(folder)).calculated("x:Net", "2023-01-01 to 2023-12-31")
    assert calc.method == "sum" and calc.role == ROLE and calc.value == 70
    assert [(t.concept, t.weight, t.value, t.source) for t in calc.terms] == [
        ("x:Gross", 1.0, 100.0, "fact"), ("x:Cost", -1.0, 25.0, "fact"), ("x:Other", -1.0, 5.0, "fact")]
    assert calc.missing == () and calc.alternatives == {} and calc.decimals == 0
    assert calc.record()["terms"][1]["concept"] == "x:Cost"


def test_summation_is_per_period(tmp_path):
    folder = write_bundle(
        tmp_path / "b",
        [fact("x:Total", 30), fact("x:A", 10), fact("x:B", 20), fact("x:Total", 7, "I22"), fact("x:A", 3, "I22"),
         fact("x:B", 4, "I22")],
        calc=[(ROLE, "x:Total", "x:A", 1), (ROLE, "x:Total", "x:B", 1)])
    calc = Calculator(_load(folder))
    assert calc.calculated("x:Total", "2023-12-31").value == 30
    assert calc.calculated("x:Total", "2022-12-31").value == 7


def test_child_without_fact_is_calculated_from_its_own_children(tmp_path):
    folder = write_bundle(
        tmp_path / "b",
        [fact("x:Total", 60), fact("x:A", 10), fact("x:C", 20), fact("x:D", 30)],
        calc=[(ROLE, "x:Total", "x:A", 1), (ROLE, "x:Total", "x:B", 1), (ROLE2, "x:B", "x:C", 1),
              (ROLE2, "x:B", "x:D", 1)])
    filing = _load(folder)
    calc = Calculator(filing).calculated("x:Total", "2023-12-31")
    assert calc.value == 60 and calc.method == "sum"
    assert {(t.concept, t.value, t.source) for t in calc.terms} == {("x:A", 10.0, "fact"),
                                                                    ("x:B", 50.0, "calculated")}
    # B itself: no fact, so reported raises, calculated is its sum
    calc_b = Calculator(filing).calculated("x:B", "2023-12-31")
    assert calc_b.value == 50 and calc_b.role == ROLE2
    with pytest.raises(NoFactError, match="no fact"):
        Calculator(filing).reported("x:B", "2023-12-31")
    assert all(c.consistent for c in check_network(filing))


def test_incomplete_summation_makes_a_leaf_and_is_recorded(tmp_path):
    folder = write_bundle(
        tmp_path / "b",
        [fact("x:Total", 100), fact("x:A", 10)],
        calc=[(ROLE, "x:Total", "x:A", 1), (ROLE, "x:Total", "x:B", 1)])
    filing = _load(folder)
    calc = Calculator(filing).calculated("x:Total", "2023-12-31")
    assert calc.method == "leaf" and calc.value == 100 and calc.role is None and calc.terms == ()
    assert len(calc.missing) == 1 and ROLE in calc.missing[0] and "x:B" in calc.missing[0]
    truth = ground_truth(filing, "x:Total", "2023-12-31").truth
    assert truth.reported_value == truth.calculated_value == 100
    assert check_network(filing) == []  # an incomplete summation is not checked


def test_complete_role_wins_over_an_incomplete_one(tmp_path):
    folder = write_bundle(
        tmp_path / "b",
        [fact("x:Total", 30), fact("x:A", 10), fact("x:B", 20)],
        calc=[(ROLE, "x:Total", "x:A", 1), (ROLE, "x:Total", "x:Missing", 1), (ROLE2, "x:Total", "x:A", 1),
              (ROLE2, "x:Total", "x:B", 1)])
    calc = Calculator(_load(folder)).calculated("x:Total", "2023-12-31")
    assert calc.method == "sum" and calc.role == ROLE2 and calc.value == 30


def test_two_complete_roles_that_disagree_are_ambiguous(tmp_path):
    folder = write_bundle(
        tmp_path / "b",
        [fact("x:Total", 30), fact("x:A", 10), fact("x:B", 20), fact("x:C", 40)],
        calc=[(ROLE, "x:Total", "x:A", 1), (ROLE, "x:Total", "x:B", 1), (ROLE2, "x:Total", "x:C", 1)])
    filing = _load(folder)
    with pytest.raises(AmbiguousCalculationError) as err:
        Calculator(filing).calculated("x:Total", "2023-12-31")
    assert ROLE in str(err.value) and ROLE2 in str(err.value) and "2023-12-31" in str(err.value)
    assert isinstance(err.value, AuditDataError)
    # one role can still be asked for
    assert Calculator(filing).calculated("x:Total", "2023-12-31", role=ROLE2).value == 40
    # and the network check flags exactly the disagreeing role
    assert {(c.role, c.consistent) for c in check_network(filing)} == {(ROLE, True), (ROLE2, False)}


def test_two_complete_roles_that_agree_keep_the_first_and_list_the_other(tmp_path):
    folder = write_bundle(
        tmp_path / "b",
        [fact("x:Total", 30), fact("x:A", 10), fact("x:B", 20), fact("x:C", 30)],
        calc=[(ROLE, "x:Total", "x:A", 1), (ROLE, "x:Total", "x:B", 1), (ROLE2, "x:Total", "x:C", 1)])
    calc = Calculator(_load(folder)).calculated("x:Total", "2023-12-31")
    assert calc.role == ROLE and calc.value == 30 and calc.alternatives == {ROLE2: 30.0}


SIGN_ELEMENTS = [("GrossProfit", "credit", "duration"), ("Revenue", "credit", "duration"),
                 ("CostOfRevenue", "debit", "duration"), ("InventoryIncreaseDecrease", "debit", "duration"),
                 ("Rebates", "debit", "duration"), ("Misc", "debit", "duration")]
SIGN_CALC = [(ROLE, "x:GrossProfit", "x:Revenue", 1), (ROLE, "x:GrossProfit", "x:CostOfRevenue", -1),
             (ROLE, "x:GrossProfit", "x:InventoryIncreaseDecrease", -1), (ROLE, "x:GrossProfit", "x:Rebates", 1),
             (ROLE2, "x:Misc", "x:Other", 1)]


@pytest.fixture
def sign_filing(tmp_path):
    # GrossProfit = 100 - (-30) - (-5) + (-8) = 127: parents sum the children's reported values
    folder = write_bundle(
        tmp_path / "sign",
        [fact("x:GrossProfit", 127, "FY23"), fact("x:Revenue", 100, "FY23"), fact("x:CostOfRevenue", -30, "FY23"),
         fact("x:InventoryIncreaseDecrease", -5, "FY23"), fact("x:Rebates", -8, "FY23"),
         fact("x:Misc", -3, "FY23"), fact("x:Other", -3, "FY23"), fact("x:Count", -4, "FY23", "shares")],
        elements=SIGN_ELEMENTS, calc=SIGN_CALC)
    return _load(folder)


def test_sign_rule_makes_a_balance_weighted_leaf_non_negative(sign_filing):
    period = "2023-01-01 to 2023-12-31"
    calc = Calculator(sign_filing).calculated("x:CostOfRevenue", period)
    assert calc.method == "leaf" and calc.value == 30
    assert calc.sign_rule.startswith("non-negative") and "x:GrossProfit" in calc.sign_rule
    truth = ground_truth(sign_filing, "x:CostOfRevenue", period).truth
    assert (truth.reported_value, truth.calculated_value) == (-30, 30)


def test_sign_rule_keeps_the_sign_of_signed_quantities(sign_filing):
    calc = Calculator(sign_filing).calculated("x:InventoryIncreaseDecrease", "2023-01-01 to 2023-12-31")
    assert calc.value == -5 and calc.sign_rule.startswith("sign kept") and "IncreaseDecrease" in calc.sign_rule


def test_sign_rule_needs_the_balance_implied_weight(sign_filing):
    # Rebates is debit but summed with +1 into a credit parent: the weight does not carry its sign
    keep, why = non_negative(sign_filing, "x:Rebates")
    assert not keep and "balance-implied weight" in why
    assert Calculator(sign_filing).calculated("x:Rebates", "2023-01-01 to 2023-12-31").value == -8
    # Misc (a parent) is never sign-normalised, Other has no balance type, Count is not monetary
    assert Calculator(sign_filing).calculated("x:Misc", "2023-01-01 to 2023-12-31").value == -3
    assert non_negative(sign_filing, "x:Other") == (False, "no balance type (not monetary, or unknown)")
    assert non_negative(sign_filing, "x:Revenue")[0] is True
    assert non_negative(sign_filing, "x:Nope") == (False, "not a concept of the filing")


def test_sign_rule_does_not_touch_parents(sign_filing):
    calc = Calculator(sign_filing).calculated("x:GrossProfit", "2023-01-01 to 2023-12-31")
    assert calc.method == "sum" and calc.value == 127
    assert all(c.consistent for c in check_network(sign_filing))


def test_balance_implied_weight():
    assert balance_implied_weight("credit", "credit") == 1.0
    assert balance_implied_weight("credit", "debit") == -1.0
    assert balance_implied_weight("debit", "credit") == -1.0
    assert balance_implied_weight(None, "debit") is None
    assert balance_implied_weight("debit", "") is None


def test_half_unit_tolerance():
    assert half_unit(-6) == 500_000
    assert half_unit(-3) == 500
    assert half_unit(0) == 0.5
    assert half_unit(2) == pytest.approx(0.005)
    assert half_unit(None) == 1e-9
    assert half_unit(None, 5e9) == pytest.approx(5.0)
    assert half_unit(None, -5e9) == pytest.approx(5.0)


def test_decimals_set_the_tolerance_of_the_network_check_and_the_truth(tmp_path):
    folder = write_bundle(
        tmp_path / "b",
        [fact("x:Total", 3_000_000, decimals="-6"), fact("x:A", 1_000_000, decimals="-6"),
         fact("x:B", 2_400_000, decimals="-6"),
         fact("x:Total", 3_000_000, "I22", decimals="-6"), fact("x:A", 1_000_000, "I22", decimals="-6"),
         fact("x:B", 4_100_000, "I22", decimals="-6"),
         fact("x:Exact", 100, "FY23", decimals="INF"), fact("x:Plain", 100, "FY23", decimals=None)],
        calc=[(ROLE, "x:Total", "x:A", 1), (ROLE, "x:Total", "x:B", 1)])
    filing = _load(folder)
    checks = {c.period: c for c in check_network(filing)}
    assert checks["2023-12-31"].tolerance == 1_500_000 and checks["2023-12-31"].consistent
    assert checks["2022-12-31"].computed == 5_100_000 and not checks["2022-12-31"].consistent
    assert ground_truth(filing, "x:Total", "2023-12-31").truth.reported_tolerance == 500_000
    exact = ground_truth(filing, "x:Exact", "2023-01-01 to 2023-12-31")
    assert exact.fact.decimals is None and exact.truth.reported_tolerance == pytest.approx(1e-7)
    assert ground_truth(filing, "x:Plain", "2023-01-01 to 2023-12-31").fact.decimals is None


def test_dimensional_facts_are_not_reported_values(tmp_path):
    folder = write_bundle(tmp_path / "b", [fact("x:Seg", 5, "I23seg"), fact("x:Both", 7, "I23seg"),
                                           fact("x:Both", 9)])
    calc = Calculator(_load(folder))
    with pytest.raises(NoFactError, match="x:Seg has no fact for 2023-12-31"):
        calc.reported("x:Seg", "2023-12-31")
    assert calc.reported("x:Both", "2023-12-31").value == 9


def test_nil_fact_has_no_value(tmp_path):
    folder = write_bundle(tmp_path / "b", [fact("x:Empty", "", nil=True)])
    filing = _load(folder)
    nil = filing.facts_of("x:Empty")[0]
    assert nil.nil and nil.value is None
    with pytest.raises(NoFactError, match="only a nil fact"):
        Calculator(filing).reported("x:Empty", "2023-12-31")


def test_user_concepts_table_sets_balance_for_the_sign_rule(tmp_path):
    folder = write_bundle(tmp_path / "b", [fact("us-gaap:Liabilities", 50), fact("us-gaap:Debt", -50)],
                          calc=[(ROLE, "us-gaap:Liabilities", "us-gaap:Debt", 1)])
    table = {name: ConceptInfo(name, "credit", "instant", "monetaryItemType") for name in
             ("us-gaap:Liabilities", "us-gaap:Debt")}
    assert Calculator(_load(folder, table)).calculated("us-gaap:Debt", "2023-12-31").value == 50
    assert Calculator(_load(folder)).calculated("us-gaap:Debt", "2023-12-31").value == -50  # no balance known


def test_filing_edits_replace_repeats_and_leave_the_original_alone(tmp_path):
    contexts = {**DEFAULT_CONTEXTS, "I23b": (None, "2023-12-31", ())}
    filing = _load(write_bundle(
        tmp_path / "b", [fact("x:A", 10), fact("x:A", 10, "I23b"), fact("x:A", 7, "I22"), fact("x:A", 9, "I23seg"),
                         fact("x:A", 8, unit="eur"), fact("x:B", 10)],
        calc=[(ROLE, "x:T", "x:A", 1), (ROLE2, "x:U", "x:B", 1)], contexts=contexts))
    assert [f.value for f in filing.facts_of("x:A")] == [10, 10, 7, 9, 8]  # fills the lookup cache
    first = filing.facts_of("x:A")[0]
    edited = filing.with_fact_value(first, -10, "flip")
    assert [f.value for f in edited.facts_of("x:A")] == [-10, -10, 7, 9, 8]
    assert [f.text for f in edited.facts_of("x:A")][:2] == ["-10", "-10"]
    assert [f.value for f in filing.facts_of("x:A")] == [10, 10, 7, 9, 8] and filing.changes == ()
    assert edited.changes == ("flip",) and edited.calculation == filing.calculation
    arc = CalcArc(ROLE, "x:T", "x:A", 1.0, 999.0)
    twice = edited.with_extra_arc(arc, "dup")
    assert twice.changes == ("flip", "dup") and twice.calculation[1] == arc and len(twice.calculation) == 3
    assert twice.children("x:T") == {ROLE: [("x:A", 1.0), ("x:A", 1.0)]}
    missing = dataclasses.replace(first, concept="x:Nope")
    with pytest.raises(KeyError, match="x:Nope has no fact"):
        filing.with_fact_value(missing, 1, "nothing")


def test_an_edited_filing_has_the_lookups_a_build_over_its_facts_gives(corpus):
    """Lookups of a with_fact_value copy come from the original's with the swapped facts (not a pass over every
    fact): equal, key for key and in order, to a build from scratch, through a chain of edits and for unedited keys."""
    filing = corpus.filing(corpus.names[0])
    numeric = [f for f in filing.facts if f.numeric and f.value is not None]
    edited = filing
    for i, chosen in enumerate(numeric[:: max(1, len(numeric) // 4)][:4]):
        target = next(f for f in edited.facts_of(chosen.concept) if f.context == chosen.context)
        edited = edited.with_fact_value(target, float(target.value) + 1000.0 * (i + 1), f"edit {i}")
        assert edited.edited_from() is not None
        lookup, fresh = FilingFacts.of(edited), FilingFacts(edited)
        assert lookup._index == fresh._index and lookup._periods == fresh._periods
        assert lookup.filing is edited and FilingFacts.of(edited) is lookup
        rebuilt = dataclasses.replace(edited)  # a plain copy: no edit record, lookups built from its facts
        assert rebuilt.edited_from() is None
        assert {c: edited.facts_of(c) for c in {f.concept for f in edited.facts}} == {
            c: rebuilt.facts_of(c) for c in {f.concept for f in edited.facts}}
    assert FilingFacts.of(filing)._index == FilingFacts(filing)._index  # the original is untouched


def test_a_filing_with_an_extra_arc_shares_the_fact_lookups_and_not_the_linkbase(corpus):
    """with_extra_arc's copy (the duplicated-child injection) has the original's facts: its fact lookups come from
    the original's, equal to a build from scratch, while its calculation answers include the new arc."""
    filing = corpus.filing(corpus.names[0])
    parent, role = filing.calculation[0].parent, filing.calculation[0].role
    child = filing.calculation[0].child
    before = filing.children(parent, role)[role]
    edited = filing.with_extra_arc(CalcArc(role, parent, child, 1.0, 999.0), "dup")
    assert edited.edited_from() == (filing, ())
    lookup, fresh = FilingFacts.of(edited), FilingFacts(edited)
    assert lookup._index == fresh._index and lookup._periods == fresh._periods and lookup.filing is edited
    rebuilt = dataclasses.replace(edited)
    concepts = {f.concept for f in filing.facts}
    assert {c: edited.facts_of(c) for c in concepts} == {c: rebuilt.facts_of(c) for c in concepts}
    assert edited.children(parent, role)[role] == [*before, (child, 1.0)]
    assert filing.children(parent, role)[role] == before  # the original's linkbase is untouched
    chained = edited.with_fact_value(edited.facts_of(child)[0], 123.0, "flip")  # an edit of the edited copy
    assert FilingFacts.of(chained)._index == FilingFacts(chained)._index


# ====================================================================== 5. bad input
@pytest.mark.parametrize("kind", ["instance", "schema", "cal", "def", "lab", "pre"])
def test_malformed_xml_in_any_file_is_an_xbrl_error(tmp_path, kind):
    folder = write_bundle(tmp_path / "b", [fact("x:A", 1)], override={kind: "<broken><unclosed></broken>"})
    with pytest.raises(XbrlError, match="not well-formed XML") as err:
        _load(folder)
    assert bundle_files(folder)[kind].name in str(err.value)


_LAUGHS = ('<?xml version="1.0"?>\n<!DOCTYPE lolz [<!ENTITY lol "lol">'
           + "".join(f'<!ENTITY lol{i} "{("&lol%s;" % (i - 1 if i > 1 else "")) * 10}">' for i in range(1, 10))
           + ']>\n<lolz>&lol9;</lolz>')


@pytest.mark.parametrize("kind", ["instance", "cal"])
@pytest.mark.parametrize("attack", ["billion laughs", "external entity", "external DTD"])
def test_hostile_xml_is_refused_naming_the_file(tmp_path, kind, attack):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-LINE")
    text = {
        "billion laughs": _LAUGHS,
        "external entity": f'<?xml version="1.0"?>\n<!DOCTYPE r [<!ENTITY x SYSTEM "{secret.as_uri()}">]>\n<r>&x;</r>',
        "external DTD": f'<?xml version="1.0"?>\n<!DOCTYPE r SYSTEM "{secret.as_uri()}">\n<r/>',
    }[attack]
    folder = write_bundle(tmp_path / "b", [fact("x:A", 1)], override={kind: text})
    with pytest.raises(DataError, match=r"refused: the XML has a DTD \(entity declarations or external references; DTDForbidden\)") as err:
        _load(folder)
    assert isinstance(err.value, XbrlError)
    assert bundle_files(folder)[kind].name in str(err.value)
    assert "TOP-SECRET" not in str(err.value)


@pytest.mark.parametrize(("kind", "needle"), [("cal", "cal (_cal.xml)"), ("def", "def (_def.xml)"),
                                              ("lab", "lab (_lab.xml)"), ("pre", "pre (_pre.xml)"),
                                              ("schema", "schema (.xsd)"), ("instance", "instance (.xml)")])
def test_bundle_missing_a_file_names_the_kind(tmp_path, kind, needle):
    folder = write_bundle(tmp_path / "b", [fact("x:A", 1)], omit=(kind,))
    with pytest.raises(XbrlError, match=re.escape(needle)) as err:
        _load(folder)
    assert "bundle is missing its" in str(err.value)


def test_bundle_folder_missing_or_ambiguous(tmp_path):
    with pytest.raises(XbrlError, match="bundle folder not found"):
        _load(tmp_path / "nowhere")
    folder = write_bundle(tmp_path / "b", [fact("x:A", 1)])
    (folder / "other.xsd").write_text((folder / f"{STEM}.xsd").read_text())
    with pytest.raises(XbrlError, match="more than one candidate file"):
        _load(folder)


def test_inline_extract_is_preferred_over_a_second_instance(tmp_path):
    folder = write_bundle(tmp_path / "b", [fact("x:A", 1)])
    (folder / "x-20231231.xml").write_text("<not-read/>")
    assert bundle_files(folder)["instance"].name == f"{STEM}_htm.xml"
    assert _load(folder).facts_of("x:A")[0].value == 1


def test_instance_root_must_be_xbrl(tmp_path):
    folder = write_bundle(tmp_path / "b", [], override={"instance": "<html><body/></html>"})
    with pytest.raises(XbrlError, match="not an XBRL instance"):
        _load(folder)


def test_concept_absent_from_the_filing(tmp_path):
    filing = _load(write_bundle(tmp_path / "b", [fact("x:A", 1)]))
    with pytest.raises(ConceptNotFoundError, match="x:Nope does not appear in filing b"):
        Calculator(filing).reported("x:Nope", "2023-12-31")
    with pytest.raises(ConceptNotFoundError):
        ground_truth(filing, "x:Nope", "2023-12-31")


def test_period_without_context(tmp_path):
    filing = _load(write_bundle(tmp_path / "b", [fact("x:A", 1)]))
    with pytest.raises(NoContextError, match="no non-dimensional context for 2021-12-31"):
        Calculator(filing).reported("x:A", "2021-12-31")
    with pytest.raises(NoContextError, match="2023-02-01 to 2023-12-31"):
        Calculator(filing).calculated("x:A", "2023-02-01 to 2023-12-31")


def test_shipped_filing_errors_name_the_problem(corpus):
    filing = corpus.filing("aapl_10k_2023-09-30")
    with pytest.raises(ConceptNotFoundError, match="us-gaap:NoSuchConcept"):
        ground_truth(filing, "us-gaap:NoSuchConcept", "2023-09-30")
    with pytest.raises(NoContextError, match="1999-12-31"):
        ground_truth(filing, "us-gaap:Assets", "1999-12-31")
    with pytest.raises(ValueError, match="neither YYYY-MM-DD"):
        ground_truth(filing, "us-gaap:Assets", "Sept 30, 2023")


def test_duplicate_facts_that_disagree_are_ambiguous(tmp_path):
    contexts = {**DEFAULT_CONTEXTS, "I23b": (None, "2023-12-31", ())}
    filing = _load(write_bundle(tmp_path / "b", [fact("x:A", 1_000_000, decimals="-6"),
                                                 fact("x:A", 3_000_000, "I23b", decimals="-6")], contexts=contexts))
    with pytest.raises(AmbiguousFactError, match="disagree") as err:
        Calculator(filing).reported("x:A", "2023-12-31")
    assert "1000000 (I23)" in str(err.value) and "3000000 (I23b)" in str(err.value)
    with pytest.raises(AmbiguousFactError):
        ground_truth(filing, "x:A", "2023-12-31")
    problems = check_duplicates(filing)
    assert len(problems) == 1 and "x:A" in problems[0]


def test_duplicate_facts_whose_intervals_touch_agree(tmp_path):
    # 1,000,000 and 2,000,000 at decimals=-6 stand for [0.5M, 1.5M] and [1.5M, 2.5M]: they overlap
    contexts = {**DEFAULT_CONTEXTS, "I23b": (None, "2023-12-31", ())}
    filing = _load(write_bundle(tmp_path / "b", [fact("x:A", 1_000_000, decimals="-6"),
                                                 fact("x:A", 2_000_000, "I23b", decimals="-6")], contexts=contexts))
    assert Calculator(filing).reported("x:A", "2023-12-31").value == 1_000_000
    assert check_duplicates(filing) == []


def test_duplicate_facts_at_different_precision_agree_and_the_most_precise_wins(tmp_path):
    contexts = {**DEFAULT_CONTEXTS, "I23b": (None, "2023-12-31", ()), "I23c": (None, "2023-12-31", ())}
    filing = _load(write_bundle(tmp_path / "b", [fact("x:A", 1_200_000, decimals="-5"),
                                                 fact("x:A", 1_234_567, "I23b", decimals="0"),
                                                 fact("x:A", 1_000_000, "I23c", decimals="-6")], contexts=contexts))
    reported = Calculator(filing).reported("x:A", "2023-12-31")
    assert reported.value == 1_234_567 and reported.decimals == 0
    assert check_duplicates(filing) == []


def test_calculation_cycle(tmp_path):
    filing = _load(write_bundle(
        tmp_path / "b", [fact("x:A", 10), fact("x:C", 4), fact("x:D", 6)],
        calc=[(ROLE, "x:A", "x:B", 1), (ROLE, "x:A", "x:C", 1), (ROLE2, "x:B", "x:A", 1),
              (ROLE2, "x:B", "x:D", 1)]))
    with pytest.raises(CalcCycleError, match=r"calculation cycle in b: x:A -> x:B -> x:A"):
        Calculator(filing).calculated("x:A", "2023-12-31")
    assert calc_cycles(filing) == [("x:A", "x:B", "x:A")]
    assert check_network(filing) == []  # the cycle is skipped, not a crash


def test_non_numeric_text_in_a_numeric_fact(tmp_path):
    for text in ("twelve", "NaN", "inf", ""):
        folder = write_bundle(tmp_path / f"b{len(text)}{text[:1]}", [fact("x:A", text)])
        with pytest.raises(XbrlError, match="is not") as err:
            _load(folder)
        assert "x:A" in str(err.value) and "I23" in str(err.value)


def test_bad_decimals_attribute(tmp_path):
    folder = write_bundle(tmp_path / "b", [fact("x:A", 5, decimals="many")])
    with pytest.raises(XbrlError, match="decimals='many'"):
        _load(folder)


def test_fact_referencing_an_undefined_context_or_unit(tmp_path):
    with pytest.raises(XbrlError, match="refers to context 'Nowhere'"):
        _load(write_bundle(tmp_path / "c", [fact("x:A", 1, "Nowhere")]))
    with pytest.raises(XbrlError, match="refers to unit 'gbp'"):
        _load(write_bundle(tmp_path / "u", [fact("x:A", 1, unit="gbp")]))


def test_context_without_a_period(tmp_path):
    folder = write_bundle(tmp_path / "b", [fact("x:A", 1)], contexts={"I23": (None, "2023-12-31", ())})
    path = folder / f"{STEM}_htm.xml"
    text = path.read_text().replace("<xbrli:period><xbrli:instant>2023-12-31</xbrli:instant></xbrli:period>", "")
    path.write_text(text)
    with pytest.raises(XbrlError, match="context 'I23' has no period"):
        _load(folder)


def test_calculation_arc_errors(tmp_path):
    folder = write_bundle(tmp_path / "w", [fact("x:A", 1)], calc=[(ROLE, "x:A", "x:B", "heavy")])
    with pytest.raises(XbrlError, match="has weight 'heavy'"):
        _load(folder)
    folder = write_bundle(tmp_path / "l", [fact("x:A", 1)], calc=[(ROLE, "x:A", "x:B", 1)])
    path = folder / f"{STEM}_cal.xml"
    path.write_text(path.read_text().replace('xlink:to="loc_x_B"', 'xlink:to="loc_x_Gone"'))
    with pytest.raises(XbrlError, match="names a missing locator"):
        _load(folder)


def test_non_summation_calculation_arcs_are_ignored(tmp_path):
    folder = write_bundle(tmp_path / "b", [fact("x:A", 1)], calc=[(ROLE, "x:A", "x:B", 1)])
    path = folder / f"{STEM}_cal.xml"
    path.write_text(path.read_text().replace(SUMMATION_ITEM, "http://example.com/arcrole/other"))
    assert _load(folder).calculation == ()


@pytest.mark.parametrize("period", ["2023/09/30", "Sept 30, 2023", "2023-09-30 to", "", "2023-9-30",
                                    "2023-09-30 to 2024"])
def test_malformed_period_string(tmp_path, period):
    with pytest.raises(ValueError, match="neither YYYY-MM-DD"):
        parse_period(period)
    filing = _load(write_bundle(tmp_path / "b", [fact("x:A", 1)]))
    with pytest.raises(ValueError, match="neither YYYY-MM-DD"):
        Calculator(filing).reported("x:A", period)


@pytest.mark.parametrize(("text", "parsed"), [
    ("2023-09-30", (None, "2023-09-30")),
    ("2022-09-25 to 2023-09-30", ("2022-09-25", "2023-09-30")),
    (" 2022-09-25/2023-09-30 ", ("2022-09-25", "2023-09-30")),
    ("2022-09-25 -- 2023-09-30", ("2022-09-25", "2023-09-30")),
])
def test_period_forms(text, parsed):
    assert parse_period(text) == parsed


@pytest.fixture
def two_unit_filing(tmp_path):
    return _load(write_bundle(
        tmp_path / "b",
        [fact("x:FaceAmount", 100), fact("x:FaceAmount", 90, unit="eur"),
         fact("x:Notes", 60), fact("x:Notes", 54, unit="eur"), fact("x:Other", 40), fact("x:Other", 36, unit="eur")],
        calc=[(ROLE, "x:FaceAmount", "x:Notes", 1), (ROLE, "x:FaceAmount", "x:Other", 1)]))


def test_two_units_in_one_context_are_not_duplicates(two_unit_filing):
    lookup = FilingFacts(two_unit_filing)
    assert lookup.value("x:FaceAmount", None, "2023-12-31", unit="usd").value == 100
    assert lookup.value("x:FaceAmount", None, "2023-12-31", unit="eur").value == 90
    assert check_duplicates(two_unit_filing) == []
    assert {(c.reported, c.computed) for c in check_network(two_unit_filing)} == {(100, 100), (90, 90)}


def test_two_units_without_a_unit_are_ambiguous(two_unit_filing):
    with pytest.raises(AmbiguousFactError, match=r"several units \(eur, usd\).*name the unit"):
        Calculator(two_unit_filing).reported("x:FaceAmount", "2023-12-31")
    with pytest.raises(AmbiguousFactError, match="several units"):
        Calculator(two_unit_filing).calculated("x:FaceAmount", "2023-12-31")


def test_a_summation_parent_in_two_units_is_calculated_in_the_unit_given(two_unit_filing):
    calc = Calculator(two_unit_filing)
    assert calc.calculated("x:FaceAmount", "2023-12-31", unit="eur").value == 90
    assert calc.calculated("x:FaceAmount", "2023-12-31", unit="usd").value == 100


def test_a_leaf_in_two_units_is_calculated_in_the_unit_given(two_unit_filing):
    calc = Calculator(two_unit_filing)
    assert calc.calculated("x:Notes", "2023-12-31", unit="eur").value == 54
    assert calc.calculated("x:Notes", "2023-12-31", unit="usd").value == 60


# ====================================================================== 6. instance generation
def test_generate_is_deterministic(eval_set):
    for seed in (0, 3, 17, 99, 1234):
        assert generate(seed) == generate(seed)
    assert generate(42) == eval_set[42]
    assert generate(42, Corpus()) == eval_set[42]
    assert eval_instances() == eval_set


def test_eval_seeds_give_twenty_of_each_kind(eval_set):
    assert EVAL_SEEDS == tuple(range(100))
    kinds = [inst.injection.kind for inst in eval_set]
    assert {k: kinds.count(k) for k in INJECTIONS} == dict.fromkeys(INJECTIONS, 20)
    for seed, inst in zip(EVAL_SEEDS, eval_set, strict=True):
        assert inst.id == f"gen-{seed}" and inst.seed == seed and inst.split == "eval"
        assert inst.injection.kind == INJECTIONS[seed % 5]
        assert inst.bundle == BUNDLES[(seed // 5) % len(BUNDLES)]
        assert inst.source == "generated" and inst.unanswerable == ""
        assert inst.concept in inst.query and inst.period in inst.query and inst.ticker.lower() in inst.query
        assert inst.issued == EXPECTED_SUMMARY[inst.bundle][4]


def test_eval_and_train_never_share_a_concept_period(eval_set):
    eval_keys = {(i.bundle, i.concept, i.period) for i in eval_set}
    train = [generate(s) for s in range(1000, 1150)]
    assert all(i.split == "train" for i in train)
    train_keys = {(i.bundle, i.concept, i.period) for i in train}
    assert len(train_keys) > 100
    assert eval_keys.isdisjoint(train_keys)
    # the split is a property of the candidates themselves
    for bundle in BUNDLES:
        split = tasks._candidates(shipped_corpus(), bundle)
        keys = {s: {(x.parent if isinstance(x, tasks._Sum) else x.concept, x.period) for x in (*sums, *leaves)}
                for s, (sums, leaves) in split.items()}
        assert keys["eval"] and keys["train"] and keys["eval"].isdisjoint(keys["train"])


def test_explicit_split_overrides_the_seed_default():
    inst = generate(3, split="train")
    assert inst.split == "train" and inst.injection.kind == INJECTIONS[3]
    assert generate(1003, split="eval").split == "eval"


@pytest.mark.parametrize("seed", [-1, -100, True, 1.5, "3"])
def test_bad_seeds_are_rejected(seed):
    with pytest.raises(ValueError, match="non-negative integer"):
        generate(seed)


def test_unknown_split_is_rejected():
    with pytest.raises(ValueError, match="split='test'"):
        generate(1, split="test")


def _weight_of(filing, parent: str, child: str) -> float:
    weights = {w for kids in filing.children(parent).values() for c, w in kids if c == child}
    assert len(weights) == 1, f"{child} has weights {weights} under {parent}"
    return weights.pop()


def test_eval_truths_follow_from_the_injection(corpus, eval_set):
    for inst in eval_set:
        filed = corpus.filing(inst.bundle)
        inj = inst.injection
        truth = ground_truth(instance_filing(inst), inst.concept, inst.period).truth
        rep, calc, tol = truth.reported_value, truth.calculated_value, truth.reported_tolerance
        as_filed = Calculator(filed).reported(inst.concept, inst.period).value
        where = f"{inst.id} {inst.bundle} {inst.concept} {inst.period} {inj}"
        if inj.kind == "none":
            assert abs(rep - calc) <= tol and rep == as_filed, where
        elif inj.kind == "sign_flip":
            assert inj.concept == inst.concept and inj.before == as_filed > 0, where
            assert rep == -inj.before and calc == inj.before, where
        elif inj.kind == "parent_mismatch":
            assert inj.concept == inst.concept and inj.before == as_filed, where
            assert rep == inj.after and abs(calc - as_filed) <= tol, where
        elif inj.kind == "child_scaled":
            weight = _weight_of(filed, inst.concept, inj.concept)
            child_as_filed = Calculator(filed).reported(inj.concept, inst.period).value
            assert inj.before == child_as_filed and inj.after == 1000 * child_as_filed, where
            assert rep == as_filed, where
            assert abs((calc - rep) - 999 * weight * child_as_filed) <= tol, where
        else:
            assert inj.kind == "child_duplicated" and inj.concept == inst.concept, where
            assert inj.weight == _weight_of(filed, inst.concept, inj.child), where
            child_as_filed = Calculator(filed).reported(inj.child, inst.period).value
            assert rep == as_filed and abs((calc - rep) - inj.weight * child_as_filed) <= tol, where
        if inj.kind != "none":
            assert abs(rep - calc) >= MIN_GAP_HALF_UNITS * tol, where
            assert classify({"reported_value": rep, "calculated_value": rep}, truth).label == "calculation"
        assert classify({"reported_value": rep, "calculated_value": calc}, truth).label == "pass"


def test_injected_filing_differs_only_where_the_injection_says(corpus, eval_set):
    for inst in eval_set:
        filed = corpus.filing(inst.bundle)
        changed = instance_filing(inst)
        inj = inst.injection
        if inj.kind == "none":
            assert changed is filed and changed.changes == ()
            continue
        assert changed.changes == (inj.describe(),) and changed is not filed
        assert (changed.contexts, changed.units, changed.labels, changed.concepts) == (
            filed.contexts, filed.units, filed.labels, filed.concepts)
        if inj.kind == "child_duplicated":
            assert changed.facts == filed.facts
            extra = list(changed.calculation)
            extra.remove(CalcArc(inj.role, inj.concept, inj.child, inj.weight, 999.0))
            assert tuple(extra) == filed.calculation
            continue
        assert changed.calculation == filed.calculation and len(changed.facts) == len(filed.facts)
        key = filed._context_key(inj.context)
        diffs = [(a, b) for a, b in zip(filed.facts, changed.facts, strict=True) if a != b]
        assert diffs, inst.id
        for before, after in diffs:
            assert before.concept == after.concept == inj.concept and before.unit == after.unit
            assert filed._context_key(before.context) == key
            assert before.value == inj.before and after.value == inj.after
        assert filed.contexts[inj.context].period == inst.period


def test_shipped_corpus_is_unchanged_by_injections(corpus, eval_set):
    for inst in eval_set:
        instance_filing(inst)
    for bundle in BUNDLES:
        shipped = corpus.filing(bundle)
        fresh = load_bundle(corpus.root / bundle, filed=shipped.filed, name=bundle)
        assert shipped.changes == ()
        assert shipped.facts == fresh.facts and shipped.calculation == fresh.calculation


def test_injection_records_and_descriptions(eval_set):
    by_kind = {inst.injection.kind: inst for inst in eval_set}
    assert by_kind["none"].injection.describe() == "nothing injected"
    assert "listed twice" in by_kind["child_duplicated"].injection.describe()
    assert "(sign_flip)" in by_kind["sign_flip"].injection.describe()
    record = by_kind["child_scaled"].record()
    assert record["injection"]["kind"] == "child_scaled" and record["seed"] == by_kind["child_scaled"].seed


# ====================================================================== 7. HERCULEAN task files
HEADER = ["id", "query", "filing_name", "ticker", "issue_time", "usgaap_concept", "period", "gt_answer"]


def _write_tasks(path: Path, rows: list[list[str]], header: list[str] = HEADER) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def test_herculean_rows_answerable_and_not(tmp_path, corpus):
    path = _write_tasks(tmp_path / "tasks.csv", [
        ["t1", "Audit Assets.", "10k", "aapl", "2023-09-30", "us-gaap:Assets", "2023-09-30",
         "{'extracted_value': '352,583,000,000', 'calculated_value': '352,583,000,000'}"],
        ["t2", "", "10k", "zzzz", "2023-09-30", "us-gaap:Assets", "2023-09-30", ""],
        ["t3", "q", "10q", "tsla", "2024-06-30", "us-gaap:NoSuchConcept", "2024-06-30",
         "{'extracted_value': '-14,721,000', 'calculated_value': '14,721,000'}"],
        ["t4", "q", "10k", "nflx", "2024-01-26", "us-gaap:Assets", "2023-12-31", ""],
        ["t5", "q", "10k", "msft", "2015-06-30", "us-gaap:Assets", "June 2015", ""],
    ])
    rows = {inst.id: inst for inst in load_herculean_tasks(path, corpus)}
    assert list(rows) == ["t1", "t2", "t3", "t4", "t5"]
    ok = rows["t1"]
    assert ok.unanswerable == "" and ok.bundle == "aapl_10k_2023-09-30" and ok.ticker == "AAPL"
    assert ok.source == "herculean" and ok.split == "file" and ok.query == "Audit Assets."
    assert ok.published == {"extracted_value": "352,583,000,000", "calculated_value": "352,583,000,000"}
    assert published_truth(ok) == (352_583_000_000, 352_583_000_000)
    assert ground_truth(corpus.filing(ok.bundle), ok.concept, ok.period).truth.reported_value == 352_583_000_000

    missing = rows["t2"]
    assert missing.bundle == "" and missing.unanswerable.startswith("no bundle for zzzz 10k issued 2023-09-30")
    assert missing.published is None and published_truth(missing) is None
    assert "us-gaap:Assets" in missing.query  # an empty query is written from the row

    unknown = rows["t3"]
    assert unknown.bundle == "tsla_10q_2024-06-30"
    assert "us-gaap:NoSuchConcept does not appear in filing tsla_10q_2024-06-30" in unknown.unanswerable
    assert published_truth(unknown) == (-14_721_000, 14_721_000)

    by_release = rows["t4"]  # issue_time matches the release date, not the period end
    assert by_release.bundle == "nflx_10k_2023-12-31" and by_release.unanswerable == ""

    assert rows["t5"].bundle == "msft_10k_2015-06-30" and "neither YYYY-MM-DD" in rows["t5"].unanswerable


def test_herculean_file_missing_a_column(tmp_path, corpus):
    path = _write_tasks(tmp_path / "t.csv", [["t1", "q", "10k", "aapl", "2023-09-30", "us-gaap:Assets", ""]],
                        header=[c for c in HEADER if c != "period"])
    with pytest.raises(DataFileError, match=r"missing column\(s\) \['period'\]"):
        load_herculean_tasks(path, corpus)


@pytest.mark.parametrize(("answer", "needle"), [("{'extracted_value': ", "not a dict literal"),
                                                ("['-14,721,000', '14,721,000']", "is a list, not a dict"),
                                                ("extracted_value=5", "not a dict literal")])
def test_herculean_malformed_gt_answer(tmp_path, corpus, answer, needle):
    path = _write_tasks(tmp_path / "t.csv", [["t1", "q", "10k", "aapl", "2023-09-30", "us-gaap:Assets",
                                              "2023-09-30", answer]])
    with pytest.raises(DataFileError, match=needle) as err:
        load_herculean_tasks(path, corpus)
    assert "t.csv:2 (t1)" in str(err.value)


def test_herculean_file_not_found(tmp_path, corpus):
    with pytest.raises(DataFileError, match="task file not found"):
        load_herculean_tasks(tmp_path / "none.csv", corpus)


def test_published_truth_unreadable_numbers_give_none(tmp_path, corpus):
    path = _write_tasks(tmp_path / "t.csv", [["t1", "q", "10k", "aapl", "2023-09-30", "us-gaap:Assets",
                                              "2023-09-30", "{'extracted_value': 'lots', 'calculated_value': '1'}"]])
    inst = load_herculean_tasks(path, corpus)[0]
    assert inst.published == {"extracted_value": "lots", "calculated_value": "1"}
    assert published_truth(inst) is None


def test_herculean_short_row_is_a_data_file_error(tmp_path, corpus):
    path = _write_tasks(tmp_path / "t.csv", [["t1", "q", "10k", "aapl"]])
    with pytest.raises(DataFileError, match="t1"):
        load_herculean_tasks(path, corpus)


# ====================================================================== 8. corpus and manifest
def test_corpus_without_bundles(tmp_path):
    (tmp_path / "taxonomy").mkdir()
    with pytest.raises(XbrlError, match="no bundle folders"):
        Corpus(tmp_path)
    with pytest.raises(XbrlError, match="corpus folder not found"):
        Corpus(tmp_path / "missing")


def test_corpus_pickles_as_its_folder(corpus):
    copy = pickle.loads(pickle.dumps(corpus))
    assert copy.names == corpus.names and copy.root == corpus.root
    assert copy.filing("tsla_10q_2024-06-30").summary() == corpus.filing("tsla_10q_2024-06-30").summary()


def test_corpus_lookups(corpus):
    assert [f.bundle for f in corpus.find("aapl")] == ["aapl_10k_2023-09-30",
                                                      "aapl_10q_2025-03-29_0000320193-25-000057"]
    assert [f.bundle for f in corpus.find("AAPL", "10q")] == ["aapl_10q_2025-03-29_0000320193-25-000057"]
    assert [f.bundle for f in corpus.find("nflx", "10-K", period="2023-12-31")] == ["nflx_10k_2023-12-31"]
    assert [f.bundle for f in corpus.find("nflx", filed_by="2024-06-30")] == ["nflx_10k_2023-12-31"]
    assert corpus.find("zzzz") == []
    assert corpus.filing("amzn_10k_2022-12-31") is corpus.filing("amzn_10k_2022-12-31")  # cached
    with pytest.raises(KeyError, match="no bundle 'goog'"):
        corpus.filing("goog")


def test_user_corpus_of_hand_made_bundles(tmp_path):
    write_bundle(tmp_path / "corp" / "xmpl_10k", [fact("x:Total", 30), fact("x:A", 10), fact("x:B", 20)],
                 calc=[(ROLE, "x:Total", "x:A", 1), (ROLE, "x:Total", "x:B", 1)])
    user = Corpus(tmp_path / "corp", concepts={})
    assert user.names == ("xmpl_10k",) and user.index("xmpl_10k") == {}
    filing = user.filing("xmpl_10k")
    assert filing.ticker == "XMPL" and filing.filed == ""
    assert [f.bundle for f in user.find("xmpl", "10-K")] == ["xmpl_10k"]
    (tmp_path / "corp" / "xmpl_10k" / "filing.json").write_text("{not json")
    with pytest.raises(XbrlError, match="not valid JSON"):
        user.index("xmpl_10k")


def test_count_rows_matches_the_manifest():
    from finenvs.data.manifest import load_manifest

    manifest = load_manifest()
    entries = [e for e in manifest.entries if e.kind in ("xbrl", "taxonomy")]
    assert len(entries) == 7 * 7 + 2
    kinds = set()
    for entry in entries:
        path = manifest.root / entry.file
        kind = file_kind(path)
        kinds.add(kind)
        assert count_rows(path, kind) == entry.rows, entry.file
    assert kinds == {"instance", "schema", "cal", "def", "lab", "pre", "index", "taxonomy"}
    facts = {e.file.split("/")[1]: e.rows for e in entries if file_kind(manifest.root / e.file) == "instance"}
    assert facts == {b: EXPECTED_SUMMARY[b][0][2] for b in BUNDLES}


def test_taxonomy_concept_table():
    table = taxonomy_concepts()
    assert len(table) > 3000
    assets = table["us-gaap:Assets"]
    assert (assets.balance, assets.period_type, assets.datatype) == ("debit", "instant", "monetaryItemType")
    assert table["us-gaap:Liabilities"].balance == "credit"
    assert all(name.count(":") == 1 for name in table)


def test_taxonomy_calculations_shape():
    calcs = taxonomy_calculations()
    assert len(calcs) == 1599
    for rels in calcs.values():
        for rel in rels:
            assert rel["role"].startswith("http://") and rel["children"]
            assert all(isinstance(c["weight"], float) for c in rel["children"])
    srt = [name for name in calcs if name.startswith("srt:")]
    assert srt and all("_" not in name for name in srt)


def test_taxonomy_calculations_are_keyed_by_prefixed_names():
    calcs = taxonomy_calculations()
    assert "us-gaap:Assets" in calcs
    assert {c["child"] for rel in calcs["us-gaap:Assets"] for c in rel["children"]} >= {
        "us-gaap:AssetsCurrent", "us-gaap:AssetsNoncurrent"}
    assert all(":" in name for name in calcs)


def test_generate_on_a_user_corpus(tmp_path):
    write_bundle(tmp_path / "corp" / "tiny", [fact("x:A", 1)])
    user = Corpus(tmp_path / "corp", concepts={})
    home = "eval" if tasks._is_eval("tiny", "x:A", "2023-12-31") else "train"
    other = "train" if home == "eval" else "eval"
    inst = generate(0, user, split=home)  # kind "none": the only candidate
    assert (inst.bundle, inst.concept, inst.period, inst.injection.kind) == ("tiny", "x:A", "2023-12-31", "none")
    assert inst.ticker == "XMPL" and inst.form == "10-K"
    with pytest.raises(AuditDataError, match=f"tiny: no {other} candidates"):
        generate(0, user, split=other)
    # x:A has no balance type, so no leaf can be sign-flipped; and there is no summation at all
    with pytest.raises(AuditDataError, match="no non-negative leaf to flip"):
        generate(1, user, split=home)
    with pytest.raises(AuditDataError, match="no summation"):
        generate(2, user, split=home)
