"""GM transfers of one cycle are costed in (core, unit, pipe) order (``sim.engine.gmorder``):
the shared channels serve them in that order, whatever order the event loop resumes the
units in.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import sim
import sim.engine.chip as chip_module
from sim.target import load_target


def _loads(block_dim, n, rows, cols, dtype="f32"):
    """Every block streams n tiles from its own part of GM, all starting at cycle 0."""
    k = sim.Kernel("stream", block_dim=block_dim)
    x = k.gm("x", dtype, (rows * n * block_dim, cols))
    t = k.tile("vec", dtype, rows, cols)
    base = k.block_idx * (rows * n)
    for i in range(n):
        r0 = base + i * rows
        k.TLOAD(t, x[r0 : r0 + rows, :])
    return k


CASES = [
    (2, 3, 64, 256, "f32"),
    (5, 2, 32, 128, "f16"),
    (24, 4, 64, 256, "f32"),
    (7, 1, 16, 512, "f32"),
]


@pytest.mark.parametrize("block_dim,n,rows,cols,dtype", CASES)
def test_same_cycle_transfers_are_served_in_core_order(block_dim, n, rows, cols, dtype):
    r = sim.simulate(_loads(block_dim, n, rows, cols, dtype), functional=False)
    first = (
        r.trace[r.trace["opcode"] == "TLOAD"].sort_values(["core", "id"]).groupby("core").head(1)
    )
    assert (first["start_cycle"] == first["start_cycle"].iloc[0]).all()
    ends = first["end_cycle"].to_numpy()
    assert (np.diff(ends) >= 0).all()  # a later core never ends first
    # core c is served (c+1)-th: the HBM channel (every first touch misses the L2) has
    # moved c+1 tiles by the end of its transfer
    tgt = load_target("a2a3")
    hbm = tgt.gm["bandwidth_gib_per_s"] * 2**30 / tgt.clock_hz
    nbytes = rows * cols * np.dtype({"f32": np.float32, "f16": np.float16}[dtype]).itemsize
    served = (np.arange(block_dim) + 1) * nbytes / hbm + first["start_cycle"].iloc[0]
    assert (ends >= np.floor(served)).all()


@pytest.mark.parametrize("block_dim,n,rows,cols,dtype", CASES)
def test_the_order_units_start_in_changes_nothing(block_dim, n, rows, cols, dtype, monkeypatch):
    """Started last-core-first, the units resume in another event order at every shared
    cycle: the same trace, cycle for cycle."""
    k = _loads(block_dim, n, rows, cols, dtype)
    ahead = sim.simulate(k, functional=False)
    run = chip_module.Chip.run

    def reversed_run(self):
        self.units.reverse()
        return run(self)

    monkeypatch.setattr(chip_module.Chip, "run", reversed_run)
    behind = sim.simulate(k, functional=False)
    assert ahead.total_cycles == behind.total_cycles
    pd.testing.assert_frame_equal(ahead.trace, behind.trace)
