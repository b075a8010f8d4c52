"""Agent episodes as recorded trajectories: one session type for the LLM runner and the MCP server.

An :class:`EpisodeSession` owns one text env (the family's base env inside
:class:`~finenvs.wrappers.TextInterface`, as its task spec builds it), records
every tool call made between decisions, and writes one JSON line per decision
and one per finished episode to a run's ``trajectories.jsonl`` (the run log's
format: :mod:`finenvs.evaluation.runlog`); the episode's metrics are the task
spec's ``episode_metrics`` of the env's own infos. The same format serves every
family.

Resuming replays the recorded actions into a fresh env, checks each reward
matches the record, and continues.
:func:`~finenvs.evaluation.replay.replay_episode` re-scores a trajectory offline
from its actions alone.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, TypeVar

from finenvs.evaluation.envpool import make_text_env
from finenvs.evaluation.replay import ReplayMismatch
from finenvs.evaluation.runlog import (
    EpisodeRecord,
    PendingRecord,
    StepRecord,
    TrajectoryWriter,
    jsonable,
    same_number,
)
from finenvs.tasks import EpisodeSpec, TaskSpec, task_of
from finenvs.text.protocol import ParsedAction
from finenvs.tools.registry import ToolResult
from finenvs.wrappers.text import DEFAULT_HISTORY, TextInterface


def endpoint_failed_everywhere(steps: Sequence[Mapping[str, Any]]) -> bool:
    """Whether every decision of an episode got no reply (its step records say ``endpoint_failed``): such an
    episode is failed, never scored on the default actions the runner took for it."""
    return bool(steps) and all(step.get("endpoint_failed") is True for step in steps)


def endpoint_failure_reason(steps: Sequence[Mapping[str, Any]]) -> str:
    """The reason an episode failed at the endpoint: how many decisions, and the last one's error."""
    last = str(steps[-1].get("invalid") or "") if steps else ""
    return (f"the endpoint failed on all {len(steps)} decision(s) of the episode (last: {last[:300]}); "
            "it is not scored")


def _add(total: int | None, value: Any) -> int | None:
    """Token sums: unknown (None) anywhere makes the total unknown, never 0."""
    return None if total is None or value is None else total + int(value)


_Count = TypeVar("_Count", int, float, None)


