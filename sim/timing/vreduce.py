"""Row and column reductions (timing-model.md §4 TROWSUM / TROWMAX / TROWMIN / TCOL* rows;
instructions.md §3.5). The Shape is the *source* tile (domain = src): R x C valid of a
Rows x Cols capacity.

Float row reduction, general path (E lanes per repeat):

* C <= E: only the final cross-lane ``vcadd``/``vcmax``/``vcmin`` (rep = R, masked when
  C < E: +2 cfg and the count-mode floor, which models/a2a3/vector_costs.csv gives the
  masked cross-lane ops on the formula CSV's evidence), barrier;
* E < C < 2E: ``copy_ubuf_to_ubuf`` of the first E of each row into tmp (R bursts of one
  repeat), barrier;
* C >= 2E, TROWSUM: floor(C/E)//2 ``vadd`` of repeat pairs over all rows (R repeats
  each) + barrier each; an odd full repeat: one more ``vadd`` + barrier; TROWMAX/MIN:
  ``vmax``(rep0, rep1) -> tmp, then one ``vmax`` per further repeat (no tree), each over
  all rows + barrier;
* tail C % E: masked op (rep = R) + barrier;
* TROWSUM only: pairwise tree over the partial repeats held in tmp (``vadd`` + barrier
  per halving);
* final ``vcadd``/``vcmax``/``vcmin`` over all rows (R repeats) + barrier.

The steps over whole repeats (the pair / further-repeat ops, the tree, the final
cross-lane op on tmp) run in norm mode with a full mask, the repeat stride walking the
rows (one instruction per 255 rows; one per row when the row stride exceeds 255 blocks):
they need no count-mode bracket and pay no count-mode floor. §4's table and worked
example write them as count mode (f32 16x128 TROWSUM: 4+24+32+16 +1 + 4+46+112 +1 =
240, i.e. 4 cfg + the 16-cycle floor on the ``vadd`` and 4 cfg on the ``vcadd``); the
910B3 fits of data/a2a3_formula_params.csv do not carry those 24 cycles: TROWSUM f32
cols 128 is 8 cycles per row + 61.5 (16x128: 189.5; norm mode gives 16*9 + 58 = 202,
count mode 240), TROWMAX f32 cols 128 8 per row + 48 (norm: 16*9 + 48 = 192, count mode
216). Over the CSV's rows for C > E (rows 8..64) the median accuracy is 0.94 with norm
mode against 0.88 (TROWMAX) / 0.91 (TROWSUM) with count mode. What remains: the fits'
per-row slope grows by ≈1.2-1.6 cycles per extra repeat (f32 cols 128 -> 336: 8 -> 14
per row) where the model charges vmax's / vadd's 2 per repeat (9 -> 17): long rows are
up to ≈15 % dear (TROWSUM f32 64x336: 1210 vs 1022); no lowering in the reference
explains a cheaper repeat, so the 910B3 slope of the binary ops is kept.
Float special shapes (f32, DN 1-column destination, full valid region): 64x128, 32x256,
16x512, 8x1024 use the group-reduce chains of §4 (``vcgadd``/``vcgmax``/``vcgmin`` and
full-mask ``vadd``/``vmax``/``vmin``; §4's 64x128 example = 255).

Integer row reduction (i32/i16), per row: count ``vector_dup`` of one block, barrier; per
32-byte block of the row one masked op on that block + barrier; V->S hand-off; scalar fold
of the 8/16 block partials (``[scalar_loops] row_fold``, [silent] in the reference);
S->V hand-off. §4: ≈ 1 + 25 + 1 + blocks*43 + 4 per row + the fold.

Column reductions: ``copy_ubuf_to_ubuf`` row 0 -> dst, barrier; rows 1..R-1: one
count-mode op over the row + barrier each; final barrier. When C is wider than one repeat
and not a whole number of repeats, §4 splits each row into a count-mode op over the
256-byte-aligned part and a masked op (rep 1) for the C % E tail, each with its barrier;
the TCOLMAX fits of data/a2a3_formula_params.csv show exactly that (≈35 cycles per row at
f32 C = 96 and f16 C = 160, 192 against ≈17.5 at C = 64 / 128: two restarted F-ops per
row instead of one). C <= E or a multiple of E: one count-mode op per row. TCOLSUM does
not split: its fits grow by only ≈2 cycles per row per extra repeat at the same widths
(f32 C = 64, 96, 144 ... 336: 19.5, 21, 22.7 ... 28 cycles per row, fp16 alike), one
count-mode vadd per row (ASSUMPTION on the reason: the sum needs no separate tail pass).
§4: ≈ (R-1)*(lat + 16 + 2*ceil(C/E) + 1). One row: only the copy.

TCOLSUM binary form (``Shape.variant == "binary"``, ``isBinary`` with a tmp of ceil(R/2)
rows): a pairwise tree (§4 "pairwise vadd into tmp, halving"; instructions.md §3.5), so
ceil(log2 R) dependent levels instead of R - 1. Level by level, tmp[k] = X[2k] + X[2k+1]
over the n // 2 pairs of the n rows left (X = src at the first level, then tmp; the
pairing is the functional unit's, sim.functional.reduce), a barrier after each level; an
odd row left over is moved into tmp with one ``copy_ubuf_to_ubuf``; finally tmp row 0 is
copied to dst. Each level is ONE element-wise pass over its n // 2 destination rows whose
sources step two rows per destination row: §3's rule for sources with another row stride
than the destination, the per-row path (5) — a head ``vadd`` of C // E full repeats per
row (full mask: no floor, streamed back to back) and a masked ``vadd`` for the C % E tail
per 255 rows. ASSUMPTION on the granularity (the reference gives none). Before, each
pair was its own count-mode ``vadd`` paying the count-mode floor, which made the tree
cost the same as the sequential form (16x256 f16: 348 vs 349) — but the library offers
the binary form (and its tmp) to be faster. Evidence: held-out on-board measurements put
column reductions on 16x256 f16 ≈3.4x cheaper than the model (≈103 cycles); the tree
gives 146 there. The formula CSV's TCOLSUM fits are the default (sequential) form: the
sequential lowering above keeps them.
"""

