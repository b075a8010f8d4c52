"""HERCULEAN trading-decision files: strict reading, scoring under both presets, export of runs, round trip."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

from finenvs.errors import DataError, UnknownSymbolError
from finenvs.evaluation.herculean_files import (
    MAX_RECOMMENDATIONS,
    cli_export,
    cli_score_files,
    export_run,
    herculean_markdown,
    read_decisions,
    score_decisions,
)
from finenvs.evaluation.runlog import differences
from finenvs.scoring.presets import SHARPE_LABELS
from finenvs.tasks import task_of
from finenvs.tasks.common import market_episode_metrics
from finenvs.tasks.trading.spec import HERCULEAN_PUBLISHED_BUY_AND_HOLD
from finenvs.text.chat import NO_USAGE, ChatReply

REFERENCE = Path("/work/shared/data/reference/herculean/trading_decisions_format_sample.json")
#: A bounded error message: the file's path plus a few dozen characters of what was wrong.
MAX_MESSAGE = 400

#: TSLA closes of the shipped data, 2026-01-02..2026-01-09 (2026-01-05 left out, as HERCULEAN's sample does).
SAMPLE_ROWS = [("2026-01-02", 438.07, "SELL"), ("2026-01-06", 432.9599914550781, "SELL"), ("2026-01-07", 431.41, "HOLD"),
               ("2026-01-08", 435.7999877929687, "HOLD"), ("2026-01-09", 445.010009765625, "HOLD")]
WEEK = ("2026-01-02", "2026-01-05", "2026-01-06", "2026-01-07", "2026-01-08", "2026-01-09")


def sample(rows: list[tuple[str, Any, Any]] = SAMPLE_ROWS, **top: Any) -> dict[str, Any]:
    doc = {"status": "in_progress", "symbol": "TSLA", "model": "test-model", "start_date": "2026-01-02",
           "end_date": "2026-01-09",
           "recommendations": [{"date": d, "price": p, "recommended_action": a} for d, p, a in rows]}
    doc.update(top)
    return doc


def write(tmp_path: Path, doc: Any, name: str = "decisions.json") -> Path:
    path = tmp_path / name
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return path


# ---------------------------------------------------------------------- reading
def test_reads_a_sample_of_herculeans_shape(tmp_path: Path) -> None:
    d = read_decisions(write(tmp_path, sample()))
    assert (d.symbol, d.model, d.status, d.start_date, d.end_date) == (
        "TSLA", "test-model", "in_progress", "2026-01-02", "2026-01-09")
    assert [(r.date, r.price, r.action) for r in d.recommendations] == SAMPLE_ROWS
    assert d.to_json() == sample()


@pytest.mark.skipif(not REFERENCE.is_file(), reason="HERCULEAN's reference sample is not on this machine")
def test_reads_and_scores_the_reference_sample() -> None:
    result = score_decisions(read_decisions(REFERENCE))
    assert result["symbol"] == "TSLA" and result["window"] == "2026-01-02..2026-01-09"
    assert result["calendar"]["missing_dates"] == ["2026-01-05"]
    assert result["prices"]["max_rel_diff"] < 1e-6


def _drop(key: str):
    def edit(doc: dict[str, Any]) -> None:
        del doc[key]
    return edit


def _row(i: int, **changes: Any):
    def edit(doc: dict[str, Any]) -> None:
        for key, value in changes.items():
            if value is _DELETE:
                del doc["recommendations"][i][key]
            else:
                doc["recommendations"][i][key] = value
    return edit


_DELETE = object()

MALFORMED = {
    "missing top key": (_drop("symbol"), ["missing key(s) ['symbol']"]),
    "missing row key": (_row(1, price=_DELETE), ["recommendations[1]", "['price']"]),
    "unknown action": (_row(2, recommended_action="STRONG_BUY"), ["recommendations[2].recommended_action",
                                                                   "'STRONG_BUY'", "['SELL', 'HOLD', 'BUY']"]),
    "lower-case action": (_row(0, recommended_action="buy"), ["recommendations[0].recommended_action"]),
    "duplicated date": (_row(2, date="2026-01-06"), ["recommendations[2].date", "repeats recommendations[1]"]),
    "unsorted dates": (_row(1, date="2026-01-08"), ["recommendations[2].date", "comes before"]),
    "price not a number": (_row(3, price="435.80"), ["recommendations[3].price", "not a number"]),
    "price a boolean": (_row(3, price=True), ["recommendations[3].price"]),
    "price not positive": (_row(0, price=-1.0), ["recommendations[0].price", "finite price > 0"]),
    "date not ISO": (_row(0, date="01/02/2026"), ["recommendations[0].date", "YYYY-MM-DD"]),
    "date not in the calendar": (_row(4, date="2026-02-30"), ["recommendations[4].date", "not a calendar date"]),
    "date outside the window": (_row(4, date="2026-01-12"), ["recommendations[4].date", "outside start_date..end_date"]),
    "end before start": (lambda doc: doc.update(end_date="2026-01-01"), ["end_date", "before start_date"]),
    "window outside the data": (lambda doc: doc.update(end_date="2031-01-09"), ["end_date", "outside the 'core' data"]),
    "row not an object": (lambda doc: doc["recommendations"].__setitem__(0, "BUY"),
                          ["recommendations[0]", "not an object"]),
    "recommendations empty": (lambda doc: doc.update(recommendations=[]), ["recommendations", "empty"]),
    "status not a string": (lambda doc: doc.update(status=3), ["status", "non-empty string"]),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_files_are_refused_naming_file_key_and_row(tmp_path: Path, case: str) -> None:
    edit, expected = MALFORMED[case]
    doc = sample()
    edit(doc)
    path = write(tmp_path, doc)
    with pytest.raises(DataError) as err:
        read_decisions(path)
    message = str(err.value)
    assert message.startswith(f"{path}: ")
    for part in expected:
        assert part in message, (part, message)
    assert len(message) < MAX_MESSAGE


def test_non_finite_price_names_its_row(tmp_path: Path) -> None:
    text = json.dumps(sample()).replace("431.41", "NaN")
    with pytest.raises(DataError, match=r"recommendations\[2\]\.price: nan is not a finite price"):
        read_decisions(write(tmp_path, text))
    with pytest.raises(DataError, match=r"recommendations\[2\]\.price: inf"):
        read_decisions(write(tmp_path, text.replace("NaN", "1e999")))


def test_not_json_and_not_an_object(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="not a readable JSON file"):
        read_decisions(write(tmp_path, '{"status": '))
    with pytest.raises(DataError, match="top level is a JSON array"):
        read_decisions(write(tmp_path, [sample()]))
    with pytest.raises(FileNotFoundError, match="no such file"):
        read_decisions(tmp_path / "absent.json")


def test_unknown_symbol_lists_the_valid_ones(tmp_path: Path) -> None:
    with pytest.raises(UnknownSymbolError, match=r"symbol: 'ZZZZ' is not in the 'core' data; valid symbols: \["):
        read_decisions(write(tmp_path, sample(symbol="ZZZZ")))
    assert read_decisions(write(tmp_path, sample(symbol="ZZZZ")), dataset=None).symbol == "ZZZZ"


# ---------------------------------------------------------------------- hostile files
def test_a_10mb_action_string_is_refused_with_a_bounded_message(tmp_path: Path) -> None:
    path = write(tmp_path, sample([*SAMPLE_ROWS[:2], ("2026-01-07", 431.41, "B" * 10_000_000)]))
    with pytest.raises(DataError) as err:
        read_decisions(path)
    message = str(err.value)
    assert "recommendations[2].recommended_action" in message and len(message) < MAX_MESSAGE


@pytest.mark.parametrize("key", ["symbol", "model", "status"])
def test_a_10mb_text_field_is_refused_with_a_bounded_message(tmp_path: Path, key: str) -> None:
    with pytest.raises(DataError) as err:
        read_decisions(write(tmp_path, sample(**{key: "x" * 10_000_000})))
    assert f": {key}: " in str(err.value) and len(str(err.value)) < MAX_MESSAGE


def test_100k_recommendations_are_refused_with_a_bounded_message(tmp_path: Path) -> None:
    rows = [{"date": "2026-01-02", "price": 1.0, "recommended_action": "HOLD"}] * 100_000
    path = write(tmp_path, sample() | {"recommendations": rows})
    with pytest.raises(DataError) as err:
        read_decisions(path)
    message = str(err.value)
    assert message.startswith(f"{path}: ") and len(message) < MAX_MESSAGE


def test_more_rows_than_the_limit_are_refused_before_they_are_checked(tmp_path: Path) -> None:
    rows = [{"date": "2026-01-02", "price": 1.0, "recommended_action": "HOLD"}] * (MAX_RECOMMENDATIONS + 1)
    with pytest.raises(DataError, match=f"recommendations: has {MAX_RECOMMENDATIONS + 1} rows; at most"):
        read_decisions(write(tmp_path, sample() | {"recommendations": rows}))


def test_a_late_bad_row_among_many_is_named(tmp_path: Path) -> None:
    """10,000 well-formed rows and a duplicate at the end: the whole list is read and the last row named."""
    from finenvs.data.catalog import default_catalog

    dates = [str(d)[:10] for d in default_catalog().series("TSLA", "core").dates]
    rows = [(d, 100.0, "HOLD") for d in dates[60:]]
    rows.append(rows[-1])
    doc = sample(rows, start_date=rows[0][0], end_date=rows[-1][0])
    with pytest.raises(DataError, match=rf"recommendations\[{len(rows) - 1}\]\.date: .* repeats"):
        read_decisions(write(tmp_path, doc))


def test_deep_nesting_is_refused(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="nested deeper"):
        read_decisions(write(tmp_path, "[" * 100_000 + "]" * 100_000))


# ---------------------------------------------------------------------- scoring
def test_sample_scores_under_both_conventions(tmp_path: Path) -> None:
    result = score_decisions(read_decisions(write(tmp_path, sample())))
    assert result["window"] == "2026-01-02..2026-01-09" and result["decisions"] == 5
    # 2026-01-05 has no recommendation: HOLD; 2026-01-09 is the last close: not played
    assert result["actions"] == ["SELL", "HOLD", "SELL", "HOLD", "HOLD"]
    assert result["calendar"] | {} == {"missing_days": 1, "missing_dates": ["2026-01-05"], "missing_day_rule": "hold",
                                       "off_calendar": 0, "off_calendar_dates": [], "last_day": 1}
    assert result["prices"]["compared"] == 5 and result["prices"]["max_rel_diff"] < 1e-6
    for preset in ("standard", "herculean"):
        assert {"cumulative_return", "sharpe", "max_drawdown"} <= set(result[preset])
    assert result["sharpe_labels"] == SHARPE_LABELS
    previous = score_decisions(read_decisions(write(tmp_path, sample())), missing_day="previous")
    assert previous["actions"] == ["SELL", "SELL", "SELL", "HOLD", "HOLD"]


def _play(symbol: str, start: str, end: str, words: list[str]) -> dict[str, Any]:
    """The trading spec's metrics of the env played directly with these words (no herculean_files code)."""
    env = gym.make("FinTrading-v0", symbol=symbol, split=None, start=start, end=end)
    _, reset_info = env.reset(seed=0)
    infos = []
    for word in words:
        infos.append(env.step(env.unwrapped.text_protocol.actions[word])[4])
    metrics = market_episode_metrics(env.unwrapped, reset_info, infos)
    env.close()
    return metrics


