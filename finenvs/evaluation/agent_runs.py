"""Agents in ``finenvs bench``: each family's offline scripted agent and, when asked, a model (endpoint or A2A).

Every agent runs through :func:`finenvs.evaluation.llm.run_llm` over each selected
family's plan, as one run folder per (agent, family, split) under the bench run's
``agents/`` folder, and :func:`finenvs.evaluation.score.score_run` re-scores it; the
bench puts the results beside the baselines: market episodes in the per-symbol tables,
every family in its agents table, HERCULEAN's Table 2 (backtest) and Table 3 (live)
layout, and FAB++'s section aggregate. A run folder that exists already is resumed, so
``finenvs bench --resume RUN`` reuses every finished episode.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from finenvs.tasks import Column, Selection, TaskSpec, tasks
from finenvs.text.markdown import fmt_count, fmt_number, md_table, md_text

#: The label of each family's offline scripted agent in tables.
SCRIPTED = "scripted_agent"


@dataclass(frozen=True)
class BenchAgent:
    """An agent of the bench: ``make(task)`` builds it for a family (a model is the same for every family)."""

    name: str
    make: Callable[[TaskSpec], Any]
    model: bool = False
    #: Further env arguments of its episodes (``{"tools": "none"}``: closed book).
    env_kwargs: Mapping[str, Any] = field(default_factory=dict)
    #: Play only the families whose bench section asks for a closed-book run (``BenchSection.closed_book``).
    closed_book_only: bool = False
    #: The agent whose debated runs these are (``env_kwargs`` has ``debate``): it plays only the families with a
    #: debate round, and its multipliers apply to that agent's profile in the aggregate.
    debate_of: str | None = None
    #: Its token prices (a :class:`~finenvs.evaluation.llm.PriceTable`): its runs' dollar cost (None: a baseline or
    #: an offline agent, which spends no tokens).
    prices: Any = None


def slug(name: str) -> str:
    """A folder-safe form of an agent name."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_") or "agent"


def run_agent(agent: BenchAgent, task: TaskSpec, selection: Selection, root: Path, *, concurrency: int = 4,
              progress: bool = False, prices: Any = None, **config: Any) -> dict[str, Any]:
    """Run ``agent`` over ``task``'s plan for ``selection`` (resuming the run folder if it exists); its score.
    ``prices`` (a :class:`~finenvs.evaluation.llm.PriceTable`) prices its tokens: each decision's ``cost_usd``."""
    from finenvs.evaluation.llm import PriceTable, RunConfig, run_llm
    from finenvs.evaluation.score import score_run

    run_config = RunConfig(env_id=task.env_id, split=selection.split,
                           symbols=list(selection.symbols) if selection.symbols else None,
                           instances=list(selection.instances) if selection.instances is not None else None,
                           limit=selection.limit, seeds=list(selection.seeds), env_kwargs=dict(selection.env_kwargs),
                           concurrency=concurrency, **config)
    folder = root / slug(agent.name)
    name = f"{task.family}-{selection.split}"
    resume = folder / name if (folder / name / "run.json").is_file() else None
    summary = run_llm(run_config, agent.make(task), out=folder, name=name, resume=resume, progress=progress,
                      prices=prices if prices is not None else PriceTable())
    score = score_run(summary.run_dir)
    episodes = []
    for e in score.episodes:
        single = task.metrics_of_run([e.metrics]) if e.metrics is not None else None
        episodes.append({"index": e.index, "label": e.label, "status": e.status, "metrics": single,
                         "episode": e.metrics, "reason": e.reason, "reproduced": e.reproduced,
                         "endpoint_failed": e.endpoint_failed})
    no_reply = [e for e in score.episodes if e.endpoint_failed]
    return {"agent": agent.name, "model": agent.model, "debate_of": agent.debate_of, "family": task.family,
            "env": task.env_id,
            "split": selection.split, "run_dir": str(summary.run_dir), "status": summary.status,
            # an episode the endpoint never answered makes the run a failed evaluation: no run metrics, "failed"
            "metrics": None if no_reply else score.run_metrics(), "episodes": episodes,
            "efficiency": score.efficiency(), "endpoint_failed": len(no_reply),
            "endpoint_failure": (f"{len(no_reply)} of {len(episodes)} episode(s) got no reply from the endpoint on "
                                 f"any decision (first: {no_reply[0].label}: {no_reply[0].reason})") if no_reply else None,
            "reproduced": score.reproduced, "signature": score.signature,
            "failed": sum(e["status"] == "failed" for e in episodes),
            # why the run did not finish (an endpoint that never answered, ...): the first unfinished episode's cause
            "unfinished": next((f"{o.spec.label()}: {o.message}" for o in summary.outcomes
                                if o.status not in ("complete", "failed", "skipped", "waiting")), None),
            "prices": None if prices is None or None in (prices.input_per_million, prices.output_per_million) else
            {"input_per_million": prices.input_per_million, "output_per_million": prices.output_per_million}}


