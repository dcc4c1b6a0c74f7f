"""Object images -> linked kernels -> executable images (the ``link`` half of the chain).

Link merges object images through ``passes.link`` (a duplicate kernel or exported
symbol is an error naming it; an unresolved import is ``errc.build`` naming it), then
assigns spec-constant numeric IDs over the whole linked module, then cuts one module
per kernel (device code split per kernel), except that the kernels of one Python module
that share ``device_image_scope`` device_globals stay in one module (an
:class:`ImageGroup`: one executable image, so one copy of each such variable). A
``device_image_scope`` variable used by kernels of two Python modules would be in two
images: ``errc.build`` with DPC++'s message. Each linked kernel (or group) becomes one
executable image per code-generation target:

    lower spec constants (mode) -> target IR passes (native_cpu: fission) -> codegen -> compiler

Binaries go through ``bundle/cache.py`` (memory + disk) keyed by the canonical IR of
the linked kernel, its spec-constant IDs, the target, the lowering mode and (literal
mode) the values, the pysycl version, the codegen ABI, the LLVM version and, for host
code, the host CPU. A cache miss logs which part changed. In memory, a kernel's default
link is kept on its kernel_id and the executable images of a linked kernel (or group)
on it (bounded: each literal spec-constant value set is an image of its own).

>>> resolve_lowering("auto", type("T", (), {"native_spec_constants": True})())
'native'
"""
from __future__ import annotations

import threading
from typing import Iterable, Mapping

from .. import config
from .._records import IdentityRecord
from ..detail import trace
from ..detail.memo import LRUMemo, memo_of
from ..errors import errc, exception
from ..ir.core import Module
from ..passes.spec_constants import SpecConstantIds, spec_constants_used
from . import build_chain, coarsening, stats, toolchain, warm_index
from .build_chain import BuildJob, Job
from .cache import CacheKey, default_cache
from .device_image import bundle_state, device_image, image_property_sets
from .kernel_id import kernel_id, kernel_id_by_name
from .sources import input_image, libraries_for, object_image

_lock = threading.Lock()   # guards _literal_sets and _scope_owners


class ImageGroup(IdentityRecord):
    """Kernels linked into one image because they share ``device_image_scope``
    variables: their names, their module and its spec-constant IDs."""

    _fields = ("names", "module", "spec_ids")
    names: tuple[str, ...]
    module: Module
    spec_ids: SpecConstantIds

    def __init__(self, names: tuple[str, ...], module: Module, spec_ids: SpecConstantIds):
        self.names = names
        self.module = module
        self.spec_ids = spec_ids
        # Its executable images by (target, mode, literal values, devices, checks).
        self.executables = LRUMemo(config.max_programs)

    @property
    def kernel_ids(self) -> list[kernel_id]:
        return [kernel_id_by_name(n) for n in self.names]


class LinkedKernel(IdentityRecord):
    """One kernel cut from a linked module, with the link's spec-constant IDs; ``group``:
    the :class:`ImageGroup` whose image holds it, if any. (A record compared by
    identity, with the ``repr`` of a dataclass: _records.py.)"""

    _fields = ("kid", "name", "module", "spec_ids", "_ir_text")
    kid: kernel_id
    name: str
    module: Module
    spec_ids: SpecConstantIds
    _ir_text: str | None = None
    group: ImageGroup | None = None

    def __init__(self, kid: kernel_id, name: str, module: Module, spec_ids: SpecConstantIds,
                 _ir_text: str | None = None):
        self.kid = kid
        self.name = name
        self.module = module
        self.spec_ids = spec_ids
        self._ir_text = _ir_text
        # Its executable images by (target, mode, literal values, devices, checks).
        self.executables = LRUMemo(config.max_programs)

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
    what = "; ".join(_what(o) for o in objects)
    build_chain.hit("link", "built", what)
    try:
        linked, ids = build_chain.run("link", modules, Job(what))
    except build_chain.UnresolvedSymbols as e:
        users = {sym: [_what(o) for o in objects if sym in o.imports] for sym in e.symbols}
        detail = "; ".join(f"{sym!r} (imported by {', '.join(users[sym]) or '?'})"
                           for sym in e.symbols)
        raise exception(errc.build, f"link failed: unresolved symbol {detail}") from None
    except exception as e:
        if e.code() in (errc.build, errc.feature_not_supported):
            raise
        raise exception(errc.build, f"link failed: {e}") from e
    except Exception as e:  # the linker's own errors name the duplicate symbol
        raise exception(errc.build, f"link failed: {e}") from e
    # Warm start: the link is a function of its inputs' source fingerprints (in order)
    # when every input has one (warm_index.py); ``None`` keeps it out of the index.
    fps = tuple(getattr(o, "_warm_fingerprint", None) for o in objects)
    group = fps if fps and all(fps) else None
    groups = {name: g for g in _image_scope_groups(linked, ids) for name in g.names}
    out = []
    for fn in linked.kernels:
        g = groups.get(fn.name)
        if g is not None:
            lk = LinkedKernel(kernel_id_by_name(fn.name), fn.name, g.module, g.spec_ids)
            lk.group = g
            lk.warm_group = None   # the warm-start index holds one kernel an image
        else:
            sub = toolchain.reachable_module(linked, [fn.name])
            used = spec_constants_used(sub, [fn.name])
            lk = LinkedKernel(kernel_id_by_name(fn.name), fn.name, sub, ids.restricted_to(used))
            lk.warm_group = group
        out.append(lk)
    return out


