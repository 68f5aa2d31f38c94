"""Compiled kernels kept for reuse: in this process by content, and on disk between processes.

A kernel's compiled driver depends only on what the transform produced (the rewritten source of
the kernel and its device functions, the values of the globals they use, the driver's shape) and
on the simulator's own code. `content_key` hashes exactly that, so

- compiling the same source again (a notebook cell run twice, `exercises.check` in a loop, a new
  backend) reuses the compiled code instead of building it again: the process keeps the latest
  `MEMORY_LIMIT` drivers, and memory stays flat however often a kernel is recompiled;
- with a cache directory, the driver is compiled by Numba with `cache=True` from a file named by
  its key, so the next process loads the machine code instead of compiling (seconds become tens
  of milliseconds). Signatures numba-cuda's typing accepted are written beside it, so a warm
  launch skips that check too. A kernel whose globals cannot be fingerprinted (an arbitrary
  object) is compiled in memory only.

The directory is `$GPUKIT_CACHE_DIR`, else `$XDG_CACHE_HOME/gpukit` or `~/.cache/gpukit`;
`GPUKIT_CACHE_DIR=off` (or an unwritable directory) keeps everything in memory. The directory
keeps the `DISK_LIMIT` most recently used kernels; older ones are deleted as new ones come.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sys
import tempfile
import time
import types as pytypes
import warnings
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None

MEMORY_LIMIT = 256  # compiled drivers kept in this process (least recently used dropped first)
LOCK_WAIT_S = 120.0  # the longest a compile waits for another process's compile of its kernel
DISK_LIMIT = 500  # kernels kept in the cache directory (about 200 KB each; least recent go)
_MODULE_PREFIX = "_gpukit_kernel_"
_OFF = ("off", "0", "none", "false")


class _Unhashable(Exception):
    """A global whose value cannot be fingerprinted: the kernel is not cached by content."""


# -- content keys ------------------------------------------------------------------------------
def fingerprint(value: Any) -> str:
    """A stable text for a value a kernel's globals hold (Numba freezes them at compile time).

    Raises _Unhashable for objects whose content cannot be told from the object itself."""
    from .transform import Unit

    if isinstance(value, Unit):  # a device function the kernel calls: its own globals are in
        return f"unit:{value.name}:{value.source}"  # the key as every unit's are (recursion)
    if value is None or isinstance(value, (bool, int, float, complex, str, bytes)):
        return f"{type(value).__name__}:{value!r}"
    if isinstance(value, np.ndarray):
        digest = hashlib.sha256(np.ascontiguousarray(value).view(np.uint8).data).hexdigest()
        return f"array:{value.dtype.str}:{value.shape}:{digest}"
    if isinstance(value, (np.generic, np.dtype)):
        return f"{type(value).__name__}:{value!r}"
    if isinstance(value, (tuple, list)):
        inner = ",".join(fingerprint(v) for v in value)
        return f"{type(value).__name__}:({inner})"
    if isinstance(value, pytypes.ModuleType):
        return f"module:{value.__name__}"
    module = getattr(value, "__module__", None)
    qualname = getattr(value, "__qualname__", None)
    if module and qualname and not isinstance(value, pytypes.FunctionType) \
            and _importable(module, qualname, value):
        return f"ref:{module}.{qualname}"  # builtins, classes, Numba's functions and types
    if type(value).__module__.startswith("numba") and hasattr(value, "key"):
        return f"numba:{value!r}"  # a Numba type instance (float32, int64[:], ...)
    raise _Unhashable(repr(type(value)))


def _importable(module: str, qualname: str, value: Any) -> bool:
    obj: Any = sys.modules.get(module)
    for part in qualname.split("."):
        obj = getattr(obj, part, None)
    return obj is value


def _unit_text(unit: Any) -> str:
    items = sorted((k, fingerprint(v)) for k, v in unit.namespace.items())
    return unit.source + "\n" + repr(items)


def content_key(units: list, driver: str, options: dict) -> str | None:
    """The key of a kernel's compiled code, or None when a global defeats fingerprinting."""
    try:
        parts = [_unit_text(u) for u in units]
    except _Unhashable:
        return None
    text = "\n\0".join([engine_version(), repr(sorted(options.items())), driver, *parts])
    return hashlib.sha256(text.encode()).hexdigest()[:32]


_ENGINE: list[str] = []


