"""``finenvs bench``: every registered family with its baselines and agents, one scorecard.

:func:`run_bench` writes ``scorecard.json``, ``scorecard.md`` (and ``scorecard.html``) and PNG charts
under ``<out>/<run>/`` and returns the :class:`Scorecard`.

The bench knows no family: each family's spec names its section (``bench.section``, a
:class:`finenvs.tasks.section.Section`), which runs its baselines, takes the agents' episodes into its
tables and renders its part; the bench hands it the evaluation machinery it needs
(:class:`finenvs.tasks.section.BenchContext`). The package, by what each part does:

* :mod:`.config`: :class:`BenchConfig`, the suites, the families a config selects, the run folder;
* :mod:`.run`: :func:`run_bench`, the families' sections, the windows part and the agents, in order;
* :mod:`.agents`: the bench's agents and the episodes each plays;
* :mod:`.herculean`: HERCULEAN's Table 2 and 3 layout and the reproduction of its published rows;
* :mod:`.aggregate`: FAB++'s section aggregate, its Alpha score and the debate round;
* :mod:`.scorecard`: :class:`Scorecard` and each family's share of it;
* :mod:`.render`, :mod:`.terminal`, :mod:`.plots`: the Markdown/HTML files, the printed summary, the charts.
"""

from finenvs.evaluation.bench.agents import agent_selection, bench_agents, run_agents, split_skips
from finenvs.evaluation.bench.aggregate import aggregate_markdown, alpha_cell, section_aggregate
from finenvs.evaluation.bench.config import BenchConfig, suite_choices, suites
from finenvs.evaluation.bench.herculean import herculean_baselines, reproduction_check
from finenvs.evaluation.bench.render import render_markdown, write_scorecard
from finenvs.evaluation.bench.run import run_bench
from finenvs.evaluation.bench.scorecard import Scorecard
from finenvs.evaluation.bench.terminal import terminal_table
from finenvs.tasks.market_section import mean_rows

__all__ = ["BenchConfig", "Scorecard", "agent_selection", "aggregate_markdown", "alpha_cell", "bench_agents",
           "herculean_baselines", "mean_rows", "reproduction_check", "render_markdown", "run_agents", "run_bench",
           "section_aggregate", "split_skips", "suite_choices", "suites", "terminal_table", "write_scorecard"]
