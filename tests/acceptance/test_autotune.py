"""sycl.autotune: choosing among specialization-constant configs (and work-group sizes)
by measuring them, launched wherever a kernel is, with the choice stored per device.

The configs here differ in how much work they do (a spec-constant loop count), so the
right choice is known without any timing threshold: a config that does thousands of
times the work of another is never the fastest.
"""
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import pysycl as sycl

work_id = sycl.specialization_id(np.int32, 1)
per_id = sycl.specialization_id(np.int32, 1)
scale_id = sycl.specialization_id(np.float32, 1.0)
unused_id = sycl.specialization_id(np.int32, 0)

HEAVY = 20000


@sycl.kernel
def busy_add(it: sycl.item[1], h: sycl.kernel_handler, x: sycl.global_ptr[np.float32],
             y: sycl.global_ptr[np.float32]):
    # y += x * (1 + 0.5 + ... + 0.5**(work-1)): the loop count is the config's cost.
    n = h.get_specialization_constant(work_id)
    i = it.get_id(0)
    v = x[i]
    acc = np.float32(0)
    for _ in range(n):
        acc = acc * np.float32(0.5) + v
    y[i] += acc


def busy_reference(x, y0, work):
    acc = np.zeros_like(x)
    for _ in range(min(work, 64)):   # converged to 2*x long before 64 steps in float32
        acc = acc * np.float32(0.5) + x
    return y0 + acc


@sycl.kernel
def accumulate(it: sycl.item[1], a: sycl.accessor[np.float32, 1, sycl.read_write],
               b: sycl.accessor[np.float32, 1, sycl.read_only]):
    a[it] += b[it]


@sycl.kernel
def scale_rows(it: sycl.item[1], h: sycl.kernel_handler, x: sycl.global_ptr[np.float32],
               n: np.int64):
    # Each work-item scales `per` consecutive elements in place.
    per = h.get_specialization_constant(per_id)
    s = h.get_specialization_constant(scale_id)
    first = it.get_id(0) * per
    for k in range(per):
        if first + k < n:
            x[first + k] *= s


@sycl.kernel
def halving_chain(h: sycl.kernel_handler, out: sycl.global_ptr[np.float32]):
    # A serial chain of float multiply-adds: strict floating point keeps every step.
    n = h.get_specialization_constant(work_id)
    v = out[0]
    acc = np.float32(0)
    for _ in range(n):
        acc = acc * np.float32(0.5) + v
    out[0] = acc


@pytest.fixture
def rng():
    return np.random.default_rng(2024)


def _usm(q, host):
    a = sycl.malloc_shared(host.shape, host.dtype, q)
    a[:] = host
    return a


def test_picks_the_config_with_less_work_and_keeps_data(queue, rng):
    tuned = sycl.autotune(busy_add, configs=[{work_id: HEAVY}, {work_id: 1},
                                             {work_id: HEAVY, "work_group": (64,)}],
                          key=["x"], reps=3)
    x0 = rng.random(4096, dtype=np.float32)
    y0 = rng.random(4096, dtype=np.float32)
    x, y = _usm(queue, x0), _usm(queue, y0)
    queue.parallel_for(4096, tuned, x, y).wait()
    # y += ... in place: measuring launched it 12 times, the result is one launch's.
    np.testing.assert_allclose(y.to_numpy(), busy_reference(x0, y0, 1), rtol=1e-6)
    np.testing.assert_array_equal(x.to_numpy(), x0)
    assert tuned.stats["tunings"] == 1 and tuned.stats["measured_launches"] == 12
    (where, _key), chosen = next(iter(tuned.cache.items()))
    assert chosen == {work_id: 1} and where.endswith(queue.get_device().name)
    times = next(iter(tuned.timings.values()))
    assert [c for c, _ in times] == [{work_id: HEAVY}, {work_id: 1},
                                     {work_id: HEAVY, "work_group": (64,)}]
    # Later launches for the same key reuse the choice; another size is another key.
    queue.parallel_for(4096, tuned, x, y).wait()
    np.testing.assert_allclose(y.to_numpy(), busy_reference(x0, y0 + x0, 1), rtol=1e-6)
    assert tuned.stats["tunings"] == 1
    assert tuned.best_config(queue, 4096, x, y) == {work_id: 1}
    assert tuned.stats["tunings"] == 1
    small = _usm(queue, x0[:1024])
    assert tuned.best_config(queue, 1024, small, y) == {work_id: 1}
    assert tuned.stats["tunings"] == 2


