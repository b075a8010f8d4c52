"""What the PettingZoo shells share: the guarded pettingzoo import, action checks, seeding and paths.

Importing this module imports pettingzoo; without it, the ImportError names the extra.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.error import ResetNeeded
from gymnasium.utils import seeding

from finenvs.data.splits import SessionWindow
from finenvs.data.synthetic import BarParams
from finenvs.errors import shown

MARL_EXTRA = "pip install 'finenvs[marl]'"

try:
    from pettingzoo import ParallelEnv
except ImportError as exc:  # exercised in a subprocess test
    raise ImportError(
        f"finenvs.multiagent needs PettingZoo, which is not installed: {MARL_EXTRA} (or 'finenvs[all]')"
    ) from exc

#: Every shell's reset options (others are ignored with a warning: PettingZoo's
#: ``parallel_api_test`` passes ``{"options": 1}``).
RESET_OPTIONS = ("path",)
DATASET = "core"
#: Where the exogenous price path comes from.
EXOGENOUS = ("flat", "synthetic", "real")
#: Decisions per episode on flat and synthetic paths when ``steps`` is None (a trading year).
DEFAULT_STEPS = 252
ACTION_DOC = "{0: SELL (target short), 1: HOLD (target flat), 2: BUY (target long)}"
N_ACTIONS = 3


def parse_action(agent: str, action: Any, env_name: str) -> int:
    """One agent's action as an int in {0, 1, 2}.

    Accepts a Python or numpy integer, or an integer array holding one value.

    Raises:
        ValueError: Anything else (float, bool, NaN, None, out of range, wrong
            shape), naming the agent and the valid set.
    """
    if type(action) is int or isinstance(action, np.integer):
        a = int(action)
    elif isinstance(action, np.ndarray) and action.dtype.kind in "iu" and action.size == 1 and action.ndim <= 1:
        a = int(action.reshape(-1)[0])
    else:
        raise ValueError(
            f"invalid action {shown(action)} of type {type(action).__name__} for agent {agent!r}; "
            f"{env_name} takes an integer in {ACTION_DOC}"
        )
    if not 0 <= a < N_ACTIONS:
        raise ValueError(f"invalid action {shown(a)} for agent {agent!r}; {env_name} takes an integer in {ACTION_DOC}")
    return a


def check_steps(steps: Any) -> int | None:
    """``steps`` must be None or an integer >= 1 (ValueError otherwise)."""
    if steps is None:
        return None
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 1:
        raise ValueError(f"steps={steps!r} must be None or an integer >= 1")
    return int(steps)


def business_dates(n: int, start: str = BarParams.start_date) -> tuple[str, ...]:
    """``n`` business days (Mon-Fri) from ``start`` as ISO strings (the calendar of a flat path)."""
    days = np.busday_offset(np.datetime64(start, "D"), np.arange(n), roll="forward")
    return tuple(np.datetime_as_string(days, unit="D").tolist())


class MarketShell(ParallelEnv):
    """Base of the PettingZoo market shells: spaces, seeding, agent bookkeeping and action checks.

    Subclasses set ``metadata``, call :meth:`_setup` in ``__init__`` and
    implement ``reset``/``step`` with :meth:`_seed`, :meth:`_reset_options`,
    :meth:`_check_actions` and :meth:`_retire`.
    """

    metadata: dict[str, Any]

    def _setup(self, agents: list[str], obs_size: int, bound: float, render_mode: str | None) -> None:
        self.possible_agents = list(agents)
        self.agents: list[str] = []
        self.render_mode = render_mode
        # Spaces are built once here and never change: observation_space(a) and
        # action_space(a) return these very objects on every call (PettingZoo's
        # identity requirement), per env instance, so pickling keeps them too.
        self.observation_spaces = {
            a: spaces.Box(low=-bound, high=bound, shape=(obs_size,), dtype=np.float32) for a in self.possible_agents
        }
        self.action_spaces = {a: spaces.Discrete(N_ACTIONS) for a in self.possible_agents}
        self._np_random: np.random.Generator | None = None
        self._np_random_seed: int | None = None
        self._done_at: dict[str, str] = {}
        self._started = False

    def _episode_window(self, rng: np.random.Generator) -> SessionWindow:
        """The real window of a new episode (subclasses on real data set ``_window``, ``_row_dates`` and ``steps``): the whole window, or ``steps`` sessions of it from a start drawn
        from ``rng``. Counts are calendar sessions; the prices are the bars the window holds."""
        window = self._window
        if self.steps < window.n_decisions:
            window = window.sub_window(self._row_dates, self.steps, rng)
        return window

    # ------------------------------------------------------------------ spaces
    def observation_space(self, agent: str) -> spaces.Box:
        """The (same, cached) observation space of ``agent``."""
        try:
            return self.observation_spaces[agent]
        except (KeyError, TypeError):
            raise ValueError(f"unknown agent {agent!r}; possible agents: {self.possible_agents}") from None

    def action_space(self, agent: str) -> spaces.Discrete:
        """The (same, cached) action space of ``agent``: Discrete(3) SELL/HOLD/BUY."""
        try:
            return self.action_spaces[agent]
        except (KeyError, TypeError):
            raise ValueError(f"unknown agent {agent!r}; possible agents: {self.possible_agents}") from None

    # ------------------------------------------------------------------ seeding
    @property
    def np_random(self) -> np.random.Generator:
        """The env's only source of randomness (seeded by ``reset(seed=...)``)."""
        if self._np_random is None:
            self._np_random, self._np_random_seed = seeding.np_random()
        return self._np_random

    def _seed(self, seed: int | None) -> np.random.Generator:
        if seed is not None:
            self._np_random, self._np_random_seed = seeding.np_random(seed)
            for k, agent in enumerate(self.possible_agents):  # reproducible space.sample() too
                self.action_spaces[agent].seed(int(seed) + k)
        return self.np_random

    def _reset_options(self, options: dict[str, Any] | None) -> dict[str, Any]:
        options = dict(options or {})
        unknown = sorted(str(k) for k in options if k not in RESET_OPTIONS)
        if unknown:
            warnings.warn(
                f"{self.metadata['name']}: ignoring unknown reset option(s) {unknown}; valid options: {list(RESET_OPTIONS)}",
                stacklevel=3,
            )
        return {k: v for k, v in options.items() if k in RESET_OPTIONS}

    # ------------------------------------------------------------------ agents
    def _start(self) -> None:
        self.agents = list(self.possible_agents)
        self._done_at = {}
        self._started = True

    def _check_actions(self, actions: Any) -> dict[str, int]:
        """Validate a step's action dict against the live agents.

        Raises:
            ResetNeeded: ``step`` before ``reset``, or after every agent is done.
            ValueError: Not a dict, an unknown agent, an agent that is already
                done, a live agent without an action, or an invalid action
                (each names the agent and the valid set).
        """
        name = self.metadata["name"]
        if not self._started:
            raise ResetNeeded(f"{name}: call reset() before step()")
        if not self.agents:
            raise ResetNeeded(f"{name}: the episode has ended (every agent is done); call reset() before step()")
        live = self.agents
        if not isinstance(actions, Mapping):
            raise ValueError(
                f"actions must be a dict {{agent: action}} with one entry per live agent {live}; "
                f"got {type(actions).__name__}"
            )
        for agent in actions:
            if agent in self._done_at:
                raise ValueError(
                    f"agent {agent!r} is done ({self._done_at[agent]}) and cannot act; live agents: {live}"
                )
            if agent not in live:
                raise ValueError(f"unknown agent {agent!r}; live agents: {live} (possible agents: {self.possible_agents})")
        missing = [a for a in live if a not in actions]
        if missing:
            raise ValueError(f"missing action(s) for live agent(s) {missing}; every live agent must act: {live}")
        return {agent: parse_action(agent, actions[agent], name) for agent in live}

    def _retire(self, agent: str, reason: str) -> None:
        """Record ``agent`` as done (removed from ``self.agents`` by the caller)."""
        self._done_at[agent] = reason

    # ------------------------------------------------------------------ render
    def render(self) -> str | None:
        """A text frame of the market (``render_mode="ansi"``)."""
        if self.render_mode is None:
            warnings.warn(f"{self.metadata['name']}: render() called without render_mode; pass render_mode='ansi'",
                          stacklevel=2)
            return None
        if not self._started:
            raise ResetNeeded(f"{self.metadata['name']}: call reset() before render()")
        return self._render_text()

    def _render_text(self) -> str:  # pragma: no cover - overridden
        raise NotImplementedError

    def close(self) -> None:
        """Nothing to release (no connections or windows are held)."""
