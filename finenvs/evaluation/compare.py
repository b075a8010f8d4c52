"""``finenvs compare RUN_DIR RUN_DIR [...]``: runs side by side, with bootstrap intervals and paired differences.

A run folder is either kind the project writes:

* a bench run (``finenvs bench``: a folder with ``scorecard.json``): its market baselines (one episode per
  symbol, or per universe), its family sections' baselines (one FAB++ task score per task) and its agents'
  runs (every episode of every family the agents played);
* an agent run (``finenvs llm``/``finenvs harness``: a folder with ``run.json`` and ``trajectories.jsonl``),
  re-scored offline with :func:`finenvs.evaluation.score.score_run` (nothing is written into it).

Each run becomes entries: one (env, split, kind, policy or agent) with its episodes. Runs are lettered A, B, ...
in the order given. An entry is compared with the entry of the same env, split, kind and policy in each later run;
when two agent runs each hold the only entry of an env and split (two agents on the same plan), those are
compared. A group of compared entries is one block of the table; its first entry (usually run A's) is the
reference of its paired differences.

Per entry, every headline column of the family (its task spec's ``columns``) gets:

* the estimate: the family's own run metric over the entry's episodes (:meth:`TaskSpec.metrics_of_run`; for bench
  baseline rows, which record per-episode figures only, the mean over episodes, as the scorecard's means);
* a percentile-bootstrap 95% interval over episodes (:func:`finenvs.scoring.bootstrap.bootstrap_ci`: the
  episodes are resampled and the run metric recomputed; n/a with fewer than 2 episodes).

Where two compared entries played the same episodes (same env, symbol or task id, split and reset seed), the
matched episodes give a paired difference (:func:`finenvs.scoring.bootstrap.paired_difference`): the mean over
matched episodes of (run's value - reference's value), its interval and the run's win rate (share of matched
episodes where its value is higher; for MDD, MSE and error rates lower is better). Episodes that do not match
are never paired: runs with different seeds are compared by their intervals only.

Writes ``compare.md``, ``compare.json`` and ``compare.png`` into the output folder.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from finenvs.scoring.bootstrap import DEFAULT_LEVEL, DEFAULT_N_BOOT, bootstrap_ci, paired_difference
from finenvs.tasks import Column, EpisodeSpec, task_of, tasks
from finenvs.text.markdown import fmt_number, md_table, md_text

#: The column of a family section's baselines (bench runs record one FAB++ task score per task for them).
TASK_SCORE = Column("score", "task score (0-100)")
#: Exit code of ``finenvs compare`` on a folder that is neither kind of run (or fewer than two folders).
EXIT_USAGE = 2
BENCH_FILE = "scorecard.json"
RUN_FILE = "run.json"
TRAJECTORY_FILE = "trajectories.jsonl"

Identity = tuple[str, str, str, str]


@dataclass
class Entry:
    """One (env, split, kind, policy) of one run: its episodes, their identities and how its metrics are computed."""

    run: int
    env: str
    split: str
    kind: str  # "baseline" or "agent"
    policy: str
    columns: tuple[Column, ...]
    identities: list[Identity]
    #: per-episode value of each column (NaN where undefined on that episode)
    values: dict[str, np.ndarray]
    #: the columns' values over a list of episode indices (the family's run metrics)
    stat: Callable[[list[int]], dict[str, float]]
    cells: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def n(self) -> int:
        return len(self.identities)

    @property
    def key(self) -> tuple[str, str, str, str]:
        return self.env, self.split, self.kind, self.policy


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return math.nan
    return float(value)


def _identity(spec: EpisodeSpec, split: str) -> Identity:
    """(env, symbol / universe / task id / item index, split, seed) of a planned episode."""
    options = spec.options or {}
    what = (spec.env_kwargs.get("symbol") or options.get("symbol") or options.get("task_id")
            or options.get("index"))
    if what is None and spec.env_kwargs.get("symbols"):
        what = "/".join(spec.env_kwargs["symbols"])
    return (spec.env_id, "?" if what is None else str(what), str(spec.env_kwargs.get("split") or split),
            str(spec.seed))


def _run_stat(metrics_of_run: Callable[[list[dict[str, Any]]], dict[str, Any]], episodes: list[dict[str, Any]],
              columns: tuple[Column, ...]) -> Callable[[list[int]], dict[str, float]]:
    def stat(idx: list[int]) -> dict[str, float]:
        out = metrics_of_run([episodes[i] for i in idx])
        return {c.key: _number(out.get(c.key)) for c in columns}

    return stat


def _mean_stat(values: dict[str, np.ndarray]) -> Callable[[list[int]], dict[str, float]]:
    def stat(idx: list[int]) -> dict[str, float]:
        out = {}
        for key, v in values.items():
            picked = v[np.asarray(idx, dtype=int)]
            picked = picked[np.isfinite(picked)]
            out[key] = float(picked.mean()) if picked.size else math.nan
        return out

    return stat


def _family_entry(run: int, env: str, split: str, kind: str, policy: str, identities: list[Identity],
                  episodes: list[dict[str, Any]]) -> Entry:
    """An entry whose episodes are the family's episode metrics (an agent run's)."""
    task = task_of(env)
    per = [task.metrics_of_run([e]) for e in episodes]
    values = {c.key: np.array([_number(p.get(c.key)) for p in per]) for c in task.columns}
    return Entry(run, env, split, kind, policy, task.columns, identities, values,
                 _run_stat(task.metrics_of_run, episodes, task.columns))


# ----------------------------------------------------------------------------- reading run folders
def run_kind(path: Path | str) -> str:
    """``"bench"`` (``scorecard.json``) or ``"llm"`` (``run.json`` and ``trajectories.jsonl``).

    Raises:
        ValueError: The folder is neither (names what it looked for).
    """
    path = Path(path)
    if not path.is_dir():
        raise ValueError(f"{path}: no such folder")
    if (path / BENCH_FILE).is_file():
        return "bench"
    if (path / RUN_FILE).is_file() and (path / TRAJECTORY_FILE).is_file():
        return "llm"
    raise ValueError(f"{path}: neither a bench run (no {BENCH_FILE}) nor an agent run ({RUN_FILE} and "
                     f"{TRAJECTORY_FILE}); give folders written by `finenvs bench` or `finenvs llm`")


def _plan_identities(run_dir: Path, default_split: str) -> dict[int, Identity]:
    """Episode index -> identity, from a run folder's run.json plan (empty when it cannot be read)."""
    try:
        meta = json.loads((run_dir / RUN_FILE).read_text(encoding="utf-8"))
        split = str((meta.get("config") or {}).get("split") or default_split)
        return {int(e["index"]): _identity(EpisodeSpec.from_dict(e), split) for e in meta.get("episodes") or []}
    except (OSError, ValueError, KeyError, TypeError):
        return {}


