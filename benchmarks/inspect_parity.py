"""``inspect eval`` against ``finenvs llm`` on the same episodes (``benchmarks/INSPECT_PARITY_RESULTS.md`` holds the
recorded table).

    python benchmarks/inspect_parity.py [--out DIR] [--limit N] [--market-limit N] [--only NAME ...]

For every family task (``finenvs/<family>``) and every named paper task (``finenvs/herculean_*``,
``finenvs/fabpp_*``), and a few variants (FAB++'s debate round, a FAB++ split of its own, HERCULEAN's live regime
on a window the data covers, a closed-book run), two commands run as subprocesses, each timed end to end (start-up included):

* ``inspect eval finenvs/<task> --model finenvs-scripted/<family> -T limit=N ...`` (the offline model that answers
  as the family's scripted agent), its exit code and its log's metrics;
* ``finenvs llm --env ID --limit N ...`` with the flags that ask for the same episodes and rules (the paper task's
  symbols, env arguments, ``--herculean-rule``, ``--debate``, ``--live``), its exit code and its run folder's
  metrics as ``finenvs score`` re-computes them (:func:`finenvs.evaluation.score.score_run`).

"equal" means both report the same metric keys and every value agrees to 1e-12 (relative). Market families play
``--market-limit`` episodes (tens of decisions each), the others ``--limit``.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BIN = Path(sys.executable).parent
NOTE = ("Reading the table: the scripted agents answer FinQA-v0's eval questions, FinOptions-v0's tasks and "
        "FinAudit-v0's instances right (100, ACC 1), so those rows check the plumbing at the ceiling; the market "
        "rows, the closed-book rows (`tools=none`) and FinQA-v0's public questions (`split=fab_public`, 0 closed "
        "book) check values off it. The live rows play HERCULEAN's live regime on its live window, which the "
        "shipped data covers, so the episodes finish; on an open window (`live=true` alone) both paths leave the "
        "episode waiting at the newest bar, unscored "
        "(`tests/test_inspect.py::test_live_regime_waits_at_the_newest_bar`).")


@dataclass
class Case:
    """One row: an Inspect task with its ``-T`` arguments, and the ``finenvs llm`` flags of the same episodes."""

    name: str
    task: str
    family: str
    env_id: str
    market: bool
    task_args: dict[str, str] = field(default_factory=dict)
    llm_flags: list[str] = field(default_factory=list)


def cases() -> list[Case]:
    """Every family task and every paper task, each with its ``finenvs llm`` twin, read from the specs."""
    import finenvs.inspect as fi
    from finenvs.tasks import tasks

    out = []
    for t in tasks():
        out.append(Case(t.family, t.family, t.family, t.env_id, t.bench.market))
        if t.bench.closed_book:  # closed book: the scripted agent off its ceiling (FinOptions-v0)
            out.append(Case(f"{t.family} tools=none", t.family, t.family, t.env_id, t.bench.market,
                            {"tools": "none"}, ["--env-kwargs", json.dumps({"tools": "none"})]))
    for name, paper in fi.PAPER_TASKS.items():
        spec = fi._spec(paper.family)
        flags = ["--split", paper.splits[0]]
        if paper.symbols:
            flags += ["--symbols", *paper.symbols]
        if paper.env_kwargs:
            flags += ["--env-kwargs", json.dumps(dict(paper.env_kwargs))]
        if paper.failure_rule == fi.HERCULEAN_FAILURE_RULE:
            flags.append("--herculean-rule")
        out.append(Case(name, name, paper.family, spec.env_id, spec.bench.market, {}, flags))
        if paper.debate:
            out.append(Case(f"{name} debate=true", name, paper.family, spec.env_id, spec.bench.market,
                            {"debate": "true"}, [*flags, "--debate"]))
        for split in paper.splits[1:]:  # a FAB++ section's further split (FinQA-v0's fab_public)
            out.append(Case(f"{name} split={split}", name, paper.family, spec.env_id, spec.bench.market,
                            {"split": split}, [*(f if f != paper.splits[0] else split for f in flags)]))
        if paper.suite == "herculean" and "end" in spec.run_options and spec.bench.live:
            # HERCULEAN's live regime on its live window, which the shipped data covers (so it finishes)
            end = {"end": "2026-05-01"}
            kwargs = {**paper.env_kwargs, **end}
            live_flags = [f for f in flags if f not in ("--env-kwargs", json.dumps(dict(paper.env_kwargs)))]
            out.append(Case(f"{name} live=true end=2026-05-01", name, paper.family, spec.env_id, True,
                            {"live": "true", "env_kwargs": json.dumps(end)},
                            [*live_flags, "--live", "--env-kwargs", json.dumps(kwargs)]))
    return out


def _run(cmd: list[str]) -> tuple[int, float, float, str]:
    """Exit code, wall seconds, CPU seconds (user + system of the command and its children) and its output's tail."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return proc.returncode, wall, cpu, (proc.stderr or proc.stdout)[-400:]


