"""Instruction facts beyond the domain geometry that the vector lowering reads.

A ``Shape`` carries the geometry of the tile that sets the path. A few lowerings also
depend on something else about the instruction:

* TCMP / TCMPS compare mode (``cmp``): GE and NE cost differently (timing-model.md §2.4,
  §4); NE adds a ``vnot``;
* TCOLSUM's binary form (``Shape.variant == "binary"``): pairwise tree (§4);
* TRSQRT with a tmp tile (``Shape.variant == "tmp"``): the 3-argument sequence (§4);
* the layout of a row reduction's destination (``dst_layout`` = ``"DN"``): the four
  special f32 shapes (§4);
* TCVT saturation (``sat``): the non-saturating narrowing pairs take extra steps (§3.3);
* the precision mode the target runs the op in (``precision`` = ``"high_precision"``,
  absent for the default): A5 costs the IEEE division routine (``sim.timing.formula``);
  A2/A3 ignores the mode, so the hint never reaches its lowering;
* a UB bank conflict between a binary op's two sources (``ub_bank_conflict``): set by the
  interpreter from the tiles' addresses, costed by ``sim.timing.lower`` (ASSUMPTION,
  ``sim.timing.banks``).

They travel in ``Shape.extra`` as ``(key, value)`` pairs (``Shape.variant`` for the two
form switches). ``shape_hints`` computes both from an instruction; the interpreter's
``_shape`` calls it for PIPE_V ops. Lowerings read them with ``hint`` and fall back to
the common case when a hint is absent.
"""

from __future__ import annotations

__all__ = ["hint", "shape_hints"]


def hint(s, key: str, default=None):
    """Value of hint ``key`` in ``s.extra`` (a tuple of ``(key, value)`` pairs)."""
    for kv in s.extra or ():
        if isinstance(kv, tuple) and len(kv) == 2 and kv[0] == key:
            return kv[1]
    return default


def shape_hints(
    opcode: str,
    family: str,
    attrs,
    *,
    dst_col_major: bool = False,
    has_tmp: bool = False,
    precision: str = "default",
) -> tuple[str, tuple]:
    """``(variant, extra)`` of a vector instruction. ``variant`` is "" when no form switch
    applies (the caller keeps its own "inplace" / "scalar_tile" then). ``attrs`` are the
    instruction's IR attributes, ``dst_col_major`` whether the destination is DN,
    ``has_tmp`` whether a tmp tile was passed, ``precision`` the mode the target runs the
    op in (``sim.isa.precision.effective``)."""
    attrs = dict(attrs or {})
    variant, extra = "", []
    if family == "colreduce" and attrs.get("isBinary") in (True, "true", "True", 1, "1"):
        variant = "binary"
    if opcode == "TRSQRT" and has_tmp:
        variant = "tmp"
    if family == "compare" and "cmpMode" in attrs:
        extra.append(("cmp", str(attrs["cmpMode"]).lower()))
    if opcode == "TCVT" and "sat" in attrs:
        extra.append(("sat", str(attrs["sat"]).lower()))
    if family == "rowreduce" and dst_col_major:
        extra.append(("dst_layout", "DN"))
    if precision == "high_precision":
        extra.append(("precision", precision))
    if opcode == "TQUANT" and "quant_type" in attrs:  # ASYM adds a vbrcb + vadd step
        extra.append(("quant_type", str(attrs["quant_type"])))
    return variant, tuple(extra)
