"""Reported and calculated values of a concept, and the consistency of a filing's calculation network.

Rules (each is documented in the README's FinAudit-v0 section and pinned by tests):

**Period and context.** A period is ``YYYY-MM-DD`` (instant) or ``YYYY-MM-DD to
YYYY-MM-DD`` (duration). The *reported value* of a concept for a period is its
fact in a non-dimensional context with exactly that period. Several such
contexts may exist (filers repeat them); facts in them that agree within their
decimals are one value, facts that disagree are an error
(:class:`AmbiguousFactError`), never a silent pick. Nil facts carry no value.

**Calculated value.** For a concept that is a summation parent in the filing's
calculation linkbase: ``sum(weight * value(child))`` over the children of one
role, in the same period and unit, where ``value(child)`` is the child's
reported value, or — when it has none — its own calculated value (recursively).
A summation is *complete* in a period when every child has a value; an
incomplete one implies nothing (on the shipped filings a partial sum disagrees
with the parent in most cases: the missing line is real, only untagged), so it
is skipped and recorded in :attr:`Calculation.missing`. When the concept has
complete summations in several roles they must agree within tolerance
(:class:`AmbiguousCalculationError` otherwise); the first in linkbase order is
reported and the others are kept in :attr:`Calculation.alternatives`. A concept
with no complete summation in the period is a *leaf*: its calculated value is
its reported value after the sign rule.

**Units.** Values are read in the unit of the concept's reported fact; facts of
one concept and period in several units (a EUR note's face value beside its USD
amount) are not duplicates, but asking for the concept without a unit is
ambiguous (:class:`AmbiguousFactError`).

**Sign rule (leaves).** A concept is *non-negative by the network* when it is
monetary, has a balance type (debit/credit), its name carries no signed-quantity
marker (:data:`SIGNED_MARKERS`: ``IncreaseDecrease``, ``IncomeLoss``,
``GainLoss``, ...), and the filing's calculation network attaches it to a parent
with a weight its balance implies (same balance as the parent: +1; opposite:
-1) — the sign then lives in the weight, so the value itself is non-negative.
The calculated value of such a leaf is ``abs(reported)``. Parents are never
sign-normalised: their calculated value is the sum.

**Tolerance.** A fact with ``decimals=d`` stands for the interval ``value +/-
0.5 * 10**-d``. A summation is consistent when the parent's interval and the
sum's interval (``sum(|weight| * half-interval)`` of the children) overlap.
Answers are compared with :func:`finenvs.scoring.audit.classify` at half a unit
of the concept fact's decimals.

**Cycles.** A calculation cycle met while recursing raises :class:`CalcCycleError`
naming the path.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from finenvs.errors import DataError
from finenvs.xbrl.model import Context, Fact, Filing, half_unit

#: Name parts of concepts whose value may be negative by definition (never sign-normalised).
SIGNED_MARKERS = (
    "IncreaseDecrease", "DecreaseIncrease", "IncomeLoss", "LossIncome", "GainLoss", "LossGain", "ProfitLoss",
    "ExpenseBenefit", "BenefitExpense", "IncomeExpense", "ExpenseIncome", "ProvidedByUsedIn", "UsedInProvidedBy",
    "ChangeIn", "Effect", "Deficit", "ComprehensiveIncome", "Reclassification", "Difference",
    "ProceedsFromRepayments", "ProceedsFromPayments", "PaymentsForProceeds", "RepaymentsOfProceeds",
)
_PERIOD = re.compile(r"^\s*(\d{4}-\d{2}-\d{2})(?:\s*(?:to|/|--|–|—|\.\.)\s*(\d{4}-\d{2}-\d{2}))?\s*$")


class AuditDataError(DataError):
    """The filing cannot give a ground truth for this (concept, period); the reason says why."""


class ConceptNotFoundError(AuditDataError):
    """The concept is not in the filing."""


class NoContextError(AuditDataError):
    """No non-dimensional context of the filing has the period."""


class NoFactError(AuditDataError):
    """The concept has no (non-nil) fact for the period."""


class AmbiguousFactError(AuditDataError):
    """The concept has facts for the period that disagree beyond their decimals."""


class AmbiguousCalculationError(AuditDataError):
    """The concept's complete summations in different roles give different values."""


