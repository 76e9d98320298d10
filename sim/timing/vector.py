"""A2/A3 vector lowering: which CCE instructions a vector tile op becomes.

The A2/A3 backend picks a code path from the tile geometry (timing-model.md §3):

1. *small shape* — the capacity row is narrower than one repeat: one masked instruction
   walks all rows (binary ops only);
2. *flat* — the valid region is contiguous (full-width rows, or one row): one instruction
   over ``R*C`` elements plus a masked tail, or count mode when the capacity row is not
   a whole number of repeats or the tile needs more than 255 repeats;
3. *per-row* — narrow tiles whose rows are not contiguous: one count-mode or norm-mode
   instruction per row;
4. *row-repeat* — one instruction per 256-byte column chunk walking down all rows with a
   repeat stride of one capacity row, plus a masked instruction for the column tail;
5. *very tall or wide* — per-row instructions split at 255 repeats.

A path is a list of segments ``(repeats, masked)`` plus the config writes that set masks
and modes. Each op maps its CCE instruction(s) over the path; composite ops (TREM, TFMOD,
TDIVS ...) chain several steps separated by intra-op barriers.
"""

from __future__ import annotations

import math

from sim.timing.plan import Item

__all__ = ["lower_vector"]

# The CCE instruction behind each single-instruction op (instructions.md §1).
_CCE = {
    "TADD": "vadd", "TSUB": "vsub", "TMUL": "vmul", "TDIV": "vdiv", "TMAX": "vmax",
    "TMIN": "vmin", "TAND": "vand", "TOR": "vor", "TNOT": "vnot",
    "TABS": "vabs", "TEXP": "vexp", "TLOG": "vln", "TSQRT": "vsqrt", "TRSQRT": "vrsqrt",
    "TRELU": "vrelu", "TNEG": "vmuls",
    "TADDS": "vadds", "TSUBS": "vadds", "TMULS": "vmuls", "TMAXS": "vmaxs",
    "TMINS": "vmins", "TLRELU": "vlrelu", "TEXPANDS": "vector_dup", "TCVT": "vconv",
}


def _cfg(n: int) -> Item:
    return Item("cfg", cycles=n)


_BAR = Item("bar", "pipe_barrier(PIPE_V)", cycles=1, breaks_stream=True)


def _v(name: str, segs) -> list[Item]:
    return [Item("v", name, rep, masked) for rep, masked in segs]


# --- paths ------------------------------------------------------------------------------

def _flat(n: int, E: int, count_mode: bool):
    """One contiguous run of n elements."""
    if count_mode:
        return [(math.ceil(n / E), True)], 4
    full, tail = divmod(n, E)
    segs = [(full, False)]               # issued even when full == 0 (costs its latency)
    if tail:
        return segs + [(1, True)], 2
    return segs, 0


