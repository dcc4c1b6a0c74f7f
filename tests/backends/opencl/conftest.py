import shutil

import pytest

from pysycl.backends.opencl.compiler import SpirvCompiler
from pysycl.backends.opencl.driver import OpenCLDriver


@pytest.fixture(scope="session")
def driver():
    return OpenCLDriver()


@pytest.fixture(scope="session")
def device(driver):
    devices = driver.discover()
    if not devices:
        pytest.skip("no OpenCL device that takes SPIR-V (install pyopencl, intel-opencl-rt "
                    "and intel-cmplr-lib-rt, or a GPU driver)")
    return devices[0]


@pytest.fixture(scope="session")
def compiler():
    return SpirvCompiler()


@pytest.fixture
def queue(driver, device):
    q = driver.create_stream(device, profiling=True)
    yield q
    q.finish()


@pytest.fixture
def build(compiler, driver, device):
    """LLVM IR -> validated SPIR-V -> built program."""
    def _build(ir, kernels, spec_constants=None, extensions=frozenset()):
        spv = compiler.compile(ir, kernels, extensions=extensions)
        if shutil.which("spirv-val"):
            compiler.validate(spv)
        return driver.load(device, spv, kernels, spec_constants)
    return _build
