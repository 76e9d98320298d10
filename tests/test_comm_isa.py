"""The communication ISA's smaller pieces: TPUT / TGET's automatic half-chunk split
(communication.md §5.1 step 3), the cache and barrier ops around signals (§6,
instructions-more.md §3.9) and auto mode ordering the communication ops' accesses.

Times are checked against figures read straight from models/a2a3/machine.toml; data against
numpy.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import numpy as np
import pytest

import sim
from sim.base.errors import UserError
from sim.isa.comm import half_split
from sim.isa.tile import TileType

ROOT = Path(__file__).resolve().parent.parent
MACHINE = tomllib.loads((ROOT / "models" / "a2a3" / "machine.toml").read_text())
CLOCK = MACHINE["target"]["clock_hz"]


def _remote(nbytes: int) -> float:
    links = MACHINE["comm"]["links"]
    return links["latency_cycles"] + nbytes / (links["bandwidth_gb_per_s"] * 1e9 / CLOCK)


def _local(path: str, nbytes: int) -> float:
    p = MACHINE["dma"]["paths"][path]
    return p["startup_cycles"] + nbytes // (p["bandwidth_gib_per_s"] * 2**30 / CLOCK)


# --- the half-chunk split (§5.1 step 3) ------------------------------------------------------


# the GM pages' first-touch walks made free: the times below are the staged path's alone
WARM = "gm_first_touch"


def _staged(op: str, rows: int, tile_rows: int = 8, tiles: int = 1) -> sim.Kernel:
    k = sim.Kernel(op)
    src = k.gm("src", "f32", (rows, 256))
    dst = k.gm("dst", "f32", (rows, 256), np.zeros((rows, 256), np.float32))
    stages = [k.tile("vec", "f32", tile_rows, 256) for _ in range(tiles)]
    getattr(k, op)(dst, src, *stages, peer=1 - k.rank_idx)
    return k


def _moves(r, rank: int, op: str, pipe: str) -> list[int]:
    """The bytes of each of ``op``'s items on ``pipe`` (their text: "chunk i/n load N B ...")."""
    t = r.ranks[rank].trace
    rows = t[(t["opcode"] == op) & (t["pipe"] == pipe)]["operands"]
    return [int(re.search(r"(\d+) B\b", s).group(1)) for s in rows]


def test_tput_of_8_to_16_full_tile_chunks_moves_half_tiles_as_ping_pong():
    half = 4 * 256 * 4  # a 4-row half of the 8 x 256 f32 tile
    load, store = _local("GM_UB", half), _remote(half)
    for chunks in (8, 16):
        r = sim.simulate(_staged("TPUT", 8 * chunks), ranks=2, free=WARM)
        for me in (0, 1):  # every element arrived, whatever the chunking
            np.testing.assert_array_equal(r.output("dst", me), r.output("src", 1 - me))
        assert _moves(r, 0, "TPUT", "PIPE_MTE3") == [half] * (2 * chunks)
        # the loads hide behind the (longer) remote stores but the first
        assert abs(r.ranks[0].total_cycles - (load + 2 * chunks * store)) <= 2 * chunks
    full = 8 * 256 * 4
    r = sim.simulate(_staged("TPUT", 8 * 17), ranks=2, functional=False, free=WARM)  # no split
    assert _moves(r, 0, "TPUT", "PIPE_MTE3") == [full] * 17
    one = _local("GM_UB", full) + _remote(full)
    assert abs(r.ranks[0].total_cycles - 17 * one) <= 17


def test_tget_splits_from_8_chunks_up_with_no_upper_bound():
    half = 4 * 256 * 4
    for chunks, split in ((7, False), (8, True), (17, True)):
        r = sim.simulate(_staged("TGET", 8 * chunks), ranks=2, functional=chunks == 17, free=WARM)
        n = 2 * chunks if split else chunks
        assert _moves(r, 1, "TGET", "PIPE_MTE2") == [half * (2 - split)] * n
    for me in (0, 1):
        np.testing.assert_array_equal(r.output("dst", me), r.output("src", 1 - me))
    # remote loads (the longer side) back to back, one local store after the last
    want = 34 * _remote(half) + _local("UB_GM", half)
    assert abs(r.ranks[1].total_cycles - want) <= 34


