"""Races across units and cores on GM (sim.engine.xraces): two units touching the same GM
bytes with no FIFO, cross-core flag or syncall between them."""

from __future__ import annotations

import attrs
import pytest
from hang_guard import hang_guard
from test_ffts import _HEAD, _MIDDLES, _TAIL, _cube_to_vector

import sim
from sim.frontend import parse_text
from sim.isa.program import Section, SyncSet, SyncWait


@pytest.fixture(autouse=True)
def no_hang():
    with hang_guard(60):
        yield


def _without_cross_core_flags(program):
    fn = program.main
    body = tuple(
        attrs.evolve(st, body=tuple(s for s in st.body if type(s) not in (SyncSet, SyncWait)))
        if isinstance(st, Section)
        else st
        for st in fn.body
    )
    return attrs.evolve(program, functions=(attrs.evolve(fn, body=body),))


def _gm_races(r):
    return [x for x in r.races if x.kind in ("RAW", "WAR", "WAW")]


def test_a_cube_store_and_a_vector_load_race_unless_a_flag_orders_them():
    k = _cube_to_vector("FIX", bd=2)
    assert _gm_races(sim.simulate(k, races=True)) == []
    found = _gm_races(sim.simulate(_without_cross_core_flags(k.program()), races=True, block_dim=2))
    assert len(found) == 4  # each AIV of each core against its AIC
    pairs = {(x.first.split(" PIPE")[0], x.second.split(" PIPE")[0]) for x in found}
    assert pairs == {(f"core {c} AIV{s}", f"core {c} AIC") for c in (0, 1) for s in (0, 1)}
    msg = found[0].message
    assert msg.startswith("WAR race in GM:w: core 0 AIV0 PIPE_MTE2 #0 TLOAD")
    assert "core 0 AIC PIPE_FIX" in msg and "no flag, FIFO or syncall ordering them" in msg


@pytest.mark.parametrize("middle", ["", *_MIDDLES])
def test_cores_reading_each_others_rows_race_without_a_barrier(middle):
    p = parse_text(_HEAD + _MIDDLES.get(middle, "") + _TAIL, "n.pto")
    # the page walks free: a store waiting for the walk another core's store started ends
    # with it, and which core is late would be hidden
    found = _gm_races(sim.simulate(p, block_dim=4, races=True, free="gm_first_touch"))
    if middle:
        assert found == []
        return
    # each core's store of its rows of y against the previous core's load of them: a RAW
    # when the store came first, a WAR when the load did (core 2 is slow: core 1 reads its
    # rows before they are written, with the data-path costs of machine.toml)
    assert {x.kind for x in found} <= {"RAW", "WAR"} and len(found) == 4
    assert {frozenset((x.first.split(" PIPE")[0], x.second.split(" PIPE")[0])) for x in found} == {
        frozenset((f"core {(c + 1) % 4} AIV0", f"core {c} AIV0")) for c in range(4)
    }
    assert [
        x.kind
        for x in found
        if "core 2 AIV0" in (x.first + x.second) and "core 1 AIV0" in (x.first + x.second)
    ] == ["WAR"]


def _blocks(col1):
    """Two cores store 16 x 32 blocks of one 16 x 64 matrix at columns 0 and ``col1``."""
    k = sim.Kernel("blocks", block_dim=2)
    y = k.gm("y", "f32", (16, 64))
    t = k.tile("vec", "f32", 16, 32)
    col = k.block_idx * col1
    k.TEXPANDS(t, 1.0)
    k.TSTORE(y.view(16, 32, 0, col), t)
    return k


def test_column_blocks_of_one_matrix_do_not_race_overlapping_ones_do():
    assert _gm_races(sim.simulate(_blocks(32), races=True)) == []
    found = _gm_races(sim.simulate(_blocks(16), races=True))
    assert [x.kind for x in found] == ["WAW"]
    assert (
        "core 0 AIV0 PIPE_MTE3" in found[0].message and "core 1 AIV0 PIPE_MTE3" in found[0].message
    )


def test_a_fifo_orders_the_gm_the_producer_wrote_before_pushing():
    k = sim.Kernel("ff", block_dim=1)
    w = k.gm("w", "f32", (16, 64))
    f = k.fifo("c2v", "f32", 16, 64)
    with k.cube():
        acc = k.tile("acc", "f32", 16, 64, blayout="col_major", slayout="row_major", fractal=1024)
        e = k.TSTORE(w, acc)
        k.tpush(f, acc, e)
    with k.vector():
        k.tpop(f)
        t = k.tile("vec", "f32", 16, 64)
        k.TLOAD(t, w)
        k.tfree(f)
    assert _gm_races(sim.simulate(k, races=True)) == []


def test_check_races_runs_the_kernels_cores_and_names_the_unit(tmp_path, capsys):
    from sim.cli import main
    from sim.studies import check_races

    k = _blocks(16)  # a builder kernel brings block_dim=2
    assert [f.kind for f in check_races(k) if f.kind == "WAW"] == ["WAW"]
    assert [f.kind for f in check_races(k, block_dim=1) if f.kind == "WAW"] == []
    f = tmp_path / "n.pto"
    f.write_text(_HEAD + _TAIL)
    assert main(["check", "--races", str(f), "--block-dim", "4"]) == 1
    out = capsys.readouterr().out
    assert "RAW: RAW race in GM:y: core 1 AIV0 PIPE_MTE3" in out
    assert "RAW: core 0 AIV0: RAW race in UB: PIPE_MTE2 #0 TLOAD" in out  # unit-local
