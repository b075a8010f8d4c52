"""Import layers (DESIGN.md, "Dependency direction"): no import cycle, no import against the layer order.

Every module of the distribution is read with :mod:`ast` (nothing is imported), and every ``import``
of a ``finenvs`` module counts: at the top level, inside a function or under ``TYPE_CHECKING``. A
string naming a module (the task specs' lazy ``"module:attr"`` references) is not an import.

Two rules, checked over the whole module graph:

* no cycle: no two modules import each other, directly or through others (a package's
  ``__init__`` counts as a module, so ``from finenvs.tools import X`` inside a tool module is a cycle);
* no edge against :data:`LAYERS`: a module imports only modules of its own tier or of lower tiers.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[1]
#: source folder -> the package it installs as (pyproject.toml's package-dir)
SOURCES = {
    "finenvs": "finenvs",
    "wrappers": "finenvs.wrappers",
    "baselines": "finenvs.baselines",
    "scoring": "finenvs.scoring",
    "envs_data": "finenvs.envs_data",
}

#: The layer order, lowest first. A module may import modules of its own tier and of any lower tier.
#: An entry names a module or package (its submodules included); ``"finenvs"`` is the top-level
#: package's ``__init__`` only (it registers the envs), and ``"pkg.*"`` names a package's submodules only.
LAYERS: tuple[tuple[str, ...], ...] = (
    # leaves: error types; the shipped-data package (its __init__ holds no code)
    ("finenvs.errors", "finenvs.envs_data"),
    # pure shared pieces: metrics, text protocols and chat types, option pricing
    ("finenvs.scoring", "finenvs.text", "finenvs.pricing"),
    # the data layer: manifest, catalog, date lock, documents, chains, splits, synthetic markets (it parses no
    # XBRL: whoever verifies the corpus passes the XBRL layer's row counters)
    ("finenvs.data",),
    # the XBRL library: file parsing, taxonomy, corpora, calculation checks, audit instances
    ("finenvs.xbrl",),
    # question banks, built from the data layer and the XBRL corpus
    ("finenvs.qa",),
    # date-locked tools and the tool registry
    ("finenvs.tools",),
    # tasks/envs: env cores and shells, task specs, multi-agent shells, registration
    ("finenvs.envs", "finenvs.tasks", "finenvs.multiagent", "finenvs.registration", "finenvs"),
    # on top of tasks/envs
    ("finenvs.wrappers", "finenvs.baselines"),
    # runner, endpoints, MCP/A2A, score, bench, scorecard
    ("finenvs.evaluation",),
    # entry points: the CLI and the offline build scripts of the shipped data
    ("finenvs.cli", "finenvs.envs_data.*"),
)

class Edge(NamedTuple):
    importer: str
    imported: str
    path: Path
    line: int

    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}: {self.importer} -> {self.imported}"


@functools.cache
def modules() -> dict[str, tuple[Path, bool]]:
    """Every module: dotted name -> (file, is a package ``__init__``)."""
    out = {}
    for folder, package in SOURCES.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = list(path.relative_to(ROOT / folder).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            if is_package:
                parts = parts[:-1]
            out[".".join([package, *parts])] = (path, is_package)
    return out


def _known(name: str, known: dict[str, tuple[Path, bool]]) -> str:
    """The module an imported name lives in: the longest known module prefix of ``name``."""
    while name not in known and "." in name:
        name = name.rpartition(".")[0]
    return name


def imports_of(name: str, source: str, is_package: bool, known: dict[str, tuple[Path, bool]]) -> Iterator[tuple[str, int]]:
    """``(imported module, line)`` for every finenvs import in a module's source, wherever it sits."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolved against the importing module's package
                base = name if is_package else name.rpartition(".")[0]
                for _ in range(node.level - 1):
                    base = base.rpartition(".")[0]
                module = f"{base}.{node.module}" if node.module else base
            else:
                module = node.module or ""
            # `from pkg import name`: name is a submodule or an attribute of pkg
            targets = [f"{module}.{alias.name}" for alias in node.names]
        else:
            continue
        for target in targets:
            if target == "finenvs" or target.startswith("finenvs."):
                imported = _known(target, known)
                if imported != name:
                    yield imported, node.lineno


@functools.cache
def edges() -> tuple[Edge, ...]:
    known = modules()
    out = []
    for name, (path, is_package) in known.items():
        seen = set()
        for imported, line in imports_of(name, path.read_text(encoding="utf-8"), is_package, known):
            if imported not in seen:
                seen.add(imported)
                out.append(Edge(name, imported, path, line))
    return tuple(out)


