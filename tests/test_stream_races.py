"""Data races between streams (gpukit.sim.stream_order): copies and kernels on different
streams that touch one element, one writing, with nothing CUDA guarantees ordering them."""

from __future__ import annotations

import random
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import cuda

import gpukit
from gpukit.backends.cpu import CPUBackend
from gpukit.errors import RaceConditionError, StreamRaceError
from gpukit.sim.stream_order import Access, StreamOrder

pytestmark = pytest.mark.filterwarnings("ignore:Grid size")

N, CHUNKS, TPB = 1024, 4, 128


def affine(x, y):
    i = cuda.grid(1)
    if i < x.size:
        y[i] = 3 * x[i] + 1


def reads_only(x, y):
    i = cuda.grid(1)
    if i < y.size:
        y[i] = x[i]


@pytest.fixture
def be():
    return CPUBackend()


def two_streams(be):
    """affine compiled, x (ones) and y on the device, and two streams."""
    kernel = be.compile_kernel(affine)
    return kernel, be.to_device(np.ones(N, np.float32)), be.allocate(N, np.float32), \
        be.stream(), be.stream()


def pipeline(be, copy_back_shift=0, event=False, sync_each=False):
    """The stream-overlap exercise's pipeline; the copy back of chunk c goes on stream
    c + copy_back_shift."""
    kernel = be.compile_kernel(affine)
    h_in = be.pinned_array(N, np.float32)
    h_in[:] = np.arange(N)
    h_out = be.pinned_array(N, np.float32)
    d_in, d_out = be.allocate(N, np.float32), be.allocate(N, np.float32)
    streams = [be.stream() for _ in range(CHUNKS)]
    chunk = N // CHUNKS
    for c in range(CHUNKS):
        s, part = streams[c], slice(c * chunk, (c + 1) * chunk)
        be.copy_to_device(h_in[part], d_in[part], stream=s)
        kernel[chunk // TPB, TPB, s](d_in[part], d_out[part])
        back = streams[(c + copy_back_shift) % CHUNKS]
        if event:
            back.wait_event(s.record_event())
        if sync_each:
            s.synchronize()
        be.to_host(d_out[part], out=h_out[part], stream=back)
    be.synchronize()
    return h_in, h_out


def test_chunks_on_their_own_streams_do_not_race(be):
    h_in, h_out = pipeline(be)
    assert np.array_equal(h_out, 3 * h_in + 1)


def test_a_copy_back_on_another_stream_races_with_the_kernel(be):
    with pytest.raises(StreamRaceError) as info:
        pipeline(be, copy_back_shift=1)
    message = str(info.value)
    assert re.search(r"a device-to-host copy on stream (\d+) reads a \(256,\) float32 device "
                     r"array \(a view of a larger one\), and kernel 'affine' on stream (\d+), "
                     r"issued before it, writes argument 'y'", message), message
    assert "share bytes 0-1,023 of one allocation and nothing orders the two" in message
    assert "s2.wait_event(s1.record_event())" in message and "ev.wait(s2)" in message
    assert info.value.stream == info.value.other_stream + 1
    assert isinstance(info.value, RaceConditionError)


def test_an_event_or_a_synchronize_orders_the_streams(be):
    for ordered in ({"event": True}, {"sync_each": True}):
        h_in, h_out = pipeline(be, copy_back_shift=1, **ordered)
        assert np.array_equal(h_out, 3 * h_in + 1)


def test_numba_cudas_events_order_streams_in_a_simulation():
    with gpukit.simulate("T4"):
        kernel = cuda.jit(affine)
        s1, s2 = cuda.stream(), cuda.stream()
        x = cuda.to_device(np.arange(N, dtype=np.float32))
        y = cuda.device_array(N, np.float32)
        out = cuda.pinned_array(N, np.float32)
        kernel[N // TPB, TPB, s1](x, y)
        done = cuda.event()
        done.record(s1)
        done.wait(s2)
        y.copy_to_host(out, stream=s2)
        s2.synchronize()
        assert np.array_equal(out, 3 * np.arange(N) + 1)
        kernel[N // TPB, TPB, s1](x, y)
        with pytest.raises(StreamRaceError, match="a device-to-host copy on stream 2 reads"):
            y.copy_to_host(out, stream=s2)


def test_a_host_to_device_copy_races_with_a_kernel_reading_it_on_another_stream(be):
    kernel = be.compile_kernel(affine)
    h = be.pinned_array(N, np.float32)
    d, out = be.allocate(N, np.float32), be.allocate(N, np.float32)
    s1, s2 = be.stream(), be.stream()
    be.copy_to_device(h, d, stream=s1)
    with pytest.raises(StreamRaceError, match=r"kernel 'affine' on stream 2 reads argument "
                       r"'x', a \(1024,\) float32 device array, and a host-to-device copy on "
                       r"stream 1, issued before it, writes"):
        kernel[N // TPB, TPB, s2](d, out)


def test_readers_disjoint_chunks_and_interleaved_views_do_not_race(be):
    kernel = be.compile_kernel(reads_only)
    x = be.to_device(np.arange(N, dtype=np.float32))
    y1, y2 = be.allocate(N, np.float32), be.allocate(N, np.float32)
    s1, s2 = be.stream(), be.stream()
    kernel[N // TPB, TPB, s1](x, y1)  # two kernels read x: no race
    kernel[N // TPB, TPB, s2](x, y2)
    with pytest.raises(StreamRaceError, match="writes argument 'y'"):
        kernel[N // TPB, TPB, s2](x, y1)  # y1 again, unordered with stream 1's writes
    half = N // 2
    kernel[half // TPB, TPB, s1](x[:half], y1[:half])  # halves of y1
    kernel[half // TPB, TPB, s2](x[half:], y1[half:])
    kernel[half // TPB, TPB, s1](x[:half], y2[0::2])  # even and odd elements of y2
    kernel[half // TPB, TPB, s2](x[half:], y2[1::2])
    with pytest.raises(StreamRaceError, match="writes argument 'y'"):
        kernel[half // TPB, TPB, s2](x[:half], y2[::4])  # every 4th: the even ones again
    be.synchronize()
    assert np.array_equal(be.to_host(y1), np.arange(N))


def test_the_default_stream_orders_what_comes_before_and_after_it(be):
    kernel, x, y, s1, s2 = two_streams(be)
    kernel[N // TPB, TPB, s1](x, y)
    kernel[N // TPB, TPB](y, x)  # the default stream waits for stream 1
    kernel[N // TPB, TPB, s2](x, y)  # and stream 2 for it
    with pytest.raises(StreamRaceError, match="kernel 'affine' on stream 1 reads argument 'x'"):
        kernel[N // TPB, TPB, s1](y, x)  # stream 1 waits for nothing stream 2 did


def test_the_races_check_switches_the_stream_check_off(be):
    kernel, x, y, s1, s2 = two_streams(be)
    kernel[N // TPB, TPB, s1](x, y)
    be.launch_kernel(kernel, N // TPB, TPB, y, x, stream=s2, checks={"races": False})
    quiet = CPUBackend(checks={"races": False})
    d = quiet.allocate(N, np.float32)
    h = quiet.pinned_array(N, np.float32)
    quiet.copy_to_device(h, d, stream=quiet.stream())
    quiet.to_host(d, out=h, stream=quiet.stream())


def test_after_a_report_the_check_starts_afresh(be):
    kernel, x, y, s1, s2 = two_streams(be)
    kernel[N // TPB, TPB, s1](x, y)
    with pytest.raises(StreamRaceError):
        kernel[N // TPB, TPB, s2](y, x)
    kernel[N // TPB, TPB, s2](y, x)  # the fixed cell, run again: one bug, one report
    assert be.modeled_timeline.order.pending


def test_device_to_device_copies_read_their_source(be):
    a, b = be.to_device(np.ones(N, np.float32)), be.allocate(N, np.float32)
    s1, s2 = be.stream(), be.stream()
    b.copy_to_device(a, stream=s1)
    with pytest.raises(StreamRaceError, match=r"a device-to-device copy on stream 2 writes a "
                       r"\(1024,\) float32 device array, and a device-to-device copy on "
                       r"stream 1, issued before it, reads its source"):
        a.copy_to_device(b, stream=s2)


def test_operations_ordered_before_all_later_work_are_forgotten(be):
    kernel = be.compile_kernel(affine)
    x = be.to_device(np.ones(N, np.float32))
    y = be.allocate(N, np.float32)
    streams = [be.stream() for _ in range(3)]
    for s in streams:
        kernel[N // TPB, TPB, s](x, be.allocate(N, np.float32))
    assert len(be.modeled_timeline.order.pending) == 3
    kernel[N // TPB, TPB](x, y)  # the default stream: everything before it is ordered
    assert len(be.modeled_timeline.order.pending) == 0
    kernel[N // TPB, TPB, streams[0]](x, y)
    streams[0].synchronize()
    assert len(be.modeled_timeline.order.pending) == 0


# -- the vector clocks against happens-before worked out on the graph of operations ----------
def program(rng, length: int) -> list[tuple]:
    """A random program of operations (on the default stream, a blocking one, a sync of all:
    each orders everything before it, so drawn rarely, to keep work pending on several
    streams), event records, waits (on the latest event or one before) and host waits."""
    actions = []
    for _ in range(length):
        stream = 0 if rng.random() < 0.1 else rng.randint(1, 3)
        kind = rng.choices(["op", "record", "wait", "sync", "event_sync"], [8, 3, 4, 2, 2])[0]
        if kind == "op":
            actions.append(("op", stream, rng.randint(0, 4), rng.randint(1, 2),
                            rng.random() < 0.5, rng.random() < 0.1))
        elif kind == "record":
            actions.append(("record", stream))
        elif kind == "wait":
            actions.append(("wait", stream, rng.randint(0, 2)))
        elif kind == "sync":
            actions.append(("sync", None if rng.random() < 0.2 else stream))
        else:
            actions.append(("event_sync", rng.randint(0, 2)))
    return actions


class Graph:
    """Happens-before as reachability: a node per operation, event record and wait, and host
    wait, with CUDA's edges (see gpukit.sim.stream_order)."""

    def __init__(self):
        self.preds: list[set[int]] = []
        self.last: dict[int, int] = {}  # stream -> its latest node
        self.host: int | None = None  # the latest host wait

    def node(self, stream: int | None, extra=()) -> int:
        preds = set(extra)
        if stream is not None:
            if stream in self.last:
                preds.add(self.last[stream])
            if stream == 0:
                preds |= set(range(len(self.preds)))
            elif 0 in self.last:
                preds.add(self.last[0])
        if self.host is not None:
            preds.add(self.host)
        self.preds.append(preds)
        n = len(self.preds) - 1
        if stream is not None:
            self.last[stream] = n
        return n

    def host_wait(self, after: set[int]) -> None:
        self.preds.append(set(after) | ({self.host} if self.host is not None else set()))
        self.host = len(self.preds) - 1

    def before(self, a: int, b: int) -> bool:
        todo, seen = [b], set()
        while todo:
            n = todo.pop()
            if n == a:
                return True
            if n not in seen:
                seen.add(n)
                todo += self.preds[n]
        return False


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2**32), st.integers(4, 40))
def test_vector_clocks_order_what_the_graph_of_operations_orders(seed, length):
    # a seed, not hypothesis's own draws: those lean to zeros, which here means the default
    # stream and the syncs that leave nothing pending
    check_against_the_graph(program(random.Random(seed), length))


def check_against_the_graph(actions: list[tuple]) -> None:
    memory = CPUBackend().allocate(10, np.int32)
    order, graph = StreamOrder(), Graph()
    ops: list[tuple[int, int, int, bool]] = []  # node, first element, last + 1, writes
    events: list[tuple[dict, int]] = []
    for action in actions:
        kind, *args = action
        if kind == "op":
            stream, lo, length, writes, blocking = args
            node = graph.node(stream)
            race = any((writes or w) and lo < hi and o_lo < lo + length
                       and not graph.before(n, node) for n, o_lo, hi, w in ops)
            try:
                order.issue(stream, "op", [Access(memory[lo:lo + length], writes, "x")],
                            blocking=blocking)
            except StreamRaceError:
                assert race
                order, graph, ops, events = StreamOrder(), Graph(), [], []
                continue
            assert not race
            ops.append((node, lo, lo + length, writes))
            if blocking:
                graph.host_wait({node})
        elif kind == "record":
            events.append((order.record(args[0]), graph.node(args[0])))
        elif kind == "wait" and args[1] < len(events):
            recorded, node = events[-1 - args[1]]
            order.wait(args[0], recorded)
            graph.node(args[0], extra={node})
        elif kind == "sync":
            order.synchronize(args[0])
            stream = args[0]
            if stream is None or stream == 0:
                graph.host_wait(set(range(len(graph.preds))))
            elif stream in graph.last:
                graph.host_wait({graph.last[stream]})
        elif kind == "event_sync" and args[0] < len(events):
            recorded, node = events[-1 - args[0]]
            order.host_waits(recorded)
            graph.host_wait({node})
