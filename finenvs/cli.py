"""The ``finenvs`` command line.

    finenvs list                                  registered envs, one line each
    finenvs run --env FinTrading-v0 --policy momentum [--symbol AAPL --split eval --seed 0]
    finenvs bench [--split eval --symbols AAPL MSFT --universe AAPL MSFT NVDA --out finenvs-results]
    finenvs data verify [--file my_prices.csv]
finenvs data add --prices new_bars.csv --symbol TSLA | --news items.csv | --filings sections.csv
finenvs data list
    finenvs llm [--base-url URL --model NAME] [--symbols TSLA AAPL --split eval --out finenvs-runs]
    finenvs llm --resume RUN_DIR
    finenvs score RUN_DIR
    finenvs mcp --env FinTrading-v0 --symbol TSLA --split eval
    finenvs train --algo ppo --env FinTrading-v0 --timesteps 100000 [--seeds 0,1,2 --source real --out runs/rl --overwrite]

Bad input (unknown env, policy, symbol, split or date; unreadable data) prints
one line ``finenvs: error: ...`` and exits with code 2; ``data verify`` exits 1
when a data file or a table of the built catalog cache fails its checks. ``score`` exits 0 when the run reproduces, 3
when it is incomplete (an interrupted run to resume) and 1 when it does not
reproduce or was changed after it was written. An unexpected error prints one
line and exits 1 (``finenvs --debug ...`` or ``FINENVS_DEBUG=1`` shows its
traceback). Ctrl-C in any command prints one line, what was saved and how to
continue (``llm``: ``interrupted: 12 of 40 episodes finished (..) saved in DIR;
resume with: finenvs llm --resume DIR``), and exits 130.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

EXIT_USAGE = 2
EXIT_DATA_INVALID = 1
#: An unforeseen error (a bug): one line, or the traceback with ``--debug`` / ``FINENVS_DEBUG=1``.
EXIT_INTERNAL = 1
#: Ctrl-C (128 + SIGINT), as shells report it.
EXIT_INTERRUPTED = 130


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # one line, exit 2 (argparse would print the usage too)
        print(f"finenvs: error: {message} (see `{self.prog} --help`)", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="finenvs", description="Gymnasium environments for financial agents.")
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    parser.add_argument("--debug", action="store_true",
                        help="show the traceback of an unexpected error (also: FINENVS_DEBUG=1)")
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)

    listing = sub.add_parser("list", help="list the registered environments")
    listing.add_argument("--markdown", action="store_true",
                         help="print the agent-path matrix (every family x every agent path) as a Markdown table")

    run = sub.add_parser("run", help="run one episode of an env with a baseline policy")
    run.add_argument("--env", required=True, help="env id, e.g. FinTrading-v0")
    run.add_argument("--policy", required=True, help="baseline name (see `finenvs list`)")
    run.add_argument("--symbol", help="ticker (default: the plan's first, MSFT for the market envs)")
    run.add_argument("--symbols", nargs="+", help="FinHedging-v0 universe (default: its 8 stocks)")
    run.add_argument("--split", default="eval", help="train, eval or live (default: eval)")
    run.add_argument("--start", help="window start YYYY-MM-DD (overrides the split's)")
    run.add_argument("--end", help="window end YYYY-MM-DD (overrides the split's)")
    run.add_argument("--seed", type=int, default=0)
    run.add_argument("--fee-bps", type=float, help="fee in basis points (default: the env's, 5)")
    run.add_argument("--fill", choices=["close", "next_open"], help="fill model (default: close)")
    run.add_argument("--json", action="store_true", help="print the result as JSON")
    run.add_argument("--chart", type=Path, help="write the episode's equity/drawdown chart to this PNG")
    run.add_argument("--instance", type=int, help="index into the env's plan: audit instance, question, options task, "
                     "hedging path (default: 0)")
    run.add_argument("--topic", help="FinQA-v0: ask this topic (with --seed as its generation seed; 0 = published)")
    run.add_argument("--reports", type=Path, help="FinReport-v0: write each weekly report (Markdown) and its "
                     "quality checks (JSON) into this folder")

    bench = sub.add_parser("bench", help="every env x every baseline on a split; writes a scorecard")
    bench.add_argument("--split", default="eval", help="train, eval or live (default: eval)")
    bench.add_argument("--symbols", nargs="+", help="symbols of single-asset envs (default: each env's dataset)")
    bench.add_argument("--universe", nargs="+", help="FinHedging-v0 universe, >= 2 symbols (default: its 8 stocks)")
    bench.add_argument("--envs", nargs="+", help="env ids (default: all)")
    bench.add_argument("--seed", type=int, default=0)
    bench.add_argument("--out", type=Path, default=Path("finenvs-results"), help="results folder")
    bench.add_argument("--name", help="run folder name (default: UTC timestamp)")
    bench.add_argument("--no-plots", action="store_true", help="skip the PNG charts")
    bench.add_argument("--quiet", action="store_true", help="no progress bar")
    bench.add_argument("--suite", default="all",
                       help="herculean: Trading, Hedging, Market Insights, Auditing (with HERCULEAN's Table 2 and 3 "
                       "layout); fabpp: Knowledge, Analysis, Options, delta hedging (with the section aggregate); "
                       "all (default): both")
    bench.add_argument("--weights", default="fabpp",
                       help="section weights of the aggregate: a preset (fabpp, equal, reasoning) or "
                       "knowledge=0.3,analysis=0.35,options=0.35")
    bench.add_argument("--no-html", action="store_true", help="skip scorecard.html")
    bench.add_argument("--no-agents", action="store_true",
                       help="skip the offline scripted agents that run through the text interface and tools")
    _agent_arguments(bench)
    bench.add_argument("--agent-limit", type=int,
                       help="episodes per family for the model (default: each family's whole plan)")
    bench.add_argument("--concurrency", type=int, default=4, help="an agent's episodes in flight (default: 4)")
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
                       "FinOptions-v0) under FAB++'s adversarial debate; the aggregate gains an overall with the "
                       "debate multipliers")
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
    _selection_arguments(llm)
    _agent_arguments(llm)
    llm.add_argument("--max-tool-calls", type=int,
                     help="tool calls per decision (default: the family's, 8; FinAudit-v0 24)")
    _text_mode_arguments(llm, live=True)
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
    llm.add_argument("--quiet", action="store_true", help="no progress bar")
    _judge_arguments(llm)

    compare = sub.add_parser("compare", help="two or more run folders side by side (bench runs and/or agent runs): "
                             "headline metrics with bootstrap 95%% intervals over episodes, paired differences where "
                             "the episodes match; exit 2 on a folder that is neither kind")
    compare.add_argument("runs", nargs="+", type=Path, metavar="RUN_DIR",
                         help="folders written by `finenvs bench` (scorecard.json) or `finenvs llm`/`harness` "
                         "(run.json + trajectories.jsonl); the first is run A")
    compare.add_argument("--out", type=Path, help="folder for compare.md, compare.json and compare.png "
                         "(default: finenvs-compare/<UTC time>)")
    compare.add_argument("--json", action="store_true", help="print the comparison as JSON")

    score = sub.add_parser("score", help="check and re-score a run folder offline from its trajectories; exit 0 "
                           "reproduced, 3 incomplete, 1 not reproduced or tampered")
    score.add_argument("run_dir", type=Path, nargs="?", help="a folder written by `finenvs llm`, `harness` or `mcp`")
    score.add_argument("--json", action="store_true", help="print the score as JSON")
    score.add_argument("--herculean-decisions", nargs="+", type=Path, metavar="FILE",
                       help="score HERCULEAN trading-decision JSON files in FinTrading-v0 under both conventions "
                       "instead of a run folder (exit 0 all scored, 2 a file refused)")
    score.add_argument("--export-herculean", type=Path, metavar="DIR",
                       help="write the run's FinTrading-v0 episodes into DIR as HERCULEAN trading-decision files")
    _judge_arguments(score)

    harness = sub.add_parser(
        "harness", help="run an external agent program once per decision, grounded by an MCP server (HERCULEAN's "
        "harness)",
        description="Run the family's episodes (as finenvs llm selects them) by invoking --agent-cmd once per "
        "decision. Placeholders in the command: {prompt_file} (the decision's prompt), {mcp_config} (an "
        "mcpServers JSON naming the episode's MCP server over HTTP), {url}, {workdir}, {env_id}, {episode}, {step}. "
        "The decision is what the program commits through the server's commit_action; no commit within --timeout "
        "is HERCULEAN's failure (five attempts, then the episode fails) unless --default-action is given. The program "
        "runs confined (bubblewrap): the file system read-only, the data, caches, run key and run folders hidden, "
        "writable only {workdir} and a private HOME and /tmp, its own PID namespace (nothing it starts outlives the "
        "attempt), the network shared (loopback MCP, its model API). The run folder is finenvs llm's: finenvs "
        "score, bench and --resume read it.")
    harness.add_argument("--env", default="FinTrading-v0", help="env id, base or text variant (default: FinTrading-v0)")
    harness.add_argument("--agent-cmd", help="the agent program's command line (no shell), with placeholders")
    _selection_arguments(harness)
    harness.add_argument("--timeout", type=float, default=600.0, help="seconds per invocation (default: 600)")
    harness.add_argument("--default-action", action="store_true",
                         help="a decision without a commit takes the protocol's default action instead of failing "
                         "the episode after five attempts")
    _text_mode_arguments(harness, live=True)
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
    harness.add_argument("--quiet", action="store_true", help="no progress bar")

    sandbox = sub.add_parser("sandbox", help="the optional sandboxed Python tool (run_python): set it up, check it")
    sandbox_sub = sandbox.add_subparsers(dest="sandbox_command", parser_class=_Parser)
    setup = sandbox_sub.add_parser("setup", help="put the Pyodide npm package (sha256-checked) where the sandbox "
                                   "reads it; needs npm and the deno wheel (finenvs[sandbox]); install time only")
    setup.add_argument("--force", action="store_true", help="set it up again even if it is in place")
    sandbox_sub.add_parser("status", help="whether run_python can run here, and why not")

    skills = sub.add_parser("skills", help="agent skills (SKILL.md) of every family")
    skills_sub = skills.add_subparsers(dest="skills_command", parser_class=_Parser)
    export = skills_sub.add_parser("export", help="write DIR/finenvs-<family>/SKILL.md for every family: protocol, "
                                   "answer format, tools, date rules, how to run it, an example prompt")
    export.add_argument("dir", type=Path, help="output folder (e.g. .claude/skills)")
    export.add_argument("--families", nargs="+", help="only these families (default: all)")

    mcp = sub.add_parser("mcp", help="serve one episode of any env over MCP (stdio): its tools and commit_action")
    mcp.add_argument("--env", default="FinTrading-v0", help="env id, base or text variant (default: FinTrading-v0)")
    _selection_arguments(mcp, one=True)
    mcp.add_argument("--out", type=Path, default=Path("finenvs-mcp-runs"), help="parent folder of the run folder")
    mcp.add_argument("--name", help="run folder name (default: mcp-<env>-<label>-<UTC time>)")
    _text_mode_arguments(mcp, live=False)
    mcp.add_argument("--print-config", action="store_true",
                     help="print a ready .mcp.json entry for these arguments (absolute command path) and exit")

    train = sub.add_parser(
        "train",
        help="train a stable-baselines3 baseline and score it beside the rule baselines (needs finenvs[rl])",
        description="Train PPO, A2C or DQN (FinTrading-v0, FinHedging-v0) or SAC or TD3 (FinDeltaHedge-v0) on the "
        "train split (real and/or synthetic), then evaluate the saved model deterministically on the eval and live "
        "splits beside every rule baseline on the same episodes, and print CR/SR/MDD per split. Each seed writes a "
        "new folder <out>/<env>__<algo>__s<seed>/ with model.zip, vecnormalize.pkl and result.json. A run never "
        "overwrites another: when that folder exists the run writes <env>__<algo>__s<seed>-2/ (then -3, ...) "
        "beside it, unless --overwrite replaces it.",
    )
    train.add_argument("--algo", required=True, choices=_RL_ALGOS, help="algorithm")
    train.add_argument("--env", default="FinTrading-v0", help="env id (default: FinTrading-v0)")
    train.add_argument("--timesteps", required=True, type=int, help="training env steps per seed")
    train.add_argument("--seed", type=int, default=0, help="seed of one run (default: 0)")
    train.add_argument("--seeds", type=_seed_list, help="comma-separated seeds, one run each, e.g. 0,1,2 (overrides --seed)")
    train.add_argument("--source", choices=["real", "synthetic", "both"],
                       help="training data (default: real; synthetic for sac/td3)")
    train.add_argument("--synthetic", help="synthetic market as JSON, e.g. '{\"model\": \"gbm\", \"params\": {\"mu\": 0.1}}'")
    train.add_argument("--env-kwargs", help="env arguments of every split as JSON, e.g. '{\"fee_bps\": 10, \"window\": 20}'")
    train.add_argument("--n-envs", type=int, help="parallel training envs (default: the script's, 4 or 1)")
    train.add_argument("--eval-splits", help="comma-separated: eval, live, synthetic (default: eval,live)")
    train.add_argument("--eval-episodes", type=int, help="episodes per evaluation split (default: one per symbol)")
    train.add_argument("--normalize-obs", action=argparse.BooleanOptionalAction, default=None,
                       help="VecNormalize observations, frozen at evaluation (default: on)")
    train.add_argument("--out", type=Path, default=Path("runs/rl"), help="parent folder of the runs (default: runs/rl)")
    train.add_argument("--overwrite", action="store_true",
                       help="replace an existing <out>/<env>__<algo>__s<seed>/ (default: keep it and write the "
                       "new run to <env>__<algo>__s<seed>-2/, -3, ...)")
    train.add_argument("--quiet", action="store_true", help="no progress bar")
    train.add_argument("--json", action="store_true", help="print the results as JSON instead of the table")

    data = sub.add_parser("data", help="data tools")
    data_sub = data.add_subparsers(dest="data_command", parser_class=_Parser)
    verify = data_sub.add_parser("verify", help="check hashes and invariants of the shipped (or a user's) data, and the built catalog cache")
    verify.add_argument("--file", type=Path, help="check a user CSV/Parquet file instead of the shipped data")
    verify.add_argument("--symbol", help="symbol of a file without a symbol column (default: file stem)")
    verify.add_argument("--data-dir", type=Path, help="folder with a MANIFEST.json (default: shipped data)")
    add = data_sub.add_parser("add", help="append bars, news items or filing sections to the user layer of the "
                              "catalog (hashed and validated; read under the same as-of rules)")
    what = add.add_mutually_exclusive_group(required=True)
    what.add_argument("--prices", type=Path, help="CSV/Parquet of bars (date,open,high,low,close,volume) to append")
    what.add_argument("--news", type=Path,
                      help="CSV/Parquet of news items (id,symbol,published_at with time zone,title,source,url,...)")
    what.add_argument("--filings", type=Path,
                      help="CSV/Parquet of filing sections (filing_id,symbol,form,filed,section,text,...)")
    add.add_argument("--symbol", help="symbol of the bars (required with --prices)")
    add.add_argument("--dataset", default="core", help="price dataset to append to (default: core)")
    data_sub.add_parser("list", help="price datasets with symbol counts and date ranges, shipped and user")
    return parser


def _text_mode_arguments(parser: argparse.ArgumentParser, *, live: bool) -> None:
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


def _selection_arguments(parser: argparse.ArgumentParser, *, one: bool = False) -> None:
    """Flags choosing a family's episodes (its task spec's plan); ``one``: a single episode (MCP)."""
    parser.add_argument("--split", default="eval", help="train, eval or live (default: eval)")
    if one:
        parser.add_argument("--symbol", help="ticker of a market env (default: the plan's first)")
        parser.add_argument("--instance", type=int, help="index into the plan: question, audit instance, options "
                            "task, hedging path (default: 0)")
        parser.add_argument("--seed", type=int, default=0, help="reset seed (default: 0)")
    else:
        parser.add_argument("--instances", nargs="+", type=int,
                            help="indices into the plan: questions, audit instances, options tasks, hedging paths")
        parser.add_argument("--limit", type=int, help="run only the plan's first N episodes")
        parser.add_argument("--seeds", nargs="+", type=int, default=[0], help="reset seeds (default: 0)")
    parser.add_argument("--symbols", nargs="+",
                        help="market envs: one episode per symbol (default: HERCULEAN's MSFT TSLA AAPL NVDA); "
                        "FinHedging-v0: the universe (default: its 8 stocks)")
    parser.add_argument("--start", help="window start YYYY-MM-DD (overrides the split's)")
    parser.add_argument("--end", help="window end YYYY-MM-DD (overrides the split's)")
    parser.add_argument("--env-kwargs", help="more env arguments as a JSON object, e.g. '{\"fee_bps\": 10}', or "
                        "FinReport-v0's peer basket of a user symbol '{\"peers\": {\"TSLA2\": [\"AAPL\", "
                        "\"MSFT\"]}}' (--start/--end win over the same keys; recorded with the run)")


def _check_env_kwargs(task: Any, kwargs: Mapping[str, Any]) -> None:
    """Every env argument must be one the family's env (or its text wrapper) takes: checked before any work."""
    from finenvs.registration import env_arguments
    from finenvs.wrappers.text import split_text_kwargs

    env_kwargs, _ = split_text_kwargs(kwargs)
    params, any_keyword = env_arguments(task.env_id)
    if any_keyword:
        return
    unknown = sorted(set(env_kwargs) - set(params))
    if unknown:
        raise ValueError(f"--env-kwargs: {task.env_id} takes no argument {', '.join(map(repr, unknown))}; its "
                         f"arguments: {', '.join(sorted(params))}")


