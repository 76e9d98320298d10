"""The proof of race freedom (``sim.engine.racefree``) is sound: ``race_free(logs)`` is True
only when the exact race detector (``sim.engine.races``, ``xraces``) reports nothing — no
RAW / WAR / WAW, no pending set, no unmatched set — on the same kernel. It may be False on
a race-free kernel (that costs ``simulate`` a second run, with the detector).

* random single-unit kernels: the engine fuzzer's (mostly unsynchronised), and kernels
  synchronised by construction (every cross-pipe hand-off of a tile or GM array by a flag,
  a ``pipe_barrier(PIPE_ALL)`` or a wait that holds the scalar unit, event ids reused only
  once their last wait is known to the setter), then broken by one edit (a sync dropped,
  moved, doubled): the detector on the event path, the proof on the timed path's log;
* chip kernels (``examples/gemm.pto``, ``flash_attention.pto`` on 2-4 cores), the chip
  kernels of the cross-unit race tests and GM windows stored by several unordered cores:
  ``simulate(races=True)`` gives what it gives with the proof forced to fail (the
  detector's run): the same findings in the same order, cycles, warnings and trace;
* every bundled example (timing only, with numbers, with an L2), kernels with a RAW race,
  a pending set, an unmatched set, and the examples with one sync line dropped or moved.

Kernels: ``racefree_kernels.py``.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from racefree_kernels import (
    MUTATIONS,
    OPS,
    chip_runs,
    column_blocks,
    edit,
    fit,
    make_kernel,
    mutate,
    pipeline,
    racy,
    random_plan,
    sync_lines,
    synced,
    windows,
)
from racefree_kernels import (
    two_ways as _two_ways,
)
from test_engine_fuzz import _build, step

import sim
import sim.engine.chip as chip_module
from sim.base.errors import UserError
from sim.engine.execute import Interpreter
from sim.engine.machine import Machine
from sim.engine.racefree import race_free
from sim.engine.races import RaceDetector
from sim.target import load_target

TARGET = load_target("a2a3")
ROOT = Path(__file__).resolve().parent.parent
EX = ROOT / "examples"
FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# --- the property on one unit ---------------------------------------------------------------


def _stream(kernel):
    return Interpreter(
        kernel.program(), TARGET, inputs=kernel.inputs, functional=False, track_accesses=True
    ).issue()


def _both(kernel) -> tuple[bool, list]:
    """(the proof on the timed path's log and its sync cycles, as a run gives it, the
    detector's findings on the event path). The proof without the cycles (flags only)
    must never be True where the one with them is False."""
    detector = RaceDetector()
    Machine(TARGET, races=detector).run(_stream(kernel))
    log: list = []
    machine = Machine(TARGET, log=log)
    machine.run(_stream(kernel))
    by_flags, by_cycles = race_free([log]), race_free([log], [machine.recorder.sync_ends()])
    assert by_cycles or not by_flags
    return by_cycles, [(f.kind, f.message) for f in detector.finish()]


def _sound(kernel) -> bool | None:
    """race_free on ``kernel`` (None: rejected or deadlocked), asserting soundness."""
    try:
        proven, found = _both(kernel)
    except UserError:
        return None
    assert not (proven and found), f"race_free is True, the detector finds {found[:3]}"
    return proven


@FUZZ
@given(
    steps=st.lists(step, min_size=1, max_size=40),
    dtype=st.sampled_from(["f32", "f16"]),
    shape=st.sampled_from([(16, 64), (1, 64), (8, 128)]),
)
def test_the_proof_never_passes_a_fuzzer_kernel_the_detector_faults(steps, dtype, shape):
    _sound(_build(steps, dtype, *shape))


plan_step = st.tuples(
    st.sampled_from(OPS),
    st.integers(0, 3),
    st.integers(0, 3),
    st.integers(0, 3),
    st.integers(0, 6),
    st.integers(0, 3),
)


@FUZZ
@given(
    plan=st.lists(plan_step, min_size=1, max_size=30),
    mutation=st.none() | st.tuples(st.sampled_from(MUTATIONS), st.integers(0, 40)),
    dtype=st.sampled_from(["f32", "f16"]),
    shape=st.sampled_from([(16, 64), (8, 128)]),
    alias=st.booleans(),
)
def test_the_proof_never_passes_a_broken_synchronisation(plan, mutation, dtype, shape, alias):
    stmts = synced(plan, alias)
    if mutation is None:
        # the generator's sync is right: the detector agrees (else the property is idle)
        assert _both(make_kernel(stmts, dtype, *shape, alias))[1] == []
    else:
        _sound(make_kernel(mutate(stmts, *mutation), dtype, *shape, alias))


@pytest.mark.parametrize("n,every", [(1, 0), (2, 0), (5, 0), (9, 0), (6, 2), (7, 3)])
def test_a_double_buffered_pipeline_is_proven_and_every_edit_of_it_is_sound(n, every):
    stmts = pipeline(n, every)
    assert _both(make_kernel(stmts)) == (True, [])
    for kind in MUTATIONS:
        for at in range(len(stmts)):
            _sound(make_kernel(mutate(stmts, kind, at)))


def test_most_synchronised_random_kernels_are_proven():
    """A fixed corpus of 200 synchronised kernels (half with overlapping tiles): none has a
    finding, and the proof goes through on most — on all 200 when this was written; it
    may give up on some (a second run), never on most."""
    rng = random.Random(2026)
    proven = 0
    for i in range(200):
        plan = random_plan(rng, OPS, 1, 30)
        ok, found = _both(make_kernel(synced(plan, i % 2), alias=i % 2))
        assert found == []
        proven += ok
    assert proven >= 150, proven


# --- simulate: the proof's path against the forced detector's ---------------------------------


def _same(proof, forced) -> None:
    assert proof.races == forced.races
    assert proof.total_cycles == forced.total_cycles
    assert proof.warnings == forced.warnings
    assert proof.trace.equals(forced.trace)


GEMM = {"m": 256, "k": 512, "n": 512, "singleCoreM": 128, "singleCoreN": 256}
# name: file, arguments, cores, the proof's verdict. flash_attention.pto at S1_TILE 256 /
# 512 sets MTE2->MTE1 #0 (line 374) with no order after the wait of its previous set (line
# 363) that the MTE2 pipe knows of: in time the wait comes first (no finding), which the
# proof reads from the run's cycles (Machine.sync_ends).
CHIPS = {
    "gemm.pto x4": ("gemm.pto", GEMM, 4, True),
    "gemm.pto x2": ("gemm.pto", {**GEMM, "m": 128, "n": 1024}, 2, True),
    "gemm.pto x3": ("gemm.pto", {**GEMM, "m": 384, "k": 1024}, 3, True),
    "fa.pto S1=512 t128 x2": ("flash_attention.pto", {"S1": 512, "S1_TILE": 128}, 2, True),
    "fa.pto S1=512 t128 x4": ("flash_attention.pto", {"S1": 512, "S1_TILE": 128}, 4, True),
    "fa.pto S1=512 t256 x3": ("flash_attention.pto", {"S1": 512, "S1_TILE": 256}, 3, True),
    "fa.pto S1=1024 t512 x2": ("flash_attention.pto", {"S1": 1024, "S1_TILE": 512}, 2, True),
}


@pytest.mark.parametrize("name", CHIPS)
def test_chip_examples_are_proven_race_free_and_the_detector_agrees(name):
    path, args, cores, verdict = CHIPS[name]
    verdicts, proof, forced = _two_ways(
        sim.parse_file(EX / path), inputs=args, block_dim=cores, functional=False
    )
    assert verdicts == [verdict]  # True: one run, the proof went through
    assert forced.races == ()
    _same(proof, forced)


@pytest.mark.parametrize("arch,cores", [("a2a3", 3), ("a5", 2)])
def test_the_builder_flash_attention_is_proven_on_both_targets(arch, cores):
    """Cube <-> vector FIFOs through GM (A2/A3) and through the FIXPIPE (A5)."""
    from sim.kernel.files import load_kernel

    k = load_kernel(str(EX / "flash_attention.py"), (("s1", 512), ("cores", cores), ("arch", arch)))
    verdicts, proof, forced = _two_ways(k, target=arch, functional=False)
    assert verdicts == [True] and forced.races == ()
    _same(proof, forced)


def _racy_chips():
    from test_ffts import _HEAD, _TAIL, _cube_to_vector
    from test_xraces import _blocks, _without_cross_core_flags

    return {
        "cube store, vector load, no flag x2": (
            lambda: _without_cross_core_flags(_cube_to_vector("FIX", bd=2).program()),
            2,
        ),
        "overlapping column blocks x2": (lambda: _blocks(16), None),
        "neighbours' rows, no barrier x4": (lambda: sim.parse_text(_HEAD + _TAIL, "n.pto"), 4),
    }


@pytest.mark.parametrize(
    "name",
    [
        "cube store, vector load, no flag x2",
        "overlapping column blocks x2",
        "neighbours' rows, no barrier x4",
    ],
)
def test_cross_unit_gm_races_fail_the_proof_and_the_detector_names_them(name):
    make, cores = _racy_chips()[name]
    verdicts, proof, forced = _two_ways(make(), block_dim=cores)
    assert verdicts == [False]
    assert {r.kind for r in forced.races} & {"RAW", "WAR", "WAW"}
    assert [r.message for r in proof.races] == [r.message for r in forced.races]
    _same(proof, forced)


@pytest.mark.parametrize(
    "width,step,cores", [(32, 32, 2), (16, 16, 4), (8, 24, 3), (32, 16, 2), (16, 8, 4)]
)
def test_column_blocks_are_proven_where_they_do_not_overlap(width, step, cores):
    """Row windows of one pitch: disjoint column blocks are no race (the proof compares
    them exactly, as the detector does); overlapping ones are a WAW the detector names."""
    verdicts, proof, forced = _two_ways(column_blocks(width, step, cores))
    disjoint = step >= width
    assert verdicts == [disjoint]
    assert {r.kind for r in forced.races} == (set() if disjoint else {"WAW"})
    _same(proof, forced)


window = st.tuples(
    st.sampled_from([1, 2, 4, 8]),
    st.sampled_from([8, 16, 24, 32]),
    st.integers(0, 24),
    st.sampled_from([0, 8, 16, 24, 32]),
    st.sampled_from([0, 1, 2, 4, 8]),
    st.sampled_from([0, 8, 16, 24]),
)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cores=st.integers(2, 4), store=window, load=window)
def test_gm_windows_of_several_cores_are_proven_exactly_where_disjoint(cores, store, load):
    """No order between the cores: the detector names every overlap of a store with the
    other cores' windows, and the proof (row windows of one pitch compared exactly)
    passes exactly the kernels with none."""
    verdicts, proof, forced = _two_ways(
        windows(cores, fit(cores, store), fit(cores, load)), functional=False
    )
    assert verdicts == [not forced.races]
    _same(proof, forced)


# every bundled example at a small size: args for the scalar arguments that bound loops
EXAMPLE_ARGS = {
    "relu_sub_db.pto": {"k": 3},
    "trelu.pto": {"n": 64},
    "dyn_valid.pto": {"vr": 20, "vc": 96},
    "tfmods.pto": {"divisor": 3.0},
    "gemm.pto": GEMM,
    "flash_attention.pto": {"S1": 512, "S1_TILE": 128},
    "flash_attention.py": {"s1": 256},
}
EXAMPLES = sorted(p.name for p in EX.glob("*.p[ty]*") if p.suffix in (".pto", ".py"))


def _example(name: str):
    from sim.kernel.files import load_kernel

    args = EXAMPLE_ARGS.get(name, {})
    if name.endswith(".py"):
        return load_kernel(str(EX / name), tuple(args.items())), {}
    return load_kernel(str(EX / name)), args


@pytest.mark.parametrize(
    "races,functional,l2",
    [(True, False, None), ("manual", False, None), (True, True, None), (True, False, True)],
)
@pytest.mark.parametrize("name", EXAMPLES)
def test_every_example_gives_the_detectors_result_through_the_proof(name, races, functional, l2):
    """Timing only, with the numbers (an op's item is handed over again differently) and
    with an L2 (items carry their GM windows)."""
    kernel, args = _example(name)
    verdicts, proof, forced = _two_ways(
        kernel, inputs=args, races=races, functional=functional, l2=l2
    )
    assert proof.races_checked == forced.races_checked
    assert len(verdicts) == proof.races_checked  # "manual" checks no auto-mode kernel
    assert not (verdicts == [True] and forced.races)
    _same(proof, forced)


def test_the_examples_are_proven_where_they_are_checked():
    """The proof is no formality on the examples: every one that is checked goes through."""
    proven = checked = 0
    for name in EXAMPLES:
        kernel, args = _example(name)
        verdicts, _, _ = _two_ways(kernel, inputs=args, functional=False)
        checked += len(verdicts)
        proven += sum(verdicts)
    assert checked >= 10 and proven == checked, (proven, checked)  # 16 of 16 now


# --- racy kernels -----------------------------------------------------------------------------

KINDS = {"raw": "RAW", "pending": "pending_set", "unmatched": "unmatched_set"}


@pytest.mark.parametrize("n", [1, 2, 5])
@pytest.mark.parametrize("kind", KINDS)
def test_a_racy_kernel_fails_the_proof_and_reports_the_detectors_findings(kind, n):
    k = racy(kind, n)
    proven, found = _both(k)
    assert not proven
    assert {f[0] for f in found} == {KINDS[kind]}
    verdicts, proof, forced = _two_ways(k, functional=False)
    assert verdicts == [False]
    assert [(r.kind, r.message) for r in proof.races] == found
    _same(proof, forced)
    # manual mode: the same findings, and the warning naming the first
    verdicts, proof, forced = _two_ways(k, functional=False, races="manual")
    assert verdicts == [False] and [(r.kind, r.message) for r in proof.races] == found
    assert proof.warnings[-1].startswith(f"warning: {len(found)} race")
    _same(proof, forced)


# --- the examples' own synchronisation, broken one line at a time ----------------------------

# file, arguments, cores, every how many sync lines is edited
EDITED = {
    "relu_sub_db.pto": ({"k": 3}, 1, 1),
    "compact_add.pto": ({}, 1, 1),
    "matmul.pto": ({}, 1, 1),
    "gemm.pto": ({**GEMM, "m": 128, "n": 1024}, 2, 3),
    "flash_attention.pto": ({"S1": 512, "S1_TILE": 128}, 1, 37),
}


@pytest.mark.parametrize("kind", ["drop", "sink", "hoist"])
@pytest.mark.parametrize("name", EDITED)
def test_an_example_with_one_sync_line_broken_is_never_proven_with_findings(name, kind):
    """Loops hand the same statement over again: the proof's items repeat, as in users'
    kernels. Each edit runs (or deadlocks) and the proof passes only where the detector,
    forced, finds nothing; the edits that do make races make the property bite."""
    args, cores, every = EDITED[name]
    text = (EX / name).read_text()
    caught = 0
    for at in sync_lines(text, every):
        try:
            program = sim.parse_text(edit(text, at, kind), name)
            verdicts, proof, forced = _two_ways(
                program, inputs=args, block_dim=cores, functional=False
            )
        except UserError:
            continue  # deadlocked or rejected
        assert not (verdicts == [True] and forced.races), (at, forced.races[:2])
        assert proof.races == forced.races
        caught += bool(forced.races)
    assert caught or kind == "hoist"


# --- the sync cycles in every trace mode ------------------------------------------------------


@pytest.mark.parametrize("tile,cores", [(256, 2), (512, 1), (512, 3)])
def test_a_pending_set_ordered_only_in_time_is_shown_in_every_trace_mode(tile, cores):
    """flash_attention.pto's 256/512-key tiles need the run's cycles to show that no set
    is pending (see CHIPS): the recorder keeps them whether it keeps every row (read from
    the rows), no sync row or none at all (kept beside them). Each mode proves the run
    and gives the same cycles and findings as the detector's run."""
    program = sim.parse_file(EX / "flash_attention.pto")
    args = {"S1": 2 * tile, "S1_TILE": tile}
    runs = {
        mode: sim.simulate(
            program, inputs=args, block_dim=cores, functional=False, races=True, trace=mode
        )
        for mode in ("full", "ops", "none")
    }
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(chip_module.Chip, "race_free", lambda chip: False)
        forced = sim.simulate(
            program, inputs=args, block_dim=cores, functional=False, races=True, trace="none"
        )
    assert forced.races_by == "detector"
    for mode, r in runs.items():
        assert r.races_by == "proof", mode
        assert r.races == forced.races == ()
        assert r.total_cycles == forced.total_cycles


# --- units proven together: the verdict is each unit's own ------------------------------------


def _unit_log(kernel) -> tuple:
    """(log, sync cycles) of a timed run of ``kernel`` on one unit, None if it is refused."""
    log: list = []
    machine = Machine(TARGET, log=log)
    try:
        machine.run(_stream(kernel))
    except UserError:
        return None
    return log, machine.recorder.sync_ends()


def _pool() -> list:
    """Units of every kind the proof meets, proven and not: synchronised random kernels and
    one edit of each, a double-buffered pipeline with PIPE_ALL barriers, racy kernels."""
    rng = random.Random(7)
    kernels = [
        make_kernel(pipeline(3, 2)),
        make_kernel(pipeline(2)),
        *(racy(kind, n) for kind in KINDS for n in (1, 2)),
    ]
    for i in range(24):
        plan = random_plan(rng, OPS, 1, 20)
        stmts = synced(plan, i % 2)
        if i % 3 == 2:
            stmts = mutate(stmts, rng.choice(MUTATIONS), rng.randrange(40))
        kernels.append(make_kernel(stmts, alias=i % 2))
    return [u for u in map(_unit_log, kernels) if u is not None]


POOL = []


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(picks=st.lists(st.integers(0, 10**6), min_size=2, max_size=20))
def test_units_proven_together_give_each_units_own_verdict(picks):
    """A batch of units (one log, one unit after the other, each unit's flags and buffers
    its own) holds exactly when every unit's own proof does: what a unit knows of the
    units before it orders none of its accesses or sets, whichever comes first."""
    from sim.engine.racefree import _Proof

    if not POOL:
        POOL.extend(_pool())
        alone = [_Proof([log], [ends]).holds() for log, ends in POOL]
        assert 0 < sum(alone) < len(POOL)  # both kinds in the pool
    units = [POOL[i % len(POOL)] for i in picks]
    logs, ends = [u[0] for u in units], [u[1] for u in units]
    alone = all(_Proof([log], [e]).holds() for log, e in zip(logs, ends, strict=True))
    assert _Proof(logs, ends).holds() == alone
    assert _Proof(logs, None).holds() <= alone  # without the cycles: never more


# --- one unit alone: its GM accesses summarised -----------------------------------------------


def _gm_round_trip(sync: bool, back: bool = True):
    """x -> tile -> y, then (``back``) y read back on MTE2: ordered by a flag MTE3 -> MTE2,
    or not (a read-after-write race through GM, between two pipes)."""
    k = sim.Kernel("gm_round_trip")
    x, y = k.gm("x", "f32", (16, 64)), k.gm("y", "f32", (16, 64))
    a, b, c = (k.tile("vec", "f32", 16, 64) for _ in range(3))
    k.TLOAD(a, x)
    k.set_flag("PIPE_MTE2", "PIPE_V", 0)
    k.wait_flag("PIPE_MTE2", "PIPE_V", 0)
    k.TADD(b, a, a)
    k.set_flag("PIPE_V", "PIPE_MTE3", 0)
    k.wait_flag("PIPE_V", "PIPE_MTE3", 0)
    k.TSTORE(y, b)
    if sync:
        k.set_flag("PIPE_MTE3", "PIPE_MTE2", 0)
        k.wait_flag("PIPE_MTE3", "PIPE_MTE2", 0)
    if back:
        k.TLOAD(c, y)
    return k


def _counted_runs(k) -> tuple:
    """(the race-checked result of ``k``, (GM summary, detector) of each run it took)."""
    with chip_runs() as runs:
        r = sim.simulate(k, functional=False, races="manual", trace="none")
    return r, runs


@pytest.mark.parametrize("sync", [False, True])
def test_a_gm_array_two_pipes_touch_and_one_writes_is_listed_in_a_second_run(sync):
    """One unit alone first keeps only which pipes touch each GM array; where two pipes
    touch one and one writes, that run stops and the next lists every GM access: the
    proof then shows the synchronised round trip race-free, and the unsynchronised one
    goes to the detector, whose finding is the run's."""
    k = _gm_round_trip(sync)
    r, runs = _counted_runs(k)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(chip_module.Chip, "race_free", lambda chip: False)
        forced = sim.simulate(k, functional=False, races="manual", trace="none")
    assert [f.message for f in r.races] == [f.message for f in forced.races]
    if sync:
        assert runs == [(True, False), (False, False)] and r.races_by == "proof"
        assert r.races == ()
    else:
        assert runs == [(True, False), (False, False), (False, True)]
        assert r.races_by == "detector" and r.races


def test_gm_read_by_one_pipe_and_written_by_another_is_proven_in_one_run():
    """Inputs only read (MTE2) and outputs only written (MTE3): no GM race is possible in
    one unit, and the proof goes through on the summary, without a GM access listed."""
    r, runs = _counted_runs(_gm_round_trip(False, back=False))
    assert runs == [(True, False)]
    assert r.races_by == "proof" and r.races == ()


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    plan=st.lists(plan_step, min_size=1, max_size=25),
    mutation=st.none() | st.tuples(st.sampled_from(MUTATIONS), st.integers(0, 40)),
    alias=st.booleans(),
)
def test_one_units_run_with_its_gm_summarised_gives_the_detectors_findings(plan, mutation, alias):
    """Random synchronised kernels (loads and stores of two GM arrays), whole or with one
    sync edit, through ``simulate``: the findings are the forced detector's, and a run the
    proof passed is one the detector finds nothing in."""
    stmts = synced(plan, alias)
    if mutation is not None:
        stmts = mutate(stmts, *mutation)
    k = make_kernel(stmts, alias=alias)
    try:
        r = sim.simulate(k, functional=False, races="manual", trace="none")
    except UserError:
        return
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(chip_module.Chip, "race_free", lambda chip: False)
        forced = sim.simulate(k, functional=False, races="manual", trace="none")
    assert [f.message for f in r.races] == [f.message for f in forced.races]
    assert r.races_by == "detector" or forced.races == ()
