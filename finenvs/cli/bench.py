"""``finenvs bench``: every env x every baseline (and the agents) on a split; writes a scorecard."""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from finenvs.cli.common import (
    ENDPOINT_FLAGS,
    agent_arguments,
    changed_flags,
    check_agent_flags,
    episodes_saved,
    extra_body,
    flag_defaults,
    json_object,
    newest,
    reachable_agent,
)
from finenvs.text.plural import counted


def add_parser(sub: argparse._SubParsersAction) -> None:
    bench = sub.add_parser("bench", help="every env x every baseline on a split; writes a scorecard")
    bench.add_argument("--split", default="eval", help="train, eval or live (default: eval)")
    bench.add_argument("--symbols", nargs="+", help="symbols of single-asset envs (default: each env's dataset)")
    bench.add_argument("--universe", nargs="+", help="FinHedging-v0 universe, >= 2 symbols (default: its 8 stocks)")
    bench.add_argument("--envs", nargs="+", help="env ids (default: all)")
    bench.add_argument("--seed", type=int, default=0)
    bench.add_argument("--out", type=Path, default=Path("finenvs-results"), help="results folder")
    bench.add_argument("--name", help="run folder name (default: UTC timestamp)")
    bench.add_argument("--no-plots", action="store_true", help="skip the PNG charts")
    bench.add_argument("--quiet", action="store_true",
                       help="no progress bar and no tables: only the last line (where the results are) and any problems")
    bench.add_argument("--suite", default="all",
                       help="herculean: Trading, Hedging, Market Insights, Auditing (with HERCULEAN's Table 2 and 3 "
                       "layout); fabpp: Knowledge, Analysis, Options, delta hedging (with the section aggregate); "
                       "all (default): both")
    bench.add_argument("--weights", default="fabpp",
                       help="section weights of the aggregate: a preset (fabpp, equal, reasoning) or "
                       "knowledge=0.3,analysis=0.35,options=0.35")
    bench.add_argument("--env-kwargs", metavar="JSON",
                       help="env arguments as a JSON object for every family the bench runs (pick the family with "
                       "--envs), e.g. --envs FinAudit-v0 --env-kwargs '{\"grading\": \"herculean\"}'; checked "
                       "against each family's env arguments before any work and recorded in the scorecard")
    bench.add_argument("--no-html", action="store_true", help="skip scorecard.html")
    bench.add_argument("--no-agents", action="store_true",
                       help="skip the offline scripted agents that run through the text interface and tools")
    agent_arguments(bench)
    bench.add_argument("--agent-limit", type=int,
                       help="episodes per family for the model (default: each family's whole plan)")
    bench.add_argument("--concurrency", type=int, default=4, help="an agent's episodes in flight (default: 4)")
    bench.add_argument("--retries", type=int, default=4,
                       help="the model's retries of a transient endpoint failure per request, as in finenvs llm "
                       "(default: 4)")
    bench.add_argument("--herculean-rule", action="store_true",
                       help="run the model under HERCULEAN's rule (five attempts, then the episode fails: —)")
    bench.add_argument("--herculean-published", nargs="+", type=Path, default=[],
                       help="HERCULEAN's published-results JSON (its Table 2 and/or Table 3): their rows join the "
                       "HERCULEAN tables beside the agents")
    bench.add_argument("--resume", type=Path,
                       help="continue a bench run folder: finished agent episodes are reused, the rest continue")
    bench.add_argument("--config", type=Path, metavar="FILE",
                       help="a FAB++ evaluation config (YAML or JSON: datasets with limits and task types, sampling "
                       "strategy, seed, total limit): the FAB++ tasks the agents play and the aggregate counts; "
                       "recorded with its digest in the run folder")
    bench.add_argument("--debate", action="store_true",
                       help="also play every baseline and agent of the families with a debate round (FinQA-v0, "
                       "FinOptions-v0) under FAB++'s adversarial debate; the aggregate gains an overall with debate "
                       "(each task's debated score: first answer's score x multiplier, capped)")
    bench.add_argument("--analysis-grading", choices=("fabpp", "answer"), default="fabpp",
                       help="how FAB++'s Analysis tasks are graded: fabpp (default: methodology 30 / calculation 30 / "
                       "answer 40, as the paper) or answer (answer only); recorded in bench.json and the scorecard")
    bench.add_argument("--windows", metavar="SPEC",
                       help="also play the market families' rule baselines and the bench's agents over every period "
                       "of the long shipped histories, e.g. quarterly:2016-01-01:2025-12-31 (monthly/yearly too): "
                       "distributions, bootstrap intervals and the paired difference to Buy&Hold; finished windows "
                       "are cached (baselines) or resumed (agents' run folders)")
    bench.add_argument("--after", metavar="DATE",
                       help="with --windows: keep only windows starting after DATE (a model's knowledge cutoff)")
    bench.add_argument("--alpha-cost-floor", type=float, metavar="DOLLARS",
                       help="FAB++'s Alpha score divides by ln(1 + cost): at zero cost it is undefined (n/a); "
                       "this dollar floor of the cost makes it finite (recorded with the result)")
    bench.add_argument("--price-in", type=float, metavar="DOLLARS",
                       help="$ per million prompt tokens of the model (with --price-out): its cost, and so its FAB++ "
                       "Alpha score (without prices a model's cost is unknown: alpha n/a)")
    bench.add_argument("--price-out", type=float, metavar="DOLLARS", help="$ per million completion tokens")
    bench.add_argument("--prices", type=Path, metavar="FILE",
                       help="a JSON price table {model: {input_per_million, output_per_million}} looked up by the "
                       "model's name (instead of --price-in/--price-out)")
    bench.set_defaults(handler=handle, interrupted=interrupted,
                       flag_defaults=flag_defaults(bench, ENDPOINT_FLAGS + MODEL_FLAGS))


