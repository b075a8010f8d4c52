"""``finenvs score RUN_DIR``: re-score an agent run offline from its trajectories, for any task family.

For every episode of the run the recorded env actions are replayed into a fresh
env (no agent, no tools, no endpoint); the replayed rewards and the family's
episode metrics (its task spec's ``episode_metrics``) must equal what the run
recorded live, exactly. Each reply is also parsed again with the env's current
text protocol, to catch a parser that changed since the run. Beside the task
score the report gives the run's efficiency, each as its own number (never
folded into one ratio): tokens, dollar cost, tool calls per decision,
look-ahead attempts, format errors (invalid actions), endpoint errors and
retries, and time per decision. Token counts and costs that are unknown (an
MCP client, an endpoint that reports no usage) are n/a, never 0.

Before replaying, the run folder's integrity is checked
(:func:`~finenvs.evaluation.integrity.verify_chain`): run.json's seal and identity
digests and plan, the trajectory chain and each line's MAC line by line, the
line count and final digest run.json recorded, each record's place (episode in
the plan, steps in order, one episode record after its steps, counts and totals
that match its steps), and the chain digest of an earlier ``score.json``. The
outcome (:attr:`RunScore.status`) is one of:

* ``reproduced`` — every planned episode finished and replays exactly (exit 0);
* ``incomplete`` — an interrupted run with an intact chain: episodes without
  their episode record (a run.json that says the run stopped early or is still
  running), at most a partial last line and lines after run.json's count while
  it says ``running`` (what a crash leaves); it says how to resume (exit 3);
* ``not reproduced`` — a finished episode replays differently (exit 1);
* ``tampered`` — the folder was changed after it was written (an edited
  integrity block, status or field of run.json, a line changed, removed or
  added, a MAC that does not verify); the problems name the first bad line
  (file, line number, what is wrong) (exit 1).

Beside it, :attr:`RunScore.signature` says what the keyed seals prove
(:mod:`finenvs.evaluation.seal`): ``signed`` (every MAC verifies under this
machine's run key), ``unsigned here`` (sealed with another machine's key: the
content was checked by the unkeyed chain only; not a failure), ``unsigned`` (a
run of format 3 or older, recorded before the seals) or ``invalid`` (a MAC
that does not verify; the run is tampered).

Writes ``score.json`` (with the chain's line count, final digest and the
data manifest digest) and ``score.md`` into the run folder.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from finenvs.evaluation import seal as _seal
from finenvs.evaluation.envpool import EnvPool, make_base_env
from finenvs.evaluation.integrity import ChainCheck, IntegrityProblem, verify_chain
from finenvs.evaluation.replay import ReplayMismatch, replay_episode
from finenvs.evaluation.runlog import (
    RUN_FILE,
    SCORE_FILE,
    TRAJECTORY_FILE,
    RunFiles,
    differences,
    jsonable,
    run_format,
    same_number,
)
from finenvs.evaluation.session import EpisodeTotals, endpoint_failed_everywhere
from finenvs.tasks import EpisodeSpec, TaskSpec, task_of
from finenvs.text.markdown import NA, fmt_count, fmt_number, md_table
from finenvs.text.plural import counted

#: Invalid reasons of decisions that produced no reply to parse again.
_NO_REPLY = ("endpoint error", "decision timed out", "no decision")
#: ``finenvs score`` exit code of each outcome.
EXIT_CODES = {"reproduced": 0, "not reproduced": 1, "tampered": 1, "incomplete": 3}


@dataclass
class EpisodeScore:
    """One episode, re-scored."""

    index: int
    label: str
    status: str
    steps: int
    metrics: dict[str, Any] | None = None
    totals: EpisodeTotals = field(default_factory=EpisodeTotals)
    look_ahead_attempts: int = 0
    reproduced: bool | None = None
    mismatches: list[str] = field(default_factory=list)
    reparse_mismatches: int = 0
    reason: str | None = None
    #: failed because the endpoint failed on every decision (re-derived from the step lines): not scored
    endpoint_failed: bool = False


@dataclass
class RunScore:
    """A run, re-scored."""

    run_dir: Path
    meta: dict[str, Any]
    task: TaskSpec | None
    episodes: list[EpisodeScore]
    dropped_partial_line: bool = False
    #: what the integrity checks found, in file order (run.json, trajectories, score.json); empty when intact
    problems: list[IntegrityProblem] = field(default_factory=list)
    #: why the run is incomplete (episodes without their record, lines lost at the end); empty when whole
    missing: list[str] = field(default_factory=list)
    #: False: a run recorded before the chain (format 2), whose integrity cannot be checked
    chained: bool = True
    #: trajectory lines and the digest of the last one (the chain's head), as found
    lines: int = 0
    final_digest: str = ""
    notes: list[str] = field(default_factory=list)
    #: the signature verdict (module docstring) and the key id run.json's seal names
    signature: str = _seal.UNSIGNED
    key_id: str | None = None

    @property
    def reproduced(self) -> bool:
        """The folder is intact and every finished episode replays to exactly its recorded rewards and metrics."""
        done = [e for e in self.episodes if e.status in ("complete", "failed")]
        return not self.problems and bool(done) and all(e.reproduced for e in done)

    @property
    def status(self) -> str:
        """``reproduced``, ``incomplete``, ``not reproduced`` or ``tampered`` (see the module docstring)."""
        if self.problems:
            return "tampered"
        done = [e for e in self.episodes if e.status in ("complete", "failed")]
        if any(not e.reproduced for e in done):
            return "not reproduced"
        if self.missing:
            return "incomplete"
        return "reproduced" if done else "not reproduced"

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.status]

    def signature_line(self) -> str:
        """One line: what the run's keyed seals prove."""
        if self.signature == _seal.SIGNED:
            return f"signature: signed (every MAC verifies under this machine's run key, key id {self.key_id})"
        if self.signature == _seal.UNSIGNED_HERE:
            return (f"signature: unsigned here (sealed with run key {self.key_id}, not this machine's: a run from "
                    "another machine; its content was checked by the unkeyed chain only)")
        if self.signature == _seal.INVALID:
            return "signature: INVALID (a MAC does not verify under this machine's run key, or is missing)"
        fmt = self.meta.get("format")
        return (f"signature: unsigned (run format {str(fmt)[:10]}, recorded before run folders were keyed: "
                "its content was checked by the unkeyed chain only)" if self.chained else
                "signature: unsigned (run format 2: neither chained nor keyed)")

    def resume_hint(self) -> str:
        if self.signature != _seal.SIGNED:
            return f"it cannot be resumed here ({self.signature_line()[11:]})"
        if self.meta.get("kind") == "llm-runner":
            command = "harness" if (self.meta.get("agent") or {}).get("kind") == "harness" else "llm"
            return f"continue it with: finenvs {command} --resume {self.run_dir}"
        return "this kind of run cannot be resumed; run the episode again"

    def efficiency(self) -> dict[str, Any]:
        """Run totals and per-decision figures (tokens and cost None when any is unknown)."""
        totals = EpisodeTotals()
        for e in self.episodes:
            totals.merge(e.totals)
        n = totals.decisions

        def per(x: float | None) -> float | None:
            return None if x is None else (x / n if n else math.nan)

        return {
            **asdict(totals),
            # no decision recorded (an endpoint that never answered): tokens and cost unknown, never 0
            "prompt_tokens": totals.reported(totals.prompt_tokens),
            "completion_tokens": totals.reported(totals.completion_tokens),
            "cost_usd": totals.reported_cost_usd,
            "look_ahead_attempts": sum(e.look_ahead_attempts for e in self.episodes),
            "tokens": totals.tokens,
            "per_decision_tokens": per_decision_tokens(totals),
            "tool_calls_per_decision": per(totals.tool_calls),
            "tokens_per_decision": per(totals.tokens),
            "cost_usd_per_decision": per(totals.reported_cost_usd),
            "seconds_per_decision": per(totals.seconds),
            "format_error_rate": per(totals.format_errors),
        }

    def run_metrics(self) -> dict[str, Any] | None:
        """The family's run metrics over the complete episodes (None when none completed, or when the endpoint
        failed on every decision of an episode: a failed evaluation has no score)."""
        if any(e.endpoint_failed for e in self.episodes):
            return None
        return self.complete_metrics()

    def complete_metrics(self) -> dict[str, Any] | None:
        """The family's run metrics over the complete episodes (None when none completed)."""
        done = [e.metrics for e in self.episodes if e.status == "complete" and e.metrics is not None]
        if self.task is None or not done:
            return None
        return self.task.metrics_of_run(done)

    def to_json(self) -> dict[str, Any]:
        return jsonable({
            "run": str(self.run_dir),
            "env": self.task.env_id if self.task else None,
            "family": self.task.family if self.task else None,
            "agent": self.meta.get("agent"),
            "status": self.status,
            "reproduced": self.reproduced,
            "signature": self.signature,
            "integrity": {
                "verified": self.chained,
                "key_id": self.key_id,
                "lines": self.lines,
                "final": self.final_digest,
                "data_manifest": self.meta.get("data_manifest"),
                "problems": [str(p) for p in self.problems],
            },
            "planned_episodes": len(self.meta.get("episodes") or []),
            "missing": self.missing,
            "metrics": self.run_metrics(),
            "failed_episodes": sum(e.status == "failed" for e in self.episodes),
            "endpoint_failed_episodes": sum(e.endpoint_failed for e in self.episodes),
            "efficiency": self.efficiency(),
            "episodes": [
                {**{k: v for k, v in asdict(e).items() if k != "totals"}, "totals": asdict(e.totals)}
                for e in self.episodes
            ],
            "dropped_partial_line": self.dropped_partial_line,
        })


