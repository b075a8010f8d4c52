"""Every count the README and docs/ quote (tasks, questions, instances, paths, symbols, episodes) is the code's.

Each quote below is a pattern whose one group is a number, and the code that gives that number. Every occurrence of
the pattern in README.md and docs/ must say the code's number, and every pattern must occur at least once (a
reworded sentence fails here until its pattern is updated, so no quote drops out of the check unnoticed).
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import gymnasium as gym
import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


@dataclass(frozen=True)
class Quote:
    pattern: str  # a regular expression with one group: the number (digits, thousands commas allowed)
    count: Callable[[], int]


def _plan(env_id: str, split: str = "eval") -> int:
    from finenvs.tasks import Selection, task_of

    return len(task_of(env_id).plan(Selection(split=split)))


@cache
def _symbols(dataset: str) -> int:
    from finenvs.data import default_catalog

    return len(default_catalog().symbols(dataset))


def _baselines(env_id: str) -> int:
    from finenvs.tasks import task_of

    return len(task_of(env_id).baselines)


@cache
def _reports_per_episode() -> int:
    env = gym.make("FinReport-v0", symbol="MSFT", split="eval")
    try:
        return int(env.reset(seed=0)[1]["n_reports"])
    finally:
        env.close()


@cache
def _qa_section(section: str) -> int:
    """FinQA-v0's eval questions of one section, as its env lists them (the knowledge seeds, then the analysis
    bank); together they are the eval plan."""
    from finenvs.tasks.qa import analysis
    from finenvs.tasks.qa.env import EVAL_ANALYSIS_SEEDS, EVAL_KNOWLEDGE_SEEDS

    counts = {"knowledge": len(EVAL_KNOWLEDGE_SEEDS), "analysis": len(analysis.bank(EVAL_ANALYSIS_SEEDS))}
    assert sum(counts.values()) == _plan("FinQA-v0")
    return counts[section]


def _qa_bench_policies() -> int:
    from finenvs.tasks.qa.baselines import BENCH_POLICIES

    return len(BENCH_POLICIES)


def _public_rubric(key: str) -> int:
    from finenvs.tasks.qa.fab_public import count_items, shipped_items

    counts = count_items(shipped_items())
    return counts["questions"] - counts["questions_scored"] if key == "unscored" else counts[key]


def _options_bank() -> int:
    from finenvs.tasks.options.spec import BANK_IDS

    return len(BANK_IDS)


def _generated_options() -> int:
    return _plan("FinOptions-v0") - _options_bank()


def _deltahedge_bench_paths() -> int:
    from finenvs.tasks.deltahedge.baselines import run_bench

    return int(inspect.signature(run_bench).parameters["n"].default)


@cache
def _hedging_universe() -> int:
    env = gym.make("FinHedging-v0", split="eval")
    try:
        return len(env.unwrapped.universe)
    finally:
        env.close()


def _bench_agent_episodes() -> int:
    """The episodes of ``finenvs bench``'s agents (each family's scripted agent, and the closed-book one where a
    family has it), counted the way :func:`finenvs.evaluation.bench.agents.run_agents` plays them."""
    from finenvs.data import default_catalog
    from finenvs.evaluation.bench.agents import agent_selection, bench_agents
    from finenvs.evaluation.bench.config import BenchConfig, herculean_splits, select_tasks

    config = BenchConfig()
    catalog = default_catalog()
    total = 0
    for agent in bench_agents(config):
        for task in select_tasks(config):
            if (agent.closed_book_only and not task.bench.closed_book) or agent.debate_of is not None:
                continue
            splits = herculean_splits(config) if task.bench.herculean and task.bench.live else (config.split,)
            splits += tuple(s for s in task.bench.extra_splits if s not in splits)
            for split in splits:
                selection = agent_selection(task, split, config, agent.model, catalog, dict(agent.env_kwargs))
                total += len(task.plan(selection)) if selection is not None else 0
    return total


QUOTES = [
    # the bench's market families play the core dataset's symbols
    Quote(r"\b(\d+) core symbols", lambda: _symbols("core")),
    Quote(r"FinTrading-v0: (\d+) symbols ×", lambda: _symbols("core")),
    Quote(r"FinReport-v0: (\d+) symbols ×", lambda: _symbols("core")),
    Quote(r"FinTrading-v0: \d+ symbols × (\d+) rule baselines", lambda: _baselines("FinTrading-v0")),
    Quote(r"FinReport-v0: \d+ symbols × (\d+) baselines", lambda: _baselines("FinReport-v0")),
    Quote(r"\b(\d+)-stock universe", _hedging_universe),
    Quote(r"float32\)` for (\d+) symbols", _hedging_universe),
    # FinReport-v0: reports per eval episode, and over the core symbols
    Quote(r"`\"eval\"` \((\d+) reports\)", _reports_per_episode),
    Quote(r"and scores (\d+) template reports", lambda: _symbols("core") * _reports_per_episode()),
    Quote(r"10\.00 \((\d+) reports\)", lambda: _symbols("core") * _reports_per_episode()),
    # FinOptions-v0: generated tasks, then the FAB++ bank
    Quote(r"\b(\d+) generated\s+tasks", _generated_options),
    Quote(r"\b(\d+) (?:FAB\+\+ )?bank items", _options_bank),
    Quote(r"FinOptions-v0 \((\d+) tasks\)", lambda: _plan("FinOptions-v0")),
    Quote(r"\| Options \((\d+)\) \|", lambda: _plan("FinOptions-v0")),
    # FinDeltaHedge-v0: the bench's baselines hedge many paths, an agent run plays fewer
    Quote(r"FinDeltaHedge-v0 on (\d+) GBM paths", _deltahedge_bench_paths),
    Quote(r"\b(\d+) GBM paths for FinDeltaHedge-v0", lambda: _plan("FinDeltaHedge-v0")),
    Quote(r"MSE [\d.]+ over (\d+) paths", lambda: _plan("FinDeltaHedge-v0")),
    # FinAudit-v0
    Quote(r"\b(\d+) eval instances", lambda: _plan("FinAudit-v0")),
    Quote(r"\(eval split, (\d+) instances\)", lambda: _plan("FinAudit-v0")),
    Quote(r"the Audit section's (\d+) FinAudit-v0 answers",
          lambda: _plan("FinAudit-v0") * _baselines("FinAudit-v0")),
    # FinQA-v0: the eval questions, their sections, the public questions and their rubrics
    Quote(r"\b(\d+) eval questions", lambda: _plan("FinQA-v0")),
    Quote(r"FinQA-v0's (\d+) questions", lambda: _plan("FinQA-v0")),
    Quote(r"FinQA-v0 \((\d+) questions\)", lambda: _plan("FinQA-v0")),
    Quote(r"\b(\d+) knowledge questions", lambda: _qa_section("knowledge")),
    Quote(r"\| Analysis \((\d+)\) \|", lambda: _qa_section("analysis")),
    # (not "38 analytical and 38 public questions": what an example evaluation config selects)
    Quote(r"(?<!analytical\x20and\x20)\b(\d+) public questions", lambda: _plan("FinQA-v0", "fab_public")),
    Quote(r"\| public questions \((\d+)\) \|", lambda: _plan("FinQA-v0", "fab_public")),
    Quote(r"public questions × (\d+) policies", _qa_bench_policies),
    Quote(r"\| Knowledge \((\d+)\) \| Analysis \(\d+\) \| public", lambda: _qa_section("knowledge")),
    Quote(r"\| Knowledge \((\d+)\) \| Analysis \(\d+\) \| Options",
          lambda: _qa_section("knowledge") + _plan("FinQA-v0", "fab_public")),
    Quote(r"`fab_public`, (\d+) tasks\)", lambda: _qa_section("knowledge") + _plan("FinQA-v0", "fab_public")),
    Quote(r"\b(\d+) of the \d+ items", lambda: _public_rubric("deterministic")),
    Quote(r"\b\d+ of the (\d+) items", lambda: _public_rubric("items")),
    Quote(r"\b(\d+) of \d+ rubric items", lambda: _public_rubric("deterministic")),
    Quote(r"\b\d+ of (\d+) rubric items", lambda: _public_rubric("items")),
    Quote(r"the (\d+) questions with none", lambda: _public_rubric("unscored")),
    Quote(r"\b(\d+) questions have none", lambda: _public_rubric("unscored")),
    # the bench's agents, and the long histories of the windows part
    Quote(r"\b(\d+) agent episodes in all", _bench_agent_episodes),
    Quote(r"`yahoo_2015_2026` for FinTrading-v0: (\d+) symbols", lambda: _symbols("yahoo_2015_2026")),
    Quote(r"quarters of (\d+) symbols", lambda: _symbols("yahoo_2015_2026")),
]


def _occurrences(pattern: str) -> list[tuple[str, int]]:
    """``(page:line, number)`` of every match in README.md and docs/ (a sentence may wrap, so whitespace in the
    pattern matches a line break too)."""
    regex = re.compile(pattern.replace(" ", r"\s+"))
    out = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for m in regex.finditer(text):
            where = f"{page.relative_to(ROOT)}:{text.count(chr(10), 0, m.start()) + 1}"
            out.append((where, int(m.group(1).replace(",", ""))))
    return out


@pytest.mark.parametrize("quote", QUOTES, ids=[q.pattern for q in QUOTES])
def test_every_quoted_count_is_the_codes(quote):
    found = _occurrences(quote.pattern)
    assert found, f"no page quotes {quote.pattern!r} any more: update the pattern in {Path(__file__).name}"
    expected = quote.count()
    wrong = [(where, n) for where, n in found if n != expected]
    assert not wrong, f"{quote.pattern!r}: the code gives {expected}, the docs say {wrong}"


def test_a_changed_count_is_caught(tmp_path, monkeypatch):
    """The check can fail: a page that says 149 eval questions is reported with its line."""
    page = tmp_path / "page.md"
    page.write_text("intro\nFinQA-v0's 149 questions\nand 150 eval\nquestions\n", encoding="utf-8")
    monkeypatch.setattr(f"{__name__}.PAGES", [page])
    monkeypatch.setattr(f"{__name__}.ROOT", tmp_path)
    assert _occurrences(r"FinQA-v0's (\d+) questions") == [("page.md:2", 149)]
    assert _occurrences(r"\b(\d+) eval questions") == [("page.md:3", 150)]  # across the line break
    with pytest.raises(AssertionError, match=r"the code gives 150, the docs say \[\('page.md:2', 149\)\]"):
        test_every_quoted_count_is_the_codes(Quote(r"FinQA-v0's (\d+) questions", lambda: 150))
