"""The simulator's own compiled functions, kept on disk between processes.

Every kernel's compiled driver calls the engine's helpers (`access.touch`, `sync.begin_thread`,
the element accesses, ...), which Numba compiles once per process for each set of argument
types: they took most of a process's first launch of a new kernel (a vector add: about 6 s of
8). Numba caches a function compiled with `cache=True`, but beside its source file and checked
only against that file's time, while the helpers use constants and functions of other modules
(`layout`, `lowlevel`). So the engine's functions (`enroll`: those `lowlevel.register_jitable`
declares, the implementations that the overloads `lowlevel.overload(..., cached=True)` declares
return, and `njit` below) are cached by the locator here instead: in the gpukit cache directory
(`cache.cache_root()`), in a folder named by the version of the whole engine
(`cache.engine_version()`: its source, Numba, numpy, Python), so that any change to any of them
starts a fresh folder. The three most recently used folders are kept. With the cache off
(`GPUKIT_CACHE_DIR=off`, or an unwritable directory) they are kept in a folder of this
process's own, deleted when it exits: nothing outlives it, as the setting says.

Numba offers no public hook for where a function's cache lies; the locator is put first in the
list of its cache implementation's locators (`numba.core.caching.CacheImpl`) and claims only
the functions enrolled here. Where `NUMBA_CACHE_LOCATOR_CLASSES` replaces that list, the engine
compiles its functions without caching them (`CACHING` is False), since Numba's own locators
would check only each function's own file.
"""

from __future__ import annotations

import atexit
import hashlib
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from types import CodeType
from typing import Any
from weakref import WeakSet

import numba
from numba.core import config
from numba.core.caching import CacheImpl, _CacheLocator
from numba.core.serialize import dumps

from . import cache

KEEP = 3  # engine versions whose folders are kept (the most recently used)
CACHING = not config.CACHE_LOCATOR_CLASSES

_ENROLLED: dict[Any, str] = {}  # the engine's functions' code objects -> their disambiguators
_TAGGED: dict[Callable, str] = {}  # functions built with exec -> their disambiguators
_EXPECTED: dict[Any, str] = {}  # code objects -> the argument types they are compiled for next
_FOLDERS: dict[tuple, Path] = {}  # (cache root, engine version) -> its folder
_NAMED: WeakSet = WeakSet()  # the functions `_name_apart` has seen


def enroll(fn: Callable, tag: str | None = None) -> bool:
    """Mark `fn` as one of the engine's functions; whether Numba may cache it on disk.

    Numba tells cached functions of one name apart by their bytecode and closure, and by a
    disambiguator; bytecode alone does not tell `np.ceil(x)` from `np.floor(x)` (two lambdas
    on one line), nor `obj.shape[0]` from `obj.shape[1]`, which differ only in the names and
    constants it refers to. The disambiguator here is `tag` (by default the line `fn` starts at
    in its file) and a digest of the whole code. A function built with `exec` has no file whose
    version says what its globals are, so it needs a `tag` that names its source and globals
    (it is kept for that function, not for its code: the same text may run with other globals)."""
    code = fn.__code__
    if tag is not None:
        _TAGGED.setdefault(fn, f"{tag}-{_code_digest(code)}")
    elif fn not in _TAGGED and code not in _ENROLLED:
        if code.co_filename.startswith("<"):
            raise ValueError(f"{fn.__qualname__} was built with exec ({code.co_filename}): "
                             "enroll it with a tag naming its source before it is cached")
        _ENROLLED[code] = f"{code.co_firstlineno}-{_code_digest(code)}"
    _name_apart(fn)
    return CACHING


def _name_apart(fn: Callable) -> None:
    """Give `fn` a qualified name of its own when it shares one with functions that compute
    something else. Numba names a compiled function by its module, qualified name and argument
    types, and a counter of the process that compiled it ("the mangled name must be unique,
    else the wrong function can be chosen at link time"). The functions one factory makes
    (closures such as the coordinate getters, lambdas, implementations built with exec) share
    module and qualified name, so two of them compiled by different processes and loaded from
    this cache into a third could share a symbol, and a driver that calls both would run one
    twice (it did: blockDim.x read as gridDim.x). Their names get a digest of what tells them
    apart, the same in every process: their tag or code and the values they capture."""
    if fn in _NAMED:
        return
    qualname = fn.__qualname__
    if fn in _TAGGED or "<locals>" in qualname or "<lambda>" in qualname:
        fn.__qualname__ = f"{qualname}__{identity(fn)[:12]}"
    _NAMED.add(fn)


