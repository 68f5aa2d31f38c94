"""Types and functions made with numba-cuda's extension API, in simulated kernels.

numba-cuda's extension API (`numba.cuda.extending`: `typeof_impl`, `register_model`,
`type_callable`, `lower_builtin`, `make_attribute_wrapper`, attribute templates and `lower_attr`)
registers with numba-cuda's own registries, for the CUDA target. The simulator types and compiles
kernels with Numba's CPU target, whose registries are Numba's, so a kernel building an
`Interval` of the extension docs' example would not type. `mirror_cuda_extensions()` copies
every registration a program made (not numba-cuda's library's own, which the simulator
implements itself) into Numba's registries:

- how values of a Python class are typed (`typeof_impl`) and how a type is laid out (its data
  model), for the types the program defined;
- typing: calls of the program's functions and classes (as "cpu" templates that apply only while
  the simulator compiles a kernel, so Numba's own `njit` functions resolve as before), its
  templates for functions it does not own (`operator.add` of two of its types) and attributes
  of its types;
- lowering: the implementations of those calls, attributes and casts, which are LLVM IR built
  through the same `context` and `builder` interfaces on either target.

Overloads (`@overload(..., target="cuda")`) are mirrored by `gpukit.sim.overloads`.
"""

from __future__ import annotations

import weakref
from typing import Any

from .overloads import is_programs, known_registries, simulator_only

_SEEN: dict = {}  # (registry id, list name) -> how many of its entries were looked at


def _new(registry: Any, kind: str) -> list:
    """The entries added to `registry.kind` (a list registrations are appended to) since the
    last look."""
    entries = getattr(registry, kind)
    seen = _SEEN.get((id(registry), kind), 0)
    _SEEN[(id(registry), kind)] = len(entries)
    return entries[seen:]


def _own(registries: Any, kind: type) -> list:
    """numba-cuda's registries among a context's (it also loads some of Numba's)."""
    return [r for r in list(registries) if isinstance(r, kind)]


def mirror_cuda_extensions() -> None:
    """Copy the program's registrations with numba-cuda's extension API into Numba's."""
    from numba.core import types
    from numba.core.datamodel import registry as models
    from numba.core.imputils import builtin_registry as lowering
    from numba.core.typing import templates
    from numba.core.typing.typeof import typeof_impl
    from numba.cuda.core import imputils as cuda_lowering
    from numba.cuda.descriptor import cuda_target
    from numba.cuda.typing import templates as cuda_templates
    from numba.cuda.typing.typeof import typeof_impl as cuda_typeof_impl

    for cls, typer in list(cuda_typeof_impl.registry.items()):
        if is_programs(cls) and cls not in typeof_impl.registry:
            typeof_impl.register(cls)(typer)
    cuda_models = cuda_target.target_context.data_model_manager._handlers
    for cls, model in list(cuda_models.items()):
        if is_programs(cls) and cls not in models.default_manager._handlers:
            models.register_default(cls)(model)

    typing = known_registries(cuda_target.typing_context, cuda_templates.Registry)
    for registry in _own(typing, cuda_templates.Registry):
        for func, ftype in _new(registry, "globals"):
            if not isinstance(ftype, types.Function):
                continue
            own = [t for t in ftype.templates if getattr(t, "_overload_func", None) is None]
            if not is_programs(func):  # the program's typing of a function it does not own, as
                for template in own:  # `operator.add` of two of its types, added to Numba's
                    if any(is_programs(cls) for cls in template.__mro__):  # (register_global
                        templates.infer_global(func, types.Function(  # subclasses the class)
                            simulator_only(template, "apply")))
            elif own:  # overloads: gpukit.sim.overloads
                templates.infer_global(func, types.Function(simulator_only(own[0], "apply")))
                for template in own[1:]:
                    templates.infer(simulator_only(template, "apply"))
        for template in _new(registry, "attributes"):  # (method overloads: overloads.py)
            if getattr(template, "_overload_func", None) is None and \
                    is_programs(getattr(template, "key", None)):  # numba-cuda's template class
                templates.infer_getattr(  # is its own: Numba's registry takes its own
                    type(template.__name__, (template, templates.AttributeTemplate), {}))

    target = known_registries(cuda_target.target_context, cuda_lowering.Registry)
    for registry in _own(target, cuda_lowering.Registry):
        for impl, key, sig in _new(registry, "functions"):
            if is_programs(key) or any(is_programs(t) for t in sig):
                lowering.functions.append((impl, key, sig))
        for kind in ("getattrs", "setattrs"):
            for impl, attr, sig in _new(registry, kind):
                if any(is_programs(t) for t in sig):
                    getattr(lowering, kind).append((impl, attr, sig))
        for impl, sig in _new(registry, "casts"):
            if any(is_programs(t) for t in sig):
                lowering.casts.append((impl, sig))
        for impl, sig in _new(registry, "constants"):
            if any(is_programs(t) for t in sig):
                lowering.constants.append((impl, sig))


_INTRINSICS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # numba-cuda's -> Numba's


def cpu_intrinsic(obj: Any) -> Any:
    """Numba's intrinsic made from the definition of `obj`, an intrinsic of the program's made
    with numba-cuda's `@intrinsic` (which Numba's CPU target does not resolve); None for
    anything else. The definition's code generation builds LLVM IR through `context` and
    `builder`, the same on either target."""
    from numba.core.extending import intrinsic
    from numba.cuda.extending import _Intrinsic

    if not isinstance(obj, _Intrinsic) or not is_programs(obj._defn):
        return None
    found = _INTRINSICS.get(obj)
    if found is None:
        options = {k: v for k, v in obj._ctor_kwargs.items() if k != "target"}
        found = _INTRINSICS[obj] = intrinsic(prefer_literal=obj._prefer_literal,
                                             **options)(obj._defn)
    return found


def layout(ty: Any) -> Any:
    """How an element of `ty`, a type with no numpy dtype, lies in an array: raw bytes (a numpy
    void dtype) of its data model's size on Numba's CPU target, which for the program's types
    is the model numba-cuda lays them out by (`mirror_cuda_extensions`); None for a type with
    no data model. ValueError for one aligned past 8 bytes (every array the simulator declares
    starts on 8; numba-cuda's data models of structs of numbers need no more)."""
    import numpy as np
    from numba.core.registry import cpu_target

    mirror_cuda_extensions()
    context = cpu_target.target_context
    try:
        data = context.get_data_type(ty)
    except (KeyError, NotImplementedError):  # no data model registered for it
        return None
    align = context.get_abi_alignment(data)
    if align > 8:
        raise ValueError(f"an array of {ty}, whose data model aligns it to {align} bytes")
    return np.dtype((np.void, context.get_abi_sizeof(data)))
