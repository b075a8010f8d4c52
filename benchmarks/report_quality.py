"""Does FinReport-v0's quality score order reports by what they get right? (Issue: labelled figures.)

Usage (from the repository root)::

    python benchmarks/report_quality.py                 # eval and train splits, ~2 min; writes its section
    python benchmarks/report_quality.py --splits eval   # a quicker run; prints only unless --out is given

For every report the template writer (``finenvs/tasks/report/baselines.py``) writes on the HERCULEAN symbols, the script
scores five versions of it against the same as-of facts:

- ``template``: the report as written;
- ``perturbed``: every number outside the headings and dates moved by +15%;
- ``wrong_levels``: only the price levels the report labels (52-week high and low, week high and low, the
  50-day SMA, scenario targets) moved by +15%;
- ``flipped``: the rating declarations set to the opposite direction (BUY <-> SELL; HOLD reports skipped);
- ``copied``: the blank template of ``get_report_template`` (the agent copied the form).

It also counts the template's own labelled levels that are wrong: the 52-week high/low it writes against the
52-week high/low of the last 252 closes as of the report date (what ``dist_52w_high``/``dist_52w_low``
mean), read from the env's facts. Only public APIs that predate the labelled-figure checks are used, so the
same script measures the scorer before and after a change.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import gymnasium as gym  # noqa: E402
from results_file import cpu_name, update_section  # noqa: E402

import finenvs  # noqa: E402,F401
from finenvs.tasks.report.baselines import TemplateReportWriter  # noqa: E402
from finenvs.tasks.report.protocol import numbers_in  # noqa: E402
from finenvs.tasks.report.quality import score_report  # noqa: E402
from finenvs.tasks.trading.spec import HERCULEAN_SYMBOLS  # noqa: E402

OPPOSITE = {"BUY": "SELL", "SELL": "BUY", "STRONG_BUY": "STRONG_SELL", "STRONG_SELL": "STRONG_BUY"}
_DECLARATION = re.compile(r"(?:(?<=Rating: )|(?<=rating is ))(STRONG_BUY|STRONG_SELL|BUY|SELL|HOLD)\b")
_LEVEL = re.compile(r"\((?:high|low|SMA|week high|week low) (\d+\.\d+)|(?:week high|week low) (\d+\.\d+)"
                    r"|(Bull|Base|Bear) case: (\d+\.\d+)")
_52W = re.compile(r"52-week (high|low):[^\n]*\((?:high|low) (\d+\.\d+)\)")


def _scaled(tok_text: str, value: float, factor: float) -> str:
    decimals = len(tok_text.split(".")[1].rstrip("%")) if "." in tok_text else 0
    return f"{value * factor:.{decimals}f}"


def perturb_numbers(report: str, factor: float = 1.15) -> str:
    """Every value number outside headings moved by ``factor`` (precision and units kept)."""
    out = []
    for line in report.splitlines(keepends=True):
        if line.lstrip().startswith("#"):
            out.append(line)
            continue
        pieces, last = [], 0
        for tok in numbers_in(line):
            if tok.kind != "value":
                continue
            raw = line[tok.start:]
            m = re.match(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+", raw)
            if not m:
                continue
            digits = m.group(0)
            new = _scaled(digits, float(digits.replace(",", "")), factor)
            pieces.append(line[last:tok.start] + new)
            last = tok.start + len(digits)
        out.append("".join(pieces) + line[last:])
    return "".join(out)


def perturb_levels(report: str, factor: float = 1.15) -> str:
    def move(m: re.Match) -> str:
        text = m.group(0)
        for digits in [g for g in m.groups() if g and re.fullmatch(r"\d+\.\d+", g)]:
            text = text.replace(digits, _scaled(digits, float(digits), factor), 1)
        return text

    return _LEVEL.sub(move, report)


def flip(report: str, rating: str) -> str | None:
    return None if rating not in OPPOSITE else _DECLARATION.sub(OPPOSITE[rating], report)


def wrong_52w(report: str, facts) -> list[str]:
    wrong = []
    for kind, value in _52W.findall(report):
        truth = facts.levels[f"{kind}_52w"]
        if abs(float(value) - truth) > max(0.005, 0.005 * truth):
            wrong.append(f"52-week {kind} {value} (as-of {truth:.2f})")
    return wrong


def run(splits: list[str]) -> dict:
    rows = {k: [] for k in ("template", "perturbed", "wrong_levels", "flipped", "copied")}
    flipped_cost = []
    wrong_reports, reports, examples = 0, 0, []
    for split in splits:
        for symbol in HERCULEAN_SYMBOLS:
            env = gym.make("FinReport-v0", symbol=symbol, split=split, action_mode="report")
            env.reset(seed=0)
            writer = TemplateReportWriter(env)
            done = False
            while not done:
                report = writer.write()
                facts = env.unwrapped.facts()
                blank = env.unwrapped.report_template()
                card = score_report(report, facts)
                rows["template"].append(card.score)
                rows["perturbed"].append(score_report(perturb_numbers(report), facts).score)
                rows["wrong_levels"].append(score_report(perturb_levels(report), facts).score)
                rows["copied"].append(score_report(blank, facts).score)
                flipped = flip(report, card.rating)
                if flipped is not None:
                    score = score_report(flipped, facts).score
                    rows["flipped"].append(score)
                    flipped_cost.append(card.score - score)
                wrong = wrong_52w(report, facts)
                reports += 1
                if wrong:
                    wrong_reports += 1
                    if len(examples) < 3:
                        examples.append(f"{symbol} {facts.report_date}: " + "; ".join(wrong))
                _, _, terminated, truncated, _ = env.step(report)
                done = terminated or truncated
            env.close()
    return {"rows": rows, "flipped_cost": flipped_cost, "reports": reports, "wrong_reports": wrong_reports,
            "examples": examples}


#: Hostile reports at the length limit: label, number and date floods (the scorer must stay linear).
FLOODS = ("RSI ", "rsi 1 ", "20-day sma 5 ", "week high 3 ", "2026-01-01 ", "1.5% ", "AAPL MSFT ",
          "Bull case: 100 (+1%)\n", "10-K filed 2025-01-01. ")


def time_floods(reps: int = 3) -> list[tuple[str, float, int]]:
    """``(flood, median seconds, checks)`` of scoring each flood cut to the report length limit."""
    from finenvs.tasks.report.protocol import MAX_REPORT_CHARS

    env = gym.make("FinReport-v0", symbol="AAPL", split="eval", action_mode="report")
    env.reset(seed=0)
    facts = env.unwrapped.facts()
    out = []
    for flood in FLOODS:
        text = (flood * (MAX_REPORT_CHARS // len(flood) + 1))[:MAX_REPORT_CHARS]
        times, checks = [], 0
        for _ in range(reps):
            t0 = time.perf_counter()
            checks = len(score_report(text, facts).checks)
            times.append(time.perf_counter() - t0)
        out.append((flood, statistics.median(times), checks))
    return out


def render(result: dict, splits: list[str], seconds: float) -> str:
    rows = result["rows"]
    lines = [
        "## Report quality: does the score order reports by what they get right?",
        "",
        f"`python benchmarks/report_quality.py --splits {' '.join(splits)}` — {result['reports']} template reports "
        f"(HERCULEAN symbols {', '.join(HERCULEAN_SYMBOLS)}; splits {', '.join(splits)}); {seconds:.0f} s on "
        f"{cpu_name()}.",
        "",
        "| version | reports | mean score (0-10) | min | max |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, values in rows.items():
        if values:
            lines.append(f"| {name} | {len(values)} | {statistics.fmean(values):.2f} | {min(values):.2f} | "
                         f"{max(values):.2f} |")
    cost = result["flipped_cost"]
    lines += [
        "",
        f"- A flipped rating costs {statistics.fmean(cost):.2f} on average (range {min(cost):.2f}–{max(cost):.2f})."
        if cost else "- No report had a rating to flip.",
        f"- Template reports stating a wrong 52-week high or low: {result['wrong_reports']} of {result['reports']}"
        + (f" (e.g. {result['examples'][0]})." if result["examples"] else "."),
    ]
    if result.get("floods"):
        from finenvs.tasks.report.protocol import MAX_REPORT_CHARS

        lines += ["", f"Scoring one hostile report of {MAX_REPORT_CHARS:,} characters (median of 3; the flood "
                  "repeated to the limit):", "", "| flood | seconds | checks |", "|---|---:|---:|"]
        lines += [f"| `{flood!r}` | {sec:.3f} | {n} |" for flood, sec, n in result["floods"]]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--splits", nargs="+", default=["eval", "train"])
    parser.add_argument("--out", type=Path, default=None, help="results file (default: benchmarks/RESULTS.md "
                        "when the default splits run)")
    parser.add_argument("--section", default="report-quality")
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    result = run(args.splits)
    result["floods"] = time_floods()
    text = render(result, args.splits, time.perf_counter() - t0)
    print(text)
    out = args.out if args.out is not None else (HERE / "RESULTS.md" if args.splits == ["eval", "train"] else None)
    if out is not None:
        update_section(args.section, text, out)
        print(f"\nwrote section {args.section!r} of {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
