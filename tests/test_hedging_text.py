"""FinHedging-text-v0: the pairs protocol, its stage rules, get_pair_stats, the scripted pairs agent and MCP."""

from __future__ import annotations

import asyncio
import itertools
import json
import math

import gymnasium as gym
import numpy as np
import pandas as pd
import pytest

import finenvs  # noqa: F401  (registers the envs)
from finenvs.evaluation.llm import RunConfig, run_episode
from finenvs.evaluation.replay import replay_episode
from finenvs.evaluation.runlog import TrajectoryWriter, read_trajectories
from finenvs.tasks import EpisodeSpec
from finenvs.tasks.hedging.agent import ScriptedPairsAgent
from finenvs.tasks.hedging.core import ACTION_NAMES, HOLD
from finenvs.tasks.hedging.env import DEFAULT_UNIVERSE
from finenvs.text.protocol import MAX_PROMPT_CHARS
from finenvs.tools import COMMIT_TOOL, ToolBox
from helpers import perturb_after

EVAL_START = "2026-01-02"
N = len(DEFAULT_UNIVERSE)
PAIR0 = f"{DEFAULT_UNIVERSE[0]}/{DEFAULT_UNIVERSE[1]}"  # AAPL/ADBE: the default of the selection step
AAPL_MSFT = 0 * (N - 1) + (DEFAULT_UNIVERSE.index("MSFT") - 1)  # the documented index formula, by hand


@pytest.fixture(scope="module")
def base():
    """A plain FinHedging-v0 (eval split) for its protocol and pair indices (never stepped)."""
    env = gym.make("FinHedging-v0", split="eval").unwrapped
    env.reset(seed=0)
    return env


@pytest.fixture(scope="module")
def protocol(base):
    return base.text_protocol


def text_env(**kwargs):
    return gym.make("FinHedging-text-v0", split="eval", **kwargs)


# ---------------------------------------------------------------------------- protocol
def test_every_ordered_pair_word_parses_to_its_selection_action(protocol, base):
    seen = []
    for a, b in itertools.permutations(DEFAULT_UNIVERSE, 2):
        k = base.pair_index(a, b)
        assert base.pair_symbols(k) == (a, b)
        for text in (f"{a}/{b}", f"{a.lower()}/{b.lower()}", f"{a}-{b}", f"Action: {a}/{b}."):
            parsed = protocol.parse_text(text)
            assert parsed.valid and parsed.action == ("pair", k) and parsed.name == f"{a}/{b}", text
        seen.append(k)
    assert sorted(seen) == list(range(N * (N - 1))) == list(range(base.n_pairs))


@pytest.mark.parametrize(
    "text, via",
    [
        ("AAPL/MSFT", "word"),
        ("aapl/msft", "word"),
        ("AAPL/MSFT.", "word"),
        ("  **Aapl/Msft**. ", "word"),
        ("AAPL-MSFT", "word"),
        ("aapl-msft.", "word"),
        ("The spread is cheap.\nAction: AAPL/MSFT.", "marker"),
        ("Reasoning ...\n**Final answer:** aapl-msft", "marker"),
        ('{"action": "aapl/msft"}', "json"),
        ('```json\n{"action": "AAPL-MSFT", "reasoning": "cointegrated"}\n```', "json"),
        ('I pick this one: {"action": "AAPL/MSFT"} for now.', "json"),
    ],
)
def test_pair_spellings_read_as_the_same_pair(protocol, base, text, via):
    parsed = protocol.parse_text(text)
    assert (parsed.name, parsed.invalid, parsed.via) == ("AAPL/MSFT", None, via)
    assert parsed.action == ("pair", base.pair_index("AAPL", "MSFT")) == ("pair", AAPL_MSFT)


@pytest.mark.parametrize(
    "arguments", [{"action": "aapl/msft"}, {"action": "AAPL-MSFT", "reasoning": "r"}, '{"action": "Aapl/Msft."}']
)
def test_commit_action_arguments_read_pair_words(protocol, base, arguments):
    parsed = protocol.parse_commit(arguments)
    assert parsed.valid and parsed.via == "tool" and parsed.name == "AAPL/MSFT"
    assert parsed.action == ("pair", base.pair_index("AAPL", "MSFT"))
    result = ToolBox(base).call(COMMIT_TOOL, arguments)  # the tool path the runner and MCP server share
    assert result.ok and result.commit.action == ("pair", AAPL_MSFT) and result.data["action"] == "AAPL/MSFT"


