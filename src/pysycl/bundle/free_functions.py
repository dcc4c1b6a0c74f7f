"""The kernel-bundle free functions (SYCL 2020 4.11.7-4.11.11), with their error rules.

Every rule of SYCL 2020's free-function kernels is ``errc.invalid`` unless it is a
failed compile or link (``errc.build``, naming the kernel or symbol at fault).

>>> import pysycl as sycl                                             # doctest: +SKIP
>>> kb = sycl.get_kernel_bundle(ctx, sycl.bundle_state.input, kernel=conv)  # doctest: +SKIP
>>> kb.set_specialization_constant(coeff_id, coefficients)                 # doctest: +SKIP
>>> exe = sycl.build(kb)                                                   # doctest: +SKIP
"""
from __future__ import annotations

from typing import Callable, Iterable, Sequence

from ..detail.gc_pause import no_full_collections
from ..properties.aspects import aspect
from ..properties import properties_for
from ..errors import errc, exception, type_error
from . import toolchain, warm_index
from .device_image import bundle_state, device_image, kernel_compatible, prebuilt_image
from .executables import (LinkSource, build_for_devices, default_source, executable_images,
                          group_by_target, lowering_from_properties)
from .kernel_bundle import kernel_bundle
from .kernel_id import kernel_id, to_kernel_ids
from .linker import link_objects
from .sources import input_image, input_images, object_image, skipping_failures


def _build_properties(props, what: str):
    """``props`` checked to be build properties (a kernel or device_global property
    given to compile/link/build would otherwise be ignored)."""
    return properties_for(props, "build", f"sycl.{what}")


def _state(state) -> bundle_state:
    if isinstance(state, bundle_state):
        return state
    if isinstance(state, str) and state in bundle_state.__members__:
        return bundle_state[state]
    name = getattr(state, "name", None)
    if name in bundle_state.__members__:
        return bundle_state[name]
    raise exception(errc.invalid, f"{state!r} is not a sycl.bundle_state")


def _aspect(name: str):
    return aspect[name]


def _context_devices(ctx, what: str) -> list:
    """The devices of ``ctx``; a ``TypeError`` (errc.invalid) naming ``what`` when it is
    not a context."""
    get_devices = getattr(ctx, "get_devices", None)
    if get_devices is None:
        raise type_error(errc.invalid, f"{what} takes a sycl.context first, not "
                         f"{type(ctx).__name__}")
    return list(get_devices())


def _check_devices(devices, allowed: Sequence, where: str) -> list:
    """Deduplicated ``devices``; ``errc.invalid`` if empty or one is not in ``allowed``
    (or a sub-device of one)."""
    devs = list(dict.fromkeys(devices))
    if not devs:
        raise exception(errc.invalid, f"the device list is empty ({where})")
    for d in devs:
        if not any(toolchain.is_descendant(d, a) for a in allowed):
            raise exception(errc.invalid, f"device {getattr(d, 'name', d)!r} is not one of "
                                          f"the devices of {where}")
    return devs


def _check_online_tools(state: bundle_state, devices: Sequence) -> None:
    need = {bundle_state.input: "online_compiler", bundle_state.object: "online_linker"}.get(state)
    if need is None:
        return
    for d in devices:
        if not toolchain.device_has(d, _aspect(need)):
            raise exception(errc.invalid, f"device {getattr(d, 'name', d)!r} lacks "
                                          f"aspect.{need}, needed for {state.name} kernel bundles")


def _lacks_online_tools(state: bundle_state, devices: Sequence) -> bool:
    try:
        _check_online_tools(state, devices)
        return False
    except exception:
        return True


def _kernel_compatible_any(kid: kernel_id, devices: Sequence) -> bool:
    fn = input_image(kid).kernel_function(kid)
    return fn is None or any(kernel_compatible(fn, d) for d in devices)


def _image_compatible_any(img: device_image, devices: Sequence) -> bool:
    return any(img.compatible_with(d) for d in devices)


def _executable_images(kids: Sequence[kernel_id], devices: Sequence, props=None,
                       values=None, *, requested: bool = True) -> list[device_image]:
    """Executable images of ``kids``; kernels nobody named (``requested=False``) that
    fail to build are left out, with a warning (``sources.skipping_failures``)."""
    mode = lowering_from_properties(props)
    groups = group_by_target(devices)

    def jobs(kernels):
        sources = [(k, default_source(k)) for k in kernels]
        return [(source, k, group) for group in groups for k, source in sources]
    if requested:
        return executable_images(jobs(kids), mode, values)
    per_kernel = skipping_failures(kids, lambda k: executable_images(jobs([k]), mode, values),
                                   lambda k: f"kernel {k.get_name()}")
    return [img for images in per_kernel for img in images]


def _object_images(images: Sequence[device_image], *, requested: bool) -> list[device_image]:
    if requested:
        return [object_image(img) for img in images]
    return skipping_failures(images, object_image, _image_what)


