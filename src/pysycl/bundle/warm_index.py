"""Warm start: a source-level index in front of the IR-level build cache.

The index is a cache tier of the build chain (``build_chain.py``): its summary entries
stand in for the ``input`` and ``object`` stages (``sources.py``), its link entries for
``link`` up to ``binary`` (``executables.py`` asks them before it links anything).

The build cache (``cache.py``) is keyed by the canonical IR of a linked kernel, so a
hit still needs the frontend to parse the kernel's Python source. This index maps a
*source fingerprint* to what a hit needs without the frontend: the digests of the
IR-level key's ``ir`` and ``spec_ids`` parts and the launch metadata (kernel name,
properties, the attributes the runtime reads, property sets, spec-constant layout).

Fingerprint of a ``@sycl.kernel`` (SHA-256; ``fingerprint``): everything the frontend
reads for it:

* the code objects, recursively (``co_code``, constants, names, variable names, file
  name, first line, line/column table, flags): IR carries source locations;
* the text of the source file the frontend parses (as ``inspect`` reads it): local
  variable annotations are not in the bytecode;
* the annotations (strings with the values of the names they use; objects by their
  canonical text), defaults, kernel properties;
* the value of every closure cell, module global or builtin the code names (and every
  identifier of its source lines that resolves to one) that is a frozen constant
  (numbers, NumPy scalars and dtypes, tuples, library modules/functions/types,
  ``@sycl.struct`` classes, enum members); a user module by the values of the
  attributes the code names;
* ``specialization_id`` / ``device_global`` identities (unique ID, dtype, default or
  properties);
* the same, recursively, for the ``@sycl.device`` functions it calls; the names of the
  ``@sycl.external`` functions it calls.

A value the fingerprint cannot capture safely (a mutable object, a user class, an
object whose text has no stable form) gives *no fingerprint*: that kernel always takes
the full path. So does a kernel that calls ``@sycl.external`` functions (its linked
image depends on library images defined elsewhere).

Two kinds of index entries, stored in the build cache's directory as cache entries
named ``*.idx`` (``cache.index_cache``; JSON payloads, verified like every entry; a corrupted one is ignored with a
warning and rewritten by the full path):

* *summary* (fingerprint -> input/object image metadata): lets ``get_kernel_bundle``
  make an input image without the frontend (its IR is made on demand);
* *link* (fingerprints of the linked images, in link order, + kernel -> ``ir`` and
  ``spec_ids`` digests, spec-constant layout, property sets, kernel metadata).

On a hit the IR-level key is rebuilt from the two stored digests and *freshly
computed* other parts (target, CPU features, spec-constant mode and literal values,
LLVM, pysycl version, CODEGEN_ABI, debug options: ``executables._key_digests``), and the binary
is read from the build cache with that key: the IR-level cache stays the source of
truth, and any difference (a new literal value, another CPU) is a miss there, so the
full path runs and rewrites the index. Both index keys also hold the pysycl version,
CODEGEN_ABI and debug options.

>>> fingerprint_value(3), fingerprint_value((1, 2.5))
('int:3', '(int:1,float:2.5)')
"""
from __future__ import annotations

import contextlib
import contextvars
import enum
import hashlib
import json
import linecache
import logging
import os
import re
import types

import numpy as np

from ..host_objects import _Identifiable
from .. import config
from ..detail.names import closure_vars, lookup_name
from ..ir.types import parse_type
from ..passes.spec_constants import SpecConstantIds
from . import stats, toolchain
from .cache import CacheKey, index_cache
from .device_image import image_property_sets
from .property_sets import BitBytes, PropertySetRegistry

log = logging.getLogger("pysycl.cache")

INDEX_FORMAT = 2   # 2: bit masks keep their size in bits
_LIBRARY_ROOTS = frozenset({"numpy", "math", "cmath", "pysycl", "builtins", "operator"})
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


_MUTABLE = (np.ndarray, list, dict, set, bytearray, memoryview)


