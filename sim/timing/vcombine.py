"""Lowerings of the tile-combining ops without a reference entry: TCONCAT, TPARTADD/MAX/
MIN/MUL, TROWEXPANDEXPDIF, TCOLEXPANDEXPDIF, TSELS and TXORS. Each is composed of
instruction sequences the reference does cost (timing-model.md §2.4, §4); the
composition is the ASSUMPTION, stated per op:

* TCONCAT: one ``copy_ubuf_to_ubuf`` burst per row of each source (its valid row, rounded
  up to 32-byte blocks), as TCOLEXPAND's row copies; the destination domain's geometry
  carries both sources' columns, the rows are dst's valid rows.
* TPART<op>: one pass of the base op (TADD / TMAX / TMIN / TMUL) over dst's valid region,
  a barrier, one ``vcopy`` pass over it for the elements only one source covers.
* TROWEXPANDEXPDIF / TCOLEXPANDEXPDIF: TROWEXPANDSUB's / TCOLEXPANDSUB's sequence, a
  barrier, one TEXP pass (the softmax step the op fuses).
* TSELS: ``vector_dup`` of the scalar into a one-repeat register block, a barrier, then
  TSEL's per-row sequence.
* TXORS: ``vector_dup`` of the scalar over the domain, a barrier, then TXOR's four passes
  (§4: vor, vand, vnot, vand with barriers).
"""

from __future__ import annotations

import math

import attrs

from sim.timing import vexpand, vselect
from sim.timing.vpath import BAR, cfg, copy_ub, count_row, geometry, pass_items, path, v

__all__ = ["lowerings"]

_PART_BASE = {"TPARTADD": "TADD", "TPARTMAX": "TMAX", "TPARTMIN": "TMIN", "TPARTMUL": "TMUL"}


def tconcat(s, dtype):
    row_bytes = math.ceil(s.valid_cols * dtype.size_bytes / 32) * 32
    # two sources share dst's columns: one burst each per row
    return [copy_ub(max(32, row_bytes // 2)) for _ in range(2 * s.valid_rows)]


def tpart(s, dtype, maxrep, elementwise):
    E, B = 256 // dtype.size_bytes, 32 // dtype.size_bytes
    return (
        elementwise(s, _PART_BASE[s.opcode], dtype, maxrep)
        + [BAR]
        + pass_items("vcopy", path("unary", *geometry(s, E, B, maxrep)))
    )


def expdif(s, dtype, maxrep, elementwise):
    row = s.opcode.startswith("TROW")
    sub = attrs.evolve(s, opcode="TROWEXPANDSUB" if row else "TCOLEXPANDSUB")
    first = (
        vexpand.rowexpand_op(sub, dtype, maxrep)
        if row
        else vexpand.colexpand_op(sub, dtype, maxrep)
    )
    return first + [BAR] + elementwise(s, "TEXP", dtype, maxrep)


def tsels(s, dtype):
    return cfg(2) + v("vector_dup", [(1, True)]) + [BAR] + vselect.tsel(s, dtype)


def txors(s, dtype, maxrep, elementwise):
    E = 256 // dtype.size_bytes
    dup = cfg(4) + v("vector_dup", count_row(s.valid_rows * s.valid_cols, E)) + [BAR]
    return (
        dup
        + elementwise(s, "TOR", dtype, maxrep)
        + [BAR]
        + elementwise(s, "TAND", dtype, maxrep)
        + [BAR]
        + elementwise(s, "TNOT", dtype, maxrep)
        + [BAR]
        + elementwise(s, "TAND", dtype, maxrep)
    )


def lowerings(elementwise) -> dict:
    """Opcode -> lowering ``(shape, dtype, src_dtype, maxrep) -> items``; ``elementwise`` is
    ``sim.timing.vector.elementwise`` (passed in: that module builds the table)."""
    table = {
        "TCONCAT": lambda s, d, src, m: tconcat(s, d),
        "TROWEXPANDEXPDIF": lambda s, d, src, m: expdif(s, d, m, elementwise),
        "TCOLEXPANDEXPDIF": lambda s, d, src, m: expdif(s, d, m, elementwise),
        "TSELS": lambda s, d, src, m: tsels(s, d),
        "TXORS": lambda s, d, src, m: txors(s, d, m, elementwise),
    }
    for op in _PART_BASE:
        table[op] = lambda s, d, src, m: tpart(s, d, m, elementwise)
    return table
