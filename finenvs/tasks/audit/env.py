"""FinAudit-v0: audit one XBRL fact of a real SEC filing — find the reported value, compute the calculated one."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from finenvs.data.asof import LookAheadCounter
from finenvs.scoring.audit import ANSWER_KEYS, GRADINGS, AuditOutcome, answer_problem, check_grading, classify
from finenvs.tasks.validation import check_choice, check_render_mode
from finenvs.text.protocol import AnswerProtocol, ParsedAction, PrintableText
from finenvs.xbrl.corpus import Corpus, shipped_corpus
from finenvs.xbrl.model import Filing
from finenvs.xbrl.tasks import (
    EVAL_SEEDS,
    AuditInstance,
    GroundTruth,
    eval_instances,
    generate,
    ground_truth,
    instance_filing,
    load_herculean_tasks,
)

SPLITS = ("eval", "train", "file")
MAX_TASK_CHARS = 4_096
MAX_ANSWER_CHARS = 16_384
AUDIT_INSTRUCTIONS = (
    "You audit one XBRL fact of an SEC filing. Find the value the filing reports for the concept in the "
    "period's non-dimensional context, and the value the filing's own calculation network implies: the "
    "weighted sum of the concept's children in the same period (recursively for children without a "
    "fact), or for a concept with no complete summation its reported value, made non-negative when the "
    "concept's balance type and calculation weights say its sign lives in the weight. A difference between "
    "the two is a reporting error you have found."
)


def answer_format(grading: str = "finenvs") -> str:
    """The answer-format line of the task text under ``grading`` (it names the keys the grading reads)."""
    first, second = ANSWER_KEYS[check_grading(grading)]
    line = (f'Answer with one JSON object: {{"{first}": <number>, "{second}": <number>}} in the fact\'s unit '
            '(e.g. USD, not millions); strings like "-14,721,000" are read too.')
    if grading == "herculean":
        line += (f" Graded as HERCULEAN grades: exactly these two keys ({first} is the reported value; any other "
                 "key is a structural error), and both values must match exactly.")
    return line


@dataclass(frozen=True)
class AuditProtocol(AnswerProtocol):
    """The text protocol of FinAudit-v0: the action is a JSON answer, not a word.

    ``parse_text``/``parse_commit`` never raise. A reply the scorer cannot read is
    still the episode's answer: it is scored as a structural error (reward 0),
    with the reason in ``invalid``; there is no default answer to fall back on.
    ``grading`` (:data:`~finenvs.scoring.audit.GRADINGS`) names the keys the
    prompt, the commit schema and the check ask for: finenvs' ``reported_value``,
    or HERCULEAN's ``extracted_value`` with no other key (its commit schema then
    has no ``reasoning``: an extra key is a structural error under that grading).
    """

    grading: str = "finenvs"

    @property
    def answer_keys(self) -> tuple[str, str]:
        """The two keys of an answer under this protocol's grading."""
        return ANSWER_KEYS[self.grading]

    def commit_schema(self) -> dict[str, Any]:
        number = {"type": ["number", "string"],
                  "description": "A number in the fact's unit, or a string such as \"-14,721,000\"."}
        first, second = self.answer_keys
        properties: dict[str, Any] = {first: number, second: number}
        if self.grading == "finenvs":
            properties["reasoning"] = {"type": "string", "description": "Optional: how you got the values."}
        return {"type": "object", "properties": properties, "required": [first, second],
                "additionalProperties": False}

    def check(self, answer: Any) -> str | None:
        return answer_problem(answer, self.grading)

    def parse_commit(self, arguments: Any) -> ParsedAction:
        arguments, problem = self.commit_arguments(arguments)
        if problem is not None:
            return ParsedAction(str(arguments), "ANSWER", problem, "tool")
        if self.grading != "finenvs":  # the commit is the answer, every key of it
            return self.answer(arguments, "tool")
        reasoning = arguments.get("reasoning", "")
        answer = {k: v for k, v in arguments.items() if k != "reasoning"}
        return self.answer(answer, "tool", reasoning[: self.max_chars] if isinstance(reasoning, str) else "")


