"""``get_launcher``: the runtime's one entry point into kernel bundles.

The handler asks for a :class:`Launcher` for (kernel, device, context) and launches it.
Without a bound bundle the kernel comes from the default lookup (SYCL 2020 4.11):
the first tier of the build chain's ``binary`` stage that has its executable image
(memory, the warm-start index, the disk cache; ``executables.py``), else the linked
object images, else the kernel's input image built now (each step memoised, so a
kernel is linked once per process and code-generated once per target and literal
value set); the kernel's ``@sycl.external`` imports are resolved from every Python
module imported so far. With ``bundle=`` (``use_kernel_bundle``) the kernel must be in that executable
bundle, else ``errc.kernel_not_supported``. A ``sycl.kernel`` object always runs from the
bundle it was taken from (a bound bundle does not apply to it, SYCL 2020 4.9.4.2).

Launchers are kept on what they come from, per device: the default lookup's on the
kernel's ``kernel_id``, a bundle's on the bundle (``device_caches``), each by
spec-constant value bytes, launch properties, image selector, checked build and driver
context (bounded: a program may use a new value per launch). A hit hashes no IR and
costs one dict lookup; threads asking for one key at once build it once.

>>> get_launcher(42, None)
Traceback (most recent call last):
...
pysycl.errors.exception: 42 is not a @sycl.kernel function
"""
from __future__ import annotations

import threading
from typing import Any, Mapping, Sequence

from ..properties import properties_for
from ..properties.aspects import aspect
from .. import config
from ..backends.base import KernelArg, KernelArgKind
from ..detail.memo import LRUMemo
from ..errors import errc, exception
from ..ir import check_record
from ..ir.core import Function
from ..spec_values import spec_key
from . import coarsening, device_globals, stats, toolchain, warm_index
from .device_image import bundle_state, device_image
from .executables import default_source, executable_images, lowering_from_properties
from .kernel_bundle import kernel_bundle, kernel_object
from .kernel_id import get_kernel_id, kernel_id


def _hashable(props):
    if props is None:
        return None
    try:
        hash(props)
        return props
    except TypeError:
        return tuple(props)


def get_launcher(kernel, device, context=None, *, bundle: kernel_bundle | None = None,
                 image_selector=None, spec_values: Mapping | None = None,
                 launch_properties=None) -> "Launcher":
    """A ready :class:`Launcher` for ``kernel`` (a ``@sycl.kernel`` function or a
    ``sycl.kernel`` object) on ``device`` (see module doc for the lookup)."""
    own_bundle = isinstance(kernel, kernel_object)
    if own_bundle:
        # SYCL 2020 4.9.4.2: a kernel object runs from the bundle it was taken from; a
        # bundle bound with use_kernel_bundle is ignored for it.
        bundle = kernel.get_kernel_bundle()
    kid = get_kernel_id(kernel)
    # A user-made context has its own driver context (OpenCL): programs and the
    # spec-constant buffer are made in it. None: the driver's default context.
    ctx_handle = getattr(context, "handle", None)
    values = spec_key(spec_values)
    key = (values, _hashable(launch_properties), image_selector,
           config.debug_checks(),   # a checked build is another image
           ctx_handle)
    owner = kid
    if bundle is not None:   # the bundle's launchers, of each of its kernels
        owner, key = bundle, (kid, *key)

    def make() -> Launcher:
        stats.bump("launcher_builds")
        return _make_launcher(kid, device, bundle, image_selector, dict(values),
                              launch_properties, ctx_handle, own_bundle)
    return launchers_of(owner, device).get_or_make(key, make)


def launchers_of(owner, device) -> LRUMemo:
    """The launchers ``owner`` (a kernel_id or a kernel_bundle) keeps for ``device``."""
    return owner.device_caches.get_or_make(device, lambda: LRUMemo(config.max_programs))


