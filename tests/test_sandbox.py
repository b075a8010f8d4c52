"""The Python sandbox (finenvs.tools.sandbox): Pyodide under Deno, one process per call.

The tests that run code need the runtime (``pip install deno`` and ``finenvs sandbox setup``) and skip
with the reason from :func:`sandbox_status` when it is missing; the rest (input checks, the Deno command
line, setup's hash check, the module's imports) always run. Each ``run`` starts a Deno process and loads
Pyodide from its start-up memory snapshot (about 0.5 s of CPU; 3 s without the snapshot), so the escape checks
are batched: one run tries many things, each inside its own ``try``, and the host checks every outcome.
"""

from __future__ import annotations

import ast
import builtins
import io
import sys
import tarfile
from pathlib import Path

import pytest

from finenvs.tools import sandbox as sb
from finenvs.tools.sandbox import PythonSandbox, SandboxUnavailable, sandbox_status

ROOT = Path(__file__).resolve().parents[1]
MANIFEST = ROOT / "envs_data" / "MANIFEST.json"

_STATUS = sandbox_status()
needs_runtime = pytest.mark.skipif(
    not _STATUS["available"], reason=f"Python sandbox runtime not installed: {_STATUS['reason']}")


@pytest.fixture(scope="module")
def box() -> PythonSandbox:
    return PythonSandbox()


def _outcomes(result: dict) -> dict[str, str]:
    """The dict of check name -> outcome that the batched escape programs return as their last expression."""
    assert result["ok"], result
    outcomes = ast.literal_eval(result["result"])
    assert isinstance(outcomes, dict)
    return outcomes


# A prelude for batched checks: t(name, fn) records "SUCCEEDED: ..." or "<Exception>: message".
PRELUDE = '''
out = {}
async def t(name, fn):
    try:
        value = fn()
        if hasattr(value, "then"):
            value = await value
        out[name] = "SUCCEEDED: " + repr(value)[:200]
    except BaseException as exc:
        out[name] = type(exc).__name__ + ": " + str(exc)[:300]
'''


# ------------------------------------------------------------------------------------------------------
# no runtime needed


def test_module_imports_only_the_standard_library_and_finenvs_errors():
    tree = ast.parse(Path(sb.__file__).read_text(encoding="utf-8"))
    top = set()
    for node in tree.body:  # module level only: `import deno` inside find_deno() is lazy on purpose
        if isinstance(node, ast.Import):
            top |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            top.add((node.module or "").split(".")[0])
    assert top - {"__future__", "finenvs"} <= set(sys.stdlib_module_names), top
    assert {n.module for n in tree.body if isinstance(n, ast.ImportFrom) and (n.module or "").startswith("finenvs")
            } == {"finenvs.errors"}


def test_deno_command_grants_read_of_the_pyodide_dir_only(tmp_path):
    box = PythonSandbox(tmp_path, memory_mb=128)
    pyo = sb.pyodide_dir(tmp_path)
    cmd = box._command("/usr/bin/deno", tmp_path / "runner.mjs", pyo)
    allows = [arg for arg in cmd if arg.startswith(("--allow", "-A"))]
    assert allows == [f"--allow-read={pyo}"]
    for flag in ("--no-remote", "--no-npm", "--cached-only", "--no-config", "--no-lock", "--no-prompt"):
        assert flag in cmd
    assert "--v8-flags=--max-old-space-size=128,--wasm-max-mem-pages=2048" in cmd
    snapshot = pyo / sb._snapshot_name()
    with_snapshot = box._command("/usr/bin/deno", tmp_path / "runner.mjs", pyo, snapshot)
    assert with_snapshot == [*cmd, str(snapshot)]  # one more argument, read under the same permission
    assert sb._is_snapshot_name(snapshot.name) and snapshot.parent == pyo
    env = sb._base_env(str(tmp_path))
    assert set(env) == {"DENO_NO_UPDATE_CHECK", "DENO_NO_PROMPT", "NO_COLOR", "LANG", "DENO_DIR", "HOME"}


def test_missing_runtime_raises_with_the_setup_command(tmp_path):
    box = PythonSandbox(tmp_path / "empty")
    assert box.available is False
    assert sb.SETUP_COMMAND in box.status()["reason"]
    with pytest.raises(SandboxUnavailable, match="finenvs sandbox setup"):
        box.run("1 + 1")


