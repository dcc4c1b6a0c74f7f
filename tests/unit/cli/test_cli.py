"""``pysycl compile`` / ``inspect`` / ``cache`` as a user runs them (subprocesses)."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

MODS = Path(__file__).resolve().parents[2] / "acceptance" / "bundle_modules"
LIB, USE = str(MODS / "lib_ext.py"), str(MODS / "use_ext.py")


def pysycl(*args, env=None, check=True):
    out = subprocess.run([sys.executable, "-m", "pysycl", *args], capture_output=True,
                         text=True, env=env, timeout=300)
    if check and out.returncode != 0:
        raise AssertionError(out.stderr)
    return out


@pytest.fixture
def env(tmp_path):
    return dict(os.environ, PYSYCL_CACHE_DIR=str(tmp_path / "cache"),
                PYSYCL_DEVICE_SELECTOR="native_cpu")


# Runs in a fresh process that never imports lib_ext/use_ext: the kernel comes from the
# file only, so nothing can be compiled from Python source.
RUNNER = textwrap.dedent("""
    import sys, numpy as np
    import pysycl as sycl
    from pysycl.bundle import stats
    q = sycl.queue()
    ctx = q.get_context()
    bundles = [sycl.load_kernel_bundle(ctx, p) for p in sys.argv[1:]]
    exe = bundles[0] if bundles[0].state == sycl.bundle_state.executable else sycl.link(bundles)
    k = exe.get_kernel(exe.get_kernel_ids()[0])
    out = sycl.malloc_shared(4, np.int32, q)
    def cgf(cgh):
        cgh.use_kernel_bundle(exe)
        cgh.parallel_for(sycl.range(4), k, out)
    q.submit(cgf).wait()
    print(np.asarray(out).tolist(), stats.codegen_count)
