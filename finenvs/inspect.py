"""Inspect AI tasks: every registered family as an Inspect ``Task`` (``pip install "finenvs[inspect]"``).

``inspect eval finenvs/qa --model openai/gpt-4o-mini`` plays FinQA-v0's episode plan with Inspect's model,
concurrency, retries and log format; ``inspect view`` browses the log. Each task is built from the family's
:class:`~finenvs.tasks.TaskSpec`, never from its name:

- **dataset**: the family's episode plan (:meth:`TaskSpec.plan` of a :class:`~finenvs.tasks.Selection`), one
  ``Sample`` per episode (its :class:`~finenvs.tasks.EpisodeSpec` in the sample's metadata);
- **solver** (:func:`finenvs_agent`): the episode's text env driven by ``finenvs llm``'s own decision loop
  (:func:`finenvs.evaluation.llm.run_episode`) with Inspect's model as the agent. The env's tools (date-locked,
  the family's ``max_tool_calls`` per decision, the commit tool) are offered to Inspect's model as Inspect tool
  definitions and served by the env itself, so the date lock, the tool budget, the reply cap and the protocol's
  documented default are the same as in every other path;
- **scorer** (:func:`finenvs_scorer`): the recorded env actions replayed into a fresh env and scored by the
  family's :meth:`TaskSpec.metrics_of_episode` (what ``finenvs score`` does to a run folder); the task's metric is
  the family's :meth:`TaskSpec.metrics_of_run` over its episodes, so ``inspect eval`` reports the numbers
  ``finenvs llm`` reports for the same episodes and replies.

Task arguments (``-T name=value``): ``split``, ``limit``, ``instances`` (comma-separated indices), ``symbols``
(comma-separated), ``seeds``, ``max_tool_calls``, ``format_retries``, ``failure_rule`` (``default`` or
``herculean``) and ``tools`` (``none``: closed book, the commit tool only).

Import this module only where ``inspect_ai`` is installed: it registers the tasks when imported (the
``inspect_ai`` entry point of the distribution names it).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

try:
    from inspect_ai import Task, task
    from inspect_ai.dataset import MemoryDataset, Sample
    from inspect_ai.log import (
        EvalConfig,
        EvalDataset,
        EvalLog,
        EvalMetric,
        EvalResults,
        EvalSample,
        EvalScore,
        EvalSpec,
        EvalStats,
        write_eval_log,
    )
    from inspect_ai.model import (
        ChatMessage,
        ChatMessageAssistant,
        ChatMessageSystem,
        ChatMessageTool,
        ChatMessageUser,
        GenerateConfig,
        Model,
        ModelAPI,
        ModelOutput,
        ModelUsage,
        get_model,
        modelapi,
    )
    from inspect_ai.scorer import Metric, SampleScore, Score, Scorer, Target, metric, scorer
    from inspect_ai.solver import Generate, Solver, TaskState, solver
    from inspect_ai.tool import ToolCall as InspectToolCall
    from inspect_ai.tool import ToolInfo, ToolParams
except ImportError as exc:  # pragma: no cover - the error names the extra to install
    raise ImportError("finenvs.inspect needs Inspect AI: pip install 'finenvs[inspect]'") from exc

from finenvs.evaluation.llm import RunConfig, run_episode
from finenvs.evaluation.replay import ReplayMismatch, replay_episode
from finenvs.evaluation.runlog import same_number
from finenvs.tasks import EpisodeSpec, Selection, TaskSpec, task_of, tasks
from finenvs.text.chat import ChatReply, ToolCall

#: Where the solver leaves the episode for the scorer (a sample's metadata, kept in the log).
EPISODE_KEY = "finenvs_episode"


# ---------------------------------------------------------------------------- messages both ways
def _arguments(text: Any) -> dict[str, Any]:
    """A finenvs tool call's JSON arguments as Inspect's dict (anything but a JSON object: ``{}``)."""
    try:
        value = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def inspect_messages(messages: Sequence[Mapping[str, Any]]) -> list[ChatMessage]:
    """OpenAI chat-completions messages (what finenvs' decision loop keeps) as Inspect chat messages."""
    out: list[ChatMessage] = []
    names: dict[str, str] = {}
    for message in messages:
        role = message.get("role")
        content = message.get("content")
        text = content if isinstance(content, str) else ""
        if role == "system":
            out.append(ChatMessageSystem(content=text))
        elif role == "assistant":
            calls = []
            for call in message.get("tool_calls") or []:
                function = call.get("function") or {}
                names[str(call.get("id"))] = str(function.get("name"))
                calls.append(InspectToolCall(id=str(call.get("id")), function=str(function.get("name")),
                                             arguments=_arguments(function.get("arguments"))))
            out.append(ChatMessageAssistant(content=text, tool_calls=calls or None))
        elif role == "tool":
            call_id = str(message.get("tool_call_id"))
            out.append(ChatMessageTool(content=text, tool_call_id=call_id, function=names.get(call_id)))
        else:
            out.append(ChatMessageUser(content=text))
    return out


def tool_infos(specs: Sequence[Mapping[str, Any]]) -> list[ToolInfo]:
    """The env's tool specs (OpenAI function tools, as ``finenvs llm`` sends them) as Inspect tool definitions."""
    out = []
    for spec in specs:
        function = spec.get("function") or {}
        out.append(ToolInfo(name=str(function.get("name")), description=str(function.get("description") or ""),
                            parameters=ToolParams.model_validate(function.get("parameters") or {})))
    return out


def chat_reply(output: ModelOutput) -> ChatReply:
    """An Inspect model output as the reply finenvs' decision loop reads (text, tool calls, token counts)."""
    message = output.message
    calls = []
    for call in message.tool_calls or []:
        # a call whose arguments did not parse keeps the error as its (non-JSON) arguments: the loop answers it
        arguments = json.dumps(call.arguments) if call.parse_error is None else str(call.parse_error)
        calls.append(ToolCall(str(call.id), str(call.function), arguments))
    usage = None if output.usage is None else {
        "prompt_tokens": int(output.usage.input_tokens) + int(output.usage.input_tokens_cache_read or 0)
        + int(output.usage.input_tokens_cache_write or 0),
        "completion_tokens": int(output.usage.output_tokens)}
    return ChatReply(message.text if message.text or not calls else None, calls, usage,
                     str(output.stop_reason), output.model)


def openai_reply(reply: ChatReply, model: str = "finenvs") -> ModelOutput:
    """A finenvs agent's reply as an Inspect model output (the other way: a finenvs agent as Inspect's mock
    model's ``custom_outputs``)."""
    calls = [InspectToolCall(id=c.id, function=c.name, arguments=_arguments(c.arguments)) for c in reply.tool_calls]
    message = ChatMessageAssistant(content=reply.content or "", tool_calls=calls or None, model=model)
    output = ModelOutput.from_message(message, stop_reason="tool_calls" if calls else "stop")
    usage = reply.usage or {}  # given, so the mock model counts no tokens itself (that needs a download)
    output.usage = ModelUsage(input_tokens=int(usage.get("prompt_tokens") or 0),
                              output_tokens=int(usage.get("completion_tokens") or 0),
                              total_tokens=int(usage.get("prompt_tokens") or 0) + int(usage.get("completion_tokens") or 0))
    return output


class InspectAgent:
    """Inspect's model (the task's, or ``model``) as a finenvs chat agent (:class:`finenvs.text.chat.ChatAgent`)."""

    name = "inspect"

    def __init__(self, model: Model | None = None) -> None:
        self.model = model

    async def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ChatReply:
        model = self.model if self.model is not None else get_model()
        return chat_reply(await model.generate(inspect_messages(messages), tools=tool_infos(tools)))

    def describe(self) -> dict[str, Any]:
        model = self.model if self.model is not None else get_model()
        return {"kind": "inspect", "model": str(model)}


def scripted_outputs(family: str, **kwargs: Any) -> Any:
    """Inspect's mock model answering as the family's offline scripted agent: ``get_model("mockllm/model",
    custom_outputs=scripted_outputs("qa"))`` (offline tests and smoke runs of ``inspect eval``)."""
    agent = _spec(family).make_scripted_agent(**kwargs)

    async def output(input: list[ChatMessage], tools: list[ToolInfo], tool_choice: Any, config: Any) -> ModelOutput:
        reply = await agent.complete(_openai_messages(input), [{"type": "function", "function": t.model_dump(
            exclude_none=True)} for t in tools])
        return openai_reply(reply, getattr(agent, "name", "scripted"))

    return output


@modelapi(name="finenvs-scripted")
class ScriptedModel(ModelAPI):
    """An offline Inspect model that answers as a family's scripted agent: ``--model finenvs-scripted/<family>``
    (``inspect eval finenvs/qa --model finenvs-scripted/qa`` plays what ``finenvs llm --env FinQA-v0`` plays
    without ``--model``; nothing is downloaded or sent)."""

    def __init__(self, model_name: str, base_url: str | None = None, api_key: str | None = None,
                 config: GenerateConfig | None = None, **model_args: Any) -> None:
        super().__init__(model_name, base_url, api_key, [], config or GenerateConfig())
        self._output = scripted_outputs(model_name, **model_args)

    async def generate(self, input: list[ChatMessage], tools: list[ToolInfo], tool_choice: Any,
                       config: GenerateConfig) -> ModelOutput:
        output: ModelOutput = await self._output(input, tools, tool_choice, config)
        return output


def _openai_messages(messages: Sequence[ChatMessage]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for m in messages:
        if isinstance(m, ChatMessageAssistant):
            entry: dict[str, Any] = {"role": "assistant", "content": m.text}
            if m.tool_calls:
                entry["tool_calls"] = [{"id": c.id, "type": "function", "function": {
                    "name": c.function, "arguments": json.dumps(c.arguments)}} for c in m.tool_calls]
            out.append(entry)
        elif isinstance(m, ChatMessageTool):
            out.append({"role": "tool", "tool_call_id": m.tool_call_id, "content": m.text})
        else:
            out.append({"role": m.role, "content": m.text})
    return out


# ---------------------------------------------------------------------------- dataset, solver, scorer
def _spec(family: str) -> TaskSpec:
    for spec in tasks():
        if spec.family == family:
            return spec
    raise ValueError(f"no family {family!r}; registered: {sorted(t.family for t in tasks())}")


def _ints(value: Any) -> tuple[int, ...] | None:
    if value is None or value == "":
        return None
    items = value if isinstance(value, (list, tuple)) else str(value).split(",")
    return tuple(int(v) for v in items)


def _strs(value: Any) -> tuple[str, ...] | None:
    if value is None or value == "":
        return None
    items = value if isinstance(value, (list, tuple)) else str(value).split(",")
    return tuple(str(v).strip() for v in items if str(v).strip())


def episode_samples(spec: TaskSpec, selection: Selection, *, tools: str | None = None) -> list[Sample]:
    """One Sample per episode of the family's plan (the episode in its metadata; ``tools="none"``: closed book)."""
    samples = []
    for episode in spec.plan(selection):
        if tools is not None:
            episode = EpisodeSpec(episode.index, episode.env_id, {**episode.env_kwargs, "tools": tools},
                                  episode.seed, episode.options)
        samples.append(Sample(input=f"finenvs episode {episode.label()}", id=episode.index,
                              metadata={"episode": episode.to_dict()}))
    return samples


class _Records:
    """A trajectory writer that keeps the episode's records (the sample's own log replaces the run folder)."""

    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []

    def write(self, record: Mapping[str, Any]) -> None:
        self.records.append(dict(record))


@solver
def finenvs_agent(max_tool_calls: int | None = None, format_retries: int = 0, failure_rule: str = "default",
                  history: int = 5, tool_max_chars: int = 8_000, decision_timeout: float = 600.0) -> Solver:
    """Play the sample's episode with ``finenvs llm``'s decision loop and Inspect's model.

    Model retries are Inspect's (``--max-retries``, ``--timeout``): the loop itself retries nothing, and an
    episode never stops for endpoint failures (a failed decision takes the protocol's default, as in
    ``finenvs llm``)."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        episode = EpisodeSpec.from_dict(state.metadata["episode"])
        config = RunConfig(env_id=episode.env_id, max_tool_calls=max_tool_calls, format_retries=format_retries,
                           failure_rule=failure_rule, history=history, tool_max_chars=tool_max_chars,
                           max_retries=0, request_timeout=decision_timeout, decision_timeout=decision_timeout,
                           max_consecutive_endpoint_failures=None)
        writer = _Records()
        outcome = await run_episode(InspectAgent(), episode, config, writer=writer)  # type: ignore[arg-type]
        steps = [r for r in writer.records if r.get("type") == "step"]
        conversation: list[ChatMessage] = []
        for step in steps:
            conversation.extend(inspect_messages(step.get("messages") or []))
        if conversation:
            state.messages = conversation
        state.metadata[EPISODE_KEY] = {
            "status": outcome.status, "message": outcome.message, "decisions": outcome.decisions,
            "actions": [s.get("env_action") for s in steps], "action_names": [s.get("action") for s in steps],
            "rewards": [s.get("reward") for s in steps], "look_ahead": sum(int(s.get("look_ahead") or 0) for s in steps),
            "invalid": sum(1 for s in steps if s.get("invalid")), "record": outcome.record}
        state.completed = True
        return state

    return solve


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


@metric
def family_metrics(family: str) -> Metric:
    """The family's run metrics (:meth:`TaskSpec.metrics_of_run`, the numbers of its table columns) over the
    scored episodes."""
    spec = _spec(family)

    def compute(scores: list[SampleScore]) -> dict[str, float]:
        episodes = [s.score.metadata["metrics"] for s in scores
                    if s.score.metadata and isinstance(s.score.metadata.get("metrics"), dict)]
        run = spec.metrics_of_run(episodes) if episodes else {}
        return {c.key: float(run[c.key]) for c in spec.columns if _finite(run.get(c.key))}

    return compute


def episode_score(spec: TaskSpec, episode: EpisodeSpec, played: Mapping[str, Any] | None) -> Score:
    """The family's episode metrics of a played episode: its recorded env actions replayed into a fresh env
    (:func:`finenvs.evaluation.replay.replay_episode`, what ``finenvs score`` does; the look-ahead attempts are the
    played tool calls'). An episode that did not complete, or whose replay gives other rewards, is unscored
    (NaN)."""
    if not played or played.get("status") != "complete":
        status = "not played" if not played else played.get("status")
        return Score(value=math.nan, explanation=f"episode {status}: {(played or {}).get('message', '')}".strip())
    try:
        rewards, metrics, _ = replay_episode(episode, list(played["actions"]))
    except ReplayMismatch as exc:
        return Score(value=math.nan, explanation=f"the recorded actions do not replay: {exc}")
    differ = [k for k, (r, recorded) in enumerate(zip(rewards, played.get("rewards") or [], strict=False))
              if not same_number(r, recorded)]
    if differ or metrics is None:
        return Score(value=math.nan, explanation=f"the replay differs from the played episode at steps {differ[:10]}")
    if isinstance(metrics.get("look_ahead_attempts"), int):
        # the replay calls no tool: the look-ahead attempts are the ones the played tool calls made (finenvs score)
        metrics["look_ahead_attempts"] += int(played.get("look_ahead") or 0)
    one = spec.metrics_of_run([metrics])
    value = {c.key: float(one[c.key]) for c in spec.columns if _finite(one.get(c.key))}
    names = played.get("action_names") or []
    return Score(value=value or math.nan, answer=str(names[-1]) if names else None,
                 explanation=f"{len(names)} decision(s), {played.get('invalid', 0)} invalid; "
                 f"label {metrics.get('label')}", metadata={"metrics": metrics})


@scorer(metrics=[])
def finenvs_scorer(family: str) -> Scorer:
    """Score an episode with the family's own episode metrics (see :func:`episode_score`)."""
    spec = _spec(family)

    async def score(state: TaskState, target: Target) -> Score:
        return episode_score(spec, EpisodeSpec.from_dict(state.metadata["episode"]), state.metadata.get(EPISODE_KEY))

    return score


def family_task(family: str, *, split: str = "eval", limit: int | None = None, instances: Any = None,
                symbols: Any = None, seeds: Any = None, max_tool_calls: int | None = None, format_retries: int = 0,
                failure_rule: str = "default", tools: str | None = None, model: Any = None) -> Task:
    """The Inspect task of a family: its plan for this selection, :func:`finenvs_agent`, :func:`finenvs_scorer`."""
    spec = _spec(family)
    selection = Selection(split=split, symbols=_strs(symbols), instances=_ints(instances), limit=limit,
                          seeds=_ints(seeds) or (0,))
    scorer_ = finenvs_scorer(family)
    return Task(dataset=MemoryDataset(episode_samples(spec, selection, tools=tools), name=spec.env_id),
                solver=finenvs_agent(max_tool_calls=max_tool_calls, format_retries=format_retries,
                                     failure_rule=failure_rule),
                scorer=scorer_, metrics=[family_metrics(family)], name=family, model=model,
                metadata={"env_id": spec.env_id, "split": split})


def _register(family: str) -> Any:
    def build(split: str = "eval", limit: int | None = None, instances: Any = None, symbols: Any = None,
              seeds: Any = None, max_tool_calls: int | None = None, format_retries: int = 0,
              failure_rule: str = "default", tools: str | None = None) -> Task:
        return family_task(family, split=split, limit=limit, instances=instances, symbols=symbols, seeds=seeds,
                           max_tool_calls=max_tool_calls, format_retries=format_retries, failure_rule=failure_rule,
                           tools=tools)

    build.__name__ = build.__qualname__ = family
    build.__doc__ = f"{task_of(_spec(family).env_id).env_id}: {_spec(family).description}"
    return task(name=family)(build)


# ---------------------------------------------------------------------------- a run folder as an Inspect log
def run_eval_log(run_dir: Path | str) -> EvalLog:
    """A finenvs run folder (``finenvs llm``, ``mcp``, ``harness``) as an Inspect eval log: one sample per episode
    (its decisions' conversations as the sample's messages, each decision's prompt, action, reward and tool calls in
    its metadata), scored with the metrics ``finenvs score`` re-computes from the folder, and the family's run
    metrics as the log's results.

    Raises:
        FileNotFoundError: Not a run folder.
        ValueError: The folder cannot be read (see :func:`finenvs.evaluation.score.score_run`).
    """
    from finenvs.evaluation.runlog import RunFiles, read_trajectories
    from finenvs.evaluation.score import score_run

    files = RunFiles(Path(run_dir))
    checked = score_run(files.root, write=False)  # integrity, then every episode replayed and re-scored
    meta = checked.meta
    spec = checked.task
    if spec is None:
        raise ValueError(f"{files.root}: the run has no episodes")
    records, _ = read_trajectories(files.trajectories)
    steps: dict[int, list[dict[str, Any]]] = {}
    for record in records:
        if record.get("type") == "step" and isinstance(record.get("episode"), int):
            steps.setdefault(record["episode"], []).append(record)
    plan = {int(e["index"]): e for e in meta.get("episodes") or [] if isinstance(e, dict) and "index" in e}
    samples = []
    for episode in checked.episodes:
        own = sorted(steps.get(episode.index, []), key=lambda r: int(r.get("step") or 0))
        messages: list[ChatMessage] = []
        for step in own:
            messages.extend(inspect_messages(step.get("messages") or []
                                             or [{"role": "user", "content": str(step.get("prompt") or "")}]))
        if episode.metrics is not None:
            one = spec.metrics_of_run([episode.metrics])
            value: Any = {c.key: float(one[c.key]) for c in spec.columns if _finite(one.get(c.key))} or math.nan
        else:
            value = math.nan
        score = Score(value=value, answer=str(own[-1].get("action")) if own else None,
                      explanation=f"{episode.status}; {len(own)} decision(s); "
                      + ("reproduced" if episode.reproduced else "not reproduced: " + "; ".join(episode.mismatches[:3])),
                      metadata={"metrics": episode.metrics})
        samples.append(EvalSample(
            id=episode.index, epoch=1, input=f"finenvs episode {episode.label}", target="",
            messages=messages, scores={"finenvs_scorer": score},
            metadata={"episode": plan.get(episode.index), "status": episode.status,
                      "decisions": [{k: s.get(k) for k in ("step", "date", "action", "env_action", "invalid", "reward",
                                                          "look_ahead", "errors", "usage")}
                                    | {"tool_calls": [{k: c.get(k) for k in ("name", "arguments", "ok")}
                                                      for c in s.get("tool_calls") or [] if isinstance(c, dict)]}
                                    for s in own]}))
    scored = [e.metrics for e in checked.episodes if e.metrics is not None]
    run = spec.metrics_of_run(scored) if scored else {}
    agent = meta.get("agent") or {}
    model = str(agent.get("model") or agent.get("name") or agent.get("kind") or "unknown")
    created = str(meta.get("created_utc") or "")
    return EvalLog(
        status="success" if checked.status == "reproduced" else "error",
        eval=EvalSpec(created=created, task=spec.family, task_id=str(meta.get("run") or files.root.name),
                      dataset=EvalDataset(name=spec.env_id, samples=len(samples)),
                      model=model if "/" in model else f"finenvs/{model}", config=EvalConfig(),
                      task_args=dict(meta.get("config") or {}),
                      metadata={"finenvs_run": str(files.root), "kind": meta.get("kind"),
                                "score_status": checked.status, "signature": checked.signature}),
        results=EvalResults(total_samples=len(samples), completed_samples=len(scored), scores=[EvalScore(
            name="finenvs_scorer", scorer="finenvs_scorer",
            metrics={c.key: EvalMetric(name=c.key, value=float(run[c.key])) for c in spec.columns
                     if _finite(run.get(c.key))})]),
        stats=EvalStats(started_at=created, completed_at=str(meta.get("finished_utc") or "")),
        samples=samples)


def export_run(run_dir: Path | str, out: Path | str | None = None) -> Path:
    """Write :func:`run_eval_log` of a run folder as an Inspect log file (default: ``RUN/inspect.eval``)."""
    path = Path(out) if out is not None else Path(run_dir) / "inspect.eval"
    write_eval_log(run_eval_log(run_dir), str(path))
    return path


#: The registered Inspect tasks, by family (``inspect eval finenvs/<family>``).
TASKS: dict[str, Any] = {spec.family: _register(spec.family) for spec in tasks()}
globals().update(TASKS)  # ``inspect eval finenvs/inspect.py@qa`` finds them by name too

__all__ = ["EPISODE_KEY", "TASKS", "InspectAgent", "ScriptedModel", "chat_reply", "export_run", "run_eval_log", "episode_samples", "episode_score", "family_metrics",
           "family_task", "finenvs_agent", "finenvs_scorer", "inspect_messages", "openai_reply", "scripted_outputs",
           "tool_infos"]
