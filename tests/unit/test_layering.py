"""The package's import structure: no import cycle, and no import from a lower layer up to
a higher one (docs/contributing/architecture.md). Every import counts: module level,
inside functions, and under ``if TYPE_CHECKING:``.

The checker reads the source with ``ast``; nothing of the package is imported.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
PACKAGE = "pysycl"

# Layer of each top-level name of the package (a folder or a module), lowest first. A module
# may import its own layer's modules and any lower layer's, never a higher layer's. Within
# the compiler layer the three folders are independent of one another (each builds on `ir`),
# and within `backends` a concrete backend never imports another one.
LAYERS = (
    ("vocabulary", {"_records", "errors", "types", "config", "properties", "detail", "functional",
                    "spec_values", "host_objects"}),
    ("ir", {"ir"}),
    ("compiler", {"frontend", "passes", "codegen"}),
    ("backends", {"backends"}),
    ("bundle", {"bundle"}),
    ("runtime", {"runtime"}),
    ("api", {"__init__", "compat", "examples"}),
    ("cli", {"cli", "__main__"}),
)
RANK = {name: rank for rank, (_, names) in enumerate(LAYERS) for name in names}
INDEPENDENT = {"frontend", "passes", "codegen"}
SHARED_BACKEND_MODULES = {"base", "registry", "host_jit", "__init__"}


def module_files(src: Path = SRC, package: str = PACKAGE) -> dict[str, Path]:
    """``{dotted module name: path}`` of every module of the package."""
    out = {}
    for path in sorted((src / package).rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _resolve(name: str, known) -> str | None:
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def imports_of(module: str, path: Path, known) -> set[str]:
    """The package's modules that ``module`` imports anywhere in its source. ``from X
    import a`` imports ``X.a`` when that is a module, else ``X``."""
    is_package = path.name == "__init__.py"
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module if is_package else module.rpartition(".")[0]
                for _ in range(node.level - 1):
                    anchor = anchor.rpartition(".")[0]
                base = f"{anchor}.{base}".strip(".")
            names = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base
                     for a in node.names]
        else:
            continue
        for n in names:
            target = _resolve(n, known)
            if target is not None and target != module:
                out.add(target)
    return out


def import_graph(src: Path = SRC, package: str = PACKAGE) -> dict[str, set[str]]:
    """``{module: modules it imports}``; a package re-exporting its own children, and a
    module naming its own package (Python has loaded it already), are not edges."""
    files = module_files(src, package)
    graph = {}
    for mod, path in files.items():
        graph[mod] = {t for t in imports_of(mod, path, files)
                      if not t.startswith(mod + ".") and not mod.startswith(t + ".")}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    component.append(top)
                    if top == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def top_name(module: str) -> str:
    """The layer table's name for a module: its first name under the package."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def layer_violations(graph: dict[str, set[str]]) -> list[str]:
    """Every import that goes up a layer, across independent compiler folders, or from one
    concrete backend into another."""
    bad = []
    for mod, targets in sorted(graph.items()):
        src_top = top_name(mod)
        for t in sorted(targets):
            dst_top = top_name(t)
            if src_top == dst_top:
                if src_top == "backends" and _other_backend(mod, t):
                    bad.append(f"{mod} -> {t} (one backend imports another)")
                continue
            if RANK[dst_top] > RANK[src_top]:
                bad.append(f"{mod} -> {t} (layer {LAYERS[RANK[src_top]][0]} imports "
                           f"the higher layer {LAYERS[RANK[dst_top]][0]})")
            elif src_top in INDEPENDENT and dst_top in INDEPENDENT:
                bad.append(f"{mod} -> {t} ({src_top} and {dst_top} are independent)")
    return bad


def _other_backend(mod: str, target: str) -> bool:
    a, b = mod.split(".")[2:3], target.split(".")[2:3]
    concrete = [x for x in (a + b) if x not in SHARED_BACKEND_MODULES]
    return len(concrete) == 2 and a != b


def test_every_top_level_name_has_a_layer():
    names = {top_name(m) for m in module_files()}
    assert names - set(RANK) == set(), "add the new folder or module to LAYERS"


def test_no_import_cycles():
    assert cycles(import_graph()) == []


def test_no_upward_imports():
    assert layer_violations(import_graph()) == []


