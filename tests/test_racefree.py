"""The proof of race freedom (``sim.engine.racefree``) is sound: ``race_free(logs)`` is True
only when the exact race detector (``sim.engine.races``, ``xraces``) reports nothing — no
RAW / WAR / WAW, no pending set, no unmatched set — on the same kernel. It may be False on
a race-free kernel (that costs ``simulate`` a second run, with the detector).

* random single-unit kernels: the engine fuzzer's (mostly unsynchronised), and kernels
  synchronised by construction (every cross-pipe hand-off of a tile or GM array by a flag,
  a ``pipe_barrier(PIPE_ALL)`` or a wait that holds the scalar unit, event ids reused only
  once their last wait is known to the setter), then broken by one edit (a sync dropped,
  moved, doubled): the detector on the event path, the proof on the timed path's log;
* chip kernels (``examples/gemm.pto``, ``flash_attention.pto`` on 2-4 cores) and the chip
  kernels of the cross-unit race tests: ``simulate(races=True)`` gives what the forced
  detector gives, and the proof goes through where it must not fail;
* every bundled example, and kernels with a RAW race, a pending set, an unmatched set.
"""

from __future__ import annotations

import importlib.util
import random
from collections import deque
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sim
import sim.engine.chip as chip_module
from sim.base.errors import UserError
from sim.engine.execute import Interpreter
from sim.engine.machine import Machine
from sim.engine.racefree import race_free
from sim.engine.races import RaceDetector
from sim.target import load_target
from test_engine_fuzz import _build, step

TARGET = load_target("a2a3")
ROOT = Path(__file__).resolve().parent.parent
EX = ROOT / "examples"
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# --- the property on one unit ---------------------------------------------------------------

def _stream(kernel):
    return Interpreter(kernel.program(), TARGET, inputs=kernel.inputs, functional=False,
                       track_accesses=True).issue()


def _both(kernel) -> tuple[bool, list]:
    """(the proof on the timed path's log, the detector's findings on the event path)."""
    detector = RaceDetector()
    Machine(TARGET, races=detector).run(_stream(kernel))
    log: list = []
    Machine(TARGET, log=log).run(_stream(kernel))
    return race_free([log]), [(f.kind, f.message) for f in detector.finish()]


def _sound(kernel) -> "bool | None":
    """race_free on ``kernel`` (None: rejected or deadlocked), asserting soundness."""
    try:
        proven, found = _both(kernel)
    except UserError:
        return None
    assert not (proven and found), f"race_free is True, the detector finds {found[:3]}"
    return proven


@FUZZ
@given(steps=st.lists(step, min_size=1, max_size=40), dtype=st.sampled_from(["f32", "f16"]),
       shape=st.sampled_from([(16, 64), (1, 64), (8, 128)]))
def test_the_proof_never_passes_a_fuzzer_kernel_the_detector_faults(steps, dtype, shape):
    _sound(_build(steps, dtype, *shape))


# A synchronised kernel as a list of statements: ("TLOAD", tile, gm), ("TSTORE", gm, tile),
# ("TADD", dst, a, b), ("TEXP", dst, a), ("set", src, dst, id), ("wait", src, dst, id),
# ("barrier",). Tiles 0-3 are UB tiles, GM arrays "x" and "y".
PIPE = {"TLOAD": "PIPE_MTE2", "TSTORE": "PIPE_MTE3", "TADD": "PIPE_V", "TEXP": "PIPE_V"}
OPS = list(PIPE)


def _join(c: dict, d: dict) -> None:
    for k, v in d.items():
        if c.get(k, 0) < v:
            c[k] = v


