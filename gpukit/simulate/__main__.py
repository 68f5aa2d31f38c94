"""`python -m gpukit.simulate [options] script.py [args]`: run a numba.cuda program unchanged on
gpukit's simulator (also `-m module`). Options: --device, --checks, --schedule, --seed,
--watchdog-s. A gpukit error stops the program with a traceback of the program's own frames."""

from __future__ import annotations

import argparse
import os
import runpy
import sys
import traceback

from ..backends.options import CHECKS


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m gpukit.simulate",
        description="Run a Numba CUDA program unchanged on gpukit's GPU simulator: numba.cuda's "
                    "host API and kernel launches run on a simulated device, with gpukit's "
                    "checks (bounds, races, barriers, uninitialised reads) on.")
    p.add_argument("--device", default=None, help="device profile to simulate (default T4; "
                   "see `gpukit devices`)")
    p.add_argument("--checks", default="all", help="comma-separated checks to keep on, 'all' "
                   f"(default) or 'none'; among: {', '.join(CHECKS)}")
    p.add_argument("--schedule", default="ordered", choices=["ordered", "shuffle"],
                   help="block and write order (shuffle reveals order-dependent bugs)")
    p.add_argument("--seed", type=int, default=0, help="seed of the shuffled schedule")
    p.add_argument("--watchdog-s", type=float, default=30.0,
                   help="stop kernels that run longer than this many seconds (0: never)")
    p.add_argument("-m", dest="module", default=None, help="run a module as a script")
    p.add_argument("program", nargs=argparse.REMAINDER,
                   help="script.py [args...] (or the module's args after -m)")
    return p


def checks_option(text: str) -> object:
    if text == "all":
        return True
    if text == "none":
        return False
    return [c.strip() for c in text.split(",") if c.strip()]


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.module is None and not args.program:
        parser().error("name a script to run (or -m module)")
    from . import start
    simulation = start(args.device, checks=checks_option(args.checks), schedule=args.schedule,
                       seed=args.seed, watchdog_s=args.watchdog_s or None)
    try:
        if args.module is not None:
            sys.argv = [args.module, *args.program]
            runpy.run_module(args.module, run_name="__main__", alter_sys=True)
        else:
            script = args.program[0]
            sys.argv = list(args.program)
            sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
            runpy.run_path(script, run_name="__main__")
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException as exc:  # noqa: BLE001 - printed as Python would, without our frames
        sys.stderr.write(_program_traceback(exc))
        return 1
    finally:
        simulation.stop()
    return 0


def _program_traceback(exc: BaseException) -> str:
    """The traceback from the program's first frame on, gpukit's own frames left out."""
    from .tracebacks import is_internal
    frames = traceback.extract_tb(exc.__traceback__)
    runner = {os.path.abspath(runpy.__file__), os.path.abspath(__file__)}
    while frames and (os.path.abspath(frames[0].filename) in runner
                      or frames[0].filename.startswith("<frozen runpy")):
        frames = frames[1:]
    frames = [f for f in frames if not is_internal(f.filename)] or frames
    text = "Traceback (most recent call last):\n" + "".join(traceback.format_list(frames))
    return text + "".join(traceback.format_exception_only(type(exc), exc))


if __name__ == "__main__":
    sys.exit(main())
