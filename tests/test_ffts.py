"""Cross-core flags (pto.sync.set / sync.wait, FFTS) and the all-core barrier (pto.syncall).

programming-model.md §7.3: a cross-core set carries a 4-bit flag id; SYNCALL reserves ids
11-14. The ffts_mode semantics are the stated ASSUMPTIONs of sim/engine/ffts.py.
"""

from __future__ import annotations

import numpy as np
import pytest
from hang_guard import hang_guard

import sim
from sim.base.errors import DeadlockError, SimulationError, UserError, VerifyError
from sim.frontend import ParseError, parse_text, print_program
from sim.frontend.check import check_program
from sim.isa.program import Scalar, SetFfts, SyncAll, SyncSet, SyncWait
from sim.target import load_target


@pytest.fixture(autouse=True)
def no_hang():
    with hang_guard(60):
        yield


def kernel(body: str, args: str = "%n: index, %v: i32, %w: !pto.ptr<i32>, %a: i64") -> str:
    return f"module {{\n  func.func @k({args}) {{\n{body}\n    return\n  }}\n}}\n"


# --- spellings (pto-ir-in-the-wild.md §2.5, pto-as-syntax.md §6) ---------------------------

WILD = {
    "sync.set-angle": ("pto.sync.set <PIPE_MTE3>, 0", SyncSet("PIPE_MTE3", 0)),
    "sync.wait-angle": ("pto.sync.wait <PIPE_V>, 0", SyncWait("PIPE_V", 0)),
    "sync.set-attr": ("pto.sync.set #pto.pipe<PIPE_M>, 0", SyncSet("PIPE_M", 0)),
    "sync.wait-attr": ("pto.sync.wait #pto.pipe<PIPE_V>, 0", SyncWait("PIPE_V", 0)),
    "sync.set-mode": (
        "pto.sync.set <PIPE_FIX>, 3 {ffts_mode = 2 : i32}",
        SyncSet("PIPE_FIX", 3, 2),
    ),
    "sync.wait-mode": (
        "pto.sync.wait <PIPE_MTE2>, 3 {ffts_mode = 0 : i32}",
        SyncWait("PIPE_MTE2", 3, 0),
    ),
    "sync.set-ssa-mode": (
        "pto.sync.set <PIPE_MTE3>, %n {ffts_mode = 1 : i32}",
        SyncSet("PIPE_MTE3", Scalar("n"), 1),
    ),
    "sync.wait-ssa-mode": (
        "pto.sync.wait <PIPE_MTE3>, %n {ffts_mode = 1 : i32}",
        SyncWait("PIPE_MTE3", Scalar("n"), 1),
    ),
    "sync.set-untyped-mode": (
        "pto.sync.set <PIPE_MTE3>, 15 {ffts_mode = 0}",
        SyncSet("PIPE_MTE3", 15, 0),
    ),
    "set_ffts": ("pto.set_ffts %a : i64", SetFfts(Scalar("a", "i64"))),
    "syncall-1-soft-aiv": (
        "pto.syncall(%v : i32) mode = #pto.sync_all_mode<soft>, "
        "core_type = #pto.sync_core_type<aiv_only>",
        SyncAll("soft", "aiv_only", (Scalar("v", "i32"),)),
    ),
    "syncall-0-hard-mix": (
        "pto.syncall() mode = #pto.sync_all_mode<hard>, core_type = #pto.sync_core_type<mix>",
        SyncAll("hard", "mix"),
    ),
    "syncall-2-soft-aiv": (
        "pto.syncall(%w, %v : !pto.ptr<i32>, i32) mode = "
        "#pto.sync_all_mode<soft>, core_type = #pto.sync_core_type<aiv_only>",
        None,
    ),
    "syncall-1-soft-mix": (
        "pto.syncall(%v : i32) mode = #pto.sync_all_mode<soft>, "
        "core_type = #pto.sync_core_type<mix>",
        None,
    ),
    "syncall-0-hard-aiv": (
        "pto.syncall() mode = #pto.sync_all_mode<hard>, core_type = #pto.sync_core_type<aiv_only>",
        SyncAll("hard", "aiv_only"),
    ),
    "syncall-1-soft-aic": (
        "pto.syncall(%v : i32) mode = #pto.sync_all_mode<soft>, "
        "core_type = #pto.sync_core_type<aic_only>",
        None,
    ),
    "syncall-2-soft-aic": (
        "pto.syncall(%w, %v : !pto.ptr<i32>, i32) mode = "
        "#pto.sync_all_mode<soft>, core_type = #pto.sync_core_type<aic_only>",
        None,
    ),
    "syncall-2-soft-mix": (
        "pto.syncall(%w, %n : !pto.ptr<i32>, index) mode = "
        "#pto.sync_all_mode<soft>, core_type = #pto.sync_core_type<mix>",
        None,
    ),
    "syncall-0-hard-aic": (
        "pto.syncall() mode = #pto.sync_all_mode<hard>, core_type = #pto.sync_core_type<aic_only>",
        SyncAll("hard", "aic_only"),
    ),
    "syncall-0-soft-aiv": (
        "pto.syncall() mode = #pto.sync_all_mode<soft>, core_type = #pto.sync_core_type<aiv_only>",
        SyncAll("soft", "aiv_only"),
    ),
    "syncall-3-soft-aiv": (
        "pto.syncall(%w, %v, %n : !pto.ptr<i32>, i32, index) mode = "
        "#pto.sync_all_mode<soft>, core_type = #pto.sync_core_type<aiv_only>",
        None,
    ),
    "set_intra_block": ("pto.set_intra_block <PIPE_MTE3>, 1", SyncSet("PIPE_MTE3", 1, intra=True)),
    "wait_intra_block": (
        "pto.wait_intra_block <PIPE_MTE3>, 17",
        SyncWait("PIPE_MTE3", 17, intra=True),
    ),
    "set_intra_block-ssa": (
        "pto.set_intra_block #pto.pipe<PIPE_V>, %n",
        SyncSet("PIPE_V", Scalar("n"), intra=True),
    ),
    "syncall-multiline": (
        "pto.syncall(%v : i32)\n      mode = #pto.sync_all_mode<hard>,\n"
        "      core_type = #pto.sync_core_type<mix>",
        SyncAll("hard", "mix", (Scalar("v", "i32"),)),
    ),
}


