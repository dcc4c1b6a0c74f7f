"""``sycl.context``: devices of one backend platform that share memory and programs.

>>> import pysycl as sycl
>>> ctx = sycl.context()
>>> ctx.get_devices() == [sycl.device()]
True
"""
from __future__ import annotations

import inspect
import threading

from ..bundle import this_module
from ..errors import errc, exception
from ..properties import runtime as rt_props
from .device import device
from .info import get_info
from .pickling import not_picklable

_default_lock = threading.Lock()


def is_async_handler(fn) -> bool:
    """Whether a lone callable given to ``queue(...)`` or ``context(...)`` is an
    async_handler rather than a device selector: C++ tells ``queue(async_handler)`` from
    ``queue(selector)`` by type, Python only by what the function says of itself. A
    handler takes the list of exceptions: its first parameter is annotated
    ``list``/``exception_list`` or named for it (``exceptions``, ``exc_list``,
    ``errors``, ``el``), or the function is named ``*handler``. Anything else stays a
    selector."""
    if fn is None or isinstance(fn, device) or not callable(fn):
        return False
    name = getattr(fn, "__name__", type(fn).__name__).lower()
    if "selector" in name:
        return False
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        params = []
    if params:
        ann = params[0].annotation
        ann = ann if isinstance(ann, str) else getattr(ann, "__name__", repr(ann))
        ann = ann.lower()
        if "device" in ann:
            return False
        if "list" in ann or "exception" in ann:
            return True
        pname = params[0].name.lower()
        if pname.startswith("dev") or pname == "d":
            return False
        if any(k in pname for k in ("exc", "err", "list")) or pname in ("el", "l", "es"):
            return True
    return name.endswith("handler")


class context:
    """``sycl.context(devices=None)``: ``devices`` is a device, a list of devices, a
    selector, or None (the default device). Devices must share one platform."""

    __reduce__ = not_picklable("context", "make a new sycl.context in the other process")

    __slots__ = ("_devices", "_handle", "_driver", "_is_default", "_properties",
                 "_async_handler", "__weakref__")
    _defaults: dict = {}

    def __init__(self, devices=None, async_handler=None, properties=None):
        if rt_props.is_property_list(async_handler):   # context(dev, property_list)
            async_handler, properties = None, async_handler
        if async_handler is None and is_async_handler(devices):   # context(async_handler)
            devices, async_handler = None, devices
        if async_handler is not None and not callable(async_handler):
            raise exception(errc.invalid, "async_handler must be callable(list_of_exceptions)")
        self._async_handler = async_handler
        self._properties = rt_props.properties_for(properties, "context", "sycl.context")
        if devices is None or callable(devices) and not isinstance(devices, device):
            devices = [device(devices)]
        elif isinstance(devices, device):
            devices = [devices]
        devices = list(dict.fromkeys(devices))
        if not devices:
            raise exception(errc.invalid, "a sycl.context needs at least one device")
        for d in devices:
            if not isinstance(d, device):
                raise exception(errc.invalid, f"{d!r} is not a sycl.device")
        platforms = {d.get_platform() for d in devices}
        if len(platforms) > 1:
            raise exception(errc.invalid, "a sycl.context cannot mix platforms/backends: "
                            + ", ".join(repr(d) for d in devices))
        self._devices = devices
        self._driver = devices[0].driver
        self._is_default = False
        self._handle = self._driver.create_context([d._desc for d in devices])

    @classmethod
    def _default_for(cls, dev: device) -> "context":
        """The platform default context of ``dev`` (what a queue uses without one):
        the backend's own default, so no driver context is made."""
        ctx = cls._defaults.get(dev)
        if ctx is None:
            with _default_lock:
                ctx = cls._defaults.get(dev)
                if ctx is None:
                    ctx = object.__new__(cls)
                    ctx._devices = [dev]
                    ctx._driver = dev.driver
                    ctx._handle = None  # drivers use their per-platform default
                    ctx._is_default = True
                    ctx._properties = rt_props.property_list()
                    ctx._async_handler = None
                    cls._defaults[dev] = ctx
        return ctx

    def has_property(self, key) -> bool:
        return rt_props.has_named(self._properties, key)

    def get_property(self, key):
        """The context's property of class ``key``; ``errc.invalid`` if it has none."""
        return self._properties.get_property(key)

    def get_devices(self) -> list[device]:
        return list(self._devices)

    @property
    def devices(self) -> list[device]:
        return list(self._devices)

    def get_platform(self):
        return self._devices[0].get_platform()

    platform = property(get_platform)

    def _common(self, name: str) -> list:
        """What every device of the context supports (SYCL 2020 4.6.3 atomic queries)."""
        lists = [getattr(d, name) for d in self._devices]
        return [x for x in lists[0] if all(x in other for other in lists[1:])]

    atomic_memory_order_capabilities = property(
        lambda self: self._common("atomic_memory_order_capabilities"))
    atomic_fence_order_capabilities = property(
        lambda self: self._common("atomic_fence_order_capabilities"))
    atomic_memory_scope_capabilities = property(
        lambda self: self._common("atomic_memory_scope_capabilities"))
    atomic_fence_scope_capabilities = property(
        lambda self: self._common("atomic_fence_scope_capabilities"))

    def get_backend(self):
        return self._devices[0].backend

    backend = property(get_backend)

    def get_info(self, descriptor):
        return get_info(self, descriptor)

    def get_kernel_bundles(self, state) -> list:
        """One ``kernel_bundle`` in ``state`` per Python module (translation unit) that
        defines kernels or ``@sycl.external`` functions, for this context's devices
        (the SYCL Modules proposal's ``context::get_modules``)."""
        return this_module.module_bundles(self, state)

    def _contains(self, dev: device) -> bool:
        return dev in self._devices or self._is_default and \
            dev.get_platform() == self._devices[0].get_platform()

    @property
    def handle(self):
        """The backend context object (None: the driver's default)."""
        return self._handle

    def __repr__(self):
        return f"<sycl.context {[d.name for d in self._devices]}>"
