"""The finenvs command line: list, run, bench, data verify, and one-line errors."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from finenvs.cli import main
from finenvs.data import shipped_data_dir
from helpers import SUBPROCESS_TIMEOUT


def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """Run ``finenvs`` as a user would (a fresh process), capturing output."""
    return subprocess.run(
        [sys.executable, "-m", "finenvs.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=dict(os.environ),
        timeout=SUBPROCESS_TIMEOUT,
    )


@pytest.fixture
def cli(capsys):
    """``finenvs`` run by the CLI's ``main`` in this process, its exit code and output as a finished process's
    (``run_cli`` runs a fresh process where the process itself is what is checked: exit codes, tracebacks)."""
    def run(*args: str) -> subprocess.CompletedProcess:
        capsys.readouterr()
        try:
            code = main(list(args))
        except SystemExit as exc:  # argparse's own exits
            code = exc.code if isinstance(exc.code, int) else 2
        out, err = capsys.readouterr()
        return subprocess.CompletedProcess(["finenvs", *args], code, out, err)
    return run


def test_list_shows_every_env_with_its_baselines(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "FinTrading-v0" in out and "buy_and_hold" in out and "rsi_mean_reversion" in out
    assert "text variant: FinTrading-text-v0" in out and "get_filing_section" in out and "commit_action" in out


def test_list_shows_report_tools(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if "text variant: FinReport-text-v0" in ln)
    assert "get_weekly_metrics" in line and "get_peers" in line and "get_report_template" in line


def test_run_writes_weekly_reports_and_their_checks(capsys, tmp_path):
    folder = tmp_path / "reports"
    assert main(["run", "--env", "FinReport-v0", "--policy", "template_writer", "--symbol", "NVDA",
                 "--reports", str(folder)]) == 0
    out = capsys.readouterr().out
    assert "report quality 10.00/10 over 13 reports" in out and "reports: 26 files" in out
    first = (folder / "2026-01-02.md").read_text()
    assert first.startswith("# NVDA weekly market insight — 2026-01-02") and first.count("\n## ") == 8
    card = json.loads((folder / "2026-01-02.json").read_text())
    assert card["score"] == 10.0 and all(c["passed"] for c in card["checks"])


def test_run_prints_both_presets(capsys):
    assert main(["run", "--env", "FinTrading-v0", "--policy", "buy_and_hold", "--symbol", "MSFT"]) == 0
    out = capsys.readouterr().out
    assert "MSFT 2026-01-02..2026-03-31" in out
    assert "herculean: CR -21.59%  SR (H, non-zero days) -2.92  MDD 26.04%" in out
    assert "standard : CR -21.63%  SR (all days) -2.93" in out


def test_run_json_and_chart(tmp_path, capsys):
    pytest.importorskip("matplotlib", reason="charts need finenvs[plot]")
    chart = tmp_path / "run.png"
    code = main(["run", "--env", "FinTrading-v0", "--policy", "momentum", "--symbol", "AAPL", "--split", "live",
                 "--fill", "next_open", "--fee-bps", "10", "--json", "--chart", str(chart)])
    assert code == 0
    row = json.loads(capsys.readouterr().out)
    assert row["symbol"] == "AAPL" and row["window"] == "2026-04-01..2026-05-01"
    assert chart.stat().st_size > 10_000


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (["run", "--env", "FinNope-v0", "--policy", "buy_and_hold"], "unknown env 'FinNope-v0'"),
        (["run", "--env", "FinTrading-v0", "--policy", "oracle"], "unknown policy 'oracle'"),
        (["run", "--env", "FinTrading-v0", "--policy", "random", "--symbol", "ZZZZ"], "unknown symbol 'ZZZZ'"),
        (["run", "--env", "FinTrading-v0", "--policy", "random", "--start", "2026-02-30"], "is not a date"),
        (["run", "--env", "FinTrading-v0", "--policy", "random", "--split", "test"], "unknown split 'test'"),
        (["run", "--env", "FinTrading-v0", "--policy", "random", "--start", "2030-01-02", "--end", "2030-03-01"],
         "empty window"),
        (["run", "--env", "FinTrading-v0", "--policy", "random", "--start", "2026-03-02", "--end", "2026-01-05"],
         "is after end"),
        (["bench", "--split", "test"], "unknown split 'test'"),
        (["bench", "--envs", "FinNope-v0"], "unknown env 'FinNope-v0'"),
        (["run", "--env", "FinTrading-v0"], "the following arguments are required: --policy"),
    ],
)
def test_bad_input_is_one_line_exit_2_no_traceback(args, match):
    proc = run_cli(*args)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("finenvs: error:")]
    assert len(errors) == 1 and match in errors[0], proc.stderr


def test_data_verify_shipped_data_passes(cli):
    proc = cli("data", "verify")
    assert proc.returncode == 0, proc.stderr
    listed = len(json.loads((shipped_data_dir() / "MANIFEST.json").read_text())["files"])
    assert listed >= 9 and f"all {listed} files verified" in proc.stdout


def test_data_verify_fails_naming_file_and_row(tmp_path, cli):
    data = tmp_path / "envs_data"
    shutil.copytree(shipped_data_dir(), data, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    target = data / "rates/fred_dgs10.parquet"
    target.write_bytes(target.read_bytes()[:-10] + b"0123456789")
    proc = cli("data", "verify", "--data-dir", str(data))
    assert proc.returncode == 1
    assert "FAILED rates/fred_dgs10.parquet: sha256" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_data_verify_user_file(tmp_path, aapl_frame, cli):
    good = tmp_path / "good.csv"
    aapl_frame.head(40).to_csv(good, index=False)
    proc = cli("data", "verify", "--file", str(good))
    assert proc.returncode == 0 and "AAPL: ok (40 rows" in proc.stdout
    bad = tmp_path / "bad.csv"
    frame = aapl_frame.head(40).copy()
    frame.loc[9, "close"] = 0.0
    frame.to_csv(bad, index=False)
    proc = cli("data", "verify", "--file", str(bad))
    assert proc.returncode == 1
    assert "bad.csv: row 10 (AAPL 2024-01-16): close=0.0 is not a positive finite price" in proc.stderr


def test_bench_writes_scorecard_json_markdown_and_charts(small_bench):
    """``finenvs bench --symbols MSFT AAPL`` (the shared run of tests/conftest.py, exit 0 checked there)."""
    run, card, stdout = small_bench.dir, small_bench.card, small_bench.stdout
    # 2 symbols x (6 trading baselines + agent + 5 report baselines + agent) + 5 pairs rows
    assert len(card["rows"]) == 2 * (7 + 6) + 5 and not card["errors"]
    trading = [r for r in card["rows"] if r["env"] == "FinTrading-v0"]
    assert {r["policy"] for r in trading} == {
        "buy_and_hold", "always_flat", "random", "sma_crossover", "momentum", "rsi_mean_reversion", "scripted_agent"}
    agents = [r for r in card["rows"] if r["policy"] == "scripted_agent"]
    assert all(r["efficiency"]["format_errors"] == 0 for r in agents)
    assert all(r["efficiency"]["decisions"] == {"FinReport-v0": 13}.get(r["env"], 60) for r in agents)
    # the agents read through tools (the pairs agent reads its stage and position from the prompt: one call)
    assert all(r["efficiency"]["tool_calls_per_decision"] >= {"FinHedging-v0": 1}.get(r["env"], 2) for r in agents)
    assert all("efficiency" not in r for r in card["rows"] if r["policy"] != "scripted_agent")
    assert [(c["env"], c["match"]) for c in card["reproduction_check"]] == [
        ("FinTrading-v0", True), ("FinTrading-v0", True), ("FinReport-v0", True), ("FinReport-v0", True)]
    md = small_bench.md
    assert "## FinTrading-v0" in md and "Reproduction check" in md and "| MSFT" in md
    assert "## Agents through the text interface" in md and "Scripted agent through the text interface" in stdout
    assert "buy_and_hold" in stdout and "reproduced on 4/4 rows" in stdout
    # every table that shows a Sharpe names its convention (all days, or HERCULEAN's non-zero days)
    for text in (md, stdout):
        headers = [ln for ln in text.splitlines() if ln.startswith("|") and "SR" in ln]
        assert headers and all("SR (all days)" in ln or "SR (H, non-zero days)" in ln for ln in headers)
        cells = [c.strip() for ln in headers for c in ln.strip("|").split("|")]
        assert not {"SR", "SR (H)", "SR pub", "SR finenvs"} & set(cells)
    assert set(card["config"]["sharpe_conventions"]) == {"SR (all days)", "SR (H, non-zero days)"}
    if _has_matplotlib():
        pngs = sorted(p.name for p in run.glob("*.png"))
        assert pngs == ["audit_breakdown.png", "equity_FinHedging-v0_universe.png", "equity_FinReport-v0_AAPL.png",
                        "equity_FinReport-v0_MSFT.png", "equity_FinTrading-v0_AAPL.png",
                        "equity_FinTrading-v0_MSFT.png", "options_dimensions.png", "qa_topics.png",
                        "section_aggregate.png", "sharpe_FinReport-v0.png", "sharpe_FinTrading-v0.png",
                        "spread_FinHedging-v0.png"]
        assert "![" in md
        page = (run / "scorecard.html").read_text()
        # self-contained: every chart is embedded, none is linked
        assert page.count("data:image/png;base64,") == len(pngs) and 'src="equity_' not in page


def check_every_section(card: dict, md: str, stdout: str, *, symbols: int, checks: int, reports: int) -> None:
    """What every bench run of every family shows, whatever its symbols: ``symbols`` played by the market families,
    ``checks`` HERCULEAN reproduction rows (Trading and Market Insights on the symbols the paper publishes) and
    ``reports`` FinReport-v0 reports scored for quality."""
    assert len(card["rows"]) == symbols * (7 + 6) + 5 and not card["errors"]
    assert all(c["match"] for c in card["reproduction_check"]) and len(card["reproduction_check"]) == checks
    assert all(r["look_ahead_attempts"] == 0 for r in card["rows"])
    pairs = {r["policy"]: r for r in card["rows"] if r["env"] == "FinHedging-v0"}
    assert set(pairs) == {"zscore_coint", "zscore_corr", "random", "oracle_best_pair", "scripted_agent"}
    assert pairs["scripted_agent"]["efficiency"]["format_errors"] == 0
    assert all(len(r["pair"].split("/")) == 2 for r in pairs.values())
    assert [p for p, r in pairs.items() if r.get("oracle")] == ["oracle_best_pair"]
    # the oracle picks the best pair for the same z-score rule, so it beats both live pair choices
    oracle_cr = pairs["oracle_best_pair"]["standard"]["cumulative_return"]
    assert oracle_cr >= pairs["zscore_coint"]["standard"]["cumulative_return"]
    assert oracle_cr >= pairs["zscore_corr"]["standard"]["cumulative_return"]
    assert "## FinHedging-v0" in md and "oracle_best_pair (oracle)" in md and "read the window's future" in md
    # the Options section: engine answers score 100 on generated tasks and on every bank item
    options = card["sections"]["options"]
    assert options["options"]["engine_reference"]["score"] == 100.0
    assert set(options["bank"]["engine_reference"]["items"].values()) == {100.0}
    assert options["options"]["keyword_stuffer"]["score"] < 30 and options["bank"]["keyword_stuffer"]["score"] < 30
    # restating legs, or the right legs with wrong numbers, earns almost nothing (the figure gate)
    for name in ("keyword_stuffer", "leg_copier", "wrong_numbers"):
        assert options["options"][name]["score"] < 20 and options["bank"][name]["score"] < 20, name
    hedge = {(r["policy"], r["steps_per_day"]): r["mse"] for r in card["sections"]["deltahedge"]["deltahedge"]}
    assert hedge[("bs_delta", 1)] < 0.1 * hedge[("no_hedge", 1)] and hedge[("bs_delta", 4)] < hedge[("bs_delta", 1)]
    assert "## Options" in md and "### FinDeltaHedge-v0" in md
    # FinReport-v0: ratings traded on every symbol; always-BUY is FinTrading-v0's buy-and-hold to the cent
    report = {(r["symbol"], r["policy"]): r for r in card["rows"] if r["env"] == "FinReport-v0"}
    assert {p for _, p in report} == {"buy_and_hold", "always_hold", "momentum", "random", "template_writer",
                                      "scripted_agent"}
    trading_bh = {r["symbol"]: r for r in card["rows"] if r["env"] == "FinTrading-v0" and r["policy"] == "buy_and_hold"}
    for symbol, row in trading_bh.items():
        assert report[(symbol, "buy_and_hold")]["herculean"] == row["herculean"]
        assert report[(symbol, "always_hold")]["final_equity"] == 1.0
        quality = report[(symbol, "template_writer")]["quality"]
        assert quality["reports"] == 13 and quality["invalid_ratings"] == 0
        assert quality["dimensions"]["structure"] >= 9 and quality["dimensions"]["content"] >= 9
    assert "## FinReport-v0 report quality" in md and f"FinReport-v0 report quality (0-10) over {reports} reports" in stdout
    # the Audit section: the tool-using oracle validates the ground truth on all 100 eval instances
    audit = card["sections"]["audit"]["policies"]
    assert card["sections"]["audit"]["n"] == 100
    assert audit["oracle"]["ACC"] == 1.0 and all(k["ACC"] == 1.0 for k in audit["oracle"]["by"].values())
    assert audit["extract_only"]["ACC"] == audit["extract_only"]["by"]["none"]["n"] / 100
    assert audit["random"]["ACC"] == 0.0 and audit["random"]["SER"] > 0.2
    for rates in audit.values():
        assert abs(rates["ACC"] + rates["SER"] + rates["EER"] + rates["CER"] - 1.0) < 1e-12
    assert all(r["look_ahead_attempts"] == 0 for rates in audit.values() for r in rates["rows"])
    assert "## Audit" in md and "FinAudit-v0 agents: scripted_agent (eval, 100 episodes): ACC % 100.0" in stdout
    # FinQA-v0: the offline agent answers every eval question from the tools; the naive readings score nothing
    qa = card["sections"]["qa"]["policies"]
    assert card["sections"]["qa"]["n"] == 150
    assert {k: v["n"] for k, v in qa["scripted_agent"]["sections"].items()} == {"knowledge": 60, "analysis": 90}
    assert all(v["score"] == 100.0 for v in qa["scripted_agent"]["sections"].values())
    assert all(r["look_ahead_attempts"] == 0 and r["tool_calls"] >= 1 for r in qa["scripted_agent"]["rows"])
    assert all(v["score"] < 5 for v in qa["first_number"]["sections"].values())
    assert "## Knowledge and analysis (FinQA-v0)" in md and "FinQA-v0 agents: scripted_agent (eval, 150" in stdout
    # the Finance Agent Benchmark's 50 public questions: closed-book, rubric-scored, in Knowledge beside the 60
    public = card["sections"]["qa"]["public"]
    assert public["n"] == 50 and public["split"] == "fab_public"
    assert public["policies"]["scripted_agent"]["sections"] == {"knowledge": {"n": 50, "score": 0.0}}
    assert "scripted_agent (fab_public, 50 episodes): Knowledge 0.00" in stdout
    assert "50 public questions, closed-book" in md and "scored by its rubric" in md
    # the section aggregate, recomputed here from the rows it was built from
    agg = card["aggregate"]
    assert agg["weights"] == {"knowledge": 0.30, "analysis": 0.35, "options": 0.35}
    ref = agg["profiles"]["reference"]
    assert ref["sections"]["knowledge"]["tasks"] == 110 and ref["sections"]["knowledge"]["score"] == 6000 / 110
    assert ref["overall"] == pytest.approx(0.30 * 6000 / 110 + 0.35 * 100 + 0.35 * 100)
    agent = agg["profiles"]["scripted_agent"]
    assert agent["sections"]["knowledge"] == {**agent["sections"]["knowledge"], "tasks": 110, "score": 6000 / 110}
    rnd = agg["profiles"]["random"]
    opt_scores = options["options"]["random"]["scores"] + options["bank"]["random"]["scores"]
    assert abs(rnd["sections"]["options"]["score"] - sum(opt_scores) / len(opt_scores)) < 1e-9
    expected = sum(w * rnd["sections"][k]["score"] for k, w in agg["weights"].items())
    assert abs(rnd["overall"] - expected) < 1e-9
    assert "## Section aggregate (FAB++)" in md and "Section aggregate (knowledge 30%" in stdout


def test_every_section_of_the_bench(small_bench):
    """The whole bench's checks of every section on the shared two-symbol run (MSFT and AAPL: 4 reproduction rows,
    2 x 13 reports by each of the template writer and the scripted agent); the symbol-independent sections (pairs,
    Options, FinDeltaHedge-v0, Audit, FinQA-v0, the aggregate) are the whole bench's."""
    check_every_section(small_bench.card, small_bench.md, small_bench.stdout, symbols=2, checks=4, reports=52)