def tier_of(module: str) -> int | None:
    """The tier of a module in :data:`LAYERS` (its longest matching entry), or None."""
    best, best_len = None, -1
    for tier, entries in enumerate(LAYERS):
        for entry in entries:
            if entry.endswith(".*"):
                hit = module.startswith(entry[:-1])
            elif entry == "finenvs":
                hit = module == entry
            else:
                hit = module == entry or module.startswith(entry + ".")
            if hit and len(entry) > best_len:
                best, best_len = tier, len(entry)
    return best


def layer_violations(all_edges: tuple[Edge, ...] | list[Edge]) -> list[Edge]:
    """Edges from a module to a module of a higher tier."""
    return [e for e in all_edges if (tier_of(e.importer) or 0) < (tier_of(e.imported) or 0)]


def cycles(all_edges: tuple[Edge, ...] | list[Edge]) -> list[tuple[str, ...]]:
    """Strongly connected components of more than one module (Tarjan), each sorted."""
    graph: dict[str, set[str]] = {}
    for e in all_edges:
        graph.setdefault(e.importer, set()).add(e.imported)
        graph.setdefault(e.imported, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[tuple[str, ...]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(tuple(sorted(component)))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def _cycle_report(component: tuple[str, ...], all_edges: tuple[Edge, ...]) -> str:
    members = set(component)
    return "\n".join(e.where() for e in all_edges if e.importer in members and e.imported in members)


# ---------------------------------------------------------------------------- the checker itself
def test_the_check_sees_every_module_and_their_imports():
    known = modules()
    assert {"finenvs", "finenvs.tools.registry", "finenvs.wrappers.text", "finenvs.baselines.rl.common",
            "finenvs.scoring.metrics", "finenvs.envs_data"} <= set(known)
    pairs = {(e.importer, e.imported) for e in edges()}
    assert ("finenvs.tools.market", "finenvs.tools.registry") in pairs  # top level
    assert ("finenvs.evaluation.bench", "finenvs.envs.rendering") in pairs  # inside a function


def test_every_module_has_a_layer():
    missing = sorted(m for m in modules() if tier_of(m) is None)
    assert not missing, f"modules in no layer (add their package to LAYERS): {missing}"


def test_an_upward_import_inside_a_function_is_caught():
    known = {**modules(), "finenvs.tools.example": (ROOT / "finenvs/tools/example.py", False)}
    source = (
        "import numpy as np\n"
        "from finenvs.errors import FinEnvsError\n"
        "from . import registry\n"
        "def tool(ctx):\n"
        "    from finenvs.envs.hedging_core import df_tstat\n"
        "    return df_tstat(np.zeros(3))\n"
    )
    found = [Edge("finenvs.tools.example", m, ROOT / "finenvs/tools/example.py", line)
             for m, line in imports_of("finenvs.tools.example", source, False, known)]
    assert [(e.imported, e.line) for e in found] == [
        ("finenvs.errors", 2), ("finenvs.tools.registry", 3), ("finenvs.envs.hedging_core", 5)]
    assert [e.imported for e in layer_violations(found)] == ["finenvs.envs.hedging_core"]


def test_mutual_imports_are_a_cycle():
    path = ROOT / "x.py"
    made_up = [Edge("finenvs.data.a", "finenvs.data.b", path, 1), Edge("finenvs.data.b", "finenvs.data.c", path, 1),
               Edge("finenvs.data.c", "finenvs.data.a", path, 1), Edge("finenvs.data.c", "finenvs.errors", path, 1)]
    assert cycles(made_up) == [("finenvs.data.a", "finenvs.data.b", "finenvs.data.c")]


def test_the_layer_order_is_the_designed_one():
    order = [tier_of(m) for m in ("finenvs.scoring", "finenvs.data", "finenvs.tools", "finenvs.tasks.spec",
                                  "finenvs.evaluation.bench", "finenvs.cli")]
    assert order == sorted(order) and len(set(order)) == len(order)
    assert tier_of("finenvs.envs.options") == tier_of("finenvs.tasks.options.spec")
    assert tier_of("finenvs.text.protocol") < tier_of("finenvs.tools.registry")
    assert tier_of("finenvs.pricing.bsm") < tier_of("finenvs.data.chains")
    assert tier_of("finenvs.envs.trading") < tier_of("finenvs.wrappers.text") < tier_of("finenvs.evaluation.llm")
    assert tier_of("finenvs.envs.trading") < tier_of("finenvs.baselines.trading") < tier_of("finenvs.evaluation.bench")
    assert tier_of("finenvs.envs_data") < tier_of("finenvs.data.manifest") < tier_of("finenvs.envs_data.build_xbrl")


# ---------------------------------------------------------------------------- the code base
def test_no_import_against_the_layer_order():
    found = [e for e in layer_violations(edges())]
    assert not found, "imports against the layer order (LAYERS):\n" + "\n".join(e.where() for e in found)


def test_no_import_cycle():
    found = cycles(edges())
    assert not found, "import cycles:\n" + "\n\n".join(_cycle_report(c, edges()) for c in found)