class _Synced:
    """Emits statements with the sync each needs, from vector clocks kept as the
    programming model orders pipes (k-th set to k-th wait; the scalar unit's waits and
    PIPE_ALL barriers order what is issued after them)."""

    def __init__(self):
        self.out: list = []
        self.clk = {p: {} for p in ("PIPE_MTE2", "PIPE_V", "PIPE_MTE3")}
        self.d: dict = {}                                # the dispatcher's clock
        self.pending: dict = {}                          # flag -> clocks of its sets
        self.last_wait: dict = {}                        # flag -> (pipe, own count)
        self.last: dict = {}                             # resource -> pipe -> (write, read)

    def _item(self, pipe: str) -> dict:
        c = self.clk[pipe]
        _join(c, self.d)
        c[pipe] = c.get(pipe, 0) + 1
        return c

    def _knows(self, p: str, q: str) -> int:
        return max(self.clk[p].get(q, 0), self.d.get(q, 0))

    def _free(self, key) -> bool:
        """Can ``key`` be set again: no set pending, its last wait known to the setter."""
        if self.pending.get(key):
            return False
        w = self.last_wait.get(key)
        return w is None or w[0] == "PIPE_S" or self._knows(key[0], w[0]) >= w[1]

    def sync(self, q: str, p: str, how: int, eid: int) -> None:
        """Order everything ``q`` did before everything ``p`` does next."""
        if how == 4:
            self.barrier()
            return
        dst = "PIPE_S" if how == 5 else p
        key = next((k for k in ((q, dst, (eid + i) % 4) for i in range(4)) if self._free(k)),
                   None)
        if key is None:
            self.barrier()
            return
        self.out += [("set", *key), ("wait", *key)]
        self.pending.setdefault(key, deque()).append(dict(self._item(q)))
        got = self.pending[key].popleft()
        if dst == "PIPE_S":
            self.d = {**self.d}
            _join(self.d, got)
            self.last_wait[key] = ("PIPE_S", 0)
        else:
            c = self._item(p)
            _join(c, got)
            self.last_wait[key] = (p, c[p])

    def barrier(self) -> None:
        self.out.append(("barrier",))
        self.d = {**self.d}
        for c in self.clk.values():
            _join(self.d, c)

    def op(self, stmt: tuple, how: int, eid: int) -> None:
        name = stmt[0]
        p = PIPE[name]
        writes = {stmt[1]}
        reads = set(stmt[2:])
        for res in sorted(writes | reads, key=str):
            for q, (w, r) in sorted(self.last.get(res, {}).items()):
                if q != p and self._knows(p, q) < (max(w, r) if res in writes else w):
                    self.sync(q, p, how, eid)
        own = self._item(p)[p]
        for res in writes | reads:
            w, r = self.last.setdefault(res, {}).get(p, (0, 0))
            self.last[res][p] = (own, r) if res in writes else (w, own)
        self.out.append(stmt)


def _synced(plan) -> list:
    s = _Synced()
    for name, a, b, c, how, eid in plan:
        gm = "xy"[c % 2]
        stmt = {"TLOAD": (name, a, gm), "TSTORE": (name, gm, a),
                "TADD": (name, a, b, c), "TEXP": (name, a, b)}[name]
        s.op(stmt, how, eid)
    return s.out


def _pipeline(n: int, barrier_every: int = 0) -> list:
    """Load, compute, store of ``n`` tiles through two input and two output buffers:
    ping-pong event ids, both directions of every hand-off, a barrier every few steps."""
    out = [("set", "PIPE_V", "PIPE_MTE2", b) for b in (0, 1)]
    out += [("set", "PIPE_MTE3", "PIPE_V", b) for b in (0, 1)]
    for i in range(n):
        b = i % 2
        out += [("wait", "PIPE_V", "PIPE_MTE2", b), ("TLOAD", b, "x"),
                ("set", "PIPE_MTE2", "PIPE_V", b), ("wait", "PIPE_MTE2", "PIPE_V", b),
                ("wait", "PIPE_MTE3", "PIPE_V", b), ("TEXP", 2 + b, b),
                ("set", "PIPE_V", "PIPE_MTE2", b), ("set", "PIPE_V", "PIPE_MTE3", b),
                ("wait", "PIPE_V", "PIPE_MTE3", b), ("TSTORE", "y", 2 + b),
                ("set", "PIPE_MTE3", "PIPE_V", b)]
        if barrier_every and i % barrier_every == barrier_every - 1:
            out.append(("barrier",))
    out += [("wait", "PIPE_V", "PIPE_MTE2", b) for b in (0, 1)]
    return out + [("wait", "PIPE_MTE3", "PIPE_V", b) for b in (0, 1)]


