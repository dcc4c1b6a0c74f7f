"""Object images -> linked kernels -> executable images (the ``link`` half of the chain).

Link merges object images through ``passes.link`` (a duplicate kernel or exported
symbol is an error naming it; an unresolved import is ``errc.build`` naming it), then
assigns spec-constant numeric IDs over the whole linked module, then cuts one module
per kernel (device code split per kernel). Each linked kernel becomes one executable
image per code-generation target:

    lower spec constants (mode) -> target IR passes (native_cpu: fission) -> codegen -> compiler

Binaries go through ``bundle/cache.py`` (memory + disk) keyed by the canonical IR of
the linked kernel, its spec-constant IDs, the target, the lowering mode and (literal
mode) the values, the pysycl version, the codegen ABI, the LLVM version and, for host
code, the host CPU. A cache miss logs which part changed.

>>> resolve_lowering("auto", type("T", (), {"native_spec_constants": True})())
'native'
"""
from __future__ import annotations

import threading
from typing import Iterable, Mapping

from .. import config
from .._records import IdentityRecord
from ..detail.lru import LRU
from ..errors import errc, exception
from ..ir.core import Module
from ..passes.spec_constants import (SpecConstantIds, assign_spec_constant_ids,
                                     lower_spec_constants, spec_constants_used)
from . import stats, toolchain, warm_index
from .cache import CacheKey, default_cache
from .device_image import bundle_state, device_image, image_property_sets
from .kernel_id import kernel_id, kernel_id_by_name
from .sources import input_image, libraries_for, object_image

_lock = threading.RLock()
_default_links: dict[int, tuple[object, "LinkedKernel"]] = {}   # id(kfn) -> (kfn, linked)
# Executable images by (linked kernel, target, mode, literal values, devices, checks):
# bounded, as each literal spec-constant value set is an image of its own.
_executables = LRU(config.max_programs)
_key_locks: dict[tuple, threading.Lock] = {}


class LinkedKernel(IdentityRecord):
    """One kernel cut from a linked module, with the link's spec-constant IDs. (A record
    compared by identity, with the ``repr`` of a dataclass: _records.py.)"""

    _fields = ("kid", "name", "module", "spec_ids", "_ir_text")
    kid: kernel_id
    name: str
    module: Module
    spec_ids: SpecConstantIds
    _ir_text: str | None = None

    def __init__(self, kid: kernel_id, name: str, module: Module, spec_ids: SpecConstantIds,
                 _ir_text: str | None = None):
        self.kid = kid
        self.name = name
        self.module = module
        self.spec_ids = spec_ids
        self._ir_text = _ir_text

    @property
    def ir_text(self) -> str:
        if self._ir_text is None:
            self._ir_text = toolchain.print_ir(self.module)
        return self._ir_text


def _what(obj: device_image) -> str:
    return ", ".join(k.get_name() for k in obj.get_kernel_ids()) or f"library {obj.translation_unit}"


def link_objects(objects: Iterable[device_image]) -> list[LinkedKernel]:
    """Link object images; one ``LinkedKernel`` per kernel in them."""
    objects = list(dict.fromkeys(objects))
    modules = [o.module for o in objects]
    if not modules:
        return []
    stats.bump("link_count")
    try:
        linked = toolchain.link_modules([toolchain.clone(m) for m in modules])
    except exception as e:
        if e.code() in (errc.build, errc.feature_not_supported):
            raise
        raise exception(errc.build, f"link failed: {e}") from e
    except Exception as e:  # the linker's own errors name the duplicate symbol
        raise exception(errc.build, f"link failed: {e}") from e
    missing = toolchain.unresolved_symbols(linked)
    if missing:
        users = {sym: [_what(o) for o in objects if sym in o.imports] for sym in missing}
        detail = "; ".join(f"{sym!r} (imported by {', '.join(users[sym]) or '?'})"
                           for sym in missing)
        raise exception(errc.build, f"link failed: unresolved symbol {detail}")
    ids = assign_spec_constant_ids(linked)
    # Warm start: the link is a function of its inputs' source fingerprints (in order)
    # when every input has one (warm_index.py); ``None`` keeps it out of the index.
    fps = tuple(getattr(o, "_warm_fingerprint", None) for o in objects)
    group = fps if fps and all(fps) else None
    out = []
    for fn in linked.kernels:
        sub = toolchain.reachable_module(linked, [fn.name])
        used = spec_constants_used(sub, [fn.name])
        lk = LinkedKernel(kernel_id_by_name(fn.name), fn.name, sub, ids.restricted_to(used))
        lk.warm_group = group
        out.append(lk)
    return out


