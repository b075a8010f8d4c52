"""``finenvs score RUN_DIR``: re-score an agent run offline from its trajectories, for any task family.

For every episode of the run the recorded env actions are replayed into a fresh
env (no agent, no tools, no endpoint); the replayed rewards and the family's
episode metrics (its task spec's ``episode_metrics``) must equal what the run
recorded live, exactly. Each reply is also parsed again with the env's current
text protocol, to catch a parser that changed since the run. Beside the task
score the report gives the run's efficiency, each as its own number (never
folded into one ratio): tokens, dollar cost, tool calls per decision,
look-ahead attempts, format errors (invalid actions), endpoint errors and
retries, and time per decision. Token counts and costs that are unknown (an
MCP client, an endpoint that reports no usage) are n/a, never 0.

Writes ``score.json`` and ``score.md`` into the run folder.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from finenvs.evaluation.session import (
    EnvPool,
    EpisodeTotals,
    ReplayMismatch,
    RunFiles,
    differences,
    jsonable,
    read_trajectories,
    replay_episode,
    same_number,
)
from finenvs.tasks import EpisodeSpec, TaskSpec, task_of

#: Invalid reasons of decisions that produced no reply to parse again.
_NO_REPLY = ("endpoint error", "decision timed out", "no decision")


@dataclass
class EpisodeScore:
    """One episode, re-scored."""

    index: int
    label: str
    status: str
    steps: int
    metrics: dict[str, Any] | None = None
    totals: EpisodeTotals = field(default_factory=EpisodeTotals)
    look_ahead_attempts: int = 0
    reproduced: bool | None = None
    mismatches: list[str] = field(default_factory=list)
    reparse_mismatches: int = 0
    reason: str | None = None


@dataclass
class RunScore:
    """A run, re-scored."""

    run_dir: Path
    meta: dict[str, Any]
    task: TaskSpec | None
    episodes: list[EpisodeScore]
    dropped_partial_line: bool = False

    @property
    def reproduced(self) -> bool:
        """Every finished episode replays to exactly its recorded rewards and metrics."""
        done = [e for e in self.episodes if e.status in ("complete", "failed")]
        return bool(done) and all(e.reproduced for e in done)

    def efficiency(self) -> dict[str, Any]:
        """Run totals and per-decision figures (tokens and cost None when any is unknown)."""
        totals = EpisodeTotals()
        for e in self.episodes:
            totals.merge(e.totals)
        n = totals.decisions

        def per(x: float | None) -> float | None:
            return None if x is None else (x / n if n else math.nan)

        return {
            **asdict(totals),
            "look_ahead_attempts": sum(e.look_ahead_attempts for e in self.episodes),
            "tokens": totals.tokens,
            "tool_calls_per_decision": per(totals.tool_calls),
            "tokens_per_decision": per(totals.tokens),
            "cost_usd_per_decision": per(totals.cost_usd),
            "seconds_per_decision": per(totals.seconds),
            "format_error_rate": per(totals.format_errors),
        }

    def run_metrics(self) -> dict[str, Any] | None:
        """The family's run metrics over the complete episodes (None when none completed)."""
        done = [e.metrics for e in self.episodes if e.status == "complete" and e.metrics is not None]
        if self.task is None or not done:
            return None
        return self.task.metrics_of_run(done)

    def to_json(self) -> dict[str, Any]:
        return jsonable({
            "run": str(self.run_dir),
            "env": self.task.env_id if self.task else None,
            "family": self.task.family if self.task else None,
            "agent": self.meta.get("agent"),
            "reproduced": self.reproduced,
            "metrics": self.run_metrics(),
            "failed_episodes": sum(e.status == "failed" for e in self.episodes),
            "efficiency": self.efficiency(),
            "episodes": [
                {**{k: v for k, v in asdict(e).items() if k != "totals"}, "totals": asdict(e.totals)}
                for e in self.episodes
            ],
            "dropped_partial_line": self.dropped_partial_line,
        })


def _reparse(protocol: Any, step: dict[str, Any]) -> tuple[str, bool] | None:
    """The decision a step's final reply means under the current protocol (None if not derivable)."""
    arguments = step.get("commit_arguments")
    if arguments is not None:
        parsed = protocol.parse_commit(arguments)
        return parsed.name, parsed.valid
    messages = step.get("messages") or []
    if not messages or (step.get("invalid") or "").startswith(_NO_REPLY):
        return None
    last = messages[-1]
    if last.get("role") != "assistant" or last.get("tool_calls"):
        return None
    parsed = protocol.parse_text(last.get("content") if last.get("content") is not None else "")
    return parsed.name, parsed.valid


