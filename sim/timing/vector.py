"""A2/A3 vector lowering: which CCE instructions a vector tile op becomes.

Entry point ``lower_vector(shape, dtype, src_dtype, maxrep)`` returns the CCE items
(vector instructions with repeats/masks, config writes, barriers, flags, UB->UB copies,
scalar loops) that ``sim.timing.lower`` costs. The path selection of timing-model.md §3
lives in ``vpath``; the op families with multi-instruction sequences have one module
each:

* this module — element-wise ops: one CCE instruction per §3 pass (TADD ... TMIN, the
  unary and tile-scalar ops, 16-bit-lane bitwise ops), TXOR, TADDC/TSUBC, float TDIVS /
  TRECIP, TRSQRT, TCVT (§4 table rows of the same names);
* ``vscalar``    — ops that run a loop on the scalar pipe (TSHL/TSHR, integer TDIVS);
* ``vremainder`` — TREM, TFMOD, TREMS, TFMODS per-row step sequences;
* ``vselect``    — TCMP, TCMPS, TSEL, TPRELU;
* ``vreduce``    — TROWSUM/MAX/MIN, TCOLSUM/MAX/MIN;
* ``vexpand``    — TEXPANDS, TROWEXPAND, TCOLEXPAND and the expand-and-operate families;
* ``vcombine``, ``vreduce_ext``, ``vsort`` — the ops real kernels use beyond the
  reference's entries (TCONCAT, TPART*, *EXPANDEXPDIF, TSELS, TXORS; arg and product
  reductions; TSORT32, TMRGSORT), each composed of costed CCE instructions;
* ``vgather``    — TGATHER, TFILLPAD and TCI (a PIPE_S scalar loop: its items are built
  here, but ``sim.timing.lower`` must route PIPE_S ops other than TASSIGN to
  ``lower_vector`` for them to be costed).

Instruction facts beyond the geometry (compare mode, TCOLSUM's binary form, a DN
reduction output, a TROWEXPAND source's shape, TCVT saturation) reach the lowering
through ``Shape.variant`` / ``Shape.extra`` as built by ``sim.timing.hints``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import attrs

from sim.isa.dtypes import dtype as _dtype
from sim.timing import (
    transpose,
    vcombine,
    vexpand,
    vgather,
    vquant,
    vreduce,
    vreduce_ext,
    vremainder,
    vscalar,
    vscatter,
    vselect,
    vsort,
)
from sim.timing.hints import hint
from sim.timing.plan import Item
from sim.timing.vpath import BAR, cfg, count_row, geometry, pass_items, path, v

__all__ = ["lower_vector", "path", "elementwise"]

# Single-CCE-instruction ops: (instruction, §3 path kind). instructions.md §1 / timing §4.
_SINGLE = {
    "TADD": ("vadd", "binary"),
    "TSUB": ("vsub", "binary"),
    "TMUL": ("vmul", "binary"),
    "TDIV": ("vdiv", "binary"),
    "TMAX": ("vmax", "binary"),
    "TMIN": ("vmin", "binary"),
    "TABS": ("vabs", "unary"),
    "TEXP": ("vexp", "unary"),
    "TLOG": ("vln", "unary"),
    "TSQRT": ("vsqrt", "unary"),
    "TRELU": ("vrelu", "unary"),
    "TNEG": ("vmuls", "scalar"),  # literally TMULS(dst, src, -1) (§3.1)
    "TADDS": ("vadds", "scalar"),
    "TSUBS": ("vadds", "scalar"),  # TSUBS adds -s (§3.4)
    "TMULS": ("vmuls", "scalar"),
    "TMAXS": ("vmaxs", "scalar"),
    "TMINS": ("vmins", "scalar"),
    "TLRELU": ("vlrelu", "scalar"),
    "TAXPY": ("vaxpy", "scalar"),  # instructions-more.md §3.5: vaxpy, dst is the addend
}
# Bitwise ops reinterpret every element type as 16-bit lanes (§3.2; timing §4 "Rep16").
_BITWISE = {"TAND": ("vand", "binary"), "TOR": ("vor", "binary"), "TNOT": ("vnot", "unary")}


def elementwise(s, op: str, dtype, maxrep: int) -> list[Item]:
    """One §3 pass of single-instruction op ``op`` over ``s`` (op may differ from s.opcode:
    composite ops reuse it for their parts)."""
    if op in _BITWISE:
        name, kind = _BITWISE[op]
        scale = dtype.size_bytes / 2
        s16 = attrs.evolve(
            s,
            cols=max(1, math.ceil(s.cols * scale)),
            valid_cols=max(1, math.ceil(s.valid_cols * scale)),
            static_valid_cols=None
            if s.static_valid_cols is None
            else max(1, math.ceil(s.static_valid_cols * scale)),
        )
        return pass_items(name, path(kind, *geometry(s16, 128, 16, maxrep)))
    name, kind = _SINGLE[op]
    E, B = 256 // dtype.size_bytes, 32 // dtype.size_bytes
    return pass_items(name, path(kind, *geometry(s, E, B, maxrep)))


def _txor(s, dtype, maxrep):
    """§4 TXOR: vor(tmp) bar vand(dst) bar vnot bar vand — 4 passes, 3 barriers."""
    return (
        elementwise(s, "TOR", dtype, maxrep)
        + [BAR]
        + elementwise(s, "TAND", dtype, maxrep)
        + [BAR]
        + elementwise(s, "TNOT", dtype, maxrep)
        + [BAR]
        + elementwise(s, "TAND", dtype, maxrep)
    )


def _binary3(s, dtype, maxrep):
    """TADDC (a+b+c) / TSUBC (a-b+c). ASSUMPTION: the reference gives no lowering (§3.1 only
    says they are 3-input adds); modelled as two dependent binary passes with a barrier:
    vadd|vsub then vadd, like the functional unit's two rounded steps."""
    first = "TADD" if s.opcode == "TADDC" else "TSUB"
    return elementwise(s, first, dtype, maxrep) + [BAR] + elementwise(s, "TADD", dtype, maxrep)


