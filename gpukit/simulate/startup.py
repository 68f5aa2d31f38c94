"""The startup hook behind GPUKIT_SIMULATE: `GPUKIT_SIMULATE=1 python script.py` simulates.

The package installs `gpukit-simulate.pth` into site-packages (see setup.py); Python runs its one
line at startup, which does nothing but read the environment unless GPUKIT_SIMULATE is set (to
"1", a device name such as "A100", or "A100,checks=bounds+races,seed=3"). Then `install` waits
for the program to import numba.cuda and starts the simulation mode right after, so a program
that never uses numba.cuda pays nothing, and numba.cuda is never imported on its behalf.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import os
import sys
from typing import Any

ENV = "GPUKIT_SIMULATE"
OFF = ("", "0", "false", "no", "off")


def requested(value: str | None = None) -> bool:
    value = os.environ.get(ENV, "") if value is None else value
    return value.strip().lower() not in OFF


def install() -> None:
    """Start the simulation mode when numba.cuda is imported (now, if it already is)."""
    value = os.environ.get(ENV, "")
    if not requested(value):
        return
    if "numba.cuda" in sys.modules:
        _activate(value)
    elif not any(isinstance(f, _Activator) for f in sys.meta_path):
        sys.meta_path.insert(0, _Activator(value))


def _activate(value: str) -> None:
    from . import active, options_from_text, start
    if active() is not None:
        return
    options = options_from_text(value)
    try:
        start(options.pop("device", None), **options)
    except Exception as exc:  # noqa: BLE001 - say why, and let the program run without it
        sys.stderr.write(f"gpukit: {ENV}={value!r} could not start the simulation mode: "
                         f"{type(exc).__name__}: {exc}\n")


class _Activator(importlib.abc.MetaPathFinder):
    """Finds nothing itself: wraps the loader of numba.cuda to start the simulation after it."""

    def __init__(self, value: str):
        self.value = value

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name != "numba.cuda":
            return None
        sys.meta_path.remove(self)  # once
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        spec.loader = _ActivatingLoader(spec.loader, self.value)
        return spec


class _ActivatingLoader(importlib.abc.Loader):
    def __init__(self, loader: Any, value: str):
        self._loader, self._value = loader, value

    def create_module(self, spec: Any) -> Any:
        return self._loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        self._loader.exec_module(module)
        _activate(self._value)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)