@pytest.mark.parametrize(
    "text, word",
    [
        ("LONG_SHORT", "LONG_SHORT"),
        ("short_long", "SHORT_LONG"),
        ("Action: HOLD", "HOLD"),
        ('{"action": "close"}', "CLOSE"),
        ("Action: FLAT", "CLOSE"),
        ("exit.", "CLOSE"),
        ("Decision: keep", "HOLD"),
    ],
)
def test_trading_words_read_as_trades(protocol, text, word):
    parsed = protocol.parse_text(text)
    assert parsed.valid and parsed.name == word
    assert parsed.action == ("trade", ACTION_NAMES.index(word))


@pytest.mark.parametrize(
    "text, reason",
    [
        ("I like AAPL/MSFT", "no action found"),  # a mention is not a decision
        ("I like AAPL/MSFT.", "no action found"),
        ("AAPL/MSFT or ADBE/TSLA, hard to say", "no action found"),
        ("Action: AAPL/AAPL", "no action found"),  # not a pair of the vocabulary
        ("Action: AAPL/XYZ", "no action found"),
        ("Action: AAPL/MSFT\nAction: ADBE/TSLA", "ambiguous"),
        ('{"action": "AAPL/MSFT"} or {"action": "MSFT/AAPL"}', "ambiguous"),
        ('{"action": "AAPL/MSFT/NVDA"}', "is not one of"),
    ],
)
def test_replies_that_do_not_name_one_pair_are_invalid(protocol, text, reason):
    parsed = protocol.parse_text(text)
    assert not parsed.valid and reason in parsed.invalid
    assert parsed.name == "HOLD" and parsed.via == "default"


def protocol_symbols(protocol) -> list[str]:
    """The universe a protocol's pair words are made of, in order."""
    return list(dict.fromkeys(s for w, v in protocol.actions.items() if v[0] == "pair" for s in w.split("/")))


def test_prompt_uses_the_short_answer_hint_and_stays_under_the_cap(protocol):
    pair_words = [w for w, v in protocol.actions.items() if v[0] == "pair"]
    assert len(pair_words) == 56 and len(protocol.action_words) == 60
    assert protocol.answer_format == protocol.hint and len(protocol.hint) < 200
    env = text_env()
    prompt, _ = env.reset(seed=0)
    answer = prompt.split("## Answer", 1)[1]
    assert f"'Action: <{protocol.hint}>'" in answer and PAIR0 in answer
    assert [w for w in pair_words if w in answer] == [PAIR0]  # the example only, not the 56 words
    assert sum(w in prompt for w in pair_words) <= 2 and "|".join(pair_words[:3]) not in prompt
    assert "Stage: choose the pair" in prompt
    # the commit tool states the vocabulary's rule (the universe is in the prompt), not the 56 pair words: they
    # would be re-sent with every request; its checked schema keeps them all
    [commit] = [t["function"] for t in env.get_wrapper_attr("tool_specs")() if t["function"]["name"] == COMMIT_TOOL]
    assert commit["parameters"]["properties"]["action"] == {"type": "string", "description": protocol.hint}
    assert protocol.commit_schema()["properties"]["action"]["enum"] == protocol.action_words
    assert "Universe: " + ", ".join(protocol_symbols(protocol)) in prompt
    longest, done = len(prompt), False
    for reply in itertools.chain(["Action: NVDA/TSLA"], itertools.cycle(["LONG_SHORT", "HOLD", "CLOSE", "nonsense"])):
        if done:
            break
        prompt, _, terminated, truncated, _ = env.step(reply)
        longest, done = max(longest, len(prompt)), terminated or truncated
        assert env.observation_space.contains(prompt)
    assert longest < MAX_PROMPT_CHARS and "[prompt truncated]" not in prompt