def test_the_split_needs_one_even_row_major_vec_tile_filled_by_every_chunk():
    vec = TileType("vec", "f32", 8, 256)
    parts = [(8 * i, 8, 0, 256) for i in range(8)]
    got = half_split("tput", vec, 1, parts)
    assert got == [(4 * i, 4, 0, 256) for i in range(16)]
    assert half_split("tput", vec, 2, parts) is None  # a pong tile: step 4 as written
    assert half_split("tput", TileType("vec", "f32", 7, 256), 1, parts) is None
    assert half_split("tput", TileType("vec", "f32", 1, 256), 1, parts) is None
    zn = TileType("vec", "f32", 8, 256, blayout="col_major", slayout="row_major")
    assert half_split("tput", zn, 1, parts) is None
    short = [(8 * i, 8, 0, 128) for i in range(8)]  # valid cols below the capacity
    assert half_split("tput", vec, 1, short) is None
    assert half_split("tput", vec, 1, parts[:7]) is None
    assert half_split("tget", vec, 1, parts * 3) is not None
    assert half_split("tput", vec, 1, parts * 3) is None


def test_the_pong_tile_form_is_not_split():
    r = sim.simulate(_staged("TPUT", 64, tiles=2), ranks=2, functional=False)
    assert _moves(r, 0, "TPUT", "PIPE_MTE3") == [8 * 256 * 4] * 8


# --- the cache and barrier ops (§6, instructions-more.md §3.9) -------------------------------

SYNC = MACHINE["sync"]
_TB = (
    "!pto.tile_buf<loc=vec, dtype=f32, rows=8, cols=64, v_row=8, v_col=64, "
    "blayout=row_major, slayout=none_box, fractal=512, pad=0>"
)
_PV = "!pto.partition_tensor_view<8x64xf32>"
_TV = "!pto.tensor_view<?x?xf32>"
_VEC = "attributes {pto.kernel_kind = #pto.kernel_kind<vector>}"
_FENCED = f"""
module {{
  func.func @k(%x: !pto.ptr<f32>, %y: !pto.ptr<f32>) {_VEC} {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %c64 = arith.constant 64 : index
    %a = pto.alloc_tile : {_TB}
    %tx = pto.make_tensor_view %x, shape = [%c8, %c64], strides = [%c64, %c1] : {_TV}
    %vx = pto.partition_view %tx, offsets = [%c0, %c0], sizes = [%c8, %c64] : {_TV} -> {_PV}
    %ty = pto.make_tensor_view %y, shape = [%c8, %c64], strides = [%c64, %c1] : {_TV}
    %vy = pto.partition_view %ty, offsets = [%c0, %c0], sizes = [%c8, %c64] : {_TV} -> {_PV}
    pto.tload ins(%vx : {_PV}) outs(%a : {_TB})
    pto.tstore ins(%a : {_TB}) outs(%vy : {_PV})
    pto.fence.barrier_all #pto.fence_scope<gm>
    pto.cmo.cacheinvalid %vy single_cache_line
    pto.cmo.cacheinvalid all #pto.address_space<gm>
    pto.dsb "UB"
    return
  }}
}}
"""


def _rows(r, opcode: str):
    t = r.trace
    return t[t["opcode"] == opcode].sort_values("start_cycle")


