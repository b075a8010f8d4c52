"""Token counts per decision: the endpoint's where it reports them, else o200k_base estimates (n/a without a
tokenizer, never 0), and the cached prefix each request repeats from the previous one."""

from __future__ import annotations

import json
import re

import pytest

from finenvs.evaluation import tokens as tk
from finenvs.evaluation.llm import RunConfig, run_llm
from finenvs.evaluation.runlog import read_trajectories
from finenvs.evaluation.score import per_decision_tokens, score_run, tokens_cell
from finenvs.evaluation.session import EpisodeTotals
from finenvs.tasks.trading.agent import ScriptedTradingAgent


class CharEncoder:
    """A stand-in encoding: one token per character, so expected counts are lengths."""

    def encode_ordinary(self, text: str) -> list[int]:
        return [ord(c) for c in text]


@pytest.fixture()
def chars():
    saved = (tk._ENCODER, tk._STATUS)
    tk._reset_for_tests(CharEncoder())
    yield
    tk._ENCODER, tk._STATUS = saved


@pytest.fixture()
def no_tokenizer():
    saved = (tk._ENCODER, tk._STATUS)
    tk._reset_for_tests(None, "tiktoken could not load o200k_base (test)")
    yield
    tk._ENCODER, tk._STATUS = saved


TOOLS = [{"type": "function", "function": {"name": "get_prices", "parameters": {}}}]


def _size(messages, tools=TOOLS) -> int:
    parts = tk.request_parts(messages, tools)
    return sum(len(p) for p in parts) + tk.MESSAGE_OVERHEAD * len(messages) + tk.REPLY_PRIMING


def test_requests_are_counted_and_the_repeated_prefix_is_cached(chars):
    tally = tk.EpisodeTokens()
    first = [{"role": "system", "content": "S"}, {"role": "user", "content": "# Env\nDate: 2024-01-02\nRest"}]
    tally.count(first, TOOLS, None, "call")
    second = [*first, {"role": "assistant", "content": "", "tool_calls": [
        {"id": "c0", "function": {"name": "get_prices", "arguments": "{}"}}]}, {"role": "tool", "content": "[1,2]"}]
    tally.count(second, TOOLS, {"prompt_tokens": 0, "completion_tokens": 0}, "commit")  # an offline agent's 0: estimated
    d = tally.take()
    assert d.prompt == _size(first) + _size(second)
    assert d.completion == len("call") + len("commit")
    # the second request repeats the whole first one (tools, both messages with their framing)
    assert d.cached == _size(first) - tk.REPLY_PRIMING
    assert d.record()["estimated"] == ["cached", "completion", "prompt"]
    # the next decision: tools and system repeat, the prompt up to the first changed character
    nxt = [{"role": "system", "content": "S"}, {"role": "user", "content": "# Env\nDate: 2024-01-03\nRest"}]
    tally.count(nxt, TOOLS, None, "x")
    d2 = tally.take()
    common = len("user\n# Env\nDate: 2024-01-0")
    assert d2.cached == len(tk.request_parts(nxt, TOOLS)[0]) + len("system\nS") + tk.MESSAGE_OVERHEAD + common
    assert 0 < d2.cached < d2.prompt


def test_the_endpoints_counts_are_believed_and_its_cache_hits_too(chars):
    tally = tk.EpisodeTokens()
    msgs = [{"role": "system", "content": "S"}, {"role": "user", "content": "hello"}]
    tally.count(msgs, TOOLS, {"prompt_tokens": 900, "completion_tokens": 12, "cached_tokens": 640}, "x")
    d = tally.take()
    assert (d.prompt, d.completion, d.cached, d.estimated) == (900, 12, 640, [])
    tally.count(msgs, TOOLS, {"prompt_tokens": 1000, "completion_tokens": 5}, "x")  # no cache report: the share
    d = tally.take()
    assert d.prompt == 1000 and d.estimated == ["cached"]
    assert d.cached == round(1000 * (_size(msgs) - tk.REPLY_PRIMING) / _size(msgs))