# ---------------------------------------------------------------------------- stage rules through the text env
def test_long_short_before_a_pair_selects_pair_zero_and_stays_flat():
    env = text_env()
    _, info = env.reset(seed=0)
    assert info["stage"] == "select" and info["format_errors"] == 0
    _, reward, terminated, truncated, info = env.step("Action: LONG_SHORT")
    assert info["pair"] == PAIR0 and env.unwrapped.pair == tuple(PAIR0.split("/")) and env.unwrapped.state.pair == 0
    assert info["parsed_action"] == PAIR0 and info["action_via"] == "default"
    assert "LONG_SHORT needs a pair" in info["invalid_action"] and PAIR0 in info["invalid_action"]
    assert info["format_errors"] == 1 == env.format_errors
    assert info["position"] == 0 and reward == 0.0 and info["fees"] == 0.0 and info["equity"] == 1.0
    assert not (terminated or truncated)
    # the next decision trades the defaulted pair normally
    _, _, _, _, info = env.step("Action: LONG_SHORT")
    assert info["position"] == 1 and info["invalid_action"] is None and info["format_errors"] == 1


@pytest.mark.parametrize(
    "reply, reason",
    [
        ("", "empty reply"),
        ("I would pick a cointegrated pair.", "no action found"),
        ("Action: MSFT/MSFT", "no action found"),
        ("Action: ADBE/TSLA\nAction: AAPL/MSFT", "ambiguous"),
        ({"name": "get_pair_stats", "arguments": {}}, "is not a commit"),
    ],
)
def test_an_unreadable_first_reply_selects_pair_zero(reply, reason):
    env = text_env()
    env.reset(seed=0)
    _, reward, _, _, info = env.step(reply)
    assert info["pair"] == PAIR0 and env.unwrapped.state.pair == 0
    assert reason in info["invalid_action"] and info["format_errors"] == 1
    assert info["position"] == 0 and reward == 0.0


def test_trading_words_trade_and_pair_words_after_selection_hold(base):
    env = text_env()
    env.reset(seed=0)
    replies = [
        ("Action: aapl/msft.", None),
        ("Action: LONG_SHORT", None),
        ("Action: ADBE/TSLA", "already chosen (AAPL/MSFT)"),  # a pair word on a trading step is a format error
        ("AAPL/MSFT", "not a trading action"),
        ("I am unsure.", "no action found"),
        ({"name": COMMIT_TOOL, "arguments": {"action": "short_long"}}, None),
        ("Action: NVDA-AMZN", "took HOLD"),
        ('{"action": "CLOSE"}', None),
        ("HOLD", None),
    ]
    expected_position = [0, 1, 1, 1, 1, -1, -1, 0, 0]
    expected_action = [AAPL_MSFT, 0, HOLD, HOLD, HOLD, 1, HOLD, 3, HOLD]
    rewards, errors = [], 0
    for (reply, problem), position, action in zip(replies, expected_position, expected_action, strict=True):
        before = env.unwrapped.state.position
        _, reward, _, _, info = env.step(reply)
        rewards.append(reward)
        assert env.get_wrapper_attr("last_parsed").action == action
        assert info["pair"] == "AAPL/MSFT" and info["position"] == position, reply
        if problem is None:
            assert info["invalid_action"] is None, reply
        else:
            errors += 1
            assert problem in info["invalid_action"] and info["parsed_action"] == "HOLD", reply
            assert info["position"] == before and info["fee"] == 0.0  # HOLD keeps the exposure, trades nothing
        assert info["format_errors"] == errors
    assert errors == 4
    # the same decisions as integers on the base env give the same rewards
    plain = gym.make("FinHedging-v0", split="eval")
    plain.reset(seed=0)
    assert expected_action[0] == base.pair_index("AAPL", "MSFT")
    assert [plain.step(a)[1] for a in expected_action] == rewards
    assert any(r != 0.0 for r in rewards)