def _protocol(spec: EpisodeSpec, envs: dict[str, Any]) -> Any:
    """The text protocol of an episode's env (one env per env arguments, reused by the replays)."""
    import gymnasium as gym

    key = EnvPool._key(spec)
    if key not in envs:
        task = task_of(spec.env_id)
        envs[key] = gym.make(task.env_id, **{**task.text_kwargs, **spec.env_kwargs})
    return envs[key].unwrapped.text_protocol


def _score_episode(spec: EpisodeSpec, steps: list[dict[str, Any]], final: dict[str, Any] | None,
                   envs: dict[str, Any]) -> EpisodeScore:
    totals = EpisodeTotals()
    for step in steps:
        totals.add_step(step)
    label = (final or {}).get("label") or (steps[0].get("symbol") if steps else "") or spec.label()
    status = (final or {}).get("status") or "incomplete"
    score = EpisodeScore(spec.index, str(label), status, len(steps), totals=totals,
                         look_ahead_attempts=totals.look_ahead_attempts, reason=(final or {}).get("reason"))
    protocol = _protocol(spec, envs)
    for step in steps:
        again = _reparse(protocol, step)
        recorded = (step.get("reply_action", step["action"]), step.get("reply_valid", step.get("invalid") is None))
        if again is not None and again != recorded:
            score.reparse_mismatches += 1
    if final is None:
        return score
    score.look_ahead_attempts = int(final.get("look_ahead_attempts", totals.look_ahead_attempts))
    if [s.get("step") for s in steps] != list(range(len(steps))):
        score.mismatches.append(f"recorded steps {[s.get('step') for s in steps][:10]} are not 0..{len(steps) - 1}")
    if int(final.get("steps", -1)) != len(steps):
        score.mismatches.append(f"the episode record says {final.get('steps')} steps; {len(steps)} are recorded")
    try:
        rewards, metrics, _ = replay_episode(spec, [s.get("env_action") for s in steps],
                                             complete=status == "complete", envs=envs)
    except ReplayMismatch as exc:
        score.reproduced = False
        score.mismatches.append(str(exc))
        return score
    for k, (r, step) in enumerate(zip(rewards, steps, strict=True)):
        if not same_number(r, step.get("reward")):
            score.mismatches.append(f"step {k}: reward {r!r} replayed, {step.get('reward')!r} recorded")
    if status == "complete":
        score.metrics = metrics
        score.mismatches += [f"metrics {d}" for d in differences(metrics, final.get("metrics"))][:20]
    elif final.get("metrics") is not None:
        score.mismatches.append("a failed episode records metrics")
    score.reproduced = not score.mismatches
    return score


def score_run(run_dir: Path | str, *, write: bool = True) -> RunScore:
    """Re-score a run folder (see the module docstring).

    Raises:
        FileNotFoundError: Not a run folder.
        ValueError: The trajectories are corrupt before their last line, or name an unknown env.
    """
    files = RunFiles(Path(run_dir))
    if not files.run.is_file():
        raise FileNotFoundError(f"{files.root}: no run.json; not a finenvs run folder")
    try:
        meta = json.loads(files.run.read_text())
    except ValueError as exc:
        raise ValueError(f"{files.run}: not valid JSON ({exc})") from None
    records, dropped = read_trajectories(files.trajectories)
    specs = [EpisodeSpec.from_dict(e) for e in meta.get("episodes", [])]
    steps: dict[int, list[dict[str, Any]]] = {s.index: [] for s in specs}
    finals: dict[int, dict[str, Any]] = {}
    for record in records:
        if record.get("type") == "step":
            steps.setdefault(int(record["episode"]), []).append(record)
        elif record.get("type") == "episode":
            finals[int(record["episode"])] = record
    envs: dict[str, Any] = {}
    try:
        scores = [_score_episode(spec, sorted(steps.get(spec.index, []), key=lambda r: r.get("step", -1)),
                                 finals.get(spec.index), envs) for spec in specs]
    finally:
        for env in envs.values():
            env.close()
    task = task_of(specs[0].env_id) if specs else None
    result = RunScore(files.root, meta, task, scores, bool(dropped))
    if write:
        (files.root / "score.json").write_text(json.dumps(result.to_json(), indent=2, allow_nan=False) + "\n")
        (files.root / "score.md").write_text(render_markdown(result))
    return result


# ---------------------------------------------------------------------------- reports
def _fmt(x: Any, scale: float = 1.0, digits: int = 2) -> str:
    if x is None or isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
        return "n/a"
    return f"{x * scale:.{digits}f}"


