"""The backend registry: `get_backend("auto"|"cpu"|"cuda"|name)`, `register_backend`.

"auto" picks CUDA where a GPU is usable and the CPU simulator otherwise; the environment variable
GPUKIT_BACKEND overrides it. Backends are created lazily, so importing this module imports neither
numba nor CuPy.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from ..errors import (
    ArgumentTypeError,
    BackendError,
    BackendUnavailableError,
    GpukitError,
    InvalidArgumentError,
)
from ._cuda_env import cuda_unavailable_reason, simulator_enabled
from .base import Backend, BackendStatus, Capabilities, MemoryInfo

__all__ = ["Backend", "BackendStatus", "Capabilities", "MemoryInfo", "available_backends",
           "current_backend", "get_backend", "register_backend", "registered_backends"]


class UnknownBackendError(GpukitError, KeyError):
    """No backend is registered under that name."""

    def __str__(self) -> str:
        return str(self.args[0])


def _cpu(**options: Any) -> Backend:
    from .cpu import CPUBackend  # lazy: the simulator (and numba) load when a backend is made
    return CPUBackend(**options)


def _cuda(**options: Any) -> Backend:
    from .cuda import CUDABackend  # lazy: as for the CPU backend
    return CUDABackend(**options)


_FACTORIES: dict[str, Callable[..., Backend]] = {"cpu": _cpu, "cuda": _cuda}
_INSTANCES: dict[str, Backend] = {}
_current: Backend | None = None


def register_backend(name: str, factory: Callable[..., Backend]) -> None:
    """Make `get_backend(name, **options)` call `factory(**options)`. Replaces an earlier one."""
    if not isinstance(name, str):
        raise ArgumentTypeError(f"backend name must be a string, got {type(name).__name__}")
    if not name.strip() or name.lower() == "auto":
        raise InvalidArgumentError(
            f"backend name must be a non-empty string other than 'auto', got {name!r}")
    if not callable(factory):
        raise ArgumentTypeError(f"factory for backend {name!r} must be callable, got {factory!r}")
    _FACTORIES[name.lower()] = factory
    _INSTANCES.pop(name.lower(), None)


def registered_backends() -> list[str]:
    """The names `get_backend` accepts (besides "auto")."""
    return list(_FACTORIES)


def _cuda_usable() -> tuple[bool, str]:
    reason = cuda_unavailable_reason()
    return reason is None, reason or ""


def _resolve(name: str, options: dict[str, Any]) -> str:
    name = name.lower()
    if name == "auto":
        override = os.environ.get("GPUKIT_BACKEND", "").strip().lower()
        if override and override != "auto":
            return override
        # A real GPU only: under Numba's simulator (NUMBA_ENABLE_CUDASIM=1) gpukit's own wins.
        if not _cuda_usable()[0] or simulator_enabled():
            return "cpu"
        # device="A100": this GPU if it is one, else a simulated A100
        if options.get("device") is not None and not _cuda_has(options["device"]):
            return "cpu"
        return "cuda"
    return name


def _cuda_has(device: Any) -> bool:
    from .cuda import CUDABackend  # lazy: numba loads only when a GPU is usable
    try:
        return CUDABackend(device=device).check_available()
    except GpukitError:
        return False


def get_backend(name: str = "auto", **options: Any) -> Backend:
    """The backend called `name`, made current.

    Without options the same instance is returned each time (so its memory accounting is shared);
    with options (such as `device="A100"` or `checks=False`) a new instance is made. Both
    backends take the same options: on a GPU machine "auto" with `device="A100"` gives the GPU
    if it is an A100 and a simulated A100 otherwise; the simulator's options (checks, schedule,
    seed, watchdog_s, ...) are checked on CUDA too and change nothing there.
    Raises `BackendUnavailableError` (saying why) for a backend that cannot run here, and
    `UnknownBackendError` for a name nobody registered.
    """
    global _current
    if not isinstance(name, str):
        raise ArgumentTypeError(f"backend name must be a string, got {type(name).__name__}")
    key = _resolve(name, options)
    if key not in _FACTORIES:
        known = ", ".join(["auto", *_FACTORIES])
        if name.lower() == "auto":  # the name came from the environment
            raise UnknownBackendError(
                f"GPUKIT_BACKEND={os.environ.get('GPUKIT_BACKEND')!r} names an unknown backend; "
                f"known backends: {known}")
        raise UnknownBackendError(f"unknown backend {name!r}; known backends: {known}")
    if not options and key in _INSTANCES:
        backend = _INSTANCES[key]
    else:
        backend = _make(key, options)
        if not backend.is_available:
            reason = backend.unavailable_reason or "it is not available here"
            raise BackendUnavailableError(f"backend {key!r} cannot be used: {reason}")
        if not options:
            _INSTANCES[key] = backend
    _current = backend
    return backend


def _make(key: str, options: dict[str, Any]) -> Backend:
    """Call the factory registered as `key`; what it returns must be a Backend."""
    backend = _FACTORIES[key](**options)
    if not isinstance(backend, Backend):
        raise BackendError(
            f"the factory registered for backend {key!r} returned {backend!r} "
            f"({type(backend).__name__}), not a gpukit Backend; a factory passed to "
            "register_backend must return an instance of a gpukit.backends.Backend subclass")
    return backend


def current_backend() -> Backend:
    """The backend most recently returned by `get_backend`, else `get_backend("auto")`."""
    return _current if _current is not None else get_backend("auto")


def available_backends() -> dict[str, str | None]:
    """Each registered backend name mapped to None if usable, else why not. Never raises."""
    result: dict[str, str | None] = {}
    for key in _FACTORIES:
        try:
            if key == "cuda":
                ok, reason = _cuda_usable()
                result[key] = None if ok else reason
                continue
            backend = _INSTANCES.get(key) or _make(key, {})
            result[key] = None if backend.is_available else (
                backend.unavailable_reason or "not available")
        except Exception as exc:  # noqa: BLE001 - availability checks never raise
            result[key] = f"{type(exc).__name__}: {exc}"
    return result