def audit_protocol(grading: str = "finenvs") -> AuditProtocol:
    """FinAudit-v0's text protocol under ``grading`` (its prompt and commit schema name that grading's keys)."""
    first, second = ANSWER_KEYS[check_grading(grading)]
    example = f'{{"{first}": <number>, "{second}": <number>}}'
    note = (f"Commit with the commit_action tool ({first}, {second}), or reply with one JSON object {example} (a "
            "```json block or one object inside your text). Numbers may be strings such as \"-14,721,000\", in the "
            "fact's unit (e.g. USD, not millions). An answer that is not such an object is a structural error (reward 0); nothing is "
            "substituted.")
    if grading == "herculean":
        note += (f" Graded as HERCULEAN grades: the object has exactly the keys {first} (the value the filing "
                 f"reports) and {second}, no other key; {first} and {second} must match exactly (no rounding "
                 "allowance).")
    return AuditProtocol(
        task="FinAudit-v0",
        instructions=AUDIT_INSTRUCTIONS,
        actions={"ANSWER": "ANSWER"},
        default="ANSWER",
        default_reason="an unreadable answer is scored as a structural error (reward 0); nothing is substituted",
        max_chars=MAX_ANSWER_CHARS,
        hint=example,
        answer_note=note,
        commit_note=f"Commit your answer ({first}, {second}); the episode ends.",
        grading=grading,
    )


AUDIT_PROTOCOL = audit_protocol("finenvs")
#: The protocol of each grading.
AUDIT_PROTOCOLS = {g: audit_protocol(g) for g in GRADINGS}


def file_tasks(tasks_file: str | Path, corpus: Corpus | str | None = None
               ) -> tuple[list[AuditInstance], list[dict[str, str]]]:
    """The answerable tasks of a HERCULEAN-format task file (in file order) and the excluded ones with the reason.

    Raises:
        DataFileError: The file is missing or malformed (see :func:`~finenvs.xbrl.tasks.load_herculean_tasks`).
        ValueError: No task of the file is answerable (the first reasons named).
    """
    if not isinstance(corpus, Corpus):
        corpus = Corpus(corpus) if corpus is not None else shipped_corpus()
    loaded = load_herculean_tasks(tasks_file, corpus)
    excluded = [{"id": t.id, "reason": t.unanswerable} for t in loaded if t.unanswerable]
    answerable = [t for t in loaded if not t.unanswerable]
    if not answerable:
        raise ValueError(f"{tasks_file}: no answerable task; first reasons: {excluded[:3]}")
    return answerable, excluded


def file_kwargs(split: str | None, env_kwargs: Mapping[str, Any]) -> dict[str, Any] | None:
    """The env arguments of a run over a task file, or None when the run plays generated instances.

    A run plays a HERCULEAN-format task file when its split is ``"file"`` or its env arguments name a
    ``tasks_file``: the file's tasks then replace the split's eval instances (``finenvs bench``, whose
    split names dates, reaches them this way). The file's path is made absolute, so the recorded run
    replays from any folder.

    Raises:
        ValueError: ``split="file"`` without a ``tasks_file``, or a ``tasks_file`` with the train split.
    """
    tasks_file = env_kwargs.get("tasks_file")
    wanted = split == "file" or env_kwargs.get("split") == "file"
    if tasks_file is None:
        if wanted:
            raise ValueError("--split file needs a HERCULEAN-format audit task file: --env-kwargs "
                             "'{\"tasks_file\": \"tasks.csv\"}'")
        return None
    if split == "train" or env_kwargs.get("split") == "train":
        raise ValueError("tasks_file is read with split 'file' (or 'eval', which the file's tasks replace), not "
                         "'train'")
    if not isinstance(tasks_file, str):
        raise ValueError(f"tasks_file={str(tasks_file)[:40]!r} must be a path (a string)")
    return {**env_kwargs, "split": "file", "tasks_file": str(Path(tasks_file).resolve())}


