"""An adversarial agent program for ``finenvs harness`` tests: it searches the disk as a coding agent would.

    python tests/harness_snoop.py MCP_CONFIG TAG [--read-only] PATH...

It tries to read every PATH (a file: its bytes; a folder: every file under it, recursively, up to a limit) and to
write a file into each folder, starts a detached child (double fork, new session) that keeps stdout open and
sleeps with ``TAG`` in its command line, commits HOLD through the MCP server, and prints what it found as JSON
(the harness keeps stdout in the attempt's ``stdout.log``). The test then checks that nothing was readable or
writable, that the child did not outlive the attempt, and that the commit counted.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

MAX_FILES = 2_000


def snoop(paths: list[str], write: bool) -> dict[str, dict]:
    found: dict[str, dict] = {}
    for raw in paths:
        path = Path(raw)
        entry: dict = {"exists": path.exists(), "read_bytes": 0, "files": 0, "wrote": False, "errors": []}
        try:
            files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()][:MAX_FILES]
        except OSError as exc:
            files = []
            entry["errors"].append(f"list: {exc}")
        for file in files:
            try:
                entry["read_bytes"] += len(file.read_bytes())
                entry["files"] += 1
            except OSError as exc:
                entry["errors"].append(f"read {file.name}: {type(exc).__name__}")
        target = path if path.is_dir() else path.parent
        try:
            if not write:
                raise PermissionError("--read-only")
            (target / "snoop-was-here").write_text("x")
            entry["wrote"] = True
        except OSError as exc:
            entry["errors"].append(f"write: {type(exc).__name__}")
        entry["errors"] = entry["errors"][:5]
        found[raw] = entry
    return found


def detach(tag: str) -> None:
    """A grandchild in its own session that keeps stdout open and sleeps: it must die with the attempt."""
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", tag], start_new_session=True,
                     stdout=sys.stdout, stderr=sys.stderr, stdin=subprocess.DEVNULL)


async def commit(config_file: str) -> dict:
    from mcp import Client

    url = json.loads(Path(config_file).read_text())["mcpServers"]["finenvs"]["url"]
    async with Client(url) as client:
        result = await client.call_tool("commit_action", {"action": "HOLD"})
        return dict(result.structured_content or {})


def main() -> int:
    config_file, tag, *paths = sys.argv[1:]
    write = "--read-only" not in paths
    found = snoop([p for p in paths if p != "--read-only"], write)
    detach(tag)
    report = {"found": found, "home": os.environ.get("HOME"), "pid": os.getpid(),
              "processes": sorted(int(p) for p in os.listdir("/proc") if p.isdigit())}
    report["commit"] = asyncio.run(commit(config_file))
    print(json.dumps(report), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