@pytest.mark.parametrize("name", list(WILD))
def test_every_wild_spelling_parses_prints_and_parses_back(name):
    text, want = WILD[name]
    p = parse_text(kernel("    " + text), "w.pto")
    printed = print_program(p)
    assert parse_text(printed, "w.pto") == p
    assert print_program(parse_text(printed)) == printed
    if want is not None:
        assert p.main.body == (want,)


BAD = {
    "mode-3": ("pto.sync.set <PIPE_V>, 0 {ffts_mode = 3 : i32}", "ffts_mode: expected 0"),
    "unknown-attr": ("pto.sync.wait <PIPE_V>, 0 {mode = 1}", "unknown attribute 'mode'"),
    "pipe-all": ("pto.sync.set <PIPE_ALL>, 0", "expected a pipe of a unit"),
    "unknown-pipe": ("pto.sync.set <PIPE_Q>, 0", "unknown pipe 'PIPE_Q'"),
    "event-name": ("pto.sync.set <PIPE_V>, <EVENT_ID0>", "expected a flag id"),
    "core-type": (
        "pto.syncall() mode = #pto.sync_all_mode<hard>, core_type = #pto.sync_core_type<aiv>",
        "core_type: expected #pto.sync_core_type<",
    ),
    "no-core-type": ("pto.syncall() mode = #pto.sync_all_mode<hard>", "expected 'core_type = ...'"),
    "four-operands": (
        "pto.syncall(%v, %v, %v, %v : i32, i32, i32, i32) mode = "
        "#pto.sync_all_mode<soft>, core_type = #pto.sync_core_type<mix>",
        "at most 3 operands",
    ),
    "ffts-type": ("pto.set_ffts %a : i32", "type mismatch"),
    "intra-mode": ("pto.set_intra_block <PIPE_V>, 1 {ffts_mode = 2}", "unknown attribute"),
}


@pytest.mark.parametrize("name", list(BAD))
def test_bad_spellings_are_one_located_error(name):
    text, what = BAD[name]
    with pytest.raises(ParseError) as e:
        parse_text(kernel("    " + text), "bad.pto")
    assert what in str(e.value) and "bad.pto:3:" in str(e.value)


# --- builder == parser ---------------------------------------------------------------------


def _built():
    k = sim.Kernel("sk", block_dim=2)
    w = k.gm("w", "i32", (1, 8))
    k.set_ffts(0x1000)
    with k.cube():
        k.sync_set("FIX", 3, mode=2)
        k.sync_wait("PIPE_MTE2", 4)
    with k.vector():
        k.sync_wait("MTE2", 3, mode=2)
        k.sync_set("PIPE_MTE3", k.subblock_idx + 4)
    k.syncall(w, 2, mode="soft", core_type="mix")
    k.syncall()
    return k


