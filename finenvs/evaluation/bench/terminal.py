"""What ``finenvs bench`` prints when it is done: each family's section in short, then the cross-family tables."""

from __future__ import annotations

from finenvs.evaluation.agent_runs import herculean_markdown, run_cells
from finenvs.evaluation.bench.aggregate import aggregate_terminal
from finenvs.evaluation.bench.herculean import reproduction_terminal
from finenvs.evaluation.bench.scorecard import Scorecard
from finenvs.text.plural import counted


def terminal_table(card: Scorecard) -> str:
    """Each family's section as its section prints it and its agents in one line, then HERCULEAN's tables, the
    section aggregate, the evaluation config's selection (its skips and stand-ins), the reproduction check and the
    windows part."""
    out: list[str] = []
    for task in card.tasks():
        view = card.view(task)
        if view.has_content:
            out += ["", *task.bench.section.terminal(view)]
        runs = view.runs
        if runs:
            out.append("")
            out.append(f"{task.env_id} agents: " + "; ".join(
                f"{r['agent']} ({r['split']}, {counted(len(r['episodes']), 'episode')}"
                + (f", {r['failed']} failed" if r["failed"] else "") + "): "
                + ", ".join(f"{c.label} {cell}" for c, cell in zip(task.columns[:4], run_cells(task.columns[:4], r),
                                                                    strict=True)) for r in runs))
    if card.herculean:
        out.append("")
        out += [ln for ln in herculean_markdown(card.herculean, tuple(card.herculean))[3:] if ln]
    if card.aggregate:
        out += ["", *aggregate_terminal(card.aggregate)]
    rec = card.config.get("eval_config_record")
    if rec:
        out += ["", f"Evaluation config {rec['name']} (digest {rec['digest'][:16]}): {rec['tasks']} FAB++ tasks",
                *(f"  skipped {s['type']}: {s['reason']}" for s in rec["skipped"]),
                *(f"  {n}" for n in rec.get("notes", []))]
    out += reproduction_terminal(card.reproduction, card.config.get("split", "eval"))
    if card.windows:
        from finenvs.evaluation.windows import suite_terminal

        out += suite_terminal(card.windows)
    return "\n".join(out[1:] if out[:1] == [""] else out)


__all__ = ["terminal_table"]
