"""Every code block of README.md and docs/ runs, and the docs site builds.

* ```python blocks run in a fresh namespace with a temporary working directory.
* ```bash blocks whose commands all start with ``finenvs `` run command by command (a subprocess each,
  with a timeout). Other bash blocks (installs, servers) are not collected.
* ``<!-- skip-snippet: reason -->`` on the line before a block skips it; the skip shows the reason.
* ``mkdocs build --strict`` builds the site into a temporary folder when mkdocs is installed.
* ``examples/own_agent_loop.py`` runs offline (the fake model, and the scripted agent of one family).
"""

from __future__ import annotations

import importlib.util
import json
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from helpers import SUBPROCESS_TIMEOUT

ROOT = Path(__file__).resolve().parents[1]
DOC_FILES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
SKIP = re.compile(r"<!--\s*skip-snippet:\s*(.+?)\s*-->")
FENCE = re.compile(r"^```(\w+)\s*$")


@dataclass(frozen=True)
class Snippet:
    path: Path
    line: int  # 1-based line of the opening fence
    lang: str
    code: str
    skip: str | None

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def collect(path: Path) -> list[Snippet]:
    """The fenced blocks of one Markdown file (top-level fences only: no indentation)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    out, i = [], 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        start, body = i, []
        i += 1
        while i < len(lines) and lines[i] != "```":
            body.append(lines[i])
            i += 1
        prev = next((lines[j] for j in range(start - 1, -1, -1) if lines[j].strip()), "")
        skip = SKIP.search(prev)
        out.append(Snippet(path, start + 1, match.group(1), "\n".join(body) + "\n", skip and skip.group(1)))
        i += 1
    return out


def finenvs_commands(code: str) -> list[list[str]] | None:
    """The commands of a bash block made only of ``finenvs ...`` lines, or None for any other block."""
    commands = []
    for line in code.replace("\\\n", " ").splitlines():
        words = shlex.split(line, comments=True)
        if not words:
            continue
        if words[0] != "finenvs":
            return None
        commands.append(words)
    return commands or None


ALL = [s for f in DOC_FILES for s in collect(f)]
PYTHON = [s for s in ALL if s.lang == "python"]
BASH = [s for s in ALL if s.lang in ("bash", "sh", "shell") and finenvs_commands(s.code)]


@pytest.fixture
def snippet_env(tmp_path, monkeypatch):
    """A temporary working directory and user data layer (``finenvs data add`` writes there)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("FINENVS_USER_DATA", str(tmp_path / "user-data"))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    return tmp_path


def test_the_docs_have_snippets_and_every_skip_has_a_reason():
    assert len(PYTHON) >= 10 and len(BASH) >= 5
    for s in ALL:
        assert s.skip is None or len(s.skip) > 5, s.id


@pytest.mark.parametrize("snippet", PYTHON, ids=[s.id for s in PYTHON])
def test_python_snippet_runs(snippet, snippet_env):
    if snippet.skip:
        pytest.skip(f"{snippet.id}: {snippet.skip}")
    if "stable_baselines3" in snippet.code:  # one torch thread: on a small shared machine more threads only contend
        torch = pytest.importorskip("torch", reason="torch is not installed (the rl extra)")
        torch.set_num_threads(1)
    namespace = {"__name__": "__snippet__"}
    exec(compile(snippet.code, snippet.id, "exec"), namespace)  # noqa: S102 - the docs' own code


@pytest.mark.parametrize("snippet", BASH, ids=[s.id for s in BASH])
def test_finenvs_snippet_runs(snippet, snippet_env, capsys):
    """Each ``finenvs`` line of the docs' shell blocks, run by the CLI's ``main`` in this process (the console
    script itself is run by tests/test_packaging.py and tests/test_cli.py; a process per line cost 0.5 s of
    start-up each)."""
    from finenvs.cli import main

    if snippet.skip:
        pytest.skip(f"{snippet.id}: {snippet.skip}")
    for words in finenvs_commands(snippet.code):
        redirect = None
        if ">" in words:  # `finenvs ... > FILE`: stdout to the file, as the shell would
            at = words.index(">")
            words, redirect = words[:at], words[at + 1]
        capsys.readouterr()
        try:
            code = main(words[1:])
        except SystemExit as exc:  # argparse's own exits
            code = exc.code
        out, err = capsys.readouterr()
        assert code == 0, f"{snippet.id}: {shlex.join(words)} exited {code}\n{err[-2000:]}"
        if redirect:
            (snippet_env / redirect).write_text(out)


def test_own_agent_loop_example_runs_offline(tmp_path):
    script = ROOT / "examples" / "own_agent_loop.py"
    for args in ([], ["--env", "FinQA-text-v0", "--agent", "scripted"]):
        proc = subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True, timeout=SUBPROCESS_TIMEOUT,
                              cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr[-2000:]
        result = json.loads(proc.stdout)
        assert result["decisions"] >= 1 and result["tool_calls"] >= 1 and result["format_errors"] == 0, result


def test_the_llm_page_shows_the_own_agent_loop_example():
    page = (ROOT / "docs" / "llm-agents.md").read_text(encoding="utf-8")
    assert "examples/own_agent_loop.py" in page and "env.call_tool(" in page and "tool_specs()" in page


def test_mkdocs_build_strict(tmp_path):
    if importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("material") is None:
        pytest.skip("mkdocs-material is not installed: pip install -e '.[docs]'")
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(ROOT / "mkdocs.yml"),
                           "-d", str(tmp_path / "site")], capture_output=True, text=True, timeout=SUBPROCESS_TIMEOUT, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert (tmp_path / "site" / "index.html").is_file()