def _reparse(protocol: Any, step: dict[str, Any]) -> tuple[str, bool] | None:
    """The decision a step's final reply means under the current protocol (None if not derivable)."""
    arguments = step.get("commit_arguments")
    if arguments is not None:
        parsed = protocol.parse_commit(arguments)
        return parsed.name, parsed.valid
    messages = step.get("messages") or []
    if not messages or str(step.get("invalid") or "").startswith(_NO_REPLY):
        return None
    last = messages[-1]
    if last.get("role") != "assistant" or last.get("tool_calls"):
        return None
    parsed = protocol.parse_text(last.get("content") if last.get("content") is not None else "")
    return parsed.name, parsed.valid


def _protocol(spec: EpisodeSpec, envs: dict[str, Any]) -> Any:
    """The text protocol of an episode's env (one env per env arguments, reused by the replays)."""
    key = EnvPool._key(spec)
    if key not in envs:
        envs[key] = make_base_env(spec)
    return envs[key].unwrapped.text_protocol


def _score_episode(spec: EpisodeSpec, steps: list[dict[str, Any]], final: dict[str, Any] | None,
                   envs: dict[str, Any]) -> EpisodeScore:
    totals = EpisodeTotals()
    for step in steps:
        totals.add_step(step)
    label = (final or {}).get("label") or (steps[0].get("symbol") if steps else "") or spec.label()
    status = (final or {}).get("status") or "incomplete"
    score = EpisodeScore(spec.index, str(label), status, len(steps), totals=totals,
                         look_ahead_attempts=totals.look_ahead_attempts, reason=(final or {}).get("reason"))
    if not steps and final is None:  # never started (e.g. its env could not be built): nothing to replay
        return score
    protocol = _protocol(spec, envs)
    for step in steps:
        again = _reparse(protocol, step)
        recorded = (step.get("reply_action", step.get("action")), step.get("reply_valid", step.get("invalid") is None))
        if again is not None and again != recorded:
            score.reparse_mismatches += 1
    if final is None:
        return score
    score.look_ahead_attempts = int(final.get("look_ahead_attempts", totals.look_ahead_attempts))
    if [s.get("step") for s in steps] != list(range(len(steps))):
        score.mismatches.append(f"recorded steps {[s.get('step') for s in steps][:10]} are not 0..{len(steps) - 1}")
    if int(final.get("steps", -1)) != len(steps):
        score.mismatches.append(f"the episode record says {final.get('steps')} steps; {len(steps)} are recorded")
    # the verdict again from the step lines: an episode whose every decision got no reply is failed, not scored
    attempt = final.get("failed_decision") if status == "failed" else None  # HERCULEAN's rule: the failed one
    no_reply = endpoint_failed_everywhere([*steps, *([attempt] if isinstance(attempt, dict) else [])])
    if no_reply and status == "complete":
        score.mismatches.append(f"every one of its {len(steps)} decision(s) got no reply from the endpoint: the "
                                "episode is failed, yet its record says complete")
    elif "endpoint_failed_decisions" in final and not (no_reply and status == "failed"):
        score.mismatches.append("its record says the endpoint failed on every decision; the step lines disagree")
    score.endpoint_failed = no_reply and status == "failed"
    try:
        rewards, metrics, _ = replay_episode(spec, [s.get("env_action") for s in steps],
                                             complete=status == "complete", envs=envs)
    except ReplayMismatch as exc:
        score.reproduced = False
        score.mismatches.append(str(exc))
        return score
    for k, (r, step) in enumerate(zip(rewards, steps, strict=True)):
        if not same_number(r, step.get("reward")):
            score.mismatches.append(f"step {k}: reward {r!r} replayed, {step.get('reward')!r} recorded")
    if status == "complete":
        if isinstance(metrics, dict) and isinstance(metrics.get("look_ahead_attempts"), int):
            # the replay calls no tool: the look-ahead attempts are the ones the recorded tool calls made
            metrics["look_ahead_attempts"] += totals.look_ahead_attempts
        score.metrics = metrics
        score.mismatches += [f"metrics {d}" for d in differences(metrics, final.get("metrics"))][:20]
    elif final.get("metrics") is not None:
        score.mismatches.append("a failed episode records metrics")
    score.reproduced = not score.mismatches
    return score