def _make_launcher(kid: kernel_id, device, bundle, image_selector, values: dict[str, bytes],
                   launch_properties, ctx_handle=None, own_bundle: bool = False) -> "Launcher":
    if bundle is not None:
        if bundle.state is not bundle_state.executable:
            raise exception(errc.invalid, "use_kernel_bundle needs an executable kernel_bundle")
        images = bundle.images_for(kid, device)
        if not images:
            which = "the kernel_bundle the sycl.kernel was taken from" if own_bundle else \
                "the kernel_bundle bound with use_kernel_bundle"
            raise exception(errc.kernel_not_supported,
                            f"kernel {kid.get_name()} has no image in {which} for device "
                            f"{device!r}")
        image = image_selector(images) if image_selector is not None else images[0]
        if not isinstance(image, device_image) or image not in images:
            raise exception(errc.invalid, "the image selector must return one of the images")
        values = bundle.spec_values
    else:
        if kid.kernel is None:
            raise exception(errc.kernel_not_supported,
                            f"kernel {kid.get_name()} is not defined in this process")
        image = _default_image(kid, device, lowering_from_properties(launch_properties),
                               values)
    launcher = Launcher(kid, image, device, values, ctx_handle)
    if launch_properties is not None:
        launcher.apply_launch_properties(launch_properties)
    return launcher


def _default_image(kid: kernel_id, device, mode: str, values) -> device_image:
    """The default lookup's executable image, from the first cache tier of the build
    chain that has it (a warm start: the warm-start index, with no frontend, link or
    codegen); ``errc.kernel_not_supported`` when ``device`` cannot run the kernel."""
    source = default_source(kid)
    images = executable_images([(source, kid, [device])], mode, values)
    if images:
        return images[0]
    lk = source.linked(kid.get_name())
    fn = lk.module.function(lk.name)
    why = unsupported_reason(fn.properties, device)
    raise exception(errc.kernel_not_supported,
                    f"kernel {kid.get_name()} cannot run: {why}" if why else
                    f"kernel {kid.get_name()} uses optional features that device "
                    f"{getattr(device, 'name', device)!r} does not support")


# Kernel properties at submit (SYCL 2020 5.8.1, sycl_ext_oneapi_kernel_properties) -------
def _sycl_range(sizes) -> str:
    """DPC++'s range text: 3 values, padded with leading 1s, SYCL order."""
    values = [1] * (3 - len(sizes)) + [int(size) for size in sizes]
    return "{" + ", ".join(str(value) for value in values) + "}"


def unsupported_reason(props: Mapping[str, str], device) -> str | None:
    """Why a kernel with meta ``props`` cannot run on ``device`` (None: it can)."""
    name = getattr(device, "name", device)
    for number in _ints(props.get("sycl-device-has")) or ():
        try:
            label = aspect(number).name
            ok = toolchain.device_has(device, aspect(number))
        except ValueError:
            label, ok = str(number), False
        if not ok:
            return f"it requires aspect {label} (device_has), which device {name!r} lacks"
    wg = _ints(props.get("sycl-work-group-size"))
    if wg:
        max_items = toolchain.device_info(device, "max_work_item_sizes")
        max_wg = toolchain.device_info(device, "max_work_group_size")
        total = 1
        for size in wg:
            total *= size
        lim = list(max_items or ())[len(max_items or ()) - len(wg):]
        if (len(lim) == len(wg) and any(size > most for size, most in zip(wg, lim))) or \
                (max_wg is not None and total > max_wg):
            return (f"its required work-group size {_sycl_range(wg)} exceeds the limits of "
                    f"device {name!r} (max_work_group_size {max_wg}, max_work_item_sizes "
                    f"{tuple(max_items or ())})")
    sg = _ints(props.get("sycl-sub-group-size"))
    if sg:
        sizes = toolchain.device_info(device, "sub_group_sizes")
        if sizes is not None and sg[0] not in tuple(sizes):
            return (f"its required sub-group size {sg[0]} is not one of the sub-group sizes "
                    f"{tuple(sizes)} of device {name!r}")
    return None


def _ints(text: str | None):
    if not text:
        return None
    return tuple(int(item) for item in text.split(",") if item.strip())


