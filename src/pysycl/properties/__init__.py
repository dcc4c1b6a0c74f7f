"""Compile-time properties (sycl_ext_oneapi_properties): the vocabulary every layer shares.

``import pysycl as sycl`` re-exports these names (``sycl.properties``,
``sycl.work_group_size``, ``sycl.restrict``...). A pass asks a list for the properties
of its category and copies their ``meta_name``/``meta_value`` pairs into IR:

>>> from pysycl.properties import properties, work_group_size, restrict, to_meta
>>> to_meta(properties(work_group_size(8, 8)).of_category("kernel"))
{'sycl-work-group-size': '8,8'}
"""
from .aspects import aspect, to_aspect
from .base import (CATEGORIES, POINTER_ANNOTATION, annotation_string, as_properties,
                   from_meta, lookup_property, meta_string, properties, properties_for,
                   registered_properties, singleton_property, to_meta)
from .kernel import (device_has, max_linear_work_group_size, max_work_group_size,
                     sub_group_size, work_group_size, work_group_size_hint)
from .arguments import alignment, no_init, no_init_key, restrict, restrict_key
from .device_global import (device_image_scope, device_image_scope_key, host_access,
                            host_access_mode, host_access_none, host_access_read,
                            host_access_read_write, host_access_write, implement_in_csr,
                            implement_in_csr_off, implement_in_csr_on, init_mode,
                            init_mode_enum)
from .build import SPEC_CONSTANT_LOWERING_MODES, spec_constant_lowering
# sycl.property: the namespace of runtime properties (isinstance still tells any property)
from .runtime import property, property_list

__all__ = [
    "CATEGORIES", "POINTER_ANNOTATION", "SPEC_CONSTANT_LOWERING_MODES", "alignment",
    "annotation_string", "as_properties", "aspect", "device_has", "device_image_scope",
    "device_image_scope_key", "from_meta", "host_access", "host_access_mode",
    "host_access_none", "host_access_read", "host_access_read_write",
    "host_access_write", "implement_in_csr", "implement_in_csr_off",
    "implement_in_csr_on", "init_mode", "init_mode_enum", "lookup_property",
    "max_linear_work_group_size", "max_work_group_size", "meta_string", "no_init",
    "no_init_key", "properties", "properties_for", "property", "property_list",
    "registered_properties", "restrict", "restrict_key", "singleton_property",
    "spec_constant_lowering", "sub_group_size", "to_aspect", "to_meta", "work_group_size", "work_group_size_hint",
]
