"""Python source -> input images, and the per-process image caches of the state chain.

Device code is split per kernel: a kernel's input image is ``KernelFunction.ir_module()``
(the kernel, the device functions it calls, imports as declarations), except that the
kernels of one Python module that use a ``device_image_scope`` device_global (directly
or through another such kernel's variables) share one image, as DPC++'s per-source
split gives them: the variable has one copy per image, and those kernels must see the
same one. A Python module that defines ``@sycl.external`` functions gets one library
image. Input and object images depend only on source, so they are made once per process
and shared by every bundle (the bundle carries the spec-constant values), each kept on
what it is made from: a kernel's input image on its kernel_id, an object image on its
input image (``detail.memo``: thread-safe, a second caller waits for the first).

>>> library_modules() is not None
True
"""
from __future__ import annotations

import threading
import warnings
from typing import Callable, Iterable, TypeVar

from .device_globals import image_device_globals, scope_group
from ..detail.callers import user_stacklevel
from ..detail.memo import Memo, memo_of
from ..errors import errc, exception
from ..ir.core import Module
from . import build_chain, stats, toolchain, warm_index
from .build_chain import Job
from .device_image import (bundle_state, device_image, image_property_sets, kernel_ids_of,
                           prebuilt_image)
from .kernel_id import (get_kernel_id, kernel_function_module, kernel_id,
                        registered_kernels)

# (module name, its @sycl.external functions) -> the module's library image.
_libraries = Memo()
# The kernel functions sharing device_image_scope variables -> their one input image.
_scope_groups = Memo()
_warned: set[str] = set()                                  # what was left out, once each
_warned_lock = threading.Lock()

T = TypeVar("T")
R = TypeVar("R")


def _frontend_registry():
    from ..frontend import registry
    return registry


def input_image(kid: kernel_id) -> device_image:
    """The input image holding one kernel (frontend IR), made once per kernel definition:
    its own, or the one it shares with the kernels of its module that use the same
    ``device_image_scope`` variables."""
    own = _kernel_input_image(kid)
    if not image_scope_ids(own):
        return own
    return _image_scope_group(kid, own)


def image_scope_ids(img: device_image) -> set[str]:
    """The ``device_image_scope`` device_globals an image uses."""
    return {uid for uid, _size, scoped, _init in image_device_globals(img) if scoped}


def _image_scope_group(kid: kernel_id, own: device_image) -> device_image:
    """The image of the kernels of ``kid``'s module linked to it by the
    ``device_image_scope`` variables they use (a kernel that does not compile is left
    out: its error comes where it is used)."""
    module = kernel_function_module(kid.kernel)
    ordered = [get_kernel_id(kfn) for kfn in registered_kernels(module)]
    uses: dict[kernel_id, set[str]] = {kid: image_scope_ids(own)}
    for k in ordered:
        if k not in uses:
            try:
                ids = image_scope_ids(_kernel_input_image(k))
            except exception:
                continue
            if ids:
                uses[k] = ids
    group = scope_group(uses, kid)
    members = [k for k in ordered if k in group] or [kid]
    if len(members) == 1:
        return own
    fns = tuple(k.kernel for k in members)
    return _scope_groups.get_or_make(fns, lambda: _new_scope_group(module, members))


def _new_scope_group(module: str, members: list[kernel_id]) -> device_image:
    ir = toolchain.link_modules([_kernel_input_image(k).module for k in members],
                                f"{module}[device_image_scope]")
    ir.attrs["python_module"] = module
    img = device_image(bundle_state.input, ir, members, translation_unit=module)
    img._warm_fingerprint = None   # the warm-start index holds one kernel an image
    return img


def _kernel_input_image(kid: kernel_id) -> device_image:
    """The input image of one kernel alone."""
    kfn = kid.kernel
    if kfn is None:
        raise exception(errc.kernel_not_supported,
                        f"kernel {kid.get_name()} is not defined in this process (import the "
                        "module that defines it, or load a bundle that contains it)")
    return kid.builds.get_or_make("input", lambda: _new_input_image(kid, kfn))