def _image_what(img: device_image) -> str:
    names = ", ".join(k.get_name() for k in img.get_kernel_ids())
    return f"kernel {names}" if names else f"library {img.translation_unit}"


@no_full_collections()
def get_kernel_bundle(ctx, state, *, devices=None, kernel_ids=None, selector=None,
                      kernel=None) -> kernel_bundle:
    """The application's kernels for ``ctx``/``devices`` in ``state`` (4.11.7).

    ``kernel_ids`` (or one ``kernel``) restricts to images holding those kernels;
    ``selector(device_image) -> bool`` filters images.
    """
    state = _state(state)
    ctx_devices = _context_devices(ctx, "get_kernel_bundle")
    devs = _check_devices(ctx_devices if devices is None else devices, ctx_devices, "the context")
    _check_online_tools(state, devs)
    if kernel is not None:
        kernel_ids = list(to_kernel_ids(kernel_ids)) + to_kernel_ids([kernel])
    if kernel_ids is not None and selector is not None:
        raise exception(errc.invalid, "get_kernel_bundle takes kernel_ids or a selector, not both")
    kids = to_kernel_ids(kernel_ids) if kernel_ids is not None else None
    if kids:
        # A bundle of many kernels reads their warm-start summaries in one go.
        warm_index.prefetch_summaries([k.kernel for k in kids if k.kernel is not None])
        for k in kids:
            if not _kernel_compatible_any(k, devs):
                raise exception(errc.invalid, f"kernel {k.get_name()} is incompatible with all "
                                              "devices in devs")
    # Without kernel ids this is the whole application: kernels that do not compile
    # are left out (sources.skipping_failures); a request naming one raises its error.
    requested = kids is not None
    images = [img for img in input_images(kids) if _image_compatible_any(img, devs)]
    if state is bundle_state.object:
        images = _object_images(images, requested=requested)
    elif state is bundle_state.executable:
        kernels = list(dict.fromkeys(k for img in images for k in img.get_kernel_ids()))
        images = _executable_images(kernels, devs, requested=requested)
    if selector is not None:
        images = [img for img in images if selector(img)]
    return kernel_bundle(ctx, devs, state, images)


def has_kernel_bundle(ctx, state, *, devices=None, kernel_ids=None, kernel=None) -> bool:
    """Whether ``get_kernel_bundle`` would give a non-empty bundle (4.11.8); raises
    only for an empty device list or a device outside ``ctx``."""
    state = _state(state)
    ctx_devices = _context_devices(ctx, "has_kernel_bundle")
    devs = _check_devices(ctx_devices if devices is None else devices, ctx_devices, "the context")
    if _lacks_online_tools(state, devs):
        return False
    if kernel is not None:
        kernel_ids = list(to_kernel_ids(kernel_ids)) + to_kernel_ids([kernel])
    if kernel_ids is not None:
        kids = to_kernel_ids(kernel_ids)
        return all(k.kernel is not None and _kernel_compatible_any(k, devs) for k in kids)
    return any(_image_compatible_any(img, devs) and img.get_kernel_ids()
               for img in input_images(None))


def is_compatible(kernel_ids, device) -> bool:
    """True iff every kernel in ``kernel_ids`` can run on ``device`` (4.11.9)."""
    return all(_kernel_compatible_any(k, [device]) for k in to_kernel_ids(kernel_ids))


@no_full_collections()
def compile(kb: kernel_bundle, devices=None, properties=None) -> kernel_bundle:  # noqa: A001
    """Input bundle -> object bundle (4.11.11); spec-constant values are carried."""
    if not isinstance(kb, kernel_bundle) or kb.state is not bundle_state.input:
        raise exception(errc.invalid, "compile needs an input kernel_bundle")
    _build_properties(properties, "compile")
    devs = _check_devices(kb.get_devices() if devices is None else devices, kb.get_devices(),
                          "the kernel_bundle")
    _check_online_tools(bundle_state.input, devs)
    images = [object_image(img) for img in kb if _image_compatible_any(img, devs)]
    return kernel_bundle(kb.get_context(), devs, bundle_state.object, images,
                         kb._spec_values, kb._spec_objects)


def _common_context(bundles: Sequence[kernel_bundle], what: str):
    ctxs = list(dict.fromkeys(b.get_context() for b in bundles))
    if len(ctxs) > 1:
        raise exception(errc.invalid, f"{what}: the kernel bundles belong to different contexts")
    return ctxs[0]


def _merged_spec_values(bundles: Sequence[kernel_bundle]) -> tuple[dict, dict]:
    """Values set in any of the bundles; a constant set in several keeps the first
    value (undefined by the spec; deterministic here)."""
    values: dict[str, bytes] = {}
    objects: dict = {}
    for b in bundles:
        for uid, raw in b._spec_values.items():
            values.setdefault(uid, raw)
        for uid, obj in b._spec_objects.items():
            objects.setdefault(uid, obj)
    return values, objects


