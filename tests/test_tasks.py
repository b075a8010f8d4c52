"""The TaskSpec conformance suite: every registered family through every agent path.

Rows: the families. Columns: the offline scripted agent via ``finenvs llm``, the real OpenAI client
against the test chat server, an MCP client session, an A2A round trip, ``finenvs score`` re-scoring,
and the bench with a model. Last, a toy family declared in this file alone works through ``list``,
``run``, ``llm``, ``mcp``, ``score`` and ``bench`` without touching any other file.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
from dataclasses import dataclass, replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

import finenvs
from finenvs.cli import main
from finenvs.data.asof import LookAheadCounter
from finenvs.evaluation.agents import ScriptedRouter
from finenvs.evaluation.llm import RunConfig, drive_mcp_episode, run_llm
from finenvs.evaluation.runlog import read_trajectories
from finenvs.evaluation.score import score_run
from finenvs.tasks import (
    BenchSection,
    Column,
    RunFlag,
    Selection,
    TaskSpec,
    finish_plan,
    register_task,
    tasks,
    unregister_task,
)
from finenvs.tasks.section import Section
from finenvs.text.chat import ChatReply, ScriptedChatAgent
from finenvs.text.protocol import PrintableText, TextProtocol
from finenvs.tools import Tool

SPECS = {t.family: t for t in tasks()}
FAMILIES = list(SPECS)


def one_episode(family: str) -> RunConfig:
    """The first episode of a family's default plan on the eval split (the conformance runs)."""
    return RunConfig(env_id=SPECS[family].env_id, split="eval", limit=1, concurrency=1)


def steps_of(run_dir: Path) -> list[dict[str, Any]]:
    records, dropped = read_trajectories(Path(run_dir) / "trajectories.jsonl")
    assert dropped == 0
    return [r for r in records if r["type"] == "step"]


class ReferenceRuns(dict):
    """Each family's scripted agent through ``run_llm`` in process, made on first use: the reference run of every
    other path."""

    def __init__(self, out: Path) -> None:
        super().__init__()
        self.out = out

    def __missing__(self, family: str) -> Path:
        summary = run_llm(one_episode(family), SPECS[family].make_scripted_agent(), out=self.out, name=family,
                          progress=False)
        assert summary.status == "complete", (family, [o.message for o in summary.outcomes])
        self[family] = summary.run_dir
        return summary.run_dir


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> ReferenceRuns:
    return ReferenceRuns(tmp_path_factory.mktemp("conformance"))


@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_has_a_registered_text_variant_built_by_the_one_wrapper(family):
    task = SPECS[family]
    env = gym.make(task.text_env_id)
    assert isinstance(env.observation_space, PrintableText) and isinstance(env.action_space, PrintableText)
    prompt, _ = env.reset(seed=0, options=task.plan(Selection(split="eval", limit=1))[0].options)
    assert prompt.startswith(f"# {task.env_id}") and env.observation_space.contains(prompt)
    names = [t["function"]["name"] for t in env.tool_specs()]
    assert names[-1] == "commit_action" and len(names) >= 2
    assert finenvs.task_of(task.text_env_id) is task and gym.spec(task.text_env_id).to_json()


@pytest.mark.parametrize("split", ["train", "eval", "live"])
@pytest.mark.parametrize("family", FAMILIES)
def test_every_split_a_plan_gives_resets_its_first_and_last_episode(family, split):
    """A family's plan of a split it runs is playable: its episodes reset with their own arguments and options (a
    split the family does not run is refused by name when planned, before any work)."""
    try:
        plan = SPECS[family].plan(Selection(split=split))
    except ValueError as exc:
        assert split in str(exc)
        return
    assert plan
    for episode in {plan[0].index: plan[0], plan[-1].index: plan[-1]}.values():
        env = gym.make(episode.env_id, **episode.env_kwargs)
        try:
            _, info = env.reset(seed=episode.seed, options=episode.options)
            assert isinstance(info, dict)
        finally:
            env.close()


@pytest.mark.parametrize("family", FAMILIES)
def test_base_envs_take_only_their_declared_action_space(family):
    task = SPECS[family]
    env = gym.make(task.env_id)
    episode = task.plan(Selection(split="eval", limit=1))[0]
    env.reset(seed=0, options=episode.options)
    if isinstance(env.action_space, spaces.Text):  # a text task: any reply is in its space (bad ones score 0)
        assert env.action_space.contains("x")
    else:
        with pytest.raises((ValueError, TypeError)):
            env.step("Action: BUY")