def test_without_a_tokenizer_estimates_are_unknown_never_zero(no_tokenizer):
    assert tk.tokenizer_status().startswith("tiktoken could not load")
    tally = tk.EpisodeTokens()
    tally.count([{"role": "user", "content": "hi"}], [], None, "x")
    d = tally.take()
    assert d.prompt is None and d.completion is None and d.cached is None
    totals = EpisodeTotals()
    totals.add_step({"tokens": d.record()})
    per = per_decision_tokens(totals)
    assert per["prompt"] is None and per["counted"] == "n/a" and tokens_cell(per) == "n/a"
    tally.count([{"role": "user", "content": "hi"}], [], {"prompt_tokens": 50, "completion_tokens": 2}, "x")
    d = tally.take()  # the endpoint's own counts still stand; only the cached estimate is unknown
    assert (d.prompt, d.completion, d.cached) == (50, 2, None)


def test_a_wrong_tokenizer_file_is_named_not_used(tmp_path, monkeypatch):
    bogus = tmp_path / "o200k_base.tiktoken"
    bogus.write_text("not the encoding\n")
    monkeypatch.setenv(tk.TOKENIZER_FILE_ENV, str(bogus))
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "cache"))
    assert "is not o200k_base.tiktoken" in (tk._place_local_copy() or "")
    assert not (tmp_path / "cache").exists()


def test_o200k_base_counts_like_tiktoken_itself():
    tiktoken = pytest.importorskip("tiktoken")
    if tk.tokenizer_status() != "ok":
        pytest.skip(f"o200k_base unavailable offline: {tk.tokenizer_status()}")
    text = "AAPL closed at 187.25 on 2024-01-02; RSI 61.3."
    assert tk.TokenCounter(tk.encoder()).text(text) == len(tiktoken.get_encoding("o200k_base").encode(text))


def test_a_scripted_run_records_estimated_tokens_per_decision_and_rescores(chars, tmp_path):
    config = RunConfig(symbols=["AAPL"], split="eval", max_decisions=4)
    summary = run_llm(config, ScriptedTradingAgent(), out=tmp_path, name="r", progress=False)
    records, _ = read_trajectories(summary.run_dir / "trajectories.jsonl")
    steps = [r for r in records if r["type"] == "step"]
    assert len(steps) == 4
    for s in steps:
        t = s["tokens"]
        assert t["prompt"] > 0 and t["completion"] > 0 and 0 <= t["cached"] < t["prompt"]
        assert t["estimated"] == ["cached", "completion", "prompt"]
        assert s["usage"] == {"prompt_tokens": 0, "completion_tokens": 0} and s["cost_usd"] == 0.0  # it spends $0
        # the decision's requests: each re-sends the conversation so far, and every request after the first of
        # the run repeats a prefix of the one before
        assert t["prompt"] >= s["requests"] * len(json.dumps(s["messages"][0]["content"])) // 2
    assert steps[1]["tokens"]["cached"] > steps[0]["tokens"]["cached"]  # the first request of step 1 is cached too
    eff = score_run(summary.run_dir).efficiency()
    per = eff["per_decision_tokens"]
    assert per["counted"] == "estimate" and eff["estimated_decisions"] == 4
    assert per["prompt"] == pytest.approx(sum(s["tokens"]["prompt"] for s in steps) / 4)
    assert 0 < per["cached_share"] < 1
    assert eff["prompt_tokens"] == 0  # what the agent reported (and what costs money) is kept apart


def test_finenvs_cost_measures_a_family_and_prices_its_protocol(chars, capsys, monkeypatch):
    from finenvs.cli import main
    from finenvs.evaluation import cost

    counted = []

    def decisions(protocol, **kwargs):  # resetting every episode of a protocol takes seconds: a fixed count here
        counted.append((protocol, [t.env_id for t in kwargs["families"]]))
        return {"FinDeltaHedge-v0": (2, 10)} if protocol == "fabpp" else {}

    monkeypatch.setattr(cost, "protocol_decisions", decisions)
    code = main(["cost", "--envs", "FinDeltaHedge-v0", "--episodes", "1", "--decisions", "3", "--price-in", "1",
                 "--price-out", "2", "--price-cached", "0.5", "--json"])
    assert code == 0 and counted == [("herculean", ["FinDeltaHedge-v0"]), ("fabpp", ["FinDeltaHedge-v0"])]
    out = json.loads(capsys.readouterr().out)
    family = out["families"]["FinDeltaHedge-v0"]
    assert family["decisions"] == 3 and family["median_prompt"] > 0 and family["counted"] == "o200k_base estimate"
    assert out["projections"]["herculean"]["rows"] == []
    [row] = out["projections"]["fabpp"]["rows"]
    assert row["decisions"] == 10 and row["prompt"] == pytest.approx(family["mean_prompt"] * 10)
    assert 0 < row["cached"] < row["prompt"]
    assert row["cost_usd"] == pytest.approx(((row["prompt"] - row["cached"]) * 1 + row["cached"] * 0.5
                                             + row["completion"] * 2) / 1e6)
    assert out["projections"]["fabpp"]["cost_usd"] == pytest.approx(row["cost_usd"])
    assert main(["cost", "--envs", "FinDeltaHedge-v0", "--price-in", "1"]) == 2  # the prices go together
    assert "go together" in capsys.readouterr().err


