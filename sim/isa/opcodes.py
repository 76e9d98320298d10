"""The opcode registry: every PTO tile instruction pto-sim knows, spelled as the ISA does.

An entry records what the ISA fixes for an opcode on every target: its operand
signature in destination-passing form (``outs`` then ``ins`` as in ``pto.X ins(...)
outs(...)``, the C++ intrinsic taking the outs first), the pipe it issues to
(programming model §6.1, the event-table routing the hardware flags follow), its PTO IR
spelling, and the family the timing model lowers it by. Which dtypes an op accepts is
target data (``models/<target>/ops.toml``), not part of this table.

Signature tokens: ``T`` a tile, ``S`` a scalar, ``V`` a GM partition view, ``T?`` an
optional trailing tile (tmp), ``|`` separates alternative ``ins`` forms.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from sim.base.errors import UserError
from sim.isa.tile import Loc

__all__ = ["OpSpec", "OPCODES", "opcode", "PIPES"]

# Hardware pipe names (CCE spelling). PIPE_ALL is the pseudo-pipe of full barriers.
PIPES = ("PIPE_S", "PIPE_V", "PIPE_MTE1", "PIPE_MTE2", "PIPE_MTE3", "PIPE_M", "PIPE_FIX")


def _static(pipe: str) -> Callable:
    return lambda outs, ins: pipe


def _route_tstore(outs, ins):
    return "PIPE_FIX" if ins[0] is Loc.ACC else "PIPE_MTE3"


def _route_tmov(outs, ins):
    src, dst = ins[0], outs[0]
    if (
        src is Loc.ACC
        or (src is Loc.VEC and dst is Loc.MAT)
        or (src is Loc.MAT and dst is Loc.SCALING)
    ):
        return "PIPE_FIX"
    if src is Loc.MAT:
        return "PIPE_MTE1"
    return "PIPE_V"


def _route_texpands(outs, ins):
    """TEXPANDS and TFILLPAD: a Mat destination is filled on MTE2, a Vec one on V."""
    return "PIPE_MTE2" if outs[0] is Loc.MAT else "PIPE_V"


@attrs.frozen
class OpSpec:
    name: str
    outs: str  # signature of the outs list, e.g. "T"
    ins: tuple[str, ...]  # alternative signatures of the ins list
    family: str  # lowering family for the timing model
    route: Callable = attrs.field(eq=False, repr=False)
    domain: str = "dst"  # whose valid region is the iteration domain
    attrs_allowed: tuple[str, ...] = ()

    @property
    def ir_name(self) -> str:
        """PTO IR spelling: TMATMUL_ACC -> pto.tmatmul.acc."""
        return "pto." + self.name.lower().replace("_", ".")

    def pipe(self, out_locs, in_locs) -> str:
        return self.route(out_locs, in_locs)


OPCODES: dict[str, OpSpec] = {}


def _op(name, outs, ins, family, pipe="PIPE_V", domain="dst", attrs_allowed=()):
    route = pipe if callable(pipe) else _static(pipe)
    ins = tuple(s.strip() for s in ins.split("|"))
    OPCODES[name] = OpSpec(name, outs, ins, family, route, domain, tuple(attrs_allowed))


# --- element-wise tile-tile ------------------------------------------------------------
for _n in ("TADD", "TSUB", "TMUL", "TDIV", "TMAX", "TMIN", "TAND", "TOR", "TSHL", "TSHR"):
    _op(_n, "T", "T T", "binary")
_op("TXOR", "T", "T T T?", "binary")
_op("TREM", "T", "T T T?", "remainder")
_op("TFMOD", "T", "T T", "remainder")
_op("TPRELU", "T", "T T T?", "composite")
_op("TADDC", "T", "T T T", "binary3")
_op("TSUBC", "T", "T T T", "binary3")
# --- unary -----------------------------------------------------------------------------
for _n in ("TABS", "TNEG", "TEXP", "TLOG", "TSQRT", "TRECIP", "TRELU", "TNOT"):
    _op(_n, "T", "T", "unary")
_op("TRSQRT", "T", "T T?", "unary")
# --- tile-scalar -----------------------------------------------------------------------
for _n in (
    "TADDS",
    "TSUBS",
    "TMULS",
    "TMAXS",
    "TMINS",
    "TLRELU",
    "TANDS",
    "TORS",
    "TSHLS",
    "TSHRS",
):
    _op(_n, "T", "T S", "scalar")
_op("TDIVS", "T", "T S | S T", "scalar")
_op("TREMS", "T", "T S T?", "remainder")
_op("TFMODS", "T", "T S", "remainder")
_op("TEXPANDS", "T", "S", "fill", pipe=_route_texpands)
# --- compare / select / convert --------------------------------------------------------
_op("TCMP", "T", "T T", "compare", domain="src", attrs_allowed=("cmpMode",))
_op("TCMPS", "T", "T S | T T", "compare", domain="src", attrs_allowed=("cmpMode",))
_op("TSEL", "T", "T T T T?", "select")
_op("TCVT", "T", "T T?", "convert", attrs_allowed=("rmode", "sat"))
# --- reductions and broadcasts ---------------------------------------------------------
for _n in ("TROWSUM", "TROWMAX", "TROWMIN"):
    _op(_n, "T", "T T?", "rowreduce", domain="src")
for _n in ("TCOLSUM", "TCOLMAX", "TCOLMIN"):
    _op(_n, "T", "T T?", "colreduce", domain="src", attrs_allowed=("isBinary",))
_op("TROWEXPAND", "T", "T", "rowexpand")
_op("TCOLEXPAND", "T", "T", "colexpand")
for _n in ("ADD", "SUB", "MUL", "DIV", "MAX", "MIN"):
    _op(f"TROWEXPAND{_n}", "T", "T T T?", "rowexpand_binary")
    _op(f"TCOLEXPAND{_n}", "T", "T T", "colexpand_binary")
# --- data movement ---------------------------------------------------------------------
_op("TLOAD", "T", "V", "load", pipe="PIPE_MTE2")
_op("TSTORE", "V", "T", "store", pipe=_route_tstore, domain="src", attrs_allowed=("atomicType",))
_op("TMOV", "T", "T", "move", pipe=_route_tmov)
_op("TEXTRACT", "T", "T S S", "move", pipe=_route_tmov)
_op("TTRANS", "T", "T T?", "transpose", domain="src")
# --- cube ------------------------------------------------------------------------------
_op("TMATMUL", "T", "T T", "matmul", pipe="PIPE_M")
_op("TMATMUL_ACC", "T", "T T T | T T", "matmul", pipe="PIPE_M")
_op("TMATMUL_BIAS", "T", "T T T", "matmul", pipe="PIPE_M")
_op("TGEMV", "T", "T T", "matmul", pipe="PIPE_M")
# --- scalar-pipe configuration ---------------------------------------------------------
_op("TASSIGN", "T", "S", "config", pipe="PIPE_S")
# --- index, gather, pad (§6.1: TCI on PIPE_S; gather in UB and TFILLPAD on Vec on
# PIPE_V, TFILLPAD on Mat on PIPE_MTE2). The reference gives almost no semantics for
# these three; the ASSUMPTIONs are stated in sim/functional/gather.py and
# sim/timing/vgather.py. TGATHER ins = table, indices [, tmp]: the table is read whole
# (its own valid region), the indices over dst's valid region. TFILLPAD iterates over
# the destination's capacity; its cost follows the source's geometry (domain "src").
_op("TCI", "T", "S", "index", pipe="PIPE_S")
_op("TGATHER", "T", "T T T?", "gather")
_op("TFILLPAD", "T", "T", "fillpad", pipe=_route_texpands, domain="src")


# --- ops real compilers emit beyond the reference's ≈60 (pto-ir-in-the-wild.md §3) ------
# instructions.md is silent on most of these; the semantics follow the pto-isa names and
# every ASSUMPTION is stated in the functional unit (sim/functional/sort.py, combine.py,
# reduce_ext.py, gather.py) and the lowering (sim/timing/vsort.py, vcombine.py,
# vreduce_ext.py) that implement them.
_op("TCONCAT", "T", "T T", "concat")  # dst = [src0 | src1] (columns)
for _n in ("TPARTADD", "TPARTMAX", "TPARTMIN", "TPARTMUL"):
    _op(_n, "T", "T T", "part")  # op where both are valid
for _n in ("TROWARGMAX", "TROWARGMIN", "TROWPROD"):
    _op(_n, "T", "T T?", "rowreduce", domain="src")
for _n in ("TCOLARGMAX", "TCOLARGMIN", "TCOLPROD"):
    _op(_n, "T", "T T?", "colreduce", domain="src")
_op("TROWEXPANDEXPDIF", "T", "T T T?", "rowexpand_binary")  # exp(src0 - row bcast src1)
_op("TCOLEXPANDEXPDIF", "T", "T T", "colexpand_binary")  # exp(src0 - col bcast src1)
_op("TSELS", "T", "T T S | T T T S", "select")  # mask ? src : scalar
_op("TXORS", "T", "T S T?", "scalar")
_op("TSORT32", "T", "T T T?", "sort", domain="src")  # 32-element blocks, with indices
_op(
    "TMRGSORT",
    "T T?",
    "T S | T T | T T T | T T T T",
    "sort",
    domain="src",
    attrs_allowed=("exhausted",),
)
# TINSERT: src into dst at (row, col); Acc -> Mat on FIXPIPE (programming model §6.1),
# Vec -> Vec on PIPE_V
_op("TINSERT", "T", "T S S", "move", pipe=_route_tmov, domain="src")
# MGATHER: dst[i, j] = GM[indices[i, j]]. The event table puts MGATHER into Mat on MTE2;
# ASSUMPTION: a Vec destination reads GM on MTE2 too (GM is only reached by the MTEs).
_op("MGATHER", "T", "V T", "mgather", pipe="PIPE_MTE2")


# --- ops of instructions-more.md (semantics, operands, pipes and A2/A3 decompositions) ---
# TAXPY: dst = a * src + dst (dst read and written), vaxpy along the tile-scalar plan
_op("TAXPY", "T", "T S", "scalar")
# TSCATTER (index form): zero dst's whole allocation, then dst_flat[idx[i, j]] = src[i, j]
# over idx's valid region (sim/functional/scatter.py); domain = the source's
_op("TSCATTER", "T", "T T", "scatter", domain="src")
# TCONCATIDX: per row n0 columns of src0 then n1 of src1, the counts read from idx0 / idx1
_op("TCONCATIDX", "T", "T T T T", "concatidx")
# TQUANT (INT8): dst = sat(rint(src * fp[row] (+ offset[row]))); outs dst [, tmp]
_op("TQUANT", "T T?", "T T | T T T", "quant", attrs_allowed=("quant_type",))


def opcode(name: str) -> OpSpec:
    """The registry entry of ``name`` (``TADD``, ``tadd`` or ``pto.tadd``)."""
    key = name.upper()
    if key.startswith("PTO."):
        key = key[4:].replace(".", "_")
    try:
        return OPCODES[key]
    except KeyError:
        raise UserError(f"unknown opcode {name!r}") from None
