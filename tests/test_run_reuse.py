"""What a run keeps with its program — the program its sync mode runs (auto mode's
prepared copy), compiled scalar code, plans verified clean, a chip's table of static trace
rows and its units' sync items — and what one interpreter shares between equal statements
(the items of equal set / wait flags and barriers) give every later run what a fresh
program gives: its own mode's and target's cycles, and rows that still name each
statement's own line and flag."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest

import sim
from sim.base.errors import UserError
from sim.frontend.parse import parse_text

_TRACE_COLUMNS = [
    "kind",
    "opcode",
    "pipe",
    "start_cycle",
    "end_cycle",
    "waits",
    "records",
    "source",
]


def _auto_kernel() -> sim.Kernel:
    """No sync of its own: auto mode inserts it (a copy of the program per run, were it
    not kept)."""
    k = sim.Kernel("auto_reuse")
    x, y = k.gm("x", "f32", (64, 64)), k.gm("y", "f32", (64, 64))
    a, b = k.tile("vec", "f32", 32, 64, name="a"), k.tile("vec", "f32", 32, 64, name="b")
    for r in (0, 32, 0, 32):
        k.TLOAD(a, x[r : r + 32, :])
        k.TADDS(b, a, 1.0)
        k.TSTORE(y[r : r + 32, :], b)
    return k


def _rows(result) -> pd.DataFrame:
    return result.trace[_TRACE_COLUMNS].astype({c: str for c in ("waits", "records", "source")})


@pytest.mark.parametrize(
    "order", [(None, "ideal", "manual"), ("manual", None, "ideal"), ("ideal", "manual", None)]
)
def test_each_sync_mode_of_one_program_runs_what_a_fresh_program_runs(order):
    fresh = {
        sync: sim.simulate(_auto_kernel().program(), functional=False, sync=sync) for sync in order
    }
    assert fresh[None].total_cycles != fresh["manual"].total_cycles  # auto mode's sync costs
    assert len({r.mode for r in fresh.values()}) == 3
    program = _auto_kernel().program()
    for sync in order + order:
        r = sim.simulate(program, functional=False, sync=sync)
        assert (r.mode, r.total_cycles) == (fresh[sync].mode, fresh[sync].total_cycles)
        pd.testing.assert_frame_equal(_rows(r), _rows(fresh[sync]))


def test_each_target_of_one_program_runs_what_a_fresh_program_runs():
    fresh = {
        t: sim.simulate(_auto_kernel().program(), t, functional=False).total_cycles
        for t in ("a2a3", "a5")
    }
    assert fresh["a2a3"] != fresh["a5"]
    program = _auto_kernel().program()
    for t in ("a5", "a2a3", "a5"):
        assert sim.simulate(program, t, functional=False).total_cycles == fresh[t]


_FLAGS = """module {
  func.func @k(%x: !pto.ptr<f32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %c64 = arith.constant 64 : index
    %tv = pto.make_tensor_view %x, shape = [%c16, %c64], strides = [%c64, %c1] : !pto.tensor_view<?x?xf32>
    %pv = pto.partition_view %tv, offsets = [%c0, %c0], sizes = [%c16, %c64] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<16x64xf32>
    %t = pto.alloc_tile addr = 0 : !pto.tile_buf<vec, 16x64xf32>
    pto.tload ins(%pv : !pto.partition_tensor_view<16x64xf32>) outs(%t : !pto.tile_buf<vec, 16x64xf32>)
    pto.set_flag[<PIPE_MTE2>, <PIPE_V>, <EVENT_ID0>]
    pto.wait_flag[<PIPE_MTE2>, <PIPE_V>, <EVENT_ID0>]
    pto.barrier <PIPE_V>
    pto.tload ins(%pv : !pto.partition_tensor_view<16x64xf32>) outs(%t : !pto.tile_buf<vec, 16x64xf32>)
    pto.set_flag[<PIPE_MTE2>, <PIPE_V>, <EVENT_ID1>]
    pto.wait_flag[<PIPE_MTE2>, <PIPE_V>, <EVENT_ID1>]
    pto.set_flag[<PIPE_MTE2>, <PIPE_V>, <EVENT_ID0>]
    pto.wait_flag[<PIPE_MTE2>, <PIPE_V>, <EVENT_ID0>]
    pto.barrier <PIPE_V>
    return
  }
}
"""


def test_equal_sync_statements_share_an_item_but_keep_their_line_and_flag():
    """Equal set / wait flags and barriers issue one checked item per interpreter (auto
    mode inserts a statement per point); the rows still name each one's own source line
    and event id."""
    tr = sim.simulate(parse_text(_FLAGS, "flags.pto"), functional=False, sync="manual").trace
    sync = tr[tr["kind"] != "op"].sort_values("id")
    lines = [int(s.rsplit(":", 2)[1]) for s in sync["source"].astype(str)]
    assert lines == [11, 12, 13, 15, 16, 17, 18, 19]
    sets = tr[tr["kind"] == "set_flag"].sort_values("id")
    assert len(sets) == 3
    # the flag each set raises shows in the records of the op before it
    loads = tr[tr["opcode"] == "TLOAD"].sort_values("id")["records"].astype(str).tolist()
    assert loads == ["PIPE_MTE2->PIPE_V#0", "PIPE_MTE2->PIPE_V#1;PIPE_MTE2->PIPE_V#0"]
    assert sets["source"].nunique() == 3


def _wide_kernel() -> sim.Kernel:
    """Four live 48 KiB tiles: auto mode places them in a5's 256 KiB UB, not in the
    188 KiB a2a3 leaves free."""
    k = sim.Kernel("wide")
    x, y = k.gm("x", "f32", (128, 384)), k.gm("y", "f32", (32, 384))
    a, b, c, d = (k.tile("vec", "f32", 32, 384, name=n) for n in "abcd")
    for i, t in enumerate((a, b, c, d)):
        k.TLOAD(t, x[32 * i : 32 * i + 32, :])
    k.TADD(a, a, b)
    k.TADD(c, c, d)
    k.TADD(a, a, c)
    k.TSTORE(y, a)
    return k


def test_the_program_auto_mode_prepares_is_the_targets_own():
    program = _wide_kernel().program()
    assert sim.simulate(program, "a5", functional=False).mode == "auto"
    with pytest.raises(UserError, match="auto placement: .* does not fit in UB"):
        sim.simulate(program, "a2a3", functional=False)
    assert sim.simulate(program, "a5", functional=False).mode == "auto"


_DYNAMIC = (
    _FLAGS.replace(
        """    pto.set_flag[<PIPE_MTE2>, <PIPE_V>, <EVENT_ID1>]
    pto.wait_flag[<PIPE_MTE2>, <PIPE_V>, <EVENT_ID1>]
    pto.set_flag[<PIPE_MTE2>, <PIPE_V>, <EVENT_ID0>]
    pto.wait_flag[<PIPE_MTE2>, <PIPE_V>, <EVENT_ID0>]