# ---------------------------------------------------------------------------- get_pair_stats
def _expected_stats(catalog, long_leg, short_leg, as_of, lookback=60):
    """Independent computation from the catalog's closes dated <= as_of."""
    day = np.datetime64(as_of, "D")
    a, b = catalog.series(long_leg), catalog.series(short_leg)
    common = np.intersect1d(a.dates[a.dates <= day], b.dates[b.dates <= day])[-(lookback + 1) :]
    la = np.log(a.close[np.searchsorted(a.dates, common)])
    lb = np.log(b.close[np.searchsorted(b.dates, common)])
    s = la - lb
    corr = np.corrcoef(np.diff(la), np.diff(lb))[0, 1]
    z = {n: (s[-1] - s[-n:].mean()) / s[-n:].std(ddof=1) for n in (5, 20, lookback)}
    y = np.diff(s)
    x = np.column_stack([np.ones(y.size), s[:-1]])
    beta, *_ = np.linalg.lstsq(x, y, rcond=None)
    resid = y - x @ beta
    cov = (resid @ resid) / (y.size - 2) * np.linalg.inv(x.T @ x)
    return {
        "as_of": str(common[-1]),
        "days": common.size - 1,
        "correlation": corr,
        "zscore": z,
        "df_tstat": beta[1] / math.sqrt(cov[1, 1]),
        "half_life_days": -math.log(2) / math.log1p(beta[1]) if -1 < beta[1] < 0 else None,
        "log_ratio": s[-1],
    }


def test_pair_stats_match_an_independent_computation(catalog):
    env = text_env()
    _, info = env.reset(seed=0)
    checked = []
    for k, reply in enumerate(["Action: NVDA/AMZN", *(["HOLD"] * 24), "LONG_SHORT", *(["HOLD"] * 9)]):
        if k in (0, 25, 34):
            for a, b in (("AAPL", "MSFT"), ("NVDA", "AMZN"), ("TSLA", "ADBE")):
                result = env.call_tool("get_pair_stats", {"pair": f"{a}/{b}"})
                assert result.ok and result.look_ahead == 0
                got, want = result.data, _expected_stats(catalog, a, b, info["date"])
                assert got["pair"] == f"{a}/{b}" and got["as_of"] == want["as_of"] == info["date"]
                assert got["days"] == want["days"] == 60
                assert got["correlation"] == pytest.approx(want["correlation"], abs=6e-5)
                assert got["zscore"]["20"] == pytest.approx(want["zscore"][20], abs=6e-5)
                assert got["zscore"]["5"] == pytest.approx(want["zscore"][5], abs=6e-5)
                assert got["zscore"]["60"] == pytest.approx(want["zscore"][60], abs=6e-5)
                assert got["df_tstat"] == pytest.approx(want["df_tstat"], abs=6e-5)
                assert got["log_ratio"] == pytest.approx(want["log_ratio"], abs=6e-7)
                if want["half_life_days"] is None:
                    assert got["half_life_days"] is None
                else:
                    assert got["half_life_days"] == pytest.approx(want["half_life_days"], abs=6e-3)
                checked.append(info["date"])
        _, _, _, _, info = env.step(reply)
    assert len(set(checked)) == 3 and checked[0] == EVAL_START


def test_pair_stats_ranking_covers_every_pair_sorted_by_df_tstat():
    env = text_env()
    env.reset(seed=0)
    default = env.call_tool("get_pair_stats", {})  # the ten most mean-reverting, and how many there are
    assert default.ok and len(default.data["rows"]) == 10 and default.data["total"] == 28
    assert "limit=28" in default.data["note"]
    result = env.call_tool("get_pair_stats", {"limit": 28})
    assert result.ok and not result.truncated and result.look_ahead == 0 and "note" not in result.data
    data = result.data
    assert data["rows"][:10] == default.data["rows"] and data["columns"][2:5] == ["z_5", "z_20", "z_60"]

    def as_single(row):  # a ranking row in the single-pair answer's shape
        named = dict(zip(data["columns"], row, strict=True))
        z = {k.removeprefix("z_"): named.pop(k) for k in list(named) if k.startswith("z_")}
        return {**named, "zscore": z}

    rows = [as_single(r) for r in data["rows"]]
    assert data["as_of"] == EVAL_START and data["days"] == 60 and "df_tstat" in data["ranked_by"]
    assert len(rows) == data["total"] == N * (N - 1) // 2 == 28
    assert {r["pair"] for r in rows} == {f"{a}/{b}" for a, b in itertools.combinations(DEFAULT_UNIVERSE, 2)}
    tstats = [r["df_tstat"] for r in rows]
    assert tstats == sorted(tstats) and tstats[0] < tstats[-1]
    for row in rows[:3] + rows[-2:]:  # a row is the single-pair statistics of that pair
        single = env.call_tool("get_pair_stats", {"pair": row["pair"]}).data
        assert {k: v for k, v in single.items() if k not in ("as_of", "days")} == row
        a, b = row["pair"].split("/")
        flipped = env.call_tool("get_pair_stats", {"pair": f"{b}/{a}"}).data
        assert flipped["df_tstat"] == row["df_tstat"] and flipped["correlation"] == row["correlation"]
        assert flipped["zscore"] == {n: -z for n, z in row["zscore"].items()}
        assert flipped["log_ratio"] == -row["log_ratio"]