def _bench_entries(run: int, path: Path) -> tuple[dict[str, Any], list[Entry]]:
    card = json.loads((path / BENCH_FILE).read_text(encoding="utf-8"))
    config = card.get("config") or {}
    split, seed = str(config.get("split", "eval")), str(config.get("seed", 0))
    entries: list[Entry] = []
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in card.get("rows") or []:
        if row.get("efficiency") is None:  # an agent's episodes come from its run below
            groups.setdefault((row["env"], row["policy"]), []).append(row)
    for (env, policy), rows in groups.items():
        columns = task_of(env).columns
        per = []
        for row in rows:
            std, her = row.get("standard") or {}, row.get("herculean") or {}
            quality = (row.get("quality") or {}).get("score") if isinstance(row.get("quality"), dict) else None
            per.append({c.key: _number(quality if c.key == "quality" else her.get(c.key[2:])
                                       if c.key.startswith("h_") else std.get(c.key)) for c in columns})
        values = {c.key: np.array([p[c.key] for p in per]) for c in columns}
        entries.append(Entry(run, env, split, "baseline", policy, columns,
                             [(env, str(r["symbol"]), split, seed) for r in rows], values, _mean_stat(values)))
    envs_of = {t.family: t.env_id for t in tasks()}
    for family, section in (card.get("sections") or {}).items():
        if family not in envs_of or not isinstance(section, dict):
            continue
        env = envs_of[family]
        for policy, items in (section.get("tasks") or {}).items():
            values = {TASK_SCORE.key: np.array([_number(t.get("score")) for t in items])}
            entries.append(Entry(run, env, split, "baseline", policy, (TASK_SCORE,),
                                 [(env, str(t.get("task_id")), split, seed) for t in items], values,
                                 _mean_stat(values)))
    for agent_run in card.get("agents") or []:
        done = [e for e in agent_run.get("episodes") or [] if e.get("status") == "complete" and e.get("episode")]
        if not done:
            continue
        run_split = str(agent_run.get("split", split))
        plan = _plan_identities(Path(agent_run.get("run_dir") or path / "missing"), run_split)
        identities = [plan.get(int(e["index"]), (agent_run["env"], str(e.get("label")), run_split, seed))
                      for e in done]
        entries.append(_family_entry(run, agent_run["env"], run_split, "agent", str(agent_run["agent"]), identities,
                                     [e["episode"] for e in done]))
    info = {"path": str(path), "kind": "bench", "name": str(config.get("run") or path.name), "split": split,
            "seed": config.get("seed")}
    return info, entries