def engine_version() -> str:
    """The simulator's own code and the versions it compiles with: a change drops every key."""
    if not _ENGINE:
        import numba
        digest = hashlib.sha256()
        for path in sorted(Path(__file__).parent.glob("*.py")):
            digest.update(path.read_bytes())
        _ENGINE.append(f"{digest.hexdigest()} numba {numba.__version__} numpy {np.__version__} "
                       f"python {sys.version_info[:3]}")
    return _ENGINE[0]


# -- the cache directory --------------------------------------------------------------------
def cache_root() -> Path | None:
    """The gpukit cache directory as the environment sets it (not created), or None when off."""
    setting = os.environ.get("GPUKIT_CACHE_DIR")
    if setting is not None and setting.strip().lower() in _OFF + ("",):
        return None
    if setting:
        return Path(setting).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "gpukit"


def cache_dir() -> Path | None:
    """Where compiled kernels are kept between processes, or None (kept in memory only)."""
    root = cache_root()
    return None if root is None else writable_folder(root / "kernels")


def writable_folder(path: Path) -> Path | None:
    """`path`, created if need be, or None when it cannot be created or written."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return path if os.access(path, os.W_OK) else None


def _write_once(path: Path, text: str) -> None:
    """Write `text` to `path` unless it is there already (Numba's cache checks the file's time:
    it must not change once written); concurrent writers each replace it atomically."""
    if path.exists():
        return
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".py")
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    os.replace(tmp, path)


# -- compiled drivers, by key -------------------------------------------------------------------
class CompiledKernels:
    """The process's compiled drivers by content key, least recently used dropped first."""

    def __init__(self, limit: int = MEMORY_LIMIT):
        self.limit = limit
        self._entries: OrderedDict[str, Any] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: str) -> Any:
        entry = self._entries.get(key)
        if entry is not None:
            self._entries.move_to_end(key)
        return entry

    def put(self, key: str, entry: Any) -> None:
        self._entries[key] = entry
        self._entries.move_to_end(key)
        while len(self._entries) > self.limit:
            old, _ = self._entries.popitem(last=False)
            for name in [m for m in sys.modules if m.startswith(_MODULE_PREFIX + old)]:
                del sys.modules[name]



COMPILED = CompiledKernels()


def module_namespace(key: str | None, tag: str, namespace: dict) -> dict:
    """The globals to run generated code in. With a key, they are a module's (registered in
    sys.modules under a name derived from the key) so that Numba can cache the code and find
    its globals again when it loads it from disk."""
    if key is None:
        return namespace
    name = f"{_MODULE_PREFIX}{key}_{tag}"
    module = pytypes.ModuleType(name)
    module.__dict__.update(namespace)
    sys.modules[name] = module
    return module.__dict__


def is_kernel_module(name: str) -> bool:
    """Whether a module named `name` holds code the simulator generated from a kernel."""
    return name.startswith(_MODULE_PREFIX)


def driver_code(key: str | None, source: str, label: str) -> tuple[Any, bool]:
    """The driver's `source` compiled to Python code, and whether Numba may cache what it
    compiles from it on disk. With a key and a cache directory the code comes from a file named
    by the key, so that Numba can cache what it compiles there."""
    folder = cache_dir() if key is not None else None
    if folder is None:
        return compile(source, label, "exec"), False
    path = folder / f"k{key}.py"
    try:
        IN_USE.add(key)
        if not path.exists():
            prune(folder)
        _write_once(path, source + "\n")
        (folder / f"k{key}.typed").touch()  # its time says when it was last used (see prune)
    except OSError:
        return compile(source, label, "exec"), False
    return compile(source + "\n", str(path), "exec"), True  # the file's text


IN_USE: set[str] = set()  # keys this process compiled from the cache directory


@contextlib.contextmanager
def saving(key: str | None) -> Iterator[None]:
    """Held while a kernel's driver is loaded or compiled for a signature, and saved. Numba keeps
    all signatures of one function in one index, which it reads, extends and writes back with
    no lock: two processes saving different signatures of one kernel at once (two notebooks,
    two test workers) could both number theirs 1 and leave the index pointing one signature at
    the other's machine code. So processes take turns on the kernel's lock file (the second
    then loads what the first saved, when it is the same signature). One that holds it for more
    than LOCK_WAIT_S (a process stopped in a debugger) is not waited for longer. Taken after
    Numba's compiler lock, which the compile takes too, so that threads of one process cannot
    wait on each other in the opposite order. Without file locks (Windows) nothing is locked."""
    from numba.core.compiler_lock import global_compiler_lock

    folder = cache_dir() if key is not None and fcntl is not None else None
    handle = None
    if folder is not None:
        with contextlib.suppress(OSError):
            handle = open(folder / f"k{key}.lock", "a")  # noqa: SIM115 - closed below
    if handle is None:
        yield
        return
    with global_compiler_lock, handle:  # closing the file lets go of the lock
        deadline = time.monotonic() + LOCK_WAIT_S
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    break
                time.sleep(0.01)
        yield