def _check_episodes(task: Any, episodes: list[Any], *, build: bool = True) -> None:
    """Check the env arguments of a run's episodes before any work or folder: fails in well under a second.

    Named splits, dates (``YYYY-MM-DD``, start not after end: the same window rule the market envs apply)
    and symbols (the catalog's symbols of the env's price dataset, user-added ones included; a pairs
    universe needs two). Each error names the valid choices. Episodes on a user's own bars (``data=``)
    and synthetic markets are left to the env. With ``build``, a market family's env is then built once per
    distinct argument set (milliseconds each), so an argument only the env can judge fails here too
    (``finenvs run`` builds its one env right after, writing nothing first, and passes ``build=False``).

    Raises:
        UnknownSymbolError: A symbol the env's dataset does not hold (lists those it does).
        WindowError: An unknown split, a date that is not a date, or a start after the end.
        ValueError: A pairs universe of fewer than two symbols.
        DataError: An unknown price dataset (lists the valid ones).
    """
    from finenvs.data.catalog import DEFAULT_DATASET, default_catalog
    from finenvs.data.splits import DEFAULT_SPLIT, SPLITS, resolve_split, split_bounds
    from finenvs.errors import UnknownSymbolError, WindowError

    seen: set[str] = set()
    unknown: dict[str, list[str]] = {}  # dataset -> symbols it does not hold, over every episode
    for episode in episodes:
        kwargs = {**task.kwargs, **episode.env_kwargs}
        key = json.dumps(kwargs, sort_keys=True, default=str)
        if key in seen or kwargs.get("data") is not None:  # a user's own bars: the env checks them
            continue
        seen.add(key)
        split = kwargs.get("split")
        windowed = "end" in task.run_options  # a date window (the market families); the others' plans check
        if windowed and split is not None and split != DEFAULT_SPLIT and split not in SPLITS:  # their own splits
            raise WindowError(f"unknown split {split!r}; valid splits: {sorted(SPLITS)}")
        if windowed and ("split" in kwargs or "start" in kwargs or "end" in kwargs):  # the envs' window rule
            split_bounds(resolve_split(split, user_data=False), kwargs.get("start"), kwargs.get("end"))
        symbols = [kwargs["symbol"]] if kwargs.get("symbol") else list(kwargs.get("symbols") or ())
        if task.bench.universe and kwargs.get("symbols") is not None and len(symbols) < 2:
            raise ValueError(f"{task.env_id}: a pairs universe needs at least 2 symbols, got {symbols}")
        if not symbols or kwargs.get("source", "real") != "real":
            continue
        dataset = kwargs.get("dataset") or DEFAULT_DATASET
        valid = default_catalog().symbols(dataset)  # an unknown dataset: DataError naming the valid ones
        missing = unknown.setdefault(dataset, [])
        missing += [s for s in symbols if s not in valid and s not in missing]
    for dataset, missing in unknown.items():
        if missing:
            what = f"symbol {missing[0]!r}" if len(missing) == 1 else f"symbols {missing}"
            raise UnknownSymbolError(f"unknown {what} in dataset {dataset!r} of {task.env_id}; valid symbols: "
                                     f"{default_catalog().symbols(dataset)}")
    if build and "end" in task.run_options:  # the market envs build in milliseconds: build each distinct one
        from finenvs.evaluation.session import make_base_env  # once, so a bad argument (a user symbol without

        built: set[str] = set()  # FinReport-v0's peer basket, a fee out of range) fails here, before the run folder
        for episode in episodes:
            key = json.dumps(episode.env_kwargs, sort_keys=True, default=str)
            if key not in built:
                built.add(key)
                make_base_env(episode).close()