def _array_like(value) -> bool:
    if isinstance(value, (type, types.ModuleType)):
        return False
    return any(hasattr(type(value), a) for a in
               ("__array_interface__", "__cuda_array_interface__", "__dlpack__"))


class _Opaque(Exception):
    """A value the fingerprint cannot capture."""


def enabled() -> bool:
    """The index is used when the disk cache is (``PYSYCL_CACHE=0`` turns both off) and
    ``PYSYCL_WARM_INDEX`` is not ``0``."""
    return config.cache_enabled() and config.environ_get("PYSYCL_WARM_INDEX", "1") != "0"


def _is_library(module_name: str | None) -> bool:
    return bool(module_name) and module_name.partition(".")[0] in _LIBRARY_ROOTS


def _frontend_kind(value) -> str | None:
    kind = getattr(type(value), "_pysycl_function_kind", None)
    return kind if isinstance(kind, str) and kind and hasattr(value, "py_function") else None


def fingerprint_value(value, names: frozenset = frozenset(), fp: "_Fingerprinter | None" = None,
                      depth: int = 0) -> str:
    """Canonical text of a value the frontend may freeze into IR; ``_Opaque`` if none."""
    if depth > 8:
        raise _Opaque("nested too deeply")
    if isinstance(value, enum.Enum):
        t = type(value)
        text = f"enum:{t.__module__}.{t.__qualname__}.{value.name}"
        if not _is_library(t.__module__):
            text += "=" + fingerprint_value(value.value, names, fp, depth + 1)
        return text
    if value is None or value is Ellipsis or type(value) in (bool, int, float, complex, str, bytes):
        return f"{type(value).__name__}:{value!r}"
    if isinstance(value, np.generic):
        return f"np:{value.dtype!r}:{value.tobytes().hex()}"
    if isinstance(value, np.dtype):
        return f"dtype:{value!r}"
    if isinstance(value, _MUTABLE) or _array_like(value):
        raise _Opaque(f"mutable {type(value).__qualname__}")
    if type(value) is tuple:
        return "(" + ",".join(fingerprint_value(v, names, fp, depth + 1) for v in value) + ")"
    if type(value) is frozenset:
        return "frozenset{" + ",".join(sorted(fingerprint_value(v, names, fp, depth + 1)
                                              for v in value)) + "}"
    kind = _frontend_kind(value)
    if kind is not None:
        if fp is None:
            raise _Opaque("a frontend function outside a fingerprint")
        if kind == "external":
            fp.externals.append(value.name)
            return f"external:{value.name}"
        return f"{kind}:{value.name}:{fp.function(value)}"
    if isinstance(value, _Identifiable):
        extra = (value.default_bytes.hex() if hasattr(value, "default_bytes")
                 else repr(getattr(value, "properties", None)))
        return f"{type(value).__name__}:{value.unique_id}:{value.dtype!r}:{extra}"
    if isinstance(value, types.ModuleType):
        if _is_library(value.__name__):
            return f"module:{value.__name__}"
        # A user module used as a namespace: the attributes the code names.
        attrs = [f"{n}={fingerprint_value(getattr(value, n), names, fp, depth + 1)}"
                 for n in sorted(names) if hasattr(value, n)]
        return f"module:{value.__name__}{{{';'.join(attrs)}}}"
    if isinstance(value, type):
        if getattr(value, "__pysycl_struct__", False):
            from ..types import as_dtype
            return f"struct:{value.__module__}.{value.__qualname__}:{as_dtype(value)!r}"
        if _is_library(value.__module__):
            return f"type:{value.__module__}.{value.__qualname__}"
        raise _Opaque(f"class {value.__qualname__}")
    if isinstance(value, (types.FunctionType, types.BuiltinFunctionType, np.ufunc)):
        mod = getattr(value, "__module__", None) or "builtins"
        if isinstance(value, np.ufunc):
            mod = "numpy"
        if _is_library(mod):
            return f"fn:{mod}.{getattr(value, '__qualname__', value.__name__)}"
        raise _Opaque(f"function {value!r}")
    if type(value).__module__ != "builtins" and _is_library(type(value).__module__):
        text = repr(value)
        if " at 0x" in text or "object at" in text:
            raise _Opaque(f"no stable text for {type(value).__qualname__}")
        return f"obj:{type(value).__module__}.{type(value).__qualname__}:{text}"
    raise _Opaque(f"{type(value).__qualname__} value")