def _step_key(record: dict[str, Any]) -> int:
    step = record.get("step")
    return step if isinstance(step, int) and not isinstance(step, bool) else -1


def _check_records(check: ChainCheck, specs: list[EpisodeSpec], meta: dict[str, Any]
                   ) -> tuple[list[IntegrityProblem], dict[int, list[dict[str, Any]]], dict[int, dict[str, Any]]]:
    """Each record in its place: its episode in the plan, steps in order, one episode record after its steps whose
    counts, totals and spec match them. Returns the problems and the records by episode."""
    problems: list[IntegrityProblem] = []
    plan = {spec.index: spec for spec in specs}
    steps: dict[int, list[dict[str, Any]]] = {spec.index: [] for spec in specs}
    finals: dict[int, dict[str, Any]] = {}
    ended: dict[int, int] = {}
    totals: dict[int, EpisodeTotals] = {}
    last_step: dict[int, int] = {}

    def problem(line: int, message: str) -> None:
        problems.append(IntegrityProblem(TRAJECTORY_FILE, line, message))

    for n, record in check.records:
        kind, index = record.get("type"), record.get("episode")
        if kind not in ("step", "episode", "pending"):
            problem(n, f"has type {str(kind)[:40]!r}; a trajectory holds step, pending and episode records")
            continue
        if isinstance(index, bool) or not isinstance(index, int) or index not in plan:
            problem(n, f"belongs to episode {str(index)[:40]}, which is not in run.json's plan")
            continue
        if kind == "pending":  # a live run's decision waiting for its next bar: it becomes the next step line
            expected = last_step.get(index, -1) + 1
            if index in ended or record.get("step") != expected:
                problem(n, f"is a pending decision for step {str(record.get('step'))[:20]} of episode {index}; "
                           f"step {expected} comes next" + (" and the episode has ended" if index in ended else ""))
            continue
        if kind == "step":
            steps[index].append(record)
            expected = last_step.get(index, -1) + 1
            if index in ended:
                problem(n, f"is a step of episode {index} after its episode record (line {ended[index]})")
            elif record.get("step") != expected:
                problem(n, f"is step {str(record.get('step'))[:20]} of episode {index}; step {expected} comes next "
                           "(a step line is missing, repeated or moved)")
            last_step[index] = _step_key(record) if _step_key(record) >= 0 else expected
            try:
                totals.setdefault(index, EpisodeTotals()).add_step(record)
            except (ValueError, TypeError, AttributeError) as exc:
                problem(n, f"has unreadable counts ({str(exc)[:80]})")
            continue
        if index in ended:
            problem(n, f"is a second episode record of episode {index} (the first is line {ended[index]})")
            continue
        ended[index], finals[index] = n, record
        if record.get("status") not in ("complete", "failed"):
            problem(n, f"has status {str(record.get('status'))[:40]!r}; an episode record is complete or failed")
        if record.get("steps") != len(steps[index]):
            problem(n, f"says episode {index} took {str(record.get('steps'))[:20]} decision(s); "
                       f"{len(steps[index])} step line(s) precede it")
        if differences(jsonable(plan[index].to_dict()), record.get("spec")):
            problem(n, f"names another episode than run.json's plan for episode {index}")
        diff = differences(asdict(totals.get(index, EpisodeTotals())), record.get("totals"))
        if diff:
            problem(n, f"totals differ from its step lines ({diff[0]})")
    return problems, steps, finals