def _check_bench(args: argparse.Namespace) -> None:
    """``finenvs bench``'s split, env ids, symbols, universe and ``--after`` date, before any work (see
    :func:`_check_episodes`).

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


def _judge_arguments(parser: argparse.ArgumentParser) -> None:
    """Flags of the optional judge model (families whose task spec has a judge: FinReport-v0's reports)."""
    parser.add_argument("--judge-base-url", help="an OpenAI-compatible endpoint whose model verifies the family's "
                        "rubric checklist (FinReport-v0); reported in judge.json beside the deterministic score")
    parser.add_argument("--judge-model", help="the judge's model name")
    parser.add_argument("--judge-api-key-env", default="OPENAI_API_KEY",
                        help="env var holding the judge endpoint's key (default: OPENAI_API_KEY)")


def _run_judge(args: argparse.Namespace, run_dir: Path) -> None:
    """Judge a run folder with ``--judge-base-url/--judge-model`` when given; print its table."""
    if not (args.judge_base_url or args.judge_model):
        return
    if not (args.judge_base_url and args.judge_model):
        raise ValueError("--judge-base-url and --judge-model go together")
    from finenvs.evaluation.endpoints import OpenAIChatAgent
    from finenvs.evaluation.judge import judge_run, render_judge_markdown

    judge = OpenAIChatAgent(args.judge_model, args.judge_base_url, api_key_env=args.judge_api_key_env)
    print(render_judge_markdown(judge_run(run_dir, judge, progress=not getattr(args, "quiet", False))))


def _agent_arguments(parser: argparse.ArgumentParser) -> None:
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


#: ``finenvs train --algo`` choices; the scripts of finenvs.baselines.rl (kept here so the parser stays light).
_RL_ALGOS = ("ppo", "a2c", "dqn", "sac", "td3")


def _seed_list(text: str) -> list[int]:
    """``0,1,2`` -> ``[0, 1, 2]`` (argparse type of ``--seeds``)."""
    try:
        seeds = [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of integers, e.g. 0,1,2") from None
    if not seeds or any(s < 0 for s in seeds):
        raise argparse.ArgumentTypeError(f"{text!r}: give one or more seeds >= 0, e.g. 0,1,2")
    return seeds


def _json_object(flag: str, text: str | None) -> dict[str, Any] | None:
    if text is None:
        return None
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"{flag} is not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise ValueError(f"{flag} must be a JSON object, got {text!r}")
    return value


def _cmd_train(args: argparse.Namespace) -> int:
    """``finenvs train``: one run of a finenvs.baselines.rl script per seed, then the summary table."""
    import dataclasses

    from finenvs.baselines.rl import load_algo
    from finenvs.baselines.rl.common import check_args, require_rl, summary_table

    script = load_algo(args.algo)
    overrides: dict[str, Any] = {"env_id": args.env, "timesteps": args.timesteps, "out": str(args.out),
                                 "overwrite": args.overwrite, "progress": not args.quiet}
    for key in ("source", "n_envs", "eval_episodes", "normalize_obs"):
        if getattr(args, key) is not None:
            overrides[key] = getattr(args, key)
    if args.eval_splits is not None:
        overrides["eval_splits"] = tuple(s.strip() for s in args.eval_splits.split(",") if s.strip())
    synthetic = _json_object("--synthetic", args.synthetic)
    if synthetic is not None:
        overrides["synthetic"] = synthetic
    env_kwargs = _json_object("--env-kwargs", args.env_kwargs)
    defaults = script.Args()
    if env_kwargs is not None:
        overrides["env_kwargs"] = {**defaults.env_kwargs, **env_kwargs}
    runs = [dataclasses.replace(defaults, seed=seed, **overrides) for seed in (args.seeds or [args.seed])]
    check_args(args.algo, runs[0])  # every bad argument fails here, before any training
    for run_args in runs[1:]:
        check_args(args.algo, run_args, build_envs=False)
    require_rl()
    results = [script.run(run_args) for run_args in runs]
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    print(summary_table(results))
    print()
    folders = [Path(result["files"]["result"]).parent for result in results]
    for result, folder in zip(results, folders, strict=True):
        print(f"seed {result['seed']}: {folder}/ (trained {result['train']['seconds']:.1f} s)")
    print(f"{len(results)} run(s) of {args.algo} on {args.env} written to {', '.join(f'{f}/' for f in folders)}")
    return 0


def agent_matrix() -> str:
    """Every registered family x every agent path, as the README shows it (generated from the task specs)."""
    from finenvs.tasks import load, tasks

    rows = ["| env | text env | offline scripted agent (`finenvs llm`) | endpoint (`--base-url`) | MCP (`finenvs mcp`) "
            "| A2A (`--a2a-url`) | `finenvs score` | `finenvs bench --base-url` |",
            "|---|---|---|---|---|---|---|---|"]
    for t in tasks():
        section = t.bench.herculean and f"HERCULEAN {t.bench.herculean}" or (
            "FAB++ " + ", ".join(t.bench.fabpp_sections) if t.bench.fabpp_sections else t.bench.title)
        rows.append(f"| `{t.env_id}` | `{t.text_env_id}` | `{load(t.scripted_agent).__name__}` | yes | yes | yes "
                    f"| replays exactly | {section} |")
    return "\n".join(rows)


def _cmd_list(markdown: bool = False) -> int:
    from finenvs.tasks import load, tasks
    from finenvs.tools import COMMIT_TOOL, TOOLSETS

    if markdown:
        print(agent_matrix())
        return 0
    specs = tasks()
    width = max(len(t.env_id) for t in specs)
    pad = "".ljust(width)
    for t in specs:
        print(f"{t.env_id.ljust(width)}  {t.description}")
        print(f"{pad}  baselines: {', '.join(t.load_baselines())}")
        toolset = TOOLSETS.get(t.tools, ()) if t.tools is not None else ()
        tools = [tool.name for tool in toolset] + [COMMIT_TOOL]
        print(f"{pad}  text variant: {t.text_env_id}; agent tools: {', '.join(tools)}")
        print(f"{pad}  offline chat agent: {load(t.scripted_agent).__name__} (finenvs llm --env {t.env_id})")
    return 0


#: ``finenvs run`` flags a family may accept (its task spec's ``run_options``), and the env argument they set.
_RUN_FLAGS = ("symbol", "symbols", "start", "end", "fee_bps", "fill", "chart", "instance", "topic", "reports")
_ENV_FLAGS = ("start", "end", "fee_bps", "fill")


def _cmd_run(args: argparse.Namespace) -> int:
    import gymnasium as gym

    from finenvs.baselines.registry import make_policy
    from finenvs.evaluation.episodes import generic_run_output, play_episode
    from finenvs.tasks import Selection, load, task_of

    task = task_of(args.env)  # unknown env -> KeyError -> exit 2
    given = [flag for flag in _RUN_FLAGS if getattr(args, flag, None) not in (None, False)]
    for flag in given:
        if flag not in task.run_options:
            raise ValueError(f"--{flag.replace('_', '-')} is not an option of {task.env_id} "
                             f"(its options: {', '.join('--' + f.replace('_', '-') for f in task.run_options) or 'none'})")
    if args.topic is not None and args.instance is not None:
        raise ValueError("give --instance or --topic, not both")
    symbols = (args.symbol,) if args.symbol else tuple(args.symbols) if args.symbols else None
    selection = Selection(split=args.split, symbols=symbols,
                          instances=(args.instance,) if args.instance is not None else None, seeds=(args.seed,),
                          env_kwargs={k: getattr(args, k) for k in _ENV_FLAGS if getattr(args, k) is not None})
    episode = task.plan(selection)[0]
    _check_episodes(task, [episode], build=False)  # unknown symbol, split or date: exit 2 before the env is built
    policies = task.load_baselines()
    if args.policy not in policies:
        raise KeyError(f"unknown policy {args.policy!r} for {task.env_id}; valid policies: {sorted(policies)}")
    kwargs = {**episode.env_kwargs, **(getattr(policies[args.policy][0], "env_kwargs", None) or {})}
    if args.chart:
        kwargs["render_mode"] = "rgb_array"
    env = gym.make(task.env_id, **kwargs)
    policy = make_policy(args.policy, task.env_id, env, seed=args.seed)
    options = {"topic": args.topic, "seed": args.seed} if args.topic is not None else episode.options
    result = play_episode(env, policy, seed=episode.seed, options=options, policy_name=args.policy)
    printer = load(task.run_printer) if task.run_printer else generic_run_output
    lines, record = printer(env, result, {flag: getattr(args, flag) for flag in given})
    if args.chart:
        _write_png(env.render(), args.chart)
        lines.append(f"  chart: {args.chart}")
    env.close()
    if args.json:
        print(json.dumps(record, indent=2, default=_json_default))
        return 0
    print("\n".join(lines))
    return 0


def _json_default(obj: Any) -> Any:
    if hasattr(obj, "tolist"):
        return obj.tolist()
    return str(obj)


def _write_png(rgb: Any, path: Path) -> None:
    from matplotlib.image import imsave

    path.parent.mkdir(parents=True, exist_ok=True)
    imsave(path, rgb)


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


def _cmd_bench(args: argparse.Namespace) -> int:
    from finenvs.evaluation.bench import BenchConfig, run_bench, terminal_table

    _check_bench(args)  # symbols and universe (the long-history datasets' with --windows), before any work
    endpoint = {"api_key_env": args.api_key_env, "timeout": args.timeout, "temperature": args.temperature,
                "max_tokens": args.max_tokens, "tool_choice": args.tool_choice,
                "extra_body": _extra_body(args.extra_body)}
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
            resume=args.resume,
            herculean_rule=args.herculean_rule,
            published=args.herculean_published,
            alpha_cost_floor=args.alpha_cost_floor,
            eval_config=args.config,
            debate=args.debate,
            windows=args.windows,
            after=args.after,
        )
    )
    print(terminal_table(card))
    print()
    if not args.no_plots and not any(f.endswith(".png") for f in card.files):
        print("charts skipped: matplotlib is not installed (pip install 'finenvs[plot]')")
    print(f"scorecard written to {card.run_dir}/ ({len(card.results)} market episodes, "
          f"{sum(len(r['episodes']) for r in card.agents)} agent episodes, {card.seconds:.1f} s)")
    for err in card.errors:
        print(f"ERROR {err['env']} {err['symbol']} {err['policy']}: {err['error']}", file=sys.stderr)
    return 1 if card.errors else 0


