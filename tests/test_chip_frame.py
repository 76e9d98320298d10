"""A chip's trace is its units' traces merged (``sim.engine.record.frame``).

The chip frame is built from the units' integer arrays in one go (static rows and texts
of every unit mapped onto one table); the oracle here is pandas: each unit's own frame,
concatenated as text and sorted by start cycle, core, unit and id.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

from sim.engine.chip import Chip
from sim.engine.record import Recorder, frame
from sim.target.model import load_target

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
import flash_attention  # noqa: E402


def _chip_run(kernel):
    chip = Chip(
        kernel.program(),
        load_target("a2a3"),
        block_dim=kernel.block_dim,
        inputs=kernel.inputs,
        functional=False,
    )
    chip.run()
    return chip


def test_the_chip_trace_is_the_units_traces_merged_in_order():
    chip = _chip_run(flash_attention.build(s1=512, cores=2))
    merged = chip.recording().frame()
    units = [m.recorder.frame() for _, _, m in chip.units]
    assert len(units) == 6 and all(len(u) for u in units)
    text = [u.astype({c: str for c in u.columns if u[c].dtype == "category"}) for u in units]
    want = (
        pd.concat(text, ignore_index=True)
        .sort_values(["start_cycle", "core", "unit", "id"], kind="stable")
        .reset_index(drop=True)
    )
    got = merged.astype({c: str for c in merged.columns if merged[c].dtype == "category"})
    pd.testing.assert_frame_equal(got, want, check_exact=True)
    # text columns stay categorical, their categories the values used
    for c in ("unit", "opcode", "waits", "source"):
        assert merged[c].dtype == "category"
        assert set(merged[c].cat.categories) == set(want[c])


def _oracle(recorders):
    text = [r.frame() for r in recorders]
    text = [u.astype({c: str for c in u.columns if u[c].dtype == "category"}) for u in text]
    return (
        pd.concat(text, ignore_index=True)
        .sort_values(["start_cycle", "core", "unit", "id"], kind="stable")
        .reset_index(drop=True)
    )


def test_merged_rows_tie_on_start_and_need_more_than_64_bits():
    # equal start cycles across units and within one (ties broken by core, unit, id); start
    # cycles too large to pack with the ids into one int64 take the lexsort path
    rng = np.random.default_rng(7)
    for base in (0, 2**62):
        recorders = [
            Recorder(core, unit)
            for core, unit in ((1, "AIV0"), (0, "AIV1"), (0, "AIC"), (1, "AIC"))
        ]
        for r in recorders:
            for seq in rng.permutation(40).tolist():
                start = base + int(rng.integers(0, 6))
                r.cce_row(
                    ("PIPE_V", "op", f"OP{seq % 3}", 1, 0, "", f"l{seq % 5}", ""),
                    seq,
                    start,
                    start,
                    start + 3,
                )
        merged = frame(recorders)
        got = merged.astype({c: str for c in merged.columns if merged[c].dtype == "category"})
        pd.testing.assert_frame_equal(got, _oracle(recorders), check_exact=True)
