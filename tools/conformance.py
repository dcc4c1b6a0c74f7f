"""The SYCL 2020 conformance table: ``docs/conformance/sycl2020.json`` (every class and
member of the runtime and kernel API chapters, its status, why, and a test that uses
it) rendered as ``docs/conformance.md``.

    python tools/conformance.py            # write docs/conformance.md from the list
    python tools/conformance.py --update   # re-check statuses and test links, then write
    python tools/conformance.py --check    # exit 1 if the list or the page is stale

An entry's ``python`` path says where the member lives: ``queue.submit`` is looked up
with ``getattr`` on ``pysycl`` (``sycl.queue.submit``); ``kernel:nd_item.get_group`` is a
member of an object kernels receive, looked up in the compiler's method tables (and the
method names its call rules dispatch on). ``--update`` marks an entry implemented when
its member exists and not implemented when it does not (a ``partial`` entry keeps its
status while the member exists), finds a test that uses each member, and lists every
public name of ``pysycl`` the spec does not have under "pysycl only".
"""
from __future__ import annotations

import argparse
import ast
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIST_PATH = ROOT / "docs" / "conformance" / "sycl2020.json"
DOC_PATH = ROOT / "docs" / "conformance.md"
TESTS = ROOT / "tests"
FRONTEND = ROOT / "src" / "pysycl" / "frontend"
STATUSES = ("implemented", "partial", "not implemented")
MISSING = "not in pysycl yet"
# Members no other test names: this one looks each up (and asks every info descriptor).
FALLBACK_TEST = "tests/unit/test_conformance.py::test_implemented_members_exist"


def load() -> dict:
    return json.loads(LIST_PATH.read_text())


def entries(table: dict):
    for section in table["sections"]:
        for entry in section["members"]:
            yield section, entry


# Where members live ----------------------------------------------------------------------
def host_object(path: str):
    """``sycl.<path>`` by ``getattr`` (``runtime:<path>``: from ``pysycl.runtime``, for
    objects users receive but never name); AttributeError when it is not there."""
    import pysycl
    import pysycl.runtime
    obj = pysycl
    if path.startswith("runtime:"):
        obj, path = pysycl.runtime, path[len("runtime:"):]
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def _kernel_tables() -> dict[str, set[str]]:
    from pysycl.frontend import calls
    return {"item": set(calls.ITEM_METHODS), "nd_item": set(calls.ND_ITEM_METHODS),
            "group": set(calls.GROUP_METHODS), "sub_group": set(calls.SUB_GROUP_METHODS),
            "atomic_ref": set(calls.ATOMIC_RMW), "accessor": set(calls.ACCESSOR_METHODS),
            "local_accessor": set(calls.LOCAL_ACCESSOR_METHODS)}


def _frontend_names() -> set[str]:
    """String constants of the frontend's sources: the method and function names its
    call rules dispatch on."""
    names = set()
    for path in FRONTEND.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                last = node.value.rpartition(".")[2]     # "sycl.group_barrier" too
                if last.isidentifier():
                    names.add(last)
    return names


def kernel_member_known(path: str, tables=None, names=None) -> bool:
    """Whether kernels can use ``path`` (``nd_item.get_group``, ``any_of_group``)."""
    tables = _kernel_tables() if tables is None else tables
    names = _frontend_names() if names is None else names
    cls, _, member = path.rpartition(".")
    if member == "__getitem__":
        return True     # subscripts of accessors, items and globals lower in every kernel
    if member in tables.get(cls, ()):
        return True
    # A name in another class's table (get_offset of accessors) says nothing about this one.
    if any(member in t for c, t in tables.items() if c != cls):
        return False
    return member in names


def exists(entry: dict, tables=None, names=None) -> bool:
    path = entry.get("python")
    if not path:
        return False
    if path.startswith("kernel:"):
        return kernel_member_known(path[len("kernel:"):], tables, names)
    try:
        obj = host_object(path)
    except AttributeError:
        return False
    wanted = entry.get("param")      # a form of the member: one of these parameters
    if wanted:
        import inspect
        try:
            params = inspect.signature(obj).parameters
        except (TypeError, ValueError):
            return False
        return any(p in params for p in wanted)
    return True


# Tests that use a member -----------------------------------------------------------------
def _test_functions() -> list[tuple[str, str, str]]:
    """``(file, test name, source)`` of every test function, then ``(file, "", source)``
    of every test file and kernel module as a whole (kernels live at module level)."""
    functions, files = [], []
    for path in sorted(TESTS.rglob("*.py")):
        text = path.read_text()
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        rel = str(path.relative_to(ROOT))
        files.append((rel, "", text))
        if not path.name.startswith("test_"):
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                    node.name.startswith("test"):
                functions.append((rel, node.name, ast.get_source_segment(text, node) or ""))
    return functions + files


def usage_pattern(entry: dict) -> re.Pattern | None:
    """What a test that uses the member contains."""
    path = entry.get("python")
    if not path:
        return None
    path = path.partition(":")[2] if ":" in path else path
    member = path.rpartition(".")[2]
    if member == "__getitem__":
        return None
    if "." not in path:                       # a free name: sycl.<name>
        return re.compile(rf"\b{re.escape(member)}\b")
    if path.startswith("info.") or path.startswith("property."):
        return re.compile(re.escape(path))
    return re.compile(rf"\.{re.escape(member)}\b")


