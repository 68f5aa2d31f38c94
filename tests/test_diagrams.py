"""gpukit.diagrams: the lessons' concept diagrams say what they draw (their texts and patches are
checked, not their pixels), and bad arguments get exact messages."""

from __future__ import annotations

import pytest
from matplotlib.colors import to_rgba
from matplotlib.patches import Rectangle

from gpukit import diagrams
from gpukit.errors import InvalidArgumentError


def _texts(fig) -> str:
    return "\n".join(t.get_text() for ax in fig.axes for t in ax.texts)


def _rects(fig) -> list[Rectangle]:
    return [p for ax in fig.axes for p in ax.patches if isinstance(p, Rectangle)]


@pytest.mark.parametrize(("stride", "itemsize", "sectors"),
                         [(1, 4, 4), (2, 4, 8), (4, 4, 16), (8, 4, 32), (32, 4, 32), (1, 8, 8),
                          (1, 1, 1)])
def test_sectors_touched(stride, itemsize, sectors) -> None:
    assert diagrams.sectors_touched(stride, itemsize) == sectors


def test_coalescing_rows_say_sectors_and_efficiency() -> None:
    fig = diagrams.coalescing((1, 2, 32))
    text = _texts(fig)
    assert "lane k reads a[k]: 4 of the 4 sectors in bytes 0-127 (128 B moved for 128 B used: " \
        "100.0%)" in text
    assert "lane k reads a[2 * k]: 8 of the 8 sectors in bytes 0-255 (256 B moved for 128 B " \
        "used: 50.0%)" in text
    assert "lane k reads a[32 * k]: 32 of the 128 sectors in bytes 0-4095 (1,024 B moved for " \
        "128 B used: 12.5%)" in text
    touched = [r for r in _rects(fig) if r.get_facecolor() == to_rgba(diagrams.MOVED)]
    assert len(touched) == 4 + 8 + 32     # one coloured box per sector touched
    assert "32-byte sectors" in text


def test_index_mapping_works_out_the_last_elements_thread() -> None:
    fig = diagrams.index_mapping((5, 7), (4, 2))
    text = _texts(fig)
    assert "grid = (ceil(7/4), ceil(5/2)) = (2, 3) blocks" in text
    assert "48 threads for 35 elements: 13 idle" in text
    assert "the thread framed in red: blockIdx = (1, 2), threadIdx = (2, 0)" in text
    assert "col = blockIdx.x * blockDim.x + threadIdx.x = 1 * 4 + 2 = 6" in text
    assert "row = blockIdx.y * blockDim.y + threadIdx.y = 2 * 2 + 0 = 4" in text
    labels = {t.get_text() for ax in fig.axes for t in ax.texts}
    assert {f"{r},{c}" for r in range(5) for c in range(7)} <= labels
    assert sum(r.get_hatch() == "///" for r in _rects(fig)) == 13
    assert [f"block ({x},{y})" for y in range(3) for x in range(2)] == \
        [t for t in (t.get_text() for t in fig.axes[0].texts) if t.startswith("block (")]


def test_index_mapping_of_a_chosen_element() -> None:
    text = _texts(diagrams.index_mapping((4, 4), (2, 2), element=(1, 2)))
    assert "blockIdx = (1, 0), threadIdx = (0, 1)" in text
    assert "col = blockIdx.x * blockDim.x + threadIdx.x = 1 * 2 + 0 = 2" in text


def test_thread_hierarchy_names_grid_block_warps_and_a_thread() -> None:
    text = _texts(diagrams.thread_hierarchy((3, 2), 128))
    assert "kernel[grid=(3, 2), block=128]: 6 blocks x 128 threads = 768 threads" in text
    assert "block (1, 0): blockDim = 128, 4 warps of 32" in text
    assert [f"warp {w}: threads {32 * w}-{32 * w + 31}" in text for w in range(4)] == [True] * 4
    assert "cuda.grid(1) = 1 * 128 + 37 = 165" in text
    partial = _texts(diagrams.thread_hierarchy((1, 1), 40))
    assert "warp 1: threads 32-39" in partial and "0 * 40 + 37 = 37" in partial
    assert "thread 37" not in _texts(diagrams.thread_hierarchy((2, 1), 32))


@pytest.mark.parametrize(("call", "message"), [
    (lambda: diagrams.thread_hierarchy((0, 1)), "grid[0] must be an int from 1 to 6, not 0"),
    (lambda: diagrams.thread_hierarchy((1, 1), 2048),
     "threads_per_block must be an int from 1 to 1024, not 2048"),
    (lambda: diagrams.index_mapping([5, 7]), "shape must be a pair of ints, not [5, 7]"),
    (lambda: diagrams.index_mapping((5, 7), element=(5, 0)),
     "element must be a (row, col) inside the 5 x 7 matrix, not (5, 0)"),
    (lambda: diagrams.coalescing(()), "strides must be a non-empty tuple of ints, not ()"),
    (lambda: diagrams.sectors_touched(0), "stride must be an int from 1 to 1048576, not 0"),
])
def test_bad_arguments(call, message) -> None:
    with pytest.raises(InvalidArgumentError) as info:
        call()
    assert str(info.value) == message


def test_a_diagram_shows_as_png_in_ipython_without_pyplot() -> None:
    png = diagrams.index_mapping()._repr_png_()
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
