"""A chip's trace is its units' traces merged (``sim.engine.record.frame``).

The chip frame is built from the units' integer arrays in one go (static rows and texts
of every unit mapped onto one table); the oracle here is pandas: each unit's own frame,
concatenated as text and sorted by start cycle, core, unit and id.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

import sim
from sim.engine.chip import Chip
from sim.target.model import load_target

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
import flash_attention  # noqa: E402


def _chip_run(kernel):
    chip = Chip(kernel.program(), load_target("a2a3"), block_dim=kernel.block_dim,
                inputs=kernel.inputs, functional=False)
    chip.run()
    return chip


def test_the_chip_trace_is_the_units_traces_merged_in_order():
    chip = _chip_run(flash_attention.build(s1=512, cores=2))
    merged = chip.recording().frame()
    units = [m.recorder.frame() for _, _, m in chip.units]
    assert len(units) == 6 and all(len(u) for u in units)
    text = [u.astype({c: str for c in u.columns if u[c].dtype == "category"}) for u in units]
    want = (pd.concat(text, ignore_index=True)
            .sort_values(["start_cycle", "core", "unit", "id"], kind="stable")
            .reset_index(drop=True))
    got = merged.astype({c: str for c in merged.columns if merged[c].dtype == "category"})
    pd.testing.assert_frame_equal(got, want, check_exact=True)
    # text columns stay categorical, their categories the values used
    for c in ("unit", "opcode", "waits", "source"):
        assert merged[c].dtype == "category"
        assert set(merged[c].cat.categories) == set(want[c])