@pytest.mark.parametrize("family", FAMILIES)
def test_scripted_agent_through_llm_is_valid_and_score_reproduces_it_exactly(runs, family):
    steps = steps_of(runs[family])
    assert steps and all(s["invalid"] is None for s in steps), [s["invalid"] for s in steps if s["invalid"]][:3]
    assert all(s["look_ahead"] == 0 for s in steps)
    score = score_run(runs[family])
    assert score.reproduced and score.episodes[0].status == "complete"
    assert score.run_metrics() is not None and score.task is SPECS[family]
    assert sum(e.reparse_mismatches for e in score.episodes) == 0


@pytest.mark.parametrize("family", FAMILIES)
def test_the_episode_section_is_the_same_in_every_prompt_of_an_episode(runs, family):
    """The state lines a protocol declares constant over an episode (``episode_labels``) are written once per episode,
    before the recent decisions, byte-identical in every decision's prompt: the prefix providers' caches reuse."""
    protocol = gym.make(SPECS[family].text_env_id).get_wrapper_attr("protocol")
    prompts = [step["prompt"] for step in steps_of(runs[family])]
    sections = {p.split("\n## Episode\n", 1)[1].split("\n\n", 1)[0] if "\n## Episode\n" in p else None for p in prompts}
    if not protocol.episode_labels:
        assert sections == {None}
        return
    (section,) = sections  # one section over the episode
    assert section is not None and [line.split(": ", 1)[0] for line in section.split("\n")] == list(
        protocol.episode_labels)
    for prompt in prompts:
        assert prompt.index("## Episode") < prompt.index("## Now") and (
            "## Recent decisions" not in prompt or prompt.index("## Episode") < prompt.index("## Recent decisions"))
        now = prompt.split("\n## Now\n", 1)[1]
        assert not any(line.split(": ", 1)[0] in protocol.episode_labels for line in now.split("\n"))


@pytest.mark.parametrize("family", FAMILIES)
def test_score_says_what_differs_in_a_tampered_run(runs, family, tmp_path):
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(runs[family], copy)
    lines = (copy / "trajectories.jsonl").read_text().splitlines()
    first = json.loads(lines[0])
    first["reward"] = (first["reward"] or 0.0) + 0.5
    lines[0] = json.dumps(first)
    (copy / "trajectories.jsonl").write_text("\n".join(lines) + "\n")
    score = score_run(copy, write=False)
    assert not score.reproduced and any("step 0" in m for m in score.episodes[0].mismatches)


@pytest.fixture(scope="module")
def chat_server():
    pytest.importorskip("openai")
    from chat_server import ChatServer

    with ChatServer() as server:
        yield server


@pytest.mark.parametrize("family", FAMILIES)
def test_openai_client_against_the_test_server_gives_the_same_run(runs, chat_server, family, tmp_path):
    from finenvs.evaluation.endpoints import OpenAIChatAgent

    agent = OpenAIChatAgent("scripted", chat_server.base_url, timeout=30.0)
    summary = run_llm(one_episode(family), agent, out=tmp_path, name="http", progress=False)
    assert summary.status == "complete"
    ours, theirs = steps_of(runs[family]), steps_of(summary.run_dir)
    assert [s["env_action"] for s in theirs] == [s["env_action"] for s in ours]
    assert [s["reward"] for s in theirs] == [s["reward"] for s in ours]
    assert all(s["usage"]["prompt_tokens"] > 0 for s in theirs)
    assert score_run(summary.run_dir).reproduced


@pytest.mark.parametrize("family", FAMILIES)
def test_an_mcp_client_session_plays_the_episode_and_the_score_file_is_written(runs, family, tmp_path):
    pytest.importorskip("mcp")
    from mcp import Client

    from finenvs.evaluation.mcp_server import McpEpisode, build_server

    task = SPECS[family]
    episode = McpEpisode(task.plan(Selection(split="eval", limit=1))[0], out=tmp_path, name="mcp")

    async def play():
        async with Client(build_server(episode)) as client:
            listed = [t.name for t in (await client.list_tools()).tools]
            observed = await client.call_tool("get_observation", {})
            other = next(n for n in listed if n not in ("get_observation", "commit_action"))
            tool = await client.call_tool(other, {})  # an error result is fine: it must not break the session
            replies = await drive_mcp_episode(ScriptedRouter(), client, episode.protocol)
            return listed, observed, tool, replies

    try:
        listed, observed, tool, replies = asyncio.run(play())
    finally:
        episode.close()
    assert {"get_observation", "commit_action"} <= set(listed)
    assert observed.structured_content["observation"].startswith(f"# {task.env_id}")
    assert tool.content and replies[-1]["done"] and replies[-1]["reproduced_offline"] is True
    assert (tmp_path / "mcp" / "score.json").is_file()
    ours = steps_of(runs[family])
    assert [s["env_action"] for s in steps_of(tmp_path / "mcp")] == [s["env_action"] for s in ours]
    score = json.loads((tmp_path / "mcp" / "score.json").read_text())
    assert score["efficiency"]["tokens"] is None  # an MCP client reports no tokens: n/a, never 0


