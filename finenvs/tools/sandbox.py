"""An optional, off-by-default sandbox that runs untrusted Python code for an LLM agent: ``run_python(code)``.

What runs where
---------------
The agent's code never runs in this (host) Python process. Each :meth:`PythonSandbox.run` starts one
`Deno <https://deno.com>`_ process (the ``deno`` wheel from PyPI) that loads
`Pyodide <https://pyodide.org>`_ (CPython compiled to WebAssembly, the ``pyodide`` npm package) and runs
the code there. The process ends after the call; nothing carries over from one call to the next.

The walls, outermost first
--------------------------
* **Deno permissions** are the real wall. Deno is started with ``--allow-read=<the pyodide dir>`` and no
  other permission: no ``--allow-net``, ``--allow-write``, ``--allow-env``, ``--allow-run``,
  ``--allow-ffi``, ``--allow-sys``, ``--allow-import``. ``--no-prompt`` turns every other request into a
  ``PermissionDenied`` error instead of a question on the terminal. The code can reach the JavaScript side
  (``import js``, ``pyodide.code.run_js``) and so the ``Deno`` object, but ``Deno.readTextFile``,
  ``Deno.Command``, ``fetch``, ``node:fs``, ``node:child_process`` and the like are all denied.
* **Offline**: ``--no-remote --no-npm --cached-only --no-config --no-lock --no-code-cache``,
  ``DENO_NO_UPDATE_CHECK=1``; ``pyodide.mjs`` is imported from the local directory by file path. Nothing is
  downloaded at run time: :func:`setup_sandbox` (``finenvs sandbox setup``) puts the Pyodide npm package
  into :func:`sandbox_dir` once, at install time, and checks its sha256.
* **No host filesystem inside Python**: Pyodide's own filesystem is the in-memory MEMFS with the standard
  library zip; nothing of the host is mounted (no NODEFS). ``open('/etc/passwd')`` reads MEMFS, which has no
  such file; ``pyodide_js.mountNodeFS`` exists but its host reads go through Deno's permissions and fail.
* **No persistent state**: each process gets a fresh, private ``DENO_DIR`` that is deleted afterwards.
  Deno keeps ``localStorage`` and the Cache API under ``DENO_DIR/location_data`` without any permission,
  so that path is made a plain file (every write fails) and the runner removes ``localStorage``,
  ``sessionStorage`` and ``caches`` from the global object before the code runs.
* **Limits**: a wall-clock limit on the code (:data:`TIME_LIMIT_S`, after Pyodide has started; the host
  kills the process group), the WebAssembly memory that holds Python's heap is capped by V8's
  ``--wasm-max-mem-pages`` (Python sees a ``MemoryError``), the JavaScript heap by
  ``--max-old-space-size``, and the host kills the process if its resident memory passes a backstop
  (:attr:`PythonSandbox.rss_limit_mb`). Stdout, stderr, the result and the error are each capped at
  :data:`MAX_OUTPUT_CHARS`; code longer than :data:`MAX_CODE_CHARS` is refused.
* **Minimal process**: the code travels on stdin as JSON (never in argv), the environment holds only the
  Deno variables above (no host secrets), and the process runs in its own session.

Only Python's standard library is available (Pyodide's extra wheels such as numpy come from a CDN that
is not used here). The result is one JSON line on the runner's stdout, tagged with a per-call random nonce
so that text the code itself writes to the process stdout cannot pose as the result.

Use::

    from finenvs.tools.sandbox import PythonSandbox, setup_sandbox
    setup_sandbox()                      # once; the CLI spelling is `finenvs sandbox setup`
    PythonSandbox().run("import statistics; statistics.mean([1, 2, 4])")
    # {'ok': True, 'stdout': '', 'stderr': '', 'error': None, 'result': '2.3333333333333335', 'seconds': ...}

This module imports only the standard library (and :mod:`finenvs.errors`).
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from finenvs.errors import FinEnvsError

__all__ = [
    "MAX_CODE_CHARS",
    "MAX_OUTPUT_CHARS",
    "MEMORY_MB",
    "PYODIDE_VERSION",
    "SETUP_COMMAND",
    "TIME_LIMIT_S",
    "PythonSandbox",
    "PYTHON_TOOL_DESCRIPTION",
    "SandboxUnavailable",
    "find_deno",
    "make_snapshot",
    "python_tool",
    "run_python",
    "pyodide_dir",
    "sandbox_dir",
    "sandbox_status",
    "setup_sandbox",
]

#: Wall-clock seconds the code may run, counted from when Pyodide is ready (start-up is not counted).
TIME_LIMIT_S = 10.0
#: Seconds allowed for Deno + Pyodide to start before the code runs (under 1 s from the snapshot on 2 cores).
STARTUP_TIMEOUT_S = 30.0
#: Memory limit in MB: the WebAssembly memory (Python's heap) and, separately, V8's JavaScript heap.
MEMORY_MB = 256
#: Characters kept of each of stdout, stderr, the result's repr and the error text.
MAX_OUTPUT_CHARS = 8_000
#: Longest code accepted, in characters.
MAX_CODE_CHARS = 20_000
#: The Pyodide npm package used (CPython 3.14.2). 314.x ships an ES-module ``pyodide.asm.mjs``, which Deno
#: loads without any CommonJS shim (0.29.x needs ``--unstable-detect-cjs``).
PYODIDE_VERSION = "314.0.7"
#: sha256 of ``npm pack pyodide@314.0.7`` (pyodide-314.0.7.tgz, 6,488,647 bytes).
PYODIDE_TARBALL_SHA256 = "66b7949e5a0cba2250b586d7e368bf12fb482800748d182c4618254b685ffaa0"
#: Files taken from the package (everything Pyodide reads to start, plus its metadata).
PYODIDE_FILES = (
    "pyodide.mjs",
    "pyodide.asm.mjs",
    "pyodide.asm.wasm",
    "python_stdlib.zip",
    "pyodide-lock.json",
    "package.json",
    "README.md",
)
#: The command that installs the sandbox runtime (wired to :func:`setup_sandbox` by the CLI).
SETUP_COMMAND = "finenvs sandbox setup"
#: Environment variable overriding :func:`sandbox_dir`.
SANDBOX_DIR_ENV = "FINENVS_SANDBOX_DIR"

_MARKER = ".finenvs-sandbox.json"
_WASM_PAGE = 65536
_MAX_LINE = 1 << 20  # longest stdout line the host keeps (the result line is far below this)
_STDERR_KEEP = 16_384  # bytes of the Deno process's own stderr kept for diagnostics
_POLL_S = 0.05

# The JavaScript runner. Deno runs it as the main module (which needs no read permission); it reads
# {"nonce", "code", "max_output"} from stdin, loads Pyodide from the directory in argv, prints
# "<nonce> ready", runs the code and prints "<nonce> <result JSON>".
RUNNER_JS = r"""// finenvs sandbox runner: see finenvs/tools/sandbox.py. Deno grants it read access to the Pyodide dir only.
const encoder = new TextEncoder();
const stdout = Deno.stdout;
const exit = Deno.exit;
const now = () => performance.now();
function writeAll(text) {
  const data = encoder.encode(text);
  let off = 0;
  while (off < data.length) off += stdout.writeSync(data.subarray(off));
}
const short = (e, n) => String((e && e.message) || e).slice(0, n);

