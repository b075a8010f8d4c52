"""benchmarks/RESULTS.md holds one section per benchmark script; each run replaces only its own.

A section is the text between ``<!-- section:NAME -->`` and ``<!-- /section:NAME -->``.
A section not yet in the file is appended; text outside every section is kept.
Headings inside a section are demoted one level under the file's title.
"""

from __future__ import annotations

import platform
import re
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"
TITLE = "# finenvs benchmark results\n\nEach section is written by the script it names (see README.md here).\n"


def update_section(name: str, text: str, path: Path = RESULTS) -> Path:
    """Replace (or append) section ``name`` of ``path`` with ``text``."""
    begin, end = f"<!-- section:{name} -->", f"<!-- /section:{name} -->"
    body = re.sub(r"^(#{1,5}) ", r"#\1 ", text.strip(), flags=re.M)
    block = f"{begin}\n{body}\n{end}"
    old = path.read_text(encoding="utf-8") if path.exists() else TITLE
    pattern = re.compile(re.escape(begin) + r".*?" + re.escape(end), re.S)
    new = pattern.sub(lambda _: block, old, count=1) if pattern.search(old) else old.rstrip() + "\n\n" + block + "\n"
    path.write_text(new, encoding="utf-8")
    return path


def cpu_name() -> str:
    """The CPU model from /proc/cpuinfo (else ``platform.processor()``), for the results' machine line."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"
