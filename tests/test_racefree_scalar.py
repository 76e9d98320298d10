"""The proof of race freedom (``sim.engine.racefree``) with the scalar unit's own accesses
(``load_scalar``, ``store_scalar``, ``tgetval``): the race detector checks each as an access
of PIPE_S at the dispatcher's clock, which the dispatcher then takes (what is issued after it
is ordered after it); the proof follows the same order. It stays sound — True only where the
detector, run on the same kernel, finds nothing — and it goes through on the kernels that
read their communication context and queue words with scalar loads (``gemm_ar``), whose
chips once all ran again with the detector.

* random single-unit kernels synchronised by construction with scalar accesses mixed in,
  whole and with one sync edit: the detector on the event path, the proof on the timed
  path's log (as ``tests/test_racefree.py`` does without scalar accesses);
* chip kernels whose blocks read a word no unit writes, write their own word, write one word
  all together, read back their own or a neighbour's stored rows with or without a flag;
* one unit alone, whose pipes' GM accesses are only summarised: its scalar GM accesses
  against that summary;
* GEMM + AllReduce on two ranks (``examples/comm/gemm_ar``): every chip proven, and the
  result that of the detector forced on every chip.

Kernels: ``racefree_scalar_kernels.py``."""

from __future__ import annotations

import importlib.util
import random
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from racefree_kernels import MUTATIONS, chip_runs, mutate, random_plan
from racefree_kernels import two_ways as _two_ways
from racefree_scalar_kernels import CHIP_TAILS, OPS, chip_kernel, program, synced

import sim
from sim.base.errors import UserError
from sim.engine.execute import Interpreter
from sim.engine.machine import Machine
from sim.engine.racefree import race_free
from sim.engine.races import RaceDetector
from sim.target import load_target

TARGET = load_target("a2a3")
ROOT = Path(__file__).resolve().parent.parent


def _stream(prog):
    return Interpreter(prog, TARGET, functional=False, track_accesses=True).issue()


def _both(prog) -> tuple[bool, list]:
    """(the proof on the timed path's log, the detector's findings on the event path)."""
    detector = RaceDetector()
    Machine(TARGET, races=detector).run(_stream(prog))
    log: list = []
    machine = Machine(TARGET, log=log)
    machine.run(_stream(prog))
    return race_free([log], [machine.recorder.sync_ends()]), [
        (f.kind, f.message) for f in detector.finish()
    ]


def _sound(prog) -> bool | None:
    try:
        proven, found = _both(prog)
    except UserError:
        return None  # deadlocked or refused
    assert not (proven and found), f"race_free is True, the detector finds {found[:3]}"
    return proven


plan_step = st.tuples(
    st.sampled_from(OPS),
    st.integers(0, 3),
    st.integers(0, 3),
    st.integers(0, 3),
    st.integers(0, 6),
    st.integers(0, 3),
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    plan=st.lists(plan_step, min_size=1, max_size=25),
    mutation=st.none() | st.tuples(st.sampled_from(MUTATIONS), st.integers(0, 40)),
    alias=st.booleans(),
)
def test_the_proof_never_passes_a_scalar_access_the_detector_faults(plan, mutation, alias):
    stmts = synced(plan, alias)
    if mutation is None:
        # the generator's sync is right: the detector agrees (else the property is idle)
        assert _both(program(stmts, alias))[1] == []
    else:
        _sound(program(mutate(stmts, *mutation), alias))


def test_most_synchronised_kernels_with_scalar_accesses_are_proven():
    """A fixed corpus: none has a finding, and the proof goes through on most (on all of
    them when this was written); without the dispatcher learning of each scalar access,
    any pipe touching what the scalar unit touched later would fail it."""
    rng = random.Random(11)
    proven = scalar = 0
    for i in range(120):
        plan = random_plan(rng, OPS, 4, 25)
        stmts = synced(plan, i % 2)
        ok, found = _both(program(stmts, i % 2))
        assert found == []
        proven += ok
        scalar += any(s[0] in ("LDS", "STS", "GETVAL") for s in stmts)
    assert scalar > 100 and proven >= 110, (scalar, proven)


