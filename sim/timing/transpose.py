"""TTRANS on the A2/A3 vector pipe (timing-model.md §4, instructions.md §3.6).

The backend transposes the source's valid region in square blocks with
``scatter_vnchwconv_b8/b16/b32`` — 32 x 32 elements for 1-byte types, 16 x 16 for 2- and
4-byte types — into the tmp tile, then ``vcopy`` packs the result into dst. The
reference gives ``6 + 2 * repeats`` per scatter call and marks it a placeholder.

ASSUMPTION (the reference is silent on the repeat structure): one scatter call per band of
RS source rows (RS = 32 for b8, 16 otherwise), one repeat per 32-byte column block of the
band; then a barrier and one ``vcopy`` pass over the padded transpose
(``cols * ceil(rows / RS) * RS`` elements, 256 bytes per repeat).
"""

from __future__ import annotations

import math

from sim.timing.plan import Item
from sim.timing.vpath import BAR, split, v

__all__ = ["ttrans"]


def ttrans(s, dtype, maxrep: int = 255) -> list[Item]:
    size = dtype.size_bytes
    rs = 32 if size == 1 else 16
    R, C = s.valid_rows, s.valid_cols
    if R == 0 or C == 0:
        return []
    bands = math.ceil(R / rs)
    per_band = math.ceil(C * size / 32)
    items = []
    for _ in range(bands):
        items += v("scatter_vnchwconv", [(r, False) for r in split(per_band, maxrep)])
    padded = C * bands * rs * size
    return items + [BAR] + v("vcopy", [(r, False) for r in split(math.ceil(padded / 256), maxrep)])
