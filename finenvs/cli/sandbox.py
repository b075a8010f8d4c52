"""``finenvs sandbox setup|status``: the optional sandboxed Python tool (``run_python``)."""

from __future__ import annotations

import argparse
import json

from finenvs.cli.common import Parser, needs_subcommand


def add_parser(sub: argparse._SubParsersAction) -> None:
    sandbox = sub.add_parser("sandbox", help="the optional sandboxed Python tool (run_python): set it up, check it")
    sandbox_sub = sandbox.add_subparsers(dest="sandbox_command", parser_class=Parser)
    setup = sandbox_sub.add_parser("setup", help="put the Pyodide npm package (sha256-checked) where the sandbox "
                                   "reads it; needs npm and the deno wheel (finenvs[sandbox]); install time only")
    setup.add_argument("--force", action="store_true", help="set it up again even if it is in place")
    status = sandbox_sub.add_parser("status", help="whether run_python can run here, and why not")
    sandbox.set_defaults(handler=needs_subcommand("sandbox needs a subcommand: setup or status"))
    setup.set_defaults(handler=handle)
    status.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from finenvs.tools.sandbox import sandbox_status, setup_sandbox

    if args.sandbox_command == "setup":
        path = setup_sandbox(force=args.force)
        print(f"sandbox ready: {path}")
    status = sandbox_status(verify=args.sandbox_command == "status")
    print(json.dumps(status, indent=2, default=str))
    return 0 if status["available"] else 1
