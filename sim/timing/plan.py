"""Plans: the CCE items one PTO instruction lowers to, and what they cost.

Vector items follow timing-model.md §2.2: an instruction costs ``slope * repeats``, plus
``head + tail`` when it is the first of a vector stream, plus the count-mode floor when
it is an "F-op" issued with a partial mask. ``cfg`` items (mask and mode writes) and
intra-op barriers and flags cost one cycle each. A barrier (or a wait whose source is the
vector pipe) inside an op drains the pipe: if vector work was in flight, the next vector
item *restarts* the stream and pays what the target's ``barrier_restart`` rule says (its
full latency under "latency", max(tail, floor) under "tail"); on an idle pipe it stays a
cold start. ``copy`` items (``copy_ubuf_to_ubuf``: UB->UB bandwidth, §5.1, plus the
start-up latency of its cost row when it opens or restarts the stream) are vector-pipe
work that a barrier must drain; ``sloop`` items (a loop on the scalar unit,
``[scalar_loops]`` of the target) carry fixed cycles resolved by ``lower``.
"""

from __future__ import annotations

import attrs

from sim.timing.dma_geometry import Geometry

__all__ = ["Item", "Plan", "Shape", "evaluate", "linear_terms", "timeline"]


@attrs.frozen
class Shape:
    """Everything about an instruction's operands that its cost depends on."""

    opcode: str
    dtype: str  # element type of dst (TSTORE: of the source tile)
    rows: int  # capacity of the tile that sets the path (dst, or src for
    cols: int  #   source-domain ops)
    static_valid_cols: int | None  # declared valid cols of that tile (None = dynamic)
    valid_rows: int  # run-time iteration domain
    valid_cols: int
    src_dtype: str = ""  # TCVT source type
    variant: str = ""  # "", "inplace", "scalar_tile", "tile_scalar", "binary", "tmp"
    path: str = ""  # DMA path (GM_UB ...) for data movement
    extra: tuple | Geometry = ()  # family-specific (matmul m, k, n ...; a transfer's Geometry)


@attrs.frozen
class Item:
    """One CCE-level step.

    kind: "v" (vector instruction: ``repeats``, ``masked``), "cfg", "bar", "flag",
    "copy" (copy_ubuf_to_ubuf of ``bytes``), "sloop" (scalar loop over ``repeats``
    elements, ``name`` = its [scalar_loops] key), "dma" (bytes over a data path),
    "dma_startup" (the fixed latency of a transfer, ``sim.timing.dma``), "cube", "scalar", "bank"
    (UB bank-conflict stall of a binary op over ``repeats`` repeats, ``sim.timing.banks``).
    """

    kind: str
    name: str = ""
    repeats: int = 0
    masked: bool = False  # mask not full (count mode or partial lanes): F-ops pay the floor
    cycles: float = 0.0  # fixed cycles for cfg / bar / flag / dma / cube items
    bytes: int = 0
    breaks_stream: bool = False
    # element type the instruction computes on when it is not the op's own (an integer
    # TREM's steps on the values it converted to f32); "" = the op's dtype. It selects
    # the dtype-specific cost row (``sim.timing.lower``).
    dtype: str = ""
    # what this vector instruction pays when it restarts the stream after a barrier
    # inside its own op ("latency" or "tail", see ``_vector_cycles``); "" = the rule the
    # caller passes (the target's ``barrier_restart``). Set per op by ``sim.timing.fits``.
    restart: str = ""

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
        if self.kind == "bank":
            return f"ub_bank_conflict(+{self.cycles:g} over {self.repeats} rep)"
        return self.name or self.kind


@attrs.frozen
class Plan:
    items: tuple
    cold_cycles: int  # cost when the instruction opens a vector stream
    warm_cycles: int  # cost when it streams behind the previous vector instruction
    breaks_stream: bool  # the op ends with a barrier: the next one restarts the stream
    repeats: int
    bytes: int
    detail: str = ""  # the items as text, for the trace's cce column
    restart_cycles: int = 0  # cost right after a pipe_barrier(PIPE_V) on a busy pipe


