"""``sycl.save_kernel_bundle`` / ``sycl.load_kernel_bundle``: bundles as SYCLBIN files.

Each device image is one SYCLBIN abstract module carrying the image's ``SYCL/...``
property sets unchanged. An executable image's SPIR-V is an IR module of type 0 and
target ``spir64-unknown-unknown`` (where DPC++ puts SPIR-V); its other binaries are
native images (target triple, ``arch`` = the pysycl target name, ``format``); pysycl
IR text is a native image of target ``PYSYCL_IR_TARGET``, which DPC++ skips (it
treats every IR module as SPIR-V). pysycl's own facts go in two extra sets that DPC++
ignores: ``PYSYCL/image`` (``target``, ``format``, ``spec_constant_lowering``) and
``PYSYCL/spec values`` (the bundle's specialization-constant values, symbolic ID ->
bytes). Loading an executable file does no code generation: the binary is loaded by
the driver at first launch; the IR is read only for kernel metadata.

Files DPC++ wrote load too: their SPIR-V IR modules run on SPIR-V devices, their spec
constants taken natively by SpecId (docs/bundle-files.md).

>>> import pysycl as sycl                                             # doctest: +SKIP
>>> sycl.save_kernel_bundle(exe, "conv.syclbin")                           # doctest: +SKIP
>>> exe2 = sycl.load_kernel_bundle(ctx, "conv.syclbin")                    # doctest: +SKIP
"""
from __future__ import annotations

import contextlib
import errno
import os
import secrets

from .. import config
from ..detail import check_stable
from ..errors import errc, exception
from ..ir.core import Function, Module
from ..ir.types import U8, ArrayType
from ..passes.spec_constants import PADDING_LEAF_ID, SpecConstantIds
from . import property_sets as ps
from . import signing, syclbin, toolchain
from .device_image import GENERIC_TARGET, bundle_state, device_image, metadata_kernel_properties
from .kernel_bundle import kernel_bundle
from .executables import build_for_devices
from .linker import link_objects
from .kernel_id import kernel_id_by_name

IMAGE_SET = "PYSYCL/image"
#: The target triple of SPIR-V IR modules, as DPC++'s clang-linker-wrapper writes it.
SPIRV_TRIPLE = "spir64-unknown-unknown"
SPEC_VALUES_SET = "PYSYCL/spec values"


def _image_module(img: device_image, values: dict[str, bytes]) -> syclbin.AbstractModule:
    reg = ps.PropertySetRegistry(img._registry.to_dict())
    info = {"target": img.target.encode(), "format": img.format.encode()}
    if img.spec_constant_lowering:
        info["spec_constant_lowering"] = img.spec_constant_lowering.encode()
    target = img._target_obj
    if img.binary is not None and getattr(target, "backend", None) == "native_cpu":
        # Host code may use any feature of the CPU it was made for: a loader checks
        # its own CPU has them all (else SIGILL at the first launch).
        info["cpu"] = target.cpu.encode()
        info["cpu_features"] = ",".join(toolchain.required_cpu_features(target)).encode()
    reg.add_set(IMAGE_SET, info)
    used = set(img.spec_constants_used())
    vals = {uid: raw for uid, raw in values.items() if uid in used and raw}
    if vals:
        reg.add_set(SPEC_VALUES_SET, vals)
    irs, natives = [], []
    if img.binary is not None and img.format == "spirv":
        # Where DPC++ looks for SPIR-V (its runtime JIT-compiles every IR module).
        irs.append(syclbin.IRModule(syclbin.IR_TYPE_SPIRV, img.binary, SPIRV_TRIPLE))
    elif img.binary is not None:
        triple = getattr(img._target_obj, "triple", img.target)
        natives.append(syclbin.NativeImage(triple, img.target, img.binary, img.format))
    if img.module is not None:
        # pysycl IR in a native image of a target DPC++ has no device for.
        natives.append(syclbin.NativeImage(
            syclbin.PYSYCL_IR_TARGET, syclbin.PYSYCL_IR_ARCH,
            toolchain.print_ir_with_locs(img.module).encode("utf-8"), "ir"))
    am = syclbin.AbstractModule(reg, irs, natives)
    signing.sign(am)   # the writer's key: its binaries are run as they are when it loads it
    return am


