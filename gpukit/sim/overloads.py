"""`@overload(f, target="cuda")` in simulated kernels.

numba-cuda keeps the overloads declared for the CUDA target (`numba.cuda.extending.overload`,
whose default target is "cuda") in its own typing registry; the simulator types and compiles
kernels with Numba's CPU target, which sees only "generic" and "cpu" overloads. Without help a
kernel calling a CUDA-only overload fails to type, and a function overloaded for both targets
runs its generic version where a GPU runs the CUDA one: a wrong answer.

`mirror_cuda_overloads()` registers each CUDA-target overload of the program's (made with
numba-cuda's `overload`, `overload_method` or `register_jitable`, or numba's own `overload(...,
target="cuda")`) with Numba's CPU registry as well, as a "cpu" overload (so it outranks a
"generic" one, as "cuda" does on the GPU) that applies only while the simulator compiles a
kernel: Numba's own CPU functions (`numba.njit`) keep resolving as before. Overloads defined by
numba-cuda's library itself (cache hints, cooperative groups,
its intrinsics) are not mirrored: the simulator implements those calls itself, and the one
method among them, `int.bit_count()`, is declared here the same way (see `_integer_bit_count`).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from numba.core import types
from numba.core.typing.templates import infer_getattr, make_overload_method_template

from . import cache
from .intrinsics import popc
from .lowlevel import overload

_MIRRORED: set = set()
_COMPILING = [0]  # > 0 while the simulator compiles a driver; its compiles run one at a time


@contextlib.contextmanager
def compiling_kernel() -> Iterator[None]:
    """Marks the compile of a kernel's driver, from typing to machine code. Numba also resolves
    types while lowering (an operator's implementation is looked up again, after typing, with
    no function on its typing call stack), and the kernel's code is lowered as part of its
    driver: the simulator's templates and conversions must apply there too."""
    _COMPILING[0] += 1
    try:
        yield
    finally:
        _COMPILING[0] -= 1


def kernel_compiling() -> bool:
    """Whether the simulator is compiling a kernel's driver now (`compiling_kernel`)."""
    return _COMPILING[0] > 0


def in_simulator(context: Any) -> bool:
    """True while the simulator compiles a kernel (`compiling_kernel`), or while a function it
    generated from the kernel's source (named `<gpukit ...>`, or a driver kept in the cache
    directory, in a kernel's module) is being typed, or calls what is being typed."""
    return kernel_compiling() or any(
        frame.func_id.filename.startswith("<gpukit ")
        or cache.is_kernel_module(frame.func_id.modname or "")
        for frame in context.callstack._stack)


_LIBRARIES = {"numba", "numba_cuda", "numpy", "llvmlite", "builtins"}


def is_programs(obj: Any) -> bool:
    """Whether `obj` (a function, a class, or a type instance) was defined by the program, not
    by Python, numpy, numba or numba-cuda's library (numba-cuda's own tests are a program)."""
    import numba

    if not isinstance(obj, type) and not callable(obj):
        obj = type(obj)
    module = getattr(obj, "__module__", None) or ""
    if module.startswith("numba.cuda.tests"):
        return True
    if module:
        top = module.partition(".")[0]
        return top not in _LIBRARIES and top not in sys.stdlib_module_names
    code = getattr(obj, "__code__", None)  # made by exec without a module name: its file
    return code is not None and Path(numba.__file__).parent.parent not in \
        Path(code.co_filename).parents


def simulator_only(base: type, method: str = "generic") -> type:
    """The typing template `base` answering only while the simulator compiles a kernel: its
    `method` (`generic` of an overload, `_resolve` of a method, `apply` of any function
    template) gives None elsewhere, so Numba's own CPU functions resolve as before."""
    answer = getattr(base, method)

    def guarded(self, *args):
        if not in_simulator(self.context):
            return None
        return answer(self, *args)

    return type(base)(base.__name__, (base,), {method: guarded})


