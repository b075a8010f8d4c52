"""Audit tools (FinAudit-v0): resolve the filing bundle, search concepts, read facts, walk the
calculation network and read concept metadata.

Every tool reads through the episode's :class:`~finenvs.tasks.audit.env.AuditView`:
the episode's own filing (as the agent is meant to see it) and filings released
on or before the audit date. ``bundle`` defaults to the episode's filing.

Answers say only what the call did not give: no echo of ``bundle`` or ``concept``; facts as rows under
``columns`` (:func:`fact_records` turns them back into dicts), calculation roles once each with their title
(:func:`calculation_children`), and what is the same in every answer (the summation rule, what a column
holds) in the tool's description, which a provider caches with the schemas.
"""

from __future__ import annotations

from typing import Any

from finenvs.tools.registry import Tool, ToolContext

#: A ``bundle`` and a ``concept`` argument (resolve_filing's description says once what they hold).
_BUNDLE = {"type": "string"}
_CONCEPT = {"type": "string", "minLength": 3, "maxLength": 300}
_PERIOD = {"type": "string", "maxLength": 40,
           "description": "YYYY-MM-DD (instant) or 'YYYY-MM-DD to YYYY-MM-DD' (duration)."}


def _view(ctx: ToolContext) -> Any:
    view = ctx.view()
    if not hasattr(view, "filing"):
        raise ValueError("XBRL tools need a FinAudit-v0 episode")
    return view


def _known(filing: Any, concept: str) -> None:
    if concept not in filing.concepts:
        raise ValueError(f"the concept argument is not in filing {filing.bundle}; use search_concepts to find its name")


def resolve_filing(ctx: ToolContext, ticker: str | None = None, form: str | None = None) -> dict[str, Any]:
    view = _view(ctx)
    rows = []
    for name in view.visible():
        filing = view.get(name)
        if ticker and filing.ticker.upper() != ticker.upper():
            continue
        if form and filing.form.upper().replace("-", "") != form.upper().replace("-", ""):
            continue
        rows.append({"bundle": name, "company": filing.company, "ticker": filing.ticker, "form": filing.form,
                     "period_end": filing.period_end, "released": filing.filed, "facts": len(filing.facts),
                     "calculation_roles": len(filing.calc_roles()), "this_task": name == view.bundle})
    return {"as_of": view.as_of, "filings": rows,
            "note": "only filings released on or before the audit date are listed"}


def search_concepts(ctx: ToolContext, query: str = "", bundle: str | None = None, limit: int = 40) -> dict[str, Any]:
    view = _view(ctx)
    filing = view.get(bundle)
    words = [w.lower() for w in query.replace(":", " ").split() if w]
    with_facts = {f.concept for f in filing.facts if f.value is not None}
    parents = {a.parent for a in filing.calculation}
    hits = []
    for name in filing.concepts:
        label = filing.label(name)
        hay = f"{name} {label}".lower()
        if all(w in hay for w in words):
            hits.append({"concept": name, "label": label, "has_facts": name in with_facts,
                         "calculation_parent": name in parents})
    hits.sort(key=lambda h: (not h["has_facts"], h["concept"]))
    return {"bundle": filing.bundle, "query": query, "matches": len(hits), "concepts": hits[:limit]}


#: ``get_facts``' columns, in this order: ``period`` only when the call names none, ``dimensions`` only with
#: ``dimensional=true``, ``text`` only when a listed fact is not numeric.
FACT_COLUMNS = ("value", "decimals", "unit", "period", "context", "dimensions", "text")


def _number(x: float) -> float | int:
    """A value as written: a whole number without a trailing ``.0`` (the same number)."""
    return int(x) if float(x).is_integer() else x


#: Most concepts one ``get_facts`` call reads (``concepts``).
MAX_CONCEPTS = 50


