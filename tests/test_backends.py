"""The backend contract (the seed interface, MemoryInfo pressure) and the registry."""

from __future__ import annotations

import dataclasses
import importlib
import inspect

import numpy as np
import pytest

import gpukit
from gpukit import backends, timing
from gpukit.backends import Backend, BackendStatus, Capabilities, MemoryInfo
from gpukit.backends.base import HostEvent
from gpukit.errors import (
    ArgumentTypeError,
    BackendUnavailableError,
    GpukitError,
    UnsupportedOperationError,
)

# -- the seed interface ----------------------------------------------------------------------------
P = inspect.Parameter
POSITIONAL, VAR_POSITIONAL = P.POSITIONAL_OR_KEYWORD, P.VAR_POSITIONAL

# Each member's documented parameters (after self), or "property" / "attribute".
SEED_INTERFACE = {
    "name": "property",
    "is_available": "property",
    "compile_kernel": ["func", "signature"],
    "allocate": ["shape", "dtype"],
    "to_device": ["array"],
    "to_host": ["array"],
    "synchronize": [],
    "launch_kernel": ["kernel", "grid", "block", "*args"],
    "get_memory_info": [],
    "supports_feature": ["name"],
    "free": ["array"],
    "capabilities": [],
    "status": [],
    "memory_info": [],
    "supports_device": ["device"],
    "initialize": [],
    "shutdown": [],
    "version": "attribute",
}
OPTIONAL_WITH_DEFAULTS = {"launch_kernel", "get_memory_info", "supports_feature",
                          "supports_device", "initialize", "shutdown"}
BACKEND_CLASSES = ["gpukit.backends.cpu:CPUBackend", "gpukit.backends.cuda:CUDABackend"]


def _documented(params: list[inspect.Parameter]) -> list[str]:
    return [f"*{p.name}" if p.kind is VAR_POSITIONAL else p.name for p in params]


def _load(path: str) -> type:
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


@pytest.mark.parametrize("member", SEED_INTERFACE)
def test_backend_declares_the_seed_interface_exactly(member):
    expected = SEED_INTERFACE[member]
    found = inspect.getattr_static(Backend, member)
    if expected == "property":
        assert isinstance(found, property) and found.fget.__isabstractmethod__
    elif expected == "attribute":
        assert isinstance(found, str)
    else:
        params = list(inspect.signature(found).parameters.values())
        assert params[0].name == "self"
        assert _documented(params[1:]) == expected
        assert all(p.kind in (POSITIONAL, VAR_POSITIONAL) for p in params[1:])
        abstract = getattr(found, "__isabstractmethod__", False)
        assert abstract is (member not in OPTIONAL_WITH_DEFAULTS)


def test_allocate_and_compile_kernel_defaults():
    assert inspect.signature(Backend.allocate).parameters["dtype"].default == "float32"
    assert inspect.signature(Backend.compile_kernel).parameters["signature"].default is None


@pytest.mark.parametrize("path", BACKEND_CLASSES)
@pytest.mark.parametrize("member", SEED_INTERFACE)
def test_backends_keep_the_seed_signatures(path, member):
    """Each backend keeps the documented parameters, in order; anything it adds is optional."""
    cls = _load(path)
    assert issubclass(cls, Backend) and not inspect.isabstract(cls)
    expected = SEED_INTERFACE[member]
    found = inspect.getattr_static(cls, member)
    if expected == "property":
        assert isinstance(found, property)
        return
    if expected == "attribute":
        assert isinstance(getattr(cls(), member), str)
        return
    params = list(inspect.signature(found).parameters.values())[1:]
    assert _documented(params[:len(expected)]) == expected
    for param in params[len(expected):]:
        optional = param.default is not P.empty or param.kind in (P.VAR_POSITIONAL,
                                                                  P.VAR_KEYWORD)
        assert optional, f"{cls.__name__}.{member} adds required parameter {param.name!r}"


@pytest.mark.parametrize("path", BACKEND_CLASSES)
def test_backends_construct_without_arguments_and_never_raise_on_availability(path):
    backend = _load(path)()
    assert isinstance(backend.name, str) and isinstance(backend.is_available, bool)
    assert isinstance(backend.status(), BackendStatus)