def _new_input_image(kid: kernel_id, kfn) -> device_image:
    found = warm_index.lookup_summary(kfn)
    if found is not None:
        # Warm start: the image's metadata from the index; its IR only on demand.
        build_chain.hit("input", "warm index", kid.get_name())
        fp, entry = found
        img = device_image(bundle_state.input, None, [kid],
                           translation_unit=kernel_function_module(kfn),
                           registry=entry["_input_registry"],
                           kernel_infos=entry["_kernels"],
                           materialize=lambda: _frontend_module(kfn))
        img._warm_fingerprint = fp
        img._warm_object_registry = entry["_object_registry"]
    else:
        img = device_image(bundle_state.input, _frontend_module(kfn), [kid],
                           translation_unit=kernel_function_module(kfn))
        img._warm_fingerprint = warm_index.fingerprint(kfn) if warm_index.enabled() else None
    img._warm_kernel = kfn
    return img


def _frontend_module(kfn) -> Module:
    stats.bump("frontend_count")
    build_chain.hit("input", "built", kfn.name)
    return build_chain.run("input", kfn, Job(kfn.name))


def _externals_by_module() -> dict[str, list]:
    out: dict[str, list] = {}
    for ext in _frontend_registry().external_definitions():
        out.setdefault(kernel_function_module(ext) or "?", []).append(ext)
    return out


def library_modules() -> list[str]:
    """Python modules imported so far that define ``@sycl.external`` functions."""
    return sorted(_externals_by_module())


def library_image(module_name: str) -> device_image | None:
    """The library image of one Python module's ``@sycl.external`` definitions."""
    exts = tuple(_externals_by_module().get(module_name, ()))
    if not exts:
        return None
    # (A redefined external is another key: the image of the old definitions is not used.)
    return _libraries.get_or_make((module_name, exts),
                                  lambda: _new_library_image(module_name, exts))


def _new_library_image(module_name: str, exts: tuple) -> device_image:
    stats.bump("frontend_count")
    build_chain.hit("input", "built", f"library {module_name}")
    modules = [build_chain.run("input", ext, Job(f"{ext.name} (library {module_name})"))
               for ext in exts]
    module = modules[0] if len(modules) == 1 else _merge_library(module_name, modules)
    module.name = module_name
    return device_image(bundle_state.input, module, [], translation_unit=module_name)


def _merge_library(name: str, modules: list[Module]) -> Module:
    """One module from several externals' modules; a device helper that two of them
    include is kept once (same name, same Python function)."""
    merged = Module(name)
    seen: set[str] = set()
    for m in modules:
        for f in m.functions:
            if f.name in seen:
                continue
            seen.add(f.name)
            merged.functions.append(f)
        for s in m.spec_constants:
            if merged.spec_constant(s.unique_id) is None:
                merged.spec_constants.append(s)
        for d in m.device_globals:
            if merged.device_global(d.unique_id) is None:
                merged.device_globals.append(d)
    # An external defined in one module and declared by another is resolved here.
    defined = {f.name for f in merged.functions if not f.is_declaration}
    merged.functions = [f for f in merged.functions
                        if not (f.is_declaration and f.name in defined)]
    return merged


def all_library_images() -> list[device_image]:
    """Every module's library image; one whose source does not compile is left out
    (with a warning), as DPC++'s bundles hold only what compiled."""
    return [img for img in skipping_failures(library_modules(), library_image,
                                             lambda m: f"library {m}")
            if img is not None]


def skipping_failures(items: Iterable[T], make: Callable[[T], R],
                      what: Callable[[T], str]) -> list[R]:
    """``make(item)`` for every item, leaving out (with one warning each) those whose
    source does not compile or link (``errc.build``).

    An application-wide request (``get_kernel_bundle(ctx, state)`` without kernel ids)
    goes through here: in DPC++ a kernel that does not compile stops the build of the
    program, so its bundles only ever hold kernels that compiled; pysycl compiles when
    asked, so a broken kernel must not take its unrelated neighbours down with it. A
    request that names the kernel still raises its error.
    """
    out = []
    for item in items:
        try:
            out.append(make(item))
        except exception as e:
            if e.code() is not errc.build:
                raise
            _warn_left_out(what(item), e)
    return out


def _warn_left_out(what: str, err: exception) -> None:
    with _warned_lock:
        if what in _warned:
            return
        _warned.add(what)
    first = str(err).splitlines()[0] if str(err) else type(err).__name__
    warnings.warn(f"{what} is left out of the kernel bundle: it does not compile ({first})",
                  RuntimeWarning, stacklevel=user_stacklevel())