""")


def run_files(tmp_path, env, *files) -> str:
    script = tmp_path / "runner.py"
    script.write_text(RUNNER)
    out = subprocess.run([sys.executable, str(script), *map(str, files)], capture_output=True,
                         text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_compile_then_run_in_other_process_without_codegen(tmp_path, env):
    f = tmp_path / "app.syclbin"
    out = pysycl("compile", LIB, USE, "--target", "native_cpu", "-o", str(f), env=env)
    assert "use_ext.apply" in out.stdout and f.stat().st_size > 0
    # scale_id keeps its default (1): the AOT image reads it from the emulated buffer.
    env0 = dict(env, PYSYCL_CACHE="0")
    assert run_files(tmp_path, env0, f) == "[0, 3, 6, 9] 0"


def test_object_files_compiled_separately_then_linked(tmp_path, env):
    lib, use = tmp_path / "lib.syclbin", tmp_path / "use.syclbin"
    pysycl("compile", LIB, "--state", "object", "-o", str(lib), env=env)
    pysycl("compile", USE, "--state", "object", "-o", str(use), env=env)
    text = pysycl("inspect", str(use), env=env).stdout
    assert "state object" in text and "imported symbols: triple" in text
    assert "exported symbols: triple" in pysycl("inspect", str(lib), env=env).stdout
    out, codegen = run_files(tmp_path, env, use, lib).rsplit(" ", 1)
    assert out == "[0, 3, 6, 9]" and int(codegen) == 1
    # The kernel's object file alone cannot link: the symbol is named.
    script = tmp_path / "alone.py"
    script.write_text(textwrap.dedent(f"""
        import pysycl as sycl
        ctx = sycl.queue().get_context()
        try:
            sycl.link(sycl.load_kernel_bundle(ctx, {str(use)!r}))
        except sycl.exception as e:
            print(e.code().name, "triple" in str(e))
    """))
    res = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env)
    assert res.stdout.strip() == "build True", res.stderr


def test_inspect_prints_images_symbols_and_property_sets(tmp_path, env):
    f = tmp_path / "app.syclbin"
    pysycl("compile", LIB, USE, "-o", str(f), env=env)
    text = pysycl("inspect", str(f), env=env).stdout
    assert "state executable" in text
    assert "target native_cpu, format object, spec constants emulated" in text
    assert "kernels: use_ext.apply" in text
    assert "native image:" in text and "pysycl IR:" in text
    # DPC++ PropertySetIO text: [set] then key=type|value.
    assert "    [SYCL/kernel names]\n    use_ext.apply=1|1\n" in text
    assert "[SYCL/specialization constants]\n    use_ext.scale_id=2|" in text
    assert "[SYCL/specialization constants default values]\n    all=2|" in text


@pytest.mark.parametrize("target,fmt", [("spirv64", "spirv"), ("nvptx64-sm_90", "ptx")])
def test_compile_for_device_targets_without_a_device(tmp_path, env, target, fmt):
    f = tmp_path / "dev.syclbin"
    pysycl("compile", LIB, USE, "--target", f"native_cpu,{target}", "-o", str(f), env=env)
    text = pysycl("inspect", str(f), env=env).stdout
    assert "2 images" in text and f"target {target}, format {fmt}" in text


def test_errors_exit_1_with_a_message(tmp_path, env):
    bad = tmp_path / "bad.syclbin"
    bad.write_bytes(b"\x10\xff\x10\xad" + bytes(20))
    for args in (("inspect", str(bad)), ("inspect", str(tmp_path / "missing")),
                 ("compile", USE, "--target", "vax", "-o", str(tmp_path / "x"))):
        out = pysycl(*args, env=env, check=False)
        assert out.returncode == 1 and "error:" in out.stderr and "Traceback" not in out.stderr


def test_cache_info_and_clear(tmp_path, env):
    info = pysycl("cache", "info", env=env).stdout
    assert "entries: 0" in info and str(tmp_path / "cache") in info
    pysycl("compile", LIB, USE, "-o", str(tmp_path / "a.syclbin"), env=env)
    assert "entries: 1" in pysycl("cache", "info", env=env).stdout
    assert "1 entries removed" in pysycl("cache", "clear", env=env).stdout
    assert "entries: 0" in pysycl("cache", "info", env=env).stdout
    # PYSYCL_CACHE=0: a build writes nothing.
    pysycl("compile", LIB, USE, "-o", str(tmp_path / "b.syclbin"), env=dict(env, PYSYCL_CACHE="0"))
    assert "entries: 0" in pysycl("cache", "info", env=env).stdout


def test_ls_verbose_says_why_a_backend_has_no_devices(capsys):
    from pysycl.backends import registry
    from pysycl.cli.main import main as cli_main
    assert cli_main(["ls", "-v"]) == 0
    out = capsys.readouterr().out
    absent = [name for name in registry.BACKENDS if name not in registry.available_backends()]
    for name in absent:
        line = next(l for l in out.splitlines() if l.startswith(f"[{name}] no devices: "))
        assert len(line) > len(f"[{name}] no devices: ") + 10, line
    assert "[native_cpu:" in out


def test_compile_of_a_missing_file_or_module_is_one_line(capsys, tmp_path):
    from pysycl.cli.main import main as cli_main
    for source in (str(tmp_path / "missing.py"), "no_such_module_here"):
        assert cli_main(["compile", source, "-o", str(tmp_path / "x.syclbin")]) == 1
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and "no such file" in err and source in err


@pytest.mark.parametrize("text", ["native_cpu", "native_cpu:0", "native_cpu:cpu", "*"])
def test_demo_device_takes_selector_filter_forms(capsys, text):
    from pysycl.cli.main import main as cli_main
    assert cli_main(["demo", "--size", "64", "--device", text]) == 0
    out = capsys.readouterr().out
    assert "[native_cpu]" in out and "kernel, median of 5" in out and "end to end" in out
    assert "result matches NumPy" in out


@pytest.mark.opencl
def test_demo_device_opencl_index(capsys):
    import pysycl as sycl
    from pysycl.cli.main import main as cli_main
    if not any(d.backend.name == "opencl" for d in sycl.device.get_devices()):
        pytest.skip("no OpenCL device")
    assert cli_main(["demo", "--size", "64", "--device", "opencl:0"]) == 0
    assert "[opencl]" in capsys.readouterr().out


def test_compile_input_state_for_a_generic_cpu(tmp_path, env):
    f = tmp_path / "in.syclbin"
    pysycl("compile", LIB, USE, "--state", "input", "-o", str(f), env=env)
    assert "state input" in pysycl("inspect", str(f), env=env).stdout
    g = tmp_path / "v2.syclbin"
    pysycl("compile", LIB, USE, "--cpu", "x86-64-v2", "-o", str(g), env=env)
    text = pysycl("inspect", str(g), env=env).stdout
    assert "target native_cpu-x86-64-v2, format object" in text and "cpu_features=2|" in text
    # runs here like a file built for this CPU (x86-64-v2 is a subset of its features)
    assert run_files(tmp_path, dict(env, PYSYCL_CACHE="0"), g) == "[0, 3, 6, 9] 0"


def test_compile_says_it_imports_and_shows_progress_only_on_a_terminal(tmp_path, env):
    out_file = tmp_path / "both.syclbin"
    out = pysycl("compile", LIB, USE, "-o", str(out_file), env=env)
    assert "importing" in out.stderr and "top-level code runs" in out.stderr
    assert "building" not in out.stderr            # stderr is a pipe here: no progress line
    assert out_file.exists()


def test_compile_modules_reports_each_image(tmp_path):
    import importlib.util

    from pysycl.bundle import aot
    spec = importlib.util.spec_from_file_location("use_ext_progress", USE)
    seen = []
    sys.path.insert(0, str(MODS))
    try:
        import lib_ext  # noqa: F401 - the external function's definition
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        kb = aot.compile_modules([lib_ext, module], ["native_cpu"],
                                 progress=lambda done, total, what: seen.append((done, total, what)))
    finally:
        sys.path.remove(str(MODS))
    images = len(list(kb))
    assert seen[-1] == (images, images, "")
    assert [d for d, _, _ in seen] == list(range(images + 1))
    assert all("for native_cpu" in what for _, _, what in seen[:-1])
