"""finenvs.evaluation.windows: window syntax, calendars, the episode cache, the cutoff, the paired difference to
Buy&Hold, determinism and the date lock of a window's result."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from finenvs.evaluation import windows as W

ENV = "FinTrading-v0"
LONG = "yahoo_2015_2026"
SPEC_2016 = "quarterly:2016-01-01:2016-12-31"


# ---------------------------------------------------------------------------- syntax
def test_parse_windows():
    spec = W.parse_windows(" Quarterly:2016-01-01:2025-12-31 ")
    assert spec == W.WindowSpec("quarterly", "2016-01-01", "2025-12-31")
    assert str(spec) == "quarterly:2016-01-01:2025-12-31"


@pytest.mark.parametrize("text, message", [
    ("quarterly", "expected FREQ:START:END"),
    ("quarterly:2016-01-01", "expected FREQ:START:END"),
    ("quarterly:2016-01-01:2016-12-31:x", "expected FREQ:START:END"),
    ("quarterly::2016-12-31", "expected FREQ:START:END"),
    ("weekly:2016-01-01:2016-12-31", "unknown frequency 'weekly'"),
    ("quarterly:2016-1-1:2016-12-31", "start '2016-1-1' is not a date"),
    ("quarterly:2016-01-01:2016-02-30", "end"),
    ("quarterly:2017-01-01:2016-12-31", "after end"),
    (None, "not a string"),
])
def test_parse_windows_errors_say_what_is_wrong(text, message):
    with pytest.raises(ValueError, match=message) as err:
        W.parse_windows(text)
    assert "quarterly:2016-01-01:2025-12-31" in str(err.value) or "after end" in message


# ---------------------------------------------------------------------------- calendars
def _weekdays(lo: str, hi: str, holidays: tuple[str, ...] = ()) -> np.ndarray:
    days = np.arange(np.datetime64(lo), np.datetime64(hi) + 1)
    days = days[np.is_busday(days)]
    return days[~np.isin(days, np.array(holidays, dtype="datetime64[D]"))]


def test_quarterly_windows_on_a_known_calendar():
    cal = _weekdays("2015-06-01", "2016-12-31", holidays=("2016-01-01", "2016-03-25", "2016-12-26"))
    assert W.quarterly_windows("2016-01-01", "2016-12-31", cal) == [
        ("2016-01-04", "2016-03-31"), ("2016-04-01", "2016-06-30"),
        ("2016-07-01", "2016-09-30"), ("2016-10-03", "2016-12-30"),
    ]
    # a range that cuts a quarter keeps only the whole quarters; calendar strings work too
    assert W.quarterly_windows("2016-02-01", "2016-09-30", [str(d) for d in cal]) == [
        ("2016-04-01", "2016-06-30"), ("2016-07-01", "2016-09-30")]


def test_a_quarter_the_data_covers_only_in_part_is_left_out():
    cal = _weekdays("2016-02-15", "2016-11-10")
    assert W.quarterly_windows("2016-01-01", "2016-12-31", cal) == [
        ("2016-04-01", "2016-06-30"), ("2016-07-01", "2016-09-30")]
    assert W.calendar_windows("2016-01-01", "2016-12-31", cal, months=12) == []
    assert W.calendar_windows("2016-01-01", "2016-12-31", cal, months=1)[0] == ("2016-03-01", "2016-03-31")
    assert W.quarterly_windows("2016-01-01", "2016-12-31", []) == []


def test_long_dataset_is_the_one_covering_the_range():
    from finenvs.data.catalog import default_catalog

    catalog = default_catalog()
    assert W.long_dataset(catalog, "2016-01-01", "2025-12-31") == LONG
    assert W.long_dataset(catalog, "2016-01-01", "2025-12-31", ["SPY"]) == "stooq_etf_2005_2026"
    with pytest.raises(KeyError, match="no price dataset"):
        W.long_dataset(catalog, "2016-01-01", "2025-12-31", ["NOPE"])


# ---------------------------------------------------------------------------- runs
@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    """2 symbols x 4 quarters x 2 policies, with a cache."""
    cache = tmp_path_factory.mktemp("windows-cache")
    result = W.run_windows(ENV, ["AAPL", "JPM"], SPEC_2016, ["buy_and_hold", "momentum"], cache_dir=cache,
                           progress=False, n_boot=500)
    return result, cache


def test_a_small_real_run_completes(small_run):
    result, _ = small_run
    assert result["errors"] == [] and result["dataset"] == LONG
    assert result["played"] == 16 and result["cached"] == 0 and len(result["rows"]) == 16
    assert result["windows_per_symbol"] == {"AAPL": 4, "JPM": 4}
    assert {tuple(r["window"]) for r in result["rows"]} == {
        ("2016-01-04", "2016-03-31"), ("2016-04-01", "2016-06-30"),
        ("2016-07-01", "2016-09-30"), ("2016-10-03", "2016-12-30")}
    for row in result["rows"]:  # the episode played exactly its window
        assert (row["first"], row["last"]) == tuple(row["window"]) and row["steps"] > 55
    assert result["reference"] == "buy_and_hold"
    overall = result["summary"]["momentum"]["overall"]
    assert overall["windows"] == 8 and set(result["summary"]["momentum"]["symbols"]) == {"AAPL", "JPM"}
    cr = overall["cumulative_return"]
    assert cr["ci"][0] <= cr["mean"] <= cr["ci"][1]
    assert cr["mean"] == pytest.approx(np.mean([r["standard"]["cumulative_return"] for r in result["rows"]
                                                if r["policy"] == "momentum"]))
    json.dumps(result)  # JSON-able as it is


def test_buy_and_hold_paired_with_itself_is_exactly_zero(small_run):
    result, _ = small_run
    for group in (result["paired"]["buy_and_hold"]["overall"], *result["paired"]["buy_and_hold"]["symbols"].values()):
        for key, _, _ in W.METRICS:
            assert group[key]["estimate"] == 0.0 and group[key]["ci"] == [0.0, 0.0]
            assert group[key]["win_rate"] == 0.0 and group[key]["tie_rate"] == 1.0
    momentum = result["paired"]["momentum"]["overall"]["cumulative_return"]
    bh = {(r["symbol"], *r["window"]): r["standard"]["cumulative_return"] for r in result["rows"]
          if r["policy"] == "buy_and_hold"}
    diffs = [r["standard"]["cumulative_return"] - bh[(r["symbol"], *r["window"])] for r in result["rows"]
             if r["policy"] == "momentum"]
    assert momentum["estimate"] == pytest.approx(np.mean(diffs))
    assert momentum["win_rate"] == pytest.approx(np.mean(np.array(diffs) > 0))


def test_the_cache_makes_a_second_call_play_no_episode(small_run, monkeypatch):
    result, cache = small_run
    calls = []
    play = W.play_window
    monkeypatch.setattr(W, "play_window", lambda *a, **k: calls.append(a) or play(*a, **k))
    again = W.run_windows(ENV, ["AAPL", "JPM"], SPEC_2016, ["buy_and_hold", "momentum"], cache_dir=cache,
                          progress=False, n_boot=500)
    assert calls == [] and again["played"] == 0 and again["cached"] == 16
    assert again["rows"] == result["rows"] and again["summary"] == result["summary"]
    # another seed is another key: played again
    W.run_windows(ENV, ["AAPL"], [("2016-04-01", "2016-06-30")], ["buy_and_hold"], seed=1, cache_dir=cache,
                  progress=False, n_boot=10)
    assert len(calls) == 1
    # a damaged file is not trusted: the episode is played again and the file rewritten
    path = next(p for p in cache.rglob("*.json") if "buy_and_hold_s1" in p.name)
    path.write_text("{not json")
    W.run_windows(ENV, ["AAPL"], [("2016-04-01", "2016-06-30")], ["buy_and_hold"], seed=1, cache_dir=cache,
                  progress=False, n_boot=10)
    assert len(calls) == 2 and json.loads(path.read_text())["key"]["seed"] == 1


def test_after_keeps_the_windows_that_start_after_a_cutoff(monkeypatch):
    monkeypatch.setattr(W, "play_window", lambda env_id, kwargs, policy, seed: {
        "first": kwargs["start"], "last": kwargs["end"], "standard": {"cumulative_return": 0.0}})
    result = W.run_windows(ENV, ["AAPL"], SPEC_2016, ["buy_and_hold"], after="2016-06-30", progress=False,
                           n_boot=10)
    assert [tuple(r["window"]) for r in result["rows"]] == [("2016-07-01", "2016-09-30"),
                                                            ("2016-10-03", "2016-12-30")]
    assert result["after"] == "2016-06-30"
    late = W.run_windows(ENV, ["AAPL"], SPEC_2016, ["buy_and_hold"], after="2016-07-01", progress=False, n_boot=10)
    assert [r["window"][0] for r in late["rows"]] == ["2016-10-03"]


def test_bad_requests_fail_before_any_episode():
    with pytest.raises(KeyError, match="valid policies"):
        W.run_windows(ENV, ["AAPL"], SPEC_2016, ["nope"], progress=False)
    with pytest.raises(ValueError, match="not a market family"):
        W.run_windows("FinQA-v0", None, SPEC_2016, progress=False)
    with pytest.raises(ValueError, match="unknown frequency"):
        W.run_windows(ENV, ["AAPL"], "weekly:2016-01-01:2016-12-31", progress=False)
    with pytest.raises(KeyError, match="does not hold"):
        W.run_windows(ENV, ["ADBE"], SPEC_2016, dataset=LONG, progress=False)


def test_an_episode_that_fails_is_reported_not_dropped():
    # 2015Q1 lacks the 48 days of history the first decision needs on a series starting 2015-01-02
    result = W.run_windows(ENV, ["AAPL"], "quarterly:2015-01-01:2015-06-30", ["buy_and_hold"], dataset=LONG,
                           progress=False, n_boot=10)
    assert [e["window"][0] for e in result["errors"]] == ["2015-01-02"] and "history" in result["errors"][0]["error"]
    assert [r["window"][0] for r in result["rows"]] == ["2015-04-01"]
    assert any("failed" in line for line in W.windows_markdown(result))


def test_same_seed_same_numbers_other_seed_other():
    def run(seed):
        return W.run_windows(ENV, ["MSFT"], "quarterly:2017-01-01:2017-12-31", ["random"], seed=seed,
                             progress=False, n_boot=200)

    a, b, c = run(3), run(3), run(4)
    assert a["rows"] == b["rows"] and a["summary"] == b["summary"]
    assert [r["standard"] for r in a["rows"]] != [r["standard"] for r in c["rows"]]


def test_a_window_result_ignores_every_bar_after_its_end(catalog):
    """The date lock: perturb every bar after the window's last day; the window's episode is unchanged."""
    frame = catalog.series("AAPL", LONG).to_frame()
    window = ("2016-04-01", "2016-06-30")
    late = frame["date"] > pd.Timestamp(window[1])
    rng = np.random.default_rng(0)
    shaken = frame.copy()
    factor = rng.uniform(0.5, 1.5, late.sum())
    for col in ("open", "high", "low", "close"):
        shaken.loc[late, col] = shaken.loc[late, col] * factor
    shaken.loc[late, "volume"] = shaken.loc[late, "volume"] * rng.uniform(0.1, 3.0, late.sum())

    def run(data, windows):
        return W.run_windows(ENV, None, windows, ["buy_and_hold", "momentum", "rsi_mean_reversion"],
                             env_kwargs={"data": data}, progress=False, n_boot=10)

    before, after = run(frame, [window]), run(shaken, [window])
    assert before["data"] != after["data"]  # the data digest (the cache key) sees the change ...
    assert before["rows"] == after["rows"] and before["errors"] == []  # ... the window's result does not
    later = [("2016-07-01", "2016-09-30")]  # sanity: the perturbation does change a later window
    assert run(frame, later)["rows"] != run(shaken, later)["rows"]


def test_markdown_and_plot(small_run, tmp_path):
    result, _ = small_run
    lines = W.windows_markdown(result)
    text = "\n".join(lines)
    assert "| policy " in text and "ΔCR vs buy_and_hold" in text and "SR (all days)" in text
    row = next(ln for ln in text.splitlines() if ln.startswith("| buy_and_hold"))
    assert "0.00 [0.00, 0.00]" in row
    pytest.importorskip("matplotlib")
    paths = W.windows_plot(result, tmp_path)
    assert [p.name for p in paths] == [f"windows_{ENV}.png"] and paths[0].stat().st_size > 1000


def test_the_suite_runs_the_market_families_only(monkeypatch):
    monkeypatch.setattr(W, "run_windows", lambda env_id, *a, **k: {"env": env_id, "ok": True})
    out = W.run_windows_suite([ENV, "FinQA-v0"], SPEC_2016, progress=False)
    assert list(out) == [ENV]
    with pytest.raises(ValueError, match="unknown frequency"):
        W.run_windows_suite([ENV], "weekly:2016-01-01:2016-12-31")


def test_cli_bench_windows_adds_the_section_and_refuses_a_bad_spec(tmp_path, capsys):
    from finenvs.cli import main

    base = ["bench", "--suite", "herculean", "--envs", "FinTrading-v0", "--no-agents", "--no-plots", "--no-html",
            "--symbols", "AAPL", "--out", str(tmp_path)]
    assert main([*base, "--windows", "quarterly:2024-01-01:2024-12-31", "--after", "2024-03-31"]) == 0
    (card,) = tmp_path.glob("*/scorecard.json")
    record = json.loads(card.read_text())
    assert record["config"]["windows"] == "quarterly:2024-01-01:2024-12-31"
    windows = record["windows"]["FinTrading-v0"]
    assert windows["windows"] == "quarterly:2024-01-01:2024-12-31" and windows["windows_per_symbol"] == {"AAPL": 3}
    assert {r["first"][:7] for r in windows["rows"]} == {"2024-04", "2024-07", "2024-10"}  # after the cutoff
    assert "over many windows" in (card.parent / "scorecard.md").read_text()
    assert "FinTrading-v0 over many windows (`quarterly:2024-01-01:2024-12-31`" in capsys.readouterr().out
    capsys.readouterr()
    assert main([*base, "--windows", "weekly:2024"]) == 2
    assert "windows" in capsys.readouterr().err


def test_cli_bench_windows_plays_a_long_history_symbol_in_the_windows_part_only(tmp_path):
    """JPM has only a long history: the split part skips it (and says so); it used to error the whole bench."""
    from finenvs.cli import main

    assert main(["bench", "--suite", "herculean", "--envs", "FinTrading-v0", "--no-plots", "--no-html",
                 "--symbols", "AAPL", "JPM", "--windows", "quarterly:2016-01-01:2016-06-30", "--out",
                 str(tmp_path)]) == 0
    (card,) = tmp_path.glob("*/scorecard.json")
    record = json.loads(card.read_text())
    assert record["errors"] == []
    assert {r["symbol"] for r in record["rows"]} == {"AAPL"}  # the split part: the core symbol only
    assert record["windows"]["FinTrading-v0"]["windows_per_symbol"] == {"AAPL": 2, "JPM": 2}
    (skip,) = record["config"]["split_skipped"]
    assert skip.startswith("FinTrading-v0: JPM played in the windows part only")
    assert "Split part: FinTrading-v0: JPM" in (card.parent / "scorecard.md").read_text()
    assert all(run["env"] != "FinTrading-v0" or "JPM" not in json.dumps(run["episodes"]) for run in record["agents"])
    # the bench's agents play the windows too, JPM included, beside the baselines
    windows = record["windows"]["FinTrading-v0"]
    assert "scripted_agent" in windows["policies"] and windows["summary"]["scripted_agent"]["overall"]["windows"] == 4
    assert {r["symbol"] for r in windows["rows"] if r["policy"] == "scripted_agent"} == {"AAPL", "JPM"}


def test_agents_play_the_baselines_windows_through_the_text_interface(tmp_path, monkeypatch):
    """The scripted agent over the same (symbol, window) episodes: its rows sit beside the baselines', paired with
    buy_and_hold on the same windows; each window is a finenvs llm run that re-scores exactly; a second call
    resumes the runs instead of playing them again; a symbol the env refuses fails only its own episodes."""
    from finenvs.evaluation.agent_runs import BenchAgent
    from finenvs.evaluation.score import score_run

    agent = BenchAgent("scripted_agent", lambda task: task.make_scripted_agent())
    windows = [("2016-04-01", "2016-06-30"), ("2016-07-01", "2016-09-30")]
    result = W.run_windows(ENV, ["AAPL", "JPM"], windows, ["buy_and_hold"], progress=False, n_boot=200,
                           agents=[agent], agent_root=tmp_path / "agents")
    assert result["errors"] == [] and result["policies"] == ["buy_and_hold", "scripted_agent"]
    mine = {(r["symbol"], *r["window"]): r for r in result["rows"] if r["policy"] == "scripted_agent"}
    base = {(r["symbol"], *r["window"]): r for r in result["rows"] if r["policy"] == "buy_and_hold"}
    assert set(mine) == set(base) and len(mine) == 4
    for key, row in mine.items():  # the same episode: same first and last day, same number of decisions
        assert (row["first"], row["last"], row["steps"]) == (base[key]["first"], base[key]["last"], base[key]["steps"])
        assert row["look_ahead_attempts"] == 0
    paired = result["paired"]["scripted_agent"]["overall"]["cumulative_return"]
    diffs = [mine[k]["standard"]["cumulative_return"] - base[k]["standard"]["cumulative_return"] for k in mine]
    assert paired["estimate"] == pytest.approx(np.mean(diffs))
    assert len(result["agents"]) == 2 and all(a["status"] == "complete" for a in result["agents"])
    assert all(a["reproduced"] and a["signature"] == "signed" for a in result["agents"])
    for run in result["agents"]:
        score = score_run(run["run_dir"])
        assert score.status == "reproduced" and len(score.episodes) == 2
    import finenvs.evaluation.llm as llm

    played = []
    run_llm = llm.run_llm
    monkeypatch.setattr(llm, "run_llm", lambda *a, **k: played.append(k.get("resume")) or run_llm(*a, **k))
    again = W.run_windows(ENV, ["AAPL", "JPM"], windows, ["buy_and_hold"], progress=False, n_boot=200,
                          agents=[agent], agent_root=tmp_path / "agents")
    assert all(p is not None for p in played) and len(played) == 2  # resumed, not started again
    assert again["summary"]["scripted_agent"] == result["summary"]["scripted_agent"]
    with pytest.raises(ValueError, match="repeat a baseline"):
        W.run_windows(ENV, ["AAPL"], windows, ["buy_and_hold"], progress=False,
                      agents=[BenchAgent("buy_and_hold", agent.make)], agent_root=tmp_path)


def test_a_symbol_the_env_refuses_fails_only_its_own_agent_episodes(tmp_path):
    from finenvs.evaluation.agent_runs import BenchAgent

    agent = BenchAgent("scripted_agent", lambda task: task.make_scripted_agent())
    result = W.run_windows("FinReport-v0", ["AAPL", "JPM"], [("2016-04-01", "2016-06-30")], ["buy_and_hold"],
                           progress=False, n_boot=200, agents=[agent], agent_root=tmp_path)
    refused = {(e["symbol"], e["policy"]) for e in result["errors"]}
    assert refused == {("JPM", "buy_and_hold"), ("JPM", "scripted_agent")}  # JPM has no peer basket
    assert all("no peer basket" in e["error"] for e in result["errors"])
    assert [(r["symbol"], r["policy"]) for r in result["rows"]] == [("AAPL", "buy_and_hold"), ("AAPL", "scripted_agent")]