from __future__ import annotations

import math

from sim.timing.hints import hint
from sim.timing.plan import Item
from sim.timing.vpath import (
    BAR,
    cfg,
    copy_ub,
    count_row,
    per_row_heads,
    s_to_v,
    scalar_loop,
    split,
    v,
    v_to_s,
)

__all__ = ["row_reduce", "col_reduce", "DN_SPECIAL"]

_OP = {"SUM": "vadd", "MAX": "vmax", "MIN": "vmin"}
_FINAL = {"SUM": "vcadd", "MAX": "vcmax", "MIN": "vcmin"}
_GROUP = {"SUM": "vcgadd", "MAX": "vcgmax", "MIN": "vcgmin"}

# §4 group-reduce chains of the f32 DN special shapes: ("g", rep) = vcg*, ("v", rep) =
# vadd/vmax/vmin, all norm mode with a full mask; a barrier after each step. §4's
# 64x128 example: (38+128) +1+ (24+16) +1+ (38+8) +1 = 255.
DN_SPECIAL = {
    (64, 128): (("g", 128), ("v", 8), ("g", 8)),
    (32, 256): (("g", 128), ("v", 8), ("v", 4), ("g", 4)),
    (16, 512): (("g", 128), ("g", 16), ("g", 2)),
    (8, 1024): (("g", 128), ("g", 16), ("v", 1), ("g", 1)),
}


def _kind(s) -> str:
    return s.opcode[4:]  # TROWSUM -> SUM, TCOLMAX -> MAX


def _all_rows(
    name: str, R: int, maxrep: int, stride_blocks: int, reps_per_row: int = 1
) -> list[Item]:
    """One step over whole repeats of every row: norm mode, full mask, the repeat stride
    walking the rows (split at the repeat limit) — no count-mode bracket, no floor. A row
    stride beyond the 8-bit repeat stride (§2.1) takes one instruction per row."""
    if stride_blocks > maxrep:
        return v(name, [(reps_per_row, False)] * R) + [BAR]
    return v(name, [(r, False) for r in split(R * reps_per_row, maxrep)]) + [BAR]


