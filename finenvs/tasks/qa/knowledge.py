"""The Knowledge Retrieval bank: questions about the shipped data, asked at a date, answered from it.

Every item is generated from what is visible at its ``as_of`` date and nothing
else: prices through the catalog's :class:`~finenvs.data.asof.AsOfView`, filing
dates through the same view (a filing is public the day after it is filed),
XBRL facts from the filings released before ``as_of``
(:class:`XbrlAsOf`). The random choices (symbol, dates, filing, metric) are
drawn from the visible data only, so changing anything after ``as_of`` changes
no question and no answer.

Topics:

- ``close_price``: a symbol's adjusted close on a date (relative tolerance 0.1%).
- ``period_return``: the return between two closes (absolute tolerance 0.05 points).
- ``max_close``: the day of a calendar month with the highest close, and that close.
- ``xbrl_metric``: a ratio or amount computed from a filing's XBRL facts: gross,
  operating and net margin, revenue growth on the same period a year earlier,
  diluted EPS (net income / diluted weighted shares; tolerance 1% or half a cent,
  so the EPS the filing reports to the cent is right too) and EBITDA (operating income + depreciation,
  depletion and amortisation — FAB++'s SYN_QUAN_0001 asked it of AAPL).
- ``filing_order``: order three filings (each company's latest 10-K or 10-Q
  public at ``as_of``) by filing date.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from finenvs.data.asof import AsOfView, LookAheadCounter
from finenvs.scoring.qa import Part
from finenvs.tasks.qa.items import QAItem
from finenvs.xbrl.calc import FilingFacts
from finenvs.xbrl.corpus import Corpus
from finenvs.xbrl.model import Filing

TOPICS = ("close_price", "period_return", "max_close", "xbrl_metric", "filing_order")
#: Default date the Knowledge bank is asked at: the last day of the eval split.
DEFAULT_AS_OF = "2026-03-31"
#: How far back price questions look (trading days).
PRICE_HORIZON = 250

#: Revenue concepts in order of preference (total revenue first).
REVENUE = ("us-gaap:Revenues", "us-gaap:RevenueFromContractWithCustomerExcludingAssessedTax", "us-gaap:SalesRevenueNet")
DDA = ("us-gaap:DepreciationDepletionAndAmortization",)
#: metric -> (label, kind, question wording)
METRICS: dict[str, tuple[str, str, str]] = {
    "gross_margin": ("gross margin", "percent", "gross margin (gross profit / revenue)"),
    "operating_margin": ("operating margin", "percent", "operating margin (operating income / revenue)"),
    "net_margin": ("net margin", "percent", "net margin (net income / revenue)"),
    "revenue_growth": ("revenue growth", "percent",
                       "revenue growth over the same period one year earlier (both as reported in this filing)"),
    "eps_diluted": ("diluted EPS", "number", "diluted EPS (net income / diluted weighted-average shares), in $"),
    "ebitda": ("EBITDA", "number", "EBITDA (operating income + depreciation, depletion and amortization), in $"),
}


# ----------------------------------------------------------------------------- XBRL under the date lock
@dataclass
class XbrlAsOf:
    """XBRL filings released before ``as_of`` (the same interface the audit tools read).

    A filing is public after the close of its release day (:mod:`finenvs.data.documents`:
    17:30 New York, after the 16:00 close), so a question asked at the close of ``as_of``
    sees the filings released on earlier days.

    ``get`` of a filing released later answers exactly like one the corpus does
    not hold (the same error, naming only visible filings) and is a look-ahead
    attempt, counted in ``counter``. There is no episode filing: ``bundle`` is
    None and ``get`` needs a bundle name.
    """

    corpus: Corpus
    as_of: str
    counter: LookAheadCounter = field(default_factory=LookAheadCounter)
    bundle: str | None = None
    filing: Filing | None = None

    def visible(self) -> list[str]:
        return [n for n in self.corpus.names if (self.corpus.filing(n).filed or "9999") < self.as_of]

    def get(self, bundle: str | None = None) -> Filing:
        if bundle is None:
            raise ValueError("name the filing's bundle (resolve_filing lists the filings released by the as-of date)")
        visible = self.visible()
        if bundle not in visible:  # one answer for unknown and later bundles; it names visible filings only
            if bundle in self.corpus.names:
                self.counter.record(f"xbrl({bundle})", np.datetime64(self.as_of),
                                    np.datetime64(self.corpus.filing(bundle).filed or "9999-12-31"))
            raise ValueError(f"the bundle argument names no filing released before {self.as_of}; filings released "
                             f"before then: {visible}")
        return self.corpus.filing(bundle)


class QAView:
    """The market view at ``as_of`` plus the XBRL filings released by then (one look-ahead counter)."""

    def __init__(self, market: AsOfView, corpus: Corpus) -> None:
        self.market = market
        self.xbrl = XbrlAsOf(corpus, str(market.as_of), market.counter)
        self.as_of = str(market.as_of)  # the tools print it: a string, like the audit view's
        self.bundle = None
        self.filing = None

    def __getattr__(self, name: str) -> Any:  # prices, filings, rate, counter, as_of ... of the market view
        return getattr(self.market, name)

    def with_documents(self, news: Any = None, filings: Any = None) -> QAView:
        return QAView(self.market.with_documents(news, filings), self.xbrl.corpus)

    def visible(self) -> list[str]:
        return self.xbrl.visible()

    def get(self, bundle: str | None = None) -> Filing:
        return self.xbrl.get(bundle)


# ----------------------------------------------------------------------------- XBRL metrics
def _days(start: str, end: str) -> int:
    return (_dt.date.fromisoformat(end) - _dt.date.fromisoformat(start)).days


def main_period(filing: Filing) -> tuple[str, str] | None:
    """The filing's own fiscal period: the year (10-K) or quarter (10-Q) ending at its period end."""
    lo, hi = (350, 380) if filing.form.upper().startswith("10-K") else (80, 100)
    spans = {(c.start, c.end) for c in filing.contexts.values()
             if not c.dimensions and c.start and c.end == filing.period_end and lo <= _days(c.start, c.end) <= hi}
    return max(spans, key=lambda s: _days(*s)) if spans else None