def _check_outcomes(meta: dict[str, Any], steps: dict[int, list[dict[str, Any]]]) -> list[IntegrityProblem]:
    """run.json's outcomes against intact trajectories: each episode's decisions as many as its step lines."""
    if meta.get("status") not in ("complete", "incomplete"):  # outcomes are written with these statuses only
        return []
    problems = []
    for outcome in meta.get("outcomes") or []:
        index = outcome.get("episode") if isinstance(outcome, dict) else None
        if index in steps and outcome.get("decisions") != len(steps[index]):
            problems.append(IntegrityProblem(RUN_FILE, None, f"outcomes say episode {index} took "
                                             f"{outcome.get('decisions')} decision(s); {len(steps[index])} step "
                                             "line(s) are recorded"))
    return problems


def _check_plan(meta: dict[str, Any]) -> tuple[list[EpisodeSpec], list[IntegrityProblem]]:
    problems: list[IntegrityProblem] = []
    try:
        specs = [EpisodeSpec.from_dict(e) for e in meta.get("episodes") or []]
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        return [], [IntegrityProblem(RUN_FILE, None, f"its episodes cannot be read ({str(exc)[:80]})")]
    if len({spec.index for spec in specs}) != len(specs):
        problems.append(IntegrityProblem(RUN_FILE, None, "two planned episodes share an index"))
    plan = meta.get("plan")
    if isinstance(plan, dict):
        if plan.get("episodes") != len(specs) or plan.get("labels") != [spec.label() for spec in specs]:
            problems.append(IntegrityProblem(RUN_FILE, None, f"its plan ({plan.get('episodes')} episode(s)) and its "
                                             f"{len(specs)} listed episode(s) disagree"))
    elif run_format(meta) >= 3:
        problems.append(IntegrityProblem(RUN_FILE, None, "has no plan (episode count and labels)"))
    return specs, problems


