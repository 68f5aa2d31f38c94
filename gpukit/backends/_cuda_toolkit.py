"""The CUDA libraries the CUDA backend loads, where from, and which versions they are.

numba-cuda compiles kernels with NVVM and asks NVRTC which architectures exist; with nvJitLink
it links them to machine code itself, so a driver older than the NVVM (the 12.9 wheel's PTX is
refused by 12.4 drivers) still runs them; CuPy's matmul calls cuBLAS. All of them are found by
`cuda.pathfinder`, which prefers the NVIDIA wheels in site-packages but falls back to whatever
the system has (such as a CUDA 13 toolkit in /usr/local/cuda, whose libraries do not match the
cu12 wheels). `load_toolkit` loads the wheels' libraries first, so that numba-cuda, which asks
the same cached loader, uses them; `toolkit_problem` says what is missing or came from the
system. `versions` reports driver, runtime (cudart, not NVRTC), NVRTC, NVVM and the packages.
Nothing here creates a CUDA context.
"""

from __future__ import annotations

import importlib.metadata
import os
import sysconfig
from dataclasses import dataclass

# name in cuda.pathfinder -> (what it is for, the wheel that ships it, required to run kernels)
LIBRARIES: dict[str, tuple[str, str, bool]] = {
    "nvrtc": ("NVRTC (which numba-cuda asks for the GPU architectures)",
              "nvidia-cuda-nvrtc-cu12", True),
    "nvvm": ("NVVM (which compiles kernels)", "nvidia-cuda-nvcc-cu12", True),
    "nvJitLink": ("nvJitLink (which links kernels for drivers older than NVVM)",
                  "nvidia-nvjitlink-cu12", False),
}
_INSTALL = "pip install 'gpukit[cuda]'"


@dataclass(frozen=True)
class LoadedLibrary:
    """Where one CUDA library was loaded from ("site-packages", "system-search", ...)."""

    name: str
    path: str | None
    found_via: str | None
    error: str | None = None

    @property
    def from_wheel(self) -> bool:
        """Whether it came from an NVIDIA wheel in this environment's site-packages."""
        return self.path is not None and _inside_site_packages(self.path)


def _inside_site_packages(path: str) -> bool:
    roots = {sysconfig.get_paths()[key] for key in ("purelib", "platlib")}
    real = os.path.realpath(path)
    return any(real.startswith(os.path.realpath(root) + os.sep) for root in roots)


def _load(name: str) -> LoadedLibrary:
    try:
        from cuda import pathfinder  # lazy: cuda-python loads only when the GPU path is asked for
        loaded = pathfinder.load_nvidia_dynamic_lib(name)
    except Exception as exc:  # noqa: BLE001 - DynamicLibNotFoundError and friends: reported
        return LoadedLibrary(name, None, None, " ".join(f"{type(exc).__name__}: {exc}".split()))
    return LoadedLibrary(name, loaded.abs_path, loaded.found_via)


def load_toolkit() -> dict[str, LoadedLibrary]:
    """Load NVRTC, NVVM and nvJitLink (the cu12 wheels' where installed). Never raises."""
    return {name: _load(name) for name in LIBRARIES}


def cublas_available() -> bool:
    """Whether cuBLAS (which CuPy's matmul calls) can be loaded, from a wheel or the system."""
    return _load("cublas").path is not None


def toolkit_problem(loaded: dict[str, LoadedLibrary] | None = None,
                    driver_version: tuple[int, int] | None = None) -> str | None:
    """Why kernels cannot be compiled and run with the libraries found, or None.

    A required library that is missing, or that came from outside site-packages (a system CUDA
    toolkit, whose version need not match the cu12 wheels), is a problem; so is a missing
    nvJitLink when the driver is older than NVVM's CUDA version (`driver_version`).
    """
    loaded = load_toolkit() if loaded is None else loaded
    for name, (what, wheel, required) in LIBRARIES.items():
        lib = loaded.get(name)
        if lib is None or lib.path is None:
            if not required and not _driver_too_old(driver_version):
                continue
            return (f"{what} was not found ({lib.error if lib else 'not looked for'}): "
                    f"{_INSTALL} installs {wheel}")
        if not lib.from_wheel:
            return (f"{what} was loaded from {lib.path} (found via {lib.found_via}), not from "
                    f"the {wheel} wheel: a system CUDA toolkit's libraries need not match the "
                    f"cu12 wheels numba-cuda and CuPy use; {_INSTALL} (the wheels are found "
                    "first), or remove that toolkit from LD_LIBRARY_PATH")
    return None


def _driver_too_old(driver_version: tuple[int, int] | None) -> bool:
    nvvm = package_version("nvidia-cuda-nvcc-cu12")
    if driver_version is None or nvvm is None:
        return False
    major, minor = (int(p) for p in nvvm.split(".")[:2])
    return driver_version < (major, minor)


def package_version(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def runtime_version() -> str | None:
    """"major.minor" of the CUDA runtime library (cudart) itself, or None. Never raises."""
    try:
        from cuda.bindings import runtime  # lazy: as above
        err, version = runtime.cudaRuntimeGetVersion()
        if int(err) != 0:
            return None
    except Exception:  # noqa: BLE001 - informational only
        return None
    return f"{version // 1000}.{version % 1000 // 10}"


def nvrtc_version() -> str | None:
    try:
        from cuda.bindings import nvrtc  # lazy: as above
        err, major, minor = nvrtc.nvrtcVersion()
        return f"{major}.{minor}" if int(err) == 0 else None
    except Exception:  # noqa: BLE001 - informational only
        return None


def driver_version() -> tuple[int, int] | None:
    """(major, minor) of the CUDA version the driver supports, or None (no driver). Never
    raises; call it only where numba.cuda is the real one (not Numba's simulator)."""
    try:
        from numba.cuda.cudadrv.driver import driver  # lazy: numba-cuda's own loader
        if driver.initialization_error is not None or not driver.is_available:
            return None
        return tuple(driver.get_version())
    except Exception:  # noqa: BLE001 - informational only
        return None


def versions(simulator: bool = False) -> dict[str, str]:
    """Driver, runtime, NVRTC and package versions, for `gpukit selftest` and `info`."""
    driver = "Numba's CUDA simulator" if simulator else driver_version()
    found = {
        "CUDA driver": ".".join(map(str, driver)) if isinstance(driver, tuple) else driver,
        "CUDA runtime (cudart)": runtime_version(),
        "NVRTC": nvrtc_version(),
        "numba": package_version("numba"),
        "numba-cuda": package_version("numba-cuda"),
        "cuda-bindings": package_version("cuda-bindings"),
        "CuPy": package_version("cupy-cuda12x"),
        "NVVM (nvcc wheel)": package_version("nvidia-cuda-nvcc-cu12"),
        "nvJitLink wheel": package_version("nvidia-nvjitlink-cu12"),
        "cuBLAS wheel": package_version("nvidia-cublas-cu12"),
    }
    return {key: value or "not available" for key, value in found.items()}