# -- the checker itself, on small made-up packages --------------------------------------

def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = tmp_path / "pkg" / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return tmp_path


@pytest.mark.parametrize("importer", [
    "from .b import f\n",                          # module level
    "def g():\n    from .b import f\n",            # function level
    "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import b\n",
])
def test_checker_finds_a_cycle_whatever_the_import_form(tmp_path, importer):
    src = _package(tmp_path, {"__init__.py": "", "a.py": importer, "b.py": "import pkg.a\n",
                              "c.py": "from . import a\n"})
    assert cycles(import_graph(src, "pkg")) == [["pkg.a", "pkg.b"]]


def test_checker_accepts_a_chain_and_package_reexports(tmp_path):
    src = _package(tmp_path, {"__init__.py": "from .a import x\n", "a.py": "from .b import y\n",
                              "b.py": "from . import c\n", "c.py": "import os\n"})
    graph = import_graph(src, "pkg")
    assert graph == {"pkg": set(), "pkg.a": {"pkg.b"}, "pkg.b": {"pkg.c"}, "pkg.c": set()}
    assert cycles(graph) == []


def test_checker_flags_upward_and_sideways_imports():
    graph = {"pysycl.ir.core": {"pysycl.errors"},
             "pysycl.bundle.cache": {"pysycl.runtime.queue", "pysycl.ir.core"},
             "pysycl.passes.link": {"pysycl.codegen.module"},
             "pysycl.backends.cuda.driver": {"pysycl.backends.opencl.driver",
                                             "pysycl.backends.base"}}
    assert layer_violations(graph) == [
        "pysycl.backends.cuda.driver -> pysycl.backends.opencl.driver "
        "(one backend imports another)",
        "pysycl.bundle.cache -> pysycl.runtime.queue "
        "(layer bundle imports the higher layer runtime)",
        "pysycl.passes.link -> pysycl.codegen.module (passes and codegen are independent)",
    ]


# -- the picture in docs/contributing/architecture.md ------------------------------------

DOC = SRC.parent / "docs" / "contributing" / "architecture.md"
BEGIN, END = "<!-- import-graph:begin -->", "<!-- import-graph:end -->"


def _node(module: str) -> str:
    """The picture's box of a module: its folder, a concrete backend on its own, and the
    whole vocabulary layer as one box (every layer may use it)."""
    name = top_name(module)
    parts = module.split(".")
    if name == "backends" and len(parts) > 2 and parts[2] not in SHARED_BACKEND_MODULES:
        return f"backends/{parts[2]}"
    return "vocabulary" if RANK[name] == 0 else name


def mermaid(graph: dict[str, set[str]]) -> str:
    """The folder-level import graph as a Mermaid flowchart, one subgraph per layer."""
    edges = sorted({(_node(a), _node(b)) for a, ts in graph.items() for b in ts
                    if _node(a) != _node(b) and _node(b) != "vocabulary"})
    boxes = {_node(m) for m in graph}
    lines = ["```mermaid", "flowchart TD"]
    for rank, (layer, _names) in reversed(list(enumerate(LAYERS))):
        inside = sorted(b for b in boxes if b != "vocabulary"
                        and RANK[b.split("/")[0]] == rank) if rank else ["vocabulary"]
        lines.append(f"  subgraph {layer}")
        lines += [f"    {_id(b)}[\"{b}\"]" for b in inside]
        lines.append("  end")
    lines += [f"  {_id(a)} --> {_id(b)}" for a, b in edges]
    lines.append("```")
    return "\n".join(lines)


def _id(box: str) -> str:
    return "m_" + box.replace("/", "_").strip("_")


def _doc_block() -> str:
    text = DOC.read_text()
    return text[text.index(BEGIN) + len(BEGIN):text.index(END)].strip()


def test_the_documented_import_graph_is_the_code_s():
    assert _doc_block() == mermaid(import_graph()), (
        "docs/contributing/architecture.md is stale: run python tests/unit/test_layering.py")


if __name__ == "__main__":      # rewrite the picture in the contributor docs
    text = DOC.read_text()
    head, rest = text.split(BEGIN, 1)
    DOC.write_text(f"{head}{BEGIN}\n{mermaid(import_graph())}\n{END}{rest.split(END, 1)[1]}")
