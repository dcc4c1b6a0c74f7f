"""``get_launcher``: the runtime's one entry point into kernel bundles.

The handler asks for a :class:`Launcher` for (kernel, device, context) and launches it.
Without a bound bundle the kernel comes from the default lookup of the SYCL Modules
seed: a ready executable image (memory or disk cache), else the linked object images,
else the kernel's input image built now (each step memoised, so a kernel is linked
once per process and code-generated once per target and literal value set); the
kernel's ``@sycl.external`` imports are resolved from every Python module imported so
far. With ``bundle=`` (``use_kernel_bundle``) the kernel must be in that executable
bundle, else ``errc.kernel_not_supported``.

Launchers are cached in memory by (kernel, device, spec-constant value bytes, launch
properties, bundle, image selector): a hit hashes no IR and costs one dict lookup.
Threads asking for one key at once build it once.

>>> _spec_key(None)
()
"""
from __future__ import annotations

import inspect
import threading
from typing import Any, Mapping, Sequence

from ..backends.base import KernelArg, KernelArgKind
from ..errors import errc, exception
from ..ir.core import Function
from ..ir.types import IndexSpaceType
from . import stats, toolchain
from .device_image import bundle_state, device_image, kernel_compatible
from .kernel_bundle import kernel_bundle, kernel_object, spec_uid, spec_value_bytes
from .kernel_id import get_kernel_id, kernel_id
from .linker import build_executable, default_linked_kernel, lowering_from_properties

_launchers: dict[tuple, "Launcher"] = {}
_lock = threading.Lock()
_building: dict[tuple, threading.Lock] = {}


def _spec_key(spec_values: Mapping | None) -> tuple:
    """``((symbolic id, value bytes), ...)`` sorted; keys may be specialization_id
    objects (values converted to their dtype) or symbolic IDs with bytes values."""
    if not spec_values:
        return ()
    out = []
    for sid, value in spec_values.items():
        if isinstance(sid, str):
            raw = bytes(value) if isinstance(value, (bytes, bytearray, memoryview)) else None
            if raw is None:
                raise exception(errc.invalid, f"spec constant {sid}: give bytes or key the "
                                              "value by its specialization_id")
        else:
            raw = spec_value_bytes(sid, value)
        out.append((spec_uid(sid), raw))
    return tuple(sorted(out))


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
    if isinstance(kernel, kernel_object):
        bundle = kernel.get_kernel_bundle()  # 4.9.4.2: a kernel object uses its own bundle
    key = (id(kernel) if not isinstance(kernel, kernel_object) else kernel.get_kernel_id(),
           device, _spec_key(spec_values), _hashable(launch_properties),
           id(bundle) if bundle is not None else None, image_selector)
    hit = _launchers.get(key)
    if hit is not None and hit.kernel_ref is kernel_ref(kernel):
        return hit
    with _lock:
        lock = _building.setdefault(key, threading.Lock())
    with lock:
        hit = _launchers.get(key)
        if hit is not None and hit.kernel_ref is kernel_ref(kernel):
            return hit
        launcher = _make_launcher(kernel, device, bundle, image_selector, dict(key[2]),
                                  launch_properties)
        stats.bump("launcher_builds")
        _launchers[key] = launcher
    with _lock:
        _building.pop(key, None)
    return launcher


def kernel_ref(kernel):
    """What a cached launcher remembers to detect a redefined kernel under a reused id."""
    return kernel.get_kernel_id() if isinstance(kernel, kernel_object) else kernel


def clear_launchers() -> None:
    """Forget every cached launcher (tests)."""
    with _lock:
        _launchers.clear()


def _make_launcher(kernel, device, bundle, image_selector, values: dict[str, bytes],
                   launch_properties) -> "Launcher":
    kid = get_kernel_id(kernel)
    if bundle is not None:
        if bundle.state is not bundle_state.executable:
            raise exception(errc.invalid, "use_kernel_bundle needs an executable kernel_bundle")
        images = bundle.images_for(kid, device)
        if not images:
            raise exception(errc.kernel_not_supported,
                            f"kernel {kid.get_name()} is not in the kernel_bundle bound with "
                            f"use_kernel_bundle for device {getattr(device, 'name', device)!r}")
        image = image_selector(images) if image_selector is not None else images[0]
        if not isinstance(image, device_image) or image not in images:
            raise exception(errc.invalid, "the image selector must return one of the images")
        values = bundle.spec_values
    else:
        if kid.kernel is None:
            raise exception(errc.kernel_not_supported,
                            f"kernel {kid.get_name()} is not defined in this process")
        lk = default_linked_kernel(kid)
        fn = lk.module.function(lk.name)
        if not kernel_compatible(fn, device):
            raise exception(errc.kernel_not_supported,
                            f"kernel {kid.get_name()} uses optional features that device "
                            f"{getattr(device, 'name', device)!r} does not support")
        image = build_executable(lk, [device], lowering_from_properties(launch_properties),
                                 values)
    return Launcher(kid, image, device, values)