def _cmd_data_verify(args: argparse.Namespace) -> int:
    from finenvs.data.catalog import load_prices
    from finenvs.data.manifest import verify_data

    if args.file is not None:
        from finenvs.data.schema import split_like_jumps

        series = load_prices(args.file, symbol=args.symbol)  # raises DataError naming the row
        for sym, s in series.items():
            print(f"{args.file}: {sym}: ok ({len(s)} rows, {s.dates[0]}..{s.dates[-1]}); prices: {s.price_basis}")
            jumps = split_like_jumps(s)  # a warning, not an error: a crash can look like a split
            if jumps:
                shown_jumps = "; ".join(f"{d} {what}" for d, what in jumps[:10])
                more = f"; and {len(jumps) - 10} more" if len(jumps) > 10 else ""
                print(f"warning: {args.file}: {sym}: {len(jumps)} split-like jump(s) and no adjusted-close column: "
                      f"{shown_jumps}{more}. If these are splits, add an Adj Close column or adjust the prices",
                      file=sys.stderr)
        return 0
    from finenvs.data.catalog import verify_catalog
    from finenvs.data.manifest import load_manifest
    from finenvs.errors import DataError
    from finenvs.xbrl.corpus import ROW_COUNTERS

    result = verify_data(args.data_dir, row_counters=ROW_COUNTERS)
    if args.data_dir is None:  # the user layer (finenvs data add), file by file
        from finenvs.data.user_layer import UserLayer

        layer = UserLayer().verify()
        result.checked += layer.checked
        result.problems += layer.problems
    try:  # the built cache too, table by table
        cache = verify_catalog(load_manifest(args.data_dir))
    except DataError:  # no readable manifest: verify_data has reported it
        cache = None
    for line in result.checked + (cache.checked if cache else []):
        print(line)
    for problem in result.problems + (cache.problems if cache else []):
        print(f"FAILED {problem}", file=sys.stderr)
    if not result.ok or (cache is not None and not cache.ok):
        failed = [f"{len(result.problems)} file(s)"] if result.problems else []
        failed += [f"{len(cache.problems)} catalog cache check(s)"] if cache and cache.problems else []
        print(f"finenvs: data verify: {' and '.join(failed)} failed", file=sys.stderr)
        return EXIT_DATA_INVALID
    tables = sum(": table " in line for line in cache.checked) if cache else 0
    print(f"all {len(result.checked)} files verified" + (f", and all {tables} tables of the catalog cache" if tables else ""))
    return 0


