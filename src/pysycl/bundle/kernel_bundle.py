"""``sycl.kernel_bundle`` (SYCL 2020 4.11.12) and ``sycl.kernel`` (4.11.13).

A bundle is a context, a device list, a state and a tuple of device images, plus the
specialization-constant values set on it (symbolic ID -> bytes; the images never hold
values). Reference semantics; two bundles are equal when context, state, devices and
image set are equal.

>>> bundle_state.input.name
'input'
"""
from __future__ import annotations

from typing import Any, Iterable, Iterator

from ..detail import check_stable
from ..detail.memo import Memo
from ..errors import errc, exception
from ..spec_values import (spec_default_bytes, spec_uid, spec_value_bytes,
                           spec_value_from_bytes)
from .device_image import bundle_state, device_image
from .kernel_id import kernel_id, to_kernel_ids


# -- kernel_bundle ------------------------------------------------------------------

class kernel_bundle:
    """A set of device images for one context and device list, in one state."""

    def __init__(self, context, devices: Iterable, state: bundle_state,
                 images: Iterable[device_image] = (), spec_values: dict[str, bytes] | None = None,
                 spec_objects: dict[str, Any] | None = None):
        self._context = context
        self._devices = list(dict.fromkeys(devices))
        self.state = state
        self._images = tuple(dict.fromkeys(images))
        self._spec_values: dict[str, bytes] = dict(spec_values or {})
        self._spec_objects: dict[str, Any] = dict(spec_objects or {})
        # device -> the launchers of its kernels (bundle/launch.py)
        self.device_caches = Memo()

    # -- queries (4.11.12.1) --
    def empty(self) -> bool:
        return not self._images

    def get_context(self):
        return self._context

    def get_devices(self) -> list:
        return list(self._devices)

    def get_backend(self):
        devs = self._devices
        return getattr(devs[0], "backend", None) if devs else None

    def has_kernel(self, kernel, device=None) -> bool:
        """True if an image contains ``kernel`` (a kernel_id or @sycl.kernel function),
        compatible with ``device`` when given."""
        return any(img.has_kernel(kernel, device) for img in self._images)

    def get_kernel_ids(self) -> list[kernel_id]:
        seen: dict[kernel_id, None] = {}
        for img in self._images:
            for k in img.get_kernel_ids():
                seen.setdefault(k, None)
        return list(seen)

    def get_kernel(self, kernel) -> "kernel_object":
        """The ``sycl.kernel`` for ``kernel``; executable bundles only (``errc.invalid``
        otherwise, or when the bundle does not contain it)."""
        if self.state is not bundle_state.executable:
            raise exception(errc.invalid, "get_kernel needs an executable kernel_bundle, "
                                          f"this one is in {self.state.name} state")
        kid = to_kernel_ids([kernel])[0]
        if not self.has_kernel(kid):
            raise exception(errc.invalid, f"kernel {kid.get_name()} is not in this kernel_bundle")
        return kernel_object(kid, self)

    def images_for(self, kid: kernel_id, device=None) -> list[device_image]:
        return [img for img in self._images if img.has_kernel(kid, device)]

    # -- specialization constants (4.11.12.2) --
    def contains_specialization_constants(self) -> bool:
        return any(img.spec_constants_used() for img in self._images)

    def native_specialization_constant(self) -> bool:
        """True only if some image uses a spec constant and every such image takes them
        natively (an empty bundle gives False: SYCL-Docs PR #346)."""
        users = [img for img in self._images if img.spec_constants_used()]
        return bool(users) and all(img.uses_native_spec_constants(self._devices) for img in users)

    def has_specialization_constant(self, spec_id) -> bool:
        uid = spec_uid(spec_id)
        return any(uid in img.spec_constants_used() for img in self._images)

    def set_specialization_constant(self, spec_id, value) -> None:
        """Set a value for every image (input bundles only, else ``errc.invalid``)."""
        if self.state is not bundle_state.input:
            raise exception(errc.invalid, "set_specialization_constant needs an input "
                                          f"kernel_bundle, this one is in {self.state.name} state")
        uid = spec_uid(spec_id)
        if any(getattr(img, "from_file", False) for img in self._images):
            check_stable([uid], "set a specialization constant of a loaded kernel bundle")
        self._spec_values[uid] = spec_value_bytes(spec_id, value)
        self._spec_objects[uid] = spec_id

    def get_specialization_constant(self, spec_id):
        """The value set (here or on the bundle this one came from), else the default."""
        uid = spec_uid(spec_id)
        raw = self._spec_values.get(uid)
        if raw is None:
            raw = spec_default_bytes(spec_id)
        return spec_value_from_bytes(spec_id, raw)

    @property
    def spec_values(self) -> dict[str, bytes]:
        """Symbolic ID -> value bytes of the constants set on this bundle (a copy)."""
        return dict(self._spec_values)

    # -- iteration, equality --
    def __iter__(self) -> Iterator[device_image]:
        return iter(self._images)

    def begin(self):
        """An iterator over the device images (SYCL's ``begin()``; ``iter(kb)`` alike)."""
        return iter(self._images)

    def end(self):
        """The past-the-end iterator: an exhausted one (SYCL's ``end()``; Python code
        iterates ``kb`` or ``kb.begin()`` and never needs it)."""
        return iter(())

    def get_kernel_names(self) -> list[str]:
        """The names of the kernels in the bundle (``get_kernel_ids()`` by name, as the
        SYCL Modules proposal's ``module::get_kernel_names``)."""
        return [k.get_name() for k in self.get_kernel_ids()]

    def __len__(self) -> int:
        return len(self._images)

    def __eq__(self, other):
        if not isinstance(other, kernel_bundle):
            return NotImplemented
        return (self._context == other._context and self.state is other.state
                and set(self._devices) == set(other._devices)
                and set(self._images) == set(other._images))

    def __hash__(self):
        return hash((id(self._context), self.state, frozenset(self._images)))

    def __repr__(self) -> str:
        return (f"<kernel_bundle {self.state.name}: {len(self._images)} images, "
                f"kernels {[k.get_name() for k in self.get_kernel_ids()]}>")