class CalcCycleError(AuditDataError):
    """The calculation network has a cycle through the concept."""


def parse_period(period: str) -> tuple[str | None, str]:
    """``"2023-09-30"`` -> ``(None, "2023-09-30")``; ``"2022-09-25 to 2023-09-30"`` -> ``(start, end)``.

    Raises:
        ValueError: Not one of the two forms.
    """
    match = _PERIOD.match(str(period))
    if not match:
        raise ValueError(f"period {period!r} is neither YYYY-MM-DD nor 'YYYY-MM-DD to YYYY-MM-DD'")
    first, second = match.groups()
    return (None, first) if second is None else (first, second)


@dataclass(frozen=True)
class Term:
    """One child of a summation: ``weight * value``; ``source`` is ``"fact"`` or ``"calculated"``."""

    concept: str
    weight: float
    value: float
    decimals: int | None
    source: str


@dataclass(frozen=True)
class Calculation:
    """How a calculated value was obtained.

    Attributes:
        value: The calculated value.
        method: ``"sum"`` (from the children of ``role``) or ``"leaf"`` (the reported value after the sign rule).
        role: The calculation role used (None for a leaf).
        terms: The children that contributed (a sum).
        missing: Children of ``role`` with no value in the period (contributed nothing).
        sign_rule: For a leaf: why the sign was or was not normalised.
        alternatives: ``role -> sum`` for other usable roles.
        decimals: The least precise decimals among the facts used (None = all exact).
    """

    value: float
    method: str
    role: str | None = None
    terms: tuple[Term, ...] = ()
    missing: tuple[str, ...] = ()
    sign_rule: str = ""
    alternatives: dict[str, float] = field(default_factory=dict)
    decimals: int | None = None

    def record(self) -> dict[str, Any]:
        return {"value": self.value, "method": self.method, "role": self.role,
                "terms": [t.__dict__ for t in self.terms], "missing": list(self.missing),
                "sign_rule": self.sign_rule, "alternatives": dict(self.alternatives), "decimals": self.decimals}


def _min_decimals(values: list[int | None]) -> int | None:
    finite = [d for d in values if d is not None]
    return min(finite) if finite else None


class FilingFacts:
    """Fast lookups of a filing's numeric facts by (concept, period, dimensions)."""

    def __init__(self, filing: Filing) -> None:
        self.filing = filing
        self._index: dict[tuple[str, str | None, str, tuple], list[Fact]] = {}
        for fact in filing.facts:
            if fact.numeric:
                ctx = filing.contexts[fact.context]
                self._index.setdefault((fact.concept, ctx.start, ctx.end, ctx.dimensions), []).append(fact)
        self._periods = {(c.start, c.end) for c in filing.contexts.values() if not c.dimensions}

    @classmethod
    def of(cls, filing: Filing) -> FilingFacts:
        """The filing's lookups, built once per filing (a filing never changes; an edited one is a new object)."""
        cached = filing.__dict__.get("_facts_lookup")
        if cached is None:
            origin = filing.edited_from()
            cached = cls(filing) if origin is None else cls.of(origin[0])._swapped(filing, origin[1])
            object.__setattr__(filing, "_facts_lookup", cached)
        return cached

    def _swapped(self, filing: Filing, swaps: tuple[tuple[Fact, Fact], ...]) -> FilingFacts:
        """These lookups for ``filing``, a copy of this one's filing with ``swaps`` (old fact, new fact) made: the
        same index a build over every fact gives, in the same order."""
        out = object.__new__(FilingFacts)
        out.filing, out._periods, out._index = filing, self._periods, dict(self._index)
        for old, new in swaps:
            if old.numeric:
                ctx = filing.contexts[old.context]
                key = (old.concept, ctx.start, ctx.end, ctx.dimensions)
                out._index[key] = [new if f is old else f for f in out._index[key]]
        return out

    def has_period(self, start: str | None, end: str) -> bool:
        return (start, end) in self._periods

    def facts(self, concept: str, start: str | None, end: str, dims: tuple = ()) -> list[Fact]:
        return list(self._index.get((concept, start, end, dims), ()))

    def value(self, concept: str, start: str | None, end: str, dims: tuple = (), unit: str | None = None) -> Fact | None:
        """The concept's single value in the period (non-nil facts that agree), or None.

        Args:
            unit: Only facts in this unit (default: any, but they must all share one).

        Raises:
            AmbiguousFactError: Facts that disagree beyond their decimals, or (no ``unit``
                given) facts in several units.
        """
        facts = [f for f in self.facts(concept, start, end, dims)
                 if f.value is not None and (unit is None or f.unit == unit)]
        if not facts:
            return None
        units = sorted({str(f.unit) for f in facts})
        if len(units) > 1:
            raise AmbiguousFactError(f"{concept} is reported in several units ({', '.join(units)}) for "
                                     f"{_period_text(start, end)}; name the unit")
        first = facts[0]
        for other in facts[1:]:
            tol = half_unit(first.decimals, first.value or 0) + half_unit(other.decimals, other.value or 0)
            if abs(first.value - other.value) > tol:  # type: ignore[operator]
                raise AmbiguousFactError(
                    f"{concept} has facts that disagree for {_period_text(start, end)}: "
                    f"{first.text} ({first.context}) vs {other.text} ({other.context}), both in {first.unit}")
        return min(facts, key=lambda f: -(f.decimals if f.decimals is not None else 99))


