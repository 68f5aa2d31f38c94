"""The `gpukit` command: `gpukit info`, `gpukit devices`, `gpukit occupancy ...`, `selftest`.

`info` reports each backend (usable, or why not), the selected backend's device and memory, and
whether kernels can be inspected; `devices` prints the device profiles and the per-compute-
capability limits; `occupancy` runs the occupancy calculator (or searches the best block size);
`selftest` runs `gpukit.selftest` (the only command that launches kernels); `lab` starts
JupyterLab (`jupyter lab`, with `--allow-root` when run as root, as in containers and cloud VMs,
where JupyterLab otherwise refuses to start). Bad arguments exit with status 2, gpukit errors with 1.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import platform
import sys
from collections.abc import Sequence
from typing import Any

from .backends import available_backends, get_backend
from .backends.base import Backend
from .devices import COMPUTE_CAPABILITIES, DEFAULT_PROFILE, DeviceProfile, GiB, list_profiles
from .errors import GpukitError
from .occupancy import (
    best_block_size,
    occupancy,
    occupancy_vs_block_size,
    occupancy_vs_registers,
    occupancy_vs_shared_memory,
)
from .occupancy.ptxas import ptxas_path, unavailable_reason

_CURVES = {"threads": "threads_per_block", "regs": "regs_per_thread", "smem": "shared_mem_bytes"}


def _gpukit_version() -> str:
    try:
        from . import __version__  # lazy: fails only in a stale editable install, handled below
    except ImportError:  # gpukit imported as a namespace package: a stale editable install
        from importlib.metadata import version
        return version("gpukit")
    return __version__


def _module_version(name: str) -> str:
    try:
        module = importlib.import_module(name)
    except Exception as exc:  # noqa: BLE001 - `info` reports a broken package instead of failing
        return "not installed" if isinstance(exc, ImportError) else f"broken ({exc})"
    return str(getattr(module, "__version__", "installed"))


def _table(rows: list[list[str]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip()
                     for row in rows)


def _device_line(backend: Backend) -> str:
    if isinstance(backend.profile, DeviceProfile):
        return backend.profile.describe()
    caps = backend.capabilities()
    name = backend.device_name
    return (f"{name} (CC {caps.compute_capability[0]}.{caps.compute_capability[1]}, "
            f"{caps.sm_count} SMs, {caps.total_memory_bytes / GiB:.1f} GiB)")


def _info(args: argparse.Namespace) -> int:
    print(f"gpukit {_gpukit_version()} on Python {platform.python_version()} "
          f"(numpy {_module_version('numpy')}, numba {_module_version('numba')}, "
          f"CuPy {_module_version('cupy')})")
    print("Backends:")
    backends = available_backends()
    width = max(map(len, backends), default=0)
    for name, reason in backends.items():
        state = "available" if reason is None else f"not available: {reason}"
        print(f"  {name.ljust(width)}  {state}")
    try:
        backend = get_backend(args.backend)
    except Exception as exc:  # noqa: BLE001 - `info` must report, never crash
        print(f"Selected backend: none ({type(exc).__name__}: {exc})")
        backend = None
    if backend is not None:
        print(f"Selected backend: {backend.name} (asked for {args.backend!r})")
        for label, show in (("device", _device_line), ("memory", lambda b: str(b.memory_info())),
                            ("status", _status_line)):
            try:
                text = show(backend)
            except Exception as exc:  # noqa: BLE001 - one failing query must not hide the rest
                text = f"unknown ({type(exc).__name__}: {exc})"
            print(f"  {label}: {text}")
    reason = unavailable_reason()
    print("Kernel inspection (registers, shared memory via ptxas): "
          + (f"available ({ptxas_path()})" if reason is None else f"not available: {reason}"))
    if backend is None:
        print("gpukit: error: no backend can be used here", file=sys.stderr)
        return 1
    return 0


def _status_line(backend: Any) -> str:
    status = backend.status()
    text = (f"{'initialized' if status.initialized else 'not initialized'}, "
            f"{status.kernels_launched} kernel launches, "
            f"{status.memory_in_use_bytes} B allocated")
    return text + (f", last error: {status.last_error}" if status.last_error else "")


def _devices(args: argparse.Namespace) -> int:
    rows = [["Name", "CC", "SMs", "Memory", "Bandwidth", "FP32", "Host link"]]
    for p in list_profiles():
        rows.append([p.name, p.cc.name, str(p.sm_count), f"{p.memory_bytes / GiB:.1f} GiB",
                     f"{p.memory_bandwidth_gb_s:g} GB/s", f"{p.fp32_tflops:g} TFLOP/s",
                     f"PCIe Gen{p.pcie_gen}"])
    print("Device profiles:")
    print(_table(rows))
    rows = [["CC", "Threads/SM", "Warps/SM", "Blocks/SM", "Regs/SM", "Smem/SM", "Smem/block",
             "Opt-in", "Unit", "Reserved", "Carveouts (KiB)"]]
    for c in COMPUTE_CAPABILITIES.values():
        rows.append([c.name, str(c.max_threads_per_sm), str(c.max_warps_per_sm),
                     str(c.max_blocks_per_sm), str(c.registers_per_sm),
                     f"{c.shared_mem_per_sm // 1024} KiB", f"{c.shared_mem_per_block // 1024} KiB",
                     f"{c.shared_mem_per_block_optin // 1024} KiB",
                     f"{c.shared_mem_alloc_unit} B", f"{c.shared_mem_reserved_per_block} B",
                     "fixed" if c.carveout_kib is None else ", ".join(map(str, c.carveout_kib))])
    print()
    print("Compute capability limits (all: 32 threads/warp, 1024 threads/block, 255 registers/"
          "thread, registers allocated per warp in units of 256):")
    print(_table(rows))
    return 0


def _occupancy(args: argparse.Namespace) -> int:
    common = {"carveout": args.carveout, "opt_in": args.opt_in}
    threads = args.threads
    if args.best:
        min_grid, threads = best_block_size(args.device, args.regs, args.smem, args.max_block_size,
                                            **common)
        if threads == 0:
            print("No block size can run with these resources.")
            return 0
        print(f"Best block size: {threads} threads (a grid of at least {min_grid} blocks fills "
              "every SM)")
    elif threads is None:
        raise GpukitError("give --threads N (threads per block), or --best to search for one")
    result = occupancy(args.device, threads, args.regs, args.smem, **common)
    print(result.describe())
    if args.curve:
        if args.curve == "threads":
            curve = occupancy_vs_block_size(args.device, args.regs, args.smem, **common)
        elif args.curve == "regs":
            curve = occupancy_vs_registers(args.device, threads, args.smem, **common)
        else:
            curve = occupancy_vs_shared_memory(args.device, threads, args.regs, **common)
        rows = [[curve.label, "Occupancy", "Warps/SM", "Blocks/SM", "Limited by"]]
        previous = None
        for x, p in curve:  # only where the answer changes: the steps of the chart
            key = (p.active_blocks_per_sm, p.limiting_factors)
            if key != previous:
                rows.append([str(x), p.percent(), str(p.active_warps_per_sm),
                             str(p.active_blocks_per_sm), ", ".join(p.limiting_factors)])
            previous = key
        print()
        print(f"Occupancy against {curve.label.lower()} (rows where it changes):")
        print(_table(rows))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gpukit", description="Learn and explore GPU computing: device facts, backends and "
        "the occupancy calculator.")
    parser.add_argument("--version", action="version", version=f"gpukit {_gpukit_version()}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    info = commands.add_parser("info", help="backends, the selected device and its memory")
    info.add_argument("--backend", default="auto", help="backend to select (default: auto)")
    info.set_defaults(run=_info)

    devices = commands.add_parser("devices", help="the device profiles and per-CC limits")
    devices.set_defaults(run=_devices)

    occ = commands.add_parser(
        "occupancy", help="theoretical occupancy of a launch configuration",
        description="Theoretical occupancy, as cudaOccupancyMaxActiveBlocksPerMultiprocessor "
        "computes it.")
    occ.add_argument("--device", default=DEFAULT_PROFILE,
                     help=f"profile name or compute capability, e.g. A100 or 8.0 "
                     f"(default: {DEFAULT_PROFILE})")
    occ.add_argument("--threads", type=int, help="threads per block")
    occ.add_argument("--regs", type=int, default=32, help="registers per thread (default: 32)")
    occ.add_argument("--smem", type=int, default=0,
                     help="shared memory per block in bytes, static + dynamic (default: 0)")
    occ.add_argument("--carveout", type=int, default=None,
                     help="preferred shared-memory carveout in percent, 0..100 (default: max)")
    occ.add_argument("--no-opt-in", dest="opt_in", action="store_false",
                     help="cap shared memory per block at 48 KiB, as without "
                     "cudaFuncAttributeMaxDynamicSharedMemorySize")
    occ.add_argument("--best", action="store_true",
                     help="search the block size with the highest occupancy "
                     "(cudaOccupancyMaxPotentialBlockSize)")
    occ.add_argument("--max-block-size", type=int, default=0,
                     help="largest block size --best may pick (default: the device's)")
    occ.add_argument("--curve", choices=sorted(_CURVES),
                     help="also print occupancy against threads, registers or shared memory")
    occ.set_defaults(run=_occupancy)

    test = commands.add_parser(
        "selftest", help="run kernels, ops, copies, timing and memory checks on every backend",
        description="Runs gpukit's kernel corpus, the ops, transfers, timing, streams and memory "
        "accounting on each available backend, compares every result with numpy and between "
        "backends, and prints a verdict with the driver, runtime and library versions. Exits 0 "
        "only when every check passed.")
    test.add_argument("--backend", action="append", choices=["cpu", "cuda"],
                      help="test only this backend (repeatable; default: every backend)")
    test.add_argument("--quick", action="store_true",
                      help="four corpus kernels and two ops instead of all of them")
    test.set_defaults(run=_selftest)

    lab = commands.add_parser(
        "lab", help="start JupyterLab (also as root: containers, cloud VMs)",
        description="Runs `jupyter lab` with the arguments given (a folder such as notebooks/, "
        "--port, ...) in this Python environment, adding --allow-root when run as root, which "
        "JupyterLab otherwise refuses.")
    lab.add_argument("args", nargs="*", metavar="ARGS",
                     help="passed to jupyter lab as they are, e.g. notebooks/ --port 8889")
    lab.set_defaults(run=_lab)
    return parser


def _is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def lab_command(args: Sequence[str], root: bool | None = None) -> list[str]:
    """The command `gpukit lab ARGS` runs: this Python's JupyterLab, `--allow-root` added as
    root (unless given already)."""
    command = [sys.executable, "-m", "jupyterlab", *args]
    if (_is_root() if root is None else root) and "--allow-root" not in args:
        command.append("--allow-root")
    return command


def _exec(command: list[str]) -> int:
    """Replace this process with `command` (so Ctrl-C reaches JupyterLab), or run it where
    there is no exec (Windows)."""
    if os.name == "posix":
        os.execv(command[0], command)
    import subprocess  # lazy: only Windows needs it
    return subprocess.call(command)


def _lab(args: argparse.Namespace) -> int:
    if importlib.util.find_spec("jupyterlab") is None:
        print("gpukit: error: JupyterLab is not installed in this environment: "
              "pip install -e \".[lab]\" installs it with everything the lessons use",
              file=sys.stderr)
        return 1
    command = lab_command(args.args)
    if command[-1] == "--allow-root" and "--allow-root" not in args.args:
        print("gpukit: running as root, so JupyterLab starts with --allow-root", file=sys.stderr)
    return _exec(command)


def _selftest(args: argparse.Namespace) -> int:
    from .selftest import selftest  # lazy: the self-test imports numba and compiles kernels
    report = selftest(args.backend, quick=args.quick)
    print(report.text())
    return 0 if report.passed else 1


def main(argv: Sequence[str] | None = None) -> int:
    """Run the `gpukit` command; returns the exit status."""
    parser = build_parser()
    if argv is not None and (isinstance(argv, str) or not all(isinstance(a, str) for a in argv)):
        print(f"gpukit: error: the arguments must be a list of strings, got {argv!r}",
              file=sys.stderr)
        return 2
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        args = parser.parse_args(argv[:1] if argv[:1] == ["lab"] else argv)
        if argv[:1] == ["lab"]:   # everything after `lab` is jupyter's, options included
            args.args = argv[1:]
    except SystemExit as exc:  # argparse exits 2 on bad arguments (0 for --help)
        return exc.code if isinstance(exc.code, int) else 2
    try:
        return args.run(args)
    except GpukitError as exc:
        print(f"gpukit: error: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # `gpukit devices | head`: the reader left, nothing went wrong here
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no error at exit
        return 0


if __name__ == "__main__":
    sys.exit(main())
