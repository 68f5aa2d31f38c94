"""CUDA event timing queued behind a sleeping kernel (gpukit.backends._cuda_hold), checked with a
stand-in for numba.cuda: what it launches and records, and when it says the host's enqueue
latency is in the times. benchmarks/GPU.md has the effect on an H200 (a 65,536-element kernel:
0.051 ms timed as queued, 0.0042 ms held)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from gpukit.backends import _cuda_hold
from gpukit.backends._cuda_hold import HELD_NOTE, PER_ITEM_MS, UNHELD_NOTE, event_times


class FakeCuda:
    """numba.cuda as far as event_times uses it; `gate_done` answers each hold's gate query."""

    def __init__(self, gate_done: list[bool]):
        self.gate_done = list(gate_done)
        self.log: list = []
        self.holds: list[int] = []

    def event(self):
        cuda = self
        index = len([e for e in self.log if e[0] == "event"])
        self.log.append(("event", index))

        class Event:
            def record(self, stream):
                cuda.log.append(("record", index, stream))

            def query(self):
                return cuda.gate_done.pop(0)

            def synchronize(self):
                pass

            def elapsed_time(self, other):
                return 0.25
        return Event()

    def jit(self, func):
        cuda = self

        class Launcher:
            def __getitem__(self, config):
                assert config[:2] == (1, 1)
                return lambda ns: cuda.holds.append(ns)
        return Launcher()


@pytest.fixture(autouse=True)
def fresh_kernels(monkeypatch):
    monkeypatch.setattr(_cuda_hold, "_KERNELS", {})


def backend(cuda: FakeCuda, cc=(9, 0)):
    return SimpleNamespace(simulator=False, compute_capability=cc, require_cuda=lambda: cuda)


def test_the_timed_work_is_queued_behind_one_hold_long_enough_for_it():
    cuda, queued = FakeCuda([False]), []
    samples, note = event_times(backend(cuda), "s", lambda: queued.append(1), 20)
    assert (samples, note, len(queued)) == ([0.25] * 20, HELD_NOTE, 20)
    assert cuda.holds == [int((20 * PER_ITEM_MS + 1.0) * 1e6)]  # 5 ms for 20 launches


def test_a_hold_that_ended_too_soon_is_tried_again_four_times_longer():
    cuda, queued = FakeCuda([True, False]), []
    samples, note = event_times(backend(cuda), "s", lambda: queued.append(1), 3)
    assert (note, len(queued), len(samples)) == (HELD_NOTE, 6, 3)
    assert cuda.holds[1] == 4 * cuda.holds[0]


def test_times_that_include_the_hosts_latency_say_so():
    cuda = FakeCuda([True, True])
    _, note = event_times(backend(cuda), "s", lambda: None, 3)
    assert note == UNHELD_NOTE and len(cuda.holds) == 2


@pytest.mark.parametrize(("cc", "hold"), [((6, 1), True), ((9, 0), False)])
def test_no_hold_without_nanosleep_or_when_not_asked(cc, hold):
    cuda = FakeCuda([])
    samples, note = event_times(backend(cuda, cc), 0, lambda: None, 2, hold=hold)
    assert (cuda.holds, samples, note) == ([], [0.25, 0.25], UNHELD_NOTE)


def test_holds_are_capped():
    cuda = FakeCuda([False])
    event_times(backend(cuda), 0, lambda: None, 2000)  # 401 ms asked
    assert cuda.holds == [int(_cuda_hold.MAX_HOLD_MS * 1e6)]