def inspect_side(case: Case, limit: int, logs: Path) -> dict[str, Any]:
    from inspect_ai.log import list_eval_logs, read_eval_log

    folder = logs / case.name.replace(" ", "_").replace("=", "-")
    cmd = [str(BIN / "inspect"), "eval", f"finenvs/{case.task}", "--model", f"finenvs-scripted/{case.family}",
           "-T", f"limit={limit}", *(a for k, v in case.task_args.items() for a in ("-T", f"{k}={v}")),
           "--log-dir", str(folder), "--display", "none"]
    code, seconds, cpu, tail = _run(cmd)
    metrics: dict[str, float] = {}
    samples = decisions = 0
    found = list_eval_logs(str(folder))
    if found:
        log = read_eval_log(found[0])
        samples = len(log.samples or [])
        decisions = sum(int((s.metadata.get("finenvs_episode") or {}).get("decisions") or 0) for s in log.samples or [])
        if log.results and log.results.scores:
            metrics = {k: float(m.value) for k, m in log.results.scores[0].metrics.items() if k != "family_metrics"}
    return {"cmd": cmd, "code": code, "seconds": seconds, "cpu": cpu, "metrics": metrics, "episodes": samples,
            "decisions": decisions,
            "tail": tail}


def llm_side(case: Case, limit: int, runs: Path) -> dict[str, Any]:
    import finenvs.inspect as fi
    from finenvs.evaluation.score import score_run

    name = case.name.replace(" ", "_").replace("=", "-")
    cmd = [str(BIN / "finenvs"), "llm", "--env", case.env_id, "--limit", str(limit), *case.llm_flags,
           "--quiet", "--out", str(runs), "--name", name]
    code, seconds, cpu, tail = _run(cmd)
    metrics: dict[str, float] = {}
    episodes = 0
    if (runs / name / "run.json").is_file():
        checked = score_run(runs / name, write=False)
        scored = [e.metrics for e in checked.episodes if e.metrics is not None]
        episodes = len(checked.episodes)
        spec = fi._spec(case.family)
        paper = fi.PAPER_TASKS.get(case.task)
        keys = fi.metric_keys(spec, paper.columns if paper else None)
        run = spec.metrics_of_run(scored) if scored else {}
        metrics = {k: float(run[k]) for k in keys if isinstance(run.get(k), (int, float)) and math.isfinite(run[k])}
    return {"cmd": cmd, "code": code, "seconds": seconds, "cpu": cpu, "metrics": metrics, "episodes": episodes,
            "tail": tail}


def equal(a: dict[str, float], b: dict[str, float]) -> bool:
    return bool(a) and a.keys() == b.keys() and all(math.isclose(a[k], b[k], rel_tol=1e-12, abs_tol=1e-12) for k in a)