#: The flags that only a model's runs play (``--base-url/--model`` or ``--a2a-url``).
MODEL_FLAGS = ("agent_limit", "herculean_rule", "price_in", "price_out", "prices", "retries")


def _check_flags(args: argparse.Namespace) -> None:
    """Every flag of ``finenvs bench`` that the other checks leave alone: ranges, pairs that contradict each other
    and flags that nothing would play, before any work (one line, exit 2)."""
    check_agent_flags(args)
    if not (args.base_url or args.model or args.a2a_url):
        unused = changed_flags(args, MODEL_FLAGS)
        if unused:
            raise ValueError(f"{', '.join(unused)}: only a model's runs play them; give --base-url/--model or --a2a-url")
    env_kwargs = json_object("--env-kwargs", args.env_kwargs) or {}
    for key, flag in {"split": "--split", "symbol": "--symbols", "symbols": "--symbols or --universe"}.items():
        if key in env_kwargs:
            raise ValueError(f"--env-kwargs names {key!r}, which {flag} sets; give it with {flag} only")
    if args.seed < 0:
        raise ValueError(f"--seed {args.seed}: a reset seed is >= 0")
    for flag, value in (("--agent-limit", args.agent_limit), ("--concurrency", args.concurrency)):
        if value is not None and value < 1:
            raise ValueError(f"{flag} {value}: an integer >= 1")
    if args.retries < 0:
        raise ValueError(f"--retries {args.retries}: an integer >= 0")
    if args.alpha_cost_floor is not None and not (math.isfinite(args.alpha_cost_floor) and args.alpha_cost_floor > 0):
        raise ValueError(f"--alpha-cost-floor {args.alpha_cost_floor}: a dollar floor > 0")
    if args.after is not None and args.windows is None:
        raise ValueError("--after keeps the windows starting after a date: it goes with --windows")
    if args.resume is not None and args.name is not None:
        raise ValueError("--resume continues a bench folder under its own name: drop --name")
    if args.resume is None and args.out.exists() and not args.out.is_dir():
        raise ValueError(f"--out {args.out} is a file; the results folder must be a folder")
    for path in [*args.herculean_published, *([args.config] if args.config else []),
                 *([args.prices] if args.prices else [])]:
        if not Path(path).is_file():
            raise ValueError(f"{path}: no such file")