HAND = """module {
  func.func @sk(%w: !pto.ptr<i32>) {
    %subblock_idx = pto.get_subblock_idx : index
    %w_tv = pto.make_tensor_view %w, shape = [1, 8] strides = [8, 1] : !pto.tensor_view<1x8xi32>
    pto.set_ffts 4096 : i64
    pto.section.cube {
      pto.sync.set <PIPE_FIX>, 3 {ffts_mode = 2}
      pto.sync.wait <PIPE_MTE2>, 4
    }
    pto.section.vector {
      pto.sync.wait #pto.pipe<PIPE_MTE2>, 3 {ffts_mode = 2 : i32}
      %i = arith.addi %subblock_idx, 4 : index
      pto.sync.set <PIPE_MTE3>, %i
    }
    pto.syncall(%w, 2 : !pto.ptr<i32>, i32)
        mode = #pto.sync_all_mode<soft>,
        core_type = #pto.sync_core_type<mix>
    pto.syncall() mode = #pto.sync_all_mode<hard>, core_type = #pto.sync_core_type<mix>
    return
  }
}
"""


def test_builder_and_parser_make_the_same_cross_core_program():
    built = _built().program()
    hand = parse_text(HAND, "hand.pto")
    assert print_program(hand) == print_program(built)
    assert hand == built  # statements compare by value (not location)
    assert parse_text(print_program(built)) == built


def test_builder_rejects_bad_arguments():
    k = sim.Kernel("b")
    with pytest.raises(UserError, match="0..15"):
        k.sync_set("V", 16)
    with pytest.raises(UserError, match="ffts_mode"):
        k.sync_wait("V", 1, mode=3)
    with pytest.raises(UserError, match="PIPE_ALL"):
        k.sync_set("ALL", 1)
    with pytest.raises(UserError, match="core_type"):
        k.syncall(mode="hard", core_type="all")


# --- cube -> vector through GM --------------------------------------------------------------


def _cube_to_vector(pipe, bd=2):
    """The AIC writes a tile to GM (acc over PIPE_FIX, or its L1 copy of A over PIPE_MTE3),
    sets flag 3; each AIV waits for it on MTE2, loads its half, doubles it, stores it."""
    k = sim.Kernel("c2v_gm", block_dim=bd)
    a = k.gm("a", "f16", (16 * bd, 32))
    b = k.gm("b", "f16", (32, 64))
    cols, dt = (64, "f32") if pipe == "FIX" else (32, "f16")
    w = k.gm("w", dt, (16 * bd, cols))
    out = k.gm("out", dt, (16 * bd, cols))
    row = k.block_idx * 16
    with k.cube():
        ma = k.tile("mat", "f16", 16, 32, blayout="col_major", slayout="row_major")
        e1 = k.TLOAD(ma, a[row : row + 16, :])
        if pipe == "FIX":
            mb = k.tile("mat", "f16", 32, 64, blayout="col_major", slayout="row_major")
            la = k.tile("left", "f16", 16, 32, slayout="row_major")
            rb = k.tile("right", "f16", 32, 64, slayout="col_major")
            acc = k.tile(
                "acc", "f32", 16, 64, blayout="col_major", slayout="row_major", fractal=1024
            )
            e2 = k.TLOAD(mb, b)
            e = k.TMATMUL(acc, la, rb, k.TEXTRACT(la, ma, 0, 0, e1), k.TMOV(rb, mb, e2))
            e = k.TSTORE(w[row : row + 16, :], acc, e)
        else:
            e = k.TSTORE(w[row : row + 16, :], ma, e1)
        k.sync_set(pipe, 3, e)
    with k.vector():
        k.sync_wait("MTE2", 3)
        t = k.tile("vec", dt, 8, cols)
        r0 = row + k.subblock_idx * 8
        e = k.TLOAD(t, w[r0 : r0 + 8, :])
        e = k.TMULS(t, t, 2.0, e)
        k.TSTORE(out[r0 : r0 + 8, :], t, e)
    return k