@pytest.mark.parametrize("code, message", [
    (None, "must be a string"),
    (b"print(1)", "not bytes"),
    (["1"], "not list"),
    ("", "empty"),
    ("x = 1\x00", "NUL"),
    ("'\ud800'", "surrogate"),
    ("#" * (sb.MAX_CODE_CHARS + 1), "the limit is 20,000"),
    ("A" * 5_000_000, "the limit is 20,000"),
])
def test_bad_code_is_refused_without_echoing_it(code, message):
    checked, problem = PythonSandbox().check_code(code)
    assert checked is None and message in problem
    assert len(problem) < 200  # never echoes the input


@needs_runtime
def test_run_returns_a_failure_for_bad_code(box):
    result = box.run(b"print(1)")
    assert result == {"ok": False, "stdout": "", "stderr": "", "result": None, "seconds": 0.0,
                      "error": "code must be a string of Python source, not bytes"}


def test_setup_checks_the_tarball_hash(tmp_path):
    fake = tmp_path / "pyodide-fake.tgz"
    with tarfile.open(fake, "w:gz") as tar:
        data = b"export const loadPyodide = () => null;\n"
        info = tarfile.TarInfo("package/pyodide.mjs")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    with pytest.raises(ValueError, match="sha256"):
        sb.setup_sandbox(tmp_path / "root", tarball=fake, quiet=True)
    assert not sb.pyodide_dir(tmp_path / "root").exists()


def _empty_pyodide_dir(tmp_path: Path, monkeypatch) -> Path:
    """A set-up-looking Pyodide folder of empty files (no Deno): enough for the status check's entry rules."""
    monkeypatch.setattr(sb, "find_deno", lambda: None)
    pyo = sb.pyodide_dir(tmp_path)
    pyo.mkdir(parents=True)
    for name in sb.PYODIDE_FILES:
        (pyo / name).write_bytes(b"")
    (pyo / sb._MARKER).write_text("{}")
    return pyo


def test_an_extra_entry_in_the_pyodide_dir_makes_it_unavailable(tmp_path, monkeypatch):
    pyo = _empty_pyodide_dir(tmp_path, monkeypatch)
    (pyo / "host").symlink_to("/")
    status = sandbox_status(tmp_path)
    assert status["available"] is False and "unexpected entries" in status["reason"] and "host" in status["reason"]


@pytest.mark.parametrize("name, link", [("memory-0123456789abcdef.snapshot", True), ("memory-x.snapshot", False),
                                         ("memory-0123456789abcdeg.snapshot", False)])
def test_only_a_regular_file_with_a_snapshot_name_may_join_the_pyodide_files(tmp_path, monkeypatch, name, link):
    pyo = _empty_pyodide_dir(tmp_path, monkeypatch)
    (pyo / sb._snapshot_name()).write_bytes(b"")
    assert "unexpected entries" not in (sandbox_status(tmp_path)["reason"] or "")  # the snapshot is expected
    if link:
        (pyo / name).symlink_to("/etc/passwd")
    else:
        (pyo / name).write_bytes(b"")
    status = sandbox_status(tmp_path)
    assert "unexpected entries" in status["reason"] and name in status["reason"]


def test_setup_without_npm_names_the_fix(tmp_path, monkeypatch):
    monkeypatch.setattr(sb.shutil, "which", lambda name: None)
    with pytest.raises(SandboxUnavailable, match="npm"):
        sb.setup_sandbox(tmp_path / "root", quiet=True)


# ------------------------------------------------------------------------------------------------------
# running code


@needs_runtime
def test_stdlib_result_and_print_capture_and_the_host_is_untouched(box, monkeypatch):
    code_calls = []
    for name in ("exec", "eval", "compile"):
        real = getattr(builtins, name)

        def spy(*args, _real=real, **kwargs):
            if args and isinstance(args[0], str) and "FINENVS_SANDBOX_MARKER" in args[0]:
                code_calls.append(args[0])
            return _real(*args, **kwargs)
        monkeypatch.setattr(builtins, name, spy)
    code = (
        "import builtins, statistics, sys\n"
        "from decimal import Decimal\n"
        "from fractions import Fraction\n"
        "builtins.FINENVS_SANDBOX_MARKER = 'set'\n"
        "globals()['FINENVS_SANDBOX_MARKER'] = 'set'\n"
        "print('hello', 6 * 7)\n"
        "print('careful', file=sys.stderr)\n"
        "(2 ** 100, statistics.mean([1, 2, 4]), statistics.median([3, 1, 2]), "
        "Decimal('0.1') + Decimal('0.2'), Fraction(1, 3) + Fraction(1, 6), sys.version_info[:2])\n"
    )
    result = box.run(code)
    assert result["ok"] is True, result
    assert result["stdout"] == "hello 42\n"
    assert result["stderr"] == "careful\n"
    assert result["error"] is None
    assert result["result"] == ("(1267650600228229401496703205376, 2.3333333333333335, 2, Decimal('0.3'), "
                                "Fraction(1, 2), (3, 14))")
    assert isinstance(result["seconds"], float) and 0 <= result["seconds"] < sb.TIME_LIMIT_S
    assert not hasattr(builtins, "FINENVS_SANDBOX_MARKER")
    assert "FINENVS_SANDBOX_MARKER" not in globals()
    assert code_calls == []  # the host never compiled or ran the code


