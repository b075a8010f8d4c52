"""``python tests/cli_keeping_the_card.py CARD.pickle ARGS...``: the ``finenvs`` command (the CLI's ``main``, as
``python -m finenvs.cli`` runs it) that also pickles the :class:`~finenvs.evaluation.bench.Scorecard` its bench
returned to ``CARD.pickle``, so the shared bench (tests/conftest.py ``small_bench``) serves the tests that render
a real run's card again (tests/test_scorecard_html.py) without a second bench. Test instrumentation only: the
command's arguments, output and exit code are the CLI's own."""

from __future__ import annotations

import pickle
import sys
from pathlib import Path

from finenvs.cli import main
from finenvs.evaluation import bench

kept = []
_run_bench = bench.run_bench


def _keeping(*args, **kwargs):
    card = _run_bench(*args, **kwargs)
    kept.append(card)
    return card


if __name__ == "__main__":
    bench.run_bench = _keeping  # the CLI imports run_bench from the package when it runs
    code = main(sys.argv[2:])
    if len(kept) == 1:
        Path(sys.argv[1]).write_bytes(pickle.dumps(kept[0]))
    sys.exit(code)
