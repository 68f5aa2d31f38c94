"""The `inspect` extra's toolchain: find ptxas in its wheel, run `ptxas -v`, read the report.

ptxas, NVVM and NVRTC are looked up only in the nvidia-cuda-nvcc-cu12 and nvidia-cuda-nvrtc-cu12
wheels, never in a system CUDA toolkit, so the numbers do not depend on what else is installed.
`parse_ptxas_output` turns ptxas's report into a `KernelResources`. Compiling Python to PTX and
caching live in `gpukit.occupancy.resources`; nothing here imports numba or runs a kernel.
"""

from __future__ import annotations

import importlib.util
import math
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import GpukitError

__all__ = ["INSTALL_HINT", "InspectCompileError", "InspectError", "InspectSignatureError",
           "InspectUnavailableError", "KernelResources", "find_nvrtc", "find_ptxas",
           "parse_ptxas_output", "ptx_const_bytes", "ptxas_path", "run_ptxas",
           "unavailable_reason"]

INSTALL_HINT = 'pip install "gpukit[inspect]"'
PTXAS_TIMEOUT_S = 120


class InspectError(GpukitError):
    """Kernel resources could not be determined."""


class InspectUnavailableError(InspectError):
    """The `inspect` extra (ptxas, NVVM, NVRTC wheels) is missing or unusable here."""


class InspectCompileError(InspectError):
    """numba-cuda or ptxas could not compile the kernel."""


class InspectSignatureError(InspectError, TypeError):
    """The argument types of a kernel could not be worked out."""


@dataclass(frozen=True)
class KernelResources:
    """What one compiled kernel needs per thread and per block, as ptxas (or the driver) reports.

    `shared_mem_bytes` is static shared memory per block (dynamic shared memory is given at
    launch); `local_mem_bytes` the per-thread stack frame (local arrays and register spills);
    `const_mem_bytes` user constant memory (the PTX's .const data, e.g. `cuda.const.array_like`);
    `barriers` the named barriers used (None when the driver does not say); `kernel_name` the
    Python name (ptxas's mangled name is in `ptxas_output`).
    """

    regs_per_thread: int
    shared_mem_bytes: int
    local_mem_bytes: int
    const_mem_bytes: int
    barriers: int | None
    arch: str
    source: str = "ptxas"
    spill_store_bytes: int = 0
    spill_load_bytes: int = 0
    kernel_name: str = ""
    ptxas_output: str = field(default="", repr=False, compare=False)

    def summary(self) -> str:
        """One line, such as "sm_80: 30 registers/thread, 2048 B shared, 0 B local, ... (ptxas)"."""
        spills = (f", spills {self.spill_store_bytes} B stored/{self.spill_load_bytes} B loaded"
                  if self.spill_store_bytes or self.spill_load_bytes else "")
        barriers = ("" if self.barriers is None
                    else f", {self.barriers} barrier{'' if self.barriers == 1 else 's'}")
        return (f"{self.arch}: {self.regs_per_thread} registers/thread, {self.shared_mem_bytes} B "
                f"static shared/block, {self.local_mem_bytes} B local/thread, "
                f"{self.const_mem_bytes} B constant{barriers}{spills} ({self.source})")

    def __str__(self) -> str:
        return self.summary()


# -- the inspect extra ---------------------------------------------------------------------------

def _wheel_dir(package: str) -> Path | None:
    """The directory of an installed NVIDIA wheel package such as "nvidia.cuda_nvcc"."""
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def find_ptxas() -> str | None:
    """ptxas from the nvidia-cuda-nvcc-cu12 wheel (never a system toolkit), or None."""
    root = _wheel_dir("nvidia.cuda_nvcc")
    if root is None:
        return None
    exe = root / "bin" / ("ptxas.exe" if sys.platform == "win32" else "ptxas")
    return str(exe) if exe.is_file() else None


def find_nvrtc() -> str | None:
    """The nvidia-cuda-nvrtc-cu12 wheel's directory (numba-cuda asks NVRTC for the supported
    architectures), or None."""
    root = _wheel_dir("nvidia.cuda_nvrtc")
    return str(root) if root is not None and root.is_dir() else None


def cudasim_active() -> bool:
    """Whether Numba's CUDA simulator replaces numba.cuda in this process (no PTX then)."""
    return os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0")