def _ids_used(img: device_image) -> list[str]:
    """The symbolic IDs of the spec constants and device globals an image uses (names
    only: a loaded image's descriptors are checked where they are used)."""
    module = None if getattr(img, "is_warm", False) else img.module
    globals_ = ([d.unique_id for d in module.device_globals] if module is not None
                else list(img.property_sets.get(ps.DEVICE_GLOBALS) or {}))
    return list(img.spec_constants_used()) + globals_


def syclbin_bytes(kb: kernel_bundle) -> bytes:
    """``kb`` (any state) as the bytes of a SYCLBIN file. Every spec constant and device
    global it uses must have an ID that is the same in every process (``errc.invalid``
    otherwise: a reader would bind it to another object, or to none)."""
    check_stable([uid for img in kb for uid in _ids_used(img)], "save a kernel bundle")
    state = syclbin.SyclbinState(kb.state.value)
    f = syclbin.SyclbinFile(state, [_image_module(img, kb.spec_values) for img in kb])
    return syclbin.write_syclbin(f)


def save_kernel_bundle(kb: kernel_bundle, path) -> None:
    """Write ``kb`` (any state) to ``path`` as a SYCLBIN file (atomically: a reader sees
    the old file or the whole new one). A folder that does not exist or cannot be
    written is ``errc.invalid``, naming ``path``."""
    data = syclbin_bytes(kb)
    path = os.fspath(path)
    tmp = None
    try:
        fd, tmp = _new_file_beside(path)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException as e:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        if isinstance(e, OSError):
            raise exception(errc.invalid, f"cannot write kernel bundle file {path!r}: "
                                          f"{e.strerror}") from None
        raise


def _new_file_beside(path: str) -> tuple[int, str]:
    """A new file in ``path``'s folder whose name nobody can predict, made by us
    (``O_EXCL``, links not followed; the umask applies, as to any file we write): a
    fixed name in a shared folder would let another user put a link there first."""
    folder = os.path.dirname(os.path.abspath(path))
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    for _ in range(8):
        tmp = os.path.join(folder, f".{os.path.basename(path)}.{secrets.token_hex(8)}.tmp")
        try:
            return os.open(tmp, flags, 0o666), tmp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no unused temporary name", folder)


_IMAGE_VALUES = {"format": ("object", "spirv", "ptx", "ir"),
                 "spec_constant_lowering": ("literal", "emulated", "native")}


def _text(reg: ps.PropertySetRegistry, key: str, default: str | None = None) -> str | None:
    """A ``PYSYCL/image`` text value (UTF-8 bytes; ``format`` and the lowering from
    their known values), ``default`` when absent; anything else is ``errc.invalid``."""
    raw = (reg.get(IMAGE_SET) or {}).get(key)
    if raw is None:
        return default
    try:
        if not isinstance(raw, bytes):
            raise UnicodeError
        text = raw.decode("utf-8")
    except UnicodeError:
        raise _bad_file(f"{IMAGE_SET} {key} is not UTF-8 text") from None
    if text not in _IMAGE_VALUES.get(key, (text,)):
        raise _bad_file(f"{IMAGE_SET} {key} {text[:40]!r} is not one of "
                        f"{', '.join(_IMAGE_VALUES[key])}")
    return text


def _bad_file(reason: str) -> exception:
    return exception(errc.invalid, f"bundle file: {reason}")


def _spec_leaves(sym: str, raw) -> list[tuple[int, int, int]]:
    """One constant's ``{leaf ID, offset, size}`` descriptors, checked."""
    if not isinstance(raw, bytes) or not raw:
        raise _bad_file(f"spec constant {sym!r} has no {{id, offset, size}} descriptors")
    leaves = [tuple(t) for t in ps.unpack_spec_constant_descriptors(raw)]
    if not any(leaf != PADDING_LEAF_ID for leaf, _o, _s in leaves):
        raise _bad_file(f"spec constant {sym!r} has no SpecId")
    if any(size == 0 for _l, _o, size in leaves):
        raise _bad_file(f"spec constant {sym!r} has an empty member")
    return leaves