@pytest.mark.parametrize("pipe", ["FIX", "MTE3"])
def test_vector_units_load_what_the_cube_stored_after_its_set(pipe):
    r = sim.simulate(_cube_to_vector(pipe))
    A = r.output("a").reshape(32, 32).astype(np.float32)
    B = r.output("b").reshape(32, 64).astype(np.float32)
    want = 2 * (A @ B) if pipe == "FIX" else 2 * A
    np.testing.assert_allclose(
        r.output("out").reshape(want.shape).astype(np.float32), want, rtol=1e-3, atol=1e-2
    )
    tr = r.trace
    for core in (0, 1):
        aic = tr[(tr.core == core) & (tr.unit == "AIC")]
        store_end = aic[(aic.opcode == "TSTORE")].end_cycle.max()
        set_at = aic[aic.opcode == "sync.set"]
        assert set_at["pipe"].tolist() == [f"PIPE_{pipe}"]
        assert int(set_at.start_cycle.iloc[0]) == store_end  # fires when its pipe is done
        for unit in ("AIV0", "AIV1"):
            aiv = tr[(tr.core == core) & (tr.unit == unit)]
            wait = aiv[aiv.opcode == "sync.wait"]
            # the wait holds issue (PIPE_S, ASSUMPTION of sim.engine.ffts) for PIPE_MTE2
            assert wait["pipe"].tolist() == ["PIPE_S"] and int(wait.end_cycle.iloc[0]) == store_end
            assert wait.operands.tolist() == ["FFTS flag 3 (ffts_mode 2) for PIPE_MTE2"]
            load = aiv[(aiv.opcode == "TLOAD")]
            assert int(load.start_cycle.min()) >= store_end


def test_without_the_flag_the_vector_load_overlaps_the_store():
    """The flag is what orders them: dropping the wait lets the AIV load start at once."""
    k = _cube_to_vector("FIX", bd=1)
    p = k.program()
    import attrs

    from sim.isa.program import Section

    fn = p.main
    body = tuple(
        attrs.evolve(st, body=tuple(s for s in st.body if type(s) is not SyncWait))
        if isinstance(st, Section)
        else st
        for st in fn.body
    )
    p = attrs.evolve(p, functions=(attrs.evolve(fn, body=body),))
    tr = sim.simulate(p).trace
    store_end = tr[(tr.unit == "AIC") & (tr.opcode == "TSTORE")].end_cycle.max()
    assert tr[(tr.unit == "AIV0") & (tr.opcode == "TLOAD")].start_cycle.min() < store_end


# --- mode 0 / mode 1 / syncall across cores -------------------------------------------------

_HEAD = """module {
  func.func @k(%x: !pto.ptr<f32>, %y: !pto.ptr<f32>) attributes {pto.kernel_kind = #pto.kernel_kind<vector>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c8 = arith.constant 8 : index
    %c16 = arith.constant 16 : index
    %c64 = arith.constant 64 : index
    %b = pto.get_block_idx : index
    %nb = pto.get_block_num : index
    %rows = arith.muli %nb, %c16 : index
    %tv = pto.make_tensor_view %x, shape = [%rows, %c64], strides = [%c64, %c1] : !pto.tensor_view<?x?xf32>
    %uv = pto.make_tensor_view %y, shape = [%rows, %c64], strides = [%c64, %c1] : !pto.tensor_view<?x?xf32>
    %r0 = arith.muli %b, %c16 : index
    %t = pto.alloc_tile : !pto.tile_buf<vec, 16x64xf32>
    %pv = pto.partition_view %tv, offsets = [%r0, %c0], sizes = [%c16, %c64] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<16x64xf32>
    pto.tload ins(%pv : !pto.partition_tensor_view<16x64xf32>) outs(%t : !pto.tile_buf<vec, 16x64xf32>)
    %slow = arith.cmpi eq, %b, %c2 : index
    %n = arith.select %slow, %c8, %c0 : index
    scf.for %i = %c0 to %n step %c1 {
      %s = arith.constant 1.0 : f32
      pto.tadds ins(%t, %s : !pto.tile_buf<vec, 16x64xf32>, f32) outs(%t : !pto.tile_buf<vec, 16x64xf32>)
    }
    %uo = pto.partition_view %uv, offsets = [%r0, %c0], sizes = [%c16, %c64] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<16x64xf32>
    pto.tstore ins(%t : !pto.tile_buf<vec, 16x64xf32>) outs(%uo : !pto.partition_tensor_view<16x64xf32>)
"""
_TAIL = """    %nxt0 = arith.addi %b, %c1 : index
    %nxt = arith.remsi %nxt0, %nb : index
    %r1 = arith.muli %nxt, %c16 : index
    %pn = pto.partition_view %uv, offsets = [%r1, %c0], sizes = [%c16, %c64] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<16x64xf32>
    pto.tload ins(%pn : !pto.partition_tensor_view<16x64xf32>) outs(%t : !pto.tile_buf<vec, 16x64xf32>)
    %pw = pto.partition_view %tv, offsets = [%r0, %c0], sizes = [%c16, %c64] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<16x64xf32>
    pto.tstore ins(%t : !pto.tile_buf<vec, 16x64xf32>) outs(%pw : !pto.partition_tensor_view<16x64xf32>)
    return
  }
}
"""
_MIDDLES = {
    "mode0": "    pto.sync.set <PIPE_MTE3>, 5 {ffts_mode = 0 : i32}\n"
    "    pto.sync.wait <PIPE_MTE2>, 5 {ffts_mode = 0 : i32}\n",
    "hard": "    pto.syncall() mode = #pto.sync_all_mode<hard>, core_type = #pto.sync_core_type<aiv_only>\n",
    "soft": "    pto.syncall() mode = #pto.sync_all_mode<soft>, core_type = #pto.sync_core_type<aiv_only>\n",
}