def _per_row(R: int, C: int, E: int):
    if C % E:
        return [(math.ceil(C / E), True)] * R, 4
    return [(C // E, False)] * R, 0


def _row_repeat(R: int, C: int, E: int, Cols: int, B: int, maxrep: int):
    if R <= maxrep and Cols // B <= maxrep:
        segs = [(R, False)] * (C // E)
        if C % E:
            return segs + [(R, True)], 2
        return segs, 0
    # very tall or wide tiles: per-row head instructions split at the repeat limit, tail
    # instructions per block of rows (per row when the row stride exceeds the limit)
    segs = []
    head = C // E
    for _ in range(R):
        for start in range(0, head, maxrep):
            segs.append((min(maxrep, head - start), False))
    cfg = 0
    if C % E:
        step = 1 if Cols // B > maxrep else maxrep
        segs += [(min(step, R - r), True) for r in range(0, R, step)]
        cfg = 2
    return segs, cfg


def path(kind: str, Rows, Cols, VC, R, C, E, B, maxrep=255):
    """Segments and config cycles for one pass over the iteration domain (§3)."""
    if kind == "binary" and Rows <= maxrep and Cols < E:
        return [(R, C < E)], 2
    static_contig = VC == Cols or Rows == 1
    runtime_contig = C == Cols or R == 1
    if static_contig or (kind != "scalar" and runtime_contig):
        n = R * C
        if kind == "binary":
            if static_contig:
                count = (Cols % E != 0 and Cols > E) or math.ceil(Rows * Cols / E) > maxrep
            else:
                count = C > E and C % E != 0
        else:
            count = math.ceil(n / E) > maxrep
        return _flat(n, E, count)
    k = Cols // E
    if (k > 1 and Rows * k < 4) or Rows < k + 1:
        return _per_row(R, C, E)
    return _row_repeat(R, C, E, Cols, B, maxrep)


def _count_row(C: int, E: int):
    return [(math.ceil(C / E), True)]


# --- op families --------------------------------------------------------------------------

def _single(s, E, B, kind):
    segs, cfg = path(kind, s.rows, s.cols, s.static_valid_cols, s.valid_rows, s.valid_cols, E, B)
    return ([_cfg(cfg)] if cfg else []) + _v(_CCE[s.opcode], segs)


def _tdivs(s, E, B, dtype_is_float):
    if not dtype_is_float:
        # Integer TDIVS runs a scalar loop on PIPE_S between V->S and S->V hand-offs
        # (programming-model.md §6.3); only the four flag calls are costed (§2.6).
        return [Item("flag", "set_flag(V,S)", cycles=1),
                Item("flag", "wait_flag(V,S)", cycles=1, breaks_stream=True),
                Item("flag", "set_flag(S,V)", cycles=1),
                Item("flag", "wait_flag(S,V)", cycles=1)]
    segs, cfg = path("scalar", s.rows, s.cols, s.static_valid_cols, s.valid_rows, s.valid_cols, E, B)
    pre = [_cfg(cfg)] if cfg else []
    if s.variant == "inplace" and s.opcode == "TDIVS":
        return pre + _v("vmuls", segs)
    return pre + _v("vector_dup", segs) + [_BAR] + _v("vdiv", segs)


def _texpands(s, E, B):
    R, C = s.valid_rows, s.valid_cols
    if s.static_valid_cols == s.cols or s.rows == 1:
        return [_cfg(4)] + _v("vector_dup", [(math.ceil(R * C / E), True)])
    return [_cfg(4)] + _v("vector_dup", _count_row(C, E) * R)


# Per-row step sequences of the composite remainder ops (timing-model.md §4). A step is
# (cce instruction, mode): "count" = count mode over the row's C elements, "full" = one
# full-mask repeat, "cmp" = ceil(C/64) norm repeats; "cfg" = a one-cycle config write.
_REMAINDER_STEPS = {
    ("TFMOD", "f32"): ["vdiv", "vconv", "vmul", "vsub"],
    ("TFMODS", "f32"): ["vector_dup", "vdiv", "vconv", "vmuls", "vsub"],
    ("TREM", "f32"): ["vdiv", "vconv", "vmul", "vsub", "vmul", ("vector_dup", "full"),
                      ("set_cmpmask", "cfg"), ("vcmpvs", "cmp"), "vadd", "vsel"],
    ("TREM", "i32"): ["vconv", "vconv", "vdiv", "vconv", "vconv", "vconv", "vmul", "vsub",
                      "vconv", "vconv", "vmul", ("vector_dup", "full"), ("set_cmpmask", "cfg"),
                      ("vcmpvs", "cmp"), "vadd", "vsel", "vconv"],
    ("TREMS", "f32"): ["vector_dup", "vdiv", "vconv", "vmuls", "vsub", "vmuls",
                       ("vcmpvs", "cmp"), ("set_cmpmask", "cfg"), "vadds", "vsel"],
    ("TREMS", "i32"): ["vconv", "vector_dup", "vdiv", "vconv", "vmuls", "vsub", "vmuls",
                       ("vcmpvs", "cmp"), ("set_cmpmask", "cfg"), "vadds", "vsel", "vconv"],
}


def _remainder(s, E):
    key = (s.opcode, "i32" if s.dtype in ("i32", "u32") else "f32")
    steps = _REMAINDER_STEPS.get(key) or _REMAINDER_STEPS[(s.opcode, "f32")]
    C = s.valid_cols
    row: list[Item] = []
    for step in steps:
        name, mode = step if isinstance(step, tuple) else (step, "count")
        if mode == "cfg":
            row.append(Item("cfg", name, cycles=1))
        elif mode == "full":
            row.append(Item("v", name, 1, False))
        elif mode == "cmp":
            row.append(Item("v", name, math.ceil(C / 64), False))
        else:
            row.append(Item("v", name, math.ceil(C / E), True))
        row.append(_BAR)
    return [_cfg(4)] + row * s.valid_rows


def lower_vector(s, dtype, src_dtype, maxrep=255) -> list[Item]:
    """CCE items of a PIPE_V tile op with shape ``s``."""
    E = 256 // dtype.size_bytes
    B = 32 // dtype.size_bytes
    family = _FAMILY.get(s.opcode)
    if s.opcode in ("TDIVS", "TRECIP"):
        return _tdivs(s, E, B, dtype.is_float)
    if s.opcode == "TEXPANDS":
        return _texpands(s, E, B)
    if family == "remainder":
        return _remainder(s, E)
    if s.opcode == "TCVT":
        E = 256 // max(dtype.size_bytes, src_dtype.size_bytes)
        B = E // 8
        return _single(s, E, B, "unary")
    if s.opcode in ("TAND", "TOR", "TNOT"):
        # bitwise ops reinterpret every element type as 16-bit lanes
        scale = dtype.size_bytes / 2
        E, B = 128, 16
        s = _scaled(s, scale)
        return _single(s, E, B, "binary" if s.opcode != "TNOT" else "unary")
    if family in ("binary", "unary", "scalar"):
        return _single(s, E, B, family)
    return _generic(s, E, B)


def _scaled(s, scale):
    import attrs
    return attrs.evolve(s, cols=int(s.cols * scale),
                        static_valid_cols=None if s.static_valid_cols is None else math.ceil(s.static_valid_cols * scale),
                        valid_cols=math.ceil(s.valid_cols * scale))


_FAMILY = {**{k: "binary" for k in ("TADD", "TSUB", "TMUL", "TDIV", "TMAX", "TMIN")},
           **{k: "unary" for k in ("TABS", "TEXP", "TLOG", "TSQRT", "TRSQRT", "TRELU", "TNEG")},
           **{k: "scalar" for k in ("TADDS", "TSUBS", "TMULS", "TMAXS", "TMINS", "TLRELU")},
           **{k: "remainder" for k in ("TREM", "TFMOD", "TREMS", "TFMODS")}}


def _generic(s, E, B):
    """Ops whose detailed lowering is not modelled yet: one vadd-class pass per element.

    ASSUMPTION (stated in the trace as the CCE name "generic"): cost of a vadd over the
    iteration domain. Replaced op by op as the lowering grows.
    """
    segs, cfg = path("binary", s.rows, s.cols, s.static_valid_cols, s.valid_rows, s.valid_cols, E, B)
    return ([_cfg(cfg)] if cfg else []) + _v("vadd", segs)
