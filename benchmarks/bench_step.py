"""Step-throughput benchmark: FinTrading-v0 beside hand-written references and two peer libraries.

Run from the repository root::

    python benchmarks/bench_step.py            # full run (~1-2 min), writes its section of benchmarks/RESULTS.md
    python benchmarks/bench_step.py --quick    # smoke run (seconds), prints only unless --out is given

What it measures, all in one process and interleaved so the numbers are comparable:

1. Main table (the shipped AAPL data, ``split="train"``): FinTrading-v0 raw
   (``FinTradingEnv``) and via ``gymnasium.make``; ``ReferenceTradingEnv`` and
   ``BareReferenceEnv`` from ``benchmarks/reference_env.py`` built on the same
   arrays; gym-anytrading's ``StocksEnv`` and gym-trading-env's ``TradingEnv`` on
   the same AAPL bars.
2. Series-length scaling: the same at 1k / 5k / 20k synthetic GBM bars from
   ``finenvs.data.simulate`` for FinTrading-v0 (gym.make, ``data=df``), the
   reference env, gym-anytrading and gym-trading-env.
3. Reset cost (µs per reset) of every env above.

Protocol: every env steps through the same pre-generated list of Python-int
actions (seeded ``numpy`` Generator; gym-anytrading, which has 2 actions, gets
its own list). Each repetition runs a fixed number of steps per env, resetting
when an episode ends; the reset calls are *outside* the step timer (reset cost
is measured on its own). Within a repetition the envs are interleaved
round-robin in blocks of steps (order reshuffled every block), so a burst of
load from a neighbour on a shared machine hits all of them alike. The garbage collector is left on (it is part of what an agent loop pays).
Times come from ``time.perf_counter``. Per env we report the median and min (and
max) steps/s over the repetitions; ratios are given both as a ratio of medians
and as the median of per-repetition ratios (both envs timed in the same
repetition, which cancels slow drifts of a shared machine).

Nothing here is hard-coded: every number in the report is measured by this run.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import gc
import importlib.metadata as _md
import math
import os
import platform
import statistics
import sys
import time
import traceback
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import gymnasium as gym  # noqa: E402
from reference_env import BareReferenceEnv, ReferenceTradingEnv  # noqa: E402
from results_file import RESULTS, update_section  # noqa: E402

import finenvs  # noqa: E402,F401  (registers FinTrading-v0)
from finenvs.data import default_catalog, simulate  # noqa: E402
from finenvs.tasks.trading.env import FinTradingEnv  # noqa: E402
from finenvs.tasks.trading.features import FEATURE_NAMES, WARMUP, compute_features  # noqa: E402

perf_counter = time.perf_counter

FIN_RAW = "FinTrading-v0 (raw FinTradingEnv)"
FIN_MAKE = "FinTrading-v0 (gym.make)"
FIN_WRAPPED = "FinTrading-v0 (gym.make + gymnasium's default wrappers)"
FIN_LEAN = 'FinTrading-v0 (gym.make, info="lean")'
REF = "ReferenceTradingEnv"
BARE = "BareReferenceEnv"
ANY = "gym-anytrading StocksEnv"
ANY_MAKE = "gym-anytrading StocksEnv (gym.make)"
GTE = "gym-trading-env TradingEnv"
MAIN_ORDER = (FIN_RAW, FIN_MAKE, FIN_LEAN, FIN_WRAPPED, REF, BARE, ANY, ANY_MAKE, GTE)
SCALE_ORDER = (FIN_MAKE, REF, ANY, GTE)
SCALE_LENGTHS = (1_000, 5_000, 20_000)

# targets
TARGET_VS_REF = 0.8
TARGET_VS_ANY = 2.0
#: Issue 36: FinTrading-v0 at >= 0.8x the bare floor, by default or with the documented info="lean" option.
TARGET_VS_BARE = 0.8
TARGET_FLAT = 0.20  # 20k within this fraction of 1k


# --------------------------------------------------------------------------- peers
def _import_gym_trading_env() -> Any:
    """Import gym-trading-env's TradingEnv without keeping its global side effect.

    ``gym_trading_env.environments`` runs ``warnings.filterwarnings("error")`` at
    import time, which turns *every* warning in the process into an exception
    (including gymnasium's env-checker warnings). Restore the filters after import.
    """
    saved = list(warnings.filters)
    try:
        from gym_trading_env.environments import TradingEnv
    finally:
        warnings.filters[:] = saved
        mutated = getattr(warnings, "_filters_mutated", None)  # invalidate the per-module warning caches
        if mutated is not None:
            mutated()
    return TradingEnv


def anytrading_frame(df: Any) -> Any:
    """finenvs schema frame -> gym-anytrading's capitalised OHLCV frame with a date index."""
    out = df.set_index("date")[["open", "high", "low", "close", "volume"]].copy()
    out.columns = ["Open", "High", "Low", "Close", "Volume"]
    return out


def gte_frame(series: Any) -> Any:
    """finenvs PriceSeries -> gym-trading-env frame.

    Lower-case ``open/high/low/close/volume`` with a DatetimeIndex; the
    observation columns must contain "feature" in their name. We give it the
    same six causal features FinTrading-v0 observes (``feature_<name>``), and drop
    the warm-up rows where they are NaN (gym-trading-env starts at row 0).
    """
    df = series.to_frame().set_index("date")[["open", "high", "low", "close", "volume"]].copy()
    feats = compute_features(series)
    for j, name in enumerate(FEATURE_NAMES):
        df[f"feature_{name}"] = feats[:, j].astype(np.float64)
    return df.iloc[WARMUP:].copy()


def make_anytrading(df: Any) -> Any:
    from gym_anytrading.envs import StocksEnv

    adf = anytrading_frame(df)
    return StocksEnv(adf, window_size=30, frame_bound=(30, len(adf)))


def make_anytrading_via_gym_make(df: Any) -> Any:
    """gym-anytrading the way its README builds it: ``gym.make("stocks-v0", ...)``."""
    import gym_anytrading  # noqa: F401  (registers stocks-v0)

    adf = anytrading_frame(df)
    return gym.make("stocks-v0", df=adf, window_size=30, frame_bound=(30, len(adf)))


def make_fintrading_with_default_wrappers(**kwargs: Any) -> Any:
    """FinTrading-v0 as gym.make would build it had it registered with gymnasium's defaults.

    finenvs registers with ``order_enforce=False, disable_env_checker=True`` (the env
    enforces reset-before-step and validates actions itself); this variant puts
    OrderEnforcing and PassiveEnvChecker back to show what they cost.
    """
    import dataclasses

    spec = dataclasses.replace(gym.spec("FinTrading-v0"), order_enforce=True, disable_env_checker=False)
    return gym.make(spec, **kwargs)


def make_gte(series: Any) -> Any:
    TradingEnv = _import_gym_trading_env()
    return TradingEnv(
        gte_frame(series),
        positions=[-1, 0, 1],
        trading_fees=0.0005,
        windows=None,
        verbose=0,
        initial_position=0,  # start flat like FinTrading-v0 (default 'random' uses the global np.random)
        name="AAPL",
    )


# --------------------------------------------------------------------------- timing
class Bench:
    """One env under test: its name, the env (or the error that prevented it) and its action list."""

    def __init__(self, name: str, build: Callable[[], Any], actions: list[int]) -> None:
        self.name = name
        self.actions = actions
        self.env: Any = None
        self.error: str | None = None
        self.build_s = math.nan
        self.obs_shape = "?"
        self.steps_per_s: list[float] = []
        self.reset_us: list[float] = []
        self.episodes = 0
        self._cursor = 0
        self._elapsed = 0.0
        t0 = perf_counter()
        try:
            self.env = build()
            self.build_s = perf_counter() - t0
            obs, _ = self.env.reset(seed=0)
            self.obs_shape = "x".join(str(d) for d in np.shape(obs))
            # warm-up: a short untimed run (first-step checks, caches)
            self.start_rep()
            self.block(min(500, len(actions)))
        except Exception as exc:  # a peer that cannot run is reported, not fatal
            self.fail(exc)

    def fail(self, exc: BaseException) -> None:
        self.error = f"{type(exc).__name__}: {exc}".strip()
        self.env = None
        sys.stderr.write(f"[bench] {self.name} failed:\n{traceback.format_exc()}\n")

    @property
    def ok(self) -> bool:
        return self.env is not None

    def start_rep(self) -> None:
        """Fresh episode, action cursor back to 0 (every repetition replays the same actions)."""
        self.env.reset()
        self._cursor = 0
        self._elapsed = 0.0

    def block(self, n_steps: int) -> None:
        """Run the next ``n_steps`` actions, continuing the current episode; time only the step() loops.

        When an episode ends the env is reset outside the timer and stepping goes on.
        """
        env, actions = self.env, self.actions
        step = env.step
        stop = self._cursor + n_steps
        while self._cursor < stop:
            chunk = actions[self._cursor : stop]  # sliced outside the timer
            k = 0
            ended = False
            t0 = perf_counter()
            for a in chunk:
                k += 1
                _, _, terminated, truncated, _ = step(a)
                if terminated or truncated:
                    ended = True
                    break
            self._elapsed += perf_counter() - t0
            self._cursor += k
            if ended:
                self.episodes += 1
                env.reset()  # not timed

    def end_rep(self) -> None:
        self.steps_per_s.append(self._cursor / self._elapsed)

    def measure_reset(self, n_resets: int) -> None:
        reset = self.env.reset
        reset()
        t0 = perf_counter()
        for _ in range(n_resets):
            reset()
        self.reset_us.append((perf_counter() - t0) / n_resets * 1e6)


def first_reset_us(market: Any, first: int, last: int, n: int = 20) -> float:
    """Median µs to build the episode constants (observation templates) of a window not seen before."""
    from finenvs.tasks.trading.core import TradingParams, make_episode

    params = TradingParams()
    times = []
    for _ in range(n):
        t0 = perf_counter()
        make_episode(market, params, first, last)
        times.append((perf_counter() - t0) * 1e6)
    return statistics.median(times)


def _guard(b: Bench, fn: Callable[[], None]) -> None:
    if not b.ok:
        return
    try:
        fn()
    except Exception as exc:
        b.fail(exc)


def run_interleaved(
    benches: list[Bench],
    reps: int,
    n_steps: int,
    block: int,
    n_resets: int,
    rng: np.random.Generator,
    label: str,
) -> None:
    """``reps`` repetitions; in each, every env runs ``n_steps`` steps in blocks of ``block`` steps,
    round-robin over the envs in a freshly shuffled order per block, so all envs share the machine's
    contention of the moment. Then each env's reset cost is timed (shuffled order)."""
    n_blocks = max(1, math.ceil(n_steps / block))
    for r in range(reps):
        t0 = perf_counter()
        for b in benches:
            _guard(b, b.start_rep)
        done = 0
        for _ in range(n_blocks):
            size = min(block, n_steps - done)
            for i in rng.permutation(len(benches)):
                b = benches[i]
                _guard(b, lambda b=b, size=size: b.block(size))
            done += size
        for b in benches:
            _guard(b, b.end_rep)
        for i in rng.permutation(len(benches)):
            b = benches[i]
            _guard(b, lambda b=b: b.measure_reset(n_resets))
        sys.stderr.write(f"[bench] {label}: rep {r + 1}/{reps} done in {perf_counter() - t0:.1f}s\n")


# --------------------------------------------------------------------------- stats / formatting
def med(xs: list[float]) -> float:
    return statistics.median(xs) if xs else math.nan


def paired(a: Bench | None, b: Bench | None) -> tuple[float, float]:
    """(ratio of medians, median of per-repetition ratios) of steps/s a over b."""
    if a is None or b is None or not a.steps_per_s or not b.steps_per_s:
        return math.nan, math.nan
    n = min(len(a.steps_per_s), len(b.steps_per_s))
    per_rep = [a.steps_per_s[i] / b.steps_per_s[i] for i in range(n)]
    return med(a.steps_per_s) / med(b.steps_per_s), med(per_rep)


def fmt_int(x: float) -> str:
    return "n/a" if not math.isfinite(x) else f"{x:,.0f}"


def fmt_ratio(x: float, digits: int = 2) -> str:
    return "n/a" if not math.isfinite(x) else f"{x:.{digits}f}x"


def fmt_us(x: float) -> str:
    return "n/a" if not math.isfinite(x) else (f"{x:.2f}" if x < 100 else f"{x:,.0f}")


def version(dist: str) -> str:
    try:
        return _md.version(dist)
    except _md.PackageNotFoundError:
        return "not installed"


def machine_info() -> dict[str, str]:
    cpu = platform.processor() or "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    ram = "unknown"
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                ram = f"{int(line.split()[1]) / 1024**2:.1f} GiB"
                break
    except (OSError, ValueError):
        pass
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count() or 0
    return {
        "cpu": cpu,
        "cores": f"{os.cpu_count()} logical ({usable} usable by this process)",
        "ram": ram,
        "os": f"{platform.system()} {platform.release()}",
    }


def loadavg() -> str:
    try:
        return " / ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


# --------------------------------------------------------------------------- checks
def equivalence_check(fin: FinTradingEnv, ref: ReferenceTradingEnv, actions: list[int]) -> str:
    """Step FinTrading-v0 and the reference through one episode with the same actions; compare.

    The terminal observation is compared on its own: after the close-out FinTrading-v0
    reports the position as flat, the reference keeps the last held position there.
    """
    o1, _ = fin.reset(seed=0)
    o2, _ = ref.reset(seed=0)
    max_obs = float(np.max(np.abs(o1 - o2)))
    max_rew = 0.0
    keys_equal = True
    n = 0
    last_diff = "n/a"
    for a in actions:
        o1, r1, te1, tr1, i1 = fin.step(a)
        o2, r2, te2, tr2, i2 = ref.step(a)
        n += 1
        max_rew = max(max_rew, abs(r1 - r2))
        keys_equal &= set(i1) - {"closed_out"} == set(i2)
        if (te1 or tr1) != (te2 or tr2):
            return f"episode ends differ at step {n}"
        if te1 or tr1:
            d = np.flatnonzero(o1 != o2)
            last_diff = (
                "identical" if d.size == 0 else f"differs at index {d.tolist()} (the scalars after close-out)"
            )
            break
        max_obs = max(max_obs, float(np.max(np.abs(o1 - o2))))
    return (
        f"FinTrading-v0 and ReferenceTradingEnv stepped together through one AAPL train episode ({n} steps, "
        f"same actions): max |obs diff| before the last step {max_obs:.2e}, terminal obs {last_diff}, "
        f"max |reward diff| {max_rew:.2e}, same info keys (besides `closed_out`): {'yes' if keys_equal else 'NO'}"
    )


# --------------------------------------------------------------------------- main
def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--quick", action="store_true", help="smoke run: few reps/steps; prints only unless --out is given"
    )
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        help="results file (default benchmarks/RESULTS.md for a full run; none for --quick)",
    )
    p.add_argument(
        "--reps", type=int, default=None, help="repetitions of the main table (default 21; quick 3)"
    )
    p.add_argument(
        "--steps",
        type=int,
        default=None,
        help="steps per env per repetition, main table (default 30000; quick 3000)",
    )
    p.add_argument(
        "--scale-reps", type=int, default=None, help="repetitions of the scaling table (default 15; quick 3)"
    )
    p.add_argument(
        "--scale-steps",
        type=int,
        default=None,
        help="steps per env per repetition per length (default 20000; quick 3000)",
    )
    p.add_argument(
        "--block",
        type=int,
        default=None,
        help="steps per env per interleaving block (default 2000; quick 1000)",
    )
    p.add_argument(
        "--resets", type=int, default=None, help="resets timed per env per repetition (default 20; quick 5)"
    )
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)

    quick = args.quick
    reps = args.reps or (3 if quick else 21)
    n_steps = args.steps or (3_000 if quick else 30_000)
    scale_reps = args.scale_reps or (3 if quick else 15)
    scale_steps = args.scale_steps or (3_000 if quick else 20_000)
    n_resets = args.resets or (5 if quick else 20)
    block = args.block or (1_000 if quick else 2_000)
    out = args.out if args.out is not None else (None if quick else HERE / "RESULTS.md")
    command = (
        " ".join(["python", *sys.argv])
        if argv is None
        else " ".join(["python", "benchmarks/bench_step.py", *argv])
    )

    started = _dt.datetime.now().astimezone()
    load_before = loadavg()
    t_start = perf_counter()
    rng = np.random.default_rng(args.seed)
    n_act = max(n_steps, scale_steps)
    actions3 = rng.integers(
        0, 3, size=n_act
    ).tolist()  # SELL/HOLD/BUY; gym-trading-env: index into [-1, 0, 1]
    actions2 = rng.integers(0, 2, size=n_act).tolist()  # gym-anytrading: Sell/Buy
    order_rng = np.random.default_rng(args.seed + 1)

    # import the peers up front so that construction times exclude first-import cost
    for mod in ("gym_anytrading.envs",):
        try:
            __import__(mod)
        except Exception as exc:  # reported per env when it is built
            sys.stderr.write(f"[bench] cannot import {mod}: {type(exc).__name__}: {exc}\n")
    try:
        _import_gym_trading_env()
    except Exception as exc:
        sys.stderr.write(f"[bench] cannot import gym_trading_env: {type(exc).__name__}: {exc}\n")

    # ------------------------------------------------------------ main table (AAPL, train)
    aapl = default_catalog().series("AAPL")
    aapl_df = aapl.to_frame()
    probe = FinTradingEnv(symbol="AAPL", split="train")
    probe.reset(seed=0)
    m = probe.market
    first, last = probe.state.start, probe.state.end

    main_benches = {
        FIN_RAW: Bench(FIN_RAW, lambda: FinTradingEnv(symbol="AAPL", split="train"), actions3),
        FIN_MAKE: Bench(FIN_MAKE, lambda: gym.make("FinTrading-v0", symbol="AAPL", split="train"), actions3),
        FIN_LEAN: Bench(FIN_LEAN, lambda: gym.make("FinTrading-v0", symbol="AAPL", split="train", info="lean"),
                        actions3),
        FIN_WRAPPED: Bench(
            FIN_WRAPPED,
            lambda: make_fintrading_with_default_wrappers(symbol="AAPL", split="train"),
            actions3,
        ),
        REF: Bench(
            REF,
            lambda: ReferenceTradingEnv(m.flat_features, m.close, list(m.date_strings), first, last),
            actions3,
        ),
        BARE: Bench(BARE, lambda: BareReferenceEnv(m.flat_features, m.close, first, last), actions3),
        ANY: Bench(ANY, lambda: make_anytrading(aapl_df), actions2),
        ANY_MAKE: Bench(ANY_MAKE, lambda: make_anytrading_via_gym_make(aapl_df), actions2),
        GTE: Bench(GTE, lambda: make_gte(aapl), actions3),
    }
    equiv = "not run"
    if main_benches[REF].ok:
        try:
            equiv = equivalence_check(
                FinTradingEnv(symbol="AAPL", split="train"),
                ReferenceTradingEnv(m.flat_features, m.close, list(m.date_strings), first, last),
                actions3,
            )
        except Exception as exc:
            equiv = f"failed: {type(exc).__name__}: {exc}"
    gc.collect()
    run_interleaved(list(main_benches.values()), reps, n_steps, block, n_resets, order_rng, "main")

    template_cases: dict[str, tuple[Any, int, int]] = {"AAPL train": (m, first, last)}

    # ------------------------------------------------------------ scaling (synthetic GBM)
    scale: dict[tuple[str, int], Bench] = {}
    for n in SCALE_LENGTHS:
        series = simulate({"model": "gbm"}, n, np.random.default_rng(0), symbol="SYN")
        df = series.to_frame()
        fe = Bench(
            FIN_MAKE, lambda df=df: gym.make("FinTrading-v0", data=df, symbol="SYN", split=None), actions3
        )
        scale[(FIN_MAKE, n)] = fe

        def build_ref(df: Any = df) -> Any:
            raw = FinTradingEnv(data=df, symbol="SYN", split=None)
            raw.reset(seed=0)
            sm = raw.market
            f, la = raw.state.start, raw.state.end
            return ReferenceTradingEnv(sm.flat_features, sm.close, list(sm.date_strings), f, la)

        scale[(REF, n)] = Bench(REF, build_ref, actions3)
        probe_n = FinTradingEnv(data=df, symbol="SYN", split=None)
        probe_n.reset(seed=0)
        template_cases[f"GBM {n:,} bars, whole series"] = (probe_n.market, probe_n.state.start, probe_n.state.end)
        scale[(ANY, n)] = Bench(ANY, lambda df=df: make_anytrading(df), actions2)
        scale[(GTE, n)] = Bench(GTE, lambda s=series: make_gte(s), actions3)
    gc.collect()
    run_interleaved(list(scale.values()), scale_reps, scale_steps, block, n_resets, order_rng, "scaling")

    elapsed = perf_counter() - t_start
    load_after = loadavg()

    # ------------------------------------------------------------ report
    mi = machine_info()
    L: list[str] = []
    L.append("# Step-throughput benchmark results")
    L.append("")
    if quick:
        L.append(
            "> **Quick smoke run** (`--quick`): too few repetitions/steps to cite; run without `--quick` for real numbers."
        )
        L.append("")
    L.append(f"- Command: `{command}` (from the repository root)")
    L.append(f"- Date: {started.strftime('%Y-%m-%d %H:%M:%S %Z')}; script wall time {elapsed:.0f} s")
    L.append(f"- Machine: {mi['cpu']}; {mi['cores']}; RAM {mi['ram']}; {mi['os']}")
    L.append(
        f"- Load average (1/5/15 min) before: {load_before}; after: {load_after} (shared machine: expect noise)"
    )
    L.append(f"- Python {platform.python_version()} ({platform.python_implementation()})")
    L.append(
        "- Versions: finenvs {} | gymnasium {} | numpy {} | pandas {} | gym-anytrading {} | gym-trading-env {}".format(
            version("finenvs"),
            version("gymnasium"),
            version("numpy"),
            version("pandas"),
            version("gym-anytrading"),
            version("gym-trading-env"),
        )
    )
    L.append(
        f"- Protocol: {reps} repetitions x {n_steps:,} steps per env (main), {scale_reps} repetitions x "
        f"{scale_steps:,} steps per env and length (scaling); within a repetition the envs are interleaved round-robin "
        f"in blocks of {block:,} steps (order reshuffled every block), each env continuing its own episode; "
        f"random actions from `numpy.random.default_rng({args.seed})` pre-generated as Python ints; "
        "a fixed number of steps per measurement, resetting when an episode ends, **reset time excluded** from "
        f"steps/s (timed separately: {n_resets} back-to-back resets per env per repetition); GC on; `time.perf_counter`."
    )
    L.append(f"- Reference check: {equiv}.")
    L.append("")

    # main table
    ref_b = main_benches[REF]
    L.append(f'## 1. Steps/s on AAPL `split="train"` ({last - first} decisions per FinTrading episode)')
    L.append("")
    L.append(
        "| env | obs shape | median steps/s | min | max | µs/step (median) | vs ReferenceTradingEnv (median of per-rep ratios) |"
    )
    L.append("|---|---|---:|---:|---:|---:|---:|")
    for name in MAIN_ORDER:
        b = main_benches[name]
        if not b.steps_per_s:
            L.append(f"| {name} | {b.obs_shape} | failed | | | | `{b.error}` |")
            continue
        mm = med(b.steps_per_s)
        _, pr = paired(b, ref_b)
        note = f" (failed after {len(b.steps_per_s)} reps: `{b.error}`)" if b.error else ""
        L.append(
            f"| {name} | {b.obs_shape} | {fmt_int(mm)} | {fmt_int(min(b.steps_per_s))} | "
            f"{fmt_int(max(b.steps_per_s))} | {fmt_us(1e6 / mm)} | {fmt_ratio(pr)}{note} |"
        )
    L.append("")

    r_ref = paired(main_benches[FIN_MAKE], main_benches[REF])
    r_any = paired(main_benches[FIN_MAKE], main_benches[ANY])
    r_any_make = paired(main_benches[FIN_MAKE], main_benches[ANY_MAKE])
    r_raw = paired(main_benches[FIN_MAKE], main_benches[FIN_RAW])
    r_bare = paired(main_benches[FIN_MAKE], main_benches[BARE])
    r_lean_bare = paired(main_benches[FIN_LEAN], main_benches[BARE])
    r_gte = paired(main_benches[FIN_MAKE], main_benches[GTE])
    L.append("### Ratios (FinTrading-v0 via gym.make over ...)")
    L.append("")
    L.append("| over | ratio of medians | median of per-rep ratios | target |")
    L.append("|---|---:|---:|---|")
    L.append(f"| ReferenceTradingEnv | {fmt_ratio(r_ref[0])} | {fmt_ratio(r_ref[1])} | >= {TARGET_VS_REF}x |")
    L.append(
        f"| gym-anytrading StocksEnv | {fmt_ratio(r_any[0])} | {fmt_ratio(r_any[1])} | >= {TARGET_VS_ANY}x |"
    )
    L.append(
        f"| gym-anytrading StocksEnv via gym.make (as its README builds it) | {fmt_ratio(r_any_make[0])} | "
        f"{fmt_ratio(r_any_make[1])} | >= {TARGET_VS_ANY}x |"
    )
    L.append(f"| gym-trading-env TradingEnv | {fmt_ratio(r_gte[0])} | {fmt_ratio(r_gte[1])} | (none) |")
    L.append(
        f"| raw FinTradingEnv (gym.make returns the env itself: should be ~1) | {fmt_ratio(r_raw[0])} | "
        f"{fmt_ratio(r_raw[1])} | (none) |"
    )
    L.append(
        f"| BareReferenceEnv (floor for this obs/action shape) | {fmt_ratio(r_bare[0])} | {fmt_ratio(r_bare[1])} | "
        f">= {TARGET_VS_BARE}x |"
    )
    L.append(
        f"| BareReferenceEnv, FinTrading-v0 with `info=\"lean\"` (info only on the episode's last step) | "
        f"{fmt_ratio(r_lean_bare[0])} | {fmt_ratio(r_lean_bare[1])} | >= {TARGET_VS_BARE}x (either row) |"
    )
    L.append("")

    # scaling table
    L.append("## 2. Series-length scaling (synthetic GBM bars from `finenvs.data.simulate`)")
    L.append("")
    L.append(
        "Median steps/s (min in parentheses). Episodes span the whole series (FinTrading-v0: after its "
        f"{WARMUP + 30 - 1}-bar warm-up; gym-anytrading: after 30 bars; gym-trading-env: after the {WARMUP} NaN feature rows "
        "dropped from its frame); each measurement runs "
        f"{scale_steps:,} steps, resetting at episode ends (reset excluded)."
    )
    L.append("")
    hdr = " | ".join(f"{n:,} bars" for n in SCALE_LENGTHS)
    L.append(f"| env | {hdr} | 20k / 1k (ratio of medians) | 20k / 1k (median of per-rep ratios) |")
    L.append("|---|" + "---:|" * (len(SCALE_LENGTHS) + 2))
    flat: dict[str, tuple[float, float]] = {}
    for name in SCALE_ORDER:
        cells = []
        for n in SCALE_LENGTHS:
            b = scale[(name, n)]
            if b.steps_per_s:
                err = f" — failed later: `{b.error}`" if b.error else ""
                cells.append(f"{fmt_int(med(b.steps_per_s))} ({fmt_int(min(b.steps_per_s))}){err}")
            else:
                cells.append(f"failed: `{b.error}`")
        flat[name] = paired(scale[(name, SCALE_LENGTHS[-1])], scale[(name, SCALE_LENGTHS[0])])
        L.append(
            f"| {name} | "
            + " | ".join(cells)
            + f" | {fmt_ratio(flat[name][0])} | {fmt_ratio(flat[name][1])} |"
        )
    L.append("")

    # reset table
    L.append("## 3. Reset cost (µs per reset, median over repetitions; construction time once, ms)")
    L.append("")
    L.append("| env | data | µs/reset (median) | min | build (ms, once) |")
    L.append("|---|---|---:|---:|---:|")
    rows = [(name, "AAPL train", main_benches[name]) for name in MAIN_ORDER]
    rows += [(name, f"GBM {n:,} bars", scale[(name, n)]) for name in SCALE_ORDER for n in SCALE_LENGTHS]
    for name, data, b in rows:
        if b.reset_us:
            L.append(
                f"| {name} | {data} | {fmt_us(med(b.reset_us))} | {fmt_us(min(b.reset_us))} | {b.build_s * 1e3:,.1f} |"
            )
        else:
            L.append(f"| {name} | {data} | failed: `{b.error}` | | |")
    L.append("")
    L.append(
        "FinTrading-v0 keeps the observation templates of its last 16 windows, so the resets above (the same "
        "window again) reuse them. The first reset of a *new* window builds its templates, one row copy per "
        "decision day of the window (O(window length), amortised over the episode's steps):"
    )
    L.append("")
    L.append("| window | decision days | µs to build (median of 20) | µs per decision day |")
    L.append("|---|---:|---:|---:|")
    for label, (mk, first_row, last_row) in template_cases.items():
        us = first_reset_us(mk, first_row, last_row)
        L.append(f"| {label} | {last_row - first_row:,} | {fmt_us(us)} | {fmt_us(us / (last_row - first_row))} |")
    L.append("")

    # reading
    L.append("## Reading")
    L.append("")
    L.extend(reading(main_benches, scale, r_ref, r_any, r_any_make, r_raw, flat, quick))
    L.append("")
    L.append(
        "Caveats: the peers are not doing identical work. gym-anytrading and gym-trading-env return a *view* "
        "into a precomputed array as the observation (FinTrading-v0 and the reference envs build a fresh 183-float "
        "array each step); gym-anytrading has 2 actions and a (30, 2) observation, gym-trading-env a flat (8,) "
        "observation here (`windows=None`; six `feature_*` columns + two dynamic features) and keeps a full "
        'per-step history. `import gym_trading_env` runs `warnings.filterwarnings("error")` process-wide; this '
        "script restores the warning filters right after importing it."
    )
    report = "\n".join(L) + "\n"

    print(report)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        if out.resolve() == RESULTS:  # the shared results file: replace only this script's section
            update_section("step", report)
        else:
            out.write_text(report, encoding="utf-8")
        sys.stderr.write(f"[bench] wrote {out}\n")
    return 0


