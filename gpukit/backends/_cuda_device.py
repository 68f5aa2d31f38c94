"""The facts of a real GPU for the CUDA backend: limits, features, a DeviceProfile, its name.

`read_capabilities` reads launch limits from the driver; `real_profile` describes the GPU as a
`gpukit.devices.DeviceProfile` (the same type the simulator emulates), named as the driver names
it, with memory bandwidth and FP32 peak from its clocks where the driver reports them, else from
the matching named profile; `find_device` picks a GPU by id, "cuda:N" or name, matching whole
words (an "L4" is not an "L40S"). Under Numba's CUDA simulator, which has no attributes, gpukit's
tables stand in. Nothing here allocates or launches.
"""

from __future__ import annotations

from typing import Any

from ..devices import (
    ASSUMED_PCIE_GEN,
    COMPUTE_CAPABILITIES,
    DEFAULT_PROFILE,
    FP32_LANES_PER_SM,
    PROFILES,
    DeviceProfile,
    UnknownDeviceError,
    get_profile,
    known_cc,
    match_profile,
    names_device,
)
from . import _cuda_env as env
from ._cuda_toolkit import cublas_available
from .base import KERNEL_FEATURES, BackendStatus, Capabilities

SIMULATOR_NAME = "Numba CUDA simulator"


def device_names(cuda: Any, simulator: bool) -> list[str]:
    """The name of each GPU, by id."""
    if simulator:
        return [SIMULATOR_NAME]
    names = []
    for device in cuda.list_devices():
        name = device.name
        names.append(name.decode() if isinstance(name, bytes) else str(name))
    return names


def find_device(device: Any, names: list[str]) -> int | None:
    """The id of the GPU `device` names (an int id, "cuda:N", or a profile name or alias such
    as "T4" or "A100"), or None."""
    if isinstance(device, str) and device.lower().startswith("cuda:"):
        device = device[5:]
        if not device.isdigit():
            return None
        device = int(device)
    if isinstance(device, int) and not isinstance(device, bool):
        return device if 0 <= device < len(names) else None
    if isinstance(device, DeviceProfile):
        profile, words = device, device.name
    elif isinstance(device, str):
        profile, words = PROFILES.get(device) or _profile_named(device), device
    else:
        return None
    for index, name in enumerate(names):
        if names_device(words, name) or (profile is not None and match_profile(name) is profile):
            return index
    return None


def _profile_named(device: str) -> DeviceProfile | None:
    try:
        return get_profile(device)
    except UnknownDeviceError:
        return None


def availability(backend: Any, general_reason: Any) -> str | None:
    """Why `backend` (a CUDABackend) cannot run on its GPU, or None; picks the GPU its
    `device` names. Never raises."""
    try:
        reason = general_reason()
        if reason is not None:
            return reason
        names = device_names(env.numba_cuda(), backend.simulator)
        if backend.device is not None:
            found = find_device(backend.device, names)
            if found is None:
                return (f"no GPU here is {backend.device!r} (found: {', '.join(names)}); "
                        f"get_backend('cpu', device={backend.device!r}) simulates one")
            backend.device_id = found
        if backend.device_id >= len(names):
            return (f"device_id {backend.device_id} does not exist: {len(names)} CUDA "
                    f"device(s) found (ids 0 to {len(names) - 1})")
        return None if backend.simulator else env.context_problem(backend.device_id)
    except Exception as exc:  # noqa: BLE001 - availability checks never raise
        return f"checking for CUDA failed: {type(exc).__name__}: {exc}"


def features(cc: tuple[int, int], cooperative: bool, cupy: bool, simulator: bool
             ) -> frozenset[str]:
    """The feature names of a GPU of compute capability `cc` (see base.FEATURES)."""
    names = set(KERNEL_FEATURES) | {"pinned_memory"}
    names |= {name for name, min_cc in (("float16", (5, 3)), ("float64_atomics", (6, 0)),
                                        ("bfloat16", (8, 0)), ("tensor_cores", (7, 0)))
              if cc >= min_cc and not simulator}
    if cooperative:
        names.add("cooperative_launch")
    if cupy:  # device arrays are CuPy's, and its matmul calls cuBLAS where that loads
        names |= {"cupy", "cublas"} if cublas_available() else {"cupy"}
    if simulator:
        names.add("numba_simulator")
    return frozenset(names)