def _source_text(fn) -> str:
    """The file text the frontend parses (``inspect`` reads it through linecache)."""
    filename = fn.__code__.co_filename
    linecache.checkcache(filename)
    lines = linecache.getlines(filename, fn.__globals__)
    if not lines:
        raise _Opaque(f"no source for {fn.__qualname__}")
    return "".join(lines)


def _code_objects(code):
    yield code
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            yield from _code_objects(c)


class _Fingerprinter:
    def __init__(self):
        self.memo: dict[int, str] = {}
        self.active: set[int] = set()
        self.externals: list[str] = []
        self.files: dict[str, str] = {}

    def _file_digest(self, fn) -> str:
        name = fn.__code__.co_filename
        d = self.files.get(name)
        if d is None:
            d = self.files[name] = hashlib.sha256(_source_text(fn).encode("utf-8")).hexdigest()
        return d

    def _code(self, code, out: list) -> None:
        out += [code.co_code.hex(), repr(code.co_names), repr(code.co_varnames),
                repr(code.co_freevars), repr(code.co_cellvars), code.co_filename,
                getattr(code, "co_qualname", code.co_name), str(code.co_firstlineno),
                code.co_linetable.hex(), f"{code.co_argcount},{code.co_posonlyargcount},"
                f"{code.co_kwonlyargcount},{code.co_flags}"]
        for c in code.co_consts:
            if isinstance(c, types.CodeType):
                out.append("code{")
                self._code(c, out)
                out.append("}")
            else:
                out.append(fingerprint_value(c))

    def function(self, fobj) -> str:
        key = id(fobj)
        if key in self.memo:
            return self.memo[key]
        if key in self.active:   # recursion is a frontend error; the text still differs
            return "recursive"
        self.active.add(key)
        try:
            digest = self._function(fobj)
        finally:
            self.active.discard(key)
        self.memo[key] = digest
        return digest

    def _function(self, fobj) -> str:
        fn = fobj.py_function
        code = fn.__code__
        out = [fobj._pysycl_function_kind, fobj.name, fobj.module_name, fobj.qualname,
               repr(getattr(fobj, "properties", None)), self._file_digest(fn)]
        self._code(code, out)
        env = closure_vars(fn)
        local = set()
        names: set[str] = set()
        for c in _code_objects(code):
            names.update(c.co_names)
            names.update(c.co_freevars)
            local.update(c.co_varnames)
            local.update(c.co_cellvars)
        names_f = frozenset(names)

        for name in sorted(names):
            found, value = lookup_name(fn, name, env)
            if found:
                out.append(f"{name}={fingerprint_value(value, names_f, self)}")
        # Identifiers of the function's own lines that name something in its scope
        # (local annotations are not compiled, but the frontend evaluates them).
        lines = linecache.getlines(code.co_filename, fn.__globals__)
        last = max((ln for c in _code_objects(code) for _, _, ln in c.co_lines() if ln),
                   default=code.co_firstlineno)
        seen = names | local
        for line in lines[code.co_firstlineno - 1:last]:
            for ident in _IDENT.findall(line):
                if ident in seen:
                    continue
                seen.add(ident)
                found, value = lookup_name(fn, ident, env)
                if found:
                    try:
                        out.append(f"{ident}~{fingerprint_value(value, names_f, self)}")
                    except _Opaque:
                        out.append(f"{ident}~opaque:{type(value).__module__}.{type(value).__qualname__}")
        for name, ann in sorted(getattr(fn, "__annotations__", {}).items()):
            if isinstance(ann, str):
                out.append(f"ann:{name}:str:{ann}")
                for n in sorted(set(compile(ann, "<annotation>", "eval").co_names)):
                    found, value = lookup_name(fn, n, env)
                    if found:
                        out.append(f"{n}={fingerprint_value(value, names_f, self)}")
            else:
                out.append(f"ann:{name}:{fingerprint_value(ann, names_f, self)}")
        out.append("defaults:" + fingerprint_value(tuple(fn.__defaults__ or ()), names_f, self))
        out.append("kwdefaults:" + fingerprint_value(
            tuple(sorted((fn.__kwdefaults__ or {}).items())), names_f, self))
        return hashlib.sha256("\0".join(out).encode("utf-8")).hexdigest()