@needs_runtime
def test_output_and_result_are_capped(box):
    result = box.run("for i in range(20000): print('line', i)\n'r' * 100000")
    assert result["ok"] is True
    cap = sb.MAX_OUTPUT_CHARS
    assert result["stdout"].startswith("line 0\nline 1\n")
    assert cap < len(result["stdout"]) <= cap + 200 and "output truncated" in result["stdout"]
    assert len(result["result"]) <= cap + 200 and "truncated" in result["result"]


@needs_runtime
def test_an_exception_is_a_clean_failure_with_the_code_frames_only(box):
    result = box.run("x = 1\n\ndef f():\n    raise ValueError('boom')\nprint('before')\nf()\n")
    assert result["ok"] is False
    assert result["stdout"] == "before\n"
    assert result["error"].splitlines()[-1] == "ValueError: boom"
    assert 'File "<sandbox>", line 6' in result["error"] and "_pyodide" not in result["error"]


@needs_runtime
def test_filesystem_deno_and_process_escapes_fail(box):
    code = PRELUDE + f'''
import os, pathlib, socket, subprocess, js, pyodide_js
from pyodide.code import run_js
await t("open_manifest", lambda: open({str(MANIFEST)!r}).read())
await t("pathlib_passwd", lambda: pathlib.Path("/etc/passwd").read_text())
await t("listdir_root", lambda: sorted(os.listdir("/")))
await t("deno_read_manifest", lambda: js.Deno.readTextFileSync({str(MANIFEST)!r}))
await t("deno_read_passwd", lambda: js.Deno.readTextFile("/etc/passwd"))
await t("deno_readdir", lambda: list(js.Deno.readDirSync("/")))
await t("deno_read_parent", lambda: list(js.Deno.readDirSync(str(js.Deno.args[0]) + "/..")))
await t("deno_write", lambda: js.Deno.writeTextFileSync("/tmp/finenvs-sandbox-escape", "x"))
await t("deno_env", lambda: js.Deno.env.get("HOME"))
await t("deno_command", lambda: run_js("new Deno.Command('/bin/sh', {{args: ['-c', 'touch /tmp/finenvs-sandbox-escape']}}).outputSync()"))
await t("deno_ffi", lambda: run_js("Deno.dlopen('libc.so.6', {{}})"))
await t("deno_sys", lambda: js.Deno.hostname())
await t("deno_listen", lambda: run_js("Deno.listen({{port: 8765}})"))
await t("permission_request", lambda: run_js("Deno.permissions.requestSync({{name: 'read'}}).state"))
await t("mount_host_fs", lambda: pyodide_js.mountNodeFS("/mnt", {str(ROOT)!r}))
await t("socket_local", lambda: socket.create_connection(("127.0.0.1", 8000), timeout=2))
await t("socket_pypi", lambda: socket.create_connection(("pypi.org", 443), timeout=2))
await t("fork", lambda: os.fork())
await t("subprocess", lambda: subprocess.run(["id"]))
await t("alloc_10gb", lambda: len(bytearray(10**10)))
await t("alloc_1gb", lambda: len(bytearray(10**9)))
await t("input", lambda: input())
out
'''
    got = _outcomes(box.run(code))
    denied = "NotCapable: Requires"
    expect = {
        # Python's own filesystem is Pyodide's in-memory one: the host's files are simply not there
        "open_manifest": "FileNotFoundError", "pathlib_passwd": "FileNotFoundError",
        # Deno's permissions deny every host resource, reached through `js`
        "deno_read_manifest": f'{denied} read access to "{MANIFEST}"',
        "deno_read_passwd": f'{denied} read access to "/etc/passwd"',
        "deno_readdir": f'{denied} read access to "/"',
        "deno_read_parent": f'{denied} read access to "{sb.pyodide_dir().parent}"',
        "deno_write": f"{denied} write access", "deno_env": f"{denied} env access",
        "deno_command": f"{denied} run access", "deno_ffi": f"{denied} ffi access",
        "deno_sys": f"{denied} sys access", "deno_listen": f"{denied} net access",
        "mount_host_fs": "does not exist",  # stat of the host path is denied, so it looks absent
        "socket_local": "OSError", "socket_pypi": "OSError",
        "fork": "OSError", "subprocess": "OSError",
        "alloc_10gb": "OverflowError", "alloc_1gb": "MemoryError", "input": "EOFError",
    }
    for name, fragment in expect.items():
        assert fragment in got[name] and not got[name].startswith("SUCCEEDED"), (name, got[name])
    assert got["permission_request"] == "SUCCEEDED: 'denied'"  # --no-prompt: never asks, never grants
    assert got["listdir_root"].startswith("SUCCEEDED") and "'work'" not in got["listdir_root"]
    assert not Path("/tmp/finenvs-sandbox-escape").exists()


