"""``finenvs data fetch`` on recorded responses: rows fetched, errors named, and the daily live loop.

Two measurements, offline (``$FINENVS_FETCH_REPLAY``; nothing reaches the network), each through the CLI a
scheduled job would run:

1. **The daily live loop.** Yahoo bars of ``TSLA2`` (the shipped TSLA bars 2026-01-02..2026-04-30 recorded in
   ``yfinance``'s shape with an ``Adj Close`` column, under a name the catalog does not ship) and its news are
   fetched through 2026-04-02, ``finenvs llm --env FinTrading-v0 --symbols TSLA2 --split live --end 2026-04-30
   --live`` starts a live run, and then for every later April session ``finenvs data fetch --prices TSLA2 --news
   TSLA2 --end DAY`` and ``finenvs llm --resume RUN --live``. Beside it, in a second user layer, one fetch of the
   whole window and one ``finenvs llm`` over it. The two runs' decisions, rewards and metrics are compared.
2. **XBRL from SEC EDGAR.** ``finenvs data fetch --xbrl AAPL NFLX TSLA`` on hand-written submissions JSON and the
   shipped bundles' EDGAR files (one filing with no recording, one with a broken fact, one with no acceptance
   time), fetched filing date by filing date and at once: layer bytes and digests compared, and FinAudit-v0's
   scripted agent over each fetched corpus.

Usage (from the repository root; about a minute)::

    python benchmarks/fetch_roll_forward.py             # prints Markdown; --out FILE writes it too
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import platform
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
#: The live window is April 2026 (split "live"); the loop starts once it holds two bars (an episode needs two).
FIRST, START_LIVE, END = "2026-01-02", "2026-04-02", "2026-04-30"
AGENT = "Example Researcher research@example.com"
#: Shipped bundles replayed as the EDGAR filing folders of these accession numbers.
RECORDED_XBRL = {"0000320193-23-000106": "aapl_10k_2023-09-30",
                 "0000320193-25-000057": "aapl_10q_2025-03-29_0000320193-25-000057",
                 "0001065280-24-000030": "nflx_10k_2023-12-31", "0001065280-24-000287": "nflx_10q_2024-09-30",
                 "0001628280-24-032662": "tsla_10q_2024-06-30"}
BROKEN_FACT = "0001628280-24-032662"
NEWS = [
    {"id": "n-1", "content": {"id": "n-1", "title": "Deliveries beat estimates", "summary": "Deliveries rose.",
                              "pubDate": "2026-04-02T13:05:00Z", "provider": {"displayName": "Reuters"},
                              "canonicalUrl": {"url": "https://finance.yahoo.com/news/deliveries-1.html"}}},
    {"id": "n-2", "content": {"id": "n-2", "title": "Plant expansion", "summary": "",
                              "pubDate": "2026-04-17T20:30:00Z", "provider": {"displayName": "Bloomberg"},
                              "clickThroughUrl": {"url": "https://finance.yahoo.com/news/plant-2.html"}}},
]


def record(folder: Path) -> None:
    """Write the recorded responses: Yahoo bars and news of TSLA2, EDGAR submissions and XBRL documents."""
    from finenvs.data.catalog import default_catalog
    from finenvs.data.sources import edgar, yahoo

    s = default_catalog().shipped_series("TSLA")
    keep = (s.dates >= np.datetime64(FIRST)) & (s.dates <= np.datetime64(END))
    index = pd.DatetimeIndex(pd.to_datetime(s.dates[keep]), name="Date").tz_localize("America/New_York")
    frame = pd.DataFrame({"Open": s.open[keep], "High": s.high[keep], "Low": s.low[keep], "Close": s.close[keep],
                          "Adj Close": s.close[keep] * 0.99, "Volume": s.volume[keep]}, index=index)
    yahoo.save_bars(frame, "TSLA2", folder)
    yahoo.save_news(NEWS, "TSLA2", folder)
    shutil.copytree(ROOT / "tests" / "fixtures" / "edgar" / "submissions", folder / "edgar" / "submissions")
    for accession, bundle in RECORDED_XBRL.items():
        files = {p.name: p.read_bytes() for p in (ROOT / "envs_data" / "xbrl" / bundle).iterdir()
                 if p.name != "filing.json"}
        if accession == BROKEN_FACT:
            files = {n: break_a_fact(d) if n.endswith("_htm.xml") else d for n, d in files.items()}
        edgar.save_xbrl_files(files, accession, folder)


def break_a_fact(instance: bytes) -> bytes:
    """The instance with the text of its first ``decimals="-6"`` fact made not a number."""
    return re.sub(rb'(decimals="-6"[^>]*>)(-?\d+)(<)', rb"\g<1>12x4\g<3>", instance, count=1)


def cli(*argv: str) -> tuple[int, str, str]:
    from finenvs.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(argv))
        except SystemExit as exc:
            code = int(exc.code or 0)
    return code, out.getvalue(), err.getvalue()


def number(pattern: str, text: str) -> str:
    found = re.search(pattern, text)
    return found.group(1) if found else "?"


def crsrmdd(metrics: dict) -> str:
    m = metrics["standard"]
    return f"{m['cumulative_return']:.6f} / {m['sharpe']:.6f} / {m['max_drawdown']:.6f}"


def steps(run_dir: Path) -> list[tuple]:
    from finenvs.evaluation.runlog import read_trajectories

    return [(r["date"], r["action"], r["reward"]) for r in read_trajectories(run_dir / "trajectories.jsonl")[0]
            if r.get("type") == "step"]


def layer_bytes(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and not p.name.startswith(".")}


def live_loop(work: Path) -> list[str]:
    from finenvs.data.calendar import DEFAULT_CALENDAR, sessions
    from finenvs.evaluation.score import score_run

    runs = work / "runs"
    os.environ["FINENVS_USER_DATA"] = str(work / "live-layer")
    t0 = time.perf_counter()
    fetches = [cli("data", "fetch", "--prices", "TSLA2", "--news", "TSLA2", "--start", FIRST, "--end", START_LIVE,
                   "--sleep", "0")]
    llms = [cli("llm", "--env", "FinTrading-v0", "--symbols", "TSLA2", "--split", "live", "--end", END, "--live",
                "--out", str(runs), "--name", "live", "--quiet")]
    days = [str(d) for d in sessions(DEFAULT_CALENDAR, START_LIVE, END)][1:]
    for day in days:
        fetches.append(cli("data", "fetch", "--prices", "TSLA2", "--news", "TSLA2", "--end", day, "--sleep", "0"))
        llms.append(cli("llm", "--resume", str(runs / "live"), "--live", "--quiet"))
    live_s = time.perf_counter() - t0
    live_layer = layer_bytes(work / "live-layer")
    os.environ["FINENVS_USER_DATA"] = str(work / "whole-layer")
    t0 = time.perf_counter()
    whole_fetch = cli("data", "fetch", "--prices", "TSLA2", "--news", "TSLA2", "--start", FIRST, "--end", END,
                      "--sleep", "0")
    whole_llm = cli("llm", "--env", "FinTrading-v0", "--symbols", "TSLA2", "--split", "live", "--end", END, "--out",
                    str(runs), "--name", "whole", "--quiet")
    whole_s = time.perf_counter() - t0
    a, b = steps(runs / "live"), steps(runs / "whole")
    sa, sb = score_run(runs / "live"), score_run(runs / "whole")
    if not sa.episodes or not sb.episodes:
        raise SystemExit(f"a run did not finish: {llms[-1]} {whole_llm}")
    ma, mb = sa.episodes[0].metrics, sb.episodes[0].metrics
    bars = [int(m.group(1)) for code, out, _ in fetches for m in [re.search(r"fetched (\d+) bars", out)] if m]
    items = [int(m.group(1)) for code, out, _ in fetches for m in [re.search(r"(\d+) news items", out)] if m]
    waiting = sum("waiting" in out + err for _, out, err in llms)
    whole_bars = number(r"fetched (\d+) bars", whole_fetch[1])
    whole_items = number(r"(\d+) news items", whole_fetch[1])
    same_layer = live_layer == layer_bytes(work / "whole-layer")
    return [
        "## 1. The daily live loop on recorded Yahoo responses",
        "",
        f"`data fetch` exit codes {sorted({c for c, _, _ in fetches})}, `llm` exit codes "
        f"{sorted({c for c, _, _ in llms})}; whole-window fetch {whole_fetch[0]}, run {whole_llm[0]}.",
        "",
        "| | day by day (live) | one fetch, one run |",
        "|---|---|---|",
        f"| `data fetch` invocations | {len(fetches)} | 1 |",
        f"| bars fetched | {sum(bars)} (first {bars[0]}, then {min(bars[1:])}..{max(bars[1:])} a day) | "
        f"{whole_bars} |",
        f"| news items fetched | {sum(items)} | {whole_items} |",
        f"| `llm` invocations | {len(llms)} (`--live`, then `--resume RUN --live`; {waiting} said waiting) | 1 |",
        f"| decisions stepped | {len(a)} | {len(b)} |",
        f"| score status | {sa.status} | {sb.status} |",
        f"| CR / SR / MDD (standard) | {crsrmdd(ma)} | {crsrmdd(mb)} |",
        f"| wall time | {live_s:.1f} s | {whole_s:.1f} s |",
        "",
        f"Same (date, action, reward) for every step: **{a == b}**; same metrics, both conventions: "
        f"**{ma['standard'] == mb['standard'] and ma['herculean'] == mb['herculean']}**; the two user layers "
        f"byte for byte (files and manifest): **{same_layer}**.",
        "",
    ]


def xbrl(work: Path) -> list[str]:
    from finenvs.evaluation.llm import RunConfig, run_llm
    from finenvs.evaluation.score import score_run
    from finenvs.tasks import task_of

    cuts = ("2023-12-31", "2024-06-30", "2024-12-31", "2025-06-30")
    os.environ["FINENVS_USER_DATA"] = str(work / "xbrl-steps")
    t0 = time.perf_counter()
    first = cli("data", "fetch", "--xbrl", "AAPL", "NFLX", "TSLA", "--start", "2023-01-01", "--end", cuts[0],
                "--user-agent", AGENT, "--sleep", "0")
    later = [cli("data", "fetch", "--xbrl", "AAPL", "NFLX", "TSLA", "--start", "2023-01-01", "--end", cut,
                 "--user-agent", AGENT, "--sleep", "0") for cut in cuts[1:]]
    steps_s = time.perf_counter() - t0
    os.environ["FINENVS_USER_DATA"] = str(work / "xbrl-once")
    t0 = time.perf_counter()
    once = cli("data", "fetch", "--xbrl", "AAPL", "NFLX", "TSLA", "--start", "2023-01-01", "--end", cuts[-1],
               "--user-agent", AGENT, "--sleep", "0")
    once_s = time.perf_counter() - t0
    verify = cli("data", "verify")
    same = layer_bytes(work / "xbrl-steps") == layer_bytes(work / "xbrl-once")
    scores = []
    for name in ("xbrl-steps", "xbrl-once"):
        config = RunConfig(env_id="FinAudit-v0", env_kwargs={"corpus": str(work / name / "xbrl")}, limit=20)
        summary = run_llm(config, task_of("FinAudit-v0").make_scripted_agent(), out=work / "runs", name=name,
                          progress=False)
        scores.append(score_run(summary.run_dir))
    m = [s.run_metrics() for s in scores]
    bundles = re.search(r"(\d+) XBRL bundles \((\d+) facts\)", once[1])
    errors = [line for line in once[2].splitlines() if line.startswith("could not get")]
    return [
        "## 2. Filings with their XBRL from recorded SEC EDGAR responses",
        "",
        f"One fetch `--start 2023-01-01 --end {cuts[-1]}` of AAPL NFLX TSLA (exit {once[0]}, {once_s:.1f} s): "
        f"**{bundles.group(1) if bundles else '?'} bundles, {bundles.group(2) if bundles else '?'} facts**; "
        f"{len(errors)} filings named as not got:",
        "",
        *[f"- `{re.sub(r'/tmp/[^ )]*', '…', e)}`" for e in errors],
        "",
        f"Fetched in {len(cuts)} steps (the same command with `--end` {', '.join(cuts)}; exit codes "
        f"{[first[0], *[c for c, _, _ in later]]}, {steps_s:.1f} s): the same user-layer bytes and manifest as the "
        f"one fetch: **{same}**. `finenvs data verify` (every fetched file re-hashed and its rows recounted): exit "
        f"{verify[0]}. FinAudit-v0's scripted agent over the first 20 eval instances of each fetched corpus: "
        f"{scores[0].status} / {scores[1].status}, metrics equal **{m[0] == m[1]}** "
        f"({json.dumps(m[0], sort_keys=True, default=str)[:300]}).",
        "",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="also write the Markdown report here")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="finenvs-fetch-"))
    os.environ["FINENVS_FETCH_REPLAY"] = str(work / "recorded")
    try:
        record(work / "recorded")
        lines = ["# `finenvs data fetch` on recorded responses", "",
                 f"`python benchmarks/fetch_roll_forward.py` on {platform.machine()}, Python "
                 f"{platform.python_version()}, {os.cpu_count()} cores (shared); offline, replaying recorded "
                 "responses.", ""]
        lines += live_loop(work)
        lines += xbrl(work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