# device_image_scope variable -> the Python module whose kernels use it (per process: a
# second module's kernels would hold it in a second image).
_scope_owners: dict[str, str] = {}


def _translation_unit(kernel_name: str) -> str:
    kfn = kernel_id_by_name(kernel_name).kernel
    module = getattr(kfn, "module_name", None)
    return module if module else kernel_name.rpartition(".")[0]


def _image_scope_groups(linked: Module, ids: SpecConstantIds) -> list[ImageGroup]:
    """The kernels of ``linked`` that share ``device_image_scope`` variables, grouped
    (one group per set of kernels connected by them); ``errc.build`` when a variable is
    used by kernels of two Python modules (DPC++'s per-source split would put it in two
    images)."""
    scoped = {d.unique_id for d in linked.device_globals
              if "sycl-device-image-scope" in d.properties}
    if not scoped:
        return []
    uses = {}
    for fn in linked.kernels:
        sub = toolchain.reachable_module(linked, [fn.name])
        mine = {d.unique_id for d in sub.device_globals} & scoped
        if mine:
            uses[fn.name] = mine
    for uid in sorted(scoped):
        units = sorted({_translation_unit(n) for n, used in uses.items() if uid in used})
        if len(units) == 1:
            with _lock:
                units = sorted({_scope_owners.setdefault(uid, units[0]), units[0]})
        if len(units) > 1:
            raise exception(errc.build, f'device_global variable {uid} with property '
                            '"device_image_scope" is used in more than one device image '
                            f"(by kernels of Python modules {', '.join(units)}); keep the "
                            "kernels that use it in one module")
    groups, left = [], dict(uses)
    while left:
        name, used = next(iter(left.items()))
        members, shared = {name}, set(used)
        grew = True
        while grew:
            grew = False
            for n, u in left.items():
                if n not in members and u & shared:
                    members.add(n)
                    shared |= u
                    grew = True
        for n in members:
            del left[n]
        if len(members) > 1:
            names = tuple(f.name for f in linked.kernels if f.name in members)
            sub = toolchain.reachable_module(linked, list(names))
            groups.append(ImageGroup(names, sub,
                                     ids.restricted_to(spec_constants_used(sub, list(names)))))
    return groups


def default_linked_kernel(kid: kernel_id) -> LinkedKernel:
    """The kernel linked with the library images of every Python module imported so
    far that it needs (the default lookup's "link object, else build input")."""
    return kid.builds.get_or_make("link", lambda: _link_default(kid))


def _link_default(kid: kernel_id) -> LinkedKernel:
    inp = input_image(kid)
    lk = _shared_link(inp, kid) if len(inp.get_kernel_ids()) > 1 else None
    if lk is None:
        objects = [object_image(inp)] + [object_image(lib) for lib in libraries_for([inp])]
        linked = [lk for lk in link_objects(objects) if lk.name == kid.get_name()]
        if not linked:
            linked = link_objects(objects)[:1]
        lk = linked[0]
    lk.kid = kid
    return lk


def _shared_link(inp: device_image, kid: kernel_id) -> LinkedKernel | None:
    """The kernel's part of the one link of an input image of several kernels (kept on
    the image), so they share one ImageGroup, one executable image and one program."""
    def link() -> dict[str, LinkedKernel]:
        objects = [object_image(inp)] + [object_image(lib) for lib in libraries_for([inp])]
        return {lk.name: lk for lk in link_objects(objects)}
    return memo_of(inp).get_or_make("shared link", link).get(kid.get_name())


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
                 value_bytes: bytes, coarsen: str = "") -> dict[str, str]:
    """The part digests of a binary's cache key, in order: the linked kernel's IR and
    spec-constant IDs (given as digests), then the parts computed here (``coarsen``:
    the build's coarsening plans, ``coarsening.key_text``)."""
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
    if coarsen:   # coarsened kernels take one more argument and launch fewer items
        rest["coarsen"] = coarsen
    parts.update(CacheKey(rest).parts)
    return parts


