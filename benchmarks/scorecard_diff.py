"""Compare two ``scorecard.json`` files value by value (key order included), ignoring only run-specific fields.

Behaviour-preserving changes are checked with it: run the same ``finenvs bench`` command before and after
(same seeds) and compare::

    finenvs bench --no-plots --no-html --quiet --out /tmp/bench-before --name before   # on the old commit
    finenvs bench --no-plots --no-html --quiet --out /tmp/bench-after --name after     # on the new one
    python benchmarks/scorecard_diff.py /tmp/bench-before/before/scorecard.json /tmp/bench-after/after/scorecard.json

``--skip KEY,KEY`` ignores further keys wherever they occur (a change that is meant to move token counts, say:
``--skip efficiency,timing,tokens,files``).

Exit status 0 when the two agree outside the ignored fields, 1 otherwise.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

#: Fields that differ between two runs of the same bench: timings, the run's name, folder and creation time.
IGNORED = frozenset({"seconds", "seconds_per_decision", "created_utc", "run", "run_dir"})


def walk(a: Any, b: Any, path: str, diffs: list[tuple[str, str]], ignored: dict[str, int],
         skip: frozenset[str] = IGNORED) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        if list(a) != list(b):
            only = (sorted(set(a) - set(b)), sorted(set(b) - set(a)))
            diffs.append((path, f"keys differ: only left {only[0]}, only right {only[1]}" if any(only)
                          else "key order differs"))
        for key in a.keys() & b.keys():
            if key in skip:
                ignored[key] = ignored.get(key, 0) + (a[key] != b[key])
            else:
                walk(a[key], b[key], f"{path}.{key}", diffs, ignored, skip)
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            diffs.append((path, f"lengths {len(a)} vs {len(b)}"))
        for i, (x, y) in enumerate(zip(a, b, strict=False)):  # the shorter length; a length gap is noted above
            walk(x, y, f"{path}[{i}]", diffs, ignored, skip)
    elif not (a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))):
        diffs.append((path, f"{a!r} vs {b!r}"))


def main(argv: list[str]) -> int:
    skip = set(IGNORED)
    if len(argv) == 4 and argv[0] == "--skip":
        skip |= {k for k in argv[1].split(",") if k}
        argv = argv[2:]
    if len(argv) != 2:
        print(__doc__)
        return 2
    left, right = (json.loads(Path(p).read_text(encoding="utf-8"), parse_constant=float) for p in argv)
    diffs: list[tuple[str, str]] = []
    ignored: dict[str, int] = {}
    walk(left, right, "$", diffs, ignored, frozenset(skip))
    print(f"ignored fields that differ: { {k: n for k, n in ignored.items() if n} }")
    print(f"{len(diffs)} difference(s)")
    for path, what in diffs[:60]:
        print(f"  {path}: {what}")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
