"""The task spec of FinAudit-v0."""

from __future__ import annotations

from typing import Any

from finenvs.scoring.audit import check_grading
from finenvs.tasks.audit.baselines import (
    AUDIT_POLICIES,
    ScriptedAuditAgent,
    audit_markdown,
    run_audit_bench,
    run_output,
)
from finenvs.tasks.audit.bench import audit_plot
from finenvs.tasks.audit.env import FinAuditEnv, file_kwargs, file_tasks
from finenvs.tasks.common import indexed_plan
from finenvs.tasks.section import RecordSection
from finenvs.tasks.spec import BenchSection, Column, EpisodeSpec, Selection, TaskSpec, finish_plan, one_seed
from finenvs.tools.xbrl import AUDIT_TOOLS

ENV_ID = "FinAudit-v0"
#: Instances of each split (FinAudit-v0 generates 20 per error kind from the shipped filings; the train split
#: generates each from its seed, 0..99).
SPLIT_SIZES = {"eval": 100, "train": 100}
#: The grading every planned episode records (a run folder keeps the grading it was scored under).
RECORDED = {"grading": "finenvs"}
_generated_plan = indexed_plan(ENV_ID, SPLIT_SIZES, "instances", recorded=RECORDED, option={"train": "seed"})


def plan(selection: Selection) -> list[EpisodeSpec]:
    """The eval or train instances by index, or (``--split file`` or a ``tasks_file`` env argument) the answerable
    tasks of a HERCULEAN-format task file by index (:func:`~finenvs.tasks.audit.env.file_kwargs`)."""
    check_grading(selection.env_kwargs.get("grading", "finenvs"))  # a bad grading fails before any work
    kwargs = file_kwargs(selection.split, selection.env_kwargs)
    if kwargs is None:
        return _generated_plan(selection)
    if selection.symbols:
        raise ValueError(f"{ENV_ID} episodes are chosen by --instances, not --symbols")
    count = len(file_tasks(kwargs["tasks_file"], kwargs.get("corpus"))[0])
    seed = one_seed(ENV_ID, selection)
    return finish_plan([(ENV_ID, {**RECORDED, **kwargs}, seed, {"index": i}) for i in range(count)], selection)


def episode_metrics(env: Any, reset_info: dict[str, Any], infos: list[dict[str, Any]]) -> dict[str, Any]:
    """The answer's class (pass, structural, extraction, calculation) and the injected error kind."""
    final = infos[-1]
    audit = final["audit"]
    return {"label": reset_info["task_id"], "verdict": audit["label"], "reason": audit["reason"],
            "kind": final.get("kind"), "look_ahead_attempts": int(final.get("look_ahead_attempts", 0))}


def run_metrics(episodes: list[dict[str, Any]]) -> dict[str, Any]:
    """ACC, SER, EER and CER (fractions summing to 1)."""
    from finenvs.scoring.audit import audit_rates

    rates = audit_rates([e["verdict"] for e in episodes], [e.get("kind") or "-" for e in episodes])
    return {"episodes": len(episodes), **{k: rates[k] for k in ("ACC", "SER", "EER", "CER")}}


SPEC = TaskSpec(
    family="audit",
    env_id=ENV_ID,
    text_env_id="FinAudit-text-v0",
    description="One XBRL audit instance of a real SEC filing; JSON {reported_value, calculated_value}; "
    "ACC/SER/EER/CER.",
    env=FinAuditEnv,
    kwargs={"split": "eval", "corpus": None, "tasks_file": None, "grading": "finenvs"},
    plan=plan,
    episode_metrics=episode_metrics,
    run_metrics=run_metrics,
    columns=(Column("ACC", "ACC %", 100.0, 1), Column("SER", "SER %", 100.0, 1), Column("EER", "EER %", 100.0, 1),
             Column("CER", "CER %", 100.0, 1)),
    scripted_agent=ScriptedAuditAgent,
    baselines=AUDIT_POLICIES,
    tools=AUDIT_TOOLS,
    run_options=("instance",),
    # a concept's reported fact, its children's facts and, when a child has none, its own children: up to 18
    # calls on the eval instances when read one call each (21 on train); the scripted agent reads a role's children
    # in one get_facts call (concepts): 3 calls
    max_tool_calls=24,
    run_printer=run_output,
    bench=BenchSection(title="Auditing", suites=("herculean",), herculean="Auditing", live=False,
                       herculean_per_label=False, published_block="auditing",
                       herculean_env_kwargs={"grading": "herculean"},
                       section=RecordSection(baselines=run_audit_bench, tables=audit_markdown, draw=audit_plot)),
)
