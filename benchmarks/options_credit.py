"""FinOptions-v0: how the scorer ranks near misses, wrong numbers and nonsense, over the bench's Options tasks.

Run from the repository root::

    python benchmarks/options_credit.py                 # a few seconds; prints the report
    python benchmarks/options_credit.py --out FILE.md   # also writes it to FILE.md
    python benchmarks/options_credit.py --split train --generated 12 --no-bank   # another task set

To measure another commit, run this file against its code (``git archive COMMIT | tar -x -C /tmp/base``)::

    PYTHONPATH=/tmp/base python benchmarks/options_credit.py --label "main 43381b1"

The tasks are by default the bench's Options section (``finenvs bench``, eval split, seed 0): the 25
generated tasks (seeds 0..24) and the 9 FAB++ bank items. Every task is scored (``score_answer``) with:

* ``engine``: the engine's own answer (:func:`~finenvs.tasks.options.core.reference_answer`);
* ``3% off``, ``10% off``, ``30% off``: the engine's answer with every stated figure (P&L numbers, Greeks,
  net premium, breakevens, PoP, hedge) times 1.03 / 1.10 / 1.30; legs, contract count and exit rule kept;
* the adversarial baselines of :mod:`finenvs.tasks.options.baselines`: ``leg_copier`` (the legs, no
  figures), ``wrong_numbers`` (every figure 20% and one unit off) and ``keyword_stuffer`` (prose with
  every keyword FAB++'s scorer looked for);

FAB++'s own published answers to the bank items (the engine's answer with every figure the publication
states put in its place: ``PUBLISHED_KEYS``) show that rounded published figures keep their credit and the
erratum (risk_002's VaR) still loses it. And, item by item, every Greek the tasks ask with only that Greek
8% off (the rest exact): whether it
still earns full credit, and whether its truth is near zero: below ``GREEK_FLOORS`` per share (divided by
multiplier x contracts). It uses only functions that exist before and after the graded-credit change,
so the same file measures both commits.
"""

from __future__ import annotations

import argparse
import copy
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np

from finenvs.tasks.options import core
from finenvs.tasks.options.bank import load_bank
from finenvs.tasks.options.baselines import KEYWORD_STUFFED, LegCopier, WrongNumbers
from finenvs.tasks.options.env import FinOptionsEnv

GENERATED = 25
KEPT = ("legs", "contracts", "exit")
OFF = (0.03, 0.10, 0.30)
#: A bank item's published figure -> the answer key it states (in the item's own units; see the bank's
#: ``assumptions``). Published figures the scorer does not ask (per-leg deltas, dollar volatility) are left out.
PUBLISHED_KEYS = {"call_price": "price", "theoretical_price": "price", "delta": "delta", "gamma": "gamma",
                  "theta": "theta", "vega": "vega", "net_delta": "delta", "max_profit": "max_profit",
                  "max_loss": "max_loss", "total_pnl": "total_pnl", "delta_pnl": "delta_pnl",
                  "gamma_pnl": "gamma_pnl", "theta_pnl": "theta_pnl", "vega_pnl": "vega_pnl",
                  "unexplained": "unexplained", "max_loss_per_spread": "max_loss_per_unit",
                  "position_size": "contracts", "buying_power_required": "buying_power",
                  "net_delta_exposure": "delta_dollars", "var_95": "var_95"}


def bench_tasks(split: str = "eval", generated: int = GENERATED, bank_items: bool = True
                ) -> list[tuple[str, dict[str, Any]]]:
    """``(set, task)``: ``generated`` tasks of ``split`` (seeds 0..generated-1), then the 9 bank items."""
    out = []
    env = FinOptionsEnv(split=split, action_mode="text")
    for seed in range(generated):
        env.reset(seed=seed)
        out.append(("generated", copy.deepcopy(env.task)))
    bank = FinOptionsEnv(bank="fabpp", action_mode="text")
    for item in (load_bank() if bank_items else []):
        bank.reset(seed=0, options={"task_id": item["id"]})
        out.append(("bank", copy.deepcopy(bank.unwrapped.task)))
    return out


def scaled(value: Any, factor: float) -> Any:
    """Every number in ``value`` times ``factor`` (bools and text kept)."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, float)):
        return value * factor
    if isinstance(value, list):
        return [scaled(v, factor) for v in value]
    if isinstance(value, dict):
        return {k: scaled(v, factor) for k, v in value.items()}
    return value


def answers(task: dict[str, Any]) -> dict[str, Any]:
    ref = core.reference_answer(task)
    out: dict[str, Any] = {"engine": ref}
    for p in OFF:
        out[f"{p:.0%} off"] = {k: (v if k in KEPT else scaled(v, 1.0 + p)) for k, v in ref.items()}
    out["leg_copier"] = LegCopier().answer(copy.deepcopy(ref))
    out["wrong_numbers"] = WrongNumbers().answer(copy.deepcopy(ref))
    out["keyword_stuffer"] = KEYWORD_STUFFED
    return out


def published_answer(task: dict[str, Any]) -> dict[str, Any]:
    """The engine's answer to a bank item with FAB++'s published figures in place of the engine's."""
    answer = core.reference_answer(task)
    published = task["published"]
    for key, value in published.items():
        if key in PUBLISHED_KEYS and isinstance(value, (int, float)):
            answer[PUBLISHED_KEYS[key]] = value
    if "net_delta" in published:  # greeks_002 states the net delta per share of one contract (0.75 = 75 shares)
        answer["delta"] = published["net_delta"] * float(task["market"]["multiplier"])
    lows = [published[k] for k in ("breakeven_lower", "breakeven", "breakeven_upper") if k in published]
    if lows:
        answer["breakevens"] = lows
    return answer


