"""The source of functions built with `exec(text)`: numba-cuda's own tests and many libraries
generate kernels from strings, and such a function's code names only "<string>", which
`inspect.getsource` cannot read.

An audit hook (PEP 578) keeps the distinct texts given to `compile`/`exec` under a name that is
not a real file ("<string>", "<kernel>", ...; not the simulator's own code, nor text already in
`linecache`, as IPython puts its cells); `function_lines` finds the newest one that compiled a
given function (same name, first line, bytecode, names and constants) and returns its lines. The hook is installed once, when gpukit is imported, so a
kernel must be built after `import gpukit`; the texts kept are bounded by `KEEP_BYTES` (the
oldest go first: numba-cuda's kernel tests, for one, exec about 0.3 MB of distinct text per
module, most of it Numba's own generated code).
"""

from __future__ import annotations

import inspect
import linecache
import sys
import types
from collections.abc import Callable

KEEP_BYTES = 4 << 20
_TEXTS: dict[tuple, None] = {}  # (filename, text), oldest first
_kept_bytes = 0
_matching = False  # compiling recorded texts to match them is not recorded again


def _record(event: str, args: tuple) -> None:
    global _kept_bytes
    if event != "compile" or len(args) != 2 or _matching:
        return
    text, filename = args
    if (not isinstance(filename, str) or not filename.startswith("<")
            or filename.startswith("<gpukit ") or filename in linecache.cache
            or not isinstance(text, (str, bytes))):
        return  # not exec'd text, or text inspect finds anyway (IPython registers its cells)
    key = (filename, text)
    if _TEXTS.pop(key, 0) is None:  # seen before: it becomes the newest
        _kept_bytes -= len(text)
    _TEXTS[key] = None
    _kept_bytes += len(text)
    while _kept_bytes > KEEP_BYTES and len(_TEXTS) > 1:
        oldest = next(iter(_TEXTS))
        del _TEXTS[oldest]
        _kept_bytes -= len(oldest[1])


def kept_bytes() -> int:
    """The size of the texts kept now (at most KEEP_BYTES, or one text if that is larger)."""
    return _kept_bytes


def _code_objects(code: types.CodeType):
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _code_objects(const)


def _identity(code: types.CodeType) -> tuple:
    return (code.co_name, code.co_firstlineno, code.co_code, code.co_names, code.co_consts,
            code.co_varnames)


def function_lines(func: Callable) -> tuple[list[str], int] | None:
    """(the lines of `func`'s definition, its first line number) from the newest recorded text
    that compiled the very same code, or None."""
    global _matching
    code = getattr(func, "__code__", None)
    if code is None:
        return None
    wanted = _identity(code)
    name, name_bytes = code.co_name, code.co_name.encode()
    for filename, text in reversed(_TEXTS):
        if filename != code.co_filename or (name_bytes if isinstance(text, bytes) else name) \
                not in text:
            continue
        _matching = True
        try:
            module = compile(text, filename, "exec", dont_inherit=True)
        except (SyntaxError, ValueError):
            continue
        finally:
            _matching = False
        if any(_identity(c) == wanted for c in _code_objects(module)):
            if isinstance(text, bytes):
                text = text.decode("utf-8", "replace")
            lines = text.splitlines(keepends=True)
            return inspect.getblock(lines[code.co_firstlineno - 1:]), code.co_firstlineno
    return None


sys.addaudithook(_record)