@pytest.mark.slow
def test_full_bench_on_shipped_data(tmp_path):
    """The README's main job: every env x every baseline on the eval split, every symbol (slow: about a minute at
    idle on 2 cores; CI runs ``finenvs bench`` itself, and test_every_section_of_the_bench checks the same on two)."""
    proc = run_cli("bench", "--out", str(tmp_path), "--name", "full", "--no-plots")  # not --quiet: the tables are read
    assert proc.returncode == 0, proc.stderr
    card = json.loads((tmp_path / "full" / "scorecard.json").read_text())
    md = (tmp_path / "full" / "scorecard.md").read_text()
    check_every_section(card, md, proc.stdout, symbols=10, checks=8, reports=260)  # Trading, Market Insights


def test_bench_on_the_live_split_checks_table_3_and_shows_only_its_published_rows(tmp_path, cli):
    """``--split live`` is HERCULEAN's Table 3 window: the reproduction check compares Buy&Hold with Table 3 (Market
    Insights publishes CR and MDD only), and the HERCULEAN tables are titled Table 3 and hold the live published
    rows, never Table 2's (MSFT -21.59 is the eval quarter's)."""
    from finenvs.tasks.report.spec import HERCULEAN_PUBLISHED_BUY_AND_HOLD
    from finenvs.tasks.trading.spec import HERCULEAN_PUBLISHED_LIVE_BUY_AND_HOLD

    proc = cli("bench", "--split", "live", "--suite", "herculean", "--envs", "FinReport-v0", "FinTrading-v0",
                   "--symbols", "MSFT", "TSLA", "AAPL", "NVDA", "--out", str(tmp_path), "--name", "live",
                   "--no-plots", "--no-html")
    assert proc.returncode == 0, proc.stderr
    card = json.loads((tmp_path / "live" / "scorecard.json").read_text())
    checks = {(c["env"], c["symbol"]): c for c in card["reproduction_check"]}
    assert len(checks) == 8 and all(c["match"] for c in checks.values())
    for symbol in ("MSFT", "TSLA", "AAPL", "NVDA"):
        assert checks["FinTrading-v0", symbol]["published"] == HERCULEAN_PUBLISHED_LIVE_BUY_AND_HOLD[symbol]
        assert checks["FinReport-v0", symbol]["published"] == HERCULEAN_PUBLISHED_BUY_AND_HOLD["live"][symbol]
    assert checks["FinReport-v0", "MSFT"]["finenvs"]["CR"] == 12.15
    assert "HERCULEAN Table 3 buy-and-hold reproduced on 8/8 rows" in proc.stdout
    md = (tmp_path / "live" / "scorecard.md").read_text()
    assert "## Reproduction check: HERCULEAN Table 3 buy-and-hold baseline" in md
    assert "### Table 3 (live): Market Insights (FinReport-v0, split live)" in md and "Table 2 (backtest)" not in md
    published = [re.sub(" +", " ", ln) for ln in md.splitlines() if ln.startswith("| Buy&Hold (published) ")]
    assert len(published) == 2 and all(ln.startswith("| Buy&Hold (published) | 12.15 |") for ln in published)
    assert "-21.59" not in md


