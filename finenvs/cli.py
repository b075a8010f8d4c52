"""The ``finenvs`` command line.

    finenvs list                                  registered envs, one line each
    finenvs run --env FinTrading-v0 --policy momentum [--symbol AAPL --split eval --seed 0]
    finenvs bench [--split eval --symbols AAPL MSFT --universe AAPL MSFT NVDA --out finenvs-results]
    finenvs data verify [--file my_prices.csv]
    finenvs llm [--base-url URL --model NAME] [--symbols TSLA AAPL --split eval --out finenvs-runs]
    finenvs llm --resume RUN_DIR
    finenvs score RUN_DIR
    finenvs mcp --env FinTrading-v0 --symbol TSLA --split eval
    finenvs train --algo ppo --env FinTrading-v0 --timesteps 100000 [--seeds 0,1,2 --source real --out runs/rl]

Bad input (unknown env, policy, symbol, split or date; unreadable data) prints
one line ``finenvs: error: ...`` and exits with code 2; ``data verify`` exits 1
when a data file fails its checks.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

EXIT_USAGE = 2
EXIT_DATA_INVALID = 1


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # one line, exit 2 (argparse prints usage too)
        self.print_usage(sys.stderr)
        print(f"finenvs: error: {message}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="finenvs", description="Gymnasium environments for financial agents.")
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)

    sub.add_parser("list", help="list the registered environments")

    run = sub.add_parser("run", help="run one episode of an env with a baseline policy")
    run.add_argument("--env", required=True, help="env id, e.g. FinTrading-v0")
    run.add_argument("--policy", required=True, help="baseline name (see `finenvs list`)")
    run.add_argument("--symbol", help="ticker (default: random from the env's universe)")
    run.add_argument("--symbols", nargs="+", help="FinHedging-v0 universe (default: its 8 stocks)")
    run.add_argument("--split", default="eval", help="train, eval or live (default: eval)")
    run.add_argument("--start", help="window start YYYY-MM-DD (overrides the split's)")
    run.add_argument("--end", help="window end YYYY-MM-DD (overrides the split's)")
    run.add_argument("--seed", type=int, default=0)
    run.add_argument("--fee-bps", type=float, help="fee in basis points (default: the env's, 5)")
    run.add_argument("--fill", choices=["close", "next_open"], help="fill model (default: close)")
    run.add_argument("--json", action="store_true", help="print the result as JSON")
    run.add_argument("--chart", type=Path, help="write the episode's equity/drawdown chart to this PNG")
    run.add_argument("--instance", type=int, help="FinAudit-v0 / FinQA-v0: eval item index (default: drawn from --seed)")
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
    bench.add_argument("--suite", default="all", choices=["all", "herculean", "fabpp"],
                       help="herculean: Trading, Hedging, Market Insights, Auditing; fabpp: Knowledge, Analysis, "
                       "Options; all (default): both")
    bench.add_argument("--weights", default="fabpp",
                       help="section weights of the aggregate: a preset (fabpp, equal, reasoning) or "
                       "knowledge=0.3,analysis=0.35,options=0.35")
    bench.add_argument("--no-html", action="store_true", help="skip scorecard.html")
    bench.add_argument("--no-agents", action="store_true",
                       help="skip the offline scripted agent that runs through the text interface and tools")

    llm = sub.add_parser(
        "llm",
        help="run an LLM agent (any OpenAI-compatible endpoint; the offline scripted agent without one)",
        description="Run an agent through the text interface with date-locked tools and record its trajectories. "
        "Without --base-url the offline scripted agent runs (trading: momentum with news and volatility checks; "
        "hedging: the most mean-reverting pair, then a z-score rule).",
    )
    llm.add_argument("--env", default="FinTrading-v0", help="env id (default: FinTrading-v0)")
    llm.add_argument("--symbols", nargs="+",
                     help="one episode per symbol (default: HERCULEAN's MSFT TSLA AAPL NVDA); for FinHedging-v0 "
                     "the universe of its one episode per seed (default: its 8 stocks)")
    llm.add_argument("--split", default="eval", help="train, eval or live (default: eval)")
    llm.add_argument("--start", help="window start YYYY-MM-DD (overrides the split's)")
    llm.add_argument("--end", help="window end YYYY-MM-DD (overrides the split's)")
    llm.add_argument("--seeds", nargs="+", type=int, default=[0], help="reset seeds (default: 0)")
    llm.add_argument("--base-url", help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8080/v1")
    llm.add_argument("--model", help="model name at the endpoint (required with --base-url)")
    llm.add_argument("--api-key-env", default="OPENAI_API_KEY", help="env var holding the API key (default: OPENAI_API_KEY)")
    llm.add_argument("--temperature", type=float, default=0.0)
    llm.add_argument("--max-tokens", type=int, default=1024, help="cap on each reply's tokens")
    llm.add_argument("--tool-choice", choices=["auto", "required", "none"],
                     help="send tool_choice with the tools (llama.cpp's Python server needs 'auto')")
    llm.add_argument("--extra-body", help="extra JSON fields for every request, e.g. '{\"top_p\": 0.9}'")
    llm.add_argument("--max-tool-calls", type=int, default=8, help="tool calls per decision (default: 8)")
    llm.add_argument("--timeout", type=float, default=60.0, help="seconds per request (default: 60)")
    llm.add_argument("--decision-timeout", type=float, default=600.0, help="seconds per decision (default: 600)")
    llm.add_argument("--retries", type=int, default=4, help="retries of a transient failure (default: 4)")
    llm.add_argument("--concurrency", type=int, default=4, help="episodes in flight (default: 4)")
    llm.add_argument("--format-retries", type=int, default=0, help="re-ask after a reply without an action")
    llm.add_argument("--max-decisions", type=int, help="stop each episode after N decisions (smoke runs)")
    llm.add_argument("--price-in", type=float, help="$ per million prompt tokens")
    llm.add_argument("--price-out", type=float, help="$ per million completion tokens")
    llm.add_argument("--prices", type=Path, help="JSON price table {model: {input_per_million, output_per_million}}")
    llm.add_argument("--out", type=Path, default=Path("finenvs-runs"), help="parent folder of runs")
    llm.add_argument("--name", help="run folder name (default: UTC timestamp)")
    llm.add_argument("--resume", type=Path, help="continue an interrupted run folder (its run.json gives the setup)")
    llm.add_argument("--quiet", action="store_true", help="no progress bar")

    score = sub.add_parser("score", help="re-score a run folder offline from its trajectories")
    score.add_argument("run_dir", type=Path, help="a folder written by `finenvs llm` or `finenvs mcp`")
    score.add_argument("--json", action="store_true", help="print the score as JSON")

    mcp = sub.add_parser("mcp", help="serve one episode's tools and commit_action over MCP (stdio)")
    mcp.add_argument("--env", default="FinTrading-v0", help="env id (default: FinTrading-v0)")
    mcp.add_argument("--symbol", help="ticker (default: random from the env's universe)")
    mcp.add_argument("--symbols", nargs="+", help="FinHedging-v0 universe (default: its 8 stocks)")
    mcp.add_argument("--split", default="eval", help="train, eval or live (default: eval)")
    mcp.add_argument("--start", help="window start YYYY-MM-DD")
    mcp.add_argument("--end", help="window end YYYY-MM-DD")
    mcp.add_argument("--seed", type=int, default=0)
    mcp.add_argument("--out", type=Path, default=Path("finenvs-mcp-runs"), help="parent folder of the run folder")
    mcp.add_argument("--name", help="run folder name (default: mcp-<env>-<symbol>-<UTC time>)")

    train = sub.add_parser(
        "train",
        help="train a stable-baselines3 baseline and score it beside the rule baselines (needs finenvs[rl])",
        description="Train PPO, A2C or DQN (FinTrading-v0, FinHedging-v0) or SAC or TD3 (FinDeltaHedge-v0) on the "
        "train split (real and/or synthetic), then evaluate the saved model deterministically on the eval and live "
        "splits beside every rule baseline on the same episodes, and print CR/SR/MDD per split. Each seed writes "
        "<out>/<env>__<algo>__s<seed>/ with model.zip, vecnormalize.pkl and result.json.",
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
    train.add_argument("--quiet", action="store_true", help="no progress bar")
    train.add_argument("--json", action="store_true", help="print the results as JSON instead of the table")

    data = sub.add_parser("data", help="data tools")
    data_sub = data.add_subparsers(dest="data_command", parser_class=_Parser)
    verify = data_sub.add_parser("verify", help="check hashes and invariants of the shipped (or a user's) data")
    verify.add_argument("--file", type=Path, help="check a user CSV/Parquet file instead of the shipped data")
    verify.add_argument("--symbol", help="symbol of a file without a symbol column (default: file stem)")
    verify.add_argument("--data-dir", type=Path, help="folder with a MANIFEST.json (default: shipped data)")
    return parser


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
                                 "progress": not args.quiet}
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
    for result in results:
        print(f"seed {result['seed']}: {Path(result['files']['result']).parent}/ "
              f"(trained {result['train']['seconds']:.1f} s)")
    return 0


def _cmd_list() -> int:
    from finenvs.tasks import load, tasks
    from finenvs.tools import COMMIT_TOOL, TOOLSETS

    specs = tasks()
    width = max(len(t.env_id) for t in specs)
    pad = "".ljust(width)
    for t in specs:
        print(f"{t.env_id.ljust(width)}  {t.description}")
        print(f"{pad}  baselines: {', '.join(t.load_baselines())}")
        tools = [tool.name for tool in TOOLSETS.get(t.tools, ())] + [COMMIT_TOOL]
        print(f"{pad}  text variant: {t.text_env_id}; agent tools: {', '.join(tools)}")
        print(f"{pad}  offline chat agent: {load(t.scripted_agent).__name__} (finenvs llm --env {t.env_id})")
    return 0


def _cmd_run(args: argparse.Namespace) -> int:
    import gymnasium as gym

    from finenvs.baselines.registry import family_of, make_policy
    from finenvs.evaluation.episodes import run_episode

    family = family_of(args.env)  # unknown env -> KeyError -> exit 2
    if family in ("options", "deltahedge"):
        return _run_options(args, family)
    if family == "audit":
        return _run_audit(args)
    if family == "qa":
        return _run_qa(args)
    kwargs: dict[str, Any] = {"split": args.split}
    if family == "hedging":
        if args.symbol:
            raise ValueError(f"--symbol is for single-asset envs; {args.env} takes --symbols (its universe)")
        if args.fill:
            raise ValueError(f"--fill is not an option of {args.env} (trades fill at the close)")
        if args.symbols:
            kwargs["symbols"] = args.symbols
    elif args.symbols:
        raise ValueError(f"--symbols is for FinHedging-v0's universe; {args.env} takes --symbol")
    if args.symbol:
        kwargs["symbol"] = args.symbol
    if args.start:
        kwargs["start"] = args.start
    if args.end:
        kwargs["end"] = args.end
    if args.fee_bps is not None:
        kwargs["fee_bps"] = args.fee_bps
    if args.fill:
        kwargs["fill"] = args.fill
    if args.chart:
        kwargs["render_mode"] = "rgb_array"
    env = gym.make(args.env, **kwargs)
    policy = make_policy(args.policy, args.env, env, seed=args.seed)
    result = run_episode(env, policy, env_id=args.env, policy_name=args.policy, seed=args.seed)
    if args.chart:
        _write_png(env.render(), args.chart)
    if getattr(args, "reports", None):
        written = _write_reports(env.unwrapped, args.reports)
    env.close()
    if args.json:
        print(json.dumps(result.row(), indent=2, default=float))
        return 0
    s, h = result.standard, result.herculean

    def pct(x: float) -> str:
        return "n/a" if not math.isfinite(x) else f"{100 * x:+.2f}%"

    def mag(x: float) -> str:
        return "n/a" if not math.isfinite(x) else f"{100 * x:.2f}%"

    def num(x: float) -> str:
        return "n/a" if not math.isfinite(x) else f"{x:.2f}"

    print(f"{args.env} {result.symbol} {result.window_start}..{result.window_end} policy={args.policy} "
          f"steps={result.steps}")
    print(f"  standard : CR {pct(s['cumulative_return'])}  SR {num(s['sharpe'])}  MDD {mag(s['max_drawdown'])}  "
          f"Sortino {num(s['sortino'])}  Calmar {num(s['calmar'])}  turnover {num(s['turnover'])}")
    print(f"  herculean: CR {pct(h['cumulative_return'])}  SR {num(h['sharpe'])}  MDD {mag(h['max_drawdown'])}")
    print(f"  final equity {result.final_equity:.4f}, fees {result.fees:.4f}, "
          f"look-ahead attempts {result.look_ahead_attempts}")
    print(f"  time in market {100 * result.time_in_market:.1f}%, positions opened {result.round_trips}"
          + (f", pair {result.pair} (long {result.pair.split('/')[0]} on LONG_SHORT)" if result.pair else "")
          + ("  [ORACLE: read the future; an upper bound, not a baseline]" if result.oracle else ""))
    if result.quality is not None:
        q = result.quality
        print(f"  report quality {q['score']:.2f}/10 over {q['reports']} reports: "
              + ", ".join(f"{k} {v:.2f}" for k, v in q["dimensions"].items())
              + f"; invalid ratings {q['invalid_ratings']}")
    if args.chart:
        print(f"  chart: {args.chart}")
    if getattr(args, "reports", None):
        print(f"  reports: {written} file(s) in {args.reports}")
    return 0


def _write_reports(env: Any, folder: Path) -> int:
    """Write a FinReport-v0 episode's reports (``<date>.md``) and their checks (``<date>.json``)."""
    history = getattr(env, "history", None)
    if history is None:
        raise ValueError("--reports is for FinReport-v0")
    folder.mkdir(parents=True, exist_ok=True)
    written = 0
    for record in history:
        if "text" not in record:
            continue
        (folder / f"{record['report_date']}.md").write_text(record["text"])
        (folder / f"{record['report_date']}.json").write_text(json.dumps(record["card"], indent=2, default=str))
        written += 2
    return written


