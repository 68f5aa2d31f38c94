"""numba-cuda's NRT runtime (`numba.cuda.memory_management.nrt.rtsys`) on the simulator.

With `config.CUDA_ENABLE_NRT`, numba-cuda keeps a memory system on the GPU (compiled from CUDA
C and launched on the device) that counts what kernels allocate. The simulator runs kernels
through Numba's CPU runtime, so on it the runtime's methods act on that one: allocating and
initialising need nothing, and the statistics are Numba's CPU runtime's (its allocations
count what simulated kernels allocate, e.g. `np.sum` of a view, and the frees that match them).
"""

from __future__ import annotations

from typing import Any


def _cpu() -> Any:
    from numba.core.runtime import _nrt_python  # Numba's CPU runtime's own switches
    return _nrt_python


def _cpu_stats() -> Any:
    from numba.core.runtime import rtsys
    return rtsys.get_allocation_stats()  # RuntimeError when disabled, as numba-cuda's


def nothing(self: Any, *args: Any, **kwargs: Any) -> None:
    """Allocating, initialising and linking the device memory system: nothing to do."""


def memsys_enable_stats(self: Any, stream: Any = None) -> None:
    _cpu().memsys_enable_stats()


def memsys_disable_stats(self: Any, stream: Any = None) -> None:
    _cpu().memsys_disable_stats()


def memsys_stats_enabled(self: Any, stream: Any = None) -> bool:
    return _cpu().memsys_stats_enabled()


def get_allocation_stats(self: Any, stream: Any = None) -> Any:
    return _cpu_stats()


def memsys_get_stats_alloc(self: Any, stream: Any = None) -> int:
    return get_allocation_stats(self).alloc


def memsys_get_stats_free(self: Any, stream: Any = None) -> int:
    return get_allocation_stats(self).free


def memsys_get_stats_mi_alloc(self: Any, stream: Any = None) -> int:
    return get_allocation_stats(self).mi_alloc


def memsys_get_stats_mi_free(self: Any, stream: Any = None) -> int:
    return get_allocation_stats(self).mi_free


def print_memsys(self: Any, stream: Any = None) -> None:
    print(get_allocation_stats(self))