@pytest.mark.parametrize(
    "arguments, message",
    [
        ({"pair": "AAPL/AAPL"}, "names one symbol twice"),
        ({"pair": "msft-msft"}, "names one symbol twice"),
        ({"pair": "AAPL/XYZ"}, "unknown symbol(s) ['XYZ']"),
        ({"pair": "IBM/ORCL"}, "unknown symbol(s) ['IBM', 'ORCL']"),
        ({"pair": "AAPL"}, "must be two symbols as LONG/SHORT"),
        ({"pair": "AAPL/MSFT/NVDA"}, "must be two symbols as LONG/SHORT"),
        ({"pair": "/MSFT"}, "must be two symbols as LONG/SHORT"),
        ({"pair": "AB"}, "at least 3 characters"),
        ({"pair": 7}, "must be of type string"),
        ({"pair": "AAPL/MSFT", "lookback": 5}, "lookback must be >= 10"),
        ({"pairs": "AAPL/MSFT"}, "unknown field ['pairs']"),
    ],
)
def test_bad_pair_requests_are_error_results(arguments, message):
    env = text_env()
    env.reset(seed=0)
    result = env.call_tool("get_pair_stats", arguments)  # never raises
    assert result.ok is False and message in result.error
    assert result.data == {"error": result.error} and result.look_ahead == 0


def test_pair_stats_before_reset_is_an_error_result():
    result = ToolBox(gym.make("FinHedging-v0", split="eval")).call("get_pair_stats", {"pair": "AAPL/MSFT"})
    assert result.ok is False and "reset" in result.error


def test_pair_stats_are_date_locked_with_user_data(catalog):
    symbols = ["AAPL", "MSFT", "NVDA", "TSLA"]
    frame = pd.concat([catalog.series(s).to_frame() for s in symbols], ignore_index=True)
    assert set(frame["symbol"]) == set(symbols)
    env_a = text_env(data=frame, symbols=symbols)
    _, info_a = env_a.reset(seed=0)
    state = env_a.unwrapped.state
    cut = env_a.unwrapped.episode.universe.date_strings[state.start + 12]
    env_b = text_env(data=perturb_after(frame, cut, np.random.default_rng(3)), symbols=symbols)
    _, info_b = env_b.reset(seed=0)
    calls = [{}, {"pair": "NVDA/TSLA"}, {"pair": "msft-aapl", "lookback": 20}, {"pair": "TSLA/AAPL", "lookback": 250}]
    replies = itertools.chain(["Action: NVDA/TSLA"], itertools.cycle(["LONG_SHORT", "HOLD", "CLOSE", "SHORT_LONG"]))
    compared = 0
    while info_a["date"] <= cut:
        assert info_a["date"] == info_b["date"] and info_a["equity"] == info_b["equity"]
        for arguments in calls:
            ra, rb = env_a.call_tool("get_pair_stats", arguments), env_b.call_tool("get_pair_stats", arguments)
            assert ra.ok and rb.ok and ra.look_ahead == rb.look_ahead == 0
            assert json.dumps(ra.data) == json.dumps(rb.data), (info_a["date"], arguments)
            assert ra.data["as_of"] == info_a["date"]
            compared += 1
        reply = next(replies)
        _, _, _, _, info_a = env_a.step(reply)
        _, _, _, _, info_b = env_b.step(reply)
    assert compared == 13 * len(calls) and info_a["date"] > cut
    # one close later the perturbed bars are visible: the check above could have failed
    ra, rb = env_a.call_tool("get_pair_stats", calls[1]), env_b.call_tool("get_pair_stats", calls[1])
    assert json.dumps(ra.data) != json.dumps(rb.data)
    assert info_a["look_ahead_attempts"] == info_b["look_ahead_attempts"] == 0


