"""The occupancy explorer: NVIDIA's occupancy calculator as a widget.

A device dropdown and sliders for threads per block, registers per thread and shared memory per
block (or a compiled kernel's registers and static shared memory, from ptxas via
`gpukit.occupancy.resources`); the occupancy, its limiting factor and the calculator's three curves
with the current point marked. Every number comes from `gpukit.occupancy`; nothing is run.
"""

from __future__ import annotations

from typing import Any

import ipywidgets as ipw
from matplotlib.figure import Figure

from ..devices import DeviceProfile, UnknownDeviceError, get_profile, list_profiles
from ..errors import ArgumentTypeError
from ..occupancy import Occupancy, best_block_size, calculator_curves, occupancy
from ..occupancy.resources import (
    DEFAULT_REGS_PER_THREAD,
    InspectError,
    InspectUnavailableError,
    KernelResources,
    resources,
)
from ._base import GpukitWidget, int_slider

__all__ = ["OccupancyExplorer", "occupancy_explorer"]

_SMEM_STEP_BYTES = 256


class OccupancyExplorer(GpukitWidget):
    """See `occupancy_explorer`."""

    kind = "occupancy_explorer"

    def __init__(self, device: str | DeviceProfile | None = None, kernel: Any = None,
                 signature: Any = None, threads_per_block: int = 256,
                 regs_per_thread: int = DEFAULT_REGS_PER_THREAD, shared_mem_bytes: int = 0):
        profile = get_profile(device)
        self.kernel = kernel
        self.signature = signature
        self.resources: KernelResources | None = None
        self.resources_note: str | None = None
        if kernel is not None:
            if signature is None:
                raise ArgumentTypeError("occupancy_explorer(kernel=...) needs signature= (Numba types "
                                "such as 'void(float32[:], int32)', or example arguments)")
            self._read_resources(profile, first=True)
        cc = profile.cc
        smem_name = "shared_mem_bytes" if kernel is None else "dynamic_shared_bytes"
        smem_text = ("shared memory/block (B)" if kernel is None
                     else "dynamic shared memory/block (B)")
        controls = {
            "device": ipw.Dropdown(options=[p.name for p in list_profiles()], value=profile.name,
                                   description="device", layout=ipw.Layout(width="220px")),
            "threads_per_block": int_slider("threads_per_block", threads_per_block, cc.warp_size,
                                            cc.max_threads_per_block, cc.warp_size),
            "regs_per_thread": int_slider("registers/thread", regs_per_thread, 1,
                                          cc.max_registers_per_thread),
            smem_name: int_slider(smem_text, shared_mem_bytes, 0, self._smem_cap(profile),
                                  _SMEM_STEP_BYTES),
        }
        self._smem_name = smem_name
        super().__init__(controls, figsize=(9.6, 3.0))
        controls["device"].observe(self._on_device, names="value")
        with self.hold():
            self._apply_resources()

    # -- the pure numbers ------------------------------------------------------------------
    @property
    def profile(self) -> DeviceProfile:
        return get_profile(self.controls["device"].value)

    @property
    def shared_mem_bytes(self) -> int:
        """Shared memory per block: the slider, plus the kernel's static shared memory."""
        static = self.resources.shared_mem_bytes if self.resources is not None else 0
        return static + self.controls[self._smem_name].value

    def _arguments(self) -> dict[str, Any]:
        return {"device": self.profile, "threads_per_block": self.values["threads_per_block"],
                "regs_per_thread": self.values["regs_per_thread"],
                "shared_mem_bytes": self.shared_mem_bytes}

    @property
    def occupancy(self) -> Occupancy:
        """`gpukit.occupancy.occupancy` of the current configuration."""
        return occupancy(**self._arguments())

    # -- controls that depend on the device ------------------------------------------------
    def _smem_cap(self, profile: DeviceProfile) -> int:
        static = self.resources.shared_mem_bytes if self.resources is not None else 0
        return max(0, profile.cc.shared_mem_per_block_optin - static)

    def _read_resources(self, profile: DeviceProfile, first: bool = False) -> None:
        try:
            self.resources = resources(self.kernel, self.signature, profile)
            self.resources_note = None
        except InspectError as exc:
            if first and not isinstance(exc, InspectUnavailableError):
                raise  # a bad signature or a kernel numba cannot compile: say so at once
            self.resources = None
            self.resources_note = (f"could not read the kernel's resources ({exc}); the sliders "
                                   "are the calculator's")

    def _apply_resources(self) -> None:
        regs = self.controls["regs_per_thread"]
        regs.disabled = self.resources is not None
        if self.resources is not None:
            regs.value = self.resources.regs_per_thread
        self.controls[self._smem_name].max = self._smem_cap(self.profile)

    def _on_device(self, change: dict) -> None:
        with self.hold():
            if self.kernel is not None:
                self._read_resources(self.profile)
            self._apply_resources()

    def _normalize(self, name: str, value: Any) -> Any:
        if name == "device" and isinstance(value, (str, DeviceProfile)):
            try:
                return get_profile(value).name  # aliases ("a100") and profiles
            except UnknownDeviceError:
                pass  # the check says which devices there are
        return value

    def _why(self, name: str) -> str:
        res = self.resources
        return (f"the kernel's registers come from ptxas: {res.regs_per_thread} per thread on "
                f"{res.arch}" if res is not None else "it is fixed")

    # -- display ---------------------------------------------------------------------------
    def _draw(self, figure: Figure) -> str:
        args = self._arguments()
        current = occupancy(**args)
        curves = calculator_curves(**args)
        axes = figure.subplots(1, 3, sharey=True)
        for ax, curve in zip(axes, curves.values()):
            scale = 1024 if curve.parameter == "shared_mem_bytes" else 1
            xs = [x / scale for x in curve.xs]
            ys = [o * 100 for o in curve.occupancies]
            if curve.parameter == "threads_per_block":  # one point per warp multiple
                ax.plot(xs, ys, ".-", color="#219ebc", markersize=3, linewidth=1)
            else:  # every register count / allocation unit: a step chart
                ax.step(xs, ys, where="post", color="#219ebc")
            mark = curve.current
            x_mark = getattr(mark, curve.parameter) / scale
            ax.plot([x_mark], [mark.occupancy * 100], "o", color="#d62828", markersize=7,
                    label=f"now: {mark.percent()}")
            ax.set_xlabel(curve.label.replace("(bytes)", "(KiB)") if scale > 1 else curve.label)
            ax.set_ylim(0, 105)
            ax.grid(alpha=0.3)
            ax.legend(loc="lower left" if curve.parameter != "threads_per_block"
                      else "lower right", fontsize=8)
        axes[0].set_ylabel("occupancy (%)")
        figure.suptitle(f"{current.device}: {current.summary()}", fontsize=10)
        figure.subplots_adjust(left=0.06, right=0.98, bottom=0.17, top=0.86, wspace=0.08)
        return self._summary_text(current, args)

    def _summary_text(self, current: Occupancy, args: dict[str, Any]) -> str:
        lines = current.describe().splitlines()
        grid, block = best_block_size(args["device"], args["regs_per_thread"],
                                      args["shared_mem_bytes"])
        if block:
            lines.append(f"  best block size (as cudaOccupancyMaxPotentialBlockSize): {block} "
                         f"threads, {grid} blocks fill the {args['device'].name}")
        if self.resources is not None:
            lines.append(f"  kernel {self.resources.kernel_name}: {self.resources}")
        if self.resources_note:
            lines.append(f"  {self.resources_note}")
        return "\n".join(lines)


def occupancy_explorer(device: str | DeviceProfile | None = None, kernel: Any = None,
                       signature: Any = None, *, threads_per_block: int = 256,
                       regs_per_thread: int = DEFAULT_REGS_PER_THREAD,
                       shared_mem_bytes: int = 0) -> OccupancyExplorer:
    """NVIDIA's occupancy calculator as a widget (default device T4).

    Controls: "device", "threads_per_block", "regs_per_thread", "shared_mem_bytes". With
    `kernel` (a function written against numba.cuda, or a @cuda.jit dispatcher) and `signature`
    (Numba types or example arguments), registers and static shared memory are the kernel's own,
    read with ptxas for the selected device (`gpukit.occupancy.resources`), the registers slider is
    fixed, and "dynamic_shared_bytes" replaces "shared_mem_bytes". Without the inspect extra the
    calculator's sliders stay, and the summary says why.
    """
    return OccupancyExplorer(device, kernel, signature, threads_per_block, regs_per_thread,
                             shared_mem_bytes)
