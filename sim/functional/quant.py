"""TQUANT, integer form (instructions-more.md §3.1), as all three implementations do it.

For every element of the valid region, ``y = src[i, j] * fp[i]`` (INT8_ASYM: ``+ offset[i]``),
rounded to nearest, ties to even, then saturated: INT8_SYM -> i8 in [-128, 127],
INT8_ASYM -> u8 in [0, 255]. ``fp`` (the *reciprocal* scale) and ``offset`` hold one f32 per
row, read from their first column (the DN ``[R, 1]`` column PTOAS asks for). The attribute
``quant_type`` (``#pto<quant_type INT8_SYM>`` / ``INT8_ASYM``) picks the form; SYM needs an
i8 destination and no offset, ASYM a u8 one and an offset. The multiply (and add) are f32
operations rounded to f32, as the A2/A3 ``vmul`` / ``vadd`` and the A5 ``vmul`` do.

Quirk ``tquant_clobbers_src`` (A2/A3, [inferred from code]): the row multiply (and the
offset add) run in place on src, then the i32 -> f16 step writes its f16 values into src's
storage seen as an f16 tile whose ``Cols`` are rounded up to 16: after the op, src's bytes
hold those f16 values from its start (row i, col j at f16 element ``i * Cols16 + j``) and
the f32 products beyond them. The unit reads src's capacity from
``ctx.extra["src_capacity"]``. The tmp tile's contents afterwards are not modelled.
The microscaling form (``pto.tquant.mx``, A5) is not modelled.
"""

from __future__ import annotations

import numpy as np

from sim.base.errors import SimulationError

__all__ = ["KERNELS"]

_FORMS = {"INT8_SYM": ("i8", False, -128, 127), "INT8_ASYM": ("u8", True, 0, 255)}


def quant_form(attrs) -> str:
    text = str(dict(attrs).get("quant_type", "INT8_SYM")).upper()
    return next((k for k in _FORMS if k in text.replace(" ", "_")), text)


def _tquant(ctx) -> None:
    form = quant_form(ctx.attrs)
    if form not in _FORMS:
        raise SimulationError(
            f"{ctx.where}: quant_type {form!r} is not modelled (INT8_SYM or INT8_ASYM; the "
            f"microscaling forms are pto.tquant.mx)"
        )
    want, has_offset, lo, hi = _FORMS[form]
    src, fp, *rest = ctx.srcs
    if ctx.dtype.name != want or bool(rest) != has_offset:
        raise SimulationError(
            f"{ctx.where}: TQUANT {form} takes a {want} destination "
            f"{'and' if has_offset else 'and no'} offset tile, found {ctx.dtype} "
            f"{'with' if rest else 'without'} one"
        )
    rows = src.shape[0]
    y = np.asarray(src, np.float32) * np.asarray(fp[:rows, :1], np.float32)
    if has_offset:
        y = (y + np.asarray(rest[0][:rows, :1], np.float32)).astype(np.float32)
    q = np.clip(np.rint(y.astype(np.float64)), lo, hi)
    ctx.dst[...] = q.astype(ctx.dtype.np_type)
    cap = ctx.extra.get("src_capacity")
    if "tquant_clobbers_src" in ctx.quirks and cap is not None:
        cols16 = -(-cap.shape[1] // 16) * 16
        src[...] = y
        ints = np.rint(y.astype(np.float64)).astype(np.float16)  # i32 -> f16 (vconv_deq)
        flat = np.ascontiguousarray(cap).view(np.float16).reshape(-1)
        r, c = ints.shape
        idx = (np.arange(r)[:, None] * cols16 + np.arange(c)[None, :]).reshape(-1)
        flat[idx[idx < flat.size]] = ints.reshape(-1)[idx < flat.size]
        cap[...] = flat.view(cap.dtype).reshape(cap.shape)


KERNELS = {"TQUANT": _tquant}