def libraries_for(images: Iterable[device_image]) -> list[device_image]:
    """The library images that define what ``images`` import, transitively. Only
    those are compiled (the exporting module is found by symbol name), so a library
    nobody needs cannot fail the request."""
    exporters: dict[str, str] = {}
    for module_name, exts in sorted(_externals_by_module().items()):
        for ext in exts:
            exporters.setdefault(ext.name, module_name)
    chosen: list[device_image] = []
    todo = [sym for img in images for sym in img.imports]
    have = {sym for img in images for sym in img.exports}
    while todo:
        sym = todo.pop()
        if sym in have:
            continue
        module_name = exporters.get(sym)
        lib = library_image(module_name) if module_name is not None else None
        if lib is None or lib in chosen:
            have.add(sym)
            continue
        chosen.append(lib)
        have.update(lib.exports)
        todo.extend(lib.imports)
    return chosen


def input_images(kernel_ids: Iterable[kernel_id] | None = None,
                 module_name: str | None = None) -> list[device_image]:
    """Input images for ``kernel_ids`` plus the library images they need; by default
    every kernel and library defined so far (those that do not compile left out); with
    ``module_name``, that module's kernels and library only: a Python module is a
    translation unit, and linking its bundle alone must not find another module's
    definitions."""
    if kernel_ids is not None:
        images = [input_image(k) for k in kernel_ids]
        return images + [lib for lib in libraries_for(images) if lib not in images]
    kids = [get_kernel_id(k) for k in registered_kernels(module_name)]
    images = skipping_failures(kids, input_image, lambda k: f"kernel {k.get_name()}")
    if module_name is None:
        return images + all_library_images()
    own = skipping_failures([module_name], library_image, lambda m: f"library {m}")
    return images + [lib for lib in own if lib is not None]


def object_image(img: device_image) -> device_image:
    """Compile one input image (verify, optimise); memoised per input image.

    Failures are ``errc.build`` naming the image's kernel (or library module).
    """
    if img.state is bundle_state.object:
        return img
    if img.binary is not None:   # SPIR-V read from a file: compiled already
        return prebuilt_image(img, bundle_state.object)
    return memo_of(img).get_or_make("object", lambda: _new_object_image(img))


def _new_object_image(img: device_image) -> device_image:
    if img.is_warm:
        build_chain.hit("object", "warm index", _what(img))
        obj = device_image(bundle_state.object, None, img.get_kernel_ids(),
                           registry=img._warm_object_registry,
                           kernel_infos=img._kernel_infos,
                           translation_unit=img.translation_unit,
                           materialize=lambda: _compile_module(img))
        obj._source_image = img
        obj._warm_fingerprint = img._warm_fingerprint
        return obj
    module = _compile_module(img)
    obj = device_image(bundle_state.object, module, img.get_kernel_ids(),
                       registry=image_property_sets(module),
                       translation_unit=img.translation_unit)
    obj._source_image = img
    obj.untrusted = img.untrusted
    fp = getattr(img, "_warm_fingerprint", None)
    if fp is not None and not img.imports:
        obj._warm_fingerprint = fp
        if getattr(img, "_warm_kernel", None) is not None:
            warm_index.record_summary(img._warm_kernel, img, obj)
    return obj


def _what(img: device_image) -> str:
    return ", ".join(k.get_name() for k in img.get_kernel_ids()) or f"library {img.translation_unit}"


def _compile_module(img: device_image) -> Module:
    what = _what(img)
    stats.bump("compile_count")
    build_chain.hit("object", "built", what)
    try:
        module = build_chain.run("object", img.module, Job(what))
    except exception as e:
        if e.code() is errc.build:
            raise
        raise exception(errc.build, f"compiling {what} failed: {e}") from e
    except Exception as e:
        raise exception(errc.build, f"compiling {what} failed: {type(e).__name__}: {e}") from e
    return module


def object_image_from_module(module: Module, translation_unit: str | None = None) -> device_image:
    """An object image around IR read from a bundle file."""
    return device_image(bundle_state.object, module, kernel_ids_of(module),
                        translation_unit=translation_unit)