def test_bench_suites_select_their_sections(tmp_path, cli):
    proc = cli("bench", "--suite", "fabpp", "--out", str(tmp_path), "--name", "f", "--no-plots",
                   "--no-agents", "--weights", "knowledge=1,analysis=1,options=0")
    assert proc.returncode == 0, proc.stderr
    card = json.loads((tmp_path / "f" / "scorecard.json").read_text())
    assert card["rows"] == [] and set(card["sections"]) == {"qa", "options", "deltahedge"}
    assert "| env | symbol |" not in proc.stdout and "Mean over symbols" not in proc.stdout  # no empty market tables
    agg = card["aggregate"]
    assert agg["weights"] == {"knowledge": 1.0, "analysis": 1.0, "options": 0.0}
    assert agg["profiles"]["reference"]["sections"]["options"]["effective_weight"] == 0.0
    html = (tmp_path / "f" / "scorecard.html").read_text()
    assert "<h2 id=\"section-aggregate-fab\">" in html and "FinTrading-v0" not in html
    proc = cli("bench", "--suite", "herculean", "--symbols", "SPY", "--out", str(tmp_path), "--name", "h",
                   "--no-plots", "--quiet", "--no-agents", "--no-html")
    assert proc.returncode == 0, proc.stderr
    card = json.loads((tmp_path / "h" / "scorecard.json").read_text())
    assert set(card["sections"]) == {"audit"} and card["aggregate"] is None and card["herculean"] is None
    assert {r["env"] for r in card["rows"]} == {"FinTrading-v0", "FinHedging-v0", "FinReport-v0"}
    assert not (tmp_path / "h" / "scorecard.html").exists()
    # --no-agents: the baselines only (6 trading, 5 report, 4 pairs rows), no agent run
    assert len(card["rows"]) == 6 + 5 + 4 and "scripted_agent" not in {r["policy"] for r in card["rows"]}
    assert card["agents"] == []
    assert {r["symbol"] for r in card["rows"] if r["env"] == "FinTrading-v0"} == {"SPY"}
    bad = cli("bench", "--weights", "knowledge=-1", "--out", str(tmp_path), "--quiet")
    assert bad.returncode != 0 and "knowledge" in bad.stderr and "Traceback" not in bad.stderr