def _cpu_template(template: type) -> type:
    """A CUDA-target overload as a CPU one. It applies only while the simulator compiles a
    kernel, except an `overload_method`'s own implementation (the overload of its function by
    itself), which Numba types in a compile of its own, outside the kernel's."""
    from numba.core.typing import templates

    # Numba's runtime on (it may return a view); its indexing checked against the bounds
    options = {"_nrt": True, "boundscheck": True, **template._jit_options}
    cpu = templates.make_overload_template(
        template.key, template._overload_func, options,
        template._strict, template._inline._inline, template.prefer_literal, target="cpu")
    return cpu if template.key is template._overload_func else simulator_only(cpu)


def overload_in_simulator(func: Any, typer: Any) -> None:
    """`@overload(func)` for the kernels the simulator compiles only (a "cpu" overload, so it
    outranks Numba's generic ones there); Numba's CPU functions keep resolving as before."""
    from numba.core.typing import templates

    template = simulator_only(templates.make_overload_template(
        func, typer, {}, True, "never", target="cpu"))
    templates.infer(template)
    templates.infer_global(func, types.Function(template))


def _registered_functions() -> list:
    """(function, its Numba type) for every function registered for typing: numba-cuda's
    `overload` (default target "cuda") registers with numba-cuda's registry, numba's own
    `numba.extending.overload(..., target="cuda")` with Numba's."""
    from numba.core.typing import templates as cpu_templates
    from numba.cuda.typing import templates as cuda_templates
    return [*cuda_templates.builtin_registry.globals, *cpu_templates.builtin_registry.globals]


def known_registries(context: Any, kind: type, *builtins: Any) -> list:
    """The registries a program's registrations for the CUDA target can be in: `builtins`,
    those installed in numba-cuda's `context` so far and the registries (of `kind`) of
    numba-cuda's modules imported so far, each once. `context.refresh()` would find the same
    ones after importing the rest of numba-cuda's library (about half a second at a process's
    first launch), and a program can only have registered with a module it has imported."""
    found = dict.fromkeys([*builtins, *list(context._registries)])
    for name, module in list(sys.modules.items()):
        if name.startswith("numba.cuda.") and module is not None:
            found.update((value, None) for value in list(vars(module).values())
                         if isinstance(value, kind))
    return list(found)


def mirror_cuda_overloads() -> None:
    """Make every CUDA-target overload declared so far visible to simulated kernels."""
    from numba.core import types
    from numba.core.typing import templates as cpu_templates
    from numba.cuda.descriptor import cuda_target
    from numba.cuda.typing import templates as cuda_templates

    for func, ftype in _registered_functions():
        for template in getattr(ftype, "templates", ()):
            if template in _MIRRORED:
                continue
            _MIRRORED.add(template)
            if _programs_cuda_overload(template, func):  # register_jitable(f): f is
                mirror = _cpu_template(template)              # the program's
                cpu_templates.infer(mirror)
                cpu_templates.infer_global(func, types.Function(mirror))
    # overload_method(..., target="cuda"), by numba-cuda's or numba's own overload_method
    for registry in known_registries(cuda_target.typing_context, cuda_templates.Registry,
                                     cuda_templates.builtin_registry,
                                     cpu_templates.builtin_registry):
        for template in list(registry.attributes):
            if template not in _MIRRORED:
                _MIRRORED.add(template)
                if _programs_cuda_overload(template, None):
                    infer_getattr(_cpu_method_template(template))


def _programs_cuda_overload(template: type, func: Any) -> bool:
    """Whether `template` is a CUDA-target overload of the program's (of `func`)."""
    target = getattr(template, "metadata", {}).get("target")
    overload_func = getattr(template, "_overload_func", None)
    return str(target).lower() == "cuda" and overload_func is not None and (
        is_programs(overload_func) or (func is not None and is_programs(func)))


