"""Old import paths of the env modules, kept working for code written against finenvs 0.1 (deprecated).

Each family's code now lives in its folder ``finenvs/tasks/<family>/`` (docs/families.md). Importing
``finenvs.envs.<module>`` gives the module's new home and a :class:`DeprecationWarning` naming it::

    from finenvs.envs.trading import FinTradingEnv       # works, warns
    from finenvs.tasks.trading.env import FinTradingEnv  # the path to use

The envs themselves are reached by their gymnasium ids (``gym.make("FinTrading-v0")``), which never moved.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any

#: old module (``finenvs.envs.<name>``) -> its new home
MOVED = {
    "trading": "finenvs.tasks.trading.env",
    "trading_core": "finenvs.tasks.trading.core",
    "trading_text": "finenvs.tasks.trading.protocol",
    "trading_vector": "finenvs.tasks.trading.vector",
    "features": "finenvs.tasks.trading.features",
    "hedging": "finenvs.tasks.hedging.env",
    "hedging_core": "finenvs.tasks.hedging.core",
    "hedging_text": "finenvs.tasks.hedging.protocol",
    "report": "finenvs.tasks.report.env",
    "report_core": "finenvs.tasks.report.core",
    "report_text": "finenvs.tasks.report.protocol",
    "report_quality": "finenvs.tasks.report.quality",
    "audit": "finenvs.tasks.audit.env",
    "qa": "finenvs.tasks.qa.env",
    "options": "finenvs.tasks.options.env",
    "options_core": "finenvs.tasks.options.core",
    "options_tasks": "finenvs.tasks.options.instances",
    "options_bank": "finenvs.tasks.options.bank",
    "options_debate": "finenvs.tasks.options.debate",
    "deltahedge": "finenvs.tasks.deltahedge.env",
    "rendering": "finenvs.tasks.rendering",
    "validation": "finenvs.tasks.validation",
}


class _OldPaths(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds ``finenvs.envs.<name>`` and loads it as the module's new home (the same module object)."""

    def __init__(self) -> None:
        self._own_specs: dict[str, ModuleSpec | None] = {}

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> ModuleSpec | None:
        prefix, _, name = fullname.rpartition(".")
        if prefix != __name__ or name not in MOVED:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec: ModuleSpec) -> ModuleType:
        new = MOVED[spec.name.rpartition(".")[2]]
        warnings.warn(f"{spec.name} moved to {new}; import it from there", DeprecationWarning, stacklevel=4)
        module = importlib.import_module(new)
        self._own_specs[new] = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        """The new home is already executed; it keeps its own spec (the import system set the old path's)."""
        module.__spec__ = self._own_specs[module.__name__]


if not any(isinstance(f, _OldPaths) for f in sys.meta_path):
    sys.meta_path.insert(0, _OldPaths())


def __getattr__(name: str) -> object:  # ``from finenvs.envs import trading``
    if name in MOVED:
        importlib.import_module(f"{__name__}.{name}")
        return sys.modules[f"{__name__}.{name}"]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