@dataclass
class AuditView:
    """What an audit episode may read: the filings released on or before ``as_of``.

    The episode's own bundle is served as the agent sees it (with the instance's
    injection); other bundles as filed. A bundle released after ``as_of`` answers
    exactly like one the corpus does not hold (the same error, naming only
    visible bundles and no folder); asking for it is also a look-ahead attempt,
    counted.
    """

    corpus: Corpus
    as_of: str
    bundle: str
    filing: Filing
    counter: LookAheadCounter = field(default_factory=LookAheadCounter)

    def visible(self) -> list[str]:
        """Bundle names released on or before ``as_of`` (unknown release dates count as visible only
        when they are the episode's own bundle)."""
        out = []
        for name in self.corpus.names:
            filed = self.corpus.filing(name).filed
            if name == self.bundle or (filed and filed <= self.as_of):
                out.append(name)
        return out

    def get(self, bundle: str | None = None) -> Filing:
        """A visible filing (default: the episode's).

        Raises:
            ValueError: The bundle is not visible: the same message whether the corpus does not hold it or
                releases it after ``as_of`` (that one is also counted as a look-ahead attempt).
        """
        if bundle is None or bundle == self.bundle:
            return self.filing
        visible = self.visible()
        if bundle not in visible:
            if bundle in self.corpus.names:
                filed = self.corpus.filing(bundle).filed
                self.counter.record(f"xbrl({bundle})", np.datetime64(self.as_of), np.datetime64(filed or "9999-12-31"))
            raise ValueError(f"the bundle argument names no filing released by the audit date {self.as_of}; "
                             f"bundles released by then: {visible}")
        return self.corpus.filing(bundle)


