"""Fixtures of the CUDA backend tests. PTX tests need only llvmlite; tests marked
``cuda`` need an NVIDIA GPU with its driver and cuda-bindings and skip otherwise."""
from __future__ import annotations

import pytest

from pysycl.backends.cuda.compiler import PtxCompiler, find_libdevice
from pysycl.backends.cuda.driver import CudaDriver
from pysycl.backends.cuda.target import cuda_target

_devices = None


def _discover():
    global _devices
    if _devices is None:
        _devices = CudaDriver().discover()
    return _devices


@pytest.fixture(scope="session")
def driver():
    if not _discover():
        pytest.skip("no CUDA GPU (cuda-bindings, libcuda and a GPU are needed)")
    return CudaDriver()


@pytest.fixture(scope="session")
def device(driver):
    return _discover()[0]


@pytest.fixture(scope="session")
def gpu_compiler(device):
    return PtxCompiler(device.target)


@pytest.fixture(scope="session")
def sm90_compiler():
    return PtxCompiler(cuda_target((9, 0)))


@pytest.fixture
def stream(driver, device):
    s = driver.create_stream(device, profiling=False)
    yield s
    driver.synchronize(s)
    driver.destroy_stream(s)


@pytest.fixture(scope="session")
def libdevice():
    path = find_libdevice()
    if path is None:
        pytest.skip("libdevice.10.bc not found")
    return path


@pytest.fixture
def build(driver, device, gpu_compiler):
    """compile + load: build(ir, names) -> CudaProgram."""
    programs = []

    def _build(ir, names):
        ptx = gpu_compiler.compile(ir, names)
        prog = driver.load(device, ptx, names)
        programs.append(prog)
        return prog
    yield _build
    for p in programs:
        driver.unload(p)
