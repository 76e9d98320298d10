"""One tile instruction in isolation: operands resident in UB, every pipe idle.

This is what a single-instruction hardware measurement sees, and what ``ptosim op`` and
``ptosim validate`` predict: the instruction opens a fresh vector stream, so it pays its
full start-up latency.

A case whose tiles do not fit in the buffer as separate tiles (three f32 tiles of
~100 KiB in a 192 KiB or 256 KiB UB) is one a hardware test can only run with the
destination aliasing the first source: ``run_case`` then places it in place (variant
``inplace``, dst = src0) when the op's destination has src0's type and shape, and says so
(``OpRun.in_place_reason``). The in-place form is the op's own: float TDIVS in place is
one ``vmuls`` by 1/s (timing-model.md §4), not a ``vector_dup`` and a ``vdiv``.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import attrs

from sim.base.errors import PlacementError, UserError
from sim.isa.dtypes import dtype as _dtype
from sim.isa.opcodes import opcode as _opcode
from sim.isa.precision import HIGH, KINDS, Precision, kind_for
from sim.kernel.builder import Kernel

if TYPE_CHECKING:
    from pathlib import Path

    from sim.engine.result import Result
    from sim.target.model import Target


__all__ = [
    "simulate_op",
    "simulate_case",
    "run_case",
    "OpRun",
    "OpCase",
    "parse_shape",
    "parse_dtype_pair",
    "isolated_opcodes",
]

VARIANTS = ("", "tile_scalar", "scalar_tile", "inplace", "binary", "high_precision")

# Families whose cost is not one instruction on operands resident in UB: data movement
# between GM and the buffers (its cost is the transfer, see a kernel's trace), the cube's
# L0A/L0B/L0C operands, tile moves between buffers, and TASSIGN (an address, no work).
_NOT_ISOLATED = {
    "load": "moves data between GM and a buffer",
    "store": "moves data between a buffer and GM",
    "move": "moves a tile between buffers",
    "matmul": "runs on the cube with L0A/L0B/L0C operands",
    "config": "binds a tile to an address and does no work",
}


# Element-wise families, whose destination has src0's shape: the ones with an in-place form.
_ALIASING = {
    "binary",
    "binary3",
    "unary",
    "scalar",
    "remainder",
    "rowexpand_binary",
    "colexpand_binary",
    "part",
}


def isolated_opcodes() -> list[str]:
    """The opcodes ``simulate_op`` (``ptosim op``, ``validate``) can cost in isolation."""
    from sim.isa.opcodes import OPCODES

    return [n for n, s in OPCODES.items() if s.family not in _NOT_ISOLATED]


def parse_shape(text) -> tuple[int, int]:
    """``"16x64"`` -> (16, 64)."""
    if isinstance(text, (tuple, list)):
        r, c = text
        return int(r), int(c)
    try:
        r, c = str(text).lower().split("x")
        r, c = int(r), int(c)
    except ValueError:
        raise UserError(f"shape: expected ROWSxCOLS such as 16x64, found {text!r}") from None
    if r <= 0 or c <= 0:
        raise UserError(f"shape: rows and cols must be positive, found {text!r}")
    return r, c


def parse_dtype_pair(text) -> tuple[str, str]:
    """``"f32"`` -> (f32, f32); TCVT's ``"f32>f16"`` -> (f32, f16) as (src, dst)."""
    text = str(text)
    if ">" in text:
        a, b = text.split(">", 1)
        return _dtype(a.strip()).name, _dtype(b.strip()).name
    d = _dtype(text.strip()).name
    return d, d


