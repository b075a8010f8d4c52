"""Audit instances: generated from the shipped filings (with known injected errors) or read from
HERCULEAN-format task files, each with its ground truth computed in code.

An instance is (filing, concept, period) and optionally one injected error. Its
*truth* is :func:`ground_truth` on the filing as the agent sees it (the injected
copy): the reported value and the calculated value by the rules of
:mod:`finenvs.xbrl.calc`.

**Generated instances** (:func:`generate`). ``seed`` fixes everything: the kind
is ``INJECTIONS[seed % 5]``, the bundle ``bundles[(seed // 5) % len(bundles)]``,
and ``numpy.random.default_rng(seed)`` picks the candidate and the size of the
error. Candidates come from the filing as filed and are split by a hash of
(bundle, concept, period): one in four is an eval candidate, the rest train, so
train and eval never share a (concept, period). :data:`EVAL_SEEDS` (0..99) are
the eval split: 20 instances of each kind.

Kinds (what is injected, and the truth that follows):

============== ============================================== =============================================
kind           injected                                       truth
============== ============================================== =============================================
none           nothing (the filing is consistent there)       reported = calculated
sign_flip      a non-negative leaf's fact negated             reported = -v, calculated = v
parent_mismatch a summation parent's fact moved 2-15%         reported = v + d, calculated = sum of children
child_scaled   one child's fact multiplied by 1000            reported = v, calculated = v + 999 * w * c
child_duplicated the child's calculation arc listed twice     reported = v, calculated = v + w * c
============== ============================================== =============================================

Summation candidates are parents with exactly one complete role in the period,
every child a reported fact, the filing consistent there; every injected
difference is at least 20 half-units of the concept's decimals, so no answer
within tolerance can mistake one for the other.
"""

from __future__ import annotations

import ast
import csv
import dataclasses
import functools
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from finenvs.errors import DataFileError, user_file
from finenvs.scoring.audit import AnswerFormatError, AuditTruth, parse_number
from finenvs.xbrl.calc import AuditDataError, Calculation, Calculator, non_negative
from finenvs.xbrl.corpus import Corpus
from finenvs.xbrl.model import CalcArc, Fact, Filing, half_unit

INJECTIONS = ("none", "sign_flip", "parent_mismatch", "child_scaled", "child_duplicated")
#: The eval split: these seeds, in this order.
EVAL_SEEDS = tuple(range(100))
#: Smallest injected difference, in half-units of the concept fact's decimals.
MIN_GAP_HALF_UNITS = 20
QUERY = ("Please audit the value of {concept} for {period} in the {form} filing released by {ticker} on {issued}. "
         "What's the reported value? What's the actual value calculated from the relevant linkbases and "
         "US-GAAP taxonomy?")
ANSWER_FORMAT = ('Answer with one JSON object: {"reported_value": <number>, "calculated_value": <number>} '
                 "in the fact's unit (e.g. USD, not millions); strings like \"-14,721,000\" are read too.")


@dataclass(frozen=True)
class Injection:
    """What was changed in the filing for an instance (``kind="none"``: nothing).

    Attributes:
        kind: One of :data:`INJECTIONS`.
        concept: The concept whose fact was changed (or the parent of a duplicated arc).
        context: Context id of the changed fact ("" for an arc).
        before: The fact's value as filed (None for an arc).
        after: The value injected (None for an arc).
        role: Calculation role of the duplicated arc.
        child: The duplicated child.
        weight: Its weight.
    """

    kind: str = "none"
    concept: str = ""
    context: str = ""
    before: float | None = None
    after: float | None = None
    role: str = ""
    child: str = ""
    weight: float = 0.0

    def describe(self) -> str:
        if self.kind == "none":
            return "nothing injected"
        if self.kind == "child_duplicated":
            return f"calculation arc {self.concept} -> {self.child} (weight {self.weight:+g}) listed twice"
        return f"{self.concept} in {self.context}: {self.before:,.0f} -> {self.after:,.0f} ({self.kind})"

    def apply(self, filing: Filing) -> Filing:
        """The filing with this injection (the same object when nothing is injected)."""
        if self.kind == "none":
            return filing
        if self.kind == "child_duplicated":
            return filing.with_extra_arc(CalcArc(self.role, self.concept, self.child, self.weight, 999.0),
                                         self.describe())
        fact = next((f for f in filing.facts_of(self.concept) if f.context == self.context and f.value is not None),
                    None)
        if fact is None:
            raise AuditDataError(f"cannot inject: {self.concept} has no fact in context {self.context}")
        return filing.with_fact_value(fact, float(self.after), self.describe())  # type: ignore[arg-type]


