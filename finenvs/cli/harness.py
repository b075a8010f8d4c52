"""``finenvs harness``: an external agent program run once per decision, grounded by the episode's MCP server
(HERCULEAN's harness), confined by a sandbox."""

from __future__ import annotations

import argparse
from pathlib import Path

from finenvs.cli.checks import check_env_kwargs, check_episodes
from finenvs.cli.common import (
    check_instances_or_limit,
    check_resume_flags,
    finish_run,
    flag_defaults,
    model_proxy_arguments,
    name_the_run,
    run_folder_interrupted,
    selection_arguments,
    text_mode_arguments,
    window_kwargs,
)


def add_parser(sub: argparse._SubParsersAction) -> None:
    harness = sub.add_parser(
        "harness", help="run an external agent program once per decision, grounded by an MCP server (HERCULEAN's "
        "harness)",
        description="Run the family's episodes (as finenvs llm selects them) by invoking --agent-cmd once per "
        "decision. Placeholders in the command: {prompt_file} (the decision's prompt), {mcp_config} (an "
        "mcpServers JSON naming the episode's MCP server over HTTP), {url}, {workdir}, {env_id}, {episode}, {step}, "
        "{model_url} (with --model-proxy). "
        "The decision is what the program commits through the server's commit_action; no commit within --timeout "
        "is HERCULEAN's failure (five attempts, then the episode fails) unless --default-action is given. The program "
        "runs confined (bubblewrap): the file system read-only, the data, caches, run key and run folders hidden, "
        "writable only {workdir} and a private HOME and /tmp, its own PID namespace (nothing it starts outlives the "
        "attempt), the network shared (loopback MCP, its model API). The run folder is finenvs llm's: finenvs "
        "score, bench and --resume read it.")
    harness.add_argument("--env", default="FinTrading-v0", help="env id, base or text variant (default: FinTrading-v0)")
    harness.add_argument("--agent-cmd", help="the agent program's command line (no shell), with placeholders")
    selection_arguments(harness)
    harness.add_argument("--timeout", type=float, default=600.0, help="seconds per invocation (default: 600)")
    harness.add_argument("--commit-grace", type=float, default=None, metavar="SECONDS",
                         help="seconds the program may go on after its commit_action before it is ended (default: "
                         "5; the decision is taken at the commit)")
    harness.add_argument("--default-action", action="store_true",
                         help="a decision without a commit takes the protocol's default action instead of failing "
                         "the episode after five attempts")
    text_mode_arguments(harness, live=True)
    harness.add_argument("--max-tool-calls", type=int, help="tool calls per decision (default: the family's)")
    harness.add_argument("--max-decisions", type=int, help="stop each episode after N decisions (smoke runs; with "
                         "--resume: the new cap, none by default)")
    harness.add_argument("--out", type=Path, default=Path("finenvs-runs"), help="parent folder of runs")
    harness.add_argument("--name", help="run folder name (default: UTC timestamp)")
    harness.add_argument("--resume", type=Path, help="continue a harness run folder (its run.json gives the setup)")
    harness.add_argument("--unconfined", action="store_true",
                         help="run the agent program without the sandbox, with your own access to every file (the "
                         "data, caches, run folders) and processes that may outlive an attempt; the run is marked "
                         "unconfined. Default: confined by bubblewrap, refused where none works")
    harness.add_argument("--mask", type=Path, action="append", default=[], metavar="PATH",
                         help="a further file or folder the confined agent program must not read (repeatable)")
    harness.add_argument("--agent-home", type=Path, metavar="DIR",
                         help="a folder bound writable as the confined program's HOME (its settings and state "
                         "across attempts); default: an empty private home per attempt")
    model_proxy_arguments(harness, serves="the agent program through finenvs' model proxy on 127.0.0.1, for "
                          "agent CLIs that stream (opencode): requests go upstream non-streaming with tool_choice set, "
                          "replies come back as the stream the program asked for. The program gets the proxy's URL "
                          "as {model_url} and FINENVS_MODEL_URL")
    harness.add_argument("--quiet", action="store_true",
                         help="no progress bar and no tables: only the last line (where the results are) and any problems")
    harness.set_defaults(handler=handle, interrupted=run_folder_interrupted,
                         flag_defaults=flag_defaults(harness, RECORDED))