def _llm_entries(run: int, path: Path) -> tuple[dict[str, Any], list[Entry]]:
    from finenvs.evaluation.score import confinement_line, score_run

    score = score_run(path, write=False)
    meta = score.meta
    config = meta.get("config")
    if not isinstance(config, dict):
        config = {}
    split = str(config.get("split") or "eval")
    agent = meta.get("agent") or {}
    name = str(agent.get("model") or agent.get("name") or agent.get("kind") or "agent")
    plan = {int(e["index"]): _identity(EpisodeSpec.from_dict(e), split) for e in meta.get("episodes") or []}
    done = [e for e in score.episodes if e.status == "complete" and e.metrics is not None]
    info = {"path": str(path), "kind": "llm", "name": str(meta.get("run") or path.name), "split": split,
            "agent": name, "status": score.status, "signature": score.signature,
            "confinement": confinement_line(meta)}
    if score.task is None or not done:
        return info, []
    identities = [plan.get(e.index, (score.task.env_id, e.label, split, "?")) for e in done]
    metrics = [e.metrics for e in done if e.metrics is not None]
    return info, [_family_entry(run, score.task.env_id, split, "agent", name, identities, metrics)]


def load_run(path: Path | str, run: int = 0) -> tuple[dict[str, Any], list[Entry]]:
    """A run folder's description and its entries (see the module docstring).

    Raises:
        ValueError: The folder is neither a bench run nor an agent run.
    """
    path = Path(path)
    return _bench_entries(run, path) if run_kind(path) == "bench" else _llm_entries(run, path)


# ----------------------------------------------------------------------------- statistics
def _cells(entry: Entry, n_boot: int, level: float, seed: int) -> dict[str, dict[str, Any]]:
    """Estimate and bootstrap interval of every column (one run-metric computation per resample)."""
    cache: dict[bytes, dict[str, float]] = {}

    def column_stat(key: str) -> Callable[[np.ndarray], float]:
        def stat(sample: np.ndarray) -> float:
            idx = np.asarray(sample, dtype=int)
            token = idx.tobytes()
            if token not in cache:  # the same seed draws the same resamples for every column
                cache[token] = entry.stat(idx.tolist())
            return cache[token][key]

        return stat

    index = np.arange(entry.n, dtype=float)
    whole = entry.stat(list(range(entry.n))) if entry.n else {}
    out = {}
    for column in entry.columns:
        ci = bootstrap_ci(index, column_stat(column.key), n_boot=n_boot, level=level, seed=seed)
        out[column.key] = {"estimate": whole.get(column.key, math.nan), "ci": [ci.lo, ci.hi], "n": entry.n}
    return out