def _extra_body(text: str | None) -> dict[str, Any] | None:
    return _json_object("--extra-body", text)


def _agent(args: argparse.Namespace, env_id: str, meta: dict[str, Any] | None = None) -> Any:
    """The agent of ``finenvs llm`` (a resumed run: the one its run.json recorded, unless flags name another)."""
    from finenvs.evaluation.agents import agent_from_record, make_agent

    if meta is not None and not (args.base_url or args.model or args.a2a_url):
        return agent_from_record(env_id, meta.get("agent") or {})
    return make_agent(env_id, base_url=args.base_url, model=args.model, a2a_url=args.a2a_url,
                      api_key_env=args.api_key_env, timeout=args.timeout, temperature=args.temperature,
                      max_tokens=args.max_tokens, tool_choice=args.tool_choice, extra_body=_extra_body(args.extra_body))


def _window_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """The env arguments of an agent command: ``--env-kwargs``, then the window and text-wrapper flags over it."""
    out = dict(_json_object("--env-kwargs", getattr(args, "env_kwargs", None)) or {})
    out |= {k: getattr(args, k) for k in ("start", "end") if getattr(args, k, None)}
    if getattr(args, "tools", None):  # the text wrapper's tool mode travels with the env's arguments
        out["tools"] = args.tools
    if getattr(args, "debate", False):  # so does the debate round
        out["debate"] = True
    if getattr(args, "python", False):  # and the sandboxed Python tool
        out["python"] = True
    return out