def _run_options(args: argparse.Namespace, family: str) -> int:
    """``finenvs run`` for FinOptions-v0 (one task, its score) and FinDeltaHedge-v0 (one hedge, its error)."""
    import gymnasium as gym

    from finenvs.baselines.registry import make_policy

    for flag in ("symbols", "start", "end", "fee_bps", "fill", "chart"):
        if getattr(args, flag, None):
            raise ValueError(f"--{flag.replace('_', '-')} is not an option of {args.env}")
    kwargs: dict[str, Any] = {}
    if family == "options":
        kwargs["split"] = args.split
    elif args.symbol:
        kwargs.update(source="real", symbol=args.symbol, split=args.split)
    env = gym.make(args.env, **kwargs)
    policy = make_policy(args.policy, args.env, env, seed=args.seed)
    obs, info = env.reset(seed=args.seed)
    if family == "options":
        _, reward, _, _, step_info = env.step(policy(obs, info))
        out = {"env": args.env, "policy": args.policy, "task_id": info["task_id"], "kind": info["kind"],
               "score": reward, "dimensions": step_info["dimensions"], "items": step_info["items"]}
        if args.json:
            print(json.dumps(out, indent=2, default=float))
            return 0
        print(info["prompt"])
        dims = ", ".join(f"{k} {'-' if v is None else f'{v:.1f}'}" for k, v in step_info["dimensions"].items())
        print(f"\n{args.env} {info['task_id']} policy={args.policy}: score {reward:.1f}/100 ({dims})")
        for item in step_info["items"]:
            if item["credit"] < 1:
                print(f"  lost {item['dimension']}/{item['name']}: {item['reason']}")
        return 0
    total, steps, done = 0.0, 0, False
    while not done:
        obs, reward, term, trunc, step_info = env.step(policy(obs, info))
        info = step_info
        total, steps, done = total + reward, steps + 1, term or trunc
    out = {"env": args.env, "policy": args.policy, "steps": steps, "reward": total,
           "hedging_error": step_info["hedging_error"], "hedging_error_pct": step_info["hedging_error_pct"],
           "payoff": step_info["payoff"]}
    if args.json:
        print(json.dumps(out, indent=2, default=float))
        return 0
    print(f"{args.env} policy={args.policy} steps={steps}: hedging error {out['hedging_error']:+.4f} "
          f"({out['hedging_error_pct']:+.3f}% of spot), payoff {out['payoff']:.4f}, total reward {total:.4f}")
    return 0