def fingerprint(kfn) -> str | None:
    """The source fingerprint of kernel ``kfn`` (cached on it), or ``None`` when it
    cannot be captured safely or the kernel calls ``@sycl.external`` functions."""
    def make():
        fp = _Fingerprinter()
        try:
            digest = fp.function(kfn)
        except _Opaque as e:
            log.debug("no warm-start index for %s: %s", getattr(kfn, "name", kfn), e)
            return None
        except Exception as e:  # noqa: BLE001 - never fail a build over the index
            log.debug("no warm-start index for %s: %s: %s", getattr(kfn, "name", kfn),
                      type(e).__name__, e)
            return None
        if fp.externals:
            return None
        return digest
    cached = getattr(kfn, "_cached", None)
    return cached("warm_fingerprint", make) if cached is not None else make()


# -- entries --------------------------------------------------------------------------

def _common_parts() -> dict[str, str]:
    debug = toolchain.build_checks()
    return {"pysycl": toolchain.pysycl_version(), "codegen_abi": str(toolchain.CODEGEN_ABI),
            "compiler": toolchain.compiler_digest(), "debug": ",".join(sorted(debug))}


def summary_key(fp: str):
    return CacheKey({"index": f"pysycl-warm-index/summary/{INDEX_FORMAT}", "source": fp,
                     **_common_parts()})


def link_key(group: tuple[str, ...], kernel_name: str):
    return CacheKey({"index": f"pysycl-warm-index/link/{INDEX_FORMAT}",
                     "group": ",".join(group), "kernel": kernel_name, **_common_parts()})


def _read(key, what: str) -> dict | None:
    stats.bump("warm_index_reads")
    raw = index_cache().get(key)
    if raw is None:
        return None
    try:
        entry = json.loads(raw.decode("utf-8"))
        if not isinstance(entry, dict) or entry.get("format") != INDEX_FORMAT:
            raise ValueError("format")
        return entry
    except (UnicodeDecodeError, ValueError) as e:
        log.warning("ignoring warm-start index entry %s (%s): unreadable (%s); it will be "
                    "rebuilt", key.hexdigest[:16], what, e)
        return None


def _write(key, entry: dict) -> bool:
    """Store an index entry; False if that failed (logged: the index is an optimisation)."""
    entry = dict(entry, format=INDEX_FORMAT)
    try:
        index_cache().put(key, json.dumps(entry, sort_keys=True).encode("utf-8"))
    except Exception as e:  # noqa: BLE001 - the index is an optimisation
        log.warning("could not write warm-start index entry: %s", e)
        return False
    return True


def registry_to_json(reg) -> dict:
    return {name: {k: _value_to_json(v) for k, v in props.items()}
            for name, props in reg.to_dict().items()}


def _value_to_json(value) -> list:
    """A property value as JSON: a u32 int, bytes, or a bit mask that keeps its size in
    bits (``SYCL/kernel param opt``: the argument count, not whole bytes)."""
    if isinstance(value, BitBytes):
        return ["bits", bytes(value).hex(), value.bit_size]
    if isinstance(value, (bytes, bytearray)):
        return ["b", bytes(value).hex()]
    return ["i", int(value)]