@pytest.mark.parametrize(
    "stmts,kind",
    [
        # a scalar read of what a store wrote, no flag: the store may land after it
        (
            [("TLOAD", 0, "x"), ("set", "PIPE_MTE2", "PIPE_MTE3", 0)]
            + [("wait", "PIPE_MTE2", "PIPE_MTE3", 0), ("TSTORE", "y", 0), ("LDS", "y", 3)],
            "RAW",
        ),
        # a scalar read of a tile a load fills, no flag
        ([("TLOAD", 0, "x"), ("GETVAL", 0, 5)], "RAW"),
        # a scalar write of what a load reads, issued before it: ordered; after it: not
        ([("STS", "x", 1), ("TLOAD", 0, "x")], None),
        ([("TLOAD", 0, "x"), ("STS", "x", 1)], "WAR"),
    ],
)
def test_a_scalar_access_racing_a_pipe_fails_the_proof_as_the_detector_finds_it(stmts, kind):
    proven, found = _both(program(stmts))
    assert {f[0] for f in found} == ({kind} if kind else set())
    assert proven == (kind is None)
    # and with the flag that orders them, proven and clean
    if kind is not None:
        fixed = []
        for s in stmts:
            if s[0] in ("LDS", "GETVAL", "STS"):
                pipe = {"x": "PIPE_MTE2", "y": "PIPE_MTE3"}.get(s[1], "PIPE_MTE2")
                fixed += [("set", pipe, "PIPE_S", 1), ("wait", pipe, "PIPE_S", 1)]
            fixed.append(s)
        assert _both(program(fixed)) == (True, [])


# --- simulate: the proof's path against the forced detector's ---------------------------------


def _same(proof, forced) -> None:
    assert [r.message for r in proof.races] == [r.message for r in forced.races]
    assert proof.total_cycles == forced.total_cycles
    assert proof.warnings == forced.warnings


# tail: (proven, the kinds the detector finds)
CHIPS = {
    "nothing more": (True, set()),
    "own word written": (True, set()),
    "one word written by all": (False, {"WAW", "WAR"}),
    "own rows read back, flagged": (True, set()),
    "own rows read back, no flag": (False, {"WAR"}),
    "neighbour's rows read, flagged": (False, {"RAW"}),
}


@pytest.mark.parametrize("tail", CHIP_TAILS)
def test_chip_kernels_with_scalar_gm_accesses_get_the_detectors_result(tail):
    """A word of ``%ctx`` read by its block's scalar unit (no unit writes ``%ctx``) needs no
    order; words written by one unit and touched by another, or by another pipe without a
    flag, are races the detector names and the proof does not pass."""
    proven, kinds = CHIPS[tail]
    verdicts, proof, forced = _two_ways(
        chip_kernel(tail), block_dim=4, inputs={"ctx": np.zeros(8, np.float32)}
    )
    assert verdicts == [proven]
    assert {r.kind for r in forced.races} == kinds
    assert proof.races_by == ("proof" if proven else "detector")
    _same(proof, forced)


@pytest.mark.parametrize(
    "stmts,proven",
    [
        # x only read, by MTE2 and the scalar unit; y only written by MTE3
        ([("LDS", "x", 2), ("TLOAD", 0, "x"), ("TSTORE", "y", 0)], True),
        # y written by MTE3, read by the scalar unit: the summary cannot order them
        (
            [("TLOAD", 0, "x"), ("set", "PIPE_MTE2", "PIPE_MTE3", 0)]
            + [("wait", "PIPE_MTE2", "PIPE_MTE3", 0), ("TSTORE", "y", 0)]
            + [("set", "PIPE_MTE3", "PIPE_S", 0), ("wait", "PIPE_MTE3", "PIPE_S", 0)]
            + [("LDS", "y", 3)],
            False,
        ),
        # the same without the flag: a race, the detector's run names it
        (
            [("TLOAD", 0, "x"), ("set", "PIPE_MTE2", "PIPE_MTE3", 0)]
            + [("wait", "PIPE_MTE2", "PIPE_MTE3", 0), ("TSTORE", "y", 0), ("LDS", "y", 3)],
            False,
        ),
        # x written by the scalar unit, read by MTE2
        ([("STS", "x", 2), ("TLOAD", 0, "x"), ("TSTORE", "y", 0)], False),
    ],
)
def test_one_unit_with_its_gm_summarised_shows_its_scalar_gm_accesses_apart(stmts, proven):
    """One unit alone keeps only which pipes touch each GM array; its scalar unit's GM
    accesses are still listed, and are proven only against arrays that summary shows no
    conflict on (no pipe writes what they read, none touches what they write)."""
    prog = program(stmts)
    with chip_runs() as runs:
        verdicts, proof, forced = _two_ways(prog, functional=False, trace="none")
    assert runs[0] == (True, False)  # the proof's run, GM summarised
    assert verdicts == [proven]
    assert proof.races_by == ("proof" if proven else "detector")
    _same(proof, forced)