def interrupted(args: argparse.Namespace, began: float) -> str:
    """The Ctrl-C line: the agent episodes saved in the bench folder and how to resume."""
    bench_dir = args.resume or newest(args.out, "bench.json", began)
    if bench_dir is None:
        return "interrupted: finenvs bench stopped before its folder was written; nothing to resume"
    runs = [saved for run in sorted(Path(bench_dir).glob("agents/*/*/run.json"))
            if (saved := episodes_saved(run.parent)) is not None]
    done, planned = sum(r[0] for r in runs), sum(r[1] for r in runs)
    what = (f"{done} of {counted(planned, 'agent episode')} saved" if planned else "no agent episode saved yet")
    return (f"interrupted: {what} in {bench_dir} (baselines re-run); "
            f"resume with: finenvs bench --resume {bench_dir} (and the same agent flags)")


def _check_bench(args: argparse.Namespace) -> None:
    """``finenvs bench``'s split, env ids, symbols, universe and ``--after`` date, before any work (see
    :func:`finenvs.cli.checks.check_episodes`).

    Without ``--windows`` the split's episodes read the ``core`` dataset (``bench`` checks it too). With
    ``--windows`` the long-history datasets hold more names: a symbol counts if some price dataset holds it,
    and one dataset must hold a whole group (what :func:`finenvs.evaluation.windows.long_dataset` picks).
    """
    from finenvs.data.catalog import default_catalog
    from finenvs.data.splits import SPLITS
    from finenvs.errors import UnknownSymbolError, WindowError
    from finenvs.tasks import task_of

    if args.split not in SPLITS:
        raise WindowError(f"unknown split {args.split!r}; valid splits: {sorted(SPLITS)}")
    for env_id in args.envs or ():
        task_of(env_id)  # KeyError naming the valid env ids
    if args.universe is not None and len(args.universe) < 2:
        raise ValueError(f"--universe {' '.join(args.universe)}: a pairs universe (FinHedging-v0) needs at least 2 "
                         "symbols")
    env_kwargs = json_object("--env-kwargs", args.env_kwargs)
    if env_kwargs:  # every family the bench runs takes them, or the bench refuses before any work
        from finenvs.cli.checks import check_env_kwargs
        from finenvs.evaluation.bench import BenchConfig
        from finenvs.evaluation.bench.config import select_tasks

        for task in select_tasks(BenchConfig(suite=args.suite, envs=args.envs)):
            try:
                check_env_kwargs(task, env_kwargs)
            except ValueError as exc:
                raise ValueError(f"{exc} (the bench gives them to every family it runs: choose the families with "
                                 "--envs)") from None
    if args.after is not None:
        from finenvs.data.asof import to_day

        to_day(args.after, name="--after")
    catalog = default_catalog()
    if args.windows is None:  # the split's episodes read the core dataset
        valid = catalog.symbols("core")
        for flag, group in (("--symbols", args.symbols), ("--universe", args.universe)):
            missing = [s for s in group or () if s not in valid]
            if missing:
                what = f"symbol {missing[0]!r}" if len(missing) == 1 else f"symbols {missing}"
                raise UnknownSymbolError(f"{flag}: unknown {what} in dataset 'core'; valid symbols: {valid}")
        return
    if not (args.symbols or args.universe):
        return
    from finenvs.evaluation.windows import long_dataset, parse_windows

    spec = parse_windows(args.windows)
    held = sorted({s for name in catalog.datasets() for s in catalog.symbols(name)})
    for flag, group in (("--symbols", args.symbols), ("--universe", args.universe)):
        unknown = [s for s in group or () if s not in held]
        if unknown:
            what = f"symbol {unknown[0]!r}" if len(unknown) == 1 else f"symbols {unknown}"
            raise UnknownSymbolError(f"{flag}: unknown {what}: no price dataset holds it; with --windows the valid "
                                     f"symbols are those of the datasets {catalog.datasets()}: {held}")
        if group:
            long_dataset(catalog, spec.start, spec.end, group)  # KeyError: no one dataset holds the whole group



