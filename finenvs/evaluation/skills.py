"""Skills: each family's workflow as a ``SKILL.md`` an agent CLI loads, as HERCULEAN grounds its agents.

``finenvs skills export DIR`` writes ``DIR/finenvs-<family>/SKILL.md`` per task
family: YAML front matter (``name``, ``description``), then the protocol — what
one decision is, the answer format and the documented default, the tools with
their arguments, the date rules, how to run it (``finenvs mcp`` for a client that
connects by itself, ``finenvs harness`` for one invocation per decision) — and
an example prompt of the family's first default episode. Everything is read from
the task spec and the family's text env, so a skill cannot drift from the env.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from finenvs.tasks import Selection, TaskSpec, tasks

#: Characters of the example prompt a skill shows.
EXAMPLE_CHARS = 4_000

DATE_RULES = (
    "- Every tool reads as of the current decision time: prices by trading date, news by publication time, "
    "filings by the time they became public (never by period end), option chains by snapshot date.\n"
    "- Asking for later data returns only what was visible and is counted as a look-ahead attempt in the results.\n"
    "- The clock advances only when a decision is committed with `commit_action`; other tools may be called as "
    "often as the tool budget allows.\n"
    "- An empty answer (no news, no filing) is valid: it means nothing is visible as of that time, not that nothing "
    "happened.")


def _schema_line(parameters: dict[str, Any]) -> str:
    props = parameters.get("properties") or {}
    required = set(parameters.get("required") or [])
    parts = []
    for name, spec in props.items():
        kind = spec.get("type", "any") if isinstance(spec, dict) else "any"
        parts.append(f"`{name}`{'' if name in required else '?'}: {kind}")
    return ", ".join(parts) or "no arguments"


def skill_text(task: TaskSpec) -> str:
    """The ``SKILL.md`` of one family."""
    from finenvs.evaluation.envpool import make_text_env

    episode = task.plan(Selection(split="eval", limit=1))[0]
    env = make_text_env(episode)
    try:
        prompt, _ = env.reset(seed=episode.seed, options=episode.options)
        protocol = env.protocol
        tools = env.tool_specs()
    finally:
        env.close()
    name = f"finenvs-{task.family}"
    description = (f"{task.description} Run a finenvs {task.env_id} episode through its MCP server: read date-locked "
                   "data with its tools and commit one decision per step with commit_action.")
    lines = ["---", f"name: {name}", f"description: {json.dumps(description)}", "---", "",
             f"# {task.env_id}: one decision at a time", "", task.description, "", "## The task", "",
             protocol.instructions.strip(), "", "## Committing a decision", "",
             f"Call `commit_action` once per decision. Answer format: {protocol.answer_format}.",
             f"An unreadable or missing decision takes the default `{protocol.default}`: {protocol.default_reason}.",
             f"Tool calls per decision: at most {task.max_tool_calls} (commit not counted).", "",
             "## Tools", ""]
    for spec in tools:
        fn = spec["function"]
        lines.append(f"- `{fn['name']}` ({_schema_line(fn.get('parameters') or {})}): {fn['description']}")
    lines += ["", "## Date rules", "", DATE_RULES, "", "## Running it", "",
              "- One episode served to a client that connects by itself:",
              f"  `finenvs mcp --env {task.env_id} --print-config` prints the `.mcp.json` entry.",
              "- One invocation of an agent program per decision (HERCULEAN's harness):",
              f"  `finenvs harness --env {task.env_id} --agent-cmd 'AGENT ... {{prompt_file}} ... {{mcp_config}}'`.",
              "- Results are a finenvs run folder: `finenvs score RUN_DIR` re-scores it offline.", "",
              f"## Example prompt ({episode.label()})", "", "```text"]
    example = prompt if len(prompt) <= EXAMPLE_CHARS else prompt[:EXAMPLE_CHARS] + "\n... (cut)"
    lines += [example.replace("```", "'''"), "```", ""]
    return "\n".join(lines)


def export_skills(out: Path | str, families: list[str] | None = None) -> list[Path]:
    """Write one ``SKILL.md`` per family (all registered, or ``families``) under ``out``; their paths.

    Raises:
        KeyError: An unknown family name (names the registered ones).
    """
    specs = tasks()
    if families:
        known = {t.family: t for t in specs}
        missing = [f for f in families if f not in known]
        if missing:
            raise KeyError(f"unknown families {missing}; registered: {sorted(known)}")
        specs = [known[f] for f in families]
    paths = []
    for task in specs:
        folder = Path(out) / f"finenvs-{task.family}"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / "SKILL.md"
        path.write_text(skill_text(task), encoding="utf-8")
        paths.append(path)
    return paths


__all__ = ["DATE_RULES", "export_skills", "skill_text"]