def prune(folder: Path, keep: int | None = None) -> int:
    """Delete the least recently used kernels beyond the latest `keep` (DISK_LIMIT), except
    those this process uses; returns how many went. A kernel's files: k<key>.py, k<key>.typed,
    k<key>.lock and Numba's __pycache__/k<key>.*."""
    keep = DISK_LIMIT if keep is None else keep
    used = sorted(folder.glob("k*.typed"), key=lambda p: p.stat().st_mtime, reverse=True)
    gone = 0
    for marker in used[keep:]:
        stem = marker.stem
        if stem[1:] in IN_USE:  # this process compiled it: Numba may still save to it
            continue
        for path in [folder / f"{stem}.py", marker, folder / f"{stem}.lock",
                     *(folder / "__pycache__").glob(f"{stem}.*")]:
            with contextlib.suppress(OSError):
                path.unlink()
        gone += 1
    return gone


def typechecked(key: str | None, signature: str) -> bool:
    """Whether numba-cuda's typing accepted this kernel for `signature` in an earlier process."""
    folder = cache_dir() if key is not None else None
    if folder is None:
        return False
    try:
        return signature in (folder / f"k{key}.typed").read_text().splitlines()
    except OSError:
        return False


def remember_typechecked(key: str | None, signature: str) -> None:
    """Note that numba-cuda's typing accepted this kernel for `signature` (see typechecked)."""
    folder = cache_dir() if key is not None else None
    if folder is None or typechecked(key, signature):
        return
    try:
        with open(folder / f"k{key}.typed", "a") as handle:
            handle.write(signature + "\n")
    except OSError:
        pass


@contextlib.contextmanager
def quiet_driver_warnings() -> Iterator[None]:
    """Numba's warnings while it compiles a kernel's driver are about gpukit's generated code
    (numba-cuda's typing of the user's code gave theirs), and it warns when it cannot cache a
    function (a large global array), which just compiles in memory: none is the user's concern."""
    from numba.core.errors import NumbaWarning
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NumbaWarning)
        yield


# (key, signature, numba-cuda's settings) -> (numba-cuda's types, its warnings)
_TYPINGS: OrderedDict = OrderedDict()


def typed_under_other_settings(key: str | None, signature: str) -> bool:
    """Whether this kernel (by content) was typed in this process for `signature` under other
    numba-cuda settings than the present ones (it is typed again, as numba-cuda would be)."""
    return any(entry[:2] == (key, signature) for entry in _TYPINGS) and \
        (key, signature, _typing_settings()) not in _TYPINGS


def typed_before(key: str | None, signature: str) -> dict | None:
    """numba-cuda's types of this kernel (by content) for `signature` from a typing earlier in
    this process, whose warnings are given again, as numba-cuda warns at each compile of a new
    function (a cell run again); None when it was not typed in this process under numba-cuda's
    present settings (its warnings depend on them: `ALWAYS_WARN_UNINIT_VAR`)."""
    entry = (key, signature, _typing_settings())
    found = _TYPINGS.get(entry) if key is not None else None
    if found is None:
        return None
    _TYPINGS.move_to_end(entry)
    _reissue(found[1])
    return found[0]


@contextlib.contextmanager
def typing_warnings() -> Iterator[list]:
    """Run numba-cuda's typing of a kernel under this: the warnings it gives are collected in
    the list it yields (every one) and reach the user when it ends, through their filters."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            yield caught
        finally:
            found = list(caught)
    _reissue(found)


def remember_typing(key: str | None, signature: str, typemap: dict, found: list) -> None:
    """Keep a typing and its warnings for `typed_before` (the latest MEMORY_LIMIT)."""
    if key is None:
        return
    _TYPINGS[(key, signature, _typing_settings())] = (typemap, list(found))
    while len(_TYPINGS) > MEMORY_LIMIT:
        _TYPINGS.popitem(last=False)


def _typing_settings() -> tuple:
    """numba-cuda's settings (`numba.cuda.config`'s plain values) as they are now."""
    from numba.cuda.core import config
    return tuple((name, value) for name, value in vars(config).items() if name.isupper()
                 and isinstance(value, (bool, int, float, str, type(None))))


def _reissue(found: list) -> None:
    for w in found:
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
