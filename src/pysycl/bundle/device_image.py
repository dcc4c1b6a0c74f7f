"""``sycl.device_image`` (SYCL 2020 4.11.14) and ``sycl.bundle_state``.

An image is immutable once made and may be shared by several bundles (bundles carry
the spec-constant values, images do not). Input and object images hold pysycl IR
(``format == "ir"``, ``target == "generic"``): one image per kernel (the kernel, the
device functions it calls, its ``@sycl.external`` imports as declarations) and one
library image per Python module that defines ``@sycl.external`` functions. An
executable image holds one kernel's binary for one code-generation target and knows
the devices it was built for; the device's driver loads it lazily, once per device
(and per set of native spec-constant values).

>>> bundle_state.executable.value
2
"""
from __future__ import annotations

import enum
import threading
from typing import Any, Iterable

from ..properties.aspects import aspect
from ..errors import errc, exception
from ..ir.core import Function, Module
from . import property_sets as ps
from . import build_chain, programs, toolchain
from .build_chain import LoadJob
from .cache import device_code_cache
from ..detail.symbols import device_global_symbol
from .kernel_id import kernel_id, kernel_id_by_name, to_kernel_ids


class bundle_state(enum.Enum):
    """``sycl::bundle_state``; values as SYCLBIN's ``state``."""

    input = 0
    object = 1
    executable = 2


GENERIC_TARGET = "generic"


