"""Lowering dispatch: vector ops, data movement, cube and scalar-pipe instructions."""

from __future__ import annotations

import functools
import math
from typing import TYPE_CHECKING

import attrs

from sim.isa.dtypes import dtype as _dtype
from sim.timing.banks import HINT as _BANK_HINT
from sim.timing.banks import ub_banks
from sim.timing.dma import transfer_items
from sim.timing.dma_geometry import Geometry, copies
from sim.timing.fits import decision, mark_restarts
from sim.timing.formula import formula_cycles, high_precision_cycles
from sim.timing.hints import hint
from sim.timing.plan import Item, Plan, Shape, evaluate
from sim.timing.vector import lower_vector
from sim.timing.vf import vf_cycles

if TYPE_CHECKING:
    from sim.target.model import Target


__all__ = ["lower"]


def _dma_items(s: Shape, target) -> list[Item]:
    """TLOAD / TSTORE / TMOV / TEXTRACT: each CCE copy's bytes for the layouts
    (``sim.timing.dma_geometry``, §5.2) over one data path, start-up included
    (``sim.timing.dma``, §5.1)."""
    g = s.extra if isinstance(s.extra, Geometry) else Geometry()
    n, moved = copies(s.path, s.valid_rows, s.valid_cols, _dtype(s.dtype).size_bytes, g)
    # FIXPIPE paths charge per element whatever the dtype (§5.2): cycles from the charge,
    # the bytes moved kept for the trace and GM bandwidth sharing
    per_element = target.dma(s.path).charged_bytes_per_element
    charged = s.valid_rows * s.valid_cols * per_element if per_element else moved
    return transfer_items(target, s.path, charged, moved) * n


def _cube_items(s: Shape, target) -> list[Item]:
    """One ``mad`` of m x k x n (timing-model.md §6)."""
    assert isinstance(s.extra, tuple)  # a matmul's (m, k, n, A's dtype), not a Geometry
    m, k, n, a_dtype = s.extra
    a = _dtype(a_dtype)
    k0 = 32 // a.size_bytes
    reps = math.ceil(m / 16) * math.ceil(k / k0) * math.ceil(n / 16)
    cube = target.cube
    slope = (
        cube["slope_cycles_per_repeat_f32"]
        if a.name == "f32"
        else cube["slope_cycles_per_repeat_other"]
    )
    return [Item("cube", "mad", repeats=reps, cycles=slope * reps + cube["head_cycles"])]


def _resolve(items, s: Shape, target) -> list[Item]:
    """Fixed cycles of the non-vector items from the target, and dtype-specific cost rows.

    * cfg / bar / flag: ``[vector] config_cycles`` / ``barrier_cycles`` / ``flag_cycles``
      per write (§2.6, §7);
    * copy (``copy_ubuf_to_ubuf``): ``floor(bytes / UB->UB bytes per cycle)`` (§5.1), at
      least ``[vector] ub_copy_min_cycles`` — ASSUMPTION: the reference truncates copies
      under 595 bytes to 0 cycles (§12 caveat 3), but an issued instruction takes a cycle;
    * sloop: ``elements * [scalar_loops] <name>_cycles_per_element`` (ASSUMPTION figures;
      a target without the table leaves the loop untimed, as the reference does);
    * v: the cost row ``<instr>.<dtype>`` when the table has one (``vdiv.f16``), else
      ``<instr>.int`` for an integer element type (``vadd.int``), else ``<instr>``; the
      element type is the item's own (``Item.dtype``) when it has one, else the op's.
    """
    vec = target.vector
    scale = {
        "cfg": vec.get("config_cycles", 1),
        "bar": vec.get("barrier_cycles", 1),
        "flag": vec.get("flag_cycles", 1),
    }
    out = []
    for it in items:
        k = it.kind
        if k in scale:
            it = attrs.evolve(it, cycles=it.cycles * scale[k])
        elif k == "copy":
            bw = target.dma("UB_UB").bytes_per_cycle
            it = attrs.evolve(
                it, cycles=max(vec.get("ub_copy_min_cycles", 1), math.floor(it.bytes / bw))
            )
        elif k == "sloop":
            per = target.scalar_loops.get(f"{it.name}_cycles_per_element", 0)
            it = attrs.evolve(it, cycles=it.repeats * per)
        elif k == "v":
            it = _cost_row(it, it.dtype or s.dtype, target.vector_costs)
        out.append(it)
    return out


