"""A second Python module whose device functions kernels in the tests call."""
import numpy as np

from frontend_sycl import sycl
from pysycl.frontend import registry


@sycl.device
def scale(x: np.float32, k: np.float32) -> np.float32:
    return x * k


@sycl.external
def ext_twice(x: np.float32) -> np.float32:
    return scale(x, np.float32(2))


@sycl.external(name="ext_declared_elsewhere")
def ext_decl(x: np.int32) -> np.int32:
    """Defined in another bundle."""
    ...


registry.forget_module(__name__)  # test-only functions: not part of the application's bundle
