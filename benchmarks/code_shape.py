"""The code's shape: largest modules and functions, "module:attr" strings, the files of each family folder.

    python benchmarks/code_shape.py [REPO]   # default: this checkout
"""
import ast
import re
import sys
from pathlib import Path

ROOT = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[1]
files = [p for d in ("finenvs", "wrappers", "baselines", "scoring") for p in (ROOT / d).rglob("*.py")
         if "envs_data" not in p.parts]
sizes = sorted(((len(p.read_text().splitlines()), str(p.relative_to(ROOT))) for p in files), reverse=True)
print("largest modules:", sizes[:5])
funcs = []
for p in files:
    for node in ast.walk(ast.parse(p.read_text())):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            funcs.append((node.end_lineno - node.lineno + 1, f"{p.relative_to(ROOT)}:{node.name}"))
print("largest functions:", sorted(funcs, reverse=True)[:5])
pat = re.compile(r'"finenvs\.[\w.]+:[\w.]+"')
hits = [(str(p.relative_to(ROOT)), m) for p in files for m in pat.findall(p.read_text())]
print("module:attr strings:", len(hits), hits[:5])
print("dict[str, Any] annotations:", sum(p.read_text().count("dict[str, Any]") for p in files))
envs = ROOT / "finenvs" / "envs"
print("finenvs/envs modules:", len(list(envs.glob("*.py"))) if envs.exists() else 0)
for fam in sorted(q.parent.name for q in (ROOT / "finenvs" / "tasks").glob("*/spec.py")):
    mods = sorted(q.name for q in (ROOT / "finenvs" / "tasks" / fam).glob("*.py"))
    print(f"  {fam}: {len(mods)} files: {' '.join(mods)}")
print("total library lines:", sum(s for s, _ in sizes))
