"""``finenvs score``: check and re-score a run folder offline from its trajectories (or score HERCULEAN
trading-decision files)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from finenvs.cli.common import check_judge, judge_arguments, run_judge


def add_parser(sub: argparse._SubParsersAction) -> None:
    score = sub.add_parser("score", help="check and re-score a run folder offline from its trajectories; exit 0 "
                           "reproduced, 3 incomplete, 1 not reproduced or tampered")
    score.add_argument("run_dir", type=Path, nargs="?", help="a folder written by `finenvs llm`, `harness` or `mcp`")
    score.add_argument("--json", action="store_true", help="print the score as JSON")
    score.add_argument("--herculean-decisions", nargs="+", type=Path, metavar="FILE",
                       help="score HERCULEAN trading-decision JSON files in FinTrading-v0 under both conventions "
                       "instead of a run folder (exit 0 all scored, 2 a file refused)")
    score.add_argument("--export-herculean", type=Path, metavar="DIR",
                       help="write the run's FinTrading-v0 episodes into DIR as HERCULEAN trading-decision files")
    judge_arguments(score)
    score.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from finenvs.evaluation import herculean_files
    from finenvs.evaluation.score import score_run, terminal_report

    if args.herculean_decisions:
        if args.run_dir is not None or args.export_herculean is not None:
            raise ValueError("--herculean-decisions scores files, not a run folder: give one or the other")
        return herculean_files.cli_score_files(args.herculean_decisions, args.json)
    if args.run_dir is None:
        raise ValueError("finenvs score needs a run folder (or --herculean-decisions FILE...)")
    if args.export_herculean is not None:
        return herculean_files.cli_export(args.run_dir, args.export_herculean)

    check_judge(args)  # an unreachable judge: exit 2 before scoring
    result = score_run(args.run_dir)
    if args.json:
        print(json.dumps(result.to_json(), indent=2))
    else:
        print(terminal_report(result))
    run_judge(args, args.run_dir)
    if not args.json:
        print(f"score written to {args.run_dir}/score.json and score.md")
    return result.exit_code  # 0 reproduced, 3 incomplete (resumable), 1 not reproduced or tampered