def _neighbours(middle, cores=4):
    """Each core doubles... no: core 2 adds 1 eight times (slow), every core stores its rows
    to y, meets the others, then loads the next core's rows of y into its rows of x."""
    p = parse_text(_HEAD + _MIDDLES[middle] + _TAIL, f"{middle}.pto")
    x = np.arange(16 * cores * 64, dtype=np.float32)
    # the page walks of first touches free: a store waiting for the walk another core's
    # store started would end with it, hiding which core is late
    r = sim.simulate(p, block_dim=cores, inputs={"x": x.copy()}, free="gm_first_touch")
    return r, x.reshape(-1, 64)


@pytest.mark.parametrize("middle", list(_MIDDLES))
def test_every_core_waits_for_the_slow_one_before_reading_its_rows(middle):
    r, X = _neighbours(middle)
    Y = X.copy()
    Y[32:48] += 8  # core 2's eight TADDS
    np.testing.assert_array_equal(r.output("y").reshape(64, 64), Y)
    np.testing.assert_array_equal(r.output("x").reshape(64, 64), np.roll(Y, -16, axis=0))
    tr = r.trace
    slow_store = int(tr[(tr.core == 2) & (tr.opcode == "TSTORE")].end_cycle.min())
    fast_store = int(tr[(tr.core == 0) & (tr.opcode == "TSTORE")].end_cycle.min())
    assert fast_store < slow_store  # core 2 really is late
    wait_op = "sync.wait" if middle == "mode0" else "syncall"
    waits = tr[(tr.opcode == wait_op) & (tr.kind == "wait_flag")]
    assert sorted(waits.core.unique()) == [0, 1, 2, 3]
    assert (waits.end_cycle >= slow_store).all()  # nobody passes before core 2 arrives
    second = tr[(tr.opcode == "TLOAD")].groupby("core").start_cycle.max()
    assert (second >= slow_store).all()


def test_a_syncall_in_a_loop_meets_once_per_iteration():
    """The second execution of a syncall statement issues its items again (they are kept
    per statement as a tuple, which the walk once handed to the pipes as one item)."""
    loop = f"    scf.for %j = %c0 to %c2 step %c1 {{\n  {_MIDDLES['hard']}    }}\n"
    p = parse_text(_HEAD + loop + _TAIL, "loop.pto")
    x = np.arange(16 * 4 * 64, dtype=np.float32)
    r = sim.simulate(p, block_dim=4, inputs={"x": x.copy()})
    Y = x.reshape(-1, 64).copy()
    Y[32:48] += 8
    np.testing.assert_array_equal(r.output("x").reshape(64, 64), np.roll(Y, -16, axis=0))
    tr = r.trace
    waits = tr[(tr.opcode == "syncall") & (tr.kind == "wait_flag")]
    assert waits.groupby("core").size().to_dict() == {0: 2, 1: 2, 2: 2, 3: 2}
    slow_store = int(tr[(tr.core == 2) & (tr.opcode == "TSTORE")].end_cycle.min())
    assert (waits.groupby("core").end_cycle.min() >= slow_store).all()