def _run_audit(args: argparse.Namespace) -> int:
    """``finenvs run`` for FinAudit-v0: one instance (``--instance``: eval index, default from --seed)."""
    import gymnasium as gym

    from finenvs.baselines.registry import make_policy

    for flag in ("symbol", "symbols", "start", "end", "fee_bps", "fill", "chart", "reports"):
        if getattr(args, flag, None):
            raise ValueError(f"--{flag.replace('_', '-')} is not an option of {args.env}")
    split = "eval" if args.split in ("eval", "live") else args.split
    if split not in ("eval", "train"):
        raise ValueError(f"--split {args.split!r}: FinAudit-v0 runs the eval or train instances")
    env = gym.make(args.env, split=split)
    policy = make_policy(args.policy, args.env, env, seed=args.seed)
    options = {"index": args.instance} if args.instance is not None else None
    obs, info = env.reset(seed=args.seed, options=options)
    _, reward, _, _, final = env.step(action := policy(obs, info))
    audit = final["audit"]
    out = {"env": args.env, "policy": args.policy, "task_id": info["task_id"], "bundle": info["bundle"],
           "concept": info["concept"], "period": info["period"], "kind": final["kind"],
           "injection": final["injection"], "answer": action, "label": audit["label"], "reason": audit["reason"],
           "truth": audit["truth"], "reward": reward}
    if args.json:
        print(json.dumps(out, indent=2, default=str))
        return 0
    print(obs)
    t = audit["truth"]
    print(f"\n{args.env} {info['task_id']} policy={args.policy}: {audit['label']} ({audit['reason']})")
    print(f"  answer: {action}")
    print(f"  truth:  reported {t['reported_value']:,.0f}, calculated {t['calculated_value']:,.0f} "
          f"(tolerance {t['reported_tolerance']:,.0f}); injected: {final['injection']}")
    return 0