let payload;
try {
  payload = JSON.parse(await new Response(Deno.stdin.readable).text());
} catch (e) {
  writeAll("- " + JSON.stringify({ ok: false, error: "bad payload: " + short(e, 200) }) + "\n");
  exit(0);
}
const nonce = String(payload.nonce);
const limit = Math.max(1, payload.max_output | 0);
const code = String(payload.code);
const emit = (obj) => { writeAll(nonce + " " + JSON.stringify(obj) + "\n"); exit(0); };

function sink() {
  const dec = new TextDecoder("utf-8");
  let text = "";
  let dropped = 0;
  return {
    isatty: false,
    write(buf) {
      if (text.length <= limit) text += dec.decode(buf, { stream: true });
      else dropped += buf.length;
      return buf.length;
    },
    finish() {
      if (text.length <= limit) text += dec.decode();
      if (text.length > limit) {
        dropped += encoder.encode(text.slice(limit)).length;
        text = text.slice(0, limit);
      }
      return dropped ? text + "\n... [output truncated: " + limit + " characters kept, " + dropped + " more bytes dropped]" : text;
    },
  };
}
const out = sink();
const err = sink();

// Unhandled rejections from code the sandboxed program schedules must not kill the runner before it reports.
globalThis.addEventListener("unhandledrejection", (e) => e.preventDefault());

const HARNESS = `
import sys as _sys
import traceback as _traceback
from pyodide.code import eval_code_async as _eval
import random as _random
_random.seed()  # from os.urandom: a run started from the memory snapshot must not replay its random state

def _cap(text, limit):
    if len(text) <= limit:
        return text
    return text[:limit] + f"\\n... [truncated: {len(text) - limit} more characters]"

def _format(exc, limit):
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != "<sandbox>":
        tb = tb.tb_next
    try:
        text = "".join(_traceback.format_exception(type(exc), exc, tb))
    except BaseException:
        text = type(exc).__name__ + " (its message could not be formatted)"
    return _cap(text.rstrip("\\n"), limit)

async def run(code, limit):
    ns = {"__name__": "__main__"}
    ok, result, error = True, None, None
    try:
        value = await _eval(code, ns, filename="<sandbox>")
        if value is not None:
            try:
                result = _cap(repr(value), limit)
            except BaseException as exc:
                error = "repr() of the last expression failed: " + _format(exc, limit)
    except SystemExit as exc:
        if exc.code not in (None, 0):
            ok, error = False, _cap("SystemExit: " + repr(exc.code), limit)
    except BaseException as exc:
        ok, error = False, _format(exc, limit)
    finally:
        for stream in (_sys.stdout, _sys.stderr, _sys.__stdout__, _sys.__stderr__):
            try:
                stream.flush()
            except BaseException:
                pass
    return (ok, result, error)
`;

let runFn;
const t0 = now();
try {
  const dir = Deno.args[0];
  const { loadPyodide } = await import(new URL("file://" + dir + "/pyodide.mjs").href);
  const options = __OPTIONS__;
  let py;
  if (Deno.args[1]) {
    // The interpreter's memory right after start-up (made by the host from the same files and options, see
    // make_snapshot): loading it skips CPython's own initialisation, about nine tenths of the start-up.
    try {
      py = await loadPyodide({ ...options, _loadSnapshot: await Deno.readFile(Deno.args[1]) });
    } catch {
      py = undefined;  // unreadable or from another build: start the usual way
    }
  }
  if (py === undefined) py = await loadPyodide(options);
  py.setStdout(out);
  py.setStderr(err);
  const ns = py.globals.get("dict")();
  py.runPython(HARNESS, { globals: ns, filename: "<finenvs-harness>" });
  runFn = ns.get("run");
} catch (e) {
  emit({ ok: false, error: "the sandbox failed to start: " + short(e, 2000), stdout: "", stderr: err.finish(), result: null, seconds: 0 });
}
const startup = (now() - t0) / 1000;

