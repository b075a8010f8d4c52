"""FinQA-v0: one finance question per episode, answered in text, scored per part against code-computed truth."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

from finenvs.scoring.qa import AnswerError, final_answer
from finenvs.tasks.qa import analysis, fab_public, knowledge, methods
from finenvs.tasks.qa.items import QAItem
from finenvs.tasks.validation import check_choice, check_render_mode
from finenvs.text.protocol import AnswerProtocol, ParsedAction, PrintableText

SECTIONS = ("all", "knowledge", "analysis")
SPLITS = ("eval", "train", "published", "fab_public")
#: The reward of an analytical question: FAB++'s split — methodology 30, calculation 30, answer 40 (``"fabpp"``,
#: the default, as the paper scores it: :func:`finenvs.tasks.qa.methods.score_structured`), or the answer's parts
#: alone (``"answer"``, the named answer-only variant). Either way the split is in ``info["qa"]["method_split"]``
#: and the grading in ``info["qa"]["grading"]``.
ANALYSIS_SCORES = ("fabpp", "answer")
DEFAULT_ANALYSIS_SCORE = "fabpp"
#: What an analytical question's prompt says about its grading under FAB++'s split.
FABPP_GRADING = ("graded as FAB++ grades analysis: methodology 30% (name the method or write its formula), "
                 "calculation 30% (the key intermediate values you computed), answer 40%; answer "
                 '{"method": "...", "intermediates": {"name": value, ...}, "answer": ...}')
#: Eval split: analysis topics at these seeds (seed 0 is the published question, kept out of eval)...
EVAL_ANALYSIS_SEEDS = tuple(range(1, 6))
#: ... and these knowledge seeds at the as-of date.
EVAL_KNOWLEDGE_SEEDS = tuple(range(60))
#: Train draws seeds from here up (disjoint from eval); knowledge dates from the train split.
TRAIN_SEED_START = 10_000
TRAIN_AS_OF = ("2024-06-03", "2025-12-31")
MAX_QUESTION_CHARS = 4_096
MAX_ANSWER_CHARS = 16_384
QA_INSTRUCTIONS = (
    "You answer one finance question. Numbers in the question are exact; compute from them (the calculate tool "
    "evaluates arithmetic). Questions about market data or filings are asked at a date: the tools show only what "
    "was public by then. Give one final answer."
)


@dataclass(frozen=True)
class QAProtocol(AnswerProtocol):
    """FinQA-v0's text protocol: the action is an answer, not a word.

    ``parse_text``/``parse_commit`` never raise. A reply with no readable final
    answer is still the episode's answer: it scores 0 with the reason recorded;
    nothing is substituted.
    """

    def commit_schema(self) -> dict[str, Any]:
        return {"type": "object",
                "properties": {"answer": {"description": "The final answer: a number, a string such as \"12.5%\" "
                                          "or \"$1.2 billion\", or an object keyed by part name for multi-part "
                                          "questions."},
                               "method": {"type": "string", "description": "Analytical questions: the method you "
                                          "used (its name or formula); scored as FAB++'s methodology."},
                               "intermediates": {"type": "object", "description": "Analytical questions: the key "
                                                 "intermediate values you computed, by name; scored as FAB++'s "
                                                 "calculation."},
                               "reasoning": {"type": "string", "description": "Optional: how you got it."}},
                "required": ["answer"], "additionalProperties": False}

    def check(self, answer: Any) -> str | None:
        try:
            final_answer(answer)
        except AnswerError as exc:
            return str(exc)
        return None

    def parse_commit(self, arguments: Any) -> ParsedAction:
        arguments, problem = self.commit_arguments(arguments)
        if problem is None and "answer" not in arguments:
            problem = 'commit_action needs {"answer": ...}'
        if problem is not None:
            return ParsedAction(json.dumps(arguments, default=str), "ANSWER", problem, "tool")
        reasoning = arguments.get("reasoning", "")
        # method and intermediates reach the scorer as in a JSON reply (FAB++'s methodology and calculation)
        structured = {k: arguments[k] for k in ("method", "intermediates") if k in arguments}
        return self.answer({**structured, "answer": arguments["answer"]}, "tool",
                           reasoning[: self.max_chars] if isinstance(reasoning, str) else "")


QA_PROTOCOL = QAProtocol(
    task="FinQA-v0",
    instructions=QA_INSTRUCTIONS,
    actions={"ANSWER": "ANSWER"},
    default="ANSWER",
    default_reason="an unreadable answer scores 0 with the reason recorded; nothing is substituted",
    max_chars=MAX_ANSWER_CHARS,
    hint='{"answer": ...}',
    answer_note=(
        'Commit with the commit_action tool ({"answer": ...}), or reply with JSON {"answer": ...} (a ```json '
        'block or one object in your text), or end with a line "Answer: ...". Multi-part questions take an object '
        "keyed by part name. Several different final answers, or none, score 0."),
    commit_note="Commit your final answer; the episode ends.",
)


class FinQAEnv(gym.Env):
    """One finance question per episode: Knowledge Retrieval or Analytical Reasoning (FAB++'s sections).

    ## Description
    Analytical questions come from 18 parametric generators (NPV crossover,
    FCFF, bond replication, put-call parity, ...: :mod:`finenvs.tasks.qa.analysis`);
    seed 0 of each is the published FAB++ question, corrected where it was wrong,
    any other seed a fresh one. Knowledge questions are generated from the
    shipped prices, filing dates and XBRL facts as of a date
    (:mod:`finenvs.tasks.qa.knowledge`). Every truth is computed in code.

    ## Data
    Analysis: none (the inputs are in the question). Knowledge: the shipped
    catalog (prices, filing index) and XBRL bundles, read through the as-of view.

    ## Action Space
    ``PrintableText(16384)``: the reply; a dict ``{"answer": ...}`` is accepted too.

    ## Observation Space
    ``PrintableText(4096)``: the question and its answer format.

    ## Rewards
    In [0, 1]. A knowledge question: the weighted share of correct parts
    (:func:`finenvs.scoring.qa.score_answer`: tolerance 1% relative by default, per
    part otherwise; units and formats parsed; the first number in free text is never
    taken). An analytical question: FAB++'s methodology 30 / calculation 30 / answer
    40, the answer share being that part score (``analysis_score="answer"``: the
    part score alone). ``info["qa"]`` has each part's verdict and reason, the split
    and the grading used.

    ## Costs
    None.

    ## Starting State
    ``split="eval"``: a fixed list (analysis: every topic at seeds 1..5; knowledge:
    seeds 0..59 at ``as_of``); ``options={"index": i}`` picks one, else it is drawn
    with ``np_random``. ``split="published"``: the 18 published analytical
    questions. ``split="train"``: a fresh item from a seed >= 10,000 (knowledge:
    asked at a random date of the train split). ``split="fab_public"``: the Finance
    Agent Benchmark's 50 public questions (section knowledge, **closed-book**: about
    filings and guidance finenvs does not ship; ``info["closed_book"]`` is True with
    the reason), scored on their rubrics' figures (:mod:`finenvs.tasks.qa.fab_public`:
    the reward is the share of deterministic rubric items passed; ``info["qa"]``
    lists each one checked and each qualitative one not scored).
    ``options={"item": QAItem}`` or ``{"topic": name, "seed": s}`` asks one directly.

    ## Episode End
    ``terminated`` after the answer (one step). Never truncated.

    ## Look-ahead Guarantee
    A knowledge question and its tools see only data public by the question's
    ``as_of``; asking for more is refused and counted in ``info["look_ahead_attempts"]``.

    ## Arguments
    section (``all``, ``knowledge``, ``analysis``), split, as_of (knowledge
    questions' date, default 2026-03-31), items (an explicit list), render_mode (``"ansi"``),
    analysis_score (``"fabpp"``, default: the reward of an analytical question is FAB++'s methodology 30 /
    calculation 30 / answer 40, as the paper scores it, checked in code against the generator's own method and
    intermediates — a bare right number earns 0.4, a right method and intermediates with a slip 0.6; see
    :mod:`finenvs.tasks.qa.methods`; the question's prompt says so; ``"answer"``: the named answer-only variant,
    the reward is the answer's parts' score). Either way ``info["qa"]["method_split"]`` holds the split of an
    analytical answer and ``info["qa"]["grading"]`` the grading used. A structured answer is JSON
    ``{"method": ..., "intermediates": {name: value}, "answer": ...}`` (``commit_action`` takes the same
    fields); free text is read for the same parts.

    ## Version History
    v0: first version.
    """

    metadata = {"render_modes": ["ansi"], "render_fps": 1}
    text_protocol = QA_PROTOCOL
    task_family = "qa"

    def __init__(
        self,
        section: str = "all",
        split: str = "eval",
        *,
        as_of: str = knowledge.DEFAULT_AS_OF,
        items: list[QAItem] | None = None,
        render_mode: str | None = None,
        analysis_score: str = DEFAULT_ANALYSIS_SCORE,
    ) -> None:
        super().__init__()
        check_render_mode(render_mode, self.metadata)
        check_choice("analysis_score", analysis_score, ANALYSIS_SCORES)
        self.analysis_score = analysis_score
        check_choice("section", section, SECTIONS)
        check_choice("split", split, SPLITS)
        if split == "published" and section == "knowledge":
            raise ValueError("split='published' holds the published analytical questions; use section='analysis' or 'all'")
        if split == "fab_public" and section == "analysis":
            raise ValueError("split='fab_public' holds the FAB public questions (section knowledge); use "
                             "section='knowledge' or 'all'")
        self.render_mode = render_mode
        self.section = section
        self.split = split
        self.as_of = str(np.datetime64(as_of, "D"))
        self._views: dict[str, knowledge.QAView] = {}
        if items is not None:
            self.items: list[QAItem] | None = list(items)
        elif split == "published":
            self.items = analysis.published_items()
        elif split == "fab_public":
            self.items = list(fab_public.shipped_items())
        elif split == "eval":
            self.items = self._eval_items()
        else:
            self.items = None
        if self.items is not None and not self.items:
            raise ValueError("no question to ask (empty items)")
        self.observation_space = PrintableText(MAX_QUESTION_CHARS)
        self.action_space = PrintableText(MAX_ANSWER_CHARS)
        self.item: QAItem | None = None
        self._view: knowledge.QAView | None = None
        self._done = True
        self._last: dict[str, Any] | None = None

    def _eval_items(self) -> list[QAItem]:
        out: list[QAItem] = []
        if self.section in ("all", "knowledge"):
            view = self.view_at(self.as_of)
            out += [knowledge.generate(s, view) for s in EVAL_KNOWLEDGE_SEEDS]
        if self.section in ("all", "analysis"):
            out += analysis.bank(EVAL_ANALYSIS_SEEDS)
        return out

    def view_at(self, as_of: str) -> knowledge.QAView:
        """A fresh QA view at ``as_of`` (own look-ahead counter; the catalog is shared)."""
        from finenvs.data.catalog import default_catalog
        from finenvs.xbrl.corpus import shipped_corpus

        return knowledge.QAView(default_catalog().as_of(as_of), shipped_corpus())

    # ------------------------------------------------------------------ gymnasium API
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict]:
        super().reset(seed=seed)
        options = dict(options or {})
        unknown = sorted(set(options) - {"index", "item", "topic", "seed"})
        if unknown:
            raise ValueError(f"unknown reset option(s) {unknown}; valid: index, item, topic, seed")
        self.item = self._choose(options)
        self._view = self.view_at(self.item.as_of or self.as_of)
        self._done = False
        self._last = None
        return self._observation(), self._info()

    def _choose(self, options: dict[str, Any]) -> QAItem:
        if "item" in options:
            item = options["item"]
            if not isinstance(item, QAItem):
                raise TypeError(f"options['item'] must be a QAItem, got {type(item).__name__}")
            return item
        if "topic" in options or "seed" in options:
            topic, seed = options.get("topic"), options.get("seed", 0)
            if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
                raise ValueError(f"options['seed']={seed!r} must be a non-negative integer")
            if topic in analysis.TOPICS:
                return analysis.generate(topic, int(seed))
            if topic is None or topic in knowledge.TOPICS:
                return knowledge.generate(int(seed), self.view_at(self.as_of), topic)
            raise ValueError(f"unknown topic {topic!r}; analysis topics: {sorted(analysis.TOPICS)}; "
                             f"knowledge topics: {list(knowledge.TOPICS)}")
        if self.items is not None:
            if "index" in options:
                index = options["index"]
                if isinstance(index, bool) or not isinstance(index, (int, np.integer)) or not (
                        0 <= index < len(self.items)):
                    raise ValueError(f"options['index']={index!r} must be an integer in [0, {len(self.items)})")
                return self.items[int(index)]
            return self.items[int(self.np_random.integers(len(self.items)))]
        if "index" in options:
            raise ValueError("options['index'] needs a fixed item list (split 'eval', 'published' or 'fab_public')")
        seed = int(self.np_random.integers(TRAIN_SEED_START, 2**31 - 1))
        sections = ["knowledge", "analysis"] if self.section == "all" else [self.section]
        if sections[int(self.np_random.integers(len(sections)))] == "analysis":
            topics = list(analysis.TOPICS)
            return analysis.generate(topics[int(self.np_random.integers(len(topics)))], seed)
        lo, hi = (np.datetime64(d, "D") for d in TRAIN_AS_OF)
        day = lo + int(self.np_random.integers(0, int((hi - lo).astype(int)) + 1))
        return knowledge.generate(seed, self.view_at(str(day)))

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict]:
        if self._done or self.item is None:
            raise gym.error.ResetNeeded("call reset() before step()" if self.item is None
                                        else "the episode has ended; call reset() before step()")
        parsed = self.text_protocol.parse_text(action)
        if parsed.invalid and parsed.via == "default":  # over-long, non-printable or not text: nothing is read
            record = {**self.item.score(""), "reason": parsed.invalid, "score": 0.0}
        else:
            record = self.item.score(action)
        if self.item.topic in methods.METHODS and self.item.section == "analysis":
            split = methods.score_structured(self.item, "" if parsed.invalid and parsed.via == "default" else action)
            record["method_split"] = {k: split[k] for k in ("methodology", "calculation", "answer", "total", "method")}
            record["method_split"]["reasons"] = split["reasons"][:6]
            if self._split_graded(self.item):
                record = {**record, "answer_score": record["score"], "score": float(split["total"])}
        record["grading"] = "fabpp" if self._split_graded(self.item) else "answer"
        self._done = True
        self._last = record
        info = self._info()
        info["qa"] = {**record, "truth": self.item.truth, "solution": list(self.item.solution)}
        info["invalid_action"] = record["reason"]
        return self._observation(), float(record["score"]), True, False, info

    def render(self) -> str | None:
        if self.render_mode != "ansi":
            return None
        if self.item is None:
            return "FinQA-v0: no episode (call reset)"
        lines = [self.item.question]
        if self._last is not None:
            lines.append(f"score: {self._last['score']:.3f}" + (f" ({self._last['reason']})" if self._last["reason"] else ""))
            lines += [f"  {p['name']}: {'ok' if p['correct'] else 'wrong'} (expected {p['expected']}, read {p['read']})"
                      + (f" - {p['reason']}" if p["reason"] else "") for p in self._last["parts"]]
        return "\n".join(lines)

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_view"] = None  # holds the catalog's lookups; rebuilt from the item's date on unpickling
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        if self.item is not None:
            self._view = self.view_at(self.item.as_of or self.as_of)

    # ------------------------------------------------------------------ helpers
    def as_of_view(self) -> knowledge.QAView:
        """The episode's view (the tools read through it)."""
        if self._view is None:
            raise RuntimeError("no episode: call reset() first")
        return self._view

    def _split_graded(self, item: QAItem) -> bool:
        """Whether ``item`` is scored with FAB++'s methodology/calculation/answer split (an analytical topic with a
        method rubric, under ``analysis_score="fabpp"``)."""
        return self.analysis_score == "fabpp" and item.section == "analysis" and item.topic in methods.METHODS

    def text_state(self) -> dict[str, str]:
        """The question as prompt lines (the text interface, the LLM runner and the MCP server use it)."""
        if self.item is None:
            raise gym.error.ResetNeeded("call reset() before text_state()")
        prompt = self.item.prompt().split("\n")
        fmt = prompt[1].removeprefix("Answer format: ") if len(prompt) > 1 else ""
        if self._split_graded(self.item):
            fmt = f"{fmt}; {FABPP_GRADING}"
        return {"Question": prompt[0], "Answer format": fmt,
                "As of": self.item.as_of or "-",
                "Task": f"{self.item.id} ({self.item.section}, topic {self.item.topic})",
                # the quantities the question states, as data: an agent's code can read them without parsing prose
                "Inputs": json.dumps(self.item.inputs, sort_keys=True, default=str)}

    def _observation(self) -> str:
        assert self.item is not None
        prompt = self.item.prompt()
        if self._split_graded(self.item):
            prompt = f"{prompt}\nGrading: {FABPP_GRADING}"
        return prompt[:MAX_QUESTION_CHARS]

    def _info(self) -> dict[str, Any]:
        item = self.item
        assert item is not None
        return {"task_id": item.id, "section": item.section, "topic": item.topic, "seed": item.seed,
                "as_of": item.as_of, "date": item.as_of, "inputs": dict(item.inputs),
                "parts": [p.name for p in item.parts], "split": self.split,
                "closed_book": item.closed_book is not None, "closed_book_reason": item.closed_book,
                "look_ahead_attempts": self._view.counter.attempts if self._view is not None else 0}


__all__ = ["ANALYSIS_SCORES", "DEFAULT_ANALYSIS_SCORE", "FABPP_GRADING", "QA_PROTOCOL", "FinQAEnv", "QAProtocol"]