def _period_text(start: str | None, end: str) -> str:
    return end if start is None else f"{start} to {end}"


def balance_implied_weight(parent_balance: str | None, child_balance: str | None) -> float | None:
    """+1 when parent and child share a balance type, -1 when opposite, None when either is unknown."""
    if parent_balance not in ("debit", "credit") or child_balance not in ("debit", "credit"):
        return None
    return 1.0 if parent_balance == child_balance else -1.0


def non_negative(filing: Filing, concept: str) -> tuple[bool, str]:
    """Whether the sign rule treats ``concept`` as non-negative in this filing, and why (see the module doc)."""
    info = filing.concepts.get(concept)
    if info is None:
        return False, "not a concept of the filing"
    local = concept.split(":", 1)[-1]
    marker = next((m for m in SIGNED_MARKERS if m in local), None)
    if marker:
        return False, f"name contains the signed-quantity marker {marker!r}"
    if info.balance not in ("debit", "credit"):
        return False, "no balance type (not monetary, or unknown)"
    units = {filing.units[f.unit].monetary for f in filing.facts_of(concept) if f.unit}
    if units != {True}:
        return False, "not reported in a currency"
    for role, parents in filing.parents(concept).items():
        for parent, weight in parents:
            implied = balance_implied_weight(filing.concepts.get(parent, info).balance, info.balance)
            if implied is not None and weight == implied:
                return True, (f"{info.balance} balance, summed into {parent} with weight {weight:+g} as the "
                              f"balances imply ({role.rsplit('/', 1)[-1]}): the sign lives in the weight")
    return False, "no calculation arc with a balance-implied weight"