def _tdivs(s, dtype, maxrep):
    """§4 TDIVS / TRECIP rows. Float tile/scalar: vector_dup(dst, s) bar vdiv(src/dst);
    in place (dst == src, tile/scalar only): vmuls by 1/s; scalar/tile (TRECIP =
    TDIVS(dst, 1, src)): vector_dup bar vdiv. Integer: scalar loop (``vscalar``)."""
    if not dtype.is_float:
        return vscalar.int_divide(s)
    E, B = 256 // dtype.size_bytes, 32 // dtype.size_bytes
    segs, n_cfg = path("scalar", *geometry(s, E, B, maxrep))
    if s.opcode == "TDIVS" and s.variant == "inplace":
        return cfg(n_cfg) + v("vmuls", segs)
    # a count-mode bracket (4 cfg) spans both instructions; masked tails re-set the mask
    # around each instruction (2 cfg per pass)
    if n_cfg == 4:
        return cfg(4) + v("vector_dup", segs) + [BAR] + v("vdiv", segs)
    return cfg(n_cfg) + v("vector_dup", segs) + [BAR] + cfg(n_cfg) + v("vdiv", segs)


def _trsqrt(s, dtype, maxrep):
    """§4 TRSQRT: 2-arg = one vrsqrt pass; 3-arg (with tmp, Shape.variant "tmp") = count
    mode: vector_dup(32 B of tmp = 1.0); R x vsqrt (C each); bar; R x vdiv(1/x), 5 cfg."""
    E, B = 256 // dtype.size_bytes, 32 // dtype.size_bytes
    if s.variant != "tmp":
        return pass_items("vrsqrt", path("unary", *geometry(s, E, B, maxrep)))
    R, C = s.valid_rows, s.valid_cols
    return (
        cfg(5)
        + v("vector_dup", [(1, True)])
        + v("vsqrt", count_row(C, E) * R)
        + [BAR]
        + v("vdiv", count_row(C, E) * R)
    )


# TCVT pairs whose default (non-saturating, PyTorch wrap-around) conversion goes through
# i32 with a tmp tile (instructions.md §3.3): vconv to i32, vand keeps the low bits (16-bit
# lanes), vconv to the narrow type. ASSUMPTION on the exact steps: §4 only says "some
# pairs need 2-3 steps (e.g. non-saturating narrowing through i32 and vand masks)".
_CVT_VIA_I32 = {("f32", "i16"), ("f16", "i16"), ("f16", "i8")}