@pytest.fixture(scope="module")
def a2a_url():
    pytest.importorskip("a2a")
    from finenvs.evaluation.a2a import serve_a2a

    with serve_a2a(ScriptedRouter(), name="finenvs-scripted") as url:
        yield url


@pytest.mark.parametrize("family", FAMILIES)
def test_an_a2a_round_trip_gives_the_same_run(runs, a2a_url, family, tmp_path):
    from finenvs.evaluation.a2a import A2AChatAgent

    summary = run_llm(one_episode(family), A2AChatAgent(a2a_url, timeout=30.0), out=tmp_path, name="a2a",
                      progress=False)
    assert summary.status == "complete"
    assert [s["env_action"] for s in steps_of(summary.run_dir)] == [s["env_action"] for s in steps_of(runs[family])]
    assert score_run(summary.run_dir).reproduced


@pytest.mark.parametrize("family", FAMILIES)
def test_cli_llm_accepts_the_text_id_and_runs_the_family_offline(family, tmp_path, capsys):
    task = SPECS[family]
    code = main(["llm", "--env", task.text_env_id, "--limit", "1", "--out", str(tmp_path), "--name", "cli"])
    out = capsys.readouterr().out
    assert code == 0 and "the live scores exactly" in out
    assert main(["score", str(tmp_path / "cli")]) == 0


def published_table(path: Path, live: bool) -> Path:
    """A small file in HERCULEAN's published-results format (two configurations; one failed: null)."""
    configs = [{"agent": "ReAct Agent", "model": "m1"}, {"agent": "Codex", "model": "m2"}]
    trading = {"AAPL": {"CR": [1.5, None], "SR": [0.5, None], "MDD": [4.0, None],
                        "BL": {"CR": -6.31, "SR": -0.96, "MDD": 11.24}}}
    doc = {"configs": configs, "trading": trading} if live else {
        "configs": configs, "raw": {"trading": trading, "auditing": {"ACC": [60.0, 20.0], "SER": [0.0, 0.0],
                                                                     "EER": [10.0, 0.0], "CER": [30.0, 80.0]}}}
    path.write_text(json.dumps(doc))
    return path


def test_published_results_load_as_rows_of_their_regime(tmp_path):
    from finenvs.evaluation.agent_runs import PUBLISHED_BASELINE, load_published

    regime, tables = load_published(published_table(tmp_path / "t2.json", live=False))
    assert regime == "backtest" and set(tables) == {"Trading", "Auditing"}
    assert tables["Trading"]["ReAct Agent / m1 (published)"]["AAPL"] == pytest.approx(
        {"h_cumulative_return": 0.015, "h_sharpe": 0.5, "h_max_drawdown": 0.04})
    assert tables["Trading"]["Codex / m2 (published)"]["AAPL"] is None  # the paper's "—"
    assert tables["Trading"][PUBLISHED_BASELINE]["AAPL"]["h_sharpe"] == -0.96
    assert tables["Auditing"]["Codex / m2 (published)"]["all"]["CER"] == pytest.approx(0.8)
    assert load_published(published_table(tmp_path / "t3.json", live=True))[0] == "live"
    (tmp_path / "bad.json").write_text("[1, 2]")
    with pytest.raises(ValueError, match="not a HERCULEAN published-results file"):
        load_published(tmp_path / "bad.json")