def _spec_ids(reg: ps.PropertySetRegistry) -> SpecConstantIds | None:
    """The image's spec-constant layout from its two property sets (checked: a
    malformed layout is ``errc.invalid``)."""
    descs = reg.get(ps.SPEC_CONSTANTS)
    if not descs:
        return None
    ids = {sym: _spec_leaves(sym, raw) for sym, raw in descs.items()}
    spec_ids = [leaf for leaves in ids.values() for leaf, _o, _s in leaves
                if leaf != PADDING_LEAF_ID]
    if len(set(spec_ids)) != len(spec_ids):
        raise _bad_file("two spec constants share a SpecId")

    def first(sym):
        return min(leaf for leaf, _o, _s in ids[sym] if leaf != PADDING_LEAF_ID)

    offsets, types, pos = {}, {}, 0
    for sym in sorted(ids, key=first):
        size = max(o + s for _l, o, s in ids[sym])
        offsets[sym], types[sym] = pos, ArrayType(U8, size)
        pos += size
    blob = (reg.get(ps.SPEC_CONSTANTS_DEFAULT_VALUES) or {}).get("all", b"")
    if not isinstance(blob, bytes) or len(blob) != pos:
        raise _bad_file("spec constant default values do not match the spec constant "
                        "descriptors")
    return SpecConstantIds({s: ids[s] for s in offsets}, bytes(blob), offsets, types)


def _module_of(am: syclbin.AbstractModule) -> Module | None:
    """The pysycl IR of a module (a native image of pysycl's IR target; files written
    before SPIR-V moved to the IR-module slot held it as an IR module of
    ``IR_TYPE_PYSYCL``), or ``None``."""
    texts = [n.data for n in am.native_images if n.target == syclbin.PYSYCL_IR_TARGET]
    texts += [ir.data for ir in am.ir_modules if ir.ir_type == syclbin.IR_TYPE_PYSYCL]
    if not texts:
        return None
    try:
        module = toolchain.parse_ir(texts[0].decode("utf-8"))
        # The verifier a pass pipeline runs: ops, attributes, types, SSA form. IR that
        # fails it is a malformed file, not a program that fails to build.
        toolchain.verify(module)
        _check_names(module)
        return module
    except exception as e:
        raise _bad_file(f"its pysycl IR is not valid: {_what(e)}") from None
    except Exception as e:  # noqa: BLE001 - any parser failure is the file's
        raise _bad_file(f"unreadable pysycl IR: {type(e).__name__}: {e}") from None


def _check_names(module: Module) -> None:
    """Symbols become LLVM and object-file names: printable text only."""
    names = [f.name for f in module.functions] + [d.unique_id for d in module.device_globals] \
        + [s.unique_id for s in module.spec_constants]
    for name in names:
        if not name or not name.isprintable():
            raise _bad_file(f"its pysycl IR names a symbol {name[:60]!r}")


def _what(e: exception) -> str:
    text = str(e)
    return text if len(text) < 600 else text[:600] + " ..."


def _metadata_module(reg: ps.PropertySetRegistry) -> Module:
    """Kernel stubs from the property sets, when the file carries no readable IR."""
    m = Module("loaded")
    for name in reg.get(ps.KERNEL_NAMES) or {}:
        m.functions.append(Function(name, "kernel", [],
                                    properties=metadata_kernel_properties(reg, name),
                                    attrs={"signature_unknown": True}))
    return m


def load_kernel_bundle(ctx, path, state=None) -> kernel_bundle:
    """Read a bundle written by ``save_kernel_bundle`` (or ``pysycl compile``) for
    ``ctx``. Executable images bind to the context's devices of their target; images
    for targets no device has are left out. ``state``, if given, must match the file
    (``errc.invalid`` otherwise, as DPC++)."""
    try:
        with open(os.fspath(path), "rb") as fh:
            data = fh.read()
    except OSError as e:
        raise exception(errc.invalid, f"cannot read kernel bundle file {os.fspath(path)!r}: "
                                      f"{e.strerror}") from None
    return kernel_bundle_from_bytes(ctx, data, state)


