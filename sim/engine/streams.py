"""Where a rank's streams run: the cores of each kernel launched together on one chip.

The host launches a compute kernel and a communication kernel back to back on two streams;
the runtime runs them at the same time on **disjoint cores** (communication.md §7 item 6: the
compute kernel on the cube cores, the communication kernel on the vector cores; item 8: 24
AIC blocks beside 24 AIV blocks on 910B). A core's units are its AIC and its AIV0 / AIV1
(``sim.engine.units``: a cube kernel's block runs on an AIC, a vector kernel's on an AIV0, a
mixed kernel's on all three; a unit that has nothing to run is not counted: a kernel of
cube sections only is a cube kernel), so:

* two kernels on different units of the cores (cube beside vector) share nothing, whatever
  their block counts: each runs from core 0, in waves past the cores as alone;
* two kernels that use the same units are put side by side: the later one's blocks start on
  the core after the earlier one's last. ASSUMPTION (the reference is [silent] on how the
  runtime splits one kind of core between two launches): they must fit in the chip's
  ``[chip] cores`` together, with no waves; a launch that would need a core another stream
  holds is refused before the run (the simulator would otherwise run both on the same
  units at once, which no core can).
"""

from __future__ import annotations

from collections.abc import Sequence

from sim.base.errors import UserError
from sim.engine.scan import kept
from sim.engine.units import layout, unit_program
from sim.engine.waves import cores as chip_cores
from sim.isa.comm import CommOp
from sim.isa.program import Instr, walk

__all__ = ["first_cores", "working_units"]


def working_units(program, target, block_dim: int) -> frozenset:
    """The units (AIC, AIV0, AIV1) a launch of ``program`` gives work: those of its layout
    whose side of the program issues a tile or communication instruction (a kernel whose
    vector section is empty runs on the cube alone, as one built for the cube does)."""

    def find() -> frozenset:
        units = layout(program, target, block_dim).units
        kinds = {u.kind for u in units}
        busy = {
            kind
            for kind in kinds
            if any(
                isinstance(st, (Instr, CommOp))
                for f in unit_program(program, kind, target).functions
                for st in walk(f.body)
            )
        }
        return frozenset(u.unit for u in units if u.kind in busy or len(kinds) == 1)

    return kept(program, ("working units", target, block_dim), find)


def _units(units: frozenset) -> str:
    return "/".join(sorted(units))


def first_cores(kernels: Sequence[tuple[str, int, frozenset]], target) -> list[int]:
    """The first core of each kernel's launch, ``kernels`` (name, block_dim, units) in launch
    order; a ``UserError`` naming both kernels, their block dims and the core count when
    two that use the same units cannot have disjoint cores."""
    n = chip_cores(target)
    firsts: list[int] = []
    for i, (name, bdim, units) in enumerate(kernels):
        sharing = [j for j in range(i) if kernels[j][2] & units]
        first = max((firsts[j] + min(kernels[j][1], n) for j in sharing), default=0)
        if sharing and first + bdim > n:
            others = [kernels[j] for j in sharing]
            named = ", ".join(f"{o[0]} (block_dim {o[1]}, on {_units(o[2])})" for o in others)
            total = " + ".join(str(o[1]) for o in [*others, kernels[i]])
            raise UserError(
                f"streams: {named} and {name} (block_dim {bdim}, on {_units(units)}) would "
                f"share cores: a rank's streams run on disjoint cores (communication.md §7), "
                f"and their blocks on the same units, {total}, exceed the {n} cores of "
                f"target {target.name}; give them at most {n} blocks together, or run one on "
                f"the cube (AIC) and the other on the vector units (AIV)"
            )
        firsts.append(first)
    return firsts