def _kernel(stmts, dtype="f32", rows=16, cols=64):
    k = sim.Kernel("synced")
    gm = {n: k.gm(n, dtype, (rows, cols)) for n in "xy"}
    t = [k.tile("vec", dtype, rows, cols) for _ in range(4)]
    for s in stmts:
        if s[0] == "TLOAD":
            k.TLOAD(t[s[1]], gm[s[2]])
        elif s[0] == "TSTORE":
            k.TSTORE(gm[s[1]], t[s[2]])
        elif s[0] in ("TADD", "TEXP"):
            k.instr(s[0], *(t[i] for i in s[1:]))
        elif s[0] == "set":
            k.set_flag(*s[1:])
        elif s[0] == "wait":
            k.wait_flag(*s[1:])
        else:
            k.pipe_barrier("PIPE_ALL")
    return k


MUTATIONS = ["drop", "drop_pair", "sink", "hoist", "double"]


def _mutate(stmts: list, kind: str, at: int) -> list:
    """One sync edit: drop a sync, drop a set with its wait, move a wait past the next
    statement or before the previous one, set a flag twice."""
    syncs = [i for i, s in enumerate(stmts) if s[0] in ("set", "wait", "barrier")]
    if not syncs:
        return stmts
    i = syncs[at % len(syncs)]
    s, out = stmts[i], list(stmts)
    if kind == "drop":
        del out[i]
    elif kind == "drop_pair" and s[0] == "set" and ("wait", *s[1:]) in out[i:]:
        del out[out.index(("wait", *s[1:]), i)]
        del out[i]
    elif kind == "sink" and i + 1 < len(out):
        out[i], out[i + 1] = out[i + 1], out[i]
    elif kind == "hoist" and i > 0:
        out[i - 1], out[i] = out[i], out[i - 1]
    elif kind == "double" and s[0] == "set":
        out.insert(i, s)
    return out


plan_step = st.tuples(st.sampled_from(OPS), st.integers(0, 3), st.integers(0, 3),
                      st.integers(0, 3), st.integers(0, 5), st.integers(0, 3))


@FUZZ
@given(plan=st.lists(plan_step, min_size=1, max_size=30),
       mutation=st.none() | st.tuples(st.sampled_from(MUTATIONS), st.integers(0, 40)),
       dtype=st.sampled_from(["f32", "f16"]), shape=st.sampled_from([(16, 64), (8, 128)]))
def test_the_proof_never_passes_a_broken_synchronisation(plan, mutation, dtype, shape):
    stmts = _synced(plan)
    if mutation is None:
        # the generator's sync is right: the detector agrees (else the property is idle)
        assert _both(_kernel(stmts, dtype, *shape))[1] == []
    else:
        _sound(_kernel(_mutate(stmts, *mutation), dtype, *shape))


@pytest.mark.parametrize("n,every", [(1, 0), (2, 0), (5, 0), (9, 0), (6, 2), (7, 3)])
def test_a_double_buffered_pipeline_is_proven_and_every_edit_of_it_is_sound(n, every):
    stmts = _pipeline(n, every)
    assert _both(_kernel(stmts)) == (True, [])
    for kind in MUTATIONS:
        for at in range(len(stmts)):
            _sound(_kernel(_mutate(stmts, kind, at)))


def test_most_synchronised_random_kernels_are_proven():
    """A fixed corpus of 200 synchronised kernels: none has a finding, and the proof goes
    through on most (it gives up where the order runs through the scalar unit's set)."""
    rng = random.Random(2026)
    proven = 0
    for _ in range(200):
        plan = [(rng.choice(OPS), *(rng.randrange(4) for _ in range(3)), rng.randrange(6),
                 rng.randrange(4)) for _ in range(rng.randrange(1, 30))]
        ok, found = _both(_kernel(_synced(plan)))
        assert found == []
        proven += ok
    assert proven >= 100, proven


# --- simulate: the proof's path against the forced detector's ---------------------------------

def _two_ways(monkeypatch, program, **kw):
    """(the proof's verdicts, simulate(races=True) as it runs, simulate with the proof
    forced to fail: the detector's run)."""
    kw.setdefault("races", True)
    real, verdicts = chip_module.Chip.race_free, []

    def spy(chip):
        verdicts.append(real(chip))
        return verdicts[-1]

    monkeypatch.setattr(chip_module.Chip, "race_free", spy)
    proof = sim.simulate(program, **kw)
    monkeypatch.setattr(chip_module.Chip, "race_free", lambda chip: False)
    forced = sim.simulate(program, **kw)
    monkeypatch.setattr(chip_module.Chip, "race_free", real)
    return verdicts, proof, forced


