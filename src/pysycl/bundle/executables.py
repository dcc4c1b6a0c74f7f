"""Linked kernels -> executable images: the ``binary`` boundary of the build chain.

An executable image is one linked kernel (or ``ImageGroup``) built for one
code-generation target, spec-constant lowering, (literal mode) value set and set of
run-time checks. :func:`executable_images` finds each in the first cache tier that has
it, in the order of the ``binary`` stage's tiers (``build_chain.STAGES``):

1. memory: the images a linked kernel keeps (``LinkedKernel.executables``), or those a
   kernel_id keeps from the warm-start index (``kernel_id.warm_images``);
2. warm index (``warm_index.py``): the source fingerprints of the images to link give
   the build-cache key's IR digests and the image's metadata, so neither the frontend
   nor the link runs; the binary is read from the build cache when first loaded;
3. disk: the build cache (``cache.py``), keyed by the linked kernel's canonical IR,
   its spec-constant IDs, the target, the lowering and (literal mode) the values, the
   pysycl version, the codegen ABI, the compiler's source digest, the LLVM version and,
   for host code, the host CPU (a miss logs which part changed);
4. built: the back half of the build chain (``build_chain.build_binary``).

Tiers 3 and 4 need the linked kernel; a :class:`LinkSource` links on first need, so a
request that tier 2 answers links nothing.

>>> resolve_lowering("auto", type("T", (), {"native_spec_constants": True})())
'native'
"""
from __future__ import annotations

import threading
from typing import Callable, Iterable, Mapping

from .. import config
from ..detail import trace
from ..detail.gc_pause import no_full_collections
from ..detail.memo import Memo
from ..errors import errc, exception
from ..properties import as_properties, spec_constant_lowering
from . import build_chain, coarsening, stats, toolchain, warm_index
from .build_chain import BuildJob
from .cache import CacheKey, default_cache
from .device_image import bundle_state, device_image, image_property_sets, kernel_compatible
from .kernel_id import kernel_id
from .linker import LinkedKernel, default_linked_kernel
from .sources import input_image, object_image

_lock = threading.Lock()   # guards _literal_sets


# -- spec-constant lowering --------------------------------------------------------------

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
    p = as_properties(props)
    if p.has_property(spec_constant_lowering):
        return p.get_property(spec_constant_lowering).mode
    return "auto"


# -- build-cache keys ---------------------------------------------------------------------

def _key_digests(ir_digest: str, spec_ids_digest: str, target, mode: str,
                 value_bytes: bytes, coarsen: str = "",
                 checks: frozenset[str] | None = None) -> dict[str, str]:
    """The part digests of a binary's cache key, in order: the linked kernel's IR and
    spec-constant IDs (given as digests), then the parts computed here (``coarsen``:
    the build's coarsening plans, ``coarsening.key_text``; ``checks``: the run-time
    checks compiled in, default ``toolchain.build_checks()``)."""
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
    debug = toolchain.build_checks() if checks is None else checks
    if debug:  # debug builds compile checks in (codegen.debug_checks)
        rest["debug"] = ",".join(sorted(debug))
    if coarsen:   # coarsened kernels take one more argument and launch fewer items
        rest["coarsen"] = coarsen
    parts.update(CacheKey(rest).parts)
    return parts


def _cache_key(lk: LinkedKernel, job: BuildJob, value_bytes: bytes) -> CacheKey:
    ir = CacheKey({"ir": lk.ir_text, "spec_ids": repr(sorted(lk.spec_ids.ids.items()))}).parts
    return CacheKey.from_part_digests(_key_digests(
        ir["ir"], ir["spec_ids"], job.target, job.mode, value_bytes,
        coarsening.key_text(job.coarsen), job.checks))


# -- where linked kernels come from --------------------------------------------------------

class LinkSource:
    """The link that executable requests are made from. ``linked(name)`` links on first
    need, once (threads asking at once wait for the first). ``group``: the source
    fingerprints of the images linked, in link order, when every one has one and none
    has made its IR yet: then the warm-start index may answer without the link;
    ``infos``: kernel name -> what the index knows of its IR function (properties and
    attributes, for the device checks)."""

    def __init__(self, link: Callable[[], list[LinkedKernel]],
                 group: tuple[str, ...] | None = None, infos: Mapping | None = None):
        self._link = link
        self.group = group
        self.infos = dict(infos or {})
        self._memo = Memo()

    def linked_kernels(self) -> list[LinkedKernel]:
        return self._memo.get_or_make("linked", self._link)

    def linked(self, name: str) -> LinkedKernel:
        by_name = self._memo.get_or_make(
            "by name", lambda: {lk.kid.get_name(): lk for lk in self.linked_kernels()})
        return by_name[name]

    @property
    def did_link(self) -> bool:
        return self._memo.get("linked") is not None

    @classmethod
    def of(cls, linked: list[LinkedKernel]) -> "LinkSource":
        """A source of kernels linked already."""
        return cls(lambda: linked)