@pytest.mark.parametrize("suite", ["herculean", "fabpp"])
def test_bench_with_a_model_puts_it_beside_the_baselines_in_every_section(chat_server, suite, tmp_path, capsys):
    """``finenvs bench --base-url --model``: the model is an agent of every family of the suite, in HERCULEAN's
    Table 2 and 3 layout (with the paper's published rows) or FAB++'s aggregate, beside the baselines and the
    scripted agents."""
    published = [str(published_table(tmp_path / "t2.json", False)), str(published_table(tmp_path / "t3.json", True))]
    code = main(["bench", "--suite", suite, "--base-url", chat_server.base_url, "--model", "router", "--symbols",
                 "AAPL", "--agent-limit", "1", "--out", str(tmp_path), "--name", suite, "--no-plots",
                 "--no-html", "--herculean-published", *published])
    out = capsys.readouterr().out
    assert code == 0
    card = json.loads((tmp_path / suite / "scorecard.json").read_text())
    families = {t.family for t in SPECS.values() if suite in t.bench.suites}
    model_runs = [r for r in card["agents"] if r["agent"] == "router"]
    assert {r["family"] for r in model_runs} == families and all(r["reproduced"] for r in model_runs)
    assert all(r["signature"] == "signed" for r in model_runs)
    assert all(r["metrics"] is not None and len(r["episodes"]) == 1 for r in model_runs)
    md = (tmp_path / suite / "scorecard.md").read_text()
    assert all(f"### {SPECS[f].env_id}: agents through the text interface" in md for f in families)
    assert " | yes, signed |" in re.sub(" +", " ", md)  # the agents tables show each run's signature verdict
    if suite == "herculean":
        for split in ("eval", "live"):
            tables = card["herculean"][split]
            assert {t["workflow"] for t in tables} == {"Trading", "Hedging", "Market Insights", "Auditing"} - (
                {"Auditing"} if split == "live" else set())
            assert all("router" in [row["agent"] for row in t["rows"]] for t in tables)
        trading = next(t for t in card["herculean"]["eval"] if t["workflow"] == "Trading")
        agents = [row["agent"] for row in trading["rows"]]
        assert agents[0] == "buy_and_hold (BL)" and agents[-2:] == ["scripted_agent", "router"]
        assert {"Buy&Hold (published)", "ReAct Agent / m1 (published)", "Codex / m2 (published)"} <= set(agents)
        live = next(t for t in card["herculean"]["live"] if t["workflow"] == "Trading")
        assert "ReAct Agent / m1 (published)" in [row["agent"] for row in live["rows"]]
        assert "Table 2 (backtest): Trading" in out and "Table 3 (live): Market Insights" in out
        assert "| Codex / m2 (published) | — | — | — |" in re.sub(" +", " ", out)  # the paper's "—" stays "—"
    else:
        profiles = card["aggregate"]["profiles"]
        assert {"reference", "naive", "random", "scripted_agent", "router"} <= set(profiles)
        assert profiles["router"]["overall"] is not None
        assert "| router " in out


def test_evaluate_is_finenvs_llm_in_one_call(tmp_path):
    from finenvs.evaluation import evaluate

    score = evaluate("FinQA-text-v0", limit=2, out=tmp_path, name="api", progress=False)
    assert score.reproduced and score.run_metrics()["score"] == 100.0 and len(score.episodes) == 2


def test_the_llm_agents_page_shows_the_agent_matrix_of_the_registered_specs():
    from finenvs.cli.list import agent_matrix

    page = (Path(__file__).resolve().parent.parent / "docs" / "llm-agents.md").read_text()
    assert agent_matrix() in page