def unavailable_reason() -> str | None:
    """None if kernels can be inspected here, else why not (with the install hint). Never raises."""
    missing = []
    if find_ptxas() is None:
        missing.append("ptxas and NVVM (nvidia-cuda-nvcc-cu12)")
    if find_nvrtc() is None:
        missing.append("NVRTC (nvidia-cuda-nvrtc-cu12)")
    if missing:
        return (f"the inspect extra is not installed: missing {' and '.join(missing)}; "
                f"install it with: {INSTALL_HINT}")
    if cudasim_active():
        return ("Numba's CUDA simulator is active (NUMBA_ENABLE_CUDASIM=1) and cannot compile to "
                "PTX; unset it to inspect kernels")
    return None


def ptxas_path() -> str:
    """The path of the wheel's ptxas; raises InspectUnavailableError if the extra is missing."""
    reason = unavailable_reason()
    if reason is not None:
        raise InspectUnavailableError(reason)
    return find_ptxas()  # type: ignore[return-value]


def run_ptxas(ptx_text: str, arch: str, max_registers: int | None = None,
              relocatable: bool = False) -> str:
    """The `ptxas -v -arch=<arch>` report for a PTX module (with `-maxrregcount` if given;
    `relocatable`: `-c`, so functions it calls from code linked later, such as cudadevrt's,
    may stay unresolved)."""
    exe = ptxas_path()
    with tempfile.TemporaryDirectory(prefix="gpukit-ptxas-") as tmp:
        src, out = Path(tmp, "kernel.ptx"), Path(tmp, "kernel.cubin")
        src.write_text(ptx_text)
        cmd = [exe, "-v", f"-arch={arch}", str(src), "-o", str(out)]
        if max_registers:
            cmd.insert(1, f"-maxrregcount={max_registers}")
        if relocatable:
            cmd.insert(1, "-c")
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=PTXAS_TIMEOUT_S,
                                  check=False)
        except OSError as exc:
            raise InspectUnavailableError(f"cannot run ptxas at {exe}: {exc}") from None
        except subprocess.TimeoutExpired:
            raise InspectCompileError(f"ptxas took more than {PTXAS_TIMEOUT_S} s") from None
    if proc.returncode != 0:
        raise InspectCompileError(f"ptxas failed for {arch}: {proc.stderr.strip() or proc.stdout}")
    return proc.stdout + proc.stderr  # ptxas writes its info lines to stderr


_ENTRY = re.compile(r"Compiling entry function '([^']+)' for '(\w+)'")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_CONST = re.compile(r"^\s*(?:\.\w+\s+)*?\.const\s+(?:\.align\s+\d+\s+)?\.[bufs](\d+)\s+"
                    r"[\w$.]+((?:\[\d+\])*)", re.MULTILINE)


def _number(pattern: str, text: str) -> int:
    match = re.search(pattern, text)
    return int(match.group(1)) if match else 0


def ptx_const_bytes(ptx_text: str) -> int:
    """Bytes of user constant memory (.const declarations) in a PTX module."""
    total = 0
    for bits, dims in _CONST.findall(ptx_text):
        count = math.prod(int(d) for d in re.findall(r"\d+", dims)) if dims else 1
        total += count * int(bits) // 8
    return total


def parse_ptxas_output(text: str, ptx_text: str = "") -> KernelResources:
    """The resources of the first entry function in `ptxas -v` output."""
    match = _ENTRY.search(text)
    if match is None:
        raise InspectCompileError(f"ptxas reported no entry function:\n{text.strip()}")
    name, arch = match.groups()
    block = text[match.end():]
    following = _ENTRY.search(block)
    block = block[:following.start()] if following else block
    frame = re.search(rf"Function properties for {re.escape(name)}\s*\n\s*" + _FRAME.pattern,
                      block)
    stack, stores, loads = (int(g) for g in frame.groups()[-3:]) if frame else (0, 0, 0)
    used = re.search(r"Used \d+ registers[^\n]*", block)
    used_line = used.group(0) if used else ""
    return KernelResources(
        regs_per_thread=_number(r"Used (\d+) registers", used_line),
        shared_mem_bytes=_number(r"(\d+) bytes smem", used_line),
        local_mem_bytes=max(stack, _number(r"(\d+) bytes lmem", used_line)),
        const_mem_bytes=ptx_const_bytes(ptx_text),
        barriers=_number(r"used (\d+) barriers", used_line),
        arch=arch, spill_store_bytes=stores, spill_load_bytes=loads, kernel_name=name,
        ptxas_output=text)