def test_fence_dsb_and_dcci_parse_print_back_and_cost_the_scalar_unit_in_turn():
    from sim.frontend import parse_text
    from sim.frontend.printer import print_program

    p = parse_text(_FENCED, "fenced.pto")
    text = print_program(p)
    for line in (
        "pto.fence.barrier_all #pto.fence_scope<gm>",
        "pto.cmo.cacheinvalid %vy single_cache_line",
        "pto.cmo.cacheinvalid all #pto.address_space<gm>",
        'pto.dsb "UB"',
    ):
        assert text.count(line) == 1, line
    assert "DDR" not in text  # the fence's own dsb prints with the fence
    assert parse_text(text) == p
    x = np.arange(8 * 64, dtype=np.float32).reshape(8, 64)
    r = sim.simulate(p, "a2a3", inputs={"x": x})
    np.testing.assert_array_equal(r.output("y").reshape(8, 64), x)
    store_end = int(_rows(r, "TSTORE")["end_cycle"].max())
    dsb, dcci = _rows(r, "DSB"), _rows(r, "DCCI")
    assert dsb["duration_cycles"].tolist() == [SYNC["dsb_cycles"]] * 2
    want = [SYNC["dcci_line_cycles"], SYNC["dcci_all_cycles"]]
    assert dcci["duration_cycles"].tolist() == want
    # the fence drains every pipe, then its dsb; each later scalar op waits for the one before
    assert int(dsb["start_cycle"].iloc[0]) == store_end
    starts = [int(dsb["end_cycle"].iloc[0]), *(int(e) for e in dcci["end_cycle"])]
    assert [int(s) for s in dcci["start_cycle"]] + [int(dsb["start_cycle"].iloc[1])] == starts
    assert r.total_cycles == store_end + 2 * SYNC["dsb_cycles"] + sum(want)


def test_the_builder_spells_the_release_and_acquire_patterns():
    k = sim.Kernel("publish")
    me = k.rank_idx
    src = k.gm("src", "f32", (8, 64))
    dst = k.gm("dst", "f32", (8, 64), np.zeros((8, 64), np.float32))
    sig = k.gm("sig", "i32", (1, 1), np.zeros((1, 1), np.int32))
    stage = k.tile("vec", "f32", 8, 64)
    k.TPUT(dst, src, stage, peer=1 - me)
    k.pipe_barrier("PIPE_ALL")  # release: drain, dsb, signal (§6 rule 2)
    k.dsb()
    k.TNOTIFY(sig, 1, op="set", peer=1 - me)
    k.TWAIT(sig, 1, cmp="eq")  # acquire: the wait, then dcci before reading (rule 3)
    k.cache_invalidate(dst)
    k.cache_invalidate()
    r = sim.simulate(k, ranks=2)
    for rank in (0, 1):
        np.testing.assert_array_equal(r.output("dst", rank), r.output("src", 1 - rank))
        t = r.ranks[rank].trace
        put_end = t[t["opcode"] == "TPUT"]["end_cycle"].max()
        dsb = t[t["opcode"] == "DSB"].iloc[0]
        assert dsb["start_cycle"] == put_end
        assert dsb["duration_cycles"] == SYNC["dsb_cycles"]
        assert t[t["opcode"] == "TNOTIFY"]["start_cycle"].iloc[0] == dsb["end_cycle"]
        dcci = t[t["opcode"] == "DCCI"].sort_values("start_cycle")
        assert dcci["start_cycle"].iloc[0] == t[t["opcode"] == "TWAIT"]["end_cycle"].iloc[0]
        assert dcci["duration_cycles"].tolist() == [
            SYNC["dcci_line_cycles"],
            SYNC["dcci_all_cycles"],
        ]


def test_the_builder_forms_print_as_the_ir_spells_them():
    from sim.frontend import parse_text
    from sim.frontend.printer import print_program

    k = sim.Kernel("spell")
    x = k.gm("x", "i32", (1, 8))
    k.dsb()
    k.dsb("SEQ")
    k.cache_invalidate(x[0:1, 2:3])
    k.cache_invalidate()
    text = print_program(k.program())
    assert 'pto.dsb "DDR"' in text and 'pto.dsb "SEQ"' in text
    assert "pto.cmo.cacheinvalid all #pto.address_space<gm>" in text
    assert re.search(r"pto.cmo.cacheinvalid %\S+ single_cache_line", text)
    assert print_program(parse_text(text)) == text


def test_builder_refusals_name_the_rule():
    k = sim.Kernel("bad")
    with pytest.raises(UserError, match=r"dsb: expected one of DDR, UB, ALL, SEQ, found 'L2'"):
        k.dsb("L2")
    with pytest.raises(UserError, match="cache_invalidate: view must be a GM window"):
        k.cache_invalidate(k.tile("vec", "f32", 8, 64))