def test_run_finqa_prints_part_verdicts(cli):
    proc = cli("run", "--env", "FinQA-v0", "--policy", "scripted_agent", "--topic", "bull_spread", "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["score"] == 1.0 and out["truth"] == {"max_profit": 5.0, "max_loss": 5.0, "breakeven": 105.0}
    proc = cli("run", "--env", "FinQA-v0", "--policy", "first_number", "--instance", "0")
    assert proc.returncode == 0, proc.stderr
    assert "score 0.000" in proc.stdout and "wrong" in proc.stdout
    bad = cli("run", "--env", "FinQA-v0", "--policy", "scripted_agent", "--topic", "nope")
    assert bad.returncode != 0 and "unknown topic" in bad.stderr


def _has_matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def test_run_options_envs_print_score_and_hedging_error(cli):
    proc = cli("run", "--env", "FinOptions-v0", "--policy", "engine_reference", "--seed", "2", "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["score"] == 100.0 and all(item["credit"] == 1.0 for item in out["items"])
    proc = cli("run", "--env", "FinOptions-v0", "--policy", "keyword_stuffer", "--seed", "2", "--json")
    assert json.loads(proc.stdout)["score"] == 0.0
    proc = cli("run", "--env", "FinDeltaHedge-v0", "--policy", "bs_delta", "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["steps"] == 30 and abs(out["hedging_error"]) < 2.0
    proc = cli("run", "--env", "FinDeltaHedge-v0", "--policy", "bs_delta", "--fee-bps", "3")
    assert proc.returncode == 2 and "--fee-bps is not an option of FinDeltaHedge-v0" in proc.stderr


def test_llm_tools_none_runs_closed_book_and_records_the_mode(tmp_path, cli):
    """`finenvs llm --tools none`: only the commit tool; the mode is in every episode record and run.json."""
    proc = cli("llm", "--env", "FinOptions-v0", "--tools", "none", "--limit", "1", "--out", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    (run,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    meta = json.loads((run / "run.json").read_text())
    assert meta["config"]["env_kwargs"]["tools"] == "none"
    records = [json.loads(line) for line in (run / "trajectories.jsonl").read_text().splitlines()]
    episodes = [r for r in records if r.get("type") == "episode"]
    assert episodes and all(e["tools_mode"] == "none" for e in episodes)