def _run_qa(args: argparse.Namespace) -> int:
    """``finenvs run`` for FinQA-v0: one question (``--instance``: eval index; ``--topic``: a generated one)."""
    import gymnasium as gym

    from finenvs.baselines.registry import make_policy

    for flag in ("symbol", "symbols", "start", "end", "fee_bps", "fill", "chart", "reports"):
        if getattr(args, flag, None):
            raise ValueError(f"--{flag.replace('_', '-')} is not an option of {args.env}")
    split = "eval" if args.split == "live" else args.split
    if split not in ("eval", "train", "published"):
        raise ValueError(f"--split {args.split!r}: FinQA-v0 runs the eval, train or published questions")
    if args.topic is not None and args.instance is not None:
        raise ValueError("give --instance or --topic, not both")
    env = gym.make(args.env, split=split)
    policy = make_policy(args.policy, args.env, env, seed=args.seed)
    if args.topic is not None:
        options: dict[str, Any] | None = {"topic": args.topic, "seed": args.seed}
    else:
        options = {"index": args.instance} if args.instance is not None else None
    obs, info = env.reset(seed=args.seed, options=options)
    _, reward, _, _, final = env.step(action := policy(obs, info))
    qa = final["qa"]
    out = {"env": args.env, "policy": args.policy, "task_id": info["task_id"], "question": obs, "answer": action,
           "score": reward, "reason": qa["reason"], "parts": qa["parts"], "truth": qa["truth"],
           "solution": qa["solution"], "look_ahead_attempts": final["look_ahead_attempts"]}
    if args.json:
        print(json.dumps(out, indent=2, default=str))
        return 0
    print(obs)
    print(f"\n{args.env} {info['task_id']} policy={args.policy}: score {reward:.3f}"
          + (f" ({qa['reason']})" if qa["reason"] else ""))
    print(f"  answer: {action}")
    for p in qa["parts"]:
        print(f"  {p['name']}: {'ok' if p['correct'] else 'wrong'}, expected {p['expected']}, read {p['read']}"
              + (f" ({p['reason']})" if p["reason"] else ""))
    print("  solution: " + "; ".join(qa["solution"]))
    return 0


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
        )
    )
    print(terminal_table(card))
    print()
    if not args.no_plots and not any(f.endswith(".png") for f in card.files):
        print("charts skipped: matplotlib is not installed (pip install 'finenvs[plot]')")
    print(f"scorecard written to {card.run_dir}/ ({len(card.results)} episodes, {card.seconds:.1f} s)")
    for err in card.errors:
        print(f"ERROR {err['env']} {err['symbol']} {err['policy']}: {err['error']}", file=sys.stderr)
    return 1 if card.errors else 0