def registry_from_json(data: dict):
    def value(item):
        if item[0] == "bits":
            return BitBytes(bytes.fromhex(item[1]), int(item[2]))
        return bytes.fromhex(item[1]) if item[0] == "b" else int(item[1])
    sets = {name: {k: value(v) for k, v in props.items()} for name, props in data.items()}
    return PropertySetRegistry.from_checked(sets)


class KernelInfo:
    """What the bundle layer and the launcher read of a kernel's IR function (name,
    properties, ``used_aspects``/``local_mem_static``, the ``coarsen`` verdict), without
    the IR."""

    kind = "kernel"
    is_declaration = False

    def __init__(self, name: str, properties: dict, attrs: dict):
        self.name = name
        self.properties = dict(properties)
        self.attrs = dict(attrs)

    @classmethod
    def of(cls, fn) -> "KernelInfo":
        attrs = {k: fn.attrs[k] for k in ("used_aspects", "local_mem_static", "coarsen")
                 if k in fn.attrs}
        if "used_aspects" in attrs:
            attrs["used_aspects"] = [int(a) for a in attrs["used_aspects"]]
        if "local_mem_static" in attrs:
            attrs["local_mem_static"] = int(attrs["local_mem_static"] or 0)
        return cls(fn.name, {str(k): str(v) for k, v in fn.properties.items()}, attrs)

    def to_json(self) -> dict:
        return {"name": self.name, "properties": self.properties, "attrs": self.attrs}

    @classmethod
    def from_json(cls, d: dict) -> "KernelInfo":
        return cls(str(d["name"]), dict(d["properties"]), dict(d["attrs"]))

    def __repr__(self):
        return f"<KernelInfo {self.name}>"


def spec_ids_to_json(ids) -> dict:
    return {"ids": {k: [list(t) for t in v] for k, v in ids.ids.items()},
            "defaults": ids.default_values.hex(), "offsets": dict(ids.offsets),
            "types": {k: str(t) for k, t in ids.types.items()}}


def spec_ids_from_json(d: dict):
    return SpecConstantIds({k: [tuple(int(x) for x in t) for t in v] for k, v in d["ids"].items()},
                           bytes.fromhex(d["defaults"]), {k: int(v) for k, v in d["offsets"].items()},
                           {k: parse_type(t) for k, t in d["types"].items()})


# -- summary entries (input/object images without the frontend) -------------------------

def record_summary(kfn, input_img, object_img) -> None:
    """After the full path made both images of ``kfn``: remember their metadata."""
    fp = fingerprint(kfn) if enabled() else None
    if fp is None or input_img.imports:
        return
    try:
        kernels = input_img.module.kernels
        entry = {"kernels": [KernelInfo.of(k).to_json() for k in kernels],
                 "input_registry": registry_to_json(input_img._registry),
                 "object_registry": registry_to_json(object_img._registry)}
    except Exception as e:  # noqa: BLE001
        log.debug("no warm-start summary for %s: %s", kfn.name, e)
        return
    if _write(summary_key(fp), entry):
        _made[("summary", fp)] = dict(entry, format=INDEX_FORMAT)


# Summaries read ahead for a whole bundle (``prefetch_summaries``): fingerprint -> entry.
_prefetched: dict[str, dict] = {}
# Entries this process wrote: ("summary", fp) / ("link", group, kernel name) -> entry,
# so that a bundle's first build can also write its bundle-wide entries (record_groups).
_made: dict[tuple, dict] = {}


def group_key(kind: str, fps: tuple[str, ...]):
    """The key of one entry holding the ``kind`` entries of a group of kernels (a
    bundle's: one read instead of one per kernel)."""
    return CacheKey({"index": f"pysycl-warm-index/{kind}-group/{INDEX_FORMAT}",
                     "group": ",".join(fps), **_common_parts()})