def test_soft_syncall_costs_gm_traffic_the_hard_one_does_not():
    hard, _ = _neighbours("hard")
    soft, _ = _neighbours("soft")
    blocks = soft.trace[soft.trace.opcode == "SYNCALL"]
    assert sorted(set(blocks["pipe"])) == ["PIPE_MTE2", "PIPE_MTE3"]
    assert set(blocks.bytes) == {32} and len(blocks) == 8  # write + read on 4 cores
    assert (hard.trace.opcode == "SYNCALL").sum() == 0
    assert soft.total_cycles > hard.total_cycles


def test_mode1_waits_for_both_vector_units_of_the_core():
    k = sim.Kernel("m1", block_dim=1)
    x = k.gm("x", "f32", (16, 64))
    with k.vector():
        t = k.tile("vec", "f32", 8, 64)
        r0 = k.subblock_idx * 8
        e = k.TLOAD(t, x[r0 : r0 + 8, :])
        k.sync_set("MTE2", 1, e, mode=1)
        k.sync_wait("V", 1, mode=1)
        k.TMULS(t, t, 2.0)
    with k.cube():
        k.sync_wait("MTE2", 7)  # never set: checks the message
    with pytest.raises(DeadlockError) as e:
        sim.simulate(k)
    assert (
        "core 0 AIC PIPE_S (dispatch) waits for flag FFTS flag 7 (ffts_mode 2) for PIPE_MTE2"
        in str(e.value)
    )
    assert "no set yet from core 0 AIV0, core 0 AIV1" in str(e.value)
    assert "AIV0" not in {s["unit"] for s in e.value.stuck}  # the vector units finished


# --- deadlocks and the 4-bit counter ---------------------------------------------------------

_NOT_REACHED = kernel(
    """    %b = pto.get_block_idx : index
    %c0 = arith.constant 0 : index
    %z = arith.cmpi ne, %b, %c0 : index
    scf.if %z {
      pto.syncall() mode = #pto.sync_all_mode<hard>, core_type = #pto.sync_core_type<aiv_only>
    }""",
    args="%x: !pto.ptr<f32>",
)


def test_a_syncall_one_core_never_reaches_is_a_deadlock_naming_it():
    with pytest.raises(DeadlockError) as e:
        sim.simulate(parse_text(_NOT_REACHED, "nr.pto"), block_dim=3)
    msg = str(e.value)
    for core in (1, 2):
        assert (
            f"core {core} AIV0 PIPE_S (dispatch) waits for flag syncall hard aiv_only "
            f"(FFTS flag 14 SYNC_AIV_ONLY_ALL, 3 units)"
        ) in msg
    assert "no set yet from core 0 AIV0" in msg and "nr.pto:7:7" in msg
    assert sorted(s["core"] for s in e.value.stuck) == [1, 2]


def test_a_wait_no_set_can_satisfy_names_core_unit_pipe_flag():
    text = """module {
  func.func @k() {
    pto.section.cube {
      pto.sync.set <PIPE_FIX>, 1
    }
    pto.section.vector {
      pto.sync.wait <PIPE_MTE2>, 2 {ffts_mode = 2 : i32}
    }
    return
  }
}
"""
    with pytest.raises(DeadlockError) as e:
        sim.simulate(parse_text(text, "w.pto"), block_dim=2)
    msg = str(e.value)
    assert (
        "core 1 AIV1 PIPE_S (dispatch) waits for flag FFTS flag 2 (ffts_mode 2) for "
        "PIPE_MTE2 (#0 sync.wait (w.pto:7:7)): no set yet from core 1 AIC"
    ) in msg
    with pytest.raises(VerifyError, match="never set"):  # check sees it without a run
        check_program(parse_text(text, "w.pto"), load_target("a2a3"))


def _repeated_sets(n_sets, n_waits):
    k = sim.Kernel("many")
    with k.cube():
        for _ in range(n_sets):
            k.sync_set("S", 4)
    with k.vector():
        for _ in range(n_waits):
            k.sync_wait("S", 4)
    return k


def test_fifteen_pending_sets_fit_the_counter_a_sixteenth_is_an_error():
    sim.simulate(_repeated_sets(15, 15))
    sim.simulate(_repeated_sets(30, 30), sync="ideal")  # ideal sync never blocks
    with pytest.raises(SimulationError) as e:
        sim.simulate(_repeated_sets(16, 16))
    assert "core 0 AIC: FFTS flag 4 (ffts_mode 2): a 16th pending set toward core 0 AIV0" in str(
        e.value
    )