def _paired(entry: Entry, reference: Entry, n_boot: int, level: float, seed: int) -> dict[str, Any] | None:
    """Paired differences (entry - reference) over the episodes both played; None when none match."""
    mine = {ident: i for i, ident in enumerate(entry.identities)}
    matched = [(mine[ident], j) for j, ident in enumerate(reference.identities) if ident in mine]
    if not matched:
        return None
    a_idx = np.array([i for i, _ in matched])
    b_idx = np.array([j for _, j in matched])
    out: dict[str, Any] = {"n_matched": len(matched), "columns": {}}
    for column in entry.columns:
        if column.key not in reference.values:
            continue
        diff = paired_difference(entry.values[column.key][a_idx], reference.values[column.key][b_idx],
                                 n_boot=n_boot, level=level, seed=seed)
        out["columns"][column.key] = diff.record()
    return out


def _groups(entries: list[Entry], runs: int) -> list[list[Entry]]:
    """Compared entries, grouped (see the module docstring): in run order, each entry not yet placed heads a group
    that takes, from every later run, the entry of the same key, else (two agent runs on one env and split) the
    only entry of that env and split."""
    by_run: list[list[Entry]] = [[e for e in entries if e.run == r] for r in range(runs)]
    groups: list[list[Entry]] = []
    placed: set[int] = set()

    def only(run_entries: list[Entry], env: str, split: str) -> Entry | None:
        same = [e for e in run_entries if e.env == env and e.split == split]
        return same[0] if len(same) == 1 and same[0].kind == "agent" else None

    for r0 in range(runs):
        for head in by_run[r0]:
            if id(head) in placed:
                continue
            group = [head]
            placed.add(id(head))
            for r in range(r0 + 1, runs):
                match = next((e for e in by_run[r] if e.key == head.key and id(e) not in placed), None)
                if match is None and only(by_run[r0], head.env, head.split) is head:
                    match = only(by_run[r], head.env, head.split)
                if match is not None and id(match) not in placed:
                    group.append(match)
                    placed.add(id(match))
            groups.append(group)
    return groups


def _letter(run: int) -> str:
    return chr(ord("A") + run) if run < 26 else f"R{run + 1}"


def compare_runs(paths: Sequence[Path | str], *, n_boot: int = DEFAULT_N_BOOT, level: float = DEFAULT_LEVEL,
                 seed: int = 0) -> dict[str, Any]:
    """Two or more run folders side by side (see the module docstring).

    Args:
        paths: Bench run folders and/or agent run folders; the first is the reference (run A).
        n_boot: Bootstrap resamples of every interval.
        level: Coverage of the intervals.
        seed: Seed of the bootstrap (the same seed gives the same intervals).

    Returns:
        ``{"runs": [{"run", "path", "kind", "name", ...}], "level", "n_boot", "seed", "groups": [{"env", "split",
        "kind", "policy", "columns": [{"key", "label", "scale"}], "entries": [{"run", "policy", "n", "cells":
        {key: {"estimate", "ci", "n"}}, "paired": None | {"reference", "n_matched", "columns": {key:
        {"estimate", "ci", "win_rate", "tie_rate", "n", "dropped"}}}}]}]}``. Values are the metrics' own units
        (a column's ``scale`` turns them into the table's: 100 for percentages).

    Raises:
        ValueError: Fewer than two folders, or a folder that is neither kind of run.
    """
    paths = [Path(p) for p in paths]
    if len(paths) < 2:
        raise ValueError(f"compare needs two or more run folders, got {len(paths)}")
    for path in paths:
        run_kind(path)  # every folder is checked before any work
    runs, entries = [], []
    for r, path in enumerate(paths):
        info, found = load_run(path, r)
        runs.append({"run": _letter(r), **info, "entries": len(found)})
        entries += found
    for entry in entries:
        entry.cells = _cells(entry, n_boot, level, seed)
    groups = []
    for group in _groups(entries, len(paths)):
        head = group[0]
        rows = []
        for entry in group:
            paired = None
            if entry is not head:
                paired = _paired(entry, head, n_boot, level, seed)
                if paired is not None:
                    paired = {"reference": _letter(head.run), **paired}
            rows.append({"run": _letter(entry.run), "policy": entry.policy, "n": entry.n, "cells": entry.cells,
                         "paired": paired})
        groups.append({"env": head.env, "split": head.split, "kind": head.kind, "policy": head.policy,
                       "columns": [{"key": c.key, "label": c.label, "scale": c.scale, "digits": c.digits}
                                   for c in head.columns],
                       "entries": rows})
    return {"runs": runs, "level": level, "n_boot": n_boot, "seed": seed, "groups": groups}


