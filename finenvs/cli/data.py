"""``finenvs data verify|add|remove|fetch|list``: check the shipped (or a user's) data and the built catalog cache,
append to the user layer or take out of it, fetch from the sources, list the price datasets."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from finenvs.cli.common import EXIT_DATA_INVALID, Parser, needs_subcommand, usage_error
from finenvs.text.plural import counted


def add_parser(sub: argparse._SubParsersAction) -> None:
    data = sub.add_parser("data", help="data tools")
    data_sub = data.add_subparsers(dest="data_command", parser_class=Parser)
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
    fetch = data_sub.add_parser("fetch", help="bring daily bars and news from Yahoo Finance, filings and their XBRL "
                                "from SEC EDGAR into the user layer (validated, hashed and date-locked as data add; "
                                "resumes after what is held)")
    fetch.add_argument("--prices", nargs="+", metavar="SYMBOL", help="symbols whose daily bars to fetch")
    fetch.add_argument("--news", nargs="+", metavar="SYMBOL", help="symbols whose recent news items to fetch")
    fetch.add_argument("--filings", nargs="+", metavar="SYMBOL",
                       help="symbols whose SEC EDGAR filings (their sections) to fetch; needs --user-agent")
    fetch.add_argument("--xbrl", nargs="+", metavar="SYMBOL",
                       help="symbols whose SEC EDGAR filings to fetch with their XBRL, one bundle each (instance, "
                       "schema, linkbases), for FinAudit-v0 and the XBRL tools; needs --user-agent")
    fetch.add_argument("--forms", nargs="+", default=None, metavar="FORM",
                       help="EDGAR forms to fetch with --filings (default: 10-K 10-Q 8-K) and --xbrl (default: "
                       "10-K 10-Q)")
    fetch.add_argument("--user-agent", help="who you are, as EDGAR requires: 'Your Name you@example.com' "
                       "(default: $EDGAR_IDENTITY)")
    fetch.add_argument("--start", help="first day (YYYY-MM-DD) for a symbol with no bars held yet; news published "
                       "before it is left out")
    fetch.add_argument("--end", help="last day (YYYY-MM-DD, inclusive; default and cap: the last day whose bar is "
                       "final, in New York time)")
    fetch.add_argument("--dataset", default="core", help="price dataset the bars join (default: core)")
    fetch.add_argument("--sleep", type=float, default=None, metavar="SECONDS",
                       help="pause between two calls to the source (default: 1.0)")
    remove = data_sub.add_parser("remove", help="take bars, news items or filing sections out of the user layer "
                                 "(the shipped data is never touched)")
    gone = remove.add_mutually_exclusive_group(required=True)
    gone.add_argument("--prices", nargs="+", metavar="SYMBOL", help="symbols whose user bars to remove (from --dataset)")
    gone.add_argument("--news", nargs="*", metavar="SYMBOL", help="remove the user news items (of these symbols; "
                      "without one: all)")
    gone.add_argument("--filings", nargs="*", metavar="SYMBOL", help="remove the user filing sections (of these "
                      "symbols; without one: all)")
    gone.add_argument("--all", action="store_true", help="empty the whole user layer")
    remove.add_argument("--dataset", default="core", help="price dataset of --prices (default: core)")
    listing = data_sub.add_parser("list", help="price datasets with symbol counts and date ranges, shipped and user")
    # a data file or catalog table failing its checks exits 1 (EXIT_DATA_INVALID), not 2 as other commands' bad input
    data.set_defaults(handler=needs_subcommand("data needs a subcommand: verify, add, remove, fetch or list"),
                      data_error_exit=EXIT_DATA_INVALID)
    verify.set_defaults(handler=handle_verify)
    add.set_defaults(handler=handle_add)
    remove.set_defaults(handler=handle_remove)
    fetch.set_defaults(handler=handle_fetch)
    listing.set_defaults(handler=handle_list)


def handle_verify(args: argparse.Namespace) -> int:
    from finenvs.data.catalog import load_prices
    from finenvs.data.manifest import verify_data

    if args.file is not None:
        from finenvs.data.schema import split_like_jumps

        series = load_prices(args.file, symbol=args.symbol)  # raises DataError naming the row
        for sym, s in series.items():
            print(f"{args.file}: {sym}: ok ({counted(len(s), 'row')}, {s.dates[0]}..{s.dates[-1]}); prices: "
                  f"{s.price_basis}")
            jumps = split_like_jumps(s)  # a warning, not an error: a crash can look like a split
            if jumps:
                shown_jumps = "; ".join(f"{d} {what}" for d, what in jumps[:10])
                more = f"; and {len(jumps) - 10} more" if len(jumps) > 10 else ""
                print(f"warning: {args.file}: {sym}: {counted(len(jumps), 'split-like jump')} and no adjusted-close "
                      "column: "
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

        layer = UserLayer().verify(row_counters=ROW_COUNTERS)
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
        failed = [counted(len(result.problems), "file")] if result.problems else []
        failed += [counted(len(cache.problems), "catalog cache check")] if cache and cache.problems else []
        print(f"finenvs: data verify: {' and '.join(failed)} failed", file=sys.stderr)
        return EXIT_DATA_INVALID
    tables = sum(": table " in line for line in cache.checked) if cache else 0
    print(f"all {counted(len(result.checked), 'file')} verified"
          + (f", and all {counted(tables, 'table')} of the catalog cache" if tables else ""))
    return 0


def handle_add(args: argparse.Namespace) -> int:
    if args.prices is not None and not args.symbol:
        usage_error("data add --prices needs --symbol")
    from finenvs.data.user_layer import cli_data_add

    return cli_data_add(prices=args.prices, symbol=args.symbol, dataset=args.dataset, news=args.news,
                        filings=args.filings)


def handle_remove(args: argparse.Namespace) -> int:
    from finenvs.data.user_layer import cli_data_remove

    return cli_data_remove(prices=args.prices, dataset=args.dataset, news=args.news, filings=args.filings,
                           everything=args.all)


def handle_fetch(args: argparse.Namespace) -> int:
    import re

    if not args.prices and not args.news and not args.filings and not args.xbrl:
        usage_error("data fetch needs --prices, --news, --filings and/or --xbrl SYMBOL...")
    for flag, value in (("--start", args.start), ("--end", args.end)):
        if value is not None and not re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
            usage_error(f"data fetch {flag}: {value[:40]!r} is not a day (YYYY-MM-DD)")
    if args.start and args.end and args.start > args.end:
        usage_error(f"data fetch: --start {args.start} is after --end {args.end}")
    if args.sleep is not None and not args.sleep >= 0:
        usage_error("data fetch --sleep: give a number of seconds >= 0")
    from finenvs.data.fetch import cli_data_fetch

    if args.filings or args.xbrl:
        from finenvs.data.sources import SourceError
        from finenvs.data.sources.edgar import user_agent

        try:
            user_agent(args.user_agent)
        except SourceError as exc:
            usage_error(f"data fetch {'--filings' if args.filings else '--xbrl'}: {exc}")
    check = None
    if args.xbrl:  # the XBRL layer checks a bundle before it enters the user layer
        from finenvs.xbrl import corpus

        check = corpus.bundle_rows
    return cli_data_fetch(prices=args.prices or (), news=args.news or (), start=args.start, end=args.end,
                          dataset=args.dataset, sleep=args.sleep, filings=args.filings or (),
                          forms=tuple(args.forms) if args.forms else None, user_agent=args.user_agent,
                          xbrl=args.xbrl or (), check=check)


def handle_list(args: argparse.Namespace) -> int:
    from finenvs.data.user_layer import cli_data_list

    return cli_data_list()
