"""HERCULEAN's live regime: ``finenvs llm --live`` rolled forward over days held back from the data gives the same
actions, rewards and metrics as one run over the whole window."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

import finenvs  # noqa: F401
from finenvs.data.catalog import default_catalog
from finenvs.evaluation.llm import RunConfig, run_llm
from finenvs.evaluation.runlog import read_trajectories
from finenvs.evaluation.score import score_run
from finenvs.tasks import task_of
from helpers import record_shape_mismatches

END = "2026-04-30"
CUTS = ("2026-04-15", "2026-04-22", END)


@pytest.fixture(scope="module")
def bars() -> pd.DataFrame:
    s = default_catalog().series("TSLA")
    frame = pd.DataFrame({"date": s.dates.astype(str), "open": s.open, "high": s.high, "low": s.low,
                          "close": s.close, "volume": s.volume})
    return frame[frame.date <= END]


def _config(path: Path, **kwargs) -> RunConfig:
    return RunConfig(env_id="FinTrading-v0", symbols=["TSLA"], split="live",
                     env_kwargs={"data": str(path), "end": END}, **kwargs)


def _lines(run_dir: Path, kind: str) -> list[dict]:
    return [r for r in read_trajectories(run_dir / "trajectories.jsonl")[0] if r.get("type") == kind]


@pytest.fixture(scope="module")
def runs(tmp_path_factory, bars):
    """One run over the whole window, and one live run rolled forward as the bars arrive (three data adds)."""
    out = tmp_path_factory.mktemp("live")
    path = out / "tsla.csv"
    agent = task_of("FinTrading-v0").make_scripted_agent()
    bars.to_csv(path, index=False)
    whole = run_llm(_config(path), agent, out=out, name="whole", progress=False)
    states = []
    for k, cut in enumerate(CUTS):
        bars[bars.date <= cut].to_csv(path, index=False)
        summary = run_llm(_config(path, live=True), agent, out=out, name="live",
                          resume=out / "live" if k else None, progress=False)
        states.append((summary.status, [o.status for o in summary.outcomes], len(_lines(out / "live", "step")),
                       score_run(out / "live")))
    return whole, out / "live", states


def test_a_live_run_waits_at_its_newest_bar_then_completes_the_window(runs):
    whole, live, states = runs
    assert [s[0] for s in states] == ["waiting", "waiting", "complete"]
    assert states[0][2] < states[1][2] < states[2][2]  # each data add gives new decisions
    first = states[0][3]
    assert first.status == "incomplete" and "finenvs llm --resume" in first.resume_hint()
    assert first.problems == []  # the pending line is a valid trajectory line


def test_pending_lines_and_resumed_runs_hold_the_records_the_run_log_declares(runs):
    _, live, _ = runs
    mismatches, seen = record_shape_mismatches(live)
    assert mismatches == []
    assert seen["PendingRecord"] == 2 and seen["StepRecord"] > 2 and seen["EpisodeRecord"] == 1
    steps = _lines(live, "step")
    assert sum("decided_pending" in s for s in steps) == 2  # the optional fields of a committed pending decision
    assert len(json.loads((live / "run.json").read_text())["resumed_utc"]) == len(CUTS) - 1


def test_rolled_forward_the_run_equals_one_run_over_the_whole_window(runs):
    whole, live, _ = runs
    a, b = _lines(whole.run_dir, "step"), _lines(live, "step")
    assert [r["action"] for r in a] == [r["action"] for r in b]
    assert [r["reward"] for r in a] == [r["reward"] for r in b]
    assert [r["date"] for r in a] == [r["date"] for r in b]
    sa, sb = score_run(whole.run_dir), score_run(live)
    assert sa.status == sb.status == "reproduced"
    assert sa.episodes[0].metrics["standard"] == sb.episodes[0].metrics["standard"]
    assert sa.episodes[0].metrics["herculean"] == sb.episodes[0].metrics["herculean"]


def test_each_wait_recorded_the_decision_at_its_bar_and_the_next_invocation_stepped_it(runs):
    _, live, _ = runs
    pending = _lines(live, "pending")
    steps = {r["step"]: r for r in _lines(live, "step")}
    assert len(pending) == 2
    assert [p["date"] for p in pending] == list(CUTS[:2])  # asked at the newest bar of each data drop
    for p in pending:
        step = steps[p["step"]]
        assert step["date"] == p["date"] and step["action"] == p["action"] and step["decided_pending"] == p["date"]
        assert step["prompt"] == p["prompt"]  # decided on what was visible then, stepped when the next bar came


def test_a_moved_pending_line_is_reported(runs, tmp_path):
    _, live, _ = runs
    lines = (live / "trajectories.jsonl").read_text().splitlines()
    k = next(i for i, line in enumerate(lines) if '"type": "pending"' in line or '"type":"pending"' in line)
    record = json.loads(lines[k])
    assert record["type"] == "pending"
    copy = tmp_path / "copy"
    copy.mkdir()
    (copy / "run.json").write_text((live / "run.json").read_text())
    lines.insert(0, lines.pop(k))
    (copy / "trajectories.jsonl").write_text("\n".join(lines) + "\n")
    assert score_run(copy).exit_code == 1


def test_live_is_refused_for_a_family_without_a_window():
    with pytest.raises(ValueError, match="live runs are for"):
        RunConfig(env_id="FinQA-v0", live=True)
    assert RunConfig(env_id="FinTrading-v0", live=True).env_kwargs["end"] == "latest"  # open by default


def test_cli_live_exits_0_while_waiting_and_refuses_live_on_a_plain_run(tmp_path, bars, capsys):
    from finenvs.cli import main

    path = tmp_path / "tsla.csv"
    bars[bars.date <= CUTS[0]].to_csv(path, index=False)
    plain = run_llm(_config(path), task_of("FinTrading-v0").make_scripted_agent(), out=tmp_path, name="plain",
                    progress=False)
    assert main(["llm", "--resume", str(plain.run_dir), "--live", "--quiet"]) == 2
    assert "not a live run" in capsys.readouterr().err
    config = _config(path, live=True)
    summary = run_llm(config, task_of("FinTrading-v0").make_scripted_agent(), out=tmp_path, name="live",
                      progress=False)
    assert summary.status == "waiting"
    assert main(["llm", "--resume", str(summary.run_dir), "--live", "--quiet"]) == 0  # no new bar: still waiting
    assert len(_lines(summary.run_dir, "pending")) == 1  # the same decision is not asked for twice


def test_finenvs_data_add_rolls_a_live_run_forward_day_by_day(tmp_path, bars, monkeypatch, capsys):
    """The scheduled-job loop end to end through the CLI: data add, llm --live, data add, llm --resume --live, ...
    on a user symbol; the result equals one run over the whole window on the same bars."""
    from finenvs.cli import main

    monkeypatch.setenv("FINENVS_USER_DATA", str(tmp_path / "layer"))
    start = bars[bars.date <= "2026-04-10"]
    start.to_csv(tmp_path / "start.csv", index=False)
    assert main(["data", "add", "--prices", str(tmp_path / "start.csv"), "--symbol", "TSLA2"]) == 0
    base = ["llm", "--env", "FinTrading-v0", "--symbols", "TSLA2", "--live", "--end", END, "--out",
            str(tmp_path / "runs"), "--quiet"]
    assert main([*base, "--name", "live"]) == 0
    run = tmp_path / "runs" / "live"
    waits = []
    for cut in ("2026-04-17", "2026-04-24", END):
        day = bars[(bars.date > waits[-1] if waits else bars.date > "2026-04-10") & (bars.date <= cut)]
        day.to_csv(tmp_path / f"{cut}.csv", index=False)
        assert main(["data", "add", "--prices", str(tmp_path / f"{cut}.csv"), "--symbol", "TSLA2"]) == 0
        assert main(["llm", "--resume", str(run), "--live", "--quiet"]) == 0
        waits.append(cut)
    capsys.readouterr()
    live = score_run(run)
    assert live.status == "reproduced", live.problems
    bars.to_csv(tmp_path / "whole.csv", index=False)
    whole = run_llm(_config(tmp_path / "whole.csv"), task_of("FinTrading-v0").make_scripted_agent(),
                    out=tmp_path / "runs", name="whole", progress=False)
    a, b = _lines(whole.run_dir, "step"), _lines(run, "step")
    assert [r["action"] for r in a] == [r["action"] for r in b] and [r["reward"] for r in a] == [r["reward"] for r in b]
    assert score_run(whole.run_dir).episodes[0].metrics["standard"] == live.episodes[0].metrics["standard"]
    assert len(_lines(run, "pending")) == 3  # one wait per invocation until the last add reaches the end


def test_a_pairs_run_rolled_forward_equals_one_run_over_the_whole_window(tmp_path):
    """FinHedging-v0 on a user's two-symbol file (``data=``): three data drops, the same actions, rewards, score."""
    frames = []
    for sym in ("AAPL", "MSFT"):
        s = default_catalog().series(sym)
        frames.append(pd.DataFrame({"date": s.dates.astype(str), "symbol": sym, "open": s.open, "high": s.high,
                                    "low": s.low, "close": s.close, "volume": s.volume}))
    bars = pd.concat(frames, ignore_index=True)
    bars = bars[bars.date <= END]
    path = tmp_path / "pair.csv"

    def config(**kwargs) -> RunConfig:
        return RunConfig(env_id="FinHedging-v0", symbols=["AAPL", "MSFT"], split="live",
                         env_kwargs={"data": str(path), "end": END}, **kwargs)

    agent = task_of("FinHedging-v0").make_scripted_agent()
    bars.to_csv(path, index=False)
    whole = run_llm(config(), agent, out=tmp_path, name="whole", progress=False)
    statuses = []
    for k, cut in enumerate(CUTS):
        bars[bars.date <= cut].to_csv(path, index=False)
        summary = run_llm(config(live=True), agent, out=tmp_path, name="live",
                          resume=tmp_path / "live" if k else None, progress=False)
        statuses.append(summary.status)
    assert statuses == ["waiting", "waiting", "complete"]
    a, b = _lines(whole.run_dir, "step"), _lines(tmp_path / "live", "step")
    assert len(a) > 10 and [r["action"] for r in a] == [r["action"] for r in b]
    assert [r["reward"] for r in a] == [r["reward"] for r in b] and [r["date"] for r in a] == [r["date"] for r in b]
    sa, sb = score_run(whole.run_dir), score_run(tmp_path / "live")
    assert sa.status == sb.status == "reproduced"
    assert sa.episodes[0].metrics["standard"] == sb.episodes[0].metrics["standard"]
    assert [p["date"] for p in _lines(tmp_path / "live", "pending")] == list(CUTS[:2])  # at the newest bars