def test_pair_stats_accept_the_synthetic_universes_hyphenated_symbols():
    env = gym.make("FinHedging-text-v0", source="synthetic", synthetic={"n_assets": 3})
    _, info = env.reset(seed=0)
    first, second = info["symbols"][:2]
    assert "-" in first
    result = env.call_tool("get_pair_stats", {"pair": f"{first}/{second}"})
    assert result.ok, result.error


# ---------------------------------------------------------------------------- the scripted pairs agent
def test_scripted_pairs_agent_episode_is_clean_and_replays(tmp_path):
    spec = EpisodeSpec(0, "FinHedging-v0", {"split": "eval"}, 0)
    writer = TrajectoryWriter(tmp_path / "trajectories.jsonl")
    try:
        outcome = asyncio.run(run_episode(ScriptedPairsAgent(), spec, RunConfig(env_id="FinHedging-v0"), writer=writer))
    finally:
        writer.close()
    assert outcome.status == "complete"
    record = outcome.record
    records, dropped = read_trajectories(tmp_path / "trajectories.jsonl")
    steps = [r for r in records if r["type"] == "step"]
    assert dropped == 0 and records[-1] == json.loads(json.dumps(record)) and len(steps) == record["steps"] == 60
    totals = record["totals"]
    assert totals["format_errors"] == 0 and totals["tool_errors"] == 0 and totals["decisions"] == 60
    assert totals["tool_calls"] == totals["decisions"]  # get_pair_stats; the stage and position are in the prompt
    for step in steps:
        assert step["invalid"] is None and step["via"] == "tool"
        assert [c["name"] for c in step["tool_calls"]] == ["get_pair_stats"]
        assert all(c["ok"] and c["look_ahead"] == 0 for c in step["tool_calls"])
    # the first decision picks the top of the ranking at the first close, from an independent toolbox
    fresh = gym.make("FinHedging-v0", split="eval")
    fresh.reset(seed=0)
    ranking = ToolBox(fresh).call("get_pair_stats", {"lookback": 60}).data
    top = ranking["rows"][0][0]
    first = steps[0]
    assert first["date"] == ranking["as_of"] == EVAL_START
    assert first["action"] == top and first["env_action"] == fresh.unwrapped.pair_index(*top.split("/"))
    assert first["tool_calls"][0]["arguments"] == {"lookback": 60}
    assert all(s["tool_calls"][0]["arguments"] == {"lookback": 60, "pair": top} for s in steps[1:])
    assert record["label"] == top and record["metrics"]["spread"]
    words = [s["action"] for s in steps]
    assert set(words[1:]) <= set(ACTION_NAMES) and {"LONG_SHORT", "SHORT_LONG"} & set(words)  # it trades
    # replaying the committed integer actions on a plain env reproduces every reward and the final equity
    plain = gym.make("FinHedging-v0", split="eval")
    plain.reset(seed=0)
    for step in steps:
        _, reward, terminated, truncated, info = plain.step(step["env_action"])
        assert reward == step["reward"] and info["position"] == step["position"]
    assert terminated or truncated
    assert info["equity"] == pytest.approx(record["metrics"]["final_equity"], rel=1e-12, abs=0)
    assert record["metrics"]["final_equity"] != 1.0
    rewards, metrics, final = replay_episode(spec, [s["env_action"] for s in steps])  # the offline re-scorer agrees
    assert rewards == [s["reward"] for s in steps] and metrics == record["metrics"]
    assert final["equity"] == pytest.approx(record["metrics"]["final_equity"], rel=1e-12, abs=0)


# ---------------------------------------------------------------------------- MCP
def _mcp_episode(tmp_path, name="mcp"):
    from finenvs.evaluation.mcp_server import McpEpisode

    return McpEpisode(EpisodeSpec(0, "FinHedging-v0", {"split": "eval"}, 0), out=tmp_path, name=name)