def default_source(kid: kernel_id) -> LinkSource:
    """The default lookup's link of ``kid`` (``linker.default_linked_kernel``): warm when
    its input image came from the index and imports nothing (a link with library images
    depends on definitions elsewhere)."""
    inp = input_image(kid)
    info = inp.kernel_function(kid) if inp.is_warm and not inp.imports else None
    if info is None:
        return LinkSource(lambda: [default_linked_kernel(kid)])
    group = (object_image(inp)._warm_fingerprint,)
    return LinkSource(lambda: [default_linked_kernel(kid)], group, {kid.get_name(): info})


# -- the tiers ------------------------------------------------------------------------------

#: An executable request for devices of which the index says none can run the kernel.
_INCOMPATIBLE = object()


@no_full_collections()
def executable_images(jobs: list[tuple[LinkSource, kernel_id, list]], mode: str,
                      values: Mapping[str, bytes] | None) -> list[device_image]:
    """The executable image of each ``(source, kernel, devices of one target)`` job, in
    order, from the first tier that has it (see the module doc); a kernel none of the
    devices can run has none. ``values``: symbolic ID -> bytes."""
    found = _from_warm_index(jobs, mode, values)
    builds = []
    for i, (source, kid, devices) in enumerate(jobs):
        if found[i] is None:
            lk = source.linked(kid.get_name())
            fn = lk.module.function(lk.name)
            ok = [d for d in devices if kernel_compatible(fn, d)]
            if ok:
                builds.append((i, lk, ok))
    for (i, _, _), img in zip(builds, _build_all([(lk, ok) for _, lk, ok in builds],
                                                 mode, values)):
        found[i] = img
    return [img for img in found if img is not None and img is not _INCOMPATIBLE]


def _from_warm_index(jobs, mode: str, values) -> list:
    """Tier 2 for each job: an image, ``_INCOMPATIBLE``, or None (ask the link). The
    link entries of one source's kernels are read in one go when there are several."""
    entries: dict[int, dict | None] = {}
    for source in dict.fromkeys(s for s, _, _ in jobs if s.group):
        names = list(dict.fromkeys(kid.get_name() for s, kid, _ in jobs if s is source))
        entries[id(source)] = (warm_index.lookup_links(source.group, names)
                               if len(names) > 1 else None)
    out: list = []
    for source, kid, devices in jobs:
        if not source.group:
            out.append(None)
            continue
        info = source.infos.get(kid.get_name())
        ok = [d for d in devices if info is None or kernel_compatible(info, d)]
        if not ok:
            out.append(_INCOMPATIBLE if info is not None else None)
            continue
        group_entries = entries.get(id(source))
        out.append(_warm_image(source, kid, ok, mode, values,
                               group_entries.get(kid.get_name()) if group_entries else None))
    return out


class _WarmExecutable(device_image):
    """An executable image made from the warm-start index: property sets, spec-constant
    layout and kernel metadata; the binary is read from the build cache when first
    needed (a bundle of many kernels starts without reading them all), and there is no
    IR until something asks for it (``module`` or ``_linked`` then link it through the
    normal path, which also rebuilds a binary gone from the cache)."""

    _linked_fn = None
    _binary_key = None
    _rebuild = None
    _binary_lock = threading.Lock()    # replaced per image by _warm_image

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


def _warm_image(source: LinkSource, kid: kernel_id, devices: list, mode: str,
                values: Mapping[str, bytes] | None, entry: dict | None) -> device_image | None:
    """The image of ``kid`` from the warm-start index and the build cache, or None (then
    the link's path runs, which updates the index); ``entry``: the kernel's link entry
    when it was read already."""
    name = kid.get_name()
    if entry is None:
        entry = warm_index.lookup_link(source.group, name)
    if entry is None:
        stats.bump("warm_index_misses")
        return None
    target = toolchain.device_target(devices[0])
    spec_ids = entry["_spec_ids"]
    value_bytes = spec_ids.buffer(values) if spec_ids.ids else b""
    mode = _lowering_for_values(mode, name, target, value_bytes)
    value_bytes = value_bytes if mode == "literal" else b""
    checks = toolchain.build_checks()
    chosen = coarsening.plans([entry["_kernel"]], target.backend)
    memo = (source.group, target.name, mode, value_bytes, tuple(devices), checks,
            coarsening.key_text(chosen))
    img = kid.warm_images.get(memo)
    if img is not None:
        build_chain.hit("binary", "memory", name)
        return img
    key = CacheKey.from_part_digests(_key_digests(
        entry["ir"], entry["spec_ids_digest"], target, mode, value_bytes,
        coarsening.key_text(chosen), checks))
    if not default_cache().contains(key):   # e.g. new literal values, another CPU
        stats.bump("warm_index_misses")
        return None
    stats.bump("warm_index_hits")
    build_chain.hit("binary", "warm index", name)
    job = BuildJob([name], spec_ids, target, mode, values, checks, chosen)
    img = _new_warm_image(source, kid, devices, entry, job, key, value_bytes)
    return kid.warm_images.get_or_make(memo, lambda: img)   # a thread's first one wins