def default_linked_kernel(kid: kernel_id) -> LinkedKernel:
    """The kernel linked with the library images of every Python module imported so
    far that it needs (the default lookup's "link object, else build input")."""
    kfn = kid.kernel
    hit = _default_links.get(id(kfn))
    if hit is not None and hit[0] is kfn:
        return hit[1]
    with _lock:
        lock = _key_locks.setdefault(("link", id(kfn)), threading.Lock())
    with lock:
        hit = _default_links.get(id(kfn))
        if hit is not None and hit[0] is kfn:
            return hit[1]
        inp = input_image(kid)
        objects = [object_image(inp)] + [object_image(lib) for lib in libraries_for([inp])]
        linked = [lk for lk in link_objects(objects) if lk.name == kid.get_name()]
        if not linked:
            linked = link_objects(objects)[:1]
        lk = linked[0]
        lk.kid = kid
        _default_links[id(kfn)] = (kfn, lk)
        return lk


def resolve_lowering(requested: str, target) -> str:
    """``auto`` -> native where the target takes spec constants after codegen (SPIR-V),
    else literal; ``literal``/``emulated`` as asked."""
    if requested in (None, "auto"):
        return "native" if getattr(target, "native_spec_constants", False) else "literal"
    if requested not in ("literal", "emulated", "native"):
        raise exception(errc.invalid, f"unknown spec constant lowering {requested!r}")
    return requested


# (kernel name, target name) -> the literal value sets built so far, up to
# config.literal_spec_builds() of them.
_literal_sets: dict[tuple[str, str], set[bytes]] = {}


def _lowering_for_values(requested: str, kernel: str, target, value_bytes: bytes) -> str:
    """``resolve_lowering``, except that an ``auto`` literal build of a kernel that has
    had ``config.literal_spec_builds()`` value sets already becomes emulated: one
    image then serves every later value set (a value set built before stays literal,
    so its image is found again)."""
    mode = resolve_lowering(requested, target)
    if mode != "literal" or requested not in (None, "auto") or not value_bytes:
        return mode
    key = (kernel, target.name)
    with _lock:
        seen = _literal_sets.setdefault(key, set())
        if value_bytes in seen:
            return mode
        if len(seen) < config.literal_spec_builds():
            seen.add(value_bytes)
            return mode
    return "emulated"


def lowering_from_properties(props) -> str:
    """The ``sycl.spec_constant_lowering`` mode in a build property list (or ``auto``)."""
    if props is None:
        return "auto"
    from ..properties import as_properties, spec_constant_lowering
    p = as_properties(props)
    if p.has_property(spec_constant_lowering):
        return p.get_property(spec_constant_lowering).mode
    return "auto"


def _key_digests(ir_digest: str, spec_ids_digest: str, target, mode: str,
                 value_bytes: bytes) -> dict[str, str]:
    """The part digests of a binary's cache key, in order: the linked kernel's IR and
    spec-constant IDs (given as digests), then the parts computed here."""
    parts = {"ir": ir_digest, "spec_ids": spec_ids_digest}
    rest = {
        "target": "|".join((target.name, target.triple, target.binary_format, target.cpu,
                            target.features, target.data_layout)),
        "spec_mode": mode,
        "spec_values": value_bytes,
        "pysycl": toolchain.pysycl_version(),
        "codegen_abi": str(toolchain.CODEGEN_ABI),
        "compiler": toolchain.compiler_digest(),
        "llvm": toolchain.llvm_version(),
    }
    if target.backend == "native_cpu":
        rest["host_cpu"] = toolchain.host_cpu()
    debug = toolchain.build_checks()
    if debug:  # debug builds compile checks in (codegen.debug_checks)
        rest["debug"] = ",".join(sorted(debug))
    parts.update(CacheKey(rest).parts)
    return parts