def test_mcp_serves_pair_stats_and_takes_a_pair_then_trades(tmp_path, base):
    pytest.importorskip("mcp")
    from mcp import Client

    from finenvs.evaluation.mcp_server import build_server

    ep = _mcp_episode(tmp_path)
    commits = [{"action": "aapl/msft"}, {"action": "LONG_SHORT"}, {"action": "ADBE/TSLA"}, {"action": "Close"},
               {"action": "SHORT_LONG"}]

    async def go():
        async with Client(build_server(ep)) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            stats = await client.call_tool("get_pair_stats", {"pair": "AAPL/MSFT"})
            bad = await client.call_tool("get_pair_stats", {"pair": "AAPL/AAPL"})
            replies = [(await client.call_tool(COMMIT_TOOL, args)).structured_content for args in commits]
            return tools, stats, bad, replies

    tools, stats, bad, replies = asyncio.run(go())
    assert {"get_pair_stats", "get_observation", "get_state", COMMIT_TOOL} <= set(tools)
    assert tools["get_pair_stats"].input_schema["properties"]["pair"]["type"] == "string"
    assert "LONG_SHORT|SHORT_LONG|HOLD|CLOSE" in tools[COMMIT_TOOL].input_schema["properties"]["action"]["description"]
    expected = ToolBox(base).call("get_pair_stats", {"pair": "AAPL/MSFT"}).data  # base sits at the first close
    assert not stats.is_error and stats.structured_content == expected
    assert bad.is_error and "names one symbol twice" in bad.structured_content["error"]
    assert [r["position"] for r in replies] == [0, 1, 1, 0, -1]
    assert [r["date"] for r in replies][0] == EVAL_START and all(not r["done"] for r in replies)
    steps = [r for r in read_trajectories(ep.files.trajectories)[0] if r["type"] == "step"]
    assert [s["action"] for s in steps] == ["AAPL/MSFT", "LONG_SHORT", "HOLD", "CLOSE", "SHORT_LONG"]
    assert [s["env_action"] for s in steps] == [base.pair_index("AAPL", "MSFT"), 0, HOLD, 3, 1]
    assert [s["invalid"] is None for s in steps] == [True, True, False, True, True]
    assert "already chosen (AAPL/MSFT)" in steps[2]["invalid"] and steps[2]["reply_action"] == "ADBE/TSLA"
    assert all(s["symbol"] == "AAPL/MSFT" for s in steps[1:])
    ep.close()


def test_mcp_reply_reports_the_stage_checked_action(tmp_path):
    pytest.importorskip("mcp")
    from mcp import Client

    from finenvs.evaluation.mcp_server import build_server

    ep = _mcp_episode(tmp_path)

    async def go():
        async with Client(build_server(ep)) as client:
            return (await client.call_tool(COMMIT_TOOL, {"action": "LONG_SHORT"})).structured_content

    reply = asyncio.run(go())
    ep.close()
    assert reply["action"] == PAIR0 and reply["accepted"] is False and "needs a pair" in reply["invalid"]


def test_scripted_pairs_agent_over_mcp_matches_the_in_process_run(tmp_path):
    pytest.importorskip("mcp")
    from mcp import Client

    from finenvs.evaluation.llm import drive_mcp_episode
    from finenvs.evaluation.mcp_server import build_server

    ep = _mcp_episode(tmp_path, "full")

    async def go():
        async with Client(build_server(ep)) as client:
            return await drive_mcp_episode(ScriptedPairsAgent(), client, ep.protocol)

    replies = asyncio.run(go())
    last = replies[-1]
    assert len(replies) == 60 and last["done"] and last["reproduced_offline"] is True
    assert last["look_ahead_attempts"] == 0
    local = asyncio.run(run_episode(ScriptedPairsAgent(), EpisodeSpec(0, "FinHedging-v0", {"split": "eval"}, 0),
                                    RunConfig(env_id="FinHedging-v0")))
    assert last["metrics"]["cumulative_return"] == local.record["metrics"]["standard"]["cumulative_return"] != 0.0
    steps = [r for r in read_trajectories(ep.files.trajectories)[0] if r["type"] == "step"]
    assert all(s["invalid"] is None for s in steps) and steps[-1]["symbol"] == local.record["label"]
    ep.close()