def test_own_agent_loop_example_runs_every_family():
    import importlib.util

    path = Path(__file__).resolve().parent.parent / "examples" / "own_agent_loop.py"
    spec = importlib.util.spec_from_file_location("own_agent_loop", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for family, task in SPECS.items():
        result = module.play(task.text_env_id, ScriptedRouter(), seed=0)
        assert result["decisions"] >= 1 and result["format_errors"] == 0, (family, result)


# ---------------------------------------------------------------------------- a toy family, declared here alone
TOY_ROUNDS = 3


class ToyEnv(gym.Env):
    """Say the number shown, three rounds; reward 1 per right answer."""

    metadata = {"render_modes": []}
    text_protocol = TextProtocol(task="FinToy-v0", instructions="Say the number you are shown.",
                                 actions={"ZERO": 0, "ONE": 1, "TWO": 2}, default="ZERO",
                                 default_reason="ZERO is a guess like any other")

    def __init__(self, split: str = "eval", render_mode: str | None = None) -> None:
        self.observation_space = spaces.Box(0.0, 2.0, (1,), np.float32)
        self.action_space = spaces.Discrete(3)
        self.counter = LookAheadCounter()
        self.targets: np.ndarray | None = None
        self.k = 0

    @property
    def target(self) -> int:
        return int(self.targets[self.k]) if self.k < TOY_ROUNDS else 0

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        self.targets, self.k = self.np_random.integers(0, 3, TOY_ROUNDS), 0
        return np.array([self.target], np.float32), {"date": "round 0"}

    def step(self, action: Any):
        if not self.action_space.contains(action):
            raise ValueError(f"action {action!r} is not in Discrete(3)")
        correct = int(action) == self.target
        self.k += 1
        done = self.k == TOY_ROUNDS
        obs = np.array([0.0 if done else self.target], np.float32)
        return obs, float(correct), done, False, {"date": f"round {self.k}", "correct": correct}

    def text_state(self) -> dict[str, str]:
        return {"Round": str(self.k), "Number": str(self.target)}

    def as_of_view(self) -> Any:
        return SimpleNamespace(counter=self.counter)


@dataclass
class ToyAgent(ScriptedChatAgent):
    """Reads the number with the toy's tool, then commits it."""

    name: str = "scripted-toy"

    def reply(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ChatReply:
        names, results, round_no = self._turn(messages, tools)
        if "get_number" not in results:
            return self._calls(round_no, ("get_number", {}))
        word = ("ZERO", "ONE", "TWO")[int(results["get_number"]["number"])]
        return self._calls(round_no, ("commit_action", {"action": word}))


class Echo:
    """Says the number in the observation."""

    def __call__(self, obs: np.ndarray, info: dict[str, Any]) -> int:
        return int(obs[0])


def toy_plan(selection: Selection):
    return finish_plan([("FinToy-v0", {"split": selection.split}, selection.seeds[0] + i, None) for i in range(2)],
                       selection)


TOY_TOOLS = (Tool("get_number", "The number shown now.", {"type": "object", "properties": {},
                                                          "additionalProperties": False},
                  lambda ctx: {"number": ctx.env.target}),)

TOY = TaskSpec(
    family="toy", env_id="FinToy-v0", text_env_id="FinToy-text-v0", description="Say the number shown.",
    env=ToyEnv, kwargs={"split": "eval"}, plan=toy_plan,
    episode_metrics=lambda env, reset, infos: {"label": "toy", "score": sum(i["correct"] for i in infos)},
    run_metrics=lambda eps: {"score": sum(e["score"] for e in eps) / len(eps)},
    columns=(Column("score", "Score"),), scripted_agent=ToyAgent, baselines={"echo": (Echo, "says the number")},
    tools=TOY_TOOLS, bench=BenchSection(title="Toy", suites=("toy",)),
)


@pytest.fixture()
def toy():
    register_task(TOY)
    yield TOY
    unregister_task("toy")


def test_a_toy_family_declared_in_this_file_works_through_every_command(toy, tmp_path, capsys):
    assert main(["list"]) == 0
    assert "FinToy-v0" in capsys.readouterr().out
    assert main(["run", "--env", "FinToy-v0", "--policy", "echo"]) == 0
    assert "Score 3.00" in capsys.readouterr().out
    assert main(["llm", "--env", "FinToy-v0", "--out", str(tmp_path), "--name", "toy"]) == 0
    assert "Score 3.00" in capsys.readouterr().out
    assert main(["score", str(tmp_path / "toy")]) == 0
    assert score_run(tmp_path / "toy").run_metrics() == {"score": 3.0}

    pytest.importorskip("mcp")
    from mcp import Client

    from finenvs.evaluation.mcp_server import McpEpisode, build_server

    episode = McpEpisode(toy.plan(Selection())[0], out=tmp_path, name="toy-mcp")

    async def play():
        async with Client(build_server(episode)) as client:
            return await drive_mcp_episode(ToyAgent(), client, episode.protocol)

    replies = asyncio.run(play())
    episode.close()
    assert replies[-1]["done"] and replies[-1]["metrics"] == {"score": 3.0}
    assert main(["bench", "--envs", "FinToy-v0", "--out", str(tmp_path), "--name", "bench", "--quiet",
                 "--no-plots", "--no-html"]) == 0
    card = json.loads((tmp_path / "bench" / "scorecard.json").read_text())
    assert card["sections"]["toy"]["policies"]["echo"] == {"score": 3.0}
    assert [(r["agent"], r["metrics"]) for r in card["agents"]] == [("scripted_agent", {"score": 3.0})]


class OptionsToyEnv(ToyEnv):
    """The toy env, recording the reset options of every episode."""

    seen: list[dict[str, Any] | None] = []

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        OptionsToyEnv.seen.append(options)
        return super().reset(seed=seed, options=options)


def test_a_family_declares_its_own_run_flags(toy, capsys):
    """``finenvs run`` offers the flags a spec declares, hands their values to the spec's callable on the way to
    reset, and every family that does not declare them refuses them with the list of its own options."""
    rounds = RunFlag("rounds", "play this many rounds (100% of them)", type=int, metavar="N", excludes=("instance",),
                     options=lambda options, value, seed: {**(options or {}), "rounds": value, "seed": seed})
    register_task(replace(TOY, env=OptionsToyEnv, run_options=("instance",), run_flags=(rounds,)), replace=True)
    OptionsToyEnv.seen.clear()
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    assert "--rounds N FinToy-v0: play this many rounds (100% of them)" in " ".join(capsys.readouterr().out.split())
    assert main(["run", "--env", "FinToy-v0", "--policy", "echo", "--rounds", "2", "--seed", "5"]) == 0
    assert OptionsToyEnv.seen == [{"rounds": 2, "seed": 5}]
    assert main(["run", "--env", "FinToy-v0", "--policy", "echo"]) == 0  # not given: the plan's options
    assert OptionsToyEnv.seen[-1] is None
    capsys.readouterr()

    refused = [(["run", "--env", "FinTrading-v0", "--policy", "momentum", "--rounds", "2"],
                "--rounds is not an option of FinTrading-v0 (its options: --symbol, --start, --end, --fee-bps, "
                "--fill, --chart)"),
               (["run", "--env", "FinToy-v0", "--policy", "echo", "--topic", "x"],
                "--topic is not an option of FinToy-v0 (its options: --instance, --rounds)"),
               (["run", "--env", "FinToy-v0", "--policy", "echo", "--rounds", "2", "--instance", "0"],
                "give --instance or --rounds, not both")]
    for argv, message in refused:
        assert main(argv) == 2
        assert capsys.readouterr().err == f"finenvs: error: {message}\n"
    with pytest.raises(SystemExit) as exit_:
        main(["run", "--env", "FinToy-v0", "--policy", "echo", "--rounds", "two"])
    assert exit_.value.code == 2 and "argument --rounds: invalid int value: 'two'" in capsys.readouterr().err
    assert len(OptionsToyEnv.seen) == 2  # no refused run reached the env


def test_a_run_flag_that_clashes_is_named(toy, capsys):
    """A family's flag that clashes with one of ``finenvs run`` or another family's is a bug of its declaration:
    every command says which (exit 1, as any unexpected error)."""
    with pytest.raises(ValueError, match="without dashes"):
        RunFlag("--rounds", "dashes")
    register_task(replace(TOY, run_flags=(RunFlag("seed", "a second --seed"),)), replace=True)
    assert main(["list"]) == 1
    assert capsys.readouterr().err.startswith("finenvs: error: unexpected ValueError: the run flag --seed of "
                                              "FinToy-v0: argument --seed: conflicting option string")
    register_task(replace(TOY, run_flags=(RunFlag("topic", "a number", type=int),)), replace=True)
    assert main(["list"]) == 1
    assert capsys.readouterr().err.startswith("finenvs: error: unexpected ValueError: FinQA-v0 and FinToy-v0 declare "
                                              "the run flag --topic with different types or metavars")


class _Raising(Section):
    """A section whose baselines raise."""

    def run(self, ctx):
        raise RuntimeError(f"no baselines for {ctx.task.env_id}")

    def markdown(self, view):  # never reached: the section produced nothing
        raise AssertionError("a failed section is not rendered")


def test_a_section_that_raises_is_reported_and_the_agents_still_show(tmp_path):
    spec = dataclasses.replace(TOY, bench=BenchSection(title="Toy", suites=("toy",), section=_Raising()))
    register_task(spec)
    try:
        assert main(["bench", "--envs", "FinToy-v0", "--out", str(tmp_path), "--name", "b", "--quiet",
                     "--no-plots", "--no-html"]) == 1
    finally:
        unregister_task("toy")
    card = json.loads((tmp_path / "b" / "scorecard.json").read_text())
    assert card["errors"] == [{"env": "FinToy-v0", "symbol": "-", "policy": "-",
                               "error": "RuntimeError: no baselines for FinToy-v0"}]
    assert card["sections"] == {} and card["rows"] == [] and len(card["agents"]) == 1
    md = (tmp_path / "b" / "scorecard.md").read_text()
    assert "## FinToy-v0\n\n### FinToy-v0: agents through the text interface" in md
    assert "- FinToy-v0 - -: RuntimeError: no baselines for FinToy-v0" in md