# ----------------------------------------------------------------------------- output
def _num(value: float, column: dict[str, Any], sign: bool = False) -> str:
    return fmt_number(value, column["scale"], column["digits"], sign=sign)


def _interval(ci: Sequence[float], column: dict[str, Any]) -> str:
    lo, hi = ci
    if lo is None or hi is None or not (math.isfinite(lo) and math.isfinite(hi)):
        return ""
    return f" [{_num(lo, column)}, {_num(hi, column)}]"


def _wins(diff: dict[str, Any]) -> str:
    win, tie = diff["win_rate"], diff["tie_rate"]
    if win is None or not math.isfinite(win):
        return ""
    return f", win {100 * win:.0f}%" + (f" (ties {100 * tie:.0f}%)" if tie else "")


def compare_markdown(result: dict[str, Any]) -> str:
    """The comparison as Markdown: the runs, then one table per compared group."""
    pct = round(100 * result["level"])
    lines = ["# finenvs compare", "",
             *(f"- **{md_text(r['run'])}** ({r['kind']}{', agent ' + md_text(r['agent']) if r.get('agent') else ''}"
               f"{', ' + r['status'] + ', ' + r['signature'] if r.get('signature') else ''}): "
               f"{md_text(r['path'], 1_000)}" + (f"; {r['confinement']}" if r.get("confinement") else "")
               for r in result["runs"]), "",
             f"Cells: the estimate and its {pct}% percentile-bootstrap interval over episodes ({result['n_boot']} "
             f"resamples, seed {result['seed']}; none with fewer than 2 episodes). Rows `X − A`: the paired "
             "difference over the episodes both played (same env, symbol or task, split and seed), its interval "
             "and X's win rate (share of matched episodes where X's value is higher; for MDD, MSE and error rates "
             "lower is better). Runs whose episodes do not match are not paired.", ""]
    for group in result["groups"]:
        columns = group["columns"]
        policies = list(dict.fromkeys(e["policy"] for e in group["entries"]))
        title = md_text(group["policy"]) if len(policies) == 1 else " vs ".join(md_text(p) for p in policies)
        lines += [f"## {group['env']} — {title} ({group['kind']}, split {md_text(group['split'])})", ""]
        rows = []
        for e in group["entries"]:
            rows.append([md_text(e["run"]), md_text(e["policy"]), str(e["n"]),
                         *(_num(e["cells"][c["key"]]["estimate"], c) + _interval(e["cells"][c["key"]]["ci"], c)
                           for c in columns)])
        for e in group["entries"]:
            p = e["paired"]
            if p is None:
                continue
            cells = []
            for c in columns:
                d = p["columns"].get(c["key"])
                cells.append("n/a" if d is None else _num(d["estimate"], c, sign=True) + _interval(d["ci"], c)
                             + _wins(d))
            rows.append([f"{md_text(e['run'])} − {md_text(p['reference'])}", "paired", str(p["n_matched"]), *cells])
        unpaired = [e["run"] for e in group["entries"][1:] if e["paired"] is None]
        lines += [md_table(["run", "policy", "n", *(c["label"] for c in columns)], rows), ""]
        if unpaired:
            lines += [f"No paired difference for {', '.join(md_text(u) for u in unpaired)}: no episode matches run "
                      f"{md_text(group['entries'][0]['run'])}'s (env, symbol or task, split, seed).", ""]
    return "\n".join(lines)