def _cache_key(lk: LinkedKernel, target, mode: str, value_bytes: bytes) -> CacheKey:
    ir = CacheKey({"ir": lk.ir_text, "spec_ids": repr(sorted(lk.spec_ids.ids.items()))}).parts
    return CacheKey.from_part_digests(_key_digests(ir["ir"], ir["spec_ids"], target, mode,
                                                   value_bytes))


class _WarmExecutable(device_image):
    """An executable image made from the warm-start index: property sets, spec-constant
    layout and kernel metadata; the binary is read from the build cache when first
    needed (a bundle of many kernels starts without reading them all), and there is no
    IR until something asks for it (``module`` or ``_linked`` then link it through the
    normal path, which also rebuilds a binary gone from the cache)."""

    _linked_fn = None
    _binary_key = None
    _rebuild = None
    _binary_lock = threading.Lock()    # replaced per image by warm_executable

    @property
    def _linked(self):
        return self._linked_fn()

    @property
    def _binary(self):
        value = self.__dict__.get("_read_binary")
        if value is None and self._binary_key is not None:
            with self._binary_lock:
                value = self.__dict__.get("_read_binary")
                if value is None:
                    stats.bump("warm_binary_reads")
                    value = default_cache().get(self._binary_key) or self._rebuild()
                    self.__dict__["_read_binary"] = value
        return value

    @_binary.setter
    def _binary(self, value):
        self.__dict__["_read_binary"] = value


def warm_executable(group: tuple, kid: kernel_id, devices: list, mode: str,
                    values: Mapping[str, bytes] | None, linked_fn,
                    entry: dict | None = None) -> device_image | None:
    """The executable image of kernel ``kid`` of the link of the images fingerprinted
    ``group``, from the warm-start index and the build cache, or ``None`` (then the
    caller takes the full path, which updates the index). ``linked_fn()`` gives the
    ``LinkedKernel`` the normal path would (only called if the IR is asked for);
    ``entry``: the kernel's link entry when the caller read it already."""
    if entry is None:
        entry = warm_index.lookup_link(group, kid.get_name())
    if entry is None:
        stats.bump("warm_index_misses")
        return None
    target = toolchain.device_target(devices[0])
    spec_ids = entry["_spec_ids"]
    value_bytes = spec_ids.buffer(values) if spec_ids.ids else b""
    mode = _lowering_for_values(mode, kid.get_name(), target, value_bytes)
    value_bytes = value_bytes if mode == "literal" else b""
    memo = ("warm", group, kid.get_name(), target.name, mode, value_bytes, tuple(devices),
            toolchain.build_checks())
    img = _executables.get(memo)
    if img is not None:
        return img
    key = CacheKey.from_part_digests(_key_digests(entry["ir"], entry["spec_ids_digest"],
                                                  target, mode, value_bytes))
    if not default_cache().contains(key):   # e.g. new literal values, another CPU
        stats.bump("warm_index_misses")
        return None
    stats.bump("warm_index_hits")
    holder: list = []

    def linked():
        if not holder:
            holder.append(linked_fn())
        return holder[0]

    img = _WarmExecutable(
        bundle_state.executable, None, [kid], target=target.name,
        format=target.binary_format, devices=devices, binary=None,
        registry=entry["_registry"], spec_ids=spec_ids, lowering=mode, target_obj=target,
        spec_values=value_bytes, kernel_infos=[entry["_kernel"]],
        materialize=lambda: linked().module)
    img._linked_fn = linked
    img._binary_key = key
    img._binary_lock = threading.Lock()
    img._rebuild = lambda: build_executable(linked(), devices, mode, values).binary
    with _lock:
        found = _executables.get(memo)
        if found is not None:
            return found
        _executables.put(memo, img)
    return img