// Deno keeps these on disk (under DENO_DIR) without any permission; the host also makes that path unusable.
for (const name of ["localStorage", "sessionStorage", "caches"]) {
  try { delete globalThis[name]; } catch { /* not configurable: the DENO_DIR file still blocks it */ }
}

// A Pyodide fatal error (e.g. os.system() reaching node:child_process, which Deno denies) leaves the run's
// promise pending forever; the event loop then drains and "unload" fires, where the failure is reported.
let diag = "";
const consoleError = console.error.bind(console);
console.error = (...args) => {
  if (diag.length < 8000) diag += args.map((a) => String((a && a.stack) || a)).join(" ") + "\n";
  consoleError(...args);
};
let reported = false;
let t1 = 0;
function report(ok, result, error) {
  if (reported) return;
  reported = true;
  writeAll(nonce + " " + JSON.stringify({ ok: Boolean(ok), stdout: out.finish(), stderr: err.finish(),
    result: result ?? null, error: error ?? null, seconds: (now() - t1) / 1000, startup_seconds: startup }) + "\n");
}
function crashed() {
  const at = diag.indexOf("The cause of the fatal error was:");
  if (at < 0) return "the sandbox process was ended before the code finished (did the code call Deno.exit?)";
  const cause = diag.slice(at + 33).trim().split("\n")[0];
  return "the Python runtime crashed (Pyodide fatal error): " + cause.slice(0, 1000);
}
globalThis.addEventListener("unload", () => report(false, null, crashed()));

writeAll(nonce + " ready\n");
t1 = now();
Promise.resolve()
  .then(() => runFn(code, limit))
  .then((proxy) => {
    const triple = proxy.toJs();
    if (proxy.destroy) proxy.destroy();
    report(triple[0], triple[1], triple[2]);
    exit(0);
  }, (e) => {
    report(false, null, diag.includes("fatal error") ? crashed() : "the Python runtime failed: " + short(e, limit));
    exit(0);
  });
