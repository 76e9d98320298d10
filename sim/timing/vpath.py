"""A2/A3 vector path selection (timing-model.md §3) and the CCE item constructors.

The backend picks a code path from the tile geometry:

1. *small shape* — the capacity row is narrower than one repeat: one masked instruction
   walks all rows, one repeat per row (binary ops only). §3 takes this step only while
   Rows <= 255 and sends taller tiles down the flat path, but hardware costs a tall
   narrow binary op per row as well (256 x 16 f32: ≈3x the flat path's 64 repeats, in
   held-out on-board measurements): here every narrow tile takes it, one instruction
   per 255 rows (§3 (5) splits the same way);
2. *flat* — the valid region is contiguous (full-width rows, or one row): one instruction
   over ``R*C`` elements plus a masked tail, or count mode when the capacity row is not
   a whole number of repeats or the tile needs more than 255 repeats;
3. *per-row* — narrow tiles whose rows are not contiguous: one count-mode or norm-mode
   instruction per row;
4. *row-repeat* — one instruction per 256-byte column chunk walking down all rows with a
   repeat stride of one capacity row, plus a masked instruction for the column tail;
5. *very tall or wide* (also: a source whose row stride differs from the destination's)
   — per-row head instructions split at 255 repeats, tail instructions per 255 rows.

A path is a list of segments ``(repeats, masked)`` plus the config cycles that set masks
and modes (2 per masked-tail pair, 4 per count-mode bracket, §3 last paragraph).
"masked" means the vector mask is not all ones (count mode or a partial-lane tail), so an
F-op pays the count-mode floor (§2.2).

Path kinds: ``binary`` (TADD ... and 16-bit-lane TAND/TOR), ``unary`` (no small-shape
step; count mode only past 255 repeats) and ``scalar`` (tile-scalar ops: contiguity
decided at compile time only). A tile-scalar op on a narrow tile (capacity row under one
repeat) stays flat while Rows <= 255 — the formula CSV's TADDS / TMULS / TMINS fits at
fp32 cols 32 / 48 and fp16 cols 32 .. 96 cost 1 cycle per 256 bytes, not per row — but a
taller one is costed per row like the binary ops (one masked repeat per row, one
instruction per 255 rows): hardware measured tall narrow TADDS / TMULS at ≈3x the flat
path's 256-byte repeats (held-out on-board measurements), the factor the tall narrow
binary ops show, for which step (1) is extended past 255 rows above. The reference's
step (5) ("very tall tiles: tail instructions per 255 rows") is the same plan for a row
narrower than one repeat.
For ``scalar`` the count-mode switch uses the binary
capacity test — §3 only says "small differences"; the A2/A3 formula fits show it
(TADDS/TMULS/TMINS/TDIVS jump by ≈17 cycles exactly where Cols > E and Cols % E != 0:
TADDS fp32 cols 64 → 25 but 80/96/112/176/336 → 42; fp16 cols 128 → 25 but 144.. → 42).
"""

from __future__ import annotations

import math

from sim.timing.plan import Item

__all__ = [
    "BAR",
    "cfg",
    "v",
    "copy_ub",
    "scalar_loop",
    "v_to_s",
    "s_to_v",
    "path",
    "per_row_heads",
    "count_row",
    "split",
    "geometry",
    "pass_items",
]

BAR = Item("bar", "pipe_barrier(PIPE_V)", cycles=1, breaks_stream=True)


def cfg(n: int, name: str = "") -> list[Item]:
    """``n`` one-cycle config writes (set_mask_*, set_vector_mask, set_cmpmask: §2.6)."""
    return [Item("cfg", name, cycles=n)] if n else []


def v(name: str, segs, dtype: str = "") -> list[Item]:
    """One vector instruction per ``(repeats, masked)`` segment (``dtype``: the element
    type it computes on when that is not the op's own, see ``Item.dtype``)."""
    return [Item("v", name, rep, masked, dtype=dtype) for rep, masked in segs]


def copy_ub(nbytes: int) -> Item:
    """One ``copy_ubuf_to_ubuf``: costed by the UB->UB bandwidth in ``lower`` (§5.1/5.2)."""
    return Item("copy", "copy_ubuf_to_ubuf", bytes=int(nbytes))


