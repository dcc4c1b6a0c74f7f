"""Implementation details that other layers share (``sycl.detail`` in the API).

>>> from pysycl.detail import get_unique_id, register_uniquely_identifiable_object
>>> from pysycl.detail import clear_caches   # tests: launchers, images, links made anew
"""
from .memo import clear_caches
from .unique_ids import (KINDS, DefinitionSite, capture_definition_site, check_stable,
                         get_unique_id, get_unique_id_kind, lookup_unique_id, make_unique_id,
                         register_uniquely_identifiable_object, registered_unique_ids,
                         unstable_reason)

__all__ = [
    "KINDS", "DefinitionSite", "capture_definition_site", "check_stable", "clear_caches",
    "get_unique_id", "get_unique_id_kind", "lookup_unique_id", "make_unique_id",
    "register_uniquely_identifiable_object", "registered_unique_ids", "unstable_reason",
]