@no_full_collections()
def link(bundles, devices=None, properties=None) -> kernel_bundle:
    """Object bundle(s) -> executable bundle (4.11.11).

    A duplicate kernel or exported symbol, or an unresolved import, fails the link
    (``errc.build``, naming the symbol).
    """
    _build_properties(properties, "link")
    if isinstance(bundles, kernel_bundle):
        bundles = [bundles]
    bundles = list(bundles)
    if not bundles:
        raise exception(errc.invalid, "link needs at least one object kernel_bundle")
    for b in bundles:
        if not isinstance(b, kernel_bundle) or b.state is not bundle_state.object:
            raise exception(errc.invalid, f"link needs object kernel bundles, got {b!r}")
    ctx = _common_context(bundles, "link")
    all_devs = list(dict.fromkeys(d for b in bundles for d in b.get_devices()))
    if devices is None:
        devices = [d for d in all_devs if all(d in b.get_devices() for b in bundles)]
    devs = _check_devices(devices, all_devs, "any of the kernel bundles")
    _check_online_tools(bundle_state.object, devs)
    values, objects = _merged_spec_values(bundles)
    images = list(dict.fromkeys(img for b in bundles for img in b))
    # Binaries read from a file (DPC++'s SPIR-V) are bound, not linked.
    prebuilt = [prebuilt_image(img, bundle_state.executable, devs)
                for img in images if img.binary is not None]
    images = [img for img in images if img.binary is None]
    mode = lowering_from_properties(properties)
    if any(img.untrusted for img in images):
        # IR from a bundle file no one vouches for: its code is built checked.
        with toolchain.checked_builds():
            exe = build_for_devices(link_objects(images), devs, mode, values)
    else:
        exe = _linked_executables(images, devs, mode, values)
    exe = list(exe) + [img for img in prebuilt if img.get_devices()]
    return kernel_bundle(ctx, devs, bundle_state.executable, exe, values, objects)


def _linked_executables(images: list[device_image], devs: list, mode: str,
                        values) -> list[device_image]:
    """The executable images of the link of ``images`` (object images), each from the
    first cache tier that has it: when every image came from the warm-start index
    (``warm_index.py``) and none has made its IR, the index answers without a link."""
    warm = bool(images) and all(getattr(img, "is_warm", False) for img in images)
    source = LinkSource(
        lambda: link_objects(images),
        tuple(img._warm_fingerprint for img in images) if warm else None,
        {kid.get_name(): img.kernel_function(kid) for img in images
         for kid in img.get_kernel_ids()} if warm else None)
    # The kernels' link entries go into one bundle-wide entry (record_groups), not a
    # file each; those it does not hold are written one by one at the end.
    with warm_index.held_link_entries():
        exe = executable_images([(source, kid, group) for group in group_by_target(devs)
                                 for img in images for kid in img.get_kernel_ids()],
                                mode, values)
        linked = source.linked_kernels() if source.did_link else []
        if linked and linked[0].warm_group:   # the bundle-wide index entries, for next time
            warm_index.record_groups([k.kernel for img in images for k in img.get_kernel_ids()],
                                     linked[0].warm_group, [lk.name for lk in linked])
    return exe


def build(kb: kernel_bundle, devices=None, properties=None) -> kernel_bundle:
    """Input bundle -> executable bundle: ``link(compile(kb))`` (4.11.11)."""
    if not isinstance(kb, kernel_bundle) or kb.state is not bundle_state.input:
        raise exception(errc.invalid, "build needs an input kernel_bundle")
    _build_properties(properties, "build")
    obj = compile(kb, devices, properties)
    return link([obj], obj.get_devices(), properties)


def join(bundles: Iterable[kernel_bundle]) -> kernel_bundle:
    """The union of the images of bundles of one context, device set and state (4.11.10).
    ``join([])`` is an empty bundle (SYCL-CTS); spec-constant values are carried."""
    try:
        bundles = list(bundles)
    except TypeError:
        bundles = [bundles]
    for b in bundles:
        if not isinstance(b, kernel_bundle):
            raise type_error(errc.invalid, f"join takes a list of kernel_bundles, not "
                             f"{type(b).__name__}")
    if not bundles:
        return kernel_bundle(None, [], bundle_state.executable, [])
    ctx = _common_context(bundles, "join")
    states = {b.state for b in bundles}
    if len(states) > 1:
        raise exception(errc.invalid, "join: the kernel bundles are in different states")
    device_sets = {frozenset(b.get_devices()) for b in bundles}
    if len(device_sets) > 1:
        raise exception(errc.invalid, "join: the kernel bundles have different device sets")
    values, objects = _merged_spec_values(bundles)
    images = [img for b in bundles for img in b]
    return kernel_bundle(ctx, bundles[0].get_devices(), bundles[0].state, images, values, objects)