def prefetch_summaries(kfns) -> None:
    """Read the summaries of ``kfns`` (the kernels of one bundle request) in one entry;
    when that entry is missing but every kernel has its own, write it for next time."""
    if not enabled():
        return
    fps = tuple(sorted({fp for fp in (fingerprint(k) for k in kfns) if fp is not None}))
    if len(fps) < 2 or all(fp in _prefetched for fp in fps):
        return
    key = group_key("summary", fps)
    group = _read(key, f"summaries of {len(fps)} kernels")
    entries = group.get("entries") if group is not None else None
    if not isinstance(entries, dict) or set(entries) != set(fps):
        entries = {fp: _read(summary_key(fp), "summary") for fp in fps}
        if any(e is None for e in entries.values()):
            return
        _write(key, {"entries": entries})
    _prefetched.update(entries)


def record_groups(kfns, group: tuple[str, ...], kernel_names: list[str]) -> None:
    """After a bundle's full build: its bundle-wide summary and link entries, from the
    per-kernel ones this process just made, so its next start reads one of each."""
    if not enabled() or len(kernel_names) < 2:
        return
    fps = tuple(sorted({fp for fp in (fingerprint(k) for k in kfns if k is not None)
                        if fp is not None}))
    summaries = {fp: _made.get(("summary", fp)) for fp in fps}
    if len(fps) > 1 and all(summaries.values()):
        _write(group_key("summary", fps), {"entries": summaries})
    links = {name: _made.get(("link", tuple(group), name)) for name in kernel_names}
    key = group_key("link", tuple(group) + tuple(sorted(kernel_names)))
    if all(links.values()) and _write(key, {"entries": links}):
        held = _held_links.get()   # now in the bundle's entry: not written one by one
        if held is not None:
            for name in kernel_names:
                held.pop((tuple(group), name), None)


def lookup_summary(kfn) -> tuple[str, dict] | None:
    if not enabled():
        return None
    fp = fingerprint(kfn)
    if fp is None:
        return None
    entry = _prefetched.pop(fp, None)
    if entry is not None:
        entry = dict(entry)
    else:
        entry = _read(summary_key(fp), f"summary of {kfn.name}")
    if entry is None:
        return None
    try:
        entry["_kernels"] = [KernelInfo.from_json(k) for k in entry["kernels"]]
        entry["_input_registry"] = registry_from_json(entry["input_registry"])
        entry["_object_registry"] = registry_from_json(entry["object_registry"])
    except (KeyError, TypeError, ValueError, IndexError) as e:
        log.warning("ignoring warm-start index entry for %s: malformed summary (%s); it "
                    "will be rebuilt", kfn.name, e)
        return None
    return fp, entry


# -- link entries (executable images without the frontend) ------------------------------

def record_link(lk, ir_key, registry=None) -> None:
    """After the full path built ``lk``: remember the IR key's ``ir``/``spec_ids``
    digests and the launch metadata, under the fingerprints of the linked images;
    ``registry``: its image's property sets when the caller has them already."""
    group = getattr(lk, "warm_group", None)
    if not group or not enabled():
        return
    key = link_key(tuple(group), lk.name)
    # The entry depends only on the linked kernel (not on the target, mode or literal
    # values of this build): once this process has written it into the current cache
    # directory, another build of ``lk`` (a new spec-constant value set) would write
    # the same bytes again, so it does not while the file is there.
    written = (key.hexdigest, ir_key.parts["ir"], ir_key.parts["spec_ids"], _index_path(key))
    if getattr(lk, "_warm_link_written", None) == written and os.path.exists(written[3]):
        return
    try:
        fn = lk.module.function(lk.name)
        entry = {"kernel": KernelInfo.of(fn).to_json(),
                 "ir": ir_key.parts["ir"], "spec_ids_digest": ir_key.parts["spec_ids"],
                 "spec_ids": spec_ids_to_json(lk.spec_ids),
                 "registry": registry_to_json(registry if registry is not None else
                                              image_property_sets(lk.module, lk.spec_ids))}
    except Exception as e:  # noqa: BLE001
        log.debug("no warm-start link entry for %s: %s", lk.name, e)
        return
    held = _held_links.get()
    if held is not None:   # written by record_groups in the bundle's entry, or at the end
        held[(tuple(group), lk.name)] = (key, entry)
    elif _write(key, entry):
        lk._warm_link_written = written
    else:
        return
    _made[("link", tuple(group), lk.name)] = dict(entry, format=INDEX_FORMAT)


