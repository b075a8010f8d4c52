"""What the ``finenvs`` commands share: the one-line parser errors, exit codes, error printing, the Ctrl-C
report of a run folder, and the argument groups several commands take (episode selection, agent, judge, text
mode). Light to import: heavy modules load inside the functions that need them."""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from finenvs.text.plural import counted

EXIT_USAGE = 2
EXIT_DATA_INVALID = 1
#: An unforeseen error (a bug): one line, or the traceback with ``--debug`` / ``FINENVS_DEBUG=1``.
EXIT_INTERNAL = 1
#: Ctrl-C (128 + SIGINT), as shells report it.
EXIT_INTERRUPTED = 130


def usage_error(message: str, prog: str = "finenvs") -> NoReturn:
    """One line ``finenvs: error: ...`` on stderr, exit 2 (argparse would print the usage too)."""
    print(f"finenvs: error: {message} (see `{prog} --help`)", file=sys.stderr)
    raise SystemExit(EXIT_USAGE)


class Parser(argparse.ArgumentParser):
    """argparse's parser with one-line errors (every command and subcommand parser is one)."""

    def error(self, message: str) -> NoReturn:
        usage_error(message, self.prog)


def needs_subcommand(message: str) -> Callable[[argparse.Namespace], int]:
    """The handler of a command group given without its subcommand (``finenvs data``): a usage error."""

    def handle(args: argparse.Namespace) -> int:
        usage_error(message)

    return handle


