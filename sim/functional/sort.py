"""Sorting units: TSORT32 and TMRGSORT, the tile forms of the ``vbitsort`` / ``vmrgsort4``
region-proposal instructions (timing-model.md §2.4).

A sorted element travels as an 8-byte *proposal*: its value, then its 32-bit index. In an
f32 tile a proposal is two elements (value, index bits); in an f16 tile four (value, two
zero bytes, index). ASSUMPTIONS (instructions.md has no entries; these follow the CCE
instructions' documented use):

* TSORT32(dst, src, idx [, tmp]): each row of src's valid region is cut into blocks of 32
  elements (a shorter last block is sorted on its own); each block is sorted by value,
  descending, ties keeping the lower position first, and written as proposals carrying the
  matching element of ``idx`` (u32). A row of C elements fills 8·C bytes of dst's row.
* TMRGSORT(dst, src, blockLen): src's rows hold runs of ``blockLen`` sorted proposals;
  every 4 consecutive runs are merged into one run (vmrgsort4, single-source form).
  TMRGSORT(dst[, tmp], src0, src1[, src2, src3]): each source row holds one sorted run; the
  runs of a row are merged into dst's row. Merging is stable (earlier runs first among
  equal values); the ``exhausted`` attribute (stop when a list runs out) is not modelled:
  every list is merged to its end.
"""

from __future__ import annotations

import numpy as np

from sim.base.errors import SimulationError

__all__ = ["KERNELS"]

_BLOCK = 32


def _proposal_dtype(value: np.dtype) -> np.dtype:
    if value.itemsize == 4:
        return np.dtype([("v", value), ("i", "<u4")])
    return np.dtype([("v", value), ("pad", "<u2"), ("i", "<u4")])


def _proposals(ctx, row: np.ndarray) -> np.ndarray:
    """The proposals one tile row holds (a structured view of its bytes)."""
    raw = np.ascontiguousarray(row).view(np.uint8)
    n = raw.size // 8
    return raw[: n * 8].view(_proposal_dtype(ctx.dtype.np_type))


def _write(ctx, i: int, props: np.ndarray) -> None:
    row = ctx.dst[i]
    need = props.size * 8 // ctx.dtype.size_bytes
    if need > row.size:
        raise SimulationError(
            f"{ctx.where}: {ctx.op} writes {props.size} proposals (8 bytes "
            f"each, {need} {ctx.dtype} elements) per row; dst's valid row "
            f"has {row.size}"
        )
    row[:need] = props.view(ctx.dtype.np_type)


def _descending(values: np.ndarray) -> np.ndarray:
    return np.argsort(-values.astype(np.float64), kind="stable")


def _tsort32(ctx) -> None:
    src, idx = ctx.srcs[:2]
    R, C = src.shape
    pd = _proposal_dtype(ctx.dtype.np_type)
    for i in range(R):
        out = np.zeros(C, pd)
        for b in range(0, C, _BLOCK):
            vals = src[i, b : b + _BLOCK]
            order = _descending(vals)
            out["v"][b : b + vals.size] = vals[order]
            out["i"][b : b + vals.size] = (
                idx[i, b : b + vals.size].astype(np.uint32)[order]
                if idx.shape[1] >= b + vals.size
                else (b + order).astype(np.uint32)
            )
        _write(ctx, i, out)


def _merge(runs: list) -> np.ndarray:
    allp: np.ndarray = np.concatenate(runs) if runs else np.zeros(0)
    if not allp.size:
        return allp
    return allp[_descending(allp["v"])]


def _tmrgsort(ctx) -> None:
    if ctx.scalars:  # single source, runs of blockLen proposals
        (src,) = ctx.srcs[:1]
        block = int(ctx.scalars[0])
        if block <= 0:
            raise SimulationError(f"{ctx.where}: TMRGSORT blockLen must be positive, found {block}")
        for i in range(src.shape[0]):
            props = _proposals(ctx, src[i])
            merged = [
                _merge(
                    [props[s : s + block] for s in range(g, min(g + 4 * block, props.size), block)]
                )
                for g in range(0, props.size, 4 * block)
            ]
            _write(ctx, i, np.concatenate(merged) if merged else props)
        return
    for i in range(ctx.dst.shape[0]):
        runs = [_proposals(ctx, s[i]) for s in ctx.srcs if i < s.shape[0]]
        _write(ctx, i, _merge(runs))


KERNELS = {"TSORT32": _tsort32, "TMRGSORT": _tmrgsort}