def _cache_key(lk: LinkedKernel, target, mode: str, value_bytes: bytes,
               coarsen: str = "") -> CacheKey:
    ir = CacheKey({"ir": lk.ir_text, "spec_ids": repr(sorted(lk.spec_ids.ids.items()))}).parts
    return CacheKey.from_part_digests(_key_digests(ir["ir"], ir["spec_ids"], target, mode,
                                                   value_bytes, coarsen))


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
    chosen = coarsening.plans([entry["_kernel"]], target.backend)
    memo = (group, target.name, mode, value_bytes, tuple(devices), toolchain.build_checks(),
            coarsening.key_text(chosen))
    img = kid.warm_images.get(memo)
    if img is not None:
        return img
    key = CacheKey.from_part_digests(_key_digests(entry["ir"], entry["spec_ids_digest"],
                                                  target, mode, value_bytes,
                                                  coarsening.key_text(chosen)))
    if not default_cache().contains(key):   # e.g. new literal values, another CPU
        stats.bump("warm_index_misses")
        return None
    stats.bump("warm_index_hits")
    build_chain.hit("binary", "warm index", kid.get_name())
    holder: list = []

    def linked():
        if not holder:
            holder.append(linked_fn())
        return holder[0]

    job = BuildJob([kid.get_name()], spec_ids, target, mode, values, toolchain.build_checks(),
                   chosen)
    img = _WarmExecutable(
        bundle_state.executable, None, [kid], target=target.name,
        format=target.binary_format, devices=devices, binary=None,
        registry=coarsening.with_plans(entry["_registry"], chosen), spec_ids=spec_ids,
        lowering=mode, target_obj=target,
        spec_values=value_bytes, kernel_infos=[entry["_kernel"]],
        materialize=lambda: linked().module,
        llvm=lambda: build_chain.llvm_text(linked().module, job))
    img._linked_fn = linked
    img._binary_key = key
    img._binary_lock = threading.Lock()
    img._rebuild = lambda: build_executable(linked(), devices, mode, values).binary
    return kid.warm_images.get_or_make(memo, lambda: img)   # a thread's first one wins


def build_executable(lk: LinkedKernel, devices: list, mode: str = "auto",
                     values: Mapping[str, bytes] | None = None) -> device_image:
    """The executable image of ``lk`` for ``devices`` (which share one target).

    ``values``: symbolic ID -> bytes; they matter only to ``literal`` images (other
    modes take values at load or launch time), so only those are part of the key.
    """
    target = toolchain.device_target(devices[0])
    value_bytes = lk.spec_ids.buffer(values) if lk.spec_ids.ids else b""
    # A group's kernels are one image: built once for all of them.
    owner = lk.group if lk.group is not None else lk
    names = list(lk.group.names) if lk.group is not None else [lk.name]
    mode = _lowering_for_values(mode, names[0], target, value_bytes)
    value_bytes = value_bytes if mode == "literal" else b""
    chosen = coarsening.plans(lk.module.kernels, target.backend)
    memo = (target.name, mode, value_bytes, tuple(devices), toolchain.build_checks(),
            coarsening.key_text(chosen))
    return owner.executables.get_or_make(
        memo, lambda: _new_executable(lk, names, devices, target, mode, values, value_bytes,
                                      chosen))


def _new_executable(lk: LinkedKernel, names: list[str], devices: list, target, mode: str,
                    values: Mapping[str, bytes] | None, value_bytes: bytes,
                    chosen: dict[str, tuple[int, int]]) -> device_image:
    job = BuildJob(names, lk.spec_ids, target, mode, values, toolchain.build_checks(),
                   chosen)
    key = _cache_key(lk, target, mode, value_bytes, coarsening.key_text(chosen))
    about = {"lowering": mode}
    if trace.recorder() is not None:   # why a kernel is (not) coarsened, when tracing
        about["coarsening"] = coarsening.describe(lk.module, names, chosen)
    with trace.span(f"build {', '.join(names)} for {target.name}", "build", **about):
        binary, llvm = build_chain.build_binary(
            lk.module, job, key, default_cache(),
            label=f"kernel {', '.join(names)} for {target.name}")
    warm_index.record_link(lk, key)
    kids = lk.group.kernel_ids if lk.group is not None else [lk.kid]
    img = device_image(
        bundle_state.executable, lk.module, kids, target=target.name,
        format=target.binary_format, devices=devices, binary=binary,
        registry=coarsening.with_plans(image_property_sets(lk.module, lk.spec_ids), chosen),
        spec_ids=lk.spec_ids, lowering=mode, target_obj=target, spec_values=value_bytes,
        # A binary from the cache comes without its LLVM text: made again when asked.
        llvm=llvm if llvm is not None else lambda: build_chain.llvm_text(lk.module, job))
    img._linked = lk
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