def get_facts(ctx: ToolContext, concept: str | None = None, period: str | None = None, bundle: str | None = None,
              dimensional: bool = False, concepts: list[str] | None = None) -> dict[str, Any]:
    from finenvs.xbrl.calc import parse_period

    view = _view(ctx)
    if (concept is None) == (concepts is None):
        raise ValueError("get_facts reads one concept (concept) or several (concepts): give exactly one of them")
    filing = view.get(bundle)
    if concept is not None:
        _known(filing, concept)
    # several concepts: one not in the filing answers null (the others still answer)
    names = [concept] if concept is not None else list(dict.fromkeys(concepts or []))
    want = parse_period(period) if period else None
    found: dict[str, list[tuple[Any, Any]] | None] = {}
    for name in names:
        if name not in filing.concepts:
            found[name] = None
            continue
        found[name] = [(fact, context) for fact in filing.facts_of(name)
                       for context in (filing.contexts[fact.context],)
                       if (not want or (context.start, context.end) == want) and (dimensional or not context.dimensions)]
    text = any(f.unit is None for facts in found.values() for f, _ in facts or [])
    columns = [c for c in FACT_COLUMNS if (c != "period" or not want) and (c != "dimensions" or dimensional)
               and (c != "text" or text)]

    def row(fact: Any, context: Any) -> list[Any]:
        cell = {"value": None if fact.value is None else _number(fact.value),
                "decimals": "INF" if fact.decimals is None and fact.unit else fact.decimals,
                "unit": filing.units[fact.unit].measure if fact.unit else None, "period": context.period,
                "context": fact.context, "dimensions": [f"{a}={m}" for a, m in context.dimensions],
                "text": None if fact.unit or fact.nil else fact.text[:300]}
        return [cell[c] for c in columns]

    if concept is not None:
        return {"columns": columns, "rows": [row(*f) for f in found[concept] or []]}
    return {"columns": columns,
            "facts": {name: None if facts is None else [row(*f) for f in facts] for name, facts in found.items()}}


def fact_records(data: dict[str, Any], concept: str | None = None) -> list[dict[str, Any]]:
    """``get_facts``' answer as one ``{column: cell}`` dict per fact: of its one concept, or (an answer to
    ``concepts``) of ``concept`` (none when the answer does not name it or it is not in the filing)."""
    rows = data["rows"] if concept is None else data["facts"].get(concept) or []
    return [dict(zip(data["columns"], r, strict=True)) for r in rows]


def get_calculation(ctx: ToolContext, concept: str, role: str | None = None, bundle: str | None = None) -> dict[str, Any]:
    view = _view(ctx)
    filing = view.get(bundle)
    _known(filing, concept)
    children = filing.children(concept, role)
    parents = filing.parents(concept, role)
    roles: dict[str, dict[str, Any]] = {}
    # the roles in the order the answer names them, children's then parents' (a set's order differs between processes)
    for r in dict.fromkeys([*children, *parents]):
        entry: dict[str, Any] = {"title": filing.roles.get(r, "")}
        if r in children:
            entry["children"] = [[c, _number(w), filing.label(c)] for c, w in children[r]]
        if r in parents:
            entry["parents"] = [[p, _number(w)] for p, w in parents[r]]
        roles[r] = entry
    return {"roles": roles}


def calculation_children(data: dict[str, Any]) -> dict[str, list[tuple[str, float]]]:
    """``get_calculation``'s answer as ``role -> [(child, weight), ...]`` (the roles where the concept sums children,
    in the answer's order)."""
    out = {}
    for r, entry in data["roles"].items():
        if not isinstance(entry, dict):
            raise TypeError(f"role {r!r} of a get_calculation answer is not an object")
        if entry.get("children"):
            out[r] = [(str(c[0]), float(c[1])) for c in entry["children"]]
    return out


def get_concept(ctx: ToolContext, concept: str, bundle: str | None = None) -> dict[str, Any]:
    from finenvs.xbrl.calc import non_negative

    view = _view(ctx)
    filing = view.get(bundle)
    _known(filing, concept)
    info = filing.concept(concept)
    keep, why = non_negative(filing, concept)
    return {"balance": info.balance, "period_type": info.period_type, "datatype": info.datatype,
            "abstract": info.abstract, "metadata_source": info.source, "labels": filing.labels.get(concept, {}),
            "non_negative": keep, "non_negative_reason": why,
            "calculation_parent_in_roles": len(filing.children(concept)),
            "calculation_child_in_roles": len(filing.parents(concept))}


