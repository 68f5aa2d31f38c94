"""The simulated device as numba-cuda presents one: `Device`, `Context`, `gpus`, deallocations.

`SimDevice` answers numba-cuda's device attributes (`name`, `compute_capability`,
`MULTIPROCESSOR_COUNT`, `MAX_THREADS_PER_BLOCK`, `WARP_SIZE`, `MAX_SHARED_MEMORY_PER_BLOCK`, ...,
the names of CUDA's `CU_DEVICE_ATTRIBUTE_*` without the prefix) from the device profile of
`gpukit.devices`; `SimContext` is `cuda.current_context()`, with memory information from the
simulator's memory accounting, numba's deferred-deallocation switch and the occupancy queries of
numba-cuda's compiled kernels (gpukit's occupancy calculator). There is one device.
Nothing here allocates or launches: `gpukit.simulate.host_api` does.
"""

from __future__ import annotations

import collections
import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ..devices import WARP_SIZE, DeviceProfile

if TYPE_CHECKING:
    from typing_extensions import Self

# CU_DEVICE_ATTRIBUTE_* names -> how to read them from a profile (the rest are not modeled)
_FIXED = {
    "WARP_SIZE": WARP_SIZE, "ECC_ENABLED": 0, "KERNEL_EXEC_TIMEOUT": 0, "TCC_DRIVER": 0,
    "INTEGRATED": 0, "CAN_MAP_HOST_MEMORY": 1, "UNIFIED_ADDRESSING": 1, "MANAGED_MEMORY": 1,
    "CONCURRENT_KERNELS": 1, "CONCURRENT_MANAGED_ACCESS": 1, "COMPUTE_MODE": 0,
    "COOPERATIVE_LAUNCH": 1, "PCI_BUS_ID": 0, "PCI_DEVICE_ID": 0, "PCI_DOMAIN_ID": 0,
    "SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO": 32, "GLOBAL_MEMORY_BUS_WIDTH": 256,
    "ASYNC_ENGINE_COUNT": 2, "MAX_PITCH": 2**31 - 1, "TEXTURE_ALIGNMENT": 512,
}


def _attributes(profile: DeviceProfile) -> dict[str, int]:
    cc = profile.cc
    return {
        **_FIXED,
        "MULTIPROCESSOR_COUNT": profile.sm_count,
        "MAX_THREADS_PER_BLOCK": cc.max_threads_per_block,
        "MAX_BLOCK_DIM_X": cc.max_block_dim[0], "MAX_BLOCK_DIM_Y": cc.max_block_dim[1],
        "MAX_BLOCK_DIM_Z": cc.max_block_dim[2],
        "MAX_GRID_DIM_X": cc.max_grid_dim[0], "MAX_GRID_DIM_Y": cc.max_grid_dim[1],
        "MAX_GRID_DIM_Z": cc.max_grid_dim[2],
        "MAX_SHARED_MEMORY_PER_BLOCK": cc.shared_mem_per_block,
        "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN": cc.shared_mem_per_block_optin,
        "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR": cc.shared_mem_per_sm,
        "MAX_REGISTERS_PER_BLOCK": cc.registers_per_block,
        "MAX_REGISTERS_PER_MULTIPROCESSOR": cc.registers_per_sm,
        "MAX_THREADS_PER_MULTIPROCESSOR": cc.max_threads_per_sm,
        "MAX_BLOCKS_PER_MULTIPROCESSOR": cc.max_blocks_per_sm,
        "TOTAL_CONSTANT_MEMORY": cc.const_mem_bytes,
        "COMPUTE_CAPABILITY_MAJOR": cc.major, "COMPUTE_CAPABILITY_MINOR": cc.minor,
        "ASYNC_ENGINE_COUNT": profile.copy_engines,
    }


class SimDevice:
    """numba-cuda's `Device` for the simulated GPU: `cuda.get_current_device()`, `cuda.gpus[0]`.

    Attributes are CUDA's device attribute names without `CU_DEVICE_ATTRIBUTE_`, as numba-cuda
    reads them (`dev.MULTIPROCESSOR_COUNT`); values come from the device profile.
    """

    def __init__(self, profile: DeviceProfile, context: SimContext):
        self.profile = profile
        self.id = 0
        self.compute_capability = profile.compute_capability
        self.name = f"{profile.name} (gpukit simulator)"
        self.uuid = "GPU-00000000-0000-0000-0000-00000000" + "6b67"  # "gk"
        self._context = context
        self.__dict__.update(_attributes(profile))

    def __getattr__(self, attr: str) -> Any:
        if attr.isupper():
            raise AttributeError(f"the simulated {self.profile.name} does not model the device "
                                 f"attribute {attr}")
        raise AttributeError(f"'SimDevice' object has no attribute {attr!r}")

    supports_float16 = property(lambda self: self.compute_capability >= (5, 3))
    supports_bfloat16 = property(lambda self: self.compute_capability >= (8, 0))
    supports_fp8 = property(lambda self: self.compute_capability >= (8, 9))

    def get_primary_context(self) -> SimContext:
        return self._context

    def get_device_identity(self) -> dict[str, int]:
        return {"pci_domain_id": 0, "pci_bus_id": 0, "pci_device_id": 0}

    def reset(self) -> None:
        """Like cudaDeviceReset: free every allocation of the simulated device."""
        self._context.reset()

    def release_primary_context(self) -> None:
        pass

    # numba's device list hands out context managers that forward to the device
    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SimDevice) and other.profile == self.profile

    def __hash__(self) -> int:
        return hash(self.id)

    def __repr__(self) -> str:
        return f"<CUDA device {self.id} '{self.name}'>"

    def __str__(self) -> str:
        return f"<Managed Device {self.id}>"


