"""Old import path of the ptxas toolchain: see `gpukit.occupancy.ptxas`."""

from __future__ import annotations

from .occupancy.ptxas import (
    INSTALL_HINT,
    InspectCompileError,
    InspectError,
    InspectSignatureError,
    InspectUnavailableError,
    KernelResources,
    find_nvrtc,
    find_ptxas,
    parse_ptxas_output,
    ptx_const_bytes,
    ptxas_path,
    run_ptxas,
    unavailable_reason,
)

__all__ = ["INSTALL_HINT", "InspectCompileError", "InspectError", "InspectSignatureError",
           "InspectUnavailableError", "KernelResources", "find_nvrtc", "find_ptxas",
           "parse_ptxas_output", "ptx_const_bytes", "ptxas_path", "run_ptxas", "unavailable_reason"]
