"""Import layers (DESIGN.md, "Dependency direction"): no import cycle, no import against the layer order.

Every module of the distribution is read with :mod:`ast` (nothing is imported), and every ``import``
of a ``finenvs`` module counts: at the top level, inside a function or under ``TYPE_CHECKING``. A
string naming a module (the task specs' lazy ``"module:attr"`` references) is not an import.

Three rules, checked over the whole module graph:

* no cycle: no two modules import each other, directly or through others (a package's
  ``__init__`` counts as a module, so ``from finenvs.tools import X`` inside a tool module is a cycle);
* no edge against :data:`LAYERS`: a module imports only modules of its own tier or of lower tiers;
* generic code knows no family: a module of a family folder (``finenvs/tasks/<family>/``) is imported only
  by modules of a family folder and by ``finenvs`` itself (which registers the shipped families); the rest
  reach a family through its registered spec (:func:`finenvs.tasks.task_of`).

A task spec holds real objects (classes and functions), so the imports that build it are edges like any.
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
    ("finenvs.scoring", "finenvs.text", "finenvs.pricing", "finenvs.charts"),
    # the data layer: manifest, catalog, date lock, documents, chains, splits, synthetic markets (it parses no
    # XBRL: whoever verifies the corpus passes the XBRL layer's row counters)
    ("finenvs.data",),
    # the XBRL library: file parsing, taxonomy, corpora, calculation checks, audit instances
    ("finenvs.xbrl",),
    # date-locked tools and the tool registry
    ("finenvs.tools",),
    # task families (finenvs/tasks/<family>/: core, env, protocol, tools, agents, baselines, bench section,
    # judge, spec), the spec and registry they declare themselves with, multi-agent shells, and the top-level
    # package that registers the shipped families
    ("finenvs.tasks", "finenvs.multiagent", "finenvs", "finenvs.envs"),
    # on top of tasks/envs
    ("finenvs.wrappers", "finenvs.baselines"),
    # runner, endpoints, MCP/A2A, score, bench, scorecard
    ("finenvs.evaluation", "finenvs.inspect"),
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


def family_of_module(module: str) -> str | None:
    """The family folder a module belongs to (``finenvs.tasks.trading.env`` -> ``trading``), or None."""
    parts = module.split(".")
    if len(parts) >= 3 and parts[:2] == ["finenvs", "tasks"] and (ROOT / "finenvs" / "tasks" / parts[2]).is_dir():
        return parts[2]
    return None


def generic_imports_of_families(all_edges: tuple[Edge, ...] | list[Edge]) -> list[Edge]:
    """Edges from generic code into a family. Not generic: a family folder, the top-level package (it registers
    the shipped families) and the offline build scripts of the shipped data (``finenvs.envs_data.*``: each
    builds one family's files)."""
    return [e for e in all_edges if family_of_module(e.imported) is not None
            and family_of_module(e.importer) is None and e.importer != "finenvs"
            and not e.importer.startswith("finenvs.envs_data.") and not is_shim(e.importer)]


def is_shim(module: str) -> bool:
    """A module kept at an old import path: nothing but a docstring, imports and ``__all__``."""
    path, _ = modules()[module]
    body = ast.parse(path.read_text(encoding="utf-8")).body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    return bool(body) and all(isinstance(node, (ast.Import, ast.ImportFrom)) or (
        isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["__all__"])
        for node in body)


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
    assert ("finenvs.tasks.market_section", "finenvs.tasks.rendering") in pairs  # inside a function
    assert ("finenvs.tasks.trading.spec", "finenvs.tasks.trading.env") in pairs  # a spec's real objects


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
        "    from finenvs.tasks.hedging.core import df_tstat\n"
        "    return df_tstat(np.zeros(3))\n"
    )
    found = [Edge("finenvs.tools.example", m, ROOT / "finenvs/tools/example.py", line)
             for m, line in imports_of("finenvs.tools.example", source, False, known)]
    assert [(e.imported, e.line) for e in found] == [
        ("finenvs.errors", 2), ("finenvs.tools.registry", 3), ("finenvs.tasks.hedging.core", 5)]
    assert [e.imported for e in layer_violations(found)] == ["finenvs.tasks.hedging.core"]


def test_mutual_imports_are_a_cycle():
    path = ROOT / "x.py"
    made_up = [Edge("finenvs.data.a", "finenvs.data.b", path, 1), Edge("finenvs.data.b", "finenvs.data.c", path, 1),
               Edge("finenvs.data.c", "finenvs.data.a", path, 1), Edge("finenvs.data.c", "finenvs.errors", path, 1)]
    assert cycles(made_up) == [("finenvs.data.a", "finenvs.data.b", "finenvs.data.c")]


def test_the_layer_order_is_the_designed_one():
    order = [tier_of(m) for m in ("finenvs.scoring", "finenvs.data", "finenvs.tools", "finenvs.tasks.spec",
                                  "finenvs.evaluation.bench", "finenvs.cli")]
    assert order == sorted(order) and len(set(order)) == len(order)
    assert tier_of("finenvs.tasks.options.env") == tier_of("finenvs.tasks.options.spec")
    assert tier_of("finenvs.text.protocol") < tier_of("finenvs.tools.registry")
    assert tier_of("finenvs.pricing.bsm") < tier_of("finenvs.data.chains")
    assert tier_of("finenvs.tasks.trading.env") < tier_of("finenvs.wrappers.text") < tier_of("finenvs.evaluation.llm")
    assert tier_of("finenvs.tasks.trading.env") == tier_of("finenvs.tasks.trading.baselines") < tier_of("finenvs.evaluation.bench")
    assert tier_of("finenvs.envs_data") < tier_of("finenvs.data.manifest") < tier_of("finenvs.envs_data.build_xbrl")


# ---------------------------------------------------------------------------- the code base
def test_no_import_against_the_layer_order():
    found = [e for e in layer_violations(edges())]
    assert not found, "imports against the layer order (LAYERS):\n" + "\n".join(e.where() for e in found)


def test_generic_code_imports_no_family():
    found = generic_imports_of_families(edges())
    assert not found, "generic code importing a family folder:\n" + "\n".join(e.where() for e in found)


def test_a_generic_import_of_a_family_is_caught():
    path = ROOT / "x.py"
    made_up = [Edge("finenvs.evaluation.bench.render", "finenvs.tasks.report.quality", path, 1),
               Edge("finenvs.tasks.report.spec", "finenvs.tasks.trading.spec", path, 1),
               Edge("finenvs", "finenvs.tasks.report.spec", path, 1),
               Edge("finenvs.evaluation.bench.render", "finenvs.tasks.registry", path, 1)]
    assert [e.imported for e in generic_imports_of_families(made_up)] == ["finenvs.tasks.report.quality"]


def test_no_import_cycle():
    found = cycles(edges())
    assert not found, "import cycles:\n" + "\n\n".join(_cycle_report(c, edges()) for c in found)