def _check_score_file(path: Path, check: ChainCheck, meta: dict[str, Any]) -> list[IntegrityProblem]:
    """An earlier score file must carry the digest of a prefix of this chain and run.json's data manifest digest."""
    if not path.is_file():
        return []
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except ValueError:
        return [IntegrityProblem(SCORE_FILE, None, "is not valid JSON")]
    chain = doc.get("integrity") if isinstance(doc, dict) else None
    if not isinstance(chain, dict):
        chain = {}
    lines = chain.get("lines")
    if not isinstance(lines, int) or isinstance(lines, bool) or lines < 0 or not isinstance(chain.get("final"), str):
        return [IntegrityProblem(SCORE_FILE, None, "carries no chain digest (integrity.lines, integrity.final)")]
    problems = []
    if lines <= check.lines and check.digests[lines] != chain["final"]:
        problems.append(IntegrityProblem(SCORE_FILE, None, f"its digest of the first {lines} trajectory line(s) is "
                                         "not theirs: the score file or the trajectories were changed"))
    if chain.get("data_manifest") != meta.get("data_manifest"):
        problems.append(IntegrityProblem(SCORE_FILE, None, "its data manifest digest differs from run.json's"))
    return problems


def score_run(run_dir: Path | str, *, write: bool = True) -> RunScore:
    """Check and re-score a run folder (see the module docstring).

    Raises:
        FileNotFoundError: Not a run folder.
        ValueError: run.json is not JSON; or a run of format 2 (unchained) whose trajectories are corrupt before
            their last line.
    """
    files = RunFiles(Path(run_dir))
    if not files.run.is_file():
        raise FileNotFoundError(f"{files.root}: no run.json; not a finenvs run folder")
    try:
        meta = json.loads(files.run.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise ValueError(f"{files.run}: not valid JSON ({exc})") from None
    if not isinstance(meta, dict):
        raise ValueError(f"{files.run}: not a JSON object")
    check = verify_chain(files.trajectories, meta)
    specs, plan_problems = _check_plan(meta)
    record_problems, steps, finals = _check_records(check, specs, meta)
    problems = check.problems + plan_problems + record_problems
    if not any(not p.keyed for p in problems):  # outcomes are compared with intact records only
        problems += _check_outcomes(meta, steps)
    if check.chained:
        problems += _check_score_file(files.root / SCORE_FILE, check, meta)
        old = _score_file_lines(files.root / SCORE_FILE)
        if old is not None and old > check.lines and not check.missing_lines:
            problems.append(IntegrityProblem(TRAJECTORY_FILE, check.lines + 1, f"is missing: an earlier {SCORE_FILE} "
                                             f"counted {old} line(s) and the file ends after {check.lines}: line(s) "
                                             "were removed from its end"))
    notes: list[str] = []
    if check.partial and not check.missing_lines:
        if check.chained and meta.get("status") != "running":
            problems.append(IntegrityProblem(TRAJECTORY_FILE, check.lines + 1, "is cut off (no newline), yet the run "
                                             f"had stopped (status {str(meta.get('status'))[:40]!r}): no crash "
                                             "leaves it"))
        else:
            notes.append("a partial last line (an interrupted write) was skipped")
    order = {RUN_FILE: 0, TRAJECTORY_FILE: 1, SCORE_FILE: 2}
    # per file: what the unkeyed checks found first (it says what is wrong), then what a MAC found
    problems.sort(key=lambda p: (order.get(p.file, 3), p.keyed, p.line or 0))
    if not check.chained:
        notes.append("recorded before trajectory lines were chained (run format 2): integrity not verified")
    notes += _data_note(meta)
    envs: dict[str, Any] = {}
    outcome_messages = {o.get("episode"): str(o.get("message"))[:500] for o in meta.get("outcomes") or ()
                        if isinstance(o, dict) and o.get("message") and o.get("status") not in ("complete", None)}
    try:
        scores = []
        for spec in specs:
            try:
                score = _score_episode(spec, sorted(steps.get(spec.index, []), key=_step_key),
                                       finals.get(spec.index), envs)
                if score.reason is None and spec.index in outcome_messages:  # why the runner stopped it
                    score.reason = outcome_messages[spec.index]
                scores.append(score)
            except (ValueError, TypeError, KeyError, AttributeError) as exc:
                if not problems:  # an intact run that cannot be re-scored is a bug, not a tampered file
                    raise
                scores.append(EpisodeScore(spec.index, spec.label(), "unreadable", len(steps.get(spec.index, [])),
                                           reproduced=False, mismatches=[f"cannot be re-scored ({str(exc)[:120]})"]))
    finally:
        for env in envs.values():
            env.close()
    missing = []
    for score in scores:
        if score.index not in finals:
            missing.append(f"episode {score.index} ({score.label or '?'}) has {score.steps} decision(s) and no "
                           "episode record" if score.steps else f"episode {score.index} has not started")
    task = task_of(specs[0].env_id) if specs else None
    result = RunScore(files.root, meta, task, scores, check.partial, problems=problems, missing=missing,
                      chained=check.chained, lines=check.lines, final_digest=check.final, notes=notes,
                      signature=check.signature, key_id=check.key_id)
    if write:
        (files.root / SCORE_FILE).write_text(json.dumps(result.to_json(), indent=2, allow_nan=False) + "\n")
        (files.root / "score.md").write_text(render_markdown(result), encoding="utf-8")
    return result


def _score_file_lines(path: Path) -> int | None:
    try:
        lines = json.loads(path.read_text(encoding="utf-8"))["integrity"]["lines"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return lines if isinstance(lines, int) and not isinstance(lines, bool) else None


def _data_note(meta: dict[str, Any]) -> list[str]:
    """A note when the installed data is not the data the run used (replays may then differ)."""
    try:
        from finenvs.data.catalog import default_catalog

        current = default_catalog().data_digest
    except Exception:  # the note is informative only
        return []
    recorded = meta.get("data_manifest")
    if recorded and recorded != current:
        return [f"the run used data manifest {str(recorded)[:12]}...; the installed data is {current[:12]}..."]
    return []


# ---------------------------------------------------------------------------- reports
def episode_table(score: RunScore) -> str:
    """One row per episode: the family's columns (— for a failed episode), then efficiency."""
    columns = score.task.columns if score.task else ()
    debated = any(isinstance((e.metrics or {}).get("debate"), dict) for e in score.episodes)
    headers = ["episode", "label", "status", "steps", *(c.label for c in columns),
               *(("debate", "multiplier") if debated else ()), "format errors",
               "tool calls/decision", "look-ahead", "tokens", "cost $", "reproduced"]
    rows = []
    for e in score.episodes:
        t = e.totals
        single = score.task.metrics_of_run([e.metrics]) if score.task and e.metrics is not None else None
        debate = (e.metrics or {}).get("debate") or {}
        rows.append([
            str(e.index), e.label, e.status, str(e.steps), *(c.cell(single) for c in columns),
            *((str(debate.get("outcome", "—")), fmt_number(debate.get("multiplier"), digits=1)) if debated else ()),
            str(t.format_errors), fmt_number(t.tool_calls / t.decisions if t.decisions else None),
            str(e.look_ahead_attempts), fmt_count(t.tokens), fmt_number(t.reported_cost_usd, digits=4),
            {True: "yes", False: "NO", None: "-"}[e.reproduced],
        ])
    return md_table(headers, rows)


def per_decision_tokens(totals: EpisodeTotals) -> dict[str, Any]:
    """Prompt, completion and cached-prefix tokens per decision as counted (None: unknown, never 0), the cached
    share of the prompt tokens, and how they were counted: ``"endpoint"``, ``"estimate"`` (``o200k_base``, every
    decision), ``"mixed"`` or ``"n/a"``."""
    n = totals.decisions

    def per(x: int | None) -> float | None:
        return None if x is None or not n else x / n

    prompt, cached = totals.counted_prompt_tokens, totals.cached_prompt_tokens
    known = prompt is not None and n > 0
    counted = ("n/a" if not known else "estimate" if totals.estimated_decisions == n else
               "endpoint" if totals.estimated_decisions == 0 else "mixed")
    return {"prompt": per(prompt), "completion": per(totals.counted_completion_tokens), "cached": per(cached),
            "cached_share": None if cached is None or not prompt else cached / prompt, "counted": counted}


def tokens_cell(tokens: dict[str, Any]) -> str:
    """``prompt / completion / cached`` tokens per decision, ``~`` before estimates; ``n/a`` when unknown."""
    if tokens.get("prompt") is None:
        return "n/a"
    mark = "~" if tokens["counted"] in ("estimate", "mixed") else ""
    cached = "n/a" if tokens.get("cached") is None else f"{tokens['cached']:,.0f}"
    completion = "n/a" if tokens.get("completion") is None else f"{tokens['completion']:,.0f}"
    return f"{mark}{tokens['prompt']:,.0f} / {completion} / {cached}"


def efficiency_table(score: RunScore) -> str:
    eff = score.efficiency()
    tokens = NA if eff["tokens"] is None else f"{eff['prompt_tokens']} / {eff['completion_tokens']}"
    per = eff["per_decision_tokens"]
    how = {"estimate": "o200k_base estimate", "mixed": "partly o200k_base estimates", "endpoint": "the endpoint's",
           "n/a": "unknown"}[per["counted"]]
    share = "" if per["cached_share"] is None else f", {per['cached_share']:.0%} cached"
    rows = [
        ["decisions", str(eff["decisions"])],
        ["tokens reported (prompt / completion)", tokens],
        [f"tokens per decision, prompt / completion / cached prefix ({how}{share})", tokens_cell(per)],
        ["tokens reported per decision", fmt_number(eff["tokens_per_decision"], digits=1)],
        ["cost $ (per decision)",
         f"{fmt_number(eff['cost_usd'], digits=4)} ({fmt_number(eff['cost_usd_per_decision'], digits=6)})"],
        ["tool calls (per decision)", f"{eff['tool_calls']} ({fmt_number(eff['tool_calls_per_decision'])})"],
        ["tool errors", str(eff["tool_errors"])],
        ["look-ahead attempts", str(eff["look_ahead_attempts"])],
        ["format errors (invalid actions)", f"{eff['format_errors']} ({fmt_number(eff['format_error_rate'], 100, 1)} %)"],
        ["requests / retries / endpoint errors", f"{eff['requests']} / {eff['retries']} / {eff['endpoint_errors']}"],
        ["seconds per decision", fmt_number(eff["seconds_per_decision"], digits=3)],
    ]
    return md_table(["efficiency", "value"], rows, align=["left", "left"])


def metrics_line(score: RunScore) -> str:
    """The run's headline metrics over its complete episodes, in the family's columns (no score when the endpoint
    failed on every decision of an episode)."""
    metrics = score.complete_metrics()
    done = sum(e.status == "complete" for e in score.episodes)
    failed = sum(e.status == "failed" for e in score.episodes)
    no_reply = sum(e.endpoint_failed for e in score.episodes)
    why = "; ".join(part for part in (
        f"{failed - no_reply} failed (HERCULEAN's rule: shown as —)" if failed > no_reply else "",
        f"{no_reply} failed: the endpoint failed on every decision, not scored" if no_reply else "") if part)
    if score.task is None or metrics is None:
        return f"no complete episode ({why})" if failed else "no complete episode"
    cells = ", ".join(f"{c.label} {c.cell(metrics)}" for c in score.task.columns)
    if no_reply:
        return (f"{score.task.env_id}: no score, {no_reply} of {len(score.episodes)} episode(s) failed (the endpoint "
                f"failed on every decision); the {done} complete episode(s) alone: {cells}")
    if metrics.get("debated"):
        outcomes = ", ".join(f"{k} {v}" for k, v in metrics["debate_outcomes"].items())
        cells += (f"; FAB++ debate over {metrics['debated']}: mean multiplier {metrics['debate_multiplier']:.3f} "
                  f"({outcomes}), debated score {metrics['debated_score']:.2f}")
    return f"{score.task.env_id} over {counted(done, 'complete episode')}: {cells}" + (f"; {why}" if failed else "")


def confinement_line(meta: dict[str, Any]) -> str | None:
    """How an agent program of the run was confined (``finenvs harness``), or None for an agent with no program."""
    confinement = (meta.get("agent") or {}).get("confinement")
    if not isinstance(confinement, dict):
        return None
    if confinement.get("confined"):
        return (f"agent program: confined ({confinement.get('sandbox')}; "
                f"{len(confinement.get('protected') or [])} protected paths hidden)")
    return ("agent program: unconfined — it ran with the evaluator's access to the data files, caches and run "
            f"folders, so its date lock rests on the program alone ({confinement.get('reason')})")


def terminal_report(score: RunScore) -> str:
    agent = score.meta.get("agent") or {}
    lines = [
        f"run {score.run_dir} — agent {agent.get('model') or agent.get('name') or agent.get('kind', '?')}",
        episode_table(score),
        "",
        metrics_line(score),
        "",
        efficiency_table(score),
        "",
    ]
    done = [e for e in score.episodes if e.status in ("complete", "failed")]
    status = score.status
    if status == "tampered":
        lines.append("re-scored offline: NOT reproduced: TAMPERED, the run folder was changed after it was written; "
                     f"first bad line: {score.problems[0]}")
        lines += [f"  {p}" for p in score.problems[1:5]]
        if len(score.problems) > 5:
            lines.append(f"  ... and {len(score.problems) - 5} more")
    elif done and all(e.reproduced for e in done):
        lines.append("re-scored offline: " + ("the 1 finished episode reproduces" if len(done) == 1 else
                                              f"all {counted(len(done), 'finished episode')} reproduce")
                     + " the live scores exactly")
    else:
        lines.append("re-scored offline: NOT reproduced" if done else "re-scored offline: no finished episode")
    if status != "reproduced" and done and not all(e.reproduced for e in done):
        for e in score.episodes:
            for m in e.mismatches[:5]:
                lines.append(f"  episode {e.index}: {m}")
    no_reply = [e for e in score.episodes if e.endpoint_failed]
    if no_reply:
        lines.append(f"FAILED: {len(no_reply)} of {len(score.episodes)} episode(s) got no reply from the endpoint on "
                     f"any decision and are not scored (first: episode {no_reply[0].index}: {no_reply[0].reason})")
    if status == "incomplete":
        lines.append(f"INCOMPLETE: {len(done)} of {counted(len(score.episodes), 'planned episode')} finished; "
                     f"{score.resume_hint()}")
        lines += [f"  {m}" for m in score.missing[:5]]
    reparse = sum(e.reparse_mismatches for e in score.episodes)
    if reparse:
        lines.append(f"warning: {counted(reparse, 'reply')} {'parses' if reparse == 1 else 'parse'} differently "
                     "under the current text protocol")
    for note in score.notes:
        lines.append(f"note: {note}")
    if (confined := confinement_line(score.meta)) is not None:
        lines.append(confined)
    if score.chained and status != "tampered":
        lines.append(f"integrity: chain intact over {counted(score.lines, 'line')}, final digest "
                     f"{score.final_digest[:16]}..., "
                     f"data manifest {str(score.meta.get('data_manifest'))[:16]}...")
    lines.append(score.signature_line())
    lines.append(f"outcome: {status} (exit {score.exit_code})")
    return "\n".join(lines)


def render_markdown(score: RunScore) -> str:
    agent = score.meta.get("agent") or {}
    line = confinement_line(score.meta)
    confinement = [] if line is None else ["", f"**{line}**" if "unconfined" in line else line]
    return "\n".join([
        f"# finenvs agent run — {score.run_dir.name}",
        "",
        f"Agent: `{json.dumps(agent)}`. Status: {score.meta.get('status')}. "
        f"Re-scored offline from the recorded actions: **{score.status}**"
        + (f" (first bad line: {score.problems[0]})" if score.problems else "")
        + (f" ({'; '.join(score.missing[:3])}; {score.resume_hint()})" if score.status == "incomplete" else "") + ".",
        *confinement,
        "",
        score.signature_line()[0].upper() + score.signature_line()[1:] + ".",
        "",
        metrics_line(score),
        "",
        "## Episodes",
        "",
        episode_table(score),
        "",
        "## Efficiency",
        "",
        efficiency_table(score),
        "",
    ])


__all__ = ["EXIT_CODES", "EpisodeScore", "RunScore", "confinement_line", "efficiency_table", "episode_table", "metrics_line", "render_markdown",
           "score_run", "terminal_report"]