#: What a scorecard cell shows for a run or an episode the endpoint never answered (never a score).
FAILED_CELL = "failed"


def _cell(column: Column, metrics: dict[str, Any] | None) -> str:
    return column.cell(metrics)


def run_cells(columns: Sequence[Column], run: Mapping[str, Any]) -> list[str]:
    """A run's metric cells in a table: ``failed`` for each when the endpoint never answered one of its episodes."""
    return [FAILED_CELL if run.get("endpoint_failed") else _cell(c, run["metrics"]) for c in columns]


def agents_markdown(task: TaskSpec, runs: list[dict[str, Any]]) -> list[str]:
    """A family's agents table: one row per agent and split, the family's columns and the efficiency figures."""
    if not runs:
        return []
    headers = ["agent", "split", "episodes", *(c.label for c in task.columns), "failed", "format errors",
               "tool calls/decision", "look-ahead", "tokens", "reproduced"]
    rows = []
    for run in runs:
        eff = run["efficiency"]
        tcd = eff.get("tool_calls_per_decision")
        rows.append([md_text(run["agent"]), md_text(run["split"]), str(len(run["episodes"])),
                     *run_cells(task.columns, run), str(run["failed"]),
                     str(eff["format_errors"]), fmt_number(tcd),
                     str(eff["look_ahead_attempts"]), fmt_count(eff["tokens"]),
                     ("yes" if run["reproduced"] else "NO") + (f", {run['signature']}" if run.get("signature") else "")])
    return [f"### {task.env_id}: agents through the text interface", "",
            "Each agent runs the family's plan through the text env and its date-locked tools (`finenvs llm`); "
            "the run folder is re-scored offline (`finenvs score`). Tokens are n/a where the agent reports none.",
            "", md_table(headers, rows), ""]


#: HERCULEAN's published-results JSON: its metrics -> (column key, scale). Its blocks are the workflows whose task
#: specs name them (``bench.published_block``).
PUBLISHED_METRICS = {"CR": ("h_cumulative_return", 0.01), "SR": ("h_sharpe", 1.0), "MDD": ("h_max_drawdown", 0.01),
                     "Score": ("quality", 1.0), "ACC": ("ACC", 0.01), "SER": ("SER", 0.01), "EER": ("EER", 0.01),
                     "CER": ("CER", 0.01)}
PUBLISHED_BASELINE = "Buy&Hold (published)"
#: The split whose window each regime of HERCULEAN's published results covers (Table 2: backtest, Table 3: live).
PUBLISHED_SPLITS = {"backtest": "eval", "live": "live"}


def load_published(path: Path | str
                   ) -> tuple[str, dict[str, dict[str, dict[str, dict[str, float | None] | None]]]]:
    """Rows of a HERCULEAN published-results file (the paper's Table 2 or Table 3 in its JSON form).

    Returns:
        ``(regime, {workflow: {row label: {episode label: {column key: value}}}})``, regime ``"backtest"``
        (a file with a ``raw`` block: Table 2) or ``"live"``; row labels ``"<agent> / <model> (published)"``
        and :data:`PUBLISHED_BASELINE`; per-symbol blocks are labelled by symbol, the others ``"all"``. A block is
        read for each registered workflow whose spec names it (``bench.published_block``).
        A ``null`` (the paper's "—") is kept as None.

    Raises:
        ValueError: The file is not such a table (names what is missing).
    """
    import json

    try:
        doc = json.loads(Path(path).read_text())
        configs = [f"{c['agent']} / {c['model']} (published)" for c in doc["configs"]]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{path}: not a HERCULEAN published-results file (configs of agent and model): {exc}") from None
    regime = "backtest" if "raw" in doc else "live"
    blocks = doc.get("raw", doc)

    def cells(values: dict[str, Any]) -> dict[str, dict[str, float | None]]:
        out: dict[str, dict[str, float | None]] = {}
        for metric, (key, scale) in PUBLISHED_METRICS.items():
            column = values.get(metric)
            if isinstance(column, list):
                for label, v in zip(configs, column, strict=False):
                    out.setdefault(label, {})[key] = None if v is None else float(v) * scale
            if isinstance(values.get("BL"), dict) and values["BL"].get(metric) is not None:
                out.setdefault(PUBLISHED_BASELINE, {})[key] = float(values["BL"][metric]) * scale
        return out

    tables: dict[str, dict[str, dict[str, dict[str, float | None] | None]]] = {}
    for task in tasks():
        block, workflow = task.bench.published_block, task.bench.herculean
        if block is None or workflow is None:
            continue
        data = blocks.get(block)
        if not isinstance(data, dict):
            continue
        per_label = all(isinstance(v, dict) for v in data.values())
        rows: dict[str, dict[str, dict[str, float | None] | None]] = {}
        for label, values in (data.items() if per_label else [("all", data)]):
            for row, metrics in cells(values).items():
                # every metric null: the paper's "—" (no valid result after five attempts)
                rows.setdefault(row, {})[label] = None if all(v is None for v in metrics.values()) else metrics
        tables[workflow] = rows
    return regime, tables