@dataclass
class EpisodeTotals:
    """Efficiency counts of one episode (token counts and cost are None when any step's are unknown)."""

    decisions: int = 0
    format_errors: int = 0
    tool_calls: int = 0
    tool_errors: int = 0
    look_ahead_attempts: int = 0
    prompt_tokens: int | None = 0
    completion_tokens: int | None = 0
    requests: int = 0
    retries: int = 0
    endpoint_errors: int = 0
    cost_usd: float | None = 0.0
    seconds: float = 0.0
    #: Tokens of the decisions' requests as counted (the endpoint's counts, else ``o200k_base`` estimates:
    #: :mod:`finenvs.evaluation.tokens`), and the prompt tokens that repeat the previous request's prefix.
    counted_prompt_tokens: int | None = 0
    counted_completion_tokens: int | None = 0
    cached_prompt_tokens: int | None = 0
    #: Decisions with an estimated count among them.
    estimated_decisions: int = 0

    def add_step(self, record: Mapping[str, Any]) -> None:
        self.decisions += 1
        self.format_errors += 1 if record.get("invalid") else 0
        calls = record.get("tool_calls") or []
        self.tool_calls += len(calls)
        self.tool_errors += sum(1 for c in calls if not c.get("ok", True))
        self.look_ahead_attempts += int(record.get("look_ahead") or 0)
        usage = record.get("usage")
        self.prompt_tokens = _add(self.prompt_tokens, None if usage is None else usage.get("prompt_tokens"))
        self.completion_tokens = _add(self.completion_tokens, None if usage is None else usage.get("completion_tokens"))
        self.requests += int(record.get("requests") or 0)
        self.retries += int(record.get("retries") or 0)
        self.endpoint_errors += int(record.get("endpoint_errors") or 0)
        cost = record.get("cost_usd")
        self.cost_usd = None if cost is None or self.cost_usd is None else self.cost_usd + float(cost)
        self.seconds += float((record.get("timing") or {}).get("seconds") or 0.0)
        tokens = record.get("tokens")
        tokens = tokens if isinstance(tokens, dict) else {}  # a run recorded before the counts: unknown
        self.counted_prompt_tokens = _add(self.counted_prompt_tokens, tokens.get("prompt"))
        self.counted_completion_tokens = _add(self.counted_completion_tokens, tokens.get("completion"))
        self.cached_prompt_tokens = _add(self.cached_prompt_tokens, tokens.get("cached"))
        self.estimated_decisions += 1 if tokens.get("estimated") else 0

    def merge(self, other: EpisodeTotals) -> None:
        """Add another episode's counts (run totals)."""
        for name in ("decisions", "format_errors", "tool_calls", "tool_errors", "look_ahead_attempts", "requests",
                     "retries", "endpoint_errors", "estimated_decisions"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for name in ("counted_prompt_tokens", "counted_completion_tokens", "cached_prompt_tokens"):
            setattr(self, name, _add(getattr(self, name), getattr(other, name)))
        self.prompt_tokens = _add(self.prompt_tokens, other.prompt_tokens)
        self.completion_tokens = _add(self.completion_tokens, other.completion_tokens)
        self.cost_usd = None if self.cost_usd is None or other.cost_usd is None else self.cost_usd + other.cost_usd
        self.seconds += other.seconds

    def reported(self, count: _Count) -> _Count | None:
        """``count`` (a token count or a cost of these totals), or None (unknown) when no decision was recorded:
        an endpoint that never answered reported nothing, which is shown as n/a, never as 0."""
        return None if self.decisions == 0 else count

    @property
    def reported_cost_usd(self) -> float | None:
        """The dollar cost, None when unknown (no prices, no token counts, or no decision recorded)."""
        return None if self.cost_usd is None else self.reported(self.cost_usd)

    @property
    def tokens(self) -> int | None:
        """Prompt plus completion tokens, None when unknown (any count unknown, or no decision recorded)."""
        if self.prompt_tokens is None or self.completion_tokens is None:
            return None
        return self.reported(self.prompt_tokens + self.completion_tokens)


class EpisodeSession:
    """One agent episode: a text env, its tool calls and its trajectory records.

    Args:
        spec: The episode.
        writer: Where records go (None: keep them in memory only, in ``records``).
        history: Recent decisions in the prompt.
        tool_max_chars: Cap on tool results.
        recorded: Step records of an earlier, interrupted attempt (as a verified run's file holds them:
            :func:`~finenvs.evaluation.integrity.open_run_to_resume`): their actions are replayed (rewards
            checked) before the session continues.
        live: A live run (``end="latest"``): an episode that reaches the newest bar the data holds is waiting
            (``waiting``), not finished; no episode record is written, and a later session over more data
            continues it.
        pending: A live run's recorded ``"pending"`` decision (taken at the newest bar, before the next bar
            existed): committed as the next step as soon as the data has that bar.
        toolbox_kwargs: Passed to :class:`~finenvs.tools.ToolBox` (document stores).

    Raises:
        ReplayMismatch: ``recorded`` does not replay to the recorded rewards.
    """

    _pending_calls: list[Any] | None  # a pending decision's tool calls, until its step line is written

    def __init__(
        self,
        spec: EpisodeSpec,
        *,
        writer: TrajectoryWriter | None = None,
        history: int = DEFAULT_HISTORY,
        tool_max_chars: int | None = None,
        recorded: Sequence[Mapping[str, Any]] | None = None,
        env: TextInterface | None = None,
        live: bool = False,
        pending: Mapping[str, Any] | None = None,
        **toolbox_kwargs: Any,
    ) -> None:
        self.spec = spec
        self.live = live
        #: A live episode at the newest bar: its next decision waits for the next bar (``finenvs data add``).
        self.waiting = False
        self._reached_open_end = False
        self.task: TaskSpec = task_of(spec.env_id)
        self.writer = writer
        #: the session closes its env only if it made it (a pooled env goes back to its pool)
        self._owns_env = env is None
        self.env = env if env is not None else make_text_env(spec, history=history, tool_max_chars=tool_max_chars,
                                                             **toolbox_kwargs)
        self.protocol = self.env.protocol
        self.prompt, self.reset_info = self.env.reset(seed=spec.seed, options=spec.options)
        self.step_index = 0
        self.done = False
        self.last_info: dict[str, Any] = dict(self.reset_info)
        self.infos: list[dict[str, Any]] = []
        self.totals = EpisodeTotals()
        self.records: list[StepRecord] = []
        self.episode_record: EpisodeRecord | None = None
        self._pending: list[ToolResult] = []
        self._began = time.perf_counter()
        for record in recorded or []:
            self._replay(record)
        #: The recorded pending decision still waiting for its bar (None when there is none or it was committed).
        self.pending: Mapping[str, Any] | None = None
        if pending is not None and pending.get("step") == self.step_index:
            if self.done or self.at_open_end():
                self.pending = pending
            else:
                self._commit_pending(pending)
        if self.at_open_end():
            self.waiting = True

    # ------------------------------------------------------------------ state
    @property
    def label(self) -> str:
        """What the episode is about: its symbol (a pairs episode: the pair once chosen) or its task id."""
        info = self.reset_info
        return str(info.get("symbol") or self.last_info.get("pair") or info.get("task_id") or "")

    symbol = label

    @property
    def date(self) -> str:
        """The env's date of the current decision ("" for a task without one, e.g. an analytical question)."""
        date = self.last_info.get("date")
        return "" if date is None else str(date)

    def tool_specs(self) -> list[dict[str, Any]]:
        return self.env.tool_specs()

    # ------------------------------------------------------------------ acting
    def call_tool(self, name: Any, arguments: Any = None) -> ToolResult:
        """Call a tool at the current decision (recorded with the next committed step)."""
        if self.done:
            message = "the episode has ended; no more tool calls"
            return ToolResult(str(name)[:80], None, False, {"error": message}, message)
        result = self.env.call_tool(name, arguments)
        self._pending.append(result)
        return result

    def commit(
        self,
        parsed: ParsedAction,
        *,
        raw_text: str | None = None,
        messages: list[dict[str, Any]] | None = None,
        usage: dict[str, int] | None = None,
        cost_usd: float | None = 0.0,
        requests: int = 0,
        retries: int = 0,
        endpoint_errors: int = 0,
        errors: list[str] | None = None,
        timing: dict[str, float] | None = None,
        extra: dict[str, Any] | None = None,
        resolve: bool = True,
        endpoint_failed: bool = False,
    ) -> StepRecord:
        """Take the decision: step the env, write the step record (and the episode record at the end).

        ``endpoint_failed``: the decision got no reply (the endpoint failed on every request; the runner took the
        protocol's default). An episode whose decisions all got none ends ``failed`` (no metrics), not scored.

        Returns:
            The step record.

        Raises:
            RuntimeError: The episode has already ended.
        """
        if self.done:
            raise RuntimeError("the episode has ended; reset a new session")
        prompt = self.prompt
        date = self.date
        obs, reward, terminated, truncated, info = self.env.step_parsed(parsed, resolve=resolve)
        taken = getattr(self.env, "last_parsed", None) or parsed  # after the env's stage check, if it has one
        calls = self._pending
        self._pending = []
        recorded_calls, self._pending_calls = getattr(self, "_pending_calls", None), None
        record: StepRecord = {
            "type": "step",
            "episode": self.spec.index,
            "step": self.step_index,
            "date": date,
            "symbol": self.label or str(info.get("pair", "")),
            "prompt": prompt,
            "messages": messages or [],
            "tool_calls": recorded_calls if recorded_calls is not None else [
                {**c.record(), "result": c.data} for c in calls
            ],
            "raw_text": raw_text,
            "action": taken.name,
            "env_action": self.protocol.encode(taken.action),
            "via": taken.via,
            "invalid": taken.invalid,
            "reasoning": taken.reasoning,
            "reward": float(reward),
            "equity": info.get("equity"),
            "position": info.get("position"),
            "next_date": info.get("date"),
            "terminated": bool(terminated),
            "truncated": bool(truncated),
            "look_ahead": (sum(int(c.get("look_ahead") or 0) for c in recorded_calls) if recorded_calls is not None
                           else sum(c.look_ahead for c in calls)),
            "usage": usage,
            "cost_usd": cost_usd,
            "requests": requests,
            "retries": retries,
            "endpoint_errors": endpoint_errors,
            "errors": errors or [],
            "timing": timing or {},
        }
        if isinstance(info.get("debate"), dict):  # a debated episode: the counter-argument, the multiplier
            record["debate"] = jsonable(info["debate"])
        if taken is not parsed and (taken.name, taken.invalid) != (parsed.name, parsed.invalid):
            # the reply read as one word, the env's stage check took another: keep both
            record["reply_action"], record["reply_valid"] = parsed.name, parsed.valid
        if extra:
            record.update(extra)  # type: ignore[typeddict-item]  # the caller's fields (commit_arguments, ...)
        if endpoint_failed:
            record["endpoint_failed"] = True
        self._advance(record, obs, info, terminated, truncated)
        return record

    def at_open_end(self) -> bool:
        """A live episode whose next decision has to wait for a later bar (recorded as pending until then).

        A live env keeps an open window's position at the data's newest bar (reset info ``open_end``:
        FinTrading-v0, FinHedging-v0, FinReport-v0) and truncates there: the decision at that bar is the one that
        waits. An env without ``open_end`` never waits (its episode ends with its data)."""
        if not self.live or self.done:
            return False
        return bool(self.reset_info.get("open_end")) and self._reached_open_end

    def hold(self, parsed: ParsedAction, **fields: Any) -> PendingRecord:
        """A live episode waiting at its newest bar: record the decision taken there as ``"pending"`` (the env
        cannot step it before the next bar exists); a later session commits it (:meth:`_commit_pending`).

        Returns:
            The pending record.
        """
        if not self.waiting:
            raise RuntimeError("only a live episode waiting at its newest bar holds a pending decision")
        calls, self._pending = self._pending, []
        text_action = getattr(self.env.unwrapped, "text_action", None)
        parsed = text_action(parsed) if text_action is not None else parsed  # the env's stage check, as on commit
        record: PendingRecord = {
            "type": "pending", "episode": self.spec.index, "step": self.step_index, "date": self.date,
            "symbol": self.label, "prompt": self.prompt, "tool_calls": [{**c.record(), "result": c.data}
                                                                        for c in calls],
            "action": parsed.name, "env_action": self.protocol.encode(parsed.action), "via": parsed.via,
            "invalid": parsed.invalid, "reasoning": parsed.reasoning, **fields,  # type: ignore[typeddict-item]
        }
        self.pending = record
        if self.writer is not None:
            self.writer.write(record)
        return record

    def _commit_pending(self, record: Mapping[str, Any]) -> None:
        """Step a recorded pending decision now that its bar exists: the step line carries what the pending
        line recorded (prompt, messages, tool calls, usage) and the reward the new bar gives."""
        parsed = ParsedAction(self.protocol.decode(record.get("env_action")), str(record.get("action")),
                              record.get("invalid"), record.get("via", "default"), record.get("reasoning", ""))
        keep: dict[str, Any] = {k: record[k] for k in ("messages", "usage", "cost_usd", "requests", "retries",
                                                       "endpoint_errors", "errors", "timing", "commit_arguments",
                                                       "endpoint_failed", "tokens")
                                if k in record}
        self._pending_calls = list(record.get("tool_calls") or [])
        self.commit(parsed, raw_text=record.get("raw_text"), messages=keep.pop("messages", None),
                    usage=keep.pop("usage", None), cost_usd=keep.pop("cost_usd", None),
                    requests=keep.pop("requests", 0), retries=keep.pop("retries", 0),
                    endpoint_errors=keep.pop("endpoint_errors", 0), errors=keep.pop("errors", None),
                    timing=keep.pop("timing", None), endpoint_failed=keep.pop("endpoint_failed", False) is True,
                    extra={**keep, "prompt": record.get("prompt"), "decided_pending": record.get("date")},
                    resolve=False)

    def fail(self, reason: str, *, endpoint_failed: bool = False, **attempt: Any) -> EpisodeRecord:
        """End the episode as failed (HERCULEAN's rule: no valid decision after its attempts): no metrics, "—"
        in tables. ``attempt`` (messages, raw text, usage, errors of the failed decision) is kept in the record.
        ``endpoint_failed``: the failed decision got no reply; if no earlier decision got one either, the episode
        failed at the endpoint (``endpoint_failed_decisions``), not by the agent's choice."""
        self.done = True
        calls, self._pending = self._pending, []
        decision: dict[str, Any] = {**attempt, "tool_calls": [{**c.record(), "result": c.data} for c in calls]}
        if endpoint_failed:
            decision["endpoint_failed"] = True
        no_reply = endpoint_failed_everywhere([*self.records, decision])
        self.episode_record = {
            "type": "episode", "episode": self.spec.index, "spec": self.spec.to_dict(), "status": "failed",
            "label": self.label, "tools_mode": self.env.tools_mode, "steps": self.step_index,
            "reason": (f"the endpoint failed on all {self.step_index + 1} decision(s) of the episode (last: "
                       f"{reason[:300]}); it is not scored") if no_reply else reason,
            "metrics": None,
            "look_ahead_attempts": int(self.last_info.get("look_ahead_attempts", 0)) + sum(c.look_ahead for c in calls),
            "totals": asdict(self.totals),
            "failed_decision": decision,
        }
        if no_reply:
            self.episode_record["endpoint_failed_decisions"] = self.step_index + 1
        if self.writer is not None:
            self.writer.write(self.episode_record)
        return self.episode_record

    def _advance(self, record: StepRecord, obs: str, info: dict[str, Any], terminated: bool, truncated: bool,
                 *, write_step: bool = True) -> None:
        self.step_index += 1
        self.prompt = obs
        self.last_info = info
        self.infos.append(info)
        self.totals.add_step(record)
        self.records.append(record)
        if self.writer is not None and write_step:
            self.writer.write(record)
        if truncated and not terminated and self.live and self.reset_info.get("open_end"):
            self._reached_open_end = True  # the data's newest bar of an open window: the position is still held
            self.waiting = True
        elif not (terminated or truncated) and self.at_open_end():  # the next decision waits for the next bar
            self.waiting = True
        elif terminated or truncated:
            self.done = True
            self.episode_record = (self._endpoint_failed_record(info) if endpoint_failed_everywhere(self.records)
                                   else self._episode_record(info))
            if self.writer is not None:
                self.writer.write(self.episode_record)

    def _replay(self, record: Mapping[str, Any]) -> None:
        if self.done:
            raise ReplayMismatch(f"{self.spec.label()}: recorded steps continue past the episode's end")
        parsed = ParsedAction(self.protocol.decode(record.get("env_action")), str(record.get("action")),
                              record.get("invalid"), record.get("via", "default"), record.get("reasoning", ""))
        try:
            obs, reward, terminated, truncated, info = self.env.step_parsed(parsed, resolve=False)
        except (ValueError, TypeError) as exc:
            raise ReplayMismatch(f"{self.spec.label()} step {self.step_index}: the recorded action is not an action "
                                 f"of the env ({exc})") from None
        if not same_number(float(reward), record.get("reward")) or record.get("step") != self.step_index:
            raise ReplayMismatch(
                f"{self.spec.label()} step {self.step_index}: replayed reward {reward!r} differs from the recorded "
                f"{record.get('reward')!r}; the data, the code or the env arguments changed since the run"
            )
        self._advance(dict(record), obs, info, terminated, truncated,  # type: ignore[arg-type]  # a copy of it
                      write_step=False)  # already in the file

    def _episode_record(self, info: dict[str, Any]) -> EpisodeRecord:
        metrics = self.task.metrics_of_episode(self.env.unwrapped, self.reset_info, self.infos)
        return {
            "type": "episode",
            "episode": self.spec.index,
            "spec": self.spec.to_dict(),
            "status": "complete",
            "label": metrics.get("label") or self.label,
            "tools_mode": self.env.tools_mode,
            "steps": self.step_index,
            "look_ahead_attempts": int(info.get("look_ahead_attempts", 0)),
            "metrics": jsonable(metrics),
            "totals": asdict(self.totals),
        }

    def _endpoint_failed_record(self, info: dict[str, Any]) -> EpisodeRecord:
        """The record of an episode whose every decision got no reply: failed, no metrics (the default actions the
        runner took are recorded as steps, so a replay still checks them)."""
        return {
            "type": "episode", "episode": self.spec.index, "spec": self.spec.to_dict(), "status": "failed",
            "label": self.label, "tools_mode": self.env.tools_mode, "steps": self.step_index,
            "look_ahead_attempts": int(info.get("look_ahead_attempts", 0)), "metrics": None,
            "totals": asdict(self.totals), "reason": endpoint_failure_reason(self.records),
            "endpoint_failed_decisions": self.step_index,
        }

    def close(self) -> None:
        if self._owns_env:
            self.env.close()


__all__ = ["EpisodeSession", "EpisodeTotals", "endpoint_failed_everywhere", "endpoint_failure_reason"]