def _cmd_llm(args: argparse.Namespace) -> int:
    from finenvs.evaluation.llm import PriceTable, RunConfig, run_llm
    from finenvs.evaluation.score import score_run, terminal_report
    from finenvs.tasks import task_of

    meta = None
    if args.resume is not None:
        from finenvs.evaluation.session import open_run_to_resume

        meta, _ = open_run_to_resume(args.resume)  # signed with this machine's key and intact, or refused
        config = RunConfig(**{**meta["config"], "max_decisions": args.max_decisions})  # a smoke run's cap ends
        if args.live and not config.live:
            raise ValueError(f"{args.resume} is not a live run; resume it without --live")
        prices = PriceTable(**meta.get("prices", {}))
    else:
        task = task_of(args.env)  # unknown env -> exit 2
        config = RunConfig(
            env_id=task.env_id, symbols=args.symbols, split=args.split, env_kwargs=_window_kwargs(args),
            seeds=args.seeds, instances=args.instances, limit=args.limit, max_tool_calls=args.max_tool_calls,
            request_timeout=args.timeout, decision_timeout=args.decision_timeout, max_retries=args.retries,
            concurrency=args.concurrency, format_retries=args.format_retries, max_decisions=args.max_decisions,
            failure_rule="herculean" if args.herculean_rule else "default", live=args.live,
        )
        # a bad selection (unknown split, symbol or date, instance out of range, ...) fails before any work
        _check_env_kwargs(task, config.env_kwargs)
        _check_episodes(task, config.episodes())
        if args.prices is not None:
            if not args.model:
                raise ValueError("--prices needs --model (the table is looked up by model name)")
            prices = PriceTable.load(args.prices, args.model)
        else:
            prices = PriceTable(args.price_in, args.price_out)
    agent = _agent(args, config.env_id, meta)
    if not args.quiet and agent.describe().get("kind") == "scripted":
        print(f"no --base-url/--model or --a2a-url: running the offline scripted agent ({agent.name})",
              file=sys.stderr)
    summary = run_llm(config, agent, out=args.out, name=args.name, resume=args.resume, prices=prices,
                      progress=not args.quiet)
    print(terminal_report(score_run(summary.run_dir)))
    _run_judge(args, summary.run_dir)
    for outcome in summary.outcomes:
        if outcome.status not in ("complete", "skipped"):
            print(f"episode {outcome.spec.label()}: {outcome.status} ({outcome.message})", file=sys.stderr)
    print(f"run {summary.status}: {summary.run_dir}/ ({summary.seconds:.1f} s)")
    return 0 if summary.status in ("complete", "waiting") else 1