def test_both_conventions_equal_the_trading_spec_for_the_same_positions(tmp_path: Path) -> None:
    result = score_decisions(read_decisions(write(tmp_path, sample())))
    direct = _play("TSLA", "2026-01-02", "2026-01-09", result["actions"])
    for preset in ("standard", "herculean"):
        assert not differences(result[preset], direct[preset]), preset


def test_all_buy_reproduces_herculeans_published_buy_and_hold(tmp_path: Path) -> None:
    from finenvs.data.catalog import default_catalog

    dates = [str(d)[:10] for d in default_catalog().series("TSLA", "core").dates]
    rows = [(d, 1.0, "BUY") for d in dates if "2026-01-02" <= d <= "2026-03-31"]
    doc = sample(rows, start_date="2026-01-02", end_date="2026-03-31")
    with pytest.warns(UserWarning, match="differ from the shipped close"):  # prices of 1.0: far from the closes
        result = score_decisions(read_decisions(write(tmp_path, doc)))
    published = HERCULEAN_PUBLISHED_BUY_AND_HOLD["TSLA"]
    h = result["herculean"]
    assert (round(100 * h["cumulative_return"], 2), round(h["sharpe"], 2), round(100 * h["max_drawdown"], 2)) == (
        published["CR"], published["SR"], published["MDD"])
    assert result["prices"]["beyond_tolerance"] == len(rows)