class kernel_object:
    """``sycl.kernel``: one kernel of an executable bundle, launchable by the handler."""

    def __init__(self, kid: kernel_id, bundle: kernel_bundle):
        self._pysycl_kernel_id = kid
        self._bundle = bundle

    def get_kernel_bundle(self) -> kernel_bundle:
        return self._bundle

    def get_context(self):
        return self._bundle.get_context()

    def get_kernel_id(self) -> kernel_id:
        return self._pysycl_kernel_id

    def get_backend(self):
        """The backend of the bundle's devices (SYCL 2020 4.11.13)."""
        return self._bundle.get_backend()

    def _properties(self) -> dict:
        props = {}
        for img in self._bundle.images_for(self._pysycl_kernel_id):
            fn = img.kernel_function(self._pysycl_kernel_id)
            if fn is not None:
                props.update(fn.properties)
        return props

    def _device_specific(self, name: str, device):
        """``info.kernel_device_specific`` queries (SYCL 2020 4.11.13.2) for ``device``:
        the device's limits, narrowed by the kernel's required sizes."""
        if device is None:
            raise exception(errc.invalid, f"info.kernel_device_specific.{name} needs the "
                            "device: kernel.get_info(descriptor, device)")
        if not self._bundle.has_kernel(self._pysycl_kernel_id, device):
            raise exception(errc.invalid, f"kernel {self._pysycl_kernel_id.get_name()} has no "
                            f"image for {device!r} in its kernel_bundle")
        props = self._properties()
        required = props.get("sycl-work-group-size")
        sizes = tuple(int(v) for v in required.split(",")) if required else None
        sub = props.get("sycl-sub-group-size")
        sub_sizes = tuple(device.sub_group_sizes) or (1,)
        if name == "global_work_size":
            raise exception(errc.invalid, "info.kernel_device_specific.global_work_size is "
                            "only for built-in kernels")
        if name == "work_group_size":
            if sizes:
                total = 1
                for v in sizes:
                    total *= v
                return total
            return device.max_work_group_size
        if name == "compile_work_group_size":   # a range<3>: (d0, d1, d2), last fastest
            return (1,) * (3 - len(sizes)) + sizes if sizes else (0, 0, 0)
        if name == "preferred_work_group_size_multiple":
            return max(sub_sizes)
        if name == "private_mem_size":
            return 0   # not measured: kernels' private memory lives in registers/stack
        if name == "max_sub_group_size":
            return int(sub) if sub else max(sub_sizes)
        if name == "compile_sub_group_size":
            return int(sub) if sub else 0
        if name == "max_num_sub_groups":
            wg = self._device_specific("work_group_size", device)
            return max(1, wg // (int(sub) if sub else min(sub_sizes)))
        if name == "compile_num_sub_groups":
            return 0
        raise exception(errc.invalid, f"unknown kernel info {name}")

    def get_info(self, param, device=None):
        """``kernel.get_info(sycl.info.kernel.function_name)``;
        ``info.kernel_device_specific`` descriptors take the device too."""
        family = type(param).__name__.lstrip("_")
        name = getattr(param, "name", None) or str(param)
        name = name.rsplit(".", 1)[-1]
        if family == "kernel_device_specific":
            return self._device_specific(name, device)
        if family not in ("kernel", "str"):
            raise exception(errc.invalid, f"sycl.info.{family}.{name} is not a descriptor of "
                            "kernel (those are sycl.info.kernel.* and "
                            "sycl.info.kernel_device_specific.*)")
        if name == "function_name":
            return self._pysycl_kernel_id.get_name()
        if name == "attributes":
            props = {}
            for img in self._bundle.images_for(self._pysycl_kernel_id):
                fn = img.kernel_function(self._pysycl_kernel_id)
                if fn is not None:
                    props.update(fn.properties)
            return " ".join(f"{k}({v})" for k, v in sorted(props.items()))
        if name == "context":
            return self.get_context()
        if name == "num_args":
            raise exception(errc.invalid, "info.kernel.num_args is only for interop and "
                                          "built-in kernels")
        raise exception(errc.invalid, f"unknown kernel info {param!r}")

    def __eq__(self, other):
        return (isinstance(other, kernel_object) and other._pysycl_kernel_id is self._pysycl_kernel_id
                and other._bundle is self._bundle)

    def __hash__(self):
        return hash((id(self._pysycl_kernel_id), id(self._bundle)))

    def __repr__(self) -> str:
        return f"<sycl.kernel {self._pysycl_kernel_id.get_name()}>"


kernel = kernel_object