def prior_period(filing: Filing, period: tuple[str, str]) -> tuple[str, str] | None:
    """The period of the same length ending about a year before ``period`` (as the filing reports it)."""
    length = _days(*period)
    spans = {(c.start, c.end) for c in filing.contexts.values() if not c.dimensions and c.start and c.end}
    for start, end in sorted(spans):
        if 358 <= _days(end, period[1]) <= 373 and abs(_days(start, end) - length) <= 7:
            return start, end
    return None


def _value(facts: FilingFacts, concepts: tuple[str, ...], period: tuple[str, str]) -> tuple[str, float] | None:
    for concept in concepts:
        fact = facts.value(concept, period[0], period[1])
        if fact is not None and fact.value is not None:
            return concept, float(fact.value)
    return None


def metric_value(filing: Filing, metric: str, period: tuple[str, str]) -> tuple[float, dict[str, Any]] | None:
    """``metric`` of ``filing`` for ``period`` and the facts it used, or None when a fact is missing."""
    facts = FilingFacts.of(filing)
    used: dict[str, Any] = {}

    def get(name: str, concepts: tuple[str, ...], when: tuple[str, str] = period) -> float | None:
        got = _value(facts, concepts, when)
        if got is None:
            return None
        used[name] = {"concept": got[0], "period": f"{when[0]} to {when[1]}", "value": got[1]}
        return got[1]

    revenue = get("revenue", REVENUE) if metric != "ebitda" and metric != "eps_diluted" else None
    if metric in ("gross_margin", "operating_margin", "net_margin"):
        concept = {"gross_margin": "us-gaap:GrossProfit", "operating_margin": "us-gaap:OperatingIncomeLoss",
                   "net_margin": "us-gaap:NetIncomeLoss"}[metric]
        top = get("numerator", (concept,))
        if top is None or not revenue:
            return None
        return top / revenue, used
    if metric == "revenue_growth":
        prior = prior_period(filing, period)
        if prior is None or not revenue:
            return None
        concept = used["revenue"]["concept"]
        before = get("revenue_prior", (concept,), prior)
        if not before:
            return None
        return revenue / before - 1, used
    if metric == "eps_diluted":
        ni = get("net_income", ("us-gaap:NetIncomeLoss",))
        shares = get("diluted_shares", ("us-gaap:WeightedAverageNumberOfDilutedSharesOutstanding",))
        if ni is None or not shares:
            return None
        return ni / shares, used
    if metric == "ebitda":
        op = get("operating_income", ("us-gaap:OperatingIncomeLoss",))
        dda = get("dda", DDA)
        if op is None or dda is None:
            return None
        return op + dda, used
    raise KeyError(f"unknown metric {metric!r}; metrics: {sorted(METRICS)}")


