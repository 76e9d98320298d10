"""Which unit runs what: the units a kernel launches on, and each unit's share of it.

A physical core is one cube unit (AIC) and two vector units (AIV0, AIV1), each issuing
its own instruction stream to its own pipes (programming-model.md §2.1-2.2; the pipes of
each kind are ``[units.*]`` of machine.toml). The compiler separates cube-only and
vector-only code; this module does the same on the program IR, once per unit kind, so the
interpreter of a unit walks only what that unit executes.

How a kernel is launched (``layout``):

* ``pto.kernel_kind = #pto.kernel_kind<vector>`` on the entry function — a vector
  kernel: each block is one vector unit (core b, unit AIV0; ``get_subblock_num`` = 1);
  ``<cube>`` — one AIC per block. When the entry imports a reserved buffer of a peer
  function of the other kind (``import_reserved_buffer {peer_func = @f}``, the form
  PTOAS emits for cube<->vector FIFOs), the kernel is mixed: the AIC runs the cube
  function, both AIVs the vector one.
* No kernel kind, ``pto.section.cube`` / ``pto.section.vector`` in the program — a mixed
  kernel: each block is a whole core, AIC + AIV0 + AIV1 (``get_subblock_num`` = 2).
* Neither — one stream per block on one unit that issues to every pipe (the single-unit
  model; named AIC when every tile is a cube tile, else AIV0).

What runs where in a mixed kernel (the split):

* a section runs on the units of its kind only;
* outside sections, scalar code, control flow, tile allocation and views run on every
  unit (each compiled stream carries its own copy of the scalar code);
* a tile instruction outside sections runs on the unit whose buffers hold its tiles
  (``[buffers.*] unit``); one that touches both a cube and a vector buffer is an error
  (cross-unit data moves through tpush / tpop);
* ``set_flag`` / ``wait_flag`` outside sections run on the units that have both pipes,
  ``pipe_barrier`` on those that have the pipe (every unit for PIPE_ALL), cross-core
  ``sync.set`` / ``sync.wait`` on those that have their pipe, ``syncall`` on the units
  of its ``core_type`` (``sim.engine.ffts``);
* cube<->vector pipe ops run on the side their name says (``tpush_to_aiv`` on the AIC,
  ``tpop_from_aic`` on the AIVs ...); ``reserve_buffer`` / ``import_reserved_buffer``
  on every unit.
"""

from __future__ import annotations

import attrs

from sim.base.errors import UserError
from sim.engine.scan import scan
from sim.engine.waves import check_block_dim
from sim.engine.waves import cores as waves_cores
from sim.isa.program import (
    Barrier,
    For,
    Function,
    If,
    Instr,
    PipeOp,
    Program,
    Section,
    SetFlag,
    SyncAll,
    SyncSet,
    SyncWait,
    WaitFlag,
)
from sim.isa.program import (
    walk as _walk,
)
from sim.isa.tile import Loc, Tile

__all__ = ["CUBE", "VECTOR", "BOTH", "Layout", "UnitSpec", "layout", "unit_program"]

CUBE, VECTOR, BOTH = "cube", "vector", "both"


@attrs.frozen
class UnitSpec:
    """One unit of the launch: where it sits, what it runs, the ids it reads."""

    core: int
    unit: str  # "AIC", "AIV0", "AIV1"
    kind: str  # "cube", "vector", or "both" (single-unit model)
    function: str  # the function this unit starts in
    block_idx: int
    block_num: int
    subblock_idx: int
    subblock_num: int


@attrs.frozen
class Layout:
    mode: str  # "vector", "cube", "mixed" or "single"
    units: tuple


def _kernel_kind(fn: Function) -> str | None:
    v = dict(fn.attrs).get("pto.kernel_kind")
    if v is None:
        return None
    text = str(v)
    for k in (CUBE, VECTOR):
        if f"<{k}>" in text or text == k:
            return k
    raise UserError(
        f"@{fn.name}: pto.kernel_kind: expected #pto.kernel_kind<vector|cube>, found {text}"
    )


def _peer(program: Program, fn: Function) -> Function | None:
    for st in _walk(fn.body):
        if isinstance(st, PipeOp) and st.op == "pto.import_reserved_buffer":
            ref = dict(st.attrs).get("peer_func")
            name = str(ref).lstrip("@") if ref is not None else ""
            try:
                return program.function(name)
            except KeyError:
                raise UserError(
                    f"{st.op} ({st.loc}): peer_func @{name} is not a function of the module"
                ) from None
    return None


def _side_of_tiles(program: Program, target) -> str:
    """CUBE when the tile instructions touch cube buffers only (at least one), else
    VECTOR: the walk stops at the first vector tile, so a vector kernel is not walked
    through."""
    side = _sides(target)
    cube = False
    for fn in program.functions:
        for st in _walk(fn.body):
            if type(st) is Instr:
                for o in (*st.outs, *st.ins):
                    if type(o) is Tile:
                        if side[o.loc] != CUBE:
                            return VECTOR
                        cube = True
    return CUBE if cube else VECTOR


def _sides(target) -> dict:
    """Location -> the side (cube / vector) of the unit whose buffer holds it."""
    return {
        loc: CUBE
        if loc.buffer in target.buffers and target.buffers[loc.buffer].unit == "AIC"
        else VECTOR
        for loc in Loc
    }


