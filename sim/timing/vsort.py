"""Sorting lowerings: TSORT32 and TMRGSORT (timing-model.md §2.4 rows ``vbitsort`` and
``vmrgsort4``; instructions.md has no entries, so the repeat counts are ASSUMPTIONS).

* TSORT32: one ``vbitsort`` repeat sorts 32 elements (§2.4: "f32 TSORT32, 32 elements per
  repeat", fit 16·rep + 21 including the trailing barrier), so a source of R x C valid
  elements takes ``R * ceil(C / 32)`` repeats, split at the repeat limit, then a barrier.
* TMRGSORT: one ``vmrgsort4`` repeat merges four sorted lists (§2.4: 78·rep + 20, "single-
  source 4-way merge"). ASSUMPTION: the single-source form (``ins(src, blockLen)``) needs
  one repeat per group of four runs per row, ``R * ceil(proposals / (4 * blockLen))``;
  blockLen is a run-time scalar the timing model does not see, so the group count is
  taken as ``ceil(C / 32 / 4)`` (runs of TSORT32's 32-element blocks, the common input);
  the multi-source form merges its 2-4 lists in one repeat per row. A barrier follows.
"""

from __future__ import annotations

import math

from sim.timing.vpath import BAR, split, v

__all__ = ["lowerings"]


def _segs(rep: int, maxrep: int):
    return [(r, False) for r in split(rep, maxrep)]


def tsort32(s, dtype, maxrep):
    rep = s.valid_rows * math.ceil(s.valid_cols / 32)
    return v("vbitsort", _segs(rep, maxrep)) + [BAR]


def tmrgsort(s, dtype, maxrep):
    if s.variant == "multi":
        rep = s.valid_rows
    else:
        per_row = max(1, math.ceil(s.valid_cols * dtype.size_bytes / 8 / 32 / 4))
        rep = s.valid_rows * per_row
    return v("vmrgsort4", _segs(rep, maxrep)) + [BAR]


def lowerings(elementwise) -> dict:
    """Opcode -> lowering ``(shape, dtype, src_dtype, maxrep) -> items`` (the table of
    ``sim.timing.vector``)."""
    return {
        "TSORT32": lambda s, d, src, m: tsort32(s, d, m),
        "TMRGSORT": lambda s, d, src, m: tmrgsort(s, d, m),
    }