def _ints(text: str | None):
    if not text:
        return None
    return tuple(int(x) for x in text.split(",") if x.strip())


class Launcher:
    """Launches one kernel image on one device with fixed spec-constant values."""

    def __init__(self, kid: kernel_id, image: device_image, device, values: dict[str, bytes]):
        self.kernel_id = kid
        self.kernel_ref = kid.kernel if kid.kernel is not None else kid
        self.image = image
        self.device = device
        fn = image.kernel_function(kid)
        if fn is None:
            raise exception(errc.kernel_not_supported, f"image has no kernel {kid.get_name()}")
        self.function: Function = fn
        self.kernel_name = fn.name
        sig = self._signature(kid, fn)
        self.signature = sig
        self.params = tuple(getattr(sig, "params", ()) or ())
        self.index_kind = getattr(sig, "index_kind", None)
        self.dims = getattr(sig, "dims", None)
        props = dict(fn.properties)
        self.properties = props
        self.reqd_work_group_size = _ints(props.get("sycl-work-group-size"))
        self.work_group_size_hint = _ints(props.get("sycl-work-group-size-hint"))
        self.max_work_group_size = _ints(props.get("sycl-max-work-group-size"))
        mlin = _ints(props.get("sycl-max-linear-work-group-size"))
        self.max_linear_work_group_size = mlin[0] if mlin else None
        sg = _ints(props.get("sycl-sub-group-size"))
        self.sub_group_size = sg[0] if sg else None
        self.local_mem_static = int(fn.attrs.get("local_mem_static", 0) or 0)
        ids = image.spec_ids
        mode = image.spec_constant_lowering
        self.spec_constant_lowering = mode
        self.spec_buffer = ids.buffer(values) if (ids is not None and mode == "emulated") else b""
        self._native_values = (ids.native_values(values) if (ids is not None and mode == "native")
                               else None)
        self._driver = toolchain.driver_for(device)
        params = inspect.signature(self._driver.launch).parameters
        self._offset_kw = "offset" if "offset" in params else None
        self._spec_mem = None
        self._spec_lock = threading.Lock()
        self._program = None

    @staticmethod
    def _signature(kid: kernel_id, fn: Function):
        kfn = kid.kernel
        if kfn is not None and callable(getattr(kfn, "signature", None)):
            return kfn.signature()
        index = [p for p in fn.params if isinstance(p.type, IndexSpaceType)
                 and p.type.kind in ("id", "item", "nd_item")]
        return type("KernelSignature", (), {
            "params": tuple(fn.params), "index_kind": index[0].type.kind if index else None,
            "dims": index[0].type.dims if index else None})()

    @property
    def program(self):
        """The loaded program (through the device's driver, once, lazily)."""
        if self._program is None:
            self._program = self.image.program(self.device, self._native_values)
        return self._program

    def _spec_arg(self, stream) -> KernelArg:
        if self._spec_mem is None:
            with self._spec_lock:
                if self._spec_mem is None:
                    desc = toolchain.device_description(self.device)
                    data = self.spec_buffer or bytes(8)
                    mem = self._driver.alloc(desc, len(data), "device")
                    token = self._driver.copy(stream, mem, 0, memoryview(data), 0, len(data))
                    wait = getattr(token, "wait", None)
                    if callable(wait):
                        wait()
                    else:
                        self._driver.synchronize(stream)
                    self._spec_mem = mem
        return KernelArg(KernelArgKind.mem, self._spec_mem)

    def launch(self, stream, global_size: Sequence[int], local_size: Sequence[int] | None,
               offset: Sequence[int] | None, kernel_args: Sequence[KernelArg],
               local_mem_bytes: int = 0) -> Any:
        """Enqueue one launch; ``kernel_args`` are the packed user arguments, the
        implicit spec-constant buffer is appended here."""
        args = list(kernel_args) + [self._spec_arg(stream)]
        kw = {}
        if offset is not None and any(offset):
            if self._offset_kw is None:
                raise exception(errc.feature_not_supported,
                                "this device's driver takes no global offset")
            kw[self._offset_kw] = tuple(offset)
        return self._driver.launch(stream, self.program, self.kernel_name, tuple(global_size),
                                   None if local_size is None else tuple(local_size), args,
                                   local_mem_bytes, **kw)

    def __repr__(self) -> str:
        return f"<Launcher {self.kernel_name} on {getattr(self.device, 'name', self.device)}>"