def herculean_tables(tasks: list[TaskSpec], runs: list[dict[str, Any]], baselines: dict[str, Any],
                     splits: tuple[str, ...], published: Sequence[Path | str] = ()) -> dict[str, Any]:
    """HERCULEAN's Table 2 (backtest) and Table 3 (the ``live`` split) layout for every agent that ran.

    One table per workflow and split: a row per agent (the Buy&Hold baseline and the paper's published rows
    first), a column group per episode label (symbol, pair, or the whole instance set) with the workflow's
    columns. A failed episode (HERCULEAN's rule) shows "—".

    Args:
        tasks: The HERCULEAN families in the bench, in table order.
        runs: Agent runs (:func:`run_agent`).
        baselines: ``{family: {split: {label: metrics}}}`` of the Buy&Hold rows.
        splits: The backtest and live splits.
        published: HERCULEAN published-results files (Table 2 and/or Table 3, :func:`load_published`); their
            rows join the table of the window they publish (:data:`PUBLISHED_SPLITS`), as the specs' own published
            rows do (``bench.published_for``); a table of another window has none.
    """
    from_files: dict[str, dict[str, Any]] = {}
    for path in published:  # each file's rows join the table of the window it publishes (Table 2: eval, 3: live)
        regime, tables = load_published(path)
        from_files[PUBLISHED_SPLITS[regime]] = tables
    out: dict[str, Any] = {}
    for split in splits:
        split_tables = []
        for task in tasks:
            columns = task.bench.herculean_columns or task.columns
            family_runs = [r for r in runs if r["family"] == task.family and r["split"] == split]
            if not family_runs:
                continue
            per_label = task.bench.herculean_per_label
            labels = list(dict.fromkeys(e["label"] for r in family_runs for e in r["episodes"])) if per_label else []
            if task.bench.herculean_labels and set(task.bench.herculean_labels) & set(labels):
                labels = [label for label in task.bench.herculean_labels if label in labels]  # the paper's columns
            rows: list[dict[str, Any]] = []
            for agent, by_label in (baselines.get(task.family, {}).get(split) or {}).items():
                rows.append({"agent": agent, "cells": by_label})
            file_rows = (from_files.get(split) or {}).get(task.bench.herculean or "") or {}
            for agent, by_label in task.bench.published_for(split).items():
                if agent not in file_rows:
                    rows.append({"agent": agent, "cells": dict(by_label)})
            for agent, by_label in file_rows.items():
                rows.append({"agent": agent, "cells": dict(by_label)})
            for r in family_runs:
                cells = ({e["label"]: e["metrics"] for e in r["episodes"]} if per_label else {"all": r["metrics"]})
                # the labels whose episodes the endpoint never answered (the whole run's, without labels): "failed"
                failed = ([e["label"] for e in r["episodes"] if e.get("endpoint_failed")] if per_label
                          else ["all"] if r.get("endpoint_failed") else [])
                rows.append({"agent": r["agent"], "cells": cells, **({"failed": failed} if failed else {})})
            split_tables.append({
                "workflow": task.bench.herculean, "env": task.env_id, "labels": labels or ["all"],
                "columns": [{"key": c.key, "label": c.label, "scale": c.scale, "digits": c.digits} for c in columns],
                "rows": rows})
        out[split] = split_tables
    return out