class device_image:
    """One indivisible unit of compilation/linking (users never construct one)."""

    #: IR read from a bundle file that this user did not sign: code made from it is
    #: built with bounds checks (``toolchain.checked_builds``).
    untrusted = False

    def __init__(self, state: bundle_state, module: Module | None, kernel_ids: Iterable[kernel_id],
                 *, target: str = GENERIC_TARGET, format: str = "ir", devices: Iterable = (),
                 binary: bytes | None = None, registry: ps.PropertySetRegistry | None = None,
                 spec_ids=None, lowering: str | None = None, translation_unit: str | None = None,
                 llvm=None, target_obj=None, spec_values: bytes = b"",
                 materialize=None, kernel_infos=None):
        self.state = state
        self.target = target
        self.format = format
        self.spec_constant_lowering = lowering
        self.translation_unit = translation_unit
        self._module = module
        self._kernel_ids = tuple(kernel_ids)
        self._devices = list(devices)
        self._binary = binary
        self._registry = registry if registry is not None else image_property_sets(module)
        self._spec_ids = spec_ids               # passes.spec_constants.SpecConstantIds
        self._spec_values = spec_values         # literal images: the buffer they were built for
        # The LLVM text: a str, or (a binary found in a cache) a function that makes it
        # again through the same stages, so ``asm`` shows the same wherever it came from.
        self._llvm = llvm
        self._target_obj = target_obj
        self._load_lock = threading.Lock()
        # Warm start (warm_index.py): an image made from the source index has no IR
        # until something asks for it; ``materialize()`` makes it (through the
        # frontend), and ``kernel_infos`` answer the kernel queries meanwhile.
        self._materialize = materialize if module is None else None
        self._kernel_infos = list(kernel_infos or ())

    # -- SYCL API --
    def has_kernel(self, kernel, device=None) -> bool:
        """True if the image contains ``kernel`` (a kernel_id or @sycl.kernel function),
        and, with ``device``, can run on it."""
        try:
            kid = to_kernel_ids([kernel])[0]
        except exception:
            return False
        if kid not in self._kernel_ids:
            return False
        return device is None or self.compatible_with(device)

    @property
    def property_sets(self) -> dict[str, dict[str, int | bytes]]:
        """DPC++ property sets: set name -> {name: u32 int | bytes}."""
        return self._registry.to_dict()

    @property
    def asm(self) -> dict[str, str]:
        """Readable stages: ``"ir"``, ``"llvm"`` and ``"spirv"``/``"ptx"`` as available."""
        out: dict[str, str] = {}
        if self.module is not None:
            out["ir"] = toolchain.print_ir_with_locs(self.module)
        llvm = self.llvm
        if llvm is not None:
            out["llvm"] = llvm
        if self._binary is not None:
            if self.format == "ptx":
                out["ptx"] = self._binary.decode("utf-8", "replace")
            elif self.format == "spirv" and self._target_obj is not None:
                out["spirv"] = toolchain.disassemble(self._target_obj, self._binary)
            elif self._target_obj is not None:
                out["object"] = toolchain.disassemble(self._target_obj, self._binary)
        return out

    @property
    def llvm(self) -> str | None:
        """The LLVM text the binary was made from (made again on first use when the
        binary came from a cache), or None (an image read from a file)."""
        llvm = self._llvm
        if callable(llvm):
            with self._load_lock:
                if callable(self._llvm):
                    self._llvm = self._llvm()
                llvm = self._llvm
        return llvm

    def get_kernel_ids(self) -> list[kernel_id]:
        return list(self._kernel_ids)

    def get_devices(self) -> list:
        return list(self._devices)

    # -- pysycl internals --
    @property
    def module(self) -> Module | None:
        if self._module is None and self._materialize is not None:
            with self._load_lock:
                if self._module is None and self._materialize is not None:
                    self._module = self._materialize()
                    self._materialize = None
        return self._module

    @property
    def is_warm(self) -> bool:
        """Made from the warm-start index, IR not made yet."""
        return self._module is None and self._materialize is not None

    @property
    def binary(self) -> bytes | None:
        return self._binary

    @property
    def exports(self) -> list[str]:
        return list(self._registry.get(ps.EXPORTED_SYMBOLS, {}))

    @property
    def imports(self) -> list[str]:
        return list(self._registry.get(ps.IMPORTED_SYMBOLS, {}))

    @property
    def kernel_names(self) -> list[str]:
        return list(self._registry.get(ps.KERNEL_NAMES, {}))

    @property
    def spec_ids(self):
        return self._spec_ids

    def spec_constants_used(self) -> list[str]:
        """Symbolic IDs of the spec constants this image reads."""
        if self._spec_ids is not None:
            return list(self._spec_ids.offsets)
        if self.module is None:
            return list(self._registry.get(ps.SPEC_CONSTANTS, {}))
        seen: dict[str, None] = {}
        for fn in self.module.functions:
            for op in fn.walk():
                if op.name == "spec.get":
                    seen.setdefault(op.attrs["id"], None)
        return list(seen)

    def uses_native_spec_constants(self, devices: Iterable = ()) -> bool:
        if self.state is bundle_state.executable:
            return self.spec_constant_lowering == "native"
        devs = list(devices)
        return bool(devs) and all(toolchain.device_target(d).native_spec_constants for d in devs)

    def compatible_with(self, device) -> bool:
        if self.state is bundle_state.executable:
            return any(toolchain.is_descendant(device, d) for d in self._devices)
        if self.is_warm:
            return all(kernel_compatible(k, device) for k in self._kernel_infos)
        if self.module is None:
            return True
        return all(kernel_compatible(k, device) for k in self._module.kernels)

    def kernel_function(self, kid: kernel_id) -> Function | None:
        """The IR function of kernel ``kid`` in this image (of a warm image, its
        ``warm_index.KernelInfo``: name, properties, attributes)."""
        if self.is_warm:
            kernels = self._kernel_infos
        elif self.module is None:
            return None
        else:
            kernels = self._module.kernels
        for f in kernels:
            if f.name == kid.get_name():
                return f
        return kernels[0] if len(kernels) == 1 and kid in self._kernel_ids else None

    def program(self, device, native_values: dict[int, bytes] | None = None,
                ctx_handle=None, holder=None):
        """The program loaded through ``device``'s driver (once per device, driver
        context and native spec-constant value set; lazily, at first launch), kept in
        the process's bounded set of loaded programs (``programs.py``): a program
        evicted from it is loaded again when asked for. ``ctx_handle``: a user-made
        context's driver context (None: the default one). ``holder``: told through
        ``forget_program`` when the program is evicted."""
        key = (self, device, tuple(sorted((native_values or {}).items())), ctx_handle)
        prog = programs.loaded.lookup(key, holder)
        if prog is not None:
            return prog
        with self._load_lock:
            prog = programs.loaded.lookup(key, holder)
            if prog is None:
                prog = self._load(device, native_values, ctx_handle)
                programs.loaded.insert(key, prog, holder,
                                       bool(self._registry.get(ps.DEVICE_GLOBALS)))
        return prog

    def _load(self, device, native_values, ctx_handle):
        """The build chain's ``load`` stage for this image's binary."""
        binary = self._binary   # a warm image reads it from the build cache here
        if binary is None:
            raise exception(errc.invalid, "only executable images can be loaded")
        driver = toolchain.driver_for(device)
        code_cache = device_code_cache() if driver.compiles_at_load else None
        job = LoadJob(driver, device, self.kernel_names, native_values,
                      self._registry.get(ps.DEVICE_GLOBALS, {}), code_cache, ctx_handle)
        build_chain.hit("load", "built", job.what)
        return build_chain.run("load", binary, job)

    def __repr__(self) -> str:
        names = ", ".join(k.get_name() for k in self._kernel_ids) or "library"
        return f"<device_image {self.state.name} {self.target} {self.format} [{names}]>"


