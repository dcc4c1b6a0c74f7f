"""The IR-level part of SYCL ``link``, and per-kernel device code split.

``link_modules`` merges object images: every function is defined once; a ``declare``
(an import of an ``@sycl.external``) is resolved against the ``external`` definition of
another module, whose signature must match; two definitions of one kernel or exported
symbol are an error naming both modules; spec-constant and device-global declarations are
merged by unique ID (one ID, one type). Unresolved declarations stay: the caller decides
(``unresolved_symbols``) whether that is an error at build or at submit.

The linked module is where a kernel's call graph is complete: ``link_modules`` also
records which kernels may be coarsened (``coarsen_candidates``), so the verdict travels
with the linked IR (caches, warm-start index, bundle files).

``reachable_module`` keeps what a set of kernels needs (an image holds
one kernel and the device functions it calls).

>>> link_modules([Module("a"), Module("b")], "ab").name
'ab'
"""
from __future__ import annotations

from pysycl.errors import errc, exception
from pysycl.ir.clone import clone_function
from pysycl.ir.compare import function_difference
from pysycl.ir.core import DeviceGlobalDecl, Function, Module, SpecConstantDecl

from .coarsen_candidates import mark_coarsen_candidates

_EXPORTED = ("kernel", "external")


def signature(f: Function) -> str:
    return f"({', '.join(str(p.type) for p in f.params)}) -> {f.return_type}"


def link_modules(modules: list[Module], name: str) -> Module:
    """Merge ``modules`` into a new module ``name`` (inputs are not modified).

    Functions keep their input order, definitions replacing the declarations they resolve.
    """
    out = Module(name)
    origin: dict[str, str] = {}  # function name -> module that defines/declares it
    index: dict[str, int] = {}   # function name -> its place in out.functions
    for m in modules:
        for f in m.functions:
            _add_function(out, origin, index, m.name, f)
        for s in m.spec_constants:
            _merge_decl(out.spec_constants, s, m.name, "specialization constant")
        for d in m.device_globals:
            _merge_decl(out.device_globals, d, m.name, "device_global")
    return mark_coarsen_candidates(out)


def _add_function(out: Module, origin: dict[str, str], index: dict[str, int], mod: str,
                  f: Function) -> None:
    # By name through ``index``: a search of ``out.functions`` for every function made
    # the link of a bundle quadratic in its kernels.
    at = index.get(f.name)
    have = out.functions[at] if at is not None else None
    if have is None:
        index[f.name] = len(out.functions)
        out.functions.append(clone_function(f))
        origin[f.name] = mod
        return
    if f.kind == "declare" or have.kind == "declare":
        definition = have if f.kind == "declare" else f
        if signature(have) != signature(f):
            raise exception(errc.build, f"symbol {f.name!r} is {signature(have)} in module "
                            f"{origin[f.name]!r} but {signature(f)} in module {mod!r}")
        if definition.kind not in ("external", "declare"):
            decl_mod, def_mod = ((mod, origin[f.name]) if f.kind == "declare"
                                 else (origin[f.name], mod))
            raise exception(errc.build, f"symbol {f.name!r} imported by module {decl_mod!r} "
                            f"is a {definition.kind} function in module {def_mod!r}, not an "
                            "exported @sycl.external")
        if have.kind == "declare" and f.kind != "declare":
            out.functions[at] = clone_function(f)
            origin[f.name] = mod
        return
    if f.kind == have.kind == "device":
        # Device functions are not exported: each kernel's image holds a copy of those
        # it calls, so two images of one Python module bring the same one.
        why = function_difference(have, f)
        if why is None:
            return
        raise exception(errc.build, f"device function {f.name!r} differs between module "
                        f"{origin[f.name]!r} and module {mod!r} ({why}): was it redefined "
                        "after one of them was compiled?")
    what = "kernel" if "kernel" in (f.kind, have.kind) else "symbol"
    raise exception(errc.build, f"{what} {f.name!r} is defined in both module "
                    f"{origin[f.name]!r} and module {mod!r}")


def _merge_decl(into: list, decl, mod: str, what: str) -> None:
    for have in into:
        if have.unique_id == decl.unique_id:
            if have.type != decl.type:
                raise exception(errc.build, f"{what} {decl.unique_id!r} has type {have.type} "
                                f"in one module and {decl.type} in module {mod!r}")
            return
    if isinstance(decl, SpecConstantDecl):
        into.append(SpecConstantDecl(decl.unique_id, decl.type, bytes(decl.default)))
    else:
        into.append(DeviceGlobalDecl(decl.unique_id, decl.type, dict(decl.properties),
                                     decl.initial))


def unresolved_symbols(m: Module) -> list[str]:
    """Names of the functions ``m`` declares but does not define, in module order."""
    return [f.name for f in m.functions if f.kind == "declare"]


def callees(f: Function) -> list[str]:
    return [op.attrs["callee"] for op in f.walk() if op.name == "call"]


def reachable_module(m: Module, roots: list[str], name: str | None = None) -> Module:
    """A copy of ``m`` with only the ``roots`` (kernel or function names), the functions
    they call (transitively), and the spec constants and device globals those use.

    >>> reachable_module(Module("m"), []).functions
    []
    """
    keep: set[str] = set()
    work = list(roots)
    while work:
        n = work.pop()
        if n in keep:
            continue
        f = m.get_function(n)
        if f is None:
            raise exception(errc.invalid, f"no function {n!r} in module {m.name!r}")
        keep.add(n)
        work.extend(callees(f))
    funcs = [clone_function(f) for f in m.functions if f.name in keep]
    ids = {op.attrs.get("id") for f in funcs for op in f.walk()
           if op.name in ("spec.get", "dg.addr")}
    return Module(name or m.name, funcs,
                  [SpecConstantDecl(s.unique_id, s.type, bytes(s.default))
                   for s in m.spec_constants if s.unique_id in ids],
                  [DeviceGlobalDecl(d.unique_id, d.type, dict(d.properties), d.initial)
                   for d in m.device_globals if d.unique_id in ids],
                  dict(m.attrs))
