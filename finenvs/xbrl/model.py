"""The parsed form of one XBRL filing: contexts, units, facts, linkbases and concept metadata.

Everything here is an immutable value built by :func:`finenvs.xbrl.parse.load_bundle`.
Concepts are named ``prefix:LocalName`` (``us-gaap:Assets``, ``aapl:OtherIncomeNet``),
the prefix being the one the filing uses; linkbase locators (``...xsd#us-gaap_Assets``)
are mapped to the same names.

Numbers are Python floats. Every monetary fact of the shipped filings is an integer
below 2**53, so sums of them are exact; ``decimals`` (``None`` = ``INF``, exact)
carries the precision the filer declared and every tolerance derives from it.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

#: Arcrole of a calculation (summation-item) relationship.
SUMMATION_ITEM = "http://www.xbrl.org/2003/arcrole/summation-item"
#: The standard label role.
STANDARD_LABEL = "label"


def half_unit(decimals: int | None, value: float = 0.0) -> float:
    """Half a unit in the last declared place: the rounding half-interval of a fact.

    ``decimals=-6`` (millions) gives 500,000; ``decimals=2`` gives 0.005. ``None``
    (``INF``, exact) gives a floating-point allowance of 1e-9 relative (at least 1e-9).
    """
    if decimals is None:
        return 1e-9 * max(1.0, abs(value))
    return 0.5 * 10.0 ** (-decimals)


@dataclass(frozen=True)
class Context:
    """An XBRL context: who, when, and which dimension members.

    Attributes:
        id: The context id in the instance.
        entity: Entity identifier (a CIK for SEC filings).
        start: Period start (``YYYY-MM-DD``) for a duration, else None.
        end: Period end for a duration, the date for an instant.
        dimensions: ``((axis, member), ...)`` sorted; empty for the non-dimensional context.
    """

    id: str
    entity: str
    start: str | None
    end: str
    dimensions: tuple[tuple[str, str], ...] = ()

    @property
    def instant(self) -> bool:
        return self.start is None

    @property
    def period(self) -> str:
        """The period as task texts write it: ``2023-09-30`` or ``2022-09-25 to 2023-09-30``."""
        return self.end if self.start is None else f"{self.start} to {self.end}"


@dataclass(frozen=True)
class Unit:
    """A unit: ``measure`` is ``iso4217:USD``, ``xbrli:shares`` or a ratio ``iso4217:USD/xbrli:shares``."""

    id: str
    measure: str

    @property
    def monetary(self) -> bool:
        return self.measure.startswith("iso4217:") and "/" not in self.measure


@dataclass(frozen=True)
class Fact:
    """One reported fact.

    Attributes:
        concept: ``prefix:LocalName``.
        context: Context id.
        unit: Unit id (None for non-numeric facts).
        value: The number (None when nil or non-numeric).
        text: The text as written in the instance (stripped; long texts are kept whole).
        decimals: Declared decimals; None for ``INF`` or when absent.
        id: The fact's id attribute ("" when it has none).
        nil: ``xsi:nil="true"``.
    """

    concept: str
    context: str
    unit: str | None
    value: float | None
    text: str
    decimals: int | None
    id: str = ""
    nil: bool = False

    @property
    def numeric(self) -> bool:
        return self.unit is not None


@dataclass(frozen=True)
class CalcArc:
    """A summation-item arc: ``parent = sum(weight * child)`` within ``role``."""

    role: str
    parent: str
    child: str
    weight: float
    order: float = 0.0


@dataclass(frozen=True)
class PresentationArc:
    """A parent-child arc of the presentation tree of ``role``."""

    role: str
    parent: str
    child: str
    order: float = 0.0
    preferred_label: str = ""


@dataclass(frozen=True)
class ConceptInfo:
    """What is known about a concept's definition.

    Attributes:
        name: ``prefix:LocalName``.
        balance: ``"debit"``, ``"credit"`` or None (not monetary, or unknown).
        period_type: ``"instant"``, ``"duration"`` or None.
        datatype: e.g. ``monetaryItemType`` (None when unknown).
        abstract: Whether the concept is abstract (never carries facts).
        source: Where balance and period type came from (the filing's schema, the
            shipped taxonomy table, or inferred from the facts' contexts).
    """

    name: str
    balance: str | None = None
    period_type: str | None = None
    datatype: str | None = None
    abstract: bool = False
    source: str = ""


@dataclass(frozen=True)
class Filing:
    """One parsed filing (a six-file bundle).

    Attributes:
        bundle: The bundle's name (its folder name).
        ticker: Trading symbol (upper case), from the bundle index or ``dei:TradingSymbol``.
        form: ``10-K`` or ``10-Q`` (``dei:DocumentType``).
        period_end: ``dei:DocumentPeriodEndDate``.
        filed: The date the filing was released (SEC acceptance), "" when unknown.
        company: ``dei:EntityRegistrantName``.
        contexts: id -> Context.
        units: id -> Unit.
        facts: Every fact in document order.
        calculation: The summation-item arcs, in linkbase order.
        presentation: The presentation arcs, in linkbase order.
        definition_arcs: Number of arcs in the definition linkbase.
        labels: concept -> {label role (last path part, e.g. ``terseLabel``): text}.
        concepts: concept -> ConceptInfo (every concept of the schema, the facts and the linkbases).
        roles: role URI -> its definition text (from the schema), in schema order.
        files: kind (``instance``, ``schema``, ``cal``, ``def``, ``lab``, ``pre``) -> file name.
        changes: What was altered from the filing as filed (generated audit instances), else empty.
    """

    bundle: str
    ticker: str
    form: str
    period_end: str
    filed: str
    company: str
    contexts: dict[str, Context]
    units: dict[str, Unit]
    facts: tuple[Fact, ...]
    calculation: tuple[CalcArc, ...]
    presentation: tuple[PresentationArc, ...]
    definition_arcs: int
    labels: dict[str, dict[str, str]]
    concepts: dict[str, ConceptInfo]
    roles: dict[str, str]
    files: dict[str, str] = field(default_factory=dict)
    changes: tuple[str, ...] = ()

    # ------------------------------------------------------------------ lookups
    def facts_of(self, concept: str) -> list[Fact]:
        """Every fact of ``concept`` in document order."""
        return list(self._by_concept().get(concept, ()))

    def _by_concept(self) -> dict[str, tuple[Fact, ...]]:
        cached = self.__dict__.get("_by_concept_cache")
        origin = self.edited_from() if cached is None else None
        if origin is not None:
            cached = dict(origin[0]._by_concept())
            for old, new in origin[1]:
                cached[old.concept] = tuple(new if f is old else f for f in cached[old.concept])
            object.__setattr__(self, "_by_concept_cache", cached)
        if cached is None:
            grouped: dict[str, list[Fact]] = {}
            for fact in self.facts:
                grouped.setdefault(fact.concept, []).append(fact)
            cached = {k: tuple(v) for k, v in grouped.items()}
            object.__setattr__(self, "_by_concept_cache", cached)
        return cached

    def label(self, concept: str, role: str = STANDARD_LABEL) -> str:
        """The concept's label in ``role`` (falls back to the standard label, then the local name)."""
        labels = self.labels.get(concept, {})
        return labels.get(role) or labels.get(STANDARD_LABEL) or concept.split(":", 1)[-1]

    def calc_roles(self) -> list[str]:
        """Roles with calculation arcs, in linkbase order."""
        return list(dict.fromkeys(arc.role for arc in self.calculation))

    def children(self, concept: str, role: str | None = None) -> dict[str, list[tuple[str, float]]]:
        """``role -> [(child, weight), ...]`` of ``concept`` (one role when given)."""
        out: dict[str, list[tuple[str, float]]] = {}
        for arc in self.calculation:
            if arc.parent == concept and (role is None or arc.role == role):
                out.setdefault(arc.role, []).append((arc.child, arc.weight))
        return out

    def parents(self, concept: str, role: str | None = None) -> dict[str, list[tuple[str, float]]]:
        """``role -> [(parent, weight), ...]`` where ``concept`` is a child."""
        out: dict[str, list[tuple[str, float]]] = {}
        for arc in self.calculation:
            if arc.child == concept and (role is None or arc.role == role):
                out.setdefault(arc.role, []).append((arc.parent, arc.weight))
        return out

    def concept(self, name: str) -> ConceptInfo:
        """Metadata of ``name``.

        Raises:
            KeyError: The filing neither defines nor uses the concept.
        """
        try:
            return self.concepts[name]
        except KeyError:
            raise KeyError(f"{name!r} is not a concept of filing {self.bundle}") from None

    def summary(self) -> dict[str, Any]:
        """Counts for display and tests."""
        return {
            "bundle": self.bundle, "ticker": self.ticker, "form": self.form, "period_end": self.period_end,
            "filed": self.filed, "company": self.company, "contexts": len(self.contexts),
            "units": len(self.units), "facts": len(self.facts),
            "numeric_facts": sum(1 for f in self.facts if f.numeric),
            "calculation_arcs": len(self.calculation), "calculation_roles": len(self.calc_roles()),
            "presentation_arcs": len(self.presentation), "definition_arcs": self.definition_arcs,
            "labelled_concepts": len(self.labels), "concepts": len(self.concepts),
        }

    # ------------------------------------------------------------------ edits (audit instances)
    def with_fact_value(self, fact: Fact, value: float, why: str) -> Filing:
        """A copy in which ``fact`` — and its repeats in equivalent contexts (same period and
        dimensions, same unit) — report ``value``."""
        text = _format_like(value, fact.decimals)
        key = self._context_key(fact.context)
        facts = []
        replaced = 0
        for f in self.facts:
            if f.concept == fact.concept and f.unit == fact.unit and f.value is not None \
                    and self._context_key(f.context) == key:
                facts.append(dataclasses.replace(f, value=float(value), text=text))
                replaced += 1
            else:
                facts.append(f)
        if not replaced:
            raise KeyError(f"{fact.concept} has no fact in context {fact.context} of {self.bundle}")
        edited = self._copy(facts=tuple(facts), changes=(*self.changes, why))
        # the copy's lookups are this filing's with the replaced facts swapped in (see edited_from)
        swaps = tuple((old, new) for old, new in zip(self.facts, facts, strict=True) if old is not new)
        object.__setattr__(edited, "_edited_from", (self, swaps))
        return edited

    def edited_from(self) -> tuple[Filing, tuple[tuple[Fact, Fact], ...]] | None:
        """``(original, ((old fact, new fact), ...))`` when this filing is an edited copy whose facts are the
        original's with those swapped (same contexts and units): :meth:`with_fact_value`'s (those facts differ) or
        :meth:`with_extra_arc`'s (no fact differs, only the calculation linkbase), else None. Its fact lookups
        (:meth:`facts_of`, :class:`~finenvs.xbrl.calc.FilingFacts`) are built from the original's instead of from
        every fact again; nothing built from the linkbases is taken from the original."""
        return self.__dict__.get("_edited_from")

    def _context_key(self, context: str) -> tuple[str | None, str, tuple[tuple[str, str], ...]]:
        ctx = self.contexts[context]
        return ctx.start, ctx.end, ctx.dimensions

    def with_extra_arc(self, arc: CalcArc, why: str) -> Filing:
        """A copy whose calculation linkbase also has ``arc`` (placed right after the parent's last arc)."""
        arcs = list(self.calculation)
        at = max((i for i, a in enumerate(arcs) if a.role == arc.role and a.parent == arc.parent), default=len(arcs) - 1)
        arcs.insert(at + 1, arc)
        edited = self._copy(calculation=tuple(arcs), changes=(*self.changes, why))
        # the same facts, contexts and units: the copy's fact lookups are this filing's (see edited_from)
        object.__setattr__(edited, "_edited_from", (self, ()))
        return edited

    def _copy(self, **changes: Any) -> Filing:
        return dataclasses.replace(self, **changes)  # caches live in __dict__ and are not copied


def _format_like(value: float, decimals: int | None) -> str:
    if decimals is not None and decimals <= 0 or float(value).is_integer():
        return str(int(round(value)))
    return repr(float(value))


def finite(value: float | None) -> bool:
    return value is not None and math.isfinite(value)