def _cmd_score(args: argparse.Namespace) -> int:
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

    result = score_run(args.run_dir)
    if args.json:
        print(json.dumps(result.to_json(), indent=2))
    else:
        print(terminal_report(result))
    _run_judge(args, args.run_dir)
    if not args.json:
        print(f"score written to {args.run_dir}/score.json and score.md")
    return result.exit_code  # 0 reproduced, 3 incomplete (resumable), 1 not reproduced or tampered


def _cmd_harness(args: argparse.Namespace) -> int:
    from finenvs.evaluation.harness import HarnessAgent, run_harness
    from finenvs.evaluation.llm import RunConfig
    from finenvs.evaluation.score import score_run, terminal_report
    from finenvs.tasks import task_of

    if args.resume is not None:
        from finenvs.evaluation.session import open_run_to_resume

        meta, _ = open_run_to_resume(args.resume)  # the command it runs comes from a verified run.json
        recorded = meta.get("agent") or {}
        if recorded.get("kind") != "harness":
            raise ValueError(f"{args.resume} is not a harness run (its agent is {recorded.get('kind')!r}); "
                             "continue it with finenvs llm --resume")
        config = RunConfig(**{**meta["config"], "max_decisions": args.max_decisions})  # a smoke run's cap ends
        if args.live and not config.live:
            raise ValueError(f"{args.resume} is not a live run; resume it without --live")
        command = args.agent_cmd or recorded["command"]
        timeout = float(recorded.get("timeout", args.timeout))
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
            env_id=task.env_id, symbols=args.symbols, split=args.split, env_kwargs=_window_kwargs(args),
            seeds=args.seeds, instances=args.instances, limit=args.limit, max_tool_calls=args.max_tool_calls,
            max_decisions=args.max_decisions, failure_rule="default" if args.default_action else "herculean",
            max_consecutive_endpoint_failures=None, live=args.live,
        )
        _check_env_kwargs(task, config.env_kwargs)
        _check_episodes(task, config.episodes())  # before any folder is written
        command, timeout = args.agent_cmd, args.timeout
    agent = HarnessAgent(command, timeout=timeout, unconfined=args.unconfined, mask=tuple(args.mask),
                         home=args.agent_home)
    summary = run_harness(config, agent, out=args.out, name=args.name, resume=args.resume, progress=not args.quiet)
    print(terminal_report(score_run(summary.run_dir)))
    for outcome in summary.outcomes:
        if outcome.status not in ("complete", "skipped"):
            print(f"episode {outcome.spec.label()}: {outcome.status} ({outcome.message})", file=sys.stderr)
    print(f"run {summary.status}: {summary.run_dir}/ ({summary.seconds:.1f} s); each invocation's prompt, MCP "
          f"config and output logs are in {summary.run_dir}/harness/")
    return 0 if summary.status in ("complete", "waiting") else 1


def _cmd_sandbox(args: argparse.Namespace) -> int:
    from finenvs.tools.sandbox import sandbox_status, setup_sandbox

    if args.sandbox_command == "setup":
        path = setup_sandbox(force=args.force)
        print(f"sandbox ready: {path}")
    status = sandbox_status(verify=args.sandbox_command == "status")
    print(json.dumps(status, indent=2, default=str))
    return 0 if status["available"] else 1


def _cmd_skills(args: argparse.Namespace) -> int:
    from finenvs.evaluation.skills import export_skills

    for path in export_skills(args.dir, args.families):
        print(path)
    return 0


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


def _cmd_mcp(args: argparse.Namespace) -> int:
    import shutil

    from finenvs.tasks import Selection, task_of

    try:
        task = task_of(args.env)
        if args.symbol and args.symbols:
            raise ValueError("give --symbol or --symbols, not both")
        symbols = (args.symbol,) if args.symbol else tuple(args.symbols) if args.symbols else None
        instances = (args.instance,) if args.instance is not None else None
        selection = Selection(split=args.split, symbols=symbols, instances=instances, seeds=(args.seed,),
                              env_kwargs=_window_kwargs(args))
        _check_env_kwargs(task, selection.env_kwargs)
        episode_spec = task.plan(selection)[0]
        _check_episodes(task, [episode_spec])  # before the run folder is written
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
    print(f"finenvs mcp: serving {task.env_id} {episode_spec.label()} on stdio; results in {episode.files.root}",
          file=sys.stderr)
    from finenvs.evaluation.mcp_server import serve_stdio

    serve_stdio(episode)
    return 0


