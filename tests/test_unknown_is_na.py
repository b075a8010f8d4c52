"""Unknown is n/a everywhere, and every table is the one table writer's.

One formatter (:func:`finenvs.text.markdown.fmt_number` / :func:`~finenvs.text.markdown.fmt_count`) shows None,
NaN, infinity and non-numbers as ``n/a`` in the terminal, the Markdown and the HTML page, and the JSON files hold
``null``; one writer (:func:`finenvs.text.markdown.md_table`, tabulate's pipe format) draws every table. An endpoint
that never answered reports no tokens and no cost: n/a, never ``0 / 0`` or ``$ 0.0000``.
"""

from __future__ import annotations

import json
import math
import re
import sys
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

from finenvs.text.markdown import NA, fmt_count, fmt_number, md_table, md_text

sys.path.insert(0, str(Path(__file__).parent))


class _Cells(HTMLParser):
    """The rows of an HTML page's tables as cell texts."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.rows: list[list[str]] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self.rows[-1].append("".join(self._cell))
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def _html_rows(markdown: str) -> list[list[str]]:
    from finenvs.evaluation.scorecard_html import markdown_to_html

    parser = _Cells()
    parser.feed(markdown_to_html(markdown)[0])
    return parser.rows


def _md_rows(table: str) -> list[list[str]]:
    rows = [[c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]] for line in table.splitlines()]
    return [r for r in rows if not all(re.fullmatch(r":?-+:?", c) for c in r)]


# ---------------------------------------------------------------------------- the formatter
@pytest.mark.parametrize("value", [None, math.nan, math.inf, -math.inf, np.nan, np.float32("nan"), True, "0.5", [1]],
                         ids=repr)
def test_every_unknown_value_is_na(value):
    assert fmt_number(value) == NA == "n/a"
    assert fmt_number(value, 100.0, 1, sign=True) == NA
    assert fmt_count(value) == NA


@pytest.mark.parametrize("value, kwargs, shown", [
    (0.1234, {}, "0.12"), (0.1234, {"scale": 100.0, "digits": 1}, "12.3"), (0.5, {"sign": True}, "+0.50"),
    (-2, {"digits": 0}, "-2"), (np.float64(1.5), {"digits": 3}, "1.500"), (0, {}, "0.00"),
])
def test_known_numbers_are_formatted(value, kwargs, shown):
    assert fmt_number(value, **kwargs) == shown
    assert fmt_count(1234) == "1234" and fmt_count(0) == "0"  # a known zero stays 0


# ---------------------------------------------------------------------------- the table writer
def test_md_table_is_a_pipe_table_with_numbers_right_aligned():
    table = md_table(["policy", "CR %", "note"], [[md_text("a | b"), fmt_number(0.1234, 100), "held"],
                                                  ["naive", fmt_number(math.nan), "—"]])
    header, rule, *rows = table.splitlines()
    assert header.startswith("| policy") and len({len(line) for line in table.splitlines()}) == 1  # padded
    assert re.fullmatch(r"\|:-+\|-+:\|:-+\|", rule)  # names left, numbers right
    assert _md_rows(table) == [["policy", "CR %", "note"], ["a \\| b", "12.34", "held"], ["naive", "n/a", "—"]]
    # the page shows the same cells (the escaped pipe is text inside its cell)
    assert _html_rows(table) == [["policy", "CR %", "note"], ["a | b", "12.34", "held"], ["naive", "n/a", "—"]]


def test_md_table_refuses_a_row_of_the_wrong_width():
    with pytest.raises(ValueError, match="2 cells for 3 columns"):
        md_table(["a", "b", "c"], [["1", "2"]])


def test_no_hand_written_table_writer_is_left():
    """Every Markdown table of the package comes from md_table: no module writes a separator row itself."""
    root = Path(__file__).resolve().parents[1]
    offenders = []
    for folder in ("finenvs", "baselines", "scoring", "wrappers"):
        for path in (root / folder).rglob("*.py"):
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                code = line.split("#")[0]
                if re.search(r"[\"']\|-{3}|\"\|\" \+ \"\|\"\.join|---\|\" \*", code):
                    offenders.append(f"{path.relative_to(root)}:{n}")
    assert offenders == []


# ---------------------------------------------------------------------------- an endpoint that never answered
def test_a_decision_the_endpoint_never_answered_has_unknown_tokens_and_cost():
    import asyncio

    from finenvs.evaluation.endpoints import EndpointError
    from finenvs.evaluation.llm import PriceTable, RunConfig, decide

    class Dead:
        async def complete(self, messages, tools):
            raise EndpointError("transient", "cannot reach http://127.0.0.1:9/v1")

    class Port:
        from finenvs.tasks.trading.protocol import TRADING_PROTOCOL as protocol

        def tool_specs(self):
            return []

    config = RunConfig(symbols=["AAPL"], max_retries=0, backoff_base=0.001, backoff_max=0.001)
    decision = asyncio.run(decide(Dead(), Port(), "decide", config))
    assert decision.endpoint_failed and decision.usage is None
    assert PriceTable(3.0, 15.0).cost(decision.usage) is None  # priced or not: unknown, never $0


def test_a_run_with_no_answered_decision_shows_tokens_and_cost_as_na(tmp_path):
    from finenvs.evaluation.score import EpisodeScore, RunScore, efficiency_table, episode_table
    from finenvs.evaluation.session import EpisodeTotals

    assert EpisodeTotals().tokens is None and EpisodeTotals().reported_cost_usd is None
    score = RunScore(tmp_path, {}, None, [EpisodeScore(0, "AAPL", "incomplete", 0)])
    eff = score.efficiency()
    assert eff["tokens"] is None and eff["prompt_tokens"] is None and eff["cost_usd"] is None
    table = efficiency_table(score)
    assert re.search(r"\| tokens reported \(prompt / completion\) +\| n/a +\|", table)
    assert re.search(r"\| cost \$ \(per decision\) +\| n/a \(n/a\) +\|", table)
    assert "0.0000" not in table and not re.search(r"tokens.*\| 0 / 0", table)
    row = _md_rows(episode_table(score))[1]
    assert row[-3:-1] == ["n/a", "n/a"]  # tokens, cost $
    # JSON: null, not 0
    assert json.loads(json.dumps(eff))["cost_usd"] is None


def test_the_agent_table_and_its_page_agree_on_na():
    from finenvs.evaluation.agent_runs import agents_markdown
    from finenvs.tasks import task_of

    task = task_of("FinQA-v0")
    run = {"agent": "foo", "split": "eval", "episodes": [{}], "metrics": {k.key: math.nan for k in task.columns},
           "failed": 1, "reproduced": True,
           "efficiency": {"format_errors": 0, "tool_calls_per_decision": math.nan, "look_ahead_attempts": 0,
                          "tokens": None}}
    table = next(block for block in agents_markdown(task, [run]) if block.startswith("| agent"))
    md_rows = _md_rows(table)
    html_rows = _html_rows(table)
    assert md_rows == html_rows
    cells = dict(zip(md_rows[0], md_rows[1], strict=True))
    assert cells["tokens"] == "n/a" and cells["tool calls/decision"] == "n/a"
    assert all(cells[c.label] == "n/a" for c in task.columns)


def test_scorecard_json_holds_null_where_the_markdown_and_the_page_say_na(tmp_path):
    """always_flat never enters the market: its Sharpe ratio is undefined, NaN in memory, null in scorecard.json and
    n/a in the same row of scorecard.md and scorecard.html."""
    pytest.importorskip("markdown_it")
    from finenvs.evaluation.bench import BenchConfig, run_bench

    run_bench(BenchConfig(envs=["FinTrading-v0"], symbols=["SPY"], agents=False, plots=False, out=tmp_path,
                          run_name="na", progress=False))
    folder = tmp_path / "na"

    def refuse(constant):
        raise AssertionError(f"scorecard.json holds {constant}")

    card = json.loads((folder / "scorecard.json").read_text(), parse_constant=refuse)
    flat = [r for r in card["rows"] if r["policy"] == "always_flat"]
    assert flat and all(r["standard"]["sharpe"] is None for r in flat)
    markdown = (folder / "scorecard.md").read_text()
    md_flat = [line for line in markdown.splitlines() if line.startswith("| always_flat ")]
    assert md_flat and all("n/a" in line and "nan" not in line for line in md_flat)
    page = _Cells()
    page.feed((folder / "scorecard.html").read_text())
    html_flat = [r for r in page.rows if r and r[0] == "always_flat"]
    assert [[c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]] for line in md_flat] == html_flat


def test_the_table_writer_and_the_page_renderer_are_declared_dependencies():
    """tabulate (every table, core commands included) is a core dependency; markdown-it-py (scorecard.html) is in
    `plot`, which `all` installs."""
    import tomllib

    project = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())["project"]

    def names(reqs: list[str]) -> set[str]:
        return {re.split(r"[\[<>=~!; ]", r, maxsplit=1)[0] for r in reqs}

    assert "tabulate" in names(project["dependencies"])
    extras = project["optional-dependencies"]
    assert "markdown-it-py" in names(extras["plot"])
    assert "plot" in extras["all"][0].split("[")[1]