class Calculator:
    """Reported and calculated values of one filing, by the module's rules."""

    def __init__(self, filing: Filing) -> None:
        self.filing = filing
        self.lookup = FilingFacts.of(filing)
        self._incomplete: tuple[str, ...] = ()
        self._children: dict[str, dict[str, list[tuple[str, float]]]] = {}
        for arc in filing.calculation:
            self._children.setdefault(arc.parent, {}).setdefault(arc.role, []).append((arc.child, arc.weight))

    def children(self, concept: str) -> dict[str, list[tuple[str, float]]]:
        return self._children.get(concept, {})

    def check_period(self, concept: str, period: str) -> tuple[str | None, str]:
        """Parse ``period`` and check the concept and a matching context exist.

        Raises:
            ValueError: A malformed period.
            ConceptNotFoundError, NoContextError: As named.
        """
        start, end = parse_period(period)
        if concept not in self.filing.concepts:
            raise ConceptNotFoundError(f"{concept} does not appear in filing {self.filing.bundle}")
        if not self.lookup.has_period(start, end):
            raise NoContextError(f"filing {self.filing.bundle} has no non-dimensional context for {period}")
        return start, end

    def reported(self, concept: str, period: str, unit: str | None = None) -> Fact:
        """The concept's reported fact for the period (in ``unit`` when given).

        Raises:
            ConceptNotFoundError, NoContextError, NoFactError, AmbiguousFactError: As named.
        """
        start, end = self.check_period(concept, period)
        fact = self.lookup.value(concept, start, end, (), unit)
        if fact is None:
            nil = self.lookup.facts(concept, start, end)
            why = "only a nil fact" if nil else "no fact"
            raise NoFactError(f"{concept} has {why} for {period} in filing {self.filing.bundle}")
        return fact

    def calculated(self, concept: str, period: str, *, unit: str | None = None, role: str | None = None) -> Calculation:
        """The calculated value (see the module docstring).

        Raises:
            CalcCycleError: A cycle through the concept.
            AmbiguousCalculationError: Complete summations in two roles disagree.
            AmbiguousFactError: No ``unit`` given and the concept is reported in several units.
            NoFactError: A leaf without a reported value.
        """
        start, end = self.check_period(concept, period)
        if unit is None:
            fact = self.lookup.value(concept, start, end)
            unit = fact.unit if fact else None
        self._incomplete = ()
        calc = self._sum(concept, start, end, unit, role, (concept,))
        if calc is not None:
            tol = half_unit(calc.decimals, calc.value)
            clash = {r: v for r, v in calc.alternatives.items() if abs(v - calc.value) > 2 * tol}
            if clash:
                raise AmbiguousCalculationError(
                    f"{concept} sums to {calc.value:,.0f} in {calc.role} but to "
                    + ", ".join(f"{v:,.0f} in {r}" for r, v in clash.items()) + f" for {period}")
            return calc
        incomplete = self._incomplete
        fact = self.reported(concept, period, unit)
        assert fact.value is not None
        keep, why = non_negative(self.filing, concept)
        value = abs(fact.value) if keep else fact.value
        rule = f"non-negative: {why}" if keep else f"sign kept: {why}"
        return Calculation(value, "leaf", sign_rule=rule, missing=incomplete, decimals=fact.decimals)

    def _value(self, concept: str, start: str | None, end: str, unit: str | None,
               path: tuple[str, ...], dims: tuple = ()) -> tuple[float, int | None, str] | None:
        fact = self.lookup.value(concept, start, end, dims, unit)
        if fact is not None:
            return float(fact.value), fact.decimals, "fact"  # type: ignore[arg-type]
        calc = self._sum(concept, start, end, unit, None, path, dims)
        if calc is None:
            return None
        return calc.value, calc.decimals, "calculated"

    def _sum(self, concept: str, start: str | None, end: str, unit: str | None, only_role: str | None,
             path: tuple[str, ...], dims: tuple = ()) -> Calculation | None:
        roles = self.children(concept)
        if only_role is not None:
            roles = {only_role: roles[only_role]} if only_role in roles else {}
        results: list[Calculation] = []
        incomplete: list[str] = []
        for role, kids in roles.items():
            terms: list[Term] = []
            missing: list[str] = []
            for child, weight in kids:
                if child in path:
                    raise CalcCycleError(
                        f"calculation cycle in {self.filing.bundle}: {' -> '.join((*path, child))}")
                got = self._value(child, start, end, unit, (*path, child), dims)
                if got is None:
                    missing.append(child)
                else:
                    terms.append(Term(child, weight, got[0], got[1], got[2]))
            if missing:
                incomplete.append(f"{role}: no value for {', '.join(missing)}")
                continue
            total = sum(t.weight * t.value for t in terms)
            results.append(Calculation(total, "sum", role, tuple(terms),
                                       decimals=_min_decimals([t.decimals for t in terms])))
        if not results:
            self._incomplete = tuple(incomplete)
            return None
        best = results[0]  # the first complete role in linkbase order
        others = {c.role: c.value for c in results[1:] if c.role is not None}
        return Calculation(best.value, best.method, best.role, best.terms, (), alternatives=others,
                           decimals=best.decimals)