def get_taxonomy_calculation(ctx: ToolContext, concept: str) -> dict[str, Any]:
    from finenvs.xbrl.corpus import taxonomy_calculations

    _view(ctx)
    rels = taxonomy_calculations().get(concept, [])
    return {"concept": concept, "taxonomy": "US-GAAP 2025", "relationships": rels,
            "note": "the standard taxonomy's formulas, for reference; the task's calculated value uses the "
                    "filing's own calculation network"}


AUDIT_TOOLS: tuple[Tool, ...] = (
    Tool("resolve_filing",
         "Filing bundles visible at the audit date (the task's own is marked this_task): company, ticker, form, "
         "period end, release date, fact count. The other tools take a `concept` as prefix:LocalName (e.g. "
         "us-gaap:Assets) and a `bundle` name from here (default: this task's filing).",
         {"type": "object", "properties": {"ticker": {"type": "string", "maxLength": 12},
                                           "form": {"type": "string", "maxLength": 12}},
          "additionalProperties": False},
         resolve_filing, summary="the filing bundles visible at the audit date"),
    Tool("search_concepts",
         "Concepts of a filing whose name or label contains every word of `query` (empty: all), facts first.",
         {"type": "object", "properties": {"query": {"type": "string", "maxLength": 200}, "bundle": _BUNDLE,
                                           "limit": {"type": "integer", "minimum": 1, "maximum": 200}},
          "additionalProperties": False},
         search_concepts, summary="search concepts by name or label"),
    Tool("get_facts",
         "The facts of a concept (or several: concepts) in non-dimensional contexts (dimensional=true: all), "
         "optionally of one period, as rows under columns (value null: nil, or not a number: see text); for "
         "concepts, facts: {concept: rows, null if not in the filing}. Several facts of one period and unit are "
         "repeats that agree within their decimals; the most precise one is the reported value.",
         {"type": "object", "properties": {"concept": _CONCEPT, "period": _PERIOD, "bundle": _BUNDLE,
                                           "dimensional": {"type": "boolean"},
                                           "concepts": {"type": "array", "items": _CONCEPT, "minItems": 1,
                                                        "maxItems": MAX_CONCEPTS}},
          "additionalProperties": False},
         get_facts, summary="facts of a concept for a period"),
    Tool("get_calculation",
         "The concept's calculation children and parents per role, from the filing's calculation linkbase: "
         "roles: {role: {title, children: [[child, weight, label], ...], parents: [[parent, weight], ...]}} "
         "(empty lists left out). Within one role, parent = sum(weight * child) in the same period and unit.",
         {"type": "object", "properties": {"concept": _CONCEPT, "role": {"type": "string", "maxLength": 300},
                                           "bundle": _BUNDLE},
          "required": ["concept"], "additionalProperties": False},
         get_calculation, summary="calculation children and parents of a concept"),
    Tool("get_concept",
         "A concept's metadata: balance (debit/credit), period type, datatype, where they came from, labels, "
         "whether the sign rule treats it as non-negative and why, and in how many roles it sums children or is "
         "summed.",
         {"type": "object", "properties": {"concept": _CONCEPT, "bundle": _BUNDLE},
          "required": ["concept"], "additionalProperties": False},
         get_concept, summary="balance, period type and labels of a concept"),
    Tool("get_taxonomy_calculation",
         "The US-GAAP 2025 taxonomy's standard calculation relationships of a concept (reference only).",
         {"type": "object", "properties": {"concept": _CONCEPT}, "required": ["concept"],
          "additionalProperties": False},
         get_taxonomy_calculation, summary="the standard taxonomy's formula for a concept"),
)


__all__ = ["AUDIT_TOOLS", "FACT_COLUMNS", "MAX_CONCEPTS", "calculation_children", "fact_records", "get_calculation", "get_concept",
           "get_facts", "get_taxonomy_calculation", "resolve_filing", "search_concepts"]