#: Link entries of the build under way that ``held_link_entries`` keeps back: (group,
#: kernel name) -> (key, entry). A context variable: the build's threads copy the
#: context, so they share the caller's dict.
_held_links: contextvars.ContextVar[dict | None] = contextvars.ContextVar(
    "pysycl_held_link_entries", default=None)


@contextlib.contextmanager
def held_link_entries():
    """Around the build of a bundle: its kernels' link entries are kept back, and the
    bundle-wide entry ``record_groups`` writes holds them (a 160-kernel bundle wrote
    160 small files it never read: its next start reads the bundle-wide entry); the
    entries it does not hold (a one-kernel bundle, a build that failed half way) are
    written one by one when the block ends."""
    held: dict = {}
    token = _held_links.set(held)
    try:
        yield
    finally:
        _held_links.reset(token)
        for key, entry in list(held.values()):
            _write(key, entry)


def _index_path(key):
    return index_cache()._path(key)


def lookup_links(group: tuple[str, ...], kernel_names: list[str]) -> dict[str, dict] | None:
    """The link entries of every kernel in ``kernel_names`` (a bundle's) from one read,
    or ``None``; when that entry is missing but every kernel has its own, it is
    written for next time."""
    key = group_key("link", tuple(group) + tuple(sorted(kernel_names)))
    found = _read(key, f"links of {len(kernel_names)} kernels")
    entries = found.get("entries") if found is not None else None
    if not isinstance(entries, dict) or set(entries) != set(kernel_names):
        entries = {name: _read(link_key(group, name), f"link of {name}")
                   for name in kernel_names}
        if any(e is None for e in entries.values()):
            return None
        _write(key, {"entries": entries})
    out = {}
    for name in kernel_names:
        entry = _decode_link(dict(entries[name]), name)
        if entry is None:
            return None
        out[name] = entry
    return out


def lookup_link(group: tuple[str, ...], kernel_name: str) -> dict | None:
    entry = _read(link_key(group, kernel_name), f"link of {kernel_name}")
    return None if entry is None else _decode_link(entry, kernel_name)


def _decode_link(entry: dict, kernel_name: str) -> dict | None:
    try:
        entry["_kernel"] = KernelInfo.from_json(entry["kernel"])
        entry["_spec_ids"] = spec_ids_from_json(entry["spec_ids"])
        entry["_registry"] = registry_from_json(entry["registry"])
        str(entry["ir"]), str(entry["spec_ids_digest"])
        if entry["_kernel"].name != kernel_name:
            raise ValueError("kernel name")
    except Exception as e:  # noqa: BLE001 - malformed entry
        log.warning("ignoring warm-start index entry for %s: malformed (%s); it will be "
                    "rebuilt", kernel_name, e)
        return None
    return entry


def fast_signature(kfn):
    """``kfn.signature()`` without parsing its source: the parameters from the code
    object, their annotations evaluated as the frontend does. Only used for a kernel
    whose fingerprint (annotations included) matched a successful full build."""
    def make():
        from ..frontend.signature import KernelSignature, param_info
        fn = kfn.py_function
        code = fn.__code__
        anns = getattr(fn, "__annotations__", {})
        infos = []
        for name in code.co_varnames[:code.co_argcount]:
            ann = anns[name]
            if isinstance(ann, str):
                ann = eval(ann, fn.__globals__, closure_vars(fn))  # noqa: S307 user's own code
            infos.append(param_info(name, ann))
        if any(p.kind == "reducer" and p.op is None for p in infos):
            # A reducer's operator comes from its uses (r += x): the source tells.
            from ..frontend.signature import kernel_signature
            return kernel_signature(kfn.parsed())
        first = infos[0] if infos and infos[0].kind == "index" else None
        return KernelSignature(tuple(infos), first.index_kind if first else None,
                               first.dims if first else None)
    return kfn._cached("signature", make)