def layout(program: Program, target, block_dim: int) -> Layout:
    """The units ``program`` runs on with ``block_dim`` blocks, block by block (a block's
    units are consecutive; ``UnitSpec.core`` is the block's index: what its FIFOs and
    cross-core flags are keyed by). More blocks than cores run in waves
    (``sim.engine.waves``): a launch-wide barrier then could never complete."""
    check_block_dim(block_dim, target)
    if block_dim > waves_cores(target):
        _refuse_launch_wide_sync(program, target, block_dim)
    main = program.main
    kind = _kernel_kind(main)
    peer = _peer(program, main) if kind else None
    if peer is not None and _kernel_kind(peer) not in (None, kind):
        cube, vec = (main, peer) if kind == CUBE else (peer, main)
        return _mixed(cube.name, vec.name, block_dim)
    if kind is not None:
        unit = "AIC" if kind == CUBE else "AIV0"
        return Layout(
            kind,
            tuple(UnitSpec(b, unit, kind, main.name, b, block_dim, 0, 1) for b in range(block_dim)),
        )
    if scan(program).sections:
        return _mixed(main.name, main.name, block_dim)
    unit = "AIC" if _side_of_tiles(program, target) == CUBE else "AIV0"
    return Layout(
        "single",
        tuple(UnitSpec(b, unit, BOTH, main.name, b, block_dim, 0, 1) for b in range(block_dim)),
    )


def _refuse_launch_wide_sync(program: Program, target, block_dim: int) -> None:
    """An all-block barrier (``pto.syncall``, an ``ffts_mode 0`` cross-core flag: every unit
    of a type sets, every one waits) with more blocks than cores: the blocks of the first
    wave wait for blocks that only start when one of them ends — on hardware too it never
    completes. Refused before the run, naming the statement."""
    for fn in program.functions:
        for st in _walk(fn.body):
            t = type(st)
            if t is SyncAll or ((t is SyncSet or t is SyncWait) and st.mode == 0):
                what = (
                    f"pto.syncall ({st.loc})"
                    if t is SyncAll
                    else f"{'pto.sync.set' if t is SyncSet else 'pto.sync.wait'} with "
                    f"ffts_mode 0 ({st.loc})"
                )
                raise UserError(
                    f"{what}: a barrier over every block of the launch with block_dim "
                    f"{block_dim} > the {waves_cores(target)} cores of target {target.name}: "
                    f"the blocks past the cores wait for a core that a block held at the "
                    f"barrier never frees (it cannot complete on hardware either); launch at "
                    f"most {waves_cores(target)} blocks"
                )


def _mixed(cube_fn: str, vec_fn: str, block_dim: int) -> Layout:
    units = []
    for b in range(block_dim):
        units.append(UnitSpec(b, "AIC", CUBE, cube_fn, b, block_dim, 0, 1))
        for s in range(2):
            units.append(UnitSpec(b, f"AIV{s}", VECTOR, vec_fn, b, block_dim, s, 2))
    return Layout("mixed", tuple(units))


# --- the split -----------------------------------------------------------------------------

_PIPE_OP_SIDE = {
    "pto.aic_initialize_pipe": CUBE,
    "pto.tpush_to_aiv": CUBE,
    "pto.tpop_from_aiv": CUBE,
    "pto.tfree_from_aiv": CUBE,
    "pto.aiv_initialize_pipe": VECTOR,
    "pto.tpush_to_aic": VECTOR,
    "pto.tpop_from_aic": VECTOR,
    "pto.tfree_from_aic": VECTOR,
}


def unit_program(program: Program, kind: str, target) -> Program:
    """``program`` as the units of ``kind`` see it ("both": unchanged)."""
    if kind == BOTH:
        return program
    pipes = frozenset(target.units.get("AIC" if kind == CUBE else "AIV", {}).get("pipes", ()))
    side_of = _sides(target)
    fns = tuple(
        attrs.evolve(fn, body=_split(fn.body, kind, pipes, side_of)) for fn in program.functions
    )
    return attrs.evolve(program, functions=fns)


def _split(body, kind, pipes, side_of) -> tuple:
    out = []
    for st in body:
        t = type(st)
        if t is Section:
            if st.kind == kind:
                out.append(attrs.evolve(st, body=_split(st.body, kind, pipes, side_of)))
        elif t is Instr:
            sides = {side_of[o.loc] for o in st.outs + st.ins if isinstance(o, Tile)}
            if len(sides) > 1:
                raise UserError(
                    f"{st.opcode} ({st.loc}): outside pto.section.cube / "
                    f"pto.section.vector an instruction runs on the unit that holds "
                    f"its tiles, but this one uses both cube and vector buffers; "
                    f"put it in a section or move the data with tpush / tpop"
                )
            if not sides or kind in sides:
                out.append(st)
        elif t is SetFlag or t is WaitFlag:
            if st.src in pipes and st.dst in pipes:
                out.append(st)
        elif t is Barrier:
            if st.pipe == "PIPE_ALL" or st.pipe in pipes:
                out.append(st)
        elif t is SyncSet or t is SyncWait:
            if st.pipe in pipes:
                out.append(st)
        elif t is SyncAll:
            if st.core_type == "mix" or (st.core_type == "aic_only") == (kind == CUBE):
                out.append(st)
        elif t is PipeOp:
            side = _PIPE_OP_SIDE.get(st.op)
            if side is None or side == kind:
                out.append(st)
        elif t is For:
            out.append(attrs.evolve(st, body=_split(st.body, kind, pipes, side_of)))
        elif t is If:
            out.append(
                attrs.evolve(
                    st,
                    then_body=_split(st.then_body, kind, pipes, side_of),
                    else_body=_split(st.else_body, kind, pipes, side_of),
                )
            )
        else:
            out.append(st)
    return tuple(out)
