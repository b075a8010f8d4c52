"""``finenvs mcp``: one episode of any env served over MCP (stdio): its tools and ``commit_action``."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from finenvs.cli.checks import check_env_kwargs, check_episodes
from finenvs.cli.common import (
    EXIT_USAGE,
    episodes_saved,
    newest,
    selection_arguments,
    text_mode_arguments,
    window_kwargs,
)
from finenvs.text.plural import counted


def add_parser(sub: argparse._SubParsersAction) -> None:
    mcp = sub.add_parser("mcp", help="serve one episode of any env over MCP (stdio): its tools and commit_action")
    mcp.add_argument("--env", default="FinTrading-v0", help="env id, base or text variant (default: FinTrading-v0)")
    selection_arguments(mcp, one=True)
    mcp.add_argument("--out", type=Path, default=Path("finenvs-mcp-runs"), help="parent folder of the run folder")
    mcp.add_argument("--name", help="run folder name (default: mcp-<env>-<label>-<UTC time>)")
    text_mode_arguments(mcp, live=False)
    mcp.add_argument("--print-config", action="store_true",
                     help="print a ready .mcp.json entry for these arguments (absolute command path) and exit")
    mcp.set_defaults(handler=handle, interrupted=interrupted)


def interrupted(args: argparse.Namespace, began: float) -> str:
    """The Ctrl-C line: how far the served episode got and where it is saved."""
    run_dir = newest(args.out, "run.json", began)
    saved = episodes_saved(run_dir) if run_dir is not None else None
    if saved is None:
        return "interrupted: finenvs mcp stopped before the episode began; nothing saved"
    return (f"interrupted: the MCP episode stopped after {counted(saved[2], 'decision')}, saved in {run_dir} "
            "(incomplete)")


def _mcp_arguments(args: argparse.Namespace) -> list[str]:
    """The ``finenvs mcp`` arguments that reproduce this invocation (for ``--print-config``)."""
    out = ["mcp", "--env", args.env, "--split", args.split, "--seed", str(args.seed), "--out", str(args.out.resolve())]
    for flag in ("symbol", "instance", "start", "end", "name", "tools"):
        if getattr(args, flag, None) is not None:
            out += [f"--{flag}", str(getattr(args, flag))]
    if getattr(args, "debate", False):
        out.append("--debate")
    if getattr(args, "python", False):
        out.append("--python")
    if args.symbols:
        out += ["--symbols", *args.symbols]
    if getattr(args, "env_kwargs", None) is not None:
        out += ["--env-kwargs", args.env_kwargs]
    return out


def handle(args: argparse.Namespace) -> int:
    import shutil

    from finenvs.tasks import Selection, task_of

    try:
        task = task_of(args.env)
        if args.symbol and args.symbols:
            raise ValueError("give --symbol or --symbols, not both")
        symbols = (args.symbol,) if args.symbol else tuple(args.symbols) if args.symbols else None
        instances = (args.instance,) if args.instance is not None else None
        selection = Selection(split=args.split, symbols=symbols, instances=instances, seeds=(args.seed,),
                              env_kwargs=window_kwargs(args))
        check_env_kwargs(task, selection.env_kwargs)
        episode_spec = task.plan(selection)[0]
        check_episodes(task, [episode_spec])  # before the run folder is written
        if args.print_config:
            command = shutil.which("finenvs") or sys.argv[0]
            entry = {"mcpServers": {f"finenvs-{task.family}": {"command": str(Path(command).resolve()),
                                                                "args": _mcp_arguments(args)}}}
            print(json.dumps(entry, indent=2))
            return 0
        from finenvs.evaluation.mcp_server import McpEpisode  # the MCP SDK loads after the checks

        episode = McpEpisode(episode_spec, out=args.out, name=args.name)
    except Exception as exc:
        if args.print_config or sys.stdin.isatty():  # a person at a terminal: one error line, exit 2
            raise
        from finenvs.evaluation.mcp_server import serve_stdio

        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
        print(f"finenvs: error: {message}", file=sys.stderr)
        serve_stdio(None, error=str(message))  # an MCP client gets the reason as an error result
        return EXIT_USAGE
    print(f"finenvs mcp: serving {episode_spec.describe()} over stdio; results in {episode.files.root}",
          file=sys.stderr)
    from finenvs.evaluation.mcp_server import serve_stdio

    serve_stdio(episode)
    return 0
