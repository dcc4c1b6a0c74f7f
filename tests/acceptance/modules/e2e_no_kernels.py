"""A module that defines no kernel and no external function."""
import pysycl as sycl


def module_flags(ctx):
    return sycl.this_module.has_any_module(ctx)