def _cmd_data_verify(args: argparse.Namespace) -> int:
    from finenvs.data.catalog import load_prices
    from finenvs.data.manifest import verify_data

    if args.file is not None:
        series = load_prices(args.file, symbol=args.symbol)  # raises DataError naming the row
        for sym, s in series.items():
            print(f"{args.file}: {sym}: ok ({len(s)} rows, {s.dates[0]}..{s.dates[-1]})")
        return 0
    result = verify_data(args.data_dir)
    for line in result.checked:
        print(line)
    for problem in result.problems:
        print(f"FAILED {problem}", file=sys.stderr)
    if not result.ok:
        print(f"finenvs: data verify: {len(result.problems)} file(s) failed", file=sys.stderr)
        return EXIT_DATA_INVALID
    print(f"all {len(result.checked)} files verified")
    return 0


#: Envs ``finenvs llm`` and ``finenvs mcp`` run (market episodes scored on their equity curves); offline agents exist for the
#: families in ``finenvs.baselines.agents.SCRIPTED_AGENTS``.
_LLM_ENVS = ("FinTrading-v0", "FinHedging-v0", "FinReport-v0")


def _require_market_env(env_id: str, family: str, verb: str) -> None:
    """``finenvs llm`` and ``finenvs mcp`` run market episodes only: a clear error for any other env."""
    if env_id in _LLM_ENVS:
        return
    from finenvs.registration import text_variant

    text_env = text_variant(env_id)
    raise ValueError(
        f"{verb} the market episodes of {', '.join(_LLM_ENVS)}; {env_id} is not one (task family {family!r}): "
        f"drive {text_env or 'its text interface'} from your own agent loop, or run its offline baselines with "
        f"`finenvs run --env {env_id} --policy ...` and `finenvs bench`")


