"""The ``pysycl`` command: ``ls``, ``demo``, ``compile``, ``inspect``, ``cache``."""
from __future__ import annotations

import argparse
import sys
from importlib.metadata import PackageNotFoundError, version

from . import commands


def _version() -> str:
    # The installed distribution's version, without importing the runtime.
    try:
        return version("pysycl")
    except PackageNotFoundError:
        return "unknown (not installed)"


def build_parser() -> argparse.ArgumentParser:
    """The ``pysycl`` argument parser: one sub-command per ``commands.cmd_<name>``."""
    p = argparse.ArgumentParser(prog="pysycl", description="SYCL 2020 kernels from Python")
    p.add_argument("--version", action="version", version=f"pysycl {_version()}")
    sub = p.add_subparsers(dest="command", required=True)

    sub.add_parser("ls", help="list devices (like sycl-ls)").add_argument(
        "--verbose", "-v", action="store_true")

    demo = sub.add_parser("demo", help="3x3 convolution with specialization constants")
    demo.add_argument("--size", type=int, default=2048, help="image side (default 2048)")
    demo.add_argument("--device", default=None, help="a PYSYCL_DEVICE_SELECTOR string")

    comp = sub.add_parser("compile", help="compile Python modules into a kernel bundle file "
                          "(each module is imported: its top-level code runs)")
    comp.add_argument("sources", nargs="+", help="FILE.py or module name (imported)")
    comp.add_argument("--target", default="native_cpu",
                      help="comma list: native_cpu, spirv64, nvptx64-sm_90")
    comp.add_argument("--state", choices=("input", "object", "executable"), default="executable")
    comp.add_argument("--cpu", default=None,
                      help="build native_cpu for a generic CPU level (x86-64-v2, x86-64-v3, "
                           "x86-64-v4) instead of this machine's CPU")
    comp.add_argument("-o", "--output", required=True)

    sub.add_parser("inspect", help="show a bundle file").add_argument("file")

    cache = sub.add_parser("cache", help="inspect or empty the kernel cache")
    cache.add_argument("action", choices=("info", "clear"))

    tr = sub.add_parser("trace", help="run a Python script and write a timeline of its "
                        "commands and builds (Chrome trace format, for Perfetto)")
    tr.add_argument("-o", "--output", help="trace file (default: SCRIPT.trace.json)")
    tr.add_argument("script")
    tr.add_argument("script_args", nargs=argparse.REMAINDER)
    return p


def main(argv: list[str] | None = None) -> int:
    """Run the ``pysycl`` command; returns the exit status.

    >>> main(["cache", "info"])  # doctest: +SKIP
    0
    """
    args = build_parser().parse_args(argv)
    handler = getattr(commands, "cmd_" + args.command)
    from ..errors import exception
    try:
        return handler(args) or 0
    except BrokenPipeError:  # `pysycl inspect f | head`
        return 0
    except exception as e:  # a bad file, an unknown target, a failed build
        print(f"pysycl {args.command}: error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
