"""Lowering dispatch: vector ops, data movement, cube and scalar-pipe instructions."""

from __future__ import annotations

import functools
import math

from sim.isa.dtypes import dtype as _dtype
from sim.timing.plan import Item, Plan, Shape, evaluate
from sim.timing.vector import lower_vector

__all__ = ["lower"]


def _dma_items(s: Shape, target) -> list[Item]:
    """TLOAD / TSTORE / TMOV bytes over one data path (timing-model.md §5)."""
    nbytes = s.valid_rows * s.valid_cols * _dtype(s.dtype).size_bytes
    p = target.dma(s.path)
    if target.dma_model == "fitted" and p.fitted_peak_bytes_per_cycle:
        cycles = (p.fitted_k_bytes + nbytes) / p.fitted_peak_bytes_per_cycle
    else:
        cycles = math.floor(nbytes / p.bytes_per_cycle)
    return [Item("dma", s.path, cycles=cycles, bytes=nbytes)]


def _cube_items(s: Shape, target) -> list[Item]:
    """One ``mad`` of m x k x n (timing-model.md §6)."""
    m, k, n, a_dtype = s.extra
    a = _dtype(a_dtype)
    k0 = 32 // a.size_bytes
    reps = math.ceil(m / 16) * math.ceil(k / k0) * math.ceil(n / 16)
    cube = target.cube
    slope = cube["slope_cycles_per_repeat_f32"] if a.name == "f32" else cube["slope_cycles_per_repeat_other"]
    return [Item("cube", "mad", repeats=reps, cycles=slope * reps + cube["head_cycles"])]


@functools.lru_cache(maxsize=65536)
def _lower(s: Shape, pipe: str, target) -> Plan:
    if pipe == "PIPE_S":
        cycles = target.scalar.get("tassign_cycles", 1)
        items = [Item("scalar", s.opcode, cycles=cycles)]
    elif s.path:
        items = _dma_items(s, target)
    elif pipe == "PIPE_M":
        items = _cube_items(s, target)
    else:
        items = lower_vector(s, _dtype(s.dtype), _dtype(s.src_dtype or s.dtype),
                             target.vector.get("max_repeats", 255))
    vec = target.vector
    cfg_scale = vec.get("config_cycles", 1)
    items = [Item(i.kind, i.name, i.repeats, i.masked, i.cycles * cfg_scale, i.bytes, i.breaks_stream)
             if i.kind == "cfg" else i for i in items]
    cold, warm, closed = evaluate(items, target.cce, vec.get("count_mode_floor_cycles", 0))
    return Plan(tuple(items), int(math.floor(cold + 0.5)), int(math.floor(warm + 0.5)), closed,
                sum(i.repeats for i in items if i.kind in ("v", "cube")),
                sum(i.bytes for i in items), "; ".join(i.describe() for i in items))


def lower(shape: Shape, pipe: str, target) -> Plan:
    """The plan of one instruction with operand geometry ``shape`` issued on ``pipe``."""
    return _lower(shape, pipe, target)