def one_line(message: Any, limit: int = 2_000) -> str:
    text = " ".join(str(message).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def error(message: Any) -> None:
    print(f"finenvs: error: {one_line(message)}", file=sys.stderr)


# ---------------------------------------------------------------------------- argument groups
def text_mode_arguments(parser: argparse.ArgumentParser, *, live: bool) -> None:
    """How an agent command's text env runs (``llm``, ``harness``, ``mcp``): tool mode, sandboxed Python, the
    debate round and (``live``) HERCULEAN's live regime; all are recorded with the run."""
    parser.add_argument("--tools", choices=["fabpp", "none"],
                        help="tool mode: fabpp (default: the family's tools, FAB++'s setting) or none (closed book: "
                        "the commit tool only); recorded with the run")
    if live:
        parser.add_argument("--live", action="store_true",
                            help="HERCULEAN's live regime (market families): run as far as the data allows, record "
                            "the decision that needs a later bar (daily families: at the newest bar) as pending and "
                            "exit; after finenvs data add, --resume RUN --live goes on")
    parser.add_argument("--python", action="store_true",
                        help="offer the sandboxed run_python tool (standard-library Python in Pyodide under Deno: no "
                        "files, no network; needs finenvs sandbox setup)")
    parser.add_argument("--debate", action="store_true",
                        help="FAB++'s adversarial debate (FinQA-v0, FinOptions-v0): after a first answer the agent "
                        "faces a counter-argument and gives a final answer (over MCP: in the next observation); the "
                        "multiplier (1.2/1.0/0.8) and the debated score are reported beside the plain score")


def selection_arguments(parser: argparse.ArgumentParser, *, one: bool = False) -> None:
    """Flags choosing a family's episodes (its task spec's plan); ``one``: a single episode (MCP)."""
    parser.add_argument("--split", default="eval", help="train, eval or live (default: eval)")
    if one:
        parser.add_argument("--symbol", help="ticker of a market env (default: the plan's first)")
        parser.add_argument("--instance", type=int, help="index into the plan: question, audit instance, options "
                            "task, hedging path (default: 0)")
        parser.add_argument("--seed", type=int, default=0, help="reset seed (default: 0)")
    else:
        parser.add_argument("--instances", nargs="+", type=int, metavar="I",
                            help="0-based indices into the plan (questions, audit instances, options tasks, hedging "
                            "paths): --instances 5 is the sixth item, one episode; the first N: --limit N")
        parser.add_argument("--limit", type=int, help="run only the plan's first N episodes (or --instances, not both)")
        parser.add_argument("--seeds", nargs="+", type=int, default=[0], help="reset seeds (default: 0)")
    parser.add_argument("--symbols", nargs="+",
                        help="market envs: one episode per symbol (default: HERCULEAN's MSFT TSLA AAPL NVDA); "
                        "FinHedging-v0: the universe (default: its 8 stocks)")
    parser.add_argument("--start", help="window start YYYY-MM-DD (overrides the split's)")
    parser.add_argument("--end", help="window end YYYY-MM-DD (overrides the split's)")
    parser.add_argument("--env-kwargs", help="more env arguments as a JSON object, e.g. '{\"fee_bps\": 10}', or "
                        "FinReport-v0's peer basket of a user symbol '{\"peers\": {\"TSLA2\": [\"AAPL\", "
                        "\"MSFT\"]}}' (not split/symbol/symbols: their flags set them; recorded with the run)")



def agent_arguments(parser: argparse.ArgumentParser) -> None:
    """Flags choosing the agent: an OpenAI-compatible endpoint or a remote A2A agent."""
    parser.add_argument("--base-url", help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8080/v1 "
                        "(default: $OPENAI_BASE_URL when --model is given)")
    parser.add_argument("--model", help="model name at the endpoint")
    parser.add_argument("--api-key-env", default="OPENAI_API_KEY",
                        help="env var holding the API key (default: OPENAI_API_KEY)")
    parser.add_argument("--a2a-url", help="a remote Agent-to-Agent (A2A) agent's base URL, instead of an endpoint")
    parser.add_argument("--temperature", type=float, default=0.0)
    parser.add_argument("--max-tokens", type=int, default=1024, help="cap on each reply's tokens")
    parser.add_argument("--tool-choice", choices=["auto", "required", "none"],
                        help="send tool_choice with the tools (llama.cpp's Python server needs 'auto')")
    parser.add_argument("--extra-body", help="extra JSON fields for every request, e.g. '{\"top_p\": 0.9}'")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per request (default: 60)")



def model_proxy_arguments(parser: argparse.ArgumentParser, *, serves: str) -> None:
    """``--model-proxy`` and ``--model-tool-choice``: finenvs' model proxy on 127.0.0.1 in front of a chat-completions
    endpoint, with the tool choice it sets (``serves``: whom it serves and why, for the help)."""
    parser.add_argument("--model-proxy", metavar="UPSTREAM_URL",
                        help=f"serve this chat-completions endpoint to {serves}")
    parser.add_argument("--model-tool-choice", choices=("required", "auto", "schema"), default=None,
                        help="the tool_choice the model proxy sets on requests with tools whose own is absent or "
                        "auto (default: required; a decision is a commit_action call); schema: ask the model server "
                        "for one JSON object naming a tool and its arguments (a grammar there) and pass it on as that "
                        "tool call (a server that parses no tool call from a small model)")


def judge_arguments(parser: argparse.ArgumentParser) -> None:
    """Flags of the optional judge model (families whose task spec has a judge: FinReport-v0's reports)."""
    parser.add_argument("--judge-base-url", help="an OpenAI-compatible endpoint whose model verifies the family's "
                        "rubric checklist (FinReport-v0); reported in judge.json beside the deterministic score")
    parser.add_argument("--judge-model", help="the judge's model name")
    parser.add_argument("--judge-api-key-env", default="OPENAI_API_KEY",
                        help="env var holding the judge endpoint's key (default: OPENAI_API_KEY)")



# ---------------------------------------------------------------------------- what the groups' flags mean
def run_judge(args: argparse.Namespace, run_dir: Path) -> None:
    """Judge a run folder with ``--judge-base-url/--judge-model`` when given; print its table."""
    if not (args.judge_base_url or args.judge_model):
        return
    if not (args.judge_base_url and args.judge_model):
        raise ValueError("--judge-base-url and --judge-model go together")
    from finenvs.evaluation.endpoints import OpenAIChatAgent
    from finenvs.evaluation.judge import judge_run, render_judge_markdown

    judge = OpenAIChatAgent(args.judge_model, args.judge_base_url, api_key_env=args.judge_api_key_env)
    quiet = getattr(args, "quiet", False)
    table = render_judge_markdown(judge_run(run_dir, judge, progress=not quiet))  # judge.json written either way
    if not quiet:
        print(table)


def json_object(flag: str, text: str | None) -> dict[str, Any] | None:
    if text is None:
        return None
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"{flag} is not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise ValueError(f"{flag} must be a JSON object, got {text!r}")
    return value


def extra_body(text: str | None) -> dict[str, Any] | None:
    return json_object("--extra-body", text)


#: Env arguments a selection flag sets for every episode: in ``--env-kwargs`` they are never what is played.
SELECTION_KEYS = {"split": "--split", "symbol": "--symbols", "symbols": "--symbols"}


def window_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """The env arguments of an agent command: ``--env-kwargs``, with the window and text-wrapper flags (each names
    one env argument; one flag, one meaning).

    Raises:
        ValueError: ``--env-kwargs`` names what a selection flag sets (``split``: ``--split``, ``symbol``/``symbols``:
            ``--symbols``), or gives a key a flag also gives (``start``, ``end``, ``tools``, ``debate``, ``python``)
            another value.
    """
    given = dict(json_object("--env-kwargs", getattr(args, "env_kwargs", None)) or {})
    for key, flag in SELECTION_KEYS.items():
        if key in given:
            raise ValueError(f"--env-kwargs names {key!r}, which {flag} sets; give it with {flag} only")
    flags: dict[str, Any] = {k: getattr(args, k) for k in ("start", "end") if getattr(args, k, None)}
    if getattr(args, "tools", None):  # the text wrapper's tool mode travels with the env's arguments
        flags["tools"] = args.tools
    if getattr(args, "debate", False):  # so does the debate round
        flags["debate"] = True
    if getattr(args, "python", False):  # and the sandboxed Python tool
        flags["python"] = True
    for key, value in flags.items():
        if key in given and given[key] != value:
            raise ValueError(f"--{key} {value} and --env-kwargs {key}={str(given[key])[:60]!r} disagree; give it once")
    return given | flags


def flag_defaults(parser: argparse.ArgumentParser, dests: tuple[str, ...]) -> dict[str, Any]:
    """The defaults of ``dests`` (recorded on the namespace as ``flag_defaults``: :func:`check_resume_flags`)."""
    return {dest: parser.get_default(dest) for dest in dests}


def check_resume_flags(args: argparse.Namespace, dests: tuple[str, ...]) -> None:
    """``--resume RUN`` continues a run as its run.json recorded it: a flag among ``dests`` given another value
    than its default would be recorded nowhere and never played, so it is refused before any work."""
    given = changed_flags(args, dests)
    if given:
        raise ValueError(f"--resume continues {args.resume} as its run.json recorded it; {', '.join(given)} would not "
                         "be played: drop them, or start a new run")


#: The flags of a model endpoint's requests (:func:`agent_arguments`): an A2A agent takes only ``--timeout``.
ENDPOINT_FLAGS = ("api_key_env", "temperature", "max_tokens", "tool_choice", "extra_body", "timeout")


def changed_flags(args: argparse.Namespace, dests: tuple[str, ...]) -> list[str]:
    """The flags among ``dests`` given another value than their default (``flag_defaults`` on the namespace)."""
    defaults = getattr(args, "flag_defaults", {})
    return [f"--{dest.replace('_', '-')}" for dest in dests if dest in defaults
            and getattr(args, dest, None) != defaults[dest]]


def check_agent_flags(args: argparse.Namespace) -> None:
    """The endpoint flags apply to a model: without ``--base-url/--model`` (the offline scripted agent) or with
    ``--a2a-url`` (which takes only ``--timeout``) they would be played by no one, so they fail before any work."""
    if args.a2a_url and (args.base_url or args.model):
        raise ValueError("give --a2a-url or --base-url/--model, not both")
    if not (args.base_url or args.model):
        unused = changed_flags(args, ENDPOINT_FLAGS[:-1] if args.a2a_url else ENDPOINT_FLAGS)
        if unused:
            who = "a remote A2A agent (--a2a-url) takes only --timeout" if args.a2a_url else (
                "without --base-url/--model the offline scripted agent runs, which takes none of them")
            raise ValueError(f"{', '.join(unused)}: only a model endpoint's requests take them; {who}")
    if not (math.isfinite(args.timeout) and args.timeout > 0):
        raise ValueError(f"--timeout {args.timeout}: seconds per request, > 0")
    if args.max_tokens is not None and args.max_tokens < 1:
        raise ValueError(f"--max-tokens {args.max_tokens}: a reply's token cap, >= 1")
    if not (math.isfinite(args.temperature) and args.temperature >= 0):
        raise ValueError(f"--temperature {args.temperature}: a sampling temperature, >= 0")


def check_instances_or_limit(args: argparse.Namespace) -> None:
    """``--instances`` (indices into the plan) and ``--limit`` (the plan's first N) are two ways to say which
    episodes run: one of them."""
    if getattr(args, "instances", None) is not None and getattr(args, "limit", None) is not None:
        raise ValueError("give --instances I [I ...] (indices into the plan) or --limit N (the plan's first N "
                         "episodes), not both")


# ---------------------------------------------------------------------------- Ctrl-C
def episodes_saved(run_dir: Path) -> tuple[int, int, int] | None:
    """``(finished episodes, planned episodes, decisions)`` recorded in an LLM run folder, or None if it has none."""
    from finenvs.evaluation.runlog import read_trajectories

    try:
        planned = len(json.loads((run_dir / "run.json").read_text()).get("episodes") or [])
        records, _ = read_trajectories(run_dir / "trajectories.jsonl")
    except (OSError, ValueError):
        return None
    finished = {r.get("episode") for r in records if r.get("type") == "episode" and r.get("status") in
                ("complete", "failed")}
    return len(finished), planned, sum(r.get("type") == "step" for r in records)


def newest(parent: Path, marker: str, since: float) -> Path | None:
    """The newest folder under ``parent`` holding ``marker`` and written since ``since`` (a run this command began)."""
    try:
        found = [p.parent for p in Path(parent).glob(f"*/{marker}") if p.stat().st_mtime >= since - 1]
    except OSError:
        return None
    return max(found, key=lambda p: p.stat().st_mtime, default=None)



def name_the_run(args: argparse.Namespace) -> None:
    """Name a new run folder now (UTC time), so that a Ctrl-C can point at it."""
    if args.resume is None and not args.name:
        import datetime as _dt

        args.name = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%d-%H%M%S")


def run_folder_interrupted(args: argparse.Namespace, began: float) -> str:
    """The Ctrl-C line of ``llm`` and ``harness``: the episodes saved in the run folder and how to resume."""
    run_dir = args.resume or (args.out / args.name if args.name else None)
    saved = episodes_saved(run_dir) if run_dir is not None else None
    if saved is None:
        return f"interrupted: finenvs {args.command} stopped before its run folder was written; nothing to resume"
    done, planned, steps = saved
    return (f"interrupted: {done} of {counted(planned, 'episode')} finished ({counted(steps, 'decision')}) saved in "
            f"{run_dir}; resume with: finenvs {args.command} --resume {run_dir}")


def interrupted_line(args: argparse.Namespace, began: float) -> str:
    """The one line a Ctrl-C prints: what the command saved and how to continue (the command's ``interrupted``)."""
    report = getattr(args, "interrupted", None)
    if report is not None:
        return report(args, began)
    return f"interrupted: finenvs {getattr(args, 'command', None) or ''} stopped; nothing to resume".replace("  ", " ")


def print_unfinished(outcomes: Any, shown_at_most: int = 5) -> None:
    """One line per unfinished episode on stderr, naming its cause (at most ``shown_at_most``; the episodes that
    did not start because the endpoint never answered are counted in one line)."""
    unfinished = [o for o in outcomes if o.status not in ("complete", "skipped")]
    not_started = [o for o in unfinished if str(o.message).startswith("not started: ")]
    rest = [o for o in unfinished if o not in not_started]
    for outcome in rest[:shown_at_most]:
        print(f"episode {outcome.spec.label()}: {outcome.status} ({outcome.message})", file=sys.stderr)
    if len(rest) > shown_at_most:
        print(f"... and {len(rest) - shown_at_most} more unfinished episodes (run.json lists each)", file=sys.stderr)
    if not_started:
        print(f"{counted(len(not_started), 'episode')} {not_started[0].message}", file=sys.stderr)


#: The exit code of an agent run stopped where it was asked to stop (``--max-decisions``): not a failure, and not the
#: whole run either (``finenvs score`` calls such a run incomplete with the same code; ``--resume`` continues it).
EXIT_STOPPED = 3


def _stopped_as_asked(summary: Any) -> bool:
    """Every unfinished episode stopped at ``--max-decisions`` (status ``partial``), and nothing else went wrong."""
    unfinished = [o for o in summary.outcomes if o.status not in ("complete", "skipped", "failed")]
    return summary.status == "incomplete" and bool(unfinished) and all(o.status == "partial" for o in unfinished)


def finish_run(summary: Any, note: str = "") -> int:
    """The end of an agent run (``llm``, ``harness``): its unfinished episodes on stderr, then the last line and the
    exit code. A run with an episode the endpoint never answered (every decision failed: not scored) is failed
    (exit 1) even though every episode finished; a run stopped where ``--max-decisions`` asked exits
    :data:`EXIT_STOPPED` with the ``--resume`` command; otherwise ``run <status>``, exit 0 when complete or waiting."""
    print_unfinished(summary.outcomes)
    failed = summary.endpoint_failed
    where = f"{summary.run_dir}/ ({summary.seconds:.1f} s){note}"
    if not failed and _stopped_as_asked(summary):
        print(f"run stopped at --max-decisions as asked: {where}; continue with --resume {summary.run_dir}")
        return EXIT_STOPPED
    if failed and summary.status == "complete":
        print(f"run failed: {len(failed)} of {len(summary.outcomes)} episode(s) got no reply from the endpoint on any "
              f"decision and are not scored: {where}")
        return 1
    extra = f"; {len(failed)} episode(s) got no reply from the endpoint and are not scored" if failed else ""
    print(f"run {summary.status}{extra}: {where}")
    return 0 if summary.status in ("complete", "waiting") and not failed else 1


def reachable_agent(make: Callable[[], Any]) -> Any:
    """Build an agent (an A2A agent reads its Agent Card now) and check its endpoint answers (:func:`check_endpoint`);
    either failing is a ValueError (exit 2) naming the URL, before any work."""
    from finenvs.evaluation.endpoints import EndpointError

    try:
        agent = make()
    except EndpointError as exc:
        raise ValueError(f"the endpoint does not answer, nothing was run: {exc}") from None
    check_endpoint(agent)
    return agent


def check_judge(args: argparse.Namespace) -> None:
    """``--judge-base-url`` and ``--judge-model`` go together, and the judge answers, before any work (it is asked
    after the run)."""
    if bool(getattr(args, "judge_base_url", None)) != bool(getattr(args, "judge_model", None)):
        raise ValueError("--judge-base-url and --judge-model go together")
    if getattr(args, "judge_base_url", None):
        from finenvs.evaluation.endpoints import OpenAIChatAgent

        check_endpoint(OpenAIChatAgent(args.judge_model, args.judge_base_url, api_key_env=args.judge_api_key_env))


def check_endpoint(agent: Any) -> None:
    """Before any work: the agent's endpoint answers one cheap request, or a ValueError (exit 2) names the URL and
    the reason (:func:`finenvs.evaluation.endpoints.check_reachable`)."""
    import asyncio

    from finenvs.evaluation.endpoints import EndpointError, check_reachable

    try:
        asyncio.run(check_reachable(agent))
    except EndpointError as exc:
        raise ValueError(f"the endpoint does not answer, nothing was run: {exc}") from None
