"""Plans: the CCE items one PTO instruction lowers to, and what they cost.

Vector items follow timing-model.md §2.2: an instruction costs ``slope * repeats``, plus
``head + tail`` when it is the first of a vector stream, plus the count-mode floor when
it is an "F-op" issued with a partial mask. ``cfg`` items (mask and mode writes) and
intra-op barriers and flags cost one cycle each; a barrier (or a wait whose source is
the vector pipe) inside an op ends the stream, so the next vector item pays its latency
again. ``copy`` items (``copy_ubuf_to_ubuf``, UB->UB bandwidth, §5.1) and ``sloop``
items (a loop on the scalar unit, ``[scalar_loops]`` of the target) carry fixed cycles
resolved by ``lower``; neither opens nor closes the vector stream.
"""

from __future__ import annotations

import attrs

__all__ = ["Item", "Plan", "Shape", "evaluate", "linear_terms", "timeline"]


@attrs.frozen
class Shape:
    """Everything about an instruction's operands that its cost depends on."""

    opcode: str
    dtype: str                 # element type of dst (TSTORE: of the source tile)
    rows: int                  # capacity of the tile that sets the path (dst, or src for
    cols: int                  #   source-domain ops)
    static_valid_cols: "int | None"   # declared valid cols of that tile (None = dynamic)
    valid_rows: int            # run-time iteration domain
    valid_cols: int
    src_dtype: str = ""        # TCVT source type
    variant: str = ""          # "", "inplace", "scalar_tile", "tile_scalar", "binary", "tmp"
    path: str = ""             # DMA path (GM_UB ...) for data movement
    extra: tuple = ()          # family-specific (matmul m, k, n ...)


@attrs.frozen
class Item:
    """One CCE-level step.

    kind: "v" (vector instruction: ``repeats``, ``masked``), "cfg", "bar", "flag",
    "copy" (copy_ubuf_to_ubuf of ``bytes``), "sloop" (scalar loop over ``repeats``
    elements, ``name`` = its [scalar_loops] key), "dma", "cube", "scalar".
    """

    kind: str
    name: str = ""
    repeats: int = 0
    masked: bool = False       # mask not full (count mode or partial lanes): F-ops pay the floor
    cycles: float = 0.0        # fixed cycles for cfg / bar / flag / dma / cube items
    bytes: int = 0
    breaks_stream: bool = False

    def describe(self) -> str:
        if self.kind == "v":
            return f"{self.name}(rep={self.repeats}{', masked' if self.masked else ''})"
        if self.kind in ("dma", "copy"):
            return f"{self.name}({self.bytes} B)"
        if self.kind == "sloop":
            return f"scalar_loop[{self.name}](n={self.repeats})"
        if self.kind == "cube":
            return f"{self.name}(rep={self.repeats})"
        if self.kind == "cfg":
            return f"cfg x{int(self.cycles)}"
        return self.name or self.kind


@attrs.frozen
class Plan:
    items: tuple
    cold_cycles: int           # cost when the instruction opens a vector stream
    warm_cycles: int           # cost when it streams behind the previous vector instruction
    breaks_stream: bool        # the stream is closed after this instruction
    repeats: int
    bytes: int
    detail: str = ""           # the items as text, for the trace's cce column


def evaluate(items, costs, floor_cycles: float) -> tuple[float, float, bool]:
    """(cold, warm, stream_closed_at_end) of a list of items; ``costs[name]`` is a CceCost."""
    def run(warm: bool):
        total = 0.0
        for it in items:
            if it.kind == "v":
                c = costs(it.name)
                total += c.slope_cycles_per_repeat * it.repeats
                if it.masked and c.floor:
                    total += floor_cycles
                if not warm:
                    total += c.head_cycles + c.tail_cycles
                warm = True
            else:
                total += it.cycles
                if it.breaks_stream:
                    warm = False
        return total, warm
    cold, _ = run(False)
    warm, open_at_end = run(True)
    return cold, warm, not open_at_end


def linear_terms(items, costs, floor_cycles: float) -> tuple[float, dict]:
    """The cold cost of ``items`` as ``const + sum(coef * parameter)``.

    Parameters are ``("latency", name)`` (head + tail of CCE instruction ``name``, paid each
    time it opens a stream) and ``("slope", name)`` (cycles per repeat). Used to fit the
    cost table to measurements by least squares; ``evaluate`` gives the same number.
    """
    const, coef = 0.0, {}
    warm = False
    for it in items:
        if it.kind == "v":
            c = costs(it.name)
            coef[("slope", it.name)] = coef.get(("slope", it.name), 0.0) + it.repeats
            if it.masked and c.floor:
                const += floor_cycles
            if not warm:
                coef[("latency", it.name)] = coef.get(("latency", it.name), 0.0) + 1
            warm = True
        else:
            const += it.cycles
            if it.breaks_stream:
                warm = False
    return const, coef


def timeline(items, costs, floor_cycles: float, warm: bool) -> list[tuple]:
    """``(item, cycles)`` for each item of a plan that starts warm or cold; sums to its cost."""
    out = []
    for it in items:
        if it.kind == "v":
            c = costs(it.name)
            t = c.slope_cycles_per_repeat * it.repeats
            if it.masked and c.floor:
                t += floor_cycles
            if not warm:
                t += c.head_cycles + c.tail_cycles
            warm = True
        else:
            t = it.cycles
            if it.breaks_stream:
                warm = False
        out.append((it, t))
    return out