def check_record_symbol(binary) -> str | None:
    """The failure record's symbol in an image of a checked build, else None (names are
    found in the image's bytes: object file, SPIR-V and PTX all keep them)."""
    if binary is None:
        return None
    data = binary.encode() if isinstance(binary, str) else bytes(binary)
    for symbol in (check_record.BOUNDS_RECORD_SYMBOL, check_record.RECORD_SYMBOL):
        if symbol.encode() in data:
            return symbol
    return None


class Launcher:
    """Launches one kernel image on one device with fixed spec-constant values."""

    def __init__(self, kid: kernel_id, image: device_image, device, values: dict[str, bytes],
                 ctx_handle=None):
        self.kernel_id = kid
        # The driver context its program and memory are made in (None: the default).
        self.ctx_handle = ctx_handle
        self.image = image
        self.device = device
        fn = image.kernel_function(kid)
        if fn is None:
            raise exception(errc.kernel_not_supported, f"image has no kernel {kid.get_name()}")
        self.function: Function = fn
        self.kernel_name = fn.name
        if getattr(image, "is_warm", False) and kid.kernel is not None:
            sig = warm_index.fast_signature(kid.kernel)   # no source parse
        else:
            sig = self._signature(kid, fn)
        self.signature = sig
        self.params = tuple(sig.params)
        self.index_kind = sig.index_kind
        self.dims = sig.dims
        self._set_properties(dict(fn.properties))
        self.local_mem_static = int(fn.attrs.get("local_mem_static", 0) or 0)
        # A coarsened kernel (the image says so): fewer work-items, and the user's
        # extent as one more argument (coarsening.py).
        self.coarsening = coarsening.of_image(image, fn.name, self.dims)
        ids = image.spec_ids
        mode = image.spec_constant_lowering
        self.spec_constant_lowering = mode
        self.spec_buffer = ids.buffer(values) if (ids is not None and mode == "emulated") else b""
        self._native_values = (ids.native_values(values) if (ids is not None and mode == "native")
                               else None)
        self._driver = toolchain.driver_for(device)
        self._spec_mem = None
        self._spec_kernel_arg = None
        self._spec_lock = threading.Lock()
        self._program = None
        # device_global instances of this device (device_globals.py): synchronised
        # before each launch, or (device_image_scope) given the host's value at load.
        self._dg_launch, self._dg_load = device_globals.launch_hooks(image, device, ctx_handle)
        device_globals.register_module_objects(getattr(kid.kernel, "module_name", None))
        # A checked build (PYSYCL_DEBUG): the failure record read after each launch.
        self._record = check_record_symbol(image.binary)
        self.bounds_abi = self._record == check_record.BOUNDS_RECORD_SYMBOL

    def apply_launch_properties(self, launch_properties) -> None:
        """Kernel properties given at launch: combined with the kernel's own (a
        different value is ``errc.invalid``), then checked against the device
        (``errc.kernel_not_supported``)."""
        # Kernel properties and the build's spec-constant lowering; a device_global or
        # argument property at a launch is an error, not ignored.
        plist = properties_for(launch_properties, ("kernel", "build"),
                               f"the launch of kernel {self.kernel_id.get_name()}")
        extra = {p.meta_name: p.meta_value for p in plist
                 if p.meta_name is not None and getattr(p, "category", None) == "kernel"}
        if not extra:
            return
        props = dict(self.properties)
        for k, v in extra.items():
            if k in props and props[k] != v:
                raise exception(errc.invalid, f"kernel {self.kernel_id.get_name()}: launch "
                                f"property {k}={v!r} conflicts with the kernel's own "
                                f"{k}={props[k]!r}")
            props[k] = v
        why = unsupported_reason(props, self.device)
        if why is not None:
            raise exception(errc.kernel_not_supported,
                            f"kernel {self.kernel_id.get_name()} cannot run: {why}")
        self._set_properties(props)

    def _set_properties(self, props: dict[str, str]) -> None:
        """The kernel's properties (meta name -> value) and the sizes decoded from them."""
        self.properties = props
        self.reqd_work_group_size = _ints(props.get("sycl-work-group-size"))
        self.work_group_size_hint = _ints(props.get("sycl-work-group-size-hint"))
        self.max_work_group_size = _ints(props.get("sycl-max-work-group-size"))
        mlin = _ints(props.get("sycl-max-linear-work-group-size"))
        self.max_linear_work_group_size = mlin[0] if mlin else None
        sg = _ints(props.get("sycl-sub-group-size"))
        self.sub_group_size = sg[0] if sg else None

    def check_nd_range(self, global_size, local_size):
        """``errc.nd_range`` for a local size the kernel's properties forbid; returns the
        local size to launch with (a range launch of a kernel with a required
        work-group size uses that size when it tiles the global range)."""
        reqd = self.reqd_work_group_size
        if local_size is None:
            if reqd and len(reqd) == len(global_size) and \
                    all(extent % size == 0 for extent, size in zip(global_size, reqd)):
                return tuple(reqd)
            return None
        local = tuple(int(size) for size in local_size)
        if reqd and tuple(reqd) != local:
            raise exception(errc.nd_range, f"The specified local size {_sycl_range(local)} "
                            "doesn't match the required work-group size specified in the "
                            f"program source {_sycl_range(reqd)}")
        total = 1
        for size in local:
            total *= size
        mlin = self.max_linear_work_group_size
        if mlin is not None and total > mlin:
            raise exception(errc.nd_range, "The total number of work-items in the work-group "
                            f"({total}) exceeds the maximum specified in the program source "
                            f"({mlin})")
        mwg = self.max_work_group_size
        if mwg:
            if len(mwg) != len(local) or any(size > most for size, most in zip(local, mwg)):
                raise exception(errc.nd_range, f"The specified local size {_sycl_range(local)}"
                                " exceeds the maximum work-group size specified in the "
                                f"program source {_sycl_range(mwg)}")
        return local

    @staticmethod
    def _signature(kid: kernel_id, fn: Function):
        kfn = kid.kernel
        if kfn is not None and callable(getattr(kfn, "signature", None)):
            return kfn.signature()
        if fn.attrs.get("signature_unknown"):   # a DPC++ file's kernel: no IR, no Python
            raise exception(errc.kernel_not_supported,
                            f"kernel {kid.get_name()} comes from a bundle file that holds no "
                            "pysycl IR and is defined in no imported Python module, so its "
                            "arguments are unknown")
        # A kernel loaded from a bundle file whose Python module is not imported.
        from ..frontend.signature import signature_from_ir
        return signature_from_ir(fn)

    @property
    def program(self):
        """The loaded program (through the device's driver, lazily; again after the
        bounded set of loaded programs evicted it, see ``forget_program``)."""
        prog = self._program
        if prog is None:
            prog = self.image.program(self.device, self._native_values, self.ctx_handle,
                                      holder=self)
            for inst in self._dg_load:
                inst.program_loaded(prog, self._driver)
            self._program = prog
        return prog

    def forget_program(self, program) -> None:
        """``program`` was evicted from the loaded programs (bundle/programs.py): stop
        holding it, so it is unloaded once the launches using it return; the next
        launch loads it again."""
        if self._program is program:
            self._program = None

    def _spec_arg(self, stream) -> KernelArg:
        arg = self._spec_kernel_arg
        if arg is not None:
            return arg
        with self._spec_lock:
            if self._spec_mem is None:
                desc = toolchain.device_description(self.device)
                data = self.spec_buffer or bytes(8)
                # A driver may ask for another kind of memory for this read-only argument
                # (OpenCL: a cl.Buffer, cheaper to launch with than one more USM pointer).
                kind = self._driver.spec_buffer_kind
                mem = self._driver.alloc(desc, len(data), kind, context=self.ctx_handle)
                self._driver.copy(stream, mem, 0, memoryview(data), 0, len(data)).wait()
                self._spec_mem = mem
            self._spec_kernel_arg = KernelArg(KernelArgKind.mem, self._spec_mem)
        return self._spec_kernel_arg

    def launch(self, stream, global_size: Sequence[int], local_size: Sequence[int] | None,
               offset: Sequence[int] | None, kernel_args: Sequence[KernelArg],
               local_mem_bytes: int = 0) -> Any:
        """Enqueue one launch; ``kernel_args`` are the packed user arguments, the
        implicit spec-constant buffer is appended here."""
        if type(global_size) is not tuple:
            global_size = tuple(global_size)
        if local_size is not None and type(local_size) is not tuple:
            local_size = tuple(local_size)
        args = list(kernel_args)
        if self.coarsening is not None:
            global_size, local_size = self.coarsening.args(global_size, local_size, args)
        args.append(self._spec_kernel_arg or self._spec_arg(stream))
        program = self._program or self.program
        if self._dg_launch:
            for inst in self._dg_launch:
                inst.before_launch(program, self._driver, stream)
        if offset is not None and any(offset):
            if not self._driver.supports_global_offset:
                raise exception(errc.feature_not_supported,
                                "this device's driver takes no global offset")
            tok = self._driver.launch(stream, program, self.kernel_name, global_size,
                                      local_size, args, local_mem_bytes,
                                      offset=tuple(offset))
        else:
            tok = self._driver.launch(stream, program, self.kernel_name, global_size,
                                      local_size, args, local_mem_bytes)
        if self._record is not None:
            self._check_record(stream, program, tok)
        return tok

    def _check_record(self, stream, program, tok) -> None:
        """A checked build: wait for the launch and raise ``errc.kernel`` for the check
        that failed in it (the record, ``ir/check_record``, is then cleared). The error
        is the launch's: the queue delivers it as an asynchronous error."""
        if tok is not None:
            tok.wait()
        driver, symbol = self._driver, self._record
        record = bytearray(check_record.RECORD_BYTES)
        driver.read_device_global(stream, program, symbol, 0, memoryview(record))
        site, index, extent, size = check_record.unpack(record)
        if not site:
            return
        table = bytearray(size)
        driver.read_device_global(stream, program, check_record.SITES_SYMBOL, 0,
                                  memoryview(table))
        driver.write_device_global(stream, program, symbol, 0, memoryview(bytes(24)))
        text = check_record.site_text(bytes(table), site)
        raise exception(errc.kernel, check_record.message(self.kernel_id.get_name(), text,
                                                          index, extent))

    def bind(self, stream):
        """``launch(global_size, local_size, kernel_args, local_mem_bytes)`` on
        ``stream`` without a global offset: :meth:`launch` with the program, the
        spec-constant argument and the driver's kernel looked up once (the driver's
        ``bind_launch``). ``global_size`` / ``local_size`` are tuples (or None);
        ``kernel_args`` is a fresh list the call may extend."""
        program = self._program or self.program
        spec = self._spec_kernel_arg or self._spec_arg(stream)
        if not self._dg_launch and self._record is None:
            bound = self._driver.bind_launch(stream, program, self.kernel_name, spec)
            if self.coarsening is None:
                return bound
            coarse = self.coarsening.args

            def launch_coarsened(global_size, local_size, kernel_args, local_mem_bytes=0):
                global_size, local_size = coarse(global_size, local_size, kernel_args)
                return bound(global_size, local_size, kernel_args, local_mem_bytes)
            # (The same range gives the same coarsened launch, and the same extent
            # argument object: the driver's record of the last one still is the launch.)
            launch_coarsened.replay = getattr(bound, "replay", None)
            return launch_coarsened
        # Device globals move to this program before each launch, a checked build reads
        # its failure record after each: the general path.
        launch = self.launch

        def launch_bound(global_size, local_size, kernel_args, local_mem_bytes=0):
            return launch(stream, global_size, local_size, None, kernel_args, local_mem_bytes)
        return launch_bound

    def __repr__(self) -> str:
        return f"<Launcher {self.kernel_name} on {getattr(self.device, 'name', self.device)}>"