# Stream states of the vector pipe (timing-model.md §2.3).
COLD, WARM, RESTART = "cold", "warm", "restart"


def _vector_cycles(c, it, state: str, floor_cycles: float, restart: str) -> float:
    """Cycles of one vector instruction entering the pipe in ``state``.

    cold: head + tail (+ floor); warm: in-stream, slope only (+ floor); restart: right
    after a barrier drained the pipe. With ``restart == "tail"`` the instruction's issue
    (head) and the count-mode dispatch floor overlap the drain, so it pays
    max(tail, floor); with ``"latency"`` it pays head + tail + floor like a cold start.
    """
    t = c.slope_cycles_per_repeat * it.repeats
    f = floor_cycles if (it.masked and c.floor) else 0.0
    if state == COLD or (state == RESTART and restart != "tail"):
        return t + c.head_cycles + c.tail_cycles + f
    if state == RESTART:
        return t + max(c.tail_cycles, f)
    return t + f


def _after(state: str, it) -> str:
    """Stream state after a non-vector item: a barrier restarts a busy pipe."""
    if it.breaks_stream:
        return RESTART if state == WARM else state
    return state


def _streams(it) -> bool:
    """Items that enter the vector stream: vector instructions and UB->UB copies (a copy
    pays its bandwidth cycles, ``it.cycles``, plus its cost row's latency when it opens
    or restarts the stream)."""
    return it.kind in ("v", "copy")


def timeline(items, costs, floor_cycles: float, state: str = COLD, restart: str = "latency"):
    """``[(item, cycles)]`` of a plan entered in ``state``, and the stream state after it."""
    out = []
    for it in items:
        if _streams(it):
            t = _vector_cycles(costs(it.name), it, state, floor_cycles, it.restart or restart)
            t += it.cycles if it.kind == "copy" else 0
            state = WARM
        else:
            t = it.cycles
            state = _after(state, it)
        out.append((it, t))
    return out, state


def evaluate(items, costs, floor_cycles: float, restart: str = "latency"):
    """(cold, warm, restart costs, ends with a barrier) of a list of items."""
    totals = {}
    for state in (COLD, WARM, RESTART):
        steps, end = timeline(items, costs, floor_cycles, state, restart)
        totals[state] = sum(t for _, t in steps)
    return totals[COLD], totals[WARM], totals[RESTART], end == RESTART


def linear_terms(items, costs, floor_cycles: float, restart: str = "latency") -> tuple[float, dict]:
    """The cold cost of ``items`` as ``const + sum(coef * parameter)``.

    Parameters are ``("latency", name)`` (head + tail of CCE instruction ``name``) and
    ``("slope", name)`` (cycles per repeat). A restart after a barrier pays the tail, a
    fixed share of the latency, unless the floor is larger. Used to fit the cost table to
    measurements by least squares; ``evaluate`` gives the same number.
    """
    const = 0.0
    coef: dict = {}
    state = COLD

    def add(key, v):
        coef[key] = coef.get(key, 0.0) + v

    for it in items:
        if not _streams(it):
            const += it.cycles
            state = _after(state, it)
            continue
        const += it.cycles if it.kind == "copy" else 0
        c = costs(it.name)
        add(("slope", it.name), it.repeats)
        f = floor_cycles if (it.masked and c.floor) else 0.0
        rule = it.restart or restart
        if state == COLD or (state == RESTART and rule != "tail"):
            add(("latency", it.name), 1.0)
            const += f
        elif state == RESTART:
            if c.tail_cycles >= f and c.latency_cycles:
                add(("latency", it.name), c.tail_cycles / c.latency_cycles)
            else:
                const += f
        else:
            const += f
        state = WARM
    return const, coef