class FinAuditEnv(gym.Env):
    """Audit one XBRL fact of a real SEC filing (HERCULEAN/FinAuditing's auditing task).

    ## Description
    An instance is (filing, concept, period). The agent reads the filing through
    tools (resolve the bundle, search concepts, facts, calculation children and
    parents, concept metadata) and answers
    ``{"reported_value": ..., "calculated_value": ...}``: the value the filing
    reports and the value its own calculation network implies. Generated
    instances may carry one injected error (sign flip, parent that no longer
    equals its children, child scaled by 1000, duplicated child); the ground
    truth is always computed in code (:func:`finenvs.xbrl.tasks.ground_truth`).

    ## Data
    The seven shipped SEC bundles (``envs_data/xbrl``: AAPL, AMZN, MSFT, NFLX,
    TSLA 10-K/10-Q) or a user's folder of bundles (``corpus=``), and for
    ``split="file"`` a HERCULEAN-format task file (``tasks_file=``).

    ## Action Space
    ``PrintableText(16384)``: the JSON answer (a dict is accepted too).

    ## Observation Space
    ``PrintableText(4096)``: the task text, the filing's metadata and the answer format.

    | line | content |
    |---|---|
    | task | the HERCULEAN-style question |
    | filing | bundle, company, ticker, form, period end, release date |
    | concept, period | as asked |
    | answer | the JSON format |

    ``info`` at reset: task id, bundle, ticker, form, release date (the as-of
    date), concept, period, source and split — never what was injected; the
    step's ``info`` adds ``kind``, ``injection`` and ``audit`` (label, reason,
    truth and how the calculated value was obtained).

    ## Rewards
    1.0 when the answer passes (both values within half a unit of the concept
    fact's decimals), else 0.0. ``info["audit"]["label"]`` is one of pass,
    structural, extraction, calculation. With ``grading="herculean"`` answers are
    graded by HERCULEAN's rules (:mod:`finenvs.scoring.audit`): exactly the keys
    ``extracted_value`` and ``calculated_value`` (any other key is a structural
    error) and both values exact; the prompt and the commit schema then name
    those keys.

    ## Costs
    None.

    ## Starting State
    ``split="eval"``: one of the 100 eval instances (``options={"index": i}``
    or ``{"seed": s}`` for any generation seed, else drawn with ``np_random``).
    ``split="train"``: a fresh instance from a seed drawn with ``np_random``
    (train candidates only). ``split="file"``: the answerable tasks of the file
    (``info["excluded"]`` lists the others with the reason).

    ## Episode End
    ``terminated`` after the answer (one step). Never truncated.

    ## Look-ahead Guarantee
    The audit date is the filing's release date. Tools read only the episode's
    filing and filings released on or before that date; a request for a later
    one is refused and counted in ``info["look_ahead_attempts"]``.

    ## Arguments
    split, corpus (folder of bundles), tasks_file, instances (explicit list of
    :class:`~finenvs.xbrl.tasks.AuditInstance`), grading (``"finenvs"``, the
    default, or ``"herculean"``), render_mode (``"ansi"``: the
    query and the last verdict as text, or ``"rgb_array"``: that text drawn on a
    frame; needs ``finenvs[plot]``).

    ## Version History
    v0: first version.
    """

    metadata = {"render_modes": ["ansi", "rgb_array"], "render_fps": 1}
    text_protocol = AUDIT_PROTOCOL
    task_family = "audit"

    def __init__(
        self,
        split: str = "eval",
        *,
        corpus: str | None = None,
        tasks_file: str | None = None,
        instances: list[AuditInstance] | None = None,
        grading: str = "finenvs",
        render_mode: str | None = None,
    ) -> None:
        super().__init__()
        check_render_mode(render_mode, self.metadata)
        check_choice("split", split, SPLITS)
        check_choice("grading", grading, GRADINGS)
        self.render_mode = render_mode
        self.split = split
        #: ``"finenvs"`` (default) or ``"herculean"``: how answers are graded (:func:`finenvs.scoring.audit.classify`).
        self.grading = grading
        self.text_protocol = AUDIT_PROTOCOLS[grading]
        self.corpus = Corpus(corpus) if corpus is not None else shipped_corpus()
        self.excluded: list[dict[str, str]] = []
        if split == "file" and instances is None:
            if tasks_file is None:
                raise ValueError("split='file' needs tasks_file= (a HERCULEAN-format audit task CSV)")
            instances, self.excluded = file_tasks(tasks_file, self.corpus)
        elif tasks_file is not None and split != "file":
            raise ValueError("tasks_file= is read only with split='file'")
        if instances is None and split == "eval":
            instances = list(eval_instances(self.corpus if corpus is not None else None))
        self.instances: list[AuditInstance] | None = list(instances) if instances is not None else None
        self.observation_space = PrintableText(MAX_TASK_CHARS)
        self.action_space = PrintableText(MAX_ANSWER_CHARS)
        self.instance: AuditInstance | None = None
        self.truth: GroundTruth | None = None
        self._view: AuditView | None = None
        self._done = True
        self._last: dict[str, Any] | None = None

    # ------------------------------------------------------------------ gymnasium API
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict]:
        super().reset(seed=seed)
        options = dict(options or {})
        unknown = sorted(set(options) - {"index", "seed", "instance"})
        if unknown:
            raise ValueError(f"unknown reset option(s) {unknown}; valid: index, seed, instance")
        instance = self._choose(options)
        filing = instance_filing(instance, self.corpus)
        self.instance = instance
        self.truth = ground_truth(filing, instance.concept, instance.period)
        self._view = AuditView(self.corpus, instance.issued, instance.bundle, filing)
        self._done = False
        self._last = None
        return self._observation(filing), self._info()

    def _choose(self, options: dict[str, Any]) -> AuditInstance:
        if "instance" in options:
            inst = options["instance"]
            if not isinstance(inst, AuditInstance):
                raise TypeError(f"options['instance'] must be an AuditInstance, got {type(inst).__name__}")
            if inst.unanswerable:
                raise ValueError(f"instance {inst.id} is unanswerable: {inst.unanswerable}")
            return inst
        if "seed" in options:
            seed = options["seed"]
            if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
                raise ValueError(f"options['seed']={seed!r} must be a non-negative integer (a generation seed)")
            return generate(int(seed), self.corpus)
        if self.instances is not None:
            if "index" in options:
                index = options["index"]
                if isinstance(index, bool) or not isinstance(index, (int, np.integer)) or not (
                        0 <= index < len(self.instances)):
                    raise ValueError(f"options['index']={index!r} must be an integer in [0, {len(self.instances)})")
                return self.instances[int(index)]
            return self.instances[int(self.np_random.integers(len(self.instances)))]
        if "index" in options:
            raise ValueError("options['index'] needs a fixed instance list (split 'eval' or 'file')")
        seed = int(self.np_random.integers(len(EVAL_SEEDS), 2**31 - 1))
        return generate(seed, self.corpus, split="train")

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict]:
        if self._done or self.instance is None or self.truth is None:
            raise gym.error.ResetNeeded("call reset() before step()" if self.instance is None
                                        else "the episode has ended; call reset() before step()")
        parsed = self.text_protocol.parse_text(action)
        outcome: AuditOutcome = classify(action if isinstance(action, dict) else parsed.action, self.truth.truth,
                                         self.grading)
        if parsed.invalid and (parsed.via == "default" or outcome.label != "structural"):  # nothing was read
            outcome = AuditOutcome("structural", parsed.invalid, None)
        self._done = True
        reward = 1.0 if outcome.passed else 0.0
        self._last = outcome.record()
        info = self._info()
        # what was injected is revealed only once the answer is in
        info["kind"] = self.instance.injection.kind
        info["injection"] = self.instance.injection.describe()
        info["audit"] = {**outcome.record(), "truth": self.truth.truth.record(),
                         "calculation": self.truth.calculation.record()}
        info["invalid_action"] = outcome.reason if outcome.label == "structural" else None
        return self._observation(self._view.filing if self._view else None), reward, True, False, info

    def render(self) -> str | np.ndarray | None:
        if self.render_mode is None:
            return None
        if self.instance is None:
            text = "FinAudit-v0: no episode (call reset)"
        else:
            lines = [self.instance.query]
            if self._last is not None and self.truth is not None:
                t = self.truth.truth
                lines += [f"answer: {self._last['answer']}", f"truth: reported {t.reported_value:,.0f}, calculated "
                          f"{t.calculated_value:,.0f}", f"verdict: {self._last['label']} ({self._last['reason']})"]
            text = "\n".join(lines)
        if self.render_mode == "ansi":
            return text
        from finenvs.tasks.rendering import _figure, _rgb

        fig, canvas = _figure(960, 540)
        fig.text(0.01, 0.99, text, va="top", ha="left", family="monospace", fontsize=8, wrap=True)
        return _rgb(fig, canvas)

    # ------------------------------------------------------------------ helpers
    def as_of_view(self) -> AuditView:
        """The episode's view (the tools read through it)."""
        if self._view is None:
            raise RuntimeError("no episode: call reset() first")
        return self._view

    def text_state(self) -> dict[str, str]:
        """The task as prompt lines (the text interface, the LLM runner and the MCP server use it)."""
        if self.instance is None:
            raise gym.error.ResetNeeded("call reset() before text_state()")
        inst = self.instance
        return {"Task": inst.query, "Filing": f"{inst.bundle} ({inst.ticker} {inst.form}, released {inst.issued})",
                "Concept": inst.concept, "Period": inst.period}  # the answer format: the protocol's answer note

    def _observation(self, filing: Filing | None) -> str:
        inst = self.instance
        assert inst is not None
        meta = self.corpus.index(inst.bundle)
        lines = [
            f"Task: {inst.query}",
            f"Filing: {inst.bundle} ({meta.get('company') or (filing.company if filing else '')}), "
            f"{inst.ticker} {inst.form}, period ended {filing.period_end if filing else ''}, released {inst.issued}",
            f"Concept: {inst.concept}",
            f"Period: {inst.period}",
            answer_format(self.grading),
        ]
        return "\n".join(lines)[:MAX_TASK_CHARS]

    def _info(self) -> dict[str, Any]:
        inst = self.instance
        assert inst is not None
        view = self._view
        return {
            "task_id": inst.id, "bundle": inst.bundle, "ticker": inst.ticker, "form": inst.form,
            "issued": inst.issued, "as_of": inst.issued, "date": inst.issued, "concept": inst.concept, "period": inst.period,
            "source": inst.source, "split": inst.split,
            "look_ahead_attempts": view.counter.attempts if view is not None else 0,
            "excluded": list(self.excluded),
        }

    def facts(self) -> dict[str, Any]:
        """The instance and its ground truth, as a JSON-able record (for logs and tests)."""
        if self.instance is None or self.truth is None:
            raise RuntimeError("no episode: call reset() first")
        return {"instance": self.instance.record(), "truth": self.truth.record()}


__all__ = ["AUDIT_PROTOCOL", "AUDIT_PROTOCOLS", "AuditProtocol", "AuditView", "FinAuditEnv", "answer_format",
           "audit_protocol", "file_kwargs", "file_tasks"]