# ----------------------------------------------------------------------------- generation
def _item(topic: str, seed: int, as_of: str, question: str, parts: tuple[Part, ...], inputs: dict[str, Any],
          steps: tuple[str, ...]) -> QAItem:
    return QAItem(id=f"knowledge/{topic}/{as_of}/{seed}", section="knowledge", topic=topic, seed=seed,
                  question=f"As of {as_of}: {question}", parts=parts, inputs=inputs, as_of=as_of, solution=steps)


def _days_of(view: AsOfView | QAView, symbol: str) -> np.ndarray:
    return view.calendar(symbol)[-PRICE_HORIZON:]


def _close_on(view: AsOfView | QAView, symbol: str, day: np.datetime64) -> float:
    bars = view.prices(symbol, start=day, end=day)
    return float(bars.close[-1])


def _close_price(rng: np.random.Generator, view: QAView, seed: int, as_of: str) -> QAItem | None:
    symbols = [s for s in view.symbols() if len(_days_of(view, s)) >= 30]
    if not symbols:
        return None
    symbol = symbols[int(rng.integers(len(symbols)))]
    days = _days_of(view, symbol)
    day = days[int(rng.integers(len(days)))]
    close = _close_on(view, symbol, day)
    d = str(day)
    return _item("close_price", seed, as_of, f"What was {symbol}'s closing price (split- and dividend-adjusted) on {d}?",
                 (Part("close", close, "number", "the adjusted close, $", rel_tol=0.001),),
                 {"symbol": symbol, "date": d}, (f"get_prices {symbol} {d}: close = {close:.4f}",))


def _period_return(rng: np.random.Generator, view: QAView, seed: int, as_of: str) -> QAItem | None:
    symbols = [s for s in view.symbols() if len(_days_of(view, s)) >= 30]
    if not symbols:
        return None
    symbol = symbols[int(rng.integers(len(symbols)))]
    days = _days_of(view, symbol)
    i = int(rng.integers(0, len(days) - 5))
    j = int(rng.integers(i + 5, min(len(days), i + 120)))
    a, b = _close_on(view, symbol, days[i]), _close_on(view, symbol, days[j])
    ret = b / a - 1
    return _item("period_return", seed, as_of,
                 f"What was {symbol}'s return from the close of {days[i]} to the close of {days[j]} "
                 "(adjusted closes, dividends included)?",
                 (Part("return", ret, "percent", "the return", rel_tol=0.0, abs_tol=0.0005),),
                 {"symbol": symbol, "start": str(days[i]), "end": str(days[j])},
                 (f"closes {a:.4f} and {b:.4f}", f"return = {b:.4f}/{a:.4f} - 1 = {ret:.6f}"))


def _max_close(rng: np.random.Generator, view: QAView, seed: int, as_of: str) -> QAItem | None:
    symbols = [s for s in view.symbols() if len(_days_of(view, s)) >= 60]
    if not symbols:
        return None
    symbol = symbols[int(rng.integers(len(symbols)))]
    days = _days_of(view, symbol)
    as_of_month = np.datetime64(as_of, "M")
    months = sorted({m for m in days.astype("datetime64[M]") if m < as_of_month})[1:]  # whole months only
    if not months:
        return None
    month = months[int(rng.integers(len(months)))]
    bars = view.prices(symbol, start=month.astype("datetime64[D]"), end=(month + 1).astype("datetime64[D]") - 1)
    k = int(np.argmax(bars.close))
    day, close = str(bars.dates[k]), float(bars.close[k])
    label = _dt.date.fromisoformat(f"{month}-01").strftime("%B %Y")
    return _item("max_close", seed, as_of,
                 f"On which trading day of {label} did {symbol} have its highest (adjusted) close, and what was it?",
                 (Part("date", day, "date", "the trading day"),
                  Part("close", close, "number", "that close, $", rel_tol=0.001)),
                 {"symbol": symbol, "month": str(month)},
                 (f"{len(bars)} closes in {month}; the highest is {close:.4f} on {day}",))