def _llm_agent(args: argparse.Namespace, meta: dict[str, Any] | None) -> Any:
    import dataclasses

    from finenvs.baselines.agents import SCRIPTED_AGENTS
    from finenvs.baselines.registry import family_of
    from finenvs.evaluation.endpoints import OpenAIChatAgent

    recorded = (meta or {}).get("agent") or {}
    base_url = args.base_url or (recorded.get("base_url") if recorded.get("kind") == "openai-compatible" else None)
    if base_url:
        model = args.model or recorded.get("model")
        if not model:
            raise ValueError("--model is required with --base-url")
        extra_body = recorded.get("extra_body") if meta else None
        if args.extra_body:
            try:
                extra_body = json.loads(args.extra_body)
            except ValueError as exc:
                raise ValueError(f"--extra-body is not JSON: {exc}") from exc
            if not isinstance(extra_body, dict):
                raise ValueError("--extra-body must be a JSON object")
        pick = (lambda key, value: recorded.get(key, value)) if meta else (lambda key, value: value)
        return OpenAIChatAgent(
            model, base_url, api_key_env=pick("api_key_env", args.api_key_env),
            timeout=pick("timeout", args.timeout), temperature=pick("temperature", args.temperature),
            max_tokens=pick("max_tokens", args.max_tokens), tool_choice=args.tool_choice or pick("tool_choice", None),
            extra_body=extra_body,
        )
    if args.model:
        raise ValueError("--model needs --base-url (without an endpoint the offline scripted agent runs)")
    env_id = (meta or {}).get("config", {}).get("env_id") or args.env
    cls = SCRIPTED_AGENTS.get(family_of(env_id))
    if cls is None:
        offline = ", ".join(f"{e}" for e in _LLM_ENVS if family_of(e) in SCRIPTED_AGENTS)
        raise ValueError(f"no offline scripted chat agent for {env_id} (offline: {offline}); pass --base-url URL "
                         "--model NAME to drive a model endpoint")
    keys = {f.name for f in dataclasses.fields(cls)} - {"name"}
    return cls(**{k: recorded[k] for k in keys if k in recorded})


