"""FAB++'s adversarial debate, deterministic: a second turn after a one-answer task.

``Debate(env)`` wraps a one-decision text env whose task spec names a ``debate``
builder (FinQA-v0, FinOptions-v0 in ``action_mode="text"``):

1. The first ``step(answer)`` is scored on a copy of the env (the episode goes
   on): the wrapper returns the same observation — with the counter-argument
   appended when the observation is text — reward 0, not terminated, and
   ``info["debate"]`` holding the counter-argument and the first answer's score.
   The counter-argument states a plausible *wrong* alternative (a common mistake
   for that task, built in code from the task's own inputs), never the truth.
2. The second ``step(answer)`` is the final answer, scored by the env as usual:
   its reward is the plain score. ``info["debate"]`` adds what
   :func:`finenvs.text.debate.debate_verdict` — the one rule every path calls —
   decides: the outcome, the multiplier (finenvs' rule: 1.2 when a correct
   answer is held, 1.0 when a wrong answer is corrected, 0.8 when a correct
   answer is abandoned or a wrong one kept) and ``debated_score`` =
   min(max score, first score × multiplier), reported beside the plain score,
   never replacing it. What "correct" means is the family's
   (``DebateRound.correct``: FinQA every part right; FinOptions 90 or more).
   ``rule="reference"`` uses the multiplier values of FAB++'s reference
   implementation instead (0.5 for an answer that changes); which parts are
   FAB++'s and which finenvs' is written in :mod:`finenvs.text.debate`.

The bench's overall with debate is the section aggregate of the tasks' debated
scores (:func:`finenvs.evaluation.bench.aggregate.section_aggregate`).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any, SupportsFloat

import gymnasium as gym

from finenvs.text.debate import DEFAULT_DEBATE_RULE, OUTCOMES, DebateRound, debate_outcome, debate_verdict
from finenvs.text.protocol import PrintableText

#: Characters the counter-argument and its framing may add to a text observation.
COUNTER_CHARS = 2_000

class Debate(gym.Wrapper):
    """Two-turn debate for a one-answer env (see the module docstring).

    Args:
        env: A FinQA-v0 or FinOptions-v0 env (``action_mode="text"``), or any one-decision env whose task
            spec names a ``debate`` builder.
        builder: ``(unwrapped env) -> DebateRound``; default: the family's spec ``debate``.
        rule: The debate rule (:data:`finenvs.text.debate.DEBATE_RULES`): ``"finenvs"`` (default) or
            ``"reference"``.
    """

    def __init__(self, env: gym.Env, builder: Callable[[Any], DebateRound] | None = None, *,
                 rule: str = DEFAULT_DEBATE_RULE) -> None:
        super().__init__(env)
        debate_outcome(True, True, rule)  # an unknown rule is refused here, before any episode
        self.rule = rule
        if builder is None:
            from finenvs.tasks import task_of

            spec = task_of(env.spec.id if env.spec is not None else type(env.unwrapped).__name__)
            if spec.debate is None:
                raise ValueError(f"{spec.env_id} has no debate round (its task spec names no debate builder)")
            builder = spec.debate
        self._builder = builder
        if isinstance(env.observation_space, gym.spaces.Text):
            self.observation_space = PrintableText(env.observation_space.max_length + COUNTER_CHARS)
        self._round: DebateRound | None = None
        self._first: dict[str, Any] | None = None

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        obs, info = self.env.reset(**kwargs)
        self._round, self._first = None, None
        return obs, {**info, "n_decisions": 2, "debate": {"turn": 1, "turns": 2}}

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        if self._first is None:
            probe = copy.deepcopy(self.env)
            obs, reward, _, _, info = probe.step(action)
            probe.close()
            self._round = self._builder(self.env.unwrapped)
            correct = bool(self._round.correct(float(reward), info))
            self._first = {"first_score": float(reward), "first_correct": correct,
                           "counter_argument": self._round.counter_argument, "mistake": self._round.mistake}
            shown = self._observation_with_counter(obs)
            return shown, 0.0, False, False, {**info, "debate": {"turn": 2, "turns": 2, **self._first}}
        assert self._round is not None
        obs, reward, terminated, truncated, info = self.env.step(action)
        final_correct = bool(self._round.correct(float(reward), info))
        verdict = debate_verdict(self._first["first_score"], self._first["first_correct"], final_correct,
                                 self._round.max_score, self.rule)
        info = {**info, "debate": {**self._first, "final_score": float(reward), "final_correct": final_correct,
                                   "max_score": self._round.max_score, **verdict.record()}}
        return obs, reward, terminated, truncated, info

    def _observation_with_counter(self, obs: Any) -> Any:
        assert self._round is not None
        base = self.env.unwrapped
        current = base._observation() if isinstance(obs, str) and hasattr(base, "_observation") else obs
        if isinstance(current, str):
            counter = self._round.counter_argument[: COUNTER_CHARS - 200]
            return (f"{current}\n\nA reviewer disagrees with your answer:\n{counter}\n\n"
                    "Give your final answer in the same format (keep it or revise it).")
        return current


__all__ = ["OUTCOMES", "Debate", "DebateRound", "debate_outcome"]
