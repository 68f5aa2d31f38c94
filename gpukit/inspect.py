"""Old import path of kernel resources via ptxas: see `gpukit.occupancy.resources`."""

from __future__ import annotations

from .occupancy.resources import (
    DEFAULT_REGS_PER_THREAD,
    INSTALL_HINT,
    InspectCompileError,
    InspectError,
    InspectSignatureError,
    InspectUnavailableError,
    KernelResources,
    clear_cache,
    kernel_occupancy,
    parse_ptxas_output,
    ptx,
    ptxas_path,
    resources,
    signature_from_args,
    theoretical_occupancy,
    unavailable_reason,
)

__all__ = ["DEFAULT_REGS_PER_THREAD", "INSTALL_HINT", "InspectCompileError", "InspectError",
           "InspectSignatureError", "InspectUnavailableError", "KernelResources", "clear_cache",
           "kernel_occupancy", "parse_ptxas_output", "ptx", "ptxas_path", "resources",
           "signature_from_args", "theoretical_occupancy", "unavailable_reason"]