def test_a_wait_consumes_one_set_so_a_second_wait_deadlocks():
    with pytest.raises(
        DeadlockError, match="core 0 AIV0 PIPE_S .dispatch. waits for flag FFTS flag 4"
    ):
        sim.simulate(_repeated_sets(1, 2))


# --- check rules ----------------------------------------------------------------------------


def _check(body):
    text = kernel(body)
    check_program(parse_text(text, "c.pto"), load_target("a2a3"))


@pytest.mark.parametrize(
    "body, what",
    [
        ("    pto.sync.set <PIPE_V>, 16\n    pto.sync.wait <PIPE_V>, 16", "expected 0..15"),
        (
            "    pto.sync.set <PIPE_V>, 12\n    pto.sync.wait <PIPE_V>, 12\n"
            "    pto.syncall() mode = #pto.sync_all_mode<hard>, core_type = #pto.sync_core_type<mix>",
            "reserved by pto.syncall",
        ),
        ("    pto.section.cube {\n      pto.sync.set <PIPE_V>, 1\n    }", "without PIPE_V"),
        (
            "    pto.section.cube {\n      pto.sync.set <PIPE_FIX>, 1 {ffts_mode = 1 : i32}\n    }",
            "ffts_mode 1",
        ),
        (
            "    pto.section.vector {\n      pto.sync.set <PIPE_MTE3>, 1\n"
            "      pto.sync.wait <PIPE_MTE2>, 1\n    }",
            "never set",
        ),  # mode 2: needs the cube
    ],
)
def test_check_rejects_what_cannot_run(body, what):
    with pytest.raises(VerifyError, match=what):
        _check(body)


def test_check_accepts_matched_and_dynamic_flags():
    _check(
        "    pto.section.cube {\n      pto.sync.set <PIPE_FIX>, 1\n    }\n"
        "    pto.section.vector {\n      pto.sync.wait <PIPE_MTE2>, 1\n"
        "      pto.sync.set <PIPE_MTE3>, %n {ffts_mode = 0 : i32}\n"
        "      pto.sync.wait <PIPE_MTE2>, 9 {ffts_mode = 0 : i32}\n    }\n"
        "    pto.syncall() mode = #pto.sync_all_mode<hard>, core_type = #pto.sync_core_type<mix>"
    )


def test_run_rejects_a_flag_id_outside_4_bits_and_mode_1_on_the_cube():
    k = sim.Kernel("bad")
    with k.cube():
        k.sync_set("FIX", 1, mode=1)
    with pytest.raises(UserError, match="ffts_mode 1 synchronises the vector units"):
        sim.simulate(k)
    text = kernel("    %c = arith.constant 20 : index\n    pto.sync.set <PIPE_V>, %c", args="")
    with pytest.raises(UserError, match="flag id: expected 0..15"):
        sim.simulate(parse_text(text))


def test_set_ffts_is_recorded_and_costs_nothing():
    text = kernel("    %a = arith.constant 4096 : i64\n    pto.set_ffts %a : i64", args="")
    tr = sim.simulate(parse_text(text)).trace
    row = tr[tr.opcode == "set_ffts"]
    assert row.operands.tolist() == ["FFTS base <- 4096"] and row.duration_cycles.tolist() == [0]


