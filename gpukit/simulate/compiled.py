"""numba-cuda's compiled kernels under the simulation mode: `overloads`, PTX, LLVM IR, resources.

The simulator runs a kernel from its Python source, so a launch compiles no GPU code. Programs
and test suites still look at what numba-cuda compiled: `kernel.overloads`, `inspect_asm()`,
`inspect_llvm()`, `get_regs_per_thread()`, `kernel.compile(sig).regs_per_thread`. None of that
needs a GPU: numba-cuda compiles PTX with NVVM (the `inspect` extra's wheel), and ptxas reports a
kernel's resources. So, while a simulation is active:

- every signature a dispatcher was launched with, or declared eagerly, is listed in its
  `overloads` (a `SimOverloads`), and numba-cuda compiles it (its own `_Kernel`, for the simulated
  device's compute capability) only when the entry is looked at: launching stays as fast as it
  was, and a program that never inspects its kernels never waits for NVVM;
- loading a compiled kernel onto the simulated device (numba-cuda's `get_cufunc`, which `bind()`
  and the resource properties call) loads nothing: it gives a `SimFunction` whose attributes are
  what the driver would report, from `ptxas -v` for the simulated device's architecture.

Stopping the simulation gives each dispatcher a plain `OrderedDict` of what was compiled (those
are numba-cuda kernels; on a GPU they compile their code for the real device when launched) and
drops the signatures nobody looked at.
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from collections.abc import Iterator, MutableMapping
from types import SimpleNamespace
from typing import Any

from .session import current

_PENDING = object()  # launched or declared, not yet compiled by numba-cuda
_taken: weakref.WeakSet = weakref.WeakSet()  # dispatchers whose overloads are SimOverloads


class SimOverloads(MutableMapping):
    """A dispatcher's `overloads` during a simulation: argument types -> numba-cuda's compiled
    kernel, compiled when first looked at. Membership and listing compile nothing."""

    def __init__(self, dispatcher: Any, entries: OrderedDict):
        self._dispatcher = weakref.ref(dispatcher)
        self._entries: OrderedDict = OrderedDict(entries)
        self._sensitive: set = set()  # compiled while marked launch-config sensitive

    def note(self, argtypes: tuple, launch_config_sensitive: bool = False) -> None:
        """A signature the simulator ran (or the kernel declared), listed from now on;
        `launch_config_sensitive`: its compilation was marked so (gpukit.simulate.launchconfig)."""
        if argtypes not in self._entries:
            self._entries[argtypes] = _PENDING
        if launch_config_sensitive:
            self._sensitive.add(argtypes)

    def compiled(self) -> OrderedDict:
        """The entries numba-cuda has compiled, in order."""
        return OrderedDict((k, v) for k, v in self._entries.items() if v is not _PENDING)

    def __getitem__(self, argtypes: Any) -> Any:
        kernel = self._entries[argtypes]
        if kernel is _PENDING:
            kernel = self._entries[argtypes] = _compile(self._dispatcher(), argtypes)
            if argtypes in self._sensitive:  # marked while the launch's config was current
                kernel.launch_config_sensitive = True
        return kernel

    def __setitem__(self, argtypes: Any, kernel: Any) -> None:
        self._entries[argtypes] = kernel

    def __delitem__(self, argtypes: Any) -> None:
        del self._entries[argtypes]

    def __contains__(self, argtypes: object) -> bool:
        return argtypes in self._entries

    def __iter__(self) -> Iterator:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        self._entries.clear()

    def __repr__(self) -> str:
        return f"SimOverloads({list(self._entries)})"


def _compile(dispatcher: Any, argtypes: tuple) -> Any:
    """numba-cuda's compiled kernel for `argtypes`, as its `CUDADispatcher.compile` makes it
    (the simulated device gives the compute capability; nothing is loaded)."""
    from numba.cuda.dispatcher import _Kernel
    return _Kernel(dispatcher.py_func, argtypes, **dispatcher.targetoptions)


def overloads_of(dispatcher: Any) -> SimOverloads:
    """The dispatcher's `overloads`, made a `SimOverloads` for the rest of the simulation."""
    table = dispatcher.overloads
    if not isinstance(table, SimOverloads):
        table = dispatcher.overloads = SimOverloads(dispatcher, table)
        _taken.add(dispatcher)
    return table


def give_back() -> None:
    """At the simulation's end: each dispatcher's compiled kernels as a plain OrderedDict."""
    for dispatcher in list(_taken):
        table = dispatcher.overloads
        if isinstance(table, SimOverloads):
            dispatcher.overloads = table.compiled()
    _taken.clear()


# -- the simulated device "loads" a compiled kernel ---------------------------------------------
class SimFunction:
    """numba-cuda's driver `Function` of a kernel on the simulated device: `attrs` as the
    driver reports them (cuFuncGetAttribute), from ptxas; there is no code to run."""

    def __init__(self, name: str, attrs: Any):
        self.name, self.attrs = name, attrs
        # its module, as bind() initialises it: nothing to set up on the simulated device
        self.module = SimpleNamespace(initialized=True, setup=lambda: None)

    def set_shared_memory_carveout(self, carveout: int) -> None:
        """Accepted: the simulator's occupancy takes carveouts at launch, not per function."""

    def __repr__(self) -> str:
        return f"<SimFunction {self.name} on the simulated device: {self.attrs}>"


def codelibrary_get_cufunc(library: Any) -> SimFunction:
    """`CUDACodeLibrary.get_cufunc` on the simulated device: ptxas's report of the library's
    PTX for the device's architecture (one run per library, kept on it)."""
    from numba.cuda.cudadrv.driver import FuncAttr

    from ..occupancy import occupancy
    from ..occupancy.ptxas import parse_ptxas_output, run_ptxas
    if library._entry_name is None:  # numba-cuda's own error for a device function
        raise RuntimeError("Missing entry_name - are you trying to get the cufunc for a device "
                           "function?")
    profile = current(required=True).profile
    cached = getattr(library, "_gpukit_function", None)
    if cached is not None and cached[0] == profile.name:
        return cached[1]
    ptx = library.get_asm_str(cc=profile.compute_capability)
    # a kernel that calls code linked later (cudadevrt for grid sync, CUDA C files) is
    # assembled relocatable: its own registers, as far as ptxas can tell before linking
    report = run_ptxas(ptx, profile.arch, library._max_registers,
                       relocatable=".extern .func" in ptx)
    found = parse_ptxas_output(report, ptx)
    regs, warp = max(found.regs_per_thread, 1), profile.cc.warp_size
    # the driver's largest block whose registers fit (cudaFuncAttributeMaxThreadsPerBlock)
    maxthreads = next((t for t in range(profile.cc.max_threads_per_block, 0, -warp)
                       if occupancy(profile, t, regs).valid), warp)
    function = SimFunction(library._entry_name, FuncAttr(
        regs=found.regs_per_thread, shared=found.shared_mem_bytes, local=found.local_mem_bytes,
        const=found.const_mem_bytes, maxthreads=maxthreads))
    library._gpukit_function = (profile.name, function)
    return function