PEERS = '{"peers": {"TSLA2": ["AAPL", "MSFT"]}}'


def test_weekly_reports_roll_forward_on_a_user_symbol_with_its_peer_basket(tmp_path, bars, monkeypatch, capsys):
    """FinReport-v0 through the CLI on a symbol added with ``finenvs data add``: its peers come in --env-kwargs
    (recorded with the run, so --resume keeps them); rolled forward weekly it equals one run over the window."""
    from finenvs.cli import main

    monkeypatch.setenv("FINENVS_USER_DATA", str(tmp_path / "layer"))
    bars[bars.date <= "2026-04-10"].to_csv(tmp_path / "start.csv", index=False)
    assert main(["data", "add", "--prices", str(tmp_path / "start.csv"), "--symbol", "TSLA2"]) == 0
    base = ["llm", "--env", "FinReport-v0", "--symbols", "TSLA2", "--end", END, "--out", str(tmp_path / "runs"),
            "--quiet"]
    capsys.readouterr()
    assert main([*base, "--live", "--name", "nopeers"]) == 2  # no basket for a user symbol: refused up front
    assert "TSLA2 has no peer basket" in capsys.readouterr().err
    assert not (tmp_path / "runs" / "nopeers").exists()
    assert main([*base, "--live", "--env-kwargs", PEERS, "--name", "live"]) == 0
    run = tmp_path / "runs" / "live"
    assert json.loads((run / "run.json").read_text())["config"]["env_kwargs"]["peers"] == {"TSLA2": ["AAPL", "MSFT"]}
    prev = "2026-04-10"
    for cut in ("2026-04-17", "2026-04-24", END):
        bars[(bars.date > prev) & (bars.date <= cut)].to_csv(tmp_path / f"{cut}.csv", index=False)
        prev = cut
        assert main(["data", "add", "--prices", str(tmp_path / f"{cut}.csv"), "--symbol", "TSLA2"]) == 0
        assert main(["llm", "--resume", str(run), "--live", "--quiet"]) == 0
    live = score_run(run)
    assert live.status == "reproduced", live.problems
    assert main([*base, "--split", "live", "--env-kwargs", PEERS, "--name", "whole"]) == 0
    a, b = _lines(tmp_path / "runs" / "whole", "step"), _lines(run, "step")
    assert len(a) >= 3 and [r["action"] for r in a] == [r["action"] for r in b]
    assert [r["reward"] for r in a] == [r["reward"] for r in b]


@pytest.mark.parametrize(("kwargs", "message"), [
    ('{"fee_bpss": 10}', "FinTrading-v0 takes no argument 'fee_bpss'; its arguments:"),
    ("{fee_bps: 10}", "--env-kwargs is not JSON"),
    ("[1, 2]", "--env-kwargs must be a JSON object"),
])
def test_env_kwargs_are_checked_before_any_work(tmp_path, capsys, kwargs, message):
    from finenvs.cli import main

    for command in (["llm"], ["mcp", "--print-config"]):
        assert main([*command, "--env", "FinTrading-v0", "--env-kwargs", kwargs, "--out", str(tmp_path)]) == 2
        assert message in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []
