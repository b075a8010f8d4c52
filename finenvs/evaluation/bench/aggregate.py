"""FAB++'s section aggregate in ``finenvs bench``: each baseline profile and each agent, with the Alpha score and,
with ``--debate``, the adversarial debate's multipliers."""

from __future__ import annotations

from typing import Any

from finenvs.evaluation.agent_runs import ENDPOINT_FAILED_TASK, FAILED_CELL, debate_record, fabpp_tasks
from finenvs.evaluation.bench.config import BenchConfig, family_env_kwargs
from finenvs.scoring.aggregate import SECTION_NAMES, TaskScore, aggregate, resolve_weights
from finenvs.scoring.alpha import alpha_score
from finenvs.tasks import TaskSpec
from finenvs.text.markdown import NA, fmt_number, md_table, md_text
from finenvs.text.plural import counted


def run_debates(fabpp: list[TaskSpec], agent_runs: list[dict[str, Any]], config: BenchConfig,
                errors: list[dict[str, str]]) -> dict[str, Any]:
    """With ``config.debate``: every baseline of each family with a debate round under FAB++'s adversarial debate
    (:func:`~finenvs.evaluation.debate_runs.run_debate`), and the agents' debated runs beside them; env id ->
    record. Without it: nothing."""
    debates: dict[str, Any] = {}
    if not config.debate:
        return debates
    from finenvs.evaluation.debate_runs import run_debate

    for task in fabpp:
        if task.debate is None or (config.instances or {}).get(task.family) == ():  # none of its split selected
            continue
        try:
            debates[task.env_id] = run_debate(task, config.split, config.seed,
                                              (config.instances or {}).get(task.family),
                                              family_env_kwargs(config, task))
        except Exception as exc:  # reported, never dropped
            errors.append({"env": task.env_id, "symbol": "-", "policy": "debate",
                           "error": f"{type(exc).__name__}: {exc}"})
    for run in agent_runs:  # the agents' debated runs, beside the baselines'
        if run.get("debate_of") is not None and run["env"] in debates:
            debates[run["env"]].setdefault("agents", {})[run["debate_of"]] = debate_record(run)
    return debates


def section_aggregate(fabpp: list[TaskSpec], sections: dict[str, Any], agent_runs: list[dict[str, Any]],
                      weights: str | dict[str, float], errors: list[dict[str, str]], *,
                      cost_floor: float | None = None, task_ids: dict[str, set[str]] | None = None,
                      debates: dict[str, Any] | None = None) -> dict[str, Any]:
    """The FAB++ section aggregate of each baseline profile (the families' ``profiles``) and of each agent, each
    with FAB++'s Alpha score (``record["alpha"]``, :func:`finenvs.scoring.alpha.alpha_score`: R the overall, D 1.0
    without a debate round, the agent's dollar cost and look-ahead attempts per decision; a baseline costs 0).

    A family's section lists its tasks per policy (``section["tasks"][policy]``, each with its FAB++ section
    and 0-100 score); an agent's tasks are its runs' episodes. A task whose policy raised scores 0; a section that
    failed as a whole counts as one errored task (0), so it is never silently dropped. With ``task_ids`` (family ->
    the task ids an evaluation config selected) a profile counts only those tasks of the families named. With
    ``debates`` (env id -> :func:`~finenvs.evaluation.debate_runs.run_debate`'s record) a profile also gets
    ``overall_debate``: the aggregate with each debated task's debated score (the one rule,
    :func:`finenvs.text.debate.debate_verdict`) in place of its plain score, and its mean multipliers.
    """
    out: dict[str, Any] = {"weights": resolve_weights(weights), "profiles": {}}
    failed = {e["env"] for e in errors}
    for profile in dict.fromkeys(p for t in fabpp for p in t.bench.profiles):
        out["profiles"][profile] = _profile_record(profile, fabpp, sections, out["weights"], failed,
                                                   cost_floor=cost_floor, task_ids=task_ids, debates=debates or {})
    if debates:
        out["debate"] = debates
    fab_runs = [r for r in agent_runs if r["family"] in {t.family for t in fabpp} and r.get("debate_of") is None]
    for agent, items in fabpp_tasks(fab_runs).items():
        out["profiles"][agent] = _agent_record(agent, [TaskScore(*item) for item in items], fab_runs, out["weights"],
                                               cost_floor=cost_floor, debates=debates or {})
    return out


def _with_debate(record: dict[str, Any], scores: list[TaskScore], weights: dict[str, float],
                 multipliers: dict[str, float], debated: dict[tuple[str, str], float]) -> dict[str, Any]:
    """``record`` with the overall of the tasks' debated scores (0-100, by (section, task id)) beside the plain
    one, and the sections' mean multipliers (when debated)."""
    if multipliers:
        with_debate = [TaskScore(t.section, t.task_id, debated[(t.section, t.task_id)])
                       if (t.section, t.task_id) in debated else t for t in scores]
        record["overall_debate"] = aggregate(with_debate, weights).overall
        record["debate_multipliers"] = multipliers
    return record


def _debated_scores(rows: list[dict[str, Any]]) -> dict[tuple[str, str], float]:
    return {(str(r["section"]), str(r["task_id"])): float(r["task_score"]) for r in rows}


def _profile_record(profile: str, fabpp: list[TaskSpec], sections: dict[str, Any], weights: dict[str, float],
                    failed: set[str], *, cost_floor: float | None, task_ids: dict[str, set[str]] | None,
                    debates: dict[str, Any]) -> dict[str, Any]:
    """One baseline profile: the tasks of the policy that answers each family's sections (a baseline costs 0)."""
    scores: list[TaskScore] = []
    answered: dict[str, str] = {}
    multipliers: dict[str, float] = {}
    debated_rows: list[float] = []
    debated_scores: dict[tuple[str, str], float] = {}
    for task in fabpp:
        policy = task.bench.profiles.get(profile)
        if policy is None:
            continue
        for name in task.bench.fabpp_sections:
            answered[name] = policy
        section = sections.get(task.family)
        if section is None:
            if task.env_id in failed:
                scores += [TaskScore(name, task.env_id, None, f"the {task.env_id} section failed")
                           for name in task.bench.fabpp_sections[:1]]
            continue
        debated = debates.get(task.env_id, {}).get("policies", {}).get(policy)
        if debated:
            multipliers.update({k: v for k, v in debated["section_multipliers"].items()
                                if k in task.bench.fabpp_sections})
            debated_rows += [float(row["multiplier"]) for row in debated["rows"]]
            debated_scores.update(_debated_scores(debated["rows"]))
        keep = None if task_ids is None else task_ids.get(task.family)
        scores += [TaskScore(t["section"], t["task_id"], t["score"], t.get("error"))
                   for t in section["tasks"][policy] if keep is None or t["task_id"] in keep]
    record = _with_debate(aggregate(scores, weights).record(), scores, weights, multipliers, debated_scores)
    alpha = alpha_score(record["overall"], cost_usd=0.0, decisions=len(scores), cost_floor=cost_floor,
                        debate_multiplier=sum(debated_rows) / len(debated_rows) if debated_rows else 1.0)
    return {**record, "policies": answered, "alpha": alpha.record()}


def _agent_record(agent: str, scores: list[TaskScore], fab_runs: list[dict[str, Any]], weights: dict[str, float], *,
                  cost_floor: float | None, debates: dict[str, Any]) -> dict[str, Any]:
    """One agent: its runs' tasks, its dollar cost and look-ahead attempts, its debated runs' multipliers. An agent
    none of whose tasks finished (an endpoint that never answered) has no score: n/a with the cause, never 0."""
    if scores and all(t.error is not None for t in scores):
        return {**aggregate([], weights).record(), "policies": {}, "alpha": None,
                "note": f"no task finished: {scores[0].error}",
                **({"failed": True} if any(_no_reply(t) for t in scores) else {})}
    no_reply = [t for t in scores if _no_reply(t)]
    if no_reply:  # a failed evaluation is never a score: no overall, "failed" in the tables
        return {**aggregate([], weights).record(), "policies": {}, "alpha": None, "failed": True,
                "note": f"failed: {len(no_reply)} of {len(scores)} task(s) got no reply from the endpoint "
                        f"(first: {no_reply[0].task_id}: {str(no_reply[0].error)[len(ENDPOINT_FAILED_TASK):]})"}
    multipliers: dict[str, float] = {}
    debated_tasks: list[float] = []
    debated_scores: dict[tuple[str, str], float] = {}
    for debate in debates.values():
        mine = debate.get("agents", {}).get(agent)
        if mine:
            multipliers.update(mine["section_multipliers"])
            debated_tasks += [row["multiplier"] for row in mine["rows"]]
            debated_scores.update(_debated_scores(mine["rows"]))
    record = _with_debate(aggregate(scores, weights).record(), scores, weights, multipliers, debated_scores)
    mine_runs = [r for r in fab_runs if r["agent"] == agent]
    effs = [r["efficiency"] for r in mine_runs]
    costs = [e.get("cost_usd") for e in effs]  # None: unknown (no prices, or no token counts), never taken as 0
    prices = next((r["prices"] for r in mine_runs if r.get("prices")), None)
    if prices is not None:
        record["cost"] = {"cost_usd": None if None in costs else float(sum(costs)), **prices,
                          "prompt_tokens": _total(e.get("prompt_tokens") for e in effs),
                          "completion_tokens": _total(e.get("completion_tokens") for e in effs)}
    alpha = alpha_score(record["overall"], cost_usd=None if None in costs else float(sum(costs)),
                        lookahead_attempts=sum(int(e.get("look_ahead_attempts") or 0) for e in effs),
                        decisions=sum(int(e.get("decisions") or 0) for e in effs), cost_floor=cost_floor,
                        debate_multiplier=sum(debated_tasks) / len(debated_tasks) if debated_tasks else 1.0)
    return {**record, "policies": {name: agent for name in record["sections"]}, "alpha": alpha.record()}


def _no_reply(task: TaskScore) -> bool:
    return str(task.error or "").startswith(ENDPOINT_FAILED_TASK)


def _overall_cell(rec: dict[str, Any], unknown: str) -> str:
    """The overall of a profile's row: ``failed`` when the endpoint never answered one of its tasks, ``unknown``
    when there is none, else the score."""
    if rec.get("failed"):
        return FAILED_CELL
    return unknown if rec["overall"] is None else fmt_number(rec["overall"])


def _total(values: Any) -> int | None:
    """The sum of token counts, None when any is unknown."""
    out = 0
    for v in values:
        if v is None:
            return None
        out += int(v)
    return out


#: The scorecard's statement of the cost behind FAB++'s Alpha score and its zero-cost rule.
COST_RULE = ("Cost (C): a baseline profile and an offline scripted agent spend no tokens and cost $0, so "
             "C = ln(1 + 0) = 0 and their alpha is n/a — the zero-cost rule: undefined, never infinite "
             "(`--alpha-cost-floor DOLLARS` sets a floor). A model's cost is its FAB++ runs' prompt tokens x "
             "`--price-in` + completion tokens x `--price-out` (dollars per million tokens, or its entry of "
             "`--prices FILE`); without prices, or when its endpoint reported no token counts, the cost is unknown "
             "and its alpha n/a, never 0.")


def cost_lines(agg: dict[str, Any]) -> list[str]:
    """The cost rule and each priced agent's cost: tokens, prices, dollars."""
    lines = [COST_RULE]
    for name, rec in agg["profiles"].items():
        cost = rec.get("cost")
        if cost:
            tokens = ("tokens unknown" if cost["prompt_tokens"] is None or cost["completion_tokens"] is None else
                      f"{cost['prompt_tokens']:,} prompt and {cost['completion_tokens']:,} completion tokens")
            lines.append(f"{md_text(name)}: {tokens} at ${cost['input_per_million']:g} / "
                         f"${cost['output_per_million']:g} per million = "
                         + ("cost unknown" if cost["cost_usd"] is None else f"${fmt_number(cost['cost_usd'], digits=4)}") + ".")
    return lines