""",
        """    scf.for %e = %c0 to %c16 step %c1 {
      pto.set_flag_dyn[<PIPE_MTE2>, <PIPE_V>, %e]
      pto.wait_flag_dyn[<PIPE_MTE2>, <PIPE_V>, %e]
    }
""",
    )
    .replace("%c16 step", "%c3 step")
    .replace("    %c64 = ", "    %c3 = arith.constant 3 : index\n    %c64 = ")
)


def test_a_flag_with_a_run_time_event_id_names_each_id_it_takes():
    tr = sim.simulate(parse_text(_DYNAMIC, "dyn.pto"), functional=False, sync="manual").trace
    assert (tr["kind"] == "wait_flag").sum() == (tr["kind"] == "set_flag").sum() == 4
    rec = tr[tr["opcode"] == "TLOAD"].sort_values("id")["records"].astype(str).tolist()
    assert rec[1] == "PIPE_MTE2->PIPE_V#0;PIPE_MTE2->PIPE_V#1;PIPE_MTE2->PIPE_V#2"


def _chip_kernel():
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
    import kernels

    return kernels.build("chip", 8 * 30)


@pytest.mark.parametrize(
    "options",
    [
        ({}, {"detail": "cce"}, {"trace": "ops"}, {}),
        ({"detail": "cce"}, {"functional": True}, {"detail": "cce"}),
    ],
)
def test_the_runs_of_a_chip_kernel_share_their_rows_table_and_sync_items(options):
    """A chip's units record into one table of static rows kept with the program, and the
    units of a kind share their sync statements' items (each carrying its row id): every
    run, whatever rows the runs before it added, gives the trace a fresh program gives."""
    k = _chip_kernel()
    program = k.program()
    for opts in options:
        opts = {"functional": False, **opts}
        want = sim.simulate(_chip_kernel(), **opts).trace
        got = sim.simulate(program, inputs=k.inputs, block_dim=k.block_dim, **opts).trace
        pd.testing.assert_frame_equal(got, want)


def test_a_kernel_hands_out_one_program_until_something_is_added():
    """``Kernel.program()`` gives the same object while the kernel is unchanged — what a
    run keeps with the program then serves the next ``simulate(kernel)`` — and a new one,
    with the addition in it, after an instruction or a token's wait is added."""
    k = sim.Kernel("grows")
    x = k.gm("x", "f32", (16, 64))
    a, b = k.tile("vec", "f32", 16, 64, name="a"), k.tile("vec", "f32", 16, 64, name="b")
    loaded = k.TLOAD(a, x)
    first = k.program()
    assert k.program() is first
    k.TADDS(b, a, 1.0, loaded)  # a wait on the load: a set_flag after the TLOAD too
    second = k.program()
    assert second is not first and k.program() is second
    kinds = [type(st).__name__ for st in second.main.body]
    assert kinds.count("SetFlag") == kinds.count("WaitFlag") == 1
    assert not any(type(st).__name__ == "SetFlag" for st in first.main.body)
    k.TSTORE(x, b)
    assert k.program() is not second
    assert sim.simulate(k, functional=False).trace.equals(sim.simulate(k, functional=False).trace)