def test_an_all_hold_file_scores_cr_0(tmp_path: Path) -> None:
    rows = [(d, p, "HOLD") for d, p, _ in SAMPLE_ROWS]
    result = score_decisions(read_decisions(write(tmp_path, sample(rows))))
    assert result["standard"]["cumulative_return"] == 0.0 and result["herculean"]["cumulative_return"] == 0.0
    assert result["standard"]["max_drawdown"] == 0.0


def test_a_non_trading_day_is_not_played_and_a_far_price_warns(tmp_path: Path) -> None:
    rows = [SAMPLE_ROWS[0], ("2026-01-03", 440.0, "BUY"), ("2026-01-05", 451.67 * 2, "BUY"), *SAMPLE_ROWS[1:]]
    with pytest.warns(UserWarning, match=r"1 recorded price\(s\) differ .*\(largest 100\.00% on 2026-01-05"):
        result = score_decisions(read_decisions(write(tmp_path, sample(rows))))
    assert result["calendar"]["off_calendar_dates"] == ["2026-01-03"] and result["calendar"]["missing_days"] == 0
    assert result["actions"] == ["SELL", "BUY", "SELL", "HOLD", "HOLD"]
    assert len(result["warnings"]) == 2


def test_a_window_without_history_is_refused_naming_the_file(tmp_path: Path) -> None:
    doc = sample([("2024-01-03", 1.0, "BUY")], start_date="2024-01-03", end_date="2024-01-10")
    path = write(tmp_path, doc)
    with pytest.raises(DataError, match=re.escape(f"{path}: cannot play TSLA 2024-01-03..2024-01-10")):
        score_decisions(read_decisions(path))


