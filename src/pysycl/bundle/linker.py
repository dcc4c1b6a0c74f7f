"""Object images -> linked kernels (the build chain's ``link`` stage).

Link merges object images through ``passes.link`` (a duplicate kernel or exported
symbol is an error naming it; an unresolved import is ``errc.build`` naming it), then
assigns spec-constant numeric IDs over the whole linked module, then cuts one module
per kernel (device code split per kernel), except that the kernels of one Python module
that share ``device_image_scope`` device_globals stay in one module (an
:class:`ImageGroup`: one executable image, so one copy of each such variable). A
``device_image_scope`` variable used by kernels of two Python modules would be in two
images: ``errc.build`` with DPC++'s message. Each linked kernel (or group) becomes one
executable image per code-generation target (``executables.py``). In memory, a
kernel's default link is kept on its kernel_id.

>>> [f.name for f in link_objects([])]
[]
"""
from __future__ import annotations

import threading
from typing import Iterable

from .. import config
from .._records import IdentityRecord
from ..detail.memo import LRUMemo, memo_of
from ..errors import errc, exception
from ..ir.core import Module
from ..passes.spec_constants import SpecConstantIds, spec_constants_used
from . import build_chain, stats, toolchain
from .build_chain import Job
from .device_globals import scope_group
from .device_image import device_image
from .kernel_id import kernel_id, kernel_id_by_name
from .sources import input_image, libraries_for, object_image

_lock = threading.Lock()   # guards _scope_owners


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
        members = scope_group(left, next(iter(left)))
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
