"""``finenvs skills export``: the agent skills (SKILL.md) of every family."""

from __future__ import annotations

import argparse
from pathlib import Path

from finenvs.cli.common import Parser, needs_subcommand


def add_parser(sub: argparse._SubParsersAction) -> None:
    skills = sub.add_parser("skills", help="agent skills (SKILL.md) of every family")
    skills_sub = skills.add_subparsers(dest="skills_command", parser_class=Parser)
    export = skills_sub.add_parser("export", help="write DIR/finenvs-<family>/SKILL.md for every family: protocol, "
                                   "answer format, tools, date rules, how to run it, an example prompt")
    export.add_argument("dir", type=Path, help="output folder (e.g. .claude/skills)")
    export.add_argument("--families", nargs="+", help="only these families (default: all)")
    skills.set_defaults(handler=needs_subcommand("skills needs a subcommand: export"))
    export.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from finenvs.evaluation.skills import export_skills

    for path in export_skills(args.dir, args.families):
        print(path)
    return 0
