"""TCMP, TCMPS, TSEL, TPRELU: compare into a packed predicate, select by it
(timing-model.md §4 rows of the same names; instructions.md §3.3).

* TCMP: per row one ``vcmpv_<mode>`` of ceil(C/E) repeats (split at 240); i32 always
  compares EQ on A2/A3 (quirk). NE = the EQ instruction, a barrier, then one count-mode
  ``vnot`` (16-bit lanes) over the whole mask area. Cost "lat once + 2r per row": the
  per-row compares stream behind each other.
* TCMPS: the same with ``vcmpvs_<mode>`` (one placeholder cost row for all six modes).
* TSEL: per row a count-mode ``vector_dup`` of the row's mask address (2 words for b32,
  4 for b16: one effective repeat) into tmp, barrier, ``set_cmpmask``, barrier, count-mode
  ``vsel`` over C; no barrier before the next row's dup. 2 cfg per row (the two
  ``set_vector_mask`` counts) makes §4's ≈59 for the first row and ≈35 for each further
  row at r = 1: (1+24) + 1 + 1 + 1 + (27+2) + 2 = 59; 1 + 1 + 1 + 1 + 29 + 2 = 35.
* TPRELU: TMUL, barrier, TCMPS(tmp, a, 0, GT), barrier, TSEL (sum of the parts).

The compare mode arrives as hint ``cmp`` (``sim.timing.hints``); without it the
placeholder-cost modes (EQ/LT/GT/LE) apply.
"""

from __future__ import annotations

import math

from sim.timing.hints import hint
from sim.timing.plan import Item
from sim.timing.vpath import BAR, cfg, count_row, split, v

__all__ = ["tcmp", "tcmps", "tsel", "tprelu", "CMP_SPLIT"]

CMP_SPLIT = 240  # §4 TCMP: repeats per compare instruction


def _mode(s, dtype) -> str:
    mode = str(hint(s, "cmp", "eq")).lower()
    if dtype.name in ("i32", "u32"):  # A2/A3 quirk: i32 compares EQ whatever the mode
        return "eq"
    return mode


def _mask_not(s) -> list[Item]:
    """Count-mode vnot over the packed mask area: R rows of the u8 predicate, each row
    ceil(Cols/8) bytes rounded up to a 32-byte block (16-bit lanes, 128 per repeat)."""
    row_bytes = max(32, math.ceil(math.ceil(s.cols / 8) / 32) * 32)
    lanes = s.valid_rows * row_bytes // 2
    return [BAR] + cfg(4) + v("vnot", count_row(lanes, 128))


def _per_row_compare(name: str, s, E: int) -> list[Item]:
    r = math.ceil(s.valid_cols / E)
    return v(name, [(n, False) for n in split(r, CMP_SPLIT)] * s.valid_rows)


def tcmp(s, dtype, maxrep) -> list[Item]:
    E = 256 // dtype.size_bytes
    mode = _mode(s, dtype)
    items = _per_row_compare(f"vcmpv_{'eq' if mode == 'ne' else mode}", s, E)
    return items + (_mask_not(s) if mode == "ne" else [])


def tcmps(s, dtype, maxrep, mode: str | None = None) -> list[Item]:
    E = 256 // dtype.size_bytes
    mode = mode or _mode(s, dtype)
    items = _per_row_compare("vcmpvs", s, E)
    return items + (_mask_not(s) if mode == "ne" else [])


def tsel(s, dtype) -> list[Item]:
    E = 256 // dtype.size_bytes
    row = (
        cfg(2)
        + v("vector_dup", [(1, True)])
        + [BAR]
        + cfg(1, "set_cmpmask")
        + [BAR]
        + v("vsel", count_row(s.valid_cols, E))
    )
    return row * s.valid_rows


def tprelu(s, dtype, maxrep, elementwise) -> list[Item]:
    return (
        elementwise(s, "TMUL", dtype, maxrep)
        + [BAR]
        + tcmps(s, dtype, maxrep, "gt")
        + [BAR]
        + tsel(s, dtype)
    )