def _dispatch(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    if args.command == "list":
        return _cmd_list(args.markdown)
    if args.command == "run":
        return _cmd_run(args)
    if args.command == "bench":
        return _cmd_bench(args)
    if args.command == "llm":
        return _cmd_llm(args)
    if args.command == "score":
        return _cmd_score(args)
    if args.command == "compare":
        from finenvs.evaluation.compare import cli_compare

        return cli_compare(args.runs, out=args.out, as_json=args.json)
    if args.command == "mcp":
        return _cmd_mcp(args)
    if args.command == "harness":
        return _cmd_harness(args)
    if args.command == "sandbox":
        if args.sandbox_command in ("setup", "status"):
            return _cmd_sandbox(args)
        parser.error("sandbox needs a subcommand: setup or status")
    if args.command == "skills":
        if args.skills_command == "export":
            return _cmd_skills(args)
        parser.error("skills needs a subcommand: export")
    if args.command == "train":
        return _cmd_train(args)
    if args.command == "data":
        if args.data_command == "verify":
            return _cmd_data_verify(args)
        if args.data_command == "add":
            if args.prices is not None and not args.symbol:
                parser.error("data add --prices needs --symbol")
            from finenvs.data.user_layer import cli_data_add

            return cli_data_add(prices=args.prices, symbol=args.symbol, dataset=args.dataset, news=args.news,
                                filings=args.filings)
        if args.data_command == "list":
            from finenvs.data.user_layer import cli_data_list

            return cli_data_list()
        parser.error("data needs a subcommand: verify, add or list")
    parser.print_help()
    return EXIT_USAGE


def _one_line(message: Any, limit: int = 2_000) -> str:
    text = " ".join(str(message).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _error(message: Any) -> None:
    print(f"finenvs: error: {_one_line(message)}", file=sys.stderr)


def _episodes_saved(run_dir: Path) -> tuple[int, int, int] | None:
    """``(finished episodes, planned episodes, decisions)`` recorded in an LLM run folder, or None if it has none."""
    from finenvs.evaluation.session import read_trajectories

    try:
        planned = len(json.loads((run_dir / "run.json").read_text()).get("episodes") or [])
        records, _ = read_trajectories(run_dir / "trajectories.jsonl")
    except (OSError, ValueError):
        return None
    finished = {r.get("episode") for r in records if r.get("type") == "episode" and r.get("status") in
                ("complete", "failed")}
    return len(finished), planned, sum(r.get("type") == "step" for r in records)


def _newest(parent: Path, marker: str, since: float) -> Path | None:
    """The newest folder under ``parent`` holding ``marker`` and written since ``since`` (a run this command began)."""
    try:
        found = [p.parent for p in Path(parent).glob(f"*/{marker}") if p.stat().st_mtime >= since - 1]
    except OSError:
        return None
    return max(found, key=lambda p: p.stat().st_mtime, default=None)


def _interrupted(args: argparse.Namespace, began: float) -> str:
    """The one line a Ctrl-C prints: what the command saved and how to continue."""
    command = getattr(args, "command", None)
    if command in ("llm", "harness"):
        run_dir = args.resume or (args.out / args.name if args.name else None)
        saved = _episodes_saved(run_dir) if run_dir is not None else None
        if saved is None:
            return f"interrupted: finenvs {command} stopped before its run folder was written; nothing to resume"
        done, planned, steps = saved
        return (f"interrupted: {done} of {planned} episodes finished ({steps} decisions) saved in {run_dir}; "
                f"resume with: finenvs {command} --resume {run_dir}")
    if command == "bench":
        bench_dir = args.resume or _newest(args.out, "bench.json", began)
        if bench_dir is None:
            return "interrupted: finenvs bench stopped before its folder was written; nothing to resume"
        runs = [saved for run in sorted(Path(bench_dir).glob("agents/*/*/run.json"))
                if (saved := _episodes_saved(run.parent)) is not None]
        done, planned = sum(r[0] for r in runs), sum(r[1] for r in runs)
        return (f"interrupted: {done} of {planned} agent episodes saved in {bench_dir} (baselines re-run); "
                f"resume with: finenvs bench --resume {bench_dir} (and the same agent flags)")
    if command == "mcp":
        run_dir = _newest(args.out, "run.json", began)
        saved = _episodes_saved(run_dir) if run_dir is not None else None
        if saved is None:
            return "interrupted: finenvs mcp stopped before the episode began; nothing saved"
        return f"interrupted: the MCP episode stopped after {saved[2]} decisions, saved in {run_dir} (incomplete)"
    return f"interrupted: finenvs {command or ''} stopped; nothing to resume".replace("  ", " ")


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``finenvs`` command.

    Exit codes: 0 done; 1 a check failed (``data verify``, ``score``) or an unexpected error; 2 bad input; 3
    ``score`` of an incomplete run; 130 interrupted (Ctrl-C). Every failure prints one line on stderr; with
    ``--debug`` or ``FINENVS_DEBUG=1`` an unexpected error prints its traceback too. A Ctrl-C prints what was
    saved and how to resume.
    """
    import os
    import time

    began = time.time()
    args = argparse.Namespace(command=None)
    debug = os.environ.get("FINENVS_DEBUG", "").lower() not in ("", "0", "false", "no")
    try:
        parser = _parser()
        args = parser.parse_args(argv)
        debug = debug or args.debug
        if args.version:
            import finenvs

            print(finenvs.__version__)
            return 0
        if args.command in ("llm", "harness") and args.resume is None and not args.name:  # named now: a Ctrl-C can point at it
            import datetime as _dt

            args.name = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%d-%H%M%S")
        from finenvs.errors import DataError, FinEnvsError

        try:
            return _dispatch(parser, args)
        except DataError as exc:
            _error(exc)
            return EXIT_DATA_INVALID if args.command == "data" else EXIT_USAGE
        except (FinEnvsError, ValueError, KeyError, FileNotFoundError, FileExistsError, ImportError) as exc:
            _error(exc.args[0] if isinstance(exc, KeyError) and exc.args else exc)
            return EXIT_USAGE
    except KeyboardInterrupt:
        print(_interrupted(args, began), file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `finenvs list | head`: the reader left; say nothing more
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115  (Python flushes stdout at exit)
        return EXIT_INTERNAL
    except Exception as exc:  # gymnasium errors (unknown id, ...) and anything unforeseen: one line
        import gymnasium as gym

        if isinstance(exc, gym.error.Error):
            _error(exc)
            return EXIT_USAGE
        if debug:
            raise
        _error(f"unexpected {type(exc).__name__}: {exc} (run with --debug or FINENVS_DEBUG=1 for the traceback)")
        return EXIT_INTERNAL


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
