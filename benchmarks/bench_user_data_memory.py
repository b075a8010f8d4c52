"""Peak memory of a user's own price data: one symbol, 1 million daily bars, loaded and traded.

Run from the repository root::

    python benchmarks/bench_user_data_memory.py            # ~1 min, writes its section of benchmarks/RESULTS.md
    python benchmarks/bench_user_data_memory.py --quick    # 100k bars, prints only

A synthetic geometric random walk of ``--bars`` daily bars (consecutive calendar
days from 1800-01-01, the finenvs schema) is written once to a CSV and a Parquet
file. Each case then runs in a fresh Python process, which reports its peak
resident set size (``resource.getrusage(RUSAGE_SELF).ru_maxrss``):

* ``baseline``: the interpreter after ``import finenvs``, pandas, duckdb and the
  FinTrading-v0 module, nothing loaded;
* ``csv`` / ``parquet``: ``gym.make("FinTrading-v0", data=PATH, split=None, calendar=None)``, a
  reset over the whole history and ``--steps`` steps;
* ``dataframe``: the same from the pandas DataFrame, generated inside the process
  (the frame itself is counted: a user holds it).

The report gives each peak and the peak minus the baseline (what the data costs).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
CASES = ("baseline", "csv", "parquet", "dataframe")
SYMBOL = "SYN"
#: Peak RSS MiB of the same command on commit 2441748, before memory was made proportional to the data (a
#: float32 table of every observation, 183 floats a day, built at reset; per-day Python objects; pandas copies;
#: scipy imported with finenvs.data). Kept for the comparison; everything else in the report is measured.
BEFORE = {"commit": "2441748", "baseline": 150, "csv": 1192, "parquet": 1184, "dataframe": 1194}


def make_frame(n: int) -> object:
    """A seeded random walk of ``n`` bars in the finenvs schema (no symbol column), as a DataFrame."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(0)
    close = 100.0 * np.exp(np.cumsum(rng.normal(0.0, 0.01, n)))
    open_ = close * np.exp(rng.normal(0.0, 0.003, n))
    high = np.maximum(open_, close) * (1.0 + rng.uniform(0.0, 0.01, n))
    low = np.minimum(open_, close) * (1.0 - rng.uniform(0.0, 0.01, n))
    volume = rng.integers(1_000, 1_000_000, n).astype(np.float64)
    dates = np.datetime64("1800-01-01") + np.arange(n)
    return pd.DataFrame({"date": dates, "open": open_, "high": high, "low": low, "close": close,
                         "volume": volume})


def write_bars(n: int, directory: Path) -> tuple[Path, Path]:
    """The bars of :func:`make_frame` as a CSV and a Parquet file."""
    import duckdb

    frame = make_frame(n)
    csv = directory / f"{SYMBOL}.csv"
    parquet = directory / f"{SYMBOL}.parquet"
    frame.to_csv(csv, index=False, float_format="%.10g", date_format="%Y-%m-%d")  # type: ignore[attr-defined]
    con = duckdb.connect()
    try:
        con.register("bars", frame)
        con.execute(f"COPY (SELECT CAST(date AS DATE) AS date, open, high, low, close, volume FROM bars) "
                    f"TO '{parquet}' (FORMAT parquet)")
    finally:
        con.close()
    return csv, parquet


def child(case: str, path: str, steps: int, bars_wanted: int) -> None:
    """One measured case (runs in its own process); prints a JSON line."""
    import resource
    import time

    import duckdb  # noqa: F401  (the baseline holds every module a load uses)
    import gymnasium as gym
    import pandas  # noqa: F401

    import finenvs  # noqa: F401
    import finenvs.tasks.trading.env  # noqa: F401

    began = time.perf_counter()
    rewards = 0.0
    decisions = 0
    if case != "baseline":
        if case == "dataframe":
            data: object = make_frame(bars_wanted)
        else:
            data = path
        # a million consecutive days run past every exchange calendar (pandas' timestamps end in 2262): the bars
        # themselves are the sessions
        env = gym.make("FinTrading-v0", data=data, symbol=SYMBOL, split=None, calendar=None)
        obs, info = env.reset(seed=0)
        decisions = info["n_decisions"]
        for k in range(steps):
            obs, reward, terminated, truncated, info = env.step(k % 3)
            rewards += reward
            if terminated or truncated:
                break
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"case": case, "peak_mib": peak_kib / 1024, "seconds": time.perf_counter() - began,
                      "decisions": decisions, "reward_sum": rewards}))