# --- auto mode orders the communication instructions' accesses -------------------------------


def _pull(peer: bool) -> sim.Kernel:
    """TGET a 16 x 64 block into local ``buf``, then TLOAD it, double it, store it."""
    k = sim.Kernel("pull")
    src = k.gm("src", "f32", (16, 64))
    buf = k.gm("buf", "f32", (16, 64), np.zeros((16, 64), np.float32))
    out = k.gm("out", "f32", (16, 64), np.zeros((16, 64), np.float32))
    stage = k.tile("vec", "f32", 16, 64)
    a = k.tile("vec", "f32", 16, 64)
    k.TGET(buf, src, stage, peer=1 - k.rank_idx if peer else None)
    k.TLOAD(a, buf)
    k.TADD(a, a, a)
    k.TSTORE(out, a)
    return k


def _flat(body):
    from sim.isa.program import For, If, Section

    for st in body:
        if isinstance(st, For | Section):
            yield from _flat(st.body)
        elif isinstance(st, If):
            yield from _flat(st.then_body)
            yield from _flat(st.else_body)
        else:
            yield st


def test_auto_mode_orders_a_tload_after_the_tget_that_fills_its_buffer():
    from sim.frontend.printer import print_program
    from sim.isa.comm import CommOp
    from sim.isa.program import Instr, SetFlag, WaitFlag
    from sim.placement import plan_auto

    plan = plan_auto(_pull(peer=False))
    body = list(_flat(plan.program.main.body))
    tget = next(i for i, s in enumerate(body) if isinstance(s, CommOp))
    tload = next(i for i, s in enumerate(body) if isinstance(s, Instr) and s.opcode == "TLOAD")
    between = body[tget + 1 : tload]
    # PTOAS's rule (communication.md §5.1): the TGET writes buf through MTE3, the TLOAD reads
    # it through MTE2: a flag from one to the other
    sets = [s for s in between if isinstance(s, SetFlag)]
    waits = [s for s in between if isinstance(s, WaitFlag)]
    assert [(s.src, s.dst) for s in sets] == [("PIPE_MTE3", "PIPE_MTE2")]
    assert [(w.src, w.dst, w.event) for w in waits] == [(s.src, s.dst, s.event) for s in sets]
    text = print_program(plan.program)
    assert "pto.comm.tget(" in text and "pto.set_flag[<PIPE_MTE3>, <PIPE_MTE2>," in text
    r = sim.simulate(_pull(peer=True), ranks=2, sync="auto")
    for me in (0, 1):
        got, src = r.output("out", me).ravel(), r.output("src", 1 - me).ravel()
        np.testing.assert_array_equal(got, 2 * src)
        t = r.ranks[me].trace
        stores = t[(t["opcode"] == "TGET") & (t["pipe"] == "PIPE_MTE3")]["end_cycle"].max()
        assert t[t["opcode"] == "TLOAD"]["start_cycle"].min() >= stores


def test_auto_placement_keeps_the_staging_tile_apart_from_a_tile_live_across_the_op():
    from sim.placement import plan_auto

    k = sim.Kernel("keep")
    x = k.gm("x", "f32", (16, 64))
    src = k.gm("src", "f32", (16, 64))
    buf = k.gm("buf", "f32", (16, 64), np.zeros((16, 64), np.float32))
    out = k.gm("out", "f32", (16, 64), np.zeros((16, 64), np.float32))
    stage = k.tile("vec", "f32", 16, 64)
    a = k.tile("vec", "f32", 16, 64)
    k.TLOAD(a, x)  # a is live across the TGET, which uses the staging tile's bytes
    k.TGET(buf, src, stage)
    k.TADD(a, a, a)
    k.TSTORE(out, a)
    plan = plan_auto(k)
    spans = sorted((sl.addrs[0], sl.addrs[0] + sl.nbytes) for sl in plan.slots.values())
    assert len(spans) == 2 and spans[0][1] <= spans[1][0]