def test_uses(link: str, entry: dict, functions) -> bool:
    """Whether ``link`` (``file::test`` or ``file``) exists and uses the member."""
    if link == FALLBACK_TEST:
        return True                 # it looks every implemented member up
    pattern = usage_pattern(entry)
    file, _, name = link.partition("::")
    for f, n, source in functions:
        if f == file and n == name:
            return pattern is None or bool(pattern.search(source))
    return False


def find_test(entry: dict, functions) -> str:
    pattern = usage_pattern(entry)
    if pattern is None:
        return ""
    path = entry.get("python", "")
    cls = (path.partition(":")[2] if ":" in path else path).partition(".")[0]
    hits = [(f, n) for f, n, source in functions if pattern.search(source)]
    # Prefer a test that also names the class (``q.submit`` in a queue test).
    named = [(f, n) for f, n in hits if cls and cls in (f + n)]
    # Tests that run everywhere before those that need a GPU.
    best = sorted(named or hits, key=lambda h: "/cuda/" in h[0])[:1]
    if not best:
        return ""
    return f"{best[0][0]}::{best[0][1]}" if best[0][1] else best[0][0]


# Keeping the list current ----------------------------------------------------------------
def update(table: dict) -> dict:
    """Statuses from what exists, test links, and the pysycl-only names."""
    import pysycl
    tables, names, functions = _kernel_tables(), _frontend_names(), _test_functions()
    for _section, entry in entries(table):
        present = exists(entry, tables, names)
        status = entry.get("status")
        if present and status not in ("implemented", "partial"):
            entry["status"] = "implemented"
            if entry.get("reason") == MISSING:
                entry["reason"] = ""
        elif not present:
            entry["status"] = "not implemented"
            entry["reason"] = entry.get("reason") or MISSING
        link = entry.get("test", "")
        if not present:
            entry["test"] = ""
        elif not link or link == FALLBACK_TEST or "/cuda/" in link or \
                not test_uses(link, entry, functions):
            entry["test"] = find_test(entry, functions) or FALLBACK_TEST
    covered = {e["python"].partition(":")[2 if ":" in e["python"] else 0].partition(".")[0]
               for _s, e in entries(table) if e.get("python")}
    only = table.setdefault("pysycl_only", {})
    for name in sorted(set(pysycl.__all__) - covered):
        if not only.get(name):
            doc = (getattr(host_object(name), "__doc__", None) or "").strip()
            only[name] = " ".join(doc.split("\n\n")[0].split()) or "pysycl extension"
    for name in [n for n in only if n in covered or n not in pysycl.__all__]:
        del only[name]
    table["pysycl_only"] = dict(sorted(only.items()))
    return table


def dump(table: dict) -> str:
    return json.dumps(table, indent=1, ensure_ascii=False) + "\n"


# The page --------------------------------------------------------------------------------
def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def render(table: dict) -> str:
    counts = {s: 0 for s in STATUSES}
    for _s, e in entries(table):
        counts[e["status"]] += 1
    lines = [
        "# SYCL 2020 conformance",
        "",
        "<!-- Generated by `python tools/conformance.py` from docs/conformance/sycl2020.json;"
        " do not edit by hand. -->",
        "",
        f"Every class and member of {table['spec']}'s runtime chapters and kernel API, "
        "as pysycl provides it. *Implemented* members exist (a test looks each one up); "
        "*partial* ones exist with the limits given; the rest say why they are not here. "
        "Kernel-side members (`in kernels`) are those the compiler lowers.",
        "",
        f"**{counts['implemented']} implemented, {counts['partial']} partial, "
        f"{counts['not implemented']} not implemented.**",
        "",
    ]
    for section in table["sections"]:
        lines += [f"## {section['section']}", "",
                  "| SYCL | pysycl | status | notes | test |", "|---|---|---|---|---|"]
        for e in section["members"]:
            path = e.get("python") or ""
            if path.startswith("kernel:"):
                where = f"`{path.removeprefix('kernel:')}` (in kernels)"
            elif path.startswith("runtime:"):
                where = f"`{path.removeprefix('runtime:')}`"
            else:
                where = f"`sycl.{path}`" if path else ""
            test = e.get("test") or ""
            link = f"[{test.partition('::')[2]}](../{test.partition('::')[0]})" if test else ""
            lines.append(f"| `{_cell(e['sycl'])}` | {where} | {e['status']} | "
                         f"{_cell(e.get('reason', ''))} | {link} |")
        lines.append("")
    lines += ["## pysycl only", "",
              "Public names of `pysycl` that SYCL 2020 does not define.", "",
              "| name | what |", "|---|---|"]
    for name, what in table.get("pysycl_only", {}).items():
        lines.append(f"| `sycl.{name}` | {_cell(what)} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--update", action="store_true", help="re-check statuses and tests")
    ap.add_argument("--check", action="store_true", help="exit 1 if anything is stale")
    args = ap.parse_args(argv)
    table = load()
    if args.check:
        stale = dump(update(load())) != LIST_PATH.read_text() or \
            render(table) != DOC_PATH.read_text()
        if stale:
            print("the conformance table is stale: run python tools/conformance.py --update")
        return 1 if stale else 0
    if args.update:
        table = update(table)
        LIST_PATH.write_text(dump(table))
    DOC_PATH.write_text(render(table))
    return 0


if __name__ == "__main__":
    sys.exit(main())