def test_handler_form_with_accessors_updated_in_place(queue, rng):
    tuned = sycl.autotune(accumulate, configs=[{"work_group": (8,)}, {"work_group": (32,)},
                                               {"work_group": 64}], reps=2)
    a0 = rng.standard_normal(512).astype(np.float32)
    b0 = rng.standard_normal(512).astype(np.float32)
    a_host = a0.copy()
    with sycl.buffer(a_host) as a, sycl.buffer(b0) as b:
        for _ in range(2):
            queue.submit(lambda cgh: cgh.parallel_for(
                512, tuned, sycl.accessor(a, cgh, sycl.read_write),
                sycl.accessor(b, cgh, sycl.read_only)))
    np.testing.assert_allclose(a_host, a0 + 2 * b0, rtol=1e-6)
    assert tuned.stats["tunings"] == 1
    assert next(iter(tuned.cache.values()))["work_group"] in ((8,), (32,), 64)


def test_handler_form_with_a_kernel_bundle(queue, rng):
    # Work-group sizes only: the bound bundle's kernel is measured and launched.
    exe = sycl.get_kernel_bundle(queue.get_context(), sycl.bundle_state.executable,
                                 kernel=accumulate)
    tuned = sycl.autotune(accumulate, configs=[{"work_group": (16,)}, {"work_group": (64,)}],
                          reps=1)
    a0 = rng.standard_normal(128).astype(np.float32)
    b0 = rng.standard_normal(128).astype(np.float32)
    a_host = a0.copy()
    with sycl.buffer(a_host) as a, sycl.buffer(b0) as b:
        queue.submit(lambda cgh: (cgh.use_kernel_bundle(exe), cgh.parallel_for(
            128, tuned, sycl.accessor(a, cgh, sycl.read_write),
            sycl.accessor(b, cgh, sycl.read_only))))
    np.testing.assert_allclose(a_host, a0 + b0, rtol=1e-6)
    # Configs that set constants cannot run from a bound bundle.
    spec_tuned = sycl.autotune(busy_add, configs=[{work_id: 1}, {work_id: 2}])
    x = _usm(queue, np.ones(16, np.float32))
    exe2 = sycl.get_kernel_bundle(queue.get_context(), sycl.bundle_state.executable,
                                  kernel=busy_add)
    with pytest.raises(sycl.exception, match="cannot run from a kernel bundle") as info:
        queue.submit(lambda cgh: (cgh.use_kernel_bundle(exe2),
                                  cgh.parallel_for(16, spec_tuned, x, x)))
    assert info.value.code() == sycl.errc.invalid


def test_range_per_config_and_host_arrays(queue, rng):
    # Outputs per work-item change the range: it is given per config, as Triton's grid.
    tuned = sycl.autotune(scale_rows, configs=[{per_id: 1}, {per_id: 4}, {per_id: 16}],
                          key=["n"], reps=2)
    n = 1000
    x0 = rng.standard_normal(n).astype(np.float32)
    x = x0.copy()     # host memory: copied in and out around each launch
    queue.submit(lambda cgh: (cgh.set_specialization_constant(scale_id, 3.0),
                              cgh.parallel_for(lambda cfg: (n + cfg[per_id] - 1) // cfg[per_id],
                                               tuned, x, np.int64(n)))).wait()
    np.testing.assert_allclose(x, 3 * x0, rtol=1e-6)
    # The group's other constants are part of the key: another scale is chosen anew.
    queue.submit(lambda cgh: (cgh.set_specialization_constant(scale_id, 0.5),
                              cgh.parallel_for(lambda cfg: (n + cfg[per_id] - 1) // cfg[per_id],
                                               tuned, x, np.int64(n)))).wait()
    np.testing.assert_allclose(x, 1.5 * x0, rtol=1e-6)
    assert tuned.stats["tunings"] == 2


def test_single_task(queue):
    tuned = sycl.autotune(halving_chain, configs=[{work_id: 3_000_000}, {work_id: 10}],
                          reps=2)
    out = _usm(queue, np.array([5], np.float32))
    queue.single_task(tuned, out).wait()     # out is updated in place: restored
    np.testing.assert_allclose(out.to_numpy(), busy_reference(np.float32([5]), 0, 10),
                               rtol=1e-6)
    assert tuned.best_config(queue, None, out) == {work_id: 10}


