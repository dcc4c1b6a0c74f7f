"""Symbolic IDs are the same in every process that runs the same program: a bundle saved
by one process takes ``set_specialization_constant`` and device_global copies in another,
for spec constants and device globals made inside functions or held in tuples, whatever
else either process made first. Where no such ID exists (several objects made at one
place), saving and loading are ``errc.invalid`` naming the object.

Each process is a subprocess running the module below, as two runs of a program would."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

MODULE = """
    import os
    import numpy as np
    import pysycl as sycl

    def make_spec(default):
        return sycl.specialization_id(np.int32, default)

    def make_global():
        return sycl.device_global(np.int32)

    if os.environ.get("MAKE_OTHERS_FIRST"):   # objects made elsewhere before ours
        OTHERS = (sycl.specialization_id(np.int32, 1), sycl.device_global(np.int64))
        [o.unique_id for o in OTHERS]
    if os.environ.get("MAKE_TWICE"):          # a second object at make_spec's place
        EXTRA = (make_spec(2),)
    PARAMS = (make_spec(5),)
    GLOBALS = (make_global(),)
    NAMED = (sycl.specialization_id(np.int32, 9, name="tuning.offset"),)

    @sycl.kernel
    def accumulate(h: sycl.kernel_handler, out: sycl.global_ptr[np.int32]):
        total = GLOBALS[0]
        total.set(total.get() + h.get_specialization_constant(PARAMS[0])
                  + h.get_specialization_constant(NAMED[0]))
        out[0] = total.get()
"""

SCRIPT = """
    import sys
    import numpy as np
    import pysycl as sycl
    import ids_mod as m

    action, backend, index, path = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    dev = [d for d in sycl.device.get_devices() if d.backend.name == backend][index]
    q = sycl.queue(dev)
    try:
        if action == "save":
            kb = sycl.get_kernel_bundle(q.get_context(), sycl.bundle_state.input,
                                        kernel=m.accumulate)
            sycl.save_kernel_bundle(kb, path)
            print(m.PARAMS[0].unique_id)
        else:
            value, offset, start = (int(v) for v in sys.argv[5:8])
            inp = sycl.load_kernel_bundle(q.get_context(), path)
            inp.set_specialization_constant(m.PARAMS[0], value)
            inp.set_specialization_constant(m.NAMED[0], offset)
            exe = sycl.build(inp)
            q.copy(np.array([start], np.int32), m.GLOBALS[0]).wait()
            out = sycl.malloc_shared(1, np.int32, q)
            def cgf(cgh):
                cgh.use_kernel_bundle(exe)
                cgh.single_task(m.accumulate, out)
            q.submit(cgf).wait()
            back = np.zeros(1, np.int32)
            q.copy(m.GLOBALS[0], back).wait()
            print(int(out[0]), int(back[0]))
    except sycl.exception as e:
        print(f"ERROR {e.code().name}: {e}")
"""


def _run(tmp_path, device_param, *args, **env):
    for name, text in (("ids_mod.py", MODULE), ("ids_script.py", SCRIPT)):
        (tmp_path / name).write_text(textwrap.dedent(text))
    full_env = dict(os.environ, PYSYCL_CACHE="0", **env)
    done = subprocess.run([sys.executable, str(tmp_path / "ids_script.py"), args[0],
                           device_param.backend, str(device_param.index), *map(str, args[1:])],
                          cwd=tmp_path, capture_output=True, text=True, env=full_env,
                          timeout=300)
    assert done.returncode == 0, done.stderr      # a crash is a failure
    return done.stdout.strip()


@pytest.fixture
def values():
    rng = np.random.default_rng()
    return [int(v) for v in rng.integers(10, 10 ** 6, 3)]


def test_saved_in_one_process_set_in_another(tmp_path, device_param, values):
    path = tmp_path / "b.syclbin"
    uid = _run(tmp_path, device_param, "save", path)
    assert uid == "ids_mod.make_spec@" + uid.partition("@")[2] and "#" not in uid
    value, offset, start = values
    got = _run(tmp_path, device_param, "load", path, value, offset, start, MAKE_OTHERS_FIRST="1")
    assert got == f"{start + value + offset} {start + value + offset}"


def test_no_stable_id_refuses_save_and_load(tmp_path, device_param, values):
    path = tmp_path / "b.syclbin"
    refused = _run(tmp_path, device_param, "save", path, MAKE_TWICE="1")
    assert refused.startswith("ERROR invalid: cannot save a kernel bundle")
    assert "ids_mod.make_spec@" in refused and "name=" in refused
    assert not path.exists()
    _run(tmp_path, device_param, "save", path)
    refused = _run(tmp_path, device_param, "load", path, *values, MAKE_TWICE="1")
    assert refused.startswith("ERROR invalid: cannot load a kernel bundle")
    assert "2 objects were made at that place" in refused