class Deallocations:
    """numba-cuda's pending deallocations (its driver's `_PendingDeallocs`): the memory of a
    collected array is freed later, when more than `CUDA_DEALLOCS_COUNT` frees (10) or more
    than `CUDA_DEALLOCS_RATIO` of the device's memory (20%) are pending, on `clear()`, or when
    an allocation would not fit otherwise, and never while `disable()` (`cuda.defer_cleanup()`)
    is in force. So, as on a GPU, `del array` does not change `get_memory_info()` at once."""

    def __init__(self, memory_capacity: int) -> None:
        self.memory_capacity = memory_capacity
        self._pending: collections.deque = collections.deque()
        self._bytes = 0
        self._disabled = 0

    def add_item(self, release: Any, *args: Any, size: int = 0) -> None:
        from numba.cuda.core import config
        self._pending.append((release, args))
        self._bytes += int(size)
        if len(self._pending) > config.CUDA_DEALLOCS_COUNT or \
                self._bytes > int(self.memory_capacity * config.CUDA_DEALLOCS_RATIO):
            self.clear()

    def clear(self) -> None:
        """Free what is pending, unless disabled."""
        if self._disabled:
            return
        while self._pending:
            release, args = self._pending.popleft()
            release(*args)
        self._bytes = 0

    @contextlib.contextmanager
    def disable(self) -> Iterator[None]:
        self._disabled += 1
        try:
            yield
        finally:
            self._disabled -= 1

    @property
    def is_disabled(self) -> bool:
        return self._disabled > 0

    def __len__(self) -> int:
        return len(self._pending)


class SimContext:
    """`cuda.current_context()` on the simulated device: memory information, deallocations,
    streams, events and synchronisation, as numba-cuda's `Context` offers them."""

    def __init__(self, simulation: Any):
        self.simulation = simulation
        self.device = SimDevice(simulation.profile, self)
        self.deallocations = Deallocations(simulation.profile.memory_bytes)
        self.handle = 1

    @property
    def id(self) -> int:
        return self.device.id

    @property
    def memory_manager(self) -> SimContext:
        """numba-cuda's `context.memory_manager`: the context itself offers what that object
        does on the simulated device (`deallocations`, `get_memory_info`, `defer_cleanup`,
        `reset`)."""
        return self

    def get_memory_info(self) -> Any:
        """(free, total) bytes of the simulated device, as numba-cuda's `MemoryInfo`."""
        from numba.cuda.cudadrv.driver import MemoryInfo
        free, total = self.simulation.backend.get_memory_info()
        return MemoryInfo(free=free, total=total)

    def synchronize(self) -> None:
        self.simulation.backend.synchronize()

    def reset(self) -> None:
        self.deallocations.clear()
        self.simulation.backend.memory.release_all()

    def pop(self) -> None:
        pass

    def push(self) -> None:
        pass

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def defer_cleanup(self) -> Any:
        return self.deallocations.disable()

    def create_stream(self) -> Any:
        return self.simulation.backend.stream()

    def get_default_stream(self) -> Any:
        return 0

    get_legacy_default_stream = get_per_thread_default_stream = get_default_stream

    def create_event(self, timing: bool = True) -> Any:
        from ..sim.streams import SimCudaEvent
        return SimCudaEvent(self.simulation.backend.modeled_timeline, timing)

    # occupancy of a compiled kernel (numba-cuda's max_cooperative_grid_blocks asks these): a
    # gpukit.simulate.compiled.SimFunction's attributes, gpukit's occupancy calculator
    def get_active_blocks_per_multiprocessor(self, func: Any, blocksize: int, memsize: int,
                                             flags: Any = None) -> int:
        """cuOccupancyMaxActiveBlocksPerMultiprocessor for the simulated device."""
        from ..occupancy import occupancy
        return occupancy(self.simulation.profile, int(blocksize), max(func.attrs.regs, 1),
                         func.attrs.shared + int(memsize)).active_blocks_per_sm

    def get_max_potential_block_size(self, func: Any, b2d_func: Any, memsize: int,
                                     blocksizelimit: int, flags: Any = None) -> tuple[int, int]:
        """cuOccupancyMaxPotentialBlockSize: (min grid size, block size); `b2d_func` gives the
        dynamic shared memory of a block size (0: `memsize` for every size)."""
        from ..occupancy import best_block_size

        def shared(block: int) -> int:
            return func.attrs.shared + (int(b2d_func(block)) if callable(b2d_func) else
                                        int(memsize))
        return best_block_size(self.simulation.profile, max(func.attrs.regs, 1), shared,
                               max_block_size=int(blocksizelimit))

    def __repr__(self) -> str:
        return f"<gpukit simulated CUDA context on {self.device.name}>"


class DeviceList:
    """`cuda.gpus`: the one simulated device (`gpus[0]`, `len(gpus)`, `gpus.current`)."""

    def __init__(self, device: SimDevice):
        self.lst = [device]

    def __getitem__(self, devnum: Any) -> SimDevice:
        return self.lst[devnum if isinstance(devnum, (int, slice)) else int(devnum)]

    def __iter__(self) -> Iterator[SimDevice]:
        return iter(self.lst)

    def __len__(self) -> int:
        return len(self.lst)

    @property
    def current(self) -> SimDevice:
        return self.lst[0]

    def __str__(self) -> str:
        return ", ".join(str(d) for d in self.lst)