# -- MemoryInfo ----------------------------------------------------------------------------------
@pytest.mark.parametrize(("used", "pressure"), [
    (0, "low"), (6999, "low"), (7000, "medium"), (8499, "medium"), (8500, "high"),
    (9499, "high"), (9500, "critical"), (10000, "critical"),
])
def test_memory_pressure_thresholds(used, pressure):
    info = MemoryInfo(free_bytes=10000 - used, total_bytes=10000)
    assert (info.used_bytes, info.pressure) == (used, pressure)
    assert info.used_fraction == used / 10000


def test_memory_info_without_memory_and_as_text():
    assert MemoryInfo(0, 0).used_fraction == 0.0 and MemoryInfo(0, 0).pressure == "low"
    gib = 1024**3
    assert str(MemoryInfo(gib // 4, gib)) == "0.75 GiB used of 1.00 GiB (75.0%, pressure medium)"


def test_contract_records_are_frozen():
    caps = Capabilities(32, 1024, (1024, 1024, 64), (2**31 - 1, 65535, 65535), 48 * 1024,
                        48 * 1024, (7, 5), 40, 16 * 1024**3)
    assert caps.features == frozenset()
    with pytest.raises(dataclasses.FrozenInstanceError):
        caps.warp_size = 64  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        MemoryInfo(1, 2).free_bytes = 3  # type: ignore[misc]


# -- the registry --------------------------------------------------------------------------------
class ToyBackend(Backend):
    """The smallest useful backend: host memory, kernels called as plain functions."""

    def __init__(self, available: bool = True, label: str = "toy"):
        self.available = available
        self.label = label
        self.calls: list[str] = []
        self.unavailable_reason = None if available else "the toy is broken"

    name = property(lambda self: "toy")
    is_available = property(lambda self: self.available)

    def compile_kernel(self, func, signature=None):
        return func

    def allocate(self, shape, dtype="float32"):
        import numpy as np
        return np.zeros(shape, dtype)

    def to_device(self, array):
        return array.copy()

    def to_host(self, array):
        return array.copy()

    def synchronize(self):
        self.calls.append("synchronize")

    def free(self, array):
        self.calls.append("free")

    def capabilities(self):
        return Capabilities(32, 1, (1, 1, 1), (1, 1, 1), 0, 0, (0, 0), 1, 0,
                            frozenset({"toy"}))

    def memory_info(self):
        return MemoryInfo(100, 100)

    def status(self):
        return BackendStatus(self.name, self.initialized, self.label, 0, 0)

    def initialize(self):
        self.calls.append("initialize")
        return super().initialize()

    def shutdown(self):
        self.calls.append("shutdown")
        super().shutdown()


@pytest.fixture(autouse=True)
def clean_registry(monkeypatch):
    """Each test gets its own copy of the registry, and no GPUKIT_BACKEND from outside."""
    monkeypatch.setattr(backends, "_FACTORIES", dict(backends._FACTORIES))
    monkeypatch.setattr(backends, "_INSTANCES", {})
    monkeypatch.setattr(backends, "_current", None)
    monkeypatch.delenv("GPUKIT_BACKEND", raising=False)


def test_unknown_backend_name():
    with pytest.raises(backends.UnknownBackendError,
                       match="^unknown backend 'tpu'; known backends: auto, cpu, cuda$"):
        gpukit.get_backend("tpu")
    with pytest.raises(KeyError):  # also a KeyError, and a GpukitError
        gpukit.get_backend("tpu")
    assert issubclass(backends.UnknownBackendError, GpukitError)
    with pytest.raises(TypeError, match="backend name must be a string, got int"):
        gpukit.get_backend(3)


def test_custom_backend_works_through_get_backend():
    gpukit.register_backend("toy", ToyBackend)
    backend = gpukit.get_backend("toy")
    assert isinstance(backend, ToyBackend)
    assert gpukit.get_backend("TOY") is backend  # one shared instance, names case-insensitive
    assert gpukit.current_backend() is backend
    assert "toy" in gpukit.registered_backends()
    assert gpukit.available_backends()["toy"] is None
    other = gpukit.get_backend("toy", label="second")  # options make a new instance
    assert other is not backend and other.label == "second"
    assert backend.supports_feature("toy") and not backend.supports_feature("tensor_cores")
    assert backend.get_memory_info() == (100, 100)
    assert backend.supports_device("anything") is False


def test_unavailable_custom_backend():
    gpukit.register_backend("toy", lambda: ToyBackend(available=False))
    with pytest.raises(BackendUnavailableError,
                       match="^backend 'toy' cannot be used: the toy is broken$"):
        gpukit.get_backend("toy")
    assert gpukit.available_backends()["toy"] == "the toy is broken"


def test_gpukit_backend_overrides_auto(monkeypatch):
    gpukit.register_backend("toy", ToyBackend)
    monkeypatch.setenv("GPUKIT_BACKEND", "toy")
    assert isinstance(gpukit.get_backend("auto"), ToyBackend)
    assert isinstance(gpukit.get_backend(), ToyBackend)
    monkeypatch.setenv("GPUKIT_BACKEND", "nope")
    with pytest.raises(backends.UnknownBackendError,
                       match="^GPUKIT_BACKEND='nope' names an unknown backend; known backends: "
                             "auto, cpu, cuda, toy$"):
        gpukit.get_backend()


@pytest.mark.parametrize(("name", "factory", "error", "message"), [
    ("", ToyBackend, ValueError, "must be a non-empty string other than 'auto', got ''"),
    ("auto", ToyBackend, ValueError, "other than 'auto', got 'auto'"),
    ("AUTO", ToyBackend, ValueError, "other than 'auto', got 'AUTO'"),
    (3, ToyBackend, TypeError, "backend name must be a string, got int"),
    ("toy", 42, TypeError, "factory for backend 'toy' must be callable, got 42"),
])
def test_register_backend_rejects_bad_arguments(name, factory, error, message):
    with pytest.raises(error, match=message):
        gpukit.register_backend(name, factory)
    assert "toy" not in gpukit.registered_backends()


def test_available_backends_never_raises():
    def broken():
        raise RuntimeError("boom")
    gpukit.register_backend("broken", broken)
    report = gpukit.available_backends()
    assert report["broken"] == "RuntimeError: boom"
    assert set(report) == {"cpu", "cuda", "broken"}
    assert report["cpu"] is None


def test_register_backend_replaces_an_earlier_one():
    gpukit.register_backend("toy", ToyBackend)
    first = gpukit.get_backend("toy")
    gpukit.register_backend("toy", lambda: ToyBackend(label="replacement"))
    assert gpukit.get_backend("toy") is not first
    assert gpukit.get_backend("toy").label == "replacement"


def test_context_manager_initializes_and_shuts_down():
    gpukit.register_backend("toy", ToyBackend)
    with gpukit.get_backend("toy") as backend:
        assert backend.initialized and backend.calls == ["initialize"]
    assert not backend.initialized and backend.calls == ["initialize", "shutdown"]


# -- the contract's defaults: what a backend that simulates and logs nothing says ---------------
def test_the_contracts_defaults_describe_a_plain_backend():
    toy = ToyBackend()
    assert (toy.is_simulated, toy.profile, toy.event_kind, toy.device_name) == (
        False, None, "wall", "toy")
    assert toy.launches == [] and toy.transfers == [] and toy.timeline() == []
    assert not toy.owns(np.zeros(2)) and toy.stream_label(None) == 0 and toy.stream_label(0) == 0
    assert not toy.supports_feature(["toy"]) and toy.supports_feature("toy")
    start = toy.record_event()
    assert isinstance(start, HostEvent) and start.elapsed_ms(toy.record_event()) >= 0
    assert toy.calls == ["synchronize", "synchronize"]
    for call, message in [
            (toy.stream, "backend 'toy' has no streams"),
            (lambda: toy.pinned_array(4), "backend 'toy' has no pinned host memory"),
            (lambda: toy.time_copies("h2d", 4, False, 1), "backend 'toy' cannot time copies")]:
        with pytest.raises(UnsupportedOperationError, match=message):
            call()
    with pytest.raises(ArgumentTypeError, match="backend 'toy' has only the default stream"):
        toy.stream_label("s")


def test_gpukit_works_with_a_plain_backend_through_the_contract():
    toy = ToyBackend()
    with timing.timer(toy, label="nothing") as t:
        pass
    assert t.timing.kind == "wall" and t.timing.label == "nothing"
    assert timing.launch_log(toy) == []
    with pytest.raises(UnsupportedOperationError, match="cannot time copies"):
        timing.bandwidth_sweep(toy, sizes=[1024])
    with pytest.raises(gpukit.trace.TraceError, match="backend 'toy' runs kernels where"):
        gpukit.trace.tracing(toy)