def measure(case: str, path: Path, steps: int, bars: int) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", case, str(path), "--steps", str(steps),
                          "--bars", str(bars)],
                         check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bars", type=int, default=1_000_000)
    parser.add_argument("--steps", type=int, default=1_000)
    parser.add_argument("--quick", action="store_true", help="100k bars, print only")
    parser.add_argument("--no-write", action="store_true", help="print only; leave RESULTS.md alone")
    parser.add_argument("--child", nargs=2, metavar=("CASE", "PATH"), help=argparse.SUPPRESS)
    parser.add_argument("--write", metavar="DIR", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], args.child[1], args.steps, args.bars)
        return
    if args.write:
        write_bars(args.bars, Path(args.write))
        return
    bars = 100_000 if args.quick else args.bars
    with tempfile.TemporaryDirectory() as tmp:
        # the files are written by another process: a child's ru_maxrss starts at its parent's size at fork
        subprocess.run([sys.executable, __file__, "--write", tmp, "--bars", str(bars)], check=True)
        csv, parquet = Path(tmp) / f"{SYMBOL}.csv", Path(tmp) / f"{SYMBOL}.parquet"
        sizes = {"csv": csv.stat().st_size, "parquet": parquet.stat().st_size}
        paths = {"baseline": csv, "csv": csv, "parquet": parquet, "dataframe": parquet}
        results = {case: measure(case, paths[case], args.steps, bars) for case in CASES}
    base = results["baseline"]["peak_mib"]
    lines = [
        "## Peak memory of a user's own data (FinTrading-v0, one symbol)",
        "",
        f"`python benchmarks/bench_user_data_memory.py{' --quick' if args.quick else ''}` "
        f"({_dt.date.today().isoformat()}, Python {sys.version.split()[0]}, {sys.platform}): {bars:,} daily bars "
        f"of one symbol (CSV {sizes['csv'] / 2**20:.0f} MiB, Parquet {sizes['parquet'] / 2**20:.0f} MiB), "
        f"`gym.make(\"FinTrading-v0\", data=..., split=None, calendar=None)`, a reset over the whole history and "
        f"{args.steps:,} steps, each case in a fresh process; peak RSS from `getrusage` (ru_maxrss).",
        "",
        f"| case | peak RSS MiB | minus baseline MiB | seconds | before ({BEFORE['commit']}) peak RSS MiB |",
        "|---|---:|---:|---:|---:|",
    ]
    for case in CASES:
        r = results[case]
        extra = "—" if case == "baseline" else f"{r['peak_mib'] - base:.0f}"
        lines.append(f"| {case} | {r['peak_mib']:.0f} | {extra} | {r['seconds']:.1f} | {BEFORE[case]} |")
    lines += [
        "",
        "`baseline` is the interpreter after `import finenvs`, pandas, duckdb and the FinTrading-v0 module. "
        "`dataframe` counts the user's DataFrame, generated in the process. "
        f"The last column is the same command on commit {BEFORE['commit']} (1M bars), before the fix: the "
        "reset built a float32 table of every observation (183 floats a day, ~700 MB), the market kept per-day "
        "Python objects, loading made pandas copies, and `import finenvs.data` imported scipy.",
    ]
    text = "\n".join(lines)
    print(text)
    if not (args.quick or args.no_write):
        sys.path.insert(0, str(HERE))
        from results_file import update_section

        print(f"\nwritten to {update_section('user-data-memory', text)}")


if __name__ == "__main__":
    main()
