"""Installs gpukit's startup hook (gpukit-simulate.pth, for GPUKIT_SIMULATE) into site-packages,
with a normal install and with `pip install -e .`; everything else is in pyproject.toml."""

from __future__ import annotations

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.editable_wheel import editable_wheel

PTH_NAME = "gpukit-simulate.pth"
# One line, run by Python's site module at startup: it reads one environment variable and imports
# nothing unless GPUKIT_SIMULATE is set (gpukit.simulate.startup says what happens then).
PTH_TEXT = ('import os; os.environ.get("GPUKIT_SIMULATE", "").strip().lower() not in '
            '("", "0", "false", "no", "off") and '
            '__import__("gpukit.simulate.startup").simulate.startup.install()\n')


class BuildPyWithStartupHook(build_py):
    """Puts the .pth file at the top of the wheel (site-packages), beside the package."""

    def run(self) -> None:
        super().run()
        target = Path(self.build_lib) / PTH_NAME
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(PTH_TEXT)

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:
        return [*super().get_outputs(include_bytecode), str(Path(self.build_lib) / PTH_NAME)]


class _StrategyWithStartupHook:
    """Wraps setuptools' editable-install strategy and adds the .pth file to the wheel."""

    def __init__(self, strategy: object):
        self._strategy = strategy

    def __call__(self, wheel: object, files: list, mapping: dict) -> None:
        self._strategy(wheel, files, mapping)
        wheel.writestr(PTH_NAME, PTH_TEXT)

    def __enter__(self) -> object:
        self._strategy.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._strategy.__exit__(*exc)


class EditableWheelWithStartupHook(editable_wheel):
    def _select_strategy(self, *args: object, **kwargs: object) -> object:
        return _StrategyWithStartupHook(super()._select_strategy(*args, **kwargs))


setup(cmdclass={"build_py": BuildPyWithStartupHook,
                "editable_wheel": EditableWheelWithStartupHook})