@attrs.frozen
class OpCase:
    op: str
    dtype: str
    shape: tuple
    valid: tuple
    variant: str = ""
    scalar: float = 2.0

    def may_alias(self) -> bool:
        """Whether dst can be the tile of src0 (variant ``inplace``): the destination has the
        first source's element type and shape — not a reduction, compare, fill-pad, index
        or mask-select destination, nor a type conversion."""
        spec = _opcode(self.op)
        src_dt, dst_dt = parse_dtype_pair(self.dtype)
        return src_dt == dst_dt and spec.family in _ALIASING and not self.variant

    def kernel(self) -> Kernel:
        spec = _opcode(self.op)
        if spec.family in _NOT_ISOLATED:
            raise UserError(
                f"{spec.name}: cannot be costed in isolation: it "
                f"{_NOT_ISOLATED[spec.family]}; simulate it inside a kernel "
                f"(ptosim run). In isolation: {', '.join(isolated_opcodes())}"
            )
        src_dt, dst_dt = parse_dtype_pair(self.dtype)
        rows, cols = self.shape
        vr, vc = self.valid
        if not (0 < vr <= rows and 0 < vc <= cols):
            raise UserError(
                f"{self.op}: valid region {vr}x{vc} must lie within the {rows}x{cols} tile"
            )
        if self.variant not in VARIANTS:
            raise UserError(
                f"{self.op}: variant must be one of {', '.join(v or '(empty)' for v in VARIANTS)}, "
                f"found {self.variant!r}"
            )
        k = Kernel(f"{spec.name.lower()}_{rows}x{cols}")
        fam = spec.family

        def tile(dt, r=rows, c=cols, valid=(vr, vc), **kw):
            return k.tile("vec", dt, r, c, valid=valid, **kw)

        if fam == "index":  # TCI: no source tile, an integer start
            k.instr(spec.name, tile(dst_dt, name="dst"), int(self.scalar))
            return k
        src = self._shaped_operand(fam, 0, src_dt, tile) or tile(src_dt, name="src0")
        if fam == "fillpad" and self.variant != "inplace":
            # the padded destination: same capacity, fully valid
            dst = tile(dst_dt, valid=(rows, cols), name="dst")
        elif fam == "rowreduce":
            width = 32 // _dtype(dst_dt).size_bytes
            dst = tile(dst_dt, rows, width, (vr, 1), name="dst")
        elif fam == "colreduce":
            dst = tile(dst_dt, 1, cols, (1, vc), name="dst")
        elif fam == "compare":
            width = max(32, math.ceil(math.ceil(cols / 8) / 32) * 32)
            dst = tile("u8", rows, width, (vr, math.ceil(vc / 8)), name="dst")
        elif self.variant == "inplace":
            dst = src
        else:
            dst = tile(dst_dt, name="dst")
        ins = self._ins(k, spec, src, src_dt, tile)
        k.instr(spec.name, dst, *ins, **self._attrs(spec))
        if self.variant:
            self._check_variant(spec, k)
        return k

    def _check_variant(self, spec, k: Kernel) -> None:
        """A variant must change the instruction: one that means nothing for the op (a
        tile/scalar form of an op without a scalar, a tmp the op does not take, in place
        where dst is not src0's shape) would predict the plain op under another name."""
        if self.variant == "tile_scalar":
            if not any(sig.split()[:1] == ["T"] and "S" in sig.split() for sig in spec.ins):
                raise UserError(
                    f"{spec.name}: variant tile_scalar: the op has no tile/scalar form "
                    f"(no scalar operand)"
                )
            return
        if k.program() == attrs.evolve(self, variant="").kernel().program():
            why = {
                "binary": "it takes no tmp tile or isBinary form",
                "inplace": "its destination is not a tile of src0's type and shape",
            }.get(self.variant, "the instruction is the plain op's")
            raise UserError(
                f"{spec.name}: variant {self.variant}: means nothing for the op ({why})"
            )

    def _ins(self, k, spec, src, src_dt, tile):
        sigs = spec.ins
        scalar_first = self.variant == "scalar_tile"
        sig = next((s for s in sigs if s.split()[0] == ("S" if scalar_first else "T")), sigs[0])
        if scalar_first and not sig.startswith("S"):
            raise UserError(f"{spec.name} has no scalar/tile form")
        ins, n_tiles = [], 0
        for tok in sig.split():
            if tok == "S":
                ins.append(self.scalar)
            elif tok == "T":
                if n_tiles == 0:
                    ins.append(src)
                else:
                    ins.append(
                        self._shaped_operand(spec.family, n_tiles, src_dt, tile)
                        or tile(src_dt, name=f"src{n_tiles}")
                    )
                n_tiles += 1
            elif tok == "T?" and (
                spec.family in ("remainder", "rowreduce")
                or spec.name == "TXOR"
                or self.variant == "binary"
            ):
                r, c = self.shape
                ins.append(
                    tile(
                        src_dt,
                        max(2, r),
                        c + 64 // _dtype(src_dt).size_bytes,
                        (max(2, self.valid[0]), self.valid[1]),
                        name="tmp",
                    )
                )
        return ins

    def _shaped_operand(self, family, index, src_dt, tile):
        """Operands whose shape is not the domain's (instructions.md §3.3, §3.5): TSEL's
        packed u8 mask, the R x 1 column of TROWEXPAND(<op>) (a row-major column tile is
        one 32-byte block wide), the 1 x C row of TCOLEXPAND(<op>) and TGATHER's i32
        index tile (dst's valid shape)."""
        rows, cols = self.shape
        vr, vc = self.valid
        name = f"src{index}"
        if family == "select" and index == 0:
            width = max(32, math.ceil(math.ceil(cols / 8) / 32) * 32)
            return tile("u8", rows, width, (vr, math.ceil(vc / 8)), name="mask")
        if (family, index) in (("rowexpand", 0), ("rowexpand_binary", 1)):
            return tile(src_dt, rows, 32 // _dtype(src_dt).size_bytes, (vr, 1), name=name)
        if (family, index) in (("colexpand", 0), ("colexpand_binary", 1)):
            return tile(src_dt, 1, cols, (1, vc), name=name)
        if (family, index) == ("gather", 1):
            return tile("i32", rows, cols, (vr, vc), name="indices")
        return None

    def _attrs(self, spec):
        if self.variant == "high_precision":
            # the op's precision attribute, as PTO IR writes it (sim.isa.precision)
            kind = kind_for(spec.name)
            if kind is None:
                raise UserError(
                    f"{spec.name}: variant high_precision: the op has no precision "
                    f"mode (ops with one: {', '.join(KINDS['precision_mode'])})"
                )
            return {"precisionType": Precision(kind, HIGH)}
        if spec.name == "TCVT":
            return {"rmode": "RINT"}
        if spec.family == "compare":
            return {"cmpMode": "lt"}
        if spec.family == "colreduce" and self.variant == "binary":
            return {"isBinary": True}
        return {}


@attrs.frozen
class OpRun:
    """What ``run_case`` returns: ``run``'s value, the case actually run, and why it was
    placed in place ("" when it ran as given)."""

    value: Any  # what ``run`` returned
    case: OpCase
    in_place_reason: str = ""


def run_case(case: OpCase, run) -> OpRun:
    """``run(case)``; when the case's separate tiles do not fit in a buffer and its
    destination may alias src0, ``run`` of the in-place case instead (as a hardware test
    of that size runs it). Any other error, or an in-place run that does not fit either,
    raises the original error."""
    try:
        return OpRun(run(case), case)
    except PlacementError as e:
        if not case.may_alias():
            raise
        first = e
    alias = attrs.evolve(case, variant="inplace")
    try:
        value = run(alias)
    except PlacementError:
        raise PlacementError(f"{first}; in place (dst = src0) it does not fit either") from None
    return OpRun(value, alias, f"in place (dst = src0): the separate tiles do not fit: {first}")


def simulate_op(
    op: str,
    dtype: str = "f32",
    shape: tuple[int, int] = (16, 64),
    valid: tuple[int, int] | None = None,
    *,
    variant: str = "",
    scalar: float = 2.0,
    target: str | Path | Target = "a2a3",
    functional: bool = False,
) -> Result:
    """Simulate one instruction in isolation; ``.total_cycles`` is its cost. A case whose
    separate tiles do not fit runs in place (``run_case``)."""
    return simulate_case(
        op,
        dtype,
        shape,
        valid,
        variant=variant,
        scalar=scalar,
        target=target,
        functional=functional,
    ).value


def simulate_case(
    op: str,
    dtype="f32",
    shape=(16, 64),
    valid=None,
    *,
    variant: str = "",
    scalar: float = 2.0,
    target="a2a3",
    functional: bool = False,
) -> OpRun:
    """``simulate_op`` with the case actually run and the in-place reason (``OpRun``)."""
    shape = parse_shape(shape)
    valid = parse_shape(valid) if valid is not None else shape
    case = OpCase(op, dtype, shape, valid, variant, scalar)
    from sim.engine.run import simulate  # the engine only when a case runs

    return run_case(case, lambda c: simulate(c.kernel(), target, functional=functional))