"""

#: How both scripts start Pyodide: the snapshot holds the memory these options produce, so they must agree.
_PYODIDE_OPTIONS_JS = ('{ indexURL: dir + "/", stdin: () => null, packages: [], fullStdLib: false, '
                       'env: { HOME: "/home/pyodide" } }')
RUNNER_JS = RUNNER_JS.replace("__OPTIONS__", _PYODIDE_OPTIONS_JS)

# Makes the memory snapshot: Pyodide started once with the runner's options and nothing else run, its memory
# written to argv[2] (the only path this process may write).
SNAPSHOT_JS = r"""// finenvs sandbox snapshot maker: see finenvs/tools/sandbox.py (make_snapshot). Runs no agent code.
const dir = Deno.args[0];
const { loadPyodide } = await import(new URL("file://" + dir + "/pyodide.mjs").href);
const options = __OPTIONS__;
const py = await loadPyodide({ ...options, _makeSnapshot: true });
await Deno.writeFile(Deno.args[1], py.makeMemorySnapshot());
""".replace("__OPTIONS__", _PYODIDE_OPTIONS_JS)


class SandboxUnavailable(FinEnvsError, RuntimeError):
    """The sandbox runtime (Deno or the Pyodide files) is missing; the message names the command that fixes it."""


# --------------------------------------------------------------------------------------------------
# locations and status


def sandbox_dir() -> Path:
    """The sandbox's cache root: ``$FINENVS_SANDBOX_DIR``, else ``sandbox/`` in the platform's user cache
    folder for finenvs (platformdirs; on Linux ``$XDG_CACHE_HOME/finenvs/sandbox``, else
    ``~/.cache/finenvs/sandbox``). Pyodide lives in ``pyodide-<version>/`` beneath it."""
    from platformdirs import user_cache_path

    env = os.environ.get(SANDBOX_DIR_ENV)
    if env:
        return Path(env).expanduser().resolve()
    return (user_cache_path("finenvs", appauthor=False) / "sandbox").resolve()


def _root(root: Path | str | None) -> Path:
    return Path(root).expanduser().resolve() if root is not None else sandbox_dir()


def pyodide_dir(root: Path | str | None = None) -> Path:
    """The directory holding the Pyodide files (``<root>/pyodide-<version>``): the only path the sandboxed
    process may read. ``root`` defaults to :func:`sandbox_dir`."""
    return _root(root) / f"pyodide-{PYODIDE_VERSION}"


def find_deno() -> str | None:
    """Path of the ``deno`` binary: the ``deno`` wheel's (looked up without importing it at module import),
    else ``$FINENVS_DENO``, else ``deno`` on ``PATH``; None when there is none."""
    explicit = os.environ.get("FINENVS_DENO")
    if explicit:
        return explicit if os.path.isfile(explicit) and os.access(explicit, os.X_OK) else None
    exe = "deno" + (sysconfig.get_config_var("EXE") or "")
    try:
        import deno  # the PyPI wheel; imported lazily, only here

        path = deno.find_deno_bin()
        if path and os.path.isfile(path):
            return os.fsdecode(path)
    except (ImportError, FileNotFoundError, OSError):
        pass
    candidate = os.path.join(sysconfig.get_path("scripts"), exe)
    if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
        return candidate
    return shutil.which("deno")


def _deno_version(deno: str) -> str | None:
    try:
        proc = subprocess.run([deno, "--version"], capture_output=True, text=True, timeout=30,
                              env=_base_env(None), stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None
    first = (proc.stdout or "").splitlines()
    return first[0].strip() if proc.returncode == 0 and first else None


def _snapshot_name() -> str:
    """The current memory snapshot's file name in the Pyodide directory: named by the digest of the script that
    makes it (and so of the start-up options), so a snapshot from other options is never loaded."""
    return f"memory-{hashlib.sha256(SNAPSHOT_JS.encode()).hexdigest()[:16]}.snapshot"


def _is_snapshot_name(name: str) -> bool:
    stem = name[len("memory-"):-len(".snapshot")] if name.startswith("memory-") and name.endswith(".snapshot") else ""
    return len(stem) == 16 and all(c in "0123456789abcdef" for c in stem)


def _read_marker(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((path / _MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def sandbox_status(root: Path | str | None = None, *, verify: bool = False) -> dict[str, Any]:
    """Whether the sandbox can run, and why not.

    Keys: ``available`` (bool), ``reason`` (None or a sentence naming :data:`SETUP_COMMAND`),
    ``deno`` (binary path or None), ``deno_version``, ``pyodide_version``, ``pyodide_dir``,
    ``pyodide_files`` (all present?), and with ``verify=True`` ``verified`` (every file's sha256 matches
    the record written by :func:`setup_sandbox`).
    """
    path = pyodide_dir(root)
    deno = find_deno()
    status: dict[str, Any] = {
        "available": False, "reason": None, "deno": deno, "deno_version": None,
        "pyodide_version": PYODIDE_VERSION, "pyodide_dir": str(path), "pyodide_files": False,
    }
    marker = _read_marker(path)
    missing = [name for name in PYODIDE_FILES if not (path / name).is_file()]
    status["pyodide_files"] = not missing and marker is not None
    reasons = []
    if deno is None:
        reasons.append("the deno binary was not found (pip install deno)")
    else:
        status["deno_version"] = _deno_version(deno)
        if status["deno_version"] is None:
            reasons.append(f"{deno} --version failed")
    if missing or marker is None:
        what = f"missing {', '.join(missing)}" if missing else "setup did not finish"
        reasons.append(f"Pyodide {PYODIDE_VERSION} is not set up in {path} ({what})")
    else:
        # Deno follows symlinks inside an allowed directory: only the regular files setup wrote may be there.
        try:
            entries = {entry.name: entry for entry in os.scandir(path)}
        except OSError:
            entries = {}
        odd = sorted(name for name, entry in entries.items()
                     if (name not in (*PYODIDE_FILES, _MARKER) and not _is_snapshot_name(name))
                     or entry.is_symlink() or not entry.is_file(follow_symlinks=False))
        status["snapshot"] = (path / _snapshot_name()).is_file()
        if odd:
            reasons.append(f"unexpected entries in {path}: {', '.join(odd[:5])}")
    if verify and marker is not None and not missing:
        files = marker.get("files") or {}
        bad = [name for name in PYODIDE_FILES if files.get(name) != _sha256(path / name)]
        status["verified"] = not bad
        if bad:
            reasons.append(f"Pyodide files changed since setup: {', '.join(bad)}")
    if "," in str(path):
        reasons.append(f"the sandbox path {path} contains a comma, which Deno's --allow-read cannot express")
    if reasons:
        status["reason"] = "; ".join(reasons) + f". Run `{SETUP_COMMAND}` (after `pip install deno`)."
    else:
        status["available"] = True
    return status


# --------------------------------------------------------------------------------------------------
# setup (install time; the only step that touches the network, through npm)


def _say(quiet: bool, text: str) -> None:
    if not quiet:
        print(text, file=sys.stderr, flush=True)


def setup_sandbox(dest: Path | str | None = None, *, quiet: bool = False, tarball: Path | str | None = None,
                  force: bool = False) -> Path:
    """Install the Pyodide runtime for the sandbox, once; returns the Pyodide directory.

    Runs ``npm pack pyodide@PYODIDE_VERSION`` in a temporary directory (or uses ``tarball``, a copy of that
    file, for machines without the registry), checks the tarball's sha256 against
    :data:`PYODIDE_TARBALL_SHA256`, and extracts :data:`PYODIDE_FILES` into
    ``<dest or sandbox_dir()>/pyodide-<version>/`` (atomically: a temporary directory renamed into place).
    Already set up: returns at once unless ``force``. Raises :class:`SandboxUnavailable` when npm is missing
    or fails, and ``ValueError`` when the tarball's hash or content is wrong.
    """
    root = _root(dest)
    final = pyodide_dir(dest)
    if not force and _read_marker(final) is not None and all((final / n).is_file() for n in PYODIDE_FILES):
        made = make_snapshot(dest)  # a setup from before the snapshot existed gets one now
        _say(quiet, f"Pyodide {PYODIDE_VERSION} is already set up in {final}"
             + ("" if made is not None else " (no start-up snapshot could be made: every run starts Pyodide in full)"))
        return final
    root.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="finenvs-sandbox-setup-") as tmp:
        tmpdir = Path(tmp)
        if tarball is None:
            npm = shutil.which("npm")
            if npm is None:
                raise SandboxUnavailable(
                    "npm was not found; it is needed once, to fetch the Pyodide package "
                    f"(apt-get install npm, or pass tarball= a copy of pyodide-{PYODIDE_VERSION}.tgz). "
                    f"Then run `{SETUP_COMMAND}`.")
            _say(quiet, f"npm pack pyodide@{PYODIDE_VERSION} ...")
            try:
                proc = subprocess.run([npm, "pack", f"pyodide@{PYODIDE_VERSION}", "--json", "--silent"],
                                      cwd=tmpdir, capture_output=True, text=True, timeout=600,
                                      stdin=subprocess.DEVNULL)
            except (OSError, subprocess.SubprocessError) as exc:
                raise SandboxUnavailable(f"npm pack pyodide@{PYODIDE_VERSION} failed: {exc}") from exc
            found = sorted(tmpdir.glob("pyodide-*.tgz"))
            if proc.returncode != 0 or not found:
                tail = (proc.stderr or proc.stdout or "").strip()[-600:]
                raise SandboxUnavailable(f"npm pack pyodide@{PYODIDE_VERSION} failed "
                                         f"(exit {proc.returncode}): {tail}")
            tgz = found[0]
        else:
            tgz = Path(tarball)
        digest = _sha256(tgz)
        if digest != PYODIDE_TARBALL_SHA256:
            raise ValueError(f"{tgz.name}: sha256 {digest} is not the pinned {PYODIDE_TARBALL_SHA256} "
                             f"of pyodide-{PYODIDE_VERSION}.tgz")
        staging = Path(tempfile.mkdtemp(prefix=f".pyodide-{PYODIDE_VERSION}-", dir=root))
        try:
            hashes: dict[str, str] = {}
            with tarfile.open(tgz, "r:gz") as tar:
                for name in PYODIDE_FILES:
                    try:
                        member = tar.getmember(f"package/{name}")
                    except KeyError as exc:
                        raise ValueError(f"{tgz.name} has no package/{name}") from exc
                    if not member.isfile():
                        raise ValueError(f"{tgz.name}: package/{name} is not a regular file")
                    source = tar.extractfile(member)
                    assert source is not None
                    with source, open(staging / name, "wb") as fh:
                        shutil.copyfileobj(source, fh)
                    hashes[name] = _sha256(staging / name)
            marker = {"pyodide_version": PYODIDE_VERSION, "tarball_sha256": digest,
                      "tarball_bytes": tgz.stat().st_size, "files": hashes, "created": time.time()}
            (staging / _MARKER).write_text(json.dumps(marker, indent=1), encoding="utf-8")
            os.chmod(staging, 0o755)
            if final.exists():
                shutil.rmtree(final)
            os.replace(staging, final)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
    current = {_script_name("runner", RUNNER_JS), _script_name("snapshot", SNAPSHOT_JS)}
    for stale in root.glob("finenvs-sandbox-*.mjs"):  # scripts written by older versions
        if stale.name not in current:
            stale.unlink(missing_ok=True)
    made = make_snapshot(dest)
    _say(quiet, f"Pyodide {PYODIDE_VERSION} set up in {final} ({time.monotonic() - started:.1f} s; "
         + ("with its start-up memory snapshot)" if made is not None else
            "no start-up snapshot could be made, so every run starts Pyodide in full)"))
    return final


_SNAPSHOT_FAILED: set[str] = set()  # Pyodide dirs whose snapshot could not be made in this process


def make_snapshot(root: Path | str | None = None, *, status: dict[str, Any] | None = None,
                  timeout: float = 120.0) -> Path | None:
    """Make the start-up memory snapshot in the Pyodide directory, once; returns its path, or None when it could
    not be made (the sandbox then starts Pyodide in full on every run, about ten times the CPU).

    A Deno process starts Pyodide with the runner's options, runs nothing else and writes the interpreter's
    memory (about 30 MB) to a file beside the Pyodide directory, the only path it may write; the file is then
    renamed into the directory. Each run loads it instead of initialising CPython again (0.3 s of CPU instead of
    3 s on the 2-core machine). The runner reseeds :mod:`random` from ``os.urandom``; str hashes keep the
    snapshot's seed (the same on every run on this machine). Called by :func:`setup_sandbox` and by the first
    :meth:`PythonSandbox.run` that finds no snapshot (``status``: :func:`sandbox_status` of ``root``, when the
    caller has it)."""
    status = status if status is not None else sandbox_status(root)
    if not status["available"]:
        return None
    pyo = Path(status["pyodide_dir"])
    path = pyo / _snapshot_name()
    if path.is_file():
        return path
    if str(pyo) in _SNAPSHOT_FAILED:
        return None
    folder = _root(root)
    try:
        script = _write_script(folder, "snapshot", SNAPSHOT_JS)
        staging = Path(tempfile.mkdtemp(prefix=".snapshot-", dir=folder))
    except (OSError, SandboxUnavailable):
        _SNAPSHOT_FAILED.add(str(pyo))
        return None
    deno_dir = tempfile.mkdtemp(prefix="finenvs-sandbox-deno-")
    try:
        target = staging / "memory.snapshot"
        proc = subprocess.run(
            [status["deno"], "run", "--no-config", "--no-lock", "--no-remote", "--no-npm", "--cached-only",
             "--no-code-cache", "--no-prompt", f"--allow-read={pyo}", f"--allow-write={target}",
             str(script), str(pyo), str(target)],
            capture_output=True, timeout=timeout, env=_base_env(deno_dir), cwd=deno_dir, stdin=subprocess.DEVNULL)
        if proc.returncode != 0 or not target.is_file() or target.stat().st_size == 0:
            _SNAPSHOT_FAILED.add(str(pyo))
            return None
        os.chmod(target, 0o644)
        os.replace(target, path)
        for old in pyo.glob("memory-*.snapshot"):  # made for other start-up options
            if old.name != path.name:
                old.unlink(missing_ok=True)
        return path
    except (OSError, subprocess.SubprocessError):
        _SNAPSHOT_FAILED.add(str(pyo))
        return None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        shutil.rmtree(deno_dir, ignore_errors=True)


# --------------------------------------------------------------------------------------------------
# running code


def _base_env(deno_dir: str | None) -> dict[str, str]:
    """The whole environment of a Deno process: no host variables (no secrets, no proxies)."""
    env = {"DENO_NO_UPDATE_CHECK": "1", "DENO_NO_PROMPT": "1", "NO_COLOR": "1", "LANG": "C.UTF-8"}
    if deno_dir is not None:
        env["DENO_DIR"] = deno_dir
        env["HOME"] = deno_dir
    return env


def _clean(text: Any) -> str:
    """A str with lone surrogates replaced, so the result is always encodable."""
    if not isinstance(text, str):
        text = "" if text is None else str(text)
    return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


def _fail(error: str, **extra: Any) -> dict[str, Any]:
    out = {"ok": False, "stdout": "", "stderr": "", "error": error, "result": None, "seconds": 0.0}
    out.update(extra)
    return out


def _rss_mb(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except (OSError, ValueError, IndexError):
        return None
    return None


class _StdoutReader(threading.Thread):
    """Reads the Deno process's stdout: notes the ready line and keeps the result line; drops the rest."""

    def __init__(self, fd: int, nonce: str) -> None:
        super().__init__(daemon=True)
        self.fd = fd
        self.ready_line = f"{nonce} ready".encode()
        self.result_prefix = f"{nonce} ".encode()
        self.ready = threading.Event()
        self.done = threading.Event()
        self.result: bytes | None = None
        self.ready_at: float | None = None
        self.stray_bytes = 0

    def _line(self, line: bytes) -> None:
        if line == self.ready_line:
            self.ready_at = time.monotonic()
            self.ready.set()
        elif line.startswith(self.result_prefix) and self.result is None:
            self.result = line[len(self.result_prefix):]
        else:
            self.stray_bytes += len(line) + 1

    def run(self) -> None:
        buf = bytearray()
        skipping = False
        try:
            while True:
                chunk = os.read(self.fd, 65536)
                if not chunk:
                    break
                buf += chunk
                while True:
                    cut = buf.find(b"\n")
                    if cut < 0:
                        break
                    if skipping:
                        self.stray_bytes += cut + 1
                        skipping = False
                    else:
                        self._line(bytes(buf[:cut]))
                    del buf[: cut + 1]
                if len(buf) > _MAX_LINE:  # an endless line: not ours; drop it up to its newline
                    self.stray_bytes += len(buf)
                    buf.clear()
                    skipping = True
            if buf and not skipping:
                self._line(bytes(buf))
        except OSError:
            pass
        finally:
            self.done.set()


