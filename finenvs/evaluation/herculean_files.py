"""HERCULEAN trading-decision files: read them strictly, score them in FinTrading-v0, write runs as them.

HERCULEAN records an agent's trading episode as one JSON file::

    {"status": "completed", "symbol": "TSLA", "model": "...", "start_date": "2026-01-02",
     "end_date": "2026-01-09",
     "recommendations": [{"date": "2026-01-02", "price": 438.07, "recommended_action": "SELL"}, ...]}

:func:`read_decisions` reads one strictly (the file is agent-authored: every limit is checked in one
linear pass and every error names the file, the key and the row, never echoing more than a few dozen
characters of what it found); :func:`score_decisions` plays its actions in ``FinTrading-v0`` over the
file's window and reports CR/SR/MDD under both presets of :mod:`finenvs.scoring.presets` — finenvs'
``standard`` one and HERCULEAN's — with the file's calendar and price mismatches;
:func:`export_run` writes the FinTrading-v0 episodes of a ``finenvs llm`` run folder as such files;
:func:`herculean_markdown` tabulates scored files. ``cli_score_files`` and ``cli_export`` are the
bodies of ``finenvs score --herculean-decisions`` and ``finenvs score RUN --export-herculean``.

An action word is the target position until the next close, as in FinTrading-v0 (and HERCULEAN's
buy-and-hold baseline, which finenvs reproduces as BUY every day): BUY long, SELL short, HOLD flat.
The module reaches the family through its registered spec (:func:`decisions_task`: the one whose
``bench.herculean_decisions`` is set), its env id and its text protocol's action words, never by import.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import re
import sys
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from finenvs.errors import DataError, UnknownSymbolError, read_user_text, shown
from finenvs.evaluation.envpool import EnvPool, make_base_env
from finenvs.evaluation.replay import replay_episode
from finenvs.evaluation.runlog import jsonable, read_trajectories
from finenvs.scoring.presets import SHARPE_CONVENTIONS, SHARPE_LABELS
from finenvs.tasks import EpisodeSpec, TaskSpec, tasks
from finenvs.tasks.common import MARKET_COLUMNS
from finenvs.text.markdown import md_table
from finenvs.text.plural import counted
from finenvs.text.protocol import TextProtocol
from finenvs.text.safe_json import JSONLimitError, loads

#: The keys of a decisions file and of each of its recommendations (other keys are ignored).
REQUIRED_KEYS = ("status", "symbol", "model", "start_date", "end_date", "recommendations")
ROW_KEYS = ("date", "price", "recommended_action")
#: Largest file read (bytes) and most recommendations accepted (40 years of trading days).
MAX_FILE_BYTES = 32 * 2**20
MAX_RECOMMENDATIONS = 10_000
#: Longest value accepted for each text field.
MAX_TEXT_CHARS = {"status": 40, "symbol": 16, "model": 200}
#: A recorded price further than this (relative) from the shipped close is reported as a warning: above
#: float noise and a quarter's dividend adjustment, below any stock split.
PRICE_TOLERANCE = 0.005
#: What a decision day without a recommendation plays: ``"hold"`` (default) :func:`missing_day_action`;
#: ``"previous"`` the last recommendation before it (:func:`missing_day_action` before the first).
MISSING_DAY_RULES = ("hold", "previous")
#: The status :func:`export_run` writes for a finished episode, a failed one and one without its end.
EXPORT_STATUS = {"complete": "completed", "failed": "failed", None: "in_progress"}
#: Most dates listed by name in a mismatch report (the counts are always whole).
LISTED_DATES = 10

_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_SYMBOL = re.compile(r"[A-Za-z0-9][A-Za-z0-9.^=_-]*")
_FILE_PART = re.compile(r"[^A-Za-z0-9._-]")


@dataclass(frozen=True)
class Recommendation:
    """One row of a decisions file."""

    date: str
    price: float
    action: str


@dataclass(frozen=True)
class HerculeanDecisions:
    """A HERCULEAN trading-decision file as read by :func:`read_decisions` (``source``: where it came from)."""

    source: str
    status: str
    symbol: str
    model: str
    start_date: str
    end_date: str
    recommendations: tuple[Recommendation, ...]

    def to_json(self) -> dict[str, Any]:
        """The file's JSON (HERCULEAN's shape)."""
        return {"status": self.status, "symbol": self.symbol, "model": self.model, "start_date": self.start_date,
                "end_date": self.end_date,
                "recommendations": [{"date": r.date, "price": r.price, "recommended_action": r.action}
                                    for r in self.recommendations]}


def decisions_task() -> TaskSpec:
    """The family whose episodes HERCULEAN's decision files record: the registered spec with
    ``bench.herculean_decisions`` (FinTrading-v0's).

    Raises:
        LookupError: No registered family, or more than one, says so.
    """
    found = [t for t in tasks() if t.bench.herculean_decisions]
    if len(found) != 1:
        raise LookupError(f"HERCULEAN decision files need exactly one registered family with bench.herculean_decisions; "
                          f"found {[t.env_id for t in found]}")
    return found[0]


def _protocol() -> TextProtocol:
    env_class: Any = decisions_task().env  # a family's env: it has a text protocol
    return env_class.text_protocol


def missing_day_action() -> str:
    """The action played on a trading day of the window that has no recommendation: the text protocol's
    default (HOLD, flat), the action finenvs takes for any decision an agent did not make."""
    return _protocol().default


# ---------------------------------------------------------------------- reading
def read_decisions(path: Path | str, *, dataset: str | None = "core") -> HerculeanDecisions:
    """Read a HERCULEAN trading-decision file strictly.

    Checks, in one pass: the file is at most :data:`MAX_FILE_BYTES` of UTF-8 JSON (within
    :mod:`finenvs.text.safe_json`'s limits); the top level holds :data:`REQUIRED_KEYS`; ``status``,
    ``symbol`` and ``model`` are short strings; ``start_date <= end_date`` are ISO dates; ``recommendations``
    is a non-empty list of at most :data:`MAX_RECOMMENDATIONS` objects with :data:`ROW_KEYS`, whose dates are
    ISO dates strictly increasing inside ``start_date..end_date``, whose price is a finite number > 0 and
    whose action is BUY, SELL or HOLD (exactly). Unknown keys are ignored.

    Args:
        path: The JSON file.
        dataset: The catalog dataset the file is checked against (the symbol must be in it and every date
            within its data); None checks the format only.

    Raises:
        FileNotFoundError: No such file.
        DataError: The file breaks the format; the message names the file, the key and the row
            (``recommendations[i].key``) and shows at most a few dozen characters of the value.
        UnknownSymbolError: The symbol is not in ``dataset``.
    """
    path = Path(path)
    text = read_user_text(path, "HERCULEAN trading-decision JSON file", MAX_FILE_BYTES)
    try:
        doc = loads(text, allow_non_finite=True)  # NaN/Infinity read, then refused below naming their row
    except JSONLimitError as exc:
        raise DataError(f"{path}: not a readable JSON file ({exc})") from None
    return parse_decisions(doc, source=str(path), dataset=dataset)


def parse_decisions(doc: Any, *, source: str = "<decisions>", dataset: str | None = "core") -> HerculeanDecisions:
    """:func:`read_decisions` of a value already decoded from JSON (``source`` names it in errors)."""

    def fail(where: str, message: str) -> DataError:
        return DataError(f"{source}: {where}: {message}")

    if not isinstance(doc, dict):
        raise DataError(f"{source}: the top level is a JSON {_kind(doc)}, not an object with keys {list(REQUIRED_KEYS)}")
    missing = [k for k in REQUIRED_KEYS if k not in doc]
    if missing:
        raise DataError(f"{source}: missing key(s) {missing}; a HERCULEAN decisions file has {list(REQUIRED_KEYS)}")
    status, model = _text(doc["status"], "status", fail), _text(doc["model"], "model", fail)
    symbol = _text(doc["symbol"], "symbol", fail)
    if not _SYMBOL.fullmatch(symbol):
        raise fail("symbol", f"{shown(symbol, 40)} is not a ticker (letters, digits and . ^ = _ -)")
    start, end = _date(doc["start_date"], "start_date", fail), _date(doc["end_date"], "end_date", fail)
    if start > end:
        raise fail("end_date", f"{end} is before start_date {start}")
    rows = doc["recommendations"]
    if not isinstance(rows, list):
        raise fail("recommendations", f"is a JSON {_kind(rows)}, not a list of {{{', '.join(ROW_KEYS)}}} objects")
    if not rows:
        raise fail("recommendations", "is empty: nothing to score")
    if len(rows) > MAX_RECOMMENDATIONS:
        raise fail("recommendations", f"has {len(rows)} rows; at most {MAX_RECOMMENDATIONS} are read")
    bounds = _data_bounds(symbol, dataset, source)
    for key, day in (("start_date", start), ("end_date", end)):
        if bounds is not None and not bounds[0] <= day <= bounds[1]:
            raise fail(key, f"{day} is outside the {dataset!r} data of {symbol} ({bounds[0]}..{bounds[1]})")
    words = _protocol().actions
    out: list[Recommendation] = []
    previous = ""
    for i, row in enumerate(rows):
        where = f"recommendations[{i}]"
        if not isinstance(row, dict):
            raise fail(where, f"is a JSON {_kind(row)}, not an object with keys {list(ROW_KEYS)}")
        absent = [k for k in ROW_KEYS if k not in row]
        if absent:
            raise fail(where, f"missing key(s) {absent}")
        day = _date(row["date"], f"{where}.date", fail)
        if not start <= day <= end:
            raise fail(f"{where}.date", f"{day} is outside start_date..end_date ({start}..{end})")
        if day == previous:
            raise fail(f"{where}.date", f"{day} repeats recommendations[{i - 1}].date")
        if day < previous:
            raise fail(f"{where}.date", f"{day} comes before recommendations[{i - 1}].date {previous}; "
                                        "dates must increase")
        price = row["price"]
        if isinstance(price, bool) or not isinstance(price, (int, float)):
            raise fail(f"{where}.price", f"{shown(price, 40)} is not a number")
        price = float(price)
        if not math.isfinite(price) or price <= 0.0:
            raise fail(f"{where}.price", f"{price} is not a finite price > 0")
        action = row["recommended_action"]
        if not isinstance(action, str) or action not in words:
            raise fail(f"{where}.recommended_action", f"{shown(action, 40)} is not one of {list(words)}")
        out.append(Recommendation(day, price, action))
        previous = day
    return HerculeanDecisions(source, status, symbol, model, start, end, tuple(out))


def _kind(value: Any) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}.get(
        type(value), "number")


def _text(value: Any, key: str, fail: Any) -> str:
    limit = MAX_TEXT_CHARS[key]
    if not isinstance(value, str) or not value.strip():
        raise fail(key, f"{shown(value, 40)} is not a non-empty string")
    if len(value) > limit:
        raise fail(key, f"a string of {len(value)} characters; at most {limit}")
    return value


def _date(value: Any, where: str, fail: Any) -> str:
    if not isinstance(value, str) or not _DATE.fullmatch(value):
        raise fail(where, f"{shown(value, 40)} is not a YYYY-MM-DD date")
    try:
        _dt.date.fromisoformat(value)
    except ValueError:
        raise fail(where, f"{value} is not a calendar date") from None
    return value


def _data_bounds(symbol: str, dataset: str | None, source: str) -> tuple[str, str] | None:
    """First and last date of ``symbol`` in the catalog dataset (None without a dataset)."""
    if dataset is None:
        return None
    from finenvs.data.catalog import default_catalog

    catalog = default_catalog()
    valid = catalog.symbols(dataset)
    if symbol not in valid:
        raise UnknownSymbolError(f"{source}: symbol: {symbol!r} is not in the {dataset!r} data; valid symbols: "
                                 f"{sorted(valid)[:LISTED_DATES * 3]}")
    dates = catalog.series(symbol, dataset).dates
    return str(dates[0])[:10], str(dates[-1])[:10]


# ---------------------------------------------------------------------- scoring
def score_decisions(decisions: HerculeanDecisions, *, dataset: str = "core", env_kwargs: dict[str, Any] | None = None,
                    price_tolerance: float = PRICE_TOLERANCE, missing_day: str = "hold") -> dict[str, Any]:
    """Play a decisions file in ``FinTrading-v0`` and score it under both presets.

    The env runs ``symbol`` over ``start_date..end_date`` (``split=None``; fees, fill and shorting as the
    env's defaults unless ``env_kwargs`` says otherwise: the file does not record them). Each trading day of
    the window but the last is a decision; the recorded actions are replayed exactly as ``finenvs score``
    replays a run (:func:`~finenvs.evaluation.replay.replay_episode`), so the metrics are the trading spec's
    ``market_episode_metrics`` of that episode.

    Calendar rule (the file's dates against the data's trading days):

    * a decision day without a recommendation plays :func:`missing_day_action` (HOLD: flat) — finenvs'
      default for a decision the agent did not make; HERCULEAN publishes no rule for it (its own sample file
      skips 2026-01-05). ``missing_day="previous"`` repeats the last recommendation instead (to bound what
      the rule changes). Counted in ``calendar["missing_days"]``.
    * a recommendation dated on a day that is not a trading day of the window (a weekend, a holiday, a day
      before the first trading day on or after ``start_date``) has no close to trade at and is not played;
      counted in ``calendar["off_calendar"]``.
    * a recommendation on the window's last trading day is not played either: the position is closed at that
      close (HERCULEAN's equity series ends there too); counted in ``calendar["last_day"]``.

    Prices: each recommendation on a trading day is compared with the shipped close of that day; the report
    gives the largest relative difference and its date. Differences over ``price_tolerance`` (default
    :data:`PRICE_TOLERANCE`) are warned about (``UserWarning`` and ``warnings`` in the result): the scores
    always use the shipped (adjusted) closes, never the file's prices, which may be unadjusted.

    Returns:
        ``{"file", "symbol", "model", "status", "window" (played, first..last trading day),
        "declared_window", "decisions", "recommendations", "actions" (the word played each decision day),
        "calendar", "prices", "standard", "herculean", "sharpe_labels", "sharpe_conventions", "metrics" (the
        spec's whole episode metrics, curves included; NaN as None), "warnings"}``.

    Raises:
        ValueError: The window cannot be played (e.g. too little history before ``start_date``), naming the file.
    """
    if missing_day not in MISSING_DAY_RULES:
        raise ValueError(f"missing_day={missing_day!r}; valid rules: {list(MISSING_DAY_RULES)}")
    d = decisions
    env_id, protocol = decisions_task().env_id, _protocol()
    default = protocol.default
    kwargs = {"dataset": dataset, **(env_kwargs or {}), "symbol": d.symbol, "split": None,
              "start": d.start_date, "end": d.end_date}
    spec = EpisodeSpec(0, env_id, kwargs, 0, None)
    envs: dict[str, Any] = {}
    try:
        try:
            env = make_base_env(spec)
        except (ValueError, KeyError) as exc:
            raise DataError(f"{d.source}: cannot play {d.symbol} {d.start_date}..{d.end_date} in {env_id}: "
                            f"{exc.args[0] if exc.args else exc}") from None
        envs[EnvPool._key(spec)] = env
        env.reset(seed=spec.seed)
        base: Any = env.unwrapped  # FinTrading-v0's env
        state, market = base.state, base.market
        days = [market.date_strings[t] for t in range(state.start, state.end + 1)]
        closes = {day: float(market.close_values[t]) for day, t in zip(days, range(state.start, state.end + 1),
                                                                       strict=True)}
        by_date = {r.date: r for r in d.recommendations}
        words, last = [], default
        for day in days[:-1]:
            if day in by_date:
                last = by_date[day].action
            words.append(last if day in by_date or missing_day == "previous" else default)
        _, metrics, _ = replay_episode(spec, [protocol.actions[w] for w in words], envs=envs)
        assert metrics is not None  # a complete replay (the default) has its metrics
    finally:
        for e in envs.values():
            e.close()
    missing = [day for day in days[:-1] if day not in by_date]
    off_calendar = [r.date for r in d.recommendations if r.date not in closes]
    last_day = 1 if days[-1] in by_date else 0
    rel = [(abs(r.price - closes[r.date]) / closes[r.date], r.date) for r in d.recommendations if r.date in closes]
    worst = max(rel) if rel else (math.nan, None)
    beyond = [day for diff, day in rel if diff > price_tolerance]
    notes = []
    if missing:
        notes.append(f"{len(missing)} decision day(s) without a recommendation played "
                     f"{'the previous action' if missing_day == 'previous' else default}: "
                     f"{missing[:LISTED_DATES]}")
    if off_calendar:
        notes.append(f"{len(off_calendar)} recommendation(s) on non-trading days not played: "
                     f"{off_calendar[:LISTED_DATES]}")
    if beyond:
        message = (f"{d.source}: {len(beyond)} recorded price(s) differ from the shipped close by more than "
                   f"{price_tolerance:.2%} (largest {worst[0]:.2%} on {worst[1]}); scored on the shipped closes "
                   "(the file's prices may be unadjusted)")
        notes.append(message)
        warnings.warn(message, UserWarning, stacklevel=2)
    return {
        "file": d.source, "symbol": d.symbol, "model": d.model, "status": d.status,
        "window": f"{days[0]}..{days[-1]}", "declared_window": f"{d.start_date}..{d.end_date}",
        "decisions": len(days) - 1, "recommendations": len(d.recommendations), "actions": words,
        "calendar": {"missing_days": len(missing), "missing_dates": missing[:LISTED_DATES],
                     "missing_day_rule": missing_day, "off_calendar": len(off_calendar),
                     "off_calendar_dates": off_calendar[:LISTED_DATES], "last_day": last_day},
        "prices": jsonable({"compared": len(rel), "max_rel_diff": worst[0], "max_rel_diff_date": worst[1],
                            "beyond_tolerance": len(beyond), "tolerance": price_tolerance}),
        "standard": metrics["standard"], "herculean": metrics["herculean"],
        "sharpe_labels": dict(SHARPE_LABELS), "sharpe_conventions": dict(SHARPE_CONVENTIONS),
        "metrics": metrics, "warnings": notes,
    }


# ---------------------------------------------------------------------- export
def export_run(run_dir: Path | str, out_dir: Path | str) -> list[Path]:
    """Write the FinTrading-v0 episodes of a ``finenvs llm``/``finenvs mcp`` run folder as HERCULEAN files.

    One file per episode, ``trading_decisions_e<index>_<SYMBOL>_<start>_<end>.json``: status ``completed``
    (``failed`` for an episode that failed under HERCULEAN's rule, ``in_progress`` for one without its
    episode record), model the run's agent model (else its name), the played window as start/end dates, and
    one recommendation per recorded decision: its date, the env's close that day and the action word. An
    episode whose decisions reach the window's end also gets a row for its last day, repeating the last
    action: no decision is taken at the last close, and HERCULEAN's scorer, which trades every row's action
    and closes after the last row, then holds the position to that close as finenvs does (without it, it
    would close a day early). The run is re-scored first
    (:func:`~finenvs.evaluation.score.score_run`, nothing written to it): a tampered run or one that does not
    reproduce is refused. Fees, fill and shorting are not part of the format: a run with non-default ones
    scores the same only when :func:`score_decisions` gets them in ``env_kwargs``.

    Raises:
        FileNotFoundError: Not a run folder.
        ValueError: The run is tampered or not reproduced, holds episodes of another env or of synthetic or
            user data (no shipped dates), or an output file exists already.
    """
    from finenvs.evaluation.score import score_run

    score = score_run(run_dir, write=False)
    if score.status in ("tampered", "not reproduced"):
        raise ValueError(f"{run_dir}: the run is {score.status} (`finenvs score {run_dir}` says why); "
                         "only a run that re-scores is exported")
    env_id, protocol = decisions_task().env_id, _protocol()
    specs = [EpisodeSpec.from_dict(e) for e in score.meta.get("episodes") or []]
    others = sorted({s.env_id for s in specs} - {env_id})
    if others:
        raise ValueError(f"{run_dir}: HERCULEAN decision files hold {env_id} episodes; this run has {others}")
    for s in specs:
        if s.env_kwargs.get("source", "real") != "real" or s.env_kwargs.get("data") is not None:
            raise ValueError(f"{run_dir}: episode {s.index} runs on synthetic or user data; a decisions file "
                             "dates its rows in the shipped data")
    records, _ = read_trajectories(Path(run_dir) / "trajectories.jsonl")
    steps: dict[int, list[dict[str, Any]]] = {}
    finals: dict[int, Any] = {}  # episode -> its recorded status
    for r in records:
        if r.get("type") == "step":
            steps.setdefault(r["episode"], []).append(r)
        elif r.get("type") == "episode":
            finals[r["episode"]] = r.get("status")
    agent = score.meta.get("agent") or {}
    model = str(agent.get("model") or agent.get("name") or "unknown")[: MAX_TEXT_CHARS["model"]]
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for s in specs:
        rows = sorted(steps.get(s.index, []), key=lambda r: r["step"])
        if not rows:
            continue  # an episode that never started has no decision to write
        env = make_base_env(s)
        try:
            _, info = env.reset(seed=s.seed, options=s.options)
            base: Any = env.unwrapped  # FinTrading-v0's env
            state, market = base.state, base.market
            close = {market.date_strings[t]: float(market.close_values[t]) for t in range(state.start, state.end + 1)}
            last_day, eve = market.date_strings[state.end], market.date_strings[state.end - 1]
        finally:
            env.close()
        symbol, start, end = str(info["symbol"]), str(info["window_start"]), str(info["window_end"])
        recs = tuple(Recommendation(r["date"], close[r["date"]],
                                    protocol.word_of(protocol.decode(r["env_action"])))
                     for r in rows)
        if recs and recs[-1].date == eve:  # the decisions reached the window's end: its last day keeps the
            recs += (Recommendation(last_day, close[last_day], recs[-1].action),)  # position to the last close
        doc = HerculeanDecisions("", EXPORT_STATUS.get(finals.get(s.index), "in_progress"), symbol, model, start,
                                 end, recs).to_json()
        path = out / f"trading_decisions_e{s.index:03d}_{_FILE_PART.sub('_', symbol)}_{start}_{end}.json"
        if path.exists():
            raise FileExistsError(f"{path}: exists already; export into an empty folder")
        path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
        written.append(path)
    return written


# ---------------------------------------------------------------------- report
def herculean_markdown(results: Sequence[dict[str, Any]]) -> str:
    """One Markdown table per scored file (:func:`score_decisions` results): symbol, window, decisions,
    CR/SR/MDD under both presets (each Sharpe column labelled by its convention), calendar mismatches and
    the largest price difference; the Sharpe conventions in words below."""
    headers = ["symbol", "window", "decisions", *(c.label for c in MARKET_COLUMNS), "missing days (rule)",
               "off-calendar", "max price diff (rel.)"]
    lines = []
    for r in results:
        cal, prices = r["calendar"], r["prices"]
        metrics = {**r["standard"], **{f"h_{k}": v for k, v in r["herculean"].items()}}
        row = [r["symbol"], r["window"], str(r["decisions"]),
               *(c.cell(metrics) for c in MARKET_COLUMNS),
               f"{cal['missing_days']} ({cal['missing_day_rule']})", str(cal["off_calendar"]),
               "n/a" if prices["max_rel_diff"] is None else f"{prices['max_rel_diff']:.1e} "
               f"({prices['max_rel_diff_date']})"]
        lines += [f"### {Path(r['file']).name}: {r['symbol']}, model {r['model']}, status {r['status']}", "",
                  md_table(headers, [row]), ""]
        lines += [f"- {note}" for note in r["warnings"]] + ([""] if r["warnings"] else [])
    lines += [f"{SHARPE_LABELS[p]}: {SHARPE_CONVENTIONS[p]}." for p in SHARPE_LABELS]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------- CLI bodies
def cli_score_files(paths: Sequence[Path | str], as_json: bool) -> int:
    """``finenvs score --herculean-decisions FILE... [--json]``: score each file; 0 if all were scored, 2 if a
    file was refused (one line on stderr per refused file; the others are still scored)."""
    results, errors = [], []
    for path in paths:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the result lists them
                results.append(score_decisions(read_decisions(path)))
        except (DataError, FileNotFoundError, UnknownSymbolError) as exc:
            message = str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)
            errors.append({"file": str(path), "error": message})
            print(f"finenvs: error: {message}", file=sys.stderr)
    if as_json:
        print(json.dumps({"files": results, "errors": errors}, indent=2, allow_nan=False))
    elif results:
        print(herculean_markdown(results), end="")
    return 2 if errors else 0


def cli_export(run_dir: Path | str, out_dir: Path | str) -> int:
    """``finenvs score RUN --export-herculean DIR``: write the run's episodes as HERCULEAN files; 0 when done."""
    paths = export_run(run_dir, out_dir)
    for path in paths:
        print(path)
    print(f"{counted(len(paths), 'HERCULEAN decision file')} written to {out_dir}")
    return 0


__all__ = ["EXPORT_STATUS", "MAX_FILE_BYTES", "MAX_RECOMMENDATIONS", "MISSING_DAY_RULES", "PRICE_TOLERANCE",
           "HerculeanDecisions", "Recommendation", "cli_export", "cli_score_files", "decisions_task", "export_run",
           "herculean_markdown", "missing_day_action", "parse_decisions", "read_decisions", "score_decisions"]
