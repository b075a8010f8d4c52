"""The cost of keyed run folders: writing (and verifying) trajectory lines with and without their HMAC.

Usage (from the repository root)::

    python benchmarks/bench_seal.py                 # writes its section of benchmarks/RESULTS.md
    python benchmarks/bench_seal.py --records 10000 --repeats 5 --out /tmp/seal.md

The records are real ones: the step and episode records of an offline run of FinTrading-v0's scripted agent
over the default eval plan, repeated until ``--records`` lines. Each repeat writes them through
:class:`~finenvs.evaluation.runlog.TrajectoryWriter` (chained, flushed per line, as a run writes them) once
with the MAC and once without, into a fresh file; the best of ``--repeats`` is reported, with
:func:`~finenvs.evaluation.integrity.verify_chain` over the same files and the scripted agent's own time per
decision in that run (the cheapest decision there is: no model, no network) for scale.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from results_file import cpu_name, update_section


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=10_000, help="lines written per measurement (default 10000)")
    parser.add_argument("--repeats", type=int, default=5, help="repeats; the best is reported (default 5)")
    parser.add_argument("--out", type=Path, help="write the Markdown here instead of benchmarks/RESULTS.md")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="finenvs-bench-seal-"))
    os.environ.setdefault("FINENVS_RUN_KEY", str(work / "run-key"))  # never the user's key

    from finenvs.evaluation.integrity import verify_chain
    from finenvs.evaluation.llm import RunConfig, run_llm
    from finenvs.evaluation.runlog import TrajectoryWriter, read_trajectories, start_integrity
    from finenvs.evaluation.seal import load_or_create_key, mac_hex, seal_run
    from finenvs.tasks import task_of

    began = time.perf_counter()
    summary = run_llm(RunConfig(env_id="FinTrading-v0"), task_of("FinTrading-v0").make_scripted_agent(), out=work,
                      name="source", progress=False)
    records, _ = read_trajectories(summary.run_dir / "trajectories.jsonl")
    steps = [r for r in records if r["type"] == "step"]
    per_decision = (time.perf_counter() - began) / len(steps)
    lines = [records[i % len(records)] for i in range(args.records)]
    key = load_or_create_key()
    metas = {keyed: start_integrity({"format": 4 if keyed else 3, "status": "complete"}) for keyed in (False, True)}

    def write(path: Path, keyed: bool) -> float:
        path.unlink(missing_ok=True)
        writer = TrajectoryWriter(path, genesis=metas[keyed]["integrity"]["genesis"], key=key)
        if not keyed:
            writer._key = None  # the same writer, chained, without the MAC
        t0 = time.perf_counter()
        for record in lines:
            writer.write(record)
        writer.close()
        metas[keyed]["integrity"].update(lines=writer.lines, final=writer.digest)
        return time.perf_counter() - t0

    def verify(path: Path, keyed: bool) -> float:
        meta = seal_run(metas[keyed], key) if keyed else metas[keyed]
        t0 = time.perf_counter()
        check = verify_chain(path, meta, key=key)
        seconds = time.perf_counter() - t0
        assert not check.problems and check.signature == ("signed" if keyed else "unsigned"), check.problems[:1]
        return seconds

    timings: dict[bool, tuple[list[float], list[float]]] = {False: ([], []), True: ([], [])}
    paths = {keyed: work / f"{'keyed' if keyed else 'plain'}.jsonl" for keyed in (False, True)}
    for _ in range(args.repeats):  # the two interleaved, so a change in the machine's load hits both
        for keyed in (False, True):
            timings[keyed][0].append(write(paths[keyed], keyed))
            timings[keyed][1].append(verify(paths[keyed], keyed))
    plain, keyed = ((min(timings[k][0]), min(timings[k][1]), paths[k].stat().st_size) for k in (False, True))
    bodies = [line for line in paths[False].read_bytes().split(b"\n") if line]
    macs = []
    for _ in range(args.repeats):  # the added work alone: one HMAC-SHA256 per line, over the same bytes
        t0 = time.perf_counter()
        for body in bodies:
            mac_hex(key, body)
        macs.append(time.perf_counter() - t0)
    n = args.records
    mac_alone = min(macs) / n
    spread = max(statistics.median(timings[k][0]) / min(timings[k][0]) for k in (False, True)) - 1
    mean_bytes = plain[2] / n
    text = f"""## Keyed run folders: the MAC per trajectory line

`python benchmarks/bench_seal.py --records {n} --repeats {args.repeats}` on {cpu_name()} ({os.cpu_count()} cores).
{n:,} real records (FinTrading-v0's scripted agent, {len(steps)} decisions of the default eval plan, repeated;
{mean_bytes:,.0f} bytes per line on average) written through `TrajectoryWriter` (chained, flushed per line) and
checked by `verify_chain`; best of {args.repeats}.

| | write {n:,} lines (s) | per line (µs) | verify {n:,} lines (s) | per line (µs) | file bytes |
|---|---|---|---|---|---|
| chain only (sha256) | {plain[0]:.3f} | {plain[0] / n * 1e6:.1f} | {plain[1]:.3f} | {plain[1] / n * 1e6:.1f} | {plain[2]:,} |
| chain + HMAC-SHA256 | {keyed[0]:.3f} | {keyed[0] / n * 1e6:.1f} | {keyed[1]:.3f} | {keyed[1] / n * 1e6:.1f} | {keyed[2]:,} |

The two were measured interleaved on a machine shared with other jobs (median/best of the writes up to
{100 * spread:.0f} % apart), so the difference of the rows is within that noise. The added work alone, one HMAC-SHA256
per line over the same {n:,} lines (best of {args.repeats}), is {mac_alone * 1e6:.1f} µs per line, once when written and
once when verified. A decision of the offline scripted agent (no model, no network: the cheapest decision there
is) took {per_decision * 1e3:.2f} ms in the same run, so the MAC is {100 * mac_alone / per_decision:.2f} % of it; a
model's decision takes seconds.
"""
    if args.out:
        args.out.write_text(text, encoding="utf-8")
        print(text)
    else:
        print(text)
        print(f"written to {update_section('seal', text)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
