"""The benchmark kernels (``bench/kernels.py``) are what ``bench_engine.py`` says they are:
their instruction counts, race-free synchronisation, and for ``chip`` every unit of
every core at work."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import sim

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
import kernels  # noqa: E402


@pytest.mark.parametrize("name, n", [("vector", 97), ("cube", 131)])
def test_a_one_unit_kernel_has_exactly_n_instructions_and_no_race(name, n):
    r = sim.simulate(kernels.build(name, n), races=True, functional=False)
    assert r.instructions == n
    assert r.races == ()


def test_the_chip_kernel_runs_every_unit_of_every_core_race_free():
    k = kernels.build("chip", 1200)
    assert k.block_dim == kernels.CORES
    r = sim.simulate(k, races=True)
    # n rounded down to whole units: at most a few instructions per core short
    assert 1200 - 2 * kernels.CORES <= r.instructions <= 1200
    assert r.races == ()
    ops = r.trace[r.trace.kind == "op"]
    assert ops.groupby(["core", "unit"], observed=True).size().size == 3 * kernels.CORES
    # the units overlap: the run is far shorter than its units' busy time added up
    assert r.total_cycles < ops.duration_cycles.sum() / 4


def test_the_warmup_kernel_shares_no_instruction_with_the_measured_ones():
    warm = {st for st in kernels.warmup().program().main.body if type(st).__name__ == "Instr"}
    for name in ("vector", "cube"):
        body = kernels.build(name, 60).program().main.body
        assert not warm & {st for st in body if type(st).__name__ == "Instr"}


def test_the_chip_kernel_counts_the_same_without_a_trace():
    k = kernels.build("chip", 600)
    assert sim.simulate(k, trace="none").instructions == sim.simulate(k).instructions


def test_each_core_of_the_chip_kernel_writes_its_own_rows():
    """One whole cube step per core: every core's 64 rows of ``gc`` hold A . B (a core
    that ignored its block index would leave the others' rows zero)."""
    k = kernels.build("chip", kernels.CORES * 24)
    a = k.inputs["ga"].reshape(64, 32).astype(np.float32)
    b = k.inputs["gb"].reshape(32, 64).astype(np.float32)
    c = sim.simulate(k, functional=True).output("gc").reshape(kernels.CORES, 64, 64)
    for core in range(kernels.CORES):
        np.testing.assert_allclose(c[core], a @ b, rtol=1e-3, atol=1e-3)


def test_the_auto_kernel_is_the_vector_stream_without_its_sync():
    """``auto`` issues ``vector``'s instructions and no sync of its own: a default run
    inserts it (auto mode) and runs race-free."""
    k = kernels.build("auto", 97)
    body = k.program().main.body
    assert not any(type(st).__name__ in ("SetFlag", "WaitFlag", "Barrier") for st in body)
    want = [
        st.opcode
        for st in kernels.build("vector", 97).program().main.body
        if type(st).__name__ == "Instr"
    ]
    assert [st.opcode for st in body if type(st).__name__ == "Instr"] == want
    r = sim.simulate(k, races=True, functional=False)
    assert (r.mode, r.instructions, r.races) == ("auto", 97, ())