def compare_plot(result: dict[str, Any], out_dir: Path | str) -> Path:
    """``compare.png``: per group, each run's main score (the family's first column) with its interval."""
    from finenvs.evaluation.scorecard_html import figure, save_png

    groups = [g for g in result["groups"] if len(g["entries"]) > 1] or result["groups"]
    groups = groups[:24]
    fig = figure(9, 0.9 + sum(0.28 * len(g["entries"]) + 0.5 for g in groups))
    axes = np.atleast_1d(fig.subplots(max(1, len(groups)), 1, gridspec_kw={
        "height_ratios": [len(g["entries"]) + 1 for g in groups] or [1]}))
    for ax, group in zip(axes, groups, strict=False):
        column = group["columns"][0]
        labels, est, lo, hi = [], [], [], []
        for e in group["entries"]:
            cell = e["cells"][column["key"]]
            labels.append(f"{e['run']}: {e['policy']}")
            est.append(cell["estimate"] * column["scale"])
            lo.append(cell["ci"][0] * column["scale"] if cell["ci"][0] is not None else math.nan)
            hi.append(cell["ci"][1] * column["scale"] if cell["ci"][1] is not None else math.nan)
        y = np.arange(len(labels))[::-1]
        est_a, lo_a, hi_a = (np.asarray(v, dtype=float) for v in (est, lo, hi))
        err = np.vstack([np.where(np.isfinite(lo_a), est_a - lo_a, 0.0),
                         np.where(np.isfinite(hi_a), hi_a - est_a, 0.0)])
        ax.errorbar(est_a, y, xerr=np.clip(err, 0.0, None), fmt="o", capsize=3, color="#0969da")
        ax.set_yticks(y, labels, fontsize=8)
        ax.set_ylim(-0.7, len(labels) - 0.3)
        ax.set_title(f"{group['env']} ({group['split']}): {column['label']}", fontsize=9, loc="left")
        ax.grid(axis="x", lw=0.4, alpha=0.5)
    fig.suptitle(f"Estimates with {round(100 * result['level'])}% bootstrap intervals over episodes", fontsize=10)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    return save_png(fig, out_dir / "compare.png")


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, (np.floating, np.integer)):
        return _jsonable(obj.item())
    return obj


def cli_compare(paths: Sequence[Path | str], out: Path | str | None = None, as_json: bool = False) -> int:
    """``finenvs compare``: print the table (or the JSON) and write compare.md/.json/.png into ``out``.

    Returns:
        0; 2 (``finenvs: error: ...`` on stderr) for fewer than two folders or one that is neither kind of run.
    """
    try:
        result = compare_runs(paths)
    except (ValueError, FileNotFoundError) as exc:
        print(f"finenvs: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    folder = Path(out) if out is not None else Path("finenvs-compare") / _dt.datetime.now(
        _dt.timezone.utc).strftime("%Y%m%d-%H%M%S")
    folder.mkdir(parents=True, exist_ok=True)
    record = _jsonable(result)
    markdown = compare_markdown(result)
    (folder / "compare.json").write_text(json.dumps(record, indent=2, allow_nan=False) + "\n", encoding="utf-8")
    (folder / "compare.md").write_text(markdown + "\n", encoding="utf-8")
    files = [folder / "compare.md", folder / "compare.json"]
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        note = "compare.png not written: matplotlib is not installed (pip install 'finenvs[plot]')"
    else:
        files.append(compare_plot(result, folder))
        note = ""
    print(json.dumps(record, indent=2, allow_nan=False) if as_json else markdown)
    if not as_json:
        print(f"\nwritten: {', '.join(str(f) for f in files)}" + (f"\n{note}" if note else ""))
    return 0


__all__ = ["Entry", "cli_compare", "compare_markdown", "compare_plot", "compare_runs", "load_run", "run_kind"]
