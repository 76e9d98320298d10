"""Lowering of TQUANT, integer form, from instructions-more.md §4 (A2/A3, Variant S).

INT8_SYM, f32 source R x C (``Rep = ceil(R*C/64)``, ``c = ceil(C/64)``):
``vbrcb`` of the R per-row parameters (one flat 18-cycle call) bar; ``vmul`` in row-repeat
norm mode, one instruction of R repeats per 64-column chunk (``25 + 2*R*c``) bar;
``vconv`` f32 -> i32 (``27 + Rep``) bar; ``set_deqscale`` (1 cfg) and ``vconv_deq``
i32 -> f16 (``27 + Rep``) bar; ``vconv`` f16 -> i8 at 128 lanes (``27 + Rep/2``) bar.
INT8_ASYM adds ``vbrcb`` bar ``vadd`` (``24 + 2*R*c``) bar before the converts. Every bar is
one cycle and breaks the V stream, so each instruction pays its latency. The count-mode
per-row ``vmul`` of a row wider than R chunks (``C/64 > R``) and the repeat-stride split
are not modelled (ASSUMPTION: the row-repeat form is costed). §4's worked example,
32 x 64 SYM, adds isolated latencies to 274 cycles; ``sim.timing.lower`` costs the same
sequence with the calibrated triples of vector_costs.csv and its stream rule. The A5 form
has no formula [silent]: A5 falls back to this lowering (models/a5/machine.toml).
"""

from __future__ import annotations

import math

from sim.timing.hints import hint
from sim.timing.plan import Item
from sim.timing.vpath import BAR, cfg, v

__all__ = ["lowerings", "tquant"]


def tquant(s) -> list[Item]:
    R, C = s.valid_rows, s.valid_cols
    c = max(1, math.ceil(C / 64))
    rep = max(1, math.ceil(R * C / 64))
    asym = "ASYM" in str(hint(s, "quant_type", "")).upper()
    rows = [(R, False)] * c  # row-repeat vmul / vadd: one per 64-column chunk
    f32 = "f32"  # every step computes on f32 / its conversions, not on dst's i8
    items = v("vbrcb", [(1, False)], f32) + [BAR] + v("vmul", rows, f32) + [BAR]
    if asym:
        items += v("vbrcb", [(1, False)], f32) + [BAR] + v("vadd", rows, f32) + [BAR]
    items += v("vconv", [(rep, False)], f32) + [BAR]
    items += cfg(1, "set_deqscale") + v("vconv", [(rep, False)], f32) + [BAR]
    items += v("vconv", [(max(1, math.ceil(rep / 2)), False)], "f16") + [BAR]
    return items


def lowerings(elementwise) -> dict:
    """Opcode -> lowering ``(shape, dtype, src_dtype, maxrep) -> items``."""
    return {"TQUANT": lambda s, d, src, m: tquant(s)}
