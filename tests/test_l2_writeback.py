"""The L2 is write-back: a rewritten window costs HBM once, a read of written lines hits,
and a cube<->vector FIFO through GM (A2/A3) reuses its workspace slots in the L2."""

import sys
from pathlib import Path

import numpy as np
import pytest

import sim

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
import flash_attention  # noqa: E402

TILE_BYTES = 64 * 256 * 4


CORES = 2  # the shared GM model runs when more than one unit touches GM


def _stores(n, same):
    """Each core stores a 64 KiB tile n times to its own part of GM: to one window, or
    to n distinct ones."""
    k = sim.Kernel("stores", block_dim=CORES)
    y = k.gm("y", "f32", (CORES * 64 * n, 256))
    t = k.tile("vec", "f32", 64, 256)
    k.TEXPANDS(t, 1.0)
    for i in range(n):
        r0 = k.block_idx * (64 * n) + (0 if same else 64 * i)
        k.TSTORE(y[r0 : r0 + 64, :], t)
    return k


def test_rewriting_one_window_costs_hbm_once():
    r = sim.simulate(_stores(6, same=True), functional=False)
    assert r.memory["hbm"]["bytes"] == CORES * TILE_BYTES
    assert r.memory["l2"]["bytes"] == CORES * 6 * TILE_BYTES


def test_streamed_stores_cost_hbm_per_window():
    r = sim.simulate(_stores(6, same=False), functional=False)
    assert r.memory["hbm"]["bytes"] == CORES * 6 * TILE_BYTES


def test_a_read_of_written_lines_hits():
    k = sim.Kernel("store_then_load", block_dim=CORES)
    y = k.gm("y", "f32", (CORES * 64, 256))
    t = k.tile("vec", "f32", 64, 256)
    u = k.tile("vec", "f32", 64, 256)
    r0 = k.block_idx * 64
    e = k.TSTORE(y[r0 : r0 + 64, :], t, k.TEXPANDS(t, 2.0))
    k.TLOAD(u, y[r0 : r0 + 64, :], e)
    r = sim.simulate(k, functional=False)
    assert r.memory["hbm"]["bytes"] == CORES * TILE_BYTES  # the stores' write-backs only
    assert r.memory["l2"]["hit_rate"] == pytest.approx(0.5)  # the loads hit every line


def test_with_l2_off_every_gm_byte_crosses_hbm():
    r = sim.simulate(_stores(6, same=True), functional=False, l2=False)
    assert r.memory["hbm"]["bytes"] == CORES * 6 * TILE_BYTES


@pytest.mark.parametrize("cores", [1, 4])
def test_fifo_workspace_stays_in_l2(cores):
    """Flash attention on A2/A3 moves S, P and O through GM every block; only the
    inputs read once, the output and each FIFO slot's first write reach HBM."""
    s0, s1, T, head = 64, 512, 128, 64
    k = flash_attention.build(s1=s1, s1_tile=T, head=head, s0=s0, cores=cores)
    r = sim.simulate(k, "a2a3", functional=False)
    inputs = cores * (s0 * head + 2 * s1 * head) * 2  # q, k, v (f16)
    output = cores * s0 * head * 4  # o (f32)
    # per core: 2 slots of S (s0 x T f32), 2 of P (s0 x T f16), 1 of O (s0 x head f32)
    slots = cores * (2 * s0 * T * 4 + 2 * s0 * T * 2 + s0 * head * 4)
    streamed = cores * (s1 // T) * (s0 * T * 4 + s0 * T * 2 + s0 * head * 4)
    assert slots < streamed / 2  # the bound below is a real constraint
    assert r.memory["hbm"]["bytes"] <= inputs + output + slots
    assert r.memory["l2"]["bytes"] >= inputs + output + streamed


def test_the_lines_of_a_window_are_the_lines_its_elements_lie_in():
    """``_L2.lines`` against the line of every element's first byte (an element never
    straddles a line: item sizes divide the line), over random row-major, column-major
    and overlapping-row windows."""
    from sim.engine.gm import _L2

    l2 = _L2({"line_bytes": 512, "capacity_bytes": 1 << 20})
    rng = np.random.default_rng(0)
    for _ in range(2000):
        rows, cols = int(rng.integers(1, 40)), int(rng.integers(1, 600))
        isz = int(rng.choice([1, 2, 4]))
        kind = int(rng.integers(0, 4))
        rs, cs = (
            (int(rng.integers(cols, cols + 700)), 1)
            if kind == 0
            else (cols, 1)
            if kind == 3
            else (1, int(rng.integers(rows, rows + 700)))
            if kind == 1
            else (int(rng.integers(0, 900)), 1)
        )
        base = int(rng.integers(0, 5000))
        r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
        # each shape again at other bases: the lines kept per shape and offset into a
        # line, shifted, must be those of the elements there
        for at in (base, base + 1, base + 128, base + int(rng.integers(0, 5000)), base):
            want = np.unique(((at + r * rs + c * cs) * isz // 512).ravel())
            got = l2.lines(("x", at, rows, cols, rs, cs, isz))
            if isinstance(got, slice):  # one contiguous run of lines
                got = np.arange(got.start, got.stop)
            assert np.array_equal(got, want), (at, rows, cols, rs, cs, isz)


def test_the_lines_of_a_window_strided_in_both_dimensions():
    """A window whose elements are apart along rows and along columns (neither stride 1):
    its lines are those of every element, listed element by element."""
    from sim.engine.gm import _L2

    l2 = _L2({"line_bytes": 512, "capacity_bytes": 1 << 20})
    rng = np.random.default_rng(1)
    for _ in range(300):
        rows, cols = int(rng.integers(2, 12)), int(rng.integers(2, 40))
        isz = int(rng.choice([1, 2, 4]))
        cs = int(rng.integers(2, 300))
        rs = int(rng.integers(2, 3000))
        base = int(rng.integers(0, 5000))
        want = sorted(
            {(base + r * rs + c * cs) * isz // 512 for r in range(rows) for c in range(cols)}
        )
        window = ("x", base, rows, cols, rs, cs, isz)
        got = l2.lines(window)
        if isinstance(got, slice):
            got = range(got.start, got.stop)
        assert [int(x) for x in got] == want, window
        # the lines index the cache's per-line state: a second access hits every one
        l2.access(window)
        assert l2.access(window) == (len(want), len(want), 0), window
