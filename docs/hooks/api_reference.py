"""MkDocs hook: the API reference page is made when the site is built, one
mkdocstrings entry for every name of ``pysycl.__all__`` (so a new public name appears
without editing the page), under the object that defines it, grouped as below; a name
no group lists goes under "More names".

The page ``docs/reference/api.md`` holds the introduction and the line
``<!-- pysycl-api -->``, which this hook replaces.
"""
from __future__ import annotations

import importlib
import inspect
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MARKER = "<!-- pysycl-api -->"

GROUPS = (
    ("Kernels and the kernel language", (
        "kernel", "device", "external", "struct", "vec", "global_ptr", "annotated_ptr",
        "kernel_handler", "id", "range", "nd_range", "item", "nd_item", "group", "sub_group",
        "private_array", "static_range", "atomic_ref", "atomic_fence", "memory_order",
        "memory_scope",
        "group_barrier", "reduce_over_group", "plus", "minimum", "maximum", "math")),
    ("Platforms, devices, queues and events", (
        "platform", "context", "queue", "handler", "event", "info", "backend", "aspect",
        "default_selector_v", "cpu_selector_v", "gpu_selector_v", "accelerator_selector_v",
        "aspect_selector", "device_for_rank", "node_local_rank")),
    ("Memory", (
        "usm_array", "malloc_device", "malloc_shared", "malloc_host", "malloc", "free",
        "aligned_alloc", "aligned_alloc_device", "aligned_alloc_shared",
        "aligned_alloc_host", "usm", "usm_allocator", "get_pointer_type",
        "get_pointer_device", "buffer", "accessor", "host_accessor", "local_accessor",
        "access", "access_mode", "read_only", "write_only", "read_write", "no_init")),
    ("Specialization constants and device globals", (
        "specialization_id", "spec_constant", "spec_constant_lowering", "autotune",
        "device_global",
        "device_image_scope", "host_access", "host_access_mode", "init_mode",
        "init_mode_enum", "implement_in_csr")),
    ("Kernel bundles", (
        "bundle_state", "kernel_bundle", "device_image", "kernel_id", "get_kernel_id",
        "get_kernel_ids", "get_kernel_bundle", "has_kernel_bundle", "is_compatible",
        "compile", "link", "build", "join", "this_module", "save_kernel_bundle",
        "load_kernel_bundle")),
    ("Properties", (
        "properties", "property", "property_list", "work_group_size", "work_group_size_hint",
        "sub_group_size", "device_has", "max_work_group_size", "max_linear_work_group_size",
        "restrict", "alignment")),
    ("Errors", ("exception", "errc", "compile_error")),
    ("Other modules", ("compat", "detail")),
)

# Names whose object is not what documents them (the two-role facade classes).
TWO_ROLES = {"kernel": ("pysycl.frontend.decorators.kernel", "pysycl.bundle.kernel_bundle.kernel_object"),
             "device": ("pysycl.frontend.decorators.device", "pysycl.runtime.device.device")}


def where(name: str) -> tuple[str, ...]:
    """Dotted paths documenting ``sycl.<name>``."""
    if name in TWO_ROLES:
        return TWO_ROLES[name]
    import pysycl
    obj = getattr(pysycl, name)
    if inspect.ismodule(obj):
        return (obj.__name__,)
    for candidate in pysycl._LAZY.get(name, ()):
        module, _, attr = candidate.partition(":")
        try:
            found = importlib.import_module(module)
        except ModuleNotFoundError:
            continue
        if getattr(found, attr, None) is obj:
            return (f"{module}.{attr}",)
    module = getattr(obj, "__module__", None)
    if module and getattr(importlib.import_module(module), name, None) is obj:
        return (f"{module}.{name}",)
    for modname in ("pysycl.types", "pysycl.properties", "pysycl.errors"):
        if getattr(importlib.import_module(modname), name, None) is obj:
            return (f"{modname}.{name}",)
    return ()          # an object without a definition to point at: its repr is shown


def render() -> str:
    """The entries of every public name, as Markdown with mkdocstrings directives."""
    import pysycl
    groups = [(title, [n for n in names if n in pysycl.__all__]) for title, names in GROUPS]
    listed = {n for _, names in groups for n in names}
    more = sorted(set(pysycl.__all__) - listed)
    if more:
        groups.append(("More names", more))
    out = []
    for title, names in groups:
        out += [f"## {title}", ""]
        for name in names:
            out += [f"### `sycl.{name}`", ""]
            paths = where(name)
            for path in paths:
                out += [f"::: {path}", "    options:", "      show_root_heading: false",
                        "      heading_level: 4", ""]
            if not paths:
                out += [f"`{getattr(pysycl, name)!r}`", ""]
    return "\n".join(out)


def on_config(config):
    # The pysycl of this checkout, whatever else is installed.
    src = str(ROOT / "src")
    if src not in sys.path:
        sys.path.insert(0, src)
    return config


def on_page_markdown(markdown, page, config, files):
    if MARKER not in markdown:
        return markdown
    return markdown.replace(MARKER, render())