def kernel_bundle_from_bytes(ctx, data: bytes, state=None) -> kernel_bundle:
    """``load_kernel_bundle`` of a file's bytes (a pickled bundle, say)."""
    f = syclbin.read_syclbin(data)
    file_state = bundle_state(int(f.state))
    if state is not None and getattr(state, "value", state) != file_state.value:
        raise exception(errc.invalid, "kernel_bundle state does not match the state of the "
                                      "SYCLBIN file")
    devices = list(ctx.get_devices())
    images, values = [], {}
    for am in f.abstract_modules:
        reg = am.property_sets
        check_stable([uid for name in (ps.SPEC_CONSTANTS, ps.DEVICE_GLOBALS, SPEC_VALUES_SET)
                      for uid in (reg.get(name) or {})], "load a kernel bundle")
        for k, v in (reg.get(SPEC_VALUES_SET) or {}).items():
            if not isinstance(v, bytes):
                raise _bad_file(f"{SPEC_VALUES_SET} {k[:60]!r} is not a byte array")
            values[k] = v
    for am in f.abstract_modules:
        loaded = _load_image(am, am.property_sets, file_state, devices, values)
        for img in loaded:
            check_stable(_ids_used(img), "load a kernel bundle")
            img.from_file = True   # its IDs name this process's objects only if stable
        images += loaded
    _check_one_image_per_kernel(images)
    return kernel_bundle(ctx, devices, file_state, images, values)


def _check_one_image_per_kernel(images: list[device_image]) -> None:
    """A kernel is in one image per target (a file that repeats it could not be
    linked, nor tell which image a launch means)."""
    seen: set[tuple[str, str]] = set()
    for img in images:
        for kid in img.get_kernel_ids():
            key = (img.target, kid.get_name())
            if key in seen:
                raise _bad_file(f"kernel {kid.get_name()!r} is in two images for target "
                                f"{img.target}")
            seen.add(key)


def _binaries(am: syclbin.AbstractModule, pysycl_file: bool) -> list[tuple[str, str, bytes]]:
    """``(pysycl target name, format, bytes)`` of each binary of a module that pysycl
    can load: SPIR-V IR modules (for any SPIR-V device, ``"spirv"`` stands for them)
    and, in pysycl's own files, its native images (``arch`` names the target)."""
    out = [("spirv", "spirv", ir.data) for ir in am.ir_modules
           if ir.ir_type == syclbin.IR_TYPE_SPIRV]
    if pysycl_file:
        out += [(n.arch, n.format or "object", n.data) for n in am.native_images
                if n.target != syclbin.PYSYCL_IR_TARGET]
    return out


def _devices_for(target: str, devices) -> list:
    if target == "spirv":
        return [d for d in devices if toolchain.device_target(d).binary_format == "spirv"]
    if target.startswith("native_cpu"):   # this CPU's or a generic CPU level's code
        target = "native_cpu"
    return [d for d in devices if toolchain.device_target_name(d) == target]


def _check_cpu_features(reg: ps.PropertySetRegistry) -> None:
    """Refuse host code that needs CPU features this machine lacks (it would die with
    SIGILL at its first launch)."""
    needed = _text(reg, "cpu_features")
    if not needed:
        return
    missing = sorted(set(needed.split(",")) - toolchain.host_cpu_features())
    if missing:
        raise exception(errc.feature_not_supported,
                        f"bundle file: its native_cpu image was built for CPU "
                        f"{_text(reg, 'cpu', '?')} and needs CPU features this CPU lacks: "
                        f"{', '.join(missing)}; build the file for a generic CPU level "
                        "(pysycl compile --cpu x86-64-v2) to run it on other CPUs")