def identity(fn: Callable) -> str:
    """A digest of what an enrolled function computes: its tag (built with exec) or its line
    and code, and the values it captures."""
    cells = tuple(cell.cell_contents for cell in fn.__closure__ or ())
    found = (_TAGGED.get(fn) or _ENROLLED[fn.__code__]).encode()
    return hashlib.sha256(found + (dumps(cells) if cells else b"")).hexdigest()


def named() -> list[Callable]:
    """The functions enrolled so far in this process (with the names `_name_apart` gave)."""
    return list(_NAMED)


def _code_digest(code: CodeType) -> str:
    """A digest of all a code object says: its bytecode, names and constants (nested code too)."""
    digest = hashlib.sha256()

    def add(c: CodeType) -> None:
        digest.update(c.co_code)
        digest.update(repr((c.co_names, c.co_varnames, c.co_freevars, c.co_cellvars)).encode())
        for const in c.co_consts:
            if isinstance(const, CodeType):
                add(const)
            elif isinstance(const, frozenset):  # (its order varies with string hashing)
                digest.update(repr(sorted(map(repr, const))).encode())
            else:
                digest.update(repr(const).encode())
    add(code)
    return digest.hexdigest()[:12]


def expect(fn: Callable, arg_types: Any) -> None:
    """Say that Numba is about to make a dispatcher for `fn` to compile it for `arg_types`
    (an overload's implementation: Numba makes one for each set of argument types): its cache
    index is then one of its own. Numba numbers the data files of one index in the order they
    are saved, and two processes that save different signatures of one function at once can
    each number theirs 1, leaving an index that points a signature at the other's code; with
    an index for each signature (and each closure: Numba's key has the values it captures, as
    pickled here), two processes can only write the same entry."""
    cells = tuple(cell.cell_contents for cell in fn.__closure__ or ())
    digest = hashlib.sha256(repr(arg_types).encode() + (dumps(cells) if cells else b""))
    _EXPECTED[fn.__code__] = digest.hexdigest()[:12]


def njit(**options: Any) -> Callable:
    """`numba.njit` for one of the engine's own dispatchers (called from drivers, not inlined),
    cached here rather than beside its file."""
    def decorate(fn: Callable) -> Any:
        return numba.njit(cache=enroll(fn), **options)(fn)
    return decorate


def folder() -> Path:
    """Where this engine version's compiled functions are kept (see the module's text)."""
    key = (cache.cache_root(), cache.engine_version())
    found = _FOLDERS.get(key)
    if found is None or not found.is_dir():
        found = _FOLDERS[key] = _version_folder(*key) or _process_folder()
    return found


def _version_folder(root: Path | None, version: str) -> Path | None:
    if root is None:
        return None
    digest = hashlib.sha256(version.encode()).hexdigest()[:16]
    path = cache.writable_folder(root / "engine" / digest)
    if path is not None:
        path.touch()  # its time says when it was last used
        _prune(path.parent)
    return path


def _prune(parent: Path, keep: int = KEEP) -> None:
    """Delete the folders of all but the `keep` most recently used engine versions."""
    folders = sorted((p for p in parent.iterdir() if p.is_dir()),
                     key=lambda p: p.stat().st_mtime, reverse=True)
    for old in folders[keep:]:
        shutil.rmtree(old, ignore_errors=True)


def _process_folder() -> Path:
    path = Path(tempfile.mkdtemp(prefix="gpukit-engine-"))
    atexit.register(shutil.rmtree, path, True)
    return path


class EngineLocator(_CacheLocator):
    """Numba's cache locator for the engine's functions (see the module's text)."""

    def __init__(self, py_func: Callable):
        self._path = folder()
        code = py_func.__code__
        tag = _TAGGED.get(py_func) or _ENROLLED[code]
        expected = _EXPECTED.pop(code, None)
        self._tag = tag if expected is None else f"{tag}-{expected}"

    def get_cache_path(self) -> str:
        return str(self._path)

    def get_source_stamp(self) -> str:
        return cache.engine_version()

    def get_disambiguator(self) -> str:
        return self._tag

    @classmethod
    def from_function(cls, py_func: Callable, py_file: str) -> EngineLocator | None:
        if py_func not in _TAGGED and getattr(py_func, "__code__", None) not in _ENROLLED:
            return None
        return cls(py_func)


if CACHING and EngineLocator not in CacheImpl._locator_classes:
    CacheImpl._locator_classes.insert(0, EngineLocator)