def _fmt(metrics: dict[str, float]) -> str:
    return ", ".join(f"{k} {v:.4g}" for k, v in metrics.items()) or "—"


def markdown(rows: list[dict[str, Any]], args: argparse.Namespace) -> str:
    lines = ["# Inspect AI parity: `inspect eval` against `finenvs llm` on the same episodes", "",
             f"Recorded with `python benchmarks/inspect_parity.py --limit {args.limit} --market-limit "
             f"{args.market_limit}` on {platform.machine()}, Python {platform.python_version()}, "
             f"{time.strftime('%Y-%m-%d', time.gmtime())}. Both sides ran as subprocesses, one after the other, timed "
             "end to end (start-up, log or run-folder writing included); wall times are from a 2-core machine shared "
             "with other jobs, so the CPU seconds (user + system of the command and its children) compare the two "
             "better. The model is "
             "`finenvs-scripted/<family>` (the family's scripted agent, offline); `finenvs llm` plays the same agent "
             "without `--model`. \"equal\": the same metric keys, every value within 1e-12 (relative).", "",
             "| task | -T | episodes | decisions | inspect exit | inspect wall s (CPU s) | llm exit | llm wall s (CPU s) "
             "| equal | metrics (inspect) |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        targs = " ".join(f"{k}={v}" for k, v in r["case"].task_args.items()) or "—"
        ins, llm = r["inspect"], r["llm"]
        lines.append(f"| `finenvs/{r['case'].task}` | {targs} | {ins['episodes']} | {ins['decisions']} | {ins['code']} | "
                     f"{ins['seconds']:.1f} ({ins['cpu']:.1f}) | {llm['code']} | {llm['seconds']:.1f} ({llm['cpu']:.1f}) | "
                     f"{'yes' if r['equal'] else 'NO'} | {_fmt(ins['metrics'])} |")
    n = len(rows)
    lines += ["", f"{sum(r['equal'] for r in rows)} of {n} rows equal; {sum(r['inspect']['code'] == 0 for r in rows)} "
              f"of {n} `inspect eval` runs exited 0. Total wall time: inspect {sum(r['inspect']['seconds'] for r in rows):.0f} s, "
              f"llm {sum(r['llm']['seconds'] for r in rows):.0f} s; CPU time: inspect "
              f"{sum(r['inspect']['cpu'] for r in rows):.0f} s, llm {sum(r['llm']['cpu'] for r in rows):.0f} s.", "",
              NOTE, ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, help="folder for the logs and run folders (default: a temporary one)")
    parser.add_argument("--limit", type=int, default=3, help="episodes of a non-market family (default 3)")
    parser.add_argument("--market-limit", type=int, default=1, help="episodes of a market family (default 1)")
    parser.add_argument("--only", nargs="*", help="rows whose name starts with one of these")
    parser.add_argument("--markdown", type=Path, help="also write the table to this file")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        root = args.out or Path(tmp)
        rows = []
        for case in cases():
            if args.only and not any(case.name.startswith(o) for o in args.only):
                continue
            limit = args.market_limit if case.market else args.limit
            ins = inspect_side(case, limit, root / "logs")
            llm = llm_side(case, limit, root / "runs")
            row = {"case": case, "inspect": ins, "llm": llm, "equal": equal(ins["metrics"], llm["metrics"])}
            rows.append(row)
            print(f"{case.name}: inspect {ins['code']} {ins['seconds']:.1f}s, llm {llm['code']} {llm['seconds']:.1f}s, "
                  f"equal {row['equal']}", flush=True)
            if not row["equal"]:
                print(f"  inspect {ins['metrics']}\n  llm     {llm['metrics']}\n  {ins['tail']}\n  {llm['tail']}")
        text = markdown(rows, args)
        print(text)
        if args.markdown:
            args.markdown.write_text(text)
    return 0 if rows and all(r["equal"] and r["inspect"]["code"] == 0 for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