def _new_warm_image(source: LinkSource, kid: kernel_id, devices: list, entry: dict,
                    job: BuildJob, key: CacheKey, value_bytes: bytes) -> _WarmExecutable:
    def linked() -> LinkedKernel:
        return source.linked(kid.get_name())

    img = _WarmExecutable(
        bundle_state.executable, None, [kid], target=job.target.name,
        format=job.target.binary_format, devices=devices, binary=None,
        registry=coarsening.with_plans(entry["_registry"], job.coarsen),
        spec_ids=job.spec_ids, lowering=job.mode,
        target_obj=job.target, spec_values=value_bytes, kernel_infos=[entry["_kernel"]],
        materialize=lambda: linked().module,
        llvm=lambda: build_chain.llvm_text(linked().module, job))
    img._linked_fn = linked
    img._binary_key = key
    img._binary_lock = threading.Lock()
    img._rebuild = lambda: build_executable(linked(), devices, job.mode, job.values).binary
    return img


def build_executable(lk: LinkedKernel, devices: list, mode: str = "auto",
                     values: Mapping[str, bytes] | None = None) -> device_image:
    """The executable image of ``lk`` for ``devices`` (which share one target): tiers
    1 (memory), 3 (disk) and 4 (built).

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
    checks = toolchain.build_checks()
    chosen = coarsening.plans(lk.module.kernels, target.backend)
    memo = (target.name, mode, value_bytes, tuple(devices), checks,
            coarsening.key_text(chosen))
    img = owner.executables.get(memo)
    if img is not None:
        build_chain.hit("binary", "memory", ", ".join(names))
        return img
    job = BuildJob(names, lk.spec_ids, target, mode, values, checks, chosen)
    return owner.executables.get_or_make(
        memo, lambda: _new_executable(lk, devices, job, value_bytes))


def _new_executable(lk: LinkedKernel, devices: list, job: BuildJob,
                    value_bytes: bytes) -> device_image:
    key = _cache_key(lk, job, value_bytes)
    target = job.target
    about = {"lowering": job.mode}
    if trace.recorder() is not None:   # why a kernel is (not) coarsened, when tracing
        about["coarsening"] = coarsening.describe(lk.module, job.names, job.coarsen)
    with trace.span(f"build {job.what}", "build", **about):
        binary, llvm = build_chain.build_binary(lk.module, job, key, default_cache(),
                                                label=f"kernel {job.what}")
    sets = image_property_sets(lk.module, lk.spec_ids)
    warm_index.record_link(lk, key, sets)
    kids = lk.group.kernel_ids if lk.group is not None else [lk.kid]
    img = device_image(
        bundle_state.executable, lk.module, kids, target=target.name,
        format=target.binary_format, devices=devices, binary=binary,
        registry=coarsening.with_plans(sets, job.coarsen),
        spec_ids=lk.spec_ids, lowering=job.mode, target_obj=target, spec_values=value_bytes,
        # A binary from the cache comes without its LLVM text: made again when asked.
        llvm=llvm if llvm is not None else lambda: build_chain.llvm_text(lk.module, job))
    img._linked = lk
    return img


def _build_all(jobs: list[tuple[LinkedKernel, list]], mode: str,
               values: Mapping[str, bytes] | None) -> list[device_image]:
    """``build_executable`` for each job, on ``config.build_jobs()`` threads at once: LLVM
    (parse, optimise, emit: three quarters of a native kernel's build) runs without the
    GIL, each thread with a TargetMachine and LLVM contexts of its own (and, on the
    native CPU, outside llvmlite's lock: threads are in LLVM together), while another
    thread runs the Python passes and code generation of the next kernel."""
    threads = min(config.build_jobs(), len(jobs))
    if threads <= 1:
        return [build_executable(lk, ok, mode, values) for lk, ok in jobs]
    # Imported here: a process whose kernels all come from caches never needs a pool.
    import contextvars
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(threads, thread_name_prefix="pysycl-build") as pool:
        # Each job runs in a copy of the caller's context: a checked build
        # (toolchain.checked_builds, a context variable) stays checked on every thread.
        futures = [pool.submit(contextvars.copy_context().run, build_executable, lk, ok,
                               mode, values) for lk, ok in jobs]
        return [f.result() for f in futures]


def group_by_target(devices: Iterable) -> list[list]:
    """Devices grouped by code-generation target, in first-seen order."""
    groups: dict[str, list] = {}
    for d in devices:
        groups.setdefault(toolchain.device_target_name(d), []).append(d)
    return list(groups.values())


def build_for_devices(linked: list[LinkedKernel], devices: list, mode: str,
                      values: Mapping[str, bytes] | None) -> list[device_image]:
    """Executable images for every linked kernel on every device target, in that order
    (a kernel a target's devices cannot run has none there)."""
    source = LinkSource.of(linked)
    return executable_images([(source, lk.kid, group) for group in group_by_target(devices)
                              for lk in linked], mode, values)