class _StderrReader(threading.Thread):
    def __init__(self, fd: int) -> None:
        super().__init__(daemon=True)
        self.fd = fd
        self.kept = bytearray()

    def run(self) -> None:
        try:
            while True:
                chunk = os.read(self.fd, 65536)
                if not chunk:
                    break
                room = _STDERR_KEEP - len(self.kept)
                if room > 0:
                    self.kept += chunk[:room]
        except OSError:
            pass


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError, OSError):
        try:
            proc.kill()
        except OSError:
            pass


def _script_name(kind: str, text: str) -> str:
    return f"finenvs-sandbox-{kind}-{hashlib.sha256(text.encode()).hexdigest()[:16]}.mjs"


def _write_script(folder: Path, kind: str, text: str) -> Path:
    """``text`` as a script file in ``folder`` (else the temp directory), named by its digest; returns its path."""
    for place in (folder, Path(tempfile.gettempdir())):
        path = place / _script_name(kind, text)
        try:
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                fd, tmp = tempfile.mkstemp(prefix=f".{kind}-", suffix=".mjs", dir=place)
                with os.fdopen(fd, "w", encoding="utf-8") as fh:
                    fh.write(text)
                os.replace(tmp, path)
            return path
        except OSError:
            continue
    raise SandboxUnavailable(f"cannot write the sandbox {kind} script to the sandbox or temp directory")