def _tcvt(s, dtype, src, maxrep):
    """§4 TCVT: one vconv per §3-like (unary) pass with E = 256/max(sizeof src, sizeof dst)."""

    def conv(a_size, b_size):
        E = 256 // max(a_size, b_size)
        return pass_items("vconv", path("unary", *geometry(s, E, E // 8, maxrep)))

    sat = str(hint(s, "sat", "")).lower() in ("on", "true", "1", "sat_on", "saturate")
    if (src.name, dtype.name) in _CVT_VIA_I32 and not sat:
        return (
            conv(src.size_bytes, 4)
            + [BAR]
            + elementwise(s, "TAND", _dtype("i32"), maxrep)
            + [BAR]
            + conv(4, dtype.size_bytes)
        )
    return conv(src.size_bytes, dtype.size_bytes)


def _generic(s, dtype, maxrep):
    """Ops without a modelled lowering (TANDS/TORS/TSHLS/TSHRS, ...): ASSUMPTION —
    the cost of one vadd-class pass over the iteration domain (CCE name ``vadd``)."""
    E, B = 256 // dtype.size_bytes, 32 // dtype.size_bytes
    return pass_items("vadd", path("binary", *geometry(s, E, B, maxrep)))


def _dispatch():
    t: dict[str, Callable[..., list[Item]]] = {
        op: (lambda s, d, src, m, op=op: elementwise(s, op, d, m)) for op in (*_SINGLE, *_BITWISE)
    }
    t.update(
        {
            "TXOR": lambda s, d, src, m: _txor(s, d, m),
            "TADDC": lambda s, d, src, m: _binary3(s, d, m),
            "TSUBC": lambda s, d, src, m: _binary3(s, d, m),
            "TDIVS": lambda s, d, src, m: _tdivs(s, d, m),
            "TRECIP": lambda s, d, src, m: _tdivs(s, d, m),
            "TRSQRT": lambda s, d, src, m: _trsqrt(s, d, m),
            "TCVT": lambda s, d, src, m: _tcvt(s, d, src, m),
            "TSHL": lambda s, d, src, m: vscalar.shift(s),
            "TSHR": lambda s, d, src, m: vscalar.shift(s),
            "TEXPANDS": lambda s, d, src, m: vexpand.texpands(s, d),
            "TROWEXPAND": lambda s, d, src, m: vexpand.trowexpand(s, d, m),
            "TCOLEXPAND": lambda s, d, src, m: vexpand.tcolexpand(s, d),
            "TCMP": lambda s, d, src, m: vselect.tcmp(s, d, m),
            "TCMPS": lambda s, d, src, m: vselect.tcmps(s, d, m),
            "TSEL": lambda s, d, src, m: vselect.tsel(s, d),
            "TPRELU": lambda s, d, src, m: vselect.tprelu(s, d, m, elementwise),
            "TGATHER": lambda s, d, src, m: vgather.tgather(s, d),
            "TFILLPAD": lambda s, d, src, m: vgather.tfillpad(s, d),
            "TCI": lambda s, d, src, m: vgather.tci(s),
            "TTRANS": lambda s, d, src, m: transpose.ttrans(s, d, m),
        }
    )
    for op in vremainder.OPS:
        t[op] = lambda s, d, src, m: vremainder.lower(s, d)
    for op in ("TROWSUM", "TROWMAX", "TROWMIN"):
        t[op] = lambda s, d, src, m: vreduce.row_reduce(s, d, m)
    for op in ("TCOLSUM", "TCOLMAX", "TCOLMIN"):
        t[op] = lambda s, d, src, m: vreduce.col_reduce(s, d)
    for name in ("ADD", "SUB", "MUL", "DIV", "MAX", "MIN"):
        t[f"TROWEXPAND{name}"] = lambda s, d, src, m: vexpand.rowexpand_op(s, d, m)
        t[f"TCOLEXPAND{name}"] = lambda s, d, src, m: vexpand.colexpand_op(s, d, m)
    for extra in (vcombine, vreduce_ext, vsort, vscatter, vquant):  # ops beyond instructions.md
        t.update(extra.lowerings(elementwise))
    return t


_LOWER = _dispatch()


def lower_vector(s, dtype, src_dtype, maxrep=255) -> list[Item]:
    """CCE items of a PIPE_V tile op with shape ``s`` (timing-model.md §3-4)."""
    fn = _LOWER.get(s.opcode)
    if fn is None:
        return _generic(s, dtype, maxrep)
    return fn(s, dtype, src_dtype, maxrep)
