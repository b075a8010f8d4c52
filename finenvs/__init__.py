"""finenvs: Gymnasium environments for financial agents.

``import finenvs`` registers every env with gymnasium::

    import gymnasium as gym
    import finenvs  # noqa: F401
    env = gym.make("FinTrading-v0")

Each shipped task family is a folder ``finenvs/tasks/<family>/`` whose ``spec.py``
declares its ``SPEC``; :data:`BUILTIN` lists them, one line each. Importing them
loads gymnasium, numpy and scipy; data (duckdb, pandas), charts (matplotlib) and
the optional extras load when first used.
"""

import signal as _signal
import sys as _sys

__version__ = "0.1.0"


def _the_command() -> bool:
    """Whether this process is the ``finenvs`` command: its console script, or ``python -m finenvs.cli``."""
    import os

    script = os.path.basename(_sys.argv[0]) if _sys.argv else ""
    argv = list(getattr(_sys, "orig_argv", ()))
    return script in ("finenvs", "finenvs.exe", "finenvs-script.py") or any(
        flag == "-m" and module == "finenvs.cli" for flag, module in zip(argv, argv[1:], strict=False))


#: Set when the ``finenvs`` command gets a Ctrl-C while the package loads (see :func:`_interrupted_while_starting`).
_STARTING = {"interrupted": False}


def _interrupted_while_starting(error: BaseException) -> None:
    """A Ctrl-C while the package loads (1-2 s, before :func:`finenvs.cli.main` can catch it): in the ``finenvs``
    command one line and exit 130, as a Ctrl-C at any later moment, also when the library it hit turned it into
    another error (numpy's C extensions report an ImportError); anywhere else, or for any other error, the
    exception goes on as usual."""
    if not (isinstance(error, KeyboardInterrupt) or _STARTING["interrupted"]) or not _the_command():
        raise error
    print("interrupted: finenvs stopped while starting; nothing was run", file=_sys.stderr)
    raise SystemExit(130)  # finenvs.cli.common.EXIT_INTERRUPTED (128 + SIGINT), which imports this package


def _note_sigint(signum: int, frame: object) -> None:
    _STARTING["interrupted"] = True
    raise KeyboardInterrupt


_default_sigint = None
if _the_command() and _signal.getsignal(_signal.SIGINT) is _signal.default_int_handler:
    # note a Ctrl-C that a library turns into another error while it loads (an ignored SIGINT stays ignored)
    _default_sigint = _signal.signal(_signal.SIGINT, _note_sigint)
try:
    from finenvs.tasks.audit.spec import SPEC as AUDIT
    from finenvs.tasks.deltahedge.spec import SPEC as DELTAHEDGE
    from finenvs.tasks.hedging.spec import SPEC as HEDGING
    from finenvs.tasks.options.spec import SPEC as OPTIONS
    from finenvs.tasks.qa.spec import SPEC as QA
    from finenvs.tasks.registry import env_ids, register_task, task_of
    from finenvs.tasks.registry import tasks as _registered_tasks
    from finenvs.tasks.report.spec import SPEC as REPORT
    from finenvs.tasks.trading.spec import SPEC as TRADING
except BaseException as _error:  # noqa: BLE001  (re-raised unless it is the command's Ctrl-C)
    _interrupted_while_starting(_error)

#: The shipped families, in the order tables list them.
BUILTIN = (TRADING, HEDGING, REPORT, AUDIT, QA, OPTIONS, DELTAHEDGE)


def register_envs() -> None:
    """Register the shipped families and their gymnasium ids (idempotent)."""
    registered = {spec.family for spec in _registered_tasks()}
    for spec in BUILTIN:
        if spec.family not in registered:
            register_task(spec)


try:
    register_envs()
except BaseException as _error:  # noqa: BLE001  (re-raised unless it is the command's Ctrl-C)
    _interrupted_while_starting(_error)
finally:
    if _default_sigint is not None:
        _signal.signal(_signal.SIGINT, _default_sigint)

__all__ = ["BUILTIN", "__version__", "env_ids", "register_envs", "task_of"]