# --- GEMM + AllReduce: communication context and queue words read with load_scalar ------------


def _gemm_ar():
    path = ROOT / "examples" / "comm" / "gemm_ar.py"
    spec = importlib.util.spec_from_file_location("gemm_ar", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_gemm_allreduce_is_proven_on_every_chip_and_the_forced_detector_agrees():
    g = _gemm_ar()
    m, k, n, blocks = 256, 512, 512, 4
    verdicts, proof, forced = _two_ways(
        g.compute(2, m, k, n, blocks),
        ranks=2,
        comm_context="ctx",
        streams=[g.comm(2, m, n, blocks)],
        functional=False,
    )
    assert verdicts == [True] * 4  # both kernels on both ranks, one run
    assert [[r.races_by for r in rs] for rs in proof.streams] == [["proof"] * 2] * 2
    assert [[r.races_by for r in rs] for rs in forced.streams] == [["detector"] * 2] * 2
    for rs, fs in zip(proof.streams, forced.streams, strict=True):
        for r, f in zip(rs, fs, strict=True):
            assert r.races == f.races == ()
            assert r.total_cycles == f.total_cycles
    assert proof.races == forced.races == ()


def _moved_pointer_read(offset: int) -> str:
    """A TSTORE of rows 8..15 of %y, then, with no flag, a load_scalar of element 0 of %y
    moved ``offset`` elements by pto.addptr."""
    tile = "!pto.tile_buf<vec, 8x64xf32>"
    part = "!pto.partition_tensor_view<8x64xf32>"
    pv = "!pto.tensor_view<?x?xf32>"
    return f"""module attributes {{pto.target_arch = "a2a3"}} {{
  func.func @k(%x: !pto.ptr<f32>, %y: !pto.ptr<f32>)
      attributes {{pto.kernel_kind = #pto.kernel_kind<vector>}} {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %c16 = arith.constant 16 : index
    %c64 = arith.constant 64 : index
    %off = arith.constant {offset} : index
    %tx = pto.make_tensor_view %x, shape = [%c8, %c64], strides = [%c64, %c1] : {pv}
    %ty = pto.make_tensor_view %y, shape = [%c16, %c64], strides = [%c64, %c1] : {pv}
    %vx = pto.partition_view %tx, offsets = [%c0, %c0], sizes = [%c8, %c64] : {pv} -> {part}
    %vy = pto.partition_view %ty, offsets = [%c8, %c0], sizes = [%c8, %c64] : {pv} -> {part}
    %a = arith.constant 0 : i64
    %t = pto.alloc_tile addr = %a : {tile}
    pto.tload ins(%vx : {part}) outs(%t : {tile})
    pto.set_flag["PIPE_MTE2", "PIPE_MTE3", "EVENT_ID0"]
    pto.wait_flag["PIPE_MTE2", "PIPE_MTE3", "EVENT_ID0"]
    pto.tstore ins(%t : {tile}) outs(%vy : {part})
    %q = pto.addptr %y, %off : !pto.ptr<f32> -> !pto.ptr<f32>
    %v = pto.load_scalar %q[%c0] : !pto.ptr<f32> -> f32
    return
  }}
}}
"""


@pytest.mark.parametrize("offset, kind", [(0, None), (511, None), (512, "RAW"), (1000, "RAW")])
def test_a_scalar_read_through_a_moved_pointer_is_checked_where_it_reads(offset, kind):
    """The element a load_scalar reads through a pointer moved by pto.addptr is the one the
    race check compares: inside the rows the unflagged store writes it races, outside not;
    the proof and the detector agree."""
    prog = sim.parse_text(_moved_pointer_read(offset), "moved.pto")
    verdicts, proof, forced = _two_ways(prog, sync="manual")
    _same(proof, forced)
    assert {r.message.split()[0] for r in forced.races} == ({kind} if kind else set())
