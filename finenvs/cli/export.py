"""``finenvs export --inspect RUN``: a run folder as an Inspect AI eval log (``inspect view`` browses it)."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_parser(sub: argparse._SubParsersAction) -> None:
    export = sub.add_parser("export", help="write a run folder in another tool's format: --inspect, an Inspect AI "
                            "eval log (prompts, tool calls and replies per decision, in `inspect view`)")
    export.add_argument("run_dir", type=Path, help="a folder written by `finenvs llm`, `harness` or `mcp`")
    export.add_argument("--inspect", action="store_true", required=True,
                        help="write an Inspect AI eval log (needs the inspect extra)")
    export.add_argument("--out", type=Path, default=None,
                        help="the log file (.eval or .json; default: RUN_DIR/inspect.eval)")
    export.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    try:
        from finenvs.inspect import export_run
    except ImportError as exc:
        raise ValueError(str(exc)) from None
    path = export_run(args.run_dir, args.out)
    print(f"Inspect log written: {path} (open it with: inspect view --log-dir {path.parent})")
    return 0