#: The flags whose values a harness run folder records (run.json's config and agent): ``--resume`` takes them from
#: there.
RECORDED = ("env", "split", "symbols", "instances", "limit", "seeds", "start", "end", "env_kwargs", "tools", "python",
            "debate", "max_tool_calls", "default_action", "timeout", "out", "name")


def handle(args: argparse.Namespace) -> int:
    name_the_run(args)  # named now: a Ctrl-C can point at it
    from finenvs.evaluation.harness import COMMIT_GRACE_SECONDS, HarnessAgent, run_harness
    from finenvs.evaluation.llm import RunConfig
    from finenvs.evaluation.score import score_run, terminal_report
    from finenvs.tasks import task_of

    check_instances_or_limit(args)
    if args.resume is not None:
        from finenvs.evaluation.integrity import open_run_to_resume

        check_resume_flags(args, RECORDED)  # flags a resumed run would not play fail before any work
        meta, _ = open_run_to_resume(args.resume)  # the command it runs comes from a verified run.json
        recorded = meta.get("agent") or {}
        if recorded.get("kind") != "harness":
            raise ValueError(f"{args.resume} is not a harness run (its agent is {recorded.get('kind')!r}); "
                             "continue it with finenvs llm --resume")
        config = RunConfig(**{**meta["config"], "max_decisions": args.max_decisions})  # a smoke run's cap ends
        if args.live and not config.live:
            raise ValueError(f"{args.resume} is not a live run; resume it without --live")
        command = args.agent_cmd or recorded["command"]
        proxy = recorded.get("model_proxy") or {}
        model_proxy = args.model_proxy or proxy.get("upstream")
        tool_choice = args.model_tool_choice or proxy.get("tool_choice") or "required"
        timeout = float(recorded.get("timeout", args.timeout))
        grace = float(recorded.get("commit_grace", COMMIT_GRACE_SECONDS) if args.commit_grace is None
                      else args.commit_grace)
        confined = (recorded.get("confinement") or {}).get("confined", False)
        if confined == args.unconfined:
            raise ValueError(f"{args.resume} was recorded {'confined' if confined else 'unconfined'}; resume it "
                             f"{'without' if confined else 'with'} --unconfined so that the whole run is one or "
                             "the other")
    else:
        if not args.agent_cmd:
            raise ValueError("--agent-cmd is required (or --resume RUN)")
        task = task_of(args.env)
        config = RunConfig(
            env_id=task.env_id, symbols=args.symbols, split=args.split, env_kwargs=window_kwargs(args),
            seeds=args.seeds, instances=args.instances, limit=args.limit, max_tool_calls=args.max_tool_calls,
            max_decisions=args.max_decisions, failure_rule="default" if args.default_action else "herculean",
            max_consecutive_endpoint_failures=None, live=args.live,
        )
        check_env_kwargs(task, config.env_kwargs)
        check_episodes(task, config.episodes())  # before any folder is written
        command, timeout = args.agent_cmd, args.timeout
        model_proxy, tool_choice = args.model_proxy, args.model_tool_choice or "required"
        grace = COMMIT_GRACE_SECONDS if args.commit_grace is None else args.commit_grace
    if not (grace >= 0 and grace <= timeout):
        raise ValueError(f"--commit-grace {grace:g} must be between 0 and --timeout ({timeout:g} s)")
    constrained = None
    if model_proxy and tool_choice == "schema":  # the episodes' own constrained commit schemas (an enum of pairs)
        from finenvs.evaluation.model_proxy import constrained_tools

        constrained = constrained_tools(config.episodes())
    agent = HarnessAgent(command, timeout=timeout, unconfined=args.unconfined, mask=tuple(args.mask),
                         home=args.agent_home, commit_grace=grace, model_proxy=model_proxy,
                         model_tool_choice=tool_choice, model_constrained=constrained)
    summary = run_harness(config, agent, out=args.out, name=args.name, resume=args.resume, progress=not args.quiet)
    report = terminal_report(score_run(summary.run_dir))  # scored (score.json written) whether shown or not
    if not args.quiet:
        print(report)
    return finish_run(summary, f"; each invocation's prompt, MCP config and output logs are in {summary.run_dir}/"
                      "harness/")