def reading(
    main_benches: dict[str, Bench],
    scale: dict[tuple[str, int], Bench],
    r_ref: tuple[float, float],
    r_any: tuple[float, float],
    r_any_make: tuple[float, float],
    r_raw: tuple[float, float],
    flat: dict[str, tuple[float, float]],
    quick: bool,
) -> list[str]:
    """The 'Reading' paragraph, generated from the measured numbers."""
    out: list[str] = []

    def verdict(x: float, ok: bool) -> str:
        return "n/a (not measured)" if not math.isfinite(x) else ("**met**" if ok else "**not met**")

    # a ">=" target counts as met only when both ratio estimates clear it
    lo_ref = min(r_ref)
    lo_any = min(r_any)
    out.append(
        f"- FinTrading-v0 via gym.make vs ReferenceTradingEnv: {fmt_ratio(r_ref[1], 3)} (median of per-rep ratios; "
        f"ratio of medians {fmt_ratio(r_ref[0], 3)}); target >= {TARGET_VS_REF}x, counted as met only if both estimates "
        f"clear it: {verdict(lo_ref, lo_ref >= TARGET_VS_REF)}."
    )
    lo_any_make = min(r_any_make)
    out.append(
        f"- FinTrading-v0 via gym.make vs gym-anytrading's StocksEnv constructed directly: {fmt_ratio(r_any[1], 3)} "
        f"(ratio of medians {fmt_ratio(r_any[0], 3)}); target >= {TARGET_VS_ANY}x "
        f"{verdict(lo_any, lo_any >= TARGET_VS_ANY)}. Against gym-anytrading via gym.make, as its README builds it "
        f"(which adds gymnasium's OrderEnforcing and PassiveEnvChecker): {fmt_ratio(r_any_make[1], 3)} "
        f"(ratio of medians {fmt_ratio(r_any_make[0], 3)}) {verdict(lo_any_make, lo_any_make >= TARGET_VS_ANY)}."
    )
    r_bare_any = paired(main_benches[BARE], main_benches[ANY])[1]
    r_make_bare = paired(main_benches[FIN_MAKE], main_benches[BARE])[1]
    bare_default = paired(main_benches[FIN_MAKE], main_benches[BARE])
    bare_lean = paired(main_benches[FIN_LEAN], main_benches[BARE])
    lo_default, lo_lean = min(bare_default), min(bare_lean)
    out.append(
        f"- FinTrading-v0 vs BareReferenceEnv: default info {fmt_ratio(bare_default[1], 3)} (ratio of medians "
        f"{fmt_ratio(bare_default[0], 3)}) {verdict(lo_default, lo_default >= TARGET_VS_BARE)}; with `info=\"lean\"` "
        f"(the documented option for RL loops; the default is unchanged) {fmt_ratio(bare_lean[1], 3)} (ratio of "
        f"medians {fmt_ratio(bare_lean[0], 3)}) {verdict(lo_lean, lo_lean >= TARGET_VS_BARE)}; target >= "
        f"{TARGET_VS_BARE}x with either."
    )
    if math.isfinite(r_bare_any) and math.isfinite(r_make_bare):
        out.append(
            f"- For scale: BareReferenceEnv, the least an env with this 183-float fresh observation can do, is itself "
            f"only {fmt_ratio(r_bare_any)} gym-anytrading (which returns a view of a (30, 2) array), and FinTrading-v0 "
            f"via gym.make runs at {fmt_ratio(r_make_bare)} of BareReferenceEnv. Reaching {TARGET_VS_ANY}x gym-anytrading "
            f"would need FinTrading-v0 at >= {TARGET_VS_ANY / r_bare_any:.0%} of the bare floor in this run."
        )
    if math.isfinite(r_raw[1]):
        r_wrapped = paired(main_benches[FIN_WRAPPED], main_benches[FIN_RAW])[1]
        r_wrapped_ref = paired(main_benches[FIN_WRAPPED], main_benches[REF])[1]
        out.append(
            f"- finenvs registers FinTrading-v0 with `order_enforce=False, disable_env_checker=True` (the env raises "
            f"`ResetNeeded` and validates actions itself; CI runs gymnasium's full `check_env`), so gym.make "
            f"returns the env itself: gym.make / raw = {fmt_ratio(r_raw[1])}. Had it registered with gymnasium's "
            f"default wrappers (OrderEnforcing + PassiveEnvChecker, 4 extra Python calls per step) it would run at "
            f"{fmt_ratio(r_wrapped)} of raw, i.e. {fmt_ratio(r_wrapped_ref)} of ReferenceTradingEnv."
        )
    fin_flat = flat.get(FIN_MAKE, (math.nan, math.nan))
    primary = fin_flat[1]
    ok_flat = math.isfinite(primary) and abs(primary - 1.0) <= TARGET_FLAT
    extra = ""
    if math.isfinite(primary) and primary > 1.0 + TARGET_FLAT:
        extra = (
            " (outside the band on the *fast* side: 20k bars stepped faster than 1k, i.e. noise, not growth)"
        )
    elif math.isfinite(primary) and primary < 1.0 - TARGET_FLAT:
        extra = " (step cost grows with series length)"
    out.append(
        f"- Flatness of FinTrading-v0 (gym.make) from 1k to 20k bars: 20k/1k throughput = {fmt_ratio(primary)} "
        f"(median of per-rep ratios; ratio of medians {fmt_ratio(fin_flat[0])}); target within ±{TARGET_FLAT:.0%} "
        f"{verdict(primary, ok_flat)}{extra}."
    )
    growers, flat_envs = [], []
    for name, (rm, rp) in flat.items():
        if not (math.isfinite(rm) and math.isfinite(rp)):
            continue
        (growers if max(rm, rp) < 1 - TARGET_FLAT else flat_envs).append(f"{name} ({fmt_ratio(rp)})")
    if growers:
        out.append(
            f"- Step cost grows with series length (20k-bar throughput below {1 - TARGET_FLAT:.0%} of 1k-bar "
            f"throughput in both estimates): {', '.join(growers)}."
        )
    else:
        out.append(
            f"- No env's *step* cost grows with series length in this run (every 20k/1k throughput ratio is "
            f">= {1 - TARGET_FLAT:.0%} in at least one estimate): {', '.join(flat_envs)}."
        )
    # reset growth, judged on the min (the least contended sample) because resets are short
    reset_growth, reset_flat = [], []
    for name in SCALE_ORDER:
        a, b = scale[(name, SCALE_LENGTHS[0])], scale[(name, SCALE_LENGTHS[-1])]
        if a.reset_us and b.reset_us:
            ratio = min(b.reset_us) / min(a.reset_us)
            text = f"{name} ({fmt_us(min(a.reset_us))} -> {fmt_us(min(b.reset_us))} µs, {ratio:.1f}x)"
            (reset_growth if ratio > 1 + 2 * TARGET_FLAT else reset_flat).append(text)
    if reset_growth:
        out.append(
            "- Reset cost (min over repetitions) grows with series length, 1k -> 20k bars: "
            + "; ".join(reset_growth)
            + "; roughly flat: "
            + ("; ".join(reset_flat) or "none")
            + "."
        )
    g1, g20 = scale[(GTE, SCALE_LENGTHS[0])], scale[(GTE, SCALE_LENGTHS[-1])]
    if (
        g1.reset_us
        and g20.reset_us
        and g20.steps_per_s
        and min(g20.reset_us) / min(g1.reset_us) > 1 + 2 * TARGET_FLAT
    ):
        ep = 252
        step_us = 1e6 / med(g20.steps_per_s)
        extra = min(g20.reset_us) / ep
        try:
            width = str(g20.env.unwrapped.historical_info.width)
        except Exception:
            width = "~20"
        out.append(
            f"- So the peer whose cost grows with series length is gym-trading-env, through `reset()`: it allocates a "
            f"`len(df)` x {width} object array (`History(max_size=len(df))`) every episode. Over a whole-series episode that is "
            f"amortised away, but with short episodes on a long series (e.g. `max_episode_duration={ep}` on "
            f"{SCALE_LENGTHS[-1]:,} bars) it would add about {extra:.2f} µs per step (min reset / {ep}) to its "
            f"{step_us:.1f} µs step (arithmetic on the numbers above, not measured separately)."
        )
    failed = [b for b in [*main_benches.values(), *scale.values()] if b.error]
    seen = set()
    for b in failed:
        if (b.name, b.error) in seen:
            continue
        seen.add((b.name, b.error))
        out.append(f"- {b.name} could not be (fully) measured: `{b.error}`.")
    if quick:
        out.append(
            "- This is a `--quick` smoke run; the verdicts above are not reliable at this sample size."
        )
    return out


if __name__ == "__main__":
    raise SystemExit(main())