@dataclass(frozen=True)
class AuditInstance:
    """One audit task.

    Attributes:
        id: ``gen-<seed>`` for generated instances, the file's id otherwise.
        bundle: The bundle (folder) name in the corpus.
        ticker, form, issued: As the task text states them (``issued`` is the release date).
        concept: ``prefix:LocalName``.
        period: ``YYYY-MM-DD`` or ``YYYY-MM-DD to YYYY-MM-DD``.
        query: The task text.
        source: ``"generated"`` or ``"herculean"``.
        seed: The generation seed (None for file tasks).
        split: ``"eval"``, ``"train"`` or ``"file"``.
        injection: What was changed.
        published: A task file's own answer (``{"extracted_value", "calculated_value"}``), kept for comparison.
        unanswerable: Why no ground truth exists ("" when it does); such instances are excluded from runs.
    """

    id: str
    bundle: str
    ticker: str
    form: str
    issued: str
    concept: str
    period: str
    query: str
    source: str = "generated"
    seed: int | None = None
    split: str = "eval"
    injection: Injection = Injection()
    published: dict[str, str] | None = None
    unanswerable: str = ""

    def record(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out["injection"] = dataclasses.asdict(self.injection)
        return out


@dataclass(frozen=True)
class GroundTruth:
    """An instance's truth and how it was computed."""

    truth: AuditTruth
    fact: Fact
    calculation: Calculation

    def record(self) -> dict[str, Any]:
        return {**self.truth.record(), "fact": dataclasses.asdict(self.fact),
                "calculation": self.calculation.record()}


def ground_truth(filing: Filing, concept: str, period: str, *, calculator: Calculator | None = None) -> GroundTruth:
    """Reported and calculated value of ``concept`` for ``period`` (rules: :mod:`finenvs.xbrl.calc`).

    Args:
        calculator: A :class:`Calculator` of ``filing`` to reuse (its fact index is built once).

    Raises:
        AuditDataError: No such concept, context or fact; disagreeing duplicates; a cycle;
            disagreeing complete summations.
        ValueError: A malformed period.
    """
    calc = calculator if calculator is not None else Calculator(filing)
    fact = calc.reported(concept, period)
    calculation = calc.calculated(concept, period, unit=fact.unit)
    tol = half_unit(fact.decimals, float(fact.value))  # type: ignore[arg-type]
    truth = AuditTruth(float(fact.value), float(calculation.value), tol, tol)  # type: ignore[arg-type]
    return GroundTruth(truth, fact, calculation)


def query_text(concept: str, period: str, form: str, ticker: str, issued: str) -> str:
    """The task text, in the HERCULEAN wording."""
    return QUERY.format(concept=concept, period=period, form=form.lower().replace("-", ""), ticker=ticker.lower(),
                        issued=issued)


# ---------------------------------------------------------------------- candidates
@dataclass(frozen=True)
class _Sum:
    parent: str
    period: str
    context: str
    role: str
    value: float
    decimals: int | None
    children: tuple[tuple[str, float, float, str], ...]  # (child, weight, value, context)


@dataclass(frozen=True)
class _Leaf:
    concept: str
    period: str
    context: str
    value: float
    decimals: int | None
    non_negative: bool


def _is_eval(bundle: str, concept: str, period: str) -> bool:
    digest = hashlib.sha256(f"{bundle}|{concept}|{period}".encode()).digest()
    return digest[0] % 4 == 0


_CANDIDATES: dict[tuple[str, str], dict[str, tuple[list[_Sum], list[_Leaf]]]] = {}


def _candidates(corpus: Corpus, bundle: str) -> dict[str, tuple[list[_Sum], list[_Leaf]]]:
    """``{"eval"|"train": (summations, leaves)}`` of a bundle as filed (cached per corpus folder)."""
    key = (str(corpus.root), bundle)
    if key not in _CANDIDATES:
        _CANDIDATES[key] = _find_candidates(corpus.filing(bundle))
    return _CANDIDATES[key]


def _find_candidates(filing: Filing) -> dict[str, tuple[list[_Sum], list[_Leaf]]]:
    calc = Calculator(filing)
    sums: dict[str, list[_Sum]] = {"eval": [], "train": []}
    leaves: dict[str, list[_Leaf]] = {"eval": [], "train": []}
    seen: set[tuple[str, str]] = set()
    for fact in filing.facts:
        ctx = filing.contexts[fact.context]
        if ctx.dimensions or fact.value is None or fact.unit is None or (fact.concept, ctx.period) in seen:
            continue
        seen.add((fact.concept, ctx.period))
        if fact.unit and not filing.units[fact.unit].monetary:
            continue
        split = "eval" if _is_eval(filing.bundle, fact.concept, ctx.period) else "train"
        try:
            truth = ground_truth(filing, fact.concept, ctx.period, calculator=calc)
        except (AuditDataError, ValueError):
            continue
        tol = truth.truth.reported_tolerance
        if abs(truth.truth.reported_value - truth.truth.calculated_value) > tol:
            continue  # the filing as filed is not consistent here: no clean candidate
        c = truth.calculation
        rep, reported = truth.fact, truth.truth.reported_value
        if c.method == "sum":
            roles = calc.children(fact.concept)
            if c.alternatives or len(roles) == 0 or any(t.source != "fact" for t in c.terms):
                continue
            kids = []
            for term in c.terms:
                child_fact = calc.lookup.value(term.concept, ctx.start, ctx.end)
                kids.append((term.concept, term.weight, term.value, child_fact.context if child_fact else ""))
            sums[split].append(_Sum(fact.concept, ctx.period, rep.context, c.role or "", reported,
                                    rep.decimals, tuple(kids)))
        else:
            nonneg = non_negative(filing, fact.concept)[0]
            leaves[split].append(_Leaf(fact.concept, ctx.period, rep.context, reported, rep.decimals,
                                       nonneg))
    return {s: (sums[s], leaves[s]) for s in ("eval", "train")}


def _gap_ok(delta: float, decimals: int | None, value: float) -> bool:
    return abs(delta) >= MIN_GAP_HALF_UNITS * half_unit(decimals, value)


def generate(seed: int, corpus: Corpus | None = None, *, split: str | None = None) -> AuditInstance:
    """The generated instance of ``seed`` (see the module docstring).

    Args:
        seed: Any non-negative integer; :data:`EVAL_SEEDS` are the eval split.
        corpus: Bundles to draw from (default: the shipped corpus).
        split: ``"eval"`` or ``"train"`` candidates (default: eval for :data:`EVAL_SEEDS`, else train).

    Raises:
        ValueError: A negative seed or an unknown split.
        AuditDataError: No candidate of the kind in the chosen bundle (a user corpus too small).
    """
    from finenvs.xbrl.corpus import shipped_corpus

    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed={seed!r} must be a non-negative integer")
    seed = int(seed)
    corpus = corpus or shipped_corpus()
    split = split or ("eval" if seed in EVAL_SEEDS else "train")
    if split not in ("eval", "train"):
        raise ValueError(f"split={split!r} must be 'eval' or 'train'")
    kind = INJECTIONS[seed % len(INJECTIONS)]
    bundle = corpus.names[(seed // len(INJECTIONS)) % len(corpus.names)]
    filing = corpus.filing(bundle)
    rng = np.random.default_rng(seed)
    sums, leaves = _candidates(corpus, bundle)[split]
    injection: Injection
    if kind == "none":
        pool: list[Any] = [*sums, *leaves]
        if not pool:
            raise AuditDataError(f"{bundle}: no {split} candidates")
        pick = pool[int(rng.integers(len(pool)))]
        concept, period = (pick.parent, pick.period) if isinstance(pick, _Sum) else (pick.concept, pick.period)
        injection = Injection()
    elif kind == "sign_flip":
        pool = [x for x in leaves if x.non_negative and _gap_ok(2 * x.value, x.decimals, x.value)]
        if not pool:
            raise AuditDataError(f"{bundle}: no non-negative leaf to flip in the {split} candidates")
        leaf = pool[int(rng.integers(len(pool)))]
        concept, period = leaf.concept, leaf.period
        injection = Injection(kind, leaf.concept, leaf.context, leaf.value, -leaf.value)
    elif kind == "parent_mismatch":
        if not sums:
            raise AuditDataError(f"{bundle}: no summation in the {split} candidates")
        top = sums[int(rng.integers(len(sums)))]
        concept, period = top.parent, top.period
        unit = 10.0 ** (-top.decimals) if top.decimals is not None else 1.0
        size = max(abs(top.value) * float(rng.uniform(0.02, 0.15)), MIN_GAP_HALF_UNITS * 0.5 * unit)
        delta = float(np.ceil(size / unit) * unit) * (1 if rng.random() < 0.5 else -1)
        injection = Injection(kind, top.parent, top.context, top.value, top.value + delta)
    else:
        need = 999.0 if kind == "child_scaled" else 1.0
        pool = [(s, k) for s in sums for k in s.children
                if k[3] and _gap_ok(need * k[1] * k[2], s.decimals, s.value)]
        if not pool:
            raise AuditDataError(f"{bundle}: no summation child large enough for {kind} in the {split} candidates")
        top, (child, weight, value, context) = pool[int(rng.integers(len(pool)))]
        concept, period = top.parent, top.period
        if kind == "child_scaled":
            injection = Injection(kind, child, context, value, value * 1000.0)
        else:
            injection = Injection(kind, top.parent, role=top.role, child=child, weight=weight)
    return AuditInstance(
        id=f"gen-{seed}", bundle=bundle, ticker=filing.ticker, form=filing.form, issued=filing.filed,
        concept=concept, period=period, query=query_text(concept, period, filing.form, filing.ticker, filing.filed),
        source="generated", seed=seed, split=split, injection=injection)


@functools.lru_cache(maxsize=4)
def eval_instances(corpus: Corpus | None = None) -> tuple[AuditInstance, ...]:
    """The eval split: :func:`generate` over :data:`EVAL_SEEDS`."""
    return tuple(generate(s, corpus) for s in EVAL_SEEDS)


def instance_filing(instance: AuditInstance, corpus: Corpus | None = None) -> Filing:
    """The filing the agent audits: the bundle with the instance's injection applied."""
    from finenvs.xbrl.corpus import shipped_corpus

    corpus = corpus or shipped_corpus()
    return instance.injection.apply(corpus.filing(instance.bundle))


# ---------------------------------------------------------------------- HERCULEAN task files
HERCULEAN_COLUMNS = ("id", "query", "filing_name", "ticker", "issue_time", "usgaap_concept", "period", "gt_answer")


def _published(raw: str, where: str) -> dict[str, str] | None:
    if not raw.strip():
        return None
    try:
        value = ast.literal_eval(raw)
    except (ValueError, SyntaxError):
        raise DataFileError(f"{where}: gt_answer {raw[:60]!r} is not a dict literal") from None
    if not isinstance(value, dict):
        raise DataFileError(f"{where}: gt_answer is a {type(value).__name__}, not a dict")
    return {str(k): str(v) for k, v in value.items()}


def load_herculean_tasks(path: str | Path, corpus: Corpus) -> list[AuditInstance]:
    """Read a HERCULEAN/FinAuditing audit task file (CSV, the ``audit_tasks`` format) against ``corpus``.

    Columns: ``id, query, filing_name (10k/10q), ticker, issue_time, usgaap_concept,
    period, gt_answer``. Each row's filing is the corpus bundle of that ticker and
    form whose period end (or, failing that, release date) is ``issue_time``. A row
    whose bundle is absent, or whose concept/period has no ground truth in it, is
    returned with ``unanswerable`` saying why (and is excluded from runs); the
    published answer is kept in ``published`` for comparison, never used as truth.

    Raises:
        DataFileError: The file is missing, is not CSV with these columns, or a gt_answer is malformed.
    """
    path = user_file(path, "task file")
    with open(path, newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        missing = [c for c in HERCULEAN_COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise DataFileError(f"{path}: missing column(s) {missing}; expected {list(HERCULEAN_COLUMNS)}")
        rows = list(reader)
    out = []
    for n, row in enumerate(rows, start=2):
        where = f"{Path(path).name}:{n} ({row.get('id')})"
        short = [c for c in HERCULEAN_COLUMNS if row.get(c) is None]
        if short:
            raise DataFileError(f"{where}: the row has no value for {short} (fewer fields than the header)")
        ticker, form, issued = row["ticker"].strip(), row["filing_name"].strip(), row["issue_time"].strip()
        concept, period = row["usgaap_concept"].strip(), row["period"].strip()
        published = _published(row["gt_answer"], where)
        matches = [f for f in corpus.find(ticker, form) if f.period_end == issued] or [
            f for f in corpus.find(ticker, form) if f.filed == issued]
        reason = ""
        bundle = ""
        if not matches:
            reason = f"no bundle for {ticker} {form} issued {issued} in {corpus.root}"
        elif len(matches) > 1:
            reason = f"several bundles match {ticker} {form} {issued}: {[f.bundle for f in matches]}"
        else:
            bundle = matches[0].bundle
            try:
                ground_truth(matches[0], concept, period)
            except (AuditDataError, ValueError) as exc:
                reason = str(exc)
        if bundle and matches[0].filed:
            issued = matches[0].filed  # the audit date is the release date, whatever the file calls issue_time
        out.append(AuditInstance(
            id=row["id"], bundle=bundle, ticker=ticker.upper(), form=form, issued=issued, concept=concept,
            period=period, query=row["query"] or query_text(concept, period, form, ticker, issued), source="herculean",
            split="file", published=published, unanswerable=reason))
    return out


def published_truth(instance: AuditInstance) -> tuple[float, float] | None:
    """A task file's published (extracted, calculated) answer as numbers (None when absent or unreadable)."""
    if not instance.published:
        return None
    try:
        return (parse_number(instance.published.get("extracted_value")),
                parse_number(instance.published.get("calculated_value")))
    except AnswerFormatError:
        return None