# -- helpers -------------------------------------------------------------------------

def prebuilt_image(img: device_image, state: bundle_state, devices: Iterable = ()) -> device_image:
    """``img`` (a binary read from a bundle file, e.g. DPC++'s SPIR-V) in ``state``:
    such an image is compiled already, so compiling it only changes its state and
    linking binds it to the ``devices`` of its kind (``errc.build`` if it imports
    symbols: pysycl does not link binaries)."""
    if state is bundle_state.executable and img.imports:
        raise exception(errc.build, "link failed: a SPIR-V image read from a file imports "
                                    f"{', '.join(img.imports)}; pysycl links only its own IR")
    fmt = img.format
    devs = [d for d in (devices or img.get_devices())
            if toolchain.device_target(d).binary_format == fmt]
    return device_image(state, img._module, img.get_kernel_ids(), target=img.target,
                        format=fmt, devices=devs, binary=img.binary, registry=img._registry,
                        spec_ids=img.spec_ids, lowering=img.spec_constant_lowering,
                        target_obj=img._target_obj)



#: The LLVM optimisation level of pysycl's device code on every backend: the
#: ``optLevel`` of ``SYCL/misc properties``.
OPT_LEVEL = 3


def image_property_sets(module: Module | None, spec_ids=None) -> ps.PropertySetRegistry:
    """The property sets ``sycl-post-link`` would give an image holding ``module``:
    kernel names, device requirements, optimisation level, kernel parameter
    optimisation masks (pysycl removes no argument), program metadata, device globals,
    exported/imported symbols; spec constants once ``spec_ids`` exist."""
    reg = ps.PropertySetRegistry()
    if module is None:
        return reg
    if spec_ids is not None and spec_ids.ids:
        reg.add_set(ps.SPEC_CONSTANTS, ps.spec_constants_property_set(spec_ids.ids))
        reg.add_set(ps.SPEC_CONSTANTS_DEFAULT_VALUES,
                    ps.spec_constant_default_values_property_set(spec_ids.default_values))
    if module.device_globals:
        reg.add_set(ps.DEVICE_GLOBALS, ps.device_globals_property_set(
            (d.unique_id, d.type.size, "sycl-device-image-scope" in d.properties)
            for d in module.device_globals))
    kernels = module.kernels
    if kernels:
        reg.add_set(ps.KERNEL_NAMES, ps.kernel_names_property_set(k.name for k in kernels))
        reg.add_set(ps.DEVICE_REQUIREMENTS, _device_requirements(kernels))
        reg.add_set(ps.MISC_PROPERTIES, {"optLevel": OPT_LEVEL})
        reg.add_set(ps.KERNEL_PARAM_OPT, {
            k.name: ps.kernel_param_opt_mask([False] * toolchain.kernel_arg_count(k))
            for k in kernels})
    metadata = _program_metadata(module)
    if metadata:
        reg.add_set(ps.PROGRAM_METADATA, metadata)
    exported = [f.name for f in module.functions if f.kind == "external" and not f.is_declaration]
    if exported:
        reg.add_set(ps.EXPORTED_SYMBOLS, ps.exported_symbols_property_set(exported))
    imported = [f.name for f in module.functions if f.is_declaration]
    if imported:
        reg.add_set(ps.IMPORTED_SYMBOLS, ps.imported_symbols_property_set(imported))
    return reg


def _device_requirements(kernels: list[Function]) -> dict:
    """One set for the image: the union of the aspects, the first kernel's required
    work-group and sub-group sizes (as ``sycl-post-link`` takes them)."""
    reqs = [kernel_requirements(k) for k in kernels]
    aspects = [a for r in reqs for a in r.get("aspects", ())]
    wg = next((r["work_group_size"] for r in reqs if "work_group_size" in r), None)
    sg = next((r["sub_group_size"] for r in reqs if "sub_group_size" in r), None)
    return ps.device_requirements_property_set(aspects, wg, sg)


