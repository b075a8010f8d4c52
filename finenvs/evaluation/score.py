"""``finenvs score RUN_DIR``: re-score an agent run offline from its trajectories.

For every episode of the run the recorded decisions are replayed into a fresh
env (no agent, no tools, no endpoint); the replayed rewards and metrics must
equal what the run recorded live, exactly. Each reply is also parsed again
with the env's current text protocol, to catch a parser that changed since the
run. Beside the task score the report gives the run's efficiency, each as its
own number (never folded into one ratio): tokens, dollar cost, tool calls per
decision, look-ahead attempts, format errors (invalid actions), endpoint errors
and retries, and time per decision.

Writes ``score.json`` and ``score.md`` into the run folder.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from finenvs.evaluation.session import (
    EpisodeSpec,
    EpisodeTotals,
    ReplayMismatch,
    RunFiles,
    episode_metrics_from_actions,
    jsonable,
    read_trajectories,
    same_number,
)

METRIC_KEYS = ("cumulative_return", "sharpe", "max_drawdown")


@dataclass
class EpisodeScore:
    """One episode, re-scored."""

    index: int
    label: str
    symbol: str
    status: str
    steps: int
    standard: dict[str, float] = field(default_factory=dict)
    herculean: dict[str, float] = field(default_factory=dict)
    totals: EpisodeTotals = field(default_factory=EpisodeTotals)
    look_ahead_attempts: int = 0
    reproduced: bool | None = None
    mismatches: list[str] = field(default_factory=list)
    reparse_mismatches: int = 0


@dataclass
class RunScore:
    """A run, re-scored."""

    run_dir: Path
    meta: dict[str, Any]
    episodes: list[EpisodeScore]
    dropped_partial_line: bool = False

    @property
    def reproduced(self) -> bool:
        """Every complete episode replays to exactly its recorded rewards and metrics."""
        done = [e for e in self.episodes if e.status == "complete"]
        return bool(done) and all(e.reproduced for e in done)

    def efficiency(self) -> dict[str, Any]:
        """Run totals and per-decision figures (cost None when any price is unknown)."""
        totals = EpisodeTotals()
        for e in self.episodes:
            t = e.totals
            for name in ("decisions", "format_errors", "tool_calls", "tool_errors", "prompt_tokens",
                         "completion_tokens", "requests", "retries", "endpoint_errors"):
                setattr(totals, name, getattr(totals, name) + getattr(t, name))
            totals.cost_usd = None if totals.cost_usd is None or t.cost_usd is None else totals.cost_usd + t.cost_usd
            totals.seconds += t.seconds
        n = totals.decisions
        per = (lambda x: x / n) if n else (lambda x: math.nan)
        return {
            **asdict(totals),
            "look_ahead_attempts": sum(e.look_ahead_attempts for e in self.episodes),
            "tokens": totals.prompt_tokens + totals.completion_tokens,
            "tool_calls_per_decision": per(totals.tool_calls),
            "tokens_per_decision": per(totals.prompt_tokens + totals.completion_tokens),
            "cost_usd_per_decision": None if totals.cost_usd is None else per(totals.cost_usd),
            "seconds_per_decision": per(totals.seconds),
            "format_error_rate": per(totals.format_errors),
        }

    def mean_scores(self) -> dict[str, dict[str, float]]:
        done = [e for e in self.episodes if e.status == "complete"]
        out: dict[str, dict[str, float]] = {}
        for preset in ("standard", "herculean"):
            out[preset] = {}
            for key in METRIC_KEYS:
                vals = [getattr(e, preset).get(key) for e in done]
                vals = [v for v in vals if isinstance(v, (int, float)) and math.isfinite(v)]
                out[preset][key] = sum(vals) / len(vals) if vals else math.nan
        return out

    def to_json(self) -> dict[str, Any]:
        return jsonable({
            "run": str(self.run_dir),
            "agent": self.meta.get("agent"),
            "reproduced": self.reproduced,
            "mean": self.mean_scores(),
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
    if not messages or (step.get("invalid") or "").startswith(("endpoint error", "decision timed out", "no decision")):
        return None
    last = messages[-1]
    if last.get("role") != "assistant" or last.get("tool_calls"):
        return None
    parsed = protocol.parse_text(last.get("content") if last.get("content") is not None else "")
    return parsed.name, parsed.valid


def score_run(run_dir: Path | str, *, write: bool = True) -> RunScore:
    """Re-score a run folder (see the module docstring).

    Raises:
        FileNotFoundError: Not a run folder.
        ValueError: The trajectories are corrupt before their last line.
    """
    import gymnasium as gym

    files = RunFiles(Path(run_dir))
    if not files.run.is_file():
        raise FileNotFoundError(f"{files.root}: no run.json; not a finenvs run folder")
    meta = json.loads(files.run.read_text())
    records, dropped = read_trajectories(files.trajectories)
    specs = [EpisodeSpec.from_dict(e) for e in meta.get("episodes", [])]
    steps: dict[int, list[dict[str, Any]]] = {s.index: [] for s in specs}
    finals: dict[int, dict[str, Any]] = {}
    for record in records:
        if record.get("type") == "step":
            steps.setdefault(int(record["episode"]), []).append(record)
        elif record.get("type") == "episode":
            finals[int(record["episode"])] = record
    protocols: dict[str, Any] = {}
    scores = []
    for spec in specs:
        ep_steps = sorted(steps.get(spec.index, []), key=lambda r: r["step"])
        final = finals.get(spec.index)
        totals = EpisodeTotals()
        for step in ep_steps:
            totals.add_step(step)
        symbol = (final or {}).get("symbol") or (ep_steps[0]["symbol"] if ep_steps else
                                                 spec.env_kwargs.get("symbol", ""))
        score = EpisodeScore(spec.index, spec.label(), str(symbol), "complete" if final else "incomplete",
                             len(ep_steps), totals=totals)
        key = spec.env_id + json.dumps(spec.env_kwargs, sort_keys=True, default=str)
        if key not in protocols:
            entry = gym.spec(spec.env_id).entry_point
            creator = gym.envs.registration.load_env_creator(entry) if isinstance(entry, str) else entry
            protocol = getattr(creator, "text_protocol", None)  # a class-level protocol: no env to build
            if protocol is None:  # per-instance vocabularies (FinHedging-v0's pair words) need the env
                env = gym.make(spec.env_id, **spec.env_kwargs)
                protocol = env.unwrapped.text_protocol
                env.close()
            protocols[key] = protocol
        protocol = protocols[key]
        for step in ep_steps:
            again = _reparse(protocol, step)
            recorded = (step.get("reply_action", step["action"]),
                        step.get("reply_valid", step.get("invalid") is None))
            if again is not None and again != recorded:
                score.reparse_mismatches += 1
        if final is None:
            score.look_ahead_attempts = totals.look_ahead_attempts
            scores.append(score)
            continue
        score.look_ahead_attempts = int(final.get("look_ahead_attempts", totals.look_ahead_attempts))
        try:
            rewards, info = episode_metrics_from_actions(spec, [s["action"] for s in ep_steps])
        except ReplayMismatch as exc:
            score.reproduced = False
            score.mismatches.append(str(exc))
            scores.append(score)
            continue
        metrics = info["episode_metrics"]
        score.standard, score.herculean = metrics["standard"], metrics["herculean"]
        for k, (r, step) in enumerate(zip(rewards, ep_steps, strict=True)):
            if not same_number(r, step.get("reward")):
                score.mismatches.append(f"step {k}: reward {r!r} replayed, {step.get('reward')!r} recorded")
        for preset in ("standard", "herculean"):
            for key, value in metrics[preset].items():
                if not same_number(value, (final.get(preset) or {}).get(key)):
                    score.mismatches.append(f"{preset} {key}: {value!r} replayed, "
                                            f"{(final.get(preset) or {}).get(key)!r} recorded")
        if not same_number(info.get("equity"), final.get("final_equity")):
            score.mismatches.append(f"final equity {info.get('equity')!r} replayed, {final.get('final_equity')!r} recorded")
        score.reproduced = not score.mismatches
        scores.append(score)
    result = RunScore(files.root, meta, scores, bool(dropped))
    if write:
        (files.root / "score.json").write_text(json.dumps(result.to_json(), indent=2, allow_nan=False) + "\n")
        (files.root / "score.md").write_text(render_markdown(result))
    return result


# ---------------------------------------------------------------------------- reports
def _fmt(x: Any, scale: float = 1.0, digits: int = 2) -> str:
    if x is None or not isinstance(x, (int, float)) or not math.isfinite(x):
        return "n/a"
    return f"{x * scale:.{digits}f}"


def _table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    out = ["| " + " | ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)) + " |",
           "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    out += ["| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |" for r in rows]
    return "\n".join(out)


def episode_table(score: RunScore) -> str:
    headers = ["episode", "symbol", "status", "steps", "CR %", "SR", "MDD %", "CR % (H)", "SR (H)", "MDD % (H)",
               "format errors", "tool calls/decision", "look-ahead", "tokens", "cost $", "reproduced"]
    rows = []
    for e in score.episodes:
        t = e.totals
        rows.append([
            str(e.index), e.symbol, e.status, str(e.steps),
            _fmt(e.standard.get("cumulative_return"), 100), _fmt(e.standard.get("sharpe")),
            _fmt(e.standard.get("max_drawdown"), 100), _fmt(e.herculean.get("cumulative_return"), 100),
            _fmt(e.herculean.get("sharpe")), _fmt(e.herculean.get("max_drawdown"), 100),
            str(t.format_errors), _fmt(t.tool_calls / t.decisions if t.decisions else math.nan),
            str(e.look_ahead_attempts), str(t.prompt_tokens + t.completion_tokens),
            _fmt(t.cost_usd, digits=4), {True: "yes", False: "NO", None: "-"}[e.reproduced],
        ])
    return _table(headers, rows)


def efficiency_table(score: RunScore) -> str:
    eff = score.efficiency()
    rows = [
        ["decisions", str(eff["decisions"])],
        ["tokens (prompt / completion)", f"{eff['prompt_tokens']} / {eff['completion_tokens']}"],
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


def terminal_report(score: RunScore) -> str:
    agent = score.meta.get("agent") or {}
    mean = score.mean_scores()
    lines = [
        f"run {score.run_dir} — agent {agent.get('model') or agent.get('name') or agent.get('kind', '?')}",
        episode_table(score),
        "",
        f"mean over complete episodes: CR {_fmt(mean['standard']['cumulative_return'], 100)} %, "
        f"SR {_fmt(mean['standard']['sharpe'])}, MDD {_fmt(mean['standard']['max_drawdown'], 100)} % "
        f"(herculean: CR {_fmt(mean['herculean']['cumulative_return'], 100)} %, "
        f"SR {_fmt(mean['herculean']['sharpe'])}, MDD {_fmt(mean['herculean']['max_drawdown'], 100)} %)",
        "",
        efficiency_table(score),
        "",
    ]
    done = [e for e in score.episodes if e.status == "complete"]
    if score.reproduced:
        lines.append(f"re-scored offline: all {len(done)} complete episode(s) reproduce the live scores exactly")
    else:
        lines.append("re-scored offline: NOT reproduced" if done else "re-scored offline: no complete episode")
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
        "## Episodes",
        "",
        episode_table(score),
        "",
        "## Efficiency",
        "",
        efficiency_table(score),
        "",
    ])


__all__ = ["EpisodeScore", "RunScore", "efficiency_table", "episode_table", "render_markdown", "score_run",
           "terminal_report"]