def _special(s, kind) -> list[Item] | None:
    if not (
        s.dtype == "f32"
        and hint(s, "dst_layout") == "DN"
        and (s.valid_rows, s.valid_cols) == (s.rows, s.cols)
    ):
        return None
    chain = DN_SPECIAL.get((s.rows, s.cols))
    if chain is None:
        return None
    out: list[Item] = []
    for step, rep in chain:
        name = _GROUP[kind] if step == "g" else _OP[kind]
        out += v(name, [(rep, False)]) + [BAR]
    return out


def _float_row(s, kind, E, maxrep) -> list[Item]:
    special = _special(s, kind)
    if special is not None:
        return special
    R, C = s.valid_rows, s.valid_cols
    op, final = _OP[kind], _FINAL[kind]
    if C <= E:
        masked = C < E
        return cfg(2 if masked else 0) + v(final, [(r, masked) for r in split(R, maxrep)]) + [BAR]
    full, tail = divmod(C, E)
    stride = math.ceil(s.cols * 256 // E / 32)  # source row stride in 32-byte blocks
    out: list[Item] = []
    held = 1  # repeats per row held in tmp
    if full == 1:
        out += [copy_ub(R * 256), BAR]
    elif kind == "SUM":
        held = full // 2
        for _ in range(held + full % 2):
            out += _all_rows(op, R, maxrep, stride)
    else:
        for _ in range(full - 1):
            out += _all_rows(op, R, maxrep, stride)
    if tail:
        out += cfg(2) + v(op, [(r, True) for r in split(R, maxrep)]) + [BAR]
    while held > 1:  # pairwise tree (sum only)
        half = held // 2
        out += _all_rows(op, R, maxrep, stride, half)
        held -= half
    return out + _all_rows(final, R, maxrep, stride)


def _int_row(s, kind, dtype) -> list[Item]:
    per_block = 32 // dtype.size_bytes
    blocks = math.ceil(s.valid_cols * dtype.size_bytes / 32)
    row = (
        cfg(1)
        + v("vector_dup", [(1, True)])
        + [BAR]
        + (v(_OP[kind], [(1, True)]) + [BAR]) * blocks
        + v_to_s()
        + [scalar_loop("row_fold", per_block)]
        + s_to_v()
    )
    return row * s.valid_rows


def row_reduce(s, dtype, maxrep) -> list[Item]:
    E = 256 // dtype.size_bytes
    if dtype.is_float:
        return _float_row(s, _kind(s), E, maxrep)
    return _int_row(s, _kind(s), dtype)


def _row_bytes(C: int, dtype) -> int:
    return math.ceil(C * dtype.size_bytes / 32) * 32


def _col_sequential(s, kind, dtype) -> list[Item]:
    R, C = s.valid_rows, s.valid_cols
    E = 256 // dtype.size_bytes
    op = _OP[kind]
    out: list[Item] = [copy_ub(_row_bytes(C, dtype)), BAR]
    if R == 1:
        return out + [BAR]
    aligned, tail = (C // E) * E, C % E
    if aligned and tail and kind != "SUM":
        # §4: count-mode op over the 256-byte-aligned part of each row, then a masked op
        # (rep 1) per row for the tail
        out += cfg(4) + (v(op, count_row(aligned, E)) + [BAR]) * (R - 1)
        out += cfg(2) + (v(op, [(1, True)]) + [BAR]) * (R - 1)
    else:
        out += cfg(4) + (v(op, count_row(C, E)) + [BAR]) * (R - 1)
    return out + [BAR]


def _col_binary(s, dtype) -> list[Item]:
    R, C = s.valid_rows, s.valid_cols
    E, B = 256 // dtype.size_bytes, 32 // dtype.size_bytes
    out: list[Item] = []
    n = R
    while n > 1:
        # sources two rows apart per destination row: per-row heads, tails per 255 rows
        segs, n_cfg = per_row_heads(n // 2, C, E, 2 * s.cols, B)
        out += cfg(n_cfg) + v("vadd", segs)
        if n % 2:
            out.append(copy_ub(_row_bytes(C, dtype)))
        out.append(BAR)
        n = math.ceil(n / 2)
    return out + [copy_ub(_row_bytes(C, dtype)), BAR]


def col_reduce(s, dtype) -> list[Item]:
    kind = _kind(s)
    if kind == "SUM" and s.variant == "binary":
        return _col_binary(s, dtype)
    return _col_sequential(s, kind, dtype)
