"""The SYCL 2020 conformance table (docs/conformance/sycl2020.json -> docs/conformance.md):
what it marks implemented exists, it covers every public name of pysycl, its test links
point at tests that use the member, and the page is generated from it."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

import pysycl as sycl

ROOT = Path(__file__).resolve().parents[2]


def _tool():
    spec = importlib.util.spec_from_file_location("conformance_tool",
                                                  ROOT / "tools" / "conformance.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


tool = _tool()
TABLE = tool.load()
ENTRIES = [e for _s, e in tool.entries(TABLE)]


def _info_target(kind: str):
    """A real object of each kind that answers ``get_info``."""
    if kind == "device":
        return sycl.device()
    if kind == "platform":
        return sycl.device().get_platform()
    if kind == "context":
        return sycl.context()
    if kind == "queue":
        return sycl.queue()
    if kind == "event":
        return sycl.queue().submit(lambda cgh: cgh.host_task(lambda: None))
    return None


def test_implemented_members_exist():
    tables, names = tool._kernel_tables(), tool._frontend_names()
    missing = [e["sycl"] for e in ENTRIES if e["status"] in ("implemented", "partial")
               and not tool.exists(e, tables, names)]
    assert not missing, f"marked implemented but not found: {missing}"
    # Info descriptors: asked of real objects, every one must answer.
    profiled = sycl.queue(enable_profiling=True).submit(lambda cgh: cgh.host_task(lambda: None))
    profiled.wait()
    for e in ENTRIES:
        path = e.get("python") or ""
        if e["status"] == "not implemented" or not path.startswith("info."):
            continue
        kind = path.split(".")[1]
        descriptor = tool.host_object(path)
        if kind == "event_profiling":
            assert isinstance(profiled.get_profiling_info(descriptor), int), path
            continue
        target = _info_target(kind)
        assert target is not None, f"{path}: no object answers it"
        if path == "info.device.parent_device":   # SYCL 2020 4.6.4.3: errc::invalid on a root device
            with pytest.raises(sycl.exception) as info:
                target.get_info(descriptor)
            assert info.value.code() == sycl.errc.invalid, str(info.value)
            continue
        target.get_info(descriptor)


def test_statuses_are_known_and_explained():
    for e in ENTRIES:
        assert e["status"] in tool.STATUSES, e
        if e["status"] != "implemented":
            assert e.get("reason"), f"{e['sycl']} is {e['status']} without a reason"
        else:
            assert e.get("test"), f"{e['sycl']} has no test"


def test_every_public_name_is_covered():
    covered = {(e["python"].partition(":")[2] if ":" in e["python"] else e["python"])
               .partition(".")[0] for e in ENTRIES if e.get("python")}
    only = TABLE["pysycl_only"]
    uncovered = sorted(set(sycl.__all__) - covered - set(only))
    assert not uncovered, ("public names missing from docs/conformance/sycl2020.json: "
                           f"{uncovered} (run python tools/conformance.py --update)")
    assert all(only.values()), "every pysycl-only name says what it is"


def test_test_links_use_their_member():
    functions = tool._test_functions()
    bad = [(e["sycl"], e["test"]) for e in ENTRIES
           if e.get("test") and not tool.test_uses(e["test"], e, functions)]
    assert not bad, f"test links that do not use their member: {bad}"


def test_page_is_generated_from_the_list():
    assert tool.DOC_PATH.read_text() == tool.render(TABLE), (
        "docs/conformance.md is stale: run python tools/conformance.py")


@pytest.mark.parametrize("name", ["queue.prefetch", "get_pointer_type", "property_list"])
def test_members_of_this_round_are_listed(name):
    assert any(e.get("python") == name and e["status"] != "not implemented" for e in ENTRIES)