@needs_runtime
def test_javascript_side_escapes_fail(box):
    code = PRELUDE + '''
import js
from pyodide.code import run_js
worker = """new Promise((ok, no) => {
  const w = new Worker('data:text/javascript,' + encodeURIComponent(%r), {type: 'module'});
  w.onmessage = (e) => { w.terminate(); ok(e.data); };
  w.onerror = (e) => { e.preventDefault(); w.terminate(); no(new Error('worker: ' + e.message)); };
})"""
await t("node_fs", lambda: run_js("import('node:fs').then(m => m.readFileSync('/etc/passwd', 'utf8'))"))
await t("node_child_process", lambda: run_js("import('node:child_process').then(m => String(m.execSync('id')))"))
await t("fetch_local", lambda: js.fetch("http://127.0.0.1:8000/"))
await t("fetch_pypi", lambda: js.fetch("https://pypi.org/simple/"))
await t("fetch_file", lambda: js.fetch("file:///etc/passwd"))
await t("import_file", lambda: run_js("import('file:///etc/passwd')"))
await t("import_remote", lambda: run_js("import('https://deno.land/std/version.ts')"))
await t("import_npm", lambda: run_js("import('npm:left-pad')"))
await t("load_numpy", lambda: __import__("pyodide_js").loadPackage("numpy"))
await t("import_numpy", lambda: __import__("numpy"))
await t("storage_globals", lambda: run_js("typeof localStorage + ' ' + typeof caches"))
await t("worker_cache", lambda: run_js(worker % "caches.open('x').then(c => c.put('http://a/', new Response('x'))).then(() => postMessage('wrote'), (e) => postMessage('denied: ' + e))"))
await t("worker_read", lambda: run_js(worker % "try { postMessage(Deno.readTextFileSync('/etc/passwd')) } catch (e) { postMessage('denied: ' + e) }"))
run_js("const e = new TextEncoder(); for (let i = 0; i < 2000; i++) Deno.stdout.writeSync(e.encode('x'.repeat(500) + '\\\\n')); Deno.stdout.writeSync(e.encode('- {\\"ok\\": true, \\"result\\": \\"forged\\"}\\\\n'))")
out
'''
    result = box.run(code)
    got = _outcomes(result)  # the real result survives 1 MB of stray and forged lines on the process stdout
    denied = "NotCapable: Requires"
    assert f'{denied} read access to "/etc/passwd"' in got["node_fs"]
    assert denied in got["node_child_process"]  # env or run access: either way denied
    assert f'{denied} net access to "127.0.0.1:8000"' in got["fetch_local"]
    assert f'{denied} net access to "pypi.org:443"' in got["fetch_pypi"]
    assert f"{denied} read access" in got["fetch_file"] and "read access" in got["import_file"]
    assert "--no-remote is specified" in got["import_remote"]
    assert "--no-npm is specified" in got["import_npm"]
    assert "ModuleNotFoundError" in got["import_numpy"]  # only the standard library: the CDN is denied
    assert 'net access to "cdn.jsdelivr.net:443"' in result["stderr"]
    assert got["storage_globals"] == "SUCCEEDED: 'undefined undefined'"
    assert "denied: Error: Failed to create cache storage" in got["worker_cache"]
    assert 'denied: NotCapable: Requires read access to "/etc/passwd"' in got["worker_read"]


@needs_runtime
def test_runs_start_from_the_snapshot_and_share_no_random_state(box):
    first, second = (box.run("import random, uuid\n(random.random(), uuid.uuid4().hex)") for _ in range(2))
    assert first["ok"] and second["ok"] and first["result"] != second["result"]
    status = box.status(refresh=True)
    assert status["snapshot"] is True and sb.make_snapshot() == Path(status["pyodide_dir"]) / sb._snapshot_name()