# Hand-written on purpose: no maintained package runs an agent's Python in Deno+Pyodide as a plain function
# call with these walls (Deno read-only permission on Pyodide alone, no network, time and output caps).
class PythonSandbox:
    """Runs agent code in Pyodide under Deno, one process per :meth:`run`.

    ``PythonSandbox()`` never raises; :attr:`available` says whether the runtime is installed and
    :meth:`run` raises :class:`SandboxUnavailable` (naming :data:`SETUP_COMMAND`) when it is not. For any
    agent input, :meth:`run` returns a dict and never raises.
    """

    def __init__(self, root: Path | str | None = None, *, time_limit: float = TIME_LIMIT_S,
                 memory_mb: int = MEMORY_MB, max_output: int = MAX_OUTPUT_CHARS,
                 max_code: int = MAX_CODE_CHARS, startup_timeout: float = STARTUP_TIMEOUT_S,
                 rss_limit_mb: int | None = None) -> None:
        self.root = root
        self.time_limit = float(time_limit)
        self.memory_mb = int(memory_mb)
        self.max_output = int(max_output)
        self.max_code = int(max_code)
        self.startup_timeout = float(startup_timeout)
        #: Host-side backstop on the process's resident memory: Deno + Pyodide take about 190 MB before any
        #: code runs, then up to ``memory_mb`` of WebAssembly memory and ``memory_mb`` of JavaScript heap.
        self.rss_limit_mb = int(rss_limit_mb) if rss_limit_mb is not None else 2 * self.memory_mb + 512
        self._status: dict[str, Any] | None = None
        self._runner: Path | None = None

    # -- availability ------------------------------------------------------------------------------

    def status(self, refresh: bool = False) -> dict[str, Any]:
        """:func:`sandbox_status` for this sandbox's root (cached after the first call)."""
        if self._status is None or refresh:
            self._status = sandbox_status(self.root)
        return self._status

    @property
    def available(self) -> bool:
        return bool(self.status()["available"])

    def ensure_available(self) -> None:
        """Raise :class:`SandboxUnavailable` with the reason and the fixing command when not available."""
        status = self.status()
        if not status["available"]:
            self._status = None  # look again next time (setup may run meanwhile)
            raise SandboxUnavailable(f"the Python sandbox is not available: {status['reason']}")

    def _runner_path(self) -> Path:
        """The runner script, written next to the Pyodide directory (outside what the sandbox may read)."""
        if self._runner is None or not self._runner.is_file():
            self._runner = _write_script(_root(self.root), "runner", RUNNER_JS)
        return self._runner

    # -- running -----------------------------------------------------------------------------------

    def check_code(self, code: Any) -> tuple[str | None, str | None]:
        """``(code, None)`` when acceptable, else ``(None, a short message that does not echo the code)``."""
        if not isinstance(code, str):
            return None, f"code must be a string of Python source, not {type(code).__name__}"
        try:
            code = str.__str__(code)  # a plain str, whatever subclass came in
        except Exception:
            return None, "code must be a plain string"
        if len(code) > self.max_code:
            return None, f"code is {len(code):,} characters; the limit is {self.max_code:,}"
        if not code.strip():
            return None, "code is empty"
        if "\x00" in code:
            return None, "code contains a NUL character"
        try:
            code.encode("utf-8")
        except UnicodeEncodeError:
            return None, "code contains an unpaired surrogate and is not valid text"
        return code, None

    def run(self, code: Any) -> dict[str, Any]:
        """Run ``code`` in a fresh sandbox process and return its outcome.

        Returns ``{"ok", "stdout", "stderr", "error", "result", "seconds"}``: ``result`` is the ``repr`` of
        the last expression (None when there is none or it is None), ``error`` a traceback or the reason the
        run was stopped, ``seconds`` the code's own run time; plus ``startup_seconds`` and ``wall_seconds``.
        Every text is capped at ``max_output`` characters. Raises only :class:`SandboxUnavailable`.
        """
        self.ensure_available()
        checked, problem = self.check_code(code)
        if problem is not None:
            return _fail(problem)
        try:
            return self._run(checked or "")
        except SandboxUnavailable:
            raise
        except Exception as exc:  # a host-side failure (fork, pipes): report it, never raise to the agent
            return _fail(f"the sandbox could not run the code: {type(exc).__name__}: {str(exc)[:300]}")

    def _command(self, deno: str, runner: Path, pyo: Path, snapshot: Path | None = None) -> list[str]:
        """The Deno command line; ``snapshot``, a file inside ``pyo`` (readable under the same permission), is the
        start-up memory the runner loads."""
        pages = max(1, (self.memory_mb * 1024 * 1024) // _WASM_PAGE)
        return [
            deno, "run",
            "--no-config", "--no-lock", "--no-remote", "--no-npm", "--cached-only", "--no-code-cache",
            "--no-prompt",
            f"--allow-read={pyo}",
            f"--v8-flags=--max-old-space-size={self.memory_mb},--wasm-max-mem-pages={pages}",
            str(runner), str(pyo), *([str(snapshot)] if snapshot is not None else []),
        ]

    def _run(self, code: str) -> dict[str, Any]:
        status = self.status()
        deno, pyo = status["deno"], Path(status["pyodide_dir"])
        runner = self._runner_path()
        snapshot = make_snapshot(self.root, status=status)  # made once per machine; None: start Pyodide in full
        nonce = secrets.token_hex(16)
        payload = json.dumps({"nonce": nonce, "code": code, "max_output": self.max_output}).encode()
        deno_dir = tempfile.mkdtemp(prefix="finenvs-sandbox-deno-")
        started = time.monotonic()
        try:
            # localStorage and the Cache API live under DENO_DIR/location_data and need no permission:
            # a plain file there makes every such write fail.
            Path(deno_dir, "location_data").write_bytes(b"")
            proc = subprocess.Popen(
                self._command(deno, runner, pyo, snapshot), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, env=_base_env(deno_dir), cwd=deno_dir, close_fds=True,
                start_new_session=True)
            try:
                return self._supervise(proc, payload, nonce, started)
            finally:
                if proc.poll() is None:
                    _kill_group(proc)
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    pass
                for pipe in (proc.stdin, proc.stdout, proc.stderr):
                    try:
                        if pipe is not None:
                            pipe.close()
                    except OSError:
                        pass
        finally:
            shutil.rmtree(deno_dir, ignore_errors=True)

    def _supervise(self, proc: subprocess.Popen, payload: bytes, nonce: str, started: float) -> dict[str, Any]:
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        out = _StdoutReader(proc.stdout.fileno(), nonce)
        err = _StderrReader(proc.stderr.fileno())
        out.start()
        err.start()

        def feed() -> None:
            try:
                proc.stdin.write(payload)  # type: ignore[union-attr]
                proc.stdin.close()  # type: ignore[union-attr]
            except (OSError, ValueError):
                pass

        writer = threading.Thread(target=feed, daemon=True)
        writer.start()
        stopped: str | None = None
        peak_rss = 0.0
        while not out.done.is_set():
            now = time.monotonic()
            if out.ready_at is None and now - started > self.startup_timeout:
                stopped = f"the sandbox did not start within {self.startup_timeout:g} s"
            elif out.ready_at is not None and now - out.ready_at > self.time_limit:
                stopped = (f"time limit exceeded: the code ran for more than {self.time_limit:g} s "
                           "and was stopped")
            else:
                rss = _rss_mb(proc.pid)
                if rss is not None:
                    peak_rss = max(peak_rss, rss)
                    if rss > self.rss_limit_mb:
                        stopped = (f"memory limit exceeded: the sandbox process used {rss:.0f} MB "
                                   f"(limit {self.rss_limit_mb} MB) and was stopped")
            if stopped is not None:
                _kill_group(proc)
                break
            out.done.wait(_POLL_S)
        out.join(timeout=5)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
        err.join(timeout=5)
        writer.join(timeout=1)
        wall = time.monotonic() - started
        ran = time.monotonic() - out.ready_at if out.ready_at is not None else 0.0
        extra = {"wall_seconds": round(wall, 3)}
        if stopped is not None:
            return _fail(stopped, seconds=round(ran, 3), **extra)
        if out.result is not None:
            try:
                data = json.loads(out.result.decode("utf-8", "replace"))
            except ValueError:
                data = None
            if isinstance(data, dict):
                return self._shape(data, extra)
        return _fail(self._death_reason(proc.returncode, bytes(err.kept)), seconds=round(ran, 3), **extra)

    def _shape(self, data: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
        limit = self.max_output + 200  # the runner already capped; this bounds a forged or odd line
        def text(key: str) -> str | None:
            value = data.get(key)
            return None if value is None else _clean(value)[:limit]
        seconds = data.get("seconds")
        startup = data.get("startup_seconds")
        out = {
            "ok": data.get("ok") is True,
            "stdout": text("stdout") or "",
            "stderr": text("stderr") or "",
            "error": text("error"),
            "result": text("result"),
            "seconds": round(float(seconds), 3) if isinstance(seconds, (int, float)) else 0.0,
        }
        if isinstance(startup, (int, float)):
            out["startup_seconds"] = round(float(startup), 3)
        out.update(extra)
        return out

    def _death_reason(self, returncode: int | None, stderr: bytes) -> str:
        text = _clean(stderr.decode("utf-8", "replace"))
        if "out of memory" in text.lower() or "heap limit" in text.lower():
            return (f"memory limit exceeded: the JavaScript heap passed {self.memory_mb} MB "
                    "and the sandbox process was stopped")
        if returncode is not None and returncode < 0:
            try:
                name = signal.Signals(-returncode).name
            except ValueError:
                name = str(-returncode)
            return f"the sandbox process was killed by {name} before it reported a result"
        tail = " ".join(text.split())[-400:]
        return (f"the sandbox process exited (code {returncode}) without a result"
                + (f": {tail}" if tail else ""))


# ---------------------------------------------------------------------------- the agent tool
#: What an agent reads about the tool.
PYTHON_TOOL_DESCRIPTION = (
    "Run Python code in a sandbox (CPython 3.14 in WebAssembly under Deno) and get its printed output, the value "
    "of its last expression and any error. Standard library only (math, statistics, decimal, fractions, datetime, "
    "json, itertools, ...): no numpy or pandas, no host files (only an empty in-memory filesystem), no network, "
    "no processes. Each call starts a fresh "
    f"interpreter (about 1 s; nothing persists between calls); limits: {TIME_LIMIT_S:g} s of run time, "
    f"{MEMORY_MB} MB, {MAX_OUTPUT_CHARS:,} characters of output, {MAX_CODE_CHARS:,} characters of code. It reads "
    "no data: pass it the numbers you got from the other tools.")


def run_python(ctx: Any, code: Any = None) -> dict[str, Any]:
    """The ``run_python`` tool: ``code`` run by :class:`PythonSandbox` (its result dict; never raises for what
    the agent sends; a missing setup is an error result naming the setup command)."""
    sandbox = PythonSandbox()
    if not sandbox.available:
        return {"ok": False, "error": f"the Python sandbox is not set up on this machine: "
                f"{sandbox.status().get('reason')}"}
    return sandbox.run(code)


def python_tool() -> Any:
    """The opt-in ``run_python`` tool (:class:`finenvs.tools.registry.Tool`) for a :class:`~finenvs.tools.ToolBox`'s
    ``extra`` tools (``TextInterface(..., python=True)``, ``finenvs llm --python``)."""
    from finenvs.tools.registry import Tool

    return Tool("run_python", PYTHON_TOOL_DESCRIPTION,
                {"type": "object", "properties": {"code": {"type": "string", "description": "Python source; the "
                                                           "value of a final expression is returned"}},
                 "required": ["code"], "additionalProperties": False},
                run_python, summary="run standard-library Python in a sandbox (no data, no files, no network)")