def build_executable(lk: LinkedKernel, devices: list, mode: str = "auto",
                     values: Mapping[str, bytes] | None = None) -> device_image:
    """The executable image of ``lk`` for ``devices`` (which share one target).

    ``values``: symbolic ID -> bytes; they matter only to ``literal`` images (other
    modes take values at load or launch time), so only those are part of the key.
    """
    target = toolchain.device_target(devices[0])
    value_bytes = lk.spec_ids.buffer(values) if lk.spec_ids.ids else b""
    mode = _lowering_for_values(mode, lk.name, target, value_bytes)
    value_bytes = value_bytes if mode == "literal" else b""
    memo = (id(lk), target.name, mode, value_bytes, tuple(devices), toolchain.build_checks())
    img = _executables.get(memo)
    if img is not None:
        return img
    with _lock:
        lock = _key_locks.setdefault(("exe",) + memo, threading.Lock())
    with lock:
        img = _executables.get(memo)
        if img is not None:
            return img
        llvm_text: list[str] = []

        def compile_binary() -> bytes:
            # Any failure on the way is the kernel's build error (IR read from a file
            # may pass the verifier and still break an assumption of a lowering).
            try:
                module = toolchain.clone(lk.module)
                lower_spec_constants(module, lk.spec_ids, mode,
                                     values if mode == "literal" else None)
                module = toolchain.kernel_passes(module, target)
                llvm = toolchain.codegen(module, target)
                llvm_text.append(llvm)
                return toolchain.target_compile(target, llvm, [lk.name])
            except exception:
                raise
            except Exception as e:
                raise exception(errc.build, f"building kernel {lk.name} for {target.name} "
                                            f"failed: {type(e).__name__}: {e}") from e

        key = _cache_key(lk, target, mode, value_bytes)
        binary = default_cache().get_or_build(key, compile_binary,
                                              label=f"kernel {lk.name} for {target.name}")
        warm_index.record_link(lk, key)
        img = device_image(
            bundle_state.executable, lk.module, [lk.kid], target=target.name,
            format=target.binary_format, devices=devices, binary=binary,
            registry=image_property_sets(lk.module, lk.spec_ids), spec_ids=lk.spec_ids,
            lowering=mode, llvm=llvm_text[0] if llvm_text else None, target_obj=target,
            spec_values=value_bytes)
        img._linked = lk
        _executables.put(memo, img)
    with _lock:
        _key_locks.pop(("exe",) + memo, None)
    return img


def group_by_target(devices: Iterable) -> list[list]:
    """Devices grouped by code-generation target, in first-seen order."""
    groups: dict[str, list] = {}
    for d in devices:
        groups.setdefault(toolchain.device_target_name(d), []).append(d)
    return list(groups.values())


def build_for_devices(linked: list[LinkedKernel], devices: list, mode: str,
                      values: Mapping[str, bytes] | None) -> list[device_image]:
    """Executable images for every linked kernel on every device target, in that order.

    Kernels build on ``config.build_jobs()`` threads at once: LLVM (parse, optimise,
    emit: two thirds of a native kernel's build) runs without the GIL, each thread with
    a TargetMachine and LLVM contexts of its own, while another thread runs the Python
    passes and code generation of the next kernel."""
    from .device_image import kernel_compatible
    jobs = []
    for group in group_by_target(devices):
        for lk in linked:
            fn = lk.module.function(lk.name)
            ok = [d for d in group if kernel_compatible(fn, d)]
            if ok:
                jobs.append((lk, ok))
    threads = min(config.build_jobs(), len(jobs))
    if threads <= 1:
        return [build_executable(lk, ok, mode, values) for lk, ok in jobs]
    import contextvars
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(threads, thread_name_prefix="pysycl-build") as pool:
        # Each job runs in a copy of the caller's context: a checked build
        # (toolchain.checked_builds, a context variable) stays checked on every thread.
        futures = [pool.submit(contextvars.copy_context().run, build_executable, lk, ok,
                               mode, values) for lk, ok in jobs]
        return [f.result() for f in futures]