@dataclass(frozen=True)
class CalcCheck:
    """One summation checked in one context: the parent's fact against its children's values."""

    role: str
    parent: str
    context: str
    period: str
    dimensions: tuple[tuple[str, str], ...]
    reported: float
    computed: float
    tolerance: float
    children: int

    @property
    def consistent(self) -> bool:
        return abs(self.reported - self.computed) <= self.tolerance

    def record(self) -> dict[str, Any]:
        return {"role": self.role, "parent": self.parent, "context": self.context, "period": self.period,
                "dimensions": [list(d) for d in self.dimensions], "reported": self.reported,
                "computed": self.computed, "tolerance": self.tolerance, "consistent": self.consistent}


def check_network(filing: Filing) -> list[CalcCheck]:
    """Every complete summation of the filing, checked in every context (dimensional ones too).

    A summation (role, parent) is checked in a context where the parent has a value
    and every child has one in the same unit — a reported fact or, failing that,
    its own complete sum (the calculated-value rules). Consistent when the
    intervals overlap: ``|parent - sum| <= half-unit(parent) + sum(|w| * half-unit(child))``.
    Summations with a child lacking any value are not checked (they would test
    the missing line, not the arithmetic).
    """
    calc = Calculator(filing)
    keys: dict[tuple[str | None, str, tuple[tuple[str, str], ...]], Context] = {}
    for ctx in filing.contexts.values():
        keys.setdefault((ctx.start, ctx.end, ctx.dimensions), ctx)
    out: list[CalcCheck] = []
    for parent, roles in calc._children.items():
        for (start, end, dims), ctx in keys.items():
            for unit in {f.unit for f in calc.lookup.facts(parent, start, end, dims)}:
                try:
                    top = calc.lookup.value(parent, start, end, dims, unit)
                except AmbiguousFactError:
                    continue  # listed by check_duplicates
                if top is not None:
                    _check(calc, out, parent, roles, top, start, end, dims, ctx)
    return out


def _check(calc: Calculator, out: list[CalcCheck], parent: str, roles: dict, top: Fact, start: str | None,
           end: str, dims: tuple, ctx: Context) -> None:
    for role in roles:
        try:
            got = calc._sum(parent, start, end, top.unit, role, (parent,), dims)
        except (AmbiguousFactError, CalcCycleError):
            continue
        if got is None:
            continue
        tol = half_unit(top.decimals, float(top.value)) + sum(  # type: ignore[arg-type]
            abs(t.weight) * half_unit(t.decimals, t.value) for t in got.terms)
        out.append(CalcCheck(role, parent, ctx.id, _period_text(start, end), dims, float(top.value),  # type: ignore[arg-type]
                             got.value, tol, len(got.terms)))


def calc_cycles(filing: Filing) -> list[tuple[str, ...]]:
    """Cycles of the calculation network (all roles together), each as a concept path."""
    graph: dict[str, list[str]] = {}
    for arc in filing.calculation:
        graph.setdefault(arc.parent, []).append(arc.child)
    cycles: list[tuple[str, ...]] = []
    state: dict[str, int] = {}

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in graph.get(node, ()):
            if state.get(nxt) == 1:
                cycles.append((*stack[stack.index(nxt):], nxt))
            elif nxt not in state:
                visit(nxt, stack)
        stack.pop()
        state[node] = 2

    for node in list(graph):
        if node not in state:
            visit(node, [])
    return cycles


def check_duplicates(filing: Filing) -> list[str]:
    """Facts of one concept, context key and unit that disagree beyond their decimals (one line each)."""
    lookup = FilingFacts.of(filing)
    problems = []
    for (concept, start, end, dims), facts in lookup._index.items():
        for unit in sorted({str(f.unit) for f in facts}):
            try:
                lookup.value(concept, start, end, dims, unit)
            except AmbiguousFactError as exc:
                problems.append(str(exc))
    return problems