def read_capabilities(cuda: Any, device_id: int, cc: tuple[int, int], total_bytes: int,
                      simulator: bool, cupy: bool) -> Capabilities:
    """The launch limits and features of GPU `device_id`, read from the driver; under Numba's
    simulator, gpukit's table for `cc`."""
    if simulator:
        limits = COMPUTE_CAPABILITIES[known_cc(cc)]
        return Capabilities(
            limits.warp_size, limits.max_threads_per_block, limits.max_block_dim,
            limits.max_grid_dim, limits.shared_mem_per_block,
            limits.shared_mem_per_block_optin, cc, 1, total_bytes,
            features(cc, False, cupy, True))
    dev = cuda.list_devices()[device_id]
    return Capabilities(
        warp_size=dev.WARP_SIZE, max_threads_per_block=dev.MAX_THREADS_PER_BLOCK,
        max_block_dim=(dev.MAX_BLOCK_DIM_X, dev.MAX_BLOCK_DIM_Y, dev.MAX_BLOCK_DIM_Z),
        max_grid_dim=(dev.MAX_GRID_DIM_X, dev.MAX_GRID_DIM_Y, dev.MAX_GRID_DIM_Z),
        shared_mem_per_block=dev.MAX_SHARED_MEMORY_PER_BLOCK,
        shared_mem_per_block_optin=dev.MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
        compute_capability=cc, sm_count=dev.MULTIPROCESSOR_COUNT, total_memory_bytes=total_bytes,
        features=features(cc, bool(dev.COOPERATIVE_LAUNCH), cupy, False))


def _attribute(dev: Any, name: str) -> int | None:
    try:
        value = int(getattr(dev, name))
    except Exception:  # noqa: BLE001 - attributes CUDA 13 dropped, or a driver that lacks one
        return None
    return value if value > 0 else None


def real_profile(name: str, cc: tuple[int, int], sm_count: int, total_bytes: int,
                 dev: Any = None) -> DeviceProfile:
    """A DeviceProfile of a real GPU (or of Numba's simulator, `dev` None), so notebooks read
    the same facts on either backend. Bandwidth and FP32 peak come from the driver's clocks
    where it reports them, else from the named profile the name matches, else from the T4's;
    the PCIe generation from the named profile, else ASSUMED_PCIE_GEN."""
    known = match_profile(name)
    fallback = known or PROFILES[DEFAULT_PROFILE]
    bandwidth, tflops, engines = fallback.memory_bandwidth_gb_s, fallback.fp32_tflops, 2
    if dev is not None:
        memory_khz = _attribute(dev, "MEMORY_CLOCK_RATE")
        bus_bits = _attribute(dev, "GLOBAL_MEMORY_BUS_WIDTH")
        if memory_khz and bus_bits:  # double data rate: two transfers per clock
            bandwidth = round(2 * memory_khz * 1e3 * bus_bits / 8 / 1e9, 1)
        clock_khz = _attribute(dev, "CLOCK_RATE")
        lanes = FP32_LANES_PER_SM.get(known_cc(cc))
        if clock_khz and lanes and known is None:
            tflops = round(sm_count * lanes * 2 * clock_khz * 1e3 / 1e12, 1)
        engines = _attribute(dev, "ASYNC_ENGINE_COUNT") or engines
    return DeviceProfile(
        name=name, compute_capability=known_cc(cc), sm_count=max(1, int(sm_count)),
        memory_bytes=max(1, int(total_bytes)), memory_bandwidth_gb_s=bandwidth,
        fp32_tflops=tflops, pcie_gen=known.pcie_gen if known else ASSUMED_PCIE_GEN,
        copy_engines=engines)


def status(backend: Any, in_use: int, launched: int, last_error: str | None,
           fault: Exception | None) -> BackendStatus:
    """A CUDABackend's status; never raises (an unusable GPU is "unavailable")."""
    available = backend.check_available()
    extra: dict[str, Any] = {
        "simulator": backend.simulator, "device_id": backend.device_id,
        "enable_caching": backend.enable_caching, "version": backend.version,
        "unavailable_reason": backend.unavailable_reason,
    }
    device = "unavailable"
    if available and fault is None:
        extra["array_library"] = backend.array_library
        extra["compute_capability"] = backend.compute_capability
        extra["memory_source"] = ("host RAM (Numba's simulator has no device memory)"
                                  if backend.simulator else "CUDA driver")
        device = backend.device_name
    return BackendStatus(backend.name, backend.initialized, device, in_use, launched,
                         last_error, extra)
