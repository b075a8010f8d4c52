"""The ``finenvs`` command line.

    finenvs list                                  registered envs, one line each
    finenvs run --env FinTrading-v0 --policy momentum [--symbol AAPL --split eval --seed 0]
    finenvs bench [--split eval --symbols AAPL MSFT --out finenvs-results]
    finenvs data verify [--file my_prices.csv]

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
    run.add_argument("--split", default="eval", help="train, eval or live (default: eval)")
    run.add_argument("--start", help="window start YYYY-MM-DD (overrides the split's)")
    run.add_argument("--end", help="window end YYYY-MM-DD (overrides the split's)")
    run.add_argument("--seed", type=int, default=0)
    run.add_argument("--fee-bps", type=float, help="fee in basis points (default: the env's, 5)")
    run.add_argument("--fill", choices=["close", "next_open"], help="fill model (default: close)")
    run.add_argument("--json", action="store_true", help="print the result as JSON")
    run.add_argument("--chart", type=Path, help="write the episode's equity/drawdown chart to this PNG")

    bench = sub.add_parser("bench", help="every env x every baseline on a split; writes a scorecard")
    bench.add_argument("--split", default="eval", help="train, eval or live (default: eval)")
    bench.add_argument("--symbols", nargs="+", help="symbols (default: each env's universe)")
    bench.add_argument("--envs", nargs="+", help="env ids (default: all)")
    bench.add_argument("--seed", type=int, default=0)
    bench.add_argument("--out", type=Path, default=Path("finenvs-results"), help="results folder")
    bench.add_argument("--name", help="run folder name (default: UTC timestamp)")
    bench.add_argument("--no-plots", action="store_true", help="skip the PNG charts")
    bench.add_argument("--quiet", action="store_true", help="no progress bar")

    data = sub.add_parser("data", help="data tools")
    data_sub = data.add_subparsers(dest="data_command", parser_class=_Parser)
    verify = data_sub.add_parser("verify", help="check hashes and invariants of the shipped (or a user's) data")
    verify.add_argument("--file", type=Path, help="check a user CSV/Parquet file instead of the shipped data")
    verify.add_argument("--symbol", help="symbol of a file without a symbol column (default: file stem)")
    verify.add_argument("--data-dir", type=Path, help="folder with a MANIFEST.json (default: shipped data)")
    return parser


def _cmd_list() -> int:
    from finenvs.baselines.registry import applicable_policies
    from finenvs.registration import ENVIRONMENTS

    width = max(len(e) for e in ENVIRONMENTS)
    for env_id, (description, _family) in ENVIRONMENTS.items():
        print(f"{env_id.ljust(width)}  {description}")
        print(f"{''.ljust(width)}  baselines: {', '.join(applicable_policies(env_id))}")
    return 0


def _cmd_run(args: argparse.Namespace) -> int:
    import gymnasium as gym

    from finenvs.baselines.registry import family_of, make_policy
    from finenvs.baselines.runner import run_episode

    family_of(args.env)  # unknown env -> KeyError -> exit 2
    kwargs: dict[str, Any] = {"split": args.split}
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
    if args.chart:
        print(f"  chart: {args.chart}")
    return 0


def _write_png(rgb: Any, path: Path) -> None:
    from matplotlib.image import imsave

    path.parent.mkdir(parents=True, exist_ok=True)
    imsave(path, rgb)


def _cmd_bench(args: argparse.Namespace) -> int:
    from finenvs.baselines.bench import BenchConfig, run_bench, terminal_table

    card = run_bench(
        BenchConfig(
            split=args.split,
            symbols=args.symbols,
            envs=args.envs,
            seed=args.seed,
            out=args.out,
            run_name=args.name,
            plots=not args.no_plots,
            progress=not args.quiet,
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
        if args.command == "data":
            if args.data_command == "verify":
                return _cmd_data_verify(args)
            parser.error("data needs a subcommand: verify")
        parser.print_help()
        return EXIT_USAGE
    except DataError as exc:
        print(f"finenvs: error: {exc}", file=sys.stderr)
        return EXIT_DATA_INVALID if args.command == "data" else EXIT_USAGE
    except (FinEnvsError, ValueError, KeyError, FileNotFoundError, ImportError) as exc:
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
