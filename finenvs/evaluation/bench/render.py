"""The scorecard as Markdown (and the self-contained HTML page), and the files a bench run writes."""

from __future__ import annotations

import importlib.util
import json

from finenvs.evaluation.agent_runs import herculean_markdown
from finenvs.evaluation.bench.aggregate import aggregate_markdown, debate_overall_markdown
from finenvs.evaluation.bench.herculean import reproduction_markdown
from finenvs.evaluation.bench.scorecard import Scorecard, json_default
from finenvs.evaluation.runlog import jsonable
from finenvs.tasks.market_section import SR_H, SR_STD
from finenvs.tasks.section import Charts, missing_section_markdown
from finenvs.text.markdown import md_table, md_text


def _header(card: Scorecard) -> list[str]:
    cfg = card.config
    lines = [
        f"# finenvs scorecard — {md_text(cfg['run'])}",
        "",
        f"Split `{cfg['split']}` ({cfg['split_dates']}), seed {cfg['seed']}, finenvs {cfg['finenvs_version']}, "
        f"data manifest `{cfg['data_manifest'][:16]}`, {card.seconds:.1f} s on {cfg['machine']}.",
        "",
        "Standard columns: wealth path from 1.0 before the first trade, every close after it "
        f"({SR_STD}: Sharpe of every day's return, ddof=1, sqrt(252), rf=0; MDD of that path). (H) columns: "
        f"the HERCULEAN paper's convention (entry fee in the first value, exit fee in the last; {SR_H}: Sharpe "
        "over the days whose return is not zero, which scales a rarely-invested strategy's Sharpe by about "
        "1 / sqrt(time in market)).",
        "",
    ]
    if cfg.get("split_skipped"):
        lines += [f"Split part: {md_text(line, 2_000)}." for line in cfg["split_skipped"]] + [""]
    return lines


def _sections(card: Scorecard, charts: Charts) -> list[str]:
    """Every family's section in the scorecard's order; the reproduction check follows the last section it checks."""
    specs = card.tasks()
    checked = [t.env_id for t in specs if any(c["env"] == t.env_id for c in card.reproduction)]
    lines: list[str] = []
    for task in specs:
        view = card.view(task, charts)
        lines += task.bench.section.markdown(view) if view.has_content else missing_section_markdown(view)
        if checked and task.env_id == checked[-1]:
            lines += reproduction_markdown(card.reproduction, card.config.get("split", "eval"))
    return lines


def _eval_config(card: Scorecard) -> list[str]:
    rec = card.config.get("eval_config_record")
    if not rec:
        return []
    return [f"Evaluation config {md_text(rec['name'])} ({md_text(rec['source'])}, digest `{rec['digest'][:16]}`): "
            f"{rec['tasks']} FAB++ tasks, played by the agents and counted in the aggregate; the family tables "
            "above show every baseline over the family's whole plan. The selected tasks: `eval_config.json`."
            + "".join(f" Skipped {md_text(s['type'])}: {md_text(s['reason'], 1_000)}." for s in rec["skipped"])
            + "".join(f" {md_text(n, 1_000)}." for n in rec.get("notes", [])), ""]


def tokens_markdown(card: Scorecard) -> list[str]:
    """The tokens per decision of each family's agent runs (one row per env, agent and split)."""
    from finenvs.evaluation.score import tokens_cell

    rows = [[md_text(t["env"]), md_text(t["agent"]), md_text(t["split"]), tokens_cell(t),
             "n/a" if t.get("cached_share") is None else f"{t['cached_share']:.0%}", t["counted"]]
            for t in card.tokens()]
    if not rows:
        return []
    return ["## Tokens per decision", "",
            "Prompt / completion / cached-prefix tokens per decision of each agent run (`~`: counted with "
            "tiktoken's o200k_base where the agent reports none, as the offline scripted agents; n/a: unknown). "
            "The cached prefix repeats the previous request byte for byte, what a provider's prompt cache reuses.",
            "", md_table(["env", "agent", "split", "prompt / completion / cached", "cached share", "counted"], rows),
            ""]


def render_markdown(card: Scorecard) -> str:
    """The scorecard as Markdown: each family's section (its tables, its agents beside its baselines, then its
    charts), HERCULEAN's tables, FAB++'s aggregate, the windows part and the errors."""
    charts = Charts(card.files)
    lines = [*_header(card), *_sections(card, charts)]
    if card.herculean:
        lines += herculean_markdown(card.herculean, tuple(card.herculean))
    if card.aggregate:
        lines += aggregate_markdown(card.aggregate)
        lines += charts.take(prefix="section_aggregate")
        if card.aggregate.get("debate"):
            from finenvs.evaluation.debate_runs import debate_markdown

            lines += debate_markdown(card.aggregate["debate"])
            lines += debate_overall_markdown(card.aggregate)
    lines += _eval_config(card)
    lines += tokens_markdown(card)
    if card.windows:
        from finenvs.evaluation.windows import suite_markdown

        lines += suite_markdown(card.windows)
        lines += charts.take(prefix="windows_")
    if card.errors:
        lines += ["## Errors", ""] + [f"- {md_text(e['env'])} {md_text(e['symbol'])} {md_text(e['policy'])}: "
                                      f"{md_text(e['error'], 1_000)}" for e in card.errors]
        lines.append("")
    lines += charts.rest()
    return "\n".join(lines)


def write_scorecard(card: Scorecard, *, html: bool = True) -> None:
    """Write ``scorecard.json``, ``scorecard.md`` and (``html``) ``scorecard.html`` into the card's run folder; they
    go first in ``card.files``. The page embeds only the PNG charts ``card.files`` lists (the bench's own); every
    name from outside is Markdown text (:func:`~finenvs.text.markdown.md_text`)."""
    run_dir = card.run_dir
    json_path = run_dir / "scorecard.json"
    md_path = run_dir / "scorecard.md"
    # unknown and undefined numbers (NaN, infinity) are JSON null, as n/a in the Markdown and the page
    record = jsonable(json.loads(json.dumps(card.to_json(), default=json_default)))
    json_path.write_text(json.dumps(record, indent=2, allow_nan=False) + "\n")
    charts = [f for f in card.files if f.endswith(".png")]
    card.files = [str(json_path), str(md_path), *card.files]
    markdown = render_markdown(card)
    md_path.write_text(markdown)
    if html and importlib.util.find_spec("markdown_it") is not None:  # the page needs finenvs[plot]'s markdown-it-py
        from finenvs.evaluation.scorecard_html import write_html

        html_path = run_dir / "scorecard.html"
        write_html(markdown, html_path, title=f"finenvs scorecard — {run_dir.name}", images=charts)
        card.files.insert(2, str(html_path))


__all__ = ["render_markdown", "write_scorecard"]