# ---------------------------------------------------------------------- export and round trip
class CycleAgent:
    """A chat agent that answers SELL, HOLD or BUY by the day of the month of the decision (all three appear)."""

    name = "cycle"

    def describe(self) -> dict[str, Any]:
        return {"kind": "test", "name": self.name, "model": "cycle-model-1"}

    async def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ChatReply:
        day = int(re.findall(r"Date: \d{4}-\d{2}-(\d{2})", str(messages[-1].get("content")))[-1])
        return ChatReply(f"Action: {('SELL', 'HOLD', 'BUY')[day % 3]}", usage=NO_USAGE)


@pytest.fixture(scope="module", params=["scripted", "cycle"])
def run_dir(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from finenvs.evaluation.llm import RunConfig, run_llm

    agent = task_of("FinTrading-v0").make_scripted_agent() if request.param == "scripted" else CycleAgent()
    out = tmp_path_factory.mktemp(request.param)
    run_llm(RunConfig(env_id="FinTrading-v0", symbols=["TSLA", "MSFT"], split="eval"), agent, out=out, name="r",
            progress=False)
    return out / "r"


def test_round_trip_export_read_score_equals_finenvs_score(run_dir: Path, tmp_path: Path) -> None:
    from finenvs.evaluation.score import score_run

    scored = score_run(run_dir, write=False)
    assert scored.status == "reproduced"
    paths = export_run(run_dir, tmp_path)
    assert [p.name for p in paths] == ["trading_decisions_e000_TSLA_2026-01-02_2026-03-31.json",
                                       "trading_decisions_e001_MSFT_2026-01-02_2026-03-31.json"]
    steps = [json.loads(line) for line in (run_dir / "trajectories.jsonl").read_text().splitlines()]
    model = json.loads((run_dir / "run.json").read_text())["agent"]
    for path, episode in zip(paths, scored.episodes, strict=True):
        decisions = read_decisions(path)
        assert decisions.status == "completed" and decisions.model == model.get("model", model["name"])
        result = score_decisions(decisions)
        recorded = [s["action"] for s in steps if s["type"] == "step" and s["episode"] == episode.index]
        assert result["actions"] == recorded
        assert result["calendar"]["missing_days"] == 0 and result["prices"]["max_rel_diff"] == 0.0
        # a row for every trading day through the window's end: the last repeats the last decision
        rows = decisions.recommendations
        assert rows[-1].date == decisions.end_date == result["window"].split("..")[1]
        assert len(rows) == len(recorded) + 1 and rows[-1].action == rows[-2].action
        assert result["calendar"]["last_day"] == 1
        assert not differences(result["metrics"], episode.metrics)


def test_round_trip_of_the_cycle_agent_trades(run_dir: Path, tmp_path: Path) -> None:
    if run_dir.parent.name.startswith("scripted"):
        pytest.skip("the scripted agent's actions are checked by the round trip")
    result = score_decisions(read_decisions(export_run(run_dir, tmp_path)[0]))
    assert set(result["actions"]) == {"SELL", "HOLD", "BUY"} and result["standard"]["turnover"] > 0


def test_export_refuses_to_overwrite(run_dir: Path, tmp_path: Path) -> None:
    export_run(run_dir, tmp_path)
    with pytest.raises(FileExistsError, match="exists already"):
        export_run(run_dir, tmp_path)


def test_export_refuses_a_changed_run(run_dir: Path, tmp_path: Path) -> None:
    import shutil

    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy)
    lines = (copy / "trajectories.jsonl").read_text().splitlines(keepends=True)
    lines[3] = re.sub(r'"env_action":\s*(\d)', lambda m: f'"env_action":{(int(m[1]) + 1) % 3}', lines[3])
    (copy / "trajectories.jsonl").write_text("".join(lines))
    with pytest.raises(ValueError, match="tampered"):
        export_run(copy, tmp_path / "out")


