"""Confinement of agent programs: what an agent run by ``finenvs harness`` can see and do.

An agent program decides at a date D, and everything it may read about the world comes through the episode's
date-locked MCP tools. The disk holds more: the shipped price files (every later bar), the catalog cache, the
user layer, earlier runs and the current run folder, the key that signs run folders, and in a source checkout
the repository's history and the published results computed on the data. A real coding agent searches the disk
as a matter of course, so the harness runs each attempt inside a sandbox built with bubblewrap (``bwrap``,
Debian/Ubuntu package ``bubblewrap``):

* the whole file system read-only, with the protected paths (:func:`protected_paths`) replaced by empty
  folders (files by an empty file);
* writable: only the attempt's scratch folder (``{workdir}``), a private ``HOME`` and a private ``/tmp`` (both
  empty at each attempt unless ``home`` names a folder of the user's);
* its own PID namespace, IPC namespace and session, no capabilities: the program sees only its own processes,
  and when the attempt ends (exit, commit or timeout) the namespace ends with every process in it, detached
  or not;
* the host's network, so the episode's MCP endpoint on 127.0.0.1 and the agent's own model API are reachable.

Where no working ``bwrap`` is found the harness refuses to run unless ``--unconfined`` is given; an unconfined
run says so in ``run.json``, ``finenvs score`` and the scorecard.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from finenvs.errors import FinEnvsError

#: Private home and temporary folder inside the sandbox (a fresh tmpfs per attempt).
SANDBOX_TMP = "/tmp"
SANDBOX_HOME = "/tmp/home"
#: Folders a finenvs command writes results into by default, masked when they exist under the working directory.
DEFAULT_RESULT_FOLDERS = ("finenvs-runs", "finenvs-results", "finenvs-mcp-runs")
#: In a source checkout: what holds the data or results computed on it (history, published numbers).
CHECKOUT_PROTECTED = (".git", "docs", "benchmarks", "README.md")
INSTALL_HINT = ("install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap), "
                "or pass --unconfined to run the agent program with your own access to every file (the run is "
                "marked unconfined)")


class ConfinementError(FinEnvsError):
    """The agent program cannot be confined as asked (no sandbox here, or a protected path contains the
    working directory)."""


@dataclass(frozen=True)
class Protected:
    """A path the agent program must not read, and why."""

    path: Path
    why: str

    def describe(self) -> dict[str, str]:
        return {"path": str(self.path), "why": self.why}


@functools.lru_cache(maxsize=4)
def probe_bwrap(executable: str | None = None) -> tuple[str | None, str]:
    """``(path, version)`` of a bubblewrap that can build the harness's sandbox here, or ``(None, reason)``.

    The probe runs ``true`` in a sandbox with the namespaces the harness uses, so a ``bwrap`` that is installed
    but cannot create them (user namespaces disabled, a container without the privilege) is reported as such.
    """
    if not sys.platform.startswith("linux"):
        return None, f"no sandbox for agent programs on {sys.platform} (bubblewrap needs Linux namespaces)"
    path = executable or shutil.which("bwrap")
    if path is None:
        return None, "bubblewrap (bwrap) is not installed"
    try:
        version = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=10).stdout.strip()
        probe = subprocess.run([path, *_namespace_args(), "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
                                "--tmpfs", SANDBOX_TMP, "true"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"{path} could not run ({type(exc).__name__}: {exc})"
    if probe.returncode != 0:
        reason = (probe.stderr.strip().splitlines() or [f"exit code {probe.returncode}"])[-1][:300]
        return None, f"{path} cannot build a sandbox here: {reason}"
    return path, version or "bubblewrap"


def _namespace_args() -> list[str]:
    return ["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--new-session",
            "--die-with-parent", "--cap-drop", "ALL"]


def _git_dirs(checkout: Path) -> list[Path]:
    """The git directory of a checkout and, for a linked worktree, the common directory holding its objects."""
    dot_git = checkout / ".git"
    if dot_git.is_dir():
        return [dot_git]
    if not dot_git.is_file():
        return []
    out = [dot_git]
    text = dot_git.read_text(errors="replace").strip()
    if text.startswith("gitdir:"):
        gitdir = (checkout / text[len("gitdir:"):].strip()).resolve()
        out.append(gitdir)
        common = gitdir / "commondir"
        if common.is_file():
            out.append((gitdir / common.read_text().strip()).resolve())
    return out


def shipped_data_paths() -> list[Protected]:
    """The installed ``envs_data`` and, when it is a source checkout's folder, the checkout's history and the
    files that publish results computed on the data."""
    spec = importlib.util.find_spec("finenvs.envs_data")
    if spec is None or not spec.submodule_search_locations:
        return []
    out = []
    for location in spec.submodule_search_locations:
        data = Path(location).resolve()
        out.append(Protected(data, "the shipped data (every bar, filing and question of every split)"))
        checkout = data.parent
        if (checkout / "pyproject.toml").is_file() and (checkout / "finenvs").is_dir():
            for git in _git_dirs(checkout):
                out.append(Protected(git, "the source checkout's history (it holds the data files)"))
            for name in CHECKOUT_PROTECTED[1:]:
                if (checkout / name).exists():
                    out.append(Protected(checkout / name, "results published from the data (docs, benchmarks)"))
    return out


def protected_paths(*, run_dir: Path | None = None, out: Path | None = None, cwd: Path | None = None,
                    extra: Iterable[Path] = ()) -> list[Protected]:
    """Everything an agent program must not read: the shipped data (and a source checkout's history and
    published results), the catalog cache, the user layer, the run key, the run folder and the folder of runs it
    sits in (unless that folder contains ``cwd``), the default result folders under ``cwd``, and ``extra``
    (``--mask``). Each is resolved (symlinks followed); one that does not exist yet is masked from the first
    attempt at which it does."""
    from finenvs.data.catalog import cache_dir, user_data_dir
    from finenvs.evaluation.seal import run_key_path

    found: list[Protected] = list(shipped_data_paths())
    found.append(Protected(cache_dir(), "the catalog cache (the built price, news and filings tables)"))
    found.append(Protected(user_data_dir(), "the user layer (finenvs data add)"))
    key = run_key_path()
    found.append(Protected(key.parent if key.parent.name == "finenvs" else key,
                           "the key that signs run folders"))
    here = Path(cwd).resolve() if cwd is not None else None
    if run_dir is not None:  # masked from the first attempt on (it exists by then)
        found.append(Protected(Path(run_dir), "the run folder being written"))
    if out is not None:
        out = Path(out).resolve()
        if here is None or not (here == out or out in here.parents):  # else masking it would hide the program
            found.append(Protected(out, "the folder of runs (other runs, their scores)"))
    if here is not None:
        for name in DEFAULT_RESULT_FOLDERS:
            found.append(Protected(here / name, "results of earlier finenvs commands"))
    found += [Protected(Path(p).expanduser(), "named with --mask") for p in extra]
    unique: dict[Path, Protected] = {}
    for item in found:
        path = item.path.expanduser().resolve()
        if path not in unique:
            unique[path] = Protected(path, item.why)
    return list(unique.values())


@dataclass
class Sandbox:
    """How the attempts of one harness run are confined.

    Attributes:
        bwrap: The ``bwrap`` executable, or None for an unconfined run.
        version: What ``bwrap --version`` printed (or why there is no sandbox).
        protected: The paths replaced by empty ones inside the sandbox.
        cwd: The working directory of the command (visible read-only).
        home: A folder of the user's bound writable as ``HOME`` (None: a private empty home per attempt).
    """

    bwrap: str | None
    version: str
    protected: list[Protected] = field(default_factory=list)
    cwd: Path = field(default_factory=Path.cwd)
    home: Path | None = None

    @property
    def confined(self) -> bool:
        return self.bwrap is not None

    def describe(self) -> dict[str, object]:
        """What run.json records: the sandbox, or that there was none."""
        if not self.confined:
            return {"confined": False, "sandbox": None, "reason": self.version}
        return {"confined": True, "sandbox": self.version, "protected": [p.describe() for p in self.protected],
                "home": str(self.home) if self.home else "private", "network": "host (loopback MCP, model API)"}

    def check(self) -> None:
        """Refuse a set-up in which the command could not run: a protected path that contains the working
        directory or the agent's home."""
        for item in self.protected:
            for name, where in (("working directory", self.cwd), ("agent home", self.home)):
                if where is not None and (where == item.path or item.path in where.parents):
                    raise ConfinementError(f"the {name} {where} is inside {item.path} ({item.why}); the agent "
                                           "program could not run there confined: start the harness elsewhere")

    def kept_in_tmp(self, argv: Sequence[str], workdir: Path) -> list[Path]:
        """Host paths under ``/tmp`` the program needs, shown read-only over the private ``/tmp`` (protected paths
        are hidden again on top): the working directory, the Python environment the harness runs in and the
        finenvs installation (an agent program often runs with both), the program (``argv[0]``, looked up on
        ``PATH``) and the folder of every file or folder its arguments name. Nothing else under ``/tmp`` is
        visible: other attempts' folders, other users' files, test folders."""
        tmp = Path(SANDBOX_TMP)
        scratch = workdir.resolve().parent
        found = [self.cwd, Path(sys.prefix), Path(__file__).resolve().parents[2]]
        program = shutil.which(argv[0], path=os.environ.get("PATH")) if argv else None
        for arg in ([program] if program else []) + list(argv):
            path = Path(arg)
            if path.is_absolute() and path.exists():
                found.append(path if path.is_dir() else path.parent)
        kept: list[Path] = []
        for path in found:
            path = path.resolve()
            if (tmp in path.parents and scratch != path and scratch not in path.parents
                    and path.is_dir() and path not in kept):
                kept.append(path)
        return sorted(kept, key=lambda p: len(p.parts))

    def command(self, argv: Sequence[str], *, workdir: Path) -> list[str]:
        """The argv that runs ``argv`` in the sandbox with ``workdir`` writable (unchanged when unconfined)."""
        if not self.confined:
            return list(argv)
        args = [str(self.bwrap), *_namespace_args(), "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
                "--tmpfs", SANDBOX_TMP]
        for path in self.kept_in_tmp(argv, workdir):
            args += ["--ro-bind", str(path), str(path)]
        hidden = [p.path for p in self.protected if p.path.is_dir()]
        for item in self.protected:
            if any(folder in item.path.parents for folder in hidden):
                continue  # inside a folder already hidden (and read-only)
            if item.path.is_dir():
                args += ["--tmpfs", str(item.path), "--remount-ro", str(item.path)]
            elif item.path.exists():
                args += ["--ro-bind", "/dev/null", str(item.path)]
        args += ["--bind", str(workdir), str(workdir)]
        if self.home is not None:
            args += ["--bind", str(self.home), str(self.home), "--setenv", "HOME", str(self.home)]
        else:
            args += ["--dir", SANDBOX_HOME, "--setenv", "HOME", SANDBOX_HOME]
        args += ["--setenv", "TMPDIR", SANDBOX_TMP, "--chdir", str(self.cwd.resolve()), "--", *argv]
        return args


def make_sandbox(*, unconfined: bool, protected: list[Protected], cwd: Path, home: Path | None = None,
                 bwrap: str | None = None) -> Sandbox:
    """The sandbox of a harness run: bubblewrap when it works here; otherwise a refusal unless ``unconfined``.

    Raises:
        ConfinementError: No sandbox here and ``unconfined`` is False, or :meth:`Sandbox.check` refuses.
    """
    if unconfined:
        return Sandbox(None, "unconfined: --unconfined was given", cwd=cwd)
    path, version = probe_bwrap(bwrap)
    if path is None:
        raise ConfinementError(f"cannot confine the agent program: {version}; {INSTALL_HINT}")
    box = Sandbox(path, version, protected, cwd.resolve(), home.resolve() if home else None)
    box.check()
    return box


__all__ = ["CHECKOUT_PROTECTED", "DEFAULT_RESULT_FOLDERS", "INSTALL_HINT", "ConfinementError", "Protected", "Sandbox",
           "make_sandbox", "probe_bwrap", "protected_paths", "shipped_data_paths"]