def _cpu_method_template(template: type) -> type:
    """A method overload for the CUDA target as one for the CPU that applies only while the
    simulator compiles a kernel."""
    metadata = {**template.metadata, "target": "cpu"}
    return simulator_only(make_overload_method_template(
        template.key, template._attr, template._overload_func, template._inline._inline,
        template.prefer_literal, **metadata), "_resolve")


def _integer_bit_count(i):
    """`i.bit_count()` of an integer in a kernel: numba-cuda declares the method for the CUDA
    target (as its cuda.popc); the simulator computes it with its own popc."""
    return lambda i: popc(i)


infer_getattr(simulator_only(make_overload_method_template(  # Numba's CPU functions have none
    types.Integer, "bit_count", _integer_bit_count, "never", target="cpu"), "_resolve"))
overload(_integer_bit_count, target="cpu")(_integer_bit_count)


def cuda_code_in_overload(func: Any) -> str | None:
    """What of CUDA's a program's CUDA-target overload of `func` uses in its implementation
    (`cuda.threadIdx`, a `cuda.declare_device` function), which Numba's CPU compiler cannot
    compile: the name it is used by, or None. Read from the code of the overload function and
    the functions it defines, resolving names through its globals and closure."""
    for key, ftype in _registered_functions():
        if key is not func:
            continue
        for template in getattr(ftype, "templates", ()):
            overload_func = getattr(template, "_overload_func", None)
            if overload_func is not None and _programs_cuda_overload(template, func):
                used = cuda_code_used(overload_func)
                if used is not None:
                    return used
    return None


_METHOD_REGISTRIES: list = [None, []]  # [what the list depends on, the registries]


def cuda_method_overload(attr: str) -> bool:
    """Whether the program declares a CUDA-target `overload_method` named `attr` whose
    implementation uses CUDA (`cuda_code_used`)."""
    from numba.core.typing import templates as cpu_templates
    from numba.cuda.descriptor import cuda_target
    from numba.cuda.typing import templates as cuda_templates

    context = cuda_target.typing_context
    key = (len(sys.modules), len(context._registries))  # a registry comes with a module
    if _METHOD_REGISTRIES[0] != key:
        _METHOD_REGISTRIES[:] = [key, known_registries(
            context, cuda_templates.Registry, cuda_templates.builtin_registry,
            cpu_templates.builtin_registry)]
    return any(getattr(template, "_attr", None) == attr
               and _programs_cuda_overload(template, None)
               and cuda_code_used(template._overload_func) is not None
               for registry in _METHOD_REGISTRIES[1] for template in list(registry.attributes))


def cuda_code_used(overload_func: Any) -> str | None:
    """What of CUDA's the overload function `overload_func` (and the implementations it
    defines) uses: `cuda.<name>`, a `cuda.declare_device` function, a device function or an
    intrinsic, by the name it is used by; or None."""
    import numba.cuda

    from .names import device_function, intrinsic, is_declared_device
    closure = {name: cell.cell_contents for name, cell in
               zip(overload_func.__code__.co_freevars, overload_func.__closure__ or ())
               if _filled(cell)}
    used = _names_used(overload_func.__code__)
    for k, name in enumerate(used):
        obj = closure.get(name, overload_func.__globals__.get(name))
        if obj is numba.cuda:
            return f"{name}.{used[k + 1]}" if k + 1 < len(used) else name
        if is_declared_device(obj):
            return f"{name} (from cuda.declare_device)"
        if device_function(obj) is not None:
            return f"{name} (a device function)"
        if obj is not None and intrinsic(obj) is not None:
            return name
    return None


def _filled(cell: Any) -> bool:
    try:
        cell.cell_contents  # noqa: B018 - an empty cell raises
    except ValueError:
        return False
    return True


def _names_used(code: Any) -> list[str]:
    """The global and free names a code object and the functions it defines use."""
    found = [*code.co_names, *code.co_freevars]
    for const in code.co_consts:
        if hasattr(const, "co_names"):
            found += _names_used(const)
    return found