def _table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    out = ["| " + " | ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)) + " |",
           "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    out += ["| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |" for r in rows]
    return "\n".join(out)


def episode_table(score: RunScore) -> str:
    """One row per episode: the family's columns (— for a failed episode), then efficiency."""
    columns = score.task.columns if score.task else ()
    headers = ["episode", "label", "status", "steps", *(c.label for c in columns), "format errors",
               "tool calls/decision", "look-ahead", "tokens", "cost $", "reproduced"]
    rows = []
    for e in score.episodes:
        t = e.totals
        single = score.task.metrics_of_run([e.metrics]) if score.task and e.metrics is not None else None
        rows.append([
            str(e.index), e.label, e.status, str(e.steps), *(c.cell(single) for c in columns),
            str(t.format_errors), _fmt(t.tool_calls / t.decisions if t.decisions else math.nan),
            str(e.look_ahead_attempts), "n/a" if t.tokens is None else str(t.tokens),
            _fmt(t.cost_usd, digits=4), {True: "yes", False: "NO", None: "-"}[e.reproduced],
        ])
    return _table(headers, rows)


def efficiency_table(score: RunScore) -> str:
    eff = score.efficiency()
    tokens = "n/a" if eff["tokens"] is None else f"{eff['prompt_tokens']} / {eff['completion_tokens']}"
    rows = [
        ["decisions", str(eff["decisions"])],
        ["tokens (prompt / completion)", tokens],
        ["tokens per decision", _fmt(eff["tokens_per_decision"], digits=1)],
        ["cost $ (per decision)", f"{_fmt(eff['cost_usd'], digits=4)} ({_fmt(eff['cost_usd_per_decision'], digits=6)})"],
        ["tool calls (per decision)", f"{eff['tool_calls']} ({_fmt(eff['tool_calls_per_decision'])})"],
        ["tool errors", str(eff["tool_errors"])],
        ["look-ahead attempts", str(eff["look_ahead_attempts"])],
        ["format errors (invalid actions)", f"{eff['format_errors']} ({_fmt(eff['format_error_rate'], 100, 1)} %)"],
        ["requests / retries / endpoint errors", f"{eff['requests']} / {eff['retries']} / {eff['endpoint_errors']}"],
        ["seconds per decision", _fmt(eff["seconds_per_decision"], digits=3)],
    ]
    return _table(["efficiency", "value"], rows)


def metrics_line(score: RunScore) -> str:
    """The run's headline metrics over its complete episodes, in the family's columns."""
    metrics = score.run_metrics()
    done = sum(e.status == "complete" for e in score.episodes)
    failed = sum(e.status == "failed" for e in score.episodes)
    if score.task is None or metrics is None:
        return f"no complete episode ({failed} failed)" if failed else "no complete episode"
    cells = ", ".join(f"{c.label} {c.cell(metrics)}" for c in score.task.columns)
    return f"{score.task.env_id} over {done} complete episode(s): {cells}" + (
        f"; {failed} failed (HERCULEAN's rule: shown as —)" if failed else "")


def terminal_report(score: RunScore) -> str:
    agent = score.meta.get("agent") or {}
    lines = [
        f"run {score.run_dir} — agent {agent.get('model') or agent.get('name') or agent.get('kind', '?')}",
        episode_table(score),
        "",
        metrics_line(score),
        "",
        efficiency_table(score),
        "",
    ]
    done = [e for e in score.episodes if e.status in ("complete", "failed")]
    if score.reproduced:
        lines.append(f"re-scored offline: all {len(done)} finished episode(s) reproduce the live scores exactly")
    else:
        lines.append("re-scored offline: NOT reproduced" if done else "re-scored offline: no finished episode")
        for e in score.episodes:
            for m in e.mismatches[:5]:
                lines.append(f"  episode {e.index}: {m}")
    reparse = sum(e.reparse_mismatches for e in score.episodes)
    if reparse:
        lines.append(f"warning: {reparse} reply(ies) parse differently under the current text protocol")
    if score.dropped_partial_line:
        lines.append("note: a partial last line (an interrupted write) was skipped")
    return "\n".join(lines)


def render_markdown(score: RunScore) -> str:
    agent = score.meta.get("agent") or {}
    return "\n".join([
        f"# finenvs agent run — {score.run_dir.name}",
        "",
        f"Agent: `{json.dumps(agent)}`. Status: {score.meta.get('status')}. "
        f"Re-scored offline from the recorded actions: {'reproduced exactly' if score.reproduced else 'NOT reproduced'}.",
        "",
        metrics_line(score),
        "",
        "## Episodes",
        "",
        episode_table(score),
        "",
        "## Efficiency",
        "",
        efficiency_table(score),
        "",
    ])


__all__ = ["EpisodeScore", "RunScore", "efficiency_table", "episode_table", "metrics_line", "render_markdown",
           "score_run", "terminal_report"]