def _same(proof, forced) -> None:
    assert proof.races == forced.races
    assert proof.total_cycles == forced.total_cycles
    assert proof.warnings == forced.warnings
    assert proof.trace.equals(forced.trace)


GEMM = {"m": 256, "k": 512, "n": 512, "singleCoreM": 128, "singleCoreN": 256}
# name: file, arguments, cores, the proof's verdict. flash_attention.pto at S1_TILE 256 /
# 512 sets MTE2->MTE1 #0 (line 374) with no order after the wait of its previous set (line
# 363) that the MTE2 pipe knows of: in time the wait comes first (no finding), but the
# proof cannot show that a set is never pending, so those runs take the detector's run.
CHIPS = {
    "gemm.pto x4": ("gemm.pto", GEMM, 4, True),
    "gemm.pto x2": ("gemm.pto", {**GEMM, "m": 128, "n": 1024}, 2, True),
    "gemm.pto x3": ("gemm.pto", {**GEMM, "m": 384, "k": 1024}, 3, True),
    "fa.pto S1=512 t128 x2": ("flash_attention.pto", {"S1": 512, "S1_TILE": 128}, 2, True),
    "fa.pto S1=512 t128 x4": ("flash_attention.pto", {"S1": 512, "S1_TILE": 128}, 4, True),
    "fa.pto S1=512 t256 x3": ("flash_attention.pto", {"S1": 512, "S1_TILE": 256}, 3, False),
    "fa.pto S1=1024 t512 x2": ("flash_attention.pto", {"S1": 1024, "S1_TILE": 512}, 2, False),
}


@pytest.mark.parametrize("name", CHIPS)
def test_chip_examples_are_proven_race_free_and_the_detector_agrees(name, monkeypatch):
    path, args, cores, verdict = CHIPS[name]
    verdicts, proof, forced = _two_ways(monkeypatch, sim.parse_file(EX / path), inputs=args,
                                        block_dim=cores, functional=False)
    assert verdicts == [verdict]                # True: one run, the proof went through
    assert forced.races == ()
    _same(proof, forced)


def _racy_chips():
    from test_ffts import _HEAD, _TAIL, _cube_to_vector
    from test_xraces import _blocks, _without_cross_core_flags
    return {
        "cube store, vector load, no flag x2": (
            lambda: _without_cross_core_flags(_cube_to_vector("FIX", bd=2).program()), 2),
        "overlapping column blocks x2": (lambda: _blocks(16), None),
        "neighbours' rows, no barrier x4": (lambda: sim.parse_text(_HEAD + _TAIL, "n.pto"), 4),
    }


@pytest.mark.parametrize("name", ["cube store, vector load, no flag x2",
                                  "overlapping column blocks x2",
                                  "neighbours' rows, no barrier x4"])
def test_cross_unit_gm_races_fail_the_proof_and_the_detector_names_them(name, monkeypatch):
    make, cores = _racy_chips()[name]
    verdicts, proof, forced = _two_ways(monkeypatch, make(), block_dim=cores)
    assert verdicts == [False]
    assert {r.kind for r in forced.races} & {"RAW", "WAR", "WAW"}
    assert [r.message for r in proof.races] == [r.message for r in forced.races]
    _same(proof, forced)


def _column_blocks(width: int, step: int, cores: int):
    """``cores`` cores store 16 x ``width`` blocks of one 16 x 64 matrix, ``step`` apart."""
    k = sim.Kernel("blocks", block_dim=cores)
    y = k.gm("y", "f32", (16, 64))
    t = k.tile("vec", "f32", 16, width)
    k.TEXPANDS(t, 1.0)
    k.TSTORE(y.view(16, width, 0, k.block_idx * step), t)
    return k


@pytest.mark.parametrize("width,step,cores", [(32, 32, 2), (16, 16, 4), (8, 24, 3),
                                              (32, 16, 2), (16, 8, 4)])
def test_column_blocks_are_proven_where_they_do_not_overlap(width, step, cores, monkeypatch):
    """Row windows of one pitch: disjoint column blocks are no race (the proof compares
    them exactly, as the detector does); overlapping ones are a WAW the detector names."""
    verdicts, proof, forced = _two_ways(monkeypatch, _column_blocks(width, step, cores))
    disjoint = step >= width
    assert verdicts == [disjoint]
    assert {r.kind for r in forced.races} == (set() if disjoint else {"WAW"})
    _same(proof, forced)