def test_failing_configs_are_skipped_with_a_warning(queue, rng):
    tuned = sycl.autotune(busy_add, configs=[{work_id: 1, "work_group": (48,)},
                                             {work_id: 2, "work_group": (64,)}], reps=1)
    x0 = rng.random(256, dtype=np.float32)
    x, y = _usm(queue, x0), _usm(queue, np.zeros(256, np.float32))
    with pytest.warns(RuntimeWarning, match=r"config 0 \{work_id=1, work_group=\(48,\)\} "
                      r"skipped: .*not a multiple"):
        queue.parallel_for(256, tuned, x, y).wait()
    assert tuned.best_config(queue, 256, x, y) == {work_id: 2, "work_group": (64,)}
    np.testing.assert_allclose(y.to_numpy(), busy_reference(x0, 0, 2), rtol=1e-6)


def test_every_config_failing_is_an_exception(queue, rng):
    too_big = queue.get_device().max_work_group_size * 2
    tuned = sycl.autotune(busy_add, configs=[{work_id: 1, "work_group": (too_big,)},
                                             {work_id: 2, "work_group": (3,)}], reps=1)
    x = _usm(queue, rng.random(too_big, dtype=np.float32))
    with pytest.warns(RuntimeWarning), pytest.raises(sycl.exception) as info:
        queue.parallel_for(too_big, tuned, x, x)
    assert info.value.code() == sycl.errc.nd_range
    text = str(info.value)
    assert "no config could run" in text and "busy_add" in text
    assert f"work_group=({too_big},)" in text and "work_group=(3,)" in text


@pytest.mark.parametrize("configs, message", [
    ([], "no configs"),
    ({work_id: 1}, "configs is a list of dicts"),
    ([{work_id: 1}, {"unroll": 4}], r"config 1 .*unknown key 'unroll'"),
    ([{"work_id": 4}], r"config 0 .*unknown key 'work_id'"),
    ([{work_id: "four"}], r"config 0 .*value 'four' for .*work_id \(int32\)"),
    ([{work_id: 1}, {work_id: 2.5}], r"config 1 .*work_id is int32, not 2.5"),
    ([{work_id: None}], r"config 0 .*work_id has no value"),
    ([{work_id: 2**40}], r"config 0 .*out of bounds"),
    ([{7: 1}], r"config 0 .*key 7 is not a sycl.specialization_id"),
    ([{"work_group": (8, 8)}], r"config 0 .*work_group \(8, 8\) has 2 dimension"),
    ([{"work_group": (0,)}], r"config 0 .*work_group \(0,\) must be positive"),
    ([{"work_group": "big"}], r"config 0 .*work_group 'big'"),
])
def test_bad_configs_are_refused(configs, message):
    with pytest.raises(sycl.exception, match=message) as info:
        sycl.autotune(busy_add, configs=configs)
    assert info.value.code() == sycl.errc.invalid


def test_bad_key_restore_and_kernel_are_refused():
    with pytest.raises(sycl.exception, match=r"key names 'z', which is not one of its "
                       r"arguments \(x, y\)"):
        sycl.autotune(busy_add, configs=[{work_id: 1}], key=["z"])
    with pytest.raises(sycl.exception, match=r"restore names 3"):
        sycl.autotune(busy_add, configs=[{work_id: 1}], restore=[3])
    with pytest.raises(TypeError, match="tunes a @sycl.kernel function"):
        sycl.autotune(lambda: None, configs=[{work_id: 1}])


def test_a_constant_the_kernel_does_not_read_is_refused(queue):
    tuned = sycl.autotune(busy_add, configs=[{work_id: 1}, {work_id: 2, unused_id: 3}])
    x = _usm(queue, np.ones(16, np.float32))
    with pytest.raises(sycl.exception, match=r"config 1 of kernel .*busy_add: the kernel "
                       r"does not read specialization constant .*unused_id") as info:
        queue.parallel_for(16, tuned, x, x)
    assert info.value.code() == sycl.errc.invalid
    np.testing.assert_array_equal(x.to_numpy(), np.ones(16, np.float32))