def _rebuilt(module: Module, reg, target_devices: list, values: dict) -> list[device_image]:
    """The executable images of an unsigned image, made again from its pysycl IR for
    ``target_devices``: the file's binaries and its kernel, spec-constant and device
    global sets are not used (they could say anything); its spec values are."""
    kernels = [kernel_id_by_name(f.name) for f in module.kernels]
    if not kernels:
        raise _bad_file("an executable image's pysycl IR holds no kernel")
    obj = device_image(bundle_state.object, module, kernels)
    mode = "emulated" if _text(reg, "spec_constant_lowering") == "emulated" else "auto"
    try:
        with toolchain.checked_builds():   # nobody vouches for this IR: check its indices
            return build_for_devices(link_objects([obj]), target_devices, mode, values)
    except exception as e:
        if e.code() != errc.build:
            raise
        raise _bad_file(f"its pysycl IR does not build: {_what(e)}") from None
    except Exception as e:  # noqa: BLE001 - a link pass tripping over the file's IR
        raise _bad_file(f"its pysycl IR does not build: {type(e).__name__}: {e}") from None


def _load_image(am, reg, state: bundle_state, devices, values: dict) -> list[device_image]:
    clean = ps.PropertySetRegistry({k: v for k, v in reg.items()
                                    if k not in (IMAGE_SET, SPEC_VALUES_SET,
                                                 signing.SIGNATURE_SET)})
    kernels = [kernel_id_by_name(n) for n in reg.get(ps.KERNEL_NAMES) or {}]
    target = _text(reg, "target")
    module = _module_of(am)
    if state is not bundle_state.executable and module is not None:
        img = device_image(state, module, kernels, registry=clean)
        img.untrusted = not signing.verify(am)
        return [img]
    # An image of SPIR-V (DPC++'s files) or a pysycl executable image.
    binaries = _binaries(am, IMAGE_SET in reg)
    if target is not None:
        binaries = [b for b in binaries if b[0] == target] or \
            [b for b in binaries if b[0] == "spirv" and target.startswith("spirv")]
    if not binaries:
        if state is not bundle_state.executable:
            raise exception(errc.invalid, "bundle file: an image holds neither pysycl IR "
                                          "nor SPIR-V")
        raise exception(errc.invalid, "bundle file: an executable image holds no binary "
                                      "pysycl can load")
    name, fmt, data = binaries[0]
    devs = _devices_for(target if name == "spirv" and target else name, devices)
    if not devs:
        return []
    # pysycl's own image, not signed by this user (or changed since): its binaries are
    # not run; its IR is built again, or the file's code is trusted on request.
    unsigned = IMAGE_SET in reg and not signing.verify(am)
    if unsigned:
        if module is not None:
            return _rebuilt(module, reg, devs, values)
        if not config.trust_bundle_code():
            raise _bad_file("an executable image holds native code that this user did "
                            "not sign and no pysycl IR to build it from again; set "
                            "PYSYCL_TRUST_BUNDLE_CODE=1 to run the file's code as it is")
    if fmt == "object":
        _check_cpu_features(reg)
    # Native code this user did not sign, run because the user trusts the file: linked
    # once where a linker crash cannot end this process.
    toolchain.check_binary(toolchain.device_target(devs[0]), data, link=unsigned)
    if module is None:
        module = _metadata_module(reg)
    # SPIR-V from DPC++ takes its spec constants natively, by SpecId (the leaf IDs
    # of its SYCL/specialization constants set).
    lowering = _text(reg, "spec_constant_lowering") or ("native" if fmt == "spirv" else None)
    img = device_image(state, module, kernels, target=toolchain.device_target_name(devs[0]),
                       format=_text(reg, "format", fmt), devices=devs, binary=data,
                       registry=clean, spec_ids=_spec_ids(reg), lowering=lowering,
                       target_obj=toolchain.device_target(devs[0]))
    if unsigned and fmt == "object":
        _link_now(img)
    return [img]


def _link_now(img: device_image) -> None:
    """Load a trusted file's native code now, so that code the JIT linker refuses is a
    malformed file here rather than a build error at the first launch."""
    for d in img.get_devices():
        try:
            img.program(d)
        except exception as e:
            if e.code() != errc.build:
                raise
            raise _bad_file(f"its native code does not link: {_what(e)}") from None


__all__ = ["save_kernel_bundle", "load_kernel_bundle", "GENERIC_TARGET"]