def _program_metadata(module: Module) -> dict:
    out: dict = {}
    for k in module.kernels:
        p = k.properties
        mlin = _ints(p.get("sycl-max-linear-work-group-size", ""))
        out.update(ps.program_metadata_entries(
            k.name, _ints(p.get("sycl-work-group-size", "")),
            _ints(p.get("sycl-max-work-group-size", "")), mlin[0] if mlin else None))
    for d in module.device_globals:
        out[f"{d.unique_id}@global_id_mapping"] = device_global_symbol(d.unique_id).encode()
    return out


def metadata_kernel_properties(reg: ps.PropertySetRegistry, kernel: str) -> dict[str, str]:
    """The kernel properties (meta name -> value) that DPC++'s sets carry for
    ``kernel`` of an image with no IR (``SYCL/program metadata``, else the image's
    ``SYCL/device requirements``); malformed values are ``errc.invalid``."""
    meta = reg.get(ps.PROGRAM_METADATA) or {}
    reqs = reg.get(ps.DEVICE_REQUIREMENTS) or {}
    out: dict[str, str] = {}

    def sizes(raw, unpack):
        return ",".join(str(v) for v in reversed(unpack(raw)))
    if isinstance(meta.get(f"{kernel}@reqd_work_group_size"), bytes):
        out["sycl-work-group-size"] = sizes(meta[f"{kernel}@reqd_work_group_size"], ps.unpack_u32s)
    elif isinstance(reqs.get("reqd_work_group_size_uint64_t"), bytes):
        out["sycl-work-group-size"] = sizes(reqs["reqd_work_group_size_uint64_t"], ps.unpack_u64s)
    if isinstance(meta.get(f"{kernel}@max_work_group_size"), bytes):
        out["sycl-max-work-group-size"] = sizes(meta[f"{kernel}@max_work_group_size"],
                                                ps.unpack_u32s)
    if isinstance(meta.get(f"{kernel}@max_linear_work_group_size"), bytes):
        out["sycl-max-linear-work-group-size"] = sizes(
            meta[f"{kernel}@max_linear_work_group_size"], ps.unpack_u64s)
    if isinstance(reqs.get("reqd_sub_group_size"), int):
        out["sycl-sub-group-size"] = str(reqs["reqd_sub_group_size"])
    if isinstance(reqs.get("aspects"), bytes) and reqs["aspects"]:
        out["sycl-device-has"] = ",".join(str(a) for a in ps.unpack_u32s(reqs["aspects"]))
    return {k: v for k, v in out.items() if v}


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.replace(" ", "").split(",") if x]


def kernel_requirements(fn: Function) -> dict[str, Any]:
    """What a kernel asks of a device, from its properties (sycl_ext_oneapi_properties meta names)."""
    p = fn.properties
    out: dict[str, Any] = {}
    if p.get("sycl-device-has"):
        out["aspects"] = _ints(p["sycl-device-has"])
    if "used_aspects" in fn.attrs:
        out.setdefault("aspects", []).extend(int(a) for a in fn.attrs["used_aspects"])
    if p.get("sycl-work-group-size"):
        out["work_group_size"] = _ints(p["sycl-work-group-size"])
    if p.get("sycl-sub-group-size"):
        out["sub_group_size"] = int(p["sycl-sub-group-size"])
    return out


def kernel_compatible(fn: Function, device) -> bool:
    """SYCL 2020 4.11.9: aspects, required work-group size, required sub-group size."""
    req = kernel_requirements(fn)
    for a in req.get("aspects", ()):
        try:
            if not toolchain.device_has(device, aspect(a)):
                return False
        except ValueError:
            return False
    wg = req.get("work_group_size")
    if wg:
        max_items = toolchain.device_info(device, "max_work_item_sizes")
        max_wg = toolchain.device_info(device, "max_work_group_size")
        if max_items is not None:
            # max_work_item_sizes<D> is the last D entries of the 3-D limits (SYCL order).
            lim = list(max_items)[len(max_items) - len(wg):]
            if len(lim) == len(wg) and any(s > m for s, m in zip(wg, lim)):
                return False
        total = 1
        for s in wg:
            total *= s
        if max_wg is not None and total > max_wg:
            return False
    sg = req.get("sub_group_size")
    if sg:
        sizes = toolchain.device_info(device, "sub_group_sizes")
        if sizes is not None and sg not in tuple(sizes):
            return False
    return True


def kernel_ids_of(module: Module) -> list[kernel_id]:
    return [kernel_id_by_name(k.name) for k in module.kernels]
