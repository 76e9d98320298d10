"""Traffic between ranks in the ranks' memories and on the links (sim.engine.remote).

Relations over small families: a rank's two streams share its HBM, a transfer's remote side
loads the peer's HBM, a link serves transfers in the order they really start, a plain
TLOAD / TSTORE on a peer's window moves the peer's data over the link. Figures come from
models/a2a3/machine.toml read here, not through the simulator's loaders.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import attrs
import numpy as np
import pytest

import sim
from sim.frontend import parse_text
from sim.target import load_target

ROOT = Path(__file__).resolve().parent.parent
MACHINE = tomllib.loads((ROOT / "models" / "a2a3" / "machine.toml").read_text())
LINKS = MACHINE["comm"]["links"]
CLOCK = MACHINE["target"]["clock_hz"]
TGT = load_target("a2a3")


def _narrow(gib_per_s: float):
    """a2a3 with its HBM channel narrowed to ``gib_per_s`` and the L2 off (every byte
    crosses the HBM): small kernels then contend for it."""
    gm = {**TGT.gm, "bandwidth_gib_per_s": gib_per_s, "l2": {**TGT.gm["l2"], "enabled": False}}
    return attrs.evolve(TGT, gm=gm)


def _link_cycles(nbytes: int) -> float:
    return LINKS["latency_cycles"] + nbytes / (LINKS["bandwidth_gb_per_s"] * 1e9 / CLOCK)


def _pusher(chunks: int = 2) -> sim.Kernel:
    """TPUT of ``chunks`` 8 KB chunks to the other rank (a communication stream)."""
    k = sim.Kernel("pusher")
    src = k.gm("src", "f32", (8 * chunks, 256))
    dst = k.gm("dst", "f32", (8 * chunks, 256), np.zeros((8 * chunks, 256), np.float32))
    k.TPUT(dst, src, k.tile("vec", "f32", 8, 256), peer=1 - k.rank_idx)
    return k


def _hog(loads: int, blocks: int = 2) -> sim.Kernel:
    """Local GM reads only: ``loads`` 32 KB TLOADs per block (a compute stream's traffic)."""
    k = sim.Kernel("hog", block_dim=blocks)
    a = k.gm("a", "f32", (blocks * 32, 256))
    t = k.tile("vec", "f32", 32, 256)
    for _ in range(loads):
        k.TLOAD(t, a.view(32, 256, row=k.block_idx * 32))
    return k


@pytest.mark.parametrize("gib", [8.0, 1490.0])
@pytest.mark.parametrize("loads", [2, 6])
def test_two_streams_sharing_a_ranks_hbm_never_end_earlier_than_either_alone(gib, loads):
    tgt = _narrow(gib)
    both = sim.simulate(_hog(loads), tgt, ranks=2, streams=[_pusher()], functional=False)
    hog = sim.simulate(_hog(loads), tgt, ranks=2, functional=False)
    push = sim.simulate(_pusher(), tgt, ranks=2, functional=False)
    for r in range(2):
        h, p = both.streams[r]
        assert h.total_cycles >= hog.ranks[r].total_cycles
        assert p.total_cycles >= push.ranks[r].total_cycles


def test_the_communication_streams_local_reads_wait_for_the_compute_streams_hbm():
    tgt = _narrow(8.0)
    alone = sim.simulate(_pusher(), tgt, ranks=2, functional=False).ranks[0].total_cycles
    runs = [
        sim.simulate(_hog(n), tgt, ranks=2, streams=[_pusher()], functional=False) for n in (1, 4)
    ]
    ends = [r.streams[0][1].total_cycles for r in runs]
    assert alone < ends[0] <= ends[1]  # a busier HBM never makes it faster
    # with the HBM free (each transfer its own path's time) the streams do not meet there
    free = sim.simulate(
        _hog(4), tgt, ranks=2, streams=[_pusher()], functional=False, free="gm_bandwidth"
    )
    assert (
        free.streams[0][1].total_cycles
        == sim.simulate(_pusher(), tgt, ranks=2, functional=False, free="gm_bandwidth")
        .ranks[0]
        .total_cycles
    )


# A hog whose work grows with the rank (none on rank 0): rank 0's remote stores land in a
# busy HBM on rank 1 while its own HBM stays idle.
_RANK_HOG = """
!VT = !pto.tile_buf<loc=vec, dtype=f32, rows=32, cols=256, v_row=32, v_col=256, blayout=row_major, slayout=none_box, fractal=512, pad=0>
!PV = !pto.partition_tensor_view<32x256xf32>
!TV = !pto.tensor_view<?x?xf32>
module attributes {pto.target_arch = "a2a3"} {
  func.func @rank_hog(%a: !pto.ptr<f32>, %ctx: !pto.ptr<i64>) attributes {pto.kernel_kind = #pto.kernel_kind<vector>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c32 = arith.constant 32 : index
    %c256 = arith.constant 256 : index
    %cn = arith.constant LOADS : index
    %low = arith.constant 4294967295 : i64
    %w2 = pto.load_scalar %ctx[%c2] : !pto.ptr<i64> -> i64
    %me64 = arith.andi %w2, %low : i64
    %me = arith.index_cast %me64 : i64 to index
    %n = arith.muli %me, %cn : index
    %t = pto.alloc_tile : !VT
    %ta = pto.make_tensor_view %a, shape = [%c32, %c256], strides = [%c256, %c1] : !TV
    %va = pto.partition_view %ta, offsets = [%c0, %c0], sizes = [%c32, %c256] : !TV -> !PV
    scf.for %i = %c0 to %n step %c1 {
      pto.tload ins(%va : !PV) outs(%t : !VT)
    }
    return
  }
}
"""


def test_a_remote_store_waits_for_the_peers_busy_hbm():
    tgt = _narrow(8.0)
    idle = sim.simulate(_pusher(), tgt, ranks=2, functional=False)
    for loads in (0, 3):
        hog = parse_text(_RANK_HOG.replace("LOADS", str(loads)))
        r = sim.simulate(
            _pusher(), tgt, ranks=2, streams=[hog], functional=False, comm_context="ctx"
        )
        push = r.streams[0][0]
        t = push.trace
        stores = t[(t.opcode == "TPUT") & (t["pipe"] == "PIPE_MTE3")]
        if loads == 0:  # nothing on either rank but the pushers: as without the hog
            assert push.total_cycles == idle.ranks[0].total_cycles
        else:  # rank 1's HBM is busy: rank 0's stores into it take longer
            base = idle.ranks[0].trace
            base = base[(base.opcode == "TPUT") & (base["pipe"] == "PIPE_MTE3")]
            assert (stores.end_cycle - stores.start_cycle).sum() > (
                base.end_cycle - base.start_cycle
            ).sum()
            assert push.total_cycles > idle.ranks[0].total_cycles


@pytest.mark.parametrize("kind", ["tput", "tget"])
def test_more_bytes_never_move_faster(kind):
    def kernel(chunks: int) -> sim.Kernel:
        k = sim.Kernel("move")
        src = k.gm("src", "f32", (8 * chunks, 256))
        dst = k.gm("dst", "f32", (8 * chunks, 256))
        op = k.TPUT if kind == "tput" else k.TGET
        op(dst, src, k.tile("vec", "f32", 8, 256), peer=1 - k.rank_idx)
        return k

    for tgt in (TGT, _narrow(8.0)):
        ends = [
            sim.simulate(kernel(c), tgt, ranks=2, functional=False).total_cycles for c in (1, 2, 3)
        ]
        assert ends[0] < ends[1] < ends[2]


def test_a_link_serves_transfers_in_the_order_they_really_start():
    """Stream ``late`` issues its TPUT at once but its load waits behind a long TLOAD on its
    MTE2 pipe; stream ``early``'s TPUT really starts first on the same directed link and
    must not wait for the late one's bytes. When the late TPUT does start with it (no
    TLOADs before it), the link makes one of them wait."""

    def late(loads: int) -> sim.Kernel:
        k = sim.Kernel("late")
        a = k.gm("a", "f32", (64, 256))
        t = k.tile("vec", "f32", 64, 256)
        for _ in range(loads):
            k.TLOAD(t, a)
        src = k.gm("lsrc", "f32", (16, 256))
        dst = k.gm("ldst", "f32", (16, 256))
        k.TPUT(dst, src, k.tile("vec", "f32", 16, 256), peer=1 - k.rank_idx)
        return k

    def early() -> sim.Kernel:
        k = sim.Kernel("early")
        src = k.gm("esrc", "f32", (16, 256))
        dst = k.gm("edst", "f32", (16, 256))
        k.TPUT(dst, src, k.tile("vec", "f32", 16, 256), peer=1 - k.rank_idx)
        return k

    quiet = dict(functional=False, free="gm_write_queue")
    alone = sim.simulate(early(), ranks=2, **quiet).ranks[0].total_cycles
    r = sim.simulate(late(8), ranks=2, streams=[early()], **quiet)
    t = r.streams[0][0].trace
    late_store = t[(t.opcode == "TPUT") & (t["pipe"] == "PIPE_MTE3")].start_cycle.min()
    assert late_store > alone  # the late TPUT's bytes go when the early one's are through
    assert r.streams[0][1].total_cycles == alone
    met = sim.simulate(late(0), ranks=2, streams=[early()], **quiet)
    stream = 16 * 256 * 4 / (LINKS["bandwidth_gb_per_s"] * 1e9 / CLOCK)
    ends = sorted(s.total_cycles for s in met.streams[0])
    assert ends[0] == alone and abs(ends[1] - alone - stream) <= 2


# A plain TLOAD / TSTORE of a view on the next rank, reached as real kernels reach it
# (communication.md §3): the pointer moved by windowsIn[peer] - windowsIn[rankId].
_PEER_MOVE = """
!VT = !pto.tile_buf<loc=vec, dtype=f32, rows=16, cols=64, v_row=16, v_col=64, blayout=row_major, slayout=none_box, fractal=512, pad=0>
!PV = !pto.partition_tensor_view<16x64xf32>
!TV = !pto.tensor_view<?x?xf32>
module attributes {pto.target_arch = "a2a3"} {
  func.func @peer_move(%src: !pto.ptr<f32>, %out: !pto.ptr<f32>, %ctx: !pto.ptr<i64>) attributes {pto.kernel_kind = #pto.kernel_kind<vector>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c4 = arith.constant 4 : index
    %c16 = arith.constant 16 : index
    %c64 = arith.constant 64 : index
    %c32b = arith.constant 32 : i64
    %low = arith.constant 4294967295 : i64
    %f32b = arith.constant 4 : i64
    %w2 = pto.load_scalar %ctx[%c2] : !pto.ptr<i64> -> i64
    %me64 = arith.andi %w2, %low : i64
    %n64 = arith.shrui %w2, %c32b : i64
    %me = arith.index_cast %me64 : i64 to index
    %n = arith.index_cast %n64 : i64 to index
    %me1 = arith.addi %me, %c1 : index
    %peer = arith.remsi %me1, %n : index
    %myslot = arith.addi %me, %c4 : index
    %pslot = arith.addi %peer, %c4 : index
    %lbase = pto.load_scalar %ctx[%myslot] : !pto.ptr<i64> -> i64
    %pbase = pto.load_scalar %ctx[%pslot] : !pto.ptr<i64> -> i64
    %dbytes = arith.subi %pbase, %lbase : i64
    %delems = arith.divsi %dbytes, %f32b : i64
    %d = arith.index_cast %delems : i64 to index
    %t = pto.alloc_tile : !VT
    %FROM = pto.addptr %src, %DS : !pto.ptr<f32> -> !pto.ptr<f32>
    %TO = pto.addptr %out, %DO : !pto.ptr<f32> -> !pto.ptr<f32>
    %ts = pto.make_tensor_view %FROM, shape = [%c16, %c64], strides = [%c64, %c1] : !TV
    %sv = pto.partition_view %ts, offsets = [%c0, %c0], sizes = [%c16, %c64] : !TV -> !PV
    %to = pto.make_tensor_view %TO, shape = [%c16, %c64], strides = [%c64, %c1] : !TV
    %dv = pto.partition_view %to, offsets = [%c0, %c0], sizes = [%c16, %c64] : !TV -> !PV
    pto.tload ins(%sv : !PV) outs(%t : !VT)
    pto.set_flag[<PIPE_MTE2>, <PIPE_MTE3>, <EVENT_ID0>]
    pto.wait_flag[<PIPE_MTE2>, <PIPE_MTE3>, <EVENT_ID0>]
    pto.tstore ins(%t : !VT) outs(%dv : !PV)ATTR
    return
  }
}
"""
_ATOMIC = " {atomicType = #pto<atomic_type atomic_add>}"


def _peer_move(remote: str, attr: str = ""):
    """``remote``: which side is on the next rank: "store" (TSTORE to the peer's %out),
    "load" (TLOAD of the peer's %src) or "none"; ``attr``: the TSTORE's attributes."""
    zero = "%c0"
    ds, do = {"store": (zero, "%d"), "load": ("%d", zero), "none": (zero, zero)}[remote]
    text = _PEER_MOVE.replace("%DS", ds).replace("%DO", do).replace("ATTR", attr)
    return parse_text(text.replace("%FROM", "%psrc").replace("%TO", "%pout"))


@pytest.mark.parametrize("n", [2, 3])
@pytest.mark.parametrize("remote", ["store", "load"])
def test_a_plain_tload_or_tstore_on_a_peers_window_moves_the_peers_data(n, remote):
    srcs = [np.full((16, 64), r + 1.0, np.float32) for r in range(n)]
    inputs = [{"src": s, "out": np.zeros((16, 64), np.float32)} for s in srcs]
    r = sim.simulate(_peer_move(remote), ranks=n, comm_context="ctx", inputs=inputs)
    for i in range(n):
        out = r.output("out", i).reshape(16, 64)
        if remote == "store":  # rank i - 1 stored its src into rank i's out
            want = srcs[(i - 1) % n]
        else:  # rank i loaded rank i + 1's src and stored it into its own out
            want = srcs[(i + 1) % n]
        np.testing.assert_array_equal(out, want)
        assert not np.array_equal(out, srcs[i])  # not this rank's own data
        np.testing.assert_array_equal(r.output("src", i).reshape(16, 64), srcs[i])


@pytest.mark.parametrize("remote", ["store", "load"])
def test_a_plain_move_on_a_peers_window_costs_the_link(remote):
    nbytes = 16 * 64 * 4
    op = "TSTORE" if remote == "store" else "TLOAD"
    quiet = dict(ranks=2, comm_context="ctx", functional=False, free="gm_first_touch")
    far = sim.simulate(_peer_move(remote), **quiet)
    near = sim.simulate(_peer_move("none"), **quiet)
    for res in (far.ranks[0], far.ranks[1]):
        t = res.trace
        row = t[t.opcode == op].iloc[0]
        assert abs((row.end_cycle - row.start_cycle) - _link_cycles(nbytes)) <= 2
    t = near.ranks[0].trace
    row = t[t.opcode == op].iloc[0]
    assert row.end_cycle - row.start_cycle < _link_cycles(nbytes) / 2  # a local move
    assert far.total_cycles > near.total_cycles


@pytest.mark.parametrize("n", [2, 3])
def test_an_atomic_add_tstore_into_a_peers_window_accumulates_there(n):
    srcs = [np.full((16, 64), r + 1.0, np.float32) for r in range(n)]
    base = [np.arange(16 * 64, dtype=np.float32).reshape(16, 64) * (r + 1) for r in range(n)]
    inputs = [{"src": s, "out": b.copy()} for s, b in zip(srcs, base, strict=True)]
    r = sim.simulate(_peer_move("store", _ATOMIC), ranks=n, comm_context="ctx", inputs=inputs)
    plain = sim.simulate(_peer_move("store"), ranks=n, comm_context="ctx", inputs=inputs)
    for i in range(n):
        got = r.output("out", i).reshape(16, 64)
        np.testing.assert_array_equal(got, base[i] + srcs[(i - 1) % n])
        np.testing.assert_array_equal(plain.output("out", i).reshape(16, 64), srcs[(i - 1) % n])
    assert not any("atomicType" in w for w in r.warnings)  # modelled, not ignored


# A local TSTORE with atomic add, executed ``ITERS`` times: each execution adds once.
_ACCUM = """
!VT = !pto.tile_buf<loc=vec, dtype=f32, rows=8, cols=64, v_row=8, v_col=64, blayout=row_major, slayout=none_box, fractal=512, pad=0>
!PV = !pto.partition_tensor_view<8x64xf32>
!TV = !pto.tensor_view<?x?xf32>
module attributes {pto.target_arch = "a2a3"} {
  func.func @accum(%src: !pto.ptr<f32>, %out: !pto.ptr<f32>) attributes {pto.kernel_kind = #pto.kernel_kind<vector>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %c64 = arith.constant 64 : index
    %n = arith.constant ITERS : index
    %t = pto.alloc_tile : !VT
    %ts = pto.make_tensor_view %src, shape = [%c8, %c64], strides = [%c64, %c1] : !TV
    %sv = pto.partition_view %ts, offsets = [%c0, %c0], sizes = [%c8, %c64] : !TV -> !PV
    %to = pto.make_tensor_view %out, shape = [%c8, %c64], strides = [%c64, %c1] : !TV
    %dv = pto.partition_view %to, offsets = [%c0, %c0], sizes = [%c8, %c64] : !TV -> !PV
    pto.tload ins(%sv : !PV) outs(%t : !VT)
    pto.set_flag[<PIPE_MTE2>, <PIPE_MTE3>, <EVENT_ID0>]
    pto.wait_flag[<PIPE_MTE2>, <PIPE_MTE3>, <EVENT_ID0>]
    scf.for %i = %c0 to %n step %c1 {
      pto.tstore ins(%t : !VT) outs(%dv : !PV) {atomicType = #pto<atomic_type KIND>}
    }
    return
  }
}
"""


@pytest.mark.parametrize("iters", [1, 3])
def test_an_atomic_add_tstore_adds_once_per_execution_and_atomic_none_overwrites(iters):
    rng = np.random.default_rng(iters)
    src = rng.integers(-8, 8, (8, 64)).astype(np.float32)
    out = rng.integers(-8, 8, (8, 64)).astype(np.float32)
    text = _ACCUM.replace("ITERS", str(iters))
    inputs = {"src": src, "out": out}
    add = sim.simulate(parse_text(text.replace("KIND", "atomic_add")), inputs=inputs)
    np.testing.assert_array_equal(add.output("out").reshape(8, 64), out + iters * src)
    none = sim.simulate(parse_text(text.replace("KIND", "atomic_none")), inputs=inputs)
    np.testing.assert_array_equal(none.output("out").reshape(8, 64), src)
    with pytest.raises(sim.UserError, match="atomicType: expected atomic_none or atomic_add"):
        sim.simulate(parse_text(text.replace("KIND", "atomic_max")), inputs=inputs)