def published_rows(tasks: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    rows = []
    for where, task in tasks:
        if where != "bank":
            continue
        card = core.score_answer(task, published_answer(task))
        lost = [f"{i.name} {i.credit:.2f}" for i in card.items if i.credit < 1.0 and not i.reason.startswith("counted")]
        rows.append({"task": task["id"], "score": card.total, "lost": lost})
    return rows


def measure(split: str = "eval", generated: int = GENERATED, bank_items: bool = True) -> dict[str, Any]:
    tasks = bench_tasks(split, generated, bank_items)
    scores: dict[str, dict[str, list[float]]] = {}
    greek_rows = []
    for where, task in tasks:
        for name, answer in answers(task).items():
            scores.setdefault(name, {"generated": [], "bank": []})[where].append(core.score_answer(task, answer).total)
        ref = core.reference_answer(task)
        per_share = float(task["market"]["multiplier"]) * float(task.get("contracts") or ref["contracts"])
        for greek in task["ask"]["greeks"]:
            off = copy.deepcopy(ref)
            off[greek] = ref[greek] * 1.08
            item = next(i for i in core.score_answer(task, off).items if i.dimension == "greeks" and i.name == greek)
            greek_rows.append({"task": task["id"], "set": where, "greek": greek, "truth": ref[greek],
                               "per_share": ref[greek] / per_share, "credit": item.credit})
    return {"scores": scores, "greeks": greek_rows, "n_tasks": len(tasks), "split": split, "generated": generated,
            "bank": bank_items, "published": published_rows(tasks)}


def report(result: dict[str, Any], label: str | None = None) -> str:
    if label is None:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                check=False).stdout.strip() or "unknown"
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True,
                               text=True, check=False).stdout.strip()
        label = f"commit {commit}{' (with uncommitted changes)' if dirty else ''}"
    n = result["generated"]
    lines = [f"{label}; {result['n_tasks']} tasks "
             f"({n} generated, {result['split']} split seeds 0..{n - 1}{', and the FAB++ bank' if result['bank'] else ''})",
             "",
             "| answer | generated mean | bank mean | all mean | min | max |", "|---|---:|---:|---:|---:|---:|"]
    for name, by_set in result["scores"].items():
        every = by_set["generated"] + by_set["bank"]
        bank_mean = f"{np.mean(by_set['bank']):.1f}" if by_set["bank"] else "—"
        lines.append(f"| {name} | {np.mean(by_set['generated']):.1f} | {bank_mean} | "
                     f"{np.mean(every):.1f} | {min(every):.1f} | {max(every):.1f} |")
    if result["published"]:
        lines += ["", "FAB++'s published answers to the bank items (figures it states; the rest the engine's):", "",
                  "| item | score | items short of full credit (credit) |", "|---|---:|---|"]
        lines += [f"| {r['task']} | {r['score']:.1f} | {', '.join(r['lost']) or '—'} |" for r in result["published"]]
    rows = result["greeks"]
    full = [r for r in rows if r["credit"] >= 1.0]
    partial = [r for r in rows if 0.0 < r["credit"] < 1.0]
    lines += ["", f"Greek items asked: {len(rows)}. With that one Greek 8% off: {len(full)} keep full credit, "
                  f"{len(partial)} partial credit (mean {np.mean([r['credit'] for r in partial]) if partial else math.nan:.2f}), "
                  f"{len(rows) - len(full) - len(partial)} none.", ""]
    lines += ["| Greek | asked | full credit at 8% off | of which near zero (truth below the floor) | "
              "median abs(truth) per share |", "|---|---:|---:|---:|---:|"]
    for greek in ("delta", "gamma", "vega", "theta"):
        mine = [r for r in rows if r["greek"] == greek]
        if not mine:
            continue
        near = [r for r in mine if r["credit"] >= 1.0 and abs(r["per_share"]) < core.GREEK_FLOORS[greek]]
        lines.append(f"| {greek} | {len(mine)} | {sum(r['credit'] >= 1.0 for r in mine)} | {len(near)} | "
                     f"{np.median([abs(r['per_share']) for r in mine]):.4g} |")
    if full:
        lines += ["", "Items with full credit at 8% off (truth per share):", ""]
        lines += [f"* {r['task']} {r['greek']} {r['per_share']:.4g}" for r in full]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--out", type=Path, help="also write the report to this Markdown file")
    parser.add_argument("--split", default="eval", help="split of the generated tasks (default eval, the bench's)")
    parser.add_argument("--generated", type=int, default=GENERATED, help=f"generated tasks (default {GENERATED})")
    parser.add_argument("--no-bank", action="store_true", help="leave out the FAB++ bank's items")
    parser.add_argument("--label", help="the report's first words (default: the checkout's commit)")
    args = parser.parse_args(argv)
    text = report(measure(args.split, args.generated, not args.no_bank), args.label)
    print(text, end="")
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