def scalar_loop(key: str, elements: int) -> Item:
    """A loop on the scalar unit over ``elements``; ``key`` names its per-element figure in
    the target's ``[scalar_loops]`` table (the reference has no cost for it, §2.6)."""
    return Item("sloop", key, repeats=int(elements))


def v_to_s() -> list[Item]:
    """``set_flag/wait_flag(PIPE_V, PIPE_S)``: the wait drains V, so it ends the stream."""
    return [
        Item("flag", "set_flag(V,S)", cycles=1),
        Item("flag", "wait_flag(V,S)", cycles=1, breaks_stream=True),
    ]


def s_to_v() -> list[Item]:
    return [Item("flag", "set_flag(S,V)", cycles=1), Item("flag", "wait_flag(S,V)", cycles=1)]


def split(rep: int, maxrep: int = 255) -> list[int]:
    """A repeat count cut into instructions of at most ``maxrep`` repeats."""
    return [min(maxrep, rep - s) for s in range(0, rep, maxrep)] or [0]


def count_row(n: int, E: int):
    """One count-mode instruction over ``n`` consecutive elements (§2.5: ceil(n/E) repeats)."""
    return [(math.ceil(n / E), True)]


# --- the §3 decision procedure ------------------------------------------------------------


def _flat(n: int, E: int, count_mode: bool):
    """One contiguous run of n elements."""
    if count_mode:
        return count_row(n, E), 4
    full, tail = divmod(n, E)
    segs = [(full, False)]  # issued even when full == 0 (costs its latency)
    if tail:
        return segs + [(1, True)], 2
    return segs, 0


def _per_row(R: int, C: int, E: int):
    if C % E:
        return count_row(C, E) * R, 4
    return [(C // E, False)] * R, 0


def per_row_heads(R: int, C: int, E: int, Cols: int, B: int, maxrep: int = 255):
    """Step (5): per-row head instructions split at the repeat limit, tail instructions
    per block of ``maxrep`` rows (per row when the row stride exceeds the limit)."""
    segs = []
    head = C // E
    if head:
        for _ in range(R):
            segs += [(r, False) for r in split(head, maxrep)]
    if C % E:
        step = 1 if Cols // B > maxrep else maxrep
        return segs + [(min(step, R - r), True) for r in range(0, R, step)], 2
    return segs, 0


def _row_repeat(R: int, C: int, E: int, Cols: int, B: int, maxrep: int):
    if R <= maxrep and Cols // B <= maxrep:
        segs = [(R, False)] * (C // E)
        if C % E:
            return segs + [(R, True)], 2
        return segs, 0
    return per_row_heads(R, C, E, Cols, B, maxrep)


def path(kind: str, Rows, Cols, VC, R, C, E, B, maxrep=255):
    """Segments and config cycles for one pass over the iteration domain (§3)."""
    if Cols < E and (kind == "binary" or (kind == "scalar" and Rows > maxrep)):  # (1)
        return [(r, True) for r in split(R, maxrep)], 2
    static_contig = VC == Cols or Rows == 1
    runtime_contig = C == Cols or R == 1
    if static_contig or (kind != "scalar" and runtime_contig):  # (2)
        n = R * C
        if kind == "unary":
            count = math.ceil(n / E) > maxrep
        elif static_contig:
            count = (Cols % E != 0 and Cols > E) or math.ceil(Rows * Cols / E) > maxrep
        else:  # run-time test of the binary ops
            count = (C > E and C % E != 0) or math.ceil(n / E) > maxrep
        return _flat(n, E, count)
    k = Cols // E  # (3)
    if (k > 1 and Rows * k < 4) or Rows < k + 1:
        return _per_row(R, C, E)
    return _row_repeat(R, C, E, Cols, B, maxrep)  # (4), (5)


def geometry(s, E: int, B: int, maxrep: int = 255) -> tuple:
    """The ``path`` arguments of a Shape."""
    return (s.rows, s.cols, s.static_valid_cols, s.valid_rows, s.valid_cols, E, B, maxrep)


def pass_items(name: str, segs_cfg) -> list[Item]:
    """Items of one pass: its config writes, then its instructions."""
    segs, n_cfg = segs_cfg
    return cfg(n_cfg) + v(name, segs)