def test_cli_runs_a_syncall_kernel_and_reports_its_deadlock(tmp_path, capsys):
    from sim.cli import main

    f = tmp_path / "nr.pto"
    f.write_text(_NOT_REACHED)
    assert main(["run", str(f), "--block-dim", "2", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ptosim: error: deadlock") and "core 1 AIV0" in err
    assert main(["run", str(f), "--block-dim", "1", "--quiet"]) == 0


@pytest.mark.parametrize(
    "core_type, units",
    [("mix", {"AIC", "AIV0", "AIV1"}), ("aic_only", {"AIC"}), ("aiv_only", {"AIV0", "AIV1"})],
)
def test_syncall_core_type_picks_the_units_that_meet(core_type, units):
    """The cubes load a large tile first; the units of ``core_type`` meet after it."""
    k = sim.Kernel("mix", block_dim=2)
    a = k.gm("a", "f16", (128, 256))
    with k.cube():
        m = k.tile("mat", "f16", 128, 256, blayout="col_major", slayout="row_major")
        k.TLOAD(m, a)
    with k.vector():
        t = k.tile("vec", "f16", 16, 64)
        k.TLOAD(t, a[0:16, 0:64])
    k.syncall(mode="hard", core_type=core_type)
    tr = sim.simulate(k).trace
    meet = tr[(tr.opcode == "syncall") & (tr.kind == "wait_flag")]
    assert set(meet.unit) == units and sorted(set(meet.core)) == [0, 1]
    last_load = tr[(tr.opcode == "TLOAD") & tr.unit.isin(list(units))].end_cycle.max()
    assert (meet.end_cycle == last_load).all()  # everyone leaves with the slowest


# --- A5 set_intra_block / wait_intra_block ----------------------------------------------------


def _intra(both=True):
    """Each AIV doubles its half of a and stores it to w, then tells the cube (id 5); the
    cube waits for both (5 and 21), then releases AIV0 (3) and AIV1 (19); each AIV then
    copies the *other* AIV's half of w to its half of out."""
    k = sim.Kernel("ib", block_dim=2)
    a, w, out = (k.gm(n, "f16", (32, 32)) for n in ("a", "w", "out"))
    row = k.block_idx * 16
    with k.cube():
        k.wait_intra_block("MTE2", 5)
        k.wait_intra_block("MTE2", 21)
        k.set_intra_block("MTE2", 3)
        if both:
            k.set_intra_block("MTE2", 19)
    with k.vector():
        t, u = k.tile("vec", "f16", 8, 32), k.tile("vec", "f16", 8, 32)
        r0 = row + k.subblock_idx * 8
        e = k.TLOAD(t, a[r0 : r0 + 8, :])
        e = k.TMULS(t, t, 2.0, e)
        e = k.TSTORE(w[r0 : r0 + 8, :], t, e)
        k.set_intra_block("MTE3", 5, e)
        k.wait_intra_block("MTE2", 3)
        other = row + 8 - k.subblock_idx * 8
        k.TSTORE(out[r0 : r0 + 8, :], u, k.TLOAD(u, w[other : other + 8, :]))
    return k


def test_intra_block_ids_address_each_vector_unit_through_the_cube():
    r = sim.simulate(_intra(), "a5", races=True)
    W = 2 * r.output("a").reshape(32, 32).astype(np.float32)
    want = np.concatenate([W[8:16], W[0:8], W[24:32], W[16:24]])
    np.testing.assert_array_equal(r.output("out").reshape(32, 32).astype(np.float32), want)
    assert [x for x in r.races if x.kind in ("RAW", "WAR", "WAW")] == []  # ordered via the cube
    tr = r.trace
    for core in (0, 1):
        stores = tr[(tr.core == core) & (tr.opcode == "TSTORE")]
        last_w = stores.groupby("unit").end_cycle.min().max()  # both halves of w written
        loads = tr[(tr.core == core) & (tr.opcode == "TLOAD")].groupby("unit").start_cycle.max()
        assert (loads >= last_w).all()
    assert "pto.set_intra_block #pto.pipe<PIPE_MTE2>, 19" in print_program(_intra().program())


def test_intra_block_without_the_second_id_leaves_aiv1_waiting():
    with pytest.raises(DeadlockError) as e:
        sim.simulate(_intra(both=False), "a5")
    msg = str(e.value)
    assert (
        "core 0 AIV1 PIPE_S (dispatch) waits for flag intra-block flag 3 AIC->AIV1 for PIPE_MTE2"
    ) in msg and "no set yet from core 0 AIC" in msg
    assert "AIV0" not in msg


def test_intra_block_ids_are_checked():
    k = sim.Kernel("ib")
    with k.vector():
        k.set_intra_block("MTE3", 16)
    with k.cube():
        k.wait_intra_block("MTE2", 16)
    with pytest.raises(UserError, match="flag id on core 0 AIV0: expected 0..15"):
        sim.simulate(k, "a5")
    with pytest.raises(UserError, match="expected an int 0..31"):
        k.set_intra_block("MTE3", 32)
    with pytest.raises(VerifyError, match="expected 0..15 .intra-block ids"):
        check_program(k.program(), load_target("a5"))
    with pytest.raises(VerifyError, match="no set_intra_block of the other unit kind"):
        _check(
            "    pto.section.cube {\n      pto.set_intra_block <PIPE_MTE2>, 19\n    }\n"
            "    pto.section.vector {\n      pto.wait_intra_block <PIPE_MTE2>, 4\n    }"
        )
    _check(
        "    pto.section.cube {\n      pto.set_intra_block <PIPE_MTE2>, 19\n    }\n"
        "    pto.section.vector {\n      pto.wait_intra_block <PIPE_MTE2>, 3\n    }"
    )
