"""The ``finenvs`` command line: one module per command (its flags and its handler), gathered here.

    finenvs list                                  registered envs, one line each
    finenvs run --env FinTrading-v0 --policy momentum [--symbol AAPL --split eval --seed 0]
    finenvs bench [--split eval --symbols AAPL MSFT --universe AAPL MSFT NVDA --out finenvs-results]
    finenvs data verify [--file my_prices.csv]
    finenvs data add --prices new_bars.csv --symbol TSLA | --news items.csv | --filings sections.csv
    finenvs data remove --prices TSLA2 | --news [SYMBOL...] | --filings [SYMBOL...] | --all
    finenvs data list
    finenvs llm [--base-url URL --model NAME] [--symbols TSLA AAPL --split eval --out finenvs-runs]
    finenvs llm --resume RUN_DIR
    finenvs score RUN_DIR
    finenvs cost [--envs FinTrading-v0 --price-in 2.5 --price-out 10]
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
resume with: finenvs llm --resume DIR``), and exits 130; so does one while the
package loads (:func:`finenvs._interrupted_while_starting`). ``--quiet`` prints
only the last line (where the results are).

Each command module has ``add_parser(sub)``, which declares its flags and sets its ``handler`` (and, where a
Ctrl-C has something to report, its ``interrupted`` line); :func:`main` parses, calls the handler and turns
errors into one line and an exit code. What several commands share is in :mod:`finenvs.cli.common` and
:mod:`finenvs.cli.checks`. Building the parser imports no heavy module: handlers import what they need.
"""

from __future__ import annotations

try:  # a Ctrl-C before main() runs: one line and exit 130 (see finenvs._interrupted_while_starting)
    import argparse
    import sys

    from finenvs.cli import (
        bench,
        compare,
        cost,
        data,
        export,
        harness,
        llm,
        mcp,
        run,
        sandbox,
        score,
        skills,
        train,
    )
    from finenvs.cli import list as list_command
    from finenvs.cli.common import (
        EXIT_DATA_INVALID,
        EXIT_INTERNAL,
        EXIT_INTERRUPTED,
        EXIT_USAGE,
        Parser,
        error,
        interrupted_line,
    )
except KeyboardInterrupt as _error:
    from finenvs import _interrupted_while_starting

    _interrupted_while_starting(_error)

#: The commands, in the order ``finenvs --help`` lists them.
COMMANDS = (list_command, run, bench, cost, llm, compare, score, export, harness, sandbox, skills, mcp, train, data)


def stands_for_ctrl_c(exc: BaseException) -> bool:
    """Whether ``exc`` is a library's error for a Ctrl-C it caught: DuckDB ends a query it was running with
    ``InterruptException`` or ``RuntimeError("Query interrupted")``; an error raised while handling a
    KeyboardInterrupt (its cause or context) counts too."""
    current: BaseException | None = exc
    for _ in range(20):  # a cause chain is short; a cycle is not followed forever
        if current is None:
            return False
        if isinstance(current, KeyboardInterrupt) or type(current).__name__ == "InterruptException" or (
                isinstance(current, RuntimeError) and str(current) == "Query interrupted"):
            return True
        current = current.__cause__ or current.__context__
    return False


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="finenvs", description="Gymnasium environments for financial agents.")
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    parser.add_argument("--debug", action="store_true",
                        help="show the traceback of an unexpected error (also: FINENVS_DEBUG=1)")
    sub = parser.add_subparsers(dest="command", parser_class=Parser)
    for command in COMMANDS:
        command.add_parser(sub)
    return parser


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
        parser = build_parser()
        args = parser.parse_args(argv)
        debug = debug or args.debug
        if args.version:
            import finenvs

            print(finenvs.__version__)
            return 0
        handler = getattr(args, "handler", None)
        if handler is None:  # no command
            parser.print_help()
            return EXIT_USAGE
        from finenvs.errors import DataError, FinEnvsError

        try:
            return handler(args)
        except DataError as exc:
            error(exc)
            return getattr(args, "data_error_exit", EXIT_USAGE)
        except (FinEnvsError, ValueError, KeyError, FileNotFoundError, FileExistsError, ImportError) as exc:
            error(exc.args[0] if isinstance(exc, KeyError) and exc.args else exc)
            return EXIT_USAGE
    except KeyboardInterrupt:
        print(interrupted_line(args, began), file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `finenvs list | head`: the reader left; say nothing more
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115  (Python flushes stdout at exit)
        return EXIT_INTERNAL
    except Exception as exc:  # gymnasium errors (unknown id, ...) and anything unforeseen: one line
        import gymnasium as gym

        if stands_for_ctrl_c(exc):  # a library's own error for the Ctrl-C it caught (DuckDB mid-query)
            print(interrupted_line(args, began), file=sys.stderr)
            return EXIT_INTERRUPTED
        if isinstance(exc, gym.error.Error):
            error(exc)
            return EXIT_USAGE
        if debug:
            raise
        error(f"unexpected {type(exc).__name__}: {exc} (run with --debug or FINENVS_DEBUG=1 for the traceback)")
        return EXIT_INTERNAL


__all__ = ["COMMANDS", "EXIT_DATA_INVALID", "EXIT_INTERNAL", "EXIT_INTERRUPTED", "EXIT_USAGE", "build_parser", "main"]