def _cmd_llm(args: argparse.Namespace) -> int:
    from finenvs.baselines.registry import family_of
    from finenvs.evaluation.llm import PriceTable, RunConfig, run_llm
    from finenvs.evaluation.score import score_run, terminal_report

    meta = None
    if args.resume is not None:
        run_file = args.resume / "run.json"
        if not run_file.is_file():
            raise FileNotFoundError(f"{args.resume}: no run.json; not a finenvs run folder")
        meta = json.loads(run_file.read_text())
        config = RunConfig(**meta["config"])
        prices = PriceTable(**meta.get("prices", {}))
    else:
        family = family_of(args.env)  # unknown env -> exit 2
        _require_market_env(args.env, family, "finenvs llm runs")
        env_kwargs: dict[str, Any] = {}
        if family == "hedging":
            if args.symbols:
                env_kwargs["symbols"] = args.symbols
            args.symbols = None
        elif args.symbols is None:
            args.symbols = ["MSFT", "TSLA", "AAPL", "NVDA"]
        if args.start:
            env_kwargs["start"] = args.start
        if args.end:
            env_kwargs["end"] = args.end
        config = RunConfig(
            env_id=args.env, symbols=args.symbols, split=args.split, env_kwargs=env_kwargs, seeds=args.seeds,
            max_tool_calls=args.max_tool_calls, request_timeout=args.timeout, decision_timeout=args.decision_timeout,
            max_retries=args.retries, concurrency=args.concurrency, format_retries=args.format_retries,
            max_decisions=args.max_decisions,
        )
        if args.prices is not None:
            if not args.model:
                raise ValueError("--prices needs --model (the table is looked up by model name)")
            prices = PriceTable.load(args.prices, args.model)
        else:
            prices = PriceTable(args.price_in, args.price_out)
    agent = _llm_agent(args, meta)
    if not args.quiet and not getattr(agent, "base_url", None):
        print(f"no --base-url: running the offline scripted agent ({agent.name})", file=sys.stderr)
    summary = run_llm(config, agent, out=args.out, name=args.name, resume=args.resume, prices=prices,
                      progress=not args.quiet)
    print(terminal_report(score_run(summary.run_dir)))
    for outcome in summary.outcomes:
        if outcome.status not in ("complete", "skipped"):
            print(f"episode {outcome.spec.label()}: {outcome.status} ({outcome.message})", file=sys.stderr)
    print(f"run {summary.status}: {summary.run_dir}/ ({summary.seconds:.1f} s)")
    return 0 if summary.status == "complete" else 1


def _cmd_score(args: argparse.Namespace) -> int:
    from finenvs.evaluation.score import score_run, terminal_report

    result = score_run(args.run_dir)
    if args.json:
        print(json.dumps(result.to_json(), indent=2))
    else:
        print(terminal_report(result))
    return 0 if result.reproduced else 1


def _cmd_mcp(args: argparse.Namespace) -> int:
    from finenvs.baselines.registry import family_of
    from finenvs.evaluation.mcp_server import McpEpisode, serve_stdio
    from finenvs.evaluation.session import EpisodeSpec

    family = family_of(args.env)
    _require_market_env(args.env, family, "finenvs mcp serves")
    kwargs: dict[str, Any] = {"split": args.split}
    if family == "hedging" and args.symbol:
        raise ValueError(f"--symbol is for single-asset envs; {args.env} takes --symbols (its universe)")
    if family != "hedging" and args.symbols:
        raise ValueError(f"--symbols is for FinHedging-v0's universe; {args.env} takes --symbol")
    for key in ("symbol", "symbols", "start", "end"):
        if getattr(args, key):
            kwargs[key] = getattr(args, key)
    episode = McpEpisode(EpisodeSpec(0, args.env, kwargs, args.seed), out=args.out, name=args.name)
    print(f"finenvs mcp: serving {args.env} {kwargs} on stdio; results in {episode.files.root}", file=sys.stderr)
    serve_stdio(episode)
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``finenvs`` command."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.version:
        import finenvs

        print(finenvs.__version__)
        return 0
    from finenvs.errors import DataError, FinEnvsError

    try:
        if args.command == "list":
            return _cmd_list()
        if args.command == "run":
            return _cmd_run(args)
        if args.command == "bench":
            return _cmd_bench(args)
        if args.command == "llm":
            return _cmd_llm(args)
        if args.command == "score":
            return _cmd_score(args)
        if args.command == "mcp":
            return _cmd_mcp(args)
        if args.command == "train":
            return _cmd_train(args)
        if args.command == "data":
            if args.data_command == "verify":
                return _cmd_data_verify(args)
            parser.error("data needs a subcommand: verify")
        parser.print_help()
        return EXIT_USAGE
    except DataError as exc:
        print(f"finenvs: error: {exc}", file=sys.stderr)
        return EXIT_DATA_INVALID if args.command == "data" else EXIT_USAGE
    except (FinEnvsError, ValueError, KeyError, FileNotFoundError, FileExistsError, ImportError) as exc:
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print(f"finenvs: error: {message}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as exc:  # gymnasium errors (unknown id, ...) and anything unforeseen: one line
        import gymnasium as gym

        if isinstance(exc, gym.error.Error):
            print(f"finenvs: error: {exc}", file=sys.stderr)
            return EXIT_USAGE
        raise


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