def aggregate_markdown(agg: dict[str, Any]) -> list[str]:
    """The scorecard's section-aggregate block."""
    w = agg["weights"]
    names = list(w)
    lines = ["## Section aggregate (FAB++)", "",
             "Every task normalised to 0-100; section score = mean of its tasks (an errored task counts 0); "
             "weights " + ", ".join(f"{SECTION_NAMES.get(k, k)} {100 * v:.0f}%" for k, v in w.items())
             + ", redistributed over the sections that ran. Each profile names the baseline that answers each "
             "section, with the tasks its score is the mean of. Alpha is FAB++'s R·D / (C·P): R the overall, D the "
             "debate multiplier (1.0: no debate round), C = ln(1 + cost in $), P = 1 + look-ahead attempts per "
             "decision (the cost and the zero-cost rule below the table); n/a: no score (no task of it finished).", ""]
    rows = []
    for profile, rec in agg["profiles"].items():
        cells = []
        for k in names:
            sec = rec["sections"][k]
            cells.append(fmt_number(sec["score"]) if sec["score"] is None else
                         f"{fmt_number(sec['score'])} ({md_text(rec['policies'][k])}, {counted(sec['tasks'], 'task')})")
        overall = _overall_cell(rec, NA)
        overall = overall if rec["overall"] is None else f"**{overall}**"
        rows.append([md_text(profile), *cells, overall, alpha_cell(rec.get("alpha"))])
    lines.append(md_table(["profile", *(SECTION_NAMES.get(k, k) for k in names), "overall", "alpha (R, C, P)"], rows))
    lines += ["", " ".join(cost_lines(agg)), ""]
    return lines


def alpha_cell(alpha: dict[str, Any] | None) -> str:
    """``alpha (R, C, P)`` for a table: n/a with its reason when undefined."""
    if not alpha:
        return "—"
    parts = f"R {fmt_number(alpha['R'])}, C {fmt_number(alpha['C'], digits=4)}, P {fmt_number(alpha['P'])}"
    if alpha["alpha"] is None:
        note = alpha["note"]
        reason = "zero cost" if "zero cost" in note else "cost unknown" if "unknown" in note else "no score"
        return f"n/a: {reason} ({parts})"
    return f"{fmt_number(alpha['alpha'])} ({parts})"


def aggregate_terminal(agg: dict[str, Any]) -> list[str]:
    """The section aggregate as the terminal shows it: one row per profile."""
    weights = agg["weights"]
    return ["Section aggregate (" + ", ".join(f"{k} {100 * v:.0f}%" for k, v in weights.items()) + "):",
            md_table(["profile", *weights, "overall", "alpha (R, C, P)"], [
                [name, *(fmt_number(rec["sections"][k]["score"]) for k in weights), _overall_cell(rec, NA),
                 alpha_cell(rec.get("alpha"))]
                for name, rec in agg["profiles"].items()]),
            *cost_lines(agg)[1:]]


def debate_overall_markdown(agg: dict[str, Any]) -> list[str]:
    """Each debated profile's overall beside its plain one, with the section multipliers."""
    return [md_table(["profile", "overall", "with debate", "multipliers"], [
        [md_text(name), fmt_number(rec["overall"]), fmt_number(rec["overall_debate"]),
         ", ".join(f"{k} {fmt_number(v, digits=3)}" for k, v in rec["debate_multipliers"].items())]
        for name, rec in agg["profiles"].items() if "overall_debate" in rec]), ""]


__all__ = ["COST_RULE", "aggregate_markdown", "cost_lines", "aggregate_terminal", "alpha_cell", "debate_overall_markdown", "run_debates",
           "section_aggregate"]
