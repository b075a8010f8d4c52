"""``finenvs list``: the registered envs, one block each, or the agent-path matrix as Markdown."""

from __future__ import annotations

import argparse


def add_parser(sub: argparse._SubParsersAction) -> None:
    listing = sub.add_parser("list", help="list the registered environments")
    listing.add_argument("--markdown", action="store_true",
                         help="print the agent-path matrix (every family x every agent path) as a Markdown table")
    listing.set_defaults(handler=handle)


def agent_matrix() -> str:
    """Every registered family x every agent path, as the README shows it (generated from the task specs)."""
    from finenvs.tasks import tasks
    from finenvs.text.markdown import md_table

    rows = []
    for t in tasks():
        section = t.bench.herculean and f"HERCULEAN {t.bench.herculean}" or (
            "FAB++ " + ", ".join(t.bench.fabpp_sections) if t.bench.fabpp_sections else t.bench.title)
        rows.append([f"`{t.env_id}`", f"`{t.text_env_id}`", f"`{t.scripted_agent.__name__}`", "yes", "yes", "yes",
                     "replays exactly", section])
    return md_table(["env", "text env", "offline scripted agent (`finenvs llm`)", "endpoint (`--base-url`)",
                     "MCP (`finenvs mcp`)", "A2A (`--a2a-url`)", "`finenvs score`", "`finenvs bench --base-url`"], rows)


def handle(args: argparse.Namespace) -> int:
    from finenvs.tasks import tasks
    from finenvs.tools import COMMIT_TOOL

    if args.markdown:
        print(agent_matrix())
        return 0
    specs = tasks()
    width = max(len(t.env_id) for t in specs)
    pad = "".ljust(width)
    for t in specs:
        print(f"{t.env_id.ljust(width)}  {t.description}")
        print(f"{pad}  baselines: {', '.join(t.load_baselines())}")
        tools = [tool.name for tool in (t.tools or ())] + [COMMIT_TOOL]
        print(f"{pad}  text variant: {t.text_env_id}; agent tools: {', '.join(tools)}")
        print(f"{pad}  offline chat agent: {t.scripted_agent.__name__} (finenvs llm --env {t.env_id})")
    return 0

