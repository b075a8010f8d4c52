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
``herculean``), ``tools`` (``none``: closed book, the commit tool only), ``env_kwargs`` (a mapping or its JSON),
``debate`` and ``debate_rule`` (FAB++'s adversarial debate round) and ``live`` (HERCULEAN's live regime): the
``finenvs llm`` flags of the same names, checked by its :class:`~finenvs.evaluation.llm.RunConfig`.

The papers' tasks (:data:`PAPER_TASKS`, :class:`PaperTask`): HERCULEAN's four workflows
(``herculean_<bench.published_block>``: ``herculean_trading``, ``herculean_hedging``, ``herculean_insights``,
``herculean_auditing``) and FAB++'s sections (``fabpp_knowledge``, ``fabpp_analysis``, ``fabpp_options``), each
with its paper's parameters read from the family's spec: symbols (``bench.herculean_labels``), splits and their
windows, env arguments (``bench.herculean_env_kwargs``; FAB++'s grading ``bench.gradings["fabpp"]`` and the
section's ``bench.fabpp_env_kwargs``), HERCULEAN's failure rule, the family's tool calls per decision, the columns
(``bench.herculean_columns``) and, where the family has one, FAB++'s debate round (``-T debate=true``).

Import this module only where ``inspect_ai`` is installed: it registers the tasks when imported (the
``inspect_ai`` entry point of the distribution names it).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from dataclasses import field as dataclass_field
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
from finenvs.tasks.spec import Column
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


def _mapping(value: Any) -> dict[str, Any]:
    """``-T env_kwargs=...``: a mapping (Inspect reads ``-T`` values as YAML) or its JSON text."""
    if value is None or value == "":
        return {}
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError as exc:
            raise ValueError(f"env_kwargs={value[:80]!r} is not a JSON object") from exc
    if not isinstance(value, Mapping):
        raise ValueError(f"env_kwargs={str(value)[:80]!r} must be a mapping of env arguments")
    return dict(value)


def _flag(name: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise ValueError(f"{name}={str(value)[:40]!r} must be true or false")


@dataclass(frozen=True)
class Play:
    """What a task plays and how: the ``finenvs llm`` settings of its episodes (see :func:`play_config`)."""

    env_id: str
    splits: tuple[str, ...]
    symbols: tuple[str, ...] | None = None
    instances: tuple[int, ...] | None = None
    limit: int | None = None
    seeds: tuple[int, ...] = (0,)
    env_kwargs: Mapping[str, Any] = dataclass_field(default_factory=dict)
    max_tool_calls: int | None = None
    format_retries: int = 0
    failure_rule: str = "default"
    live: bool = False

    def config(self, split: str) -> RunConfig:
        """The :class:`~finenvs.evaluation.llm.RunConfig` of ``finenvs llm`` that plays ``split``'s episodes (it
        checks the arguments: a debate round the family lacks, a live run of a family without a window, ...)."""
        return RunConfig(env_id=self.env_id, symbols=list(self.symbols) if self.symbols else None, split=split,
                         env_kwargs=dict(self.env_kwargs), seeds=list(self.seeds),
                         instances=list(self.instances) if self.instances is not None else None,
                         max_tool_calls=self.max_tool_calls, format_retries=self.format_retries,
                         failure_rule=self.failure_rule, live=self.live)

    def episodes(self) -> list[tuple[str, EpisodeSpec]]:
        """``(split, episode)`` of every split in turn (``finenvs llm --split S`` plays the same episodes of each),
        the first ``limit`` of them."""
        out = [(config.split or split, episode) for split in self.splits
               for config in [self.config(split)] for episode in config.episodes()]
        return out[: self.limit] if self.limit is not None else out


def play_config(spec: TaskSpec, *, split: str | None = None, default_splits: Sequence[str] = ("eval",),
                limit: int | None = None, instances: Any = None, symbols: Any = None, seeds: Any = None,
                max_tool_calls: int | None = None, format_retries: int = 0, failure_rule: str = "default",
                tools: str | None = None, env_kwargs: Any = None, base_env_kwargs: Mapping[str, Any] | None = None,
                live: Any = False, debate: Any = False, debate_rule: str | None = None) -> Play:
    """A task's arguments as a :class:`Play` (``split`` replaces ``default_splits``; ``env_kwargs`` are laid over
    ``base_env_kwargs``; ``tools="none"`` is closed book; ``debate`` FAB++'s debate round, ``debate_rule`` its
    rule)."""
    kwargs = {**(base_env_kwargs or {}), **_mapping(env_kwargs)}
    if tools is not None:
        kwargs["tools"] = str(tools)
    if _flag("debate", debate):
        kwargs["debate"] = True
    if debate_rule is not None:
        kwargs["debate_rule"] = str(debate_rule)
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise ValueError(f"limit={limit!r} must be an integer >= 1")
    play = Play(env_id=spec.env_id, splits=(split,) if split else tuple(default_splits), symbols=_strs(symbols),
                instances=_ints(instances), limit=limit, seeds=_ints(seeds) or (0,), env_kwargs=kwargs,
                max_tool_calls=max_tool_calls, format_retries=int(format_retries), failure_rule=str(failure_rule),
                live=_flag("live", live))
    for one in play.splits:
        play.config(one)  # a bad argument fails here, naming itself, before Inspect starts
    return play


def episode_samples(spec: TaskSpec, selection: Selection | Play, *, tools: str | None = None) -> list[Sample]:
    """One Sample per episode of the family's plan (the episode in its metadata; ``tools="none"``: closed book).
    Over several splits a sample's id is ``<split>-<index>``, else the episode's index."""
    if isinstance(selection, Selection):
        selection = play_config(spec, split=selection.split, limit=selection.limit, instances=selection.instances,
                                symbols=selection.symbols, seeds=selection.seeds, env_kwargs=selection.env_kwargs,
                                tools=tools)
    episodes = selection.episodes()
    several = len({split for split, _ in episodes}) > 1
    return [Sample(input=f"finenvs episode {episode.label()}", id=f"{split}-{episode.index}" if several
                   else episode.index, metadata={"episode": episode.to_dict(), "split": split})
            for split, episode in episodes]


class _Records:
    """A trajectory writer that keeps the episode's records (the sample's own log replaces the run folder)."""

    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []

    def write(self, record: Mapping[str, Any]) -> None:
        self.records.append(dict(record))


@solver
def finenvs_agent(max_tool_calls: int | None = None, format_retries: int = 0, failure_rule: str = "default",
                  history: int = 5, tool_max_chars: int = 8_000, decision_timeout: float = 600.0,
                  live: bool = False) -> Solver:
    """Play the sample's episode with ``finenvs llm``'s decision loop and Inspect's model.

    Model retries are Inspect's (``--max-retries``, ``--timeout``): the loop itself retries nothing, and an
    episode never stops for endpoint failures (a failed decision takes the protocol's default, as in
    ``finenvs llm``). ``failure_rule="herculean"``: HERCULEAN's five attempts, then the episode fails (unscored).
    ``live``: the live regime (an episode plays to the newest bar and waits there with its decision recorded)."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        episode = EpisodeSpec.from_dict(state.metadata["episode"])
        config = RunConfig(env_id=episode.env_id, max_tool_calls=max_tool_calls, format_retries=format_retries,
                           failure_rule=failure_rule, history=history, tool_max_chars=tool_max_chars,
                           max_retries=0, request_timeout=decision_timeout, decision_timeout=decision_timeout,
                           max_consecutive_endpoint_failures=None, live=live)
        writer = _Records()
        outcome = await run_episode(InspectAgent(), episode, config, writer=writer)  # type: ignore[arg-type]
        steps = [r for r in writer.records if r.get("type") == "step"]
        pending = [r for r in writer.records if r.get("type") == "pending"]
        conversation: list[ChatMessage] = []
        for step in (*steps, *pending):
            conversation.extend(inspect_messages(step.get("messages") or []))
        if conversation:
            state.messages = conversation
        state.metadata[EPISODE_KEY] = {
            "status": outcome.status, "message": outcome.message, "decisions": outcome.decisions,
            "actions": [s.get("env_action") for s in steps], "action_names": [s.get("action") for s in steps],
            "rewards": [s.get("reward") for s in steps], "look_ahead": sum(int(s.get("look_ahead") or 0) for s in steps),
            "invalid": sum(1 for s in steps if s.get("invalid")), "record": outcome.record,
            "pending": [{k: p.get(k) for k in ("date", "action", "env_action")} for p in pending]}
        state.completed = True
        return state

    return solve


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


#: Run metrics a debated run adds (:meth:`TaskSpec.metrics_of_run`): the mean debated score (0-100) and multiplier.
DEBATE_KEYS = ("debated_score", "debate_multiplier")


def metric_keys(spec: TaskSpec, columns: Sequence[Column] | None = None) -> list[str]:
    """The run metrics a task reports: its columns' (default: the family's) and, when debated, the debate's."""
    return [*(c.key for c in (columns or spec.columns)), *DEBATE_KEYS]


def _values(run: Mapping[str, Any], keys: Sequence[str]) -> dict[str, float]:
    return {k: float(run[k]) for k in keys if _finite(run.get(k))}


@metric
def family_metrics(family: str, keys: list[str] | None = None) -> Metric:
    """The family's run metrics (:meth:`TaskSpec.metrics_of_run`) over the scored episodes: ``keys`` (default: its
    table columns' and the debate's, :func:`metric_keys`)."""
    spec = _spec(family)
    wanted = list(keys) if keys else metric_keys(spec)

    def compute(scores: list[SampleScore]) -> dict[str, float]:
        episodes = [s.score.metadata["metrics"] for s in scores
                    if s.score.metadata and isinstance(s.score.metadata.get("metrics"), dict)]
        return _values(spec.metrics_of_run(episodes), wanted) if episodes else {}

    return compute


def episode_score(spec: TaskSpec, episode: EpisodeSpec, played: Mapping[str, Any] | None,
                  keys: Sequence[str] | None = None) -> Score:
    """The family's episode metrics of a played episode: its recorded env actions replayed into a fresh env
    (:func:`finenvs.evaluation.replay.replay_episode`, what ``finenvs score`` does; the look-ahead attempts are the
    played tool calls'). An episode that did not complete (failed under HERCULEAN's rule, a live episode waiting
    for its next bar), or whose replay gives other rewards, is unscored (NaN), as in ``finenvs score``."""
    if not played or played.get("status") != "complete":
        status = "not played" if not played else played.get("status")
        if status == "waiting":  # Inspect keeps no run folder to resume: the live loop that goes on is finenvs llm's
            pending = (played or {}).get("pending") or [{}]
            return Score(value=math.nan, explanation=f"episode waiting for the bar after {pending[-1].get('date')} "
                         "(the live window is not over): unscored; its pending decision is in the sample's metadata. "
                         "finenvs llm --live --resume RUN continues a live episode day by day")
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
    value = _values(spec.metrics_of_run([metrics]), list(keys) if keys else metric_keys(spec))
    names = played.get("action_names") or []
    return Score(value=value or math.nan, answer=str(names[-1]) if names else None,
                 explanation=f"{len(names)} decision(s), {played.get('invalid', 0)} invalid; "
                 f"label {metrics.get('label')}", metadata={"metrics": metrics})


@scorer(metrics=[])
def finenvs_scorer(family: str, keys: list[str] | None = None) -> Scorer:
    """Score an episode with the family's own episode metrics (see :func:`episode_score`)."""
    spec = _spec(family)

    async def score(state: TaskState, target: Target) -> Score:
        return episode_score(spec, EpisodeSpec.from_dict(state.metadata["episode"]), state.metadata.get(EPISODE_KEY),
                             keys)

    return score


def _task(spec: TaskSpec, play: Play, *, name: str, keys: list[str], model: Any = None,
          metadata: Mapping[str, Any] | None = None) -> Task:
    return Task(dataset=MemoryDataset(episode_samples(spec, play), name=spec.env_id),
                solver=finenvs_agent(max_tool_calls=play.max_tool_calls, format_retries=play.format_retries,
                                     failure_rule=play.failure_rule, live=play.live),
                scorer=finenvs_scorer(spec.family, keys), metrics=[family_metrics(spec.family, keys)], name=name,
                model=model, metadata={"env_id": spec.env_id,
                                       "splits": [play.config(split).split or split for split in play.splits],
                                       "env_kwargs": dict(play.env_kwargs), "failure_rule": play.failure_rule,
                                       "max_tool_calls": play.config(play.splits[0]).tool_budget, "live": play.live,
                                       **(metadata or {})})


def family_task(family: str, *, split: str = "eval", limit: int | None = None, instances: Any = None,
                symbols: Any = None, seeds: Any = None, max_tool_calls: int | None = None, format_retries: int = 0,
                failure_rule: str = "default", tools: str | None = None, env_kwargs: Any = None, live: Any = False,
                debate: Any = False, debate_rule: str | None = None, model: Any = None) -> Task:
    """The Inspect task of a family: its plan for this selection, :func:`finenvs_agent`, :func:`finenvs_scorer`
    (the arguments are ``finenvs llm``'s flags of the same names)."""
    spec = _spec(family)
    play = play_config(spec, split=split, limit=limit, instances=instances, symbols=symbols, seeds=seeds,
                       max_tool_calls=max_tool_calls, format_retries=format_retries, failure_rule=failure_rule,
                       tools=tools, env_kwargs=env_kwargs, live=live, debate=debate, debate_rule=debate_rule)
    return _task(spec, play, name=family, keys=metric_keys(spec), model=model)


# ---------------------------------------------------------------------------- the papers' tasks
#: HERCULEAN's rule for an answer that never parses: five attempts, then the episode fails (``finenvs llm
#: --herculean-rule``); the named HERCULEAN tasks play under it.
HERCULEAN_FAILURE_RULE = "herculean"
#: FAB++'s grading of its Analysis tasks (methodology 30 / calculation 30 / answer 40): the key of a family's
#: ``bench.gradings`` that the named FAB++ tasks play with (``finenvs bench --analysis-grading``'s default).
FABPP_GRADING = "fabpp"


@dataclass(frozen=True)
class PaperTask:
    """A HERCULEAN workflow or a FAB++ section as a named Inspect task, every parameter read from the family's spec.

    Attributes:
        name: The Inspect task (``herculean_<bench.published_block>``, ``fabpp_<section>``).
        suite: ``"herculean"`` or ``"fabpp"``.
        part: The workflow (``bench.herculean``) or the FAB++ section.
        family: The family that plays it.
        splits: The splits it plays by default: HERCULEAN's backtest window (``eval``, its Table 2; ``-T split=live``
            is Table 3's window); a FAB++ section's: the bench's ``eval`` and the family's ``bench.extra_splits``
            whose plan has tasks of the section.
        symbols: The paper's symbols (``bench.herculean_labels``; None: the family's plan, e.g. FinHedging-v0's
            8-stock universe).
        env_kwargs: The paper's env arguments (``bench.herculean_env_kwargs``; FAB++'s: its Analysis grading
            ``bench.gradings["fabpp"]`` and the section's ``bench.fabpp_env_kwargs``).
        failure_rule: HERCULEAN's rule (:data:`HERCULEAN_FAILURE_RULE`) or the protocol's default action.
        columns: The metrics it reports (``bench.herculean_columns`` for HERCULEAN, the family's columns for FAB++).
        debate: The family has FAB++'s adversarial debate round (``-T debate=true`` plays it).
    """

    name: str
    suite: str
    part: str
    family: str
    splits: tuple[str, ...]
    symbols: tuple[str, ...] | None
    env_kwargs: Mapping[str, Any]
    failure_rule: str
    columns: tuple[Column, ...]
    debate: bool = False

    def build(self, *, split: str | None = None, limit: int | None = None, instances: Any = None,
              symbols: Any = None, seeds: Any = None, max_tool_calls: int | None = None, format_retries: int = 0,
              failure_rule: str | None = None, tools: str | None = None, env_kwargs: Any = None, live: Any = False,
              debate: Any = False, debate_rule: str | None = None, model: Any = None) -> Task:
        """The task with these arguments over the paper's (any argument left out keeps the paper's value)."""
        spec = _spec(self.family)
        if _flag("debate", debate) and not self.debate:
            raise ValueError(f"{self.name}: {spec.env_id} has no debate round; FAB++'s debate is for "
                             + ", ".join(t.env_id for t in tasks() if t.debate is not None))
        play = play_config(spec, split=split, default_splits=self.splits, limit=limit, instances=instances,
                           symbols=symbols if symbols is not None else self.symbols, seeds=seeds,
                           max_tool_calls=max_tool_calls, format_retries=format_retries,
                           failure_rule=failure_rule or self.failure_rule, tools=tools, env_kwargs=env_kwargs,
                           base_env_kwargs=self.env_kwargs, live=live, debate=debate, debate_rule=debate_rule)
        return _task(spec, play, name=self.name, keys=metric_keys(spec, self.columns), model=model,
                     metadata={"suite": self.suite, "part": self.part, "windows": _windows(spec, play)})


def _windows(spec: TaskSpec, play: Play) -> dict[str, list[str | None]]:
    """The date window of each named split a family with windows (``start``/``end``) plays: the split's own, or
    the ``start``/``end`` given (``latest``: the newest bar)."""
    from finenvs.data.splits import SPLITS, split_bounds

    out: dict[str, list[str | None]] = {}
    if "end" not in spec.run_options:
        return out
    for split in play.splits:
        split = play.config(split).split or split
        if split in SPLITS:
            kwargs = play.config(split).env_kwargs
            start, end = split_bounds(split, kwargs.get("start"), kwargs.get("end"))
            out[split] = [None if start is None else str(start), "latest" if end is None else str(end)]
    return out


def _section_splits(spec: TaskSpec, section: str, kwargs: Mapping[str, Any]) -> tuple[str, ...]:
    """The bench's split and the family's further splits whose plan holds tasks of ``section``."""
    out = ["eval"]
    for split in spec.bench.extra_splits:
        try:
            if spec.plan(Selection(split=split, env_kwargs=dict(kwargs))):
                out.append(split)
        except ValueError:  # the family refuses the section on that split (FinQA-v0's fab_public: knowledge only)
            continue
    return tuple(out)


def paper_tasks() -> dict[str, PaperTask]:
    """HERCULEAN's four workflows and FAB++'s sections, by task name, from the registered families' specs."""
    out: dict[str, PaperTask] = {}
    for spec in tasks():
        bench = spec.bench
        if bench.herculean:
            name = f"herculean_{bench.published_block or spec.family}"
            out[name] = PaperTask(name, "herculean", bench.herculean, spec.family, ("eval",),
                                  tuple(bench.herculean_labels) or None, dict(bench.herculean_env_kwargs),
                                  HERCULEAN_FAILURE_RULE, tuple(bench.herculean_columns or spec.columns))
        for section in bench.fabpp_sections:
            kwargs = {**bench.gradings.get(FABPP_GRADING, {}), **bench.fabpp_env_kwargs.get(section, {})}
            name = f"fabpp_{section}"
            out[name] = PaperTask(name, "fabpp", section, spec.family, _section_splits(spec, section, kwargs), None,
                                  kwargs, "default", tuple(spec.columns), spec.debate is not None)
    return out


def _register(family: str) -> Any:
    def build(split: str = "eval", limit: int | None = None, instances: Any = None, symbols: Any = None,
              seeds: Any = None, max_tool_calls: int | None = None, format_retries: int = 0,
              failure_rule: str = "default", tools: str | None = None, env_kwargs: Any = None, live: bool = False,
              debate: bool = False, debate_rule: str | None = None) -> Task:
        return family_task(family, split=split, limit=limit, instances=instances, symbols=symbols, seeds=seeds,
                           max_tool_calls=max_tool_calls, format_retries=format_retries, failure_rule=failure_rule,
                           tools=tools, env_kwargs=env_kwargs, live=live, debate=debate, debate_rule=debate_rule)

    build.__name__ = build.__qualname__ = family
    build.__doc__ = f"{task_of(_spec(family).env_id).env_id}: {_spec(family).description}"
    return task(name=family)(build)


def _register_paper(paper: PaperTask) -> Any:
    def build(split: str | None = None, limit: int | None = None, instances: Any = None, symbols: Any = None,
              seeds: Any = None, max_tool_calls: int | None = None, format_retries: int = 0,
              failure_rule: str | None = None, tools: str | None = None, env_kwargs: Any = None, live: bool = False,
              debate: bool = False, debate_rule: str | None = None) -> Task:
        return paper.build(split=split, limit=limit, instances=instances, symbols=symbols, seeds=seeds,
                           max_tool_calls=max_tool_calls, format_retries=format_retries, failure_rule=failure_rule,
                           tools=tools, env_kwargs=env_kwargs, live=live, debate=debate, debate_rule=debate_rule)

    build.__name__ = build.__qualname__ = paper.name
    build.__doc__ = (f"{paper.suite.upper() if paper.suite == 'fabpp' else 'HERCULEAN'} {paper.part} "
                     f"({_spec(paper.family).env_id}) with the paper's parameters")
    return task(name=paper.name)(build)


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
#: HERCULEAN's workflows and FAB++'s sections with their papers' parameters (``inspect eval finenvs/fabpp_analysis``).
PAPER_TASKS: dict[str, PaperTask] = paper_tasks()
TASKS: dict[str, Any] = {spec.family: _register(spec.family) for spec in tasks()}
TASKS.update({name: _register_paper(paper) for name, paper in PAPER_TASKS.items()})
globals().update(TASKS)  # ``inspect eval finenvs/inspect.py@qa`` finds them by name too

__all__ = ["DEBATE_KEYS", "EPISODE_KEY", "FABPP_GRADING", "HERCULEAN_FAILURE_RULE", "PAPER_TASKS", "TASKS",
           "InspectAgent", "PaperTask", "Play", "ScriptedModel", "chat_reply", "episode_samples", "episode_score",
           "export_run", "family_metrics", "family_task", "finenvs_agent", "finenvs_scorer", "inspect_messages",
           "metric_keys", "openai_reply", "paper_tasks", "play_config", "run_eval_log", "scripted_outputs",
           "tool_infos"]