def _xbrl_metric(rng: np.random.Generator, view: QAView, seed: int, as_of: str) -> QAItem | None:
    options = []
    for name in view.visible():
        filing = view.get(name)
        period = main_period(filing)
        if period is None:
            continue
        for metric in METRICS:
            got = metric_value(filing, metric, period)
            if got is not None:
                options.append((name, metric, period, got))
    if not options:
        return None
    name, metric, period, (value, used) = options[int(rng.integers(len(options)))]
    filing = view.get(name)
    label, kind, wording = METRICS[metric]
    span = "fiscal year" if filing.form.upper().startswith("10-K") else "quarter"
    q = (f"According to the XBRL data of {filing.ticker}'s {filing.form} for the period ended {filing.period_end} "
         f"(released {filing.filed}), what was its {wording} for the {span} {period[0]} to {period[1]}?")
    # EPS is reported to the cent: half a cent absolute, so the reported figure is right too
    part = Part(metric, value, kind, label, rel_tol=0.01, abs_tol=0.005 if metric == "eps_diluted" else 0.0)
    steps = tuple(f"{k}: {v['concept']} {v['period']} = {v['value']:,.6g}" for k, v in used.items()) + (
        f"{metric} = {value:.6g}",)
    return _item("xbrl_metric", seed, as_of, q, (part,),
                 {"bundle": name, "ticker": filing.ticker, "form": filing.form, "metric": metric,
                  "period": f"{period[0]} to {period[1]}"}, steps)


def latest_filings(view: QAView) -> list[dict[str, Any]]:
    """Each (symbol, form)'s most recent filing public at the view's date, from its filed date."""
    latest: dict[tuple[str, str], dict[str, Any]] = {}
    for f in view.filings():  # newest first
        latest.setdefault((f["symbol"], f["form"]), f)
    return sorted(latest.values(), key=lambda f: (f["symbol"], f["form"]))


def _filing_order(rng: np.random.Generator, view: QAView, seed: int, as_of: str) -> QAItem | None:
    filings = latest_filings(view)
    if len(filings) < 3:
        return None
    for _ in range(20):
        pick = [filings[i] for i in rng.choice(len(filings), size=3, replace=False)]
        if len({f["filed"] for f in pick}) == 3:
            break
    else:
        return None
    labels = ("A", "B", "C")
    order = tuple(lab for _, lab in sorted(zip([f["filed"] for f in pick], labels, strict=True)))
    listing = "; ".join(f"{lab}) {f['symbol']}'s most recent {f['form']}" for lab, f in zip(labels, pick, strict=True))
    return _item("filing_order", seed, as_of,
                 f"Order these SEC filings by filing date, earliest first: {listing} (each the latest of its kind "
                 "public on this date).",
                 (Part("order", order, "sequence", "the labels, earliest first", choices=labels),),
                 {"filings": {lab: {"symbol": f["symbol"], "form": f["form"]} for lab, f in zip(labels, pick, strict=True)}},
                 tuple(f"{lab}: {f['id']} filed {f['filed']}" for lab, f in zip(labels, pick, strict=True)))


_BUILDERS = {"close_price": _close_price, "period_return": _period_return, "max_close": _max_close,
             "xbrl_metric": _xbrl_metric, "filing_order": _filing_order}


def generate(seed: int, view: QAView, topic: str | None = None) -> QAItem:
    """The knowledge question of ``seed`` at the view's date (``topic``: force one).

    Raises:
        ValueError: Bad seed or topic, or nothing visible to ask about.
    """
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed={seed!r} must be a non-negative integer")
    if topic is not None and topic not in TOPICS:
        raise ValueError(f"unknown knowledge topic {topic!r}; topics: {list(TOPICS)}")
    as_of = str(view.as_of)
    rng = np.random.default_rng([20_260_331, int(seed)])
    order = [topic] if topic else [TOPICS[int(seed) % len(TOPICS)], *TOPICS]
    for name in dict.fromkeys(order):
        item = _BUILDERS[name](rng, view, int(seed), as_of)
        if item is not None:
            return item
    raise ValueError(f"nothing visible on {as_of} to ask a {topic or 'knowledge'} question about")


def make_view(as_of: str = DEFAULT_AS_OF, catalog: Any = None, corpus: Corpus | None = None,
              counter: LookAheadCounter | None = None) -> QAView:
    """The QA view of the shipped (or given) catalog and XBRL corpus at ``as_of``."""
    from finenvs.data.catalog import default_catalog
    from finenvs.xbrl.corpus import shipped_corpus

    catalog = catalog or default_catalog()
    return QAView(catalog.as_of(as_of, counter=counter), corpus or shipped_corpus())


__all__ = ["DEFAULT_AS_OF", "METRICS", "TOPICS", "QAView", "XbrlAsOf", "generate", "latest_filings", "main_period",
           "make_view", "metric_value", "prior_period"]
