"""The task spec of FinQA-v0."""

from __future__ import annotations

from typing import Any

from finenvs.tasks.common import indexed_plan, mean
from finenvs.tasks.qa.baselines import QA_POLICIES, ScriptedQAChatAgent, qa_markdown, run_output, run_qa_bench
from finenvs.tasks.qa.bench import qa_plot
from finenvs.tasks.qa.debate import debate_round
from finenvs.tasks.qa.env import ANALYSIS_SCORES, DEFAULT_ANALYSIS_SCORE, EVAL_KNOWLEDGE_SEEDS, FinQAEnv
from finenvs.tasks.qa.judge import checklist
from finenvs.tasks.qa.tools import QA_TOOLS
from finenvs.tasks.section import RecordSection
from finenvs.tasks.spec import BenchSection, Column, EpisodeSpec, RunFlag, Selection, TaskSpec

ENV_ID = "FinQA-v0"
#: Questions of each split: 150 eval (knowledge and analysis), the published FAB++ questions, and the Finance
#: Agent Benchmark's public questions (closed-book, rubric-scored; ``tests/test_fab_public.py`` checks the count
#: against the data file).
SPLIT_SIZES = {"eval": 150, "train": 150, "published": 18, "fab_public": 50}
#: Questions of each split in one section (the ``section`` env argument): the eval split asks its knowledge
#: questions first, then its analytical ones; ``published`` holds analytical questions only, ``fab_public``
#: knowledge questions only (the env refuses the other section there).
SECTION_SIZES = {
    "knowledge": {"eval": len(EVAL_KNOWLEDGE_SEEDS), "train": SPLIT_SIZES["train"],
                  "fab_public": SPLIT_SIZES["fab_public"]},
    "analysis": {"eval": SPLIT_SIZES["eval"] - len(EVAL_KNOWLEDGE_SEEDS), "train": SPLIT_SIZES["train"],
                 "published": SPLIT_SIZES["published"]},
}
_RECORDED = {"analysis_score": DEFAULT_ANALYSIS_SCORE}
#: The train split has no fixed list: its question i is the env's own draw (section, topic, generation seed) at reset
#: seed ``seed + i``.
_TRAIN_DRAWS = {"train": None}
_PLANS = {"all": indexed_plan(ENV_ID, SPLIT_SIZES, "questions", recorded=_RECORDED, option=_TRAIN_DRAWS),
          **{section: indexed_plan(ENV_ID, sizes, f"{section} questions", recorded=_RECORDED, option=_TRAIN_DRAWS)
             for section, sizes in SECTION_SIZES.items()}}


def plan(selection: Selection) -> list[EpisodeSpec]:
    """Every question of the split by index; with a ``section`` env argument, the questions of that section (the
    env asks only those, so the indices count them alone)."""
    section = selection.env_kwargs.get("section", "all")
    return _PLANS.get(section if isinstance(section, str) else "", _PLANS["all"])(selection)


def episode_metrics(env: Any, reset_info: dict[str, Any], infos: list[dict[str, Any]]) -> dict[str, Any]:
    """The answer's score in [0, 1], its section (knowledge or analysis), topic and reason."""
    qa = infos[-1]["qa"]
    score = float(qa["score"])
    return {"label": reset_info["task_id"], "section": reset_info["section"], "topic": reset_info["topic"],
            "score": score, "task_score": 100.0 * score, "reason": qa.get("reason"),
            "look_ahead_attempts": int(infos[-1].get("look_ahead_attempts", 0))}


def run_metrics(episodes: list[dict[str, Any]]) -> dict[str, Any]:
    """Mean score (0-100) per section and overall."""
    out: dict[str, Any] = {"episodes": len(episodes), "score": mean([e["task_score"] for e in episodes])}
    for section in ("knowledge", "analysis"):
        out[section] = mean([e["task_score"] for e in episodes if e["section"] == section])
    return out


def topic_options(options: dict[str, Any] | None, topic: str, seed: int) -> dict[str, Any]:
    """``finenvs run --topic T``: the episode asks topic ``T`` generated with the run's seed (0: published)."""
    return {"topic": topic, "seed": seed}


SPEC = TaskSpec(
    family="qa",
    env_id=ENV_ID,
    text_env_id="FinQA-text-v0",
    description="One finance question (knowledge at a date, or analytical reasoning); text answer scored per "
    "part by code.",
    env=FinQAEnv,
    kwargs={"section": "all", "split": "eval", "as_of": "2026-03-31"},
    plan=plan,
    episode_metrics=episode_metrics,
    run_metrics=run_metrics,
    columns=(Column("knowledge", "Knowledge"), Column("analysis", "Analysis"), Column("score", "Score")),
    scripted_agent=ScriptedQAChatAgent,
    baselines=QA_POLICIES,
    tools=QA_TOOLS,
    run_options=("instance",),
    run_flags=(RunFlag("topic", "ask this topic (with --seed as its generation seed; 0 = published)",
                       excludes=("instance",), options=topic_options),),
    run_printer=run_output,
    debate=debate_round,
    judge=checklist,
    bench=BenchSection(title="Knowledge and Analysis", suites=("fabpp",), fabpp_sections=("knowledge", "analysis"),
                       live=False, extra_splits=("fab_public",),
                       profiles={"reference": "scripted_agent", "naive": "first_number", "random": "random"},
                       gradings={grading: {"analysis_score": grading} for grading in ANALYSIS_SCORES},
                       fabpp_env_kwargs={section: {"section": section} for section in ("knowledge", "analysis")},
                       section=RecordSection(baselines=run_qa_bench, tables=qa_markdown, draw=qa_plot)),
)