def test_auto_mode_orders_a_tstore_before_the_tput_that_reads_it():
    from sim.isa.comm import CommOp
    from sim.isa.program import Instr, SetFlag, WaitFlag
    from sim.placement import plan_auto

    k = sim.Kernel("push")
    x = k.gm("x", "f32", (16, 64))
    mid = k.gm("mid", "f32", (16, 64), np.zeros((16, 64), np.float32))
    dst = k.gm("dst", "f32", (16, 64), np.zeros((16, 64), np.float32))
    a = k.tile("vec", "f32", 16, 64)
    stage = k.tile("vec", "f32", 16, 64)
    k.TLOAD(a, x)
    k.TSTORE(mid, a)  # MTE3 writes mid ...
    k.TPUT(dst, mid, stage)  # ... which the TPUT reads through MTE2
    body = list(_flat(plan_auto(k).program.main.body))
    tstore = next(i for i, s in enumerate(body) if isinstance(s, Instr) and s.opcode == "TSTORE")
    tput = next(i for i, s in enumerate(body) if isinstance(s, CommOp))
    between = body[tstore + 1 : tput]
    assert [(s.src, s.dst) for s in between if isinstance(s, SetFlag)] == [
        ("PIPE_MTE3", "PIPE_MTE2")
    ]
    assert [(s.src, s.dst) for s in between if isinstance(s, WaitFlag)] == [
        ("PIPE_MTE3", "PIPE_MTE2")
    ]
    r = sim.simulate(k, ranks=1, sync="auto", inputs={"x": np.ones((16, 64), np.float32)})
    np.testing.assert_array_equal(r.output("dst", 0).ravel(), np.ones(16 * 64, np.float32))
    t = r.ranks[0].trace
    put_load = t[(t["opcode"] == "TPUT") & (t["pipe"] == "PIPE_MTE2")]["start_cycle"].min()
    assert put_load >= t[t["opcode"] == "TSTORE"]["end_cycle"].max()


def test_the_all_gather_pto_with_the_cache_ops_of_real_kernels():
    """examples/comm/allgather.pto with the model kernels' publish and consume steps
    (communication.md §8.5): dcci of the peer's rows and a fence after each TPUT, a
    whole-cache dcci after the TWAIT; the data is the all-gather's, the ops cost their time."""
    from sim.frontend import parse_text
    from sim.frontend.printer import print_program

    text = (ROOT / "examples" / "comm" / "allgather.pto").read_text()
    put = (
        "      pto.comm.tput(%dv, %sv, buf(%stage) : !PV, !PV, !VT) "
        "{atomicType = #pto<atomic_type atomic_none>}\n"
    )
    wait = "    pto.comm.twait(%mine, %n32 : !SV, i32) {cmp = #pto<wait_cmp ge>}\n"
    assert text.count(put) == 1 and text.count(wait) == 1
    text = text.replace(
        put,
        put
        + "      pto.cmo.cacheinvalid %dv single_cache_line\n"
        + "      pto.fence.barrier_all #pto.fence_scope<gm>\n",
    )
    text = text.replace(wait, wait + "    pto.cmo.cacheinvalid all #pto.address_space<gm>\n")
    program = parse_text(text, "allgather_cmo.pto")
    printed = print_program(program)
    assert printed.count("pto.cmo.cacheinvalid") == 2 and parse_text(printed) == program
    n = 3
    inputs = {"arrived": np.zeros(1, np.int32), "out": np.zeros(16 * 64 * n, np.float32)}
    r = sim.simulate(program, ranks=n, comm_context="ctx", inputs=inputs)
    srcs = np.concatenate([r.output("src", i)[: 16 * 64] for i in range(n)])
    for i in range(n):
        np.testing.assert_array_equal(r.output("out", i), srcs)
        t = r.ranks[i].trace
        dcci = t[t["opcode"] == "DCCI"]
        assert sorted(dcci["duration_cycles"]) == [SYNC["dcci_line_cycles"]] * n + [
            SYNC["dcci_all_cycles"]
        ]
        assert (t["opcode"] == "DSB").sum() == n  # one per fence
        last = dcci["start_cycle"].max()
        assert last == t[t["opcode"] == "TWAIT"]["end_cycle"].max()
