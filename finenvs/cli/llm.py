"""``finenvs llm``: an agent (a model endpoint, a remote A2A agent or the family's offline scripted agent) over a
family's episodes, recorded in a run folder and scored."""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from finenvs.cli.checks import check_env_kwargs, check_episodes
from finenvs.cli.common import (
    ENDPOINT_FLAGS,
    agent_arguments,
    check_agent_flags,
    check_endpoint,
    check_instances_or_limit,
    check_judge,
    check_resume_flags,
    extra_body,
    finish_run,
    flag_defaults,
    judge_arguments,
    model_proxy_arguments,
    name_the_run,
    reachable_agent,
    run_folder_interrupted,
    run_judge,
    selection_arguments,
    text_mode_arguments,
    window_kwargs,
)


def add_parser(sub: argparse._SubParsersAction) -> None:
    llm = sub.add_parser(
        "llm",
        help="run an agent on any env: a model endpoint, a remote A2A agent, or the family's offline scripted agent",
        description="Run an agent through an env's text interface with date-locked tools over the family's default "
        "episodes (or --symbols / --instances / --limit), record its trajectories and score them. The agent: "
        "--base-url/--model (any OpenAI-compatible endpoint; OPENAI_BASE_URL and OPENAI_API_KEY are read when the "
        "flags are absent), --a2a-url (a remote Agent-to-Agent agent), or without either the family's offline "
        "scripted agent.",
    )
    llm.add_argument("--env", default="FinTrading-v0", help="env id, base or text variant (default: FinTrading-v0)")
    selection_arguments(llm)
    agent_arguments(llm)
    model_proxy_arguments(llm, serves="the agent through finenvs' model proxy on 127.0.0.1 (instead of "
                          "--base-url): requests go upstream with the proxy's tool choice set, for local servers that "
                          "offer a small model no tools or parse no tool call (llama.cpp's llama-server: "
                          "--model-tool-choice schema); needs --model")
    llm.add_argument("--max-tool-calls", type=int,
                     help="tool calls per decision (default: the family's, 8; FinAudit-v0 24)")
    text_mode_arguments(llm, live=True)
    llm.add_argument("--decision-timeout", type=float, default=600.0, help="seconds per decision (default: 600)")
    llm.add_argument("--retries", type=int, default=4, help="retries of a transient failure (default: 4)")
    llm.add_argument("--concurrency", type=int, default=4, help="episodes in flight (default: 4)")
    llm.add_argument("--format-retries", type=int, default=0, help="re-ask after a reply without a valid action")
    llm.add_argument("--herculean-rule", action="store_true",
                     help="HERCULEAN's rule: five attempts per decision; a decision still without a valid action "
                     "fails the episode (shown as — in tables) instead of taking the documented default")
    llm.add_argument("--max-decisions", type=int, help="stop each episode after N decisions (smoke runs; with "
                     "--resume: the new cap, none by default)")
    llm.add_argument("--price-in", type=float, help="$ per million prompt tokens")
    llm.add_argument("--price-out", type=float, help="$ per million completion tokens")
    llm.add_argument("--prices", type=Path, help="JSON price table {model: {input_per_million, output_per_million}}")
    llm.add_argument("--out", type=Path, default=Path("finenvs-runs"), help="parent folder of runs")
    llm.add_argument("--name", help="run folder name (default: UTC timestamp)")
    llm.add_argument("--resume", type=Path, help="continue an interrupted run folder (its run.json gives the setup)")
    llm.add_argument("--quiet", action="store_true",
                     help="no progress bar and no tables: only the last line (where the results are) and any problems")
    judge_arguments(llm)
    llm.set_defaults(handler=handle, interrupted=run_folder_interrupted, flag_defaults=flag_defaults(llm, RECORDED + ENDPOINT_FLAGS))


