"""``finenvs compare``: two or more run folders side by side."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_parser(sub: argparse._SubParsersAction) -> None:
    compare = sub.add_parser("compare", help="two or more run folders side by side (bench runs and/or agent runs): "
                             "headline metrics with bootstrap 95%% intervals over episodes, paired differences where "
                             "the episodes match; exit 2 on a folder that is neither kind")
    compare.add_argument("runs", nargs="+", type=Path, metavar="RUN_DIR",
                         help="folders written by `finenvs bench` (scorecard.json) or `finenvs llm`/`harness` "
                         "(run.json + trajectories.jsonl); the first is run A")
    compare.add_argument("--out", type=Path, help="folder for compare.md, compare.json and compare.png "
                         "(default: finenvs-compare/<UTC time>)")
    compare.add_argument("--json", action="store_true", help="print the comparison as JSON")
    compare.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from finenvs.evaluation.compare import cli_compare

    return cli_compare(args.runs, out=args.out, as_json=args.json)