def test_a_tuned_constant_set_in_the_group_is_refused(queue):
    tuned = sycl.autotune(busy_add, configs=[{work_id: 1}, {work_id: 2}])
    x = _usm(queue, np.ones(16, np.float32))
    with pytest.raises(sycl.exception, match=r"chooses .*work_id; do not set it"):
        queue.submit(lambda cgh: (cgh.set_specialization_constant(work_id, 3),
                                  cgh.parallel_for(16, tuned, x, x)))


# The stored choice, in other processes ----------------------------------------------------
SCRIPT = '''
import json, sys
import numpy as np
import pysycl as sycl

work_id = sycl.specialization_id(np.int32, 1, name="work_id")

@sycl.autotune(configs=[{work_id: 20000}, {work_id: 1}, {work_id: 30000}], key=["x"], reps=2)
@sycl.kernel
def busy(it: sycl.item[1], h: sycl.kernel_handler, x: sycl.global_ptr[np.float32],
         y: sycl.global_ptr[np.float32]):
    n = h.get_specialization_constant(work_id)
    i = it.get_id(0)
    acc = np.float32(0)
    for _ in range(n):
        acc = acc * np.float32(0.5) + x[i]
    y[i] = acc

q = sycl.queue(sycl.device.get_devices()[0])
x = sycl.malloc_shared(2048, np.float32, q)
x[:] = np.arange(2048, dtype=np.float32)
y = sycl.malloc_shared(2048, np.float32, q)
q.parallel_for(2048, busy, x, y).wait()
work = int(busy.best_config(q, 2048, x, y)[work_id])
if work == 1:
    assert np.array_equal(y.to_numpy(), x.to_numpy())
print(json.dumps({"work": work, **busy.stats}))
'''


def _run(script: Path, cache: Path, **env) -> dict:
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=600, env={**os.environ, "PYSYCL_CACHE_DIR": str(cache),
                                            "PYSYCL_DEVICE_SELECTOR": "native_cpu", **env})
    assert proc.returncode == 0, proc.stderr
    return {**json.loads(proc.stdout.strip().splitlines()[-1]), "stderr": proc.stderr}


def test_choice_is_stored_and_reused_by_another_process(tmp_path):
    script = tmp_path / "tuned_program.py"
    script.write_text(textwrap.dedent(SCRIPT))
    cache = tmp_path / "cache"
    first = _run(script, cache)
    assert first["work"] == 1 and first["tunings"] == 1 and first["measured_launches"] == 9
    second = _run(script, cache)
    assert second["work"] == 1 and second["measured_launches"] == 0
    assert second["stored_choices_used"] == 1
    # PYSYCL_AUTOTUNE=0: the first config, nothing measured, nothing read.
    off = _run(script, cache, PYSYCL_AUTOTUNE="0")
    assert off["work"] == 20000 and off["measured_launches"] == 0
    assert off["stored_choices_used"] == 0
    # retune: measured again, and the stored choice replaced.
    again = _run(script, cache, PYSYCL_AUTOTUNE="retune")
    assert again["work"] == 1 and again["measured_launches"] == 9


def test_a_tampered_choice_is_ignored(tmp_path):
    from pysycl.bundle import cache as cache_mod

    script = tmp_path / "tuned_program.py"
    script.write_text(textwrap.dedent(SCRIPT))
    cache = tmp_path / "cache"
    assert _run(script, cache)["work"] == 1
    (entry,) = cache.glob("v1/*/*.tune")
    raw = entry.read_bytes()
    (hlen,) = np.frombuffer(raw[8:12], "<u4")
    header = json.loads(raw[12:12 + hlen])
    payload = json.loads(raw[12 + hlen:])
    assert payload["config"] == 1
    # Point it at the slowest config, with a consistent checksum and an HMAC under
    # another secret: what someone without this user's secret could write.
    payload.update(config=2, text=payload["text"].replace("01000000", "30750000"))
    key = cache_mod.CacheKey.from_part_digests(header["parts"])
    key.hexdigest = header["key"]   # (the header's parts are sorted, the digest is not)
    entry.write_bytes(cache_mod._encode_entry(key, json.dumps(payload).encode(), b"x" * 32))
    tampered = _run(script, cache)
    assert tampered["work"] == 1 and tampered["measured_launches"] == 9
    assert "HMAC mismatch" in tampered["stderr"]