def test_protocol_plans_are_the_benchs_model_episodes():
    from finenvs.evaluation.cost import projection, protocol_plan

    herculean = protocol_plan("herculean")
    assert set(herculean) == {"FinTrading-v0", "FinHedging-v0", "FinReport-v0", "FinAudit-v0"}
    assert {e.env_kwargs.get("split") for e in herculean["FinTrading-v0"]} == {"eval", "live"}
    fabpp = protocol_plan("fabpp")
    assert set(fabpp) == {"FinOptions-v0", "FinQA-v0"}
    assert any(e.env_kwargs.get("split") == "fab_public" for e in fabpp["FinQA-v0"])  # its further split
    with pytest.raises(ValueError, match="unknown protocol"):
        protocol_plan("nope")
    unknown = projection({"FinQA-v0": (1, 5)}, {}, None)  # nothing measured: unknown, never 0
    assert unknown["prompt"] is None and unknown["rows"][0]["cost_usd"] is None


def test_the_scorecard_has_a_tokens_table_per_agent_run(tmp_path):
    from finenvs.evaluation.bench.render import tokens_markdown
    from finenvs.evaluation.bench.scorecard import Scorecard

    per = {"prompt": 1234.0, "completion": 56.0, "cached": 1000.0, "cached_share": 0.81, "counted": "estimate"}
    runs = [{"env": "FinTrading-v0", "agent": "scripted_agent", "split": "eval",
             "efficiency": {"per_decision_tokens": per}},
            {"env": "FinTrading-v0", "agent": "mcp | x", "split": "eval", "efficiency": {}}]
    card = Scorecard(config={}, results=[], errors=[], reproduction=[], run_dir=tmp_path, seconds=0.0, agents=runs)
    assert card.tokens()[1]["counted"] == "n/a"
    text = "\n".join(tokens_markdown(card))
    assert "| FinTrading-v0 | scripted_agent | eval | ~1,234 / 56 / 1,000" in re.sub(" +", " ", text) and "81%" in text
    assert "mcp \\| x" in text and "n/a" in text


def test_the_run_cached_share_counts_what_an_episode_repeats_from_the_one_before(chars):
    """An episode's first request repeats the previous episode's tool schemas, system prompt and instructions: the
    run's share counts them (a provider's cache keeps them), the episode's share cannot (it has no request before)."""
    import gymnasium as gym

    from finenvs.evaluation.cost import measure_tokens
    from finenvs.evaluation.llm import SYSTEM_PROMPT
    from finenvs.tasks import tasks

    task = next(t for t in tasks() if t.env_id == "FinOptions-v0")
    m = measure_tokens(task, episodes=2, decisions=2)  # one decision per episode
    assert m.decisions == 2 and len(m.run_cached) == 2
    assert m.run_cached[0] == m.cached[0]  # nothing ran before the first episode
    env = gym.make(task.text_env_id)
    env.reset(seed=0)
    schemas = tk.request_parts([], env.tool_specs())[0]
    assert m.run_cached[1] - m.cached[1] >= len(schemas) + len(f"system\n{SYSTEM_PROMPT}") + tk.MESSAGE_OVERHEAD
    record = m.record()
    assert record["run_cached_share"] == pytest.approx(sum(m.run_cached) / sum(m.prompt))
    assert record["run_cached_share"] > record["cached_share"] > 0
