"""``finenvs cost``: tokens per decision by family, and what HERCULEAN's full protocol and FAB++'s aggregate would
cost a model at a price table, before anything runs."""

from __future__ import annotations

import argparse
import json
import math


def add_parser(sub: argparse._SubParsersAction) -> None:
    cost = sub.add_parser("cost", help="tokens per decision by family (scripted agent, o200k_base estimate) and the "
                          "projected cost of HERCULEAN's protocol and FAB++'s aggregate")
    cost.add_argument("--envs", nargs="+", metavar="ENV", help="families to measure (default: every one)")
    cost.add_argument("--split", default="eval", help="split of the plans (default eval)")
    cost.add_argument("--episodes", type=int, default=150,
                      help="episodes measured per family (default 150: a one-decision family's whole eval plan)")
    cost.add_argument("--decisions", type=int, default=200, help="decisions measured per family at most (default 200)")
    cost.add_argument("--price-in", type=float, help="$ per million prompt tokens")
    cost.add_argument("--price-out", type=float, help="$ per million completion tokens")
    cost.add_argument("--price-cached", type=float,
                      help="$ per million prompt tokens served from the provider's cache (default: --price-in)")
    cost.add_argument("--json", action="store_true", help="print the measurement and projections as JSON")
    cost.set_defaults(handler=handle)


def _prices(args: argparse.Namespace) -> object:
    from finenvs.evaluation.cost import Prices

    if (args.price_in is None) != (args.price_out is None):
        raise ValueError("--price-in and --price-out go together (dollars per million prompt and completion tokens)")
    for flag, value in (("--price-in", args.price_in), ("--price-out", args.price_out),
                        ("--price-cached", args.price_cached)):
        if value is not None and (not math.isfinite(value) or value < 0):
            raise ValueError(f"{flag}: a price is a finite number of dollars >= 0 per million tokens, got {value!r}")
    if args.price_in is None:
        if args.price_cached is not None:
            raise ValueError("--price-cached needs --price-in and --price-out")
        return None
    return Prices(args.price_in, args.price_out, args.price_cached)


def _n(x: float | None, digits: int = 0) -> str:
    return "n/a" if x is None else f"{x:,.{digits}f}"


def handle(args: argparse.Namespace) -> int:
    from finenvs.evaluation.cost import PROTOCOLS, measure_tokens, projection, protocol_decisions
    from finenvs.evaluation.tokens import ENCODING, tokenizer_status
    from finenvs.tasks import task_of, tasks
    from finenvs.text.markdown import md_table

    prices = _prices(args)
    if args.episodes < 1 or args.decisions < 1:
        raise ValueError("--episodes and --decisions must be >= 1")
    chosen = [task_of(e) for e in args.envs] if args.envs else list(tasks())
    measured = {t.env_id: measure_tokens(t, split=args.split, episodes=args.episodes, decisions=args.decisions)
                for t in chosen}
    projections = {p: projection(protocol_decisions(p, split=args.split, families=chosen), measured, prices)  # type: ignore[arg-type]
                   for p in PROTOCOLS}
    if args.json:
        print(json.dumps({"encoding": ENCODING, "tokenizer": tokenizer_status(),
                          "families": {k: v.record() for k, v in measured.items()},
                          "prices": None if prices is None else vars(prices), "projections": projections}, indent=2))
        return 0
    rows = []
    for env, m in measured.items():
        r = m.record()
        share, run_share = r["cached_share"], r["run_cached_share"]
        rows.append([env, str(r["decisions"]), _n(r["median_prompt"]), _n(r["median_completion"]),
                     "n/a" if share is None else f"{share:.0%}", "n/a" if run_share is None else f"{run_share:.0%}",
                     _n(r["requests_per_decision"], 1), _n(r["tool_calls_per_decision"], 1)])
    print(f"Tokens per decision of each family's scripted agent ({ENCODING} estimate; tokenizer: "
          f"{tokenizer_status()}):")
    print(md_table(["env", "decisions", "median prompt", "median completion", "cached prefix",
                    "cached prefix (run)", "requests", "tool calls"], rows))
    names = {"herculean": "HERCULEAN's full protocol (four workflows, backtest and live window)",
             "fabpp": "FAB++'s aggregate (every family with a FAB++ section)"}
    for protocol, proj in projections.items():
        if not proj["rows"]:
            continue
        print(f"\n{names[protocol]}: {proj['decisions']:,} decisions, {_n(proj['prompt'])} prompt and "
              f"{_n(proj['completion'])} completion tokens ({_n(proj['cached'])} of them a repeated prefix)"
              + ("" if prices is None else f"; projected cost ${_n(proj['cost_usd'], 2)}"))
        print(md_table(["env", "episodes", "decisions", "prompt tokens", "completion tokens", "cost $"],
                       [[r["env"], str(r["episodes"]), f"{r['decisions']:,}", _n(r["prompt"]), _n(r["completion"]),
                         _n(r["cost_usd"], 2)] for r in proj["rows"]]))
    if prices is None:
        print("\nGive --price-in and --price-out (dollars per million tokens) for the projected dollars.")
    print("A model reads at least what the scripted agent reads; its completions (reasoning, reports) are usually "
          "longer. One attempt per decision (HERCULEAN's rule allows up to five).")
    return 0