def _cost_row(it: Item, dtype: str, costs) -> Item:
    """``it`` renamed to its dtype-specific cost row: ``<instr>.<dtype>`` (``vdiv.f16``),
    else ``<instr>.int`` for an integer element type (the integer ALU rows), else as is."""
    for key in (f"{it.name}.{dtype}", f"{it.name}.int" if _dtype(dtype).is_int else ""):
        if key in costs:
            return attrs.evolve(it, name=key)
    return it


def _bank_items(items, target) -> list[Item]:
    """UB bank conflict of a binary op's two sources (ASSUMPTION, ``sim.timing.banks``):
    ``bank_conflict_cycles_per_repeat`` for every repeat of the op's vector instructions."""
    banks = ub_banks(target)
    reps = sum(i.repeats for i in items if i.kind == "v")
    if banks is None or not reps or banks.conflict_cycles_per_repeat <= 0:
        return []
    return [
        Item(
            "bank", "ub_bank_conflict", repeats=reps, cycles=reps * banks.conflict_cycles_per_repeat
        )
    ]


def _ieee_division(s: Shape, target) -> list[Item]:
    """The high-precision division routine of an A5 vector function (``formula``)."""
    extra = high_precision_cycles(s, target)
    return [Item("vf", "IEEE division (high precision)", cycles=extra)] if extra else []


@functools.lru_cache(maxsize=65536)
def _lower(s: Shape, pipe: str, target) -> Plan:
    if pipe == "PIPE_S" and s.opcode == "TASSIGN":
        cycles = target.scalar.get("tassign_cycles", 1)
        items = [Item("scalar", s.opcode, cycles=cycles)]
    elif s.path:
        items = _dma_items(s, target)
    elif pipe == "PIPE_M":
        items = _cube_items(s, target)
    elif pipe == "PIPE_MTE2" and s.opcode == "TEXPANDS" and "L1_FILL" in target.dma_paths:
        # Mat tile: create_cbuf_matrix over the whole tile on the L1-fill path (§5.2)
        items = transfer_items(target, "L1_FILL", s.rows * s.cols * _dtype(s.dtype).size_bytes)
    elif pipe == "PIPE_V" and (s.valid_rows == 0 or s.valid_cols == 0):
        items = []  # an empty valid region: nothing to compute
    elif pipe == "PIPE_V" and (vf := formula_cycles(s, target)) is not None:
        # a target whose vector ops are fitted per op (A5): one vector function
        items = [Item("vf", f"{s.opcode} VF fit", cycles=vf)] + _ieee_division(s, target)
    elif pipe == "PIPE_V" and (vf := vf_cycles(s, target)) is not None:
        # no fit: the analytic model of the op's vector-function loop (A5)
        items = [Item("vf", f"{s.opcode} VF model", cycles=vf)] + _ieee_division(s, target)
    else:
        items = _resolve(
            lower_vector(
                s,
                _dtype(s.dtype),
                _dtype(s.src_dtype or s.dtype),
                target.vector.get("max_repeats", 255),
            ),
            s,
            target,
        )
        if hint(s, _BANK_HINT):
            items += _bank_items(items, target)
        if (d := decision(target, s.opcode)) is not None:
            items = mark_restarts(items, d.rule)
    vec = target.vector
    cold, warm, restart, closed = evaluate(
        items,
        target.cce,
        vec.get("count_mode_floor_cycles", 0),
        vec.get("barrier_restart", "latency"),
    )
    return Plan(
        tuple(items),
        _cycles(cold),
        _cycles(warm),
        closed,
        sum(i.repeats for i in items if i.kind in ("v", "cube")),
        sum(i.bytes for i in items),
        "; ".join(i.describe() for i in items),
        _cycles(restart),
    )


def _cycles(x: float) -> int:
    return int(math.floor(x + 0.5))


def lower(shape: Shape, pipe: str, target: Target) -> Plan:
    """The plan of one instruction with operand geometry ``shape`` issued on ``pipe``."""
    return _lower(shape, pipe, target)
