"""The bytes each CCE copy instruction of a data-movement op charges, per layout.

A TLOAD / TSTORE / TMOV / TEXTRACT lowers to one or more copy instructions whose size
fields are in the hardware's units, so the bytes a transfer is charged are not always the
valid region's bytes (timing-model.md §5.2):

* GM <-> UB (``copy_gm_to_ubuf_align`` / ``copy_ubuf_to_gm_align``): byte-exact bursts.
  ND: ``nBurst = rows``, ``lenBurst = cols * size``; DN: ``nBurst = cols``, ``lenBurst =
  rows * size``; NZ: ``nBurst`` = fractal columns, ``lenBurst = rows * 32``. One copy per
  outer GM dim (dims 0..2 of a 5-D window).
* GM <-> L1 (``copy_gm_to_cbuf`` / ``copy_cbuf_to_gm``): lengths in 32-byte blocks, so
  each burst rounds up to a block; the ND -> NZ load (``multi_nd2nz``) is byte-exact
  (``nValue * dValue * size``).
* L1 -> L0A / L0B (``load_cbuf_to_ca/cb``): one 512-byte fractal per repeat, so the
  destination's valid region rounds up to whole 16 x C0 fractals.
* L1 -> BT / FB: bursts of 64 / 128 bytes. UB -> UB: 32-byte blocks per row.
* L0C -> GM / L1 / UB (FIXPIPE): ``rows * cols`` elements in the *destination* element
  type — the accumulator is converted on the way out (f32 -> f16 halves the bytes).
  These are the bytes *moved* (what GM bandwidth sharing counts). What a FIXPIPE copy is
  *charged* is per element: a path with ``charged_bytes_per_element`` in machine.toml
  pays that many bytes per element whatever the types, as the reference's
  ``copy_matrix_cc_to_gm`` / ``copy_matrix_cc_to_cbuf`` (2 bytes, §5.2, §12 caveat 4;
  applied in ``sim.timing.lower``; the evidence for this reading is in
  models/a2a3/machine.toml).

The start-up + bandwidth formula applied to each copy is ``sim.timing.dma``.
"""

from __future__ import annotations

import math

import attrs

__all__ = ["Geometry", "copies"]

BLOCK = 32  # bytes of one UB / L1 block
FRACTAL = 512  # bytes of one L0A / L0B fractal (16 x C0)


@attrs.frozen
class Geometry:
    """Layout facts of a data-movement instruction (``Shape.extra`` of the load, store
    and move families)."""

    layout: str = "nd"  # on-chip tile's layout: nd, dn, nz, zn, zz
    gm_layout: str = "nd"  # GM view's layout (TLOAD / TSTORE), else ""
    out_size: int = 0  # bytes per element written (FIXPIPE conversion); 0 = dtype's
    outer: int = 1  # copies for the outer GM dims of an N-D window


def _blocks(nbytes: int, unit: int) -> int:
    return math.ceil(nbytes / unit) * unit


def _bursts(rows: int, cols: int, size: int, layout: str, unit: int) -> int:
    """nBurst * lenBurst of a 2-D window with bursts rounded to ``unit`` bytes."""
    if layout == "dn":
        return cols * _blocks(rows * size, unit)
    if layout in ("nz", "zn", "zz"):
        c0 = BLOCK // size
        return math.ceil(cols / c0) * rows * BLOCK
    return rows * _blocks(cols * size, unit)


def copies(path: str, rows: int, cols: int, size: int, g: Geometry) -> tuple[int, int]:
    """(number of copy instructions, bytes charged by each) of one data-movement op."""
    if path in ("GM_UB", "UB_GM", "GM_L1", "L1_GM"):
        r = max(1, rows // g.outer)  # each outer-dim copy moves its own rows
        if path == "GM_L1" and g.gm_layout == "nd" and g.layout in ("nz", "zn", "zz"):
            return g.outer, r * cols * size  # multi_nd2nz: exact
        unit = 1 if path in ("GM_UB", "UB_GM") else BLOCK
        return g.outer, _bursts(r, cols, size, g.gm_layout or g.layout, unit)
    if path in ("L1_L0A", "L1_L0B"):
        c0 = BLOCK // size
        return 1, math.ceil(rows / 16) * math.ceil(cols / c0) * FRACTAL
    if path in ("L0C_GM", "L0C_L1", "L0C_UB"):
        return 1, rows * cols * (g.out_size or size)
    if path == "L1_BT":
        return 1, rows * _blocks(cols * (g.out_size or size), 64)
    if path == "L1_FB":
        return 1, rows * _blocks(cols * size, 128)
    if path == "UB_UB":
        return 1, rows * _blocks(cols * size, BLOCK)
    return 1, rows * cols * size
