"""numba-cuda's launch configuration during compilation (`numba.cuda.launchconfig`), simulated.

On a GPU, a launch that has to compile its kernel calls the dispatcher's `_compile_for_args`
while the launch's configuration is current for the compiling thread
(`launchconfig.current_launch_config()`, whose `args` are the launch's arguments). Code taking
part in the compilation (a wrapped `_compile_for_args`, an IR rewrite registered with
numba-cuda) may read it and mark the compilation launch-config sensitive
(`dispatcher.mark_launch_config_sensitive()`); the dispatcher then compiles again for each new
(griddim, blockdim, sharedmem), through numba-cuda's own specialization dispatchers.

The simulator compiles no GPU code, so it calls `_compile_for_args` only where a program takes
part in compiling: the dispatcher's `_compile_for_args` was replaced, a rewrite of the
program's is registered, or the dispatcher is launch-config sensitive. Its `_compile_for_args`
types the kernel as numba-cuda does, the after-inference rewrites included (for what they do;
the simulator runs the kernel from its source), lists the signature in `overloads`, and returns
None: the compiled kernel is numba-cuda's, made when `overloads` is looked at.
"""

from __future__ import annotations

import threading
from typing import Any

from numba.cuda.core.rewrites import rewrite_registry

from .compiled import overloads_of

_local = threading.local()


def current_launch_config() -> Any:
    """`numba.cuda.launchconfig.current_launch_config` during a simulation: the configuration
    of the launch compiling on this thread, or None."""
    config = getattr(_local, "config", None)
    if config is not None:
        return config
    from .patching import original
    return original("current_launch_config", "numba.cuda.launchconfig")()


def current_args() -> Any:
    """The arguments of the launch running on this thread (a configured launch's `args`)."""
    return getattr(_local, "args", None)


def launching(args: Any) -> Any:
    """A launch's arguments are this thread's `args` from now (None: no launch's), as numba-cuda
    keeps them; returns those before, to put back when the launch ends."""
    before = getattr(_local, "args", None)
    _local.args = args
    return before


def compile_for_args(self: Any, *args: Any, **kws: Any) -> None:
    """`CUDADispatcher._compile_for_args` during a simulation (see the module docstring)."""
    from ..sim.compiler import cuda_typecheck
    assert not kws  # numba-cuda's own assertion
    argtypes = tuple(self.typeof_pyval(a) for a in args)
    cuda_typecheck(self.py_func, argtypes, rewrites=True)
    overloads_of(self).note(argtypes)


def select(dispatcher: Any, config: Any) -> Any:
    """The dispatcher numba-cuda launches for `config`: a launch-config sensitive one has a
    specialization per configuration (numba-cuda's own `_select_launch_config_dispatcher`)."""
    if config is None or not hasattr(config, "_is_kernel_launch_config_sensitive"):
        return dispatcher
    return dispatcher._select_launch_config_dispatcher(config)


def compile_if_taking_part(dispatcher: Any, args: tuple, config: Any) -> None:
    """Where a program takes part in compiling and this launch compiles on a GPU (its argument
    types were not compiled before), call the dispatcher's `_compile_for_args` with `config`
    current; afterwards, note what the compilation marked."""
    if config is None or not _taking_part(dispatcher):
        return
    from .dispatch import launch_types
    argtypes = launch_types(dispatcher, args)
    if argtypes in overloads_of(dispatcher):
        return
    before = getattr(_local, "config", None)
    _local.config = config
    try:
        dispatcher._compile_for_args(*args)
    finally:
        _local.config = before
    if config._kernel_launch_config_sensitive:
        overloads_of(dispatcher).note(argtypes, launch_config_sensitive=True)
        dispatcher._launch_config_sensitive = True  # numba-cuda's _update_launch_config_sensitivity
        if dispatcher._launch_config_default_key is None:
            dispatcher._launch_config_default_key = dispatcher._launch_config_key(config)


_rewrites_seen: list = [None, False]  # (the registered rewrites, whether one is a program's)


def _taking_part(dispatcher: Any) -> bool:
    """Whether the program takes part in compiling this dispatcher's kernels."""
    if "_compile_for_args" in vars(dispatcher) or dispatcher._launch_config_sensitive:
        return True
    registered = rewrite_registry.rewrites
    before, after = registered["before-inference"], registered["after-inference"]
    key = (len(before), len(after), before and before[-1], after and after[-1])  # cheap
    if _rewrites_seen[0] != key:
        from ..sim.overloads import is_programs
        _rewrites_seen[:] = [key, any(is_programs(rewrite) for rewrite in before + after)]
    return _rewrites_seen[1]
