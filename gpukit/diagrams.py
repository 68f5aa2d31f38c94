"""Concept diagrams for the lessons, drawn with matplotlib so that they are reproducible and tested.

`thread_hierarchy()` (lesson 00): a grid of blocks, a block as warps of threads, a warp as lanes.
`index_mapping(shape, block)` (lesson 03): which block and thread covers each element of a matrix,
with the index formulas worked out for one thread. `coalescing(strides)` (lesson 06): a warp's 32
addresses and the 32-byte sectors they touch. Each returns a `matplotlib.figure.Figure`, shown as
a PNG by IPython when it is a cell's value (pyplot or not), and computes nothing a lesson relies
on; the sector count is `sectors_touched`. They draw concepts, not a launch:
`gpukit.trace.plot_block` draws a real one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .devices import SECTOR_BYTES, WARP_SIZE
from .errors import InvalidArgumentError

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

# one colour per block / warp, readable on white and in grey print
COLOURS = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1",
           "#ff9da7", "#9c755f", "#bab0ac")
IDLE = "#dddddd"
MOVED = "#fbd5a8"   # bytes a sector moves that no lane asked for


def _positive(name: str, value: object, most: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= most:
        raise InvalidArgumentError(f"{name} must be an int from 1 to {most}, not {value!r}")
    return value


def _pair(name: str, value: object, most: int) -> tuple[int, int]:
    if not (isinstance(value, tuple) and len(value) == 2):
        raise InvalidArgumentError(f"{name} must be a pair of ints, not {value!r}")
    return _positive(f"{name}[0]", value[0], most), _positive(f"{name}[1]", value[1], most)


def _canvas(width: float, height: float, xlim: float, ylim: float) -> tuple[Figure, Axes]:
    from matplotlib.figure import Figure  # lazy: `import gpukit` does not import matplotlib
    fig = Figure(figsize=(width, height))
    # shown as an image by IPython even where pyplot (and its inline backend) was never imported
    fig._repr_png_ = lambda: _png(fig)
    ax = fig.add_axes((0.0, 0.0, 1.0, 1.0))
    ax.set_xlim(0, xlim)
    ax.set_ylim(0, ylim)
    ax.set_aspect("equal")
    ax.axis("off")
    return fig, ax


def _png(fig: Figure) -> bytes:
    import io
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", bbox_inches="tight")
    return buffer.getvalue()


def _box(ax: Axes, x: float, y: float, w: float, h: float, colour: str, *, edge: str = "black",
         lw: float = 0.6, alpha: float = 1.0, hatch: str | None = None) -> None:
    from matplotlib.patches import Rectangle  # lazy, as above
    ax.add_patch(Rectangle((x, y), w, h, facecolor=colour, edgecolor=edge, linewidth=lw,
                           alpha=alpha, hatch=hatch))


# -- lesson 00: grid, blocks, warps, threads --------------------------------------------------------
def thread_hierarchy(grid: tuple[int, int] = (3, 2), threads_per_block: int = 128) -> Figure:
    """A launch `kernel[grid, threads_per_block]`: the grid of blocks (block (1, 0) picked out),
    that block's threads in warps of 32, and one warp's 32 lanes (thread 37 picked out when the
    block has one)."""
    gx, gy = _pair("grid", grid, 6)
    tpb = _positive("threads_per_block", threads_per_block, 1024)
    warps = -(-tpb // WARP_SIZE)
    shown_warps = min(warps, 8)
    fig, ax = _canvas(12, 3.6, 36, 10.8)
    top = 8.6
    ax.text(0.3, 10.2, f"kernel[grid=({gx}, {gy}), block={tpb}]: {gx * gy} blocks x {tpb} threads"
            f" = {gx * gy * tpb:,} threads", fontsize=12, weight="bold", va="center")

    # the grid: gx x gy blocks, y down as in the CUDA programming guide's figure
    cell = min(7.8 / gx, 5.4 / gy, 2.6)
    ax.text(0.3, top + 0.5, "grid (gridDim)", fontsize=11, weight="bold")
    pick = (min(1, gx - 1), 0)
    for bx in range(gx):
        for by in range(gy):
            x, y = 0.3 + bx * cell, top - (by + 1) * cell
            chosen = (bx, by) == pick
            _box(ax, x + 0.08, y + 0.08, cell - 0.16, cell - 0.16,
                 COLOURS[0] if chosen else "#c6d7ea", lw=1.5 if chosen else 0.6)
            ax.text(x + cell / 2, y + cell / 2, f"block\n({bx}, {by})", ha="center", va="center",
                    fontsize=9, color="white" if chosen else "black")
    ax.text(0.3, top - gy * cell - 0.3, "blocks run in any order, on any SM;\n"
            "they share only global memory", fontsize=9, va="top")

    # the picked block: its warps, 32 threads a row
    bx0, size, tw = 9.6, 0.5, 0.4
    ax.text(bx0, top + 0.5, f"block {pick}: blockDim = {tpb}, {warps} warp"
            f"{'s' if warps > 1 else ''} of {WARP_SIZE}", fontsize=11, weight="bold")
    for w in range(shown_warps):
        y = top - (w + 1) * (size + 0.15)
        for lane in range(WARP_SIZE):
            thread = w * WARP_SIZE + lane
            colour = COLOURS[1 + w % (len(COLOURS) - 1)] if thread < tpb else IDLE
            _box(ax, bx0 + lane * tw, y, tw, size, colour, lw=0.3)
        last = min(tpb, (w + 1) * WARP_SIZE) - 1
        ax.text(bx0 + WARP_SIZE * tw + 0.2, y + size / 2,
                f"warp {w}: threads {w * WARP_SIZE}-{last}", fontsize=8.5, va="center")
    low = top - shown_warps * (size + 0.15)
    if shown_warps < warps:
        ax.text(bx0, low - 0.2, f"... {warps - shown_warps} more warps", fontsize=8.5, va="top")
        low -= 0.5
    ax.text(bx0, low - 0.3, "a block runs on one SM: its threads share shared memory\n"
            "and wait for each other at cuda.syncthreads()", fontsize=9, va="top")
    px, py = 0.3 + pick[0] * cell + cell - 0.08, top - pick[1] * cell - cell / 2
    ax.annotate("", xy=(bx0 - 0.15, top - (size + 0.15) * min(shown_warps, 2)), xytext=(px, py),
                arrowprops={"arrowstyle": "->", "color": COLOURS[0], "lw": 1.5})

    # one warp's lanes
    w = 1 if warps > 1 else 0
    lx0, lw_, lh = 28.0, 0.95, 0.62
    ax.text(lx0, top + 0.5, f"warp {w}: 32 lanes", fontsize=11, weight="bold")
    picked = w * WARP_SIZE + 5
    for lane in range(WARP_SIZE):
        row, col = divmod(lane, 8)
        thread = w * WARP_SIZE + lane
        colour = COLOURS[1 + w % (len(COLOURS) - 1)] if thread < tpb else IDLE
        x, y = lx0 + col * lw_, top - (row + 1) * (lh + 0.08)
        _box(ax, x, y, lw_ - 0.06, lh, colour, lw=2.0 if thread == picked else 0.4)
        ax.text(x + lw_ / 2 - 0.03, y + lh / 2, str(thread), ha="center", va="center",
                fontsize=7.5, weight="bold" if thread == picked else "normal")
    ly = top - 4 * (lh + 0.08)
    text = "one instruction at a time for all 32\n(shuffles and votes work in a warp)"
    if picked < tpb:
        text += (f"\n\nthread {picked} (framed): warp {w}, lane {picked % WARP_SIZE};"
                 f"\ncuda.grid(1) = {pick[0]} * {tpb} + {picked} = {pick[0] * tpb + picked}"
                 "\n(blockIdx.x * blockDim.x + threadIdx.x)")
    ax.text(lx0, ly - 0.3, text, fontsize=8.5, va="top")
    wy = top - (w + 1) * (size + 0.15) + size / 2
    ax.annotate("", xy=(lx0 - 0.15, top - 0.4), xytext=(bx0 + WARP_SIZE * tw + 4.4, wy),
                arrowprops={"arrowstyle": "->", "color": COLOURS[2], "lw": 1.5})
    return fig


# -- lesson 03: which thread covers which element ---------------------------------------------------
def index_mapping(shape: tuple[int, int] = (5, 7), block: tuple[int, int] = (4, 2),
                  element: tuple[int, int] | None = None) -> Figure:
    """A `shape = (rows, cols)` matrix covered by a 2-D launch of `block = (x, y)` threads per block
    (x along the columns): each element labelled `row,col` in its block's colour, the idle threads
    past the edges hatched, and the index formulas worked out for the thread of `element`
    (row, col; by default the last element)."""
    rows, cols = _pair("shape", shape, 16)
    bx, by = _pair("block", block, 16)
    grid = (-(-cols // bx), -(-rows // by))
    row, col = (rows - 1, cols - 1) if element is None else element
    if not (isinstance(row, int) and isinstance(col, int) and 0 <= row < rows
            and 0 <= col < cols):
        raise InvalidArgumentError(f"element must be a (row, col) inside the {rows} x {cols} "
                                   f"matrix, not {element!r}")
    s = min(1.0, 10.0 / (grid[0] * bx), 8.0 / (grid[1] * by))   # one thread's square
    height = max(grid[1] * by * s, 4.6) + 1.9
    fig, ax = _canvas(11, height / 21 * 11, 21, height)
    x0, y0 = 1.0, height - 1.2
    for gyi in range(grid[1]):
        for gxi in range(grid[0]):
            colour = COLOURS[(gyi * grid[0] + gxi) % len(COLOURS)]
            for ty in range(by):
                for tx in range(bx):
                    c, r = gxi * bx + tx, gyi * by + ty
                    x, y = x0 + c * s, y0 - (r + 1) * s
                    inside = r < rows and c < cols
                    _box(ax, x, y, s, s, colour if inside else "white", lw=0.4,
                         alpha=0.85 if inside else 1.0, hatch=None if inside else "///",
                         edge="black" if inside else "#999999")
                    if inside:
                        ax.text(x + s / 2, y + s / 2, f"{r},{c}", ha="center", va="center",
                                fontsize=7, color="white")
            _box(ax, x0 + gxi * bx * s, y0 - (gyi + 1) * by * s, bx * s, by * s, "none", lw=2.2)
            ax.text(x0 + gxi * bx * s + 0.08, y0 - gyi * by * s - 0.1, f"block ({gxi},{gyi})",
                    fontsize=7, va="top", color="black",
                    bbox={"facecolor": "white", "alpha": 0.7, "pad": 0.5, "lw": 0})
    # the matrix's edge
    _box(ax, x0, y0 - rows * s, cols * s, rows * s, "none", edge="black", lw=1.2)
    ax.text(x0 + cols * s / 2, y0 - grid[1] * by * s - 0.15, f"the {rows} x {cols} matrix "
            "(outlined); hatched: threads with no element", fontsize=8.5, ha="center", va="top")
    ax.annotate("", xy=(x0 + grid[0] * bx * s, y0 + 0.35), xytext=(x0, y0 + 0.35),
                arrowprops={"arrowstyle": "->", "lw": 1.2})
    ax.text(x0, y0 + 0.55, "x: columns (contiguous in memory)", fontsize=9)
    ax.annotate("", xy=(x0 - 0.3, y0 - grid[1] * by * s), xytext=(x0 - 0.3, y0),
                arrowprops={"arrowstyle": "->", "lw": 1.2})
    ax.text(x0 - 0.4, y0, "y: rows", fontsize=9, rotation=90, ha="right", va="top")
    # block outlines over the cells (drawn last, so they stay visible)

    # the worked example
    bxi, byi, txi, tyi = col // bx, row // by, col % bx, row % by
    hx, hy = x0 + col * s, y0 - (row + 1) * s
    _box(ax, hx, hy, s, s, "none", edge="red", lw=2.5)
    tx0 = x0 + grid[0] * bx * s + 0.8
    threads = grid[0] * grid[1] * bx * by
    lines = [
        f"matrix {rows} x {cols}, block = ({bx}, {by}) threads (x, y)",
        f"grid = (ceil({cols}/{bx}), ceil({rows}/{by})) = ({grid[0]}, {grid[1]}) blocks",
        f"{threads} threads for {rows * cols} elements: {threads - rows * cols} idle",
        "",
        f"the thread framed in red: blockIdx = ({bxi}, {byi}), threadIdx = ({txi}, {tyi})",
        f"col = blockIdx.x * blockDim.x + threadIdx.x = {bxi} * {bx} + {txi} = {col}",
        f"row = blockIdx.y * blockDim.y + threadIdx.y = {byi} * {by} + {tyi} = {row}",
        "col, row = cuda.grid(2)    # the same two numbers",
        f"if row < {rows} and col < {cols}:    # the guard stops the idle ones",
    ]
    ax.text(tx0, y0 + 0.3, "\n".join(lines), fontsize=9.5, va="top", family="monospace",
            linespacing=1.5)
    return fig


# -- lesson 06: a warp's addresses and the sectors they touch ---------------------------------------
def sectors_touched(stride: int, itemsize: int = 4, lanes: int = WARP_SIZE) -> int:
    """The 32-byte sectors a warp's request touches when lane k reads element k * stride."""
    _positive("stride", stride, 1 << 20)
    _positive("itemsize", itemsize, 16)
    _positive("lanes", lanes, WARP_SIZE)
    return len({lane * stride * itemsize // SECTOR_BYTES for lane in range(lanes)})


def coalescing(strides: tuple[int, ...] = (1, 2, 32), itemsize: int = 4) -> Figure:
    """One row per stride: the 32 lanes of a warp, each reading element `lane * stride` of a
    float32 array, and the 32-byte sectors of memory that request touches (coloured) among those
    it spans; the caption gives the sectors moved against the bytes used."""
    if not isinstance(strides, tuple) or not strides:
        raise InvalidArgumentError(f"strides must be a non-empty tuple of ints, not {strides!r}")
    for s in strides:
        _positive("stride", s, 64)
    _positive("itemsize", itemsize, 16)
    height = 1.7 * len(strides) + 0.4
    fig, ax = _canvas(12, height, 40, height / 12 * 40)
    top = ax.get_ylim()[1]
    row_h = (top - 1.0) / len(strides)
    ax.text(0.5, 0.35, "dark orange: the bytes the lanes read; light orange: the rest of the "
            "sectors they touched, moved for nothing; white: sectors not touched", fontsize=8.5)
    for k, stride in enumerate(strides):
        y_lanes = top - k * row_h - 1.6
        y_mem = y_lanes - row_h * 0.55
        span = WARP_SIZE * stride * itemsize          # bytes from the first to past the last
        nsectors = -(-span // SECTOR_BYTES)
        width = 30.0
        lane_w, sec_w = width / WARP_SIZE, width / nsectors
        touched = {lane * stride * itemsize // SECTOR_BYTES for lane in range(WARP_SIZE)}
        for sector in range(nsectors):
            _box(ax, 0.5 + sector * sec_w, y_mem, sec_w, 0.7,
                 MOVED if sector in touched else "white", lw=0)
        for lane in range(WARP_SIZE):   # the bytes the lanes asked for, inside their sectors
            _box(ax, 0.5 + lane * stride * itemsize / span * width, y_mem,
                 itemsize / span * width, 0.7, COLOURS[1], lw=0)
        for sector in range(nsectors):  # the sector boundaries, over the bytes
            _box(ax, 0.5 + sector * sec_w, y_mem, sec_w, 0.7, "none",
                 lw=0.8 if nsectors < 64 else 0.2)
        for lane in range(WARP_SIZE):
            _box(ax, 0.5 + lane * lane_w, y_lanes, lane_w, 0.6, COLOURS[0], lw=0.4)
            if lane % 4 == 0 or lane == WARP_SIZE - 1:
                ax.text(0.5 + (lane + 0.5) * lane_w, y_lanes + 0.3, str(lane), ha="center",
                        va="center", fontsize=6.5, color="white")
            address = lane * stride * itemsize
            ax.plot([0.5 + (lane + 0.5) * lane_w, 0.5 + (address + itemsize / 2) / span * width],
                    [y_lanes, y_mem + 0.7], color="#555555", lw=0.5)
        used, moved = WARP_SIZE * itemsize, len(touched) * SECTOR_BYTES
        title = (f"lane k reads a[{'k' if stride == 1 else f'{stride} * k'}]: "
                 f"{len(touched)} of the {nsectors} sectors in bytes 0-{span - 1} "
                 f"({moved:,} B moved for {used} B used: {used / moved:.1%})")
        ax.text(0.5, y_lanes + 0.95, title, fontsize=10, weight="bold")
        ax.text(width + 0.8, y_lanes + 0.3, "warp's 32 lanes", fontsize=8.5, va="center")
        ax.text(width + 0.8, y_mem + 0.35, f"{SECTOR_BYTES}-byte sectors", fontsize=8.5,
                va="center")
    return fig