def _weights(text: str) -> str | dict[str, float]:
    """``fabpp`` or ``knowledge=0.3,analysis=0.35,options=0.35``."""
    if "=" not in text:
        return text
    out = {}
    for pair in text.split(","):
        name, _, value = pair.partition("=")
        try:
            out[name.strip()] = float(value)
        except ValueError:
            raise ValueError(f"--weights: {pair!r} is not name=number") from None
    return out


def handle(args: argparse.Namespace) -> int:
    from finenvs.evaluation.bench import BenchConfig, run_bench, terminal_table

    _check_flags(args)  # every flag's range and pairs, before any work
    _check_bench(args)  # symbols and universe (the long-history datasets' with --windows), before any work
    endpoint = {"api_key_env": args.api_key_env, "timeout": args.timeout, "temperature": args.temperature,
                "max_tokens": args.max_tokens, "tool_choice": args.tool_choice,
                "extra_body": extra_body(args.extra_body)}
    if args.base_url or args.model or args.a2a_url:  # an unreachable endpoint (the flag's, $OPENAI_BASE_URL's or an
        from finenvs.evaluation.agents import make_agent  # A2A agent's card): exit 2 before any work
        from finenvs.tasks import tasks

        reachable_agent(lambda: make_agent(tasks()[0].env_id, base_url=args.base_url, model=args.model,
                                           a2a_url=args.a2a_url, **endpoint))
    card = run_bench(
        BenchConfig(
            split=args.split,
            symbols=args.symbols,
            universe=args.universe,
            envs=args.envs,
            seed=args.seed,
            out=args.out,
            run_name=args.name,
            plots=not args.no_plots,
            progress=not args.quiet,
            agents=not args.no_agents,
            suite=args.suite,
            weights=_weights(args.weights),
            html=not args.no_html,
            base_url=args.base_url,
            model=args.model,
            a2a_url=args.a2a_url,
            endpoint=endpoint,
            agent_limit=args.agent_limit,
            concurrency=args.concurrency,
            retries=args.retries,
            resume=args.resume,
            herculean_rule=args.herculean_rule,
            published=args.herculean_published,
            alpha_cost_floor=args.alpha_cost_floor,
            price_in=args.price_in,
            price_out=args.price_out,
            prices=args.prices,
            eval_config=args.config,
            debate=args.debate,
            analysis_grading=args.analysis_grading,
            windows=args.windows,
            after=args.after,
            env_kwargs=json_object("--env-kwargs", args.env_kwargs) or {},
        )
    )
    if not args.quiet:
        print(terminal_table(card))
        print()
    if not args.no_plots and not any(f.endswith(".png") for f in card.files):  # a problem: said even with --quiet
        print("charts skipped: matplotlib is not installed (pip install 'finenvs[plot]')", file=sys.stderr)
    if not args.no_html and not any(f.endswith(".html") for f in card.files):
        print("scorecard.html skipped: markdown-it-py is not installed (pip install 'finenvs[plot]')", file=sys.stderr)
    agent_episodes = sum(len(r["episodes"]) for r in card.agents)
    print(f"scorecard written to {card.run_dir}/ ({counted(len(card.results), 'market episode')}, "
          f"{counted(agent_episodes, 'agent episode')}, {card.seconds:.1f} s)")
    for err in card.errors:
        print(f"ERROR {err['env']} {err['symbol']} {err['policy']}: {err['error']}", file=sys.stderr)
    return 1 if card.errors else 0