#: The flags whose values a run folder records (run.json's config, env arguments and prices): ``--resume`` takes
#: them from there. (The agent flags too, unless --base-url/--model/--a2a-url name a new agent.)
RECORDED = ("env", "split", "symbols", "instances", "limit", "seeds", "start", "end", "env_kwargs", "max_tool_calls",
            "tools", "python", "debate", "decision_timeout", "retries", "concurrency", "format_retries",
            "herculean_rule", "price_in", "price_out", "prices", "out", "name")


def _recorded_agent(args: argparse.Namespace, meta: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The agent a resumed run recorded, when no flag names another; None otherwise."""
    if meta is None or args.base_url or args.model or args.a2a_url or args.model_proxy:
        return None
    return dict(meta.get("agent") or {})


def _agent(args: argparse.Namespace, env_id: str, meta: Mapping[str, Any] | None = None, proxy: Any = None) -> Any:
    """The agent of ``finenvs llm`` (a resumed run: the one its run.json recorded, unless flags name another),
    talking to ``proxy`` (a :class:`~finenvs.evaluation.model_proxy.ModelProxy`) when one serves the run."""
    from finenvs.evaluation.agents import agent_from_record, make_agent
    from finenvs.evaluation.model_proxy import ProxiedAgent

    recorded = _recorded_agent(args, meta)
    if recorded is not None:
        if proxy is None:
            return agent_from_record(env_id, recorded)
        return ProxiedAgent(agent_from_record(env_id, {**recorded, "base_url": proxy.base_url}), proxy)
    agent = make_agent(env_id, base_url=proxy.base_url if proxy is not None else args.base_url, model=args.model,
                       a2a_url=args.a2a_url, api_key_env=args.api_key_env, timeout=args.timeout,
                       temperature=args.temperature, max_tokens=args.max_tokens, tool_choice=args.tool_choice,
                       extra_body=extra_body(args.extra_body))
    return agent if proxy is None else ProxiedAgent(agent, proxy)


def _model_proxy(args: argparse.Namespace, config: Any, meta: Mapping[str, Any] | None) -> Any:
    """The run's model proxy, not yet started (``--model-proxy``, or the one a resumed run recorded), after its
    upstream answered; a null context when the run has none. In schema mode it forces the episodes' constrained
    commit schemas (:func:`~finenvs.evaluation.model_proxy.constrained_tools`)."""
    recorded = _recorded_agent(args, meta) or {}
    served = recorded.get("model_proxy") or {}
    upstream = args.model_proxy or served.get("upstream")
    if not upstream:
        return contextlib.nullcontext()
    from finenvs.evaluation.endpoints import OpenAIChatAgent
    from finenvs.evaluation.model_proxy import ModelProxy, constrained_tools

    choice = args.model_tool_choice or served.get("tool_choice") or "required"
    timeout = float(recorded.get("timeout", args.timeout))
    constrained = constrained_tools(config.episodes()) if choice == "schema" else None
    proxy = ModelProxy(upstream, tool_choice=choice, timeout=timeout, constrained=constrained)  # a bad URL: exit 2
    try:  # an upstream that does not answer: exit 2 before any run folder (through the proxy it would be a 502)
        check_endpoint(OpenAIChatAgent(recorded.get("model", args.model), upstream,
                                       api_key_env=recorded.get("api_key_env", args.api_key_env)))
    except BaseException:
        proxy.stop()
        raise
    return proxy


def _check_flags(args: argparse.Namespace) -> None:
    """Flags that contradict each other, or that a resumed run would not play, fail before any work."""
    from finenvs.evaluation.llm import HERCULEAN_ATTEMPTS

    check_instances_or_limit(args)
    if args.model_tool_choice is not None and not args.model_proxy:
        raise ValueError("--model-tool-choice is the tool choice of the model proxy: give --model-proxy UPSTREAM_URL "
                         "too")
    if args.model_proxy:
        if args.base_url or args.a2a_url:
            raise ValueError(f"give --model-proxy UPSTREAM_URL (the endpoint through finenvs' proxy) or "
                             f"{'--base-url' if args.base_url else '--a2a-url'}, not both")
        if args.tool_choice is not None:
            raise ValueError("--tool-choice with --model-proxy: the proxy sets the tool choice; use "
                             "--model-tool-choice required|auto|schema")
        if not args.model:
            raise ValueError("--model-proxy needs --model (the model name the upstream serves)")
    if args.resume is not None and not (args.base_url or args.model or args.a2a_url):
        check_resume_flags(args, RECORDED + ENDPOINT_FLAGS)  # the recorded agent, as recorded
    else:
        check_resume_flags(args, RECORDED if args.resume is not None else ())
        check_agent_flags(args)
    if args.prices is not None and (args.price_in is not None or args.price_out is not None):
        raise ValueError("give --prices FILE or --price-in/--price-out, not both")
    if (args.price_in is None) != (args.price_out is None):
        raise ValueError("--price-in and --price-out go together (dollars per million prompt and completion tokens)")
    if args.herculean_rule and 0 < args.format_retries < HERCULEAN_ATTEMPTS - 1:
        raise ValueError(f"--herculean-rule gives every decision {HERCULEAN_ATTEMPTS} attempts; --format-retries "
                         f"{args.format_retries} would give {args.format_retries + 1}: give one of them")
    if bool(args.judge_base_url) != bool(args.judge_model):
        raise ValueError("--judge-base-url and --judge-model go together")


def handle(args: argparse.Namespace) -> int:
    name_the_run(args)  # named now: a Ctrl-C can point at it
    from finenvs.evaluation.llm import PriceTable, RunConfig, run_llm
    from finenvs.evaluation.score import score_run, terminal_report
    from finenvs.tasks import task_of

    meta = None
    _check_flags(args)  # before any work
    if args.resume is not None:
        from finenvs.evaluation.integrity import open_run_to_resume

        meta, _ = open_run_to_resume(args.resume)  # signed with this machine's key and intact, or refused
        config = RunConfig(**{**meta["config"], "max_decisions": args.max_decisions})  # a smoke run's cap ends
        if args.live and not config.live:
            raise ValueError(f"{args.resume} is not a live run; resume it without --live")
        prices = PriceTable(**meta.get("prices", {}))
    else:
        task = task_of(args.env)  # unknown env -> exit 2
        config = RunConfig(
            env_id=task.env_id, symbols=args.symbols, split=args.split, env_kwargs=window_kwargs(args),
            seeds=args.seeds, instances=args.instances, limit=args.limit, max_tool_calls=args.max_tool_calls,
            request_timeout=args.timeout, decision_timeout=args.decision_timeout, max_retries=args.retries,
            concurrency=args.concurrency, format_retries=args.format_retries, max_decisions=args.max_decisions,
            failure_rule="herculean" if args.herculean_rule else "default", live=args.live,
        )
        # a bad selection (unknown split, symbol or date, instance out of range, ...) fails before any work
        check_env_kwargs(task, config.env_kwargs)
        check_episodes(task, config.episodes())
        if args.prices is not None:
            if not args.model:
                raise ValueError("--prices needs --model (the table is looked up by model name)")
            prices = PriceTable.load(args.prices, args.model)
        else:
            prices = PriceTable(args.price_in, args.price_out)
    with _model_proxy(args, config, meta) as proxy:  # started for the run, stopped when it ends
        # unreachable: exit 2 before any run folder
        agent = reachable_agent(lambda: _agent(args, config.env_id, meta, proxy))
        check_judge(args)  # so is an unreachable judge (it is asked after the run)
        if not args.quiet and agent.describe().get("kind") == "scripted":
            print(f"no --base-url/--model or --a2a-url: running the offline scripted agent ({agent.name})",
                  file=sys.stderr)
        summary = run_llm(config, agent, out=args.out, name=args.name, resume=args.resume, prices=prices,
                          progress=not args.quiet)
    report = terminal_report(score_run(summary.run_dir))  # scored (score.json written) whether shown or not
    if not args.quiet:
        print(report)
    run_judge(args, summary.run_dir)
    return finish_run(summary)