def herculean_markdown(tables: dict[str, Any], splits: tuple[str, ...]) -> list[str]:
    """The HERCULEAN tables as Markdown (Table 2: backtest, Table 3: live)."""
    lines = ["## HERCULEAN Table 2 and Table 3 layout", "",
             "HERCULEAN's four workflows for every agent, backtest (Table 2) and live (Table 3), HERCULEAN's "
             "conventions ((H) columns: entry fee in the first value, exit fee in the last, Sharpe over non-zero "
             "days). \"—\": the episode failed under HERCULEAN's rule (no valid decision after five attempts) or did "
             "not run; \"failed\": the endpoint never answered the episode (no score). Published rows are the "
             "paper's own figures for the same window.", ""]
    for split in splits:
        title = "Table 3 (live)" if split == PUBLISHED_SPLITS["live"] else "Table 2 (backtest)"
        for t in tables.get(split, []):
            columns = [Column(c["key"], c["label"], c["scale"], c["digits"]) for c in t["columns"]]
            headers = ["agent", *(f"{md_text(label)} {c.label}" if label != "all" else c.label
                                  for label in t["labels"] for c in columns)]
            rows = [[md_text(row["agent"]), *(FAILED_CELL if label in row.get("failed", ()) else
                                              c.cell(row["cells"].get(label)) if row["cells"].get(label) is not None
                                              else "—" for label in t["labels"] for c in columns)]
                    for row in t["rows"]]
            lines += [f"### {title}: {t['workflow']} ({t['env']}, split {md_text(split)})", "", md_table(headers, rows),
                      ""]
    return lines


def debate_record(run: dict[str, Any]) -> dict[str, Any]:
    """A debated agent run as :func:`finenvs.evaluation.debate_runs.run_debate` records a policy: per task its
    outcome, multiplier and debated score as :func:`finenvs.text.debate.debate_verdict` decided them (an unfinished
    task: :func:`~finenvs.text.debate.unfinished_verdict`, a wrong answer kept scoring 0), the mean multiplier
    overall and per FAB++ section, and the outcomes."""
    from collections import Counter

    from finenvs.tasks.common import mean
    from finenvs.text.debate import unfinished_verdict

    rows = []
    for e in run["episodes"]:
        full = e.get("episode") or {}
        debate = full.get("debate")
        if debate:
            task_score = 100.0 * float(debate["debated_score"]) / float(debate["max_score"])
        else:
            debate = {**unfinished_verdict(str(e["status"])).record(), "first_score": None, "final_score": None}
            task_score = 0.0
        rows.append({"task_id": e["label"], "section": full.get("section", (run.get("sections") or ["-"])[0]),
                     **{k: debate.get(k) for k in ("first_score", "final_score", "multiplier", "outcome",
                                                   "debated_score")}, "task_score": task_score})
    by_section: dict[str, list[float]] = {}
    for row in rows:
        by_section.setdefault(str(row["section"]), []).append(float(row["multiplier"]))
    return {"rows": rows, "multiplier": mean([float(r["multiplier"]) for r in rows]),
            "section_multipliers": {k: mean(v) for k, v in by_section.items()},
            "outcomes": dict(Counter(str(r["outcome"]) for r in rows)), "run_dir": run.get("run_dir")}


#: The error of a FAB++ task whose episode the endpoint never answered (the aggregate marks its agent failed).
ENDPOINT_FAILED_TASK = "no reply from the endpoint: "


def fabpp_tasks(runs: list[dict[str, Any]]) -> dict[str, list[tuple[str, str, float | None, str | None]]]:
    """Per agent, its FAB++ tasks ``(section, task id, 0-100 score, error)`` from the families' episode metrics
    (``section`` and ``task_score``); an episode that failed or did not finish scores 0 with its reason."""
    out: dict[str, list[tuple[str, str, float | None, str | None]]] = {}
    for run in runs:
        for e in run["episodes"]:
            full = e.get("episode") or {}
            if full and "section" in full:
                out.setdefault(run["agent"], []).append((full["section"], e["label"], full.get("task_score"), None))
            elif e.get("endpoint_failed"):  # never a score: the agent's aggregate is failed (its note says why)
                out.setdefault(run["agent"], []).append(((run.get("sections") or ["-"])[0], e["label"], None,
                                                         ENDPOINT_FAILED_TASK + str(e.get("reason"))))
            elif e["status"] != "complete":
                section = (run.get("sections") or [None])[0]
                if section is not None:
                    out.setdefault(run["agent"], []).append((section, e["label"], None, e.get("reason")
                                                             or f"episode {e['status']}"))
    return out


__all__ = ["PUBLISHED_BASELINE", "PUBLISHED_SPLITS", "SCRIPTED", "BenchAgent", "load_published", "agents_markdown", "debate_record",
           "fabpp_tasks", "herculean_markdown", "herculean_tables",
           "run_agent", "slug"]