# ---------------------------------------------------------------------- report and CLI bodies
def test_markdown_labels_both_sharpe_conventions(tmp_path: Path) -> None:
    text = herculean_markdown([score_decisions(read_decisions(write(tmp_path, sample())))])
    assert "### decisions.json: TSLA, model test-model, status in_progress" in text
    for label in SHARPE_LABELS.values():
        assert f"| {label} |" in re.sub(" +", " ", text)
    assert "| 1 (hold)" in text and "2026-01-05" in text


def test_cli_score_files_scores_the_good_and_names_the_bad(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    good = write(tmp_path, sample(), "good.json")
    bad = write(tmp_path, sample(symbol=["TSLA"]), "bad.json")
    assert cli_score_files([good], as_json=False) == 0
    assert "| TSLA" in capsys.readouterr().out
    assert cli_score_files([good, bad], as_json=True) == 2
    out, err = capsys.readouterr()
    doc = json.loads(out)
    assert [r["symbol"] for r in doc["files"]] == ["TSLA"] and doc["errors"][0]["file"] == str(bad)
    assert f"{bad}: symbol:" in err


def test_cli_export_writes_and_lists(run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert cli_export(run_dir, tmp_path / "out") == 0
    assert "2 HERCULEAN decision files written" in capsys.readouterr().out
    assert all(math.isfinite(r.price) for p in (tmp_path / "out").iterdir() for r in read_decisions(p).recommendations)
