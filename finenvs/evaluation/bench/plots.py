"""The charts of a bench run: the windows part's, each family section's and the section aggregate's (PNG)."""

from __future__ import annotations

from finenvs.evaluation.bench.scorecard import Scorecard


def write_plots(card: Scorecard) -> list[str]:
    """Write every chart of the scorecard into its run folder; their paths, in the order they were drawn. Without
    matplotlib (the ``plot`` extra) no chart is drawn."""
    from finenvs.evaluation.scorecard_html import aggregate_plot
    from finenvs.evaluation.windows import suite_plots

    files = [str(p) for p in suite_plots(card.windows, card.run_dir)]
    for task in card.tasks():
        view = card.view(task)
        if view.has_content:
            files += [str(p) for p in task.bench.section.plots(view)]
    return files + [str(p) for p in aggregate_plot(card)]


__all__ = ["write_plots"]