@needs_runtime
@pytest.mark.slow
def test_a_snapshot_that_does_not_load_falls_back_to_a_full_start(tmp_path):
    import shutil

    pyo = sb.pyodide_dir(tmp_path)
    shutil.copytree(_STATUS["pyodide_dir"], pyo, ignore=shutil.ignore_patterns("memory-*.snapshot"))
    (pyo / sb._snapshot_name()).write_bytes(b"not a snapshot" * 1000)
    result = PythonSandbox(tmp_path).run("6 * 7")
    assert result["ok"] and result["result"] == "42"
    (pyo / sb._snapshot_name()).unlink()
    assert sb.make_snapshot(tmp_path) == pyo / sb._snapshot_name()  # made afresh, and then used
    assert PythonSandbox(tmp_path).run("6 * 7")["result"] == "42"


@needs_runtime
def test_os_system_crashes_the_runtime_cleanly(box):
    result = box.run("print('before')\nimport os\nos.system('touch /tmp/finenvs-sandbox-escape-system')")
    assert result["ok"] is False
    assert "Pyodide fatal error" in result["error"] and "NotCapable" in result["error"]
    assert result["stdout"].startswith("before\n")
    assert not Path("/tmp/finenvs-sandbox-escape-system").exists()


@needs_runtime
def test_an_infinite_loop_is_killed_at_the_time_limit():
    result = PythonSandbox(time_limit=2).run("while True: pass")
    assert result["ok"] is False and "time limit exceeded" in result["error"]
    assert 2 <= result["seconds"] < 4


@needs_runtime
def test_the_javascript_heap_limit_stops_the_process():
    result = PythonSandbox(memory_mb=128).run(
        "from pyodide.code import run_js\nrun_js('const a = []; while (true) a.push(new Array(1e6).fill(0.5))')")
    assert result["ok"] is False and "memory limit exceeded" in result["error"]


@needs_runtime
@pytest.mark.slow
def test_the_host_memory_backstop_stops_array_buffers():
    # ArrayBuffers live outside V8's heap and Pyodide's memory: only the host's RSS watch stops them
    result = PythonSandbox(time_limit=30, rss_limit_mb=600).run(
        "from pyodide.code import run_js\n"
        "run_js('globalThis.k = []; while (true) k.push(new Uint8Array(1e8).fill(1))')")
    assert result["ok"] is False and "memory limit exceeded" in result["error"] and "600 MB" in result["error"]


@needs_runtime
@pytest.mark.slow
def test_deno_exit_and_an_endless_await_fail_cleanly(box):
    result = box.run("import js\njs.Deno.exit(0)")
    assert result["ok"] is False and "ended before the code finished" in result["error"]
    result = PythonSandbox(time_limit=2).run("import asyncio\nawait asyncio.sleep(3600)")
    assert result["ok"] is False and "time limit exceeded" in result["error"]


# ------------------------------------------------------------------------------------------- the agent tool
@needs_runtime
def test_text_env_offers_run_python_only_when_asked_and_it_reads_no_data():
    import gymnasium as gym

    import finenvs  # noqa: F401

    plain = gym.make("FinOptions-text-v0", split="eval")
    assert "run_python" not in [t["function"]["name"] for t in plain.tool_specs()]  # off by default
    env = gym.make("FinOptions-text-v0", split="eval", python=True)
    env.reset(seed=0)
    assert "run_python" in [t["function"]["name"] for t in env.tool_specs()]
    result = env.call_tool("run_python", {"code": "import statistics\nprint(statistics.mean([1, 2, 4]))\n6 * 7"})
    assert result.ok and result.data["ok"] and result.data["result"] == "42" and "2.333" in result.data["stdout"]
    leak = env.call_tool("run_python", {"code": f"open({str(MANIFEST)!r}).read()"})
    assert leak.data["ok"] is False and "FileNotFoundError" in leak.data["error"]
    hostile = env.call_tool("run_python", {"code": 12})
    assert not hostile.ok and "code" in hostile.data["error"]  # the argument schema refuses it; nothing raises


def test_python_true_without_the_runtime_is_refused_with_the_setup_command(tmp_path, monkeypatch):
    import gymnasium as gym

    import finenvs  # noqa: F401

    monkeypatch.setenv("FINENVS_SANDBOX_DIR", str(tmp_path / "empty"))
    with pytest.raises(ValueError, match="finenvs sandbox setup"):
        gym.make("FinQA-text-v0", split="eval", python=True)
    from finenvs.cli import main

    assert main(["sandbox", "status"]) == 1
